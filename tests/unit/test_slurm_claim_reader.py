"""eval.sbatch and rank.sbatch each carry the few lines of Python that read a claim record (the run.json judge-eval
writes once it has claimed its folder) to decide whether ``--overwrite`` stands on a requeue. They stay two copies:
Slurm runs a spooled copy of each script, with no sibling file to source, and a reader in pollux-judge
(``python3 -m judge...``) needs an interpreter that imports it, where the program imports only the standard library
(rank.sbatch runs it under python3, eval.sbatch under judge-eval's interpreter where it finds one, else python3). So
the two programs (the text between ``-c '`` and its closing quote; the interpreter lines around them differ) are held
to one text here, and that text to one table of records, the claim judge-eval itself writes
(``judge.plumbing.provenance.write_provenance``) among them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from judge.plumbing.provenance import write_provenance

SLURM = Path(__file__).resolve().parents[2] / "slurm"
SCRIPTS = ("eval.sbatch", "rank.sbatch")


def _reader(script: str) -> str:
    """The Python program of ``script``'s claimed_by_this_job: the text between ``-c '`` and its closing quote."""
    text = (SLURM / script).read_text(encoding="utf-8")
    function = re.search(r"^claimed_by_this_job\(\) \{\n(.*?)^\}", text, re.S | re.M)
    assert function, f"{script}: no claimed_by_this_job function"
    program = re.search(r" -c '(.*?)'", function.group(1), re.S)
    assert program, f"{script}: claimed_by_this_job runs no python -c program"
    return program.group(1)


def test_the_two_scripts_carry_one_reader() -> None:
    assert _reader("eval.sbatch") == _reader("rank.sbatch")


#: (what run.json holds, whether it is job 7's claim). None: no run.json at all; a bytes value is written as is.
RECORDS = [
    (None, False),
    ('{"launch": {"slurm_job_id": "7"}}', True),
    ('{"launch": {"slurm_job_id": "6"}}', False),  # an earlier submission's claim
    ('{"launch": {"slurm_job_id": 7}}', False),  # judge-eval writes the id as text
    ('{"launch": {"slurm_job_id": null}}', False),  # a launch outside Slurm
    ('{"launch": null}', False),
    ('{"launch": ["7"]}', False),
    ("{}", False),
    ("[]", False),
    ('"7"', False),
    ("", False),
    ("{", False),  # cut short by a kill
    ("[" * 100_000, False),  # nested past the parser's depth
    (b'{"launch": {"slurm_job_id": "7\xff"}}', False),  # no UTF-8
]  # fmt: skip


def _claimed(program: str, record: Path) -> bool:
    proc = subprocess.run([sys.executable, "-c", program, str(record), "7"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode in (0, 1) and not proc.stderr, proc.stderr  # its two answers, never a traceback
    return proc.returncode == 0


@pytest.mark.parametrize(("held", "claimed"), RECORDS, ids=[f"record-{i}" for i in range(len(RECORDS))])
@pytest.mark.parametrize("script", SCRIPTS)
def test_each_copy_reads_a_claim_as_the_table_says(tmp_path: Path, script: str, held, claimed: bool) -> None:
    record = tmp_path / "run.json"
    if isinstance(held, bytes):
        record.write_bytes(held)
    elif held is not None:
        record.write_text(held, encoding="utf-8")
    assert _claimed(_reader(script), record) is claimed


@pytest.mark.parametrize("job", ["7", "6"])
@pytest.mark.parametrize("script", SCRIPTS)
def test_each_copy_reads_the_claim_judge_eval_writes(tmp_path: Path, monkeypatch, script: str, job: str) -> None:
    """The record's format is judge.plumbing.provenance's: a claim written by job 7 is this job's, one by job 6 not;
    a run.json a folder that is not a run holds (a directory by that name) is none."""
    monkeypatch.setenv("SLURM_JOB_ID", job)
    record = write_provenance(tmp_path / "shard", "judge-eval run", {})
    assert _claimed(_reader(script), record) is (job == "7")
    (tmp_path / "folder" / "run.json").mkdir(parents=True)
    assert _claimed(_reader(script), tmp_path / "folder" / "run.json") is False
