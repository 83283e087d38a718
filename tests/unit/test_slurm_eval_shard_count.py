"""slurm/eval.sbatch run by bash with stand-in srun and judge-eval: an array whose size differs from the shard count
an earlier array recorded in the same JUDGE_EVAL_OUT is refused before it rewrites shards/count or any shard, and so
is a JUDGE_EVAL_DATA without a record, before any shard is cut. The counts its messages give agree with their nouns
("1 task", "1 shard", "1 record"), and the merge job's too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "slurm" / "eval.sbatch"


def _one_task_array(tmp_path: Path, index: int, *script_args: str, **slurm: str) -> subprocess.CompletedProcess:
    """`sbatch --array=<index> slurm/eval.sbatch <script_args>` without JUDGE_EVAL_SHARDS; ``slurm`` replaces or adds
    variables (another array's size, JUDGE_EVAL_SHARDS)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("srun", "judge-eval"):
        (bin_dir / name).write_text("#!/bin/bash\nexit 0\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    # judge-eval's interpreter, beside it as in a venv: eval.sbatch's data checks (python) and its pairwise check
    # (python3, the batch shell's, which a venv's bin holds too; otherwise PATH's, a pyenv shim that starts bash and
    # pyenv before any Python, on each task).
    for name in ("python", "python3"):
        if not (bin_dir / name).exists():
            # A script that runs the tests' own interpreter by its path, not a symlink to it: a venv's python finds
            # its site-packages through pyvenv.cfg beside the path it was started by, which a symlink elsewhere lacks.
            (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
            (bin_dir / name).chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_NODELIST": "n1", "SLURM_JOB_ID": "9",
           "SLURM_ARRAY_JOB_ID": "8", "SLURM_ARRAY_TASK_ID": str(index), "SLURM_ARRAY_TASK_MIN": str(index),
           "SLURM_ARRAY_TASK_MAX": str(index), "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_SUBMIT_DIR": str(tmp_path),
           "JUDGE_EVAL_JUDGE": "http://judge:8000/v1", "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "eval",
           "JUDGE_CACHE_DIR": str(tmp_path / "cache"), **slurm}
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
        f"eval.sbatch: this array has 1 task, but {tmp_path}/eval/shards/count says the earlier array had 4 shards; "
        "rerun some of them with JUDGE_EVAL_SHARDS=4, write a fresh JUDGE_EVAL_OUT, or pass --overwrite after the "
        "script to judge all the data again in 1 shard")
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


@pytest.mark.parametrize(("script_args", "recut"), [
    (["--overwrite=true"], True), (["--overwrite", "yes"], True), (["--overwrite=OFF"], False),
    (["--overwrite", "false"], False), (["--overwrite", "0", "--criteria", "given"], False),
    (["--no-overwrite", "--overwrite=1"], True), (["--overwrite", "--no-progress"], True),
    (["--overwrite", "--name=a b"], True), (["--overwrite", "--server-args=--max-model-len 4096"], True),
    (["--overwrite", "--log-level", "debug"], True), (["--log-level=debug", "--overwrite", "no"], False),
])  # fmt: skip
def test_overwrite_with_a_value_after_the_script_is_read_as_judge_eval_reads_it(tmp_path, script_args, recut):
    """judge-eval's --overwrite takes an optional truth value (`--overwrite false`, `--overwrite=yes`). Read as the
    bare flag, `--overwrite false` re-cut the earlier array's 4 shards into 1 (count rewritten) for a judge-eval
    that then resumed them, and `--overwrite=true` was refused as if no --overwrite were given. A word that is one of
    run's flags before its `=` is that flag to argparse, a space after the `=` or not (`--name=a b`): taken for
    --overwrite's value, it stopped a command judge-eval runs."""
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, *script_args)
    shards = tmp_path / "eval" / "shards"
    if recut:
        assert proc.returncode == 0, proc.stderr
        assert (shards / "count").read_text(encoding="utf-8") == "1\n"
    else:
        assert proc.returncode == 2, proc.stderr
        assert "says the earlier array had 4 shards" in proc.stderr
        assert (shards / "count").read_text(encoding="utf-8") == "4\n"
        assert (shards / "0" / "data.jsonl").read_text(encoding="utf-8") == '{"id": "0"}\n{"id": "1"}\n'


