"""`judge-eval merge` and the eval array the shards belong to (eval/judging/shard_array.py): a shard left off, shards
of two arrays, a shard cut from other data, one still being written or unfinished. Each is refused in one line
(exit 2) before anything is written; `--allow-missing-shards` merges an incomplete array and the merged run.json,
metrics.json and the report say which shards are missing. No cluster, no judge: shards laid out as eval.sbatch
lays them out."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from eval.cli import main as eval_main
from eval.judging.shards import merge_shards
from tests.support.console_scripts import path_with_console_scripts
from tests.support.eval_shards import eval_array, sample_lines

REPO = Path(__file__).resolve().parents[2]


def _merge(root: Path, data: Path, dirs: list[Path], capsys, *flags: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = eval_main(["merge", "--data", str(data), "--out", str(root / "out"), *flags, *map(str, dirs)])
    said = capsys.readouterr()
    return code, said.out, said.err


def _nothing_written(root: Path) -> bool:
    return not (root / "out" / "predictions.jsonl").exists() and not (root / "out" / "run.json").exists()


def test_a_shard_left_off_is_refused_naming_its_index_and_records(tmp_path, capsys):
    """Shards 0, 1 and 3 of 4 given by hand merged with exit 0 and a run folder that looked whole, a quarter of the
    items missing. Refused in one line (exit 2), naming shard 2 of 4, its records of --data and the opt-in."""
    data, dirs = eval_array(tmp_path, 8, 4)
    code, out, err = _merge(tmp_path, data, [dirs[0], dirs[1], dirs[3]], capsys)
    assert (code, out) == (2, "")
    assert err == (f"judge-eval merge: error: {tmp_path / 'out' / 'shards'}: shard 2 of the array's 4 (shards/count) "
                   "was not given (2 records of --data: 5-6 of 8); give every shard of the array, or pass "
                   "--allow-missing-shards to merge the others and record the missing ones\n")
    assert _nothing_written(tmp_path)


def test_two_missing_shards_are_named_with_their_records(tmp_path, capsys):
    data, dirs = eval_array(tmp_path, 10, 4)  # blocks of 3: 1-3, 4-6, 7-9, 10
    code, _, err = _merge(tmp_path, data, [dirs[1], dirs[2]], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "shards 0, 3 of the array's 4 (shards/count) were not given (4 records of --data: 1-3, 10 of 10)" in err


def test_allow_missing_shards_merges_and_records_the_missing_ones_through_score(tmp_path, capsys):
    """The opt-in merges the shards given; run.json's shard_array names the missing ones and their records, the
    console says so, and score's metrics.json and report call the items shards left out, not an unfinished run."""
    data, dirs = eval_array(tmp_path, 8, 4)
    code, out, err = _merge(tmp_path, data, [dirs[0], dirs[1], dirs[3]], capsys, "--allow-missing-shards")
    assert (code, err) == (0, "")
    run_dir = tmp_path / "out"
    assert out == (f"merged 6 predictions from 3 shards -> {run_dir / 'predictions.jsonl'}, {run_dir / 'run.json'}; "
                   "shard 2 of 4 left out (2 records of --data), as run.json's shard_array records\n")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["shard_array"] == {"folder": str(run_dir / "shards"), "count": 4, "merged": [0, 1, 3],
                                     "missing": [2], "missing_records": 2, "n_records": 8}
    assert eval_main(["score", "--predictions", str(run_dir), "--n-boot", "0", "--vc-repeats", "2"]) == 0
    console = capsys.readouterr().out
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert {k: metrics["notes"].get(k) for k in ("missing_shards", "shard_count", "n_missing_shard_records")} == {
        "missing_shards": [2], "shard_count": 4, "n_missing_shard_records": 2}
    said = ("2 items have no prediction (shard 2 of 4 was left out of the merge: judge-eval merge "
            "--allow-missing-shards)")
    assert said in console
    assert "unfinished" not in console
    assert said.replace("judge-eval merge --allow-missing-shards", "`judge-eval merge --allow-missing-shards`") \
        .replace("2 items have no prediction", "**2 items have no prediction**") in (run_dir / "report.md").read_text()


def _alternating_splits(n: int) -> list[str]:
    """``n`` records of the sample, Zero-Shot and Standard in turn (its first records are all Zero-Shot)."""
    import judge

    lines = sample_lines(10**6)
    split = {record.id: judge.split_of(record) for record in judge.load_records(judge.sample_data_path())}
    by_split = {name: [line for line in lines if split[json.loads(line)["id"]] == name]
                for name in ("zero_shot", "standard")}
    return [line for pair in zip(by_split["zero_shot"], by_split["standard"]) for line in pair][:n]


