"""Pairwise metrics' bootstrap intervals and counts, derived by hand: a resample draws whole pairs (both orders of a
pair together); a judgment of an older text is stale, not missing."""

from __future__ import annotations

import pytest

from eval.pairwise.judging import PairRecord, PairwiseRow
from eval.pairwise.metrics import pairwise_markdown, pairwise_metrics


def _row(pair: PairRecord, order: str, raw: float | None, content_key: str | None = None) -> PairwiseRow:
    """A judgment of ``pair`` in ``order`` whose raw answer is ``raw`` (None: failed, ``no_score``)."""
    verdict = None if raw is None else (raw if order == "original" else -raw + 0.0)
    return PairwiseRow(pair.id, order, "j", None if raw is None else f"{raw:g}", "", raw, verdict, raw is not None,
                       None if raw is not None else "no_score", "", 0.1,
                       pair.content_key if content_key is None else content_key)


def test_agreement_interval_resamples_whole_pairs_by_hand():
    """Six pairs, each judged once agreeing and once not: winner -1 with raw answers -1, -1 (original verdict -1
    agrees, swapped verdict 1 does not), winner 1 with raw 1, 1 (1 agrees, -1 does not). Agreement 6 / 12 = 1/2.
    A resample of whole pairs weighs each pair's 1 agreement and 2 judgments alike: sum(w) / (2 sum(w)) = 1/2 in
    every resample, so the interval is [0.5, 0.5]. Resampling the 12 judgments one by one would draw k agreements
    of 12, k binomial(12, 1/2), and spread the ends: k <= 3 has chance (1 + 12 + 66 + 220) / 2^12 = 7.3 % a
    resample, k >= 9 the same, so the 2.5 % end would sit at 1/4 or below and the 97.5 % end at 3/4 or above."""
    pairs = [PairRecord(f"p{k}", "q", f"a{k}", "b", "r", -1 if k % 2 else 1) for k in range(6)]
    rows = [_row(p, order, float(p.winner)) for p in pairs for order in ("original", "swapped")]
    block = pairwise_metrics(pairs, rows, n_boot=500, seed=3)["agreement"]
    assert (block["value"], block["n"], block["ci"]) == (0.5, 12, [0.5, 0.5])


def test_a_pair_with_one_order_of_an_older_text_is_stale_not_missing():
    """p1's original row judged an older answer_1, its swapped row the current text: both orders have a row, so
    nothing is missing (the run is finished) and one judgment is stale; the report says the stale one only."""
    pair = PairRecord("p1", "q", "a", "b", "r", -1)
    old = PairRecord("p1", "q", "a OLD", "b", "r", -1)
    rows = [_row(pair, "original", -1.0, old.content_key), _row(pair, "swapped", 1.0)]
    metrics = pairwise_metrics([pair], rows, n_boot=0)
    assert (metrics["n_missing"], metrics["n_stale"], metrics["n_judgments"], metrics["n_parsed"]) == (0, 1, 1, 1)
    assert metrics["coverage"] == {"value": 1 / 2, "n": 2, "n_parsed": 1}  # the stale one still lowers coverage
    counts = pairwise_markdown(metrics).splitlines()[2]
    assert "1 judgments are of an older text of their pair" in counts and "have no row" not in counts
    # a pair with no row at all in one order is missing, and said so
    alone = pairwise_metrics([pair], rows[1:], n_boot=0)
    assert (alone["n_missing"], alone["n_stale"]) == (1, 0)
    assert "**1 judgments have no row**" in pairwise_markdown(alone)


def test_a_rates_interval_is_scipys_paired_percentile_bootstrap_of_the_ratio():
    """The interval is scipy.stats.bootstrap's percentile interval of sum(num) / sum(den) with each pair's (num,
    den) drawn together (paired=True): 40 pairs, judged 0, 1 or 2 times each. The two draw different resamples, so
    the ends agree to the Monte Carlo error of 20,000 resamples, well inside 0.02 (the ends move in steps of about
    1/60 at this size)."""
    import numpy as np
    from scipy import stats

    from eval.pairwise.metrics import _rate

    rng = np.random.default_rng(1)
    den = rng.integers(0, 3, size=40).astype(float)
    num = np.array([rng.integers(0, d + 1) for d in den], dtype=float)
    ours = _rate(num, den, n_boot=20_000, seed=0, key="agreement", why_empty="")
    keep = den > 0  # a pair outside the rate adds nothing to either sum
    theirs = stats.bootstrap((num[keep], den[keep]), lambda n, d, axis=-1: n.sum(axis=axis) / d.sum(axis=axis),
                             paired=True, vectorized=True, method="percentile", n_resamples=20_000,
                             confidence_level=0.95, random_state=2).confidence_interval
    assert ours["value"] == num.sum() / den.sum()
    assert ours["ci"] == [pytest.approx(theirs.low, abs=0.02), pytest.approx(theirs.high, abs=0.02)]


