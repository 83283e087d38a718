"""What ``pairwise_predictions.jsonl`` rows and pairwise data rows may hold: a row whose values are of another type
or off the pairwise scale is refused naming the file, line and field (``PairwiseRow.from_json``), never scored; a
pair's ``id`` is text or an integer, as ``judge.load_records`` reads ids (``load_pairs``); a failed judgment's row
has the fields a ``PairwiseRow`` has (``eval.judging.backends.failed_outcome``)."""

from __future__ import annotations

import json

import pytest

from eval.judging.backends import failed_outcome, too_long_outcome
from eval.pairwise.judging import PairwiseRow, load_pairs, read_pairwise_rows
from judge.plumbing.config_files import ConfigError

#: A parsed judgment of the swapped order: the judge preferred the first answer shown (-1), which is the pair's
#: answer 2, so its verdict in the pair's orientation is 1.
GOOD = {"id": "p1", "order": "swapped", "judge": "j", "raw_output": "-1", "feedback": "", "score": -1.0,
        "verdict": 1.0, "parse_ok": True, "error": None, "reason": "", "latency_s": 0.1, "content_key": "k"}
PAIR = {"instruction": "q", "answer_1": "a", "answer_2": "b", "rubrics": "-1: 1\n0: =\n1: 2"}


def _rows(tmp_path, *rows: dict):
    path = tmp_path / "pairwise_predictions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")  # NaN as Python writes it
    return path


def test_a_well_formed_row_and_a_failed_one_read_as_written(tmp_path):
    failed = {**GOOD, "order": "original", "raw_output": None, "score": None, "verdict": None, "parse_ok": False,
              "error": "request_failed", "reason": "HTTP 500"}
    rows = read_pairwise_rows(_rows(tmp_path, GOOD, failed))
    assert [row.to_json() for row in rows] == [GOOD, failed]


