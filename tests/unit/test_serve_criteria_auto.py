"""judge-serve's ``"criteria": "auto"`` with a task classifier that hangs or fails: a request that will be refused is
refused before the classifier is asked, and a request stuck in the classifier past its deadline holds none of the
threads other requests need and asks the classifier nothing more. The classifier is the shipped tfidf one behind a
stand-in that holds each call until the test lets it go (or fails each); the order of events is forced, and the only
clock is the deadline under test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from serve.config import ServeConfig
from serve.schema import OFF_LOOP_BYTES
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.serve_in_process import attached_engine_get, await_bring_up, served_over_tcp

AUTH = {"Authorization": "Bearer k"}
#: Bounds a wait only so that a failing test ends; a passing one never reaches it.
FAILING_AFTER_S = 60
#: How long the judge-serve of the deadline test lets a request run (its request_timeout_s).
DEADLINE_S = 5.0


def _auto(instruction: str) -> dict:
    return {"instruction": instruction, "answer": "Ответ.", "criteria": "auto"}


class HeldClassifier:
    """The served classifier behind a gate: each ``choose`` is recorded (its instruction, in arrival order), sets
    ``entered``, then waits for ``release`` before the served classifier answers; with ``failing`` it raises at once,
    as the llm method does when its endpoint is down."""

    def __init__(self, served, failing: bool = False) -> None:
        self.served, self.failing = served, failing
        self.release, self.entered = threading.Event(), threading.Event()
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3):
        with self._lock:
            self.calls.append(instruction)
        self.entered.set()
        if self.failing:
            raise ConnectionError("the classifier's endpoint refused the connection")
        assert self.release.wait(FAILING_AFTER_S), "the test never let the classifier go"
        return self.served.choose(instruction, answer, top_k)


def _verdict(path: str, body: dict) -> tuple:
    return 200, {"choices": [{"text": "[FEEDBACK] Хорошо. [RESULT] 1 [END]", "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


def _config(engine: ScriptedEndpoint, **settings) -> ServeConfig:
    """judge-serve in front of ``engine``, with the shipped tfidf task classifier (the default)."""
    return ServeConfig(model=settings.pop("model"), served_model_name="attached", generator_url=engine.url,
                       max_model_len=1024, max_tokens=128, api_key="k", **settings).validate()


@contextlib.contextmanager
def _served_over_tcp(config: ServeConfig):
    """judge-serve's app on a real uvicorn server in this process (a client of its own can give up on a request,
    which Starlette's test client cannot), ready; yields (root URL, app, the server's event loop)."""
    from serve.app import create_app

    app = create_app(config)
    with served_over_tcp(app) as (root, loop):
        assert app.state.serve.status == "ready", app.state.serve.failure
        yield root, app, loop


async def _one_default_worker() -> None:
    """The running loop's default executor cut to one thread: the default's size is the machine's (its CPUs + 4,
    at most 32), so one stuck call is made enough to fill it on any machine."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))


def test_a_request_stuck_in_the_classifier_past_its_deadline_starves_no_other_request(tiny_causal_dir, monkeypatch):
    """A request of two auto items whose first classification hangs gets its 504 at its deadline. Meanwhile its
    classifier call runs on: it must hold no thread of the default executor (cut to one here), where a large body is
    decoded (``serve.schema.read_off_loop``) and prompts are tokenized: a request with such a body is answered 200
    while the call still hangs (it waited behind it for ever when classification ran in ``asyncio.to_thread``). Once
    the call is let go, the late request's second item is never classified: the next call the classifier sees is
    the following request's."""
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(_verdict, respond_get=attached_engine_get) as engine, \
            _served_over_tcp(_config(engine, model=str(tiny_causal_dir), request_timeout_s=DEADLINE_S)) as served:
        root, app, loop = served
        held = HeldClassifier(app.state.serve.judge.classifier)
        held.served.choose("Напиши стих о весне.")  # its first call loads what it reads lazily: not in a deadline
        app.state.serve.judge.classifier = held
        asyncio.run_coroutine_threadsafe(_one_default_worker(), loop).result(FAILING_AFTER_S)
        late: dict[str, httpx.Response] = {}
        sending = threading.Thread(target=lambda: late.update(answer=httpx.post(
            root + "/v1/judge", headers=AUTH, json={"items": [_auto("Первый запрос."), _auto("Второй пункт.")]},
            timeout=FAILING_AFTER_S)))
        try:
            sending.start()
            assert held.entered.wait(FAILING_AFTER_S), "the first item never reached the classifier"
            sending.join(FAILING_AFTER_S)
            assert late["answer"].status_code == 504, late["answer"].text
            # Padding of JSON whitespace takes the body past OFF_LOOP_BYTES: decoded in a worker thread.
            body = json.dumps({"items": [{"instruction": "Сколько будет 2+2?", "answer": "4",
                                          "criteria": [{"name": "Верность", "rubrics": "0: нет\n1: да"}]}]},
                              ensure_ascii=False).encode() + b" " * (OFF_LOOP_BYTES + 1)
            other = httpx.post(root + "/v1/judge", headers={**AUTH, "Content-Type": "application/json"},
                               content=body, timeout=FAILING_AFTER_S / 2)
            assert other.status_code == 200, other.text
            assert held.calls == ["Первый запрос."]  # still held: nothing of the 200 went through the classifier
        finally:
            held.release.set()
        following = httpx.post(root + "/v1/judge", headers=AUTH, json={"items": [_auto("Следующий запрос.")]},
                               timeout=FAILING_AFTER_S)
    assert following.status_code == 200, following.text
    assert following.json()["items"][0]["task_choice"]["method"] == "tfidf"
    assert held.calls == ["Первый запрос.", "Следующий запрос."]


