"""`judge-train submit` refuses, at submit time and in one line, what would otherwise fail inside the job or as a
traceback: a job log Slurm cannot write, a missing env script, a run folder it cannot write, no sbatch, and the
data or base model that judge-train run in the job would refuse. The log's
path as sbatch reads it (``%`` patterns) is also checked on a real Slurm: tests/integration/slurm/
test_slurm_submit_log_path.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from train import slurm_submit


def _submit(submit_config: Path, *argv: str) -> int:
    return slurm_submit.main(["--config", str(submit_config), "--nodes", "1", "--gpus-per-node", "2", *argv])


@pytest.mark.parametrize(("flag", "value", "named"), [
    # a backslash turns off Slurm's filename patterns and is dropped: the log's folder does not exist
    ("--output-dir", "runs\\a", "--output-dir '{tmp}/runs\\a'"),
    # %x is the job name: a / in it names a folder below slurm/ that no one made
    ("--job-name", "exp/1", "--job-name 'exp/1'"),
])  # fmt: skip
def test_a_job_log_slurm_cannot_write_is_refused_before_submitting(tmp_path, submit_config, capsys, monkeypatch, flag,
                                                                    value, named):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert _submit(submit_config, flag, value, "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"judge-train submit: {named.format(tmp=tmp_path)}: Slurm cannot write the job log")


def test_the_run_folders_percent_signs_are_escaped_in_the_log_pattern(tmp_path, submit_config, capsys):
    """`%x` in a folder's name would be read as the job name (the job then fails at launch, no log); `%%` is a %."""
    out = tmp_path / "run 100%x"
    assert _submit(submit_config, "--output-dir", str(out), "--dry-run") == 0
    header = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#SBATCH --output=")]
    assert header == [f'#SBATCH --output="{tmp_path}/run 100%%x/slurm/%x-%j.out"']


def test_a_missing_env_script_is_refused_at_submit(tmp_path, submit_config, capsys):
    assert _submit(submit_config, "--env-script", str(tmp_path / "env.sh"), "--dry-run") == 2
    assert capsys.readouterr().err == (f"judge-train submit: --env-script {tmp_path / 'env.sh'} is not a file (the "
                                       "job would stop at its start)\n")  # fmt: skip


