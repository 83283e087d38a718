"""How ``judge-eval run`` reaches a judge over HTTP: one backend per kind of endpoint, and endpoint probing.

- ``ChatBackend``: one ``/v1/chat/completions`` request per item (vLLM, judge-serve's passthrough, OpenAI-compatible
  APIs such as GPT-4o or DeepSeek-R1).
- ``JudgeServeBackend``: judge-serve's ``/v1/judge``, all criteria of one (instruction, answer) per request.

Transient failures raise (the runner retries them); a server's refusal raises ``Refused``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from judge.plumbing.config_files import ConfigError
from judge.verdicts import VerdictError, VerdictFormat
from judge.wire import CustomCriterion, JudgeItem, JudgeRequest, JudgeResponse, JudgeResult, ScoreSource
from judge.plumbing.retry import is_transient, retryable_status

if TYPE_CHECKING:
    from eval.config import RunConfig

__all__ = ["JudgeBackend", "Refused", "ChatBackend", "JudgeServeBackend", "verdict_outcome", "retryable_status",
           "is_transient", "reasoning_of", "short", "root_of", "base_of", "detect_backend", "first_model"]

log = logging.getLogger("judge_eval.backends")


class JudgeBackend(Protocol):
    """How predictions are obtained from one kind of endpoint.

    ``batches`` decides which records travel together in one request; ``judge`` sends one batch and returns one
    outcome per record, in order: a dict with ``raw_output, feedback, score, parse_ok, error, reason,
    score_source``. Transient failures raise (the runner retries them); a server's refusal raises ``Refused``.
    """

    name: str

    def batches(self, records: Sequence) -> list[list]: ...

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


class Refused(Exception):
    """The server refused the request for a reason retrying will not fix (a 4xx other than 408/409/429)."""


def verdict_outcome(text: str | None, record, lenient: bool, *, verdict_format: str = VerdictFormat.TAGGED,
                    reasoning: str | None = None) -> dict[str, Any]:
    """Parse a judge's raw output against the record's scale (a score outside it is scored, ``in_scale`` false).

    ``verdict_format`` is the judge's (``judge.VerdictFormat``); for ``integer``, ``reasoning`` is the server's
    separated reasoning, kept as the row's ``feedback``.
    """
    from judge import ScaleError, parse_judge_output, scale_of

    try:
        scale = scale_of(record.rubrics)
    except ScaleError:
        scale = None  # a rubric without a readable scale: no range check, rather than no verdict
    verdict = parse_judge_output(verdict_format, text, reasoning=reasoning, scale=scale, lenient=lenient)
    return {
        "raw_output": text,
        "feedback": verdict.feedback,
        "score": verdict.score if verdict.ok else None,
        "parse_ok": verdict.ok,
        "error": verdict.error,
        "reason": verdict.reason,
        "score_source": ScoreSource.VERDICT if verdict.ok else None,
        "in_scale": verdict.in_scale,
        "regression_score": None,
    }


class ChatBackend:
    """One ``/v1/chat/completions`` request per record (vLLM, judge-serve's passthrough, OpenAI-compatible APIs).

    With the Russian POLLUX prompt, requests to a ``tagged`` judge carry ``chat_template_kwargs: {"enable_thinking":
    false}``: the server renders the chat template with thinking off, as ``judge.apply_chat`` does (Qwen3 judges;
    ChatML ignores it). An ``integer`` judge (``Pollux-4B-Judge``) keeps thinking on: its reasoning comes back in
    the message's ``reasoning`` (vLLM ``--reasoning-parser``; ``reasoning_content`` in older servers) or inline as
    ``<think>...</think>``, and is kept as the prediction's feedback.

    Args:
        base_url: the OpenAI base URL (ending in ``/v1``).
        api_key: the key ("EMPTY" for local servers).
        model: the model name to send.
        config: the run's settings (prompt language, verdict format, max_tokens, temperature, timeout, lenient,
            extra_body).
    """

    def __init__(self, base_url: str, api_key: str, model: str, config: RunConfig):
        import openai

        # Retries are the runner's (with its own backoff and accounting), so the SDK's are off.
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=0,
                                         timeout=config.timeout_s)
        self.model, self.config = model, config
        self.name = config.name or model

    def batches(self, records: Sequence) -> list[list]:
        return [[record] for record in records]

    def prompt(self, record) -> str:
        import judge

        return judge.render_prompt_en(record) if self.config.prompt == "en" else judge.render_prompt(record)

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]:
        import judge
        import openai

        (record,) = batch
        kwargs: dict[str, Any] = {}
        # The POLLUX prompt goes to POLLUX judges on vLLM: thinking off, as judge.apply_chat renders (Qwen3 templates
        # read it; ChatML ignores it). API judges (prompt "en") get no such field: api.openai.com refuses unknown ones.
        body: dict[str, Any] = {}
        integer = self.config.verdict_format == VerdictFormat.INTEGER
        if self.config.prompt == "ru" and not integer:  # an integer judge was released to think first
            body["chat_template_kwargs"] = dict(judge.prompts.JUDGE_CHAT_TEMPLATE_KWARGS)
        body.update(self.config.extra_body)  # the user's extra_body wins, chat_template_kwargs included
        if body:
            kwargs["extra_body"] = body
        try:
            response = await self.client.chat.completions.create(
                model=self.model,
                messages=judge.chat_messages(self.prompt(record)),
                max_tokens=self.config.max_tokens,
                temperature=self.config.temperature,
                **kwargs,
            )
        except openai.APIStatusError as err:
            if retryable_status(err.status_code):
                raise
            raise Refused(f"HTTP {err.status_code}: {short(err.message)}") from err
        message = response.choices[0].message if response.choices else None
        text = message.content if message is not None else None
        return [verdict_outcome(text, record, self.config.lenient, verdict_format=self.config.verdict_format,
                                reasoning=reasoning_of(message) if integer else None)]

    async def aclose(self) -> None:
        await self.client.close()


class _ProbeRecord:
    """The fields ``JudgeServeBackend.request`` reads, for checking ``extra_body`` before a run."""

    id, instruction, answer, reference_answer, criteria_name, rubrics = "probe", "-", "-", None, "-", "0: -\n\n1: -"


_PROBE_RECORD = _ProbeRecord()


class JudgeServeBackend:
    """judge-serve's ``POST /v1/judge``: all criteria of one (instruction, answer) in one request.

    Each record's criterion is sent as a custom ``{name, rubrics}`` so the server renders exactly the prompt
    ``judge.render_prompt(record)`` gives. The response's per-criterion result carries the score and its source:
    ``verdict`` for seq2seq judges, ``regression_head`` (real-valued) for regression judges (``judge.ScoreSource``);
    each result is read as the contract's ``judge.JudgeResult``.

    Args:
        root_url: the server root (no ``/v1``).
        api_key: bearer token ("" for none).
        model: the served model name.
        config: the run's settings.
    """

    def __init__(self, root_url: str, api_key: str, model: str, config: RunConfig):
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
        self.model, self.config = model, config
        self.name = config.name or model
        self.request([_PROBE_RECORD])  # a bad extra_body is a configuration error before any request is sent
        self.http = httpx.AsyncClient(base_url=root_url, headers=headers, timeout=config.timeout_s)

    def batches(self, records: Sequence) -> list[list]:
        """Consecutive records of one (instruction, reference, answer), at most ``batch_size`` per request
        (``records`` are in ``judge.prefix_order``)."""
        from judge import prefix_key

        out: list[list] = []
        for record in records:
            last = out[-1] if out else None
            if last and len(last) < self.config.batch_size and prefix_key(last[0]) == prefix_key(record):
                last.append(record)
            else:
                out.append([record])
        return out

    def request(self, batch: Sequence) -> JudgeRequest:
        """The request for one batch (one item, one custom criterion per record), as the contract types it.

        Raises:
            ConfigError: ``extra_body`` has a key ``/v1/judge`` does not take, or a value of the wrong type.
        """
        first = batch[0]
        item = JudgeItem(id=first.id, instruction=first.instruction, answer=first.answer,
                         reference_answer=first.reference_answer,
                         criteria=[CustomCriterion(name=r.criteria_name, rubrics=r.rubrics) for r in batch])
        fields = {"model": self.model, "items": [item], "max_tokens": self.config.max_tokens,
                  "temperature": float(self.config.temperature), "lenient": self.config.lenient}
        # The same extra fields a chat backend sends (e.g. {"constrained": true} for judge-serve), checked here.
        try:
            return JudgeRequest.model_validate({**fields, **dict(self.config.extra_body)})
        except ValueError as err:  # pydantic's ValidationError is a ValueError
            raise ConfigError(f"extra_body: not a /v1/judge field or value: {short(str(err))}") from err

    def payload(self, batch: Sequence) -> dict[str, Any]:
        """The JSON body for one batch: ``request(batch)`` with the fields it was given."""
        return self.request(batch).model_dump(mode="json", exclude_unset=True)

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]:
        response = await self.http.post("/v1/judge", json=self.payload(batch))
        if response.status_code != 200:
            if retryable_status(response.status_code):
                response.raise_for_status()
            raise Refused(f"HTTP {response.status_code}: {short(response.text)}")
        body = JudgeResponse.from_json(response.json())
        results = body.items[0].results if body.items else []
        if len(results) != len(batch):
            raise Refused(f"judge-serve returned {len(results)} results for {len(batch)} criteria")
        return [self._outcome(result) for result in results]

    @staticmethod
    def _outcome(result: JudgeResult) -> dict[str, Any]:
        """A predictions row's judge fields (``eval.predictions.PredictionRow``) from one ``/v1/judge`` result."""
        ok = result.parse_ok and result.score is not None
        return {
            "raw_output": result.output,
            "feedback": result.feedback or "",
            "score": float(result.score) if ok else None,
            "parse_ok": ok,
            "error": None if ok else (result.error or VerdictError.NO_SCORE),
            "reason": "" if ok else (result.error_reason or ""),
            "score_source": result.score_source if ok else None,
            "in_scale": result.in_scale if ok else None,
            # A regression head's raw (unclipped) value: POLLUX's own evaluator scores it (eval.pollux_official).
            "regression_score": result.regression_score,
            # Seq2seq judges: the score tokens' distribution (judge-serve's score_logprobs); the report shows it.
            "expected_score": result.expected_score,
            "confidence": result.confidence,
            "score_probs": result.score_probs,
        }

    async def aclose(self) -> None:
        await self.http.aclose()


