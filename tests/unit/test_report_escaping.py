"""report.html and compare.html keep a data set's and a judge's text as text: runs scored on records and predictions
whose every text (instruction, answer, experts' comments, criterion, evaluated model, the judge's name, feedback,
raw output and error) holds markup, a script's end tag, a comment's start and U+2028 / U+2029, from folders whose
names hold markup too. Parsed as a browser's HTML parser reads it, each page has its three scripts only and no
element or attribute from the data, and its JSON elements give the texts back as they were.

The pages driven in a real headless chromium are tested in tests/integration/browser/test_report_html.py.
"""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser

import pytest

import judge
from eval.cli import main
from eval.reports.names import one_line

# Ends a script element, opens one, opens a comment (which, before "<script", keeps a later "</script>" from ending
# the element), adds an element with a handler, closes an attribute either way, and holds the two characters a
# JavaScript string literal could not hold before ES2019.
HOSTILE = ("</script><script>alert(1)</script> <!-- <script> \u2028line\u2029paragraph "
           "<img src=x onerror=alert(2)> \"quoted' &amp;")
# A folder name (no "/"): the data path in report.html's subtitle, the run names of compare.html.
FOLDER = "<img src=x onerror=alert(3)>"


class _Elements(HTMLParser):
    """The elements, attributes, comments and script texts of a page as an HTML parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.comments: list[str] = []
        self._script: list | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        if tag == "script":
            self._script = [dict(attrs), ""]

    def handle_data(self, data):
        if self._script is not None:
            self._script[1] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script[0], self._script[1]))
            self._script = None

    def handle_comment(self, data):
        self.comments.append(data)


def _parsed(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict:
    """Two runs on 8 sample records, every text of records and predictions hostile, scored and compared."""
    root = tmp_path_factory.mktemp("hostile")
    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:8]
    records = [dataclasses.replace(r, instruction=HOSTILE + r.instruction, answer=HOSTILE,
                                   reference_answer=HOSTILE, criteria_name=HOSTILE + r.criteria_name,
                                   rubrics=HOSTILE + r.rubrics, model_id=HOSTILE + r.model_id,
                                   expert_feedback=[HOSTILE] * len(r.expert_scores), annotations=())
               for r in records]
    (root / FOLDER).mkdir()
    data = root / FOLDER / "data.jsonl"
    judge.write_jsonl(records, data)
    runs = []
    for name, offset in (("a", 0), ("b", 1)):
        run = root / (FOLDER + name)
        run.mkdir()
        lines = []
        for k, r in enumerate(records):
            row = {"id": r.id, "judge": HOSTILE + name, "raw_output": HOSTILE, "feedback": HOSTILE,
                   "score": max(r.expert_scores) - (offset if k % 2 else 0), "parse_ok": True, "error": None,
                   "reason": "", "score_source": "verdict", "latency_s": 0.1, "confidence": 0.5,
                   "score_probs": {HOSTILE: 0.5, "1": 0.5}}
            if k == 3:  # a failed verdict: its raw output, error and reason are embedded too
                row.update(score=None, parse_ok=False, feedback="", error=HOSTILE, reason=HOSTILE)
            lines.append(json.dumps(row, ensure_ascii=False))
        (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "50", "--no-plots"]) == 0
        runs.append(run)
    assert main(["compare", *map(str, runs), "--out", str(root / "cmp"), "--n-boot", "50"]) == 0
    return {"report": (runs[1] / "report.html").read_text(encoding="utf-8"),
            "compare": (root / "cmp" / "compare.html").read_text(encoding="utf-8")}


@pytest.mark.parametrize("kind", ["report", "compare"])
def test_hostile_texts_add_no_element_attribute_or_script(pages, kind):
    """The page parses to its two JSON elements and page.js, with no comment, no ``img`` and no event handler: no
    text of the data became markup, and none ended a script element early."""
    page = pages[kind]
    parsed = _parsed(page)
    assert [attrs.get("id") for attrs, _ in parsed.scripts] == ["explorer-data", "explorer-texts", None]
    assert [attrs.get("type") for attrs, _ in parsed.scripts][:2] == ["application/json"] * 2
    assert "use strict" in parsed.scripts[2][1]  # page.js, whole
    assert not parsed.comments
    assert not [tag for tag, _ in parsed.tags if tag in ("img", "iframe", "object", "embed", "link", "base")]
    assert not [(tag, name) for tag, attrs in parsed.tags for name, _ in attrs if name.lower().startswith("on")]
    for raw in ("<script>alert", "<!--", "<img"):
        assert raw not in page
    # the names written into the page's HTML (a heading, a table's row; report.html's subtitle, the data's path)
    # are there, escaped
    assert kind == "compare" or "&lt;img src=x onerror=alert(3)&gt;/data.jsonl</code>" in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("kind", ["report", "compare"])
def test_embedded_json_gives_the_hostile_texts_back(pages, kind):
    """The JSON elements hold no "<" (each is written \\u003c) and parse, U+2028 and U+2029 included, to the texts
    exactly as the data and the predictions hold them: instruction, answer, rubric, experts' comments, feedback,
    raw output, error, the probabilities' keys, report.html's judge; the names in the filters and compare.html's runs
    are labels, on one line as the pages' tables show names (``eval.reports.names.one_line``: U+2028 and U+2029 made
    spaces), escaped alike."""
    scripts = _parsed(pages[kind]).scripts
    bodies = {attrs["id"]: text for attrs, text in scripts[:2]}
    assert not any("<" in body for body in bodies.values())
    rows, texts = (json.loads(bodies[key]) for key in ("explorer-data", "explorer-texts"))
    strings = texts["strings"]
    assert HOSTILE in strings and any(s.startswith(HOSTILE) and s != HOSTILE for s in strings)  # instruction
    verdicts = [v for detail in texts["details"] for v in detail["v"] if v]
    assert verdicts and all(v["f"] == HOSTILE for v in verdicts if "e" not in v)
    failed = [v for v in verdicts if "e" in v]
    assert failed and all(v["e"] == HOSTILE and v["w"] == HOSTILE and v["o"] == HOSTILE for v in failed)
    assert all(set(v["p"]) == {HOSTILE, "1"} for v in verdicts if "p" in v)
    comments = [c for detail in texts["details"] for c in detail["c"]]
    assert comments and set(comments) == {HOSTILE}
    values = {f["key"]: f["values"] for f in rows["filters"]}
    label = one_line(HOSTILE)
    assert label != HOSTILE and "\u2028" not in label
    assert values["model"] and all(v.startswith(label) for v in values["model"])
    assert values["criterion"] and all(v.startswith(label) for v in values["criterion"])
    # report.html's judge comes back whole; compare.html's runs are labels, told apart as its tables tell them
    assert all((HOSTILE if kind == "report" else label) in judge_label for judge_label in rows["judges"])
