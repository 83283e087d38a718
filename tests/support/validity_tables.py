"""Item tables of one split small enough to derive the validity figures by hand, and the validity section read off
them: what the validity tests on hand-derived tables share."""

from __future__ import annotations

import numpy as np


def item_table(judge, experts, ids=None, *, status=None, low=None, high=None, criteria=None, task_type=None):
    """An item table of one split, model and task group; ``criteria`` / ``task_type``: per item (default "c" / "t")."""
    from eval.scoring.item_table import ItemTable

    n = len(judge)
    labels = {name: np.full(n, value, dtype=object) for name, value in (
        ("error", ""), ("score_source", "verdict"), ("split", "standard"), ("model_id", "m"), ("task_type", "t"),
        ("task_group", "g"), ("criteria_name", "c"))}  # fmt: skip
    for name, given in (("criteria_name", criteria), ("task_type", task_type)):
        if given is not None:
            labels[name] = np.asarray(given, dtype=object)
    return ItemTable(ids=np.array([f"i{i}" for i in range(n)], dtype=object), judge=np.asarray(judge, dtype=float),
                     experts=np.asarray(experts, dtype=float), expert_ids=ids,
                     status=np.asarray(["ok"] * n if status is None else status, dtype=object),
                     scale_low=low, scale_high=high, **labels)


def split_section(table, **settings):
    """The validity section of ``table`` as its one split, no bootstrap; ``settings``: ValiditySettings' others."""
    from eval.validity.section import ValiditySettings, validity_section

    return validity_section(table, "mode", {"standard": np.arange(len(table))},
                            ValiditySettings(n_boot=0, alpha_boot=0, **settings)).splits["standard"]


def table_on_0_to_2(judge, experts, ids, *, status=None, task_type=None):
    """:func:`item_table`, every item on the 0-2 scale."""
    n = len(judge)
    return item_table(judge, experts, ids, status=status, low=np.zeros(n), high=np.full(n, 2.0),
                      task_type=task_type)


def section_with_alt_test(table, **alt_test):
    """The validity section of ``table`` as its one split, no bootstrap; ``alt_test``: AltTestSettings'."""
    from eval.validity.section import ValiditySettings, validity_section
    from judge.metrics_json.validity import AltTestSettings

    settings = ValiditySettings(n_boot=0, alpha_boot=0, alt_test=AltTestSettings(**alt_test))
    return validity_section(table, "mode", {"standard": np.arange(len(table))}, settings).splits["standard"]


def panel(n, experts_of):
    """``n`` items of truth 0, 1, 2, 0, ...; item i scored (the truth) by the experts ``experts_of(i)`` names."""
    truth = np.arange(n) % 3.0
    experts, ids = np.full((n, 3), np.nan), np.full((n, 3), None, dtype=object)
    for i in range(n):
        for slot, name in enumerate(experts_of(i)):
            experts[i, slot], ids[i, slot] = truth[i], name
    return truth, experts, ids

