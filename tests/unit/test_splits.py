"""Zero-Shot vs Standard assignment and the leakage guard."""

import pytest

from judge import (
    STANDARD,
    UNKNOWN,
    ZERO_SHOT,
    JudgeRecord,
    LeakageError,
    RecordError,
    UnknownTaskTypeError,
    check_no_leakage,
    load_records,
    load_split_spec,
    load_taxonomy,
    records_from_rows,
    split_of,
)


def _record(task_type, criteria_name="Absence of excessive repetitions", subtype="", rid="r"):
    return JudgeRecord(
        id=rid, instruction=f"Задание {rid}", answer="Ответ", criteria_name=criteria_name, rubrics="0: нет\n\n1: да",
        task_type=task_type, task_subtype=subtype,
    )


def test_spec_matches_the_paper():
    """The shipped split holds out the paper's eight task types and six criteria.

    Paper, Appendix D.2: the task types are listed ("AI as a Character (formal
    setting)", "(informal setting)", "Applied Brainstorming", "Recommendations", "Literary Text Generation", "Code
    Modification", "Style Transfer", "Text-Dependent Question Answering") and the criteria after them
    ("Expressiveness and coherence of dialogs", "Dramaturgy", "Rhyme quality", "Accents characteristic of literary
    movements / writers", "Adherence to character descriptions", "Meter, or rhythmic structure of a verse").
    """
    spec = load_split_spec()
    assert spec.task_types == {
        "Informal setting", "Formal setting", "Applied brainstorming", "Recommendations", "Literary text",
        "Style transfer", "Text-dependent questions", "Code modification",
    }
    assert spec.criteria == {"dialog", "drama", "rhyme_quality", "emphasis", "character", "meter"}


@pytest.mark.parametrize(
    "task_type,subtype,criteria_name,expected",
    [
        ("Code modification", "Python", "Absence of excessive repetitions", ZERO_SHOT),
        ("Изменить код", "Python", "Absence of excessive repetitions", ZERO_SHOT),  # Russian task-type name
        ("Code creation", "Python", "Absence of excessive repetitions", STANDARD),
        ("Extract", "Literary text", "Absence of excessive repetitions", STANDARD),  # 'Literary text' as a subtype
        ("Literary text", "Poetry", "Absence of excessive repetitions", ZERO_SHOT),
        ("AI as a Character", "Formal setting", "Absence of excessive repetitions", ZERO_SHOT),  # group + task type
        ("Editing", "", "Rhyme quality", ZERO_SHOT),  # held-out criterion in a Standard task type
        ("Editing", "", "Качество рифмы", ZERO_SHOT),  # same, by its Russian name
        ("Editing", "", "Dramaturgy", ZERO_SHOT),
        ("Editing", "", "Absence of excessive repetitions", STANDARD),
        ("Editing", "", "Моя собственная метрика", STANDARD),  # a custom criterion is never held out
        ("Творческий брейншторминг", "Литературный брейншторминг", "Проактивность", STANDARD),  # released names
        ("ИИ как персонаж", "ИИ как персонаж (бытовая ситуация)", "Проактивность", ZERO_SHOT),  # Russian group + type
    ],
)
def test_split_of(task_type, subtype, criteria_name, expected):
    """A record is Zero-Shot when its task type or its criterion is held out."""
    assert split_of(_record(task_type, criteria_name, subtype)) == expected


def test_a_held_out_criterion_written_decomposed_or_respelt_is_still_zero_shot():
    """A held-out criterion's name written decomposed (NFD, "й" as "и" + U+0306) or with other punctuation, spacing or
    compatibility characters is the held-out criterion: it was read as an unknown, custom criterion, Standard, and
    the leakage guard let its row into training. A custom name that merely shares words stays Standard."""
    import unicodedata

    emphasis = "Наличие акцентов, характерных для литературных направлений / писателей"  # held out, two "й"s
    for name in (unicodedata.normalize("NFD", emphasis), "Rhyme  quality!", "rhyme-quality", "Качество рифмы.",
                 "Ｍｅｔｅｒ, or rhythmic structure of a verse"):
        assert split_of(_record("Editing", name)) == ZERO_SHOT, name
        with pytest.raises(LeakageError):
            check_no_leakage([_record("Editing", name)])
    assert split_of(_record("Editing", "Качество рифмы в прозе")) == STANDARD


