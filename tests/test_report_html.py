"""report.html and compare.html: generic tables from metrics.json, item statuses, the embedded item data, and the
pages driven in a real headless chromium (filter, open an item, screenshot) from a run scored on hand-written
predictions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.reports.html_explorer import item_status, report_items
from eval.reports.html_report import render_report_page, write_report_page
from eval.scoring.schema import Metrics
from tests.browser import browser  # noqa: F401  (the fixture)

FAILED_RAW = "[FEEDBACK] Непонятно. [RESULT] отлично [END]"
# A feedback that would end the page's <script> element if it were embedded unescaped.
TRICKY_FEEDBACK = "Отзыв </script><b>не тег</b>"


def _prediction(record, name: str, k: int, offset: int) -> dict:
    if k == 3:  # one parse failure per run: a counted value, never a score
        return {"id": record.id, "judge": name, "raw_output": FAILED_RAW, "feedback": "", "score": None,
                "parse_ok": False, "error": "no_score", "reason": "the score is a word", "score_source": None,
                "latency_s": 0.1}
    score = max(record.expert_scores) - (offset if k % 2 else 0)
    return {"id": record.id, "judge": name, "raw_output": f"[FEEDBACK] {name} {k} [RESULT] {score} [END]",
            "feedback": f"{name}: отзыв {k}. {TRICKY_FEEDBACK}", "score": score, "parse_ok": True, "error": None,
            "reason": "", "score_source": "verdict", "latency_s": 0.1, "confidence": 0.75,
            "score_probs": {"0": 0.05, "1": 0.2, "2": 0.75}}


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict:
    """Two runs on 12 sample records (6 per split), judged by hand-written predictions, scored, and compared."""
    root = tmp_path_factory.mktemp("pages")
    records = judge.load_records(judge.sample_data_path())
    records = ([r for r in records if judge.split_of(r) == "zero_shot"][:6]
               + [r for r in records if judge.split_of(r) == "standard"][:6])
    data = root / "data.jsonl"
    judge.write_jsonl(records, data)
    for name, offset in (("exact", 0), ("lenient", 1)):
        run = root / name
        run.mkdir()
        lines = [json.dumps(_prediction(r, name, k, offset), ensure_ascii=False) for k, r in enumerate(records)]
        (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert main(["score", "--predictions", str(run), "--data", str(data), "--n-boot", "50", "--no-plots"]) == 0
    assert main(["compare", str(root / "exact"), str(root / "lenient"), "--out", str(root / "cmp"),
                 "--n-boot", "50"]) == 0
    return {"root": root, "records": records}


def _embedded(page: str) -> dict:
    """The explorer's rows and texts, from their two JSON elements."""
    data = {}
    for css_id in ("explorer-data", "explorer-texts"):
        match = re.search(rf'<script type="application/json" id="{css_id}">(.*?)</script>', page, re.S)
        assert match, f"no {css_id} in the page"
        data.update(json.loads(match.group(1)))
    return data


# ------------------------------------------------------------------------------------------- pure pieces


@pytest.mark.parametrize("status, reference, has_experts, in_scale, expected", [
    ("ok", 1.0, True, None, "scored"),
    ("ok", None, True, None, "no unique mode"),
    ("ok", 1.0, True, False, "out-of-scale"),
    ("ok", 1.0, True, True, "scored"),
    ("ok", 1.0, True, float("nan"), "scored"),  # a missing in_scale value says nothing
    ("parse_failed", None, True, None, "failed"),
    ("request_failed", 1.0, True, None, "failed"),
    ("missing", 1.0, True, None, "missing"),
    ("ok", None, False, None, "unlabelled"),  # no expert scores: no reference, but not a mode tie either
])
def test_item_status(status, reference, has_experts, in_scale, expected):
    """Each item gets one explorer status; failures win over everything, out-of-scale over no-unique-mode."""
    assert item_status(status, reference, has_experts, in_scale) == expected


@pytest.mark.parametrize("why, has_experts, expected", [
    ("", True, "scored"), ("no_unique_mode", True, "no unique mode"), ("all_experts_abstained", False, "unlabelled"),
    ("no_expert_scores", False, "unlabelled"), ("a_reason_added_later", True, "no unique mode"),
])
def test_item_status_from_why_unscored(why, has_experts, expected):
    """items.parquet's ``why_unscored`` (h3's column), when present, names the status of an unscored item."""
    assert item_status("ok", None if why else 1.0, has_experts, None, why) == expected


