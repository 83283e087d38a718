"""judge-serve's ``/get_reward`` and its request bounds without an engine: the response OpenRLHF's trainer can batch,
the rules a server refuses at start, and the app in process in front of a scripted engine (an overlong answer, a cut
prompt, a proxied body judge-serve cannot re-serialise, labels refused whatever the answer, the deadline, and a
client that disconnects, on a real uvicorn server). The route with a real engine, end to end:
tests/integration/serving/test_rewards_serve.py."""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pytest

from judge.plumbing.retry import retryable_status
from judge.rewards import reward_of
from judge.wire import JudgeResult
from serve.config import ServeConfig
from serve.rewards import EXTRA_LOG_KEYS, RewardRoute, reward_rule_of
from serve.schema import RequestError
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.serve_in_process import (attached_engine_get, await_bring_up, decode_turns_held, on_event_loop,
                                           served_over_tcp)


def _ok(criterion: str, score: float) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict")


def test_every_sample_of_every_request_carries_the_same_extra_logs_keys():
    """OpenRLHF posts one sample per request, turns each ``extra_logs`` value into a one-element tensor, joins each
    key's tensors over the batch (``openrlhf/trainer/ppo_utils/experience.py``, ``concat_experiences``) and refuses
    a key with fewer values than samples (``split_experience_batch``). Samples judged on different criteria, with a
    failed verdict, and with nothing to judge must therefore give one key set: joined the way OpenRLHF joins them,
    every key has one value per sample."""
    route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
    rule = route.rule
    samples = [
        [reward_of([_ok("Креативность", 2)], rule)],
        [reward_of([_ok("Грамотность", 1), _ok("Полезность", 0)], rule)],
        [reward_of([JudgeResult(criterion="Полезность", criterion_id=None, scale=[0, 1, 2], error="no_result")], rule)],
        [None],  # an empty answer: unjudged
    ]
    bodies = [route._body(rewards, latency=0.5) for rewards in samples]
    joined: dict[str, list[float]] = {}
    for body in bodies:
        for key, values in body["extra_logs"].items():
            joined.setdefault(key, []).extend(values)
    assert [tuple(b["extra_logs"]) for b in bodies] == [EXTRA_LOG_KEYS] * 4
    assert {key: len(values) for key, values in joined.items()} == dict.fromkeys(EXTRA_LOG_KEYS, 4)
    assert joined["judge_failures"] == [0.0, 0.0, 1.0, 0.0] and joined["judge_empty_answer"] == [0.0, 0.0, 0.0, 1.0]
    # the served rule's values: 2/2 -> 1.0; (0.5 + 0) / 2; the failure counts as 0 ("zero"); empty_answer 0.0
    assert [b["rewards"][0] for b in bodies] == [1.0, 0.25, 0.0, 0.0]
    assert reward_rule_of(ServeConfig(model="x")).on_failure == "zero"


@pytest.mark.parametrize(("rule", "field"), [({"on_failure": "skip"}, "reward_rule.on_failure"),
                                             ({"empty_answer": None}, "reward_rule.empty_answer")])
def test_a_served_rule_that_can_give_no_reward_is_refused_at_start(rule, field):
    """A null reward fails OpenRLHF's step (``samples_generator.py`` makes ``torch.tensor([reward])`` of it), so
    judge-serve refuses such a rule before it starts, naming the field; the rules that always give a number pass."""
    from judge.plumbing.config_files import ConfigError

    with pytest.raises(ConfigError, match=rf"^{field}: .* the trainer needs a number for every sample"):
        ServeConfig(model="x", reward_rule=rule).validate()
    ServeConfig(model="x", reward_rule={"on_failure": "scale_min", "empty_answer": 0.0}).validate()


