"""The browsable pages: ``report.html`` (``judge-eval score``) and ``compare.html`` (``judge-eval compare``).

    judge-eval score --predictions runs/judge-a            # writes runs/judge-a/report.html beside report.md
    judge-eval compare runs/judge-a runs/judge-b --out runs/cmp   # writes runs/cmp/compare.html

Each page is ONE self-contained file that works when opened from disk: CSS and JavaScript are inlined from
``eval/html/``, plots are inline SVG or coloured HTML tables, and the item data is embedded as JSON in a
``<script type="application/json">`` element that the page parses once and renders 50 rows at a time (a
160,000-item run stays usable; ``bench/report_page.py`` measures it).

The tables are built generically from ``metrics.json``: every key a metric cell carries becomes a column
(``x_ci`` is shown as the interval of ``x``), so metrics added later appear without touching this module.
Per-item rows come from ``items.parquet`` (every column read, ``in_scale`` used when present) joined with the
records' texts and the predictions' feedback.

Full texts (instruction, answer, reference, rubric, comments, feedback) are embedded for at most
``text_items`` items: the largest |judge − experts| of every (criterion, evaluated model) first, round by round,
then the items without a difference (failures, no reference). They sit in a second JSON element that the page
parses only when an item is first opened. The POLLUX paper has no view of this kind;
the cap is our choice, so that a full-test page stays a few tens of MB instead of several hundred.
"""

from __future__ import annotations

import html
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from eval.report import SPLIT_TITLES, regression_note

__all__ = ["item_columns", "report_items", "write_report_page", "write_compare_page", "render_report_page", "render_compare_page",
           "DEFAULT_TEXT_ITEMS", "STATUS_LABELS", "item_status"]

#: Items whose full texts a page embeds (see the module docstring); 0 keeps none, a negative value keeps all.
#: Each costs ~3 KB (its instruction, answer and reference are rarely shared with another embedded item): 5,000 keep
#: a full-test page near 25 MB (bench/report_page.py).
DEFAULT_TEXT_ITEMS = 5_000
#: Explorer status of an item, as the filter shows it.
STATUS_LABELS = ("scored", "failed", "out-of-scale", "no unique mode", "unlabelled", "missing")
# items.parquet's ``why_unscored`` (when the scorer writes it) -> explorer status.
_WHY_UNSCORED = {"no_prediction": "missing", "request_failed": "failed", "parse_failed": "failed",
                 "all_experts_abstained": "unlabelled", "no_expert_scores": "unlabelled",
                 "no_unique_mode": "no unique mode"}
# Metric keys shown first, in this order; any other key follows in alphabetical order.
_KEY_ORDER = ("n", "n_failed", "n_no_unique_mode", "n_out_of_scale", "mae", "mae_in_scale", "spearman", "pearson",
              "kendall", "vc_judge", "vc_experts", "vc_experts_all", "n_scored", "n_vc", "failure_rate", "n_missing",
              "n_parse_failed", "n_request_failed")
# Column headings of the known keys (the raw key is the heading's tooltip); other keys are shown as they are.
_KEY_LABELS = {"n_failed": "failed", "n_no_unique_mode": "no unique mode", "n_out_of_scale": "out of scale",
               "mae": "MAE", "mae_in_scale": "MAE (in scale)", "spearman": "Spearman", "pearson": "Pearson",
               "kendall": "Kendall", "vc_judge": "VC judge", "vc_experts": "VC experts",
               "vc_experts_all": "VC experts (all items)", "n_scored": "scored", "n_vc": "n in VC",
               "failure_rate": "failure rate", "n_missing": "no prediction", "n_parse_failed": "parse failed",
               "n_request_failed": "request failed"}

_GROUP_TITLES = {"model": "evaluated model", "task_type": "task type", "criterion": "criterion"}


# ------------------------------------------------------------------------------------------------ pieces


