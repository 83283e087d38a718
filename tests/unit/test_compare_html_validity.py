"""compare.html's validity sections: compare.md's "Validity side by side" and "Validity, paired", from the same rows,
every figure as compare.md shows it. Two runs of the bundled sample (whose experts are named, so that the alternative
annotator test and the paired rho have figures), compared by ``judge-eval compare``."""

from __future__ import annotations

import html

import pytest

import judge
from eval.cli import main
from judge.splits import SPLIT_TITLES
from tests.unit.test_report_html_paper_tables import html_tables, markdown_table_after
from tests.unit.test_validity_report import _run


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-validity")
    records, data = judge.load_records(judge.sample_data_path()), judge.sample_data_path()
    runs = {"exact": _run(root, "exact", records, 0, data), "lenient": _run(root, "lenient", records, 1, data)}
    assert main(["compare", str(root / "exact"), str(root / "lenient"), "--out", str(root / "cmp"),
                 "--n-boot", "50"]) == 0
    return {"root": root, "runs": runs, "markdown": (root / "cmp" / "compare.md").read_text(encoding="utf-8"),
            "page": (root / "cmp" / "compare.html").read_text(encoding="utf-8")}


def test_compare_page_sets_validity_side_by_side_as_compare_md_does(compared):
    """Per split, the page's table holds compare.md's rows cell for cell (ω, ρ, the ceiling gap with its interval,
    α with the judge, leniency, the sentence), and its ρ is each run's metrics.json figure."""
    tables = html_tables(compared["page"])
    markdown = compared["markdown"].split("## Validity side by side")[1].split("\n## ")[0]
    splits = list(compared["runs"]["exact"]["validity"]["splits"])
    assert splits
    for k, split in enumerate(splits):
        shown = tables[f"validity-{k}"]
        assert shown == markdown_table_after(markdown, f"### {SPLIT_TITLES[split]}")
        # both judges are named "j": compare tells them apart by their folders
        assert [row[0] for row in shown[1:]] == ["j (exact)", "j (lenient)"]
        for row, name in zip(shown[1:], ("exact", "lenient")):
            alt = compared["runs"][name]["validity"]["splits"][split]["overall"]["alt_test"]
            assert row[2] == f"{alt['advantage_probability']:.3f}"


def test_compare_page_shows_the_paired_validity_as_compare_md_does(compared):
    """The paired rho and ceiling gap per split: baseline, run and the delta with its interval, as compare.md has
    them, and the sentence that says what they are against."""
    shown = html_tables(compared["page"])["validity-paired-table"]
    assert shown == markdown_table_after(compared["markdown"], "## Validity, paired")
    figures = {(row[1], row[2]) for row in shown[1:]}
    assert (SPLIT_TITLES["all"], "ρ (advantage probability)") in figures and len(shown) > 2
    assert all(row[3] != "—" for row in shown[1:])  # every figure computed on the sample, not left out
    exact = compared["runs"]["exact"]["validity"]["splits"]["all"]["overall"]["alt_test"]
    rho = next(row for row in shown if row[1:3] == [SPLIT_TITLES["all"], "ρ (advantage probability)"])
    assert rho[3] == f"{exact['advantage_probability']:.3f}"
    lines = compared["markdown"].splitlines()
    said = lines[lines.index("## Validity, paired") + 2]
    assert said.endswith("against j (exact).")
    note = compared["page"].split('id="validity-paired">')[1].split("</p>")[0]
    assert html.unescape(note.split('<p class="note">')[1]) == said


def test_compare_pages_validity_escapes_run_names_as_the_rest_of_the_page(compared):
    """A run name with markup and a bidirectional override: the validity tables show it as text, without the
    override (the page's own escaping, ``_e``), never as a tag."""
    import json
    from dataclasses import replace

    from eval.reports.html_report import render_compare_page
    from eval.scoring.comparison import Comparison

    result = Comparison.from_json(json.loads((compared["root"] / "cmp" / "compare.json").read_text(encoding="utf-8")))
    names = ["<img src=x onerror=alert(1)>\u202ea", "b</td>"]
    result = replace(result, baseline=names[0], runs=names,
                     comparisons=[replace(c, run=names[1]) for c in result.comparisons])
    page = render_compare_page(result, None)
    validity = page.split('<h2 id="validity">')[1].split('<h2 id="cmp-0">')[0]
    assert "<img" not in validity and "b</td>" not in validity and "\u202e" not in validity
    tables = html_tables(page)
    assert tables["validity-0"][1][0] == "<img src=x onerror=alert(1)>a"
    assert tables["validity-paired-table"][1][0] == "b</td>"


def test_the_side_by_side_leniency_is_signed_and_its_header_says_which_way(compared):
    """Leniency is a signed error (positive: more generous than the experts, negative: stricter; 0 is the experts'
    own), the one validity column where neither higher nor lower is better: its header says so, and its values carry
    their sign as the row's sentence writes it ("lenient overall (+0.16)"), where they read "0.160" beside
    "-0.016"."""
    markdown = compared["markdown"].split("## Validity side by side")[1].split("\n## ")[0]
    table = markdown_table_after(markdown, f"### {SPLIT_TITLES['all']}")
    assert table[0][5] == "leniency (+ lenient, − harsh; 0: as the experts)"
    for row, name in zip(table[1:], ("exact", "lenient")):
        value = compared["runs"][name]["validity"]["splits"]["all"]["overall"]["leniency"]["mean_signed_error"]
        assert row[5] == (f"{value:+.3f}" if round(value, 3) else "0.000")
    assert table[2][5].startswith("+")


