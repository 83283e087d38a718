"""Code, tests, configs, Slurm scripts and docs cite only what a reader of a clone can open.

A comment says why in its own words. It may cite the POLLUX paper by section, appendix or table ("arXiv
2505.24616v3, Appendix D.2.2"), MERA's task cards by section, and public repositories by path (ai-forever/POLLUX
``src/metrics.py``). It may not cite an issue number, an internal run ("stop 38"), a house-style rule by number, a
source file by line number (the paper's text is not in the repository), or a file outside the repository — and a
repository path it names must exist.
"""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = {".py", ".yaml", ".yml", ".sbatch", ".md", ".toml", ".sh", ".cfg"}
NAMES = {"Makefile", "run"}  # the Makefile and .ci/run
#: Folders whose files are ours: a path under one of them, named in a comment, must exist.
REPO_FOLDERS = ("judge", "train", "serve", "eval", "configs", "slurm", "bench", "tests", "scripts", "docs")

#: What a clone cannot follow, with what to write instead.
FORBIDDEN = {
    "an issue number": re.compile(r"\bissues? ?#?\d+|\(#\d+|(?<![\w/-])#\d+\.\d+|(?<![\w/-])#\d+(?=:|'s\b)|\bfindings? \d+",
                                 re.IGNORECASE),
    "an internal run number": re.compile(r"\bstops? \d+(?:'s)?\b(?! ?(?:s|ms|min|seconds?|steps?|tokens?)\b)|\bCI run \d+",
                                         re.IGNORECASE),
    "a house-style rule by number": re.compile(r"\bSTYLE(?:\.md)?(?: habits?)? ?\d+|\bSTYLE\.md\b|\bhabits? \d+"),
    "the shared source folder (cite the paper by section, a card by section)": re.compile(
        r"\bseeds[/:]|\b00[1-4]_[0-9a-f]{6}|\b00[1-4]…|\bcard ?00[1-4]?:\d"),
    "a line of the paper or a task card (cite its section, appendix or table)": re.compile(
        r"\b(?:paper|card)(?:'s)? lines? \d|#\s*:\d{3,}", re.IGNORECASE),
    "a file outside the repository": re.compile(
        r"\.\./shared/|/work/shared|\.\./mera/|\b(?:RELEASE|ENVIRONMENT)\.md\b"),
    "the review process (say what the case is)": re.compile(r"\breviewers?\b|\breview[-_ ]?fix", re.IGNORECASE),
}
#: What no file of code may hold, strings and names included: a test's folder or fixture named after a review says
#: nothing of what it holds.
FORBIDDEN_IN_CODE = {"the review process (name what it holds)": re.compile(r"\breview[-_ ]?fix", re.IGNORECASE)}
_PATH = re.compile(r"""[`'"]((?:%s)/[\w./-]+\.(?:py|ya?ml|md|sbatch|jsonl?|txt|toml|npz))[`'":]""" % "|".join(REPO_FOLDERS))
#: What a Python file's text must hold somewhere for one of its comments or docstrings to hold a finding: the
#: patterns above, searched in the whole text, with the one look-behind that reads the character before a comment's
#: ``#`` dropped (in the text that character may be code, as in ``x = 1#27:``). Every other assertion of the patterns
#: reads the same characters in the text as in the comment, so a file none of these match has no finding in its
#: commentary and is not tokenized (tokenizing is most of this test's time).
_ANYWHERE = [re.compile(p.pattern.replace(r"(?<![\w/-])", ""), p.flags) for p in (*FORBIDDEN.values(), _PATH)]


def tracked_files() -> list[Path]:
    """The repository's own text files (git's list when there is one, else a walk that skips virtual envs)."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split("\n")
        paths = [ROOT / p for p in out if p]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in ROOT.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts]
    here = Path(__file__).resolve()
    return sorted(p for p in paths
                  if (p.suffix in SUFFIXES or p.name in NAMES) and p.is_file() and p.resolve() != here)


def commentary(path: Path, text: str) -> list[tuple[int, str]]:
    """(line, text) of what a file says to its reader: a Python file's comments and triple-quoted strings
    (docstrings, help texts), a Markdown file whole, any other file's ``#`` comments."""
    if path.suffix == ".py":
        out = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.string.lstrip("rbuRBUfF")[:3]
                                                    in ('"""', "'''")):
                    out.append((tok.start[0], tok.string))
        except (tokenize.TokenError, SyntaxError):
            out = list(enumerate(text.splitlines(), 1))
        return out
    if path.suffix == ".md":
        return list(enumerate(text.splitlines(), 1))
    return [(n, line[line.index("#"):]) for n, line in enumerate(text.splitlines(), 1) if "#" in line]


