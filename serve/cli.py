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
import dataclasses
import json
import logging
import os
import shlex
import signal
import sys
import threading
from typing import Any, Sequence

from serve.config import ConfigError, ServeConfig, load_yaml_config
from serve.layout import LayoutError, resolve_layout

__all__ = ["main", "build_parser", "resolve_config", "configure_logging", "CHATTY_LOGGERS"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: ``--config``, ``--print-config`` and one flag per ``ServeConfig`` field."""
    parser = argparse.ArgumentParser(
        prog="judge-serve",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--config", help="YAML file of settings (keys are the flag names with underscores).")
    parser.add_argument("--print-config", action="store_true", help="Print the resolved settings as JSON and exit.")
    for f in dataclasses.fields(ServeConfig):
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help", "")
        # default=SUPPRESS: an absent flag leaves the YAML's value alone (defaults, then YAML, then flags).
        if f.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=help_text)
        elif f.name == "engine_args":
            parser.add_argument(
                flag, type=shlex.split, default=argparse.SUPPRESS, metavar="'ARGS'",
                help=help_text + " On the command line: one quoted string, split like a shell would.",
            )  # fmt: skip
        else:
            kind = {"int": int, "float": float}.get(str(f.type), str)
            parser.add_argument(flag, type=kind, default=argparse.SUPPRESS, help=help_text)
    return parser


def resolve_config(argv: Sequence[str] | None = None) -> tuple[ServeConfig, argparse.Namespace]:
    """Defaults, then ``--config`` YAML, then flags; the API key falls back to ``$JUDGE_SERVE_API_KEY``.

    Raises:
        ConfigError: an unknown YAML key or a bad value, naming it.
    """
    args = build_parser().parse_args(argv)
    values: dict[str, Any] = {}
    if args.config:
        values.update(load_yaml_config(args.config))
    names = {f.name for f in dataclasses.fields(ServeConfig)}
    values.update({k: v for k, v in vars(args).items() if k in names})
    config = ServeConfig(**values)
    if not config.api_key and os.environ.get("JUDGE_SERVE_API_KEY"):
        config.api_key = os.environ["JUDGE_SERVE_API_KEY"]
    return config.validate(), args


#: HTTP client loggers that write one INFO line per engine request (one per judgment); shown at debug only.
CHATTY_LOGGERS = ("httpx", "httpcore")


def configure_logging(level: str) -> None:
    """Root logging at ``level``; the HTTP clients' per-request lines only at ``debug`` (at info they cost judge-serve
    a measurable share of its CPU per judgment, see ``bench/serve.py overhead``)."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if level.lower() == "debug" else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """Run judge-serve until SIGTERM/SIGINT.

    Returns:
        0 after a clean shutdown, 1 when an engine failed to start, 2 for a bad configuration or checkpoint.
    """
    try:
        config, args = resolve_config(argv)
        layout = resolve_layout(config.model, config.generator_model or None, config.derived_cache_dir or None)
    except (ConfigError, LayoutError) as err:
        print(f"judge-serve: {err}", file=sys.stderr)
        return 2
    if args.print_config:
        print(json.dumps({**config.to_dict(), "judge_kind": layout.kind}, indent=2, ensure_ascii=False))
        return 0

    configure_logging(config.log_level)
    log = logging.getLogger("judge_serve")
    log.info("judge-serve settings: %s", json.dumps(config.to_dict(), ensure_ascii=False))

    import uvicorn

    from serve.app import create_app

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
        )
    )

    def fatal() -> None:
        server.should_exit = True

    app.state.serve.on_fatal = fatal
    server.run()
    return 1 if app.state.serve.status == "failed" else 0


if __name__ == "__main__":
    raise SystemExit(main())
