"""What tests/unit/test_first_contact.py, tests/unit/test_first_use.py and tests/integration/serving/test_first_contact.py
share: a console script started as a process (``start_judge_eval``), or its ``main`` called in this process as the
console script calls it (``run_console_main``); the logging set-up a main changes, put back (``logging_left_as_found``,
also what the unit tests' conftest does around each test)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Iterator

from judge.plumbing.console_logging import CHATTY_LOGGERS
from tests.support.console_scripts import console_script


#: judge-serve's 401 message (serve.connections.ApiKeyMiddleware), as a stand-in repeats it.
NO_KEY = "missing or wrong API key: send 'Authorization: Bearer <key>'"


def env_without_keys(**keys: str) -> dict[str, str]:
    """The test's environment without any API key variable and without COLUMNS (a shell's or a CI's width: a main
    called by ``run_console_main`` and a script started alike wrap --help at a pipe's 80), plus ``keys``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "COLUMNS"}
    return {**env, **keys}


def start_judge_eval(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen:
    return subprocess.Popen([console_script("judge-eval"), *argv], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_outcome(proc: subprocess.Popen, timeout_s: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout_s)
    return proc.returncode, out, err


def console_error_line(stderr: str) -> str:
    """The console's last line (the error a user reads), after checking nothing printed a traceback."""
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


def sample_records_file(path: Path, n: int) -> Path:
    """The first ``n`` records of the bundled sample data, as a JSONL file."""
    import judge

    lines = judge.sample_data_path().read_text(encoding="utf-8").splitlines()[:n]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_argv(url: str, out: Path, data: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--no-progress", "--max-retries", "0",
            "--backoff-s", "0.2", *extra]



@dataclass(frozen=True)
class Outcome:
    """One console command's exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @property
    def last_error_line(self) -> str:
        lines = self.err.strip().splitlines()
        return lines[-1] if lines else ""


def process_outcome(proc: subprocess.Popen, timeout_s: float = 120) -> Outcome:
    """A started console script's ``Outcome``, once it has exited."""
    return Outcome(*wait_outcome(proc, timeout_s))


#: Threads a library starts once per process and keeps for its next user: tqdm's monitor (its first bar starts it, a
#: disabled one too, ``--no-progress``).
PROCESS_WIDE_THREADS = ("tqdm_monitor",)
#: How long the threads a main started are waited for, together, once it has returned, before one still alive is
#: called left running: a thread already told to end (a worker back at its empty queue, a cancelled Timer) can
#: still be alive at the instant the main returns, the more so on a loaded machine.
THREAD_GRACE_S = 5.0
#: What a main may change in the process and ``run_console_main`` puts back: the signals it handles while it runs.
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
#: Environment variables a library reads once, when it is first imported, so that a value ``env`` gave them would not
#: reach it in this process: every variable with one of ``READ_AT_IMPORT_PREFIXES`` (offline modes, endpoints, cache
#: folders, timeouts), and ``READ_AT_IMPORT``, the others that huggingface_hub/constants.py and datasets/config.py read.
READ_AT_IMPORT_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_")
READ_AT_IMPORT = ("XDG_CACHE_HOME", "DISABLE_TELEMETRY", "DO_NOT_TRACK", "USE_TORCH", "USE_TF", "USE_JAX",
                  "OAUTH_CLIENT_ID", "OAUTH_CLIENT_SECRET", "OAUTH_SCOPES", "OPENID_PROVIDER_URL", "CLAUDE_CONFIG_DIR")
#: The warnings filters of an interpreter started without -W or PYTHONWARNINGS (the warnings module's documentation,
#: "Default Warning Filter"), in order: what a console shows, but for what its libraries add at their import.
_CONSOLE_FILTERS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                    ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                    ("ignore", ResourceWarning, ""))


def read_at_import(key: str) -> bool:
    """Whether a library may have read environment variable ``key`` once, at its import."""
    return key.startswith(READ_AT_IMPORT_PREFIXES) or key in READ_AT_IMPORT


#: Those variables as the session had them when this module was imported (before any test set one): what a library
#: imported in this session read, whichever test imported it first, since no unit test may leave one changed
#: (``tests/unit/conftest.py``, ``no_import_time_variables_left_behind``).
_AT_IMPORT = {key: value for key, value in os.environ.items() if read_at_import(key)}


@contextlib.contextmanager
def logging_left_as_found() -> Iterator[None]:
    """The logging set-up a console main changes (``judge.plumbing.console_logging.configure_logging``) put back as
    the block found it: the root logger's level and handlers (one added in the block is closed and removed, one
    removed is added back) and the levels of the ``CHATTY_LOGGERS``. uvicorn's loggers are left as the block leaves
    them: every server start sets them up again (judge-serve sends them to the root's handler, uvicorn's default
    gives them handlers of their own), and pytest adds its capture handlers to a logger that does not propagate only
    at a phase's start, so putting back a list of them taken earlier could leave pytest's there."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in CHATTY_LOGGERS}
    try:
        yield
    finally:
        for handler in [handler for handler in root.handlers if handler not in handlers]:
            root.removeHandler(handler)
            handler.close()
        for handler in handlers:
            root.addHandler(handler)  # in their order; one still there stays where it is
        root.setLevel(level)
        for name, was in levels.items():
            logging.getLogger(name).setLevel(was)


def run_console_main(name: str, argv: list[str], env: dict[str, str] | None = None,
                     cwd: Path | None = None) -> Outcome:
    """Console script ``name``'s ``main`` (its ``console_scripts`` entry point) called with ``argv`` in this process, as
    the script calls it: with ``env`` as ``os.environ`` (default: this one's), ``cwd`` as the current folder,
    ``sys.argv[0]`` the script's path (argparse's program name), stdout and stderr captured, the root logger without
    pytest's handlers (so that the main's ``configure_logging`` sets up the console's stderr handler, and its log lines
    are in ``err`` as a console shows them), warnings under a console start's filters (the interpreter's defaults,
    after the filters the imported libraries added: ``_console_filters``) and printed to the captured stderr (not to
    pytest's record), and COLUMNS 80 unless ``env`` sets it (a pipe's width: --help wraps as in a console start read
    by a test; without ``env``, a COLUMNS this process has, a shell's or a CI's, is not passed on, nor through
    ``env_without_keys``). The exit code is
    the return value, or ``SystemExit``'s (argparse's errors and --help). An exception escaping the main is not
    caught: the test fails with it, as a traceback on a console would.

    What it does not reproduce of a console start: the modules are this session's, imported once and shared with every
    other test (an import that works only because something else imported it first works here too), and ``env``
    reaches only what reads ``os.environ`` during the call. A library that read a variable at its import keeps what it
    read: an ``env`` (or, without one, this ``os.environ``) that differs in one of those variables (``READ_AT_IMPORT``,
    ``READ_AT_IMPORT_PREFIXES``) from the session's environment when this module was imported fails the call, naming
    it (start that command as a process). Nor is the interpreter's exit run: atexit handlers, the joining of
    non-daemon threads.

    The process is left as found: environment, current folder, ``sys.argv``, the root logger's handlers and level and
    the HTTP loggers' levels (``logging_left_as_found``), the warnings filters and ``showwarning``, and the handlers
    of ``_SIGNALS``; a thread the main started and left running (but ``PROCESS_WIDE_THREADS``), still alive
    ``THREAD_GRACE_S`` after the main returned, fails the call, naming it.
    """
    runs_under = os.environ if env is None else env
    changed = [f"{key}={runs_under.get(key)!r}" for key in sorted({*runs_under, *_AT_IMPORT})
               if read_at_import(key) and runs_under.get(key) != _AT_IMPORT.get(key)]  # fmt: skip
    assert not changed, (f"{name} {' '.join(argv)}: {', '.join(changed)} would not reach a library that read it at "
                         "its import (huggingface_hub): start this command as a process")
    (main,) = [point.load() for point in entry_points(group="console_scripts", name=name)]
    environ, folder, argv0 = dict(os.environ), os.getcwd(), sys.argv
    handled = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    threads = set(threading.enumerate())
    out, err = io.StringIO(), io.StringIO()
    try:
        _set_environ({**environ, "COLUMNS": "80"} if env is None else {"COLUMNS": "80", **env})
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [console_script(name), *argv]
        with logging_left_as_found(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            logging.getLogger().handlers = []
            _console_filters()
            warnings.showwarning = _show_on_stderr
            try:
                code = main(argv)
            except SystemExit as stop:
                code = _exit_status(stop.code, err)
    finally:
        for sig, handler in handled.items():
            if handler is not None:  # None: a handler not set from Python, which no main here replaces
                signal.signal(sig, handler)
        sys.argv = argv0
        os.chdir(folder)
        _set_environ(environ)
    started = [thread for thread in set(threading.enumerate()) - threads if thread.name not in PROCESS_WIDE_THREADS]
    deadline = time.monotonic() + THREAD_GRACE_S
    for thread in started:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [thread.name for thread in started if thread.is_alive()]
    assert not left, f"{name} {' '.join(argv)} left threads running: {left}"
    return Outcome(code, out.getvalue(), err.getvalue())


def _console_filters() -> None:
    """The warnings filters made a console start's: the session's filters that name a message or a module (those the
    libraries imported added at their import, as they do in a console start that imports them), then the
    interpreter's defaults; the session's category-wide filters (pytest's, and a -W of its command line) are dropped."""
    named = [(action, message, category, module, lineno) for action, message, category, module, lineno
             in warnings.filters if message is not None or module is not None]
    warnings.resetwarnings()
    for action, message, category, module, lineno in named:
        warnings.filterwarnings(action, message=_pattern(message), category=category, module=_pattern(module),
                                lineno=lineno, append=True)
    for action, category, module in _CONSOLE_FILTERS:
        warnings.filterwarnings(action, category=category, module=module, append=True)


def _pattern(regex: re.Pattern | str | None) -> str:
    """A filter's message or module as ``filterwarnings`` takes it (the interpreter's own filters hold a str)."""
    return "" if regex is None else getattr(regex, "pattern", regex)


def _show_on_stderr(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: object = None, line: str | None = None) -> None:
    """A warning printed as the interpreter's own ``showwarning`` prints it, to ``sys.stderr`` (the captured one)."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _exit_status(code: object, err: io.StringIO) -> int:
    """The interpreter's exit status for ``sys.exit(code)``: None is 0, a number itself, anything else printed to
    stderr and 1."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=err)
    return 1


def _set_environ(values: dict[str, str]) -> None:
    """``os.environ`` made exactly ``values``."""
    for key in [key for key in os.environ if key not in values]:
        del os.environ[key]
    for key, value in values.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
