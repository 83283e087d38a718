"""The typed metrics.json reader (``judge.metrics_json``) refuses, naming the field, a value the pages and
``judge-eval compare`` would otherwise fail on far from the file."""

from __future__ import annotations

import json

import pytest

from judge.metrics_json.json_record import JsonRecordError
from judge.metrics_json.metrics import Metrics
from tests.support.json_edits import edited

_CELL = {"n": 1, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.0, "mae_ci": [0.0, 0.0]}
_RAW = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
        "splits": {"all": {"overall": _CELL, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}}}


@pytest.mark.parametrize("judge, kind", [(5, "an integer 5"), (["a"], "a list"), (None, "null"), ({"a": 1}, "an object")])
def test_a_judge_that_is_not_text_is_refused_naming_the_field(judge, kind):
    """A metrics.json whose "judge" was a number or a list was read as it was, and ``compare --out`` stopped in a
    TypeError building compare.html; now the reader's error, naming the file and the field."""
    assert Metrics.from_json(_RAW).judge == "j"
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json({**_RAW, "judge": judge})
    assert str(info.value) == f"metrics.json: Metrics.judge is not readable (expected a string, got {kind})"


def _edited(path: tuple[str, ...], value) -> dict:
    """``_RAW`` with the value at ``path`` (keys from the top) replaced, the rest untouched."""
    return edited(_RAW, path, value)


@pytest.mark.parametrize("path, value, why", [
    (("splits", "all", "overall", "n"), "40", "expected a whole number, got a string '40'"),
    (("splits", "all", "overall", "n_failed"), None, "expected a whole number, got null"),
    (("splits", "all", "overall", "n_missing"), 2.0, "expected a whole number, got a number 2.0"),
    (("settings", "seed"), "1", "expected a whole number, got a string '1'"),
    (("settings", "seed"), -3, "expected a whole number of 0 or more, got -3"),
    (("settings", "vc_repeats"), 50.5, "expected a whole number, got a number 50.5"),
    (("settings", "n_boot"), True, "expected a whole number, got true"),
    (("target",), "median", "expected one of mode, mean, got 'median'"),
    (("target",), 3, "expected one of mode, mean, got an integer 3"),
    (("settings", "spearman_target"), "median", "expected one of mode, mean, got 'median'"),
    (("settings", "regression_scores"), "rounded", "expected one of raw, clipped, got 'rounded'"),
    (("settings", "bootstrap_unit"), "answer", "expected one of item, instruction, got 'answer'"),
])
def test_a_count_or_a_choice_that_is_not_one_is_refused_naming_the_field(path, value, why):
    """A hand-edited count ("40"), seed ("1") or repeat count (50.5) was taken as it was and ``judge-eval compare``
    stopped in a TypeError far from the file (adding a count, seeding numpy, ``range``); a target of "median" was
    named back as a ``--spearman-target`` the run never chose. Now the reader's one line, naming the field."""
    record, field = {"splits": "Cell", "settings": "Settings", "target": "Metrics"}[path[0]], path[-1]
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(_edited(path, value))
    assert str(info.value) == f"metrics.json: {record}.{field} is not readable ({why})"
    assert info.value.field == ".".join(path)


def test_counts_and_choices_as_score_writes_them_read_back():
    """What score writes reads as it was: a null for an optional count is None, the choices keep their value."""
    settings = {**_RAW["settings"], "spearman_target": "mean", "regression_scores": "clipped",
                "bootstrap_unit": "instruction"}
    cell = {**_CELL, "n_missing": None, "n_scored": 1}
    raw = {**_RAW, "target": "mean", "settings": settings,
           "splits": {"all": {**_RAW["splits"]["all"], "overall": cell}}}
    read = Metrics.from_json(raw)
    assert (read.target, read.settings.spearman_target, read.settings.regression_scores,
            read.settings.bootstrap_unit) == ("mean", "mean", "clipped", "instruction")
    overall = read.splits["all"].overall
    assert (overall.n, overall.n_missing, overall.n_scored, read.settings.seed) == (1, None, 1, 0)


@pytest.mark.parametrize("path, value, why", [
    # cut to 40 characters with no mark, a 60-digit integer read as a 40-digit one
    (("judge",), 10**59, "expected a string, got an integer of 60 digits"),
    (("judge",), -(10**59), "expected a string, got an integer of 60 digits"),
    (("settings", "seed"), -(10**59), "expected a whole number of 0 or more, got an integer of 60 digits"),
    # a string's repr of 62 characters: its first 37, then the mark
    (("settings", "seed"), "7" * 60, "expected a whole number, got a string '" + "7" * 36 + "..."),
    (("target",), "m" * 60, "expected one of mode, mean, got '" + "m" * 36 + "..."),
    (("target",), 10**59, "expected one of mode, mean, got an integer of 60 digits"),
    # 40 characters exactly are shown whole
    (("judge",), 10**39, "expected a string, got an integer " + "1" + "0" * 39),
    (("target",), "m" * 38, "expected one of mode, mean, got '" + "m" * 38 + "'"),
])
def test_a_long_value_is_shown_cut_with_a_mark_or_by_its_digits(path, value, why):
    """A value longer than 40 characters is cut where the error shows it: a string ends in "..." and an integer is
    named by its count of digits, where it was cut to 40 characters with no mark and read as another number."""
    record = {"splits": "Cell", "settings": "Settings"}.get(path[0], "Metrics")
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(_edited(path, value))
    assert str(info.value) == f"metrics.json: {record}.{path[-1]} is not readable ({why})"