def _verdict(path: str, body: dict) -> tuple:
    """The scripted engine's completion: one tagged verdict, the scale's top."""
    return 200, {"choices": [{"text": "[FEEDBACK] Хорошо. [RESULT] 2 [END]", "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


@contextlib.contextmanager
def _attached_judge_serve(model_dir, monkeypatch, ready: bool = True, completions=_verdict, **settings):
    """judge-serve's app in process (``TestClient``, its start ended; ready unless ``ready`` is False), in front of
    a scripted engine with a 1,024-token context that answers every completion by ``completions`` (one tagged
    verdict), ``settings`` added to its configuration; yields ``(client, engine)``."""
    from fastapi.testclient import TestClient

    from serve.app import create_app

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(completions, respond_get=attached_engine_get) as engine:
        config = ServeConfig(model=str(model_dir), served_model_name="attached", generator_url=engine.url,
                             max_model_len=1024, max_tokens=128, api_key="k", **settings).validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            assert not ready or http.get("/ready").status_code == 200, http.get("/health").text
            yield http, engine


def test_a_verdict_whose_engine_text_holds_a_lone_surrogate_is_answered_on_both_routes(tiny_causal_dir, monkeypatch):
    """An engine of another kind answers a JSON-escaped lone surrogate in its verdict's rationale: /v1/judge (what
    the trl and verl reward functions call) echoes the feedback, and it was a 500 (UTF-8 cannot encode it), which
    those clients retry and then fail the samples on. Read as vLLM writes bytes that are no text, U+FFFD, it is a
    verdict like any other, on /v1/judge and /get_reward alike."""
    def surrogate(path: str, body: dict) -> tuple:
        return 200, json.loads('{"choices": [{"text": "[FEEDBACK] Хорошо \\ud800. [RESULT] 2 [END]", '
                               '"finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}')

    auth = {"Authorization": "Bearer k"}
    prompt = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, completions=surrogate) as (http, _):
        judged = http.post("/v1/judge", headers=auth, json={"items": [
            {"instruction": "Напиши стих о весне.", "answer": "Весна пришла.", "criteria": ["Креативность"]}]})
        rewarded = http.post("/get_reward", headers=auth, json={
            "query": [prompt + "Весна пришла."], "prompts": [prompt],
            "labels": [{"instruction": "Напиши стих о весне.", "criteria": ["Креативность"]}]})
    assert judged.status_code == 200, judged.text
    result = judged.json()["items"][0]["results"][0]
    assert (result["score"], result["parse_ok"], result["feedback"]) == (2, True, "Хорошо \ufffd.")
    assert rewarded.status_code == 200 and rewarded.json()["rewards"] == [1.0], rewarded.text


def test_a_task_classifier_that_cannot_load_fails_the_start(tiny_causal_dir, monkeypatch, tmp_path):
    """A criteria classifier judge-serve cannot load fails its start as an engine that cannot come up does:
    /health says unhealthy with the cause (it once stayed "starting" forever, the engines held, never fatal)."""
    missing = tmp_path / "no-classifier"
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, ready=False, criteria_classifier="tfidf",
                               criteria_classifier_path=str(missing)) as (http, _):
        health = http.get("/health", headers={"Authorization": "Bearer k"})  # the start has ended (the helper)
        assert http.get("/ready").status_code != 200
    assert health.status_code == 503 and health.json()["status"] == "unhealthy"
    assert health.json()["detail"] == "criteria_classifier_path: <path>: no such folder"  # sanitised, as every detail


def test_a_task_classifier_that_fails_on_a_request_is_a_502_in_openais_shape(tiny_causal_dir, monkeypatch):
    """criteria auto through the llm method, whose endpoint is down: the classifier's error reaches the client as an
    OpenAI-shaped 502 naming the classifier (it was a plain-text 500), on /v1/judge and /get_reward alike."""
    import socket

    # A port held bound but never listening: refused, and the engine started below cannot take it over.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    item = {"instruction": "Напиши стих о весне.", "answer": "Весна пришла.", "criteria": "auto"}
    with closed, _attached_judge_serve(tiny_causal_dir, monkeypatch, criteria_classifier="llm",
                                       criteria_classifier_path=closed_url,
                                       criteria_classifier_model="m") as (http, engine):
        auth = {"Authorization": "Bearer k"}
        judged = http.post("/v1/judge", headers=auth, json={"items": [item]})
        prompt = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
        rewarded = http.post("/get_reward", headers=auth, json={
            "query": [prompt + "Весна пришла."], "prompts": [prompt],
            "labels": [{"instruction": item["instruction"], "criteria": "auto"}]})
    for answer in (judged, rewarded):
        assert answer.status_code == 502, answer.text
        error = answer.json()["error"]
        assert error["code"] == "engine_error" and error["message"].startswith("the task classifier failed (")
    assert engine.requests == []


def test_get_reward_waits_for_a_restarting_engine_instead_of_failing_openrlhfs_step(tiny_causal_dir, monkeypatch):
    """While an engine restarts, /get_reward waits (up to reward_engine_wait_s) and answers once it is back: a 503
    at once (what it did) would outlast OpenRLHF's 5 quick retries and fail its step. The request is seen waiting
    (its log line), then the engine comes back, then it is judged and answered 200."""
    import logging
    import threading

    prompt = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
    body = {"query": [prompt + "Весна пришла."], "prompts": [prompt],
            "labels": [{"instruction": "Напиши стих о весне.", "criteria": ["Креативность"]}]}
    waiting = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "a reward request waits up to 60 s for the engines" in record.getMessage():
                waiting.set()

    seen = Seen()
    logging.getLogger("judge_serve").addHandler(seen)
    try:
        # The restart is faked: no /health probe of the attached engine (every 5 s by default) may end it meanwhile.
        with _attached_judge_serve(tiny_causal_dir, monkeypatch, reward_engine_wait_s=60.0,
                                   attached_probe_interval_s=3600) as (http, engine):
            state = http.app.state.serve

            async def restarting() -> None:
                state.dead_reason["generator"] = "the generator engine exited with code 1; judge-serve is restarting it"

            async def back() -> None:
                state.dead_reason.pop("generator", None)

            http.portal.call(restarting)
            answered = {}
            request = threading.Thread(target=lambda: answered.update(
                r=http.post("/get_reward", headers={"Authorization": "Bearer k"}, json=body)))
            request.start()
            assert waiting.wait(30), "the reward request did not wait for the engine"
            assert engine.bodies("/v1/completions") == []  # nothing sent while it is down
            http.portal.call(back)
            request.join(60)
    finally:
        logging.getLogger("judge_serve").removeHandler(seen)
    assert answered["r"].status_code == 200, answered["r"].text
    assert answered["r"].json()["rewards"] == [1.0] and len(engine.bodies("/v1/completions")) == 1


def test_a_proxied_body_with_an_over_long_number_is_a_400_naming_it(tiny_causal_dir, monkeypatch):
    """The proxy re-serialises a body when it adds max_tokens; an integer of more than 100 digits decodes to a
    placeholder json.dumps cannot write, once a 500: the proxy checks the values first, a 400 naming the field, and
    nothing reaches the engine."""
    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        answer = http.post("/v1/chat/completions", headers={"Authorization": "Bearer k"},
                           content=b'{"model": "attached", "messages": [], "seed": ' + b"1" * 101 + b"}")
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "seed" and engine.requests == []


def test_get_reward_counts_an_answer_too_long_for_the_judge_and_reads_a_prompt_openrlhf_cut(tiny_causal_dir,
                                                                                              monkeypatch):
    """judge-serve (the app, in front of an attached stand-in engine with a 1,024-token context):
    - one sample's answer cannot fit the judge's context: that sample gets the rule's failure value (0.0 under the
      served ``zero``) with ``judge_failures`` 1, the other sample is judged (1.0), and only its prompt reached the
      engine; before, the request was a 400 and OpenRLHF's step lost every reward;
    - a query whose prompt OpenRLHF cut from the left (it starts with a tail of the prompt) is read to the same
      answer as the whole one;
    - ``/v1/judge`` with ``"oversize": "fail"`` answers the same judgment as a failed result."""
    instruction = "Напиши короткое стихотворение о весне. " * 20
    prompt = f"<|im_start|>user\n{instruction}<|im_end|>\n<|im_start|>assistant\n"
    label = {"instruction": instruction, "criteria": ["Креативность"]}
    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        auth = {"Authorization": "Bearer k"}
        answers = ["Весна пришла.<|im_end|>", "слово " * 3000 + "<|im_end|>"]
        body = {"query": [prompt + a for a in answers], "prompts": [prompt, prompt], "labels": [label, label]}
        rewarded = http.post("/get_reward", json=body, headers=auth)
        cut = {"query": [prompt[-40:] + answers[0]], "prompts": [prompt], "labels": [label]}
        from_cut = http.post("/get_reward", json=cut, headers=auth)
        judged = http.post("/v1/judge", headers=auth, json={"items": [{**label, "answer": "слово " * 3000}],
                                                         "oversize": "fail"})
    assert rewarded.status_code == 200, rewarded.text
    assert rewarded.json()["rewards"] == [1.0, 0.0]
    assert rewarded.json()["extra_logs"]["judge_failures"] == [0.0, 1.0]
    sent = engine.bodies("/v1/completions")
    assert len(sent) == 2  # the short answer's judgment, then the cut query's: never the long one's
    assert from_cut.status_code == 200 and from_cut.json()["rewards"] == [1.0], from_cut.text
    assert judged.status_code == 200, judged.text
    (result,) = judged.json()["items"][0]["results"]
    assert result["error"] == "context_length_exceeded" and result["parse_ok"] is False
    assert result["error_reason"].startswith("items[0]")


@pytest.mark.parametrize("on_failure", ["zero", "scale_min"])
def test_get_reward_gives_an_answer_too_long_for_the_judge_the_critical_criterions_worst_value(tiny_causal_dir,
                                                                                               monkeypatch, on_failure):
    """/get_reward values a failed verdict by judge.rewards.reward_of: an answer too long for the judge's context,
    judged on the Critical censor criterion (best at 0) under the gate, fails it (context_length_exceeded), which
    counts as its worst level: reward 0.0, the gate closed. Under scale_min it counted as its best level ("no
    stub"): reward 1.0 (the flags' mean, the only criterion a flag), the gate open, so a policy gained by writing
    past the judge's context."""
    instruction = "Напиши короткое стихотворение о весне."
    prompt = f"<|im_start|>user\n{instruction}<|im_end|>\n<|im_start|>assistant\n"
    label = {"instruction": instruction, "criteria": ["Ответа нет, но есть заглушка цензора?"]}
    rule = {"gate": True, "on_failure": on_failure}
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, reward_rule=rule) as (http, engine):
        body = {"query": [prompt + "слово " * 3000 + "<|im_end|>"], "prompts": [prompt], "labels": [label]}
        rewarded = http.post("/get_reward", json=body, headers={"Authorization": "Bearer k"})
    assert rewarded.status_code == 200, rewarded.text
    assert rewarded.json()["rewards"] == [0.0]
    assert rewarded.json()["extra_logs"]["judge_failures"] == [1.0]
    assert rewarded.json()["extra_logs"]["judge_gate_closed"] == [1.0]
    assert engine.bodies("/v1/completions") == []


