"""Verdict rendering and parsing: table-driven, rows that must parse and rows that must fail with their reason."""

import pytest

from judge import Scale, VerdictError, format_score, parse_verdict, render_rationale_target, render_target
import judge

ZERO_TO_TWO = Scale((0, 1, 2))

MUST_PARSE = [
    # (name, text, expected feedback, expected score)
    ("canonical", "[FEEDBACK] Ответ точный. [RESULT] 2 [END]", "Ответ точный.", 2.0),
    ("surrounding whitespace and newlines", "\n\n  [FEEDBACK]\nОтвет точный.\n[RESULT]\n1\n[END]\n ", "Ответ точный.", 1.0),
    ("think preamble", "<think>Сначала подумаю. [RESULT] 0 [END]</think>\n[FEEDBACK] Верно. [RESULT] 2 [END]", "Верно.", 2.0),
    ("markdown emphasis on tags", "**[FEEDBACK]** Неплохо. **[RESULT]** 1 **[END]**", "Неплохо.", 1.0),
    ("emphasis on the score", "[FEEDBACK] Неплохо. [RESULT] **1** [END]", "Неплохо.", 1.0),
    ("lower-case tags with colon", "[feedback]: Неплохо. [result]: 1 [end]", "Неплохо.", 1.0),
    ("emphasis and a colon on the tag", "[FEEDBACK] Неплохо. **[RESULT]:** **2** [END]", "Неплохо.", 2.0),
    ("score in parentheses", "[FEEDBACK] Неплохо. [RESULT] (1) [END]", "Неплохо.", 1.0),
    ("negative score", "[FEEDBACK] Плохо. [RESULT] -1 [END]", "Плохо.", -1.0),
    ("decimal point", "[FEEDBACK] Средне. [RESULT] 1.5 [END]", "Средне.", 1.5),
    ("decimal comma", "[FEEDBACK] Средне. [RESULT] 1,5 [END]", "Средне.", 1.5),
    ("text after [END]", "[FEEDBACK] Хорошо. [RESULT] 2 [END] Спасибо за внимание! [RESULT] 0", "Хорошо.", 2.0),
    # POLLUX's reader takes the first complete block: a [RESULT] left without [END] after it is text after [END]
    ("a complete block, then a [RESULT] with no [END]", "[FEEDBACK] пример: [RESULT] 1 [END]. Итог [RESULT] 2",
     "пример:", 1.0),
    (
        "[RESULT] quoted inside the feedback: the final one decides",
        "[FEEDBACK] Модель написала «[RESULT] 0», но это не так. [RESULT] 2 [END]",
        "Модель написала «[RESULT] 0», но это не так.",
        2.0,
    ),
    ("no [FEEDBACK] tag: the text before [RESULT] is the feedback", "Всё верно. [RESULT] 2 [END]", "Всё верно.", 2.0),
    # A deliberate choice (docs/fidelity.md): a judge that corrects itself is read by its final verdict; POLLUX's
    # src/utils/score_utils.py would take the first (judge.verdicts.parse_pollux_result reads as POLLUX does).
    ("two complete verdicts: the final one decides",
     "[FEEDBACK] Сначала 1. [RESULT] 1 [END] Нет, лучше так. [RESULT] 2 [END]",
     "Сначала 1. [RESULT] 1 [END] Нет, лучше так.", 2.0),
    ("score in parentheses", "[FEEDBACK] Да. [RESULT] (2) [END]", "Да.", 2.0),
    # POLLUX reads the first "[RESULT] n [END]" (src/utils/score_utils.py): an [END] repeated after it is text after
    # [END], not part of the score
    ("[END] repeated", "[FEEDBACK] Хорошо. [RESULT] 2 [END] [END]", "Хорошо.", 2.0),
    ("[END] repeated on its own line", "[FEEDBACK] Хорошо. [RESULT] 2 [END]\n[END]", "Хорошо.", 2.0),
    # POLLUX's NUMBER_PATTERN: a sign and a bare fraction are numbers
    ("plus sign", "[FEEDBACK] Хорошо. [RESULT] +2 [END]", "Хорошо.", 2.0),
    ("bare fraction", "[FEEDBACK] Средне. [RESULT] .5 [END]", "Средне.", 0.5),
    # A <think> the judge quotes (an answer under judgment that leaked the tag) is text, not unclosed reasoning.
    ("<think> quoted in the feedback", "[FEEDBACK] В ответе остался тег <think> без пары. [RESULT] 1 [END]",
     "В ответе остался тег <think> без пары.", 1.0),
    ("<think> after the verdict", "[FEEDBACK] Хорошо. [RESULT] 2 [END] <think>", "Хорошо.", 2.0),
    # A </think> inside the feedback or after [END] is text too: only reasoning before the verdict is dropped.
    ("<think>...</think> quoted in the feedback",
     "[FEEDBACK] Ответ начинается с блока <think>рассуждение</think>, затем по существу верно. [RESULT] 1 [END]",
     "Ответ начинается с блока <think>рассуждение</think>, затем по существу верно.", 1.0),
    ("a lone </think> quoted in the feedback", "[FEEDBACK] В ответе остался тег </think>. [RESULT] 1 [END]",
     "В ответе остался тег </think>.", 1.0),
    ("</think> after [END]", "[FEEDBACK] Хорошо. [RESULT] 2 [END]\n</think>", "Хорошо.", 2.0),
    ("two think blocks, then a </think> quoted in the feedback",
     "<think>а</think> <think>б</think>[FEEDBACK] Тег </think> лишний. [RESULT] 0 [END]", "Тег </think> лишний.", 0.0),
    # a chat template opened the block in the prompt: the reasoning is all before the first </think>
    ("reasoning opened by the template", "Рассуждаю о критерии.</think>\n[FEEDBACK] Верно. [RESULT] 2 [END]",
     "Верно.", 2.0),
    # ... which may draft a verdict: its </think> still closes it, as the verdict's first tag follows it
    ("a template-opened reasoning's draft, then the verdict",
     "Черновик: [FEEDBACK] плохо [RESULT] 0 [END]\nНет, верно.\n</think>\n\n**[FEEDBACK]** Ответ верный. [RESULT] 2 [END]",
     "Ответ верный.", 2.0),
    ("a template-opened reasoning's draft, then a verdict with no [FEEDBACK]",
     "Черновик: [FEEDBACK] плохо [RESULT] 0 [END]</think> [RESULT] 2 [END]", "", 2.0),
    # a text that opens with [FEEDBACK] is the verdict: a </think> it quotes right before a tag is text
    ("a </think> quoted right before [RESULT]", "**[FEEDBACK]** Ответ обрывается на </think> [RESULT] 0 [END]",
     "Ответ обрывается на </think>", 0.0),
    # ... and so is one after a label, a heading, a BOM or a code fence: no [END] before the </think>, so no drafted
    # verdict a reasoning could have written
    ("a label, then a </think> quoted right before [RESULT]",
     "Вердикт:\n[FEEDBACK] Ответ заканчивается тегом </think>\n[RESULT] 0 [END]", "Ответ заканчивается тегом </think>", 0.0),
    ("a heading, then the same", "### Оценка\n[FEEDBACK] Ответ заканчивается тегом </think>\n[RESULT] 0 [END]",
     "Ответ заканчивается тегом </think>", 0.0),
    ("a BOM, then the same", "\ufeff[FEEDBACK] Ответ заканчивается тегом </think>\n[RESULT] 0 [END]",
     "Ответ заканчивается тегом </think>", 0.0),
    ("a code fence around the same", "```\n[FEEDBACK] Ответ содержит </think>\n[RESULT] 0 [END]\n```",
     "Ответ содержит </think>", 0.0),
]


