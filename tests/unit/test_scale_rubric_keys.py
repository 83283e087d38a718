"""A rubric mapping's keys as scale levels: two keys for one level are refused naming both, and a level is written in
ASCII digits."""

from __future__ import annotations

import pytest

from judge import Scale
from judge.scales import ScaleError, scale_of


@pytest.mark.parametrize("rubrics", [{"0": "b", "00": "c", "1": "d"}, {"+1": "b", "1": "c", "0": "d"},
                                     {" 0": "b", "0": "c", "1": "d"}, {"\u22121": "b", "-1": "c", "0": "d"}])
def test_a_rubric_mapping_with_two_keys_for_one_level_is_refused(rubrics):
    """{"0": ..., "00": ...} was the scale 0..1 with two descriptions of level 0 shown to the judge; a rubric text
    repeating a level is refused, and so is such a mapping now, naming both keys; through a custom criterion the
    error names the field (``items[i].criteria[j].rubrics``)."""
    from judge.criteria import CriterionError, resolve_criterion
    from judge.wire import CustomCriterion

    with pytest.raises(ScaleError, match=r"^rubric levels '.+' and '.+' are both level -?[01]: give each level one key$"):
        scale_of(rubrics)
    with pytest.raises(CriterionError) as err:
        resolve_criterion(CustomCriterion(name="c", rubrics=rubrics))
    assert err.value.param("items[0].criteria[1]") == "items[0].criteria[1].rubrics"
    with pytest.raises(ScaleError, match="are both level"):
        scale_of({"ru": rubrics, "en": {"0": "a", "1": "b"}})


@pytest.mark.parametrize("key", ["\u0660", "\u0661", "\uff11"])
def test_a_rubric_level_is_written_in_ascii_digits(key):
    """int() reads the Arabic-Indic "\u0660" (and fullwidth digits) as 0 (1): such a key made the level 0 the judge
    was shown as "\u0660". Only ASCII digits are a level."""
    with pytest.raises(ScaleError, match="is not an integer"):
        scale_of({key: "a", "2": "b"})
    assert scale_of({"0": "a", "1": "b", "2": "c"}) == Scale((0, 1, 2))
    assert scale_of({"\u22121": "a", "0": "b", "+1": "c"}) == Scale((-1, 0, 1))


@pytest.mark.parametrize("key,level", [("2", 2), (" 1 ", 1), ("+2", 2), ("\u22121", -1), ("-1", -1), ("007", 7),
                                       (3, 3), ("\u0661", None), ("\uff11", None), ("1.5", None), ("два", None),
                                       ("", None), ("1" * 7, None)])
def test_level_of_key_reads_the_level_scale_of_reads_from_a_key(key, level):
    """``level_of_key`` is the one reading of a mapping's key, shared by ``scale_of`` and the custom rubric's layout
    (``judge.criteria``): the level ``scale_of`` reads from it, or None for a key it refuses as no level (not an
    integer in ASCII digits, or past ``MAX_LEVEL_DIGITS`` digits)."""
    from judge.scales import level_of_key

    assert level_of_key(key) == level
    other = "-5" if level != -5 else "5"
    if level is None:
        with pytest.raises(ScaleError, match="not an integer|more than"):
            scale_of({key: "a", other: "b"})
    else:
        assert level in scale_of({key: "a", other: "b"}).levels
