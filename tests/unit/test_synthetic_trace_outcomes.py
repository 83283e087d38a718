"""The traces stage's decisions on teacher answers a quick reading gets wrong (``train.synthetic.traces``).

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_trace_outcomes.py -q
"""

from __future__ import annotations

import judge
from train.synthetic.traces import bare_answer, trace_outcome

SCALE = judge.Scale((0, 1, 2))
FIRST = "Ответ содержит одну ошибку, значит оценка 1."
SECOND = "Перечитал: ошибки нет, значит оценка 2."


def outcome(content: str, reasoning: str | None = None):
    done = {"ok": True, "content": content, "reasoning": reasoning, "finish_reason": "stop", "error": None}
    return trace_outcome(done, SCALE, (2.0,), 0.0)


def test_an_answer_with_a_second_reasoning_block_is_not_kept_as_the_first_block_s_trace():
    """The parser keeps only the first <think> block as the trace (or the server's reasoning field, when it returned
    one), and reads the integer the answer ends with. A teacher that reasoned twice (first for 1, then for 2) and
    answered 2 was kept as a trace whose reasoning argued for 1 and whose verdict is 2: the reasoning that reached the
    2 was silently cut out of the training row. Such an answer is more than an integer after its reasoning."""
    two_blocks = f"<think>\n{FIRST}\n</think>\n\n<think>\n{SECOND}\n</think>\n\n2"
    verdict = judge.parse_integer_verdict(two_blocks, None, SCALE)
    assert (verdict.score, verdict.feedback) == (2.0, FIRST)  # what would have been trained: FIRST, then 2
    assert outcome(two_blocks)[:2] == ("dropped", "answer_not_bare")
    # The reasoning came apart and the content holds another block: the field is the trace, the block is lost.
    assert outcome(f"<think>{SECOND}</think>2", reasoning=FIRST)[:2] == ("dropped", "answer_not_bare")
    # Text before the block is part of the answer the parser reads ("Хм 2"), no bare integer.
    assert outcome(f"Хм <think>{SECOND}</think>2")[:2] == ("dropped", "answer_not_bare")
    # One block, inline, opened by the teacher or by the prompt, or the reasoning apart: kept as before.
    assert outcome(f"<think>\n{SECOND}\n</think>\n\n2")[:2] == ("kept", "agrees")
    assert outcome(f"{SECOND}\n</think>\n\n2")[:2] == ("kept", "agrees")
    assert outcome("2", reasoning=SECOND)[:2] == ("kept", "agrees")


def test_bare_answer_reads_the_answer_after_the_one_reasoning_block():
    """Content-only (as the integer SFT reads a row's ``teacher_content``) and with the reasoning apart."""
    assert bare_answer(f"<think>{SECOND}</think> 2") is True
    assert bare_answer(f"<think>{FIRST}</think> <think>{SECOND}</think>2") is False
    assert bare_answer(f"<think>{SECOND}</think>2", reasoning=FIRST) is False
    assert bare_answer("2", reasoning=FIRST) is True


