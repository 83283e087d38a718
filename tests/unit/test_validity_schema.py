"""The typed validity section (judge.metrics_json.validity): what `score` writes reads back to the same bytes with named
and unnamed experts, each figure's kinds (computed, not computable, not computed and why) read as their types, older
and later files read, and a broken section is named in its error."""

from __future__ import annotations

import json

import pytest

import judge
from eval.reports.report import markdown_table, md_text
from eval.scoring import item_table
from judge.metrics_json.metrics import Metrics
from eval.scoring.score import score
from eval.validity.alt_test import AltTestSettings
from eval.validity.render import markdown_lines
from judge.metrics_json.validity import (AltTest, AltTestFamily, LengthBias, NamedExpertSlopes, PooledExpertSlopes,
                                         Unavailable, Validity, ValidityCell)


def _score(tmp_path, *, named: bool) -> tuple[str, Metrics]:
    rows = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]
    if not named:
        for row in rows:
            row.pop("expert_ids", None)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with (tmp_path / "predictions.jsonl").open("w", encoding="utf-8") as handle:
        for k, row in enumerate(rows):  # the first expert's score, one above it on every fourth item
            value = min(float(row["expert_scores"][0]) + (k % 4 == 0), 2.0)
            handle.write(json.dumps({"id": row["id"], "judge": "hand", "raw_output": f"[RESULT] {value:g} [END]",
                                     "feedback": "", "score": value, "parse_ok": True, "error": None,
                                     "score_source": "verdict", "latency_s": 0.0}) + "\n")
    out = tmp_path / "run"
    score(tmp_path / "predictions.jsonl", data, out, n_boot=20)
    text = (out / "metrics.json").read_text(encoding="utf-8")
    return text, Metrics.from_json(json.loads(text))


@pytest.mark.parametrize("named", [True, False])
def test_the_section_reads_back_to_the_same_bytes(tmp_path, named):
    """metrics.json read into the types and written again is the same bytes; the figures are the file's values."""
    text, metrics = _score(tmp_path, named=named)
    assert item_table.dumps(metrics) + "\n" == text
    raw = json.loads(text)["validity"]
    validity = metrics.validity
    assert isinstance(validity, Validity) and validity.named_experts is named
    assert validity.settings.alt_test == AltTestSettings() and validity.settings.target == raw["settings"]["target"]
    overall, raw_overall = validity.splits["all"].overall, raw["splits"]["all"]["overall"]
    assert overall.ceiling.gap == raw_overall["ceiling"]["gap"]
    # the typed new fields: failures counted in items beside pairs, kappa's left-out pairs, the ceiling's rule
    assert overall.ceiling.n_items_judge_failed == raw_overall["ceiling"]["n_items_judge_failed"] == 0
    # the hand judge's "one above" reaches 2 on five items of the 0-1 criteria (4 of "Работоспособность", 1 of "Ответа
    # нет, но есть заглушка цензора?", each with a unique mode): off the scale, out of kappa, counted here
    assert overall.agreement.n_kappa_off_domain == raw_overall["agreement"]["n_kappa_off_domain"] == 5
    assert overall.agreement.n_items_judge_failed == raw_overall["agreement"]["n_items_judge_failed"] == 0
    assert validity.settings.ceiling_failures == raw["settings"]["ceiling_failures"] == "worst"
    assert overall.alpha_with_judge == raw_overall["alpha_with_judge"] == raw_overall["agreement"]["alpha_with_judge"]
    assert overall.leniency.mean_signed_error > 0  # the judge is one above the first expert on every fourth item
    assert validity.splits["all"].sentence == raw["splits"]["all"]["sentence"]
    task_type = next(iter(validity.splits["all"].by_task_type.values()))
    assert task_type.agreement is None and task_type.alpha_experts is None and task_type.length_bias is None
    if named:
        assert isinstance(overall.alt_test, AltTest) and overall.alt_test.available is True
        assert overall.alt_test.n_experts_tested == len(raw_overall["alt_test"]["experts"]) > 0
        assert overall.alt_test.experts[0].expert == raw_overall["alt_test"]["experts"][0]["expert"]
        assert isinstance(overall.length_bias.experts, NamedExpertSlopes)
        assert all(isinstance(f, AltTestFamily) for f in validity.splits["all"].alt_test_domains.values())
    else:
        assert isinstance(overall.alt_test, Unavailable) and "names no experts" in overall.alt_test.why
        assert isinstance(overall.length_bias, LengthBias)
        assert isinstance(overall.length_bias.experts, PooledExpertSlopes)
        assert all(isinstance(f, Unavailable) for f in validity.splits["all"].alt_test_domains.values())


