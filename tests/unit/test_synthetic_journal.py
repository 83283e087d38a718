"""The synthetic stages' input reader (train/synthetic/journal.py ``read_input``): a JSONL input read as strictly as
``judge.load_records`` reads the same file.

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_journal.py -q -n 0
"""

from __future__ import annotations

import pytest

from train.synthetic.cli import main
from train.synthetic.journal import read_input

#: Line 2 gives "instruction" twice: json.loads keeps "б" without a word.
REPEATED = '{"id": "ins-1", "instruction": "а"}\n{"id": "ins-2", "instruction": "в", "instruction": "б"}\n'


def test_a_key_given_twice_in_an_input_row_is_refused_naming_file_line_and_field(tmp_path):
    """The record loader refuses such a row ("field 'instruction': is given twice in the row"); a stage reading the
    same file kept the last value, so one file meant two things."""
    path = tmp_path / "instructions.jsonl"
    path.write_text(REPEATED, encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_input(path)
    assert str(error.value) == (f"{path}:2: field 'instruction' is given twice in the row (JSON would keep the last "
                                "value without a word): give it once")


def test_a_key_given_twice_in_an_object_inside_a_row_is_refused_too(tmp_path):
    """Any object of the line: a repeated key inside a nested value hides a value just as well."""
    path = tmp_path / "answers.jsonl"
    path.write_text('{"id": "a1", "meta": {"model": "x", "model": "y"}}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}:1: field 'model' is given twice in the row"):
        read_input(path)


def test_a_stage_given_such_an_input_exits_2_naming_it(tmp_path, capsys):
    """Found when the stage reads its input: the stage's one-line error and its help's exit 2, no traceback."""
    source = tmp_path / "annotate.jsonl"
    source.write_text(REPEATED, encoding="utf-8")
    assert main(["split", "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (f"judge-train data split: error: {source}:2: field 'instruction' is given "
                                            "twice in the row (JSON would keep the last value without a word): give "
                                            "it once")
