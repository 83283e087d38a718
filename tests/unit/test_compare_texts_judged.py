"""``judge-eval compare`` on runs scored against two revisions of the data whose items differ only in their texts
(an answer edited to another text of the same length, a reference answer edited): the judges were asked other
questions under the same ids, refused by the predictions' ``content_key`` that items.parquet keeps (``text_key``);
runs of the same data, and runs whose predictions predate the key, are paired."""

from __future__ import annotations

import json

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import record_content_key
from eval.scoring import item_table
from tests.unit.test_validity_report import _predictions


def _data_with(tmp_path, name, edit):
    """The bundled sample written anew with ``edit`` applied to its rows (a list of dicts, changed in place)."""
    rows = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]
    edit(rows)
    path = tmp_path / name
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def _scored(root, name, data, keyed=True):
    """A run of ``data`` as ``judge-eval run`` writes it (each row with its item's ``content_key`` where ``keyed``;
    the verdicts: the experts' first score, one failure), scored."""
    records = judge.load_records(data)
    rows = _predictions(records, 0)
    if keyed:
        for row, record in zip(rows, records):
            row["content_key"] = record_content_key(record)
    run = root / name
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                           encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "50"]) == 0
    return run


def _refusal(baseline, run):
    """What ``compare`` says refusing to pair ``run`` with ``baseline``."""
    from eval.scoring.compare import compare

    with pytest.raises(ValueError) as err:
        compare([baseline, run], n_boot=50)
    return str(err.value)


def _reverse_answers(rows):
    for row in rows[:3]:  # another text of the same length: answer_chars cannot tell them apart
        row["answer"] = row["answer"][::-1]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The sample scored once (the baseline of every comparison here)."""
    return _scored(tmp_path_factory.mktemp("texts-judged"), "A", judge.sample_data_path())


def test_runs_judged_on_other_texts_under_the_same_ids_are_refused(tmp_path, baseline):
    """The sample and a copy whose first 3 answers are reversed (same length, same labels, criterion and scale):
    pairing them read the judges' verdicts on other answers as a difference of the judges. Refused in one line naming
    how many items differ, the first one with both keys, and which texts the key covers; likewise an edited
    reference answer."""
    from eval.scoring.compare import compare

    records = judge.load_records(judge.sample_data_path())
    said = _refusal(baseline, _scored(tmp_path, "B", _data_with(tmp_path, "answers.jsonl", _reverse_answers)))
    assert "hold different items under the same ids: the texts judged differ on 3 of the 341 items both hold" in said
    assert f"(item {records[0].id!r}: content key {record_content_key(records[0])!r} in {baseline}" in said
    assert said.endswith("the instruction, reference answer, answer, criterion and rubric the judge was sent")
    assert "\n" not in said

    def new_reference(rows):
        rows[5]["reference_answer"] = "другой эталон"

    edited = _scored(tmp_path, "C", _data_with(tmp_path, "reference.jsonl", new_reference))
    with pytest.raises(ValueError, match=f"the texts judged differ on 1 of the 341 items both hold \\(item "
                                         f"{records[5].id!r}"):
        compare([baseline, edited], n_boot=50)


def test_runs_of_the_same_data_and_runs_without_keys_are_paired(tmp_path, baseline):
    """Two runs of one data file share every key (items.parquet keeps each prediction's, the failed verdict's too),
    and are paired; a run whose predictions predate the key (no ``content_key``: no column written) is not known to
    differ, and is paired even with data edited since."""
    from eval.scoring.compare import compare

    same = _scored(tmp_path, "B", _data_with(tmp_path, "same.jsonl", lambda rows: None))
    keys = [item_table.read_table(run / "items.parquet")[0].text_key for run in (baseline, same)]
    records = judge.load_records(judge.sample_data_path())
    assert keys[0].tolist() == [record_content_key(r) for r in records] == keys[1].tolist()
    assert compare([baseline, same], n_boot=50).comparisons[0].n_common == 341

    unkeyed = _scored(tmp_path, "C", _data_with(tmp_path, "answers.jsonl", _reverse_answers), keyed=False)
    assert item_table.read_table(unkeyed / "items.parquet")[0].text_key is None
    assert compare([baseline, unkeyed], n_boot=50).comparisons[0].n_common == 341


def test_a_widened_rubric_is_refused_by_its_scale_not_by_its_digest(tmp_path, baseline):
    """A rubric rewritten from 0..2 to 0..4 changes the item's content key too (the key hashes the rubric): the
    scale refusal, which names both ends, is the one the user reads, not the two digests that say nothing of what
    changed."""
    def widen(rows):
        rows[0]["rubrics"] += "\n\n3: Сверх ожиданий.\n\n4: Безупречно."

    widened = _scored(tmp_path, "B", _data_with(tmp_path, "widened.jsonl", widen))
    said = _refusal(baseline, widened)
    assert "the rubric's scale differs on 1 of the 341 items both hold" in said
    assert f"0..2 in {baseline}, 0..4 in {widened}" in said
    assert "content key" not in said
