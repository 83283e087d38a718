"""A judge server for a checkpoint folder or hub id, started for the length of a ``judge-eval run``.

judge-serve when it is installed (it serves seq2seq and regression judges; ``_judge_serve_command`` finds the one
installed with this package), else vLLM's OpenAI server (seq2seq only), under ``judge.plumbing.processes``' supervisor: its whole process tree ends with the run.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from judge.plumbing.config_files import ConfigError

if TYPE_CHECKING:
    from eval.judging.config import RunConfig

__all__ = ["local_server", "served_name", "start_failure_reason", "starts_judge_serve", "StartWait", "READY_ASK_S",
           "WAIT_REPORT_S"]

log = logging.getLogger("judge_eval.local_server")


#: How many of a failed start's last log lines ``start_failure_reason`` reads (a traceback ends within them).
_REASON_LINES = 200

#: judge-serve's own one-line refusals (``judge-serve: config file ... not found``, argparse's ``judge-serve: error:
#: unrecognized arguments: ...``), its start failure as it logs it, its hint for a CPU start, and a traceback's last
#: line (``ValueError: ...``: vLLM's OpenAI server alone, or anything judge-serve did not catch).
_OWN_REFUSAL = re.compile(r"^judge-serve: (?:error: )?(.+)$")
_CANNOT_START = re.compile(r"judge-serve cannot start: (.+)$")
_CPU_HINT = re.compile(r"start it with --config (\S+)")
_TRACEBACK_END = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): .+$")
#: judge-serve's line naming the temporary engine-log folder it keeps after a failed start (``serve.supervision``).
_KEPT_LOGS = re.compile(r"kept the temporary log folder (.+?): judge-serve failed")


def start_failure_reason(log: str, exit_code: int | None) -> str:
    """Why a judge server that exited while starting with ``exit_code`` did, in one line, from the end of its log:
    for exit code 2 (a refusal of its arguments), judge-serve's own last line; else its "cannot start" line (with
    its advice to start on a CPU with the CPU config, when given), else a traceback's last line; "" when the log
    says none of these, or the server did not exit (a timeout: a traceback it logged may be one it recovered from).

    judge-serve also writes a few warnings as ``judge-serve: ...`` lines before its logging is set up (a key typed
    into its settings): only a refusal's exit code makes such a line the reason."""
    if exit_code is None:
        return ""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    if exit_code == 2:
        for line in reversed(lines):
            if found := _OWN_REFUSAL.match(line):
                return f"judge-serve: {found.group(1)}"
    for line in lines:
        if found := _CANNOT_START.search(line):
            hint = next((h.group(1) for h in map(_CPU_HINT.search, reversed(lines)) if h), "")
            # judge-serve's advice names its own flag; judge-eval passes it on through --server-args
            advice = f"; on a CPU, give judge-serve its CPU config: --server-args '[\"--config\", \"{hint}\"]'"
            return f"judge-serve cannot start: {found.group(1).rstrip('.')}" + (advice if hint else "")
    return next((line for line in reversed(lines) if _TRACEBACK_END.match(line)), "")


#: How often, in seconds, ``judge-eval run`` says it is still waiting for the judge server it started: a CPU start
#: of judge-serve's engines takes minutes, during which nothing else is said.
WAIT_REPORT_S = 30.0

#: The longest, in seconds, a wait line waits for judge-serve's /ready to say why it is not ready: asked once per
#: line, so the wait loop's polls keep their pace.
READY_ASK_S = 1.0

#: The most of a /ready answer read: judge-serve's is one short JSON object.
_READY_BYTES = 1 << 16


def _not_ready_reason(url: str) -> str:
    """What judge-serve's /ready at ``url`` says while its HTTP app is up and its engines are not (``starting: the
    engines are still starting``: its status, and its detail when it gives one); "" when nothing answers within
    ``READY_ASK_S``, the answer is no JSON object, or it says ready."""
    try:
        with urllib.request.urlopen(url, timeout=READY_ASK_S) as resp:
            raw = resp.read(_READY_BYTES)
    except urllib.error.HTTPError as err:  # its 503 carries the reason
        try:
            raw = err.read(_READY_BYTES)
        except (OSError, ValueError, http.client.HTTPException):  # its body cut short (IncompleteRead)
            return ""
        finally:
            err.close()
    # HTTPException: something that is no HTTP server on the port (BadStatusLine), or an answer cut short
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
        return ""
    try:
        body = json.loads(raw)
    except ValueError:
        return ""
    status = body.get("status") if isinstance(body, dict) else None
    if not isinstance(status, str) or not status or status == "ready":
        return ""
    detail = body.get("detail")
    return f"{status}: {detail}" if isinstance(detail, str) and detail else status