def _cell(**changes) -> dict:
    cell = {"n_items": 2, "value_domain": [0.0, 1.0],
            "ceiling": {"reference": "mode", "n_judge_failed": 0, "n_items": 0, "n_pairs": 0, "expert_mae": None,
                        "judge_mae": None, "gap": None, "gap_ci": [None, None], "expert_kappa": None,
                        "judge_kappa": None, "verdict": None},
            "leniency": {"n": 0, "mean_signed_error": None, "ci": [None, None], "direction": "neither"},
            "alt_test": {"n_experts_tested": 0, "passed": None}}
    return {**cell, **changes}


def test_an_older_domain_result_reads_as_the_empty_result():
    """A criterion's alt-test written in the short form of older files reads with the empty result's defaults (no
    expert tested, passed None), and is written in full."""
    cell = ValidityCell.from_json(_cell())
    assert isinstance(cell.alt_test, AltTest)
    # a ceiling written before failures were counted in items: None, and not written back
    assert cell.ceiling.n_items_judge_failed is None and "n_items_judge_failed" not in cell.to_json()["ceiling"]
    assert (cell.alt_test.n_experts_tested, cell.alt_test.passed, cell.alt_test.experts) == (0, None, [])
    assert cell.to_json()["alt_test"] == {"n_experts_tested": 0, "n_experts_rejected": 0, "winning_rate": None,
                                          "advantage_probability": None, "passed": None, "experts": [],
                                          "untested": []}


def test_a_length_bias_not_computed_says_why_and_later_keys_are_kept():
    """``{"why": ...}`` reads as Unavailable; a key a later version adds to a cell is kept and written back last."""
    data = _cell(length_bias={"why": "the answers' lengths are unknown"}, later_figure={"x": 1})
    cell = ValidityCell.from_json(data)
    assert isinstance(cell.length_bias, Unavailable) and cell.length_bias.why == "the answers' lengths are unknown"
    assert cell.extra == {"later_figure": {"x": 1}}
    written = cell.to_json()
    assert list(written)[-1] == "later_figure" and written["length_bias"] == {"why": "the answers' lengths are unknown"}


def test_a_broken_section_is_named_in_the_error():
    ceiling = dict(_cell()["ceiling"])
    del ceiling["gap"]
    with pytest.raises(ValueError, match=r"metrics.json's validity section: Ceiling has no 'gap'"):
        ValidityCell.from_json(_cell(ceiling=ceiling))
    with pytest.raises(ValueError, match=r"validity section: Leniency should be a JSON object, not a list"):
        ValidityCell.from_json(_cell(leniency=[0.1]))


def test_the_report_reads_the_types(tmp_path):
    """The report's validity tables come from the attributes: a cell's alt-test without a tested expert shows "—"
    and the unnamed data's lead says why there is no alt-test."""
    _text, metrics = _score(tmp_path, named=False)
    lines = "\n".join(markdown_lines(metrics, markdown_table, md_text))
    assert "The data names no experts (`expert_ids`)" in lines
    assert metrics.validity.splits["all"].sentence in lines
    # every criterion's alt-test column (the last) reads "—" without named experts
    rows = [line.rstrip() for line in lines.splitlines() if line.startswith("| ")]
    assert [row for row in rows if row.endswith("| — |")]


@pytest.mark.parametrize("field, value, allowed", [("target", "median", "mode, mean"),
                                                   ("ceiling_failures", "maybe", "worst, drop")])
def test_a_settings_value_the_section_has_no_rule_for_is_named_when_read(field, value, allowed):
    """The section's target and ceiling_failures are checked where the file is read, naming the field: a target of
    "median" had failed only once used, naming neither file nor field, and a ceiling_failures of "maybe" read as
    drop. A file written before ceiling_failures (absent, or null) still reads."""
    settings = {"alt_test": {}, "n_boot": 20, "alpha_boot": 100, "seed": 0, "level": 0.95, "target": "mode",
                "ceiling_failures": "worst"}
    section = {"settings": settings, "named_experts": False, "splits": {}}
    assert Validity.from_json(section).settings.ceiling_failures == "worst"
    assert Validity.from_json({**section, "settings": {**settings, "ceiling_failures": None}}).settings.target == "mode"
    with pytest.raises(ValueError) as caught:
        Validity.from_json({**section, "settings": {**settings, field: value}})
    assert caught.value.field == f"settings.{field}"  # the file's caller puts it beside the file's path
    assert str(caught.value) == (f"metrics.json's validity section: SectionSettings.{field} is not readable "
                                 f"({value!r} is none of {allowed})")


