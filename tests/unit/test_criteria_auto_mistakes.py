"""criteria: auto, what the walk as a user found unclear or silent: a row naming its criterion and asking for auto
(judged as named, the other field copied on unread), a misspelt classifier method (an error about its path), a head
folder that is not a head export (a five-line tokenizer message naming no folder, or "Repo id must be in the form"),
a tfidf ``weights.npz`` that is not one (numpy's advice to load pickles), and judge-serve's ``"AUTO"`` (a message
saying a string is not allowed at all)."""

from __future__ import annotations

import shutil

import pytest

from eval.judging.config import RunConfig
from judge.checkpoints import TOKENIZER_FILES
from judge.criteria_auto import TfidfClassifier, expand_rows
from judge.criteria_auto.registry import artefact_folder_problem, classifier_from_settings
from judge.criteria_auto.tfidf import default_classifier_path
from judge.plumbing.config_files import ConfigError
from serve.schema import RequestError, parse_judge_request

ROW = {"instruction": "Напиши стихотворение о весне", "answer": "Весна пришла.", "criteria_name": "Креативность",
       "rubrics": "0: нет\n\n1: частично\n\n2: да"}


@pytest.mark.parametrize("criteria, shown", [("auto", "a string 'auto'"), (["Креативность"], "a list")])
def test_a_row_naming_its_criterion_and_asking_for_auto_is_refused_naming_both(shipped_tfidf, criteria, shown):
    with pytest.raises(ValueError) as err:
        expand_rows([ROW | {"criteria": criteria}], shipped_tfidf, "data.jsonl")
    assert str(err.value) == (f"data.jsonl: row 0: field 'criteria' ({shown}) beside criteria_name 'Креативность': a "
                              "row names its criterion or asks for the criteria to be chosen (criteria: auto), not "
                              "both; drop one")
    items, _ = expand_rows([ROW | {"criteria": ""}], shipped_tfidf, "data.jsonl")  # an empty column: none
    assert [item["criteria_name"] for item in items] == ["Креативность"]


@pytest.mark.parametrize("method", ["tfidff", ""])
def test_a_misspelt_classifier_method_is_named_before_its_path(tmp_path, method):
    config = RunConfig(judge="http://127.0.0.1:9/v1", out=str(tmp_path), criteria="auto", criteria_classifier=method)
    with pytest.raises(ConfigError, match=rf"^criteria_classifier: '{method}' is not one of tfidf, llm, head$"):
        config.validate()


def test_a_head_folder_that_is_no_head_export_is_named(tmp_path):
    """Told as judge-serve tells it before its engines start (``artefact_folder_problem``), and a folder that has a
    config.json but is no head checkpoint in one line naming it."""
    with pytest.raises(ValueError, match=rf"^criteria_classifier_path: {tmp_path / 'nope'}: no such folder$"):
        classifier_from_settings("head", str(tmp_path / "nope"))
    (tmp_path / "run").mkdir()  # a run folder, not its export: no config, no tokenizer, no weights
    with pytest.raises(ValueError) as err:
        classifier_from_settings("head", str(tmp_path / "run"))
    assert str(err.value) == (f"criteria_classifier_path: {tmp_path / 'run'}: no config.json, so no head classifier "
                              "(one is judge-train classifier's <run>/export folder)")
    (tmp_path / "run" / "config.json").write_text("{}")  # a config, but no tokenizer and no weights
    with pytest.raises(ValueError) as err:
        classifier_from_settings("head", str(tmp_path / "run"))
    tokenizers = ", ".join(TOKENIZER_FILES)
    assert str(err.value) == (f"criteria_classifier_path: {tmp_path / 'run'}: no tokenizer ({tokenizers}), so no head "
                              "classifier (judge-train classifier's <run>/export folder holds its base model's)")
    (tmp_path / "run" / "tokenizer.json").write_text("{}")  # a config and a tokenizer file that is none, no weights
    with pytest.raises(ValueError) as err:
        classifier_from_settings("head", str(tmp_path / "run"))
    said = str(err.value)
    assert said.startswith(f"criteria_classifier_path (--criteria-classifier-path): the task classifier in "
                           f"{tmp_path / 'run'} cannot be loaded (KeyError: 'added_tokens')")
    assert said.endswith("a head classifier is judge-train classifier's <run>/export folder") and "\n" not in said


