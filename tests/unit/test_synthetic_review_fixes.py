"""The synthetic pipeline's answers that crashed a stage or were misread (``train.synthetic``): content that is not
text, an exception the SDK raises past its own error types, a dedup check answer cut inside its reasoning or by the
token limit, a run whose requests failed finishing unsaid, tags kept in a teacher's feedback, and a split drop
labelled by another task-type lookup than the split's.

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_review_fixes.py -q -n 0
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import judge
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.client import ChatClient, ChatResult
from train.synthetic.config import EndpointConfig

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"
REASONING = "Ошибок в ответе нет, текст исправлен верно."


def _reply(content, reasoning=None, finish="stop") -> dict:
    body = chat_completion("", "teacher", finish)
    body["choices"][0]["message"]["content"] = content
    if reasoning is not None:
        body["choices"][0]["message"]["reasoning"] = reasoning
    return body


def _client(server: ScriptedEndpoint) -> ChatClient:
    return ChatClient(EndpointConfig(name="t", model="teacher", base_url=server.base_url), max_retries=0, backoff_s=0.0)


# ------------------------------------------------------------------------------------------ content not text


def test_text_parts_are_joined_and_other_content_is_a_failed_request():
    """A reply whose ``content`` is the chat API's list of text parts was passed on as a list, and every stage
    reading it as text crashed; an object or a non-text part the same. Text parts are the text; anything else is no
    answer: a failed result (counted, asked again by a rerun), never passed on."""
    from train.synthetic.client import message_text

    replies = [_reply([{"type": "text", "text": "Оценка: "}, {"type": "text", "text": "2"}], [{"type": "text", "text": "R"}]),
               _reply({"text": "2"}), _reply([{"type": "image_url", "image_url": {"url": "x"}}]),
               _reply([{"type": "text", "text": "2"}, {"type": "refusal", "refusal": "no"}]), _reply(None)]

    with ScriptedEndpoint(lambda path, body: (200, replies.pop(0)), model="teacher") as server:
        client = _client(server)
        results = [client.complete("q") for _ in range(5)]
    assert (results[0].ok, results[0].text, results[0].reasoning) == (True, "Оценка: 2", "R")
    for result, described in zip(results[1:4], ("a JSON dict", "(image_url)", "(refusal, text)")):
        assert (result.ok, result.text) == (False, "")
        assert "not text" in result.error and described in result.error
    assert (results[4].ok, results[4].text) == (True, "")  # no content: an empty answer, as before
    assert message_text("x") == "x" and message_text(3) is None


def test_a_traces_journal_holding_non_text_content_is_asked_again_not_a_crash(tmp_path, monkeypatch):
    """An earlier version journalled such content as answered (``ok: True``) before deciding it, then crashed; every
    rerun skipped the journalled row and crashed the same way. Such a row is a failed request: the run that meets it
    counts it (exit 0) and a rerun asks it again."""
    from train.synthetic.cli import main
    from train.synthetic.journal import request_failed

    assert request_failed({"ok": True, "content": [{"type": "text", "text": "2"}], "reasoning": ""})
    assert request_failed({"ok": True, "answer": {"x": 1}}) and request_failed({"ok": True, "raw": None})
    assert not request_failed({"ok": True, "content": "2"})

    record = {"id": "A", "instruction": "Исправьте: «раз»", "answer": "раз", "expert_scores": [2],
              "reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
    inputs = tmp_path / "records.jsonl"
    inputs.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "traces"
    with ScriptedEndpoint(lambda path, body: (200, _reply("2", REASONING)), model="teacher") as server:
        config = tmp_path / "traces.yaml"
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url, "max_tokens": 64},
                                      "samples_per_item": 2, "concurrency": 1, "max_retries": 0, "backoff_s": 0.0}))
        argv = ["traces", "--config", str(config), "--input", str(inputs), "--output", str(out)]
        # What the earlier client returned for a list of parts: the list itself, as an answer.
        old = ChatResult([{"type": "text", "text": "2"}], True, finish_reason="stop", reasoning=REASONING)  # type: ignore[arg-type]
        with monkeypatch.context() as patch:
            patch.setattr(ChatClient, "complete", lambda self, prompt, system="", temperature=None: old)
            assert main(argv) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert (summary["kept"], summary["failed_by_reason"]) == (0, {"request_failed": 2})
        assert main(argv) == 0
        assert len(server.requests) == 2  # both asked again
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["failed"]) == (1, 0)  # the second agreeing trace is its duplicate


# ------------------------------------------------------------------------------ exceptions past the SDK's own


def test_an_exception_that_is_not_the_sdk_s_error_is_a_failed_result_naming_it(monkeypatch):
    """A thread that read httpx while another was importing it raised ``AttributeError`` from inside the SDK's call;
    ``complete`` caught only ``openai.APIError``, so it escaped the worker and stopped the stage with a traceback."""
    client = ChatClient(EndpointConfig(name="t", model="teacher", base_url="http://127.0.0.1:9/v1"), max_retries=0)

    def create(**kwargs):
        raise AttributeError("partially initialized module 'httpx' has no attribute 'Timeout'")

    monkeypatch.setattr(client._client.chat.completions, "create", create)
    result = client.complete("q")
    assert (result.ok, result.text, result.attempts) == (False, "", 1)
    assert "AttributeError" in result.error and "partially initialized" in result.error


def test_retry_imports_httpx_when_it_is_imported_not_in_a_worker_thread():
    """``is_transient`` imported httpx at a stage's first failed attempt, in several worker threads at once, while
    the openai SDK's threads read it; imported with the module, no thread meets it half-initialised. A fresh
    interpreter, where nothing else imported httpx."""
    code = "import sys; import judge.plumbing.retry; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True"]
    import inspect

    from judge.plumbing import retry

    assert "import httpx" not in inspect.getsource(retry.is_transient)


# -------------------------------------------------------------------------------- dedup: a cut check answer


@pytest.mark.parametrize("text", [
    "<think>Let me see whether these are DUPLICATE",                        # cut inside its reasoning
    "<think>First</think> <think>Maybe DUPLICATE",                           # a second block left open
    "Hmm</think> <think>DUPLICATE?",                                         # opened by the template, then again
])  # fmt: skip
def test_a_duplicate_inside_an_unclosed_think_is_not_confirmed(text):
    from train.synthetic.dedup import parse_llm_check

    assert parse_llm_check(text) is None


def test_closed_reasoning_blocks_are_skipped_and_the_answer_after_them_read():
    from train.synthetic.dedup import parse_llm_check

    assert parse_llm_check("<think>DIFFERENT?</think>DUPLICATE") is True
    assert parse_llm_check("weighing DUPLICATE</think>\nDIFFERENT") is False
    assert parse_llm_check("<think>a</think> <think>DIFFERENT</think> DUPLICATE") is True


def test_only_an_answer_the_checker_ended_itself_is_confirmed():
    """Algorithm 1 step 8 deletes a confirmed duplicate only: an answer cut by max_tokens ("DUPLICATE? No, ...") or
    ended any other way is no confirmation."""
    from train.synthetic.dedup import journalled_answer, llm_check_answer

    assert llm_check_answer(True, "DUPLICATE", "stop") is True
    assert llm_check_answer(True, "DIFFERENT", "stop") is False
    for finish in ("length", "content_filter", "abort"):
        assert llm_check_answer(True, "DUPLICATE", finish) is None
    for unreported in ("", None):  # an endpoint that does not say: read as the traces stage reads it, not never
        assert llm_check_answer(True, "DUPLICATE", unreported) is True
    assert llm_check_answer(False, "DUPLICATE", "stop") is None
    assert journalled_answer({"ok": True, "raw": "DUPLICATE", "finish_reason": "length", "answer": True}) is None
    assert journalled_answer({"ok": True, "raw": "DIFFERENT", "answer": False}) is False  # before finish_reason


def test_run_dedup_journals_the_finish_reason_and_asks_an_unproven_duplicate_again(tmp_path, monkeypatch):
    """Three instructions a, b, c whose a-b and a-c pairs are borderline. The checker says DUPLICATE for a-b but is
    cut (finish_reason length): b is kept, and the journal records why. A row journalled before rows recorded their
    finish_reason, saying DUPLICATE, is asked again once rather than trusted."""
    import train.synthetic.dedup as dedup
    from tests.unit.test_synthetic_dedup import _CHAIN, _REF_ROWS, _REFERENCE, _cosine_only, _row
    from train.synthetic.dedup import render_llm_check_prompt, run_dedup

    class TableModel:
        def encode(self, texts, **kwargs):
            return np.stack([{**_REFERENCE, **_CHAIN}[t] for t in texts])

    monkeypatch.setattr(dedup, "load_embedder", lambda *args, **kwargs: TableModel())
    finish = {"a|b": "length"}

    def respond(path: str, body: dict) -> tuple[int, dict]:
        prompt = body["messages"][-1]["content"]
        key = next(k for k in ("a|b", "a|c", "b|c") if render_llm_check_prompt(*k.split("|")) == prompt)
        return 200, chat_completion("DUPLICATE" if key == "a|b" else "DIFFERENT", body["model"], finish.get(key, "stop"))

    (tmp_path / "instructions.jsonl").write_text("".join(json.dumps(_row(k, k)) + "\n" for k in "abc"))
    (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _REF_ROWS))
    out = tmp_path / "dedup"
    with ScriptedEndpoint(respond) as server:
        config = _cosine_only(llm={"model": "checker", "base_url": server.base_url, "temperature": 0.0}, backoff_s=0.0)
        config.reference = str(tmp_path / "reference.jsonl")
        run_dedup(config, tmp_path / "instructions.jsonl", out)
        kept = [json.loads(line)["id"] for line in (out / "dedup.jsonl").read_text().splitlines()]
        assert kept == ["a", "b", "c"]
        journal = out / "llm_checks.jsonl"
        rows = {row["key"]: row for row in map(json.loads, journal.read_text().splitlines())}
        assert (rows["a|b"]["finish_reason"], rows["a|b"]["answer"]) == ("length", None)

        # The journal an earlier version wrote: a-b read as a DUPLICATE, no finish_reason recorded.
        old = {**rows["a|b"], "answer": True}
        del old["finish_reason"]
        journal.write_text("".join(json.dumps(old if key == "a|b" else row) + "\n" for key, row in rows.items()))
        finish.clear()  # this time the checker ends its answer
        before = len(server.requests)
        summary = run_dedup(config, tmp_path / "instructions.jsonl", out)
        asked = [body["messages"][-1]["content"] for _, body in server.requests[before:]]
    assert asked == [render_llm_check_prompt("a", "b")]
    kept = [json.loads(line)["id"] for line in (out / "dedup.jsonl").read_text().splitlines()]
    assert kept == ["a", "c"] and summary["llm_check_failed_requests"] == 0


# ------------------------------------------------------------------------- failed requests said at the end


def test_a_stage_whose_requests_failed_says_so_and_how_to_recover(tmp_path, capsys):
    """Exit 0 (the help's code for a finished stage) with every request failed looked like a finished run: the
    stage now says how many requests failed and that a rerun asks them again."""
    from train.synthetic.cli import main

    record = {"id": "A", "instruction": "Исправьте: «раз»", "answer": "раз", "expert_scores": [2],
              "reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
    inputs = tmp_path / "records.jsonl"
    inputs.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    with ScriptedEndpoint(lambda path, body: (500, {"error": {"message": "down"}}), model="teacher") as server:
        config = tmp_path / "traces.yaml"
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url, "max_tokens": 64},
                                      "samples_per_item": 3, "concurrency": 2, "max_retries": 0, "backoff_s": 0.0}))
        code = main(["traces", "--config", str(config), "--input", str(inputs), "--output", str(tmp_path / "out")])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: 3 requests failed" in err and "rerun with the same --output" in err


def test_requests_failed_counts_every_stage_s_failures():
    from train.synthetic.cli import requests_failed

    assert requests_failed({"dropped_by_reason": {"request_failed": 2, "empty_answer": 1}}) == 2
    assert requests_failed({"dropped_by_reason": {}, "failed_by_reason": {"request_failed": 4}}) == 4
    assert requests_failed({"dropped_by_reason": {}, "llm_check_failed_requests": 1}) == 1
    assert requests_failed({"dropped_by_reason": {"near_duplicate:llm": 1}}) == 0


# ------------------------------------------------------------------------------ annotate: tags in feedback


@pytest.mark.parametrize("feedback", ["Ошибок нет. [RESULT] 0 [END] На деле", "<think>Ошибок нет", "Ошибок нет </think>"])
def test_annotate_does_not_keep_feedback_holding_a_verdict_or_think_tag(feedback):
    """Kept as a label, such feedback was dropped later by build-data (a <think> never): the teacher is asked again
    instead, and build-data drops a <think> as it drops a verdict tag."""
    from judge.verdicts import Verdict
    from train.build_data import _TAGS
    from train.synthetic.annotate import unusable_verdict

    verdict = Verdict(ok=True, score=2.0, feedback=feedback)
    assert unusable_verdict(verdict, judge.Scale((0, 1, 2)))[0] == "tags_in_feedback"
    assert _TAGS.search(feedback)
    assert unusable_verdict(Verdict(ok=True, score=2.0, feedback="Ошибок нет, всё верно."), judge.Scale((0, 1, 2))) is None


# ------------------------------------------------------------------------------------ split: the drop reason


def test_a_row_held_out_by_its_task_type_under_its_group_is_labelled_task_type():
    """A row whose task_type names the group and task_subtype the held-out task type ("AI as a Character" / "Formal
    setting") is held out by its task type (judge.split_of reads that layout), but was labelled zero_shot:criterion."""
    from judge.splits import split_of
    from train.synthetic.config import SplitConfig
    from train.synthetic.splitting import split_records

    row = {"id": "g1", "instruction": "Группа", "answer": "x", "criteria_name": "Грамотность", "rubrics": RUBRICS,
           "task_type": "AI as a Character", "task_subtype": "Formal setting", "expert_scores": [1]}
    assert split_of(judge.records_from_rows([row])[0]) == judge.ZERO_SHOT
    splits, dropped = split_records([row], SplitConfig(validation_fraction=0.0))
    assert [r["drop_reason"] for r in dropped] == ["zero_shot:task_type"] and splits["train"] == []


def test_annotate_asks_again_a_label_journalled_with_tags_in_its_feedback(tmp_path, monkeypatch, capsys):
    """A journal an earlier version wrote holds a kept verdict whose feedback carries a forged "[RESULT] 0 [END]": a
    rerun asks it again (once, as a failed request is), and keeps the clean verdict it gets."""
    import re

    import train.build_data
    from judge import load_taxonomy, render_prompt_en
    from tests.unit.test_synthetic_stages import _answer_rows
    from train.synthetic.cli import main

    crit = load_taxonomy().criteria["repeats"]
    row = _answer_rows()[0]
    prompt = render_prompt_en({"instruction": row["instruction"], "reference_answer": "", "answer": row["answer"],
                               "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru")})
    replies = ["[FEEDBACK] Повторов нет. [RESULT] 0 [END] Всё же [RESULT] 2 [END]",
               "[FEEDBACK] Повторов нет, ответ чистый. [RESULT] 2 [END]"]

    def respond(path: str, body: dict) -> tuple[int, dict]:
        assert body["messages"][-1]["content"] == prompt
        return 200, chat_completion(replies.pop(0), "teacher")

    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "answers.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n")
    out = tmp_path / "annotate"
    with ScriptedEndpoint(respond, model="teacher") as server:
        config = tmp_path / "annotate.yaml"
        config.write_text(json.dumps({"teacher": {"name": "teacher", "model": "teacher", "base_url": server.base_url},
                                      "criteria": ["repeats"], "max_attempts": 1, "backoff_s": 0.0, "concurrency": 1}))
        argv = ["annotate", "--config", str(config), "--input", str(tmp_path / "answers"), "--output", str(out)]
        with monkeypatch.context() as patch:  # the earlier version, which kept such feedback
            patch.setattr(train.build_data, "_TAGS", re.compile(r"(?!)"))
            assert main(argv) == 0
        first = json.loads((out / "annotate.jsonl").read_text())
        assert "[RESULT] 0 [END]" in first["expert_feedback"][0]
        assert main(argv) == 0
        assert len(server.requests) == 2
    kept = [json.loads(line) for line in (out / "annotate.jsonl").read_text().splitlines()]
    assert [r["expert_feedback"] for r in kept] == [["Повторов нет, ответ чистый."]]
    assert "whose kept feedback holds a verdict or <think> tag" in capsys.readouterr().err


def test_reasoning_parts_beside_the_text_are_skipped_not_a_failure():
    """Mistral-style content: a "thinking" part then the answer's text part. The answer is the text part; a reply
    of reasoning parts alone has no answer (failed, asked again)."""
    from train.synthetic.client import message_text

    assert message_text([{"type": "thinking", "thinking": "хм"}, {"type": "text", "text": "2"}]) == "2"
    assert message_text([{"type": "thinking", "thinking": "хм"}]) is None
    assert message_text([{"type": "image_url", "image_url": {}}, {"type": "text", "text": "2"}]) is None
