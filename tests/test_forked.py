"""eval.forked.ForkedCall: a function's value computed in a forked child is the value in-process; its exception is
raised here with its type and text; a call left early is stopped and reaped."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from eval.forked import ForkedCall

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="ForkedCall forks")


def _stats(values: list[float], scale: float) -> dict:
    array = np.asarray(values) * scale
    return {"mean": float(array.mean()), "n": np.int64(len(array)), "nan": float("nan"), "pid": os.getpid(),
            "array": array}


def _fails(name: str) -> None:
    raise ValueError(f"row 7.{name}: required field is missing")


def test_the_childs_value_is_the_in_process_value_computed_elsewhere():
    """Same values and types (numpy ones too, NaN kept), computed by another process than this one."""
    values = [0.5, 1.25, 3.0]
    with ForkedCall(_stats, values, 2.0) as call:
        got = call.result()
    here = _stats(values, 2.0)
    assert got["pid"] != os.getpid()
    assert got["mean"] == here["mean"] and type(got["n"]) is np.int64 and got["n"] == 3
    assert np.isnan(got["nan"]) and np.array_equal(got["array"], here["array"])


def test_the_childs_exception_is_raised_here_with_its_text():
    """A ValueError in the child is a ValueError here, with the same message."""
    with ForkedCall(_fails, "id") as call, pytest.raises(ValueError, match=r"^row 7\.id: required field is missing$"):
        call.result()


def test_a_call_left_before_its_result_is_stopped_and_reaped():
    """Leaving the context early (the caller failed): the child is killed and waited for, not left behind."""
    with ForkedCall(time.sleep, 30) as call:
        pid = call._pid
    assert pid and call._pid == 0
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
