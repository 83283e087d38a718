"""What tests/unit/test_report_html.py and tests/integration/browser/test_report_html.py share."""

from __future__ import annotations

import json

import pytest

import judge
from eval.cli import main

FAILED_RAW = "[FEEDBACK] Непонятно. [RESULT] отлично [END]"
# A feedback that would end the page's <script> element if it were embedded unescaped.
# "<!--" then "<script" puts an HTML parser in the script-data double-escaped state, where "</script>" no longer
# ends the element: the rest of the page, page.js included, would become the JSON element's text.
TRICKY_FEEDBACK = "Отзыв <!-- <script> </script><b>не тег</b>"


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

