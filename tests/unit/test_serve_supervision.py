"""judge-serve's supervision decisions that need no engine: which dead engines get healed when judge-serve turns
ready. Engines dying and healing for real: tests/integration/serving/test_serve_faults.py."""

from __future__ import annotations

import asyncio
import os
import select
import shutil
import sys
import tempfile
import threading
import types
from pathlib import Path

import pytest

import serve.launch
from serve.config import ServeConfig
from serve.supervision import ServerState, heal_the_dead


class ExitedEngine:
    """An engine judge-serve started whose process has exited: what ``_heal`` reads of it before restarting it."""

    owned = True

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()

    def exit_code(self) -> int:
        return 1


class AttachedEngine(ExitedEngine):
    owned = False  # judge-serve never restarts an engine it did not start; _watch takes it back when it answers


def test_an_engine_that_died_while_another_was_loading_is_healed_once_ready():
    """The generator came up, then died while the pooler was still loading: _watch saw it die during the start and
    healed nothing (it heals deaths it sees once ready). Turning ready starts its heal: the dead process is stopped
    and the restart's backoff is running, so clients are told to retry (Retry-After), not served 503 for ever."""
    config = ServeConfig(model="/ckpt", engine_restart_backoff_s=600.0)  # the heal waits there: nothing restarts
    engines = {"generator": ExitedEngine(), "pooler": ExitedEngine(), "attached": AttachedEngine()}
    state = ServerState(config=config, layout=None, status="ready", engines=engines,
                        dead_reason={"generator": "the generator engine exited with code 1",
                                     "attached": "the attached engine stopped answering /health"})

    async def turn_ready() -> list[str]:
        healed = heal_the_dead(state)
        assert heal_the_dead(state) == []  # already healing: never twice
        await asyncio.to_thread(engines["generator"].stopped.wait, 30)
        for _ in range(10_000):  # the loop's turns until the heal task, past stop(), is in its backoff
            if "restarting it" in state.dead_reason["generator"]:
                break
            await asyncio.sleep(0)
        assert state.healing("generator") and "restarting it" in state.dead_reason["generator"]
        for task in state.tasks:
            task.cancel()
        return healed

    assert asyncio.run(turn_ready()) == ["generator"]
    assert engines["generator"].stopped.is_set() and not engines["pooler"].stopped.is_set()
    assert not engines["attached"].stopped.is_set()


def test_a_death_seen_once_ready_is_said_to_be_restarting_before_the_restart_task_runs():
    """From the moment the watcher sees a started engine die (and /health says "restarting"), a request's 503 says
    judge-serve is restarting it, not only that it died: the restart task, which names the attempt, runs later."""
    from serve.supervision import _watch

    config = ServeConfig(model="/ckpt", engine_restart_backoff_s=600.0)
    engine = ExitedEngine()
    engine.log_path, engine.log_tail = None, lambda lines: ""
    state = ServerState(config=config, layout=None, status="ready", engines={"generator": engine},
                        dead={"generator": asyncio.Event()})
    said = {}

    async def one_look() -> None:
        watcher = asyncio.create_task(_watch(state, interval_s=0.001))
        # The watcher marks the engine dead (the event in-flight calls wait on), then, in the same turn, starts the
        # restart task: this waiter was woken first, so it looks before that task's first step.
        dead = asyncio.create_task(state.dead["generator"].wait())
        await asyncio.wait([dead, watcher], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert dead.done() and not watcher.done(), watcher.exception() if watcher.done() else "never marked dead"
        said.update(healing=state.healing("generator"), reason=state.engine_problem("generator"))
        watcher.cancel()
        for task in state.tasks:
            task.cancel()

    asyncio.run(one_look())
    assert said["healing"] and said["reason"].startswith("the generator engine exited with code 1")
    assert "judge-serve is restarting it" in said["reason"]


class StartedEngine:
    """What ``Engine.start`` returns for a restart that came up: it answers at once."""

    owned = True
    url = "http://127.0.0.1:9"
    log_path = pid = None
    command = ()
    spec = "generator-spec"

    def wait_ready(self, timeout_s, stop) -> None:
        return None

    def exit_code(self) -> None:
        return None

    def stop(self) -> None:
        return None


def _dead_generator(**settings) -> ServerState:
    """A ready judge-serve whose generator engine has died: the state ``_watch`` leaves for ``_heal``."""
    config = ServeConfig(model="/ckpt", engine_restart_backoff_s=0.0, **settings)
    engine = ExitedEngine()
    engine.spec, engine.log_path = "generator-spec", None
    return ServerState(config=config, layout=None, status="ready", engines={"generator": engine},
                       dead={"generator": asyncio.Event()},
                       dead_reason={"generator": "the generator engine exited with code 1"})


def _healed(state: ServerState) -> asyncio.Event:
    """Start healing, as judge-serve does when it turns ready; the event is set when judge-serve gives up."""
    fatal = asyncio.Event()
    state.on_fatal = fatal.set
    assert heal_the_dead(state) == ["generator"]
    return fatal


def test_a_restart_that_cannot_start_its_engine_counts_and_past_the_limit_judge_serve_stops(monkeypatch):
    """An engine that cannot even be started (EMFILE: judge-serve out of descriptors) is a failed restart, retried
    within engine_max_restarts like one that did not come up; past them judge-serve is "failed" and on_fatal stops
    it (exit 1): the OSError never ends the heal task unawaited, leaving "ready" for ever over a dead engine. The
    stop names that failure, not the exit (code 1) of the death before it."""
    import errno

    import serve.supervision

    starts = []

    def start(*args, **kwargs):
        starts.append(args)
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(serve.supervision.Engine, "start", start)

    async def heal() -> None:
        state = _dead_generator(engine_max_restarts=3)
        state.last_exit["generator"] = 1
        await asyncio.wait_for(_healed(state).wait(), 60)  # set by on_fatal; the bound only ends a failing test
        assert state.status == "failed" and "engine_max_restarts=3 reached" in state.failure
        assert ("(last failure: the generator engine could not be restarted (OSError: [Errno 24] Too many open files))"
                in state.failure), state.failure
        assert len(starts) == 3 and state.restarts["generator"] == 3

    asyncio.run(heal())


def test_with_no_restarts_allowed_the_first_death_stops_judge_serve_naming_that_death(monkeypatch):
    """engine_max_restarts=0 (the first death is fatal): judge-serve stopped saying the engine "was restarted 0 times
    in a row and never stayed up 600 s", for an engine that died once and was never restarted; /health's 503 said the
    same. The stop names the death, as for any count past the limit, and no restart is tried."""
    import serve.supervision

    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: pytest.fail("restarted"))

    async def heal() -> ServerState:
        state = _dead_generator(engine_max_restarts=0)
        state.last_exit["generator"] = 1
        await asyncio.wait_for(_healed(state).wait(), 60)  # set by on_fatal; the bound only ends a failing test
        return state

    state = asyncio.run(heal())
    assert (state.status, state.failure) == ("failed", "the generator engine died 1 times within 600 s (last failure: "
                                                       "the generator engine exited with code 1); "
                                                       "engine_max_restarts=0 reached, judge-serve stops")
    assert "generator" not in state.restarts


