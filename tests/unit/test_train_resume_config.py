"""A ``--resume`` continues the run its folder holds: a config that changes what that run trains is refused.

The checkpoint restores the optimizer, the learning-rate schedule (its peak rate and length), the RNG and the data
position of the run it continues: a new learning_rate kept the checkpoint's peak rate, a new step count gave a rate
neither run would have had, while run.json and the model card recorded the new values. slurm/train.sbatch passes
``--resume`` whenever the folder holds a checkpoint, so an edited YAML resubmitted to the same folder met this
silently. ``check_output_dir`` now compares the config with the one run.json recorded (``RESUME_KEEPS``); the
fields that change only how the same steps are computed, logged or saved may change (``RESUME_FREE``).
run.json and the checkpoint's trainer_state.json are written by hand here: nothing trains.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil

import pytest

from train.config import RECIPES, ConfigError, GRPORecipeConfig, RegressionConfig, Seq2SeqConfig, config_to_dict
from train.provenance import write_run_json
from train.output_folder import RESUME_KEEPS, RESUME_FREE, check_output_dir


def _earlier_run(folder, config, *, record_config=True):
    """A run folder as a signal-stopped run leaves it: checkpoint-4 (with its trainer_state.json) and run.json."""
    (folder / "checkpoint-4").mkdir(parents=True)
    (folder / "checkpoint-4" / "trainer_state.json").write_text('{"global_step": 4}', encoding="utf-8")
    for name in ("optimizer.pt", "scheduler.pt"):  # what check_resumable looks for
        (folder / "checkpoint-4" / name).write_bytes(b"")
    write_run_json(folder, config=config_to_dict(config) if record_config else {}, launch={"world_size": 1})
    if not record_config:  # an older run.json: no config section at all
        import json

        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        del record["config"]
        (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return folder / "checkpoint-4"


def test_every_field_of_every_recipe_is_either_kept_or_may_change_on_a_resume():
    """The two lists split every recipe's fields between them; the ones a resume may change are exactly where and how
    often the run logs and saves, how data loads and how the same step is computed (per-device batch, activation
    recomputation, attention kernel, where vLLM runs)."""
    fields = {f.name for cls in RECIPES.values() for f in dataclasses.fields(cls)}
    assert not RESUME_KEEPS & RESUME_FREE
    assert RESUME_KEEPS | RESUME_FREE == fields
    assert RESUME_FREE == {
        "output_dir", "run_name", "report_to", "logging_steps", "disable_tqdm", "save_steps", "save_total_limit",
        "resume", "overwrite_output_dir", "dataloader_num_workers", "per_device_train_batch_size",
        "per_device_eval_batch_size", "gradient_checkpointing", "attn_implementation", "vllm_mode",
        "vllm_server_host", "vllm_server_port", "vllm_group_port", "vllm_server_tensor_parallel_size",
        "vllm_gpu_memory_utilization",
    }  # fmt: skip
    assert {"learning_rate", "lr_scheduler_type", "warmup_steps", "num_train_epochs", "max_steps",
            "global_batch_size", "seed", "data", "eval_data", "model_name_or_path", "recipe", "max_length",
            "trainer_args", "optim", "weight_decay", "lora", "lora_r", "packing", "verdict_format",
            "score_target", "score_loss_weight", "lm_loss_weight", "rewards", "num_generations", "beta",
            "loss_type", "use_vllm"} <= RESUME_KEEPS  # fmt: skip


@pytest.mark.parametrize("cls, changes, named", [
    (Seq2SeqConfig, {"learning_rate": 2e-5}, ["learning_rate: 1e-05 -> 2e-05"]),
    (Seq2SeqConfig, {"max_steps": 600, "num_train_epochs": 1.0},
     ["max_steps: -1 -> 600", "num_train_epochs: 3.0 -> 1.0"]),
    (Seq2SeqConfig, {"lr_scheduler_type": "cosine", "warmup_steps": 10},
     ["lr_scheduler_type: 'linear' -> 'cosine'", "warmup_steps: 0 -> 10"]),
    (Seq2SeqConfig, {"global_batch_size": 128}, ["global_batch_size: 256 -> 128"]),
    (Seq2SeqConfig, {"seed": 7, "data": "other.jsonl", "eval_data": "val.jsonl"},
     ["seed: 42 -> 7", "data: 'sample' -> 'other.jsonl'", "eval_data: None -> 'val.jsonl'"]),
    (Seq2SeqConfig, {"model_name_or_path": "t-tech/T-lite-it-1.0", "max_length": 2048},
     ["model_name_or_path: 'tiny-qwen2' -> 't-tech/T-lite-it-1.0'", "max_length: 4096 -> 2048"]),
    (Seq2SeqConfig, {"packing": True}, ["packing: False -> True"]),
    # another Zero-Shot split: the steps so far refused or dropped by the earlier one's task types
    (GRPORecipeConfig, {"split_file": "my_split.yaml"}, ["split_file: '' -> 'my_split.yaml'"]),
    (Seq2SeqConfig, {"trainer_args": {"adam_beta2": 0.95}}, ["trainer_args.adam_beta2: '(not set)' -> 0.95"]),
    (RegressionConfig, {"score_loss_weight": 2.0}, ["score_loss_weight: 1.0 -> 2.0"]),
    (GRPORecipeConfig, {"rewards": {"format_reward": 1.0}}, ["rewards: "]),
])
def test_a_resume_that_changes_what_the_run_trains_is_refused(tmp_path, cls, changes, named):
    """Each kept field that changed is named, old -> new, with what to do instead: a fresh --output-dir."""
    earlier = cls(output_dir=str(tmp_path / "run"))
    _earlier_run(tmp_path / "run", earlier)
    with pytest.raises(ConfigError) as refused:
        check_output_dir(dataclasses.replace(earlier, resume=True, **changes))
    message = str(refused.value)
    assert message.startswith(f"--resume: {tmp_path / 'run'} holds a run trained with other settings: ")
    for change in named:
        assert change in message
    assert "into a fresh --output-dir" in message and "--overwrite-output-dir" in message
    # Only what changed is named.
    assert message.count(" -> ") == len(named)


def test_a_resume_that_changes_only_how_the_steps_are_computed_logged_or_saved_goes_on(tmp_path, caplog):
    """Per-device batch (more ranks, the same global batch), checkpoint and log cadence, the loader's workers,
    activation recomputation and a moved run folder: the resume goes on from the newest checkpoint."""
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), global_batch_size=8, per_device_train_batch_size=1)
    _earlier_run(tmp_path / "run", earlier)
    shutil.copytree(tmp_path / "run", tmp_path / "moved")
    resumed = dataclasses.replace(
        earlier, resume=True, output_dir=str(tmp_path / "moved"), per_device_train_batch_size=2,
        per_device_eval_batch_size=4, save_steps=50, save_total_limit=1, logging_steps=1, report_to="tensorboard",
        run_name="again", dataloader_num_workers=2, disable_tqdm=True, gradient_checkpointing=False)
    with caplog.at_level(logging.INFO, logger="train.output_folder"):
        assert check_output_dir(resumed) == tmp_path / "moved" / "checkpoint-4"
    assert "per_device_train_batch_size: 1 -> 2" in caplog.text


def test_an_unchanged_resume_goes_on(tmp_path, caplog):
    """The same config again, a secret in trainer_args included (run.json holds it redacted): nothing to say."""
    earlier = RegressionConfig(output_dir=str(tmp_path / "run"),
                               trainer_args={"adam_beta2": 0.95, "hub_token": "hf_not_a_real_token"})
    checkpoint = _earlier_run(tmp_path / "run", earlier)
    assert "hf_not_a_real_token" not in (tmp_path / "run" / "run.json").read_text(encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="train.output_folder"):
        assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint
    assert not caplog.records


@pytest.mark.parametrize("how", ["no config", "no run.json", "older fields"])
def test_an_earlier_run_that_recorded_no_config_is_resumed_with_a_warning(tmp_path, caplog, how):
    """Runs from before run.json recorded the config (or a field of it) cannot be compared: the resume goes on and
    says so, instead of refusing a run that may be the same."""
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"))
    checkpoint = _earlier_run(tmp_path / "run", earlier, record_config=how != "no config")
    if how == "no run.json":
        (tmp_path / "run" / "run.json").unlink()
    if how == "older fields":
        import json

        record = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
        del record["config"]["packing"]
        (tmp_path / "run" / "run.json").write_text(json.dumps(record), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="train.output_folder"):
        assert check_output_dir(dataclasses.replace(earlier, resume=True, packing=True)) == checkpoint
    expected = {"no config": "its run.json records no config", "no run.json": "it has no run.json",
                "older fields": "the earlier run.json records no packing"}[how]
    assert expected in caplog.text


def test_a_resume_after_an_overwrite_that_never_deleted_the_earlier_run_is_refused(tmp_path, monkeypatch):
    """--overwrite-output-dir writes run.json (its own config) when its data is built, and deletes the earlier run
    only right before training: a launch refused in between leaves run.json describing it beside the earlier run's
    checkpoints. A --resume then (slurm/train.sbatch adds it whenever a checkpoint is there) cannot be checked
    against those checkpoints and is refused; once the overwrite has deleted them, its own checkpoints resume."""
    from train.output_folder import clear_earlier_run
    from train.recipe_steps import PreparedRun
    from train.training_arguments import Launch

    monkeypatch.delenv("RANK", raising=False)
    folder = tmp_path / "run"
    _earlier_run(folder, Seq2SeqConfig(output_dir=str(folder), learning_rate=1e-5))
    overwrite = Seq2SeqConfig(output_dir=str(folder), learning_rate=2e-5, overwrite_output_dir=True)
    run = PreparedRun(config=overwrite, launch=Launch(1, 1, 256, 256), resume_from=None, base_model="unused",
                      tokenizer=None, dtype=None, stopper=None)
    run.record_data({"n_rows": 3})  # ... and the launch is refused before clear_earlier_run
    resumed = dataclasses.replace(overwrite, overwrite_output_dir=False, resume=True)
    with pytest.raises(ConfigError, match="stopped before it deleted the earlier run: its checkpoints are that "
                                          "earlier run's"):
        check_output_dir(resumed)
    clear_earlier_run(overwrite)  # the overwrite that goes on: the earlier run is gone, its own checkpoints come
    assert not (folder / "checkpoint-4").exists()
    (folder / "checkpoint-2").mkdir()
    (folder / "checkpoint-2" / "trainer_state.json").write_text('{"global_step": 2}', encoding="utf-8")
    for name in ("optimizer.pt", "scheduler.pt"):  # what check_resumable looks for
        (folder / "checkpoint-2" / name).write_bytes(b"")
    assert check_output_dir(resumed) == folder / "checkpoint-2"


def _finished(folder, config, *, step, planned, exported_step):
    """A run folder as a run trained to ``planned`` steps leaves it, its last checkpoint at ``step`` and an export
    whose run.json records the result at ``exported_step`` (None: no export)."""
    import json

    checkpoint = _earlier_run(folder, config)
    final = folder / f"checkpoint-{step}"
    checkpoint.rename(final)
    (final / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": planned}),
                                              encoding="utf-8")
    if exported_step is not None:
        (folder / "export").mkdir()
        (folder / "export" / "pollux_judge.json").write_text("{}", encoding="utf-8")
        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        record["result"] = {"global_step": exported_step, "export_dir": str(folder / "export")}
        (folder / "export" / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return final


def test_a_resume_of_a_finished_run_ends_with_nothing_to_do(tmp_path, capsys, monkeypatch):
    """slurm/train.sbatch passes --resume whenever a checkpoint is there: a finished run resubmitted (or requeued
    after its export) trained no step and wrote its judge again, in place, under a judge-serve that may be serving
    it. Its last checkpoint is the planned final step and the export records that step: exit 0, saying so; nothing
    in the folder changes."""
    from train.output_folder import RunFinished

    monkeypatch.delenv("RANK", raising=False)
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"))
    _finished(tmp_path / "run", earlier, step=12, planned=12, exported_step=12)
    before = sorted(str(p) for p in (tmp_path / "run").rglob("*"))
    with pytest.raises(RunFinished) as stopped:
        check_output_dir(dataclasses.replace(earlier, resume=True))
    assert stopped.value.code == 0
    assert stopped.value.message == (
        f"{tmp_path / 'run'} is already finished: checkpoint-12 is the last step its trainer planned "
        "and export/ holds the judge exported from it; nothing to train or export (--overwrite-output-dir to train "
        "it again, or another --output-dir)")
    assert capsys.readouterr().out == ""  # train/cli.py says it, on rank 0 only
    assert sorted(str(p) for p in (tmp_path / "run").rglob("*")) == before


@pytest.mark.parametrize(("step", "planned", "exported_step"), [
    (8, 12, None),  # stopped by a signal before the end
    (12, 12, None),  # trained to the end, the export not done (a signal during it, or it failed)
    (8, 12, 8),  # an export from an earlier, shorter plan: not this run's end
    (12, 12, 8),  # the export is not the final step's
])  # fmt: skip
def test_a_resume_of_an_unfinished_run_goes_on(tmp_path, step, planned, exported_step):
    """Anything short of a final checkpoint with its export resumes as before (and exports at the end)."""
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"))
    checkpoint = _finished(tmp_path / "run", earlier, step=step, planned=planned, exported_step=exported_step)
    assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint


class _Trainer:
    """What ``train.export.export_after_training`` asks of a trainer, on rank 0 of one; ``save_model`` writes an empty
    folder (the export's model steps are stubbed: ``_stub_export_steps``)."""

    def __init__(self, output_dir):
        from types import SimpleNamespace

        self.args = SimpleNamespace(output_dir=str(output_dir))
        self.accelerator = SimpleNamespace(wait_for_everyone=lambda: None)
        self.model = None

    def save_model(self, folder):
        from pathlib import Path

        Path(folder).mkdir(parents=True, exist_ok=True)

    def is_world_process_zero(self):
        return True


def _stub_export_steps(monkeypatch, verify):
    """The export's model steps stubbed: the written export is a manifest and a weights file saying "new"."""
    from pathlib import Path

    from judge.checkpoints import write_manifest
    from train import export

    def write(model, tokenizer, out_dir, **kwargs):
        out = export._fresh(Path(out_dir))
        (out / "model.safetensors").write_text("new", encoding="utf-8")
        write_manifest(out, "seq2seq", generator=".", score_head=None, verdict_format="tagged")
        return out

    monkeypatch.setattr(export, "probe_batch", lambda tokenizer, texts: {})
    monkeypatch.setattr(export, "live_outputs", lambda model, batch: {})
    monkeypatch.setattr(export, "load_trained", lambda *args, **kwargs: "the trained model")
    monkeypatch.setattr(export, "export_seq2seq", write)
    monkeypatch.setattr(export, "verify_export", verify)


def _exported_run(folder):
    """A run folder with run.json and an earlier export whose card holds evaluation figures."""
    from judge.checkpoints import write_manifest

    config = Seq2SeqConfig(output_dir=str(folder))
    write_run_json(folder, config=config_to_dict(config), launch={"world_size": 1})
    (folder / "export").mkdir()
    (folder / "export" / "model.safetensors").write_text("earlier", encoding="utf-8")
    write_manifest(folder / "export", "seq2seq", generator=".", score_head=None, verdict_format="tagged")
    card = "# j\n\n## Evaluation\n\n| Test | MAE |\n|---|---|\n| Standard | 0.5 |\n\n## Provenance\n\n- x\n"
    (folder / "export" / "README.md").write_text(card, encoding="utf-8")
    return config


def _export(folder):
    import torch

    from train import export
    from train.provenance import RunResult

    result = RunResult(output_dir=str(folder), export_dir=None, global_step=12, final_learning_rate=0.0)
    report = export.export_after_training(_Trainer(folder), stopper=None, result=result, mode="seq2seq",
                                          model_cls=None, tokenizer=None, probe_texts=[], base_model="base",
                                          dtype=torch.float32, export_dir=folder / "export")  # fmt: skip
    return result, report


def test_an_export_that_fails_leaves_the_earlier_export_whole(tmp_path, monkeypatch):
    """The export is written beside export/ and put in its place only once it checks: a re-export (a --resume of a
    run trained to the end) that fails leaves the judge it was to replace, whole, and run.json without a result."""
    import json

    from train.export import ExportError

    def fails(*args, **kwargs):
        raise ExportError("LM logits: reloaded model differs from the live one")

    _stub_export_steps(monkeypatch, fails)
    _exported_run(tmp_path)
    before = {p.name: p.read_bytes() for p in (tmp_path / "export").iterdir()}
    with pytest.raises(ExportError):
        _export(tmp_path)
    assert {p.name: p.read_bytes() for p in (tmp_path / "export").iterdir()} == before
    assert "result" not in json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))


