"""judge-serve: an OpenAI-compatible POLLUX judge endpoint on vLLM.

    judge-serve --model runs/tiny-judge/export --port 8000      (judge-train's export of the run runs/tiny-judge)
    HF_HUB_OFFLINE=1 judge-serve --model ai-forever/pollux-judge-7b-r --dtype bfloat16
    JUDGE_SERVE_API_KEY="$KEY" judge-serve --config configs/serve/t-lite-seq2seq.yaml --tensor-parallel-size 2

Starts vLLM for the checkpoint (one generating engine; a regression checkpoint adds a pooling engine) and serves,
on one port (``serve.app``): vLLM's /v1/chat/completions, /v1/completions, /v1/responses and its tokenizer routes,
passed through; /v1/models, its entries with judge-serve's limits and a digest for a local folder's path; POST
/v1/judge and POST /get_reward (``serve.rewards``); /health, /ready, /metrics and /version. Settings come from the
defaults, then --config YAML, then flags (``serve.config``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import signal
import sys
import threading
from typing import Sequence

from judge.plumbing.api_keys import resolve_api_key
from judge.plumbing.config_files import add_config_flags, chosen_fields, given_flags
from judge.plumbing.console_logging import CHATTY_LOGGERS, configure_logging  # the one set-up of every console script
from judge.plumbing.closed_stdout import exits_quietly_on_closed_stdout
from judge.plumbing.openmp import idle_threads_sleep
from judge.plumbing.config_files import resolve_config as resolve_settings
from serve.config import ConfigError, ServeConfig
from serve.engine_version import (EngineVersionError, attached_engine_urls, check_installed_vllm, starts_own_engines,
                                  watch_attached_versions)
from serve.launch import engine_specs, engines_drain_on_sigterm
from serve.layout import CheckpointLayout, LayoutError, require_tokenizer, require_weights, resolve_layout

__all__ = ["main", "build_parser", "begin_drain", "resolve_config", "fit_trained_lengths", "structured_outputs_notes",
           "engines_tensor_parallel_size", "refuse_unsplittable_heads", "configure_logging", "CHATTY_LOGGERS"]


#: judge-serve's exit codes, as ``--help`` lists them.
EXIT_CODES = (
    "exit codes: 0 a clean shutdown (SIGTERM/SIGINT); 1 an engine failed to start, or kept dying past "
    "engine_max_restarts, or an attached engine runs another vLLM release line, or serving stopped on what "
    "judge-serve cannot mend itself (the checkpoint's weights changed under it: start it again; a background task "
    "failed), /health naming why; 2 a bad configuration or checkpoint "
    "(named), an installed vLLM outside the supported line, or a port already in use (found before any engine "
    "starts); 141 stdout's reader went away (`--print-config | head -1`)."
)


#: How a /get_reward request still waiting for room under max_queued_judgments is refused once judge-serve drains.
DRAINING = "judge-serve is shutting down"


def begin_drain(state) -> None:
    """judge-serve's drain begun (SIGTERM, SIGINT: uvicorn's ``handle_exit``): ``status`` becomes draining, so new
    requests get 503 at the door (``serve.connections.RefuseWhileDrainingMiddleware``), and the /get_reward requests
    waiting for room under ``max_queued_judgments`` get their 503 ``queue_full`` now (``serve.queued``, Drain), not at
    their deadline after holding the drain for all of ``shutdown_grace_s``. Safe in a signal handler, which runs
    between two steps of whatever the event loop was doing: the line is refused on the loop's next turn
    (``call_soon_threadsafe``, as asyncio's own signal handling schedules), never from inside the code it cut into."""
    if state.status not in ("starting", "ready"):
        return
    state.status = "draining"
    if state.judge is None:  # still starting: no request has reached the judge's queue
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop runs (not serving yet, or done): nothing can be waiting on one
        state.judge.queue.refuse_waiting(DRAINING)
        return
    loop.call_soon_threadsafe(state.judge.queue.refuse_waiting, DRAINING)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: ``--config``, ``--print-config`` and one flag per ``ServeConfig`` field."""
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(
        prog="judge-serve",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog=EXIT_CODES,
    )
    parser.add_argument("--config", help="YAML file of settings (keys are the flag names with underscores).")
    parser.add_argument("--print-config", action="store_true", help="Print the resolved settings as JSON and exit.")
    parser.add_argument("--check-labels", metavar="FILE",
                        help="Check every label of a JSONL prompt dataset (OpenRLHF's --data.prompt_dataset) as "
                             "POST /get_reward would, against these settings, print each refused one, and exit "
                             "(0: all pass; 2: some refused). No engine starts.")
    parser.add_argument("--label-key", default="label",
                        help="With --check-labels: the rows' field holding the label (OpenRLHF's --data.label_key).")
    add_config_flags(parser, ServeConfig)
    return parser


def resolve_config(argv: Sequence[str] | None = None) -> tuple[ServeConfig, argparse.Namespace]:
    """Defaults, then ``--config`` YAML, then flags; the API key comes from ``$JUDGE_SERVE_API_KEY`` or the variable
    ``--api-key-env`` names (``judge.plumbing.api_keys``).

    Raises:
        ConfigError: an unknown YAML key or a bad value, naming it.
    """
    args = build_parser().parse_args(argv)
    flags = given_flags(args, ServeConfig)
    config = resolve_settings(ServeConfig, args.config, flags)
    # Which settings the user chose (file or flag), so that a checkpoint's own needs fill only the others.
    args.chosen_settings = chosen_fields(args, ServeConfig)
    if not config.served_model_name:
        config.served_model_name = default_served_name(config.model)
    config.api_key = resolve_api_key(config.api_key, config.api_key_env, command="judge-serve",
                                     default_env="JUDGE_SERVE_API_KEY")
    try:
        return config.validate(), args
    except ConfigError as err:
        # a key inside the reward_rule mapping is named by where the mapping was given, as a YAML key by its file
        source = "command line" if "reward_rule" in flags else args.config
        if source and str(err).startswith("reward_rule"):
            raise ConfigError(f"{source}: {err}") from None
        raise


#: The refused labels ``--check-labels`` prints before it only counts them.
SHOWN_LABEL_PROBLEMS = 20


def check_labels(config: ServeConfig, path: str, label_key: str) -> int:
    """``--check-labels``: each JSONL row's ``label_key`` value checked as ``/get_reward`` checks a label
    (``serve.rewards.label_problems``); the first ``SHOWN_LABEL_PROBLEMS`` refusals printed, one line each, then a
    count. Exit 0 when every label passes, 2 when any is refused or the file cannot be read (a line that is no JSON
    object or not UTF-8, a row without the key), naming the line, or holds no row. A UTF-8 byte order mark at the
    file's start is skipped, as every file reader skips one there."""
    from judge.plumbing.json_reading import JSON_REFUSALS, UTF8_BOM, got_words, unreadable_json
    from serve.rewards import label_problems

    n_rows, problems = 0, []
    try:
        with open(path, "rb") as lines:  # bytes, decoded per line: a line that is not UTF-8 is named by its number
            for number, raw in enumerate(lines, 1):
                if number == 1:
                    raw = raw.removeprefix(UTF8_BOM)
                if not raw.strip():
                    continue
                n_rows += 1
                where = f"{path}:{number}"
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    problems.append(f"{where}: not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1})")
                    continue
                try:
                    row = json.loads(text.rstrip("\r\n"))
                except JSON_REFUSALS as err:
                    problems.append(f"{where}: {unreadable_json(err)}")
                    continue
                if not isinstance(row, dict) or label_key not in row:
                    problems.append(f"{where}: no {label_key!r} field (--label-key)" if isinstance(row, dict) else
                                    f"{where}: expected a JSON object, got {got_words(row)}")
                    continue
                problems += label_problems([(f"{where}: {label_key}", row[label_key])], config)
    except OSError as err:
        print(f"judge-serve: error: --check-labels: {path}: {err}", file=sys.stderr)
        return 2
    if not n_rows:  # nothing checked is no pass: training would find no prompt
        print(f"judge-serve: error: --check-labels: {path}: no rows (an empty file, or blank lines only)",
              file=sys.stderr)
        return 2
    for problem in problems[:SHOWN_LABEL_PROBLEMS]:
        print(problem, file=sys.stderr)
    more = f" ({len(problems) - SHOWN_LABEL_PROBLEMS} more not shown)" if len(problems) > SHOWN_LABEL_PROBLEMS else ""
    print(f"judge-serve: --check-labels: {n_rows} rows of {path}, {len(problems)} labels refused{more}",
          file=sys.stderr)
    return 2 if problems else 0


def fit_trained_lengths(config: ServeConfig, layout: CheckpointLayout,
                        chosen: frozenset[str]) -> tuple[ServeConfig, list[tuple[int, str]]]:
    """Give a reasoning judge (GRPO, or integer-format SFT) the room it learned to reason in.

    Its export records the token lengths its completions were sampled under (``judge.checkpoints.TrainedLengths``);
    a reasoning judge served with a smaller ``max_tokens`` is cut before its verdict, which then fails to parse.
    ``max_tokens`` and ``max_model_len`` the user did not choose (in the YAML or as flags) are raised to the trained
    ones, ``max_tokens`` to at most half the context (the prompt keeps the other half: a chosen smaller
    ``max_model_len`` still serves); chosen ones are kept. Where what is served is less than what was trained, a
    warning says so. An attached engine (``generator_url``) keeps its own context, which judge-serve cannot change:
    nothing is adopted, only said.

    Returns:
        The settings (valid by construction: ``max_tokens`` at most half of ``max_model_len``) and the
        ``(logging level, message)`` notes to log once logging is configured.
    """
    trained = layout.trained_lengths  # read with the manifest (serve.layout), malformed ones refused there
    if trained is None:
        return config, []
    notes: list[tuple[int, str]] = []
    adopted = {}
    if not config.generator_url:
        if "max_model_len" not in chosen and config.max_model_len < trained.max_length:
            adopted["max_model_len"] = trained.max_length
        room = min(trained.max_completion_length, adopted.get("max_model_len", config.max_model_len) // 2)
        if "max_tokens" not in chosen and config.max_tokens < room:
            adopted["max_tokens"] = room
    config = dataclasses.replace(config, **adopted)
    if adopted:
        notes.append((logging.INFO, "the judge was trained with completions of up to %d tokens in %d: serving with %s"
                      % (trained.max_completion_length, trained.max_length,
                         ", ".join(f"{k} {v}" for k, v in adopted.items()))))
    if config.max_tokens < trained.max_completion_length:
        notes.append((logging.WARNING, "max_tokens %d is below the %d tokens the judge was trained to reason in: "
                      "a reasoning cut short has no verdict (raise --max-tokens)"
                      % (config.max_tokens, trained.max_completion_length)))
    return config, notes


def default_served_name(model: str) -> str:
    """The name a judge is served under when no ``--served-model-name`` is given: a judge-train export
    (``runs/NAME/export``, beside its run's ``run.json``) is served as its run, ``NAME``, so that predictions and
    reports name the judge rather than the folder every export shares; anything else keeps the folder's name
    (``ServeConfig.model_name``). Returns "" for the latter."""
    from judge.checkpoints import export_run_name

    return export_run_name(model)


class PortInUse(Exception):
    """The address judge-serve is to listen on is taken (or not this machine's)."""


def bind_listening_socket(host: str, port: int):
    """Bind judge-serve's public address now, before any engine starts, listen on it, and hand the socket to
    uvicorn: a port in use is then an error within a second, not after the engines have loaded (uvicorn binds only
    after its startup, which starts them), and no other process can take the port in between. Listening is what
    keeps it: Linux lets a second ``SO_REUSEADDR`` socket bind a port no socket listens on (another judge-serve on
    the same ``--port``, started within this one's start), and that one's listen would then win. Connections made
    before uvicorn serves wait in the backlog.

    Raises:
        PortInUse: naming the address and what to do.
    """
    import errno
    import socket

    # The family and options uvicorn's own Config.bind_socket uses, so --host means what it meant before.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free
    try:
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's default backlog; asyncio's create_server(sock=...) listens again with its own
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} on {host} is already in use (another judge-serve?); stop it or choose "
                            "another with --port") from None
        raise PortInUse(f"cannot listen on {host}:{port}: {err.strerror}; check --host and --port") from None
    return sock