@pytest.mark.parametrize("name,text,feedback,score", MUST_PARSE, ids=[row[0] for row in MUST_PARSE])
def test_parses(name, text, feedback, score):
    """Each well-formed variant yields its feedback and score."""
    verdict = parse_verdict(text, scale=Scale((-1, 0, 1, 2)))
    assert verdict.ok, verdict.reason
    assert verdict.error is None
    assert verdict.score == score
    assert verdict.feedback == feedback


#: DeepSeek-R1 as a teacher behind a server with no reasoning parser: its chat template opened <think> in the
#: prompt, so the output starts inside the reasoning, which drafts a verdict; the verdict after it was cut.
TEACHER_DRAFT_THEN_CUT = ("Okay, the response is mostly right. Let me draft: [FEEDBACK] The answer is wrong. [RESULT] 0 "
                          "[END]\nWait, actually it is right.\n</think>\n\n[FEEDBACK] The answer correctly solves the "
                          "task, step by step")

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
    ("unclosed think", "<think>Рассуждаю о том, что [RESULT] 2 [END]", {}, VerdictError.UNCLOSED_THINK),
    ("unclosed think after a preamble", "Итак.\n<think>Рассуждаю: [FEEDBACK] черновик", {}, VerdictError.UNCLOSED_THINK),
    # a second block may follow a closed first one; never closed, its draft verdict is no verdict
    ("unclosed second think", "<think>Сначала.</think><think>Черновик [RESULT] 1 [END] хм", {}, VerdictError.UNCLOSED_THINK),
    ("unclosed second think, no tag", "<think>Сначала.</think>\n<think>Потом", {}, VerdictError.UNCLOSED_THINK),
    # an [END] closed the feedback, the [RESULT] after it has none: the verdict was cut, not missing its tag
    ("[RESULT] after the only [END]", "[FEEDBACK] Хорошо. [END] [RESULT] 2", {}, VerdictError.MISSING_END),
    # a draft verdict inside the reasoning is no verdict: the one after the reasoning has no [RESULT]
    ("a draft verdict only inside the reasoning", "<think>Черновик: [RESULT] 0 [END]</think>[FEEDBACK] Верно.", {},
     VerdictError.NO_RESULT),
    # a reasoning the chat template opened (DeepSeek-R1: no <think> in the output) drafted a verdict; the verdict
    # after its </think> was cut: no verdict, not the draft's 0
    ("a template-opened reasoning's draft, then a verdict cut before [RESULT]", TEACHER_DRAFT_THEN_CUT, {},
     VerdictError.NO_RESULT),
    ("the same, lenient", TEACHER_DRAFT_THEN_CUT, {"lenient": True}, VerdictError.NO_RESULT),
    ("a template-opened reasoning's draft, then a verdict cut before [END]",
     "Черновик: [FEEDBACK] плохо [RESULT] 0 [END]\nНет, верно.\n</think>\n\n[FEEDBACK] Ответ верный, всё по делу [RESULT] 2",
     {}, VerdictError.MISSING_END),
    # the template-opened reasoning mentions the answer's <think> after its draft: its </think> still closes it
    ("a template-opened reasoning's draft and a quoted <think>, then a verdict cut before [RESULT]",
     "Draft: [FEEDBACK] The answer is wrong. [RESULT] 0 [END]\nBut the answer opens with a <think> tag, which is "
     "fine.\n</think>\n\n[FEEDBACK] The answer is corr", {}, VerdictError.NO_RESULT),
]


