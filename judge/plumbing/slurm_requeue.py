"""Whether a SIGTERM'd Slurm job goes back in the queue, and putting it there: the one rule for every job script.

A SIGTERM is what ``scontrol requeue``, ``scancel`` and a preemption send first (SIGKILL following after KillWait or
the partition's GraceTime). Which of them sent it is read from the job's record (``scontrol show job -o``):

* ``Restarts`` above ``SLURM_RESTART_COUNT``: Slurm is requeueing the job already (``scontrol requeue`` by hand,
  preemption without a grace; Slurm counts its requeue at once): nothing to do, and a second requeue is not asked.
* preempted (``PreemptTime`` set) and still RUNNING: ``scontrol requeue``. Under partition preemption with a GraceTime
  (PreemptMode=REQUEUE) a job that ends within the grace ends COMPLETED or FAILED and is *not* requeued by Slurm
  (observed with Slurm 22.05 on the one-host test cluster): this requeue is what brings it back.
* otherwise (CANCELLED by ``scancel``, TIMEOUT): the operator or the limit ended it; no requeue (``scontrol requeue``
  would bring back even a cancelled batch job).
* no record (the controller could not be asked): not requeued, and the log says it could not tell.

train.preemption asks it on rank 0 after a signal-triggered save; slurm/train.sbatch runs it
(``python -m judge.plumbing.slurm_requeue``) when a SIGTERM came: before each step it would start (the port probes,
the checkpoint survey, GRPO's vLLM server, the training step), when its setup fails after one (the signal kills the
step it waits on too), and after its training step when the signal came before any rank could save (the data, the
model and DeepSpeed still loading) and nothing in the step requeued the job; slurm/eval.sbatch and
slurm/rank.sbatch run it the same way when their task's ``judge-eval`` was stopped (or failed) or a SIGTERM came
between steps.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from typing import Mapping

__all__ = ["run_client", "run_query", "signal_name", "exit_words", "job_record", "requeue_job", "requeue_if_preempted",
           "CANNOT_START_REASONS", "main"]

logger = logging.getLogger(__name__)

#: Seconds to wait for ``scontrol show job`` and ``scontrol requeue`` (train.preemption passes its own).
SHOW_JOB_TIMEOUT_S = 30
REQUEUE_TIMEOUT_S = 60


#: Pending reasons with which Slurm keeps a job it cannot start as submitted: reason -> (what it means, what to do,
#: ``{job}`` standing for the job's id), in this module's words (Slurm's own are in squeue(1), "JOB REASON CODES").
#: Slurm queues such a job without a word when the cluster does not enforce partition limits at submission
#: (``EnforcePartLimits=NO``, its default). The reason is set when the job is submitted, before a scheduling pass:
#: ``PartitionConfig`` first, refined to ``PartitionNodeLimit`` or ``PartitionTimeLimit`` by the pass (Slurm 22.05,
#: the test suite's one-host cluster). An administrator's change to the partition, or nodes returning from DOWN or
#: DRAINED (``PartitionNodeLimit`` covers them too), can still start a job held by a partition's limits; nothing
#: starts one whose dependency can never be met.
_PARTITION = ("`scontrol show partition` says what the partition gives; scancel {job} and submit again with fewer "
              "--nodes, a shorter --time or another --partition")
CANNOT_START_REASONS: dict[str, tuple[str, str]] = {
    "PartitionConfig": ("it asks for more nodes, CPUs, memory or time than its partition gives", _PARTITION),
    "PartitionNodeLimit": ("it asks for more (or fewer) nodes than its partition allows, or the nodes it needs are "
                           "down or drained", _PARTITION),
    "PartitionTimeLimit": ("its --time is longer than its partition allows", _PARTITION),
    "BadConstraints": ("no node satisfies its constraints",
                       "scancel {job} and submit again without the constraint no node has (--sbatch-arg)"),
    "InvalidAccount": ("Slurm does not know its account",
                       "scancel {job} and submit again with an --account `sacctmgr show assoc user=$USER` lists"),
    "InvalidQOS": ("Slurm does not know its QOS, or its account may not use it",
                   "scancel {job} and submit again with a QOS `sacctmgr show assoc user=$USER` lists "
                   "(--sbatch-arg=--qos=NAME)"),
    "DependencyNeverSatisfied": ("a job it depends on ended in a way its dependency excludes, so it will never start",
                                 "scancel {job}; submit it again once the job it waits for has done what the "
                                 "dependency needs"),
}  # fmt: skip


#: Times a query (``scontrol show``, ``squeue``) is asked when its client is killed by a signal before answering.
QUERY_ATTEMPTS = 3


def run_client(args: list[str], timeout_s: float, env: Mapping[str, str] | None = None,
               cwd: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run a Slurm client (``scontrol``, ``squeue``, ``sbatch``, ``scancel``), its output captured as text, with
    SIGPIPE ignored as in this process.

    subprocess gives a child SIGPIPE's default (death) unless told not to. Ignored, a write to a socket closed on the
    client is an error the client handles: libmunge retries a credential transaction after a socket error
    (``m_msg_client_xfer`` in munge's ``src/libmunge/m_msg_client.c``: up to ``MUNGE_SOCKET_RETRY_ATTEMPTS``). Which
    socket the observed SIGPIPE (``run_query``) came from was not established; killed, no retry could run at all.

    Raises:
        OSError: The client cannot be started (not installed).
        subprocess.TimeoutExpired: It took more than ``timeout_s``.
    """
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=cwd, input=stdin,
                          check=False, restore_signals=False)


