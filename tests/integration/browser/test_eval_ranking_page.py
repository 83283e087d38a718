"""The bench's report.html in a real browser: the matrix as a heat map, intervals and failure marks visible."""

from __future__ import annotations

from pathlib import Path

from eval.cli import main
from tests.support.browser import browser  # noqa: F401  (the fixture)
from tests.support.release_instructions import write_instructions_dataset
from tests.support.eval_ranking import (Candidate, Judge, scores_by_output, GEN, LITERACY, SAFE, TECH, rank_argv,
                                        instruction_rows)


def test_ranking_report_heat_map_in_chromium(browser, tmp_path: Path) -> None:  # noqa: F811
    """Cells show value and interval, are coloured by value (0 white, higher bluer), and a cell with an unparsed
    verdict is outlined and says so."""
    from selenium.webdriver.common.by import By

    data = write_instructions_dataset(tmp_path / "POLLUX-instructions", instruction_rows())
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "bench")) == 0
    browser.get((tmp_path / "bench" / "report.html").as_uri())
    table = browser.find_element(By.CSS_SELECTOR, "table.heat")
    header = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert header == ["criteria_name", GEN, TECH, "mean_over_meta"]
    rows = {tr.find_element(By.TAG_NAME, "td").text: tr.find_elements(By.TAG_NAME, "td")[1:]
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")}

    def background(cell) -> str:
        return cell.value_of_css_property("background-color")

    assert background(rows[SAFE][0]) == "rgba(255, 255, 255, 1)"  # 0: white
    literacy_gen, literacy_tech = rows[LITERACY][0], rows[LITERACY][1]
    assert literacy_gen.text.startswith("0.500") and "n 2" in literacy_gen.text
    assert background(literacy_gen) not in ("rgba(255, 255, 255, 1)", "rgba(0, 0, 0, 0)")
    # 1/3 is paler than 1/2: more red in the white-to-blue ramp.
    assert int(background(literacy_tech).split("(")[1].split(",")[0]) > int(background(literacy_gen).split("(")[1].split(",")[0])
    assert "unparsed 1" in literacy_tech.text and "fail" in literacy_tech.get_attribute("class")


def test_a_long_model_name_and_data_path_wrap_on_a_phone(browser, tmp_path: Path) -> None:  # noqa: F811
    """At 390 px a candidate's name and a data path with nowhere to break a line (a local checkpoint's folder name,
    a cluster's scratch path) wrap in the page's header instead of running past the screen: the page does not
    scroll sideways, and the name is all there to read. Such a word did not break, and the title ran off the
    screen."""
    from selenium.webdriver.common.by import By

    from eval.ranking.matrix import RankedItem, pollux_matrix
    from eval.ranking.report import write_ranking_page

    model = "checkpoints_qwen2.5_72b_instruct_pollux_sft_dpo_lr2e5_epoch3_merged_gptq_int4"
    data = "/scratch/someone/projects/pollux-judge/data/POLLUX-instructions/test_with_reference_answers.jsonl"
    items = [RankedItem(1, GEN, LITERACY, (0, 1, 2), 1.0), RankedItem(2, GEN, LITERACY, (0, 1, 2), 2.0)]
    counts = {"n_instructions": 2, "n_items": 2, "n_answer_failed": 0, "n_cut_in_thinking": 0, "n_finish_length": 0,
              "n_no_answer": 0, "n_empty_answer": 0, "n_no_prediction": 0}
    result = {"model": model, "judge": "j", "data": data, "counts": counts,
              "matrix": pollux_matrix(items, normalize="minmax", n_boot=0).to_json()}
    (tmp_path / "rank").mkdir()
    page = write_ranking_page(result, tmp_path / "rank")
    browser.set_window_size(390, 900)
    try:
        browser.get(page.as_uri())
        assert browser.execute_script("return document.documentElement.scrollWidth <= "
                                      "document.documentElement.clientWidth"), "the page scrolls sideways at 390 px"
        header = browser.find_element(By.TAG_NAME, "header").text.replace("\n", "")
        assert model in header and data in header
    finally:
        browser.set_window_size(1400, 1000)


def test_hostile_names_on_the_ranking_page_run_nothing_and_show_as_text(browser, tmp_path: Path) -> None:  # noqa: F811
    """A candidate, judge, data path, task group and criterion named with a script, a handler, a javascript: link, a
    comment's start and a style element: window.__pwned stays undefined, the page holds no element from them and
    requests nothing, and the names show literally (cut as the page cuts names)."""
    from selenium.webdriver.common.by import By

    from eval.ranking.matrix import RankedItem, pollux_matrix
    from eval.ranking.report import write_ranking_page

    hostile = ('</script><script>window.__pwned=1</script> "><img src=x onerror="window.__pwned=2"> '
               '<a href="javascript:window.__pwned=3">l</a> <!-- <style>body{display:none}</style>')
    items = [RankedItem(1, hostile + "g", hostile + "c", (0, 1, 2), 1.0),
             RankedItem(2, hostile + "g", hostile + "c", (0, 1, 2), 2.0)]
    counts = {"n_instructions": 2, "n_items": 2, "n_answer_failed": 0, "n_cut_in_thinking": 0, "n_finish_length": 0,
              "n_no_answer": 0, "n_empty_answer": 0, "n_no_prediction": 0}
    result = {"model": hostile + "m", "judge": hostile + "j", "data": hostile + "d", "counts": counts,
              "matrix": pollux_matrix(items, normalize="minmax", n_boot=0).to_json()}
    (tmp_path / "rank").mkdir()
    browser.get(write_ranking_page(result, tmp_path / "rank").as_uri())
    assert browser.execute_script("return window.__pwned") is None
    assert browser.execute_script(
        "return [document.images.length, document.scripts.length, document.querySelectorAll('a, style').length,"
        " performance.getEntriesByType('resource').length]") == [0, 0, 1, 0]
    body = browser.find_element(By.TAG_NAME, "body")
    assert body.is_displayed()
    for name in ("m", "j", "d", "g", "c"):
        assert hostile + name in body.text, name
