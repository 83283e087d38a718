"""A resumed ``criteria: auto`` expansion reuses a recorded task choice only when the classifier asked now is the
one that made it (``classifier_identity``: a tfidf artefact's weights, a head export's files, an llm model and
request settings, each with its threshold; not an llm endpoint's address), and reads its ``task_choices.jsonl`` naming the line of a record it cannot take."""

from __future__ import annotations

import json
import logging

import pytest

from judge.criteria_auto import TfidfClassifier, choose_from_scores, expand_file
from judge.criteria_auto.expansion import classifier_identity
from judge.criteria_auto.llm import LLMClassifier
from judge.criteria_auto.policy import TaskChoice
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

ROWS = [{"id": "a", "instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."},
        {"id": "b", "instruction": "Напиши стихотворение о весне", "answer": "Весна пришла."}]  # fmt: skip


class _Named:
    """Always the Advice leaf at 0.9, under a name and identity the test gives; records what it was asked."""

    threshold = 0.5

    def __init__(self, name: str, identity: str | None):
        self.name, self.asked = name, []
        if identity is not None:
            self.identity = identity

    def predict_proba(self, instructions):
        return [{"Advice": 0.9} for _ in instructions]

    def choose(self, instruction, answer=None, top_k=3):
        self.asked.append(instruction)
        return choose_from_scores({"Advice": 0.9}, self.name, self.threshold, top_k)


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_a_choice_made_by_another_classifier_of_the_same_name_is_not_reused(tmp_path, caplog):
    """Two tfidf artefacts under one path (a retrain in place) are one name and two identities: every row is asked
    again (0 reused), and a warning counts them; the same identity reuses both."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    _write(src, ROWS)
    expand_file(src, out, _Named("tfidf", "weights A"))
    recorded = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["classifier"] for r in recorded] == ["weights A", "weights A"]
    other = _Named("tfidf", "weights B")
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        expand_file(src, out, other, resume=True)
    assert other.asked == [ROWS[0]["instruction"], ROWS[1]["instruction"]]
    assert "reused the recorded task choice of 0 rows, classified 2 anew" in caplog.text
    assert "2 rows' recorded task choices were made by another classifier" in caplog.text
    same = _Named("tfidf", "weights B")
    expand_file(src, out, same, resume=True)
    assert same.asked == []


def test_a_record_without_a_classifier_identity_is_classified_again(tmp_path, caplog):
    """A record written before records carried the classifier (no ``classifier`` field) says nothing of which
    classifier made it: its row is asked again, and the warning counts it."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    _write(src, ROWS[:1])
    expand_file(src, out, _Named("tfidf", "weights A"))
    old = [{k: v for k, v in json.loads(line).items() if k != "classifier"}
           for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    _write(out / "task_choices.jsonl", old)
    again = _Named("tfidf", "weights A")
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        expand_file(src, out, again, resume=True)
    assert again.asked == [ROWS[0]["instruction"]]
    assert "1 rows' recorded task choices were made by another classifier" in caplog.text


def test_the_identities_of_the_shipped_methods_follow_what_moves_a_choice():
    """tfidf: the same artefact loaded twice is one identity, another threshold another; llm: another model, guided
    parameter, max_tokens or threshold is another identity, another endpoint address the same; a classifier that
    states none is known by its name."""
    shipped = TfidfClassifier.load()
    assert classifier_identity(shipped) == classifier_identity(TfidfClassifier.load())
    assert classifier_identity(shipped) != classifier_identity(TfidfClassifier.load(threshold=0.5))
    assert json.loads(shipped.identity)["method"] == "tfidf" and len(json.loads(shipped.identity)["weights_sha256"]) == 64
    llm = LLMClassifier("http://127.0.0.1:8000/v1", "judge-a")
    assert llm.identity != LLMClassifier("http://127.0.0.1:8000/v1", "judge-b").identity
    assert llm.identity == LLMClassifier("http://10.0.0.7:8001/v1", "judge-a").identity
    assert llm.identity != LLMClassifier("http://127.0.0.1:8000/v1", "judge-a", guided_param="guided_choice").identity
    assert llm.identity != LLMClassifier("http://127.0.0.1:8000/v1", "judge-a", max_tokens=16).identity
    assert llm.identity != LLMClassifier("http://127.0.0.1:8000/v1", "judge-a", threshold=0.6).identity
    assert classifier_identity(_Named("fixed", None)) == "fixed"


def test_an_unknown_field_in_a_choice_record_names_the_file_and_line(tmp_path):
    """A record with a field no choice record has (a hand edit, another tool's file) was a bare TypeError from the
    TaskChoice constructor; it is refused naming the file, the line and the field, before anything is written."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    _write(src, ROWS)
    expand_file(src, out, _Named("tfidf", "weights A"))
    lines = (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()
    _write(out / "task_choices.jsonl", [json.loads(lines[0]), {**json.loads(lines[1]), "colour": "red"}])
    with pytest.raises(ValueError, match=r"task_choices\.jsonl: line 2: unknown field\(s\) \['colour'\]"):
        expand_file(src, out, _Named("tfidf", "weights A"), resume=True)
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['colour'\]"):
        TaskChoice.from_dict({**choose_from_scores({"Advice": 0.9}, "x").to_dict(), "colour": "red"})


def test_a_record_of_an_older_version_without_level_reads_back():
    """from_dict stays tolerant of fields older records lack: ``level`` and ``task_type_probability`` default."""
    row = choose_from_scores({"Advice": 0.9}, "x").to_dict()
    del row["level"], row["task_type_probability"], row["zero_shot"]
    choice = TaskChoice.from_dict(row)
    assert (choice.label, choice.level, choice.task_type_probability) == ("Advice", "leaf", None)


def _advice(path, body):
    """Advice (a task type of one leaf) at logprob -0.01, whatever the instruction."""
    answer = chat_completion("Advice", body["model"])
    answer["choices"][0]["logprobs"] = {"content": [{"token": "Advice", "logprob": -0.01}]}
    return 200, answer


def test_the_same_llm_model_at_a_new_address_keeps_its_recorded_choices(tmp_path):
    """The endpoint moved (another port, another host): every row was classified again, and rows whose choice moved
    were judged again. The model, its request and threshold are the same: the new endpoint is asked nothing."""
    src, out = tmp_path / "data.jsonl", tmp_path / "out"
    _write(src, ROWS)
    with ScriptedEndpoint(_advice) as first:
        expand_file(src, out, LLMClassifier(first.base_url, "judge-a"))
        assert len(first.requests) == 2  # one level each: Advice has no subtype
    with ScriptedEndpoint(_advice) as moved:
        expand_file(src, out, LLMClassifier(moved.base_url, "judge-a"), resume=True)
        assert moved.requests == []
    with ScriptedEndpoint(_advice) as other_model:
        expand_file(src, out, LLMClassifier(other_model.base_url, "judge-b"), resume=True)
        assert [b["model"] for _, b in other_model.requests] == ["judge-b", "judge-b"]
