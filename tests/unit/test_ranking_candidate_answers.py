"""judge-eval rank's answers stage: what the candidate's server answers that is not a plain final answer.

The candidate is a scripted OpenAI-compatible server (``tests.support.scripted_endpoint``), the network boundary: each
test asserts the payloads it received (which instructions were asked, in which order) and what ``answers.jsonl`` and
the exit code say. An engine's aborted generation (vLLM's HTTP 200 with ``finish_reason`` ``abort``) is a transient
failure as the judge's clients treat it; a run stopped by refused first requests keeps them as failed rows and its
rerun asks the other instructions first; content sent as a list of parts is read through
``judge.plumbing.message_content``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.cli import main
from tests.support.body_bound import judge_serve_too_large
from tests.support.eval_ranking import CASES, Candidate, Judge, rank_argv, scores_by_output
from tests.support.scripted_endpoint import chat_completion

# rank_argv's own "--max-retries 0" is overridden where a test needs a retry; no wait between attempts.
RETRY_ONCE = ("--max-retries", "1", "--backoff-s", "0")


def _pid(body: dict) -> int:
    return int(body["messages"][0]["content"].split(":")[0].split()[-1])


def _asked(cand: Candidate) -> list[int]:
    return [_pid(b) for b in cand.bodies("/v1/chat/completions")]


def _answers(out: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text(encoding="utf-8").split("\n") if line]
    return {row["prompt_id"]: row for row in rows}


class Scripted(Candidate):
    """The ranking's stand-in candidate, answering instruction k with ``script(k, n)`` (n: how many times k was asked
    before) when it gives a reply, else as ``Candidate`` does."""

    def __init__(self, script):
        self.script, self.seen = script, {}
        super().__init__()

    def _respond(self, path: str, body: dict):
        pid = _pid(body)
        n = self.seen[pid] = self.seen.get(pid, -1) + 1
        reply = self.script(pid, n, body["model"])
        return reply if reply is not None else super()._respond(path, body)


def test_an_aborted_generation_is_asked_again_not_kept(tmp_path: Path, data: Path) -> None:
    """Instruction 2's first generation is aborted by the engine after a few tokens (HTTP 200, finish_reason abort):
    the request is retried and the answer kept is the whole one, never the cut text."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return (200, chat_completion("Отв", model, finish_reason="abort")) if pid == 2 and n == 0 else None

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *RETRY_ONCE)) == 0
        asked = _asked(cand)
    assert sorted(asked) == [1, 2, 2, 3, 4, 5, 6, 7]  # instruction 2 twice: the aborted generation, then its retry
    row = _answers(out)[2]
    assert (row["answer"], row["error"], row["finish_reason"]) == ("Ответ два.", None, "stop")


