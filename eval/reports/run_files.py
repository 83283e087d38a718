"""A scored run's input files found again from wherever a page is built: the data and the predictions its
metrics.json names (``recorded_file``), loaded for the pages' texts and verdicts, and the page's sentence when one is
gone (``missing_note``), so that a page says what it lacks instead of showing empty texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["load_predictions", "load_records", "missing_note", "recorded_file"]


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
    """The data the run.json in ``folder`` names (absolute since ``judge-eval run`` resolves it); [] without one."""
    if folder is None:
        return []
    from judge.plumbing.provenance import read_provenance

    try:
        data = (read_provenance(folder, missing_ok=True).get("config") or {}).get("data")
    except ValueError:  # an unreadable run.json: the data is then looked for elsewhere
        return []
    return [data] if isinstance(data, str) else []


def load_records(data: str | None, folder: str | Path | None = None):
    """The records of the data a metrics.json in ``folder`` names (``recorded_file``), as columns
    (``judge.RecordColumns``); None when that file is gone (a page without texts, saying so: ``missing_note``)."""
    import judge

    path = recorded_file(data, folder, also=_run_json_data(folder))
    return None if path is None else judge.load_record_columns(path)[0]


def load_predictions(path: str | None, folder: str | Path | None = None):
    """The prediction table of the file a metrics.json in ``folder`` names (``recorded_file``); None when it is
    gone."""
    found = recorded_file(path, folder, beside="predictions.jsonl")
    if found is None:
        return None
    from eval.judging.predictions import read_prediction_table

    return read_prediction_table(found)


def missing_note(what: str, recorded: str | None, folder: str | Path | None, lost: str) -> str:
    """The page's sentence for a file a metrics.json names that ``recorded_file`` does not find: what, the path named,
    and what the page lacks for it (it would otherwise read as empty texts or "no prediction")."""
    where = f" in {folder}" if folder is not None else ""
    return f"Not found: {what} (the metrics.json{where} names {recorded or 'none'}): {lost} not in this page."