PROMPT = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
AUTH = {"Authorization": "Bearer k"}


def _reward_body(answer: str, criteria: list) -> dict:
    """One OpenRLHF sample: the prompt, the prompt + ``answer``, a label judging it on ``criteria``."""
    return {"query": [PROMPT + answer], "prompts": [PROMPT],
            "labels": [{"instruction": "Напиши стих о весне.", "criteria": criteria}]}


def _held_first(release: threading.Event, held: threading.Event):
    """A scripted engine's completions whose first call is held until ``release`` (``held`` set once it arrived);
    every call answers one tagged verdict."""
    def completions(path: str, body: dict) -> tuple:
        if not held.is_set():
            held.set()
            release.wait(30)
        return _verdict(path, body)

    return completions


def _answers_judged(engine, tokenizer) -> list[str]:
    """Which of the tests' two answers each judgment prompt the engine received holds, in arrival order."""
    texts = [tokenizer.decode(body["prompt"]) for body in engine.bodies("/v1/completions")]
    return [next(a for a in ("Весна пришла поздно.", "Лето.") if a in text) for text in texts]


def test_get_reward_past_its_deadline_is_a_504_and_its_judging_is_cancelled(tiny_causal_dir, qwen_tokenizer,
                                                                             monkeypatch):
    """OpenRLHF's client gives up after 180 s and sends the request again: judge-serve must answer within one
    deadline (reward_deadline_s; 3 s here) and stop judging then, or every resend adds a whole judgment to the
    engines' load. One engine request at a time: the late request's first judgment is held by the engine past the
    deadline; the answer is the 504 naming the setting, and its two other judgments never go out: a request that
    follows, once the engine lets the held one go, is the next the engine sees (it would queue behind them).
    OpenRLHF never reads the 504's body (it resends, then fails the step): its cause is a warning in the log."""
    import logging

    release, held = threading.Event(), threading.Event()
    with judge_serve_log(monkeypatch) as records, _attached_judge_serve(
            tiny_causal_dir, monkeypatch, completions=_held_first(release, held), reward_deadline_s=3.0,
            reward_engine_wait_s=0.5, max_concurrent_engine_requests=1) as (http, engine):
        late = http.post("/get_reward", headers=AUTH,
                         json=_reward_body("Весна пришла поздно.", ["Креативность", "Грамотность", "Полезность"]))
        assert held.is_set(), "the deadline passed before the first judgment reached the engine"
        release.set()
        following = http.post("/get_reward", headers=AUTH, json=_reward_body("Лето.", ["Креативность"]))
    message = ("the rewards took longer than reward_deadline_s=3 s (the wait for an engine included); their judging "
               "is cancelled")
    assert late.status_code == 504, late.text
    assert late.json()["error"] == {"message": message, "type": "timeout", "param": None, "code": "timeout"}
    # A resend is judged from the start, never beside the cancelled judging: a 5xx the client may resend, without
    # the x-should-retry: false of /v1/judge's 504 and without a Retry-After (no wait would help it: OpenRLHF
    # resends every error status a second later, its headers unread; docs/rewards.md).
    assert (late.headers.get("retry-after"), late.headers.get("x-should-retry")) == (None, None)
    assert retryable_status(late.status_code, late.headers)
    assert [r.getMessage() for r in records if r.levelno == logging.WARNING and "504" in r.getMessage()] == [
        f"a reward request was answered 504: {message}"]
    assert following.status_code == 200 and following.json()["rewards"] == [1.0], following.text
    assert _answers_judged(engine, qwen_tokenizer) == ["Весна пришла поздно.", "Лето."]


@contextlib.contextmanager
def judge_serve_log(monkeypatch):
    """The records judge-serve's logger takes while inside (a list, filled as they come), at judge-serve's own level
    (configure_logging's default, INFO)."""
    import logging

    records: list[logging.LogRecord] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("judge_serve")
    seen = Seen()
    logger.addHandler(seen)
    monkeypatch.setattr(logger, "level", logging.INFO)
    try:
        yield records
    finally:
        logger.removeHandler(seen)


@contextlib.contextmanager
def _served_over_tcp(config: ServeConfig):
    """judge-serve's app on a real uvicorn server in this process (judge-serve's own connection protocol), its start
    ended; yields the port."""
    from serve.app import create_app
    from serve.connections import header_deadline_protocol

    app = create_app(config)
    protocol = header_deadline_protocol(config.header_timeout_s, body_timeout_s=config.body_timeout_s)
    with served_over_tcp(app, lifespan="on", http=protocol) as (root, _):
        yield int(root.rsplit(":", 1)[1])