def test_a_hung_engine_past_the_limit_stops_judge_serve_naming_the_hang_not_an_older_exit(monkeypatch):
    """An engine that exited once (code 1), was restarted, came up, then stopped answering /health: the restart's
    503 named the hang, while the give-up message chose its failure by a rule of its own and named the exit code 1
    of the death before. Both name the failure that ended the engine, by one rule."""
    import serve.supervision

    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: pytest.fail("restarted"))
    hang = "the generator engine stopped answering /health (3 probes 5 s apart)"

    async def heal() -> ServerState:
        state = _dead_generator(engine_max_restarts=0)
        state.last_exit["generator"] = 1
        state.hung["generator"] = state.dead_reason["generator"] = hang
        await asyncio.wait_for(_healed(state).wait(), 60)  # set by on_fatal; the bound only ends a failing test
        return state

    state = asyncio.run(heal())
    assert (state.status, state.failure) == ("failed", f"the generator engine died 1 times within 600 s (last "
                                                       f"failure: {hang}); engine_max_restarts=0 reached, judge-serve "
                                                       "stops")


class HangingEngine(StartedEngine):
    """A restarted engine whose load hangs: ``wait_ready`` gives up after its whole timeout, on a fake clock."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def wait_ready(self, timeout_s, stop) -> None:
        from serve.launch import EngineStartError

        self.clock[0] += timeout_s
        raise EngineStartError(f"the generator engine did not answer within {timeout_s:.0f} s")


def _fake_clock(monkeypatch) -> list[float]:
    """serve.supervision's ``time.monotonic`` on a clock the test moves (only that module's view of ``time``)."""
    import types

    import serve.supervision

    clock = [1000.0]
    monkeypatch.setattr(serve.supervision, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    return clock


def test_restarts_that_never_come_up_stop_judge_serve_however_long_each_took(monkeypatch):
    """Each restart's load hangs for engine_start_timeout_s (900 s), longer than engine_restart_window_s (600 s): the
    window never held more than one restart, so judge-serve restarted it for ever, "restarting" on /health. Three
    restarts in a row that never came up (engine_max_restarts=3) stop it (exit 1), naming why."""
    import serve.supervision

    clock = _fake_clock(monkeypatch)
    starts = []
    monkeypatch.setattr(serve.supervision.Engine, "start",
                        lambda *a, **k: starts.append(clock[0]) or HangingEngine(clock))
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)  # no run.json here

    async def heal() -> None:
        state = _dead_generator(engine_max_restarts=3, engine_restart_window_s=600.0, engine_start_timeout_s=900.0)
        fatal = _healed(state)
        await asyncio.wait_for(fatal.wait(), 60)  # the bound only ends a failing test
        assert state.status == "failed"
        assert state.failure.startswith("the generator engine was restarted 3 times in a row and never stayed up 600 s")
        assert "engine_max_restarts=3 reached" in state.failure

    asyncio.run(heal())
    assert starts == [1000.0, 1900.0, 2800.0]  # each 900 s after the last: never two within the 600 s window


def test_a_restart_that_timed_out_loading_is_named_as_the_last_failure_not_the_exit_before_it(monkeypatch):
    """An engine that exited with code 1, then restarts whose loads outlive engine_start_timeout_s: /health's
    last_exit, the 503's reason while it restarts and the give-up message named the exit code 1 of the death before
    them as the last failure. They name the timeout; last_exit holds no code, since the last failure had none."""
    import serve.supervision

    clock = _fake_clock(monkeypatch)
    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: HangingEngine(clock))
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)  # no run.json here
    reasons = []

    async def heal() -> ServerState:
        state = _dead_generator(engine_max_restarts=2, engine_restart_window_s=600.0, engine_start_timeout_s=900.0)
        state.last_exit["generator"] = 1
        state.on_fatal = lambda: None
        real_sleep = asyncio.sleep

        async def sleep(delay):  # the reason the 503 gives during each backoff, read before the restart it precedes
            reasons.append(state.dead_reason["generator"])
            await real_sleep(0)

        monkeypatch.setattr(serve.supervision.asyncio, "sleep", sleep)
        await serve.supervision._heal(state, "generator")
        return state

    state = asyncio.run(heal())
    timed_out = "did not answer /health within engine_start_timeout_s (900 s) after its restart"
    assert reasons[0].startswith("the generator engine exited with code 1; ")
    assert reasons[1].startswith(f"the generator engine {timed_out}; judge-serve is restarting it")
    assert state.status == "failed" and state.failure == (
        "the generator engine was restarted 2 times in a row and never stayed up 600 s (last failure: the generator "
        f"engine {timed_out}); engine_max_restarts=2 reached, judge-serve stops")
    assert state.last_exit.get("generator") is None


def test_a_restart_that_stayed_up_the_window_clears_the_count_of_those_that_did_not(monkeypatch):
    """Two restarts that hung, then one that answers: judge-serve serves it. It stays up engine_restart_window_s
    (600 s), then dies: its death starts a new count (restart 1, none "in a row" before it), not the fourth."""
    import serve.supervision

    clock = _fake_clock(monkeypatch)
    engines = [HangingEngine(clock), HangingEngine(clock), StartedEngine(), StartedEngine()]
    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: engines.pop(0))
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)  # no run.json here

    async def heal() -> tuple[ServerState, str]:
        state = _dead_generator(engine_max_restarts=3, engine_restart_window_s=600.0, engine_start_timeout_s=900.0)
        _healed(state)
        await asyncio.gather(*state.tasks)
        assert state.status == "ready" and state.failed_restarts == {"generator": 3}  # up, not yet proven
        clock[0] += 600.0
        state.dead_reason["generator"] = "the generator engine exited with code 1"
        await serve.supervision._heal(state, "generator")
        return state

    state = asyncio.run(heal())
    assert state.status == "ready" and engines == [] and state.restarts["generator"] == 4
    assert "generator" not in state.dead_reason and state.failed_restarts == {"generator": 1}


class LoadingEngine(StartedEngine):
    """A restarted engine that loads for 700 s on a fake clock (within engine_start_timeout_s), then answers."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def wait_ready(self, timeout_s, stop) -> None:
        self.clock[0] += 700.0


