"""``judge-eval mera ruhumaneval``'s ``generations.jsonl``, against a scripted endpoint at the HTTP boundary: a sample
whose answer holds no text (reasoning cut by ``max_tokens``, a refusal part) fails alone, as ``not_generated`` with
its reason, the task's other samples run and scored; a progress row a resume cannot read stops the rerun with exit 2,
one line naming the file, line and field, before the endpoint is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera.humaneval import load_tasks
from tests.support.mera_humaneval import SAMPLE
from tests.support.scripted_endpoint import ScriptedEndpoint

TASK = load_tasks(SAMPLE)[0]  # greatest_common_divisor
THINKING = [{"type": "thinking", "thinking": [{"type": "text", "text": "Алгоритм Евклида..."}]}]
REFUSAL = [{"type": "refusal", "refusal": "Не могу."}]


def _three_choices(path: str, body: dict) -> tuple[int, dict]:
    """One chat answer of three choices: the reference solution whole, reasoning cut by max_tokens, a refusal."""
    choices = [(TASK.function + TASK.canonical_solution, "stop"), (THINKING, "length"), (REFUSAL, "stop")]
    return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": i, "message": {"role": "assistant", "content": content}, "finish_reason": why}
                             for i, (content, why) in enumerate(choices)],
                 "usage": {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}}  # fmt: skip


def _run(endpoint: ScriptedEndpoint, out: Path) -> int:
    return cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(SAMPLE),
                     "--out", str(out), "--limit", "1", "--n", "3", "--k", "1", "2", "3", "--mode", "chat",
                     "--extraction", "lenient", "--max-retries", "0"])  # fmt: skip


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_sample_without_answer_text_fails_alone(tmp_path, sandbox_user):
    """Of the three samples one request returned, the reasoning cut by max_tokens and the refusal part are each
    not_generated with its reason; the reference solution still runs and passes: c = 1 of n = 3, so pass@1 = 1/3,
    pass@2 = 1 - C(2,2)/C(3,2) = 2/3, pass@3 = 1 (the whole task was refused before, c = 0 and every pass@k 0)."""
    out = tmp_path / "run"
    with ScriptedEndpoint(_three_choices) as endpoint:
        assert _run(endpoint, out) == 0
    (body,) = endpoint.bodies("/v1/chat/completions")
    assert body == {"model": "scripted", "messages": [{"role": "user", "content": TASK.prompt}], "n": 3,
                    "temperature": 0.6, "max_tokens": 256, "seed": 1234}  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["pass@k"] == pytest.approx({"pass@1": 1 / 3, "pass@2": 2 / 3, "pass@3": 1.0})
    assert metrics["per_task"] == [{"task_id": "0", "n": 3, "c": 1, "errors": {"not_generated": 2}}]
    (record,) = _rows(out / "generations.jsonl")
    not_text = "the endpoint's message content is not text: a list of parts (refusal)"
    assert record["sample_failures"] == [None, "reasoning not finished", not_text]
    assert record["completions"][1:] == ["", ""] and record["raw"][1:] == [None, None]
    assert record["finish_reasons"] == ["stop", "length", "stop"] and "error" not in record
    assert [(e["sample"], e["status"], e["detail"] if e["program"] is None else "ran") for e in
            _rows(out / "executions.jsonl")] == [
        (0, "passed", "ran"),
        (1, "not_generated", "the sample's answer holds no code: reasoning not finished"),
        (2, "not_generated", f"the sample's answer holds no code: {not_text}")]  # fmt: skip

    # The rerun resumes from that record: nothing asked again, the same figures.
    with ScriptedEndpoint(_three_choices) as endpoint:
        assert _run(endpoint, out) == 0
    assert endpoint.requests == []
    assert json.loads((out / "metrics.json").read_text())["pass@k"] == metrics["pass@k"]


def _think_in_content(path: str, body: dict) -> tuple[int, dict]:
    """Reasoning sent inside the content, as a server without a reasoning parser sends it: an answer after a closed
    ``<think>`` block, one cut by max_tokens inside its ``<think>``, and the reference solution alone."""
    solved = f"<think>Алгоритм Евклида.</think>\n```python\n{TASK.function}{TASK.canonical_solution}```\n"
    choices = [(solved, "stop"), ("<think>Нужно найти наибольший общий делитель. Сначала", "length"),
               (TASK.function + TASK.canonical_solution, "stop")]
    return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": i, "message": {"role": "assistant", "content": content}, "finish_reason": why}
                             for i, (content, why) in enumerate(choices)],
                 "usage": {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130}}  # fmt: skip


def test_an_answer_cut_inside_think_in_its_content_is_not_generated_as_a_reasoning_field_is(tmp_path, sandbox_user):
    """Under --extraction lenient an answer cut by max_tokens inside a ``<think>`` of its content holds no code: it is
    not_generated, "reasoning not finished", as the same event is when the reasoning comes in a field of its own,
    never the stub run alone and counted a wrong answer; a closed block's answer runs and passes."""
    out = tmp_path / "run"
    with ScriptedEndpoint(_think_in_content) as endpoint:
        assert _run(endpoint, out) == 0
    assert [(e["sample"], e["status"], e["detail"] if e["program"] is None else "ran") for e in
            _rows(out / "executions.jsonl")] == [
        (0, "passed", "ran"),
        (1, "not_generated", "the sample's answer holds no code: reasoning not finished"),
        (2, "passed", "ran")]  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["per_task"] == [{"task_id": "0", "n": 3, "c": 2, "errors": {"not_generated": 1}}]


