"""``judge-eval compare`` of three or more ranking runs: one leaderboard of the candidates, paired over instructions.

    judge-eval compare runs/rank/model-a runs/rank/model-b runs/rank/model-c --out runs/rank/board

What the paper does: POLLUX ranks LLMs by their mean scores (arXiv 2505.24616, Table 10 over the whole test, Table 1
per task type; §4 notes that the ranking depends on that aggregation) and gives no interval, test or tie rule for a
ranking. The intervals, the win rate and the rule for "not distinguishable" below are this toolkit's.

The runs must be of one data set and scored alike, as two runs ``eval.ranking.compare`` compares (every run's
scoring is checked against the first's; its data and its judge against every other run's, so that weights only two
later runs recorded are compared too). Pairing, as there but over all K runs: each run's gate is
decided from its own verdicts, then only the (instruction, criterion) items **every** run scored count, and an
instruction whose binary (gate) criterion some runs scored and others did not leaves every run. Per candidate:

- ``mean``: the matrix's corner (every non-binary score pooled, after the gate) over those items;
- ``win_rate``: per instruction, the candidate's score (the mean of its non-binary scores there) against each other
  candidate's: 1 higher, 1/2 a tie, 0 lower (its average rank minus one, ``scipy.stats.rankdata``), over the K - 1
  others, then the mean over the instructions with a non-binary score;
- both with a percentile ``1 - alpha`` bootstrap interval over instructions: each resample is one draw of the shared
  instructions (with replacement) that feeds every candidate, so what an instruction makes easy or hard is shared.

Per pair (B above A in the table's order): ``delta`` = mean B - mean A with its paired interval at level
``1 - alpha / m``, m = K(K - 1)/2 (Bonferroni: the m calls together are wrong with probability at most alpha), its
ends the ⌈n·alpha/(2m)⌉-th smallest and largest of the n resampled differences
(``eval.scoring.resample_rules.called_interval``). At least 2m / alpha resamples are drawn
(``eval.scoring.resample_rules.resamples_to_call``; 1120 for eight candidates), more than asked when ``n_boot`` is fewer
(said on stderr before drawing; never past ``MAX_RESAMPLES``, an ``alpha`` needing more is refused): with fewer,
``why_no_call`` refuses every pair. The pair's p-value is the paired sign-flip permutation test's over the
instructions with a non-binary score (``eval.ranking.permutation``), and the pair is called when p < alpha / m and
the interval excludes 0 on that side, over at least 2 such instructions and enough for the test to reach alpha / m
(its smallest p is 2 / 2^n: 7 instructions for three candidates at 0.05). A candidate's ``rank`` is 1 + the number
of candidates called above it. The table is in order of mean, so a candidate whose pairs are less certain can hold a
better rank than one listed above it: a rank never counts a call the test did not make, and a rank kept in the
table's order by counting the calls above the candidates listed over it would count one whose own pair with the
candidate was tested and not told apart; compare.md names each such candidate. ``indistinguishable_from`` names
those whose pair was tested and not called, ``untested_with`` those whose pair could not be tested ("—", its
``why_no_call`` says why), so rank 1 may be held by several. The pairs table gives each pair's sign-flip p, and
for a pair tested and not called why (its p not below alpha / m, or its interval holding 0).
"""

from __future__ import annotations

import math
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from eval.input_checks import MAX_RESAMPLES  # the most resamples a board raises n_boot to (and every --n-boot's cap)

__all__ = ["MIN_RUNS", "leaderboard", "render_leaderboard_markdown", "render_leaderboard_page", "leaderboard_command"]

#: Two runs are ``compare_rankings``' paired matrix of differences; a leaderboard starts at three.
MIN_RUNS = 3


