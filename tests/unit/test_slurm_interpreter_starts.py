"""The interpreters one slurm/eval.sbatch array task starts before its judge-eval, counted through stand-ins that
log each start and then run this test's Python: each start pays an interpreter's launch and its imports on every
task of every array, so two questions asked of the same data are asked in one start where their failures stay
told apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.fake_commands import write_executables

SCRIPT = Path(__file__).resolve().parents[2] / "slurm" / "eval.sbatch"

# python (judge-eval's interpreter, beside it as in a venv) and python3 (the batch shell's): the start is logged as
# the interpreter's name, its first argument and, for -m, the module and its command; then the tests' own Python runs.
LOGGED_PYTHON = f"""case $1 in
    -m) echo "$(basename "$0") $1 $2 ${{3:-}}" ;;
    *) echo "$(basename "$0") $1" ;;
esac >>"$FAKE_STARTS"
exec "{sys.executable}" "$@"
"""


def test_one_eval_task_starts_each_interpreter_once_per_question(tmp_path: Path) -> None:
    """The repeated-row check and the record count read the same data: one start of ``array_data check`` and one
    pass over the file, not ``repeats`` and then ``count`` (two starts, two passes)."""
    bin_dir = write_executables(tmp_path / "bin", {
        "python": LOGGED_PYTHON, "python3": LOGGED_PYTHON,
        "srun": 'echo "srun $3 $4" >>"$FAKE_STARTS"\n',  # $1 $2: --kill-on-bad-exit=1 --ntasks=1
        "judge-eval": "exit 0\n"})  # fmt: skip
    (tmp_path / "data.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n', encoding="utf-8")
    starts = tmp_path / "starts"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_STARTS": str(starts),
           "SLURM_JOB_NODELIST": "n1", "SLURM_JOB_ID": "9", "SLURM_ARRAY_JOB_ID": "8", "SLURM_ARRAY_TASK_ID": "0",
           "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "0", "SLURM_ARRAY_TASK_COUNT": "1",
           "SLURM_SUBMIT_DIR": str(tmp_path), "JUDGE_EVAL_JUDGE": "http://judge:8000/v1",
           "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "eval", "JUDGE_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [line.rstrip() for line in starts.read_text().splitlines()] == [
        "python3 -c",  # the pairwise check, in the standard library (any python3)
        "python -c",  # whether judge-eval's interpreter imports pollux-judge
        "python -m eval.judging.array_data check",  # before the fix: repeats, then count
        "python -m eval.judging.overwrite_flags",  # the flags after the script, by judge-eval's own parser
        "python -m eval.judging.array_data cut",
        "python -c",  # whether this job has claimed the shard already (its run.json)
        "srun judge-eval run",
    ]
