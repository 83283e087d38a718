"""report.html and compare.html driven in a real headless chromium (filter, open an item, screenshot), from runs
scored on hand-written predictions.

The tests of this subject that start a browser; the others are in tests/unit/test_report_html.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.browser import browser  # noqa: F401  (the fixture)


# -------------------------------------------------------------------------------------------- in a browser


def _open(driver, path: Path):
    """Load ``path`` and check that page.js finished: its script is inline at the end of the body and sets
    ``data-ready`` synchronously while the page is parsed (no timer, no event), and ``driver.get`` returns after the
    load event, so the flag is set by then or never (the script stopped on an error)."""
    driver.get(path.as_uri())
    assert driver.execute_script("return document.body.dataset.ready") == "1", f"page.js did not finish on {path.name}"


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
    heading = table.find_element(By.CSS_SELECTOR, 'th[data-key="mae"]')
    assert heading.get_attribute("title").startswith("mean absolute error of the judge's score against the experts'")
    column = [h.get_attribute("data-key") for h in table.find_elements(By.TAG_NAME, "th")].index("mae") + 1

    def maes() -> list[float]:
        cells = table.find_elements(By.CSS_SELECTOR, f"tbody tr:not(.overall) td:nth-child({column})")
        return [float(td.get_attribute("data-v")) for td in cells if td.get_attribute("data-v")]

    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", heading)  # clear of the sticky nav
    heading.click()
    assert maes() == sorted(maes(), reverse=True) and len(set(maes())) > 1
    heading.click()
    assert maes() == sorted(maes())
    assert table.find_elements(By.CSS_SELECTOR, "tbody tr")[-1].get_attribute("class") == "overall"
    assert heading.get_attribute("aria-sort") == "ascending"
    # The keyboard does what the mouse does: a heading takes the focus and sorts with Enter, an item row opens with
    # Enter and closes with Space (the first item is open from above: Enter closes it, Space opens it again).
    from selenium.webdriver.common.keys import Keys

    assert heading.get_attribute("tabindex") == "0"
    heading.send_keys(Keys.ENTER)
    assert maes() == sorted(maes(), reverse=True) and heading.get_attribute("aria-sort") == "descending"
    item = browser.find_element(By.CSS_SELECTOR, "#items tr.item")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].focus()", item)
    assert browser.switch_to.active_element == item
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")) == 1
    item.send_keys(Keys.ENTER)
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")
    item.send_keys(Keys.SPACE)
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")) == 1


def test_compare_page_in_chromium_shows_both_judges(browser, scored, tmp_path):  # noqa: F811
    """compare.html lists the items where the judges differ most; one opens to both judges' feedback. Its overall
    paired cells each make a call: 12 paired items are too few (``MIN_PAIRED``), and the cell says so."""
    from selenium.webdriver.common.by import By

    from eval.scoring.compare import MIN_PAIRED

    _open(browser, scored["root"] / "cmp" / "compare.html")
    # The call is the cell's last span (the interval and p are in span.ci); the subtitle's words never match here.
    calls = [span.text for span in browser.find_elements(By.CSS_SELECTOR, "#paired-0-all-overall td > span:not(.ci)")]
    assert calls and all(call == f"n.s. (under {MIN_PAIRED} paired items: too few to call)" for call in calls), calls
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


def _visible_headings(table) -> list[str]:
    from selenium.webdriver.common.by import By

    return [h.get_attribute("data-key") or h.text for h in table.find_elements(By.TAG_NAME, "th") if h.is_displayed()]


def _fits(driver, table) -> bool:
    """The table needs no sideways scrolling: it is no wider than its scroll box, which is no wider than the page."""
    return driver.execute_script(
        "const t = arguments[0], box = t.parentElement;"
        "return t.scrollWidth <= box.clientWidth && box.scrollWidth <= box.clientWidth"
        " && document.documentElement.scrollWidth <= window.innerWidth;", table)


def test_summary_tables_lead_with_the_headline_and_fit_1280_pixels(browser, scored):  # noqa: F811
    """At 1280 px: report.html's summary and compare.html's side-by-side tables show n, failed, the items MAE is
    over, MAE, Spearman, VC judge / experts (and the Experts VC over all labelled items) and need no sideways
    scrolling; the switch in the nav shows the bookkeeping columns (out of scale, Pearson, ...) and hides them
    again."""
    from selenium.webdriver.common.by import By

    headline = ["n", "n_failed", "n_scored", "mae", "spearman", "vc_judge", "vc_experts", "vc_experts_labelled"]
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


def _sideways(driver) -> list[str]:
    """What makes the page scroll sideways: the page's width past the window's, and each plot or table wider than
    the box that shows it (a table in a scroll box may be wider than the page; the box then scrolls, not the page)."""
    return driver.execute_script(
        "const out = [], root = document.documentElement;"
        "if (root.scrollWidth > root.clientWidth) out.push('page ' + root.scrollWidth + ' > ' + root.clientWidth);"
        "for (const e of document.querySelectorAll('main svg, main table')) {"
        "  let box = e.parentElement;"
        "  while (box !== document.body && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;"
        "  const right = Math.round(e.getBoundingClientRect().right);"
        "  if (box === document.body && right > root.clientWidth)"
        "    out.push(e.tagName + '#' + e.id + ' ends at ' + right);"
        "}"
        "return out;")


@pytest.mark.parametrize("width", [390, 1440])
def test_pages_need_no_sideways_scrolling_on_a_phone_or_a_desktop(browser, scored, width):  # noqa: F811
    """At 390 px (a phone) and 1440 px: report.html and compare.html, their item list shown and an item opened, do
    not scroll sideways; a plot shrinks to the page and a wide table scrolls in its own box. The MAE plot, 880
    pixels wide, and the item list, outside any scroll box, ran past a phone's screen and cut off their right ends."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(width, 900)
    try:
        for page in ("exact/report.html", "cmp/compare.html"):
            _open(browser, scored["root"] / page)
            assert browser.find_elements(By.CSS_SELECTOR, "#items tr.item")
            browser.execute_script("document.querySelector('#items tr.item').click()")
            assert browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")
            assert _sideways(browser) == [], f"{page} at {width} px"
            for plot in browser.find_elements(By.CSS_SELECTOR, "svg.mae-plot"):
                assert plot.size["width"] <= browser.execute_script("return arguments[0].parentElement.clientWidth",
                                                                    plot)
    finally:
        browser.set_window_size(1400, 1000)


