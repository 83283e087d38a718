"""Every ``judge-eval mera`` command the documentation shows is one its argument parsing accepts: the examples in
``eval/mera/cli.py``'s docstring (its example override on the first of them) and in docs/mera.md's code blocks. Only
the parsing and the usage checks run (``cli.checked_config``), never the run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from eval.mera import cli

REPO = Path(__file__).resolve().parents[2]


def commands_in(text: str) -> list[list[str]]:
    """The argument lists of the ``judge-eval mera`` and ``python -m eval.mera.cli`` commands in ``text``'s lines (an
    environment assignment before one and a ``#`` comment after it left out), in order."""
    found = []
    for line in text.splitlines():
        line = re.sub(r"^``(.*?)``.*", r"\1", line.strip())  # a line that is one inline literal: its text
        command = re.match(r"(?:[A-Z_]+=\S*\s+)*(?:judge-eval mera|python -m eval\.mera\.cli)\s(.*)", line)
        if command is not None:
            found.append(shlex.split(command.group(1), comments=True))
    return found


def documented_commands() -> list[list[str]]:
    docstring = cli.__doc__ or ""
    from_docstring = commands_in(docstring)
    override = re.search(r"Example override: ``(.+?)``", docstring, re.S)
    assert override is not None, "cli.py's docstring has no example override"
    from_docstring.append(from_docstring[0] + shlex.split(override.group(1)))
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "docs" / "mera.md").read_text(encoding="utf-8"), re.S)
    return from_docstring + [words for block in blocks for words in commands_in(block)]


def test_the_documented_commands_are_found():
    """The extraction finds each example, so the test below is not vacuous."""
    assert [" ".join(words) for words in documented_commands()] == [
        "ruhumaneval --endpoint http://127.0.0.1:8000/v1 --model NAME --out runs/rhe",
        "rutie --endpoint http://127.0.0.1:8000/v1 --model NAME --out runs/rutie",
        "ruhumaneval --config configs/mera/ruhumaneval.yaml --endpoint URL --model NAME --out runs/rhe",
        "ruhumaneval --self-check --out runs/selfcheck",
        "ruhumaneval --endpoint http://127.0.0.1:8000/v1 --model NAME --out runs/rhe --n 2 --k 1 2 --max-tokens 128 "
        "--mode chat --extraction lenient",
        "ruhumaneval --self-check --data sample --out runs/rhe-check",
        "ruhumaneval --self-check --out runs/rhe-check-mera",
        "ruhumaneval --endpoint URL --model NAME --out runs/rhe",
        "rutie --endpoint URL --model NAME --out runs/rutie",
        "rutie --endpoint URL --model NAME --out runs/rutie",
        "ruhumaneval --data humaneval-en --endpoint URL --model NAME --out runs/he-en",
        "ruhumaneval --endpoint URL --model NAME --out runs/rhe --submission runs/mera-upload.zip",
    ]


@pytest.mark.parametrize("argv", documented_commands(), ids=" ".join)
def test_a_documented_command_passes_the_usage_checks(argv, monkeypatch):
    """Each example's flags parse and pass the checks that refuse a command line (exit 2) before anything runs."""
    monkeypatch.chdir(REPO)  # --config configs/mera/... is relative to the repository, as the examples are run
    config = cli.checked_config(cli.build_parser(), argv)
    assert (config.task, str(config.out)) == (argv[0], argv[argv.index("--out") + 1])


def test_the_example_override_asks_for_two_samples_scored_at_one_and_two():
    """The docstring's override: n = 2 and pass@1/2 (the default pass@5 and pass@10 need more than two samples)."""
    config = cli.checked_config(cli.build_parser(), documented_commands()[4])
    assert (config.n, list(config.k), config.max_tokens, config.mode, config.extraction) == (
        2, [1, 2], 128, "chat", "lenient")
