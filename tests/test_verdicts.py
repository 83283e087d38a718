"""Verdict rendering and parsing: table-driven, rows that must parse and rows that must fail with their reason."""

import pytest

from judge import Scale, VerdictError, format_score, parse_verdict, render_rationale_target, render_target

ZERO_TO_TWO = Scale((0, 1, 2))

MUST_PARSE = [
    # (name, text, expected feedback, expected score)
    ("canonical", "[FEEDBACK] Ответ точный. [RESULT] 2 [END]", "Ответ точный.", 2.0),
    ("surrounding whitespace and newlines", "\n\n  [FEEDBACK]\nОтвет точный.\n[RESULT]\n1\n[END]\n ", "Ответ точный.", 1.0),
    ("think preamble", "<think>Сначала подумаю. [RESULT] 0 [END]</think>\n[FEEDBACK] Верно. [RESULT] 2 [END]", "Верно.", 2.0),
    ("markdown emphasis on tags", "**[FEEDBACK]** Неплохо. **[RESULT]** 1 **[END]**", "Неплохо.", 1.0),
    ("emphasis on the score", "[FEEDBACK] Неплохо. [RESULT] **1** [END]", "Неплохо.", 1.0),
    ("lower-case tags with colon", "[feedback]: Неплохо. [result]: 1 [end]", "Неплохо.", 1.0),
    ("negative score", "[FEEDBACK] Плохо. [RESULT] -1 [END]", "Плохо.", -1.0),
    ("decimal point", "[FEEDBACK] Средне. [RESULT] 1.5 [END]", "Средне.", 1.5),
    ("decimal comma", "[FEEDBACK] Средне. [RESULT] 1,5 [END]", "Средне.", 1.5),
    ("text after [END]", "[FEEDBACK] Хорошо. [RESULT] 2 [END] Спасибо за внимание! [RESULT] 0", "Хорошо.", 2.0),
    (
        "[RESULT] quoted inside the feedback: the final one decides",
        "[FEEDBACK] Модель написала «[RESULT] 0», но это не так. [RESULT] 2 [END]",
        "Модель написала «[RESULT] 0», но это не так.",
        2.0,
    ),
    ("no [FEEDBACK] tag: the text before [RESULT] is the feedback", "Всё верно. [RESULT] 2 [END]", "Всё верно.", 2.0),
    ("score in parentheses", "[FEEDBACK] Да. [RESULT] (2) [END]", "Да.", 2.0),
]


@pytest.mark.parametrize("name,text,feedback,score", MUST_PARSE, ids=[row[0] for row in MUST_PARSE])
def test_parses(name, text, feedback, score):
    """Each well-formed variant yields its feedback and score."""
    verdict = parse_verdict(text, scale=Scale((-1, 0, 1, 2)))
    assert verdict.ok, verdict.reason
    assert verdict.error is None
    assert verdict.score == score
    assert verdict.feedback == feedback


MUST_FAIL = [
    # (name, text, kwargs, expected error code)
    ("empty", "", {}, VerdictError.EMPTY),
    ("whitespace only", "  \n ", {}, VerdictError.EMPTY),
    ("None", None, {}, VerdictError.EMPTY),
    ("no result tag", "[FEEDBACK] Хороший ответ, ставлю два.", {}, VerdictError.NO_RESULT),
    ("word instead of a score", "[FEEDBACK] Хорошо. [RESULT] отлично [END]", {}, VerdictError.NO_SCORE),
    ("empty score", "[FEEDBACK] Хорошо. [RESULT] [END]", {}, VerdictError.NO_SCORE),
    ("two numbers", "[FEEDBACK] Хорошо. [RESULT] 1 2 [END]", {}, VerdictError.NO_SCORE),
    ("truncated: no [END] (strict)", "[FEEDBACK] Хорошо. [RESULT] 2", {}, VerdictError.MISSING_END),
    ("truncated: nothing after [RESULT]", "[FEEDBACK] Хорошо. [RESULT]", {"lenient": True}, VerdictError.NO_SCORE),
    ("above the scale", "[FEEDBACK] Хорошо. [RESULT] 3 [END]", {"scale": ZERO_TO_TWO}, VerdictError.OUT_OF_SCALE),
    ("below the scale", "[FEEDBACK] Плохо. [RESULT] -1 [END]", {"scale": ZERO_TO_TWO}, VerdictError.OUT_OF_SCALE),
    ("unclosed think", "<think>Рассуждаю о том, что [RESULT] 2 [END]", {}, VerdictError.UNCLOSED_THINK),
]


@pytest.mark.parametrize("name,text,kwargs,error", MUST_FAIL, ids=[row[0] for row in MUST_FAIL])
def test_fails_with_reason(name, text, kwargs, error):
    """Malformed outputs are failures with a code and a reason, never a score."""
    verdict = parse_verdict(text, **kwargs)
    assert not verdict.ok
    assert verdict.score is None
    assert verdict.error == error
    assert verdict.reason


def test_lenient_accepts_missing_end():
    """A generation cut right after the score parses only when lenient."""
    text = "[FEEDBACK] Ответ полный. [RESULT] 2"
    assert parse_verdict(text).error == VerdictError.MISSING_END
    lenient = parse_verdict(text, scale=ZERO_TO_TWO, lenient=True)
    assert (lenient.ok, lenient.score, lenient.feedback) == (True, 2.0, "Ответ полный.")


def test_failure_keeps_feedback():
    """An out-of-scale verdict still carries the rationale, for inspection."""
    verdict = parse_verdict("[FEEDBACK] Отлично. [RESULT] 5 [END]", scale=ZERO_TO_TWO)
    assert verdict.feedback == "Отлично."
    assert "outside the scale 0..2" in verdict.reason


def test_render_target_exact():
    """The seq2seq training target is pinned byte for byte."""
    assert render_target("  Ответ точный.\n", 2) == "[FEEDBACK] Ответ точный. [RESULT] 2 [END]"
    assert render_target("Средне.", 1.5) == "[FEEDBACK] Средне. [RESULT] 1.5 [END]"
    assert render_rationale_target(" Ответ точный. ") == "[FEEDBACK] Ответ точный. [END]"


@pytest.mark.parametrize("score", [0, 1, 2, -1, 1.5, 0.25])
def test_render_then_parse_round_trips(score):
    """What render_target writes, parse_verdict reads back unchanged."""
    verdict = parse_verdict(render_target("Обоснование оценки.", score))
    assert verdict.ok and verdict.score == score and verdict.feedback == "Обоснование оценки."


def test_format_score():
    """Integral scores print without a decimal part."""
    assert [format_score(s) for s in (2.0, 0, 1.5, -1.0)] == ["2", "0", "1.5", "-1"]