def test_the_sticky_nav_stays_one_line_on_a_phone_and_scrolls_sideways_in_its_own_box(browser, scored):  # noqa: F811
    """At 390 px the nav of report.html and compare.html (its links and the bookkeeping switch) is one line, as tall
    as at 1440 px, and scrolls sideways in its own box: wrapped, it was four lines, a fifth of a phone's screen
    covering every section the reader scrolled to. Its last link is still reached by scrolling the nav."""
    # the children's tops (a link and the smaller switch, centred, differ by a pixel; a wrapped line by twenty), and
    # the nav's height less its own sideways scrollbar's (classic in headless chromium, an overlay on a phone)
    script = ("const nav = document.querySelector('nav'), tops = Array.from(nav.children).map("
              "  k => k.getBoundingClientRect().top);"
              "return {height: nav.getBoundingClientRect().height - (nav.offsetHeight - nav.clientHeight),"
              "        spread: Math.max(...tops) - Math.min(...tops), overflow: getComputedStyle(nav).overflowX,"
              "        page: [document.documentElement.scrollWidth, document.documentElement.clientWidth]};")
    try:
        for page in ("exact/report.html", "cmp/compare.html"):
            browser.set_window_size(1440, 900)
            _open(browser, scored["root"] / page)
            wide = browser.execute_script(script)
            browser.set_window_size(390, 900)
            _open(browser, scored["root"] / page)
            narrow = browser.execute_script(script)
            assert narrow["spread"] < 5 and narrow["height"] <= wide["height"] + 1, (page, narrow, wide)
            assert narrow["overflow"] == "auto" and narrow["page"][0] <= narrow["page"][1], (page, narrow)
            assert browser.execute_script(
                "const nav = document.querySelector('nav'), last = nav.lastElementChild;"
                "nav.scrollLeft = nav.scrollWidth;"
                "return last.getBoundingClientRect().right <= nav.getBoundingClientRect().right + 1;"), page
    finally:
        browser.set_window_size(1400, 1000)


def _with_explorer_data(page: Path, out: Path, change) -> Path:
    """A copy of ``page`` whose explorer data went through ``change`` (the page escapes "<" in it, as it is written)."""
    import json
    import re

    text = page.read_text(encoding="utf-8")
    pattern = r'(<script type="application/json" id="explorer-data">)(.*?)(</script>)'
    data = json.loads(re.search(pattern, text, re.S).group(2))
    change(data)
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    out.write_text(re.sub(pattern, lambda m: m.group(1) + payload + m.group(3), text, count=1, flags=re.S),
                   encoding="utf-8")
    return out


