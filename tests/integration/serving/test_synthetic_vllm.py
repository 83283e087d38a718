"""judge-train data stages against a real endpoint: vLLM's OpenAI server on the tiny random Qwen2 (slow).

The tiny model's words are noise, so this pins the plumbing, not the content: every request is answered, every job
is accounted for as kept or dropped with a reason, and no unparseable verdict is ever given a score.
"""

from __future__ import annotations

import json
from pathlib import Path


from judge import load_records, load_taxonomy
from train.synthetic.cli import main


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_stages_against_the_tiny_model_under_vllm(vllm_tiny_server, tmp_path, monkeypatch):
    """instructions -> answers -> annotate -> split through vLLM: counts add up, failures are counted, never scored."""
    monkeypatch.setenv("OPENAI_API_KEY", vllm_tiny_server.api_key)  # the engine's key, given as users give it
    endpoint = f'{{model: {vllm_tiny_server.model}, base_url: "{vllm_tiny_server.base_url}", temperature: 0.0, max_tokens: 12}}'
    (tmp_path / "instructions.yaml").write_text(f"generators:\n  - {endpoint}\ntask_types: [Editing]\nbackoff_s: 0.5\n")
    assert main(["instructions", "--config", str(tmp_path / "instructions.yaml"), "--output", str(tmp_path / "instructions")]) == 0
    summary = json.loads((tmp_path / "instructions" / "summary.json").read_text())
    assert summary["kept"] + summary["dropped"] == 3  # Editing: easy, medium, hard
    assert "request_failed" not in summary["dropped_by_reason"]
    assert all(row["ok"] and row["attempts"] == 1 for row in _jsonl(tmp_path / "instructions" / "journal.jsonl"))

    # The noise the tiny model writes is never a well-formed problem, so answers start from written instructions.
    base = {"task_group": "Text Transformation", "task_type": "Editing", "task_subtype": "", "task_subsubtype": "", "difficulty": "easy", "domain": "Общее"}
    rows = [{"id": f"ins-{k}", "instruction": text, **base} for k, text in enumerate(["Исправьте ошибки: «Я пошол домой.»", "Расставьте запятые: «Когда стемнело мы ушли.»"])]
    (tmp_path / "dedup.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    # At temperature 0 the tiny model writes newlines alone, an answer the stage drops as empty; held to a word by
    # vLLM's structured outputs it writes answers that the stages below get to judge.
    answerer = {"model": vllm_tiny_server.model, "base_url": vllm_tiny_server.base_url, "temperature": 0.0,
                "max_tokens": 12, "extra_body": {"structured_outputs": {"regex": "[a-z]{4,12}"}}}
    (tmp_path / "answers.yaml").write_text(json.dumps({"answer_models": [answerer], "backoff_s": 0.5}))
    assert main(["answers", "--config", str(tmp_path / "answers.yaml"), "--input", str(tmp_path / "dedup.jsonl"), "--output", str(tmp_path / "answers")]) == 0
    answers = _jsonl(tmp_path / "answers" / "answers.jsonl") + _jsonl(tmp_path / "answers" / "dropped.jsonl")
    assert sorted(a["instruction_id"] for a in answers) == ["ins-0", "ins-1"]
    assert all(a["answer"].strip() for a in answers), answers
    assert all(a["model_id"] == vllm_tiny_server.model for a in answers)

    (tmp_path / "annotate.yaml").write_text(f"teacher: {endpoint}\nmax_attempts: 2\ncriteria: [censor, repeats]\nbackoff_s: 0.5\n")
    assert main(["annotate", "--config", str(tmp_path / "annotate.yaml"), "--input", str(tmp_path / "answers"), "--output", str(tmp_path / "annotate")]) == 0
    summary = json.loads((tmp_path / "annotate" / "summary.json").read_text())
    n_answers = len(_jsonl(tmp_path / "answers" / "answers.jsonl"))
    assert n_answers == 2, "an answer was dropped: the stages below would check less or nothing"
    assert summary["kept"] + summary["dropped"] == 2 * n_answers
    dropped = _jsonl(tmp_path / "annotate" / "dropped.jsonl")
    assert len(dropped) == summary["dropped"] > 0  # 12 tokens of the free model never close a verdict
    for row in dropped:
        assert row["drop_reason"].startswith("verdict_") and "criteria_score" not in row
        assert len(row["teacher_raw"]) == 2  # asked twice, every raw output kept

    # The same teacher held to the verdict's form by vLLM's structured outputs: every verdict is well-formed, so
    # each (answer, criterion) is a kept row whose score is a level of its own criterion's scale. The regex allows
    # 0 and 1 only, the levels both criteria have (censor 0-1, repeats 0-2).
    form = {"structured_outputs": {"regex": r"\[FEEDBACK\] [a-z]{1,8} \[RESULT\] (0|1) \[END\]"}}
    teacher = {"model": vllm_tiny_server.model, "base_url": vllm_tiny_server.base_url, "temperature": 0.0,
               "max_tokens": 64, "extra_body": form}
    (tmp_path / "formed.yaml").write_text(json.dumps({"teacher": teacher, "max_attempts": 2,
                                                      "criteria": ["censor", "repeats"], "backoff_s": 0.5}))
    assert main(["annotate", "--config", str(tmp_path / "formed.yaml"), "--input", str(tmp_path / "answers"), "--output", str(tmp_path / "formed")]) == 0
    summary = json.loads((tmp_path / "formed" / "summary.json").read_text())
    kept = _jsonl(tmp_path / "formed" / "annotate.jsonl")
    assert summary["kept"] == len(kept) == 2 * n_answers and summary["dropped"] == 0, summary
    assert sorted(row["criterion_id"] for row in kept) == sorted(["censor", "repeats"] * n_answers)
    taxonomy = load_taxonomy()
    for row in kept:
        assert taxonomy.criteria[row["criterion_id"]].scale.contains(row["criteria_score"])

    assert main(["split", "--input", str(tmp_path / "formed"), "--output", str(tmp_path / "split")]) == 0
    assert len(load_records(tmp_path / "split" / "train.jsonl")) + len(load_records(tmp_path / "split" / "validation.jsonl")) == summary["kept"] > 0
