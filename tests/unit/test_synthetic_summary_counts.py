"""The synthetic stages' accounting: a teacher output longer than its request's ``max_tokens`` could have produced
is a named failure (``verdict_oversized``), never a kept trace or label; and every input row ends in summary.json as
a kept row, a counted drop or a counted left-out (items past ``--limit``, exact duplicate input rows).

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_summary_counts.py -q -n 0
"""

from __future__ import annotations

import json

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"
REASONING = "Ответ грамотный, ошибок в тексте нет совсем."
MAX_TOKENS = 64


def _record(rid: str, instruction: str, scores: list[int]) -> dict:
    return {"id": rid, "instruction": instruction, "answer": "раз", "reference_answer": "", "expert_scores": scores,
            "criteria_name": "Грамотность", "task_type": "Editing", "rubrics": RUBRICS}


def _run_traces(tmp_path, rows: list[dict], replies, **settings) -> dict:
    from train.synthetic.cli import main

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    with ScriptedEndpoint(lambda path, body: (200, replies(body)), model="teacher") as server:
        config = tmp_path / "traces.yaml"
        config.write_text(json.dumps({"teacher": {"name": "t", "model": "teacher", "base_url": server.base_url,
                                                  "max_tokens": MAX_TOKENS},
                                      "samples_per_item": 1, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0,
                                      **settings}))
        assert main(["traces", "--config", str(config), "--input", str(source), "--output", str(tmp_path / "out")]) == 0
    return json.loads((tmp_path / "out" / "summary.json").read_text())


