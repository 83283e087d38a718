"""The one logging set-up of every console script: ``judge-train``, ``judge-serve``, ``judge-eval`` (``mera`` included).

    configure_logging(args.log_level)   # first thing in each main(), after its arguments are read

Root logging at the level asked for, on stderr, one format. The HTTP clients' per-request lines (``httpx``'s
``HTTP Request: POST ... "HTTP/1.1 200 OK"`` at INFO, the ``openai`` SDK's, aiohttp's access log, urllib3's
connection lines) are shown at ``--log-level debug`` only: hundreds of them would bury the progress a run reports,
and in judge-serve they cost a measurable share of its CPU per judgment (``bench/serve.py overhead``). A library
that calls nothing here logs as its host program says (no work at import time).

``visible`` is the one way a server's own words (an error body's message) go into a console warning or message:
control characters written as escapes, the length bounded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

__all__ = ["CHATTY_LOGGERS", "LEVELS", "configure_logging", "log_level_number", "split_log_level", "visible"]

#: Loggers that write one line per HTTP request or connection; shown at debug only. ``httpx2``/``httpcore2``: the
#: transport of openai 3.x; ``aiohttp``: judge-serve's hop to its engine; ``urllib3``: hub and W&B clients.
CHATTY_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "openai", "aiohttp", "urllib3")
#: The levels ``--log-level`` takes (any case).
LEVELS = ("debug", "info", "warning", "error")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_level_number(level: str | int) -> int:
    """``"info"`` -> ``logging.INFO`` (any case; a number passes through).

    Raises:
        ValueError: an unknown level, naming ``--log-level`` and the levels it takes.
    """
    if isinstance(level, int):
        return level
    if str(level).lower() not in LEVELS:
        raise ValueError(f"--log-level: unknown level {level!r} ({', '.join(LEVELS)})")
    return logging.getLevelName(str(level).upper())


def configure_logging(level: str | int = "info") -> int:
    """Root logging at ``level`` on stderr; the ``CHATTY_LOGGERS`` at WARNING unless ``level`` is debug.

    Safe to call again (a second main() in one process, a test): the root level and the HTTP loggers are set
    every time, the handler is added only when the root logger has none.

    Returns:
        The level as a number.

    Raises:
        ValueError: an unknown level (``log_level_number``).
    """
    number = log_level_number(level)
    logging.basicConfig(level=number, format=FORMAT)
    logging.getLogger().setLevel(number)  # also when handlers exist already (basicConfig then does nothing)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if number <= logging.DEBUG else logging.WARNING)
    return number


def split_log_level(argv: Sequence[str], default: str = "info") -> tuple[str, list[str]]:
    """``--log-level LEVEL`` (or ``--log-level=LEVEL``) taken off ``argv`` wherever it stands before a bare ``--``,
    for a console script that dispatches on a subcommand: ``judge-train --log-level debug data ...`` and
    ``judge-train data ... --log-level debug`` mean the same (one convention for every command). What follows ``--``
    is passed through to another program and left alone.

    Returns:
        ``(level, the rest of argv)``; ``default`` when there is none (the last one wins when given twice).
    """
    argv = list(argv)
    level, rest, i = default, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg in ("--log-level", "--log_level") and i + 1 < len(argv):
            level, i = argv[i + 1], i + 2
            continue
        if arg.startswith(("--log-level=", "--log_level=")):
            level, i = arg.split("=", 1)[1], i + 1
            continue
        rest.append(arg)
        i += 1
    return level, rest


def visible(text: object, limit: int = 300) -> str:
    """``text`` as a terminal shows it, character for character: for a server's words (an error body's message, an
    exception's text quoting one) put into a console warning or message.

    Every character ``str.isprintable`` calls unprintable but the space (the C0 controls, ESC and newline among them,
    DEL, the C1 controls, the Unicode line and paragraph separators, bidirectional controls, a lone surrogate) is
    written as ``repr`` writes it (``\\x1b``, ``\\n``, ``\\u2028``): raw, an ESC sequence could clear the screen or
    recolour what follows, and a newline or a carriage return forge a line of its own. A backslash already in the text
    is kept as it is (``repr`` would double it): a Windows path stays readable, at the cost of ``\\x1b`` written by
    the server reading as one it escaped. Past ``limit`` characters of ``text`` the rest is cut, ``...`` said in its
    place, so a server's whole HTML page never fills the terminal.

    Only what the console shows goes through here: the rows a run writes keep the server's words (JSON escapes them).
    """
    text = str(text)
    cut = len(text) > limit
    shown = "".join(ch if ch == " " or ch.isprintable() else repr(ch)[1:-1] for ch in text[:limit])
    return shown + "..." if cut else shown
