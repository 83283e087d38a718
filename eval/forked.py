"""One function call in a forked child process, its value (or exception) pickled back: how ``judge-eval score``
runs work that needs the records and rows it holds on a second core without loading them again.

A fork, not a fresh process: the child shares the parent's memory (copy on write), so the records and prediction
rows of the full test cost nothing to hand over. The function must not use pyarrow (its threads do not survive a
fork) nor anything else that threads; the child ends with ``os._exit``, running nothing of the parent's (its
``with`` blocks would stop the parent's other children). Where ``os.fork`` is missing (Windows) the call runs in
this process when its value is asked for.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any

__all__ = ["ForkedCall"]


class ForkedCall:
    """``function(*args)`` computed by a forked child from now on; ``result()`` is its value, or raises its
    exception. Use as a context manager: leaving it before ``result`` stops the child."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self._call = (function, args)
        self._pid = 0
        if not hasattr(os, "fork"):
            return
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read)
            try:
                try:
                    payload = pickle.dumps((True, function(*args)), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException as err:  # noqa: BLE001 (raised in the parent)
                    try:
                        payload = pickle.dumps((False, err), protocol=pickle.HIGHEST_PROTOCOL)
                    except Exception:  # an exception that does not pickle: its type and text
                        payload = pickle.dumps((False, RuntimeError(f"{type(err).__name__}: {err}")))
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(0)
        os.close(write)
        self._read, self._pid = read, pid

    def result(self) -> Any:
        """The function's value.

        Raises:
            the function's exception; RuntimeError when the child died without a value.
        """
        if not self._pid:
            function, args = self._call
            return function(*args)
        with os.fdopen(self._read, "rb") as handle:
            data = handle.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0
        if not data:
            raise RuntimeError(f"{self._call[0].__qualname__}: the forked child ended without a value ({status})")
        ok, value = pickle.loads(data)
        if not ok:
            raise value
        return value

    def __enter__(self) -> ForkedCall:
        return self

    def __exit__(self, *exc) -> None:
        if self._pid:
            import signal

            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            os.close(self._read)
            self._pid = 0