def test_an_aborted_generation_after_its_retries_is_a_failed_request(tmp_path: Path, data: Path) -> None:
    """Aborted on every attempt, instruction 2 is a failed request (exit 3, scored by --no-answer), not an answer of
    the cut text; the rerun asks it alone and ranks it."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return (200, chat_completion("", model, finish_reason="abort")) if pid == 2 else None

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *RETRY_ONCE)) == 3
        assert _asked(cand).count(2) == 2  # the first attempt and one retry
    row = _answers(out)[2]
    assert row["answer"] is None and row["error"] == "request_failed"
    assert row["reason"] == ("GenerationAborted: the candidate's engine aborted the generation for prompt_id 2 "
                             "(finish_reason abort)")
    result = json.loads((out / "rank.json").read_text(encoding="utf-8"))
    # Its three criteria are no_answer items (an empty answer would have been n_empty_answer, final).
    assert result["counts"]["n_answer_failed"] == 1 and result["counts"]["n_no_answer"] == 3
    assert result["counts"]["n_empty_answer"] == 2  # prompt 6's alone, cut inside <think>
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert _asked(cand) == [2]
    assert _answers(out)[2]["answer"] == "Ответ два."


def test_refused_first_instructions_are_kept_and_asked_after_the_others(tmp_path: Path, data: Path) -> None:
    """A hosted candidate whose content filter refuses instructions 1-3 (HTTP 400, the same words): the first run
    stops at them (exit 4) but writes them as failed rows; the rerun asks 4-7 first, ranks them, then asks 1-3
    again, written as failed (exit 3), so the ranking gets past them instead of stopping there on every rerun."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return (400, {"error": {"message": "content filtered", "type": "invalid_request_error"}}) if pid <= 3 else None

    argv = ("--concurrency", "1")  # one request at a time: the order they finish is the order they are sent
    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *argv)) == 4
        assert _asked(cand) == [1, 2, 3]
        rows = _answers(out)
        assert sorted(rows) == [1, 2, 3]
        assert all(r["error"] == "request_failed" and r["reason"].startswith("Refused: HTTP 400")
                   for r in rows.values())
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *argv)) == 3
        assert _asked(cand) == [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    rows = _answers(out)
    assert list(rows) == sorted(CASES)  # one row per instruction, in data order
    assert [pid for pid, r in rows.items() if r["error"]] == [1, 2, 3]
    result = json.loads((out / "rank.json").read_text(encoding="utf-8"))
    assert result["counts"]["n_answer_failed"] == 3


def test_content_parts_are_read_as_text(tmp_path: Path, data: Path) -> None:
    """Instruction 1 answered as Mistral sends content (a thinking part, then text parts) is the text parts joined;
    instruction 3's image part reads as no text: a failed request naming what was sent (exit 3), not a crash of
    the stage."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        if pid not in (1, 3):
            return None
        reply = chat_completion("", model)
        reply["choices"][0]["message"]["content"] = (
            [{"type": "thinking", "thinking": [{"type": "text", "text": "план"}]},
             {"type": "text", "text": "Ответ "}, {"type": "text", "text": "один."}] if pid == 1 else
            [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
        return 200, reply

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 3
        judged = [b["messages"][0]["content"] for b in judge.bodies("/v1/chat/completions")]
    rows = _answers(out)
    assert rows[1]["answer"] == "Ответ один." and rows[1]["error"] is None
    # Its three criteria judged on the joined text.
    assert sum("### Ответ для оценки:\nОтвет один.\n\n" in prompt for prompt in judged) == 3
    assert rows[3]["answer"] is None and rows[3]["error"] == "request_failed"
    assert rows[3]["reason"] == "Refused: the candidate's message content is not text: a list of parts (image_url)"


def test_an_answer_of_reasoning_parts_alone_is_one_cut_in_its_thinking(tmp_path: Path, data: Path) -> None:
    """Instruction 2 answered with a thinking part alone (Mistral's API when max_tokens stops a model while it
    thinks) holds no text, but no request failed: it is the answer cut inside its reasoning, as instruction 6's
    inline "<think>рассуждение, обрезанное лимитом" is (POLLUX's answer.py strip_think_tags: ""). Both are empty
    answers cut in thinking, scored by --empty-answer (exit 0, not 3), and the rerun asks neither again."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        if pid != 2:
            return None
        reply = chat_completion("", model, finish_reason="length")
        reply["choices"][0]["message"]["content"] = [{"type": "thinking",
                                                      "thinking": [{"type": "text", "text": "рассуждение"}]}]
        return 200, reply

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert sorted(_asked(cand)) == sorted(CASES)  # each instruction once: the rerun had nothing to ask
    rows = _answers(out)
    assert {pid: (rows[pid]["answer"], rows[pid]["cut_in_thinking"], rows[pid]["error"]) for pid in (2, 6)} == {
        2: ("", True, None), 6: ("", True, None)}
    counts = json.loads((out / "rank.json").read_text(encoding="utf-8"))["counts"]
    assert (counts["n_answer_failed"], counts["n_answer_empty"], counts["n_cut_in_thinking"]) == (0, 2, 2)


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_an_empty_answer_cut_beside_a_separate_reasoning_is_one_cut_in_its_thinking(field, tmp_path: Path,
                                                                                   data: Path) -> None:
    """The same cut from a server with a --reasoning-parser: no content, finish_reason length, the reasoning in a
    field of its own. It was an empty answer not said to be cut in thinking (rank.json's n_cut_in_thinking missed
    it); an empty answer the model ended itself beside its reasoning stays a plain empty answer."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        if pid not in (2, 3):
            return None
        reply = chat_completion("", model, finish_reason="length" if pid == 2 else "stop")
        reply["choices"][0]["message"].update({"content": None, field: "рассуждение"})
        return 200, reply

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    rows = _answers(out)
    assert {pid: (rows[pid]["answer"], rows[pid]["cut_in_thinking"], rows[pid]["finish_reason"])
            for pid in (2, 3)} == {2: ("", True, "length"), 3: ("", False, "stop")}
    counts = json.loads((out / "rank.json").read_text(encoding="utf-8"))["counts"]
    assert counts["n_cut_in_thinking"] == 2  # instruction 2's, and instruction 6's inline one


def test_a_rerun_left_with_refused_instructions_asks_them_instead_of_stopping(tmp_path: Path, data: Path) -> None:
    """The run above, rerun once more: only instructions 1-3 are left, all refused before. They are asked again and
    written as failed rows (exit 3); the first refusals' stop, armed only by instructions never asked, stopped every
    such rerun at them (exit 4) before."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return (400, {"error": {"message": "content filtered", "type": "invalid_request_error"}}) if pid <= 3 else None

    argv = ("--concurrency", "1")
    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *argv)) == 4
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *argv)) == 3
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, *argv)) == 3
        assert _asked(cand) == [1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 1, 2, 3]
    assert [pid for pid, r in _answers(out).items() if r["error"]] == [1, 2, 3]


