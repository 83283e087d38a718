"""Agreement: Krippendorff's alpha of the experts with and without the judge, quadratic-weighted kappa against the
experts' mode, and agreement split by how much the experts agreed.

Libraries, and their pitfalls (each pinned by a test):

- Krippendorff's alpha as the ``krippendorff`` package defines it, ``krippendorff.alpha(value_counts=...,
  value_domain=..., level_of_measurement="ordinal")`` — its default level is ``interval`` — and ``value_domain`` the
  rubric's full scale: its default is the values observed. (An unused level changes nothing for ordinal alpha, whose
  distance between two levels sums the counts of the values between them, an unused one adding 0; ``value_domain``
  fixes which columns a table of value counts stands for, and the interval level's distances.) Items enter as value
  counts (per item, how many raters gave each level), which needs no rater identities. The section computes the package's value from the
  coincidence matrices of each distinct row of counts (``CodedCounts``: every cell and every bootstrap resample of
  the full test in a few array products, where a call of the package per cell and per resample cost far more: the
  figure is in docs/performance.md, under "The validity section of judge-eval score");
  tests pin it equal to the package on random tables, per resample, with unused levels and levels outside a cell.
  A domain's coincidences hold only the rows that pair on it, and a domain of more than ``DENSE_LEVELS`` levels (a
  cell pooling criteria whose scales lie far apart) takes the same value from the levels' midranks
  (``CodedCounts.alphas``), whose arrays grow with the levels rather than their square.
  An expert score that is no level of the value domain (a half-point, 0.5 on a 0-2 rubric, or a score off the
  rubric, both of which the loader keeps with a warning) is left out of both alphas, as the value counts over the
  domain cannot hold it (the package refuses such a value in ``reliability_data``: "out-of-domain values"), and
  counted in ``n_expert_scores_off_domain``. The domain is not extended by such values: it is also kappa's, whose
  quadratic weights count positions, and a 0.5 level would make 0-1 two steps and 1-2 one.
- quadratic-weighted Cohen's kappa over the full scale: ``sklearn.metrics.cohen_kappa_score`` needs
  ``weights="quadratic"`` and ``labels`` the full scale (without ``labels`` only the levels that occur index the
  weight matrix, so a scale 0-4 used only at 0, 2, 4 would weigh 0 vs 4 as two steps, not four). The section calls
  kappa several hundred times on the full test, so it computes the same value with statsmodels'
  ``cohens_kappa(table, wt="quadratic")`` on the rater x rater table over the full scale (without sklearn's input
  checks on every call); a test pins the two equal.

Both alphas are over the same items, those with at least two expert scores on the value domain
(``n_items_alpha``): the experts' alpha can take no other, and with the judge as a rater an item of one expert would
pair too, so that the difference compared alphas of different items (2 items two experts scored beside 198 of one
expert read "the judge raises agreement by 1.17", the 198 items' agreement with the judge, not what the judge adds
to the panel). ``alpha_with_judge`` adds the judge as one more rater on those of them it scored (its score as the
scale level it
rounds to, half up, never clipped into the scale: a level off the item's scale is no rating of it and is left out,
``off_scale``): over the judge's readable verdicts only, because a failed verdict (an
unparseable answer, a failed request) is no rating of the scale and alpha has no way to count it — unlike the
alt-test and the experts' ceiling, which count a failure against the judge by default. ``n_items_judge_failed`` says
how many items of the cell that leaves the judge out of; a cell with no readable verdict on the scale among those
items has no ``alpha_with_judge`` (None, as the difference and its interval: it would be the experts' alpha again);
``alpha_difference`` = with minus without, with a percentile bootstrap interval over the same items, capped at
``ALPHA_BOOT`` resamples
of at most ``ALPHA_BOOT_ITEMS`` items each. A resample whose alpha of the experts or with the judge is undefined (all
of its values on one level: no disagreement to measure) is unusable; ``alpha_boot.n_resamples`` counts the usable ones, and where they are
fewer than ``MIN_USABLE_SHARE`` of those drawn there is no interval: one read off the rest is the spread of the
resamples that happened to draw those items (``usable_interval``, the rule of ``judge-eval compare``'s paired
intervals too). A cell with more items gets an m-out-of-n bootstrap (Bickel, Götze
and van Zwet, Statistica Sinica 7, 1997): each resample draws m = ``ALPHA_BOOT_ITEMS`` of its n items, because
a resample's alpha needs its items drawn one by one (100 x 160,000 draws on the full test, where 100 x 1,000 cost
next to nothing). A statistic of m items spreads sqrt(n/m) times as widely as one of n (alpha is a
smooth function of the items' coincidence sums), so each resample's deviation from the full cell's difference is
shrunk by sqrt(m/n) before the percentile interval is read: ``d + sqrt(m/n) (d*_m - d)``. Unscaled, the interval
of a 20,000-item cell was ~5 times as wide as the full bootstrap's. Under ``--bootstrap-unit instruction`` the interval
is a full cluster bootstrap instead: each resample draws as many whole instructions as the cell has, as weights
over the distinct rows of counts, so no m-out-of-n and no rescaling.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judge.scales import MAX_LEVELS

__all__ = ["ALPHA_BOOT", "ALPHA_BOOT_ITEMS", "DENSE_LEVELS", "MIN_USABLE_SHARE", "CodedCounts", "agreement",
           "class_codes", "level_positions", "quadratic_kappa", "table_kappa", "usable_interval",
           "value_counts"]

#: The widest value domain whose alphas ``CodedCounts`` computes from a levels x levels coincidence table per
#: distinct row of value counts (``judge.scales.MAX_LEVELS``, the widest rubric): a cell pooling scales that lie far
#: apart has a domain of their levels together, and takes the midrank form, whose arrays grow with the levels, not
#: their square (``CodedCounts.alphas``).
DENSE_LEVELS = MAX_LEVELS
#: Resamples of the alpha difference's bootstrap interval.
ALPHA_BOOT = 100
#: At most this many items per resample (see the module docstring).
ALPHA_BOOT_ITEMS = 1000
#: How much the experts of an item agreed: all the same, a unique mode, or no unique mode.
CLASSES = ("unanimous", "majority", "split")
#: The share of the drawn resamples that must be usable (their statistic defined) for an interval: the alpha
#: difference's here, and ``judge-eval compare``'s paired ones (``eval.validity.paired``).
MIN_USABLE_SHARE = 0.9


def usable_interval(samples: list[np.ndarray], level: float) -> tuple[list, int | None]:
    """The percentile interval of the usable resamples (finite), and how many those are (None: none drawn);
    no interval where they are fewer than ``MIN_USABLE_SHARE`` of those drawn (the module docstring; ``judge-eval
    compare``'s paired intervals, ``eval.validity.paired``, read theirs by the same rule)."""
    from eval.scoring.bootstrap import percentile_interval

    if not samples:
        return [None, None], None
    values = np.concatenate(samples)
    usable = int(np.isfinite(values).sum())
    if not usable or usable < MIN_USABLE_SHARE * len(values):
        return [None, None], usable
    return percentile_interval(values, level), usable


def value_counts(scores: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """``(n, len(domain))``: per item, how many of its (NaN-padded) scores equal each level of ``domain``."""
    scores = np.atleast_2d(scores)
    return (scores[:, :, None] == np.asarray(domain, dtype=float)[None, None, :]).sum(axis=1).astype(float)


def level_positions(values: np.ndarray, domain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's position in ``domain`` (ascending) and whether it is one of its levels (NaN is not).

    A domain of consecutive integers (every rubric's) is indexed by subtraction, not by a binary search per value.
    """
    values = np.asarray(values, dtype=float)
    domain = np.asarray(domain, dtype=float)
    if len(domain) and np.array_equal(domain, domain[0] + np.arange(len(domain))):
        with np.errstate(invalid="ignore"):
            shifted = values - domain[0]
            inside = (shifted >= 0) & (shifted < len(domain)) & (shifted == np.floor(shifted))
        return np.where(inside, shifted, 0).astype(np.intp), inside
    position = np.searchsorted(domain, values)
    inside = position < len(domain)
    inside[inside] = domain[position[inside]] == values[inside]
    return np.where(inside, position, 0), inside


def quadratic_kappa(a: np.ndarray, b: np.ndarray, domain: np.ndarray) -> float | None:
    """Quadratic-weighted Cohen's kappa of two raters over the full scale ``domain`` (None when undefined).

    Pairs with a value outside ``domain`` are left out (as sklearn does with ``labels``); the a x b table spans every
    level of ``domain``, used or not, and the weights are squared differences of positions (the levels are
    consecutive integers). Equal to ``sklearn.metrics.cohen_kappa_score(a, b, weights="quadratic", labels=domain)``.
    """
    domain = np.asarray(domain, dtype=float)
    (i, in_a), (j, in_b) = level_positions(a, domain), level_positions(b, domain)
    inside = in_a & in_b
    size = len(domain)
    return table_kappa(np.bincount(i[inside] * size + j[inside], minlength=size * size).reshape(size, size))


def table_kappa(table: np.ndarray) -> float | None:
    """``quadratic_kappa`` from the two raters' table over the full scale (rows: the first rater's levels)."""
    from statsmodels.stats.inter_rater import cohens_kappa

    if len(table) < 2 or not table.sum():
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        value = cohens_kappa(np.asarray(table, dtype=float), wt="quadratic", return_results=False)
    return float(value) if np.isfinite(value) else None


class CodedCounts:
    """Value counts of many items over ``values``, each distinct row numbered once.

    Krippendorff's coincidence matrix is a sum over items of ``(n n' - diag(n)) / (m - 1)`` (``n`` an item's value
    counts over the value domain, ``m`` their sum; the ``krippendorff`` package's ``_coincidences``), so items with
    the same counts contribute the same matrix: a set of items needs only how many of them have each distinct row.
    A cell whose value domain is a subset of ``values`` takes the rows' columns of its domain, as
    ``value_counts(scores, domain)`` would count them. The full test's items have a few hundred distinct rows.

    Attributes:
        values: the levels counted (ascending).
        rows: ``(p, len(values))`` the distinct rows.
        codes: ``(n,)`` each item's row.
    """

    def __init__(self, counts: np.ndarray, values: np.ndarray):
        counts = np.asarray(counts, dtype=float)
        self.values = np.asarray(values, dtype=float)
        whole = counts.astype(np.int64)
        base = int(whole.max(initial=0)) + 1
        if np.array_equal(whole, counts) and counts.shape[1] * np.log2(base) < 62:  # a row as one integer: 1-D
            _, first, inverse = np.unique(whole @ base ** np.arange(counts.shape[1], dtype=np.int64),
                                          return_index=True, return_inverse=True)
            self.rows = counts[first]
        else:
            self.rows, inverse = np.unique(counts, axis=0, return_inverse=True)
        self.codes = inverse.reshape(-1)
        # per domain (its bytes): ``_coincidences``' (m, paired rows, coincidences) and ``_level_pairs``' arrays
        self._coincidences_by_domain: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._level_pairs_by_domain: dict[bytes, tuple[np.ndarray, ...]] = {}

    def draws(self, items: np.ndarray) -> np.ndarray:
        """``(b, p)``: how many of each row of ``items`` (``(m,)`` or ``(b, m)`` item indices) has."""
        items = np.atleast_2d(items)
        p = len(self.rows)
        return np.bincount((self.codes[items] + p * np.arange(len(items))[:, None]).ravel(),
                           minlength=len(items) * p).reshape(len(items), p).astype(float)

    def alphas(self, draws: np.ndarray, domain: np.ndarray) -> np.ndarray:
        """Ordinal alpha over ``domain`` (a subset of ``values``) of each row of ``draws`` (NaN where undefined).

        ``krippendorff.alpha(value_counts=..., value_domain=domain, level_of_measurement="ordinal")`` of the items
        ``draws`` counts (a test pins them equal): the coincidences summed per distinct row, then the package's
        expected coincidences and ordinal distances from their margins. A domain of more than ``DENSE_LEVELS``
        levels (a cell pooling criteria whose scales lie far apart) takes ``_midrank_alphas``: the same value from
        arrays of the rows and their level pairs, where a levels x levels table per distinct row and per draw grows
        with the square of the domain.
        """
        domain = np.asarray(domain, dtype=float)
        size, n = len(domain), len(draws)
        if not len(self.rows) or size < 2:
            return np.full(n, np.nan)
        if size > DENSE_LEVELS:
            return self._midrank_alphas(draws, domain)
        m, paired, per_row = self._coincidences(domain)
        eye = np.eye(size)
        o = (draws[:, paired] @ per_row).reshape(n, size, size)
        n_v = o.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * eye) / (n_v.sum(axis=1) - 1)[:, None, None]
            # the ordinal metric: (the counts of the levels from c to k, less half of c's and k's) squared
            cumulative = np.concatenate([np.zeros((n, 1)), np.cumsum(n_v, axis=1)], axis=1)
            level = np.arange(size)
            low, high = np.minimum(level[:, None], level[None, :]), np.maximum(level[:, None], level[None, :])
            d = (cumulative[:, high + 1] - cumulative[:, low] - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
            alphas = 1 - (o * d).sum(axis=(1, 2)) / (e * d).sum(axis=(1, 2))
        pairable = draws[:, m > 1].sum(axis=1) > 0  # the package refuses a set with no item rated twice (its m > 1)
        return np.where(pairable & np.isfinite(alphas), alphas, np.nan)

    def _midrank_alphas(self, draws: np.ndarray, domain: np.ndarray) -> np.ndarray:
        """``alphas`` without a levels x levels array: the ordinal distance of levels c < k, the counts from c to k
        less half of c's and k's, is ``t_k - t_c`` with ``t`` each level's midrank (the counts below it plus half its
        own), so the expected disagreement is ``2 N sum n (t - mean t)^2 / (N - 1)`` over the margins ``n`` (``N``
        their sum), and the observed one sums, per distinct row, ``2 n_c n_k (t_k - t_c)^2 / (m - 1)`` over the pairs
        of its levels (a row holds at most one level per score). Memory: draws x (levels + level pairs of the rows)."""
        m, margins, pair_row, low, high, weight = self._level_pairs(domain)
        n_v = draws @ margins
        total = n_v.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            midrank = np.cumsum(n_v, axis=1) - n_v / 2
            centre = (n_v * midrank).sum(axis=1) / total
            spread = (n_v * (midrank - centre[:, None]) ** 2).sum(axis=1)
            # one level used: no disagreement to expect, 0 (the dense path's) rather than the rounding of the centre
            expected = np.where((n_v != 0).sum(axis=1) >= 2, 2 * total * spread / (total - 1), 0.0)
            observed = (draws[:, pair_row] * weight * (midrank[:, high] - midrank[:, low]) ** 2).sum(axis=1)
            alphas = 1 - observed / expected
        pairable = draws[:, m > 1].sum(axis=1) > 0
        return np.where(pairable & np.isfinite(alphas), alphas, np.nan)

    def _level_pairs(self, domain: np.ndarray) -> tuple[np.ndarray, ...]:
        """``_midrank_alphas``' per-row arrays over ``domain``, once per domain: each distinct row's number of values
        in it, its coincidences' margins ``(p, len(domain))`` (``n (m - 1) / (max(m, 2) - 1)``: its counts where it
        pairs, 0 for one value), and each pair of two levels of one row: the row, the lower and higher level's
        position, and ``2 n_c n_k / (max(m, 2) - 1)``."""
        key = domain.tobytes()
        if key not in self._level_pairs_by_domain:
            rows = self.rows[:, np.searchsorted(self.values, domain)]
            m = rows.sum(axis=1)
            row, level = np.nonzero(rows)  # row-major: a row's levels ascending, side by side
            found = [[], [], []]
            for step in range(1, int(np.bincount(row, minlength=1).max(initial=0))):
                same = np.flatnonzero(row[step:] == row[:-step])
                for into, part in zip(found, (row[same], level[same], level[same + step])):
                    into.append(part)
            pair_row, low, high = (np.concatenate(part).astype(np.intp) if part else np.zeros(0, dtype=np.intp)
                                   for part in found)
            weight = 2 * rows[pair_row, low] * rows[pair_row, high] / (np.maximum(m[pair_row], 2) - 1)
            margins = rows * ((m - 1) / (np.maximum(m, 2) - 1))[:, None]  # the coincidences' sums: n (m - 1) / (m - 1)
            self._level_pairs_by_domain[key] = (m, margins, pair_row, low, high, weight)
        return self._level_pairs_by_domain[key]

    def _coincidences(self, domain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each distinct row's number of values in ``domain``, the rows that pair there (two values or more: a row of
        one value has no coincidences) and their coincidences, ``(paired rows, size * size)``: once per domain (the
        cells of one scale share it; the section asks for every cell's alphas). Only the paired rows, as each
        criterion of a table has a domain of its own, which the other criteria's rows have no value in: over every
        row, the domains kept would grow with the criteria times the table's rows."""
        key = domain.tobytes()
        if key not in self._coincidences_by_domain:
            rows = self.rows[:, np.searchsorted(self.values, domain)]
            m = rows.sum(axis=1)
            paired = np.flatnonzero(_coincide(rows))
            rows = rows[paired]
            eye = np.eye(len(domain))
            scale = (np.maximum(m[paired], 2) - 1)[:, None, None]
            per_row = (rows[:, :, None] * rows[:, None, :] - rows[:, :, None] * eye) / scale
            self._coincidences_by_domain[key] = (m, paired, per_row.reshape(len(rows), len(domain) ** 2))
        return self._coincidences_by_domain[key]

    def pairable(self, domain: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Whether each of ``items`` has at least 2 values in ``domain``."""
        return self.in_domain(domain, items) >= 2

    def in_domain(self, domain: np.ndarray, items: np.ndarray) -> np.ndarray:
        """How many values in ``domain`` each of ``items`` has (those alpha over ``domain`` counts)."""
        domain = np.asarray(domain, dtype=float)
        m = (self._coincidences(domain) if len(domain) <= DENSE_LEVELS else self._level_pairs(domain))[0]
        return m[self.codes[items]]


def _coincide(rows: np.ndarray) -> np.ndarray:
    """Which rows of value counts have coincidences (``n n' - diag(n)`` not all 0): two levels, or a count other than
    0 and 1 (a whole row with one value has none; a weighted one, 1.5, has)."""
    return ((rows != 0).sum(axis=1) >= 2) | (rows * rows != rows).any(axis=1)


def _coded_alpha(coded: CodedCounts, items: np.ndarray, domain: np.ndarray) -> float | None:
    value = coded.alphas(coded.draws(items), domain)[0]
    return float(value) if np.isfinite(value) else None


def class_codes(experts: np.ndarray, unique: np.ndarray | None = None) -> np.ndarray:
    """Per item, the position in ``CLASSES`` of how its experts agree: "unanimous", "majority" or "split" (no unique
    mode); -1 for an item with fewer than 2 experts. ``unique``: the items with a unique mode
    (``eval.scoring.metrics.expert_mode``'s second value) when the caller has it."""
    from eval.scoring.metrics import expert_mode

    valid = ~np.isnan(experts)
    n = valid.sum(axis=1)
    low = np.where(valid, experts, np.inf).min(axis=1)
    high = np.where(valid, experts, -np.inf).max(axis=1)
    unique = expert_mode(experts)[1] if unique is None else unique
    return np.where(n < 2, -1, np.where(low == high, 0, np.where(unique, 1, 2))).astype(np.int8)


def agreement(judge_levels: np.ndarray, experts: np.ndarray, mode: np.ndarray, domain: np.ndarray, *,
              off_scale: np.ndarray | None = None, classes: np.ndarray | None = None, n_boot: int = ALPHA_BOOT,
              rng: np.random.Generator | None = None,
              level: float = 0.95, coded: tuple[CodedCounts, CodedCounts, np.ndarray] | None = None,
              mean: np.ndarray | None = None, clusters: np.ndarray | None = None,
              n_expert_scores: np.ndarray | None = None, judge_scores: np.ndarray | None = None) -> dict[str, Any]:
    """Agreement figures of one cell.

    Args:
        judge_levels: ``(n,)`` the judge's scores as levels of the item's scale (NaN: no score, or one off the
            scale).
        off_scale: ``(n,)`` the levels the judge's scores round to where they lie off the item's scale (NaN
            elsewhere; ``eval.validity.section.off_scale_levels``; None: none). No rating of the scale, so out of
            alpha with the judge and kappa (counted in ``n_kappa_off_domain`` where the item has a unique mode); a
            miss in ``exact`` (a 5 on a 0-2 scale is no 2) and in ``mae_to_mean`` at their distance (the score's, given
            ``judge_scores``); not failures.
        experts: ``(n, k)`` NaN-padded expert scores.
        mode: ``(n,)`` the experts' unique mode (NaN where none).
        domain: the rubric's full scale, ascending.
        classes: ``class_codes(experts)`` when the caller has them.
        n_boot: resamples of the alpha difference's interval (0: none).
        rng: the bootstrap's generator.
        level: the interval's coverage.
        coded: ``(experts, with_judge, items)`` when the caller has the value counts of a whole table coded
            (``CodedCounts`` of the experts' and of the experts' plus the judge's, over a superset of ``domain``)
            and ``items`` the cell's rows of it (the section codes every item once).
        mean: ``(n,)`` the experts' mean per item, when the caller has it.
        clusters: ``(n,)`` the unit the alpha difference's interval resamples whole (``--bootstrap-unit
            instruction``); None: items. A cluster resample draws as many clusters as the cell has, with replacement
            (``eval.scoring.bootstrap.cluster_resample_weights``), each drawn cluster bringing all its items: no
            m-out-of-n there, the resample's value counts are weights over the distinct rows, not drawn item by item.
        n_expert_scores: ``(n,)`` how many expert scores each item has, when the caller has them (None: counted from
            ``experts``; without either, ``n_expert_scores_off_domain`` is None).
        judge_scores: ``(n,)`` the judge's scores themselves (a regression head's raw value, not the level it rounds
            to), for ``mae_to_mean``: a head answering 1.667 where the experts' mean is 1.667 is 0 from it, not the
            0.33 of its level 2. None: the levels (``judge_levels``, ``off_scale``), as for a text verdict.

    Returns:
        ``n_items_alpha`` (the items both alphas are over: two expert scores or more on ``domain``),
        ``alpha_experts``, ``alpha_with_judge``, ``alpha_difference`` with ``alpha_difference_ci`` and ``alpha_boot``
        (``resamples`` drawn, ``n_resamples`` usable, ``items_per_resample``; ``clusters_per_resample``),
        ``kappa_quadratic`` (judge vs the experts' unique mode, over the ``n_kappa`` items whose judge level and mode
        are both levels of ``domain``), ``by_expert_agreement`` {unanimous, majority, split} -> ``n``, ``n_judged``,
        ``exact`` (the judge's share equal to the unique mode, its level against the mode; None for split items),
        ``mae_to_mean`` (its score against the experts' mean, ``judge_scores``), ``n_items_judge_failed`` (items the judge failed on: out of alpha with the judge, kappa
        and the classes' judged figures) and ``n_kappa_off_domain`` (items with both a judge answer and a mode, one
        of them off ``domain`` or the judge's off its item's scale (``off_scale``), e.g. a mode of 0.5 between two
        levels: left out of kappa, as sklearn's ``labels`` leaves them, and counted here rather than lost),
        ``n_items_no_mode`` (items with a judge answer and no unique mode: left out of kappa) and
        ``n_items_judge_off_scale`` (items whose judge answer lies off the item's scale, ``off_scale``: left out of
        alpha with the judge and kappa, unique mode or not) and ``n_expert_scores_off_domain`` (expert scores that
        are no level of ``domain``, a half-point or an off-rubric score: left out of both alphas, module docstring);
        ``n_alpha_items_judge_failed`` and ``n_alpha_items_judge_off_scale``: those of the ``n_items_alpha`` items,
        the ones alpha with the judge left the judge out of.
    """
    from eval.scoring.bootstrap import cluster_resample_weights
    from eval.scoring.metrics import expert_mean

    domain = np.asarray(domain, dtype=float)
    judged = np.isfinite(judge_levels)
    off = np.zeros(len(judged), dtype=bool) if off_scale is None else np.isfinite(off_scale)
    answered = judged | off  # the rest are the judge's failures
    answer = judge_levels if off_scale is None else np.where(off, off_scale, judge_levels)
    measured = answer if judge_scores is None else np.asarray(judge_scores, dtype=float)  # the MAE's: the score
    if coded is None:  # this cell's own counts, coded
        expert_counts = value_counts(experts, domain)
        with_judge = expert_counts + value_counts(judge_levels[:, None], domain)
        coded = (CodedCounts(expert_counts, domain), CodedCounts(with_judge, domain), np.arange(len(experts)))
    coded_experts, coded_with, items = coded
    # Without one readable verdict on the scale among the alphas' items the judge adds no rating: "alpha with the
    # judge" would be the experts' alpha again and the difference a 0 that reads as the judge agreeing as well.
    # Both alphas over the same items, those two experts scored on the domain (module docstring): with the judge,
    # an item of one expert would pair too, and the difference compared alphas of different items.
    usable = np.flatnonzero(coded_experts.pairable(domain, items))
    out: dict[str, Any] = {"value_domain": domain.tolist(), "n_items_alpha": int(len(usable)),
                           "alpha_experts": _coded_alpha(coded_experts, items, domain),
                           "alpha_with_judge": (_coded_alpha(coded_with, items[usable], domain)
                                                if judged[usable].any() else None)}
    both = out["alpha_experts"] is not None and out["alpha_with_judge"] is not None
    out["alpha_difference"] = out["alpha_with_judge"] - out["alpha_experts"] if both else None
    interval = [None, None]
    boot = {"resamples": n_boot, "items_per_resample": int(min(len(usable), ALPHA_BOOT_ITEMS))}
    if both and n_boot > 0 and clusters is not None:
        boot = {"resamples": n_boot, "items_per_resample": int(len(usable)),
                "clusters_per_resample": int(len(np.unique(clusters[usable])))}
        if boot["clusters_per_resample"] >= 2:  # one cluster redrawn is always the same items: no interval
            # Both codings' rows of each item, paired: the resample's weights over the distinct pairs give both
            # alphas of the same draw.
            with_rows, expert_rows = coded_with.codes[items[usable]], coded_experts.codes[items[usable]]
            pair, cell_of_item = np.unique(with_rows * len(coded_experts.rows) + expert_rows, return_inverse=True)
            to_with = np.zeros((len(pair), len(coded_with.rows)))
            to_with[np.arange(len(pair)), pair // len(coded_experts.rows)] = 1.0
            to_experts = np.zeros((len(pair), len(coded_experts.rows)))
            to_experts[np.arange(len(pair)), pair % len(coded_experts.rows)] = 1.0
            samples = np.concatenate([
                coded_with.alphas(w @ to_with, domain) - coded_experts.alphas(w @ to_experts, domain)
                for w in cluster_resample_weights(cell_of_item.reshape(-1), clusters[usable], len(pair), n_boot,
                                                  rng or np.random.default_rng(0))])
            interval, boot["n_resamples"] = usable_interval([samples], level)
    elif both and n_boot > 0 and len(usable) >= 2:
        rng = rng or np.random.default_rng(0)
        size = min(len(usable), ALPHA_BOOT_ITEMS)
        drawn = items[np.stack([usable[rng.integers(0, len(usable), size)] for _ in range(n_boot)])]
        samples = (coded_with.alphas(coded_with.draws(drawn), domain)
                   - coded_experts.alphas(coded_experts.draws(drawn), domain))
        # m-out-of-n: the deviations of m-item resamples rescaled to n items (module docstring); 1 when m = n
        samples = out["alpha_difference"] + np.sqrt(size / len(usable)) * (samples - out["alpha_difference"])
        interval, boot["n_resamples"] = usable_interval([samples], level)
    out["alpha_difference_ci"] = interval
    out["alpha_boot"] = boot

    scored = answered & np.isfinite(mode)
    # kappa's pairs are those whose two values are levels of the domain (``quadratic_kappa``): n_kappa counts them;
    # a judge's level off its item's scale is NaN in ``judge_levels``, so never one of them
    on_domain = scored & level_positions(judge_levels, domain)[1] & level_positions(mode, domain)[1]
    out["n_kappa"] = int(on_domain.sum())
    out["kappa_quadratic"] = quadratic_kappa(judge_levels[on_domain], mode[on_domain], domain)

    classes = class_codes(experts) if classes is None else classes
    mean = expert_mean(experts) if mean is None else mean
    split: dict[str, Any] = {}
    for code, name in enumerate(CLASSES):
        members = classes == code
        hit = members & answered
        split[name] = {
            "n": int(members.sum()),
            "n_judged": int(hit.sum()),
            "exact": (float((answer[hit] == mode[hit]).mean()) if name != "split" and hit.any() else None),
            "mae_to_mean": float(np.abs(measured[hit] - mean[hit]).mean()) if hit.any() else None,
        }
    out["by_expert_agreement"] = split
    out["n_items_judge_failed"] = int((~answered).sum())
    out["n_kappa_off_domain"] = int((scored & ~on_domain).sum())
    # the items with a judge answer but no unique mode among the experts: out of kappa and the homogeneity table too,
    # and counted, or "over N items; F failed items left out" would not add up to the cell's items
    out["n_items_no_mode"] = int((answered & ~np.isfinite(mode)).sum())
    # every answer off its item's scale, with a unique mode or not: none is in alpha with the judge, and without
    # this count the report read "with the judge 1.00" over the judge's on-scale answers alone
    out["n_items_judge_off_scale"] = int(off.sum())
    # of those, the items alpha with the judge is over (two expert scores or more): what it left the judge out of
    out["n_alpha_items_judge_failed"] = int((~answered[usable]).sum())
    out["n_alpha_items_judge_off_scale"] = int(off[usable].sum())
    if n_expert_scores is None and experts is not None:
        n_expert_scores = (~np.isnan(experts)).sum(axis=1)
    out["n_expert_scores_off_domain"] = (None if n_expert_scores is None else
                                         int(np.sum(n_expert_scores) - coded_experts.in_domain(domain, items).sum()))
    return out
