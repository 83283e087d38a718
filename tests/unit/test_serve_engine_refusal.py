"""An engine's refusal (a 4xx) of one judgment of a /v1/judge request fails that judgment alone, as a counted result
``error: "engine_refused"``; the request's other judgments are answered."""

from __future__ import annotations

from serve.engine_client import EngineFailure
from serve.errors import engine_refused
from tests.support.served_app import served

CRITERIA = ["Первый", "Второй", "Третий"]
#: vLLM's 400 for a value it refuses, with internals a client must not read (a path); not a context refusal
#: (``judge.verdicts.CONTEXT_LIMIT``), which follows the request's ``oversize`` (test_serve_engine_refusal_scope.py).
VLLM_400 = {"error": {"message": "The prompt holds a token id out of the vocabulary, see /opt/vllm/entrypoints/x.py",
                      "type": "BadRequestError", "param": None, "code": 400}}


def test_one_judgment_the_engine_refuses_fails_alone(tiny_causal_dir, monkeypatch):
    """Three criteria, the engine refusing the second's prompt (told by its name in the decoded prompt): 200, the
    second result failed as engine_refused with the engine's message sanitized, the others scored 1."""
    import serve.supervision

    # The engine stand-in reads a prompt's ids with the tiny judge's tokenizer as judge-serve loads it (its loader,
    # which this worker remembers per folder): judge-serve below loads that same one.
    tokenizer = serve.supervision.load_tokenizer(tiny_causal_dir)
    asked: list[str] = []

    def completions(path, body):
        prompt = tokenizer.decode(body["prompt"])
        named = [name for name in CRITERIA if name in prompt]
        asked.extend(named)
        if named == ["Второй"]:
            return 400, VLLM_400
        return 200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=completions) as (http, _):
        criteria = [{"name": name, "rubrics": "0: нет\n1: да"} for name in CRITERIA]
        answer = http.post("/v1/judge", headers={"Authorization": "Bearer k"},
                           json={"items": [{"instruction": "2+2?", "answer": "4", "criteria": criteria}]})
    assert answer.status_code == 200, answer.text
    assert sorted(asked) == sorted(CRITERIA)  # each prompt named exactly one criterion
    results = answer.json()["items"][0]["results"]
    assert [r["criterion"] for r in results] == CRITERIA
    assert [r["error"] for r in results] == [None, "engine_refused", None]
    assert [r["score"] for r in results] == [1, None, 1]
    assert results[1]["parse_ok"] is False
    assert results[1]["error_reason"] == ("engine answered 400: The prompt holds a token id out of the vocabulary, "
                                          "see <path>")
    usage = answer.json()["usage"]
    # the refused judgment is counted, not parsed; its tokens none (the engine read nothing of it)
    assert (usage["judgments"], usage["parsed"]) == (3, 2)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (20, 10)


def test_which_engine_errors_are_one_judgments_refusal():
    """A 4xx the engine sends about the judgment is its refusal; judge-serve's key refused (401), a 404 (vLLM's for
    the model, an engine renamed; a route the engine lacks: every judgment alike), a 5xx and a failure with a public
    message are not."""
    assert engine_refused(EngineFailure("engine answered 400: bad", 400))
    assert engine_refused(EngineFailure("engine answered 422: bad", 422))
    assert not engine_refused(EngineFailure("engine answered 404: Not Found", 404))
    assert not engine_refused(EngineFailure("engine answered 404: no model", 404, param="model"))
    assert not engine_refused(EngineFailure("engine answered 401: Unauthorized", 401))
    assert not engine_refused(EngineFailure("engine answered 500: boom", 500))
    assert not engine_refused(EngineFailure("engine answered 503: busy", 503))
    assert not engine_refused(EngineFailure("unreadable", 400, public="the answer could not be read"))
    # a body too large for a proxy before the engine: refused, the status passed on (every judgment alike is the
    # request's 413, test_serve_engine_refusal_scope.py)
    assert engine_refused(EngineFailure("engine answered 413: too large", 413))
    # forbidden is the key's, not the judgment's; 408, 409 and 429 a later attempt can pass (retryable_status)
    for status in (403, 408, 409, 429):
        assert not engine_refused(EngineFailure(f"engine answered {status}: no", status)), status


