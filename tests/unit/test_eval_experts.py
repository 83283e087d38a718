"""eval.experts.tables / `judge-eval experts`: the paper's expert-only tables (Tables 1, 9, 10 Experts, 14-16 Experts) on a
rebuilt miniature of the release; every expected figure is worked out by hand below."""

from __future__ import annotations

import csv
import json
import shlex
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.experts.tables import _TABLES, AVG, POOLED, expert_tables
from tests.support.release_artifacts import NOT_APPLICABLE, released_row, write_released_dataset

EDITING, POETRY = ("Editing",), ("Literary text", "Poetry")
CODE_NEW, CODE_FIX = ("Code creation", "Python"), ("Code modification", "Python")

# (item, evaluated model, task path, criterion, expert scores with -1 for an abstention)
#  split: Editing and Code creation are Standard; Literary text and Code modification are Zero-Shot task types
#  (paper, Appendix D.2). Item mean over non-abstaining experts | experts' VC (largest share, >= 2 experts):
ITEMS = [
    ("1", "gpt4", EDITING, "repeats", [2, 2, 1]),                    # 5/3  | 2/3
    ("2", "gpt4", EDITING, "proactivity", [0, -1, 0]),               # 0    | 1 (two experts once -1 is out)
    ("3", "gpt4", POETRY, "rhyme_quality__3", [2, 1, 2, 1, -1]),     # 1.5  | 2/4
    ("4", "llama", POETRY, "rhyme_quality__3", [2, 2]),              # 2    | 1
    ("5", "llama", CODE_NEW, "operability__5", [1]),                 # 1    | none (one expert)
    ("6", "llama", EDITING, "repeats", [-1, -1]),                    # none: every expert abstained
    ("7", "llama", CODE_FIX, "correct_answer__28", [0]),             # 0    | none
    ("8", "gpt4", EDITING, "narushenie_formata", [0, 0, 0, 0, 1]),   # 0.2  | 4/5
]


def _rows():
    return [released_row(path, crit, [(s, NOT_APPLICABLE if s == -1 else "Комментарий эксперта.") for s in scores],
                         instruction=f"Задание {item}.", answer=f"Ответ {item}.", model_id=model)
            for item, model, path, crit, scores in ITEMS]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    folder = write_released_dataset(tmp_path_factory.mktemp("release") / "POLLUX", _rows())
    return expert_tables(judge.load_records(folder))


def _name(criterion_id: str) -> str:
    return judge.load_taxonomy().criteria[criterion_id].name["ru"]


def test_mean_by_model_per_split_table_10(tables):
    """Table 10's Experts column per split, Avg. pooled over items: Zero-Shot gpt4 {3} 1.5, llama {4, 7} (2+0)/2 = 1,
    Avg. (1.5+2+0)/3 = 7/6 (the mean of the rows would be 1.25); Standard gpt4 {1, 2, 8} (5/3+0+0.2)/3 = 28/45,
    llama {5} 1 (item 6 has no expert), Avg. (5/3+0+0.2+1)/4 = 43/60; Full test gpt4 (5/3+0+1.5+0.2)/4 = 101/120,
    llama (2+1+0)/3 = 1, Avg. 191/30 / 7 = 191/210."""
    by_model = tables["tables"]["mean_by_model"]
    expected = {"zero_shot": {"gpt4": (1, 1.5), "llama": (2, 1.0), POOLED: (3, 7 / 6)},
                "standard": {"gpt4": (3, 28 / 45), "llama": (1, 1.0), POOLED: (4, 43 / 60)},
                "all": {"gpt4": (4, 101 / 120), "llama": (3, 1.0), POOLED: (7, 191 / 210)}}
    for split, rows in expected.items():
        got = {row: cols["Experts"] for row, cols in by_model[split].items()}
        assert got.keys() == rows.keys()
        for row, (n, value) in rows.items():
            assert got[row][0] == n and got[row][1] == pytest.approx(value), (split, row)


