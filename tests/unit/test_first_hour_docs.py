"""The pages a newcomer reads first (README.md, docs/quickstart.md, docs/install.md, docs/index.md): the README's tour
is the quickstart's block, and every flag their command blocks print is one the command takes.

The quickstart's commands run end to end in tests/integration/serving/test_quickstart.py; the paths the pages name
are checked by tests/unit/test_docs_site.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.support.console_scripts import console_script

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


def _first_score(lines: list[list[str]], start: int = 0) -> int:
    """Index of the first `judge-eval score` line at or after `start`: where the tour ends."""
    return next(i for i in range(start, len(lines)) if lines[i][:2] == ["judge-eval", "score"])


def test_the_readme_tour_is_the_quickstart_block():
    """The README prints the short tour again; it must be the quickstart's commands (which a test runs), not a
    copy drifting from them. The README joins the set-up into one line: `make setup && source .venv/bin/activate`."""
    readme = bash_lines("README.md")
    start = readme.index(["make", "setup", "&&", "source", ".venv/bin/activate"])
    quickstart = bash_lines("docs/quickstart.md")
    assert quickstart[:2] == [["make", "setup"], ["source", ".venv/bin/activate"]]
    assert readme[start + 1:_first_score(readme, start) + 1] == quickstart[2:_first_score(quickstart) + 1]


def _unguarded(words: list[str]) -> list[str]:
    """A command line without its `kill -0 $serve &&` guard (the rest is what the guard lets run)."""
    if words[:2] == ["kill", "-0"] and "&&" in words:
        return words[words.index("&&") + 1:]
    return words


def test_the_tour_judges_a_server_it_started_itself():
    """The tour's `judge-eval run` is given the checkpoint folder, so it starts a judge-serve of its own on a free
    port: polling 127.0.0.1:8000/ready after a `judge-serve &` whose port is taken gets the answer of whatever server
    holds it (an earlier judge-serve with older weights under the same name), and the run judged that one, exit 0."""
    quickstart = bash_lines("docs/quickstart.md")
    run = next(w for w in quickstart if w[:2] == ["judge-eval", "run"])
    assert run[run.index("--judge") + 1] == "runs/tiny-seq2seq/export"
    assert '--server-args=["--config", "configs/serve/tiny-cpu.yaml"]' in run
    assert not [w for w in quickstart[:_first_score(quickstart) + 1] if w[0] == "judge-serve"]


def test_every_judge_eval_run_against_a_local_port_is_guarded():
    """A first page that starts judge-serve itself and then judges http://127.0.0.1:PORT runs `judge-eval run` only
    while that judge-serve is alive (`kill -0 $serve && judge-eval run ...`): a judge-serve that exited on a port in
    use must not leave the run to another server on the same port."""
    unguarded = []
    for page in FIRST_PAGES:
        for words in bash_lines(page):
            command = _unguarded(words)
            if command[:2] != ["judge-eval", "run"] or "--judge" not in command:
                continue
            if command[command.index("--judge") + 1].startswith(("http://127.0.0.1", "http://localhost")) \
                    and command is words:
                unguarded.append(f"{page}: {' '.join(words)}")
    assert not unguarded, "judge-eval run against a local port without a guard:\n" + "\n".join(unguarded)
    served = [w for w in bash_lines("docs/quickstart.md") if _unguarded(w) is not w]
    assert served == [["kill", "-0", "$serve", "&&", "judge-eval", "run", "--judge", "http://127.0.0.1:8000/v1",
                       "--out", "runs/eval/tiny-seq2seq-served"]]


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
            words = _unguarded(words)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]  # OPENAI_BASE_URL=... judge-eval run ...
            if not words or words[0] not in CONSOLE_SCRIPTS:
                continue
            own, passed = (words[:words.index("--")], words[words.index("--") + 1:]) if "--" in words else (words, [])
            # `judge-train submit ... -- FLAGS`: the flags after the bare `--` are the job's judge-train run's
            checks = [(own, _help_argv(own))]
            if passed and own[:2] == ["judge-train", "submit"]:
                checks.append((passed, ["judge-train", "run", "--config", own[own.index("--config") + 1]]))
            for flags, argv in checks:
                if tuple(argv) not in helps:
                    done = subprocess.run([console_script(argv[0]), *argv[1:], "--help"], cwd=ROOT,
                                          capture_output=True, text=True, timeout=60)
                    assert done.returncode == 0, (argv, done.stderr[-2000:])
                    helps[tuple(argv)] = done.stdout
                for flag in (w.split("=")[0] for w in flags if w.startswith("--")):
                    if not re.search(re.escape(flag) + r"(?![\w-])", helps[tuple(argv)]):
                        unknown.append(f"{page}: {flag} in {' '.join(words)}")
    assert helps, "no command found in the first pages' blocks"
    assert not unknown, "flags the pages print that the commands do not take:\n" + "\n".join(unknown)


def test_the_tiny_seq2seq_config_says_which_rows_it_trains_on():
    """train/build_data.py drops the rows over max_length, then keeps the first max_rows in the file's order
    (BuildReport.cut_to_max_rows): the config's comments once said "the shortest Standard rows", which no step picks."""
    text = (ROOT / "configs/train/tiny/seq2seq.yaml").read_text(encoding="utf-8")
    assert "shortest" not in text
    assert "the first Standard rows of the bundled sample data (in the file's order) that fit max_length" in text
