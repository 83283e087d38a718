"""judge-serve, for real, over tiny judges: the process, its logs, the fixtures' inputs (registered in
tests/conftest.py); the fixtures that start judge-serve are in tests/integration/conftest.py.

Fixtures (the first four and the last in tests/integration/conftest.py):
    judge_servers        both servers below, started together once per session
    seq2seq_server       judge-serve on the tiny causal judge; it starts its own vLLM generating engine
    regression_server    judge-serve on a regression export (classifier + ``generator/`` + ``pollux_judge.json``,
                         the layout ``train/export.py`` writes); it starts its own vLLM pooling engine and, to
                         keep the suite inside its time budget on 2 cores, attaches to the seq2seq server's
                         generating engine, which serves the very weights ``export/generator`` holds
    tiny_regression_export  the regression export folder
    released_regression_dir  a tiny judge in the released ``-r`` layout (``tests.support.tiny_released``)
    released_hub_cache       a Hugging Face cache holding it as ``ai-forever/pollux-judge-7b-r``
    released_regression_server  judge-serve started with ``--model ai-forever/pollux-judge-7b-r`` (offline, from
                         that cache): its own generating engine on the derived causal view and a pooling engine on
                         the derived classifier view

Reusable: ``start_judge_serve(model_dir, args=...)`` starts ``python -m serve.cli`` and stops it (and any engine it
left behind) on exit. Every judge-serve here runs through ``judge.plumbing.processes`` (supervised, with a parent-death
signal): a pytest that dies, ``kill -9`` included, takes its servers and their engines with it.
``marked_processes(marker)`` lists the live processes started with ``JUDGE_TEST_MARKER=<marker>`` in their
environment (a server's whole tree inherits it), for tests that count leftovers. ``frozen(pgid)`` and
``requests_held_at(port)`` hold requests in flight at an engine until the test lets them go: a test that depends on
an order of events makes it happen rather than waiting and hoping.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from judge.plumbing.processes import (TCP_ESTABLISHED, ManagedProcess, free_port, group_members, http_status,
                                      socket_inodes, start_process, tcp_sockets)
from tests.support.fixtures_models import TEST_KV_CACHE

API_KEY = "test-key"
#: The key every test judge-serve starts its engines with (``$VLLM_API_KEY``, serve.launch.engine_key): one for all,
#: so the regression server can attach to the seq2seq server's engine, and tests that call an engine directly can.
ENGINE_KEY = "test-engine-key"
MODEL_NAME = "tiny-judge"
#: Seconds to wait for /ready: an idle 2-core machine starts a tiny engine in about 45 s with --enforce-eager;
#: two engines start at once here, beside other test processes.
READY_TIMEOUT_S = 420.0
#: Flags every test server gets: the CPU settings that start fast (eager fp32), a small KV cache per engine
#: (``TEST_KV_CACHE``), short generations, and constrained feedback short enough for a random model to finish a
#: verdict within max_tokens, masked by llguidance as configs/serve/tiny-cpu.yaml has it (for less CPU than
#: xgrammar's: docs/performance.md).
TEST_FLAGS = (
    "--served-model-name", MODEL_NAME,
    "--api-key", API_KEY,
    "--enforce-eager",
    "--dtype", "float32",
    "--max-model-len", "2048",
    "--engine-args", json.dumps(["--kv-cache-memory-bytes", TEST_KV_CACHE]),
    "--max-tokens", "48",
    "--feedback-max-chars", "16",
    "--structured-outputs-backend", "guidance",
    "--engine-start-timeout-s", str(int(READY_TIMEOUT_S)),
    "--no-access-log",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class JudgeServer:
    """A running judge-serve.

    Attributes:
        root_url: ``http://127.0.0.1:PORT``; base_url: the same + ``/v1`` (for the openai client).
        api_key, model: what clients send.
        pid: judge-serve's own process id (its supervisor's child).
        run_dir: its ``--log-dir`` (``run.json``, engine logs); log_path: its own output.
    """

    root_url: str
    base_url: str
    api_key: str
    model: str
    pid: int
    run_dir: Path
    log_path: Path
    proc: subprocess.Popen | None = dataclasses.field(default=None, compare=False, repr=False)

    def run_record(self) -> dict:
        return json.loads((self.run_dir / "run.json").read_text(encoding="utf-8"))

    def engine_url(self, role: str) -> str:
        return self.run_record()["engines"][role]["url"]

    def log_tail(self, n: int = 80) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


#: The environment variable a test server's whole process tree carries (``marked_processes``).
MARKER_ENV = "JUDGE_TEST_MARKER"


def process_titles(pgid: int) -> list[bytes]:
    """The first word of each live process's command line in process group ``pgid``: vLLM titles its processes
    ``VLLM::EngineCore``, ``VLLM::Worker``; a process that ended meanwhile is left out."""
    titles = []
    for pid in group_members(pgid):
        with contextlib.suppress(OSError):
            titles.append(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0])
    return titles


def marked_processes(marker: str) -> list[int]:
    """Live (not zombie) processes whose environment holds ``JUDGE_TEST_MARKER=<marker>``."""
    needle = f"{MARKER_ENV}={marker}".encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{entry}/environ").read_bytes() + b"\0":
                stat = Path(f"/proc/{entry}/stat").read_text()
                if stat[stat.rfind(")") + 2] != "Z":
                    found.append(int(entry))
    return found


def wait_until_gone(marker: str, timeout_s: float = 60.0) -> list[int]:
    """Wait up to ``timeout_s`` for every process marked ``marker`` to end; returns those still alive."""
    deadline = time.monotonic() + timeout_s
    while (left := marked_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def server_metric(url: str, name: str) -> float:
    """A Prometheus counter of the vLLM engine at ``url`` (its root), summed over its labels:
    ``vllm:request_success_total`` counts the requests an engine finished. judge-serve's own ``/metrics`` (its
    generating engine's) is behind its key: read the engine's."""
    import httpx

    # judge-serve's engines answer /metrics only with their key (serve.engine_auth); one started otherwise ignores it
    response = httpx.get(url + "/metrics", timeout=30, headers={"Authorization": f"Bearer {ENGINE_KEY}"})
    response.raise_for_status()  # a 401 must not read as a counter of 0
    text = response.text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


def requests_held_at(port: int, *, from_pid: int | None = None) -> int:
    """Connections to local ``port`` holding bytes its server has not read (ESTABLISHED, receive queue not empty),
    only those opened by process ``from_pid`` when given. While that server is frozen (:func:`frozen`), each is a
    request sent to it and not yet taken: how a test knows a request is in flight at an engine without timing
    anything. ``from_pid`` leaves out other clients of a shared engine (another judge-serve's /health probes)."""
    table = tcp_sockets() or []
    client_ports = None
    if from_pid is not None:
        inodes = socket_inodes([from_pid])
        client_ports = {s.local_port for s in table if s.inode in inodes and s.remote_port == port}
    return sum(
        1 for s in table
        if s.local_port == port and s.state == TCP_ESTABLISHED and s.rx_queue > 0
        and (client_ports is None or s.remote_port in client_ports)
    )  # fmt: skip


@contextlib.contextmanager
def frozen(process_group: int) -> Iterator[None]:
    """SIGSTOP a whole process group (an engine's tree: its ``run.json`` pid) for the block, SIGCONT after it.

    A frozen engine answers nothing, so a request sent to it is in flight until the test thaws it: the barrier that
    puts a cancel, a SIGTERM or a timeout before the answer on any machine. Keep the block short where another
    judge-serve is attached to the engine (its watcher gives up on an engine after two missed /health, ~10 s).
    """
    os.killpg(process_group, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process_group, signal.SIGCONT)


class JudgeServeProcess:
    """A judge-serve subprocess (supervised: see ``judge.plumbing.processes``) and its teardown."""

    def __init__(
        self,
        model_dir: Path,
        args: Sequence[str],
        run_dir: Path,
        env: dict | None = None,
        *,
        production_engines: bool = False,
    ):
        """``production_engines``: start vLLM as judge-serve does by default (a worker process per engine); else
        the tests' engines run the model in their engine-core process (``--cpu-worker-in-engine``), 20-40 s less
        per start."""
        self.port = free_port()
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = run_dir / "judge-serve.log"
        cmd = [
            sys.executable, "-m", "serve.cli", "--model", str(model_dir), "--port", str(self.port),
            "--log-dir", str(run_dir), *TEST_FLAGS, *(() if production_engines else ("--cpu-worker-in-engine",)), *args,
        ]  # fmt: skip
        full_env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_API_KEY": ENGINE_KEY,
            **(env or {}),
        }
        self.managed: ManagedProcess = start_process(
            cmd, log_path=self.log_path, env=full_env, cwd=Path(__file__).parents[2], name="judge-serve", grace_s=60.0
        )
        self.proc = self.managed.proc
        self.server = JudgeServer(
            root_url=f"http://127.0.0.1:{self.port}",
            base_url=f"http://127.0.0.1:{self.port}/v1",
            api_key=API_KEY,
            model=MODEL_NAME,
            pid=self._main_pid(),
            run_dir=run_dir,
            log_path=self.log_path,
            proc=self.proc,
        )

    def _main_pid(self, timeout_s: float = 30.0) -> int:
        deadline = time.monotonic() + timeout_s
        while (pid := self.managed.main_pid()) is None:
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"judge-serve's supervisor started nothing in {timeout_s:.0f} s\n{self.logs()}")
            time.sleep(0.02)
        return pid

    def wait_run_record(self, timeout_s: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(OSError, json.JSONDecodeError):
                return self.server.run_record()
            time.sleep(0.2)
        raise RuntimeError(f"judge-serve wrote no run.json in {timeout_s:.0f} s\n{self.server.log_tail()}")

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> JudgeServer:
        deadline = time.monotonic() + timeout_s
        while http_status(self.server.root_url + "/ready") != 200:
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"judge-serve not ready within {timeout_s:.0f} s\n{self.logs()}")
            time.sleep(0.5)
        return self.server

    def _check_alive(self) -> None:
        if self.managed.exit_code() is not None:
            raise RuntimeError(f"judge-serve exited with code {self.managed.exit_code()}\n{self.logs()}")

    def logs(self) -> str:
        """The tails of judge-serve's log and of each engine's, for a failure message."""
        parts = [f"--- judge-serve log:\n{self.server.log_tail()}"]
        for engine_log in sorted(self.run_dir.glob("*.log")):
            if engine_log != self.log_path:
                parts.append(f"--- {engine_log.name}:\n" + "\n".join(engine_log.read_text(errors="replace").splitlines()[-60:]))
        return "\n".join(parts)

    def stop(self, grace_s: float = 60.0) -> None:
        """SIGTERM judge-serve (it drains and stops its engines); SIGKILL its whole tree after ``grace_s``. Its
        engines' own supervisors take them down with it if it dies first; waits (30 s at most) until they have."""
        engines = self.engine_pgids()
        self.managed.stop(grace_s)
        deadline = time.monotonic() + 30
        while any(group_members(pgid) for pgid in engines) and time.monotonic() < deadline:
            time.sleep(0.2)

    def engine_pgids(self) -> list[int]:
        with contextlib.suppress(OSError, json.JSONDecodeError, KeyError):
            return [e["pid"] for e in self.server.run_record()["engines"].values() if e.get("pid")]
        return []