def test_restarts_that_come_up_and_die_at_once_stop_judge_serve_however_long_each_loaded(monkeypatch):
    """Each restart loads for 700 s, longer than engine_restart_window_s (600 s), answers /health, and dies at once
    (on its first batch): the window never held a restart at its death and its coming up cleared the count of
    restarts in a row, so judge-serve restarted it for ever, "ready" between deaths, never exiting 1. Three
    restarts in a row that never stayed up 600 s stop it: restarts at 1000, 1700 and 2400 s (no backoff), and the
    death at 3100 s gives up."""
    import serve.supervision

    clock = _fake_clock(monkeypatch)
    starts = []
    monkeypatch.setattr(serve.supervision.Engine, "start",
                        lambda *a, **k: starts.append(clock[0]) or LoadingEngine(clock))
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)  # no run.json here

    async def die_after_each_restart() -> ServerState:
        state = _dead_generator(engine_max_restarts=3, engine_restart_window_s=600.0, engine_start_timeout_s=900.0)
        state.on_fatal = lambda: None
        for _ in range(10):  # the bound only ends a failing test
            state.dead_reason["generator"] = "the generator engine exited with code 1"
            await serve.supervision._heal(state, "generator")
            if state.status == "failed":
                break
        return state

    state = asyncio.run(die_after_each_restart())
    assert starts == [1000.0, 1700.0, 2400.0]
    assert state.status == "failed" and state.failure == (
        "the generator engine was restarted 3 times in a row and never stayed up 600 s (last failure: the "
        "generator engine exited); engine_max_restarts=3 reached, judge-serve stops")


class KeyedEngine(StartedEngine):
    """A restarted engine that answers at once, under the key it was started with."""

    def __init__(self, api_key: str | None) -> None:
        self.api_key = api_key

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


@pytest.mark.parametrize("shared_key", [None, "the-users-key"])
def test_every_restart_gets_a_fresh_engine_key_unless_the_user_set_one(monkeypatch, shared_key):
    """A dead engine's port is free before judge-serve notices the death, and requests sent there meanwhile carry
    the engine's key: whoever took the port has it. Each restart gets a key of its own (the judging client sends
    it from then on), so that key opens no restarted engine; a key the user set ($VLLM_API_KEY) is the user's to
    share and stays."""
    import serve.supervision
    from serve.engine_auth import ENGINE_KEY_ENV
    from serve.engine_client import EngineClient

    if shared_key is None:
        monkeypatch.delenv(ENGINE_KEY_ENV, raising=False)
    else:
        monkeypatch.setenv(ENGINE_KEY_ENV, shared_key)
    keys = []

    def start(spec, config, log_dir, api_key=None):
        keys.append(api_key)
        return KeyedEngine(api_key)

    monkeypatch.setattr(serve.supervision.Engine, "start", start)
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)  # no run.json here

    async def two_deaths() -> EngineClient:
        state = _dead_generator()
        client = state.clients["generator"] = EngineClient(
            None, "http://127.0.0.1:8", state.dead["generator"], lambda: "dead",
            headers={"Authorization": "Bearer the-dead-engines-key"})
        for _ in range(2):
            state.dead_reason["generator"] = "the generator engine exited with code 1"
            state.dead["generator"].set()
            _healed(state)
            await asyncio.gather(*state.tasks)
            state.tasks.clear()
            assert "generator" not in state.dead_reason
            assert client.headers["Authorization"] == f"Bearer {keys[-1]}"
        return client

    asyncio.run(two_deaths())
    if shared_key is None:
        assert len(keys) == 2 and all(isinstance(k, str) and len(k) >= 32 for k in keys) and keys[0] != keys[1]
    else:
        assert keys == ["the-users-key", "the-users-key"]