def test_the_side_by_side_validity_figures_have_the_paired_tables_decimals(compared):
    """The baseline's ρ and ceiling gap read "0.97" and "-0.19 [-0.25, -0.14]" in the side-by-side table and
    "0.972" and "-0.191" in the paired table below it: the same figure at two precisions, and a paired delta of
    0.006 between two runs both shown "0.97". Both tables now write 3 decimals, as compare.md's metrics do."""
    markdown = compared["markdown"].split("## Validity side by side")[1].split("\n## ")[0]
    side = markdown_table_after(markdown, f"### {SPLIT_TITLES['all']}")
    paired = markdown_table_after(compared["markdown"], "## Validity, paired")
    rho = next(row for row in paired[1:] if row[1:3] == [SPLIT_TITLES["all"], "ρ (advantage probability)"])
    assert side[1][2] == rho[3] and side[2][2] == rho[4]
    for row in side[1:]:
        for cell in row[1:5]:
            value = cell.split(" [")[0]
            assert value == "—" or len(value.split(".")[1]) == 3, row


def test_compare_md_pairs_the_leniency_with_its_call_and_the_items_it_left_out(compared):
    """Per split a leniency row beside ρ and the ceiling gap: both runs' oriented mean signed errors over the items
    both scored on their scales (signed), the delta with its interval, and a note that leads with the call and says
    the items it is over and, in the tests that hold it, the failed one left out of both (each run fails on one item,
    the same one). The lenient run scores one level above the first expert on every third item: more lenient, called
    from 50 resamples over hundreds of items. compare.html's table is the same
    (``test_compare_page_shows_the_paired_validity_as_compare_md_does``)."""
    import json

    from eval.validity.render import PAIRED_LENIENCY

    paired = markdown_table_after(compared["markdown"], "## Validity, paired")
    stored = json.loads((compared["root"] / "cmp" / "compare.json").read_text(encoding="utf-8"))
    validity = stored["comparisons"][0]["validity"]
    rows = {row[1]: row for row in paired[1:] if row[2] == PAIRED_LENIENCY}
    assert set(rows) == {SPLIT_TITLES[split] for split in validity}
    for split, block in validity.items():
        figure, row = block["leniency"], rows[SPLIT_TITLES[split]]
        assert row[3] == (f"{figure['baseline']:+.3f}" if round(figure["baseline"], 3) else "0.000")
        assert row[4] == f"{figure['run']:+.3f}"
        assert row[5].startswith(f"{figure['delta']:+.3f} [")
        assert row[6].startswith(f"{figure['direction']}; over {figure['n']} items")
        failed = "(1 item failed on by either judge: left out of both)"
        assert figure["n_left_out_failed"] in (0, 1) and (failed in row[6]) == (figure["n_left_out_failed"] == 1)
        assert figure["direction"] == "more lenient" and figure["ci"][0] > 0 and figure["n_resamples"] == 50
        # both runs fail on the same item and neither answers off the scale: each paired leniency is the run's own
        for name, side in (("exact", "baseline"), ("lenient", "run")):
            own = compared["runs"][name]["validity"]["splits"][split]["overall"]["leniency"]
            assert figure[side] == pytest.approx(own["mean_signed_error"]) and figure["n"] == own["n"]
    assert validity["all"]["leniency"]["n_left_out_failed"] == 1  # the item both runs failed on
    lines = compared["markdown"].splitlines()
    assert "leniency, the judge's mean signed error" in lines[lines.index("## Validity, paired") + 2]


def _stored_comparison(compared, leniency):
    """compare.json as written, each split's paired leniency replaced by ``leniency(block)`` (None: dropped, as a
    compare.json written before the paired leniency has none)."""
    import json

    from eval.scoring.comparison import Comparison

    stored = json.loads((compared["root"] / "cmp" / "compare.json").read_text(encoding="utf-8"))
    for block in stored["comparisons"][0]["validity"].values():
        replaced = leniency(block.pop("leniency"))
        if replaced is not None:
            block["leniency"] = replaced
    return Comparison.from_json(stored)


def test_a_paired_leniency_not_called_for_too_few_resamples_says_so(compared):
    """An interval clear of 0 read off 20 resamples is no call: "n.s." with why, as compare's decision says of a
    call too few resamples make."""
    from eval.reports.report import markdown_table
    from eval.validity.render import PAIRED_LENIENCY, paired_rows

    result = _stored_comparison(compared, lambda figure: {**figure, "direction": "n.s.", "n_resamples": 20})
    table = markdown_table_after("\n".join(paired_rows(result, markdown_table)), "## Validity, paired")
    row = next(row for row in table if row[1:3] == [SPLIT_TITLES["all"], PAIRED_LENIENCY])
    assert row[6].startswith("n.s. (too few to call: 20 resamples, under the 41 a call needs); over 340 items")


def test_a_compare_json_written_before_the_paired_leniency_renders_without_it(compared):
    from eval.reports.report import markdown_table
    from eval.validity.render import PAIRED_LENIENCY, paired_rows

    result = _stored_comparison(compared, lambda figure: None)
    assert all(paired.leniency is None for paired in result.comparisons[0].validity.values())
    lines = paired_rows(result, markdown_table)
    table = markdown_table_after("\n".join(lines), "## Validity, paired")
    assert len(table) > 1 and not any(row[2] == PAIRED_LENIENCY for row in table)
    assert "leniency" not in lines[2]