@pytest.mark.parametrize("edit, said", [
    (lambda row: row.pop("completions"), "generations.jsonl:1: field 'completions' is missing"),
    (lambda row: row.pop("task_id"), "generations.jsonl:1: field 'task_id' is missing"),
    (lambda row: row.update(completions="def f(): pass"),
     "generations.jsonl:1: field 'completions' should be a list, got a string"),
    (lambda row: row.update(completions=[None, "", ""]),
     "generations.jsonl:1: field 'completions' should be a list of strings, holds null"),
    (lambda row: row.update(n_missing=4), "generations.jsonl:1: field 'n_missing' should be from 0 to 3"),
    # Fewer or more completions than the run's n = 3: pass@k would be taken over another n, or not at all.
    (lambda row: row.update(completions=["", ""]),
     "generations.jsonl:1: field 'completions' holds 2 completions, not the run's n of 3"),
    (lambda row: row.update(completions=[]),
     "generations.jsonl:1: field 'completions' holds 0 completions, not the run's n of 3"),
    (lambda row: row.update(completions=[""] * 4),
     "generations.jsonl:1: field 'completions' holds 4 completions, not the run's n of 3"),
    (lambda row: row.update(sample_failures=[None]),
     "generations.jsonl:1: field 'sample_failures' should be a list of 3 strings or nulls"),
])  # fmt: skip
def test_a_progress_row_a_resume_cannot_read_is_refused_naming_file_line_and_field(tmp_path, sandbox_user, capsys,
                                                                                   edit, said):
    """A generations.jsonl row without a field the run reads (it ended in a KeyError traceback) is a resume mismatch:
    exit 2, one line naming the file, the line and the field, before the endpoint is asked, and before run.json is
    written (it gained a launch and a new start time for a run that never ran)."""
    out = tmp_path / "run"
    with ScriptedEndpoint(_three_choices) as endpoint:
        assert _run(endpoint, out) == 0
    run_record = (out / "run.json").read_bytes()
    (row,) = _rows(out / "generations.jsonl")
    edit(row)
    (out / "generations.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    capsys.readouterr()
    with ScriptedEndpoint(_three_choices) as endpoint:
        assert _run(endpoint, out) == 2
    assert endpoint.requests == [] and endpoint.gets == []
    (error,) = [line.removeprefix("judge-eval mera ruhumaneval: error: ")
                for line in capsys.readouterr().err.splitlines() if line.startswith("judge-eval mera ")]
    assert error.startswith(f"{out / said}") and error.endswith("--overwrite to start over") and "\n" not in error
    assert (out / "run.json").read_bytes() == run_record