def test_a_partial_merge_of_a_split_run_calls_the_other_splits_items_unselected_not_unfinished(tmp_path, capsys):
    """Each shard judged its block's Standard items (--split standard) and shard 2 of 4 was left out: of the 10 items
    without a prediction, 4 are that shard's and 6 the other shards' Zero-Shot items, which the run never meant to
    judge. The report called those 6 an unfinished run."""
    import judge

    data, dirs = eval_array(tmp_path, 16, 4, lines=_alternating_splits(16))
    for shard in dirs:
        standard = {r.id for r in judge.load_records(shard / "data.jsonl") if judge.split_of(r) == "standard"}
        rows = [line for line in (shard / "predictions.jsonl").read_text().splitlines()
                if json.loads(line)["id"] in standard]
        (shard / "predictions.jsonl").write_text("".join(line + "\n" for line in rows))
        record = json.loads((shard / "run.json").read_text())
        record["config"]["split"], record["n_items"] = "standard", len(standard)
        (shard / "run.json").write_text(json.dumps(record))
    code, _, err = _merge(tmp_path, data, [dirs[0], dirs[1], dirs[3]], capsys, "--allow-missing-shards")
    assert (code, err) == (0, "")
    run_dir = tmp_path / "out"
    assert eval_main(["score", "--predictions", str(run_dir), "--n-boot", "0", "--vc-repeats", "2"]) == 0
    assert ("10 items have no prediction (shard 2 of 4 was left out of the merge: judge-eval merge "
            "--allow-missing-shards; 6 more: the run judged only the standard items: --split standard)"
            in capsys.readouterr().out)
    notes = json.loads((run_dir / "metrics.json").read_text())["notes"]
    assert (notes["n_missing_unselected"], notes["unselected_split"], notes["n_missing_shard_records"]) == (
        6, "standard", 4)


def test_a_complete_array_records_nothing_missing(tmp_path, capsys):
    data, dirs = eval_array(tmp_path, 8, 4)
    code, out, _ = _merge(tmp_path, data, dirs, capsys)
    assert code == 0 and "left out" not in out
    record = json.loads((tmp_path / "out" / "run.json").read_text())
    assert record["shard_array"] == {"folder": str(tmp_path / "out" / "shards"), "count": 4, "merged": [0, 1, 2, 3],
                                     "missing": [], "missing_records": 0, "n_records": 8}


def test_an_array_without_a_count_file_names_the_sibling_left_off(tmp_path, capsys):
    """An array of an earlier eval.sbatch wrote no shards/count: its shard folders are the array's, and one of them
    left off (eval_merge.sbatch then passed every shard holding predictions) is named; its records are unknown."""
    data, dirs = eval_array(tmp_path, 8, 4, write_count=False)
    (dirs[2] / "predictions.jsonl").unlink()  # the task died before writing any
    code, _, err = _merge(tmp_path, data, [dirs[0], dirs[1], dirs[3]], capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {tmp_path / 'out' / 'shards'}: shard 2 of the array's "
                              "folders 0-3 (no shards/count) was not given; give every shard of the array, or pass "
                              "--allow-missing-shards to merge the others and record the missing ones\n")


