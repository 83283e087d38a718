"""--vc-repeats and --n-boot have an upper bound, named in the refusal: a huge value ran for hours without a word
(every item drawn --vc-repeats times, every cell resampled --n-boot times). A metrics.json asking compare to draw
more Verdict Confidence repeats than that is refused too, naming the field."""

from __future__ import annotations

import argparse

import pytest

from eval.cli import main
from eval.input_checks import refuse_out_of_bounds
from eval.ranking.rank import RankConfig
from eval.scoring import item_table, score
from judge.metrics_json.json_record import JsonRecordError
from judge.metrics_json.metrics import MAX_VC_REPEATS, Metrics, Settings
from judge.plumbing.config_files import ConfigError
from tests.support.eval_cli import prediction_row, write_run
from tests.unit.test_eval_metrics import _table

_VC = "must be at most 10,000 (100 times the paper's 100 draws per item)"
_BOOT = "must be at most 100,000 (the most resamples a leaderboard raises --n-boot to)"


@pytest.mark.parametrize(("command", "flag", "value", "says"), [
    ("score", "--vc-repeats", "10001", f"{_VC}, got 10001"),
    ("score", "--vc-repeats", "1000000000", f"{_VC}, got 1000000000"),
    ("score", "--n-boot", "100001", f"{_BOOT}, got 100001"),
    ("compare", "--n-boot", "100001", f"{_BOOT}, got 100001"),  # every paired cell resampled 100,001 times
])
def test_a_flag_over_its_cap_is_refused_before_any_work(tmp_path, capsys, command, flag, value, says):
    run, other, out = tmp_path / "run", tmp_path / "other", tmp_path / "out"
    run.mkdir()
    other.mkdir()
    (run / "predictions.jsonl").write_text("{}\n", encoding="utf-8")  # checked for content only, before any read
    given = (["--predictions", str(run), "--data", "sample"] if command == "score" else [str(run), str(other)])
    capsys.readouterr()
    assert main([command, *given, "--out", str(out), flag, value]) == 2
    assert capsys.readouterr() == ("", f"judge-eval {command}: error: {flag}: {says}\n")
    assert not out.exists()


def test_the_caps_themselves_are_allowed(tmp_path):
    """10,000 repeats and 100,000 resamples pass the check (what they cost is the user's choice)."""
    args = argparse.Namespace(out=str(tmp_path / "out"), seed=0, vc_repeats=10_000, n_boot=100_000)
    refuse_out_of_bounds(args)  # raises on a refusal


@pytest.mark.parametrize("repeats", [0, MAX_VC_REPEATS + 1])
def test_a_metrics_json_asking_for_draws_out_of_bounds_is_refused_naming_the_field(repeats):
    """compare draws the judge's VC again with the baseline's vc_repeats: 10**9 there would run for hours."""
    raw = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": repeats,
                                                         "ci_level": 0.95},
           "splits": {"all": {"overall": {"n": 1, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.0,
                                          "mae_ci": [0.0, 0.0]},
                              "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}}}
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(raw)
    assert str(info.value) == (f"metrics.json: Settings.vc_repeats is not readable (expected 1 to 10,000 draws per "
                               f"item, got {repeats})")
    assert info.value.field == "settings.vc_repeats"
    raw["settings"]["vc_repeats"] = MAX_VC_REPEATS
    assert Metrics.from_json(raw).settings.vc_repeats == 10_000


def test_rank_refuses_resamples_over_the_cap_before_any_request(tmp_path, capsys):
    """rank resamples its matrix --n-boot times after every request is answered: over the cap, refused up front
    (exit 2, nothing made at --out), the flag and a YAML key alike (``RankConfig.validate``)."""
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["rank", "--model", "http://127.0.0.1:1/v1", "--judge", "http://127.0.0.1:2/v1",
                 "--data", str(tmp_path / "instructions.jsonl"), "--out", str(out), "--n-boot", "100001"]) == 2
    assert capsys.readouterr().err == ("judge-eval rank: error: n_boot: must be at most 100,000 (the most resamples "
                                       "a leaderboard raises --n-boot to), got 100001\n")
    assert not out.exists()
    config = dict(model="http://127.0.0.1:1/v1", judge="http://127.0.0.1:2/v1", data="d", out="o")
    RankConfig(**config, n_boot=100_000).validate()  # the cap itself passes
    with pytest.raises(ConfigError, match=r"^n_boot: must be at most 100,000 .*, got 100001$"):
        RankConfig(**config, n_boot=100_001).validate()


def test_evaluate_refuses_draws_over_the_cap_so_score_writes_nothing(tmp_path, small_data, monkeypatch):
    """vc_repeats is checked before any draw (derive) and where Settings is made: evaluate given 20,000 raises
    without drawing once, and score (called as a library, past the CLI's check) stops before its output folder is
    made, not after writing a metrics.json its own read-back refuses."""
    def no_draw(*args, **kwargs):
        raise AssertionError("Verdict Confidence drawn before the cap was checked")

    monkeypatch.setattr(item_table.metrics, "verdict_confidence_judge", no_draw)
    table = _table([1.0, 2.0], ["ok", "ok"], [[1, 1], [2, 2]])
    with pytest.raises(ValueError, match=r"^vc_repeats: expected 1 to 10,000 draws per item, got 20000$"):
        item_table.evaluate(table, target="mode", n_boot=0, vc_repeats=20_000)
    with pytest.raises(ValueError, match=r"^Settings\.vc_repeats: expected 1 to 10,000 draws per item, got 0$"):
        Settings(n_boot=0, seed=0, vc_repeats=0, ci_level=0.95)
    path, records = small_data
    run = write_run(tmp_path / "run", [prediction_row(r, 1) for r in records])
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"^vc_repeats: .*got 20000$"):
        score.score(run, path, out, n_boot=0, vc_repeats=20_000)
    assert not out.exists() and sorted(p.name for p in run.iterdir()) == ["predictions.jsonl"]