@pytest.mark.parametrize("change, message", [
    # the types, as the pointwise PredictionRow.from_json checks them: nothing converted
    ({"verdict": "1"}, "line 1.verdict: expected a number or null, got a string '1'"),
    ({"parse_ok": "yes"}, "line 1.parse_ok: expected true or false, got a string 'yes'"),
    ({"verdict": float("nan")}, "line 1.verdict: expected a finite number, got nan"),
    ({"score": float("inf")}, "line 1.score: expected a finite number, got inf"),
    ({"latency_s": None}, "line 1.latency_s: required field is missing"),
    # the values: a parsed judgment's score and verdict are each one of -1, 0, 1
    ({"score": 2.0, "verdict": -2.0}, "line 1.score: a parsed judgment's score is one of -1, 0, 1, got 2.0"),
    ({"verdict": None}, "line 1.verdict: a parsed judgment's verdict is one of -1, 0, 1, got null"),
    # shown cut with a mark: its first 40 digits read as another number
    ({"score": 10**60}, "line 1.score: a parsed judgment's score is one of -1, 0, 1, got an integer of 61 digits"),
])  # fmt: skip
def test_a_row_of_another_type_or_off_the_scale_is_refused_naming_its_field(tmp_path, change, message):
    """A verdict "1" (a string), a parse flag "yes", a NaN verdict were each counted as a parsed judgment and scored
    (a string is no tie and agrees with no label); each is now the file's error, naming its line and field."""
    path = _rows(tmp_path, GOOD, {**GOOD, "id": "p2"})
    path.write_text(json.dumps({**GOOD, **change}) + "\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        read_pairwise_rows(path)
    assert str(refused.value) == f"{path}: {message}"


@pytest.mark.parametrize("change, message", [
    ({"verdict": -1.0}, "line 1.verdict: expected 1.0: the score -1 negated for a swapped order, got -1.0"),
    ({"order": "original", "verdict": 1.0},
     "line 1.verdict: expected -1.0: the score -1 as it is for an original order, got 1.0"),
    ({"score": 0.0, "verdict": 1.0}, "line 1.verdict: expected 0.0: the score 0 negated for a swapped order, got 1.0"),
])  # fmt: skip
def test_a_verdict_that_is_not_the_rows_score_in_the_pairs_orientation_is_refused(tmp_path, change, message):
    """Agreement and position consistency read the verdict, the first-position rate the score: a hand-merged row
    whose verdict is not its score (original) or the score negated (swapped) was scored, each half of the report
    reading another judgment. It is the file's error, naming the line, the field and the verdict expected."""
    path = _rows(tmp_path, {**GOOD, **change}, {**GOOD, "id": "p2"})
    with pytest.raises(ValueError) as refused:
        read_pairwise_rows(path)
    assert str(refused.value) == f"{path}: {message}"


def test_a_verdict_that_agrees_with_its_score_and_order_is_read():
    """The rows judge_pairs writes: an original row's verdict is its score, a swapped one's the score negated, a
    swapped tie 0 (written 0.0; a -0.0 is the same number)."""
    rows = [{**GOOD, "order": "original", "score": 1.0, "verdict": 1.0}, GOOD,
            {**GOOD, "score": 0.0, "verdict": 0.0}, {**GOOD, "score": 0.0, "verdict": -0.0}]
    assert [PairwiseRow.from_json(row, "f: line 1").verdict for row in rows] == [1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("pair_id, kind", [([1], "a list"), ({"a": 1}, "an object"), (True, "true"), (1.0, "a number")])
def test_a_pair_id_that_is_not_text_or_an_integer_is_refused(tmp_path, pair_id, kind):
    """[1] became the id "[1]", {"a": 1} Python's "{'a': 1}", true "True", 1.0 "1.0": each refused, in the words
    judge.load_records refuses the same id of a pointwise row."""
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({**PAIR, "id": "p0"}) + "\n" + json.dumps({**PAIR, "id": pair_id}) + "\n",
                    encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_pairs(path)
    assert str(refused.value) == f"{path}: line 2: field 'id': must be text or an integer, got {kind}"


def test_an_integer_id_is_its_text_and_a_blank_one_is_derived_as_a_missing_one(tmp_path):
    """An integer id reads as its digits, as load_records reads it; a blank id ("", " ") is no id, as there: the
    pair gets the id derived from its content, the one it gets without the field, never the id ""."""
    path = tmp_path / "pairs.jsonl"
    rows = [{**PAIR, "id": 7}, {**PAIR, "answer_1": "c", "id": ""}, {**PAIR, "answer_1": "d", "id": " "}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({**row, "id": None}) + "\n" for row in rows[1:]), encoding="utf-8")
    derived = [pair.id for pair in load_pairs(bare)]
    assert [pair.id for pair in load_pairs(path)] == ["7", *derived]
    assert all(len(pair_id) == 16 for pair_id in derived) and derived[0] != derived[1]


def test_a_failed_judgments_fields_are_a_pairwise_rows(tmp_path):
    """The failed and too-long rows are built by one function for both row kinds: the pairwise one has exactly the
    judge fields a PairwiseRow has (no score source, scale flag or head value), and reads back as written."""
    failed = failed_outcome("request_failed", "HTTP 500: down", pairwise=True)
    assert failed == {"raw_output": None, "feedback": "", "score": None, "parse_ok": False, "error": "request_failed",
                      "reason": "HTTP 500: down"}
    too_long = too_long_outcome("too long", pairwise=True)
    assert too_long == {**failed, "error": "context_length_exceeded", "reason": "too long"}
    row = PairwiseRow(id="p1", order="original", judge="j", verdict=None, **too_long, latency_s=0.0, content_key="k")
    assert read_pairwise_rows(_rows(tmp_path, row.to_json())) == [row]


def test_a_resume_keeps_the_rows_a_blank_id_pair_was_judged_under_before(tmp_path, caplog):
    """A folder written when a blank id was the id "" (before it read as none): its pair's rows carry id "". On
    resume they are that pair's, matched by the text they judged (content_key), and rewritten under the id the
    pair has now; nothing is asked again and nothing is said to be gone from the data. A row under "" of a text no
    pair has (the pair edited since) is dropped as rows of pairs gone are."""
    from eval.pairwise.judging import PAIRWISE_PREDICTIONS, pending_judgments

    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps({**PAIR, "id": ""}) + "\n" + json.dumps({**PAIR, "answer_1": "c", "id": "p2"}) + "\n",
                    encoding="utf-8")
    blank, p2 = load_pairs(data)
    assert blank.id == load_pairs_without_id(tmp_path)  # the id derived from the text, as without the field

    def row(pair_id: str, order: str, key: str) -> dict:
        verdict = -1.0 if order == "original" else 1.0
        return PairwiseRow(id=pair_id, order=order, judge="j", raw_output="-1", feedback="", score=-1.0,
                           verdict=verdict, parse_ok=True, error=None, reason="", latency_s=0.1,
                           content_key=key).to_json()

    old = [row("", "original", "an older text's key"), row("", "original", blank.content_key),
           row("", "swapped", blank.content_key), row("p2", "original", p2.content_key),
           row("p2", "swapped", p2.content_key)]
    path = tmp_path / PAIRWISE_PREDICTIONS
    path.write_text("".join(json.dumps(r) + "\n" for r in old), encoding="utf-8")
    caplog.set_level("INFO", logger="judge_eval.pairwise")
    todo, done, judges = pending_judgments([blank, p2], path, ("original", "swapped"))
    assert (todo, done, judges) == ([], 4, {"j"})
    kept = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert kept == [{**old[1], "id": blank.id}, {**old[2], "id": blank.id}, old[3], old[4]]
    assert "2 rows of pairs with a blank id" in caplog.text
    assert "dropped the rows of 1 pairs no longer in the data" in caplog.text and "('')" in caplog.text
    caplog.clear()
    assert pending_judgments([blank, p2], path, ("original", "swapped"))[:2] == ([], 4)  # once: nothing left to take
    assert caplog.text == ""


def load_pairs_without_id(tmp_path) -> str:
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps(PAIR) + "\n", encoding="utf-8")
    return load_pairs(bare)[0].id
