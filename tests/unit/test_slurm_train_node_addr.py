"""train.sbatch's addresses for the rendezvous (MASTER_ADDR) and GRPO's vLLM server (--vllm-server-host): a node
whose name does not resolve and whose Slurm record gives no other address fell back to 127.0.0.1, which on two
hosts sent each to its own loopback. Loopback is kept for the one host that trains; otherwise the job stops (exit 2)
with serve.sbatch's wording. Run by bash against fake srun, scontrol and torchrun; no cluster. The ``.invalid``
names never resolve (RFC 2606), so getent fails for them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"


def _unreachable(node: str) -> str:
    return (f"train.sbatch: node {node}: its name does not resolve here (getent hosts) and Slurm gives no NodeAddr "
            "for it, so no address other nodes reach can be published; fix the node's name resolution or set "
            "NodeAddr in slurm.conf\n")


def _launch(tmp_path: Path, nodes: list[str], node_addr: str | None, **extra_env: str):
    """train.sbatch on a job of ``nodes``, whose ``scontrol show node`` gives NodeAddr ``node_addr`` (None: the
    node's own name, Slurm's record when slurm.conf sets none). Returns the process and torchrun's arguments."""
    (tmp_path / "judge.yaml").write_text("recipe: seq2seq\n")
    addr = node_addr or "$3"
    scontrol = (f'case "$1 $2" in\n  "show hostnames") printf "%s\\n" {" ".join(nodes)};;\n'
                f'  "show node") echo "NodeName=$3 Arch=x86_64 NodeAddr={addr} NodeHostName=$3";;\nesac\n')
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'while [[ $1 == --* ]]; do shift; done\nexec "$@"\n',
        "torchrun": 'if [[ $1 == --help ]]; then echo "usage: torchrun [-h]"; exit 0; fi\n'
                    'printf "%s\\n" "$@" >"$FAKE_TORCHRUN_ARGS"\n',
        "judge-train": "exit 0\n", "trl": "exit 0\n", "scontrol": scontrol})  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_TORCHRUN_ARGS": str(tmp_path / "torchrun_args"),
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": ",".join(nodes), "SLURM_NODEID": "0",
        "SLURM_SUBMIT_DIR": str(tmp_path), "JUDGE_CONFIG": "judge.yaml",
        "JUDGE_OUTPUT_DIR": "run", "JUDGE_CACHE_DIR": "cache", **extra_env,
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "train.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    args = (tmp_path / "torchrun_args").read_text().splitlines() if (tmp_path / "torchrun_args").exists() else []
    return proc, args


def test_one_host_that_cannot_be_named_rendezvouses_on_loopback(tmp_path):
    proc, args = _launch(tmp_path, ["nx-a.invalid"], None)
    assert proc.returncode == 0, proc.stderr
    assert "--master_addr=127.0.0.1" in args


def test_two_hosts_that_cannot_be_named_stop_instead_of_publishing_loopback(tmp_path):
    proc, args = _launch(tmp_path, ["nx-a.invalid", "nx-b.invalid"], None)
    assert proc.returncode == 2
    assert proc.stderr == _unreachable("nx-a.invalid")
    assert args == []


def test_two_hosts_rendezvous_on_the_first_ones_slurm_node_addr(tmp_path):
    proc, args = _launch(tmp_path, ["nx-a.invalid", "nx-b.invalid"], "10.0.0.5")
    assert proc.returncode == 0, proc.stderr
    assert "--master_addr=10.0.0.5" in args


@pytest.mark.parametrize("node_addr", [None, "10.0.0.5"])
def test_grpo_publishes_no_loopback_for_the_vllm_server_on_its_own_node(tmp_path, node_addr):
    """GRPO's server holds the first node and trains on none: one training host may rendezvous on loopback, but the
    trainer reaches the server on another host, never at 127.0.0.1."""
    proc, args = _launch(tmp_path, ["nx-a.invalid", "nx-b.invalid"], node_addr, JUDGE_VLLM_SERVE_MODEL="/models/base")
    if node_addr is None:
        assert proc.returncode == 2
        assert proc.stderr.endswith(_unreachable("nx-a.invalid"))
        assert args == []
    else:
        assert proc.returncode == 0, proc.stderr
        start = args.index("--vllm-server-host")
        assert args[start + 1] == "10.0.0.5"
