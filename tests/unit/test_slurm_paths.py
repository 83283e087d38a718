"""A relative path given to a slurm/ script is the submitter's: read against the folder sbatch ran in
(SLURM_SUBMIT_DIR), not the job's working folder, which `sbatch --chdir` moves. Each script is run by bash from
another folder than the submit folder, against a fake srun that records the command it would start; no cluster."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"

#: The environment script a job sources first: it records that it ran, from where.
ENV_SCRIPT = 'echo "sourced in $PWD" >"$FAKE_SOURCED"\n'


@pytest.fixture
def folders(tmp_path) -> tuple[Path, Path]:
    """The submit folder (with the submitter's files) and the job's working folder (``--chdir``), which has none."""
    submit_dir, work_dir = tmp_path / "submit", tmp_path / "chdir"
    work_dir.mkdir()
    (submit_dir / "runs" / "export").mkdir(parents=True)
    (submit_dir / "data.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    (submit_dir / "judge.yaml").write_text("max_tokens: 64\n")
    (submit_dir / "env.sh").write_text(ENV_SCRIPT)
    return submit_dir, work_dir


def _env(tmp_path: Path, submit_dir: Path, **extra: str) -> dict[str, str]:
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'while [[ $1 == --* ]]; do shift; done\nprintf "%s\\n" "$@" >"$FAKE_SRUN_ARGS"\n',
        "judge-eval": "exit 0\n", "judge-serve": "exit 0\n", "torchrun": "exit 0\n", "judge-train": "exit 0\n",
        "scontrol": 'echo "${@: -1}"\n'})  # `scontrol show hostnames X`: X
    return {
        **{k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "JUDGE_")) and k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME",
                                                                          "HF_HUB_CACHE")},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"),
        "FAKE_SOURCED": str(tmp_path / "sourced"), "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7",
        "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "localhost", "SLURM_SUBMIT_DIR": str(submit_dir),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), "JUDGE_ENV_SCRIPT": "env.sh", **extra,
    }  # fmt: skip


def _run(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SLURM_DIR / script)], env=env, capture_output=True, text=True, timeout=60,
                          cwd=cwd)  # fmt: skip


def _started(tmp_path: Path) -> list[str]:
    """The command the fake srun was asked to start, a word a line."""
    return (tmp_path / "srun_args").read_text().splitlines()


def _after(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def test_eval_sbatch_reads_its_config_judge_and_env_script_in_the_submit_folder(tmp_path, folders):
    """JUDGE_EVAL_CONFIG=judge.yaml and JUDGE_EVAL_JUDGE=runs/export under `sbatch --chdir`: the data and output were
    the submit folder's, the config was looked for in the working folder (no such file: the task stopped), and the
    checkpoint was handed to judge-eval relative, which read it there, or as a hub id."""
    submit_dir, work_dir = folders
    env = _env(tmp_path, submit_dir, JUDGE_EVAL_JUDGE="runs/export", JUDGE_EVAL_DATA="data.jsonl",
               JUDGE_EVAL_OUT="ev")  # fmt: skip
    proc = _run("eval.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sourced").read_text() == f"sourced in {work_dir}\n"
    assert _after(_started(tmp_path), "--judge") == f"{submit_dir}/runs/export"
    proc = _run("eval.sbatch", {**env, "JUDGE_EVAL_CONFIG": "judge.yaml"}, work_dir)
    assert proc.returncode == 0, proc.stderr
    words = _started(tmp_path)
    assert words[:2] == ["judge-eval", "run"]
    assert _after(words, "--config") == f"{submit_dir}/judge.yaml"
    assert _after(words, "--judge") == f"{submit_dir}/runs/export"
    assert _after(words, "--out") == f"{submit_dir}/ev/shards/0"


@pytest.mark.parametrize("judge", ["http://n1:8000/v1", "ai-forever/pollux-judge-7b", "runs/no-such-export"])
def test_eval_sbatch_passes_a_judge_the_submit_folder_does_not_hold_as_given(tmp_path, folders, judge):
    """A URL or a hub id is no path: a relative judge becomes the submit folder's only where that folder holds it."""
    submit_dir, work_dir = folders
    env = _env(tmp_path, submit_dir, JUDGE_EVAL_JUDGE=judge, JUDGE_EVAL_DATA="data.jsonl", JUDGE_EVAL_OUT="ev")
    proc = _run("eval.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert _after(_started(tmp_path), "--judge") == judge


def test_serve_sbatch_serves_the_submit_folders_export_not_a_hub_id_of_its_name(tmp_path, folders):
    """JUDGE_MODEL=runs/export under `sbatch --chdir`: no runs/ in the working folder, so the name passed for a hub id
    (owner/name) and judge-serve was started on the hub repository `runs/export`; the config was not found."""
    submit_dir, work_dir = folders
    env = _env(tmp_path, submit_dir, JUDGE_MODEL="runs/export", JUDGE_PORT="8123")
    proc = _run("serve.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sourced").read_text() == f"sourced in {work_dir}\n"
    assert _after(_started(tmp_path), "--model") == f"{submit_dir}/runs/export"
    proc = _run("serve.sbatch", {**env, "JUDGE_SERVE_CONFIG": "judge.yaml"}, work_dir)
    assert proc.returncode == 0, proc.stderr
    words = _started(tmp_path)
    assert words[0] == "judge-serve"
    assert _after(words, "--model") == f"{submit_dir}/runs/export"
    assert _after(words, "--config") == f"{submit_dir}/judge.yaml"


def test_serve_sbatch_keeps_a_hub_id_and_refuses_a_mistyped_path_under_the_submit_folder(tmp_path, folders):
    """A hub id stays one; a name whose first part is a folder of the submit folder is a path there (runs/exprt, a
    typo of runs/export), refused rather than fetched from the hub."""
    submit_dir, work_dir = folders
    env = _env(tmp_path, submit_dir, JUDGE_MODEL="ai-forever/pollux-judge-7b", JUDGE_PORT="8123")
    proc = _run("serve.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert _after(_started(tmp_path), "--model") == "ai-forever/pollux-judge-7b"
    (tmp_path / "srun_args").unlink()
    proc = _run("serve.sbatch", {**env, "JUDGE_MODEL": "runs/exprt"}, work_dir)
    assert proc.returncode == 2
    assert proc.stderr == (f"serve.sbatch: JUDGE_MODEL=runs/exprt is not a folder (read against {submit_dir} when "
                           "relative) nor a hub id (owner/name, whose owner is no folder there)\n")
    assert not (tmp_path / "srun_args").exists()
    # a folder named like the owner in the job's working folder (sbatch --chdir) is not the submitter's: still a hub id
    (work_dir / "ai-forever").mkdir()
    proc = _run("serve.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert _after(_started(tmp_path), "--model") == "ai-forever/pollux-judge-7b"


def test_serve_sbatch_offline_names_the_cache_it_looked_in_for_a_hub_id(tmp_path, folders):
    """HF_HUB_OFFLINE=1 and a hub id the job's cache (HF_HOME under JUDGE_CACHE_DIR, not `hf download`'s default
    ~/.cache/huggingface) lacks: one line naming that cache and how to fill it, exit 2, nothing started; once the
    model's folder is there (or HF_HUB_CACHE names one that holds it), the job serves it."""
    submit_dir, work_dir = folders
    env = _env(tmp_path, submit_dir, JUDGE_MODEL="ai-forever/pollux-judge-7b-r", JUDGE_PORT="8123", HF_HUB_OFFLINE="1")
    hub = tmp_path / "cache" / "huggingface" / "hub"
    proc = _run("serve.sbatch", env, work_dir)
    assert proc.returncode == 2
    assert proc.stderr == (f"serve.sbatch: JUDGE_MODEL=ai-forever/pollux-judge-7b-r is not in this job's Hugging Face "
                           f"cache ({hub}) and HF_HUB_OFFLINE is set: download it there first (HF_HUB_CACHE={hub} hf "
                           "download ai-forever/pollux-judge-7b-r)\n")
    assert not (tmp_path / "srun_args").exists()
    (hub / "models--ai-forever--pollux-judge-7b-r").mkdir(parents=True)
    proc = _run("serve.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert _after(_started(tmp_path), "--model") == "ai-forever/pollux-judge-7b-r"
    elsewhere = tmp_path / "elsewhere"
    proc = _run("serve.sbatch", {**env, "HF_HUB_CACHE": str(elsewhere)}, work_dir)
    assert proc.returncode == 2 and f"cache ({elsewhere})" in proc.stderr, proc.stderr
    (elsewhere / "models--ai-forever--pollux-judge-7b-r").mkdir(parents=True)
    assert _run("serve.sbatch", {**env, "HF_HUB_CACHE": str(elsewhere)}, work_dir).returncode == 0
    assert _run("serve.sbatch", {**env, "HF_HUB_OFFLINE": "0", "JUDGE_MODEL": "ai-forever/other"},
                work_dir).returncode == 0  # online, the job may download it


@pytest.mark.parametrize(("offline", "decides"), [
    ({"TRANSFORMERS_OFFLINE": "1"}, "TRANSFORMERS_OFFLINE"),
    ({"TRANSFORMERS_OFFLINE": " yes "}, "TRANSFORMERS_OFFLINE"),
    ({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "0"}, "HF_HUB_OFFLINE"),
    ({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"}, None),  # HF_HUB_OFFLINE, set, decides: online
])  # fmt: skip
def test_serve_sbatch_reads_offline_as_the_hub_does_and_names_the_variable(tmp_path, folders, offline, decides):
    """TRANSFORMERS_OFFLINE=1 alone turns huggingface_hub (and judge/checkpoints.py) offline too, but the job read
    HF_HUB_OFFLINE only: vLLM's traceback after the queue instead of the one line naming the cache."""
    submit_dir, work_dir = folders
    env = _env(tmp_path, submit_dir, JUDGE_MODEL="ai-forever/pollux-judge-7b-r", JUDGE_PORT="8123", **offline)
    proc = _run("serve.sbatch", env, work_dir)
    if decides is None:
        assert proc.returncode == 0, proc.stderr
        return
    hub = tmp_path / "cache" / "huggingface" / "hub"
    assert proc.returncode == 2
    assert proc.stderr == (f"serve.sbatch: JUDGE_MODEL=ai-forever/pollux-judge-7b-r is not in this job's Hugging Face "
                           f"cache ({hub}) and {decides} is set: download it there first (HF_HUB_CACHE={hub} hf "
                           "download ai-forever/pollux-judge-7b-r)\n")


def test_rank_sbatch_reads_a_checkpoint_judge_and_candidate_in_the_submit_folder(tmp_path, folders):
    """JUDGE_RANK_JUDGE=runs/export (and a candidate listed as runs/export) under `sbatch --chdir`: handed on
    relative, judge-eval rank looked for them in the working folder. A URL or hub id is passed as given."""
    submit_dir, work_dir = folders
    (submit_dir / "models.txt").write_text("runs/export\nai-forever/some-model\n")
    env = _env(tmp_path, submit_dir, JUDGE_RANK_MODELS="models.txt", JUDGE_RANK_JUDGE="runs/export",
               JUDGE_RANK_DATA="data.jsonl", JUDGE_RANK_OUT="ranked")  # fmt: skip
    proc = _run("rank.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sourced").read_text() == f"sourced in {work_dir}\n"
    words = _started(tmp_path)
    assert words[:2] == ["judge-eval", "rank"]
    assert _after(words, "--judge") == f"{submit_dir}/runs/export"
    assert _after(words, "--model") == f"{submit_dir}/runs/export"
    proc = _run("rank.sbatch", {**env, "SLURM_ARRAY_TASK_ID": "1", "JUDGE_RANK_JUDGE": "http://n1:8000/v1"}, work_dir)
    assert proc.returncode == 0, proc.stderr
    words = _started(tmp_path)
    assert (_after(words, "--judge"), _after(words, "--model")) == ("http://n1:8000/v1", "ai-forever/some-model")


def test_eval_merge_sbatch_sources_the_submit_folders_env_script(tmp_path, folders):
    submit_dir, work_dir = folders
    shard = submit_dir / "ev" / "shards" / "0"
    shard.mkdir(parents=True)
    (shard / "predictions.jsonl").write_text('{"id": 1}\n')
    env = _env(tmp_path, submit_dir, JUDGE_EVAL_DATA="data.jsonl", JUDGE_EVAL_OUT="ev")
    proc = _run("eval_merge.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sourced").read_text() == f"sourced in {work_dir}\n"


def test_train_sbatch_sources_the_submit_folders_env_script(tmp_path, folders):
    """The env script is what puts torchrun and judge-train on PATH: not found, the job stopped at its start."""
    submit_dir, work_dir = folders
    config = submit_dir / "judge.yaml"
    # the batch shell runs on the one host (SLURMD_NODENAME) and asks for the rendezvous port itself
    env = _env(tmp_path, submit_dir, JUDGE_CONFIG=str(config), JUDGE_OUTPUT_DIR=str(tmp_path / "run"),
               SLURMD_NODENAME="localhost")  # fmt: skip
    proc = _run("train.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sourced").read_text() == f"sourced in {work_dir}\n"
    assert "exec torchrun" in (tmp_path / "srun_args").read_text()  # the training step was started