def test_items_that_give_no_trace_are_counted_and_said(tmp_path, capsys):
    """An item asked k times that yields no kept trace leaves the SFT data; when every one of its answers failed (an
    outage, every answer cut), it left for want of answers, not because the teacher disagreed. Both were unsaid:
    the summary held only ``items_with_a_kept_trace`` and the last line neither. By hand, 3 items x 2 samples:
    A (mode 2) "2" kept; B (mode 1) "0" and "2" disagree; C (mode 0) two 500s. Items 3, with a trace 1, without 2,
    every trace failed 1 (C)."""
    import json

    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
    from train.synthetic.cli import main

    rubrics = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"
    base = {"reference_answer": "", "criteria_name": "Грамотность", "rubrics": rubrics, "task_type": "Editing"}
    records = [{"id": item, "instruction": f"Исправьте текст {item}.", "answer": f"Ответ {item}.",
                "expert_scores": [score], **base} for item, score in (("A", 2), ("B", 1), ("C", 0))]  # fmt: skip
    script = {"A": [("2", "Ошибок нет, всё верно."), ("2", "Ошибок нет, всё верно.")],
              "B": [("0", "Ошибок очень много."), ("2", "Ошибок нет вовсе.")], "C": [500, 500]}  # fmt: skip
    prompts = {judge.render_prompt(row): row["id"] for row in records}

    def respond(path: str, body: dict):
        answer = script[prompts[body["messages"][-1]["content"]]].pop(0)
        if isinstance(answer, int):
            return answer, {"error": {"message": "scripted failure", "type": "server_error"}}
        body = chat_completion(answer[0], "teacher", "stop")
        body["choices"][0]["message"]["reasoning"] = answer[1]
        return 200, body

    inputs = tmp_path / "records.jsonl"
    inputs.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in records), encoding="utf-8")
    out = tmp_path / "traces"
    with ScriptedEndpoint(respond, model="teacher") as server:
        config = tmp_path / "traces.yaml"
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url, "max_tokens": 64},
                                      "samples_per_item": 2, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0}),
                          encoding="utf-8")  # fmt: skip
        assert main(["traces", "--config", str(config), "--input", str(inputs), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["items"], summary["items_with_a_kept_trace"]) == (3, 1)
    assert (summary["items_without_a_kept_trace"], summary["items_every_trace_failed"]) == (2, 1)
    said = capsys.readouterr()
    assert "items without a kept trace 2 of 3 (every trace failed 1)" in said.out
    assert "no trace kept" not in said.err
    # asked again with every answer disagreeing: the stage still exits 0, and now says on stderr that nothing was kept
    wrong = [("0", "Ошибок очень много."), ("0", "Ошибок очень много, увы.")]
    script.update({"A": list(wrong), "B": list(wrong), "C": [("2", "Ошибок нет, всё верно."), ("2", "Ошибок нет.")]})
    with ScriptedEndpoint(respond, model="teacher") as server:
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url, "max_tokens": 64},
                                      "samples_per_item": 2, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0}),
                          encoding="utf-8")  # fmt: skip
        none = tmp_path / "none"
        assert main(["traces", "--config", str(config), "--input", str(inputs), "--output", str(none)]) == 0
    assert ("traces: warning: no trace kept of the 6 asked (disagrees 6): the integer-format SFT step has nothing "
            "to train on; failed.jsonl and dropped.jsonl hold each answer with its reason") in capsys.readouterr().err


def test_a_mean_reference_agrees_within_the_tolerance_despite_float_rounding():
    """``agreement: mean``: experts 1, 1, 1 and seven 2s give 17/10 = 1.7, and a trace of 2 lies 0.3 from it, within
    ``tolerance: 0.3`` by the documented rule ``|score - reference| <= tolerance``; in floats 2 - 1.7 is
    0.30000000000000004 and the trace was dropped as ``disagrees`` (and an item with only such a level within reach
    was not asked: ``reference_not_a_level``). A trace of 1 (0.7 away) still disagrees."""
    from train.synthetic.traces import experts_reference, reference_within_reach

    (mean,) = experts_reference([1, 1, 1] + [2] * 7, "mean")
    assert 2 - mean > 0.3  # the rounding the rule must not see
    assert trace_outcome({"ok": True, "content": "2", "reasoning": SECOND, "finish_reason": "stop", "error": None},
                         SCALE, (mean,), 0.3)[:2] == ("kept", "agrees")  # fmt: skip
    assert trace_outcome({"ok": True, "content": "1", "reasoning": FIRST, "finish_reason": "stop", "error": None},
                         SCALE, (mean,), 0.3)[:2] == ("dropped", "disagrees")  # fmt: skip
    # experts 0, 1, 1: mean 2/3, 1 lies 1/3 away; within a tolerance of 1/3, so the item is within reach.
    (two_thirds,) = experts_reference([0, 1, 1], "mean")
    assert reference_within_reach(judge.Scale((0, 2)), (two_thirds,), 2 / 3)  # 0 lies 2/3 away
    assert reference_within_reach(SCALE, (two_thirds,), 1 / 3)
    assert not reference_within_reach(judge.Scale((0, 2)), (two_thirds,), 0.5)


def test_a_server_that_repeats_the_reasoning_apart_in_the_content_keeps_its_trace():
    """The same block apart and inline is one trace, kept; a different one is not (the first test)."""
    assert outcome(f"<think>\n{SECOND}\n</think>\n\n2", reasoning=SECOND)[:2] == ("kept", "agrees")
    assert bare_answer(f"<think>{SECOND}</think>2", reasoning=SECOND) is True


