"""``max_queued_judgments``: the judgments queued across every request in progress are bounded (``serve.queued``).

The judge's real ``Judge.run`` over an engine stub that holds each generation until the test lets it go, then the
``/v1/judge`` and ``/get_reward`` routes on judge-serve's app in this process. A request over the bound is refused
before any of its work (nothing of it reaches the engine), or on ``/get_reward`` waits for room up to its deadline,
and the count comes back however a request ends: answered, failed, cancelled. The order of events is forced by the
stub's events; nothing is timed."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import logging
import threading
import time

import httpx
import pytest

from judge.checkpoints import JudgeKind
from serve.config import ConfigError, ServeConfig
from serve.engine_client import EngineFailure
from serve.judging import Judge, JudgeSettings, config_bounds
from serve.queued import QUEUE_FULL_RETRY_AFTER_S, QueueFull
from serve.schema import parse_judge_request
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.serve_in_process import served_over_tcp

#: Bounds a wait only so that a failing test ends; a passing one never reaches it.
FAILING_AFTER_S = 60
VERDICT = {"choices": [{"text": "[FEEDBACK] ok [RESULT] 1 [END]", "finish_reason": "stop"}], "usage": {}}


def _request(n: int, tag: str = "") -> dict:
    """A request of ``n`` judgments: one item, ``n`` custom criteria."""
    return {"items": [{"instruction": f"Сколько будет 2+2? {tag}", "answer": "4",
                       "criteria": [{"name": f"Критерий {k}", "rubrics": "0: нет\n1: да"} for k in range(n)]}]}


class HeldEngine:
    """An engine client whose generations wait for ``release``; ``arrived`` is set at each one's arrival. With
    ``fail``, a released generation fails as an engine's 500 does."""

    def __init__(self, fail: bool = False) -> None:
        self.release, self.arrived, self.fail = asyncio.Event(), asyncio.Event(), fail
        self.prompts: list[list[int]] = []

    async def post(self, path: str, payload: dict, request_id: str = "") -> dict:
        self.prompts.append(payload["prompt"])
        self.arrived.set()
        await self.release.wait()
        if self.fail:
            raise EngineFailure("the engine failed", status=500)
        return VERDICT


def _judge(tokenizer, engine: HeldEngine, bound: int) -> Judge:
    settings = JudgeSettings(model_name="m", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "m"},
                             max_model_len=2048, max_tokens=16, temperature=0.0, score_logprobs=False, lenient=False,
                             constrained=False, feedback_max_chars=0, max_judgments=512, max_queued_judgments=bound)
    return Judge(settings, tokenizer, engine, None, asyncio.Semaphore(1))


@pytest.mark.parametrize("ending", ["answered", "failed", "cancelled"])
def test_a_request_over_the_bound_is_refused_before_its_work_and_the_count_comes_back(qwen_tokenizer, ending):
    """Bound 3: a request of 2 is held at the engine; another of 2 is refused at once (QueueFull, naming the bound)
    and sends nothing; one of 1 still fits. When the first ends, however it ends, its count is given back: the
    refused request is then taken."""
    engine = HeldEngine(fail=ending == "failed")
    judge = _judge(qwen_tokenizer, engine, bound=3)

    async def scenario():
        first = asyncio.ensure_future(judge.run(parse_judge_request(_request(2, "first"))))
        await asyncio.wait_for(engine.arrived.wait(), FAILING_AFTER_S)
        assert judge.queue.queued == 2
        sent = len(engine.prompts)
        with pytest.raises(QueueFull) as refused:
            await asyncio.wait_for(judge.run(parse_judge_request(_request(2, "second"))), FAILING_AFTER_S)
        assert len(engine.prompts) == sent and judge.queue.queued == 2  # nothing of it sent, nothing of it counted
        small = asyncio.ensure_future(judge.run(parse_judge_request(_request(1, "small"))))
        await asyncio.sleep(0)  # one turn of the loop: the small request is admitted, then waits for the engine slot
        assert judge.queue.queued == 3
        if ending == "cancelled":
            first.cancel()
        engine.release.set()
        for task in (first, small):
            await asyncio.wait({task}, timeout=FAILING_AFTER_S)
        assert judge.queue.queued == 0
        again = (await asyncio.gather(asyncio.wait_for(judge.run(parse_judge_request(_request(2, "again"))),
                                                       FAILING_AFTER_S), return_exceptions=True))[0]
        return refused.value, first, small, again

    refused, first, small, again = asyncio.run(scenario())
    assert "max_queued_judgments=3" in str(refused) and refused.retry_after_s == QUEUE_FULL_RETRY_AFTER_S
    if ending == "answered":
        assert all(r.parse_ok for r in first.result().items[0].results)
    elif ending == "failed":
        assert isinstance(first.exception(), EngineFailure)
    else:
        assert first.cancelled()
    # The small request and the one taken afterwards end as the engine answers them: failed as the first did, or
    # judged (reading the small one's failure also keeps asyncio from logging it as never retrieved).
    for later in (small.exception() or small.result(), again):
        if ending == "failed":
            assert isinstance(later, EngineFailure)
        else:
            assert all(r.parse_ok for r in later.items[0].results)


