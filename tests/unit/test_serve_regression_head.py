"""What a regression judge's head reads, and when it is not asked: the exact ``/classify`` input for our exports
(prompt + the rationale re-rendered ``[FEEDBACK] ... [END]``) and for released judges (the text as generated); a
cut or blank generation; a head input past the context; the tokens ``check`` reserves for the head. The engines are
scripted on 127.0.0.1 and the payloads that crossed the wire are asserted."""

from __future__ import annotations

import asyncio

import pytest

import judge
from judge.checkpoints import JudgeKind
from serve.schema import RequestError, parse_judge_request
from tests.support.scripted_endpoint import ScriptedEndpoint

ITEM = {"instruction": "Напиши стих.", "answer": "Весна пришла.", "criteria": ["Креативность"]}


def _settings(head_input: str, max_model_len: int = 8192, stop_at_end: bool = True):
    from serve.judging import JudgeSettings

    return JudgeSettings(model_name="m", kind=JudgeKind.REGRESSION, engine_models={"generator": "m", "pooler": "m"},
                         max_model_len=max_model_len, max_tokens=64, temperature=0.0, score_logprobs=False,
                         lenient=False, constrained=False, feedback_max_chars=0, max_judgments=512,
                         head_input=head_input, stop_at_end=stop_at_end)