@pytest.mark.parametrize("name,text,kwargs,error", MUST_FAIL, ids=[row[0] for row in MUST_FAIL])
def test_fails_with_reason(name, text, kwargs, error):
    """Malformed outputs are failures with a code and a reason, never a score."""
    verdict = parse_verdict(text, **kwargs)
    assert not verdict.ok
    assert verdict.score is None
    assert verdict.error == error
    assert verdict.reason


def test_a_blank_output_is_said_to_be_blank_not_empty():
    """An output of newlines alone fails ``empty`` with a reason that says it is blank (its output field shows the
    newlines: "the output is empty" beside them read as a bug), in each format, and as a cut verdict's reason."""
    from judge.verdicts import parse_integer_verdict, read_served_verdict

    blank = "\n" * 40
    for verdict in (parse_verdict(blank), parse_integer_verdict(blank),
                    read_served_verdict("tagged", blank, finish_reason="length")):
        assert verdict.error in (VerdictError.EMPTY, VerdictError.CUT)
        assert "the output is blank: 40 whitespace characters" in verdict.reason, verdict.reason
    assert parse_verdict("").reason == parse_verdict(None).reason == "the output is empty"
    assert parse_verdict(" ").reason == "the output is blank: 1 whitespace character"  # its noun in its number


def test_lenient_accepts_missing_end():
    """A generation cut right after the score parses only when lenient."""
    text = "[FEEDBACK] Ответ полный. [RESULT] 2"
    assert parse_verdict(text).error == VerdictError.MISSING_END
    lenient = parse_verdict(text, scale=ZERO_TO_TWO, lenient=True)
    assert (lenient.ok, lenient.score, lenient.feedback) == (True, 2.0, "Ответ полный.")