def test_page_escapes_a_status_label_and_labels_each_judge_once(browser, scored, tmp_path):  # noqa: F811
    """A status label holding markup (written into the page's data by hand) is shown as text and adds no element or
    class; an opened item heads each verdict with the judge's label as the data gives it, not prefixed again."""
    from selenium.webdriver.common.by import By

    crafted = '"><img/src=x/onerror=window.__xss=1>'

    def craft(data):
        next(f for f in data["filters"] if f["key"] == "status")["values"][0] = crafted

    _open(browser, _with_explorer_data(scored["root"] / "cmp" / "compare.html", tmp_path / "crafted.html", craft))
    assert browser.execute_script("return document.querySelectorAll('#items img').length") == 0
    badges = browser.find_elements(By.CSS_SELECTOR, "#items span.badge")
    assert crafted in [b.text for b in badges]
    assert all(b.get_attribute("class") in ("badge", "badge unknown") for b in badges)
    browser.find_element(By.CSS_SELECTOR, "#items tr.item").click()
    headings = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "tr.detail-row h5")]
    assert [h.split(" — ")[0] for h in headings if " — score" in h] == ["baseline: exact", "run: lenient"]
    assert browser.execute_script("return window.__xss") is None


@pytest.fixture(scope="module")
def browser_without_scripts():
    """A headless chromium that runs no JavaScript: what a reader with scripts off, or a mail client's preview, sees."""
    from tests.support.browser import chromium

    with chromium(prefs={"profile.managed_default_content_settings.javascript": 2}) as driver:
        yield driver


def test_pages_read_with_javascript_off(browser_without_scripts, scored):
    """With scripts off, report.html and compare.html still give their headline sentence and their tables (written
    as HTML, not by page.js), and the item list, which page.js draws, says where the items are instead of leaving
    an empty section under "Click an item to open it"."""
    from selenium.webdriver.common.by import By

    driver = browser_without_scripts
    for page, table_id, where in (("exact/report.html", "summary-table", "items.parquet"),
                                  ("cmp/compare.html", "side-all", "items.parquet")):
        driver.get((scored["root"] / page).as_uri())
        assert driver.execute_script("return document.body.dataset.ready") is None  # page.js did not run
        table = driver.find_element(By.ID, table_id)
        assert table.is_displayed() and "MAE" in table.text and len(table.find_elements(By.TAG_NAME, "tr")) >= 2
        assert driver.find_element(By.CSS_SELECTOR, "main p, main li").text  # the first sentence under the title
        notes = driver.find_elements(By.CSS_SELECTOR, "noscript > p.warn")
        assert [n.is_displayed() for n in notes] == [True], page
        assert "JavaScript" in notes[0].text and where in notes[0].text, page


def test_the_bookkeeping_switch_shows_its_columns_with_javascript_off(browser_without_scripts, scored):
    """The switch in the nav is drawn whatever the browser runs: with scripts off, ticking it shows the bookkeeping
    columns (the items without a prediction, the failures by kind, the in-scale figures) from the stylesheet alone,
    on both pages; unticked they stay hidden."""
    from selenium.webdriver.common.by import By

    driver = browser_without_scripts
    for page, table_id in (("exact/report.html", "summary-table"), ("cmp/compare.html", "side-all")):
        driver.get((scored["root"] / page).as_uri())
        assert driver.execute_script("return document.body.dataset.ready") is None  # page.js did not run
        heading = driver.find_element(By.CSS_SELECTOR, f'#{table_id} th[data-key="n_missing"]')
        switch = driver.find_element(By.ID, "show-bookkeeping")
        assert not heading.is_displayed() and not switch.is_selected(), page
        switch.click()
        assert switch.is_selected() and heading.is_displayed(), page
        cells = driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody td.book")
        assert cells and all(cell.is_displayed() for cell in cells), page
        switch.click()
        assert not heading.is_displayed(), page