def _judged(tok, head_input: str, text: str, finish_reason: str = "stop", max_model_len: int = 8192,
            oversize: str = "refuse", classified: object = None, stop_at_end: bool = True):
    """The response and the (path, body) pairs the engines received, the generation answering ``text`` and the
    pooling engine ``classified`` (default: the head's 1.5)."""
    from serve.engine_client import EngineClient, engine_session
    from serve.judging import Judge

    def respond(path: str, body: dict) -> tuple:
        if path == "/classify":
            return 200, {"data": [{"probs": [1.5]}]} if classified is None else classified
        return 200, {"choices": [{"text": text, "finish_reason": finish_reason}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    async def run(engine: ScriptedEndpoint):
        async with engine_session(30.0, 4) as http:
            client = EngineClient(http, engine.url, asyncio.Event(), lambda: "down")
            server = Judge(_settings(head_input, max_model_len, stop_at_end), tok, client, client, asyncio.Semaphore(1))
            return await server.run(parse_judge_request({**ITEM, "oversize": oversize}))

    with ScriptedEndpoint(respond) as engine:
        response = asyncio.run(run(engine))
        return response.items[0].results[0], list(engine.requests)


def _prompt(tok) -> str:
    from serve.jobs import build_jobs

    (job,) = build_jobs(parse_judge_request(ITEM), tok, max_model_len=8192, max_tokens=64, thinking=False,
                        template=judge.prompts.POLLUX_PROMPT)
    return job.prompt


def test_an_exports_head_reads_the_prompt_and_the_rationale_rendered_as_training_rendered_it(qwen_tokenizer):
    tok = qwen_tokenizer
    result, requests = _judged(tok, "rationale_target", "[FEEDBACK] Хороший стих. [RESULT] 2 [END]")
    (generation,) = [body for path, body in requests if path == "/v1/completions"]
    (classify,) = [body for path, body in requests if path == "/classify"]
    (head_ids,) = classify["input"]
    head = tok.decode(head_ids)
    assert generation["stop"] == ["[END]"]
    # ChatML: the generation prompt, then the assistant turn's text and its end of turn
    assert head == tok.decode(generation["prompt"]) + "[FEEDBACK] Хороший стих. [END]<|im_end|>\n"
    assert head == judge.apply_chat(tok, _prompt(tok), completion=judge.render_rationale_target("Хороший стих."))
    assert (result.score, result.regression_score, result.parse_ok) == (1.5, 1.5, True)


def test_the_head_is_asked_for_its_raw_value_whatever_the_config_says(qwen_tokenizer):
    """vLLM's pooler puts a one-label classifier's value through a sigmoid unless its config says ``problem_type``
    regression (vllm/model_executor/layers/pooler/activations.py); a classifier served with --generator-model may say
    nothing. The request itself turns the activation off, so /classify answers the head's own value."""
    _, requests = _judged(qwen_tokenizer, "rationale_target", "[FEEDBACK] Хороший стих. [END]")
    (classify,) = [body for path, body in requests if path == "/classify"]
    assert classify["use_activation"] is False


def test_a_released_judges_head_reads_the_text_as_generated(qwen_tokenizer):
    tok = qwen_tokenizer
    text = "Хороший стих.\n[RESULT] 2"
    result, requests = _judged(tok, "generated_text", text)
    (generation,) = [body for path, body in requests if path == "/v1/completions"]
    (classify,) = [body for path, body in requests if path == "/classify"]
    head = tok.decode(classify["input"][0])
    assert "stop" not in generation and "include_stop_str_in_output" not in generation
    assert head == tok.decode(generation["prompt"]) + text + "<|im_end|>\n"
    assert head == judge.apply_chat(tok, _prompt(tok), completion=text)
    assert result.score == 1.5


def test_an_exports_generation_cut_at_max_tokens_is_cut_and_the_head_is_not_asked(qwen_tokenizer):
    """Re-rendered, the cut rationale would gain an [END] the judge never wrote and be scored as a whole one."""
    result, requests = _judged(qwen_tokenizer, "rationale_target", "[FEEDBACK] Хороший сти", finish_reason="length")
    assert [path for path, _ in requests] == ["/v1/completions"]
    assert (result.error, result.score, result.regression_score, result.parse_ok) == ("cut", None, None, False)
    assert result.rationale_complete is False and result.feedback == "Хороший сти"


def test_an_exports_rationale_closed_before_max_tokens_is_scored_whatever_followed(qwen_tokenizer):
    """With ``stop_at_end`` false the generation runs past the rationale's [END] to the end of the turn; one that
    reached max_tokens there was cut after a whole rationale, which the head reads exactly as training rendered it:
    scored, not a ``cut`` failure saying the [END] never came."""
    result, requests = _judged(qwen_tokenizer, "rationale_target", "[FEEDBACK] Хороший стих. [END] и ещё, и ещё",
                               finish_reason="length", stop_at_end=False)
    (classify,) = [body for path, body in requests if path == "/classify"]
    assert qwen_tokenizer.decode(classify["input"][0]).endswith("[FEEDBACK] Хороший стих. [END]<|im_end|>\n")
    assert (result.error, result.score, result.parse_ok, result.rationale_complete) == (None, 1.5, True, True)


@pytest.mark.parametrize("text", ["[FEEDBACK] Хороший стих. [RESULT] 2 и ещё и ещё", "[FEEDBACK] Хороший стих. [RESULT]"])
def test_an_exports_rationale_closed_by_a_result_tag_before_max_tokens_is_scored(qwen_tokenizer, text):
    """A [RESULT] the LM added closes the rationale as [END] does (``parse_rationale``): under ``stop_at_end`` true
    a generation cut after it is scored on the closed rationale, as the same text ended by ``stop`` is."""
    result, requests = _judged(qwen_tokenizer, "rationale_target", text, finish_reason="length")
    (classify,) = [body for path, body in requests if path == "/classify"]
    assert qwen_tokenizer.decode(classify["input"][0]).endswith("[FEEDBACK] Хороший стих. [END]<|im_end|>\n")
    assert (result.error, result.score, result.rationale_complete, result.finish_reason) == (None, 1.5, True, "length")


def test_a_released_judges_cut_generation_is_scored_as_pollux_scores_it(qwen_tokenizer):
    result, requests = _judged(qwen_tokenizer, "generated_text", "[FEEDBACK] Хороший сти", finish_reason="length")
    assert [path for path, _ in requests] == ["/v1/completions", "/classify"]
    assert (result.error, result.score, result.parse_ok) == (None, 1.5, True)


@pytest.mark.parametrize("head_input", ["rationale_target", "generated_text"])
def test_a_blank_generation_is_empty_and_the_head_is_not_asked(qwen_tokenizer, head_input):
    result, requests = _judged(qwen_tokenizer, head_input, "   \n")
    assert [path for path, _ in requests] == ["/v1/completions"]
    assert (result.error, result.score, result.parse_ok) == ("empty", None, False)


def test_a_head_input_past_the_context_is_not_sent_and_follows_oversize(qwen_tokenizer):
    """A generation longer than asked (an engine that overran max_tokens) makes a head input past the context: that
    judgment fails under ``oversize: fail``, the request is refused under ``refuse``, the pooler never asked."""
    long = "[FEEDBACK] " + "слово " * 3000 + "[END]"
    result, requests = _judged(qwen_tokenizer, "rationale_target", long, max_model_len=2048, oversize="fail")
    assert [path for path, _ in requests] == ["/v1/completions"]
    assert (result.error, result.score) == ("context_length_exceeded", None)
    assert result.error_reason.startswith("items[0]: the regression head's input for criterion 'Креативность' is ")
    assert "longer than the model's context of 2048" in result.error_reason
    with pytest.raises(RequestError, match="context_length_exceeded|longer than the model's context of 2048"):
        _judged(qwen_tokenizer, "rationale_target", long, max_model_len=2048, oversize="refuse")


def test_the_reserve_covers_an_untagged_rationale_re_rendered(qwen_tokenizer):
    """An untagged rationale of N tokens becomes ``[FEEDBACK] <it> [END]<|im_end|>\\n`` in the head's input: the tags,
    spaces and end of turn are the reserve (the old fixed 8 was short of them on Qwen2.5), plus the margin."""
    from serve.judging import REGRESSION_RESERVE_MARGIN, regression_reserve

    tok = qwen_tokenizer
    added = (len(tok.encode("[FEEDBACK] слово [END]<|im_end|>\n", add_special_tokens=False))
             - len(tok.encode("слово", add_special_tokens=False)))
    assert added > 8
    assert regression_reserve(tok, "rationale_target") == added + REGRESSION_RESERVE_MARGIN
    # a released judge's head reads the text as generated: its end of turn alone
    assert regression_reserve(tok, "generated_text") == len(tok.encode("<|im_end|>\n")) + REGRESSION_RESERVE_MARGIN


@pytest.mark.parametrize(("classified", "why"), [
    ({"object": "list"}, "no data[0].probs[0]: data is missing"),
    ({"data": {"probs": [1.5]}}, "no data[0].probs[0]: data is an object, not a list"),
    ({"data": []}, "no data[0].probs[0]: data[0] is missing"),
    ({"data": [[1.5]]}, "no data[0].probs[0]: data[0] is a list, not an object"),
    ({"data": [{"probs": None}]}, "no data[0].probs[0]: data[0].probs is null, not a list"),
    ({"data": [{"probs": []}]}, "no data[0].probs[0]: data[0].probs[0] is missing"),
    # indexed as it was, a string gave its first letter and a counted failure: a wrong shape is the engine's fault
    ({"data": [{"probs": "1.5"}]}, "no data[0].probs[0]: data[0].probs is a string, not a list"),
])  # fmt: skip
def test_a_classify_answer_of_another_shape_is_a_502_naming_where_in_json_words(qwen_tokenizer, classified, why):
    """A pooling engine's 200 without ``data[0].probs[0]`` is unreadable: the 502 names where the answer parts from
    that shape, as JSON names it; it named the Python exception instead ("no data[0].probs[0]: TypeError")."""
    from serve.engine_client import EngineFailure

    with pytest.raises(EngineFailure) as failure:
        _judged(qwen_tokenizer, "rationale_target", "[FEEDBACK] Хороший стих. [RESULT] 2 [END]", classified=classified)
    assert failure.value.status == 502
    assert f"the engine's answer to /classify could not be read ({why})" in str(failure.value)


@pytest.mark.parametrize("value", [None, "1.5", [1.5], 10**400], ids=["null", "text", "list", "int-past-float"])
def test_a_head_value_that_is_no_number_is_a_counted_failure_of_its_item(qwen_tokenizer, value):
    """The shape up to ``data[0].probs[0]`` is right, the head's value is not a number: the head's answer, counted as
    that item's failure (``no_score``), never a 502 and never a score."""
    result, _ = _judged(qwen_tokenizer, "rationale_target", "[FEEDBACK] Хороший стих. [RESULT] 2 [END]",
                        classified={"data": [{"probs": [value]}]})
    assert (result.error, result.score, result.parse_ok) == ("no_score", None, False)


def test_a_head_input_is_built_only_once_its_engine_slot_is_taken(qwen_tokenizer, monkeypatch):
    """A regression judgment's head input (the whole prompt and rationale, tokenized: a copy, not the item's shared
    prefix) is built once it holds an engine slot, as a generation's whole prompt is (``serve.jobs.Job.prefix_ids``):
    judgments whose generation is done wait behind every queued generation for a slot, and each would otherwise hold
    its own full copy while it waits. With one slot and four criteria, at most one head input exists unsent."""
    from collections import OrderedDict

    import serve.judging
    from serve.jobs import build_jobs
    from serve.judging import Judge, JudgeOptions

    pending, most = [0], [0]
    real_chat_ids = serve.judging.chat_ids

    def counted_chat_ids(*args, **kwargs):  # only the head input is tokenized here while jobs are judged
        pending[0] += 1
        most[0] = max(most[0], pending[0])
        return real_chat_ids(*args, **kwargs)

    class Engine:
        async def post(self, path: str, payload: dict, request_id: str = "") -> dict:
            await asyncio.sleep(0)  # an engine call yields to the loop, as the real one does
            if path == "/classify":
                pending[0] -= 1
                return {"data": [{"probs": [1.0]}]}
            return {"choices": [{"text": "[FEEDBACK] ok [END]", "finish_reason": "stop"}]}

    monkeypatch.setattr(serve.judging, "chat_ids", counted_chat_ids)
    criteria = [{"name": f"Критерий {k}", "rubrics": "0: нет\n1: да"} for k in range(4)]
    jobs = build_jobs(parse_judge_request({**ITEM, "criteria": criteria}), qwen_tokenizer, max_model_len=8192,
                      max_tokens=64)
    server = object.__new__(Judge)  # no tokenizer copy thread
    server.settings, server.tokenizer, server._level_ids = _settings("rationale_target"), qwen_tokenizer, OrderedDict()
    server.generator = server.pooler = Engine()
    server.limit = asyncio.Semaphore(1)
    options = JudgeOptions(max_tokens=64, temperature=0.0, lenient=False, constrained=False)
    results = asyncio.run(server._judge_jobs(jobs, options))
    assert [r.score for r in results] == [1.0] * 4
    assert (pending[0], most[0]) == (0, 1)


@pytest.mark.parametrize(("text", "finish_reason"), [("[FEEDBACK] Хороший сти", "length"),
                                                     ("[FEEDBACK] Хороший стих. [END]", "length")],
                         ids=["cut", "closed-at-the-limit"])
def test_an_exports_rationale_is_parsed_once_per_reply(qwen_tokenizer, monkeypatch, text, finish_reason):
    """One reply's rationale is read once: its text for the head and whether the length limit cut it come from that
    one reading (``judge.parse_rationale``, wherever it is called from)."""
    import judge.verdicts
    import serve.judging

    parsed: list[str] = []
    original = judge.verdicts.parse_rationale

    def counted(said: str):
        parsed.append(said)
        return original(said)

    monkeypatch.setattr(judge.verdicts, "parse_rationale", counted)
    monkeypatch.setattr(serve.judging, "parse_rationale", counted)
    _judged(qwen_tokenizer, "rationale_target", text, finish_reason=finish_reason)
    assert parsed == [text]
