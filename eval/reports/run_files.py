"""A scored run's input files found again from wherever a page is built: the data and the predictions its
metrics.json names (``recorded_file``), loaded for the pages' texts and verdicts, and the page's sentence when one is
gone or can no longer be read (``missing_note``), so that a page says what it lacks instead of showing empty texts.

A file found but unreadable (replaced or damaged since the run was scored) is, for a page, what a missing one is: the
page is built without what it held and says so. The file is needed only for the page's texts, so it must not stop a
command whose figures (metrics.json, compare.json) are already written. The loaders keep why it could not be read,
beside what they return, for ``missing_note`` to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["load_predictions", "load_records", "missing_note", "recorded_file"]

def _read(path: Path, reader):
    """``(reader(path), None)``, or ``(None, why)`` when the file is found but cannot be read."""
    try:
        return reader(path), None
    except (ValueError, OSError) as err:  # JSON, UTF-8, Parquet and schema errors are ValueErrors
        return None, f"{path}: {' '.join(str(err).split()) or type(err).__name__}"


def recorded_file(recorded: str | None, folder: str | Path | None, beside: str = "",
                  also: Sequence[str] = ()) -> Path | None:
    """The file a metrics.json names (its ``data`` or ``predictions``), found from any directory; None when gone.

    ``judge-eval score`` records absolute paths, looked for first. An older metrics.json kept a path as it was
    typed, relative to wherever score ran, which the current directory may not be; and a run folder copied
    elsewhere names files that stayed behind. So the file is then looked for beside the metrics.json (``beside``:
    the run's own file there, ``predictions.jsonl``), a relative path under its folder, at ``also`` (run.json's
    absolute path of the data), and a relative path only last from the current directory.

    Args:
        recorded: the path metrics.json names ("" or None: none).
        folder: the folder holding that metrics.json (None: paths are read as they are).
        beside: the name the file has in that folder, when it has one there.
        also: other places it may be, absolute.
    """
    named = Path(recorded).expanduser() if recorded else None
    candidates = [named] if named is not None and named.is_absolute() else []
    if folder is not None and beside:
        candidates.append(Path(folder) / beside)
    if named is not None and not named.is_absolute() and folder is not None:
        candidates.append(Path(folder) / named)
    candidates += [Path(a) for a in also if a and Path(a).is_absolute()]
    if named is not None and not named.is_absolute():
        candidates.append(named)
    return next((c for c in candidates if c.exists()), None)


def _run_json_data(folder: str | Path | None) -> list[str]:
    """The data the run.json in ``folder`` names (absolute since ``judge-eval run`` resolves it; the bundled sample,
    named ``sample``, as this install holds it); [] without one."""
    if folder is None:
        return []
    from judge.plumbing.provenance import read_provenance
    from judge.sample_data import data_source

    try:
        data = (read_provenance(folder, missing_ok=True).get("config") or {}).get("data")
    except ValueError:  # an unreadable run.json: the data is then looked for elsewhere
        return []
    return [data_source(data)] if isinstance(data, str) and data.strip() else []


def load_records(data: str | None, folder: str | Path | None = None):
    """The records of the data a metrics.json in ``folder`` names (``recorded_file``), as columns
    (``judge.RecordColumns``), and why that file could not be read: ``(None, None)`` when it is gone, ``(None, why)``
    when it is unreadable (a page without texts, saying so: ``missing_note``)."""
    import judge

    path = data_path(data, folder)
    return (None, None) if path is None else _read(path, lambda p: judge.load_record_columns(p)[0])


def data_path(data: str | None, folder: str | Path | None = None) -> Path | None:
    """The file the data a metrics.json in ``folder`` names is found at (``recorded_file``, run.json's absolute path
    among the places looked at); None when gone."""
    return recorded_file(data, folder, also=_run_json_data(folder))


def load_predictions(path: str | None, folder: str | Path | None = None):
    """The prediction table of the file a metrics.json in ``folder`` names (``recorded_file``); None when it is
    gone or cannot be read, with why, as ``load_records``."""
    found = recorded_file(path, folder, beside="predictions.jsonl")
    if found is None:
        return None, None
    from eval.judging.predictions import read_prediction_table

    return _read(found, read_prediction_table)


def missing_note(what: str, recorded: str | None, folder: str | Path | None, lost: str,
                 unreadable: str | None = None) -> str:
    """The page's sentence for a file a metrics.json names that ``recorded_file`` does not find, or that
    ``load_records`` / ``load_predictions`` found but could not read (``unreadable``, the why they returned): what,
    the path named (or why it is unreadable), and what the page lacks for it (it would otherwise read as empty texts or "no prediction")."""
    where = f" in {folder}" if folder is not None else ""
    if unreadable is not None:
        return f"Unreadable: {what} ({unreadable}): {lost} not in this page."
    return f"Not found: {what} (the metrics.json{where} names {recorded or 'none'}): {lost} not in this page."