def test_numbered_run_folders_outside_a_shards_folder_are_merged_as_given(tmp_path, capsys):
    """eval.sbatch writes its shards into OUT/shards/<i>; run folders of one's own named 1 and 2 beside a 0 are no
    eval array's, and were refused as one missing its shard 0."""
    data, dirs = eval_array(tmp_path, 8, 4)
    runs = tmp_path / "runs"
    runs.mkdir()
    for k, shard in enumerate(dirs[:3]):
        shard.rename(runs / str(k))
    code, out, err = _merge(tmp_path, data, [runs / "1", runs / "2"], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("merged 4 predictions from 2 shards") and "left out" not in out
    assert "shard_array" not in json.loads((tmp_path / "out" / "run.json").read_text())


def test_shards_of_two_arrays_are_refused(tmp_path, capsys):
    """Shards 0-1 of one array's folder and 2-3 of another's (each cut from its own data): no id overlaps, and each
    array is half there; refused naming both folders."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    data, dirs_a = eval_array(a, 8, 4)
    _, dirs_b = eval_array(b, 8, 4)
    code, _, err = _merge(tmp_path, data, [*dirs_a[:2], *dirs_b[2:]], capsys, "--allow-missing-shards")
    assert (code, err) == (2, f"judge-eval merge: error: {dirs_b[2]}: a shard of {b / 'out' / 'shards'}, but "
                              f"{dirs_a[0]} is one of {a / 'out' / 'shards'}: the shards come from two eval arrays; "
                              "merge one array's shards at a time\n")
    assert _nothing_written(tmp_path)


def test_a_folder_that_is_no_array_shard_beside_array_shards_is_refused(tmp_path, capsys):
    data, dirs = eval_array(tmp_path, 8, 2)
    extra = tmp_path / "hand-run"
    extra.mkdir()
    (extra / "predictions.jsonl").write_text("")
    code, _, err = _merge(tmp_path, data, [*dirs, extra], capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {extra}: not a shard folder of an eval array (shards/<i>), "
                              f"but {dirs[0]} is one of {tmp_path / 'out' / 'shards'}; merge one array's shards "
                              "at a time\n")


def test_a_shard_past_the_arrays_count_is_refused(tmp_path, capsys):
    """An earlier array of more tasks left shards/4 in the folder; this array has 4 (0-3)."""
    data, dirs = eval_array(tmp_path, 8, 4)
    (dirs[0].parent / "count").write_text("2\n")
    code, _, err = _merge(tmp_path, data, dirs, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {dirs[2]}: shard 2 is none of the array's 2 "
                              "(shards/count: 0-1), left by an earlier array of more tasks; merge shards 0-1 alone, "
                              "or give this run its own folder\n")


def test_a_count_file_that_is_no_count_is_refused(tmp_path, capsys):
    data, dirs = eval_array(tmp_path, 8, 2)
    (dirs[0].parent / "count").write_text("two\n")
    code, _, err = _merge(tmp_path, data, dirs, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {dirs[0].parent / 'count'}: holds 'two', not a number "
                              "of shards as eval.sbatch writes it\n")


def test_a_shard_cut_from_other_data_is_refused(tmp_path, capsys):
    """--data of 10 records, the array cut from 8: its blocks are not this data's (a shard's records would be
    scored against other items or called missing). Refused naming the shard's data.jsonl and both counts."""
    data, dirs = eval_array(tmp_path, 8, 4)
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(sample_lines(10)) + "\n", encoding="utf-8")
    code, _, err = _merge(tmp_path, other, dirs, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {dirs[0] / 'data.jsonl'}: 2 records, but shard 0 of 4 of "
                              f"--data {other} is 3 (records 1-3 of 10): the array was cut from other data; give "
                              "the --data the array judged\n")
    assert _nothing_written(tmp_path)


def test_a_shard_still_being_written_is_refused(tmp_path, capsys):
    """A shard whose `judge-eval run` holds its folder (an array task still running) is appending rows: refused,
    naming the holder, rather than merged half-judged."""
    from judge.plumbing.run_folder import hold_run_folder

    data, dirs = eval_array(tmp_path, 8, 2)
    with hold_run_folder(dirs[1], "judge-eval run"):
        code, _, err = _merge(tmp_path, data, dirs, capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"judge-eval merge: error: {dirs[1]}: judge-eval run (pid ")
    assert err.endswith("is writing it now; merge once its array task has ended\n")
    assert _nothing_written(tmp_path)


def test_an_unfinished_shard_is_refused(tmp_path, capsys):
    """A shard whose run stopped before every item had a row (an unusable server: exit 4; a kill between rows)
    merged as if whole. Refused, naming its rows and items; --allow-missing-shards does not take it (leave the
    shard out instead, which the record then says)."""
    data, dirs = eval_array(tmp_path, 8, 2)
    predictions = dirs[1] / "predictions.jsonl"
    predictions.write_text("".join(predictions.read_text().splitlines(keepends=True)[:3]))
    _refused_unless_left_out(tmp_path, data, dirs, capsys, f"{predictions}: 3 rows for the 4 items of its run.json "
                             "(n_items): the shard's run is unfinished; rerun its array task, which resumes it, or "
                             "leave it out with --allow-missing-shards")


