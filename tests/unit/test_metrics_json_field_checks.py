"""metrics.json's settings, text, lists, tables and figures as read back (``judge.metrics_json.metrics``): a value no
``judge-eval score`` writes (a level of 200 %, a number for a name, an interval whose ends are swapped, an MAE below
0, a correlation past 1, more failures than items) is refused naming the field, rather than shown on the pages or
failing there with Python's own error."""

from __future__ import annotations

import pytest

from judge.metrics_json.json_record import JsonRecordError, count, keyed, listed, plain_number
from judge.metrics_json.metrics import Metrics, RunInfo
from tests.support.json_edits import edited
from tests.unit.test_metrics_json_numbers import _RAW

_OVERALL = ("splits", "all", "overall")
_WITH_NOTES = {**_RAW, "notes": {"n_unknown_ids": 0}, "levels": [0.0, 1.0],
               "pollux_official": {"title": "t", "extraction": "e", "reference": "r", "splits": {}},
               "run": {"backend": "b", "model": "m", "prompt_version": None, "git_revision": None}}


def _refused(path: tuple[str, ...], value, field: str) -> JsonRecordError:
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json(edited(_WITH_NOTES, path, value))
    assert field in str(info.value), str(info.value)
    return info.value


def test_the_file_as_written_reads_back():
    read = Metrics.from_json(_WITH_NOTES)
    assert read.settings.ci_level == 0.95 and read.levels == [0.0, 1.0] and read.run.model == "m"
    assert read.pollux_official.title == "t"


@pytest.mark.parametrize("value", [2.0, 0, 1, 0.0, 1.0, -0.5, None, True, "0.95"])
def test_a_level_outside_0_to_1_is_refused(value):
    err = _refused(("settings", "ci_level"), value, "Settings.ci_level")
    assert err.field == "settings.ci_level"


@pytest.mark.parametrize("path, value, field", [
    (("notes", "first_unknown_id"), 5, "Notes.first_unknown_id"),
    (("notes", "duplicate_rows"), [5], "Notes.duplicate_rows"),
    (("notes", "duplicate_rows"), "line 8 = line 3", "Notes.duplicate_rows"),
    (("notes", "off_scale_rows"), [1, 2], "Notes.off_scale_rows"),
    (("notes", "unselected_split"), 3, "Notes.unselected_split"),
    (("notes", "missing_shards"), ["a"], "Notes.missing_shards"),
    (("notes", "no_raw_outputs"), "yes", "Notes.no_raw_outputs"),
    (("splits", "all", "failures"), {"x": "five"}, "SplitMetrics.failures"),
    (("splits", "all", "failures"), {"x": -5}, "SplitMetrics.failures"),
    (("splits", "all", "failures"), ["x"], "SplitMetrics.failures"),
    (_OVERALL + ("why_empty",), {"a": "b"}, "Cell.why_empty"),
    (_OVERALL + ("why_no_vc",), 3, "Cell.why_no_vc"),
    (("levels",), ["a"], "Metrics.levels"),
    (("levels",), 3, "Metrics.levels"),
    (("pollux_official", "title"), 5, "PolluxOfficial.title"),
    (("run", "model"), 5, "RunInfo.model"),
    (("run", "git_revision"), ["x"], "RunInfo.git_revision"),
])
def test_text_lists_and_tables_that_are_not_what_score_writes_are_refused(path, value, field):
    err = _refused(path, value, field)
    assert err.field == ".".join(path)


@pytest.mark.parametrize("path, value, field", [
    (_OVERALL + ("mae_ci",), [0.9, 0.1], "Cell.mae_ci"),
    (_OVERALL + ("mae",), -1.0, "Cell.mae"),
    (_OVERALL + ("mae",), float("inf"), "Cell.mae"),
    (_OVERALL + ("mae_ci",), [-0.5, 0.1], "Cell.mae_ci"),
    (_OVERALL + ("mae_in_scale",), -0.1, "Cell.mae_in_scale"),
    (_OVERALL + ("spearman",), 3.0, "Cell.spearman"),
    (_OVERALL + ("pearson",), -1.5, "Cell.pearson"),
    (_OVERALL + ("kendall",), 1.01, "Cell.kendall"),
    (_OVERALL + ("spearman_ci",), [0.5, 0.2], "Cell.spearman_ci"),
    (_OVERALL + ("spearman_ci",), [-2.0, 0.2], "Cell.spearman_ci"),
    (_OVERALL + ("n_failed",), 10 ** 6, "Cell.n_failed"),
    (_OVERALL + ("n_scored",), 5, "Cell.n_scored"),
])
def test_figures_no_scorer_writes_are_refused(path, value, field):
    err = _refused(path, value, field)
    assert err.field == ".".join(path)


_NAN = float("nan")


@pytest.mark.parametrize("path, value, read", [
    (_OVERALL + ("mae_ci",), [0.2, 0.2], (0.2, 0.2)),  # a zero-width interval: every resample alike
    (_OVERALL + ("mae_ci",), None, (_NAN, _NAN)),  # null: NaN, an interval without resamples
    (_OVERALL + ("mae",), None, _NAN),
    (_OVERALL + ("spearman",), -1.0, -1.0),
    (_OVERALL + ("spearman_ci",), [None, None], (_NAN, _NAN)),
    (_OVERALL + ("n_scored",), 3, 3),
    (("run", "model"), None, None),
])
def test_figures_at_their_bounds_and_nulls_still_read(path, value, read):
    """Each is read, as the value the file gives (a null figure as NaN), not refused and not another value."""
    got = Metrics.from_json(edited(_WITH_NOTES, path, value))
    for key in path:
        got = got[key] if isinstance(got, dict) else getattr(got, key)
    assert _same(got, read), (got, read)


def _same(got, want) -> bool:
    """Equal, NaN matching NaN (an interval's ends one by one)."""
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, float) and want != want:
        return isinstance(got, float) and got != got
    return type(got) is type(want) and got == want


def test_run_info_made_from_a_run_json_names_its_file():
    assert RunInfo.of({"model": "m"}).model == "m"
    with pytest.raises(JsonRecordError) as info:
        RunInfo.of({"model": 5}, where="run.json")
    assert str(info.value).startswith("run.json: RunInfo.model") and info.value.field == "model"


def test_a_list_or_table_reader_names_the_bad_item():
    """Any reader of a list or a table of plain values (a number, a count) says which item it could not read."""
    with pytest.raises(TypeError, match=r"^item 1: expected a number, got a string 'x'$"):
        listed(plain_number)([1, "x"])
    with pytest.raises(ValueError, match=r"^'b': expected a whole number of 0 or more, got -5$"):
        keyed(count)({"a": 1, "b": -5})
    with pytest.raises(TypeError, match=r"^expected a list, got an integer 3$"):  # the whole value: no item to name
        listed(plain_number)(3)
