"""Score reading: a seq2seq judge's verdict and its distribution over the scale, from one completion.

The verdict comes from ``judge.parse_judge_output`` (a failure stays a failure: no score). When the request asked
vLLM for the log-probabilities of the scale's level tokens (``level_token_ids``), the position of the score the
judge wrote yields its whole distribution over the scale (``score_distribution``): ``expected_score`` and
``confidence`` in the result.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any

from judge import Scale, ScoreSource, VerdictFormat
from judge.verdicts import read_served_verdict

__all__ = ["MAX_LOGPROB_TOKEN_IDS", "ScoreDistribution", "level_token_ids", "logprobs_fit",
           "score_distribution", "seq2seq_verdict"]

log = logging.getLogger("judge_serve")

#: The most ``logprob_token_ids`` vLLM takes in one request (``MAX_LOGPROB_TOKEN_IDS`` in ``vllm/sampling_params.py``,
#: vLLM 0.32); a request asking more is refused whole, verdict and all, so a scale of more single-token levels gets no
#: score distribution instead. ``--max-logprobs`` does not bound these: with ``logprob_token_ids`` set, vLLM's
#: completions endpoint passes ``logprobs`` on as None (``CompletionRequest.to_sampling_params`` in
#: ``vllm/entrypoints/openai/completion/protocol.py``), and only this limit is checked.
MAX_LOGPROB_TOKEN_IDS = 128
_warned_sizes: set[int] = set()


def logprobs_fit(level_ids: dict[int, int]) -> bool:
    """Whether vLLM returns a log-probability per level; when not, the request must not ask for them (vLLM would
    refuse it whole), and the log says so once per scale size."""
    if len(level_ids) <= MAX_LOGPROB_TOKEN_IDS:
        return True
    if len(level_ids) not in _warned_sizes:
        _warned_sizes.add(len(level_ids))
        log.warning("a scale of %d single-token levels: no expected_score or confidence for it (vLLM takes at most %d "
                    "logprob_token_ids per request and refuses a request asking more)",
                    len(level_ids), MAX_LOGPROB_TOKEN_IDS)
    return False


def level_token_ids(tokenizer: Any, scale: Scale) -> dict[int, int] | None:
    """Each scale level's token id, when every level is written as one token (``"0"`` .. ``"4"``), else None."""
    ids = {}
    for level in scale.levels:
        encoded = tokenizer.encode(str(level), add_special_tokens=False)
        if len(encoded) != 1:
            return None
        ids[level] = encoded[0]
    return ids


@dataclass(frozen=True)
class ScoreDistribution:
    """The judge's distribution over the scale at the score it wrote.

    Attributes:
        probs: level -> probability, renormalised over the scale's levels.
        expected: sum of level x probability.
        confidence: the renormalised probability of the level the judge wrote.
        mass: the probability the judge put on any scale level before renormalising (near 1 for a judge that
            knows the format; small values mean the distribution is mostly elsewhere).
    """

    probs: dict[int, float]
    expected: float
    confidence: float
    mass: float


_RESULT_BEFORE = re.compile(r"\[\s*RESULT\s*\][\s*_:(]*$", re.IGNORECASE)


def score_distribution(
    tokens: list[str], top_logprobs: list[dict[str, float] | None], scale: Scale, score: float
) -> ScoreDistribution | None:
    """Read the score token's distribution from a completion's log-probabilities.

    The score token is the last generated token that spells the written ``score`` and follows a ``[RESULT]`` tag.

    Args:
        tokens: the generated tokens as text.
        top_logprobs: per position, token text -> log-probability (including the scale's level tokens).
        scale: the criterion's scale.
        score: the score the verdict parser read.

    Returns:
        The distribution, or None when the score is not a single level token or its position is not found.
    """
    if not float(score).is_integer() or int(score) not in scale.levels:
        return None
    written = str(int(score))
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i].strip() != written or not _RESULT_BEFORE.search("".join(tokens[max(0, i - 16):i])):
            continue
        logprobs = top_logprobs[i] or {}
        raw = {level: math.exp(logprobs[str(level)]) for level in scale.levels if str(level) in logprobs}
        mass = sum(raw.values())
        if int(score) not in raw or mass <= 0:
            return None
        probs = {level: raw.get(level, 0.0) / mass for level in scale.levels}
        expected = sum(level * p for level, p in probs.items())
        return ScoreDistribution(probs=probs, expected=expected, confidence=probs[int(score)], mass=min(mass, 1.0))
    return None


def seq2seq_verdict(text: str, logprobs: dict[str, Any] | None, scale: Scale, lenient: bool,
                    verdict_format: str = VerdictFormat.TAGGED, *, reasoning_opened: bool = False,
                    finish_reason: str | None = None) -> dict[str, Any]:
    """A seq2seq judge's verdict fields of ``judge.JudgeResult`` from its completion.

    A verdict is read as the GRPO rewards read one in training (``train.grpo_rewards.read_verdict``), in either
    format: after the ``<think>`` its prompt opened, if it did (then an output with no ``</think>`` was cut inside the
    reasoning: ``unclosed_think``, not the last integer of "проверяю пункт 2", nor the score of a tagged verdict the
    reasoning drafted), and an integer one failed as ``VerdictError.CUT`` when the length limit stopped it
    (``finish_reason`` ``length``): the integer is wherever the cut fell.

    Args:
        text: the generated text.
        logprobs: the completion's ``logprobs`` (``tokens``, ``top_logprobs``) when the level tokens' were asked.
        scale: the criterion's scale.
        lenient: read the verdict leniently (``judge.parse_verdict``); tagged: a score followed by a cut ``[END]``
            ("[RESULT] 1 [EN") is read too.
        verdict_format: ``judge.VerdictFormat``; integer: the ``<think>`` block is the feedback, the integer after it
            the score.
        reasoning_opened: the rendered prompt ends inside a ``<think>`` it opened
            (``judge.rewards.prompt_opens_reasoning``), whatever the format.
        finish_reason: the engine's (``length``: its ``max_tokens`` stopped the output; a tagged score it may have
            cut short fails as ``cut``, see ``judge.verdicts.read_tagged_verdict``).

    Returns:
        The ``JudgeResult`` fields every verdict sets (criterion, scale, output and usage excluded).
    """
    verdict = read_served_verdict(verdict_format, "<think>\n" + text if reasoning_opened else text, scale=scale,
                                  lenient=lenient, finish_reason=finish_reason)
    dist = None
    if verdict.ok and logprobs:
        dist = score_distribution(logprobs.get("tokens") or [], logprobs.get("top_logprobs") or [], scale, verdict.score)
    return {
        "feedback": verdict.feedback,
        "score": verdict.score,
        "parse_ok": verdict.ok,
        "error": verdict.error,
        "error_reason": verdict.reason or None,
        "score_source": ScoreSource.VERDICT if verdict.ok else None,
        "in_scale": verdict.in_scale,  # False: a number outside the scale, scored (parse_ok stays true)
        "expected_score": dist.expected if dist else None,
        "confidence": dist.confidence if dist else None,
        "score_probs": {str(k): v for k, v in dist.probs.items()} if dist else None,
        "score_mass": dist.mass if dist else None,
        "regression_score": None,
        "rationale_complete": None,
        "lm_verdict": None,
    }
