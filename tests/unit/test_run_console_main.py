"""``tests.support.first_contact.run_console_main`` against a console start: a main's warnings reach the captured
stderr under a console start's filters, an environment a library reads only at its import is refused, not
silently lost, a main sees 80 columns whatever this process exported, unless ``env`` gives its own, and a thread the
main started is waited for a moment before it is called left running."""

from __future__ import annotations

import os
import threading
import warnings

import pytest

from tests.support import first_contact
from tests.support.first_contact import READ_AT_IMPORT, env_without_keys, run_console_main


class _Point:
    """A console_scripts entry point whose main is ``main``."""

    def __init__(self, main):
        self.main = main

    def load(self):
        return self.main


def _warning_main(argv: list[str]) -> int:
    warnings.warn("this option goes away", FutureWarning, stacklevel=1)
    warnings.warn("only a developer sees this", DeprecationWarning, stacklevel=1)
    return 0


def test_a_mains_warning_is_in_its_stderr_as_a_console_prints_it(monkeypatch):
    """Under pytest a warning went to pytest's record, not to the captured stderr: an assertion of no noise or of the
    last stderr line passed where a console showed a warning line. A FutureWarning is printed; a DeprecationWarning
    outside __main__ is not, as in a fresh interpreter; pytest's own filters and record are back afterwards."""
    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(_warning_main)])
    before = (warnings.filters[:], warnings.showwarning)
    outcome = run_console_main("judge-eval", [])
    assert outcome.code == 0
    assert outcome.err.splitlines() == [f"{__file__}:{_warning_main.__code__.co_firstlineno + 1}: FutureWarning: this "
                                        "option goes away", '  warnings.warn("this option goes away", FutureWarning, '
                                        'stacklevel=1)']  # fmt: skip
    assert "DeprecationWarning" not in outcome.err
    assert (warnings.filters, warnings.showwarning) == before


def _library_silenced_main(argv: list[str]) -> int:
    warnings.warn("numpy.dtype size changed, may indicate binary incompatibility", RuntimeWarning, stacklevel=1)
    warnings.warn("a warning no library silences", RuntimeWarning, stacklevel=1)
    return 0


def test_a_filter_a_library_added_at_its_import_still_silences_a_warning(monkeypatch):
    """The filters were reset to the interpreter's defaults, which dropped those a library adds at its import (numpy:
    ignore "numpy.dtype size changed"), which a console start that imports it has too: the main's stderr showed a
    warning a console does not. A filter that names a message or a module is kept; pytest's category-wide ones are
    not."""
    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(_library_silenced_main)])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="numpy.dtype size changed")  # as numpy adds it at its import
        warnings.filterwarnings("always", category=RuntimeWarning)  # a category-wide one, as pytest adds its own
        outcome = run_console_main("judge-eval", [])
    assert outcome.code == 0
    assert "numpy.dtype size changed" not in outcome.err
    assert "a warning no library silences" in outcome.err


@pytest.mark.parametrize("key", READ_AT_IMPORT)
def test_an_environment_read_at_import_is_refused_in_process(key, monkeypatch):
    """HF_HUB_OFFLINE=1 in ``env`` set os.environ only: huggingface_hub, imported earlier in the session, kept the
    value it read then, so the command ran online where its test meant it offline. Such a change now fails the call,
    naming the variable."""
    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(lambda argv: 0)])
    env = {**os.environ, key: "" if os.environ.get(key) else "1"}
    with pytest.raises(AssertionError, match=f"{key}=.* would not reach a library that read it at its import"):
        run_console_main("judge-eval", [], env)
    assert run_console_main("judge-eval", [], dict(os.environ)).code == 0  # the same values as the session's pass


def _columns_main(argv: list[str]) -> int:
    print(os.environ.get("COLUMNS"))
    return 0


