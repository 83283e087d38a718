"""How both verdict readers (tagged ``parse_verdict`` and integer ``parse_integer_verdict``) read a score written
with characters beyond ASCII: U+2212 attached to the digits is the minus sign in either format (it was read as -1 by
the integer reader and failed by the tagged one); a dash (en dash, fullwidth hyphen-minus) is a counted ``no_score``
failure in either; a digit outside ASCII (fullwidth, Arabic-Indic, mathematical bold) is a counted ``no_score``
failure naming the character, never a number (float() read "２" as 2 and "1٢" as 12), as the rubric reader refuses
such a level (``judge.scales``)."""

import re

import pytest

from judge.scales import Scale
from judge.verdicts import VerdictError, parse_integer_verdict, parse_verdict, read_tagged_verdict

PAIRWISE = Scale((-1, 0, 1))


def tagged(score: str) -> str:
    return f"[FEEDBACK] Ответ второй лучше. [RESULT] {score} [END]"


@pytest.mark.parametrize("written, score", [("\u22121", -1.0), ("\u22120", 0.0), ("**\u22121**", -1.0),
                                            ("-1", -1.0), ("+1", 1.0)])
def test_the_minus_sign_attached_reads_as_a_minus_in_both_formats(written, score):
    verdict = parse_verdict(tagged(written), scale=PAIRWISE)
    assert (verdict.ok, verdict.score, verdict.in_scale) == (True, score, True), verdict.reason
    bare = written.strip("*")
    integer = parse_integer_verdict(bare, "рассуждение", PAIRWISE)
    assert (integer.ok, integer.score) == (True, score), integer.reason


@pytest.mark.parametrize("written", ["\u20131", "\u20141", "\uff0d1", "\u2212 1", "\u2212\u22121", "- 1"])
def test_a_dash_or_a_spaced_minus_is_a_counted_failure_in_both_formats(written):
    verdict = parse_verdict(tagged(written), scale=PAIRWISE)
    assert (verdict.ok, verdict.score, verdict.error) == (False, None, VerdictError.NO_SCORE)
    integer = parse_integer_verdict(written, "рассуждение", PAIRWISE)
    assert (integer.ok, integer.score, integer.error) == (False, None, VerdictError.NO_SCORE)


@pytest.mark.parametrize("written, code", [("\uff12", "U+FF12"), ("\u0661", "U+0661"), ("\U0001d7ce", "U+1D7CE"),
                                           ("1\u0662", "U+0662"), ("\uff11.\uff15", "U+FF11"),
                                           ("\u2212\uff11", "U+FF11")])
def test_a_digit_outside_ascii_is_a_counted_failure_naming_it(written, code):
    verdict = parse_verdict(tagged(written), scale=Scale((0, 1, 2)))
    assert (verdict.ok, verdict.score, verdict.error) == (False, None, VerdictError.NO_SCORE)
    assert code in verdict.reason and "ASCII" in verdict.reason, verdict.reason
    lenient = read_tagged_verdict(f"[FEEDBACK] x [RESULT] {written}", Scale((0, 1, 2)), lenient=True)
    assert (lenient.ok, lenient.error) == (False, VerdictError.NO_SCORE)
    if "." not in written:
        for answer in (written, f"Итог: {written}"):
            integer = parse_integer_verdict(answer, "рассуждение", Scale((0, 1, 2)))
            assert (integer.ok, integer.score, integer.error) == (False, None, VerdictError.NO_SCORE), answer
            assert code in integer.reason and "ASCII" in integer.reason, integer.reason


def test_an_ascii_integer_after_a_foreign_digit_is_not_read_as_the_whole_number():
    """"٢1" ends with the ASCII "1", but the number written is two digits: it is not read as 1."""
    integer = parse_integer_verdict("Итог: \u06621", "рассуждение", Scale((0, 1, 2)))
    assert (integer.ok, integer.score, integer.error) == (False, None, VerdictError.NO_SCORE)


def test_the_training_rules_take_no_answer_the_readers_refuse():
    """bare_answer and bare_tagged_answer (every training step's rule for an answer to train towards) took "２" as a
    bare integer, which the readers now fail: an answer the parser cannot read is no answer to train on."""
    from judge.verdicts import bare_answer, bare_tagged_answer

    assert [bare_answer(a) for a in ("2", "\u22121", "\uff12", "\u0661")] == [True, True, False, False]
    assert [bare_tagged_answer(f"[FEEDBACK] Ответ верный и полный. [RESULT] {s} [END]") for s in ("2", "\uff12")] == [
        True, False]


def test_the_two_training_rules_take_the_minus_sign_the_readers_read():
    """"−1" (U+2212) is a bare integer answer and parse_verdict reads it as -1 in both formats: the tagged rule refused
    "[RESULT] −1 [END]", which the integer rule and the reader take."""
    from judge.verdicts import bare_answer, bare_tagged_answer

    tagged = "[FEEDBACK] Ответ неверный. [RESULT] \u22121 [END]"
    assert parse_verdict(tagged, Scale((-1, 0, 1))).score == -1
    assert (bare_answer("\u22121"), bare_tagged_answer(tagged), bare_tagged_answer(tagged.replace("\u2212", "-"))) == (
        True, True, True)
    assert not bare_tagged_answer("[FEEDBACK] Ответ неверный. [RESULT] \u2212\u22121 [END]")


@pytest.mark.parametrize("rubric, code", [
    ("0: плохо\n1: средне\n\u0662: хорошо", "U+0662"),  # level lines
    ("\uff10: плохо\n\uff11: хорошо", "U+FF10"),
    ("0: плохо; 1: средне; \u0662: хорошо", "U+0662"),  # one line
    ("Оцените ответ от \uff10 до \uff12.", "U+FF10"),  # a range in words
    ("Оцените ответ от \uff10 до \uff12.\n0: плохо\n2: хорошо", "U+FF10"),  # a range stated over level lines
])
def test_a_rubric_text_level_in_digits_outside_ascii_is_refused_naming_the_digit(rubric, code):
    """The rubric text reader read "٢: хорошо" as level 2 (Python's ``\\d`` and ``int`` take any script's digits), so
    the judge was shown "٢" as the top level and its answer "٢" is a no_score failure (above): the text reader refuses
    such a level, as the mapping reader refuses a key "٢", naming the character."""
    from judge.scales import ScaleError, scale_of

    with pytest.raises(ScaleError, match=re.escape(code)) as refused:
        scale_of(rubric)
    assert "ASCII" in str(refused.value)


def test_foreign_digit_finds_the_first_decimal_digit_outside_ascii():
    """The one check both readers ask: the first such digit, or None for ASCII digits, a minus sign, other numerals
    that are no decimal digits (superscript "²", Roman "Ⅻ") and text without digits."""
    from judge.scales import foreign_digit

    assert [foreign_digit(t) for t in ("1\u0662\uff13", "\U0001d7ce", "12", "\u22121", "\u00b2\u216b", "", "ok")] == [
        "\u0662", "\U0001d7ce", None, None, None, None, None]