def raise_descriptor_limit(log: logging.Logger) -> None:
    """Raise the soft descriptor limit to the hard one (as vLLM does for its own server): every client connection
    and every pooled engine connection is a descriptor, and a low soft limit (1024 on many systems) is what a flood
    of half-open connections can run out."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as err:  # a container's policy, a hard limit the kernel will not give
            log.warning("could not raise the descriptor limit from %d to its hard limit %d (%s): clients past about "
                        "%d open connections (max_connections) may be refused for want of descriptors", soft, hard,
                        err, soft // 2)
            return
        log.info("descriptor limit raised from %d to %d", soft, hard)


def log_dir_problem(log_dir: str) -> str | None:
    """Why ``log_dir`` cannot hold judge-serve's engine logs and run.json (not a folder, not writable), or None; the
    folder is made (0700) when missing, as the engines' start would."""
    import tempfile
    from pathlib import Path

    from judge.plumbing.provenance import make_private_dir

    try:
        with tempfile.TemporaryFile(dir=make_private_dir(Path(log_dir))):
            return None
    except OSError as err:
        return f"{log_dir} cannot hold the engine logs and run.json ({type(err).__name__}: {err.strerror or err})"


def structured_outputs_notes(config: ServeConfig) -> list[tuple[int, str]]:
    """Say at start what the constrained-decoding settings will do that the user may not expect.

    - A feedback bound under xgrammar (named, or ``auto``: vLLM's choice for the verdict regex) on an engine
      judge-serve starts: xgrammar compiles the bounded regex whole before the first token, in time that grows with
      the bound, and vLLM fails a request whose compile outlasts ``VLLM_REGEX_COMPILATION_TIMEOUT_S``: the judgment
      comes back as an ``engine_error``, only once the first constrained request arrives. Said at start, with the fix.
    - ``structured_outputs_backend`` other than auto with an attached generating engine (``generator_url``): the
      backend is that engine's own flag, which judge-serve cannot change.

    Returns:
        ``(logging level, message)`` notes to log once logging is configured (none for the defaults).
    """
    notes: list[tuple[int, str]] = []
    if config.generator_url:
        if config.structured_outputs_backend != "auto":
            notes.append((logging.WARNING, "structured_outputs_backend %s does not reach the attached generating "
                          "engine (generator_url): it decodes with the backend it was started with (give its vllm "
                          "serve --structured-outputs-config.backend %s)"
                          % (config.structured_outputs_backend, config.structured_outputs_backend)))
    elif config.feedback_max_chars > 0 and config.structured_outputs_backend != "guidance":
        backend = "auto (xgrammar)" if config.structured_outputs_backend == "auto" else "xgrammar"
        notes.append((logging.WARNING, "feedback_max_chars %d under structured_outputs_backend %s: the bounded "
                      "verdict regex is compiled whole before decoding, longer the longer the bound, and vLLM fails a "
                      "constrained judgment whose compile outlasts VLLM_REGEX_COMPILATION_TIMEOUT_S (5 s unless set) "
                      "with an engine_error; structured_outputs_backend: guidance compiles it as decoding goes "
                      "(docs/serving.md)" % (config.feedback_max_chars, backend)))
    return notes


