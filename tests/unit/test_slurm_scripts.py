"""The sbatch scripts' own logic, run by bash against a fake srun (and, where it matters, a fake server); no cluster,
no GPU, no vLLM. `judge-train submit`'s rendering is tests/unit/test_slurm_submit.py's."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables

REPO = Path(__file__).resolve().parents[2]
SLURM_DIR = REPO / "slurm"

# srun: the server step (--ntasks=1, no --ntasks-per-node) runs its command as a child, and (srun(1),
# --ignore-signals) forwards a SIGTERM it receives as SIGKILL; a node step records its arguments and the files it holds open, then reads the fake server's
# one line from a FIFO (when there is one), so the training step "ends" only after the server has said it.
FAKE_SRUN = r"""#!/bin/bash
if [[ -n ${FAKE_SRUN_CALLS:-} ]]; then all="$*"; echo "${all//$'\n'/ }" >>"$FAKE_SRUN_CALLS"; fi  # a line a call
command=("$@")
while [[ ${command[0]} == --* ]]; do command=("${command[@]:1}"); done
if [[ " $* " == *" --ntasks=1 "* && " $* " != *" --ntasks-per-node="* ]]; then
    "${command[@]}" &
    child=$!
    trap 'kill -KILL "$child"; wait "$child"; exit 143' TERM
    wait "$child"
    exit