def test_an_export_that_fails_after_staging_removes_the_staging_folder_and_names_its_cause(tmp_path, monkeypatch):
    """The check fails once the export is written into .export.staging/: the folder is removed (no half-checked
    judge is left beside export/), and the error raised is the check's own."""
    from judge.plumbing.atomic_write import staging_dir
    from train.export import ExportError

    staged = []

    def fails(folder, *args, **kwargs):
        staged.append(sorted(p.name for p in folder.iterdir()))
        raise ExportError("LM logits: reloaded model differs from the live one")

    _stub_export_steps(monkeypatch, fails)
    _exported_run(tmp_path)
    with pytest.raises(ExportError, match="LM logits: reloaded model differs from the live one"):
        _export(tmp_path)
    assert staged == [["model.safetensors", "pollux_judge.json"]]  # it failed with the staging folder written
    assert not staging_dir(tmp_path / "export").exists()
    assert (tmp_path / "export" / "model.safetensors").read_text(encoding="utf-8") == "earlier"


def test_a_swap_whose_second_rename_fails_puts_the_earlier_export_back(tmp_path, monkeypatch):
    """Where folders cannot be swapped in one step the earlier export is renamed aside, then the staged one renamed to
    export/; when that second rename fails, export/ is the earlier export again (not left absent with it aside), the
    run folder's run.json has no result, and the error raised is the rename's own."""
    import errno
    import json
    from pathlib import Path

    from judge.plumbing import atomic_write

    monkeypatch.setattr(atomic_write, "_exchange", lambda first, second: False)
    rename = Path.rename

    def staging_rename_fails(self, target):
        if self.name == ".export.staging":
            raise OSError(errno.EIO, "I/O error")
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", staging_rename_fails)
    _stub_export_steps(monkeypatch, lambda *args, **kwargs: {"mode": "seq2seq"})
    _exported_run(tmp_path)
    with pytest.raises(OSError, match="I/O error"):
        _export(tmp_path)
    assert (tmp_path / "export" / "model.safetensors").read_text(encoding="utf-8") == "earlier"
    assert not atomic_write.aside_dir(tmp_path / "export").exists()
    assert "result" not in json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("swap", ["in one step", "renamed aside first"])
