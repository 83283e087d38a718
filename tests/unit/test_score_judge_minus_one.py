"""`judge-eval score --judge-minus-one`: a judge's -1 on a scale without it (the release's code for an expert's
abstention, which the paper does not say a judge may write) is scored as out of scale (``score``, the default) or
counted as a failed verdict of its own code (``fail``); metrics.json records the choice, the reports say it, and
`judge-eval compare` says when two runs made different ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import record_content_key
from eval.scoring.item_table import MINUS_ONE_FAILED
from judge.metrics_json.metrics import Metrics, Settings


def _records() -> list:
    """8 sample records on a 0..2 scale: experts' modes 2 (the first six) and 1 (s0158, s0159)."""
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:4]
            + [r for r in records if judge.split_of(r) == "standard"][:4])


def _prediction(record, score: int) -> dict:
    return {"id": record.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {score} [END]", "feedback": "ok",
            "score": score, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict",
            "latency_s": 0.1, "in_scale": 0 <= score <= 2, "content_key": record_content_key(record)}


def _scored(tmp_path: Path, *flags: str) -> tuple[Path, Metrics]:
    """The judge says -1 on s0001 and s0156 (mode 2) and 1 on the other six."""
    records = _records()
    data = tmp_path / "data.jsonl"
    if not data.exists():
        judge.write_jsonl(records, data)
    run = tmp_path / "run"
    if not run.exists():
        run.mkdir()
        rows = [_prediction(r, -1 if r.id in ("s0001", "s0156") else 1) for r in records]
        (run / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / (flags[-1] if flags else "default")
    assert main(["score", "--predictions", str(run), "--data", str(data), "--out", str(out), "--n-boot", "0",
                 "--vc-repeats", "5", "--no-plots", *flags]) == 0
    return out, Metrics.from_json(json.loads((out / "metrics.json").read_text(encoding="utf-8")))


def test_by_default_a_minus_one_is_scored_as_out_of_scale_and_the_choice_recorded(tmp_path):
    # errors |-1 - 2| = 3 twice, |1 - 2| = 1 four times, |1 - 1| = 0 twice: MAE 10 / 8
    _, result = _scored(tmp_path)
    cell = result.splits["all"].overall
    assert (cell.n_scored, cell.n_failed, cell.n_out_of_scale_minus_one) == (8, 0, 2)
    assert cell.mae == 10 / 8
    assert result.settings.judge_minus_one == "score" and result.notes.n_minus_one_failed is None


def test_fail_counts_a_minus_one_as_a_failed_verdict_of_its_own_code_and_every_report_says_so(tmp_path, capsys):
    # the two -1s failed, never dropped: n stays 8, failed 2; MAE over the six others (1 + 1 + 1 + 1 + 0 + 0) / 6
    out, result = _scored(tmp_path, "--judge-minus-one", "fail")
    cell = result.splits["all"].overall
    assert (cell.n, cell.n_scored, cell.n_failed, cell.n_parse_failed) == (8, 6, 2, 2)
    assert cell.mae == 4 / 6 and cell.n_out_of_scale == 0 and cell.n_out_of_scale_minus_one == 0
    assert result.splits["all"].failures == {MINUS_ONE_FAILED: 2}
    assert result.splits["zero_shot"].failures == result.splits["standard"].failures == {MINUS_ONE_FAILED: 1}
    assert result.settings.judge_minus_one == "fail" and result.notes.n_minus_one_failed == 2
    sentence = ("2 verdicts of `-1` on a scale without it are counted as failed** (`--judge-minus-one fail`; the "
                "release's code for an expert's abstention, \"not applicable\"): in `failed`, under the code "
                f"`{MINUS_ONE_FAILED}`, and in no score")
    assert "**" + sentence in " ".join((out / "report.md").read_text(encoding="utf-8").split())
    assert "<b>2 verdicts of <code>-1</code> on a scale without it are counted as failed</b>" in \
        (out / "report.html").read_text(encoding="utf-8")
    assert "2 verdicts of -1 on a scale without it are counted as failed" in capsys.readouterr().out


def test_compare_says_when_two_runs_made_different_choices(tmp_path, capsys):
    scored, _ = _scored(tmp_path)
    failed, _ = _scored(tmp_path, "--judge-minus-one", "fail")
    assert main(["compare", str(scored), str(failed), "--n-boot", "0", "--out", str(tmp_path / "cmp")]) == 0
    said = "j (fail) was scored with --judge-minus-one fail, j (default) with --judge-minus-one score"
    assert said in " ".join((tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8").split())
    alike, _ = _scored(tmp_path, "--judge-minus-one", "score")
    assert main(["compare", str(scored), str(alike), "--n-boot", "0", "--out", str(tmp_path / "same")]) == 0
    assert "--judge-minus-one" not in (tmp_path / "same" / "compare.md").read_text(encoding="utf-8")


def test_compare_counts_the_minus_ones_of_items_of_an_unknown_task_type_too(tmp_path):
    """The scored run's -1s all on items of a task type the taxonomy does not know (left out of "all", reported on
    their own), the failed run's judge writing none: the scored run's -1s still make the choices differ. Both items
    are on Standard criteria: one on a held-out criterion (s0001, Rhyme quality) is Zero-Shot whatever its task type."""
    import dataclasses

    records = [dataclasses.replace(r, task_type="Нет такой задачи") if r.id in ("s0003", "s0156") else r
               for r in _records()]
    assert [judge.split_of(r, allow_unknown=True) for r in records].count("unknown") == 2
    data = tmp_path / "data.jsonl"
    judge.write_jsonl(records, data)
    outs = []
    for name, minus_one_ids, flags in (("scored", {"s0003", "s0156"}, ()),
                                       ("failed", set(), ("--judge-minus-one", "fail"))):
        run = tmp_path / name
        run.mkdir()
        rows = [_prediction(r, -1 if r.id in minus_one_ids else 1) for r in records]
        (run / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        outs.append(tmp_path / f"{name}-scores")
        assert main(["score", "--predictions", str(run), "--data", str(data), "--out", str(outs[-1]), "--n-boot", "0",
                     "--vc-repeats", "5", "--no-plots", *flags]) == 0
    scored = Metrics.from_json(json.loads((outs[0] / "metrics.json").read_text(encoding="utf-8")))
    assert scored.splits["unknown"].overall.n_out_of_scale_minus_one == 2
    assert scored.splits["all"].overall.n_out_of_scale_minus_one == 0
    assert main(["compare", *map(str, outs), "--n-boot", "0", "--out", str(tmp_path / "cmp")]) == 0
    said = "j (failed-scores) was scored with --judge-minus-one fail, j (scored-scores) with --judge-minus-one score"
    assert said in " ".join((tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8").split())


def test_an_older_metrics_json_without_the_setting_reads_as_none_and_a_wrong_one_is_refused():
    base = {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95}
    assert Settings.from_json(base).judge_minus_one is None
    try:
        Settings.from_json({**base, "judge_minus_one": "drop"})
    except ValueError as err:
        assert "judge_minus_one" in str(err) and "score, fail" in str(err)
    else:
        raise AssertionError("a judge_minus_one of drop was read")


_TOO_FEW = "0 (no intervals) or at least 10 (fewer resamples make each interval the spread of a few "


@pytest.mark.parametrize("argument, value, said", [
    ("judge_minus_one", "Fail", "must be one of score, fail, got 'Fail'"),
    ("n_boot", -5, "expected a whole number of 0 or more, got -5"),
    ("n_boot", True, "expected a whole number, got true"),
    ("n_boot", 2.0, "expected a whole number, got a number 2.0"),
    ("seed", -1, "expected a whole number of 0 or more, got -1"),
    ("seed", "1", "expected a whole number, got a string '1'"),
    # the CLI's --n-boot bounds: one draw is a zero-width interval, 10**9 works for hours
    ("n_boot", 1, "must be " + _TOO_FEW),
    ("n_boot", 10**9, "must be at most 100,000 (the most resamples a leaderboard raises --n-boot to), got 1000000000"),
])
def test_score_called_from_python_refuses_an_argument_it_cannot_record_before_writing(tmp_path, argument, value,
                                                                                        said):
    """``score()`` itself, which the CLI's own checks do not guard: metrics.json's reader takes only a whole number
    of resamples and a whole seed, and the CLI's --n-boot bounds hold for a call from Python too. Refused first,
    naming the argument, what it may be and the value; nothing written."""
    from eval.scoring.score import score

    records = _records()
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    run = tmp_path / "run"
    run.mkdir()
    rows = [_prediction(r, 1) for r in records]
    (run / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(ValueError) as refused:
        score(run, data, out, **{"n_boot": 0, "vc_repeats": 5, argument: value})
    assert str(refused.value).startswith(f"{argument}: {said}")
    assert not out.exists()
