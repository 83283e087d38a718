"""Merge the shards of an eval array (``slurm/eval.sbatch``) into one run folder: predictions and run.json.

Each array task judged a contiguous block of the data with ``judge-eval run`` into ``shards/<i>/``, which holds
its ``predictions.jsonl`` and its ``run.json``. ``judge-eval score`` reads the run's settings from the run.json
beside the predictions it scores (``verdict_format``: an integer judge gets no POLLUX-evaluator section, which reads
``[RESULT] n`` tags; ``backend``, ``model``, ``prompt_version`` and ``git_revision`` for the report), so the merged
folder needs one too: the shards' common record. The rows are read as ``score`` reads them, each shard on its own,
so that a row that is not a prediction is named by its shard's file and line (not by a line of the merged file,
which no rerun mends), and every item is merged once: a torn last line (a task killed and not rerun) and an id two
shards hold (a row the data holds twice, one shard given twice, shards of two arrays cut into other blocks) are
refused, naming the shards.

The shards must have been judged alike. A shard rerun with another judge setting (``JUDGE_EVAL_SHARDS=4 sbatch
--array=2 ...`` with another config) would otherwise be scored as the same judge as the others, with no trace of
the mix: every key of the shards' run.json must agree, but for what each shard has of its own (``PER_SHARD``,
``PER_SHARD_CONFIG``: its block, and how its run went, which a resume of one folder may change too), and the first
key that differs is named. The judge's address may differ only between URLs (a shard rerun through a new
serve job has another host and port); the served model, its weights (as a resume of one shard's folder holds
them: ``_other_weights``) and every setting still agree.
A shard that had no item to judge (``--split`` kept none of its block's rows) asked no server, so what a server tells
a run (``SERVER_SAID``, ``SERVER_SAID_CONFIG``) is not compared for it; every other key still is (its ``--split``,
``--limit``, criteria, prompt): a shard run with another split has rows no shard judged. It is counted and listed as
the others are. A merge where no shard had an item to judge is refused: ``score`` would find nothing to score.

Every shard of the array must be given (``eval.judging.shard_array``: the shards' folder layout is what records
their index and the array's size): a shard left off is refused, naming it and the records its block holds, unless
``--allow-missing-shards``, with which the merged run.json's ``shard_array`` names the missing ones and ``score``
says so. A shard still being written (its folder's lock held) or unfinished (fewer rows than its ``n_items``) is
refused either way: rerun it, or leave it out.

Why one module of ~500 lines: every check reads the same shard folders and records once, and the refusals name
them alike; split, the order of the checks (all before anything is written) would be spread over modules.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Collection, Sequence

from eval.judging.array_data import record_lines
from eval.judging.run_settings import RESUME_FREE, clear_score_outputs, data_sha256
from eval.judging.shard_array import ShardArray, refuse_missing, shard_array
from eval.judging.special_tokens import merged_special_token_rows
from judge.sample_data import data_name

__all__ = ["ShardMismatch", "PER_SHARD", "PER_SHARD_CONFIG", "SERVER_SAID", "SERVER_SAID_CONFIG", "merge_shards",
           "merge_command", "merged_record", "refuse_malformed_counts", "selected_nothing"]

#: Top-level run.json keys each shard has of its own: its launches, its counts (the items; with ``--criteria
#: auto``, its rows by the level their criteria were chosen at and those on a Zero-Shot task), the counts summed, and
#: what says which rows it judged (the hash of its block), which the merged record gives for the whole ``--data``,
#: and its rows holding a special-token string on the chat route (``eval.judging.special_tokens``).
#: A ``--criteria auto`` shard's expanded rows (``source_data``) are not among them: such shards are refused
#: (``merge_shards``).
PER_SHARD = ("launch", "earlier_launches", "n_items", "task_choice_levels", "task_choice_zero_shot", "data_sha256",
             "chat_special_tokens")
#: config keys each shard has of its own: its block of the data, and how its run went, the settings a resume of one
#: folder may change (``eval.judging.run_settings.RESUME_FREE``: its folder, concurrency, retries, timeouts, keys,
#: the local server's environment): a failed task rerun with a longer timeout judged as the others did.
PER_SHARD_CONFIG = ("data", *RESUME_FREE)
#: Of those, the ones of one launch, which the merged config leaves out (``data`` and ``out`` are the merge's own);
#: each other one it keeps where every shard has the same value, and lists each shard's under ``shards`` otherwise.
_LAUNCH_CONFIG = ("data", "out", "overwrite", "progress")
#: Top-level run.json keys `judge-eval run` writes from what the server says (its backend probe, its model entry's
#: name, limits and fingerprint, the template a judge-serve renders and why): a run that asked no server has its own.
SERVER_SAID = ("backend", "model", "server_limits", "weights_fingerprint", "prompt_version", "prompt_version_why")
#: config keys the run fills from the server: the served name, the format its model entry states, and max_tokens
#: adopted from its trained completion length or fitted to its window.
SERVER_SAID_CONFIG = ("name", "verdict_format", "max_tokens")


class ShardMismatch(ValueError):
    """Shards judged with different settings, or a shard with predictions and no run.json."""


def _differing_key(a: Any, b: Any, path: str) -> str | None:
    """The dotted path of the first key whose value differs between ``a`` and ``b``, or None when they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return sub
            found = _differing_key(a[key], b[key], sub)
            if found is not None:
                return found
        return None
    return None if a == b else path