def test_a_restart_updates_run_jsons_engines_and_files_no_earlier_launch(monkeypatch, tmp_path):
    """run.json after two restarts: the engines section names the running engine and its restarts; the launch is
    this judge-serve's own, not filed again under earlier_launches per restart (it was: two entries, same pid)."""
    import serve.supervision
    from judge.checkpoints import JudgeKind
    from judge.plumbing.provenance import read_provenance, write_provenance
    from serve.layout import CheckpointLayout

    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: StartedEngine())
    write_provenance(tmp_path, "judge-serve", {"model": "/ckpt"}, engines={"generator": {"restarts": 0}})
    launch = read_provenance(tmp_path)["launch"]

    async def two_deaths() -> None:
        state = _dead_generator()
        state.layout = CheckpointLayout(kind=JudgeKind.SEQ2SEQ, root=tmp_path, generator_dir=tmp_path)
        state.log_dir = tmp_path
        for _ in range(2):
            state.dead_reason["generator"] = "the generator engine exited with code 1"
            _healed(state)
            await asyncio.gather(*state.tasks)
            state.tasks.clear()

    asyncio.run(two_deaths())
    record = read_provenance(tmp_path)
    assert record["earlier_launches"] == [] and record["launch"] == launch
    assert record["engines"] == {"generator": {"url": "http://127.0.0.1:9", "pid": None, "command": [], "log": None,
                                               "restarts": 2}}
    assert record["config"] == {"model": "/ckpt"}


def test_a_restart_no_retry_can_mend_stops_judge_serve_at_once(monkeypatch):
    """An engine whose program is gone (ENOENT) fails the same way every time: judge-serve gives up on the first
    attempt instead of spending its restarts, naming why."""
    import serve.supervision

    starts = []

    def start(*args, **kwargs):
        starts.append(args)
        raise FileNotFoundError(2, "No such file or directory", "python")

    monkeypatch.setattr(serve.supervision.Engine, "start", start)

    async def heal() -> None:
        state = _dead_generator(engine_max_restarts=3)
        await asyncio.wait_for(_healed(state).wait(), 60)
        assert state.status == "failed" and state.failure.startswith("the generator engine could not be restarted")
        assert len(starts) == 1

    asyncio.run(heal())


def test_a_run_record_that_cannot_be_written_does_not_stop_a_restart(monkeypatch, caplog, tmp_path):
    """The restarted engine runs even when run.json cannot be rewritten (a full disk): judge-serve serves it and
    logs that run.json is behind, instead of the heal task dying with the engine marked dead."""
    import errno

    import serve.supervision

    monkeypatch.setattr(serve.supervision.Engine, "start", lambda *a, **k: StartedEngine())

    def full_disk(state) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(serve.supervision, "_update_run_record", full_disk)

    async def heal() -> None:
        state = _dead_generator()
        state.log_dir = tmp_path
        _healed(state)
        await asyncio.gather(*state.tasks)
        assert state.status == "ready" and "generator" not in state.dead_reason and not state.dead["generator"].is_set()
        assert isinstance(state.engines["generator"], StartedEngine)

    asyncio.run(heal())
    assert f"run.json in {tmp_path} could not be rewritten after the generator engine's restart" in caplog.text


def test_a_background_task_that_fails_stops_judge_serve_with_its_traceback_logged(caplog):
    """No task of judge-serve's dies unnoticed: an error nobody expected in the watcher (or a heal, or the start)
    is logged with its traceback, turns judge-serve "failed" and calls on_fatal; while draining it is only logged."""
    from serve.supervision import _background

    async def broken() -> None:
        raise RuntimeError("the watcher broke")

    async def fail_while(status: str) -> tuple[str, bool]:
        state = _dead_generator()
        state.status = status
        fatal = asyncio.Event()
        state.on_fatal = fatal.set
        task = _background(state, broken(), "engine watcher")
        await asyncio.wait({task})  # returns after the task's done callbacks ran: judge-serve's was added first
        return state.status, fatal.is_set()

    assert asyncio.run(fail_while("ready")) == ("failed", True)
    assert "judge-serve's engine watcher failed" in caplog.text and "RuntimeError: the watcher broke" in caplog.text
    assert asyncio.run(fail_while("draining")) == ("draining", False)


# ------------------------------------------------------------------------ the engine's IPC sockets, one folder a start