@contextlib.contextmanager
def start_judge_serve(model_dir: str | Path, *, args: Sequence[str] = (), run_dir: str | Path | None = None) -> Iterator[JudgeServer]:
    """Start ``judge-serve`` on a checkpoint with the test flags plus ``args``, wait for /ready, stop it on exit."""
    scratch = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="judge-serve-test-"))
    process = JudgeServeProcess(Path(model_dir), args, scratch)
    try:
        yield process.wait_ready()
    finally:
        process.stop()


@pytest.fixture(scope="session")
def tiny_regression_export(tmp_path_factory, tiny_causal_dir, tiny_regression_dir) -> Path:
    """A regression export in train/export.py's layout, from the tiny builder's models.

    The classifier and the generator are two separately initialised tiny models here (a trained export shares one
    backbone); the serving path, which is what these tests pin, is the same.
    """
    export = tmp_path_factory.mktemp("regression-export") / "export"
    export.mkdir()
    for path in tiny_regression_dir.iterdir():
        (export / path.name).symlink_to(path)
    (export / "generator").symlink_to(tiny_causal_dir, target_is_directory=True)
    manifest = {"mode": "regression", "prompt_version": "pollux-ru-v1", "generator": "generator", "score_head": "score"}
    (export / "pollux_judge.json").write_text(json.dumps(manifest), encoding="utf-8")
    return export


#: The hub id the tiny released -r judge is cached under (the real one's).
RELEASED_R_ID = "ai-forever/pollux-judge-7b-r"


@pytest.fixture(scope="session")
def released_regression_dir(tmp_path_factory, qwen_tokenizer) -> Path:
    """A tiny judge in the released -r layout; its stand-in custom code writes ``<dir>.imported`` if imported."""
    base = tmp_path_factory.mktemp("released-r")
    from tests.support.tiny_released import build_released_regression

    return build_released_regression(
        base / "pollux-judge-7b-r", seed=3, head_bias=0.75, tokenizer=qwen_tokenizer, import_sentinel=base / "imported"
    )


@pytest.fixture(scope="session")
def released_hub_cache(tmp_path_factory, released_regression_dir) -> Path:
    """A hub cache (``HF_HUB_CACHE``) holding the tiny -r judge as ``ai-forever/pollux-judge-7b-r``."""
    from tests.support.tiny_released import add_to_hub_cache

    cache = tmp_path_factory.mktemp("hf-hub-cache")
    add_to_hub_cache(released_regression_dir, cache, RELEASED_R_ID)
    return cache
