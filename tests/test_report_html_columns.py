"""report.html's explorer data built column-wise (``eval.html_report.report_items``) equals the row-by-row build it
replaced, kept here verbatim as the reference, on items with every kind of value the page rounds and codes."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import judge
from eval.html_report import (DEFAULT_TEXT_ITEMS, SPLIT_TITLES, STATUS_LABELS, _no_text_note, _record_text, _round,
                              _round_column, _Strings, _verdict, item_status, report_items)

# ------------------------------------------------------------------ the row-by-row build (commit 762da46), verbatim


def _reference_text_order(diffs: Sequence[float | None], groups: Sequence[Any], cap: int) -> set[int]:
    """Row indices whose texts are embedded: the worst items of every group first, round by round.

    Within a group (a criterion of an evaluated model) items rank by difference, largest first, items without one
    last; the 1st of every group come before the 2nd of any, so a filtered view also opens to its own worst items.
    """
    n = len(diffs)
    if cap < 0 or cap >= n:
        return set(range(n))
    within = sorted(range(n), key=lambda i: (groups[i], diffs[i] is None, -(diffs[i] or 0.0), i))
    rank = [0] * n
    previous, r = object(), 0
    for i in within:
        r = r + 1 if groups[i] == previous else 0
        previous = groups[i]
        rank[i] = r
    order = sorted(range(n), key=lambda i: (rank[i], diffs[i] is None, -(diffs[i] or 0.0), i))
    return set(order[:cap])

def _reference_report_items(items: Mapping[str, list], records: Sequence | None, predictions: Iterable[Mapping[str, Any]] | None,
                 judge_name: str, target: str, text_items: int = DEFAULT_TEXT_ITEMS) -> dict[str, Any]:
    """The explorer's data for one scored run.

    Args:
        items: ``items.parquet`` as columns.
        records: the labelled records (for the texts), or None.
        predictions: the run's prediction rows (for the judge's feedback), or None.
        judge_name, target: labels.
        text_items: see ``DEFAULT_TEXT_ITEMS``.
    """
    ids = [str(v) for v in items["id"]]
    n = len(ids)
    by_id = {r.id: r for r in records} if records is not None else {}
    rows_by_id: dict[str, Mapping[str, Any]] = {}
    for row in predictions or ():
        rows_by_id.setdefault(str(row["id"]), row)
    in_scale, why_unscored = items.get("in_scale"), items.get("why_unscored")
    filters = [("split", "split"), ("model", "evaluated model"), ("task", "task type"), ("criterion", "criterion"),
               ("status", "status")]
    values: dict[str, dict[str, int]] = {key: {} for key, _ in filters}

    def code(key: str, label: str) -> int:
        table = values[key]
        if label not in table:
            table[label] = len(table)
        return table[label]

    judge_scores = [_round(v) for v in items["judge_score"]]
    references = [_round(v) for v in items.get("reference", [None] * n)]
    diffs = [abs(j - r) if j is not None and r is not None else None for j, r in zip(judge_scores, references)]
    groups = list(zip(items["criteria_name"], items["model_id"]))
    with_text = _reference_text_order(diffs, groups, text_items) if records is not None else set()
    strings, details, rows = _Strings(), [], []
    for i in range(n):
        experts = [_round(v) for v in (items["expert_scores"][i] or [])]
        status = item_status(str(items["status"][i]), references[i], bool(experts), in_scale[i] if in_scale else None,
                             why_unscored[i] if why_unscored else None)
        cats = [code("split", SPLIT_TITLES.get(str(items["split"][i]), str(items["split"][i]))),
                code("model", str(items["model_id"][i])), code("task", str(items["task_type"][i])),
                code("criterion", str(items["criteria_name"][i])), code("status", status)]
        detail = -1
        record = by_id.get(ids[i])
        if i in with_text and record is not None:
            detail = len(details)
            details.append({**_record_text(record, strings), "v": [_verdict(rows_by_id.get(ids[i]))]})
        rows.append([ids[i], cats, [judge_scores[i]], references[i], _round(diffs[i]), experts, detail])
    # Filter options in a readable order: labels sorted, row codes remapped to match.
    remap = {}
    for key, table in values.items():
        ordered = sorted(table) if key != "status" else [s for s in STATUS_LABELS if s in table]
        remap[key] = {table[label]: k for k, label in enumerate(ordered)}
        values[key] = {label: k for k, label in enumerate(ordered)}
    keys = [key for key, _ in filters]
    for row in rows:
        row[1] = [remap[key][c] for key, c in zip(keys, row[1])]
    return {
        "kind": "report", "judges": ["judge: " + (judge_name or "(unnamed)")], "strings": strings.values, "details": details,
        "rows": rows, "page_size": 50, "status_filter": 4, "list_columns": [3, 1, 0, 4],
        "filters": [{"key": key, "label": label, "values": list(values[key])} for key, label in filters],
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
    items = _read_items(out / "items.parquet")
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


# ----------------------------------------------------------------------------------------------------- the tests


def _random_items(n: int, seed: int) -> dict[str, list]:
    """items.parquet columns with whole and fractional numbers (ties at the 4th digit, huge, negative zero),
    missing and NaN values, empty and absent expert lists, every status and why_unscored."""
    rng = random.Random(seed)
    numbers = [0.0, 1.0, 2.0, -0.0, 3.0, 0.5, 1.00005, 2.00015, 0.12345, 1 / 3, 2.675, 1e20, -1.5, None, math.nan,
               math.inf, 4.0000000001]

    def number():
        return rng.choice(numbers) if rng.random() < 0.5 else float(rng.randint(0, 4))

    return {
        "id": [f"i{k}" for k in range(n)],
        "judge_score": [number() for _ in range(n)],
        "reference": [number() for _ in range(n)],
        "status": [rng.choice(["ok", "ok", "ok", "parse_failed", "request_failed", "missing"]) for _ in range(n)],
        "expert_scores": [rng.choice([None, [], [number() for _ in range(rng.randint(1, 5))]]) for _ in range(n)],
        "split": [rng.choice(["zero_shot", "standard", "unknown", "other"]) for _ in range(n)],
        "model_id": [rng.choice(["m-b", "m-a", "Я", "m-c"]) for _ in range(n)],
        "task_type": [rng.choice(["t1", "t2", "т3"]) for _ in range(n)],
        "criteria_name": [rng.choice(["c", "d", "е", "b"]) for _ in range(n)],
        "in_scale": [rng.choice([True, False, None, math.nan]) for _ in range(n)],
        "why_unscored": [rng.choice(["", "", "no_unique_mode", "parse_failed", "no_expert_scores", "odd"])
                         for _ in range(n)],
    }


@pytest.mark.parametrize("seed,n,cap,with_records", [(0, 300, 40, True), (1, 300, -1, True), (2, 300, 0, True),
                                                     (3, 300, 10_000, True), (4, 200, 5, False), (5, 1, 1, True),
                                                     (6, 0, 5, True)])
def test_column_wise_explorer_data_equals_the_row_by_row_build(seed, n, cap, with_records):
    """Same rows, codes, filters, texts and note, value for value and type for type (int vs float), as the old
    build."""
    items = _random_items(n, seed)
    records = [judge.JudgeRecord(id=f"i{k}", instruction=f"задание {k % 7}", answer=f"ответ {k}", criteria_name="c",
                                 rubrics="0: нет\n1: да", expert_scores=(0.0, 1.0)) for k in range(0, n, 2)]
    predictions = [{"id": f"i{k}", "feedback": f"f{k}", "raw_output": "r", "error": None, "confidence": 0.123456,
                    "score_source": "verdict"} for k in range(0, n, 3)]
    args = (records if with_records else None, predictions, "j", "mode", cap)
    new, old = report_items(items, *args), _reference_report_items(items, *args)
    assert _typed(new) == _typed(old)


def test_numeric_columns_may_come_as_numpy_arrays():
    """The page reads items.parquet's float columns as numpy arrays: the same data as from lists."""
    items = _random_items(200, 7)
    as_arrays = {**items, "judge_score": np.array(items["judge_score"], dtype=float),
                 "reference": np.array(items["reference"], dtype=float)}
    assert _typed(report_items(as_arrays, None, [], "j", "mode")) == _typed(report_items(items, None, [], "j", "mode"))


@pytest.mark.parametrize("values", [[0.0, -0.0, 2.0, 1e20, 2.0**60], [0.12345, 2.675, 1.00005, 1 / 3, -7.00004999],
                                    [None, math.nan, math.inf, -math.inf], [], [True, 3, 1.5]])
def test_round_column_is_round_value_by_value(values):
    """Column rounding gives ``_round``'s value and type for every value (Python's rounding, not numpy's)."""
    assert _typed(_round_column(values)) == _typed([_round(v) for v in values])


def _typed(value: Any) -> Any:
    """A value with each number tagged by its type (1 == 1.0 in Python; the page's JSON tells them apart)."""
    if isinstance(value, Mapping):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_typed(v) for v in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)
