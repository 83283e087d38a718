"""What the flags after slurm/eval.sbatch give ``judge-eval run``'s ``--overwrite``, read by judge-eval's own parser
(``eval.cli.build_parser``), so an array stops before it re-cuts an earlier one's shards on a reading judge-eval
would not share.

``--overwrite`` takes an optional truth value (``--overwrite false``, ``--overwrite=yes``), and which word after it
argparse takes as that value is argparse's decision, not a copy of it here: ``--name=a b`` is the flag ``--name``
where run has one and a value where not, and an empty word, a lone dash or ``-1`` are values.

eval.sbatch runs it with the interpreter beside ``judge-eval``: ``python -m eval.judging.overwrite_flags [ARG ...]``
prints ``yes``, ``no`` (the last of ``--overwrite`` and ``--no-overwrite`` winning) or nothing (neither given), exit
0; a value judge-eval refuses: the word, exit 3; flags its parser refuses otherwise, or a ``--log-level`` its main
refuses: the message, exit 2 (the word and the message as a terminal shows them,
``judge.plumbing.console_logging.visible``).

A module of its own, not a command of ``eval.judging.array_data``: ``eval.cli`` imports that module's neighbours,
and this one imports ``eval.cli``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys

__all__ = ["overwrite_flags", "main"]


class _WordOf(argparse.Action):
    """Keeps the word argparse gives a flag of optional value as it is (True for none), for judging after."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True if values is None else values)


class _Refused(Exception):
    """judge-eval's --overwrite action refusing its value (it calls ``parser.error``)."""


class _Judging:
    """The parser an action is called with to judge a value: its ``error`` raises rather than exits."""

    def error(self, message: str) -> None:
        raise _Refused(message)


def overwrite_flags(args: list[str]) -> bool | str | None:
    """What ``judge-eval run ARGS`` gives ``--overwrite``, read by judge-eval's own parser: True or False (the last
    of --overwrite and --no-overwrite winning), None with neither (or with ``--help``, which runs nothing), or the
    word argparse takes as --overwrite's value where judge-eval refuses it.

    Raises:
        ValueError: the parser's message, for flags it refuses otherwise (``--max-tokens many``, a flag run does
            not know, a word it has no place for), or ``log_level_number``'s for a ``--log-level`` it does not know.
    """
    from eval.cli import build_parser
    from judge.plumbing.console_logging import log_level_number, split_log_level

    # As judge-eval's main: --log-level taken off first (anywhere before a bare --) and its level checked (main
    # refuses an unknown one, exit 2, as it would after the re-cut), the rest to parse_args, which refuses a flag
    # run does not know and a word it has no place for.
    level, args = split_log_level(args, default="")
    if level:
        log_level_number(level)  # its ValueError names --log-level and the levels it takes
    parser = build_parser()
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    flag = run._option_string_actions["--overwrite"]
    # The same option strings and nargs, so argparse gives it the same word; judged after by the flag itself.
    run._option_string_actions["--overwrite"] = _WordOf(flag.option_strings, flag.dest, nargs=flag.nargs)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            namespace = parser.parse_args(["run", *args])
    except SystemExit as stop:
        if stop.code in (0, None):
            return None
        raise ValueError(said.getvalue().strip()) from None
    word = getattr(namespace, flag.dest, None)
    if not isinstance(word, str):
        return word
    judged = argparse.Namespace()
    try:
        flag(_Judging(), judged, word, "--overwrite")
    except _Refused:
        return word
    return getattr(judged, flag.dest)


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.console_logging import visible

    # A word and a message are printed as a terminal shows them: argv bytes of no UTF-8 reach Python as lone
    # surrogates, which a strict UTF-8 stdout refuses (a traceback, exit 1, where the refusal was meant).
    try:
        given = overwrite_flags(sys.argv[1:] if argv is None else argv)
    except ValueError as err:
        print(visible(err, limit=len(str(err))))
        return 2
    if isinstance(given, str):
        print(visible(given, limit=len(given)))
        return 3
    print({True: "yes", False: "no", None: ""}[given])
    return 0


if __name__ == "__main__":
    sys.exit(main())
