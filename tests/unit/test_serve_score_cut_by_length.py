"""judge-serve reading a tagged score the length limit may have cut: cut inside its digits it fails as ``cut``; before
a cut ``[END]`` tag it is read leniently."""

from __future__ import annotations

import pytest

from judge import Scale
from serve.score_reading import seq2seq_verdict


def _read(text: str, scale: Scale, finish_reason: str, lenient: bool = True) -> tuple:
    verdict = seq2seq_verdict(text, None, scale, lenient, finish_reason=finish_reason)
    return verdict["score"], verdict["parse_ok"], verdict["error"]


def test_a_tagged_score_the_length_limit_may_have_cut_fails_as_cut():
    """max_tokens stopped the output between the "1" and the "0" of a 0..10 scale's "10": lenient reading took the
    "1" as the score. It fails as ``cut`` now, as an integer-format verdict cut anywhere does; the same "1" is the
    score when the judge stopped by itself, when no level of the scale is longer ("1" of 0..2, "5" of 0..10), and
    when a complete [RESULT] ... [END] came before the cut."""
    ten = Scale.range(0, 10)
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "length") == (None, False, "cut")
    assert _read("[FEEDBACK] good [RESULT] **1", ten, "length") == (None, False, "cut")
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "stop") == (1.0, True, None)
    assert _read("[FEEDBACK] good [RESULT] 1", Scale.range(0, 2), "length") == (1.0, True, None)
    assert _read("[FEEDBACK] good [RESULT] 5", ten, "length") == (5.0, True, None)
    assert _read("[FEEDBACK] good [RESULT] 1**", ten, "length") == (1.0, True, None)  # the number closed
    assert _read("[FEEDBACK] good [RESULT] 1 [END] and 1", ten, "length") == (1.0, True, None)
    pairwise = Scale((-10, -1, 0, 1))
    assert _read("[FEEDBACK] good [RESULT] -1", pairwise, "length") == (None, False, "cut")
    # without lenient a missing [END] fails, as cut: the cut made it (missing_end in the reason); stopped by the
    # judge, the same text fails as missing_end
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "length", lenient=False) == (None, False, "cut")
    assert _read("[FEEDBACK] good [RESULT] 1", ten, "stop", lenient=False) == (None, False, "missing_end")
    reason = seq2seq_verdict("[FEEDBACK] good [RESULT] 1", None, ten, False, finish_reason="length")["error_reason"]
    assert reason.startswith("the output reached max_tokens (finish_reason length) before a verdict was written "
                             "whole; read as it stands: missing_end (")
    reason = seq2seq_verdict("[FEEDBACK] good [RESULT] 1", None, ten, True, finish_reason="length")["error_reason"]
    assert "'1' may be the start of the level 10" in reason


@pytest.mark.parametrize("tail", ["[", "[E", "[EN", "[END", " [ en", "\n[EN"])
def test_a_score_before_a_cut_end_tag_is_read_leniently(tail):
    """Lenient reading exists for an output cut before its [END]; one cut inside that tag ("[RESULT] 1 [EN") was a
    ``no_score`` failure. The score before a partial [END] was written whole: read, and no ``cut`` (the digits do
    not run to the cut), whatever stopped the output; strict reading still fails it."""
    ten = Scale.range(0, 10)
    text = "[FEEDBACK] good [RESULT] 1 " + tail
    assert _read(text, ten, "length") == (1.0, True, None)
    assert _read(text, ten, "stop") == (1.0, True, None)
    assert _read(text, ten, "length", lenient=False)[:2] == (None, False)


@pytest.mark.parametrize(("text", "read_as"), [
    ("\n" * 1024, "empty"),                                   # a policy that wrote newlines to the limit
    ("<think>Ответ верный.</think>\n\nОценка:", "no_score"),  # cut before its integer
    ("<think>Ответ верный.</think>\n\n" + "1" * 860, None),   # a run of digits to the limit: no finite number
])
def test_an_integer_verdict_the_length_limit_stopped_fails_as_cut_whatever_the_parser_read(text, read_as):
    """A GRPO export whose outputs ran to max_tokens was reported "empty", "no_score" or "an integer of 860 digits is
    not a finite number", none of which said to raise max_tokens. Stopped by the limit, each fails as cut, the
    parser's own reading kept in the reason; the same text the judge ended itself fails as the parser says, and a
    cut inside the reasoning stays unclosed_think."""
    from judge.verdicts import read_served_verdict

    scale = Scale.range(0, 2)
    cut = read_served_verdict("integer", text, scale=scale, finish_reason="length")
    assert (cut.ok, cut.error) == (False, "cut")
    assert cut.reason.startswith("the output reached max_tokens (finish_reason length) before a verdict was written "
                                 "whole; read as it stands: ")
    stopped = read_served_verdict("integer", text, scale=scale, finish_reason="stop")
    assert stopped.ok is False and stopped.error != "cut"
    if read_as is not None:
        assert stopped.error == read_as and f"read as it stands: {read_as} (" in cut.reason
    inside = read_served_verdict("integer", "<think>Ответ верный, и", scale=scale, finish_reason="length")
    assert inside.error == "unclosed_think"