def test_a_run_folder_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path, submit_config, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "slurm").write_text("")  # a file where the folder of the kept job script should be
    assert _submit(submit_config, "--output-dir", str(run)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judge-train submit: cannot keep the job script in {run / 'slurm'}: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--output-dir", "--cache-dir", "--wandb-dir"])
@pytest.mark.parametrize("below", [False, True])
def test_a_file_where_a_jobs_folder_goes_is_refused_by_the_dry_run_too(tmp_path, submit_config, capsys, flag, below):
    """The dry run passed it, and a submitted job failed at its start after the queue's wait (the cache's only when
    HF or Triton first wrote there)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    folder = blocker / "sub" if below else blocker
    assert _submit(submit_config, flag, str(folder), "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"judge-train submit: {flag} {folder}: {blocker} is a file, not a folder, so the job "
                            "could not write there; give a folder\n")


def test_no_sbatch_on_path_is_one_line_and_keeps_the_script(tmp_path, submit_config, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    out = tmp_path / "run"
    assert _submit(submit_config, "--output-dir", str(out)) == 127
    (script,) = (out / "slurm").glob("train-*.sbatch")
    assert capsys.readouterr().err == (f"judge-train submit: no sbatch on PATH; run on a Slurm login node, or "
                                       f"--dry-run ({script} kept)\n")  # fmt: skip
    assert os.access(script, os.R_OK)


@pytest.mark.parametrize("spelling", [["--output_dir", "{b}"], ["--output-dir={b}"]])
def test_a_second_run_folder_after_the_double_dash_is_refused(tmp_path, submit_config, capsys, spelling):
    """judge-train in the job took the folder after -- (the later flag) while train.sbatch locked, looked for
    checkpoints and logged in --output-dir's: a requeued job found nothing to resume there."""
    judge_args = [word.format(b=tmp_path / "b") for word in spelling]
    assert _submit(submit_config, "--output-dir", str(tmp_path / "a"), "--dry-run", "--", *judge_args) == 2
    assert capsys.readouterr().err == ("judge-train submit: --output-dir and an --output-dir after --: give the run "
                                       "folder once, with --output-dir\n")  # fmt: skip
    # alone after --, it is the run folder for both
    assert _submit(submit_config, "--dry-run", "--", *judge_args) == 0
    assert f"export JUDGE_OUTPUT_DIR={tmp_path / 'b'}\n" in capsys.readouterr().out


@pytest.mark.parametrize(("option", "rest"), [
    ("--exclusive --signal=B:USR1@60", "--signal=B:USR1@60"),
    ("--exclusive  --time=01:00:00", "--time=01:00:00"),
    ("--mem 0", "0"),
])  # fmt: skip
def test_an_sbatch_arg_of_more_than_one_option_is_refused(submit_config, capsys, option, rest):
    """sbatch reads every word of an #SBATCH line as an argument, in order, and only the option's first word was
    checked: `#SBATCH --exclusive --signal=B:USR1@60` overrode the planned --signal=USR1@600 (SIGUSR1 to the batch
    shell alone, which dies of it). One option per --sbatch-arg, its value after =."""
    assert _submit(submit_config, f"--sbatch-arg={option}", "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    name = option[2:].split()[0]
    assert captured.err == (f"judge-train submit: --sbatch-arg={option}: one option per --sbatch-arg (sbatch would "
                            f"read {rest} as more arguments of its own, unchecked); give a value after =, e.g. "
                            f"--sbatch-arg=--{name}=VALUE, and each further option in its own --sbatch-arg\n")


@pytest.mark.parametrize("option", ['--si"gnal"=B:USR1@60', "--sig'nal'=B:USR1@60", "--sig\\nal=B:USR1@60"])
def test_an_sbatch_arg_name_sbatch_would_read_as_another_is_refused(submit_config, capsys, option):
    """sbatch drops a directive's quotes and backslashes: --si"gnal" is --signal to it, not a name the planned
    options' check knows."""
    assert _submit(submit_config, f"--sbatch-arg={option}", "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"judge-train submit: --sbatch-arg={option}: an option's name is letters, digits "
                                   "and hyphens")


def test_a_value_with_spaces_is_still_one_option(submit_config, capsys):
    """Only the name part is one word: a value's spaces are quoted in the header, which sbatch keeps whole."""
    assert _submit(submit_config, "--sbatch-arg=--comment=a --signal=B:USR1@60", "--dry-run") == 0
    header = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#SBATCH --")]
    assert '#SBATCH --comment="a --signal=B:USR1@60"' in header
    assert "#SBATCH --signal=USR1@600" in header


def _refused(submit_config: Path, capsys, *argv: str) -> str:
    """What a dry run of ``argv`` says on stderr, having refused it (exit 2) and rendered nothing."""
    assert _submit(submit_config, *argv, "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize("option", ["--export=NONE", "--export=JUDGE_CONFIG,PATH", "--export", "--expo=NONE"])
def test_an_sbatch_export_is_refused(submit_config, capsys, option):
    """--export=NONE (or a list of names) starts the job without the submitting shell's environment it reads (PATH
    to torchrun and judge-train), and its steps took the same setting; refused, naming --env-script instead."""
    assert _refused(submit_config, capsys, f"--sbatch-arg={option}") == (
        f"judge-train submit: --sbatch-arg={option}: the job runs in the environment of the shell that submits it "
        "and hands it to its steps; sbatch's --export would leave it out (PATH to torchrun and judge-train, HOME): "
        "activate another environment with --env-script instead\n")


def test_an_sbatch_export_file_is_not_an_export(submit_config, capsys):
    """--export-file adds variables to the environment the job gets; it is another option, rendered as given."""
    assert _submit(submit_config, "--sbatch-arg=--export-file=/shared/vars", "--dry-run") == 0
    assert "#SBATCH --export-file=/shared/vars" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(("srun_args", "held"), [
    ("--container-image='/shared/my images/j.sqsh'", "'"),
    ('--container-image="/shared/j.sqsh"', '"'),
    ("--container-image=/shared/my\\ images/j.sqsh", "\\"),
    ("--container-mounts=$HOME:/home", "$"),
])  # fmt: skip
def test_srun_args_that_need_quoting_are_refused(submit_config, capsys, srun_args, held):
    """The script splits JUDGE_SRUN_ARGS at whitespace into srun's words and reads no quotes: a quoted image path
    with a space reached srun as two words with the quotes in them, failing after the queue's wait."""
    assert _refused(submit_config, capsys, "--srun-args", srun_args) == (
        f"judge-train submit: --srun-args {srun_args!r}: holds {held}, but the job splits the value at whitespace "
        "into srun's words with no quoting, so it would reach srun as written; give whitespace-separated words "
        "without quotes, backslashes or $ (paths without spaces)\n")


def test_srun_args_of_plain_words_render(submit_config, capsys):
    words = "--container-image=/shared/j.sqsh --container-mounts=/shared:/shared"
    assert _submit(submit_config, "--srun-args", words, "--dry-run") == 0
    assert f"export JUDGE_SRUN_ARGS='{words}'" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("spelling", [["--config", "{c}"], ["--config={c}"]])
def test_a_config_after_the_double_dash_is_refused_before_the_queue(tmp_path, submit_config, capsys, spelling):
    """slurm/train.sbatch refuses a --config after the script (judge-train would take the later one while the
    banner, the lock and the checks read JUDGE_CONFIG): submit says so at once, not after the job's queue wait."""
    judge_args = [word.format(c=submit_config) for word in spelling]
    assert _submit(submit_config, "--dry-run", "--", *judge_args) == 2
    assert capsys.readouterr().err == (f"judge-train submit: after --: {judge_args[0]} is submit's own --config (the "
                                       "job reads that one); give it once, before --\n")


def _zero_run(tmp_path, ranks: int) -> tuple[Path, Path]:
    """A config training under DeepSpeed ZeRO-3 into tmp_path/run, whose checkpoint-4 a job of ``ranks`` ranks saved:
    global_step4/ with one optimizer file per rank, and scheduler.pt. Returns the config file and the checkpoint."""
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text('{"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}}')
    config = tmp_path / "judge.yaml"
    config.write_text(f"recipe: seq2seq\nper_device_train_batch_size: 4\nzero_shot: drop\n"
                      f"output_dir: {tmp_path / 'run'}\ndeepspeed: {deepspeed}\n")
    checkpoint = tmp_path / "run" / "checkpoint-4"
    (checkpoint / "global_step4").mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text('{"global_step": 4}')
    (checkpoint / "latest").write_text("global_step4")
    (checkpoint / "scheduler.pt").write_bytes(b"")  # transformers saves the schedule beside global_step4
    for rank in range(ranks):
        (checkpoint / "global_step4" / f"bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt").write_bytes(b"")
    return config, checkpoint


def test_a_resubmission_on_another_number_of_ranks_than_its_zero_checkpoint_is_refused_before_the_queue(
        tmp_path, capsys):
    """slurm/train.sbatch resumes the folder's checkpoint: a ZeRO one saved by 4 ranks (2 nodes x 2 GPUs) cannot load
    on 1 node x 2 GPUs, and every rank of the job would refuse it after the queue's wait. Refused here, exit 2, in one
    line naming both numbers; the same 4 ranks, or starting over, is submitted."""
    config, checkpoint = _zero_run(tmp_path, ranks=4)
    assert slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"judge-train submit: --resume: {checkpoint} is a DeepSpeed ZeRO checkpoint written by 4 ranks (4 zero_pp_rank "
        "optimizer files in global_step4) and this submission trains on 2 ranks (1 node x 2): each rank saved its "
        "own share of the optimizer state, which DeepSpeed cannot load on another number of ranks; resume on 4 ranks "
        "(the same nodes x GPUs), or start over with --overwrite-output-dir (under judge-train submit, "
        "`-- --overwrite-output-dir`)\n")
    assert slurm_submit.main(["--config", str(config), "--nodes", "2", "--gpus-per-node", "2", "--dry-run"]) == 0
    assert "JUDGE_GRAD_ACCUM=16" in capsys.readouterr().out  # 256 rows / (4 per device x 4 ranks)
    assert slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run", "--",
                              "--overwrite-output-dir"]) == 0


