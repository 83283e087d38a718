"""Zero-Shot vs Standard: which items the POLLUX paper held out of training.

The held-out task types and criteria are data, ``judge/data/zero_shot.yaml``, shipped with the package (the paper's
list is in arXiv 2505.24616v3, Appendix D.2); another split file can be passed to ``load_split_spec``.

The split is an instruction's: the paper's two tests "do not overlap, each containing unique instructions"
(Appendix D.2), and its held-out criteria "are present exclusively in the Zero-Shot Test". An instruction is in the
**Zero-Shot test** when its task type, or the criterion of any of its rows, is held out; otherwise it is in the
**Standard test**; all its rows (one per criterion) go with it. ``splits_of`` assigns records so, grouped by
instruction (``instruction_groups``: a shared ``instruction_key`` or a shared text). ``split_of`` reads one row alone (its task type or its criterion held out): the
two agree on every row whose instruction's criteria come from one taxonomy task, since the taxonomy lists the
held-out criteria only under held-out task types; they differ only on an instruction of a Standard task type scored
on a held-out criterion, whose other rows ``split_of`` leaves in Standard.

A record whose task type the taxonomy cannot resolve belongs to neither as far as anyone can tell, unless its
criterion is held out (the held-out criteria are only in the Zero-Shot test, whatever the task type): ``split_of``
raises ``UnknownTaskTypeError`` naming the row, or, with ``allow_unknown=True`` (judge-eval's selection and reports),
returns ``"zero_shot"`` for a held-out criterion and ``"unknown"`` otherwise, so that reports can show those items
apart. The items ``criteria: auto`` judges on the
criteria for any text (a row the classifier was unsure of or failed on: their ``task_choice`` says ``fallback``) are,
with ``allow_unknown=True``, split by their criterion alone: Zero-Shot when it is held out, else Standard. Their task
type is left empty on purpose, and those 13 criteria (Critical, General and Subjective: arXiv
2505.24616v3, Section 2.3; Appendix P.2) are all Standard ones, so ``--split standard`` judges them instead of
dropping them unseen. Without ``allow_unknown`` it still raises: a training row with no task type may be of a
held-out one, which no criterion can rule out. Training-data builders call ``check_no_leakage`` (by instruction) to refuse
Zero-Shot rows unless told otherwise. ``SPLIT_TITLES`` names the splits in reports and model cards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from judge.plumbing.invisible_text import composed_visible
from judge.records import RecordError, value_words
from judge.taxonomy import Taxonomy, TaxonomyError, load_taxonomy

__all__ = [
    "ZERO_SHOT",
    "STANDARD",
    "UNKNOWN",
    "SPLIT_TITLES",
    "UnknownTaskTypeError",
    "SplitSpec",
    "LeakageError",
    "default_split_path",
    "load_split_spec",
    "split_of",
    "split_groups",
    "splits_of",
    "record_task_type",
    "instruction_key",
    "instruction_text_key",
    "instruction_groups",
    "check_no_leakage",
]

ZERO_SHOT = "zero_shot"
STANDARD = "standard"
#: The split of a record whose task type the taxonomy cannot resolve, or that has none (only with ``split_of(...,
#: allow_unknown=True)``; a held-out criterion's row is Zero-Shot there instead, and an item ``criteria: auto``
#: judged on the criteria for any text is split by its criterion).
UNKNOWN = "unknown"
#: How reports and model cards title each split, in report order; "all" is Zero-Shot + Standard, the paper's overall
#: figures (a report's name for the union: no record is in it alone).
SPLIT_TITLES = {ZERO_SHOT: "Zero-Shot test", STANDARD: "Standard test",
                UNKNOWN: "Task type unknown to the taxonomy (split unknown)", "all": "Zero-Shot + Standard"}


class LeakageError(ValueError):
    """Zero-Shot items found where training data was expected."""


class UnknownTaskTypeError(RecordError, TaxonomyError):
    """A record whose task type the taxonomy cannot resolve, so its split is unknown.

    A ``RecordError`` (source, row, field ``task_type``) and a ``TaxonomyError``.
    """


@dataclass(frozen=True)
class SplitSpec:
    """The held-out task types (English taxonomy names) and criteria (base ids), and the sha256 of the file's bytes
    they were read from ("" for a spec not read from a file)."""

    version: str
    task_types: frozenset[str]
    criteria: frozenset[str]
    sha256: str = ""


def default_split_path() -> Path:
    """The paper's split, ``zero_shot.yaml`` in the package's data (installed with it; no source tree needed)."""
    return Path(str(resources.files("judge") / "data" / "zero_shot.yaml"))


def load_split_spec(path: str | Path | None = None, taxonomy: Taxonomy | None = None) -> SplitSpec:
    """Read and check a split file.

    Args:
        path: the YAML file (default: ``default_split_path()``).
        taxonomy: checked against (default: the vendored taxonomy).

    Raises:
        ValueError: a file that is not YAML, not a mapping, or lacks ``task_types`` or ``criteria`` as a list of
            texts (an empty list only written as ``[]``: an empty file or a bare key would turn the leakage guard
            off without a word); a task type or criterion that the taxonomy does not know (a typo would leak data).
            One line, naming the file and the key.
    """
    return _load_split_spec(str(path or default_split_path()), taxonomy or load_taxonomy())


#: The keys of a split file; both lists are required.
_SPLIT_LISTS = ("task_types", "criteria")


def _split_lists(path: str, text: str) -> dict:
    """The split file's mapping, its ``task_types`` and ``criteria`` checked to be lists of texts."""
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise ValueError(f"{path}: not valid YAML ({problem}{where})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a split file is a mapping with task_types and criteria lists, got "
                         f"{'an empty file' if raw is None else value_words(raw)}")
    unknown_keys = set(raw) - {"version", *_SPLIT_LISTS}
    if unknown_keys:
        raise ValueError(f"{path}: unknown keys {sorted(unknown_keys, key=str)}")
    for key in _SPLIT_LISTS:
        if key not in raw:
            raise ValueError(f"{path}: key {key!r} is missing (write {key}: [] to hold none out)")
        values = raw[key]
        if not isinstance(values, list):
            got = "nothing" if values is None else value_words(values)
            raise ValueError(f"{path}: key {key!r} must be a list of texts (an empty one written as []), got {got}")
        for position, value in enumerate(values):
            if not isinstance(value, str):
                raise ValueError(f"{path}: key {key!r}: item {position} must be text, got {value_words(value)}")
    return raw