def _refused_unless_left_out(root: Path, data: Path, dirs: list[Path], capsys, said: str) -> None:
    """Shard 1 of 2 refused (exit 2, ``said``, nothing written) with or without --allow-missing-shards, and the merge
    of shard 0 alone with it recording shard 1 as left out."""
    for flags in ((), ("--allow-missing-shards",)):
        code, _, err = _merge(root, data, dirs, capsys, *flags)
        assert (code, err) == (2, f"judge-eval merge: error: {said}\n")
    assert _nothing_written(root)
    code, out, _ = _merge(root, data, dirs[:1], capsys, "--allow-missing-shards")
    assert code == 0 and "shard 1 of 2 left out (4 records of --data)" in out


def test_a_shard_whose_block_holds_records_and_that_judged_none_is_refused(tmp_path, capsys):
    """An empty predictions.jsonl and no run.json is how eval.sbatch leaves a shard past the records (more tasks than
    records), which merges as nothing; a folder so left by an earlier array whose block now holds records (its task
    refused by judge-eval: nothing judged) merged too, exit 0, its items in no shard. Refused, naming the shard's cut
    (whether it holds records is all the refusal reads; the array's count of them follows), with or without --allow-missing-shards (leave it out instead, which the record then says)."""
    data, dirs = eval_array(tmp_path, 8, 2)
    (dirs[1] / "run.json").unlink()
    (dirs[1] / "predictions.jsonl").write_text("")
    _refused_unless_left_out(tmp_path, data, dirs, capsys, f"{dirs[1]}: its data.jsonl holds records, but it has no "
                             "run.json and no rows: its array task judged none of them; rerun it, or leave it out "
                             "with --allow-missing-shards")


def test_an_empty_shard_folder_is_refused_in_one_line(tmp_path, capsys):
    """A shard folder with nothing in it (its task never started): refused naming the file, no traceback."""
    data, dirs = eval_array(tmp_path, 8, 2)
    for name in ("predictions.jsonl", "run.json", "data.jsonl"):
        (dirs[1] / name).unlink()
    code, _, err = _merge(tmp_path, data, dirs, capsys)
    assert (code, err) == (2, f"judge-eval merge: error: {dirs[1] / 'predictions.jsonl'}: no such file; did this "
                              "shard's array task finish?\n")


def test_merge_shards_refuses_a_partial_array_unless_allowed(tmp_path):
    data, dirs = eval_array(tmp_path, 8, 4)
    with pytest.raises(ValueError, match=r"shard 2 of the array's 4 \(shards/count\) was not given"):
        merge_shards([dirs[0], dirs[1], dirs[3]], data, tmp_path / "out")
    rows, run_json, array = merge_shards([dirs[0], dirs[1], dirs[3]], data, tmp_path / "out",
                                         allow_missing_shards=True)
    assert rows == 6 and json.loads(run_json.read_text())["shard_array"]["missing"] == [2] == list(array.missing)


def _merge_job(root: Path) -> subprocess.CompletedProcess:
    """slurm/eval_merge.sbatch itself on ``root`` (data.jsonl, out/shards), its srun writing what it would score."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text('#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\necho "$*" >"$FAKE_SCORE"\n')
    (bin_dir / "srun").chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
           "PATH": path_with_console_scripts("judge-eval", before=[bin_dir]),
           "FAKE_SCORE": str(root / "score"), "SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "n1",
           "SLURM_SUBMIT_DIR": str(root), "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "out"}
    return subprocess.run(["bash", str(REPO / "slurm" / "eval_merge.sbatch")], env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_merge_job_gives_the_whole_array_with_no_new_flag(tmp_path):
    data, _ = eval_array(tmp_path, 8, 4)
    proc = _merge_job(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out" / "run.json").read_text())["shard_array"]["missing"] == []
    assert (tmp_path / "score").exists()


def test_the_merge_job_of_an_array_without_a_count_stops_at_a_shard_with_no_predictions(tmp_path):
    """An array of an earlier eval.sbatch (no shards/count): the job passed every shard holding predictions, so a
    task that died before writing any was left out silently and the rest scored. The merge now stops it (exit 2)."""
    _, dirs = eval_array(tmp_path, 8, 4, write_count=False)
    (dirs[3] / "predictions.jsonl").unlink()
    proc = _merge_job(tmp_path)
    assert proc.returncode == 2
    assert (f"judge-eval merge: error: {tmp_path / 'out' / 'shards'}: shard 3 of the array's folders 0-3 (no "
            "shards/count) was not given") in proc.stderr
    assert not (tmp_path / "score").exists() and not (tmp_path / "out" / "predictions.jsonl").exists()


def test_score_finds_the_left_out_shards_items_by_eval_sbatchs_cut_or_not_at_all():
    """Blocks of 3 over 10 records (1-3, 4-6, 7-9, 10): shards 0 and 3 left out are the first three items and the
    last. Data of another size than the array's is not guessed at."""
    from eval.scoring.score import missing_block_items

    run_info = {"shard_array": {"count": 4, "merged": [1, 2], "missing": [0, 3], "missing_records": 4,
                                "n_records": 10}}
    assert missing_block_items(run_info, 10).tolist() == [True] * 3 + [False] * 6 + [True]
    assert missing_block_items(run_info, 9) is None
    assert missing_block_items({"shard_array": {**run_info["shard_array"], "missing": []}}, 10) is None