# Ten pairs, each judged in both orders, every judgment agreeing with the label and none a tie: agreement 1 and tie
# rate 0 on every pair, so on every resample too. The exact binomial (Clopper-Pearson) 95 % interval of k of n = 10
# pairs, by hand: k = 0 has P(K = 0) = (1 - p)^10 = 0.025 at its upper end, p = 1 - 0.025^(1/10) = 0.30850; k = 10
# mirrors it, low = 0.025^(1/10) = 0.69150. Its n is the pairs the bootstrap draws, not the 20 judgments.
_TEN = [PairRecord(f"p{k}", "q", f"a{k}", "b", "r", -1 if k % 2 else 1) for k in range(10)]
# the raw answer names the winner's position: the label's side in the original order, the other in the swapped one
_TEN_ROWS = [_row(p, order, float(p.winner) * (1 if order == "original" else -1)) for p in _TEN
             for order in ("original", "swapped")]
_UPPER_AT_0 = 1 - 0.025 ** (1 / 10)


def test_a_rate_of_0_or_1_takes_the_exact_binomial_interval_when_asked():
    assert _UPPER_AT_0 == pytest.approx(0.30850, abs=5e-6)
    exact = pairwise_metrics(_TEN, _TEN_ROWS, n_boot=200, seed=0, extreme_rate_interval="clopper-pearson")
    assert (exact["agreement"]["value"], exact["agreement"]["n"]) == (1.0, 20)
    assert exact["agreement"]["ci"] == [pytest.approx(1 - _UPPER_AT_0, abs=1e-12), 1.0]
    assert exact["tie_rate"]["value"] == 0.0
    assert exact["tie_rate"]["ci"] == [0.0, pytest.approx(_UPPER_AT_0, abs=1e-12)]
    assert (exact["tie_rate"]["ci_method"], exact["tie_rate"]["n_units"]) == ("clopper-pearson", 10)
    # the first-position rate is 1/2 (each pair's original order prefers one position, its swapped the other):
    # not at a bound, its bootstrap interval kept, and no ci_method
    assert exact["first_position_rate"]["value"] == 0.5 and "ci_method" not in exact["first_position_rate"]
    text = pairwise_markdown(exact)
    assert ("Tie rate: every one of its 10 pairs gives 0; its interval is the exact binomial (Clopper-Pearson) one "
            "over those pairs (--extreme-rate-interval clopper-pearson).") in text


def test_by_default_a_rate_of_0_or_1_keeps_its_zero_width_interval_and_the_report_says_so():
    """Today's figures stay (percentile, the default); report.md flags the zero width as no certainty."""
    default = pairwise_metrics(_TEN, _TEN_ROWS, n_boot=200, seed=0)
    assert (default["agreement"]["ci"], default["tie_rate"]["ci"]) == ([1.0, 1.0], [0.0, 0.0])
    assert "ci_method" not in default["agreement"]
    text = pairwise_markdown(default)
    assert ("- Tie rate: every pair gives 0, and so does every resample: the interval [0, 0] has zero width whatever "
            "the number of pairs, which is no certainty (--extreme-rate-interval clopper-pearson gives the exact "
            "binomial interval).") in text
    assert "Agreement with labels (per judgment): every pair gives 1" in text
    with pytest.raises(ValueError, match="must be one of percentile, clopper-pearson, got 'wilson'"):
        pairwise_metrics(_TEN, _TEN_ROWS, n_boot=0, extreme_rate_interval="wilson")


def test_score_of_a_pairwise_run_records_its_interval_settings(tmp_path, capsys):
    """metrics.json says how its intervals were read: the option chosen, the percentile rule, resamples and level."""
    import json

    from eval.cli import main
    from eval.pairwise.files import PAIRWISE_PREDICTIONS

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": p.id, "instruction": p.instruction, "answer_1": p.answer_1,
                                        "answer_2": p.answer_2, "rubrics": p.rubrics, "winner": p.winner}) + "\n"
                            for p in _TEN), encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    (run / PAIRWISE_PREDICTIONS).write_text("".join(json.dumps(r.to_json()) + "\n" for r in _TEN_ROWS),
                                            encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "200",
                 "--extreme-rate-interval", "clopper-pearson"]) == 0
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["settings"] == {"n_boot": 200, "seed": 0, "ci_level": 0.95, "percentile_method": "linear",
                                   "extreme_rate_interval": "clopper-pearson"}
    assert metrics["tie_rate"]["ci"][1] == pytest.approx(_UPPER_AT_0, abs=1e-12)
    assert "exact binomial (Clopper-Pearson)" in (run / "report.html").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "200"]) == 0
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["settings"]["extreme_rate_interval"] == "percentile" and metrics["tie_rate"]["ci"] == [0.0, 0.0]


