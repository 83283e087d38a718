"""report.html and compare.html: generic tables from metrics.json, item statuses and the embedded item data, from
runs scored on hand-written predictions.

The pages driven in a real headless chromium (filter, open an item, screenshot) are tested in
tests/integration/browser/test_report_html.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import judge
from eval.reports.html_explorer import item_status, report_items
from eval.reports.html_report import render_report_page, write_report_page
from judge.metrics_json.metrics import Metrics
from tests.support.report_html import TRICKY_FEEDBACK


def _embedded(page: str) -> dict:
    """The explorer's rows and texts, from their two JSON elements."""
    data = {}
    for css_id in ("explorer-data", "explorer-texts"):
        match = re.search(rf'<script type="application/json" id="{css_id}">(.*?)</script>', page, re.S)
        assert match, f"no {css_id} in the page"
        data.update(json.loads(match.group(1)))
    return data


# ------------------------------------------------------------------------------------------- pure pieces


@pytest.mark.parametrize("status, reference, has_experts, expected", [
    ("ok", 1.0, True, "scored"),
    ("ok", None, True, "experts tie"),
    ("parse_failed", None, True, "failed"),
    ("request_failed", 1.0, True, "failed"),
    ("missing", 1.0, True, "missing"),
    ("ok", None, False, "unlabelled"),  # no expert scores: no reference, but not a mode tie either
])
def test_item_status(status, reference, has_experts, expected):
    """Each item gets one explorer status; failures win over everything."""
    assert item_status(status, reference, has_experts) == expected


@pytest.mark.parametrize("why, has_experts, expected", [
    ("", True, "scored"), ("no_unique_mode", True, "experts tie"), ("all_experts_abstained", False, "unlabelled"),
    ("no_expert_scores", False, "unlabelled"), ("a_reason_added_later", True, "experts tie"),
])
def test_item_status_from_why_unscored(why, has_experts, expected):
    """items.parquet's ``why_unscored`` (h3's column), when present, names the status of an unscored item."""
    assert item_status("ok", None if why else 1.0, has_experts, why) == expected


def _items(n: int, **extra) -> dict:
    """items.parquet's columns for n items of one criterion and model: judge k % 3 against a reference of 0."""
    columns = {"id": [f"i{k}" for k in range(n)], "judge_score": [float(k % 3) for k in range(n)],
               "status": ["ok"] * n, "expert_scores": [[0.0, 0.0, 1.0]] * n, "split": ["standard"] * n,
               "model_id": ["m"] * n, "task_type": ["t"] * n, "criteria_name": ["c"] * n, "reference": [0.0] * n}
    columns.update(extra)
    return columns


def test_out_of_scale_is_a_filter_of_its_own_not_a_status():
    """``in_scale`` from items.parquet, when present, gives the scale filter; an out-of-scale verdict with a
    reference stays ``scored`` (the paper scores it, and metrics.json's n_scored counts it)."""
    data = report_items(_items(3, in_scale=[True, False, True]), None, None, "j", "mode")
    status = next(f for f in data["filters"] if f["key"] == "status")
    scale = next(f for f in data["filters"] if f["key"] == "scale")
    assert [status["values"][row[1][4]] for row in data["rows"]] == ["scored"] * 3
    k = data["filters"].index(scale)
    assert [scale["values"][row[1][k]] for row in data["rows"]] == ["in scale", "out of scale", "in scale"]
    assert "scale" not in [f["key"] for f in report_items(_items(3), None, None, "j", "mode")["filters"]]


def test_explorer_json_is_json_whatever_a_judge_is_named():
    """The rows were spliced into the JSON in place of a placeholder string's encoding, the first found: a judge named
    with that encoding ('"' then NUL rows NUL) took the rows inside its name, and the page's JSON failed to parse
    (no explorer). The rows now follow the other keys, and the judge's name comes back as it was."""
    from eval.reports.html_explorer import explorer_json

    name = '"\x00rows\x00'
    data = report_items(_items(3), None, None, name, "mode")
    parsed = json.loads(explorer_json(data))
    assert parsed["judges"] == data["judges"] and any(name in judge for judge in parsed["judges"])
    assert parsed["rows"] == json.loads(data["rows"].json_text())
    assert set(parsed) == set(data)


def test_names_are_cut_on_the_pages():
    """Names of any length load (a column swap puts an answer in criteria_name): a 1,000,000-character criterion
    name was written whole into every table, the plot's labels and the filters, 25.7 MB of report.html. The pages
    show at most ``NAME_CHARS`` characters of a name, its first 200 and last 99 with "…" between, in the tables, the
    plot, the filters and the judge's label."""
    from eval.reports.html_explorer import NAME_CHARS, shown_name
    from eval.reports.html_report import _mae_svg, _metric_table, _paired_table
    from eval.scoring.comparison import Paired
    from judge.metrics_json.metrics import Cell

    long_name = "Ж" * 5000
    assert NAME_CHARS == 300
    cut = "Ж" * 200 + "…" + "Ж" * 99
    assert shown_name(long_name) == cut and shown_name("c") == "c" and shown_name("Ж" * NAME_CHARS) == "Ж" * NAME_CHARS
    data = report_items(_items(2, criteria_name=[long_name, "c"], model_id=["M" * 5000, "m"]), None, None,
                        "J" * 5000, "mode")
    values = {f["key"]: f["values"] for f in data["filters"]}
    assert sorted(values["criterion"]) == sorted([cut, "c"])
    assert sorted(values["model"]) == sorted(["M" * 200 + "…" + "M" * 99, "m"])
    assert data["judges"] == ["judge: " + "J" * 200 + "…" + "J" * 99]
    cell = Cell.from_json({"n": 3, "n_failed": 0, "n_no_unique_mode": 0, "n_scored": 3, "mae": 0.5,
                           "mae_ci": [0.2, 0.8]})
    paired = Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.005, "better", 200)
    for page in (_metric_table("Criterion", {long_name: cell}, None), _mae_svg({long_name: cell}, "mode"),
                 _paired_table("Criterion", {long_name: {"mae": paired}}, ["mae"], "t", 200)):
        assert "Ж" * NAME_CHARS not in page and cut in page


