"""slurm/eval.sbatch run by bash with stand-in srun and judge-eval: an array whose size differs from the shard count
an earlier array recorded in the same JUDGE_EVAL_OUT is refused before it rewrites shards/count or any shard, and so
is a JUDGE_EVAL_DATA without a record, before any shard is cut."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "slurm" / "eval.sbatch"


def _one_task_array(tmp_path: Path, index: int, *script_args: str) -> subprocess.CompletedProcess:
    """`sbatch --array=<index> slurm/eval.sbatch <script_args>` without JUDGE_EVAL_SHARDS."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("srun", "judge-eval"):
        (bin_dir / name).write_text("#!/bin/bash\nexit 0\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_NODELIST": "n1", "SLURM_JOB_ID": "9",
           "SLURM_ARRAY_JOB_ID": "8", "SLURM_ARRAY_TASK_ID": str(index), "SLURM_ARRAY_TASK_MIN": str(index),
           "SLURM_ARRAY_TASK_MAX": str(index), "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_SUBMIT_DIR": str(tmp_path),
           "JUDGE_EVAL_JUDGE": "http://judge:8000/v1", "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "eval",
           "JUDGE_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(["bash", str(SCRIPT), *script_args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=30)


def _earlier_array_of_four(tmp_path: Path) -> None:
    """8 records cut by an earlier array of 4 tasks: shard 2 holds records 5-6 (ids 4 and 5)."""
    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "{k}"}}\n' for k in range(8)), encoding="utf-8")
    shards = tmp_path / "eval" / "shards"
    for index in range(4):
        (shards / str(index)).mkdir(parents=True)
        (shards / str(index) / "data.jsonl").write_text(f'{{"id": "{2 * index}"}}\n{{"id": "{2 * index + 1}"}}\n',
                                                      encoding="utf-8")
    (shards / "count").write_text("4\n", encoding="utf-8")


def test_a_one_task_rerun_without_the_recorded_count_is_refused_and_changes_nothing(tmp_path):
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 2)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"eval.sbatch: this array has 1 tasks, but {tmp_path}/eval/shards/count says the earlier array had 4 shards; "
        "rerun some of them with JUDGE_EVAL_SHARDS=4, write a fresh JUDGE_EVAL_OUT, or pass --overwrite after the "
        "script to judge all the data again in 1 shards")
    shards = tmp_path / "eval" / "shards"
    assert (shards / "count").read_text(encoding="utf-8") == "4\n"
    assert (shards / "0" / "data.jsonl").read_text(encoding="utf-8") == '{"id": "0"}\n{"id": "1"}\n'
    assert (shards / "2" / "data.jsonl").read_text(encoding="utf-8") == '{"id": "4"}\n{"id": "5"}\n'


def test_overwrite_after_the_script_recuts_the_data_in_the_new_count(tmp_path):
    """A one-task array with --overwrite is one shard of all 8 records, and records count 1."""
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    shards = tmp_path / "eval" / "shards"
    assert (shards / "count").read_text(encoding="utf-8") == "1\n"
    assert (shards / "0" / "data.jsonl").read_text(encoding="utf-8") == "".join(f'{{"id": "{k}"}}\n' for k in range(8))


def test_no_overwrite_last_wins_over_overwrite(tmp_path):
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, "--overwrite", "--no-overwrite")
    assert proc.returncode == 2 and "says the earlier array had 4 shards" in proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "4\n"


@pytest.mark.parametrize("text", ["", "\n  \n\t\n"])
def test_a_data_file_without_a_record_stops_the_task_instead_of_completing_it_empty(tmp_path, text):
    """Each task took the no-records path (exit 0, an empty shard), so the array ended COMPLETED having judged
    nothing, and only the merge job said the file was empty."""
    (tmp_path / "data.jsonl").write_text(text, encoding="utf-8")
    proc = _one_task_array(tmp_path, 0)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"eval.sbatch: JUDGE_EVAL_DATA={tmp_path}/data.jsonl holds no record (empty, or "
                                   "blank lines only): nothing to judge")
    assert not (tmp_path / "eval").exists()
