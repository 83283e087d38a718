"""``eval.mera.client.OpenAICompatClient`` reading a chat answer whose content comes as content parts, against a
scripted endpoint: the text parts are the answer (reasoning parts skipped), content that is no text is that request's
failure (``UnreadableAnswer``, a ``RequestRefused`` the MERA runners already count), never an AttributeError."""

from __future__ import annotations

import pytest

from eval.mera.client import Generation, OpenAICompatClient, RequestRefused, UnreadableAnswer
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

MESSAGES = [{"role": "user", "content": "Напиши функцию."}]


def _generate(content, stop: list[str] | None = None) -> list[Generation]:
    """``generate`` in chat mode against an endpoint answering ``content``; the request it sent asserted exactly."""
    with ScriptedEndpoint(lambda path, body: (200, chat_completion(content, body["model"]))) as endpoint:
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
    ({"text": "x"}, "a JSON dict"),
])  # fmt: skip
def test_content_that_is_no_text_is_the_requests_failure(content, described):
    with pytest.raises(UnreadableAnswer) as failed:
        _generate(content)
    assert isinstance(failed.value, RequestRefused) and failed.value.status is None
    assert str(failed.value) == f"the endpoint's message content is not text: {described}"