def test_mae_plot_scales_to_its_container():
    """The MAE plot shrinks with a narrow screen instead of running off it: its viewBox is its drawing's size, so
    a browser scales every bar, whisker and label alike (the figure shown is the same), and the page's CSS caps its
    width at its container's with the height following. It was drawn 880 pixels wide with no viewBox: wider than a
    390-pixel phone, where the page then scrolled sideways and the bars' right ends were off screen."""
    from eval.reports.html_report import _asset, _mae_svg
    from judge.metrics_json.metrics import Cell

    cells = {f"c{k}": Cell.from_json({"n": 3, "n_failed": 0, "n_no_unique_mode": 0, "n_scored": 3, "mae": 0.1 * k,
                                      "mae_ci": [0.05 * k, 0.2 * k]}) for k in range(1, 4)}
    svg = _mae_svg(cells, "mode")
    tag = re.match(r"<svg [^>]*>", svg).group(0)
    width, height = (float(re.search(rf' {a}="([0-9.]+)"', tag).group(1)) for a in ("width", "height"))
    assert re.search(r' viewBox="([^"]+)"', tag).group(1).split() == ["0", "0", f"{width:g}", f"{height:g}"]
    # Every mark lies inside the viewBox: what is drawn beyond it would be cut once the plot is scaled.
    xs = [float(x) for x in re.findall(r' x[12]?="([0-9.]+)"', svg)]
    assert xs and max(xs) <= width
    rule = re.search(r"svg\.mae-plot\s*\{([^}]*)\}", _asset("page.css"))
    assert rule, "page.css has no rule for svg.mae-plot"
    declarations = {d.split(":")[0].strip(): d.split(":")[1].strip() for d in rule.group(1).split(";") if ":" in d}
    assert declarations.get("max-width") == "100%" and declarations.get("height") == "auto"


def test_a_confusion_table_scrolls_in_its_panel_on_a_narrow_screen():
    """A rubric of 0..10 draws 12 columns of at least 30 pixels: wider than a 390-pixel phone, where the panel ran off
    the screen. The table sits in the metric tables' scroll box (``div.scroll``), and the panel, a flex item that
    would keep its content's width, is capped at its container's so the box has a width to scroll within."""
    from eval.reports.html_report import _asset, _confusion_html
    from judge.metrics_json.metrics import Confusion

    levels = [float(v) for v in range(11)]
    html = _confusion_html("all task groups", Confusion(levels, [[1] * 11 for _ in levels]))
    assert html.startswith('<div class="panel"><h4>all task groups</h4><div class="scroll"><table class="confusion">')
    assert html.endswith("</table></div></div>") and html.count("<tr>") == 12
    css = _asset("page.css")

    def declarations(selector: str) -> dict[str, str]:
        rule = re.search(rf"(?m)^{re.escape(selector)}\s*\{{([^}}]*)\}}", css)
        assert rule, f"page.css has no rule for {selector}"
        return {d.split(":")[0].strip(): d.split(":")[1].strip() for d in rule.group(1).split(";") if ":" in d}

    assert declarations("div.scroll").get("overflow-x") == "auto"
    assert {k: declarations(".panel").get(k) for k in ("max-width", "min-width")} == {"max-width": "100%",
                                                                                     "min-width": "0"}


