"""docs/performance.md holds each measured figure once, with its command: code and the other docs say the conclusion
and point to its row, so a re-measured figure is changed in one place and no copy drifts from it."""

from __future__ import annotations

import functools
import importlib
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PERFORMANCE = ROOT / "docs" / "performance.md"

#: A measured figure: a number with a unit of time, CPU or memory, or a ratio (x1.41, ×0.88).
FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:CPU-s|ms|MiB|GiB|s)\b|(?<!\w)[x×]\d+\.\d+")
#: Files whose comments could cite a measurement: code, configs, scripts (docs/*.md are checked section by section,
#: below; docs/performance.md is where the figures live).
CODE_SUFFIXES = {".py", ".yaml", ".yml", ".sh", ".sbatch", ".toml", ".cfg"}
CODE_NAMES = {"Makefile", "run"}
#: Top-level folders of tracked code, each checked as one case; "." is the files at the root.
FOLDERS = (".", "bench", "configs", "eval", "judge", "scripts", "serve", "slurm", "tests", "train")


def tracked_code(folder: str) -> list[Path]:
    """The tracked code files (``git ls-files``) directly at the root (``"."``) or anywhere under ``folder``, this test
    file left out (its docstrings name the figures it once found). Skips, saying why, where git cannot list them
    (not installed, or a checkout that is no git work tree: an exported tree)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"]
                                + ([] if folder == "." else [folder]), cwd=ROOT, capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("git is not installed: the code files these checks read are listed by `git ls-files`")
    if listed.returncode != 0:
        pytest.skip(f"`git ls-files` cannot list this checkout's code files: {listed.stderr.strip()[:300]}")
    out = listed.stdout.split("\n")
    paths = [ROOT / p for p in out if p and (folder != "." or "/" not in p)]
    return sorted(p for p in paths if (p.suffix in CODE_SUFFIXES or p.name in CODE_NAMES) and p.is_file()
                  and p.resolve() != Path(__file__).resolve())


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


#: Where a note's sentences end: a stop, then space and a capital, a quote or a bracket ("0.1 s", "judge.taxonomy" and
#: "docs/performance.md)" do not end one).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")


def cited_figures(path: Path) -> list[str]:
    """The figures of the sentences that cite a measurement: docs/performance.md, or, outside bench/, a bench script
    (a bench script's docstring names its own command and helper modules, ``bench/measure.py``, beside its settings:
    a 256 MiB KV cache, a sample every 0.1 s). A figure is a copy when the sentence citing the row gives it; another
    sentence's size ("a 1 MiB answer on 64 criteria") is an example."""
    in_bench = path.parent.name == "bench"
    found = []
    for line, block in comment_blocks(path):
        for sentence in SENTENCE_END.split(block):
            cites = "performance.md" in sentence or (not in_bench and "bench/" in sentence)
            if cites and FIGURE.search(sentence):
                rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
                found.append(f"{rel}:{line}: {FIGURE.findall(sentence)}")
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_comment_in_the_tree_copies_a_measured_figure(folder):
    """Each figure lives once, in docs/performance.md with its command: a comment that cites the doc or a bench script
    says what was found in words and names the row. The rule once read 7 named files; copies elsewhere drifted
    (eval/reports/html_explorer.py's 31 MiB page against the doc's 32.3 MiB, serve/engine_client.py's ~0.25/~2.4 ms
    of the engine-hop row, eval/validity/bias.py's ~0.7 s citing a row the doc does not have)."""
    assert [hit for path in tracked_code(folder) for hit in cited_figures(path)] == []


def test_the_tree_rule_catches_a_copy_and_passes_a_bench_script_s_own_settings(tmp_path):
    """By hand: a sentence naming the doc or another bench script beside a figure is a copy, in any code file; a bench
    script's docstring that shows its own command with its settings is not, nor a figure in a sentence citing
    nothing, nor a size given as an example beside a sentence that cites a row."""
    (tmp_path / "bench").mkdir()
    bench = tmp_path / "bench" / "page.py"
    bench.write_text('"""Run it.\n\n    python bench/page.py   # ~10 s\n\n'
                     'Sampled every 0.1 s (bench/measure.py).\n"""\n', encoding="utf-8")
    assert cited_figures(bench) == []
    module = tmp_path / "module.py"
    module.write_text("# aiohttp 0.236 ms against httpx 2.327 ms (python bench/engine_hop.py)\n\n"
                      "X = 1  # 5 s, from nowhere\n\n"
                      "# A 1 MiB answer is tokenized once. The fast tokenizer is quicker (docs/performance.md).\n",
                      encoding="utf-8")
    assert cited_figures(module) == ["module.py:1: ['0.236 ms', '2.327 ms']"]
    config = tmp_path / "local.yaml"
    config.write_text("# Eager fp32 starts in about 70 s\n# (docs/performance.md)\nport: 8000\n", encoding="utf-8")
    assert cited_figures(config) == ["local.yaml:1: ['70 s']"]
    assert len(tracked_code(".")) >= 1 and all("/" not in p.relative_to(ROOT).as_posix() for p in tracked_code("."))


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


