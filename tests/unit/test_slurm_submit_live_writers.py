"""`judge-train submit` against what the tester met on a one-host Slurm: a second submission into a run folder a
queued job or a live process already trains in (its job failed at the lock, breaking an afterok chain), a kept
script left behind by a submission sbatch refused, a --time submit could not read (the signal check skipped), the
SBATCH_* warning missing from --dry-run, and how to follow a submitted job. Fake sbatch and squeue; no cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from judge.plumbing.run_folder import hold_run_folder
from tests.support.fake_commands import write_executables
from train import slurm_submit


def _fake_slurm(tmp_path: Path, monkeypatch, *, squeue: str = "", sbatch: str = "echo 43\n", state: str = "",
                state_exit: int = 0) -> None:
    """sbatch and squeue first on PATH: squeue prints ``squeue`` (its lines, "<id> <command>"), or, asked for a
    job's state and reason (``%T %r``), ``state`` and exits ``state_exit``; each call of either is kept in
    tmp_path/calls."""
    calls = tmp_path / "calls"
    write_executables(tmp_path / "bin", {
        "squeue": f'echo "squeue $*" >>"{calls}"\n'
                  f'case "$*" in *"%T %r"*) printf "%s" "$FAKE_SQUEUE_STATE"; exit {state_exit} ;; esac\n'
                  'printf "%s" "$FAKE_SQUEUE_OUT"\n',
        "sbatch": f'echo "sbatch $*" >>"{calls}"\n{sbatch}',
    })  # fmt: skip
    monkeypatch.setenv("FAKE_SQUEUE_OUT", squeue)
    monkeypatch.setenv("FAKE_SQUEUE_STATE", state)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def _calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


def _submit(submit_config: Path, *argv: str) -> int:
    return slurm_submit.main(["--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2", *argv])


# --- a run folder a live job or process already trains in ------------------------------------------------------


def test_a_second_submission_into_a_queued_jobs_folder_is_refused_naming_that_job(tmp_path, submit_config, capsys,
                                                                                  monkeypatch):  # fmt: skip
    """The same command twice: the second job failed when it ran ("... is in use by judge-train run"), FAILED. Now
    squeue's live job whose batch script submit kept in the folder's slurm/ refuses it at submit, exit 2, one line
    naming the job and how to go on; nothing reaches sbatch and no second script is kept."""
    out = tmp_path / "run"
    first = out / "slurm" / "train-20260101T000000Z.sbatch"
    first.parent.mkdir(parents=True)
    first.write_text("#!/bin/bash\n")
    _fake_slurm(tmp_path, monkeypatch, squeue=f"40 {tmp_path}/other/slurm/train-20260101T000000Z.sbatch\n"
                                              f"41 {first}\n")
    assert _submit(submit_config, "--output-dir", str(out)) == 2
    err = capsys.readouterr().err
    assert err == (f"judge-train submit: job 41 ({first}) already trains in {out}; this job would stop at its lock: "
                   "wait for it, scancel 41, or give another --output-dir\n")
    assert [call.split()[0] for call in _calls(tmp_path)] == ["squeue"]
    assert "--user" in _calls(tmp_path)[0] and "%i %o" in _calls(tmp_path)[0]
    assert sorted((out / "slurm").iterdir()) == [first]


def test_the_queued_job_question_is_squeues_script_column_for_this_uid(tmp_path, monkeypatch):
    """The exact question: this process's jobs by uid (a $USER left naming another account, as a container image's
    can, asked about that account's jobs and found none), each with squeue's %o, the job's command: for a batch job
    the script sbatch was given, absolute, printed whole. A run folder with a space in its name is read whole too."""
    import subprocess

    from judge.plumbing import slurm_requeue

    slurm_dir = tmp_path / "my runs" / "slurm"
    own, other = slurm_dir / "train-20260102T000000Z.sbatch", slurm_dir / "train-20260101T000000Z.sbatch"
    asked = []

    def squeue(args, timeout_s, *more, **named):
        asked.append(args)
        return subprocess.CompletedProcess(args, 0, f"40 {tmp_path}/elsewhere/slurm/{other.name}\n41 {own}\n"
                                                    f"42 {other}\n", "")

    monkeypatch.setattr(slurm_requeue, "run_query", squeue)
    for name in ("USER", "LOGNAME"):
        monkeypatch.setenv(name, "someone-else")
    assert slurm_submit._queued_writer(slurm_dir, own) == f"42 ({other})"
    assert asked == [["squeue", "--noheader", "--user", str(os.getuid()), "--format", "%i %o"]]


def test_a_job_in_another_folder_or_one_that_waits_is_submitted(tmp_path, submit_config, capsys, monkeypatch):
    """A live job of another run folder is no reason to refuse; a job that waits for another (afterok on the one
    training this folder) is the folder's next job, not asked about."""
    out = tmp_path / "run"
    _fake_slurm(tmp_path, monkeypatch, squeue=f"40 {tmp_path}/other/slurm/train-20260101T000000Z.sbatch\n")
    assert _submit(submit_config, "--output-dir", str(out)) == 0
    capsys.readouterr()
    (kept,) = (out / "slurm").glob("train-*.sbatch")
    monkeypatch.setenv("FAKE_SQUEUE_OUT", f"41 {kept}\n")
    (tmp_path / "calls").unlink()
    assert _submit(submit_config, "--output-dir", str(out), "--sbatch-arg=--dependency=afterok:41") == 0
    # the run folder's question not asked; only the submitted job's state, after sbatch
    assert [call.split()[0] for call in _calls(tmp_path)] == ["sbatch", "squeue"]
    assert _calls(tmp_path)[1] == "squeue --noheader --jobs 43 --format %T %r"