def test_failure_keeps_feedback():
    """A failed verdict still carries the rationale, for inspection."""
    verdict = parse_verdict("[FEEDBACK] Отлично. [RESULT] пять [END]", scale=ZERO_TO_TWO)
    assert (verdict.ok, verdict.feedback, verdict.in_scale) == (False, "Отлично.", None)


IN_SCALE = [
    # (name, text, scale, expected score, expected in_scale). The paper scores out-of-range numbers (Table 11 of
    # arXiv 2505.24616v3: M-Prometheus-14B's MAE 1.68-2.69, 2.29 on average, on mostly 0-2 scales; Appendix D.2.3).
    ("above the scale: 3 on 0..2", "[FEEDBACK] Хорошо. [RESULT] 3 [END]", ZERO_TO_TWO, 3.0, False),
    ("below the scale: -1 on 0..2", "[FEEDBACK] Плохо. [RESULT] -1 [END]", ZERO_TO_TWO, -1.0, False),
    ("far above: 10 on 0..2", "[FEEDBACK] Отлично. [RESULT] 10 [END]", ZERO_TO_TWO, 10.0, False),
    ("the top level: 2 on 0..2", "[FEEDBACK] Хорошо. [RESULT] 2 [END]", ZERO_TO_TWO, 2.0, True),
    ("between levels: 1.5 on 0..2", "[FEEDBACK] Средне. [RESULT] 1.5 [END]", ZERO_TO_TWO, 1.5, True),
    ("no scale given: 7", "[FEEDBACK] Хорошо. [RESULT] 7 [END]", None, 7.0, None),
]


@pytest.mark.parametrize("name,text,scale,score,in_scale", IN_SCALE, ids=[row[0] for row in IN_SCALE])
def test_out_of_scale_number_is_the_judges_answer(name, text, scale, score, in_scale):
    """A number outside the scale is ok with its score and in_scale=False (not a parse failure); inside, True;
    without a scale, None."""
    verdict = parse_verdict(text, scale=scale)
    assert (verdict.ok, verdict.error, verdict.score, verdict.in_scale) == (True, None, score, in_scale)
    if in_scale is False:
        assert "outside the scale 0..2" in verdict.reason
    else:
        assert verdict.reason == ""


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


def test_serve_result_carries_in_scale_with_parse_ok_true():
    """judge-serve's seq2seq result for a number outside the scale: parse_ok true, the score, in_scale false."""
    from serve.score_reading import seq2seq_verdict

    result = seq2seq_verdict("[FEEDBACK] Отлично. [RESULT] 5 [END]", None, ZERO_TO_TWO, False)
    assert (result["parse_ok"], result["score"], result["in_scale"], result["error"]) == (True, 5.0, False, None)
    inside = seq2seq_verdict("[FEEDBACK] Хорошо. [RESULT] 2 [END]", None, ZERO_TO_TWO, False)
    assert (inside["parse_ok"], inside["score"], inside["in_scale"]) == (True, 2.0, True)


