"""judge-serve: an OpenAI-compatible POLLUX judge endpoint on vLLM.

    judge-serve --model runs/tiny-judge/final --port 8000
    HF_HUB_OFFLINE=1 judge-serve --model ai-forever/pollux-judge-7b-r --dtype bfloat16
    judge-serve --config configs/serve/t-lite-seq2seq.yaml --api-key "$KEY" --tensor-parallel-size 2

Starts vLLM for the checkpoint (one generating engine; a regression checkpoint adds a pooling engine) and serves,
on one port, vLLM's /v1/chat/completions, /v1/completions and /v1/models unchanged, POST /v1/judge, /health,
/ready and /metrics. Settings come from the defaults, then --config YAML, then flags (``serve.config``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
from typing import Sequence

from judge.plumbing.api_keys import resolve_api_key
from judge.plumbing.config_files import add_config_flags, given_flags
from judge.plumbing.console_logging import CHATTY_LOGGERS, configure_logging  # the one set-up of every console script
from judge.plumbing.config_files import resolve_config as resolve_settings
from serve.config import ConfigError, ServeConfig
from serve.engine_version import (EngineVersionError, attached_engine_urls, check_installed_vllm, starts_own_engines,
                                  watch_attached_versions)
from serve.launch import engines_drain_on_sigterm
from serve.layout import LayoutError, resolve_layout

__all__ = ["main", "build_parser", "resolve_config", "configure_logging", "CHATTY_LOGGERS"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: ``--config``, ``--print-config`` and one flag per ``ServeConfig`` field."""
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full only (#30.7)

    parser = ExactArgumentParser(
        prog="judge-serve",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--config", help="YAML file of settings (keys are the flag names with underscores).")
    parser.add_argument("--print-config", action="store_true", help="Print the resolved settings as JSON and exit.")
    add_config_flags(parser, ServeConfig)
    return parser


def resolve_config(argv: Sequence[str] | None = None) -> tuple[ServeConfig, argparse.Namespace]:
    """Defaults, then ``--config`` YAML, then flags; the API key comes from ``$JUDGE_SERVE_API_KEY`` or the variable
    ``--api-key-env`` names (``judge.plumbing.api_keys``).

    Raises:
        ConfigError: an unknown YAML key or a bad value, naming it.
    """
    args = build_parser().parse_args(argv)
    config = resolve_settings(ServeConfig, args.config, given_flags(args, ServeConfig))
    config.api_key = resolve_api_key(config.api_key, config.api_key_env, command="judge-serve",
                                     default_env="JUDGE_SERVE_API_KEY")
    return config.validate(), args


def raise_descriptor_limit(log: logging.Logger) -> None:
    """Raise the soft descriptor limit to the hard one (as vLLM does for its own server): every client connection
    and every pooled engine connection is a descriptor, and a low soft limit (1024 on many systems) is what a flood
    of half-open connections ran out (#30, finding 1)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            log.info("descriptor limit raised from %d to %d", soft, hard)


def main(argv: Sequence[str] | None = None) -> int:
    """Run judge-serve until SIGTERM/SIGINT.

    Returns:
        0 after a clean shutdown, 1 when an engine failed to start or kept dying past ``engine_max_restarts`` (or an
        attached one runs another vLLM release line), 2 for a bad configuration or checkpoint or an installed vLLM
        outside ``SUPPORTED_VLLM``.
    """
    try:
        config, args = resolve_config(argv)
        layout = resolve_layout(config.model, config.generator_model or None, config.derived_cache_dir or None)
    except (ConfigError, LayoutError) as err:
        print(f"judge-serve: {err}", file=sys.stderr)
        return 2
    config = engines_drain_on_sigterm(config)
    if args.print_config:
        print(json.dumps({**config.to_dict(), "judge_kind": layout.kind}, indent=2, ensure_ascii=False))
        return 0
    if starts_own_engines(config, layout):
        try:
            check_installed_vllm()  # the tested vLLM line only (serve.engine_version)
        except EngineVersionError as err:
            print(f"judge-serve: {err}", file=sys.stderr)
            return 2

    configure_logging(config.log_level)
    log = logging.getLogger("judge_serve")
    log.info("judge-serve settings: %s", json.dumps(config.to_dict(), ensure_ascii=False))

    import uvicorn

    from serve.app import create_app, header_deadline_protocol

    raise_descriptor_limit(log)

    app = create_app(config, layout)

    class Server(uvicorn.Server):
        """uvicorn's server, draining on SIGTERM/SIGINT and returning from ``run`` instead of re-raising them."""

        def handle_exit(self, sig, frame):
            state = app.state.serve
            if state.status in ("starting", "ready"):
                state.status = "draining"
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

    server = Server(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_level=config.log_level.lower(),
            access_log=config.access_log,
            timeout_graceful_shutdown=int(round(config.shutdown_grace_s)),
            timeout_keep_alive=5,
            # Bounds for clients (#30, finding 1): headers within header_timeout_s, at most max_connections.
            http=header_deadline_protocol(config.header_timeout_s),
            limit_concurrency=config.max_connections,
        )
    )

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
    server.run()
    return 1 if app.state.serve.status == "failed" else 0


if __name__ == "__main__":
    raise SystemExit(main())
