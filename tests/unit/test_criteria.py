"""judge.criteria: one resolver of a criterion for judge-serve's items and the reward client's unsent samples (fast
tier). A sample too large to send must fail or be refused exactly as judge-serve would treat its item. Also the
out-of-fold folds the tfidf task classifier of ``criteria: auto`` is calibrated on (train.criteria_tfidf)."""

from __future__ import annotations

import re

import pytest

from judge.criteria import CriterionError, resolve_criterion, task_path
from judge.reward_clients import JudgeRewardClient, RewardSample
from judge.rewards import RewardRule
from judge.scales import MAX_LEVELS
from judge.wire import CustomCriterion
from serve.schema import RequestError, clip_message, parse_judge_request, resolve_criteria

PYTHON = {"task_type": "Code modification", "task_subtype": "Python"}
RUBRIC = "0: плохо\n\n1: хорошо"


def _serve_refusal(spec, task: dict) -> RequestError:
    """judge-serve's refusal of a one-item request judging on ``spec``."""
    with pytest.raises(RequestError) as refused:
        request = parse_judge_request({"items": [{"instruction": "Q", "answer": "A", "criteria": [spec], **task}]})
        resolve_criteria(request.items[0], 0)
    return refused.value


def _unsent(spec, task: dict):
    """The reward client's reward for a sample on ``spec`` too large to send (a 1-byte bound: nothing goes out)."""
    client = JudgeRewardClient("http://127.0.0.1:9", rule=RewardRule.from_dict({"on_failure": "zero"}),
                               api_key_env="", max_body_bytes=1)
    return client.rewards([RewardSample("Q", "A", (spec,), None, tuple(task.items()))], first=3)[0]


@pytest.mark.parametrize("spec, task", [
    ({"name": "x", "rubrics": "  "}, {}),                   # empty rubric text: the old copy said "no scale found"
    ({"name": "x", "rubrics": {}}, {}),                     # empty mapping: the old copy said "empty rubric mapping"
    ({"name": "  ", "rubrics": RUBRIC}, {}),                # blank name: the old copy named no field
    ({"name": "x", "rubrics": "без шкалы"}, {}),            # no scale: the old copy named no field
    ("Нет такого", {}),
    ("Креативность", PYTHON),                               # a name the task does not use
    ("Креативность", {"task_type": "Extract"}),             # a name whose variants differ across the type's leaves
    ("facts__3", {"task_type": "Nope"}),                    # an id beside an unknown task: the old copy judged it
    ({"name": "x", "rubrics": RUBRIC}, {"task_type": "Nope"}),  # a custom criterion beside an unknown task: the same
])  # fmt: skip
def test_an_unsent_sample_is_refused_as_judge_serve_refuses_its_item(spec, task):
    """A task or criterion judge-serve refuses while resolving is refused for an unsent sample with the same field
    and message, its ``items[0]`` named as the caller's ``samples[3]``."""
    refused = _serve_refusal(spec, task)
    with pytest.raises(ValueError) as unsent:
        _unsent(spec, task)
    assert str(unsent.value) == refused.message.replace("items[0]", "samples[3]")


