"""ruTiE (MERA): Turing-test interview dialogues answered with the model's own earlier answers in context.

Sources: the ruTiE task card (MERA's public task page; cited by section, as ``card "Metrics"``) and MERA's harness,
``MERA-Evaluation/MERA`` ``benchmark_tasks/rutie/rutie.yaml``, ``benchmark_tasks/rutie/utils.py`` and
``benchmark_tasks/custom_context_formers.py`` (``ruTiEContextFormer``), cited as ``harness``, with the lm-eval it
runs, its submodule ``artemorloff/lm-evaluation-harness`` at commit 6c59a42 (``lm_eval/...`` paths are there).

MERA runs ruTiE in two ways, and ``RutieSettings.scoring`` names the one a run follows. Both are completion-mode runs
(the scripts apply no chat template) with the harness's prompt, which ends in no answer cue (``answer_cue=""``):

* ``rutie_gen``, the generative submission (``scripts/run_benchmark_gen.sh``; ``rutie/rutie_gen.yaml`` including
  ``digit_choice_gen_task.yaml`` and ``custom_generate_task.yaml``): greedy generation (``do_sample: false``) cut at
  the first newline (``until: ["\\n"]``), 256 new tokens at most (no ``max_gen_toks`` is set: lm-eval's default),
  the regex parser below. ``scoring="generate"``, the default, with ``answer_cue=""``; every other default
  matches it (``stop``, ``max_tokens``, ``temperature``, ``answer_parser``).
* ``rutie``, the regular submission (``scripts/run_benchmark.sh``; ``rutie/rutie.yaml`` including
  ``custom_loglikelihood_task.yaml``): the log-likelihoods of " 1" and " 2" after the prompt, the larger one the
  answer (``utils.py`` ``np.argmax``: "1" on a tie, counted as ``n_ties``). ``scoring="logprobs"`` with
  ``answer_cue=""``; the continuation's tokens are found as lm-eval finds them (``eval.mera.client``
  ``continuation_logprobs``).

The default departs from both in one named setting: the prompt ends in the card's cue ``Ответ:`` (``answer_cue``).
``metrics.json`` says which run a folder's settings are and how they differ (``describe_protocol``).

Data rows ``{instruction (contains {context}), inputs: {question, choice1, choice2}, outputs: "1" | "2",
meta: {dialog_id, question_id, category, use_context, turing_imitation}}`` (card "Data Fields") are grouped by
``dialog_id`` and asked strictly in ``question_id`` order (card "Data Instances").

Prompts (completion mode), as the harness's context former builds them: the instruction is split at
``{context}``; with no earlier questions the placeholder is dropped, the whole is stripped and follows a blank
line (the harness's former joins no earlier questions with ``fewshot_delimiter`` and appends one more, ``"\\n\\n"``,
``custom_context_formers.py`` ``get_context``, and ``lm_eval/api/task.py`` ``fewshot_context`` puts that before
the question: ``labeled_examples + example``, as MERA's scripts pass ``--num_fewshot=1``); otherwise the earlier
questions, each ``{question}\\n1. {choice1}\\n2. {choice2}\\nОтвет: {answer}`` (the harness's
``doc_to_text_without_instruction``), follow the first part, joined by blank lines, and a blank line separates the
last of them from the current question (card "Data Instances"; the harness's ``fewshot_delimiter`` ``"\\n\\n"``); the
second part, with only ``{question}``, ``{choice1}``, ``{choice2}`` filled (other braces stay literal, as in the
harness's ``doc_to_text``), is stripped. The prompt then ends in the answer cue ``Ответ:`` once, as in the card's
turn prompts (card "Data Instances") and its prompt example (card "Prompts"): the cue is appended on a new line only when
the instruction does not already end in it (``RutieSettings.answer_cue``; ``""`` builds the harness's prompt,
which appends nothing). The log-probability variant continues the prompt with " 1" / " 2" (the harness's
``target_delimiter`` " ").

The answer shown is **the model's own earlier answer**, never the gold one (card "Data Instances"): the parsed digit
(the digit, as in card "Data Instances" and the harness, not the choice text the card's prose mentions); when it gave
none, see the parsers below.

Chat mode has the harness's two forms, one named option ``RutieSettings.chat_form`` (MERA's card is silent on chat):
``"multiturn"`` (default), lm-eval's ``--fewshot_as_multiturn`` (``ruTiEContextFormer.get_chat_context``): the
first user turn is the instruction's first part plus the first earlier question ending in ``Ответ:``, each earlier
answer an assistant turn, each further earlier question a user turn, and the last user turn the instruction's second
part filled and stripped; with no earlier questions it is one user turn, the instruction with an empty context (the
harness leaves ``{context}`` in that first question's text, unfilled: a slip not reproduced). ``"single"``: one user
turn holding the harness's completion prompt (no answer cue), as lm-eval builds it under ``--apply_chat_template``
without ``--fewshot_as_multiturn`` (``lm_eval/api/task.py`` ``fewshot_context``: the context former's string, then
``append_target_question`` adds the question to that user message), the form of MERA's documented chat commands
(``MODEL_SCORING.md``, OpenAI chat models).

Answers (the card is silent on parsing), one named option ``RutieSettings.answer_parser``:

* ``"mera"`` (default), the harness (``utils.py``: ``RegexFilter(r"(\\b([0-9])\\b)")`` on the stripped reply,
  fallback ``"-1"``): the first standalone digit 0-9 is the answer, so "3" is a parsed, wrong answer; a reply
  with no digit is unparsed, and later context shows the harness's fallback ``-1`` for it. How it reads a reply's
  ``<think>...</think>`` reasoning is one named option, ``RutieSettings.think_blocks``: ``"read"``, the harness's
  regex on the whole reply (``utils.py`` applies it to the stripped reply as it came), completion mode's default;
  ``"skip"`` (deviation), chat mode's default, the reply after any ``<think>`` block, one whose reasoning never
  closed unparsed, "reasoning not finished" (``parse_reply``): MERA's ``scripts/run_benchmark_gen.sh`` asks in
  completion mode (``--model hf``, no chat template), where a reply opens with its answer, while a chat model served
  without a reasoning parser opens with its reasoning.
* ``"choice"`` (deviation): the first standalone 1 or 2 (not part of a number or a word, after any ``<think>``
  block; a reply whose reasoning never closed is unparsed, "reasoning not finished"; a hedge naming both, "1 или
  2", is no answer, "both choices named"); anything else is unparsed, and later context shows what the model said
  instead (whitespace collapsed, cut to ``MAX_CONTEXT_ANSWER_CHARS``). "3, нет, 1" is wrong under ``mera`` and 1
  here.

Either way an unparsed answer is counted (``n_unparsed``, ``unparsed_reasons``) and is wrong in the headline.
So is a question the endpoint refused ("request refused": HTTP 400, 413, 422), whose prompt did not fit its
context window ("context limit"), that it answered with no choice at all ("no reply returned"; under
log-probability scoring "no log-probabilities for 1/2"), or, in chat mode, with a reply that holds no answer text
(``eval.mera.client.Generation.failure``): reasoning parts alone cut by ``max_tokens`` ("reasoning not finished",
under either parser), other content no reader takes as text ("reply not text", what it was in the record's
``error``); the dialogue goes on with that empty answer. Only the first two are the endpoint's refusals, which stop a
run whose first questions are all refused alike (``run_dialogues``); a reply is the model's.

A prompt over the context window, one named option ``RutieSettings.context_overflow``: ``"truncate"`` (default)
leaves out the oldest whole earlier turns until the endpoint takes it, counted (``context_turns_dropped`` on the
record, ``n_context_truncated`` in the metrics); the harness truncates tokens from the left instead (``ask``
cites it); a question that does not fit even alone is unparsed ("context limit"). ``"fail"``: the question is
unparsed ("context limit"). A run whose first questions are all refused alike stops instead (``run_dialogues``).

Metrics (``rutie_metrics``): the headline ``accuracy`` is correct answers over **all** questions, an unparsed
answer counting as wrong (card "Metrics": "Accuracy ..., the average for the dialogue"; the harness scores its
fallback ``-1`` as wrong). ``accuracy_parsed`` (over parsed answers) and ``n_unparsed`` stand beside it.

Why one module of ~1090 lines: it follows the task from its rows to its metric in the harness's order (rows,
context, prompt, reply, the answer fed back into the next question's context, accuracy), and each step is used by
this task alone.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.mera.client import REASONING_NOT_FINISHED  # the client's word for a reply cut in its reasoning, shared
from eval.mera.config import think_blocks_refusal
from eval.mera.extraction import after_reasoning
from eval.mera.task_rows import DataError, iter_task_rows, line_place
from judge.plumbing.journal import JournalWriter, open_journal
from judge.records import kind_words, value_words

CHOICES = ("1", "2")
ANSWER_PARSERS = ("mera", "choice")
#: What the harness puts in later context for a reply with no digit (utils.py ``FALLBACK``).
MERA_FALLBACK = "-1"
#: The answer cue the card's turn prompts end in (card "Data Instances" and "Prompts").
ANSWER_CUE = "Ответ:"
#: The harness's separator between dialogue turns (``fewshot_delimiter``; the blank line of card "Data Instances").
TURN_SEPARATOR = "\n\n"
CONTEXT_PLACEHOLDER = "{context}"
MAX_CONTEXT_ANSWER_CHARS = 200
PROGRESS_FILE = "answers.jsonl"

# Unparsed reasons.
(NO_DIGIT, NO_ANY_DIGIT, EMPTY, CONTEXT_LIMIT, NO_LOGPROBS, REQUEST_REFUSED, NO_REPLY, UNFINISHED_THINK, HEDGED,
 NOT_TEXT) = (
    "no standalone 1 or 2", "no standalone digit", "empty answer", "context limit", "no log-probabilities for 1/2",
    "request refused", "no reply returned", REASONING_NOT_FINISHED, "both choices named", "reply not text",
)  # fmt: skip
#: What a prompt over the context window does (``RutieSettings.context_overflow``).
CONTEXT_OVERFLOWS = ("truncate", "fail")
#: Chat mode's message forms (``RutieSettings.chat_form``, ``chat_messages``).
CHAT_FORMS = ("multiturn", "single")


@dataclasses.dataclass(frozen=True)
class RutieItem:
    """One question of a dialogue."""

    dialog_id: int | str
    question_id: int
    instruction: str
    question: str
    choice1: str
    choice2: str
    gold: str
    category: tuple[str, ...] = ()
    use_context: bool = False
    turing_imitation: tuple[str, ...] = ()

    @property
    def inputs(self) -> dict[str, str]:
        return {"question": self.question, "choice1": self.choice1, "choice2": self.choice2}


@dataclasses.dataclass(frozen=True)
class Answer:
    """A parsed reply: ``value`` is a digit (``"1"``/``"2"`` only under the ``choice`` parser) or ``None`` with a
    ``reason``; only ``"1"`` or ``"2"`` can be correct."""

    value: str | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.value is not None


# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------


def _as_list(value: Any, where: str, dotted: str) -> tuple[str, ...]:
    """A label field (``meta.category``, ``meta.turing_imitation``): a list, or one string; absent is none.

    Raises:
        DataError: any other value, naming the row and the field (an int would otherwise fail to iterate, and a dict
            would be read as its keys).
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise DataError(f"{where}: field {dotted!r} should be {kind_words((list, str))}, got {value_words(value)}")
    return tuple(str(v) for v in value)


