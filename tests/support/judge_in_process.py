"""judge-serve's real ``Judge`` on one ``/v1/judge`` request, in this process, over a scripted engine on 127.0.0.1
(the network boundary: vLLM's ``/v1/completions`` and a pooling ``/classify``), for the wire tests of both files."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from judge.checkpoints import JudgeKind
from judge.wire import JudgeResponse
from serve.engine_client import EngineClient, engine_session
from serve.judging import Judge, JudgeSettings
from serve.schema import parse_judge_request
from tests.support.scripted_endpoint import ScriptedEndpoint


def judge_settings(kind: str = "seq2seq", **changes: Any) -> JudgeSettings:
    """The tiny judge's settings: greedy, 64 new tokens, 16 judgments per request, no logprobs."""
    return JudgeSettings(**{
        "model_name": "tiny", "kind": JudgeKind(kind), "engine_models": {"generator": "gen", "pooler": "pool"},
        "max_model_len": 4096, "max_tokens": 64, "temperature": 0.0, "score_logprobs": False, "lenient": False,
        "constrained": False, "feedback_max_chars": 0, "max_judgments": 16, **changes})


def judged(settings: JudgeSettings, tokenizer, request: Mapping[str, Any],
           respond: Callable[[str, dict], tuple]) -> tuple[dict, ScriptedEndpoint]:
    """(the response body as it crosses the wire, through JSON; the scripted engine, closed, with what it received)."""

    async def go(root: str) -> dict:
        async with engine_session(30.0, max_connections=8) as http:
            engine = EngineClient(http, root, asyncio.Event(), lambda: "dead")
            server = Judge(settings, tokenizer, engine, engine if settings.kind == JudgeKind.REGRESSION else None,
                           asyncio.Semaphore(4))
            response = await server.run(parse_judge_request(request))
            assert isinstance(response, JudgeResponse)  # the contract's type; the app sends its to_json()
            return response.to_json()

    with ScriptedEndpoint(respond) as endpoint:
        body = asyncio.run(go(endpoint.base_url.removesuffix("/v1")))
    return json.loads(json.dumps(body, ensure_ascii=False)), endpoint


def judged_by_judge_eval(records, answer: Mapping[str, Any], verdict_format: str = "tagged",
                         **settings: Any) -> list[dict]:
    """judge-eval's ``/v1/judge`` backend (``eval.judging.backends.JudgeServeBackend``, model ``tiny``, under run
    ``settings``: ``RunConfig`` fields) asking ``records`` of a scripted judge-serve that answers every request with
    ``answer``: the backend's outcomes, or what it raised."""
    from eval.judging.backends import JudgeServeBackend
    from eval.judging.config import RunConfig

    async def ask(root: str) -> list[dict]:
        backend = JudgeServeBackend(root, "", "tiny", RunConfig(verdict_format=verdict_format, **settings))
        try:
            return await backend.judge(records)
        finally:
            await backend.aclose()

    with ScriptedEndpoint(lambda path, _: (200, dict(answer))) as server:
        return asyncio.run(ask(server.base_url.removesuffix("/v1")))


def brevity_scored(path: str, body: dict) -> tuple[int, dict]:
    """A scripted judge-serve's ``/v1/judge`` answer: every item's one criterion ("Краткость", 0..2) scored 2."""
    from judge.wire import JudgeResult

    results = [JudgeResult(criterion="Краткость", criterion_id=None, scale=[0, 1, 2], score=2, parse_ok=True,
                           in_scale=True, score_source="verdict", feedback="fb").to_json()]
    return 200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
                 "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
                 "items": [{"index": i, "id": None, "results": results} for i in range(len(body["items"]))],
                 "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}
