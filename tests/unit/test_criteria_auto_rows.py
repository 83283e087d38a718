"""criteria: auto over a dataset's rows: the task columns a row may give (text, each level under the one above it,
an unknown level named by its own field), the task columns of the items of a row that fell back, item ids unique
across pass-through and expanded rows, and a resumed expansion that follows edits to its data."""

from __future__ import annotations

import json
import logging

import pytest

from judge.criteria_auto import TfidfClassifier, expand_file, expand_rows

BASE = {"instruction": "Напиши стихотворение о весне", "answer": "Весна пришла."}


class _Counting:
    """The shipped classifier, recording what it was asked."""

    name = "tfidf"
    threshold = 0.105

    def __init__(self):
        self.clf, self.asked = TfidfClassifier.load(), []

    def predict_proba(self, instructions):
        return self.clf.predict_proba(instructions)

    def choose(self, instruction, answer=None, top_k=3):
        self.asked.append(instruction)
        return self.clf.choose(instruction, answer, top_k)


@pytest.mark.parametrize("columns, message", [
    ({"task_type": 5}, "data.jsonl: row 0: field 'task_type' must be text, got an integer"),
    ({"task_type": ["Literary text"]}, "data.jsonl: row 0: field 'task_type' must be text, got a list"),
    ({"task_type": "Literary text", "task_subtype": 5}, "data.jsonl: row 0: field 'task_subtype' must be text"),
    ({"task_type": "Code creation", "task_subtype": "Python", "task_subsubtype": {"a": 1}},
     "data.jsonl: row 0: field 'task_subsubtype' must be text, got an object"),
    ({"task_subtype": "Python"}, "data.jsonl: row 0: field 'task_subtype' is 'Python' but field 'task_type' is empty"),
    ({"task_type": "Literary text", "task_subsubtype": "x"},
     "data.jsonl: row 0: field 'task_subsubtype' is 'x' but field 'task_subtype' is empty"),
], ids=["type int", "type list", "subtype int", "subsubtype dict", "subtype alone", "subsubtype without subtype"])
def test_a_task_column_that_is_no_text_or_has_no_parent_is_refused(columns, message, shipped_tfidf):
    """A task_type of 5 or a list was taken for "no task" and the row classified; a subtype without its task type was
    dropped; a subtype of 5 ended in an AttributeError traceback. Each is refused naming the row and the field."""
    with pytest.raises(ValueError) as err:
        expand_rows([{**BASE, **columns}], shipped_tfidf, "data.jsonl")
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("columns, field, said", [
    ({"task_type": "Poems"}, "task_type", "unknown task type 'Poems'"),
    ({"task_type": "Literary text", "task_subtype": "Nope"}, "task_subtype",
     "task type 'Literary text' has no subtype 'Nope'; options: ['Drama', 'Fragment', 'Poetry', 'Prose']"),
    ({"task_type": "Code creation", "task_subtype": "Python", "task_subsubtype": "x"}, "task_subsubtype",
     "task type 'Code creation', subtype 'Python', has no sub-subtype 'x'; it has no sub-subtypes"),
    ({"task_type": "AI as a Character", "task_subtype": "Nope"}, "task_subtype", "unknown task type 'Nope'"),
], ids=["type", "subtype", "sub-subtype of a leaf without any", "type given through its group"])
def test_an_unknown_task_level_is_named_by_its_own_field(columns, field, said, shipped_tfidf):
    """An unknown subtype or sub-subtype was reported as field 'task_type', a sub-subtype as a "subtype", and a
    leaf without sub-subtypes listed "options: []"."""
    with pytest.raises(ValueError) as err:
        expand_rows([{**BASE, **columns}], shipped_tfidf, "data.jsonl")
    assert str(err.value) == f"data.jsonl: row 0: field '{field}': {said}"


def test_a_long_unknown_task_level_is_clipped_in_the_error(shipped_tfidf):
    """The value echoed back is clipped (a client's may be megabytes long)."""
    with pytest.raises(ValueError) as err:
        expand_rows([{**BASE, "task_type": "Literary text", "task_subtype": "Poetry", "task_subsubtype": "y" * 5000}],
                    shipped_tfidf, "data.jsonl")
    assert "field 'task_subsubtype'" in str(err.value) and "[5000 characters]" in str(err.value)
    assert len(str(err.value)) < 400


