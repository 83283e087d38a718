"""No secret in any file a run writes: one redaction for every run.json, owner-only run
files, one way to give a key, long options only in full.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_secrets.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


from judge.plumbing.processes import free_port
from judge.plumbing.provenance import REDACTED
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.support.secrets import BODY, REPO, TYPED, files_holding, permission_bits


def test_judge_serve_writes_no_key(tiny_causal_dir, tmp_path):
    """judge-serve --api-key X --engine-args '--api-key Y' attached to a stand-in engine (one that reports another
    vLLM line, so judge-serve writes run.json at start-up and then exits 1 by itself): neither key is in any file of
    its log folder nor in its own output."""
    def version_only(path: str) -> tuple[int, dict]:
        return (200, {"version": "0.31.2"}) if path == "/version" else (503, {"detail": "starting"})

    log_dir = tmp_path / "serve"
    with ScriptedEndpoint(lambda path, body: (503, {}), respond_get=version_only) as engine:
        proc = subprocess.run(
            [sys.executable, "-m", "serve.cli", "--model", str(tiny_causal_dir), "--port", str(free_port()),
             "--generator-url", engine.url, "--log-dir", str(log_dir), "--engine-start-timeout-s", "120",
             "--api-key", TYPED, "--engine-args", f"--api-key {BODY}", "--no-access-log"],
            capture_output=True, text=True, timeout=180, cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    run_json = json.loads((log_dir / "run.json").read_text(encoding="utf-8"))
    assert run_json["job"] == "judge-serve" and REDACTED in run_json["launch"]["argv"]
    assert files_holding(log_dir, [TYPED, BODY]) == {}
    assert TYPED not in proc.stdout + proc.stderr and BODY not in proc.stdout + proc.stderr
    assert (permission_bits(log_dir / "run.json"), permission_bits(log_dir)) == (0o600, 0o700)
