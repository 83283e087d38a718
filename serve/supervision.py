"""judge-serve's engine supervision: starting, watching, healing and stopping the vLLM engines behind the HTTP
surface (``serve.app``).

Why one module of ~880 lines: the state, the watcher, the healer and the start and stop are one lifecycle over one
``ServerState``; split, each part would reach into the others' fields.

State: ``ServerState`` is what the routes and the supervisor share; ``status`` runs starting -> ready -> draining, or
starting -> failed.

Self-healing: an engine judge-serve started that dies (its whole process tree is taken down with it,
``judge.plumbing.processes``), or that hangs (alive, but ``engine_hang_probes`` ``/health`` probes in a row failed once
judge-serve is ready; its tree is then stopped), is restarted after a backoff (``engine_restart_backoff_s``, doubling, at most
``engine_restart_backoff_max_s``); a restart that fails to come up, or cannot even be started for want of
descriptors, processes, memory or disk, counts as another death. Past ``engine_max_restarts`` deaths within
``engine_restart_window_s``, past ``engine_max_restarts`` restarts in a row that never stayed up
``engine_restart_window_s`` (however long each took: a load that hangs for ``engine_start_timeout_s``, or one that
loads for longer than the window and dies on its first batch, is never three within it), or on a start that no
retry can mend (the engine's program missing, a permission refused), judge-serve stops and exits 1.
An engine whose checkpoint's weights changed since judge-serve started (``serve.layout.weights_changed``), before
its restart or while the restarted engine loaded, is not served: it would serve other weights under the advertised
fingerprint, beside an engine still holding the old ones; judge-serve stops and exits 1 (``/health`` 503 saying to
restart judge-serve until it has), so that its own supervisor starts it over the new weights under their fingerprint.
Each start of an engine gets a fresh key (``serve.launch.engine_key``, unless ``$VLLM_API_KEY`` sets one): a program
that took a dead engine's port before judge-serve noticed the death learns no key the restarted engine accepts.
Every background task (bring-up, watcher, heals) that ends on an error it did
not expect stops judge-serve the same way, logged: none may die unnoticed and leave it "ready" over a dead engine.
An attached engine (``generator_url``/``pooling_url``) is not judge-serve's to restart: after two failed ``/health``
probes its routes answer 503, and it is probed on until it answers again, then served, unless its ``GET /version``
is then outside ``SUPPORTED_VLLM`` (brought back on another vLLM release line): judge-serve stops, as at start. A
probe that judge-serve could not send for its own want of descriptors or memory counts neither way.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import math
import os
import tempfile
import threading
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import aiohttp

from judge.plumbing.provenance import make_private_dir
from judge.prompts import POLLUX_PROMPT, PromptTemplate
from judge.wire import ModelLimits
from serve.config import ServeConfig
from serve.engine_client import EngineClient, EngineFailure, EngineHttp, Hop, engine_session, read_capped
from serve.judging import Judge, JudgeSettings, config_bounds
from serve.launch import Engine, EngineStartError, engine_key, engine_specs
from serve.layout import CHECKPOINT_CHANGED, CheckpointLayout, weights_changed, weights_fingerprint
from serve.schema import LargeDecodes
from serve.tokenizer import load_tokenizer

__all__ = ["ServerState", "restart_delay", "probe", "start_engines", "stop_engines", "checkpoint_changed_while_loading",
           "CHANGED_WHILE_LOADING"]

log = logging.getLogger("judge_serve")


@dataclass
class ServerState:
    """What the routes share. ``status`` runs starting -> ready -> draining, or starting -> failed."""

    config: ServeConfig
    layout: CheckpointLayout
    status: str = "starting"
    failure: str | None = None
    engines: dict[str, Engine] = field(default_factory=dict)
    dead: dict[str, asyncio.Event] = field(default_factory=dict)
    dead_reason: dict[str, str] = field(default_factory=dict)
    http: EngineHttp | None = None
    judge: Judge | None = None
    log_dir: Path | None = None
    log_dir_is_temporary: bool = False  # made by judge-serve (no log_dir given): removed when it stops
    on_fatal: Callable[[], None] | None = None
    tasks: list[asyncio.Task] = field(default_factory=list)
    clients: dict[str, EngineClient] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)  # role -> restarts since judge-serve started
    restart_times: dict[str, list[float]] = field(default_factory=dict)  # role -> time.monotonic() of each
    #: role -> restarts in a row that never stayed up engine_restart_window_s (never answered /health, or died
    #: within the window of it): the window cannot count them, since a load may take longer
    #: (engine_start_timeout_s) than the window; reset at the death of a restarted engine that stayed up that long.
    failed_restarts: dict[str, int] = field(default_factory=dict)
    came_up: dict[str, float] = field(default_factory=dict)  # role -> when its restarted engine answered /health
    #: The roles whose engine answered /health during judge-serve's start, and those whose dead engine's log tail
    #: the watcher held back meanwhile: the start's error carries the tail of the engine it names (``_declare_dead``).
    up_at_start: set[str] = field(default_factory=set)
    tails_held: set[str] = field(default_factory=set)
    tail_in_error: str = ""  # the role whose tail the start's EngineStartError carried: never logged again
    #: role -> when its engine stopped serving: seen dead, or, for one hung, its first unanswered probe. Its life is
    #: measured to here, not to its restart's start, which comes after stopping it (up to engine_stop_grace_s).
    died_at: dict[str, float] = field(default_factory=dict)
    last_exit: dict[str, int] = field(default_factory=dict)  # role -> the last exit code of its engine
    #: role -> why its last restart failed without exiting (its load outlived engine_start_timeout_s, or its process
    #: could not be started): that failure, not the exit before it, is what the restart and give-up messages name;
    #: cleared at the engine's next exit.
    restart_failed: dict[str, str] = field(default_factory=dict)
    hung: dict[str, str] = field(default_factory=dict)  # role -> why its started engine, alive, counts as dead
    retry_after: dict[str, int] = field(default_factory=dict)  # role -> seconds to tell clients while it restarts
    #: role -> the model name and the context window (max_model_len) its engine lists on /v1/models, read once the
    #: engines answer: an attached engine may serve under another name and window than judge-serve's config says.
    engine_models: dict[str, str] = field(default_factory=dict)
    engine_windows: dict[str, int] = field(default_factory=dict)
    #: The pointwise prompt the judge is asked with (``judge.checkpoints.prompt_template_and_why``, in ``create_app``).
    template: PromptTemplate = POLLUX_PROMPT
    #: ``serve.layout.weights_fingerprint`` of the layout as judge-serve was built (when ``serve.app`` takes the one
    #: it advertises): a restart from weights that differ from it is refused.
    weights_fingerprint: str | None = None
    #: How many bodies past ``serve.schema.OFF_LOOP_BYTES`` every route decodes at once (``read_off_loop``); the
    #: others wait their turn. A test or benchmark builds the state with its own (``LargeDecodes(at_once=...)``).
    large_decodes: LargeDecodes = field(default_factory=LargeDecodes)

    def __post_init__(self) -> None:
        if self.layout is not None and self.weights_fingerprint is None:
            self.weights_fingerprint = weights_fingerprint(self.layout)

    def engine_problem(self, role: str) -> str | None:
        """Why ``role``'s engine cannot take a request now, or None when it can."""
        if self.status == "failed":
            return f"judge-serve cannot serve: {self.failure}"
        if role in self.dead_reason:
            return self.dead_reason[role]
        if self.status == "starting":
            return "the engines are still starting; retry when /ready answers 200"
        return None

    def any_dead(self) -> str | None:
        return next(iter(self.dead_reason.values()), None)

    def exited_unseen(self) -> str | None:
        """Why an engine judge-serve started is down though the watcher (``_watch``, every half second) has not yet
        declared it dead: its process has exited; else None. Asked at request time by ``/ready``, which must not
        answer 200 over a dead engine meanwhile; costs one ``waitid`` per engine and reaps nothing."""
        for role, engine in self.engines.items():
            code = None if role in self.dead_reason else engine.exit_code()
            if code is not None:
                return f"the {role} engine exited with code {code}"
        return None

    def healing(self, role: str) -> bool:
        """Whether ``role``'s engine is dead and being restarted."""
        return role in self.retry_after

    def engine_window(self, role: str) -> int:
        """``role``'s engine's context window: the one it lists, else ``config.max_model_len``."""
        return self.engine_windows.get(role, self.config.max_model_len)

    def retry_after_s(self, roles) -> str:
        """The ``Retry-After`` header value for requests refused because of ``roles``' engines."""
        return str(max([self.retry_after.get(role, 5) for role in roles] or [5]))

    def retry_headers(self, roles) -> dict[str, str]:
        """A 503's headers for ``roles``' engines: ``Retry-After``, unless judge-serve failed for good (it exits)."""
        return {} if self.status == "failed" else {"Retry-After": self.retry_after_s(roles)}


