"""`judge-eval score` and `judge-eval experts` on two inputs the tables alone hid: predictions naming ids the data
lacks (left out; report.md, report.html and the console now say how many and name the first, beside the items
without a prediction), and a project file's expert score of -1 (the release's abstention code, refused with one
line naming the row, where it was averaged in as a score while the experts' page counted no abstention); and the
release's own -1, an abstention, left out of every figure of the score."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import record_content_key
from eval.reports.notes import run_notes, unknown_ids_note
from judge.metrics_json.metrics import Metrics, Notes, Settings


def _records() -> list:
    """8 sample records, 4 per test, each on a 0..2 scale."""
    records = judge.load_records(judge.sample_data_path())
    return ([r for r in records if judge.split_of(r) == "zero_shot"][:4]
            + [r for r in records if judge.split_of(r) == "standard"][:4])


def _prediction(rid: str, key: str | None) -> dict:
    return {"id": rid, "judge": "j", "raw_output": "[FEEDBACK] ok [RESULT] 1 [END]", "feedback": "ok", "score": 1,
            "parse_ok": True, "error": None, "reason": "", "score_source": "verdict", "latency_s": 0.1,
            "content_key": key}


def _score(run: Path, data: Path, out: Path) -> int:
    return main(["score", "--predictions", str(run), "--data", str(data), "--out", str(out), "--n-boot", "0",
                 "--vc-repeats", "5", "--no-plots"])


def test_predictions_of_ids_the_data_lacks_are_counted_and_named_in_every_report(tmp_path, capsys):
    """7 of the 8 records predicted, then ids "zz-b" and "zz-a", which no record has: 1 item has no prediction, and
    the 2 foreign predictions are counted with the first in file order ("zz-b", not the alphabetically first) in
    metrics.json's notes, read back typed, and said in one sentence in report.md, report.html and the console."""
    records = _records()
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    run = tmp_path / "run"
    run.mkdir()
    rows = [_prediction(r.id, record_content_key(r)) for r in records[:7]]
    rows += [_prediction("zz-b", None), _prediction("zz-a", None)]
    (run / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    assert _score(run, data, tmp_path / "out") == 0
    written = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))
    assert (written["notes"]["n_unknown_ids"], written["notes"]["first_unknown_id"]) == (2, "zz-b")
    assert Metrics.from_json(written).notes.first_unknown_id == "zz-b"
    sentence = "2 predictions name ids the data lacks** (the first: `zz-b`): they were left out of every figure."
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "**1 item has no prediction**" in report and "**" + sentence in report
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert ('<p class="warn"><b>2 predictions name ids the data lacks</b> (the first: <code>zz-b</code>): they were '
            "left out of every figure.</p>") in html
    out = capsys.readouterr().out
    assert "2 predictions name ids the data lacks (the first: zz-b): they were left out of every figure." in out


def _metrics(notes: Notes) -> Metrics:
    return Metrics(judge="j", target="mode", settings=Settings(n_boot=0, seed=0, vc_repeats=1, ci_level=0.95),
                   splits={}, notes=notes)


def test_the_unknown_ids_sentence_in_the_singular_for_an_odd_id_and_for_an_older_file():
    """One foreign id holding a backtick and a line break: singular words, the id in a code span on one line with
    the backtick made a quote; a metrics.json written before the first id was kept names none; none, no sentence.
    A result without splits still says it (run_notes returns it with the data's notes)."""
    one = _metrics(Notes(n_unknown_ids=1, first_unknown_id="a`b\nc"))
    assert unknown_ids_note(one) == ("**1 prediction names an id the data lacks** (the first: `a'b c`): it was left "
                                     "out of every figure.")
    assert run_notes(one) == [unknown_ids_note(one)]
    older = _metrics(Notes.from_json({"n_unknown_ids": 3}))
    assert unknown_ids_note(older) == "**3 predictions name ids the data lacks**: they were left out of every figure."
    assert unknown_ids_note(_metrics(Notes())) is None