def parse_rutie_row(row: Mapping[str, Any], line_no: int = 0) -> RutieItem:
    """One ruTiE row; a bad field raises ``DataError`` naming the row and the field."""
    where = line_place(line_no)

    def need(container: Any, key: str, dotted: str, kind: type | tuple[type, ...]) -> Any:
        if not isinstance(container, Mapping) or key not in container:
            raise DataError(f"{where}: field {dotted!r} is missing")
        value = container[key]
        # a JSON true is an int to isinstance: read as a choice it became the answer text "True"
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise DataError(f"{where}: field {dotted!r} should be {kind_words(kind)}, got {value_words(value)}")
        return value

    def choice(key: str) -> str:
        """An answer's text: MERA writes a string; a number reads as its digits, but a NaN (a missing cell, as pandas
        writes one) or an infinity is no answer: the model would be shown the choice "nan" or "inf"."""
        value = need(inputs, key, f"inputs.{key}", (str, int, float))
        if isinstance(value, float) and not math.isfinite(value):
            raise DataError(f"{where}: field 'inputs.{key}' should be a string or a finite number, got {value}")
        return str(value)

    instruction = need(row, "instruction", "instruction", str)
    if CONTEXT_PLACEHOLDER not in instruction:
        raise DataError(f"{where}: field 'instruction' has no {{context}} placeholder")
    if instruction.count(CONTEXT_PLACEHOLDER) > 1:  # the harness splits the instruction in two at it
        raise DataError(f"{where}: field 'instruction' has {{context}} more than once")
    inputs = need(row, "inputs", "inputs", Mapping)
    meta = need(row, "meta", "meta", Mapping)
    gold = str(need(row, "outputs", "outputs", (str, int))).strip()
    if gold == "":  # MERA's scoring blanks the closed test's answers (modules/scoring/src/tasks/rutie.py)
        raise DataError(f"{where}: field 'outputs' is empty: no gold answer, as in MERA's closed test, which only "
                        "MERA's site scores; use the file whose rows carry answers (--data MERA-evaluation/MERA "
                        "picks it)")  # fmt: skip
    if gold not in CHOICES:
        raise DataError(f"{where}: field 'outputs' should be '1' or '2', got {gold!r}")
    question_id = need(meta, "question_id", "meta.question_id", (int, str))
    try:
        question_id = int(question_id)
    except ValueError:
        raise DataError(f"{where}: field 'meta.question_id' is not an integer: {question_id!r}") from None
    dialog_id = need(meta, "dialog_id", "meta.dialog_id", (int, str))
    use_context = meta.get("use_context", False)
    if isinstance(use_context, str) and use_context.strip().lower() in ("true", "false"):
        use_context = use_context.strip().lower() == "true"
    if not isinstance(use_context, bool):  # MERA writes a JSON bool; a 5 or "yes" was read as true without a word
        # a text or a number says itself ("yes", 5); null, an object or a list in words, not as Python's None or {...}
        got = repr(use_context) if isinstance(use_context, (str, int, float)) else value_words(use_context)
        raise DataError(f"{where}: field 'meta.use_context' should be true or false, got {got}")
    item = RutieItem(
        dialog_id=dialog_id,
        question_id=question_id,
        instruction=instruction,
        question=need(inputs, "question", "inputs.question", str),
        choice1=choice("choice1"),
        choice2=choice("choice2"),
        gold=gold,
        category=_as_list(meta.get("category"), where, "meta.category"),
        use_context=use_context,
        turing_imitation=_as_list(meta.get("turing_imitation"), where, "meta.turing_imitation"),
    )
    return item