def reasoning_of(message: Any) -> str | None:
    """A chat message's separated reasoning: vLLM's ``reasoning`` (``--reasoning-parser``), or the
    ``reasoning_content`` older vLLM and DeepSeek's API write; None when the server sent neither."""
    if message is None:
        return None
    extra = getattr(message, "model_extra", None) or {}
    for name in ("reasoning", "reasoning_content"):
        value = getattr(message, name, None) or extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def root_of(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def base_of(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def detect_backend(base_url: str, api_key: str) -> str:
    """``judge-serve`` when the server has a ``/v1/judge`` route, else ``chat``.

    An empty POST tells them apart without judging anything: judge-serve answers 400 (missing items) or 401,
    vLLM and other OpenAI servers 404 or 405.
    """
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.post(root_of(base_url) + "/v1/judge", json={}, headers=headers, timeout=30)
    except httpx.HTTPError as err:
        log.debug("backend probe: POST /v1/judge failed (%s): an OpenAI-compatible chat server", err)
        return "chat"
    kind = "chat" if response.status_code in (404, 405) else "judge-serve"
    # The probe's 4xx is the expected answer, not an error: said once, at debug level.
    log.debug("backend probe: empty POST /v1/judge answered HTTP %d: %s", response.status_code, kind)
    return kind


def first_model(base_url: str, api_key: str) -> str:
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.get(base_of(base_url) + "/models", headers=headers, timeout=30)
    response.raise_for_status()
    models = response.json().get("data") or []
    if not models:
        raise ConfigError(f"judge: {base_url} lists no models; set --model")
    return models[0]["id"]


