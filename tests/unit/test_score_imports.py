"""`judge-eval score` of a pointwise run contacts no server and scores no pairs, so it imports neither the HTTP
stack (httpx, the openai SDK) nor the pairwise judging client, and builds no request, so not pydantic either (the
predictions reader takes ``judge.wire_fields``, not the request models of ``judge.wire``): imports every score pays
before its first figure (docs/performance.md, the `judge-eval score` rows, measures them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import judge
from eval.judging.predictions import record_content_key

REPO = Path(__file__).resolve().parents[2]
NOT_IMPORTED = ("httpx", "openai", "tenacity", "eval.pairwise.judging", "eval.judging.backends", "pydantic",
                "judge.wire")


def test_scoring_a_pointwise_run_imports_no_http_client_no_pairwise_judging_and_no_pydantic(tmp_path):
    records = judge.load_records(judge.sample_data_path())[:8]
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {max(r.expert_scores)} [END]",
             "feedback": "ok", "score": max(r.expert_scores), "parse_ok": True, "error": None, "reason": "",
             "score_source": "verdict", "latency_s": 0.1, "content_key": record_content_key(r)} for r in records]
    (run / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                           encoding="utf-8")
    code = ("import json, sys\n"
            "from eval.cli import main\n"
            f"code = main(['score', '--predictions', {str(run)!r}, '--data', {str(judge.sample_data_path())!r}, "
            f"'--out', {str(tmp_path / 'out')!r}, '--n-boot', '0', '--vc-repeats', '5', '--no-plots'])\n"
            f"print(json.dumps([code, [m for m in {NOT_IMPORTED!r} if m in sys.modules]]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    exit_code, imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert exit_code == 0
    assert (tmp_path / "out" / "metrics.json").is_file()  # the score really ran to its end
    assert imported == []