def _engines_record(state: ServerState) -> dict[str, dict]:
    """run.json's ``engines``: each engine's URL, pid (its process group, its supervisor's: its whole tree shares
    it), command, log and restarts."""
    return {role: {"url": e.url, "pid": e.pid, "command": e.command, "log": str(e.log_path) if e.log_path else None,
                   "restarts": state.restarts.get(role, 0)} for role, e in state.engines.items()}


def _write_run_record(state: ServerState) -> None:
    """``run.json`` (``judge.plumbing.provenance``) in the log folder, with the layout and the engines' URLs, pids, commands."""
    from judge.plumbing.provenance import write_provenance

    assert state.log_dir is not None
    write_provenance(
        state.log_dir, "judge-serve", state.config.to_dict(), prompt_version=state.template.version,
        layout={k: str(v) if v is not None else None for k, v in vars(state.layout).items()},
        engines=_engines_record(state),
    )  # fmt: skip


def _update_run_record(state: ServerState) -> None:
    """run.json's ``engines`` after a restart; the rest stays. Written anew, the same launch would be filed under
    ``earlier_launches`` once per restart (``write_provenance`` hands an existing record's launch on there)."""
    from judge.plumbing.provenance import update_provenance

    assert state.log_dir is not None
    update_provenance(state.log_dir, engines=_engines_record(state))