def _as_int(value: int | str) -> int | str:
    try:
        return int(value)
    except ValueError:
        return value


def load_dialogues(path: str | Path) -> dict[int | str, list[RutieItem]]:
    """Rows grouped by ``dialog_id``, each dialogue sorted by ``question_id``, whose ids must run 0, 1, 2, ...

    The task card asks each dialogue's questions strictly in ``question_id`` order, and the harness builds question
    q's context from the dialogue's first q rows (``custom_context_formers.py`` ``ruTiEContextFormer``): a dialogue
    that lost a row (filtered, cut with ``head``) would ask the next question without that turn, or as its opening.

    Raises:
        DataError: ``{path}: no rows``; ``{path}: line {n}: ...``, a bad row (a closed test's row, with no answer,
            among them), one dialogue's ``dialog_id`` written two ways (0 and "0"), a repeated ``question_id``, or
            ``question_id``s that do not run from 0 without a gap (naming the dialogue, the missing ids and the
            line of the row after the first gap).
    """
    by_dialog: dict[int | str, list[RutieItem]] = defaultdict(list)
    lines: dict[tuple[int | str, int], int] = {}  # (dialog_id, question_id) -> its first row's line
    spelled: dict[Any, tuple[int | str, int]] = {}  # int(dialog_id) -> (dialog_id as first written, its row)
    for line_no, row in iter_task_rows(path):
        try:
            item = parse_rutie_row(row, line_no)
        except DataError as err:  # the row says which row and field; the file is named here (a closed test's too)
            raise DataError(f"{path}: {err}") from None
        # The harness reads int(dialog_id) (utils.py process_docs): 0 and "0" are one dialogue there, and two here
        # would ask the second one's questions without their earlier turns.
        first, first_row = spelled.setdefault(_as_int(item.dialog_id), (item.dialog_id, line_no))
        if first != item.dialog_id:
            raise DataError(f"{path}: {line_place(line_no)}: field 'meta.dialog_id' is {item.dialog_id!r}, "
                            f"{line_place(first_row)}'s "
                            f"is {first!r}: one dialogue written two ways; write it one way throughout")
        by_dialog[item.dialog_id].append(item)
        lines.setdefault((item.dialog_id, item.question_id), line_no)
    if not by_dialog:  # nothing to score: a run on it would exit 0 with no figure
        raise DataError(f"{path}: no rows (an empty file, or blank lines only)")
    dialogues: dict[int | str, list[RutieItem]] = {}
    for dialog_id in sorted(by_dialog, key=lambda d: (isinstance(d, str), d)):
        items = sorted(by_dialog[dialog_id], key=lambda it: it.question_id)
        ids = [it.question_id for it in items]
        if len(set(ids)) != len(ids):
            dup = sorted(i for i, c in Counter(ids).items() if c > 1)
            raise DataError(f"{path}: dialogue {dialog_id!r} repeats question_id {dup}")
        if ids != list(range(len(ids))):
            raise DataError(_gap_message(path, dialog_id, ids, lines))
        dialogues[dialog_id] = items
    return dialogues


def _gap_message(
    path: str | Path, dialog_id: int | str, ids: list[int], lines: dict[tuple[int | str, int], int]
) -> str:
    """The error for a dialogue whose sorted, distinct ``ids`` are not 0, 1, 2, ...: the ids missing below its
    largest (at most ten named), and the row where the order first breaks."""
    at = next(k for k, question_id in enumerate(ids) if question_id != k)
    where = line_place(lines[(dialog_id, ids[at])])
    if ids[at] < 0:
        return (f"{path}: dialogue {dialog_id!r}: field 'meta.question_id' is {ids[at]} ({where}): a dialogue's "
                f"question_ids run 0, 1, 2, ...")
    missing = sorted(set(range(ids[-1])) - set(ids))
    named = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    return (f"{path}: dialogue {dialog_id!r}: field 'meta.question_id' skips {named} ({where} has "
            f"{ids[at]}): a dialogue's questions are asked in question_id order from 0, each with the earlier ones "
            f"as its context")


# ---------------------------------------------------------------------------------------------------------------
# Prompts (pure)
# ---------------------------------------------------------------------------------------------------------------


def question_block(item: RutieItem) -> str:
    return f"{item.question}\n1. {item.choice1}\n2. {item.choice2}"


def _turn(item: RutieItem, answer: str | None) -> str:
    """One earlier turn: the harness's ``doc_to_text_without_instruction`` (``without_target`` when answer is None)."""
    cue = ANSWER_CUE if answer is None else f"{ANSWER_CUE} {answer}"
    return f"{question_block(item)}\n{cue}".lstrip()


def render_context(history: Sequence[tuple[RutieItem, str]]) -> str:
    """Earlier questions with the model's own answers, joined by blank lines."""
    return TURN_SEPARATOR.join(_turn(item, answer) for item, answer in history)


def _fill(template: str, item: RutieItem) -> str:
    # The harness escapes every brace but {question}, {choice1}, {choice2} before formatting (rutie.yaml
    # doc_to_text), so only these three are placeholders; sequential replace would re-substitute a question
    # that itself contains "{choice1}", one pass over the template does not.
    return re.sub(r"\{(question|choice1|choice2)\}", lambda m: item.inputs[m.group(1)], template)


def _split_instruction(item: RutieItem) -> tuple[str, str]:
    head, tail = item.instruction.split(CONTEXT_PLACEHOLDER)
    return head, tail


def render_prompt(item: RutieItem, context: str) -> str:
    """The row's instruction around ``context`` (already rendered turns), as the harness's context former joins them.

    Empty context: ``{context}`` is dropped and the whole is stripped. Otherwise: first part + context + blank line
    + the second part, filled and stripped.
    """
    head, tail = _split_instruction(item)
    if not context:
        return _fill(head + tail, item).strip()
    return head + context + TURN_SEPARATOR + _fill(tail, item).strip()


def with_answer_cue(prompt: str, cue: str = ANSWER_CUE) -> str:
    """``prompt`` ending in ``cue`` exactly once: appended on a new line unless the prompt already ends in it."""
    if not cue or prompt.rstrip().endswith(cue):
        return prompt
    return f"{prompt}\n{cue}"


def completion_prompt(item: RutieItem, history: Sequence[tuple[RutieItem, str]], answer_cue: str = ANSWER_CUE) -> str:
    """Completion-mode prompt for ``item`` after ``history`` (earlier items with the model's answers).

    With no earlier questions the prompt opens with a blank line, as the harness's: its context former returns
    ``fewshot_delimiter.join([]) + fewshot_delimiter`` = ``"\\n\\n"`` (``custom_context_formers.py``
    ``get_context``) and lm-eval prepends it to the question (``lm_eval/api/task.py`` ``fewshot_context``:
    ``labeled_examples + example``; MERA's scripts run ruTiE with ``--num_fewshot=1``).
    """
    prompt = render_prompt(item, render_context(history))
    return with_answer_cue(prompt if history else TURN_SEPARATOR + prompt, answer_cue)