def test_an_export_replaces_the_earlier_one_whole_and_keeps_its_cards_evaluation(tmp_path, monkeypatch, swap):
    """A checked export takes the earlier one's place (swapped in one step where the filesystem can, else the earlier
    one renamed aside first): nothing of the earlier one left in it, no staging folder left beside it; its card keeps
    the evaluation `judge-train card --run` wrote, and the run folder's run.json and the export's record the same
    result."""
    import json

    from judge.plumbing import atomic_write

    if swap == "renamed aside first":
        monkeypatch.setattr(atomic_write, "_exchange", lambda first, second: False)
    _stub_export_steps(monkeypatch, lambda *args, **kwargs: {"mode": "seq2seq"})
    _exported_run(tmp_path)
    result, report = _export(tmp_path)
    assert report == {"mode": "seq2seq"} and result.export_dir == str(tmp_path / "export")
    export = tmp_path / "export"
    assert sorted(p.name for p in export.iterdir()) == ["README.md", "model.safetensors", "pollux_judge.json",
                                                         "run.json"]  # fmt: skip
    assert (export / "model.safetensors").read_text(encoding="utf-8") == "new"
    assert "| Standard | 0.5 |" in (export / "README.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "run.json"]
    recorded = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert recorded == json.loads((export / "run.json").read_text(encoding="utf-8"))
    assert (recorded["result"]["export_dir"], recorded["result"]["global_step"]) == (str(export), 12)


@pytest.mark.parametrize("swap", ["in one step", "renamed aside first"])
def test_an_export_kept_elsewhere_through_a_symlink_is_replaced_where_the_link_points(tmp_path, monkeypatch, swap):
    """export/ a symlink to a folder on another disk: the swap exchanged the link with the staging folder and then
    failed removing it ("Cannot call rmtree on a symbolic link"), a traceback after the export was in place, the run
    folder's run.json without the result and .export.staging left a link that every later export failed on. The
    export is staged beside the folder the link points at and replaces it there; the link stays, pointing at it."""
    import json

    from judge.plumbing import atomic_write

    if swap == "renamed aside first":
        monkeypatch.setattr(atomic_write, "_exchange", lambda first, second: False)
    _stub_export_steps(monkeypatch, lambda *args, **kwargs: {"mode": "seq2seq"})
    run = tmp_path / "run"
    run.mkdir()
    _exported_run(run)
    elsewhere = tmp_path / "scratch" / "export"
    elsewhere.parent.mkdir()
    (run / "export").rename(elsewhere)
    (run / "export").symlink_to(elsewhere, target_is_directory=True)
    _export(run)
    assert (run / "export").is_symlink() and (run / "export").resolve() == elsewhere.resolve()
    assert (elsewhere / "model.safetensors").read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in run.iterdir()) == ["export", "run.json"]
    assert sorted(p.name for p in elsewhere.parent.iterdir()) == ["export"]
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["result"]["global_step"] == 12


