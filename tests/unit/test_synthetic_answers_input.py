"""The answers stage refuses an instruction without a known task type, or a blank one, before any request: annotate
refused such a row only after its answers were paid for. The endpoint here answers nothing (no server at its
address), so a request would fail the run otherwise than by the refusal."""

from __future__ import annotations

import json

import pytest

from train.synthetic.config import AnswersConfig


@pytest.mark.parametrize("bad_row, message", [
    ({"id": "b", "instruction": "Составьте план"}, "field 'task_type': missing: "),
    ({"id": "b", "instruction": "Составьте план", "task_type": "Nonexistent type"}, "field 'task_type': 'Nonexistent type'"),
    ({"id": "b", "instruction": "", "task_type": "Plans"}, "field 'instruction': blank"),
    ({"id": "b", "instruction": "Выпишите", "task_type": "Extract", "task_subtype": "Nonexistent subtype"},
     "field 'task_subtype': task type 'Extract' has no subtype 'Nonexistent subtype'"),
    ({"id": "b", "instruction": "Составьте план", "task_type": "Plans"}, "field 'task_subtype': task 'Plans' names 3 "),
])
def test_a_row_annotate_would_refuse_is_refused_before_any_request(tmp_path, bad_row, message):
    from judge import RecordError
    from train.synthetic.answers import run_answers

    rows = [{"id": "a", "instruction": "Напишите план", "task_type": "Plans", "task_subtype": "Road map"}, bad_row]
    path = tmp_path / "dedup.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = AnswersConfig(answer_models=[{"model": "m", "base_url": "http://127.0.0.1:9/v1"}], max_retries=0)
    with pytest.raises(RecordError) as err:
        run_answers(config, path, tmp_path / "out")
    assert str(err.value).startswith(f"{path}: line 2: {message}")
    assert not (tmp_path / "out" / "journal.jsonl").exists()