def test_a_cut_name_keeps_its_end_and_names_cut_alike_stay_apart():
    """Names are told apart at their ends (compare's " (folder)" after two equal judge names, a rubric's "(часть B)"):
    a name cut to its first characters read as every other, two criteria were one filter value and two rows of one
    label. The cut keeps the end; names that still read alike once cut are marked by their full name's SHA-256, so
    a name reads the same in every table, plot and filter of a page, whatever names and order each holds."""
    import hashlib

    from eval.reports.html_explorer import shown_name, shown_names
    from eval.reports.html_report import _metric_table, _paired_table
    from eval.scoring.comparison import Paired
    from judge.metrics_json.metrics import Cell

    assert shown_name("j" * 400 + " (b)") == "j" * 200 + "…" + "j" * 95 + " (b)"
    a, b = "Критерий: " + "x" * 300 + " (часть A)", "Критерий: " + "x" * 300 + " (часть B)"
    a_cut, b_cut = ("Критерий: " + "x" * 190 + "…" + "x" * 89 + f" (часть {part})" for part in "AB")
    data = report_items(_items(2, criteria_name=[a, b]), None, None, "j", "mode")
    assert sorted({f["key"]: f["values"] for f in data["filters"]}["criterion"]) == [a_cut, b_cut]
    # apart only in the middle: the same cut, then marked; a short name is left as it is
    one, two = "k" * 250 + "1" + "k" * 250, "k" * 250 + "2" + "k" * 250
    same = "k" * 200 + "…" + "k" * 99

    def marked(name: str) -> str:
        return f"{same} (#{hashlib.sha256(name.encode()).hexdigest()[:8]})"

    assert shown_names([one, "c", two, one]) == {one: marked(one), "c": "c", two: marked(two)}
    # the same marks whatever the order and the company
    assert shown_names([two, one]) == {one: marked(one), two: marked(two)}
    assert shown_names(["c", two, one]) == {one: marked(one), two: marked(two), "c": "c"}
    data = report_items(_items(3, criteria_name=[one, two, "c"]), None, None, "j", "mode")
    assert sorted({f["key"]: f["values"] for f in data["filters"]}["criterion"]) == sorted(
        ["c", marked(one), marked(two)])
    # a name of NAME_CHARS characters that reads as another's cut: both marked
    assert shown_names([same, one]) == {same: marked(same), one: marked(one)}
    cell = Cell.from_json({"n": 3, "n_failed": 0, "n_no_unique_mode": 0, "n_scored": 3, "mae": 0.5,
                           "mae_ci": [0.2, 0.8]})
    paired = Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.005, "better", 200)
    for page in (_metric_table("Criterion", {one: cell, two: cell}, None),
                 _paired_table("Criterion", {one: {"mae": paired}, two: {"mae": paired}}, ["mae"], "t", 200)):
        assert re.findall(r"<tr><td>([^<]*)</td>", page) == [marked(one), marked(two)]


def test_texts_are_embedded_for_the_largest_differences_first():
    """With a cap of 2 texts, the two items with the largest |judge − reference| carry them; the others say so."""
    records = [judge.JudgeRecord(id=f"i{k}", instruction=f"instr {k}", answer="a", criteria_name="c",
                                 rubrics="0: no\n1: yes", expert_scores=(0.0, 0.0, 1.0)) for k in range(6)]
    data = report_items(_items(6), records, [], "j", "mode", text_items=2)
    with_text = {row[0] for row in data["rows"] if row[6] >= 0}
    assert with_text == {"i2", "i5"}  # judge 2.0 vs reference 0.0
    assert "2 of 6 items" in data["no_text_note"]
    assert len(data["details"]) == 2


def test_text_cap_reaches_every_criterion_before_the_second_item_of_any():
    """With room for 2 texts and two criteria, each criterion's worst item gets one, though criterion c's second
    item differs more than d's first."""
    items = _items(4, criteria_name=["c", "c", "d", "d"], judge_score=[2.0, 2.0, 1.0, 0.0])
    records = [judge.JudgeRecord(id=f"i{k}", instruction="x", answer="a", criteria_name=c, rubrics="r",
                                 expert_scores=(0.0, 0.0, 1.0)) for k, c in enumerate(["c", "c", "d", "d"])]
    data = report_items(items, records, [], "j", "mode", text_items=2)
    assert {row[0] for row in data["rows"] if row[6] >= 0} == {"i0", "i2"}


def test_raw_output_is_embedded_for_a_failed_verdict_only():
    """A parsed verdict's raw output is its feedback again in the format's tags (a reasoning judge: its reasoning
    in <think> plus the score): not embedded a second time. A failed verdict's is what the parser could not read."""
    records = [judge.JudgeRecord(id=f"i{k}", instruction="x", answer="a", criteria_name="c", rubrics="0: no\n1: yes",
                                 expert_scores=(0.0, 0.0, 1.0)) for k in range(3)]
    reasoning = "рассуждение " * 500
    predictions = [
        {"id": "i0", "feedback": reasoning, "raw_output": f"<think>{reasoning}</think>\n1", "score": 1.0,
         "parse_ok": True},
        {"id": "i1", "feedback": "ok", "raw_output": "[FEEDBACK] ok [RESULT] 1 [END]", "score": 1.0, "parse_ok": True},
        {"id": "i2", "feedback": "", "raw_output": "<think>unclosed", "score": None, "parse_ok": False,
         "error": "no_result", "reason": "no score"}]
    data = report_items(_items(3), records, predictions, "j", "mode")
    verdicts = {row[0]: data["details"][row[6]]["v"][0] for row in data["rows"]}
    assert "o" not in verdicts["i0"] and "o" not in verdicts["i1"]
    assert verdicts["i2"]["o"] == "<think>unclosed"


