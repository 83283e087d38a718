"""judge-eval on bad input: a clear error naming the flag, field, file or row, exit code 2, never a traceback, and
nothing written (a flag out of its bounds, a prediction score no float holds, a broken metrics.json, an --out that
is a file, a --data file with a byte that is not UTF-8)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.config import RunConfig
from eval.scoring.compare import N_BOOT_BOUND
from judge.plumbing.config_files import ConfigError
from tests.support.deep_json import nested_arrays
from tests.support.eval_cli import prediction_row, sample_by_split, write_run

URL = "http://127.0.0.1:9/v1"  # never reached: every input below is refused before any request
N_BOOT = N_BOOT_BOUND[1]  # what --n-boot must be, as its refusal says it


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Two scored runs of the 12 records (a judge that says each item's top expert score, one that says 0) and
    the data file."""
    root = tmp_path_factory.mktemp("runs")
    records = sample_by_split()
    data = judge.write_jsonl(records, root / "data.jsonl")
    for name, score in (("top", lambda r: max(r.expert_scores)), ("zero", lambda r: 0)):
        run = write_run(root / name, [prediction_row(r, score(r), latency_s=0.1) for r in records])
        assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "0", "--vc-repeats", "5",
                     "--no-plots"]) == 0
    return {"root": root, "data": data, "records": records}


def _said(capsys) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, captured.err


# ------------------------------------------------------------------------------------------ a missing --data


def test_score_and_rank_without_the_data_they_need_name_the_data_flag(runs, tmp_path, capsys):
    """score reads its data from the run's run.json, rank has none to read: without --data, either is one line
    naming --data, exit 2, and nothing written. score said "score: no --data given" after "judge-eval score: error:",
    the same folder named twice over; which of the run.json's absence or its silence on the data is now said."""
    lone = write_run(tmp_path / "lone", [prediction_row(runs["records"][0], 1)])
    assert main(["score", "--predictions", str(lone / "predictions.jsonl")]) == 2
    assert _said(capsys) == ("", f"judge-eval score: error: --data: not given, and the run folder {lone} has no "
                                 "run.json naming the data; give --data (the labelled records the run judged)\n")
    (lone / "run.json").write_text(json.dumps({"job": "judge-eval run", "config": {}}), encoding="utf-8")
    assert main(["score", "--predictions", str(lone)]) == 2
    assert _said(capsys) == ("", f"judge-eval score: error: --data: not given, and {lone / 'run.json'} names no data; "
                                 "give --data (the labelled records the run judged)\n")
    assert sorted(p.name for p in lone.iterdir()) == ["predictions.jsonl", "run.json"]
    out = tmp_path / "rank"
    assert main(["rank", "--model", URL, "--judge", URL, "--out", str(out), "--no-progress"]) == 2
    assert _said(capsys) == ("", "judge-eval rank: error: data: required (--data)\n")
    assert not out.exists()


# ------------------------------------------------------------------------------------------ score's flags


@pytest.mark.parametrize(("flag", "value", "says"), [
    # -3 wrote "vc_judge": 0.0 (a Verdict Confidence never computed); 0 divided by zero and printed "—"
    ("--vc-repeats", "-3", "must be at least 1, got -3"), ("--vc-repeats", "0", "must be at least 1, got 0"),
    ("--n-boot", "-1", f"must be {N_BOOT}, got -1"),  # was taken as 0 (no intervals) without a word
    ("--n-boot", "1", f"must be {N_BOOT}, got 1"),  # one resample: a zero-width interval, read as certainty
    ("--n-boot", "9", f"must be {N_BOOT}, got 9"),
    ("--seed", "-1", "must be 0 or more, got -1"),  # numpy's "expected non-negative integer", no flag named
    ("--alt-test-q", "0", "must be between 0 and 1 (both excluded), got 0.0"),  # exit code 1, no "error:"
    ("--alt-test-epsilon", "nan", "must be a number in [0, 1), got nan"),
    # refused by the alt-test's settings alone, in words that named no flag ("alt-test epsilon must lie in ...")
    ("--alt-test-epsilon", "-0.5", "must be a number in [0, 1), got -0.5"),
    ("--alt-test-epsilon", "1", "must be a number in [0, 1), got 1.0"),
    ("--alt-test-min-experts", "1", "must be at least 2, got 1"),
    # had been refused only by the alt-test's settings, after the up-front checks and in other words
    ("--alt-test-min-tested", "0", "must be at least 1, got 0"),
    ("--alt-test-min-tested", "-2", "must be at least 1, got -2"),
])  # fmt: skip
def test_score_refuses_a_flag_out_of_its_bounds_before_writing_anything(runs, tmp_path, capsys, flag, value, says):
    out = tmp_path / "out"
    capsys.readouterr()
    code = main(["score", "--predictions", str(runs["root"] / "top"), "--data", str(runs["data"]), "--out", str(out),
                 "--n-boot", "0", "--vc-repeats", "5", "--no-plots", flag, value])
    assert (code, _said(capsys)) == (2, ("", f"judge-eval score: error: {flag}: {says}\n"))
    assert not out.exists()


