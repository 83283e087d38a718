"""``eval.mera.client.OpenAICompatClient`` reading a chat answer whose content comes as content parts, against a
scripted endpoint: the text parts are the answer (reasoning parts skipped); a choice whose content is no text is that
one sample's failure (``Generation.failure``, its reason stated), never its request's, nor an AttributeError."""

from __future__ import annotations

import pytest

from eval.mera.client import Generation, OpenAICompatClient
from tests.support.malformed_answers import UNREADABLE_200
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint, chat_completion

MESSAGES = [{"role": "user", "content": "Напиши функцию."}]


def _generate(content, stop: list[str] | None = None, finish_reason: str = "stop") -> list[Generation]:
    """``generate`` in chat mode against an endpoint answering ``content``; the request it sent asserted exactly."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        return 200, chat_completion(content, body["model"], finish_reason)

    with ScriptedEndpoint(respond) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=0)
        try:
            return client.generate(MESSAGES, mode="chat", max_tokens=16, stop=stop or ())
        finally:
            assert endpoint.bodies("/v1/chat/completions") == [
                {"model": "scripted", "n": 1, "temperature": 0.0, "max_tokens": 16, "messages": MESSAGES,
                 **({"stop": stop} if stop else {})}]


def test_content_parts_are_read_as_the_answers_text():
    """The text parts joined (Mistral's "thinking" part left out), then cut at the client's stop as any text is."""
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "план"}]},
             {"type": "text", "text": "def f():\n    return 1\n"}, {"type": "text", "text": "\ndef g(): pass"}]
    (gen,) = _generate(parts, stop=["\ndef"])
    assert (gen.raw_text, gen.text, gen.finish_reason) == ("def f():\n    return 1\n\ndef g(): pass",
                                                           "def f():\n    return 1\n", "stop")


def test_a_null_content_is_an_empty_answer():
    (gen,) = _generate(None)
    assert (gen.raw_text, gen.text) == ("", "")


@pytest.mark.parametrize("content, described", [
    ([{"type": "refusal", "refusal": "Не могу."}], "a list of parts (refusal)"),
    ([{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "u"}}],
     "a list of parts (image_url, text)"),
    ({"text": "x"}, "an object"),
])  # fmt: skip
def test_content_that_is_no_text_is_the_samples_failure_naming_what_it_was(content, described):
    (gen,) = _generate(content)
    assert gen == Generation(text="", raw_text="", finish_reason="stop", prompt_tokens=1, completion_tokens=1,
                             failure=f"the endpoint's message content is not text: {described}")


THINKING = [{"type": "thinking", "thinking": [{"type": "text", "text": "Сначала разберём условие"}]}]


@pytest.mark.parametrize("finish_reason, failure", [
    ("length", "reasoning not finished"),  # cut by max_tokens before the answer: no answer, and why
    ("stop", None),  # ended after its reasoning: the model's empty answer, as a null content is
])  # fmt: skip
def test_reasoning_parts_alone_are_an_unfinished_reasoning_when_cut(finish_reason, failure):
    (gen,) = _generate(THINKING, finish_reason=finish_reason)
    assert (gen.text, gen.raw_text, gen.finish_reason, gen.failure) == ("", "", finish_reason, failure)


REASONING = "Сначала разберём условие: нужна сумма двух чисел, потом"


def _generate_message(message: dict, finish_reason: str) -> list[Generation]:
    """``generate`` in chat mode against an endpoint answering the whole ``message`` as given."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason,
                                  "stop_reason": None}],
                     "usage": {"prompt_tokens": 12, "completion_tokens": 16, "total_tokens": 28}}

    with ScriptedEndpoint(respond) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=0)
        gens = client.generate(MESSAGES, mode="chat", max_tokens=16)
    assert endpoint.bodies("/v1/chat/completions") == [
        {"model": "scripted", "n": 1, "temperature": 0.0, "max_tokens": 16, "messages": MESSAGES}]
    return gens


