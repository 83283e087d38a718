"""A judge server for a checkpoint folder or hub id, started for the length of a ``judge-eval run``.

judge-serve when it is installed (it serves seq2seq and regression judges), else vLLM's OpenAI server (seq2seq
only), under ``judge.plumbing.processes``' supervisor: its whole process tree ends with the run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from judge.plumbing.config_files import ConfigError

if TYPE_CHECKING:
    from eval.judging.config import RunConfig

__all__ = ["local_server", "served_name"]

log = logging.getLogger("judge_eval.local_server")


def _judge_serve_command() -> list[str] | None:
    import shutil

    beside = Path(sys.executable).parent / "judge-serve"  # the venv's own script first, then PATH
    found = str(beside) if beside.exists() else shutil.which("judge-serve")
    return [found] if found else None


def served_name(checkpoint: str | Path) -> str:
    """The name a checkpoint is served under when no model name is set, as judge-serve names it alone: a judge-train
    export as its run (``judge.checkpoints.export_run_name``); anything else, a hub id included, as its folder's
    name."""
    from judge.checkpoints import export_run_name

    return export_run_name(checkpoint) or Path(checkpoint).name


@contextlib.contextmanager
def local_server(checkpoint: Path, config: RunConfig, out: Path, name: str = "") -> Iterator[tuple[str, str]]:
    """Start judge-serve (or vLLM's OpenAI server) on a checkpoint folder or hub id; stop it on exit.

    Args:
        name: the name to serve it under; "" for ``config.model``, else ``served_name``.

    Yields:
        ``(base_url, served model name)``.

    Raises:
        ConfigError: a regression checkpoint without judge-serve (vLLM alone cannot produce its verdicts).
        EndpointUnusable: the server exited or did not answer within ``server_timeout_s``: one line naming its
            log (``judge-eval`` prints it, exit code 4).
    """
    from judge.checkpoints import CheckpointNotFound, judge_kind, resolve_checkpoint
    from judge.plumbing.processes import ProcessStartError, free_port, start_process
    from judge.plumbing.provenance import redact_argv
    from judge.plumbing.retry import EndpointUnusable

    name = name or config.model or served_name(checkpoint)  # a hub id's name, not its snapshot's revision
    try:
        checkpoint = resolve_checkpoint(checkpoint)
    except CheckpointNotFound as err:
        raise ConfigError(f"judge: {err}") from err
    try:
        kind = judge_kind(checkpoint)  # the export manifest first, as judge-serve decides
    except ValueError as err:
        raise ConfigError(f"judge: {err}") from err
    serve_cmd = _judge_serve_command() if config.server in ("auto", "judge-serve") else None
    if config.server == "judge-serve" and serve_cmd is None:
        raise ConfigError("server: judge-serve is not installed (install pollux-judge, or use server: vllm)")
    if serve_cmd is None and kind == "regression":
        raise ConfigError(f"judge: {checkpoint} is a regression checkpoint; it needs judge-serve (generator + score "
                          "head), which is not installed")
    port = free_port()
    common = ["--model", str(checkpoint), "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port)]
    if serve_cmd is not None:
        cmd, ready_path = [*serve_cmd, *common, *map(str, config.server_args)], "/ready"
    else:
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", *common, *map(str, config.server_args)]
        ready_path = "/v1/models"
    log.info("starting %s", " ".join(redact_argv(cmd)))
    env = {**os.environ, **{str(k): str(v) for k, v in config.server_env.items()}}
    # Under judge.plumbing.processes' supervisor: the server's whole tree (vLLM forks an engine process) ends with the run,
    # with this process if it is killed, and with the server if it dies.
    server = start_process(cmd, log_path=out / "server.log", env=env, append_log=True, grace_s=60, name="the judge server")
    root = f"http://127.0.0.1:{port}"
    try:
        try:
            server.wait_ready(root + ready_path, config.server_timeout_s, interval_s=1.0)
        except ProcessStartError as err:
            # One line and the log to read (appended to by every launch), not its tail as a traceback's message.
            raise EndpointUnusable(f"{str(err).splitlines()[0]} See its log: {out / 'server.log'}") from err
        yield root + "/v1", name
    finally:
        server.stop()