def test_an_earlier_export_left_aside_by_a_kill_between_two_renames_is_removed(tmp_path, monkeypatch):
    """Where folders cannot be swapped in one step the earlier export is renamed aside first; a kill between that
    rename and the next left no export/ and the whole earlier one in .export.previous, which no later export
    removed. The next export takes export/'s place and removes it."""
    from judge.plumbing.atomic_write import aside_dir

    _stub_export_steps(monkeypatch, lambda *args, **kwargs: {"mode": "seq2seq"})
    _exported_run(tmp_path)
    (tmp_path / "export").rename(aside_dir(tmp_path / "export"))
    _export(tmp_path)
    assert (tmp_path / "export" / "model.safetensors").read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "run.json"]


def _zero(stage):
    """A DeepSpeed JSON's zero_optimization block of ``stage``, as the loader takes it: ZeRO-3 gathers the weights on
    save (train.config refuses it otherwise)."""
    return {"stage": stage, **({"stage3_gather_16bit_weights_on_model_save": True} if stage in (3, "3") else {})}


def _zero_checkpoint(folder, config, *, ranks, launch_world_size, stage=3):
    """A DeepSpeed ZeRO run's folder: checkpoint-4 holding global_step4/ with one optimizer file per rank that saved
    it (``ranks`` of them; 0: none, as if its files were not there to count), the model states as ZeRO ``stage``
    writes them (one per rank under stage 3, one file below), and run.json's launch.world_size."""
    from train.provenance import update_run_json

    checkpoint = _earlier_run(folder, config)
    (checkpoint / "optimizer.pt").unlink()  # under DeepSpeed the optimizer is in global_step*, the schedule stays
    (checkpoint / "global_step4").mkdir()
    (checkpoint / "latest").write_text("global_step4", encoding="utf-8")
    for rank in range(ranks):
        (checkpoint / "global_step4" / f"bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt").write_bytes(b"")
    model_states = "zero_pp_rank_0_mp_rank_00_model_states.pt" if stage == 3 else "mp_rank_00_model_states.pt"
    (checkpoint / "global_step4" / model_states).write_bytes(b"")
    update_run_json(folder, launch={"world_size": launch_world_size})
    return checkpoint