#: The reasoning in a field of its own, as a ``--reasoning-parser`` server sends it: older vLLM
#: (``reasoning_content``), newer vLLM (``reasoning``), SGLang (``reasoning_content``, ``tool_calls`` null).
SEPARATE_REASONING = [
    {"role": "assistant", "content": None, "reasoning_content": REASONING, "tool_calls": []},
    {"role": "assistant", "content": None, "reasoning": REASONING, "tool_calls": []},
    {"role": "assistant", "content": None, "reasoning_content": REASONING, "tool_calls": None},
    {"role": "assistant", "content": "", "reasoning_content": REASONING},
]


@pytest.mark.parametrize("message", SEPARATE_REASONING)
@pytest.mark.parametrize("finish_reason, failure", [("length", "reasoning not finished"), ("stop", None)])
def test_a_separate_reasoning_field_cut_by_max_tokens_is_an_unfinished_reasoning(message, finish_reason, failure):
    """The same event as reasoning parts alone on Mistral's API: cut by max_tokens, "reasoning not finished" (the
    sample not_generated, never an empty program blamed on the model); ended of its own accord, the empty answer."""
    (gen,) = _generate_message(message, finish_reason)
    assert (gen.text, gen.raw_text, gen.finish_reason, gen.failure) == ("", "", finish_reason, failure)


@pytest.mark.parametrize("message", [
    {"role": "assistant", "content": "    return a +", "reasoning_content": REASONING},  # cut in its answer
    {"role": "assistant", "content": None, "reasoning_content": "", "tool_calls": []},  # no reasoning at all
    {"role": "assistant", "content": None, "reasoning_content": None, "reasoning": "  \n"},
])  # fmt: skip
def test_an_answer_or_an_empty_reasoning_cut_by_max_tokens_is_the_text_as_it_came(message):
    (gen,) = _generate_message(message, "length")
    assert (gen.text, gen.finish_reason, gen.failure) == (message["content"] or "", "length", None)


def _n_choices(path: str, body: dict) -> tuple[int, dict]:
    """Three choices: an answer, reasoning cut by max_tokens, a refusal part; or, one per seed, the seed's one."""
    choices = [({"role": "assistant", "content": "    return a + b\n"}, "stop"),
               ({"role": "assistant", "content": THINKING}, "length"),
               ({"role": "assistant", "content": [{"type": "refusal", "refusal": "Не могу."}]}, "stop")]
    if body["n"] == 1:
        choices = [choices[body["seed"] - 7]]
    return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": i, "message": m, "finish_reason": f} for i, (m, f) in enumerate(choices)],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}


@pytest.mark.parametrize("sampling", ["n", "seeds"])
def test_each_choice_is_read_on_its_own_and_an_unreadable_one_fails_alone(sampling):
    """One request for n = 3 (or one per seed) whose second choice is reasoning cut by max_tokens and whose third is a
    refusal part: the first sample stands, the other two fail each with its reason (the whole request was refused,
    the good sample with it)."""
    with ScriptedEndpoint(_n_choices) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=0)
        gens = client.generate(MESSAGES, mode="chat", n=3, temperature=0.6, max_tokens=16, seed=7, sampling=sampling)
    base = {"model": "scripted", "temperature": 0.6, "max_tokens": 16, "messages": MESSAGES}
    assert endpoint.bodies("/v1/chat/completions") == (
        [{**base, "n": 3, "seed": 7}] if sampling == "n" else [{**base, "n": 1, "seed": s} for s in (7, 8, 9)])
    assert [(g.text, g.finish_reason, g.failure) for g in gens] == [
        ("    return a + b\n", "stop", None),
        ("", "length", "reasoning not finished"),
        ("", "stop", "the endpoint's message content is not text: a list of parts (refusal)")]


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_top_k_is_sent_in_the_body_only_when_given(mode):
    """--top-k 50 (what transformers' generate applies in MERA's harness when the checkpoint's generation_config.json
    sets none) reaches the endpoint as the body's top_k, vLLM's extension of the OpenAI API; left out, no top_k."""
    prompt = MESSAGES if mode == "chat" else "def f():"

    def answer(path, body):
        if mode == "chat":
            return 200, chat_completion("    return 1\n", body["model"])
        return 200, {"id": "c", "object": "text_completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "text": "    return 1\n", "finish_reason": "stop"}]}

    route = "/v1/chat/completions" if mode == "chat" else "/v1/completions"
    with ScriptedEndpoint(answer) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=0)
        client.generate(prompt, mode=mode, n=1, temperature=0.6, max_tokens=8, seed=3, top_k=50)
        client.generate(prompt, mode=mode, n=1, temperature=0.6, max_tokens=8, seed=3)
    key = "messages" if mode == "chat" else "prompt"
    base = {"model": "scripted", key: prompt, "n": 1, "temperature": 0.6, "max_tokens": 8, "seed": 3}
    assert endpoint.bodies(route) == [{**base, "top_k": 50}, base]