# ------------------------------------------------------------------------ the regression head's pooler (/classify)

RUBRICS = "0: плохо\n\n1: хорошо"
REGRESSION_REQUEST = {"items": [{"id": "q1", "instruction": "Напиши стих.", "answer": "Роза красная.",
                                 "criteria": [{"name": "Рифма", "rubrics": RUBRICS},
                                              {"name": "Ритм", "rubrics": RUBRICS}]}]}
#: vLLM 0.32's 400 for an input its pooler's window cannot hold (``renderers/params.py``).
POOLER_CONTEXT_400 = {"error": {"message": "This model's maximum context length is 4096 tokens. However, your prompt "
                                           "contains 5000 input tokens, which exceeds this limit even without any "
                                           "output tokens.", "type": "BadRequestError", "param": None, "code": 400}}


def _pooler_refusing(tokenizer, refusal: dict, refused: tuple[str, ...] = ("Ритм",)):
    """A generator writing a rationale for every prompt and a pooler answering ``refusal`` for the head's input of
    the criteria ``refused`` (told by name in the decoded input), scoring the others 0.75."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path == "/classify":
            if any(name in tokenizer.decode(body["input"][0]) for name in refused):
                return 400, refusal
            return 200, {"data": [{"probs": [0.75]}]}
        return 200, {"choices": [{"text": "[FEEDBACK] Рифма есть. [RESULT] 1 [END]", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7}}

    return respond


def test_the_poolers_refusal_of_one_judgment_fails_it_alone(qwen_tokenizer):
    """The pooler refusing the head's input for "Ритм" (a 400 not about the window): that result failed
    ``engine_refused`` with the engine's message, "Рифма" scored by the head (0.75, inside the 0..1 scale)."""
    from judge.verdicts import VerdictError
    from tests.support.judge_in_process import judge_settings, judged

    body, engine = judged(judge_settings("regression"), qwen_tokenizer, REGRESSION_REQUEST,
                          _pooler_refusing(qwen_tokenizer, VLLM_400))
    results = body["items"][0]["results"]
    assert [(r["error"], r["score"]) for r in results] == [(None, 0.75), (VerdictError.ENGINE_REFUSED, None)]
    assert results[1]["error_reason"] == ("engine answered 400: The prompt holds a token id out of the vocabulary, "
                                          "see <path>")
    assert len(engine.bodies("/classify")) == 2


def test_the_poolers_refusal_of_every_judgment_is_the_requests(qwen_tokenizer):
    """The pooler refusing both heads' inputs: the generator answered, but no judgment got its score, so the refusal
    is the request's (the engine's status), as the generator's refusal of every judgment is."""
    import pytest

    from tests.support.judge_in_process import judge_settings, judged

    with pytest.raises(EngineFailure) as raised:
        judged(judge_settings("regression"), qwen_tokenizer, REGRESSION_REQUEST,
               _pooler_refusing(qwen_tokenizer, VLLM_400, refused=("Рифма", "Ритм")))
    assert raised.value.status == 400
    assert str(raised.value) == ("engine answered 400: The prompt holds a token id out of the vocabulary, see "
                                 "/opt/vllm/entrypoints/x.py")


def test_the_poolers_context_refusal_under_oversize_fail_is_context_length_exceeded(qwen_tokenizer):
    """The pooler's refusal of "Ритм"'s input as past its window, under ``"oversize": "fail"``: that result failed
    ``context_length_exceeded`` naming the item and criterion, as the generator's context refusal is."""
    from judge.verdicts import VerdictError
    from tests.support.judge_in_process import judge_settings, judged

    body, _ = judged(judge_settings("regression"), qwen_tokenizer, {**REGRESSION_REQUEST, "oversize": "fail"},
                     _pooler_refusing(qwen_tokenizer, POOLER_CONTEXT_400))
    results = body["items"][0]["results"]
    assert [(r["error"], r["score"]) for r in results] == [(None, 0.75),
                                                           (VerdictError.CONTEXT_LENGTH_EXCEEDED, None)]
    assert results[1]["error_reason"].startswith("items[0]: the engine refused the prompt for criterion 'Ритм' as "
                                                 "longer than the model's context (engine answered 400: This model's "
                                                 "maximum context length is 4096 tokens.")
