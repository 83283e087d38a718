"""``judge-eval compare``'s paired validity reads the judge's values as its baseline's section read them: for the
alt-test against the ends rounded out to whole levels (``eval.validity.section.rating_ends``), a regression head's
value past an end, inferred or not, at that end; for the ceiling gap's ``worst`` failures against the ends as
``eval.validity.ceiling.scale_ends`` gives them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.validity_tables import item_table

nan = np.nan


@pytest.mark.parametrize(("high", "head", "rho", "gap"), [(2.0, 2.6, 0.45, 1.09), (1.5, 1.8, 0.0, 0.545)])
def test_paired_rho_and_gap_read_the_ends_the_section_read(high, head, rho, gap):
    """20 items of one criterion whose scale is unreadable; A, B and C are unanimous, ``high`` on items 0-9 and 1 on
    items 10-19, so the inferred ends are [1, ``high``]. The judge is a regression head at ``head`` on every item but
    0 and 10, which it failed (a loss in the alt-test). Under ``accuracy`` a tie of alignments counts for the judge.

    - ``high`` 2, head 2.6: it rounds to 3, past the inferred end 2, so it is 2 and ties the experts on items 1-9:
      rho = 9/20 = 0.45. compare read a head past an end as that end only on a readable scale: 2.6 matched nothing,
      rho 0. Gap: the experts' errors are 0; the judge's 0.6 on items 1-9, 1.6 on items 11-19 (3 pairs each), and a
      failure's worst 1 (item 0: 2 - 1; item 10: 2 - 1): (27 * 0.6 + 27 * 1.6 + 6 * 1) / 60 = 1.09.
    - ``high`` 1.5, head 1.8: the rating ends are [1, 2]; 1.8 rounds to 2, inside, and matches no expert: rho 0.
      Read against [1, 1.5], the head's 2 past the end became 1.5 and matched on items 1-9 (rho 0.45). The gap keeps
      [1, 1.5]: 0.3 on items 1-9, 0.8 on items 11-19, a failure's worst 0.5 (1.5 - 1 on both):
      (27 * 0.3 + 27 * 0.8 + 6 * 0.5) / 60 = 0.545 (read against [1, 2], item 10's worst would be 1: 0.57).

    Each is the section's own figure; compare's paired baseline figures (the run against itself) equal it."""
    from eval.scoring.compare import ScoredRun, _paired_validity
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    n = 20
    level = np.where(np.arange(n) < 10, high, 1.0)
    experts = np.tile(level[:, None], (1, 3))
    ids = np.tile(np.array(["A", "B", "C"], dtype=object), (n, 1))
    judge = np.full(n, head)
    judge[[0, 10]] = nan
    status = ["ok"] * n
    status[0] = status[10] = "parse_failed"
    table = item_table(judge, experts, ids, status=status, low=np.full(n, nan), high=np.full(n, nan))
    table.score_source[:] = "regression_head"
    settings = ValiditySettings(n_boot=0, alpha_boot=0,
                                alt_test=AltTestSettings(scoring="accuracy", min_items_per_expert=2))
    section = validity_section(table, "mode", {"standard": np.arange(n)}, settings)
    overall = section.splits["standard"].overall
    assert overall.alt_test.advantage_probability == pytest.approx(rho)
    assert overall.ceiling.gap == pytest.approx(gap)

    run = ScoredRun(folder="a", name="a", metrics=SimpleNamespace(validity=section), table=table, extra={})
    paired = _paired_validity(run, run, np.arange(n), np.arange(n), 0, 0)["standard"]
    assert paired.rho.baseline == pytest.approx(rho)
    assert paired.ceiling_gap.baseline == pytest.approx(gap)