@pytest.mark.parametrize(("flags", "named"), [
    (("--bootstrap-unit", "instruction"), "--bootstrap-unit"),
    (("--target", "mean"), "--target"),
    (("--vc-repeats", "5", "--alt-test-q", "0.1"), "--vc-repeats, --alt-test-q"),
])
def test_score_of_a_pairwise_run_refuses_the_pointwise_flags_it_would_ignore(tmp_path, capsys, flags, named):
    """A pairwise run's intervals resample pairs, and it has no reference score, VC or validity section: a pointwise
    flag given to its score changed nothing and was taken without a word (``--bootstrap-unit instruction`` read as if
    its intervals drew whole instructions). Refused before anything is written (exit 2), naming each flag."""
    import json

    from eval.cli import main
    from eval.pairwise.files import PAIRWISE_PREDICTIONS

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": p.id, "instruction": p.instruction, "answer_1": p.answer_1,
                                        "answer_2": p.answer_2, "rubrics": p.rubrics, "winner": p.winner}) + "\n"
                            for p in _TEN), encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    (run / PAIRWISE_PREDICTIONS).write_text("".join(json.dumps(r.to_json()) + "\n" for r in _TEN_ROWS),
                                            encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "20", *flags]) == 2
    assert capsys.readouterr().err == (f"judge-eval score: error: {named}: a pairwise run takes none of the pointwise "
                                       "scoring flags (its intervals resample pairs); leave them out\n")
    assert not (run / "metrics.json").exists()


def test_every_score_flag_is_read_by_a_pairwise_score_or_refused_there():
    """A flag added to score later is named here: read by the pairwise score, or refused on a pairwise run."""
    from eval.cli import build_parser
    from eval.input_checks import POINTWISE_SCORE_FLAGS

    read_by_pairwise = {"command", "log_level", "predictions", "data", "out", "n_boot", "seed", "name",
                        "extreme_rate_interval"}
    flags = set(vars(build_parser().parse_args(["score", "--predictions", "x"])))
    assert flags - read_by_pairwise == set(POINTWISE_SCORE_FLAGS)


def test_a_rate_without_an_interval_says_why_in_metrics_and_reports():
    """One labelled pair, both orders (a judge preferring the first answer shown): every rate stands on one pair, and
    a resample of one pair is always that pair, so no rate gets an interval; with --n-boot 0 none is drawn at all.
    Either way metrics.json says why (``why_no_ci``) and report.md and report.html say it once per reason, naming
    the rates, under a table headed "value [95% CI]"; a rate with an interval carries no reason."""
    from eval.pairwise.metrics import pairwise_html

    pair = PairRecord("p", "q", "a", "b", "r", -1)
    rows = [_row(pair, "original", -1.0), _row(pair, "swapped", -1.0)]
    one = pairwise_metrics([pair], rows, n_boot=200)
    assert (one["agreement"]["value"], one["agreement"]["ci"]) == (0.5, None)
    assert "one pair" in one["agreement"]["why_no_ci"] and "one pair" in one["position_consistency"]["why_no_ci"]
    md, html = pairwise_markdown(one), pairwise_html(one)
    for page in (md, html):
        assert "No interval" in page and "Agreement with labels (per judgment)" in page.split("No interval")[1]
    # one pair with --n-boot 0: more resamples would still give no interval, so the reason is the pair, not the flag
    assert "one pair" in pairwise_metrics([pair], rows, n_boot=0)["tie_rate"]["why_no_ci"]
    two = [pair, PairRecord("p2", "q", "c", "d", "r", 1)]
    two_rows = rows + [_row(two[1], "original", 1.0), _row(two[1], "swapped", -1.0)]
    none_drawn = pairwise_metrics(two, two_rows, n_boot=0)
    assert "--n-boot 0" in none_drawn["tie_rate"]["why_no_ci"] and "--n-boot 0" in pairwise_markdown(none_drawn)
    both = pairwise_metrics(two, two_rows, n_boot=50)
    assert both["agreement"]["ci"] is not None and "why_no_ci" not in both["agreement"]
    assert "No interval" not in pairwise_markdown(both)
