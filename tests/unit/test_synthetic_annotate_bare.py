"""The annotate stage on a teacher output that is more than one tagged block: the parser reads its last score while
the teacher also gave another, so it is asked again and, if every attempt is so, dropped (``answer_not_bare``)."""

from __future__ import annotations

import json

import pytest

import judge
from judge import parse_verdict
from tests.support.scripted_endpoint import chat_completion
from tests.unit.test_synthetic_annotate_tags import _annotate_stage

BARE = "[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"
TWO_BLOCKS = "[FEEDBACK] Повторы есть. [RESULT] 0 [END]\n[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"

SCALE = judge.Scale((0, 1, 2))


@pytest.mark.parametrize("text", [
    "[FEEDBACK] Ответ хороший и полный. [RESULT] 2 [END] а вообще 0",
    TWO_BLOCKS,
    "Score: 0. [FEEDBACK] Ответ хороший. [RESULT] 2 [END]",
])
def test_a_self_contradicting_output_is_refused(text):
    """Each parses as 2 (the last [RESULT]) while it also says 0."""
    from train.synthetic.annotate import unusable_verdict

    verdict = parse_verdict(text, scale=SCALE)
    assert verdict.ok and verdict.score == 2
    assert unusable_verdict(verdict, SCALE) is None  # without the text the verdict alone looks fine
    assert unusable_verdict(verdict, SCALE, text)[0] == "answer_not_bare"


@pytest.mark.parametrize("text", [
    BARE,
    "  " + BARE + "\n",
    "<think>Черновик: [FEEDBACK] x [RESULT] 0 [END]</think>\n" + BARE,  # a reasoning block, then one block
    "Черновик: [FEEDBACK] x [RESULT] 0 [END] </think>\n" + BARE,  # the template opened the reasoning in the prompt
])
def test_one_block_after_at_most_one_reasoning_is_kept(text):
    from train.synthetic.annotate import unusable_verdict

    verdict = parse_verdict(text, scale=SCALE)
    assert verdict.score == 2 and unusable_verdict(verdict, SCALE, text) is None


def test_lenient_reading_keeps_an_output_missing_only_its_end():
    from train.synthetic.annotate import tagged_answer_is_bare

    assert not tagged_answer_is_bare("[FEEDBACK] Ответ хороший. [RESULT] 2")
    assert tagged_answer_is_bare("[FEEDBACK] Ответ хороший. [RESULT] 2", lenient=True)
    assert not tagged_answer_is_bare("[FEEDBACK] Плохо. [RESULT] 0 [END] [FEEDBACK] Ответ хороший. [RESULT] 2",
                                     lenient=True)


def _responder(replies):
    def respond(path: str, body: dict) -> tuple[int, dict]:
        return 200, chat_completion(replies.pop(0), "teacher")

    return respond


def test_a_two_block_answer_is_asked_again_and_the_bare_one_kept(tmp_path):
    from train.synthetic.cli import main

    replies = [TWO_BLOCKS.replace("[RESULT] 2", "[RESULT] 1"), BARE]
    with _annotate_stage(tmp_path, _responder(replies), max_attempts=3) as (server, argv, out):
        assert main(argv) == 0
        assert len(server.requests) == 2
    [kept] = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    assert kept["expert_scores"] == [2] and kept["expert_feedback"] == ["Повторов нет, ответ чистый."]
    assert kept["attempts"] == 2


def test_every_attempt_two_blocks_is_dropped(tmp_path):
    from train.synthetic.cli import main

    replies = [TWO_BLOCKS, TWO_BLOCKS]
    with _annotate_stage(tmp_path, _responder(replies), max_attempts=2) as (server, argv, out):
        assert main(argv) == 0
        assert len(server.requests) == 2
    assert (out / "annotate.jsonl").read_text() == ""
    [dropped] = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert dropped["drop_reason"] == "verdict_answer_not_bare" and dropped["attempts"] == 2
    assert json.loads((out / "summary.json").read_text())["dropped_by_reason"] == {"verdict_answer_not_bare": 1}


def test_a_journalled_two_block_label_is_asked_again(tmp_path, monkeypatch):
    """A label an earlier version kept from a two-block output is stale: a rerun asks it again, once."""
    import train.synthetic.annotate as annotate
    from train.synthetic.cli import main

    replies = [TWO_BLOCKS, BARE.replace("чистый", "без повторов")]
    with _annotate_stage(tmp_path, _responder(replies)) as (server, argv, out):
        with monkeypatch.context() as patch:  # the earlier version, which kept such outputs
            patch.setattr(annotate, "tagged_answer_is_bare", lambda text, lenient=False: True)
            assert main(argv) == 0
        assert json.loads((out / "annotate.jsonl").read_text())["expert_scores"] == [2]
        assert main(argv) == 0
        assert main(argv) == 0  # the clean label stands: nothing more is asked
        assert len(server.requests) == 2
    [kept] = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    assert kept["expert_feedback"] == ["Повторов нет, ответ без повторов."]
    assert kept["teacher_raw"] == [BARE.replace("чистый", "без повторов")]