_SOCKET_STUB = """
import os, socket, sys, time
base = os.environ["VLLM_RPC_BASE_PATH"]
for name in ("a", "b"):  # as vLLM binds ipc://<base>/<uuid4>, and leaves the files when killed
    socket.socket(socket.AF_UNIX).bind(os.path.join(base, name))
with open(sys.argv[1], "w") as said:  # the test's FIFO: it reads this once both sockets are bound
    said.write(base)
time.sleep(600)  # an engine lives until it is stopped
"""


def test_an_engines_ipc_sockets_live_in_its_own_folder_removed_when_it_stops(monkeypatch, tmp_path, request):
    """vLLM puts its ZeroMQ sockets in VLLM_RPC_BASE_PATH (the temporary directory by default) and leaves them there
    when its processes are killed: every engine start added a few to /tmp for good. Each start now gets a folder of
    its own under the user's base, removed with the engine, even when it was killed."""
    from serve.launch import Engine, EngineSpec

    # A short base of its own: a socket's path holds at most 107 bytes, and tmp_path's length grows with pytest's
    # numbering (at pytest-10 and beyond, under an xdist worker, the engine's sockets no longer fit in it).
    base, said = Path(tempfile.mkdtemp(prefix="rpc-", dir="/tmp")), tmp_path / "said"
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    os.mkfifo(said)
    reading = os.open(said, os.O_RDONLY | os.O_NONBLOCK)  # open first: the stub's open for writing then never waits
    monkeypatch.setenv("VLLM_RPC_BASE_PATH", str(base))
    monkeypatch.setattr(serve.launch, "engine_command",
                        lambda spec, config, port: [sys.executable, "-c", _SOCKET_STUB, str(said)])
    spec = EngineSpec(role="generator", model_dir=tmp_path, served_name="m", memory_share=0.5)
    engine = Engine.start(spec, ServeConfig(model=str(tmp_path)), tmp_path)
    try:
        # Readable once the stub has written where it bound both sockets (or at its end, with nothing written).
        assert select.select([reading], [], [], 30)[0], engine.log_tail()
        ipc = Path(os.read(reading, 4096).decode())
    finally:
        os.close(reading)
    assert ipc.parent == base and ipc == engine.ipc_dir and sorted(p.name for p in ipc.iterdir()) == ["a", "b"]
    engine.stop(grace_s=0)  # killed: the sockets' files outlive their processes
    assert not ipc.exists() and list(base.iterdir()) == []


class ServingEngine(StartedEngine):
    """An engine judge-serve started that was serving: its process runs (no exit code), at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()

    def log_tail(self, lines: int) -> str:
        return ""


class LookedAtEngine(ServingEngine):
    """A serving engine that counts the watcher's looks at it (each look begins by asking its exit code), so that a
    test can wait for the looks it needs instead of sleeping through some."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.looks = 0
        self._wanted: tuple[int, asyncio.Event] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def exit_code(self) -> None:
        self.looks += 1
        if self._wanted is not None and self.looks >= self._wanted[0]:
            self._wanted[1].set()
        return super().exit_code()

    def stop(self) -> None:  # called in a worker thread (asyncio.to_thread), hence the loop's threadsafe call
        super().stop()
        if self._wanted is not None:  # counted dead: the watcher looks no more, and a waiting test is told at once
            self._loop.call_soon_threadsafe(self._wanted[1].set)

    def looked_at(self, more: int) -> asyncio.Event:
        """An event set once the watcher has begun ``more`` further looks at this engine, or has stopped it."""
        self._loop = asyncio.get_running_loop()
        self._wanted = (self.looks + more, asyncio.Event())
        return self._wanted[1]


def test_an_engine_whose_port_refuses_connections_counts_as_dead_before_its_supervisor_exits():
    """vLLM's API server killed: its port is free at once, but its supervisor exits only once the engine's other
    processes are gone (up to ORPHAN_GRACE_S, 5 s), and judge-serve watched only that exit; requests sent meanwhile
    carried the engine's key to whatever bound the port. The watcher counts an engine of its own whose port refuses
    connections as dead at its next look: calls to it give up, its tree is stopped and it is restarted. One whose
    port accepts is left alone."""
    import socket

    from judge.plumbing.processes import free_port
    from serve.supervision import _watch

    config = ServeConfig(model="/ckpt", engine_restart_backoff_s=600.0, engine_hang_probes=0)
    with socket.create_server(("127.0.0.1", 0)) as listening:
        gone = ServingEngine(f"http://127.0.0.1:{free_port()}")  # nothing listens there: refused
        alive = LookedAtEngine(f"http://127.0.0.1:{listening.getsockname()[1]}")
        state = ServerState(config=config, layout=None, status="ready", engines={"generator": gone, "pooler": alive},
                            dead={"generator": asyncio.Event(), "pooler": asyncio.Event()})

        async def watch() -> None:
            watcher = asyncio.create_task(_watch(state, interval_s=0.001))
            await asyncio.wait_for(state.dead["generator"].wait(), 30)  # the bound only ends a failing test
            await asyncio.to_thread(gone.stopped.wait, 30)
            # Two whole looks at the live one after the death (a third begun): its port accepts, it stays served.
            await asyncio.wait_for(alive.looked_at(3).wait(), 30)  # the bound only ends a failing test
            watcher.cancel()
            for task in state.tasks:
                task.cancel()

        asyncio.run(watch())
    assert state.dead_reason["generator"].startswith(
        "the generator engine's server is gone (its port refuses connections); judge-serve is restarting it")
    assert gone.stopped.is_set() and "pooler" not in state.dead_reason and not alive.stopped.is_set()


