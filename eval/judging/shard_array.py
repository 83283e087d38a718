"""Which eval array the shards of a ``judge-eval merge`` belong to, and whether the whole of it was given.

``slurm/eval.sbatch`` writes shard *i* of an array of *K* tasks into ``OUT/shards/<i>/`` (its index is the folder's
name), records *K* in ``OUT/shards/count`` (every task writes the same), and cuts shard *i* as records
``i*ceil(N/K)+1 ... (i+1)*ceil(N/K)`` of the data (its non-blank lines, by the record loader's rule: a line of
whitespace alone once decoded, ``str.strip``'s, U+00A0 and a lone carriage return too, is blank) into the shard's
``data.jsonl``. No shard's run.json names the whole data, its index or *K*: the folder layout is the record. So:

- a shard left off (a merge by hand given shards 0, 1, 3 of 4) is refused, naming the missing indices and the records
  of ``--data`` their blocks hold, unless ``--allow-missing-shards``; the merged run.json then says which are missing
  (``shard_array``), and ``judge-eval score`` says so beside the items without a prediction;
- an array of an earlier eval.sbatch wrote no ``count``: its shard folders (the parent's whole-number subfolders,
  and any index below the highest) are the array, and their records are not known;
- shards of two arrays (two ``shards/`` folders), or a folder that is no array's shard beside an array's shards, are
  refused: which of them is missing what cannot be said;
- a shard index past ``count`` (left by an earlier array of more tasks) is refused, as eval_merge.sbatch refuses it;
- a shard whose ``data.jsonl`` holds another number of records than its block of ``--data`` was cut from other data
  (or with another count): refused. Only counts are compared, so data whose labels were edited since still merges
  (``judge-eval score`` then says which predictions judged a text since edited);
- folders that are no array's shards (no whole-number name, or not in a ``shards/`` folder) are merged as given:
  nothing says what a whole set is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from eval.judging.array_data import record_lines

__all__ = ["COUNT_FILE", "ShardArray", "shard_array", "shard_block", "refuse_missing"]

#: The file beside the shard folders in which eval.sbatch records the array's task count.
COUNT_FILE = "count"
COUNT_FILE_WORDS = f"shards/{COUNT_FILE}"
_INDEX = re.compile(r"0|[1-9][0-9]*")
_ALLOW = "--allow-missing-shards"


@dataclass(frozen=True)
class ShardArray:
    """The eval array of a merge's shards.

    Attributes:
        folder: its ``shards/`` folder. count: its ``shards/count``; None for an array that wrote none (its
            folders are then the array). merged, missing: the shard indices given and those not given.
        missing_records: the records of ``--data`` the missing shards' blocks hold; None without ``count``.
        missing_ranges: those blocks as "5-6" (1-based, as eval.sbatch logs them); n_records: the records of
            ``--data``; each None without ``count``.
    """

    folder: Path
    count: int | None
    merged: tuple[int, ...]
    missing: tuple[int, ...]
    missing_records: int | None
    missing_ranges: tuple[str, ...] = ()
    n_records: int | None = None

    def record(self) -> dict:
        """The merged run.json's ``shard_array`` section (``n_records``: so that ``judge-eval score`` can tell the
        missing shards' items by their place in ``--data``, ``missing_block_items``)."""
        return {"folder": str(self.folder), "count": self.count, "merged": list(self.merged),
                "missing": list(self.missing), "missing_records": self.missing_records, "n_records": self.n_records}

    def missing_words(self) -> str:
        """e.g. "shard 2 of 4 left out (2 records of --data)"."""
        of = self.count if self.count is not None else f"folders 0-{max(self.merged + self.missing)}"
        records = f" ({_records(self.missing_records)} of --data)" if self.missing_records is not None else ""
        return f"{_shards_named(self.missing)} of {of} left out{records}"


def _records(n: int) -> str:
    from judge.plumbing.json_reading import counted

    return counted(n, "record")


def _shards_named(indices: Sequence[int]) -> str:
    return ("shard " if len(indices) == 1 else "shards ") + ", ".join(map(str, indices))


def _index(shard: Path) -> int | None:
    """The shard's index, where it is an eval array's: a whole-number folder in a ``shards/`` folder, as eval.sbatch
    lays them out (a run folder of one's own named by a number is no array's)."""
    return int(shard.name) if _INDEX.fullmatch(shard.name) and shard.parent.name == "shards" else None


def _count_lines(path: Path) -> int:
    """Records as eval.sbatch counts them, by the record loader's rule (``eval.judging.array_data``): a line
    holding anything but whitespace once decoded (U+00A0 or a carriage return alone is blank)."""
    return sum(1 for _ in record_lines(path))


