"""The llm task-classifier method when the model's answer at a level below the task type fails: decided at the
answered task type (as every method decides when the evidence names a type and no leaf), not a failed choice, its
items naming the type alone; and a response body the method cannot read (no choice, too long, compressed) is a
failed choice at any level that says so, never an IndexError or an unbounded read."""

from __future__ import annotations

import math

import pytest

from judge.criteria_auto import expand_criteria, fallback_criteria
from judge.criteria_auto.llm import MAX_RESPONSE_BYTES, LLMClassifier
from judge.criteria_auto.policy import type_criteria
from tests.support.malformed_answers import UNREADABLE_200
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint, chat_completion


def _answer(text: str, logprobs: list[float]):
    body = chat_completion(text, "scripted")
    body["choices"][0]["logprobs"] = {"content": [{"token": "t", "logprob": lp} for lp in logprobs]}
    return body


def _by_level(first: dict, below: dict):
    """Answer level 0 (the 35 task types are offered) with ``first``, any lower level with ``below``."""

    def respond(path, body):
        options = body["structured_outputs"]["choice"]
        return 200, first if "Code creation" in options else below

    return respond


def test_an_off_list_subtype_after_a_confident_type_is_decided_at_the_task_type():
    """Style transfer at logprob -0.01 (0.990 >= 0.5), then "Pirate speak", which no subtype is: the type's shared
    criteria (as one id: no leaf was chosen), level task_type, a label (not a failure), and a reason naming the
    answer and the type. Code creation's leaves share no criterion as one id: the fallback set, said."""
    with ScriptedEndpoint(_by_level(_answer("Style transfer", [-0.01]), _answer("Pirate speak", [-0.01]))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Перепиши текст как пират")
    assert (choice.level, choice.fallback, choice.is_failure) == ("task_type", False, False)
    assert choice.task_type == "Style transfer" and choice.criteria == type_criteria("Style transfer")
    assert len(choice.criteria) == 13 and choice.task_type_probability == pytest.approx(math.exp(-0.01))
    assert "llm answered 'Pirate speak' at level 1, outside the taxonomy's options (after Style transfer)" in choice.reason
    assert "decided at the task type 'Style transfer' (probability 0.990 >= threshold 0.500)" in choice.reason
    with ScriptedEndpoint(_by_level(_answer("Code creation", [-0.01]), _answer("Rust", [-0.01]))) as ep:
        code = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Напиши функцию на Rust")
    assert (code.level, code.fallback, code.is_failure, code.task_type) == ("fallback", True, False, "Code creation")
    assert code.criteria == fallback_criteria() and "the leaves of 'Code creation' share no criterion" in code.reason


def test_a_bad_logprob_below_an_unsure_type_falls_back_with_a_label():
    """The type at 0.135 < 0.5 would have fallen back anyway: the fallback set, said, and still not a failure."""
    with ScriptedEndpoint(_by_level(_answer("Code creation", [-2.0]), _answer("Python", [math.inf]))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Напиши функцию")
    assert (choice.level, choice.fallback, choice.is_failure) == ("fallback", True, False)
    assert choice.criteria == fallback_criteria() and "task type probability 0.135 < threshold 0.500" in choice.reason


def test_a_task_type_choice_after_a_failed_answer_names_the_type_alone_in_its_items():
    """The Style transfer choice above ranks no leaf: its label is only the type's first leaf (Style transfer /
    Authors), so its items carry task_type "Style transfer" and empty task_subtype and task_subsubtype; they carried
    "Authors", and per-subtype reports counted every such row under it."""
    with ScriptedEndpoint(_by_level(_answer("Style transfer", [-0.01]), _answer("Pirate speak", [-0.01]))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Перепиши текст как пират")
    assert (choice.label, choice.alternatives) == ("Style transfer / Authors", ())
    items, record = expand_criteria("Перепиши текст как пират", "Арр!", choice)
    assert len(items) == 13 and record["label"] == "Style transfer / Authors"
    assert {(i["task_type"], i["task_subtype"], i["task_subsubtype"]) for i in items} == {("Style transfer", "", "")}


_OVERSIZED = {"choices": [{"message": {"content": "a" * MAX_RESPONSE_BYTES}}]}


@pytest.mark.parametrize("body, why", [
    ({"object": "error"}, "response body has no choices[0] object with a message"),
    ({"choices": []}, "response body has no choices[0] object with a message"),
    ({"choices": ["x"]}, "response body has no choices[0] object with a message"),
    ({"choices": [{"message": "x"}]}, "response body has no choices[0] object with a message"),
    ({"choices": [{"message": {"content": 7}}]},
     "response body's choices[0].message.content is an integer, not text"),
    ({"choices": [{"message": {"content": {"text": "Advice"}}}]},
     "response body's choices[0].message.content is an object, not text"),
    ({"choices": [{"message": {"content": "Advice"}, "logprobs": [-0.1]}]},
     "response body's choices[0].logprobs is no object with a content list"),
    (_OVERSIZED, f"response body is over {MAX_RESPONSE_BYTES} bytes"),
], ids=["no choices", "empty choices", "choice not an object", "message not an object", "content a number",
        "content an object", "logprobs a list", "too long"])  # fmt: skip
def test_a_malformed_or_oversized_body_is_a_failure_that_says_so(body, why):
    """At the task type: a failed choice (TaskChoice.failed) whose reason names what was wrong with the body (a
    message that is no object, a logprobs list, raised AttributeError before)."""
    with ScriptedEndpoint(lambda path, b: (200, body)) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert choice.is_failure and choice.level == "fallback" and why in choice.reason
    assert "llm's response at level 0 is unusable" in choice.reason


@pytest.mark.parametrize("body, said", UNREADABLE_200)
def test_a_200_body_json_cannot_read_is_said_as_every_endpoint_client_says_it(body, said):
    """A body cut short, no UTF-8 text, nested too deeply or holding a number past 4,300 digits: a failed choice whose
    reason is the line MERA's and the synthetic pipeline's clients say, with the place json.loads stopped at."""
    with ScriptedEndpoint(lambda path, b: (200, RawBody(body))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert choice.is_failure and choice.level == "fallback"
    assert choice.reason.endswith(f"llm's response at level 0 is unusable: {said}"), choice.reason


@pytest.mark.parametrize("below, why", [
    ({"choices": []}, "response body has no choices[0] object with a message"),
    (_OVERSIZED, f"response body is over {MAX_RESPONSE_BYTES} bytes"),
], ids=["empty choices", "too long"])  # fmt: skip
def test_an_unreadable_body_below_the_task_type_is_a_failed_choice_too(below, why):
    """Style transfer answered at level 0, then a body with no choice at level 1: the endpoint's fault, as a 5xx at
    that level is, so a failed choice (no label: a resumed run asks the row again), not a choice decided at the task
    type, which a resume keeps."""
    with ScriptedEndpoint(_by_level(_answer("Style transfer", [-0.01]), below)) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Перепиши текст как пират")
        assert len(ep.requests) == 2
    assert (choice.is_failure, choice.level, choice.label, choice.criteria) == (True, "fallback", "",
                                                                              tuple(fallback_criteria()))
    assert choice.reason == f"llm's response at level 1 is unusable: {why} (after Style transfer)"


def test_the_classifier_asks_for_an_uncompressed_body_and_refuses_a_compressed_one():
    """The 1 MiB bound counts the bytes received; a gzip body decoded on the way could be ~1000 times that within
    one chunk. Every request says Accept-Encoding: identity (with the key, when one is given), and a body sent
    encoded anyway is a failed choice naming the encoding, not decoded."""
    with ScriptedEndpoint(lambda path, b: (200, _answer("Advice", [-0.01]))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", api_key="k").choose("Дай совет")
    assert choice.label == "Advice" and len(ep.headers) == 1
    assert (ep.headers[0]["accept-encoding"], ep.headers[0]["authorization"]) == ("identity", "Bearer k")
    with ScriptedEndpoint(lambda path, b: (200, _answer("Advice", [-0.01]), {"Content-Encoding": "gzip"})) as ep:
        gzipped = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert gzipped.is_failure and "response body is 'gzip'-encoded, though identity was asked" in gzipped.reason