def findings(path: Path, text: str) -> list[str]:
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found = []
    if path.suffix == ".py":
        for line, said in enumerate(text.splitlines(), 1):
            for what, pattern in FORBIDDEN_IN_CODE.items():
                found += [f"{rel}:{line}: {what}: {m.group(0)!r}" for m in pattern.finditer(said)]
    may_hold = path.suffix != ".py" or any(pattern.search(text) for pattern in _ANYWHERE)
    for line, said in commentary(path, text) if may_hold else ():
        for what, pattern in FORBIDDEN.items():
            for match in pattern.finditer(said):
                found.append(f"{rel}:{line}: {what}: {match.group(0)!r}")
        if path.suffix != ".md":  # the docs' paths are checked by tests/unit/test_docs_site.py
            for match in _PATH.finditer(said):
                if not (ROOT / match.group(1)).exists():
                    found.append(f"{rel}:{line}: a repository path that does not exist: {match.group(1)!r}")
    return found


def test_no_comment_cites_what_a_clone_cannot_open():
    """No issue number, internal run, style rule, seed file, source line or outside file anywhere, and every
    repository path a comment names exists."""
    found = [f for p in tracked_files() for f in findings(p, p.read_text(encoding="utf-8", errors="replace"))]
    assert not found, "say why in words; cite the paper by section, public repositories by path:\n" + "\n".join(found)


@pytest.mark.parametrize("said", [
    "# one writer per folder (issue #30.13)",
    "# long options in full only (#30.7)",
    "# see (#27) for the keep-alive bug",
    "# #27: the 503 after a quiet spell",
    "y = 1#27: the 503 after a quiet spell",
    '"""#27\'s 503: the second call reuses the connection."""',
    '"""Run folders (issue 29 item 3)."""',
    "# the sanitising of findings 4-6",
    "# Stop 35's CI run saw what that does",
    "# No list of keys is kept here (STYLE 19)",
    "# the order is forced, never waited for (STYLE.md habit 20)",
    "# as the house style asks (habit 21)",
    "# seeds/003_04de0265a3137b49.txt:703",
    "# the paper's prompt (003…:2706-2721)",
    "# the card (card 004:90)",
    '"### Task Description:\\n"  # :2726',
    "# as the paper says (paper line 220)",
    "# ../shared/pollux/RELEASE.md, 'The released judges'",
    "# Flags measured in ENVIRONMENT.md: root needs --no-sandbox",
    "# the path ``eval/no_such_module.py`` holds it",
    '"""The reviewer\'s probe: 20 instructions."""',
    "# a reviewer reads it whole",
    "# the review fixes of the ranking",
])
def test_each_kind_of_citation_is_caught(said, tmp_path):
    path = tmp_path / "module.py"
    assert findings(path, f"x = 1\n{said}\n"), said


@pytest.mark.parametrize("said", [
    "# arXiv 2505.24616v3, Appendix D.2.2: the judge replaces a random annotator",
    "# ai-forever/POLLUX src/utils/evaluation.py, lines 26-35: extract_score",
    "# pytest-dev/pytest-xdist#1386; trl #1379, OpenRLHF #209",
    "# the ruTiE card \"Metrics\": accuracy over the dialogue",
    "# stop 5 s after the signal; step 8 of Algorithm 1",
    "# ``eval/judging/config.py`` holds RunConfig",
    "# vllm/envs.py: VLLM_HTTP_TIMEOUT_KEEP_ALIVE",
])
def test_what_a_clone_can_open_passes(said, tmp_path):
    path = tmp_path / "module.py"
    assert findings(path, f"x = 1\n{said}\n") == [], said


def test_a_name_after_a_review_is_caught_in_code_too(tmp_path):
    """A folder or fixture named after a review is refused in code as well as in comments; "reviewed" and "review" in
    their ordinary senses pass (a criterion reviews an answer)."""
    path = tmp_path / "module.py"
    assert findings(path, 'root = tmp_path_factory.mktemp("review-fixes")\n') == [
        f"{path}:1: the review process (name what it holds): 'review-fix'"]
    assert findings(path, '# the answers are reviewed; a review of the draft\nX = "peer review"\n') == []


def test_code_outside_comments_is_not_read(tmp_path):
    """A string in code (a regex, a test's payload) is not a citation; only comments and docstrings are."""
    path = tmp_path / "module.py"
    assert findings(path, 'PATTERN = "issue #12"\n') == []