def test_embedded_texts_are_bounded_by_bytes():
    """A 1 MB feedback is cut at MAX_TEXT_CHARS characters, saying so; the page's texts stop at their byte budget
    (here 60 KB: two of five items whose 20,000-character texts cost ~24 KB each), the page saying why."""
    from eval.reports.html_explorer import MAX_TEXT_CHARS, explorer_json

    records = [judge.JudgeRecord(id=f"i{k}", instruction=f"x{k}", answer="a", criteria_name="c", rubrics="r",
                                 expert_scores=(0.0, 0.0, 1.0)) for k in range(5)]
    predictions = [{"id": f"i{k}", "feedback": f"{k}" + "x" * 1_000_000, "score": 1.0} for k in range(5)]
    data = report_items(_items(5), records, predictions, "j", "mode")
    texts = explorer_json({"details": data["details"], "strings": data["strings"]}).encode()
    assert len(data["details"]) == 5 and len(texts) < 5 * (MAX_TEXT_CHARS + 200)
    feedback = data["details"][0]["v"][0]["f"]
    assert feedback.startswith(feedback[0] + "x" * (MAX_TEXT_CHARS - 1)) and "cut at 20,000 characters of 1,000,001" in feedback
    small = report_items(_items(5), records, predictions, "j", "mode", text_bytes=60_000)
    assert len(small["details"]) == 2 and sum(row[6] >= 0 for row in small["rows"]) == 2
    assert len(explorer_json({"details": small["details"], "strings": small["strings"]}).encode()) <= 60_000
    assert "budget for texts" in small["no_text_note"] and any("budget for texts" in n for n in small["notes"])


def test_tables_render_every_key_a_metric_cell_has():
    """A key the metrics gain later (here ``n_out_of_scale`` and a dict-valued one) shows up as a column."""
    cell = {"n": 4, "n_failed": 1, "n_no_unique_mode": 0, "mae": 0.5, "mae_ci": [0.25, 0.75], "n_out_of_scale": 2,
            "model_means": {"judge": 1.5, "experts": 1.25}}
    result = {"judge": "j", "target": "mode", "settings": {"n_boot": 10, "seed": 0, "vc_repeats": 5, "ci_level": 0.95},
              "splits": {"all": {"overall": cell, "by_model": {"m": cell}, "by_task_type": {}, "by_criterion": {"c": cell},
                                 "failures": {}, "confusion": {}}},
              "figures_added_later": {"mae": 0.5}}
    page = render_report_page(Metrics.from_json(result), None)
    # bookkeeping: behind the toggle; the tooltip says what the column is, then its key in metrics.json
    assert ('title="parsed verdicts outside their scale: scored, as the paper scores them, where the item has a '
            'reference (counted here also on an item without one, a mode tie) (metrics.json: n_out_of_scale)" '
            'data-key="n_out_of_scale" class="book">out of scale</th>') in page
    assert 'title="model_means" data-key="model_means"' in page and "&quot;experts&quot;: 1.25" in page  # unknown
    # MAE's reference is the mean for a regression judge under the default --target auto too, not only under mean
    assert ("title=\"mean absolute error of the judge&#x27;s score against the experts&#x27; mode (their mean for a "
            "regression judge or under --target mean), with its bootstrap interval (metrics.json: mae)\"") in page
    from eval.reports.html_report import _heading_title

    # score leaves a stale prediction out (its record's text changed since): its item counts as one without one
    assert _heading_title("n_missing").startswith("items without a prediction: not judged yet, left out by the run's "
                                                  "--limit or --split, or judged before the record's text changed")
    assert "0.500 <span class=\"ci\">[0.250, 0.750]</span>" in page
    assert "figures_added_later" in page  # an unknown top-level key is shown, not dropped


def test_the_pages_are_english_and_the_datas_texts_russian(scored):
    """The page's own words are English (``lang="en"``); the item texts page.js writes (instruction, answer,
    reference, rubric, feedback, raw output, experts' comments) say ``lang="ru"``, so a screen reader reads each in
    its own voice."""
    from eval.reports.html_report import _asset

    page = (scored["root"] / "exact" / "report.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in page and 'lang="ru"' not in page.split("<script>")[0]
    script = _asset("page.js")
    assert script.count('<div class="text" lang="ru">') == 2 and '<div class="text feedback" lang="ru">' in script
    assert '<td lang="ru" style="white-space:pre-wrap">' in script and '<div class="text">' not in script


def test_nav_links_escape_a_split_key():
    """A metrics.json (hand-made, or of another tool) whose split key holds a quote: the nav link to its tables is
    escaped as the heading's id is, so the key cannot add an attribute to the link."""
    cell = {"n": 4, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.5, "mae_ci": [0.25, 0.75]}
    key = 'x" onmouseover="alert(1)'
    result = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 5, "ci_level": 0.95},
              "splits": {key: {"overall": cell, "by_model": {}, "by_task_type": {}, "by_criterion": {},
                               "failures": {}, "confusion": {}}}}
    page = render_report_page(Metrics.from_json(result), None)
    assert '<a href="#tables-x&quot; onmouseover=&quot;alert(1)">' in page
    assert '<h2 id="tables-x&quot; onmouseover=&quot;alert(1)">' in page and 'onmouseover="' not in page


def test_page_is_self_contained_and_embeds_text_safely(scored):
    """No external resource is referenced, and a feedback holding ``<!-- <script> </script>`` round-trips through
    the JSON, whose elements hold no ``<`` at all (so no text can open a comment or a script inside them)."""
    page = (scored["root"] / "exact" / "report.html").read_text(encoding="utf-8")
    bodies = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.S)
    assert len(bodies) == 2 and not any("<" in body for body in bodies)
    assert page.count("<script") == 3 and page.rstrip().endswith("</script></body></html>")
    assert not re.search(r"<link|<img|src=|@import|url\(", page)
    assert not re.search(r'href="(?!#)', page)
    data = _embedded(page)
    feedbacks = [v["f"] for d in data["details"] for v in d["v"] if v]
    assert any(f.endswith(TRICKY_FEEDBACK) for f in feedbacks)
    assert len(data["rows"]) == len(scored["records"])


