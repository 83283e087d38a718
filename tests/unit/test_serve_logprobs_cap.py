"""A scale with more levels than vLLM returns log-probabilities for (its ``--max-logprobs``): judge-serve asks for none
rather than have every judgment refused, and reads the cap from the engine's flags."""

from __future__ import annotations

import logging
from collections import OrderedDict
from types import SimpleNamespace

from judge import Scale


class _DigitTokenizer:
    """Every level written as one token (ids from 100)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [100 + int(text)]


def _payload(levels: int) -> dict:
    from judge.checkpoints import JudgeKind
    from serve.judging import Judge, JudgeSettings

    judge = object.__new__(Judge)  # completion_payload needs no engines, threads or pools
    judge.settings = JudgeSettings(model_name="m", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "m"},
                                   max_model_len=2048, max_tokens=64, temperature=0.0, score_logprobs=True,
                                   lenient=False, constrained=False, feedback_max_chars=0, max_judgments=64)
    judge.tokenizer, judge._level_ids = _DigitTokenizer(), OrderedDict()
    job = SimpleNamespace(criterion=SimpleNamespace(scale=Scale.range(0, levels - 1)), prompt_ids=[1, 2, 3])
    return judge.completion_payload(job, SimpleNamespace(max_tokens=64, temperature=0.0, constrained=False))


def test_a_scale_of_more_levels_than_vllm_returns_logprobs_for_asks_none(caplog):
    """vLLM refuses a request whose ``logprobs`` exceeds its ``--max-logprobs`` (20 by default), verdict and all: a
    0..20 rubric of single-token levels failed every judgment. Such a request now asks for no log-probabilities
    (no expected_score or confidence), and the log says so once; 20 levels still ask for all 20."""
    import serve.score_reading as score_reading

    score_reading._warned_sizes.discard(21)
    assert _payload(20)["logprobs"] == 20 and _payload(20)["logprob_token_ids"] == list(range(100, 120))
    with caplog.at_level(logging.WARNING, logger="judge_serve"):
        for _ in range(3):
            payload = _payload(21)
            assert "logprobs" not in payload and "logprob_token_ids" not in payload
    said = [r.getMessage() for r in caplog.records if "single-token levels" in r.getMessage()]
    assert said == ["a scale of 21 single-token levels: no expected_score or confidence for it (the engine returns at "
                    "most 20 log-probabilities per token, vLLM's max_logprobs, and refuses a request asking more)"]


def test_max_logprobs_is_read_from_the_engine_flags():
    """``--max-logprobs`` as argparse reads it (the last one given, ``=`` or apart), -1 meaning no cap."""
    from serve.score_reading import VLLM_MAX_LOGPROBS, logprobs_fit, max_logprobs_of

    assert VLLM_MAX_LOGPROBS == 20 and max_logprobs_of([]) == 20 and max_logprobs_of(["--seed", "0"]) == 20
    assert max_logprobs_of(["--max-logprobs", "40"]) == 40 and max_logprobs_of(["--max-logprobs=-1"]) == -1
    assert max_logprobs_of(["--max-logprobs", "5", "--max-logprobs=30"]) == 30
    assert max_logprobs_of(["--max-logprobs", "many"]) == 20
    levels = dict.fromkeys(range(30), 1)
    assert logprobs_fit(levels, 30) and logprobs_fit(levels, -1) and not logprobs_fit(levels, 29)