@pytest.mark.parametrize("path, value, shown", [
    (("ceiling", "n_pairs"), "40", "a string '40'"), (("n_items",), 120.5, "a number 120.5"),
    (("leniency", "n"), True, "true"), (("ceiling", "n_items_dropped"), -1, "-1")])
def test_a_count_of_the_section_is_read_as_a_whole_number(path, value, shown):
    """The section's counts were taken as they were, though metrics.json's other counts are checked as whole
    numbers: a count of "40" or 120.5 read as it was and failed, if at all, far from the file. Now each is refused
    where it is read, naming the field; an optional count written as null (a figure the writer did not have) reads
    as None, and the ints every writer wrote read as they are."""
    cell = _cell(ceiling={**_cell()["ceiling"], "n_items_dropped": None})
    assert ValidityCell.from_json(cell).ceiling.n_items_dropped is None
    assert ValidityCell.from_json(cell).ceiling.n_pairs == 0 and ValidityCell.from_json(cell).n_items == 2
    broken = json.loads(json.dumps(cell))
    *above, key = path
    block = broken
    for name in above:
        block = block[name]
    block[key] = value
    with pytest.raises(ValueError) as caught:
        ValidityCell.from_json(broken)
    record = {"ceiling": "Ceiling", "leniency": "Leniency"}.get(path[0], "ValidityCell")
    assert caught.value.field == ".".join(path)
    whole = "whole number of 0 or more" if shown == "-1" else "whole number"
    assert str(caught.value) == (f"metrics.json's validity section: {record}.{key} is not readable "
                                 f"(expected a {whole}, got {shown})")


def test_the_alt_test_settings_counts_are_read_as_whole_numbers():
    settings = {"alt_test": {"min_items_per_expert": "30"}, "n_boot": 20, "alpha_boot": 100, "seed": 0,
                "level": 0.95, "target": "mode"}
    with pytest.raises(ValueError, match=r"AltTestSettings.min_items_per_expert is not readable \(expected a whole "
                                         r"number, got a string '30'\)"):
        Validity.from_json({"settings": settings, "named_experts": False, "splits": {}})
    with pytest.raises(ValueError, match=r"SectionSettings.n_boot is not readable \(expected a whole number, got "
                                         r"a number 20.5\)"):
        Validity.from_json({"settings": {**settings, "alt_test": {}, "n_boot": 20.5}, "named_experts": False,
                            "splits": {}})


@pytest.mark.parametrize("field, value, said", [
    ("scoring", None, "alt-test scoring must be one of neg_rmse, accuracy, got null"),
    ("scoring", "rmse", "alt-test scoring must be one of neg_rmse, accuracy, got 'rmse'"),
    ("failures", None, "alt-test failures must be one of loss, drop, got null"),
    ("failures", ["loss"], "alt-test failures must be one of loss, drop, got a list"),
    ("q", None, "alt-test q must lie in (0, 1), got null"),
    ("q", "0.05", "alt-test q must lie in (0, 1), got '0.05'"),
    ("epsilon", True, "alt-test epsilon must lie in [0, 1), got true"),
])  # fmt: skip
def test_an_alt_test_setting_read_as_null_says_null(field, value, said):
    """A metrics.json's alt-test setting that is no rule's is named in JSON's words: a null scoring or failures
    read "got None" (Python's), a null q or epsilon failed in the comparison itself ("'<' not supported between
    instances of 'int' and 'NoneType'")."""
    settings = {"alt_test": {field: value}, "n_boot": 20, "alpha_boot": 100, "seed": 0, "level": 0.95,
                "target": "mode"}
    with pytest.raises(ValueError) as caught:
        Validity.from_json({"settings": settings, "named_experts": False, "splits": {}})
    assert str(caught.value) == f"metrics.json's validity section: SectionSettings.alt_test is not readable ({said})"
    assert caught.value.field == "settings.alt_test"
