"""Model output bounded before any stage reads it: ``ChatClient.complete`` fails an answer longer than its
``max_tokens`` could produce, or a reasoning returned apart longer than its own cap (none of the text passed on), and
the two parsers of untrusted output that searched past their last closing tag (``generation.parse_problem``,
``dedup.parse_llm_check``) search no further than it.

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_output_bounds.py -q
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic import dedup, generation
from train.synthetic.client import CHARS_PER_TOKEN, REASONING_TOKEN_CAP, ChatClient, longer_than_asked
from train.synthetic.config import EndpointConfig

MAX_TOKENS = 4  # a bound of 4 x 16 = 64 characters


def _complete(text: str, reasoning: str | None = None):
    """One completion from a scripted endpoint answering ``text`` (and ``reasoning`` apart), asked with MAX_TOKENS."""
    bodies = []

    def respond(path: str, body: dict) -> tuple[int, dict]:
        bodies.append(body)
        reply = chat_completion(text, "m")
        if reasoning is not None:
            reply["choices"][0]["message"]["reasoning"] = reasoning
        return 200, reply

    with ScriptedEndpoint(respond, model="m") as server:
        client = ChatClient(EndpointConfig(name="m", model="m", base_url=server.base_url, max_tokens=MAX_TOKENS),
                            max_retries=0)
        result = client.complete("q", system="s")
    # EndpointConfig's default temperature (0.7), no extra_body: nothing else crosses the wire
    assert bodies == [{"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
                       "temperature": 0.7, "max_tokens": MAX_TOKENS}]
    return result


def test_an_answer_longer_than_max_tokens_allows_fails_without_its_text():
    bound = MAX_TOKENS * CHARS_PER_TOKEN
    assert bound == 64
    at_bound = _complete("а" * bound)
    assert (at_bound.ok, at_bound.oversized, at_bound.text) == (True, False, "а" * bound)
    over = _complete("а" * (bound + 1))
    assert (over.ok, over.oversized, over.text, over.reasoning) == (False, True, "", "")
    assert over.error.startswith(f"oversized: {bound + 1} characters of answer, more than max_tokens {MAX_TOKENS} x 16")
    # A reasoning inline in the content is bounded with the answer: 7 + 40 + 8 + 10 = 65 characters.
    inline = _complete("<think>" + "б" * 40 + "</think>" + "а" * 10)
    assert (inline.ok, inline.oversized) == (False, True)


def test_a_reasoning_returned_apart_is_bounded_by_its_own_cap():
    """DeepSeek's API bounds only deepseek-reasoner's final answer by max_tokens: a reasoning returned apart beyond
    max_tokens x 16 characters was refused with its valid answer. It is bounded by REASONING_TOKEN_CAP x 16 now, a
    cap of its own; the answer beside it by max_tokens x 16 still."""
    reasoning_bound = REASONING_TOKEN_CAP * CHARS_PER_TOKEN
    assert reasoning_bound == 1_048_576
    long_reasoning = _complete("а" * 40, reasoning="b" * reasoning_bound)
    assert (long_reasoning.ok, long_reasoning.oversized) == (True, False)
    assert (long_reasoning.text, len(long_reasoning.reasoning)) == ("а" * 40, reasoning_bound)
    past_cap = _complete("а" * 40, reasoning="b" * (reasoning_bound + 1))
    assert (past_cap.ok, past_cap.oversized, past_cap.text, past_cap.reasoning) == (False, True, "", "")
    assert past_cap.error.startswith(f"oversized: {reasoning_bound + 1} characters of reasoning, more than 65536 x 16")
    answer_over = _complete("а" * 65, reasoning="b" * 10)
    assert (answer_over.ok, answer_over.oversized) == (False, True)
    assert answer_over.error.startswith("oversized: 65 characters of answer")


def test_longer_than_asked_bounds_the_answer_and_a_reasoning_apart_each_on_their_own():
    # max_tokens 4: answer bound 64; reasoning bound max(4, 65,536) x 16 = 1,048,576
    assert not longer_than_asked(64, 4, 1_048_576) and longer_than_asked(65, 4) and longer_than_asked(0, 4, 1_048_577)
    # a max_tokens above the cap is the reasoning's bound: vLLM counts the reasoning in it
    assert not longer_than_asked(0, 100_000, 1_600_000) and longer_than_asked(0, 100_000, 1_600_001)
    # no max_tokens known: the answer has nothing to compare with, the reasoning's cap still holds
    assert not longer_than_asked(10**9, None) and longer_than_asked(0, None, 1_048_577)


def test_the_traces_stage_journals_no_text_of_an_oversized_answer(tmp_path):
    from tests.unit.test_train_traces import MODEL, RECORDS, write_config, write_inputs
    from train.synthetic.cli import main

    huge = "<think>" + "Ошибка исправлена. " * 200 + "</think>2"  # 3,816 characters
    max_tokens = 16  # 16 x 16 = 256 characters: the answer is far over it

    def respond(path: str, body: dict) -> tuple[int, dict]:
        return 200, chat_completion(huge, MODEL)

    with ScriptedEndpoint(respond, model=MODEL) as server:
        out = tmp_path / "traces"
        config = write_config(tmp_path, server.base_url, max_tokens=max_tokens, samples_per_item=1)
        argv = ["traces", "--config", str(config), "--input", str(write_inputs(tmp_path, RECORDS[:1])), "--output",
                str(out)]
        assert main(argv) == 0
        assert main(argv) == 0  # the teacher's answer, not an outage: not asked again
        assert len(server.requests) == 1
    [row] = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert (row["ok"], row["content"], row["reasoning"]) == (False, "", "")
    assert row["error"].startswith(f"verdict_oversized: {len(huge)} characters")
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["failed_by_reason"]) == (0, {"verdict_oversized": 1})


class _Recording:
    """A compiled pattern that records the span of text each search is allowed (pos, endpos) and then searches."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.spans: list[tuple[int, int]] = []

    def findall(self, text, pos=0, endpos=sys.maxsize):
        self.spans.append((pos, min(endpos, len(text))))
        return self.pattern.findall(text, pos, endpos)

    def sub(self, repl, text, count=0):
        self.spans.append((0, len(text)))
        return self.pattern.sub(repl, text, count)


