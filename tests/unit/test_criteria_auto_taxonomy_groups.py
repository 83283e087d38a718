"""What the released taxonomy assigns a leaf, against the paper's groups, as docs/criteria-auto.md states it: a leaf
chosen is judged on its own list in tasks.json, verbatim; that list holds every Domain-specific criterion of the
leaf's domain and none of another's; and the paper's groups for any text (Critical, General, Subjective: arXiv
2505.24616v3, Section 2.3) are listed whole by 35 of the 152 leaves only, which is why a leaf's list is never
completed with them and only the fallback set is built from them."""

from __future__ import annotations

import json
from collections import defaultdict
from importlib import resources

from judge.criteria_auto import FALLBACK_GROUPS, choose_from_scores, fallback_criteria, label_of
from judge.taxonomy import load_taxonomy


def _released_leaf_lists() -> list[list[str]]:
    """Each leaf's ``criteria`` as tasks.json writes it, in file order."""
    def leaves(node):
        if "criteria" in node:
            yield node["criteria"]
        for key in ("tasks", "subtasks_l1", "subtasks_l2"):
            for child in (node.get(key) or {}).values():
                yield from leaves(child)

    raw = json.loads((resources.files("judge") / "data" / "tasks.json").read_text(encoding="utf-8"))
    return [criteria for group in raw.values() for criteria in leaves(group)]


def test_a_leaf_chosen_is_judged_on_its_released_list_verbatim():
    tax = load_taxonomy()
    assert [list(t.criteria) for t in tax.tasks] == _released_leaf_lists()
    for task in tax.tasks:
        choice = choose_from_scores({label_of(task): 1.0}, "m", threshold=0.105)
        assert (choice.level, list(choice.criteria)) == ("leaf", list(task.criteria)), label_of(task)


def test_a_leaf_lists_the_domain_specific_criteria_of_its_own_domain_all_and_only():
    tax = load_taxonomy()
    by_domain = defaultdict(set)
    for crit in tax.criteria.values():
        if crit.group == "Domain-specific":
            by_domain[crit.domain].add(crit.id)
    for task in tax.tasks:
        listed = {cid for cid in task.criteria if tax.criteria[cid].group == "Domain-specific"}
        assert listed == by_domain.get(task.domain.get("en"), set()), label_of(task)


def test_the_groups_for_any_text_are_listed_whole_by_35_leaves_and_missing_as_the_docs_say():
    """Of the 13 criteria of the groups for any text (the fallback set): 35 leaves list all; 91 all but Literacy and
    Absence of speech errors; 6 only the two Critical ones; the 20 STEM-exercise and Code leaves none."""
    tax = load_taxonomy()
    general = set(fallback_criteria())
    assert {tax.criteria[cid].group for cid in general} == set(FALLBACK_GROUPS) and len(general) == 13
    critical = {cid for cid in general if tax.criteria[cid].group == "Critical"}
    types = defaultdict(set)
    counts = defaultdict(int)
    for task in tax.tasks:
        listed = frozenset(general & set(task.criteria))
        counts[listed] += 1
        types[listed].add(task.task_type)
    assert dict(counts) == {frozenset(general): 35, frozenset(general - {"grammar", "speech_errors"}): 91,
                            frozenset(critical): 6, frozenset(): 20}
    assert types[frozenset(critical)] == {"Data analysis", "Data retrieval", "Fact checking",
                                          "Describing objects game", "Writing instructions"}
    assert types[frozenset()] == {"STEM exercises", "Code creation", "Code analysis", "Code modification"}


def test_a_label_of_russian_names_holding_the_separator_names_its_leaf():
    """A label may be a path of Russian names joined by " / " (``leaf_of``), and four Russian names of tasks.json
    hold " / " themselves ("Спор / дискуссия"): cut at every " / ", such a path named no leaf ("has no subtype
    'Спор'"), so a labelled row naming one of the leaves under them was refused. Every leaf's Russian path now
    names it; a label that names no leaf however it is cut is still refused."""
    import pytest

    from judge.criteria_auto import leaf_of
    from judge.taxonomy import TaxonomyError

    taxonomy = load_taxonomy()
    held = [t for t in taxonomy.tasks if any(" / " in name for name in t.names_ru)]
    assert len(held) == 7  # Main idea's four domains, and Argument or discussion, Education and consultation, Briefing
    for leaf in taxonomy.tasks:
        russian = " / ".join(name for name in leaf.names_ru[1:] if name)
        assert label_of(leaf_of(russian, taxonomy)) == label_of(leaf), russian
    assert leaf_of("ИИ как персонаж (бытовая ситуация) / Спор / дискуссия").path == ("Informal setting",
                                                                                     "Argument or discussion")
    for wrong in ("ИИ как персонаж (бытовая ситуация) / Спор / беседа", "Спор / дискуссия",
                  "Informal setting / Argument or discussion / x / y"):
        with pytest.raises(TaxonomyError):
            leaf_of(wrong)
