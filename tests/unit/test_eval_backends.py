"""How ``judge-eval run`` reaches a judge (``eval.judging.backends``), against scripted endpoints.

- A prompt the judge's context cannot hold is a final ``context_length_exceeded`` row on the chat route too (vLLM's
  and OpenAI's HTTP 400 words), never a failed request that every rerun sends again, and never held by the first
  refusals' stop. One that fits but leaves no room for max_tokens (older vLLM's and OpenAI's words) is held: three
  alike first stop the run with failed rows; released, it is a final row whose reason names max_tokens.
- The route is judge-serve when its ``GET /v1/models`` entry says so; the empty ``POST /v1/judge`` probe's transient
  failures are retried, and a probe that stays unanswered is an error naming the URL, never a guess.
- ``--judge``'s URL is the OpenAI base URL as given when it has a path; a bare ``scheme://host[:port]`` gets ``/v1``.
- A key ``extra_body`` sets to null is left out of a chat request's body.
- A chat answer sent as content parts is read as its text parts; content that is no text is a failed request, its
  row built as every failed row is (``failed_outcome``).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging import contact
from eval.judging.backends import ChatBackend, NoRoom, Refused, chat_extra_body, failed_outcome
from eval.judging.contact import base_of, detect_backend, first_contact
from eval.judging.config import RunConfig
from eval.judging.predictions import read_predictions
from judge.plumbing.retry import EndpointUnusable, RetryPolicy
from judge.prompts import POLLUX_PROMPT
from judge.verdicts import VerdictError
from judge.wire import ModelLimits
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

#: vLLM 0.32's words (entrypoints/serve/utils/api_utils.py get_max_tokens; v1/engine/input_processor.py;
#: renderers/params.py), in its error body, and OpenAI's.
VLLM_INPUT_LENGTH = "Input length (5000) exceeds model's maximum context length (4096)."
VLLM_MODEL_LENGTH = ("The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
                     "`max_model_len` is no smaller than the number of text tokens.")
VLLM_PROMPT_CONTAINS = ("This model's maximum context length is 4096 tokens. However, your prompt contains 5000 input "
                        "tokens, which exceeds this limit even without any output tokens. Please reduce the length of "
                        "the input prompt.")
OPENAI_CONTEXT = ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. "
                  "Please reduce the length of the messages.")
TAGGED_VERDICT = "[FEEDBACK] ok [RESULT] 1 [END]"
#: Probe retries without waiting.
NO_WAIT = RetryPolicy(max_retries=2, backoff_s=0.0, max_backoff_s=0.0, sleep=lambda s: None)


def _vllm_error(message: str) -> dict:
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}


def _openai_error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": "messages",
                      "code": "context_length_exceeded"}}


@pytest.fixture
def data(tmp_path) -> Path:
    """Four sample records as a JSONL file."""
    return judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")


def _chat(base_url: str, config: RunConfig, record) -> list[dict]:
    async def once() -> list[dict]:
        backend = ChatBackend(base_url, "EMPTY", "scripted", config)
        try:
            return await backend.judge([record])
        finally:
            await backend.aclose()

    return asyncio.run(once())


# ------------------------------------------------------------------------------------------------- context length

@pytest.mark.parametrize("body", [_vllm_error(VLLM_INPUT_LENGTH), _vllm_error(VLLM_MODEL_LENGTH),
                                  _vllm_error(VLLM_PROMPT_CONTAINS), _openai_error(OPENAI_CONTEXT)],
                         ids=["vllm-input", "vllm-model", "vllm-prompt", "openai"])
def test_a_chat_prompt_too_long_for_the_context_is_a_final_row(body):
    record = judge.load_records(judge.sample_data_path())[0]
    with ScriptedEndpoint(lambda path, _: (400, body)) as server:
        (outcome,) = _chat(server.base_url, RunConfig(prompt="ru", verdict_format="tagged"), record)
    assert outcome == {"raw_output": None, "feedback": "", "score": None, "parse_ok": False,
                       "error": VerdictError.CONTEXT_LENGTH_EXCEEDED, "reason": body["error"]["message"],
                       "score_source": None, "in_scale": None, "regression_score": None, "finish_reason": None}


def test_another_chat_400_is_still_a_refusal():
    record = judge.load_records(judge.sample_data_path())[0]
    with ScriptedEndpoint(lambda path, _: (400, _vllm_error("temperature must be non-negative"))) as server:
        with pytest.raises(Refused) as refused:
            _chat(server.base_url, RunConfig(prompt="ru", verdict_format="tagged"), record)
    assert (refused.value.status, refused.value.said) == (400, "temperature must be non-negative")


def test_a_run_writes_a_too_long_prompt_once_and_a_rerun_does_not_ask_it_again(data, tmp_path):
    """vLLM refuses every prompt as too long: the run ends with one final context_length_exceeded row per item (not
    three alike refusals that stop it), and a rerun of the folder sends nothing."""

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 400, _vllm_error(VLLM_INPUT_LENGTH)

    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as server:
        assert eval_main(run_args(server.base_url, data, out, "--max-retries", "0")) == 0
        n_chat = len(server.bodies("/v1/chat/completions"))
        assert eval_main(run_args(server.base_url, data, out, "--max-retries", "0")) == 0
        assert len(server.bodies("/v1/chat/completions")) == n_chat == 4
    rows = read_predictions(out)
    assert [(row["error"], row["reason"]) for row in rows] == [(VerdictError.CONTEXT_LENGTH_EXCEEDED,
                                                                VLLM_INPUT_LENGTH)] * 4


def _no_room(body: dict) -> dict:
    """vLLM's 400 for a prompt that fits the 4096-token window but not with max_tokens 4000, naming this request's own
    input tokens as a real server does (here the prompt's length in characters)."""
    n_in = len(body["messages"][0]["content"])
    return _vllm_error(f"'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context "
                       f"length is 4096 tokens and your request has {n_in} input tokens (4000 > 4096 - {n_in}).")


def test_a_chat_prompt_leaving_no_room_for_max_tokens_is_a_refusal_naming_max_tokens():
    """The prompt fits, the answer's max_tokens does not (the settings' fault): a refusal (``NoRoom``) the runner
    offers to the first refusals' stop, carrying the final row's reason for when the stop does not fire: the
    server's words, max_tokens and the remedy."""
    record = judge.load_records(judge.sample_data_path())[0]
    said = []
    with ScriptedEndpoint(lambda path, body: (400, said.append(_no_room(body)) or said[-1])) as server:
        with pytest.raises(NoRoom) as refused:
            _chat(server.base_url, RunConfig(prompt="ru", verdict_format="tagged", max_tokens=4000), record)
    words = said[0]["error"]["message"]
    assert (refused.value.status, refused.value.said) == (400, words)
    assert refused.value.final_reason == (f"{words} (the prompt fits the context window, but not with max_tokens "
                                          "4000: lower --max-tokens, in a new --out or with --overwrite, since a "
                                          "resume keeps the run's max_tokens)")


def test_one_item_leaving_no_room_for_max_tokens_is_a_final_row_and_the_run_ends_clean(data, tmp_path):
    """The second request of four (concurrency 1, the first answered) fits the window but not with max_tokens 256:
    the stop does not fire, so the item's row is final (context_length_exceeded, its reason naming max_tokens 256 and
    the remedy), the run exits 0, and a rerun asks nothing. A failed row was asked again by every rerun and refused
    again (exit 3 for ever): a resume keeps max_tokens, part of the run's key."""
    n = [0]

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        n[0] += 1
        return (400, _no_room(body)) if n[0] == 2 else (200, chat_completion(TAGGED_VERDICT, body["model"]))

    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as server:
        argv = run_args(server.base_url, data, out, "--max-retries", "0", "--concurrency", "1", "--max-tokens", "256")
        assert eval_main(argv) == 0
        bodies = server.bodies("/v1/chat/completions")
        assert [b["max_tokens"] for b in bodies] == [256] * 4
        words = _no_room(bodies[1])["error"]["message"]
        assert eval_main(argv) == 0
        assert len(server.bodies("/v1/chat/completions")) == 4
    rows = read_predictions(out)
    assert [row["error"] for row in rows] == [None, VerdictError.CONTEXT_LENGTH_EXCEEDED, None, None]
    assert rows[1]["reason"] == (f"{words} (the prompt fits the context window, but not with max_tokens 256: lower "
                                 "--max-tokens, in a new --out or with --overwrite, since a resume keeps the run's "
                                 "max_tokens)")


def test_first_refusals_hold_no_room_and_set_too_long_aside():
    """A too-long prompt's final row (``aside``) is written at once and neither held nor closing the holding: three
    of them first, then three alike refusals, stop. A held refusal's ``if_stopped`` payload is what ``keep_held``
    writes (a NoRoom's failed row), refusals after the stop too; released, its own payload is written."""
    from eval.judging.backends import FirstRefusals

    refusal = Refused("HTTP 400: no room", 400, "no room")
    first = FirstRefusals(3)
    assert [first.offer(None, f"long{k}", aside=True) for k in range(3)] == [["long0"], ["long1"], ["long2"]]
    # payloads are the arguments keep_held hands to write: one name each here
    assert [first.offer(refusal, (f"final{k}",), if_stopped=(f"failed{k}",)) for k in range(3)] == [[], [], []]
    assert first.stopped is refusal
    assert first.offer(refusal, ("final3",), if_stopped=("failed3",)) == []
    written = []
    first.keep_held(written.append, "the judge", 4, 10)
    assert written == ["failed0", "failed1", "failed2", "failed3"]
    released = FirstRefusals(3)
    assert released.offer(refusal, "final0", if_stopped="failed0") == []
    assert released.offer(None, "answered") == ["final0", "answered"]


def test_first_refusals_are_alike_whatever_numbers_their_words_hold():
    """Refusals whose words differ only in numbers (each request's own token counts) are alike: three stop the run,
    the third's words quoted; words that differ otherwise, or another status, are not."""
    from eval.judging.backends import FirstRefusals

    def refused(said: str, status: int = 400) -> Refused:
        return Refused(f"HTTP {status}: {said}", status, said)

    counts = FirstRefusals(3)
    assert [counts.offer(refused(f"your request has {n} input tokens (4000 > 4096 - {n})"), n) for n in
            (901, 77, 12345)] == [[], [], []]
    assert counts.stopped is not None
    assert counts.stopped.said == "your request has 12345 input tokens (4000 > 4096 - 12345)"
    words = FirstRefusals(3)
    assert [words.offer(refused("item 1 refused"), 0), words.offer(refused("item 2 blocked"), 1)] == [[], [0, 1]]
    status = FirstRefusals(3)
    assert [status.offer(refused("limit 1"), 0), status.offer(refused("limit 2", 403), 1)] == [[], [0, 1]]


def test_a_judge_whose_max_tokens_no_prompt_leaves_room_for_stops_and_its_rerun_asks_again(data, tmp_path):
    """Every prompt refused for a max_tokens too large, each 400 with its own token counts: the three first
    refusals are alike (numbers aside), the run stops (exit 4) with failed rows, not final ones, and the rerun
    against a server with room asks every item."""
    from judge.plumbing.retry import EXIT_UNUSABLE

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 400, _no_room(body)

    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as server:
        assert eval_main(run_args(server.base_url, data, out, "--max-retries", "0", "--concurrency", "1")) == \
            EXIT_UNUSABLE
        said = {_no_room(b)["error"]["message"] for b in server.bodies("/v1/chat/completions")}
    assert len(said) == 3  # three requests, three different messages
    assert [row["error"] for row in read_predictions(out)] == ["request_failed"] * 3

    def fixed(path: str, body: dict) -> tuple:
        return (404, {"detail": "Not Found"}) if path == "/v1/judge" else (200, chat_completion(TAGGED_VERDICT,
                                                                                               body["model"]))
    with ScriptedEndpoint(fixed) as server:
        assert eval_main(run_args(server.base_url, data, out, "--max-retries", "0", "--concurrency", "1")) == 0
        assert len(server.bodies("/v1/chat/completions")) == 4
    assert [row["error"] for row in read_predictions(out)] == [None] * 4


# ------------------------------------------------------------------------------------------------- backend probe

def _server(probe: list[tuple], entry: dict | None = None) -> ScriptedEndpoint:
    """A server answering the k-th POST /v1/judge with ``probe[k]`` (the last one after), listing ``entry``."""
    seen: list[int] = []

    def respond(path: str, body: dict) -> tuple:
        seen.append(1)
        return probe[min(len(seen), len(probe)) - 1]

    def respond_get(path: str) -> tuple:
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 4096,
                                                 **(entry or {})}]}

    return ScriptedEndpoint(respond, respond_get=respond_get)


