"""The pages' item explorer data (``eval.reports.html_explorer``): which verdict an item opens to when score left its
prediction out or the data lacks its texts, compare.html's judge labels with three runs, and the texts' byte budget
as the page writes them.

The pages themselves (tables, escaping, the files a metrics.json names) are tests/unit/test_report_html.py's.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

import judge
from eval.reports.html_explorer import compare_items, report_items
from tests.unit.test_report_html import _items  # items.parquet's columns: judge k % 3, reference 0


def _records(n: int, answer=lambda k: "a") -> list:
    return [judge.JudgeRecord(id=f"i{k}", instruction=f"x{k}", answer=answer(k), criteria_name="c", rubrics="r",
                              expert_scores=(0.0, 0.0, 1.0)) for k in range(n)]


def _predictions(n: int) -> list[dict]:
    return [{"id": f"i{k}", "feedback": f"fb {k}", "score": float(k % 3)} for k in range(n)]


def _by_id(data: dict) -> dict:
    """Each row's detail by id (None for a row without one)."""
    return {row[0]: data["details"][row[6]] if row[6] >= 0 else None for row in data["rows"]}


# ----------------------------------------------------------------------- verdicts of items without a prediction


def test_an_item_counted_missing_opens_to_no_verdict_though_the_predictions_hold_one():
    """items.parquet says i1 has no prediction (score left its row out): the row the predictions still hold for it
    is not shown as its verdict; i0's is."""
    data = report_items(_items(2, status=["ok", "missing"]), _records(2), _predictions(2), "j", "mode")
    details = _by_id(data)
    assert details["i0"]["v"] == [{"f": "fb 0"}]
    assert details["i1"]["v"] == [None]