def _check_alike(folders: list[Path], infos: list[dict[str, Any]],
                 allow_other_judge: bool) -> tuple[str, dict, list, list]:
    """Every run against the first (normalisation, verdict reading, unjudged settings), the judge and the data of
    every pair.

    Returns the normalisation, the unjudged settings, each run's judge differences from the first, and
    ``{a, b, differences, notes}`` for each pair of runs whose judge settings differ or carry a note
    (``eval.ranking.compare.weights_differences``)."""
    from eval.ranking.compare import (UNJUDGED_SETTINGS, instruction_contents, judge_differences, judge_settings,
                                      refuse_other_data, unjudged_setting)

    normalize = infos[0]["matrix"]["normalize"]
    settings = {name: unjudged_setting(infos[0], name) for name in UNJUDGED_SETTINGS}
    differences = [{}]
    for folder, info in zip(folders[1:], infos[1:]):
        if info["matrix"]["normalize"] != normalize:
            raise ValueError(f"{folder} normalises differently from {folders[0]} ({info['matrix']['normalize']} vs "
                             f"{normalize}); rerun one with --normalize to match")
        readers = [i.get("verdict_reader", "toolkit") for i in (infos[0], info)]
        if readers[0] != readers[1]:
            raise ValueError(f"{folder} reads verdicts differently from {folders[0]} ({readers[1]} vs {readers[0]}); "
                             "rerun one with --verdict-reader to match")
        for name, (what, flag) in UNJUDGED_SETTINGS.items():
            if unjudged_setting(info, name) != settings[name]:
                raise ValueError(f"{folder} scores {what} differently from {folders[0]} "
                                 f"({unjudged_setting(info, name)} vs {settings[name]}); rerun one with {flag}")
    judge_pairs = []
    judges = [judge_settings(folder) for folder in folders]  # each run.json read once, not once per pair it is in
    for a, b in combinations(range(len(folders)), 2):
        # Every pair, not every run against the first: a run that recorded no weights says nothing of the others'.
        differ, notes = judge_differences([folders[a], folders[b]], infos[a], infos[b], allow_other_judge,
                                           which=f"{folders[a]} and {folders[b]}", settings=[judges[a], judges[b]])
        if a == 0:
            differences.append(differ)
        if differ or notes:
            judge_pairs.append({"a": str(folders[a]), "b": str(folders[b]), "differences": differ, "notes": notes})
    texts = [instruction_contents(folder) for folder in folders]  # each run read once, not once per pair it is in
    for a, b in combinations(range(len(folders)), 2):
        refuse_other_data(infos[a], infos[b], [folders[a], folders[b]], (texts[a], texts[b]))
    return normalize, settings, differences, judge_pairs


