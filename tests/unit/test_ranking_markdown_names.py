"""The ranking's comparison pages name candidates, runs and the judge from the runs' own files: in compare.md (two
runs, or a leaderboard) each is cut as ``judge-eval compare`` of scored runs cuts a run's name
(``eval.scoring.compare.MD_RUN_NAME_CHARS``, start and end kept) and listed whole once under the first table; the
leaderboard's compare.html cuts them as the other pages cut names (``eval.reports.names.NAME_CHARS``)."""

from __future__ import annotations

from pathlib import Path

from eval.ranking.compare import compare_rankings, render_ranking_compare_markdown
from eval.ranking.leaderboard import leaderboard, render_leaderboard_markdown, render_leaderboard_page
from eval.reports.html_text import escape
from eval.reports.names import NAME_CHARS, shown_name
from eval.reports.report import md_text
from eval.scoring.compare import MD_RUN_NAME_CHARS
from tests.support.eval_ranking import write_rank_run

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"
#: Model paths as a checkpoint's folder names them, one with a "|" and a line break in it.
LONG_A = "/scratch/checkpoints/" + "a" * 260 + "/step-100"
LONG_B = "/scratch/checkpoints/" + "b" * 250 + "/step | 200\nfinal"
JUDGE = "/scratch/judges/" + "j" * 200 + "/judge-7b"


def _run(folder: Path, model: str, scores: dict[int, float]) -> Path:
    return write_rank_run(folder, model, [(p, "m", "X", SCALE, score) for p, score in scores.items()])


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def _full_list(text: str) -> list[str]:
    return text.split("Names cut above, each in full:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()


def test_two_runs_compare_markdown_cuts_model_and_judge_names_and_lists_them_in_full(tmp_path):
    """Both model paths (300 characters each) in the heading and the judge's in the summary are each cut to
    ``MD_RUN_NAME_CHARS`` characters as a reader sees them, on one line with its "|" escaped, and listed whole once
    under the table."""
    a = _run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 8)})
    b = _run(tmp_path / "b", "B", {p: 1.0 for p in range(1, 8)})
    result = compare_rankings(a, b, n_boot=50)
    result = {**result, "a": {**result["a"], "model": LONG_A}, "b": {**result["b"], "model": LONG_B},
              "judge": JUDGE}
    text = render_ranking_compare_markdown(result)
    title = text.splitlines()[0]
    shown_a, shown_b = md_text(shown_name(LONG_A, MD_RUN_NAME_CHARS)), md_text(shown_name(LONG_B.replace("\n", " "),
                                                                                         MD_RUN_NAME_CHARS))
    assert title == f"# {shown_b} (B) vs {shown_a} (A): POLLUX matrix, B − A"
    assert shown_a.endswith("/step-100") and shown_b.endswith("&#124; 200 final") and "…" in shown_a
    shown_judge = md_text(shown_name(JUDGE, MD_RUN_NAME_CHARS))
    assert f"judge {shown_judge};" in text
    for name in (LONG_A, LONG_B, JUDGE):
        assert text.count(md_text(name)) == 1  # whole, once: in the list
    assert _full_list(text) == [f"- {shown_b} (B): {md_text(LONG_B)}", f"- {shown_a} (A): {md_text(LONG_A)}",
                                f"- judge {shown_judge}: {md_text(JUDGE)}"]
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| criteria_name | m | mean_over_meta |"  # the list follows the table, outside it


def test_two_runs_compare_markdown_lists_nothing_when_no_name_was_cut(tmp_path):
    a = _run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 8)})
    b = _run(tmp_path / "b", "B", {p: 1.0 for p in range(1, 8)})
    text = render_ranking_compare_markdown(compare_rankings(a, b, n_boot=50))
    assert text.startswith("# B (B) vs A (A): POLLUX matrix") and "in full" not in text


def _board(tmp_path: Path) -> tuple[dict, list[str]]:
    """Three candidates, two of them named by a long path: the result and each candidate's label, whole."""
    runs = [_run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 8)}),
            _run(tmp_path / "b", "B", {p: 1.0 for p in range(1, 8)}),
            _run(tmp_path / "c", "C", {p: 0.0 for p in range(1, 8)})]
    result = leaderboard(list(map(str, runs)), n_boot=50, seed=0)
    long = {str(tmp_path / "a"): LONG_A, str(tmp_path / "b"): LONG_B}
    result["models"] = [{**m, "model": long.get(m["run"], m["model"])} for m in result["models"]]
    result["judge"] = JUDGE
    return result, [f"{m['model']} ({m['run']})" for m in result["models"]]