def test_traces_fails_a_reasoning_longer_than_max_tokens_allows(tmp_path):
    """A server that ignored max_tokens 64 returned megabytes of reasoning with finish_reason stop: it was kept as a
    training trace. Now it is failed as verdict_oversized, written to failed.jsonl without a reasoning."""
    from train.synthetic.traces import CHARS_PER_TOKEN

    huge = "<think>" + (REASONING + " ") * (MAX_TOKENS * CHARS_PER_TOKEN // len(REASONING) + 1) + "</think>2"
    summary = _run_traces(tmp_path, [_record("A", "Исправьте: «раз»", [2])],
                          lambda body: chat_completion(huge, "teacher", "stop"))
    assert (summary["kept"], summary["failed"], summary["failed_by_reason"]) == (0, 1, {"verdict_oversized": 1})
    failed = json.loads((tmp_path / "out" / "failed.jsonl").read_text())
    assert failed["fail_reason"] == "verdict_oversized" and "reasoning" not in failed
    assert f"max_tokens {MAX_TOKENS} x {CHARS_PER_TOKEN}" in failed["error"]


def test_traces_keeps_an_answer_within_the_bound():
    """The bound refuses only what the limit could not produce: an answer of max_tokens x CHARS_PER_TOKEN
    characters is still read."""
    import judge
    from train.synthetic.traces import CHARS_PER_TOKEN, longer_than_asked, trace_outcome

    bound = MAX_TOKENS * CHARS_PER_TOKEN
    assert not longer_than_asked(bound, MAX_TOKENS) and longer_than_asked(bound + 1, MAX_TOKENS)
    assert not longer_than_asked(10**9, None)
    done = {"ok": True, "content": "2", "reasoning": REASONING, "finish_reason": "stop", "error": "",
            "max_tokens": MAX_TOKENS}
    assert trace_outcome(done, judge.Scale((0, 1, 2)), (2.0,), 0.0)[:2] == ("kept", "agrees")
    # the limit a row was asked with decides, over the one the caller passes
    inline = "<think>" + REASONING * (bound // len(REASONING) + 1) + "</think>2"
    long_done = {**done, "content": inline, "reasoning": ""}
    assert trace_outcome(long_done, judge.Scale((0, 1, 2)), (2.0,), 0.0, max_tokens=10**6)[1] == "verdict_oversized"
    # a reasoning returned apart has its own cap (train.synthetic.client.REASONING_TOKEN_CAP), as the client bounds
    # it: one past max_tokens x 16 beside a bare answer is read, not failed as oversized
    apart = {**done, "reasoning": REASONING * (bound // len(REASONING) + 1)}
    assert len(apart["reasoning"]) > bound
    assert trace_outcome(apart, judge.Scale((0, 1, 2)), (2.0,), 0.0)[:2] == ("kept", "agrees")


def test_traces_summary_counts_rows_past_the_limit_and_exact_duplicates(tmp_path):
    """Items past --limit and exact duplicate input rows were reported on stderr alone: summary.json now counts
    both, and input_rows is the sum of what was asked, skipped, left out as a copy and left out by the limit."""
    a = _record("A", "Исправьте: «раз»", [2])
    rows = [a, a, _record("B", "Исправьте: «два»", [2]), _record("C", "Исправьте: «три»", [2]),
            _record("D", "Исправьте: «четыре»", [])]  # D: no expert scores, skipped
    summary = _run_traces(tmp_path, rows, lambda body: chat_completion("<think>" + REASONING + "</think>2", "teacher"),
                          limit=2)
    assert (summary["items"], summary["kept"], summary["skipped_items"]) == (2, 2, 1)
    assert (summary["input_rows"], summary["duplicate_input_rows"], summary["items_beyond_limit"]) == (5, 1, 1)
    assert summary["input_rows"] == (summary["items"] + summary["skipped_items"] + summary["duplicate_input_rows"]
                                     + summary["items_beyond_limit"])


def _run_annotate(tmp_path, replies: list[str], **settings) -> dict:
    from tests.unit.test_synthetic_stages import _answer_rows
    from train.synthetic.cli import main

    rows = [_answer_rows()[0], {**_answer_rows()[0], "id": "ans-2"}]
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "answers.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "annotate"
    with ScriptedEndpoint(lambda path, body: (200, chat_completion(replies.pop(0), "teacher")), model="teacher") as server:
        config = tmp_path / "annotate.yaml"
        config.write_text(json.dumps({"teacher": {"name": "teacher", "model": "teacher", "base_url": server.base_url,
                                                  "max_tokens": MAX_TOKENS},
                                      "criteria": ["repeats"], "backoff_s": 0.0, "concurrency": 1, **settings}))
        assert main(["annotate", "--config", str(config), "--input", str(tmp_path / "answers"),
                     "--output", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())


def test_annotate_never_keeps_feedback_longer_than_max_tokens_allows(tmp_path):
    """A 12 MB feedback was kept as a label: now it is asked again, and dropped as verdict_oversized if it persists."""
    from train.synthetic.traces import CHARS_PER_TOKEN

    huge = "[FEEDBACK] " + "Повторов нет. " * (MAX_TOKENS * CHARS_PER_TOKEN // 10) + "[RESULT] 2 [END]"
    summary = _run_annotate(tmp_path, [huge, huge, huge, "[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"],
                            max_attempts=2)
    assert (summary["kept"], summary["dropped_by_reason"]) == (1, {"verdict_oversized": 1})
    kept = json.loads((tmp_path / "annotate" / "annotate.jsonl").read_text())
    assert kept["expert_feedback"] == ["Повторов нет, ответ чистый."]


def test_annotate_keeps_a_label_whose_reasoning_apart_runs_past_max_tokens(tmp_path):
    """DeepSeek's deepseek-reasoner bounds only its final answer by max_tokens and returns its reasoning apart
    (reasoning_content), which may run far beyond: a valid label beside such a reasoning was dropped as
    verdict_oversized. The answer alone is held to max_tokens x 16 characters now; the reasoning to its own cap."""
    from tests.unit.test_synthetic_stages import _answer_rows
    from train.synthetic.cli import main
    from train.synthetic.client import CHARS_PER_TOKEN

    reasoning = "Повторов нет. " * (MAX_TOKENS * CHARS_PER_TOKEN // 10)  # 1,428 characters: past 64 x 16
    assert len(reasoning) > MAX_TOKENS * CHARS_PER_TOKEN

    def respond(path: str, body: dict) -> tuple[int, dict]:
        reply = chat_completion("[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]", "teacher")
        reply["choices"][0]["message"]["reasoning_content"] = reasoning
        return 200, reply

    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "answers.jsonl").write_text(json.dumps(_answer_rows()[0], ensure_ascii=False) + "\n")
    out = tmp_path / "annotate"
    with ScriptedEndpoint(respond, model="teacher") as server:
        config = tmp_path / "annotate.yaml"
        config.write_text(json.dumps({"teacher": {"name": "teacher", "model": "deepseek-reasoner",
                                                  "base_url": server.base_url, "max_tokens": MAX_TOKENS},
                                      "criteria": ["repeats"], "backoff_s": 0.0, "concurrency": 1}))
        assert main(["annotate", "--config", str(config), "--input", str(tmp_path / "answers"),
                     "--output", str(out)]) == 0
        assert len(server.requests) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped"]) == (1, 0)
    kept = json.loads((out / "annotate.jsonl").read_text())
    assert (kept["criteria_score"], kept["expert_feedback"]) == (2.0, ["Повторов нет, ответ чистый."])


def test_annotate_summary_counts_verdicts_past_the_limit(tmp_path):
    """Two answers, one criterion each, --limit 1: the verdict not asked is counted, not only logged."""
    summary = _run_annotate(tmp_path, ["[FEEDBACK] Повторов нет. [RESULT] 2 [END]"], limit=1)
    assert (summary["kept"], summary["dropped"]) == (1, 0)
    assert (summary["input_answers"], summary["verdicts"], summary["verdicts_beyond_limit"]) == (2, 2, 1)


def test_answers_summary_counts_answers_past_the_limit(tmp_path):
    """Two instructions, two answers each, --limit 3: the answer not asked is counted, not only logged."""
    from train.synthetic.cli import main

    rows = [{"id": f"ins-{i}", "instruction": f"Исправьте ошибки: «{word}»", "task_type": "Editing"}
            for i, word in enumerate(("раз", "два"))]
    (tmp_path / "dedup").mkdir()
    (tmp_path / "dedup" / "dedup.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    with ScriptedEndpoint(lambda path, body: (200, chat_completion("Ответ.", body["model"])), model="a") as server:
        config = tmp_path / "answers.yaml"
        config.write_text(json.dumps({"answer_models": [{"name": m, "model": m, "base_url": server.base_url}
                                                        for m in ("a", "b")],
                                      "answers_per_instruction": 2, "backoff_s": 0.0, "concurrency": 1, "limit": 3}))
        assert main(["answers", "--config", str(config), "--input", str(tmp_path / "dedup"),
                     "--output", str(tmp_path / "answers")]) == 0
    summary = json.loads((tmp_path / "answers" / "summary.json").read_text())
    assert (summary["kept"], summary["dropped"]) == (3, 0)
    assert (summary["input_instructions"], summary["answers"], summary["answers_beyond_limit"]) == (2, 4, 1)
