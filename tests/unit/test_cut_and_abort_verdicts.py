"""One reading of a judge's output on every route, for the outputs that did not end as the judge meant.

- A tagged verdict the length limit cut (finish_reason "length") is read alike by judge-serve
  (``serve.score_reading.seq2seq_verdict``) and judge-eval's chat client (``eval.judging.backends.verdict_outcome``):
  both call ``judge.verdicts.read_tagged_verdict``. A score that may be the start of a longer level fails as ``cut``;
  under lenient a score before a cut "[END" is read.
- A generation vLLM's engine aborted (finish_reason "abort", HTTP 200 with the text so far) is no verdict: judge-serve
  answers a failed result ``aborted``; judge-eval retries it as a transient failure, and with retries spent writes a
  ``request_failed`` row that the next run asks again.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging.backends import verdict_outcome
from eval.judging.predictions import REQUEST_FAILED, read_predictions
from judge.plumbing.retry import GenerationAborted, is_transient
from judge.verdicts import VerdictError, read_served_verdict, read_tagged_verdict
from serve.score_reading import seq2seq_verdict
from tests.support.eval_cli import run_args
from tests.support.judge_in_process import judge_settings, judged, judged_by_judge_eval
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

RUBRICS_0_10 = "\n\n".join(f"{level}: level {level}" for level in range(11))

# ------------------------------------------------------------------------------------------------- cut tagged verdicts


@pytest.mark.parametrize(("text", "lenient", "finish_reason", "score", "error"), [
    ("[FEEDBACK] ok [RESULT] 1", True, "length", None, VerdictError.CUT),          # the "1" of a cut "10"
    ("[FEEDBACK] ok [RESULT] 1", False, "length", None, VerdictError.CUT),          # missing_end, by the cut
    ("[FEEDBACK] ok [RESULT] 10", True, "length", 10.0, None),                     # no longer level starts "10"
    ("[FEEDBACK] ok [RESULT] 7 [EN", True, "length", 7.0, None),                   # cut inside the closing tag
    ("[FEEDBACK] ok [RESULT] 7 [EN", False, "length", None, VerdictError.CUT),      # missing_end, by the cut
    ("[FEEDBACK] ok [RESULT] 7 [", True, "stop", 7.0, None),
    ("[FEEDBACK] ok [RESULT] 1 [END]", False, "length", 1.0, None),                # [END] written: read as is
    ("[FEEDBACK] ok [RESULT] 1", True, "stop", 1.0, None),                         # not cut: lenient reads it
])  # fmt: skip
def test_a_cut_tagged_verdict_scores_alike_on_judge_serve_and_judge_eval(text, lenient, finish_reason, score, error):
    """Cut and aborted tagged verdicts on a 0..10 scale: judge-eval's chat route and judge-serve give one verdict."""
    scale = judge.scale_of(RUBRICS_0_10)
    chat = verdict_outcome(text, SimpleNamespace(rubrics=RUBRICS_0_10), lenient, verdict_format="tagged",
                           finish_reason=finish_reason)
    serve = seq2seq_verdict(text, None, scale, lenient, "tagged", finish_reason=finish_reason)
    assert (chat["score"], chat["error"]) == (serve["score"], serve["error"]) == (score, error)
    assert chat["parse_ok"] == serve["parse_ok"] == (error is None)


def test_a_cut_tagged_verdict_without_a_readable_scale_keeps_its_score():
    """judge-eval reads a rubric without a readable scale with no scale: no level is known to be longer, the score
    read stands (and nothing fails for the missing levels)."""
    assert read_tagged_verdict("[FEEDBACK] ok [RESULT] 1", None, lenient=True, finish_reason="length").score == 1.0
    assert read_tagged_verdict(None, None, lenient=True, finish_reason="length").error == VerdictError.EMPTY


COMPLETE_WITHOUT_END = "[FEEDBACK] Ответ полный и точный. [RESULT] 2"


@pytest.mark.parametrize(("finish_reason", "error", "said", "not_said"), [
    ("stop", VerdictError.MISSING_END, "the judge ended its turn (finish_reason stop)", "cut"),
    ("length", VerdictError.CUT, "reached max_tokens (finish_reason length)", "ended its turn"),
    (None, VerdictError.MISSING_END, "the score is there", "cut"),               # no server said which
])  # fmt: skip
def test_a_missing_end_is_named_by_what_stopped_the_judge(finish_reason, error, said, not_said):
    """A complete verdict without [END] (Appendix M.1's English format line shows none) read strictly: a judge that
    ended its turn there is not reported as cut; under lenient its score is read whatever stopped it."""
    strict = read_served_verdict("tagged", COMPLETE_WITHOUT_END, lenient=False, finish_reason=finish_reason)
    assert (strict.ok, strict.error, strict.feedback) == (False, error, "Ответ полный и точный.")
    assert said in strict.reason and not_said not in strict.reason
    lenient = read_served_verdict("tagged", COMPLETE_WITHOUT_END, lenient=True, finish_reason=finish_reason)
    assert (lenient.ok, lenient.score) == (True, 2.0)


