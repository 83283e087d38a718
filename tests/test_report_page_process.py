"""report.html written by a forked child (eval.html_report.ReportPageProcess, as ``judge-eval score`` does): the
same page as write_report_page, nothing written when left early, and a failure in the child is an error naming
its cause."""

from __future__ import annotations

import json
import os

import pytest

import judge
from eval.cli import main
from eval.html_report import ReportPageProcess, write_report_page
from eval.predictions import read_predictions


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run scored on 10 sample records (hand-written predictions, one parse failure), its records and rows."""
    root = tmp_path_factory.mktemp("page")
    records = judge.load_records(judge.sample_data_path())[:10]
    data = root / "data.jsonl"
    judge.write_jsonl(records, data)
    lines = []
    for k, r in enumerate(records):
        ok = k != 3
        lines.append(json.dumps({"id": r.id, "judge": "j", "raw_output": f"[RESULT] {max(r.expert_scores)} [END]",
                                 "feedback": f"отзыв {k}", "score": max(r.expert_scores) if ok else None,
                                 "parse_ok": ok, "error": None if ok else "no_score"}, ensure_ascii=False))
    (root / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["score", "--predictions", str(root), "--data", str(data), "--n-boot", "20", "--no-plots"]) == 0
    return root, records, read_predictions(root)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the child is a fork")
def test_the_forked_page_is_write_report_pages_page(run):
    """The child's report.html is byte for byte the page write_report_page writes from the same inputs."""
    root, records, rows = run
    result = json.loads((root / "metrics.json").read_text(encoding="utf-8"))
    expected = write_report_page(root, records, rows, 4).read_bytes()
    (root / "report.html").unlink()
    with ReportPageProcess(root, records, rows, result["judge"], str(result["target"]), 4) as page:
        assert page._pid  # a child was forked
        path = page.finish()
    assert path == root / "report.html" and path.read_bytes() == expected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the child is a fork")
def test_left_before_finish_the_child_writes_nothing_and_is_reaped(run):
    """Leaving the context before finish (scoring failed): no report.html, no child left behind."""
    root, records, rows = run
    (root / "report.html").unlink(missing_ok=True)
    with ReportPageProcess(root, records, rows, "j", "mode") as page:
        pid = page._pid
    assert not (root / "report.html").exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the child is a fork")
def test_a_failing_child_is_an_error_naming_its_cause(run):
    """A metrics.json that is gone when the page is written: RuntimeError with the child's FileNotFoundError."""
    root, records, rows = run
    metrics = root / "metrics.json"
    saved = metrics.read_bytes()
    try:
        with ReportPageProcess(root, records, rows, "j", "mode") as page:
            metrics.unlink()
            with pytest.raises(RuntimeError, match=r"(?s)report.html: the page's process failed.*FileNotFoundError"):
                page.finish()
    finally:
        metrics.write_bytes(saved)
