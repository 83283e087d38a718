"""The data of the pages' item explorer: per item, its filters, scores, difference and (for the worst items) texts,
as ``report.html`` and ``compare.html`` embed it (``eval.reports.html_report`` renders the pages around it).

Built column-wise from the item table (``eval.scoring.item_table.arrow_table``, ``items.parquet``), the records' texts and
the predictions' feedback: 160,000 rows of numbers and codes, written as JSON text (``explorer_json``) without a
Python list per row.

Full texts (instruction, answer, reference, rubric, comments, feedback) are embedded for at most
``text_items`` items: the largest |judge − experts| of every (criterion, evaluated model) first, round by round,
then the items without a difference (failures, no reference). They sit in a second JSON element that the page
parses only when an item is first opened. The POLLUX paper has no view of this kind;
the cap is our choice, so that a full-test page stays a few tens of MB instead of several hundred. The texts are
bounded by bytes too, whatever the judge writes: each is cut at ``MAX_TEXT_CHARS`` characters (the cut is said in
the text), and items stop being embedded once their texts reach ``DEFAULT_TEXT_BYTES`` (said in the page's note). A
judge's raw output is embedded only for a failed verdict: a parsed one is its feedback and score again (a reasoning
judge's ``<think>…</think>`` plus the score), which doubled the texts of such a run.

Why one module of ~960 lines: report.html's explorer and compare.html's are one data layout (the columns, the text
cap, the status labels the page's filters and badges know); apart, the page script's one contract would live in two
files. Finding a run's files again is ``eval.reports.run_files``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.reports.names import NAME_CHARS, shown_name, shown_names
from eval.reports.report import SPLIT_TITLES
from eval.reports.run_files import data_path, load_predictions, load_records, missing_note
from eval.scoring.comparison import Comparison

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULT_TEXT_BYTES", "DEFAULT_TEXT_ITEMS", "MAX_TEXT_CHARS", "MODE_LABELS", "SCALE_LABELS",
           "STATUS_LABELS", "compare_items", "compare_status", "explorer_json", "item_columns", "item_status",
           "read_item_columns", "report_items", "NAME_CHARS", "shown_name", "shown_names"]

#: Items whose full texts a page embeds (see the module docstring); 0 keeps none, a negative value keeps all (up to
#: ``DEFAULT_TEXT_BYTES``). An embedded item's instruction, answer and reference are rarely shared with another's, so
#: the texts are most of a full-size run's page; at this default that page opens in a headless browser in seconds
#: (docs/performance.md, the report.html row: its size and load time, ``python bench/report_page.py``). A reasoning
#: judge's feedback is its reasoning: with a few thousand characters of it per item, ``DEFAULT_TEXT_BYTES`` stops the
#: texts before this count.
DEFAULT_TEXT_ITEMS = 5_000
#: The longest text (instruction, answer, rubric, comment, feedback, raw output) the page embeds, in characters;
#: a longer one is cut there, with a line saying so (one 1 MB feedback would otherwise be 1 MB of the page).
MAX_TEXT_CHARS = 20_000
#: The most bytes of embedded texts (their JSON) a page holds: texts are embedded item by item, worst first, until
#: the next item's would pass it. About three times the synthetic full test's 22 MiB, so a run of ordinary texts
#: keeps its ``DEFAULT_TEXT_ITEMS``.
DEFAULT_TEXT_BYTES = 64 * 2**20
#: Explorer status of an item, as the filter shows it (``unknown``: items.parquet holds a status this version does
#: not write). The statuses part the items as metrics.json counts them: ``scored`` holds the ``n_scored`` items
#: (a verdict outside its scale is scored, as the paper scores it), ``failed`` the ``n_failed``, ``missing`` the
#: ``n_missing``. Whether a verdict lies outside its scale is a filter of its own (``SCALE_LABELS``), not a status.
#: A judged item whose experts tie has no reference and is ``experts tie``; a failed one whose experts tie is
#: ``failed`` (the first that applies, ``item_status``). Which items' experts tie is the mode filter's
#: (``MODE_LABELS``), counted as metrics.json's ``n_no_unique_mode`` is.
STATUS_LABELS = ("scored", "failed", "experts tie", "unlabelled", "missing", "unknown")
#: The experts' mode filter: its ``no unique mode`` holds the items metrics.json's ``n_no_unique_mode`` counts (an
#: item with a prediction, failed or not, whose expert scores have no unique mode); ``no prediction``: the items
#: outside ``n``.
MODE_LABELS = ("unique mode", "no unique mode", "no expert scores", "no prediction")
#: The scale filter: the judge's score inside or outside the item's scale (its ``out of scale`` count is the
#: report's ``n_out_of_scale``), or not checked (no score, or a rubric without a readable scale).
SCALE_LABELS = ("in scale", "out of scale", "not checked")
# items.parquet's ``why_unscored`` (when the scorer writes it) -> explorer status.
_WHY_UNSCORED = {"no_prediction": "missing", "request_failed": "failed", "parse_failed": "failed",
                 "all_experts_abstained": "unlabelled", "no_expert_scores": "unlabelled",
                 "no_unique_mode": "experts tie"}

def explorer_json(data: Mapping[str, Any]) -> str:
    """``json.dumps`` of the explorer's data, compact, non-ASCII kept; its ``rows`` written by ``_ItemRows``."""
    rows = data.get("rows")
    if not isinstance(rows, _ItemRows):
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Appended after the other keys, not spliced in for a placeholder: any string of the data (a judge's name) may
    # hold a placeholder's encoding, and the splice then landed inside that string and broke the page's JSON.
    rest = {key: value for key, value in data.items() if key != "rows"}
    text = json.dumps(rest, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text[:-1] + ("," if rest else "") + '"rows":' + rows.json_text() + "}"


# ----------------------------------------------------------------------------------------- item payloads


def _json_bytes(value: Any) -> int:
    """The bytes of ``value`` as the page embeds its JSON (compact, non-ASCII kept, UTF-8): each ``<`` is written
    ``\\u003c`` there (``eval.reports.html_report``), 5 bytes more, so a text of code or markup costs up to 6 times
    its length and the budget must count that."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8")) + 5 * text.count("<")


def _clip(text: str | None) -> str:
    """``text`` as the page embeds it: cut at ``MAX_TEXT_CHARS`` characters, with a line that says so."""
    text = text or ""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return (f"{text[:MAX_TEXT_CHARS]}\n\n[… cut at {MAX_TEXT_CHARS:,} characters of {len(text):,}: the whole text is in "
            "the run's files]")


class _Strings:
    """Shared texts (instructions, answers, rubrics repeat across an answer's criteria) stored once, each cut at
    ``MAX_TEXT_CHARS``; ``size``: their bytes in the page's JSON."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self.index: dict[str, int] = {}
        self.size = 0

    def __call__(self, text: str | None) -> int:
        text = _clip(text)
        if text not in self.index:
            self.index[text] = len(self.values)
            self.values.append(text)
            self.size += _json_bytes(text) + 1  # and its comma
        return self.index[text]

    def drop_after(self, count: int, size: int) -> None:
        """Forget the strings added after the first ``count`` (an item that did not fit the budget)."""
        for text in self.values[count:]:
            del self.index[text]
        del self.values[count:]
        self.size = size


class _TextBudget:
    """Details (an item's texts) added while their JSON and the strings they add stay within ``limit`` bytes."""

    def __init__(self, strings: _Strings, limit: int = DEFAULT_TEXT_BYTES) -> None:
        self.strings, self.limit = strings, limit
        self.details: list[dict[str, Any]] = []
        self.size = 0
        self.full = False  # an item's texts did not fit: none is added after it

    def add(self, build) -> int:
        """The index of the detail ``build()`` makes (it interns its texts in ``strings``), or -1 once full."""
        if self.full:
            return -1
        count, before = len(self.strings.values), self.strings.size
        detail = build()
        size = _json_bytes(detail) + 1
        if self.size + size + self.strings.size > self.limit:
            self.strings.drop_after(count, before)
            self.full = True
            return -1
        self.size += size
        self.details.append(detail)
        return len(self.details) - 1

    def note(self) -> str:
        """What the page says when the budget stopped the texts; "" when it did not."""
        if not self.full:
            return ""
        return (f"the page's budget for texts ({self.limit / 2**20:g} MiB, long texts cut at {MAX_TEXT_CHARS:,} "
                "characters) was reached")


def _round(value: Any, digits: int = 4) -> float | int | None:
    """A number for the page's JSON: rounded, whole numbers without ".0" (160k rows of them), None if undefined."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value):
        return None
    value = round(value, digits)
    return int(value) if value.is_integer() else value


def _round_column(values: Sequence[Any]) -> list[float | int | None]:
    """``[_round(v) for v in values]``, a column at a time: whole numbers (most scores) are converted in one numpy
    step, the rest go through ``_round`` itself (Python's correctly rounded ``round``; numpy's differs in the last
    digit now and then), so the result is the same value for value."""
    import numpy as np

    try:
        x = np.asarray(values, dtype=float)  # None -> NaN, which _round also gives None
    except (TypeError, ValueError):
        return [_round(v) for v in values]
    if x.ndim != 1:
        return [_round(v) for v in values]
    finite = np.isfinite(x)
    whole = finite & (np.floor(x) == x) & (np.abs(x) < 2.0**53)  # exact as int64
    column = np.full(len(x), None, dtype=object)
    column[whole] = x[whole].astype(np.int64)  # Python ints in an object array
    out: list[Any] = column.tolist()
    rest = np.flatnonzero(finite & ~whole)
    for i, v in zip(rest.tolist(), x[rest].tolist()):
        out[i] = _round(v)
    return out


def item_status(status: str, reference: float | None, has_experts: bool, why_unscored: str | None = None) -> str:
    """The explorer's status of one item (one of ``STATUS_LABELS``); the first that applies of failed, missing,
    unknown, experts tie (no unique mode), unlabelled, scored (the order of ``eval.scoring.item_table.UNSCORED_REASONS``).

    Args:
        status: the item table's status (``ok``, ``parse_failed``, ``request_failed``, ``missing``; another reads
            ``unknown``).
        reference: the item's reference score (None when undefined: no unique expert mode, no expert scores).
        has_experts: whether the item has expert scores at all.
        why_unscored: ``items.parquet``'s ``why_unscored`` when the column exists ("" for a scored item).
    """
    from eval.scoring.item_table import STATUSES

    if status in ("parse_failed", "request_failed"):
        return "failed"
    if status == "missing":
        return "missing"
    if status not in STATUSES:  # never read as scored: the page shows the label, not the file's text
        return "unknown"
    if why_unscored:
        return _WHY_UNSCORED.get(why_unscored, "experts tie" if has_experts else "unlabelled")
    if reference is None:
        return "experts tie" if has_experts else "unlabelled"
    return "scored"


def _verdict(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The judge's side of an item, compactly: feedback, the raw output of a failed verdict, error, confidence,
    probs; each text cut at ``MAX_TEXT_CHARS``."""
    if row is None:
        return None
    out: dict[str, Any] = {"f": _clip(row.get("feedback"))}
    raw = row.get("raw_output")
    # Only a failure's raw output says something the feedback and score do not (what the parser could not read); a
    # parsed verdict's is the feedback again in the format's tags (module docstring).
    failed = bool(row.get("error")) or row.get("score") is None
    if failed and raw and raw != (row.get("feedback") or ""):
        out["o"] = _clip(raw)
    if row.get("error"):
        out["e"], out["w"] = _clip(str(row["error"])), _clip(row.get("reason"))
    for key, short in (("confidence", "k"), ("expected_score", "x"), ("score_source", "src")):
        if row.get(key) is not None:
            out[short] = _round(row[key]) if short != "src" else row[key]
    probs = row.get("score_probs")
    if isinstance(probs, Mapping):
        out["p"] = {str(k): _round(v) for k, v in probs.items()}
    return out


#: Said over a verdict that judged an item's text the data no longer has, shown because no row of the id judged the
#: text as it is now (score ran before the edit, and its judge score is this verdict's).
EDITED_NOTE = ("This verdict judged the item's text before {data} was edited (the text there now differs): the "
               "scores come from that text; score again.")


class _Verdicts:
    """``_verdict`` of the prediction row of each id that score scored, as far as the files say now, from rows (dicts)
    or a prediction table (``eval.judging.predictions.read_prediction_table``): a table's rows are made into dicts only
    for the ids asked.

    ``current_key``: an id's ``record_content_key`` in the records now (None for an id not in them); None when no
    records are loaded. A row whose ``content_key`` differs judged a text the item no longer has, and score left it
    out (``eval.scoring.score.stale_rows``, the same rule: a row without a key, or of an id not in the records,
    cannot be checked and is kept): a later row of the id (a resumed run asked the edited item again) is its
    verdict, as score scored it. That function is not called here: score imports this module.

    The data may have been edited after score ran, though: its items.parquet then holds the scores of rows now
    stale. So an id's row is, in order: the first fresh row whose score is the item's judge score in items.parquet
    (``of``'s ``scores``), then the first stale one whose score is (with ``EDITED_NOTE``), then the first fresh row,
    then its first row (with ``EDITED_NOTE``): a scored item never opens to "no prediction". ``data``: the data's
    name in the note.
    """

    def __init__(self, predictions: Any, current_key: Callable[[str], str | None] | None = None,
                 data: str = "the data") -> None:
        import pyarrow as pa

        self._table = predictions if isinstance(predictions, pa.Table) else None
        self._key, self._current, self._data = current_key, {}, data
        self._rows: dict[str, list] = {}  # an id's rows, or its positions in the table, in the file's order
        if self._table is not None:
            if not pa.types.is_string(self._table.column("id").type):
                for position, rid in enumerate(self._table.column("id").to_pylist()):
                    self._rows.setdefault(str(rid), []).append(position)
        else:
            for row in predictions or ():
                self._rows.setdefault(str(row["id"]), []).append(row)

    def _positions(self, item_ids: Sequence[str]) -> dict[str, list[int]]:
        """The positions of each id's rows in the table, in order, for the ids asked only (a page asks a few thousand
        of 160,000): the table's ids matched against them in one Arrow pass."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        asked = list(dict.fromkeys(item_ids))
        which = pc.index_in(self._table.column("id"), value_set=pa.array(asked, type=pa.string()))
        which = which.combine_chunks() if isinstance(which, pa.ChunkedArray) else which
        rows = np.flatnonzero(which.is_valid().to_numpy(zero_copy_only=False))
        found = which.drop_null().to_numpy(zero_copy_only=False)
        order = np.argsort(found, kind="stable")  # by id, each id's rows in the file's order
        out: dict[str, list[int]] = {}
        for k, position in zip(found[order].tolist(), rows[order].tolist()):
            out.setdefault(asked[k], []).append(position)
        return out

    def _stale(self, item_id: str, key: Any) -> bool:
        """Whether a row of ``item_id`` with ``key`` (its ``content_key``) judged a text the item no longer has."""
        if self._key is None or key is None:
            return False
        if item_id not in self._current:
            self._current[item_id] = self._key(item_id)
        now = self._current[item_id]
        return now is not None and key != now

    def _pick(self, item_id: str, rows: list, key: Callable[[Any], Any], gave: Callable[[Any], tuple],
              wanted: Any) -> tuple[Any, bool]:
        """The row of ``item_id`` to show (None: it has none) and whether it is stale (see the class)."""
        if not rows:
            return None, False
        stale = [self._stale(item_id, key(row)) for row in rows]
        if _finite_number(wanted):
            # a head's row gives its clipped score and its raw value; items.parquet holds one of them
            matching = [any(_finite_number(v) and abs(float(v) - float(wanted)) <= 1e-9 for v in gave(row))
                        for row in rows]
            for want_fresh in (True, False):
                found = next((k for k, row in enumerate(rows) if matching[k] and stale[k] != want_fresh), None)
                if found is not None:
                    return rows[found], stale[found]
        found = next((k for k in range(len(rows)) if not stale[k]), 0)
        return rows[found], stale[found]

    def _with_note(self, verdict: dict[str, Any] | None, stale: bool) -> dict[str, Any] | None:
        if verdict is not None and stale:
            verdict["n"] = EDITED_NOTE.format(data=self._data)
        return verdict

    def of(self, item_ids: Sequence[str], scores: Sequence[Any] | None = None) -> list[dict[str, Any] | None]:
        """``_verdict`` of each id's row (see the class; None for an id without one); ``scores``: each id's judge
        score in items.parquet, in order (None: not known)."""
        wanted = list(scores) if scores is not None else [None] * len(item_ids)
        if self._table is None:
            def gave(row):
                return row.get("score"), row.get("regression_score")

            picked = [self._pick(item_id, self._rows.get(item_id, []), lambda row: row.get("content_key"), gave, w)
                      for item_id, w in zip(item_ids, wanted)]
            return [self._with_note(_verdict(row), stale) for row, stale in picked]
        import pyarrow as pa

        from eval.judging.predictions import prediction_rows

        positions = self._rows if self._rows or not self._table.num_rows else self._positions(item_ids)
        asked = sorted({p for item_id in item_ids for p in positions.get(item_id, ())})
        taken_at = pa.array(asked, type=pa.int64())

        def column(name: str) -> dict[int, Any]:
            if name not in self._table.column_names:
                return {}
            return dict(zip(asked, self._table.column(name).take(taken_at).to_pylist()))

        keys = column("content_key") if self._key is not None else {}
        row_scores, raw_scores = column("score"), column("regression_score")
        picked = [self._pick(item_id, positions.get(item_id, []), keys.get,
                             lambda p: (row_scores.get(p), raw_scores.get(p)), w)
                  for item_id, w in zip(item_ids, wanted)]
        chosen = [p for p, _ in picked if p is not None]
        taken = iter(prediction_rows(self._table.take(pa.array(chosen, type=pa.int64()))))
        return [self._with_note(_verdict(None if p is None else next(taken)), stale) for p, stale in picked]


def _finite_number(value: Any) -> bool:
    """Whether ``value`` is a finite number (a numpy scalar included; a bool is not one)."""
    import numbers

    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _current_keys(texts: _Texts) -> Callable[[str], str | None]:
    """An id's ``record_content_key`` in ``texts``' records now (None: not in them), for ``_Verdicts``."""
    from eval.judging.predictions import record_content_key

    def current(item_id: str) -> str | None:
        record = texts.get(item_id)
        return None if record is None else record_content_key(record)

    return current


class _Texts:
    """The records whose texts a page embeds, by id: built from the columns when first asked for (a page embeds a
    few thousand of the 160,000)."""

    def __init__(self, records) -> None:
        from judge.record_columns import as_columns

        self._columns = as_columns(records) if records is not None else None
        self._built: dict[str, Any] = {}  # None: not in the records
        self._ids = None  # the records' ids as an Arrow string array, once asked for (False: Arrow cannot hold one)

    def prefetch(self, item_ids) -> None:
        """Build the records of these ids in one pass (one at a time costs a pass over the columns each); an id not
        in the records is remembered as None. The records' ids are matched against the few asked in one Arrow pass
        (ids are unique once loaded), not through a lookup of every id (``RecordColumns.index_of``)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if self._columns is None:
            return
        wanted = list(dict.fromkeys(i for i in map(str, item_ids) if i not in self._built))
        if not wanted:
            return
        # An id that is no text Arrow holds (an int or a lone surrogate, in a record built in code; the loaders make
        # neither) is looked up by text as before, one id at a time: so it matches no page id and breaks no page.
        rows = None
        if self._ids is None:
            try:
                self._ids = pa.array(self._columns.ids, type=pa.string())
            except (pa.ArrowTypeError, pa.ArrowInvalid, UnicodeEncodeError):
                self._ids = False
        if self._ids is not False:
            try:
                found = pc.index_in(self._ids, value_set=pa.array(wanted, type=pa.string()))
                rows = np.flatnonzero(found.is_valid().to_numpy(zero_copy_only=False))
            except (pa.ArrowTypeError, pa.ArrowInvalid, UnicodeEncodeError):
                pass
        if rows is None:
            rows = [row for row in map(self._columns.index_of, wanted) if row is not None]
        for item_id in wanted:
            self._built[item_id] = None
        for record in self._columns.records_at(rows):
            self._built[record.id] = record

    def get(self, item_id: str):
        if self._columns is None:
            return None
        if item_id not in self._built:
            self.prefetch([item_id])
        return self._built[item_id]


def _record_text(record, strings: _Strings) -> dict[str, Any]:
    return {"i": strings(record.instruction), "a": strings(record.answer), "r": strings(record.reference_answer),
            "u": strings(f"{record.criteria_name}\n\n{record.rubrics}"),
            "c": [_clip(c) for c in record.expert_feedback or []]}


def _absent_text(note: str, strings: _Strings) -> dict[str, Any]:
    """An item's texts when the data lacks them: empty, with ``note`` (why) said in their place; its verdicts are
    embedded all the same."""
    return {"i": strings(""), "a": strings(""), "r": strings(""), "u": strings(""), "c": [], "m": note}


def _read_items(path: Path) -> dict[str, list]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pydict()


_ITEM_COLUMNS = ("id", "judge_score", "reference", "status", "expert_scores", "split", "model_id", "task_type",
                 "criteria_name", "in_scale", "why_unscored")


def read_item_columns(path: Path) -> dict[str, Any]:
    """``item_columns`` of a written ``items.parquet``."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    return item_columns(pq.read_table(path, columns=[c for c in _ITEM_COLUMNS if c in names]))


def item_columns(items) -> dict[str, Any]:
    """The columns of an item table (``eval.scoring.item_table.arrow_table``, as ``items.parquet`` holds it) that
    ``report_items`` reads: the float columns as numpy arrays (null -> NaN, which rounds to None), the expert
    scores as their Arrow list column, the text and flag columns as Arrow arrays too (``report_items`` labels their
    distinct values, not 160k Python values each), the others as lists (``to_pydict`` of every column took ~1 s on
    160k)."""
    import pyarrow as pa

    def values(column):
        if pa.types.is_floating(column.type):
            return column.to_numpy()
        if pa.types.is_list(column.type) or _is_text(column) or _is_flag(column):  # read flat, or by distinct value
            return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        return column.to_pylist()

    return {name: values(column) for name, column in zip(items.column_names, items.columns) if name in _ITEM_COLUMNS}


def _is_text(column) -> bool:
    """Whether ``column`` is an Arrow column of texts."""
    import pyarrow as pa

    return isinstance(column, (pa.Array, pa.ChunkedArray)) and (pa.types.is_string(column.type)
                                                                or pa.types.is_large_string(column.type))


def _is_flag(column) -> bool:
    """Whether ``column`` is an Arrow column of booleans (``in_scale``)."""
    import pyarrow as pa

    return isinstance(column, (pa.Array, pa.ChunkedArray)) and pa.types.is_boolean(column.type)


def _python_values(column) -> list:
    """A column's values as a Python list (an Arrow column's ``to_pylist``)."""
    return column.to_pylist() if _is_text(column) else list(column)


def _labelled(column, label=str) -> tuple[list, np.ndarray]:
    """``[label(v) for v in column]`` as its distinct labels and each row's position among them: an Arrow text or
    flag column is labelled once per distinct value (null: ``label(None)``), a sequence value by value.

    Returns:
        ``(labels, index)``: the distinct labels (a label is listed once) and an ``(n,)`` integer array.
    """
    import numpy as np

    if _is_text(column) or _is_flag(column):
        import pyarrow as pa

        # one dictionary for the whole column (a chunked column's chunks would each number their own)
        encoded = (column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column).dictionary_encode()
        labels = [label(v) for v in encoded.dictionary.to_pylist()] + [label(None)]
        index = encoded.indices.fill_null(len(labels) - 1).to_numpy(zero_copy_only=False).astype(np.intp)
    else:
        labels, index = [label(v) for v in column], None
    # One position per distinct label (two texts, or values, may read as one label)
    position: dict = {}
    merged = np.fromiter((position.setdefault(text, len(position)) for text in labels), dtype=np.intp,
                         count=len(labels))
    return list(position), merged if index is None else merged[index]


def _shown_labels(column) -> tuple[list, np.ndarray]:
    """``_labelled`` over a column of names, its labels as the pages show them (``shown_names``): two names cut
    alike stay two filter values."""
    labels, index = _labelled(column)
    shown = shown_names(labels)
    return [shown[label] for label in labels], index


def _coded(labels: Sequence, index: np.ndarray, order: Sequence[str] | None = None) -> tuple[list, list[int]]:
    """A filter's options and each row's option: the labels rows have (``labels[index]``), in ``order`` where
    given, else sorted; each row as its label's position among them."""
    import numpy as np

    used = np.bincount(index, minlength=len(labels)) > 0 if len(index) else np.zeros(len(labels), dtype=bool)
    present = {label for label, taken in zip(labels, used.tolist()) if taken}
    values = [s for s in order if s in present] if order is not None else sorted(present)
    position = {label: k for k, label in enumerate(values)}
    code_of = np.array([position.get(label, -1) for label in labels], dtype=np.int64)
    return values, code_of[index].tolist()


def _flat_lists(lists: Any, n: int) -> tuple[list, list[int]]:
    """A column of number lists (an Arrow list array, or Python lists with None for none) as its values in one flat
    list and the offsets where each row's values start (n + 1 of them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(lists, (pa.Array, pa.ChunkedArray)):
        array = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
        lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy()
        values = pc.list_flatten(array).to_numpy(zero_copy_only=False)
    else:
        lengths = [len(v) if v is not None else 0 for v in lists]
        values = [x for v in lists if v is not None for x in v]
    import numpy as np

    return values, [0] + np.cumsum(np.asarray(lengths, dtype=np.int64))[:n].tolist()


class _ItemRows(Sequence):
    """The explorer's rows, ``[id, [filter codes], [judge score], reference, difference, [expert scores], text
    index]`` per item, held as columns: 160,000 rows as Python lists were ~800,000 containers that the cyclic
    garbage collector traversed again and again while the page was built. ``json_text`` writes them as
    ``json.dumps`` would (compact, non-ASCII kept); indexing gives one row as a list."""

    def __init__(self, ids, codes, judge, reference, diff, flat, starts, detail) -> None:
        self._columns = (ids, codes, judge, reference, diff, flat, starts, detail)

    def __len__(self) -> int:
        return len(self._columns[0])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        ids, codes, judge, reference, diff, flat, starts, detail = self._columns
        return [ids[i], [c[i] for c in codes], [judge[i]], reference[i], diff[i], flat[starts[i]:starts[i + 1]],
                detail[i]]

    def json_text(self) -> str:
        """The rows as one JSON array, the bytes ``json.dumps(list(self), ensure_ascii=False,
        separators=(",", ":"))`` writes."""
        from json.encoder import encode_basestring  # json.dumps' own string encoder when ensure_ascii is off

        ids, codes, judge, reference, diff, flat, starts, detail = self._columns

        def numbers(values):  # json.dumps writes an int or a float by its repr, None as null
            return list(map(repr, values)) if None not in values else ["null" if v is None else repr(v)
                                                                           for v in values]

        def code_texts(column):  # each code's text made once per filter option, not once per row
            text = [str(k) for k in range(max(column, default=-1) + 1)]
            return [text[k] for k in column] if min(column, default=0) >= 0 else list(map(str, column))

        flat_text = numbers(flat)
        cats = list(map(",".join, zip(*map(code_texts, codes)))) if codes else [""] * len(ids)
        experts = [",".join(flat_text[a:b]) for a, b in zip(starts, starts[1:])]
        return "[" + ",".join(
            f"[{encode_basestring(i)},[{c}],[{j}],{r},{d},[{e}],{t}]"
            for i, c, j, r, d, e, t in zip(ids, cats, numbers(judge), numbers(reference), numbers(diff), experts,
                                           detail)) + "]"


def _text_order(diffs: Sequence[float | None], group: np.ndarray, cap: int) -> list[int]:
    """Row indices whose texts are embedded, in the order they are: the worst items of every group first, round by
    round (the order the byte budget takes them in).

    Within a group (a criterion of an evaluated model) items rank by difference, largest first, items without one
    last; the 1st of every group come before the 2nd of any, so a filtered view also opens to its own worst items.
    Sorted with ``numpy.lexsort`` on the same keys (group, no difference, −difference, index): the 160k-item sort
    by Python tuples took a second. ``group``: each row's group as an integer in the groups' sorted order.
    """
    import numpy as np

    n = len(diffs)
    if n == 0 or cap == 0:
        return []
    group = np.asarray(group, dtype=np.int64)
    values = np.asarray(diffs, dtype=float)  # None (no difference) -> NaN, in one C pass over the list
    missing = np.isnan(values)
    minus = -np.where(missing, 0.0, values)
    index = np.arange(n)
    within = np.lexsort((index, minus, missing, group))  # the last key sorts first
    rank = np.empty(n, dtype=np.int64)
    sorted_group = group[within]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])  # each group's first position
    position = np.arange(n)
    rank[within] = position - np.repeat(starts, np.diff(np.r_[starts, n]))
    order = np.lexsort((index, minus, missing, rank))
    return order.tolist() if cap < 0 else order[:cap].tolist()


def _no_text_note(n_text: int, n: int, budget_note: str = "", no_data: str | None = None) -> str:
    """What an item past the cap (or the byte budget) says in place of its texts. ``no_data``: None when the records
    are loaded; else why no item has its texts (the data gone), and only the judge's feedback was embedded for the
    first ``n_text`` items: no larger --html-text-items can bring the texts back."""
    if no_data is not None:
        if not n_text:
            return no_data
        cap = f"where {budget_note}" if budget_note else "--html-text-items"
        return (f"{no_data} The judge's feedback is embedded for {n_text} of {n} items (the largest differences of "
                f"each criterion and evaluated model first; {cap}); this one has only its numbers here.")
    if budget_note:
        return (f"Texts are embedded for {n_text} of {n} items (the largest differences of each criterion and "
                f"evaluated model first), where {budget_note}; this one has only its numbers here.")
    return (f"Texts are embedded for {n_text} of {n} items (the largest differences of each criterion and evaluated "
            "model first); this one has only its numbers here. Score again with a larger --html-text-items to embed "
            "more.")


def _mode_codes(flat_scores: Any, starts: Sequence[int], present: Sequence[bool]) -> np.ndarray:
    """Each item's ``MODE_LABELS`` label as its position there, from its expert scores as items.parquet holds them
    (abstentions left out) and whether it has a prediction: ``eval.scoring.metrics.expert_mode``, as metrics.json's
    count reads it."""
    import numpy as np

    from eval.scoring.metrics import expert_mode

    n = len(starts) - 1
    lengths = np.diff(np.asarray(starts, dtype=np.int64))
    padded = np.full((n, max(int(lengths.max()) if n else 0, 1)), np.nan)
    if len(lengths) and lengths.sum():
        row = np.repeat(np.arange(n), lengths)
        column = np.arange(int(lengths.sum())) - np.repeat(np.asarray(starts[:-1], dtype=np.int64), lengths)
        padded[row, column] = np.asarray(flat_scores, dtype=float)
    has_experts = (~np.isnan(padded)).any(axis=1)
    _, unique = expert_mode(padded)
    present = np.asarray(present, dtype=bool).reshape(-1)
    return np.where(~present, 3, np.where(~has_experts, 2, np.where(unique, 0, 1))).astype(np.intp)


def report_items(items: Mapping[str, Sequence], records: Sequence | None,
                 predictions: Iterable[Mapping[str, Any]] | None, judge_name: str, target: str,
                 text_items: int = DEFAULT_TEXT_ITEMS, records_note: str = "",
                 predictions_note: str = "", text_bytes: int = DEFAULT_TEXT_BYTES,
                 keys_checked: bool = False) -> dict[str, Any]:
    """The explorer's data for one scored run.

    Column-wise: numbers are rounded a column at a time (``_round_column``) and filter codes are built per column;
    row by row this took ~5 s for the full test's 160,000 items.

    Args:
        items: ``items.parquet`` as columns (lists, or numpy arrays for the numeric ones).
        records: the labelled records (for the texts): ``judge.RecordColumns`` or a ``JudgeRecord`` list; or None
            (the items' feedback is embedded all the same, ``records_note`` in place of their texts).
        predictions: the run's predictions (for the judge's feedback): a prediction table or rows, or None. Only
            the items ``items`` counts as predicted (status not ``missing``) show theirs.
        judge_name, target: labels.
        text_items: see ``DEFAULT_TEXT_ITEMS``.
        records_note, predictions_note: why ``records`` / ``predictions`` is None (``missing_note``), said on the
            page instead of empty texts or "no prediction".
        text_bytes: see ``DEFAULT_TEXT_BYTES``.
        keys_checked: ``predictions`` holds no row whose ``content_key`` differs from its record's (``judge-eval
            score`` dropped them, ``eval.scoring.score.stale_rows``): no key is computed again.
    """
    import numpy as np

    ids = [str(v) for v in _python_values(items["id"])]
    n = len(ids)
    texts = _Texts(records)
    # with the records loaded, a row of a text since edited is passed over as score passed it (``_Verdicts``)
    verdicts = _Verdicts(predictions, None if records is None or keys_checked else _current_keys(texts))
    in_scale, why_unscored = items.get("in_scale"), items.get("why_unscored")
    filters = [("split", "split"), ("model", "evaluated model"), ("task", "task type"), ("criterion", "criterion"),
               ("status", "status (a failed item is 'failed', whatever else holds)"), ("mode", "experts' mode")]
    if in_scale is not None:  # an items.parquet written before in_scale existed has no scale to filter by
        filters.append(("scale", "judge's score vs scale"))

    judge_scores = _round_column(items["judge_score"])
    references = _round_column(items["reference"]) if "reference" in items else [None] * n
    diffs = [abs(j - r) if j is not None and r is not None else None for j, r in zip(judge_scores, references)]
    shown_diffs = _round_column(diffs)
    flat_scores, starts = _flat_lists(items["expert_scores"], n)
    flat = _round_column(flat_scores)

    # Every filter is labelled once per distinct value, or combination of values, and its rows coded from there:
    # a Python string per row and filter cost ~0.4 CPU-s on the full test.
    status_labels, status_index = _labelled(items["status"])
    # The status of an item depends on these four values only: computed once per distinct combination.
    has_experts = np.diff(np.asarray(starts, dtype=np.int64)) > 0
    no_reference = np.isnan(np.asarray(references, dtype=float))  # a rounded reference is a number or None
    why_labels, why_index = (_labelled(why_unscored, label=lambda v: v) if why_unscored is not None
                             else ([None], np.zeros(n, dtype=np.intp)))
    combination = ((status_index * 2 + no_reference) * 2 + has_experts) * len(why_labels) + why_index
    _, first, status_of = np.unique(combination, return_index=True, return_inverse=True)
    statuses = [item_status(status_labels[status_index[i]], None if no_reference[i] else 0.0, bool(has_experts[i]),
                            why_labels[why_index[i]]) for i in first.tolist()]
    present = np.array([label != "missing" for label in status_labels], dtype=bool)[status_index]
    labelled = {"split": _labelled(items["split"], lambda v: SPLIT_TITLES.get(str(v), str(v))),
                "model": _shown_labels(items["model_id"]), "task": _shown_labels(items["task_type"]),
                "criterion": _shown_labels(items["criteria_name"]), "status": (statuses, status_of.reshape(-1)),
                "mode": (list(MODE_LABELS), _mode_codes(flat_scores, starts, present))}
    if in_scale is not None:
        # items.parquet's in_scale of a verdict the judge gave (true / false; null: a rubric without a readable
        # scale); any other item is not checked. A dict lookup per distinct (status, in_scale): 1.0 and 0.0 find
        # True and False too.
        scale_of = {("ok", True): "in scale", ("ok", False): "out of scale"}
        flags, flag_index = _labelled(in_scale, label=lambda v: v)
        _, first, scale_index = np.unique(status_index * len(flags) + flag_index, return_index=True,
                                          return_inverse=True)
        labelled["scale"] = ([scale_of.get((status_labels[status_index[i]], flags[flag_index[i]]), "not checked")
                              for i in first.tolist()], scale_index.reshape(-1))
    # Filter options in a readable order (labels sorted, statuses and scale labels in their own order), rows coded
    # by position.
    ordered = {"status": STATUS_LABELS, "scale": SCALE_LABELS, "mode": MODE_LABELS}
    values: dict[str, list[str]] = {}
    codes = []
    for key, _ in filters:
        values[key], coded = _coded(*labelled[key], ordered.get(key))
        codes.append(coded)

    if records is None and predictions is None:
        with_text = []  # nothing to embed: the page's notes say both files are gone
    else:
        # (criterion, model) in sorted order is (criterion's code, model's code): their filters' options are their
        # labels, sorted. A null criterion or model is labelled too, so a foreign items.parquet with gaps in those
        # columns groups them under their label instead of failing to sort None against a text.
        group = np.asarray(codes[3], dtype=np.int64) * max(len(values["model"]), 1) + np.asarray(codes[1])
        with_text = _text_order(diffs, group, text_items)
    strings = _Strings()
    budget = _TextBudget(strings, text_bytes)
    detail = [-1] * n
    texts.prefetch(ids[i] for i in with_text)
    missing_predictions = {"m": predictions_note} if predictions is None and predictions_note else None
    # An item without its texts (the data file gone, or the data no longer holds its id) keeps its verdict, the note
    # saying why its texts are absent; it takes its slot of the cap like any embedded item.
    no_data = records_note or "The labelled data was not given: the items' texts are not in this page."

    def item_detail(i: int, verdict: dict[str, Any] | None) -> dict[str, Any]:
        record = texts.get(ids[i])
        out = (_record_text(record, strings) if record is not None
               else _absent_text(no_data if records is None else f"Item {ids[i]} is not in the labelled data.",
                                 strings))
        # An item items.parquet counts as having no prediction shows none: the predictions read again here may hold
        # a row score left out (one that judged a text the data no longer has, eval.scoring.score.stale_rows).
        out["v"] = [(missing_predictions or verdict) if present[i] else None]
        return out

    # items.parquet's judge score of each item picks the row score scored where the data was edited since
    for i, verdict in zip(with_text, verdicts.of([ids[i] for i in with_text],
                                                 [items["judge_score"][i] for i in with_text])):
        detail[i] = budget.add(lambda: item_detail(i, verdict))
        if budget.full:
            break
    rows = _ItemRows(ids, codes, judge_scores, references, shown_diffs, flat, starts, detail)
    details = budget.details
    # The cap said over the items, not only inside an item past it once opened (the budget's own note says its cut)
    capped = (f"{'Texts are' if records is not None else 'Feedback is'} embedded for {len(details)} of {n} items, "
              f"the largest differences of each criterion and evaluated model first (--html-text-items {text_items})."
              if (records is not None or predictions is not None) and len(details) < n and not budget.full else "")
    return {
        # The judges' labels as the page shows them, in the column heading and over each verdict.
        "kind": "report", "judges": ["judge: " + shown_name(judge_name or "(unnamed)")], "strings": strings.values, "details": details,
        "rows": rows, "page_size": 50, "status_filter": 4, "list_columns": [3, 1, 0, 4],
        "filters": [{"key": key, "label": label, "values": values[key]} for key, label in filters],
        "diff_label": "|judge − experts|", "reference_label": f"experts' {target}",
        "no_text_note": _no_text_note(len(details), n, budget.note(), no_data if records is None else None),
        "notes": [note for note in (records_note, predictions_note, budget.note() and
                                    f"{'Texts are' if records is not None else 'Feedback is'} embedded for "
                                    f"{len(details)} of {n} items: {budget.note()}.", capped) if note],
    }


def compare_items(result: Comparison, top: int = 1000) -> dict[str, Any]:
    """The explorer's data for a comparison: per compared run, the ``top`` items where its judge and the
    baseline's differ most (then the items only one of them scored), each with both judges' feedback."""
    from eval.reports.names import page_name
    from eval.scoring.compare import named_as

    folders = [Path(f) for f in result.folders]
    names = list(named_as(result, page_name).runs)  # as the page shows them
    tables = [_read_items(f / "items.parquet") for f in folders]
    records, notes, first_why = None, [], None
    # Each run's data by the file its recorded path finds (a relative "data.jsonl" finds each run's own copy), read
    # once however many runs name it; None: gone or unreadable.
    own: dict[Path | None, Callable[[str], str | None] | None] = {None: None}
    for at, (folder, m) in enumerate(zip(folders, result.metrics)):
        records, why = load_records(m.data, folder)
        if records is not None:
            break
        own[data_path(m.data, folder)] = None
        first_why = why if at == 0 else first_why
    if records is None:
        notes.append(missing_note("the labelled data", result.metrics[0].data, folders[0],
                                  "the items' instructions, answers, rubrics and expert comments are", first_why))
    texts = _Texts(records)
    current = None if records is None else _current_keys(texts)
    shown_data = result.metrics[at].data if records is not None else None  # the data file the texts come from
    # Per run: its verdicts by id (``_Verdicts``: a row of a text since edited passed over, as score passed it), or
    # the sentence that says why its judge's side is not in the page. Each run's rows are checked against its own
    # data (two runs may have been scored on two data files); a run whose data cannot be read, against the data
    # whose texts the page shows, which the note over a stale verdict names.
    preds: list[_Verdicts | str] = []
    if records is not None:
        own[data_path(result.metrics[at].data, folders[at])] = current
    for name, folder, m in zip(names, folders, result.metrics):
        table, why = load_predictions(m.predictions, folder)
        if table is None:
            preds.append(missing_note(f"the predictions of {name}", m.predictions, folder, "its judge's feedback is",
                                      why))
            notes.append(preds[-1])
            continue
        file = data_path(m.data, folder)
        if file not in own:
            found, _ = load_records(m.data, folder)
            # the columns kept: an id's key is built from them when the page asks for it
            own[file] = None if found is None else _current_keys(_Texts(found))
        checked = own[file] if own[file] is not None else current
        data = m.data if own[file] is not None else shown_data
        preds.append(_Verdicts(table, checked, f"the data ({Path(data).name})" if data else "the data"))
    base = tables[0]
    base_pos = {str(i): k for k, i in enumerate(base["id"])}
    # the names as the pages show them, told apart over the whole column: a label coded is one name's only
    shown_of = {key: shown_names(base[column]) for key, column in (("model", "model_id"), ("task", "task_type"),
                                                                   ("criterion", "criteria_name"))}
    filters = [("pair", "comparison"), ("split", "split"), ("model", "evaluated model"), ("task", "task type"),
               ("criterion", "criterion"),
               ("status", "status (both judged: a verdict from each run, mode ties included, which the paired "
                          "figures' 'both scored' leaves out)")]
    values: dict[str, list[str]] = {key: [] for key, _ in filters}

    def code(key: str, label: str) -> int:
        if label not in values[key]:
            values[key].append(label)
        return values[key].index(label)

    strings, out_rows = _Strings(), []
    budget = _TextBudget(strings)
    # Over each verdict of an opened item, its judges by name: with three runs or more the run column holds
    # several, and which one a row's is, is its comparison (the first filter).
    pair_judges: list[list[str]] = []
    for other_k in range(1, len(tables)):
        other = tables[other_k]
        pair = code("pair", f"{names[other_k]} vs {names[0]}")
        if pair == len(pair_judges):
            pair_judges.append(["baseline: " + names[0], "run: " + names[other_k]])
        candidates = []
        for j, item_id in enumerate(other["id"]):
            i = base_pos.get(str(item_id))
            if i is None:
                continue
            a, b = _round(base["judge_score"][i]), _round(other["judge_score"][j])
            diff = abs(a - b) if a is not None and b is not None else None
            candidates.append((diff is None, -(diff or 0.0), str(item_id), i, j, a, b, diff))
        candidates.sort()
        if len(candidates) > top:  # said, or the page's "N of M items match" reads as all the runs share
            notes.append(f"{names[other_k]} vs {names[0]}: {top:,} of the {len(candidates):,} items both runs hold "
                         f"are listed, those where the judges differ most (compare.html lists at most {top:,} per "
                         "comparison).")
        texts.prefetch(c[2] for c in candidates[:top])
        shown = [c[2] for c in candidates[:top]]
        # each side's verdicts of the items shown, by id; the sentence in place of a run's gone predictions
        # each side's judge score in items.parquet picks the row score scored (``_Verdicts``)
        scores = ([base["judge_score"][c[3]] for c in candidates[:top]],
                  [other["judge_score"][c[4]] for c in candidates[:top]])
        found_of = [found if isinstance(found, str) else dict(zip(shown, found.of(shown, side_scores)))
                    for found, side_scores in zip((preds[0], preds[other_k]), scores)]
        for _, _, item_id, i, j, a, b, diff in candidates[:top]:
            cats = [pair, code("split", SPLIT_TITLES.get(str(base["split"][i]), str(base["split"][i]))),
                    code("model", shown_of["model"][str(base["model_id"][i])]),
                    code("task", shown_of["task"][str(base["task_type"][i])]),
                    code("criterion", shown_of["criterion"][str(base["criteria_name"][i])]),
                    code("status", compare_status(base["status"][i], other["status"][j]))]
            record = texts.get(item_id)
            sides = (base["status"][i], other["status"][j])

            def text(record=record, item_id=item_id, sides=sides, found_of=found_of) -> dict[str, Any]:
                if record is not None:
                    out = _record_text(record, strings)
                else:  # said, not shown as empty texts
                    out = _absent_text(notes[0] if records is None else f"Item {item_id} is not in the labelled data.",
                                       strings)
                # A side items.parquet counts as having no prediction shows none (report_items says why).
                out["v"] = [None if status == "missing" else {"m": found} if isinstance(found, str)
                            else found.get(item_id) for status, found in zip(sides, found_of)]
                return out

            reference = _round((base.get("reference") or [None] * (i + 1))[i])
            experts = [_round(v) for v in (base["expert_scores"][i] or [])]
            out_rows.append([item_id, cats, [a, b], reference, _round(diff), experts, budget.add(text)])
    details = budget.details
    no_text = "This item's texts are not in the page" + (f": {budget.note()}." if budget.full else ".")
    return {
        "kind": "compare",
        "judges": ["baseline: " + names[0], "run: " + names[1] if len(names) == 2 else "run (per comparison)"],
        "judges_filter": 0, "filter_judges": pair_judges, "strings": strings.values, "details": details,
        "rows": out_rows, "page_size": 50, "status_filter": 5, "list_columns": [0, 4, 2, 5],
        "filters": [{"key": key, "label": label, "values": values[key]} for key, label in filters],
        "diff_label": "|run − baseline|", "reference_label": "experts' reference",
        "no_text_note": no_text, "notes": notes + ([f"Texts are embedded for {len(details)} of {len(out_rows)} items: "
                                                    f"{budget.note()}."] if budget.full else []),
    }


def compare_status(baseline: Any, run: Any) -> str:
    """compare.html's status of an item: ``both judged`` (a verdict from each run; the headline's "both scored"
    leaves out those of them whose experts have no unique mode, which have no reference), or each side's
    ``items.parquet`` status in words (``baseline parse failed, run ok``). A status that is not one of
    ``eval.scoring.item_table.STATUSES`` reads ``unknown``: the file may have been written by hand, and the label is
    shown on the page."""
    from eval.scoring.item_table import STATUSES

    sides = [str(v) if str(v) in STATUSES else "unknown" for v in (baseline, run)]
    if sides == ["ok", "ok"]:
        return "both judged"
    return f"baseline {sides[0].replace('_', ' ')}, run {sides[1].replace('_', ' ')}"