def test_a_judge_that_ended_its_turn_with_no_score_after_result_is_told_apart():
    """No score after the final [RESULT]: the stop is still the judge's, and lenient reading would take nothing."""
    verdict = read_served_verdict("tagged", "[FEEDBACK] ok [RESULT] ", finish_reason="stop")
    assert (verdict.error, verdict.reason) == (VerdictError.MISSING_END, "the judge ended its turn (finish_reason "
                                               "stop) with no [END] after the final [RESULT] (and no score follows)")


# ------------------------------------------------------------------------------------------------- aborted generations

SERVE_RUBRICS = "0: плохо\n\n1: средне\n\n2: хорошо"
SERVE_REQUEST = {"items": [{"id": "q1", "instruction": "Напиши стих.", "answer": "Роза красная.",
                            "criteria": [{"name": "Рифма", "rubrics": SERVE_RUBRICS},
                                         {"name": "Ритм", "rubrics": SERVE_RUBRICS}]}]}


def _aborted_engine(path: str, body: dict) -> tuple[int, dict]:
    """vLLM 0.32 aborting every generation (a paused engine): HTTP 200, the text so far, finish_reason "abort"."""
    if path == "/classify":
        return 200, {"data": [{"probs": [1.0]}]}
    return 200, {"choices": [{"text": "[FEEDBACK] Рифма есть. [RESULT] 1 [END]", "finish_reason": "abort"}],
                 "usage": {"prompt_tokens": 11, "completion_tokens": 7}}


@pytest.mark.parametrize("kind", ["seq2seq", "regression"])
def test_judge_serve_answers_an_aborted_generation_as_a_failed_result(qwen_tokenizer, kind):
    """Whatever the partial text reads as, an aborted generation is a failed result ``aborted``, never a score (the
    regression head is not asked to score it either)."""
    body, engine = judged(judge_settings(kind), qwen_tokenizer, SERVE_REQUEST, _aborted_engine)
    for result in body["items"][0]["results"]:
        assert (result["parse_ok"], result["score"], result["error"]) == (False, None, VerdictError.ABORTED)
        assert result["finish_reason"] == "abort" and result["score_source"] is None
    assert body["usage"]["parsed"] == 0
    assert engine.bodies("/classify") == []


def test_judge_eval_retries_judge_serves_aborted_result_as_transient(qwen_tokenizer):
    """judge-serve's ``aborted`` result, read by judge-eval's /v1/judge backend, is a transient failure of the request
    (the runner retries it), not a parse failure row."""
    body, _ = judged(judge_settings("seq2seq"), qwen_tokenizer, SERVE_REQUEST, _aborted_engine)
    records = [SimpleNamespace(id="q1", instruction="Напиши стих.", answer="Роза красная.", reference_answer=None,
                               criteria_name=name, rubrics=SERVE_RUBRICS) for name in ("Рифма", "Ритм")]
    with pytest.raises(GenerationAborted) as raised:  # eval.judging.backends.generation_aborted's, as documented there
        judged_by_judge_eval(records, body)
    assert is_transient(raised.value) and VerdictError.ABORTED in str(raised.value)


@pytest.fixture
def data(tmp_path):
    """Three sample records as a JSONL file."""
    return judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], tmp_path / "data.jsonl")


@pytest.mark.parametrize("verdict_format", ["tagged", "integer"])
def test_judge_eval_retries_an_aborted_chat_answer_and_a_rerun_asks_it_again(data, tmp_path, verdict_format):
    """The chat route: an aborted answer is retried (2 attempts per item with --max-retries 1); retries spent, each
    row is ``request_failed``; the rerun, the engine answering again, scores them."""
    finish = {"reason": "abort"}
    text = "[FEEDBACK] ok [RESULT] 1 [END]" if verdict_format == "tagged" else "<think>ok</think>1"

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(text, body["model"], finish["reason"])

    out = tmp_path / "run"
    args = run_args("", data, out, "--max-retries", "1", "--verdict-format", verdict_format)
    with ScriptedEndpoint(respond) as server:
        args[args.index("--judge") + 1] = server.base_url
        assert eval_main(args) == 3  # judge-eval run's exit code for a run with request_failed rows
        assert len(server.bodies("/v1/chat/completions")) == 6
        rows = read_predictions(out)
        assert [(row["error"], row["score"]) for row in rows] == [(REQUEST_FAILED, None)] * 3
        assert all("aborted" in row["reason"] for row in rows)
        finish["reason"] = "stop"
        assert eval_main(args) == 0
        assert len(server.bodies("/v1/chat/completions")) == 9
    assert sorted((row["error"], row["score"]) for row in read_predictions(out)) == [(None, 1.0)] * 3