@pytest.mark.parametrize("entry", [{"judge_max_tokens": 256}, {"verdict_format": "integer"}])
def test_a_model_entry_with_judge_serves_fields_is_judge_serve_without_a_probe(entry):
    """judge-serve's own fields in GET /v1/models decide, whatever /v1/judge answers (here 404)."""
    with _server([(404, {"detail": "Not Found"})], entry) as server:
        _, limits = first_contact(server.base_url, "", "")  # what judge-eval run reads before it decides
        assert detect_backend(server.base_url, "", limits) == "judge-serve"
        assert server.requests == []
    with _server([(404, {"detail": "Not Found"})]) as server:  # the limits decide, nothing is asked again
        assert detect_backend(server.base_url, "", ModelLimits(judge_max_tokens=256)) == "judge-serve"
        assert server.requests == [] and server.gets == []


@pytest.mark.parametrize(("probe", "kind"), [
    ([(404, {"detail": "Not Found"})], "chat"),
    ([(405, {"detail": "Method Not Allowed"})], "chat"),
    ([(400, {"detail": "items: required field is missing"})], "judge-serve"),
    ([(429, {"error": {"message": "rate limited"}}), (404, {"detail": "Not Found"})], "chat"),
    ([(503, {"error": {"message": "loading"}}), (502, {}), (404, {"detail": "Not Found"})], "chat"),
    ([(503, {"error": {"message": "loading"}}), (400, {"detail": "items: required"})], "judge-serve"),
], ids=["404", "405", "400", "429-then-404", "5xx-then-404", "503-then-400"])
def test_the_probe_retries_transient_answers_before_deciding(probe, kind, monkeypatch):
    monkeypatch.setattr(contact, "PROBE_POLICY", NO_WAIT)
    with _server(probe) as server:
        assert detect_backend(server.base_url, "", ModelLimits()) == kind
        assert server.bodies("/v1/judge") == [{}] * len(probe)


