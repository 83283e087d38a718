"""OpenMP's idle threads sleep in every console script: ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it.

libgomp, which torch loads, reads ``OMP_WAIT_POLICY`` once, when it is loaded. By default an idle OpenMP thread spins
before it sleeps, and on a machine with more busy processes than cores (a training beside a judge's engines, two
ranks on two cores, the demo) the spinning threads take the cores the others need (measured: docs/performance.md,
rows "idle OpenMP threads sleeping" and "judge-train's console script and OpenMP's wait policy"). The Makefile and
``tests/conftest.py`` set the same default for what they run; ``judge-train``, ``judge-serve`` and ``judge-eval``
set it here, first thing in their ``main``, before anything imports torch or vLLM, so a command typed outside
``make`` runs as the demo does, and so does ``python -m train.synthetic.cli`` (``judge-train data``'s own main,
whose dedup stage loads torch). The processes they start (judge-serve's vLLM engines, the judge-serve a
``judge-eval run`` starts, a rank under torchrun) inherit it with the rest of the environment; slurm/train.sbatch
exports the same default, for the GRPO vLLM server it starts with ``python3 -c``.

A value already in the environment wins, the empty one included (``OMP_WAIT_POLICY= judge-train ...``: libgomp
ignores a value it cannot parse, with a warning, and keeps its default).
"""

from __future__ import annotations

import os

__all__ = ["OMP_WAIT_POLICY", "idle_threads_sleep"]

#: The value the console scripts give ``OMP_WAIT_POLICY`` when the environment has none.
OMP_WAIT_POLICY = "PASSIVE"


def idle_threads_sleep() -> str:
    """Set ``OMP_WAIT_POLICY`` to ``PASSIVE`` unless the environment sets it; returns the value in force.

    Call it before torch is imported: libgomp reads the variable when it loads, and a later change does nothing."""
    return os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)