@pytest.mark.parametrize("ranks, launch_world_size, now, stage, refused", [
    (4, 4, "2", 3, "written by 4 ranks (4 zero_pp_rank optimizer files in global_step4) and this launch has 2"),
    # run.json's launch may be a later launch's (one that failed inside training): the checkpoint's files win
    (4, 2, "2", 3, "written by 4 ranks (4 zero_pp_rank optimizer files in global_step4) and this launch has 2"),
    (0, 64, "8", 3, "written by 64 ranks (run.json's launch.world_size) and this launch has 8"),
    # ZeRO stage 0 (fp32 or fp16) saves no rank files: the whole optimizer is in the model states, which DeepSpeed
    # loads on any number of ranks (it checks the world size only under zero_optimization(), stage > 0)
    (0, 64, "8", 0, None),
    (0, 64, "8", None, None),  # a JSON without a zero_optimization block is stage 0
    (4, 4, "4", 3, None),
    (4, 2, "4", 3, None),
    (0, 8, "8", 3, None),
])  # fmt: skip
def test_a_zero_checkpoint_resumes_only_on_the_number_of_ranks_that_wrote_it(tmp_path, monkeypatch, ranks,
                                                                             launch_world_size, now, stage, refused):
    """Each rank saved its own share of ZeRO's optimizer state; DeepSpeed refused another data-parallel world size
    only inside trainer.train(), after the base model loaded: a traceback on every rank. Refused before anything
    loads, naming both numbers; the same number resumes. Without rank files to count, run.json's launch stands in
    only for a DeepSpeed JSON of stage 1 or more."""
    import json

    monkeypatch.setenv("WORLD_SIZE", now)
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({} if stage is None else {"zero_optimization": _zero(stage)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    checkpoint = _zero_checkpoint(tmp_path / "run", earlier, ranks=ranks, launch_world_size=launch_world_size,
                                  stage=stage or 0)
    resumed = dataclasses.replace(earlier, resume=True)
    if refused is None:
        assert check_output_dir(resumed) == checkpoint
        return
    with pytest.raises(ConfigError) as error:
        check_output_dir(resumed)
    assert str(error.value) == (
        f"--resume: {checkpoint} is a DeepSpeed ZeRO checkpoint {refused} (WORLD_SIZE): each rank saved its own "
        f"share of the optimizer state, which DeepSpeed cannot load on another number of ranks; resume on "
        f"{refused.split()[2]} ranks (the same nodes x GPUs), or start over with --overwrite-output-dir (under "
        "judge-train submit, `-- --overwrite-output-dir`)")


def test_a_stage_0_checkpoint_under_a_stage_1_json_is_refused_for_its_stage_not_for_run_jsons_ranks(tmp_path,
                                                                                                   monkeypatch):
    """A stage-0 checkpoint (model states, no rank files) loads on any number of ranks: the one refusal names the
    stages, not run.json's 64 ranks, whose advice (resume on 64) would only meet the stage refusal next."""
    import json

    monkeypatch.setenv("WORLD_SIZE", "8")
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(1)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    _zero_checkpoint(tmp_path / "run", earlier, ranks=0, launch_world_size=64, stage=0)
    with pytest.raises(ConfigError) as error:
        check_output_dir(dataclasses.replace(earlier, resume=True))
    assert "ZeRO stage 0" in str(error.value) and "64 ranks" not in str(error.value)


@pytest.mark.parametrize("saved, now", [(3, 2), (2, 3), (0, 3), (2, "3")])  # "3": DeepSpeed reads it as 3
def test_a_zero_checkpoint_is_refused_under_a_json_of_another_zero_stage(tmp_path, monkeypatch, saved, now):
    """The resume compares the deepspeed path; a JSON edited in place (stage 3 -> 2) passed, and DeepSpeed, looking
    for the model-states files of the stage it runs, failed inside trainer.train() after the model loaded. Refused
    before anything loads, naming both stages; the stage it was saved with resumes, and so does a universal
    checkpoint, which DeepSpeed converts itself."""
    import json

    monkeypatch.setenv("WORLD_SIZE", "1")
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(now)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    checkpoint = _zero_checkpoint(tmp_path / "run", earlier, ranks=1 if saved else 0, launch_world_size=1,
                                  stage=saved)
    resumed = dataclasses.replace(earlier, resume=True)
    with pytest.raises(ConfigError) as error:
        check_output_dir(resumed)
    written, held = ("3", "zero_pp_rank_0_mp_rank_00_model_states.pt") if saved == 3 else (
        "0, 1 or 2", "mp_rank_00_model_states.pt")
    assert str(error.value) == (
        f"--resume: {checkpoint} is a DeepSpeed checkpoint of ZeRO stage {written} (global_step4 holds {held}) and "
        f"deepspeed config {deepspeed} sets stage {int(now)}: DeepSpeed would look for the other stage's model-states "
        "files and fail once the model has loaded; resume with the ZeRO stage the run was saved with, or start over "
        "with --overwrite-output-dir (under judge-train submit, `-- --overwrite-output-dir`)")
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(saved)}))
    assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint  # a new config reads the file
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(now), "checkpoint": {"load_universal": True}}))
    assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint  # a new config reads the file


