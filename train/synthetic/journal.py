"""Resumable stages: a job journal, a concurrent job runner, and the stage's outputs.

Every stage writes one folder::

    journal.jsonl   one line per finished job (appended as jobs finish; a rerun skips the keys it finds here, but
                    asks again a job whose request failed: the endpoint's outage is not the job's answer; and one
                    its stage asks again, as traces does an answer cut by a lower max_tokens than the rerun's; the
                    newest row of a job asked again replaces the older ones in the file once they are half of it)
    <stage>.jsonl   the kept rows
    dropped.jsonl   the dropped rows, each with its ``drop_reason``
    dataset/        the kept rows as a ``datasets`` folder (a column of mixed types as text); absent when none is kept
    summary.json    kept / dropped counts with reasons
    run.json        provenance (judge.plumbing.provenance): resolved config, git revision, package versions, seed

Every output but the journal is replaced whole (written aside, then renamed over the old one): a rerun killed while
writing leaves each file whole, the earlier run's or its own, never cut; and a rerun that keeps nothing leaves no
``dataset/`` of the earlier run's rows behind (it is removed, and said).

A stage's JSONL input is read a line at a time, and a line over ``MAX_LINE_BYTES`` (4 MiB) is refused by file and
line before it is parsed.

A stage killed halfway loses at most the jobs in flight; the journal's last line may be cut, and is dropped (and
said). Any other line that is not JSON is an error naming ``file:line``, never skipped. Ctrl-C stops a stage: the jobs
not started are cancelled, and those in flight finish and are journalled before it exits.

Why one module of ~570 lines: the journal, the job runner that appends to it, the input readers and checks every
stage runs before its first job, and the output writer are one stage's life from its input to its folder; every
stage takes all of them, and a split would only move the folder layout above away from the code that writes it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from judge.plumbing.invisible_text import is_blank
from judge.plumbing.journal import (JournalError, JournalWriter, RepeatedKeyError, iter_journal_lines,
                                    loads_without_repeats, open_journal, rewrite_journal)
from judge.plumbing.json_reading import JSON_REFUSALS, UTF8_BOM, unreadable_json, value_words

__all__ = ["Journal", "InputRows", "run_jobs", "request_failed", "refused_request", "REFUSED_PREFIX", "answered_oversized",
           "write_stage_outputs",
           "read_input", "read_rows", "holds_no_rows", "require_fields", "NOT_BLANK", "MAX_LINE_BYTES", "refuse_later_stage_rows", "STAGE_ROW_MARKS",
           "log"]


def log(message: str) -> None:
    """Progress lines go to stderr, leaving stdout for the summary."""
    print(message, file=sys.stderr, flush=True)


class Journal:
    """Finished jobs keyed by ``row["key"]``: a ``judge.plumbing.journal`` journal (strict reading, a torn last line dropped
    and cut from the file so its job is redone, fsynced appends). ``compact`` keeps only the newest row of each job in
    the file once older rows are half of it, so reruns that ask jobs again do not grow it without bound."""

    def __init__(self, path: Path):
        """Read the journal at ``path`` (created on the first append).

        Raises:
            JournalError: a line that is not a JSON object, or a row without a text ``key`` (a hand-made or foreign
                row, which no job could be matched to), naming ``file:line`` and the field.
        """
        self.path = Path(path)
        rows = open_journal(self.path).rows
        if not all(isinstance(row.get("key"), str) for row in rows):
            _refuse_keyless_row(self.path)
        self.rows: dict[str, dict] = {row["key"]: row for row in rows}
        self._lines = len(rows)
        self._writer = JournalWriter(self.path)
        self._lock = threading.Lock()
        self.compact()  # a run killed before its own compact left its older rows

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def add(self, row: dict) -> None:
        with self._lock:
            self._writer.append(row)
            self.rows[row["key"]] = row
            self._lines += 1

    def compact(self) -> None:
        """Rewrite the file (whole, atomically) with only the newest row of each job, once at least half its rows are
        older ones.

        A job asked again appends its new row, and only the newest row of a key is ever read; each rerun while an
        endpoint stays down journals its not-sent jobs again, so without this the file would grow by a stage's jobs
        per rerun. Half, not any: a stage that runs its jobs in waves (dedup) compacts at the end of each, and a
        rewrite of the whole file for one job asked again would cost more than the row it drops."""
        with self._lock:
            older = self._lines - len(self.rows)
            if older and older >= len(self.rows):
                rewrite_journal(self.path, self.rows.values())
                self._lines = len(self.rows)
                log(f"{self.path}: {older} rows of earlier attempts at jobs asked again are dropped from it; the "
                    "newest row of each job is kept")


def _refuse_keyless_row(path: Path) -> None:
    """Raise ``JournalError`` naming the first row of ``path`` whose ``key`` is missing or not text (its line found
    by a second, quiet pass: the first one kept no line numbers, and reading them costs only when a row is bad)."""
    for number, row in iter_journal_lines(path, quiet=True):
        key = row.get("key")
        if not isinstance(key, str):
            problem = "missing" if key is None else f"is {value_words(key)}, not a string"
            raise JournalError(f"{path}:{number}: field 'key' {problem}: every journal row names its job; remove the "
                               "row, or rerun with --overwrite to discard the journal")


def request_failed(row: dict) -> bool:
    """Whether a journalled job failed for want of an answer (the endpoint never answered after its retries): such a
    job is asked again when the stage runs again, where one the endpoint answered, however badly, is final. Every
    stage journals ``ok: False`` for that; annotate also for a verdict it could not use (``error: verdict_...``),
    which is the teacher's answer, traces for a refused request (``error: refused_<status>``, which the traces
    stage asks again itself: ``train.synthetic.traces.REFUSED_STATUSES``), and every stage for an answer the client
    refused as oversized (``answered_oversized``), which the endpoint did give.

    A row journalled as answered whose answer is not text (a list of content parts, an object) failed too: the
    client joins text parts and fails anything else, so asking again gives the row it journals now.
    """
    if row.get("ok") is True:
        text = next((name for name in _TEXT_FIELDS if name in row), None)
        return text is not None and not isinstance(row[text], str)
    # A row with no "ok" (hand-made, or a foreign tool's) holds no answer this stage knows: asked again, as a failure.
    return not (str(row.get("error") or "").startswith("verdict_") or refused_request(row) or answered_oversized(row))


#: How a journalled row's ``error`` starts when the server refused the request (``refused_<status>: <message>``).
REFUSED_PREFIX = "refused_"


def refused_request(row: dict) -> bool:
    """Whether a journalled row is a request the server refused (``error: refused_<status>``): the traces stage
    journals it, counts it ``request_refused`` and asks it again on every rerun."""
    return str(row.get("error") or "").startswith(REFUSED_PREFIX)


def answered_oversized(row: dict) -> bool:
    """Whether a journalled job's answer was refused as longer than its request's ``max_tokens`` could have produced
    (``train.synthetic.client.longer_than_asked``: the client's error starts ``oversized``). The endpoint answered:
    final, counted by its stage as ``oversized``, never asked again as an outage would be."""
    return row.get("ok") is not True and str(row.get("error") or "").startswith("oversized")


#: Where a stage journals the endpoint's text, the first of these a row holds: traces ``content``, instructions and
#: the dedup check ``raw`` (whose ``answer`` is the check's parsed bool), answers ``answer``.
_TEXT_FIELDS = ("content", "raw", "answer")


def run_jobs(
    jobs: Iterable[tuple[str, Any]],
    work: Callable[[Any], dict],
    journal: Journal,
    concurrency: int,
    desc: str,
    fingerprint: Callable[[Any], str] | None = None,
    redo: Collection[str] = (),
    redo_why: str = "",
) -> int:
    """Run ``work(payload)`` for every job whose key is not in the journal, or whose journalled request failed
    (``request_failed``: a rerun after an outage recovers them; the newer row wins), or whose request would now be
    another (``fingerprint``), or that the stage asks again (``redo``), ``concurrency`` at a time.

    Args:
        jobs: (key, payload) pairs.
        work: returns the row to journal (its ``key`` is set here); it should not raise for endpoint failures.
        journal: where finished jobs go.
        concurrency: threads (requests in flight).
        desc: progress-bar label.
        fingerprint: what a job's request is made of (its prompt, as text): journalled with the row (``request_sha``,
            a SHA-256), and a journalled job whose request differs is asked again. A job's key names its place (an
            answer's id and a criterion), not its text: an earlier stage rerun with ``--overwrite`` into the same
            folder gives the same ids to new answers, and without this their old verdicts would be reused. A row
            journalled before this check (no ``request_sha``) is kept.
        redo: keys of journalled jobs the stage asks again by its own rule, as a failed request is asked again (the
            newer row wins): the traces stage's answers cut by a ``max_tokens`` lower than this run's.
        redo_why: what those jobs are, for the log line.

    Returns:
        The number of jobs run now (the rest were already in the journal).
    """
    from tqdm import tqdm

    import hashlib

    def sha(payload: Any) -> str | None:
        return hashlib.sha256(fingerprint(payload).encode("utf-8")).hexdigest() if fingerprint else None

    jobs = list(jobs)
    failed = [key for key, _ in jobs if key in journal and request_failed(journal.rows[key])]
    changed = [key for key, payload in jobs if key in journal and not request_failed(journal.rows[key])
               and journal.rows[key].get("request_sha", sha(payload)) != sha(payload)]
    redo = set(redo)
    asked_again = [key for key, _ in jobs if key in journal and key in redo]
    again = set(failed) | set(changed) | set(asked_again)
    todo = [(key, payload) for key, payload in jobs if key not in journal or key in again]
    if failed:
        log(f"{desc}: asking again the {len(failed)} jobs whose request failed on an earlier run")
    if changed:
        log(f"{desc}: asking again the {len(changed)} journalled jobs whose request is another now (their input "
            "changed since the journal was written)")
    if asked_again:
        log(f"{desc}: asking again the {len(asked_again)} journalled jobs {redo_why or 'the stage asks again'}")
    if len(todo) < len(jobs):  # a resumed stage: what it sends, not what it would send afresh
        log(f"{desc}: {len(jobs) - len(todo)} of {len(jobs)} jobs answered in the journal; {len(todo)} to ask")
    if not todo:
        return 0

    def one(key: str, payload: Any) -> None:
        row = work(payload)
        row["key"] = key
        if fingerprint is not None:
            row["request_sha"] = sha(payload)
        journal.add(row)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool, tqdm(total=len(todo), desc=desc, file=sys.stderr) as bar:
        try:
            futures = [pool.submit(one, key, payload) for key, payload in todo]
            for future in as_completed(futures):
                future.result()  # a bug in `work` stops the stage; finished jobs stay journalled
                bar.update(1)
        except BaseException:
            # Ctrl-C (or a bug in `work`): the pool's exit would otherwise run every queued job, each a paid request,
            # before the stage stopped. The jobs not started are cancelled; those in flight finish and are journalled
            # (the pool's exit waits for them), so the rerun asks only for what is missing.
            pool.shutdown(wait=False, cancel_futures=True)
            log(f"{desc}: stopping: the jobs not started are cancelled; waiting for those in flight to be journalled")
            raise
    journal.compact()
    return len(todo)


def write_stage_outputs(
    out_dir: Path, stage: str, kept: list[dict], dropped: list[dict], config: Any, extra: dict | None = None,
    splits: dict[str, list[dict]] | None = None, extra_files: dict[str, list[dict]] | None = None,
) -> dict:
    """Write the stage's kept/dropped rows, ``datasets`` folder, summary and run metadata.

    summary.json marks a finished set: the earlier one goes before any file is written and the new one after every
    file, so a stage killed (or failing) mid-write leaves no summary beside files of two runs.

    Args:
        dropped: rows with a ``drop_reason``.
        extra: more summary fields (timings, thresholds).
        splits: when given, ``dataset/`` is a ``DatasetDict`` of these splits and each is also ``<split>.jsonl``.
        extra_files: more JSONL files of the stage (file name -> rows), written before the summary.

    Returns:
        The summary: ``{"stage", "kept", "dropped", "dropped_by_reason", ...}``.
    """
    import datasets

    from judge import PROMPT_VERSION, PROMPT_VERSION_EN
    from judge.plumbing.provenance import write_private_text, write_provenance

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").unlink(missing_ok=True)
    if splits is not None:
        # Each file is replaced whole, but not the set: a rerun (another seed or fraction) killed between two files
        # would leave one run's train beside another's validation, sharing instructions. The earlier run's outputs go
        # first; a kill leaves files missing, never two partitions mixed.
        for name in (f"{stage}.jsonl", "dropped.jsonl", *(f"{name}.jsonl" for name in splits)):
            (out_dir / name).unlink(missing_ok=True)
        shutil.rmtree(out_dir / "dataset", ignore_errors=True)
    # Replaced whole (rewrite_journal: written aside, fsynced, renamed over): a rerun killed mid-write left a cut file
    # that the next stage read as the whole output.
    for name, rows in ((f"{stage}.jsonl", kept), ("dropped.jsonl", dropped), *(extra_files or {}).items()):
        rewrite_journal(out_dir / name, rows)
    if splits is not None:
        for name, rows in splits.items():
            rewrite_journal(out_dir / f"{name}.jsonl", rows)
        parts = _dataset_parts({f"{name}.jsonl": rows for name, rows in splits.items()}, stage)
        dataset = datasets.DatasetDict({name: part for name, part in zip(splits, parts) if part is not None}) or None
    else:
        (dataset,) = _dataset_parts({f"{stage}.jsonl": kept}, stage)
    _replace_dataset(out_dir / "dataset", dataset, stage)
    summary = {
        "stage": stage,
        "kept": len(kept),
        "dropped": len(dropped),
        "dropped_by_reason": dict(sorted(Counter(row["drop_reason"] for row in dropped).items())),
        **(extra or {}),
    }
    write_private_text(out_dir / "summary.json", json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    # Two stages render a judge prompt: annotate the teacher's English one, traces the Russian one judges are served
    # with; the others render none.
    prompt_version = {"annotate": PROMPT_VERSION_EN, "traces": PROMPT_VERSION}.get(stage)
    write_provenance(out_dir, f"judge-train data {stage}", dataclasses.asdict(config),
                     prompt_version=prompt_version, seed=getattr(config, "seed", None))
    return summary


def _dataset_parts(files: dict[str, list[dict]], stage: str) -> list[Any]:
    """Each file's rows as a ``datasets.Dataset`` (None for a file without rows), all of one schema: every column any
    row holds (``Dataset.from_list`` keeps the first row's alone). A column whose values Arrow holds in no one type
    (an ``instruction_id`` of 5 beside "5", which pyarrow refuses naming neither column nor row, after the JSONL files
    are written) is written as text, a string as it is and any other value as its JSON, and said: the column, the
    first row whose type differs from its first value's, and both types. The JSONL files keep the values as read."""
    import datasets
    import pyarrow as pa

    placed = [(file, line, row) for file, rows in files.items() for line, row in enumerate(rows, 1)]
    columns = list(dict.fromkeys(key for _, _, row in placed for key in row))
    as_text = set()
    for column in columns:
        try:
            pa.array([row.get(column) for _, _, row in placed])
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
            as_text.add(column)
            log(f"{stage}: dataset/ holds column {column!r} as text (a value other than a string as its JSON): "
                f"{_mixed_types(placed, column, err)}; {', '.join(files)} keep the values as read")
    whole = datasets.Dataset.from_dict({column: [_as_text(row.get(column)) if column in as_text else row.get(column)
                                                 for _, _, row in placed] for column in columns}) if placed else None
    parts, start = [], 0
    for rows in files.values():
        parts.append(whole.select(range(start, start + len(rows))) if rows else None)
        start += len(rows)
    return parts


def _mixed_types(placed: list[tuple[str, int, dict]], column: str, err: Exception) -> str:
    """Where ``column``'s values first differ in type, for the warning; Arrow's words when each is of one Python type
    (lists of numbers beside lists of words, a number past 64 bits)."""
    first = None
    for file, line, row in placed:
        value = row.get(column)
        if value is None:
            continue
        if first is None:
            first = (type(value).__name__, file, line)
        elif type(value).__name__ != first[0]:
            return f"{first[0]} at {first[1]} line {first[2]}, {type(value).__name__} at {file} line {line}"
    return f"no one Arrow type holds its values ({err})"


def _as_text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _replace_dataset(path: Path, dataset: Any, stage: str) -> None:
    """``path`` becomes ``dataset`` saved (``save_to_disk``), or goes when there is none: a rerun that keeps nothing
    left the earlier run's rows there, which ``read_rows`` and the recipes would have trained on. The new folder is
    saved aside and moved in, so a kill while saving leaves the earlier one whole."""
    fresh = path.with_name(path.name + ".tmp")
    shutil.rmtree(fresh, ignore_errors=True)
    if dataset is not None:
        dataset.save_to_disk(str(fresh))
    earlier = path.exists()
    if earlier:
        shutil.rmtree(path)
    if dataset is not None:
        fresh.rename(path)
    elif earlier:
        log(f"{stage}: no rows kept: removed the earlier run's {path}")


@dataclasses.dataclass(frozen=True)
class InputRows:
    """A stage's input as read: its rows, and the index a ``judge.RecordError`` names for each.

    Attributes:
        rows: the rows, in file order.
        row_index: ``rows[i]``'s 0-based index in its source: the line number minus one for JSONL (a blank line is
            skipped but counted, so it differs from ``i`` after one), the position for Parquet and ``datasets``; a
            ``judge.records.LineIndex`` or ``RowIndex``, so that an error names it as the record loader does ("line 3",
            "row index 2").
    """

    rows: list[dict]
    row_index: list[int]

    def __post_init__(self) -> None:
        if len(self.rows) != len(self.row_index):
            raise ValueError(f"{len(self.rows)} rows but {len(self.row_index)} row indices")


def read_input(source: str | Path, stage: str | None = None) -> InputRows:
    """Rows of a previous stage, with each row's index for error messages: its folder (reads ``<stage>.jsonl``), a
    JSONL/Parquet file or a ``datasets`` folder.

    Raises:
        FileNotFoundError: naming what was looked for.
        ValueError: a JSONL line that is not a JSON object, naming ``file:line``.
    """
    path = Path(source)
    if path.is_dir():
        if stage and (path / f"{stage}.jsonl").is_file():
            path = path / f"{stage}.jsonl"
        elif (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file():
            import datasets

            loaded = datasets.load_from_disk(str(path))
            if isinstance(loaded, datasets.DatasetDict):
                return _positions([row for split in loaded.values() for row in split])
            return _positions(list(loaded))
        else:
            raise FileNotFoundError(f"{path}: no {stage}.jsonl and not a datasets folder")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return _positions(pq.read_table(path).to_pylist())
    return _read_input_jsonl(path)


def read_rows(source: str | Path, stage: str | None = None) -> list[dict]:
    """``read_input``'s rows alone, for a caller that names no row in an error."""
    return read_input(source, stage).rows


def _positions(rows: list[dict]) -> InputRows:
    from judge.records import RowIndex

    return InputRows(rows, [RowIndex(i) for i in range(len(rows))])


#: The fields ``require_fields`` refuses blank (empty or only whitespace) as well as missing: a blank instruction
#: would be embedded, paid for and answered as if it were one.
NOT_BLANK = ("instruction",)


#: The longest line a stage reads from its input, in bytes (newline aside): far above any instruction, answer or
#: verdict (a 32k-token answer is under 200 KB), and a bound on what one row may cost in memory and in the text
#: every later stage embeds, sends and trains on.
MAX_LINE_BYTES = 4 * 1024 * 1024


def require_fields(rows: list[dict], fields: tuple[str, ...], source: str | Path, *,
                   row_index: Sequence[int] | None = None) -> list[dict]:
    """``rows`` unchanged when every one holds every field as a string (not blank, for the ``NOT_BLANK`` fields), and,
    when ``fields`` names ``id``, no two hold one id; else a ``judge.RecordError`` naming the file, the row and the field. A stage reads its input's fields
    deep in a worker thread or a similarity pass, where a missing one was a bare ``KeyError`` traceback after paid
    requests.

    Args:
        row_index: each row's index in ``source`` (``InputRows.row_index``: the line number minus one for JSONL),
            which the error names; None names positions in ``rows`` (rows built in code, or a source without blank
            lines).

    Raises:
        judge.RecordError: the first row lacking a field, or holding a non-string (or a blank ``NOT_BLANK`` one) there,
            or repeating an earlier row's id (the message names both rows and the id).
        ValueError: ``row_index`` not one index per row.
    """
    from judge import RecordError
    from judge.records import row_place

    if row_index is None:
        row_index = range(len(rows))
    elif len(row_index) != len(rows):
        raise ValueError(f"{source}: {len(rows)} rows but {len(row_index)} row indices")
    first_row: dict[str, int] = {}
    for index, row in zip(row_index, rows):
        for name in fields:
            value = row.get(name)
            if isinstance(value, str) and (name not in NOT_BLANK or not is_blank(value)):
                continue
            if name == "id" and isinstance(value, int) and not isinstance(value, bool):
                continue
            wanted = "a string or an integer" if name == "id" else "a string"
            problem = ("blank: no instruction to embed, answer or judge" if isinstance(value, str) else
                       "missing" if value is None else f"{value_words(value)}, not {wanted}")
            raise RecordError(str(source), index, name, problem)
        if "id" in fields:
            # A job's key is made of its row's id (as text: 7 and "7" are one key): two rows with one id were one
            # job, whose answer was written for both and the other row's never asked.
            earlier = first_row.setdefault(str(row["id"]), index)
            if earlier != index:
                raise RecordError(str(source), index, "id", f"{row['id']!r} repeats the id of {row_place(earlier)}")
    return rows


#: The stages in pipeline order, and per stage the fields every row of its output holds and no earlier stage's row
#: does: a row holding them all is that stage's output (or a later one's, which keeps them).
STAGE_ORDER = ("instructions", "dedup", "answers", "annotate", "split", "traces")
STAGE_ROW_MARKS = {
    "answers": ("answer", "instruction_id", "model_id"),
    "annotate": ("criteria_score", "teacher", "answer_id"),
    "traces": ("reasoning", "reasoning_score", "item_id"),
}


def refuse_later_stage_rows(rows: list[dict], source: str | Path, stage: str, reads: str, *,
                            row_index: Sequence[int] | None = None) -> None:
    """Refuse a row of a later stage's output than ``reads``, the one ``stage`` reads: such rows hold every field the
    stage requires (an id, the instruction, an answer), so annotate.jsonl given to answers was answered once per
    verdict row, and annotate's own output annotated again.

    Raises:
        judge.RecordError: naming the file, the row, the stage whose output it is (by its marks) and the one expected.
    """
    from judge import RecordError

    later = [name for name in STAGE_ORDER[STAGE_ORDER.index(reads) + 1:] if name in STAGE_ROW_MARKS]
    for position, row in enumerate(rows):
        # the latest stage first: a traces row holds annotate's and answers' marks too
        for name in reversed(later):
            marks = STAGE_ROW_MARKS[name]
            if all(mark in row for mark in marks):
                where = row_index[position] if row_index is not None else position
                held = ", ".join(marks[:-1]) + f" and {marks[-1]}"
                raise RecordError(str(source), where, None, f"a row of the {name} stage's output (it holds {held}): "
                                  f"the {stage} stage reads the {reads} stage's output")


def _read_input_jsonl(path: Path) -> InputRows:
    """A stage's input read strictly: every line a JSON object, the last one too when it lacks its newline (a file
    written by hand or with "\n".join). A journal reads such a line as a row too when it is a whole object, but
    drops a cut one as a write cut by a kill; an input is no journal, so a cut last line here is an error naming it.
    A key given twice is an error too, as ``judge.load_records`` and every journal's reader make it: ``json.loads``
    would keep the last value without a word.
    """
    rows: list[dict] = []
    row_index: list[int] = []
    with path.open("rb") as handle:
        # Read a line at a time, each at most MAX_LINE_BYTES: a line over it is refused before it is parsed.
        lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b"")
        for number, line in enumerate(lines, start=1):
            if number == 1:  # a byte order mark is no part of the first row (json.loads would take it, but not alone)
                line = line.removeprefix(UTF8_BOM)
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                raise ValueError(f"{path}:{number}: a line over {MAX_LINE_BYTES} bytes, the cap on one input row "
                                 "(train.synthetic.journal.MAX_LINE_BYTES): no instruction, answer or verdict is that "
                                 "long; fix or remove the row")
            if line.strip():
                _add_input_row(path, number, line, rows, row_index)
    return InputRows(rows, row_index)


def holds_no_rows(path: Path) -> bool:
    """Whether a stage's JSONL input holds nothing but blank lines (a byte order mark at its start aside), read up to
    its first other byte: ``_read_input_jsonl`` would give the stage no row, and it would run, write its folder and
    exit 0 having done nothing."""
    with path.open("rb") as handle:
        chunk = handle.read(1 << 16).removeprefix(UTF8_BOM)
        while chunk:
            if chunk.strip():
                return False
            chunk = handle.read(1 << 16)
    return True


def _add_input_row(path: Path, number: int, line: bytes, rows: list[dict], row_index: list[int]) -> None:
    """Parse line ``number`` of ``path`` into ``rows`` (``_read_input_jsonl``'s rules)."""
    from judge.records import LineIndex

    try:
        row = loads_without_repeats(line)
    except RepeatedKeyError as err:  # a ValueError: before the handler of json's others
        raise ValueError(f"{path}:{number}: field {err.key!r} is given twice in the row (JSON would keep the last "
                         "value without a word): give it once") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:  # unreadable_json would misname a non-UTF-8 line
        raise ValueError(f"{path}:{number}: not a JSON line ({err})") from None
    except JSON_REFUSALS as err:
        # Valid JSON json.loads cannot hold: deep nesting was a bare RecursionError (a traceback), a long number
        # Python's advice to call sys.set_int_max_str_digits().
        raise ValueError(f"{path}:{number}: {unreadable_json(err)}") from None
    if not isinstance(row, dict):
        raise ValueError(f"{path}:{number}: not a JSON object")
    rows.append(row)
    row_index.append(LineIndex(number - 1))