def chat_messages(item: RutieItem, history: Sequence[tuple[RutieItem, str]],
                  form: str = "multiturn") -> list[dict[str, str]]:
    """Chat-mode messages in one of the harness's two forms (``CHAT_FORMS``, the module docstring).

    ``"multiturn"`` (``ruTiEContextFormer.get_chat_context`` under ``fewshot_as_multiturn``): earlier questions are
    user turns ending in ``Ответ:`` (the first one after the instruction's first part), the model's answers assistant
    turns; the last user turn is the instruction's second part, filled and stripped. ``"single"``: one user turn, the
    harness's completion prompt with no cue (``completion_prompt(item, history, "")``).
    """
    if form == "single":
        return [{"role": "user", "content": completion_prompt(item, history, "")}]
    if form != "multiturn":
        raise ValueError(f"chat_form must be one of {CHAT_FORMS}, not {form!r}")
    if not history:
        return [{"role": "user", "content": render_prompt(item, "")}]
    head, tail = _split_instruction(item)
    messages: list[dict[str, str]] = []
    for i, (earlier, answer) in enumerate(history):
        messages.append({"role": "user", "content": (head if i == 0 else "") + _turn(earlier, None)})
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": _fill(tail, item).strip()})
    return messages


# ---------------------------------------------------------------------------------------------------------------
# Answers (pure)
# ---------------------------------------------------------------------------------------------------------------

# A 1 or 2 that is not part of a word or number: "1", "1.", "(2)", "ответ 2"; not "12", "1.5", "x1", "2-й".
_STANDALONE = re.compile(r"(?<![\w.,\-])([12])(?![\w\-])(?![.,]\d)")
# Both choices named as alternatives ("1 или 2", "2 or 1", "1/2"): a hedge, no answer; read as its first digit, a
# model answering so to every question would score as often as the gold answer is "1".
_HEDGE = re.compile(r"(?<![\w.,\-])([12])[ \t]*(?:или|либо|or|/)[ \t]*(?!\1)[12](?![\w\-])(?![.,]\d)", re.I)


def parse_answer(text: str) -> Answer:
    """The first standalone digit 1 or 2 in a reply (after any ``<think>`` block), not one of a hedge naming both
    ("1 или 2": left out, unparsed ``HEDGED`` when nothing else answers), else a failure with a reason.

    Reasoning is never read as the answer: a closing ``</think>`` whose opening was in the prompt (chat templates
    that open the block themselves) ends the reasoning, and a ``<think>`` never closed (cut by ``max_tokens``) is a
    reply that gave no answer yet (``UNFINISHED_THINK``), not one whose first digit in the reasoning is it.
    """
    if text is None or not text.strip():
        return Answer(None, EMPTY)
    visible = after_reasoning(text, gap=" ")
    if visible is None:
        return Answer(None, UNFINISHED_THINK)
    unhedged = _HEDGE.sub(" ", visible)
    match = _STANDALONE.search(unhedged)
    if match is None:
        return Answer(None, HEDGED if unhedged != visible else NO_DIGIT)
    return Answer(match.group(1))


_MERA_DIGIT = re.compile(r"\b([0-9])\b")


def parse_answer_mera(text: str) -> Answer:
    """MERA's harness: the first standalone digit 0-9 of the stripped reply (``\\b([0-9])\\b``), else a failure."""
    if text is None or not text.strip():
        return Answer(None, EMPTY)
    match = _MERA_DIGIT.search(text.strip())
    return Answer(match.group(1)) if match else Answer(None, NO_ANY_DIGIT)


def parse_reply(text: str, parser: str = "mera", *, chat: bool = False, think_blocks: str | None = None) -> Answer:
    """The answer in a reply under the named parser (``"mera"`` or ``"choice"``).

    ``think_blocks`` (``RutieSettings.think_blocks``; ``None``: ``"skip"`` when ``chat``, else ``"read"``): under
    ``"mera"``, ``"skip"`` reads the reply after any ``<think>`` block (``after_reasoning``), an unclosed one unparsed
    (``UNFINISHED_THINK``), as ``"choice"`` always does; ``"read"`` is the harness's regex on the whole reply.
    MERA runs that regex on completions only, where a reply opens with the answer; a chat model served without a
    reasoning parser opens with its reasoning, whose first digit the regex takes ("<think>Считаю: 1 вариант
    неверен</think>2" answers "1" read, "2" skipped).

    Raises:
        ValueError: an unknown parser or ``think_blocks``, or ``"read"`` with ``"choice"`` (``think_blocks_refusal``).
    """
    if think_blocks is not None:
        refusal = think_blocks_refusal("generate", parser if parser in ANSWER_PARSERS else "mera", think_blocks)
        if refusal is not None:
            raise ValueError(refusal)
    if parser == "mera":
        reading = think_blocks or ("skip" if chat else "read")
        if reading == "skip" and text is not None:
            visible = after_reasoning(text, gap=" ")
            if visible is None:
                return Answer(None, UNFINISHED_THINK)
            text = visible
        return parse_answer_mera(text)
    if parser == "choice":
        return parse_answer(text)
    raise ValueError(f"answer_parser must be one of {ANSWER_PARSERS}, not {parser!r}")


def answer_from_logprobs(scores: Mapping[str, float | None], *, absent_is_less_likely: bool = True) -> Answer:
    """The choice with the larger log-probability; neither scored is a failure.

    ``absent_is_less_likely``: a choice without a score is less likely than the other (chat: the first token's top
    list holds the likely tokens, and one absent from it is less likely than any listed). False for the completion
    path, where each continuation is scored on its own and a missing score is the endpoint returning none, not a low
    one: a failure then, never the other choice.
    """
    s1, s2 = scores.get("1"), scores.get("2")
    if s1 is None and s2 is None:
        return Answer(None, NO_LOGPROBS)
    if not absent_is_less_likely and (s1 is None or s2 is None):
        return Answer(None, NO_LOGPROBS)
    if s1 is None:
        return Answer("2")
    if s2 is None:
        return Answer("1")
    return Answer("1" if s1 >= s2 else "2")


def context_answer(reply: str, answer: Answer, parser: str = "choice") -> str:
    """What the later context shows as the model's answer: the digit; when unparsed, the harness's ``-1`` under
    the ``mera`` parser, the model's own words (shortened) under ``choice``."""
    if answer.ok:
        return answer.value or ""
    if parser == "mera":
        return MERA_FALLBACK
    collapsed = " ".join((reply or "").split())
    return collapsed[:MAX_CONTEXT_ANSWER_CHARS]


# ---------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RutieSettings:
    """How questions are put to the model.

    Attributes:
        mode: ``"completion"`` or ``"chat"``.
        scoring: ``"generate"`` (parse the reply) or ``"logprobs"`` (compare " 1" with " 2").
        max_tokens: Tokens to generate per answer (generate scoring); 256, lm-eval's default, as ``rutie_gen``
            sets none.
        stop: Stop strings of a generated answer (generate scoring), applied on the client and sent to the server:
            ``rutie_gen``'s ``until: ["\\n"]`` (harness ``benchmark_tasks/custom_generate_task.yaml``); ``()`` for none.
        temperature: Sampling temperature (0: greedy, ``do_sample: false``).
        seed: Sent with every request.
        max_model_len: The model's context window, to count prompts that hit it (``None``: only errors count).
        answer_cue: Completion mode: what the prompt ends in, appended on a new line unless the instruction
            already ends in it (card "Data Instances" and "Prompts"); ``""`` builds the harness's prompt, which
            appends nothing.
        answer_parser: ``"mera"`` (the harness's first standalone digit, ``-1`` in later context when there is
            none) or ``"choice"`` (first standalone 1 or 2, the model's own words in context when there is none).
        think_blocks: Generate scoring: how a reply's ``<think>...</think>`` reasoning is read (``parse_reply``):
            ``"skip"`` (after it; an unclosed block unparsed) or ``"read"`` (the harness's regex on the whole reply,
            ``"mera"`` parser only). ``None``, the default: ``"skip"`` in chat mode or under ``"choice"``, else
            ``"read"`` (``think_reading``). Set under log-probability scoring, it is refused (``ask``).
        context_overflow: What a prompt the endpoint refuses as over its context window does. ``"truncate"``
            (default, as the harness, which left-truncates every prompt to fit: see ``ask``): the oldest whole
            earlier turns are left out until it fits; ``"fail"``: the question is unparsed ("context limit").
        chat_form: Chat mode: ``"multiturn"`` (the harness's ``--fewshot_as_multiturn``) or ``"single"`` (one user
            turn, MERA's documented chat commands); ``chat_messages``.
    """

    mode: str = "completion"
    scoring: str = "generate"
    max_tokens: int = 256
    stop: tuple[str, ...] = ("\n",)
    temperature: float = 0.0
    seed: int | None = 0
    max_model_len: int | None = None
    answer_cue: str = ANSWER_CUE
    answer_parser: str = "mera"
    context_overflow: str = "truncate"
    think_blocks: str | None = None
    chat_form: str = "multiturn"