def test_get_reward_whose_client_disconnects_has_its_judging_cancelled(tiny_causal_dir, qwen_tokenizer,
                                                                       monkeypatch):
    """A client that gives up (OpenRLHF's 180 s) closes its connection: judge-serve, on a real uvicorn server,
    cancels that request's judging at once instead of finishing work nobody will read while the client's resend is
    judged too. The engine holds the first judgment; the client closes; the judging's cancelling is logged; the
    engine lets the held one go; a request that follows is the next the engine sees (the two other judgments of the
    abandoned request would queue before it)."""
    import logging
    import socket

    import httpx

    release, held, noticed = threading.Event(), threading.Event(), threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "the client of a reward request disconnected" in record.getMessage():
                noticed.set()

    body = json.dumps(_reward_body("Весна пришла поздно.", ["Креативность", "Грамотность", "Полезность"]),
                      ensure_ascii=False).encode()
    seen = Seen()
    logging.getLogger("judge_serve").addHandler(seen)
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    try:
        with ScriptedEndpoint(_held_first(release, held), respond_get=attached_engine_get) as engine:
            config = ServeConfig(model=str(tiny_causal_dir), served_model_name="attached", generator_url=engine.url,
                                 max_model_len=1024, max_tokens=128, api_key="k",
                                 max_concurrent_engine_requests=1).validate()
            with _served_over_tcp(config) as port:
                client = socket.create_connection(("127.0.0.1", port), timeout=30)
                client.sendall(b"POST /get_reward HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer k\r\n"
                               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                assert held.wait(30), "the first judgment never reached the engine"
                client.close()
                assert noticed.wait(30), "the disconnected client's judging was not cancelled"
                release.set()
                following = httpx.post(f"http://127.0.0.1:{port}/get_reward", headers=AUTH, timeout=60,
                                       json=_reward_body("Лето.", ["Креативность"]))
    finally:
        logging.getLogger("judge_serve").removeHandler(seen)
    assert following.status_code == 200 and following.json()["rewards"] == [1.0], following.text
    assert _answers_judged(engine, qwen_tokenizer) == ["Весна пришла поздно.", "Лето."]


def test_a_keyed_reward_client_that_disconnects_leaves_no_key_in_the_log(tiny_causal_dir, monkeypatch):
    """OpenRLHF's client posts to ``/get_reward/<key>`` (the key in the path, no header); when it disconnects,
    judge-serve's own log line names the request's path: the key is written ``<reward-key>`` there, as in the access
    log, never ``INFO judge_serve: the client of POST /get_reward/<the key> left before its answer``.
    The engine holds the judgment until the client has closed and judge-serve has said so."""
    import logging
    import socket

    key = "reward-key-that-must-stay-secret"
    release, held, noticed = threading.Event(), threading.Event(), threading.Event()
    messages: list[str] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())
            if "left before its answer" in record.getMessage():
                noticed.set()

    body = json.dumps(_reward_body("Весна пришла поздно.", ["Креативность"]), ensure_ascii=False).encode()
    seen = Seen()
    logger = logging.getLogger("judge_serve")
    logger.addHandler(seen)
    monkeypatch.setattr(logger, "level", logging.INFO)  # judge-serve's own level (configure_logging's default)
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", key)
    try:
        with ScriptedEndpoint(_held_first(release, held), respond_get=attached_engine_get) as engine:
            config = ServeConfig(model=str(tiny_causal_dir), served_model_name="attached", generator_url=engine.url,
                                 max_model_len=1024, max_tokens=128, api_key="k").validate()
            with _served_over_tcp(config) as port:
                client = socket.create_connection(("127.0.0.1", port), timeout=30)
                client.sendall(b"POST /get_reward/%s HTTP/1.1\r\nHost: localhost\r\n" % key.encode()
                               + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                assert held.wait(30), "the judgment never reached the engine"
                client.close()
                assert noticed.wait(30), "judge-serve did not say the client left"
                release.set()
    finally:
        logger.removeHandler(seen)
    assert [m for m in messages if key in m] == []
    assert "the client of POST /get_reward/<reward-key> left before its answer: its work was cancelled" in messages


def test_a_malformed_label_is_refused_whatever_the_answer(tiny_causal_dir, monkeypatch):
    """A label's contents are checked before any work, for every sample: the unknown criterion of a sample whose
    answer is empty (nothing to judge) is the same 400 naming labels[0].criteria[0] as with an answer; an
    unanswered second sample whose custom rubric gives no scale is refused at labels[1], though the first sample's
    label is good; a request of no samples has no label to refuse; nothing reaches the engine."""
    bad = ["Нет такого критерия"]
    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        empty = http.post("/get_reward", headers=AUTH, json=_reward_body("<|im_end|>", bad))
        answered = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", bad))
        second = _reward_body("Весна.", ["Креативность"])
        second = {key: values * 2 for key, values in second.items()}
        second["query"][1] = PROMPT + "<|im_end|>"
        second["labels"][1] = {"instruction": "Напиши стих о весне.", "criteria": [{"name": "Один", "rubrics": "2: да"}]}
        custom = http.post("/get_reward", headers=AUTH, json=second)
        nothing = http.post("/get_reward", headers=AUTH, json={"query": [], "prompts": [], "labels": []})
    for refused in (empty, answered):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == {"message": "labels[0].criteria[0]: unknown criterion 'Нет такого критерия'",
                                           "type": "invalid_request_error", "param": "labels[0].criteria[0]",
                                           "code": "invalid_request"}
    assert custom.status_code == 400, custom.text
    assert custom.json()["error"]["param"] == "labels[1].criteria[0].rubrics"
    assert nothing.status_code == 200 and nothing.json()["rewards"] == [], nothing.text  # no label to refuse
    assert engine.bodies("/v1/completions") == []


def test_the_judgment_bound_is_refused_naming_the_labels(tiny_causal_dir, monkeypatch):
    """Past max_judgments_per_request, /v1/judge's error names its "items"; the /get_reward caller sent labels,
    whose criteria the judgments are: the 400 names labels."""
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, max_judgments_per_request=3) as (http, engine):
        body = _reward_body("Весна.", ["Креативность", "Грамотность"])
        body = {key: values * 2 for key, values in body.items()}
        answer = http.post("/get_reward", headers=AUTH, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == {
        "message": "labels: 4 (item, criterion) judgments requested; this server takes at most 3 per request. "
                   "Split the batch.", "type": "invalid_request_error", "param": "labels", "code": "invalid_request"}
    assert engine.bodies("/v1/completions") == []


def test_the_reward_deadline_fits_under_openrlhfs_client_and_is_checked():
    """OpenRLHF waits 180 s for a reward (openrlhf/utils/agent.py): the default deadline answers before that, the
    engine wait fits inside it, and a deadline that is no number of seconds, or leaves the wait no room, stops
    judge-serve at its configuration, naming the field."""
    from judge.plumbing.config_files import ConfigError

    config = ServeConfig(model="x").validate()
    assert config.reward_engine_wait_s < config.reward_deadline_s < 180.0
    assert RewardRoute(config, error=lambda *a, **k: None).deadline == ("reward_deadline_s", config.reward_deadline_s)
    shorter = ServeConfig(model="x", request_timeout_s=100.0).validate()
    assert RewardRoute(shorter, error=lambda *a, **k: None).deadline == ("request_timeout_s", 100.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match=r"^reward_deadline_s: must be a positive, finite number of seconds"):
            ServeConfig(model="x", reward_deadline_s=bad, reward_engine_wait_s=0.0).validate()
    with pytest.raises(ConfigError, match=r"^reward_engine_wait_s: 60 s is not under reward_deadline_s \(60 s\)"):
        ServeConfig(model="x", reward_deadline_s=60.0, reward_engine_wait_s=60.0).validate()


def test_the_engine_wait_ends_before_a_shorter_request_timeout():
    """With request_timeout_s shorter than reward_engine_wait_s, the wait for an engine ends before the request's
    deadline, so the client hears why (a 503 with Retry-After), not a 504 from a deadline spent waiting. The state
    here has an engine that never comes back and a deadline half a second away: the wait gives up at once."""
    import asyncio
    from types import SimpleNamespace

    route = RewardRoute(ServeConfig(model="x", request_timeout_s=30.0).validate(), error=lambda *a, **k: None)
    state = SimpleNamespace(engines=["generator"], engine_problem=lambda engine: "the engine restarts",
                            status="ready")
    problem = asyncio.run(asyncio.wait_for(route._engines_unavailable(state, time.monotonic() + 0.5), timeout=10))
    assert problem == "the engine restarts"


def test_a_large_reward_body_is_read_off_the_event_loop(tiny_causal_dir, monkeypatch):
    """A /get_reward body past 64 KiB (a batch of long answers) is decoded, its answers cut and its labels checked in
    a worker thread, as /v1/judge's is, so the event loop keeps serving; a small one stays on the loop. Its errors
    still name the caller's fields."""
    import serve.rewards
    from serve.schema import LargeDecodes

    on_loop, taken = [], []

    original = serve.rewards.decode_json_body
    monkeypatch.setattr(serve.rewards, "decode_json_body", lambda data: (on_loop.append(on_event_loop()),
                                                                         original(data))[1])

    class Counted(LargeDecodes):  # the server's own bound, which every large read waits its turn under
        def _on_running_loop(self):
            taken.append(len(on_loop))
            return super()._on_running_loop()

    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        http.app.state.serve.large_decodes = Counted(1)
        small = http.post("/get_reward", headers=AUTH, json=_reward_body("<|im_end|>", ["Нет такого критерия"]))
        large = _reward_body("<|im_end|>", ["Нет такого критерия"])
        large["labels"][0] = {**large["labels"][0], "instruction": "в" * 70_000}
        big = http.post("/get_reward", headers=AUTH, json=large)
    assert on_loop == [True, False]
    assert taken == [1]  # the large body only, before its decode
    for refused in (small, big):
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "labels[0].criteria[0]", refused.text


def test_the_judgment_bound_is_counted_on_the_labels_before_any_is_read(tiny_causal_dir, monkeypatch):
    """Past max_judgments_per_request, the labels' criteria are counted as sent, before any label is validated or
    any criterion resolved, as /v1/judge counts its items': 2 samples of 6 custom criteria each over a bound of 10
    are refused naming labels with not one criterion resolved."""
    import serve.schema

    resolved = []
    resolve = serve.schema.resolve_criterion
    monkeypatch.setattr(serve.schema, "resolve_criterion", lambda *a, **k: (resolved.append(a), resolve(*a, **k))[1])
    criterion = {"name": "Кратко", "rubrics": "0: длинно\n\n1: средне\n\n2: кратко"}
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, max_judgments_per_request=10) as (http, engine):
        body = _reward_body("Весна.", [criterion] * 6)
        answer = http.post("/get_reward", headers=AUTH, json={key: values * 2 for key, values in body.items()})
        # ten criteria of their own names (one criterion named twice in a label is refused: judged and weighed twice)
        within = http.post("/get_reward", headers=AUTH,
                           json=_reward_body("Весна.", [{**criterion, "name": f"Кратко {k}"} for k in range(10)]))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == {
        "message": "labels: 12 (item, criterion) judgments requested; this server takes at most 10 per request. "
                   "Split the batch.", "type": "invalid_request_error", "param": "labels", "code": "invalid_request"}
    assert within.status_code == 200 and within.json()["rewards"] == [1.0], within.text
    assert len(resolved) == 10  # the request within the bound: its label's 10, resolved once (checked; the judging takes them as they are)
    assert len(engine.bodies("/v1/completions")) == 10


