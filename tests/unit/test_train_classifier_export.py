"""The task classifier's export is written beside export/ and swapped in whole (``train.classifier.export_classifier``).

The recipe runs through ``train.classifier.train_classifier`` with the model, the trainer and the run's preparation
faked: the test is about where the export is written, not about training.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest


class _SaveFailed(RuntimeError):
    pass


def _run_the_recipe(folder, monkeypatch, *, save, check):
    """``train_classifier`` on a fake run into ``folder``: ``save(out_dir)`` is the trainer's save_model, ``check``
    the reload check."""
    import transformers

    from train import classifier, recipe_steps
    from train.config import ClassifierConfig
    from train.provenance import RunResult

    config = ClassifierConfig(output_dir=str(folder))
    tokenizer = SimpleNamespace(pad_token_id=0,
                                save_pretrained=lambda out: (out / "tokenizer.json").write_text("{}", encoding="utf-8"))

    class Run:
        stopped = False
        base_model, dtype, stopper = "base", None, None

        def __init__(self):
            self.tokenizer = tokenizer

        def record_data(self, report, train_rows=None):
            pass

        def training_arguments(self, cls, **kwargs):
            return None

        def train(self, trainer):
            return RunResult(output_dir=str(folder), export_dir=None, global_step=3, final_learning_rate=0.0)

    class Model:
        def __init__(self):
            self.config = SimpleNamespace()

    def trainer_init(self, model, **kwargs):
        self.model = model

    def save_model(self, out_dir):
        save(Path(out_dir))

    # The recipe imports these from transformers when it runs: their methods are what is replaced.
    monkeypatch.setattr(transformers.AutoModelForSequenceClassification, "from_pretrained",
                        lambda *args, **kwargs: Model())
    monkeypatch.setattr(transformers.Trainer, "__init__", trainer_init)
    monkeypatch.setattr(transformers.Trainer, "save_model", save_model)
    monkeypatch.setattr(transformers.Trainer, "is_world_process_zero", lambda self: True)
    def prepare(config, name, **kwargs):
        # its export is its own, not under the judges' signal watch: the run must not keep the handlers for one
        assert kwargs == {"export_under_stopper": False}
        return Run()

    monkeypatch.setattr(recipe_steps, "prepare", prepare)
    monkeypatch.setattr(classifier, "classifier_rows", lambda config: ([{"instruction": "x", "label": "?"}], {}))
    monkeypatch.setattr(classifier, "classifier_examples",
                        lambda *args: ([{"input_ids": [1], "labels": 0}], [{"instruction": "x", "label": "?"}]))
    monkeypatch.setattr(classifier, "_check_export", check)
    return classifier.train_classifier(config)


def _earlier_export(folder):
    """A run folder with run.json and an earlier, finished export."""
    from train.provenance import write_run_json

    write_run_json(folder, config={"recipe": "classifier", "seed": 1}, launch={"world_size": 1})
    (folder / "export").mkdir()
    (folder / "export" / "model.safetensors").write_text("the earlier classifier", encoding="utf-8")
    (folder / "export" / "run.json").write_text('{"result": {"export_dir": "x", "global_step": 2}}', encoding="utf-8")
    return {p.name: p.read_bytes() for p in (folder / "export").iterdir()}, (folder / "run.json").read_bytes()


def _half_a_save(out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text("{}", encoding="utf-8")
    (out_dir / "model-00001-of-00002.safetensors").write_text("half", encoding="utf-8")
    raise _SaveFailed("the disk filled up in the middle of the save")


def _a_whole_save(out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "model.safetensors").write_text("the new classifier", encoding="utf-8")


def _fails(*args, **kwargs):
    raise _SaveFailed("reloaded logits differ")


@pytest.mark.parametrize("save, check", [(_half_a_save, None), (_a_whole_save, _fails)],
                         ids=["the save fails half-way", "the reload check fails"])
def test_an_export_that_fails_leaves_the_earlier_one_whole(tmp_path, monkeypatch, save, check):
    """The classifier is not saved straight into export/: a save cut short there would leave a config.json and half
    the weights, a folder judge-serve and judge-eval take for a finished classifier."""
    before, run_json = _earlier_export(tmp_path)
    with pytest.raises(_SaveFailed):
        _run_the_recipe(tmp_path, monkeypatch, save=save, check=check or (lambda *args: {}))
    assert {p.name: p.read_bytes() for p in (tmp_path / "export").iterdir()} == before
    assert (tmp_path / "run.json").read_bytes() == run_json  # no result recorded for an export not in place


@pytest.mark.parametrize("save, check, cause", [(_half_a_save, None, "the disk filled up in the middle of the save"),
                                                (_a_whole_save, _fails, "reloaded logits differ")],
                         ids=["the save fails half-way", "the reload check fails"])
def test_an_export_that_fails_removes_its_staging_folder_and_names_its_cause(tmp_path, monkeypatch, save, check,
                                                                             cause):
    """A save or check that fails after the staging folder was made leaves no .export.staging/ beside export/ (a
    half-written folder no one would finish); the error raised is the failure's own."""
    from judge.plumbing.atomic_write import staging_dir

    _earlier_export(tmp_path)
    with pytest.raises(_SaveFailed, match=cause):
        _run_the_recipe(tmp_path, monkeypatch, save=save, check=check or (lambda *args: {}))
    assert not staging_dir(tmp_path / "export").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "run.json"]


def test_a_checked_export_replaces_the_earlier_one_with_its_result_recorded(tmp_path, monkeypatch):
    _earlier_export(tmp_path)
    checked = []

    def check(folder, model, tokenizer, probe, dtype):
        checked.append(sorted(p.name for p in folder.iterdir()))
        return {"max_abs_logit_diff": 0.0}

    result = _run_the_recipe(tmp_path, monkeypatch, save=_a_whole_save, check=check)
    assert checked == [["model.safetensors", "tokenizer.json"]]  # checked before it went in place
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["model.safetensors", "run.json",
                                                                       "tokenizer.json"]  # fmt: skip
    assert (tmp_path / "export" / "model.safetensors").read_text(encoding="utf-8") == "the new classifier"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging or earlier copy left
    for run_json in (tmp_path / "run.json", tmp_path / "export" / "run.json"):
        recorded = json.loads(run_json.read_text(encoding="utf-8"))["result"]
        assert (recorded["export_dir"], recorded["global_step"]) == (str(tmp_path / "export"), 3)
    assert result.export_report == {"max_abs_logit_diff": 0.0}