#: vLLM's 400 for an instruction longer than the window itself (``_validate_input``'s first check).
TOO_LONG = (400, {"error": {"message": "This model's maximum context length is 4096 tokens. However, your request has "
                                       "5000 input tokens. Please reduce the length of the input messages.",
                            "type": "BadRequestError", "param": None, "code": 400}})


def _no_room(pid: int) -> tuple[int, dict]:
    """vLLM's 400 for an instruction that fits the window but not with the request's max_tokens 4000: its words name
    this request's own input tokens, as a real server's do (900 + the prompt_id here)."""
    n_in = 900 + pid
    return (400, {"error": {"message": f"'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's "
                                       f"maximum context length is 4096 tokens and your request has {n_in} input "
                                       f"tokens (4000 > 4096 - {n_in}).", "type": "BadRequestError", "param": None,
                            "code": 400}})


def _no_room_openai(pid: int) -> tuple[int, dict]:
    """OpenAI's (and older vLLM's) words for the same: the tokens requested, the prompt's share first."""
    n_in = 900 + pid
    return (400, {"error": {"message": f"This model's maximum context length is 4096 tokens. However, you requested "
                                       f"{n_in + 4000} tokens ({n_in} in the messages, 4000 in the completion). "
                                       "Please reduce the length of the messages or completion.",
                            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})


def test_an_instruction_longer_than_the_context_is_a_final_row_scored_by_no_answer(tmp_path: Path,
                                                                                    data: Path) -> None:
    """Instruction 7 does not fit the candidate's context (vLLM's 400): its row is final (error
    context_length_exceeded, the server's words), scored by --no-answer (its one criterion a no_answer item), the run
    exits 0 and the rerun does not ask it again, as the judge routes write such a prompt's row."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return TOO_LONG if pid == 7 else None

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert sorted(_asked(cand)) == [1, 2, 3, 4, 5, 6, 7]  # the rerun asked nothing
    row = _answers(out)[7]
    assert (row["answer"], row["error"], row["reason"]) == (None, "context_length_exceeded",
                                                            TOO_LONG[1]["error"]["message"])
    counts = json.loads((out / "rank.json").read_text(encoding="utf-8"))["counts"]
    assert (counts["n_answer_failed"], counts["n_answer_too_long"], counts["n_no_answer"]) == (0, 1, 1)


@pytest.mark.parametrize("no_room", [_no_room, _no_room_openai])
def test_a_candidate_refusing_every_instruction_as_too_long_still_stops(tmp_path: Path, data: Path, no_room) -> None:
    """A max_tokens the window cannot add to any instruction (the settings, not the instructions): every 400 names
    its own request's token counts, yet the first three are alike and stop the run (exit 4), written as failed rows,
    not final ones, so the rerun against a fixed candidate asks them again."""
    out = tmp_path / "bench"
    with Scripted(lambda pid, n, model: no_room(pid)) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1")) == 4
    assert {pid: r["error"] for pid, r in _answers(out).items()} == {1: "request_failed", 2: "request_failed",
                                                                     3: "request_failed"}
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1")) == 0
        assert _asked(cand) == [4, 5, 6, 7, 1, 2, 3]


def test_an_instruction_leaving_no_room_for_max_tokens_is_a_final_row_naming_max_tokens(tmp_path: Path,
                                                                                        data: Path) -> None:
    """Instruction 7 alone fits the candidate's window but not with max_tokens (older vLLM's "'max_tokens' ... is too
    large"): the first refusals' stop does not fire (the other instructions are answered), so its row is final
    (context_length_exceeded, exit 0), its reason the server's words and the remedy: the run's key keeps max_tokens,
    so a failed row was refused again by every rerun (exit 3 for ever). The rerun asks nothing."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return _no_room(pid) if pid == 7 else None

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        (asked,) = [b["max_tokens"] for b in cand.bodies("/v1/chat/completions") if _pid(b) == 7]
    assert asked == 4096  # rank's default max_tokens, which the reason names
    row = _answers(out)[7]
    assert (row["answer"], row["error"]) == (None, "context_length_exceeded")
    assert row["reason"] == (f"{_no_room(7)[1]['error']['message']} (the prompt fits the context window, but not with "
                             "max_tokens 4096: lower --max-tokens, in a new --out or with --overwrite, since a resume "
                             "keeps the run's max_tokens)")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert _asked(cand) == []


def _longer_than_the_window(pid: int) -> tuple[int, dict]:
    """vLLM 0.32's 400 for an instruction longer than the window itself (``renderers/params.py``), naming this
    request's own prompt length (5000 + the prompt_id here), as a real server's words do."""
    return (400, {"error": {"message": f"This model's maximum context length is 4096 tokens. However, your prompt "
                                       f"contains {5000 + pid} input tokens, which exceeds this limit even without "
                                       "any output tokens. Please reduce the length of the input prompt.",
                            "type": "BadRequestError", "param": "input_tokens", "code": 400}})


def test_the_first_three_instructions_longer_than_the_window_do_not_stop_the_run(tmp_path: Path, data: Path) -> None:
    """Instructions 1-3 are asked first and are each longer than the candidate's window: the data's own, not a
    misconfigured candidate, so never offered to the first refusals' stop (three alike, numbers aside, stopped the run
    with exit 4 and failed rows): three final context_length_exceeded rows, exit 0, and the rerun asks nothing."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        return _longer_than_the_window(pid) if pid in (1, 2, 3) else None

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1")) == 0
        assert _asked(cand) == [1, 2, 3, 4, 5, 6, 7]
    assert {pid: (r["error"], r["reason"]) for pid, r in _answers(out).items() if r["error"]} == {
        pid: ("context_length_exceeded", _longer_than_the_window(pid)[1]["error"]["message"]) for pid in (1, 2, 3)}
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1")) == 0
        assert _asked(cand) == []


def test_a_refusal_held_while_every_later_instruction_is_too_long_is_written(tmp_path: Path, data: Path) -> None:
    """Instruction 1, asked first, is filtered (held: it could be the first of three alike); instructions 2-7 are
    each longer than the candidate's window, their own final rows, which neither hold nor end the holding. The stage
    ends without the stop, so the held refusal is written as its failed row: it was never written, and instruction 1
    had no row at all."""
    out = tmp_path / "bench"

    def script(pid: int, n: int, model: str):
        if pid == 1:
            return 400, {"error": {"message": "content filtered", "type": "invalid_request_error"}}
        return _longer_than_the_window(pid)

    with Scripted(script) as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1"))
        assert _asked(cand) == [1, 2, 3, 4, 5, 6, 7]
    rows = _answers(out)
    assert (code, sorted(rows)) == (3, sorted(CASES))  # 3: failed answers, counted
    assert rows[1]["error"] == "request_failed" and rows[1]["reason"].startswith("Refused: HTTP 400")
    assert {rows[pid]["error"] for pid in rows if pid != 1} == {"context_length_exceeded"}


def test_a_candidate_refused_before_any_answer_leaves_the_folder_as_it_found_it(tmp_path: Path, data: Path,
                                                                                 capsys) -> None:
    """A candidate that refuses the key (HTTP 401 at first contact) stopped the ranking before any answer, and left
    candidate/run_key.json: a ranking's mark (eval.input_checks.RANKING_MARKERS), so a judge-eval run into the same
    folder was then refused as "holds a judge-eval rank run". The folder is left as found: one the rank made is
    gone, one that was there holds nothing of the ranking's, and the judge-eval run goes ahead."""
    import judge
    from tests.support.eval_cli import run_args
    from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

    def never_asked(path: str, body: dict):
        raise AssertionError(f"the candidate was asked {path}")

    mine = tmp_path / "mine"
    mine.mkdir()
    refusing_key = ScriptedEndpoint(never_asked, respond_get=lambda path: (401, {"error": {"message": "bad key"}}))
    with refusing_key as cand, Judge(scores_by_output()) as judge_server:
        for out in (tmp_path / "new" / "bench", mine):
            capsys.readouterr()
            assert main(rank_argv(cand.base_url, judge_server.base_url, data, out)) == 4
            assert "refused a request without a key (HTTP 401: bad key)" in capsys.readouterr().err
        assert judge_server.requests == []
    assert not (tmp_path / "new").exists() and list(mine.iterdir()) == []
    records = tmp_path / "records.jsonl"
    judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], records)
    with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]")) as judge_server:
        assert main(run_args(judge_server.base_url, records, mine)) == 0, capsys.readouterr().err