def test_mean_by_task_type_and_criterion_tables_1_and_9(tables):
    """Full test cross tables: Editing gpt4 {1, 2, 8} 28/45, llama none (item 6 unscored), pooled column 28/45;
    Literary text gpt4 1.5, llama 2, pooled 1.75; Code creation llama 1; Code modification llama 0. By criterion:
    rhyme quality gpt4 1.5, llama 2; the Critical format criterion gpt4 0.2; Avg. row gpt4 101/120 as Table 10's."""
    by_task = tables["tables"]["mean_by_task_type"]["all"]
    assert by_task["Editing"]["gpt4"] == (3, pytest.approx(28 / 45)) and "llama" not in by_task["Editing"]
    assert by_task["Editing"][POOLED] == (3, pytest.approx(28 / 45))
    assert by_task["Literary text"] == {"gpt4": (1, 1.5), "llama": (1, 2.0), POOLED: (2, 1.75)}
    assert by_task["Code creation"] == {"llama": (1, 1.0), POOLED: (1, 1.0)}
    assert by_task["Code modification"] == {"llama": (1, 0.0), POOLED: (1, 0.0)}
    by_criterion = tables["tables"]["mean_by_criterion"]["all"]
    assert by_criterion[_name("rhyme_quality__3")] == {"gpt4": (1, 1.5), "llama": (1, 2.0), POOLED: (2, 1.75)}
    assert by_criterion[_name("narushenie_formata")]["gpt4"] == (1, pytest.approx(0.2))
    assert by_criterion[_name("repeats")] == {"gpt4": (1, pytest.approx(5 / 3)), POOLED: (1, pytest.approx(5 / 3))}
    assert by_criterion[POOLED]["gpt4"] == (4, pytest.approx(101 / 120))
    assert tables["english_names"][_name("rhyme_quality__3")] == "Rhyme quality"


def test_experts_verdict_confidence_tables_14_to_16(tables):
    """Experts' VC on the Full test, items with >= 2 non-abstaining experts (1, 2, 3, 4, 8): by model gpt4
    (2/3+1+1/2+4/5)/4 = 89/120, llama {4} 1, Avg. (89/30+1)/5 = 119/150; by task type Editing (2/3+1+4/5)/3 = 37/45,
    Literary text (1/2+1)/2 = 3/4, the code task types absent (one expert each: the paper's "—"); by criterion the
    Critical format criterion 4/5 and the same pooled Avg. 119/150."""
    vc = tables["tables"]
    by_model = {row: cols["Experts"] for row, cols in vc["vc_by_model"]["all"].items()}
    assert by_model["gpt4"] == (4, pytest.approx(89 / 120)) and by_model["llama"] == (1, 1.0)
    assert by_model[POOLED] == (5, pytest.approx(119 / 150))
    by_task = {row: cols["Experts"] for row, cols in vc["vc_by_task_type"]["all"].items()}
    assert by_task.keys() == {"Editing", "Literary text", POOLED}
    assert by_task["Editing"] == (3, pytest.approx(37 / 45)) and by_task["Literary text"] == (2, 0.75)
    by_criterion = {row: cols["Experts"] for row, cols in vc["vc_by_criterion"]["all"].items()}
    assert by_criterion[_name("narushenie_formata")] == (1, pytest.approx(0.8))
    assert by_criterion[POOLED] == by_model[POOLED] == by_task[POOLED]


def test_counts_say_what_was_left_out(tables):
    """8 items, 4 abstentions (items 2, 3 one each, item 6 two), 1 item without an expert, 2 single-expert items,
    Zero-Shot {3, 4, 7} and Standard {1, 2, 5, 6, 8}, of which every item but 6 has an expert score; the released
    criteria_score is the experts' mean throughout."""
    assert tables["counts"] == {"n_records": 8, "by_split": {"zero_shot": 3, "standard": 5, "unknown": 0, "all": 8},
                                "n_no_experts": 1, "n_single_expert": 2, "n_abstentions": 4,
                                "n_scored_by_split": {"zero_shot": 3, "standard": 4, "unknown": 0, "all": 7},
                                "n_criteria_score_differs": 0}