def test_a_request_cancelled_while_it_plans_keeps_its_count_until_its_thread_ends(qwen_tokenizer, monkeypatch):
    """Bound 2: a request of 2 is cancelled (its client gone, its 504) while its worker thread plans (renders and
    tokenizes, held here by an event). The thread cannot be stopped, so its 2 judgments stay counted until it ends:
    meanwhile another request of 2 is refused (before: the count came back at once, and clients that left kept every
    worker thread planning past any bound). Once the thread ends, the count is 0 and a request of 2 is judged; the
    cancelled request's plan reached the engine with nothing."""
    import serve.judging

    engine = HeldEngine()
    engine.release.set()
    judge = _judge(qwen_tokenizer, engine, bound=2)
    planning, go_on = threading.Event(), threading.Event()
    real_plan = serve.judging.plan_jobs

    def held_plan(*args, **kwargs):
        if not go_on.is_set():
            planning.set()
            go_on.wait(FAILING_AFTER_S)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(serve.judging, "plan_jobs", held_plan)

    async def scenario():
        given_back = asyncio.Event()
        real_give_back = judge.queue._give_back

        def give_back(n: int) -> None:
            real_give_back(n)
            if judge.queue.queued == 0:
                given_back.set()

        judge.queue._give_back = give_back
        first = asyncio.ensure_future(judge.run(parse_judge_request(_request(2, "first"))))
        assert await asyncio.to_thread(planning.wait, FAILING_AFTER_S)
        first.cancel()
        await asyncio.wait({first}, timeout=FAILING_AFTER_S)
        counted_while_planning = judge.queue.queued
        refused = (await asyncio.gather(judge.run(parse_judge_request(_request(2, "second"))),
                                        return_exceptions=True))[0]
        go_on.set()
        await asyncio.wait_for(given_back.wait(), FAILING_AFTER_S)
        sent_by_the_cancelled = len(engine.prompts)
        judged = await asyncio.wait_for(judge.run(parse_judge_request(_request(2, "third"))), FAILING_AFTER_S)
        return first, counted_while_planning, refused, sent_by_the_cancelled, judged

    first, counted_while_planning, refused, sent_by_the_cancelled, judged = asyncio.run(scenario())
    assert first.cancelled() and counted_while_planning == 2
    assert isinstance(refused, QueueFull) and "max_queued_judgments=2" in str(refused)
    assert sent_by_the_cancelled == 0
    assert len(judged.items[0].results) == 2 and all(r.parse_ok for r in judged.items[0].results)
    assert len(engine.prompts) == 2 and judge.queue.queued == 0


