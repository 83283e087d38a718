"""Real Slurm jobs on a one-host cluster (n1, n2): 2-node training, preemption -> requeue -> resume, eval array.

The training runs go through `judge-train submit` and slurm/train.sbatch exactly as on a GPU cluster, with one
CPU rank per node (`--gpus-per-node 0`), gloo, and torchrun's static rendezvous on the first node. Two runs of
the tiny seq2seq config start together (the cluster has room for both): a reference run, and one that gets
SIGUSR1 mid-training (`scancel --signal=USR1`, what `--signal=USR1@N` delivers before the time limit), saves,
requeues itself and resumes. Both must end at the same step with the same loss.

Then two more start together: one in the preemptible partition, preempted by a job of the default partition
(SIGTERM within GraceTime; the trainer saves and requeues itself), and a 2-node DeepSpeed ZeRO-3 run hit by
`scontrol requeue` (SIGTERM; Slurm requeues it), held mid-training (cgroup freezer) until the preemption is decided so
the requeue cannot miss it. Both resume from their checkpoints to the reference's final step and loss. The jobs
import this checkout (``slurm_job_env`` sets PYTHONPATH).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.support.fixtures_models import free_port
from tests.support.process_freezer import (FrozenProcesses, freeze_processes, freezer_unavailable_reason,
                                         stop_processes)
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from tests.support.slurm_cluster import (
    FINAL_STATES,
    SlurmCluster,
    job_processes,
    signal_pending,
    signal_processes,
)

# Real Slurm daemons and jobs that train or serve: part of `make test`, not of the quick `-m "not slow"` loop.
REPO = Path(__file__).resolve().parents[3]
MAX_STEPS = 4
SAVE_STEPS = 2
#: The preempted run gets its signal once rank 0 has logged this many optimizer steps.
SIGNAL_AFTER_STEPS = 1
JOB_TIMEOUT_S = 420.0
#: The preemption pair: two runs of two starts each, one with DeepSpeed.
PREEMPTION_TIMEOUT_S = 720.0
#: The longest a frozen run waits for a signal Slurm sends it (scancel --signal, a preemption, scontrol requeue) to be
#: pending: a CI run under load saw no SIGTERM in 60 s after a preemption showed. Waiting longer costs nothing when the
#: signal is prompt, and Slurm ends no held run meanwhile: KillWait's SIGKILL only follows the SIGTERM, and a
#: preemption's comes after GraceTime (PREEMPT_GRACE_S, longer than this wait).
SIGNAL_WAIT_S = 300


def _console_scripts(bin_dir: Path) -> Path:
    """A folder with judge-train / judge-eval / judge-serve: the venv's own when installed, else `python -m`
    shims (a console script not yet declared in pyproject.toml)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    venv_bin = Path(sys.executable).parent
    for name, module in (("judge-train", "train.cli"), ("judge-eval", "eval.cli"), ("judge-serve", "serve.cli")):
        if not (venv_bin / name).exists():
            shim = bin_dir / name
            shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
            shim.chmod(0o755)
    return bin_dir


