"""``eval.mera.interrupts``: SIGTERM and SIGHUP end a ``judge-eval mera`` run as Ctrl+C does (a ``KeyboardInterrupt``
carrying 128 + the signal's number), a signal ignored at the start stays ignored, and the earlier handlers come back.
The command's side (exit 143, the samples' folders removed) is in ``test_mera_cli_interrupt.py``."""

from __future__ import annotations

import signal

import pytest

from eval.mera.interrupts import Stopped, stopping_signals_interrupt


@pytest.fixture
def own_handlers():
    """The test's own SIGTERM handler and an ignored SIGHUP (as under ``nohup``), put back as they were afterwards."""
    received: list[int] = []

    def handler(signum, frame):
        received.append(signum)

    earlier = {sig: signal.signal(sig, h) for sig, h in ((signal.SIGTERM, handler), (signal.SIGHUP, signal.SIG_IGN))}
    yield handler, received
    for sig, h in earlier.items():
        signal.signal(sig, h)


def test_sigterm_is_an_interrupt_with_exit_143_and_the_handler_comes_back(own_handlers):
    handler, received = own_handlers
    with pytest.raises(KeyboardInterrupt) as caught, stopping_signals_interrupt():
        signal.raise_signal(signal.SIGTERM)
    assert isinstance(caught.value, Stopped) and (caught.value.exit_code, str(caught.value)) == (143, "SIGTERM")
    assert signal.getsignal(signal.SIGTERM) is handler and received == []


def test_a_sighup_ignored_at_the_start_stays_ignored(own_handlers):
    """``nohup judge-eval mera ...`` must survive its terminal closing: the run goes on through the hangup."""
    with stopping_signals_interrupt():
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        signal.raise_signal(signal.SIGHUP)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_a_sighup_not_ignored_is_an_interrupt_with_exit_129():
    earlier = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with pytest.raises(Stopped) as caught, stopping_signals_interrupt():
            signal.raise_signal(signal.SIGHUP)
        assert caught.value.exit_code == 129 and signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, earlier)
