"""Judge outputs in their two verdict formats, rendered and parsed.

- ``tagged`` (``VerdictFormat.TAGGED``): ``[FEEDBACK] <rationale> [RESULT] <score> [END]``, what the 7B/32B POLLUX
  judges and ours write (``parse_verdict``).
- ``integer`` (``VerdictFormat.INTEGER``): the model thinks first (``<think>...</think>``, or a server's separated
  ``reasoning`` field) and then answers with a bare integer from the rubric: ``ai-forever/Pollux-4B-Judge``
  (``parse_integer_verdict``). The reasoning is the verdict's rationale.

``render_target`` writes what a seq2seq judge is trained to produce; ``render_rationale_target`` what a regression
judge's LM head writes (no score: the head scores). ``parse_verdict`` reads any judge's output back. A parse
failure is a value (``Verdict.ok`` is False, ``error`` says why); it is never a score.

A number outside the rubric's scale is the judge's answer, not a parse failure: the POLLUX paper scores such
verdicts (arXiv 2505.24616v3, Table 11: M-Prometheus-14B's MAE of 1.68-2.69, 2.29 on average, on mostly 0-2
scales, and its 2.5-4.0 mean scores in Table 10, only arise from scoring out-of-range values; Appendix D.2.3: it
"frequently produc[es] values outside the defined evaluation range"). Such a verdict is ``ok`` with
``in_scale=False``; callers that must reject it (teacher annotation, training data) check ``in_scale`` and
report ``VerdictError.OUT_OF_SCALE``.

Why one module of ~900 lines: both formats' rendering and parsing, the rules every training step applies to an
answer (``bare_answer``, ``bare_tagged_answer``, ``has_think_tag``, ``gives_reasons``) and the reading of an output
the length limit cut (``cut_short``, ``read_tagged_verdict``, ``rationale_cut_short``) read the same tag and
think-block patterns; split, they would be defined twice and could drift apart.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from judge.plumbing.invisible_text import without_invisible
from judge.plumbing.json_reading import counted
from judge.scales import Scale, foreign_digit

__all__ = [
    "Verdict",
    "VerdictFormat",
    "verdict_format_of_model",
    "names_pollux_4b",
    "parse_integer_verdict",
    "parse_judge_output",
    "cut_short",
    "read_tagged_verdict",
    "VerdictError",
    "CONTEXT_LIMIT",
    "parse_verdict",
    "render_target",
    "render_rationale_target",
    "parse_rationale",
    "rationale_cut_short",
    "format_score",
    "VerdictReader",
    "parse_pollux_result",
    "bare_answer",
    "bare_tagged_answer",
    "has_think_tag",
    "leading_reasoning",
    "split_at_last_think_close",
    "blocks_replaced",
    "read_served_verdict",
    "inline_reasoning",
    "failed_by_the_cut",
    "MIN_RATIONALE_WORDS",
    "rationale_words",
    "gives_reasons",
]


class VerdictError:
    """Why a verdict failed to parse: stable codes that metrics count and reports group by."""

    EMPTY = "empty"
    UNCLOSED_THINK = "unclosed_think"
    NO_RESULT = "no_result"
    NO_SCORE = "no_score"
    MISSING_END = "missing_end"
    # The length limit stopped the output before its end (trl: no end-of-sequence id; vLLM: finish_reason
    # "length"): an integer read from it is wherever the cut fell (a "1" of "10"), not a verdict, and whatever else
    # failed to parse there failed for the cut (failed_by_the_cut). The GRPO rewards, judge-serve and judge-eval fail
    # such a verdict alike; the traces stage counts it as ``verdict_cut``.
    CUT = "cut"
    # Not a parse failure (parse_verdict returns ok with in_scale=False): the drop reason of callers that must
    # reject out-of-scale scores (teacher annotation, training-data building).
    OUT_OF_SCALE = "out_of_scale"
    # Not a parse failure either: the judgment was never run, its prompt cannot fit the judge's context (a
    # ``/v1/judge`` request with ``"oversize": "fail"``, as the reward paths send).
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    # Not a parse failure either: the engine ended the generation itself (vLLM's finish_reason "abort": a paused
    # engine or a fault-tolerance abort answers HTTP 200 with the text written so far), so the text is no verdict
    # whatever it reads as. A failure of the request, not of the judge: asking again can succeed.
    ABORTED = "aborted"
    # Not a parse failure either: the engine refused this one judgment (an HTTP 4xx: its window, a sampling value);
    # the request's other judgments are answered. ``error_reason`` carries the engine's message, sanitized.
    ENGINE_REFUSED = "engine_refused"


#: An engine's words for a prompt its context window cannot hold, read alike by judge-eval's chat backends
#: (``eval.judging.backends``) and by judge-serve for one judgment its engine refused (``serve.judging``). vLLM 0.32:
#: "This model's maximum context length is M tokens. However, your prompt contains N input tokens, which exceeds this
#: limit even without any output tokens." (``renderers/params.py``; "... contains N characters ..." for a text past
#: any token count), "Input length (N) exceeds model's maximum context length (M)."
#: (``entrypoints/serve/utils/api_utils.py``), "The decoder prompt (length N) is longer than the maximum model length
#: of M." (``v1/engine/input_processor.py``), and for a prompt filling the window, whose max_tokens it lowers to the 0
#: tokens left, "max_tokens must be at least 1, got 0." (as ``eval.mera.client`` reads it); OpenAI: "This model's
#: maximum context length is N tokens", code ``context_length_exceeded``.
CONTEXT_LIMIT = re.compile(r"maximum context length|maximum model length|max_tokens must be at least 1, got 0\b|"
                           r"context_length_exceeded", re.I)


class VerdictFormat:
    """How a judge writes its verdict: stable strings used in configs, manifests and ``/v1/judge`` results."""

    #: ``[FEEDBACK] ... [RESULT] n [END]`` (the 7B/32B POLLUX judges; judge-train's with ``verdict_format`` tagged).
    TAGGED = "tagged"
    #: reasoning, then a bare integer from the rubric (``ai-forever/Pollux-4B-Judge``; judge-train's with
    #: ``verdict_format`` integer), thinking left on.
    INTEGER = "integer"
    ALL = (TAGGED, INTEGER)


#: Model ids that name the released integer-format judge, whatever else they carry: ``Pollux-4B-Judge``, a local copy
#: ``pollux-4b/``, a quantised ``Pollux-4B-Judge-AWQ`` (the last part of the id, any case, ``-``, ``_``, a space or
#: nothing between the two words).
_POLLUX_4B = re.compile(r"pollux[-_ ]?4b", re.IGNORECASE)


def names_pollux_4b(model_id: str | None) -> bool:
    """Whether a model id or folder names ``Pollux-4B-Judge`` (its last part contains ``pollux-4b``, any case): the
    one rule by which judge-serve, judge-eval (``judge.checkpoints.verdict_format_and_why``, which also reads a
    checkpoint's manifest and model type) and ``verdict_format_of_model`` read a judge's format from an id."""
    return bool(_POLLUX_4B.search(str(model_id or "").rstrip("/").rsplit("/", 1)[-1]))


def verdict_format_of_model(model_id: str | None) -> str:
    """The verdict format a model id implies: ``integer`` when it names ``Pollux-4B-Judge`` (``names_pollux_4b``: a
    renamed or quantised copy such as ``./models/Pollux-4B-Judge-v2`` included, as the stages read it), else
    ``tagged``. POLLUX's own client for the 4B judge (``demo/serve_pollux_demo.py`` in ``ai-forever/POLLUX``,
    default ``--model ai-forever/Pollux-4B-Judge`` at lines 196 and 272) asks for "one integer" and parses the answer
    as an integer (lines 160-180)."""
    return VerdictFormat.INTEGER if names_pollux_4b(model_id) else VerdictFormat.TAGGED


@dataclass(frozen=True)
class Verdict:
    """A parsed judge output.

    Attributes:
        feedback: the rationale (text between ``[FEEDBACK]`` and the final ``[RESULT]``; for the integer format the
            judge's reasoning), "" when absent.
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
# A score: POLLUX's number (src/utils/score_utils.py, NUMBER_PATTERN: an optional sign, digits with an optional
# decimal part after a point or a comma, or a bare fraction such as ".5"), optionally wrapped in markdown emphasis or
# parentheses ("**2**", "(1)"). Beyond POLLUX's: U+2212 attached to the digits is the minus sign, as the integer
# reader and the rubric reader (judge.scales) read it; digits are ASCII only (``_foreign_digit``).
_SCORE = re.compile(r"^[*_(\s]*([+\-\u2212]?(?:[0-9]+(?:[.,][0-9]+)?|[.,][0-9]+))[*_)\s]*$")


def _foreign_digit(text: str) -> str | None:
    """Why ``text`` holds no number to read when it holds a decimal digit outside ASCII (fullwidth "２", Arabic-Indic
    "١", mathematical bold "𝟐"), else None. Python's ``\\d`` and ``float`` read any script's digits, so "２" read as
    2 and "1٢" as 12; the rubric reader refuses such a level (``judge.scales``), and a judge trained on ASCII scores
    that writes one has written no score it was trained to write: a counted ``no_score`` failure, never a number."""
    char = foreign_digit(text)
    if char is None:
        return None
    return f"U+{ord(char):04X} is a digit outside ASCII: only ASCII digits are read as a score"


def _nothing_written(text: str | None) -> str:
    """Why an output holds no verdict when it holds no text: empty, or blank (a judge that wrote only newlines, as a
    tiny or broken one does, reads "the output is empty" beside an output of 40 newlines otherwise)."""
    return "the output is empty" if not text else f"the output is blank: {counted(len(text), 'whitespace character')}"


def _normalise_tags(text: str) -> str:
    return _TAG.sub(lambda m: f"[{m.group(1).upper()}]", text)


def parse_rationale(text: str) -> tuple[str, bool]:
    """The rationale a regression judge wrote (``render_rationale_target``'s ``[FEEDBACK] <rationale> [END]``).

    Tolerates what ``parse_verdict`` tolerates (a ``<think>`` preamble, markdown around tags, a score the LM added
    anyway: the rationale runs from the first ``[FEEDBACK]`` after the preamble to the first ``[RESULT]`` or
    ``[END]`` after it). A ``</think>`` inside the rationale or after it is text (``_reasoning_end``).

    Returns:
        ``(rationale, complete)``: complete is False when no closing tag (``[RESULT]`` or ``[END]``) was written; a cut
        generation is told by its ``finish_reason``.
    """
    body = _normalise_tags(text[_reasoning_end(text):])
    start = body.find("[FEEDBACK]")
    if start >= 0:
        body = body[start + len("[FEEDBACK]"):]
    stops = [at for at in (body.find("[RESULT]"), body.find("[END]")) if at >= 0]
    if stops:
        return body[: min(stops)].strip(), True
    return body.strip(), False


def rationale_cut_short(text: str | None, finish_reason: str | None, *, complete: bool | None = None) -> bool:
    """Whether the length limit stopped a regression judge's generation before a tag closed its rationale: the
    ``finish_reason`` is ``length`` and ``parse_rationale`` finds no ``[RESULT]`` or ``[END]`` after it. A rationale
    closed before the cut (text after the ``[END]``, as ``stop_at_end`` false runs on, or a ``[RESULT]`` the LM added)
    is whole. One reading for judge-serve, which scores an export's head only on a whole rationale, and for
    judge-eval's rows, so the same text and ``finish_reason`` get the same verdict in both. ``complete``: what
    ``parse_rationale`` said of ``text``, from a caller that has read the rationale already (judge-serve reads it for
    the head's input), so the text is not read twice; None: read here."""
    if finish_reason != "length":
        return False
    return not (parse_rationale(text or "")[1] if complete is None else complete)


def parse_verdict(text: str | None, scale: Scale | None = None, lenient: bool = False) -> Verdict:
    """Parse ``[FEEDBACK] ... [RESULT] n [END]`` from a judge's output.

    The final complete ``[RESULT] ... [END]`` decides (a ``[RESULT]`` quoted inside the feedback before the verdict's
    does not; a ``[RESULT]`` without an ``[END]`` after the last complete block is text after ``[END]``, as POLLUX's
    reader, which takes the first complete block, reads it too); a ``<think>...</think>`` preamble (``_reasoning_end``: a ``</think>`` quoted in the feedback or
    written after the verdict is text), surrounding whitespace, markdown emphasis around the tags, a decimal comma
    and text after ``[END]`` holding no ``[RESULT]`` are all tolerated.

    Args:
        text: the raw output.
        scale: when given, ``in_scale`` says whether the score lies within it; a score outside it is still ok
            (see the module docstring), with ``in_scale=False`` and a ``reason`` naming the scale.
        lenient: accept a missing ``[END]`` when the output ends right after the score (a generation cut at the
            token limit, or a judge that stopped there: Appendix M.1's English format line shows no ``[END]``);
            strict parsing reports it as ``missing_end``.

    Returns:
        A ``Verdict``; ``ok`` is False with an ``error`` code and a ``reason`` when no numeric score was read.
    """
    if text is None or not text.strip():
        return Verdict.failure(VerdictError.EMPTY, _nothing_written(text))
    body = text[_reasoning_end(text):]
    opened = _THINK_OPEN.search(body)
    first_tag = _TAG.search(body)
    # Reasoning that never closed: a <think> before any tag, at the start or in a second block after a closed one
    # (whose draft verdict is no verdict). One quoted in the rationale, or after the verdict (an answer under
    # judgment that leaked the tag), is text, and the verdict around it stands.
    if opened and (first_tag is None or opened.start() < first_tag.start()):
        return Verdict.failure(VerdictError.UNCLOSED_THINK,
                               "<think> is never closed: the output ended while reasoning")
    body = _normalise_tags(body).strip()

    # The final complete "[RESULT] ... [END]" decides: anything after the last [END] is ignored, and a [RESULT]
    # quoted earlier in the feedback is part of the feedback. A [RESULT] with no [END] after a complete block is text
    # after [END], as POLLUX's first-complete-block reading (src/utils/score_utils.py) takes it too.
    end_at = body.rfind("[END]")
    result_at = body.rfind("[RESULT]", 0, end_at if end_at >= 0 else len(body))
    if result_at < 0 and end_at >= 0 and body.rfind("[RESULT]") > end_at:
        # an [END] before the only [RESULT] (one closed the feedback): the verdict has no [END] of its own
        end_at, result_at = -1, body.rfind("[RESULT]")
    if result_at < 0:
        return Verdict.failure(VerdictError.NO_RESULT, "no [RESULT] tag in the output", _feedback(body, len(body)))
    feedback = _feedback(body, result_at)
    if end_at >= 0:
        # the first [END] after the final [RESULT] closes the score, as POLLUX's first-match reading does: an [END]
        # repeated after it is text after [END]
        end_at = body.find("[END]", result_at)
        score_text = body[result_at + len("[RESULT]"):end_at]
    else:
        score_text = body[result_at + len("[RESULT]"):]
        if not lenient:
            # the output alone cannot say why [END] is missing (cut at the token limit, or the judge stopped without
            # it): read_tagged_verdict names the cause when the server's finish_reason is known
            detail = "the score is there, with no [END] after it" if _SCORE.match(score_text) else "and no score follows"
            return Verdict.failure(VerdictError.MISSING_END, f"no [END] after the final [RESULT] ({detail})", feedback)

    match = _SCORE.match(score_text)
    if not match:
        shown = score_text.strip()[:40]
        foreign = _foreign_digit(score_text)
        why = f" ({foreign})" if foreign else ""
        return Verdict.failure(VerdictError.NO_SCORE, f"[RESULT] is followed by {shown!r}, not a number{why}", feedback)
    score = float(match.group(1).replace(",", ".").replace(_MINUS_SIGN, "-"))
    if not math.isfinite(score):
        return Verdict.failure(VerdictError.NO_SCORE, f"score {match.group(1)!r} is not finite", feedback)
    return _read(feedback, score, scale)


def _reasoning_end(text: str) -> int:
    """Where a tagged verdict's text starts after the judge's reasoning: the end of the last ``</think>`` that closes
    reasoning, 0 when none does.

    Reasoning comes before the verdict: a ``<think>...</think>`` block, or (a chat template that opened the block in
    the prompt) text up to a ``</think>``; a second block may follow the first. A ``</think>`` closes reasoning when
    no verdict tag was written before it outside reasoning: between the previous close (or the start) and it, every
    ``[FEEDBACK]``/``[RESULT]``/``[END]`` comes after a ``<think>`` (a draft verdict inside the reasoning). The first
    ``</think>`` with such a tag before it lies inside or after the verdict block (the judge quoting an answer's
    ``<think>...</think>`` in its feedback, an answer's tag after ``[END]``): it and every later one are text, and
    cutting there would cut the feedback (hiding the tag from build-data's ``tags_in_feedback``) or the verdict.

    One exception: reasoning a chat template opened in the prompt (DeepSeek-R1, Qwen3 Thinking-2507, the R1 distills
    end their generation prompt in ``<think>``) starts the text with no ``<think>`` of its own, and may draft a
    verdict ("Let me draft: [FEEDBACK] ... [RESULT] 0 [END] Wait ..."). Its ``</think>``, the first of the text with
    no ``<think>`` before it, still closes reasoning when the verdict's first tag (``[FEEDBACK]`` or ``[RESULT]``,
    after whitespace and markdown emphasis) follows it: read from the whole text, a verdict the length limit cut
    ("</think> [FEEDBACK] The answer is corr") would be the draft's score. A quoted ``</think>`` is followed by the
    feedback's own text ("тег </think>. [RESULT]"), or by nothing (after ``[END]``), and stays text; so does one in
    a text that opens with a verdict tag ("[FEEDBACK] Ответ обрывается на </think> [RESULT] 0 [END]"): that text is
    the verdict, not a reasoning, and its feedback keeps the tag that build-data's ``tags_in_feedback`` looks for.
    The exception needs a complete draft before that ``</think>`` (an ``[END]`` after the first tag): a verdict after
    a heading, a label, a BOM or a code fence ("Вердикт:\n[FEEDBACK] Ответ заканчивается тегом </think>\n[RESULT] 0
    [END]") does not open with a tag either, and its quoted ``</think>`` before ``[RESULT]`` is feedback, not a
    reasoning's close; a reasoning never wrote ``[END]`` before its ``</think>`` unless it drafted a whole verdict.
    A ``<think>`` the reasoning mentions after its draft (the answer under judgment opens one) does not undo it.
    """
    template_opened = not _opens_verdict(text, 0)
    start = 0
    for close in _THINK_CLOSE.finditer(text):
        segment = text[start:close.start()]
        opened = _THINK_OPEN.search(segment)
        tag = _TAG.search(segment, 0, opened.start() if opened else len(segment))
        if tag is not None and not (start == 0 and template_opened and _drafted_verdict(segment, tag)
                                    and _opens_verdict(text, close.end())):
            break
        start = close.end()
    return start


_END_TAG = re.compile(r"\[\s*END\s*\]", re.IGNORECASE)


def _drafted_verdict(segment: str, first_tag: re.Match[str]) -> bool:
    """Whether ``segment`` holds a complete verdict from its ``first_tag`` on: an ``[END]`` after that tag."""
    return _END_TAG.search(segment, first_tag.start()) is not None


#: The first tag of a verdict, as ``_TAG`` spells it (markdown emphasis around it, any case, spaces in the brackets).
_VERDICT_OPENING = re.compile(r"\s*[*_]{0,3}\[\s*(?:FEEDBACK|RESULT)\s*\]", re.IGNORECASE)


def _opens_verdict(text: str, at: int) -> bool:
    """Whether a verdict's first tag (``[FEEDBACK]`` or ``[RESULT]``) follows ``at`` after whitespace: where a
    reasoning's ``</think>`` hands over to the verdict. ``[END]`` opens none."""
    return _VERDICT_OPENING.match(text, at) is not None


def _read(feedback: str, score: float, scale: Scale | None) -> Verdict:
    """A read score as an ok verdict, checked against ``scale`` when given (outside it: ``in_scale=False``)."""
    score += 0.0  # "-0" is the score 0 in every reader: -0.0 would be written "-0.0" to JSON
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


#: Fewest words a rationale or a reasoning trace must have to count as giving reasons: the paper's Appendix B filter
#: of training rationales ("one word rationale are only eligible for the perfect scores"). build-data's tagged rows
#: keep that exception for a perfect score (``rationale_words`` 1); a reasoning judge gets none (``gives_reasons``).
MIN_RATIONALE_WORDS = 2
# A letter run may carry combining marks (U+0300-U+036F): a decomposed "ё" ("е" + U+0308) or "й", or a stress mark
# ("пра́вильно"), none of which Python's \w matches, is inside its word.
_WORD = re.compile(r"\w[\w\u0300-\u036f]*(?:-\w[\w\u0300-\u036f]*)*")


def rationale_words(text: str | None) -> int:
    """How many words ``text`` holds: runs of letters or digits (a combining mark inside one, as a decomposed "ё" or a
    stress mark, is part of it), a hyphenated one one word ("что-то"). The paper's "at least two words" (arXiv
    2505.24616v3, Appendix B) counts words, so ". ." holds none and "Ошибок,нет." two, where splitting at spaces would
    count the other way round. A character that shows nothing (``judge.plumbing.invisible_text``: a soft hyphen, a
    zero-width space) splits no word: "Объ\u00adёмно." is one word, as it looks."""
    return len(_WORD.findall(without_invisible(text))) if text else 0


def gives_reasons(text: str | None) -> bool:
    """Whether ``text`` (a rationale, or the reasoning before an integer verdict) gives reasons: at least
    ``MIN_RATIONALE_WORDS`` words (``rationale_words``).

    The one rule for "a verdict with its reasons", wherever a judge is trained: build-data's ``too_few_words``
    (``train.build_data``), the traces stage's ``no_reasoning`` (``train.synthetic.traces.trace_outcome``), the
    integer-format rows' ``too_few_words`` (``train.seq2seq.integer_rows``) and GRPO's ``format_reward``
    (``train.grpo_rewards``). One character of reasoning is no reason: rewarded, it would teach a policy to stop
    thinking as surely as a bare score. It lives beside the verdict readers, under every stage that applies it.
    """
    return rationale_words(text) >= MIN_RATIONALE_WORDS


_THINK_TAG = re.compile(r"</?think\s*>", re.IGNORECASE)
_BARE_INTEGER = re.compile(r"[+\-\u2212]?[0-9]+")  # ASCII digits, as the readers take (``_foreign_digit``)


def bare_answer(content: str | None, reasoning: str | None = None) -> bool:
    """Whether a teacher's answer after its reasoning is one integer and nothing else, whitespace around it allowed.

    The reasoning is the one block the parser reads as the trace (``judge.parse_integer_verdict``): the server's
    separate ``reasoning`` when it returned one (the ``content`` is then the answer, after a copy of that reasoning
    in a block, if the server left one), else the ``content``'s first ``<think>...</think>`` block at its start, or
    all before its first ``</think>`` (a template that opened the block in the prompt). A second block after it
    ("<think>A</think> <think>B</think>2") or text before it is part of the answer: the parser keeps only the first
    block as the trace, so B's reasoning, which reached the 2, would be lost and A trained as the reasoning behind a
    2 it may not have reached.

    The serving parser reads the integer that ends an answer: "Оценка 1 из 2" reads as 2, and a trace that argued
    for 1 would be kept as a trace for 2. Serving keeps that reading (Pollux-4B-Judge's own client's); as training
    data only a bare integer is sure to be the verdict the reasoning reached. The one rule for every training step:
    the traces stage's ``answer_not_bare`` (``train.synthetic.traces.trace_outcome``), the integer-format rows'
    (``train.seq2seq.integer_rows``) and GRPO's ``format_reward`` (``train.grpo_rewards``), which would otherwise
    pay a policy for the answers the two steps before it never trained on.
    """
    answer = (content or "").strip()
    apart = (reasoning or "").strip()
    close = _THINK_CLOSE.search(answer)
    if close is not None:
        opens = list(_THINK_OPEN.finditer(answer, 0, close.start()))
        if len(opens) > 1 or (opens and opens[0].start() != 0):
            return False  # text before the reasoning block, or a block opened inside it: more than one trace
        block = answer[opens[0].end() if opens else 0: close.start()].strip()
        if apart and block != apart:
            return False  # a block beside the reasoning returned apart, which alone is the trace
        # (a server that returns the reasoning apart and leaves the same block in the content repeats one trace)
        answer = answer[close.end():]
    return _BARE_INTEGER.fullmatch(answer.strip()) is not None


#: Any spelling of a tag the parser reads (``_TAG``: any case, spaces inside the brackets) or a reasoning tag: inside
#: a tagged verdict's feedback, one is a second block, a quoted verdict or a reasoning the judge was never trained to
#: write there (build-data drops a rationale holding any of them: ``tags_in_feedback``).
_ANY_TAG = re.compile(r"\[\s*(?:FEEDBACK|RESULT|END)\s*\]|</?think\s*>", re.IGNORECASE)
# The sign as ``_BARE_INTEGER`` takes it (ASCII or U+2212, which ``parse_verdict`` reads as the minus in both formats)
_BARE_TAGGED_TAIL = re.compile(r"\[RESULT\]\s*[+\-\u2212]?[0-9]+\s*\[END\]")


def bare_tagged_answer(text: str | None, reasoning: bool = False) -> bool:
    """Whether a tagged answer is one ``[FEEDBACK] <rationale> [RESULT] <integer> [END]`` and nothing else,
    whitespace around it allowed: the tagged counterpart of :func:`bare_answer`.

    ``parse_verdict`` reads the final ``[RESULT] ... [END]`` and tolerates text before ``[FEEDBACK]`` or after
    ``[END]``, as serving must: "[FEEDBACK] ... [RESULT] 2 [END] а вообще 0" reads as 2, and so does "Думаю: [RESULT]
    0. [FEEDBACK] ... [RESULT] 2 [END]". As an answer to train towards only the block build-data's targets are
    (``render_target``, ended by the end of the turn) is sure to be the verdict its rationale reached: the tags as
    rendered, an integer score (its minus ASCII or U+2212, as :func:`bare_answer` takes it and the reader reads it),
    and a rationale holding no tag of its own (a second ``[FEEDBACK]`` opens a second
    block, as a second ``<think>`` does in the integer format). GRPO's ``format_reward`` (``train.grpo_rewards``) pays
    only such an answer in the tagged format; the parser itself is unchanged.

    ``reasoning``: the text opens with the reasoning a chat template opened in the prompt (a thinking-always
    template, whose generation prompt ends in ``<think>``; the reader put that ``<think>`` back in front): the answer
    is the block after the reasoning's first ``</think>``, as ``parse_verdict`` reads it. Such a template renders a
    tagged target after an empty reasoning block, so that block is the trained form; the reasoning may hold text
    (a draft verdict too, which the parser passes over) but no second ``<think>`` or ``</think>`` (a second block,
    as :func:`bare_answer` refuses one). Without ``reasoning`` any ``<think>`` block is text around the block.
    """
    answer = (text or "").strip()
    if reasoning:
        opened = _THINK_OPEN.match(answer)
        close = _THINK_CLOSE.search(answer)
        if opened is None or close is None or _THINK_TAG.search(answer, opened.end(), close.start()):
            return False
        answer = answer[close.end():].strip()
    if not answer.startswith("[FEEDBACK]"):
        return False
    result_at = answer.find("[RESULT]")
    if result_at < 0 or _ANY_TAG.search(answer, len("[FEEDBACK]"), result_at):
        return False
    return _BARE_TAGGED_TAIL.fullmatch(answer, result_at) is not None


def has_think_tag(text: str) -> bool:
    """Whether ``text`` (a reasoning read as the trace) holds a ``<think>`` or ``</think>`` of its own: a judge
    trained on it would learn to open or close reasoning inside its reasoning."""
    return _THINK_TAG.search(text) is not None


def leading_reasoning(text: str) -> tuple[str | None, str | None]:
    """The reasoning ``text`` opens with and the answer after it, as ``(reasoning, answer)``.

    - A leading ``<think>...</think>`` block (whitespace before it allowed): its body, and the text after its first
      ``</think>``.
    - A leading ``<think>`` that never closes (the length limit cut the reasoning): the text after it, and None.
    - Otherwise no reasoning: ``(None, text)``. A ``</think>`` with no ``<think>`` before it is not read as a
      reasoning the chat template opened (as ``bare_answer`` reads a verdict): in an answer under judgment it may be
      the answer's own words.

    One search for each tag from the start: linear in the text, whatever tags it repeats.
    """
    opened = _THINK_OPEN.match(text, len(text) - len(text.lstrip()))
    if opened is None:
        return None, text
    close = _THINK_CLOSE.search(text, opened.end())
    return (text[opened.end():], None) if close is None else (text[opened.end():close.start()], text[close.end():])


def split_at_last_think_close(text: str) -> tuple[str | None, str]:
    """``text`` cut at its last ``</think>`` (any case, spaces before the ``>``): ``(before, after)``, neither
    stripped; ``(None, text)`` without one.

    The integer reader's rule for a reasoning the chat template opened in the prompt (``parse_integer_verdict``):
    everything before the last close is reasoning, and the answer is the text after it, whatever blocks came before.
    One place for it, so that a quote of "what the judge answered" (``eval.judging.format_choice``) is the text the
    reader read.
    """
    last = _last_match(_THINK_CLOSE, text)
    return (None, text) if last is None else (text[:last.start()], text[last.end():])


# ---------------------------------------------------------------------------------------------------------------
# the integer format (Pollux-4B-Judge)
# ---------------------------------------------------------------------------------------------------------------

# Searched only up to the text's last </think> (``blocks_replaced``): past it no block can close, and an open tag
# with no close after it sends the lazy body to the text's end before failing, at every such tag: quadratic in a
# model's text, holding the GIL.
_THINK_BLOCK = re.compile(r"<think\s*>(.*?)</think\s*>", re.IGNORECASE | re.DOTALL)
# ASCII digits only (``_foreign_digit``), here and in _TRAILING_INTEGER, whose look-behind sees any script's digit:
# "٢1" is no "1".
_WHOLE_INTEGER = re.compile(r"[+-]?[0-9]+")
# POLLUX's client falls back to the integer that ends the answer (demo/serve_pollux_demo.py:174, r"(-?\d+)\s*$").
# Deliberate deviation: an integer that is the tail of a decimal ("1.5", "2,0") is not read (POLLUX's regex reads
# "1.5" as 5); such an answer is a no_score failure.
_TRAILING_INTEGER = re.compile(r"(?<![\d.,])(-?[0-9]+)\s*$")
# Minus-like characters: hyphens, dashes and minus signs, ASCII's and Unicode's (their small and fullwidth forms too).
# POLLUX's "-?" sees only an attached ASCII hyphen, so "−1" (U+2212), "–1" (en dash) and "- 1" read as +1: harmless
# on a 0..N rubric, but on the pairwise -1/0/1 scale it turns "answer 1 is better" into "answer 2 is better". Such
# a number is never read as its positive value: U+2212 attached to the digits is the minus sign and nothing else,
# so it reads as one (as an attached ASCII "-" does); any other dash, a minus spaced from the digits ("- 1",
# "Итог — 1": in Russian a spaced dash is also the copula "is", or a list bullet), a minus after a digit ("1-2", a
# range or a subtraction) and a doubled one ("1--1", "1-−1") are ambiguous, and a no_score failure is counted rather
# than a sign guessed.
_MINUS_LIKE = frozenset("-\u02d7\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2796\u2e3a\u2e3b\ufe58\ufe63\uff0d")
_MINUS_SIGN = "\u2212"


def _think_blocks(text: str) -> tuple[str | None, str]:
    """The first complete ``<think>...</think>`` block's body (None without one) and ``text`` with every complete
    block replaced by a space: ``_THINK_BLOCK``'s own matches, found in linear time. A space, not nothing: what stood
    on either side of a block stays apart ("1<think>...</think>2" is "1 2", whose trailing integer is the answer after
    the last reasoning), where POLLUX's client (``demo/serve_pollux_demo.py``, ``re.sub(..., "", ...)``) joins them
    into an integer the judge never wrote (12).

    The blocks are found only up to the last ``</think>`` (``blocks_replaced``), in linear time.
    """
    cut = _end_of_last(_THINK_CLOSE, text)
    first = _THINK_BLOCK.search(text, 0, cut) if cut else None
    if first is None:
        return None, text
    return first.group(1), blocks_replaced(text, _THINK_BLOCK, _THINK_CLOSE, " ", cut=cut)


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """``pattern``'s last match in ``text`` (None without one), found in one pass."""
    last = None
    for last in pattern.finditer(text):
        pass
    return last


def _end_of_last(pattern: re.Pattern[str], text: str) -> int:
    """Where ``pattern``'s last match in ``text`` ends; 0 without one."""
    last = _last_match(pattern, text)
    return 0 if last is None else last.end()


def blocks_replaced(text: str, block: re.Pattern[str], close: re.Pattern[str], gap: str, *,
                    cut: int | None = None) -> str:
    """``text`` with every match of ``block`` (a lazy ``<think>.*?</think>`` pattern) replaced by ``gap``: the same
    text as ``block.sub(gap, text)`` for a ``block`` whose every match ends with a match of ``close`` (its closing
    tag), found in time linear in the text.

    The search stops at the end of ``close``'s last match: past it no block can close. Before it every open tag
    has a close after it, so each attempt succeeds and the attempts do not overlap; an open tag with no close after
    it would instead send the lazy body to the text's end before failing, at every such tag (quadratic in a
    model's looping output). ``block`` must have no lookaround, which would see past the cut. ``cut``: that end
    where the caller has found it already (0: no close), so that the text is not scanned for it again; an earlier
    position leaves the blocks past it as they are.
    """
    cut = _end_of_last(close, text) if cut is None else cut
    return block.sub(gap, text[:cut]) + text[cut:] if cut else text


def parse_integer_verdict(content: str | None, reasoning: str | None = None, scale: Scale | None = None) -> Verdict:
    """Parse an integer-format verdict: reasoning, then a bare integer (``ai-forever/Pollux-4B-Judge``).

    Follows POLLUX's own client (``demo/serve_pollux_demo.py`` in ``ai-forever/POLLUX``, lines 160-180): the
    reasoning is the server's separated field (vLLM ``--reasoning-parser qwen3``) or an inline
    ``<think>...</think>`` block, which is replaced by a space in the answer (POLLUX's client joins the text around
    it); the answer is an integer, or text ending in one. Beyond POLLUX's client: an answer cut inside its reasoning
    (an unclosed ``<think>``, or reasoning with no answer after it, which is how vLLM's reasoning parser returns a
    generation cut before ``</think>``) is an ``unclosed_think`` failure, never a score; a reasoning that closed
    (``</think>``) with nothing after it is an ``empty`` failure, its reasoning kept as feedback; a ``</think>``
    without its ``<think>`` (a template that opened the block in the prompt) closes the reasoning; a block between
    two answers keeps them apart (``1<think>...</think>2`` reads 2, the answer after the last reasoning, where the
    client reads 12); the tail of a decimal is no integer (``1.5`` is a ``no_score`` failure, where the client reads
    5); the score is checked against ``scale`` as ``parse_verdict`` does.

    Args:
        content: the answer (chat ``message.content``, or a completion's whole text with its ``<think>`` block).
        reasoning: the server's separated reasoning (``message.reasoning`` / ``reasoning_content``), if any.
        scale: when given, ``in_scale`` says whether the integer lies within it.

    Returns:
        A ``Verdict`` whose ``feedback`` is the reasoning ("" when none).
    """
    text = (content or "").strip()
    thought = (reasoning or "").strip()
    first_block, text_without_blocks = _think_blocks(text)
    if first_block is not None:
        thought = thought or first_block.strip()
        text = text_without_blocks.strip()
    if _THINK_OPEN.search(text):
        opened = _THINK_OPEN.split(text, 1)[1].strip()
        return Verdict.failure(VerdictError.UNCLOSED_THINK, "<think> is never closed: the output ended while reasoning",
                               thought or opened)
    before_close, after_close = split_at_last_think_close(text)
    if before_close is not None:  # the block was opened by the prompt: everything before its close is reasoning
        thought = thought or before_close.strip()
        text = after_close.strip()
    if not text:
        if first_block is not None or before_close is not None:
            # The reasoning closed and nothing followed: the judge ended its turn with no verdict, not cut inside its
            # reasoning (a cut leaves no </think>). Empty, as an answer with nothing in it; unclosed_think would send
            # whoever reads it to raise max_tokens, which gives room to nothing.
            return Verdict.failure(VerdictError.EMPTY, "the reasoning closed with no answer after it", thought)
        if thought:
            return Verdict.failure(VerdictError.UNCLOSED_THINK,
                                   "no answer after the reasoning: the output ended while reasoning", thought)
        return Verdict.failure(VerdictError.EMPTY, _nothing_written(content))
    match = _WHOLE_INTEGER.fullmatch(text) or _TRAILING_INTEGER.search(text)
    if not match:
        shown = text[-40:]
        ending, start = text.rstrip(), len(text.rstrip())
        while start and ending[start - 1].isdecimal():  # any script's digits ending the answer (a search is quadratic)
            start -= 1
        foreign = _foreign_digit(ending[start:])
        why = f" ({foreign})" if foreign else ""
        return Verdict.failure(VerdictError.NO_SCORE, f"the answer {shown!r} does not end with an integer{why}",
                               thought)
    written = match.group(0) if match.re is _WHOLE_INTEGER else match.group(1)
    if match.re is _TRAILING_INTEGER:
        head = text[: match.start(1)]
        if written.startswith("-"):
            # The ASCII minus the pattern took as the sign is one, unless another minus touches it ("1--1": a
            # subtraction of -1, or a doubled dash).
            sign_at, ambiguous = match.start(1), head[-1:] in _MINUS_LIKE
        else:
            ahead = head.rstrip()
            sign_at = len(ahead) - 1
            ambiguous = sign_at >= 0 and ahead[-1] in _MINUS_LIKE and (
                ahead[-1] != _MINUS_SIGN or len(ahead) != len(head)
                or ahead[-2:-1].isdecimal() or ahead[-2:-1] in tuple(".,") or ahead[-2:-1] in _MINUS_LIKE)
        if ambiguous:
            shown = text[sign_at - 1 if sign_at and text[sign_at - 1] in _MINUS_LIKE else sign_at: match.end(1)]
            return Verdict.failure(
                VerdictError.NO_SCORE,
                f"the answer ends with {shown!r} (U+{ord(text[sign_at]):04X} before the integer): a dash, a spaced "
                "or doubled minus or a minus after a digit is no sign to read, and the integer without it could flip "
                "a negative verdict", thought)  # fmt: skip
        if not written.startswith("-") and sign_at >= 0 and ahead[-1] == _MINUS_SIGN:
            written = "-" + written
    # float() of the text, not of int(): int() refuses past 4,300 digits (ValueError) and float(int) overflows from
    # 309 (OverflowError), both uncaught by every caller; float() reads any length in linear time, the same value
    # (both round correctly), an overflow as inf. A number no float holds is no score, as parse_verdict rules.
    score = float(written)
    if not math.isfinite(score):
        digits = len(written.lstrip("+-"))
        return Verdict.failure(VerdictError.NO_SCORE, f"the answer's integer ({digits} digits) is not a finite number",
                               thought)
    return _read(thought, score, scale)


def parse_judge_output(verdict_format: str, text: str | None, *, reasoning: str | None = None,
                       scale: Scale | None = None, lenient: bool = False) -> Verdict:
    """Parse a judge's output in its verdict format (``VerdictFormat``).

    Args:
        verdict_format: ``tagged`` (``parse_verdict``) or ``integer`` (``parse_integer_verdict``).
        text: the output (for ``integer``, the answer, possibly with its inline ``<think>`` block).
        reasoning: ``integer`` only: a server's separated reasoning. A tagged judge's is ignored, as
            ``parse_verdict`` ignores a ``<think>`` preamble.
        scale: the rubric's scale, for ``in_scale``.
        lenient: ``tagged`` only (see ``parse_verdict``).

    Raises:
        ValueError: an unknown format.
    """
    if verdict_format == VerdictFormat.INTEGER:
        return parse_integer_verdict(text, reasoning, scale)
    if verdict_format == VerdictFormat.TAGGED:
        return parse_verdict(text, scale=scale, lenient=lenient)
    raise ValueError(f"verdict_format: {verdict_format!r} is not one of {', '.join(VerdictFormat.ALL)}")


def cut_short(verdict: Verdict, limit: str) -> Verdict:
    """``verdict`` read from an output that ``limit`` stopped before its end (vLLM's ``finish_reason`` "length",
    trl's completion without an end-of-sequence id): a readable score there is wherever the cut fell (the "1" of
    "10"), so it fails as ``VerdictError.CUT``; a failure is left to ``failed_by_the_cut``, which
    ``read_served_verdict`` applies after it. One rule for the GRPO rewards, judge-serve and judge-eval's chat
    client."""
    if not verdict.ok:
        return verdict
    return Verdict.failure(VerdictError.CUT, f"the output reached {limit} before its end: the score read is wherever "
                           "the cut fell", verdict.feedback)


# A proper prefix of "[END]" ending the text ("[", "[E", "[EN", "[END"): the output stopped inside the tag that
# closes the score, so the score before it was written whole.
_PARTIAL_END = re.compile(r"\[\s*(?:E(?:N(?:D\s*)?)?)?$", re.IGNORECASE)


def _trailing_number(text: str) -> str:
    """The ASCII digits ``text`` ends with, with the minus (ASCII or U+2212) before them ("" for none): where a
    length cut inside a score leaves it. Stripped rather than searched for: ``[0-9]+$`` searched retries every run of
    digits to its end, quadratic in an output of digits."""
    head = text.rstrip("0123456789")
    digits = text[len(head):]
    return "-" + digits if digits and head.endswith(("-", _MINUS_SIGN)) else digits


def read_tagged_verdict(text: str | None, scale: Scale | None, lenient: bool = False,
                        finish_reason: str | None = None) -> Verdict:
    """A tagged verdict read as ``parse_verdict`` reads it, with what a cut output needs beyond it: one rule for
    judge-serve and judge-eval's chat client, so one output scores alike on either route.

    Lenient reading exists for an output that ends before its ``[END]``; one cut inside that tag ("[RESULT] 1 [EN")
    is read as the score before it. A strict reading's ``missing_end`` says which end it was when the server told:
    the judge ended its turn there (``finish_reason`` "stop"), or the length limit cut it (``cut``, below). An output the length limit stopped (``finish_reason`` "length") right after the
    score's digits (no ``[END]`` after the final ``[RESULT]``) may have been cut inside the score: "1" of a 0..10
    scale's "10". When some level is written starting with those digits and is longer, the score read is wherever
    the cut fell and fails as ``VerdictError.CUT`` (``cut_short``), as an integer verdict cut anywhere does. Without
    a ``scale`` no level is known to be longer: the score read stands.

    An output the length limit stopped with text after its last ``[END]``, which does not open with a verdict tag, was
    not stopped at a verdict's end: it was still writing, and the block read may be a draft inside a reasoning the
    chat template opened in the prompt ("Let me draft: [FEEDBACK] ... [RESULT] 0 [END] Wait, actually", cut before its
    ``</think>``), which judge-serve, reading after the ``<think>`` it prompted, fails as ``unclosed_think``. It fails
    as ``VerdictError.CUT`` too. A text that opens with ``[FEEDBACK]`` or ``[RESULT]`` is the verdict, not a
    reasoning (as ``_reasoning_end`` reads it): its complete block stands whatever follows it.
    """
    partial_end = _PARTIAL_END.search(text) if lenient and text else None
    read = text[: partial_end.start()] if partial_end else text
    verdict = parse_verdict(read, scale=scale, lenient=lenient)
    if finish_reason == "stop" and verdict.error == VerdictError.MISSING_END:
        scored = parse_verdict(read, scale=scale, lenient=True).ok
        detail = "the score is there, which lenient reading takes" if scored else "and no score follows"
        return Verdict.failure(VerdictError.MISSING_END, "the judge ended its turn (finish_reason stop) with no [END] "
                               f"after the final [RESULT] ({detail})", verdict.feedback)
    if finish_reason == "length" and verdict.error == VerdictError.MISSING_END:
        # still missing_end: read_served_verdict's failed_by_the_cut makes any failure the length limit stopped a cut
        scored = parse_verdict(read, scale=scale, lenient=True).ok
        detail = "the score is there, which lenient reading takes" if scored else "and no score follows"
        return Verdict.failure(VerdictError.MISSING_END, "the length limit cut the output (finish_reason length) with "
                               f"no [END] after the final [RESULT] ({detail})", verdict.feedback)
    if finish_reason != "length" or not verdict.ok or not text:
        return verdict
    last_end = None
    for last_end in _END_TAG.finditer(read):
        pass
    # "opens with a verdict tag" after the reasoning a <think> closed (judge-serve reads "<think>\n" + output): a
    # block after a closed reasoning is the verdict, as one at the very start is
    if last_end is not None and read[last_end.end():].strip() and not _opens_verdict(read, _reasoning_end(read)):
        return cut_short(verdict, "max_tokens (finish_reason length; text follows its last [END], so the block read "
                         "may be a draft)")
    if partial_end is not None or scale is None:
        return verdict
    written = _trailing_number(text)
    if not written or parse_verdict(text, scale=scale).error != VerdictError.MISSING_END:
        return verdict  # a complete [RESULT] ... [END], or the score is no number the text ends with
    longer = [level for level in scale.levels if len(str(level)) > len(written) and str(level).startswith(written)]
    if longer:
        return cut_short(verdict, f"max_tokens (finish_reason length; {written!r} may be the start of the level "
                         f"{longer[0]})")
    return verdict


def inline_reasoning(content: str | None, reasoning: str | None, finish_reason: str | None = None) -> str | None:
    """A chat answer's separated reasoning put back where the engine wrote it: ``<think>``, the reasoning,
    ``</think>``, the content; ``content`` as it is when the server separated none. This is the text a completion
    of the same generation holds (what judge-serve's ``/v1/judge`` reads and returns as ``output``): vLLM's
    reasoning parsers split ``<think>R</think>C`` at its tags into R and C, neither stripped (``--reasoning-parser
    qwen3``, judge-serve's for an integer judge, is ``Qwen3Parser`` in vLLM 0.32's ``vllm/parser/qwen3.py``; most
    others ``BaseThinkingReasoningParser.extract_reasoning`` in ``vllm/reasoning/basic_parsers.py``), so the chat
    route's raw output and verdict are the typed route's for the same engine answer. Not where the split lost what
    the judge wrote: a generation with no ``</think>`` comes back as reasoning alone whether it opened ``<think>``
    or not (a bare ``1`` is put back as a closed reasoning with no answer), and a reasoning of whitespace only is no
    reasoning to ``separated_reasoning`` (the same verdict, without its empty block).

    A parser gives reasoning with no content both for ``<think>R</think>`` (the judge ended its turn after its
    reasoning) and for ``<think>R`` (cut inside it); ``finish_reason`` tells them apart as ``read_served_verdict``
    does: "stop" closes the block (read ``empty``), anything else leaves it open (``unclosed_think``).

    A content that opens with its own ``<think>`` block is returned as it came: its server left the generation
    whole beside the reasoning it also sent apart, which put back would be written twice (the rule
    ``judge.rewards.completion_reasoning`` keeps for a policy's turn)."""
    if reasoning is None or _THINK_OPEN.match((content or "").lstrip()):
        return content
    if content or finish_reason == "stop":
        return f"<think>{reasoning}</think>{content or ''}"
    return f"<think>{reasoning}"


def read_served_verdict(verdict_format: str, text: str | None, *, reasoning: str | None = None,
                        scale: Scale | None = None, lenient: bool = False, finish_reason: str | None = None) -> Verdict:
    """A served judge's output read as every route reads one (judge-serve, judge-eval's chat route, pairwise
    judging): ``parse_judge_output`` with what the server's ``finish_reason`` says. A tagged verdict by
    ``read_tagged_verdict`` (a score the length limit may have cut, a cut ``[END`` under ``lenient``); an integer one
    that ``max_tokens`` stopped fails as ``cut`` (``cut_short``): its integer is wherever the cut fell.

    An integer judge's reasoning returned apart (vLLM's ``--reasoning-parser``) with no answer after it is ``empty``
    when the server says the judge ended its turn (``finish_reason`` "stop"), as the same output written inline
    (``<think>...</think>`` and nothing) reads: no integer came, and ``unclosed_think`` would send the caller to raise
    ``max_tokens``, which gives room to nothing. Any other ``finish_reason`` leaves it ``unclosed_think``: "length"
    (a parser returns a cut inside the reasoning that way), none or "" (not reported), and "content_filter",
    "abort" or "tool_calls" (the turn was not ended by the judge), the rule the teacher traces read
    (``train.synthetic.traces``, docs/reasoning-judges.md). Any other failure of an output "length" stopped fails
    as ``cut`` (``failed_by_the_cut``)."""
    if verdict_format == VerdictFormat.TAGGED:
        return failed_by_the_cut(read_tagged_verdict(text, scale, lenient, finish_reason), finish_reason)
    if (verdict_format == VerdictFormat.INTEGER and finish_reason == "stop"
            and not (text or "").strip() and (reasoning or "").strip()):
        return Verdict.failure(VerdictError.EMPTY, "the judge ended its turn (finish_reason stop) with no answer after "
                               "its reasoning", reasoning.strip())
    verdict = parse_judge_output(verdict_format, text, reasoning=reasoning, scale=scale, lenient=lenient)
    if verdict_format == VerdictFormat.INTEGER and finish_reason == "length":
        verdict = cut_short(verdict, "max_tokens (finish_reason length)")
    return failed_by_the_cut(verdict, finish_reason)


def failed_by_the_cut(verdict: Verdict, finish_reason: str | None) -> Verdict:
    """A failure of an output the length limit stopped is the cut's: what the parser found there (nothing but
    whitespace, no score yet, a run of hundreds of digits) is where the cut fell, and the remedy is a larger
    ``max_tokens``, which ``empty`` or ``no_score`` would not say. It fails as ``VerdictError.CUT``, the parser's own
    reading kept in the reason. ``unclosed_think`` stays: it says the cut fell inside the reasoning, and already
    sends the caller to ``max_tokens``."""
    if finish_reason != "length" or verdict.ok or verdict.error in (VerdictError.CUT, VerdictError.UNCLOSED_THINK):
        return verdict
    return Verdict.failure(VerdictError.CUT, "the output reached max_tokens (finish_reason length) before a verdict "
                           f"was written whole; read as it stands: {verdict.error} ({verdict.reason})",
                           verdict.feedback)

# ---------------------------------------------------------------------------------------------- POLLUX's reading


class VerdictReader:
    """How a tagged verdict's score is read by a scorer that reproduces someone else's numbers (``judge-eval rank
    --verdict-reader``): stable strings used in configs and results."""

    #: ``parse_verdict``: the last ``[RESULT]``, markdown around the tags tolerated (``**[RESULT]**``), the
    #: rationale kept; what every stage of this toolkit reads.
    TOOLKIT = "toolkit"
    #: ``parse_pollux_result``: the first complete ``[RESULT] n [END]``, nothing else, as POLLUX's ``metrics.py``.
    POLLUX = "pollux"
    ALL = (TOOLKIT, POLLUX)


# POLLUX's reading (public repository ai-forever/POLLUX, src/utils/score_utils.py ``RESULT_SCORE_PATTERN`` and
# ``extract_score``, which src/metrics.py's ``parse_score`` calls): "[RESULT]", any whitespace, a number -- optional
# sign, digits with an optional "." or "," fraction, or a bare fraction such as ".5" --, any whitespace, "[END]";
# case-insensitive, the first such block in the text wins (re.search), and a "," decimal reads as ".".
_POLLUX_NUMBER = r"[+-]?(?:\d+(?:[.,]\d+)?|[.,]\d+)"
_POLLUX_RESULT = re.compile(rf"\[RESULT\]\s*({_POLLUX_NUMBER})\s*\[END\]", re.IGNORECASE)


def parse_pollux_result(text: str | None, scale: Scale | None = None) -> Verdict:
    """The score POLLUX's ``metrics.py`` reads from a judge output: the first complete ``[RESULT] n [END]``.

    Unlike ``parse_verdict``, a markdown-wrapped tag (``**[RESULT]**``), a missing ``[END]`` or a score followed by
    anything but whitespace before ``[END]`` gives no score, and an earlier block beats a later one. The feedback is
    not read ("").

    Args:
        text: the judge's output.
        scale: the rubric's scale, for ``in_scale`` (None: not checked).

    Returns:
        A ``Verdict``: ok with the score, or a failure ``no_result`` (``empty`` for no text; ``no_score`` for a
        number too long for a float, which POLLUX's ``float`` reads as infinity).
    """
    if not text or not text.strip():
        return Verdict.failure(VerdictError.EMPTY, _nothing_written(text))
    found = _POLLUX_RESULT.search(text)
    if found is None:
        return Verdict.failure(VerdictError.NO_RESULT, "no complete '[RESULT] <number> [END]' (POLLUX's metrics.py)")
    score = float(found.group(1).replace(",", "."))
    if not math.isfinite(score):  # 400 nines read as inf: no score, as parse_verdict rules, not an infinite one
        return Verdict.failure(VerdictError.NO_SCORE, f"score {found.group(1)[:40]!r} is not finite")
    return _read("", score, scale)