def _short_standard_records(path: Path, n: int) -> Path:
    """The n shortest Standard-split rows of the bundled sample, as JSONL (fast to build; fit max_length 256)."""
    import judge
    from judge.sample_data import sample_data_path

    lines = [line for line in sample_data_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    records = judge.load_records(sample_data_path())
    standard = [line for line, rec in zip(lines, records) if judge.split_of(rec) == "standard"]
    path.write_text("\n".join(sorted(standard, key=len)[:n]) + "\n", encoding="utf-8")
    return path


def _submit(cluster: SlurmCluster, env: dict[str, str], out: Path, data: Path, model: Path, cwd: Path,
            *, partition: str | None = None, extra: tuple[str, ...] = ()) -> int:
    # A one-hour limit: the template's --signal=USR1@600 must not fire on its own (a 15-minute limit did, on a ZeRO-3
    # run slowed by a load average of 20, before the test could requeue it).
    argv = [
        *(["--partition", partition] if partition else []),
        "--config", str(REPO / "configs/train/tiny/seq2seq.yaml"),
        "--nodes", "2", "--gpus-per-node", "0", "--cpus-per-task", "1", "--time", "01:00:00",
        "--output-dir", str(out), "--master-port", str(free_port()),
        *(["--cache-dir", env["JUDGE_CACHE_DIR"]] if env.get("JUDGE_CACHE_DIR") else []),
        "--", "--model_name_or_path", str(model), "--data", str(data), "--max_steps", str(MAX_STEPS), "--save_steps", str(SAVE_STEPS),
        "--gradient_checkpointing", "false", "--disable_tqdm", *extra,
    ]  # fmt: skip
    # A free rendezvous port per job, and the test cluster's cache, as flags: the rendered script sets or unsets every
    # JUDGE_* variable train.sbatch reads, so the submitting environment's do not reach the job.
    # `judge-train submit` in the test's own process (SlurmCluster.judge_train_submit): the same submission without a
    # fresh interpreter importing transformers for the config check.
    status, stdout, stderr = cluster.judge_train_submit(argv, cwd=cwd, env=env)
    assert status == 0, stderr
    match = re.search(r"submitted job (\d+)", stdout)
    assert match, stdout
    return int(match.group(1))


def _log(out: Path, job_id: int) -> str:
    logs = list((out / "slurm").glob(f"*-{job_id}.out"))
    return logs[0].read_text(errors="replace") if logs else ""


def _final_state(out: Path) -> dict:
    checkpoint = out / f"checkpoint-{MAX_STEPS}"
    return json.loads((checkpoint / "trainer_state.json").read_text())


def _logged_steps(out: Path, job_id: int) -> int:
    """Optimizer steps rank 0 has logged so far in the job's log (all runs of the job)."""
    return len(re.findall(r"^0: \{'loss'", _log(out, job_id), re.M))


def _loss_at(state: dict, step: int) -> float:
    return next(entry["loss"] for entry in state["log_history"] if entry.get("step") == step and "loss" in entry)


#: How often the tests read a job's log for its steps: a tiny run's step takes about half a second here, so a
#: once-a-second look could come after two of its four steps (Slurm itself is asked once a second: ``_Every``).
LOG_POLL_S = 0.05


class _Every:
    """True at most once per ``seconds``: Slurm's job records are read at that pace while the logs are read often."""

    def __init__(self, seconds: float):
        self.seconds, self.last = seconds, -float("inf")

    def __call__(self) -> bool:
        if time.monotonic() - self.last < self.seconds:
            return False
        self.last = time.monotonic()
        return True


def _freeze_after_steps(out: Path, job_id: int, steps: int, timeout_s: float) -> FrozenProcesses:
    """Wait for a job to log ``steps`` optimizer steps, then freeze it (cgroup freezer: torchrun agents and ranks)."""
    deadline = time.monotonic() + timeout_s
    while _logged_steps(out, job_id) < steps:
        assert time.monotonic() < deadline, f"job {job_id} logged no step in {timeout_s:.0f} s:\n{_log(out, job_id)[-3000:]}"
        time.sleep(LOG_POLL_S)
    return freeze_processes(job_processes(str(out)))


def _thaw_once_signalled(hold: FrozenProcesses | None, since: float, what: str) -> FrozenProcesses | None:
    """Thaw a held run once Slurm's SIGTERM is pending in it (or after ``SIGNAL_WAIT_S``) and return None; until then
    return the hold. The SIGTERM then lands at the step the run was frozen at: the freezer keeps the run frozen
    through the SIGCONT slurmd sends before it, a separate request that would continue a SIGSTOP'd run, free to take
    its remaining steps before the SIGTERM comes."""
    if hold is None:
        return None
    pending = signal_pending(hold.pids, signal.SIGTERM)
    if not pending and time.monotonic() - since <= SIGNAL_WAIT_S:
        return hold
    print(f"\n{what}: thawed {time.monotonic() - since:.1f} s later, SIGTERM pending in {len(pending)} of "
          f"{len(hold.pids)} processes")
    hold.thaw()
    return None


@pytest.fixture(scope="module")
def training_runs(slurm_cluster, slurm_job_env, tmp_path_factory, tiny_causal_dir):
    """Submit the reference and the to-be-preempted run together; signal the second mid-training; wait for both."""
    root = tmp_path_factory.mktemp("slurm-train")
    env = {**slurm_job_env, "PATH": f"{_console_scripts(root / 'bin')}{os.pathsep}{slurm_job_env['PATH']}"}
    data = _short_standard_records(root / "records.jsonl", 12)
    runs = {"reference": root / "reference", "preempted": root / "preempted"}
    started = time.monotonic()
    # The session's tiny Qwen2 (built once) instead of `tiny-qwen2`, which every rank would build again.
    jobs = {name: _submit(slurm_cluster, env, out, data, tiny_causal_dir, root) for name, out in runs.items()}
    signalled_at_step = None
    deadline = time.monotonic() + JOB_TIMEOUT_S
    ask_slurm = _Every(1.0)
    records: dict[str, dict[str, str]] = {}
    while time.monotonic() < deadline:
        if signalled_at_step is None:
            steps = len(re.findall(r"^0: \{'loss'", _log(runs["preempted"], jobs["preempted"]), re.M))
            if steps >= SIGNAL_AFTER_STEPS:
                # Mid-training on any machine: the job is stopped (SIGSTOP, waited for) before Slurm signals it, and
                # thawed only once SIGUSR1 is pending in a rank (the ranks handle it; torchrun ignores it), so the
                # signal lands where the job stood, not after a slow poll let it finish its 4 steps. A rank still to
                # act on its SIGSTOP would take SIGUSR1 first and never hold it pending (stop_processes).
                frozen_pids = stop_processes(job_processes(str(runs["preempted"])))
                try:
                    slurm_cluster.command(["scancel", "--signal=USR1", str(jobs["preempted"])])
                    pending_deadline = time.monotonic() + SIGNAL_WAIT_S
                    while not signal_pending(frozen_pids, signal.SIGUSR1):
                        assert time.monotonic() < pending_deadline, f"SIGUSR1 never reached the frozen job {frozen_pids}"
                        time.sleep(0.05)
                    signalled_at_step = _logged_steps(runs["preempted"], jobs["preempted"])
                finally:
                    signal_processes(frozen_pids, signal.SIGCONT)
        if ask_slurm():
            records = {name: slurm_cluster.job(job_id) for name, job_id in jobs.items()}
            if all(r["JobState"] in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL") for r in records.values()):
                break
        time.sleep(LOG_POLL_S)
    else:
        pytest.fail(f"training jobs not done in {JOB_TIMEOUT_S:.0f} s: {records}")
    elapsed = time.monotonic() - started
    print(f"\ntwo 2-node training jobs (one preempted and resumed) took {elapsed:.0f} s")
    return {"runs": runs, "jobs": jobs, "records": records, "signalled_at_step": signalled_at_step, "root": root,
            "env": env, "data": data}


def test_two_node_training_job_trains_and_checkpoints(training_runs):
    """slurm/train.sbatch on 2 nodes: both ranks rendezvous, train, checkpoint and export; the job completes."""
    out, job_id = training_runs["runs"]["reference"], training_runs["jobs"]["reference"]
    record, log = training_runs["records"]["reference"], _log(out, job_id)
    assert record["JobState"] == "COMPLETED", f"{record}\n{log[-4000:]}"
    assert record["NodeList"] == "n[1-2]" and record["Restarts"] == "0"
    # The banner, and the arithmetic the recipe logged: one rank per node, accumulation 1 on 2 ranks.
    assert f"judge-train: Slurm job {job_id} (restart 0)" in log
    assert "nodes       2: n[1-2] x 1 rank" in log
    assert "rendezvous  127.0.0.1:" in log  # the fake names do not resolve: Slurm's NodeAddr
    # What submit rendered (global batch 2 over 2 ranks: accumulation 1) is what the recipe derived in the job.
    assert "accumulate  1" in log
    launch = json.loads((out / "run.json").read_text())["launch"]
    assert (launch["world_size"], launch["gradient_accumulation_steps"]) == (2, 1)
    assert launch["slurm_job_id"] == str(job_id)
    # Both node tasks wrote output (srun --label prefixes it with the task number).
    assert re.search(r"^0: ", log, re.M) and re.search(r"^1: ", log, re.M)
    state = _final_state(out)
    assert state["global_step"] == MAX_STEPS
    checkpoint = out / f"checkpoint-{MAX_STEPS}"
    # One RNG state per rank: both ranks saved into the checkpoint.
    assert (checkpoint / "rng_state_0.pth").is_file() and (checkpoint / "rng_state_1.pth").is_file()
    assert (checkpoint / "optimizer.pt").is_file() and (checkpoint / "model.safetensors").is_file()
    assert (out / "export" / "config.json").is_file()
    losses = [e["loss"] for e in state["log_history"] if "loss" in e]
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]


def test_preempted_job_saves_requeues_and_resumes_to_the_same_result(training_runs):
    """SIGUSR1 mid-run -> checkpoint -> scontrol requeue -> rerun with --resume -> same final step and loss."""
    out, job_id = training_runs["runs"]["preempted"], training_runs["jobs"]["preempted"]
    record, log = training_runs["records"]["preempted"], _log(out, job_id)
    assert training_runs["signalled_at_step"] is not None, "the run ended before it could be signalled"
    assert record["JobState"] == "COMPLETED", f"{record}\n{log[-4000:]}"
    assert record["Restarts"] == "1"
    # First run: signal -> save -> requeue; second run (SLURM_RESTART_COUNT=1): resume from that checkpoint.
    first, _, second = log.partition(f"judge-train: Slurm job {job_id} (restart 1)")
    assert second, f"no rerun banner in the log:\n{log[-4000:]}"
    assert "resume      no" in first and "SIGUSR1" in first
    assert "resume      yes" in second and "--resume" in second
    # The rerun saw SLURM_RESTART_COUNT=1 and resumed from the checkpoint the signal produced.
    run = json.loads((out / "run.json").read_text())
    assert run["launch"]["slurm_restart_count"] == "1"
    assert [e["slurm_restart_count"] for e in run["earlier_launches"]] == ["0"]  # the first start, under Slurm
    stopped = int(Path(run["launch"]["resume_from"]).name.split("-")[1])
    assert SIGNAL_AFTER_STEPS <= stopped < MAX_STEPS
    resumed, reference = _final_state(out), _final_state(training_runs["runs"]["reference"])
    assert resumed["global_step"] == reference["global_step"] == MAX_STEPS
    assert _loss_at(resumed, MAX_STEPS) == pytest.approx(_loss_at(reference, MAX_STEPS), rel=1e-5)
    assert (out / "export" / "config.json").is_file()


# ---------------------------------------------------------------------------------------------------------------
# Preemption as Slurm does it: SIGTERM from a higher-priority partition and from `scontrol requeue`
# ---------------------------------------------------------------------------------------------------------------

ZERO3 = str(REPO / "configs" / "deepspeed" / "zero3.json")
#: The high-priority job's run time: the preempted run waits this long in the queue, then resumes.
HIGH_PRIORITY_SLEEP_S = 5


@pytest.fixture(scope="module")
def preemption_runs(training_runs, slurm_cluster, tiny_causal_dir):
    """After the first pair: a 2-node ZeRO-3 run, frozen at its first step, then a run in the preemptible partition
    (the cluster is then full). A job of the default partition that needs their CPUs then preempts the first one (SIGTERM,
    GraceTime); once that preemption is decided, ``scontrol requeue`` hits the ZeRO-3 run (SIGTERM). Both resume.

    The requeue must come after the preemption (a requeued run frees CPUs the high-priority job could take without
    preempting anyone), and each SIGTERM must reach its run before the run has taken its 4 steps (a step takes about
    half a second; a scheduling pass 2 s). So each run is frozen as soon as it has logged a step, in a freezer cgroup
    (``tests.support.process_freezer``): slurmd's SIGCONT, sent before its SIGTERM, cannot continue it as it continues
    a SIGSTOP'd one. The preempted run stays frozen until Slurm's SIGTERM is pending in it, the ZeRO-3 run until the
    preemption is decided, then until the SIGTERM of its requeue is pending: each signal lands at the step its run was
    frozen at. The logs are read every ``LOG_POLL_S``."""
    reason = freezer_unavailable_reason()
    if reason is not None:
        pytest.skip(f"the preempted runs cannot be held at a step: {reason}")
    root, data = training_runs["root"], training_runs["data"]
    # Where DeepSpeed would build an op: the repository cache tests/support/fixtures_train.py uses too.
    env = {**training_runs["env"], "TORCH_EXTENSIONS_DIR": str(REPO / ".cache" / "torch_extensions")}
    runs = {"preempted": root / "partition-preempted", "zero3": root / "zero3-requeued"}
    started = time.monotonic()
    # The ZeRO-3 run first: it is frozen at its first logged step (below), so it is still RUNNING whenever the other
    # logs its own, however long the second submission takes (`judge-train submit` checks the config by building
    # TrainingArguments; on a loaded machine that, and sbatch, can take long enough for a first-submitted run to finish).
    zero3 = _submit(slurm_cluster, env, runs["zero3"], data, tiny_causal_dir, root, extra=("--deepspeed", ZERO3))
    # Frozen at its first step before the other run is even submitted: its steps take about half a second, and the
    # second submission seconds, so a run left going would finish first (it did, every run on a loaded machine).
    # torchrun agents and both ranks are frozen (a frozen rank's peer waits in its collective; ddp_timeout 1800 s).
    zero3_frozen: FrozenProcesses | None = _freeze_after_steps(runs["zero3"], zero3, SIGNAL_AFTER_STEPS,
                                                                PREEMPTION_TIMEOUT_S)
    preempted_frozen: FrozenProcesses | None = None
    try:
        jobs = {"preempted": _submit(slurm_cluster, env, runs["preempted"], data, tiny_causal_dir, root,
                                     partition=slurm_cluster.preemptible_partition), "zero3": zero3}  # fmt: skip
        # Held mid-training, as the ZeRO-3 run is, until Slurm's SIGTERM is pending in it: a scheduling pass (2 s)
        # is long enough for a 4-step run to finish, and PreemptTime shows before slurmd delivers the signal. Frozen
        # by the log-only wait, before anything is asked of Slurm: on a loaded machine a few `scontrol show job`
        # between its first logged step and the freeze took longer than its remaining steps.
        preempted_frozen = _freeze_after_steps(runs["preempted"], jobs["preempted"], SIGNAL_AFTER_STEPS,
                                               PREEMPTION_TIMEOUT_S)
        preempted_at_step = _logged_steps(runs["preempted"], jobs["preempted"])
        # Both nodes' CPUs are taken (one per node by each run): the high-priority job fits only by preempting the
        # run of the lower partition (the ZeRO-3 run is in the same tier: not preemptible).
        records: dict[str, dict[str, str]] = {name: slurm_cluster.job(job_id) for name, job_id in jobs.items()}
        assert all(r["JobState"] == "RUNNING" for r in records.values()), {
            n: r["JobState"] for n, r in records.items()}
        high = slurm_cluster.sbatch(
            ["-N2", "--ntasks-per-node=1", "--cpus-per-task=1", f"--output={root}/high-%j.out",
             "--wrap", f"sleep {HIGH_PRIORITY_SLEEP_S}"], cwd=root,
        )  # fmt: skip
        requeued_at_step = None
        preemption_decided = False
        decided_at = requeued_at = 0.0
        ask_slurm = _Every(1.0)
        deadline = time.monotonic() + PREEMPTION_TIMEOUT_S
        while time.monotonic() < deadline:
            if ask_slurm():
                records = {name: slurm_cluster.job(job_id) for name, job_id in jobs.items()}
            # PreemptTime is set once Slurm decides to preempt, and cleared again by the rerun: remember it was seen.
            preemption_decided = preemption_decided or (
                records["preempted"].get("PreemptTime", "None") != "None"
                or records["preempted"].get("Restarts", "0") != "0")
            if preemption_decided:
                decided_at = decided_at or time.monotonic()
                preempted_frozen = _thaw_once_signalled(preempted_frozen, decided_at, "preempted run (since its "
                                                        "preemption showed)")
            if zero3_frozen is not None and preemption_decided:
                if requeued_at_step is None:
                    # Requeued while frozen, thawed once the SIGTERM reached it: thawed before the requeue, the run
                    # could take its remaining steps before slurmd's signal came.
                    requeued_at_step = _logged_steps(runs["zero3"], jobs["zero3"])
                    slurm_cluster.command(["scontrol", "requeue", str(jobs["zero3"])])
                    requeued_at = time.monotonic()
                zero3_frozen = _thaw_once_signalled(zero3_frozen, requeued_at, "ZeRO-3 run (since its requeue)")
            if all(r["JobState"] in FINAL_STATES for r in records.values()):
                break
            time.sleep(LOG_POLL_S)
        else:
            pytest.fail(f"preemption jobs not done in {PREEMPTION_TIMEOUT_S:.0f} s: {records}\n"
                        + "\n".join(slurm_cluster.output_tail(job_id) for job_id in jobs.values()))
    finally:
        # A run left frozen would outlive the test: under cgroup v1 not even Slurm's SIGKILL ends a frozen process.
        # The second hold is thawed even where the first hold's thaw raises.
        try:
            if zero3_frozen is not None:
                zero3_frozen.thaw()
        finally:
            if preempted_frozen is not None:
                preempted_frozen.thaw()
    print(f"\npartition-preempted run + ZeRO-3 run requeued by scontrol took {time.monotonic() - started:.0f} s")
    return {"runs": runs, "jobs": jobs, "records": records, "high": high, "preempted_at_step": preempted_at_step,
            "requeued_at_step": requeued_at_step, "reference": training_runs["runs"]["reference"]}


def _check_resumed(out: Path, job_id: int, record: dict[str, str], reference: Path, *, rel: float,
                   drop_within: float | None = None) -> int:
    """The job ran twice (restart 0, then 1), stopped by SIGTERM, resumed from its checkpoint and ended at the
    reference's final step and loss; returns the step it stopped at. With ``drop_within``, the final loss is held
    instead to the reference's drop from its first step, within that share of it (a run on another reduction path:
    Adam's sign-like early steps at this learning rate turn its summation-order differences into visible ones)."""
    log = _log(out, job_id)
    assert record["JobState"] == "COMPLETED", f"{record}\n{log[-4000:]}"
    assert record["Restarts"] == "1", record
    first, _, second = log.partition(f"judge-train: Slurm job {job_id} (restart 1)")
    assert second, f"no rerun banner in the log:\n{log[-4000:]}"
    assert "received SIGTERM" in first, first[-4000:]
    assert "resume      yes" in second and "--resume" in second
    run = json.loads((out / "run.json").read_text())
    assert run["launch"]["slurm_restart_count"] == "1"
    stopped = int(Path(run["launch"]["resume_from"]).name.split("-")[1])
    assert SIGNAL_AFTER_STEPS <= stopped < MAX_STEPS
    resumed, expected = _final_state(out), _final_state(reference)
    assert resumed["global_step"] == expected["global_step"] == MAX_STEPS
    assert _loss_at(resumed, 1) == pytest.approx(_loss_at(expected, 1), rel=rel)  # one forward, same weights
    if drop_within is None:
        assert _loss_at(resumed, MAX_STEPS) == pytest.approx(_loss_at(expected, MAX_STEPS), rel=rel)
    else:
        drops = [_loss_at(state, 1) - _loss_at(state, MAX_STEPS) for state in (resumed, expected)]
        assert abs(drops[0] - drops[1]) <= drop_within * abs(drops[1]), drops
    assert (out / "export" / "config.json").is_file()
    return stopped


def test_partition_preemption_requeues_and_resumes_to_the_same_result(preemption_runs, slurm_cluster):
    """A job of the higher-priority partition preempts a training run (SIGTERM within GraceTime): it saves, requeues
    itself (Slurm alone would end it COMPLETED), waits for the preemptor and resumes to the reference's loss."""
    out, job_id = preemption_runs["runs"]["preempted"], preemption_runs["jobs"]["preempted"]
    record = preemption_runs["records"]["preempted"]
    assert preemption_runs["high"] is not None, "the run ended before it could be preempted"
    assert record["Partition"] == slurm_cluster.preemptible_partition
    high = slurm_cluster.job(preemption_runs["high"])
    assert high["JobState"] == "COMPLETED" and high["Partition"] == slurm_cluster.partition
    # The rerun started only after the preemptor had its CPUs (started before the rerun's start).
    assert high["StartTime"] <= record["StartTime"], (high, record)
    _check_resumed(out, job_id, record, preemption_runs["reference"], rel=1e-5)
    assert "requeueing Slurm job" in _log(out, job_id)  # by the trainer, after its save


def test_scontrol_requeue_of_a_two_node_zero3_run_resumes_from_its_zero_checkpoint(preemption_runs):
    """`scontrol requeue` (SIGTERM) mid-run: both ZeRO-3 ranks save their partitions, Slurm requeues the job, the
    rerun loads the ZeRO checkpoint and ends at the DDP reference's step and loss (ZeRO-3 reorders reductions:
    its first loss to 1e-4, its drop to the last step within 2 % of the reference's, as
    tests/integration/training/test_train_deepspeed.py holds one step)."""
    out, job_id = preemption_runs["runs"]["zero3"], preemption_runs["jobs"]["zero3"]
    # The fixture holds the run in a frozen cgroup until it sends the requeue, so the run cannot finish first.
    assert preemption_runs["requeued_at_step"] is not None, preemption_runs["records"]["zero3"]
    stopped = _check_resumed(out, job_id, preemption_runs["records"]["zero3"], preemption_runs["reference"], rel=1e-4,
                             drop_within=0.02)
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["deepspeed"] == ZERO3 and run["launch"]["world_size"] == 2
    # Each rank wrote its own partition of the parameters and optimizer state into the checkpoint it resumed from.
    zero_dir = out / f"checkpoint-{stopped}" / f"global_step{stopped}"
    for rank in (0, 1):
        assert list(zero_dir.glob(f"*zero_pp_rank_{rank}_*optim_states.pt")), sorted(zero_dir.iterdir())
    assert "is being requeued by Slurm" in _log(out, job_id)  # scontrol had requeued it: no second requeue


# ---------------------------------------------------------------------------------------------------------------
# Evaluation: a job array over shards, merged and scored by a dependent job
# ---------------------------------------------------------------------------------------------------------------

VERDICT = "[FEEDBACK] Ответ верный и полный. [RESULT] 1 [END]"


def _judge_stub(path: str, body: dict) -> tuple[int, dict]:
    """An OpenAI-compatible endpoint answering every chat completion with one fixed verdict.

    The judge itself is not under test here (eval's own tests run real vLLM); the jobs' plumbing is. It is a
    network boundary, so the test counts the requests that cross it.
    """
    if path != "/v1/chat/completions":
        return 404, {"error": {"message": "not found"}}
    return 200, chat_completion(VERDICT, body.get("model", "stub-judge"))


def test_eval_array_and_dependent_merge(slurm_cluster, slurm_job_env, tmp_path):
    """3 array tasks judge 3 contiguous shards; the afterok merge job concatenates them and scores every item."""
    import judge

    data = _short_standard_records(tmp_path / "records.jsonl", 7)  # 7 records over 3 shards: 3 + 3 + 1
    n_items = len(judge.load_records(data))
    server = ScriptedEndpoint(_judge_stub, model="stub-judge", max_model_len=None)
    try:
        env = {
            **slurm_job_env,
            "PATH": f"{_console_scripts(tmp_path / 'bin')}{os.pathsep}{slurm_job_env['PATH']}",
            "JUDGE_EVAL_JUDGE": server.base_url,
            "JUDGE_EVAL_DATA": str(data),
            "JUDGE_EVAL_OUT": str(tmp_path / "eval"),
        }
        started = time.monotonic()
        array = slurm_cluster.sbatch(
            ["--array=0-2", "--gpus-per-node=0", "--cpus-per-task=1", f"--output={tmp_path}/%x-%A_%a.out",
             str(REPO / "slurm/eval.sbatch")],
            cwd=tmp_path, env=env,
        )  # fmt: skip
        merge = slurm_cluster.sbatch(
            [f"--dependency=afterok:{array}", "--cpus-per-task=1", f"--output={tmp_path}/%x-%j.out",
             str(REPO / "slurm/eval_merge.sbatch"), "--n-boot", "0", "--vc-repeats", "2", "--no-plots"],
            cwd=tmp_path, env=env,
        )  # fmt: skip
        record = slurm_cluster.wait(merge, timeout_s=JOB_TIMEOUT_S)
        print(f"\neval array (3 tasks) + merge took {time.monotonic() - started:.0f} s")
    finally:
        server.close()
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("*.out")))
    assert record["JobState"] == "COMPLETED", f"{record}\n{logs[-5000:]}"
    for task in range(3):
        assert slurm_cluster.job(f"{array}_{task}")["JobState"] == "COMPLETED"
        assert f"judge-eval shard {task}/3" in logs
    shard_sizes = [len((tmp_path / "eval" / "shards" / str(t) / "data.jsonl").read_text().splitlines()) for t in range(3)]
    assert shard_sizes == [3, 3, 1]
    merged = [json.loads(line) for line in (tmp_path / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert sorted(row["id"] for row in merged) == sorted(rec.id for rec in judge.load_records(data))
    assert all(row["parse_ok"] and row["score"] == 1 for row in merged)
    assert len(server.bodies("/v1/chat/completions")) == n_items
    # The merge wrote the shards' common run.json beside the merged predictions: score reports the judge's settings.
    assert json.loads((tmp_path / "eval" / "run.json").read_text())["config"]["data"] == str(data)
    run = json.loads((tmp_path / "eval" / "metrics.json").read_text())["run"]
    assert run["model"] == "stub-judge" and run["backend"] and run["prompt_version"] and run["verdict_format"]


def test_serve_job_prints_its_endpoint(slurm_cluster, slurm_job_env, tiny_causal_dir, tmp_path):
    """slurm/serve.sbatch hands judge-serve the model, host and port and writes the endpoint other nodes use.

    `--print-config` (passed through the script's arguments) makes judge-serve print its resolved settings and
    exit instead of starting vLLM: the job's plumbing is under test, the server has its own tests.
    """
    env = {
        **slurm_job_env,
        "PATH": f"{_console_scripts(tmp_path / 'bin')}{os.pathsep}{slurm_job_env['PATH']}",
        "JUDGE_MODEL": str(tiny_causal_dir),
        "JUDGE_PORT": "8765",
        "JUDGE_ENDPOINT_DIR": str(tmp_path / "endpoints"),
    }
    job = slurm_cluster.sbatch(
        ["--gpus-per-node=0", "--cpus-per-task=1", f"--output={tmp_path}/%x-%j.out",
         str(REPO / "slurm/serve.sbatch"), "--print-config"],
        cwd=tmp_path, env=env,
    )  # fmt: skip
    record = slurm_cluster.wait(job, timeout_s=120)
    log = (tmp_path / f"judge-serve-{job}.out").read_text()
    assert record["JobState"] == "COMPLETED", log
    assert "endpoint  http://127.0.0.1:8765/v1" in log
    # Written while the job runs (the unit tests read it then); removed as it ends, so no client polls a dead URL.
    assert (tmp_path / "endpoints").is_dir()
    assert not (tmp_path / "endpoints" / f"judge-serve-{job}.endpoint").exists()
    config = json.loads(log[log.index("{"):log.rindex("}") + 1])
    assert (config["model"], config["host"], config["port"]) == (str(tiny_causal_dir), "0.0.0.0", 8765)
