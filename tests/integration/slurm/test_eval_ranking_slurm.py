"""slurm/rank.sbatch on a real one-host Slurm: an array of two candidates benched with one judge, then compared.

The candidates and the judge are the stand-in servers of ``tests/support/eval_ranking.py`` (the network boundary); the
jobs run the same ``judge-eval rank`` a user runs, under ``srun``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eval.cli import main
from tests.support.eval_ranking import (Candidate, Judge, scores_by_output, CASES, FULLNESS, LITERACY, SAFE,
                                        instruction_rows)
from tests.support.release_instructions import write_instructions_dataset
from tests.integration.slurm.test_slurm_jobs import JOB_TIMEOUT_S, _console_scripts

REPO = Path(__file__).resolve().parents[3]


def test_ranking_array_two_candidates(slurm_cluster, slurm_job_env, tmp_path: Path) -> None:
    """Task i benches line i of the candidates file into OUT/<i>; the two folders compare with paired intervals."""
    data = write_instructions_dataset(tmp_path / "POLLUX-instructions", instruction_rows())
    better = {pid: f"Лучший ответ {pid}." for pid in CASES}
    table = scores_by_output() | {(f"Лучший ответ {pid}.", c): {SAFE: 0, LITERACY: 2, FULLNESS: 3}[c]
                        for pid, (_, crits, _, _) in CASES.items() for c in crits}
    with Candidate() as cand_a, Candidate(override=better) as cand_b, Judge(table) as judge:
        models = tmp_path / "candidates.txt"
        models.write_text(f"{cand_a.base_url}\n\n  {cand_b.base_url}  \n", encoding="utf-8")
        env = {**slurm_job_env, "PATH": f"{_console_scripts(tmp_path / 'bin')}{os.pathsep}{slurm_job_env['PATH']}",
               "JUDGE_RANK_MODELS": str(models), "JUDGE_RANK_JUDGE": judge.base_url, "JUDGE_RANK_DATA": str(data),
               "JUDGE_RANK_OUT": str(tmp_path / "runs")}
        array = slurm_cluster.sbatch(
            ["--array=0-1", "--gpus-per-node=0", "--cpus-per-task=1", f"--output={tmp_path}/%x-%A_%a.out",
             str(REPO / "slurm/rank.sbatch"), "--n-boot", "50"], cwd=tmp_path, env=env)
        records = [slurm_cluster.wait(f"{array}_{task}", timeout_s=JOB_TIMEOUT_S) for task in range(2)]
        asked_a, asked_b = len(cand_a.bodies("/v1/chat/completions")), len(cand_b.bodies("/v1/chat/completions"))
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("*.out")))
    assert [r["JobState"] for r in records] == ["COMPLETED", "COMPLETED"], logs[-5000:]
    assert "judge-eval rank 0/2" in logs and "judge-eval rank 1/2" in logs
    assert (asked_a, asked_b) == (len(CASES), len(CASES))  # each task asked its own candidate, every instruction
    a = json.loads((tmp_path / "runs" / "0" / "rank.json").read_text(encoding="utf-8"))
    assert a["matrix"]["grand_mean"] == pytest.approx(4 / 11)  # the hand-derived matrix of test_eval_ranking
    assert main(["compare", str(tmp_path / "runs" / "0"), str(tmp_path / "runs" / "1"), "--n-boot", "50"]) == 0