@pytest.mark.parametrize(("n_records", "count"), [(8, 4), (5, 4), (10, 4), (3, 5)])
def test_the_blocks_are_the_ones_eval_sbatch_cuts(tmp_path, n_records, count):
    """eval.sbatch itself (its awk, a stand-in judge-eval) cuts data with blank and blanks-only lines between the
    records; each shard's data.jsonl is its block by ``shard_block`` (``shard_array`` refuses any other), and the
    blocks the merge names are the ones the task logged ("records 5-6 of 8")."""
    from eval.judging.shard_array import shard_array, shard_block

    lines = sample_lines(n_records)
    data = tmp_path / "data.jsonl"
    data.write_text("\n \t\n".join(lines) + "\n\n", encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("srun", "judge-eval"):
        (bin_dir / name).write_text("#!/bin/bash\nexit 0\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    logged = {}
    for k in range(count):
        env = {**{key: v for key, v in os.environ.items() if not key.startswith(("SLURM_", "JUDGE_"))},
               "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_NODELIST": "n1",
               "SLURM_JOB_ID": str(100 + k), "SLURM_ARRAY_JOB_ID": "99", "SLURM_ARRAY_TASK_ID": str(k),
               "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": str(count - 1),
               "SLURM_ARRAY_TASK_COUNT": str(count), "SLURM_SUBMIT_DIR": str(tmp_path),
               "JUDGE_EVAL_JUDGE": "http://judge:8000/v1", "JUDGE_EVAL_DATA": "data.jsonl", "JUDGE_EVAL_OUT": "out",
               "JUDGE_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.run(["bash", str(REPO / "slurm" / "eval.sbatch")], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        said = [line.rsplit(": ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("    data ")]
        logged[k] = said[0] if said else "none"
    shards = [tmp_path / "out" / "shards" / str(k) for k in range(count)]
    array = shard_array(shards, data)  # every data.jsonl its block's size, or refused
    assert (array.count, array.missing, array.n_records) == (count, (), n_records)
    for k, shard in enumerate(shards):
        first, last = shard_block(k, count, n_records)
        assert (shard / "data.jsonl").read_text(encoding="utf-8") == "".join(
            line + "\n" for line in lines[first - 1:last])
        array = shard_array([s for s in shards if s != shard], data)
        assert array.missing == (k,)
        expected = logged[k].replace("records ", "").replace("record ", "").split(" of ")[0]
        assert array.missing_ranges == (() if logged[k] == "none" else (expected,))


@pytest.mark.parametrize("where", ["0", "0/merged", "merged", "."])
def test_an_out_among_the_shards_is_refused_and_nothing_written(tmp_path, where):
    """`judge-eval merge --out <a shard folder>` replaced that shard's predictions and run.json with the merged ones,
    silently. Refused naming --out and the shard (or the array's shards folder), every shard left as it was."""
    data, dirs = eval_array(tmp_path, 4, 2)
    before = {path: path.read_bytes() for shard in dirs for path in shard.iterdir()}
    out = (tmp_path / "out" / "shards" / where).resolve()
    with pytest.raises(ValueError) as refused:
        merge_shards(dirs, data, out)
    said = str(refused.value)
    assert said.startswith(f"--out {out}: ") and said.endswith("nothing written")
    assert (str(dirs[0]) if where.startswith("0") else f"{tmp_path / 'out' / 'shards'}, the eval array's") in said
    assert {path: path.read_bytes() for shard in dirs for path in shard.iterdir()} == before
    assert not (out / "predictions.jsonl").exists() or where.startswith("0")
    assert not (tmp_path / "out" / "shards" / "merged").exists()
