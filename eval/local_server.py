"""A judge server for a checkpoint folder or hub id, started for the length of a ``judge-eval run``.

judge-serve when it is installed (it serves seq2seq and regression judges), else vLLM's OpenAI server (seq2seq
only); stopped, with its whole process group, when the run ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from judge.config_files import ConfigError

if TYPE_CHECKING:
    from eval.run import RunConfig

__all__ = ["local_server", "checkpoint_kind"]

log = logging.getLogger("judge_eval.local_server")


def checkpoint_kind(folder: Path) -> str:
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
    kind = checkpoint_kind(checkpoint)
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