class KilledEngine(ServingEngine):
    """A served engine whose API server was killed (-9): its port refuses, and its supervisor's status, the server's,
    is known once judge-serve has stopped it."""

    def stop(self) -> int:
        self.stopped.set()
        return -9


def test_a_death_seen_at_the_port_is_reported_with_its_exit_code_once_stopped():
    """/health's last_exit stayed None for an engine whose death the port showed first (its supervisor exited only
    after judge-serve stopped it), and every restart message called it gone rather than exited: once stopped, the
    supervisor's status (the server's, -9) is the engine's last exit, and the restart says it exited with it."""
    from judge.plumbing.processes import free_port
    from serve.supervision import _watch

    config = ServeConfig(model="/ckpt", engine_restart_backoff_s=600.0, engine_hang_probes=0)
    gone = KilledEngine(f"http://127.0.0.1:{free_port()}")
    state = ServerState(config=config, layout=None, status="ready", engines={"generator": gone},
                        dead={"generator": asyncio.Event()})

    async def watch() -> None:
        watcher = asyncio.create_task(_watch(state, interval_s=0.001))
        await asyncio.wait_for(state.dead["generator"].wait(), 30)  # the bound only ends a failing test
        await asyncio.to_thread(gone.stopped.wait, 30)
        while "restart 1 of" not in state.dead_reason.get("generator", ""):  # the heal task's next step, no sleep
            await asyncio.sleep(0)
        watcher.cancel()
        for task in state.tasks:
            task.cancel()

    asyncio.run(watch())
    assert state.last_exit["generator"] == -9
    assert state.dead_reason["generator"].startswith(
        "the generator engine exited with code -9; judge-serve is restarting it (restart 1 of")


#: An engine that logs its own arguments as vLLM does ("non-default args", --hf-token's value among them) and dies.
_ARGS_LOGGING_STUB = "import sys\nprint('INFO non-default args:', {'hf_token': sys.argv[2]}, flush=True)\nsys.exit(1)"


def test_a_dead_engines_log_tail_reaches_judge_serves_log_with_its_secrets_redacted(monkeypatch, tmp_path, caplog):
    """The watcher copies a dead engine's log tail to judge-serve's own log (a console, a Slurm output, which the
    log folder's 0700 mode does not cover): the --hf-token value vLLM logs is redacted there, as in a start error."""
    import logging

    from serve.launch import Engine, EngineSpec
    from serve.supervision import _watch

    monkeypatch.setattr(serve.launch, "engine_command", lambda spec, config, port: [
        sys.executable, "-c", _ARGS_LOGGING_STUB, "--hf-token", "hf_SECRETxyz123"])
    spec = EngineSpec(role="generator", model_dir=tmp_path, served_name="m", memory_share=0.5)
    config = ServeConfig(model=str(tmp_path))
    engine = Engine.start(spec, config, tmp_path)
    # It came up, then died while judge-serve was still starting (another engine loading): no start error carries
    # its tail, the watcher's copy is the only one.
    state = ServerState(config=config, layout=None, status="starting", engines={"generator": engine},
                        dead={"generator": asyncio.Event()}, up_at_start={"generator"})

    async def watch_it_die() -> None:
        watcher = asyncio.create_task(_watch(state, interval_s=0.01))
        for _ in range(3000):  # the bound only ends a failing test
            if any("engine log tail" in r.getMessage() for r in caplog.records) or watcher.done():
                break
            await asyncio.sleep(0.01)
        watcher.cancel()

    try:
        with caplog.at_level(logging.ERROR, logger="judge_serve"):
            asyncio.run(watch_it_die())
    finally:
        engine.stop(grace_s=0)
    tails = [r.getMessage() for r in caplog.records if "engine log tail" in r.getMessage()]
    assert tails == ["generator engine log tail:\nINFO non-default args: {'hf_token': '***'}"]
    assert "hf_SECRETxyz123" in (tmp_path / "generator.log").read_text()  # the log itself is the operator's