def test_a_cancelled_requests_planning_error_is_read_not_logged_as_never_retrieved(caplog):
    """A request cancelled while its worker thread plans, whose planning then raises (here the RequestError of an
    unknown criterion): nobody answers that error, and it is read, so asyncio logs nothing once the thread's future
    is collected; the count is given back when the thread ends. Before: ``asyncio.shield`` reads the thread's
    error only when the thread ends first, so each such request logged "Future exception was never retrieved" at
    ERROR with the traceback."""
    from serve.judging import _planned
    from serve.queued import JudgmentQueue
    from serve.schema import RequestError

    planning, go_on = threading.Event(), threading.Event()

    def plan() -> None:
        planning.set()
        go_on.wait(FAILING_AFTER_S)
        raise RequestError("items[0].criteria[0]: unknown criterion 'x'", "items[0].criteria[0]")

    async def scenario() -> tuple[bool, int, int]:
        queue, given_back = JudgmentQueue(), asyncio.Event()
        real_give_back = queue._give_back

        def give_back(n: int) -> None:
            real_give_back(n)
            if queue.queued == 0:
                given_back.set()

        queue._give_back = give_back

        async def request() -> None:
            with queue.admit(2, 2) as admitted:
                await _planned(admitted, plan)

        asked = asyncio.ensure_future(request())
        assert await asyncio.to_thread(planning.wait, FAILING_AFTER_S)
        asked.cancel()
        await asyncio.wait({asked}, timeout=FAILING_AFTER_S)
        counted_while_planning = queue.queued
        go_on.set()
        await asyncio.wait_for(given_back.wait(), FAILING_AFTER_S)
        return asked.cancelled(), counted_while_planning, queue.queued

    gc.collect()  # earlier tests' unreferenced tasks and futures, logged now if ever, not inside the block below
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        outcome = asyncio.run(scenario())
        gc.collect()  # the thread's future, unreferenced now: an error never read is logged as it is collected
    assert outcome == (True, 2, 0)
    # This request's error only: another test's garbage collected here is not this test's to judge.
    assert [record.getMessage() for record in caplog.records
            if record.name == "asyncio" and "unknown criterion 'x'" in record.getMessage()] == []


def test_a_request_alone_is_taken_whatever_its_size(qwen_tokenizer):
    """A request bigger than the bound, with nothing else queued, is judged: refused, it could never be taken."""
    engine = HeldEngine()
    engine.release.set()
    judge = _judge(qwen_tokenizer, engine, bound=1)
    response = asyncio.run(judge.run(parse_judge_request(_request(3))))
    assert len(response.items[0].results) == 3 and judge.queue.queued == 0


def test_a_request_given_a_deadline_waits_for_room_then_is_judged(qwen_tokenizer):
    """``wait_until`` (/get_reward's): under a bound of 3 with a request of 2 held at the engine, a request of 2
    waits instead of being refused, nothing of it sent nor counted; once the first is answered it is admitted and
    judged. With a deadline already past, it is refused (QueueFull) and nothing of it reaches the engine."""
    engine = HeldEngine()
    judge = _judge(qwen_tokenizer, engine, bound=3)

    async def scenario():
        first = asyncio.ensure_future(judge.run(parse_judge_request(_request(2, "first"))))
        await asyncio.wait_for(engine.arrived.wait(), FAILING_AFTER_S)
        sent = len(engine.prompts)
        late_refusal = (await asyncio.gather(judge.run(parse_judge_request(_request(2, "late")),
                                                       wait_until=time.monotonic() - 1.0), return_exceptions=True))[0]
        waiting = asyncio.ensure_future(judge.run(parse_judge_request(_request(2, "waiting")),
                                                  wait_until=time.monotonic() + FAILING_AFTER_S))
        for _ in range(3):
            await asyncio.sleep(0)  # turns of the loop: the request checked, then in line
        assert judge.queue.waiting == 1 and judge.queue.queued == 2 and len(engine.prompts) == sent
        engine.release.set()
        answered = await asyncio.wait_for(first, FAILING_AFTER_S)
        judged = await asyncio.wait_for(waiting, FAILING_AFTER_S)
        return late_refusal, answered, judged, sent

    late_refusal, answered, judged, _ = asyncio.run(scenario())
    assert isinstance(late_refusal, QueueFull) and "max_queued_judgments=3" in str(late_refusal)
    assert all(r.parse_ok for r in answered.items[0].results)
    assert len(judged.items[0].results) == 2 and all(r.parse_ok for r in judged.items[0].results)
    # the first's 2 judgments and the waiting one's 2; the late one sent nothing
    assert len(engine.prompts) == 4 and judge.queue.queued == 0


def test_the_bound_comes_from_the_config_and_is_at_least_one_request():
    assert config_bounds(ServeConfig(model="m", max_queued_judgments=700))["max_queued_judgments"] == 700
    assert ServeConfig(model="m").validate().max_queued_judgments >= ServeConfig(model="m").max_judgments_per_request
    with pytest.raises(ConfigError, match="max_queued_judgments"):
        ServeConfig(model="m", max_judgments_per_request=512, max_queued_judgments=100).validate()
    with pytest.raises(ConfigError, match="max_queued_judgments"):
        ServeConfig(model="m", max_queued_judgments=0).validate()