def test_n_boot_bound_names_its_minimum_and_why_and_the_help_says_it():
    """--n-boot's refusal names the minimum (``MIN_N_BOOT``, 10) and why fewer is refused; score's, compare's and
    rank's help give the same minimum."""
    from eval.cli import build_parser
    from eval.ranking.rank import RankConfig
    from eval.scoring.compare import MIN_N_BOOT

    assert MIN_N_BOOT == 10 and N_BOOT.startswith("0 (no intervals) or at least 10 (") and "zero-width" in N_BOOT
    subcommands = build_parser()._subparsers._group_actions[0].choices
    for name in ("score", "compare", "rank"):
        action = next(a for a in subcommands[name]._actions if "--n-boot" in a.option_strings)
        assert f">= {MIN_N_BOOT}" in action.help or f"at least {MIN_N_BOOT}" in action.help, (name, action.help)
    assert RankConfig.__dataclass_fields__["n_boot"].default == 1000


@pytest.mark.parametrize("n_boot", [1, 5, 9, -1])
def test_rank_refuses_a_handful_of_resamples(n_boot):
    """rank's n_boot (flag or YAML) has score's and compare's bound: 0 or at least ``MIN_N_BOOT``."""
    from eval.ranking.rank import RankConfig
    config = RankConfig(model="http://127.0.0.1:1/v1", judge="http://127.0.0.1:2/v1", data="d", out="o", n_boot=n_boot)
    with pytest.raises(ConfigError, match=r"n_boot: must be 0 \(no intervals\) or at least 10 \("):
        config.validate()
    for fine in (0, 10):
        RankConfig(model="http://127.0.0.1:1/v1", judge="http://127.0.0.1:2/v1", data="d", out="o",
                   n_boot=fine).validate()


def test_score_n_boot_0_is_no_intervals_as_its_help_says(runs):
    metrics = json.loads((runs["root"] / "top" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["splits"]["all"]["overall"]["mae_ci"] in (None, [None, None])


# ------------------------------------------------------------------------------------------ compare's flags


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--alpha", "2", "must be between 0 and 1 (both excluded), got 2.0"),  # called p = 0.7 "better"
    ("--alpha", "0", "must be between 0 and 1 (both excluded), got 0.0"),  # called everything n.s.
    ("--alpha", "-0.5", "must be between 0 and 1 (both excluded), got -0.5"),
    ("--alpha", "nan", "must be between 0 and 1 (both excluded), got nan"),
    ("--n-boot", "-1", f"must be {N_BOOT}, got -1"), ("--seed", "-1", "must be 0 or more, got -1"),
    ("--n-boot", "2", f"must be {N_BOOT}, got 2"),  # two resamples: an interval between two draws, p 0 or 1
])  # fmt: skip
def test_compare_refuses_a_flag_out_of_its_bounds(runs, tmp_path, capsys, flag, value, says):
    out = tmp_path / "cmp"
    capsys.readouterr()
    code = main(["compare", str(runs["root"] / "top"), str(runs["root"] / "zero"), "--out", str(out), "--n-boot", "20",
                 flag, value])
    assert (code, _said(capsys)) == (2, ("", f"judge-eval compare: error: {flag}: {says}\n"))
    assert not out.exists()


