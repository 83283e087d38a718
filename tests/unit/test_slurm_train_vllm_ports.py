"""GRPO's vLLM server ports in slurm/train.sbatch and `judge-train submit`: the server's HTTP port (first node) and
the trainer's weight-sync group port (trl's ``vllm_group_port``, opened by the trainer's main process on the first
training host: trl/generation/vllm_client.py ``init_communicator``). Both were trl's fixed defaults, 8000 and 51216:
on a node two jobs shared, the second server could not bind, and its trainer generated with (and pushed its weights
into) the first job's server. Each is now found free on its host when the job starts, or named and checked free
there, and the server and the trainer get the same one. Run by bash against fake srun and scontrol; no cluster, no
vLLM (the fake srun records the server's step instead of running it)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.support.fake_commands import write_executables
from train import slurm_submit

REPO = Path(__file__).resolve().parents[2]
SERVER_GRPO = REPO / "configs" / "train" / "qwen3-8b" / "grpo.yaml"  # vllm_mode: server
COLOCATE_GRPO = REPO / "configs" / "train" / "t-lite" / "grpo.yaml"

# srun: a port probe (the script's python3 program binding sockets) runs here, as on the host it names, and is
# recorded as a line of its srun flags and the ports it asks for ("probes"); on the host FAKE_PROBE_DEAD names, it
# gives no answer, as where python3 cannot run. Any other step is recorded, one file a call, and ends. The server's
# step runs in the background and the script stops it once training returns: the training step waits until the
# server's call is on record, so that both are.
FAKE_SRUN = r"""
if [[ $* == *"import socket"* ]]; then
    flags=()
    while [[ $1 == --* ]]; do flags+=("$1"); shift; done
    echo "${flags[*]} | ${*:4}" >>"$FAKE_SRUN_CALLS/probes"
    [[ " ${flags[*]} " != *" --nodelist=${FAKE_PROBE_DEAD:-} "* ]] || exit 1
    exec "$@"
fi
if [[ " $* " != *" --model "* ]]; then
    for _ in $(seq 100); do [[ -e $FAKE_SRUN_CALLS/server ]] && break; sleep 0.1; done
    printf "%s\0" "$@" >"$FAKE_SRUN_CALLS/training"
else
    printf "%s\0" "$@" >"$FAKE_SRUN_CALLS/server.tmp" && mv "$FAKE_SRUN_CALLS/server.tmp" "$FAKE_SRUN_CALLS/server"
fi
"""
FAKE_SCONTROL = r"""
case "$1 $2" in
  "show hostnames") printf "nx-a\nnx-b\n";;
  "show node") echo "NodeName=$3 NodeAddr=10.0.0.${3#nx-}";;
esac
"""


@contextmanager
def _held(*ports: int) -> Iterator[list[int]]:
    """Listening sockets on ``ports`` (0: one the kernel picks), as another job's server or trainer holds them; a
    fixed port this machine already uses is left to its holder. Yields the ports held."""
    with ExitStack() as stack:
        held = []
        for port in ports:
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("", port))
            except OSError:  # taken already (another test run, or a service): held all the same
                held.append(port)
                continue
            sock.listen()
            held.append(sock.getsockname()[1])
        yield held


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


# python3 for a kernel that hands out FAKE_KERNEL_PICKS for a bind to port 0 whenever that port can be bound, as a
# kernel may hand out any free port: the port probe runs with socket.bind so changed, every other program unchanged.
KERNEL_PICKS = """import os, socket
_bind = socket.socket.bind
def _picking(self, address, _picks=int(os.environ["FAKE_KERNEL_PICKS"])):
    if address[1] == 0:
        try:
            return _bind(self, (address[0], _picks))
        except OSError:
            pass
    return _bind(self, address)
socket.socket.bind = _picking
"""
FAKE_PYTHON3 = r"""
if [[ $1 == -c && $2 == *"import socket"* ]]; then
    exec "$FAKE_REAL_PYTHON" -c "$FAKE_KERNEL_SHIM"$'\n'"$2" "${@:3}"