def think_reading(settings: RutieSettings) -> str | None:
    """How the run reads a reply's ``<think>`` reasoning: ``settings.think_blocks``, else the mode's default (``"skip"``
    in chat mode or under the ``choice`` parser, ``"read"`` otherwise, as the harness); ``None`` under
    log-probability scoring, where no reply is parsed."""
    if settings.scoring == "logprobs":
        return None
    if settings.think_blocks is not None:
        return settings.think_blocks
    return "skip" if settings.mode == "chat" or settings.answer_parser == "choice" else "read"


def _query(client: Any, request: Any, settings: RutieSettings) -> tuple[Answer, dict[str, Any]]:
    """One question's request to the endpoint: its answer and the record fields it fills."""
    if settings.scoring == "logprobs":
        if settings.mode == "completion":
            (s1, s2), prompt_tokens = client.continuation_logprobs(request, [" 1", " 2"])
            scores = {"1": s1, "2": s2}
        else:
            top, prompt_tokens = client.next_token_logprobs(request)
            scores = {c: top.get(c) for c in CHOICES}
        answer = answer_from_logprobs(scores, absent_is_less_likely=settings.mode != "completion")
        return answer, {"scores": scores, "prompt_tokens": prompt_tokens, "reply": answer.value or ""}
    generations = client.generate(request, mode=settings.mode, n=1, temperature=settings.temperature,
                                  max_tokens=settings.max_tokens, stop=settings.stop, seed=settings.seed)  # fmt: skip
    if not generations:
        # The endpoint answered, with no choice in it ({"choices": []}): this question's failure, counted with its
        # reason, as ruHumanEval counts a sample the endpoint did not return (not_generated) and goes on; an endpoint
        # that cannot be used fails its requests instead (HTTP errors, exit 4 after the retries). The dialogue goes
        # on with the model's empty answer, as the harness would have it: no digit, so the mera parser's -1 (the
        # choice parser's empty words) in later context.
        return Answer(None, NO_REPLY), {"reply": "", "prompt_tokens": None}
    generation = generations[0]
    fields = {"reply": generation.text, "prompt_tokens": generation.prompt_tokens}
    if generation.failure is not None:  # a chat reply with no answer text (eval.mera.client.Generation.failure)
        # Reasoning parts alone, cut by max_tokens: what the choice parser says of an unclosed <think>, under either
        # parser (there is no text for the harness's regex to read). Other content is named in the record's error.
        if generation.failure == REASONING_NOT_FINISHED:
            return Answer(None, UNFINISHED_THINK), fields
        return Answer(None, NOT_TEXT), {**fields, "error": generation.failure}
    return parse_reply(generation.text, settings.answer_parser, think_blocks=think_reading(settings)), fields


def ask(
    client: Any,
    item: RutieItem,
    history: Sequence[tuple[RutieItem, str]],
    settings: RutieSettings,
    *,
    dropped: int = 0,
) -> tuple[dict, Any]:
    """Put one question to the model: its progress record (see ``run_dialogues``) and the endpoint's refusal
    that left it unanswered (``RequestRefused``, else ``None``), for ``run_dialogues``' check of a run whose
    first requests are all refused alike.

    A prompt the endpoint refuses as over its context window (``ContextLimitError``), under
    ``context_overflow="truncate"``: the request is built again without the oldest whole earlier turn, and again,
    until the endpoint takes it (the instruction's head stays; with every turn left out the prompt is the first
    question's form). MERA's harness, run with ``--model hf``, truncates tokens from the left instead: generation
    keeps the last ``max_length - max_gen_toks`` prompt tokens (``lm_eval/models/huggingface.py``
    ``generate_until``: ``left_truncate_len=max_ctx_len``), log-likelihood the last ``max_length + 1`` tokens of
    prompt and continuation (``_loglikelihood_tokens``); an OpenAI-compatible endpoint offers no tokenizer-level
    truncation, so whole turns go here. Which prompts an endpoint refuses is its own rule: vLLM 0.32 takes a
    prompt up to the window and lowers ``max_tokens`` to what is left of it (``entrypoints/serve/utils/api_utils.py``
    ``get_max_tokens``), refusing only a prompt longer than the window (``renderers/params.py``), one of exactly
    its length (0 tokens left: "max_tokens must be at least 1", ``eval.mera.client`` counts it as the window's
    refusal) and a ``max_tokens`` above the window (``run_rutie`` refuses that before the run, naming
    ``--max-tokens``); so a prompt kept here may hold more turns than the harness's, which reserves
    ``max_gen_toks`` first. Other endpoints (OpenAI's) refuse a prompt plus ``max_tokens`` over the window.

    ``dropped`` (the turns an earlier question of the dialogue left out) is where leaving out starts: turns once
    dropped stay dropped, one extra request per newly dropped turn. The record holds the last request sent and how
    many earlier turns it left out (``context_turns_dropped``). When even the question alone does not fit, the
    question is unparsed ("context limit") and its record says every earlier turn was left out, so the next
    question starts from there (its one newer turn, then none): at most two tries a question, never a walk over
    all its earlier turns each time. Under ``"fail"`` such a question is unparsed with the full request and 0. A
    request the endpoint refuses otherwise (``RequestRefused``: HTTP 400, 413, 422) is unparsed ("request
    refused").
    """
    from eval.mera.client import ContextLimitError, RequestRefused

    if settings.answer_parser not in ANSWER_PARSERS:
        raise ValueError(f"answer_parser must be one of {ANSWER_PARSERS}, not {settings.answer_parser!r}")
    if settings.mode not in ("chat", "completion"):
        raise ValueError(f"mode must be 'chat' or 'completion', not {settings.mode!r}")
    if settings.scoring not in ("generate", "logprobs"):
        raise ValueError(f"scoring must be 'generate' or 'logprobs', not {settings.scoring!r}")
    if settings.context_overflow not in CONTEXT_OVERFLOWS:
        raise ValueError(f"context_overflow must be one of {CONTEXT_OVERFLOWS}, not {settings.context_overflow!r}")
    if settings.chat_form not in CHAT_FORMS:
        raise ValueError(f"chat_form must be one of {CHAT_FORMS}, not {settings.chat_form!r}")
    refusal = think_blocks_refusal(settings.scoring, settings.answer_parser, settings.think_blocks)
    if refusal is not None:
        raise ValueError(refusal)

    def build(turns: Sequence[tuple[RutieItem, str]]) -> Any:
        if settings.mode == "chat":
            return chat_messages(item, turns, settings.chat_form)
        return completion_prompt(item, turns, settings.answer_cue)

    full_request = build(history)
    record: dict[str, Any] = {
        "dialog_id": item.dialog_id,
        "question_id": item.question_id,
        "request": full_request,
        "reply": "",
        "scores": None,
        "prompt_tokens": None,
        "context_limit": False,
        "context_turns_dropped": 0,
    }
    truncate = settings.context_overflow == "truncate"
    skip = min(max(0, dropped), len(history)) if truncate else 0
    refusal = None
    while True:
        request = full_request if skip == 0 else build(history[skip:])
        try:
            answer, fields = _query(client, request, settings)
        except ContextLimitError as err:
            record.update(context_limit=True, error=str(err)[:500])
            if truncate and skip < len(history):
                skip += 1
                continue
            answer, refusal = Answer(None, CONTEXT_LIMIT), err
        except RequestRefused as err:
            answer, refusal = Answer(None, REQUEST_REFUSED), err
            record.update(error=str(err)[:500])
        else:
            record.pop("error", None)  # a shortened request was taken: the earlier refusals are in context_limit
            record.update(fields)  # with the reply's own "error" (NOT_TEXT: what its content was)
        break
    # The last request sent and the turns it left out, answered or not: the next question starts from there.
    record.update(request=request, context_turns_dropped=skip, context_limit=record["context_limit"] or skip > 0)
    if settings.max_model_len and record["prompt_tokens"] is not None:
        budget = settings.max_tokens if settings.scoring == "generate" else 1
        record["context_limit"] = record["context_limit"] or record["prompt_tokens"] + budget > settings.max_model_len
    record.update(
        answer=answer.value,
        reason=answer.reason,
        context_answer=context_answer(record["reply"], answer, settings.answer_parser),
        gold=item.gold,
        correct=answer.value == item.gold,
        category=list(item.category),
        use_context=item.use_context,
        turing_imitation=list(item.turing_imitation),
    )
    return record, refusal