def test_report_page_rewritten_from_the_folder_alone(scored):
    """``write_report_page`` rebuilds the page from metrics.json and items.parquet (texts from the data named)."""
    run = scored["root"] / "exact"
    (run / "report.html").unlink()
    path = write_report_page(run)
    data = _embedded(path.read_text(encoding="utf-8"))
    assert len(data["details"]) == len(scored["records"])


def test_demo_lists_the_pages_it_wrote(tmp_path):
    """``make demo`` ends by naming each run's report.html, then the comparison's compare.html."""
    from scripts.demo import report_pages

    for rel in ("eval/seq2seq/report.html", "eval/regression/report.html", "eval/compare/compare.html",
                "eval/seq2seq/report.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    names = [p.relative_to(tmp_path).as_posix() for p in report_pages(tmp_path)]
    assert names == ["eval/regression/report.html", "eval/seq2seq/report.html", "eval/compare/compare.html"]


def test_compare_page_says_the_paired_count_of_each_metric():
    """Each metric pairs its own items (Verdict Confidence only those with two annotators): the row's n column is the
    first metric's, headed so, and a metric paired on another count says it in its cell."""
    from eval.reports.html_report import _paired_table
    from eval.scoring.comparison import Paired

    cells = {"all items": {"mae": Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.01, "better"),
                           "vc_judge": Paired(50, 0.7, 0.8, 0.1, (0.0, 0.2), 0.08, "n.s.")}}
    page = _paired_table("Overall", cells, ["mae", "vc_judge"], "t", 1000)
    assert ('<th title="the items both runs scored, paired for the first metric">n (MAE)</th>' in page
            and '<td data-v="100">100</td>' in page)
    # each metric headed by its label, as report.html heads it, and told in its tooltip
    assert '<th title="Verdict Confidence with the judge in place of one expert: ' in page
    assert ">VC judge baseline</th>" in page and ">VC judge run</th>" in page and ">vc_judge" not in page
    mae_cell, vc_cell = re.findall(r'<span class="ci">([^<]*)</span>', page)
    assert mae_cell == "[-0.200, -0.050] p = 0.010" and vc_cell == "[0.000, 0.200] p = 0.080, n 50"


def test_compare_page_says_why_a_cell_too_small_is_never_called(scored_relative):
    """A cell under ``MIN_PAIRED`` paired units or ``paired_resamples_to_call(alpha)`` resamples is n.s. whatever its
    p and left out of the Holm family: compare.html showed "p < 0.01 ... n.s." with no Holm p and no word of why, where
    compare.md says it. The cell now says which minimum it is under, and the subtitle states both (the numbers read
    from ``eval.scoring.compare``, which sets them)."""
    from eval.reports.html_report import _paired_table, render_compare_page
    from eval.scoring.compare import MIN_PAIRED, compare, paired_resamples_to_call
    from eval.scoring.comparison import Paired

    needed = paired_resamples_to_call(0.05)
    cells = {"few items": {"mae": Paired(6, 0.906, 0.708, -0.197, (-0.342, -0.067), 0.005, "n.s.", 200)},
             "few instructions": {"mae": Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.005, "n.s.", 200, 12)},
             "few resamples": {"mae": Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.0, "n.s.", needed - 1)},
             "not significant": {"mae": Paired(100, 0.5, 0.45, -0.05, (-0.2, 0.1), 0.3, "n.s.", 200)},
             "called": {"mae": Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.005, "better", 200)}}
    page = _paired_table("Model", cells, ["mae"], "t", 200, 0.95, 0.05)
    calls = re.findall(r'<span class="(?:better|worse|)">([^<]*)</span>', page)
    assert calls == [f"n.s. (under {MIN_PAIRED} paired items: too few to call)",
                     f"n.s. (under {MIN_PAIRED} paired instructions: too few to call)",
                     f"n.s. (under {needed} resamples: too few to call)", "n.s.", "better"]
    root, _ = scored_relative
    result = compare([root / "a", root / "b"], n_boot=20)
    page = render_compare_page(result, None)
    assert (f"A cell under {MIN_PAIRED} paired items or {needed} resamples is n.s. whatever its p: too few to call."
            in page)
    # the page read alone says what n.s. is not, as compare.md does (no cell here carries a Holm p: every row is
    # called on its own)
    assert ("n.s. says no difference was shown, not that the runs are equal; every row is called on its own p at "
            "0.05, none adjusted for another." in page)


def test_compare_pages_validity_link_points_at_its_first_heading(scored_relative):
    """The nav's "Validity" link pointed at "validity", the side-by-side part's heading, which a baseline without a
    validity section leaves out: only the paired part ("validity-paired") was on the page, and the link went
    nowhere. It now points at the part's first heading, and every nav link at an element of the page."""
    import dataclasses

    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare

    root, _ = scored_relative
    result = compare([root / "a", root / "b"], n_boot=0)

    def nav_targets(page: str) -> tuple[list[str], list[str]]:
        nav = page[page.index("<nav>"):page.index("</nav>")]
        return re.findall(r'href="#([^"]+)"', nav), re.findall(r' id="([^"]+)"', page)

    links, ids = nav_targets(render_compare_page(result, None))
    assert "validity" in links and set(links) <= set(ids)
    without = dataclasses.replace(result, metrics=[dataclasses.replace(m, validity=None) for m in result.metrics],
                                  comparisons=[dataclasses.replace(c, validity={}) for c in result.comparisons])
    page = render_compare_page(without, None)
    links, ids = nav_targets(page)
    assert 'id="validity"' not in page and "validity-paired" in links and set(links) <= set(ids)