fi
exec "$FAKE_REAL_PYTHON" "$@"
"""


def _job(tmp_path: Path, *after: str, kernel_picks: int | None = None,
         **env: str) -> tuple[subprocess.CompletedProcess, list[str], list[str]]:
    """train.sbatch as a GRPO server-mode job on nx-a (server) and nx-b (training); ``kernel_picks``: the port a
    bind to port 0 gets whenever it can be bound (``KERNEL_PICKS``). Returns the process and the server's and the
    training step's srun arguments ([] for a step that did not start)."""
    (tmp_path / "judge.yaml").write_text("recipe: grpo\n")
    calls = tmp_path / "calls"
    calls.mkdir()
    bin_dir = write_executables(tmp_path / "bin", {"srun": FAKE_SRUN, "scontrol": FAKE_SCONTROL,
                                                   "torchrun": "exit 0\n", "judge-train": "exit 0\n",
                                                   "trl": "exit 0\n"})  # fmt: skip
    if kernel_picks is None:
        (bin_dir / "python3").symlink_to(sys.executable)
    else:
        write_executables(bin_dir, {"python3": FAKE_PYTHON3})
        env = {"FAKE_REAL_PYTHON": sys.executable, "FAKE_KERNEL_SHIM": KERNEL_PICKS,
               "FAKE_KERNEL_PICKS": str(kernel_picks), **env}
    proc = subprocess.run(["bash", str(REPO / "slurm" / "train.sbatch"), *after], env={
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_", "WANDB_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SRUN_CALLS": str(calls),
        "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "nx-a,nx-b", "SLURM_SUBMIT_DIR": str(tmp_path),
        "JUDGE_CONFIG": "judge.yaml", "JUDGE_OUTPUT_DIR": "run", "JUDGE_CACHE_DIR": "cache",
        "JUDGE_VLLM_SERVE_MODEL": "Qwen/Qwen3-8B", **env,
    }, capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip
    server, training = ((calls / name).read_text().split("\0")[:-1] if (calls / name).exists() else []
                        for name in ("server", "training"))
    return proc, server, training


def _after(step: list[str], flag: str) -> str:
    return step[len(step) - 1 - step[::-1].index(flag) + 1]  # the last one: the one trl's parser keeps


@pytest.mark.parametrize("batch_host", ["nx-a", None])  # the batch shell on the server's node asks there itself
def test_the_server_and_the_trainer_get_one_port_found_free_not_trls_fixed_ones(tmp_path, batch_host):
    """Another job on the node holds 8000 and 51216 (trl's defaults, which every job took): this one's server listens
    on another port, found free, and its trainer is pointed at that same port and given a free group port."""
    env = {"SLURMD_NODENAME": batch_host} if batch_host else {}
    with _held(8000, 51216):
        proc, server, training = _job(tmp_path, **env)
    assert proc.returncode == 0, proc.stderr
    serve_port, group_port = _after(server, "--port"), _after(training, "--vllm-group-port")
    assert _after(training, "--vllm-server-port") == serve_port
    assert _after(training, "--vllm-server-host") == "10.0.0.a"
    assert serve_port != "8000" and group_port != "51216"
    assert _free(int(serve_port)) and _free(int(group_port))  # free when asked (nothing here binds them after)
    banner = next(line for line in proc.stdout.splitlines() if line.startswith("    vllm-serve"))
    assert f"(10.0.0.a:{serve_port}; weight-sync group port {group_port} on nx-b)" in banner


def test_named_ports_that_are_free_reach_both_the_server_and_the_trainer(tmp_path):
    with _held(0, 0) as (serve_port, group_port):
        pass  # two ports the kernel gave out, released: free now
    proc, server, training = _job(tmp_path, JUDGE_VLLM_SERVE_PORT=str(serve_port),
                                  JUDGE_VLLM_GROUP_PORT=str(group_port))
    assert proc.returncode == 0, proc.stderr
    assert _after(server, "--port") == _after(training, "--vllm-server-port") == str(serve_port)
    assert _after(training, "--vllm-group-port") == str(group_port)


@pytest.mark.parametrize(("variable", "said"), [
    # the server would have failed to bind, and the trainer would have talked to the holder
    ("JUDGE_VLLM_SERVE_PORT", "the vLLM server's port on nx-a: port {port} is taken (Address already in use); name "
                              "another in JUDGE_VLLM_SERVE_PORT (judge-train submit --vllm-server-port)"),
    ("JUDGE_VLLM_GROUP_PORT", "the trainer's weight-sync group port on nx-b: port {port} is taken (Address already "
                              "in use); name another in JUDGE_VLLM_GROUP_PORT (judge-train submit --vllm-group-port)"),
    # checked on nx-b beside the group port, and named: the group port's advice would send the user to the wrong one
    ("JUDGE_MASTER_PORT", "JUDGE_MASTER_PORT={port}: port {port} is taken (Address already in use) on nx-b, where "
                          "torchrun's rendezvous binds it; name another (judge-train submit --master-port)"),
])  # fmt: skip
def test_a_named_port_another_job_holds_stops_the_job_before_any_step(tmp_path, variable, said):
    with _held(0) as (port,):
        proc, server, training = _job(tmp_path, **{variable: str(port)})
    assert proc.returncode == 2
    assert proc.stderr == f"train.sbatch: {said.format(port=port)}, or leave it unset for one found free\n"
    assert server == training == []


def _probes(tmp_path: Path) -> list[str]:
    probes = tmp_path / "calls" / "probes"
    return probes.read_text().splitlines() if probes.exists() else []


def test_each_port_is_probed_on_the_host_that_opens_it(tmp_path):
    """The server's port on the server's node (nx-a); the rendezvous port and the weight-sync group port, which the
    trainer's main process opens (trl/generation/vllm_client.py ``init_communicator``: its own address is the
    group's master), on the first training host (nx-b). The batch shell runs on neither, so both are steps."""
    proc, _, training = _job(tmp_path, SLURM_CPUS_PER_TASK="16")
    assert proc.returncode == 0, proc.stderr
    assert _probes(tmp_path) == ["--nodes=1 --ntasks=1 --nodelist=nx-a --cpus-per-task=16 | 0",
                                 "--nodes=1 --ntasks=1 --nodelist=nx-b --cpus-per-task=16 | 0 0"]
    assert training  # the job went on to train


def test_a_named_server_port_where_python3_gives_no_answer_is_not_called_taken(tmp_path):
    """The probe checks a named port too: naming another (what the message advised) fails the same way."""
    proc, server, training = _job(tmp_path, JUDGE_VLLM_SERVE_PORT="18000", FAKE_PROBE_DEAD="nx-a")
    assert proc.returncode == 2
    assert proc.stderr == ("train.sbatch: the vLLM server's port on nx-a: python3 there, which finds a free port or "
                           "checks the one named, gave no answer; the job needs python3 on that host\n")
    assert server == training == []


def test_named_trainer_ports_where_python3_gives_no_answer_are_not_the_remedy(tmp_path):
    """Both named, the group port is still checked on nx-b: "set JUDGE_MASTER_PORT and JUDGE_VLLM_GROUP_PORT" (the
    message's advice) changed nothing."""
    proc, server, training = _job(tmp_path, JUDGE_MASTER_PORT="29611", JUDGE_VLLM_GROUP_PORT="51300",
                                  FAKE_PROBE_DEAD="nx-b")
    assert proc.returncode == 2
    assert proc.stderr == ("train.sbatch: the trainer's ports on nx-b: python3 there, which finds free ports or checks "
                           "the ones named, gave no answer; the job needs python3 on that host\n")
    assert server == training == []


def test_one_port_named_for_both_the_rendezvous_and_the_group_stops_the_job(tmp_path):
    """torchrun's store and trl's group store would both bind it on nx-b: the second fails once the model loaded."""
    proc, server, training = _job(tmp_path, JUDGE_MASTER_PORT="29611", JUDGE_VLLM_GROUP_PORT="29611")
    assert proc.returncode == 2
    assert proc.stderr == ("train.sbatch: JUDGE_MASTER_PORT and JUDGE_VLLM_GROUP_PORT are both 29611: the rendezvous "
                           "and the weight-sync group each bind their own port on nx-b; name two, or leave one unset "
                           "for one found free\n")
    assert server == training == [] and _probes(tmp_path) == []


def _rendezvous(proc: subprocess.CompletedProcess) -> str:
    """The rendezvous port the job's banner names (torchrun's --master_port is $MASTER_PORT, exported)."""
    line = next(line for line in proc.stdout.splitlines() if line.lstrip().startswith("rendezvous "))
    return line.rsplit(":", 1)[1]


def test_the_group_port_found_free_is_never_the_rendezvous_port_named(tmp_path):
    """JUDGE_MASTER_PORT named and the group port left to the probe on nx-b: the rendezvous port is free there until
    torchrun binds it, so a kernel could hand it out for the group, and torchrun's store and trl's group store would
    both bind it (the second failing once the model loaded). The probe holds it while it asks: the group gets
    another, never the named port, which the job would train with both stores on."""
    with _held(0) as (port,):
        pass  # a port the kernel gave out, released: free now
    proc, _, training = _job(tmp_path, kernel_picks=port, JUDGE_MASTER_PORT=str(port))
    assert proc.returncode == 0, proc.stderr
    assert _rendezvous(proc) == str(port)
    assert _after(training, "--vllm-group-port") not in ("", str(port))
    assert _free(int(_after(training, "--vllm-group-port")))


def test_a_named_group_port_is_never_given_out_for_the_rendezvous_first(tmp_path):
    """JUDGE_VLLM_GROUP_PORT named and the rendezvous port left to the probe: the named one is bound first, so the
    kernel cannot hand it out for the rendezvous: asked first, the free port could be the named one, and the job
    would stop calling the named port taken, though only the job itself held it."""
    with _held(0) as (port,):
        pass
    proc, _, training = _job(tmp_path, kernel_picks=port, JUDGE_VLLM_GROUP_PORT=str(port))
    assert proc.returncode == 0, proc.stderr
    assert _after(training, "--vllm-group-port") == str(port)
    assert _rendezvous(proc) != str(port)


@pytest.mark.parametrize("name", ["JUDGE_VLLM_SERVE_PORT", "JUDGE_VLLM_GROUP_PORT"])
@pytest.mark.parametrize("value", ["0", "65536", "80x"])
def test_a_named_port_that_is_no_port_stops_the_job(tmp_path, name, value):
    proc, server, training = _job(tmp_path, **{name: value})
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: {name}={value} is not a port: an integer from 1 to 65535 (unset: one "
                           "found free when the job starts)\n")
    assert server == training == []


@pytest.mark.parametrize("flag", ["--vllm-server-port", "--vllm_server_port=9000", "--vllm-group-port",
                                  "--vllm-server-host"])
def test_the_servers_place_after_the_script_is_refused(tmp_path, flag):
    """judge-train takes the last: the trainer would look for its server where this job's does not listen."""
    proc, server, training = _job(tmp_path, *([flag] if "=" in flag else [flag, "9000"]))
    assert proc.returncode == 2
    assert proc.stderr == (f"train.sbatch: {flag.split('=')[0]} after the script: the job starts the vLLM server and "
                           "tells the trainer where it listens; name its ports with JUDGE_VLLM_SERVE_PORT and "
                           "JUDGE_VLLM_GROUP_PORT\n")
    assert server == training == []


# --- judge-train submit -------------------------------------------------------------------------------------------


@pytest.fixture
def submit_folder(monkeypatch, tmp_path) -> Path:
    """What the shipped configs' relative paths name (tests/support/submit_folder.py); their hub ids in no cache."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    folder = shipped_configs_submit_folder(tmp_path / "submit")
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", *slurm_submit.TRAIN_SCRIPT_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    return folder


def _submit(capsys, config: Path, nodes: int, *argv: str) -> tuple[int, list[str], str]:
    """A dry run: the exit status, the rendered block's lines and stderr."""
    code = slurm_submit.main(["--config", str(config), "--nodes", str(nodes), "--gpus-per-node", "8", "--dry-run",
                              *argv])
    captured = capsys.readouterr()
    block = captured.out.split("# --- rendered by")[1].split("# --- end of rendered values ---")[0].splitlines() \
        if code == 0 else []
    return code, block, captured.err


def test_submit_leaves_the_ports_to_the_job_and_says_so(capsys, submit_folder):
    """The config's vllm_server_port (trl's 8000) was rendered as JUDGE_VLLM_SERVE_PORT: every job's server on 8000.
    Now both ports are unset (a value in the shell does not reach the job), and the note says they are found then."""
    code, block, err = _submit(capsys, SERVER_GRPO, 3)
    assert code == 0, err
    assert not [line for line in block if line.startswith(("export JUDGE_VLLM_SERVE_PORT", "export JUDGE_VLLM_GROUP"))]
    (unset,) = [line for line in block if line.startswith("unset ")]
    assert {"JUDGE_VLLM_SERVE_PORT", "JUDGE_VLLM_GROUP_PORT"} <= set(unset.split("#")[0].split())
    (note,) = [line for line in block if line.startswith("# vLLM server mode")]
    assert ("on the first node, port found free when the job starts, weight-sync group port found free when the job "
            "starts; training on the other 2 nodes") in note


def test_submit_renders_ports_given_with_its_flags(capsys, submit_folder):
    code, block, err = _submit(capsys, SERVER_GRPO, 3, "--vllm-server-port", "8123", "--vllm-group-port", "51300")
    assert code == 0, err
    assert "export JUDGE_VLLM_SERVE_PORT=8123" in block and "export JUDGE_VLLM_GROUP_PORT=51300" in block
    (note,) = [line for line in block if line.startswith("# vLLM server mode")]
    assert "on the first node, port 8123, weight-sync group port 51300; training" in note


@pytest.mark.parametrize(("argv", "said"), [
    (["--vllm-server-port", "0"], "--vllm-server-port must be a port from 1 to 65535, got 0"),
    (["--vllm-group-port", "70000"], "--vllm-group-port must be a port from 1 to 65535, got 70000"),
    (["--master-port", "29611", "--vllm-group-port", "29611"], "--master-port and --vllm-group-port are both "
     "29611: the rendezvous and the weight-sync group each bind their own port on the first training host; give two, "
     "or leave one out for one found free when the job starts"),
    (["--", "--vllm-server-port", "9000"], "--vllm-server-port after --: the job starts the vLLM server itself and "
     "tells the trainer where it listens; give its ports with judge-train submit's --vllm-server-port and "
     "--vllm-group-port"),
    (["--", "--vllm_group_port=9000", "--vllm-server-host=10.1.1.1"], "--vllm-server-host, --vllm_group_port after "
     "--: the job starts the vLLM server itself and tells the trainer where it listens; give its ports with "
     "judge-train submit's --vllm-server-port and --vllm-group-port"),
])  # fmt: skip
def test_submit_refuses_ports_no_job_could_use(capsys, submit_folder, argv, said):
    code, _, err = _submit(capsys, SERVER_GRPO, 3, *argv)
    assert (code, err) == (2, f"judge-train submit: {said}\n")


def test_submit_refuses_server_ports_for_a_job_without_a_server(capsys, submit_folder):
    code, _, err = _submit(capsys, COLOCATE_GRPO, 1, "--vllm-server-port", "8123")
    assert (code, err) == (2, "judge-train submit: --vllm-server-port: the job starts no vLLM server (the config is "
                              "not GRPO with use_vllm: true and vllm_mode: server); leave them out\n")


def test_submit_warns_that_a_configs_own_server_port_is_not_the_jobs(capsys, submit_folder):
    config = submit_folder / "grpo-8123.yaml"
    config.write_text(SERVER_GRPO.read_text() + "vllm_server_port: 8123\n")
    code, block, err = _submit(capsys, config, 3)
    assert code == 0
    assert not [line for line in block if line.startswith("export JUDGE_VLLM_SERVE_PORT")]
    assert err == ("judge-train submit: warning: vllm_server_port 8123 in the config is not used by the job: it starts "
                   "its own vLLM server and takes a port found free when it starts; give --vllm-server-port 8123 to "
                   "fix that one\n")


# --- the config: trl's names, passed to GRPOConfig --------------------------------------------------------------


def test_the_group_port_is_trls_setting_and_the_recipe_passes_it():
    """``vllm_group_port`` is the GRPOConfig field of that name (trl/trainer/grpo_config.py), which the job sets from
    the port it found free; the config refuses a port no socket can have."""
    import dataclasses

    from trl import GRPOConfig

    from train.config import ConfigError, load_config
    from train.grpo import grpo_arguments

    trl_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    config = load_config(SERVER_GRPO, {"vllm_group_port": 51300, "vllm_server_port": 8123})
    arguments = grpo_arguments(config)
    assert (arguments["vllm_group_port"], arguments["vllm_server_port"]) == (51300, 8123)
    assert set(arguments) <= trl_fields
    for port in (0, 65536):
        with pytest.raises(ConfigError, match=f"^vllm_group_port must be in \\(0, 65535\\], got {port}$"):
            load_config(SERVER_GRPO, {"vllm_group_port": port})


def test_submit_refuses_a_base_url_that_would_send_the_trainer_past_the_jobs_server(capsys, submit_folder):
    """trl reads vllm_server_base_url over vllm_server_host and vllm_server_port: the job's server would be started
    and the trainer would generate elsewhere."""
    code, _, err = _submit(capsys, SERVER_GRPO, 3, "--", "--trainer-args",
                           '{"vllm_server_timeout": 900, "vllm_server_base_url": "http://10.0.0.9:8000"}')
    assert (code, err) == (2, "judge-train submit: trainer_args.vllm_server_base_url 'http://10.0.0.9:8000': trl would "
                              "send the trainer there, not to the vLLM server the job starts (on the first node, at a "
                              "port found free); remove it\n")