def run_query(args: list[str], timeout_s: float, env: Mapping[str, str] | None = None,
              log: logging.Logger | None = None, attempts: int = QUERY_ATTEMPTS) -> subprocess.CompletedProcess:
    """Run a Slurm query (``scontrol show ...``, ``squeue ...``) through ``run_client`` and return its result;
    asked again, up to ``attempts`` times, while the client is killed by a signal before it answers.

    A client dying of a signal is not Slurm's answer: ``scontrol show job`` died of SIGPIPE (exit -13) in a loaded
    run of the test suite's one-host cluster while the job it asked about was running. A query changes nothing, so
    asking again cannot do anything twice; a command that changes a job (``scontrol requeue``, ``scancel``) is run
    once. Any other exit, Slurm's own error ("Invalid job id specified") included, is returned as is.

    Raises:
        OSError: The client cannot be started (not installed).
        subprocess.TimeoutExpired: One attempt took more than ``timeout_s``.
    """
    for attempt in range(1, attempts + 1):
        result = run_client(args, timeout_s, env)
        if result.returncode >= 0:
            return result
        (log or logger).warning("%s: killed by %s before it answered (attempt %d of %d)%s", " ".join(args),
                                signal_name(-result.returncode), attempt, attempts,
                                "; asking again" if attempt < attempts else "")
    return result


def signal_name(signum: int) -> str:
    """``SIGPIPE`` for 13; ``signal 99`` for a number Python has no name for."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_words(returncode: int) -> str:
    """How a client ended, in words: ``exit 1``, or ``killed by SIGPIPE`` for subprocess's ``-13``."""
    return f"killed by {signal_name(-returncode)}" if returncode < 0 else f"exit {returncode}"


def job_record(job_id: str, timeout_s: float = SHOW_JOB_TIMEOUT_S, log: logging.Logger | None = None
               ) -> dict[str, str]:
    """``scontrol show job -o JOB_ID`` as a dict of its ``Key=Value`` fields; empty, with the reason logged as an
    error, when the controller cannot be asked or does not answer."""
    log = log or logger
    args = ["scontrol", "show", "job", "-o", job_id]
    try:
        result = run_query(args, timeout_s, log=log)
    except (OSError, subprocess.TimeoutExpired) as err:
        log.error("scontrol show job %s: %s", job_id, err)
        return {}
    if result.returncode != 0:
        log.error("scontrol show job %s failed (%s): %s", job_id, exit_words(result.returncode), result.stderr.strip())
        return {}
    fields = {}
    for token in result.stdout.split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = value
    return fields


def requeue_job(job_id: str, why: str, rerun: str, timeout_s: float = REQUEUE_TIMEOUT_S,
                log: logging.Logger | None = None) -> bool:
    """``scontrol requeue JOB_ID``, announced first; True when it succeeded.

    Announced before the call: a successful requeue ends the job's steps at once ("CANCELLED ... DUE TO JOB
    REQUEUE"), and a line written after it can be lost from the job log.
    """
    log = log or logger
    log.warning("requeueing Slurm job %s after %s (scontrol requeue); %s", job_id, why, rerun)
    try:
        result = run_client(["scontrol", "requeue", job_id], timeout_s)
    except (OSError, subprocess.TimeoutExpired) as err:
        log.error("scontrol requeue %s: %s", job_id, err)
        return False
    if result.returncode != 0:
        log.error("scontrol requeue %s failed (%s): %s", job_id, exit_words(result.returncode), result.stderr.strip())
        return False
    return True