def _stale_runs(root):
    """Runs a and b scored on data whose item 1 was edited after they ran: their rows for it carry the old text's
    content_key (``record_content_key``), so score counts it as missing."""
    from eval.judging.predictions import record_content_key
    from eval.scoring.score import score

    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:4]
    for name in ("a", "b"):
        run = root / name
        run.mkdir()
        lines = [json.dumps({"id": r.id, "judge": f"J{name}", "raw_output": "x", "feedback": f"fb {name} {k}",
                             "score": max(r.expert_scores), "parse_ok": True, "error": None, "reason": "",
                             "score_source": "verdict", "latency_s": 0.1, "content_key": record_content_key(r)},
                            ensure_ascii=False) for k, r in enumerate(records)]
        (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    edited = list(records)
    edited[1] = dataclasses.replace(records[1], answer=records[1].answer + " (edited)")
    judge.write_jsonl(edited, root / "data.jsonl")
    for name in ("a", "b"):
        score(root / name / "predictions.jsonl", root / "data.jsonl", n_boot=0, vc_repeats=5)
    return records[1].id


def _embedded(page: str) -> dict:
    data = {}
    for css_id in ("explorer-data", "explorer-texts"):
        data.update(json.loads(re.search(rf'<script type="application/json" id="{css_id}">(.*?)</script>', page,
                                         re.S).group(1)))
    return data


def test_rewritten_report_and_compare_show_no_stale_verdict(tmp_path):
    """An item whose text was edited after the run counts as missing in items.parquet; report.html rewritten from
    the folder and compare.html, which read the predictions again, open it to no verdict (not the old text's
    feedback), and the other items to their own."""
    from eval.reports.html_report import write_report_page
    from eval.scoring.compare import compare

    edited = _stale_runs(tmp_path)
    for page in (tmp_path / "a" / "report.html", write_report_page(tmp_path / "a")):
        data = _embedded(page.read_text(encoding="utf-8"))
        status = next(f for f in data["filters"] if f["key"] == "status")["values"]
        rows = {row[0]: row for row in data["rows"]}
        assert status[rows[edited][1][4]] == "missing"
        verdicts = {item: data["details"][row[6]]["v"] for item, row in rows.items()}
        assert verdicts[edited] == [None]
        assert sorted(v[0]["f"] for item, v in verdicts.items() if item != edited) == ["fb a 0", "fb a 2", "fb a 3"]
    data = compare_items(compare([tmp_path / "a", tmp_path / "b"], n_boot=0))
    verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
    assert verdicts[edited] == [None, None]
    assert all(v[0]["f"].startswith("fb a") and v[1]["f"].startswith("fb b")
               for item, v in verdicts.items() if item != edited)


def test_a_stale_row_followed_by_its_items_fresh_row_opens_to_the_fresh_verdict(tmp_path):
    """score --allow-repeated-ids: item 1's first row judged its text before the edit, the next (a resumed run asked
    it again) the text as it is. score leaves the stale row out and scores the fresh one (status ok); report.html
    rewritten from the folder and compare.html, which read the predictions again, open item 1 to the fresh row's
    feedback, as score's own page does, not to the first row's."""
    from eval.judging.predictions import record_content_key
    from eval.reports.html_report import write_report_page
    from eval.scoring.compare import compare
    from eval.scoring.score import score

    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:4]
    edited = list(records)
    edited[1] = dataclasses.replace(records[1], answer=records[1].answer + " (edited)")
    judge.write_jsonl(edited, tmp_path / "data.jsonl")

    def row(record, feedback, name):
        return json.dumps({"id": record.id, "judge": f"J{name}", "raw_output": "x", "feedback": feedback,
                           "score": max(record.expert_scores), "parse_ok": True, "error": None, "reason": "",
                           "score_source": "verdict", "latency_s": 0.1, "content_key": record_content_key(record)},
                          ensure_ascii=False)

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        lines = [row(r, f"fb {name} {k}", name) for k, r in enumerate(records)] + [row(edited[1], f"new {name}", name)]
        (tmp_path / name / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        score(tmp_path / name / "predictions.jsonl", tmp_path / "data.jsonl", n_boot=0, vc_repeats=5,
              allow_repeated_ids=True)
    item = records[1].id
    for page in (tmp_path / "a" / "report.html", write_report_page(tmp_path / "a")):
        data = _embedded(page.read_text(encoding="utf-8"))
        verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
        assert verdicts[item] == [{"f": "new a", "src": "verdict"}]
        assert verdicts[records[0].id] == [{"f": "fb a 0", "src": "verdict"}]
    data = compare_items(compare([tmp_path / "a", tmp_path / "b"], n_boot=0))
    verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
    assert [v["f"] for v in verdicts[item]] == ["new a", "new b"]


def test_report_items_pass_over_a_stale_row_only_with_the_records():
    """Rows as dicts: i1's first row carries the content_key of a text i1 no longer has, its second the key of its
    text now, i0's one row no key (unchecked, kept). With the records, i1 opens to the second row; without them
    (nothing to check against) to the first, as before."""
    from eval.judging.predictions import record_content_key

    records = _records(2)
    old = dataclasses.replace(records[1], answer="before the edit")
    predictions = [{"id": "i0", "feedback": "fb 0", "score": 0.0},
                   {"id": "i1", "feedback": "old", "score": 1.0, "content_key": record_content_key(old)},
                   {"id": "i1", "feedback": "new", "score": 1.0, "content_key": record_content_key(records[1])}]
    details = _by_id(report_items(_items(2), records, predictions, "j", "mode"))
    assert details["i0"]["v"] == [{"f": "fb 0"}] and details["i1"]["v"] == [{"f": "new"}]
    details = _by_id(report_items(_items(2), None, predictions, "j", "mode", records_note="gone."))
    assert details["i1"]["v"] == [{"f": "old"}]


def _scored_then_edited(root, datas=("data", "data")):
    """Runs a and b, each scored on its data file (``datas``: the files' stems) while every row judged the text as
    it was; then item 1's answer is edited in the first data file. Returns the sample's four records."""
    from eval.judging.predictions import record_content_key
    from eval.scoring.score import score

    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:4]
    for name, stem in zip(("a", "b"), datas):
        judge.write_jsonl(records, root / f"{stem}.jsonl")
        (root / name).mkdir()
        lines = [json.dumps({"id": r.id, "judge": f"J{name}", "raw_output": "x", "feedback": f"fb {name} {k}",
                             "score": 1.0, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict",
                             "latency_s": 0.1, "content_key": record_content_key(r)}, ensure_ascii=False)
                 for k, r in enumerate(records)]
        (root / name / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        score(root / name / "predictions.jsonl", root / f"{stem}.jsonl", n_boot=0, vc_repeats=5)
    edited = list(records)
    edited[1] = dataclasses.replace(records[1], answer=records[1].answer + " (edited)")
    judge.write_jsonl(edited, root / f"{datas[0]}.jsonl")
    return records


def test_data_edited_after_scoring_opens_the_scored_verdict_with_a_note(tmp_path):
    """The data is edited after score ran: items.parquet still holds item 1 as scored (status ok, judge score 1) on
    its one row, which now judged a text the item no longer has. report.html rewritten from the folder and
    compare.html open it to that row's feedback (the one its score came from) with the note saying the text was
    edited since, not to "no prediction"; the other items to their own, without a note."""
    from eval.reports.html_explorer import EDITED_NOTE
    from eval.reports.html_report import write_report_page
    from eval.scoring.compare import compare

    records = _scored_then_edited(tmp_path)
    item = records[1].id
    data = _embedded(write_report_page(tmp_path / "a").read_text(encoding="utf-8"))
    verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
    assert verdicts[item] == [{"f": "fb a 1", "src": "verdict", "n": EDITED_NOTE.format(data="the data")}]
    assert verdicts[records[0].id] == [{"f": "fb a 0", "src": "verdict"}]
    data = compare_items(compare([tmp_path / "a", tmp_path / "b"], n_boot=0))
    verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
    note = EDITED_NOTE.format(data="the data (data.jsonl)")
    assert verdicts[item] == [{"f": "fb a 1", "src": "verdict", "n": note}, {"f": "fb b 1", "src": "verdict", "n": note}]
    assert verdicts[records[0].id] == [{"f": "fb a 0", "src": "verdict"}, {"f": "fb b 0", "src": "verdict"}]


def test_compare_checks_each_runs_rows_against_its_own_data(tmp_path):
    """Runs a and b scored on two data files; a's is edited after, b's is not. b's rows judged b's data as it is:
    compare.html opens b's side of item 1 to its feedback without a note; a's side carries the note naming a's
    data file."""
    from eval.reports.html_explorer import EDITED_NOTE
    from eval.scoring.compare import compare

    records = _scored_then_edited(tmp_path, ("data_a", "data_b"))
    data = compare_items(compare([tmp_path / "a", tmp_path / "b"], n_boot=0))
    verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
    assert verdicts[records[1].id] == [
        {"f": "fb a 1", "src": "verdict", "n": EDITED_NOTE.format(data="the data (data_a.jsonl)")},
        {"f": "fb b 1", "src": "verdict"}]


def test_compare_finds_each_runs_data_by_the_file_its_recorded_path_finds(tmp_path):
    """Two runs whose metrics.json name their data by the same relative "data.jsonl", each finding its own copy in
    its folder (an older metrics.json, or copies kept in the run folders): only a's copy is edited after scoring, so
    b's side of item 1 opens without a note. Keyed by the recorded string, b's rows were checked against a's data."""
    from eval.reports.html_explorer import EDITED_NOTE
    from eval.scoring.compare import compare

    records = _scored_then_edited(tmp_path, ("data_a", "data_b"))
    for name in ("a", "b"):
        (tmp_path / f"data_{name}.jsonl").rename(tmp_path / name / "data.jsonl")
        metrics = json.loads((tmp_path / name / "metrics.json").read_text(encoding="utf-8"))
        metrics["data"] = "data.jsonl"
        (tmp_path / name / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
        (tmp_path / name / "run.json").unlink(missing_ok=True)
    data = compare_items(compare([tmp_path / "a", tmp_path / "b"], n_boot=0))
    verdicts = {row[0]: data["details"][row[6]]["v"] for row in data["rows"]}
    assert verdicts[records[1].id] == [
        {"f": "fb a 1", "src": "verdict", "n": EDITED_NOTE.format(data="the data (data.jsonl)")},
        {"f": "fb b 1", "src": "verdict"}]

def test_data_edited_after_scoring_then_resumed_opens_the_row_items_parquet_scored():
    """i1's first row (score 1) judged its text before the edit, its second (score 2, a resumed run asked the edited
    item) the text now. Where items.parquet's judge score is 1 (score ran before the resume) the page opens the row
    that score came from, noted as judging the old text; where it is 2 (scored again), the fresh row, no note."""
    from eval.judging.predictions import record_content_key
    from eval.reports.html_explorer import EDITED_NOTE

    records = _records(2)
    old = dataclasses.replace(records[1], answer="before the edit")
    predictions = [{"id": "i0", "feedback": "fb 0", "score": 0.0},
                   {"id": "i1", "feedback": "old", "score": 1.0, "content_key": record_content_key(old)},
                   {"id": "i1", "feedback": "new", "score": 2.0, "content_key": record_content_key(records[1])}]
    details = _by_id(report_items(_items(2, judge_score=[0.0, 1.0]), records, predictions, "j", "mode"))
    assert details["i1"]["v"] == [{"f": "old", "n": EDITED_NOTE.format(data="the data")}]
    details = _by_id(report_items(_items(2, judge_score=[0.0, 2.0]), records, predictions, "j", "mode"))
    assert details["i1"]["v"] == [{"f": "new"}] and details["i0"]["v"] == [{"f": "fb 0"}]


# ------------------------------------------------------------------------------- items without their texts


def test_data_gone_keeps_every_items_feedback_with_the_note():
    """No data (its file gone): each item still opens to its judge's feedback, the note saying why its texts are
    absent in their place."""
    note = "Not found: the labelled data (...): the items' texts are not in this page."
    data = report_items(_items(3), None, _predictions(3), "j", "mode", records_note=note)
    details = _by_id(data)
    assert [details[f"i{k}"]["v"] for k in range(3)] == [[{"f": "fb 0"}], [{"f": "fb 1"}], [{"f": "fb 2"}]]
    assert all(d["m"] == note and d["c"] == [] for d in details.values())
    assert {data["strings"][details["i0"][key]] for key in "iaru"} == {""}
    assert data["notes"] == [note]


def test_data_gone_an_item_past_the_cap_says_the_data_is_gone_not_to_score_again():
    """No data and a cap of 2 of 5 items: an item past the cap reads the data's note and that the feedback is
    embedded for 2 of 5 items; it says no texts are embedded, nor that a larger --html-text-items would embed
    more (score needs the data)."""
    note = "Not found: the labelled data (...): the items' texts are not in this page."
    data = report_items(_items(5), None, _predictions(5), "j", "mode", records_note=note, text_items=2)
    assert len(data["details"]) == 2
    assert data["no_text_note"] == (
        f"{note} The judge's feedback is embedded for 2 of 5 items (the largest differences of each criterion and "
        "evaluated model first; --html-text-items); this one has only its numbers here.")


def test_an_item_not_in_the_data_keeps_its_feedback_and_says_why():
    """The data no longer holds i2 (the largest difference): it opens to its feedback and "Item i2 is not in the
    labelled data.", not to a note offering a larger --html-text-items; with a cap of 2 both slots hold an item
    (i2, then i1 with the next largest difference)."""
    records, predictions = _records(2), _predictions(3)
    details = _by_id(report_items(_items(3), records, predictions, "j", "mode"))
    assert details["i2"]["m"] == "Item i2 is not in the labelled data." and details["i2"]["v"] == [{"f": "fb 2"}]
    assert "m" not in details["i0"] and details["i0"]["v"] == [{"f": "fb 0"}]
    capped = report_items(_items(3), records, predictions, "j", "mode", text_items=2)
    assert len(capped["details"]) == 2
    assert {item for item, d in _by_id(capped).items() if d is not None} == {"i1", "i2"}


def test_the_texts_of_a_page_are_found_without_a_lookup_of_every_record(monkeypatch):
    """The records as columns (as score passes them): the page's few items are matched against the records' ids in
    one pass, not through ``RecordColumns.index_of``'s lookup of all of them; an id the data lacks is looked for
    once and reads as absent."""
    from judge.record_columns import RecordColumns, as_columns

    def every_id(self, record_id):
        raise AssertionError("index_of builds a lookup of every record's id")

    monkeypatch.setattr(RecordColumns, "index_of", every_id)
    records, predictions = as_columns(_records(3)), _predictions(4)
    data = report_items(_items(4), records, predictions, "j", "mode")
    details = _by_id(data)
    assert details["i3"]["m"] == "Item i3 is not in the labelled data." and details["i3"]["v"] == [{"f": "fb 3"}]
    assert [data["strings"][details[f"i{k}"]["i"]] for k in range(3)] == ["x0", "x1", "x2"]


# ------------------------------------------------------------------------------------ compare.html, 3 runs


@pytest.fixture
def three_runs(tmp_path):
    """Runs a, b, c of one judge name on four items; c left item 0 unjudged."""
    from eval.scoring.score import score

    records = [r for r in judge.load_records(judge.sample_data_path()) if judge.split_of(r) == "standard"][:4]
    judge.write_jsonl(records, tmp_path / "data.jsonl")
    for offset, name in enumerate("abc"):
        lines = [json.dumps({"id": r.id, "judge": "J", "raw_output": "x", "feedback": f"fb {name}",
                             "score": max(r.expert_scores) - offset * (k % 2), "parse_ok": True, "error": None,
                             "reason": "", "score_source": "verdict", "latency_s": 0.1}, ensure_ascii=False)
                 for k, r in enumerate(records) if not (name == "c" and k == 0)]
        (tmp_path / name).mkdir()
        (tmp_path / name / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        score(tmp_path / name / "predictions.jsonl", tmp_path / "data.jsonl", n_boot=0, vc_repeats=5)
    return tmp_path


def test_compare_with_three_runs_names_each_rows_run(three_runs):
    """With runs b and c against a, each row's verdicts are labelled by its own comparison's runs (the column
    heading, shared by both, says so), and the run's verdict is that run's feedback."""
    from eval.scoring.compare import compare

    result = compare([three_runs / n for n in "abc"], n_boot=0)
    names = list(result.runs)
    data = compare_items(result)
    assert data["judges"] == [f"baseline: {names[0]}", "run (per comparison)"]
    pairs = data["filters"][data["judges_filter"]]["values"]
    assert pairs == [f"{names[1]} vs {names[0]}", f"{names[2]} vs {names[0]}"]
    assert data["filter_judges"] == [[f"baseline: {names[0]}", f"run: {names[1]}"],
                                     [f"baseline: {names[0]}", f"run: {names[2]}"]]
    shown = sorted((pairs[row[1][0]], (data["details"][row[6]]["v"][1] or {}).get("f", "none"))
                   for row in data["rows"])
    # c has no prediction for the first item: its side shows none
    assert shown == sorted([(pairs[0], "fb b")] * 4 + [(pairs[1], "fb c")] * 3 + [(pairs[1], "none")])
    two = compare_items(compare([three_runs / "a", three_runs / "b"], n_boot=0))
    assert two["judges"] == [f"baseline: {names[0]}", f"run: {names[1]}"]


# ------------------------------------------------------------------------------------------- the byte budget


def test_text_budget_counts_each_escaped_angle_bracket():
    """The page writes each "<" as \\u003c (6 bytes): three answers of 20,000 "<" cost 120,002 bytes each there
    (quotes included), so a 250,000-byte budget holds two of them, and the texts' element as written stays under
    it (counted as 1 byte each, all three fit and the element passed 360,000)."""
    from eval.reports.html_report import _page

    records = _records(3, answer=lambda k: "<" * (20_000 - k) + "a" * k)
    data = report_items(_items(3), records, _predictions(3), "j", "mode", text_bytes=250_000)
    assert len(data["details"]) == 2
    page = _page("t", [], [], [], data)
    texts = re.search(r'<script type="application/json" id="explorer-texts">(.*?)</script>', page, re.S).group(1)
    assert texts.count("\\u003c") == 19_998 + 19_999 and len(texts.encode("utf-8")) <= 250_000
