"""judge-eval's first-hour errors, each one line on stderr with exit 2 naming the flag, file, row or field, never a
traceback: an --out that cannot be made or written (checked before any work), a run.json whose data is gone or
malformed, a run still being judged, a checkpoint path that is not there, a file given as --predictions that is no
JSONL, an items.parquet that compare cannot read, and a prediction score no judge gives. Expected messages are
written out by hand."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge
from eval.cli import main
from eval.judging.predictions import PredictionRow, read_prediction_table
from judge.plumbing.config_files import ConfigError
from judge.plumbing.run_folder import RunFolderUnwritable, hold_run_folder, refuse_unwritable
from tests.support.eval_cli import prediction_row, sample_by_split, write_run

LINUX = sys.platform.startswith("linux") and Path("/proc/self").is_dir()
#: /sys refuses mkdir to root and to anyone (EPERM or EACCES); /proc has no such entry to make a folder in (ENOENT).
NO_PERMISSION = r"\((Operation not permitted|Permission denied)\)"
NO_SUCH = r"\(No such file or directory\)"


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict:
    """A scored run of 12 records (a judge that says each item's top expert score) and the data file."""
    root = tmp_path_factory.mktemp("first-hour")
    records = sample_by_split()
    data = judge.write_jsonl(records, root / "data.jsonl")
    run = write_run(root / "top", [prediction_row(r, max(r.expert_scores)) for r in records])
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0", "--vc-repeats", "5"]) == 0
    return {"root": root, "data": data, "run": run, "records": records}


def _said(capsys) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, captured.err


# ----------------------------------------------------------------------------------- an --out that cannot be made


def _no_reading(monkeypatch) -> None:
    """Fail the test if a command reads its records before it has checked --out."""
    def read(*args, **kwargs):
        raise AssertionError("records read before --out was checked")

    for name in ("load_record_columns", "load_records_report", "load_records"):
        monkeypatch.setattr(judge, name, read)


@pytest.mark.skipif(not LINUX, reason="/sys and /proc are Linux's")
@pytest.mark.parametrize(("place", "reason"), [("/sys/first-hour-x", NO_PERMISSION), ("/proc/first-hour-x", NO_SUCH)])
@pytest.mark.parametrize("command", ["score", "compare", "experts"])
def test_an_out_folder_that_cannot_be_made_is_refused_before_any_work(scored, monkeypatch, capsys, place, reason,
                                                                      command, tmp_path):
    """Before: score computed everything, then mkdir's PermissionError traceback (exit 1), or for /proc an error
    naming no flag; now the folder is checked first, in judge-eval run's words. (compare takes two runs: the scored
    run and a copy of it, one run given twice being refused on its own.)"""
    import shutil

    other = shutil.copytree(scored["run"], tmp_path / "copy")
    argv = {"score": ["score", "--predictions", str(scored["run"]), "--data", str(scored["data"]), "--n-boot", "0"],
            "compare": ["compare", str(scored["run"]), str(other), "--n-boot", "0"],
            "experts": ["experts", "--data", str(scored["data"])]}[command]
    _no_reading(monkeypatch)
    capsys.readouterr()
    assert main([*argv, "--out", f"{place}/out"]) == 2
    out, err = _said(capsys)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out == "" and re.fullmatch(
        rf"judge-eval {command}: error: --out {place}/out: the output folder cannot be made or written there "
        rf"{reason}; choose another output folder\n", err), err


@pytest.mark.skipif(not LINUX, reason="/sys and /proc are Linux's")
@pytest.mark.parametrize(("place", "reason"), [("/sys/first-hour-x", NO_PERMISSION), ("/proc/first-hour-x", NO_SUCH)])
def test_convert_names_the_folder_of_its_out_file(monkeypatch, capsys, place, reason):
    _no_reading(monkeypatch)
    capsys.readouterr()
    assert main(["convert", "--data", "sample", "--out", f"{place}/records.jsonl"]) == 2
    _, err = _said(capsys)
    assert re.fullmatch(rf"judge-eval convert: error: {place}: the folder of --out {place}/records.jsonl cannot be made "
                        rf"or written there {reason}; choose another output folder\n", err), err


def test_the_out_check_leaves_no_folder_behind(tmp_path):
    """score makes its output folder only once every input has been read: the check up front makes the folders it
    probes and removes them again, so a bad input refused next leaves nothing."""
    refuse_unwritable(tmp_path / "a" / "b" / "c", "--out")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    refuse_unwritable(tmp_path / "kept", "--out")
    assert [p.name for p in tmp_path.iterdir()] == ["kept"] and list((tmp_path / "kept").iterdir()) == []


def test_the_out_check_refuses_a_file_as_before(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match=rf"^--out: {tmp_path / 'file'} is a file, not a folder$"):
        refuse_unwritable(tmp_path / "file" / "out", "--out")


@pytest.mark.skipif(not LINUX, reason="/proc is Linux's")
def test_the_out_check_and_judge_eval_run_say_the_same(tmp_path):
    with pytest.raises(RunFolderUnwritable, match=r"^/proc/first-hour-x: the run folder cannot be made or written "
                                                  r"there \(No such file or directory\); choose another output "
                                                  r"folder$"):
        refuse_unwritable("/proc/first-hour-x")


def test_a_write_that_fails_after_the_check_names_out_not_a_temporary_file(scored, tmp_path, monkeypatch, capsys):
    """The backstop: a disk that fills mid-score stopped in an OSError naming items.parquet's temporary file."""
    import eval.scoring.item_table as item_table

    out = tmp_path / "out"

    def full_disk(items, path):
        raise OSError(errno.ENOSPC, "No space left on device", f"{path}.3f9a0c1b2d4e.tmp")

    monkeypatch.setattr(item_table, "write_arrow", full_disk)
    capsys.readouterr()
    assert main(["score", "--predictions", str(scored["run"]), "--data", str(scored["data"]), "--out", str(out),
                 "--n-boot", "0", "--vc-repeats", "5"]) == 2
    _, err = _said(capsys)
    assert err == (f"judge-eval score: error: --out {out}: cannot write there (No space left on device); choose "
                   "another output folder\n")


def test_a_convert_that_fails_mid_write_names_out_not_a_temporary_file(tmp_path, monkeypatch, capsys):
    out = tmp_path / "records.jsonl"

    def full_disk(records, path):
        raise OSError(errno.ENOSPC, "No space left on device", f"{path}.3f9a0c1b2d4e.tmp")

    monkeypatch.setattr(judge, "write_jsonl", full_disk)
    capsys.readouterr()
    assert main(["convert", "--data", "sample", "--out", str(out)]) == 2
    assert _said(capsys)[1] == (f"judge-eval convert: error: --out {out}: cannot write there (No space left on "
                                "device); choose another output folder\n")


def test_an_input_the_system_refuses_is_named_as_it_was(tmp_path, monkeypatch, capsys):
    """An OSError outside --out keeps its file's name (not blamed on --out)."""
    def unreadable(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/data/elsewhere.jsonl")

    run = write_run(tmp_path / "run", [prediction_row(r, 1) for r in sample_by_split()])
    monkeypatch.setattr(judge, "load_record_columns", unreadable)
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--data", "sample", "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == "judge-eval score: error: /data/elsewhere.jsonl: Permission denied\n"


# -------------------------------------------------------------------------------------- run.json's data, and its form


def _run_with_run_json(tmp_path: Path, run_json) -> Path:
    run = write_run(tmp_path / "run", [prediction_row(r, 1) for r in sample_by_split()])
    (run / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    return run


def test_score_says_when_the_data_its_run_json_names_is_gone(tmp_path, capsys):
    """Before: only "X: no such file or folder", with nothing saying where X came from."""
    gone = tmp_path / "moved" / "data.jsonl"
    run = _run_with_run_json(tmp_path, {"config": {"data": str(gone)}})
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == (f"judge-eval score: error: {run}/run.json names --data {gone}, which is not here "
                                "(moved, or judged on another machine); pass --data\n")
    assert not (run / "metrics.json").exists()


def test_score_sends_an_earlier_installs_sample_to_the_sample(tmp_path, capsys):
    """An older run.json names the bundled sample by the path it had in the install that judged it."""
    gone = tmp_path / "old-venv" / "site-packages" / "judge" / "data" / "sample.jsonl"
    run = _run_with_run_json(tmp_path, {"config": {"data": str(gone)}})
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == (f"judge-eval score: error: {run}/run.json names --data {gone}, which is not here "
                                "(moved, or judged on another machine); pass --data sample (the bundled sample of "
                                "an earlier install: this install's)\n")


@pytest.mark.parametrize(("run_json", "says"), [
    ({"config": "x"}, 'config.data: expected a path, got config "x" (not an object); pass --data'),  # AttributeError
    ({"config": {"data": 5}}, "config.data: expected a path, got 5; pass --data"),  # TypeError in Path()
    ({"config": {"data": ["a"]}}, 'config.data: expected a path, got ["a"]; pass --data'),
    (["a"], "expected a JSON object"),
])  # fmt: skip
def test_score_refuses_a_malformed_run_json_naming_the_field(tmp_path, capsys, run_json, says):
    run = _run_with_run_json(tmp_path, run_json)
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == f"judge-eval score: error: {run}/run.json: {says}\n"


def test_a_malformed_config_is_no_matter_with_data_given(tmp_path, capsys):
    run = _run_with_run_json(tmp_path, {"config": "x"})
    assert main(["score", "--predictions", str(run), "--data", "sample", "--out", str(tmp_path / "out"),
                 "--n-boot", "0", "--vc-repeats", "5"]) == 0


# ------------------------------------------------------------------------------------------- a run still being judged


@pytest.mark.parametrize("given", ["folder", "file", "folder before its first verdict"])
def test_score_refuses_a_run_that_is_still_judging(scored, tmp_path, monkeypatch, capsys, given):
    """Before: a run mid-way was scored as an unfinished one (exit 0, its report written into the folder the run
    was still writing), or, before its first verdict, was called no run folder at all."""
    run = shutil.copytree(scored["run"], tmp_path / "run")
    for name in ("run.json", "metrics.json", "report.md", "report.html", "items.parquet"):
        (run / name).unlink(missing_ok=True)  # what a run mid-way has not written yet
    if given == "folder before its first verdict":
        (run / "predictions.jsonl").unlink()
    predictions = run / "predictions.jsonl" if given == "file" else run
    _no_reading(monkeypatch)
    capsys.readouterr()
    with hold_run_folder(run, "judge-eval run"):
        assert main(["score", "--predictions", str(predictions), "--n-boot", "0"]) == 2
    out, err = _said(capsys)
    assert out == "" and re.fullmatch(
        rf"judge-eval score: error: --predictions {re.escape(str(predictions))}: judge-eval run \(pid {os.getpid()} on "
        r"[^\n]+\) is still writing this run; score it once the run has finished, or stop the run first \(what it "
        r"judged is kept and scored as it is\)\n", err), err
    assert sorted(p.name for p in run.iterdir()) == sorted(
        ["run.lock", *(["predictions.jsonl"] if given != "folder before its first verdict" else [])])


def test_score_takes_a_run_whose_judging_has_ended(scored, tmp_path, capsys):
    """The lock file stays behind a finished run; only a held one refuses."""
    run = shutil.copytree(scored["run"], tmp_path / "run")
    with hold_run_folder(run, "judge-eval run"):
        pass
    assert (run / "run.lock").exists()
    assert main(["score", "--predictions", str(run), "--data", str(scored["data"]), "--n-boot", "0",
                 "--vc-repeats", "5"]) == 0


# --------------------------------------------------------------------------------------- a checkpoint that is not there


def test_run_says_a_missing_checkpoint_folder_in_judge_serves_words(tmp_path, capsys):
    """Before: "is neither an http(s) URL, a checkpoint folder nor a hub id", for what was a mistyped path."""
    missing = tmp_path / "runs" / "judge" / "export"
    capsys.readouterr()
    assert main(["run", "--judge", str(missing), "--out", str(tmp_path / "out"), "--data", "sample"]) == 2
    assert _said(capsys)[1] == (f"judge-eval run: error: judge: {missing}: no such folder, and not a hub id of the "
                                "form owner/name (nor an http(s) URL)\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("ref", "meant"), [("127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
                                           ("localhost:8000/v1", "http://localhost:8000/v1"),
                                           ("gpu-node-3:8100/v1/", "http://gpu-node-3:8100/v1/")])
def test_run_says_a_server_address_without_its_scheme_is_a_url_to_write_with_http(tmp_path, monkeypatch, capsys,
                                                                                 ref, meant):
    """Before: "127.0.0.1:8000: no such folder, and not a hub id of the form owner/name (nor an http(s) URL)",
    which leaves the newcomer who typed the server's address to guess that the scheme is what is missing."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["run", "--judge", ref, "--out", str(tmp_path / "out"), "--data", "sample"]) == 2
    assert _said(capsys)[1] == (f"judge-eval run: error: judge: {ref}: no such folder; a server's address is a URL "
                                f"with its scheme: --judge {meant}\n")
    assert not (tmp_path / "out").exists()


def test_run_says_a_file_given_as_judge_is_a_file(tmp_path, capsys):
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"x")
    capsys.readouterr()
    assert main(["run", "--judge", str(file), "--out", str(tmp_path / "out"), "--data", "sample"]) == 2
    assert _said(capsys)[1] == (f"judge-eval run: error: judge: {file}: a file, not a checkpoint folder (nor a hub "
                                "id or an http(s) URL)\n")


def test_run_refuses_server_args_for_a_judge_given_as_a_url(tmp_path, capsys, monkeypatch):
    """--server-args with a URL judge were dropped without a word (no server is started for a URL): refused before the
    run folder is claimed, whether the URL is --judge's or the one base_url_env holds; a checkpoint folder takes
    them."""
    from eval.judging.config import RunConfig
    from eval.judging.run import refuse_server_args_for_url

    said = ("judge-eval run: error: server_args: does not apply to a judge given as a URL (judge-eval starts no server "
            "for it; server_args are the flags of the server it starts for a checkpoint folder or hub id): drop "
            "--server-args, or server_args from the config file\n")
    monkeypatch.setenv("JUDGE_URL_FOR_TEST", "http://127.0.0.1:9/v1")
    for judge_flags in (["--judge", "http://127.0.0.1:9/v1"], ["--base-url-env", "JUDGE_URL_FOR_TEST"]):
        capsys.readouterr()
        assert main(["run", *judge_flags, "--out", str(tmp_path / "out"), "--data", "sample",
                     "--server-args", '["--enforce-eager"]']) == 2
        assert _said(capsys)[1] == said
        assert not (tmp_path / "out").exists()
    refuse_server_args_for_url(RunConfig(judge=str(tmp_path), out="o", server_args=["--enforce-eager"]))
    refuse_server_args_for_url(RunConfig(judge="http://127.0.0.1:9/v1", out="o"))  # none given: nothing to refuse


def test_rank_says_a_missing_candidate_checkpoint_in_the_same_words(tmp_path):
    from eval.ranking.rank import RankConfig, _candidate

    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match=rf"^model: {missing}: no such folder, and not a hub id of the form "
                                          r"owner/name \(nor an http\(s\) URL\)$"):
        with _candidate(RankConfig(model=str(missing)), tmp_path / "out"):
            pass


def test_a_training_run_that_has_not_exported_says_so(tmp_path):
    """Before: "no config.json; a judge checkpoint is a folder written by save_pretrained"."""
    from judge.checkpoints import read_config

    (tmp_path / "run" / "checkpoint-200").mkdir(parents=True)
    run = tmp_path / "run"
    with pytest.raises(ValueError) as caught:
        read_config(run)
    assert str(caught.value) == (f"{run}: a judge-train run folder that has not exported its model (only training "
                                 f"checkpoints, checkpoint-*/, in it); its judge will be {run}/export once the "
                                 "training ends: resume it with `judge-train run --resume` (same config and "
                                 "--output-dir)")


# ------------------------------------------------------------------------------------ --predictions that is no JSONL


def test_score_refuses_a_parquet_file_as_predictions(scored, tmp_path, capsys):
    """Before: a "torn line" warning (the file's last bytes) and advice to rerun `judge-eval run --overwrite`."""
    items = tmp_path / "items.parquet"
    shutil.copy(scored["run"] / "items.parquet", items)
    capsys.readouterr()
    assert main(["score", "--predictions", str(items), "--data", str(scored["data"]), "--n-boot", "0"]) == 2
    out, err = _said(capsys)
    assert err == (f"judge-eval score: error: --predictions {items}: not a predictions.jsonl (JSONL rows written "
                   "by judge-eval run)\n")


def test_a_csv_or_a_parquet_in_a_run_folder_is_refused_alike(scored, tmp_path):
    csv = tmp_path / "predictions.csv"
    csv.write_text("id,score\ns0001,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^--predictions {csv}: not a predictions.jsonl \(JSONL rows written by "
                                         r"judge-eval run\)$"):
        read_prediction_table(csv)
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(scored["run"] / "items.parquet", folder / "predictions.jsonl")  # Parquet under JSONL's name
    with pytest.raises(ValueError, match=rf"^--predictions {folder / 'predictions.jsonl'}: not a predictions.jsonl"):
        read_prediction_table(folder)
    assert read_prediction_table(scored["run"]).num_rows == 12  # a run folder still reads


# ---------------------------------------------------------------------------------- compare on a damaged items.parquet


def _damaged_copy(scored, tmp_path: Path, damage) -> Path:
    run = tmp_path / "damaged"
    shutil.copytree(scored["run"], run)
    damage(run / "items.parquet")
    return run


def _drop_split(path: Path) -> None:
    pq.write_table(pq.read_table(path).drop(["split"]), path)


def _string_judge_score(path: Path) -> None:
    table = pq.read_table(path)
    at = table.column_names.index("judge_score")
    pq.write_table(table.set_column(at, "judge_score", pa.array(["x"] * table.num_rows)), path)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:300])


@pytest.mark.parametrize(("damage", "says"), [
    (_drop_split, "no column split (not an items.parquet written by judge-eval score)"),  # KeyError 'split'
    (_string_judge_score, "column judge_score: expected numbers, got string"),  # "could not convert string to float"
    (_truncate, "not a readable Parquet file (Parquet magic bytes not found in footer. Either the file is corrupted "
                "or this is not a parquet file.)"),  # Arrow's words alone, without the way out
])  # fmt: skip
def test_compare_names_the_file_and_column_of_a_damaged_items_parquet(scored, tmp_path, capsys, damage, says):
    run = _damaged_copy(scored, tmp_path, damage)
    capsys.readouterr()
    assert main(["compare", str(scored["run"]), str(run), "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == (f"judge-eval compare: error: {run}/items.parquet: {says}; score the run again: "
                                f"judge-eval score --predictions {run} --out {run}\n")


def _judge_scores(row_values):
    def damage(path: Path) -> None:
        table = pq.read_table(path)
        values = table.column("judge_score").to_pylist()
        values = [row_values.get(i, value) for i, value in enumerate(values)] if isinstance(row_values, dict) \
            else [row_values] * len(values)
        at = table.column_names.index("judge_score")
        pq.write_table(table.set_column(at, "judge_score", pa.array(values, pa.float64())), path)
    return damage


@pytest.mark.parametrize(("damage", "row", "says"), [
    (_judge_scores({3: float("inf")}), 3, "inf is not a score"),  # left out of the pairing: 11 paired of 12, no note
    (_judge_scores({5: float("-inf")}), 5, "-inf is not a score"),
    (_judge_scores(float("nan")), 0, "nan (no score) in a row whose status is 'ok'"),  # n 0 and exit 0
])  # fmt: skip
def test_compare_refuses_a_judge_score_no_judge_gives(scored, tmp_path, capsys, damage, row, says):
    run = _damaged_copy(scored, tmp_path, damage)
    rid = pq.read_table(run / "items.parquet").column("id")[row].as_py()
    capsys.readouterr()
    assert main(["compare", str(scored["run"]), str(run), "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == (f"judge-eval compare: error: {run}/items.parquet: column judge_score: row index {row} "
                                f"(id {rid!r}): {says}; judge-eval score writes a finite score for every scored item; "
                                f"score the run again: judge-eval score --predictions {run} --out {run}\n")


def test_compare_takes_the_nan_score_of_an_item_the_judge_failed(scored, tmp_path):
    """score writes NaN as the judge_score of every item the judge failed: such a row is no damage."""
    from eval.scoring.compare import load_run

    def fail_one(path: Path) -> None:
        table = pq.read_table(path)
        scores, status = table.column("judge_score").to_pylist(), table.column("status").to_pylist()
        scores[4], status[4] = float("nan"), "parse_failed"
        table = table.set_column(table.column_names.index("judge_score"), "judge_score", pa.array(scores, pa.float64()))
        pq.write_table(table.set_column(table.column_names.index("status"), "status", pa.array(status)), path)

    run = load_run(_damaged_copy(scored, tmp_path, fail_one))
    assert run.table.status[4] == "parse_failed" and math.isnan(run.table.judge[4])


def test_items_parquet_is_replaced_whole(scored, tmp_path, monkeypatch):
    """A Ctrl-C during a re-score's write left a truncated items.parquet that compare could not read."""
    import eval.scoring.item_table as item_table

    run = tmp_path / "run"
    shutil.copytree(scored["run"], run)
    before = (run / "items.parquet").read_bytes()
    items = pq.read_table(run / "items.parquet")

    def interrupted(table, where, **kwargs):
        where.write(b"PAR1" + b"\0" * 64)
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", interrupted)
    with pytest.raises(KeyboardInterrupt):
        item_table.write_arrow(items, run / "items.parquet")
    assert (run / "items.parquet").read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in scored["run"].iterdir())  # no .tmp


# ---------------------------------------------------------------------------------------- a score no judge gives


def test_score_refuses_a_prediction_score_no_judge_gives(tmp_path, capsys):
    """Before: 1e300 passed as finite; the metrics printed numpy's overflow warnings and infinite figures."""
    rows = [prediction_row(r, 1) for r in sample_by_split()]
    rows[2]["score"] = 1e300
    run = write_run(tmp_path / "run", rows)
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--data", "sample", "--n-boot", "0"]) == 2
    assert _said(capsys)[1] == (f"judge-eval score: error: {run}/predictions.jsonl: line 3.score: 1e+300 is not a "
                                "judge's score (its size is over 1e+06; a rubric's scale is a few points)\n")


def test_a_long_prediction_value_is_shown_cut_with_a_mark():
    """A value was shown as its first 40 characters: a 61-digit score read as a 40-digit one, a long text with no
    sign of its cut (judge.plumbing.json_reading.shown_value)."""
    with pytest.raises(ValueError) as refused:
        PredictionRow.from_json({"id": "a", "score": 10**60}, where="row 1")
    assert str(refused.value).startswith("row 1.score: an integer of 61 digits is not a judge's score")
    with pytest.raises(ValueError) as refused:
        PredictionRow.from_json({"id": "a", "score": "7" * 60}, where="row 1")
    assert str(refused.value) == f"row 1.score: expected a finite number, got a string '{'7' * 36}..."


@pytest.mark.parametrize("field", ["score", "regression_score", "expected_score"])
def test_a_score_field_over_the_bound_is_refused_row_by_row(field):
    with pytest.raises(ValueError, match=rf"^row 1\.{field}: -2000000\.0 is not a judge's score"):
        PredictionRow.from_json({"id": "a", field: -2e6}, where="row 1")
    kept = PredictionRow.from_json({"id": "a", "parse_ok": True, "score": 1, field: 1e6})  # parse_ok with its score
    assert getattr(kept, field) == 1e6  # the bound itself: kept
    assert PredictionRow.from_json({"id": "a", "latency_s": 3e6}).latency_s == 3e6  # seconds: no score


def test_the_way_to_score_again_names_the_predictions_a_run_scored_elsewhere_was_scored_from(scored, tmp_path, capsys):
    """A run scored with --out into another folder holds no predictions of its own: the advice names the predictions
    its metrics.json records (a `--predictions OUT` would find none)."""
    out = tmp_path / "elsewhere"
    shutil.copytree(scored["run"], out)
    (out / "predictions.jsonl").unlink()
    _drop_split(out / "items.parquet")
    recorded = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["predictions"]
    capsys.readouterr()
    assert main(["compare", str(scored["run"]), str(out), "--n-boot", "0"]) == 2
    assert _said(capsys)[1].endswith(f"score the run again: judge-eval score --predictions {recorded} --out {out}\n")
