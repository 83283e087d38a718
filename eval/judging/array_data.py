"""An eval array's data as the record loader reads it, for slurm/eval.sbatch: its rows given twice, its records
counted, and a task's block of them cut.

eval.sbatch runs it with the interpreter beside ``judge-eval`` (``python -m eval.judging.array_data``), so
the rules are the loader's own (``JudgeRecord.from_row``, ``judge.records.same_content``, the blank line of
``judge.record_sources.jsonl_rows``), not a copy of them:

* ``repeats DATA``: rows whose loader id (``JudgeRecord.from_row``: the row's ``id`` as text, ``5`` and ``"5"``
  alike, or its ``content_id`` when the file's rows have none) an earlier row has. Each task loads its own block, so
  a row in two blocks is judged twice and the merge refuses the shards as overlapping. A line the loader refuses is
  left to ``judge-eval``, which names it. Exit 3 with one line naming them, 0 when none. Before them, and found in
  the same pass, records with an ``id`` field beside records without one: the loader decides from a file's first
  row whether it derives the ids its rows lack (``"id" not in row``), and each task loads only its block, whose
  first row decides alone, so a block starting with an id field refuses the rows without one after it, and one
  starting without judges rows the whole file's run refuses. Exit 4 with one line naming a record of each.
* ``count DATA``: the records, a line blank by the loader's rule (nothing but whitespace once decoded,
  ``str.strip``: U+00A0, U+3000, ``\\x1c`` too) is none.
* ``check DATA``: ``repeats``, and where it finds nothing (exit 0) ``count``'s number, from its one pass over the
  data: what eval.sbatch asks before each task's cut, in one interpreter start.
* ``cut DATA FIRST LAST``: records FIRST..LAST (1-based) to standard output, their bytes as the file holds them.
* ``overwrite CONFIG``: ``yes`` or ``no``, the ``overwrite`` of a ``judge-eval run`` config as ``judge-eval run``
  reads it (``eval.judging.config.RunConfig`` through ``judge.plumbing.config_files.resolve_config``). A config it
  refuses: exit 2 with its reason, so the array stops before it re-cuts the shards of an earlier one.

A wrong call (no command, an unknown one, missing operands, a FIRST or LAST that is no whole number) is one line
naming it, with the usage, and exit 2; ``--help`` prints the usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterator

from judge.plumbing.json_reading import JSON_REFUSALS, UTF8_BOM
from judge.records import JudgeRecord, LineIndex, RecordError, gives_no_id, row_place, same_content

__all__ = ["is_blank", "record_lines", "repeated_rows", "surveyed", "main"]

#: A shown id's length at most: an id is the user's text, and the message is one line.
_ID_SHOWN = 100


def is_blank(raw: bytes) -> bool:
    """Whether a line is no record to the loader: nothing but whitespace once decoded (``str.strip``)."""
    return not raw.decode("utf-8", "replace").strip()


def record_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(the 0-based line number, the line's bytes) of each line that is a record to the loader."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle):
            if not is_blank(raw.removeprefix(UTF8_BOM) if number == 0 else raw):
                yield number, raw


def repeated_rows(path: Path) -> tuple[list[str], int, str | None]:
    """``surveyed``'s first three: the repeated rows, how many, the mix of rows with and without an id field."""
    found, total, mixed, _ = surveyed(path)
    return found, total, mixed