def _items(n: int, **extra) -> dict:
    columns = {"id": [f"i{k}" for k in range(n)], "judge_score": [float(k % 3) for k in range(n)],
               "status": ["ok"] * n, "expert_scores": [[0.0, 0.0, 1.0]] * n, "split": ["standard"] * n,
               "model_id": ["m"] * n, "task_type": ["t"] * n, "criteria_name": ["c"] * n, "reference": [0.0] * n}
    columns.update(extra)
    return columns


def test_out_of_scale_column_sets_the_status_filter():
    """``in_scale`` from items.parquet (h3's column), when present, marks items out-of-scale in the explorer."""
    data = report_items(_items(3, in_scale=[True, False, True]), None, None, "j", "mode")
    status = next(f for f in data["filters"] if f["key"] == "status")
    labels = [status["values"][row[1][4]] for row in data["rows"]]
    assert sorted(labels) == ["out-of-scale", "scored", "scored"]
    assert dict(zip([r[0] for r in data["rows"]], labels))["i1"] == "out-of-scale"


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


def test_tables_render_every_key_a_metric_cell_has():
    """A key the metrics gain later (here ``n_out_of_scale`` and a dict-valued one) shows up as a column."""
    cell = {"n": 4, "n_failed": 1, "n_no_unique_mode": 0, "mae": 0.5, "mae_ci": [0.25, 0.75], "n_out_of_scale": 2,
            "model_means": {"judge": 1.5, "experts": 1.25}}
    result = {"judge": "j", "target": "mode", "settings": {"n_boot": 10, "seed": 0, "vc_repeats": 5, "ci_level": 0.95},
              "splits": {"all": {"overall": cell, "by_model": {"m": cell}, "by_task_type": {}, "by_criterion": {"c": cell},
                                 "failures": {}, "confusion": {}}},
              "figures_added_later": {"mae": 0.5}}
    page = render_report_page(Metrics.from_json(result), None)
    assert 'title="n_out_of_scale" class="book">out of scale</th>' in page  # bookkeeping: behind the toggle
    assert 'title="model_means"' in page and "&quot;experts&quot;: 1.25" in page
    assert "0.500 <span class=\"ci\">[0.250, 0.750]</span>" in page
    assert "figures_added_later" in page  # an unknown top-level key is shown, not dropped


def test_page_is_self_contained_and_embeds_text_safely(scored):
    """No external resource is referenced, and a feedback holding ``</script>`` round-trips through the JSON."""
    page = (scored["root"] / "exact" / "report.html").read_text(encoding="utf-8")
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


# -------------------------------------------------------------------------------------------- in a browser


def _open(driver, path: Path):
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.as_uri())
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")


def _choose(driver, filter_key: str, label: str | None) -> None:
    """Pick a filter value by its label (None: all)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    select = Select(driver.find_element(By.CSS_SELECTOR, f'select[data-filter="{filter_key}"]'))
    if label is None:
        select.select_by_value("-1")
    else:
        select.select_by_visible_text(label)


def test_report_page_in_chromium_filter_open_and_screenshot(browser, scored, tmp_path):  # noqa: F811
    """Filtering to failed items leaves the one parse failure; opening it shows the raw output, the rubric and every
    expert's comment; sorting a table by MAE puts the worst model first; a screenshot is saved."""
    from selenium.webdriver.common.by import By

    record = scored["records"][3]
    _open(browser, scored["root"] / "exact" / "report.html")
    rows = browser.find_elements(By.CSS_SELECTOR, "#items tr.item")
    assert len(rows) == 12
    _choose(browser, "status", "failed")
    rows = browser.find_elements(By.CSS_SELECTOR, "#items tr.item")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == [record.id]
    assert "1 of 12 items match" in browser.find_element(By.ID, "match-count").text
    browser.execute_script("arguments[0].scrollIntoView()", rows[0])
    rows[0].click()
    detail = browser.find_element(By.CSS_SELECTOR, "tr.detail-row").text
    assert "no_score" in detail and "the score is a word" in detail
    assert record.rubrics.splitlines()[0] in detail
    for comment in record.expert_feedback or ():
        assert comment.splitlines()[0] in detail
    browser.find_element(By.CSS_SELECTOR, "#items tr.item").click()  # closes it again
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")
    # Back to all items; the largest difference comes first and opens to the judge's feedback and distribution.
    _choose(browser, "status", None)
    first = browser.find_element(By.CSS_SELECTOR, "#items tr.item")
    first.click()
    detail = browser.find_element(By.CSS_SELECTOR, "tr.detail-row")
    assert "confidence 0.750" in detail.text and "exact: отзыв" in detail.text
    assert len(detail.find_elements(By.CSS_SELECTOR, ".bars span")) == 3
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    # A sortable table: a click on the MAE heading sorts worst first, a second click best first; Overall stays last.
    table = browser.find_element(By.ID, "table-all-model")
    heading = table.find_element(By.CSS_SELECTOR, 'th[title="mae"]')
    column = [h.get_attribute("title") for h in table.find_elements(By.TAG_NAME, "th")].index("mae") + 1

    def maes() -> list[float]:
        cells = table.find_elements(By.CSS_SELECTOR, f"tbody tr:not(.overall) td:nth-child({column})")
        return [float(td.get_attribute("data-v")) for td in cells if td.get_attribute("data-v")]

    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", heading)  # clear of the sticky nav
    heading.click()
    assert maes() == sorted(maes(), reverse=True) and len(set(maes())) > 1
    heading.click()
    assert maes() == sorted(maes())
    assert table.find_elements(By.CSS_SELECTOR, "tbody tr")[-1].get_attribute("class") == "overall"