@lru_cache(maxsize=8)
def _load_split_spec(path: str, taxonomy: Taxonomy) -> SplitSpec:
    if Path(path).is_dir():
        raise FileNotFoundError(f"split file {path} is a folder, not a YAML file (give the .yaml file in it)")
    if not Path(path).is_file():
        raise FileNotFoundError(f"split file {path} not found; the paper's split ships as judge/data/zero_shot.yaml")
    data = Path(path).read_bytes()  # hashed and parsed from one read: a record names the bytes its lists came from
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:  # Python's words name neither the file nor where in it
        line, column = data.count(b"\n", 0, err.start) + 1, err.start - data.rfind(b"\n", 0, err.start)
        raise ValueError(f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}, column {column})"
                         ) from None
    raw = _split_lists(path, text)
    task_types = set()
    for name in raw["task_types"]:
        canonical = taxonomy.canonical_task_type(name)
        if canonical is None:
            raise ValueError(f"{path}: task type {name!r} is not in the taxonomy")
        task_types.add(canonical)
    base_ids = {crit.base_id for crit in taxonomy.criteria.values()}
    criteria = set()
    for cid in raw["criteria"]:
        if cid not in base_ids:
            raise ValueError(f"{path}: criterion {cid!r} is not a base criterion id of the taxonomy")
        criteria.add(cid)
    return SplitSpec(str(raw.get("version", "")), frozenset(task_types), frozenset(criteria),
                     hashlib.sha256(data).hexdigest())


def record_task_type(record, taxonomy: Taxonomy) -> str | None:
    """The taxonomy's name of a record's task type, as ``split_of`` reads it (None: unresolved)."""
    canonical = taxonomy.canonical_task_type(record.task_type) if record.task_type else None
    if canonical is None and record.task_type and record.task_subtype and taxonomy.canonical_group(record.task_type):
        # Some exports put the group in task_type and the task type in task_subtype.
        canonical = taxonomy.canonical_task_type(record.task_subtype)
    return canonical