# -------------------------------------------------------------------- the files a metrics.json names, the statuses


def _twelve_records() -> list:
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:6]
            + [r for r in records if judge.split_of(r) == "standard"][:6])


def _write_predictions(path, records, offset: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": r.id, "judge": "j", "raw_output": "x", "feedback": f"отзыв {r.id}",
                         "score": max(r.expert_scores) - offset * (k % 2), "parse_ok": True, "error": None,
                         "reason": "", "score_source": "verdict", "latency_s": 0.1}, ensure_ascii=False)
             for k, r in enumerate(records)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def scored_relative(tmp_path, monkeypatch):
    """Two runs scored from tmp_path with relative --predictions and --data, then the current directory moved."""
    from eval.scoring.score import score

    monkeypatch.chdir(tmp_path)
    records = _twelve_records()
    judge.write_jsonl(records, tmp_path / "data.jsonl")
    for name, offset in (("a", 0), ("b", 1)):
        _write_predictions(tmp_path / name / "predictions.jsonl", records, offset)
        score(f"{name}/predictions.jsonl", "data.jsonl", n_boot=0, vc_repeats=5)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return tmp_path, records


def _compare_data(root):
    from eval.reports.html_explorer import compare_items
    from eval.scoring.compare import compare

    return compare_items(compare([root / "a", root / "b"], n_boot=0))


def test_compare_from_another_directory_shows_texts_and_both_verdicts(scored_relative):
    """Scored with relative paths, compared from another directory: metrics.json names the files absolutely, and
    every compared item carries its instruction, answer, rubric and both judges' feedback."""
    root, records = scored_relative
    metrics = json.loads((root / "a" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["data"] == str(root / "data.jsonl")
    assert metrics["predictions"] == str(root / "a" / "predictions.jsonl")
    data = _compare_data(root)
    assert len(data["details"]) == len(records) and data["notes"] == []
    for detail in data["details"]:
        assert "m" not in detail and all(data["strings"][detail[key]] for key in ("i", "a", "u"))
        assert all(v is not None and v["f"].startswith("отзыв ") for v in detail["v"])


def test_compare_page_names_its_interval_level(scored_relative):
    """compare.html calls better/worse at p < alpha and shows paired intervals: it names both, the intervals' level
    read from the comparison's ``ci_level`` (95 % where compare.json records none)."""
    import dataclasses

    from eval.reports.html_report import _compare_level, _paired_table, render_compare_page
    from eval.reports.report import ci_percent
    from eval.scoring.comparison import Paired
    from eval.scoring.compare import compare

    root, _ = scored_relative
    result = compare([root / "a", root / "b"], n_boot=20, alpha=0.3)
    page = render_compare_page(result, None)
    drawn = ci_percent(_compare_level(result))  # the level compare recorded (95 % where it records none)
    assert f"paired bootstrap, {drawn} % intervals" in page and "called at p &lt; 0.3" in page
    assert f"delta [{drawn} % CI] p call" in page
    assert _compare_level({"ci_level": 0.7}) == 0.7 and _compare_level({}) == 0.95
    recorded = render_compare_page(dataclasses.replace(result, ci_level=0.7), None)
    assert "paired bootstrap, 70 % intervals" in recorded and "delta [70 % CI] p call" in recorded
    cells = {"all items": {"mae": Paired(100, 0.5, 0.4, -0.1, (-0.2, -0.05), 0.01, "better")}}
    assert "MAE delta [70 % CI] p call" in _paired_table("Overall", cells, ["mae"], "t", 1000, 0.7)


def test_compare_page_cuts_run_names_and_keeps_them_apart(scored_relative):
    """Three runs of one 400-character judge name: compare tells them apart by a " (folder)" suffix, which the cut
    keeps, so each heading and comparison filter value is one run's. No part of the page (headings, tables, the
    validity part, the explorer's data) writes a name whole: 25.8 MB of compare.html for a 1,000,000-character one."""
    import shutil

    from eval.reports.html_explorer import compare_items
    from eval.reports.html_report import render_compare_page
    from eval.scoring.compare import compare

    root, _ = scored_relative
    shutil.copytree(root / "b", root / "c")
    for name in ("a", "b", "c"):
        path = root / name / "metrics.json"
        path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), "judge": "J" * 400}),
                        encoding="utf-8")
    result = compare([root / "a", root / "b", root / "c"], n_boot=0)
    assert result.runs == ["J" * 400 + f" ({name})" for name in "abc"]
    a, b, c = ("J" * 200 + "…" + "J" * 95 + f" ({name})" for name in "abc")
    data = compare_items(result)
    page = render_compare_page(result, data)
    assert re.findall(r'<h2 id="cmp-\d">(.*?)</h2>', page) == [f"{b} vs {a}", f"{c} vs {a}"]
    assert {f["key"]: f["values"] for f in data["filters"]}["pair"] == [f"{b} vs {a}", f"{c} vs {a}"]
    assert data["filter_judges"] == [["baseline: " + a, "run: " + b], ["baseline: " + a, "run: " + c]]
    assert "J" * 201 not in page
    side = re.search(r'<table[^>]*id="side-[^"]*".*?</table>', page, re.S).group(0)
    assert re.findall(r"<tr><td>([^<]*)</td>", side) == [a, b, c]