def test_the_experts_command_writes_csv_and_markdown(tmp_path):
    """`judge-eval experts --data FOLDER --out OUT`: experts_tables.csv in long form, experts.md and experts.html
    with the tables."""
    folder = write_released_dataset(tmp_path / "POLLUX", _rows())
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "out")]) == 0
    with (tmp_path / "out" / "experts_tables.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    avg = [r for r in rows if (r["table"], r["split"], r["row"]) == ("mean_by_model", "zero_shot", AVG)]
    assert len(avg) == 1 and avg[0]["n_items"] == "3" and float(avg[0]["value"]) == pytest.approx(7 / 6)
    assert avg[0]["paper"].startswith("Table 10")
    rhyme = [r for r in rows if r["table"] == "vc_by_criterion" and r["split"] == "all"
             and r["row"] == _name("rhyme_quality__3")]
    assert [(r["row_en"], r["column"], r["n_items"], float(r["value"])) for r in rhyme] == [
        ("Rhyme quality", "Experts", "2", 0.75)]
    page = (tmp_path / "out" / "experts.md").read_text(encoding="utf-8")
    assert "## The experts' own tables (judge-independent)" in page and "(Table 1)" in page and "(Table 9)" in page
    assert "| Literary text | 1.500 (1) | 2.000 (1) | 1.750 (2) |" in page
    html = (tmp_path / "out" / "experts.html").read_text(encoding="utf-8")
    assert "<tr><td>Literary text</td><td>1.500 (1)</td><td>2.000 (1)</td><td>1.750 (2)</td></tr>" in html
    assert "<h2>The experts&#x27; own tables (judge-independent)</h2>" in html and "<script" not in html


def test_the_experts_command_has_help(capsys):
    """`judge-eval experts --help` exits 0 and names both outputs."""
    with pytest.raises(SystemExit) as exit_info:
        main(["experts", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "experts_tables.csv" in out and "experts.md" in out and "experts.html" in out


def test_a_split_without_an_expert_score_says_so_on_the_console(tmp_path, capsys):
    """Standard's only item has every expert abstaining: its tables are empty, and the console line says so for that
    split (a KeyError on its missing Avg. row once ended the command after the files were written)."""
    rows = [_rows()[5], _rows()[3]]  # item 6 (Editing, both abstained), item 4 (Poetry, [2, 2])
    folder = write_released_dataset(tmp_path / "POLLUX", rows)
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out
    assert "Zero-Shot test: mean 2.000 over 1 item," in said and "Standard test: no item with an expert score" in said


def test_data_without_any_expert_score_is_refused(tmp_path, capsys):
    """Every expert abstaining on every item (or no experts at all): the tables would all be empty. It wrote them,
    printed "no item with an expert score" and exited 0; the help says the tables need labelled rows, so now exit
    2 with one line naming --data, and nothing written."""
    only_abstentions = write_released_dataset(tmp_path / "ABSTAINED", [_rows()[5]])  # item 6: both experts abstain
    out = tmp_path / "out"
    assert main(["experts", "--data", str(only_abstentions), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"judge-eval experts: error: --data {only_abstentions}: no item with an expert score (1 record, 2 expert "
        "abstentions); the experts' tables need labelled rows\n")
    assert not out.exists()


@pytest.fixture(scope="module")
def tables_without_critical(tmp_path_factory):
    folder = write_released_dataset(tmp_path_factory.mktemp("release") / "POLLUX", _rows())
    return expert_tables(judge.load_records(folder), critical_in_means="exclude")


def test_critical_criteria_in_the_means_is_a_named_choice_both_ways(tables, tables_without_critical):
    """The paper does not say whether the two Critical criteria count in the mean scores; POLLUX's src/metrics.py
    leaves 0/1 criteria out of its means. Item 8 (the Critical format criterion, gpt4, Standard, mean 0.2) is
    the only Critical item. include (the default): the figures above. exclude, by hand: Standard gpt4 {1, 2}
    (5/3 + 0)/2 = 5/6, Avg. {1, 2, 5} (5/3 + 0 + 1)/3 = 8/9; Full test gpt4 {1, 2, 3} (5/3 + 0 + 1.5)/3 = 19/18,
    Avg. of 6 items (5/3 + 0 + 1.5 + 2 + 1 + 0)/6 = 37/36; Zero-Shot unchanged (7/6); Table 1 Editing gpt4 {1, 2} 5/6;
    Table 9 keeps the criterion's own row (0.2) and its Avg. row is gpt4 19/18, all 37/36; the VC tables unchanged."""
    assert tables["critical_in_means"] == {"setting": "include", "n_items": 1}
    assert tables["tables"]["mean_by_model"]["standard"][POOLED]["Experts"] == (4, pytest.approx(43 / 60))
    out = tables_without_critical
    assert out["critical_in_means"] == {"setting": "exclude", "n_items": 1}
    by_model = out["tables"]["mean_by_model"]
    expected = {"zero_shot": {"gpt4": (1, 1.5), "llama": (2, 1.0), POOLED: (3, 7 / 6)},
                "standard": {"gpt4": (2, 5 / 6), "llama": (1, 1.0), POOLED: (3, 8 / 9)},
                "all": {"gpt4": (3, 19 / 18), "llama": (3, 1.0), POOLED: (6, 37 / 36)}}
    for split, rows in expected.items():
        got = {row: cols["Experts"] for row, cols in by_model[split].items()}
        assert got.keys() == rows.keys()
        for row, (n, value) in rows.items():
            assert got[row][0] == n and got[row][1] == pytest.approx(value), (split, row)
    assert out["tables"]["mean_by_task_type"]["all"]["Editing"] == {"gpt4": (2, pytest.approx(5 / 6)),
                                                                    POOLED: (2, pytest.approx(5 / 6))}
    by_criterion = out["tables"]["mean_by_criterion"]["all"]
    assert by_criterion[_name("narushenie_formata")] == {"gpt4": (1, pytest.approx(0.2)), POOLED: (1, pytest.approx(0.2))}
    assert by_criterion[POOLED] == {"gpt4": (3, pytest.approx(19 / 18)), "llama": (3, 1.0), POOLED: (6, pytest.approx(37 / 36))}
    assert list(by_criterion)[-1] == POOLED
    for key in ("vc_by_model", "vc_by_task_type", "vc_by_criterion"):
        assert out["tables"][key] == tables["tables"][key]


@pytest.mark.parametrize("option, default, split, console, figures", [
    # without the Critical item, the Standard Avg. is 8/9; with it (the default): 43/60
    ("--critical-in-means", "include", "standard", "Critical criteria in the means: {}", {"exclude": 8 / 9,
                                                                                        None: 43 / 60}),
    # each annotation once, the Zero-Shot Avg. is 10/7; each item once (the default): 7/6
    ("--mean-over", "items", "zero_shot", "means over {}", {"annotations": 10 / 7, None: 7 / 6}),
], ids=["critical-in-means", "mean-over"])  # fmt: skip
def test_the_experts_command_names_its_choices(tmp_path, capsys, option, default, split, console, figures):
    """`judge-eval experts` with a named choice writes its figures (the Avg. of a split's means by model in the CSV)
    and says which setting was used in experts.md, experts.html and on the console; without the flag, the default."""
    folder = write_released_dataset(tmp_path / "POLLUX", _rows())
    for flag, expected_avg in figures.items():
        out = tmp_path / (flag or "default")
        assert main(["experts", "--data", str(folder), "--out", str(out), *([option, flag] if flag else [])]) == 0
        setting = flag or default
        with (out / "experts_tables.csv").open(encoding="utf-8") as f:
            avg = [r for r in csv.DictReader(f) if (r["table"], r["split"], r["row"]) == ("mean_by_model", split, AVG)]
        assert float(avg[0]["value"]) == pytest.approx(expected_avg)
        assert f"({option} {setting};" in (out / "experts.md").read_text(encoding="utf-8")
        assert f"({option} {setting};" in (out / "experts.html").read_text(encoding="utf-8")
        assert console.format(setting) in capsys.readouterr().out


def test_an_item_left_with_one_expert_by_an_abstention_has_a_mean_but_no_verdict_confidence(tmp_path):
    """Item A [2, -1]: one expert once the abstention is out, so its score 2 counts in the means but it has no
    Verdict Confidence (Appendix D.2.2 needs two or more experts; Table 15's single-annotator task types read "—");
    item B [1, 1]: mean 1, VC 1. Standard gpt4: mean (2 + 1)/2 = 1.5 over 2 items, VC 1 over 1 item."""
    rows = [released_row(EDITING, "repeats", [(2, "Комментарий эксперта."), (-1, NOT_APPLICABLE)],
                         instruction="Задание A.", answer="Ответ A.", model_id="gpt4"),
            released_row(EDITING, "proactivity", [(1, "Комментарий эксперта."), (1, "Комментарий эксперта.")],
                         instruction="Задание B.", answer="Ответ B.", model_id="gpt4")]
    out = expert_tables(judge.load_records(write_released_dataset(tmp_path / "POLLUX", rows)))
    assert out["tables"]["mean_by_model"]["standard"]["gpt4"]["Experts"] == (2, 1.5)
    assert out["tables"]["vc_by_model"]["standard"]["gpt4"]["Experts"] == (1, 1.0)
    assert out["counts"]["n_single_expert"] == 1 and out["counts"]["n_abstentions"] == 1


def test_mean_over_annotations_is_a_named_choice(tables, tmp_path):
    """The paper defines an item's score as the mean of its point estimates (Section 2.3) and its tables as "mean
    expert scores", without writing how a cell pools them: ``mean_over="annotations"`` weighs each item by its
    non-abstaining experts (every point estimate once), ``items`` (the default) each item once. By hand, sums of
    point estimates / their number: Zero-Shot gpt4 {3} 6/4 = 1.5, llama {4, 7} (4 + 0)/(2 + 1) = 4/3, Avg. 10/7 (items:
    7/6); Standard gpt4 {1, 2, 8} (5 + 0 + 1)/(3 + 2 + 5) = 3/5, llama {5} 1, Avg. 7/11; Full test gpt4 12/14 = 6/7,
    llama {4, 5, 7} 5/4, Avg. 17/18. Cells still count items; the VC tables are per item either way."""
    records = judge.load_records(write_released_dataset(tmp_path / "POLLUX", _rows()))
    out = expert_tables(records, mean_over="annotations")
    assert tables["mean_over"] == "items" and out["mean_over"] == "annotations"
    expected = {"zero_shot": {"gpt4": (1, 1.5), "llama": (2, 4 / 3), POOLED: (3, 10 / 7)},
                "standard": {"gpt4": (3, 3 / 5), "llama": (1, 1.0), POOLED: (4, 7 / 11)},
                "all": {"gpt4": (4, 6 / 7), "llama": (3, 5 / 4), POOLED: (7, 17 / 18)}}
    for split, rows in expected.items():
        got = {row: cols["Experts"] for row, cols in out["tables"]["mean_by_model"][split].items()}
        assert got.keys() == rows.keys()
        for row, (n, value) in rows.items():
            assert got[row][0] == n and got[row][1] == pytest.approx(value), (split, row)
    # Table 1, Editing: gpt4 {1, 2, 8} as Standard's gpt4 (3/5); Table 9, the Critical format criterion: item 8 alone.
    assert out["tables"]["mean_by_task_type"]["all"]["Editing"]["gpt4"] == (3, pytest.approx(3 / 5))
    assert out["tables"]["mean_by_criterion"]["all"][_name("narushenie_formata")]["gpt4"] == (1, pytest.approx(0.2))
    for key in ("vc_by_model", "vc_by_task_type", "vc_by_criterion"):
        assert out["tables"][key] == tables["tables"][key]


def test_an_evaluated_model_named_like_the_pooled_row_keeps_its_own_row(tmp_path):
    """An evaluated model named "Avg." (the pooled row's label) is a group like any other: its Zero-Shot row {4, 7}
    (2 + 0)/2 = 1 stands beside the pooled row 7/6 in the tables, experts.md (marked apart, as two names that read
    alike are), experts.html and the CSV (whose ``pooled`` column says which row is the pooled one)."""
    rows = [released_row(path, crit, [(s, NOT_APPLICABLE if s == -1 else "Комментарий эксперта.") for s in scores],
                         instruction=f"Задание {item}.", answer=f"Ответ {item}.",
                         model_id=AVG if model == "llama" else model)
            for item, model, path, crit, scores in ITEMS]
    folder = write_released_dataset(tmp_path / "POLLUX", rows)
    zero_shot = expert_tables(judge.load_records(folder))["tables"]["mean_by_model"]["zero_shot"]
    assert sorted(cols["Experts"] for cols in zero_shot.values()) == [(1, 1.5), (2, 1.0),
                                                                      (3, pytest.approx(7 / 6))]
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "experts.md").read_text(encoding="utf-8")
    table_10 = md.split("### Mean expert score by evaluated model")[1].split("###")[0]
    avg_rows = [line for line in table_10.splitlines() if line.startswith("| Avg.")]
    assert len(avg_rows) == 2 and avg_rows[-1].startswith("| Avg. | 1.167 (3) |")  # the pooled row, last
    assert avg_rows[0].startswith("| Avg. (#") and "| 1.000 (2) |" in avg_rows[0]
    page = (tmp_path / "out" / "experts.html").read_text(encoding="utf-8")
    assert "<tr><td>Avg.</td><td>1.167 (3)</td>" in page and "<td>Avg. (#" in page
    with (tmp_path / "out" / "experts_tables.csv").open(encoding="utf-8") as f:
        found = [r for r in csv.DictReader(f)
                 if (r["table"], r["split"], r["row"]) == ("mean_by_model", "zero_shot", AVG)]
    assert sorted((r.get("pooled"), r["n_items"]) for r in found) == [("", "2"), ("row", "3")]
    # Table 1's cross table: the model's own column beside the pooled one
    header = next(line for line in md.split("(Table 1)")[1].splitlines() if line.startswith("| "))
    assert "| Avg. (#" in header and header.rstrip().endswith("| Avg. |")


def test_the_console_line_is_true_when_only_critical_items_are_scored(tmp_path, capsys):
    """Two Standard items, both of the Critical criteria: the format criterion [0, 0] (VC 1) and censor [0, 1]
    (VC 1/2). With --critical-in-means exclude no item is left in the means, but both have expert scores and a
    Verdict Confidence (3/4 over 2): the line says the means are empty because the Critical items are left out, gives
    the VC and the settings, never "no item with an expert score"."""
    rows = [released_row(EDITING, "narushenie_formata", [(0, "Комментарий эксперта."), (0, "Комментарий эксперта.")],
                         instruction="Задание A.", answer="Ответ A."),
            released_row(EDITING, "censor", [(0, "Комментарий эксперта."), (1, "Комментарий эксперта.")],
                         instruction="Задание B.", answer="Ответ B.")]
    folder = write_released_dataset(tmp_path / "POLLUX", rows)
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "out"), "--critical-in-means",
                 "exclude"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "no item with an expert score" not in line
    assert ("Standard test: no item in the means (2 items with an expert score, all of Critical criteria, left out: "
            "--critical-in-means exclude), experts VC 0.750 over 2") in line
    assert "Critical criteria in the means: exclude" in line and "means over items" in line


def test_the_pages_show_the_split_of_unknown_task_types(tmp_path):
    """Items of a task type the taxonomy does not know are their own split, outside the Full test: experts.md and
    experts.html give it its own column beside the tests, as the CSV and the console do. One known Editing item
    (Standard, [1, 1]) and two of "Своя задача" ([2, 1] and [2, 2]: mean (1.5 + 2)/2 = 1.75, VC (1/2 + 1)/2 = 0.75)."""
    criterion = judge.load_taxonomy().criteria["repeats"]
    base = {"answer": "Ответ.", "criteria_name": criterion.name["ru"], "rubrics": criterion.rubric("ru"),
            "model_id": "gpt4"}
    rows = [{"id": "a", "instruction": "Задание A.", "task_type": "Editing", "expert_scores": [1, 1]},
            {"id": "b", "instruction": "Задание B.", "task_type": "Своя задача", "expert_scores": [2, 1]},
            {"id": "c", "instruction": "Задание C.", "task_type": "Своя задача", "expert_scores": [2, 2]}]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({**base, **row}, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    assert main(["experts", "--data", str(data), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "experts.md").read_text(encoding="utf-8")
    table_10 = md.split("### Mean expert score by evaluated model")[1].split("###")[0]
    assert "|  | Standard test | split unknown | Full test (Zero-Shot + Standard) |" in table_10
    assert "| gpt4 | 1.000 (1) | 1.750 (2) | 1.000 (1) |" in table_10
    vc_by_model = md.split("By evaluated model (Table 14 is the Full test):")[1].split("By task type")[0]
    assert "| gpt4 | 1.000 (1) | 0.750 (2) | 1.000 (1) |" in vc_by_model
    html = (tmp_path / "out" / "experts.html").read_text(encoding="utf-8")
    assert "<tr><td>gpt4</td><td>1.000 (1)</td><td>1.750 (2)</td><td>1.000 (1)</td></tr>" in html


def test_the_pages_say_what_the_load_left_out_or_kept_off_scale(tmp_path):
    """The load leaves out exact duplicate rows and keeps an expert score off its rubric's scale as given (and warns
    on the console); experts.md and experts.html say both, naming the rows, in judge-eval score's report's words
    (``eval.reports.notes``: Markdown in experts.md, its bold and code spans as tags in experts.html). The default
    miniature release holds one exact duplicate; a project file's expert score 7 on the 0..2 repetitions criterion is
    off its scale (line 1)."""
    folder = write_released_dataset(tmp_path / "POLLUX")
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "release")]) == 0
    for page, said in (("experts.md", "**1 exact duplicate row of the data was left out** ("),
                       ("experts.html", "<b>1 exact duplicate row of the data was left out</b> (")):
        text = (tmp_path / "release" / page).read_text(encoding="utf-8")
        assert said in text and "row index 2" in text and "): each item is scored once." in text, page
        assert "rubric" not in text.split(said)[1].split("\n")[0]
    criterion = judge.load_taxonomy().criteria["repeats"]
    row = {"id": "a", "instruction": "Задание A.", "answer": "Ответ.", "criteria_name": criterion.name["ru"],
           "rubrics": criterion.rubric("ru"), "model_id": "gpt4", "task_type": "Editing", "expert_scores": [7, 2]}
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["experts", "--data", str(data), "--out", str(tmp_path / "off")]) == 0
    said = {"experts.md": "**1 item has an expert score or `criteria_score` off its rubric's scale** (line 1): scored "
                          "as given.",
            "experts.html": "<b>1 item has an expert score or <code>criteria_score</code> off its rubric&#x27;s "
                            "scale</b> (line 1): scored as given."}
    for page, sentence in said.items():
        text = (tmp_path / "off" / page).read_text(encoding="utf-8")
        assert sentence in text and "duplicate" not in text, page


