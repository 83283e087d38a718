"""report.html's tables of the paper's Table 10 (``model_means``) and of POLLUX's own evaluator (``pollux_official``):
the same columns and rounding as report.md's, from the same cells, where the page once showed them as raw JSON. On a
run of the bundled sample scored by ``judge-eval score``."""

from __future__ import annotations

import hashlib
import html
import json
import re
from html.parser import HTMLParser

import pytest

import judge
from judge.splits import SPLIT_TITLES
from tests.unit.test_validity_report import _run


class _Tables(HTMLParser):
    """Every ``<table id=...>`` of a page: its id -> rows of cell texts (header row first), entities resolved."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id"):
            self._rows = self.tables.setdefault(dict(attrs)["id"], [])
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._rows = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(page: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def markdown_table_after(text: str, heading: str) -> list[list[str]]:
    """The first Markdown table after the line ``heading``: header row then body rows, the separator left out, each
    cell as a reader sees it (an escaped pipe as a pipe, entities resolved)."""
    lines = text.splitlines()
    at = lines.index(heading)
    start = next(k for k in range(at + 1, len(lines)) if lines[k].startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [html.unescape(c.strip().replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if not all(set(c) <= {"-"} for c in cells):
            rows.append(cells)
    return rows


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper-tables")
    metrics = _run(root, "run", judge.load_records(judge.sample_data_path()), 1, judge.sample_data_path())
    run = root / "run"
    return {"metrics": metrics, "markdown": (run / "report.md").read_text(encoding="utf-8"),
            "page": (run / "report.html").read_text(encoding="utf-8")}


def _three(value) -> str:
    return f"{value:.3f}"


def test_table_10_is_a_table_with_report_mds_columns_and_rounding(sample_run):
    """Per split, the HTML table holds report.md's rows cell for cell (the pooled row unbolded), and each figure is
    metrics.json's at report.md's three decimals, not its unrounded value."""
    tables = html_tables(sample_run["page"])
    splits = sample_run["metrics"]["splits"]
    assert all(block["model_means"]["by_model"] for block in splits.values())  # the sample's models, every split
    for split, block in splits.items():
        means = block["model_means"]
        title = SPLIT_TITLES[split]
        shown = tables[f"model-means-{split}"]
        markdown = markdown_table_after(sample_run["markdown"],
                                        f"### {title}: mean score per evaluated model (the paper's Table 10)")
        markdown[-1][0] = markdown[-1][0].replace("**", "")
        assert shown == markdown
        expected = [[name, str(m["n_items"]), _three(m["experts_mean"]), str(m["n_judged"]),
                     f"{_three(m['judge_mean'])} ({_three(m['mae'])})", str(m["n_scored"]),
                     _three(m["experts_mean_on_judged"]), str(m["n_out_of_scale"])]
                    for name, m in [*means["by_model"].items(), ("Avg. (items pooled)", means["all"])]]
        assert shown[1:] == expected
        # the figures are not repeated unrounded in the split's raw JSON
        other = re.search(rf'<h2 id="tables-{split}">.*?(?=<h2 )', sample_run["page"], re.S).group(0)
        assert "model_means" not in other


def test_pollux_official_is_a_table_and_keeps_what_it_does_not_show(sample_run):
    """POLLUX's evaluator: report.md's table, cell for cell, its figures at three decimals; the fields the table
    does not show (the regression counts, 0 where the section exists, and the notes) stay on the page, and the raw
    block of other figures does not repeat the table unrounded."""
    official = sample_run["metrics"]["pollux_official"]
    page = sample_run["page"]
    shown = html_tables(page)["pollux-official"]
    assert shown == markdown_table_after(sample_run["markdown"], f"## {official['title']}")
    assert shown[1:] == [[SPLIT_TITLES[split], str(b["n"]), str(b["n_parsed"]), _three(b["format_acc"]),
                          _three(b["score_acc"]), _three(b["mse"]), str(b["n_no_prediction"]),
                          str(b["n_request_failed"]), str(b["n_no_reference"])]
                         for split, b in official["splits"].items()]
    rest = re.search(r"Other figures of POLLUX's evaluator</summary><pre class=\"json\">(.*?)</pre>", page, re.S)
    kept = json.loads(html.unescape(rest.group(1)))
    for split, b in official["splits"].items():
        assert kept[split]["score_format_acc"] == b["score_format_acc"]
        assert kept[split]["n_regression"] == b["n_regression"] and kept[split]["note"] == b["note"]
        assert "format_acc" not in kept[split]
    assert '<h2 id="other">' not in page or "pollux_official" not in page.split('<h2 id="other">')[1]


def test_table_10_cuts_names_before_the_judges_column_adds_mae(sample_run):
    """A long judge name is cut before " (MAE)" is added to its column's header (cutting the finished header lost
    it, and with it what the brackets hold); two model names that read alike once cut stay two rows' names."""
    from eval.reports.html_report import render_report_page
    from judge.metrics_json.metrics import Metrics

    metrics = json.loads(json.dumps(sample_run["metrics"]))
    metrics["judge"] = "J" * 400
    block = metrics["splits"]["zero_shot"]["model_means"]
    first, second, *rest = block["by_model"].items()
    one, two = "m" * 250 + "1" + "m" * 250, "m" * 250 + "2" + "m" * 250
    block["by_model"] = {one: first[1], two: second[1], **dict(rest)}
    table = html_tables(render_report_page(Metrics.from_json(metrics), None))["model-means-zero_shot"]
    assert table[0][4] == "J" * 200 + "…" + "J" * 99 + " (MAE)"
    same = "m" * 200 + "…" + "m" * 99
    assert [row[0] for row in table[1:3]] == [f"{same} (#{hashlib.sha256(name.encode()).hexdigest()[:8]})"
                                              for name in (one, two)]
    assert [row[0] for row in table[3:-1]] == [name for name, _ in rest]