class _ClientLeft(logging.Handler):
    """judge-serve's log line for a client of ``/v1/judge`` that left, once its work's cancellation has ended."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.left = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "POST /v1/judge left before its answer" in record.getMessage():
            self.left.set()


def test_a_client_that_leaves_during_its_classification_is_let_go_at_once(tiny_causal_dir, monkeypatch):
    """The client of a request of two auto items leaves while the first item's classifier call is held: judge-serve
    ends the request's work (its log line comes once the cancellation has ended) while the call is still held, not
    when the call returns. Let go, the call's choice is dropped: the engine gets none of that request's judgments,
    its second item is never classified, and the following request is classified and judged."""
    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    watcher, logger = _ClientLeft(), logging.getLogger("judge_serve")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(watcher)
    try:
        with ScriptedEndpoint(_verdict, respond_get=attached_engine_get) as engine, \
                _served_over_tcp(_config(engine, model=str(tiny_causal_dir))) as (root, app, _):
            held = HeldClassifier(app.state.serve.judge.classifier)
            held.served.choose("Напиши стих о весне.")  # its first call loads what it reads lazily
            app.state.serve.judge.classifier = held
            body = json.dumps({"items": [_auto("Первый запрос."), _auto("Второй пункт.")]}, ensure_ascii=False).encode()
            try:
                with socket.create_connection(("127.0.0.1", int(root.rsplit(":", 1)[1]))) as sock:
                    sock.sendall(b"POST /v1/judge HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\n"
                                 b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                    assert held.entered.wait(FAILING_AFTER_S), "the first item never reached the classifier"
                let_go = watcher.left.wait(FAILING_AFTER_S / 4)
                assert let_go and not held.release.is_set(), "the request waited for its classifier call"
            finally:
                held.release.set()
            following = httpx.post(root + "/v1/judge", headers=AUTH, json={"items": [_auto("Следующий запрос.")]},
                                   timeout=FAILING_AFTER_S)
    finally:
        logger.removeHandler(watcher)
        logger.setLevel(level)
    assert following.status_code == 200, following.text
    assert held.calls == ["Первый запрос.", "Следующий запрос."]
    assert len(engine.bodies("/v1/completions")) == len(following.json()["items"][0]["results"])


@pytest.fixture(scope="module")
def failing_classifier(tiny_causal_dir):
    """(Starlette's test client of judge-serve, its failing classifier stand-in); the calls are cleared per test."""
    from fastapi.testclient import TestClient

    from serve.app import create_app

    with ScriptedEndpoint(_verdict, respond_get=attached_engine_get) as engine, pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_API_KEY", "engine-key")
        with TestClient(create_app(_config(engine, model=str(tiny_causal_dir))), base_url="http://localhost") as http:
            await_bring_up(http)
            judge = http.app.state.serve.judge
            judge.classifier = HeldClassifier(judge.classifier, failing=True)
            yield http, judge.classifier


#: (the request's items and oversize, the field its 400 names): each holds an auto item the classifier would be asked
#: about first, and something no choice can make valid.
REFUSED = {
    "auto beside its task": ([{**_auto("Напиши стих о весне."), "task_type": "Literary text"}], None,
                             "items[0].criteria"),
    "another item's unknown criterion": ([_auto("Напиши стих о весне."),
                                          {"instruction": "x", "answer": "y", "criteria": ["Нет такого критерия"]}],
                                         None, "items[1].criteria[0]"),
    "another auto item too long to read": ([_auto("Напиши стих о весне."),
                                            {**_auto("Перескажи."), "answer": "слово " * 20_000}], None, "items[1]"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_request_that_will_be_refused_is_refused_before_the_classifier_is_asked(failing_classifier, case):
    """The classifier is down (every call raises): a request it cannot make valid is still its 400 naming the field,
    and the classifier was never called: never the classifier's failure answered as a 502 (or, hanging, a 504) that a
    client retries to the same end."""
    http, classifier = failing_classifier
    classifier.calls.clear()
    items, oversize, param = REFUSED[case]
    answer = http.post("/v1/judge", headers=AUTH, json={"items": items, **({"oversize": oversize} if oversize else {})})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param
    assert classifier.calls == []


class _Engine:
    """A generating engine's client that answers every judgment one tagged verdict, recording the prompts sent."""

    def __init__(self) -> None:
        self.prompts: list[list[int]] = []

    async def post(self, path: str, payload: dict, request_id: str = "") -> dict:
        self.prompts.append(payload["prompt"])
        return _verdict(path, payload)[1]


class _Chooser:
    """A classifier that chooses no task (the criteria for any text): what it chooses does not matter here."""

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3):
        from judge.criteria_auto import TaskChoice

        return TaskChoice.failed("the stand-in chooses no task", "stand-in")


def test_a_cancelled_request_stops_waiting_for_its_classifier_call_at_once(qwen_tokenizer):
    """A request cancelled (its client gone: ``serve.connections.unless_disconnected``; its deadline past) while its
    first "auto" item's classifier call runs ends at once, though the call runs on in its thread (a thread cannot be
    stopped). Once the call returns, its choice is dropped: nothing of that request reaches the engine, its second
    item is never classified, and the classifier's one thread serves the next request, which is judged."""
    from serve.judging import Judge, JudgeSettings
    from serve.schema import parse_judge_request

    settings = JudgeSettings(model_name="m", kind="seq2seq", engine_models={"generator": "m"}, max_model_len=2048,
                             max_tokens=16, temperature=0.0, score_logprobs=False, lenient=False, constrained=False,
                             feedback_max_chars=0, max_judgments=512)
    engine, held = _Engine(), HeldClassifier(_Chooser())
    judge = Judge(settings, qwen_tokenizer, engine, None, asyncio.Semaphore(1), classifier=held)
    judge._classifying = ThreadPoolExecutor(1)  # one thread: the next request's call runs only once it is free

    async def scenario():
        first = asyncio.ensure_future(judge.run(parse_judge_request(
            {"items": [_auto("Первый запрос."), _auto("Второй пункт.")]})))
        # The classifier's entry is the event (waited on in a thread while the loop runs the request); a request
        # that ended before it, failing, is named by its exception.
        entering = asyncio.ensure_future(asyncio.to_thread(held.entered.wait, FAILING_AFTER_S / 2))
        await asyncio.wait({first, entering}, return_when=asyncio.FIRST_COMPLETED)
        assert not first.done(), first.exception()
        assert await entering, "the first item never reached the classifier"
        first.cancel()
        done, _ = await asyncio.wait({first}, timeout=FAILING_AFTER_S / 4)
        still_held = not held.release.is_set()
        held.release.set()
        following = await asyncio.wait_for(judge.run(parse_judge_request({"items": [_auto("Следующий запрос.")]})),
                                           FAILING_AFTER_S)
        return first in done and first.cancelled(), still_held, following

    try:
        cancelled, still_held, following = asyncio.run(scenario())
    finally:
        held.release.set()
        judge._classifying.shutdown(wait=True)
    assert cancelled and still_held  # ended while its classifier call was still held
    assert held.calls == ["Первый запрос.", "Следующий запрос."]
    judged = following.items[0].results
    assert len(judged) == len(engine.prompts) > 0 and all(result.parse_ok for result in judged)
    assert following.items[0].task_choice["method"] == "stand-in"


#: A Python that builds a judge, starts a task-classifier call that never returns (an llm endpoint that never
#: answers), says so and ends, as judge-serve's main() returns once its drain and the engines' stop are done.
_EXIT_WITH_A_CALL_RUNNING = """
import asyncio, threading
from serve.judging import Judge, JudgeSettings
settings = JudgeSettings(model_name="m", kind="seq2seq", engine_models={"generator": "m"}, max_model_len=2048,
                         max_tokens=16, temperature=0.0, score_logprobs=False, lenient=False, constrained=False,
                         feedback_max_chars=0, max_judgments=512)
judge = Judge(settings, object(), object(), None, asyncio.Semaphore(1))
entered = threading.Event()
def choose():
    entered.set()
    threading.Event().wait()
judge._classifying.submit(choose)
assert entered.wait(30)
print("leaving with the call running", flush=True)
"""


def test_a_classifier_call_still_running_does_not_hold_judge_serves_exit():
    """Once judge-serve has drained and stopped its engines, main() returns; a task-classifier call still running
    then (the llm method waiting on its endpoint: up to three requests, each with timeout_s per read, not per
    request) must not hold the process: its answer has nobody to go to. On a ThreadPoolExecutor it would (the
    interpreter joins every such thread at exit, whatever shutdown says), past Slurm's KillWait and past a Ctrl+C. The
    process here ends as soon as it is done."""
    import subprocess
    import sys
    from pathlib import Path

    try:
        done = subprocess.run([sys.executable, "-c", _EXIT_WITH_A_CALL_RUNNING], cwd=Path(__file__).resolve().parents[2],
                              capture_output=True, text=True, timeout=FAILING_AFTER_S)
    except subprocess.TimeoutExpired as stuck:
        raise AssertionError(f"the process did not exit with a classifier call running: {stuck.stdout!r}") from None
    assert done.returncode == 0 and "leaving with the call running" in done.stdout, done.stderr[-2000:]


def test_an_inline_auto_body_over_max_judgments_once_classified_hears_of_its_criteria(qwen_tokenizer):
    """The bound counted once the classifier's choice resolves an ``"auto"`` item's criteria (``JobPlan.complete``,
    after classifying) names what the body sent: an inline body's ``criteria``, a body with ``items`` its ``items``.
    Nothing reaches the engine."""
    from judge.criteria_auto.policy import fallback_criteria
    from serve.judging import Judge, JudgeSettings
    from serve.schema import RequestError, parse_judge_request

    bound = len(fallback_criteria(None)) - 1  # the chosen criteria (those for any text) are one too many
    settings = JudgeSettings(model_name="m", kind="seq2seq", engine_models={"generator": "m"}, max_model_len=2048,
                             max_tokens=16, temperature=0.0, score_logprobs=False, lenient=False, constrained=False,
                             feedback_max_chars=0, max_judgments=bound)
    engine = _Engine()
    judge = Judge(settings, qwen_tokenizer, engine, None, asyncio.Semaphore(1), classifier=_Chooser())
    refusals = []
    for body in (_auto("Сколько будет 2+2?"), {"items": [_auto("Сколько будет 2+2?")]}):
        with pytest.raises(RequestError) as refused:
            asyncio.run(judge.run(parse_judge_request(body)))
        refusals.append((refused.value.status, refused.value.param, refused.value.message.split(":")[0]))
    assert refusals == [(400, "criteria", "criteria"), (400, "items", "items")]
    assert engine.prompts == []


def test_a_request_stops_being_classified_once_its_chosen_criteria_pass_max_judgments(qwen_tokenizer):
    """Every "auto" item of a request was classified before the judgments they came to were counted: a request of 6
    such items on a server taking 20 judgments made 6 classifier calls (an llm classifier's requests) to be refused.
    It is refused once the criteria chosen so far pass the bound: the stand-in chooses the 13 criteria for any text,
    so the second item's choice (26 judgments) ends it, and the other 4 items are never classified. A request whose
    every item is classified is still counted in ``complete``'s words."""
    from judge.criteria_auto.policy import fallback_criteria
    from serve.judging import Judge, JudgeSettings
    from serve.schema import RequestError, parse_judge_request

    n_any = len(fallback_criteria(None))
    settings = JudgeSettings(model_name="m", kind="seq2seq", engine_models={"generator": "m"}, max_model_len=2048,
                             max_tokens=16, temperature=0.0, score_logprobs=False, lenient=False, constrained=False,
                             feedback_max_chars=0, max_judgments=20)
    engine, chooser = _Engine(), HeldClassifier(_Chooser())
    chooser.release.set()
    judge = Judge(settings, qwen_tokenizer, engine, None, asyncio.Semaphore(1), classifier=chooser)
    with pytest.raises(RequestError) as refused:
        asyncio.run(judge.run(parse_judge_request({"items": [_auto(f"Запрос {k}.") for k in range(6)]})))
    assert (refused.value.param, refused.value.message) == ("items", (
        f"items: at least {2 * n_any} (item, criterion) judgments requested, counted once 2 of its 6 \"auto\" items "
        "were classified; this server takes at most 20 per request. Split the batch."))
    assert chooser.calls == ["Запрос 0.", "Запрос 1."] and engine.prompts == []
    chooser.calls.clear()
    with pytest.raises(RequestError) as refused:
        asyncio.run(judge.run(parse_judge_request({"items": [_auto(f"Запрос {k}.") for k in range(2)]})))
    assert refused.value.message == (f"items: {2 * n_any} (item, criterion) judgments requested; this server takes at "
                                     "most 20 per request. Split the batch.")
    assert len(chooser.calls) == 2
