"""judge-serve's supervision decisions that need no engine: which dead engines get healed when judge-serve turns
ready. Engines dying and healing for real: tests/integration/serving/test_serve_faults.py."""

from __future__ import annotations

import asyncio
import threading

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
