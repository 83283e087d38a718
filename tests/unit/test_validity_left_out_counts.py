"""The validity table's κ and Stuart–Maxwell rows say every item they leave out: "over N items; F failed items and M
without a unique mode left out" adds up to the test's items, the judged items whose experts have no unique mode
counted too."""

from __future__ import annotations

import json
import re

import judge
from eval.cli import main
from eval.judging.predictions import record_content_key


def _row(record, k: int) -> dict:
    base = {"id": record.id, "judge": "j", "feedback": "ok", "reason": "", "score_source": "verdict",
            "latency_s": 0.1, "content_key": record_content_key(record)}
    if k % 6 == 0:  # a sixth of the items failed
        return {**base, "raw_output": "no verdict", "score": None, "parse_ok": False, "error": "missing_end"}
    score = max(record.expert_scores)
    return {**base, "raw_output": f"[FEEDBACK] ok [RESULT] {score} [END]", "score": score, "parse_ok": True,
            "error": None}


def test_kappa_and_homogeneity_rows_count_the_items_without_a_unique_mode(tmp_path):
    records = judge.load_records(judge.sample_data_path())
    run = tmp_path / "run"
    run.mkdir()
    rows = [_row(r, k) for k, r in enumerate(records)]
    (run / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                           encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--out",
                 str(tmp_path / "out"), "--n-boot", "0", "--vc-repeats", "2", "--no-plots"]) == 0
    text = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    summary = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| ([^|]+?) \| (\d+) \|", text, re.M)}
    sections = re.findall(r"^### (.+?): validity\n(.*?)(?=^#)", text, re.M | re.S)
    assert [title for title, _ in sections] == ["Zero-Shot test", "Standard test", "Zero-Shot + Standard"]
    for title, body in sections:
        rows_said = [line for line in body.splitlines()
                     if line.startswith(("| κ quadratic (judge vs experts' mode)", "| marginal homogeneity"))]
        assert len(rows_said) == 2, body
        for line in rows_said:
            over = re.search(r"over (\d+) items; (.*) left out\)", line)
            assert over, line
            left = re.findall(r"(\d+) (?:failed items?|without a unique mode|off the scale)", over.group(2))
            assert "without a unique mode" in line, line  # the sample holds items whose experts split evenly
            assert int(over.group(1)) + sum(map(int, left)) == summary[title], (line, summary[title])