def test_a_finished_zero_run_resubmitted_on_another_number_of_ranks_is_submitted(tmp_path, capsys):
    """A finished run's job ends at once, "already finished", whatever its rank count (slurm/train.sbatch,
    ``train.output_folder.finished_export``): its checkpoint reached the planned step 4 and export/run.json records the
    export of step 4, so nothing is left to load on 2 ranks and the submission is not refused. Submit says so on
    stderr, with what the job will warn of (no run.json to compare the config with); stdout is the script alone."""
    config, checkpoint = _zero_run(tmp_path, ranks=4)
    (checkpoint / "trainer_state.json").write_text('{"global_step": 4, "max_steps": 4}')
    (tmp_path / "run" / "export").mkdir()
    (tmp_path / "run" / "export" / "run.json").write_text(
        '{"result": {"export_dir": "%s", "global_step": 4}}' % (tmp_path / "run" / "export"))
    argv = ["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run"]
    assert slurm_submit.main(argv) == 0
    captured = capsys.readouterr()
    run = tmp_path / "run"
    assert captured.err == (
        f"judge-train submit: warning: --resume: {run}: it has no run.json, so the resumed config cannot be compared "
        "with the run it continues; check by hand that the learning rate, schedule, batch and data are the earlier "
        "run's\n"
        f"judge-train submit: warning: {run} is already finished: checkpoint-4 is the last step its trainer planned "
        "and export/ holds the judge exported from it; nothing to train or export (--overwrite-output-dir to train it "
        "again, or another --output-dir); the job would exit 0 at once\n")
    # the same script as for an empty folder: nothing the check said went to stdout
    (tmp_path / "run").rename(tmp_path / "moved")
    assert slurm_submit.main(argv) == 0
    assert capsys.readouterr().out == captured.out


# --- the data and the base model: what judge-train run in the job would refuse, refused before the queue ----------


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(f"{body}per_device_train_batch_size: 4\noutput_dir: {tmp_path / 'run'}\n", encoding="utf-8")
    return path


