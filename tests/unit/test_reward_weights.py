"""A weighted reward rule's keys resolved through the taxonomy when the rule is built (fast tier).

Results name a taxonomy criterion by its id and its Russian name; a weight keyed by its English name or a misspelling
once matched neither and fell back to ``default_weight`` without a word.
"""

from __future__ import annotations

import pytest

from judge.plumbing.config_files import ConfigError
from judge.rewards import RewardRule, RewardRuleError, reward_of
from judge.wire import JudgeResult
from serve.config import ServeConfig


def _scored(name: str, criterion_id: str | None, score: float) -> JudgeResult:
    return JudgeResult(criterion=name, criterion_id=criterion_id, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict")


def _weighted(weights: dict, mine: JudgeResult) -> float:
    """``mine`` beside a criterion scored 0 of 2 that no key names (weight 1)."""
    other = _scored("Грамотность", None, 0)
    return reward_of([mine, other], RewardRule(combine="weighted", weights=weights)).value


CREATIVITY = _scored("Креативность", "creativity", 2)


@pytest.mark.parametrize("key", ["creativity", "Креативность", "Creativity", "CREATIVITY", " креативность "])
def test_a_criterion_is_weighted_by_its_id_or_either_name(key):
    """Creativity 2/2 = 1.0 weighted 3, the other 0/2 = 0.0 weighted 1: (3 x 1.0 + 1 x 0.0) / 4."""
    assert _weighted({key: 3}, CREATIVITY) == pytest.approx(0.75)


def test_a_name_weighs_every_variant_an_id_only_its_own():
    """creativity__2 carries the name Креативность / Creativity: a name key weighs it (0.75 as above), the base's
    id does not (1 x 1.0 + 1 x 0.0) / 2."""
    variant = _scored("Креативность", "creativity__2", 2)
    assert _weighted({"Creativity": 3}, variant) == pytest.approx(0.75)
    assert _weighted({"creativity": 3}, variant) == pytest.approx(0.5)


def test_a_misspelt_key_is_refused_naming_it_and_the_close_names():
    with pytest.raises(RewardRuleError, match=r"^weights\['Creativty'\]: unknown criterion 'Creativty'; did you mean "
                                              r"'Creativity'.*custom:<name> for a custom criterion"):
        RewardRule(combine="weighted", weights={"Creativty": 3})


def test_a_served_rule_with_an_unknown_key_fails_the_start():
    """judge-serve checks its rule at start: the key is named under reward_rule."""
    with pytest.raises(ConfigError, match=r"^reward_rule\.weights\['Creativty'\]: unknown criterion"):
        ServeConfig(model="x", reward_rule={"combine": "weighted", "weights": {"Creativty": 2}}).validate()


def test_a_custom_criterion_is_keyed_custom_name():
    """A label's {name, rubrics} criterion (no id): keyed custom:<its name>, 0.75 as above; its bare name, which no
    taxonomy criterion carries, is refused with the way to key it."""
    brevity = _scored("Краткость", None, 2)
    assert _weighted({"custom:Краткость": 3}, brevity) == pytest.approx(0.75)
    with pytest.raises(RewardRuleError, match=r"weights\['Краткость'\].*custom:<name>"):
        RewardRule(combine="weighted", weights={"Краткость": 3})


def test_one_criterion_given_two_weights_is_refused():
    """Its Russian and English names weighted differently: which weight holds is not the rule's to guess."""
    with pytest.raises(RewardRuleError, match=r"weights\['Креативность'\]: criterion creativity is also weighted 2 "
                                              r"as 'Creativity'"):
        RewardRule(combine="weighted", weights={"Creativity": 2, "Креативность": 3})
    assert _weighted({"Creativity": 3, "Креативность": 3}, CREATIVITY) == pytest.approx(0.75)
