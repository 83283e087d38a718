"""judge-serve's ``"criteria": "auto"`` with a task classifier that hangs or fails: a request that will be refused is
refused before the classifier is asked, and a request stuck in the classifier past its deadline holds none of the
threads other requests need and asks the classifier nothing more. The classifier is the shipped tfidf one behind a
stand-in that holds each call until the test lets it go (or fails each); the order of events is forced, and the only
clock is the deadline under test."""

from __future__ import annotations

import asyncio
import contextlib
import json
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
    and the classifier was never called. Before, every auto item was classified first, and the classifier's failure
    answered it with a 502 (or, hanging, a 504) that a client retries to the same end."""
    http, classifier = failing_classifier
    classifier.calls.clear()
    items, oversize, param = REFUSED[case]
    answer = http.post("/v1/judge", headers=AUTH, json={"items": items, **({"oversize": oversize} if oversize else {})})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param
    assert classifier.calls == []