def test_a_respelt_held_out_criterion_whose_mark_an_invisible_character_split_off_is_still_zero_shot():
    """A soft hyphen between "и" and its breve (U+0306) keeps the two from composing: the lookalike key drops the
    invisible character before composing, or it keeps "и" and the respelt held-out name reads as a custom one."""
    emphasis = "Наличие акцентов, характерных для литературных направлений / писателей"
    name = emphasis.replace("й", "и\u00ad\u0306") + "!"  # the "!" keeps the taxonomy itself from finding it
    assert split_of(_record("Editing", name)) == ZERO_SHOT
    with pytest.raises(LeakageError):
        check_no_leakage([_record("Editing", name)])


@pytest.mark.parametrize("task_type,subtype,what,allowed", [
    ("Unknown task", "", "unknown task type 'Unknown task'", UNKNOWN),
    # no task type, and no criteria: auto choice saying it was judged on the fallback set: it may be of a held-out
    # task type, so unknown, never silently Standard
    ("", "", "has no task type", UNKNOWN),
    ("Творческий брейнштурм", "Литературный брейншторминг", "unknown task type", UNKNOWN),  # a typo is not Standard
])
def test_unresolvable_task_type_is_an_error_naming_the_row_or_an_explicit_unknown_split(task_type, subtype, what,
                                                                                        allowed):
    """A task type the taxonomy cannot resolve, or none, raises naming source, row and field, and says what
    allow_unknown gives: "unknown", or Zero-Shot on a held-out criterion."""
    row = {"id": "x7", "instruction": "Задание", "answer": "Ответ", "criteria_name": "Проактивность",
           "rubrics": "0: нет\n\n1: да", "task_type": task_type, "task_subtype": subtype}  # fmt: skip
    record = records_from_rows([{**row, "id": "x6", "task_type": "Editing"}, row], source="bench.jsonl")[1]
    with pytest.raises(UnknownTaskTypeError) as info:
        split_of(record)
    err = info.value
    assert isinstance(err, RecordError) and (err.source, err.row, err.field) == ("bench.jsonl", 1, "task_type")
    assert what in str(err) and "'x7'" in str(err) and "allow_unknown=True" in str(err)
    assert "'unknown' split (Zero-Shot where its criterion is held out)" in str(err)
    assert split_of(record, allow_unknown=True) == allowed
    with pytest.raises(UnknownTaskTypeError):  # the leakage guard cannot vouch for it either
        check_no_leakage([record])
    with pytest.raises(UnknownTaskTypeError):  # nor strict mode
        split_of(record, allow_unknown=True, strict=True)


@pytest.mark.parametrize("criteria_name,expected", [
    ("Проактивность", STANDARD),
    ("Absence of excessive repetitions", STANDARD),
    ("Моя собственная метрика", STANDARD),  # a custom criterion is never held out
    ("Rhyme quality", ZERO_SHOT),  # held out by itself (judge/data/zero_shot.yaml: rhyme_quality)
    ("Качество рифмы", ZERO_SHOT),
])
def test_an_item_judged_on_the_fallback_set_is_split_by_its_criterion_alone(criteria_name, expected):
    """With allow_unknown (judge-eval's --split and its reports) an item criteria: auto judged on the criteria for any
    text (no task type; its task_choice says fallback) is in the Zero-Shot test exactly when its criterion is held
    out; it was "unknown", in neither test. The same record without that choice stays unknown on a Standard
    criterion (a user's row with no task type may be of a held-out one), and is Zero-Shot on a held-out one, which
    is Zero-Shot whatever its task type (test_a_held_out_criterion_is_zero_shot_whatever_its_task_type)."""
    import dataclasses

    record = _record("", criteria_name)
    fallback = dataclasses.replace(record, extra={"task_choice": {"fallback": True, "level": "fallback"}})
    assert split_of(fallback, allow_unknown=True) == expected
    without_choice = ZERO_SHOT if expected == ZERO_SHOT else UNKNOWN
    assert split_of(record, allow_unknown=True) == without_choice
    unsure_leaf = dataclasses.replace(record, extra={"task_choice": {"fallback": False, "level": "leaf"}})
    assert split_of(unsure_leaf, allow_unknown=True) == without_choice