def _folder_with_config(path: Path, config: dict) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def _refused_data_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """case -> (the config's lines, the message judge-train run gives for it, as submit must say it)."""
    from tests.support.sample_training_lines import kept_lines, sample_lines, write_lines

    kept = {line["id"] for line in kept_lines()}
    zero_shot = write_lines(tmp_path / "zero-shot.jsonl", [line for line in sample_lines() if line["id"] not in kept])
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    qwen3 = _folder_with_config(tmp_path / "qwen3", {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"})
    released = _folder_with_config(tmp_path / "7b-r", {"architectures": ["Qwen2WithRegressionHead"],
                                                       "model_type": "qwen2"})
    missing = tmp_path / "missing.jsonl"
    return {
        "missing data": (f"recipe: seq2seq\ndata: {missing}\n", f"data: {missing}: no such file or folder"),
        "missing eval_data": (f"recipe: seq2seq\ndata: sample\nzero_shot: drop\neval_data: {missing}\n",
                              f"eval_data: {missing}: no such file or folder"),
        "empty data": (f"recipe: seq2seq\ndata: {tmp_path / 'empty.jsonl'}\n",
                       f"data: {tmp_path / 'empty.jsonl'} holds no records"),
        # every record Zero-Shot, dropped: no row left
        "every row dropped": (f"recipe: seq2seq\ndata: {zero_shot}\nzero_shot: drop\n",
                              f"data: no training rows left in {zero_shot}: "),
        # zero_shot: refuse, the default, over the sample's Zero-Shot records
        "held-out rows": ("recipe: seq2seq\ndata: sample\n", "items belong to the Zero-Shot test"),
        "a Qwen3 base for the regression recipe": (
            f"recipe: regression\nmodel_name_or_path: {qwen3}\ndata: sample\nzero_shot: drop\n",
            f"model_name_or_path: the regression recipe trains Qwen2 bases (T-lite, T-pro, Qwen2.5); {qwen3} is qwen3"),
        "a released -r judge as the regression base": (
            f"recipe: regression\nmodel_name_or_path: {released}\ndata: sample\nzero_shot: drop\n",
            f"model_name_or_path: {released} is a released -r judge (Qwen2WithRegressionHead): "),
    }


@pytest.mark.parametrize("case", ["missing data", "missing eval_data", "empty data", "every row dropped",
                                  "held-out rows", "a Qwen3 base for the regression recipe",
                                  "a released -r judge as the regression base"])
def test_data_the_job_would_refuse_is_refused_at_submit(tmp_path, capsys, case):
    """Each of these passed submit (exit 0, a script rendered) and failed in the job, after the queue's wait, with
    judge-train run's exit 2. Now submit says judge-train run's message in one line, exit 2, and writes nothing."""
    body, message = _refused_data_cases(tmp_path)[case]
    assert slurm_submit.main(["--config", str(_config(tmp_path, body)), "--nodes", "1", "--gpus-per-node", "2",
                              "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("judge-train submit: ") and message in captured.err, captured.err
    assert captured.err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_inputs_an_earlier_job_will_write_are_left_to_the_job_when_said(tmp_path, capsys):
    """GRPO submitted with its trace SFT (--dependency=afterok): its data and base do not exist yet. With
    --inputs-from-earlier-job the script is rendered (exit 0) and a warning says the job checks them; without, the
    missing data is refused (the test above)."""
    missing = tmp_path / "later.jsonl"
    config = _config(tmp_path, f"recipe: seq2seq\ndata: {missing}\n")
    assert slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run",
                              "--inputs-from-earlier-job"]) == 0
    captured = capsys.readouterr()
    assert "#SBATCH --nodes=1" in captured.out
    assert captured.err == ("judge-train submit: warning: --inputs-from-earlier-job: the run folder "
                            f"{tmp_path / 'run'} is not checked now (the job this one waits for may change it); the "
                            "job checks it when it starts\n"
                            "judge-train submit: warning: --inputs-from-earlier-job: the data and the base model are "
                            "not checked now; the job checks them when it starts\n")


EARLIER_JOB_HINT = " (written by a job this one waits for? then add --inputs-from-earlier-job)\n"


def test_a_missing_data_file_or_base_model_names_the_flag_for_an_earlier_jobs_output(tmp_path, capsys):
    """The documented GRPO submission trains from the integer SFT job's export, which does not exist until that job
    ends: the refusal names --inputs-from-earlier-job. A file that is there but refused (no records) does not."""
    missing = tmp_path / "later.jsonl"
    base = tmp_path / "sft" / "export"

    def submit(body: str) -> str:
        assert slurm_submit.main(["--config", str(_config(tmp_path, body)), "--nodes", "1", "--gpus-per-node", "2",
                                  "--dry-run"]) == 2
        return capsys.readouterr().err

    assert submit(f"recipe: seq2seq\ndata: {missing}\n") == (
        f"judge-train submit: data: {missing}: no such file or folder (your own file? pass it after --: "
        f"`-- --data FILE`; or {EARLIER_JOB_HINT.removeprefix(' (')}")
    assert submit(f"recipe: seq2seq\ndata: sample\nzero_shot: drop\neval_data: {missing}\n") == (
        f"judge-train submit: eval_data: {missing}: no such file or folder (your own file? pass it after --: "
        f"`-- --eval-data FILE`; or {EARLIER_JOB_HINT.removeprefix(' (')}")
    err = submit(f"recipe: grpo\nmodel_name_or_path: {base}\ndata: sample\nzero_shot: drop\n"
                 "no_unique_mode: nearest\nnum_generations: 4\nglobal_batch_size: 8\n")
    assert err.startswith(f"judge-train submit: model_name_or_path: {base}: no such folder") and err.endswith(
        EARLIER_JOB_HINT) and err.count("\n") == 1, err
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert submit(f"recipe: seq2seq\ndata: {tmp_path / 'empty.jsonl'}\n") == (
        f"judge-train submit: data: {tmp_path / 'empty.jsonl'} holds no records\n")


def test_a_grpo_base_export_of_another_verdict_format_is_refused_at_submit(tmp_path, capsys):
    """An integer SFT export as the base of a tagged GRPO run: judge-train run refuses it from the export's manifest
    before its run folder (train.grpo.check_base_checkpoint); submit passed it (exit 0) and the job was refused after
    the queue's wait. Submit now says judge-train run's message in one line, exit 2, and writes nothing; the same
    export under an integer config is submitted."""
    from judge.checkpoints import EXPORT_MANIFEST
    from judge.prompts import PROMPT_VERSION

    base = _folder_with_config(tmp_path / "sft" / "export", {"architectures": ["Qwen3ForCausalLM"],
                                                             "model_type": "qwen3"})
    (base / "tokenizer.json").write_text("{}", encoding="utf-8")  # model_folder_gaps asks only that they are there
    (base / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}), encoding="utf-8")
    (base / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq", "prompt_version": PROMPT_VERSION,
                                                    "verdict_format": "integer"}), encoding="utf-8")
    body = (f"recipe: grpo\nmodel_name_or_path: {base}\ndata: sample\nzero_shot: drop\nno_unique_mode: nearest\n"
            "num_generations: 4\nglobal_batch_size: 8\n")

    def submit(verdict_format: str) -> int:
        config = _config(tmp_path, f"{body}verdict_format: {verdict_format}\n")
        return slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run"])

    assert submit("tagged") == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"judge-train submit: model_name_or_path {base} is an integer judge") and (
        "but verdict_format is tagged: GRPO would prompt it as a tagged judge") in captured.err, captured.err
    assert not (tmp_path / "run").exists()
    assert submit("integer") == 0 and "#SBATCH --nodes=1" in capsys.readouterr().out