def test_leaderboard_markdown_cuts_candidate_names_and_lists_them_in_full(tmp_path):
    """A candidate's model path, in each of its table cells (its row, and every other candidate's "not
    distinguishable from" / "not tested against", and the pairs), is cut as compare.md of scored runs cuts a run, the
    end (its folder) kept, and each is listed whole once under the board."""
    result, labels = _board(tmp_path)
    text = render_leaderboard_markdown(result)
    table_lines = [line for line in text.splitlines() if line.startswith("|") and "---" not in line]
    assert not any("a" * 90 in line or "b" * 90 in line for line in table_lines)  # no name whole in a table
    shown = {label: md_text(shown_name(label.replace("\n", " "), MD_RUN_NAME_CHARS)) for label in labels}
    assert all(text.count(md_text(label)) == 1 for label in labels if len(label) > MD_RUN_NAME_CHARS)
    assert text.count(md_text(JUDGE)) == 1 and f"judge {md_text(shown_name(JUDGE, MD_RUN_NAME_CHARS))};" in text
    assert _full_list(text) == [*(f"- {shown[label]}: {md_text(label)}" for label in labels
                                  if len(label) > MD_RUN_NAME_CHARS),
                                f"- judge {md_text(shown_name(JUDGE, MD_RUN_NAME_CHARS))}: {md_text(JUDGE)}"]
    assert text.index("Names cut above") < text.index("## Pairs")  # under the first table
    board = [_cells(line) for line in table_lines[1:] if not line.startswith("| A ")][:3]
    assert {row[1] for row in board} == set(shown.values())


def test_leaderboard_page_cuts_candidate_names_as_the_other_pages(tmp_path):
    result, labels = _board(tmp_path)
    page = render_leaderboard_page(result)
    long = [label for label in labels if len(label) > NAME_CHARS]
    assert long
    for label in long:
        assert escape(label) not in page and escape(shown_name(" ".join(label.splitlines()))) in page
    assert escape(JUDGE) in page  # 216 characters: under the pages' bound, whole


def test_leaderboard_console_lines_write_a_name_as_compare_prints_a_run(tmp_path, capsys):
    """judge-eval compare of three rank runs prints each candidate's model as ``judge-eval compare`` of scored runs
    prints a run's name (``eval.scoring.compare.console_name``: escapes made visible, cut at ``NAME_CHARS``), so an
    escape sequence or a line break in it never acts on the terminal and a long path is not printed whole."""
    import json

    from eval.cli import main
    from eval.scoring.compare import console_name

    runs = [_run(tmp_path / "a", "A", {p: 2.0 for p in range(1, 8)}),
            _run(tmp_path / "b", "B\x1b[2J\nfake line", {p: 1.0 for p in range(1, 8)}),
            _run(tmp_path / "c", LONG_A, {p: 0.0 for p in range(1, 8)})]
    out = tmp_path / "board"
    assert main(["compare", *map(str, runs), "--out", str(out), "--n-boot", "120"]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\nfake line" not in printed and LONG_A not in printed
    models = json.loads((out / "compare.json").read_text(encoding="utf-8"))["models"]
    for m in models:
        assert f"{m['rank']}. {console_name(m['model'] + ' (' + m['run'] + ')')}: " in printed


def test_leaderboard_console_lines_tell_apart_candidates_cut_alike(tmp_path, capsys):
    """Two candidates of one long model path in run folders apart only before the last 99 characters the cut keeps
    (a sweep's lr-1e-5 and lr-2e-5): their printed labels are told apart by the mark compare.md and compare.html
    give them (" (#" and 8 hex digits of the whole label's SHA-256), not printed alike."""
    import hashlib

    from eval.cli import main
    from eval.scoring.compare import console_name

    tail = "r" * 120
    runs = [_run(tmp_path / f"lr-1e-5-{tail}", LONG_A, {p: 2.0 for p in range(1, 8)}),
            _run(tmp_path / f"lr-2e-5-{tail}", LONG_A, {p: 1.0 for p in range(1, 8)}),
            _run(tmp_path / "c", "C", {p: 0.0 for p in range(1, 8)})]
    labels = [f"{LONG_A} ({run})" for run in runs[:2]]
    assert console_name(labels[0]) == console_name(labels[1])  # what the cut alone prints
    assert main(["compare", *map(str, runs), "--out", str(tmp_path / "board"), "--n-boot", "120"]) == 0
    printed = capsys.readouterr().out
    ranked = [line.split(": ", 1)[0].split(". ", 1)[1] for line in printed.splitlines()[:3]]
    marked = [f"{console_name(label)} (#{hashlib.sha256(label.encode()).hexdigest()[:8]})" for label in labels]
    assert ranked == [*marked, "C (" + str(runs[2]) + ")"]