@pytest.mark.parametrize("task_type,subtype", [
    ("Стайл трансфер", ""),  # a held-out task type misspelt
    ("Unknown task", ""),
    ("", ""),  # none, and no criteria: auto choice
    ("ИИ как персонаж", ""),  # a group without its task type
    ("ИИ как персонаж", "Спор / дискуссия"),  # the group with a subtype name of the taxonomy, still no task type
])
@pytest.mark.parametrize("criteria_name", ["Качество рифмы", "Rhyme quality", "rhyme_quality__3", "Rhyme  quality!"])
def test_a_held_out_criterion_is_zero_shot_whatever_its_task_type(task_type, subtype, criteria_name):
    """Paper, Appendix D.2: the held-out criteria "are present exclusively in the Zero-Shot Test", so a row scored on
    one is Zero-Shot whatever its task type: with allow_unknown (judge-eval's --split, score and experts) such a row
    whose task type the taxonomy cannot resolve is judged by --split zero_shot and counted in the Zero-Shot figures,
    not "unknown". Without allow_unknown the unresolved task type is an error naming the row; a Standard criterion
    under such a task type stays unknown."""
    from judge.splits import splits_of

    record = _record(task_type, criteria_name, subtype)
    assert split_of(record, allow_unknown=True) == ZERO_SHOT
    assert splits_of([record, _record(task_type, rid="r")], allow_unknown=True) == [ZERO_SHOT, ZERO_SHOT]
    assert split_of(_record(task_type, "Проактивность", subtype), allow_unknown=True) == UNKNOWN
    with pytest.raises(UnknownTaskTypeError):
        split_of(record)
    with pytest.raises(UnknownTaskTypeError):
        split_of(record, allow_unknown=True, strict=True)


def test_the_items_criteria_auto_judges_on_the_criteria_for_any_text_are_in_the_standard_test(tmp_path):
    """criteria: auto leaves the task columns of a row that fell back (the classifier unsure) or failed empty, so
    that no report counts them under a guessed task type. split_of put them in "unknown", so --split standard and
    --split zero_shot both dropped them unseen. Their 13 criteria (Critical, General, Subjective: arXiv
    2505.24616v3, Section 2.3; Appendix P.2) are all Standard ones: --split standard judges all 26 items of the two
    rows (13 each, by hand: the fallback set), --split zero_shot none of them."""
    import json

    from eval.judging.config import RunConfig
    from eval.judging.run import _select
    from judge.criteria_auto import TfidfClassifier, expand_rows, fallback_criteria

    class FailsOnJokes:  # the shipped classifier, failing on one row as an endpoint that is down would
        name = "tfidf"
        clf = TfidfClassifier.load()

        def choose(self, instruction, answer=""):
            if "joke" in instruction:
                raise ConnectionError("down")
            return self.clf.choose(instruction, answer)

    rows = [{"id": "en", "instruction": "Summarize the following article in three sentences.", "answer": "Ok."},
            {"id": "joke", "instruction": "Tell me a joke about cats.", "answer": "No."}]
    items, choices = expand_rows(rows, FailsOnJokes())
    assert [(c["level"], bool(c["label"])) for c in choices] == [("fallback", True), ("fallback", False)]
    assert len(fallback_criteria()) == 13 and len(items) == 26
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    records = load_records(data)
    assert {split_of(r, allow_unknown=True) for r in records} == {STANDARD}
    selected = {split: _select(records, RunConfig(out=str(tmp_path / split), judge="http://x", split=split))
                for split in ("standard", "zero_shot")}
    assert (len(selected["standard"]), len(selected["zero_shot"])) == (26, 0)


def test_strict_rejects_unknown_task_type():
    """In strict mode an unknown task type is an error, not a silent Standard."""
    from judge import TaxonomyError

    with pytest.raises(TaxonomyError, match="unknown task type"):
        split_of(_record("Unknown task"), strict=True)


