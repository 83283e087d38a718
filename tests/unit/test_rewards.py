"""judge.rewards: verdicts to a reward, every rule derived by hand (fast tier: pure functions)."""

from __future__ import annotations

import pytest

from judge.rewards import (CriterionReward, RewardRule, RewardRuleError, criterion_reward, normalised,
                           oriented_result_scale, reward_of)
from judge.scales import Scale
from judge.wire import JudgeResult

CRITICAL = "narushenie_formata"  # taxonomy: levels (0, 1), best at 0
CRITICAL_NAME = "Есть ли критичное нарушение формата (чрезмерные зацикливания, сплошные артефакты, ответ на другом языке), которое не позволяет оценить ответ модели?"


def ok(criterion: str, score: float, scale=(0, 1, 2), criterion_id=None, **kw) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=criterion_id, scale=list(scale), score=score, parse_ok=True,
                       in_scale=min(scale) <= score <= max(scale), score_source="verdict", **kw)


def failed(criterion: str, scale=(0, 1, 2), error="no_result", criterion_id=None) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=criterion_id, scale=list(scale), error=error)


def head(criterion: str, raw: float, scale=(0, 1, 2)) -> JudgeResult:
    """A regression judge's result: the raw head value, clipped into the scale as serve.judging does."""
    return JudgeResult(criterion=criterion, criterion_id=None, scale=list(scale), score=min(max(raw, min(scale)), max(scale)),
                       parse_ok=True, score_source="regression_head", regression_score=raw)


@pytest.mark.parametrize(
    "score, scale, expected",
    [
        (0, Scale((0, 1, 2)), 0.0),          # (0 - 0) / (2 - 0)
        (1, Scale((0, 1, 2)), 0.5),          # (1 - 0) / (2 - 0)
        (2, Scale((0, 1, 2)), 1.0),
        (7, Scale.range(1, 10), 6 / 9),      # (7 - 1) / (10 - 1)
        (0, Scale((0, 1), best=0), 1.0),     # Critical, reversed: (0 - 1) / (0 - 1)
        (1, Scale((0, 1), best=0), 0.0),     # (1 - 1) / (0 - 1)
        (1, Scale((0, 1, 2), best=0), 0.5),  # (1 - 2) / (0 - 2)
        (2.6, Scale((0, 1, 2)), 1.3),        # a raw head value past the top stays past 1
    ],
)
def test_normalised_puts_the_best_level_at_one(score, scale, expected):
    """Each score maps to 0-1 over its rubric with the best end at 1 (Critical scales reversed)."""
    assert normalised(score, scale) == pytest.approx(expected)


def test_normalised_refuses_a_one_level_scale():
    """A one-level scale has nothing to normalise by: an error, not a number."""
    with pytest.raises(ValueError, match="one level"):
        normalised(1, Scale((1,)))


def test_orientation_follows_the_taxonomy_and_the_name_rule():
    """A Critical criterion is best at 0 by its id or, custom, by its name; any other is best at its top."""
    assert oriented_result_scale(ok("x", 0, (0, 1), criterion_id=CRITICAL)).best == 0
    assert oriented_result_scale(ok(CRITICAL_NAME, 0, (0, 1))).best == 0
    assert oriented_result_scale(ok("Отсутствие зацикливаний", 0, (0, 1, 2), criterion_id="repeats")).best == 2
    assert oriented_result_scale(ok("Вежливость", 0, (0, 1))).best == 1


def test_mean_of_criteria():
    """The default rule: the mean of the normalised criteria."""
    results = [ok("a", 2), ok("b", 1), ok(CRITICAL_NAME, 0, (0, 1))]
    # a: 2/2 = 1.0; b: 1/2 = 0.5; Critical scored 0 (no violation): 1.0. Mean: 2.5 / 3
    reward = reward_of(results, RewardRule())
    assert reward.value == pytest.approx(2.5 / 3)
    assert reward.failed == 0 and reward.gate_closed is None
    assert [c.value for c in reward.criteria] == [1.0, 0.5, 1.0]


def test_weighted_mean_by_name_and_id():
    """Weights by taxonomy id first, then name (a custom criterion's as custom:<name>), else default_weight."""
    results = [ok("a", 2), ok("b", 0), ok("c", 1, criterion_id="repeats")]
    rule = RewardRule(combine="weighted", weights={"custom:b": 3.0, "repeats": 2.0, "custom:c": 100.0},
                      default_weight=1.0)
    # a: 1.0 x 1; b: 0.0 x 3; c (id repeats): 0.5 x 2. (1 + 0 + 1) / (1 + 3 + 2) = 2 / 6
    assert reward_of(results, rule).value == pytest.approx(2 / 6)