@pytest.mark.parametrize("spec", [
    {"name": "x", "rubrics": {"ru": {"0": "плохо", "1": "хорошо"}}},  # a mapping by language: the wire takes none
    {"name": "x", "rubrics": {"0": 0, "1": "хорошо"}},                # a level's text that is no text
    {"name": "x", "rubrics": {"str": 5}},                # a level named as pydantic names the union's string branch
    {"name": "x", "rubrics": {"str": "плохо", "1": None}},  # the level "str" fine, another's text no text
    {"name": "x", "rubrics": {"dict[str,str]": [1]}},    # a level named as the mapping branch
    {"name": "x", "rubrics": {"level one": 1}},          # a level whose name is quoted in a path
    {"name": "x", "rubrics": 5},                         # neither text nor a mapping: both kinds are named
    {"name": "x", "rubrics": ["0: плохо", "1: хорошо"]},
    {"name": "x", "rubrics": None},
    {"name": "x", "rubrics": RUBRIC, "id": "x"},         # a field the wire does not have
    {"name": "x", "rubrics": 5, "a_field_named_at_length": 1},  # an unknown field said before a shorter bad one
    {"name": "x"},                                       # no rubric
    {"rubrics": RUBRIC},                                 # no name
    {"rubrics": {"0": 0}},                               # no name, and a level's text that is no text
    {"name": 5, "rubrics": RUBRIC},
    {"name": "", "rubrics": RUBRIC},
    {"name": "x", "rubrics": {str(i): "t" for i in range(MAX_LEVELS + 1)}},  # more levels than a scale has
])  # fmt: skip
def test_an_unsent_custom_criterion_the_wire_refuses_is_refused_as_judge_serve_refuses_it(spec):
    """A ``{name, rubrics}`` object judge-serve's request type refuses (the wire's ``CustomCriterion``) is refused for
    an unsent sample with judge-serve's field (its ``param``) and words: both choose among pydantic's errors and word
    the one chosen by the contract's one ranking (``judge.wire.error_rank``, ``judge.wire.error_words``)."""
    refused = _serve_refusal(spec, {})
    with pytest.raises(ValueError) as unsent:
        _unsent(spec, {})
    field, words = str(unsent.value).split(": ", 1)
    assert field.startswith("samples[3].criteria[0].")
    served = field.replace("samples[3]", "items[0]", 1)
    assert refused.param == clip_message(served)
    assert refused.message == clip_message(f"{clip_message(served)}: {words}")


@pytest.mark.parametrize("length", [1500, 1_000_000])
def test_an_unsent_criterions_unknown_field_is_named_cut_to_a_bounded_length(length):
    """A client's unknown field of any length (a megabyte-long key) is named by the field judge-serve names, cut past
    a bounded length with its length said, as judge-serve clips what it echoes (``serve.schema.clip_message``): an
    error message (a log line, a traceback) is not the place for a megabyte of key."""
    spec = {"name": "x", "rubrics": RUBRIC, "k" * length: 1}
    refused = _serve_refusal(spec, {})
    with pytest.raises(ValueError) as unsent:
        _unsent(spec, {})
    message = str(unsent.value)
    assert len(message) < 400
    assert message.startswith("samples[3].criteria[0]." + "k" * 150)
    assert message.endswith(f"... [{length} characters]: unknown field")
    assert refused.param.startswith("items[0].criteria[0]." + "k" * 150)


def test_an_unsent_sample_names_its_criteria_as_judge_serve_resolves_them():
    """The criteria judge-serve accepts fail for an unsent sample under the names and ids it resolves: the task's
    variant for a name, a custom criterion's name as given, whose Python mapping may have integer levels (they
    arrive as strings once encoded)."""
    specs = ("Работоспособность", {"name": " Вежливость ", "rubrics": {0: "грубо", 1: "вежливо"}})
    request = parse_judge_request({"instruction": "Q", "answer": "A", **PYTHON,
                                   "criteria": [specs[0], {"name": " Вежливость ", "rubrics": {"0": "грубо", "1": "вежливо"}}]})
    served = resolve_criteria(request.items[0], 0)
    reward = _unsent(specs[0], PYTHON)
    assert [(c.criterion, c.criterion_id) for c in reward.criteria] == [(served[0].name, served[0].id)]
    assert served[0].id == "operability__10"  # the Python task's variant, not the base criterion
    reward = _unsent(specs[1], PYTHON)
    assert [(c.criterion, c.criterion_id, c.failure) for c in reward.criteria] == [(" Вежливость ", None, "context_length_exceeded")]


def test_a_rubric_mapping_reads_as_the_taxonomy_lays_out_rubrics():
    """A custom rubric given as a mapping is shown in the taxonomy's layout ("level: text", a blank line between),
    ordered by level number (10 after 2), and its scale read from its keys."""
    crit = resolve_criterion(CustomCriterion(name="Полнота", rubrics={"10": "полно", "2": "кратко", "0": "пусто"}))
    assert crit.rubrics == "0: пусто\n\n2: кратко\n\n10: полно"
    assert (crit.name, crit.id, crit.scale.levels) == ("Полнота", None, (0, 2, 10))