def test_leakage_guard():
    """Training data with Zero-Shot items is refused, naming them, unless explicitly allowed."""
    rows = [_record("Editing", rid="ok"), _record("Style transfer", "Absence of excessive repetitions", "Authors", rid="leak")]
    with pytest.raises(LeakageError, match="1 items .* leak"):
        check_no_leakage(rows)
    check_no_leakage(rows, allow_zero_shot=True)
    check_no_leakage(rows[:1])


def test_an_instructions_rows_share_one_split():
    """Paper, Appendix D.2: the Zero-Shot and Standard tests "do not overlap, each containing unique instructions",
    and the held-out criteria are "present exclusively in the Zero-Shot Test". Instruction A, of the Standard task
    type Editing, is scored on Rhyme quality (held out) and on repetitions: both its rows are Zero-Shot, though the
    second row alone (split_of) is Standard, which put A in both tests. Instruction B, scored on repetitions only,
    stays Standard. Rows are grouped by their instruction_id column where they have one (C, worded twice)."""
    from judge.splits import instruction_key, splits_of

    def row(rid, instruction, criterion, **extra):
        return {"id": rid, "instruction": instruction, "answer": "Ответ", "criteria_name": criterion,
                "rubrics": "0: нет\n\n1: да", "task_type": "Editing", **extra}

    records = records_from_rows([
        row("a-rhyme", "Задание A", "Rhyme quality"),
        row("a-rep", "Задание A", "Absence of excessive repetitions"),
        row("b-rep", "Задание B", "Absence of excessive repetitions"),
        row("c-rhyme", "Задание C", "Rhyme quality", instruction_id="c"),
        row("c-rep", "Задание C, другими словами", "Absence of excessive repetitions", instruction_id="c"),
    ])
    assert [split_of(r) for r in records] == [ZERO_SHOT, STANDARD, STANDARD, ZERO_SHOT, STANDARD]
    assert splits_of(records) == [ZERO_SHOT, ZERO_SHOT, STANDARD, ZERO_SHOT, ZERO_SHOT]
    assert [instruction_key(r) for r in records] == ["Задание A", "Задание A", "Задание B", "c", "c"]
    with pytest.raises(LeakageError, match=r"^4 items .*: a-rhyme, a-rep, c-rhyme, c-rep;"):
        check_no_leakage(records)
    check_no_leakage(records[2:3])


def test_the_taxonomy_holds_out_criteria_only_under_held_out_task_types():
    """Why split_of (one row) and splits_of (its instruction) agree on data scored as the taxonomy says: every leaf
    task one of whose criteria is held out is of a held-out task type (22 leaves)."""
    taxonomy = load_taxonomy()
    spec = load_split_spec()
    with_held_out = [t for t in taxonomy.tasks if any(taxonomy.criteria[c].base_id in spec.criteria for c in t.criteria)]
    assert len(with_held_out) == 22
    assert all(t.task_type in spec.task_types for t in with_held_out)


def test_split_file_with_typo_is_rejected(tmp_path):
    """A misspelt task type in a split file would leak data: it is an error."""
    bad = tmp_path / "split.yaml"
    bad.write_text("version: x\ntask_types: [Code modificaton]\ncriteria: []\n", encoding="utf-8")
    with pytest.raises(ValueError, match="Code modificaton"):
        load_split_spec(bad)
    unknown_key = tmp_path / "split2.yaml"
    unknown_key.write_text("version: x\ntasks: []\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown keys"):
        load_split_spec(unknown_key)