class SlowToStopEngine(StartedEngine):
    """A restarted engine that answers at once and, once dead, takes engine_stop_grace_s (30 s) to stop: a hung
    engine's tree gets SIGINT, then SIGKILL after the grace."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def stop(self) -> None:
        self.clock[0] += 30.0

    def log_tail(self, lines: int) -> str:
        return ""


def test_a_restart_that_died_within_the_window_counts_however_long_its_stop_took(monkeypatch):
    """Each restart serves 580 s, less than engine_restart_window_s (600 s), then is seen dead; stopping it takes
    30 s. Its life was measured up to the end of that stop (610 s): it "stayed up the window", the count of restarts
    in a row that never did was cleared at each death, and judge-serve restarted it for ever. Measured to the death,
    the restarts at 1000, 1610 and 2220 s (each 580 s of life plus 30 s of stop after the last) are three in a row
    that never stayed up 600 s: the death at 2800 s gives up."""
    import serve.supervision

    clock = _fake_clock(monkeypatch)
    starts = []
    monkeypatch.setattr(serve.supervision.Engine, "start",
                        lambda *a, **k: starts.append(clock[0]) or SlowToStopEngine(clock))
    monkeypatch.setattr(serve.supervision, "_update_run_record", lambda state: None)  # no run.json here

    async def die_580_s_after_each_restart() -> ServerState:
        state = _dead_generator(engine_max_restarts=3, engine_restart_window_s=600.0, engine_stop_grace_s=30.0)
        state.on_fatal, state.engines["generator"].log_tail = (lambda: None), (lambda lines: "")
        for _ in range(10):  # the bound only ends a failing test
            serve.supervision._declare_dead(state, "generator", "the generator engine exited with code 1")
            await asyncio.gather(*state.tasks)
            if state.status == "failed":
                break
            clock[0] += 580.0
        return state

    state = asyncio.run(die_580_s_after_each_restart())
    assert starts == [1000.0, 1610.0, 2220.0]
    assert state.status == "failed" and state.failure.startswith(
        "the generator engine was restarted 3 times in a row and never stayed up 600 s")


def test_a_hung_engine_is_dated_dead_at_its_first_unanswered_probe(monkeypatch):
    """A hung engine is declared dead only after engine_hang_probes (3) unanswered probes, a probe interval apart
    (~30 s by default); how long it stayed up is measured to the first of them, when it had stopped answering
    already, not to the third."""
    import socket
    import types

    import aiohttp

    import serve.supervision
    from serve.supervision import _watch

    clock = [1000.0]

    def monotonic() -> float:
        clock[0] += 1.0
        return clock[0]

    monkeypatch.setattr(serve.supervision, "time", types.SimpleNamespace(monotonic=monotonic))
    probes, dated = [], {}

    class Unanswered:
        async def probe_request(self, method, url, hop):
            probes.append(clock[0])
            raise aiohttp.ClientConnectionError("no answer")

    async def heal(state, role) -> None:
        dated[role] = state.died_at[role]

    monkeypatch.setattr(serve.supervision, "_heal", heal)
    config = ServeConfig(model="/ckpt", engine_probe_interval_s=0.003, engine_hang_probes=3)
    with socket.create_server(("127.0.0.1", 0)) as listening:  # its port accepts: alive, only not answering
        engine = ServingEngine(f"http://127.0.0.1:{listening.getsockname()[1]}")
        state = ServerState(config=config, layout=None, status="ready", engines={"generator": engine},
                            dead={"generator": asyncio.Event()}, http=Unanswered())

        async def watch() -> None:
            watcher = asyncio.create_task(_watch(state, interval_s=0.001))
            await asyncio.wait_for(state.dead["generator"].wait(), 30)  # the bound only ends a failing test
            await asyncio.gather(*state.tasks)
            watcher.cancel()

        asyncio.run(watch())
    for thread in threading.enumerate():  # its tail logged before the next test looks at the log
        if thread.name == "generator engine log tail":
            thread.join(60)
    assert len(probes) == 3 and dated == {"generator": probes[0]}


#: An engine that writes a few lines and dies.
_DYING_STUB = "import sys\nfor n in range(3): print('dying engine line', n, flush=True)\nsys.exit(1)"


def test_a_dead_engines_log_tail_is_its_own_and_the_watcher_never_waits_for_it(monkeypatch, tmp_path, caplog):
    """The tail was read while the watcher waited, in the default thread pool where request planning queues, and
    after the restart task had started: the restarted engine's first lines, appended to the same log, could be read
    as the dead one's. The log's end is taken at the death; the tail is read in a thread of its own, up to there,
    while the watcher goes on: declaring the death returns with the read still held back here."""
    import logging

    import serve.supervision
    from serve.launch import Engine, EngineSpec

    monkeypatch.setattr(serve.launch, "engine_command", lambda spec, config, port: [
        sys.executable, "-c", _DYING_STUB])
    spec = EngineSpec(role="generator", model_dir=tmp_path, served_name="m", memory_share=0.5)
    config = ServeConfig(model=str(tmp_path))
    engine = Engine.start(spec, config, tmp_path)
    engine.proc.proc.wait(timeout=60)
    may_read = threading.Event()
    read = engine.log_tail

    def held_back(*args, **kwargs) -> str:
        may_read.wait(60)  # the bound only ends a failing test
        return read(*args, **kwargs)

    engine.log_tail = held_back
    state = ServerState(config=config, layout=None, status="starting", engines={"generator": engine},
                        dead={"generator": asyncio.Event()}, up_at_start={"generator"})
    try:
        with caplog.at_level(logging.ERROR, logger="judge_serve"):
            serve.supervision._declare_dead(state, "generator", "the generator engine exited with code 1")
            assert state.dead["generator"].is_set()
            with open(tmp_path / "generator.log", "a") as log:  # the restart, appending
                log.write("restarted engine line\n")
            may_read.set()
            for _ in range(3000):  # the bound only ends a failing test
                if any("engine log tail" in r.getMessage() for r in caplog.records):
                    break
                threading.Event().wait(0.01)
    finally:
        may_read.set()
        engine.stop(grace_s=0)
    tails = [r.getMessage() for r in caplog.records if "engine log tail" in r.getMessage()]
    assert tails == ["generator engine log tail:\ndying engine line 0\ndying engine line 1\ndying engine line 2"]


def test_a_log_tail_that_cannot_be_read_is_said_in_judge_serves_log_not_on_stderr(monkeypatch, caplog):
    """The tail is read in a thread of its own: an exception there went to threading.excepthook (stderr, a traceback
    beside judge-serve's log, not in it). It is logged in judge-serve's log now, naming the engine and its log."""
    import logging

    import serve.supervision

    hooked = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)

    class UnreadableLog:
        log_path = Path("/logs/generator.log")  # not there: its size unknown, the whole tail asked for

        def log_tail(self, n_lines: int, end: int | None = None) -> str:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    with caplog.at_level(logging.ERROR, logger="judge_serve"):
        serve.supervision._log_the_tail("generator", UnreadableLog())
        for thread in threading.enumerate():
            if thread.name == "generator engine log tail":
                thread.join(60)  # the bound only ends a failing test
    said = [(r.getMessage(), r.exc_info[0] if r.exc_info else None) for r in caplog.records]
    assert said == [("the generator engine's log tail could not be read (log: /logs/generator.log)", UnicodeDecodeError)]
    assert hooked == []


def test_an_engine_that_dies_before_it_came_up_leaves_its_tail_to_the_start_error(monkeypatch):
    """The start's EngineStartError carries the dead engine's log tail, and judge-serve logs it as it fails: the
    watcher logged the same tail as well, and a first start on a machine too small for the engine showed vLLM's
    last lines twice. The watcher now holds such a tail back until the start ends: the engine the start's error
    names is not logged again, whether the watcher saw it die before or after the start did; any other is. Once
    ready, or for an engine that came up during the start, the watcher's copy is the only one and is logged at once."""
    import serve.supervision

    logged: list[str] = []
    monkeypatch.setattr(serve.supervision, "_log_the_tail", lambda role, engine: logged.append(role))
    engines = {"generator": ExitedEngine(), "pooler": ExitedEngine(), "attached": AttachedEngine()}
    starting = ServerState(config=ServeConfig(model="/ckpt"), layout=None, status="starting", engines=engines,
                           dead={role: asyncio.Event() for role in engines}, up_at_start={"pooler"})
    for role in engines:
        serve.supervision._declare_dead(starting, role, f"the {role} engine exited with code 1")
    assert logged == ["pooler"]  # the generator's is held; an attached engine's log is not judge-serve's
    assert all(starting.dead[role].is_set() for role in engines)  # declared dead all the same
    assert starting.tails_held == {"generator"}

    logged.clear()
    failed = ServerState(config=ServeConfig(model="/ckpt"), layout=None, status="failed",
                         engines={"generator": ExitedEngine(), "pooler": ExitedEngine()},
                         dead={"generator": asyncio.Event(), "pooler": asyncio.Event()}, tail_in_error="generator")
    # The start saw the generator die first and failed with its tail; the watcher's next turn sees both dead.
    serve.supervision._declare_dead(failed, "generator", "the generator engine exited with code 1")
    serve.supervision._declare_dead(failed, "pooler", "the pooler engine exited with code 1")
    assert logged == ["pooler"]


class FailingToStart(ExitedEngine):
    """An engine whose start wait fails at once (``fails``) or, like the engine still loading beside it, once the
    start is abandoned."""

    def __init__(self, role: str, fails: bool) -> None:
        super().__init__()
        self.role, self.fails = role, fails

    def wait_ready(self, timeout_s, should_stop) -> None:
        from serve.launch import EngineStartError

        while not self.fails and not should_stop():
            threading.Event().wait(0.01)
        raise EngineStartError(f"{self.role} engine exited with code 1 while starting", 1, self.role)


def test_a_failed_start_logs_the_tails_held_back_but_the_one_its_error_carries(monkeypatch):
    """Both engines died before they came up, the watcher holding both tails back: the pooler's error ends the
    start, carrying its tail; the generator's, carried by no error, is logged once."""
    import serve.supervision

    logged: list[str] = []
    monkeypatch.setattr(serve.supervision, "_log_the_tail", lambda role, engine: logged.append(role))
    monkeypatch.setattr(serve.supervision, "load_tokenizer", lambda root: None)
    engines = {"generator": FailingToStart("generator", fails=False), "pooler": FailingToStart("pooler", fails=True)}
    # A layout only for the tokenizer's folder (load_tokenizer is stubbed); a fingerprint given, so none is computed
    layout = types.SimpleNamespace(root=Path("/ckpt"))
    state = ServerState(config=ServeConfig(model="/ckpt"), layout=layout, status="starting", engines=engines,
                        dead={role: asyncio.Event() for role in engines}, weights_fingerprint="not read")
    for role in engines:
        serve.supervision._declare_dead(state, role, f"the {role} engine exited with code 1")
    assert logged == [] and state.tails_held == {"generator", "pooler"}
    asyncio.run(serve.supervision._bring_up(state))
    assert state.status == "failed" and state.failure.startswith("pooler engine exited with code 1 while starting")
    assert logged == ["generator"] and state.tails_held == set()


def test_an_engine_start_error_names_its_engine(monkeypatch, tmp_path):
    """What the start reads to leave that engine's tail to the error (``_log_held_tails``)."""
    from serve.launch import Engine, EngineSpec, EngineStartError

    monkeypatch.setattr(serve.launch, "engine_command", lambda spec, config, port: [sys.executable, "-c", "exit(3)"])
    spec = EngineSpec(role="pooler", model_dir=tmp_path, served_name="m", memory_share=0.5)
    engine = Engine.start(spec, ServeConfig(model=str(tmp_path)), tmp_path)
    try:
        with pytest.raises(EngineStartError) as raised:
            engine.wait_ready(60)
    finally:
        engine.stop(grace_s=0)
    assert raised.value.role == "pooler" and raised.value.exit_code == 3