def test_a_probe_that_stays_unanswered_is_an_error_naming_the_url(monkeypatch):
    """5xx past the retries, and no connection at all: an error naming the URL, not judge-serve or chat."""
    monkeypatch.setattr(contact, "PROBE_POLICY", NO_WAIT)
    with _server([(503, {"error": {"message": "engine loading"}})]) as server:
        with pytest.raises(EndpointUnusable) as busy:
            detect_backend(server.base_url, "", ModelLimits())
        assert len(server.bodies("/v1/judge")) == 3
    assert busy.value.status == 503
    assert str(busy.value).startswith(f"the judge at {server.base_url}: POST {server.url}/v1/judge, which tells "
                                      "judge-serve from a chat server, is still unanswered after retries (HTTP 503: "
                                      "engine loading)")
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        with pytest.raises(EndpointUnusable) as unreachable:
            detect_backend(url, "", ModelLimits())
    said = str(unreachable.value)
    assert f"POST {url}/judge, which tells judge-serve from a chat server, is still unanswered" in said
    assert "ConnectError" in said and "--backend chat or --backend judge-serve" in said


# ------------------------------------------------------------------------------------------------------ base URL

@pytest.mark.parametrize(("url", "base"), [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
    ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ("https://generativelanguage.googleapis.com/v1beta/openai/",
     "https://generativelanguage.googleapis.com/v1beta/openai"),
])
def test_base_of_takes_a_url_with_a_path_as_given(url, base):
    assert base_of(url) == base


