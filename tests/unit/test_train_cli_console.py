"""What ``judge-train``'s main says for what no subcommand says itself: a bare ``judge-train`` is a usage error (the
usage on stderr, as argparse says one, stdout left empty)."""

from __future__ import annotations

from tests.support.first_contact import run_console_main


def test_a_bare_judge_train_says_its_usage_on_stderr():
    """`judge-train` alone exits 2 with the usage on stderr (stdout empty, as argparse leaves it for a usage error);
    `judge-train --help` asked for the usage: stdout, exit 0."""
    bare = run_console_main("judge-train", [])
    assert bare.code == 2 and bare.out == ""
    assert bare.err.startswith("usage: judge-train [--log-level LEVEL]")
    asked = run_console_main("judge-train", ["--help"])
    assert asked.code == 0 and asked.err == ""
    assert asked.out.startswith("usage: judge-train [--log-level LEVEL]")
