"""A real Slurm on this one host, for tests: munged, slurmctld and two slurmd nodes (n1, n2) in a scratch folder.

Debian's ``slurm-wlm`` (22.05) and ``munge`` are installed by ``make system-packages``. Everything lives under one
temporary folder (config, munge key and socket, state, spool, logs, pid files); the ports are picked free and
reserved (``free_port``), so a second cluster on the same host does not collide. Requeue-friendly timings
(``cred_expire=5``, 2 s scheduler and backfill intervals) bring a requeue-and-rerun to about 7 s instead of two
minutes. ``KillWait=30`` gives a signalled job 30 s to save; a second partition on the same nodes is preempted by the
default one (requeue).

The fake node names do not resolve; both nodes are ``127.0.0.1`` (``NodeAddr``), and a job sees
``SLURM_NODELIST=n[1-2]`` with ``SLURM_NODEID`` 0 and 1 as on a real two-node allocation.

Example::

    reason = cannot_start_reason()
    if reason is None:
        with running_cluster() as cluster:
            job_id = cluster.sbatch(["--wrap", "hostname"], cwd=tmp)
            print(cluster.wait(job_id)["JobState"])

Clients find the cluster through ``SLURM_CONF``: use :attr:`SlurmCluster.env` for every ``sbatch``/``scontrol``
call; jobs inherit it (sbatch exports the caller's environment), so ``scontrol requeue`` inside a job reaches the
same controller.

Why one module of ~650 lines: the config it writes, the daemons it starts and stops, and the client calls and job
process helpers the tests use all read the one scratch layout and the timings set here; split, each part would
re-derive the paths and knobs the others set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence
from unittest import mock

from judge.plumbing.processes import free_port
from judge.plumbing.slurm_requeue import CANNOT_START_REASONS, exit_words, run_client, run_query

#: Daemons and clients the cluster needs (Debian paths: daemons in /usr/sbin).
REQUIRED_PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel")

#: Job states after which a job will not run again by itself.
FINAL_STATES = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
)

#: Reasons a pending job gives when it can never start on this cluster (fail at once instead of timing out): the ones
#: `judge-train submit` warns of.
NEVER_STARTS = frozenset(CANNOT_START_REASONS)

#: Seconds a client command may take: `scontrol show job` took over 30 s at load average 20 on 2 cores.
CLIENT_TIMEOUT_S = 120.0

#: Slurm's KillWait: seconds between SIGTERM and SIGKILL.
KILL_WAIT_S = 30

#: The preemptible partition's GraceTime: a preempted job's time from Slurm's decision (when its SIGTERM is sent) to
#: its end. A CI run under load saw no SIGTERM reach the job within 60 s of its preemption showing: with a grace of
#: KillWait's 30 s, such a job can be ended before it saves. One that saves and requeues itself at once leaves as soon.
PREEMPT_GRACE_S = 360

#: Seconds to wait for both nodes to come up idle after the daemons start (~0.3 s when the host is idle).
START_TIMEOUT_S = 60.0


@dataclasses.dataclass
class SlurmCluster:
    """A running one-host Slurm.

    Attributes:
        root: Scratch folder holding everything the cluster writes.
        conf: Path of its ``slurm.conf``.
        nodes: Node names, in order (``n1``, ``n2``).
        partition: The default partition (PriorityTier 2, never preempted).
        preemptible_partition: A partition on the same nodes (PriorityTier 1) whose jobs a job of the default
            partition requeues when it needs their CPUs.
        cpus_per_node: CPUs each fake node declares (both share the host's cores).
    """

    root: Path
    conf: Path
    nodes: tuple[str, ...]
    partition: str
    cpus_per_node: int
    preemptible_partition: str = "scavenger"

    @property
    def env(self) -> dict[str, str]:
        """The caller's environment plus ``SLURM_CONF`` pointing at this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def command(self, args: Sequence[str], *, check: bool = True, timeout_s: float = CLIENT_TIMEOUT_S) -> str:
        """Run a Slurm client command (``scontrol``, ``squeue``, ...) against this cluster; return its stdout.

        Every client runs with SIGPIPE ignored (:func:`judge.plumbing.slurm_requeue.run_client`); a query
        (``scontrol show``, ``squeue``) is asked again when its client is killed by a signal before it answers
        (``run_query``: ``scontrol show job`` died of SIGPIPE in a loaded full run); a command that changes a job
        runs once.
        """
        args = list(args)
        if args[:2] == ["scontrol", "show"] or args[:1] == ["squeue"]:
            proc = run_query(args, timeout_s, env=self.env)
        else:
            proc = run_client(args, timeout_s, env=self.env)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({exit_words(proc.returncode)}): {proc.stderr.strip()}")
        return proc.stdout

    def sbatch(
        self,
        args: Sequence[str],
        *,
        cwd: str | Path,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> int:
        """Submit a batch job and return its id.

        Args:
            args: ``sbatch`` arguments after ``--parsable`` (options, then a script path, or ``--wrap``).
            cwd: Submission folder (the job's working directory).
            env: Variables added to the submitting environment (sbatch exports it to the job).
            stdin: Script text, when no script path is given.

        Returns:
            The job id.
        """
        proc = run_client(["sbatch", "--parsable", *args], CLIENT_TIMEOUT_S, env={**self.env, **(env or {})},
                          cwd=str(cwd), stdin=stdin)
        if proc.returncode != 0:
            raise RuntimeError(f"sbatch {' '.join(args)} failed ({exit_words(proc.returncode)}): {proc.stderr.strip()}")
        return int(proc.stdout.strip().split(";")[0])

    def judge_train_submit(
        self, argv: Sequence[str], *, cwd: str | Path, env: Mapping[str, str] | None = None
    ) -> tuple[int, str, str]:
        """``judge-train submit ARGV`` (``train.slurm_submit.main``, what the console script's ``submit`` runs) in
        this process, submitting to this cluster; returns (exit status, stdout, stderr).

        In this process rather than a new one: the check of the config builds ``TrainingArguments``, and a fresh
        interpreter importing transformers for it spent ~6 s of CPU per submission (9-18 s of wall time on a
        loaded 2-core host); here transformers is imported once per test process. The submission is the one the
        console script makes: while it runs, ``os.environ`` is the environment a subprocess would have been given
        (sbatch exports it to the job) and the working directory is ``cwd``. After it, the environment, the folder
        and accelerate's process state (``TrainingArguments`` sets it up) are as they were. A hung ``sbatch`` is
        bounded by the test's own timeout (pytest-timeout), which names the test.
        """
        from accelerate.state import AcceleratorState, PartialState
        from transformers.utils import logging as transformers_logging

        from train import slurm_submit

        # transformers' log handlers keep the sys.stderr they find when made: its root handler when first configured,
        # and one a module attaches at import (generation's continuous batching logger, imported with
        # TrainingArguments, which the config check builds). Made here, before stderr is redirected, they write to
        # the real one rather than to a buffer dropped after this call.
        transformers_logging.get_logger("transformers")
        from transformers import TrainingArguments  # noqa: F401

        stdout, stderr = io.StringIO(), io.StringIO()
        submit_env = {**self.env, **(env or {})}
        # accelerate's state is shared by every instance (a Borg): the state TrainingArguments sets up is taken out
        # after the call, and any state held before it put back, not wiped
        held = {state: dict(state._shared_state) for state in (PartialState, AcceleratorState)}
        try:
            with (mock.patch.dict(os.environ, submit_env, clear=True), contextlib.chdir(cwd),
                  contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr)):
                try:
                    status = int(slurm_submit.main(list(argv)) or 0)
                except SystemExit as exit_:  # argparse's refusals exit, as the console script would
                    code = exit_.code
                    status = 0 if code is None else code if isinstance(code, int) else 1
        finally:
            AcceleratorState._reset_state(reset_partial_state=True)  # what the call set up, as a subprocess leaves none
            for state, shared in held.items():
                state._shared_state.update(shared)
        return status, stdout.getvalue(), stderr.getvalue()

    def job(self, job_id: int | str) -> dict[str, str]:
        """``scontrol show job -o`` as a dict (an array task as ``"<array id>_<task>"``) (``JobState``, ``Restarts``, ``ExitCode``, ``NodeList``, ...)."""
        out = self.command(["scontrol", "show", "job", "-o", str(job_id)])
        fields: dict[str, str] = {}
        for token in out.split():
            key, sep, value = token.partition("=")
            if sep:
                fields[key] = value
        return fields

    def jobs(self) -> list[int]:
        """Ids of all jobs the controller still lists as pending or running."""
        out = self.command(["squeue", "-h", "-o", "%i"], check=False)
        return [int(tok.split("_")[0]) for tok in out.split() if tok.split("_")[0].isdigit()]

    def wait(
        self, job_id: int | str, *, timeout_s: float = 240.0, poll_s: float = 1.0, expect: str | None = None
    ) -> dict[str, str]:
        """Poll a job until it reaches a final state; return its last ``scontrol`` record.

        There is no ``sacct`` without slurmdbd; ``MinJobAge`` (600 s here) keeps finished jobs listed.

        Args:
            job_id: A job id, or an array task as ``"<array id>_<task>"``.
            timeout_s: Seconds to wait.
            poll_s: Seconds between polls, at most: the first come after 0.1 s, each wait twice the last, so a job
                done in a second is seen then, not a whole poll later (one ``scontrol`` costs ~3 ms of CPU).
            expect: The final state the caller needs (``"COMPLETED"``); another one raises with the job's output.

        Raises:
            TimeoutError: When the job is not finished in time (the record, its output and the controller log tail
                say why).
            RuntimeError: When it can never start (a failed dependency: that job's output tail is in the message),
                or ends in another state than ``expect`` (its own output tail is).
        """
        deadline = time.monotonic() + timeout_s
        record: dict[str, str] = {}
        delay = min(0.1, poll_s)
        while time.monotonic() < deadline:
            record = self.job(job_id)
            if record.get("JobState") in FINAL_STATES:
                if expect is not None and record["JobState"] != expect:
                    raise RuntimeError(f"job {job_id} ended {record['JobState']}, not {expect}: {record}\n"
                                       f"{self.output_tail(job_id, record)}")
                return record
            self._fail_if_never_starts(job_id, record)
            time.sleep(delay)
            delay = min(2 * delay, poll_s)
        raise TimeoutError(
            f"job {job_id} not finished after {timeout_s:.0f} s: {record}\n{self.output_tail(job_id, record)}\n"
            f"slurmctld log tail:\n{self.log_tail('slurmctld')}"
        )

    def output_tail(self, job_id: int | str, record: Mapping[str, str] | None = None) -> str:
        """The last 60 lines of a job's output file (its ``StdOut``; for an array task that task's own file), headed
        by the path, or a note saying why there are none. A failed job's root cause is there, not in its record."""
        try:
            record = dict(record) if record is not None else self.job(job_id)
        except Exception as err:  # noqa: BLE001 - a diagnostic must never mask the error it explains
            return f"(output of job {job_id}: no record: {err})"
        path = record.get("StdOut", "")
        if not path:
            return f"(output of job {job_id}: its record names no StdOut)"
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError as err:
            return f"(output of job {job_id}: {err})"
        n_lines = 60  # a failed job's traceback and the lines before it
        return f"--- last {min(n_lines, len(lines))} lines of {path} (job {job_id}) ---\n" + "\n".join(lines[-n_lines:])

    def wait_for(self, job_id: int | str, predicate, *, timeout_s: float = 120.0, poll_s: float = 0.5) -> dict[str, str]:
        """Poll a job until ``predicate(record)`` is true; return that record (``TimeoutError`` otherwise). Polls
        as :meth:`wait` does: after 0.1 s first, then twice as long each time, up to ``poll_s``."""
        deadline = time.monotonic() + timeout_s
        record: dict[str, str] = {}
        delay = min(0.1, poll_s)
        while time.monotonic() < deadline:
            record = self.job(job_id)
            if predicate(record):
                return record
            if record.get("JobState") in FINAL_STATES:
                raise RuntimeError(f"job {job_id} finished before the awaited condition: {record}\n"
                                   f"{self.output_tail(job_id, record)}")
            self._fail_if_never_starts(job_id, record)
            time.sleep(delay)
            delay = min(2 * delay, poll_s)
        raise TimeoutError(f"job {job_id}: condition not met after {timeout_s:.0f} s: {record}")

    def _fail_if_never_starts(self, job_id: int | str, record: dict[str, str]) -> None:
        if record.get("JobState") == "PENDING" and record.get("Reason") in NEVER_STARTS:
            # "afterok:12_1(failed),afterany:11(unfulfilled)": the failed jobs' own output says why they failed.
            failed = re.findall(r"(\d+(?:_\d+)?)\(failed\)", record.get("Dependency", ""))
            outputs = "\n".join(self.output_tail(dep) for dep in failed)
            raise RuntimeError(f"job {job_id} can never start here (Reason={record['Reason']}): {record}"
                               + (f"\nits failed dependencies' output:\n{outputs}" if outputs else ""))

    def log_tail(self, daemon: str, n_lines: int = 40) -> str:
        """Last lines of a daemon log: ``slurmctld``, ``slurmd-n1``, ``slurmd-n2`` or ``munged``."""
        path = self.root / ("munge" if daemon == "munged" else "log") / f"{daemon}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-n_lines:])
        except OSError as err:
            return f"(no log: {err})"


def job_processes(needle: str, *, skip: Sequence[str] = ("srun", "bash", "sh")) -> list[int]:
    """Pids of the processes (on this host: every fake node is) whose command line has an argument containing
    ``needle`` (a job's unique output folder), except the Slurm launchers and shells that name it too."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if Path(argv[0]).name not in skip and any(needle in arg for arg in argv[1:]):
            pids.append(int(entry.name))
    return pids


def signal_processes(pids: Sequence[int], sig: int) -> list[int]:
    """Send ``sig`` to each pid; return those that were there to get it. Tests freeze a job's processes with
    SIGSTOP to make a Slurm event land at a chosen point of the job (SIGCONT, or Slurm's own SIGKILL, ends it)."""
    sent = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
            sent.append(pid)
    return sent


def _status_fields(pid: int) -> dict[str, str]:
    """``/proc/<pid>/status`` as field -> value (empty once the process is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)


def signal_pending(pids: Sequence[int], sig: int) -> list[int]:
    """Those of ``pids`` holding ``sig`` pending (``/proc/<pid>/status`` SigPnd or ShdPnd): with the process frozen
    (SIGSTOP) or the signal blocked, it has been delivered and not acted on yet. A test that freezes a job, has Slurm
    signal it, and thaws it only once the signal is pending makes the signal land at the frozen point."""
    bit = 1 << (sig - 1)
    return [pid for pid in pids
            if any(int(mask, 16) & bit for name, mask in _status_fields(pid).items() if name in ("SigPnd", "ShdPnd"))]


def signal_states(pids: Sequence[int]) -> str:
    """One line per pid: its title, state, parent, process group and signal masks (``/proc/<pid>/status``), or
    that it is gone. What a test that waits for a signal to be pending says when it never is: whether the process
    blocks or ignores it, was thawed, or died."""
    lines = []
    for pid in pids:
        fields = _status_fields(pid)
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")[-60:]
        except OSError:
            title = "?"
        if not fields:
            lines.append(f"{pid}: gone")
            continue
        masks = " ".join(f"{name}={fields.get(name, '?')}"
                         for name in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))
        lines.append(f"{pid} {title}: State={fields.get('State')} PPid={fields.get('PPid')} "
                     f"NSpgid={fields.get('NSpgid')} {masks}")
    return "\n".join(lines)


def stopped_processes(pids: Sequence[int]) -> list[int]:
    """Those of ``pids`` still stopped (``/proc/<pid>/status`` State ``T``): frozen by SIGSTOP and not continued since,
    by the test or by Slurm (slurmd continues a job's stopped tasks before it kills them)."""
    return [pid for pid in pids if _status_fields(pid).get("State", "").startswith("T ")]


def cannot_start_reason() -> str | None:
    """Why a real Slurm cannot start on this host, or ``None`` when it can.

    Only hard facts count: a missing program (install with ``make system-packages``) or not being root (munged
    must run as the ``munge`` user and slurmd must launch jobs as their owner). A daemon that fails to start
    with everything in place is a failure, not a skip.
    """
    missing = [prog for prog in REQUIRED_PROGRAMS if shutil.which(prog, path=_sbin_path()) is None]
    if missing:
        return f"Slurm/munge programs not installed ({', '.join(missing)}); run `make system-packages` as root"
    if os.geteuid() != 0:
        return "a one-host Slurm needs root (munged runs as the munge user, slurmd launches jobs as their owner)"
    try:
        import pwd

        pwd.getpwnam("munge")
    except KeyError:
        return "no `munge` user (the munge package creates it); reinstall munge"
    return None


def _sbin_path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def _slurm_conf(
    root: Path, *, nodes: Sequence[str], cpus_per_node: int, partition: str, preemptible_partition: str
) -> str:
    # Reserved (judge.plumbing.processes.free_port): slurmctld and slurmd bind them with SO_REUSEADDR once started,
    # and no other program's bind(0) gets them meanwhile.
    ctld_port, *node_ports = (free_port() for _ in range(1 + len(nodes)))
    host = socket.gethostname().split(".")[0]
    node_lines = "\n".join(
        f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} "
        f"CPUs={cpus_per_node} RealMemory=4000 State=UNKNOWN"
        for name, port in zip(nodes, node_ports)
    )
    return f"""\
# One-host test cluster written by tests/support/slurm_cluster.py.
ClusterName=judgetest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire=5 s (the minimum): a requeued job may start again 5 s after it ended instead of 120 s.
AuthInfo=socket={root}/munge/munge.socket,cred_expire=5
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={root}/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/log/jobcomp.txt
MailProg=/bin/true
# Both fake nodes declare the host's cores; slurmd must trust the config rather than the hardware.
SlurmdParameters=config_overrides
ReturnToService=2
# Seconds: scheduling passes every 2 s, finished jobs listed for 10 minutes. KillWait: SIGKILL follows SIGTERM
# (scancel, scontrol requeue, preemption) after 30 s, the time a training job has to finish its step and save
# and judge-serve has to answer its in-flight requests (a production cluster sets it for its largest checkpoint).
SchedulerParameters=sched_interval=2,bf_interval=2
KillWait={KILL_WAIT_S}
MinJobAge=600
InactiveLimit=0
# Preemption by partition priority: a job in the default partition (PriorityTier 2) that needs the CPUs of a job
# in the preemptible one (PriorityTier 1) requeues it. The preempted job gets SIGTERM at once and SIGKILL after
# GraceTime (then KillWait): its window to checkpoint, longer than KillWait (PREEMPT_GRACE_S says why).
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
{node_lines}
PartitionName={partition} Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
PartitionName={preemptible_partition} Nodes={','.join(nodes)} MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE GraceTime={PREEMPT_GRACE_S}
"""


def _run(args: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
    proc = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=30, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}{proc.stdout.strip()}")


def start_cluster(root: str | Path | None = None, *, attempts: int = 3, **kwargs) -> SlurmCluster:
    """:func:`_start_cluster_once`, again with fresh ports (up to ``attempts`` times) when another cluster took one
    of them between picking and binding (several test sessions on one host)."""
    for attempt in range(attempts):
        try:
            return _start_cluster_once(root, **kwargs)
        except PortTakenError:
            if attempt == attempts - 1:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")


def _start_cluster_once(
    root: str | Path | None = None,
    *,
    nodes: Sequence[str] = ("n1", "n2"),
    cpus_per_node: int = 2,
    partition: str = "debug",
    preemptible_partition: str = "scavenger",
) -> SlurmCluster:
    """Write the config, start munged, slurmctld and one slurmd per node; wait until every node is idle.

    Args:
        root: Scratch folder (created; must be traversable by the munge user). A fresh ``/tmp`` folder if omitted.
        nodes: Node names; each gets its own slurmd on 127.0.0.1 with its own port.
        cpus_per_node: CPUs each node declares.
        partition: Name of the default partition.
        preemptible_partition: Name of the lower-priority partition whose jobs the default one preempts.

    Returns:
        The running :class:`SlurmCluster`; stop it with :func:`stop_cluster` (or use :func:`running_cluster`).

    Raises:
        RuntimeError: A daemon failed to start; the message carries its log tail. Whatever did start is stopped
            (and the scratch folder removed when this function created it).
    """
    created = root is None
    root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="judge-slurm-"))
    root.mkdir(parents=True, exist_ok=True)
    # munged runs as the munge user and checks that every folder on its socket's path is executable by all.
    root.chmod(0o755)
    for sub in ("state", "run", "log", *(f"spool/{n}" for n in nodes)):
        (root / sub).mkdir(parents=True, exist_ok=True)
    munge_dir = root / "munge"
    munge_dir.mkdir(exist_ok=True)
    shutil.chown(munge_dir, "munge", "munge")
    munge_dir.chmod(0o755)
    (root / "plugstack.conf").write_text("")
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, nodes=nodes, cpus_per_node=cpus_per_node, partition=partition,
                                preemptible_partition=preemptible_partition))
    cluster = SlurmCluster(root=root, conf=conf, nodes=tuple(nodes), partition=partition, cpus_per_node=cpus_per_node,
                           preemptible_partition=preemptible_partition)
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": _sbin_path()}
    try:
        key = munge_dir / "munge.key"
        _run(["runuser", "-u", "munge", "--", "mungekey", "--create", "--force", "--keyfile", str(key)])
        _run([
            "runuser", "-u", "munge", "--", "munged",
            f"--socket={munge_dir}/munge.socket",
            f"--key-file={key}",
            f"--pid-file={munge_dir}/munged.pid",
            f"--log-file={munge_dir}/munged.log",  # munged writes only where it owns the folder
            f"--seed-file={munge_dir}/munged.seed",
        ])  # fmt: skip
        _run(["slurmctld", "-c", "-f", str(conf)], env=env)  # -c: start from a clean state
        for name in nodes:
            _run(["slurmd", "-N", name, "-f", str(conf)], env=env)
        _wait_nodes_idle(cluster)
    except PortTakenError:
        # Client commands would reach the other cluster: stop only our own daemons, cancel nothing.
        stop_cluster(cluster, remove=created, cancel_jobs=False)
        raise
    except BaseException:
        # The error carries the daemons' log tails; a folder we made ourselves goes.
        stop_cluster(cluster, remove=created)
        raise
    return cluster