def test_a_run_reaches_an_api_whose_base_url_is_not_v1(data, tmp_path):
    """An OpenAI-compatible API under /v1beta/openai/ (Gemini's form): the model list and every chat request go
    under that path, not under /v1beta/openai/v1."""

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1beta/openai/chat/completions":
            return 200, chat_completion(TAGGED_VERDICT, "gemini")
        return 404, {"error": {"message": "not found"}}

    def respond_get(path: str) -> tuple:
        if path == "/v1beta/openai/models":
            return 200, {"object": "list", "data": [{"id": "gemini", "object": "model"}]}
        return 404, {"error": {"message": "not found"}}

    with ScriptedEndpoint(respond, respond_get=respond_get) as server:
        code = eval_main(run_args(server.url + "/v1beta/openai/", data, tmp_path / "run", "--max-retries", "0"))
        chat = server.bodies("/v1beta/openai/chat/completions")
    assert code == 0 and len(chat) == 4
    assert all(row["parse_ok"] for row in read_predictions(tmp_path / "run"))


# ---------------------------------------------------------------------------------------------------- extra_body

def test_a_null_extra_body_key_is_left_out_of_the_chat_request():
    """vLLM's fields set to null: the request an API such as api.openai.com takes, byte for byte."""
    nulls = {"top_k": None, "min_p": None, "repetition_penalty": None, "chat_template_kwargs": None}
    config = RunConfig(prompt="ru", verdict_format="tagged", max_tokens=64, extra_body={**nulls, "seed": 7})
    assert chat_extra_body(config) == {"presence_penalty": 0.0, "frequency_penalty": 0.0, "top_p": 1.0, "seed": 7}
    record = judge.load_records(judge.sample_data_path())[0]
    with ScriptedEndpoint(lambda path, _: (200, chat_completion(TAGGED_VERDICT, "scripted"))) as server:
        (outcome,) = _chat(server.base_url, config, record)
        (sent,) = server.bodies("/v1/chat/completions")
    assert outcome["parse_ok"] and outcome["score"] == 1
    assert sent == {"messages": judge.chat_messages(POLLUX_PROMPT.render(record)), "model": "scripted",
                    "max_tokens": 64, "temperature": 0.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
                    "top_p": 1.0, "seed": 7}


