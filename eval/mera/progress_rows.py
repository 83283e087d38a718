"""A run folder's saved progress read back to resume: each row checked for the fields the resuming run reads.

A progress file (ruHumanEval's ``generations.jsonl``, ruTiE's ``answers.jsonl``) is a ``judge.plumbing.journal``
journal, whose reader checks only that each line is a JSON object. A row this program never wrote (edited by hand,
another tool's) may lack a field the run then reads: here it is refused as a resume mismatch naming the file, line
and field (``judge-eval mera`` exits 2), never a ``KeyError`` deep in the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judge.records import kind_words, value_words


def progress_field(row: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, *,
                   optional: bool = False) -> Any:
    """``row[key]`` of a run folder's progress row read to resume (``generations.jsonl``, ruTiE's
    ``answers.jsonl``); ``None`` for an ``optional`` field the row leaves out.

    Raises:
        judge.plumbing.run_folder.ResumeMismatch: the field is missing or of another kind, naming ``where`` (the
            file and line) and the field: a row this program never wrote (edited by hand, another tool's), which a
            resume cannot read.
    """
    if key not in row:
        if optional:
            return None
        raise progress_row_refused(where, key, "is missing")
    value, kinds = row[key], kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    raise progress_row_refused(where, key, f"should be {kind_words(kind)}, got {value_words(value)}")


def progress_row_refused(where: str, key: str, problem: str) -> Exception:
    """The ``ResumeMismatch`` for a progress row whose field ``key`` a resume cannot read (``progress_field``)."""
    from judge.plumbing.run_folder import ResumeMismatch

    return ResumeMismatch(f"{where}: field {key!r} {problem}: not a row this command writes, so the run cannot "
                          "resume from it; use a fresh --out, or --overwrite to start over")


def resumed_generations(path: Path, n: int) -> dict[str, dict[str, Any]]:
    """The tasks a run folder's ``generations.jsonl`` already holds, by task id, each row checked for the fields a
    resume reads (``task_id``; ``completions``, a list of ``n`` strings, the run's samples per task; ``n_missing``
    and ``sample_failures`` within it). A torn last line is cut first (``judge.plumbing.journal.open_journal``), as
    before any append.

    Raises:
        judge.plumbing.run_folder.ResumeMismatch: a row without one of them, with one of another kind, or with other
            than ``n`` completions (pass@k would be taken over another n, or left without a value), naming the file,
            line and field.
        judge.plumbing.journal.JournalError: a line that is not a JSON object.
    """
    from judge.plumbing.journal import iter_journal_lines, open_journal

    open_journal(path)
    done: dict[str, dict[str, Any]] = {}
    for number, rec in iter_journal_lines(path, quiet=True):
        where = f"{path}:{number}"
        task_id = progress_field(rec, "task_id", str, where)
        completions = progress_field(rec, "completions", list, where)
        odd = next((c for c in completions if not isinstance(c, str)), "")
        if not isinstance(odd, str):
            raise progress_row_refused(where, "completions", f"should be a list of strings, holds {value_words(odd)}")
        if len(completions) != n:
            raise progress_row_refused(where, "completions", f"holds {len(completions)} completions, not the run's n "
                                                             f"of {n}")  # fmt: skip
        n_missing = progress_field(rec, "n_missing", int, where, optional=True)
        if n_missing is not None and not 0 <= n_missing <= len(completions):
            raise progress_row_refused(where, "n_missing", f"should be from 0 to {len(completions)} (the completions), "
                                                           f"got {n_missing}")  # fmt: skip
        failures = progress_field(rec, "sample_failures", list, where, optional=True)
        if failures is not None and (len(failures) != len(completions)
                                     or not all(f is None or isinstance(f, str) for f in failures)):
            raise progress_row_refused(where, "sample_failures", f"should be a list of {len(completions)} strings or "
                                                                 "nulls, one per completion")  # fmt: skip
        done[task_id] = rec
    return done
