"""ruHumanEval (MERA): code from a model's completion, as MERA's harness takes it or leniently for chat models.

Code from a completion (``build_program``), one named option ``extraction``:

* ``"mera"`` (default), the harness exactly: the generation is cut at the stop strings (``until``), then
  ``preprocess_generation`` removes a markdown cover only when the text *starts* with three copies of its first
  character followed by ``python`` and *ends* with three copies of it (so ```` ```python ...``` ```` and
  ``~~~python ...~~~``, nothing else: no prose around, no other language tag, no leading whitespace), and the
  result is appended to the stub as it is (``inputs.function + completion``, no newline added). A chat answer
  that opens with prose or a fence and ``def`` is therefore cut at its ``\\ndef`` and fails, as in the harness.
* ``"lenient"``, this toolkit's deviation for chat models (not MERA's): reasoning (``<think>...</think>``) is left
  out (``after_reasoning``), then code is taken out of the first suitable markdown fence anywhere in the answer
  (``extract_code``: backticks or tildes, three or more), and a fenced block is taken whole, never cut at the
  stops (MERA's ``until`` ends a continuation of the stub; a chat answer's helper after the entry point is code).
  An answer that (re)defines the entry point replaces the stub's definition of it: the rest of the stub (its
  imports and helper functions, as the task's prompt defines them) goes on top, then the answer's code; unfenced,
  the code starts at its first top-level ``import``/``from``/``def``/``class`` or decorator line (prose before it
  dropped) and is cut at the stops after the entry point's ``def``. Otherwise the answer is a continuation (cut at
  the stops when unfenced) joined to the stub with a newline if neither side has one.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Sequence

from judge.verdicts import blocks_replaced

__all__ = ["MERA_STOPS", "EXTRACTIONS", "truncate_at_stops", "extract_code", "strip_markdown_cover", "after_reasoning",
           "build_program"]

#: MERA's stop strings for ruHumanEval (benchmark_tasks/ruhumaneval/ruhumaneval.yaml).
MERA_STOPS: tuple[str, ...] = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")

#: ``build_program``'s ways of turning a completion into code: MERA's harness, or the fence-aware deviation.
EXTRACTIONS: tuple[str, ...] = ("mera", "lenient")


def truncate_at_stops(text: str, stops: Iterable[str]) -> str:
    """Cut ``text`` at the earliest occurrence of any stop string (the stop itself is dropped)."""
    cut = len(text)
    for stop in stops:
        if stop:
            at = text.find(stop)
            if at != -1:
                cut = min(cut, at)
    return text[:cut]


#: A markdown code fence's opening (CommonMark "Fenced code blocks"): three or more backticks or tildes, then an
#: info string whose first word is the language (a tilde fence ``~~~python``, a four-backtick fence, ...); a backtick
#: fence's info string holds no backtick, so an inline span of three backticks opens nothing.
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})[ \t]*([^\n]*)$")
#: What may stand before an opening fence on its line, as in CommonMark: indentation (any depth, as a list item
#: nests it) and list markers ("1. ```python"). Code such as ``return "```" + s`` or ``~~~x`` never opens a block.
_FENCE_LEAD = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*")
_PYTHON_LANGS = {"", "python", "py", "python3"}


def _fence_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block in ``text``: (language, code).

    A block opens on a line that starts with a fence (CommonMark: after indentation or a list marker), or, leniently,
    on a line of prose ending in a fence and a Python tag alone ("Вот код: ```python"), or in a colon and a bare
    fence ("Вот код: ```"); a fence after code on its line (``return "```" + s``) opens nothing. It closes on a
    line that is a run of its fence character at least as long as its opening (CommonMark), or, leniently, that
    starts with such a run (prose after it: "``` Готово") or ends a line of code with it (``return x`` then the
    fence); a shorter run is code. An unclosed fence runs to the end of the text, as CommonMark's does at the end
    of a document: it is a generation cut by ``--max-tokens``, and the code written so far is the answer (cut
    mid-statement, it fails as the model's syntax error). Its last line, when it holds only that fence character
    with no newline after it, is a closing fence cut short and is dropped.
    """
    lines = text.splitlines(keepends=True)
    blocks: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        opening = _FENCE_OPEN.search(line)
        i += 1
        if not opening or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            continue
        # Leniently, prose may stand before the fence when a Python tag alone follows it ("Вот код: ```python"), or
        # nothing after a colon ("Вот код: ```"); after code ("return '```' + s", "~~~x") no fence opens.
        lead, tag = line[: opening.start()], opening.group(2).strip().lower()
        if not (_FENCE_LEAD.fullmatch(lead) or tag in _PYTHON_LANGS - {""} or (not tag and lead.rstrip()[-1:] == ":")):
            continue
        fence = opening.group(1)
        words = opening.group(2).split()
        lang = words[0].lower() if words else ""
        run = rf"{re.escape(fence[0])}{{{len(fence)},}}"
        closing = re.compile(rf"^[ \t]*{run}|{run}[ \t]*$")
        body: list[str] = []
        closed = False
        while i < len(lines):
            line = lines[i]
            i += 1
            end = closing.search(line.rstrip("\r\n"))
            if end:
                before = line[: end.start()]
                if before.strip():
                    body.append(before + "\n")
                closed = True
                break
            body.append(line)
        if not closed and body and not body[-1].endswith("\n") and set(body[-1].strip()) == {fence[0]}:
            body.pop()
        blocks.append((lang, "".join(body)))
    return blocks


