"""The score distribution is asked of vLLM as ``logprob_token_ids``, whose only limit is vLLM's
``MAX_LOGPROB_TOKEN_IDS`` (128, ``vllm/sampling_params.py``): with those ids set, the completions endpoint passes
``logprobs`` on as None (``vllm/entrypoints/openai/completion/protocol.py``), so ``--max-logprobs`` does not bound
them. A 26-level scale under ``--max-logprobs 20`` gets its 26 ids; past 128 none are asked (vLLM would refuse the
request whole). The decision is the request body's, so no engine is needed."""

from __future__ import annotations

import asyncio
import logging

from judge import Scale
from judge.checkpoints import JudgeKind
from serve.config import ServeConfig
from serve.jobs import Job
from serve.judging import Judge, JudgeOptions, JudgeSettings, config_bounds
from serve.schema import ResolvedCriterion
from serve.score_reading import MAX_LOGPROB_TOKEN_IDS


class DigitTokens:
    """A tokenizer that writes every number of up to three digits as one token (so a 26-level scale is 26 tokens)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [1000 + int(text)] if text.isdigit() and len(text) <= 3 else [1, 2]


def _payload(engine_args: list[str], levels: int) -> dict:
    """The ``/v1/completions`` body of one judgment on a scale of ``levels`` levels, under a server whose engine
    is started with ``engine_args``."""
    config = ServeConfig(model="m", engine_args=engine_args)
    settings = JudgeSettings(model_name="m", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "m"},
                             max_model_len=2048, max_tokens=16, temperature=0.0, score_logprobs=True, lenient=False,
                             constrained=False, feedback_max_chars=0, max_judgments=512, **config_bounds(config))
    judge = Judge(settings, DigitTokens(), None, None, asyncio.Semaphore(1))
    criterion = ResolvedCriterion("Критерий", "rubrics", Scale(tuple(range(levels))), None)
    job = Job(0, 0, criterion, "prompt", [1, 2, 3])
    return judge.completion_payload(job, JudgeOptions(max_tokens=16, temperature=0.0, lenient=False,
                                                      constrained=False))


def test_26_level_ids_are_sent_under_max_logprobs_20():
    payload = _payload(["--max-logprobs", "20"], 26)
    assert payload["logprob_token_ids"] == list(range(1000, 1026))
    assert payload["logprobs"] == 26  # vLLM's protocol wants it set beside the ids; it is passed on as None


def test_vllms_id_limit_is_128_and_a_longer_scale_asks_none_said_once(caplog):
    import serve.score_reading as score_reading

    score_reading._warned_sizes.discard(129)
    assert MAX_LOGPROB_TOKEN_IDS == 128
    assert len(_payload([], 128)["logprob_token_ids"]) == 128
    with caplog.at_level(logging.WARNING, logger="judge_serve"):
        for _ in range(3):
            over = _payload([], 129)
            assert "logprobs" not in over and "logprob_token_ids" not in over
    said = [r.getMessage() for r in caplog.records if "single-token levels" in r.getMessage()]
    assert said == ["a scale of 129 single-token levels: no expected_score or confidence for it (vLLM takes at most "
                    "128 logprob_token_ids per request and refuses a request asking more)"]