async def _bring_up(state: ServerState) -> None:
    """Load the tokenizer and wait for every engine; then build the judge and turn ready (or fail)."""
    config = state.config
    try:
        tokenizer = await asyncio.to_thread(load_tokenizer, state.layout.root)
        classifier = None
        if config.criteria_classifier:  # a classifier that cannot load fails the start, as an engine that cannot
            from judge.criteria_auto import classifier_from_settings

            classifier = await asyncio.to_thread(
                classifier_from_settings, config.criteria_classifier, config.criteria_classifier_path,
                config.criteria_classifier_model, config.criteria_threshold, config.criteria_classifier_api_key_env,
            )
        stop = lambda: state.status != "starting"  # noqa: E731

        def wait_for(role: str, engine: Engine) -> None:
            engine.wait_ready(config.engine_start_timeout_s, stop)
            state.up_at_start.add(role)  # in the waiting thread: as soon as it answered

        await asyncio.gather(*(asyncio.to_thread(wait_for, role, e) for role, e in state.engines.items()))
    except EngineStartError as err:  # vLLM's own "Engine core initialization failed" names no setting
        from serve.config import cpu_start_hint

        owned = any(e.owned for e in state.engines.values())
        state.tail_in_error = err.role
        _fail_start(state, str(err) + (cpu_start_hint(config) if owned else ""))
        _log_held_tails(state)
        return
    except Exception as err:  # noqa: BLE001 - any failure to come up is fatal, and reported as such
        _fail_start(state, str(err))
        _log_held_tails(state)
        return
    changed = await asyncio.to_thread(checkpoint_changed_while_loading, state)
    if changed:
        _fail_start(state, changed)
        _log_held_tails(state)
        return
    assert state.http is not None
    for role, engine in state.engines.items():
        state.engine_models[role], state.engine_windows[role] = await _served_model(state.http, engine, config)
    clients = state.clients = {
        role: EngineClient(state.http, e.url, state.dead[role], lambda role=role: state.dead_reason.get(role, f"{role} engine unavailable"),
                           headers=e.auth_headers)
        for role, e in state.engines.items()
    }
    settings = JudgeSettings(
        model_name=config.model_name,
        verdict_format=config.verdict_format,
        template=state.template,
        kind=state.layout.kind,
        head_input=state.layout.head_input,
        engine_models=dict(state.engine_models),
        # Every judgment must fit every engine it goes through (a regression judge's head reads prompt + rationale).
        max_model_len=min(state.engine_windows.values(), default=config.max_model_len),
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        score_logprobs=config.score_logprobs,
        lenient=config.lenient_parsing,
        stop_at_end=config.stop_at_end,
        constrained=config.constrained_decoding,
        feedback_max_chars=config.feedback_max_chars,
        max_judgments=config.max_judgments_per_request, **config_bounds(config),  # the queue's bound
    )
    state.judge = Judge(
        settings, tokenizer, clients["generator"], clients.get("pooler"), asyncio.Semaphore(config.max_concurrent_engine_requests),
        classifier=classifier,
    )
    if state.status == "starting":
        state.status = "ready"
        log.info("judge-serve ready: %s judge %r on http://%s:%d", state.layout.kind, config.model_name, config.host, config.port)
        _log_held_tails(state)  # one that died as it came up: no start error carried its tail
        heal_the_dead(state)


def _fail_start(state: ServerState, reason: str) -> None:
    """judge-serve could not come up: ``failed`` with ``reason`` (``/health`` says it), logged, then ``on_fatal``."""
    if state.status == "starting":
        state.status, state.failure = "failed", reason
        log.error("judge-serve cannot start: %s", reason)
        if state.on_fatal:
            state.on_fatal()


#: Why judge-serve does not turn ready over engines whose weights were replaced while they loaded.
CHANGED_WHILE_LOADING = "checkpoint changed while the engines loaded: restart judge-serve"


def checkpoint_changed_while_loading(state: ServerState) -> str | None:
    """``CHANGED_WHILE_LOADING`` when the weights judge-serve's own engines load differ now from the fingerprint
    taken when judge-serve was built, else None. That fingerprint is taken minutes before the engines have read the
    weights: a folder replaced meanwhile would be served under the old one, which is what a resuming client trusts.
    Attached engines load nothing of the layout's: with none of judge-serve's own there is nothing to compare."""
    if not any(engine.owned for engine in state.engines.values()):
        return None
    return CHANGED_WHILE_LOADING if weights_changed(state.layout, state.weights_fingerprint) else None


async def _served_model(http: EngineHttp, engine: Engine, config: ServeConfig) -> tuple[str, int]:
    """The model name and context window an engine serves, from the first entry of its ``/v1/models``; judge-serve's
    own (``config.model_name``, ``config.max_model_len``) for whatever it does not list readably.

    An attached engine (``generator_url``) may serve under another name and window than judge-serve's config (and
    ``engine_args`` may change a started one's ``--max-model-len``): judge-serve's own calls must name the engine's
    model, the max_tokens it adds to proxied requests must stay within the engine's window (vLLM refuses more), and
    its judgments' context checks must be the engine's, not judge-serve's guess of it.
    """
    listed_name, listed_window, problem = await _listed_model(http, engine)
    name, window = listed_name or config.model_name, listed_window or config.max_model_len
    guessed = [f"{what} {value!r}" for what, value, listed in (("model name", name, listed_name),
                                                               ("max_model_len", window, listed_window)) if not listed]
    if guessed:  # judge-serve's config stands in for the engine's own: a wrong guess shows later, as a 404 or a 400
        log.warning("the %s engine's /v1/models could not be read (%s): judge-serve uses its config's %s", engine.role,
                    problem, " and ".join(guessed))
    if name != config.model_name or window != config.max_model_len:
        log.info("the %s engine serves %r with max_model_len %d (judge-serve's config: %r, %d); judge-serve follows "
                 "the engine", engine.role, name, window, config.model_name, config.max_model_len)
    return name, window


async def _listed_model(http: EngineHttp, engine: Engine) -> tuple[str | None, int | None, str]:
    """The name and window of the first entry of the engine's ``/v1/models``, each None where it could not be read,
    and why not ("" when both were)."""
    name, window = None, None
    try:
        # On the probe session: the pooled one may be full of proxied generations for minutes.
        response = await http.probe_request("GET", engine.url + "/v1/models", headers=engine.auth_headers)
        try:
            entry = json.loads(await read_capped(response, "/v1/models"))["data"][0]
        finally:
            response.release()
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, KeyError, IndexError, TypeError,
            EngineFailure) as err:  # EngineFailure: a list too large to read
        return None, None, f"{type(err).__name__}: {str(err)[:200]}"
    entry = entry if isinstance(entry, dict) else {}
    if isinstance(entry.get("id"), str) and entry["id"]:
        name = entry["id"]
    with contextlib.suppress(ValueError, TypeError):
        window = ModelLimits.from_entry(entry).max_model_len  # the clients' reading of an entry
    missing = [what for what, value in (("id", name), ("max_model_len", window)) if value is None]
    return name, window, f"its first entry has no readable {' or '.join(missing)}" if missing else ""


