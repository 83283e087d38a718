"""An answer the chat client refuses as longer than its request's ``max_tokens`` could produce (``ok`` false, error
``oversized: ...``) is the endpoint's answer, not an outage: the instructions and answers stages drop it as
``oversized`` (counted), the dedup check reads it as not confirmed and counts it apart, and a rerun into the same
folder asks none of them again, warns of no failed request, and counts them as before.

Run: .venv/bin/python -m pytest tests/unit/test_synthetic_oversized_answers.py -q -n 0
"""

from __future__ import annotations

import json


from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from train.synthetic.cli import main
from train.synthetic.journal import answered_oversized, request_failed

MAX_TOKENS = 4  # a bound of 4 x 16 = 64 characters
TOO_LONG = "Ответ. " * 10  # 70 characters: 6 past the bound


def test_an_oversized_answer_is_final_and_an_outage_is_not():
    oversized = {"key": "k", "ok": False, "error": "oversized: 70 characters of answer, more than max_tokens 4 x 16"}
    outage = {"key": "k", "ok": False, "error": "APIConnectionError: Connection error."}
    assert (request_failed(oversized), answered_oversized(oversized)) == (False, True)
    assert (request_failed(outage), answered_oversized(outage)) == (True, False)
    # an answered row whose text merely starts so is an answer, not a refusal
    assert not answered_oversized({"key": "k", "ok": True, "answer": "oversized: это ответ", "error": ""})


def _twice(argv: list[str], server: ScriptedEndpoint, capsys) -> list[str]:
    """Run the stage twice into one folder; the stderr of each run."""
    errs = []
    for _ in range(2):
        capsys.readouterr()
        assert main(argv) == 0
        errs.append(capsys.readouterr().err)
    return errs


def test_answers_drops_an_oversized_answer_once_and_a_rerun_asks_nothing(tmp_path, capsys):
    """It was dropped as request_failed: every rerun asked it again and warned that the endpoint never answered."""
    from tests.unit.test_synthetic_stages import _instruction_rows

    rows = _instruction_rows()[:2]
    replies = {rows[0]["instruction"]: TOO_LONG, rows[1]["instruction"]: "Короткий ответ."}
    (tmp_path / "dedup").mkdir()
    (tmp_path / "dedup" / "dedup.jsonl").write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    respond = lambda path, body: (200, chat_completion(replies[body["messages"][-1]["content"]], "m"))  # noqa: E731
    with ScriptedEndpoint(respond, model="m") as server:
        config = tmp_path / "answers.yaml"
        config.write_text(json.dumps({"answer_models": [{"model": "m", "base_url": server.base_url,
                                                         "max_tokens": MAX_TOKENS}],
                                      "max_retries": 0, "backoff_s": 0.0, "concurrency": 1}))
        out = tmp_path / "answers"
        errs = _twice(["answers", "--config", str(config), "--input", str(tmp_path / "dedup"), "--output", str(out)],
                      server, capsys)
        assert sorted(body["messages"][-1]["content"] for _, body in server.requests) == sorted(replies)  # 2, not 3
    assert not any("warning" in err or "asking again" in err for err in errs)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (1, {"oversized": 1})
    [dropped] = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert (dropped["instruction_id"], dropped["answer"], dropped["drop_reason"]) == (rows[0]["id"], "", "oversized")
    assert dropped["error"].startswith("oversized: 70 characters of answer")


def test_instructions_drops_an_oversized_output_once_and_a_rerun_asks_nothing(tmp_path, capsys):
    """Editing x 3 levels, one instruction each: the easy level's output is too long, dropped as oversized, once."""
    from tests.unit.test_synthetic_stages import _editing
    from train.synthetic.generation import render_generation_prompt

    task = _editing()
    replies = {render_generation_prompt(task, "easy"): "[PROBLEM] " + TOO_LONG + "[END]",
               render_generation_prompt(task, "medium"): "[PROBLEM] Исправьте: «Я пошол.» [END]",
               render_generation_prompt(task, "hard"): "[PROBLEM] Исправьте: «Мы пошли.» [END]"}
    respond = lambda path, body: (200, chat_completion(replies[body["messages"][-1]["content"]], "gen"))  # noqa: E731
    with ScriptedEndpoint(respond, model="gen") as server:
        config = tmp_path / "instructions.yaml"
        config.write_text(json.dumps({"generators": [{"model": "gen", "base_url": server.base_url,
                                                      "max_tokens": MAX_TOKENS}],
                                      "task_types": ["Editing"], "max_retries": 0, "backoff_s": 0.0, "concurrency": 1}))
        out = tmp_path / "instructions"
        errs = _twice(["instructions", "--config", str(config), "--output", str(out)], server, capsys)
        assert len(server.requests) == 3
    assert not any("warning" in err or "asking again" in err for err in errs)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (2, {"oversized": 1})
    [dropped] = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert (dropped["difficulty"], dropped["raw"], dropped["drop_reason"]) == ("easy", "", "oversized")


def test_the_dedup_check_counts_an_oversized_answer_apart_and_asks_it_once(tmp_path, monkeypatch):
    """The chain a-b (DUPLICATE), a-c, c-d (DIFFERENT) of test_synthetic_dedup, c-d answered too long: read as not
    confirmed (d kept, as DIFFERENT kept it), counted as llm_check_oversized and not as a failed request, and a
    rerun sends nothing: not a failed check that every rerun would ask again."""
    from tests.unit.test_synthetic_dedup import _REF_ROWS, _cosine_only, _row, chain_checks_replied
    from train.synthetic.dedup import render_llm_check_prompt, run_dedup

    replies = chain_checks_replied(monkeypatch)
    replies[render_llm_check_prompt("c", "d")] = "DIFFERENT " * 7  # 70 characters: past 4 x 16
    respond = lambda path, body: (200, chat_completion(replies[body["messages"][-1]["content"]], "checker"))  # noqa: E731
    (tmp_path / "instructions.jsonl").write_text("".join(json.dumps(_row(k, k)) + "\n" for k in "abcd"))
    (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _REF_ROWS))
    with ScriptedEndpoint(respond, model="checker") as server:
        config = _cosine_only(llm={"model": "checker", "base_url": server.base_url, "temperature": 0.0,
                                   "max_tokens": MAX_TOKENS}, backoff_s=0.0, max_retries=0)
        config.reference = str(tmp_path / "reference.jsonl")
        out = tmp_path / "dedup"
        first = run_dedup(config, tmp_path / "instructions.jsonl", out)
        again = run_dedup(config, tmp_path / "instructions.jsonl", out)
        assert len(server.requests) == 3
    for summary in (first, again):
        assert (summary["llm_check_failed_requests"], summary["llm_check_oversized"]) == (0, 1)
    assert (first["llm_check_requests"]["sent"], again["llm_check_requests"]["sent"]) == (3, 0)
    assert [json.loads(line)["id"] for line in (out / "dedup.jsonl").read_text().splitlines()] == ["a", "c", "d"]
