"""The documentation: the site builds with ``mkdocs build --strict`` (no broken link between pages, no page left out
of the nav) and every repository path the README and the docs name exists, so neither rots as the code moves."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200

#: Top-level folders whose paths, named in the docs, must exist. Other slash-separated words in the docs are run
#: folders a user creates (``runs/...``), hub ids (``ai-forever/POLLUX``) or paths inside another repository.
REPO_FOLDERS = ("judge", "train", "serve", "eval", "configs", "slurm", "bench", "tests", "scripts", "docs")
_PATH = re.compile(r"(?<![\w/.~$<-])((?:%s)/[\w./-]*)" % "|".join(REPO_FOLDERS))
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
#: Public repositories the docs cite by path (``ai-forever/POLLUX src/metrics.py``): a path right after one is theirs.
_OTHER_REPO = re.compile(r"(?:ai-forever/POLLUX|MERA-Evaluation/MERA|MERA-evaluation/MERA)\s*`?$")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def named_paths(text: str) -> list[str]:
    """Repository paths a Markdown text names in code spans and fenced blocks (``tests/unit/test_prompts.py::test_x`` -> the file)."""
    spans: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            spans.append(line)
            continue
        for match in _CODE_SPAN.finditer(line):
            if not _OTHER_REPO.search(line[: match.start()]):
                spans.append(match.group(1))
    paths = []
    for span in spans:
        for match in _PATH.finditer(span):
            path = match.group(1).split("::")[0].rstrip(".,:;")
            if "*" in span[match.start():match.end() + 1]:
                continue  # a glob such as tests/*_gpu.py names no one file
            paths.append(path)
    return paths


def test_readme_introduces_and_stays_short():
    """The README is an introduction of at most 200 lines; everything else is a docs page."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


def test_every_repository_path_the_docs_name_exists():
    """Each path under a repository folder named in README.md or docs/*.md exists in the repository."""
    missing = []
    for doc in doc_files():
        for path in named_paths(doc.read_text(encoding="utf-8")):
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, "paths named in the docs that the repository does not hold:\n" + "\n".join(missing)


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test function) pairs a text names: ``tests/<file>.py::test_a``, and each shorthand ```::test_b``` later
    on the same line (a table cell), which names a test of the file named last before it."""
    pairs = []
    for line in text.splitlines():
        current = None
        for match in re.finditer(r"`(tests/[\w/]+\.py)?::(\w+)`", line):
            current = match.group(1) or current
            if current is not None:
                pairs.append((current, match.group(2)))
    return pairs


def test_every_test_the_docs_name_exists():
    """Each ``tests/<file>.py::test_name`` the docs cite (the fidelity, reliability and security tables) is a test
    function of that file: a renamed or moved test leaves no claim without its proof."""
    missing = []
    for doc in doc_files():
        for path, name in named_tests(doc.read_text(encoding="utf-8")):
            source = ROOT / path
            if source.is_file() and not re.search(rf"\bdef {name}\b", source.read_text(encoding="utf-8")):
                missing.append(f"{doc.relative_to(ROOT)}: {path}::{name}")
    assert not missing, "tests named in the docs that do not exist:\n" + "\n".join(missing)


def test_every_relative_link_in_the_readme_and_docs_resolves():
    """Each relative link (``[text](docs/x.md#part)``) points at a file that exists."""
    broken = []
    for doc in doc_files():
        for target in _LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (doc.parent / target.split("#")[0]).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_the_path_finder_reads_spans_and_blocks_and_leaves_other_repositories_alone():
    text = ("See `tests/unit/test_prompts.py::test_x` and `eval/judging/config.py`, `runs/eval/new`, `tests/*_gpu.py`,\n"
            "ai-forever/POLLUX `src/metrics.py` and ai-forever/POLLUX `demo/serve_pollux_demo.py`.\n"
            "```bash\njudge-train --config configs/train/tiny/seq2seq.yaml --out runs/x\n```\n")
    assert named_paths(text) == ["tests/unit/test_prompts.py", "eval/judging/config.py", "configs/train/tiny/seq2seq.yaml"]
    assert named_tests("`tests/test_a.py::test_x`, `::test_y`; `tests/test_b.py::test_z`") == [
        ("tests/test_a.py", "test_x"), ("tests/test_a.py", "test_y"), ("tests/test_b.py", "test_z")]
    # A shorthand after a parenthesis still names a test of the file before it (such names once went unchecked).
    assert named_tests("`tests/a.py::test_x` (a note), `::test_y`\n`::test_z` alone") == [
        ("tests/a.py", "test_x"), ("tests/a.py", "test_y")]


def test_site_builds_strictly(tmp_path):
    """``mkdocs build --strict`` succeeds: every nav entry exists, every page is in the nav, no link or anchor is
    broken (mkdocs.yml's ``validation`` makes each of these a warning, which --strict turns into a failure)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "fidelity" / "index.html").is_file()


@pytest.mark.parametrize("page", ["evaluation.md", "performance.md", "fidelity.md"])
def test_pages_other_pages_rely_on_exist(page):
    """The pages the README, the Makefile and other pages point at by name are there."""
    assert (ROOT / "docs" / page).is_file()


def test_the_docs_extra_is_what_the_suite_builds_the_site_with():
    """`make docs` builds in a venv holding only pyproject's `docs` extra; the suite builds with the `dev` extra's
    mkdocs lines. They are the same requirements, so a site the suite builds is the site `make docs` builds."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert sorted(extras["docs"]) == sorted(r for r in extras["dev"] if r.startswith("mkdocs"))
    assert extras["docs"] and all(r.startswith("mkdocs") for r in extras["docs"])