def test_compare_page_in_chromium_shows_both_judges(browser, scored, tmp_path):  # noqa: F811
    """compare.html lists the items where the judges differ most; one opens to both judges' feedback."""
    from selenium.webdriver.common.by import By

    _open(browser, scored["root"] / "cmp" / "compare.html")
    assert "better" in browser.page_source or "worse" in browser.page_source or "n.s." in browser.page_source
    _choose(browser, "split", "Standard test")
    rows = browser.find_elements(By.CSS_SELECTOR, "#items tr.item")
    assert rows, "no Standard items in the comparison"
    diffs = [float(r.find_elements(By.TAG_NAME, "td")[-1].text) for r in rows if r.find_elements(By.TAG_NAME, "td")[-1].text != "—"]
    assert diffs == sorted(diffs, reverse=True) and diffs[0] == 1.0
    browser.execute_script("arguments[0].scrollIntoView()", rows[0])
    rows[0].click()
    detail = browser.find_element(By.CSS_SELECTOR, "tr.detail-row").text
    assert "exact: отзыв" in detail and "lenient: отзыв" in detail
    shot = tmp_path / "compare.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_demo_lists_the_pages_it_wrote(tmp_path):
    """``make demo`` ends by naming each run's report.html, then the comparison's compare.html."""
    from scripts.demo import report_pages

    for rel in ("eval/seq2seq/report.html", "eval/regression/report.html", "eval/compare/compare.html",
                "eval/seq2seq/report.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    names = [p.relative_to(tmp_path).as_posix() for p in report_pages(tmp_path)]
    assert names == ["eval/regression/report.html", "eval/seq2seq/report.html", "eval/compare/compare.html"]


def _visible_headings(table) -> list[str]:
    from selenium.webdriver.common.by import By

    return [h.get_attribute("title") or h.text for h in table.find_elements(By.TAG_NAME, "th") if h.is_displayed()]


def _fits(browser, table) -> bool:
    """The table needs no sideways scrolling: it is no wider than its scroll box, which is no wider than the page."""
    return browser.execute_script(
        "const t = arguments[0], box = t.parentElement;"
        "return t.scrollWidth <= box.clientWidth && box.scrollWidth <= box.clientWidth"
        " && document.documentElement.scrollWidth <= window.innerWidth;", table)


def test_summary_tables_lead_with_the_headline_and_fit_1280_pixels(browser, scored):  # noqa: F811
    """At 1280 px: report.html's summary and compare.html's side-by-side tables show n, failed, MAE, Spearman,
    VC judge / experts (and the Experts VC over all labelled items) and need no sideways scrolling; the switch in
    the nav shows the bookkeeping columns (out of scale, Pearson, ...) and hides them again."""
    from selenium.webdriver.common.by import By

    headline = ["n", "n_failed", "mae", "spearman", "vc_judge", "vc_experts", "vc_experts_labelled"]
    browser.set_window_size(1280, 900)
    try:
        for page, table_id in (("exact/report.html", "summary-table"), ("cmp/compare.html", "side-all")):
            _open(browser, scored["root"] / page)
            assert browser.execute_script("return window.innerWidth") <= 1280
            table = browser.find_element(By.ID, table_id)
            assert _visible_headings(table)[1:] == headline, page
            assert _fits(browser, table), f"{page}: {table_id} scrolls sideways at 1280 px"
            toggle = browser.find_element(By.ID, "show-bookkeeping")
            toggle.click()
            shown = _visible_headings(table)
            assert shown[1:len(headline) + 1] == headline and {"n_out_of_scale", "pearson", "kendall"} <= set(shown)
            toggle.click()
            assert _visible_headings(table)[1:] == headline
    finally:
        browser.set_window_size(1400, 1000)