#: A dotted name of the toolkit's code in a code span (`serve.schema.LARGE_BODY_DECODES`, `eval.scoring.holm`).
CODE_NAME = re.compile(r"`((?:eval|judge|serve|train)(?:\.\w+)+)`")
#: A repository path in a code span, alone or inside a command (`configs/serve/tiny-cpu.yaml`, `bench/X.py ...`).
REPO_PATH = re.compile(r"(?<![\w/.])((?:bench|configs|eval|judge|serve|train|tests|scripts|slurm|docs)/[\w./-]+"
                       r"\.(?:py|yaml|yml|sh|sbatch|md|jsonl))\b")
#: A file's path followed by a name defined in it (`eval/validity/bias.py` `MIN_SLOPE_ANSWERS`).
FILE_AND_NAME = re.compile(r"`((?:bench|eval|judge|serve|train|tests)/[\w/]+\.py)`\s+`(\w+)`")


def resolves(dotted: str) -> bool:
    """The longest importable module of the name, then each attribute after it."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_the_names_and_paths_the_performance_doc_cites_exist():
    """What a row names as its subject (`eval.scoring.holm`, `serve.jobs.Job.prefix_ids`), the files its commands
    read (`configs/train/tiny/seq2seq.yaml`, the test files timed) and a constant or fixture beside its file
    (`eval/validity/bias.py` `MIN_SLOPE_ANSWERS`, `tests/unit/conftest.py` `one_tokenizer_load_per_folder`) are in
    the tree: a rename leaves no row pointing at nothing."""
    perf = PERFORMANCE.read_text(encoding="utf-8")
    spans = " ".join(f"`{span}`" for span in re.findall(r"`([^`]+)`", perf))
    names = sorted(set(CODE_NAME.findall(perf)))
    assert {"eval.scoring.holm", "serve.schema.LARGE_BODY_DECODES", "serve.jobs.Job.prefix_ids"} <= set(names)
    assert [name for name in names if not resolves(name)] == []
    paths = sorted(set(REPO_PATH.findall(spans)))
    assert {"configs/serve/tiny-cpu.yaml", "tests/unit/test_slurm_eval_serve_wait.py"} <= set(paths)
    assert [path for path in paths if not (ROOT / path).is_file()] == []
    pairs = FILE_AND_NAME.findall(perf)
    assert ("eval/validity/bias.py", "MIN_SLOPE_ANSWERS") in pairs
    # the fixture the fast tier's row names for how today's unit tests load a judge-serve's tokenizer
    assert ("tests/unit/conftest.py", "one_tokenizer_load_per_folder") in pairs
    assert [f"{path} {name}" for path, name in pairs
            if not re.search(rf"^(?:def |class )?{name}\b", (ROOT / path).read_text(encoding="utf-8"), re.M)] == []


def test_the_name_check_refuses_what_is_not_there():
    """By hand: a module, a function and a class attribute resolve; a misspelt attribute or module does not."""
    assert resolves("eval.scoring.holm") and resolves("serve.jobs.Job.prefix_ids") and resolves("serve.jobs")
    assert not resolves("eval.scoring.holms") and not resolves("serve.nowhere.thing")
    assert REPO_PATH.findall("`judge-train --config configs/train/tiny/seq2seq.yaml`, `runs/demo/x.py`") == [
        "configs/train/tiny/seq2seq.yaml"]


#: Bench scripts whose data (the items, records or answers they time) changed, with the commit that last changed it: a
#: figure measured before is not one of today's bench. Keyed on the commit, not its day: a row measured earlier the
#: same day names that day too. Add a script here when its data changes; its rows then name that commit, in a note
#: ("measured before ... (commit, day); not re-measured") or saying why the change does not reach them, or name the
#: commit they were measured at, which has the change in its history.
DATA_CHANGED = {
    # bench/eval_metrics.py's items: each item's task type and criterion a pair the taxonomy has, on the item's scale
    # (after 7b393b70 gave each its criterion's scale); experts_tables.py and report_page.py time the same items
    "eval_metrics": "3bc44241",
    "experts_tables": "3bc44241",
    "report_page": "3bc44241",
    # the records name criteria scored on 0..2, the instant server answers on their scale
    "eval_client": "d2f71e30",
    # serve.py overhead decodes under the verdict regex (its judgments verdicts, not failures); ordering is unchanged
    "serve": "974399c7",
    # the samples' criteria go round every scale of the taxonomy, not Recommendations' first (Critical) ones
    "rewards": "550b7eb4",
}
#: A commit as the doc writes it (62b6790, 3bc44241).
COMMIT = re.compile(r"(?<![\w.])[0-9a-f]{7,40}(?!\w|\.\d)")


def _git(*args: str) -> bool:
    """Whether ``git args`` succeeds in this checkout; False where git is not installed."""
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@functools.cache
def has_in_history(commit: str, change: str) -> bool:
    """Whether ``change`` is ``commit`` or one of its ancestors (``git merge-base --is-ancestor``); False for a hex
    word that is no commit of this clone, and without git."""
    return _git("merge-base", "--is-ancestor", change, commit)


def knows_commits(*commits: str) -> bool:
    """Whether this checkout has git and each commit (a shallow clone or an exported tree may not)."""
    return all(_git("cat-file", "-e", f"{c}^{{commit}}") for c in commits)


def table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the doc's tables, headers and separators left out (a `\\|` inside a code span
    is not a cell's end)."""
    lines = [line.strip() for line in text.splitlines()]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] if line.startswith("|") else [] for line in lines]
    separator = [bool(row) and all(set(c) <= set("-: ") for c in row) for row in cells]
    return [row for n, row in enumerate(cells)
            if row and not separator[n] and not (n + 1 < len(cells) and separator[n + 1])]  # fmt: skip