@pytest.mark.parametrize("weights", [None, b"not an npz at all"])
def test_a_tfidf_weights_file_missing_or_not_one_is_named_with_the_way_out(tmp_path, weights):
    folder = tmp_path / "clf"
    shutil.copytree(default_classifier_path(), folder)
    if weights is None:
        (folder / "weights.npz").unlink()
    else:
        (folder / "weights.npz").write_bytes(weights)
    with pytest.raises(ValueError) as err:
        TfidfClassifier.load(folder)
    said = str(err.value)
    assert said.startswith(f"tfidf: {folder / 'weights.npz'}") or said.startswith(f"tfidf: no weights.npz in {folder}")
    assert said.endswith(f"retrain it with `judge-train criteria-classifier --out {folder}`")
    assert "pickle" not in said


@pytest.mark.parametrize("criteria", ["AUTO", "Auto"])
def test_judge_serve_names_auto_for_a_string_that_is_almost_it(criteria):
    with pytest.raises(RequestError) as err:
        parse_judge_request({"model": "judge", "items": [{"instruction": "a", "answer": "b", "criteria": criteria}]})
    assert str(err.value) == (f"items[0].criteria: must be a list of criteria or \"auto\" (lower case), got a string "
                              f"'{criteria}'")


def test_items_decided_at_the_task_type_carry_the_type_alone(shipped_tfidf):
    """The shipped classifier is unsure of this instruction's leaf (its share under the leaf threshold) and decides
    at the task type: the items are judged on the type's criteria, and carried the leaf it rejected as their
    task_subtype and task_subsubtype (a brief retelling of a journalistic text), where fallback rows and the llm
    method's type-level choices carry none."""
    row = {"id": "a3", "instruction": "Перескажи кратко содержание романа «Война и мир».",
           "answer": "Война, мир, любовь."}
    items, choices = expand_rows([row], shipped_tfidf, "data.jsonl")
    assert choices[0]["level"] == "task_type" and choices[0]["alternatives"]  # the leaf ranked, and not taken
    assert {(item["task_subtype"], item["task_subsubtype"]) for item in items} == {("", "")}
    assert {item["task_type"] for item in items} == {choices[0]["task_type"]} != {""}


def test_a_classifier_calibrated_on_too_few_instructions_is_warned_of(tmp_path, capsys):
    """Nine training rows, two folds: the temperature came out at the end of its search grid and the threshold at 0
    (the classifier never falls back), and a poem request then read "Code creation" at 0.87, all without a word.
    Both are said on stderr and kept in the summary and the artefact's calibration record."""
    import json

    from train.criteria_classifier import main

    rows = [("Напиши функцию на Python, которая считает факториал числа рекурсивно.", "Code creation / Python"),
            ("Реализуй на Python класс стека с методами push и pop.", "Code creation / Python"),
            ("Напиши скрипт на Python, читающий CSV-файл и считающий среднее по столбцу.", "Code creation / Python"),
            ("Подскажи, как правильно ухаживать за орхидеей зимой.", "Advice"),
            ("Посоветуй, как научиться вставать рано утром без будильника.", "Advice"),
            ("Дай рекомендации, как сэкономить на продуктах в большом городе.", "Advice")]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{k}", "instruction": text, "label": label}, ensure_ascii=False) + "\n"
                            for k, (text, label) in enumerate(rows)), encoding="utf-8")
    assert main(["--data", str(data), "--no-bundled", "--folds", "2", "--max-char-features", "2000",
                 "--max-word-features", "500", "--out", str(tmp_path / "clf")]) == 0
    said = capsys.readouterr()
    summary = json.loads(said.out)
    warned = [line.removeprefix("judge-train criteria-classifier: warning: ") for line in said.err.splitlines()
              if line.startswith("judge-train criteria-classifier: warning: ")]
    assert warned and warned == summary["warnings"]
    assert any(w.startswith(f"the fitted temperature {summary['temperature']:g} is at the end of its search grid")
               or w.startswith("the threshold chosen on 6 instructions is 0") for w in warned)
    meta = json.loads((tmp_path / "clf" / "model.json").read_text(encoding="utf-8"))["meta"]
    assert meta["calibration"]["warnings"] == warned