def test_an_uncached_hub_id_refused_offline_names_no_earlier_job(tmp_path, capsys, monkeypatch):
    """HF_HUB_OFFLINE in the submitting shell reaches the job (sbatch passes the environment on): an uncached hub id
    is refused, and no earlier job would make it downloadable, so the refusal names no --inputs-from-earlier-job."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HOME", raising=False)
    config = _config(tmp_path, "recipe: seq2seq\nmodel_name_or_path: org/not-cached\ndata: sample\nzero_shot: drop\n")
    assert slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("judge-train submit: model_name_or_path: org/not-cached: no such folder") and \
        "HF_HUB_OFFLINE is set" in err and "--inputs-from-earlier-job" not in err, err


def test_a_deepspeed_accumulation_or_bf16_this_launch_would_not_give_is_refused_at_submit(tmp_path, capsys):
    """A DeepSpeed JSON with gradient_accumulation_steps 2 loads (2 is this batch's accumulation on 2 ranks); on 4
    ranks the accumulation is 16 / (4 x 4) = 1, and the job's prepare refused it on every rank after the queue.
    bf16 'auto' follows CUDA in the job: on with GPUs, off on CPU ranks (--gpus-per-node 0)."""
    settings = json.loads((Path(slurm_submit.__file__).parents[1] / "configs" / "deepspeed" / "zero3.json")
                          .read_text(encoding="utf-8"))
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({**settings, "gradient_accumulation_steps": 2, "bf16": {"enabled": True}}),
                         encoding="utf-8")
    config = _config(tmp_path, f"recipe: seq2seq\ndata: sample\nzero_shot: drop\nglobal_batch_size: 16\n"
                               f"deepspeed: {deepspeed}\n")

    def submit(gpus: int, ranks: int = 1) -> int:
        cpu_ranks = [] if gpus else ["--cpu-ranks-per-node", str(ranks)]  # refused beside GPUs
        return slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", str(gpus), *cpu_ranks,
                                  "--dry-run"])

    tail = (": transformers refuses a value that differs from the config's only once training starts; set these to "
            "\"auto\" (filled from this config) or to the config's values (this submission: global batch ")
    assert submit(2) == 0
    assert "export JUDGE_GRAD_ACCUM=2" in capsys.readouterr().out
    assert submit(4) == 2
    assert capsys.readouterr().err == (
        f"judge-train submit: deepspeed config {deepspeed}: gradient_accumulation_steps 2 vs the accumulation derived "
        f"from global_batch_size and the ranks 1{tail}16 = 4 per device x 1 accumulation x 4 ranks (1 node x 4))\n")
    assert submit(0, ranks=2) == 2
    assert capsys.readouterr().err == (
        f"judge-train submit: deepspeed config {deepspeed}: bf16.enabled True vs bf16 'auto' False{tail}16 = 4 per "
        "device x 2 accumulation x 2 ranks (1 node x 2))\n")


def test_a_hub_id_is_looked_up_in_the_jobs_cache_and_never_downloaded(tmp_path, capsys, monkeypatch):
    """The job's cache is <--cache-dir>/huggingface (slurm/train.sbatch's HF_HOME when the shell sets none): a Qwen3
    there is refused for the regression recipe; a hub id no cache here holds is left to the job, which downloads it.
    Every look-up is local_files_only: submit downloads nothing."""
    import huggingface_hub

    from tests.support.tiny_released import add_to_hub_cache

    for name in ("HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the default cache dir, ~/.cache/pollux-judge, is empty
    looked_up = []
    real = huggingface_hub.snapshot_download

    def recording(*args, **kwargs):
        looked_up.append(kwargs.get("local_files_only"))
        return real(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", recording)
    qwen3 = _folder_with_config(tmp_path / "qwen3", {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"})
    add_to_hub_cache(qwen3, tmp_path / "cache" / "huggingface" / "hub", "org/qwen3-base")

    def submit(model: str, *flags: str) -> int:
        config = _config(tmp_path, f"recipe: regression\nmodel_name_or_path: {model}\ndata: sample\nzero_shot: drop\n")
        return slurm_submit.main(["--config", str(config), "--nodes", "1", "--gpus-per-node", "2", "--dry-run", *flags])

    assert submit("org/qwen3-base", "--cache-dir", str(tmp_path / "cache")) == 2
    assert capsys.readouterr().err == ("judge-train submit: model_name_or_path: the regression recipe trains Qwen2 "
                                       "bases (T-lite, T-pro, Qwen2.5); org/qwen3-base is qwen3\n")
    assert submit("org/qwen3-base") == 0  # not in the job's default cache: the job downloads it
    assert submit("org/not-cached", "--cache-dir", str(tmp_path / "cache")) == 0
    assert looked_up == [True, True, True]
    assert "HF_HOME" not in os.environ  # the look-up's cache was submit's to set, and is gone


# --- the run folder: what the job's train.output_folder.check_output_dir would refuse, refused before the queue ----


def test_a_resubmission_of_an_edited_config_into_its_run_folder_is_refused_before_the_queue(tmp_path, submit_config,
                                                                                            capsys):  # fmt: skip
    """slurm/train.sbatch resumes the folder's complete checkpoint-6; its run.json records learning_rate 2e-05 and
    the file now says the default 1e-05. Every rank of the job refused that resume after the queue's wait; submit
    says the job's message, exit 2. Starting over (`-- --overwrite-output-dir`) is submitted."""
    import dataclasses

    from train.config import config_to_dict, load_config
    from train.provenance import write_run_json

    run = tmp_path / "run"
    checkpoint = run / "checkpoint-6"
    checkpoint.mkdir(parents=True)
    for name, body in (("trainer_state.json", '{"global_step": 6}'), ("optimizer.pt", ""), ("scheduler.pt", "")):
        (checkpoint / name).write_text(body)
    earlier = dataclasses.replace(load_config(submit_config), learning_rate=2e-5)
    write_run_json(run, config=config_to_dict(earlier), launch={"world_size": 2})
    assert _submit(submit_config, "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"judge-train submit: --resume: {run} holds a run trained with other settings: learning_rate: 2e-05 -> "
        "1e-05. A resume restores the checkpoint's optimizer, learning-rate schedule and data position, so these "
        "would not take effect as the config says, while run.json and the model card would record them. Train with "
        "them into a fresh --output-dir (or start over here with --overwrite-output-dir; under judge-train submit, "
        "`-- --overwrite-output-dir`), or resume with the earlier values (run.json's config)\n")
    assert _submit(submit_config, "--dry-run", "--", "--overwrite-output-dir") == 0