def test_a_large_reward_body_whose_turn_to_be_decoded_never_comes_is_a_504_at_the_deadline(tiny_causal_dir,
                                                                                           monkeypatch):
    """The deadline covers the body: a large one waiting for a turn to be decoded (other large bodies hold every
    turn) gets its 504 at the deadline, its body never decoded, not a wait as long as theirs."""
    read = RewardRoute._read
    decoded = []
    monkeypatch.setattr(RewardRoute, "_read", lambda self, *a: (decoded.append(a), read(self, *a))[1])
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, request_timeout_s=1.0) as (http, engine):
        with decode_turns_held(http):
            late = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна. " * 12_000, ["Креативность"]))
    assert late.status_code == 504, late.text
    assert late.json()["error"]["message"] == ("the rewards took longer than request_timeout_s=1 s (the wait for an "
                                               "engine included); their judging is cancelled")
    assert decoded == [] and engine.bodies("/v1/completions") == []


def test_a_label_past_the_judgment_bound_is_refused_before_any_label_is_read_whatever_its_answer(monkeypatch):
    """The bound on the samples to judge leaves out a sample with an empty answer, yet every label is parsed and its
    criteria resolved: one label listing more criteria than a request may judge (its sample could never be judged)
    is refused naming its criteria, before any label is parsed or any criterion resolved."""
    import serve.rewards
    import serve.schema

    resolved, parsed = [], []
    resolve, parse = serve.schema.resolve_criterion, serve.rewards.parse_judge_request
    monkeypatch.setattr(serve.schema, "resolve_criterion", lambda *a, **k: (resolved.append(a), resolve(*a, **k))[1])
    monkeypatch.setattr(serve.rewards, "parse_judge_request", lambda *a, **k: (parsed.append(a), parse(*a, **k))[1])
    route = RewardRoute(ServeConfig(model="x", max_judgments_per_request=10).validate(), error=lambda *a, **k: None)
    label = {"instruction": "q", "criteria": ["Креативность"] * 11}
    empty = {"query": [PROMPT] * 3, "prompts": [PROMPT] * 3, "labels": [label] * 3}  # no sample has an answer
    with pytest.raises(RequestError) as refused:
        route._read(json.dumps(empty).encode(), [])
    assert (refused.value.status, refused.value.param) == (400, "labels[0].criteria")
    assert refused.value.message == ("labels[0].criteria: 11 criteria; this server takes at most 10 (item, criterion) "
                                     "judgments per request, so this label can never be judged")
    assert parsed == [] and resolved == []
    within = {**empty, "labels": [{**label, "criteria": ["Креативность"]}] * 3}
    assert route._read(json.dumps(within).encode(), [])[2] is None  # read, checked, nothing to judge
    assert len(parsed) == 1 and len(resolved) == 3


