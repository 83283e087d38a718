"""criteria: auto: the TaskChoice contract, the fallback set, the bundled sets, training rows, tfidf, expansion."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from judge import load_taxonomy
from judge.splits import STANDARD, ZERO_SHOT
from judge.criteria_auto import (
    DEFAULT_THRESHOLD,
    FALLBACK_GROUPS,
    LEAF_SHARE,
    TaskChoice,
    TaskClassifier,
    TfidfClassifier,
    build_classifier,
    choose_from_scores,
    criteria_set_scores,
    default_classifier_path,
    expand_criteria,
    fallback_criteria,
    heldout_path,
    label_of,
    labelled_rows,
    leaf_of,
    load_labelled,
    reliability,
    training_path,
    type_criteria,
)
from train.criteria_rows import bundled_rows, taxonomy_rows
from train.criteria_tfidf import choose_threshold, fit_tfidf, save_tfidf, training_digest

TAX = load_taxonomy()


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ----------------------------------------------------------------------------------------------- fallback set


def test_fallback_set_is_the_paper_groups_that_apply_to_any_text():
    """Fallback = base criteria of Critical (2), General/Fine-grained (6), Subjective (5): 13 ids.

    Paper: "Critical, Subjective, and General criteria are applicable to any text" (arXiv 2505.24616v3,
    Section 2.3); group sizes: "two (2) critical", "six (6) fine-grained", "five (5) subjective" (Appendix P).
    """
    assert FALLBACK_GROUPS == ("Critical", "Fine-grained", "Subjective")
    assert fallback_criteria() == (
        "narushenie_formata", "censor",
        "repeats", "special_symbol", "system_prompt_follow", "proactivity", "grammar", "speech_errors",
        "value", "speech", "understanding", "format", "general",
    )  # fmt: skip
    groups = Counter(TAX.criteria[c].group for c in fallback_criteria())
    assert groups == {"Critical": 2, "Fine-grained": 6, "Subjective": 5}


def test_no_criterion_is_listed_by_every_leaf_so_the_fallback_follows_the_paper():
    """The published leaf sets share no criterion (STEM/code leaves list only Task-specific ones): why the fallback
    is derived from the groups, not from an intersection."""
    shared = set.intersection(*(set(t.criteria) for t in TAX.tasks))
    assert shared == set()
    code_leaf = {c.id for c in TAX.criteria_for("Code creation", "Python")}
    assert not code_leaf & set(fallback_criteria())


# ----------------------------------------------------------------------------------------------- bundled sets


def test_heldout_set_covers_every_task_type_with_three_valid_leaf_labels():
    """The held-out set: >=105 rows, every label exactly a leaf label, every one of the 35 task types >=3 times."""
    rows = _rows(heldout_path())
    assert len(rows) >= 105
    for row in rows:
        assert label_of(leaf_of(row["label"])) == row["label"], row
        assert row["instruction"].strip()
    per_type = Counter(row["label"].split(" / ")[0] for row in rows)
    assert set(per_type) == set(TAX.task_types)
    assert min(per_type.values()) >= 3
    assert len({row["id"] for row in rows}) == len(rows)


def test_training_set_is_disjoint_from_heldout():
    """No held-out instruction appears in the bundled training set (or in the taxonomy-derived rows)."""
    held = {row["instruction"] for row in _rows(heldout_path())}
    train = {row["instruction"] for row in _rows(training_path())}
    tax = {row["instruction"] for row in taxonomy_rows(include_zero_shot=True)}
    assert train and not held & train and not held & tax
    for row in _rows(training_path()):
        leaf_of(row["label"])


def test_near_duplicates_finds_every_pair_a_loop_over_all_pairs_finds_in_its_order():
    """The sparse product looks only at pairs sharing a 5-gram; every pair over the Jaccard bound that a plain loop
    over all pairs finds is found, with the same Jaccard, ordered by the second text, then the first."""
    from judge.criteria_auto.labelled import NEAR_DUPLICATE_JACCARD, _shingles, near_duplicates, normalise_instruction

    texts = ["Отгадай загадку: «Зимой и летом одним цветом».", "Напиши стихотворение о снеге.", "", "аб"]
    others = ["отгадай загадку зимой и летом", "Напиши стихотворение о первом снеге.", "аб", "",
              "Отгадай загадку: «Зимой и летом одним цветом»!", "совсем другое"]
    found = near_duplicates(texts, others)
    assert [(j, i) for i, j, _, _ in found] == sorted((j, i) for i, j, _, _ in found)
    by_loop = {}
    for j, other in enumerate(others):
        for i, text in enumerate(texts):
            a, b = _shingles(normalise_instruction(text)), _shingles(normalise_instruction(other))
            if len(a & b) / len(a | b) >= NEAR_DUPLICATE_JACCARD:
                by_loop[i, j] = len(a & b) / len(a | b)
    assert {(i, j): jac for i, j, jac, ratio in found if ratio is None} == by_loop
    assert (0, 4, 1.0, None) in found and (3, 2, 1.0, None) in found and (2, 3, 1.0, None) in found


def test_no_heldout_instruction_near_duplicates_a_training_row():
    """No held-out instruction is a near copy of a row the shipped classifier trains on (the bundled training set,
    the bundled sample, the taxonomy texts): ho-105 was sample s0210 with a clause cut, and eight such items, all
    answered right at p >= 0.98, inflated the documented figures."""
    from judge.criteria_auto.labelled import heldout_leaks, near_duplicates

    held = [row["instruction"] for row in _rows(heldout_path())]
    pairs, _ = bundled_rows()
    assert near_duplicates(held, [p["instruction"] for p in pairs]) == []
    assert heldout_leaks(pairs) == ""


@pytest.mark.parametrize("a, b, near", [
    # a clause cut (Jaccard of 5-grams 0.71)
    ("Тело бросили вертикально вверх со скоростью 20 м/с. На какую максимальную высоту оно поднимется? "
     "Сопротивлением воздуха пренебречь, g = 10 м/с².",
     "Тело бросили вертикально вверх со скоростью 20 м/с. На какую максимальную высоту оно поднимется? g = 10 м/с².",
     True),
    # a few words changed (Jaccard 0.38, difflib ratio 0.82)
    ("Правда ли, что Великая Китайская стена видна из космоса невооружённым глазом?",
     "Правда ли, что Великую Китайскую стену видно с Луны невооружённым глазом?", True),
    # case, "ё", quotes and spacing make no difference
    ("Отгадай загадку: «Зимой и летом одним цветом».", "отгадай   загадку \"зимой и летом одним цветом\"", True),
    # one template, another riddle: not a copy
    ("Отгадай загадку: «Зимой и летом одним цветом».", "Отгадай загадку: «Сидит дед, во сто шуб одет».", False),
], ids=["clause cut", "words changed", "normalised", "one template"])  # fmt: skip
def test_near_duplicates_by_example(a, b, near):
    """A copy with a clause cut or a few words changed is a near duplicate; one template with other content is not."""
    from judge.criteria_auto.labelled import near_duplicates

    assert bool(near_duplicates([a], ["Напиши код", b])) is near
    assert all(j == 1 for _, j, _, _ in near_duplicates([a], ["Напиши код", b]))


def test_a_ratio_over_its_bound_counts_only_over_the_jaccard_floor_as_the_docs_say():
    """difflib's ratio decides only for pairs sharing ``NEAR_DUPLICATE_RATIO_JACCARD`` of their 5-grams: an
    instruction with every sixth letter changed has a ratio over 0.8 and a Jaccard under 0.2, and is no near
    duplicate. docs/criteria-auto.md gave the ratio rule without that floor."""
    import difflib

    from judge.criteria_auto.labelled import (NEAR_DUPLICATE_JACCARD, NEAR_DUPLICATE_RATIO,
                                              NEAR_DUPLICATE_RATIO_JACCARD, _shingles, near_duplicates,
                                              normalise_instruction)

    text = normalise_instruction("Напишите, пожалуйста, подробное письмо руководителю с просьбой перенести срок сдачи "
                                 "годового отчёта на следующую неделю.")
    changed = "".join("ж" if k % 6 == 5 else c for k, c in enumerate(text))
    a, b = _shingles(text), _shingles(changed)
    assert difflib.SequenceMatcher(None, text, changed, autojunk=False).ratio() >= NEAR_DUPLICATE_RATIO
    assert 0 < len(a & b) / len(a | b) < NEAR_DUPLICATE_RATIO_JACCARD
    assert near_duplicates([text], [changed]) == []
    docs = " ".join((Path(__file__).parents[2] / "docs" / "criteria-auto.md").read_text(encoding="utf-8").split())
    assert (f"5-gram Jaccard ≥ {NEAR_DUPLICATE_JACCARD}, or difflib ratio ≥ {NEAR_DUPLICATE_RATIO} for a pair whose "
            f"Jaccard is ≥ {NEAR_DUPLICATE_RATIO_JACCARD}") in docs


def test_criteria_classifier_refuses_a_near_copy_of_a_heldout_instruction(tmp_path, capsys):
    """judge-train criteria-classifier --data with a held-out instruction whose last clause is cut: refused (exit 2),
    naming the held-out item, where an exact-match check let it through."""
    from train.criteria_classifier import main

    row = _rows(heldout_path())[105]
    cut = row["instruction"].rsplit(" ", 3)[0]
    assert cut != row["instruction"]
    path = tmp_path / "extra.jsonl"
    path.write_text(json.dumps({"instruction": cut, "label": row["label"]}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    assert main(["--data", str(path), "--out", str(tmp_path / "clf")]) == 2
    err = capsys.readouterr().err
    assert "1 training instruction is in the bundled held-out set or near duplicates of it" in err
    assert f"held-out {row['id']}" in err and not (tmp_path / "clf").exists()


# ----------------------------------------------------------------------------------------------- the contract


@pytest.mark.parametrize(
    "scores, threshold, level, label",
    [
        # Code creation 0.9 >= 0.5; Python holds all of it -> the leaf
        ({"Code creation / Python": 0.9, "Code analysis / Python": 0.1}, 0.5, "leaf", "Code creation / Python"),
        # the best type has 0.4 < 0.5 -> fallback
        ({"Code creation / Python": 0.4, "Code analysis / Python": 0.35}, 0.5, "fallback", "Code creation / Python"),
        ({"Advice": 0.5}, 0.5, "leaf", "Advice"),  # at the threshold: not below it
        ({"Advice": 0.2, "Fact checking": 0.3}, 0.25, "leaf", "Fact checking"),
        # Advice is the top leaf (0.3) but Code creation the top type (0.25 + 0.25 = 0.5); C++ and Python tie, each
        # with share 0.25 / 0.5 = 0.5: a tie is no choice of leaf, and Code creation's leaves share no criterion as
        # one id (each lists its language's variant) -> the fallback set; the label is the first of the two by label
        ({"Advice": 0.3, "Code creation / Python": 0.25, "Code creation / C++": 0.25}, 0.5, "fallback",
         "Code creation / C++"),
        # Code creation 0.3 + 0.25 + 0.2 = 0.75 >= 0.5, but Python's share 0.3 / 0.75 = 0.4 < 0.5 -> the type's set
        ({"Code creation / Python": 0.3, "Code creation / C++": 0.25, "Code creation / SQL": 0.2, "Advice": 0.25},
         0.5, "task_type", "Code creation / Python"),
    ],
)
def test_choose_decides_at_the_level_the_probabilities_support(scores, threshold, level, label):
    """The type's probability is the sum over its leaves; below the threshold: the fallback set; a leaf holding less
    than LEAF_SHARE of its type: the criteria the type's leaves share; otherwise the leaf's own set."""
    assert LEAF_SHARE == 0.5
    choice = choose_from_scores(scores, "test", threshold=threshold)
    leaf = leaf_of(label)
    assert (choice.label, choice.level, choice.fallback) == (label, level, level == "fallback")
    expected = {"leaf": leaf.criteria, "task_type": type_criteria(leaf.task_type, TAX, leaf),
                "fallback": fallback_criteria()}  # fmt: skip
    assert choice.criteria == expected[level]
    assert (choice.reason != "") is (level != "leaf")
    assert (choice.task_type, choice.task_subtype) == (leaf.task_type, leaf.subtype or "")
    type_p = sum(p for lab, p in scores.items() if lab.split(" / ")[0] == leaf.task_type)
    assert choice.task_type_probability == pytest.approx(type_p) and choice.probability == scores[label]


def test_type_criteria_judge_a_variant_the_chosen_leaf_lists():
    """Code creation's five leaves list per-language variants (operability__5 for Python, __3 for C++): each is a
    criterion of its own, and the base id (operability) is SQL's. At the task type the chosen leaf's variants are
    judged, in its order; with no leaf chosen (a row naming only its type) a criterion whose variant differs is
    dropped; a one-leaf type shares its leaf's set."""
    python, cpp = leaf_of("Code creation / Python"), leaf_of("Code creation / C++")
    assert python.criteria[0] == "operability__5" and cpp.criteria[0] == "operability__3"
    assert type_criteria("Code creation", TAX, python) == python.criteria
    assert type_criteria("Code creation", TAX, cpp) == cpp.criteria
    assert type_criteria("Code creation") == ()
    # Data retrieval's leaves share the two Critical criteria by id, the rest only by base id
    precise = leaf_of("Data retrieval / Finding precise information")
    assert type_criteria("Data retrieval") == ("narushenie_formata", "censor")
    assert "understanding__3" in type_criteria("Data retrieval", TAX, precise)
    assert type_criteria("Advice") == leaf_of("Advice").criteria
    with pytest.raises(Exception, match="unknown task type"):
        type_criteria("Poetry slam")
    with pytest.raises(Exception, match="is not a leaf of task type 'Code creation'"):
        type_criteria("Code creation", TAX, leaf_of("Advice"))