# Rationale parsing lives next to render_rationale_target.
RATIONALES = [
    ("[FEEDBACK] Хорошо. [END]", ("Хорошо.", True)),
    ("  **[FEEDBACK]** Хорошо [RESULT] 2 [END]", ("Хорошо", True)),
    ("<think>hm</think>[FEEDBACK] Да [END] trailing", ("Да", True)),
    ("[FEEDBACK] обрыв на середине", ("обрыв на середине", False)),
    ("без тегов", ("без тегов", False)),
    ("", ("", False)),
    ("_[feedback]:_ Ясно. **[end]**", ("Ясно.", True)),  # the tag spellings parse_verdict accepts
    ("[FEEDBACK] Мысль [FEEDBACK] вторая [END]", ("Мысль [FEEDBACK] вторая", True)),  # from the first [FEEDBACK]
    # a </think> in the rationale or after its [END] is text: only reasoning before the rationale is dropped
    ("[FEEDBACK] Ответ с блоком <think>мысль</think>, верно. [END]", ("Ответ с блоком <think>мысль</think>, верно.", True)),
    ("[FEEDBACK] Да [END]\n</think>", ("Да", True)),
    ("<think>[FEEDBACK] черновик [END]</think>[FEEDBACK] Итог [END]", ("Итог", True)),
    # a reasoning the chat template opened mentions the tags: the rationale starts after its </think>
    ("Нужно написать [FEEDBACK], потом [RESULT] и [END].\n</think>\n\n[FEEDBACK] Верно. [RESULT] 2 [END]",
     ("Верно.", True)),
    (TEACHER_DRAFT_THEN_CUT, ("The answer correctly solves the task, step by step", False)),
    # a label before the rationale: its quoted </think> is rationale, not a reasoning's close
    ("Вердикт:\n[FEEDBACK] Ответ заканчивается тегом </think>\n[RESULT] 0 [END]",
     ("Ответ заканчивается тегом </think>", True)),
]


@pytest.mark.parametrize(("text", "expected"), RATIONALES)
def test_parse_rationale(text, expected):
    """The regression judge's rationale is read between [FEEDBACK] and [END] (or [RESULT])."""
    assert judge.parse_rationale(text) == expected


#: (text, bare_tagged_answer, the score parse_verdict reads): the parser's tolerance stays (serving reads all of
#: these); only one block with whitespace around it is the answer build-data's targets (render_target) train.
BARE_TAGGED = [
    ("[FEEDBACK] Ответ верный полностью. [RESULT] 2 [END]", True, 2.0),
    ("\n  [FEEDBACK]\nОтвет верный.\n[RESULT]\n-1\n[END]\n ", True, -1.0),
    # text after [END]: the parser reads 2, the "0" after it is no part of the verdict yet a second answer
    ("[FEEDBACK] Ответ верный полностью. [RESULT] 2 [END] а вообще 0", False, 2.0),
    # text before [FEEDBACK], holding a verdict of its own
    ("Думаю: [RESULT] 0. [FEEDBACK] Ответ верный полностью. [RESULT] 2 [END]", False, 2.0),
    # two blocks: the parser reads the final one
    ("[FEEDBACK] Верно. [RESULT] 2 [END][FEEDBACK] Нет, неверно. [RESULT] 0 [END]", False, 0.0),
    # a tag inside the rationale, in any spelling the parser reads, or a reasoning tag (build-data's
    # tags_in_feedback)
    ("[FEEDBACK] Сначала [feedback] потом. [RESULT] 2 [END]", False, 2.0),
    ("[FEEDBACK] Модель написала «[ result ] 0», но это не так. [RESULT] 2 [END]", False, 2.0),
    ("[FEEDBACK] Ответ <think>верный</think> полностью. [RESULT] 2 [END]", False, 2.0),
    # a think block before the verdict: text before [FEEDBACK]
    ("<think>Подумаю.</think>[FEEDBACK] Верно. [RESULT] 2 [END]", False, 2.0),
    # tags or a score not as render_target writes them
    ("**[FEEDBACK]** Неплохо. **[RESULT]** 1 **[END]**", False, 1.0),
    ("[FEEDBACK] Неплохо. [RESULT] **1** [END]", False, 1.0),
    ("[FEEDBACK] Средне. [RESULT] 1.5 [END]", False, 1.5),
]


@pytest.mark.parametrize("text, bare, score", BARE_TAGGED, ids=[case[0][:40] for case in BARE_TAGGED])
def test_a_bare_tagged_answer_is_one_block_with_only_whitespace_around(text, bare, score):
    from judge.verdicts import bare_tagged_answer

    assert bare_tagged_answer(text) is bare
    assert parse_verdict(text, ZERO_TO_TWO).score == score  # the parser, serve's and eval's, reads them as before


