"""judge-serve's ``/get_reward`` without an engine: the response OpenRLHF's trainer can batch, and the rules a
server refuses at start. (The route with an engine, end to end: tests/integration/serving/test_rewards_serve.py.)"""

from __future__ import annotations

import pytest

from judge.rewards import reward_of
from judge.wire import JudgeResult
from serve.config import ServeConfig
from serve.rewards import EXTRA_LOG_KEYS, RewardRoute, reward_rule_of


def _ok(criterion: str, score: float) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict")


def test_every_sample_of_every_request_carries_the_same_extra_logs_keys():
    """OpenRLHF posts one sample per request, turns each ``extra_logs`` value into a one-element tensor, joins each
    key's tensors over the batch (``openrlhf/trainer/ppo_utils/experience.py``, ``concat_experiences``) and refuses
    a key with fewer values than samples (``split_experience_batch``). Samples judged on different criteria, with a
    failed verdict, and with nothing to judge must therefore give one key set: joined the way OpenRLHF joins them,
    every key has one value per sample."""
    route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
    rule = route.rule
    samples = [
        [reward_of([_ok("Креативность", 2)], rule)],
        [reward_of([_ok("Грамотность", 1), _ok("Полезность", 0)], rule)],
        [reward_of([JudgeResult(criterion="Полезность", criterion_id=None, scale=[0, 1, 2], error="no_result")], rule)],
        [None],  # an empty answer: unjudged
    ]
    bodies = [route._body(rewards, latency=0.5) for rewards in samples]
    joined: dict[str, list[float]] = {}
    for body in bodies:
        for key, values in body["extra_logs"].items():
            joined.setdefault(key, []).extend(values)
    assert [tuple(b["extra_logs"]) for b in bodies] == [EXTRA_LOG_KEYS] * 4
    assert {key: len(values) for key, values in joined.items()} == dict.fromkeys(EXTRA_LOG_KEYS, 4)
    assert joined["judge_failures"] == [0.0, 0.0, 1.0, 0.0] and joined["judge_empty_answer"] == [0.0, 0.0, 0.0, 1.0]
    # the served rule's values: 2/2 -> 1.0; (0.5 + 0) / 2; the failure counts as 0 ("zero"); empty_answer 0.0
    assert [b["rewards"][0] for b in bodies] == [1.0, 0.25, 0.0, 0.0]
    assert reward_rule_of(ServeConfig(model="x")).on_failure == "zero"


@pytest.mark.parametrize(("rule", "field"), [({"on_failure": "skip"}, "reward_rule.on_failure"),
                                             ({"empty_answer": None}, "reward_rule.empty_answer")])
def test_a_served_rule_that_can_give_no_reward_is_refused_at_start(rule, field):
    """A null reward fails OpenRLHF's step (``samples_generator.py`` makes ``torch.tensor([reward])`` of it), so
    judge-serve refuses such a rule before it starts, naming the field; the rules that always give a number pass."""
    from judge.plumbing.config_files import ConfigError

    with pytest.raises(ConfigError, match=rf"^{field}: .* OpenRLHF cannot take"):
        ServeConfig(model="x", reward_rule=rule).validate()
    ServeConfig(model="x", reward_rule={"on_failure": "scale_min", "empty_answer": 0.0}).validate()