async def _follow_the_engine(state: ServerState, role: str, timeout_s: float = 5.0) -> None:
    """Read again the name and window of an attached engine that answers again: it may have been restarted with
    another model or ``--max-model-len`` while it was down, and judge-serve's calls, the names ``/v1/judge`` answers
    to, and the ``max_tokens`` it adds to proxied requests must follow it. Only what the engine lists readably
    replaces what judge-serve knew (a list that cannot be read now is no news: judge-serve's own config would be a
    guess), and the read is bounded as the health probe is, so that it cannot hold up the watch of every engine."""
    assert state.http is not None
    try:
        name, window, _ = await asyncio.wait_for(_listed_model(state.http, state.engines[role]), timeout_s)
    except asyncio.TimeoutError:
        log.warning("the attached %s engine answers /health but not /v1/models within %g s: its model and window "
                    "are kept as they were", role, timeout_s)
        return
    name, window = name or state.engine_models.get(role), window or state.engine_windows.get(role)
    if (name, window) == (state.engine_models.get(role), state.engine_windows.get(role)):
        return
    log.info("the attached %s engine now serves %r with max_model_len %s: judge-serve follows it", role, name, window)
    state.engine_models[role], state.engine_windows[role] = name, window
    if state.judge is not None:
        state.judge.settings = replace(
            state.judge.settings, engine_models=dict(state.engine_models),
            max_model_len=min(state.engine_windows.values(), default=state.config.max_model_len))


def _version_refusal(role: str, url: str) -> tuple[bool, str | None]:
    """Whether the vLLM version of an attached engine that answers again could be read, and why it cannot be taken
    back (None: it can). Its operator may have brought it back on another vLLM release line while it was down: it is
    refused as ``serve.engine_version.watch_attached_versions`` refuses it at start, which checks it only once. A
    ``/version`` that does not answer (yet) is no news."""
    from serve.engine_version import SUPPORTED_VLLM, EngineVersionError, check_version, engine_version_at

    try:
        check_version(engine_version_at(url), f"the {role} engine at {url}")
    except EngineVersionError as err:
        return True, str(err)
    except urllib.error.HTTPError as err:
        return True, (f"the {role} engine at {url} answered GET /version with HTTP {err.code}: it is not a vLLM "
                      f"OpenAI server of the tested line (vLLM {SUPPORTED_VLLM}).")
    except ValueError as err:
        return True, f"the {role} engine at {url} answered GET /version with no vLLM version ({err})."
    except OSError:
        return False, None
    return True, None


def heal_the_dead(state: ServerState) -> list[str]:
    """Start healing every engine of judge-serve's own that died before judge-serve turned ready (one that came up,
    then died while another was still loading): ``_watch`` heals only deaths it sees once ready, so such an engine
    would stay dead and every request answer 503, with judge-serve neither healed nor stopped. Returns the roles."""
    roles = [role for role, engine in state.engines.items() if engine.owned and role in state.dead_reason
             and not state.healing(role)]
    for role in roles:
        log.error("the %s engine died while judge-serve was starting (%s): restarting it", role,
                  state.dead_reason[role])
        state.dead_reason[role] = f"{state.dead_reason[role]}; judge-serve is restarting it; retry later"
        state.retry_after[role] = 5
        state.tasks.append(_background(state, _heal(state, role), f"restart of the {role} engine"))
    return roles


def _give_up(state: ServerState, failure: str, logged: str = "") -> None:
    """judge-serve cannot serve any more: ``failed`` (``/health`` 503 naming why), then ``on_fatal`` (exit 1).
    ``logged``: more for the log only (a path the HTTP answer must not carry)."""
    state.status, state.failure = "failed", failure
    log.error("%s%s", failure, logged)
    if state.on_fatal:
        state.on_fatal()


