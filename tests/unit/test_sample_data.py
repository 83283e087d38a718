"""The bundled sample data: enough rows of every kind for the later stages, consistent with the taxonomy."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

import judge
from judge.scales import has_unique_mode
from scripts import make_sample


@pytest.fixture(scope="module")
def records():
    return judge.load_records(judge.sample_data_path())


@pytest.fixture(scope="module")
def taxonomy():
    return judge.load_taxonomy()


def _path(record) -> tuple[str, ...]:
    return tuple(p for p in (record.task_type, record.task_subtype, record.task_subsubtype) if p)


def test_enough_rows_with_stable_ids(records):
    """At least 250 rows load without error, with ids s0001, s0002, ... in file order."""
    assert len(records) >= 250
    assert [r.id for r in records] == [f"s{i:04d}" for i in range(1, len(records) + 1)]


def test_both_splits_well_represented(records):
    """Zero-Shot and Standard rows are both present, at least 50 of each."""
    splits = Counter(judge.split_of(r, strict=True) for r in records)
    assert splits[judge.ZERO_SHOT] >= 50
    assert splits[judge.STANDARD] >= 50


def test_models_task_types_and_difficulties(records, taxonomy):
    """At least 4 evaluated models, 10 taxonomy task types, all three difficulties, and a domain on every row."""
    assert len({r.model_id for r in records}) >= 4
    task_types = {r.task_type for r in records}
    assert len(task_types) >= 10
    assert task_types <= set(taxonomy.task_types)
    assert {r.difficulty for r in records} == {"easy", "medium", "hard"}
    assert all(r.domain for r in records)


def test_every_criterion_is_the_leafs_with_its_real_rubric(records, taxonomy):
    """Each row's criterion resolves for its leaf task, is in the leaf's set, and carries the taxonomy's rubric text."""
    for r in records:
        leaves = taxonomy.find_tasks(*_path(r))
        assert len(leaves) == 1, r.id
        crit = taxonomy.criterion(r.criteria_name, task=leaves[0])
        assert crit.id in leaves[0].criteria, r.id
        assert r.rubrics == crit.rubric("ru"), r.id
        assert judge.oriented_scale(r.criteria_name, r.rubrics) == crit.scale, r.id  # levels and best level


def test_reference_answers_only_on_leaves_with_gold(records, taxonomy):
    """Rows carry a reference answer exactly when their leaf task has gold answers, and both kinds occur."""
    for r in records:
        assert bool(r.reference_answer) == taxonomy.find_tasks(*_path(r))[0].has_gold, r.id
    assert any(r.reference_answer for r in records) and any(not r.reference_answer for r in records)


def test_expert_scores_inside_scale_and_aggregate_is_their_mean(records):
    """Every expert score is a level of the rubric's scale, and criteria_score is the experts' mean."""
    for r in records:
        scale = judge.scale_of(r.rubrics)
        assert all(s in scale.levels for s in r.expert_scores), r.id
        assert r.criteria_score == pytest.approx(sum(r.expert_scores) / len(r.expert_scores)), r.id
    assert {judge.scale_of(r.rubrics).max for r in records} >= {1, 2}


def test_two_to_five_experts_each_with_a_rationale(records):
    """Each row has 2-5 expert scores and one Russian rationale of at least two words per score."""
    for r in records:
        assert 2 <= len(r.expert_scores) <= 5, r.id
        assert r.expert_feedback is not None and len(r.expert_feedback) == len(r.expert_scores), r.id
        assert all(len(text.split()) >= 2 for text in r.expert_feedback), r.id
        assert any("а" <= ch <= "я" for ch in "".join(r.expert_feedback).lower()), r.id


def test_some_rows_split_the_experts(records):
    """Some rows have no unique mode (roughly 10-15 %), and some have full agreement."""
    split = sum(not has_unique_mode(r.expert_scores) for r in records)
    assert 0.08 <= split / len(records) <= 0.18
    assert any(len(set(r.expert_scores)) == 1 for r in records)


