"""judge-eval run --criteria auto: (instruction, answer) pairs are judged on the criteria a task classifier chose."""

from __future__ import annotations

import json

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.criteria_auto import load_labelled, training_path
from tests.unit.test_eval_cli import ScriptedServer, _run_args


def test_run_criteria_auto_expands_pairs_and_records_the_choice(tmp_path):
    """With no classifier argument the shipped one chooses: each pair becomes one judged item per chosen criterion
    (ids pair::criterion); the choices are written beside the predictions, and run.json names the expanded items
    so `score` reads them."""
    pairs, _ = load_labelled([training_path()])
    data = tmp_path / "pairs.jsonl"
    data.write_text(
        json.dumps({"id": "p1", "instruction": pairs[0]["instruction"], "answer": "Ответ."}, ensure_ascii=False) + "\n"
        + json.dumps({"id": "p2", "instruction": pairs[1]["instruction"], "answer": "Ещё."}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0
    choices = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["id"] for c in choices] == ["p1", "p2"] and all(c["method"] == "tfidf" for c in choices)
    expected = {f"{c['id']}::{cid}" for c in choices for cid in c["criteria"]}
    assert all(c["level"] in ("leaf", "task_type", "fallback") for c in choices)
    assert {row["id"] for row in read_predictions(out / "predictions.jsonl")} == expected
    run_info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run_info["config"]["data"] == str(out / "auto_items.jsonl")
    records = judge.load_records(out / "auto_items.jsonl")
    assert {r.extra["task_choice"]["label"] for r in records} == {c["label"] for c in choices}


def test_run_criteria_auto_with_an_llm_classifier_needs_its_url(tmp_path):
    """--criteria auto with the llm method but no URL is a config error (exit 2), not a silent plain run."""
    assert main(["run", "--judge", "http://127.0.0.1:9/v1", "--out", str(tmp_path), "--criteria", "auto",
                 "--criteria-classifier", "llm"]) == 2
