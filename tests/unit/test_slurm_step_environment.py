"""The slurm/ scripts' steps get what the batch shell exports, whatever `--export` the job was submitted with.

A job's steps take sbatch's --export through SLURM_EXPORT_ENV (sbatch(1), --export): after `sbatch --export=NONE` or
`--export=JUDGE_MODEL=...,JUDGE_API_KEY=k`, every srun started its task without what the script exported, judge-serve
without its API key (answering every client of the host it publishes) and torchrun without its node count and
rendezvous. The stand-in srun here follows Slurm's rule: unless SLURM_EXPORT_ENV is unset or ALL, the task runs under
`env -i` with the SLURM_* variables and the names listed. No cluster."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"

# srun(1), --export and SLURM_EXPORT_ENV: ALL (the default) passes the caller's environment; NONE or a list of
# NAME / NAME=value items passes only those (and Slurm's own SLURM_* variables). The command is looked up here, as
# srun finds it before the task's environment is built.
FAKE_SRUN = r'''
while [[ $1 == --* ]]; do shift; done
spec=${SLURM_EXPORT_ENV:-ALL}
if [[ $spec == ALL || $spec == ALL,* ]]; then exec "$@"; fi
kept=()
for name in $(compgen -e); do
    if [[ $name == SLURM_* ]]; then kept+=("$name=${!name}"); fi
done
IFS=, read -r -a listed <<<"$spec"
for item in "${listed[@]}"; do
    case $item in
        NONE) ;;
        *=*) kept+=("$item") ;;
        *) kept+=("$item=${!item-}") ;;
    esac
done
exec env -i "${kept[@]}" "$(command -v "$1")" "${@:2}"
'''


def _base_env(bin_dir: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "localhost", "SLURM_NODEID": "0", "SLURM_SUBMIT_DIR": str(tmp_path),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), **extra,
    }  # fmt: skip


def test_serve_sbatch_gives_judge_serve_its_api_key_under_a_list_of_exports(tmp_path):
    """`sbatch --export=JUDGE_MODEL=<dir>,JUDGE_API_KEY=k slurm/serve.sbatch`: the script maps the key to
    JUDGE_SERVE_API_KEY in the batch shell, and judge-serve, in its step, must see it."""
    (tmp_path / "model").mkdir()
    seen = tmp_path / "seen_key"
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": FAKE_SRUN, "scontrol": 'echo "${@: -1}"\n',
        "judge-serve": f'printf "%s" "${{JUDGE_SERVE_API_KEY-unset}}" >"{seen}"\n'})  # fmt: skip
    env = _base_env(bin_dir, tmp_path, JUDGE_MODEL=str(tmp_path / "model"), JUDGE_API_KEY="k", JUDGE_PORT="8123",
                    SLURM_EXPORT_ENV=f"JUDGE_MODEL={tmp_path / 'model'},JUDGE_API_KEY=k")  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "serve.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert seen.read_text() == "k"


def test_train_sbatch_gives_torchrun_its_rendezvous_under_export_none(tmp_path):
    """`sbatch --export=NONE` with an env script: the step's bash reads the node count, ranks per node and the
    rendezvous the script exports, and finds torchrun on the PATH it set."""
    (tmp_path / "judge.yaml").write_text("recipe: seq2seq\n")
    args_file = tmp_path / "torchrun_args"
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": FAKE_SRUN, "scontrol": 'echo "${@: -1}"\n', "judge-train": "exit 0\n",
        "torchrun": f'if [[ $1 == --help ]]; then exit 0; fi\nprintf "%s\\n" "$@" >"{args_file}"\n'})  # fmt: skip
    env = _base_env(bin_dir, tmp_path, JUDGE_CONFIG="judge.yaml", JUDGE_OUTPUT_DIR="run", SLURM_EXPORT_ENV="NONE",
                    SLURMD_NODENAME="localhost")  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "train.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    args = args_file.read_text().splitlines()
    assert args[:3] == ["--nnodes=1", "--node_rank=0", "--nproc_per_node=1"]
    assert args[3] == "--master_addr=localhost"
    assert re.fullmatch(r"--master_port=[1-9][0-9]*", args[4]), args


@pytest.mark.parametrize("script", sorted(p.name for p in SLURM_DIR.glob("*.sbatch")))
def test_every_script_passes_its_environment_to_its_steps_before_its_first_srun(script):
    """Every srun (the port probes and the checkpoint survey too) comes after the export: a step started before it
    would still take sbatch's --export."""
    lines = (SLURM_DIR / script).read_text().splitlines()
    export = lines.index("export SLURM_EXPORT_ENV=ALL")
    first_srun = next(i for i, line in enumerate(lines) if re.search(r"(^|[\s(=])srun\s", line.split("#")[0]))
    assert export < first_srun, (script, export, first_srun)
