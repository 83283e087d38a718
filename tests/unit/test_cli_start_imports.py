"""A console script's refusal of a bad argument, and its --help, import only what the refusal needs: `judge-eval run`
refuses an --out that is a file before the judging client (httpx, openai, pydantic's wire models) is imported,
`judge-eval compare` refuses a missing folder before numpy and the rank-run reader, `judge-eval rank` refuses a data
source that is not there before the judging client, the matrix and its page, and judge-serve refuses a missing
model without the task classifiers. Each case runs in a fresh interpreter and reports what it imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "torch", "transformers", "vllm", "httpx", "openai", "pydantic", "sklearn", "scipy",
         "judge.wire", "judge.criteria_auto", "eval.judging.run", "eval.judging.backends", "eval.ranking.compare",
         "eval.ranking.matrix", "eval.ranking.report", "eval.scoring.compare", "asyncio")


def imported_by(argv: list[str], script: str = "eval.cli") -> list:
    """``judge-eval argv`` (or the console script whose ``main`` is in ``script``) in a fresh interpreter: its exit
    code and which of ``HEAVY`` it imported."""
    code = ("import json, sys\n"
            f"from {script} import main\n"
            "try:\n"
            f"    code = main({argv!r})\n"
            "except SystemExit as stop:\n"
            "    code = stop.code\n"
            f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    exit_code, imported = json.loads(done.stdout.strip().splitlines()[-1])
    return [exit_code, imported]


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["rank", "--help"], ["score", "--help"]])
def test_help_imports_no_library_of_any_subcommand(argv):
    assert imported_by(argv) == [0, []]


def test_run_refuses_an_out_that_is_a_file_before_importing_the_judging_client(tmp_path):
    out = tmp_path / "run"
    out.write_text("not a folder\n", encoding="utf-8")
    exit_code, imported = imported_by(["run", "--judge", "http://127.0.0.1:9/v1", "--out", str(out)])
    assert exit_code == 2
    assert imported == []
    assert out.read_text(encoding="utf-8") == "not a folder\n"  # refused before anything was written


def test_compare_refuses_missing_folders_before_importing_numpy(tmp_path):
    exit_code, imported = imported_by(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert exit_code == 2
    assert imported == []


def test_rank_refuses_missing_data_before_importing_the_judging_client_and_the_matrix(tmp_path):
    exit_code, imported = imported_by(["rank", "--model", "http://127.0.0.1:9/v1", "--judge", "http://127.0.0.1:9/v1",
                                       "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "rank")])
    assert exit_code == 2
    # --n-boot's bound is read from the scoring's compare module (RankConfig.validate: numpy, judge.wire); the
    # judging client and the matrix and its page come only once there is something to judge and rank.
    assert [m for m in imported if m not in ("numpy", "pydantic", "judge.wire", "eval.scoring.compare")] == []

def test_serve_refuses_a_missing_model_without_the_task_classifiers(tmp_path):
    # The settings check names the classifier's key variable (judge.plumbing.api_keys) without importing the
    # classifiers (numpy); the reward rule's check is judge.wire's, with its pydantic models.
    exit_code, imported = imported_by(["--print-config", "--model", str(tmp_path / "missing")], "serve.cli")
    assert exit_code == 2
    assert [m for m in imported if m not in ("pydantic", "judge.wire", "asyncio")] == []  # asyncio: it serves on it
