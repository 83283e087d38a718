"""Judge outputs: ``[FEEDBACK] <rationale> [RESULT] <score> [END]``, rendered and parsed.

``render_target`` writes what a seq2seq judge is trained to produce; ``render_rationale_target`` what a regression
judge's LM head writes (no score: the head scores). ``parse_verdict`` reads any judge's output back. A parse
failure is a value (``Verdict.ok`` is False, ``error`` says why); it is never a score.

A number outside the rubric's scale is the judge's answer, not a parse failure: the POLLUX paper scores such
verdicts (Table 11, ``seeds/003_04de0265a3137b49.txt:703``: M-Prometheus-14B's MAE of 2.36-2.69 on mostly 0-2
scales, and its 2.5-4.0 mean scores in Table 10, line 690, only arise from scoring out-of-range values; line 1005:
it "frequently produc[es] values outside the defined evaluation range"). Such a verdict is ``ok`` with
``in_scale=False``; callers that must reject it (teacher annotation, training data) check ``in_scale`` and
report ``VerdictError.OUT_OF_SCALE``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from judge.scales import Scale

__all__ = [
    "Verdict",
    "VerdictError",
    "parse_verdict",
    "render_target",
    "render_rationale_target",
    "parse_rationale",
    "format_score",
]


class VerdictError:
    """Why a verdict failed to parse: stable codes that metrics count and reports group by."""

    EMPTY = "empty"
    UNCLOSED_THINK = "unclosed_think"
    NO_RESULT = "no_result"
    NO_SCORE = "no_score"
    MISSING_END = "missing_end"
    # Not a parse failure (parse_verdict returns ok with in_scale=False): the drop reason of callers that must
    # reject out-of-scale scores (teacher annotation, training-data building).
    OUT_OF_SCALE = "out_of_scale"


@dataclass(frozen=True)
class Verdict:
    """A parsed judge output.

    Attributes:
        feedback: the rationale (text between ``[FEEDBACK]`` and the final ``[RESULT]``), "" when absent.
        score: the score, or None when the parse failed.
        ok: whether a score was read (an out-of-scale number is read: it is the judge's answer).
        error: a ``VerdictError`` code when not ok, else None.
        reason: a human-readable explanation of ``error``; for an ok verdict outside the scale, which scale it
            left ("" for an ok verdict inside it).
        in_scale: whether the score lies within the scale given to ``parse_verdict``; None when no scale was given
            or no score was read.
    """

    feedback: str
    score: float | None
    ok: bool
    error: str | None = None
    reason: str = ""
    in_scale: bool | None = None

    @classmethod
    def failure(cls, error: str, reason: str, feedback: str = "") -> Verdict:
        return cls(feedback=feedback, score=None, ok=False, error=error, reason=reason)


def format_score(score: float) -> str:
    """A score as judges write it: ``2`` rather than ``2.0``, ``1.5`` kept as is."""
    if float(score).is_integer():
        return str(int(score))
    return repr(float(score))


def render_target(feedback: str, score: float) -> str:
    """The seq2seq training target: ``[FEEDBACK] {feedback} [RESULT] {score} [END]``."""
    return f"[FEEDBACK] {feedback.strip()} [RESULT] {format_score(score)} [END]"


def render_rationale_target(feedback: str) -> str:
    """The regression judge's LM target: ``[FEEDBACK] {feedback} [END]`` (the head supplies the score)."""
    return f"[FEEDBACK] {feedback.strip()} [END]"


# Tags as models write them: any case, optionally wrapped in markdown emphasis (**[RESULT]**, _[END]_) and
# followed by a colon. They are normalised to the bare tag before parsing.
_TAG = re.compile(r"[*_]{0,3}\[\s*(FEEDBACK|RESULT|END)\s*\]:?[*_]{0,3}:?", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think\s*>", re.IGNORECASE)
# A score: optional sign, digits, optional decimal part with a point or a comma, optionally wrapped in markdown
# emphasis or parentheses ("**2**", "(1)").
_SCORE = re.compile(r"^[*_(\s]*(-?\d+(?:[.,]\d+)?)[*_)\s]*$")


def _normalise_tags(text: str) -> str:
    return _TAG.sub(lambda m: f"[{m.group(1).upper()}]", text)


def parse_rationale(text: str) -> tuple[str, bool]:
    """The rationale a regression judge wrote (``render_rationale_target``'s ``[FEEDBACK] <rationale> [END]``).

    Tolerates what ``parse_verdict`` tolerates (a ``<think>`` preamble, markdown around tags, a score the LM added
    anyway: the rationale runs from the first ``[FEEDBACK]`` to the first ``[RESULT]`` or ``[END]`` after it).

    Returns:
        ``(rationale, complete)``: complete is False when no closing tag was written (the generation was cut).
    """
    closes = list(_THINK_CLOSE.finditer(text))
    body = _normalise_tags(text[closes[-1].end():] if closes else text)
    start = body.find("[FEEDBACK]")
    if start >= 0:
        body = body[start + len("[FEEDBACK]"):]
    stops = [at for at in (body.find("[RESULT]"), body.find("[END]")) if at >= 0]
    if stops:
        return body[: min(stops)].strip(), True
    return body.strip(), False


def parse_verdict(text: str | None, scale: Scale | None = None, lenient: bool = False) -> Verdict:
    """Parse ``[FEEDBACK] ... [RESULT] n [END]`` from a judge's output.

    The final ``[RESULT] ... [END]`` decides (a ``[RESULT]`` quoted inside the feedback does not); a
    ``<think>...</think>`` preamble, surrounding whitespace, markdown emphasis around the tags, a decimal comma and
    text after ``[END]`` are all tolerated.

    Args:
        text: the raw output.
        scale: when given, ``in_scale`` says whether the score lies within it; a score outside it is still ok
            (see the module docstring), with ``in_scale=False`` and a ``reason`` naming the scale.
        lenient: accept a missing ``[END]`` when the output ends right after the score (a generation cut at the
            token limit); strict parsing reports it as ``missing_end``.

    Returns:
        A ``Verdict``; ``ok`` is False with an ``error`` code and a ``reason`` when no numeric score was read.
    """
    if text is None or not text.strip():
        return Verdict.failure(VerdictError.EMPTY, "the output is empty")
    body = text
    closes = list(_THINK_CLOSE.finditer(body))
    if closes:
        body = body[closes[-1].end():]
    elif _THINK_OPEN.search(body):
        return Verdict.failure(VerdictError.UNCLOSED_THINK, "<think> is never closed: the output ended while reasoning")
    body = _normalise_tags(body).strip()

    # The final complete "[RESULT] ... [END]" decides: anything after the last [END] is ignored, and a [RESULT]
    # quoted earlier in the feedback is part of the feedback.
    end_at = body.rfind("[END]")
    result_at = body.rfind("[RESULT]", 0, end_at if end_at >= 0 else len(body))
    if result_at < 0:
        return Verdict.failure(VerdictError.NO_RESULT, "no [RESULT] tag in the output", _feedback(body, len(body)))
    feedback = _feedback(body, result_at)
    if end_at >= 0:
        score_text = body[result_at + len("[RESULT]"):end_at]
    else:
        score_text = body[result_at + len("[RESULT]"):]
        if not lenient:
            detail = "the score is there but the output was cut" if _SCORE.match(score_text) else "and no score follows"
            return Verdict.failure(VerdictError.MISSING_END, f"no [END] after the final [RESULT] ({detail})", feedback)

    match = _SCORE.match(score_text)
    if not match:
        shown = score_text.strip()[:40]
        return Verdict.failure(VerdictError.NO_SCORE, f"[RESULT] is followed by {shown!r}, not a number", feedback)
    score = float(match.group(1).replace(",", "."))
    if not math.isfinite(score):
        return Verdict.failure(VerdictError.NO_SCORE, f"score {match.group(1)!r} is not finite", feedback)
    if scale is None:
        return Verdict(feedback=feedback, score=score, ok=True)
    if not scale.contains(score):
        reason = f"score {format_score(score)} is outside the scale {scale.min}..{scale.max}"
        return Verdict(feedback=feedback, score=score, ok=True, reason=reason, in_scale=False)
    return Verdict(feedback=feedback, score=score, ok=True, in_scale=True)


def _feedback(body: str, result_at: int) -> str:
    """The rationale: after the last ``[FEEDBACK]`` before ``result_at`` (or from the start when the tag is
    missing) up to ``result_at``."""
    head = body[:result_at]
    start = head.rfind("[FEEDBACK]")
    if start >= 0:
        head = head[start + len("[FEEDBACK]"):]
    return head.strip()