def _stage_0_to_2_checkpoint(folder, config, optimizer_files):
    """A ZeRO stage 0 to 2 run's folder: global_step4/ with the one model-states file those stages write and
    ``optimizer_files`` beside it (DeepSpeed's names, deepspeed/runtime/engine.py ``_get_rank_zero_ckpt_name``)."""
    from train.provenance import update_run_json

    checkpoint = _earlier_run(folder, config)
    (checkpoint / "optimizer.pt").unlink()
    (checkpoint / "global_step4").mkdir()
    (checkpoint / "latest").write_text("global_step4", encoding="utf-8")
    for name in ("mp_rank_00_model_states.pt", *optimizer_files):
        (checkpoint / "global_step4" / name).write_bytes(b"")
    update_run_json(folder, launch={"world_size": 1})
    return checkpoint


# Stage 0 with fp32, fp16 or (this DeepSpeed) bf16 keeps the whole optimizer in the model-states file and writes no
# optimizer file; stages 1 and 2 write one per rank, prefixed bf16_ under bf16 only. A stage 0 bf16 run on DeepSpeed's
# BF16_Optimizer writes bf16_ files as well: those names tell no stage.
STAGE_0 = "ZeRO stage 0 (global_step4 holds mp_rank_00_model_states.pt and no zero_pp_rank optimizer file)"
STAGE_1_OR_2 = "ZeRO stage 1 or 2 (global_step4 holds zero_pp_rank_0_mp_rank_00_optim_states.pt)"