def surveyed(path: Path) -> tuple[list[str], int, str | None, int]:
    """The rows of ``path`` whose loader id an earlier row has, each as "line 3 = line 1" (the same row again) or
    "line 3 repeats the id '...' of line 1 with other content"; the first 5, and how many in all. Third, from the
    same pass: where ``path`` holds records with an ``id`` field (the loader's own first-row test, ``"id" in row``)
    and records without one, the first record and the first of the other kind, as "line 1 has no id field, line 3
    has one"; None when every record has the field, or none has. A record counts when the loader reads it once its
    missing id is derived; the others are left to ``judge-eval``, which names them. Fourth, from the same pass:
    the records (``record_lines``), as ``count`` counts them."""
    found: list[str] = []
    total = records = 0
    first: dict[str, JudgeRecord] = {}
    first_of_kind: dict[bool, int] = {}
    derive = None
    for number, raw in record_lines(path):
        records += 1
        try:
            row = json.loads(raw.removeprefix(UTF8_BOM) if number == 0 else raw)
        except JSON_REFUSALS:
            continue  # judge-eval names a line it cannot read
        if derive is None:  # the loader derives every id when its first row has no id key
            derive = isinstance(row, dict) and "id" not in row
        if not isinstance(row, dict):
            continue
        has_id = "id" in row
        try:
            # a row without the key is read with its id derived even where the file derives none: loadable so, it is
            # one of the mix, which is refused before its id matters
            record = JudgeRecord.from_row(row, source=str(path), index=LineIndex(number),
                                          make_id=derive or not has_id)
        except (RecordError, RecursionError):
            continue
        first_of_kind.setdefault(has_id, number)
        earlier = first.setdefault(record.id, record)
        if earlier is record:
            continue
        total += 1
        if len(found) < 5:
            here, there = row_place(LineIndex(number)), row_place(earlier.origin[1])
            if same_content(record, earlier):
                found.append(f"{here} = {there}")
            else:
                shown = record.id if len(record.id) <= _ID_SHOWN else record.id[:_ID_SHOWN] + "..."
                named = "the content id" if gives_no_id(row.get("id")) else "the id"
                found.append(f"{here} repeats {named} {shown!r} of {there} with other content")
    return found, total, _mixed(first_of_kind), records


def _mixed(first_of_kind: dict[bool, int]) -> str | None:
    """"line 1 has no id field, line 3 has one" from the first record line of each kind (True: with the field), in
    the file's order; None with one kind or none."""
    if len(first_of_kind) < 2:
        return None
    (first_has, first), (_, other) = sorted(first_of_kind.items(), key=lambda kind: kind[1])
    return (f"{row_place(LineIndex(first))} {'has an id field' if first_has else 'has no id field'}, "
            f"{row_place(LineIndex(other))} {'has none' if first_has else 'has one'}")


#: Each command's operands, as the usage line names them.
_OPERANDS = {"repeats": "DATA", "count": "DATA", "check": "DATA", "cut": "DATA FIRST LAST", "overwrite": "CONFIG"}
_USAGE = ("usage: python -m eval.judging.array_data {"
          + " | ".join(f"{command} {operands}" for command, operands in _OPERANDS.items()) + "}")


def _refused(reason: str) -> int:
    """A wrong call: one line naming what is wrong, then the usage; exit code 2."""
    print(f"eval.judging.array_data: {reason}; {_USAGE}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(_USAGE)
        return 0
    if not args:
        return _refused("no command")
    if args[0] not in _OPERANDS:
        return _refused(f"unknown command {args[0]!r}")
    if len(args) != 1 + len(_OPERANDS[args[0]].split()):
        return _refused(f"{args[0]} takes {_OPERANDS[args[0]]}")
    command, path = args[0], Path(args[1])
    if command == "cut" and not all(bound.isdecimal() for bound in args[2:4]):
        return _refused(f"cut: FIRST and LAST are whole numbers, not {args[2]!r} and {args[3]!r}")
    if command in ("repeats", "check"):
        found, total, mixed, records = surveyed(path)
        if mixed is not None:
            print(mixed)
            return 4
        if not found:
            if command == "check":
                print(records)
            return 0
        more = f" and {total - len(found)} more" if total > len(found) else ""
        print("; ".join(found) + more)
        return 3
    if command == "count":
        print(sum(1 for _ in record_lines(path)))
        return 0
    if command == "cut":
        first, last = int(args[2]), int(args[3])
        out = sys.stdout.buffer
        for n, (_, raw) in enumerate(record_lines(path), 1):
            if n > last:
                break
            if n >= first:
                out.write(raw if raw.endswith(b"\n") else raw + b"\n")
        return 0
    # overwrite, the one command left. Imported here: the others run on every task start and need neither the
    # config classes nor YAML.
    from eval.judging.config import RunConfig
    from judge.plumbing.config_files import ConfigError, resolve_config

    try:
        print("yes" if resolve_config(RunConfig, path, {}).overwrite else "no")
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