def test_pairwise_judging_retries_an_aborted_answer_and_fails_a_cut_integer_as_cut(tmp_path):
    """The pairwise chat route reads answers as the pointwise one does: an aborted generation is retried, then a
    ``request_failed`` row a rerun asks again (it was a final parse failure, or a verdict read from partial text); an
    integer verdict ``max_tokens`` stopped is ``cut``, not the -1, 0 or 1 the cut fell on."""
    import json

    from eval.pairwise.judging import PAIRWISE_PREDICTIONS, read_pairwise_rows

    rubrics = "-1: первый ответ лучше\n\n0: ответы равны\n\n1: второй ответ лучше"
    pair = {"id": "p1", "instruction": "Столица Франции?", "answer_1": "Париж.", "answer_2": "Лион.", "rubrics": rubrics}
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(pair, ensure_ascii=False) + "\n", encoding="utf-8")
    answer = {"text": "<think>Первый верен.</think>\n\n1", "finish": "abort"}

    def respond(path: str, body: dict) -> tuple:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(answer["text"], body["model"], answer["finish"])

    out = tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        args = ["run", "--judge", server.base_url, "--data", str(data), "--out", str(out), "--no-progress",
                "--verdict-format", "integer", "--max-retries", "1", "--backoff-s", "0.001"]
        assert eval_main(args) == 3
        assert len(server.bodies("/v1/chat/completions")) == 4  # two orders, each asked twice
        rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
        assert [(r.error, r.score) for r in rows] == [(REQUEST_FAILED, None)] * 2
        answer["finish"] = "length"
        assert eval_main(args) == 0
        assert len(server.bodies("/v1/chat/completions")) == 6  # the rerun asked both again
    final = {r.order: r for r in read_pairwise_rows(out / PAIRWISE_PREDICTIONS)}
    assert {order: (r.error, r.score) for order, r in final.items()} == {
        "original": (VerdictError.CUT, None), "swapped": (VerdictError.CUT, None)}


def _refusing_engine(tokenizer):
    """An engine refusing the judgment of one criterion (HTTP 400: told by its name in the decoded prompt) and
    answering the other."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if "Ритм" in tokenizer.decode(body["prompt"]):
            return 400, {"error": {"message": "bad request for this prompt", "type": "BadRequestError", "code": 400}}
        return 200, {"choices": [{"text": "[FEEDBACK] Рифма есть. [RESULT] 1 [END]", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    return respond


def test_judge_eval_records_an_engine_refused_judgment_as_a_refused_request(qwen_tokenizer):
    """judge-serve answers an engine's refusal of one judgment as that result's failure ``engine_refused``, the other
    judgment scored; judge-eval's /v1/judge backend records it as a refused request (as the chat route records an
    engine's 400), not as a verdict of the judge's that failed to parse."""
    from eval.judging.backends import Refused

    body, _ = judged(judge_settings("seq2seq"), qwen_tokenizer, SERVE_REQUEST, _refusing_engine(qwen_tokenizer))
    errors = [result["error"] for result in body["items"][0]["results"]]
    assert errors == [None, VerdictError.ENGINE_REFUSED]
    records = [SimpleNamespace(id="q1", instruction="Напиши стих.", answer="Роза красная.", reference_answer=None,
                               criteria_name=name, rubrics=SERVE_RUBRICS) for name in ("Рифма", "Ритм")]
    with pytest.raises(Refused) as raised:
        judged_by_judge_eval(records, body)
    assert raised.value.status == 400 and not is_transient(raised.value)
    assert "refused ['Ритм'] of q1" in str(raised.value)


def test_a_strict_reading_names_the_length_cut_that_left_no_end():
    """Read strictly, a verdict the length limit stopped after its score is missing_end with the cut named, whether
    a score is there or not; read_served_verdict fails it as cut, that missing_end in its reason."""
    from judge.scales import Scale

    verdict = read_tagged_verdict("[FEEDBACK] ok [RESULT] 2", Scale((0, 1, 2)), finish_reason="length")
    assert (verdict.error, verdict.feedback) == (VerdictError.MISSING_END, "ok")
    assert verdict.reason == ("the length limit cut the output (finish_reason length) with no [END] after the final "
                              "[RESULT] (the score is there, which lenient reading takes)")
    empty = read_tagged_verdict("[FEEDBACK] ok [RESULT] ", Scale((0, 1, 2)), finish_reason="length")
    assert empty.error == VerdictError.MISSING_END and "(finish_reason length)" in empty.reason
    assert "(and no score follows)" in empty.reason
    served = read_served_verdict("tagged", "[FEEDBACK] ok [RESULT] 2", scale=Scale((0, 1, 2)), finish_reason="length")
    assert served.error == VerdictError.CUT and verdict.reason in served.reason
