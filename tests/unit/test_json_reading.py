"""``judge.plumbing.json_reading``: the nesting bound that keeps Arrow's JSON reader alive, and every line reader
naming what ``json.loads`` cannot hold (a bare RecursionError on deep nesting, a ValueError on an integer past
Python's 4,300 digits) with its file and line instead of a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judge.plumbing.json_reading import ARROW_MAX_OPENERS_PER_LINE, arrow_may_read
from tests.support.deep_json import nested_arrays

LIMIT = ARROW_MAX_OPENERS_PER_LINE


@pytest.mark.parametrize("data, may", [
    (b"", True),
    (b"{" + nested_arrays(LIMIT - 1).encode() + b"}\n", True),  # at the bound
    (b"{" + nested_arrays(LIMIT).encode() + b"}\n", False),  # one past it
    ((b'{"a": [1]}\n' * LIMIT) * 3, True),  # many openers in all, few per line
    (b'{"a": 1}\n' * 5 + b'{"a": "' + b"{" * LIMIT + b'"}', False),  # a last line without its newline, in a string
], ids=["empty", "at-the-bound", "one-past", "spread-over-lines", "last-line-in-a-string"])
def test_the_bound_counts_openers_per_line(data, may):
    assert arrow_may_read(data) is may


DEEP = nested_arrays(5_000)
LONG = "1" * 5_000
SAID = {DEEP: "unreadable JSON: nested too deeply", LONG: "unreadable JSON: a number too long to read"}


@pytest.mark.parametrize("value", [DEEP, LONG], ids=["deep", "long-number"])
def test_every_line_reader_names_the_line_json_loads_cannot_hold(tmp_path, value):
    from eval.mera.task_rows import DataError, iter_task_rows
    from eval.pairwise.judging import is_pairwise_data, load_pairs
    from eval.ranking.compare import compare_rankings
    from judge import RecordError
    from judge.criteria_auto.expansion import expand_file
    from judge.plumbing.config_files import ConfigError, read_json_object
    from judge.plumbing.run_folder import ResumeMismatch, claim_run_folder
    from train.criteria_rows import refuse_benchmark_sources
    from train.seq2seq import traces_agreement
    from train.synthetic.journal import read_rows

    lines = tmp_path / "rows.jsonl"
    lines.write_text(f'{{"id": "1", "x": {value}}}\n' + '{"id": "2"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=f"rows.jsonl: line 1: {SAID[value]}"):
        list(iter_task_rows(lines))
    with pytest.raises(ConfigError, match=f"rows.jsonl: line 1: {SAID[value]}"):
        load_pairs(lines)
    with pytest.raises(ValueError, match=f"rows.jsonl: line 1: {SAID[value]}"):
        expand_file(lines, tmp_path / "out", classifier=None)
    with pytest.raises(ValueError, match=f"rows.jsonl:1: {SAID[value]}"):  # a synthetic stage's input
        read_rows(lines)
    with pytest.raises(RecordError, match=f"rows.jsonl: line 1: {SAID[value]}"):  # its first row's keys tell
        refuse_benchmark_sources([lines], allow=False)
    first = tmp_path / "first.jsonl"
    first.write_text(f'{{"answer_1": {value}}}\n', encoding="utf-8")
    assert is_pairwise_data(first) is False
    document = tmp_path / "run.json"
    document.write_text(f'{{"x": {value}}}', encoding="utf-8")
    with pytest.raises(ValueError, match=f"run.json: {SAID[value]}"):
        read_json_object(document)
    for name in ("a", "b"):  # two ranking runs whose rank.json cannot be read
        (tmp_path / name).mkdir()
        (tmp_path / name / "rank.json").write_text(f'{{"x": {value}}}', encoding="utf-8")
    with pytest.raises(ValueError, match=f"rank.json: {SAID[value]}"):
        compare_rankings(tmp_path / "a", tmp_path / "b")
    resumed = tmp_path / "resumed"  # progress whose run key cannot be read, so cannot be checked
    resumed.mkdir()
    (resumed / "progress.jsonl").write_text("", encoding="utf-8")
    (resumed / "run_key.json").write_text(f'{{"x": {value}}}', encoding="utf-8")
    with pytest.raises(ResumeMismatch, match=f"run_key.json: {SAID[value]}"):
        claim_run_folder(resumed, {"x": 1}, ["progress.jsonl"])
    # A traces summary.json it cannot read leaves the stage's defaults, as one that is not JSON does.
    (tmp_path / "summary.json").write_text(f'{{"stage": "traces", "tolerance": {value}}}', encoding="utf-8")
    assert traces_agreement(str(tmp_path / "traces.jsonl")) == traces_agreement(None)


def test_an_unreadable_answer_is_said_only_of_json_loads_refusing_the_body():
    """The words of an HTTP 200 whose body json.loads refused (malformed with its line, JSON it cannot hold, bytes
    that are no UTF-8 text with the first such byte); None for a ValueError of the client's own, which its caller
    lets go on as it is."""
    import json

    from judge.plumbing.json_reading import JSON_REFUSALS, unreadable_answer

    def refusal(text: str | bytes) -> BaseException:
        try:
            json.loads(text)
        except JSON_REFUSALS as err:
            return err
        raise AssertionError(text)

    assert unreadable_answer(refusal('{"a": 1,\n "b')) == ("HTTP 200, but the answer is invalid JSON (Unterminated "
                                                          "string starting at line 2, column 2)")
    assert unreadable_answer(refusal(DEEP)) == "HTTP 200, but the answer is unreadable JSON: nested too deeply"
    assert unreadable_answer(refusal(LONG)).startswith("HTTP 200, but the answer is unreadable JSON: a number too long")
    assert unreadable_answer(ValueError("invalid literal for int()")) is None
    not_utf8 = "but the answer is not UTF-8 text"
    assert unreadable_answer(refusal(b'["a", "\xff"]')) == f"HTTP 200, {not_utf8} (byte 0xff at byte 7)"
    assert unreadable_answer(refusal(b'"\xfe"'), 201) == f"HTTP 201, {not_utf8} (byte 0xfe at byte 1)"


def test_json_or_none_reads_the_value_or_none():
    from judge.plumbing.json_reading import json_or_none

    assert json_or_none('{"a": [1]}') == {"a": [1]}
    assert json_or_none(b'{"a": 1}') == {"a": 1}
    for unreadable in ("{", DEEP[:-1] + "x", LONG, b'"\xff"', "null"):
        assert json_or_none(unreadable) is None


REPO = Path(__file__).resolve().parents[2]
#: The tuple the readers catch around json.loads, spelt out (either order) instead of ``JSON_REFUSALS``.
SPELT_OUT = re.compile(r"except\s*\(\s*(?:ValueError\s*,\s*RecursionError|RecursionError\s*,\s*ValueError)\s*\)")


def test_no_reader_spells_out_what_json_loads_raises():
    """Every reader catches ``JSON_REFUSALS`` (or reads with ``json_or_none``): the reason RecursionError belongs
    beside ValueError is written once, in judge.plumbing.json_reading, and no reader restates it."""
    spelt = [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
             for root in ("judge", "train", "serve", "eval", "tests", "scripts", "bench")
             for path in sorted((REPO / root).rglob("*.py"))
             if path.name != "json_reading.py"
             for text in [path.read_text(encoding="utf-8")] for m in SPELT_OUT.finditer(text)]
    assert not spelt, f"except JSON_REFUSALS (judge.plumbing.json_reading) in place of the tuple at: {spelt}"


#: Modules that write U+FEFF for something other than a file's byte order mark, and what for.
NOT_A_FILES_BOM = {"judge/plumbing/invisible_text.py": "one of the characters that show nothing, which readers of text drop"}


def test_the_byte_order_mark_is_spelt_once():
    """Every file reader skips ``UTF8_BOM`` (judge.plumbing.json_reading) at a file's start: none spells the bytes
    (or the character) out again."""
    spelt = [f"{path.relative_to(REPO)}" for root in ("judge", "train", "serve", "eval")
             for path in sorted((REPO / root).rglob("*.py"))
             if path.name != "json_reading.py" and path.relative_to(REPO).as_posix() not in NOT_A_FILES_BOM
             if re.search(r"\\xef\\xbb\\xbf|\\ufeff|utf-8-sig", path.read_text(encoding="utf-8"), re.IGNORECASE)]
    assert not spelt, f"UTF8_BOM in place of the bytes spelt out in: {spelt}"


@pytest.mark.parametrize(("value", "finite"), [
    (0, True), (-3, True), (1.5, True), (-1e308, True), (10**308, True),
    (10**400, False), (-10**400, False),  # JSON reads an integer of any size; math.isfinite raises OverflowError
    (float("nan"), False), (float("inf"), False), (float("-inf"), False),  # Python's reader takes NaN and Infinity
    (True, False), (False, False), ("1", False), (None, False), ([1], False), ({"a": 1}, False),
])  # fmt: skip
def test_finite_number_is_a_json_number_a_float_holds_finitely(value, finite):
    """One reading of "a finite number" for every reader: a bool is no number, and an integer past float's range
    is as much no number as an infinity, never an OverflowError."""
    from judge.plumbing.json_reading import finite_number

    assert finite_number(value) is finite