def test_a_task_type_is_named_as_the_split_resolves_it(tmp_path):
    """The split reads a row's task subtype only when its task type names a group (as some exports write it): a row
    of an unknown task type whose subtype spells Editing's Russian name is in the unknown split, and its Table 1 row
    is named by its own task type there, not "Editing" (a Standard task type). A group with the task type below it
    (AI as a Character / Formal setting's Russian names) is named by that task type, as the split resolves it."""
    taxonomy = judge.load_taxonomy()
    criterion = taxonomy.criteria["repeats"]
    (editing,) = [t for t in taxonomy.tasks if t.path == ("Editing",)]
    formal = next(t for t in taxonomy.tasks if t.path[0] == "Formal setting")
    base = {"answer": "Ответ.", "criteria_name": criterion.name["ru"], "rubrics": criterion.rubric("ru"),
            "model_id": "gpt4", "expert_scores": [2, 1]}
    rows = [{"id": "a", "instruction": "Задание A.", "task_type": "Моя задача", "task_subtype": editing.names_ru[1]},
            {"id": "b", "instruction": "Задание B.", "task_type": formal.names_ru[0], "task_subtype": formal.names_ru[1]}]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({**base, **row}, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    out = expert_tables(judge.load_records(data))
    assert out["counts"]["by_split"]["unknown"] == 1
    assert [row for row in out["tables"]["mean_by_task_type"]["unknown"] if row is not POOLED] == ["Моя задача"]
    known = [split for split in ("zero_shot", "standard") if out["tables"]["mean_by_task_type"].get(split)]
    assert [row for split in known for row in out["tables"]["mean_by_task_type"][split] if row is not POOLED] == [
        "Formal setting"]


def test_the_console_line_counts_one_scored_item_in_the_singular(tmp_path, capsys):
    """One Standard item of a Critical criterion, left out of the means: the line says "1 item", not "1 items"."""
    rows = [released_row(EDITING, "censor", [(0, "Комментарий эксперта."), (1, "Комментарий эксперта.")],
                         instruction="Задание B.", answer="Ответ B.")]
    folder = write_released_dataset(tmp_path / "POLLUX", rows)
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "out"), "--critical-in-means",
                 "exclude"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "no item in the means (1 item with an expert score, all of Critical criteria" in line