@pytest.mark.parametrize("tail", ["[PROBLEM]" * 2000, "", " и текст после"])
def test_parse_problem_never_searches_past_the_last_end(monkeypatch, tail):
    """'[PROBLEM]' repeated with no [END] after it sent each lazy attempt to the text's end: quadratic. The blocks
    found are the same; the search stops at the last [END]."""
    block = "[PROBLEM] Напишите стихотворение о снеге. [END]"
    recording = _Recording(generation._PROBLEM)
    monkeypatch.setattr(generation, "_PROBLEM", recording)
    assert generation.parse_problem(block + tail) == ("Напишите стихотворение о снеге.", "")
    assert recording.spans == [(0, len(block))]
    recording.spans.clear()
    assert generation.parse_problem("[PROBLEM]" * 2000) == (None, "malformed:no_tags")
    assert recording.spans == []  # no [END]: nothing to search
    # Two blocks are still two, and an [end] in any case closes one.
    assert generation.parse_problem("[PROBLEM] a [END] [problem] b [end]") == (None, "malformed:several_problems")


@pytest.mark.parametrize(("text", "searched", "expected"), [
    ("<think>DUPLICATE?</think> DIFFERENT", None, False),  # the leading reasoning only: no block left to search
    ("<think>a</think> x <think>b</think> DUPLICATE", " x <think>b</think>", True),
    # 2,000 open tags after the last close: each sent the lazy search to the text's end; now none is searched
    ("<think>a</think> DIFFERENT <think>b</think>" + "<think>" * 2000, " DIFFERENT <think>b</think>", None),
])  # fmt: skip
def test_parse_llm_check_never_searches_past_the_last_close(monkeypatch, text, searched, expected):
    """The first </think> ends the reasoning (stripped by its own anchored pattern); the blocks after it are searched
    for only up to the last </think>."""
    recording = _Recording(dedup._THINK_BLOCK)
    monkeypatch.setattr(dedup, "_THINK_BLOCK", recording)
    assert dedup.parse_llm_check(text) is expected
    assert recording.spans == ([] if searched is None else [(0, len(searched))])


def test_parse_llm_check_reads_blocks_as_the_whole_text_search_did():
    """The bounded search removes exactly the blocks the unbounded one did: each replaced by a space."""
    import re

    whole = re.compile(r"<think\s*>.*?</think\s*>", re.DOTALL | re.IGNORECASE)
    for text in ["x<think>a</think>y<THINK >b</think>z", "<think><think>a</think>b</think>c", "a</think>b<think>c",
                 "<think>a</think>" + "<think>" * 50]:
        assert dedup._without_think_blocks(text) == whole.sub(" ", text), text
