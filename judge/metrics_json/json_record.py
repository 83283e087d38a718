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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, field, fields
from typing import Any, ClassVar, NamedTuple

__all__ = ["JsonRecord", "JsonRecordError", "extra_field", "json_value", "optional_field", "read_record"]


class JsonRecordError(ValueError):
    """A JSON file that is not the record it should be; the message names the file and the field."""


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


def optional_field(**kwargs) -> Any:
    """A key some objects of the type do not carry: None in memory, left out of the file."""
    return field(default=None, metadata={"optional": True}, **kwargs)


def extra_field() -> Any:
    """The keys of a file written by a later version (module docstring)."""
    return field(default_factory=dict, metadata={"extra": True})


def read_record(cls, data: Mapping[str, Any], *, where: str = "a JSON file",
                by_type: Mapping[str, Callable[[Any], Any]] | None = None, **readers: Callable[[Any], Any]) -> Any:
    """``cls`` from a JSON object: each field read by its reader (given here, else the one its annotation names in
    ``by_type``, else as it is); an absent field with a default takes it (optional ones None).

    Raises:
        JsonRecordError: a required key is missing, ``data`` is not an object, or a field with a reader (a number,
            an interval, a nested record or table) holds what it cannot read (``where`` and the field named). A
            field without one (an integer count, a string) is taken as it is.
    """
    if not isinstance(data, Mapping):
        raise JsonRecordError(f"{where}: {cls.__name__} should be a JSON object, not {type(data).__name__}")
    by_type = by_type or {}
    plan, names = _plan(cls)
    values: dict[str, Any] = {}
    for f in plan:
        if f.kind == "extra":
            values[f.name] = {k: v for k, v in data.items() if k not in names}
            continue
        if f.name not in data:
            if not f.required:
                continue
            raise JsonRecordError(f"{where}: {cls.__name__} has no {f.name!r}")
        reader = readers.get(f.name) or by_type.get(f.type)
        try:
            values[f.name] = reader(data[f.name]) if reader else data[f.name]
        except JsonRecordError:
            raise
        except (TypeError, AttributeError, ValueError, OverflowError) as err:  # a number for a table, "x" or 1e999
            # as a number: the field's reader cannot read it
            raise JsonRecordError(f"{where}: {cls.__name__}.{f.name} is not readable ({err})") from err
    return cls(**values)