def test_compare_n_boot_0_compares_without_calls(runs, tmp_path):
    assert main(["compare", str(runs["root"] / "top"), str(runs["root"] / "zero"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "0"]) == 0
    mae = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert mae["comparisons"][0]["splits"]["all"]["overall"]["mae"]["verdict"] == "—"


# ------------------------------------------------------------------------------------------ run's settings


@pytest.mark.parametrize("field", ["backoff_s", "timeout_s", "connect_timeout_s", "server_timeout_s", "temperature"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_run_float_settings_must_be_finite(field, value):
    """NaN passed every "<= 0" check: --connect-timeout-s nan retried an unreachable server for ever."""
    with pytest.raises(ConfigError) as refused:
        RunConfig(judge=URL, out="runs/x", **{field: value}).validate()
    assert str(refused.value) == f"{field}: must be a finite number, got {value}"


def test_run_criteria_auto_with_the_llm_method_and_no_model_name_is_refused_before_the_run_folder(tmp_path, capsys):
    """An empty --criteria-classifier-model passed the settings and the run was claimed before the classifier was
    built; now it is said with the other settings, exit 2, no folder made."""
    out = tmp_path / "run"
    code = main(["run", "--judge", URL, "--out", str(out), "--criteria", "auto", "--criteria-classifier", "llm",
                 "--criteria-classifier-path", "http://127.0.0.1:9/v1", "--no-progress"])
    assert code == 2
    assert _said(capsys)[1].endswith("judge-eval run: error: criteria_classifier_model: required with "
                                     "--criteria-classifier llm (the model name the endpoint serves)\n")
    assert not out.exists()


def test_run_refuses_a_negative_or_nan_temperature_before_any_request(tmp_path, capsys):
    for value, says in (("-1", "must be >= 0, got -1.0"), ("nan", "must be a finite number, got nan")):
        out = tmp_path / value
        code = main(["run", "--judge", URL, "--out", str(out), "--temperature", value, "--connect-timeout-s", "0.1",
                     "--no-progress"])
        assert code == 2 and _said(capsys)[1].endswith(f"judge-eval run: error: temperature: {says}\n")
        assert not out.exists()


# ------------------------------------------------------------------------------------------ rank's settings


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--timeout-s", "nan", "must be a finite number, got nan"),
    ("--connect-timeout-s", "nan", "must be a finite number, got nan"),  # retried an unreachable server for ever
    ("--connect-timeout-s", "inf", "must be a finite number, got inf"),
    ("--server-timeout-s", "nan", "must be a finite number, got nan"),
    ("--temperature", "nan", "must be a finite number, got nan"),  # went to the candidate unseen
    ("--temperature", "-0.5", "must be >= 0, got -0.5"),
    ("--backoff-s", "nan", "must be a finite number, got nan"),
    ("--backoff-s", "-1", "must be >= 0, got -1.0"),
    ("--seed", "-1", "must be >= 0, got -1"),
    ("--max-retries", "-1", "must be >= 0, got -1"),
    ("--n-boot", "-1", f"must be {N_BOOT}, got -1"), ("--n-boot", "3", f"must be {N_BOOT}, got 3"),
    ("--timeout-s", "0", "must be positive, got 0.0"),
])  # fmt: skip
def test_rank_refuses_a_setting_out_of_its_bounds_before_writing_anything(tmp_path, capsys, flag, value, says):
    """RankConfig.validate checked only concurrency, max_tokens, n_boot and limit: a NaN timeout, temperature or
    backoff and a negative seed passed. Each is refused as judge-eval run refuses it, naming the field."""
    out = tmp_path / "out"
    capsys.readouterr()
    code = main(["rank", "--model", URL, "--judge", URL, "--data", str(tmp_path / "instructions.jsonl"), "--out",
                 str(out), "--no-progress", flag, value])
    field = flag[2:].replace("-", "_")
    assert code == 2 and _said(capsys)[1].endswith(f"judge-eval rank: error: {field}: {says}\n")
    assert not out.exists()


# ------------------------------------------------------------------------------------------ predictions


@pytest.mark.parametrize("field", ["score", "score_probs"])
def test_a_prediction_number_no_float_holds_is_named_with_its_row(runs, tmp_path, capsys, field):
    """A 400-digit JSON integer is valid JSON that json.loads reads as an int: math.isfinite raised OverflowError."""
    huge = 10**400
    rows = [prediction_row(r, max(r.expert_scores), latency_s=0.1) for r in runs["records"]]
    rows[4][field] = huge if field == "score" else {"0": huge}
    run = write_run(tmp_path / "run", rows)
    capsys.readouterr()
    code = main(["score", "--predictions", str(run), "--data", str(runs["data"]), "--out", str(tmp_path / "out"),
                 "--n-boot", "0", "--no-plots"])
    # cut with a mark (the first 40 digits of 10**400 read as 10**39)
    got = "an integer of 401 digits" if field == "score" else f"an object {repr(rows[4][field])[:37]}..."
    kind = "a finite number" if field == "score" else "an object of finite numbers"
    assert (code, _said(capsys)) == (2, ("", f"judge-eval score: error: {run / 'predictions.jsonl'}: line 5.{field}: "
                                             f"expected {kind}, got {got}\n"))
    assert not (tmp_path / "out").exists()  # inputs are read before the output folder is made



def test_predictions_written_as_one_json_array_are_refused_not_read_as_an_unfinished_run(runs, tmp_path, capsys):
    """``json.dump(rows, f)`` writes one line, no newline: taken for a write cut by a kill, it was dropped with a
    warning and score exited 0 with n 0 in every cell, calling the run unfinished. A cut of a row opens with "{"
    and never parses as whole JSON, so this line is refused like any other line that is no object."""
    rows = [prediction_row(r, max(r.expert_scores), latency_s=0.1) for r in runs["records"]]
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text(json.dumps(rows), encoding="utf-8")
    capsys.readouterr()
    code = main(["score", "--predictions", str(run), "--data", str(runs["data"]), "--out", str(tmp_path / "out"),
                 "--n-boot", "0", "--no-plots"])
    out, err = _said(capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"judge-eval score: error: {run / 'predictions.jsonl'}:1: a list, not an object"), err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------ compare's run folders


@pytest.mark.parametrize(("text", "says"), [
    ('{"judge": \n', "invalid JSON (Expecting value at line 2, column 1)"),  # truncated
    ("", "invalid JSON (Expecting value at line 1, column 1)"),  # empty
    (nested_arrays(20_000), "unreadable JSON: nested too deeply"),  # was a RecursionError
    ("[1]", "expected a JSON object, got a list"),
    # a bare UnicodeEncodeError, naming no file, once the comparison was written
    ('{"judge": "j\\ud800"}', "judge holds a lone surrogate (U+D800: a JSON \\u escape with no pair), which is no "
                               "Unicode text"),
], ids=["truncated", "empty", "deep", "list", "surrogate"])  # fmt: skip
def test_compare_names_a_metrics_json_it_cannot_read(runs, tmp_path, capsys, text, says):
    """The run is named as it was given (compare takes several), then its file."""
    broken = tmp_path / "broken"
    shutil.copytree(runs["root"] / "zero", broken)
    (broken / "metrics.json").write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["compare", str(runs["root"] / "top"), f"{broken}/", "--n-boot", "0"]) == 2
    assert _said(capsys) == ("", f"judge-eval compare: error: {broken}/: metrics.json: {says}; score the run again: "
                                 f"judge-eval score --predictions {broken}/ --out {broken}/\n")