fi
printf "%s\0" "$@" >"$FAKE_SRUN_ARGS"
for fd in /proc/$$/fd/*; do readlink "$fd"; done >"$FAKE_SRUN_FDS"
if [[ -n ${FAKE_READY_FIFO:-} ]]; then read -r said <"$FAKE_READY_FIFO"; echo "$said" >"$FAKE_SERVER_SAID"; fi
"""
FAKE_SCONTROL = r"""#!/bin/bash
case "$1 $2" in
  "show hostnames") printf "nx-node-1\nnx-node-2\n";;
  "show node") echo "NodeName=$3 Arch=x86_64 NodeAddr=10.0.0.5 NodeHostName=$3";;
esac
"""
# trl 1.16's `trl vllm-serve` (trl/scripts/vllm_serve.py): parse the flags, build vLLM's server command, exec it.
FAKE_TRL_VLLM_SERVE = r"""
import argparse, os, sys

class _Parser(argparse.ArgumentParser):
    def parse_args_and_config(self, return_remaining_strings=False):
        return self.parse_known_args()

def make_parser():
    parser = _Parser()
    for flag in ("--model", "--tensor-parallel-size", "--port", "--host", "--max-model-len"):
        parser.add_argument(flag)
    return parser

def build_command(script_args, extra_args=None):
    context = ["--max-model-len", script_args.max_model_len] if script_args.max_model_len is not None else []
    return [sys.executable, "-m", "fake_vllm_server", "serve", script_args.model, "--port", script_args.port,
            *context, *(extra_args or [])]

def main(script_args, extra_args=None):
    os.execve(sys.executable, build_command(script_args, extra_args), {**os.environ, "VLLM_SERVER_DEV_MODE": "1"})
"""
# vLLM's server as far as signals go: its own SIGTERM handler (vllm/entrypoints/cli/serve.py) stops it. It sends
# itself the SIGTERM Slurm would send every step, then says whether it is still serving.
FAKE_VLLM_SERVER = r"""
import os, signal, sys, threading
from pathlib import Path

def on_sigterm(signum, frame):
    with open(os.environ["FAKE_READY_FIFO"], "w") as fifo:
        fifo.write("stopped by SIGTERM\n")
    sys.exit(1)

signal.signal(signal.SIGTERM, on_sigterm)
Path(os.environ["FAKE_SERVER_PID"]).write_text(str(os.getpid()))
os.kill(os.getpid(), signal.SIGTERM)
with open(os.environ["FAKE_READY_FIFO"], "w") as fifo:
    fifo.write(f"serving {sys.argv[1:]} dev mode {os.environ.get('VLLM_SERVER_DEV_MODE')} omp "
               f"{os.environ.get('OMP_WAIT_POLICY')}\n")
threading.Event().wait()  # serves until killed
"""


#: The batch shell's python3 in an eval task's stand-in bin, as in a job's environment: eval.sbatch's pairwise check
#: runs it on each task, and PATH's may be a pyenv shim, which starts bash and pyenv before any Python.
EVAL_PYTHON3 = f'exec "{sys.executable}" "$@"\n'


@pytest.fixture
def config_file(tmp_path) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(f"recipe: seq2seq\nper_device_train_batch_size: 4\noutput_dir: {tmp_path / 'run'}\n")
    return path


def _fake_bin(tmp_path: Path) -> Path:
    trl_main = "from trl.scripts.vllm_serve import make_parser, main; main(*make_parser().parse_args_and_config())"
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL, "torchrun": "exit 0\n", "judge-train": "exit 0\n",
        "trl": f'[ "$1" = vllm-serve ] && shift\nexec python3 -c "{trl_main}" "$@"\n'})
    (bin_dir / "python3").symlink_to(sys.executable)
    return bin_dir


def _train_env(tmp_path: Path, config_file: Path, out: Path, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{_fake_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}",
        # the fake bin's python3 (this test's interpreter, linked outside its venv) imports train from the checkout
        # (the script asks train.output_folder which checkpoints are whole)
        "PYTHONPATH": os.pathsep.join(p for p in (str(SLURM_DIR.parent), os.environ.get("PYTHONPATH", "")) if p),
        "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"), "FAKE_SRUN_FDS": str(tmp_path / "srun_fds"),
        "SLURM_JOB_ID": "1234", "SLURM_JOB_NODELIST": "nx-node-[1-2]", "SLURM_CPUS_PER_TASK": "16",
        "JUDGE_CONFIG": str(config_file), "JUDGE_OUTPUT_DIR": str(out), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
        **extra,
    }  # fmt: skip


def _run(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SLURM_DIR / script)], env=env, capture_output=True, text=True, timeout=60,
                          cwd=cwd)  # fmt: skip


# --- train.sbatch: GRPO's vLLM server survives the SIGTERM of a preemption, and goes when training returns ------

# The server step's flags for JUDGE_VLLM_SERVE_MODEL=Qwen/Qwen3-8B, port 8011, max length 6144 (what `judge-train
# submit` renders from configs/train/qwen3-8b/grpo.yaml's max_length), in train.sbatch's order.
SERVER_FLAGS = ["--max-model-len", "6144", "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "1", "--port", "8011",
                "--host", "0.0.0.0"]  # fmt: skip


def test_the_installed_trl_vllm_serve_reads_the_server_steps_flags():
    """train.sbatch hands its flags to trl's own parser (make_parser, parse_args_and_config) and build_command: each
    must be a field of trl's ScriptArguments in the dashed spelling, or the server step stops at its start (an
    unknown flag would instead go on to `vllm serve` as an extra argument, which the empty remainder rules out)."""
    vllm_serve = pytest.importorskip("trl.scripts.vllm_serve")
    script_args, extra = vllm_serve.make_parser().parse_args_and_config(args=SERVER_FLAGS,
                                                                        return_remaining_strings=True)
    assert extra == []
    assert (script_args.model, script_args.tensor_parallel_size, script_args.port, script_args.host,
            script_args.max_model_len) == ("Qwen/Qwen3-8B", 1, 8011, "0.0.0.0", 6144)
    command = vllm_serve.build_command(script_args, extra)
    assert command[command.index("--max-model-len") + 1] == "6144"  # vLLM's KV cache sized for 6144, not 40,960


def test_the_grpo_server_step_outlives_sigterm_and_is_stopped_when_training_returns(tmp_path, config_file):
    """The server step gets the SIGTERM Slurm sends every step (preemption, `scontrol requeue`, `scancel`) while the
    trainer finishes its step and saves: a server with vLLM's own SIGTERM handler must keep serving (a `trap ""
    TERM` would not do: the handler replaces SIG_IGN). Once the training step returns, the script stops it (srun's
    SIGKILL), and the job ends then. It starts with python3 -c, not a console script, and still runs with idle
    OpenMP threads sleeping (judge.plumbing.openmp), from an environment without the variable."""
    out = tmp_path / "run"
    modules = tmp_path / "modules"
    (modules / "trl" / "scripts").mkdir(parents=True)
    for package in (modules / "trl", modules / "trl" / "scripts"):
        (package / "__init__.py").write_text("")
    (modules / "trl" / "scripts" / "vllm_serve.py").write_text(FAKE_TRL_VLLM_SERVE)
    (modules / "fake_vllm_server.py").write_text(FAKE_VLLM_SERVER)
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    calls = tmp_path / "srun_calls"
    env = _train_env(tmp_path, config_file, out, JUDGE_VLLM_SERVE_MODEL="Qwen/Qwen3-8B", JUDGE_VLLM_SERVE_PORT="8011",
                     JUDGE_VLLM_SERVE_MAX_LEN="6144", FAKE_SRUN_CALLS=str(calls),
                     FAKE_READY_FIFO=str(fifo), FAKE_SERVER_SAID=str(tmp_path / "said"),
                     FAKE_SERVER_PID=str(tmp_path / "server_pid"),
                     PYTHONPATH=os.pathsep.join([str(modules), str(REPO)]))  # fmt: skip
    env.pop("OMP_WAIT_POLICY", None)  # tests/conftest.py sets it for the suite
    proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (server_call,) = [line for line in calls.read_text().splitlines() if " --model " in line]
    assert server_call.endswith(" " + " ".join(SERVER_FLAGS))
    said = (tmp_path / "said").read_text()
    assert said == ("serving ['serve', 'Qwen/Qwen3-8B', '--port', '8011', '--max-model-len', '6144'] dev mode 1 "
                    "omp PASSIVE\n"), \
        proc.stderr
    pid = int((tmp_path / "server_pid").read_text())
    assert not Path(f"/proc/{pid}").exists()  # the script waited for the server step's srun, which reaped it
    srun = (tmp_path / "srun_args").read_text().split("\0")[:-1]
    assert "--nodelist=nx-node-2" in srun  # training on the other node, generating through the first one's server
    assert srun[-6:-1] == ["--vllm-server-host", "10.0.0.5", "--vllm-server-port", "8011", "--vllm-group-port"]
    assert 1 <= int(srun[-1]) <= 65535  # found free on the first training host (tests below)


# --- train.sbatch: the set-aside of cut-off checkpoints happens under the run folder's lock ---------------------


def test_train_sbatch_stops_without_touching_a_run_folder_another_run_holds(tmp_path, config_file):
    """Another job trains in the folder (its judge-train holds run.lock): its checkpoint being written has no
    trainer_state.json yet. The second job must not move it; it stops, naming the holder, before any srun."""
    out = tmp_path / "run"
    (out / "checkpoint-6").mkdir(parents=True)  # being written by the other job
    holder = {"job": "judge-train", "pid": 4242, "host": "nx-node-7"}
    fd = os.open(out / "run.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, (json.dumps(holder) + "\n").encode())
        proc = _run("train.sbatch", _train_env(tmp_path, config_file, out), tmp_path)
    finally:
        os.close(fd)
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: {out} is in use by another run ({json.dumps(holder)}); wait for it to end, "
                           "stop it, or use another output folder\n")  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-6", "run.lock"]
    assert not (tmp_path / "srun_args").exists()


def test_train_sbatch_sets_aside_under_the_lock_and_releases_it_before_the_step(tmp_path, config_file):
    """Free folder: the cut-off checkpoint is set aside, and the lock is released (no descriptor of run.lock reaches
    the step), so that the job's own judge-train can take it."""
    out = tmp_path / "run"
    (out / "checkpoint-6").mkdir(parents=True)
    proc = _run("train.sbatch", _train_env(tmp_path, config_file, out), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (out / "checkpoint-6").exists() and len(list(out.glob("incomplete-checkpoint-6-job1234-*"))) == 1
    assert (out / "run.lock").stat().st_mode & 0o777 == 0o600
    assert str(out / "run.lock") not in (tmp_path / "srun_fds").read_text().splitlines()
    fd = os.open(out / "run.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nothing left holding it
    finally:
        os.close(fd)


# flock(1) over NFS, where Linux emulates flock(2) with a byte-range (fcntl) lock: an exclusive one needs a descriptor
# open for writing (EBADF otherwise). Its exit statuses are flock(1)'s: 1 for a lock another holds, 65 (EX_DATAERR)
# for another failure.
FAKE_NFS_FLOCK = r"""#!/bin/bash
exec python3 -c '
import errno, fcntl, sys
fd = int(sys.argv[-1])
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError as err:
    print(f"flock: {fd}: {err.strerror}", file=sys.stderr)
    sys.exit(1 if err.errno in (errno.EAGAIN, errno.EACCES) else 65)
' "$@"
"""


def _with_fake_flock(env: dict[str, str], tmp_path: Path, body: str) -> dict[str, str]:
    flock_dir = tmp_path / "flock_bin"
    flock_dir.mkdir()
    (flock_dir / "flock").write_text(body)
    (flock_dir / "flock").chmod(0o755)
    return {**env, "PATH": f"{flock_dir}{os.pathsep}{env['PATH']}"}


def test_train_sbatch_locks_the_run_folder_where_flock_needs_a_writable_descriptor(tmp_path, config_file):
    """On NFS an exclusive lock of run.lock opened read-only fails (EBADF): every job stopped, told the folder was in
    use by another run. The script opens it read-write, as judge-train does, and the free folder is taken."""
    out = tmp_path / "run"
    (out / "checkpoint-6").mkdir(parents=True)
    env = _with_fake_flock(_train_env(tmp_path, config_file, out), tmp_path, FAKE_NFS_FLOCK)
    proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(list(out.glob("incomplete-checkpoint-6-job1234-*"))) == 1  # set aside under the lock


def test_train_sbatch_says_a_failed_lock_is_not_another_run(tmp_path, config_file):
    """flock(1) exits 1 only for a lock another holder has (with --nonblock); a file system without locks (ENOLCK:
    71) is another failure, reported as such, and nothing is moved or started."""
    out = tmp_path / "run"
    (out / "checkpoint-6").mkdir(parents=True)
    env = _with_fake_flock(_train_env(tmp_path, config_file, out), tmp_path,
                           '#!/bin/bash\necho "flock: No locks available" >&2\nexit 71\n')  # fmt: skip
    proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: cannot lock {out}/run.lock: flock: No locks available (a filesystem "
                           "without locks?)\n")  # fmt: skip
    assert (out / "checkpoint-6").is_dir() and not (tmp_path / "srun_args").exists()


# --- train.sbatch: a rendezvous port of its own --------------------------------------------------------------------


def _rendezvous_port(proc: subprocess.CompletedProcess) -> int:
    match = re.search(r"^    rendezvous  10\.0\.0\.5:(\d+)$", proc.stdout, re.M)
    assert match, proc.stdout + proc.stderr
    return int(match.group(1))


def test_train_sbatch_takes_a_free_rendezvous_port(tmp_path, config_file):
    """29500 + job id mod 1000 gave jobs 1234 and 2234 one port on a shared node (and 29500 + 0 is torchrun's own
    default): the second job's rendezvous failed or met the first one's. With that port held here, as the other
    job's torchrun would hold it, job 1234 rendezvouses on another port, one that was free on the first host. Both
    cases in one test: the held port is a fixed one, which two tests run side by side would both bind."""
    import socket

    for batch_host, probe_step in (("nx-node-1", False),  # the batch shell runs on the first training host: it asks
                                   ("nx-node-2", True)):  # another host trains first: a one-task step there asks
        case = tmp_path / batch_host
        case.mkdir()
        out = case / "run"
        calls = case / "srun_calls"
        env = _train_env(case, config_file, out, SLURMD_NODENAME=batch_host, FAKE_SRUN_CALLS=str(calls))
        with socket.socket() as other_job:
            other_job.bind(("", 29734))  # what job 1234 took before
            other_job.listen()
            proc = _run("train.sbatch", env, case)
            assert proc.returncode == 0, proc.stderr
            port = _rendezvous_port(proc)
            assert port != 29734
        with socket.socket() as probe:
            probe.bind(("", port))  # it was free (the fake torchrun never took it)
        steps = calls.read_text().splitlines()
        probe = "--nodes=1 --ntasks=1 --nodelist=nx-node-1 --cpus-per-task=16 python3 -c "  # on the job's CPUs
        probes = [step for step in steps if step.startswith(probe)]
        assert len(probes) == (1 if probe_step else 0) and len(steps) == len(probes) + 1, (batch_host, steps)


def test_train_sbatch_rendezvous_port_given_wins(tmp_path, config_file):
    """JUDGE_MASTER_PORT names the port: the probe on the first training host checks it free and asks for no other."""
    from judge.plumbing.processes import free_port

    calls = tmp_path / "srun_calls"
    port = free_port()
    env = _train_env(tmp_path, config_file, tmp_path / "run", JUDGE_MASTER_PORT=str(port), FAKE_SRUN_CALLS=str(calls))
    proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _rendezvous_port(proc) == port
    probe, training = calls.read_text().splitlines()
    assert probe.startswith("--nodes=1 --ntasks=1 --nodelist=nx-node-1 ") and probe.endswith(f" {port}")


def test_train_sbatch_stops_on_a_named_rendezvous_port_another_process_holds(tmp_path, config_file):
    """A JUDGE_MASTER_PORT another process listens on was passed to every node's torchrun unchecked: the rendezvous
    failed on the first training host once every node had started. The job stops before any training step, exit 2,
    in one line naming the variable and the port."""
    import socket

    calls = tmp_path / "srun_calls"
    with socket.socket() as other_job:
        other_job.bind(("", 0))
        other_job.listen()
        port = other_job.getsockname()[1]
        env = _train_env(tmp_path, config_file, tmp_path / "run", JUDGE_MASTER_PORT=str(port),
                         FAKE_SRUN_CALLS=str(calls))  # fmt: skip
        proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: JUDGE_MASTER_PORT={port}: port {port} is taken (Address already in use) on "
                           "nx-node-1, where torchrun's rendezvous binds it; name another (judge-train submit "
                           "--master-port), or leave it unset for one found free\n")
    assert len(calls.read_text().splitlines()) == 1 and not (tmp_path / "srun_args").exists()  # the probe alone


@pytest.mark.parametrize(("given", "line"), [
    ({}, "x 1 rank"),  # no GPUs from Slurm: one CPU rank a node
    ({"SLURM_GPUS_ON_NODE": "1"}, "x 1 rank"),
    ({"JUDGE_PROCS_PER_NODE": "2"}, "x 2 ranks"),
])  # fmt: skip
def test_train_sbatch_banner_counts_the_ranks_of_a_node(tmp_path, config_file, given, line):
    """The banner said "x 1 ranks" for every job of one rank a node; the word now follows the count."""
    env = _train_env(tmp_path, config_file, tmp_path / "run", **given)
    proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^    nodes       2: nx-node-\[1-2\] (.*)$", proc.stdout, re.M).group(1) == line


# Three nodes; `scontrol show hostlist` compacts the training two when FAKE_HOSTLIST=yes, else fails as it would where
# the controller does not answer.
THREE_NODE_SCONTROL = r"""#!/bin/bash
case "$1 $2" in
  "show hostnames") printf "nx-node-1\nnx-node-2\nnx-node-3\n";;
  "show hostlist") [[ $FAKE_HOSTLIST == yes && $3 == nx-node-2,nx-node-3 ]] && echo "nx-node-[2-3]" || exit 1;;
  "show node") echo "NodeName=$3 Arch=x86_64 NodeAddr=10.0.0.5 NodeHostName=$3";;
esac
"""


@pytest.mark.parametrize(("hostlist", "nodes"), [("yes", "nx-node-[2-3]"), ("no", "nx-node-2,nx-node-3")])
def test_train_sbatch_banner_names_the_training_nodes_apart_from_the_vllm_server(tmp_path, config_file, hostlist,
                                                                                 nodes):
    """GRPO's server holds the first node: the banner said "nodes 2: nx-node-[1-3]", the count of training nodes beside
    the job's whole list. It now lists the nodes that train, and which one runs the server."""
    modules = tmp_path / "modules"
    (modules / "trl" / "scripts").mkdir(parents=True)
    for package in (modules / "trl", modules / "trl" / "scripts"):
        (package / "__init__.py").write_text("")
    (modules / "trl" / "scripts" / "vllm_serve.py").write_text("raise SystemExit(0)\n")  # a server step that ends
    env = _train_env(tmp_path, config_file, tmp_path / "run", SLURM_GPUS_ON_NODE="8",
                     SLURM_JOB_NODELIST="nx-node-[1-3]", JUDGE_VLLM_SERVE_MODEL="Qwen/Qwen3-8B", FAKE_HOSTLIST=hostlist,
                     PYTHONPATH=os.pathsep.join([str(modules), str(REPO)]))  # fmt: skip
    write_executables(tmp_path / "bin3", {"scontrol": THREE_NODE_SCONTROL})
    env["PATH"] = f"{tmp_path / 'bin3'}{os.pathsep}{env['PATH']}"
    proc = _run("train.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^    nodes       (.*)$", proc.stdout, re.M).group(1) == (
        f"2: {nodes} x 8 ranks, training; nx-node-1 runs the vLLM server")
    srun = (tmp_path / "srun_args").read_text().split("\0")[:-1]
    assert "--nodes=2" in srun and "--nodelist=nx-node-2,nx-node-3" in srun  # the banner's nodes are the step's


# --- eval.sbatch: serve.sbatch's JUDGE_API_KEY reaches judge-eval --------------------------------------------


@pytest.mark.parametrize(("given", "sent"), [
    ({"JUDGE_API_KEY": "k-serve"}, "k-serve"),  # as for serve.sbatch
    ({"JUDGE_API_KEY": "k-serve", "JUDGE_SERVE_API_KEY": "k-old"}, "k-serve"),  # serve.sbatch's rule: it wins
    ({"JUDGE_SERVE_API_KEY": "k-direct"}, "k-direct"),
    ({}, ""),
])  # fmt: skip
def test_eval_sbatch_hands_judge_api_key_to_judge_eval(tmp_path, given, sent):
    """docs/slurm.md tells users to set JUDGE_API_KEY for a served judge; serve.sbatch gives it to judge-serve as
    JUDGE_SERVE_API_KEY, the variable judge-eval sends first: the array's tasks must do the same."""
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'printf "%s" "${JUDGE_SERVE_API_KEY:-}" >"$FAKE_KEY"\n', "judge-eval": "exit 0\n",
        "python3": EVAL_PYTHON3})
    data = tmp_path / "test.jsonl"
    data.write_text('{"id": 1}\n{"id": 2}\n')
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_")) and k != "OPENAI_API_KEY"},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_KEY": str(tmp_path / "key"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), **given,
    }  # fmt: skip
    proc = _run("eval.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "key").read_text() == sent
    assert not [key for key in given.values() if key in proc.stdout + proc.stderr]  # a key is never printed


def test_eval_sbatch_sends_a_key_its_env_script_reads_from_a_file(tmp_path):
    """docs/slurm.md keeps the key out of the job's recorded environment (sacct --env-vars) by exporting it in
    JUDGE_ENV_SCRIPT from a file: the script must source that before it hands JUDGE_API_KEY on."""
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'printf "%s" "${JUDGE_SERVE_API_KEY:-}" >"$FAKE_KEY"\n', "judge-eval": "exit 0\n",
        "python3": EVAL_PYTHON3})
    (tmp_path / "key").write_text("k-file\n")
    (tmp_path / "env.sh").write_text(f'export JUDGE_API_KEY=$(<"{tmp_path / "key"}")\n')
    data = tmp_path / "test.jsonl"
    data.write_text('{"id": 1}\n')
    env = {
        **{k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "JUDGE_")) and k not in ("OPENAI_API_KEY", "JUDGE_SERVE_API_KEY")},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_KEY": str(tmp_path / "sent"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), "JUDGE_ENV_SCRIPT": str(tmp_path / "env.sh"),
    }  # fmt: skip
    proc = _run("eval.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sent").read_text() == "k-file"
    assert "k-file" not in proc.stdout + proc.stderr


# --- eval.sbatch, rank.sbatch: a task can be put back with `scontrol requeue <id>_<task>` ---------------------


@pytest.mark.parametrize("script", ["eval.sbatch", "rank.sbatch", "train.sbatch"])
def test_array_scripts_ask_to_be_requeueable(script):
    """docs/slurm.md reruns a dead task with `scontrol requeue <array id>_<task>`; on a cluster with JobRequeue=0
    (slurm.conf(5)) only a job submitted with --requeue can be requeued (sbatch(1), --requeue)."""
    header = [line for line in (SLURM_DIR / script).read_text().splitlines() if line.startswith("#SBATCH")]
    assert header.count("#SBATCH --requeue") == 1
    assert "#SBATCH --no-requeue" not in header
    assert re.search(r"scontrol requeue <array id>_<task>", (REPO / "docs" / "slurm.md").read_text())


# --- serve.sbatch: a port of its own ------------------------------------------------------------------------------


def test_serve_sbatch_takes_a_free_port_not_one_a_job_id_shares(tmp_path):
    """Two serve jobs on one node whose ids are equal modulo 1000 got one port (8000 + id % 1000): the second failed
    to bind while its endpoint file pointed its eval array at the first's model. With the old port held here, as
    the other job's server would hold it, job 1234 publishes another port, one that was free; JUDGE_PORT still wins."""
    import errno
    import socket

    # the endpoint file lives while the job runs: the fake srun (the server's step) keeps what it says
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'cat "$JUDGE_ENDPOINT_DIR"/*.endpoint >"$FAKE_SEEN"\n', "judge-serve": "exit 0\n",
        "scontrol": 'echo "${@: -1}"\n'})  # `scontrol show hostnames X`: X
    model = tmp_path / "model"
    model.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "1234", "SLURM_JOB_NODELIST": "localhost",
        "JUDGE_MODEL": str(model), "JUDGE_ENDPOINT_DIR": str(tmp_path / "endpoints"),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), "FAKE_SEEN": str(tmp_path / "seen"),
    }  # fmt: skip
    endpoint = tmp_path / "seen"
    with socket.socket() as other_job:
        other_job.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed connection's TIME_WAIT is no holder
        try:
            other_job.bind(("", 9234 - 1000))  # 8234: what job 1234 took before
            other_job.listen()
        except OSError as err:  # another process on this machine holds it: as the other job's server would
            if err.errno != errno.EADDRINUSE:
                raise
        proc = _run("serve.sbatch", env, tmp_path)
        assert proc.returncode == 0, proc.stderr
        port = int(endpoint.read_text().strip().rsplit(":", 1)[1].split("/")[0])
        assert port != 8234
        with socket.socket() as probe:
            probe.bind(("", port))  # it was free (the fake judge-serve never took it)
    proc = _run("serve.sbatch", {**env, "JUDGE_PORT": "8765"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert endpoint.read_text().strip().endswith(":8765/v1")


def test_serve_sbatch_writes_its_endpoint_in_the_submit_folder(tmp_path):
    """Without JUDGE_ENDPOINT_DIR the endpoint file goes to the folder sbatch ran in (SLURM_SUBMIT_DIR), as the
    header says, not to the job's working folder: under `sbatch --chdir` it landed there, and an eval array pointed at
    the submit folder polled for an hour."""
    srun = 'cat "$SLURM_SUBMIT_DIR"/*.endpoint >"$FAKE_SEEN"; ls "$PWD" >"$FAKE_LS"\n'  # while the job runs
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": srun, "judge-serve": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})
    model, submit_dir, work_dir = tmp_path / "model", tmp_path / "submit", tmp_path / "chdir"
    for folder in (model, submit_dir, work_dir):
        folder.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "localhost",
        "SLURM_SUBMIT_DIR": str(submit_dir), "JUDGE_MODEL": str(model), "JUDGE_PORT": "8123",
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), "FAKE_SEEN": str(tmp_path / "seen"), "FAKE_LS": str(tmp_path / "ls"),
    }  # fmt: skip
    proc = _run("serve.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "seen").read_text() == "http://localhost:8123/v1\n"
    assert ".endpoint" not in (tmp_path / "ls").read_text()


@pytest.mark.parametrize("flags", [["--port", "9000"], ["--port=9000"], ["--host", "127.0.0.1"],
                                   ["--model", "other/model"], ["--model=other/model"], ["--config", "other.yaml"],
                                   ["--config=other.yaml"]])  # fmt: skip
def test_serve_sbatch_refuses_a_port_or_host_its_endpoint_file_would_not_name(tmp_path, flags):
    """`sbatch slurm/serve.sbatch --port 9000`: judge-serve took the last --port (9000) while the endpoint file named
    the script's own, and an eval array pointed at it polled a port nothing listened on for an hour. The job stops
    at once instead, naming JUDGE_PORT, before it publishes an endpoint or starts judge-serve. Likewise a --model or
    --config there, which judge-serve served while the banner named JUDGE_MODEL / JUDGE_SERVE_CONFIG."""
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'touch "$FAKE_SRUN_RAN"\n', "judge-serve": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})  # fmt: skip
    (tmp_path / "model").mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "55", "SLURM_JOB_NODELIST": "localhost",
        "JUDGE_MODEL": str(tmp_path / "model"), "JUDGE_ENDPOINT_DIR": str(tmp_path / "endpoints"),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), "FAKE_SRUN_RAN": str(tmp_path / "srun_ran"),
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "serve.sbatch"), *flags], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"serve.sbatch: {flags[0]} after the script: ")
    assert ("JUDGE_PORT" in proc.stderr) == flags[0].startswith("--port")
    named = {"--model": "JUDGE_MODEL", "--config": "JUDGE_SERVE_CONFIG"}.get(flags[0].split("=")[0])
    assert named is None or f"set {named} instead" in proc.stderr
    assert not (tmp_path / "endpoints").exists() and not (tmp_path / "srun_ran").exists()


@pytest.mark.parametrize(("script", "flags", "named"), [
    ("eval.sbatch", ["--data", "/shared/all.jsonl"], "--data"),  # every task would judge the whole file
    ("eval.sbatch", ["--out=/shared/one"], "--out"),  # every task would write one folder
    ("rank.sbatch", ["--model", "/shared/models/a"], "--model"),  # every task would rank one candidate
    ("rank.sbatch", ["--out", "/shared/one"], "--out"),
])  # fmt: skip
def test_array_scripts_refuse_a_flag_each_task_sets_itself(tmp_path, script, flags, named):
    """judge-eval takes the last of a flag given twice: `sbatch --array=0-3 slurm/eval.sbatch --data all.jsonl` had
    each of the 4 tasks judge all of it (the merge then held every record 4 times). The task stops before srun."""
    bin_dir = write_executables(tmp_path / "bin", {"srun": 'touch "$FAKE_SRUN_RAN"\n', "judge-eval": "exit 0\n"})
    data, models = tmp_path / "test.jsonl", tmp_path / "models.txt"
    data.write_text('{"id": 1}\n{"id": 2}\n')
    models.write_text("/shared/models/a\n/shared/models/b\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_RAN": str(tmp_path / "srun_ran"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_RANK_MODELS": str(models), "JUDGE_RANK_JUDGE": "http://n1:8000/v1", "JUDGE_RANK_DATA": str(data),
        "JUDGE_RANK_OUT": str(tmp_path / "rank"), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
    }  # fmt: skip
    assert _run(script, env, tmp_path).returncode == 0  # the same task without the flag runs
    (tmp_path / "srun_ran").unlink()
    proc = subprocess.run(["bash", str(SLURM_DIR / script), *flags], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{script}: {named} after the script: each task sets its own")
    assert not (tmp_path / "srun_ran").exists()


@pytest.mark.parametrize(("flags", "accepted"), [
    (["--output_dir", "{other}"], False),
    (["--output-dir={other}"], False),
    (["--output_dir", "{out}/"], True),  # the same folder, spelt otherwise
    (["--max_steps", "9"], True),
])  # fmt: skip
def test_train_sbatch_refuses_a_second_run_folder_in_its_arguments(tmp_path, config_file, flags, accepted):
    """`JUDGE_OUTPUT_DIR=A sbatch slurm/train.sbatch --output_dir B`: judge-train trained in B (the later flag) while the
    script locked A and looked for checkpoints there, so a requeue found none to resume. It stops before any srun."""
    out, other = tmp_path / "run", tmp_path / "elsewhere"
    env = _train_env(tmp_path, config_file, out)
    words = [flag.format(out=out, other=other) for flag in flags]
    proc = subprocess.run(["bash", str(SLURM_DIR / "train.sbatch"), *words], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert (proc.returncode == 0) == accepted, proc.stderr
    assert (tmp_path / "srun_args").exists() == accepted
    if not accepted:
        assert proc.stderr == (f"train.sbatch: {words[0].split('=')[0]} {other} after the script is not "
                               f"JUDGE_OUTPUT_DIR={out}; give the run folder once, as JUDGE_OUTPUT_DIR\n")
        assert not out.exists()


def _serve_env(tmp_path: Path, srun: str, **extra: str) -> dict[str, str]:
    """A serve job's environment with a fake srun (``srun``: its bash body) and judge-serve on PATH."""
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": srun, "judge-serve": "exit 0\n", "scontrol": 'echo "${@: -1}"\n'})
    (tmp_path / "model").mkdir(exist_ok=True)
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "91", "SLURM_JOB_NODELIST": "localhost",
        "JUDGE_MODEL": str(tmp_path / "model"), "JUDGE_ENDPOINT_DIR": str(tmp_path / "endpoints"),
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"), **extra,
    }  # fmt: skip


@pytest.mark.parametrize("port", ["80x", "0", "65536", "-1", "8000 ", "123456", "1e3"])
def test_serve_sbatch_refuses_a_port_that_is_not_one(tmp_path, port):
    """JUDGE_PORT=80x went into the endpoint file as http://node:80x/v1, and every eval array polled it for an hour:
    anything but an integer 1-65535 stops the job before an endpoint is written or srun runs."""
    env = _serve_env(tmp_path, 'touch "$FAKE_SRUN_RAN"\n', JUDGE_PORT=port, FAKE_SRUN_RAN=str(tmp_path / "ran"))
    proc = _run("serve.sbatch", env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"serve.sbatch: JUDGE_PORT={port} is not a port: an integer from 1 to 65535\n"
    assert not (tmp_path / "endpoints").exists() and not (tmp_path / "ran").exists()


def test_serve_sbatch_reads_a_port_with_leading_zeros_as_decimal(tmp_path):
    """08080 is port 8080 (not octal, which bash arithmetic would refuse for an 8), and 65535 is the last port."""
    env = _serve_env(tmp_path, 'cat "$JUDGE_ENDPOINT_DIR"/*.endpoint >"$FAKE_SEEN"\n', FAKE_SEEN=str(tmp_path / "s"))
    assert _run("serve.sbatch", {**env, "JUDGE_PORT": "08080"}, tmp_path).returncode == 0
    assert (tmp_path / "s").read_text() == "http://localhost:8080/v1\n"
    assert _run("serve.sbatch", {**env, "JUDGE_PORT": "65535"}, tmp_path).returncode == 0
    assert (tmp_path / "s").read_text() == "http://localhost:65535/v1\n"


@pytest.mark.parametrize(("srun", "code"), [("exit 0\n", 0), ("exit 7\n", 7), ('kill -TERM "$PPID"\n', 143)])
def test_serve_sbatch_removes_its_endpoint_file_when_the_job_ends(tmp_path, srun, code):
    """The endpoint file outlived the job: an eval array pointed at a finished serve job polled its dead URL until
    JUDGE_EVAL_WAIT_S. It exists while the server's step runs, and is gone once the job ends, whether judge-serve
    returned, failed (its exit status kept), or the job got SIGTERM (scancel, the time limit)."""
    seen = 'cat "$JUDGE_ENDPOINT_DIR"/*.endpoint >"$FAKE_SEEN"\n'
    env = _serve_env(tmp_path, seen + srun, JUDGE_PORT="8123", FAKE_SEEN=str(tmp_path / "seen"))
    proc = _run("serve.sbatch", env, tmp_path)
    assert proc.returncode == code, proc.stderr
    assert (tmp_path / "seen").read_text() == "http://localhost:8123/v1\n"
    assert list((tmp_path / "endpoints").iterdir()) == []


def test_rank_sbatch_reads_relative_paths_against_the_submit_folder(tmp_path):
    """`sbatch --chdir /scratch slurm/rank.sbatch` with JUDGE_RANK_DATA=data.jsonl JUDGE_RANK_OUT=runs: the task
    looked for the data and wrote its results under the job's working folder; as eval.sbatch does, a relative path
    is the submitter's, read against SLURM_SUBMIT_DIR — the candidates' file and the YAML config too."""
    bin_dir = write_executables(tmp_path / "bin", {
        "srun": 'printf "%s\\n" "$@" >"$FAKE_SRUN_ARGS"\n', "judge-eval": "exit 0\n"})
    submit_dir, work_dir = tmp_path / "submit", tmp_path / "chdir"
    for folder in (submit_dir, work_dir):
        folder.mkdir()
    (submit_dir / "data.jsonl").write_text('{"id": 1}\n')
    (submit_dir / "models.txt").write_text("/shared/models/a\n")
    (submit_dir / "rank.yaml").write_text("n_boot: 10\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "SLURM_SUBMIT_DIR": str(submit_dir), "JUDGE_RANK_MODELS": "models.txt", "JUDGE_RANK_CONFIG": "rank.yaml",
        "JUDGE_RANK_JUDGE": "http://n1:8000/v1", "JUDGE_RANK_DATA": "data.jsonl", "JUDGE_RANK_OUT": "runs",
        "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
    }  # fmt: skip
    proc = _run("rank.sbatch", env, work_dir)
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "srun_args").read_text().splitlines()
    assert args[args.index("--data") + 1] == f"{submit_dir}/data.jsonl"
    assert args[args.index("--config") + 1] == f"{submit_dir}/rank.yaml"
    assert args[args.index("--model") + 1] == "/shared/models/a"
    assert args[args.index("--out") + 1] == f"{submit_dir}/runs/0"
    assert (submit_dir / "runs" / "0").is_dir() and not (work_dir / "runs").exists()


# --- eval.sbatch: criteria auto cannot be cut into shards ---------------------------------------------------------


@pytest.mark.parametrize(("config", "flags", "refused"), [
    ("", ["--criteria", "auto"], True),
    ("", ["--criteria=auto"], True),
    ("criteria: auto  # expand\n", [], True),
    ("criteria: 'auto'\n", [], True),
    ("\ufeffcriteria: auto\n", [], True),  # a byte order mark first, which YAML readers skip
    ("criteria: auto\n", ["--criteria", ""], False),  # the flag after the script wins, as in judge-eval
    ("criteria_classifier: tfidf\n", [], False),
    ("", ["--criteria", "auto", "--criteria="], False),
])  # fmt: skip
def test_eval_sbatch_refuses_criteria_auto_before_any_work(tmp_path, config, flags, refused):
    """Each task expanded its own block: an id-less row took its line in the block as id (`0::censor` in every
    shard), and the merge job scored against the raw rows, which name no criterion, after the whole array judged.
    The task stops before srun (exit 2), pointing at the expansion to run first; other settings pass."""
    bin_dir = write_executables(tmp_path / "bin", {"srun": 'touch "$FAKE_SRUN_RAN"\n', "judge-eval": "exit 0\n",
                                                   "python3": EVAL_PYTHON3})
    data, yaml = tmp_path / "rows.jsonl", tmp_path / "eval.yaml"
    data.write_text('{"instruction": "a", "answer": "b"}\n')
    yaml.write_text(config or "concurrency: 2\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_RAN": str(tmp_path / "srun_ran"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_EVAL_CONFIG": str(yaml), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "eval.sbatch"), *flags], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == (2 if refused else 0), proc.stderr
    assert (tmp_path / "srun_ran").exists() != refused
    if refused:
        assert proc.stderr == ("eval.sbatch: criteria auto: an eval array cannot expand rows shard by shard (their ids "
                               "would collide); expand JUDGE_EVAL_DATA once first and give the items file as "
                               'JUDGE_EVAL_DATA (docs/slurm.md, "criteria: auto")\n')
        assert not (tmp_path / "ev").exists()


def _eval_task(tmp_path: Path, data_row: str, flags: list[str], config: str = "concurrency: 2\n"):
    """eval.sbatch as array task 0 of job 7 with stand-in srun and judge-eval: (the process, whether srun ran)."""
    bin_dir = write_executables(tmp_path / "bin", {"srun": 'touch "$FAKE_SRUN_RAN"\n', "judge-eval": "exit 0\n",
                                                   "python3": EVAL_PYTHON3})
    data, yaml = tmp_path / "rows.jsonl", tmp_path / "eval.yaml"
    data.write_text(data_row, encoding="utf-8")
    yaml.write_text(config, encoding="utf-8")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_RAN": str(tmp_path / "srun_ran"),
        "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_NODELIST": "n1",
        "JUDGE_EVAL_JUDGE": "http://n1:8000/v1", "JUDGE_EVAL_DATA": str(data), "JUDGE_EVAL_OUT": str(tmp_path / "ev"),
        "JUDGE_EVAL_CONFIG": str(yaml), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "eval.sbatch"), *flags], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)  # fmt: skip
    return proc, (tmp_path / "srun_ran").exists()


@pytest.mark.parametrize("flags", [["--config", "auto.yaml"], ["--config=auto.yaml"]])
def test_eval_sbatch_refuses_a_config_after_the_script(tmp_path, flags):
    """A --config after the script wins over JUDGE_EVAL_CONFIG in judge-eval (the last one given), unread by the
    task's checks: its criteria: auto was judged by the whole array and refused by the merge. Refused as --data and
    --out are (exit 2), before any work."""
    (tmp_path / "auto.yaml").write_text("criteria: auto\n", encoding="utf-8")
    proc, srun_ran = _eval_task(tmp_path, '{"instruction": "a", "answer": "b"}\n', flags)
    assert (proc.returncode, srun_ran) == (2, False)
    assert proc.stderr == ("eval.sbatch: --config after the script: set JUDGE_EVAL_CONFIG instead (read and checked "
                           "before any work; flags after the script override it)\n")
    assert not (tmp_path / "ev").exists()


def test_eval_sbatch_refuses_pairwise_data_before_any_work(tmp_path):
    """Pairwise rows (answer_1, answer_2) were judged by every task into pairwise_predictions.jsonl, then the merge
    found no predictions.jsonl after all the judging: refused up front (exit 2), told as judge-eval tells them; a
    pointwise row whose text names answer_1 passes."""
    pair = '{"instruction": "a", "answer_1": "b", "answer_2": "c", "rubrics": "r"}\n'
    proc, srun_ran = _eval_task(tmp_path, "\n" + pair, [])
    data = tmp_path / "rows.jsonl"
    assert (proc.returncode, srun_ran) == (2, False)
    assert proc.stderr == (f"eval.sbatch: JUDGE_EVAL_DATA={data} holds pairwise rows (answer_1, answer_2): an eval "
                           "array judges and merges pointwise shards only; run `judge-eval run --data "
                           f"{data}` as one job (docs/evaluation.md, pairwise)\n")
    assert not (tmp_path / "ev").exists()
    proc, srun_ran = _eval_task(tmp_path, '{"instruction": "answer_1", "answer": "\\"answer_1\\": b"}\n', [])
    assert (proc.returncode, srun_ran) == (0, True), proc.stderr


# --- serve.sbatch: an address other nodes reach, or none published ------------------------------------------------


@pytest.mark.parametrize(("show_node", "published"), [
    ("NodeName=nx-gone.invalid Arch=x86_64 NodeAddr=10.0.0.5 NodeHostName=nx-gone.invalid", "10.0.0.5"),
    ("NodeName=nx-gone.invalid Arch=x86_64 NodeAddr=nx-gone.invalid NodeHostName=nx-gone.invalid", None),
    ("NodeName=nx-gone.invalid Arch=x86_64", None),
])  # fmt: skip
def test_serve_sbatch_publishes_no_loopback_for_a_node_it_cannot_name(tmp_path, show_node, published):
    """A node whose name does not resolve and whose Slurm record gives no other address published
    http://127.0.0.1:PORT/v1: eval tasks on other nodes polled their own loopback for an hour. The job now stops
    (exit 2) naming the node, before the endpoint file or srun; a NodeAddr (an IP) is still published."""
    scontrol = (f'case "$1 $2" in\n  "show hostnames") echo nx-gone.invalid;;\n  "show node") echo "{show_node}";;\n'
                "esac\n")
    env = _serve_env(tmp_path, 'cat "$JUDGE_ENDPOINT_DIR"/*.endpoint >"$FAKE_SEEN"\n', JUDGE_PORT="8123",
                     FAKE_SEEN=str(tmp_path / "seen"))
    write_executables(tmp_path / "bin", {"scontrol": scontrol})
    proc = _run("serve.sbatch", env, tmp_path)
    if published:
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "seen").read_text() == f"http://{published}:8123/v1\n"
    else:
        assert proc.returncode == 2
        assert proc.stderr == ("serve.sbatch: node nx-gone.invalid: its name does not resolve here (getent hosts) and "
                               "Slurm gives no NodeAddr for it, so no address other nodes reach can be published; fix "
                               "the node's name resolution or set NodeAddr in slurm.conf\n")
        assert not (tmp_path / "seen").exists() and not list((tmp_path / "endpoints").glob("*.endpoint"))


# --- serve.sbatch: judge-serve answers the host its endpoint file names ------------------------------------------

NODE_ADDR_SCONTROL = ('case "$1 $2" in\n  "show hostnames") echo nx-gone.invalid;;\n'
                      '  "show node") echo "NodeName=nx-gone.invalid NodeAddr=192.0.2.2";;\nesac\n')


def _served_config(tmp_path: Path, flags: list[str], config: str | None = None):
    """judge-serve's settings as it reads the flags serve.sbatch gives it (the fake srun keeps them), published by
    Slurm's NodeAddr (the node's name does not resolve)."""
    from serve.cli import resolve_config

    extra = {}
    if config is not None:
        (tmp_path / "serve.yaml").write_text(config)
        extra["JUDGE_SERVE_CONFIG"] = str(tmp_path / "serve.yaml")
    env = _serve_env(tmp_path, 'printf "%s\\0" "$@" >"$FAKE_ARGS"\n', JUDGE_PORT="40291",
                     FAKE_ARGS=str(tmp_path / "args"), **extra)
    # python3 that imports pollux-judge, as in the job's environment
    write_executables(tmp_path / "bin", {"scontrol": NODE_ADDR_SCONTROL,
                                         "python3": f'exec {sys.executable} "$@"\n'})
    proc = subprocess.run(["bash", str(SLURM_DIR / "serve.sbatch"), *flags], env=env, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "endpoint  http://192.0.2.2:40291/v1" in proc.stdout
    args = (tmp_path / "args").read_text().split("\0")[:-1]
    argv = args[args.index("judge-serve") + 1:]
    assert argv.count("--allowed-hosts") == 1, argv
    config, _ = resolve_config(argv)
    return config


def test_serve_sbatch_lets_judge_serve_answer_the_host_it_publishes(tmp_path):
    """Published by its NodeAddr, a judge-serve without an API key answered /ready with 400 host_not_allowed for
    `Host: 192.0.2.2`, and the eval array waited an hour. The published host is now an allowed host, beside
    judge-serve's own names (app.py adds allowed_hosts to them)."""
    assert _served_config(tmp_path, []).allowed_hosts == ["192.0.2.2"]


@pytest.mark.parametrize(("flags", "config", "allowed"), [
    (["--allowed-hosts", "judge.example.org other"], None, ["judge.example.org", "other", "192.0.2.2"]),
    (['--allowed-hosts=["judge.example.org"]'], None, ["judge.example.org", "192.0.2.2"]),
    ([], "allowed_hosts: [judge.example.org]\n", ["judge.example.org", "192.0.2.2"]),
    (["--allowed-hosts", "flag.example.org"], "allowed_hosts: [judge.example.org]\n",
     ["flag.example.org", "192.0.2.2"]),  # the flag replaces the config's list, as judge-serve reads them
    (["--allowed-hosts", "192.0.2.2"], None, ["192.0.2.2"]),
    # JSON only when the text starts with "[", as judge-serve reads a list flag: a quoted host is one host, not a
    # JSON string refused as no list
    (["--allowed-hosts", '"judge.example.org"'], None, ["judge.example.org", "192.0.2.2"]),
    (["--allowed-hosts", "2001"], None, ["2001", "192.0.2.2"]),
])  # fmt: skip
def test_serve_sbatch_keeps_the_allowed_hosts_given_beside_its_own(tmp_path, flags, config, allowed):
    """Hosts the config or a flag after the script allow are kept: a second --allowed-hosts would replace one list
    with the other (judge-serve takes the last flag)."""
    assert _served_config(tmp_path, flags, config).allowed_hosts == allowed


@pytest.mark.parametrize(("gpus", "said"), [(None, "(0 GPUs)"), ("1", "(1 GPU)"), ("2", "(2 GPUs)")])
def test_serve_sbatch_banner_counts_the_nodes_gpus(tmp_path, gpus, said):
    """Every one-GPU serve job (the template's default) said "(1 GPUs)"; the word now follows the count."""
    env = _serve_env(tmp_path, "exit 0\n", **({"SLURM_GPUS_ON_NODE": gpus} if gpus else {}))
    proc = _run("serve.sbatch", env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"=== judge-serve: Slurm job 91 on localhost {said}, ")


def test_serve_sbatch_refuses_a_tensor_parallel_size_the_models_heads_do_not_split(tmp_path):
    """T-lite's 28 attention heads (4 key/value heads) on an 8-GPU node: judge-serve's engines stopped at their start
    with vLLM's traceback, after the queue's wait. The job stops at once, before it publishes an endpoint or runs
    srun, naming the sizes that split them (judge-serve's own rule, judge.plumbing.tensor_parallel, asked of the
    size judge-serve would use); a size after the script is the one checked, and one that splits them serves."""
    env = _serve_env(tmp_path, 'touch "$FAKE_SRUN_RAN"\n', SLURM_GPUS_ON_NODE="8",
                     FAKE_SRUN_RAN=str(tmp_path / "ran"), PYTHONPATH=str(REPO))
    write_executables(tmp_path / "bin", {"python3": f'exec "{sys.executable}" "$@"\n'})  # pollux-judge's python
    model = tmp_path / "model"
    (model / "config.json").write_text(json.dumps({"num_attention_heads": 28, "num_key_value_heads": 4}))

    def serve(*flags: str, **more: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SLURM_DIR / "serve.sbatch"), *flags], env={**env, **more},
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)

    refused = (f"vLLM cannot split {model}'s 28 attention heads (4 key/value heads; {model / 'config.json'}) over "
               "{tp} GPUs, and would stop judge-serve's engines at their start; ask for --gpus-per-node 1, 2 or 4, "
               "or give --tensor-parallel-size 1, 2 or 4 after the script\n")
    proc = serve()
    assert proc.returncode == 2
    assert proc.stderr == ("serve.sbatch: tensor-parallel size 8 (the node's GPUs, SLURM_GPUS_ON_NODE): "
                           + refused.format(tp=8))
    assert not (tmp_path / "endpoints").exists() and not (tmp_path / "ran").exists()
    proc = serve("--tensor-parallel-size=3")
    assert proc.returncode == 2
    assert proc.stderr == ("serve.sbatch: tensor-parallel size 3 (JUDGE_SERVE_CONFIG or a flag after the script): "
                           + refused.format(tp=3))
    assert not (tmp_path / "ran").exists()
    proc = serve("--tensor-parallel-size", "4")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ran").exists()
    (tmp_path / "ran").unlink()
    assert serve(SLURM_GPUS_ON_NODE="4").returncode == 0 and (tmp_path / "ran").exists()
    # a batch shell whose python3 cannot import pollux-judge leaves the size to judge-serve and vLLM, as before
    no_judge = "echo \"ModuleNotFoundError: No module named 'serve'\" >&2; exit 1\n"
    write_executables(tmp_path / "bin", {"python3": no_judge})
    (tmp_path / "ran").unlink()
    proc = serve(JUDGE_PORT="8123")
    assert proc.returncode == 0 and proc.stderr == "" and (tmp_path / "ran").exists()


def test_serve_sbatch_leaves_a_size_engine_args_give_to_vllm(tmp_path):
    """engine_args that give vLLM its own size (here 4, in JUDGE_SERVE_CONFIG) come last, and are the size the
    engines use: judge-serve itself leaves it to vLLM (serve.cli.engines_tensor_parallel_size). The job checked the
    node's 8 GPUs instead, which 28 heads do not split over, and stopped a job judge-serve would have served."""
    env = _serve_env(tmp_path, 'touch "$FAKE_SRUN_RAN"\n', SLURM_GPUS_ON_NODE="8",
                     FAKE_SRUN_RAN=str(tmp_path / "ran"), PYTHONPATH=str(REPO))
    write_executables(tmp_path / "bin", {"python3": f'exec "{sys.executable}" "$@"\n'})  # pollux-judge's python
    (tmp_path / "model" / "config.json").write_text(json.dumps({"num_attention_heads": 28, "num_key_value_heads": 4}))
    config = tmp_path / "serve.yaml"
    config.write_text('engine_args: ["--seed", "0", "--tensor-parallel-size", "4"]\n', encoding="utf-8")
    proc = subprocess.run(["bash", str(SLURM_DIR / "serve.sbatch")], env={**env, "JUDGE_SERVE_CONFIG": str(config)},
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("script", sorted(path.name for path in SLURM_DIR.glob("*.sbatch")))
def test_every_job_appends_to_its_log_so_a_requeue_keeps_the_run_before_it(script):
    """A job Slurm requeues (its own --requeue, a node failure, a preemption under the cluster's JobRequeue) starts its
    script again with the same --output file: without --open-mode=append the second run truncates the first's log,
    and with it the reason the first stopped."""
    headers = [line for line in (SLURM_DIR / script).read_text().splitlines() if line.startswith("#SBATCH ")]
    assert "#SBATCH --open-mode=append" in headers, headers