def _project_rows_with(tmp_path: Path, scores: list) -> Path:
    """The 8 records as a project JSONL file, the third row's experts replaced by ``scores`` (unnamed)."""
    rows = [json.loads(line) for line in
            judge.write_jsonl(_records(), tmp_path / "clean.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[2] |= {"expert_scores": scores, "expert_feedback": None, "criteria_score": None, "expert_ids": None}
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_minus_one_expert_score_stops_score_and_experts_with_one_line_naming_the_row(tmp_path, capsys):
    """Line 3's experts [2, -1, 2] on a 0..2 rubric: both commands exit 2 with one line naming the file, the line,
    the field and the expert's place, saying to write null; no traceback, no output folder."""
    data = _project_rows_with(tmp_path, [2, -1, 2])
    said = (f"{data}: line 3: field 'expert_scores': item 1 is -1, which is not a level of this row's rubric: write "
            "null for an abstention (-1 is the POLLUX release's abstention code, which the release loader turns into "
            "null)")
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text(json.dumps(_prediction("x", None)) + "\n", encoding="utf-8")
    for command, argv in (("score", ["score", "--predictions", str(run), "--data", str(data), "--out",
                                     str(tmp_path / "out"), "--n-boot", "0"]),
                          ("experts", ["experts", "--data", str(data), "--out", str(tmp_path / "out")])):
        assert main(argv) == 2, command
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert [line for line in err.splitlines() if line.startswith(f"judge-eval {command}: error:")] == [
            f"judge-eval {command}: error: {said}"], err
        assert not (tmp_path / "out").exists()


def test_the_experts_page_counts_a_project_files_null_as_an_abstention(tmp_path):
    """The same row with [2, null, 2]: one abstention, said as the release's -1 or the project file's null (not "(-1)"
    alone, which a project file may not hold), and out of the row's scores."""
    data = _project_rows_with(tmp_path, [2, None, 2])
    assert main(["experts", "--data", str(data), "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "experts.md").read_text(encoding="utf-8")
    assert "8 items (" in page and "; 1 abstention (the release's -1, a project file's null) left out;" in page
    assert judge.load_records(data)[2].expert_scores == (2.0, 2.0)


def test_a_released_minus_one_is_an_abstention_left_out_of_every_figure_by_hand(tmp_path):
    """Three released rows (one model, one task type, the 0..2 "repeats" rubric), the abstaining expert in the middle
    of two: experts [2, -1, 2] judged 2, [1, -1, -1] judged 1, [0, 0, -1] judged 1. Left out, the experts are [2, 2],
    [1] and [0, 0]: modes 2, 1, 0, so MAE = (0 + 0 + 1) / 3; Verdict Confidence only where two experts remain, the
    first and the third: experts 1 and 1, the judge 1 (2 replacing a 2) and 1/2 (1 replacing a 0), so 0.75;
    Spearman of judge 2, 1, 1 against 2, 1, 0 (midranks 3, 1.5, 1.5 and 3, 2, 1) = 1.5 / sqrt(1.5 * 2) = sqrt(3)/2;
    confusion rows the judge, columns the mode: (2, 2), (1, 1), (1, 0). Read as a score, the -1 would make the
    second item's mode -1 (MAE 1) and the first's VC 2/3."""
    from tests.support.release_artifacts import NOT_APPLICABLE, released_row, write_released_dataset

    experts_and_judge = [([2, -1, 2], 2), ([1, -1, -1], 1), ([0, 0, -1], 1)]
    rows = [released_row(("Editing",), "repeats", [(s, NOT_APPLICABLE if s == -1 else "Оценка.") for s in scores],
                         instruction=f"Отредактируй текст номер {i}.", answer=f"Текст {i}.", model_id="gpt4")
            for i, (scores, _) in enumerate(experts_and_judge)]  # fmt: skip
    data = write_released_dataset(tmp_path / "POLLUX", rows, n_shards=1)
    records = judge.load_records(data)
    assert [r.expert_scores for r in records] == [(2.0, 2.0), (1.0,), (0.0, 0.0)]
    run = tmp_path / "run"
    run.mkdir()
    predictions = [dict(_prediction(r.id, record_content_key(r)), score=score, raw_output=f"[RESULT] {score} [END]")
                   for r, (_, score) in zip(records, experts_and_judge)]  # fmt: skip
    (run / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions), encoding="utf-8")
    assert _score(run, data, tmp_path / "out") == 0
    block = json.loads((tmp_path / "out" / "metrics.json").read_text(encoding="utf-8"))["splits"]["all"]
    overall = block["overall"]
    assert (overall["n_scored"], overall["n_abstained"], overall["n_all_abstained"]) == (3, 4, 0)
    assert overall["mae"] == pytest.approx(1 / 3)
    assert (overall["n_vc"], overall["vc_experts"], overall["vc_judge"]) == (2, 1.0, pytest.approx(0.75))
    assert overall["spearman"] == pytest.approx(math.sqrt(3) / 2)
    assert block["confusion"]["all"] == {"levels": [0.0, 1.0, 2.0], "matrix": [[0, 0, 0], [1, 1, 0], [0, 0, 1]]}
