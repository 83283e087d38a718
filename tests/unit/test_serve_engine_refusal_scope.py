"""How far an engine's refusal (a 4xx) reaches on /v1/judge: one judgment refused of several fails alone (as
``engine_refused``, test_serve_engine_refusal.py), but a refusal of every judgment is the request's, answered with the
engine's status (a reward path would otherwise score each judgment 0 and train on); and a refusal in the engine's
words for a prompt past its context follows the request's ``oversize``, as judge-serve's own context check does."""

from __future__ import annotations

from tests.support.served_app import served

CRITERIA = ["Первый", "Второй", "Третий"]
HEADERS = {"Authorization": "Bearer k"}
SCORED = (200, {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]", "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
#: vLLM's 400 for a sampling field it does not take: every judgment of the request asks it alike.
MIN_P_400 = {"error": {"message": "This model does not support the parameter min_p", "type": "BadRequestError",
                       "param": None, "code": 400}}
#: vLLM 0.32's 400 for a prompt its window cannot hold (``renderers/params.py``).
CONTEXT_400 = {"error": {"message": "This model's maximum context length is 1024 tokens. However, your prompt "
                                    "contains 1500 input tokens, which exceeds this limit even without any output "
                                    "tokens.", "type": "BadRequestError", "param": None, "code": 400}}


def _body(oversize: str | None = None) -> dict:
    criteria = [{"name": name, "rubrics": "0: нет\n1: да"} for name in CRITERIA]
    body: dict = {"items": [{"instruction": "2+2?", "answer": "4", "criteria": criteria}]}
    return body if oversize is None else {**body, "oversize": oversize}


def _judge_serves_tokenizer(folder):
    """The folder's tokenizer as judge-serve loads it (its loader, which this worker remembers per folder: the
    judge-serve a test starts on the folder loads that same one), for an engine stand-in that reads a prompt's ids."""
    import serve.supervision

    return serve.supervision.load_tokenizer(folder)


def _refusing_second(tokenizer, refusal: dict):
    """An engine answering ``refusal`` for the second criterion's prompt (told by its name) and scoring the others."""

    def completions(path, body):
        if "Второй" in tokenizer.decode(body["prompt"]):
            return 400, refusal
        return SCORED

    return completions


def test_a_refusal_of_every_judgment_is_the_requests_with_the_engines_status(tiny_causal_dir, monkeypatch):
    """The engine refusing all three judgments for a sampling field: the request's 400 with the engine's message
    (what it was before one judgment's refusal became a failed result), not a 200 of three failed results."""
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=lambda path, body: (400, MIN_P_400)) as (
            http, engine):
        answer = http.post("/v1/judge", headers=HEADERS, json=_body())
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == "engine answered 400: This model does not support the parameter min_p"
    assert len(engine.bodies("/v1/completions")) == 3  # each judgment was asked: the refusal was every one's


def test_a_context_refusal_fails_its_judgment_under_oversize_fail(tiny_causal_dir, monkeypatch):
    """``"oversize": "fail"``: the second judgment's context refusal is its failed result
    ``context_length_exceeded`` (as a prompt judge-serve counts too long is), naming the item and criterion; the
    others are scored."""
    tokenizer = _judge_serves_tokenizer(tiny_causal_dir)
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_refusing_second(tokenizer, CONTEXT_400)) as (
            http, _):
        answer = http.post("/v1/judge", headers=HEADERS, json=_body("fail"))
    assert answer.status_code == 200, answer.text
    results = answer.json()["items"][0]["results"]
    assert [(r["error"], r["score"]) for r in results] == [(None, 1), ("context_length_exceeded", None), (None, 1)]
    assert results[1]["error_reason"].startswith("items[0]: the engine refused the prompt for criterion 'Второй' as "
                                                 "longer than the model's context (engine answered 400: This model's "
                                                 "maximum context length is 1024 tokens.")


def test_a_context_refusal_is_the_requests_400_under_oversize_refuse(tiny_causal_dir, monkeypatch):
    """Under ``oversize`` ``refuse`` (the default) the same refusal is the request's 400 ``context_length_exceeded``
    naming the item, the answer judge-serve's own context check gives, though the other judgments were scored."""
    tokenizer = _judge_serves_tokenizer(tiny_causal_dir)
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_refusing_second(tokenizer, CONTEXT_400)) as (
            http, _):
        answers = [http.post("/v1/judge", headers=HEADERS, json=_body(oversize)) for oversize in (None, "refuse")]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert (error["code"], error["param"]) == ("context_length_exceeded", "items[0]")
        assert error["message"].startswith("items[0]: the engine refused the prompt for criterion 'Второй' as longer "
                                           "than the model's context")


def test_a_refusal_of_every_judgment_sent_is_the_requests_beside_one_never_sent(tiny_causal_dir, monkeypatch):
    """``"oversize": "fail"`` (what /get_reward sends): item 0's answer too long for the window fails unsent, and the
    engine refuses item 1's one judgment for a sampling field. The engine answered no judgment, so the refusal is
    the request's 400 with the engine's message, not a 200 whose failed results a reward path scores 0."""
    criteria = [{"name": "Первый", "rubrics": "0: нет\n1: да"}]
    body = {"items": [{"instruction": "2+2?", "answer": "слово " * 20_000, "criteria": criteria},
                      {"instruction": "2+2?", "answer": "4", "criteria": criteria}], "oversize": "fail"}
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=lambda path, body: (400, MIN_P_400)) as (
            http, engine):
        answer = http.post("/v1/judge", headers=HEADERS, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == "engine answered 400: This model does not support the parameter min_p"
    assert len(engine.bodies("/v1/completions")) == 1  # item 1's judgment alone was sent: item 0's never was


def test_an_engine_that_answered_one_judgment_leaves_the_refusal_to_its_judgment(tiny_causal_dir, monkeypatch):
    """The same two items, the engine refusing only the second criterion's prompt of item 1 and scoring its first:
    it answered a judgment, so the refusal stays that judgment's failed result beside item 0's unsent one."""
    tokenizer = _judge_serves_tokenizer(tiny_causal_dir)
    criteria = [{"name": name, "rubrics": "0: нет\n1: да"} for name in ("Первый", "Второй")]
    body = {"items": [{"instruction": "2+2?", "answer": "слово " * 20_000, "criteria": criteria[:1]},
                      {"instruction": "2+2?", "answer": "4", "criteria": criteria}], "oversize": "fail"}
    with served(tiny_causal_dir, monkeypatch, api_key="k", completions=_refusing_second(tokenizer, MIN_P_400)) as (
            http, _):
        answer = http.post("/v1/judge", headers=HEADERS, json=body)
    assert answer.status_code == 200, answer.text
    items = answer.json()["items"]
    assert [r["error"] for r in items[0]["results"]] == ["context_length_exceeded"]
    assert [(r["error"], r["score"]) for r in items[1]["results"]] == [(None, 1), ("engine_refused", None)]