def test_dry_run_asks_slurm_nothing(tmp_path, submit_config, capsys, monkeypatch):
    _fake_slurm(tmp_path, monkeypatch, squeue=f"41 {tmp_path}/run/slurm/train-20260101T000000Z.sbatch\n")
    assert _submit(submit_config, "--dry-run") == 0
    assert _calls(tmp_path) == []


def test_a_run_folder_a_live_process_holds_is_refused_naming_it(tmp_path, submit_config, capsys, monkeypatch):
    """A run started by hand (or a job submitted otherwise) holds the folder's run.lock: its job would stop there.
    Refused at submit (--dry-run too), naming the holder; the holder keeps its lock."""
    monkeypatch.setenv("SLURM_JOB_ID", "77")  # the holder's job, recorded for the message
    out = tmp_path / "run"
    with hold_run_folder(out, "judge-train run"):
        monkeypatch.delenv("SLURM_JOB_ID")
        assert _submit(submit_config, "--output-dir", str(out), "--dry-run") == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"judge-train submit: {out} is in use by judge-train run (pid {os.getpid()} ")
        assert captured.err.endswith("; Slurm job 77); its job would stop there: wait for that run to end or scancel "
                                     "it, or give another --output-dir\n")
        with pytest.raises(Exception, match="in use by"):  # still held
            with hold_run_folder(out, "judge-train run"):
                pass
    assert _submit(submit_config, "--output-dir", str(out), "--dry-run") == 0


# --- a submission sbatch refused leaves no script -----------------------------------------------------------------


@pytest.mark.parametrize("existing", [False, True])
def test_a_refused_submission_removes_its_kept_script_and_the_folders_made_for_it(tmp_path, submit_config, capsys,
                                                                                   monkeypatch, existing):  # fmt: skip
    """sbatch refused `--partition gpu`: runs/<x>/slurm/train-*.sbatch stayed, read later as a job that ran. Now it
    goes, and so do slurm/ and the run folder when submit made them; a folder that was there stays."""
    out = tmp_path / "run"
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    _fake_slurm(tmp_path, monkeypatch,
                sbatch='echo "sbatch: error: invalid partition specified: gpu" >&2\nexit 1\n')
    assert _submit(submit_config, "--output-dir", str(out), "--partition", "gpu") == 1
    err = capsys.readouterr().err
    assert err.startswith("judge-train submit: sbatch refused the job (1): sbatch: error: invalid partition "
                          "specified: gpu (nothing submitted; ")
    assert out.exists() is existing
    if existing:
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


# --- --time that submit cannot read -------------------------------------------------------------------------------


# superscripts: isdigit, not int; past 4,300 digits int() refuses a decimal string
@pytest.mark.parametrize("limit", ["24h", "1:2:3:4", "-5", "2-x", "", "9\u00b2", "\u00b9-0", pytest.param("9" * 5000, id="5000 digits"),
                                   pytest.param("1-" + "9" * 5000, id="1-(5000 digits)")])
def test_a_time_limit_submit_cannot_read_is_refused_before_the_data_checks(tmp_path, submit_config, capsys,
                                                                          monkeypatch, limit):  # fmt: skip
    """`--time 24h` read as no limit skipped the check of --signal-before-s against it, and sbatch refused the job
    only after every check. Refused first (exit 2), naming Slurm's forms."""
    def no_data_check(config, download):
        raise AssertionError("the data was checked first")

    monkeypatch.setattr("train.cli.check_training_data", no_data_check)
    assert _submit(submit_config, "--time", limit, "--dry-run") == 2
    assert capsys.readouterr().err == (f"judge-train submit: --time {limit!r} is no Slurm time limit; give minutes "
                                       "(90), minutes:seconds (90:00), hours:minutes:seconds (48:00:00), days-hours "
                                       "(2-0), days-hours:minutes (2-00:00) or days-hours:minutes:seconds "
                                       "(2-00:00:00)\n")


@pytest.mark.parametrize(("limit", "seconds"), [("90", 5400), ("90:30", 5430), ("48:00:00", 172800),
                                                ("2-0", 172800), ("2-01:30", 178200), ("1-00:00:05", 86405),
                                                ("UNLIMITED", 0)])  # fmt: skip
