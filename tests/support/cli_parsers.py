"""Every argparse parser the console scripts build, as their ``--help`` builds them: for the tests that check a flag
named somewhere else (a message, a docs page) against the command that is to take it."""

from __future__ import annotations

import argparse
import contextlib
import io

__all__ = ["collected_parsers", "parsers_by_prog"]


def collected_parsers() -> list[argparse.ArgumentParser]:
    """Every argparse parser the console scripts build (subcommands included), by building them for --help."""
    import eval.cli
    import eval.mera.cli
    import serve.cli
    import train.cli
    from judge.plumbing import config_files

    made = []
    original = config_files.ExactArgumentParser.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    calls = [(train.cli.main, [name, "--help"]) for name in train.cli.SUBCOMMANDS]
    calls += [(serve.cli.main, ["--help"]), (eval.cli.main, ["--help"]), (eval.mera.cli.main, ["--help"])]
    config_files.ExactArgumentParser.__init__ = recording
    try:
        for main, argv in calls:
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as exit_info:  # --help exits 0; anything else is a help that failed
                    code = exit_info.code
            assert code in (0, None), (argv, code, err.getvalue()[-500:])
    finally:
        config_files.ExactArgumentParser.__init__ = original
    assert len(made) >= len(calls)  # every command built its parser (a subcommand's help builds one or more)
    return made


def parsers_by_prog() -> dict[str, argparse.ArgumentParser]:
    """The parsers of ``collected_parsers`` by the command line that runs them (``judge-eval run``,
    ``judge-train data traces``, ``judge-eval mera rutie``), subcommands' parsers included."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser) -> None:
        found.setdefault(parser.prog, parser)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    for parser in collected_parsers():
        walk(parser)
    return found
