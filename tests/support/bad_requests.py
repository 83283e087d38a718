"""Hypothesis strategies for ``/v1/judge`` bodies, drawn from the request schema (``serve/schema.py``).

``valid_bodies()`` draws well-formed requests; ``bad_bodies()`` draws one of them and breaks it in exactly one
place, returning a ``BadBody``: the raw bytes to send and the field the 4xx must name. The ways to break a body:
wrong types, out-of-range values, missing and extra fields, huge strings, deep nesting, invalid UTF-8 (raw bytes
and JSON-escaped lone surrogates), non-JSON, and unknown criteria and task types.

Used by ``tests/unit/test_serve_request_fuzz.py`` (in process) and ``tests/integration/serving/test_serve_load.py`` (a live judge-serve).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from judge import TaxonomyError, load_taxonomy
from judge.plumbing.json_reading import json_or_none

__all__ = ["BadBody", "BREAKERS", "bad_bodies", "valid_bodies", "param_text", "key_text", "SERVED_MODEL", "SERVER_MAX_TOKENS",
           "deterministic_settings"]

#: What the live test server is started with (tests/support/fixtures_serve.py TEST_FLAGS).
SERVED_MODEL = "tiny-judge"
SERVER_MAX_TOKENS = 48
SERVER_MAX_BATCH_ITEMS = 64
SERVER_MAX_BODY_BYTES = 8 * 1024 * 1024

Path = tuple[Any, ...]


def deterministic_settings(max_examples: int) -> settings:
    """Hypothesis settings for these strategies: the same examples every run (CI), no example database written into
    the checkout, no deadline, and the health checks that large drawn bodies trip turned off."""
    return settings(
        derandomize=True, database=None, deadline=None, max_examples=max_examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example, HealthCheck.filter_too_much],
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class BadBody:
    """A body broken in one place.

    Attributes:
        raw: the bytes to POST.
        param: the ``param`` the error must carry (``items[0].answer``; ``body`` when it cannot be read at all).
        kind: which way it was broken (shown when a property fails).
        status: the HTTP status it must get.
        exact: False where the error may name a field inside ``param`` (a prompt past the model's context is
            reported on the criterion whose prompt overflowed: ``items[0].criteria[1]`` for a huge ``items[0].answer``).
        live_only: only a running judge-serve refuses it (its model name, max_tokens, batch and body limits, the
            model's context); validation alone accepts it.
    """

    raw: bytes
    param: str
    kind: str
    status: int = 400
    exact: bool = True
    live_only: bool = False

    def __repr__(self) -> str:  # keep hypothesis' report readable when a huge body fails
        raw = self.raw if len(self.raw) <= 300 else self.raw[:300] + b"...[%d bytes]" % len(self.raw)
        return f"BadBody(kind={self.kind!r}, param={self.param!r}, status={self.status}, raw={raw!r})"


_PLAIN_KEY = re.compile(r"[^\s.\[\]\"\\]+")


def key_text(key: str) -> str:
    """A key as it appears in a ``param`` path: as is, or JSON-quoted when empty or holding ``. [ ] " \\`` or
    whitespace; a lone surrogate backslash-escaped."""
    text = key if _PLAIN_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def param_text(path: Path) -> str:
    """``("items", 0, "criteria", 1)`` -> ``items[0].criteria[1]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + key_text(part)
    return out or "body"


@functools.cache
def _criteria_names() -> tuple[str, ...]:
    """Criterion names and ids that resolve without a task type."""
    taxonomy = load_taxonomy()
    candidates = ["Креативность", "Грамотность", "Полезность", "facts__3", *list(taxonomy.criteria)[:12]]
    return tuple(c for c in candidates if _resolves(c))


def _resolves(name: str) -> bool:
    try:
        load_taxonomy().criterion(name)
    except TaxonomyError:
        return False
    return True


def _is_task_type(name: str) -> bool:
    try:
        load_taxonomy().find_tasks(name)
    except TaxonomyError:
        return False
    return True


# Text a field may hold: any Unicode but surrogates (st.characters never draws them without being asked).
_TEXT = st.text(min_size=1, max_size=30).filter(lambda s: s.strip())
_RUBRICS = st.sampled_from(["0: плохо\n\n1: хорошо", "0: нет\n\n1: частично\n\n2: да"]) | st.just({"0": "нет", "1": "да"})


@st.composite
def _criterion(draw) -> Any:
    if draw(st.integers(0, 3)) == 0:
        return {"name": draw(_TEXT), "rubrics": draw(_RUBRICS)}
    return draw(st.sampled_from(_criteria_names()))


@st.composite
def _item(draw) -> dict[str, Any]:
    item: dict[str, Any] = {"instruction": draw(_TEXT), "answer": draw(_TEXT), "criteria": draw(st.lists(_criterion(), min_size=1, max_size=3))}
    if draw(st.booleans()):
        item["id"] = draw(_TEXT | st.integers(-(10**12), 10**12))
    if draw(st.booleans()):
        item["reference_answer"] = draw(_TEXT | st.none())
    return item


@st.composite
def valid_bodies(draw) -> dict[str, Any]:
    """A well-formed ``/v1/judge`` body for the test server (1-3 items of 1-3 criteria, optional settings)."""
    body: dict[str, Any] = {"items": draw(st.lists(_item(), min_size=1, max_size=3))}
    for name, values in (
        ("model", st.just(SERVED_MODEL)),
        ("max_tokens", st.integers(1, SERVER_MAX_TOKENS)),
        ("temperature", st.floats(0, 2) | st.integers(0, 2)),
        ("lenient", st.booleans()),
        ("constrained", st.booleans()),
    ):
        if draw(st.booleans()):
            body[name] = draw(values)
    return body


# ------------------------------------------------------------------------------------------ body surgery


def _get(body: Any, path: Path) -> Any:
    for part in path:
        body = body[part]
    return body


def _set(body: Any, path: Path, value: Any) -> None:
    _get(body, path[:-1])[path[-1]] = value


def _delete(body: Any, path: Path) -> None:
    del _get(body, path[:-1])[path[-1]]


def _dump(body: Any) -> bytes:
    # ensure_ascii: a lone surrogate goes out as the JSON escape "\ud800", which is valid JSON text.
    return json.dumps(body).encode("utf-8")


@st.composite
def _place(draw, body: dict, level: str) -> Path:
    """A path to an object of ``level`` in ``body``: the body, an item, or a custom criterion."""
    if level == "body":
        return ()
    i = draw(st.integers(0, len(body["items"]) - 1))
    if level == "item":
        return ("items", i)
    customs = [("items", i, "criteria", j) for i, it in enumerate(body["items"]) for j, c in enumerate(it["criteria"]) if isinstance(c, dict)]
    if not customs:
        body["items"][i]["criteria"].append({"name": "Своё", "rubrics": "0: нет\n\n1: да"})
        return ("items", i, "criteria", len(body["items"][i]["criteria"]) - 1)
    return draw(st.sampled_from(customs))


# Fields by level, with values of a wrong type for each (None only where the field is not optional).
_STR = [5, -1.5, True, [], ["x"], {}, {"a": "b"}]
_FIELDS: dict[str, dict[str, list[Any]]] = {
    "body": {
        "model": _STR,
        "items": [5, "items", {}, {"instruction": "x"}, None, True],
        "max_tokens": ["5", 5.5, True, [], {}],
        "temperature": ["0.5", True, [], {}],
        "lenient": ["true", 1, 0, [], {}],
        "constrained": ["false", 1, [], {}],
    },
    "item": {
        "id": [1.5, True, [], {}, ["x"]],
        "instruction": [None, *_STR],
        "answer": [None, *_STR],
        "reference_answer": _STR,
        "criteria": [5, True, {}, "Креативность", {"name": "x"}],
        "task_type": _STR,
        "task_subtype": _STR,
        "task_subsubtype": _STR,
    },
    "criterion": {"name": [None, *_STR], "rubrics": [None, 5, True, [], ["0: a"]]},
}


@st.composite
def _wrong_type(draw, body: dict) -> BadBody:
    level = draw(st.sampled_from(["body", "item", "criterion"]))
    place = draw(_place(body, level))
    name = draw(st.sampled_from(sorted(_FIELDS[level])))
    _set(body, (*place, name), draw(st.sampled_from(_FIELDS[level][name])))
    return BadBody(_dump(body), param_text((*place, name)), f"wrong type: {name}")


@st.composite
def _item_or_criterion_type(draw, body: dict) -> BadBody:
    """A whole item, or one criterion, of a wrong type."""
    i = draw(st.integers(0, len(body["items"]) - 1))
    if draw(st.booleans()):
        path: Path = ("items", i)
        value = draw(st.sampled_from([5, "item", [], None, True]))
    else:
        path = ("items", i, "criteria", draw(st.integers(0, len(body["items"][i]["criteria"]) - 1)))
        value = draw(st.sampled_from([5, 1.5, None, True, [], ["Креативность"]]))
    _set(body, path, value)
    return BadBody(_dump(body), param_text(path), "wrong type: item or criterion")


@st.composite
def _out_of_range(draw, body: dict) -> BadBody:
    i = draw(st.integers(0, len(body["items"]) - 1))
    # Finite only: an infinity is dumped as -Infinity, which is no JSON number, and is refused on ``body`` before any
    # field is read (serve/schema.py), a case of its own, not an out-of-range value.
    choices = {
        "max_tokens zero or negative": (("max_tokens",), draw(st.integers(-(10**6), 0)), False),
        "max_tokens above the server's": (("max_tokens",), draw(st.integers(SERVER_MAX_TOKENS + 1, 10**9)), True),
        "temperature below 0": (("temperature",), draw(st.floats(max_value=-1e-6, allow_infinity=False, allow_nan=False)), False),
        "temperature above 2": (("temperature",), draw(st.floats(min_value=2.0001, allow_infinity=False, allow_nan=False)), False),
        "no items": (("items",), [], False),
        "too many items": (("items",), body["items"] * (SERVER_MAX_BATCH_ITEMS // len(body["items"]) + 1), True),
        "empty criteria": (("items", i, "criteria"), [], False),
        "blank instruction": (("items", i, "instruction"), draw(st.sampled_from(["", " ", "\n\t "])), False),
        "blank answer": (("items", i, "answer"), draw(st.sampled_from(["", "  ", "\u3000"])), False),
    }
    kind = draw(st.sampled_from(sorted(choices)))
    path, value, live_only = choices[kind]
    _set(body, path, value)
    return BadBody(_dump(body), param_text(path), kind, live_only=live_only)


@st.composite
def _bad_custom_criterion(draw, body: dict) -> BadBody:
    place = draw(_place(body, "criterion"))
    kind = draw(st.sampled_from(["blank name", "empty rubrics", "rubrics without a scale", "non-integer level"]))
    field, value = {
        "blank name": ("name", draw(st.sampled_from(["", " ", "\n"]))),
        "empty rubrics": ("rubrics", draw(st.sampled_from(["", "  ", {}]))),
        "rubrics without a scale": ("rubrics", draw(st.sampled_from(["без шкалы", "хорошо или плохо"]))),
        "non-integer level": ("rubrics", {draw(st.sampled_from(["a", "один", "1.5"])): "x", "0": "y"}),
    }[kind]
    _set(body, (*place, field), value)
    return BadBody(_dump(body), param_text((*place, field)), kind)


@st.composite
def _missing(draw, body: dict) -> BadBody:
    level = draw(st.sampled_from(["body", "item", "criterion"]))
    if level == "body":
        path: Path = ("items",)
    else:
        place = draw(_place(body, level))
        path = (*place, draw(st.sampled_from(["instruction", "answer", "criteria"] if level == "item" else ["name", "rubrics"])))
    _delete(body, path)
    return BadBody(_dump(body), param_text(path), f"missing: {path[-1]}")


_KNOWN = {
    "body": {"model", "items", "max_tokens", "temperature", "lenient", "constrained"},
    "item": {"id", "instruction", "answer", "reference_answer", "criteria", "task_type", "task_subtype", "task_subsubtype"},
    "criterion": {"name", "rubrics"},
}


@st.composite
def _extra(draw, body: dict) -> BadBody:
    level = draw(st.sampled_from(["body", "item", "criterion"]))
    place = draw(_place(body, level))
    # Any key, surrogates included (a key JSON can carry, which UTF-8 cannot): the error names it either way.
    key = draw(
        st.text(st.characters() | st.characters(categories=["Cs"]), max_size=12)
        | st.sampled_from(["str", "int", "JudgeItem", "CustomCriterion", "a.b", "my-field", ""])
    )
    if key in _KNOWN[level] or level == "body" and key in _KNOWN["item"]:
        key += "_extra"
    _set(body, (*place, key), draw(st.sampled_from([1, "x", None, [], {"a": 1}])))
    return BadBody(_dump(body), param_text((*place, key)), "extra field")


@st.composite
def _inline_and_items(draw, body: dict) -> BadBody:
    """Item fields at the top level beside ``items``: ambiguous, refused on the first such field."""
    key = draw(st.sampled_from(["instruction", "answer", "criteria", "id", "task_type"]))
    body[key] = body["items"][0].get(key, "x")
    return BadBody(_dump(body), key, "item field beside items")


@st.composite
def _huge(draw, body: dict) -> BadBody:
    i = draw(st.integers(0, len(body["items"]) - 1))
    target = draw(st.sampled_from(["model", "criterion", "task_type", "answer", "instruction", "reference_answer", "body"]))
    unit = draw(st.sampled_from(["я", "x", "слово ", "🙂"]))
    if target == "body":  # past max_body_bytes: refused before it is read
        body["items"][i]["answer"] = unit * (SERVER_MAX_BODY_BYTES // len(unit.encode()) + 1)
        return BadBody(_dump(body), "body", "huge: body", status=413, live_only=True)
    if target in ("answer", "instruction", "reference_answer"):
        # Tens of thousands of characters: far past the 2048-token context of the test server, cheap to tokenize.
        _set(body, ("items", i, target), unit * (40_000 // len(unit)))
        return BadBody(_dump(body), f"items[{i}]", f"huge: {target}", exact=False, live_only=True)
    text = unit * (300_000 // len(unit))
    if target == "model":
        body["model"] = text
        return BadBody(_dump(body), "model", "huge: model", status=404, live_only=True)
    if target == "task_type":
        body["items"][i]["task_type"] = text
        return BadBody(_dump(body), f"items[{i}].task_type", "huge: task_type")
    j = draw(st.integers(0, len(body["items"][i]["criteria"]) - 1))
    body["items"][i]["criteria"][j] = text
    return BadBody(_dump(body), f"items[{i}].criteria[{j}]", "huge: criterion")


@st.composite
def _long_number(draw, body: dict) -> BadBody:
    """An integer of thousands of digits: JSON allows it, Python refuses to convert past 4300 digits."""
    i = draw(st.integers(0, len(body["items"]) - 1))
    path: Path = draw(st.sampled_from([("items", i, "id"), ("max_tokens",), ("temperature",), ("items", i, "answer")]))
    _set(body, path, "\u2063NUMBER\u2063")
    digits = draw(st.sampled_from(["9" * 101, "1" * 4301, "-" + "7" * 20_000]))
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8").replace('"\u2063NUMBER\u2063"'.encode(), digits.encode())
    return BadBody(raw, param_text(path), "long integer")


def _nested(depth: int, leaf: Any, as_dict: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


@st.composite
def _deep(draw, body: dict) -> BadBody:
    i = draw(st.integers(0, len(body["items"]) - 1))
    if draw(st.integers(0, 3)) == 0:
        # Past the JSON decoder's recursion limit: nothing can be read, so the body is what is named.
        depth = draw(st.sampled_from([1_500, 20_000, 200_000]))
        raw = _dump(body).replace(b'"items": [', b'"items": [' + b"[" * depth, 1) + b"]" * depth
        return BadBody(raw, "body", "deep: past the decoder")
    # A scalar field holding nested arrays or objects, deep but decodable: the field is named.
    path: Path = draw(st.sampled_from([("model",), ("max_tokens",), ("temperature",), ("lenient",),
                                       ("items", i, "instruction"), ("items", i, "answer"), ("items", i, "id"),
                                       ("items", i, "reference_answer"), ("items", i, "task_type")]))  # fmt: skip
    _set(body, path, _nested(draw(st.integers(1, 400)), draw(st.sampled_from([1, "x", None, {}])), draw(st.booleans())))
    return BadBody(_dump(body), param_text(path), "deep: in a field")


_STRING_FIELDS = ("instruction", "answer", "reference_answer", "id", "task_type")


@st.composite
def _invalid_utf8(draw, body: dict) -> BadBody:
    """Raw bytes that are no UTF-8 (a stray continuation byte, an overlong form, an encoded surrogate, a truncated
    sequence) inside a string: the body cannot be decoded, so it is what is named."""
    i = draw(st.integers(0, len(body["items"]) - 1))
    field = draw(st.sampled_from(_STRING_FIELDS))
    bad = draw(st.sampled_from([b"\xff", b"\x80", b"\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80"]))
    body["items"][i][field] = "\u2063MARK\u2063"
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8").replace("\u2063MARK\u2063".encode(), b"ok" + bad + b"ok")
    if bad == b"\xed\xa0\x80":
        # Python's json decodes bytes with "surrogatepass": an encoded surrogate reads as a lone surrogate, which
        # validation then refuses on its field.
        return BadBody(raw, f"items[{i}].{field}", "invalid UTF-8 bytes: an encoded surrogate")
    return BadBody(raw, "body", "invalid UTF-8 bytes")


@st.composite
def _lone_surrogate(draw, body: dict) -> BadBody:
    """A JSON-escaped lone surrogate (``"\\ud800"``) in a string: valid JSON, no Unicode text; the field is named."""
    i = draw(st.integers(0, len(body["items"]) - 1))
    field = draw(st.sampled_from(_STRING_FIELDS))
    surrogate = draw(st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]))
    body["items"][i][field] = draw(_TEXT) + surrogate
    return BadBody(_dump(body), f"items[{i}].{field}", "lone surrogate")


@st.composite
def _not_json(draw, body: dict) -> BadBody:
    text = _dump(body)
    kind = draw(st.sampled_from(["truncated", "trailing garbage", "garbage", "not an object"]))
    if kind == "truncated":
        raw = text[: draw(st.integers(0, len(text) - 1))]
    elif kind == "trailing garbage":
        raw = text + draw(st.sampled_from([b"}", b",", b" x", b"{}", b"\x00"]))
    elif kind == "garbage":
        raw = draw(st.binary(max_size=64).filter(_not_a_json_object))
    else:
        raw = json.dumps(draw(st.sampled_from([[], [body], "items", 1, 2.5, True, None]))).encode()
    return BadBody(raw, "body", f"not JSON: {kind}")


def _not_a_json_object(raw: bytes) -> bool:
    return not isinstance(json_or_none(raw), dict)


@st.composite
def _unknown_names(draw, body: dict) -> BadBody:
    i = draw(st.integers(0, len(body["items"]) - 1))
    name = draw(st.text(min_size=1, max_size=40) | st.sampled_from(["Креативностьь", "facts__999", "creativity__0", "Poetry writing"]))
    if draw(st.booleans()):
        if _is_task_type(name):
            name += " (no such task)"
        body["items"][i]["task_type"] = name
        return BadBody(_dump(body), f"items[{i}].task_type", "unknown task type")
    if _resolves(name):
        name += " (no such criterion)"
    j = draw(st.integers(0, len(body["items"][i]["criteria"]) - 1))
    body["items"][i]["criteria"][j] = name
    return BadBody(_dump(body), f"items[{i}].criteria[{j}]", "unknown criterion")


@st.composite
def _wrong_model(draw, body: dict) -> BadBody:
    # "" names no model (the served one, as vLLM reads it), so it is no wrong model.
    body["model"] = draw(st.text(min_size=1, max_size=30).filter(lambda s: s != SERVED_MODEL))
    return BadBody(_dump(body), "model", "unknown model", status=404, live_only=True)


#: The ways to break a body, by name.
BREAKERS = {
    "wrong type": _wrong_type,
    "item or criterion of a wrong type": _item_or_criterion_type,
    "out of range": _out_of_range,
    "bad custom criterion": _bad_custom_criterion,
    "missing field": _missing,
    "extra field": _extra,
    "item field beside items": _inline_and_items,
    "huge string": _huge,
    "deep nesting": _deep,
    "long integer": _long_number,
    "invalid UTF-8 bytes": _invalid_utf8,
    "lone surrogate": _lone_surrogate,
    "not JSON": _not_json,
    "unknown criterion or task": _unknown_names,
    "unknown model": _wrong_model,
}


@st.composite
def bad_bodies(draw, way: str | None = None) -> BadBody:
    """A valid body broken in exactly one place, in the ``way`` named (a key of ``BREAKERS``), or any way."""
    body = draw(valid_bodies())
    breaker = BREAKERS[way] if way else draw(st.sampled_from(list(BREAKERS.values())))
    return draw(breaker(body))