def test_an_engines_refusal_of_one_judgment_is_that_samples_counted_failure_on_get_reward(tiny_causal_dir,
                                                                                          monkeypatch, tmp_path):
    """An engine that refuses one judgment of two (a 400 that is no context refusal) fails that judgment alone, as on
    /v1/judge: 200, the served rule's ``on_failure`` value (``zero``: 0.0) for it beside the other's 1.0 (its 2 of
    0..2), their mean 0.5, counted in ``judge_failures`` and apart in ``judge_engine_refused`` (so a refusal's zero is
    told from an unread verdict's), and journalled with the engine's message. A refusal in the engine's words for a
    window the prompt overflows is that judgment's ``context_length_exceeded`` (/get_reward sends ``"oversize":
    "fail"``), not an engine refusal; and a refusal of every judgment is the request's, with the engine's status."""
    import serve.supervision
    from judge.plumbing.journal import read_jsonl

    # The engine stand-in reads a prompt's ids with the tiny judge's tokenizer as judge-serve loads it (its loader,
    # which this worker remembers per folder): judge-serve below loads that same one.
    tokenizer = serve.supervision.load_tokenizer(tiny_causal_dir)
    said = {"Грамотность": "The prompt holds a token id out of the vocabulary"}

    def refusing(path: str, body: dict) -> tuple:
        prompt = tokenizer.decode(body["prompt"])
        named = [message for name, message in said.items() if name in prompt]
        if named:
            return 400, {"error": {"message": named[0], "type": "BadRequestError", "param": None, "code": 400}}
        return _verdict(path, body)

    with _attached_judge_serve(tiny_causal_dir, monkeypatch, completions=refusing, log_dir=str(tmp_path)) as (http,
                                                                                                          engine):
        rewarded = http.post("/get_reward", headers={**AUTH, "X-Request-Id": "req-r"},
                             json=_reward_body("Весна.", ["Креативность", "Грамотность"]))
        rows = read_jsonl(tmp_path / "rewards.jsonl")
        said["Грамотность"] = "This model's maximum context length is 1024 tokens"
        too_long = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", ["Креативность", "Грамотность"]))
        said["Креативность"] = "This model does not support the parameter min_p"
        said["Грамотность"] = said["Креативность"]
        every = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", ["Креативность", "Грамотность"]))
    assert rewarded.status_code == 200, rewarded.text
    assert rewarded.json()["rewards"] == [0.5] and rewarded.json()["scores"] == [0.5]
    logs = rewarded.json()["extra_logs"]
    assert tuple(logs) == EXTRA_LOG_KEYS  # one value per key for the sample: OpenRLHF joins them over its batch
    assert (logs["judge_failures"], logs["judge_engine_refused"]) == ([1.0], [1.0])
    assert (logs["judge_gate_closed"], logs["judge_empty_answer"]) == ([0.0], [0.0])
    assert len(engine.bodies("/v1/completions")) == 2 + 2 + 2
    (row,) = rows
    assert (row["request_id"], row["reward"], row["failed"], row["empty_answer"]) == ("req-r", 0.5, 1, False)
    assert [(c["criterion"], c["failure"], c["score"], c["value"]) for c in row["criteria"]] == [
        ("Креативность", None, 2.0, 1.0), ("Грамотность", "engine_refused", None, 0.0)]
    assert row["criteria"][1]["error_reason"] == ("engine answered 400: The prompt holds a token id out of the "
                                                  "vocabulary")
    assert too_long.status_code == 200 and too_long.json()["rewards"] == [0.5], too_long.text
    assert (too_long.json()["extra_logs"]["judge_failures"], too_long.json()["extra_logs"]["judge_engine_refused"]) == (
        [1.0], [0.0])
    assert every.status_code == 400, every.text
    assert every.json()["error"]["message"] == "engine answered 400: This model does not support the parameter min_p"


def test_an_unread_verdict_is_a_failure_but_not_an_engine_refusal_in_extra_logs():
    """``judge_engine_refused`` counts only the engine's refusals among a sample's failures: two criteria, one refused
    by the engine and one whose verdict did not parse, give 2 failures and 1 refusal; a sample with no failure and
    an empty answer give 0 of each."""
    route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
    failed = [JudgeResult(criterion="Полезность", criterion_id=None, scale=[0, 1, 2], error="engine_refused"),
              JudgeResult(criterion="Грамотность", criterion_id=None, scale=[0, 1, 2], error="no_result")]
    body = route._body([reward_of(failed, route.rule), reward_of([_ok("Креативность", 2)], route.rule), None],
                       latency=0.5)
    assert body["extra_logs"]["judge_failures"] == [2.0, 0.0, 0.0]
    assert body["extra_logs"]["judge_engine_refused"] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("status", [408, 409, 429])
def test_an_engine_status_a_retry_or_the_configuration_decides_stays_the_whole_requests_error(status, tiny_causal_dir,
                                                                                              monkeypatch):
    """A 408, 409, 429 (a later attempt can pass them: a busy engine) are not one judgment's refusal: /get_reward answers the engine's status, which OpenRLHF's client sends again,
    not a 0.0 reward that would train the policy on the engine's load."""
    def refusing(path: str, body: dict) -> tuple:
        return status, {"error": {"message": "try later", "type": "Error", "param": None, "code": status}}

    with _attached_judge_serve(tiny_causal_dir, monkeypatch, completions=refusing) as (http, _):
        rewarded = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", ["Креативность"]))
    assert rewarded.status_code == status, rewarded.text
    assert rewarded.json()["error"]["message"] == f"engine answered {status}: try later"


def test_an_engine_that_forbids_judge_serve_is_a_502_on_get_reward(tiny_causal_dir, monkeypatch):
    """An engine's 403 forbids judge-serve, not the client: a 502 engine_error (the engine's words only in the log),
    never the client's own 403, which would tell an RL framework its key is wrong."""
    def forbidding(path: str, body: dict) -> tuple:
        return 403, {"error": {"message": "Forbidden by /srv/engine.key", "type": "Error", "param": None, "code": 403}}

    with _attached_judge_serve(tiny_causal_dir, monkeypatch, completions=forbidding) as (http, _):
        rewarded = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", ["Креативность"]))
    assert rewarded.status_code == 502, rewarded.text
    assert rewarded.json()["error"]["code"] == "engine_error"
    assert "/srv/engine.key" not in rewarded.text