def _background(state: ServerState, work, name: str) -> asyncio.Task:
    """``work`` as a task of judge-serve's that cannot fail unnoticed: nobody awaits these tasks (they are only
    cancelled at shutdown), so one that raised would leave judge-serve reporting "ready" over an engine nobody
    watches or heals. Such an error is logged with its traceback and stops judge-serve (``_give_up``)."""
    task = asyncio.ensure_future(work)

    def ended(task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None:
            return
        err = task.exception()
        log.error("judge-serve's %s failed", name, exc_info=err)
        if state.status in ("starting", "ready"):  # while draining, judge-serve is on its way out anyway
            _give_up(state, f"judge-serve's {name} failed ({type(err).__name__}: {err}); judge-serve stops")

    task.add_done_callback(ended)
    return task


#: Errors that are judge-serve's own trouble (no free descriptor, no buffer, no memory): a probe that fails with
#: one says nothing about the engine, so it never counts against it (a flood of client connections must not get an engine declared dead).
_OWN_TROUBLE = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


async def probe(http: EngineHttp, url: str, timeout_s: float = 5.0) -> bool | None:
    """Whether the engine at ``url`` answers ``GET /health`` with 200 now; None when judge-serve itself could not
    ask (out of descriptors or memory, or every connection of its probe session busy), which is no news about the
    engine. Probes go on a session of their own (``EngineHttp.probe_request``): on the pooled one, proxied
    generations holding every connection made a healthy engine's probes time out, and the engine "dead"."""
    hop = Hop()
    try:
        response = await asyncio.wait_for(http.probe_request("GET", url + "/health", hop), timeout_s)
    except asyncio.TimeoutError:  # before OSError: a TimeoutError is one
        return None if hop.queued else False  # the time went waiting for a connection of judge-serve's own
    except OSError as err:  # aiohttp's ClientOSError and ClientConnectorError are OSErrors with the errno
        own = err.errno in _OWN_TROUBLE or getattr(getattr(err, "os_error", None), "errno", None) in _OWN_TROUBLE
        return None if own else False
    except aiohttp.ClientError:
        return False
    response.release()
    return response.status == 200


#: The longest a ``/health`` probe may wait for the engine's answer: an engine of judge-serve's own is given this or
#: ``engine_probe_interval_s`` when shorter, so that a probe never outlasts the interval between two.
PROBE_DEADLINE_S = 5.0


@dataclass
class _Probe:
    """A ``/health`` probe in flight: its task, when it was sent, and the engine it asks (a restart replaces the
    role's engine: an answer about the one before counts for nothing)."""

    task: asyncio.Task
    sent: float
    engine: Engine


class _Probes:
    """The watcher's probes, one in flight per engine at most, each on a task of its own: an engine that accepts
    the connection and never answers holds only its own probe, for its deadline, never the watcher, which meanwhile
    goes on seeing the other engines' exits and probing them. Each engine is probed ``every`` seconds from the send
    of its last probe (not from its end): the deadline of an unanswered probe does not stretch the schedule."""

    def __init__(self, http: EngineHttp, clock: Callable[[], float] | None = None) -> None:
        self.http, self.clock = http, clock  # None: time.monotonic, looked up at each call
        self.flying: dict[str, _Probe] = {}
        self.due: dict[str, float] = {}  # role -> when its engine is next probed (time.monotonic)

    def answer(self, role: str, engine: Engine, every: float, deadline: float) -> tuple[bool | None, float] | None:
        """The finished probe of ``role``'s ``engine`` (whether it answered, None for no news; when it was sent), or
        None when none finished since the last call; sends the next probe when one is due (the first at once), in
        the same call that takes the last one's answer: a probe whose deadline is the interval ends as the next is
        due, and sent a call later, each would come a watcher round late."""
        now = (self.clock or time.monotonic)()
        flying = self.flying.get(role)
        if flying is not None and flying.engine is not engine:
            self.drop(role)
            flying = None
        finished = None
        if flying is not None:
            if not flying.task.done():
                return None
            del self.flying[role]
            finished = flying.task.result(), flying.sent
        due = self.due.setdefault(role, now)
        if now >= due:
            task = asyncio.ensure_future(probe(self.http, engine.url, deadline))
            self.flying[role] = _Probe(task, now, engine)
            self.due[role] = now + every
        return finished

    def drop(self, role: str) -> None:
        """Forget ``role``'s probe in flight (its engine died or was replaced) and its schedule. A probe that already
        ended on an error ``probe`` does not expect is raised here, once forgotten, as ``answer`` would raise it: a
        bug stops the watcher (and judge-serve) whether or not its engine died in the same round."""
        flying = self.flying.pop(role, None)
        self.due.pop(role, None)
        if flying is None:
            return
        if not flying.task.done():
            flying.task.cancel()
        elif not flying.task.cancelled():
            flying.task.result()

    def close(self) -> None:
        """Forget every probe: at the watcher's end, which a probe's own error must not replace; logged instead."""
        for role in list(self.flying):
            try:
                self.drop(role)
            except Exception:  # noqa: BLE001 - the watcher is ending anyway: its own end (a cancel) stands
                log.exception("the /health probe of the %s engine failed on an error judge-serve did not expect", role)


async def _watch(state: ServerState, interval_s: float = 0.5) -> None:
    """Notice a dead engine: a started one as soon as its process exits, or, once judge-serve is ready, as soon as
    its port refuses connections (its server gone, its supervisor not yet exited), or when its
    /health fails ``engine_hang_probes`` times in a row (probed every ``engine_probe_interval_s``: an engine alive
    but hung exits never), then heal it; an attached one when its /health fails twice (probed every
    ``attached_probe_interval_s``). An attached engine marked dead is probed on the same schedule and taken back as
    soon as it answers; a probe judge-serve could not send (its own descriptors or memory ran out, its probe
    connections all busy) counts neither way. Probes run beside the watcher (``_Probes``), each within its deadline
    (``PROBE_DEADLINE_S``; for an engine of judge-serve's own, ``engine_probe_interval_s`` when shorter), so a hung
    engine is declared dead within ``engine_hang_probes`` intervals and one deadline of its last answer (an attached
    one within its interval, the longer of its interval and the deadline, and a deadline), plus a round of this
    loop per probe and one more: a probe is sent, and its answer read, in the first round at or after its time (a
    round: ``interval_s`` and the port checks, each at most 0.25 s, and in one that takes an attached engine back,
    its ``/version`` and ``/v1/models`` reads), and ``/ready``, which reads what the watcher
    has seen, turns 503 then."""
    config = state.config
    owned_probe_s = min(PROBE_DEADLINE_S, config.engine_probe_interval_s)
    misses: dict[str, int] = {}
    first_miss: dict[str, float] = {}  # role -> when the first of its engine's unanswered probes in a row was sent
    probes: _Probes | None = None
    try:
        while True:
            await asyncio.sleep(interval_s)
            if probes is None and state.http is not None:
                probes = _Probes(state.http)
            for role, engine in list(state.engines.items()):
                if state.engines.get(role) is not engine:
                    # Replaced while this round waited (a restart ended): the engine held here is the stopped one, whose
                    # exit code is no death of the role's new engine. That one is watched from the next round on.
                    continue
                attached = not engine.owned and state.status == "ready" and probes is not None
                owned = (engine.owned and state.status == "ready" and config.engine_hang_probes > 0
                         and probes is not None)
                if role in state.dead_reason:
                    answered = probes.answer(role, engine, config.attached_probe_interval_s, PROBE_DEADLINE_S) \
                        if attached else None
                    if answered is not None and answered[0] is True:
                        known, refusal = await asyncio.to_thread(_version_refusal, role, engine.url)
                        if refusal is not None:  # as serve.cli refuses it at start: judge-serve stops (exit 1)
                            _give_up(state, refusal)
                            return
                        if not known:
                            continue  # its /version does not answer yet: taken back once it does
                        await _follow_the_engine(state, role)
                        misses[role] = 0
                        state.dead[role].clear()
                        state.dead_reason.pop(role, None)
                        log.info("the attached %s engine at %s answers /health again: serving", role, engine.url)
                    continue
                reason = None
                code = engine.exit_code()
                answered = None
                if code is not None:
                    _exited(state, role, code)
                    reason = f"the {role} engine exited with code {code}"
                    log.error("%s (log: %s)", reason, engine.log_path)
                elif engine.owned and state.status == "ready" and await _refuses(engine.url):
                    # Its server is gone while its supervisor waits (up to ORPHAN_GRACE_S, 5 s) for the engine's other
                    # processes before it exits: meanwhile the port is free, and whatever judge-serve sent there would
                    # hand the engine's key to any program that bound it. Counted dead now, stopped, restarted.
                    reason = state.hung[role] = f"the {role} engine's server is gone {_PORT_REFUSED}"
                    log.error("%s (log: %s)", reason, engine.log_path)
                elif attached:
                    answered = probes.answer(role, engine, config.attached_probe_interval_s, PROBE_DEADLINE_S)
                elif owned:
                    # Its process runs, but a hung engine (a wedged EngineCore, a deadlocked worker) never exits:
                    # without this, every call to it would wait out request_timeout_s for ever. Its tree is stopped
                    # and it is restarted as if it had died.
                    answered = probes.answer(role, engine, config.engine_probe_interval_s, owned_probe_s)
                if answered is not None:
                    healthy, sent = answered
                    if healthy is None:
                        log.warning("could not probe the %s%s engine: judge-serve is out of descriptors or memory, or "
                                    "its probe connections are all busy", "" if engine.owned else "attached ", role)
                        continue
                    misses[role] = 0 if healthy else misses.get(role, 0) + 1
                    if healthy:
                        first_miss.pop(role, None)
                    else:
                        first_miss.setdefault(role, sent)
                    if not engine.owned and misses[role] >= 2:
                        reason = (f"the attached {role} engine stopped answering /health; judge-serve resumes when it "
                                  "answers")
                        log.error("%s (%s)", reason, engine.url)
                    elif engine.owned and misses[role] >= config.engine_hang_probes:
                        reason = state.hung[role] = (
                            f"the {role} engine stopped answering /health ({misses[role]} probes "
                            f"{config.engine_probe_interval_s:g} s apart)")
                        log.error("%s (log: %s)", reason, engine.log_path)
                if reason:
                    misses.pop(role, None)  # its successor starts with a clean count
                    _declare_dead(state, role, reason, first_miss.pop(role, None))
                    if probes is not None:
                        probes.drop(role)  # a probe still in flight asks about the dead engine
    finally:
        if probes is not None:
            probes.close()


def _declare_dead(state: ServerState, role: str, reason: str, since: float | None = None) -> None:
    """``role``'s engine counts as dead from now on, for ``reason`` (``since``: when it stopped answering, if before
    now): calls to it give up, and one of judge-serve's own is restarted (once judge-serve is ready); its log's tail
    is logged from another thread, the watcher never waiting on it."""
    engine = state.engines[role]
    state.died_at[role] = since if since is not None else time.monotonic()
    healing = engine.owned and state.status == "ready"
    # Restarting from now on, before the restart task first runs: /health says so, and so does every 503 meanwhile
    # (the task then names the attempt), not only the death.
    state.dead_reason[role] = f"{reason}; judge-serve is restarting it; retry later" if healing else reason
    state.dead[role].set()  # in-flight calls to it give up now: 503, never a hang
    if healing:
        state.retry_after[role] = 5
        state.tasks.append(_background(state, _heal(state, role), f"restart of the {role} engine"))
    # An engine that dies before it ever came up fails judge-serve's start with an EngineStartError that carries
    # this same tail, logged as the start fails (``_fail_start``): logged here too, a first start on a machine that
    # cannot hold the engine showed vLLM's last lines twice. So it is held back until the start ends, and logged
    # then unless the start's error named this engine (``_log_held_tails``: another engine's error may have ended
    # the start first); one the start saw die first (``tail_in_error``) is never logged here. One that came up,
    # then died while another still loads, fails nothing: logged now.
    if not engine.owned or role == state.tail_in_error:
        return
    if state.status == "starting" and role not in state.up_at_start:
        state.tails_held.add(role)
    else:
        _log_the_tail(role, engine)


def _log_held_tails(state: ServerState) -> None:
    """Log the tails ``_declare_dead`` held back during the start, but the one the start's error carries
    (``tail_in_error``)."""
    for role in sorted(state.tails_held - {state.tail_in_error}):
        _log_the_tail(role, state.engines[role])
    state.tails_held.clear()


def _log_the_tail(role: str, engine: Engine) -> None:
    """Log the last lines the dead ``engine`` wrote, secrets redacted (vLLM logs its own arguments, --hf-token's
    among them: judge-serve's console is not the log folder, whose mode keeps them). The log's end is taken now: its
    restart appends to the same file, and the tail is the dead engine's only. Read in a thread of its own, neither on
    the event loop nor in its default pool, where request planning queues: the watcher goes on at once."""
    try:
        end = os.stat(engine.log_path).st_size if engine.log_path is not None else None
    except OSError:
        end = None  # log_tail says why it cannot read it

    def read() -> None:
        try:
            tail = engine.log_tail(30) if end is None else engine.log_tail(30, end)
        except Exception:  # a thread's own exception would go to stderr (threading.excepthook), not to this log
            log.exception("the %s engine's log tail could not be read (log: %s)", role, engine.log_path)
            return
        log.error("%s engine log tail:\n%s", role, tail)

    threading.Thread(target=read, name=f"{role} engine log tail", daemon=True).start()


#: How a death seen at the engine's port ends its reason (``_watch``), before its supervisor has exited.
_PORT_REFUSED = "(its port refuses connections)"


async def _refuses(url: str, timeout_s: float = 0.25) -> bool:
    """Whether a TCP connection to ``url``'s host and port is refused now: nothing listens there (a live server
    accepts, or drops what its backlog cannot hold; Linux refuses only where no socket listens). A connection that
    is made is closed unused; a timeout, or an error of judge-serve's own, is no news."""
    split = urllib.parse.urlsplit(url)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(split.hostname, split.port), timeout_s)
    except ConnectionRefusedError:
        return True
    except (OSError, asyncio.TimeoutError, ValueError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return False


#: Why an engine could not be started that a later attempt may not meet: judge-serve out of descriptors, processes,
#: memory or disk. Any other (the engine's program or its log folder missing, a permission refused) fails the same
#: way every time: judge-serve gives up at once instead of spending its restarts on it.
_TRANSIENT_START = _OWN_TROUBLE | {errno.EAGAIN, errno.ENOSPC, errno.EINTR}


def _exited(state: ServerState, role: str, code: int) -> None:
    """Record that ``role``'s engine exited with ``code``: its last failure now, no longer a restart's failure."""
    state.last_exit[role] = code
    state.restart_failed.pop(role, None)


def _restart_failed(state: ServerState, role: str, why: str) -> None:
    """Record that ``role``'s restart failed, ``why`` as a clause after "the <role> engine": its last failure now,
    not the exit before it (no process ran, or the one that ran has not exited)."""
    state.last_exit.pop(role, None)
    state.restart_failed[role] = why


def _last_failure(state: ServerState, role: str, hung: str | None) -> str:
    """How ``role``'s engine last failed, as a clause: ``hung`` (why it counts as dead while alive; None: it exited),
    else its last restart's failure (a timeout, or no process started), else its last exit (with its code, where one
    was seen). One rule for the 503's reason while it restarts and the give-up message."""
    if hung:
        return hung
    if restart_failed := state.restart_failed.get(role):
        return f"the {role} engine {restart_failed}"
    code = state.last_exit.get(role)
    return f"the {role} engine exited" + (f" with code {code}" if code is not None else "")


def restart_delay(config: ServeConfig, restarts_in_window: int) -> float | None:
    """Seconds to wait before the next restart of an engine that has already been restarted
    ``restarts_in_window`` times within ``engine_restart_window_s``; None when that is past the limit.

    ``engine_restart_backoff_s`` doubles with each restart in the window, up to ``engine_restart_backoff_max_s``.
    """
    if restarts_in_window >= config.engine_max_restarts:
        return None
    return min(config.engine_restart_backoff_max_s, config.engine_restart_backoff_s * 2**restarts_in_window)


async def _heal(state: ServerState, role: str) -> None:
    """Restart ``role``'s dead engine with backoff until it answers, or give judge-serve up past the limit."""
    config = state.config
    state.retry_after[role] = 5
    hung = state.hung.pop(role, None)  # why it counts as dead when it did not exit; None: it exited
    died_at = state.died_at.pop(role, None)
    died_at = died_at if died_at is not None else time.monotonic()  # before stop(), which may take its grace
    try:
        # An engine that exited: its supervisor already took its process tree down; stop() reaps it and SIGKILLs
        # any straggler. A hung one: stop() takes its tree down (SIGINT, then SIGKILL).
        code = await asyncio.to_thread(state.engines[role].stop)
        if hung is not None and hung.endswith(_PORT_REFUSED) and code is not None:
            # Its server died: seen at its port before its supervisor exited, whose status (the server's: -9 for a
            # kill -9) stop() has only now. From here on it is an engine that exited, as /health tells.
            _exited(state, role, code)
            hung = None
        up_at = state.came_up.pop(role, None)
        if up_at is not None and died_at - up_at >= config.engine_restart_window_s:
            state.failed_restarts.pop(role, None)  # its restart stayed up: those before it are no longer in a row
        while state.status == "ready":
            now = time.monotonic()
            recent = [t for t in state.restart_times.setdefault(role, []) if now - t < config.engine_restart_window_s]
            state.restart_times[role] = recent
            failed = state.failed_restarts.get(role, 0)
            failure = _last_failure(state, role, hung)
            if failed and failed >= config.engine_max_restarts:  # with none in a row, the window names the death
                _give_up(state, f"the {role} engine was restarted {failed} times in a row and never stayed up "
                                f"{config.engine_restart_window_s:g} s (last failure: {failure}); "
                                f"engine_max_restarts={config.engine_max_restarts} reached, judge-serve stops",
                         f" (log: {state.engines[role].log_path})")
                return
            backoff = restart_delay(config, max(len(recent), failed))
            if backoff is None:
                _give_up(state, f"the {role} engine died {len(recent) + 1} times within "
                                f"{config.engine_restart_window_s:g} s (last failure: {failure}); "
                                f"engine_max_restarts={config.engine_max_restarts} reached, judge-serve stops",
                         f" (log: {state.engines[role].log_path})")
                return
            attempt = f"restart {len(recent) + 1} of {config.engine_max_restarts} allowed within {config.engine_restart_window_s:g} s"
            if failed:
                attempt += (f", after {failed} in a row that never stayed up {config.engine_restart_window_s:g} s "
                            f"({config.engine_max_restarts} allowed)")
            state.retry_after[role] = max(1, math.ceil(backoff)) + 5
            state.dead_reason[role] = f"{failure}; judge-serve is restarting it ({attempt}); retry later"
            log.warning("%s engine: %s in %.1f s", role, attempt, backoff)
            await asyncio.sleep(backoff)
            if state.status != "ready":
                return
            if await asyncio.to_thread(weights_changed, state.layout, state.weights_fingerprint):
                # Not left dead behind "ready" with a Retry-After nobody can honour: judge-serve stops (exit 1), so a
                # supervisor restarts it over the new weights under their own fingerprint.
                state.dead_reason[role] = f"the {role} engine died and was not restarted: {CHECKPOINT_CHANGED}"
                _give_up(state, state.dead_reason[role])
                return
            hung = None  # from here on, a failed restart is what the message names
            state.restart_times[role].append(time.monotonic())
            state.restarts[role] = state.restarts.get(role, 0) + 1
            state.failed_restarts[role] = failed + 1  # until it has stayed up engine_restart_window_s
            try:
                # Started here, on the event loop's thread, which lives as long as judge-serve (the parent-death
                # signal). Under a key of its own: the dead engine's may have reached whoever took its port.
                engine = state.engines[role] = Engine.start(state.engines[role].spec, config, state.log_dir,
                                                            engine_key())
            except OSError as err:  # no process or no log file for it: a restart that failed, counted as one
                why = f"could not be restarted ({type(err).__name__}: {err})"
                if err.errno not in _TRANSIENT_START:
                    _give_up(state, f"the {role} engine {why}; judge-serve stops")
                    return
                log.error("the %s engine %s", role, why)
                _restart_failed(state, role, why)
                continue
            try:
                _update_run_record(state)
            except (OSError, ValueError) as err:  # the engine runs; only its record is behind: serve on, say so
                log.error("run.json in %s could not be rewritten after the %s engine's restart (%s): it still names "
                          "the engine that died", state.log_dir, role, err)
            try:
                await asyncio.to_thread(engine.wait_ready, config.engine_start_timeout_s, lambda: state.status != "ready")
            except EngineStartError as err:
                if engine.exit_code() is not None:
                    _exited(state, role, engine.exit_code())
                else:  # alive and still loading
                    _restart_failed(state, role, f"did not answer /health within engine_start_timeout_s "
                                                 f"({config.engine_start_timeout_s:g} s) after its restart")
                log.error("the restarted %s engine did not come up: %s", role, err)
                await asyncio.to_thread(engine.stop)
                continue
            # Up, but not yet proven: one that dies on its first batch, after a load longer than the window, would
            # otherwise find no restart within the window at each death and be restarted for ever.
            state.came_up[role] = time.monotonic()
            if await asyncio.to_thread(weights_changed, state.layout, state.weights_fingerprint):
                # Replaced while it loaded: it holds the new weights, which the advertised fingerprint does not name.
                state.dead_reason[role] = f"the {role} engine was restarted over other weights: {CHECKPOINT_CHANGED}"
                _give_up(state, state.dead_reason[role])
                return
            if role in state.clients:
                state.clients[role].url = engine.url
                state.clients[role].headers = {**state.clients[role].headers, **engine.auth_headers}
            state.dead[role].clear()
            state.dead_reason.pop(role, None)
            log.info("%s engine restarted and ready at %s (%d restarts so far)", role, engine.url, state.restarts[role])
            return
    finally:
        state.retry_after.pop(role, None)


async def start_engines(state: ServerState) -> None:
    """Open the engines' HTTP client, start (or attach to) every engine, write run.json, and start bringing them up
    and watching them; returns at once (the port answers /health while they load)."""
    config = state.config
    state.log_dir = Path(config.log_dir) if config.log_dir else Path(tempfile.mkdtemp(prefix="judge-serve-"))
    state.log_dir_is_temporary = not config.log_dir
    make_private_dir(state.log_dir)  # 0700 when created here: engine logs, run.json
    state.http = engine_session(
        config.request_timeout_s, max_connections=config.max_concurrent_engine_requests + 64,
        keepalive_s=config.engine_keepalive_s,
        # the judgments' own pool: Judge.limit lets no more than this many be in flight, so none waits for one
        judgment_connections=config.max_concurrent_engine_requests,
    )  # fmt: skip
    for spec in engine_specs(config, state.layout):
        state.engines[spec.role] = Engine.start(spec, config, state.log_dir, engine_key())
        state.dead[spec.role] = asyncio.Event()
    _write_run_record(state)
    log.info("engine logs and run.json in %s", state.log_dir)
    state.tasks = [_background(state, _bring_up(state), "start"), _background(state, _watch(state), "engine watcher")]


async def stop_engines(state: ServerState) -> None:
    """Stop watching and stop every engine judge-serve started (their whole trees); close the HTTP client."""
    if state.status != "failed":
        state.status = "draining"
    if state.judge is not None:  # the engines stop: a request still waiting for room would wait for nothing
        state.judge.queue.refuse_waiting("judge-serve is shutting down")
    for task in state.tasks:
        task.cancel()
    await asyncio.gather(*(asyncio.to_thread(e.stop) for e in state.engines.values()))
    if state.http is not None:
        await state.http.close()
    engine_logs = any(engine.owned for engine in state.engines.values())  # attached engines log elsewhere
    if state.log_dir_is_temporary and state.log_dir is not None and state.status == "failed" and engine_logs:
        # A failed start's error names a log in it, and the log's tail may miss the root cause (vLLM logs a worker's
        # traceback above its engine core's); so may a runtime failure's (an engine that died too often): removed,
        # the file it points to was gone before it was read.
        log.error("kept the temporary log folder %s: judge-serve failed, and the logs of the engines it started are "
                  "there (remove it when read; --log-dir chooses the folder)", state.log_dir)
    elif state.log_dir_is_temporary and state.log_dir is not None:
        # A folder judge-serve made for itself is not left in the temporary directory, one per start. --log-dir keeps
        # the logs.
        import shutil

        shutil.rmtree(state.log_dir, ignore_errors=True)
        log.info("removed the temporary log folder %s (give --log-dir to keep the engine logs)", state.log_dir)