def test_the_csvs_paper_column_names_a_papers_table_only_on_the_split_that_table_reports(tmp_path):
    """`paper` names the table a row reproduces: Table 10's Experts column is the Zero-Shot test, Tables 1, 9 and
    14-16 the Full test (`all`). A row of another split is no figure of that table: its `paper` is empty (a
    Standard-test row said "Table 10, Experts column (Zero-Shot)", a Zero-Shot one "Table 9 (Full test)")."""
    folder = write_released_dataset(tmp_path / "POLLUX", _rows())
    assert main(["experts", "--data", str(folder), "--out", str(tmp_path / "out")]) == 0
    with (tmp_path / "out" / "experts_tables.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    reported = {key: split for key, _, _, _, split in _TABLES}
    # The split each table says it reports is the one its label names: Table 10's Zero-Shot, every other the Full test.
    assert {key: "zero_shot" if "(Zero-Shot)" in paper else "all" for key, _, _, paper, _ in _TABLES} == reported
    seen = set()
    for row in rows:
        if row["split"] == reported[row["table"]]:
            assert row["paper"].startswith("Table "), row
            seen.add(row["table"])
        else:
            assert row["paper"] == "", row
    assert seen == {"mean_by_model", "mean_by_task_type", "mean_by_criterion", "vc_by_model", "vc_by_task_type",
                    "vc_by_criterion"}


def test_the_docs_experts_block_has_a_line_that_runs_without_the_release(tmp_path, capsys):
    """docs/evaluation.md's `judge-eval experts` block named only `data/POLLUX` and the hub id, both needing a
    download; a reader on a machine without the release had no command to try. Its offline line (`--data sample`)
    runs as written, into a folder of the test's."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text(encoding="utf-8")
    lines = [shlex.split(line, comments=True) for line in page.splitlines() if line.startswith("judge-eval experts ")]
    offline = [words for words in lines if words[words.index("--data") + 1] == "sample"]
    assert offline, lines
    words = offline[0]
    words[words.index("--out") + 1] = str(tmp_path / "experts")
    assert main(words[1:]) == 0
    assert (tmp_path / "experts" / "experts.md").is_file()
    assert "Full test" in capsys.readouterr().out