@pytest.mark.parametrize("weight", [1e308, 5e-324, 2.0**-1022])
def test_weights_at_the_ends_of_the_floats_still_give_the_weighted_mean(weight):
    """Any positive finite weight the rule takes gives the mean: 2 and 1 on 0-2 are (1.0 + 0.5) / 2 = 0.75 under
    equal weights (two of 1e308 summed to infinity: the reward was 0; 5e-324 twice, 0.5); 3 : 1 stays exact."""
    results = [ok("a", 2), ok("b", 1)]
    assert reward_of(results, RewardRule(combine="weighted", default_weight=weight)).value == 0.75
    both = RewardRule(combine="weighted", weights={"custom:a": weight, "custom:b": weight})
    assert reward_of(results, both).value == 0.75
    assert reward_of(results, RewardRule(combine="weighted", weights={"custom:a": 3.0})).value == (3 * 1.0 + 0.5) / 4


@pytest.mark.parametrize("field", ["default_weight", "empty_answer"])
def test_a_number_too_large_for_a_float_is_refused_naming_its_field(field):
    """JSON and YAML give integers of any size: 10**400 is no finite float (math.isfinite raised OverflowError)."""
    with pytest.raises(RewardRuleError) as refused:
        RewardRule.from_dict({"combine": "weighted", field: 10**400})
    assert f"{field}: " in str(refused.value)
    assert str(refused.value).endswith(" got an integer of 401 digits")  # not its 401 digits


@pytest.mark.parametrize(
    "critical_score, expected, closed",
    [
        (0, 0.75, False),  # gate open: mean over the non-flag criteria, (1.0 + 0.5) / 2
        (1, 0.0, True),    # a violation: the gate closes, the reward is 0
    ],
)
def test_binary_gate(critical_score, expected, closed):
    """POLLUX's gate: a flag criterion off its best level zeroes the reward; open, flags leave the mean."""
    results = [ok("a", 2), ok("b", 1), ok(CRITICAL_NAME, critical_score, (0, 1))]
    reward = reward_of(results, RewardRule(gate=True))
    assert reward.value == pytest.approx(expected)
    assert reward.gate_closed is closed


def test_gate_on_a_flag_best_at_its_top_follows_the_contract():
    """A two-level criterion best at 1 (Operability-like) closes the gate at 0, not at 1 (POLLUX's metrics.py
    would close it on the good answer: the named deviation)."""
    assert reward_of([ok("Работоспособность", 1, (0, 1)), ok("a", 1)], RewardRule(gate=True)).value == pytest.approx(0.5)
    assert reward_of([ok("Работоспособность", 0, (0, 1)), ok("a", 1)], RewardRule(gate=True)).value == 0.0


@pytest.mark.parametrize(
    "raw, closed",
    [
        (0.03, False),  # a Critical flag (best at 0): 0.03 is nearest 0, no violation; value 0.97
        (0.49, False),  # value 0.51: still nearer the best level
        (0.5, False),   # value 0.5: halfway, read as the best level ("0.5 or more"), the gate stays open
        (0.7, True),    # value 0.3: nearest the violation, the gate closes
        (1.0, True),
    ],
)
def test_gate_on_a_regression_heads_flag_takes_the_level_it_is_nearest(raw, closed):
    """A regression (-r) judge's head gives a flag a value between its levels: the gate reads the level the value
    is nearest to (normalised value 0.5 or more: the best level), never "anything but exactly the best level",
    which closed the gate on almost every head value. Open: the mean of the non-flag criteria, 1.0."""
    reward = reward_of([head(CRITICAL_NAME, raw, (0, 1)), ok("a", 2)], RewardRule(gate=True))
    assert reward.gate_closed is closed
    assert reward.value == (0.0 if closed else 1.0)


def test_the_gate_takes_pollux_binary_criteria_only_levels_zero_and_one():
    """POLLUX's is_binary_scale (src/utils/score_utils.py, used by src/metrics.py since commit 83f6eb6b): a custom
    two-level rubric {1, 2} is no gate. Its verdict 1 (its worst, normalised 0.0) is averaged with the other
    criterion's 1.0: (0.0 + 1.0) / 2 = 0.5, as POLLUX's matrix counts it; a gate would have made it 0.0."""
    reward = reward_of([ok("своя шкала", 1, (1, 2)), ok("a", 2)], RewardRule(gate=True))
    assert (reward.value, reward.gate_closed) == (pytest.approx(0.5), False)
    assert [part.is_flag for part in reward.criteria] == [False, False]