def test_the_items_of_a_row_that_fell_back_have_no_task_columns(shipped_tfidf):
    """A row the classifier was unsure of (an English instruction) is judged on the fallback set: its items carried
    the rejected top-1 leaf's path in task_type/task_subtype, so per-task-type reports and --split counted them under
    that type. They are empty, as a failed choice's are; the guess stays in task_choice."""
    items, (choice,) = expand_rows([{"instruction": "Tell me a joke about cats.", "answer": "x"}],
                                   shipped_tfidf)
    assert choice["level"] == "fallback" and choice["label"]  # the guess, recorded
    assert {(i["task_type"], i["task_subtype"], i["task_subsubtype"]) for i in items} == {("", "", "")}
    assert all(i["task_choice"]["label"] == choice["label"] for i in items)
    # a row judged at its leaf keeps its path
    items, _ = expand_rows([BASE], shipped_tfidf)
    assert {i["task_type"] for i in items} == {"Literary text"}


def test_an_item_id_two_rows_give_is_refused_naming_both_rows(shipped_tfidf):
    """A pass-through row (criteria_name) of id "1::censor" and an expanded row of id 1 gave two items of one id,
    found only when the generated file was loaded. Refused at expansion, naming the rows, whichever comes first."""
    explicit = {**BASE, "criteria_name": "Грамотность", "rubrics": "0: плохо\n\n1: хорошо", "id": "1::censor"}
    with pytest.raises(ValueError, match=r"data.jsonl: row 1: item id '1::censor' is also the id of an item of row 0"):
        expand_rows([explicit, {**BASE, "id": "1"}], shipped_tfidf, "data.jsonl")
    with pytest.raises(ValueError, match=r"data.jsonl: row 1: item id '1::censor' is also the id of an item of row 0"):
        expand_rows([{**BASE, "id": 1}, explicit], shipped_tfidf, "data.jsonl")
    items, _ = expand_rows([{**explicit, "id": "2::censor"}, {**BASE, "id": "1"}], shipped_tfidf)
    assert len({i["id"] for i in items}) == len(items)


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_a_resumed_expansion_classifies_new_and_edited_rows_and_reuses_the_rest(tmp_path, caplog):
    """A recorded choice was reused by row id alone (the row index without an id column): an edited instruction kept
    the choice made for its old text. It is reused now only when the row's instruction is the one it was made for
    (its content key, recorded); new and edited rows are classified, and the log counts both."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    rows = [dict(BASE), {"instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."}]  # no id column
    _write(src, rows)
    expand_file(src, out, _Counting())
    edited = [rows[0], {**rows[1], "instruction": "Переведи на английский: «Привет, как дела?»"},
              {"instruction": "Напиши функцию на Python, которая сортирует список", "answer": "def f(): pass"}]
    _write(src, edited)
    clf = _Counting()
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        expand_file(src, out, clf, resume=True)
    assert clf.asked == [edited[1]["instruction"], edited[2]["instruction"]]
    assert "reused the recorded task choice of 1 rows, classified 2 anew" in caplog.text
    choices = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["task_type"] for c in choices][1] == "Translation, English-Russian language pair"
    items = [json.loads(line) for line in (out / "auto_items.jsonl").read_text(encoding="utf-8").splitlines()]
    from judge.records import content_id

    assert {i["instruction"] for i in items if i["id"].startswith(f"{content_id(edited[1])}::")} == {
        edited[1]["instruction"]}
    # a row that named its task and no longer does is classified, not given the task it used to name
    _write(src, [{**rows[0], "task_type": "Advice"}])
    expand_file(src, out, _Counting(), resume=True)
    _write(src, [rows[0]])
    clf = _Counting()
    expand_file(src, out, clf, resume=True)
    assert clf.asked == [rows[0]["instruction"]]


def test_a_choice_recorded_without_an_instruction_key_is_classified_again(tmp_path):
    """Choice files written before choices carried their instruction's key say nothing of the text a choice was
    made for: their rows are classified again rather than trusted."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    _write(src, [BASE])
    expand_file(src, out, _Counting())
    path = out / "task_choices.jsonl"
    old = [{k: v for k, v in json.loads(line).items() if k != "instruction_key"}
           for line in path.read_text(encoding="utf-8").splitlines()]
    _write(path, old)
    clf = _Counting()
    expand_file(src, out, clf, resume=True)
    assert clf.asked == [BASE["instruction"]]
    again = _Counting()
    expand_file(src, out, again, resume=True)  # now recorded with its key: reused
    assert again.asked == []