@pytest.mark.parametrize("panel, unique", [
    ([], False),               # no expert: no reference (the scorer's expert_mode: NaN, not unique)
    ([2], True),               # one expert is the mode
    ([1, 2], False),           # one each: a tie
    ([0, 0, 1, 1, 2], False),  # two each of 0 and 1: a tie for the top
    ([0, 2, 2], True),         # 2 twice, 0 once
    ([1, 1, 1, 2, 2], True),   # 1 three times, 2 twice
])
def test_one_unique_mode_rule_for_the_sample_the_demo_and_the_scorer(panel, unique):
    """judge.scales.has_unique_mode (make_sample's summary, the demo's count, the test above) agrees with the
    scorer's expert_mode on each panel, an empty one included."""
    import numpy as np

    from eval.scoring.metrics import expert_mode

    assert has_unique_mode(panel) is unique
    table = np.array([panel + [np.nan] * (5 - len(panel))], dtype=float)
    assert bool(expert_mode(table)[1][0]) is unique


def test_data_source_reads_sample_and_refuses_an_empty_name():
    """`sample` is the bundled file, None (not given) and any other name pass as given, and an empty or blank
    name is refused naming the flag (read as a path it was the current folder)."""
    from judge.sample_data import data_source

    assert data_source("sample") == str(judge.sample_data_path())
    assert data_source(None) is None and data_source("rows.jsonl") == "rows.jsonl"
    for blank in ("", "  "):
        with pytest.raises(ValueError, match=r"^data: empty; give a file, folder or dataset name \(or `sample`\)$"):
            data_source(blank, "data")


def test_bundled_file_is_what_the_generator_writes(tmp_path, capsys):
    """The committed JSONL is, byte for byte, what a fresh run of the seeded generator writes (regenerate it after
    editing the content): parsed rows would compare equal across key order, separators and 2 against 2.0."""
    out = tmp_path / "sample.jsonl"
    assert make_sample.main(["--out", str(out)]) == 0
    capsys.readouterr()
    fresh, bundled = out.read_bytes(), judge.sample_data_path().read_bytes()
    if fresh != bundled:
        first = next(n for n, (a, b) in enumerate(zip(fresh.splitlines(), bundled.splitlines()), 1) if a != b)
        pytest.fail(f"judge/data/sample.jsonl differs from the generator's output from line {first}: "
                    "rerun `python -m scripts.make_sample`")


_ANSWER = {"model": "m", "scores": "2", "text": "ответ", "notes": {"general": "ок"}}
_ITEM = {"path": ["Editing"], "difficulty": "easy", "instruction": "И", "criteria": ["general"], "answers": [_ANSWER]}


