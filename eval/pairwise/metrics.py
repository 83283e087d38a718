"""Metrics of a pairwise run (``eval.pairwise.judging``): agreement with labels, tie rate and position consistency.

Definitions (a *judgment* is one pair asked in one order; its ``verdict`` is in the pair's own orientation):

- **agreement**: the share of parsed judgments of labelled pairs whose verdict equals the pair's ``winner``. Each
  order counts on its own, so a judge that always prefers the first answer shown still agrees on half the judgments
  of every pair with a winner.
- **coverage**: the share of the expected judgments (every pair in every order the run asks) that were parsed. Every
  rate is over parsed judgments only, so a judge that fails on the pairs it finds hard would read as agreeing more;
  coverage, reported beside agreement, says how much of the run the rates stand on (failed, missing and stale
  judgments all lower it).
- **combined verdict** (one per pair, ``combine_orders``): the two orders' verdicts combined as Zheng et al. (arXiv
  2306.05685, Section 3.4, "Swapping positions") debias a pairwise judge: "only declare a win when an answer is
  preferred in both orders. If the results are inconsistent after swapping, we can call it a tie." Both orders give
  the same verdict: that verdict (a tie in both is a tie); they differ (a win and a tie too): a tie. A pair with an
  order that failed or has no row has **no** combined verdict (this toolkit's choice: the paper names no rule for
  it; the other order alone is the position-biased reading the rule exists to remove, and a failure is never read
  as a tie), counted as ``n_pairs_uncombined``; so has every pair of a run asked in one order only.
- **combined agreement**: the share of labelled pairs with a combined verdict whose combined verdict equals the
  ``winner``. ``score`` writes each pair's verdicts and combined verdict to ``pairwise_pairs.jsonl``.
- **tie rate**: the share of parsed judgments that are ``0``.
- **position consistency**: over pairs parsed in both orders, the share whose raw answer *flips with the order* — the
  judge's raw answer changes sign when the answers swap places (``score_original == -score_swapped``), i.e. the same
  ``verdict`` in both orientations. A judge that always prefers the first position scores 0 on pairs it does not
  call a tie.
- **first-position rate**: the share of parsed non-tie judgments that prefer the answer shown first (raw ``-1``); 0.5
  for a judge without position bias when both orders are asked (with ``--pairwise-orders original`` it also reflects
  how often the data's first answer is the better one).

Every rate comes with a 95 % percentile bootstrap interval that resamples **pairs** (both orders of a pair go
together: they are not independent), seeded per metric with ``eval.scoring.bootstrap.cell_rng``. A rate of 0 or 1 has
the zero-width interval there (every resample is that rate), said in the reports, or under
``--extreme-rate-interval clopper-pearson`` the exact binomial one over its pairs (``eval.scoring.interval_options``);
metrics.json's ``settings`` names the choice. A rate standing on one pair (every resample redraws it) or scored
with ``--n-boot 0`` has no interval, and its block says why (``why_no_ci``), as the reports do. A rate over nothing is
None with the reason said, never NaN. Failed judgments are counted (``n_failed``, by error code), never scored. A
judgment of an older text of its pair (its ``content_key`` is not the pair's: the data was edited after the run) is
not scored either: it counts as ``n_stale``, not as missing (the run has its row: the data changed, the run is not
unfinished), and lowers coverage as a missing judgment does.
The POLLUX sources define no pairwise metric; these are the usual position-bias measures, named here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from eval.input_checks import refuse_another_run
from eval.scoring.error_codes import code_counts, cut_codes_note
from eval.scoring.bootstrap import cell_rng, percentile_interval, resample_weights
from eval.scoring.interval_options import PERCENTILE_METHOD, check_extreme_rate_interval, zero_width_at_bound
from eval.scoring.interval_options import extreme_rate_interval as extreme_rate_interval_of
from eval.pairwise.files import PAIRWISE_PAIRS, PAIRWISE_PREDICTIONS
from eval.pairwise.judging import ORDERS, PairRecord, PairwiseRow, load_pairs, read_pairwise_rows
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.config_files import ConfigError

__all__ = ["PAIRWISE_PAIRS", "combine_orders", "pair_verdicts", "pairwise_metrics", "pairwise_markdown",
           "pairwise_html", "score_pairwise"]

#: The level of every rate's percentile bootstrap interval (the reports' "95% CI").
CI_LEVEL = 0.95
RATES = ("agreement", "combined_agreement", "tie_rate", "position_consistency", "first_position_rate")
TITLES = {"agreement": "Agreement with labels (per judgment)",
          "combined_agreement": "Agreement with labels (orders combined, per pair)", "tie_rate": "Tie rate",
          "position_consistency": "Position consistency", "first_position_rate": "First-position rate (non-ties)"}

#: Why a rate has no interval (its block's ``why_no_ci``): none drawn, or one pair, which every resample redraws.
NO_RESAMPLES = "no resamples were drawn (--n-boot 0)"
ONE_PAIR = "it stands on one pair, and every resample of one pair is that pair"

# Why a pair has the combined verdict it has (``combine_orders``), as pairwise_pairs.jsonl writes it.
AGREE, DISAGREE, FAILED = "orders_agree", "orders_disagree", "order_failed"
MISSING, ONE_ORDER = "order_missing", "one_order"


def _parsed(row: PairwiseRow | None) -> bool:
    return row is not None and row.parse_ok and row.verdict is not None


def combine_orders(original: PairwiseRow | None, swapped: PairwiseRow | None) -> tuple[float | None, str]:
    """A pair's combined verdict from its two judgments (either None: no row), and why (see the module docstring).

    Returns:
        ``(verdict, status)``: the shared verdict (``orders_agree``), ``0.0`` (``orders_disagree``), or None when an
        order failed (``order_failed``) or has no row (``order_missing``); a failure is said before a missing row.
    """
    if _parsed(original) and _parsed(swapped):
        if original.verdict == swapped.verdict:
            return float(original.verdict) + 0.0, AGREE  # + 0.0: a -0.0 verdict is the tie 0.0
        return 0.0, DISAGREE
    if any(row is not None and not _parsed(row) for row in (original, swapped)):
        return None, FAILED
    return None, MISSING


def _current(pairs: list[PairRecord], rows: list[PairwiseRow]) -> tuple[dict[str, dict[str, PairwiseRow]], int]:
    """Each pair's rows by order, keeping only judgments of the pair's current text, and how many were dropped.

    A row without a ``content_key`` (written before rows kept one) cannot be checked and is kept, as it was scored
    before; ``judge-eval run`` asks such a judgment again (``eval.pairwise.judging.pending_judgments``).
    """
    keys = {p.id: p.content_key for p in pairs}
    unknown = sorted({row.id for row in rows} - set(keys))
    if unknown:
        raise ValueError(f"{PAIRWISE_PREDICTIONS}: judgments of pairs the data does not have: {unknown[:5]}; rerun "
                         "`judge-eval run` on the folder (it drops the rows of pairs removed from the data), or score "
                         "with the data they were judged on")
    by_pair: dict[str, dict[str, PairwiseRow]] = {}
    stale = 0
    for row in rows:
        if row.content_key and row.content_key != keys[row.id]:
            stale += 1
            continue
        by_pair.setdefault(row.id, {})[row.order] = row
    return by_pair, stale


def pair_verdicts(pairs: list[PairRecord], rows: list[PairwiseRow],
                  orders: tuple[str, ...] = ORDERS) -> list[dict[str, Any]]:
    """One ``pairwise_pairs.jsonl`` row per pair, in the data's order: ``id``, ``winner``, the ``original`` and
    ``swapped`` verdicts (None: failed or no row), and ``combined`` with its ``combined_status``."""
    return _pair_verdicts(pairs, _current(pairs, rows)[0], orders)


def _pair_verdicts(pairs: list[PairRecord], by_pair: dict[str, dict[str, PairwiseRow]],
                   orders: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for pair in pairs:
        judged = by_pair.get(pair.id, {})
        original, swapped = judged.get("original"), judged.get("swapped")
        if tuple(orders) == ORDERS:
            combined, status = combine_orders(original, swapped)
        else:
            combined, status = None, ONE_ORDER
        out.append({"id": pair.id, "winner": pair.winner,
                    "original": original.verdict if _parsed(original) else None,
                    "swapped": swapped.verdict if _parsed(swapped) else None,
                    "combined": combined, "combined_status": status})
    return out


def _rate(num: np.ndarray, den: np.ndarray, n_boot: int, seed: int, key: str, why_empty: str,
          extreme_rate_interval: str = "percentile") -> dict[str, Any]:
    """``sum(num) / sum(den)`` over pairs, with a bootstrap interval that resamples pairs (a pair's judgments in both
    orders are one entry of ``num`` and ``den``, so they are drawn together).

    The resamples come from ``eval.scoring.bootstrap.resample_weights`` over the pairs with ``den > 0`` (a pair
    outside the rate adds 0 to both sums, so dropping it changes no resample's ratio): each block of weights is
    bounded in size whatever the number of pairs, and each resample's rate is ``(w @ num) / (w @ den)``.
    A rate of 0 or 1 has the zero-width interval there; under ``extreme_rate_interval="clopper-pearson"`` it is the
    exact binomial one over those pairs instead, and the block says so (``ci_method``;
    ``eval.scoring.interval_options``).
    """
    total = float(den.sum())
    if total == 0:
        return {"value": None, "ci": None, "n": 0, "why_empty": why_empty}
    value = float(num.sum()) / total
    ci = None
    keep = den > 0
    if n_boot > 0 and keep.sum() >= 2:
        num_k, den_k = num[keep], den[keep]
        blocks = resample_weights(np.ones(len(num_k), dtype=np.int64), n_boot, cell_rng(seed, f"pairwise/{key}"))
        samples = np.concatenate([(w @ num_k) / (w @ den_k) for w in blocks])
        ci = percentile_interval(samples, CI_LEVEL)
    ci, replaced_by = extreme_rate_interval_of(value, ci, int(keep.sum()), CI_LEVEL, extreme_rate_interval)
    block = {"value": value, "ci": ci, "n": int(total)}
    if replaced_by:
        block.update(ci_method=replaced_by, n_units=int(keep.sum()))
    if ci is None:  # said beside the value: the reports' column is headed "value [95% CI]"
        # The pairs first, as the ranking's why_no_ci: a rate on one pair gets no interval whatever --n-boot says, and
        # "--n-boot 0" would send the reader to a flag that is not the cause.
        block["why_no_ci"] = ONE_PAIR if keep.sum() < 2 else NO_RESAMPLES
    return block


def pairwise_metrics(pairs: list[PairRecord], rows: list[PairwiseRow], n_boot: int = 1000, seed: int = 0,
                     orders: tuple[str, ...] = ("original", "swapped"),
                     extreme_rate_interval: str = "percentile") -> dict[str, Any]:
    """The pairwise metrics of ``rows`` (the judgments) against ``pairs`` (labels in ``winner``).

    Args:
        orders: the orders the run asked each pair in (its ``pairwise_orders``): the judgments expected.
        extreme_rate_interval: the interval of a rate of 0 or 1 (``eval.scoring.interval_options``):
            ``percentile`` (the bootstrap's zero-width one) or ``clopper-pearson``.

    Returns:
        ``n_pairs``, ``n_labelled``, ``n_judgments``, ``n_missing`` (expected judgments with no row at all: an
        unfinished run, scored on what it has and said so; a row of an older text is ``n_stale``, not missing),
        ``n_parsed``, ``n_failed``, ``failures`` (code -> count, most first and bounded: ``code_counts``),
        ``n_both_orders``, ``n_stale`` (judgments of an older text of their pair, not scored), ``n_unasked_order``
        (judgments in an order the run did not ask, not scored), ``n_pairs_combined``, ``n_orders_disagree`` (pairs
        combined to a tie because their orders disagree), ``n_pairs_uncombined`` and, ``coverage`` (``{value, n, n_parsed}``: parsed over ``n`` expected
        judgments; no interval: it describes the run, not a sample) and, for each of ``RATES``, ``{value, ci, n}``
        (``why_no_ci`` beside a ``ci`` of None; or ``{value: None, why_empty}``).
    """
    check_extreme_rate_interval(extreme_rate_interval)
    by_pair, n_stale = _current(pairs, rows)
    judged_at_all = {(row.id, row.order) for row in rows}
    combined = _pair_verdicts(pairs, by_pair, orders)
    m = len(pairs)
    agree_num, agree_den = np.zeros(m), np.zeros(m)
    both_num, both_den = np.zeros(m), np.zeros(m)
    tie_num, tie_den = np.zeros(m), np.zeros(m)
    flip_num, flip_den = np.zeros(m), np.zeros(m)
    first_num, first_den = np.zeros(m), np.zeros(m)
    failures: list[str] = []  # each failed judgment's code
    n_judgments = n_unasked = 0
    for k, pair in enumerate(pairs):
        judged = by_pair.get(pair.id, {})
        # Only the orders the run asked are scored: a judgment of another (a predictions file merged by hand) would
        # lift coverage past 1 and count a pair twice; it is counted apart (n_unasked_order).
        n_unasked += sum(1 for order in judged if order not in orders)
        for row in (judged[order] for order in orders if order in judged):
            n_judgments += 1
            if not row.parse_ok or row.verdict is None:
                failures.append(row.error or "unknown")
                continue
            tie_den[k] += 1
            tie_num[k] += row.verdict == 0
            if pair.winner is not None:
                agree_den[k] += 1
                agree_num[k] += row.verdict == pair.winner
            if row.score != 0:
                first_den[k] += 1
                first_num[k] += row.score == -1
        both = [judged.get(o) if o in orders else None for o in ("original", "swapped")]
        if all(r is not None and r.parse_ok and r.verdict is not None for r in both):
            flip_den[k] = 1
            flip_num[k] = both[0].verdict == both[1].verdict
        if pair.winner is not None and combined[k]["combined"] is not None:
            both_den[k] = 1
            both_num[k] = combined[k]["combined"] == pair.winner
    out: dict[str, Any] = {
        "n_pairs": m,
        "n_labelled": sum(1 for p in pairs if p.winner is not None),
        "n_judgments": n_judgments,
        # Against every row, stale ones included: a pair judged on an older text is n_stale (edited data), not an
        # unfinished run; counting it here too would report one judgment twice.
        "n_missing": sum(1 for pair in pairs for order in orders if (pair.id, order) not in judged_at_all),
        "n_parsed": int(tie_den.sum()),
        "n_failed": len(failures),
        # bounded as score's are: a predictions file written elsewhere may hold any text as a code
        "failures": code_counts(failures),
        "n_both_orders": int(flip_den.sum()),
        "n_stale": n_stale,
        "n_unasked_order": n_unasked,
        "n_pairs_combined": sum(1 for c in combined if c["combined"] is not None),
        "n_orders_disagree": sum(1 for c in combined if c["combined_status"] == DISAGREE),
        "n_pairs_uncombined": sum(1 for c in combined if c["combined"] is None),
    }

    def rate(*args: Any) -> dict[str, Any]:
        return _rate(*args, extreme_rate_interval=extreme_rate_interval)

    out["agreement"] = rate(agree_num, agree_den, n_boot, seed, "agreement",
                            "no parsed judgment of a labelled pair (the data has no winner labels, or every such "
                            "judgment failed)")
    expected = m * len(orders)
    out["coverage"] = ({"value": out["n_parsed"] / expected, "n": expected, "n_parsed": out["n_parsed"]} if expected
                       else {"value": None, "n": 0, "n_parsed": 0, "why_empty": "no pair to judge"})
    out["combined_agreement"] = rate(
        both_num, both_den, n_boot, seed, "combined_agreement",
        "no labelled pair has a combined verdict (the pairs were asked in one order only: run with pairwise_orders: "
        "both)" if tuple(orders) != ORDERS else
        "no labelled pair has a combined verdict (the data has no winner labels, or every such pair has an order "
        "that failed or was not judged)")  # fmt: skip
    out["tie_rate"] = rate(tie_num, tie_den, n_boot, seed, "tie_rate", "no parsed judgment")
    out["position_consistency"] = rate(flip_num, flip_den, n_boot, seed, "position_consistency",
                                       "no pair parsed in both orders (run with pairwise_orders: both)")
    out["first_position_rate"] = rate(first_num, first_den, n_boot, seed, "first_position_rate",
                                      "no parsed judgment that is not a tie")
    return out


def _fmt(block: dict[str, Any]) -> str:
    if block["value"] is None:
        return "—"
    ci = f" [{block['ci'][0]:.3f}, {block['ci'][1]:.3f}]" if block.get("ci") else ""
    return f"{block['value']:.3f}{ci}"


def _combined_text(metrics: dict[str, Any]) -> str:
    """The counts behind the combined agreement, and judgments of an older text, as the reports say them."""
    text = (f" {metrics['n_pairs_combined']} pairs have a combined verdict ({metrics['n_orders_disagree']} of them a "
            f"tie because their orders disagree), {metrics['n_pairs_uncombined']} none.")
    if metrics.get("n_stale"):
        text += (f" {metrics['n_stale']} judgments are of an older text of their pair and are not scored (rerun to "
                 "judge the current text).")
    if metrics.get("n_unasked_order"):
        text += (f" {metrics['n_unasked_order']} judgments are in an order this run did not ask and are not scored.")
    if metrics.get("n_win_labels_on_same_answers"):
        text += (f" {metrics['n_win_labels_on_same_answers']} pairs are labelled a win though their two answers are "
                 "the same text; those labels are not scored (label them a tie or leave them unlabelled).")
    return text


def pairwise_markdown(metrics: dict[str, Any], name: str = "") -> str:
    """The pairwise section of ``report.md``: counts, then one row per rate with its interval and n. The judge's name
    and the failure codes come from the run's files: inert Markdown (``md_text``, ``md_code``), as the other
    reports write them."""
    from eval.reports.names import page_name
    from eval.reports.report import md_code, md_text

    lines = [f"## Pairwise judging{f' — {md_text(page_name(name))}' if name else ''}", "",
             f"{metrics['n_pairs']} pairs ({metrics['n_labelled']} labelled), {metrics['n_judgments']} judgments, "
             f"{metrics['n_parsed']} parsed, {metrics['n_failed']} failed"
             + (f" ({', '.join(f'{md_code(k)}: {v}' for k, v in metrics['failures'].items())})"
                + cut_codes_note(metrics["failures"]) if metrics["failures"] else "")
             + f"; {metrics['n_both_orders']} pairs parsed in both orders."
             + _combined_text(metrics)
             + (f" **{metrics['n_missing']} judgments have no row** (the run is unfinished: rerun it to complete)."
                if metrics.get("n_missing") else ""), "",
             "| metric | value [95% CI] | n |", "|---|---|---|"]  # fmt: skip
    notes = []
    for key in RATES:
        block = metrics[key]
        lines.append(f"| {TITLES[key]} | {_fmt(block)} | {block['n']} |")
        if block["value"] is None:
            notes.append(f"- {TITLES[key]}: {block['why_empty']}.")
        if key == "agreement" and "coverage" in metrics:  # beside agreement: what share of the run it stands on
            lines.append(_coverage_row(metrics["coverage"], "| {title} | {value} | {n} |"))
    lines += ["", "Intervals: percentile bootstrap over pairs (both orders of a pair resampled together).",
              "Orders combined: a verdict both orders give, a tie where they disagree (Zheng et al., arXiv 2306.05685, "
              "Section 3.4); a pair with a failed or missing order has none.", *notes,
              *(f"- {note}" for note in extreme_rate_notes(metrics)),
              *(f"- {note}" for note in no_interval_notes(metrics))]
    return "\n".join(lines) + "\n"


def extreme_rate_notes(metrics: dict[str, Any]) -> list[str]:
    """A sentence per rate of 0 or 1 (``eval.scoring.interval_options``): its interval is exact binomial
    (``--extreme-rate-interval clopper-pearson``), or the bootstrap's of zero width, which says no more than that
    every pair gave that rate."""
    notes = []
    for key in RATES:
        block = metrics[key]
        if block.get("ci_method") == "clopper-pearson":
            notes.append(f"{TITLES[key]}: every one of its {block['n_units']} pairs gives {block['value']:g}; its "
                         "interval is the exact binomial (Clopper-Pearson) one over those pairs "
                         "(--extreme-rate-interval clopper-pearson).")
        elif zero_width_at_bound(block["value"], block.get("ci")):
            notes.append(f"{TITLES[key]}: every pair gives {block['value']:g}, and so does every resample: the "
                         f"interval [{block['value']:g}, {block['value']:g}] has zero width whatever the number of "
                         "pairs, which is no certainty (--extreme-rate-interval clopper-pearson gives the exact "
                         "binomial interval).")
    return notes


def no_interval_notes(metrics: dict[str, Any]) -> list[str]:
    """A sentence per reason a rate with a value has no interval (its ``why_no_ci``), naming those rates."""
    by_reason: dict[str, list[str]] = {}
    for key in RATES:
        block = metrics[key]
        if block["value"] is not None and block.get("why_no_ci"):
            by_reason.setdefault(block["why_no_ci"], []).append(TITLES[key])
    return [f"No interval for {', '.join(titles)}: {why}." for why, titles in by_reason.items()]


#: The coverage row's title: parsed judgments over those the run asks.
COVERAGE_TITLE = "Coverage (parsed / expected judgments)"


def _coverage_row(block: dict[str, Any], row: str, escape=lambda text: text) -> str:
    """The coverage row in a report's table, ``row`` filled with its title, value (parsed of expected) and n."""
    value = "—" if block["value"] is None else f"{block['value']:.3f} ({block['n_parsed']} of {block['n']})"
    return row.format(title=escape(COVERAGE_TITLE), value=escape(value), n=block["n"],
                      why=escape(block.get("why_empty", "")))


def pairwise_html(metrics: dict[str, Any], name: str = "") -> str:
    """The same section as an HTML fragment (a ``<section>`` with a table), for ``report.html``: every text through
    the pages' ``escape`` (which drops bidirectional controls), the judge's name cut, the failures by code."""
    from eval.reports.html_text import escape
    from eval.reports.names import page_name

    rows = "".join(
        f"<tr><td>{escape(TITLES[k])}</td><td>{escape(_fmt(metrics[k]))}</td><td>{metrics[k]['n']}</td>"
        f"<td>{escape(metrics[k].get('why_empty', ''))}</td></tr>"
        + (_coverage_row(metrics["coverage"], "<tr><td>{title}</td><td>{value}</td><td>{n}</td><td>{why}</td></tr>",
                         escape) if k == "agreement" and "coverage" in metrics else "")
        for k in RATES
    )
    title = escape(f"Pairwise judging{f' — {page_name(name)}' if name else ''}")
    failures = metrics.get("failures") or {}
    # report.md's failures by code (``pairwise_markdown``): a parse failure is told from a refused request here too
    by_code = (" (" + ", ".join(f"<code>{escape(k)}</code>: {escape(v)}" for k, v in failures.items()) + ")"
               + escape(cut_codes_note(failures)) if failures else "")
    return (f'<section id="pairwise"><h2>{title}</h2><p>{metrics["n_pairs"]} pairs ({metrics["n_labelled"]} '
            f"labelled), {metrics['n_judgments']} judgments, {metrics['n_parsed']} parsed, {metrics['n_failed']} "
            f"failed{by_code}; {metrics['n_both_orders']} pairs parsed in both orders."
            + escape(_combined_text(metrics))
            + (f" <b>{metrics['n_missing']} judgments have no row</b> (the run is unfinished)."
               if metrics.get("n_missing") else "")
            + "</p><table><thead><tr><th>metric</th>"
            f"<th>value [95% CI]</th><th>n</th><th>why empty</th></tr></thead><tbody>{rows}</tbody></table>"
            "<p>Intervals: percentile bootstrap over pairs (both orders of a pair resampled together). Orders "
            "combined: a verdict both orders give, a tie where they disagree (Zheng et al., arXiv 2306.05685, Section "
            "3.4); a pair with a failed or missing order has none.</p>"
            + "".join(f"<p>{escape(note)}</p>" for note in extreme_rate_notes(metrics) + no_interval_notes(metrics))
            + "</section>")


def _run_config(run_file: Path) -> dict[str, Any]:
    """The ``config`` of a pairwise run's run.json, read as the pointwise score reads it
    (``judge.plumbing.provenance.read_provenance``): {} when the file or its ``config`` is absent.

    Raises:
        ValueError: the file is not a JSON object, or a setting score reads (``config``, ``config.data``,
            ``config.limit``, ``config.pairwise_orders``) is not what ``judge-eval run`` writes; naming the file and
            the field.
    """
    from judge.plumbing.provenance import read_provenance

    config = read_provenance(run_file, missing_ok=True).get("config")
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ValueError(f"{run_file}: config: expected an object, got {json.dumps(config)[:80]}; pass --data")
    checks = {"data": (lambda v: isinstance(v, str), "a path"),
              "limit": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a count, 0 or more"),
              "pairwise_orders": (lambda v: v in ("both", ORDERS[0]), f"'both' or '{ORDERS[0]}'")}
    for key, (valid, expected) in checks.items():
        if config.get(key) is not None and not valid(config[key]):
            raise ValueError(f"{run_file}: config.{key}: expected {expected}, got {json.dumps(config[key])[:80]}")
    return config


def score_pairwise(predictions: str | Path, data: str | Path | None = None, out: str | Path | None = None,
                   n_boot: int = 1000, seed: int = 0, name: str = "",
                   extreme_rate_interval: str = "percentile") -> dict[str, Any]:
    """``judge-eval score`` of a pairwise run: ``metrics.json``, ``pairwise_pairs.jsonl`` (each pair's verdicts and
    combined verdict), ``report.md`` and ``report.html`` in ``out``.

    Args:
        predictions: the run folder or its ``pairwise_predictions.jsonl``.
        data: the pairs (default: the data ``run.json`` names).
        out: output folder (default: the run folder); one holding another run is refused
            (``eval.input_checks.refuse_another_run``).
        extreme_rate_interval: as ``pairwise_metrics``'; metrics.json's ``settings`` names it, with the resamples,
            the seed, the level and the percentile rule.

    Raises:
        ValueError: ``out`` holding another run, or a predictions file holding two judges' rows (as ``judge-eval
            run`` refuses to resume under another judge).
    """
    path = Path(predictions)
    run_dir = path.parent if path.is_file() else path
    target = Path(out) if out else run_dir
    refuse_another_run(target, run_dir)  # before anything is read: its reports are another run's
    run_file = run_dir / "run.json"
    config = _run_config(run_file)
    if data is None:
        if not config.get("data"):
            # Without run.json (a predictions file copied alone) the pairs the run judged are unknown.
            raise ConfigError(f"data: {run_file} is missing or names no data; pass the pairs the run judged with "
                              "--data PAIRS.jsonl")
        data = config["data"]
        if not Path(data).is_file():  # a bare OS error otherwise, naming neither run.json nor the way out
            raise ConfigError(f"data: {run_file} names --data {data}, which is not here (moved, or judged on another "
                              "machine); pass the pairs the run judged with --data PAIRS.jsonl")
    file = run_dir / PAIRWISE_PREDICTIONS if path.is_dir() else path
    rows = read_pairwise_rows(file)
    judges = sorted({r.judge for r in rows})
    if len(judges) > 1:  # agreement and position consistency would set one judge's verdicts against another's
        raise ValueError(f"predictions: {file} holds predictions of {judges}, not of one judge; score each judge's "
                         "run from a folder of its own")
    name = name or (judges[0] if judges else "")
    # The pairs the run asked (its --limit, as judge-eval run read them): the others were never judged, not failed.
    # A win label on a pair of two same answers, which judge-eval run refuses before asking: verdicts a run asked
    # before that refusal are scored, the label counted and left out rather than the whole run refused.
    unscored: list[str] = []
    pairs = load_pairs(data, unscored)[: config.get("limit") or None]
    orders = ORDERS if config.get("pairwise_orders", "both") == "both" else ORDERS[:1]
    settings = {"n_boot": n_boot, "seed": seed, "ci_level": CI_LEVEL, "percentile_method": PERCENTILE_METHOD,
                "extreme_rate_interval": extreme_rate_interval}
    metrics = {"kind": "pairwise", "judge": name, "settings": settings,
               **pairwise_metrics(pairs, rows, n_boot=n_boot, seed=seed, orders=orders,
                                  extreme_rate_interval=extreme_rate_interval),
               "n_win_labels_on_same_answers": len(set(unscored) & {pair.id for pair in pairs})}
    target.mkdir(parents=True, exist_ok=True)
    verdicts = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in pair_verdicts(pairs, rows, orders))
    write_atomically(target / PAIRWISE_PAIRS, verdicts.encode("utf-8"))
    # ``compare`` reads metrics.json back: replaced whole, never left cut by a kill.
    write_atomically(target / "metrics.json", (json.dumps(metrics, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    from eval.reports.html_text import escape
    from eval.reports.names import page_name
    from eval.reports.report import md_text

    write_atomically(target / "report.md", (f"# {md_text(page_name(name)) or 'Judge'}: pairwise report\n\n"
                                            + pairwise_markdown(metrics)).encode("utf-8"))
    page = (f"<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>{escape(page_name(name))} pairwise"
            f"</title><body>{pairwise_html(metrics, name)}</body></html>\n")
    write_atomically(target / "report.html", page.encode("utf-8"))
    return metrics