# ---------------------------------------------------------------------------------------------------------- root

def test_a_vllm_entry_under_a_served_name_keeps_the_checkpoint_it_loaded():
    """``vllm serve ai-forever/Pollux-4B-Judge --served-model-name judge`` lists id "judge" and root the checkpoint:
    the limits the run reads keep root (what names the weights), and judge-serve's own fields do not include it."""
    entry = {"id": "judge", "object": "model", "owned_by": "vllm", "root": "ai-forever/Pollux-4B-Judge",
             "parent": None, "max_model_len": 8192}
    with ScriptedEndpoint(lambda path, _: (404, {}), respond_get=lambda path: (200, {"data": [entry]})) as server:
        model, limits = first_contact(server.base_url, "", "")
    assert (model, limits.root, limits.max_model_len) == ("judge", "ai-forever/Pollux-4B-Judge", 8192)
    assert "root" not in limits.advertised()
    assert ModelLimits.from_entry({"id": "judge", "root": None}).root is None


# ------------------------------------------------------------------------------------------------- cut answers

@pytest.mark.parametrize(("verdict_format", "text", "finish_reason", "score", "error"), [
    ("integer", "<think>\nВерно.</think>\n\n1", "length", None, VerdictError.CUT),   # the "1" of a cut "10"
    ("integer", "<think>\nВерно.</think>\n\n1", "stop", 1.0, None),
    ("integer", "<think>\nПроверяю", "length", None, VerdictError.UNCLOSED_THINK),    # a failure stays itself
    ("tagged", TAGGED_VERDICT, "length", 1.0, None),                                  # [END] written: read as is
])  # fmt: skip
def test_a_chat_answer_cut_by_max_tokens_is_read_as_judge_serve_reads_it(verdict_format, text, finish_reason, score,
                                                                         error):
    """An integer answer vLLM stopped at max_tokens (finish_reason "length") fails as ``cut`` on the chat route, as
    judge-serve and the GRPO rewards fail it (``judge.verdicts.cut_short``): its integer is wherever the cut fell."""
    record = judge.load_records(judge.sample_data_path())[0]
    with ScriptedEndpoint(lambda path, body: (200, chat_completion(text, body["model"], finish_reason))) as server:
        (outcome,) = _chat(server.base_url, RunConfig(prompt="ru", verdict_format=verdict_format), record)
    assert (outcome["score"], outcome["error"]) == (score, error)


# ------------------------------------------------------------------------------------------------- content parts

def test_a_chat_answer_of_content_parts_is_read_as_its_text():
    """Mistral's API sends the answer as content parts, its thinking beside the text: that was an AttributeError
    (every retry, every rerun); the text parts joined are the verdict, the thinking skipped."""
    record = judge.load_records(judge.sample_data_path())[0]
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "[RESULT] 0"}]},
             {"type": "text", "text": "[FEEDBACK] ok "}, {"type": "text", "text": "[RESULT] 1 [END]"}]
    config = RunConfig(prompt="ru", verdict_format="tagged", max_tokens=64)
    with ScriptedEndpoint(lambda path, body: (200, chat_completion(parts, body["model"]))) as server:
        (outcome,) = _chat(server.base_url, config, record)
        (sent,) = server.bodies("/v1/chat/completions")
    assert (outcome["raw_output"], outcome["score"], outcome["parse_ok"]) == (TAGGED_VERDICT, 1.0, True)
    assert sent == {"messages": judge.chat_messages(POLLUX_PROMPT.render(record)), "model": "scripted",
                    "max_tokens": 64, "temperature": 0.0, **chat_extra_body(config)}