def leaderboard(runs: list[str | Path], n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
                allow_other_judge: bool = False, extreme_rate_interval: str = "percentile") -> dict[str, Any]:
    """The leaderboard of K >= 3 ranking runs (module docstring).

    ``extreme_rate_interval``: a win rate of 0 or 1 (every rated instruction lost, or won, against every other
    candidate) has the bootstrap's zero-width interval there (``percentile``) or the exact binomial one over the
    rated instructions (``clopper-pearson``, its model's ``win_rate_ci_method`` says so;
    ``eval.scoring.interval_options``); the result names the choice.

    Returns:
        ``{"kind": "leaderboard", "models": [{run, model, rank, mean, ci, win_rate, win_rate_ci,
        indistinguishable_from, untested_with, n_instructions, excluded, empty_answers, failed_answers,
        judge_differences}] (by mean, highest first; ``empty_answers`` and ``failed_answers`` as
        ``eval.ranking.compare.unjudged_answers``), "pairs": [{a, b, delta, ci, level, p_value, n_resamples,
        win_rate_b, verdict, why_no_call}],
        "n_instructions", "n_rated_instructions", "n_items", "n_boot", "n_boot_asked", "call_test",
        "why_no_interval", "seed", "alpha", "pair_level", "n_pairs", "percentile_method" (how every percentile
        interval's ends are read), "extreme_rate_interval", "judge", "judge_pairs" (``_check_alike``), "normalize",
        "empty_answer", "no_answer"}``; a model's ``judge_differences`` are from the first run's, and a model whose
        win rate's interval is exact binomial says so in ``win_rate_ci_method``. A
        pair's ``p_value`` is its sign-flip test's and ``why_no_call`` says why it is untested ("—"; None when
        tested); ``n_rated_instructions`` counts the instructions with a non-binary score (the means', win rates'
        and tests'); ``n_boot`` the resamples drawn, ``n_boot_asked`` the ``n_boot`` given (fewer when a call at
        alpha / m needs more); ``call_test`` (None without resamples) ``{test, exact, n_swaps}``.

    Raises:
        ValueError: fewer than ``MIN_RUNS`` runs, one folder twice, a folder that is no ranking run, runs not of one
            data set or not scored alike (as ``compare_rankings``), no item every run scored, or an ``alpha`` so
            small that a call would need more than ``MAX_RESAMPLES`` resamples.
    """
    from scipy.stats import rankdata

    import eval.ranking.compare as compare  # its pairing rule and loader, read at the call (one home of each)
    from eval.ranking.compare import (binary_criteria, called_verdict, compared_values, excluded_instructions,
                                      finite_or_none, is_ranking_run, unjudged_answers, why_no_call)
    from eval.ranking.matrix import MIN_INSTRUCTIONS, instruction_weights, matrix_arrays, percentile_interval
    from eval.ranking.permutation import sign_flip_p
    from eval.ranking.rank import NOT_A_RANKING
    from eval.scoring.interval_options import PERCENTILE_METHOD, check_extreme_rate_interval
    from eval.scoring.interval_options import extreme_rate_interval as extreme_rate_interval_of
    from eval.scoring.resample_rules import called_interval, resamples_to_call

    check_extreme_rate_interval(extreme_rate_interval)

    folders = [Path(run) for run in runs]
    if len(folders) < MIN_RUNS:
        raise ValueError(f"a leaderboard takes at least {MIN_RUNS} rank runs, got {len(folders)} (two are compared "
                         "as A and B)")
    seen = [folder.resolve() for folder in folders]
    twice = sorted({str(f) for f, r in zip(folders, seen) if seen.count(r) > 1})
    if twice:
        raise ValueError(f"{', '.join(twice)}: the same run given twice; a leaderboard ranks distinct runs")
    for folder in folders:
        if not is_ranking_run(folder):
            raise ValueError(f"{folder}: {NOT_A_RANKING}")
    k_runs = len(folders)
    n_pairs = k_runs * (k_runs - 1) // 2
    pair_alpha = alpha / n_pairs
    needed = resamples_to_call(pair_alpha)
    # Never fewer resamples than a call at alpha / m needs (2m / alpha: 1120 for eight candidates at 0.05): with
    # fewer, why_no_call refuses every pair, and every candidate would share rank 1 for want of resamples.
    n_draw = max(n_boot, needed) if n_boot > 0 else 0
    if n_draw > n_boot > 0 and n_draw > MAX_RESAMPLES:  # K, alpha and n_boot alone: before any run is read
        raise ValueError(f"--alpha {alpha:g}: a call between {k_runs} candidates at alpha / {n_pairs} needs "
                         f"{n_draw} resamples, over the {MAX_RESAMPLES} a leaderboard raises --n-boot {n_boot} to; "
                         f"give --alpha of at least {2 * n_pairs / MAX_RESAMPLES:g}")
    loaded = [compare.load_ranking_run(folder) for folder in folders]
    infos, runs_items = [info for info, _ in loaded], [items for _, items in loaded]
    normalize, settings, differences, judge_pairs = _check_alike(folders, infos, allow_other_judge)

    binaries = [binary_criteria(info) for info in infos]  # each run's gate by its own data's rubrics
    pairing = compare.paired_items(folders, runs_items, binaries, settings)
    keys, paired, shared, gate_partial = pairing.keys, pairing.paired, pairing.shared, pairing.gate_partial
    scored_ids = pairing.scored_ids
    arrays = [matrix_arrays(items, normalize, **settings, prompt_ids=shared, binary_criteria=b,
                            paired=[k for k, key in enumerate(ks) if key in paired])
              for items, ks, b in zip(runs_items, keys, binaries)]
    # Per (instruction, candidate): the non-binary scores' total and count; the corner of a resample is their
    # weighted totals' ratio, the same pooled mean ``matrix.resampled_matrices`` gives.
    # Rounded as two runs' matrices are (``compared_values``): a total of the same normalised scores summed in
    # another order differs in its last bit, and a tie would rank as a win.
    sums = compared_values(np.column_stack([np.asarray(a.nb_sums.sum(axis=1)).ravel() for a in arrays]))
    counts = np.column_stack([np.asarray(a.nb_counts.sum(axis=1)).ravel() for a in arrays])
    with np.errstate(invalid="ignore", divide="ignore"):
        per_instruction = sums / counts
    rated = np.isfinite(per_instruction).all(axis=1)  # instructions with a non-binary score (every candidate's)
    wins = np.zeros_like(per_instruction)
    if rated.any():  # average rank - 1: the others beaten, a tie counting 1/2
        wins[rated] = (rankdata(per_instruction[rated], axis=1, method="average") - 1.0) / (k_runs - 1)

    def stats(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(b, K) means and win rates for (b, n) instruction weights."""
        with np.errstate(invalid="ignore", divide="ignore"):
            means = compared_values((weights @ sums) / (weights @ counts))  # equal columns, equal means, bit for bit
            win_rates = (weights @ wins) / (weights @ rated.astype(np.float64))[:, None]
        return means, win_rates

    point_means, point_wins = (x[0] for x in stats(np.ones((1, len(shared)))))
    n_rated = int(rated.sum())  # the means' and win rates' instructions: a gate-only one adds nothing to them
    if n_rated >= MIN_INSTRUCTIONS and n_draw > n_boot > 0:  # said before the work it adds, not only in compare.md
        print(f"judge-eval compare: --n-boot {n_boot} raised to {n_draw} resamples: a call at alpha / {n_pairs} = "
              f"{pair_alpha:.3g} needs at least 2m / alpha", file=sys.stderr)
    resampled = n_rated >= MIN_INSTRUCTIONS and n_draw > 0
    if resampled:
        blocks = [stats(w) for w in instruction_weights(len(shared), n_draw, seed, key="bench/leaderboard")]
        boot_means = np.concatenate([m for m, _ in blocks])
        boot_wins = np.concatenate([w for _, w in blocks])
    order = sorted(range(k_runs), key=lambda k: (-point_means[k] if math.isfinite(point_means[k]) else math.inf, k))
    pair_list = list(combinations(order, 2))  # b below a in the table: delta = B - A, A's mean the higher
    deltas = np.array([point_means[b] - point_means[a] for a, b in pair_list])
    p_values, test = np.full(len(pair_list), np.nan), None
    if resampled:
        # The call's p: the sign-flip test over the rated instructions (``eval.ranking.permutation``); a swap moves
        # an instruction's total and count from one candidate of the pair to the other.
        rated_sums, rated_counts = sums[rated], counts[rated]

        def swapped(swaps: np.ndarray) -> np.ndarray:
            out = np.empty((len(swaps), len(pair_list)))
            for n, (a, b) in enumerate(pair_list):
                moved_sum = swaps @ (rated_sums[:, b] - rated_sums[:, a])
                moved_count = swaps @ (rated_counts[:, b] - rated_counts[:, a])
                with np.errstate(invalid="ignore", divide="ignore"):
                    mean_a = (rated_sums[:, a].sum() + moved_sum) / (rated_counts[:, a].sum() + moved_count)
                    mean_b = (rated_sums[:, b].sum() - moved_sum) / (rated_counts[:, b].sum() - moved_count)
                out[:, n] = compared_values(mean_b) - compared_values(mean_a)
            return out

        p_values, n_swaps, exact = sign_flip_p(swapped, n_rated, deltas, n_draw, seed, "bench/leaderboard/sign-flip")
        test = {"test": "paired sign-flip permutation over instructions", "exact": exact, "n_swaps": n_swaps}
    pairs, above = [], {k: set() for k in range(k_runs)}
    same, untested = {k: [] for k in range(k_runs)}, {k: [] for k in range(k_runs)}
    for (a, b), delta, p_value in zip(pair_list, deltas.tolist(), p_values.tolist()):
        low = high = math.nan
        n_resamples = 0
        if resampled:
            d = boot_means[:, b] - boot_means[:, a]
            n_resamples = int(np.isfinite(d).sum())
            low, high, _ = called_interval(d, pair_alpha)  # the interval; the p is the sign-flip test's
        why = why_no_call(delta, n_rated, n_draw, n_resamples, needed, pair_alpha, scored_by="every run",
                           non_binary=True)
        verdict = "—" if why else called_verdict(low, high, p_value, pair_alpha)
        if verdict == "B higher":
            above[a].add(b)
        elif verdict == "B lower":
            above[b].add(a)
        else:  # tested and not called: not told apart; "—": never tested, which says nothing either way
            (same if verdict == "no difference" else untested)[a].append(b)
            (same if verdict == "no difference" else untested)[b].append(a)
        x_a, x_b = per_instruction[rated, a], per_instruction[rated, b]
        head_to_head = float(np.mean((x_b > x_a) + 0.5 * (x_b == x_a))) if rated.any() else None
        pairs.append({"a": str(folders[a]), "b": str(folders[b]), "delta": finite_or_none(delta),
                      "ci": [finite_or_none(low), finite_or_none(high)], "level": 1.0 - pair_alpha,
                      "p_value": finite_or_none(p_value), "n_resamples": n_resamples,
                      "win_rate_b": head_to_head, "verdict": verdict, "why_no_call": why})
    models = []
    for k in order:
        ci = percentile_interval(boot_means[:, k], 1.0 - alpha) if resampled else [math.nan, math.nan]
        win_ci = percentile_interval(boot_wins[:, k], 1.0 - alpha) if resampled else [math.nan, math.nan]
        win_ci, win_ci_method = extreme_rate_interval_of(float(point_wins[k]), win_ci if resampled else None, n_rated,
                                                         1.0 - alpha, extreme_rate_interval)
        win_ci = win_ci or [math.nan, math.nan]
        models.append({"run": str(folders[k]), "model": infos[k].get("model", ""), "rank": 1 + len(above[k]),
                       "mean": finite_or_none(point_means[k]), "ci": [finite_or_none(v) for v in ci],
                       "win_rate": finite_or_none(point_wins[k]), "win_rate_ci": [finite_or_none(v) for v in win_ci],
                       "indistinguishable_from": [str(folders[j]) for j in order if j in same[k]],
                       "untested_with": [str(folders[j]) for j in order if j in untested[k]],
                       "n_instructions": len({it.prompt_id for it in runs_items[k]}),
                       "excluded": excluded_instructions(runs_items[k], scored_ids[k], set(shared), gate_partial),
                       **unjudged_answers(runs_items[k]),
                       "judge_differences": differences[k],
                       **({"win_rate_ci_method": win_ci_method} if win_ci_method else {})})
    return {"kind": "leaderboard", "models": models, "pairs": pairs, "n_instructions": len(shared),
            "n_rated_instructions": n_rated, "n_items": len(paired), "n_boot": n_draw if resampled else 0,
            "n_boot_asked": n_boot, "call_test": test,
            "why_no_interval": None if resampled else _why_no_interval(n_rated, n_boot),
            "seed": seed, "alpha": alpha, "pair_level": 1.0 - pair_alpha, "n_pairs": n_pairs,
            "percentile_method": PERCENTILE_METHOD, "extreme_rate_interval": extreme_rate_interval,
            "judge": infos[0].get("judge", ""), "judge_pairs": judge_pairs, "normalize": normalize, **settings}


def _why_no_interval(instructions: int, n_boot: int) -> str:
    from eval.ranking.matrix import MIN_INSTRUCTIONS

    if instructions < MIN_INSTRUCTIONS:
        return (f"the runs share {instructions} instruction{'s' * (instructions != 1)} with a non-binary score every "
                f"one scored; an interval needs at least {MIN_INSTRUCTIONS}")
    return "no resamples (--n-boot 0)"


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(ci: list[Any]) -> str:
    return "—" if None in ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _win_rate_note(model: dict[str, Any]) -> str:
    """A win rate of 0 or 1: its interval is exact binomial, or the bootstrap's of zero width (which says no more
    than that every rated instruction gave that rate: ``eval.scoring.interval_options``); else ""."""
    from eval.scoring.interval_options import zero_width_at_bound

    rate = model["win_rate"]
    if model.get("win_rate_ci_method") == "clopper-pearson":
        return (f"win rate {rate:g} on every rated instruction; its interval is the exact binomial (Clopper-Pearson) "
                "one over those instructions (--extreme-rate-interval clopper-pearson).")
    if zero_width_at_bound(rate, model["win_rate_ci"]):
        return (f"win rate {rate:g} on every rated instruction, and so in every resample: the interval "
                f"[{rate:g}, {rate:g}] has zero width whatever the number of instructions, which is no certainty "
                "(--extreme-rate-interval clopper-pearson gives the exact binomial interval).")
    return ""


def _excluded_line(model: dict[str, Any]) -> str:
    from eval.ranking.report import EXCLUDED

    excluded = model["excluded"]
    reasons = [f"{EXCLUDED[why].format(other='another run', gate_by='some runs')}: {len(ids)}"
               for why, ids in excluded.items() if why != "n" and ids]
    return f"{excluded['n']} of {model['n_instructions']}" + (f" ({'; '.join(reasons)})" if reasons else "")


def _lines(result: dict[str, Any], esc: Any, chars: int) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """The summary sentences, the leaderboard's rows and the pairs' rows; ``esc`` makes what the runs name (models,
    folders, the judge) inert for the page being written (Markdown or HTML), each cut to ``chars`` characters first
    (``shown_names``: a model named by its checkpoint's path is written in every row that names its candidate), its
    folder, at the end, kept."""
    from eval.ranking.compare import judge_note_lines
    from eval.ranking.report import sign_flip_p_text, unjudged_answer_lines, why_not_called
    from eval.reports.names import page_name, shown_names

    shown = shown_names(_labels(result).values(), chars)
    raw = {run: shown[label] for run, label in _labels(result).items()}
    names = {run: esc(label) for run, label in raw.items()}
    asked = result.get("n_boot_asked", result["n_boot"])  # a result before resamples were raised: as asked
    raised = (f" (--n-boot {asked} raised to the {result['n_boot']} a call at alpha / {result['n_pairs']} needs)"
              if result["n_boot"] and asked != result["n_boot"] else "")
    intervals = (f"{result['n_boot']} paired resamples over instructions{raised} (seed {result['seed']}): each "
                 f"candidate's {100 * (1 - result['alpha']):g}% interval, and each pair's at "
                 f"{100 * result['pair_level']:.4g}% (alpha {result['alpha']:g} shared by the {result['n_pairs']} "
                 "pairs, Bonferroni)" if result["n_boot"] else f"no intervals: {result['why_no_interval']}")
    test = result.get("call_test")
    if test:
        swaps = f"exact, all {test['n_swaps']} swaps" if test["exact"] else f"{test['n_swaps']} drawn swaps"
        intervals += (f"; a pair is called when its paired sign-flip test's p is below alpha / {result['n_pairs']} "
                      f"({swaps}) and its interval excludes 0 on the same side")
    judge = esc(page_name(result["judge"], chars))
    summary = [f"{len(result['models'])} candidates on {result['n_instructions']} instructions with an item every run "
               f"scored ({result['n_items']} items; {result['n_rated_instructions']} with a non-binary score, the win "
               f"rates' instructions); judge {judge}; normalisation {result['normalize']}; {intervals}.",
               "Rank: 1 + the candidates called above. The table is in order of mean and a rank counts calls "
               "alone, so a candidate whose pairs are less certain can hold a better rank than one listed above it "
               "(a call needs the pair's sign-flip p below alpha / m, and a pair that moves on few instructions, or "
               "by little, may not reach it). 'Not distinguishable from' names the candidates a pair was "
               "tested against and not called: not told apart by these instructions. 'Not tested against' names "
               "those a pair could not be tested against (its 'why no call' says why): a shared rank then says "
               "nothing either way.",
               *_out_of_order_lines(result["models"], names),
               "Left out per run (instructions): " + "; ".join(f"{names[m['run']]} {_excluded_line(m)}"
                                                               for m in result["models"]) + ".",
               # Escaped whole, as two-run compare writes them: their prompt_ids are the data's text too.
               *map(esc, unjudged_answer_lines(result, [(raw[m["run"]], m) for m in result["models"]]))]
    summary += [names[m["run"]] + ": " + esc(note) for m in result["models"] if (note := _win_rate_note(m))]
    for pair in result.get("judge_pairs", ()):  # a result before every pair was checked: none
        both = f"{raw[pair['a']]} and {raw[pair['b']]}: "
        if pair["differences"]:
            said = "; ".join(f"{n} {a!r} vs {b!r}" for n, (a, b) in pair["differences"].items())
            summary.append(esc(f"Judged differently (compared with --allow-other-judge): {both}{said}."))
        summary += [esc(line) for line in judge_note_lines(pair["notes"], prefix=both)]
    board = [[str(m["rank"]), names[m["run"]], _num(m["mean"]), _interval(m["ci"]), _num(m["win_rate"]),
              _interval(m["win_rate_ci"]), ", ".join(names[r] for r in m["indistinguishable_from"]) or "—",
              ", ".join(names[r] for r in m.get("untested_with", ())) or "—"]
             for m in result["models"]]
    n_pairs = result.get("n_pairs", len(result["models"]) * (len(result["models"]) - 1) // 2)
    pair_alpha = result["alpha"] / n_pairs

    def why(pair: dict[str, Any]) -> str:
        """Untested: the result's reason; tested and not called: the p or the interval that kept it from a call."""
        if pair["why_no_call"] or pair["verdict"] != "no difference":
            return esc(pair["why_no_call"] or "")
        return esc(why_not_called(*pair["ci"], pair.get("p_value"), pair_alpha, f"alpha/{n_pairs}"))

    pairs = [[names[p["a"]], names[p["b"]], f"{p['delta']:+.3f}" if p["delta"] is not None else "—",
              _interval(p["ci"]), sign_flip_p_text(p.get("p_value")), _num(p["win_rate_b"]), p["verdict"], why(p)]
             for p in result["pairs"]]
    return summary, board, pairs


def _out_of_order_lines(models: list[dict[str, Any]], names: dict[str, str]) -> list[str]:
    """One sentence naming each candidate whose rank is better than that of a candidate listed above it (the
    table's order is by mean, a rank counts calls: module docstring), and those candidates; none when the ranks
    follow the table."""
    said = []
    for k, model in enumerate(models):
        higher = [m for m in models[:k] if m["rank"] > model["rank"]]
        if higher:
            said.append(f"{names[model['run']]} (rank {model['rank']}) below "
                        + ", ".join(f"{names[m['run']]} (rank {m['rank']})" for m in higher))
    if not said:
        return []
    return ["Ranks out of the table's order: " + "; ".join(said) + ". Each of these has fewer candidates called "
            "above it than one listed over it, though its mean is lower: its pairs with the candidates above are "
            "less certain (the pairs table gives each pair's p and why it was not called)."]


def _labels(result: dict[str, Any]) -> dict[str, str]:
    """Each candidate's run folder and its label, whole: its model, then its folder in brackets."""
    return {m["run"]: f"{m['model']} ({m['run']})" for m in result["models"]}


def _names_cut(result: dict[str, Any]) -> list[tuple[str, str]]:
    """compare.md's cut names (``_lines`` at ``MD_RUN_NAME_CHARS``), each as shown and whole: the candidates', then
    the judge's."""
    from eval.reports.names import one_line, page_name, shown_names
    from eval.reports.report import md_text
    from eval.scoring.compare import MD_RUN_NAME_CHARS, md_run_name

    labels = list(_labels(result).values())
    shown = shown_names(labels, MD_RUN_NAME_CHARS)
    cut = [(md_text(shown[label]), label) for label in labels if shown[label] != one_line(label)]
    judge = result["judge"]
    return cut + ([(f"judge {md_run_name(judge)}", judge)] if page_name(judge, MD_RUN_NAME_CHARS) != one_line(judge)
                  else [])


BOARD_HEADER = ["rank", "candidate (run)", "mean", "interval", "win rate", "interval", "not distinguishable from",
                "not tested against"]
PAIRS_HEADER = ["A", "B", "B − A", "interval", "sign-flip p", "B's win rate over A", "call", "why no call"]


def render_leaderboard_markdown(result: dict[str, Any]) -> str:
    """compare.md of a leaderboard: the summary, the board, then every pair."""
    from eval.reports.report import markdown_table, md_text
    from eval.scoring.compare import MD_RUN_NAME_CHARS, names_in_full

    summary, board, pairs = _lines(result, md_text, MD_RUN_NAME_CHARS)
    return "\n".join(["# Leaderboard: POLLUX matrix corner, paired over instructions", "",
                      *(line + "\n" for line in summary), markdown_table(BOARD_HEADER, board), "",
                      *names_in_full(_names_cut(result), "Names"), "## Pairs", "", markdown_table(PAIRS_HEADER, pairs)])


def render_leaderboard_page(result: dict[str, Any]) -> str:
    """compare.html of a leaderboard: the same tables as compare.md."""
    from eval.ranking.report import html_page
    from eval.reports.html_text import escape
    from eval.reports.names import NAME_CHARS

    summary, board, pairs = _lines(result, escape, NAME_CHARS)

    def table(header: list[str], rows: list[list[str]]) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)  # escaped
        return (f'<div class="scroll"><table class="grid"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
                "</table></div>")

    return html_page("judge-eval compare: leaderboard of ranking runs", summary,
                 ["<h2>Leaderboard</h2>", table(BOARD_HEADER, board), "<h2>Pairs</h2>", table(PAIRS_HEADER, pairs)])