def test_scoring_reports_unresolvable_task_types_as_their_own_split():
    """judge-eval score puts items whose task type is unknown in an "unknown" split it reports, not in Standard, and
    not in "all" either: that is the paper's two tests together (Zero-Shot + Standard). An item with no task type
    (and no criteria: auto fallback choice) is unknown too."""
    from eval.scoring import item_table

    rows = [{"id": rid, "instruction": "И", "answer": "О", "criteria_name": "Проактивность", "rubrics": "0: нет\n\n1: да",
             "expert_scores": [1, 1], "task_type": task_type} for rid, task_type in (("a", "Editing"), ("b", ""), ("c", "Моя задача"))]  # fmt: skip
    predictions = [{"id": rid, "judge": "j", "score": 1, "parse_ok": True, "error": None, "score_source": "verdict"} for rid in "abc"]
    table, _ = item_table.build_table(records_from_rows(rows), predictions)
    assert table.split.tolist() == [STANDARD, UNKNOWN, UNKNOWN]
    splits = item_table.evaluate(table, n_boot=10).to_json()["splits"]
    assert (splits["standard"]["overall"]["n"], splits["unknown"]["overall"]["n"], splits["all"]["overall"]["n"]) == (1, 2, 1)


def test_run_split_selection_skips_unknown_task_types_without_aborting():
    """judge-eval run --split standard takes the Standard items and leaves an unknown task type out (it runs under
    --split all and is scored as the "unknown" split); it never aborts the run. So is an item with no task type."""
    from eval.judging.config import RunConfig
    from eval.judging.run import _select

    rows = [{"id": rid, "instruction": "И", "answer": "О", "criteria_name": "Проактивность", "rubrics": "0: нет\n\n1: да",
             "expert_scores": [1, 1], "task_type": task_type} for rid, task_type in (("a", "Editing"), ("b", ""), ("c", "Моя задача"))]  # fmt: skip
    records = records_from_rows(rows)
    assert [r.id for r in _select(records, RunConfig(split="standard"))] == ["a"]
    assert [r.id for r in _select(records, RunConfig(split="zero_shot"))] == []
    assert [r.id for r in _select(records, RunConfig(split="all"))] == ["a", "b", "c"]


def _installed_copy(dest):
    """The judge package as a wheel would install it: its .py files plus the pyproject package-data globs, no source
    tree around it (no configs/)."""
    import fnmatch
    import shutil
    import tomllib
    from pathlib import Path

    import judge

    root = Path(judge.__file__).parent
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["judge"]
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and "__pycache__" not in rel and (path.suffix == ".py" or any(fnmatch.fnmatch(rel, g) for g in globs)):
            (dest / "judge" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dest / "judge" / rel)
    return dest


