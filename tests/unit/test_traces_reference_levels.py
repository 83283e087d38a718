"""The traces stage asks no item whose experts' reference no integer verdict could agree with: a median or mean
between the rubric's levels, with no level within ``tolerance`` of it, is skipped before any request and counted.

Run: .venv/bin/python -m pytest tests/unit/test_traces_reference_levels.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.cli import main
from train.synthetic.config import TracesConfig
from train.synthetic.traces import training_records

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"
BASE = {"reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
MODEL = "Pollux-4B-Judge"
#: F: experts 1, 2 (median and mean 1.5, between two levels). G: 0, 2 (median and mean 1.0, a level). H: 0, 0, 2 (mean
#: 2/3, between levels; median 0). K: 2, 2, 1 (median 2; mean 5/3).
RECORDS = [
    {"id": "F", "instruction": "Исправьте: «Я пошол домой.»", "answer": "Я пошёл домой.", "expert_scores": [1, 2],
     **BASE},
    {"id": "G", "instruction": "Исправьте: «Он сказал сказал.»", "answer": "Он сказал.", "expert_scores": [0, 2],
     **BASE},
    {"id": "H", "instruction": "Исправьте: «Ихний дом.»", "answer": "Их дом.", "expert_scores": [0, 0, 2], **BASE},
    {"id": "K", "instruction": "Исправьте: «Ложи на стол.»", "answer": "Клади на стол.", "expert_scores": [2, 2, 1],
     **BASE},
]


def write_inputs(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in RECORDS), encoding="utf-8")
    return path


@pytest.mark.parametrize("agreement, tolerance, asked, skipped", [
    ("median", 0.0, ["G", "H", "K"], ["F"]),          # F 1.5; G 1, H 0, K 2 are levels
    ("mean", 0.0, ["G"], ["F", "H", "K"]),             # F 1.5, H 0.667, K 1.667 lie between levels
    ("mean", 0.4, ["G", "H", "K"], ["F"]),             # |1 - 0.667| and |2 - 1.667| = 0.333 <= 0.4; 1.5 is 0.5 away
    ("mean", 0.5, ["F", "G", "H", "K"], []),           # 1 and 2 are 0.5 from 1.5
    ("mode", 0.0, ["H", "K"], ["F", "G"]),             # F and G tie between two modes (no_unique_mode: skip)
])  # fmt: skip
def test_an_item_no_integer_verdict_could_agree_with_is_not_asked(tmp_path, agreement, tolerance, asked, skipped):
    """An item is asked only when some level of its rubric lies within ``tolerance`` of the experts' reference;
    the others are skipped as reference_not_a_level (or, under the mode, as no_unique_mode)."""
    config = TracesConfig(teacher={"model": MODEL}, agreement=agreement, tolerance=tolerance)
    items, skips = training_records(write_inputs(tmp_path), config)
    assert [record.id for record, _, _ in items] == asked
    reason = "no_unique_mode" if agreement == "mode" else "reference_not_a_level"
    assert [(record.id, why) for record, why in skips] == [(rid, reason) for rid in skipped]


def test_skipped_before_any_request_and_counted(tmp_path):
    """Through the stage with agreement median, tolerance 0: F (median 1.5) costs no request, and is counted in
    summary.json and listed in skipped.jsonl; G, H and K are asked their 2 samples each."""

    def respond(path: str, body: dict):
        return 200, chat_completion("<think>\nОшибок нет, всё верно.\n</think>\n\n2", MODEL, "stop")

    out = tmp_path / "traces"
    config = tmp_path / "traces.yaml"
    config.write_text(json.dumps({
        "teacher": {"name": "pollux-4b", "model": MODEL, "base_url": "", "max_tokens": 64},
        "samples_per_item": 2, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0, "agreement": "median"}))
    with ScriptedEndpoint(respond, model=MODEL) as teacher:
        text = json.loads(config.read_text())
        text["teacher"]["base_url"] = teacher.base_url
        config.write_text(json.dumps(text))
        assert main(["traces", "--config", str(config), "--input", str(write_inputs(tmp_path)),
                     "--output", str(out)]) == 0
        assert len(teacher.bodies("/v1/chat/completions")) == 6
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["items"], summary["traces"]) == (3, 6)
    assert summary["skipped_items_by_reason"] == {"reference_not_a_level": 1}
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [(row["id"], row["skip_reason"]) for row in skipped] == [("F", "reference_not_a_level")]