@pytest.mark.parametrize("task_type", TAX.task_types)
def test_type_criteria_are_criteria_the_types_leaves_list(task_type):
    """A choice stopped at the task type judges only criteria some leaf of the type lists, never a base id that is
    another task's criterion with its own rubric and scale (correct_answer is Extract's; STEM's
    information_overload variants are 0-1, the base 0-2); with or without the chosen leaf."""
    listed = {c for t in TAX.tasks if t.task_type == task_type for c in t.criteria}
    assert [c for c in type_criteria(task_type) if c not in listed] == []


@pytest.mark.parametrize("task_type", TAX.task_types)
def test_type_criteria_at_a_chosen_leaf_are_that_leafs_own(task_type):
    """With the chosen leaf, every criterion is one that leaf lists, and none the type's leaves share by id is lost."""
    for leaf in (t for t in TAX.tasks if t.task_type == task_type):
        chosen = type_criteria(task_type, TAX, leaf)
        assert [c for c in chosen if c not in leaf.criteria] == []
        assert set(type_criteria(task_type)) <= set(chosen)


def test_a_choice_at_the_task_type_judges_the_top_leafs_variants():
    """choose_from_scores stopping at the task type (STEM exercises, Physics 0.4 of 0.9): the criteria every STEM
    leaf has a variant of, in Physics' variants: correct_answer__16 (Physics'), not correct_answer (Extract's)."""
    choice = choose_from_scores({"STEM exercises / Physics": 0.4, "STEM exercises / Chemistry": 0.3,
                                 "STEM exercises / Biology": 0.2, "Advice": 0.1}, "t")  # fmt: skip
    assert (choice.level, choice.label) == ("task_type", "STEM exercises / Physics")
    physics = leaf_of("STEM exercises / Physics")
    assert choice.criteria == ("correct_answer__16", "solution_correctness__4", "solution_sufficiency__3",
                               "information_overload__11")  # fmt: skip
    assert set(choice.criteria) <= set(physics.criteria)


def test_choose_threshold_maximises_the_mean_jaccard_by_hand():
    """Three instructions, type probabilities 0.2/0.6/0.9, Jaccard if chosen 0.1/0.8/0.9, if fallen back 0.5 each:
    t=0 or 0.2 -> (0.1+0.8+0.9)/3 = 0.600; t=0.6 -> (0.5+0.8+0.9)/3 = 0.733; t=0.9 -> (0.5+0.5+0.9)/3 = 0.633."""
    got = choose_threshold([0.2, 0.6, 0.9], [0.1, 0.8, 0.9], [0.5, 0.5, 0.5])
    assert got["threshold"] == 0.6 and got["mean_jaccard"] == pytest.approx(2.2 / 3)
    assert got["fallback_rate"] == pytest.approx(1 / 3) and got["never_fallback_jaccard"] == pytest.approx(0.6)
    assert got["always_fallback_jaccard"] == pytest.approx(0.5) and got["n"] == 3
    # choosing never loses to falling back: the lowest threshold, 0.0, wins
    assert choose_threshold([0.3, 0.7], [0.9, 0.9], [0.5, 0.5])["threshold"] == 0.0