def test_split_of_works_without_the_source_tree(tmp_path):
    """An installed judge (no configs/ next to it) finds the paper's split in its package data and assigns splits."""
    import subprocess
    import sys

    site = _installed_copy(tmp_path / "site")
    script = (
        "import judge\n"
        "from judge.splits import default_split_path\n"
        f"assert judge.__file__.startswith({str(site)!r}), judge.__file__\n"
        "print(default_split_path())\n"
        "print(*(judge.split_of(judge.JudgeRecord(id='r', instruction='И', answer='О', criteria_name=name,"
        " rubrics='0: а\\n\\n1: б', task_type='Editing')) for name in ('Rhyme quality', 'Проактивность')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=site, env={"PYTHONPATH": str(site)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    path, splits = out.stdout.splitlines()
    assert path == str(site / "judge" / "data" / "zero_shot.yaml")
    assert splits == "zero_shot standard"
    assert not (site / "configs").exists()


def test_split_titles_have_one_definition():
    """Reports and model cards title the splits from judge.splits.SPLIT_TITLES (eval.reports.report re-exports the same dict)."""
    from eval.reports import report
    from judge.splits import SPLIT_TITLES
    from train import model_card

    assert report.SPLIT_TITLES is SPLIT_TITLES
    assert list(SPLIT_TITLES) == [ZERO_SHOT, STANDARD, UNKNOWN, "all"]
    assert [SPLIT_TITLES[s] for s in model_card._CARD_SPLITS] == ["Zero-Shot test", "Standard test", "Zero-Shot + Standard"]


def test_training_data_drops_an_instructions_rows_together():
    """judge-train build-data (zero_shot: drop) and the synthetic split stage drop every row of an instruction one of
    whose rows is held out (Appendix D.2: the tests hold whole instructions): dropping the Rhyme quality row alone
    left instruction A's repetitions row to train on, an instruction of the Zero-Shot test."""
    from train.build_data import zero_shot_records
    from train.synthetic.config import SplitConfig
    from train.synthetic.splitting import split_records

    def row(rid, instruction, criterion):
        return {"id": rid, "instruction": instruction, "answer": "Ответ", "criteria_name": criterion,
                "rubrics": "0: нет\n\n1: да", "task_type": "Editing", "expert_scores": [1]}

    rows = [row("a-rhyme", "Задание A", "Rhyme quality"), row("a-rep", "Задание A", "Absence of excessive repetitions"),
            row("b-rep", "Задание B", "Absence of excessive repetitions")]
    kept, held_out = zero_shot_records(records_from_rows(rows), "drop")
    assert [r.id for r in kept] == ["b-rep"] and [r.id for r in held_out] == ["a-rhyme", "a-rep"]
    split, dropped, _ = split_records(rows, SplitConfig(validation_fraction=0.0))
    assert [r["id"] for r in split["train"]] == ["b-rep"] and split["validation"] == []
    assert [(r["id"], r["drop_reason"]) for r in dropped] == [("a-rhyme", "zero_shot:criterion"),
                                                              ("a-rep", "zero_shot:instruction")]


@pytest.mark.parametrize("source", ["records", "columns"])
@pytest.mark.parametrize("fallback_first", [True, False])
def test_a_rows_split_in_the_tables_does_not_depend_on_which_row_comes_first(tmp_path, source, fallback_first):
    """Two rows without a task type on one criterion: one criteria: auto judged on the criteria for any text (its
    task_choice says fallback: Standard), one without that choice (unknown). The item table and the experts' tables
    resolved the split once per (task type, subtype, criterion), from the first row of that key, so both rows took
    the first one's split: both Standard in one order, both unknown in the other. ``split_groups`` keys them by what
    ``split_of`` reads, the fallback choice too; both orders, records and the column-wise reader."""
    import json

    from eval.experts.tables import expert_tables
    from eval.scoring import item_table
    from judge import load_record_columns, split_groups
    from judge.record_columns import as_columns

    base = {"instruction": "И", "answer": "О", "criteria_name": "Проактивность", "rubrics": "0: нет\n\n1: да",
            "task_type": ""}
    fallback = {**base, "id": "a", "expert_scores": [1, 1], "task_choice": {"fallback": True, "level": "fallback"}}
    plain = {**base, "id": "b", "expert_scores": [0, 0]}
    rows = [fallback, plain] if fallback_first else [plain, fallback]
    if source == "records":
        records = records_from_rows(rows)
    else:
        path = tmp_path / "data.jsonl"
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        records = load_record_columns(str(path))
        records = records[0] if isinstance(records, tuple) else records
    expected = {"a": STANDARD, "b": UNKNOWN}
    assert split_groups(as_columns(records))[1].tolist() == [0, 1]  # two groups, each its first row
    predictions = [{"id": rid, "judge": "j", "score": 1, "parse_ok": True, "error": None, "score_source": "verdict"}
                   for rid in "ab"]
    table, _ = item_table.build_table(records, predictions)
    assert dict(zip(table.ids.tolist(), table.split.tolist())) == expected
    tables = expert_tables(records)["tables"]["mean_by_model"]
    assert tables["standard"]["(none)"]["Experts"] == pytest.approx((1, 1.0))  # the fallback row's experts alone
    assert tables["unknown"]["(none)"]["Experts"] == pytest.approx((1, 0.0))  # the other row's, apart


def test_an_instruction_id_of_zero_is_an_id():
    """instruction_id 0 is as much an id as "0": both rows are one instruction, not 0 read as absent (its text, "A")
    beside "0", which could put them on both sides of a split. None and a blank id are absent."""
    from judge.splits import instruction_key

    def row(rid, instruction, **extra):
        return {"id": rid, "instruction": instruction, "answer": "Ответ", "criteria_name": "Rhyme quality",
                "rubrics": "0: нет\n\n1: да", "task_type": "Editing", **extra}

    records = records_from_rows([row("a", "A", instruction_id=0), row("b", "B", instruction_id="0"),
                                 row("c", "C", instruction_id=None), row("d", "D", instruction_id="  ")])
    assert [instruction_key(r) for r in records] == ["0", "0", "C", "D"]
