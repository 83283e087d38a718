"""Typed JSON files written key for key: the base of the types of ``metrics.json`` (``judge.metrics_json.metrics``, its
validity section ``judge.metrics_json.validity``) and of ``compare.json`` (``eval.scoring.comparison``).

A record is a frozen dataclass whose fields are the JSON object's keys in the file's order. Three kinds of field:

- a plain field, always written (``None`` as null);
- an ``optional_field``, left out of the file when it is None — a key that some objects of the type do not carry
  (written before it existed, or not computed for that kind of cell); never one that may be a present null;
- the ``extra_field``: keys of a file written by a later version, kept as they are and written after the others.
  The types a later version is likely to grow declare one (a metrics cell, a split, the file itself), so that reading
  and writing such a file keeps those keys; a type without one reads a key it does not know and drops it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, field, fields
from typing import Any, ClassVar, NamedTuple

from judge.plumbing.json_reading import got_words, shown_value, value_words

__all__ = ["COUNT_READERS", "MAX_COUNT", "PLAIN_NUMBER_READERS", "JsonRecord", "JsonRecordError", "count",
           "extra_field", "got_words", "json_value", "keyed", "listed", "optional_field", "plain_number",
           "plain_number_or_none", "read_record", "shown_value"]


class JsonRecordError(ValueError):
    """A JSON file that is not the record it should be; the message names the file and the field.

    Attributes:
        where: the file (``metrics.json``); problem: what is wrong, with the record type and its field.
        path: the keys from the file's top to the value at fault (``("splits", "all", "overall", "mae")``), as far
            as the readers know them: each record read adds its field, ``keyed`` and ``listed`` the label or index.
            A caller that knows which file of which run it read says ``field`` with it: the record type alone
            (``Cell.mae``) does not tell which of a file's many cells holds the bad value.
    """

    def __init__(self, where: str, problem: str, path: tuple[str, ...] = ()):
        super().__init__(f"{where}: {problem}")
        self.where, self.problem, self.path = where, problem, path

    def __reduce__(self):  # rebuilt from its three parts: args holds only the message, which __init__ cannot take
        return type(self), (self.where, self.problem, self.path)

    @property
    def field(self) -> str:
        """``path`` as one dotted name ("" for the file's top)."""
        return ".".join(self.path)

    def under(self, key: Any) -> JsonRecordError:
        """The same error one level down: ``key`` (a field, a label, an index) before its path."""
        return JsonRecordError(self.where, self.problem, (str(key), *self.path))


def json_value(value: Any) -> Any:
    """``value`` as JSON data: records by their ``to_json``, other dataclasses by their fields, tuples as lists."""
    if value is None or isinstance(value, (str, int, float)):  # most values: checked first
        return value
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


class _Field(NamedTuple):
    name: str
    kind: str  # "plain", "optional" or "extra"
    required: bool  # no default: the file must carry it
    type: str  # the annotation, as written


@functools.cache
def _plan(cls) -> tuple[tuple[_Field, ...], frozenset[str]]:
    """A record type's fields as reading and writing need them, and their names (worked out once per type)."""
    plan = tuple(_Field(f.name, "extra" if f.metadata.get("extra") else "optional" if f.metadata.get("optional")
                        else "plain", f.default is MISSING and f.default_factory is MISSING, str(f.type))
                 for f in fields(cls))
    return plan, frozenset(f.name for f in plan)


class JsonRecord:
    """Fields written in declaration order (module docstring)."""

    def items(self) -> Iterator[tuple[str, Any]]:
        """(name, value) of what this object carries, in the file's order."""
        for f in _plan(type(self))[0]:
            value = getattr(self, f.name)
            if f.kind == "extra":
                yield from value.items()
            elif value is not None or f.kind != "optional":
                yield f.name, value

    def to_json(self) -> dict[str, Any]:
        return {name: json_value(value) for name, value in self.items()}

    #: The file named in errors, and the readers that follow from a field's annotation (``read_record``).
    json_where: ClassVar[str] = "a JSON file"
    json_by_type: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Any:
        """Read from a JSON object, each field as its annotation says; a type with nested records overrides this
        with their readers."""
        return read_record(cls, data, where=cls.json_where, by_type=cls.json_by_type)


#: The largest whole number ``count`` reads: float64's largest finite value, rounded down to an integer.
MAX_COUNT = int(sys.float_info.max)


def count(value: Any) -> int:
    """A whole number read from JSON (a count, a seed, a number of resamples), all of them 0 or more: a string, a
    fraction, a boolean or a negative refused here, naming the field, where each failed far from the file (a
    ``"40"`` added to a count, a seed of ``"1"`` or 50.5 repeats as numpy's and range's TypeErrors)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a whole number, got {got_words(value)}")
    if value < 0:
        raise ValueError(f"expected a whole number of 0 or more, got {shown_value(value)}")
    if value > MAX_COUNT:  # the reports divide and format counts as floats: 10**400 was an OverflowError there
        raise ValueError(f"expected a whole number a float holds (up to about 1.8e308), got {shown_value(value)}")
    return value


def count_or_none(value: Any) -> int | None:
    """``count``, or None for a null (a count the writer did not have)."""
    return None if value is None else count(value)


#: The readers of a count field by its annotation (``JsonRecord.json_by_type``): metrics.json's and compare.json's.
COUNT_READERS: Mapping[str, Callable[[Any], Any]] = {"int": count, "int | None": count_or_none}


def plain_number(value: Any) -> int | float:
    """A number read from JSON as it is written (an integer stays one, so the file writes back the same bytes), if a
    float holds it: a string, a list, a boolean or 10**400 refused here, naming the field, where each failed in a
    report's number format (a TypeError, an OverflowError, or "Unknown format code" naming nothing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {got_words(value)}")
    try:
        infinite = math.isinf(value)  # NaN passes: a library caller's undefined figure, null in the file
    except OverflowError:  # an integer past float's range
        infinite = True
    if infinite:
        raise ValueError(f"expected a finite number a float holds, got {shown_value(value)}")
    return value


def plain_number_or_none(value: Any) -> int | float | None:
    """``plain_number``, or None (a figure the writer did not have)."""
    return None if value is None else plain_number(value)


#: ``COUNT_READERS`` and readers of numbers that keep JSON's null as None (the validity section's).
PLAIN_NUMBER_READERS: Mapping[str, Callable[[Any], Any]] = {**COUNT_READERS, "float": plain_number,
                                                            "float | None": plain_number_or_none}


def optional_field(**kwargs) -> Any:
    """A key some objects of the type do not carry: None in memory, left out of the file."""
    return field(default=None, metadata={"optional": True}, **kwargs)


def extra_field() -> Any:
    """The keys of a file written by a later version (module docstring)."""
    return field(default_factory=dict, metadata={"extra": True})


def read_record(cls, data: Mapping[str, Any], /, *, where: str = "a JSON file",
                by_type: Mapping[str, Callable[[Any], Any]] | None = None, **readers: Callable[[Any], Any]) -> Any:
    """``cls`` from a JSON object: each field read by its reader (given here, else the one its annotation names in
    ``by_type``, else as it is); an absent field with a default takes it (optional ones None).

    Raises:
        JsonRecordError: a required key is missing, ``data`` is not an object, or a field with a reader (a number,
            an interval, a nested record or table; in metrics.json and compare.json also a count, checked as a
            whole number) holds what it cannot read (``where`` and the field named). A field without one (a
            string) is taken as it is.
    """
    if not isinstance(data, Mapping):
        raise JsonRecordError(where, f"{cls.__name__} should be a JSON object, not {value_words(data)}")
    by_type = by_type or {}
    plan, names = _plan(cls)
    values: dict[str, Any] = {}
    for f in plan:
        if f.kind == "extra":
            # a later key named like the holder itself ("extra") is one of them too, not the holder
            values[f.name] = {k: v for k, v in data.items() if k not in names or k == f.name}
            continue
        if f.name not in data:
            if not f.required:
                continue
            raise JsonRecordError(where, f"{cls.__name__} has no {f.name!r}", (f.name,))
        reader = readers.get(f.name) or by_type.get(f.type)
        try:
            values[f.name] = reader(data[f.name]) if reader else data[f.name]
        except JsonRecordError as err:  # a nested record's: its path goes on from this field
            raise err.under(f.name) from err
        except (TypeError, AttributeError, ValueError, OverflowError) as err:  # a number for a table, "x" or 1e999
            # as a number: the field's reader cannot read it
            raise JsonRecordError(where, f"{cls.__name__}.{f.name} is not readable ({err})", (f.name,)) from err
    return cls(**values)


def keyed(reader: Callable[[Any], Any]) -> Callable[[Any], dict[str, Any]]:
    """A reader of a JSON object of records or values (label -> record), each read by ``reader``; an error's path
    names the label (a table of cells by model: which model's cell), and a plain value's error (a count's) starts
    with it."""
    def read(rows: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(rows, Mapping):  # an integer was "'int' object has no attribute 'items'"
            raise TypeError(f"expected an object, got {got_words(rows)}")
        out = {}
        for label, row in rows.items():
            try:
                out[label] = reader(row)
            except JsonRecordError as err:
                raise err.under(label) from err
            except (TypeError, ValueError) as err:  # a plain value's reader: its error says which one
                raise type(err)(f"{label!r}: {err}") from None
        return out

    return read


def listed(reader: Callable[[Any], Any]) -> Callable[[Any], list[Any]]:
    """A reader of a JSON list of records or values, each read by ``reader``; an error's path names the index (from
    0), and a plain value's error (a number's) starts with "item <index>"."""
    def read(rows: list[Any]) -> list[Any]:
        if not isinstance(rows, list):  # an object would be read as the list of its keys, a string as its letters
            raise TypeError(f"expected a list, got {got_words(rows)}")
        out = []
        for index, row in enumerate(rows):
            try:
                out.append(reader(row))
            except JsonRecordError as err:
                raise err.under(index) from err
            except (TypeError, ValueError) as err:  # a plain value's reader: its error says which one
                raise type(err)(f"item {index}: {err}") from None
        return out

    return read