@pytest.mark.parametrize("verdict_format", ["tagged", "integer"])
def test_a_chat_answer_of_reasoning_parts_alone_is_a_verdict_cut_in_its_thinking(verdict_format):
    """A judge that max_tokens stopped while it was thinking, sent as Mistral's API sends it: a thinking part alone.
    It is no failed request (a rerun would get the same cut): it reads as the same cut written inline, "<think>" and
    the reasoning never closed, a final unclosed_think row, in either verdict format; the request is the usual one."""
    record = judge.load_records(judge.sample_data_path())[0]
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "Ответ верный, "}]},
             {"type": "reasoning", "text": "оценка"}]
    inline = "<think>Ответ верный, оценка"
    config = RunConfig(prompt="ru", verdict_format=verdict_format, max_tokens=64)
    outcomes = []
    for content in (parts, inline):
        reply = chat_completion(content, "scripted", finish_reason="length")
        with ScriptedEndpoint(lambda path, body, reply=reply: (200, reply)) as server:
            outcomes += _chat(server.base_url, config, record)
            (sent,) = server.bodies("/v1/chat/completions")
        assert sent == {"messages": judge.chat_messages(POLLUX_PROMPT.render(record)), "model": "scripted",
                        "max_tokens": 64, "temperature": 0.0, **chat_extra_body(config)}
    from_parts, from_inline = outcomes
    assert from_parts == from_inline
    assert (from_parts["raw_output"], from_parts["score"], from_parts["parse_ok"], from_parts["error"]) == (
        inline, None, False, VerdictError.UNCLOSED_THINK)


def test_chat_content_that_is_no_text_is_a_failed_request_row(data, tmp_path):
    """An image part (or a refusal part) is no verdict: the request fails saying what came (never the text), a
    request_failed row (exit 3) that the next run asks again, with every judge field of a failed row."""
    image = [{"type": "image_url", "image_url": {"url": "https://example.org/x.png"}}]

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/judge":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(image, body["model"])

    with ScriptedEndpoint(respond) as server:
        assert eval_main(run_args(server.base_url, data, tmp_path / "run", "--max-retries", "0", "--limit", "2")) == 3
    said = "the chat answer's message content is not text: a list of parts (image_url)"
    rows = read_predictions(tmp_path / "run")
    assert [{k: row[k] for k in failed_outcome("", "")} for row in rows] == [
        {"raw_output": None, "feedback": "", "score": None, "parse_ok": False, "error": "request_failed",
         "reason": said, "score_source": None, "in_scale": None, "regression_score": None,
         "finish_reason": None}] * 2
    record = judge.load_records(judge.sample_data_path())[0]
    with ScriptedEndpoint(lambda path, body: (200, chat_completion({"text": "1"}, body["model"]))) as server:
        with pytest.raises(Refused, match="^the chat answer's message content is not text: an object$"):
            _chat(server.base_url, RunConfig(prompt="ru", verdict_format="tagged"), record)


def test_a_max_tokens_over_the_whole_window_is_the_settings_refusal_on_the_chat_route():
    """vLLM 0.32 refuses a max_tokens above the window itself ("max_tokens=5000 cannot be greater than
    max_model_len=4096", renderers/params.py), whatever the prompt: ``NoRoom`` on the chat route as on MERA's (it was
    a plain refusal there, CONTEXT_LIMIT not matching those words)."""
    record = judge.load_records(judge.sample_data_path())[0]
    words = "max_tokens=5000 cannot be greater than max_model_len=4096. Please request fewer output tokens."
    with ScriptedEndpoint(lambda path, body: (400, _vllm_error(words))) as server:
        with pytest.raises(NoRoom) as refused:
            _chat(server.base_url, RunConfig(prompt="ru", verdict_format="tagged", max_tokens=5000), record)
    assert refused.value.said == words and "max_tokens 5000" in refused.value.final_reason