def engines_tensor_parallel_size(config: ServeConfig) -> int | None:
    """The tensor-parallel size judge-serve decides for its engines, ``tensor_parallel_size``; None when
    ``engine_args`` give one (``--tensor-parallel-size``, vLLM's underscore spelling or ``-tp``, with or without
    ``=``): those flags come last, so theirs is the one vLLM uses, and vLLM's to check. Asked by
    ``refuse_unsplittable_heads`` and by slurm/serve.sbatch, so that both check the same size."""
    for arg in config.engine_args:
        if arg.split("=", 1)[0].replace("_", "-") in ("--tensor-parallel-size", "-tp"):
            return None
    return config.tensor_parallel_size


def refuse_unsplittable_heads(model_dir: str, config: ServeConfig) -> None:
    """LayoutError when an engine's model cannot be split over ``tensor_parallel_size`` GPUs
    (``judge.plumbing.tensor_parallel``): vLLM finds it only once the engine starts, minutes in, with a traceback.
    A size given in ``engine_args`` is vLLM's to check (``engines_tensor_parallel_size``)."""
    from judge.plumbing.tensor_parallel import unsplittable_heads

    tp = engines_tensor_parallel_size(config)
    if tp is None or tp <= 1:
        return
    refused = unsplittable_heads(model_dir, tp, tp)
    if refused:
        raise LayoutError(f"tensor_parallel_size {tp}: {refused[0]}, and its engine would stop at its start; give "
                          f"--tensor-parallel-size {refused[1]}")