def test_choose_threshold_can_choose_to_fall_back_on_every_instruction():
    """Falling back everywhere was no candidate (the candidates were 0 and each instruction's probability, and the
    highest keeps its own instruction): [0.3, 0.6] with Jaccard 0 chosen, 1 fallen back gave threshold 0.6 at a mean
    of 0.5 beside an always-fallback mean of 1.0. A threshold just above the highest probability is a candidate."""
    got = choose_threshold([0.3, 0.6], [0.0, 0.0], [1.0, 1.0])
    assert got["mean_jaccard"] == got["always_fallback_jaccard"] == 1.0 and got["fallback_rate"] == 1.0
    assert 0.6 < got["threshold"] <= 1.0
    from judge.criteria_auto.policy import choose_from_scores

    # the policy falls back at it: the highest probability is below the threshold
    assert choose_from_scores({"Editing": 0.6}, "tfidf", got["threshold"]).level == "fallback"
    # a probability of 1 cannot be exceeded by a threshold (at most 1): the best candidate within [0, 1] is kept
    assert choose_threshold([0.3, 1.0], [0.0, 0.0], [1.0, 1.0])["threshold"] == 1.0
    # such a choice is warned of, as a threshold of 0 is: the classifier then never judges a task's criteria
    from train.criteria_tfidf import _calibration_warnings

    said = _calibration_warnings(1.0, got["threshold"], got, 2)
    assert said == [f"the threshold chosen on 2 instructions, {got['threshold']:.6g}, is above every one's task-type "
                    "probability: the classifier falls back to the general criteria on all of them; pass "
                    "--threshold, or train on more"]
    assert _calibration_warnings(1.0, 0.5, got, 2) == []  # a --threshold given is the user's choice


def test_reliability_bins_and_ece_by_hand():
    """Stated 0.15, 0.15 (one right), 0.85, 0.95 (right): bins [0.1,0.2) n=2 acc 0.5, [0.8,0.9) and [0.9,1.0] acc 1;
    ECE = 2/4 * 0.35 + 1/4 * 0.15 + 1/4 * 0.05 = 0.225."""
    got = reliability([0.15, 0.15, 0.85, 0.95], [False, True, True, True])
    assert [(b["n"], b["accuracy"]) for b in got["bins"]] == [(2, 0.5), (1, 1.0), (1, 1.0)]
    assert got["bins"][0]["bin"] == pytest.approx([0.1, 0.2]) and got["ece"] == pytest.approx(0.225)


def test_choose_keeps_top_k_alternatives_best_first():
    """alternatives: the top_k labels, sorted by probability."""
    scores = {"Advice": 0.1, "Fact checking": 0.6, "Concept explanation": 0.2, "Data analysis": 0.1}
    choice = choose_from_scores(scores, "t", top_k=2)
    assert choice.alternatives == (("Fact checking", 0.6), ("Concept explanation", 0.2))


@pytest.mark.parametrize(
    "scores, error",
    [
        ({"Poetry slam": 1.0}, "unknown task type"),
        ({"Code creation": 1.0}, "names 5 leaves"),
        ({"Advice": float("nan")}, "outside"),
        ({}, "no task scores"),
    ],
)
def test_choose_refuses_labels_outside_the_taxonomy(scores, error):
    """A classifier cannot invent a task, name a non-leaf, or give a NaN probability."""
    with pytest.raises(Exception, match=error):
        choose_from_scores(scores, "t")


def test_task_choice_round_trips_through_strict_json_with_nan_alternatives():
    """What to_dict writes (null for a NaN probability, the llm method without logprobs) from_dict reads back: the
    alternative's probability NaN again, every other field equal."""
    import dataclasses
    import math

    choice = TaskChoice(task_type="Advice", task_subtype="", task_subsubtype="", label="Advice", probability=None,
                        alternatives=(("Advice", math.nan),), criteria=("grammar",), fallback=False, reason="",
                        method="llm")
    back = TaskChoice.from_dict(json.loads(json.dumps(choice.to_dict(), allow_nan=False)))
    assert back.alternatives[0][0] == "Advice" and math.isnan(back.alternatives[0][1])
    assert back.to_dict() == choice.to_dict()
    # NaN is unequal to itself: the rest compared without the alternatives
    assert dataclasses.replace(back, alternatives=()) == dataclasses.replace(choice, alternatives=())


def test_task_choice_renders_any_non_finite_probability_as_null():
    """to_dict writes null for a non-finite probability in any field, so judge-serve's response always renders."""
    import math

    choice = TaskChoice(task_type="Advice", task_subtype="", task_subsubtype="", label="Advice",
                        probability=math.inf, alternatives=(("Advice", math.inf),), criteria=("grammar",),
                        fallback=False, reason="", method="x", task_type_probability=math.nan)  # fmt: skip
    row = json.loads(json.dumps(choice.to_dict(), allow_nan=False))
    assert (row["probability"], row["task_type_probability"], row["alternatives"][0]["probability"]) == (None,) * 3


@pytest.mark.parametrize("bad", [float("nan"), 3.0, -0.5])
def test_a_choice_refuses_a_probability_that_is_not_one(bad):
    """A NaN task-type probability compares False with the threshold and would take the leaf: refused, naming it."""
    with pytest.raises(ValueError, match="is not a probability"):
        TaskChoice.of_leaf(leaf_of("Advice"), 0.5, (), 0.5, "x", TAX, type_probability=bad)


def test_task_choice_round_trips_through_its_dict():
    """to_dict / from_dict: the wire format written into eval items and the /v1/judge response."""
    choice = choose_from_scores({"Literary text / Poetry": 0.7, "Literary text / Prose": 0.3}, "tfidf")
    row = json.loads(json.dumps(choice.to_dict()))
    assert (row["level"], row["task_type_probability"]) == ("leaf", 1.0)
    assert row["alternatives"][1] == {"label": "Literary text / Prose", "probability": 0.3}
    assert TaskChoice.from_dict(row) == choice


def test_build_classifier_names_the_methods():
    """An unknown method name is refused with the list of methods."""
    with pytest.raises(ValueError, match=r"\['head', 'llm', 'tfidf'\]"):
        build_classifier("bert")


# ----------------------------------------------------------------------------------------------- training rows


def test_labelled_rows_read_instructions_output_and_records():
    """Rows of `judge-train data instructions` (English names) and records (Russian names, group in task_type)."""
    rows = [
        {"instruction": "Напиши код", "task_type": "Code creation", "task_subtype": "Python", "task_subsubtype": ""},
        {"instruction": "Переведи", "task_type": "Перевод на русский или английский", "task_subtype": "Слова (внутри контекста или культурный перевод)"},
        {"instruction": "Дай совет", "label": "Advice"},
        {"instruction": "Дай совет", "label": "Advice"},
    ]  # fmt: skip
    pairs, counts = labelled_rows(rows, "rows")
    assert [p["label"] for p in pairs] == [
        "Code creation / Python", "Translation, English-Russian language pair / Words", "Advice"
    ]
    assert counts == {"rows": 4, "kept": 3, "duplicates": 1, "zero_shot_dropped": 0}


def test_zero_shot_task_types_stay_out_unless_asked():
    """Zero-Shot task types (judge/data/zero_shot.yaml) are dropped by default, kept with include_zero_shot."""
    rows = [{"instruction": "Напиши стих", "task_type": "Literary text", "task_subtype": "Poetry"},
            {"instruction": "Дай совет", "task_type": "Advice"}]  # fmt: skip
    pairs, counts = labelled_rows(rows, "rows")
    assert [p["label"] for p in pairs] == ["Advice"] and counts["zero_shot_dropped"] == 1
    pairs, _ = labelled_rows(rows, "rows", include_zero_shot=True)
    assert [p["split"] for p in pairs] == [ZERO_SHOT, STANDARD]