# --- the route: 503, Retry-After, OpenAI's error body


class HeldScriptedEngine:
    """A scripted engine (on 127.0.0.1) whose generations wait for ``release``; ``arrived`` is set at each one."""

    def __init__(self) -> None:
        self.release, self.arrived = threading.Event(), threading.Event()

    def respond(self, path: str, body: dict) -> tuple:
        self.arrived.set()
        self.release.wait(FAILING_AFTER_S)
        return 200, VERDICT


_PROMPT = "<|im_start|>user\nНапиши стих о весне.<|im_end|>\n<|im_start|>assistant\n"
#: One OpenRLHF sample judged on two criteria.
REWARD_BODY = {"query": [_PROMPT + "Весна пришла."], "prompts": [_PROMPT],
               "labels": [{"instruction": "Напиши стих о весне.", "criteria": ["Креативность", "Грамотность"]}]}


def _respond_get(path: str) -> tuple:
    if path == "/v1/models":
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 2048}]}
    return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})


class JoinedLine(collections.deque):
    """The judge's line of requests waiting for room (``serve.queued.JudgmentQueue``), setting ``joined`` when one
    joins it: the test then knows, without polling, that a /get_reward request waits."""

    def __init__(self) -> None:
        super().__init__()
        self.joined = threading.Event()

    def append(self, waiter) -> None:
        super().append(waiter)
        self.joined.set()


def _reward_config(endpoint_url: str, tiny_causal_dir, **more) -> ServeConfig:
    return ServeConfig(model=str(tiny_causal_dir), served_model_name="judge", generator_url=endpoint_url,
                       max_model_len=2048, max_tokens=48, verdict_format="tagged", criteria_classifier="",
                       max_concurrent_engine_requests=1, max_judgments_per_request=3,
                       max_queued_judgments=3, **more).validate()  # fmt: skip


def test_the_routes_answer_503_with_retry_after_naming_the_bound(tiny_causal_dir, monkeypatch):
    """A /v1/judge request of 2 judgments is held at the engine under a bound of 3: another of 2 gets 503 with
    Retry-After and OpenAI's error body naming the bound at once. A /get_reward request of 2 (it shares the engine
    slots) gets the same 503 ``queue_full`` at its wait's end, never the 504 of a deadline spent: its wait ends
    ``admission_margin_s`` before the deadline, here the whole deadline (60 s, no engine wait), so it ends on its
    arrival, due on the loop's next turn, and nothing waits in real time (the wait itself:
    test_get_reward_waits_for_room_and_no_request_passes_it, tests/unit/test_serve_queued_wait.py). With a 1 s
    deadline and the real margin (at least 1 s), a loop busy for a second before the wait began would see the
    deadline's 504 instead. Nothing of either reached the engine, nothing of them stays counted. Once the first is
    answered, a request of 2 is judged."""
    import serve.rewards

    monkeypatch.setattr(serve.rewards, "admission_margin_s", lambda deadline_s: deadline_s)
    engine = HeldScriptedEngine()
    with ScriptedEndpoint(engine.respond, respond_get=_respond_get) as endpoint:
        from serve.app import create_app

        app = create_app(_reward_config(endpoint.url, tiny_causal_dir, reward_engine_wait_s=0.0,
                                         reward_deadline_s=60.0))
        with served_over_tcp(app, timeout_s=FAILING_AFTER_S) as (root, _):
            state = app.state.serve
            assert state.status == "ready", state.failure
            assert state.judge.settings.max_queued_judgments == 3  # the config's, through serve.supervision
            result: dict = {}

            def first() -> None:
                result["first"] = httpx.post(root + "/v1/judge", json=_request(2, "first"), timeout=FAILING_AFTER_S)

            sender = threading.Thread(target=first)
            sender.start()
            try:
                assert engine.arrived.wait(FAILING_AFTER_S)
                sent = len(endpoint.bodies("/v1/completions"))
                refused = httpx.post(root + "/v1/judge", json=_request(2, "second"), timeout=FAILING_AFTER_S)
                reward = httpx.post(root + "/get_reward", json=REWARD_BODY, timeout=FAILING_AFTER_S)
                assert len(endpoint.bodies("/v1/completions")) == sent
            finally:
                engine.release.set()
                sender.join(FAILING_AFTER_S)
            after = httpx.post(root + "/v1/judge", json=_request(2, "after"), timeout=FAILING_AFTER_S)
    assert refused.status_code == 503, refused.text
    assert int(refused.headers["retry-after"]) == QUEUE_FULL_RETRY_AFTER_S
    error = refused.json()["error"]
    assert error["type"] == "service_unavailable" and error["code"] == "queue_full"
    assert "max_queued_judgments=3" in error["message"]
    assert reward.status_code == 503 and int(reward.headers["retry-after"]) == QUEUE_FULL_RETRY_AFTER_S, reward.text
    error = reward.json()["error"]
    assert error["code"] == "queue_full" and "max_queued_judgments=3" in error["message"]  # not an engine's 503
    assert "deadline" in error["message"]
    assert result["first"].status_code == 200 and after.status_code == 200, (result["first"].text, after.text)
    assert state.judge.queue.queued == 0 and state.judge.queue.waiting == 0


