"""The ``/v1/judge`` request: its JSON shape, its validation, and criteria resolution against the taxonomy.

Request (one item inline, or many under ``items``)::

    {
      "model": "tiny-judge",                    # optional; must match the served name when given ("" names none)
      "items": [{
        "id": "q1-a3",                          # optional, echoed back
        "instruction": "...", "answer": "...",
        "reference_answer": "...",              # optional ("" / null: none)
        "criteria": ["Креативность", "facts__3", {"name": "Вежливость", "rubrics": "0: ...\\n\\n1: ..."}],
        "task_type": "Code modification",       # optional; without criteria it selects the task's criteria set,
        "task_subtype": "Python",               #   with criteria it picks each name's variant for the task
        "task_subsubtype": null
      }],
      "max_tokens": 512, "temperature": 0.0,    # optional: max_tokens 1 to the server's max_tokens, temperature 0 to 2
      "lenient": false,                         # accept a verdict whose [END] was cut off
      "constrained": false,                     # force the verdict format with vLLM structured outputs
      "oversize": "refuse"                      # a prompt too long for the context: refuse (400) or fail (that result)
    }

Every failure is a ``RequestError`` carrying an HTTP status and ``param``, the dotted path of the bad field
(``items[2].criteria[0]``), which the server returns as an OpenAI-style error body. A body that cannot be read at all
(not JSON, not UTF-8, nested past the decoder's depth) names ``body``. ``tests/unit/test_serve_request_fuzz.py`` holds
this as a property over bodies generated from the schema.

Why one module of ~570 lines: the decoder's placeholders (a number too long or too large, kept in place), the checks
that refuse them naming their field before pydantic runs, and the request's validation they guard are one contract;
apart, a placeholder could leave the decoder with nothing beside it that refuses it.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import sys
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from pydantic import ValidationError

from judge import TaxonomyError, load_taxonomy
from judge.criteria import CriterionError, ResolvedCriterion, resolve_criterion, task_path
from judge.criteria_auto import TaskChoice
from judge.plumbing.invisible_text import is_blank
from judge.plumbing.json_reading import got_words, value_words
from judge.scales import MAX_LEVELS, pairwise_scale_error
# The request types are the contract's (judge.wire), and so are the path, rank and words of their errors, which the
# reward clients share; re-exported here, where the server validates with them.
from judge.wire import (MAX_LIST_ENTRIES, MAX_RANKED_ERRORS, CustomCriterion, JudgeItem, JudgeRequest, PairItem,
                        PairwiseRequest, error_rank, error_words, param_of, path_key, printable,
                        too_many_fields)

T = TypeVar("T", JudgeRequest, PairwiseRequest)

__all__ = [
    "RequestError",
    "clip_message",
    "decode_json_body",
    "JUDGE_BODY_NESTING",
    "read_off_loop",
    "OFF_LOOP_BYTES",
    "LARGE_BODY_DECODES",
    "LargeDecodes",
    "check_values",
    "json_type_name",
    "CustomCriterion",
    "JudgeItem",
    "JudgeRequest",
    "PairItem",
    "PairwiseRequest",
    "ResolvedCriterion",
    "parse_judge_request",
    "InlineJudgeRequest",
    "named_as_sent",
    "check_bounds",
    "resolve_criteria",
    "param_of",
    "MAX_OBJECT_KEYS",
    "MAX_RANKED_ERRORS",
]

_ITEM_FIELDS = ("id", "instruction", "answer", "reference_answer", "criteria", "task_type", "task_subtype", "task_subsubtype")


class InlineJudgeRequest(JudgeRequest):
    """A ``/v1/judge`` body that sent its one item's fields at the top level (no ``items``): the same record, marked
    so that an error found later names a field as the body sent it (``named_as_sent``)."""


def named_as_sent(err: RequestError, request: Any) -> RequestError:
    """``err`` with its field named as ``request``'s body sent it: an inline body (``InlineJudgeRequest``, or True
    while it is parsed) has no ``items``, so its ``items[0].answer`` is ``answer``, ``items[0]`` (the item as a
    whole) is the ``body`` and ``items`` (the judgments asked, bounded by ``max_judgments_per_request``) is its
    ``criteria``; ``err`` itself for any other request."""
    if not (request is True or isinstance(request, InlineJudgeRequest)):
        return err

    def as_sent(path: str) -> str:
        return {"items": "criteria", "items[0]": "body"}.get(path) or path.removeprefix("items[0].")

    message = err.message
    for path in (err.param, "items[0]"):  # the message opens with its path, which is the param or the whole item
        if path and (path == "items" or path.startswith("items[0]")) and message.startswith(f"{path}:"):
            message = as_sent(path) + message[len(path):]
            break
    param = as_sent(err.param) if err.param else err.param
    return RequestError(message, param=param, status=err.status, code=err.code)


class RequestError(Exception):
    """A request judge-serve refuses.

    Attributes:
        status: HTTP status (400 for bad input, 404 for an unknown model, 413 for too large).
        param: the offending field as a dotted path, or None.
        message: what is wrong, naming the field.
    """

    def __init__(self, message: str, param: str | None = None, status: int = 400, code: str = "invalid_request"):
        super().__init__(message)
        self.message, self.param, self.status, self.code = message, param, status, code



def _first_error(err: ValidationError, data: Any) -> RequestError:
    errors = err.errors(include_url=False)[:MAX_RANKED_ERRORS]

    # The contract's ranking (``judge.wire.error_rank``), which the reward clients share, after judge-serve's own:
    # a literal's error (the "auto" of criteria, an unknown "oversize") comes last, since the value was meant as the
    # union's other branch; an object given for a criterion is meant as a custom criterion, so errors inside that
    # branch say most (a list of criteria that fails also fails the "auto" branch; the list's own error says more).
    def rank(e: dict) -> tuple[bool, bool, bool, bool, int]:
        inside_object = "CustomCriterion" in e["loc"] and e["type"] not in ("model_type", "model_attributes_type")
        path = param_of(tuple(e["loc"]), data, e["type"] == "missing", e["input"])
        return (e["type"] == "literal_error", *error_rank(e, path, meant=inside_object))

    first = min(errors, key=rank)
    param = param_of(tuple(first["loc"]), data, first["type"] == "missing", first["input"])
    param = clip_message(param)  # an unknown field's name is the client's, of any length
    if first["type"] == "list_type" and param.endswith(".criteria") and isinstance(first["input"], str):
        # the union's other branch is the string "auto": "must be a list, got a string" hid it ("AUTO", "Auto")
        message = f'{param}: must be a list of criteria or "auto" (lower case), got {got_words(first["input"])}'
    else:
        message = f"{param}: {error_words(first)}"
    return RequestError(clip_message(message), param=param)


#: Digits an integer in a body may have. Python refuses to convert more than 4300 (CVE-2020-10735) with a
#: ValueError that is no JSONDecodeError; no field of the request needs more than a few.
MAX_INT_DIGITS = 100


@dataclass(frozen=True)
class _LongNumber:
    """An integer too long to convert, kept in place so that validation can name its field."""

    digits: int


def _parse_int(text: str) -> int | _LongNumber:
    digits = len(text.lstrip("-"))
    return _LongNumber(digits) if digits > MAX_INT_DIGITS else int(text)


@dataclass(frozen=True)
class _InfiniteNumber:
    """A number too large for a float (``1e999``: Python decodes it to inf), kept in place so that validation can name
    its field: re-encoded, it would reach an engine as ``Infinity``, which is no JSON."""

    text: str


def _parse_float(text: str) -> float | _InfiniteNumber:
    value = float(text)
    return _InfiniteNumber(text[:40]) if math.isinf(value) else value


def _refuse_constant(name: str) -> None:
    # Python's decoder takes NaN, Infinity and -Infinity by default; RFC 8259 has no such values.
    raise RequestError(f"body: {name} is not JSON (RFC 8259 has no NaN or Infinity)", param="body",
                       code="invalid_json")


#: What ``/v1/judge`` says of its own bodies when one is nested past the decoder's limit.
JUDGE_BODY_NESTING = "a /v1/judge body nests at most 6"


def decode_json_body(raw: bytes, *, nesting: str = "") -> Any:
    """Decode a request body as JSON (UTF-8; UTF-16/32 as ``json`` detects them).

    ``nesting``: what the route's own bodies nest at most, added to the refusal of a body nested too deeply
    (``/v1/judge`` gives ``JUDGE_BODY_NESTING``); left out, the refusal names no route, so that a proxied
    generation's or a reward's body is not told what a ``/v1/judge`` body holds.

    Raises:
        RequestError: on ``body`` (code ``invalid_json``): not JSON, not text in a JSON encoding, or nesting
            deeper than the decoder's recursion limit, or ``NaN``/``Infinity``, which RFC 8259 has not. (An integer
            too long to convert, or a number too large for a float, decodes to a placeholder that ``check_values``
            refuses, naming its field.)
    """
    try:
        return json.loads(raw, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RequestError(f"body: not valid JSON ({err})", param="body", code="invalid_json") from None
    except RecursionError:
        # The C decoder stops at Python's recursion limit (sys.getrecursionlimit(), less the caller's stack) and
        # raises RecursionError, which is not a JSONDecodeError. A /v1/judge body nests 6 levels deep.
        raise RequestError(
            f"body: JSON nested too deeply to decode (more than about {sys.getrecursionlimit()} levels"
            f"{'; ' + nesting if nesting else ''})",
            param="body", code="invalid_json",
        ) from None  # fmt: skip


_SURROGATE = re.compile("[\ud800-\udfff]")
#: What JSON decodes to that holds nothing to check.
_PLAIN = frozenset({int, float, bool, type(None)})

#: Most keys of any object in a ``/v1/judge`` body: the largest its types admit is a custom rubric's mapping, one
#: key per level. Each unknown key, or each value of a mapping that fails, is one pydantic error: bounded here, a
#: body of 200,000 keys is refused before pydantic builds 200,000 errors.
MAX_OBJECT_KEYS = MAX_LEVELS


def check_values(data: Any, *, max_entries: int | None = None, max_keys: int | None = None) -> None:
    """Refuse, naming where, what JSON decodes but no field can hold: an integer of more than ``MAX_INT_DIGITS``
    digits, a number too large for a float, and a lone UTF-16 surrogate (JSON ``"\\ud800"``) in a string or a key;
    and, when bounds are given, a list of more than ``max_entries`` entries or an object of more than ``max_keys``
    keys.

    A surrogate is no Unicode text: UTF-8 cannot encode it, so the tokenizer (and a JSON response echoing it) would
    fail with a 500. Iterative: the body may nest deeply. Each value's place is kept as a link to its parent's, and
    written out only for the value refused: a path string per value would copy the parent's path into every child
    (a 4 MB key over a list of two million numbers: terabytes). A list of plain values (numbers, booleans, null: a
    prompt's token ids) is passed over whole, and a list's strings are searched at once: keeping one place per
    value would hold the event loop for seconds on a large array of numbers.
    """
    stack: list[tuple[tuple | None, Any]] = [(None, data)]
    while stack:
        link, node = stack.pop()
        if isinstance(node, str):
            bad = _SURROGATE.search(node)
            if bad:
                where = _path_text(link) or "body"
                raise RequestError(
                    f"{where}: not valid Unicode text (a lone surrogate {printable(bad.group())} at character "
                    f"{bad.start()}); send UTF-8 text",
                    param=where,
                )  # fmt: skip
        elif isinstance(node, _LongNumber):
            where = _path_text(link) or "body"
            raise RequestError(f"{where}: a number of {node.digits} digits; at most {MAX_INT_DIGITS}", param=where)
        elif isinstance(node, _InfiniteNumber):
            where = _path_text(link) or "body"
            raise RequestError(f"{where}: the number {node.text} is too large for a float (it decodes to infinity)",
                               param=where)
        elif isinstance(node, Mapping):
            if max_keys is not None and len(node) > max_keys:
                where = _path_text(link) or "body"
                raise RequestError(f"{where}: {too_many_fields(len(node), max_keys)}", param=where,
                                   code="too_many_fields")
            for key, value in node.items():
                if _SURROGATE.search(key):
                    child = _path_text((link, key))
                    raise RequestError(f"{child}: a field name that is not valid Unicode text", param=child)
                if value.__class__ not in _PLAIN:
                    stack.append(((link, key), value))
        elif isinstance(node, list):
            if max_entries is not None and len(node) > max_entries:
                where = _path_text(link) or "body"
                raise RequestError(f"{where}: a list of {len(node)} entries; at most {max_entries}", param=where,
                                   code="too_many_entries")
            kinds = set(map(type, node))  # at C speed; most lists hold one kind of value
            if kinds <= _PLAIN:
                continue
            if str in kinds and not _SURROGATE.search("".join(v for v in node if v.__class__ is str)):
                kinds.discard(str)  # no string of it holds a surrogate: only its containers remain to visit
            checked = _PLAIN if str in kinds else _PLAIN | {str}
            stack.extend(((link, i), value) for i, value in enumerate(node) if value.__class__ not in checked)


def _path_text(link: tuple | None) -> str:
    """The dotted path (``items[2].criteria[0]``) of a ``check_values`` link: ``(parent link, key or index)``."""
    segments = []
    while link is not None:
        link, segment = link
        segments.append(segment)
    path = ""
    for segment in reversed(segments):
        if isinstance(segment, int):
            path += f"[{segment}]"
        else:
            path = f"{path}.{path_key(segment)}" if path else path_key(segment)
    return path


def json_type_name(value: Any) -> str:
    """What a decoded body value is, in the words every other error uses (``value_words``: "an object", "a list",
    "true", "an integer"), the decoder's stand-ins for numbers it keeps unconverted included."""
    if isinstance(value, _LongNumber):
        return f"an integer of {value.digits} digits"
    if isinstance(value, _InfiniteNumber):
        return "a number too large for a float"
    return value_words(value)


#: Characters of a message that echoes the client's text (an unknown criterion name, say) kept in the answer.
MESSAGE_MAX_CHARS = 1000


def clip_message(message: str) -> str:
    """``message`` cut to ``MESSAGE_MAX_CHARS``: a 1 MB criterion name is not echoed back whole."""
    if len(message) <= MESSAGE_MAX_CHARS:
        return message
    return f"{message[:MESSAGE_MAX_CHARS]}... [{len(message)} characters]"


def parse_judge_request(body: Any, *, max_items: int | None = None,
                        max_judgments: int | None = None) -> JudgeRequest | PairwiseRequest:
    """Validate a decoded JSON body into a ``JudgeRequest`` (or, with ``pairs``, a ``PairwiseRequest``).

    A body with the item fields at the top level (and no ``items``) is one item. The server's bounds are checked on
    the body as sent, before anything is validated: a body past them costs no validation at all.

    Args:
        body: the decoded JSON body.
        max_items: most ``items`` (or ``pairs``) one request may carry (judge-serve's ``max_batch_items``).
        max_judgments: most judgments one request may ask for (its ``max_judgments_per_request``): the criteria its
            items name in all (a task's criteria set counts once resolved, in ``serve.jobs.build_jobs``), or its
            ``pairs``, one judgment each.

    Raises:
        RequestError: naming the first bad field.
    """
    if not isinstance(body, Mapping):
        raise RequestError(f"body: expected a JSON object, got {json_type_name(body)}", param="body")
    check_bounds(body, max_items, max_judgments)
    if "pairs" in body:
        return _parse_pairwise(dict(body))
    data = dict(body)
    inline = [k for k in _ITEM_FIELDS if k in data]
    if inline and "items" in data:
        raise RequestError(f"{inline[0]}: give items either under 'items' or inline, not both", param=inline[0])
    if "items" not in data:
        if not inline:
            raise RequestError("items: required field is missing", param="items")
        data["items"] = [{k: data.pop(k) for k in inline}]
    model = InlineJudgeRequest if inline else JudgeRequest
    try:
        return _checked_items(_validated(model, data))
    except RequestError as err:
        raise named_as_sent(err, bool(inline)) from None


def _checked_items(request: JudgeRequest) -> JudgeRequest:
    """What the record's types allow but a judgment cannot use: empty text, an empty criteria list, no criteria and
    no task to take them from."""
    for i, item in enumerate(request.items):
        for name in ("instruction", "answer"):
            if is_blank(getattr(item, name)):  # white space and characters that show nothing alike
                raise RequestError(f"items[{i}].{name}: must not be empty", param=f"items[{i}].{name}")
        if item.criteria is not None and not item.criteria:
            raise RequestError(
                f"items[{i}].criteria: must not be empty (leave it out to use the task type's criteria)",
                param=f"items[{i}].criteria",
            )
        if item.criteria is None and not task_level_named(item.task_type):  # "auto" needs neither; blank: no task
            raise RequestError(
                f"items[{i}].criteria: required unless task_type names a task whose criteria set to use",
                param=f"items[{i}].criteria",
            )
    return request


def check_bounds(body: Mapping[str, Any], max_items: int | None, max_judgments: int | None) -> None:
    """The server's bounds on items and judgments, counted on the body as sent (only its lists' lengths are read):
    ``parse_judge_request``'s first step, and ``/get_reward``'s on its labels (``serve.rewards``).

    Raises:
        RequestError: naming ``items`` (or ``pairs``; an inline body's ``criteria``, the judgments it asks for).
    """
    for key in ("items", "pairs"):  # pairs: the pairwise variant, bounded alike
        entries = body.get(key)
        if max_items is not None and isinstance(entries, list) and len(entries) > max_items:
            raise RequestError(f"{key}: {len(entries)} {key}; this server takes at most {max_items} per request",
                               param=key, code="too_many_items")
    if max_judgments is None:
        return
    pairs = body.get("pairs")
    if isinstance(pairs, list) and "items" not in body:
        # A pair is one judgment: judge-serve judges it in the order sent (a client that wants both orders, as
        # judge-eval does, sends the swapped pair as another), and each is a generation as a criterion's is.
        if len(pairs) > max_judgments:
            raise RequestError(f"pairs: {len(pairs)} pairwise judgments requested; this server takes at most "
                               f"{max_judgments} per request. Split the batch.", param="pairs")
        return
    items = body.get("items")
    items = items if isinstance(items, list) else [body]  # the inline form: the item's fields at the top level
    named = sum(len(item["criteria"]) for item in items if isinstance(item, Mapping)
                and isinstance(item.get("criteria"), list))
    if named > max_judgments:  # the wording build_jobs uses for the same bound once task sets are resolved
        field = "items" if "items" in body else "criteria"  # an inline body has no items: its criteria are asked
        raise RequestError(f"{field}: {named} (item, criterion) judgments requested; this server takes at most "
                           f"{max_judgments} per request. Split the batch.", param=field)


def _validated(model: type[T], data: dict[str, Any]) -> T:
    """``data`` checked for unreadable values and bounded in size, then validated into ``model``; the first error
    names its field."""
    check_values(data, max_entries=MAX_LIST_ENTRIES, max_keys=MAX_OBJECT_KEYS)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise _first_error(err, data) from None


def _parse_pairwise(data: dict[str, Any]) -> PairwiseRequest:
    """The pairwise variant: ``pairs`` of (instruction, answer_1, answer_2, rubrics), never beside ``items``; a
    ``rubrics`` whose level lines read as another scale than -1/0/1 is refused (``judge.scales.pairwise_scale_error``)."""
    if "items" in data:
        raise RequestError("pairs: give either items (criteria) or pairs (pairwise), not both", param="pairs")
    request = _validated(PairwiseRequest, data)
    for i, pair in enumerate(request.pairs):
        for name in ("instruction", "answer_1", "answer_2", "rubrics"):
            if is_blank(getattr(pair, name)):
                raise RequestError(f"pairs[{i}].{name}: must not be empty", param=f"pairs[{i}].{name}")
        if (why := pairwise_scale_error(pair.rubrics)) is not None:  # its verdict is read on -1/0/1
            raise RequestError(f"pairs[{i}].rubrics: {why}", param=f"pairs[{i}].rubrics")
    return request


def task_level_named(level: object) -> bool:
    """Whether a task field names something: blank ("", spaces) is unknown, as ``judge.criteria.task_path`` reads
    it (a "   " task type was a task here and none there: a TypeError, answered 500)."""
    return bool(level.strip()) if isinstance(level, str) else bool(level)


def resolve_criteria(item: JudgeItem, index: int, choice: TaskChoice | None = None) -> list[ResolvedCriterion]:
    """The criteria an item is judged on, resolved against the POLLUX taxonomy: each named one by
    ``judge.criteria.resolve_criterion``, which the reward client's unsent samples share.

    Args:
        item: the validated item.
        index: its position in the request (for error paths).
        choice: for ``"criteria": "auto"``, the task classifier's choice (its criteria ids are taxonomy ids).

    Raises:
        RequestError: unknown task type or criterion (the taxonomy's message, with its closest matches), a
            custom criterion with an empty name or rubric or a rubric from which no scale can be read, or
            ``"auto"`` on a server without a task classifier.
    """
    taxonomy = load_taxonomy()
    if item.criteria == "auto":
        levels = dict(zip(("task_type", "task_subtype", "task_subsubtype"),
                          (item.task_type, item.task_subtype, item.task_subsubtype)))
        stated = [name for name, level in levels.items() if task_level_named(level)]
        if stated:
            # "auto" guesses the task; a task stated beside it would be silently overridden by the guess.
            fields = ", ".join(stated)
            raise RequestError(
                f"items[{index}]: criteria 'auto' chooses the task from the text, but the item names its task "
                f"({fields}): leave criteria out (null) to judge it on its task's criteria, or drop {fields}",
                param=f"items[{index}].criteria",
            )
        if choice is None:
            raise RequestError(
                f"items[{index}].criteria: 'auto' needs a task classifier, which this server was started without "
                "(--criteria-classifier ''): start judge-serve without that flag for the shipped tfidf classifier, "
                "or with --criteria-classifier llm|head --criteria-classifier-path PATH",
                param=f"items[{index}].criteria",
            )
        return [ResolvedCriterion.of(taxonomy.criteria[cid]) for cid in choice.criteria]
    try:
        task = task_path(item.task_type, item.task_subtype, item.task_subsubtype)
    except TaxonomyError as err:  # its level names the field at fault
        field = f"items[{index}].{('task_type', 'task_subtype', 'task_subsubtype')[err.level or 0]}"
        raise RequestError(clip_message(f"{field}: {err}"), param=field) from None
    if item.criteria is None:
        try:
            crits = taxonomy.criteria_for(*task)  # type: ignore[misc]
        except TaxonomyError as err:  # leaves of several criteria sets: the level below the last one given
            field = f"items[{index}].{('task_type', 'task_subtype', 'task_subsubtype')[err.level or 0]}"
            raise RequestError(clip_message(f"{field}: {err}"), param=field) from None
        return [ResolvedCriterion.of(c) for c in crits]

    resolved = []
    for j, spec in enumerate(item.criteria):
        try:
            resolved.append(resolve_criterion(spec, task))
        except CriterionError as err:
            param = err.param(f"items[{index}].criteria[{j}]")
            raise RequestError(clip_message(f"{param}: {err}"), param=param) from None
    return resolved


#: A body of more bytes is decoded and checked in a worker thread, so the event loop keeps serving other requests and
#: the health probes, which a large array would hold while it is decoded and walked. A smaller one is decoded on the
#: loop: a worker thread's hand-off would cost more than the decoding.
OFF_LOOP_BYTES = 64 * 1024

#: Bodies past ``OFF_LOOP_BYTES`` decoded at once by default (``LargeDecodes``, which a server's state holds:
#: ``serve.supervision.ServerState.large_decodes``); the others wait their turn (none is refused: a reward client's
#: batch waits, as its queue does). Decoding holds the GIL, so more at once finish no sooner, and each takes one of the
#: event loop's few default worker threads (processors + 4), which the judging work (``serve.judging``'s rendering
#: and tokenizing) also runs on: many large bodies decoding at once held small /v1/judge requests up behind them, and
#: held every one's decoded copy (many times its bytes for an array of empty objects) in memory at once.
LARGE_BODY_DECODES = 2

_Read = TypeVar("_Read")


class LargeDecodes:
    """The bound on bodies past ``OFF_LOOP_BYTES`` decoded at once, ``at_once`` (``LARGE_BODY_DECODES`` unless
    given). One per server, in its state, so that a test or a benchmark sets its own on the state it builds; the
    bound never changes after it is made (a semaphore already waited on keeps its count)."""

    def __init__(self, at_once: int = LARGE_BODY_DECODES) -> None:
        if isinstance(at_once, bool) or not isinstance(at_once, int) or at_once < 1:
            raise ValueError(f"at_once: {at_once!r} is not a whole number of at least 1")
        self._at_once = at_once
        # One semaphore per event loop: an asyncio.Semaphore belongs to the loop it first waits on (a server's one
        # loop; the tests start several over one app).
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = \
            weakref.WeakKeyDictionary()

    @property
    def at_once(self) -> int:
        return self._at_once

    def _on_running_loop(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        decodes = self._by_loop.get(loop)
        if decodes is None:
            decodes = self._by_loop[loop] = asyncio.Semaphore(self._at_once)
        return decodes


async def read_off_loop(size: int, read: Callable[[], _Read], decodes: LargeDecodes,
                        deadline: float | None = None) -> _Read:
    """``read()`` (decoding and checking a body of ``size`` bytes, or encoding one): in a worker thread past
    ``OFF_LOOP_BYTES``, at most ``decodes.at_once`` at once (the server's ``ServerState.large_decodes``); on the
    event loop below it. Every route that reads a body goes through it.

    ``deadline`` (``time.monotonic()``), when given, bounds the wait for a turn: a request's own deadline, which
    other large bodies must not outlast. A read once begun runs to its end (its thread cannot be stopped).

    Raises:
        asyncio.TimeoutError: the deadline passed before the read's turn came.
    """
    if size <= OFF_LOOP_BYTES:
        return read()
    turn = decodes._on_running_loop()
    if deadline is not None and time.monotonic() >= deadline:
        raise asyncio.TimeoutError
    # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the turn when its caller is cancelled in the
    # loop turn the turn comes, and the route would go on as if never cancelled. Cancelled after the turn came, the
    # semaphore's acquire gives it back.
    async with asyncio.timeout(None if deadline is None else deadline - time.monotonic()):
        await turn.acquire()
    try:
        return await asyncio.to_thread(read)
    finally:
        turn.release()