@pytest.mark.parametrize("files, now, written, looks_for", [
    ((), 1, STAGE_0, "the zero_pp_rank optimizer files stage 1 saves"),
    ((), 2, STAGE_0, "the zero_pp_rank optimizer files stage 2 saves"),
    (("zero_pp_rank_0_mp_rank_00_optim_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"), 0, STAGE_1_OR_2,
     "the optimizer state in mp_rank_00_model_states.pt, where stages 1 and 2 keep none"),
    (("zero_pp_rank_0_mp_rank_00optim_states.pt",), 0,  # DeepSpeed's older spelling
     STAGE_1_OR_2.replace("_optim_states", "optim_states"),
     "the optimizer state in mp_rank_00_model_states.pt, where stages 1 and 2 keep none"),
])  # fmt: skip
def test_a_stage_0_checkpoint_and_a_stage_1_or_2_one_are_not_resumed_under_each_others_json(
        tmp_path, monkeypatch, files, now, written, looks_for):
    """Stages 0 to 2 write the same model-states file, so the layout check let a stage 0 checkpoint through under a
    JSON of stage 1 or 2 (and back), and DeepSpeed, loading the optimizer state the other stage's way, failed inside
    trainer.train() once the model had loaded. The optimizer files tell them apart: refused before anything loads,
    naming both stages."""
    import json

    monkeypatch.setenv("WORLD_SIZE", str(max(len(files), 1)))
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(now)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    checkpoint = _stage_0_to_2_checkpoint(tmp_path / "run", earlier, files)
    with pytest.raises(ConfigError) as error:
        check_output_dir(dataclasses.replace(earlier, resume=True))
    assert str(error.value) == (
        f"--resume: {checkpoint} is a DeepSpeed checkpoint of {written} and deepspeed config {deepspeed} sets stage "
        f"{now}: DeepSpeed would look for {looks_for} and fail once the model has loaded; resume with the ZeRO stage "
        "the run was saved with, or start over with --overwrite-output-dir (under judge-train submit, "
        "`-- --overwrite-output-dir`)")
    for stage in ((0,) if not files else (1, 2)):  # the stage it was saved with resumes
        deepspeed.write_text(json.dumps({"zero_optimization": _zero(stage)}))
        assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint


@pytest.mark.parametrize("now", [0, 1, 2])
def test_bf16_optimizer_files_tell_no_zero_stage_below_3_and_resume_under_any(tmp_path, monkeypatch, now):
    """The stated limit (docs/training.md): bf16_zero_pp_rank files are what stages 1 and 2 write under bf16 and
    what stage 0 writes on DeepSpeed's BF16_Optimizer, so such a checkpoint passes this check under a JSON of any
    stage 0 to 2; DeepSpeed's own load names a mismatch."""
    import json

    monkeypatch.setenv("WORLD_SIZE", "1")
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(now)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    checkpoint = _stage_0_to_2_checkpoint(tmp_path / "run", earlier, ["bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"])
    assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint


def test_a_zero_checkpoint_resumes_on_other_ranks_when_deepspeed_loads_it_as_universal(tmp_path, monkeypatch):
    """A DeepSpeed JSON with "checkpoint": {"load_universal": true} (a checkpoint converted by DeepSpeed's
    ds_to_universal.py) is re-partitioned by DeepSpeed itself: let through. Without it, refused."""
    import json

    monkeypatch.setenv("WORLD_SIZE", "2")
    universal, plain = tmp_path / "universal.json", tmp_path / "plain.json"
    universal.write_text(json.dumps({"zero_optimization": _zero(3), "checkpoint": {"load_universal": True}}))
    plain.write_text(json.dumps({"zero_optimization": _zero(3), "checkpoint": {"load_universal": False}}))
    for deepspeed, goes_on in ((universal, True), (plain, False)):
        earlier = Seq2SeqConfig(output_dir=str(tmp_path / deepspeed.stem), deepspeed=str(deepspeed))
        checkpoint = _zero_checkpoint(tmp_path / deepspeed.stem, earlier, ranks=4, launch_world_size=4)
        if goes_on:
            assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint
        else:
            with pytest.raises(ConfigError, match="written by 4 ranks .* this launch has 2"):
                check_output_dir(dataclasses.replace(earlier, resume=True))