@contextlib.contextmanager
def _reward_in_line_behind_a_held_request(tiny_causal_dir):
    """judge-serve over TCP (bound 3) with a /v1/judge request of 2 judgments held at its engine and a /get_reward
    request of 2 in line behind it (its deadline, 170 s, out of reach). Yields the scene: ``root``, ``loop`` (the
    server's), ``state``, ``endpoint``, ``result`` (each sender's response by name, once it has one), ``senders``
    and ``sent`` (the engine calls made before the reward request). On the way out the engine lets go and the
    senders end."""
    from types import SimpleNamespace

    from serve.app import create_app

    engine = HeldScriptedEngine()
    with ScriptedEndpoint(engine.respond, respond_get=_respond_get) as endpoint:
        app = create_app(_reward_config(endpoint.url, tiny_causal_dir))
        with served_over_tcp(app, timeout_s=FAILING_AFTER_S) as (root, loop):
            state = app.state.serve
            assert state.status == "ready", state.failure
            line = state.judge.queue._waiting = JoinedLine()
            result: dict = {}

            def post(name: str, path: str, body: dict) -> None:
                result[name] = httpx.post(root + path, json=body, timeout=FAILING_AFTER_S)

            senders = [threading.Thread(target=post, args=("first", "/v1/judge", _request(2, "first")))]
            senders[0].start()
            try:
                assert engine.arrived.wait(FAILING_AFTER_S)
                sent = len(endpoint.bodies("/v1/completions"))
                senders.append(threading.Thread(target=post, args=("reward", "/get_reward", REWARD_BODY)))
                senders[1].start()
                assert line.joined.wait(FAILING_AFTER_S)
                yield SimpleNamespace(root=root, loop=loop, state=state, endpoint=endpoint, result=result,
                                      senders=senders, sent=sent)
            finally:
                engine.release.set()
                for sender in senders:
                    sender.join(FAILING_AFTER_S)


def test_get_reward_waits_for_room_and_no_request_passes_it(tiny_causal_dir):
    """A /v1/judge request of 2 judgments is held at the engine under a bound of 3. A /get_reward request of 2
    waits for room (OpenRLHF does not wait out a Retry-After), and while it waits a /v1/judge request of 1, which
    would fit, is refused: it would pass the one in line. Once the first is answered, the reward request is judged
    (200, its reward), nothing of it sent before."""
    with _reward_in_line_behind_a_held_request(tiny_causal_dir) as scene:
        passing = httpx.post(scene.root + "/v1/judge", json=_request(1, "passing"), timeout=FAILING_AFTER_S)
        assert len(scene.endpoint.bodies("/v1/completions")) == scene.sent and "reward" not in scene.result
    state, result = scene.state, scene.result
    assert passing.status_code == 503 and passing.json()["error"]["code"] == "queue_full", passing.text
    assert "1 request(s) waiting for room" in passing.json()["error"]["message"]
    reward = result["reward"]
    assert reward.status_code == 200, reward.text
    assert len(reward.json()["rewards"]) == 1 and reward.json()["rewards"][0] is not None
    assert reward.json()["extra_logs"]["judge_failures"] == [0.0]
    assert result["first"].status_code == 200, result["first"].text
    assert state.judge.queue.queued == 0 and state.judge.queue.waiting == 0


