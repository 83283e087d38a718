"""The bundled sample data: enough rows of every kind for the later stages, consistent with the taxonomy."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import judge
from judge.data import make_sample


@pytest.fixture(scope="module")
def records():
    return judge.load_records(judge.sample_data_path())


@pytest.fixture(scope="module")
def taxonomy():
    return judge.load_taxonomy()


def _path(record) -> tuple[str, ...]:
    return tuple(p for p in (record.task_type, record.task_subtype, record.task_subsubtype) if p)


def _has_unique_mode(scores) -> bool:
    counts = Counter(scores).most_common()
    return len(counts) == 1 or counts[0][1] > counts[1][1]


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
        assert judge.scale_of(r.rubrics) == crit.scale, r.id


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
    split = sum(not _has_unique_mode(r.expert_scores) for r in records)
    assert 0.08 <= split / len(records) <= 0.18
    assert any(len(set(r.expert_scores)) == 1 for r in records)


def test_bundled_file_is_what_the_generator_writes(records):
    """The committed JSONL equals a fresh run of the seeded generator (regenerate it after editing the content)."""
    fresh = [json.loads(json.dumps(r.to_dict(), ensure_ascii=False)) for r in make_sample.build_records()]
    bundled = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines() if line]
    assert fresh == bundled