#: (text, bare_tagged_answer with reasoning=True): the text as the GRPO rewards read a completion whose prompt
#: opened the reasoning (the "<think>\n" put back in front).
BARE_TAGGED_AFTER_REASONING = [
    ("<think>\nДумаю.\n</think>\n\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", True),
    # the empty block a thinking-always template renders a tagged target after
    ("<think>\n\n</think>\n\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", True),
    # a draft inside the reasoning is reasoning; the block after it is the answer
    ("<think>\nЧерновик: [FEEDBACK] плохо [RESULT] 0 [END]</think>[FEEDBACK] Ответ верный. [RESULT] 2 [END]", True),
    # text after [END], a second reasoning block, a reasoning never closed
    ("<think>\nДумаю.</think>[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END] а вообще 0", False),
    ("<think>\nДумаю.</think><think>Ещё.</think>[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", False),
    ("<think>\nДумаю.<think>Ещё.</think>[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", False),
    ("<think>\n[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", False),
    # text before the reasoning
    ("Итак.<think>\nДумаю.</think>[FEEDBACK] Ответ полностью верный. [RESULT] 2 [END]", False),
]


@pytest.mark.parametrize("text, bare", BARE_TAGGED_AFTER_REASONING,
                         ids=[str(i) for i in range(len(BARE_TAGGED_AFTER_REASONING))])
def test_a_bare_tagged_answer_after_the_reasoning_its_prompt_opened(text, bare):
    """With reasoning=True the answer is the block after the reasoning's first </think>; without, a leading
    reasoning block is text before [FEEDBACK]."""
    from judge.verdicts import bare_tagged_answer

    assert bare_tagged_answer(text, reasoning=True) is bare
    assert bare_tagged_answer(text) is False


def test_no_answer_is_a_bare_tagged_one():
    from judge.verdicts import bare_tagged_answer

    assert [bare_tagged_answer(text) for text in (None, "", "  ", "[FEEDBACK] Верно. [RESULT] 2")] == [False] * 4


#: A reasoning the chat template opened (no <think> in the text) drafted a verdict, and the length limit stopped it
#: before its </think>: read whole, the text is the draft's verdict (0).
CUT_INSIDE_A_TEMPLATE_OPENED_REASONING = ("Okay, let me check the answer. Let me draft: [FEEDBACK] The answer is wrong. "
                                          "[RESULT] 0 [END]\nWait, actually step 3 is right, so")


@pytest.mark.parametrize(("text", "finish_reason", "score", "error"), [
    (CUT_INSIDE_A_TEMPLATE_OPENED_REASONING, "length", None, VerdictError.CUT),
    (CUT_INSIDE_A_TEMPLATE_OPENED_REASONING, "stop", 0.0, None),   # the judge ended there itself: read as written
    ("Вердикт: [FEEDBACK] Верно. [RESULT] 2 [END]\n", "length", 2.0, None),  # nothing but whitespace after [END]
    ("Вердикт: [FEEDBACK] Верно. [RESULT] 2 [END] А ещё", "length", None, VerdictError.CUT),
    # a text that opens with the verdict's tag is the verdict, not a reasoning: its block stands
    ("[FEEDBACK] Верно. [RESULT] 2 [END] А ещё", "length", 2.0, None),
    # so is a block after the reasoning a <think> closed (judge-serve reads "<think>\n" + output, with no [END] stop
    # where the prompt opened the reasoning): text after it until max_tokens leaves it standing
    ("<think>\nДумаю.\n</think>\n\n[FEEDBACK] Верно. [RESULT] 2 [END]\n\nДополнительно", "length", 2.0, None),
])  # fmt: skip
def test_a_tagged_output_the_length_limit_stopped_after_its_last_end_is_cut(text, finish_reason, score, error):
    """judge-eval's chat route (read_served_verdict) fails such an output as cut, with or without a scale; judge-serve,
    reading after the <think> its prompt opened, fails the first text as unclosed_think: neither scores the draft."""
    from judge.verdicts import read_served_verdict, read_tagged_verdict
    from serve.score_reading import seq2seq_verdict

    for scale in (ZERO_TO_TWO, None):
        verdict = read_served_verdict("tagged", text, scale=scale, finish_reason=finish_reason)
        assert (verdict.score, verdict.error) == (score, error)
        assert read_tagged_verdict(text, scale, lenient=True, finish_reason=finish_reason).error == error
    if text is CUT_INSIDE_A_TEMPLATE_OPENED_REASONING:
        served = seq2seq_verdict(text, None, ZERO_TO_TWO, False, "tagged", reasoning_opened=True,
                                 finish_reason=finish_reason)
        assert (served["score"], served["error"]) == (None, VerdictError.UNCLOSED_THINK)