#: The fields of an ``answers.jsonl`` row a resume and ``rutie_metrics`` read, and their kinds; ``_OPTIONAL_FIELDS``
#: may be left out (a folder from before a field existed).
_RESUMED_FIELDS: dict[str, type | tuple[type, ...]] = {
    "dialog_id": (int, str), "question_id": int, "answer": (str, type(None)), "reason": str, "context_answer": str}
_OPTIONAL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "prompt_tokens": (int, type(None)), "context_turns_dropped": int, "category": list, "turing_imitation": list}


def resumed_answers(path: Path) -> list[dict]:
    """The answers a run folder's ``answers.jsonl`` already holds, each row checked for the fields a resume and the
    metrics read (``_RESUMED_FIELDS``, and ``_OPTIONAL_FIELDS`` where given). A torn last line is cut first
    (``judge.plumbing.journal.open_journal``), as before any append.

    Raises:
        judge.plumbing.run_folder.ResumeMismatch: a row without one of them, or with one of another kind, naming the
            file, line and field.
        judge.plumbing.journal.JournalError: a line that is not a JSON object.
    """
    from eval.mera.progress_rows import progress_field
    from judge.plumbing.journal import iter_journal_lines

    open_journal(path)
    rows = []
    for number, rec in iter_journal_lines(path, quiet=True):
        for key, kind in _RESUMED_FIELDS.items():
            progress_field(rec, key, kind, f"{path}:{number}")
        for key, kind in _OPTIONAL_FIELDS.items():
            progress_field(rec, key, kind, f"{path}:{number}", optional=True)
        rows.append(rec)
    return rows


def _resume_histories(
    dialogues: Mapping[int | str, Sequence[RutieItem]], records: Iterable[dict], path: Path
) -> dict[int | str, list[tuple[RutieItem, str]]]:
    """Each dialogue's earlier questions with the answers later context shows, from ``records`` (checked rows of
    ``path``, ``resumed_answers``).

    Raises:
        judge.plumbing.run_folder.ResumeMismatch: a dialogue's saved answers are not the first of its questions in
            order, or answer a dialogue the data does not hold, naming the file.
    """
    from judge.plumbing.run_folder import ResumeMismatch

    done: dict[Any, list[dict]] = defaultdict(list)
    for rec in records:
        done[rec["dialog_id"]].append(rec)
    histories: dict[int | str, list[tuple[RutieItem, str]]] = {}
    for dialog_id, items in dialogues.items():
        recs = done.pop(dialog_id, [])
        got = [r["question_id"] for r in recs]
        want = [it.question_id for it in items[: len(recs)]]
        if got != want:
            raise ResumeMismatch(f"{path}: dialogue {dialog_id!r} has answers to questions {got}, expected the first "
                                 f"of its questions in order, {want}: the run cannot resume from it; use a fresh "
                                 "--out, or --overwrite to start over")  # fmt: skip
        histories[dialog_id] = [(it, r["context_answer"]) for it, r in zip(items, recs)]
    if done:
        raise ResumeMismatch(f"{path}: holds answers to dialogues the data does not have "
                             f"({', '.join(sorted(map(repr, done))[:5])}): the run cannot resume from it; use a fresh "
                             "--out, or --overwrite to start over")  # fmt: skip
    return histories


