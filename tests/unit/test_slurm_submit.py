"""`judge-train submit` rendering and the sbatch scripts' own checks; no cluster needed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from train import slurm_submit
from train.slurm_submit import SubmitError, plan_batch

REPO = Path(__file__).resolve().parents[2]
SLURM_DIR = REPO / "slurm"


def _dry_run(capsys, *argv: str) -> str:
    assert slurm_submit.main(["--dry-run", *argv]) == 0
    return capsys.readouterr().out


def _header(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith("#SBATCH")]


@pytest.mark.parametrize(
    ("global_batch", "per_device", "nodes", "ranks", "accumulation"),
    [
        (256, 4, 8, 8, 1),  # the paper's 64 A100s: 4 x 1 x 64
        (256, 4, 1, 2, 32),  # 4 x 32 x 2
        (256, 1, 8, 8, 4),  # 1 x 4 x 64
        (256, 2, 4, 8, 4),  # 2 x 4 x 32
        (8, 2, 2, 1, 2),  # the tiny CPU run: 2 x 2 x 2
    ],
)
def test_accumulation_keeps_the_global_batch(global_batch, per_device, nodes, ranks, accumulation):
    """accumulation = global / (per-device x nodes x ranks per node), worked out by hand per row."""
    plan = plan_batch(global_batch, per_device, nodes, ranks)
    assert plan.gradient_accumulation == accumulation
    assert plan.per_device_batch_size * plan.gradient_accumulation * plan.world_size == global_batch


@pytest.mark.parametrize(("per_device", "nodes", "ranks"), [(4, 3, 8), (3, 8, 8), (4, 128, 1)])
def test_a_global_batch_that_does_not_divide_is_refused(per_device, nodes, ranks):
    """256 over 96, 192 or 512 rows per pass has no whole accumulation: an error, never a rounded batch."""
    with pytest.raises(SubmitError, match="does not divide"):
        plan_batch(256, per_device, nodes, ranks)


def test_dry_run_8x8_renders_header_and_accumulation(capsys, submit_config, tmp_path):
    """8 nodes x 8 GPUs with per-device batch 4: the header asks for 8 x 8 and the script says accumulation 1."""
    script = _dry_run(
        capsys, "--config", str(submit_config), "--nodes", "8", "--gpus-per-node", "8",
        "--partition", "gpu", "--account", "pollux", "--time", "48:00:00",
    )  # fmt: skip
    header = _header(script)
    assert "#SBATCH --nodes=8" in header
    assert "#SBATCH --gpus-per-node=8" in header
    assert "#SBATCH --ntasks-per-node=1" in header
    assert "#SBATCH --partition=gpu" in header
    assert "#SBATCH --account=pollux" in header
    assert "#SBATCH --time=48:00:00" in header
    assert "#SBATCH --requeue" in header
    assert "#SBATCH --signal=USR1@600" in header
    assert f"#SBATCH --output={tmp_path / 'run'}/slurm/%x-%j.out" in header
    assert "export JUDGE_GRAD_ACCUM=1" in script
    assert "export JUDGE_PROCS_PER_NODE=8" in script
    assert f"export JUDGE_CONFIG={submit_config}" in script
    assert f"export JUDGE_OUTPUT_DIR={tmp_path / 'run'}" in script
    assert "# global batch 256 = 4 per device x 1 accumulation x 64 ranks (8 nodes x 8)" in script
    # Every option appears once; the body after the rendered block is the template's, unchanged.
    keys = [line.split("=")[0] for line in header]
    assert len(keys) == len(set(keys))
    assert script.endswith((SLURM_DIR / "train.sbatch").read_text().split("set -euo pipefail\n", 1)[1])


def test_the_rendered_notes_name_the_deepspeed_json_and_its_zero_stage(capsys, submit_config, tmp_path, monkeypatch):
    """What the job shards by, and what decides whether its checkpoint resumes on other ranks: the config's JSON, or
    the one after --, which the rendered script showed nowhere."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2")
    assert "# deepspeed: none (plain DDP: every rank holds the whole model and optimizer)" in script.splitlines()
    monkeypatch.chdir(shipped_configs_submit_folder(tmp_path / "submit"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache: the hub base is left to the job
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    t_pro = str(REPO / "configs" / "train" / "t-pro" / "seq2seq.yaml")
    script = _dry_run(capsys, "--config", t_pro, "--nodes", "8", "--gpus-per-node", "8")
    assert "# deepspeed configs/deepspeed/zero3.json: ZeRO stage 3" in script.splitlines()
    script = _dry_run(capsys, "--config", t_pro, "--nodes", "2", "--gpus-per-node", "8", "--",
                      "--deepspeed", "configs/deepspeed/zero3_offload.json")
    assert ("# deepspeed configs/deepspeed/zero3_offload.json: ZeRO stage 3, offloaded: optimizer to cpu, weights to "
            "cpu") in script.splitlines()


def json_files_read(monkeypatch) -> list[str]:
    """The name of each file ``judge.plumbing.config_files.read_json_object`` reads from now on (the test's
    monkeypatch undoes it), in order: a list filled as they are read."""
    from judge.plumbing import config_files

    reads: list[str] = []
    read = config_files.read_json_object

    def counted(path, *args, **kwargs):
        reads.append(Path(path).name)
        return read(path, *args, **kwargs)

    monkeypatch.setattr(config_files, "read_json_object", counted)
    return reads


def test_submit_reads_the_deepspeed_json_once(capsys, tmp_path, monkeypatch):
    """The checks at load, the launch's (its accumulation and bf16) and the rendered note take one reading of the
    DeepSpeed JSON, the one the config was checked by: a note read again could describe a file edited meanwhile, which
    no check had seen."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    monkeypatch.chdir(shipped_configs_submit_folder(tmp_path / "submit"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    reads = json_files_read(monkeypatch)
    script = _dry_run(capsys, "--config", str(REPO / "configs" / "train" / "t-pro" / "seq2seq.yaml"), "--nodes", "8",
                      "--gpus-per-node", "8")
    assert "# deepspeed configs/deepspeed/zero3.json: ZeRO stage 3" in script.splitlines()
    assert reads.count("zero3.json") == 1


def test_dry_run_1x2_accumulates_32(capsys, submit_config):
    """1 node x 2 GPUs with per-device batch 4: accumulation 32 keeps 256."""
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2")
    assert "#SBATCH --nodes=1" in _header(script)
    assert "#SBATCH --gpus-per-node=2" in _header(script)
    assert "export JUDGE_GRAD_ACCUM=32" in script
    assert "# global batch 256 = 4 per device x 32 accumulation x 2 ranks (1 node x 2)" in script


def test_dry_run_cpu_ranks_drop_the_gpu_request_and_pass_extra_flags(capsys, submit_config):
    """--gpus-per-node 0 asks for no GPUs, one CPU rank per node; flags after `--` reach judge-train."""
    script = _dry_run(
        capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "0",
        "--sbatch-arg=--exclusive", "--signal-before-s", "30", "--", "--max_steps", "6",
    )  # fmt: skip
    header = _header(script)
    assert not any(line.startswith("#SBATCH --gpus-per-node") for line in header)
    assert "#SBATCH --exclusive" in header
    assert "#SBATCH --signal=USR1@30" in header
    assert "export JUDGE_PROCS_PER_NODE=1" in script
    assert "export JUDGE_GRAD_ACCUM=32" in script  # 256 / (4 x 2)
    assert "set -- --max_steps 6 \"$@\"" in script


def test_dry_run_script_is_valid_bash(capsys, submit_config, tmp_path):
    """The rendered script parses (bash -n)."""
    path = tmp_path / "rendered.sbatch"
    path.write_text(_dry_run(capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "4"))
    subprocess.run(["bash", "-n", str(path)], check=True)


def test_header_values_with_a_space_are_quoted_for_sbatch(capsys, submit_config, tmp_path):
    """sbatch splits an #SBATCH line at whitespace and refuses the leftover word ("Invalid directive found in batch
    script"), and an unpaired quote, but keeps a quoted value whole: a run folder or job name with a space or a quote
    is quoted with the other quote; a value with both quotes cannot be written and is refused before anything is
    submitted."""
    out = tmp_path / "my runs" / "x"
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "8", "--output-dir",
                      str(out), "--job-name", "my judge", "--sbatch-arg=--comment=two words")
    header = _header(script)
    assert '#SBATCH --job-name="my judge"' in header and '#SBATCH --comment="two words"' in header
    assert f'#SBATCH --output="{out}/slurm/%x-%j.out"' in header
    assert "#SBATCH --nodes=1" in header  # values without a space are written as they were
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "8", "--output-dir",
                      str(tmp_path / "o'brien"), '--sbatch-arg=--comment=a "b" c')
    assert f'#SBATCH --output="{tmp_path}/o\'brien/slurm/%x-%j.out"' in _header(script)
    assert "#SBATCH --comment='a \"b\" c'" in _header(script)
    assert slurm_submit.main(["--dry-run", "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "8",
                              "--sbatch-arg=--comment=it's \"b\""]) == 2
    assert "cannot be written in an #SBATCH line" in capsys.readouterr().err


def test_submit_refuses_an_indivisible_batch_and_a_bad_config(capsys, submit_config, tmp_path):
    """Errors come back as exit status 2 with the reason, before anything reaches sbatch."""
    assert slurm_submit.main(["--config", str(submit_config), "--nodes", "3", "--gpus-per-node", "8", "--dry-run"]) == 2
    assert "does not divide" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("recipe: seq2seq\nper_device_batch: 4\n")
    assert slurm_submit.main(["--config", str(bad), "--nodes", "1", "--gpus-per-node", "8", "--dry-run"]) == 2
    assert "unknown keys ['per_device_batch']" in capsys.readouterr().err


def test_shipped_configs_render_for_64_gpus(capsys, tmp_path, monkeypatch):
    """Every shipped 7B/32B training config renders for 8 x 8 with a whole accumulation: the five the repository
    ships (a missing one fails here, never a skip). Submitted from a folder that holds what their relative paths
    name (tests/support/submit_folder.py), as submit checks them; their hub bases are left to the job."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    configs = sorted(p for p in (REPO / "configs" / "train").glob("t-*/*.yaml"))
    assert [str(p.relative_to(REPO / "configs" / "train")) for p in configs] == [
        "t-lite/grpo.yaml", "t-lite/regression.yaml", "t-lite/seq2seq.yaml", "t-pro/regression.yaml",
        "t-pro/seq2seq.yaml"]  # fmt: skip
    monkeypatch.chdir(shipped_configs_submit_folder(tmp_path / "submit"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache, whatever this machine holds
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # online, so an uncached hub id is left to the job
        monkeypatch.delenv(name, raising=False)
    for config in configs:
        script = _dry_run(capsys, "--config", str(config), "--nodes", "8", "--gpus-per-node", "8")
        assert "#SBATCH --nodes=8" in script and "export JUDGE_GRAD_ACCUM=" in script


@pytest.mark.parametrize(
    ("script", "env", "message"),
    [
        ("train.sbatch", {}, "not inside a Slurm job"),
        ("train.sbatch", {"SLURM_JOB_ID": "7"}, "JUDGE_CONFIG is not set"),
        ("train.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_CONFIG": "/nonexistent.yaml"}, "is not a file"),
        ("train.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_CONFIG": "{config}"}, "JUDGE_OUTPUT_DIR is not set"),
        ("train.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_CONFIG": "{config}", "JUDGE_OUTPUT_DIR": "/nonexistent",
                          "JUDGE_OVERWRITE_OUTPUT_DIR": "yes"}, "JUDGE_OVERWRITE_OUTPUT_DIR=yes: use 1"),
        ("train.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_CONFIG": "{config}", "JUDGE_OUTPUT_DIR": "/nonexistent",
                          "JUDGE_VLLM_SERVE_MAX_LEN": "6k"}, "JUDGE_VLLM_SERVE_MAX_LEN=6k: a positive whole number"),
        ("eval.sbatch", {"SLURM_JOB_ID": "7"}, "not an array task"),
        ("eval.sbatch", {"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0"}, "JUDGE_EVAL_JUDGE is not set"),
        ("eval.sbatch", {"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "JUDGE_EVAL_JUDGE": "http://x/v1"},
         "JUDGE_EVAL_DATA is not set"),
        ("eval.sbatch", {"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "0", "JUDGE_EVAL_JUDGE": "http://x/v1",
                         "JUDGE_EVAL_DATA": "{config}"}, "JUDGE_EVAL_OUT is not set"),
        ("eval_merge.sbatch", {"SLURM_JOB_ID": "7"}, "JUDGE_EVAL_DATA is not set"),
        ("eval_merge.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_EVAL_DATA": "{config}"}, "JUDGE_EVAL_OUT is not set"),
        ("serve.sbatch", {}, "not inside a Slurm job"),
        ("serve.sbatch", {"SLURM_JOB_ID": "7"}, "JUDGE_MODEL is not set"),
        ("serve.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_MODEL": "/nonexistent"}, "is not a folder (read against"),
        # a hub id passes the model check (judge-serve resolves it through the HF cache): the next check fails
        ("serve.sbatch", {"SLURM_JOB_ID": "7", "JUDGE_MODEL": "ai-forever/pollux-judge-7b-r",
                          "JUDGE_SERVE_CONFIG": "/nonexistent.yaml"}, "JUDGE_SERVE_CONFIG=/nonexistent.yaml is not a file"),
    ],
)
def test_sbatch_scripts_name_the_missing_variable(script, env, message, submit_config):
    """Run outside a proper job, a script exits 2 naming what to set, before launching anything."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))}
    env = {k: v.format(config=submit_config) for k, v in env.items()}
    proc = subprocess.run(
        ["bash", str(SLURM_DIR / script)], env={**clean, **env}, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_submit_help(capsys):
    """`judge-train submit --help` exits 0 and shows an example command."""
    with pytest.raises(SystemExit) as exit_info:
        slurm_submit.main(["--help"])
    assert exit_info.value.code == 0
    assert "judge-train submit --config" in capsys.readouterr().out


def _fake_slurm_bin(bin_dir: Path) -> Path:
    """srun that records its arguments, scontrol that knows two unresolvable nodes at 10.0.0.5/6, and the console
    scripts the job checks for: enough to run train.sbatch's own logic without a cluster."""
    bin_dir.mkdir()
    scripts = {
        # a one-task step (the rendezvous port probe) runs its command, as on the node it names
        "srun": 'if [[ " $* " == *" --ntasks=1 "* && " $* " != *" --ntasks-per-node="* ]]; then\n'
                '    while [[ $1 == --* ]]; do shift; done; exec "$@"\nfi\n'
                'printf "%s\\0" "$@" >"$FAKE_SRUN_ARGS"\n',
        "scontrol": 'case "$1 $2" in\n  "show hostnames") printf "nx-node-1\\nnx-node-2\\n";;\n'
                    '  "show node") echo "NodeName=$3 Arch=x86_64 NodeAddr=10.0.0.5 NodeHostName=$3";;\nesac\n',
        "torchrun": "exit 0\n",
        "judge-train": "exit 0\n",
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_train_sbatch_resumes_from_the_newest_complete_checkpoint(tmp_path, submit_config):
    """A checkpoint cut off mid-save (no trainer_state.json) is set aside; --resume is passed for the complete one;
    rendezvous falls back to Slurm's NodeAddr when the first node's name does not resolve."""
    out = tmp_path / "run"
    (out / "checkpoint-4").mkdir(parents=True)
    (out / "checkpoint-4" / "trainer_state.json").write_text("{}")
    (out / "checkpoint-6").mkdir()  # cut off: model written, trainer_state.json not yet
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        "PATH": f"{_fake_slurm_bin(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"),
        "SLURM_JOB_ID": "1234", "SLURM_JOB_NODELIST": "nx-node-[1-2]", "SLURM_JOB_NUM_NODES": "2",
        "SLURM_RESTART_COUNT": "1", "SLURM_CPUS_PER_TASK": "16",
        "JUDGE_CONFIG": str(submit_config), "JUDGE_OUTPUT_DIR": str(out), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
        "JUDGE_PROCS_PER_NODE": "8",
    }  # fmt: skip
    proc = subprocess.run(["bash", str(SLURM_DIR / "train.sbatch"), "--max_steps", "9"], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "(restart 1)" in proc.stdout and "resume      yes" in proc.stdout
    assert re.search(r"^    rendezvous  10\.0\.0\.5:\d+$", proc.stdout, re.M)  # the port: test_slurm_scripts.py
    assert not (out / "checkpoint-6").exists() and len(list(out.glob("incomplete-checkpoint-6-job1234-*"))) == 1
    srun = (tmp_path / "srun_args").read_text().split("\0")[:-1]
    assert srun[:6] == ["--kill-on-bad-exit=1", "--label", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                        "--cpus-per-task=16"]
    assert srun[6:8] == ["bash", "-c"] and 'trap "" USR1' in srun[8] and "--no-python judge-train" in srun[8]
    assert srun[9] == "judge-train"  # $0 of the inner shell; judge-train's arguments follow
    # restart 1: a requeue keeps its folder, after every other argument (test_slurm_train_requeue_overwrite.py)
    assert srun[10:] == ["--config", str(submit_config), "--output-dir", str(out), "--resume", "--max_steps", "9",
                         "--no-overwrite-output-dir"]


# --- a newline in a value must not become a command line in the script ----------------------------------------

_INJECTED = "gpu\ntouch {marker} #"  # a bare name (bash runs in tmp_path); `#` comments out the line's rest


def _injection_cases(tmp_path: Path, submit_config: Path) -> list[tuple[str, list[str], str]]:
    """(setting named in the error, argv, marker file the injected line would create) for every rendered value."""
    cases = []
    for flag in ("--partition", "--account", "--job-name", "--time"):
        marker = tmp_path / f"pwned{flag}"
        cases.append((flag, ["--config", str(submit_config), flag, _INJECTED.format(marker=marker.name)], marker))
    marker = tmp_path / "pwned-model"
    model_config = tmp_path / "model.yaml"
    model_config.write_text("recipe: seq2seq\nper_device_train_batch_size: 4\n"
                            f"model_name_or_path: \"Qwen/Qwen2.5-0.5B\\ntouch {marker.name} #\"\n")
    cases.append((f"model_name_or_path in {model_config}", ["--config", str(model_config)], marker))
    marker = tmp_path / "pwned-file"
    odd_dir = tmp_path / f"cfg\ntouch {marker.name} #"
    odd_dir.mkdir()
    odd_config = odd_dir / "judge.yaml"
    odd_config.write_text(submit_config.read_text())
    cases.append(("--config (the file's path)", ["--config", str(odd_config)], marker))
    return cases


def test_a_newline_in_a_rendered_value_would_run_as_a_command(tmp_path, submit_config, monkeypatch):
    """Without the check, each injected value puts `touch MARKER` on its own line and bash runs it."""
    monkeypatch.setattr(slurm_submit, "_refuse_control", lambda values: None)
    # nor the refusal of whitespace in a partition or account name, which a newline is too
    monkeypatch.setattr(slurm_submit, "_refuse_blank_names", lambda args: None)
    # nor the reading of --time, which refuses the injected one as no time limit
    monkeypatch.setattr(slurm_submit, "slurm_time_s", lambda limit: 86400 if limit else None)
    # nor the base model's look-up, which finds no folder or hub id by the injected name
    monkeypatch.setattr("train.cli.check_training_data", lambda config, download: None)
    for setting, argv, marker in _injection_cases(tmp_path, submit_config):
        args = slurm_submit.build_parser().parse_args(["--nodes", "1", "--gpus-per-node", "0", *argv])
        script, _, _ = slurm_submit._render(args, [])
        path = tmp_path / "rendered.sbatch"
        path.write_text(script)
        # The script dies at its first check (not inside Slurm), after the header and the rendered notes have run.
        subprocess.run(["bash", str(path)], capture_output=True, env={"PATH": os.environ["PATH"]}, cwd=tmp_path)
        assert marker.exists(), setting


def test_a_control_character_in_a_rendered_value_is_refused_naming_the_setting(tmp_path, submit_config, capsys):
    """Each injected value is refused before any script is printed or written, and the error names its setting."""
    for setting, argv, marker in _injection_cases(tmp_path, submit_config):
        assert slurm_submit.main(["--dry-run", "--nodes", "1", "--gpus-per-node", "0", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert f"judge-train submit: {setting}: control character '\\n'" in captured.err
        assert not marker.exists()
    for bad in ("gpu\r", "gpu\x00", "gpu\x1b[2J", "gpu\u2028x"):
        assert slurm_submit.main(["--dry-run", "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "0",
                                  f"--sbatch-arg=--comment={bad}"]) == 2
        assert "--sbatch-arg (number 1): control character" in capsys.readouterr().err


def test_render_script_refuses_a_control_character_itself(tmp_path):
    """render_script, used directly, refuses too (a backstop naming the #SBATCH option or export)."""
    template = "#!/bin/bash\n#SBATCH --nodes=1\necho hi\n"
    with pytest.raises(SubmitError, match="#SBATCH --partition: control character"):
        slurm_submit.render_script(template, sbatch={"partition": "a\nb"}, exports={}, notes=[])
    with pytest.raises(SubmitError, match="export JUDGE_X: control character"):
        slurm_submit.render_script(template, sbatch={}, exports={"JUDGE_X": "a\tb"}, notes=[])


def _run_train_sbatch(script: Path, tmp_path: Path, out: Path, restart: str | None,
                      shell: dict[str, str] | None = None) -> list[str]:  # fmt: skip
    """Run a rendered train.sbatch with the fake Slurm (job 1234 on two nodes); return judge-train's arguments.
    ``shell``: variables of the submitting shell, which sbatch hands the job (its default --export=ALL)."""
    bin_dir = tmp_path / "bin"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
        # python3 is this test's interpreter, which imports train (the script asks train.output_folder)
        "PATH": os.pathsep.join([str(bin_dir if bin_dir.is_dir() else _fake_slurm_bin(bin_dir)),
                                 str(Path(sys.executable).parent), os.environ["PATH"]]),
        "FAKE_SRUN_ARGS": str(tmp_path / "srun_args"), "JUDGE_CACHE_DIR": str(tmp_path / "cache"),
        "SLURM_JOB_ID": "1234", "SLURM_JOB_NODELIST": "nx-node-[1-2]", "SLURM_CPUS_PER_TASK": "16",
        **({"SLURM_RESTART_COUNT": restart} if restart is not None else {}),
        **(shell or {}),
    }  # fmt: skip
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    srun = (tmp_path / "srun_args").read_text().split("\0")[:-1]
    return srun[srun.index("judge-train") + 1:]


def test_overwrite_applies_to_the_jobs_first_start_and_a_requeue_resumes_its_own_checkpoints(tmp_path, submit_config,
                                                                                             capsys):  # fmt: skip
    """`submit -- --overwrite-output-dir` over a folder with an earlier run: the first start starts over (no
    --resume beside the flag, which judge-train refuses); a requeue resumes the checkpoint the job saved itself,
    with the overwrite turned off after the arguments, and not an earlier run's checkpoint left there."""
    from train.cli import build_run_parser
    from train.config import config_from_args

    out = tmp_path / "run"
    script = tmp_path / "train.sbatch"
    script.write_text(_dry_run(capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "0",
                               "--output-dir", str(out), "--", "--overwrite-output-dir", "--max_steps", "9"))
    assert "export JUDGE_OVERWRITE_OUTPUT_DIR=1" in script.read_text()
    old = out / "checkpoint-50"
    old.mkdir(parents=True)
    (old / "trainer_state.json").write_text("{}")
    os.utime(old / "trainer_state.json", (1e9, 1e9))  # an earlier submission's run

    def job_config(args: list[str]):
        return config_from_args(build_run_parser().parse_args(args))

    first = _run_train_sbatch(script, tmp_path, out, restart=None)
    assert "--resume" not in first and "--overwrite-output-dir" in first
    assert (job_config(first).overwrite_output_dir, job_config(first).resume) == (True, False)
    # Requeued before the trainer deleted the earlier run: still a fresh start, never that run's checkpoint.
    again = _run_train_sbatch(script, tmp_path, out, restart="1")
    assert "--resume" not in again and job_config(again).overwrite_output_dir
    (out / "checkpoint-2").mkdir()
    (out / "checkpoint-2" / "trainer_state.json").write_text("{}")  # saved by this job, after its first start
    requeued = _run_train_sbatch(script, tmp_path, out, restart="1")
    assert "--resume" in requeued and requeued[-1] == "--no-overwrite-output-dir"
    assert (job_config(requeued).resume, job_config(requeued).overwrite_output_dir) == (True, False)


def test_without_overwrite_the_job_resumes_any_complete_checkpoint(tmp_path, submit_config, capsys):
    """The default: a resubmission into a folder with a checkpoint continues it (the flag is not rendered)."""
    out = tmp_path / "run"
    script = tmp_path / "train.sbatch"
    script.write_text(_dry_run(capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "0",
                               "--output-dir", str(out)))
    assert "export JUDGE_OVERWRITE_OUTPUT_DIR=0" in script.read_text().split("# --- end of rendered values ---")[0]
    (out / "checkpoint-50").mkdir(parents=True)
    (out / "checkpoint-50" / "trainer_state.json").write_text("{}")
    args = _run_train_sbatch(script, tmp_path, out, restart=None)
    assert "--resume" in args and "--overwrite-output-dir" not in args and "--no-overwrite-output-dir" not in args


@pytest.mark.parametrize("name", ["run[lr2e-5]", "run?1", "run*"])
def test_a_run_folder_whose_name_holds_glob_characters_is_resumed(tmp_path, submit_config, capsys, name):
    """The script looked for checkpoints with the folder's name as part of a glob pattern: `[lr2e-5]` matched no
    folder of that name, so a requeued job passed no --resume over its own checkpoint-50 (which submit, listing the
    folder, had planned to resume)."""
    out = tmp_path / name
    script = tmp_path / "train.sbatch"
    script.write_text(_dry_run(capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "0",
                               "--output-dir", str(out)))
    (out / "checkpoint-50").mkdir(parents=True)
    (out / "checkpoint-50" / "trainer_state.json").write_text("{}")
    assert "--resume" in _run_train_sbatch(script, tmp_path, out, restart="1")


def test_a_judge_variable_left_in_the_submitting_shell_does_not_reach_the_job(tmp_path, submit_config, capsys):
    """sbatch hands the job the submitting shell's environment. A JUDGE_OVERWRITE_OUTPUT_DIR=1 left there (the manual
    sbatch of docs/slurm.md sets it) made a plain resubmission over checkpoint-50 start over, deleting that run; the
    others changed the job as silently (a vLLM server for a seq2seq run, another rendezvous port, extra srun flags).
    Run here as the job gets them, not stripped: the rendered script sets or unsets each one itself."""
    out = tmp_path / "run"
    script = tmp_path / "train.sbatch"
    script.write_text(_dry_run(capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "0",
                               "--output-dir", str(out)))
    (out / "checkpoint-50").mkdir(parents=True)
    (out / "checkpoint-50" / "trainer_state.json").write_text("{}")
    os.utime(out / "checkpoint-50" / "trainer_state.json", (1e9, 1e9))  # older than any first-start marker
    shell = {"JUDGE_OVERWRITE_OUTPUT_DIR": "1", "JUDGE_VLLM_SERVE_MODEL": "Qwen/Qwen3-4B", "JUDGE_MASTER_PORT": "1",
             "JUDGE_SRUN_ARGS": "--container-image=leftover.sqsh", "JUDGE_SHUTDOWN_TIMEOUT_S": "5"}
    args = _run_train_sbatch(script, tmp_path, out, restart=None, shell=shell)
    assert args == ["--config", str(submit_config), "--output-dir", str(out), "--resume"]
    srun = (tmp_path / "srun_args").read_text().split("\0")[:-1]
    assert "--container-image=leftover.sqsh" not in srun and "--nodelist=nx-node-2" not in srun
    # What the rendered block leaves of the shell's values, the script's own defaults applying after it.
    block = script.read_text().split("# --- rendered by")[1].split("# --- end of rendered values ---")[0]
    env = subprocess.run(["bash", "-c", "eval \"$0\"; env", block], env={"PATH": os.environ["PATH"], **shell},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert sorted(line for line in env if line.split("=")[0] in shell) == ["JUDGE_OVERWRITE_OUTPUT_DIR=0"]


def test_each_judge_variable_of_the_submitting_shell_is_named_with_the_flag_that_sets_it(capsys, submit_config,
                                                                                          monkeypatch):
    """A container image in JUDGE_SRUN_ARGS or a venv in JUDGE_ENV_SCRIPT, exported for an older submit that let sbatch
    hand them on, would be unset by the kept script without a word: each is named on stderr with its flag. A value
    the script sets alike (the flag given too) is not."""
    monkeypatch.setenv("JUDGE_SRUN_ARGS", "--container-image=IMG")
    monkeypatch.setenv("JUDGE_ENV_SCRIPT", "/shared/env.sh")
    monkeypatch.setenv("JUDGE_MASTER_PORT", "29600")
    assert slurm_submit.main(["--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "0", "--dry-run",
                              "--master-port", "29600"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "does not reach the job" in line] == [
        "judge-train submit: warning: JUDGE_ENV_SCRIPT in this shell does not reach the job (the kept script unsets "
        "it); give it with --env-script",
        "judge-train submit: warning: JUDGE_SRUN_ARGS in this shell does not reach the job (the kept script unsets "
        "it); give it with --srun-args"]


def test_the_rendered_script_sets_every_variable_train_sbatch_reads(capsys, submit_config):
    """Each JUDGE_* name train.sbatch reads (all but JUDGE_NNODES, which it sets itself) is exported or unset in the
    rendered block, once: a name added to the script and not here would reach the job from the shell again."""
    template = (SLURM_DIR / "train.sbatch").read_text()
    read = set(re.findall(r"\$\{?(JUDGE_[A-Z_]+)", template)) - {"JUDGE_NNODES"}
    assert read == set(slurm_submit.TRAIN_SCRIPT_VARIABLES)
    block = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "0")
    block = block.split("# --- rendered by")[1].split("# --- end of rendered values ---")[0]
    exported = re.findall(r"^export (JUDGE_[A-Z_]+)=", block, re.M)
    (unset_line,) = [line for line in block.splitlines() if line.startswith("unset ")]
    unset = unset_line.split("#")[0].split()[1:]
    assert sorted(exported + unset) == sorted(read)


def test_master_port_and_shutdown_timeout_are_submits_flags(capsys, submit_config):
    """The two variables train.sbatch reads that had no flag (a value in the shell does not reach the job):
    rendered when given, checked at submit."""
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "0",
                      "--master-port", "29600", "--shutdown-timeout-s", "1200")
    assert "export JUDGE_MASTER_PORT=29600\n" in script and "export JUDGE_SHUTDOWN_TIMEOUT_S=1200\n" in script
    unset_line = next(line for line in script.splitlines() if line.startswith("unset "))
    assert "JUDGE_MASTER_PORT" not in unset_line and "JUDGE_SHUTDOWN_TIMEOUT_S" not in unset_line
    for flag, value, said in (("--master-port", "70000", "--master-port must be a port from 1 to 65535, got 70000"),
                              ("--shutdown-timeout-s", "0", "--shutdown-timeout-s must be a positive number of "
                                                            "seconds, got 0")):
        assert slurm_submit.main(["--dry-run", "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "0",
                                  flag, value]) == 2
        assert capsys.readouterr().err == f"judge-train submit: {said}\n"


def test_every_srun_passes_the_jobs_cpus_per_task():
    """Slurm 22.05's srun does not inherit --cpus-per-task from the batch allocation: every step of every script
    passes --cpus-per-task="$SLURM_CPUS_PER_TASK" itself, directly or through an array of arguments that holds it
    (or holds another such array)."""
    given = '--cpus-per-task="$SLURM_CPUS_PER_TASK"'
    steps = 0
    for script in sorted(SLURM_DIR.glob("*.sbatch")):
        lines = [line.strip() for line in script.read_text().splitlines()]
        assignments = [m.groups() for line in lines for m in re.finditer(r"(\w+)\+?=\((.*)\)", line)]
        carrying: set[str] = set()
        while True:  # arrays that hold the flag, or hold an array that does
            more = {name for name, value in assignments if given in value
                    or set(re.findall(r"\$\{(\w+)\[@\]", value)) & carrying}
            if more <= carrying:
                break
            carrying |= more
        for command in (line for line in lines if line.startswith("srun ")):
            steps += 1
            expanded = set(re.findall(r"\$\{(\w+)\[@\]", command))
            assert given in command or expanded & carrying, (script.name, command)
    assert steps >= 6  # train.sbatch (the trainer and GRPO's vLLM server), serve, eval, eval_merge, rank


@pytest.mark.parametrize(("option", "flag"), [
    ("--gpus-per-node=1", "use --gpus-per-node (the ranks per node follow it)"),
    ("--signal=B:USR1@60", "use --signal-before-s (the job needs SIGUSR1 at its training steps, not at the batch "
                           "shell)"),
    ("--nodes 4", "use --nodes"),
    ("--time=01:00:00", "use --time"),
    ("--output=/tmp/x.out", "use --output-dir (the job log goes to <output dir>/slurm/)"),
    ("--ntasks-per-node=8", "one task per node runs torchrun, which starts the ranks: use --gpus-per-node or "
                            "--cpu-ranks-per-node"),
    ("--no-requeue", "the job must be requeueable: it requeues itself after saving on a signal"),
    ("--open-mode=truncate", "a requeued job appends to its log (--open-mode=append)"),
    ("--partition=cpu", "use --partition"),
    # sbatch's getopt_long takes an unambiguous beginning of a long option's name for the whole name
    ("--sig=B:USR1@60", "use --signal-before-s (the job needs SIGUSR1 at its training steps, not at the batch "
                        "shell)"),
    ("--gpus-per-n=4", "use --gpus-per-node (the ranks per node follow it)"),
    ("--gpus-per-n 4", "use --gpus-per-node (the ranks per node follow it)"),
    ("--node=3", "use --nodes"),
    ("--ti 5", "use --time"),
    ("--job=x", "use --job-name"),
    ("--ntasks=16", "one task per node runs torchrun, which starts the ranks: use --gpus-per-node or "
                    "--cpu-ranks-per-node"),
    ("--no-req", "the job must be requeueable: it requeues itself after saving on a signal"),
    ("--open=truncate", "a requeued job appends to its log (--open-mode=append)"),
])  # fmt: skip
def test_sbatch_arg_may_not_override_what_submit_plans(capsys, submit_config, option, flag):
    """A later #SBATCH value wins in sbatch: --gpus-per-node=1 beside JUDGE_PROCS_PER_NODE=2 starts two ranks on one
    GPU, and --signal=B:USR1@60 signals only the batch shell, which has no USR1 trap and dies. sbatch reads an
    abbreviated name as the whole one (--sig is --signal). Refused, exit 2, naming the planned option and what to
    use instead; nothing is printed."""
    assert slurm_submit.main(["--dry-run", "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2",
                              f"--sbatch-arg={option}"]) == 2  # fmt: skip
    captured = capsys.readouterr()
    name = option[2:].split("=")[0].split()[0]
    planned = next(key for key in slurm_submit.PLANNED_SBATCH_OPTIONS if key.startswith(name))
    abbreviation = "" if planned == name else f" (--{name} abbreviates it, or clashes with it)"
    assert captured.out == ""
    assert captured.err == f"judge-train submit: --sbatch-arg={option}: judge-train submit sets #SBATCH " \
                           f"--{planned} itself{abbreviation}; {flag}\n"


@pytest.mark.parametrize("option", ["--exclusive", "--mem=0", "--gres=gpu:2", "--time-min=30", "--nodelist=n1"])
def test_sbatch_arg_passes_options_that_are_not_planned(capsys, submit_config, option):
    """Only the planned options and their abbreviations are refused: an option whose name merely begins with a
    planned one's (--time-min, --nodelist) is rendered."""
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2",
                      f"--sbatch-arg={option}")  # fmt: skip
    assert _header(script)[-1] == f"#SBATCH {option}"  # the option as given, value and all, after the planned ones
    assert sum(line.startswith(f"#SBATCH {option.split('=')[0]}") for line in _header(script)) == 1


def test_every_planned_option_is_in_the_rendered_header(capsys, submit_config):
    """The refused options are the header's own (plus --no-requeue, requeue's negation), so none is missed."""
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "2", "--gpus-per-node", "2",
                      "--partition", "gpu", "--account", "acc")  # fmt: skip
    header = {line[len("#SBATCH --"):].split("=")[0] for line in _header(script)}
    assert header == set(slurm_submit.PLANNED_SBATCH_OPTIONS) - {"no-requeue"}


@pytest.mark.parametrize(("time", "before", "limit", "accepted"), [
    ("00:05:00", 7200, "--time 00:05:00: 300 s", 299), ("5", 300, "--time 5: 300 s", 299),
    ("1-0", 86400, "--time 1-0: 86400 s", 65535), (None, 86400, "the template's --time=24:00:00: 86400 s", 600),
])  # fmt: skip
def test_signal_before_s_must_be_below_the_time_limit(capsys, submit_config, time, before, limit, accepted):
    """SIGUSR1 7200 s before a 5-minute limit would come as the job starts: every start would save and requeue."""
    argv = ["--dry-run", "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2",
            "--signal-before-s", str(before), *(["--time", time] if time else [])]  # fmt: skip
    assert slurm_submit.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"judge-train submit: --signal-before-s {before} is not below the time limit ({limit}): "
                            "SIGUSR1 would come as the job starts, and every start would save, requeue and stop "
                            "again; give fewer seconds than the limit, enough for a step and a full save\n")
    argv[argv.index("--signal-before-s") + 1] = str(accepted)  # below the limit (and sbatch's 65535): rendered
    assert f"#SBATCH --signal=USR1@{accepted}" in _header(_dry_run(capsys, *argv[1:]))


# --- what reaches sbatch: the rendered script, not the caller's SBATCH_* variables -------------------------------


def test_sbatch_gets_no_sbatch_variables_from_the_callers_environment(tmp_path, submit_config, capsys, monkeypatch):
    """sbatch reads SBATCH_TIMELIMIT, SBATCH_NO_REQUEUE... as options that override the script's #SBATCH lines
    (sbatch(1), INPUT ENVIRONMENT VARIABLES): a 5-minute limit from the shell would meet the 600 s signal submit
    checked against --time, and the job could not requeue. submit leaves them out and names them; the rest of the
    environment (SLURM_CONF, PATH) still reaches sbatch."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/bash\nenv >"$FAKE_SBATCH_ENV"\nprintf "%s\\0" "$@" >"$FAKE_SBATCH_ARGS"\n'
                                    "echo 43\n")
    (bin_dir / "sbatch").chmod(0o755)
    (bin_dir / "squeue").write_text("#!/bin/bash\n")  # no job of this user
    (bin_dir / "squeue").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SBATCH_ENV", str(tmp_path / "env"))
    monkeypatch.setenv("FAKE_SBATCH_ARGS", str(tmp_path / "args"))
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/test.conf")
    monkeypatch.setenv("SBATCH_TIMELIMIT", "00:05:00")
    monkeypatch.setenv("SBATCH_NO_REQUEUE", "1")
    out = tmp_path / "run"
    assert slurm_submit.main(["--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2", "--time",
                              "01:00:00", "--output-dir", str(out)]) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert captured.err == ("judge-train submit: warning: not passing SBATCH_NO_REQUEUE, SBATCH_TIMELIMIT to sbatch "
                            "(they would override the rendered #SBATCH lines); give such options with submit's flags "
                            "or --sbatch-arg\n")  # fmt: skip
    env = (tmp_path / "env").read_text().splitlines()
    assert not [line for line in env if line.startswith("SBATCH_")]
    assert "SLURM_CONF=/etc/slurm/test.conf" in env
    (script,) = (out / "slurm").glob("train-*.sbatch")
    assert (tmp_path / "args").read_text().split("\0")[:-1] == ["--parsable", str(script)]
    assert "#SBATCH --time=01:00:00" in _header(script.read_text()) and "submitted job 43" in captured.out


# --- --srun-args takes a value that starts with a dash, as its help shows ----------------------------------------

@pytest.mark.parametrize("value", [
    "--container-image=IMG",  # the help's example
    "--container-image=/shared/images/pollux-judge.sqsh --container-mounts=/shared:/shared",  # docs/slurm.md's
])  # fmt: skip
@pytest.mark.parametrize("spelling", ["--srun-args {}", "--srun-args={}", "--srun_args {}"])
def test_srun_args_take_a_value_that_starts_with_a_dash(capsys, submit_config, value, spelling):
    """argparse reads a lone word starting with `--` (and holding no space) as an option: `--srun-args
    "--container-image=IMG"`, the help's example, failed with "expected one argument". Every spelling renders
    JUDGE_SRUN_ARGS."""
    flag, sep, _ = spelling.partition("=") if "=" in spelling else spelling.partition(" ")
    words = [f"{flag}={value}"] if sep == "=" else [flag, value]
    script = _dry_run(capsys, "--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2", *words)
    assert f"export JUDGE_SRUN_ARGS={shlex.quote(value)}" in script


def test_srun_args_followed_by_a_submit_flag_is_still_a_missing_value(capsys, submit_config):
    """`--srun-args --dry-run` forgot its value: submit's own flag is not taken for srun's."""
    with pytest.raises(SystemExit) as exit_info:
        slurm_submit.main(["--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2", "--srun-args",
                           "--dry-run"])  # fmt: skip
    assert exit_info.value.code == 2
    assert "--srun-args: expected one argument" in capsys.readouterr().err


def test_the_hint_names_the_per_device_batches_that_fit():
    """256 over 3 x 8 = 24 ranks: 24 does not divide 256, so none fits. 96 over 1 x 8 ranks at per-device 5: 96 / 8 =
    12, whose divisors 1, 2, 3, 4, 6, 12 are the per-device batches that fit, all six named."""
    with pytest.raises(SubmitError, match=r"no per-device batch size fits this many ranks\)$"):
        plan_batch(256, 4, 3, 8)
    with pytest.raises(SubmitError, match=r"one of \[1, 2, 3, 4, 6, 12\]\)$"):
        plan_batch(96, 5, 1, 8)


def test_a_huge_batch_that_does_not_divide_is_refused_at_once(monkeypatch):
    """global_batch_size: 1000000007 (a prime) on 2 x 1 ranks with per-device 4 scanned every b up to 10^9 before
    refusing; it refuses at once. 2 does not divide it: no fit, and no divisor scanned. 10^12 on 1 rank has 169
    divisors (2^12 x 5^12: 13 x 13): the 12 smallest are named (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50), then the
    count. 2^61 - 1 (a prime past the scan) names the divisors the scan found, 1, and says there may be more. The
    scan is counted, not timed: each candidate range the divisor search walks is recorded, and none passes
    FITS_SCAN (10^6, 10^12's square root)."""
    import builtins

    scanned = []

    def counted_range(*bounds):
        scanned.append(bounds)
        return builtins.range(*bounds)

    monkeypatch.setattr(slurm_submit, "range", counted_range, raising=False)
    with pytest.raises(SubmitError, match=r"no per-device batch size fits this many ranks\)$"):
        plan_batch(1_000_000_007, 4, 2, 1)
    assert scanned == []
    with pytest.raises(SubmitError, match=r"one of \[1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, \.\.\. \(169 in all\)\]"):
        plan_batch(10**12, 3, 1, 1)
    assert scanned == [(1, 10**6 + 1)]
    with pytest.raises(SubmitError, match=r"one of \[1, \.\.\.\]\)$"):
        plan_batch(2**61 - 1, 2, 1, 1)
    assert scanned == [(1, 10**6 + 1), (1, 10**6 + 1)] and slurm_submit.FITS_SCAN == 10**6


def test_the_plan_counts_one_node_and_one_rank_in_the_singular():
    """The plan's text is read by people: "1 nodes x 8" and "1 ranks" read as typos; 2 and more stay plural."""
    assert plan_batch(256, 4, 1, 8).describe() == "256 = 4 per device x 8 accumulation x 8 ranks (1 node x 8)"
    assert plan_batch(16, 4, 1, 1).describe() == "16 = 4 per device x 4 accumulation x 1 rank (1 node x 1)"
    assert plan_batch(256, 4, 8, 8).describe() == "256 = 4 per device x 1 accumulation x 64 ranks (8 nodes x 8)"
    with pytest.raises(SubmitError, match=r"per-device batch 3 x 1 node x 1 rank = 3 rows per pass"):
        plan_batch(16, 3, 1, 1)


def test_the_dry_run_docs_slurm_md_prints_is_the_one_submit_renders(capsys, tmp_path, monkeypatch):
    """docs/slurm.md's "What the dry run prints" block is the 7B command's dry run: rendered here with the same flags
    (its /shared paths under tmp_path, the checkout at /work/pollux-judge), up to the end of the rendered values, it
    is the block line for line; a variable added to the rendered values shows here until the page is regenerated."""
    from judge.splits import STANDARD, splits_of
    from train.build_data import load_training_records

    text = (REPO / "docs" / "slurm.md").read_text(encoding="utf-8")
    section = text[text.index("### What the dry run prints"):]
    block = section[section.index("```text\n") + len("```text\n"):]
    documented = block[:block.index("\n... the rest of slurm/train.sbatch")].splitlines()

    shared = tmp_path / "shared"
    sample = REPO / "judge" / "data" / "sample.jsonl"
    lines = sample.read_text(encoding="utf-8").splitlines()
    splits = splits_of(load_training_records(str(sample)))
    assert len(splits) == len(lines)
    (shared / "data").mkdir(parents=True)
    (shared / "pollux-judge").mkdir()
    standard = "".join(f"{line}\n" for line, split in zip(lines, splits) if split == STANDARD)
    for name in ("train.jsonl", "val.jsonl"):  # the config refuses Zero-Shot rows: the sample's others
        (shared / "data" / name).write_text(standard, encoding="utf-8")
    (shared / "pollux-judge" / "env.sh").write_text("", encoding="utf-8")
    for name in [name for name in os.environ if name.startswith("JUDGE_")] + ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"]:
        monkeypatch.delenv(name, raising=False)  # a shell's value would be named on stderr, or refuse the hub base
    monkeypatch.chdir(REPO)
    script = _dry_run(
        capsys, "--config", "configs/train/t-lite/seq2seq.yaml", "--nodes", "8", "--gpus-per-node", "8",
        "--partition", "gpu", "--account", "my-project", "--time", "24:00:00",
        "--output-dir", str(shared / "runs" / "t-lite-seq2seq"), "--cache-dir", str(shared / "cache" / "pollux-judge"),
        "--env-script", str(shared / "pollux-judge" / "env.sh"),
        "--", "--data", str(shared / "data" / "train.jsonl"), "--eval-data", str(shared / "data" / "val.jsonl"),
    )  # fmt: skip
    rendered = script[:script.index("# --- end of rendered values ---\n") + len("# --- end of rendered values ---")]
    rendered = rendered.replace(str(tmp_path), "").replace(str(REPO), "/work/pollux-judge")
    assert rendered.splitlines() == documented
