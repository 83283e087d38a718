"""``/v1/judge`` typed both directions: the request eval builds is the request serve validates, the
response serve writes is the envelope eval reads, and the pairwise variant crosses the same way.

judge-serve's real ``Judge`` runs against a scripted engine on 127.0.0.1 (the network boundary, a vLLM
``/v1/completions``), whose received payloads are asserted.
"""

from __future__ import annotations

import asyncio
import json

import pytest

import judge
from eval.judging.backends import JudgeServeBackend
from eval.judging.config import RunConfig
from judge.checkpoints import NEUTRAL_SAMPLING
from judge.plumbing.config_files import ConfigError
from judge.wire import JudgeRequest, JudgeResponse, PairwiseRequest
from serve.jobs import PAIRWISE_SCALE
from serve.schema import RequestError, parse_judge_request
from tests.support.judge_in_process import judge_settings, judged

RUBRICS = "0: плохо\n\n1: средне\n\n2: хорошо"
PAIR = {"id": "p1", "instruction": "Назови столицу Франции.", "answer_1": "Париж.", "answer_2": "Лион.",
        "rubrics": "Критерий: точность.\n-1: ответ 1 лучше\n0: одинаково\n1: ответ 2 лучше"}


def _serve(request: dict, tokenizer, output: str, *, kind: str = "seq2seq", verdict_format: str = "tagged"):
    """(the response body through JSON, the engine payloads) of judge-serve's Judge on ``request``."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        return 200, {"choices": [{"text": output, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": 5}}

    body, endpoint = judged(judge_settings(kind, verdict_format=verdict_format), tokenizer, request, respond)
    return body, endpoint.bodies("/v1/completions")


def test_the_request_eval_builds_is_the_request_serve_validates(tmp_path):
    """JudgeServeBackend's body for a batch, read by judge-serve's parse_judge_request, is the same JudgeRequest the
    backend built (one item, one custom criterion per record, the run's settings and extra_body)."""
    records = judge.load_records(judge.sample_data_path())[:2]
    config = RunConfig(out=str(tmp_path), judge="http://x", max_tokens=77, extra_body={"constrained": True})
    backend = JudgeServeBackend("http://127.0.0.1:9", "", "tiny", config)
    built = backend.request(records)
    body = json.loads(json.dumps(backend.payload(records), ensure_ascii=False))
    assert parse_judge_request(body) == built
    assert body["items"][0]["criteria"] == [{"name": r.criteria_name, "rubrics": r.rubrics} for r in records]
    assert (body["max_tokens"], body["constrained"], body["model"]) == (77, True, "tiny")
    asyncio.run(backend.aclose())


def test_an_extra_body_key_judge_serve_does_not_take_is_a_config_error(tmp_path):
    """extra_body is checked against JudgeRequest when the backend is made, naming extra_body, before any request."""
    config = RunConfig(out=str(tmp_path), judge="http://x", extra_body={"reasoning_effort": "low"})
    with pytest.raises(ConfigError, match="extra_body: .*reasoning_effort"):
        JudgeServeBackend("http://127.0.0.1:9", "", "tiny", config)


def test_the_response_serve_writes_is_the_envelope_eval_reads(qwen_tokenizer):
    """Judge.run's body reads into JudgeResponse strictly and writes back byte for byte; every envelope field is
    there, and a key more or less is refused naming it."""
    request = {"items": [{"id": "q1", "instruction": "Напиши стих.", "answer": "Роза красная.",
                          "criteria": [{"name": "Рифма", "rubrics": RUBRICS}, {"name": "Ритм", "rubrics": RUBRICS}]}]}
    body, _ = _serve(request, qwen_tokenizer, "[FEEDBACK] Есть. [RESULT] 2 [END]")
    response = JudgeResponse.from_json(body)
    assert response.to_json() == body
    assert list(body) == ["id", "object", "created", "model", "judge_kind", "verdict_format", "prompt_version", "items",
                          "usage"]  # fmt: skip
    assert [r.score for r in response.items[0].results] == [2.0, 2.0] and response.usage.parsed == 2
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['extra'\]"):
        JudgeResponse.from_json({**body, "extra": 1})
    with pytest.raises(ValueError, match=r"response\.usage: required field is missing"):
        JudgeResponse.from_json({k: v for k, v in body.items() if k != "usage"})
    with pytest.raises(ValueError, match=r"items\[0\]\.results\[1\]\.criterion: required field is missing"):
        broken = json.loads(json.dumps(body))
        del broken["items"][0]["results"][1]["criterion"]
        JudgeResponse.from_json(broken)


def test_a_pairwise_request_is_judged_in_the_integer_format(qwen_tokenizer):
    """A pairs body is a PairwiseRequest; judge-serve renders the pairwise template with thinking on, generates to
    the end of the turn, and answers one result per pair: the integer on the -1/0/1 scale, the reasoning as
    feedback."""
    body, sent = _serve({"pairs": [PAIR]}, qwen_tokenizer, "<think>\nПариж верен.\n</think>\n\n-1",
                        verdict_format="integer")
    expected_ids = qwen_tokenizer(judge.apply_chat(qwen_tokenizer, judge.render_pairwise_prompt(PAIR), thinking=True),
                                  add_special_tokens=False)["input_ids"]  # fmt: skip
    (payload,) = sent
    assert payload == {"model": "gen", "prompt": expected_ids, "max_tokens": 64, "temperature": 0.0, **NEUTRAL_SAMPLING}
    response = JudgeResponse.from_json(body)
    assert (response.verdict_format, response.items[0].id) == ("integer", "p1")
    (result,) = response.items[0].results
    assert (result.criterion, result.scale, result.score, result.feedback, result.in_scale) == (
        "pairwise", list(PAIRWISE_SCALE.levels), -1.0, "Париж верен.", True)


@pytest.mark.parametrize("body, param", [
    ({"pairs": [PAIR], "items": []}, "pairs"),
    ({"pairs": [{**PAIR, "answer_2": "  "}]}, "pairs[0].answer_2"),
    ({"pairs": [{**PAIR, "criteria": ["x"]}]}, "pairs[0].criteria"),
    ({"pairs": []}, "pairs"),
])  # fmt: skip
def test_bad_pairwise_bodies_name_the_field(body, param):
    """A pairwise body with items beside it, an empty answer, an unknown key or no pairs is refused naming the field."""
    with pytest.raises(RequestError) as err:
        parse_judge_request(body)
    assert err.value.param == param


def test_request_types_live_in_the_contract():
    """serve.schema's request types are judge.wire's (one definition, re-exported where the server validates)."""
    import serve.schema

    assert serve.schema.JudgeRequest is JudgeRequest and serve.schema.PairwiseRequest is PairwiseRequest


@pytest.mark.parametrize("entry", [["x"], None, 7, True])
def test_the_contract_words_a_criterion_of_neither_kind_by_both(entry):
    """A criterion entry of neither kind fails both branches of its union (a name, a custom object): the contract's
    ``error_words`` tells each branch's error both kinds, found by the error's location as a rubric's union is, so
    every client of the contract (judge-serve, the reward clients) words it alike."""
    from pydantic import ValidationError

    from judge.wire import criterion_kind_error, error_words

    body = {"items": [{"instruction": "a", "answer": "b", "criteria": ["Креативность", entry]}]}
    with pytest.raises(ValidationError) as err:
        JudgeRequest.model_validate(body)
    branches = [e for e in err.value.errors(include_url=False) if e["loc"][4:5] == (1,)]  # the second entry
    assert {e["loc"][-1] for e in branches} == {"str", "CustomCriterion"}
    assert {error_words(e) for e in branches} == {criterion_kind_error(entry)}