def run_dialogues(
    dialogues: Mapping[int | str, Sequence[RutieItem]],
    client: Any,
    settings: RutieSettings,
    out_dir: str | Path,
    *,
    concurrency: int = 4,
) -> list[dict]:
    """Answer every question, dialogues concurrently, each strictly in order; resumes from ``answers.jsonl``.

    Every answer is appended (fsynced) to ``out_dir/answers.jsonl`` before the next question of its dialogue is
    asked, so an interrupted run continues where it stopped. Records hold ``dialog_id``, ``question_id``, the
    exact ``request`` (prompt string or messages), ``reply``, ``answer`` (a digit or ``None``), ``reason``,
    ``context_answer`` (what later context shows), ``gold``, ``correct``, ``prompt_tokens``, ``context_limit``,
    ``context_turns_dropped`` (earlier turns the request left out to fit the context window, ``ask``), ``error``
    (the endpoint's refusal, when the question got none), ``scores`` (logprob scoring) and the item's
    ``category``, ``use_context``, ``turing_imitation``.

    A run whose first questions are all refused alike (the same HTTP status and server message: ``--mode chat``
    on a model without a chat template, a ``max_tokens`` the endpoint never takes) stops as ``judge-eval run``
    does (``eval.judging.backends.FirstRefusals``, ``eval.judging.run.N_FIRST_REFUSALS`` of them): their records
    are held back, not saved, so a rerun against a fixed endpoint asks them again. Any other outcome first saves
    the held ones, each dialogue's still in order (a held question's dialogue goes on meanwhile; at a stop nothing
    more of it is saved, so every dialogue's saved answers stay a prefix of it).

    Returns:
        All records (earlier and new), dialogue by dialogue in question order.

    Raises:
        judge.plumbing.retry.EndpointUnusable: the first questions were all refused alike; the server's words.
    """
    from eval.judging.backends import FirstRefusals, TooLong, context_refusal
    from eval.judging.run import N_FIRST_REFUSALS
    from eval.mera.client import ContextLimitError
    from eval.mera.workers import LateAnswers, ordered_map
    from judge.plumbing.retry import EndpointUnusable

    progress_path = Path(out_dir) / PROGRESS_FILE
    earlier = resumed_answers(progress_path)
    histories = _resume_histories(dialogues, earlier, progress_path)
    writer = JournalWriter(progress_path)
    results: dict[Any, list[dict]] = defaultdict(list)
    for rec in earlier:
        results[rec["dialog_id"]].append(rec)
    lock = threading.Lock()
    n_todo = sum(len(items) - len(histories[d]) for d, items in dialogues.items())
    # Only a run with at least N_FIRST_REFUSALS questions left can tell a refusing endpoint from refused questions.
    first = FirstRefusals(N_FIRST_REFUSALS if n_todo >= N_FIRST_REFUSALS else 0)
    withheld: set[Any] = set()  # dialogues with a record held back (or dropped at the stop): nothing later is saved
    asked = [0]

    def save(dialog_id: Any, record: dict, refusal: Any) -> None:
        """Offer a finished question to ``first``; save what it lets through (the caller holds ``lock``)."""
        if isinstance(refusal, ContextLimitError):
            # judge-eval's rule (eval.judging.backends.context_refusal): a question too long for the window even
            # alone is the data's own, never held as a refusal (refusals alike but for their numbers stopped the run
            # at three long questions first); offered as an answered one, so that what is held is released before
            # it, in order (set aside, it was saved ahead of a held earlier question of its dialogue, which no
            # resume reads); one that fits but leaves no room for max_tokens is the settings' refusal, held, its
            # record naming max_tokens.
            context = context_refusal(refusal.as_refused(), str(refusal), settings.max_tokens, is_context=True)
            if isinstance(context, TooLong):
                out = first.offer(None, record)
            else:
                record["error"] = context.final_reason[:500]
                out = first.offer(context, record)
        else:
            out = first.offer(None if refusal is None else refusal.as_refused(), record)
        if first.stopped is None:
            if out:
                withheld.clear()  # every held record is let through with this one
            else:
                withheld.add(dialog_id)
        elif not out or dialog_id in withheld:
            withheld.add(dialog_id)
            out = []
        if out:
            writer.append(*out)
        for rec in out:
            results[rec["dialog_id"]].append(rec)

    def run_one(dialog_id: int | str) -> None:
        try:
            ask_dialogue(dialog_id)
        except BaseException:
            # Here, not in the waiting thread: that one raises the dialogues' errors in dialogue order, after the
            # earlier dialogues end, and a queued dialogue starts before it wakes.
            abort.set()
            raise

    def ask_dialogue(dialog_id: int | str) -> None:
        history = histories[dialog_id]
        # Turns an earlier question left out to fit the context window stay left out (``ask``); from the saved
        # records on a resume, so a resumed run asks what an uninterrupted one would.
        dropped = max((int(r.get("context_turns_dropped") or 0) for r in results[dialog_id]), default=0)
        for item in dialogues[dialog_id][len(history) :]:
            if first.stopped is not None or abort.is_set():
                return
            record, refusal = ask(client, item, history, settings, dropped=dropped)
            dropped = max(dropped, record["context_turns_dropped"])
            history.append((item, record["context_answer"]))
            with lock:
                if late.drop(f"dialogue {dialog_id} question {item.question_id}"):
                    return
                asked[0] += 1
                save(dialog_id, record, refusal)

    # One dialogue's failure (an endpoint down past its retries) ends the run: it sets ``abort`` at once, so the
    # other dialogues finish the question each is asking (its answer saved) and ask no more, and the queued ones
    # never start. Ctrl+C or SIGTERM ends it without waiting for the questions being asked (``eval.mera.workers``),
    # and the caller lets go of the run folder: an answer that comes once this is left is dropped and said, not
    # written into a folder that a rerun may hold, or that was put back as found; the rerun asks it again.
    abort = threading.Event()
    late = LateAnswers()
    try:
        for _ in ordered_map(run_one, list(dialogues), concurrency):
            pass
    except BaseException:
        abort.set()
        raise
    finally:
        with lock:  # an answer being saved now is saved whole first, and the folder kept with it
            late.close()
    if first.stopped is not None:
        raise EndpointUnusable(_stopped_message(first, asked[0], n_todo))
    return [rec for d in dialogues for rec in results[d]]


def _stopped_message(first: Any, n_asked: int, n_todo: int) -> str:
    """``FirstRefusals.message`` in questions: a ruTiE question is one request when generated, but up to three under
    completion-mode log-probability scoring (``OpenAICompatClient.continuation_logprobs``), so counting requests
    would misstate how much was sent."""
    return (f"the endpoint refused the first {len(first.held)} questions alike: HTTP {first.stopped.status}: "
            f"{first.stopped.said} (stopped after asking {n_asked} of {n_todo} questions; no answer was saved for the "
            "refused ones, a rerun asks them again)")


def check_resume(dialogues: Mapping[int | str, Sequence[RutieItem]], out_dir: str | Path,
                 settings: RutieSettings) -> None:
    """Refuse resuming from a folder whose saved answers the run cannot go on from, before the endpoint is asked: a
    row without a field a resume reads (``resumed_answers``), a dialogue's answers that are not its first questions
    in order (``_resume_histories``), or a completion-mode folder whose first questions were asked before they
    opened with the harness's blank line (``completion_prompt``) when a dialogue not yet started is left: its first
    question would be asked in the other format, two prompt formats in one run. Only first questions changed, so a
    folder whose every dialogue has begun resumes as before. Likewise a chat-mode folder generated under the ``mera``
    parser, resumed under ``think_blocks="skip"``, holding an answer read from inside a ``<think>`` block
    (``_read_inside_think``): a folder from before the setting existed, whose run key names none (a folder written
    under the other setting since is refused by its run key, ``think_blocks``); its answers and the context they built
    would stand beside answers read after the reasoning, under one ``think_blocks``.

    Raises:
        judge.plumbing.run_folder.ResumeMismatch: the folder, and the row and field, the dialogue, or the dialogues
            that would mix formats or readings.
    """
    from judge.plumbing.run_folder import ResumeMismatch

    progress_path = Path(out_dir) / PROGRESS_FILE
    records = resumed_answers(progress_path)
    _resume_histories(dialogues, records, progress_path)
    if settings.mode == "chat" and settings.answer_parser == "mera" and think_reading(settings) == "skip":
        inside = [rec for rec in records if _read_inside_think(rec)]
        if inside:
            raise ResumeMismatch(
                f"{progress_path}: {len(inside)} of its answers were read from inside the reply's <think> block (a "
                f"chat-mode run folder from before the mera parser skipped it; e.g. dialogue "
                f"{inside[0].get('dialog_id')!r}, question {inside[0].get('question_id')!r}); resuming under "
                "--think-blocks skip would read the rest after the reasoning, two readings in one run (and its run key "
                "names no reading, so --think-blocks read is refused too). Use a fresh --out, or --overwrite to "
                "discard it.")
    if settings.mode != "completion":
        return
    firsts = {d: items[0].question_id for d, items in dialogues.items() if items}
    started: set[Any] = set()
    old_format = False
    for rec in records:
        started.add(rec.get("dialog_id"))
        request = rec.get("request")
        if firsts.get(rec.get("dialog_id")) == rec.get("question_id") and isinstance(request, str):
            old_format = old_format or not request.startswith(TURN_SEPARATOR)
    not_started = [d for d in dialogues if d not in started]
    if old_format and not_started:
        raise ResumeMismatch(
            f"{progress_path}: its first questions were asked without the blank line the harness's prompt opens "
            f"with (a run folder from before it was added); resuming would ask with it the first question of each "
            f"dialogue not yet started ({len(not_started)}, e.g. {not_started[0]!r}), two prompt formats in one run. "
            "Use a fresh --out, or --overwrite to discard it.")