def leaderboard_command(args: Any) -> int:
    """``judge-eval compare`` of K >= 3 rank runs (``eval.cli``): compare.json, compare.md, compare.html in
    ``--out``, else compare.md on stdout."""
    from eval.ranking.report import unjudged_answer_lines, write_ranking_compare
    from eval.reports.names import shown_names
    from eval.scoring.compare import console_name
    from eval.scoring.interval_options import extreme_rate_choice

    result = leaderboard(args.runs, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha,
                         allow_other_judge=args.allow_other_judge,
                         extreme_rate_interval=extreme_rate_choice(args, applies=True))
    markdown = render_leaderboard_markdown(result)
    if not args.out:
        print(markdown)
        return 0
    written = write_ranking_compare(args.out, result, markdown, render_leaderboard_page(result))
    # A model's name as judge-eval compare prints a run's: an escape sequence or line break in it shown, not acted on,
    # and two labels cut alike told apart by the mark compare.md and compare.html give them.
    labels = _labels(result)
    shown = shown_names(labels.values(), as_text=console_name)
    named = [(shown[labels[m["run"]]], m) for m in result["models"]]
    print("\n".join([*(f"{m['rank']}. {name}: {_num(m['mean'])} {_interval(m['ci'])}" for name, m in named),
                      *unjudged_answer_lines(result, named), *written]))
    return 0