@pytest.mark.parametrize(("script_args", "value"), [
    (["--overwrite=maybe"], "maybe"), (["--overwrite", ""], ""), (["--overwrite", "-1"], "-1"),
    (["--overwrite", "-.5"], "-.5"), (["--overwrite", "-"], "-"), (["--overwrite", "-x y"], "-x y"),
    (["--overwrite", "--unknown=a b"], "--unknown=a b"),
])  # fmt: skip
def test_an_overwrite_value_judge_eval_refuses_stops_the_task_before_the_cut(tmp_path, script_args, value):
    """argparse takes a word after --overwrite as its value unless it reads the word as an option: an empty word, a
    lone dash, a negative number and a word with a space are values to it, which judge-eval then refuses. Read as the
    bare flag, they re-cut the earlier array's 4 shards into 1 for a judge-eval that then refused to run."""
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, *script_args)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"eval.sbatch: --overwrite '{value}' after the script: judge-eval takes true or "
                                   "false there, or --overwrite alone")
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "4\n"


@pytest.mark.parametrize("line", ["overwrite: true", "overwrite: On  # judge everything again", "overwrite: 'yes'",
                                  "overwrite : TRUE", "\ufeffoverwrite: 1"])
def test_overwrite_in_the_config_recuts_the_data_in_the_new_count(tmp_path, line):
    """The header and docs treat `overwrite: true` in JUDGE_EVAL_CONFIG as the flag, and judge-eval reads it so; the
    re-cut looked at the flag alone and stopped every task ("pass --overwrite after the script"). Read as judge-eval's
    config reader reads a truth value (any case, quoted or not)."""
    _earlier_array_of_four(tmp_path)
    (tmp_path / "eval.yaml").write_text(f"criteria: given\n{line}\n" if "\ufeff" not in line
                                        else f"{line}\ncriteria: given\n", encoding="utf-8")  # fmt: skip
    proc = _one_task_array(tmp_path, 0, JUDGE_EVAL_CONFIG="eval.yaml")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "1\n"


@pytest.mark.parametrize(("lines", "script_args"), [
    ("overwrite: true\n", ["--no-overwrite"]),
    ("overwrite: false\n", []),
    ("overwrite: no\n", []),
    ("criteria: given\nextra_body:\n  overwrite: true\n", []),
], ids=["flag-after-the-script-wins", "false", "no", "not-the-top-level-key"])  # fmt: skip
def test_a_config_that_does_not_overwrite_keeps_the_recorded_count(tmp_path, lines, script_args):
    _earlier_array_of_four(tmp_path)
    (tmp_path / "eval.yaml").write_text(lines, encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, *script_args, JUDGE_EVAL_CONFIG="eval.yaml")
    assert proc.returncode == 2 and "says the earlier array had 4 shards" in proc.stderr, proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "4\n"


@pytest.mark.parametrize(("lines", "said"), [
    ("criteria: given\noverwrite:true\n", "not valid YAML"),
    ("overwrite: true#c\n", "overwrite: expected true or false, got 'true#c'"),
    ("judge_config:\n  overwrite: true\n", "unknown keys ['judge_config']"),
], ids=["no-space-after-the-colon", "hash-without-a-space", "unknown-key"])  # fmt: skip
def test_a_config_judge_eval_refuses_stops_the_task_before_anything_is_recut(tmp_path, lines, said):
    """``overwrite:true`` and ``overwrite: true#c`` are no ``overwrite: true`` to YAML: judge-eval refuses the config.
    Read by judge-eval's own reader, the task stops naming why before it rewrites shards/count or cuts its block, so
    the earlier array's count of 4 stays and its shards can still be rerun."""
    _earlier_array_of_four(tmp_path)
    (tmp_path / "eval.yaml").write_text(lines, encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, JUDGE_EVAL_CONFIG="eval.yaml")
    assert proc.returncode == 2, proc.stderr
    assert f"{tmp_path}/eval.yaml: judge-eval refuses it (" in proc.stderr and said in proc.stderr, proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "4\n"
    assert (tmp_path / "eval" / "shards" / "0" / "data.jsonl").read_text(encoding="utf-8") == \
        '{"id": "0"}\n{"id": "1"}\n'


