"""train.grpo_rewards.agreement_reward refuses reference scores that are not the criterion's levels, naming the row,
before it reads any verdict (fast tier). ``train.grpo.grpo_rows`` writes only levels; a GRPO dataset made by hand
met a negative reward for a reference off the scale, and a bare 0 read as "no reference"."""

from __future__ import annotations

import pytest

from train.grpo_rewards import agreement_reward

VERDICT = "<think>Ответ верный и полный.</think>\n\n2"


def _reward(references, **columns):
    n = len(references) if isinstance(references, list) else 1
    return agreement_reward([VERDICT] * n, ["integer"] * n, [[0, 1, 2]] * n, [2] * n, references, **columns)


def test_levels_pay_as_before():
    """Against 2: 1; against 0 on 0..2: 1 - 2 / 2 = 0; the tied modes (0, 2): the best, 1; no reference: None."""
    assert _reward([[2], [0], [0, 2], []]) == [1.0, 0.0, 1.0, None]


def test_a_reference_off_the_scale_is_refused_with_the_rows_id():
    """A 7 on 0..2 paid 1 - |2 - 7| / 2 = -1.5."""
    with pytest.raises(ValueError) as caught:
        _reward([[2], [7]], id=["a", "b"])
    assert str(caught.value) == ("agreement_reward: reference_scores of the row with id 'b' holds 7, not a level of "
                                 "its scale_levels [0, 1, 2]")


def test_a_bare_number_or_a_string_is_no_list_of_references():
    """A bare 0 was falsy: no reference, None, whatever the verdict; without an id column the row is its place."""
    with pytest.raises(ValueError, match=r"^agreement_reward: reference_scores of row 1 of the batch must be a list "
                                         r"of the criterion's levels \(empty: no reference\), got 0$"):
        _reward([[2], 0])
    with pytest.raises(ValueError, match="of row 0 of the batch must be a list .* got '2'$"):
        _reward(["2"])


def test_a_reference_that_is_no_number_and_a_column_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match=r"of row 0 of the batch holds None, not a level"):
        _reward([[None]])
    with pytest.raises(ValueError, match=r"holds True, not a level"):  # a bool is no score, though True == 1
        _reward([[True]])
    with pytest.raises(ValueError, match=r"^agreement_reward: reference_scores must be a column with one list per "
                                         r"completion \(1\); got 2$"):
        agreement_reward([VERDICT], ["integer"], [[0, 1, 2]], [2], [[2], [2]])
    with pytest.raises(ValueError, match=r"^agreement_reward: scale_levels must be a column with one list per "
                                         r"completion \(1\); got 2$"):
        agreement_reward([VERDICT], ["integer"], [[0, 1, 2], [0, 1]], [2], [[2]])
    import numpy as np

    with pytest.raises(ValueError, match=r"of row 0 of the batch must be a list"):  # a 0-d array is no list
        _reward([np.array(2)])
    with pytest.raises(ValueError, match=r"^agreement_reward: reference_scores must be a column with one list per "
                                         r"completion \(1\); got ndarray$"):  # nor a column
        agreement_reward([VERDICT], ["integer"], [[0, 1, 2]], [2], np.array(2))


def test_a_null_row_is_no_reference_and_numpy_rows_are_read():
    """A null list cell (Arrow) is no reference, as [] is; numpy rows and scalars read as their values."""
    import numpy as np

    assert _reward([None, np.array([2]), [np.int64(0)], (np.float32(1.0),)]) == [None, 1.0, 0.0, 0.5]
