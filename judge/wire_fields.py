"""The part of the wire contract that reads predictions and results without the request models: ``ScoreSource``
(where a score came from) and ``checked_json_fields``, the one strict reading of a dataclass from a JSON object.

``judge.wire`` re-exports both, beside the pydantic request types it holds; ``judge-eval score``, which reads
predictions rows and never builds a request, imports this module alone and so never imports pydantic.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from judge.plumbing.json_reading import finite_number, got_words, kind_words, shown_value, value_words

__all__ = ["ScoreSource", "checked_json_fields"]


def checked_json_fields(cls: type, data: Mapping[str, Any], where: str, *, noun: str = "field",
                        typed: bool = False) -> dict[str, Any]:
    """The values a JSON object gives for the fields of dataclass ``cls``, its keys checked strictly.

    A key that is not a field is refused; a field without a default is required, and null counts as missing
    unless the field's type admits None. Fields absent from ``data`` are left out (the dataclass's defaults
    apply); values are not converted (each ``from_json`` does what its type needs).

    Args:
        cls: the dataclass read (``JudgeResult``, ``eval.judging.predictions.PredictionRow``).
        data: the JSON object.
        where: names the object in errors (``"/v1/judge results[3]"``, ``"predictions.jsonl: row 7"``).
        noun: what an unknown key is called in the error (``"prediction field"``).
        typed: also check each value against its field's type (``_fits``: text, integers, numbers, booleans,
            lists of integers, objects; a nested dataclass's field only as an object, read by its own ``from_json``),
            so that a server's ``"score": "4"`` is an error naming the field, not a string scored downstream.

    Raises:
        ValueError: ``{where}: unknown {noun}(s) [...]; known: ...``, ``{where}.{name}: required field is missing``
            or, when ``typed``, ``{where}.{name}: expected ..., got ...`` (a number field's NaN or infinity: ``expected
            a finite number``; a count's negative value: ``expected a count``).
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a JSON object, got {value_words(data)}")
    names, required = _field_rules(cls)
    unknown = sorted(set(data) - set(names), key=str)  # a Python caller's keys may be of mixed types
    if unknown:
        raise ValueError(f"{where}: unknown {noun}(s) {unknown}; known: {', '.join(names)}")
    for name, nullable in required:
        if name not in data or (data[name] is None and not nullable):
            raise ValueError(f"{where}.{name}: required field is missing")
    values = {name: data[name] for name in names if name in data}
    if typed:
        checks = _type_checks(cls)
        for name, value in values.items():
            fits, hint, count = checks[name]
            if not fits(value):
                raise _misfit(value, hint, f"{where}.{name}", count)
    return values


@functools.cache
def _type_checks(cls: type) -> dict[str, tuple[Callable[[Any], bool], Any, bool]]:
    """Each field of ``cls`` -> (whether a JSON value fits its type, the type, whether it is a count): built once per
    class, as results are read by the thousand per second; ``_misfit`` explains a value that does not fit."""
    hints = typing.get_type_hints(cls)
    checks = {}
    for f in dataclasses.fields(cls):
        fits, count = _fits(hints[f.name]), bool(f.metadata.get("count"))
        if count:
            fits = (lambda v, fits=fits: fits(v) and (v is None or v >= 0))
        checks[f.name] = (fits, hints[f.name], count)
    return checks


def _options(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _fits(hint: Any) -> Callable[[Any], bool]:
    """Whether a JSON value fits ``hint`` (the hints of the response dataclasses: text, integers, numbers, booleans,
    lists and objects of those, nested dataclasses as objects, unions with null; anything else is not checked)."""
    fits: list[Callable[[Any], bool]] = []
    for option in _options(hint):
        origin = typing.get_origin(option) or option
        if option is type(None):
            fits.append(lambda v: v is None)
        elif option is bool:
            fits.append(lambda v: v.__class__ is bool)
        elif option is int:
            fits.append(lambda v: isinstance(v, int) and v.__class__ is not bool)
        elif option is float:
            # finite: Python's json reads NaN and Infinity (a server's own json.dumps writes them), and a NaN score
            # would go into predictions, to be refused only when read back, far from the server that sent it
            fits.append(finite_number)
        elif option is str:
            fits.append(lambda v: isinstance(v, str))
        elif origin is list:
            args = typing.get_args(option)
            element = _fits(args[0]) if args else None
            fits.append(lambda v, e=element: isinstance(v, list) and (e is None or all(map(e, v))))
        elif origin is dict or dataclasses.is_dataclass(option):
            args = typing.get_args(option) if origin is dict else ()
            element = _fits(args[1]) if args else None
            fits.append(lambda v, e=element: isinstance(v, Mapping) and (e is None or all(map(e, v.values()))))
        else:  # Any, Literal[...] and the like
            return lambda v: True
    return fits[0] if len(fits) == 1 else lambda v: any(fit(v) for fit in fits)


def _misfit(value: Any, hint: Any, where: str, count: bool = False) -> ValueError:
    """The error naming where inside ``value`` it stops fitting ``hint`` (the element of a list or object, if one);
    ``count``: the field is a count (its metadata's ``count``)."""
    number = isinstance(value, (int, float)) and value.__class__ is not bool
    if number and float in _options(hint):
        return ValueError(f"{where}: expected a finite number, got {shown_value(value)}")
    if count and number and isinstance(value, int) and value < 0:
        return ValueError(f"{where}: expected a count (an integer of at least 0), got {shown_value(value)}")
    for option in _options(hint):
        origin = typing.get_origin(option) or option
        args = typing.get_args(option)
        if origin is list and isinstance(value, list) and args:
            for k, element in enumerate(value):
                if not _fits(args[0])(element):
                    return _misfit(element, args[0], f"{where}[{k}]")
        if origin is dict and isinstance(value, Mapping) and args:
            for key, element in value.items():
                if not _fits(args[1])(element):
                    return _misfit(element, args[1], f"{where}[{key!r}]")
    # a nested dataclass is read from an object; list[int] is a list, as whoever wrote the JSON sees them
    kinds = tuple(dict.fromkeys(dict if dataclasses.is_dataclass(o) else typing.get_origin(o) or o
                                for o in _options(hint)))  # fmt: skip
    return ValueError(f"{where}: expected {kind_words(kinds)}, got {got_words(value)}")


@functools.cache
def _field_rules(cls: type) -> tuple[tuple[str, ...], tuple[tuple[str, bool], ...]]:
    """``cls``'s field names in order, and each field without a default with whether its type admits None."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    required = tuple(
        (f.name, type(None) in typing.get_args(hints[f.name]))
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    return tuple(f.name for f in fields), required


class ScoreSource:
    """Where a score came from: stable strings written to results and predictions rows."""

    #: the judge's own ``[RESULT] n`` (seq2seq judges), read by ``judge.parse_verdict``.
    VERDICT = "verdict"
    #: a regression judge's ``score`` head over (prompt, rationale), clipped into the scale.
    REGRESSION_HEAD = "regression_head"
    ALL = (VERDICT, REGRESSION_HEAD)
