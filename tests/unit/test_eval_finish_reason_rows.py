"""Why a judge's answer ended, in every predictions row, and a released regression judge's cut rationale.

- Each row keeps the engine's ``finish_reason`` (``stop``, ``length``) from every route that is told it: the chat
  route's tagged and integer judges, judge-serve's ``/v1/judge`` (seq2seq and regression). A row with no answer
  (a failed request, a prompt too long for the context) has none. Rows written before the field existed read as
  None, resume as they did, and merge beside new ones.
- A released ``-r`` judge's rationale cut by ``max_tokens``: judge-serve's head still scores it, as POLLUX scores it
  (``serve.judging``); judge-eval records it as a ``cut`` failure, as judge-serve itself fails an export's cut
  rationale and a cut tagged verdict, never as the head's score on a rationale the judge did not finish; with the
  run setting ``cut_rationale: score`` it keeps the head's score, as POLLUX does (``test_eval_cut_rationale``).

The judges are scripted on 127.0.0.1 (``tests.support.scripted_endpoint``), judge-serve's ``Judge`` runs in process.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging.backends import FINISH_REASON_CHARS, failed_outcome, finish_reason_of, too_long_outcome
from eval.judging.predictions import (REQUEST_FAILED, PredictionRow, read_prediction_table, read_predictions,
                                      resume_predictions)
from eval.judging.shards import merge_shards
from judge.verdicts import VerdictError
from tests.support.eval_cli import run_args
from tests.support.judge_in_process import judge_settings, judged, judged_by_judge_eval
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

RUBRICS = "0: плохо\n\n1: средне\n\n2: хорошо"
REQUEST = {"items": [{"id": "q1", "instruction": "Напиши стих.", "answer": "Роза красная.",
                      "criteria": [{"name": "Рифма", "rubrics": RUBRICS}]}]}
RECORDS = [SimpleNamespace(id="q1", instruction="Напиши стих.", answer="Роза красная.", reference_answer=None,
                           criteria_name="Рифма", rubrics=RUBRICS)]


def _regression_engine(text: str, finish_reason: str):
    """A generator answering ``text`` ending ``finish_reason``, and a pooling engine whose head says 1.5."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path == "/classify":
            return 200, {"data": [{"probs": [1.5]}]}
        return 200, {"choices": [{"text": text, "finish_reason": finish_reason}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    return respond


# ---------------------------------------------------------------------------------- a released judge's cut rationale


def test_a_released_regression_judges_cut_rationale_is_a_cut_row_not_the_heads_score(qwen_tokenizer):
    """judge-serve scores the cut text (its result: 1.5 from the head, finish_reason length); judge-eval's row is a
    ``cut`` failure with no score and no head value, the text and the finish_reason kept."""
    cut = "[FEEDBACK] Рифма ес"
    body, _ = judged(judge_settings("regression", head_input="generated_text"), qwen_tokenizer, REQUEST,
                     _regression_engine(cut, "length"))
    (result,) = body["items"][0]["results"]
    assert (result["score"], result["regression_score"], result["finish_reason"]) == (1.5, 1.5, "length")
    (row,) = judged_by_judge_eval(RECORDS, body)
    assert (row["parse_ok"], row["score"], row["error"], row["score_source"]) == (False, None, VerdictError.CUT, None)
    assert (row["regression_score"], row["in_scale"]) == (None, None)
    assert (row["raw_output"], row["finish_reason"]) == (cut, "length")
    assert "max_tokens" in row["reason"]
    PredictionRow.from_json({"id": "q1", **row})  # a row every reader takes


def test_a_released_regression_judges_cut_rationale_keeps_the_heads_score_under_cut_rationale_score(qwen_tokenizer):
    """``cut_rationale: score`` reads judge-serve's result as POLLUX scores it: the head's 1.5, the finish_reason
    still ``length`` (what tells the row was cut)."""
    cut = "[FEEDBACK] Рифма ес"
    body, _ = judged(judge_settings("regression", head_input="generated_text"), qwen_tokenizer, REQUEST,
                     _regression_engine(cut, "length"))
    (row,) = judged_by_judge_eval(RECORDS, body, cut_rationale="score")
    assert (row["parse_ok"], row["score"], row["error"], row["reason"]) == (True, 1.5, None, "")
    assert (row["score_source"], row["regression_score"]) == ("regression_head", 1.5)
    assert (row["raw_output"], row["finish_reason"]) == (cut, "length")
    PredictionRow.from_json({"id": "q1", **row})
    (default,) = judged_by_judge_eval(RECORDS, body)
    assert (default["score"], default["error"]) == (None, VerdictError.CUT)


def test_a_released_regression_judges_whole_rationale_keeps_the_heads_score(qwen_tokenizer):
    text = "[FEEDBACK] Рифма есть. [RESULT] 2 [END]"
    body, _ = judged(judge_settings("regression", head_input="generated_text"), qwen_tokenizer, REQUEST,
                     _regression_engine(text, "stop"))
    (row,) = judged_by_judge_eval(RECORDS, body)
    assert (row["parse_ok"], row["score"], row["regression_score"], row["error"]) == (True, 1.5, 1.5, None)
    assert row["finish_reason"] == "stop"


@pytest.mark.parametrize(("text", "finish_reason", "cut"), [
    ("[FEEDBACK] Рифма есть. [RESULT] 2 и ещё", "length", False),  # a [RESULT] the LM added closed it
    ("[FEEDBACK] Рифма есть. [END] и ещё, и ещё", "length", False),  # stop_at_end false: on past the [END]
    ("[FEEDBACK] Рифма есть. [END]", "length", False),  # the limit fell right after the [END]
    ("[FEEDBACK] Рифма ес", "length", True),
    ("[FEEDBACK] Рифма ес", "stop", False),  # the judge ended its turn: what it wrote is whole
    ("", "length", True),
])  # fmt: skip
def test_one_reading_in_judge_decides_whether_a_rationale_was_cut(text, finish_reason, cut):
    assert judge.verdicts.rationale_cut_short(text, finish_reason) is cut


@pytest.mark.parametrize("text", [
    "[FEEDBACK] Рифма есть. [RESULT] 2 и ещё", "[FEEDBACK] Рифма есть. [END] и ещё, и ещё", "[FEEDBACK] Рифма ес"])
def test_an_exports_generation_gets_the_same_verdict_from_judge_serve_and_judge_eval(qwen_tokenizer, text):
    """The same generated text and finish_reason (length) through judge-serve's reading and judge-eval's: a rationale
    a tag closed before max_tokens is scored by both (judge-eval failed it ``cut`` where judge-serve scored it), an
    unclosed one is a ``cut`` failure in both."""
    body, _ = judged(judge_settings("regression", stop_at_end="[END] и" not in text), qwen_tokenizer, REQUEST,
                     _regression_engine(text, "length"))
    (result,) = body["items"][0]["results"]
    (row,) = judged_by_judge_eval(RECORDS, body)
    cut = judge.verdicts.rationale_cut_short(text, "length")
    assert (result["error"], result["score"]) == ((VerdictError.CUT, None) if cut else (None, 1.5))
    assert (row["error"], row["score"], row["finish_reason"]) == (result["error"], result["score"], "length")


def test_a_released_judges_generation_cut_after_a_closed_rationale_is_scored_as_judge_serve_scores_it(
        qwen_tokenizer):
    """A released ``-r`` judge's head reads the text as generated; the rationale in it was closed before the cut, so
    judge-eval's default keeps judge-serve's score as it does for the same text from an export."""
    text = "[FEEDBACK] Рифма есть. [RESULT] 2 и ещё"
    body, _ = judged(judge_settings("regression", head_input="generated_text"), qwen_tokenizer, REQUEST,
                     _regression_engine(text, "length"))
    (result,) = body["items"][0]["results"]
    assert (result["score"], result["rationale_complete"], result["finish_reason"]) == (1.5, True, "length")
    (row,) = judged_by_judge_eval(RECORDS, body)
    assert (row["parse_ok"], row["error"], row["score"], row["finish_reason"]) == (True, None, 1.5, "length")


def test_an_exports_cut_rationale_stays_the_cut_judge_serve_answers(qwen_tokenizer):
    """An export (head_input rationale_target): judge-serve fails it ``cut`` itself; judge-eval keeps its words."""
    engine = _regression_engine("[FEEDBACK] Ри", "length")
    body, _ = judged(judge_settings("regression"), qwen_tokenizer, REQUEST, engine)
    (result,) = body["items"][0]["results"]
    (row,) = judged_by_judge_eval(RECORDS, body)
    assert (row["error"], row["score"], row["finish_reason"]) == (VerdictError.CUT, None, "length")
    assert row["reason"] == result["error_reason"]


# ---------------------------------------------------------------------------------- finish_reason on every route


@pytest.mark.parametrize(("text", "finish_reason", "score", "error"), [
    ("[FEEDBACK] Рифма есть. [RESULT] 1 [END]", "stop", 1.0, None),
    ("[FEEDBACK] Рифма есть. [RESULT] 1", "length", None, VerdictError.CUT),  # missing_end, made by the cut
])  # fmt: skip
def test_a_seq2seq_judge_serve_row_keeps_the_finish_reason(qwen_tokenizer, text, finish_reason, score, error):
    body, _ = judged(judge_settings(), qwen_tokenizer, REQUEST, _regression_engine(text, finish_reason))
    (row,) = judged_by_judge_eval(RECORDS, body)
    assert (row["score"], row["error"], row["finish_reason"]) == (score, error, finish_reason)


@pytest.fixture
def data(tmp_path):
    """Two sample records as a JSONL file."""
    return judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")


@pytest.mark.parametrize(("verdict_format", "text", "finish_reason", "score", "error"), [
    ("tagged", "[FEEDBACK] ok [RESULT] 1 [END]", "stop", 1.0, None),
    ("tagged", "[FEEDBACK] ok [RESULT] 1", "length", None, VerdictError.CUT),  # missing_end, made by the cut
    ("integer", "<think>ok</think>1", "stop", 1.0, None),
    ("integer", "<think>ok</think>1", "length", None, VerdictError.CUT),
])  # fmt: skip
def test_a_chat_row_keeps_the_finish_reason(data, tmp_path, verdict_format, text, finish_reason, score, error):
    """Through ``judge-eval run`` on the chat route: the row written holds the server's finish_reason beside the
    verdict it read."""

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(text, body["model"], finish_reason)

    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as server:
        assert eval_main(run_args(server.base_url, data, out, "--verdict-format", verdict_format)) == 0
    rows = read_predictions(out)
    assert [(row["score"], row["error"], row["finish_reason"]) for row in rows] == [(score, error, finish_reason)] * 2


def test_a_servers_finish_reason_is_kept_bounded_and_only_as_text():
    """A proxy's number or null is no reason (a row's check would refuse the judge's answer); a long one is cut."""
    assert [finish_reason_of(value) for value in ("stop", 3, None)] == ["stop", None, None]
    assert finish_reason_of("x" * 10_000) == "x" * FINISH_REASON_CHARS == "x" * 64


def test_rows_without_an_answer_have_no_finish_reason():
    assert failed_outcome(REQUEST_FAILED, "HTTP 500")["finish_reason"] is None
    assert too_long_outcome("too long")["finish_reason"] is None
    assert "finish_reason" not in failed_outcome(REQUEST_FAILED, "HTTP 500", pairwise=True)  # a PairwiseRow's fields


# ---------------------------------------------------------------------------------- older files


OLD_ROW = {"id": "a", "judge": "j", "raw_output": "[FEEDBACK] ok [RESULT] 1 [END]", "feedback": "ok", "score": 1.0,
           "parse_ok": True, "error": None, "reason": "", "score_source": "verdict", "in_scale": True}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_row_written_before_the_field_reads_as_none_and_resumes(tmp_path):
    path = _write(tmp_path / "predictions.jsonl", [OLD_ROW, {**OLD_ROW, "id": "b", "finish_reason": "length"}])
    assert [row["finish_reason"] for row in read_predictions(path)] == [None, "length"]
    assert read_prediction_table(path).column("finish_reason").to_pylist() == [None, "length"]
    assert resume_predictions(path, ["a", "b"]) == {"a", "b"}  # both final: nothing asked again, nothing rewritten
    assert [row["id"] for row in read_predictions(path)] == ["a", "b"]


def test_a_finish_reason_that_is_no_string_is_named(tmp_path):
    path = _write(tmp_path / "predictions.jsonl", [{**OLD_ROW, "finish_reason": 3}])
    with pytest.raises(ValueError, match=r"line 1\.finish_reason: expected a string, got an integer 3"):
        read_prediction_table(path)


def test_a_shard_written_before_the_field_merges_beside_a_new_one(data, tmp_path):
    """Two shards judged by a chat server, the first one's rows then stripped of the field (a shard of an older
    version): the merge keeps each row's own value, None for the old shard's."""
    records = judge.load_records(data)
    blocks = [judge.write_jsonl([record], tmp_path / f"block{k}.jsonl") for k, record in enumerate(records)]
    shards = [tmp_path / "out" / "shards" / str(k) for k in range(2)]

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] 1 [END]", body["model"], "stop")

    with ScriptedEndpoint(respond) as server:
        for block, shard in zip(blocks, shards):
            assert eval_main(run_args(server.base_url, block, shard, "--verdict-format", "tagged")) == 0
    old = shards[0] / "predictions.jsonl"
    rows = [json.loads(line) for line in old.read_text(encoding="utf-8").splitlines()]
    _write(old, [{k: v for k, v in row.items() if k != "finish_reason"} for row in rows])
    assert merge_shards(shards, data, tmp_path / "out")[0] == 2
    merged = {row["id"]: row["finish_reason"] for row in read_predictions(tmp_path / "out")}
    assert merged == {records[0].id: None, records[1].id: "stop"}