def test_a_tfidf_folder_that_is_no_classifier_is_named_as_judge_serve_names_it(tmp_path):
    """judge-eval said "tfidf: no model.json in nope" for a folder that does not exist and for a file, where
    judge-serve's start says "criteria_classifier_path: ...: no such folder": one line naming the setting, alike in
    both, and a file is called a file."""
    data = tmp_path / "pairs.jsonl"
    data.write_text("{}\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    said = {}
    for name in ("nope", "pairs.jsonl", "empty"):
        with pytest.raises(ValueError) as err:
            classifier_from_settings("tfidf", str(tmp_path / name))
        said[name] = str(err.value)
        assert said[name] == artefact_folder_problem("tfidf", str(tmp_path / name))
    assert said == {"nope": f"criteria_classifier_path: {tmp_path / 'nope'}: no such folder",
                    "pairs.jsonl": f"criteria_classifier_path: {data}: a file, not a tfidf classifier's folder",
                    "empty": f"criteria_classifier_path: {tmp_path / 'empty'}: no model.json, so no tfidf classifier "
                             "(one is judge-train criteria-classifier's --out folder)"}


def test_an_llm_classifier_path_that_is_no_url_is_refused(tmp_path, capsys):
    """The llm method given a folder or a bare name for its endpoint passed every check: each row's request failed
    ("UnsupportedProtocol"), and a run with one row naming its task judged every other row on the fallback set with
    exit 0 and a warning. Refused now, in one line naming the setting, before anything is classified."""
    from eval.cli import main
    from tests.unit.test_eval_cli import ScriptedServer, _run_args

    data = tmp_path / "pairs.jsonl"
    data.write_text('{"instruction": "Дай совет", "answer": "Спите."}\n', encoding="utf-8")
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run", "--criteria", "auto", "--criteria-classifier",
                              "llm", "--criteria-classifier-model", "m", "--criteria-classifier-path",
                              "localhost:8000/v1")) == 2
    assert capsys.readouterr().err.strip().endswith(
        "judge-eval run: error: criteria_classifier_path: localhost:8000/v1: not an http(s) URL; the llm method's is "
        "its endpoint's OpenAI-compatible base URL (http://host:8000/v1)")
    assert not (tmp_path / "run").exists()


def test_a_classifier_folder_of_the_other_method_or_its_file_is_named_as_such(tmp_path):
    """The shipped tfidf folder given to the head method was "no config.json, so no head classifier", and its
    model.json given for the folder "a file, not a tfidf classifier's folder": both true, neither saying what to give
    instead. Now the first names the method the folder is for, the second the folder that holds the file."""
    from judge.criteria_auto import default_classifier_path

    shipped = default_classifier_path()
    assert artefact_folder_problem("head", str(shipped)) == (
        f"criteria_classifier_path: {shipped}: no config.json, so no head classifier (one is judge-train classifier's "
        "<run>/export folder); it holds a model.json, as a tfidf classifier's folder does: criteria_classifier tfidf "
        "reads it")
    assert artefact_folder_problem("tfidf", str(shipped / "model.json")) == (
        f"criteria_classifier_path: {shipped / 'model.json'}: a file, not a tfidf classifier's folder; name the "
        f"folder that holds it, {shipped}")
    config = tmp_path / "export" / "config.json"
    config.parent.mkdir()
    config.write_text("{}", encoding="utf-8")
    assert artefact_folder_problem("head", str(config)) == (
        f"criteria_classifier_path: {config}: a file, not a head classifier's folder; name the folder that holds it, "
        f"{config.parent}")