def split_of(record, spec: SplitSpec | None = None, strict: bool = False, allow_unknown: bool = False) -> str:
    """``"zero_shot"`` when the record's task type or criterion is held out, else ``"standard"``: one row's own split,
    without its instruction's other rows (``splits_of`` gives an instruction's rows one split).

    Args:
        record: a ``JudgeRecord`` (uses ``task_type``, ``task_subtype`` and ``criteria_name``; names in English or
            Russian).
        spec: the split (default: ``load_split_spec()``).
        strict: also raise on a criterion the taxonomy does not know, instead of treating it as Standard (custom
            criteria are never held out). Without it, an unknown name that spells a held-out criterion's name with
            other punctuation, spacing or compatibility characters ("Rhyme  quality!") is Zero-Shot, not Standard.
        allow_unknown: instead of raising, return ``"unknown"`` (``UNKNOWN``) for a task type the taxonomy cannot
            resolve or none, unless the row's criterion is held out (``"zero_shot"``: the held-out criteria are
            only in the Zero-Shot test, Appendix D.2); ``criteria: auto``'s items judged on the criteria for any
            text (no task type, a ``task_choice`` saying ``fallback``) on a Standard criterion are ``"standard"``.
            Ignored with ``strict``.

    Raises:
        UnknownTaskTypeError: a task type the taxonomy cannot resolve, or none (naming the record's source, row
            and id), unless ``allow_unknown``. It was never silently Standard: a held-out task type under a name
            the taxonomy does not know, or under none, would leak into training and into the Standard figures.
        TaxonomyError: an unknown criterion, only when ``strict``.
    """
    taxonomy = load_taxonomy()
    spec = spec or load_split_spec()
    task_type = record_task_type(record, taxonomy)
    if task_type is None:
        if not allow_unknown or strict:
            raise _unknown_task_type(record)
        # The paper's held-out criteria are "present exclusively in the Zero-Shot Test" (Appendix D.2): a row scored
        # on one is Zero-Shot whatever its task type, so an unresolved task type leaves no doubt about it.
        if _criterion_split(record, spec, taxonomy, strict=False) == ZERO_SHOT:
            return ZERO_SHOT
        # criteria: auto's items on the criteria for any text, their task type left empty on purpose: nothing but
        # the criterion says which test the item is in, and the paper's split holds criteria out by themselves too.
        # Any other record without a task type may be of a held-out one: unknown, never silently Standard.
        return STANDARD if not record.task_type and _judged_on_the_fallback_set(record) else UNKNOWN
    if task_type in spec.task_types:
        return ZERO_SHOT
    return _criterion_split(record, spec, taxonomy, strict)


def _criterion_split(record, spec: SplitSpec, taxonomy: Taxonomy, strict: bool) -> str:
    """``"zero_shot"`` when the record's criterion is held out, else ``"standard"`` (``split_of``'s reading of the
    criterion; raises ``TaxonomyError`` on an unknown one only when ``strict``)."""
    try:
        base_id = taxonomy.criterion(record.criteria_name).base_id
    except TaxonomyError:
        if strict:
            raise
        # A name the taxonomy does not know is a custom criterion, never held out; but one that is a held-out
        # criterion's name spelt a little differently would otherwise reach training unseen, so it errs toward
        # Zero-Shot.
        return ZERO_SHOT if _loose(record.criteria_name or "") in _held_out_lookalikes(spec, taxonomy) else STANDARD
    return ZERO_SHOT if base_id in spec.criteria else STANDARD


def _loose(name: str) -> str:
    """A criterion name's letters and digits only, compatibility-composed (NFKC) with the characters that show nothing
    dropped first (one between a letter and its mark would keep the two apart), case-folded, "ё" read as "е"."""
    folded = composed_visible(name).casefold().replace("ё", "е")
    return "".join(ch for ch in folded if ch.isalnum())


@lru_cache(maxsize=8)
def _held_out_lookalikes(spec: SplitSpec, taxonomy: Taxonomy) -> frozenset[str]:
    """The held-out criteria's names (every variant, both languages) as ``_loose`` reads them."""
    return frozenset(_loose(crit.name[lang]) for crit in taxonomy.criteria.values() if crit.base_id in spec.criteria
                     for lang in ("ru", "en"))


def instruction_key(record) -> str:
    """Which instruction a record answers: its ``instruction_id`` column as text when the source has one (not None,
    not blank; 0 is an id), else its text (as the synthetic pipeline's train/validation split groups rows); a record
    with neither stands alone (its id)."""
    extra = getattr(record, "extra", None) or {}
    given = extra.get("instruction_id")
    if given is not None and str(given).strip():
        return str(given)
    return record.instruction or f"id:{record.id}"


def instruction_text_key(text: str) -> str:
    """An instruction's text as the splits compare it: without the characters that show nothing
    (``judge.plumbing.invisible_text``: a byte order mark, a zero-width space, a soft hyphen, a left-to-right mark),
    then compatibility-composed (NFKC: "й" written as "и" + U+0306 is "й", a fullwidth "５" is "5";
    ``composed_visible``), whitespace collapsed to one space and case-folded. Two texts that look the same to whoever
    wrote them get one key."""
    return " ".join(composed_visible(text).split()).casefold()


def instruction_groups(records: Iterable) -> list[str]:
    """Each record's instruction, as the splits group them: records that share an ``instruction_key`` or an
    instruction text (``instruction_text_key``: compatibility-composed, invisible characters dropped, whitespace
    collapsed, case-folded) are one instruction, through any chain of both (one union over the two keys), so one
    text under two ids never lands on two sides. A group is named by the least ``instruction_key`` among its
    records: a group of one key keeps that key's name."""
    records = list(records)
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    keys = [("key", instruction_key(record)) for record in records]
    for record, key in zip(records, keys):
        text = instruction_text_key(record.instruction or "")
        if text:
            a, b = root(key), root(("text", text))
            parent[max(a, b)] = min(a, b)  # a "key" node sorts first: every root is its group's least key
    return [root(key)[1] for key in keys]


