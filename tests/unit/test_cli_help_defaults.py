"""Every option of the console scripts that has a default says it in its ``--help``: a reader choosing a value
learns what they get without it, as the options beside it tell them."""

from __future__ import annotations

import argparse
import re


def _says_its_default(text: str, default: object) -> bool:
    """``(default: VALUE...)`` with the value itself, or a choice marked ``(default)`` in words."""
    return bool(re.search(r"\b[Dd]efault:? " + re.escape(str(default)) + r"(?!\w|\.\d)", text)) or "(default)" in text


def test_every_option_with_a_default_names_it_in_its_help():
    """Every option taking a value, of every parser of judge-train, judge-eval and judge-serve, names its default
    (judge-train build-data's --min-russian-share, 0.5, as its neighbours name theirs). An
    option whose default is None, False or empty has nothing to say; a config field's flag leaves its default out
    of the namespace (argparse.SUPPRESS) and says the field's default in its help (``add_config_flags``)."""
    from tests.support.cli_parsers import parsers_by_prog

    unsaid = []
    for prog, parser in parsers_by_prog().items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS or action.nargs == 0:
                continue  # a positional, a hidden alias, or a switch (store_true and the like) takes no value
            default = action.default
            if default is None or default is False or default is argparse.SUPPRESS or default in ("", [], ()):
                continue
            text = formatter._expand_help(action)  # as --help prints it, %(default)s filled in
            if not _says_its_default(text, default):
                unsaid.append(f"{prog} {action.option_strings[0]} (default {default!r}): {text}")
    assert not unsaid, "options whose --help does not say their default:\n" + "\n".join(unsaid)


def test_the_check_reads_a_default_only_where_it_is_said():
    """The rule above, on texts it must pass and texts it must not: a value named elsewhere in the help is no
    default said."""
    assert _says_its_default("Minimum Cyrillic share (default: 0.5).", 0.5)
    assert _says_its_default("The sbatch template (default: slurm/train.sbatch).", "slurm/train.sbatch")
    assert _says_its_default("Regression label (default: mean over experts).", "mean")
    assert _says_its_default("items (default), or whole instructions", "item")
    assert not _says_its_default("Minimum Cyrillic share of a rationale's letters.", 0.5)
    assert not _says_its_default("at least this many tested experts (>= 1; 1: the notebook's, this one's 2)", 2)
    assert not _says_its_default("Seed (default: 0.05).", 0)  # another value that begins with it