def test_the_world_size_check_reads_the_deepspeed_json_the_config_read(tmp_path, monkeypatch):
    """The check on resume takes the config's one reading of the DeepSpeed JSON (TrainConfig.deepspeed_settings,
    read at load): a file edited after it, here to ask for universal checkpoints, is not what this launch runs with,
    so the resume is still refused. It read the file again on its own, and let the edited one through."""
    import json

    monkeypatch.setenv("WORLD_SIZE", "2")
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(3)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    _zero_checkpoint(tmp_path / "run", earlier, ranks=4, launch_world_size=4)
    resumed = dataclasses.replace(earlier, resume=True)
    assert resumed.deepspeed_settings() == {"zero_optimization": _zero(3)}  # the reading at load
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(3), "checkpoint": {"load_universal": True}}))
    with pytest.raises(ConfigError, match="written by 4 ranks .* this launch has 2"):
        check_output_dir(resumed)


def test_what_an_interrupted_launch_keeps_is_asked_of_the_deepspeed_json_the_config_read(tmp_path, monkeypatch):
    """``what_a_resume_keeps`` asks ``check_output_dir`` of a resume copy of the config (``TrainConfig.replaced``),
    which keeps the config's reading of the DeepSpeed JSON: the file edited after it to ask for universal
    checkpoints is not what the launch ran with, so the ZeRO checkpoint of 4 ranks is not offered to a launch of 2. A
    copy reading the file again named checkpoint-4 with --resume, which the rerun then refused."""
    import json

    from train.output_folder import what_a_resume_keeps

    monkeypatch.setenv("WORLD_SIZE", "2")
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(3)}))
    config = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    _zero_checkpoint(tmp_path / "run", config, ranks=4, launch_world_size=4)
    assert config.deepspeed_settings() == {"zero_optimization": _zero(3)}  # the reading at load
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(3), "checkpoint": {"load_universal": True}}))
    assert what_a_resume_keeps(config).startswith("no checkpoint to resume from")



def test_asking_again_what_a_resume_keeps_adds_no_handler_to_the_process(tmp_path):
    """Each call added a NullHandler to its quiet logger, which lives as long as the process: one more for every
    interrupted launch a process asked about (every test of a Ctrl+C here left one behind)."""
    import logging

    from train.output_folder import what_a_resume_keeps

    config = Seq2SeqConfig(output_dir=str(tmp_path / "run"))
    quiet = logging.getLogger("train.output_folder.interrupted")
    assert what_a_resume_keeps(config).startswith("no checkpoint to resume from")
    handlers = quiet.handlers[:]
    for _ in range(3):
        what_a_resume_keeps(config)
    assert quiet.handlers == handlers and not quiet.propagate

def test_a_copy_naming_another_deepspeed_json_reads_that_one(tmp_path):
    """``TrainConfig.replaced`` keeps the reading only for the same ``deepspeed``: another path is read when asked."""
    import json

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"zero_optimization": _zero(2)}))
    second.write_text(json.dumps({"zero_optimization": _zero(3)}))
    config = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(first))
    assert config.deepspeed_settings() == {"zero_optimization": _zero(2)}
    first.unlink()
    assert config.replaced(resume=True).deepspeed_settings() == {"zero_optimization": _zero(2)}
    assert config.replaced(deepspeed=str(second)).deepspeed_settings() == {"zero_optimization": _zero(3)}


def test_a_checkpoint_without_deepspeed_resumes_on_another_number_of_ranks(tmp_path, monkeypatch):
    """optimizer.pt holds the whole optimizer state (no global_step* folder): another world size with the same
    global batch resumes, whatever run.json's launch recorded."""
    monkeypatch.setenv("WORLD_SIZE", "8")
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"))
    checkpoint = _earlier_run(tmp_path / "run", earlier)  # launch world_size 1
    assert check_output_dir(dataclasses.replace(earlier, resume=True)) == checkpoint


@pytest.mark.parametrize("name", [
    "bf16_zero_pp_rank_{rank}_mp_rank_00_optim_states.pt",  # bf16
    "zero_pp_rank_{rank}_mp_rank_00_optim_states.pt",  # fp16 / fp32
    "zero_pp_rank_{rank}_mp_rank_00optim_states.pt",  # the older spelling, no "_" before optim_states
])  # fmt: skip
def test_every_spelling_deepspeed_gives_a_ranks_optimizer_file_is_counted(tmp_path, monkeypatch, name):
    """DeepSpeed's _get_rank_zero_ckpt_name writes a rank's file with a "bf16_" prefix or none, and older versions
    without the "_" before optim_states: three files of any spelling are three ranks (a model-states file is none),
    so a launch of 2 is refused naming 3, not run.json's 2."""
    import json

    monkeypatch.setenv("WORLD_SIZE", "2")
    deepspeed = tmp_path / "ds.json"
    deepspeed.write_text(json.dumps({"zero_optimization": _zero(3)}))
    earlier = Seq2SeqConfig(output_dir=str(tmp_path / "run"), deepspeed=str(deepspeed))
    checkpoint = _zero_checkpoint(tmp_path / "run", earlier, ranks=0, launch_world_size=2)
    for rank in range(3):
        (checkpoint / "global_step4" / name.format(rank=rank)).write_bytes(b"")
    with pytest.raises(ConfigError) as error:
        check_output_dir(dataclasses.replace(earlier, resume=True))
    assert "written by 3 ranks (3 zero_pp_rank optimizer files in global_step4) and this launch has 2" in str(error.value)