def _check_own_controller(cluster: SlurmCluster) -> None:
    """Fail unless the controller at our port is ours: ports are picked free but not held, so a cluster started at
    the same moment by another test session can take the same port; our slurmctld then dies on bind and every
    client command would reach (and cancel jobs on) the other cluster."""
    wanted = str(cluster.root / "state")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        config = cluster.command(["scontrol", "show", "config"], check=False)
        found = re.search(r"^StateSaveLocation\s*=\s*(\S+)", config, re.M)
        if found:  # a controller answered
            if found.group(1) != wanted:
                raise PortTakenError(f"the controller at this cluster's port keeps its state in {found.group(1)}, "
                                     f"not {wanted}: another cluster took the port")
            return
        time.sleep(0.3)
    raise RuntimeError(f"slurmctld did not answer in {START_TIMEOUT_S:.0f} s:\n{cluster.log_tail('slurmctld')}")


class PortTakenError(RuntimeError):
    """Another process (another test cluster) holds a port this cluster was given."""


def _wait_nodes_idle(cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    states = ""
    _check_own_controller(cluster)
    while time.monotonic() < deadline:
        states = cluster.command(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
        idle = {line.split()[0] for line in states.splitlines() if line.split()[1:] == ["idle"]}
        if idle >= set(cluster.nodes):
            return
        time.sleep(0.3)
    raise RuntimeError(
        f"Slurm nodes not idle after {START_TIMEOUT_S:.0f} s: {states!r}\n"
        f"slurmctld log:\n{cluster.log_tail('slurmctld')}\n"
        + "\n".join(f"slurmd-{n} log:\n{cluster.log_tail('slurmd-' + n)}" for n in cluster.nodes)
    )


def _pid_alive(pid: int) -> bool:
    # A daemon's parent may be a pid 1 that never reaps (containers): a zombie counts as stopped.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _stop_by_pid_files(pid_files: Sequence[Path], grace_s: float = 10.0) -> None:
    """SIGTERM every process named by a pid file at once, wait up to ``grace_s``, then SIGKILL the rest."""
    pids = []
    for pid_file in pid_files:
        try:
            pids.append(int(pid_file.read_text().strip()))
        except (OSError, ValueError):
            continue
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def stop_cluster(cluster: SlurmCluster, *, remove: bool = False, cancel_jobs: bool = True) -> None:
    """Cancel every job, wait for them to end, then stop the daemons by their pid files.

    Args:
        cluster: The cluster to stop (possibly half-started).
        remove: Also delete the scratch folder (job outputs written elsewhere stay).
        cancel_jobs: Cancel the jobs first (not when the controller at the cluster's port is someone else's).
    """
    if cancel_jobs and (cluster.root / "run" / "slurmctld.pid").exists():
        with contextlib.suppress(Exception):
            for job_id in cluster.jobs():
                cluster.command(["scancel", str(job_id)], check=False)
            # Jobs leave the queue once their processes exit, KillWait at the latest.
            deadline = time.monotonic() + KILL_WAIT_S + 10.0
            while cluster.jobs() and time.monotonic() < deadline:
                time.sleep(0.3)
    _stop_by_pid_files([cluster.root / "run" / f"slurmd-{name}.pid" for name in cluster.nodes])
    _stop_by_pid_files([cluster.root / "run" / "slurmctld.pid", cluster.root / "munge" / "munged.pid"])
    if remove:
        shutil.rmtree(cluster.root, ignore_errors=True)


@contextlib.contextmanager
def running_cluster(root: str | Path | None = None, *, remove: bool = True, **kwargs) -> Iterator[SlurmCluster]:
    """Context manager: :func:`start_cluster` on entry, :func:`stop_cluster` (and removal of the scratch folder
    unless ``remove=False``) on exit."""
    cluster = start_cluster(root, **kwargs)
    try:
        yield cluster
    finally:
        stop_cluster(cluster, remove=remove)


if __name__ == "__main__":  # a manual check: python -m tests.support.slurm_cluster
    reason = cannot_start_reason()
    if reason:
        raise SystemExit(f"cannot start Slurm: {reason}")
    t0 = time.monotonic()
    with running_cluster() as c:
        print(f"up in {time.monotonic() - t0:.1f} s at {c.root}")
        jid = c.sbatch(["-N", "2", "--wrap", "srun hostname; echo $SLURM_NODELIST"], cwd=c.root)
        print(c.wait(jid, timeout_s=60))
        print((c.root / f"slurm-{jid}.out").read_text())
    print(f"total {time.monotonic() - t0:.1f} s")