def test_the_time_forms_named_are_read(limit, seconds):
    assert slurm_submit.slurm_time_s(limit) == seconds


# --- --dry-run names the SBATCH_* variables a submit leaves out ---------------------------------------------------


def test_dry_run_warns_of_the_sbatch_variables_it_would_leave_out(tmp_path, submit_config, capsys, monkeypatch):
    monkeypatch.setenv("SBATCH_TIMELIMIT", "00:05:00")
    assert _submit(submit_config, "--dry-run") == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("#!/bin/bash")
    assert captured.err == ("judge-train submit: warning: not passing SBATCH_TIMELIMIT to sbatch (they would "
                            "override the rendered #SBATCH lines); give such options with submit's flags or "
                            "--sbatch-arg\n")


# --- how to follow a submitted job ----------------------------------------------------------------------------------


def test_a_submitted_job_is_followed_with_squeue_and_tail(tmp_path, submit_config, capsys, monkeypatch):
    out = tmp_path / "run"
    _fake_slurm(tmp_path, monkeypatch)
    assert _submit(submit_config, "--output-dir", str(out), "--job-name", "dup") == 0
    lines = capsys.readouterr().out.splitlines()
    log = out / "slurm" / "dup-43.out"
    assert lines[0].startswith("submitted job 43: ")
    assert lines[1:] == [f"follow it: squeue -j 43   tail -f {log}", f"log: {log}"]


# --- a job Slurm accepts but cannot start as submitted ----------------------------------------------------------------


def test_a_job_pending_for_a_reason_it_cannot_start_under_is_named_with_what_to_do(tmp_path, submit_config, capsys,
                                                                                    monkeypatch):  # fmt: skip
    """Three nodes asked of a two-node partition: sbatch took the job and it waited in the queue without a word.
    Now squeue's reason right after the submission (PartitionConfig, as the one-host cluster gives it at once) is
    named on stderr with what to do; the job stays submitted, exit 0."""
    _fake_slurm(tmp_path, monkeypatch, state="PENDING PartitionConfig\n")
    assert _submit(submit_config, "--output-dir", str(tmp_path / "run")) == 0
    said = capsys.readouterr()
    assert said.out.startswith("submitted job 43: ")
    assert said.err == ("judge-train submit: warning: job 43 is pending with reason PartitionConfig: it asks for more "
                        "nodes, CPUs, memory or time than its partition gives; it may never start as it stands. "
                        "`scontrol show job 43` says what it asks; `scontrol show partition` says what the partition "
                        "gives; scancel 43 and submit again with fewer --nodes, a shorter --time or another "
                        "--partition\n")
    assert _calls(tmp_path)[-1] == "squeue --noheader --jobs 43 --format %T %r"


@pytest.mark.parametrize("state, state_exit", [
    ("PENDING Resources\n", 0),  # waits for nodes in use: it will start
    ("PENDING Priority\n", 0),
    ("PENDING None\n", 0),  # not yet looked at by a scheduling pass
    ("RUNNING None\n", 0),
    ("PENDING PartitionTimeLimit\n", 1),  # squeue failed: its output is not read
    ("", 1),  # the job already left squeue's view, or squeue could not answer
])  # fmt: skip
def test_a_job_that_can_start_or_a_squeue_that_cannot_say_adds_no_warning(tmp_path, submit_config, capsys, monkeypatch,
                                                                           state, state_exit):  # fmt: skip
    _fake_slurm(tmp_path, monkeypatch, state=state, state_exit=state_exit)
    assert _submit(submit_config, "--output-dir", str(tmp_path / "run")) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("reason, remedy", [
    ("PartitionNodeLimit", "scancel 43 and submit again with fewer --nodes"),
    ("PartitionTimeLimit", "scancel 43 and submit again with fewer --nodes, a shorter --time"),
    ("BadConstraints", "scancel 43 and submit again without the constraint no node has (--sbatch-arg)"),
    ("InvalidAccount", "scancel 43 and submit again with an --account `sacctmgr show assoc user=$USER` lists"),
    ("InvalidQOS", "(--sbatch-arg=--qos=NAME)"),
    # no partition to look at, and no administrator's change that starts it (review)
    ("DependencyNeverSatisfied", "scancel 43; submit it again once the job it waits for has done what the dependency "
                                 "needs"),
])  # fmt: skip
def test_each_reason_named_gets_its_own_words_and_remedy(tmp_path, submit_config, capsys, monkeypatch, reason, remedy):
    from judge.plumbing.slurm_requeue import CANNOT_START_REASONS

    _fake_slurm(tmp_path, monkeypatch, state=f"PENDING {reason}\n")
    assert _submit(submit_config, "--output-dir", str(tmp_path / "run")) == 0
    err = capsys.readouterr().err
    assert f"with reason {reason}: {CANNOT_START_REASONS[reason][0]}; it may never start as it stands." in err
    assert err.rstrip("\n").endswith(remedy) or remedy in err
    assert ("scontrol show partition" in err) == reason.startswith("Partition")
