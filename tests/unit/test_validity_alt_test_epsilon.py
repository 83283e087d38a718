"""The alternative annotator test's epsilon: one outside [0, 1) is refused."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("epsilon", [1.0, 1.5, -0.1, float("nan")])
def test_an_epsilon_outside_zero_to_one_is_refused(epsilon):
    """The alt-test's difference of advantage probabilities lies in [-1, 1]: epsilon 1.5 passed a judge wrong on
    most items (every expert rejected), and NaN reached scipy's false_discovery_control as a bare ValueError."""
    from judge.metrics_json.validity import AltTestSettings

    with pytest.raises(ValueError, match=r"^alt-test epsilon must lie in \[0, 1\)"):
        AltTestSettings(epsilon=epsilon)
    assert AltTestSettings(epsilon=0.0).epsilon == 0.0