def _lookup(record: dict, path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return "(absent)"
        value = value[part]
    return value


def _is_url(judge: Any) -> bool:
    return isinstance(judge, str) and "://" in judge


def _comparable(record: dict, asked_no_server: bool = False) -> dict:
    """The record less what each shard has of its own (and less the judge's address when it is a URL) and less what
    its server said of the weights it served (``_other_weights`` compares those); with ``asked_no_server``, less what
    a server tells a run too (``SERVER_SAID``, ``SERVER_SAID_CONFIG``)."""
    own, own_config = PER_SHARD, PER_SHARD_CONFIG
    if asked_no_server:
        own, own_config = own + SERVER_SAID, own_config + SERVER_SAID_CONFIG
    out = {key: value for key, value in record.items() if key not in own and key != "weights_fingerprint"}
    limits = out.get("server_limits")
    if isinstance(limits, dict):  # the weights served are compared by ``_other_weights``
        out["server_limits"] = {key: value for key, value in limits.items() if key != "root"}
    config = record.get("config")
    if isinstance(config, dict):
        out["config"] = {key: value for key, value in config.items()
                         if key not in own_config and not (key == "judge" and _is_url(value))}
    return out


def _root(record: dict) -> Any:
    limits = record.get("server_limits")
    return limits.get("root") if isinstance(limits, dict) else None


def _other_weights(first: dict, record: dict) -> str | None:
    """``"weights_fingerprint"`` or ``"server_limits.root"`` where two shards' servers said they served other
    weights, by the rules a resume of one folder is held to (``eval.judging.format_choice.held_fingerprint``,
    ``held_root``), else None. Fingerprints agree when equal, or, for one judge-train export on this machine, when
    each is the export's own now by either formula judge-serve has used (``same_weights``); roots agree when they name
    one folder (``judge.wire.root_identity``: a path and judge-serve's digest of it are one), or when both shards'
    fingerprints agree (a new serve job loading the same weights by another path). One side saying none where the
    other says one is a difference, as any key one record lacks."""
    from eval.judging.format_choice import judged_export, same_weights
    from judge.wire import root_identity

    prints = first.get("weights_fingerprint"), record.get("weights_fingerprint")
    judge = first["config"].get("judge")
    # the shards' server_args agree (no key a shard may set alone), so the first's tell for both
    export = judged_export(judge, first["config"].get("server_args")) if judge == record["config"].get("judge") \
        else None
    one_print = prints[0] == prints[1] or same_weights(prints[0], prints[1], export)
    if not one_print:
        return "weights_fingerprint"
    roots = _root(first), _root(record)
    if roots[0] == roots[1]:
        return None
    if not all(isinstance(root, str) and root for root in roots):
        return "server_limits.root"
    if root_identity(roots[0]) == root_identity(roots[1]) or (isinstance(prints[0], str) and prints[0]):
        return None
    return "server_limits.root"


def selected_nothing(record: dict) -> bool:
    """A shard's run that had no item to judge (``--split`` kept none of its block's rows): it asked no server, so
    its run.json names no backend, model or server limits to compare with the others'."""
    n_items = record.get("n_items")
    return isinstance(n_items, int) and not isinstance(n_items, bool) and n_items == 0


#: run.json keys a shard counts its rows by, summed in the merged record: each a whole number when present.
_SUMMED_COUNTS = ("n_items", "task_choice_zero_shot")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def refuse_malformed_counts(path: Path, record: dict) -> None:
    """Refuse a shard's run.json whose counts (``n_items``, ``task_choice_zero_shot``, each level of
    ``task_choice_levels``) are not whole numbers, or whose ``config.judge`` is not a name or address: the merged
    record sums and compares them, and a hand-edited or foreign value stopped that with a traceback naming no file.

    Raises:
        ValueError: naming the file and the key.
    """
    def refuse(key: str, value: Any, what: str) -> ValueError:
        shown = json.dumps(value, ensure_ascii=False)[:200]
        return ValueError(f"{path}: {key} is {shown}, not {what} as `judge-eval run` writes; rerun the shard")

    for key in _SUMMED_COUNTS:
        if record.get(key) is not None and not _is_count(record[key]):
            raise refuse(key, record[key], "a whole number of rows")
    levels = record.get("task_choice_levels")
    if levels is not None:
        if not isinstance(levels, dict):
            raise refuse("task_choice_levels", levels, "an object of counts by level")
        for level, n in levels.items():
            if n is not None and not _is_count(n):
                raise refuse(f"task_choice_levels.{level}", n, "a whole number of rows")
    judge = record["config"].get("judge")
    if judge is not None and not isinstance(judge, str):
        raise refuse("config.judge", judge, "a judge's name, folder or URL")


def merged_record(records: Sequence[tuple[Path, dict]], data: Path, out: Path,
                  uncompared: Collection[Path] = ()) -> dict:
    """The run.json of the merged folder: the shards' common record, with the whole data and the merged folder in
    its config, the items summed, and each shard's own part under ``shards``.

    The shards in ``uncompared`` (those that judged nothing: ``merge_shards``) asked no server: what a server tells
    a run is left out of their comparison (``SERVER_SAID``, ``SERVER_SAID_CONFIG``), and the record is the others'.
    They are counted and listed under ``shards`` as the others are.

    Raises:
        ShardMismatch: two shards whose records differ outside ``PER_SHARD`` / ``PER_SHARD_CONFIG`` (and, for one in
            ``uncompared``, outside what a server said), naming the key.
        ValueError: every shard is in ``uncompared``: there is nothing to merge.
    """
    compared = [(shard_dir, record) for shard_dir, record in records if shard_dir not in uncompared]
    if not compared:  # `score` would say "no predictions" and send the user to run again, which selects none again
        splits = sorted({str((record.get("config") or {}).get("split")) for _, record in records})
        raise ValueError(f"no shard had an item to judge (--split {' / '.join(splits)} kept none of the rows of the "
                         f"{len(records)} shards' blocks); nothing to merge: judge the data with a --split that "
                         "selects some of its rows")
    first_dir, first = compared[0]
    for shard_dir, record in records:
        if record is first:
            continue
        asked_no_server = shard_dir in uncompared
        key = _differing_key(_comparable(first, asked_no_server), _comparable(record, asked_no_server), "")
        if key is None and not asked_no_server:
            key = _other_weights(first, record)
        if key is not None:
            raise ShardMismatch(
                f"{shard_dir / 'run.json'}: {key} is {json.dumps(_lookup(record, key), ensure_ascii=False)[:200]}, "
                f"but {json.dumps(_lookup(first, key), ensure_ascii=False)[:200]} in {first_dir / 'run.json'}: the "
                "shards were judged with different settings; rerun the odd shard with the others' settings "
                "(--overwrite), or merge only shards judged alike")
    merged = _comparable(first)
    if "weights_fingerprint" in first:  # the first shard's word for the weights every shard served (_other_weights)
        merged["weights_fingerprint"] = first["weights_fingerprint"]
    if isinstance(merged.get("server_limits"), dict) and "root" in first["server_limits"]:
        merged["server_limits"]["root"] = first["server_limits"]["root"]
    config = dict(merged.get("config") or {})
    configs = [record["config"] for _, record in compared if isinstance(record.get("config"), dict)]
    judges = [c.get("judge") for c in configs]
    if judges and all(j == judges[0] for j in judges):  # one address for every shard: the run's; else each shard's
        config["judge"] = judges[0]
    differing = []
    for key in (key for key in RESUME_FREE if key not in _LAUNCH_CONFIG):
        values = [c[key] for c in configs if key in c]
        if values and len(values) == len(configs) and all(v == values[0] for v in values):
            config[key] = values[0]
        elif values:
            differing.append(key)
    config["data"] = data_name(str(data))  # the bundled sample by name: score finds it once the package moves
    config["out"] = str(out)
    merged["config"] = config
    merged["data_sha256"] = data_sha256(str(data))
    for key in _SUMMED_COUNTS:
        counts = [record.get(key) for _, record in records]
        if all(isinstance(n, int) for n in counts):
            merged[key] = sum(counts)
    levels = [record.get("task_choice_levels") for _, record in records]
    if all(isinstance(by_level, dict) for by_level in levels):
        merged["task_choice_levels"] = {level: sum(int(by_level.get(level) or 0) for by_level in levels)
                                        for level in dict.fromkeys(k for by_level in levels for k in by_level)}
    flagged = [record.get("chat_special_tokens") for _, record in records]
    # the whole run's count only when every shard counted: a shard without one (no chat server asked) leaves it unknown
    if flagged and all(isinstance(counted, dict) for counted in flagged):
        merged["chat_special_tokens"] = merged_special_token_rows(flagged)
    merged["shards"] = [
        {"folder": str(shard_dir), "n_items": record.get("n_items"),
         "judge": (record.get("config") or {}).get("judge"), "launch": record.get("launch"),
         "earlier_launches": record.get("earlier_launches", []),
         **({"config": {key: (record.get("config") or {}).get(key) for key in differing}} if differing else {})}
        for shard_dir, record in records
    ]
    return merged


def merge_command(shard_dirs: Sequence[str], data: str, out: str, allow_missing_shards: bool = False) -> str:
    """``judge-eval merge``: ``--data`` checked (it is only named in the merged run.json, which `score` reads it
    from: a missing one passed, and the score job failed later, naming the run.json), the shards merged; returns
    the line the command prints.

    Raises:
        ValueError: ``--out`` under a file, a ``--data`` that is not a readable non-empty file; ``merge_shards``'s.
    """
    from judge.plumbing.json_reading import counted
    from judge.plumbing.run_folder import refuse_file
    from judge.sample_data import data_source

    refuse_file(out, "--out")
    data = data_source(data)  # checked as a file; the merged run.json names the sample `sample` (merged_record)
    path = Path(data)
    if not path.exists():
        raise ValueError(f"--data {data}: no such file; give the JSONL file the shards were cut from")
    if not path.is_file():
        raise ValueError(f"--data {data}: not a file; give the JSONL file the shards were cut from")
    if not os.access(path, os.R_OK):
        raise ValueError(f"--data {data}: cannot be read (permission denied)")
    if not path.stat().st_size:
        raise ValueError(f"--data {data}: the file is empty; give the JSONL file the shards were cut from")
    rows, run_json, array = merge_shards(shard_dirs, data, out, allow_missing_shards)
    left_out = f"; {array.missing_words()}, as run.json's shard_array records" if array and array.missing else ""
    if array and array.missing and run_json is None:
        left_out = f"; {array.missing_words()} (no run.json records it: no shard given has one)"
    return (f"merged {counted(rows, 'prediction')} from {counted(len(shard_dirs), 'shard')} -> "
            f"{Path(out) / 'predictions.jsonl'}"
            + (f", {run_json}" if run_json else " (no shard has a run.json: no record written)") + left_out)


def merge_shards(shard_dirs: Sequence[str | Path], data: str | Path, out: str | Path,
                 allow_missing_shards: bool = False) -> tuple[int, Path | None, ShardArray | None]:
    """Join the shards' predictions into ``out/predictions.jsonl`` and write their common run.json beside it.

    Each shard's rows are read as ``judge-eval score`` reads them (``eval.judging.predictions.iter_predictions``), so
    that a bad row is named by its shard's file and line, not by a line of the merged file that no rerun mends: a
    line that is not a prediction, a torn last line (the shard's task was killed and not rerun: resuming it ends the
    line), and an id held twice, by one shard or by two (the same shard given twice, shards of two arrays cut
    otherwise), are refused. Nothing is written then.

    A shard with no predictions (more tasks than records: ``eval.sbatch`` writes an empty file and runs nothing)
    has no run.json and takes no part in the comparison; one so left whose ``data.jsonl`` holds records (an earlier
    array's empty shard, its block now judged by no run) is refused. One whose run.json says it had no item to judge (``n_items``
    0, no rows: ``--split`` kept none of its block's rows, and its run asked no server) is compared but for what a
    server tells a run (``merged_record``), and counted and listed in the merged record; when every shard with a
    run.json is one, the merge is refused.

    The shards of an eval array must all be given (``eval.judging.shard_array``): a shard left off is refused,
    naming it, unless ``allow_missing_shards``; the merged run.json's ``shard_array`` then names the missing ones. A
    shard still being written (a ``judge-eval run`` holds its folder) and one with fewer rows than its run.json's
    ``n_items`` (its run stopped before the end, and was not rerun) are refused, with or without it.

    A merge that writes removes the scores in ``out`` (``eval.judging.run_settings.SCORE_OUTPUTS``: an earlier
    merge's, scored), as ``judge-eval run --overwrite`` does: they are figures of the predictions it replaces.

    Returns:
        (rows merged; the run.json written, or None when no shard has one, a stale one in ``out`` then removed;
        the shards' array, or None when they are no array's).

    Raises:
        ShardMismatch: shards judged with different settings, or a shard with predictions but no run.json.
        FileNotFoundError: a shard without predictions.jsonl.
        ValueError: a shard given twice; an ``out`` that is a shard given, lies inside one or inside the array's
            ``shards/`` folder; a shard's run.json that is not a run record, or one judged with ``--criteria
            auto``; a shard's row that is not a
            prediction, its torn last line, or an id already merged; each naming the shard's file. No shard that had
            an item to judge (every run.json says ``n_items`` 0). A shard whose ``data.jsonl`` holds records and
            that has no run.json and no rows. A shard being written or unfinished; an array's
            shard left off, or shards of two arrays (``eval.judging.shard_array.shard_array``).
    """
    from judge.plumbing.atomic_write import write_atomically
    from judge.plumbing.json_reading import lone_surrogate_at
    from judge.plumbing.provenance import PROVENANCE_FILE, read_provenance
    from judge.plumbing.run_folder import run_folder_holder

    out = Path(out).resolve()
    data = Path(data).resolve()
    for flag, path in (("--out", out), ("--data", data)):
        if lone_surrogate_at(str(path)) is not None:  # Python keeps a name's bytes that are no UTF-8 as surrogates
            raise ValueError(f"{flag} {os.fsencode(path)!r}: a path whose name is not UTF-8 text, which run.json (JSON "
                             "text) cannot record and score cannot read back; give a UTF-8 name")
    records: list[tuple[Path, dict]] = []
    judged_nothing: set[Path] = set()
    files: list[Path] = []
    expected: dict[Path, Any] = {}  # each shard's predictions -> the items its run.json says it judged
    seen_dirs: dict[Path, Path] = {}
    for shard in map(Path, shard_dirs):
        if shard.resolve() in seen_dirs:  # its ids would all be merged twice
            raise ValueError(f"{shard}: given twice (as {seen_dirs[shard.resolve()]} too); give each shard once")
        seen_dirs[shard.resolve()] = shard
        if (holder := run_folder_holder(shard)) is not None:  # its rows are being appended: merged half-judged
            raise ValueError(f"{shard}: {holder} is writing it now; merge once its array task has ended")
        predictions = shard / "predictions.jsonl"
        if not predictions.is_file():
            raise FileNotFoundError(f"{predictions}: no such file; did this shard's array task finish?")
        files.append(predictions)
        if (shard / PROVENANCE_FILE).is_file():
            record = read_provenance(shard / PROVENANCE_FILE)
            if not isinstance(record.get("config"), dict):  # {} or another tool's object: no judge settings
                raise ValueError(f"{shard / PROVENANCE_FILE}: not a run record (no config object, as `judge-eval "
                                 "run` writes); rerun the shard")
            refuse_malformed_counts(shard / PROVENANCE_FILE, record)
            if record["config"].get("criteria") == "auto":
                # each task classifies its own block (an id-less row named by its line there), and score reads the
                # raw rows, which have no criterion: no merged folder is a scoreable run of them
                raise ValueError(f"{shard / PROVENANCE_FILE}: judged with --criteria auto, whose shards do not merge: "
                                 "each task expands its own block, and score reads the rows given, which have no "
                                 "criterion; judge the whole data with one `judge-eval run --criteria auto`")
            records.append((shard, record))
            expected[predictions] = record.get("n_items")
            if selected_nothing(record) and not predictions.stat().st_size:
                judged_nothing.add(shard)
        elif predictions.stat().st_size:
            raise ShardMismatch(f"{shard / PROVENANCE_FILE}: no such file beside the shard's predictions; the "
                                "merged run would not say which judge made them (judge-eval run writes it: rerun "
                                "the shard)")
        elif (cut := shard / "data.jsonl").is_file() and any(True for _ in record_lines(cut)):
            # eval.sbatch leaves an empty block so; one with records its task never judged is no empty shard. The
            # first record tells: shard_array counts the block's records against its size.
            raise ValueError(f"{shard}: its data.jsonl holds records, but it has no run.json and no rows: its array "
                             "task judged none of them; rerun it, or leave it out with --allow-missing-shards")
    array = shard_array([Path(shard) for shard in shard_dirs], data)
    _refuse_out_among_shards(out, list(seen_dirs.items()), array)
    refuse_missing(array, allow_missing_shards)
    merged = merged_record(records, data, out, judged_nothing) if records else None
    if merged is not None and array is not None:
        merged["shard_array"] = array.record()

    for predictions in files:  # refused before any row is read or written, and before the reader warns it dropped it
        if _torn_tail(predictions):
            raise ValueError(f"{predictions}: its last line is torn (no newline, not a whole row: the shard's task "
                             "was killed mid-write); rerun that shard's array task, which resumes it, then merge "
                             "again")

    rows = 0

    def join(handle) -> None:
        nonlocal rows
        from eval.judging.predictions import iter_predictions
        from judge.plumbing.journal import json_utf8

        owner: dict[str, Path] = {}  # each id merged so far -> its shard's file
        for predictions in files:
            before = rows
            for row in iter_predictions(predictions):
                if row["id"] in owner:
                    held = owner[row["id"]]
                    where = ("twice in this shard (its folder holds two runs' rows: rerun its array task, whose "
                             "resume keeps one row per id)" if held == predictions else
                             f"in {held} too (the shards overlap: a row held twice by --data, its copies in two "
                             "blocks; shards of two arrays cut into other blocks; or one shard's rows copied into "
                             "another)")
                    raise ValueError(f"{predictions}: id {row['id']!r} is {where}; nothing merged")
                owner[row["id"]] = predictions
                handle.write(json_utf8(json.dumps(row, ensure_ascii=False) + "\n"))
                rows += 1
            n_items = expected.get(predictions)
            if isinstance(n_items, int) and rows - before < n_items:  # merged, it read as a whole shard's rows
                raise ValueError(f"{predictions}: {rows - before} rows for the {n_items} items of its run.json "
                                 "(n_items): the shard's run is unfinished; rerun its array task, which resumes it, "
                                 "or leave it out with --allow-missing-shards")

    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        write_atomically(out / "predictions.jsonl", join)
    except BaseException:
        if made:  # a folder made for a merge that wrote nothing would be taken for a run's
            out.rmdir()
        raise
    clear_score_outputs(out)  # an earlier merge's figures, of predictions no longer here
    run_json = out / PROVENANCE_FILE
    if merged is None:
        run_json.unlink(missing_ok=True)  # an earlier merge's record would describe predictions no longer here
        return rows, None, array
    write_atomically(run_json, (json.dumps(merged, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    return rows, run_json, array


def _refuse_out_among_shards(out: Path, shards: Sequence[tuple[Path, Path]], array: ShardArray | None) -> None:
    """Refuse an ``--out`` (resolved) that is a shard given, lies inside one, or lies in the array's ``shards/``
    folder: the merged predictions.jsonl and run.json would replace a shard's own, or sit among the shards as a
    folder no later merge can tell from them. ``shards``: (resolved, as given) for each shard.

    Raises:
        ValueError: naming ``--out`` and the shard or the array's folder.
    """
    for resolved, shard in shards:
        if out == resolved or out.is_relative_to(resolved):
            where = "is the shard" if out == resolved else "lies inside the shard"
            raise ValueError(f"--out {out}: {where} {shard}, whose predictions.jsonl and run.json the merge would "
                             "overwrite; give a folder of its own (an eval array's: its JUDGE_EVAL_OUT, the parent "
                             "of shards/); nothing written")
    if array is not None and out.is_relative_to(array.folder):
        where = "is" if out == array.folder else "lies inside"
        raise ValueError(f"--out {out}: {where} {array.folder}, the eval array's shards folder, among the shards "
                         f"it merges; give a folder outside it (its JUDGE_EVAL_OUT: {array.folder.parent}); nothing "
                         "written")


#: Bytes read at a time, from the end, looking for a shard's last newline.
_TAIL_CHUNK = 64 * 1024


def _torn_tail(path: Path) -> bool:
    """Whether the file ends in a torn line: bytes after its last newline that are not a whole row, by the journal's
    one rule (``judge.plumbing.journal.is_whole_last_line``); a whole last row without its newline is a row."""
    from judge.plumbing.journal import is_whole_last_line

    with path.open("rb") as handle:
        end = handle.seek(0, 2)
        tail = b""
        while end > 0:
            begin = max(0, end - _TAIL_CHUNK)
            handle.seek(begin)
            tail = handle.read(end - begin) + tail
            if b"\n" in tail:
                break
            end = begin
    last = tail.rsplit(b"\n", 1)[-1]
    return bool(last.strip()) and not is_whole_last_line(last)