def test_shown_value_by_hand():
    from judge.metrics_json.json_record import got_words, shown_value

    assert shown_value(12345) == "12345" and shown_value(0.5) == "0.5" and shown_value("ab") == "'ab'"
    assert shown_value("a" * 50, limit=10) == "'aaaaaa..."
    assert shown_value(-(10**20), limit=10) == "an integer of 21 digits"
    assert shown_value(10**5000) == "an integer of about 5001 digits"  # no repr past Python's 4,300 digits
    assert got_words(10**40) == "an integer of 41 digits" and got_words(True) == "true" and got_words([1]) == "a list"


@pytest.mark.parametrize("field", ["data", "predictions"])
def test_a_data_or_predictions_path_that_is_not_text_is_refused_naming_it(field):
    """A number as the data path was read as it was, and compare stopped in a TypeError building its file links."""
    assert Metrics.from_json({**_RAW, field: None}).data is None
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json({**_RAW, field: 5})
    assert str(info.value) == f"metrics.json: Metrics.{field} is not readable (expected a string, got an integer 5)"


def test_a_count_no_float_holds_is_refused_naming_it():
    """The reports divide and format counts as floats: a count of 10**400 was an OverflowError in report.html;
    float64's largest integer still reads."""
    from judge.metrics_json.json_record import MAX_COUNT

    assert MAX_COUNT == int(1.7976931348623157e308)
    assert Metrics.from_json(_edited(("splits", "all", "overall", "n"), MAX_COUNT)).splits["all"].overall.n == MAX_COUNT
    with pytest.raises(JsonRecordError, match=r"Cell\.n is not readable \(expected a whole number a float holds "
                                              r"\(up to about 1\.8e308\), got an integer of 401 digits\)"):
        Metrics.from_json(_edited(("splits", "all", "overall", "n"), 10**400))


@pytest.mark.parametrize(("value", "why"), [
    ([1], "expected a number, got a list"), ("x", "expected a number, got a string 'x'"),
    (True, "expected a number, got true"),
    (10**400, "expected a finite number a float holds, got an integer of 401 digits"),
])  # fmt: skip
def test_a_validity_figure_that_is_no_number_is_refused_naming_it(value, why):
    """The validity section's numbers were read unchecked: a list as the ceiling's gap failed in compare's number
    format (TypeError), 10**400 as an OverflowError, a string as "Unknown format code 'f'" naming nothing. An
    integer stays an integer (the file writes back the same bytes), and null stays None."""
    from judge.metrics_json.validity import Leniency

    raw = {"n": 3, "mean_signed_error": 1, "ci": [0.5, 1.5], "direction": "lenient"}
    assert Leniency.from_json(raw).mean_signed_error == 1 and type(Leniency.from_json(raw).mean_signed_error) is int
    assert Leniency.from_json({**raw, "mean_signed_error": None}).mean_signed_error is None
    with pytest.raises(JsonRecordError) as info:
        Leniency.from_json({**raw, "mean_signed_error": value})
    assert str(info.value).endswith(f"Leniency.mean_signed_error is not readable ({why})")


def test_a_cell_without_its_optional_in_scale_interval_writes_back_with_a_later_versions_keys_kept():
    """A cell with correlations but no mae_in_scale_ci (both optional) read, then failed writing compare.json
    (StopIteration: the correlations are written after that interval); a later version's key named "extra", the
    name of the field that holds such keys, was dropped on read. Both now write back, in order: the fields, the
    correlations, then the later version's keys as given."""
    from eval.scoring.item_table import dumps

    cell = {**_CELL, "n_spearman": 1, "spearman": 0.5, "later": 2, "extra": {"k": 1}}
    metrics = Metrics.from_json(_edited(("splits", "all", "overall"), cell))
    assert metrics.splits["all"].overall.extra == {"later": 2, "extra": {"k": 1}}
    written = json.loads(dumps(metrics))["splits"]["all"]["overall"]
    assert list(written.items()) == [*_CELL.items(), ("n_spearman", 1), ("spearman", 0.5), ("later", 2),
                                     ("extra", {"k": 1})]