def test_compare_reads_relative_paths_of_an_older_metrics_json_against_its_folder(scored_relative):
    """A metrics.json that recorded the paths as typed (relative to where score ran): the predictions are found
    beside it and the data through run.json, from another directory; a file truly gone is said on the page."""
    root, records = scored_relative
    for name in ("a", "b"):
        path = root / name / "metrics.json"
        metrics = json.loads(path.read_text(encoding="utf-8"))
        metrics.update(data="data.jsonl", predictions=f"{name}/predictions.jsonl")
        path.write_text(json.dumps(metrics), encoding="utf-8")
        (root / name / "run.json").write_text(json.dumps({"config": {"data": str(root / "data.jsonl")}}),
                                              encoding="utf-8")
    data = _compare_data(root)
    assert data["notes"] == [] and all("m" not in d and all(d["v"]) for d in data["details"])
    # Gone for good: the page says which file and what it lacks, instead of "(none)" and "no prediction".
    (root / "data.jsonl").unlink()
    (root / "b" / "predictions.jsonl").unlink()
    data = _compare_data(root)
    assert len(data["notes"]) == 2
    assert data["notes"][0].startswith(f"Not found: the labelled data (the metrics.json in {root / 'a'} names "
                                       "data.jsonl): ")
    assert data["notes"][1].startswith(f"Not found: the predictions of j (b) (the metrics.json in {root / 'b'} "
                                       "names b/predictions.jsonl): ")
    for detail in data["details"]:
        assert detail["m"] == data["notes"][0]
        assert detail["v"][0]["f"].startswith("отзыв ") and detail["v"][1] == {"m": data["notes"][1]}


def test_recorded_file_is_found_from_anywhere(tmp_path, monkeypatch):
    """The file a metrics.json names: its absolute path; else (an older file's relative path, a run folder moved)
    the run's own file beside it, then run.json's data, and a relative path from the current directory last."""
    from eval.reports.run_files import recorded_file

    run, cwd = tmp_path / "run", tmp_path / "cwd"
    for path in (run / "predictions.jsonl", cwd / "rel.jsonl", tmp_path / "data.jsonl"):
        path.parent.mkdir(exist_ok=True)
        path.write_text("")
    monkeypatch.chdir(cwd)
    beside = run / "predictions.jsonl"
    assert recorded_file(str(tmp_path / "data.jsonl"), run) == tmp_path / "data.jsonl"
    assert recorded_file(str(tmp_path / "moved" / "predictions.jsonl"), run, beside="predictions.jsonl") == beside
    assert recorded_file("runs/x/predictions.jsonl", run, beside="predictions.jsonl") == beside
    assert recorded_file("data.jsonl", run, also=[str(tmp_path / "data.jsonl")]) == tmp_path / "data.jsonl"
    assert recorded_file("rel.jsonl", run) == Path("rel.jsonl")
    assert recorded_file("gone.jsonl", run) is None and recorded_file(None, run) is None


def test_report_page_says_when_its_files_are_gone(scored_relative):
    """report.html rewritten from the folder when the data and the predictions are gone says so above the items,
    and an item's note names the missing data instead of offering a larger --html-text-items."""
    root, _ = scored_relative
    (root / "data.jsonl").unlink()
    (root / "a" / "predictions.jsonl").unlink()
    data = _embedded(write_report_page(root / "a").read_text(encoding="utf-8"))
    assert [note.split(" (")[0] for note in data["notes"]] == ["Not found: the labelled data",
                                                               "Not found: the predictions"]
    assert data["no_text_note"] == data["notes"][0]


@pytest.mark.parametrize("baseline, run, expected", [
    ("ok", "ok", "both judged"), ("ok", "parse_failed", "baseline ok, run parse failed"),
    ("missing", "request_failed", "baseline missing, run request failed"),
    ('"><img src=x onerror=alert(1)>', "ok", "baseline unknown, run ok"),
])
def test_compare_status(baseline, run, expected):
    """compare.html's status names each side's items.parquet status; one this version does not write reads unknown."""
    from eval.reports.html_explorer import compare_status

    assert compare_status(baseline, run) == expected