def rows_on_old_data(text: str, changed: dict[str, str], after=has_in_history,
                     known=knows_commits) -> tuple[list[str], list[str]]:
    """The rows whose command (the last cell) runs a bench script of ``changed`` and which name neither the commit
    that changed its data nor a commit with that change in its history (``after(commit, change)``): their figures
    read as today's bench. Returned with the rows that could not be judged: where this checkout does not know the
    change (``known``: a shallow clone, an exported tree, no git), a row that names only other commits is one of
    them, since whether those come after the change takes the history; a row that names no commit, or the change
    (a prefix of its hash, either way), is judged all the same."""
    stale, unjudged = [], []
    for cells in table_rows(text):
        named = set(COMMIT.findall(" ".join(cells)))
        for script in sorted(set(re.findall(r"bench/(\w+)\.py", cells[-1])) & set(changed)):
            change, row = changed[script], f"{script}: {cells[0][:80]}"
            if any(change.startswith(c) or c.startswith(change) for c in named):
                continue
            if named and not known(change):
                unjudged.append(row)
            elif not any(after(c, change) for c in named):
                stale.append(row)
    return stale, unjudged


def skip_if_unjudged(unjudged: list[str]) -> None:
    """After the judged rows passed: skip, saying how many rows this checkout could not judge, if any."""
    if unjudged:
        pytest.skip(f"{len(unjudged)} rows name a commit other than the change of their bench's data, and this "
                    f"checkout does not have that change (a shallow clone, an exported tree, no git), so they were not "
                    f"judged (the others were): {unjudged}")


def test_a_row_measured_on_a_bench_s_old_data_says_so():
    """A row timed by a bench script whose data changed since names the commit of the change (its note: measured
    before, not re-measured) or the commit of a later measurement: the end-to-end `judge-eval score` row and five
    others described the bench as it is with figures of its items before they carried their criterion's scale."""
    perf = PERFORMANCE.read_text(encoding="utf-8")
    timed = [cells[0] for cells in table_rows(perf)
             if set(re.findall(r"bench/(\w+)\.py", cells[-1])) & set(DATA_CHANGED)]  # fmt: skip
    assert len(timed) >= 6
    stale, unjudged = rows_on_old_data(perf, DATA_CHANGED)
    assert stale == []
    skip_if_unjudged(unjudged)


