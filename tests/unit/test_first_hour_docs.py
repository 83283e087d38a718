"""The pages a newcomer reads first (README.md, docs/quickstart.md, docs/install.md, docs/index.md): the README's tour
is the quickstart's block, and every flag their command blocks print is one the command takes.

The quickstart's commands run end to end in tests/integration/serving/test_quickstart.py; the paths the pages name
are checked by tests/unit/test_docs_site.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST_PAGES = ("README.md", "docs/quickstart.md", "docs/install.md", "docs/index.md")
CONSOLE_SCRIPTS = ("judge-train", "judge-serve", "judge-eval")
#: judge-train's commands besides `run` (`judge-train --help`); a line without one is `run`.
TRAIN_COMMANDS = ("run", "classifier", "grpo", "criteria-classifier", "build-data", "submit", "data", "card")


def bash_lines(page: str) -> list[list[str]]:
    """Each non-empty line of a page's ```bash blocks as words (comments dropped, `VAR=value` prefixes kept)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return [words for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)
            for words in (shlex.split(line, comments=True) for line in block.splitlines()) if words]


def test_the_readme_tour_is_the_quickstart_block():
    """The README prints the five-minute tour again; it must be the quickstart's commands (which a test runs), not a
    copy drifting from them. The README joins the set-up into one line: `make setup && source .venv/bin/activate`."""
    readme = bash_lines("README.md")
    start = readme.index(["make", "setup", "&&", "source", ".venv/bin/activate"])
    end = readme.index(["kill", "%1"], start)
    quickstart = bash_lines("docs/quickstart.md")
    assert quickstart[:2] == [["make", "setup"], ["source", ".venv/bin/activate"]]
    assert readme[start + 1:end + 1] == quickstart[2:quickstart.index(["kill", "%1"]) + 1]


def _help_argv(words: list[str]) -> list[str]:
    """The `--help` command that lists the options `words` (a console script's command line) may use."""
    script, rest = words[0], words[1:]
    if script == "judge-eval":
        return [script, rest[0]]
    if script == "judge-train":
        if rest and rest[0] in TRAIN_COMMANDS and rest[0] != "run":
            return [script, rest[0]]
        return [script, "run", "--config", rest[rest.index("--config") + 1]]  # a recipe's fields depend on it
    return [script]


def test_every_flag_the_first_pages_print_is_one_the_command_takes():
    """A flag in a command block of the first pages is in that command's `--help` (a renamed flag would send a
    newcomer's first command to an argparse error)."""
    helps: dict[tuple[str, ...], str] = {}
    unknown = []
    for page in FIRST_PAGES:
        for words in bash_lines(page):
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]  # OPENAI_BASE_URL=... judge-eval run ...
            if not words or words[0] not in CONSOLE_SCRIPTS:
                continue
            argv = _help_argv(words)
            if tuple(argv) not in helps:
                done = subprocess.run([str(Path(sys.executable).parent / argv[0]), *argv[1:], "--help"], cwd=ROOT,
                                      capture_output=True, text=True, timeout=60)
                assert done.returncode == 0, (argv, done.stderr[-2000:])
                helps[tuple(argv)] = done.stdout
            for flag in (w.split("=")[0] for w in words if w.startswith("--")):
                if not re.search(re.escape(flag) + r"(?![\w-])", helps[tuple(argv)]):
                    unknown.append(f"{page}: {flag} in {' '.join(words)}")
    assert helps, "no command found in the first pages' blocks"
    assert not unknown, "flags the pages print that the commands do not take:\n" + "\n".join(unknown)