@pytest.mark.parametrize(("change", "says"), [
    (lambda m: m.pop("judge"), "judge: Metrics has no 'judge'"),
    (lambda m: m["settings"].pop("n_boot"), "settings.n_boot: Settings has no 'n_boot'"),
    (lambda m: m["splits"]["standard"]["overall"].update(mae="low"),
     "splits.standard.overall.mae: Cell.mae is not readable (expected a number, got a string 'low')"),
    (lambda m: m["splits"]["all"]["by_model"].update(m2=[]),
     "splits.all.by_model.m2: Cell should be a JSON object, not a list"),
    (lambda m: m.update(splits=5), "splits: Metrics.splits is not readable (expected an object, got an integer 5)"),
], ids=["no-judge", "no-n_boot", "mae-text", "cell-list", "splits-number"])  # fmt: skip
def test_compare_names_the_run_and_field_of_a_metrics_json_of_another_shape(runs, tmp_path, capsys, change, says):
    """JSON that is not judge-eval score's metrics.json was refused as "metrics.json: Cell.mae is not readable": not
    which of the compared runs, nor which of its many cells. The run is named as given, and the field by its path."""
    other = Path(shutil.copytree(runs["root"] / "zero", tmp_path / "other"))
    metrics = json.loads((other / "metrics.json").read_text(encoding="utf-8"))
    change(metrics)
    (other / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    capsys.readouterr()
    given = str(other) + "/"
    assert main(["compare", str(runs["root"] / "top"), given, "--n-boot", "0"]) == 2
    assert _said(capsys) == ("", f"judge-eval compare: error: {given}: metrics.json: {says}; score the run again: "
                                 f"judge-eval score --predictions {given} --out {given}\n")


def test_compare_of_a_file_says_it_takes_run_folders(runs, capsys):
    """It advised `judge-eval score --predictions RUN/metrics.json --out RUN/metrics.json`."""
    metrics = runs["root"] / "zero" / "metrics.json"
    capsys.readouterr()
    assert main(["compare", str(runs["root"] / "top"), str(metrics), "--n-boot", "0"]) == 2
    assert _said(capsys) == ("", f"judge-eval compare: error: {metrics}: a file, not a folder; compare takes run "
                                 "folders written by `judge-eval score` (or by `judge-eval rank`), not the files in "
                                 "them\n")
    from eval.scoring.compare import load_run

    with pytest.raises(ValueError, match="a file, not a folder"):
        load_run(metrics)


# ------------------------------------------------------------------------------------------ --out is a file


def test_an_out_that_is_a_file_is_refused_by_every_command(runs, tmp_path, capsys):
    """FileExistsError tracebacks from mkdir, after the work (compare) or before it (run)."""
    file = tmp_path / "x.jsonl"
    file.write_text("{}\n", encoding="utf-8")
    top, zero, data = str(runs["root"] / "top"), str(runs["root"] / "zero"), str(runs["data"])
    commands = {"run": ["run", "--judge", URL, "--data", data, "--no-progress"],
                "score": ["score", "--predictions", top, "--data", data, "--n-boot", "0"],
                "compare": ["compare", top, zero, "--n-boot", "0"], "experts": ["experts", "--data", data]}
    for out in (file, file / "sub"):
        for command, argv in commands.items():
            capsys.readouterr()
            assert main([*argv, "--out", str(out)]) == 2, (command, out)
            assert _said(capsys)[1].endswith(f"judge-eval {command}: error: --out: {file} is a file, not a folder\n")
    # A scored run's own metrics.json as compare's --out: a file, refused like any other
    metrics = runs["root"] / "top" / "metrics.json"
    assert main(["compare", top, zero, "--n-boot", "0", "--out", str(metrics)]) == 2
    assert _said(capsys)[1] == f"judge-eval compare: error: --out: {metrics} is a file, not a folder\n"


def test_convert_refuses_an_out_under_a_file_or_that_is_a_folder(runs, tmp_path, capsys):
    """convert's --out is the JSONL file: FILE/x.jsonl stopped in mkdir (FileExistsError), a folder in open()
    (IsADirectoryError), both tracebacks after the records were read."""
    file = tmp_path / "x.jsonl"
    file.write_text("{}\n", encoding="utf-8")
    for out in (file / "out.jsonl", file / "sub" / "out.jsonl"):
        capsys.readouterr()
        assert main(["convert", "--data", str(runs["data"]), "--out", str(out)]) == 2, out
        assert _said(capsys)[1].endswith(f"judge-eval convert: error: --out: {file} is a file, not a folder\n")
    assert main(["convert", "--data", str(runs["data"]), "--out", str(tmp_path)]) == 2
    assert _said(capsys)[1].endswith(f"judge-eval convert: error: --out: {tmp_path} is a folder, not a file; give "
                                     "the JSONL file to write\n")
    assert file.read_text(encoding="utf-8") == "{}\n" and sorted(tmp_path.iterdir()) == [file]
    assert main(["convert", "--data", str(runs["data"]), "--out", str(tmp_path / "ok.jsonl")]) == 0  # still writes
    assert judge.load_records(tmp_path / "ok.jsonl")


def test_run_folders_refuse_a_file_for_every_job(tmp_path, capsys):
    """judge.plumbing.run_folder, which mera and judge-train hold their folders with too."""
    from judge.plumbing.run_folder import claim_run_folder, hold_run_folder

    file = tmp_path / "x.jsonl"
    file.write_text("{}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{file} is a file, not a folder$"):
        with hold_run_folder(file, "test"):
            pass
    with pytest.raises(ConfigError, match=f"^{file} is a file, not a folder$"):
        claim_run_folder(file / "sub", {}, [])
    capsys.readouterr()
    with pytest.raises(SystemExit) as mera:  # mera's parser says it (parser.error)
        main(["mera", "ruhumaneval", "--self-check", "--out", str(file)])
    assert mera.value.code == 2
    assert _said(capsys)[1].endswith(f"judge-eval mera: error: --out: {file} is a file, not a folder\n")


# ------------------------------------------------------------------------------------------ --data not UTF-8


def test_run_names_the_file_and_row_of_a_byte_that_is_not_utf8(runs, tmp_path, capsys):
    """The pairwise sniff read the file as text, and its decoder, reading ahead, met line 2's 0xff byte: an error
    that named no file or row. The sniff now reads bytes; the record loader names the row, as `convert` does."""
    lines = runs["data"].read_bytes().splitlines(keepends=True)
    data = tmp_path / "data.jsonl"
    data.write_bytes(lines[0] + lines[1][:9] + b"\xff" + lines[1][10:])
    capsys.readouterr()
    assert main(["run", "--judge", URL, "--data", str(data), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    said = f"{data}: line 2: not UTF-8 text (byte 0xff at column 10)"
    assert _said(capsys)[1].endswith(f"judge-eval run: error: {said}\n")
    assert main(["convert", "--data", str(data), "--out", str(tmp_path / "c.jsonl")]) == 2
    assert _said(capsys)[1].endswith(f"judge-eval convert: error: {said}\n")
    from eval.pairwise.judging import is_pairwise_data

    assert is_pairwise_data(data) is False


def test_run_refuses_bad_data_before_it_claims_the_folder(runs, tmp_path, capsys):
    """A bad row is refused before the run folder, its lock and its key exist: the run with the row fixed, in
    another file, starts afresh instead of being refused as a resume of the failed one under another `data`."""
    lines = runs["data"].read_bytes().splitlines(keepends=True)
    bad, fixed, out = tmp_path / "bad.jsonl", tmp_path / "fixed.jsonl", tmp_path / "out"
    bad.write_bytes(lines[0] + b'{"id": "x"}\n')
    capsys.readouterr()
    assert main(["run", "--judge", URL, "--data", str(bad), "--out", str(out), "--no-progress"]) == 2
    assert "judge-eval run: error: " in _said(capsys)[1]
    assert not out.exists()
    fixed.write_bytes(lines[0])
    code = main(["run", "--judge", URL, "--data", str(fixed), "--out", str(out), "--no-progress", "--max-retries",
                 "0", "--connect-timeout-s", "1"])
    said = _said(capsys)[1]
    assert "--overwrite" not in said, said  # no judge answers at URL; what stops the run is not a resume refusal
    assert code == 4 and f"the judge at {URL} cannot be reached" in said, (code, said)  # past the claim, to the judge
    assert not out.exists()  # stopped before any verdict: the folder it made is taken back (hold_run_folder)


_ALT_TEST_FIELDS = {"alt_test_q": "q", "alt_test_epsilon": "epsilon", "alt_test_min_items": "min_items_per_expert",
                    "alt_test_min_experts": "min_experts_per_item", "alt_test_min_tested": "min_experts_tested"}


_ALT_TEST_CASES = [(flag, value) for flag in sorted(_ALT_TEST_FIELDS)
                   for value in ([-1, 0, 1, 2, 3, 30] if flag.startswith("alt_test_min") else  # counts: ints
                                 [-1, -0.5, 0, 1e-9, 0.05, 0.5, 0.999999, 1, 1.5, 2])]


@pytest.mark.parametrize("flag, value", _ALT_TEST_CASES)
def test_the_alt_test_flags_bounds_take_what_the_settings_take(flag, value):
    """The flags are refused up front by FLAG_BOUNDS (naming the flag, before any work) and the settings refuse
    again where metrics.json's are read: the two copies of each bound take exactly the same values."""
    from eval.input_checks import FLAG_BOUNDS
    from judge.metrics_json.validity import AltTestSettings

    try:
        AltTestSettings(**{_ALT_TEST_FIELDS[flag]: value})
        settings_take = True
    except ValueError:
        settings_take = False
    assert FLAG_BOUNDS[flag][0](value) == settings_take, (flag, value)