@pytest.mark.parametrize(("script_args", "said"), [
    (["--overwrite", "--max-tokens", "many"], "--max-tokens"),
    (["--overwrite", "--concurency", "4"], "unrecognized arguments: --concurency"),
    (["--overwrite", "true", "stray"], "unrecognized arguments: stray"),
    (["--overwrite", "--log-level", "verbose"], "--log-level: unknown level 'verbose'"),
], ids=["refused-value", "unknown-flag", "stray-word", "unknown-log-level"])  # fmt: skip
def test_flags_judge_eval_run_refuses_stop_the_task_before_the_cut(tmp_path, script_args, said):
    """Read by judge-eval's own parser, a flag it refuses after the script stops the task naming it, before the
    earlier array's count is rewritten: judge-eval would refuse it only after the re-cut. A flag run does not know
    and a word it takes no place for are refused too, as judge-eval's ``parse_args`` refuses them, and a
    ``--log-level`` judge-eval's main refuses before it runs anything."""
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, *script_args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("eval.sbatch: judge-eval run refuses the flags after the script (")
    assert said in proc.stderr and "fix them before the array runs" in proc.stderr, proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "4\n"


def test_a_flag_reader_that_fails_otherwise_is_not_told_as_refused_flags(tmp_path):
    """Only exit 2 is judge-eval refusing the flags: a reader that failed otherwise (a traceback, exit 1; killed)
    was told as "judge-eval run refuses the flags after the script ()", empty parentheses, sending the user to fix
    flags judge-eval takes. It stops the task before the cut all the same, naming the exit status."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nif [ "$2" = eval.judging.overwrite_flags ]; then exit 1; fi\n'
                                    f'exec "{sys.executable}" "$@"\n', encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, "--overwrite")
    assert proc.returncode == 2, proc.stderr
    assert "refuses" not in proc.stderr, proc.stderr
    assert "could not read the flags after the script" in proc.stderr and "exit status 1" in proc.stderr, proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "4\n"


@pytest.mark.parametrize(("args", "status", "said"), [
    ([b"--overwrite", b"\xff"], 3, "\\udcff"),
    ([b"--overwrite", b"--x\xff"], 2, "\\udcff"),
], ids=["refused-value", "refused-flag"])  # fmt: skip
def test_the_flag_reader_writes_a_word_of_no_utf8_escaped_under_a_strict_stdout(tmp_path, args, status, said):
    """A word of argv that is no UTF-8 reaches Python as a lone surrogate; printed as it is to a strict UTF-8
    stdout (``en_US.UTF-8``), the refusal became a UnicodeEncodeError traceback, exit 1."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict",
           "PYTHONPATH": os.pathsep.join(p for p in (str(SCRIPT.parents[1]), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable.encode(), b"-m", b"eval.judging.overwrite_flags", *args], cwd=tmp_path,
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == status, proc.stderr
    assert said in proc.stdout.decode("utf-8") and not proc.stderr, proc.stderr


@pytest.mark.parametrize(("script_args", "recut"), [
    (["--overwrite", "--name=a b"], True), (["--overwrite", "false"], False), (["--overwrite", "-1"], False),
])  # fmt: skip
def test_without_judge_evals_interpreter_the_overwrite_flag_is_read_by_its_look(tmp_path, script_args, recut):
    """Without a python beside judge-eval, a word after --overwrite that looks like `--flag=...` is a flag, as it is
    to argparse when the flag is one of run's; a value judge-eval refuses still stops the task."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text("#!/bin/bash\nexit 1\n", encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    _earlier_array_of_four(tmp_path)
    proc = _one_task_array(tmp_path, 0, *script_args)
    assert proc.returncode == (0 if recut else 2), proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == ("1\n" if recut else "4\n")


@pytest.mark.parametrize(("line", "recut"), [
    ("overwrite: true", True), ("overwrite: 'yes'  # again", True), ("overwrite:true", False),
    ("overwrite: true#c", False), ("overwrite: false", False),
])  # fmt: skip
def test_without_judge_evals_interpreter_the_overwrite_line_is_read_with_yamls_spacing(tmp_path, line, recut):
    """Without a python beside judge-eval the line is read by sed, as YAML reads it: a space after the colon, and
    before a comment; ``overwrite:true`` and ``true#c`` are no truth value there, so the recorded count stays."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text("#!/bin/bash\nexit 1\n", encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    _earlier_array_of_four(tmp_path)
    (tmp_path / "eval.yaml").write_text(f"criteria: given\n{line}\n", encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, JUDGE_EVAL_CONFIG="eval.yaml")
    assert proc.returncode == (0 if recut else 2), proc.stderr
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == ("1\n" if recut else "4\n")


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


def _array_of(tasks: int, index: int) -> dict[str, str]:
    """The variables Slurm sets for task ``index`` of ``sbatch --array=0-<tasks - 1>``."""
    return {"SLURM_ARRAY_TASK_ID": str(index), "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": str(tasks - 1),
            "SLURM_ARRAY_TASK_COUNT": str(tasks)}


def test_an_array_of_two_after_one_of_one_task_says_one_shard(tmp_path):
    """An earlier array of one task left count 1: "had 1 shards" read as a typo beside "2 tasks"."""
    (tmp_path / "data.jsonl").write_text('{"id": "0"}\n{"id": "1"}\n', encoding="utf-8")
    (tmp_path / "eval" / "shards").mkdir(parents=True)
    (tmp_path / "eval" / "shards" / "count").write_text("1\n", encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, **_array_of(2, 0))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"eval.sbatch: this array has 2 tasks, but {tmp_path}/eval/shards/count says the earlier array had 1 shard; "
        "rerun some of them with JUDGE_EVAL_SHARDS=1, write a fresh JUDGE_EVAL_OUT, or pass --overwrite after the "
        "script to judge all the data again in 2 shards")
    rerun = _one_task_array(tmp_path, 0, JUDGE_EVAL_SHARDS="2")
    assert rerun.returncode == 2
    assert rerun.stderr.strip() == (f"eval.sbatch: JUDGE_EVAL_SHARDS=2, but {tmp_path}/eval/shards/count says the "
                                    "earlier array had 1 shard")