@pytest.mark.parametrize(
    "item,message",
    [
        ({**_ITEM, "answers": [{**_ANSWER, "scores": 2}]}, "items[0].answers[0].scores: expected text, got 2 (quote it"),
        ({**_ITEM, "answers": [{**_ANSWER, "note": "x"}]}, "items[0].answers[0]: unknown keys ['note']"),
        ({k: v for k, v in _ITEM.items() if k != "difficulty"}, "items[0]: missing keys ['difficulty']"),
        ({**_ITEM, "path": "Editing"}, "items[0].path: expected a list of texts"),
    ],
)
def test_content_file_errors_name_the_place(tmp_path, item, message):
    """A malformed content file is refused with a message naming the item, answer and key (e.g. an unquoted score)."""
    import yaml

    phrases = yaml.safe_load((judge.sample_data_path().parent / make_sample.CONTENT).read_text(encoding="utf-8"))["phrases"]
    path = tmp_path / "content.yaml"
    path.write_text(yaml.safe_dump({"phrases": phrases, "items": [item]}, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(message)):
        make_sample.load_content(path)


def test_block_scalar_layout_is_not_content(tmp_path):
    """A text written as `|`, `|-` or `|+` (one, no, all trailing newlines) loads the same: outer whitespace is trimmed."""
    text = "def f():\n    return 1"
    body = "\n".join("        " + line for line in text.splitlines())
    base = ("phrases: {aspects: {}, verdicts: {bad: [], mid: [], good: []}, asides: {bad: [], mid: [], good: []},"
            " stricter: [], milder: []}\nitems:\n  - path: [Editing]\n    difficulty: easy\n    instruction: И\n"
            "    criteria: [general]\n    answers:\n")
    loaded = []
    for style in ("|", "|-", "|+"):
        path = tmp_path / f"c{len(loaded)}.yaml"
        path.write_text(base + f"    - model: m\n      scores: \"2\"\n      notes: {{}}\n      text: {style}\n{body}\n\n",
                        encoding="utf-8")
        loaded.append(make_sample.load_content(path)[1][0].answers[0].text)
    assert loaded == [text, text, text]


def _build_one(monkeypatch, scores: str, notes: dict[str, str]):
    """build_records over one Editing item scored by one answer on the two critical criteria (levels 0 and 1)."""
    phrases, _items = make_sample.load_content()
    answer = make_sample.Answer(model_id="m", scores=scores, text="ответ", notes=notes)
    item = make_sample.Item(path=("Editing",), difficulty="easy", instruction="Исправь ошибки.",
                            criteria=("narushenie_formata", "censor"), answers=(answer,),
                            reference="Исправленный текст.")
    monkeypatch.setattr(make_sample, "load_content", lambda path=None: (phrases, (item,)))
    return make_sample.build_records()


@pytest.mark.parametrize("token, problem", [
    ("0/1/0", "one level or two different levels split evenly"),
    ("1/1", "one level or two different levels split evenly"),
    ("1/01", "one level or two different levels split evenly"),
    ("x", "one level or two different levels split evenly"),
    ("0.5", "one level or two different levels split evenly"),
    ("-1", "one level or two different levels split evenly"),
    ("3", "outside the scale (0, 1)"),
    ("0/3", "outside the scale (0, 1)"),
])
def test_a_malformed_score_token_is_refused_naming_the_item_answer_and_criterion(monkeypatch, token, problem):
    """A score token is one level ("1") or two different levels of an evenly split panel ("0/1"): three levels, the
    same level twice, a non-integer or an off-scale level is refused naming the item, the model and the criterion,
    never read as some other panel."""
    with pytest.raises(ValueError) as refused:
        _build_one(monkeypatch, f"0 {token}", {"narushenie_formata": "читаемо", "censor": "отказа нет"})
    said = str(refused.value)
    assert said.startswith("Editing: 'Исправь ошибки.': m: score ") and f"{token!r} for censor: " in said, said
    assert problem in said, said


def test_a_remark_for_a_criterion_the_item_is_not_scored_on_is_refused(monkeypatch):
    """A remark keyed by a criterion the item does not list (a typo of its id, or a criterion dropped from the item)
    would never reach the data: refused naming the item, the model and the key."""
    assert len(_build_one(monkeypatch, "0 0", {"narushenie_formata": "читаемо", "censor": "отказа нет"})) == 2
    with pytest.raises(ValueError, match=re.escape(
            "Editing: 'Исправь ошибки.': m has a remark for cenzor, a criterion the item is not scored on "
            "(its criteria: narushenie_formata, censor)")):
        _build_one(monkeypatch, "0 0", {"narushenie_formata": "читаемо", "censor": "нет", "cenzor": "нет"})


def _sample_section() -> str:
    text = (Path(__file__).resolve().parents[2] / "docs" / "contract.md").read_text(encoding="utf-8")
    return " ".join(text.split("\n## Sample data\n", 1)[1].split("\n## ", 1)[0].split())


def test_the_docs_say_how_the_sample_departs_from_the_release_and_the_data_holds_to_it(records, taxonomy):
    """docs/contract.md's Sample data section says where the sample is not the release (project JSONL with English
    task names and lower-case difficulty, none of the benchmark's marker columns, 2-5 experts on every row whatever
    the criterion group, one-annotator items and abstentions absent) and each statement holds for the shipped file."""
    said = _sample_section()
    for statement in ("English names", "`easy` / `medium` / `hard`", "`is_provocative`", "`criteria_description`",
                      "`rubrics_example`", "2–5 experts", "Table 20", "Technical Problems", "no expert abstains"):
        assert statement in said, statement
    raw = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]
    assert not {"is_provocative", "criteria_description", "rubrics_example", "annotations"} & {k for r in raw for k in r}
    assert all(s is not None and s >= 0 for r in raw for s in r["expert_scores"])  # no abstention, null or -1
    assert {r.difficulty for r in records} == {"easy", "medium", "hard"}
    assert {r.task_type for r in records} <= set(taxonomy.task_types)  # the taxonomy's English names
    assert {len(r.expert_scores) for r in records} == {2, 3, 4, 5}
    technical = [r for r in records if taxonomy.find_tasks(*_path(r))[0].group == "Technical Problems"]
    assert technical and min(len(r.expert_scores) for r in technical) >= 2