def test_a_rubric_mapping_is_ordered_by_the_levels_its_scale_reads():
    """A key written with the typographic minus ("−1", U+2212) is the level ``scale_of`` reads from it, and the
    rubric is shown ordered by those levels (keys as written): "−1" first, not sorted as 0 between "0" and "1", which
    would show the judge its levels out of order in a text that no longer reads as a scale."""
    from judge.scales import scale_of

    crit = resolve_criterion(CustomCriterion(name="Сравнение", rubrics={"1": "лучше", "0": "равно", "\u22121": "хуже"}))
    assert crit.rubrics == "\u22121: хуже\n\n0: равно\n\n1: лучше"
    assert crit.scale.levels == (-1, 0, 1) and scale_of(crit.rubrics).levels == (-1, 0, 1)


def test_a_rubric_mapping_keeps_its_keys_as_written_in_its_layout():
    """Layout check (``int()`` already read these keys, so this holds with or without the shared key reading): a key
    with a plus or with spaces is ordered by its level and shown as written."""
    crit = resolve_criterion(CustomCriterion(name="Полнота", rubrics={"+2": "полно", " 1": "кратко", "0": "пусто"}))
    assert crit.rubrics == "0: пусто\n\n 1: кратко\n\n+2: полно"


def test_a_custom_criterions_name_is_shown_as_given():
    """A custom criterion's name reaches the prompt as given, whitespace around it included, as POLLUX's str.format
    puts a record's criteria_name (judge-eval sends records' names as custom criteria); only a blank one is refused."""
    from judge.prompts import POLLUX_PROMPT

    crit = resolve_criterion(CustomCriterion(name=" Креативность\n", rubrics=RUBRIC))
    assert crit.name == " Креативность\n"
    assert POLLUX_PROMPT.criterion_part.format(criteria_name=crit.name, rubrics=crit.rubrics) == (
        "### Критерий оценки:\n Креативность\n\n\n### Шкала оценивания по критерию:\n0: плохо\n\n1: хорошо")
    with pytest.raises(CriterionError) as err:
        resolve_criterion(CustomCriterion(name=" \n", rubrics=RUBRIC))
    assert err.value.field == "name"


def test_a_criterion_error_names_its_field_under_the_callers_path():
    """The error carries the field at fault, so each caller names it under its own path."""
    with pytest.raises(CriterionError) as err:
        resolve_criterion(CustomCriterion(name="x", rubrics="  "), task_path(None))
    assert (err.value.field, err.value.param("items[2].criteria[0]")) == ("rubrics", "items[2].criteria[0].rubrics")
    with pytest.raises(CriterionError) as err:
        resolve_criterion("Нет такого")
    assert err.value.param("samples[1].criteria[4]") == "samples[1].criteria[4]"


# ------------------------------------------------- the tfidf task classifier's out-of-fold folds (criteria: auto)


class _FoldsSeen(Exception):
    """Raised by ``_fold_models`` once every fold model has been asked for: the test needs only their rows."""


def _fold_models(monkeypatch, pairs, folds: int = 5) -> list[set[str]]:
    """The instructions each out-of-fold model of ``train.criteria_tfidf`` is trained on (no model is fit)."""
    import train.criteria_tfidf as ct

    seen: list[set[str]] = []

    def record(rows, params, temperature, threshold):
        seen.append({r["instruction"] for r in rows})
        if len(seen) == folds:
            raise _FoldsSeen
        return None

    monkeypatch.setattr(ct, "_fit_once", record)
    real = [i for i, p in enumerate(pairs) if p.get("source") != "taxonomy"]
    params = {"char_ngrams": [2, 5], "word_ngrams": [1, 2], "max_char_features": 16000, "max_word_features": 4000,
              "c": 30.0, "seed": 0}
    with pytest.raises(_FoldsSeen):
        ct._out_of_fold_choices(pairs, real, folds, params)
    return seen


def test_near_duplicate_training_rows_are_held_out_in_one_fold(monkeypatch):
    """Three bundled instructions added again without their final ".": each copy is held out with its original, so
    no fold model scores an instruction it was trained on a near duplicate of (the out-of-fold figures the
    threshold and the temperature are chosen on would be inflated). Dealt row by row, each pair was split with
    probability 4/5."""
    from train.criteria_rows import bundled_rows

    pairs, _ = bundled_rows()
    originals = [p for p in pairs if p.get("source") != "taxonomy" and p["instruction"].endswith(".")][:3]
    copies = [{**p, "instruction": p["instruction"][:-1]} for p in originals]
    trained_on = _fold_models(monkeypatch, [*pairs, *copies])
    for original, copy in zip(originals, copies):
        # held out by exactly one fold model, and by the same one
        held = [k for k, rows in enumerate(trained_on) if original["instruction"] not in rows]
        assert len(held) == 1 and copy["instruction"] not in trained_on[held[0]], original["instruction"][:60]


