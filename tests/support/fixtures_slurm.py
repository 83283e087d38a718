"""Session fixtures for a real one-host Slurm (registered in tests/conftest.py).

Fixtures:
    slurm_cluster   a running :class:`tests.support.slurm_cluster.SlurmCluster` (n1, n2), torn down after the session;
                    skips, printing the reason, only where Slurm cannot start (programs missing, not root)
    slurm_job_env   variables a test job needs: this venv first on PATH, offline hub and W&B
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.slurm_cluster import SlurmCluster, cannot_start_reason, start_cluster, stop_cluster


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A real Slurm (munged, slurmctld, slurmd n1 and n2 on 127.0.0.1) for the whole session."""
    reason = cannot_start_reason()
    if reason is not None:
        print(f"\nSlurm tests skipped: {reason}", file=sys.stderr)
        pytest.skip(f"real Slurm cannot start here: {reason}")
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        stop_cluster(cluster, remove=True)


@pytest.fixture(scope="session")
def slurm_job_env(tmp_path_factory) -> dict[str, str]:
    """Environment additions for jobs: the venv's console scripts (torchrun, judge-train) first on PATH, this
    checkout first on PYTHONPATH, no hub, W&B offline, one OpenMP thread per rank (two cores host everything).

    PYTHONPATH: a console script puts its own folder, not the working directory, first on ``sys.path``, so with
    the venv's editable install pointing at another checkout the jobs would import that checkout's code."""
    venv_bin = str(Path(sys.executable).parent)
    repo = str(Path(__file__).resolve().parents[2])
    return {
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": repo + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "offline",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "JUDGE_CACHE_DIR": str(tmp_path_factory.mktemp("slurm-cache")),
    }
