"""`judge-train submit` into run folders with odd names, on a real Slurm: the job log is where submit says it is.

sbatch reads `--output` as a filename pattern: unescaped, a folder's `%x` became the job name, the log's folder did
not exist, and the job failed at launch (JobLaunchFailure) without a line of log. An unquoted `'` or `"` in an
#SBATCH line made sbatch refuse the script ("Unmatched `'`")."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

TEMPLATE = """#!/bin/bash
#SBATCH --job-name=judge-train
#SBATCH --nodes=1
#SBATCH --cpus-per-task=1
#SBATCH --time=00:05:00
echo "logged by job $SLURM_JOB_ID"
"""


@pytest.mark.parametrize("folder", ["run 100%x", "o'brien", 'say "hi" there'])
def test_submit_into_an_oddly_named_folder_logs_where_it_says(slurm_cluster, tmp_path, folder):
    config = tmp_path / "judge.yaml"
    config.write_text(f"recipe: seq2seq\nper_device_train_batch_size: 1\nglobal_batch_size: 1\nzero_shot: drop\n"
                      f"output_dir: {tmp_path / 'unused'}\n")  # fmt: skip
    template = tmp_path / "tiny.sbatch"
    template.write_text(TEMPLATE)
    out = tmp_path / folder
    # In the test's process (SlurmCluster.judge_train_submit): a fresh interpreter would import transformers again
    # for the config check, seconds of CPU per folder.
    status, stdout, stderr = slurm_cluster.judge_train_submit(
        ["--config", str(config), "--nodes", "1", "--gpus-per-node", "0", "--signal-before-s", "60",
         "--job-name", "pct", "--output-dir", str(out), "--script", str(template)],
        cwd=REPO,
    )  # fmt: skip
    assert status == 0, stderr
    job_id = stdout.split("submitted job ", 1)[1].split(":", 1)[0]
    log = Path(stdout.split("log: ", 1)[1].strip())
    assert log == out / "slurm" / f"pct-{job_id}.out"
    record = slurm_cluster.wait(job_id, timeout_s=120)
    assert record["JobState"] == "COMPLETED", record
    assert log.read_text() == f"logged by job {job_id}\n"


def test_a_job_asking_more_nodes_than_the_partition_has_is_named_at_submit(slurm_cluster, tmp_path):
    """Three nodes of the two-node cluster: sbatch queues the job (Slurm's EnforcePartLimits=NO, its default), where
    it would wait for good without a word. Submit names Slurm's reason, as this Slurm gives it right after the
    submission, and what to do; the job stays queued (exit 0) until cancelled."""
    config = tmp_path / "judge.yaml"
    config.write_text(f"recipe: seq2seq\nper_device_train_batch_size: 1\nglobal_batch_size: 3\nzero_shot: drop\n"
                      f"output_dir: {tmp_path / 'unused'}\n")  # fmt: skip
    template = tmp_path / "tiny.sbatch"
    template.write_text(TEMPLATE)
    status, stdout, stderr = slurm_cluster.judge_train_submit(
        ["--config", str(config), "--nodes", "3", "--gpus-per-node", "0", "--signal-before-s", "60",
         "--job-name", "three", "--output-dir", str(tmp_path / "run"), "--script", str(template)],
        cwd=REPO,
    )  # fmt: skip
    assert status == 0, stderr
    job_id = stdout.split("submitted job ", 1)[1].split(":", 1)[0]
    try:
        reason = slurm_cluster.job(job_id)["Reason"]
        assert reason in ("PartitionConfig", "PartitionNodeLimit"), reason
        assert f"judge-train submit: warning: job {job_id} is pending with reason Partition" in stderr, stderr
        assert f"it may never start as it stands. `scontrol show job {job_id}` says what it asks" in stderr
    finally:
        slurm_cluster.command(["scancel", job_id])