def test_one_candidate_stage_at_a_time_asks_into_a_folder(tmp_path: Path, data: Path, capsys) -> None:
    """Two rankings into one folder would each append the candidate's answers to one answers.jsonl (every
    instruction asked, and paid for, twice). While one holds candidate/run.lock, the other stops (exit 2) naming the
    holder, before it asks the candidate anything or writes there."""
    from judge.plumbing.run_folder import hold_run_folder

    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge_server:
        with hold_run_folder(out / "candidate", "judge-eval rank"):
            capsys.readouterr()
            assert main(rank_argv(cand.base_url, judge_server.base_url, data, out)) == 2
            assert f"{out / 'candidate'} is in use by judge-eval rank (pid " in capsys.readouterr().err
        assert cand.requests == [] and judge_server.requests == []
    assert sorted(p.name for p in out.rglob("*")) == ["candidate", "run.lock"]


#: A proxy's (or judge-serve's) refusal of a request body past its bound, as the OpenAI SDK reads it.
PAST_BOUND = judge_serve_too_large()


def test_an_instruction_past_the_servers_body_bound_is_a_final_row_never_asked_again(tmp_path: Path,
                                                                                     data: Path) -> None:
    """Instruction 7's request is refused as too large (HTTP 413): one instruction a request, nothing smaller to
    send, and that server refuses it however often it is asked. Its row is final (context_length_exceeded, exit 0),
    its reason the 413's and how a larger server answers it, as the judge routes write one judgment past the bound.
    Before, a failed row every rerun asked and was refused again (exit 3 for ever)."""
    out = tmp_path / "bench"
    with Scripted(lambda pid, n, model: PAST_BOUND if pid == 7 else None) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert sorted(_asked(cand)) == [1, 2, 3, 4, 5, 6, 7]  # the rerun asked nothing
    row = _answers(out)[7]
    assert (row["answer"], row["error"], row["reason"]) == (None, "context_length_exceeded", (
        "the server refused the request's body as too large (HTTP 413: body: the request body exceeds 8388608 bytes), "
        "with this one instruction alone: a server with a larger bound (judge-serve's max_body_bytes) answers it in a "
        "new --out, with --overwrite, or once this row is deleted (a resume keeps final rows)"))
    counts = json.loads((out / "rank.json").read_text(encoding="utf-8"))["counts"]
    assert (counts["n_answer_failed"], counts["n_answer_too_long"], counts["n_no_answer"]) == (0, 1, 1)


def test_a_candidate_whose_body_bound_no_instruction_fits_stops_at_the_first_three(tmp_path: Path,
                                                                                    data: Path) -> None:
    """Every request refused with a 413 (a bound set too small): the server's, not the instructions', so the first
    three stop the run (exit 4) as failed rows, and the rerun against a larger bound asks them again."""
    out = tmp_path / "bench"
    with Scripted(lambda pid, n, model: PAST_BOUND) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1")) == 4
    assert {pid: r["error"] for pid, r in _answers(out).items()} == {1: "request_failed", 2: "request_failed",
                                                                     3: "request_failed"}
    assert _answers(out)[1]["reason"] == ("Refused: HTTP 413: Error code: 413 - body: the request body exceeds "
                                          "8388608 bytes")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--concurrency", "1")) == 0
        assert _asked(cand) == [4, 5, 6, 7, 1, 2, 3]