class StartWait:
    """What ``judge-eval run`` says while the judge server it started comes up: once that it waits (for how long at
    most, and the log to read meanwhile), then a line every ``every_s`` with the time waited and the log's last line,
    and the time it took once the server answers. With ``ready_url`` (judge-serve's /ready), a line also says what
    that route answers while it is not ready: uvicorn logs "Application startup complete." as soon as judge-serve's
    HTTP app is up, minutes before its engines have loaded, and that log line alone reads as a server that is up.

    ``poll`` is the ``on_poll`` of ``judge.plumbing.processes.ManagedProcess.wait_ready``; ``clock`` is
    ``time.monotonic`` unless given.
    """

    def __init__(self, server, timeout_s: float, log_path: Path, *, every_s: float = WAIT_REPORT_S,
                 clock: Callable[[], float] | None = None, ready_url: str = "") -> None:
        self.server, self.timeout_s, self.log_path, self.every_s = server, timeout_s, log_path, every_s
        self.ready_url = ready_url
        self.clock = clock or time.monotonic
        self.started = self.clock()
        self.next_report = self.started + every_s

    def begin(self) -> None:
        from judge.plumbing.console_logging import visible

        # --out names the folder: its path as a terminal shows it, whole, so that it can still be opened
        log.info("waiting for the judge server to answer (up to %.0f s, server_timeout_s); its log: %s",
                 self.timeout_s, visible(self.log_path, sys.maxsize))

    def poll(self) -> None:
        now = self.clock()
        if now < self.next_report:
            return
        while self.next_report <= now:  # one line however long a poll took
            self.next_report += self.every_s
        from judge.plumbing.console_logging import visible

        reason = _not_ready_reason(self.ready_url) if self.ready_url else ""
        last = self.server.log_tail(1).strip()
        log.info("still waiting for the judge server: %.0f s of up to %.0f s%s%s", now - self.started, self.timeout_s,
                 f"; judge-serve answers but is not ready ({visible(reason, 200)})" if reason else "",
                 f"; its log's last line: {visible(last, 200)}" if last else "")

    def done(self) -> None:
        log.info("the judge server answered after %.0f s", self.clock() - self.started)


def _judge_serve_command() -> list[str] | None:
    """The judge-serve installed with this judge-eval. Where the packages are imported from the working folder (a
    checkout run as ``python -m eval.cli`` from its root), this interpreter running that folder's ``serve.cli``: the
    console script beside the interpreter imports ``serve`` from wherever its environment was installed from, which
    may be another checkout sharing the environment. Else that console script (its environment's), else this
    interpreter running ``serve.cli``, which ships in the same distribution: an install may leave the scripts where
    neither this interpreter's folder nor PATH has them (``pip install --user`` without ``~/.local/bin`` on PATH, a
    ``--target`` install on PYTHONPATH), and a judge-serve found on PATH may be another environment's code. ``-P``
    keeps a ``serve.py`` in the working folder from standing in for the package. None when ``serve`` cannot be
    imported."""
    import importlib.util

    spec = importlib.util.find_spec("serve")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))).resolve().parent
    try:
        here = Path.cwd().resolve()
    except OSError:  # a working folder removed since: nothing there to import from
        here = None
    if root == here:
        return [sys.executable, "-m", "serve.cli"]
    beside = Path(sys.executable).parent / "judge-serve"
    if beside.exists():
        return [str(beside)]
    return [sys.executable, "-P", "-m", "serve.cli"]


def starts_judge_serve(config: RunConfig) -> bool:
    """Whether ``local_server`` would start judge-serve (not vLLM's own server) for ``config``: its ``server`` allows
    it and judge-serve is installed."""
    return config.server in ("auto", "judge-serve") and _judge_serve_command() is not None


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
        ConfigError: a regression checkpoint without judge-serve (vLLM alone cannot produce its verdicts), or a
            server that exited with code 2 (its usage error: the server arguments given): as below, exit code 2.
        EndpointUnusable: the server exited or did not answer within ``server_timeout_s``: one line with the reason
            its log gives (``start_failure_reason``) and naming the log (``judge-eval`` prints it, exit code 4).
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
        given = {str(arg).split("=", 1)[0].replace("_", "-") for arg in config.server_args}
        if config.verdict_format != "auto" and "--verdict-format" not in given:
            # the format judge-eval was told is the server's to render and parse: started without it, judge-serve
            # chose its own and the run was refused only once the engines had loaded
            common += ["--verdict-format", config.verdict_format]
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
    waiting = StartWait(server, config.server_timeout_s, out / "server.log",
                        ready_url=root + ready_path if serve_cmd is not None else "")
    waiting.begin()
    try:
        try:
            server.wait_ready(root + ready_path, config.server_timeout_s, interval_s=1.0, on_poll=waiting.poll)
            waiting.done()
        except ProcessStartError as err:
            # One line and the log to read (appended to by every launch), not its tail as a traceback's message; with
            # the reason the log gives, which was one line among dozens of a traceback's.
            said = str(err).splitlines()[0].rstrip(".")
            reason = start_failure_reason(server.log_tail(_REASON_LINES), err.exit_code)
            if reason:
                said += ": " + reason + ("" if reason.endswith((".", "?", "!")) else ".")
            message = f"{said}{'' if reason else '.'} See its log: {out / 'server.log'}"
            if kept := _KEPT_LOGS.search(server.log_tail(_REASON_LINES)):  # else left in the temporary dir unsaid
                message += f"; its engines' logs are kept in {kept.group(1)} (remove the folder when read)"
            # Exit code 2 is the server's usage error (judge-serve's bad configuration, argparse's bad flag): the
            # --server-args or config given to judge-eval, reported as judge-eval's own (exit 2, not 4).
            raise (ConfigError if err.exit_code == 2 else EndpointUnusable)(message) from err
        yield root + "/v1", name
    finally:
        server.stop()