def test_the_old_data_rule_reads_the_command_cell_and_the_commits():
    """By hand, with a made-up history (c0ffee1 before the change abc1234, fade123 after it): a row run by a changed
    script that names only the change's day, or a commit before it, is caught; one naming the change (a note, by its
    short or long hash) or a commit after it is not, nor a row that names the script outside its command cell, nor
    the header and separator."""
    text = ("| what | figure | command |\n|---|---|---|\n"
            "| old | 1.0 s at c0ffee1 (2026-12-07) | `python bench/eval_metrics.py --rounds 3` |\n"
            "| noted | 1.0 s; before ... (abc1234f, 2026-12-07); not re-measured | `python bench/eval_metrics.py` |\n"
            "| later | 1.0 s at fade123 (2026-12-07) | `python bench/report_page.py` |\n"
            "| elsewhere, as `bench/eval_metrics.py` runs it | 1.0 s | `git archive x \\| tar -x` |\n")
    assert len(table_rows(text)) == 4 and table_rows(text)[3][-1] == "`git archive x \\| tar -x`"
    history = {("fade123", "abc1234")}
    after = lambda commit, change: (commit, change) in history  # noqa: E731
    known = lambda *commits: True  # noqa: E731
    assert rows_on_old_data(text, {"eval_metrics": "abc1234", "report_page": "abc1234"}, after, known) == (
        ["eval_metrics: old"], [])
    assert COMMIT.findall("at 62b6790 (2026-12-07), 1,266 MiB, 1234567.5, judge.x; since 3bc44241.") == [
        "62b6790", "3bc44241"]
    if knows_commits("HEAD"):
        assert has_in_history("HEAD", "HEAD") and not has_in_history("0000000", "HEAD")


def test_a_row_measured_on_the_day_of_a_change_but_before_it_is_caught_without_its_note():
    """62b6790 was measured on 2026-12-07, the day 3bc44241 changed bench/eval_metrics.py's items after those runs: a
    row naming 62b6790 and that day, without a note naming the change, is caught, so the day cannot stand for the
    note; the same row naming a commit that holds the change (c2aa5e9a, where the rows were measured again) is not."""
    if not knows_commits(*DATA_CHANGED.values(), "62b6790", "c2aa5e9a"):
        pytest.skip("this checkout has no git history holding the commits that changed the benches' data")
    text = ("| what | figure | command |\n|---|---|---|\n"
            "| before | 6.19 CPU-s at 62b6790 (2026-12-07) | `python bench/eval_metrics.py --end-to-end` |\n"
            "| noted | 6.19 CPU-s at 62b6790 (2026-12-07), before 3bc44241 | `python bench/eval_metrics.py` |\n"
            "| after | 5.35 CPU-s at c2aa5e9a (2026-12-07) | `python bench/experts_tables.py` |\n")
    flagged, unjudged = rows_on_old_data(text, DATA_CHANGED)
    assert flagged == ["eval_metrics: before"] and unjudged == []


def test_without_the_history_a_row_naming_no_commit_or_the_change_is_still_judged():
    """In a checkout without the commits that changed the data (a shallow clone, an exported tree, no git) a row
    naming another commit cannot be judged: it is counted as such, not passed. A row that names no commit is on old
    data all the same, and one whose note names the change (by a prefix of its hash) is not."""
    text = ("| what | figure | command |\n|---|---|---|\n"
            "| no commit | 1.0 s (2026-12-07) | `python bench/eval_metrics.py` |\n"
            "| noted | 1.0 s; before ... (abc1234f, 2026-12-07); not re-measured | `python bench/eval_metrics.py` |\n"
            "| later | 1.0 s at fade123 (2026-12-07) | `python bench/eval_metrics.py` |\n")
    never = lambda *args: False  # noqa: E731
    assert rows_on_old_data(text, {"eval_metrics": "abc1234"}, after=never, known=never) == (
        ["eval_metrics: no commit"], ["eval_metrics: later"])


def test_without_git_the_history_checks_say_no_rather_than_fail(monkeypatch, tmp_path):
    """Where git is not installed, the checks of the history answer "not known" (the rows naming commits are then
    counted as not judged); they called git without catching its absence, and the test errored."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no git on it
    assert not knows_commits("HEAD")
    assert not has_in_history.__wrapped__("HEAD", "HEAD")


def test_without_git_the_comment_checks_skip_saying_why(monkeypatch, tmp_path):
    """The files the comment checks read are listed by ``git ls-files``: where git is not installed they skip, saying
    so, rather than error (they called git with ``check=True``, and its absence raised)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no git on it
    with pytest.raises(pytest.skip.Exception, match="git is not installed"):
        tracked_code("eval")