def test_a_crafted_status_in_items_parquet_never_reaches_the_pages(scored_relative):
    """An items.parquet whose status holds markup: compare refuses it in one line naming the row (a status score
    never writes), so it reaches no compare.html; report.html shows the item as ``unknown``, the markup nowhere."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from eval.reports.html_explorer import STATUS_LABELS
    from eval.scoring.compare import compare

    root, _ = scored_relative
    crafted = '"><img src=x onerror="window.__xss=1">'
    path = root / "b" / "items.parquet"
    items = pq.read_table(path)
    status = items.column("status").to_pylist()
    status[0] = crafted
    pq.write_table(items.set_column(items.column_names.index("status"), "status", pa.array(status)), path)
    with pytest.raises(ValueError, match=r"items\.parquet: column status: row index 0 \(id '[^']+'\): .* is not one of "
                                         r"ok, parse_failed, request_failed, missing; score the run again"):
        compare([root / "a", root / "b"], n_boot=0)
    report = write_report_page(root / "b")
    labels = next(f for f in _embedded(report.read_text(encoding="utf-8"))["filters"] if f["key"] == "status")["values"]
    assert "unknown" in labels and set(labels) <= set(STATUS_LABELS)
    text = report.read_text(encoding="utf-8")
    assert "onerror" not in text and "img src" not in text


def test_compare_explorer_says_when_it_lists_only_the_top_items(scored_relative):
    """compare.html lists at most ``top`` items per comparison: past that, the page's "N of M items match" counted
    only the listed ones, and nothing said that the other items both runs hold were left out. A note says the cap
    and the count it was taken from; under the cap there is none."""
    from eval.reports.html_explorer import compare_items
    from eval.scoring.compare import compare

    root, records = scored_relative
    result = compare([root / "a", root / "b"], n_boot=0)
    capped = compare_items(result, top=5)
    assert len(capped["rows"]) == 5
    assert capped["notes"] == [f"{result.runs[1]} vs {result.runs[0]}: 5 of the {len(records)} items both runs hold "
                               "are listed, those where the judges differ most (compare.html lists at most 5 per "
                               "comparison)."]
    assert compare_items(result, top=len(records))["notes"] == []


def test_compare_page_says_which_rows_are_adjusted_as_compare_md_does(scored_relative, monkeypatch):
    """compare.md says "Every row is called on its own p" where no cell carries a Holm p (cells too small to call,
    or a compare.json written before the adjustment), and that the overall rows are not adjusted where the tables
    are. compare.html said the latter in both cases, as if the tables' rows were adjusted when none was."""
    import eval.reports.html_report as html_report
    from eval.scoring.compare import compare, holm_applied

    root, _ = scored_relative
    result = compare([root / "a", root / "b"], n_boot=20)
    assert not holm_applied(result)  # 12 items: every table cell is under the minimum to call
    page = html_report.render_compare_page(result, None)
    assert ("n.s. says no difference was shown, not that the runs are equal; every row is called on its own p at "
            "0.05, none adjusted for another." in page)
    assert "overall rows" not in page and "Holm" not in page
    monkeypatch.setattr(html_report, "holm_applied", lambda _: True)
    page = html_report.render_compare_page(result, None)
    assert ("n.s. says no difference was shown, not that the runs are equal; the overall rows are each called at "
            "0.05, not adjusted for one another." in page)


def test_report_explorer_says_at_the_top_when_the_text_cap_left_items_without_texts():
    """Past ``--html-text-items`` an item opened to "Texts are embedded for 2 of 6 items", but the page said nothing
    until one was opened: the explorer's notes (shown over the items) now say the cap was reached; under the cap
    they say nothing."""
    records = [judge.JudgeRecord(id=f"i{k}", instruction=f"instr {k}", answer="a", criteria_name="c",
                                 rubrics="0: no\n1: yes", expert_scores=(0.0, 0.0, 1.0)) for k in range(6)]
    data = report_items(_items(6), records, [], "j", "mode", text_items=2)
    assert data["notes"] == ["Texts are embedded for 2 of 6 items, the largest differences of each criterion and "
                             "evaluated model first (--html-text-items 2)."]
    assert report_items(_items(6), records, [], "j", "mode", text_items=6)["notes"] == []


def test_the_summary_figures_a_reader_sees_are_metrics_jsons(scored):
    """report.html's summary and compare.html's side-by-side table show metrics.json's n, failures, MAE with its
    interval, Spearman with its interval and VC judge, each split's row and each run's, at 3 decimals: the page's
    figures are the file's, not recomputed or taken from another split."""
    from eval.reports.report import SPLIT_TITLES
    from tests.unit.test_report_html_paper_tables import html_tables

    def shown(cell) -> list[str]:
        def three(v):
            return f"{v:.3f}"
        def with_interval(value, interval):
            return f"{three(value)} [{three(interval[0])}, {three(interval[1])}]"
        return [str(cell.n), str(cell.n_failed), with_interval(cell.mae, cell.mae_ci),
                with_interval(cell.spearman, cell.spearman_ci), three(cell.vc_judge)]

    def columns(table: list[list[str]]) -> list[list[str]]:
        at = [table[0].index(h) for h in ("n", "failed", "MAE", "Spearman", "VC judge")]
        return [[row[0]] + [row[k] for k in at] for row in table[1:]]

    def read(path: str) -> str:
        return (scored["root"] / path).read_text(encoding="utf-8")

    exact, lenient = (Metrics.from_json(json.loads(read(f"{name}/metrics.json"))) for name in ("exact", "lenient"))
    summary = columns(html_tables(read("exact/report.html"))["summary-table"])
    assert summary == [[SPLIT_TITLES[split]] + shown(block.overall) for split, block in exact.splits.items()]
    assert len(summary) == 3 and len({row[3] for row in summary}) > 1  # the splits' MAEs differ: a row is its own
    side = columns(html_tables(read("cmp/compare.html"))["side-all"])
    assert [row[1:] for row in side] == [shown(run.splits["all"].overall) for run in (exact, lenient)]
