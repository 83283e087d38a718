"""The dedup stage's LLM check answer: a DUPLICATE inside unclosed reasoning, or in an answer the checker did not end
itself (cut by the token limit), confirms nothing; the journal keeps the finish reason and an unproven duplicate is
asked again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


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


def test_the_stage_line_counts_the_borderline_checks_without_a_usable_answer(tmp_path, monkeypatch, capsys):
    """A checker whose answers say neither DUPLICATE nor DIFFERENT keeps every borderline sample (nothing is
    confirmed), as annotate and traces keep no unparseable verdict; they count theirs on the stage's last line, and
    dedup's were in summary.json only, so a run whose every check was unreadable read as one that found no duplicate.
    a, b and c, every pair borderline (cosine 0.7): none confirmed, so all three are asked, and counted on the line."""
    import train.synthetic.dedup as dedup
    from tests.unit.test_synthetic_dedup import _CHAIN, _REF_ROWS, _REFERENCE, _row
    from train.synthetic.cli import main

    class TableModel:
        def encode(self, texts, **kwargs):
            return np.stack([{**_REFERENCE, **_CHAIN}[t] for t in texts])

    monkeypatch.setattr(dedup, "load_embedder", lambda *args, **kwargs: TableModel())
    (tmp_path / "instructions.jsonl").write_text("".join(json.dumps(_row(k, k)) + "\n" for k in "abc"))
    (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _REF_ROWS))
    out = tmp_path / "dedup"
    with ScriptedEndpoint(lambda path, body: (200, chat_completion("Hard to say.", body["model"]))) as server:
        config = tmp_path / "dedup.yaml"
        config.write_text(json.dumps({
            "reference": str(tmp_path / "reference.jsonl"), "chrf_min_cosine": 1.0, "chrf_max": 1.01,
            "chrf_original": 0.0, "backoff_s": 0.0, "llm": {"model": "checker", "base_url": server.base_url}}))
        assert main(["dedup", "--config", str(config), "--input", str(tmp_path / "instructions.jsonl"),
                     "--output", str(out)]) == 0
        assert len(server.requests) == 3
    assert json.loads((out / "summary.json").read_text())["llm_check"] == {"duplicate": 0, "different": 0,
                                                                          "unanswered": 3}
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        f"dedup: kept 3, dropped 0 (none); borderline checks without a usable answer 3 (their samples kept) -> {out}")
