"""MERA task rows whose fields are not what they should be: an instruction field that does more than name an input, a
task id that is not an integer or a string, a field of the wrong JSON kind; each refused naming the line and field."""

from __future__ import annotations

import copy

import pytest

from eval.mera.humaneval import parse_mera_row
from eval.mera.rutie import parse_rutie_row
from eval.mera.task_rows import DataError
from tests.support.mera_humaneval import MERA_ROW


def _row(instruction=None, **meta):
    row = copy.deepcopy(MERA_ROW)
    if instruction is not None:
        row["instruction"] = instruction
    for key, value in meta.items():
        if value is KeyError:
            row["meta"].pop(key, None)
        else:
            row["meta"][key] = value
    return row


@pytest.mark.parametrize(("instruction", "said"), [
    ("{function:>99999999999}", "{function:>99999999999} has a format spec"),  # a MemoryError escaped
    ("{function!r}", "{function!r} has a conversion"),
    ("{function.__class__.__mro__}", "{function.__class__.__mro__} has an attribute or an index"),
    ("{function[0]}", "{function[0]} has an attribute or an index"),
    ("{0}", "{0} has a position"),
    ("{}", "{} has a position"),
    ("{function", "is not a format string"),
])  # fmt: skip
def test_an_instruction_field_that_does_more_than_name_an_input_is_refused(instruction, said):
    with pytest.raises(DataError) as err:
        parse_mera_row(_row(instruction), 3)
    assert str(err.value).startswith("line 3 (id ") and "field 'instruction'" in str(err.value)
    assert said in str(err.value)


def test_escaped_braces_and_plain_input_names_still_format():
    task = parse_mera_row(_row("Set {{x}}: {function}"), 3)
    assert task.prompt.startswith("Set {x}: ")


@pytest.mark.parametrize(("id_value", "said"), [
    (KeyError, "field 'meta.id' is missing"),
    (None, "field 'meta.id' should be an integer or a string, got null"),
    ({"a": 1}, "field 'meta.id' should be an integer or a string, got an object"),
    (True, "field 'meta.id' should be an integer or a string, got true"),
    (1.5, "field 'meta.id' should be an integer or a string, got a number"),
])  # fmt: skip
def test_a_task_id_that_is_not_an_integer_or_a_string_is_refused(id_value, said):
    """A missing id became the line number, null the task 'None', a dict its str(), all without a word."""
    with pytest.raises(DataError, match="^line 4") as err:
        parse_mera_row(_row(id=id_value), 4)
    assert said in str(err.value)
    assert parse_mera_row(_row(id="HumanEval/0"), 4).task_id == "HumanEval/0"


def test_type_errors_name_json_kinds_not_python_classes():
    row = copy.deepcopy(MERA_ROW)
    row["inputs"] = ["not", "an", "object"]
    with pytest.raises(DataError) as err:
        parse_mera_row(row, 2)
    assert str(err.value).endswith("field 'inputs' should be an object, got a list")
    rutie = {"instruction": "{context}", "inputs": {"question": "?", "choice1": True, "choice2": "b"},
             "outputs": "1", "meta": {"dialog_id": 0, "question_id": 0}}  # fmt: skip
    with pytest.raises(DataError) as err:
        parse_rutie_row(rutie, 2)
    assert str(err.value).endswith("should be a string, an integer or a number, got true")
    assert "class" not in str(err.value)


def test_the_row_error_wording_is_one_pair_of_functions_in_judge_records():
    """The data rows (ruHumanEval, ruTiE) and the resumed progress rows name a JSON kind through the same two
    functions, kept beside ``row_place``: one wording, one place to change it."""
    from eval.mera import humaneval, progress_rows, rutie
    from judge import records

    assert records.kind_words((int, str)) == "an integer or a string"
    assert records.kind_words((str, int, float)) == "a string, an integer or a number"
    assert [records.value_words(v) for v in (None, False, {}, [], "", 1, 1.5)] == \
        ["null", "false", "an object", "a list", "a string", "an integer", "a number"]
    assert {"kind_words", "value_words"} <= set(records.__all__)
    for module in (humaneval, progress_rows, rutie):
        assert (module.kind_words, module.value_words) == (records.kind_words, records.value_words), module
