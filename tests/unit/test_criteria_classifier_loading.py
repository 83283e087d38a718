"""judge-eval run --criteria auto with a classifier artefact that cannot be loaded: one line naming
--criteria-classifier-path and the file, exit 2, never a traceback."""

from __future__ import annotations

import judge.criteria_auto.registry as registry
from eval.cli import main


def test_a_head_folder_without_its_weights_is_one_line_naming_the_flag(tmp_path, monkeypatch, capsys):
    """transformers refuses a head folder holding config.json alone with an OSError, which judge-eval run re-raised
    as a connection's error would be (a traceback); it is the user's artefact: named by its flag, exit 2."""
    head = tmp_path / "head"
    head.mkdir()
    (head / "config.json").write_text("{}", encoding="utf-8")
    (head / "tokenizer.json").write_text("{}", encoding="utf-8")  # past judge-serve's look before its engines start

    class NoWeights:  # transformers' refusal, without loading transformers
        def __init__(self, path, **_kwargs):
            raise OSError(f"Error no file named model.safetensors, or pytorch_model.bin, found in directory {path}.\n"
                          "Check that the folder holds a checkpoint.")

    monkeypatch.setattr(registry, "HeadClassifier", NoWeights)
    code = main(["run", "--judge", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run"), "--criteria", "auto",
                 "--criteria-classifier", "head", "--criteria-classifier-path", str(head), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines()[-1] == (
        f"judge-eval run: error: criteria_classifier_path (--criteria-classifier-path): the task classifier in {head} "
        f"cannot be loaded (Error no file named model.safetensors, or pytorch_model.bin, found in directory {head}.); "
        "a head classifier is judge-train classifier's <run>/export folder")
    assert "Traceback" not in err