def test_a_fresh_run_into_a_folder_holding_a_finished_export_is_refused_before_the_queue(tmp_path, submit_config,
                                                                                         capsys):  # fmt: skip
    """No checkpoint, so the job would train fresh, and its judge-train would refuse to replace export/ (a judge
    someone may be serving) on every rank after the queue's wait: submit refuses it first, exit 2, nothing queued."""
    (tmp_path / "run" / "export").mkdir(parents=True)
    (tmp_path / "run" / "export" / "model.safetensors").write_bytes(b"")
    assert _submit(submit_config, "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"judge-train submit: {tmp_path / 'run'} already holds a finished export/; "
                            "--overwrite-output-dir to start over, or choose another --output-dir\n")


@pytest.mark.parametrize("cpus", ["0", "-4"])
def test_a_cpus_per_task_below_one_is_refused_by_submit_not_sbatch(submit_config, capsys, cpus):
    assert _submit(submit_config, "--cpus-per-task", cpus, "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"judge-train submit: --cpus-per-task must be positive, got {cpus}\n"


@pytest.mark.parametrize(("argv", "message"), [
    # `--partition "$PARTITION"` with the variable unset rendered a bare `#SBATCH --partition`, the option without
    # its value
    (["--partition", ""], "--partition '' is blank: give a name, or leave --partition out for the cluster's default "
                          "partition"),
    (["--account", " "], "--account ' ' is blank: give a name, or leave --account out to charge your default account"),
    (["--job-name", ""], "--job-name '' is blank: give a name, or leave --job-name out for "
                         "judge-train-<config folder>-<config file stem>"),
    (["--partition", "gpu a100"], "--partition 'gpu a100' holds whitespace, which no Slurm partition name does"),
    (["--sbatch-arg=--qos="], "--sbatch-arg=--qos=: nothing after the '=': give the value (--qos=...)"),
])  # fmt: skip
def test_a_blank_slurm_name_or_option_value_is_refused_not_rendered_bare(submit_config, capsys, argv, message):
    assert _submit(submit_config, *argv, "--dry-run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"judge-train submit: {message}")
    assert captured.err.count("\n") == 1


def test_named_partitions_account_and_a_job_name_with_a_space_still_render(submit_config, capsys):
    assert _submit(submit_config, "--partition", "gpu,gpu2", "--account", "my-project", "--job-name", "my judge",
                   "--dry-run") == 0
    header = capsys.readouterr().out.splitlines()
    assert {"#SBATCH --partition=gpu,gpu2", "#SBATCH --account=my-project", '#SBATCH --job-name="my judge"'} <= set(
        header)


def _cut_rng_checkpoint(tmp_path: Path) -> Path:
    """tmp_path/run/checkpoint-2 with trainer_state.json, its optimizer and schedule, and rank 1's RNG file cut
    after the zip signature (torch.save writes a zip archive, whose directory comes last)."""
    checkpoint = tmp_path / "run" / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    for name, body in (("trainer_state.json", '{"global_step": 2}'), ("optimizer.pt", ""), ("scheduler.pt", "")):
        (checkpoint / name).write_text(body)
    (checkpoint / "rng_state_1.pth").write_bytes(b"PK\x03\x04cut")
    return checkpoint


def test_a_folder_whose_only_checkpoint_has_a_cut_rng_file_is_submitted_naming_the_checkpoint(tmp_path, submit_config,
                                                                                               capsys):  # fmt: skip
    """slurm/train.sbatch sets a checkpoint whose RNG file is cut aside (train.output_folder's rule) and, none whole
    left, starts fresh: submit renders the job (exit 0) and names on stderr the checkpoint it will not resume
    from, which the folder logger's silencing must not hide; stdout is the script alone."""
    _cut_rng_checkpoint(tmp_path)
    assert _submit(submit_config, "--dry-run") == 0
    captured = capsys.readouterr()
    assert captured.err == (f"judge-train submit: warning: {tmp_path / 'run'}: checkpoint-2 (rng_state_1.pth cut off): "
                            "a save that did not finish, not resumed from\n")
    (tmp_path / "run").rename(tmp_path / "moved")
    assert _submit(submit_config, "--dry-run") == 0
    assert capsys.readouterr().out == captured.out


def test_a_resume_asked_of_a_folder_of_cut_checkpoints_only_is_refused_before_the_queue(tmp_path, submit_config,
                                                                                        capsys):  # fmt: skip
    """Under `-- --resume` the job resumes whatever the script found, and judge-train finds no whole checkpoint:
    refused here, exit 2, as the job would on every rank."""
    _cut_rng_checkpoint(tmp_path)
    assert _submit(submit_config, "--dry-run", "--", "--resume") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (  # the refusal alone: it names the checkpoint the warning would
        f"judge-train submit: --resume: no complete checkpoint in {tmp_path / 'run'} to resume from: checkpoint-2 "
        "(rng_state_1.pth cut off) (a save that did not finish, which the trainer cannot load); start over with "
        "--overwrite-output-dir (under judge-train submit, `-- --overwrite-output-dir`), or train into a fresh "
        "--output-dir\n")


@pytest.mark.parametrize("option", ["--dependency=afterany:123", "--dep=afterok:123"])
def test_a_job_that_waits_for_another_leaves_the_run_folder_to_the_job(tmp_path, submit_config, capsys, option):
    """Job B continues the folder job A is training (--dependency=afterany:A): at submit the folder holds A's
    finished export/ and no checkpoint yet, which a fresh run would be refused over; by B's start A has changed it.
    Submit renders B (exit 0) with a warning; sbatch's getopt_long reads --dep as --dependency. Without the
    dependency the folder is refused (test_a_fresh_run_into_a_folder_holding_a_finished_export_...)."""
    (tmp_path / "run" / "export").mkdir(parents=True)
    (tmp_path / "run" / "export" / "model.safetensors").write_bytes(b"")
    assert _submit(submit_config, "--dry-run", f"--sbatch-arg={option}") == 0
    captured = capsys.readouterr()
    assert f"#SBATCH --{option[2:]}\n" in captured.out
    assert captured.err == (f"judge-train submit: warning: --sbatch-arg={option}: the run folder {tmp_path / 'run'} "
                            "is not checked now (the job this one waits for may change it); the job checks it when "
                            "it starts\n")


def test_submit_help_lists_the_run_folder_refusals(capsys):
    """The exit-code list named only the ZeRO world-size refusal among the run folder's."""
    with pytest.raises(SystemExit) as ended:
        slurm_submit.main(["--help"])
    assert ended.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for refusal in ("a resume of an edited config", "of a checkpoint without optimizer.pt or scheduler.pt",
                    "of a DeepSpeed ZeRO checkpoint written by another number of ranks",
                    "of checkpoints all cut off mid-save",
                    "--overwrite-output-dir launch stopped before it deleted the earlier run",
                    "a fresh run over a finished export/", "unless the job waits for another"):
        assert refusal in text, refusal


def test_a_config_that_is_a_device_or_a_pipe_is_named_for_what_it_is(tmp_path, capsys):
    """--config /dev/null, or a FIFO (a process substitution's path), said "config file ... not found" of a path
    that is there: its user looked for a typo. A missing file is still "not found"."""
    fifo = tmp_path / "recipe.yaml"
    os.mkfifo(fifo)
    for path, kind in (("/dev/null", "a character device"), (str(fifo), "a pipe")):
        assert slurm_submit.main(["--config", path, "--nodes", "1", "--gpus-per-node", "0", "--dry-run"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (f"judge-train submit: --config {path}: {kind}, not a regular file; give the recipe's "
                                "YAML file (configs/train/...; write a stream to a file first)\n")
    missing = tmp_path / "missing.yaml"
    assert slurm_submit.main(["--config", str(missing), "--nodes", "1", "--gpus-per-node", "0", "--dry-run"]) == 2
    assert capsys.readouterr().err == f"judge-train submit: config file {missing} not found\n"


def test_cpu_ranks_beside_gpus_are_refused_naming_both_flags(submit_config, capsys):
    """--cpu-ranks-per-node was dropped without a word when GPUs were asked for: 4 GPUs gave 4 ranks a node whatever
    it said. With --gpus-per-node 0 it sets the ranks; 0 ranks is refused naming the flag."""
    argv = ["--config", str(submit_config), "--nodes", "1", "--dry-run"]
    assert slurm_submit.main([*argv, "--gpus-per-node", "4", "--cpu-ranks-per-node", "2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("judge-train submit: --cpu-ranks-per-node 2 applies to --gpus-per-node 0 (CPU ranks) "
                            "only; with --gpus-per-node 4 each node runs one rank per GPU: leave --cpu-ranks-per-node "
                            "out, or give --gpus-per-node 0 for a CPU job\n")
    assert slurm_submit.main([*argv, "--gpus-per-node", "0", "--cpu-ranks-per-node", "2"]) == 0
    assert "export JUDGE_PROCS_PER_NODE=2\n" in capsys.readouterr().out
    assert slurm_submit.main([*argv, "--gpus-per-node", "0", "--cpu-ranks-per-node", "0"]) == 2
    assert capsys.readouterr().err == "judge-train submit: --cpu-ranks-per-node must be positive, got 0\n"


def test_a_flash_attention_config_on_cpu_ranks_is_refused_with_the_override(tmp_path, capsys, monkeypatch):
    """configs/train/t-lite/seq2seq.yaml asks for flash_attention_2, which loads on CUDA GPUs only: under
    --gpus-per-node 0 the job rendered and every CPU rank stopped at the model's load. Refused naming the flag and
    the config key, with the override (-- --attn-implementation sdpa), which renders."""
    from tests.support.submit_folder import shipped_configs_submit_folder

    monkeypatch.chdir(shipped_configs_submit_folder(tmp_path / "submit"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache: the hub base is left to the job
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    config = Path(slurm_submit.__file__).parents[1] / "configs" / "train" / "t-lite" / "seq2seq.yaml"
    argv = ["--config", str(config), "--nodes", "1", "--gpus-per-node", "0", "--dry-run"]
    assert slurm_submit.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"judge-train submit: --gpus-per-node 0 trains on CPU, where attn_implementation: "
                            f"flash_attention_2 (in {config}) cannot load the model (FlashAttention runs on CUDA GPUs "
                            "only): give -- --attn-implementation sdpa for a CPU job, or ask for GPUs with "
                            "--gpus-per-node\n")
    assert slurm_submit.main([*argv, "--", "--attn-implementation", "sdpa"]) == 0
    assert "set -- --attn-implementation sdpa \"$@\"" in capsys.readouterr().out
    assert slurm_submit.main([*argv, "--", "--attn-implementation=flash_attention_2"]) == 2
    assert "where -- --attn-implementation flash_attention_2 cannot load" in capsys.readouterr().err
    assert slurm_submit.main([*argv[:-2], "8", "--dry-run"]) == 0  # on GPUs it is the config's choice


def test_a_resubmission_over_a_zero_checkpoint_reads_the_deepspeed_json_once(tmp_path, capsys, monkeypatch):
    """The run folder's check (the job's ``check_output_dir``, on a copy of the config naming the folder and the
    resume) takes the config's one reading of the DeepSpeed JSON, as the checks at load and the rendered note do: a
    ZeRO checkpoint's world-size check reading the file again could see one edited after the others read it."""
    from tests.unit.test_slurm_submit import json_files_read

    config, _ = _zero_run(tmp_path, ranks=4)
    reads = json_files_read(monkeypatch)
    assert slurm_submit.main(["--config", str(config), "--nodes", "2", "--gpus-per-node", "2", "--dry-run"]) == 0
    assert "# deepspeed " in capsys.readouterr().out
    assert reads.count("ds.json") == 1