def test_a_draft_cut_while_writing_another_tag_is_cut_under_lenient_too():
    """Lenient reading takes "[RESULT] 1 [EN" as a cut [END]; in a reasoning the template opened, a drafted block
    before it is still no verdict: the length rule reads the text before the partial tag, so the chat route fails it
    as cut, as strict reading does, and judge-serve (reading after its prompt's <think>) as unclosed_think."""
    from judge.verdicts import read_served_verdict
    from serve.score_reading import seq2seq_verdict

    text = ("Okay, let me check. Draft: [FEEDBACK] The answer is wrong. [RESULT] 0 [END]\nHmm, redo: [FEEDBACK] "
            "Partly right. [RESULT] 1 [EN")
    for lenient in (False, True):
        assert read_served_verdict("tagged", text, scale=ZERO_TO_TWO, lenient=lenient, finish_reason="length").error \
            == VerdictError.CUT
    served = seq2seq_verdict(text, None, ZERO_TO_TWO, True, "tagged", reasoning_opened=True, finish_reason="length")
    assert served["error"] == VerdictError.UNCLOSED_THINK
    # an ordinary verdict cut inside its [END] is still read under lenient
    plain = read_served_verdict("tagged", "[FEEDBACK] Верно. [RESULT] 1 [EN", scale=ZERO_TO_TWO, lenient=True,
                                finish_reason="length")
    assert (plain.ok, plain.score) == (True, 1.0)


def _stopped_at_first_end(text: str) -> str:
    """What judge-serve's ``/v1/judge`` gets back from a tagged judge: vLLM's ``stop: ["[END]"]`` with
    ``include_stop_str_in_output`` ends the output at its first ``[END]``, that tag kept."""
    at = text.find("[END]")
    return text if at < 0 else text[: at + len("[END]")]


@pytest.mark.parametrize(("full", "served", "pollux"), [
    ("[FEEDBACK] Хорошо. [RESULT] 2 [END]", 2.0, 2.0),
    # a judge that corrects itself: the stop keeps POLLUX's first block; the chat route (no stop) reads the last
    ("[FEEDBACK] Сначала 1. [RESULT] 1 [END] Нет, лучше так. [RESULT] 2 [END]", 1.0, 1.0),
    # an [END] closing the feedback before the [RESULT]: the stop leaves no verdict, POLLUX reads past it
    ("[FEEDBACK] Ответ верный. [END] [RESULT] 2 [END]", None, 2.0),
])  # fmt: skip
def test_the_end_stop_of_judge_serve_keeps_polluxs_first_block_where_the_first_end_closes_the_result(
        full, served, pollux):
    """docs/released-pollux.md ("Sampling") and docs/fidelity.md name it: POLLUX generates a tagged judge to the end
    of its turn and reads the first complete ``[RESULT] n [END]`` (src/utils/score_utils.py); judge-serve stops at the
    first ``[END]``. The verdict is POLLUX's where that ``[END]`` closes the result, and ``no_result`` where it closes
    the feedback before it."""
    stopped = parse_verdict(_stopped_at_first_end(full), scale=ZERO_TO_TWO)
    assert stopped.score == served
    assert stopped.ok == (served is not None)
    if served is None:
        assert stopped.error == VerdictError.NO_RESULT
    assert judge.verdicts.parse_pollux_result(full).score == pollux


def test_a_negative_zero_score_reads_as_zero_in_every_reader():
    """"-0" is the score 0 in both formats and in POLLUX's reading: never -0.0, which JSON writes as "-0.0" in a
    prediction and a response where the integer reader wrote 0.0 for the same answer."""
    import json

    for verdict in (parse_verdict("[FEEDBACK] Плохо. [RESULT] -0 [END]", scale=ZERO_TO_TWO),
                    judge.parse_integer_verdict("<think>Плохо.</think>-0", scale=ZERO_TO_TWO),
                    judge.verdicts.parse_pollux_result("[RESULT] -0 [END]", scale=ZERO_TO_TWO)):
        assert verdict.ok and verdict.in_scale
        assert json.dumps(verdict.score) == "0.0"