def requeue_if_preempted(job_id: str, restart_count: int, rerun: str = "the rerun resumes from its last checkpoint",
                         not_requeued: str = "resubmit with the same output folder to resume",
                         show_timeout_s: float = SHOW_JOB_TIMEOUT_S, requeue_timeout_s: float = REQUEUE_TIMEOUT_S,
                         log: logging.Logger | None = None, why: str = "SIGTERM") -> bool:
    """After a SIGTERM: requeue the job if Slurm is preempting it (the module docstring's table).

    Args:
        job_id: ``SLURM_JOB_ID``.
        restart_count: ``SLURM_RESTART_COUNT`` of this run of the job (0 on its first start).
        rerun: what the rerun does, for the log.
        not_requeued: what to do instead when the job is not requeued, for the log.
        why: what stopped the job, for the log: the SIGTERM, or (eval.sbatch, rank.sbatch) a step that failed
            without the batch shell seeing one.

    Returns:
        True when the job is requeued: by this call, or by Slurm itself.
    """
    log = log or logger
    record = job_record(job_id, show_timeout_s, log)
    if not record:  # job_record logged why; "not preempted" would claim what nobody could read
        log.warning("Slurm job %s ended by %s and its record could not be read, so whether Slurm is preempting it "
                    "is unknown: not requeued; %s", job_id, why, not_requeued)
        return False
    state = record.get("JobState", "UNKNOWN")
    restarts = record.get("Restarts", "0")
    if restarts.isascii() and restarts.isdigit() and int(restarts) > restart_count:  # '²'.isdigit() too
        log.warning("Slurm job %s is being requeued by Slurm (%s, restart %s); %s", job_id, state, restarts, rerun)
        return True
    if state != "RUNNING" or record.get("PreemptTime", "None") in ("None", ""):
        log.warning("Slurm job %s ended by %s (state %s, not preempted): not requeued; %s", job_id, why, state,
                    not_requeued)
        return False
    return requeue_job(job_id, why, rerun, requeue_timeout_s, log)


#: ``main``'s exit status when the job is not requeued (0: requeued). Apart from Python's own 1 and argparse's 2,
#: so that a script tells "not requeued" from "could not ask".
NOT_REQUEUED = 10


def main(argv: list[str] | None = None) -> int:
    """``python -m judge.plumbing.slurm_requeue --job-id ID --restart-count N [--name NAME] [--why WHAT]
    [--rerun TEXT] [--not-requeued TEXT]``: exit 0 when the job is requeued (by this call or by Slurm),
    ``NOT_REQUEUED`` when not; what was decided on stderr as ``NAME: ...``."""
    from judge.plumbing.config_files import ExactArgumentParser

    parser = ExactArgumentParser(prog="python -m judge.plumbing.slurm_requeue")
    parser.add_argument("--job-id", required=True)
    parser.add_argument("--restart-count", type=int, default=0)
    parser.add_argument("--name", default="slurm_requeue", help="the caller, prefixed to each line on stderr")
    parser.add_argument("--why", default="SIGTERM", help="what stopped the job, for the log")
    parser.add_argument("--rerun", default="the rerun resumes from its last checkpoint")
    parser.add_argument("--not-requeued", default="resubmit with the same output folder to resume",
                        help="what to do instead when the job is not requeued, for the log")
    args = parser.parse_args(argv)
    log = logging.Logger(args.name)  # a logger of this call's own: the lines go to stderr, prefixed, once
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{args.name}: %(message)s"))
    log.addHandler(handler)
    requeued = requeue_if_preempted(args.job_id, args.restart_count, args.rerun, args.not_requeued, log=log,
                                    why=args.why)
    return 0 if requeued else NOT_REQUEUED


if __name__ == "__main__":
    # A successful `scontrol requeue` SIGTERMs every process of the job, this one too (a job script's python3 runs in
    # its batch step): it died with 143 before it could exit 0, and the script said it could not ask. Ignored, the
    # call still ends: scontrol's calls have their timeouts, and Slurm's SIGKILL comes KillWait after the SIGTERM.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(main())