def _read_count(path: Path) -> int:
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise ValueError(f"{path}: holds {text[:40]!r}, not a number of shards as eval.sbatch writes it")
    return int(text)


def shard_block(k: int, count: int, n_records: int) -> tuple[int, int]:
    """Shard ``k``'s records (first, last), 1-based, by eval.sbatch's rule; last < first for an empty block."""
    per = -(-n_records // count)
    first = k * per + 1
    return first, min(first + per - 1, n_records)



def shard_array(shard_dirs: Sequence[Path], data: Path) -> ShardArray | None:
    """The array the shards belong to, checked as the module says; None when no shard is an array's.

    Raises:
        ValueError: shards of two arrays, a folder that is no shard beside an array's shards, an index past
            ``count``, a ``count`` that is no number, or a shard cut from other data than ``data``; each naming the
            folder or file.
    """
    shards = [Path(shard) for shard in shard_dirs]
    members = [(shard, shard.resolve().parent, _index(shard.resolve())) for shard in shards]
    in_array = [(shard, parent, k) for shard, parent, k in members if k is not None]
    if not in_array:
        return None
    first, folder, _ = in_array[0]
    for shard, parent, k in members:
        if k is None:
            raise ValueError(f"{shard}: not a shard folder of an eval array (shards/<i>), but {first} is one of "
                             f"{folder}; merge one array's shards at a time")
        if parent != folder:
            raise ValueError(f"{shard}: a shard of {parent}, but {first} is one of {folder}: the shards come from "
                             "two eval arrays; merge one array's shards at a time")
    given = sorted(k for _, _, k in in_array)
    count_file = folder / COUNT_FILE
    if not count_file.is_file():  # an array of an earlier eval.sbatch: its folders are the array
        siblings = {k for child in folder.iterdir() if child.is_dir() and (k := _index(child)) is not None}
        missing = sorted(set(range(max(siblings | set(given)) + 1)) - set(given))
        return ShardArray(folder, None, tuple(given), tuple(missing), None)
    count = _read_count(count_file)
    for shard, _, k in in_array:
        if k >= count:
            raise ValueError(f"{shard}: shard {k} is none of the array's {count} ({COUNT_FILE_WORDS}: 0-{count - 1}), "
                             f"left by an earlier array of more tasks; merge shards 0-{count - 1} alone, or give "
                             "this run its own folder")
    n_records = _count_lines(data)
    for shard, _, k in in_array:
        cut = shard / "data.jsonl"
        if not cut.is_file():  # a shard laid out by hand: nothing to compare
            continue
        first_record, last_record = shard_block(k, count, n_records)
        expected = max(0, last_record - first_record + 1)
        held = _count_lines(cut)
        if held != expected:
            raise ValueError(f"{cut}: {_records(held)}, but shard {k} of {count} of --data {data} is {expected} "
                             f"({_range(first_record, last_record, 'records')} of {n_records}): the array was cut "
                             "from other data; give the --data the array judged")
    missing = sorted(set(range(count)) - set(given))
    blocks = [shard_block(k, count, n_records) for k in missing]
    return ShardArray(folder, count, tuple(given), tuple(missing),
                      sum(max(0, last - first + 1) for first, last in blocks),
                      tuple(_range(first, last) for first, last in blocks if last >= first), n_records)


def _range(first: int, last: int, noun: str = "") -> str:
    if last < first:
        return f"no {noun}".strip()
    span = str(first) if first == last else f"{first}-{last}"
    return f"{noun[:-1] if first == last and noun else noun} {span}".strip()


def refuse_missing(array: ShardArray | None, allow_missing_shards: bool) -> None:
    """Refuse an array with shards not given, unless ``allow_missing_shards``.

    Raises:
        ValueError: naming the array's folder, the missing indices and the records of ``--data`` they hold.
    """
    if array is None or not array.missing or allow_missing_shards:
        return
    one = len(array.missing) == 1
    of = (f"the array's {array.count} ({COUNT_FILE_WORDS})" if array.count is not None
          else f"the array's folders 0-{max(array.merged + array.missing)} (no {COUNT_FILE_WORDS})")
    records = (f" ({_records(array.missing_records)} of --data: {', '.join(array.missing_ranges) or 'none'} of "
               f"{array.n_records})" if array.missing_records is not None else "")
    raise ValueError(f"{array.folder}: {_shards_named(array.missing)} of {of} {'was' if one else 'were'} not given"
                     f"{records}; give every shard of the array, or pass {_ALLOW} to merge the others and record "
                     "the missing ones")