@exits_quietly_on_closed_stdout
def main(argv: Sequence[str] | None = None) -> int:
    """Run judge-serve until SIGTERM/SIGINT.

    Returns:
        0 after a clean shutdown, 1 when an engine failed to start or kept dying past ``engine_max_restarts`` (or an
        attached one runs another vLLM release line), 2 for a bad configuration or checkpoint, an installed vLLM
        outside ``SUPPORTED_VLLM`` or a port in use (``EXIT_CODES``); 141 when stdout's reader has gone
        (``judge.plumbing.closed_stdout``).
    """
    idle_threads_sleep()  # before vLLM loads torch; the engines inherit it (serve.launch.engine_env)
    try:
        config, args = resolve_config(argv)
        configure_logging(config.log_level)  # before the checkpoint is read: serve.released says what it builds there
        layout = resolve_layout(config.model, config.generator_model or None, config.derived_cache_dir or None)
        config, start_notes = fit_trained_lengths(config, layout, args.chosen_settings)
        start_notes += structured_outputs_notes(config)
    except (ConfigError, LayoutError) as err:
        print(f"judge-serve: error: {err}", file=sys.stderr)
        return 2
    config = engines_drain_on_sigterm(config)
    if args.check_labels:
        return check_labels(config, args.check_labels, args.label_key)
    if args.print_config:
        print(json.dumps({**config.to_dict(), "judge_kind": layout.kind}, indent=2, ensure_ascii=False))
        return 0
    if starts_own_engines(config, layout):
        try:
            check_installed_vllm()  # the tested vLLM line only (serve.engine_version)
        except EngineVersionError as err:
            print(f"judge-serve: error: {err}", file=sys.stderr)
            return 2

    try:
        listening = bind_listening_socket(config.host, config.port)
    except (PortInUse, OSError) as err:  # OSError: a host name that does not resolve
        print(f"judge-serve: error: {err}", file=sys.stderr)
        return 2
    try:  # a folder with no weights would start an engine that dies a minute later (serve.layout.require_weights)
        local = [spec for spec in engine_specs(config, layout) if not spec.url]  # the engines started here
        for spec in local:
            require_weights(spec.model_dir, spec.role)
            refuse_unsplittable_heads(str(spec.model_dir), config)
        require_tokenizer(layout.root)  # judge-serve's own and its chat template, whatever the engines load
        for spec in local:  # a generating engine's own: what it writes becomes text by it
            if spec.role == "generator" and spec.model_dir != layout.root:
                require_tokenizer(spec.model_dir, spec.role)
        if config.criteria_classifier_path:  # the classifier loads beside the engines: its folder is looked at first
            from judge.criteria_auto.registry import artefact_folder_problem

            problem = artefact_folder_problem(config.criteria_classifier, config.criteria_classifier_path)
            if problem:
                raise LayoutError(problem)
    except LayoutError as err:
        listening.close()
        print(f"judge-serve: error: {err}", file=sys.stderr)
        return 2
    if config.log_dir:  # engine logs and run.json go there: a folder that cannot take them is a bad configuration
        problem = log_dir_problem(config.log_dir)
        if problem:
            listening.close()
            print(f"judge-serve: error: log_dir: {problem}", file=sys.stderr)
            return 2

    log = logging.getLogger("judge_serve")
    for level, note in start_notes:
        log.log(level, note)
    log.info("judge-serve settings: %s", json.dumps(config.to_dict(), ensure_ascii=False))

    import uvicorn

    from serve.app import create_app
    from serve.connections import header_deadline_protocol
    from serve.quiet_logs import quiet_client_floods, quiet_health_polls, uvicorn_through_the_console

    raise_descriptor_limit(log)

    try:  # the verdict format is decided here (serve.app.resolved_verdict_format): a bad one is a bad configuration
        app = create_app(config, layout)
    except ValueError as err:  # LayoutError among them; the engines have not started
        listening.close()
        print(f"judge-serve: error: {err}", file=sys.stderr)
        return 2

    class Server(uvicorn.Server):
        """uvicorn's server, draining on SIGTERM/SIGINT and returning from ``run`` instead of re-raising them."""

        def handle_exit(self, sig, frame):
            begin_drain(app.state.serve)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self):
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    uvicorn_through_the_console()  # its lines on stderr in the shared format, not its own (the access log on stdout)
    server = Server(
        uvicorn.Config(
            app,
            log_config=None,
            host=config.host,
            port=config.port,
            log_level=config.log_level.lower(),
            access_log=config.access_log,
            timeout_graceful_shutdown=math.ceil(config.shutdown_grace_s),  # never shorter than asked (0.4 s was 0)
            timeout_keep_alive=5,
            # Bounds for clients, so slow ones cannot hold every descriptor: headers within header_timeout_s, at most max_connections.
            http=header_deadline_protocol(config.header_timeout_s, body_timeout_s=config.body_timeout_s),
            limit_concurrency=config.max_connections,
        )
    )

    quiet_health_polls(config.log_level)  # after uvicorn.Config, which sets up uvicorn's loggers
    quiet_client_floods()

    def fatal() -> None:
        server.should_exit = True

    app.state.serve.on_fatal = fatal

    def refuse_engine(message: str) -> None:  # an attached engine (--generator-url/--pooling-url) of another vLLM
        log.error("judge-serve cannot start: %s", message)
        app.state.serve.status, app.state.serve.failure = "failed", message
        fatal()

    watch_attached_versions(
        attached_engine_urls(config, layout), config.engine_start_timeout_s, refuse_engine, stop=lambda: server.should_exit
    )
    try:
        server.run(sockets=[listening])
    except SystemExit as err:  # uvicorn's own startup failure (its code 3): judge-serve could not start
        log.error("judge-serve could not start (uvicorn exit %s)", err.code)
        return 1
    finally:
        listening.close()
    return 1 if app.state.serve.status == "failed" else 0


if __name__ == "__main__":
    raise SystemExit(main())
