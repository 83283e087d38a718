"""``max_queued_judgments``: the judgments queued across every request in progress are bounded (``serve.queued``).

The judge's real ``Judge.run`` over an engine stub that holds each generation until the test lets it go, then the
``/v1/judge`` route on judge-serve's app in this process. A request over the bound is refused before any of its work
(nothing of it reaches the engine), and the count comes back however a request ends: answered, failed, cancelled.
The order of events is forced by the stub's events; nothing is timed."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from judge.checkpoints import JudgeKind
from serve.config import ConfigError, ServeConfig
from serve.engine_client import EngineFailure
from serve.judging import Judge, JudgeSettings, config_bounds
from serve.queued import QueueFull
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
        return refused.value, first, again

    refused, first, again = asyncio.run(scenario())
    assert "max_queued_judgments=3" in str(refused) and refused.retry_after_s > 0
    if ending == "answered":
        assert all(r.parse_ok for r in first.result().items[0].results)
    elif ending == "failed":
        assert isinstance(first.exception(), EngineFailure)
    else:
        assert first.cancelled()
    if ending == "failed":  # taken, and failed at the engine as the first did
        assert isinstance(again, EngineFailure)
    else:
        assert all(r.parse_ok for r in again.items[0].results)


def test_a_request_alone_is_taken_whatever_its_size(qwen_tokenizer):
    """A request bigger than the bound, with nothing else queued, is judged: refused, it could never be taken."""
    engine = HeldEngine()
    engine.release.set()
    judge = _judge(qwen_tokenizer, engine, bound=1)
    response = asyncio.run(judge.run(parse_judge_request(_request(3))))
    assert len(response.items[0].results) == 3 and judge.queue.queued == 0


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


def test_the_routes_answer_503_with_retry_after_naming_the_bound(tiny_causal_dir):
    """A /v1/judge request of 2 judgments is held at the engine under a bound of 3: another of 2 gets 503 with
    Retry-After and OpenAI's error body naming the bound, and so does a /get_reward request of 2 (it shares the
    engine slots); nothing of either reaches the engine. Once the first is answered, a request of 2 is judged."""
    engine = HeldScriptedEngine()
    with ScriptedEndpoint(engine.respond, respond_get=_respond_get) as endpoint:
        config = ServeConfig(model=str(tiny_causal_dir), served_model_name="judge", generator_url=endpoint.url,
                             max_model_len=2048, max_tokens=48, verdict_format="tagged", criteria_classifier="",
                             max_concurrent_engine_requests=1, max_judgments_per_request=3,
                             max_queued_judgments=3).validate()  # fmt: skip
        from serve.app import create_app

        app = create_app(config)
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
                # /get_reward's judgments wait for the same engine slots: counted against the same bound
                reward = httpx.post(root + "/get_reward", json=REWARD_BODY, timeout=FAILING_AFTER_S)
                assert len(endpoint.bodies("/v1/completions")) == sent
            finally:
                engine.release.set()
                sender.join(FAILING_AFTER_S)
            after = httpx.post(root + "/v1/judge", json=_request(2, "after"), timeout=FAILING_AFTER_S)
    assert refused.status_code == 503, refused.text
    assert int(refused.headers["retry-after"]) > 0
    error = refused.json()["error"]
    assert error["type"] == "service_unavailable" and error["code"] == "queue_full"
    assert "max_queued_judgments=3" in error["message"]
    assert reward.status_code == 503 and int(reward.headers["retry-after"]) > 0, reward.text
    assert "max_queued_judgments=3" in reward.json()["error"]["message"]
    assert reward.json()["error"]["code"] == "queue_full"  # the same answer as /v1/judge's, not an engine's
    assert result["first"].status_code == 200 and after.status_code == 200, (result["first"].text, after.text)
    assert state.judge.queue.queued == 0


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
