"""judge-eval run --criteria auto with a classifier artefact that cannot be loaded: one line naming
--criteria-classifier-path and the file, exit 2, never a traceback."""

from __future__ import annotations

import pytest

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


def _installed_scikit_learn(monkeypatch, version: str) -> None:
    """Make the package metadata say scikit-learn ``version`` is installed (what the loader reads), so that the
    version tests do not hang on whichever scikit-learn this environment has."""
    from importlib import metadata

    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: version if name == "scikit-learn" else real(name))


def _shipped_build() -> tuple[str, str]:
    """The major and minor version of the scikit-learn the shipped tfidf artefact was built with."""
    import json

    from judge.criteria_auto import default_classifier_path

    spec = json.loads((default_classifier_path() / "model.json").read_text(encoding="utf-8"))
    major, minor = spec["versions"]["scikit-learn"].split(".")[:2]
    return major, minor


def _warnings_said(caplog) -> list[str]:
    import logging

    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# one minor version apart (the case the warning is for: 1.8 against 1.9), and another major version
@pytest.mark.parametrize("built", ["0.24.2", "1.8.3", "1.10.0"])
def test_a_tfidf_artefact_built_by_another_scikit_learn_is_warned_of_naming_both_versions(tmp_path, caplog,
                                                                                          monkeypatch, built):
    """The artefact holds no pickle: its vectorizers are rebuilt by the scikit-learn installed, whose tokenizing
    and weighting then make the features. One built by another minor version loads (its weights are plain arrays),
    but it is said, naming the file and both versions, so that moved choices are not read as the model's own."""
    import logging

    from judge.criteria_auto import TfidfClassifier

    _installed_scikit_learn(monkeypatch, "1.9.1")
    folder = _artefact_built_with(tmp_path, built)
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.tfidf"):
        TfidfClassifier.load(folder)
    said = _warnings_said(caplog)
    assert len(said) == 1
    assert str(folder / "model.json") in said[0]
    assert f"scikit-learn {built}" in said[0] and "scikit-learn 1.9.1" in said[0]
    assert f"judge-train criteria-classifier --out {folder}" in said[0]


def test_the_shipped_tfidf_artefact_under_another_scikit_learn_is_not_told_to_be_rebuilt_in_place(caplog,
                                                                                                  monkeypatch):
    """The shipped artefact's folder is the package's own (under site-packages in a wheel install): the warning
    told every judge-serve and judge-eval start to overwrite it with `judge-train criteria-classifier --out
    <that folder>`. It says instead which scikit-learn to install, or to build one's own and pass its folder."""
    import logging

    from judge.criteria_auto import TfidfClassifier, default_classifier_path

    major, minor = _shipped_build()
    _installed_scikit_learn(monkeypatch, f"{major}.{int(minor) + 1}.0")
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.tfidf"):
        TfidfClassifier.load()
    said = _warnings_said(caplog)
    assert len(said) == 1
    assert f"--out {default_classifier_path()}" not in said[0]
    assert f"install scikit-learn {major}.{minor}.*" in said[0]
    assert "judge-train criteria-classifier --out DIR" in said[0] and "--criteria-classifier-path DIR" in said[0]


def test_a_tfidf_artefact_of_this_scikit_learn_minor_version_loads_without_a_word(tmp_path, caplog, monkeypatch):
    """A patch release apart (or the shipped build under its own minor version) is no warning: one on every start
    would teach users to ignore it."""
    import logging

    from judge.criteria_auto import TfidfClassifier

    major, minor = _shipped_build()
    _installed_scikit_learn(monkeypatch, f"{major}.{minor}.99")
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.tfidf"):
        TfidfClassifier.load(_artefact_built_with(tmp_path, f"{major}.{minor}.0"))
        TfidfClassifier.load()
    assert _warnings_said(caplog) == []


@pytest.mark.parametrize("built, warned", [("1.9rc1", False), ("1.91", True), ("1.90.0", True), ("dev", False),
                                           ("", False)])
def test_the_scikit_learn_versions_compared_are_their_major_and_minor_parts(tmp_path, caplog, monkeypatch, built,
                                                                           warned):
    """Each version's major and minor parts are read at its start and compared as numbers' texts: 1.9rc1 is 1.9's,
    1.91 and 1.90 are not; a recorded version without them (a hand-made model.json) is no claim either way."""
    import logging

    from judge.criteria_auto import TfidfClassifier

    _installed_scikit_learn(monkeypatch, "1.9.1")
    with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.tfidf"):
        TfidfClassifier.load(_artefact_built_with(tmp_path, built))
    assert len(_warnings_said(caplog)) == int(warned)
