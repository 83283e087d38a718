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