def test_a_turn_the_teacher_did_not_end_is_a_failure_not_a_trace():
    """Only ``stop`` (the teacher ended its turn) and ``length`` (cut, failed as verdict_cut) were told apart; an
    ``abort`` or ``content_filter`` answer was kept like a finished one, though its integer is wherever the
    generation stopped. An endpoint or an old journal row that reports no finish_reason keeps today's reading."""
    answer = f"<think>\n{SECOND}\n</think>\n\n2"
    for finish in ("abort", "content_filter", "tool_calls"):
        done = {"ok": True, "content": answer, "reasoning": None, "finish_reason": finish, "error": None}
        assert trace_outcome(done, SCALE, (2.0,), 0.0)[:2] == ("failed", "turn_not_ended"), finish
    for finish in ("", None, "stop"):
        done = {"ok": True, "content": answer, "reasoning": None, "finish_reason": finish, "error": None}
        assert trace_outcome(done, SCALE, (2.0,), 0.0)[:2] == ("kept", "agrees"), finish


def _cut(content: str, reasoning: str | None = None) -> dict:
    return {"ok": True, "content": content, "reasoning": reasoning, "finish_reason": "length", "error": None}


def test_an_answer_the_limit_cut_is_verdict_cut_whatever_it_failed_to_parse_as():
    """The limit stopped each of these after the reasoning closed, before any integer: verdict_no_score or
    verdict_empty named a teacher that answered badly or nothing, where a larger max_tokens gives the verdict."""
    cut = [
        _cut(f"<think>\n{SECOND}\n</think>\n\nОценка:"),  # no_score when read alone: cut before its integer
        _cut("Оценка:", reasoning=SECOND),
        _cut(f"<think>\n{SECOND}\n</think>\n\n"),  # empty after a closed reasoning
        _cut(""),  # nothing at all before the limit
    ]
    for done in cut:
        assert trace_outcome(done, SCALE, (2.0,), 0.0)[:2] == ("failed", "verdict_cut"), done
    # The same answers the teacher ended itself are its answers: no score, or nothing.
    assert trace_outcome({**cut[0], "finish_reason": "stop"}, SCALE, (2.0,), 0.0)[:2] == ("failed", "verdict_no_score")
    assert trace_outcome({**cut[2], "finish_reason": "stop"}, SCALE, (2.0,), 0.0)[:2] == ("failed", "verdict_empty")
    # Cut inside its reasoning keeps its own name, which says where the limit fell; so does a reasoning returned
    # apart with nothing after it, which vLLM's reasoning parser returns for a generation cut before </think>.
    for done in (_cut(f"<think>\n{SECOND}"), _cut("", reasoning=SECOND)):
        assert trace_outcome(done, SCALE, (2.0,), 0.0)[:2] == ("failed", "verdict_unclosed_think"), done


def test_a_reasoning_with_no_answer_reads_as_every_serving_route_reads_it():
    """The traces stage reads an answer with nothing after its reasoning by the serving routes' own rule
    (``judge.verdicts.read_served_verdict``), whitespace-only answers and reasonings included: the reasoning apart and
    the teacher's turn ended (``stop``) is empty, its reasoning kept; under any other finish_reason it stays
    unclosed_think, or is cut where the limit stopped an answer with no reasoning at all. The stage's own names stay."""
    from judge.verdicts import read_served_verdict

    expected = {  # (reasoning given, finish_reason) -> the stage's reason
        (True, "stop"): "verdict_empty", (False, "stop"): "verdict_empty",
        (True, "length"): "verdict_unclosed_think", (False, "length"): "verdict_cut",
        (True, None): "verdict_unclosed_think", (False, None): "verdict_empty",
        (True, ""): "verdict_unclosed_think", (False, ""): "verdict_empty",
        (True, "abort"): "verdict_unclosed_think", (False, "abort"): "verdict_empty",
    }  # fmt: skip
    for content in ("", "  \n"):  # None is no text: a journalled request that failed (request_failed)
        for reasoning in (SECOND, f"\n{SECOND}  ", None, "", " \n "):
            for finish in ("stop", "length", None, "", "abort"):
                done = {"ok": True, "content": content, "reasoning": reasoning, "finish_reason": finish, "error": None}
                outcome_, reason, verdict = trace_outcome(done, SCALE, (2.0,), 0.0)
                served = read_served_verdict("integer", content, reasoning=reasoning, scale=SCALE, finish_reason=finish)
                assert (outcome_, reason) == ("failed", expected[bool((reasoning or "").strip()), finish]), done
                assert verdict == served, done
                assert verdict.feedback == (SECOND if (reasoning or "").strip() else ""), done
