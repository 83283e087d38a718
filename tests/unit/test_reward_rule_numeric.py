"""A rule that can give a sample no reward is refused by one check with one message wherever a trainer needs a
number for every sample: judge-serve's config (``/get_reward``, for OpenRLHF) and the verl client."""

from __future__ import annotations

import pytest

from judge.plumbing.config_files import ConfigError
from judge.reward_clients import compute_score
from judge.rewards import RewardRule, RewardRuleError
from serve.config import ServeConfig

NEEDS = "the trainer needs a number for every sample (OpenRLHF and verl turn each reward into one)"
SKIP = f".on_failure: skip gives a sample with a failed verdict no reward (null), and {NEEDS}; use zero (failures " \
       "are counted in judge_failures)"
NULL = f".empty_answer: null gives an empty answer no reward, and {NEEDS}; give a number (the default 0.0 is the " \
       "worst reward)"


@pytest.mark.parametrize(("rule", "tail"), [({"on_failure": "skip"}, SKIP), ({"empty_answer": None}, NULL)])
def test_serve_and_verl_refuse_a_rule_that_can_give_no_number_alike(rule, tail):
    with pytest.raises(ConfigError) as served:
        ServeConfig(model="x", reward_rule=rule).validate()
    assert str(served.value) == "reward_rule" + tail
    # refused before any request: the URL is never contacted
    with pytest.raises(RewardRuleError) as verl:
        compute_score("d", "ответ", None, {"instruction": "Q", "criteria": ["A"]}, judge_url="http://127.0.0.1:9",
                      rule=rule)
    assert str(verl.value) == "custom_reward_function.reward_kwargs.rule" + tail


def test_the_default_rule_gives_a_number_everywhere():
    """No rule given: RewardRule's own defaults (a failure counts 0, an empty answer 0.0), the one default."""
    RewardRule().require_numeric("rule")
    ServeConfig(model="x").validate()
    assert (RewardRule().on_failure, RewardRule().empty_answer) == ("zero", 0.0)