def _asset(name: str) -> str:
    return resources.files("eval").joinpath("html", name).read_text(encoding="utf-8")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _num(value: Any, digits: int = 3) -> str:
    if not _finite(value):
        return "—"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def _page(title: str, subtitle: list[str], nav: list[tuple[str, str]], body: list[str], data: Any | None) -> str:
    """The whole HTML document; ``data`` (the explorer's) is embedded as JSON, ``</`` escaped for the parser."""
    parts = ["<!doctype html>", '<html lang="ru"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{_e(title)}</title>",
             f"<style>{_asset('page.css')}</style></head><body>", f"<header><h1>{_e(title)}</h1>"]
    parts += [f"<p>{line}</p>" for line in subtitle]
    parts += ["</header><nav>" + "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in nav) + "</nav><main>"]
    parts += body
    parts.append("</main>")
    if data is not None:
        # Two elements: the rows are parsed at load, the texts only when an item is first opened.
        rows = {k: v for k, v in data.items() if k not in ("details", "strings")}
        texts = {"details": data.get("details", []), "strings": data.get("strings", [])}
        for css_id, part in (("explorer-data", rows), ("explorer-texts", texts)):
            payload = _json(part).replace("</", "<\\/")
            parts.append(f'<script type="application/json" id="{css_id}">{payload}</script>')
    parts.append(f"<script>{_asset('page.js')}</script></body></html>")
    return "\n".join(parts)


def _json(data: Mapping[str, Any]) -> str:
    """``json.dumps`` of the explorer's data, compact, non-ASCII kept; its ``rows`` written by ``_ItemRows``."""
    rows = data.get("rows")
    if not isinstance(rows, _ItemRows):
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    mark = "\u0000rows\u0000"  # a string no JSON value of the data holds: its encoding is replaced by the rows
    text = json.dumps({**data, "rows": mark}, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace(json.dumps(mark), rows.json_text(), 1)


def _columns(cells: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every metric key the cells carry (``x_ci`` folded into ``x``), known keys first."""
    keys: set[str] = set()
    for c in cells:
        keys.update(k for k in c if not (k.endswith("_ci") and k[:-3] in c))
    return [k for k in _KEY_ORDER if k in keys] + sorted(keys - set(_KEY_ORDER))


def _cell_td(c: Mapping[str, Any] | None, key: str) -> str:
    if c is None or key not in c:
        return '<td data-v="">—</td>'
    value, ci = c.get(key), c.get(f"{key}_ci")
    if isinstance(value, (dict, list)):
        return f'<td class="json">{_e(json.dumps(value, ensure_ascii=False))}</td>'
    if isinstance(value, str) or isinstance(value, bool):
        return f"<td>{_e(value)}</td>"
    shown = _num(value)
    if isinstance(ci, list) and len(ci) == 2 and all(_finite(v) for v in ci):
        shown += f' <span class="ci">[{_num(ci[0])}, {_num(ci[1])}]</span>'
    return f'<td data-v="{value if _finite(value) else ""}">{shown}</td>'


def _metric_table(label: str, cells: Mapping[str, Mapping[str, Any]], overall: Mapping[str, Any] | None,
                  css_id: str = "") -> str:
    """A sortable table: one row per label, one column per metric key, the overall row pinned last."""
    columns = _columns(list(cells.values()) + ([overall] if overall else []))
    head = f"<th>{_e(label)}</th>" + "".join(f'<th title="{_e(k)}">{_e(_KEY_LABELS.get(k, k))}</th>' for k in columns)
    rows = [f"<tr><td>{_e(name)}</td>" + "".join(_cell_td(c, k) for k in columns) + "</tr>"
            for name, c in cells.items()]
    if overall:
        rows.append('<tr class="overall"><td>Overall</td>' + "".join(_cell_td(overall, k) for k in columns) + "</tr>")
    id_attr = f' id="{_e(css_id)}"' if css_id else ""
    return (f'<div class="scroll"><table class="grid sortable"{id_attr}><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _confusion_html(title: str, conf: Mapping[str, Any]) -> str:
    """A judge x expert-mode heat table (rows: judge, columns: experts), shaded by count."""
    levels, matrix = conf.get("levels") or [], conf.get("matrix") or []
    peak = max((v for row in matrix for v in row), default=0) or 1
    labels = [_num(v, 0) if float(v).is_integer() else _num(v, 1) for v in levels]
    out = [f'<div class="panel"><h4>{_e(title)}</h4><table class="confusion"><tr><th>judge \\ experts</th>']
    out += [f"<th>{_e(v)}</th>" for v in labels] + ["</tr>"]
    for label, row in zip(labels, matrix):
        out.append(f"<tr><th>{_e(label)}</th>")
        for v in row:
            share = v / peak
            colour = f"rgba(47,95,179,{0.08 + 0.85 * share:.2f})" if v else "#fff"
            text = "#fff" if share > 0.55 else "#1d2330"
            out.append(f'<td style="background:{colour};color:{text}">{int(v)}</td>')
        out.append("</tr>")
    out.append("</table></div>")
    return "".join(out)


def _mae_svg(cells: Mapping[str, Mapping[str, Any]], target: str) -> str:
    """MAE by criterion, worst on top, with its interval as a whisker; inline SVG."""
    rows = sorted(((k, c) for k, c in cells.items() if _finite(c.get("mae"))), key=lambda kc: -kc[1]["mae"])
    if not rows:
        return '<p class="note">No criterion has a defined MAE.</p>'
    top = max(max([c["mae"]] + [v for v in (c.get("mae_ci") or []) if _finite(v)]) for _, c in rows) or 1.0
    label_w, bar_w, row_h = 390, 420, 18
    height = 30 + row_h * len(rows)
    scale = bar_w / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 70}" height="{height}" '
           f'class="mae-plot" font-size="11" font-family="sans-serif">']
    for i, (name, c) in enumerate(rows):
        y = 8 + i * row_h
        short = name if len(name) <= 55 else name[:54] + "…"
        out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end"><title>{_e(name)}</title>{_e(short)}</text>')
        out.append(f'<rect x="{label_w}" y="{y + 2}" width="{c["mae"] * scale:.1f}" height="{row_h - 5}" fill="#4c72b0">'
                   f'<title>{_e(name)}: MAE {_num(c["mae"])} (n scored {c.get("n_scored", "?")})</title></rect>')
        ci = c.get("mae_ci") or []
        if len(ci) == 2 and all(_finite(v) for v in ci):
            x0, x1, ym = label_w + ci[0] * scale, label_w + ci[1] * scale, y + row_h / 2
            out.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{ym:.1f}" y2="{ym:.1f}" stroke="#222"/>')
        out.append(f'<text x="{label_w + c["mae"] * scale + 4:.1f}" y="{y + 12}" fill="#333">{_num(c["mae"], 2)}</text>')
    axis_y = height - 14
    out.append(f'<text x="{label_w}" y="{axis_y + 10}" fill="#555">MAE vs expert {_e(target)} '
               f"(bar) and its bootstrap interval (line); axis 0 to {_num(top, 2)}</text>")
    out.append("</svg>")
    return "".join(out)


def _other_keys(result: Mapping[str, Any], known: set[str]) -> list[str]:
    """Top-level keys of a result not rendered elsewhere: shown as JSON so that nothing written is hidden."""
    extra = {k: v for k, v in result.items() if k not in known}
    if not extra:
        return []
    return ['<h2 id="other">Other figures</h2>',
            f'<pre class="json">{_e(json.dumps(extra, ensure_ascii=False, indent=1))}</pre>']


# ----------------------------------------------------------------------------------------- item payloads


class _Strings:
    """Shared texts (instructions, answers, rubrics repeat across an answer's criteria) stored once."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int:
        text = text or ""
        if text not in self.index:
            self.index[text] = len(self.values)
            self.values.append(text)
        return self.index[text]


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
    out: list[Any] = [None] * len(x)
    finite = np.isfinite(x)
    whole = finite & (np.floor(x) == x) & (np.abs(x) < 2.0**53)  # exact as int64
    for i, v in zip(np.flatnonzero(whole).tolist(), x[whole].astype(np.int64).tolist()):
        out[i] = v
    for i in np.flatnonzero(finite & ~whole).tolist():
        out[i] = _round(x[i].item())
    return out


def item_status(status: str, reference: float | None, has_experts: bool, in_scale: Any = None,
                why_unscored: str | None = None) -> str:
    """The explorer's status of one item (one of ``STATUS_LABELS``); the first that applies of failed, missing,
    out-of-scale, no unique mode, unlabelled, scored.

    Args:
        status: the item table's status (``ok``, ``parse_failed``, ``request_failed``, ``missing``).
        reference: the item's reference score (None when undefined: no unique expert mode, no expert scores).
        has_experts: whether the item has expert scores at all.
        in_scale: ``items.parquet``'s ``in_scale`` value when the column exists (False: the judge's score is
            outside the criterion's scale).
        why_unscored: ``items.parquet``'s ``why_unscored`` when the column exists ("" for a scored item).
    """
    if status in ("parse_failed", "request_failed"):
        return "failed"
    if status == "missing":
        return "missing"
    if in_scale is not None and not (isinstance(in_scale, float) and math.isnan(in_scale)) and not bool(in_scale):
        return "out-of-scale"
    if why_unscored:
        return _WHY_UNSCORED.get(why_unscored, "no unique mode" if has_experts else "unlabelled")
    if reference is None:
        return "no unique mode" if has_experts else "unlabelled"
    return "scored"


def _verdict(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The judge's side of an item, compactly: feedback, raw output when it differs, error, confidence, probs."""
    if row is None:
        return None
    out: dict[str, Any] = {"f": row.get("feedback") or ""}
    raw = row.get("raw_output")
    if raw and raw != out["f"]:
        out["o"] = raw
    if row.get("error"):
        out["e"], out["w"] = row["error"], row.get("reason") or ""
    for key, short in (("confidence", "k"), ("expected_score", "x"), ("score_source", "src")):
        if row.get(key) is not None:
            out[short] = _round(row[key]) if short != "src" else row[key]
    probs = row.get("score_probs")
    if isinstance(probs, Mapping):
        out["p"] = {str(k): _round(v) for k, v in probs.items()}
    return out


class _Verdicts:
    """``_verdict`` of the first prediction row of an id, from rows (dicts) or a prediction table
    (``eval.predictions.read_prediction_table``): a table's rows are made into dicts only for the ids asked."""

    def __init__(self, predictions: Any) -> None:
        import pyarrow as pa

        self._table = predictions if isinstance(predictions, pa.Table) else None
        self._rows: dict[str, Any] = {}
        if self._table is not None:
            for position, rid in enumerate(self._table.column("id").to_pylist()):
                self._rows.setdefault(rid, position)
        else:
            for row in predictions or ():
                self._rows.setdefault(str(row["id"]), row)

    def of(self, item_ids: Sequence[str]) -> list[dict[str, Any] | None]:
        """``_verdict`` of each id's first row (None for an id without one)."""
        found = [self._rows.get(item_id) for item_id in item_ids]
        if self._table is not None:
            import pyarrow as pa

            from eval.predictions import prediction_rows

            positions = [p for p in found if p is not None]
            taken = iter(prediction_rows(self._table.take(pa.array(positions, type=pa.int64()))))
            found = [None if p is None else next(taken) for p in found]
        return [_verdict(row) for row in found]


def _record_text(record, strings: _Strings) -> dict[str, Any]:
    return {"i": strings(record.instruction), "a": strings(record.answer), "r": strings(record.reference_answer),
            "u": strings(f"{record.criteria_name}\n\n{record.rubrics}"), "c": list(record.expert_feedback or [])}


def _read_items(path: Path) -> dict[str, list]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pydict()


_ITEM_COLUMNS = ("id", "judge_score", "reference", "status", "expert_scores", "split", "model_id", "task_type",
                 "criteria_name", "in_scale", "why_unscored")


def _read_item_columns(path: Path) -> dict[str, Any]:
    """``item_columns`` of a written ``items.parquet``."""
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    return item_columns(pq.read_table(path, columns=[c for c in _ITEM_COLUMNS if c in names]))


def item_columns(items) -> dict[str, Any]:
    """The columns of an item table (``eval.item_table.arrow_table``, as ``items.parquet`` holds it) that
    ``report_items`` reads: the float columns as numpy arrays (null -> NaN, which rounds to None), the expert
    scores as their Arrow list column, the others as lists (``to_pydict`` of every column took ~1 s on 160k)."""
    import pyarrow as pa

    def values(column):
        if pa.types.is_floating(column.type):
            return column.to_numpy()
        return column if pa.types.is_list(column.type) else column.to_pylist()  # lists: read flat by report_items

    return {name: values(column) for name, column in zip(items.column_names, items.columns) if name in _ITEM_COLUMNS}


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
    return values, [0] + list(itertools.accumulate(int(k) for k in lengths))[:n]


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
            return ["null" if v is None else repr(v) for v in values]

        flat_text = numbers(flat)
        cats = [",".join(map(str, row)) for row in zip(*codes)] if codes else [""] * len(ids)
        experts = [",".join(flat_text[a:b]) for a, b in zip(starts, starts[1:])]
        return "[" + ",".join(
            f"[{encode_basestring(i)},[{c}],[{j}],{r},{d},[{e}],{t}]"
            for i, c, j, r, d, e, t in zip(ids, cats, numbers(judge), numbers(reference), numbers(diff), experts,
                                           detail)) + "]"


def _text_order(diffs: Sequence[float | None], groups: Sequence[Any], cap: int) -> set[int]:
    """Row indices whose texts are embedded: the worst items of every group first, round by round.

    Within a group (a criterion of an evaluated model) items rank by difference, largest first, items without one
    last; the 1st of every group come before the 2nd of any, so a filtered view also opens to its own worst items.
    Sorted with ``numpy.lexsort`` on the same keys (group, no difference, −difference, index): the 160k-item sort
    by Python tuples took a second.
    """
    import numpy as np

    n = len(diffs)
    if cap < 0 or cap >= n:
        return set(range(n))
    group_code = {g: k for k, g in enumerate(sorted(set(groups)))}
    group = np.fromiter((group_code[g] for g in groups), dtype=np.int64, count=n)
    missing = np.fromiter((d is None for d in diffs), dtype=bool, count=n)
    minus = np.fromiter((-(d or 0.0) for d in diffs), dtype=float, count=n)
    index = np.arange(n)
    within = np.lexsort((index, minus, missing, group))  # the last key sorts first
    rank = np.empty(n, dtype=np.int64)
    sorted_group = group[within]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])  # each group's first position
    position = np.arange(n)
    rank[within] = position - np.repeat(starts, np.diff(np.r_[starts, n]))
    order = np.lexsort((index, minus, missing, rank))
    return set(order[:cap].tolist())


def _no_text_note(n_text: int, n: int) -> str:
    return (f"Texts are embedded for {n_text} of {n} items (the largest differences of each criterion and evaluated "
            "model first); this one has only its numbers here. Score again with a larger --html-text-items to embed "
            "more.")


def report_items(items: Mapping[str, Sequence], records: Sequence | None,
                 predictions: Iterable[Mapping[str, Any]] | None, judge_name: str, target: str,
                 text_items: int = DEFAULT_TEXT_ITEMS) -> dict[str, Any]:
    """The explorer's data for one scored run.

    Column-wise: numbers are rounded a column at a time (``_round_column``) and filter codes are built per column;
    row by row this took ~5 s for the full test's 160,000 items.

    Args:
        items: ``items.parquet`` as columns (lists, or numpy arrays for the numeric ones).
        records: the labelled records (for the texts), or None.
        predictions: the run's predictions (for the judge's feedback): a prediction table or rows, or None.
        judge_name, target: labels.
        text_items: see ``DEFAULT_TEXT_ITEMS``.
    """
    ids = [str(v) for v in items["id"]]
    n = len(ids)
    by_id = {r.id: r for r in records} if records is not None else {}
    verdicts = _Verdicts(predictions)
    in_scale, why_unscored = items.get("in_scale"), items.get("why_unscored")
    filters = [("split", "split"), ("model", "evaluated model"), ("task", "task type"), ("criterion", "criterion"),
               ("status", "status")]

    judge_scores = _round_column(items["judge_score"])
    references = _round_column(items["reference"]) if "reference" in items else [None] * n
    diffs = [abs(j - r) if j is not None and r is not None else None for j, r in zip(judge_scores, references)]
    shown_diffs = _round_column(diffs)
    flat_scores, starts = _flat_lists(items["expert_scores"], n)
    flat = _round_column(flat_scores)

    # The status of an item depends on these five values only: computed once per distinct combination.
    known: dict[tuple, str] = {}
    statuses = []
    for i in range(n):
        key = (str(items["status"][i]), references[i] is None, starts[i + 1] > starts[i],
               in_scale[i] if in_scale is not None else None, why_unscored[i] if why_unscored is not None else None)
        status = known.get(key)
        if status is None:
            status = item_status(key[0], references[i], key[2], key[3], key[4])
            if not (isinstance(key[3], float) and math.isnan(key[3])):  # NaN is not found again as a key
                known[key] = status
        statuses.append(status)
    labels = {"split": [SPLIT_TITLES.get(str(v), str(v)) for v in items["split"]],
              "model": [str(v) for v in items["model_id"]], "task": [str(v) for v in items["task_type"]],
              "criterion": [str(v) for v in items["criteria_name"]], "status": statuses}
    # Filter options in a readable order (labels sorted, statuses in STATUS_LABELS order), rows coded by position.
    values: dict[str, list[str]] = {}
    codes = []
    for key, _ in filters:
        present = set(labels[key])
        values[key] = sorted(present) if key != "status" else [s for s in STATUS_LABELS if s in present]
        position = {label: k for k, label in enumerate(values[key])}
        codes.append([position[label] for label in labels[key]])

    groups = list(zip(items["criteria_name"], items["model_id"]))
    with_text = _text_order(diffs, groups, text_items) if records is not None else set()
    strings, details = _Strings(), []
    detail = [-1] * n
    chosen = [i for i in sorted(with_text) if ids[i] in by_id]
    for i, verdict in zip(chosen, verdicts.of([ids[i] for i in chosen])):
        detail[i] = len(details)
        details.append({**_record_text(by_id[ids[i]], strings), "v": [verdict]})
    rows = _ItemRows(ids, codes, judge_scores, references, shown_diffs, flat, starts, detail)
    return {
        "kind": "report", "judges": ["judge: " + (judge_name or "(unnamed)")], "strings": strings.values, "details": details,
        "rows": rows, "page_size": 50, "status_filter": 4, "list_columns": [3, 1, 0, 4],
        "filters": [{"key": key, "label": label, "values": values[key]} for key, label in filters],
        "diff_label": "|judge − experts|", "reference_label": f"experts' {target}",
        "no_text_note": _no_text_note(len(details), n),
    }


# ----------------------------------------------------------------------------------------------- report


def render_report_page(result: Mapping[str, Any], explorer: Mapping[str, Any] | None) -> str:
    """``report.html`` for one scored run.

    Args:
        result: ``metrics.json``.
        explorer: ``report_items``'s output, or None for a page without the explorer.
    """
    judge_name = result.get("judge") or "(unnamed judge)"
    s = result.get("settings") or {}
    run = result.get("run") or {}
    subtitle = [f"Target: expert <b>{_e(result.get('target'))}</b> · bootstrap {_e(s.get('n_boot'))} resamples, "
                f"{_e(int(100 * (s.get('ci_level') or 0.95)))} % percentile intervals · VC draws {_e(s.get('vc_repeats'))}, "
                f"seed {_e(s.get('seed'))}",
                f"Data: <code>{_e(result.get('data', ''))}</code> · predictions: <code>{_e(result.get('predictions', ''))}</code>"]
    if run:
        subtitle.append(" · ".join(f"{_e(k)}: <code>{_e(v)}</code>" for k, v in run.items() if v))
    if regression_note(dict(result)):
        subtitle.append(_e(regression_note(dict(result))).replace("`", ""))
    body = ['<h2 id="summary">Summary</h2>',
            '<p class="note">A verdict that failed to parse counts in <code>n_failed</code> and is never scored. '
            "Click a column header to sort. Intervals in grey.</p>"]
    splits = result.get("splits") or {}
    overall = {SPLIT_TITLES.get(k, k): b["overall"] for k, b in splits.items() if "overall" in b}
    body.append(_metric_table("Test", overall, None, "summary-table"))
    if result.get("why_empty"):
        body.append(f'<p class="note">Why some figures are empty: {_e(json.dumps(result["why_empty"], ensure_ascii=False))}</p>')
    for split, block in splits.items():
        title = SPLIT_TITLES.get(split, split)
        body.append(f'<h2 id="tables-{_e(split)}">{_e(title)}</h2>')
        if block.get("failures"):
            body.append('<p class="note">Failures by reason: ' + ", ".join(
                f"<code>{_e(k)}</code> {_e(v)}" for k, v in block["failures"].items()) + "</p>")
        for name, group_title in _GROUP_TITLES.items():
            cells = block.get(f"by_{name}") or {}
            if cells:
                body.append(f"<h3>{_e(title)}: by {_e(group_title)}</h3>")
                body.append(_metric_table(group_title.capitalize(), cells, block.get("overall"), f"table-{split}-{name}"))
        other = {k: v for k, v in block.items()
                 if k not in {"overall", "failures", "confusion"} and not (k.startswith("by_") and k[3:] in _GROUP_TITLES)}
        if other:
            body.append(f'<details class="block"><summary>Other figures of this split</summary><pre class="json">'
                        f'{_e(json.dumps(other, ensure_ascii=False, indent=1))}</pre></details>')
    body.append('<h2 id="plots">Plots</h2>')
    for split, block in splits.items():
        title = SPLIT_TITLES.get(split, split)
        conf = block.get("confusion") or {}
        if conf:
            body.append(f"<h3>{_e(title)}: judge × expert mode</h3><div class=\"panels\">")
            body.append(_confusion_html("all task groups", conf.get("all") or {}))
            body += [_confusion_html(k, v) for k, v in (conf.get("by_task_group") or {}).items()]
            body.append("</div>")
        body.append(f"<h3>{_e(title)}: MAE by criterion</h3>")
        body.append(_mae_svg(block.get("by_criterion") or {}, str(result.get("target"))))
    known = {"judge", "target", "settings", "levels", "splits", "data", "predictions", "notes", "run", "why_empty"}
    body += _other_keys(result, known)
    nav = [("summary", "Summary")] + [(f"tables-{k}", SPLIT_TITLES.get(k, k)) for k in splits] + [("plots", "Plots")]
    data = None
    if explorer is not None:
        nav.append(("explorer", "Items"))
        body += ['<h2 id="explorer-title">Items: where the judge and the experts disagree</h2>',
                 '<p class="note">Sorted by |judge − experts|; filter by split, evaluated model, task type, criterion '
                 "and status. Click an item to open it.</p>", '<div id="explorer"></div>']
        data = explorer
    nav = [(a if a != "explorer" else "explorer-title", t) for a, t in nav]
    return _page(f"Judge report: {judge_name}", subtitle, nav, body, data)


def write_report_page(out: str | Path, records: Sequence | None = None,
                      predictions: Iterable[Mapping[str, Any]] | None = None,
                      text_items: int = DEFAULT_TEXT_ITEMS) -> Path:
    """Write ``report.html`` into a scored run folder (``metrics.json`` and ``items.parquet`` must exist).

    Args:
        out: the folder ``judge-eval score`` wrote.
        records: the labelled records; default: loaded from the data ``metrics.json`` names (skipped, with a note
            on the page, when that file is gone).
        predictions: the run's rows; default: read from the predictions ``metrics.json`` names.
        text_items: see ``DEFAULT_TEXT_ITEMS``.

    Returns:
        The page's path.
    """
    out = Path(out)
    result = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    if records is None:
        records = _load_records(result.get("data"))
    if predictions is None:
        predictions = _load_predictions(result.get("predictions"))
    items = _read_item_columns(out / "items.parquet")
    explorer = report_items(items, records, predictions, result.get("judge") or "", str(result.get("target")),
                            text_items)
    path = out / "report.html"
    path.write_text(render_report_page(result, explorer), encoding="utf-8")
    return path


def _load_records(data: str | None):
    import judge

    if not data or not Path(data).exists():
        return None
    return judge.load_records(data)


def _load_predictions(path: str | None):
    if not path or not Path(path).exists():
        return None
    from eval.predictions import read_predictions

    return read_predictions(path)


# ---------------------------------------------------------------------------------------------- compare


def _delta_td(p: Mapping[str, Any]) -> str:
    verdict = p.get("verdict") or "—"
    css = verdict if verdict in ("better", "worse") else ""
    ci = p.get("ci") or [None, None]
    return (f'<td data-v="{p["delta"] if _finite(p.get("delta")) else ""}">{_num(p.get("delta"))} '
            f'<span class="ci">[{_num(ci[0])}, {_num(ci[1])}] p={_num(p.get("p_value"))}</span> '
            f'<span class="{css}">{_e(verdict)}</span></td>')


def _paired_table(label: str, cells: Mapping[str, Mapping[str, Mapping[str, Any]]], metrics_shown: Sequence[str],
                  css_id: str) -> str:
    head = [label, "n"]
    for m in metrics_shown:
        head += [f"{m} baseline", f"{m} run", f"{m} delta [CI] p call"]
    rows = []
    for name, by_metric in cells.items():
        first = next(iter(by_metric.values()))
        tds = [f"<td>{_e(name)}</td>", f'<td data-v="{first.get("n", "")}">{_e(first.get("n", "—"))}</td>']
        for m in metrics_shown:
            p = by_metric.get(m)
            if p is None:
                tds += ['<td data-v="">—</td>'] * 3
                continue
            tds += [f'<td data-v="{p["a"] if _finite(p.get("a")) else ""}">{_num(p.get("a"))}</td>',
                    f'<td data-v="{p["b"] if _finite(p.get("b")) else ""}">{_num(p.get("b"))}</td>', _delta_td(p)]
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table class="grid sortable" id="{_e(css_id)}"><thead><tr>'
            + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def compare_items(result: Mapping[str, Any], top: int = 1000) -> dict[str, Any]:
    """The explorer's data for a comparison: per compared run, the ``top`` items where its judge and the
    baseline's differ most (then the items only one of them scored), each with both judges' feedback."""
    folders = [Path(f) for f in result["folders"]]
    names = list(result["runs"])
    tables = [_read_items(f / "items.parquet") for f in folders]
    metrics_list = result.get("metrics") or [{} for _ in folders]
    records = None
    for m in metrics_list:
        records = _load_records(m.get("data"))
        if records is not None:
            break
    by_id = {r.id: r for r in records} if records is not None else {}
    preds = []
    for folder, m in zip(folders, metrics_list):
        rows = _load_predictions(m.get("predictions") or str(folder / "predictions.jsonl")) or []
        index: dict[str, Mapping[str, Any]] = {}
        for row in rows:
            index.setdefault(str(row["id"]), row)
        preds.append(index)
    base = tables[0]
    base_pos = {str(i): k for k, i in enumerate(base["id"])}
    filters = [("pair", "comparison"), ("split", "split"), ("model", "evaluated model"), ("task", "task type"),
               ("criterion", "criterion"), ("status", "status")]
    values: dict[str, list[str]] = {key: [] for key, _ in filters}

    def code(key: str, label: str) -> int:
        if label not in values[key]:
            values[key].append(label)
        return values[key].index(label)

    strings, details, out_rows = _Strings(), [], []
    for other_k in range(1, len(tables)):
        other = tables[other_k]
        pair = code("pair", f"{names[other_k]} vs {names[0]}")
        candidates = []
        for j, item_id in enumerate(other["id"]):
            i = base_pos.get(str(item_id))
            if i is None:
                continue
            a, b = _round(base["judge_score"][i]), _round(other["judge_score"][j])
            diff = abs(a - b) if a is not None and b is not None else None
            candidates.append((diff is None, -(diff or 0.0), str(item_id), i, j, a, b, diff))
        candidates.sort()
        for _, _, item_id, i, j, a, b, diff in candidates[:top]:
            sa, sb = str(base["status"][i]), str(other["status"][j])
            status = ("both scored" if sa == sb == "ok" else f"baseline {sa.replace('_', ' ')}, run "
                      f"{sb.replace('_', ' ')}")
            cats = [pair, code("split", SPLIT_TITLES.get(str(base["split"][i]), str(base["split"][i]))),
                    code("model", str(base["model_id"][i])), code("task", str(base["task_type"][i])),
                    code("criterion", str(base["criteria_name"][i])), code("status", status)]
            record = by_id.get(item_id)
            text = _record_text(record, strings) if record is not None else {"i": strings(""), "a": strings(""),
                                                                            "r": strings(""), "u": strings(""), "c": []}
            text["v"] = [_verdict(preds[0].get(item_id)), _verdict(preds[other_k].get(item_id))]
            details.append(text)
            reference = _round((base.get("reference") or [None] * (i + 1))[i])
            experts = [_round(v) for v in (base["expert_scores"][i] or [])]
            out_rows.append([item_id, cats, [a, b], reference, _round(diff), experts,
                             len(details) - 1])
    return {
        "kind": "compare",
        "judges": ["baseline: " + names[0], "run: " + names[1] if len(names) == 2 else "run"], "strings": strings.values,
        "details": details, "rows": out_rows, "page_size": 50, "status_filter": 5, "list_columns": [0, 4, 2, 5],
        "filters": [{"key": key, "label": label, "values": values[key]} for key, label in filters],
        "diff_label": "|run − baseline|", "reference_label": "experts' reference",
        "no_text_note": "This item's texts are not in the page.",
    }


def render_compare_page(result: Mapping[str, Any], explorer: Mapping[str, Any] | None) -> str:
    """``compare.html``: each run's own numbers side by side, then each run against the baseline."""
    runs = list(result["runs"])
    subtitle = [f"Baseline: <b>{_e(result['baseline'])}</b> · runs: " + ", ".join(f"<b>{_e(r)}</b>" for r in runs),
                f"Paired: delta = run − baseline on the items both scored; {_e(result.get('n_boot'))} paired bootstrap "
                f"resamples; better/worse at p &lt; {_e(result.get('alpha'))} (MAE: lower is better; Spearman and VC: "
                "higher)."]
    body = ['<h2 id="side">Each run on its own items</h2>']
    metrics_list = result.get("metrics") or []
    for split, title in SPLIT_TITLES.items():
        cells = {name: (m.get("splits") or {}).get(split, {}).get("overall") for name, m in zip(runs, metrics_list)}
        cells = {k: v for k, v in cells.items() if v}
        if cells:
            body.append(f"<h3>{_e(title)}</h3>")
            body.append(_metric_table("Judge", cells, None, f"side-{split}"))
    for k, comp in enumerate(result.get("comparisons") or []):
        body.append(f'<h2 id="cmp-{k}">{_e(comp["run"])} vs {_e(result["baseline"])}</h2>')
        body.append(f'<p class="note">{_e(comp.get("n_common"))} items in both runs.</p>')
        for split, block in (comp.get("splits") or {}).items():
            title = SPLIT_TITLES.get(split, split)
            body.append(f"<h3>{_e(title)}</h3>")
            body.append(_paired_table("Overall", {"all items": block["overall"]}, list(block["overall"]),
                                      f"paired-{k}-{split}-overall"))
            for name, group_title in _GROUP_TITLES.items():
                cells = block.get(f"by_{name}") or {}
                if cells:
                    shown = [m for m in ("mae", "spearman", "vc_judge") if any(m in c for c in cells.values())]
                    body.append(f'<details class="block"><summary>By {_e(group_title)} ({len(cells)})</summary>'
                                + _paired_table(group_title.capitalize(), cells, shown, f"paired-{k}-{split}-{name}")
                                + "</details>")
    nav = [("side", "Side by side")] + [(f"cmp-{k}", c["run"]) for k, c in enumerate(result.get("comparisons") or [])]
    data = None
    if explorer is not None:
        nav.append(("explorer-title", "Items"))
        body += ['<h2 id="explorer-title">Items where the judges disagree most</h2>',
                 '<p class="note">Per comparison, the items with the largest |run − baseline| (then items only one '
                 "judge scored). Click an item to see both judges' feedback.</p>", '<div id="explorer"></div>']
        data = explorer
    return _page(f"Judge comparison (baseline: {result['baseline']})", subtitle, nav, body, data)


def write_compare_page(result: Mapping[str, Any], out: str | Path, top: int = 1000) -> Path:
    """Write ``compare.html`` into ``out`` for ``eval.compare.compare``'s result (its run folders must exist)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "compare.html"
    path.write_text(render_compare_page(result, compare_items(result, top)), encoding="utf-8")
    return path
