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


def _artefact_built_with(tmp_path, version: str):
    """The shipped tfidf artefact, copied, its model.json saying it was built with scikit-learn ``version``."""
    import json

    from judge.criteria_auto import default_classifier_path

    folder = tmp_path / f"built-with-{version}"
    folder.mkdir()
    spec = json.loads((default_classifier_path() / "model.json").read_text(encoding="utf-8"))
    spec["versions"]["scikit-learn"] = version
    (folder / "model.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    (folder / "weights.npz").write_bytes((default_classifier_path() / "weights.npz").read_bytes())
    return folder


def test_a_tfidf_artefact_built_by_another_scikit_learn_is_warned_of_naming_both_versions(tmp_path, caplog):
    """The artefact holds no pickle: its vectorizers are rebuilt by the scikit-learn installed, whose tokenizing
    and weighting then make the features. One built by another minor version loads (its weights are plain arrays),
    but it is said, naming the file and both versions, so that moved choices are not read as the model's own."""
    import logging
    from importlib import metadata

    from judge.criteria_auto import TfidfClassifier

    running = metadata.version("scikit-learn")
    folder = _artefact_built_with(tmp_path, "0.24.2")
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.tfidf"):
        TfidfClassifier.load(folder)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1
    assert str(folder / "model.json") in said[0]
    assert "scikit-learn 0.24.2" in said[0] and f"scikit-learn {running}" in said[0]
    assert f"judge-train criteria-classifier --out {folder}" in said[0]


def test_a_tfidf_artefact_of_this_scikit_learn_minor_version_loads_without_a_word(tmp_path, caplog):
    """A patch release apart (or the shipped build under its own version) is no warning: one on every start would
    teach users to ignore it."""
    import logging
    from importlib import metadata

    from judge.criteria_auto import TfidfClassifier

    major, minor = metadata.version("scikit-learn").split(".")[:2]
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.tfidf"):
        TfidfClassifier.load(_artefact_built_with(tmp_path, f"{major}.{minor}.99"))
        TfidfClassifier.load()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
