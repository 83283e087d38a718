"""The code sandbox's thread budget: a sample runs ``Limits.nproc`` threads within the default memory, with bubblewrap
and without."""

from __future__ import annotations

import os

import pytest

from eval.mera import sandbox as sandbox_mod
from eval.mera.sandbox import ExecJob, Limits, Sandbox
from tests.support.mera_sandbox import bwrap_sandbox_or_skip

THREADS = (
    "import threading, time\n"
    "def f():\n"
    "    n = 0\n"
    "    try:\n"
    "        while n < 500:\n"
    "            threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n"
    "            n += 1\n"
    "    except RuntimeError:\n"
    "        pass\n"
    "    return str(n)\n"
)


@pytest.mark.parametrize("isolation", ["bwrap", "none"])
def test_a_sample_runs_nproc_threads_within_the_default_memory(isolation, sandbox_user):
    """Limits.nproc bounds a sample's threads, its main one included; with the default 1 GiB a sample could start
    only 14, each thread's own malloc arena reserving 64 MiB of its address space. Under bubblewrap the sample has
    the budget to itself (a user namespace of its own); without it, every process of its user counts against it
    too (a sample of another test still being reaped), so only the memory's bound is checked there."""
    limits = Limits(timeout_s=5.0, nproc=32)
    if os.geteuid() == 0 and sandbox_mod.choose_identity()[1] is None:
        pytest.skip("run as root: RLIMIT_NPROC is not enforced")
    box = bwrap_sandbox_or_skip(limits) if isolation == "bwrap" else Sandbox(limits, isolation="none")
    result = box.run(ExecJob(program=THREADS, entry_point="f", tests=[{}], expected=["31"]))
    if isolation == "bwrap":
        assert result.outputs == ("31",), result
    else:
        assert 24 < int(result.outputs[0]) <= 31, result  # 21 with an arena per thread