def splits_of(records: Iterable, spec: SplitSpec | None = None, strict: bool = False,
              allow_unknown: bool = False) -> list[str]:
    """Each record's split, shared by an instruction's rows (the module docstring): ``"zero_shot"`` for every row of
    an instruction one of whose rows ``split_of`` puts there, else ``"unknown"`` for every row of an instruction one
    of whose task types is unknown (with ``allow_unknown``), else ``"standard"``.

    Args and raises: as ``split_of``, for each record.
    """
    records = list(records)
    spec = spec or load_split_spec()
    own = [split_of(record, spec, strict=strict, allow_unknown=allow_unknown) for record in records]
    groups = instruction_groups(records)
    seen: dict[str, set[str]] = {}
    for group, split in zip(groups, own):
        seen.setdefault(group, set()).add(split)
    shared = {key: next(s for s in (ZERO_SHOT, UNKNOWN, STANDARD) if s in splits) for key, splits in seen.items()}
    return [shared[group] for group in groups]


def split_groups(columns) -> tuple:
    """The records ``split_of`` cannot tell apart, numbered: per record the number of its group (in order of first
    appearance, an int64 array) and each group's first record, so that a caller resolves one record per group and
    spreads its split to the group (``split_of`` looks names up in the taxonomy: seconds over the 160k items of the
    full test, one by one).

    A group shares everything ``split_of`` reads: the task type, subtype and criterion, and, for a record without a
    task type, whether ``criteria: auto`` judged it on the criteria for any text (its ``task_choice``). Keyed by the
    three names alone, such a record and another without that choice took the split of whichever came first.

    Args:
        columns: ``judge.RecordColumns`` (``judge.record_columns.as_columns`` makes records into them).
    """
    import numpy as np

    task_types = columns.text("task_type")
    no_type = np.flatnonzero([not name for name in task_types])  # only these can be split by the fallback flag
    fallback = np.zeros(len(task_types), dtype=np.int64)
    fallback[no_type] = [_fallback_choice(extra) for extra in columns.extras_at(no_type)]
    return columns.distinct(("task_type", "task_subtype", "criteria_name"), also=fallback)


def _judged_on_the_fallback_set(record) -> bool:
    """Whether ``record`` is an item ``criteria: auto`` judged on the criteria for any text (its ``task_choice``
    record, ``judge.criteria_auto.TaskChoice.to_dict``, says ``fallback``: a row the classifier was unsure of or
    failed on)."""
    return _fallback_choice(getattr(record, "extra", None))


def _fallback_choice(extra) -> bool:
    """Whether a record's ``extra`` holds a ``task_choice`` saying ``fallback`` (``_judged_on_the_fallback_set``)."""
    choice = (extra or {}).get("task_choice")
    return isinstance(choice, dict) and choice.get("fallback") is True


def _unknown_task_type(record) -> UnknownTaskTypeError:
    source, row = getattr(record, "origin", None) or ("<records>", None)
    if record.task_type:
        what = f"unknown task type {record.task_type!r}" + (f" (subtype {record.task_subtype!r})" if record.task_subtype else "")
    else:
        what = "has no task type"
    return UnknownTaskTypeError(
        source, row, "task_type",
        f"record {record.id!r}: {what}, so its Zero-Shot/Standard split is unknown; use a task type of the POLLUX "
        "taxonomy (English or Russian name), or pass allow_unknown=True to put it in the 'unknown' split (Zero-Shot "
        "where its criterion is held out)",
    )


def check_no_leakage(records: Iterable, spec: SplitSpec | None = None, allow_zero_shot: bool = False) -> None:
    """Refuse Zero-Shot items in training data, by instruction (``splits_of``): a row whose own task type and
    criterion are Standard leaks too when another row of its instruction is held out.

    Raises:
        LeakageError: naming how many items leak and the first few ids, unless ``allow_zero_shot``.
        UnknownTaskTypeError: a record whose task type cannot be resolved (it might be a held-out one), unless
            ``allow_zero_shot``.
    """
    if allow_zero_shot:
        return
    records = list(records)
    leaked = [record.id for record, split in zip(records, splits_of(records, spec)) if split == ZERO_SHOT]
    if leaked:
        shown = ", ".join(leaked[:5]) + (" ..." if len(leaked) > 5 else "")
        raise LeakageError(
            f"{len(leaked)} items belong to the Zero-Shot test (held-out task types or criteria, or an instruction "
            f"one of whose rows has one; rows are one instruction when they share an instruction_id or the same "
            f"instruction text, whatever their ids): {shown}; "
            "remove them, or deliberately pass allow_zero_shot=True (judge-train: --zero-shot allow)"
        )