def test_a_labelled_row_with_a_blank_subtype_is_read_at_its_own_levels():
    """The labelled sets dropped a blank level, so a sub-subtype was read as the subtype and the row refused ("has no
    subtype 'Informative translation'"), where the annotate stage read the same row as its leaf. Both read it through
    ``Taxonomy.leaf`` now; a level the taxonomy lacks is named by its own column."""
    from judge.criteria_auto.labelled import labelled_rows

    translation = "Translation, English-Russian language pair"
    row = {"instruction": "Переведи", "task_type": translation, "task_subtype": "",
           "task_subsubtype": "Informative translation"}
    pairs, _ = labelled_rows([row], "src")
    assert [p["label"] for p in pairs] == [f"{translation} / Texts / Informative translation"]
    with pytest.raises(ValueError) as err:
        labelled_rows([{**row, "task_subsubtype": "Nope"}], "src")
    assert str(err.value) == ("src: row 0: task columns do not name one leaf of the taxonomy: field "
                              f"'task_subsubtype': task type {translation!r} has no sub-subtype 'Nope'; options: "
                              "['Informative translation', 'Literary translation']")


NAMED = {"instruction": "Реши 2+2", "answer": "4", "criteria_name": "Проактивность", "rubrics": "0: нет\n\n1: да"}


def test_a_named_row_without_an_id_gets_its_content_id_beside_expanded_rows(tmp_path, shipped_tfidf):
    """A file mixing rows (documented) failed whenever its named rows had no id, as ids are optional: the expanded
    items had ids and the named row none, and loading auto_items.jsonl refused the mix ("line 25: field 'id': is
    missing"). The named row gets the id a load gives it without auto: sha256 of its id fields, as JSON."""
    import hashlib

    import judge

    data = tmp_path / "mix.jsonl"
    _write(data, [BASE, NAMED])
    records = judge.load_records(expand_file(data, tmp_path / "out", shipped_tfidf))
    fields = ["Реши 2+2", "", "4", "Проактивность", "0: нет\n\n1: да", "", "", "", ""]
    key = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert records[-1].instruction == "Реши 2+2" and records[-1].id == hashlib.sha256(key).hexdigest()[:16]
    assert all(r.id.startswith(f"{judge.content_id(BASE)}::") for r in records[:-1])
    # The same named row twice is one item, as a load without auto keeps one of two copies.
    items, _ = expand_rows([NAMED, BASE, NAMED], shipped_tfidf)
    assert [i["id"] for i in items if "::" not in i["id"]] == [records[-1].id] * 2
    assert len(judge.records_from_rows(items)) == len(items) - 1
    # Another row under that id is refused, naming both rows of the data.
    with pytest.raises(ValueError, match=r"^data: row 1: item id '\w+' is also the id of an item of row 0"):
        expand_rows([{**NAMED, "id": "x"}, {**NAMED, "id": "x", "answer": "5"}], shipped_tfidf)


def test_a_bad_named_row_is_refused_at_its_own_line_before_anything_is_written(tmp_path):
    """A named row with a bad field was refused only when auto_items.jsonl was loaded: the error named the generated
    file's line, and the items and choices already written made a rerun with the fixed file "progress made with
    other settings". It is refused at the data's line, and nothing is written."""
    data = tmp_path / "mix.jsonl"
    _write(data, [BASE, {**NAMED, "criteria_name": ["censor"]}])
    clf = _Counting()
    with pytest.raises(ValueError) as err:
        expand_file(data, tmp_path / "out", clf)
    assert str(err.value) == f"{data}: line 2: field 'criteria_name': must be text, got a list"
    assert not (tmp_path / "out").exists()


def test_a_lone_surrogate_in_an_auto_row_is_named_by_file_line_and_field(tmp_path):
    """An instruction holding a lone surrogate stopped the run with a bare "'utf-8' codec can't encode" naming no
    file, row or field; it is named as the record loader names it, before the classifier is asked."""
    data = tmp_path / "sur.jsonl"
    data.write_text('\n{"instruction": "Напиши стихотворение \\ud800 о весне", "answer": "Весна"}\n', encoding="utf-8")
    clf = _Counting()
    with pytest.raises(ValueError) as err:
        expand_file(data, tmp_path / "out", clf)
    # "Напиши стихотворение " is 21 characters: the surrogate is at index 21; the blank first line counts
    assert str(err.value) == (f"{data}: line 2: field 'instruction': is not valid Unicode text: a lone surrogate "
                              "(U+D800) at character 21")
    assert clf.asked == []


