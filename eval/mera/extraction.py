"""ruHumanEval (MERA): code from a model's completion, as MERA's harness takes it or leniently for chat models.

Code from a completion (``build_program``), one named option ``extraction``:

* ``"mera"`` (default), the harness exactly: the generation is cut at the stop strings (``until``), then
  ``preprocess_generation`` removes a markdown cover only when the text *starts* with three copies of its first
  character followed by ``python`` and *ends* with three copies of it (so ```` ```python ...``` ```` and
  ``~~~python ...~~~``, nothing else: no prose around, no other language tag, no leading whitespace), and the
  result is appended to the stub as it is (``inputs.function + completion``, no newline added). A chat answer
  that opens with prose or a fence and ``def`` is therefore cut at its ``\\ndef`` and fails, as in the harness.
* ``"lenient"``, this toolkit's deviation for chat models (not MERA's): code is taken out of the first suitable
  markdown fence anywhere in the answer (``extract_code``), and a fenced block is taken whole, never cut at the
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
from collections.abc import Iterable, Sequence

__all__ = ["MERA_STOPS", "EXTRACTIONS", "truncate_at_stops", "extract_code", "strip_markdown_cover", "build_program"]

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


_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_PYTHON_LANGS = {"", "python", "py", "python3"}


def _defines(code: str, entry_point: str) -> re.Match[str] | None:
    return re.search(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", code, re.M)


def extract_code(completion: str, entry_point: str | None = None) -> str:
    """Take code out of markdown fences.

    With fences, the first Python (or unlabelled) block that defines ``entry_point`` wins, else the first Python
    block, else the first block; an unclosed fence (a generation cut by max tokens) runs to the end. Without
    fences the completion is code already.
    """
    return _fenced_code(completion, entry_point)[0]


def _fenced_code(completion: str, entry_point: str | None) -> tuple[str, bool]:
    """``extract_code``'s code, and whether it came out of a fence (then it is the model's whole program)."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(completion)]
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
    code, fenced = _fenced_code(completion, entry_point)
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