def test_the_bundled_rows_folds_are_those_the_shipped_classifier_was_calibrated_on():
    """The bundled rows have no near duplicates among their real instructions, so grouping them leaves each its own
    group and the folds the seeded round robin they always were: the shipped model.json's threshold and temperature
    (chosen on those folds) stand without a rebuild."""
    import numpy as np

    from judge.criteria_auto import TfidfClassifier
    from judge.criteria_auto.labelled import near_duplicates
    from train.criteria_rows import bundled_rows
    from train.criteria_tfidf import out_of_fold_folds

    pairs, _ = bundled_rows()
    real = [i for i, p in enumerate(pairs) if p.get("source") != "taxonomy"]
    texts = [pairs[i]["instruction"] for i in real]
    assert all(i == j for i, j, _, _ in near_duplicates(texts, texts))
    cal = TfidfClassifier.load().meta["calibration"]
    assert (cal["folds"], cal["n_out_of_fold"], TfidfClassifier.load().meta["seed"]) == (5, len(real), 0)
    order = np.random.default_rng(0).permutation(real)  # how the shipped classifier's folds were dealt
    assert out_of_fold_folds(pairs, real, 5, 0) == [sorted(order[k::5].tolist()) for k in range(5)]


def test_a_blank_subtype_leaves_the_sub_subtype_in_its_place():
    """judge-serve's items and the reward clients' samples read a row's task as annotate and the labelled sets do
    (``Taxonomy.leaf``): a blank subtype is unknown, so "Informative translation" stays the sub-subtype it is. By
    hand from judge/data/tasks.json: it lies under Texts only, whose leaf has 18 criteria. Before: the blank was
    dropped, the sub-subtype read as a subtype, and the item refused ("has no subtype 'Informative translation'")."""
    from judge.taxonomy import load_taxonomy

    pair = "Translation, English-Russian language pair"
    assert task_path(pair, "", "Informative translation") == (pair, None, "Informative translation")
    assert task_path(pair, " ", None) == (pair,) and task_path(None, "", "  ") is None
    assert [leaf.path for leaf in load_taxonomy().find_tasks(pair, None, "Informative translation")] == [
        (pair, "Texts", "Informative translation")]
    request = parse_judge_request({"items": [{"instruction": "Переведи", "answer": "x", "task_type": pair,
                                              "task_subtype": "", "task_subsubtype": "Informative translation"}]})
    assert len(resolve_criteria(request.items[0], 0)) == 18


def test_a_long_criterion_name_not_used_by_the_task_is_echoed_clipped():
    """A name that matches once its whitespace is collapsed, but whose task does not use it, was echoed whole (5 MB
    of a client's text in the reward client's error); it is clipped as an unknown name is."""
    name = "Отсутствие избыточной информации (воды)"
    with pytest.raises(CriterionError) as refused:
        resolve_criterion(name + " " * 5_000_000, ("Editing",))
    assert len(str(refused.value)) < 1_000 and "[5000039 characters]" in str(refused.value)
    with pytest.raises(CriterionError, match=rf"^criterion '{re.escape(name)}' is not used by task Editing"):
        resolve_criterion(name, ("Editing",))


@pytest.mark.parametrize("spec", [7, ["0: плохо"], None, True])
def test_an_unsent_criterion_of_neither_kind_is_refused_in_judge_serves_words(spec):
    """A criterion that is neither a name nor a ``{name, rubrics}`` object is refused for an unsent sample as
    judge-serve refuses it (``judge.wire.criterion_kind_error``): both kinds named, and the value sent."""
    refused = _serve_refusal(spec, {})
    with pytest.raises(ValueError) as unsent:
        _unsent(spec, {})
    assert str(unsent.value) == refused.message.replace("items[0]", "samples[3]")
    assert "must be a criterion's name or id (a string) or a {name, rubrics} object, got " in str(unsent.value)