def test_gate_with_only_flags_keeps_their_mean():
    """Only flags, all at their best: the mean over the flags, 1.0."""
    reward = reward_of([ok(CRITICAL_NAME, 0, (0, 1)), ok("Вежливость", 1, (0, 1))], RewardRule(gate=True))
    assert reward.value == 1.0 and reward.gate_closed is False


@pytest.mark.parametrize(
    "on_failure, expected",
    [
        ("skip", None),        # any failure: no reward for the sample
        ("zero", 0.5),         # (1.0 + 0.0) / 2
        ("scale_min", 0.5),    # read as zero: the failed 0..2 criterion counts as its worst, 0.0; (1.0 + 0.0) / 2
    ],
)
def test_failed_verdict_gets_the_configured_value(on_failure, expected):
    """A verdict that did not parse is never a silent number: skip, or zero (the criterion's worst), and counted."""
    reward = reward_of([ok("a", 2), failed("b")], RewardRule(on_failure=on_failure))
    assert reward.value == (pytest.approx(expected) if expected is not None else None)
    assert reward.failed == 1
    assert reward.criteria[1].failure == "no_result" and reward.criteria[1].score is None


ORIENTATIONS = [
    (CRITICAL_NAME, (0, 1), 1),     # Critical: best at 0, its worst verdict 1 (a violation) normalises to 0.0
    ("Креативность", (0, 1, 2), 0),  # best at its top, its worst verdict 0: 0.0
    ("Вежливость", (0, 1), 0),       # a custom flag best at 1
]


@pytest.mark.parametrize("on_failure", ["zero", "scale_min"])
@pytest.mark.parametrize("criterion, scale, worst", ORIENTATIONS, ids=["best at 0", "best at top", "flag best at 1"])
@pytest.mark.parametrize("error", ["no_result", "context_length_exceeded", "not_a_level"])
def test_a_failed_verdict_is_never_worth_more_than_the_worst_verdict(on_failure, criterion, scale, worst, error):
    """A failure counts as the criterion's worst level, 0.0, whichever end is best. scale_min gave the scale's lowest
    level, which on a Critical criterion is its best (1.0, "no violation"): an answer too long for the judge earned
    more than one with a real violation."""
    worst_verdict = criterion_reward(ok(criterion, worst, scale), RewardRule(on_failure=on_failure)).value
    assert worst_verdict == 0.0
    result = ok(criterion, 0.5, scale) if error == "not_a_level" else failed(criterion, scale, error=error)
    part = criterion_reward(result, RewardRule(on_failure=on_failure))
    assert part.failure == error and part.value == 0.0 <= worst_verdict
    assert reward_of([result], RewardRule(on_failure=on_failure)).value == 0.0


@pytest.mark.parametrize("on_failure", ["zero", "scale_min"])
def test_a_failed_critical_verdict_closes_the_gate(on_failure):
    """Under the gate a failed Critical verdict is a violation: reward 0.0, gate closed. With scale_min it read as
    the best level, the gate stayed open and the reward was Креативность's 1.0."""
    reward = reward_of([failed(CRITICAL_NAME, (0, 1), error="context_length_exceeded"), ok("Креативность", 2)],
                       RewardRule(gate=True, on_failure=on_failure))
    assert (reward.value, reward.gate_closed, reward.failed) == (0.0, True, 1)


def test_an_all_failed_answer_earns_less_than_one_with_a_violation():
    """Without the gate, every verdict failed (the answer too long for the judge): 0.0. scale_min gave it
    (#Critical)/(#criteria) = 2/3. An answer judged, with the censor stub (1) and Креативность 1:
    (0.0 + 1.0 + 0.5) / 3 = 0.5."""
    censor = "Ответа нет, но есть заглушка цензора?"
    rule = RewardRule(on_failure="scale_min")
    all_failed = reward_of([failed(CRITICAL_NAME, (0, 1), error="context_length_exceeded"),
                            failed(censor, (0, 1), error="context_length_exceeded"),
                            failed("Креативность", error="context_length_exceeded")], rule)
    judged = reward_of([ok(censor, 1, (0, 1)), ok(CRITICAL_NAME, 0, (0, 1)), ok("Креативность", 1)], rule)
    assert all_failed.value == 0.0 and judged.value == pytest.approx(0.5)


def test_scale_min_is_read_as_zero():
    """The older name loads (rules written with it keep working) and is the same rule; an unknown value's message
    names the two values."""
    assert RewardRule(on_failure="scale_min") == RewardRule(on_failure="zero")
    assert RewardRule.from_dict({"on_failure": "scale_min"}).to_dict()["on_failure"] == "zero"
    with pytest.raises(RewardRuleError, match="on_failure: 'nan' is not one of skip, zero$"):
        RewardRule(on_failure="nan")


