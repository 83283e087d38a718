"""The score distribution is asked of the generating engine within its own ``--max-logprobs``, as judge-serve's
``engine_args`` start it, not within vLLM's default 20: a wider cap gives a long scale its distribution, a narrower
one must not be passed (vLLM refuses such a request whole, verdict and all). The decision is the settings' and the
request body's, so no engine is needed."""

from __future__ import annotations

import asyncio

import pytest

from judge import Scale
from judge.checkpoints import JudgeKind
from serve.config import ServeConfig
from serve.jobs import Job
from serve.judging import Judge, JudgeOptions, JudgeSettings, config_bounds
from serve.schema import ResolvedCriterion
from serve.score_reading import VLLM_MAX_LOGPROBS


class DigitTokens:
    """A tokenizer that writes every number of up to three digits as one token (so a 26-level scale is 26 tokens)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [1000 + int(text)] if text.isdigit() and len(text) <= 3 else [1, 2]


def _payload(engine_args: list[str], levels: int, generator_url: str = "") -> dict:
    """The ``/v1/completions`` body of one judgment on a scale of ``levels`` levels, under a server whose engine
    is started with ``engine_args`` (or attached at ``generator_url``)."""
    config = ServeConfig(model="m", engine_args=engine_args, generator_url=generator_url)
    settings = JudgeSettings(model_name="m", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "m"},
                             max_model_len=2048, max_tokens=16, temperature=0.0, score_logprobs=True, lenient=False,
                             constrained=False, feedback_max_chars=0, max_judgments=512, **config_bounds(config))
    judge = Judge(settings, DigitTokens(), None, None, asyncio.Semaphore(1))
    criterion = ResolvedCriterion("Критерий", "rubrics", Scale(tuple(range(levels))), None)
    job = Job(0, 0, criterion, "prompt", [1, 2, 3])
    return judge.completion_payload(job, JudgeOptions(max_tokens=16, temperature=0.0, lenient=False,
                                                      constrained=False))


@pytest.mark.parametrize("engine_args", [["--max-logprobs", "40"], ["--max-logprobs=40"], ["--max-logprobs", "-1"],
                                         ["--max_logprobs", "40"], ["--max_logprobs=-1"]])  # vLLM takes either spelling
def test_a_wider_engine_cap_gives_a_long_scale_its_distribution(engine_args):
    payload = _payload(engine_args, 26)
    assert payload["logprobs"] == 26 and len(payload["logprob_token_ids"]) == 26


def test_a_narrower_engine_cap_is_not_passed():
    """``--max-logprobs 5``: a 10-level scale is not asked for (vLLM would refuse the request); a 5-level one is."""
    assert "logprobs" not in _payload(["--max-logprobs", "5"], 10)
    assert "logprobs" not in _payload(["--max_logprobs=5"], 10)
    assert _payload(["--max-logprobs", "5"], 5)["logprobs"] == 5


def test_without_the_flag_or_on_an_attached_engine_vllms_default_holds():
    """No flag: vLLM's default. An attached engine was started by someone else: the flags judge-serve was given
    are not its, and vLLM's default is assumed."""
    assert config_bounds(ServeConfig(model="m"))["max_logprobs"] == VLLM_MAX_LOGPROBS
    assert config_bounds(ServeConfig(model="m", generator_url="http://127.0.0.1:9/v1",
                                     engine_args=["--max-logprobs", "40"]))["max_logprobs"] == VLLM_MAX_LOGPROBS
    assert "logprobs" not in _payload([], VLLM_MAX_LOGPROBS + 1)
    assert _payload([], VLLM_MAX_LOGPROBS)["logprobs"] == VLLM_MAX_LOGPROBS