def _read_inside_think(rec: Mapping[str, Any]) -> bool:
    """Whether a chat-mode row's answer is the whole-reply reading of its reply where the reading after the reasoning
    differs. The answer values only: a reply whose reasoning never closed and holds no digit is unparsed either way,
    counted alike, only its reason named otherwise. A row whose answer matches neither reading (hand-edited, or of
    another parser) is left to the other checks."""
    reply = rec.get("reply")
    if not isinstance(reply, str):
        return False
    old = parse_reply(reply, "mera", think_blocks="read").value
    return old != parse_reply(reply, "mera", think_blocks="skip").value and rec.get("answer") == old


# ---------------------------------------------------------------------------------------------------------------
# Metrics (pure)
# ---------------------------------------------------------------------------------------------------------------


def _accuracy_block(records: Sequence[dict]) -> dict[str, Any]:
    """Headline accuracy over all questions (unparsed = wrong, card "Metrics"), and over parsed ones beside it."""
    n = len(records)
    parsed = [r for r in records if r.get("answer") is not None]
    correct = sum(1 for r in parsed if r.get("correct"))
    return {
        "n": n,
        "n_unparsed": n - len(parsed),
        "accuracy": correct / n if n else None,
        "accuracy_parsed": correct / len(parsed) if parsed else None,
    }


def rutie_metrics(records: Sequence[dict], max_model_len: int | None = None) -> dict[str, Any]:
    """Accuracy overall and by category, ``use_context`` and ``turing_imitation``; prompt lengths per step.

    ``accuracy`` is over all questions, an unparsed answer counting as wrong (card "Metrics", MERA's headline);
    ``accuracy_parsed`` is over parsed answers only; every block carries ``n`` and ``n_unparsed``. ``None`` only
    where a block has no question (or, for ``accuracy_parsed``, no parsed answer). A question with several
    categories counts in each. ``n_context_limit`` counts the questions whose full prompt hit the context window
    (refused, or over ``max_model_len`` by the endpoint's count); ``n_context_truncated`` those answered with
    earlier turns left out to fit it (``context_turns_dropped``, ``ask``). ``n_ties`` counts the log-probability
    answers whose two scores were exactly equal, answered "1" as the harness's ``np.argmax`` answers them: a scorer
    that summed the same tokens for both continuations would tie on every question, and shows here.
    """
    by_category: dict[str, list[dict]] = defaultdict(list)
    by_imitation: dict[str, list[dict]] = defaultdict(list)
    by_context: dict[str, list[dict]] = defaultdict(list)
    by_step: dict[int, list[int]] = defaultdict(list)
    for rec in records:
        for cat in rec.get("category") or ():
            by_category[cat].append(rec)
        for imitation in rec.get("turing_imitation") or ():
            by_imitation[imitation].append(rec)
        by_context["true" if rec.get("use_context") else "false"].append(rec)
        if rec.get("prompt_tokens") is not None:
            by_step[rec["question_id"]].append(rec["prompt_tokens"])
    lengths = [t for step in by_step.values() for t in step]
    return {
        **_accuracy_block(records),
        "unparsed_reasons": dict(Counter(r["reason"] for r in records if r.get("answer") is None)),
        "by_category": {k: _accuracy_block(v) for k, v in sorted(by_category.items())},
        "by_use_context": {k: _accuracy_block(v) for k, v in sorted(by_context.items())},
        "by_turing_imitation": {k: _accuracy_block(v) for k, v in sorted(by_imitation.items())},
        "prompt_tokens": {
            "min": min(lengths) if lengths else None,
            "mean": sum(lengths) / len(lengths) if lengths else None,
            "max": max(lengths) if lengths else None,
            "by_step": [
                {"question_id": q, "mean": sum(v) / len(v), "max": max(v)} for q, v in sorted(by_step.items())
            ],
        },
        "n_context_limit": sum(1 for r in records if r.get("context_limit")),
        "n_context_truncated": sum(1 for r in records if r.get("context_turns_dropped")
                                   and r.get("reason") not in (CONTEXT_LIMIT, REQUEST_REFUSED)),
        "max_model_len": max_model_len,
        "n_ties": sum(1 for r in records if _tied(r.get("scores"))),
    }


def _tied(scores: Any) -> bool:
    """Both choices scored, and equally (``answer_from_logprobs`` then answers "1")."""
    if not isinstance(scores, Mapping):
        return False
    s1, s2 = scores.get("1"), scores.get("2")
    return s1 is not None and s1 == s2


#: MERA's two ruTiE runs (the module docstring), as the settings that decide their answers. ``rutie`` answers with the
#: argmax of two log-likelihoods, so generation's settings (stop, max_tokens, temperature, parser) play no part in it.
MERA_TASKS: dict[str, dict[str, Any]] = {
    "rutie_gen": {"mode": "completion", "scoring": "generate", "answer_cue": "", "stop": ["\n"], "max_tokens": 256,
                  "temperature": 0.0, "answer_parser": "mera", "think_blocks": "read", "context_overflow": "truncate"},
    "rutie": {"mode": "completion", "scoring": "logprobs", "answer_cue": "", "context_overflow": "truncate"},
}


#: The settings that play a part only where the answer is a generated reply (``scoring="generate"``).
GENERATION_ONLY = ("answer_parser", "stop", "max_tokens", "temperature")


def describe_protocol(settings: RutieSettings) -> dict[str, Any]:
    """The settings that decide a run's answers, and whether they are one of MERA's two runs.

    ``mera_task`` is MERA's run with the same scoring (``rutie_gen`` for ``generate``, ``rutie`` for ``logprobs``),
    ``same_as_mera_task`` whether every setting that decides its answers is equal, ``differs_from_mera_task`` each one
    that is not, with MERA's value. ``context_overflow="truncate"`` is the nearest to the harness, never equal to it
    (``ask``: whole turns here, tokens there); the difference shows only where a prompt overflowed
    (``n_context_truncated``). ``think_blocks`` says how a generated reply's ``<think>...</think>`` reasoning was
    read (``think_reading``): ``"skip"`` (chat mode's default, and always the ``choice`` parser's: ``parse_reply``),
    ``"read"`` (the harness's regex on the whole reply, completion mode's default under ``mera``), ``None`` under
    log-probability scoring (no reply is parsed), as are the other settings of generation (``GENERATION_ONLY``).
    """
    ours: dict[str, Any] = {
        "mode": settings.mode, "scoring": settings.scoring, "answer_cue": settings.answer_cue,
        "answer_parser": settings.answer_parser, "stop": list(settings.stop), "max_tokens": settings.max_tokens,
        "temperature": settings.temperature, "context_overflow": settings.context_overflow,
    }  # fmt: skip
    ours["think_blocks"] = think_reading(settings)
    # How chat mode lays out the dialogue; completion mode sends no messages. MERA's two runs are completion runs,
    # so a chat run already differs by its mode and the form is recorded, not compared.
    ours["chat_form"] = settings.chat_form if settings.mode == "chat" else None
    if settings.scoring == "logprobs":  # no reply is generated: generation's settings decide nothing, so none is shown
        ours.update(dict.fromkeys(GENERATION_ONLY))
    task = "rutie" if settings.scoring == "logprobs" else "rutie_gen"
    # The cue is a completion-mode setting: a chat run (already not MERA's) never sends it.
    differs = [f"{key}={ours[key]!r} (MERA's {task}: {value!r})" for key, value in MERA_TASKS[task].items()
               if ours[key] != value and not (key == "answer_cue" and settings.mode == "chat")]  # fmt: skip
    return {**ours, "mera_task": task, "same_as_mera_task": not differs, "differs_from_mera_task": differs}
