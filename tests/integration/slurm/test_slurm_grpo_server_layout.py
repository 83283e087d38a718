"""slurm/train.sbatch's GRPO vLLM-server layout on a real Slurm (n1, n2): the server step on the first node, one
torchrun on the other, started by the script's own srun lines.

torchrun, judge-train and trl's server are stand-ins that say where they ran (the tests of the server's signals are
tests/unit/test_slurm_scripts.py's): what is under test is what a fake srun cannot check, Slurm's placement of the
steps. The training step asks for one node fewer than the job holds, and srun takes its task count from the
allocation's SLURM_NTASKS unless told otherwise.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

# Training waits for the server to be up (as the trainer waits for its /health), then returns at once. Its --help
# lists --shutdown-timeout, as today's torchrun does (train.sbatch asks before passing it), and is no launch.
FAKE_TORCHRUN = """#!/bin/bash
if [ "$1" = --help ]; then echo "usage: torchrun [--shutdown-timeout SHUTDOWN_TIMEOUT] ..."; exit 0; fi
for _ in $(seq 600); do grep -q '^server on' "$FAKE_RECORD" 2>/dev/null && break; sleep 0.1; done
echo "torchrun on $SLURMD_NODENAME node $SLURM_NODEID task $SLURM_PROCID: $*" >>"$FAKE_RECORD"
"""
# trl's `trl vllm-serve` as train.sbatch reads it (trl/scripts/vllm_serve.py: make_parser, build_command).
FAKE_TRL_VLLM_SERVE = """
import argparse, sys

class _Parser(argparse.ArgumentParser):
    def parse_args_and_config(self, return_remaining_strings=False):
        return self.parse_known_args()

def make_parser():
    parser = _Parser()
    for flag in ("--model", "--tensor-parallel-size", "--port", "--host", "--max-model-len"):
        parser.add_argument(flag)
    return parser

def build_command(script_args, extra_args=None):
    return [sys.executable, "-m", "fake_vllm_server", "--port", script_args.port, "--max-model-len",
            str(script_args.max_model_len)]
"""
FAKE_VLLM_SERVER = """
import os, sys, threading
with open(os.environ["FAKE_RECORD"], "a") as record:
    record.write(f"server on {os.environ['SLURMD_NODENAME']}: {' '.join(sys.argv[1:])}\\n")
threading.Event().wait()  # serves until the script stops it
"""


def test_grpo_training_step_takes_one_task_on_each_node_the_server_leaves(slurm_cluster, slurm_job_env, tmp_path):
    """2 nodes: the server holds n1, training runs one torchrun on n2 as node 0 of 1, and the job completes.

    Without --ntasks the training step asked for the allocation's 2 tasks on its 1 node; Slurm refused the step
    ("More processors requested than permitted"), and the job failed before any rank started.
    """
    bin_dir, modules = tmp_path / "bin", tmp_path / "modules"
    (modules / "trl" / "scripts").mkdir(parents=True)
    bin_dir.mkdir()
    for package in (modules / "trl", modules / "trl" / "scripts"):
        (package / "__init__.py").write_text("")
    (modules / "trl" / "scripts" / "vllm_serve.py").write_text(FAKE_TRL_VLLM_SERVE)
    (modules / "fake_vllm_server.py").write_text(FAKE_VLLM_SERVER)
    for name, body in {"torchrun": FAKE_TORCHRUN, "judge-train": "#!/bin/bash\n", "trl": "#!/bin/bash\n"}.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    config = tmp_path / "grpo.yaml"
    config.write_text("recipe: grpo\n")  # read by judge-train only, which is a stand-in here
    record = tmp_path / "record.txt"
    env = {
        **slurm_job_env,
        "PATH": f"{bin_dir}{os.pathsep}{slurm_job_env['PATH']}",
        "PYTHONPATH": f"{modules}{os.pathsep}{slurm_job_env['PYTHONPATH']}",
        "JUDGE_CONFIG": str(config), "JUDGE_OUTPUT_DIR": str(tmp_path / "run"), "JUDGE_MASTER_PORT": "29511",
        "JUDGE_VLLM_SERVE_MODEL": "Qwen/Qwen3-0.6B", "JUDGE_VLLM_SERVE_PORT": "8011",
        "JUDGE_VLLM_SERVE_MAX_LEN": "2048", "FAKE_RECORD": str(record),
    }  # fmt: skip
    job = slurm_cluster.sbatch(
        ["--nodes=2", "--gpus-per-node=0", "--cpus-per-task=1", f"--output={tmp_path}/%x-%j.out",
         str(REPO / "slurm/train.sbatch")],
        cwd=tmp_path, env=env,
    )  # fmt: skip
    state = slurm_cluster.wait(job, timeout_s=120)
    log = (tmp_path / f"judge-train-{job}.out").read_text()
    assert state["JobState"] == "COMPLETED", log
    lines = sorted(record.read_text().splitlines())
    assert [line.split(":")[0] for line in lines] == ["server on n1", "torchrun on n2 node 0 task 0"], log
    assert lines[0] == "server on n1: --port 8011 --max-model-len 2048"  # the run's context, not the model's
    torchrun_args = lines[1].split(": ", 1)[1]
    assert "--nnodes=1 --node_rank=0 " in torchrun_args
    assert "--shutdown-timeout=" in torchrun_args  # this torchrun has the flag: passed
    assert "--vllm-server-host 127.0.0.1 --vllm-server-port 8011" in torchrun_args