def test_a_lone_surrogate_in_a_labelled_row_is_worded_as_a_judged_rows():
    """The labelled-set reader refuses a lone surrogate in the instruction with the record loader's reason, word for
    word, naming its own source and row."""
    from judge import JudgeRecord, RecordError
    from judge.criteria_auto.labelled import labelled_rows

    text = "Напиши стих \ud800 о весне"
    with pytest.raises(ValueError) as labelled:
        labelled_rows([{"instruction": "Опиши кота.", "task_type": "Advice"},
                       {"instruction": text, "task_type": "Advice"}], "labels.jsonl")
    with pytest.raises(RecordError) as judged:
        JudgeRecord.from_row({"instruction": text, "answer": "a", "criteria_name": "c", "rubrics": "0: н\n\n1: д",
                              "human_score": 1})
    reason = "field 'instruction': is not valid Unicode text: a lone surrogate (U+D800) at character 12"
    assert str(labelled.value) == f"labels.jsonl: row 1: {reason}"
    assert str(judged.value).endswith(f": {reason}")


@pytest.mark.parametrize("columns, message", [
    ({"criteria": ["censor", "value"]}, "data.jsonl: row 0: field 'criteria' is judge-serve's item field"),
    ({"rubrics": "0: плохо\n\n1: хорошо"}, "data.jsonl: row 0: field 'rubrics' describes one criterion, but the row "
                                         "names none (criteria_name)"),
    ({"criteria_description": "Рифма"}, "data.jsonl: row 0: field 'criteria_description' describes one criterion"),
    ({"rubrics_example": "пример"}, "data.jsonl: row 0: field 'rubrics_example' describes one criterion"),
    ({"criterion_id": "censor"}, "data.jsonl: row 0: field 'criterion_id' describes one criterion"),
    ({"model_id": ["m"]}, "data.jsonl: row 0: field 'model_id': must be text, got a list"),
    ({"id": [1]}, "data.jsonl: row 0: field 'id': must be text or an integer, got a list"),
    ({"expert_ids": ["e1", "e2"]}, "data.jsonl: row 0: field 'expert_ids' labels one criterion, but the row names "
                                   "none (criteria_name)"),
], ids=["criteria list", "rubrics", "criteria_description", "rubrics_example", "criterion_id", "model_id", "id",
        "expert_ids"])
def test_a_column_an_auto_row_cannot_carry_is_refused(columns, message):
    """A criteria list (judge-serve's item shape) was dropped and a row's own rubrics replaced without a word, a
    criteria_description copied onto every chosen criterion; a model_id list failed only when the generated items
    were loaded. Each is refused naming the row and the field, before the classifier is asked."""
    clf = _Counting()
    with pytest.raises(ValueError) as err:
        expand_rows([{**BASE, **columns}], clf, "data.jsonl")
    assert str(err.value).startswith(message)
    assert clf.asked == []


def test_a_blank_id_is_no_id_as_the_loader_reads_it(shipped_tfidf):
    """A row id of " " was taken as an id: two such rows were refused as repeating one id, and one gave items
    ' ::<criterion>'. Blank text is no id, as for the record loader (judge.records): the rows' content ids are used."""
    from judge.records import content_id

    rows = [{**BASE, "id": " "}, {**BASE, "id": "\t", "answer": "Лето."}]
    items, _ = expand_rows(rows, shipped_tfidf, "data.jsonl")
    assert {i["id"].split("::")[0] for i in items} == {content_id(rows[0]), content_id(rows[1])}


def test_what_an_auto_row_carries_into_its_items(shipped_tfidf):
    """The row's other columns reach every item unchanged; a criteria of "auto" (what is asked) and empty
    per-criterion columns carry nothing and are dropped."""
    row = {**BASE, "criteria": "auto", "rubrics": "", "model_id": "m1", "reference_answer": "Весна.", "mine": [1]}
    items, _ = expand_rows([row], shipped_tfidf)
    assert items and all(i["model_id"] == "m1" and i["reference_answer"] == "Весна." and i["mine"] == [1]
                         and "criteria" not in i and i["rubrics"] for i in items)


def test_data_whose_every_row_is_named_says_nothing_was_classified(caplog):
    """--criteria auto over data whose every row names its criterion (the bundled sample) classified nothing and
    said nothing; one warning says so."""
    clf = _Counting()
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        items, choices = expand_rows([NAMED, {**NAMED, "answer": "5"}], clf, "data.jsonl")
    assert len(items) == 2 and choices == [] and clf.asked == []
    assert [r.getMessage() for r in caplog.records] == [
        "criteria auto: every one of the 2 rows of data.jsonl names its criterion (criteria_name): nothing was "
        "classified, the rows are judged as given"]


