"""Holm's step-down adjustment of a family of p-values: ``statsmodels.stats.multitest.multipletests`` with method
"holm", for the families ``judge-eval compare`` (``eval.scoring.compare``, one per table and metric) and
``judge-eval rank``'s pair table (``eval.ranking.compare``) adjust.

statsmodels ends every Holm adjustment with ``gc.collect()`` (statsmodels/stats/multitest.py, 0.15): a full
collection, which walks every object the process holds (pandas', scipy's and the run's among them) once per family,
for far less arithmetic. The objects that exist before the call are frozen for it (``gc.freeze``, Python's permanent
generation: ``eval.scoring.gc_freeze``), so that collection walks only what the call made; they are unfrozen after,
as collectable as before. Measured in docs/performance.md; the pitfall and the freeze are pinned in
tests/unit/test_holm.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eval.scoring.gc_freeze import older_objects_frozen

__all__ = ["holm_adjusted_p"]


def holm_adjusted_p(p_values: Sequence[float]) -> np.ndarray:
    """Holm's adjusted p-values of one family, in the order given: the k-th smallest p times (m - k + 1), made
    non-decreasing in that order and capped at 1 (statsmodels' method "holm"). The adjusted values do not depend on
    the level a caller calls at.

    Where the process already holds frozen objects (someone else's ``gc.freeze``), nothing is frozen or unfrozen
    here: their state is theirs, and the adjustment runs as statsmodels runs it.

    Raises:
        ValueError: a p-value that is NaN or outside [0, 1], naming it: statsmodels adjusts a NaN as a member of
            the family (it counts in m, and comes back NaN) and a value past 1 as a p-value, without a word.
    """
    from statsmodels.stats.multitest import multipletests

    bad = [p for p in p_values if not 0.0 <= p <= 1.0]  # NaN compares false: caught here too
    if bad:
        raise ValueError(f"Holm's adjustment: {bad[0]} is not a p-value (NaN or outside [0, 1]); leave an undefined "
                         "cell out of the family")

    with older_objects_frozen():
        return multipletests(list(p_values), method="holm")[1]
