"""A regression judge's head value never scores an answer below a failed verdict, clipped or raw (fast tier: pure
functions, values derived by hand)."""

from __future__ import annotations

import pytest

from judge.rewards import RewardRule, criterion_reward, reward_of
from judge.wire import JudgeResult

CRITICAL_NAME = "Есть ли критичное нарушение формата (чрезмерные зацикливания, сплошные артефакты, ответ на другом языке), которое не позволяет оценить ответ модели?"


def head(criterion: str, raw: float, scale=(0, 1, 2)) -> JudgeResult:
    """A regression judge's result: the raw head value, clipped into the scale as serve.judging does."""
    return JudgeResult(criterion=criterion, criterion_id=None, scale=list(scale), score=min(max(raw, min(scale)), max(scale)),
                       parse_ok=True, score_source="regression_head", regression_score=raw)


def failed(criterion: str, scale=(0, 1, 2), error="context_length_exceeded") -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=list(scale), error=error)


RAW_VALUES = [-3.0, -0.4, -0.01, 0.0, 0.3, 1.0, 1.7, 2.0, 2.6, 5.0]


@pytest.mark.parametrize("head_values", ["clipped", "raw"])
@pytest.mark.parametrize("criterion, scale", [("Полезность", (0, 1, 2)), (CRITICAL_NAME, (0, 1))],
                         ids=["best at the top", "Critical, best at 0"])
def test_no_head_value_scores_below_a_failure(head_values, criterion, scale):
    """Under on_failure zero a failure (an answer too long for the judge, say) counts as the worst level, 0.0, and
    an answer with nothing to judge gets empty_answer, 0.0: a head's raw value below the worst level scored
    -0.2 (raw -0.4 on 0..2), so a policy gained by an answer the judge could not read. Alone and beside another
    criterion, the answer judged is worth at least the failure."""
    rule = RewardRule(on_failure="zero", head_values=head_values)
    failure = reward_of([failed(criterion, scale), head("Ясность", 2.0)], rule).value
    assert failure == pytest.approx(0.5)  # (0.0 + 2/2) / 2
    for raw in RAW_VALUES:
        alone = criterion_reward(head(criterion, raw, scale), rule)
        assert alone.value >= criterion_reward(failed(criterion, scale), rule).value == 0.0, raw
        assert alone.value >= rule.empty_answer, raw
        assert reward_of([head(criterion, raw, scale), head("Ясность", 2.0)], rule).value >= failure, raw


@pytest.mark.parametrize(
    "raw, scale, criterion, value",
    [
        (-0.4, (0, 1, 2), "a", 0.0),          # below the worst level: the worst level's 0.0 (it read -0.4 / 2 = -0.2)
        (2.6, (0, 1, 2), "a", 1.3),           # past the best level it stays raw: 2.6 / 2
        (1.2, (0, 1, 2), "a", 0.6),           # inside the scale: 1.2 / 2
        (1.3, (0, 1), CRITICAL_NAME, 0.0),    # past the violation end of a Critical flag: (1.3 - 1) / (0 - 1) = -0.3
        (-0.2, (0, 1), CRITICAL_NAME, 1.2),   # past its best end: (-0.2 - 1) / (0 - 1)
    ],
)
def test_raw_head_values_stop_at_the_worst_level(raw, scale, criterion, value):
    """head_values raw keeps the head's value past the best level, and stops it at the worst; the score reported
    beside the value is the head's raw one."""
    part = criterion_reward(head(criterion, raw, scale), RewardRule(head_values="raw"))
    assert (part.value, part.score) == (pytest.approx(value), raw)