def test_an_index_past_one_shard_is_told_to_use_index_0(tmp_path):
    (tmp_path / "data.jsonl").write_text('{"id": "0"}\n', encoding="utf-8")
    proc = _one_task_array(tmp_path, 1, JUDGE_EVAL_SHARDS="1")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "eval.sbatch: array index 1 is no shard of 1 (JUDGE_EVAL_SHARDS): use index 0"
    past = _one_task_array(tmp_path, 2, JUDGE_EVAL_SHARDS="2")
    assert past.stderr.strip() == "eval.sbatch: array index 2 is no shard of 2 (JUDGE_EVAL_SHARDS): use indices 0-1"


def test_a_shard_past_the_one_record_says_one_record_in_two_shards(tmp_path):
    """More tasks than records: the empty shard's line said "(1 records in 2 shards)"."""
    (tmp_path / "data.jsonl").write_text('{"id": "0"}\n', encoding="utf-8")
    proc = _one_task_array(tmp_path, 1, **_array_of(2, 1))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "=== judge-eval shard 1/2: no records (1 record in 2 shards)\n"
    assert (tmp_path / "eval" / "shards" / "1" / "predictions.jsonl").read_text(encoding="utf-8") == ""


@pytest.mark.parametrize(("records", "shards", "index", "block", "ids"), [
    (4, 2, 1, "records 3-4 of 4", ["2", "3"]),
    (1, 2, 0, "record 1 of 1", ["0"]),  # not "records 1-1"
    (3, 2, 1, "record 3 of 3", ["2"]),  # its block is 3-4: the data ends at 3
    (5, 4, 2, "record 5 of 5", ["4"]),  # 2 a shard: 5-6
    (7, 2, 1, "records 5-7 of 7", ["4", "5", "6"]),  # 4 a shard: 5-8
])  # fmt: skip
def test_the_banner_names_the_records_the_shard_holds(tmp_path, records, shards, index, block, ids):
    """The banner's block stopped past the data ("records 5-6 of 5"), and one record read "records 1-1"."""
    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "{k}"}}\n' for k in range(records)), encoding="utf-8")
    proc = _one_task_array(tmp_path, index, **_array_of(shards, index))
    assert proc.returncode == 0, proc.stderr
    assert f"\n    data     {tmp_path}/data.jsonl: {block}\n" in proc.stdout
    held = (tmp_path / "eval" / "shards" / str(index) / "data.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in held] == ids


def test_the_merge_refuses_a_shard_past_an_array_of_one_shard(tmp_path):
    """An extra shard folder beside an array of one task: "one of this array's 1 shards" read as a typo."""
    out = tmp_path / "eval"
    for k in range(2):
        (out / "shards" / str(k)).mkdir(parents=True)
        (out / "shards" / str(k) / "predictions.jsonl").write_text(f'{{"id": "{k}"}}\n', encoding="utf-8")
    (out / "shards" / "count").write_text("1\n", encoding="utf-8")
    (tmp_path / "data.jsonl").write_text("{}\n", encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "judge-eval").write_text("#!/bin/bash\nexit 0\n", encoding="utf-8")
    (bin_dir / "judge-eval").chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1",
           "SLURM_SUBMIT_DIR": str(tmp_path), "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "eval"}
    proc = subprocess.run(["bash", str(SCRIPT.with_name("eval_merge.sbatch"))], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"eval_merge.sbatch: {out}/shards/1/predictions.jsonl is not one of this array's 1 shard (left by an earlier "
        "array with more tasks?); remove it, or give this run its own JUDGE_EVAL_OUT")


def test_lines_of_blanks_between_records_do_not_leave_tasks_without_a_block(tmp_path):
    """8 records, each followed by a line of spaces, in 4 shards: the count took the 8 blank lines for records (16),
    so shards 0 and 1 held 4 records each and shards 2 and 3 none."""
    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "{k}"}}\n  \n' for k in range(8)), encoding="utf-8")
    for index in range(4):
        proc = _one_task_array(tmp_path, index, **_array_of(4, index))
        assert proc.returncode == 0, proc.stderr
        assert f"\n    data     {tmp_path}/data.jsonl: records {2 * index + 1}-{2 * index + 2} of 8\n" in proc.stdout
        held = (tmp_path / "eval" / "shards" / str(index) / "data.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(line)["id"] for line in held] == [str(2 * index), str(2 * index + 1)]


@pytest.mark.parametrize(("row", "pairwise"), [
    ({"id": "0", "answer_1": "a", "answer_2": "b"}, True),
    ({"id": "0", "answer_2": "b"}, True),  # answer_1 misspelt: judge-eval's pairwise reader names it
    ({"id": "0", "answer": "a", "answer_1": "b"}, False),  # a pointwise row with an extra column
])  # fmt: skip
def test_pairwise_rows_are_told_by_judge_evals_rule(tmp_path, row, pairwise):
    """The script read a row with answer_1 as pairwise (and one with answer_2 alone as pointwise), while judge-eval
    asks for answer_1 or answer_2 and no answer: a pointwise row with an answer_1 column was refused, and a row
    with answer_2 alone judged as pairwise by every task, then refused by the merge."""
    from eval.pairwise.judging import is_pairwise_data

    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert is_pairwise_data(tmp_path / "data.jsonl") is pairwise
    proc = _one_task_array(tmp_path, 0)
    assert proc.returncode == (2 if pairwise else 0), proc.stderr
    assert ("holds pairwise rows" in proc.stderr) is pairwise


def _judged(shard: Path, ids: list[str]) -> None:
    """What `judge-eval run` writes in a shard whose block holds ``ids``: a prediction each and its run.json."""
    rows = [{"id": i, "judge": "j", "raw_output": "1", "feedback": "", "score": 1.0, "parse_ok": True,
             "error": None, "reason": "", "score_source": "verdict", "in_scale": True} for i in ids]
    (shard / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (shard / "run.json").write_text(json.dumps({"job": "judge-eval run", "n_items": len(ids), "config": {
        "judge": "http://judge:8000/v1", "data": str(shard / "data.jsonl"), "out": str(shard)}}), encoding="utf-8")


def test_blank_crlf_lines_at_the_end_are_no_records_to_the_cut_or_the_merge(tmp_path):
    """6 CRLF records and two blank CRLF lines in 4 shards: awk's NF counted each lone "\\r" as a record, so shard 3
    was cut those two lines, which judge-eval refused ("no records") on every requeue, and the merge never ran.
    Counted by the loader's rule, the 6 records are shards 0-2 and shard 3 is empty; the merge gives all 6."""
    from eval.judging.shards import merge_shards
    from judge import load_records

    text = "".join(f'{{"id": "{k}", "instruction": "q", "answer": "a", "criteria_name": "c", "rubrics": "r"}}\r\n'
                   for k in range(6)) + "\r\n\r\n"
    (tmp_path / "data.jsonl").write_bytes(text.encode("utf-8"))
    assert len(load_records(tmp_path / "data.jsonl")) == 6
    for index in range(4):
        proc = _one_task_array(tmp_path, index, **_array_of(4, index))
        assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "=== judge-eval shard 3/4: no records (6 records in 4 shards)\n"
    shards = [tmp_path / "eval" / "shards" / str(index) for index in range(4)]
    for shard in shards[:3]:  # what judge-eval run writes for its block
        ids = [json.loads(line)["id"] for line in (shard / "data.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(ids) == 2
        _judged(shard, ids)
    rows, _, array = merge_shards(shards, tmp_path / "data.jsonl", tmp_path / "eval")
    assert rows == 6 and array is not None and array.n_records == 6 and not array.missing


def test_a_shard_left_empty_by_a_recut_drops_its_stale_run_json_and_merges_as_nothing(tmp_path):
    """An earlier array of 4 judged shard 3 (records 7-8 of 8); cut again (--overwrite) from data of 2 records,
    shard 3 is empty. Its run.json (n_items 2) stayed beside the emptied predictions, and the merge refused "0 rows for the 2 items of
    its run.json ... rerun its array task" for ever."""
    from eval.judging.shards import merge_shards

    (tmp_path / "data.jsonl").write_text('{"id": "0"}\n{"id": "1"}\n', encoding="utf-8")
    stale = tmp_path / "eval" / "shards" / "3"
    stale.mkdir(parents=True)
    (stale / "run.json").write_text(json.dumps({"job": "judge-eval run", "n_items": 2, "config": {}}), encoding="utf-8")
    proc = _one_task_array(tmp_path, 3, "--overwrite", **_array_of(4, 3))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "=== judge-eval shard 3/4: no records (2 records in 4 shards)\n"
    assert not (stale / "run.json").exists()
    assert (stale / "predictions.jsonl").read_text(encoding="utf-8") == ""
    rows, run_json, _ = merge_shards([stale], tmp_path / "data.jsonl", tmp_path / "merged", allow_missing_shards=True)
    assert (rows, run_json) == (0, None)


_RUBRICS = "0: bad\n1: ok\n2: good"


def _row(**fields) -> str:
    """A loadable POLLUX row: instruction q, answer a, criterion c, model m, score 1, unless ``fields`` say."""
    row = {"instruction": "q", "answer": "a", "criteria_name": "c", "model_id": "m", "rubrics": _RUBRICS,
           "criteria_score": 1, **fields}
    return json.dumps({k: v for k, v in row.items() if v is not None})


@pytest.mark.parametrize(("lines", "said"), [
    ([_row(id="A", x=1), _row(id="B"), _row(id="A", x=1)], "line 3 = line 1"),
    ([_row(id="A", x=1), _row(id="B"), _row(id="A", x=2)], "line 3 repeats the id 'A' of line 1 with other content"),
    ([_row(), _row(instruction="q2"), "\ufeff" + _row()], "line 3 = line 1"),  # no ids: named by their content
    # The loader's id of an id-less row is its content_id (instruction, answer, criterion, model...): a score or an
    # extra column apart is one id with other content, which judge-eval of the whole file refuses.
    ([_row(), _row(instruction="q2"), _row(criteria_score=2)],
     "line 3 repeats the content id '3aba9b5ba4967e32' of line 1 with other content"),
    # 5 and "5" are one id to the loader, and the rows the same row again.
    ([_row(id=5), _row(id="5")], "line 2 = line 1"),
    (['{"id": "' + "x" * 300 + '"}', _row(id="x" * 300), _row(id="x" * 300, x=1)],
     "line 3 repeats the id '" + "x" * 100 + "...' of line 2 with other content"),
])  # fmt: skip
def test_a_row_twice_in_the_data_stops_every_task_naming_its_lines(tmp_path, lines, said):
    """A, B, A in 2 shards: judge-eval run drops the copy of a whole file, but shard 0 (A, B) and shard 1 (A) each
    judged A, and the merge, after the whole array, refused the shards as overlapping "shards of two arrays"."""
    (tmp_path / "data.jsonl").write_text("".join(line.removeprefix("\ufeff") + "\n" for line in lines),
                                         encoding="utf-8")
    for index in range(2):
        proc = _one_task_array(tmp_path, index, **_array_of(2, index))
        assert proc.returncode == 2
        assert proc.stderr == (f"eval.sbatch: JUDGE_EVAL_DATA={tmp_path}/data.jsonl holds a row twice ({said}): each "
                               "task judges its own block, so a row in two blocks is judged twice and the merge "
                               "refuses the shards; remove the repeated rows first (`judge-eval run` of the whole "
                               "file keeps the first copy of an exact duplicate)\n")
    assert not (tmp_path / "eval").exists()


def test_ids_held_once_pass_the_check(tmp_path):
    (tmp_path / "data.jsonl").write_text('{"id": "A"}\n{"id": 1}\n{"q": 1}\n{"q": 2}\n', encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, **_array_of(2, 0))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("lines", "said"), [
    # the whole file derives the ids it lacks (its first row has none); shard 1 (rows 3-4) starts with an id, and
    # its task refuses the id-less row after it ("id is missing", naming the block's line 2)
    ([_row(), _row(instruction="q2"), _row(id="C", instruction="q3"), _row(instruction="q4")],
     "line 1 has no id field, line 3 has one"),
    # the loader's test is the key itself: a null id is an id field, so shard 1 (starting with it) refuses its own
    # first row ("id is missing") while the whole file derives every id
    ([_row(), _row(instruction="q2"), json.dumps({**json.loads(_row(instruction="q3")), "id": None}),
      _row(instruction="q4")],
     "line 1 has no id field, line 3 has one"),
    # the whole file is refused (its first row has an id); shard 1 starts without one and judges its rows
    ([_row(id="A"), _row(id="B", instruction="q2"), _row(instruction="q3"), _row(instruction="q4")],
     "line 1 has an id field, line 3 has none"),
])  # fmt: skip
def test_rows_with_and_without_an_id_stop_every_task_naming_a_line_of_each(tmp_path, lines, said):
    """The loader decides from a file's first row whether it derives the ids its rows lack, and each task loads only
    its block: a block whose first row differs from the whole file's is refused, or judged where the whole file is
    refused. Found before any block is cut, as a repeated row is."""
    (tmp_path / "data.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for index in range(2):
        proc = _one_task_array(tmp_path, index, **_array_of(2, index))
        assert proc.returncode == 2
        assert proc.stderr == (f"eval.sbatch: JUDGE_EVAL_DATA={tmp_path}/data.jsonl mixes rows with and without an "
                               f"id field ({said}): the loader derives the ids of a file whose first row has none, "
                               "but each task loads only its own block, whose first row decides alone; give every "
                               "row an id, or none\n")
    assert not (tmp_path / "eval").exists()


def test_without_an_interpreter_beside_judge_eval_the_repeat_check_is_skipped(tmp_path):
    """A judge-eval installed without a python that imports pollux-judge beside it: no check, as with no python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text("#!/bin/bash\nexit 1\n", encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    (tmp_path / "data.jsonl").write_text(_row(id="A") + "\n" + _row(id="A") + "\n", encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, **_array_of(2, 0))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "eval" / "shards" / "0" / "data.jsonl").read_text(encoding="utf-8") == _row(id="A") + "\n"


def test_a_repeat_check_that_fails_stops_the_task_naming_the_check(tmp_path):
    """The interpreter beside judge-eval imports the check but its run of it fails (a traceback, exit 1: neither
    none found, 0, nor a finding, 3 or 4): the task stops naming the check (which counts the records too),
    instead of going on as if the data held no repeated row."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(
        '#!/bin/sh\nif [ "$1 $2 $3" = "-m eval.judging.array_data check" ]; then\n'
        '    echo "Traceback (most recent call last): MemoryError" >&2\n    exit 1\nfi\n'
        f'exec "{sys.executable}" "$@"\n', encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    (tmp_path / "data.jsonl").write_text(_row(id="A") + "\n" + _row(id="A") + "\n", encoding="utf-8")
    proc = _one_task_array(tmp_path, 0, **_array_of(2, 0))
    assert proc.returncode == 2
    assert proc.stderr == ("Traceback (most recent call last): MemoryError\n"
                           f"eval.sbatch: could not check JUDGE_EVAL_DATA={tmp_path}/data.jsonl for repeated rows and "
                           f"count its records ({bin_dir}/python -m eval.judging.array_data check failed, exit status "
                           "1)\n")
    assert not (tmp_path / "eval").exists()


@pytest.mark.parametrize("blank", ["\u00a0", "\u3000", "\x1c", " \u2028\t"])
def test_lines_of_unicode_whitespace_are_no_records_to_the_cut_or_the_merge(tmp_path, blank):
    """4 records and 4 lines the loader skips (str.strip: U+00A0, U+3000, \\x1c...) in 2 shards: awk on bytes counted
    8 records, so shard 1 was cut the 4 blank lines, which judge-eval refused ("no records") on every requeue, and
    the merge never ran. By the loader's rule the 4 records are 2 shards of 2; the merge gives all 4."""
    from eval.judging.shards import merge_shards
    from judge import load_records

    text = "".join(_row(id=str(k)) + "\n" for k in range(4)) + (blank + "\n") * 4
    (tmp_path / "data.jsonl").write_text(text, encoding="utf-8")
    assert len(load_records(tmp_path / "data.jsonl")) == 4
    shards = [tmp_path / "eval" / "shards" / str(index) for index in range(2)]
    for index, shard in enumerate(shards):
        proc = _one_task_array(tmp_path, index, **_array_of(2, index))
        assert proc.returncode == 0, proc.stderr
        ids = [record.id for record in load_records(shard / "data.jsonl")]  # what judge-eval run judges
        assert ids == [str(2 * index), str(2 * index + 1)]
        _judged(shard, ids)
    rows, _, array = merge_shards(shards, tmp_path / "data.jsonl", tmp_path / "eval")
    assert rows == 4 and array is not None and array.n_records == 4 and not array.missing


def test_a_file_of_unicode_whitespace_alone_stops_the_task_before_any_shard_is_cut(tmp_path):
    (tmp_path / "data.jsonl").write_text("\u00a0\n\u3000\n", encoding="utf-8")
    proc = _one_task_array(tmp_path, 0)
    assert proc.returncode == 2
    assert proc.stderr == (f"eval.sbatch: JUDGE_EVAL_DATA={tmp_path}/data.jsonl holds no record (empty, or blank lines "
                           "only): nothing to judge\n")
    assert not (tmp_path / "eval").exists()


def test_the_data_module_eval_sbatch_runs_imports_the_standard_library_and_pollux_judge_alone(tmp_path):
    """Every array task starts ``python -m eval.judging.array_data`` twice before it judges (``check``, ``cut``):
    importing it (and so ``eval`` and ``eval.judging``) pulls in no third-party package, whose import would be paid
    on each start."""
    code = ("import json, sys\nbefore = set(sys.modules)\nimport eval.judging.array_data\n"
            "tops = {name.partition('.')[0] for name in set(sys.modules) - before}\n"
            "print(json.dumps(sorted(tops - set(sys.stdlib_module_names) - {'judge', 'eval'})))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(SCRIPT.parents[1]),
                                                                   os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