@pytest.mark.parametrize("body, said", UNREADABLE_200)
def test_a_200_body_json_cannot_read_ends_the_run_in_the_readers_words(body, said, tmp_path):
    """A 200 whose body is valid JSON json.loads cannot hold was a bare RecursionError, or a ValueError advising
    sys.set_int_max_str_digits, which ``judge-eval mera`` showed as a traceback: the endpoint's failure, said as eval's
    backends say it, in the one line that ends the run."""
    from eval.mera.client import UnreadableAnswer, endpoint_failure
    from eval.mera.config import RutieConfig

    with ScriptedEndpoint(lambda path, sent: (200, RawBody(body))) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=0)
        with pytest.raises(UnreadableAnswer) as caught:
            client.generate(MESSAGES, mode="chat", max_tokens=16)
        assert len(endpoint.bodies("/v1/chat/completions")) == 1
    assert str(caught.value) == said
    config = RutieConfig(endpoint=endpoint.base_url, out=str(tmp_path / "out"))
    assert endpoint_failure(caught.value, config) == (
        f"the endpoint at {endpoint.base_url} failed mid-run ({said}); the answers so far are saved in "
        f"{tmp_path / 'out'}: rerunning the same command resumes")


@pytest.mark.parametrize("mode", ["chat", "completion"])
@pytest.mark.parametrize("body, said", [
    (RawBody(b"<html>\x1b[2J502 Bad Gateway</html>", "text/html"),
     "HTTP 200, but the answer is not a JSON object with choices: '<html>\\x1b[2J502 Bad Gateway</html>'"),
    ({"error": {"message": "upstream\x1b[2J down"}},
     "HTTP 200, but the answer holds no choice: upstream\\x1b[2J down"),
    ([1, 2], "HTTP 200, but the answer is not a JSON object with choices: [1, 2]"),
    ({"choices": {"text": "x"}}, "HTTP 200, but the answer holds no choice"),
], ids=["html-page", "error-object", "json-list", "choices-no-list"])
def test_a_200_that_is_no_completion_ends_the_run_in_one_line(body, said, mode, tmp_path):
    """A proxy's HTML page labelled text/html (the SDK hands it back as its text), its {"error": ...} without
    choices, a JSON list: each was an AttributeError or TypeError ('str' object has no attribute 'choices') that
    ``judge-eval mera`` showed as a traceback. The endpoint's failure, said with the server's words escaped."""
    from eval.mera.client import UnreadableAnswer, endpoint_failure
    from eval.mera.config import RutieConfig

    with ScriptedEndpoint(lambda path, sent: (200, body)) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", max_retries=0)
        with pytest.raises(UnreadableAnswer) as caught:
            client.generate(MESSAGES if mode == "chat" else "q", mode=mode, max_tokens=16)
    config = RutieConfig(endpoint=endpoint.base_url, out=str(tmp_path / "out"))
    assert endpoint_failure(caught.value, config) == (
        f"the endpoint at {endpoint.base_url} failed mid-run ({said}); the answers so far are saved in "
        f"{tmp_path / 'out'}: rerunning the same command resumes")
