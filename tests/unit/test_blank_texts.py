"""A required record text that shows nothing is blank: white space and the characters that display nothing (a zero-width
space, a byte order mark, a soft hyphen, a left-to-right mark: ``judge.plumbing.invisible_text.INVISIBLE``) alike.

A text of U+200B is blank as one of white space is: a row whose instruction or answer shows nothing is refused by
both readers (row by row and column-wise), naming the row and field, through one rule (``is_blank``) and its RE2 form
(``BLANK_RE2``), held equal here on every code point.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import judge
from judge import RecordError, load_records_report, records_from_rows
from judge.column_reader import columns_from_tables
from judge.plumbing.invisible_text import BLANK_RE2, INVISIBLE, is_blank
from judge.records import REQUIRED_TEXT_FIELDS
from tests.unit.test_records import GOOD

#: Every code point a Python or Arrow string holds (the surrogates are no UTF-8).
CODE_POINTS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def _arrow_blank(texts: list[str]) -> list[bool]:
    return pc.match_substring_regex(pa.array(texts, pa.string()), BLANK_RE2).to_pylist()


def test_the_arrow_pattern_says_blank_of_every_code_point_exactly_where_the_row_rule_does():
    row, column = [is_blank(c) for c in CODE_POINTS], _arrow_blank(CODE_POINTS)
    differ = [f"U+{ord(c):04X}" for c, r, a in zip(CODE_POINTS, row, column) if r != a]
    assert not differ
    # blank: what str.strip removes, and INVISIBLE; nothing else
    assert {c for c, r in zip(CODE_POINTS, row) if r} == {c for c in CODE_POINTS if not c.strip()} | set(INVISIBLE)


@pytest.mark.parametrize("text,blank", [("", True), (" \u200b\t\ufeff\u00a0\u200e\n", True),
                                        ("\u00ad" * 3, True), ("\u200bа\u200b", False), ("\u200b.", False)])
def test_the_two_rules_agree_on_texts_of_several_characters(text, blank):
    assert is_blank(text) is blank and _arrow_blank([text]) == [blank]


@pytest.mark.parametrize("field", REQUIRED_TEXT_FIELDS)
@pytest.mark.parametrize("text", ["\u200b", "\ufeff", "\u00ad", "\u200e", " \u200b\n\u2060 "])
def test_a_required_text_that_shows_nothing_is_refused_row_by_row(field, text):
    with pytest.raises(RecordError) as info:
        records_from_rows([GOOD | {"id": "first"}, GOOD | {"id": "second", field: text}], source="data.jsonl")
    assert (info.value.row, info.value.field) == (1, field)
    assert str(info.value).startswith(f"data.jsonl: row index 1: field '{field}': is empty")


def test_a_text_with_something_to_show_among_invisible_characters_is_kept():
    record, = records_from_rows([GOOD | {"answer": "\ufeff\u200bДа.\u200e"}])
    assert record.answer == "\ufeff\u200bДа.\u200e"


@pytest.mark.parametrize("field", REQUIRED_TEXT_FIELDS)
def test_the_column_reader_leaves_a_required_text_that_shows_nothing_to_the_row_path(field, tmp_path):
    """The column-wise checks pass no such table (the row path then names the row and field), and every loader
    refuses the file as the row path does, from Parquet and JSONL alike."""
    rows = [GOOD | {"id": "first", "expert_feedback": None}, GOOD | {"id": "second", "expert_feedback": None,
                                                                     field: "\u200b\ufeff"}]
    table = pa.Table.from_pylist(rows)
    assert columns_from_tables([("d.parquet", pa.Table.from_pylist(rows[:1]))], "d.parquet") is not None
    assert columns_from_tables([("d.parquet", table)], "d.parquet") is None
    pq.write_table(table, tmp_path / "d.parquet")
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    for path, place in ((tmp_path / "d.parquet", "row index 1"), (tmp_path / "d.jsonl", "line 2")):
        for load in (load_records_report, judge.load_record_columns):
            with pytest.raises(RecordError) as info:
                load(path)
            assert str(info.value).startswith(f"{path}: {place}: field '{field}': is empty"), (path, load)


def test_an_expert_id_that_shows_nothing_names_no_one_in_either_reader(tmp_path):
    row = GOOD | {"expert_feedback": None, "expert_ids": ["e1", "\u200b", "e3"]}
    with pytest.raises(RecordError, match="expert ids must be non-blank"):
        records_from_rows([row])
    assert columns_from_tables([("d.parquet", pa.Table.from_pylist([row]))], "d.parquet") is None
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "d.parquet")
    with pytest.raises(RecordError, match="field 'expert_ids': expert ids must be non-blank"):
        judge.load_record_columns(tmp_path / "d.parquet")


def test_a_row_id_of_invisible_characters_stays_its_id_in_both_readers(tmp_path):
    """An ``id`` is a key, not a text to judge: one of a zero-width space is the row's id (white space alone gives
    none, a derived one), whichever reader reads the file."""
    row = GOOD | {"expert_feedback": None, "id": "\u200b"}
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "d.parquet")
    (record,), report = load_records_report(tmp_path / "d.parquet")
    columns, column_report = judge.load_record_columns(tmp_path / "d.parquet")
    assert record.id == "\u200b" and list(columns.ids) == ["\u200b"]
    assert report.n_derived_ids == column_report.n_derived_ids == 0
