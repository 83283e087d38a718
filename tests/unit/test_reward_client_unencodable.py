"""judge.reward_clients: a sample's text that UTF-8 cannot carry (a lone surrogate, which a Python string or a JSON
``\\ud800`` escape may hold) is refused before anything is sent, naming the sample by the caller's index and the
field within it, as the client's other refusals of an unsent sample are (fast tier)."""

from __future__ import annotations

import asyncio
import re

import pytest

from judge.reward_clients import JudgeRewardClient, RewardSample, request_chunks

RUBRIC = "0: плохо\n\n1: хорошо"


def _client() -> JudgeRewardClient:
    # port 9 (discard): nothing answers, and the refusal must come before any request is tried
    return JudgeRewardClient("http://127.0.0.1:9", api_key_env="", max_body_bytes=None)


@pytest.mark.parametrize("sample, field", [
    (RewardSample("вопрос \ud800", "ответ", ("Креативность",)), "instruction"),
    (RewardSample("вопрос", "ответ \udfff конец", ("Креативность",)), "answer"),
    (RewardSample("вопрос", "ответ", ("Креативность",), "эталон \ud83d"), "reference_answer"),
    (RewardSample("вопрос", "ответ", ("Креативность", {"name": "x\ud800", "rubrics": RUBRIC})), "criteria[1].name"),
])  # fmt: skip
def test_a_lone_surrogate_is_refused_naming_the_sample_and_field(sample, field):
    """The sync and async requests and the request cutter refuse it with a ValueError naming ``samples[i].field``
    and the surrogate, not UnicodeEncodeError naming neither."""
    ok = RewardSample("вопрос", "ответ", ("Креативность",))
    pattern = r"^samples\[{}\]\." + re.escape(field) + ": not valid Unicode text: a lone surrogate"
    with pytest.raises(ValueError, match=pattern.format(6)):
        _client().rewards([ok, ok, sample], first=4)
    with pytest.raises(ValueError, match=pattern.format(6)):
        asyncio.run(_client().arewards([ok, ok, sample], first=4))
    with pytest.raises(ValueError, match=pattern.format(1)):
        request_chunks([ok, sample], max_items=64, max_judgments=512)


def test_a_lone_surrogate_in_a_fields_name_is_refused_naming_where():
    """A rubric mapping's level key holding one is named by the path to its mapping."""
    sample = RewardSample("вопрос", "ответ", ({"name": "x", "rubrics": {"0": "плохо", "1\udc80": "хорошо"}},))
    with pytest.raises(ValueError, match=r"^samples\[2\]\.criteria\[0\]\.rubrics \(a field's name\): not valid "
                                         r"Unicode text: a lone surrogate \(U\+DC80\) at character 1"):
        _client().rewards([sample], first=2)


@pytest.mark.parametrize("extra, ends", [
    ({"k" * 1_000_000: "v\ud800"}, ": not valid Unicode text"),
    ({"k" * 1_000_000: {"a\ud800": 1}}, " (a field's name): not valid Unicode text"),
])  # fmt: skip
def test_a_field_path_of_a_megabyte_is_cut_in_the_refusal(extra, ends):
    """A client's field named by a megabyte of text: the refusal shows its path cut, its length said, as the
    refusal of a criterion judge-serve would refuse does, not the megabyte."""
    sample = RewardSample("вопрос", "ответ", ({"name": "x", "rubrics": RUBRIC, **extra},))
    with pytest.raises(ValueError) as caught:
        request_chunks([sample], max_items=64, max_judgments=512)
    message = str(caught.value)
    assert len(message) < 400
    assert re.search(r"^samples\[0\]\.criteria\[0\]\.k+\.\.\. \[1000023 characters\]" + re.escape(ends), message)