def test_an_auto_labels_answer_too_long_for_the_judge_is_that_samples_failure(tiny_causal_dir, monkeypatch):
    """Two samples, both labelled "criteria": "auto" (the shipped tfidf classifier), the second's answer too long
    for the judge's context: the request is answered 200, the first sample judged, the second failed
    (context_length_exceeded on each criterion a failed choice gives, never classified), as it is with named
    criteria, never the whole request refused with a 400 naming labels[1]."""
    label = {"instruction": "Напиши стих о весне.", "criteria": "auto"}
    body = {"query": [PROMPT + "Весна пришла.", PROMPT + "слово " * 20_000], "prompts": [PROMPT, PROMPT],
            "labels": [label, label]}
    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        classifier = http.app.state.serve.judge.classifier
        asked, chosen = [], []

        def choose(instruction: str, answer: str | None = None, top_k: int = 3):
            asked.append(answer)
            chosen.append(type(classifier).choose(classifier, instruction, answer, top_k))
            return chosen[-1]

        monkeypatch.setattr(classifier, "choose", choose)
        rewarded = http.post("/get_reward", headers=AUTH, json=body)
        judged = http.post("/v1/judge", headers=AUTH, json={"items": [{**label, "answer": "слово " * 20_000}],
                                                         "oversize": "fail"})
    assert rewarded.status_code == 200, rewarded.text
    assert asked == ["Весна пришла."]  # the long answer is never classified
    assert len(engine.bodies("/v1/completions")) == len(chosen[0].criteria)  # only the first sample's judgments
    assert judged.status_code == 200, judged.text
    (item,) = judged.json()["items"]
    assert item["task_choice"]["fallback"] is True and item["task_choice"]["reason"].startswith("too long")
    assert {r["error"] for r in item["results"]} == {"context_length_exceeded"}
    assert rewarded.json()["rewards"][1] == 0.0  # the served rule's on_failure: zero
    # every criterion of the failed choice failed, as the same item's on /v1/judge
    assert rewarded.json()["extra_logs"]["judge_failures"][1] == len(item["results"])


def test_a_label_of_many_or_long_unknown_fields_is_refused_in_a_short_answer(tiny_causal_dir, monkeypatch):
    """A label of 400,000 unknown keys was answered with a 4.8 MB 400 listing every one: a label of more fields
    than any object of a judge request holds (``serve.schema.MAX_OBJECT_KEYS``) is refused by its count, as an
    object or as a string holding one; within it, the first five unknown names are listed, clipped."""
    sample = _reward_body("Весна.", ["Креативность"])
    # The bodies' JSON written as text, 400,000 unknown fields joined into the label's: the bytes the client encodes
    # a dict of them to (compact, not ASCII-escaped), for a fraction of the CPU of building and encoding that dict.
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    label = json.dumps(sample["labels"][0], **compact)
    label = label[:-1] + "".join([f',"k{i}":0' for i in range(400_000)]) + "}"
    head = json.dumps({key: value for key, value in sample.items() if key != "labels"}, **compact)
    many = f'{head[:-1]},"labels":[{label}]}}'.encode()
    as_text = json.dumps({**sample, "labels": [label]}, **compact).encode()
    seven = _reward_body("Весна.", ["Креативность"])
    seven["labels"][0] |= {"a" * 5000: 0, **{f"k{i}": 0 for i in range(6)}}
    as_json = {**AUTH, "Content-Type": "application/json"}
    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        answers = [http.post("/get_reward", headers=as_json, content=body) for body in (many, as_text)]
        answers.append(http.post("/get_reward", headers=AUTH, json=seven))
    for answer in answers[:2]:
        assert answer.status_code == 400 and len(answer.content) < 300, answer.text[:300]
        assert answer.json()["error"]["message"] == "labels[0]: an object of 400002 fields; at most 101"
    assert answers[2].status_code == 400 and len(answers[2].content) < 1300, answers[2].text[:300]
    listed = str(["a" * 5000, "k0", "k1", "k2", "k3"])
    assert answers[2].json()["error"] == {
        "message": f"labels[0]: unknown field(s) {listed[:1000]}... [{len(listed)} characters] and 2 more; a label "
                   "has id, instruction, criteria, reference_answer, task_type, task_subtype, task_subsubtype",
        "type": "invalid_request_error", "param": "labels[0]", "code": "invalid_request"}
    assert engine.bodies("/v1/completions") == []


def test_a_rollout_in_one_request_is_refused_naming_the_openrlhf_version_that_sends_one_sample():
    """OpenRLHF before 0.9.1 posts the whole rollout in one request: the refusal says which version posts one
    sample per request (OpenRLHF never reads it, but judge-serve's log keeps it)."""
    from serve.schema import RequestError

    route = RewardRoute(ServeConfig(model="x", max_batch_items=2), error=lambda *a, **k: None)
    body = {"query": [PROMPT + "Весна."] * 3, "prompts": [PROMPT] * 3,
            "labels": [{"instruction": "Напиши стих о весне.", "criteria": ["Креативность"]}] * 3}
    with pytest.raises(RequestError) as refused:
        route._read(json.dumps(body, ensure_ascii=False).encode(), [])
    assert (refused.value.code, refused.value.param) == ("too_many_items", "query")
    assert refused.value.message.startswith("query: 3 samples; this server takes at most 2 per request (OpenRLHF >= "
                                            "0.9.1 posts one sample per request")


def test_the_rewards_journal_is_written_off_the_event_loop_and_whole_before_the_answer(tiny_causal_dir, monkeypatch,
                                                                                        tmp_path):
    """The journal's append (open, write, fsync) runs on the journal's own thread, not on the event loop every request
    waits on nor in the default pool that tokenizes requests; it is awaited, so the request's rows are on disk,
    together and in order, once the answer is read."""
    import asyncio
    import threading

    from judge.plumbing.journal import JournalWriter, read_jsonl

    on_loop: list[bool] = []
    threads: list[str] = []
    append = JournalWriter.append

    def recorded(self, *rows):
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # a worker thread runs no loop
            on_loop.append(False)
        threads.append(threading.current_thread().name)
        append(self, *rows)

    monkeypatch.setattr(JournalWriter, "append", recorded)
    monkeypatch.setattr("serve.rewards.JOURNAL_ANSWER_CHARS", 3)
    body = {"query": [PROMPT + "Весна.<|im_end|>", PROMPT + "<|im_end|>"], "prompts": [PROMPT, PROMPT],
            "labels": [{"instruction": "Напиши стих о весне.", "criteria": ["Креативность"]}] * 2}
    with _attached_judge_serve(tiny_causal_dir, monkeypatch, log_dir=str(tmp_path)) as (http, _):
        rewarded = http.post("/get_reward", json=body, headers={**AUTH, "X-Request-Id": "req-1"})
        rows = read_jsonl(tmp_path / "rewards.jsonl")  # read as soon as the answer is: nothing left to wait for
    assert rewarded.status_code == 200, rewarded.text
    assert on_loop == [False] and threads[0].startswith("rewards-journal")
    # The first answer judged 2 of 0-2 (the scripted verdict): 1.0; the second has nothing to judge: empty_answer 0.0.
    assert [(r["request_id"], r["index"], r["reward"], r["empty_answer"]) for r in rows] == [
        ("req-1", 0, 1.0, False), ("req-1", 1, 0.0, True)]
    # the answer judged, as read from the query (OpenRLHF sends no X-Request-Id: the answer ties a row to its sample),
    # clipped to JOURNAL_ANSWER_CHARS (3 here), its whole length beside it
    assert [(r["answer"], r["answer_chars"]) for r in rows] == [("Вес", 6), ("", 0)]
    assert [c["criterion"] for c in rows[0]["criteria"]] == ["Креативность"] and rows[1]["criteria"] == []