def test_a_main_sees_80_columns_unless_env_gives_its_own(monkeypatch):
    """--help wraps at $COLUMNS: a main sees 80 (a pipe's width) whatever this process has exported (a shell's or a
    CI's COLUMNS), so a test's wrapping assertions hold everywhere; an ``env`` that sets COLUMNS gives its own."""
    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(_columns_main)])
    monkeypatch.setenv("COLUMNS", "200")
    assert run_console_main("judge-eval", []).out == "80\n"
    assert run_console_main("judge-eval", [], env={**os.environ, "COLUMNS": "120"}).out == "120\n"
    assert os.environ["COLUMNS"] == "200"  # this process's environment is left as found


def test_the_environment_the_first_contact_tests_pass_carries_no_columns(monkeypatch):
    """Every existing caller passes an ``env`` built from os.environ (``env_without_keys``), so the 80 forced only
    without ``env`` reached none of them: an exported COLUMNS still set the width their mains wrapped --help at."""
    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(_columns_main)])
    monkeypatch.setenv("COLUMNS", "200")
    assert "COLUMNS" not in env_without_keys()
    assert run_console_main("judge-eval", [], env_without_keys()).out == "80\n"


@pytest.mark.parametrize("key", ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_ENDPOINT", "HUGGINGFACE_HUB_CACHE",
                                 "HF_HUB_ETAG_TIMEOUT", "XDG_CACHE_HOME"])
@pytest.mark.parametrize("as_env", [True, False], ids=["env", "no-env"])
def test_a_session_environment_changed_after_the_import_is_refused_too(key, as_env, monkeypatch):
    """The refusal compared ``env`` with this moment's os.environ: a test's ``monkeypatch.setenv("HF_HUB_OFFLINE",
    "1")`` then ``env=dict(os.environ)`` (or none) passed, and the hub, which read the session's value at its import,
    stayed online; and it named only four of the variables huggingface_hub and datasets read at their import. The
    baseline is now the session's environment as it was when the helper was imported."""
    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(lambda argv: 0)])
    monkeypatch.setenv(key, "" if os.environ.get(key) else "1")
    with pytest.raises(AssertionError, match=f"{key}=.* would not reach a library that read it at its import"):
        run_console_main("judge-eval", [], dict(os.environ) if as_env else None)


class _EndsWhenJoined(threading.Thread):
    """A thread already told to end that ends a moment later: the moment is whoever waits for it (``join``), so a
    check that waits sees it end, and one that looks at once sees it alive, whatever the scheduler does."""

    def __init__(self):
        super().__init__(name="ending-now", daemon=True)
        self.joined = threading.Event()

    def run(self):
        self.joined.wait()

    def join(self, timeout=None):
        self.joined.set()
        super().join(timeout)


def test_a_thread_ending_just_after_the_main_returns_is_not_reported(monkeypatch):
    """The thread check ran at the instant the main returned: a thread told to end (a worker back at its empty queue,
    a cancelled Timer) could still be alive then, and the call failed with "left threads running". Each thread the
    main started is now waited for a moment before it is called left running."""
    started = []

    def main(argv):
        started.append(_EndsWhenJoined())
        started[0].start()
        return 0

    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(main)])
    try:
        assert run_console_main("judge-eval", []).code == 0
    finally:
        started[0].joined.set()
    assert not started[0].is_alive()


def test_a_thread_still_running_after_the_wait_is_reported(monkeypatch):
    """The wait is bounded: a thread that keeps running fails the call, named."""
    stop = threading.Event()

    def main(argv):
        threading.Thread(target=stop.wait, name="keeps-running", daemon=True).start()
        return 0

    monkeypatch.setattr(first_contact, "entry_points", lambda group, name: [_Point(main)])
    monkeypatch.setattr(first_contact, "THREAD_GRACE_S", 0.05)
    try:
        with pytest.raises(AssertionError, match=r"left threads running: \['keeps-running'\]"):
            run_console_main("judge-eval", [])
    finally:
        stop.set()