def test_rows_without_an_id_keep_their_item_ids_when_rows_are_added_or_moved(tmp_path, caplog, shipped_tfidf):
    """A row without an id was named by its position: a row added above it, or the rows reordered, gave every row
    below another id, so a resumed run classified them all again and judged all their items again. Its id is its
    content id now (what a load without auto gives it), so only the added row is classified; an id-less row given
    twice is expanded once, and two id-less rows of one content id but other columns are refused naming both."""
    from judge.records import content_id

    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    advice = {"instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."}
    _write(src, [BASE, advice])
    expand_file(src, out, _Counting())

    def item_ids() -> list[str]:
        return [json.loads(line)["id"] for line in (out / "auto_items.jsonl").read_text(encoding="utf-8").splitlines()]

    first = item_ids()
    assert {i.split("::")[0] for i in first} == {content_id(BASE), content_id(advice)}
    added = {"instruction": "Переведи на английский: «Привет, как дела?»", "answer": "Hi, how are you?"}
    _write(src, [added, advice, BASE])
    clf = _Counting()
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        expand_file(src, out, clf, resume=True)
    assert clf.asked == [added["instruction"]]
    assert "reused the recorded task choice of 2 rows, classified 1 anew" in caplog.text
    assert set(first) < set(item_ids())
    # the same row twice: one row's items, with a warning naming both places
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.expansion"):
        items, choices = expand_rows([BASE, advice, BASE], shipped_tfidf, "data.jsonl")
    assert len(choices) == 2 and len(items) == len({i["id"] for i in items})
    assert "1 exact duplicate rows left out (row 2 = row 0)" in caplog.text
    with pytest.raises(ValueError, match=r"^data.jsonl: row 1: the row has no id, and its content id '\w{16}' .* is "
                                         r"also that of row 0, whose other columns differ: give the rows ids$"):
        expand_rows([BASE, {**BASE, "source": "b"}], shipped_tfidf, "data.jsonl")


def test_a_folder_whose_rows_were_named_by_position_keeps_their_ids(tmp_path):
    """A run folder whose id-less rows were recorded under their positions ("0", "1") before ids were derived from
    content keeps those ids while each row is the one recorded there: its verdicts stand under the ids they were
    written with, and nothing is classified again."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    advice = {"instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."}
    _write(src, [BASE, advice])
    expand_file(src, out, _Counting())
    path = out / "task_choices.jsonl"
    _write(path, [{**json.loads(line), "id": str(k)} for k, line in enumerate(path.read_text(encoding="utf-8")
                                                                                .splitlines())])
    clf = _Counting()
    expand_file(src, out, clf, resume=True)
    assert clf.asked == []
    ids = [json.loads(line)["id"] for line in (out / "auto_items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {i.split("::")[0] for i in ids} == {"0", "1"}


def test_a_pairwise_row_is_named_as_one_not_as_a_row_missing_its_answer(shipped_tfidf):
    """A pairwise file under criteria: auto was refused as "'answer' must be a non-empty string", which left its
    maker looking for a missing field; the row is named as a pair, with what criteria: auto takes instead. A row
    with an answer beside answer_1 stays an (instruction, answer) row, checked as any other."""
    pair = {"instruction": BASE["instruction"], "answer_1": "Весна.", "answer_2": "Лето."}
    with pytest.raises(ValueError) as err:
        expand_rows([BASE, pair], shipped_tfidf, "pairs.jsonl")
    assert str(err.value) == ("pairs.jsonl: row 1: a pairwise row (answer_1, answer_2); criteria: auto chooses the "
                              "criteria to judge one answer by: give (instruction, answer) rows, or judge the pairs as "
                              "they are, without criteria: auto")
    with pytest.raises(ValueError, match="row 0: 'answer' must be a non-empty string for criteria: auto"):
        expand_rows([{**pair, "answer": " "}], shipped_tfidf, "pairs.jsonl")


def test_a_row_given_twice_is_left_out_once_counted_with_or_without_its_id(caplog, shipped_tfidf):
    """The same row twice is one row, whether it gives an id or not, as a load (judge.records) leaves out an exact
    duplicate of either kind: an id-less copy was left out while a copy with its id was refused ("its items' ids would
    collide"). Each is counted in the warning naming both places; the same id on other content is still refused."""
    with_id = {**BASE, "id": "q"}
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.expansion"):
        items, choices = expand_rows([with_id, BASE, with_id, BASE], shipped_tfidf, "data.jsonl")
    assert [c["row"] for c in choices] == [0, 1]
    assert len(items) == len({i["id"] for i in items}) == 2 * len([i for i in items if i["id"].startswith("q::")])
    assert ("criteria auto: 2 exact duplicate rows left out (row 2 = row 0, row 3 = row 1), as a load leaves them "
            "out") in caplog.text
    with pytest.raises(ValueError, match=r"^data.jsonl: row 1: id 'q' repeats the id of row 0 with other content: "):
        expand_rows([with_id, {**with_id, "answer": "Лето."}], shipped_tfidf, "data.jsonl")