def test_a_critical_violation_is_zero_not_minus_zero():
    """(1 - 1) / (0 - 1) is -0.0 in floating point, and the journal and /get_reward's JSON carried "-0.0"."""
    import json
    import math

    assert math.copysign(1.0, normalised(1, Scale((0, 1), best=0))) == 1.0
    part = criterion_reward(ok(CRITICAL_NAME, 1, (0, 1)), RewardRule())
    assert json.dumps(part.to_json()["value"]) == "0.0"
    assert json.dumps(reward_of([ok(CRITICAL_NAME, 1, (0, 1))], RewardRule()).value) == "0.0"


def test_out_of_scale_verdict_is_a_failure():
    """A seq2seq score outside its rubric is a failure (POLLUX's benchmark drops it), not clipped."""
    part = criterion_reward(ok("a", 5), RewardRule(on_failure="zero"))
    assert part == CriterionReward("a", None, 0.0, None, "out_of_scale", False)


def test_a_verdict_between_levels_is_a_failure_and_closes_no_gate_by_accident():
    """"[RESULT] 0.5 [END]" on a Critical 0/1 flag (best at 0) parses, inside the scale: it normalised to 0.5, which
    the gate's nearest-level rule (meant for a head's values) read as the best level, so the gate stayed open and the
    reward was 1.0. POLLUX closes its gate on any raw score but 0 (src/metrics.py). A verdict's score must be a
    level: anything else is a failure, valued by on_failure, as train.grpo_rewards treats it."""
    results = [ok(CRITICAL_NAME, 0.5, (0, 1)), ok("Полезность", 2, (0, 1, 2))]
    reward = reward_of(results, RewardRule(gate=True, on_failure="skip"))
    assert (reward.value, reward.failed, reward.criteria[0].failure) == (None, 1, "not_a_level")
    zero = reward_of(results, RewardRule(gate=True, on_failure="zero"))
    assert (zero.value, zero.gate_closed, zero.criteria[0].score) == (0.0, True, None)
    assert criterion_reward(ok("a", 1.5), RewardRule(on_failure="zero")) == CriterionReward("a", None, 0.0, None,
                                                                                            "not_a_level", False)
    # a head's value between levels stays a value (the nearest-level rule is the head's)
    assert criterion_reward(head("a", 1.5), RewardRule()).value == pytest.approx(0.75)


@pytest.mark.parametrize(
    "head_values, raw, expected",
    [
        ("clipped", 2.6, 1.0),    # clipped to 2: 2/2
        ("raw", 2.6, 1.3),        # 2.6 / 2
        ("clipped", -0.4, 0.0),   # clipped to 0
        ("raw", -0.4, 0.0),       # -0.4 / 2 stops at the worst level: a failure (0.0) is never worth more
        ("raw", 1.2, 0.6),        # inside the scale both agree: 1.2 / 2
        ("clipped", 1.2, 0.6),
    ],
)
def test_regression_head_clipped_or_raw(head_values, raw, expected):
    """-r judges: the head's value clipped into the scale, or raw, as set."""
    assert reward_of([head("a", raw)], RewardRule(head_values=head_values)).value == pytest.approx(expected)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"combine": "max"}, "combine"),
        ({"on_failure": "nan"}, "on_failure"),
        ({"head_values": "sigmoid"}, "head_values"),
        ({"combine": "weighted", "weights": {"a": 0}}, r"weights\['a'\]"),
        ({"weights": {"a": 2}}, "combine is 'mean'"),
        ({"default_weight": -1, "combine": "weighted"}, "default_weight"),
        ({"gate": "yes"}, "gate"),
        ({"empty_answer": "zero"}, "empty_answer"),
    ],
)
def test_bad_rules_are_refused_naming_the_field(fields, message):
    """A rule that cannot be used fails where it is built, naming its field."""
    with pytest.raises(RewardRuleError, match=message):
        RewardRule(**fields)


def test_rule_from_dict_is_strict_and_round_trips():
    """A rule read from JSON refuses unknown keys and reads back what to_dict wrote."""
    rule = RewardRule.from_dict({"combine": "weighted", "weights": {"custom:a": 2.0}, "gate": True,
                                 "on_failure": "zero"})
    assert RewardRule.from_dict(rule.to_dict()) == rule
    with pytest.raises(RewardRuleError, match=r"unknown field\(s\) \['gates'\]"):
        RewardRule.from_dict({"gates": True})


def test_no_results_is_an_error():
    """A sample judged on no criterion has no reward to give: an error."""
    # the message, not the type alone: without the check, max() of no weights raises a ValueError of its own
    with pytest.raises(ValueError, match=r"^a reward needs at least one criterion's result$"):
        reward_of([], RewardRule())