@pytest.mark.parametrize(
    "row, message",
    [
        ({"instruction": "", "task_type": "Advice"}, "src: row 0: empty or missing 'instruction'"),
        ({"instruction": "x", "task_type": "Code creation"}, "src: row 0: task columns do not name one leaf"),
        ({"instruction": "x", "task_type": "Cooking"}, "src: row 0: .*unknown task type"),
    ],
)
def test_labelled_rows_name_the_bad_row(row, message):
    """A row without an instruction or a leaf is an error naming the source and row."""
    with pytest.raises(ValueError, match=message):
        labelled_rows([row], "src")


def test_load_labelled_reads_jsonl_and_records(tmp_path):
    """load_labelled reads JSONL of any shape and POLLUX-format records through judge.load_records."""
    from judge import sample_data_path

    pairs, counts = load_labelled([training_path(), sample_data_path()], include_zero_shot=True)
    assert counts["kept"] == len(pairs) and counts["rows"] > len(_rows(training_path()))
    assert all(leaf_of(p["label"]) for p in pairs)


@pytest.mark.parametrize(
    "data, message",
    [
        (b'{"instruction": "x", "label": "a"}\n\n[1, 2]\n', "line 3: a list, not an object"),
        (b'{"instruction": "x", "label": "a"}\n{bad\n', r"line 2: invalid JSON \(Expecting property name"),
        (b"abc\xff\n", "line 1: not UTF-8 text"),
        (b'{"instruction": "x", "label": "a"}\n\xff\n', "line 2: not UTF-8 text"),
    ],
)
def test_criteria_classifier_names_the_file_and_row_of_an_unreadable_jsonl_line(tmp_path, capsys, data, message):
    """judge-train criteria-classifier's --data JSONL: a line that is not a UTF-8 JSON object is refused with exit 2
    naming the file and its line (from 1, blank lines counted), before any training; a bare json.loads message
    named neither, a list row was a TypeError traceback, a non-UTF-8 byte a codec message without the file."""
    from train.criteria_classifier import main

    path = tmp_path / "labelled.jsonl"
    path.write_bytes(data)
    assert main(["--out", str(tmp_path / "out"), "--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: " in err and err.count("\n") == 1, err
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------------------------- tfidf


def test_tfidf_learns_saves_and_reloads_without_pickle(tmp_path):
    """The tfidf method fits its training rows, records how its threshold was chosen, and the JSON+npz artefact
    reloads to the same probabilities (float16 coefficients: within 1e-3)."""
    pairs, _ = load_labelled([training_path()])
    clf = fit_tfidf(pairs, folds=2, max_char_features=3000, max_word_features=500)
    assert isinstance(clf, TaskClassifier)
    texts = [p["instruction"] for p in pairs]
    probs = clf.predict_proba(texts)
    assert all(sum(p.values()) == pytest.approx(1.0) for p in probs)
    train_acc = sum(max(p, key=p.get) == row["label"] for p, row in zip(probs, pairs)) / len(pairs)
    assert train_acc > 0.9
    cal = clf.meta["calibration"]
    assert cal["n_out_of_fold"] == len(pairs) and clf.threshold == cal["chosen"]["threshold"]
    assert clf.meta["training_digest"] == training_digest(pairs)
    out = save_tfidf(clf, tmp_path / "clf")
    assert sorted(f.name for f in out.iterdir()) == ["model.json", "weights.npz"]
    spec = json.loads((out / "model.json").read_text(encoding="utf-8"))
    assert set(spec["versions"]) == {"scikit-learn", "numpy"} and spec["format"] == "pollux-task-tfidf-v2"
    again = build_classifier("tfidf", path=out)
    for a, b in zip(probs, again.predict_proba(texts)):
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-3 for k in a)
    choice = again.choose(texts[0], top_k=3)
    assert choice.method == "tfidf" and len(choice.alternatives) == 3
    # An artefact of another taxonomy (a leaf renamed since) is refused at load, naming the leaf, where it would
    # otherwise load and then fail every "criteria": "auto" request that chose that leaf.
    spec["leaf_classes"][0] = spec["leaf_classes"][0] + " (old name)"
    (out / "model.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=r"was trained on another taxonomy \(leaves the taxonomy does not have"):
        build_classifier("tfidf", path=out)


def test_loading_the_classifier_leaves_scikit_learn_for_its_first_prediction(tmp_path):
    """judge-serve loads the classifier at start: that reads and checks the artefact but imports no scikit-learn (a
    server never asked for `criteria: auto` does not pay for it; asked of a fresh interpreter); the first prediction
    builds the vectorizers (asked here, where scikit-learn may be imported already), and a saved spec that lacks a
    field is refused at load, naming it."""
    import subprocess
    import sys

    probe = ("import sys; from judge.criteria_auto import TfidfClassifier; TfidfClassifier.load(); "
             "print('sklearn' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
    loaded = TfidfClassifier.load()
    assert loaded.features.char is None and loaded.features.word is None  # not built at load
    p = loaded.predict_proba(["Напиши стихотворение о весне"])[0]
    assert max(p, key=p.get) == "Literary text / Poetry"
    assert type(loaded.features.char).__module__.startswith("sklearn.")  # built by the first prediction
    folder = tmp_path / "broken"
    folder.mkdir()
    spec = json.loads((default_classifier_path() / "model.json").read_text(encoding="utf-8"))
    del spec["features"]["word"]["ngram_range"]
    (folder / "model.json").write_text(json.dumps(spec), encoding="utf-8")
    (folder / "weights.npz").write_bytes((default_classifier_path() / "weights.npz").read_bytes())
    with pytest.raises(ValueError, match=r"tfidf: the word features lack \['ngram_range'\]"):
        TfidfClassifier.load(folder)


def test_the_shipped_classifier_is_todays_build_of_the_bundled_rows():
    """judge/data/criteria_tfidf was trained on exactly today's bundled rows (a digest of them), with the threshold
    its own out-of-fold calibration chose; rebuild it with `judge-train criteria-classifier --out
    judge/data/criteria_tfidf` when the rows or the taxonomy change."""
    clf = TfidfClassifier.load()
    pairs, _ = bundled_rows()
    assert clf.meta["training_digest"] == training_digest(pairs), "stale: rebuild judge/data/criteria_tfidf"
    assert clf.threshold == clf.meta["calibration"]["chosen"]["threshold"]
    assert len(clf.type_classes) == 35 and len(clf.leaf_classes) == len(TAX.tasks)
    assert default_classifier_path().name == "criteria_tfidf"


def test_the_shipped_model_json_records_its_weights_digest_as_a_build_writes_it():
    """save_tfidf records the weights' sha256 in model.json, and load refuses weights that are not those (a rebuild
    stopped between the two files); the shipped model.json lacked it (and the calibration's warnings a build writes),
    so the shipped folder was the one artefact whose weights were not tied to its model.json."""
    from judge.criteria_auto.tfidf import WEIGHTS_DIGEST_KEY, weights_digest

    spec = json.loads((default_classifier_path() / "model.json").read_text(encoding="utf-8"))
    assert spec.get(WEIGHTS_DIGEST_KEY) == weights_digest(default_classifier_path() / "weights.npz")
    assert spec["meta"]["calibration"].get("warnings") == []  # none: 112 instructions calibrate it


def test_the_shipped_classifier_was_fitted_as_a_rebuild_would_fit_it():
    """The training digest pins the rows only: an artefact fitted on today's rows with another C, other n-grams,
    other vocabulary caps or another seed passed it. Without refitting: the fit's parameters in its meta are
    fit_tfidf's defaults (what `judge-train criteria-classifier --out` with no data arguments uses), and the
    threshold is the one choose_threshold picks over the out-of-fold predictions the meta records (rounded there to
    6 digits, so the threshold read back agrees to 1e-6)."""
    import inspect

    meta = TfidfClassifier.load().meta
    defaults = {k: v.default for k, v in inspect.signature(fit_tfidf).parameters.items()}
    for key in ("c", "char_ngrams", "word_ngrams", "max_char_features", "max_word_features", "seed"):
        recorded = tuple(meta[key]) if isinstance(meta[key], list) else meta[key]
        assert recorded == defaults[key], f"meta {key!r} is {meta[key]!r}, fit_tfidf's default {defaults[key]!r}"
    calibration = meta["calibration"]
    assert calibration["folds"] == defaults["folds"]
    oof = calibration["out_of_fold"]
    assert len(oof) == calibration["n_out_of_fold"] == calibration["chosen"]["n"]
    again = choose_threshold([p for p, _, _, _ in oof], [cj for _, _, cj, _ in oof], [fj for _, _, _, fj in oof])
    assert again["threshold"] == pytest.approx(TfidfClassifier.load().threshold, abs=1e-6)
    assert again["mean_jaccard"] == pytest.approx(calibration["chosen"]["mean_jaccard"], abs=1e-6)


def test_retraining_on_the_release_adds_its_instructions(tmp_path):
    """`judge-train criteria-classifier --data <release> --allow-benchmark-rows` (a deliberate experiment: refused
    without the flag, tests/unit/test_train_classifier.py) reads the rebuilt release by its task columns (one row per
    distinct instruction), adds it to the taxonomy texts, and writes an artefact judge-eval and judge-serve load.
    One fold: the out-of-fold calibration (two more fits, 8 of this test's 12 s) is the same code whatever the rows'
    source, and test_tfidf_learns_saves_and_reloads_without_pickle checks it."""
    from tests.support.release_artifacts import released_rows, write_released_dataset
    from train.criteria_classifier import main

    release = write_released_dataset(tmp_path / "POLLUX")
    out = tmp_path / "clf"
    args = ["--data", str(release), "--allow-benchmark-rows", "--out", str(out), "--no-bundled", "--folds", "1", "--max-char-features",
            "2000", "--max-word-features", "300"]  # fmt: skip
    assert main(args) == 0
    clf = TfidfClassifier.load(out)
    instructions = {r["instruction"] for r in released_rows()}
    n_taxonomy = len(taxonomy_rows(include_zero_shot=True))
    assert clf.meta["n_train"] == n_taxonomy + len(instructions)
    assert clf.meta["calibration"]["n_instructions"] == len(instructions)
    assert clf.threshold == DEFAULT_THRESHOLD and clf.meta["calibration"]["note"].startswith("1 fold: no out-of-fold")


# ----------------------------------------------------------------------------------------------- expansion


def test_expand_criteria_makes_one_item_per_chosen_criterion():
    """One POLLUX-format item per criterion of the chosen leaf, named and rubricated from the taxonomy."""
    choice = choose_from_scores({"Code creation / Python": 0.8}, "tfidf")
    items, record = expand_criteria("Напиши функцию", "def f(): pass", choice, extra={"model_id": "m"})
    leaf = leaf_of("Code creation / Python")
    assert [i["criterion_id"] for i in items] == list(leaf.criteria)
    first = TAX.criteria[leaf.criteria[0]]
    assert items[0]["criteria_name"] == first.name["ru"] and items[0]["rubrics"] == first.rubric("ru")
    assert {i["task_subtype"] for i in items} == {"Python"} and items[0]["model_id"] == "m"
    assert all(i["task_choice"] == record == choice.to_dict() for i in items)


def test_expand_criteria_in_fallback_uses_the_shared_set():
    """Below the threshold the items are the 13 shared criteria, and the record says it fell back."""
    choice = choose_from_scores({"Advice": 0.1}, "tfidf")
    items, record = expand_criteria("?", "!", choice)
    assert [i["criterion_id"] for i in items] == list(fallback_criteria()) and record["fallback"] is True


def test_expanded_items_load_as_judge_records(tmp_path):
    """The expanded items are valid POLLUX-format records (judge.load_records reads them)."""
    from judge import load_records

    choice = choose_from_scores({"Advice": 0.9}, "tfidf")
    items, _ = expand_criteria("Как выспаться?", "Ложитесь раньше.", choice)
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    records = load_records(path, make_id=True)
    assert [r.criteria_name for r in records] == [i["criteria_name"] for i in items]


@pytest.mark.parametrize(
    "chosen, gold, match, expected",
    [
        (["a", "b"], ["b", "c"], "exact", {"precision": 0.5, "recall": 0.5, "jaccard": 1 / 3}),
        (["a", "b"], ["b", "c"], "base", {"precision": 0.5, "recall": 0.5, "jaccard": 1 / 3}),
        # a variant matches its base id only by base id: {a, b} against {a, b, c, d}; exactly, only b of
        # {a__2, b, a, c, d}
        (["a__2", "b"], ["a", "b", "c", "d"], "base", {"precision": 1.0, "recall": 0.5, "jaccard": 0.5}),
        (["a__2", "b"], ["a", "b", "c", "d"], "exact", {"precision": 0.5, "recall": 0.25, "jaccard": 0.2}),
        (["a"], ["a"], "exact", {"precision": 1.0, "recall": 1.0, "jaccard": 1.0}),
    ],
)
def test_criteria_set_scores_by_hand(chosen, gold, match, expected):
    """Precision |A∩B|/|A|, recall |A∩B|/|B|, Jaccard |A∩B|/|A∪B|, over exact or base ids (worked by hand)."""
    got = criteria_set_scores(chosen, gold, match=match)
    assert got == pytest.approx(expected)


def test_a_sibling_leafs_variants_match_by_base_id_only():
    """The C++ leaf's criteria against the Python leaf's: the same five qualities in other variants (other rubrics),
    so Jaccard 1 by base id and 0 by exact id; the reading is always named (no default), and only the two exist."""
    python, cpp = leaf_of("Code creation / Python").criteria, leaf_of("Code creation / C++").criteria
    assert len(python) == 5 and not set(python) & set(cpp)
    assert criteria_set_scores(cpp, python, match="base")["jaccard"] == 1.0
    assert criteria_set_scores(cpp, python, match="exact")["jaccard"] == 0.0
    with pytest.raises(TypeError):
        criteria_set_scores(cpp, python)
    with pytest.raises(ValueError, match="match must be one of"):
        criteria_set_scores(cpp, python, match="loose")


def test_threshold_readings_choose_by_each_reading_by_hand(monkeypatch):
    """train.criteria_tfidf.threshold_readings over two hand-made out-of-fold choices, the fallback set {f}:
    A (p 0.9) chose {x__1}, gold {x__1}: Jaccard 1 either way, fallback 0. B (p 0.4) chose {y__1, f}, gold {y__2, f}:
    exact 1/3, base 1; the fallback {f} scores 1/2 either way. By base id, never falling back is best (mean 1.0,
    threshold 0); by exact id, B falling back is (t 0.9: (1 + 1/2) / 2 = 0.75 against (1 + 1/3) / 2), which reads
    0.75 by base id too."""
    import train.criteria_tfidf as ct

    choices = [(0.9, True, ("x__1",), ("x__1",)), (0.4, True, ("y__1", "f"), ("y__2", "f"))]
    monkeypatch.setattr(ct, "_out_of_fold_choices", lambda pairs, real, folds, params: (1.0, choices))
    monkeypatch.setattr(ct, "fallback_criteria", lambda: ("f",))
    readings = ct.threshold_readings([{"instruction": "i", "label": "Advice"}], sweep=(0.0, 0.5, 1.0))
    got = readings["chosen"]
    assert (got["base"]["threshold"], got["base"]["fallback_rate"]) == (0.0, 0.0)
    assert got["base"]["mean_jaccard_by"] == pytest.approx({"base": 1.0, "exact": (1 + 1 / 3) / 2})
    assert (got["exact"]["threshold"], got["exact"]["fallback_rate"]) == (0.9, 0.5)
    assert got["exact"]["mean_jaccard_by"] == pytest.approx({"base": 0.75, "exact": 0.75})
    # at 0.5 B falls back (as at 0.9); at 1.0 both do: the fallback set's 0 and 1/2
    assert [(r["threshold"], r["fallback_rate"]) for r in readings["sweep"]] == [(0.0, 0.0), (0.5, 0.5), (1.0, 1.0)]
    assert readings["sweep"][2]["mean_jaccard_by"] == pytest.approx({"base": 0.25, "exact": 0.25})
    assert ct.THRESHOLD_MATCH == "base"


class _Fixed:
    """A classifier that always gives the same leaf probabilities (a test double behind the Protocol)."""

    name = "fixed"
    threshold = 0.5

    def __init__(self, scores):
        self.scores = scores

    def predict_proba(self, instructions):
        return [dict(self.scores) for _ in instructions]

    def choose(self, instruction, answer=None, top_k=3):
        return choose_from_scores(self.scores, self.name, self.threshold, top_k)


def test_expand_rows_expands_unlabelled_rows_and_passes_labelled_ones():
    """Rows without criteria_name become one item per criterion (ids row::criterion); labelled rows pass through."""
    from judge.criteria_auto import expand_rows
    from judge.criteria_auto.expansion import instruction_key

    rows = [
        {"id": "q1", "instruction": "Дай совет", "answer": "Спи.", "model_id": "m", "reference_answer": "r"},
        {"id": "q2", "instruction": "i", "answer": "a", "criteria_name": "Креативность", "rubrics": "0: a\n\n1: b"},
    ]
    items, choices = expand_rows(rows, _Fixed({"Advice": 0.9}))
    n = len(leaf_of("Advice").criteria)
    assert len(items) == n + 1 and items[-1] == rows[1]
    assert items[0]["id"] == f"q1::{leaf_of('Advice').criteria[0]}"
    assert items[0]["model_id"] == "m" and items[0]["reference_answer"] == "r"
    # a classifier that states no identity is recorded by its name
    assert choices == [{"row": 0, "id": "q1", "instruction_key": instruction_key("Дай совет"), "classifier": "fixed",
                        **choose_from_scores({"Advice": 0.9}, "fixed").to_dict()}]


def test_expand_rows_item_ids_never_collide():
    """A row id of 0 is that row's id (it once read as "none given" and became its index, another row's id); a
    row id repeated on other content is refused naming both rows, since its items' ids would repeat (the same row
    twice is left out, counted: test_criteria_auto_rows.py)."""
    from judge.criteria_auto import expand_rows

    rows = [{"id": 1, "instruction": "Дай совет", "answer": "Спи."}, {"id": 0, "instruction": "Дай совет", "answer": "Ешь."}]
    items, _ = expand_rows(rows, _Fixed({"Advice": 0.9}))
    ids = [item["id"] for item in items]
    assert len(ids) == len(set(ids)) and {i.split("::")[0] for i in ids} == {"1", "0"}
    with pytest.raises(ValueError, match=r"data.jsonl: row 1: id 'q' repeats the id of row 0 with other content"):
        expand_rows([{"id": "q", "instruction": "a", "answer": "b"}, {"id": "q", "instruction": "a", "answer": "c"}],
                    _Fixed({"Advice": 0.9}), "data.jsonl")


def test_expand_file_keeps_a_line_whose_text_holds_a_line_separator(tmp_path):
    """U+2028 inside a string, written raw by json.dumps(ensure_ascii=False), is no line end of JSONL."""
    from judge import load_records
    from judge.criteria_auto import expand_file

    src = tmp_path / "pairs.jsonl"
    src.write_text(json.dumps({"id": "a", "instruction": "Дай\u2028совет", "answer": "Спи.\u0085"},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    records = load_records(expand_file(src, tmp_path / "out", _Fixed({"Advice": 0.9})))
    assert records and {r.instruction for r in records} == {"Дай\u2028совет"}


def test_expand_rows_names_a_row_without_answer():
    """A row with no answer is an error naming the source and row, not a silently dropped item."""
    from judge.criteria_auto import expand_rows

    with pytest.raises(ValueError, match="data.jsonl: row 1: 'answer'"):
        expand_rows([{"instruction": "a", "answer": "b"}, {"instruction": "a"}], _Fixed({"Advice": 0.9}), "data.jsonl")


@pytest.mark.parametrize("field", ["expert_scores", "criteria_score", "annotations"])
def test_expand_rows_refuses_labels_without_a_criterion(field):
    """Expert labels belong to one criterion: a pair row that carries them is refused (naming row and field) rather
    than copied onto every chosen criterion as a made-up reference."""
    from judge.criteria_auto import expand_rows

    value = {"expert_scores": [2, 2], "criteria_score": 2.0, "annotations": [{"comment": "", "score": 2.0}]}[field]
    with pytest.raises(ValueError, match=f"data.jsonl: row 0: field '{field}' labels one criterion"):
        expand_rows([{"instruction": "a", "answer": "b", field: value}], _Fixed({"Advice": 0.9}), "data.jsonl")


def test_expand_file_reads_jsonl_only_and_says_how_to_convert(tmp_path):
    """criteria: auto over a non-JSONL source is a clear error pointing at judge-eval convert."""
    from judge.criteria_auto import expand_file

    with pytest.raises(ValueError, match="judge-eval convert"):
        expand_file(tmp_path / "pairs.parquet", tmp_path / "out", _Fixed({"Advice": 0.9}))


def test_expand_file_writes_items_that_load_as_records_and_the_choices(tmp_path):
    """expand_file: auto_items.jsonl loads through judge.load_records; task_choices.jsonl has one row per pair."""
    from judge import load_records
    from judge.criteria_auto import expand_file

    src = tmp_path / "pairs.jsonl"
    src.write_text('{"id": "a", "instruction": "Дай совет", "answer": "Спи."}\n\n'
                   '{"id": "b", "instruction": "Ещё совет", "answer": "Ешь."}\n', encoding="utf-8")  # fmt: skip
    path = expand_file(src, tmp_path / "out", _Fixed({"Advice": 0.9}))
    records = load_records(path)
    n = len(leaf_of("Advice").criteria)
    assert len(records) == 2 * n and records[0].id == f"a::{leaf_of('Advice').criteria[0]}"
    assert records[0].task_type == "Advice" and records[0].extra["task_choice"]["label"] == "Advice"
    choices = _rows(tmp_path / "out" / "task_choices.jsonl")
    assert [c["id"] for c in choices] == ["a", "b"]


def test_the_criteria_benchmark_scores_a_fixed_classifier_by_hand():
    """bench/criteria_auto: a classifier that always says Advice (0.9) over one Advice and one Fact-checking row:
    leaf top-1 1/2, top-3 2/2 (Fact checking is its second alternative), Jaccard 1 on the Advice row."""
    from bench.criteria_auto import evaluate, summarise

    rows = [{"id": "1", "instruction": "x", "label": "Advice", "split": STANDARD},
            {"id": "2", "instruction": "y", "label": "Fact checking", "split": STANDARD}]  # fmt: skip
    results = evaluate(_Fixed({"Advice": 0.9, "Fact checking": 0.1}), rows)
    assert [r["leaf_top1"] for r in results] == [True, False] and [r["leaf_top3"] for r in results] == [True, True]
    assert results[0]["set_exact"] == results[0]["set_base"] == {"precision": 1.0, "recall": 1.0, "jaccard": 1.0}
    s = summarise(results)
    assert (s["n"], s["leaf_top1"], s["leaf_top3"], s["type_top1"], s["fallback"]) == (2, 0.5, 1.0, 0.5, 0.0)
    assert s["set_exact_jaccard"] == pytest.approx((1.0 + results[1]["set_exact"]["jaccard"]) / 2)


def test_the_criteria_benchmark_prints_both_readings(tmp_path, capsys):
    """A Python instruction routed to the C++ leaf: the bench scores its criteria set 1.0 by base id and 0.0 by exact
    id, and prints both, each column named by its reading."""
    from bench.criteria_auto import evaluate, main, summarise

    rows = [{"id": "1", "instruction": "x", "label": "Code creation / Python", "split": STANDARD}]
    (r,) = evaluate(_Fixed({"Code creation / C++": 0.9}), rows)
    assert (r["set_base"]["jaccard"], r["set_exact"]["jaccard"]) == (1.0, 0.0)
    s = summarise([r])
    assert (s["set_base_jaccard"], s["set_exact_jaccard"], s["set_no_fallback_exact_jaccard"]) == (1.0, 0.0, 0.0)
    heldout = tmp_path / "heldout.jsonl"
    heldout.write_text(json.dumps({"id": "1", "instruction": "Напиши функцию на Python, которая сортирует список",
                                   "label": "Code creation / Python"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["--heldout", str(heldout)]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    assert ("| P / R / J exact ids | P / R / J base ids | P / R / J top-1 leaf, exact | P / R / J top-1 leaf, base |"
            in header)


@pytest.mark.parametrize("text, why", [
    ("写一首关于春天的诗", "no character or word n-gram"), ("§§§ ¶¶¶", "no character or word n-gram"),
    # known n-grams, but only digits, punctuation or a lone letter: the priors moved by them gave a confident
    # Mathematics leaf (0.226, 0.18, 0.211, 0.116), above the shipped threshold
    ("写一首关于春天的诗 2024", "too little Cyrillic text"), ("?", "too little Cyrillic text"),
    ("a", "too little Cyrillic text"), ("§§§ ¶¶¶ 1", "too little Cyrillic text"),
    # English: Latin n-grams the models know from words quoted in translation and code tasks gave a Translation
    # leaf at 0.921 and a Mathematics leaf, as confident as a real Russian instruction's
    ("Summarize the following article in three sentences.", "too little Cyrillic text"),
    ("Tell me a joke about cats.", "too little Cyrillic text"),
], ids=["chinese", "symbols", "chinese and digits", "question mark", "one letter", "symbols and a digit",
        "english summary", "english joke"])  # fmt: skip
def test_text_with_too_thin_evidence_falls_back(shipped_tfidf, text, why):
    """A text none of whose known n-grams holds two Cyrillic letters (English or another script, symbols, digits, one
    letter) has only the models' priors, moved by Latin words, digits and punctuation, for scores, one of which is
    above the fitted threshold: it falls back to the criteria that apply to any text, saying why ("too little
    Cyrillic text": the check counts Cyrillic, not Russian), instead of a confident STEM exercise or translation."""
    from judge.criteria_auto import fallback_criteria

    choice = shipped_tfidf.choose(text)
    assert (choice.level, choice.fallback) == ("fallback", True)
    assert choice.criteria == tuple(fallback_criteria()) and why in choice.reason


def test_the_evidence_floor_is_far_below_every_bundled_instruction(shipped_tfidf):
    """The floor (MIN_LETTER_NGRAMS) leaves real instructions alone: each of the bundled sets' (held-out,
    training, sample) holds at least seven times as many known n-grams of two Cyrillic letters (39 at least, a C#
    snippet with a short Russian request; English quoted in a translation request counts for nothing); a
    three-letter word passes it."""
    from judge import sample_data_path
    from judge.criteria_auto.tfidf import MIN_LETTER_NGRAMS

    clf = shipped_tfidf
    pairs, _ = load_labelled([heldout_path(), training_path(), sample_data_path()], include_zero_shot=True)
    letters = clf.features.letter_columns()
    evidence = [int(letters[clf.features.transform([p["instruction"]]).indices].sum()) for p in pairs]
    assert MIN_LETTER_NGRAMS == 5 and min(evidence) >= 7 * MIN_LETTER_NGRAMS
    assert clf.choose("Реши: 2+2").level != "fallback"


def test_the_classifier_reads_a_bounded_opening_and_ending_of_a_long_instruction():
    """A client's instruction is bounded before the work: past MAX_CLASSIFIED_CHARS its opening (half the budget)
    and its ending are read, joined by a newline, so a megabyte of text costs what MAX_CLASSIFIED_CHARS do."""
    from judge.criteria_auto.policy import MAX_CLASSIFIED_CHARS, classified_text
    from judge.criteria_auto.tfidf import TfidfClassifier

    clf = TfidfClassifier.load()
    opening = "Напиши стихотворение о весне в городе. " * 600
    ending = "x" * 1_000_000
    assert len(opening) > MAX_CLASSIFIED_CHARS
    read = classified_text(opening + ending)
    assert len(read) == MAX_CLASSIFIED_CHARS and read == opening[:MAX_CLASSIFIED_CHARS // 2] + "\n" + read[-9_999:]
    assert read.endswith("x" * 9_999) and classified_text(opening[:100]) == opening[:100]
    seen = []
    real = clf.features.transform
    clf.features.transform = lambda texts: seen.append([len(t) for t in texts]) or real(texts)
    assert clf.choose(opening + ending) == clf.choose(read)
    assert seen == [[MAX_CLASSIFIED_CHARS], [MAX_CLASSIFIED_CHARS]]


def test_a_request_after_a_long_pasted_text_is_read(shipped_tfidf):
    """A request stated after a pasted text longer than MAX_CLASSIFIED_CHARS ("<article> Переведи этот текст на
    английский язык.") was cut off with the rest past the opening, and the text classified on the article alone
    (a persuasion task); its ending is read too, so it is a translation."""
    from judge.criteria_auto.policy import MAX_CLASSIFIED_CHARS

    article = "Москва — столица России. " * 1000
    assert len(article) > MAX_CLASSIFIED_CHARS
    choice = shipped_tfidf.choose(article + "\nПереведи этот текст на английский язык.")
    assert choice.task_type == "Translation, English-Russian language pair" and choice.level == "leaf"


def test_a_choice_without_probabilities_renders_as_strict_json():
    """The llm method without logprobs holds NaN for its path's probability; the choice's dict (judge-serve's
    task_choice, judge-eval's task_choices.jsonl) writes null, which strict JSON readers take."""
    import json
    import math

    from judge.criteria_auto import TaskChoice

    choice = TaskChoice(task_type="Advice", task_subtype="", task_subsubtype="", label="Advice", probability=None,
                        alternatives=(("Advice", math.nan),), criteria=("grammar",), fallback=False, reason="",
                        method="llm")
    row = json.loads(json.dumps(choice.to_dict(), allow_nan=False))
    assert row["alternatives"] == [{"label": "Advice", "probability": None}]


def test_expand_rows_keeps_the_rows_own_task_and_columns(shipped_tfidf):
    """A row that names its task is expanded with that task's criteria (method "given"), not the classifier's
    guess (an English poem request reads as a translation to it); one naming only a task type of several leaves gets
    the criteria they share; a row's other columns reach every item; an unknown task is an error naming the row."""
    from judge.criteria_auto import type_criteria
    from judge.criteria_auto.expansion import expand_rows
    from judge.taxonomy import load_taxonomy

    clf = shipped_tfidf
    taxonomy = load_taxonomy()
    rows = [{"id": "p", "instruction": "Write a poem about spring.", "answer": "x", "task_type": "Literary text",
             "task_subtype": "Poetry", "my_col": "kept"},
            {"id": "t", "instruction": "Напиши стих", "answer": "y", "task_type": "Literary text"}]
    items, choices = expand_rows(rows, clf)
    (poetry,) = taxonomy.find_tasks("Literary text", "Poetry")
    assert [(c["method"], c["level"]) for c in choices] == [("given", "leaf"), ("given", "task_type")]
    assert choices[0]["criteria"] == list(poetry.criteria)
    assert choices[1]["criteria"] == list(type_criteria("Literary text", taxonomy))
    first = [i for i in items if i["id"].startswith("p::")]
    assert {(i["task_type"], i["task_subtype"], i["my_col"]) for i in first} == {("Literary text", "Poetry", "kept")}
    assert {i["task_type"] for i in items if i["id"].startswith("t::")} == {"Literary text"}
    with pytest.raises(ValueError, match=r"data: row 0: field 'task_type'"):
        expand_rows([{"instruction": "a", "answer": "b", "task_type": "Нет такого типа"}], clf)


class _Flaky:
    """A classifier that raises (an endpoint down) for the instructions in ``down`` and says Advice otherwise; it
    records what it was asked."""

    name = "flaky"
    threshold = 0.5

    def __init__(self, down=()):
        self.down, self.asked = set(down), []

    def predict_proba(self, instructions):
        return [{"Advice": 0.9} for _ in instructions]

    def choose(self, instruction, answer=None, top_k=3):
        self.asked.append(instruction)
        if instruction in self.down:
            raise ConnectionError("connection refused")
        return choose_from_scores({"Advice": 0.9}, self.name, self.threshold, top_k)


_PAIRS = [{"id": "a", "instruction": "Дай совет", "answer": "Спи."},
          {"id": "b", "instruction": "Ещё совет", "answer": "Ешь."},
          {"id": "c", "instruction": "Напиши стих", "answer": "x", "task_type": "Literary text",
           "task_subtype": "Poetry"}]  # fmt: skip


def test_failed_choices_are_counted_in_a_warning(caplog):
    """One row of the two classified fails: it is that row's fallback, and one warning says how many failed (the
    row naming its own task is not asked, so not counted)."""
    import logging

    from judge.criteria_auto import expand_rows

    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.expansion"):
        _, choices = expand_rows(_PAIRS, _Flaky(down={"Дай совет"}))
    assert [c["label"] == "" for c in choices] == [True, False, False]
    assert choices[0]["reason"] == "the classifier failed: ConnectionError: connection refused"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "failed on 1 of 2 rows (row 0: the classifier failed" in warnings[0].getMessage()


def test_every_choice_failing_is_refused_and_nothing_written(tmp_path):
    """Every row of the data a failed choice (the classifier's endpoint down, no row naming its criteria or task)
    refuses the expansion, a ValueError naming the count and the first failure, and writes no items a run would
    judge on the fallback set."""
    from judge.criteria_auto import ChoicesFailed, expand_file

    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _PAIRS[:2]), encoding="utf-8")
    with pytest.raises(ChoicesFailed, match=r"pairs.jsonl: the task classifier \(flaky\) failed on all 2 rows .*"
                                            r"line 1: the classifier failed: ConnectionError"):
        expand_file(src, tmp_path / "out", _Flaky(down={"Дай совет", "Ещё совет"}))
    assert issubclass(ChoicesFailed, ValueError) and not (tmp_path / "out").exists()


@pytest.mark.parametrize("others", ["criteria_name", "task_type", "classified"])
def test_failed_choices_among_rows_judged_otherwise_are_a_warning_not_a_refusal(others, caplog):
    """One failed choice among rows that name their criteria (999 of them), or name their task, or were classified,
    is that row's fallback and a warning: the run is refused only when every row of the data is a failed choice
    (once the one row asked about failing refused a thousand rows with explicit criteria)."""
    import logging

    from judge.criteria_auto import expand_rows, fallback_criteria

    down = {"Дай совет"}
    explicit = {"instruction": "Напиши стих", "answer": "x", "criteria_name": "Грамотность", "rubrics": "0: нет\n\n1: да"}
    rest = {"criteria_name": [{"id": f"e{k}", **explicit} for k in range(999)],
            "task_type": [_PAIRS[2]],
            "classified": [_PAIRS[1]]}[others]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.expansion"):
        items, choices = expand_rows([*rest, _PAIRS[0]], _Flaky(down=down))
    assert [c["id"] for c in choices if c["label"] == ""] == ["a"]
    assert [i["criterion_id"] for i in items if i["id"].startswith("a::")] == list(fallback_criteria())
    assert len(items) >= len(rest) + len(fallback_criteria())
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    asked = 2 if others == "classified" else 1
    assert len(warnings) == 1 and f"failed on 1 of {asked} rows (row {len(rest)}: the classifier" in warnings[0]


@pytest.mark.parametrize("task_type", ["Code analysis", "Code creation", "Code modification", "STEM exercises"])
def test_a_row_naming_only_a_task_type_whose_leaves_share_nothing_is_refused(task_type):
    """A row naming only a STEM or Code task type (its leaves list per-leaf variants only, no criterion as one id) is
    refused, naming the row, the field task_subtype and the leaves to choose from, rather than judged on the
    fallback set (for a text of unknown task; none of its criteria is one such a leaf lists); naming the leaf works."""
    from judge.criteria_auto import expand_rows, label_of
    from judge.taxonomy import load_taxonomy

    leaves = load_taxonomy().find_tasks(task_type)
    row = {"id": "r", "instruction": "Реши задачу", "answer": "42", "task_type": task_type}
    clf = _Flaky()
    with pytest.raises(ValueError, match=rf"pairs.jsonl: row 1: field 'task_subtype': the row names task type "
                                         rf"'{task_type}' only.*name the leaf, one of: {label_of(leaves[0])}; "):
        expand_rows([_PAIRS[2], row], clf, "pairs.jsonl")
    assert clf.asked == []  # not guessed over by the classifier either
    _, (choice,) = expand_rows([{**row, "task_subtype": leaves[0].subtype}], clf)
    assert (choice["method"], choice["level"], choice["criteria"]) == ("given", "leaf", list(leaves[0].criteria))


def test_a_task_type_alone_is_judged_only_on_criteria_its_leaves_list():
    """Every task type named alone: its choice's criteria are all listed by every one of its leaves (never the
    fallback set, never a criterion outside the type's lists), or the row is refused."""
    from judge.criteria_auto import expand_rows
    from judge.taxonomy import load_taxonomy

    taxonomy = load_taxonomy()
    refused = []
    for task_type in taxonomy.task_types:
        leaves = taxonomy.find_tasks(task_type)
        try:
            _, (choice,) = expand_rows([{"instruction": "a", "answer": "b", "task_type": task_type}], _Flaky())
        except ValueError:
            refused.append(task_type)
            continue
        assert choice["method"] == "given" and not choice["fallback"], task_type
        assert all(cid in leaf.criteria for cid in choice["criteria"] for leaf in leaves), task_type
    assert sorted(refused) == ["Code analysis", "Code creation", "Code modification", "STEM exercises"]


def test_a_row_naming_a_subtype_of_several_leaves_gets_the_criteria_those_leaves_share():
    """A row naming a task type and one of its subtypes with several leaves (mass culture: video games, cinema,
    comics) is judged on the criteria those three leaves all list (15), not on the fewer every leaf of the whole
    type lists (11: the fourth leaf lacks some), and its record and items keep the subtype it names."""
    from judge.criteria_auto import expand_rows

    subtype = "Creative brainstorming for mass culture"
    leaves = TAX.find_tasks("Creative brainstorming", subtype)
    shared = [cid for cid in leaves[0].criteria if all(cid in leaf.criteria for leaf in leaves)]
    assert len(leaves) == 3 and len(shared) == 15 and len(type_criteria("Creative brainstorming", TAX)) == 11
    row = {"id": "r", "instruction": "Придумай сюжет", "answer": "x", "task_type": "Creative brainstorming",
           "task_subtype": subtype}
    clf = _Flaky()
    items, (choice,) = expand_rows([row], clf)
    assert clf.asked == [] and choice["criteria"] == shared
    assert (choice["method"], choice["level"], choice["fallback"]) == ("given", "task_subtype", False)
    assert (choice["task_type"], choice["task_subtype"], choice["task_subsubtype"]) == ("Creative brainstorming",
                                                                                         subtype, "")
    assert choice["label"] == f"Creative brainstorming / {subtype}" and f"subtype '{subtype}'" in choice["reason"]
    assert [i["criterion_id"] for i in items] == shared
    assert {(i["task_type"], i["task_subtype"]) for i in items} == {("Creative brainstorming", subtype)}
    # the whole type, named alone, still gets what all four of its leaves share
    _, (whole,) = expand_rows([{**row, "task_subtype": ""}], clf)
    assert (whole["level"], whole["task_subtype"], len(whole["criteria"])) == ("task_type", "", 11)


def test_a_resumed_expansion_classifies_failed_rows_again(tmp_path):
    """expand_file(resume=True) over an earlier expansion with a failed row: only that row is asked again; the
    others keep their recorded choices and items (byte for byte); a row whose id has no recorded choice (the data
    changed) is classified anew."""
    from judge.criteria_auto import expand_file, failed_choices

    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _PAIRS), encoding="utf-8")
    out = tmp_path / "out"
    expand_file(src, out, _Flaky(down={"Дай совет"}))
    assert [c["id"] for c in failed_choices(out / "task_choices.jsonl")] == ["a"]
    before = _rows(out / "auto_items.jsonl")
    again = _Flaky()
    expand_file(src, out, again, resume=True)
    assert again.asked == ["Дай совет"] and failed_choices(out / "task_choices.jsonl") == []
    after = _rows(out / "auto_items.jsonl")
    assert [i for i in after if not i["id"].startswith("a::")] == [i for i in before if not i["id"].startswith("a::")]
    assert {i["task_type"] for i in after if i["id"].startswith("a::")} == {"Advice"}
    # a failed row again, then other data under the same rows: rows of new ids are classified anew, not mixed
    # with the choices of the rows they replaced
    expand_file(src, out, _Flaky(down={"Дай совет"}))
    src.write_text("".join(json.dumps({**r, "id": r["id"] + "2"}, ensure_ascii=False) + "\n" for r in _PAIRS),
                   encoding="utf-8")
    fresh = _Flaky()
    expand_file(src, out, fresh, resume=True)
    assert fresh.asked == ["Дай совет", "Ещё совет"]
    assert [c["id"] for c in _rows(out / "task_choices.jsonl")] == ["a2", "b2", "c2"]