# Markup in every text a page shows: a script element (and the end tag of the one holding the page's data), an
# element with a handler, a javascript: URL, a comment's start, a style element, U+2028 / U+2029. Each would set
# window.__pwned (or hide the page) if it became markup.
HOSTILE = ('</script><script>window.__pwned=1</script> "><img src=x onerror="window.__pwned=2"> '
           "<a href=\"javascript:window.__pwned=3\">link</a> <!-- <script> \u2028L\u2029P "
           "<style>body{display:none}</style> 'x")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict:
    """report.html and compare.html of two runs on 6 sample records whose every text (id, instruction, answer,
    reference, rubric, criterion, evaluated model, experts' comments, the judge's name, feedback, raw output, error,
    reason) is ``HOSTILE`` followed by its own."""
    import dataclasses
    import json

    import judge
    from eval.cli import main

    root = tmp_path_factory.mktemp("hostile-pages")
    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:6]
    records = [dataclasses.replace(r, id=HOSTILE + str(r.id), instruction=HOSTILE + r.instruction, answer=HOSTILE,
                                   reference_answer=HOSTILE, criteria_name=HOSTILE + r.criteria_name,
                                   rubrics=HOSTILE + r.rubrics, model_id=HOSTILE + r.model_id,
                                   expert_feedback=[HOSTILE] * len(r.expert_scores), annotations=())
               for r in records]
    judge.write_jsonl(records, root / "data.jsonl")
    runs = []
    for name, offset in (("a", 0), ("b", 1)):
        run = root / name
        run.mkdir()
        rows = [{"id": r.id, "judge": HOSTILE + name, "raw_output": HOSTILE, "feedback": HOSTILE,
                 "score": max(r.expert_scores) - (offset if k % 2 else 0), "parse_ok": True, "error": None,
                 "reason": "", "score_source": "verdict", "latency_s": 0.1, "confidence": 0.5,
                 "score_probs": {HOSTILE: 0.5, "1": 0.5}} for k, r in enumerate(records)]
        rows[3].update(score=None, parse_ok=False, feedback="", error=HOSTILE, reason=HOSTILE)
        (run / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                               encoding="utf-8")
        assert main(["score", "--predictions", str(run), "--data", str(root / "data.jsonl"), "--n-boot", "20",
                     "--no-plots"]) == 0
        runs.append(run)
    assert main(["compare", *map(str, runs), "--out", str(root / "cmp"), "--n-boot", "20"]) == 0
    return {"report": runs[1] / "report.html", "compare": root / "cmp" / "compare.html", "n": len(records)}


@pytest.mark.parametrize("kind", ["report", "compare"])
def test_hostile_texts_run_nothing_and_show_as_text_with_every_item_open(browser, hostile, kind):  # noqa: F811
    """Every item opened (page.js writes its texts into the page then): window.__pwned stays undefined, no element
    came from the data (no img, no link, one style element, page.js the one script that runs), the texts show
    literally, and the page fetched nothing (offline: no resource requested, no src or external href)."""
    from selenium.webdriver.common.by import By

    _open(browser, hostile[kind])
    rows = browser.find_elements(By.CSS_SELECTOR, "#items tr.item")
    assert len(rows) == hostile["n"]
    for k in range(len(rows)):
        row = browser.find_elements(By.CSS_SELECTOR, "#items tr.item")[k]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        row.click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.detail-row")) == hostile["n"]
    assert browser.execute_script("return window.__pwned") is None
    counts = browser.execute_script(
        "return [document.images.length, document.querySelectorAll('a[href^=\"javascript\"], iframe, object').length,"
        " document.querySelectorAll('style').length, document.querySelectorAll('script:not([type])').length,"
        " document.querySelectorAll('[src], link[href]').length, performance.getEntriesByType('resource').length]")
    assert counts == [0, 0, 1, 1, 0, 0]
    body = browser.find_element(By.TAG_NAME, "body")
    assert body.is_displayed()
    text = body.text
    for shown in ("<script>window.__pwned=1</script>", 'onerror="window.__pwned=2"', "javascript:window.__pwned=3",
                  "<!-- <script>", "<style>body{display:none}</style>"):
        assert shown in text, shown
    # Every link on the page goes to a place on it.
    hrefs = browser.execute_script("return Array.from(document.querySelectorAll('a[href]'), a => a.href.baseVal"
                                   " ?? a.getAttribute('href'))")
    assert hrefs and all(h.startswith("#") for h in hrefs)


def test_a_rubric_of_eleven_levels_confusion_table_scrolls_in_its_box_on_a_phone(browser, tmp_path):  # noqa: F811
    """A 0..10 rubric's confusion table (12 columns) at 390 px: the page does not scroll sideways, the table's own
    box does (it ran past the phone's screen, the panel as wide as its table). The page holds the report's CSS and
    its panels as the Plots section writes them."""
    from eval.reports.html_report import _asset, _confusion_html
    from judge.metrics_json.metrics import Confusion

    levels = [float(v) for v in range(11)]
    panels = "".join(_confusion_html(title, Confusion(levels, [[100] * 11 for _ in levels]))
                     for title in ("all task groups", "Креативные задачи"))
    page = tmp_path / "confusion.html"
    page.write_text(f'<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-'
                    f'width"><style>{_asset("page.css")}</style></head><body><main><div class="panels">{panels}'
                    f'</div></main></body></html>', encoding="utf-8")
    browser.set_window_size(390, 900)
    try:
        browser.get(page.as_uri())
        assert _sideways(browser) == []
        widths = browser.execute_script("const t = document.querySelector('table.confusion');"
                                        "return [t.scrollWidth, t.parentElement.clientWidth];")
        assert widths[0] > widths[1], widths  # wider than its box, which scrolls: the case this test is about
    finally:
        browser.set_window_size(1400, 1000)