def _defines(code: str, entry_point: str) -> re.Match[str] | None:
    return re.search(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", code, re.M)


def _unindented(code: str, entry_point: str | None) -> str:
    """A block indented as a whole (a fence inside a markdown list item, whose indentation CommonMark strips from
    its lines) that defines the entry point once dedented is that program, dedented; kept indented, its first line
    is an IndentationError. A continuation of the stub (no ``def`` of the entry point) keeps its indentation."""
    if entry_point is not None and not _defines(code, entry_point):
        dedented = textwrap.dedent(code)
        if _defines(dedented, entry_point):
            return dedented
    return code


def extract_code(completion: str, entry_point: str | None = None) -> tuple[str, bool]:
    """Take code out of markdown fences: the code, and whether it came out of a fence (then it is the model's whole
    program).

    With fences, the first Python (or unlabelled) block that defines ``entry_point`` wins, else the first Python
    block, else the first block; an unclosed fence (a generation cut by max tokens) runs to the end. Without
    fences the completion is code already.
    """
    blocks = [(lang, _unindented(code, entry_point)) for lang, code in _fence_blocks(completion)]
    if not blocks:
        return completion, False
    python = [code for lang, code in blocks if lang in _PYTHON_LANGS]
    if entry_point is not None:
        for code in python:
            if _defines(code, entry_point):
                return code, True
    return (python[0] if python else blocks[0][1]), True


#: Where code starts in an unfenced answer that opens with prose ("Вот решение:"): the first line at column 0 that
#: is an import, a definition or a decorator. What comes before it would be a syntax error in the program.
_CODE_START = re.compile(
    r"^(?:import[ \t]+[\w.]|from[ \t]+[\w.]+[ \t]+import\b|(?:async[ \t]+)?def[ \t]+\w"
    r"|class[ \t]+\w+[ \t]*[:(]|@[\w.]+)",
    re.M,
)


def _stub_without_entry_point(function: str, entry_point: str) -> str:
    """The stub with the entry point's definition taken out: its imports and its helper functions, as the task's
    prompt defines them (HumanEval/10's ``is_palindrome`` beside ``make_palindrome``, /32's ``poly``, /38's
    ``encode_cyclic``), which an answer that writes only the entry point still calls.

    The stub is parsed (an entry point's docstring is a whole body); one that does not parse keeps the text before
    the entry point's ``def``, or without one its import lines.
    """
    try:
        tree = ast.parse(function)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        tree = None
    if tree is not None:
        lines = function.splitlines(keepends=True)
        drop: set[int] = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                drop.update(range(first - 1, node.end_lineno or node.lineno))
        kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    else:
        match = _defines(function, entry_point)
        if match:
            kept = function[: match.start()]
        else:
            kept = "".join(ln + "\n" for ln in function.splitlines() if ln.startswith(("import ", "from ")))
    return kept.rstrip() + "\n" if kept.strip() else ""


def strip_markdown_cover(generation: str) -> str:
    """MERA's ``preprocess_generation`` (benchmark_tasks/ruhumaneval/utils.py): ``XXXpython...XXX`` -> ``...``.

    ``X`` is the first character; a generation starting with a space, newline or tab, or not both starting with
    ``XXXpython`` and ending with ``XXX``, is returned unchanged.
    """
    if not generation or generation[0] in (" ", "\n", "\t"):
        return generation
    begin, end = generation[0] * 3 + "python", generation[0] * 3
    if generation.startswith(begin) and generation.endswith(end):
        return generation[len(begin) : -len(end)]
    return generation


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_THINK_OPEN = re.compile(r"<think>", re.I)


def after_reasoning(completion: str, gap: str = "") -> str | None:
    """A chat answer without its reasoning: ``<think>...</think>`` blocks replaced by ``gap``, and the text before a
    ``</think>`` whose opening was in the prompt (templates that open the block themselves) left out; None for a
    ``<think>`` never closed (cut by ``--max-tokens``): the answer never came. The reasoning's drafts, fenced as often
    as not, are never the program (the first fence defining the entry point would otherwise be a discarded draft),
    and a digit in it is never ruTiE's answer (``eval.mera.rutie.parse_answer``, whose ``gap`` " " keeps "1<think>
    ...</think>2" two answers, not 12)."""
    completion = blocks_replaced(completion, _THINK_BLOCK, _THINK_CLOSE, gap)  # linear in a looping model's output
    visible = _THINK_CLOSE.split(completion)[-1]
    return None if _THINK_OPEN.search(visible) else visible


def build_program(
    completion: str,
    function: str,
    entry_point: str,
    stops: Sequence[str] = MERA_STOPS,
    extraction: str = "mera",
) -> str:
    """The program to execute for one completion.

    Args:
        completion: The model's text (in completion mode already cut at the stops by the client).
        function: The stub from the prompt (``inputs.function``).
        entry_point: The function under test.
        stops: Stop strings; ``()`` for code that is not model output (canonical solutions).
        extraction: ``"mera"``: MERA's harness, cut at the stops, ``strip_markdown_cover``, appended to the stub
            as is. ``"lenient"`` (this toolkit's deviation, not MERA's): code comes out of a markdown fence
            first (``extract_code``), and a fenced block is the model's whole answer, never cut at the stops
            (a chat model writes helpers after the entry point, and the stops are a completion-mode rule: MERA's
            ``until`` ends a continuation of the stub). A completion that (re)defines the entry point replaces
            the stub's definition of it: the rest of the stub (its imports, which models drop while copying
            ``List[int]``, and its helper functions, which they call without copying) goes on top, then the
            code; unfenced, the code starts at its first top-level ``import``/``from``/``def``/... (prose before
            it is dropped) and the stops apply after the entry point's ``def``. Otherwise it is a continuation
            (cut at the stops when unfenced) appended to the stub, with a newline between them if neither has one.
    """
    if extraction == "mera":
        # utils.py execute_function: full_function = doc["inputs"]["function"] + resp_func
        return function + strip_markdown_cover(truncate_at_stops(completion, stops))
    if extraction != "lenient":
        raise ValueError(f"extraction must be one of {EXTRACTIONS}, not {extraction!r}")
    code, fenced = extract_code(after_reasoning(completion) or "", entry_point)
    match = _defines(code, entry_point)
    if match:
        stub = _stub_without_entry_point(function, entry_point)
        if fenced:
            return stub + code
        start = _CODE_START.search(code)
        head = code[start.start() : match.start()] if start and start.start() < match.start() else ""
        return stub + head + truncate_at_stops(code[match.start() :], stops)
    body = code if fenced else truncate_at_stops(code, stops)
    if function and not function.endswith("\n") and not body.startswith("\n"):
        body = "\n" + body
    return function + body


# ---------------------------------------------------------------------------------------------------------------
# Metric
# ---------------------------------------------------------------------------------------------------------------
