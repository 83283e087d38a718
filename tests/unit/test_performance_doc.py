"""docs/performance.md holds each measured figure once, with its command: code and the other docs say the conclusion
and point to its row, so a re-measured figure is changed in one place and no copy drifts from it."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PERFORMANCE = ROOT / "docs" / "performance.md"

#: A measured figure: a number with a unit of time, CPU or memory, or a ratio (x1.41, ×0.88).
FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:CPU-s|ms|MiB|GiB|s)\b|(?<!\w)[x×]\d+\.\d+")
#: The comments that gave figures of the doc's rows, copied, until each pointed to its row instead.
POINTING_FILES = ("Makefile", "tests/conftest.py", "judge/__init__.py", "serve/tokenizer.py", "train/recipe_steps.py",
                  "bench/eval_metrics.py", "bench/serve.py")


def comment_blocks(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of each block a reader takes as one note: a docstring, or a run of ``#`` comment lines."""
    text = path.read_text(encoding="utf-8")
    pieces: list[tuple[int, str]] = []
    if path.suffix == ".py":
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.string[:3] in ('"""', "'''")):
                pieces.append((tok.start[0], tok.string))
    else:
        pieces = [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("#")]
    blocks: list[tuple[int, str]] = []
    end = -1
    for line, said in pieces:
        if blocks and said.startswith("#") and blocks[-1][1].lstrip().startswith("#") and line == end + 1:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + "\n" + said)
        else:
            blocks.append((line, said))
        end = line + said.count("\n")
    return blocks


def cited_figures(path: Path) -> list[str]:
    """The figures of the blocks that cite a measurement (docs/performance.md or a bench script)."""
    return [f"{path.relative_to(ROOT)}:{line}: {FIGURE.findall(block)}" for line, block in comment_blocks(path)
            if ("performance.md" in block or "bench/" in block) and FIGURE.search(block)]  # fmt: skip


@pytest.mark.parametrize("name", POINTING_FILES)
def test_a_comment_citing_a_measurement_points_to_its_row_without_copying_it(name):
    """train/recipe_steps.py gave 54.2/55.6 against 25.4/23.4 CPU-s, the Makefile 97.8/102.3/110.5 s, conftest
    27.3-28.5 CPU-s, serve/tokenizer.py 8.4 and 3.3 CPU-s (the doc's 8.38 and 3.34), judge/__init__.py 0.53-0.62,
    bench/serve.py ~0.5 ms per token (in no row): each now says what was found and names the row, or says it in
    words. bench/eval_metrics.py gave scipy.stats' import figures citing nothing; it now cites their row."""
    assert cited_figures(ROOT / name) == []


def test_the_figure_rule_sees_what_it_must():
    """By hand: a block citing the doc with a time, a CPU figure or a ratio is caught; a count of steps or tokens, a
    threshold, and a block that cites no measurement are not."""
    assert FIGURE.findall("took 54.2 CPU-s, 97.8 s, 10.7 MiB, 0.236 ms, ×1.41 and x0.88") == [
        "54.2 CPU-s", "97.8 s", "10.7 MiB", "0.236 ms", "×1.41", "x0.88"]
    assert FIGURE.findall("12 steps, ~200 tokens, p >= 0.98, the 151,665-token vocabulary, Python 3.11") == []


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = re.search(r"^#{1,3} ", text[start + len(heading):], flags=re.MULTILINE)
    return text[start:start + len(heading) + following.start()] if following else text[start:]


def test_the_criteria_auto_accuracy_lives_in_the_performance_doc_only():
    """The held-out accuracy table (0.735 type top-1, 0.80 / 0.78 / 0.73 by exact id, ...) is in docs/performance.md,
    with its command; docs/criteria-auto.md's Accuracy section explains the two readings and links there, no figure
    of the table repeated (a figure of three digits or more: 0.5 or 0.9 there are thresholds, not the table's)."""
    perf = PERFORMANCE.read_text(encoding="utf-8")
    table = _section(perf, "### `criteria: auto` accuracy")
    assert "`python bench/criteria_auto.py`" in table and "| all | 117 | **0.735** |" in table
    figures = {f for f in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", table) if sum(c.isdigit() for c in f) >= 3}
    assert {"0.735", "0.80", "0.78", "0.73", "0.082"} <= figures
    accuracy = _section((ROOT / "docs" / "criteria-auto.md").read_text(encoding="utf-8"), "## Accuracy")
    assert "performance.md#criteria-auto-accuracy" in accuracy
    repeated = sorted(f for f in figures if re.search(rf"(?<![\w.]){re.escape(f)}(?![\w.])", accuracy))
    assert repeated == []
    assert perf.count("**0.735**") == 1