def test_get_reward_waiting_for_room_is_refused_at_once_when_judge_serve_drains(tiny_causal_dir):
    """A /v1/judge request of 2 judgments is held at the engine under a bound of 3; a /get_reward request of 2 waits
    for room (its deadline, 170 s, out of reach). The drain begins (``serve.cli.begin_drain``, what SIGTERM runs, on
    the server's loop): the reward request gets 503 ``queue_full`` with Retry-After, saying judge-serve shuts down,
    while the first is still held, not after holding the drain until its deadline; nothing of it reached the engine.
    The first, in flight, is still answered once its engine answers."""
    from serve.cli import begin_drain

    with _reward_in_line_behind_a_held_request(tiny_causal_dir) as scene:
        scene.loop.call_soon_threadsafe(begin_drain, scene.state)
        scene.senders[1].join(FAILING_AFTER_S)
        assert "reward" in scene.result and "first" not in scene.result, "the drain did not release the waiting request"
        assert len(scene.endpoint.bodies("/v1/completions")) == scene.sent
    state, result = scene.state, scene.result
    reward = result["reward"]
    assert reward.status_code == 503 and int(reward.headers["retry-after"]) == QUEUE_FULL_RETRY_AFTER_S, reward.text
    error = reward.json()["error"]
    assert error["code"] == "queue_full" and error["message"].startswith("judge-serve is shutting down: ")
    assert result["first"].status_code == 200, result["first"].text
    assert state.status == "draining" and state.judge.queue.queued == 0 and state.judge.queue.waiting == 0


def test_get_reward_stops_waiting_for_room_a_quarter_of_its_deadline_before_it():
    """The wait for room ends max(1 s, deadline / 4) before the request's deadline, the rest left to its judging:
    170 s -> 42.5 s before; 2 s -> 1 s (the floor); a request_timeout_s of 40 s, shorter, is the deadline -> 10 s."""
    from types import SimpleNamespace

    from serve.rewards import RewardRoute

    async def wait_until_of(config: ServeConfig, deadline: float) -> float:
        seen: dict = {}

        async def run(checked, request_id="", wait_until=None):
            seen["wait_until"] = wait_until
            return "judged"

        judge = SimpleNamespace(check=lambda parsed, resolved=None: "checked", run=run)
        state = SimpleNamespace(judge=judge, engines=[], engine_problem=lambda role: None, status="ready")
        assert await RewardRoute(config, None)._judged(state, "parsed", None, deadline) == "judged"
        return seen["wait_until"]

    def config(**more) -> ServeConfig:
        return ServeConfig(model="judge", generator_url="http://127.0.0.1:9", **more).validate()

    assert asyncio.run(wait_until_of(config(reward_deadline_s=170.0), 1000.0)) == 957.5
    assert asyncio.run(wait_until_of(config(reward_deadline_s=2.0, reward_engine_wait_s=0.0), 1000.0)) == 999.0
    assert asyncio.run(wait_until_of(config(reward_deadline_s=170.0, request_timeout_s=40.0,
                                            reward_engine_wait_s=0.0), 1000.0)) == 990.0


def test_auto_items_count_at_most_what_a_request_may_run():
    """An ``"auto"`` item counts as the largest task's criteria until its task is chosen (26 in the taxonomy): 256
    of them counted 6,656 judgments, though a plan over ``max_judgments_per_request`` (512) is refused once the tasks
    are chosen, so the request was refused whenever anything else was queued (a bound of 2,048 passes the config
    check). Counted at most 512, it fits beside a request of 1; items with their criteria count those."""
    from types import SimpleNamespace

    from serve.judging import _judgments_asked
    from serve.queued import JudgmentQueue, largest_task_criteria

    assert largest_task_criteria() == 26
    auto = SimpleNamespace(options=object(), resolved=[None] * 256, request=None)
    assert _judgments_asked(auto, 512) == 512
    queue = JudgmentQueue()
    with queue.admit(_judgments_asked(auto, 512), 2048), queue.admit(1, 2048):
        assert queue.queued == 513
    named = SimpleNamespace(options=object(), resolved=[("a", "b"), None], request=None)
    assert _judgments_asked(named, 512) == 2 + 26