def test_a_judgment_the_engine_aborted_is_a_503_to_retry_not_a_failed_reward(tiny_causal_dir, monkeypatch, tmp_path):
    """The engine aborts the generation (vLLM's finish_reason abort: a paused engine, HTTP 200 with the text so far):
    /get_reward answers 503 with Retry-After, which OpenRLHF retries, instead of the rule's failure value (0.0) as the
    answer's reward; nothing is journalled for it."""
    def aborting(path: str, body: dict) -> tuple:
        return 200, {"choices": [{"text": "[FEEDBACK] Хоро", "finish_reason": "abort"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 3}}

    with _attached_judge_serve(tiny_causal_dir, monkeypatch, completions=aborting, log_dir=str(tmp_path)) as (http, _):
        rewarded = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", ["Креативность"]))
    assert rewarded.status_code == 503, rewarded.text
    assert "retry-after" in rewarded.headers and rewarded.json()["error"]["code"] == "engine_unavailable"
    assert not (tmp_path / "rewards.jsonl").exists()


def test_a_labels_criteria_are_read_in_every_form_the_trl_and_verl_clients_read():
    """A label's criteria as one criterion's name or as a JSON string of a list, which the trl and verl clients take
    (judge.reward_clients.label_criteria) and /get_reward refused ("Input should be a valid list"): read as the
    list, on the same reading; what that reading refuses is a 400 naming the label's field."""
    from serve.rewards import _label

    named = _label({"instruction": "Q", "criteria": "Креативность"}, 0)
    assert named == {"instruction": "Q", "criteria": ["Креативность"]}
    listed = _label('{"instruction": "Q", "criteria": "[\\"Креативность\\", {\\"criteria_name\\": \\"Своё\\", '
                    '\\"rubrics\\": \\"0: нет\\\\n\\\\n1: да\\"}]"}', 1)
    assert listed == {"instruction": "Q", "criteria": ["Креативность", {"name": "Своё", "rubrics": "0: нет\n\n1: да"}]}
    assert _label({"instruction": "Q", "criteria": '"auto"'}, 0)["criteria"] == "auto"
    # One name JSON-encoded as a column that encodes every cell gives it: that name (it was refused).
    assert _label({"instruction": "Q", "criteria": '"\\u041a\\u0440\\u0435\\u0430\\u0442\\u0438\\u0432\\u043d\\u043e'
                                                   '\\u0441\\u0442\\u044c"'}, 0)["criteria"] == ["Креативность"]
    assert _label({"instruction": "Q", "criteria": "null", "task_type": "Editing"}, 0)["criteria"] is None
    assert _label({"instruction": "Q", "task_type": "Editing"}, 0) == {"instruction": "Q", "task_type": "Editing"}
    from serve.schema import RequestError

    for criteria, param in ((5, "labels[2].criteria"), ("[]", "labels[2].criteria"),
                            ('[{"name": "A", "criteria_name": "B", "rubrics": "0: a"}]', "labels[2].criteria[0]")):
        with pytest.raises(RequestError) as err:
            _label({"instruction": "Q", "criteria": criteria}, 2)
        assert err.value.param == param and err.value.message.startswith(param + ": "), err.value.message


def test_get_reward_judges_a_label_whose_criteria_are_one_name_or_a_json_string(tiny_causal_dir, monkeypatch):
    """Served: a label's "criteria": "Креативность" and "criteria": "[\\"Креативность\\", \\"Грамотность\\"]" are
    judged as those lists (one and two engine completions, each verdict the top of 0-2: reward 1.0), where they
    were a 400; a JSON string naming an unknown criterion is refused naming labels[0].criteria[0]."""
    with _attached_judge_serve(tiny_causal_dir, monkeypatch) as (http, engine):
        one = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", "Креативность"))
        after_one = len(engine.bodies("/v1/completions"))
        two = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", '["Креативность", "Грамотность"]'))
        after_two = len(engine.bodies("/v1/completions"))
        unknown = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", '["Нет такого критерия"]'))
    assert one.status_code == 200 and two.status_code == 200, (one.text, two.text)
    assert one.json()["rewards"] == [1.0] and two.json()["rewards"] == [1.0]
    assert (after_one, after_two) == (1, 3)
    assert unknown.status_code == 400 and unknown.json()["error"]["param"] == "labels[0].criteria[0]", unknown.text
    assert unknown.json()["error"]["message"] == "labels[0].criteria[0]: unknown criterion 'Нет такого критерия'"


def test_get_reward_on_a_server_that_failed_before_any_engine_answers_its_failure(tiny_causal_dir, monkeypatch):
    """judge-serve whose start failed before its first engine registered (a log folder it cannot write): /get_reward
    answered 503 "the engines are still starting" with a Retry-After, sending OpenRLHF back to a server that exits.
    It answers the failure now, as /v1/chat/completions does: 503 "judge-serve cannot serve: ...", no Retry-After."""
    from fastapi.testclient import TestClient

    import serve.app as app_module

    async def cannot_start(state):
        raise OSError("the log folder is not writable")

    monkeypatch.setattr(app_module, "start_engines", cannot_start)
    config = ServeConfig(model=str(tiny_causal_dir), served_model_name="m", generator_url="http://127.0.0.1:9",
                         max_model_len=1024, max_tokens=128, api_key="k").validate()
    with TestClient(app_module.create_app(config), base_url="http://localhost",
                    raise_server_exceptions=False) as http:
        rewarded = http.post("/get_reward", headers=AUTH, json=_reward_body("Весна.", ["Креативность"]))
        chat = http.post("/v1/chat/completions", headers=AUTH, json={"messages": []})
    assert rewarded.status_code == chat.status_code == 503, (rewarded.text, chat.text)
    message = "judge-serve cannot serve: the engines could not be started (OSError: the log folder is not writable)"
    assert rewarded.json()["error"]["message"] == chat.json()["error"]["message"] == message
    assert "retry-after" not in rewarded.headers and "retry-after" not in chat.headers
