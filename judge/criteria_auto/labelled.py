"""Labelled instructions for ``criteria: auto``: (instruction, leaf label) pairs read from any labelled source, and
the two bundled sets (``training_path``: a small training set; ``heldout_path``: the held-out set, never trained
on). Reads rows with a ``label`` or with POLLUX task columns (``judge-train data instructions`` output, POLLUX-format
records), names the row a bad label is in, and keeps the Zero-Shot task types out unless asked. Both the training
code (``train/criteria_classifier.py``, ``train/classifier.py``) and the measurement (``bench/criteria_auto.py``)
read through it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path

from judge.criteria_auto.policy import LABEL_SEPARATOR, label_of, leaf_of
from judge.plumbing.invisible_text import composed_visible, is_blank
from judge.records import check_unicode, row_place, value_words
from judge.splits import STANDARD, ZERO_SHOT, load_split_spec
from judge.taxonomy import Taxonomy, TaxonomyError, load_taxonomy

__all__ = ["NEAR_DUPLICATE_JACCARD", "NEAR_DUPLICATE_RATIO", "NEAR_DUPLICATE_RATIO_JACCARD", "heldout_leaks", "heldout_path", "labelled_rows",
           "load_labelled", "near_duplicates", "normalise_instruction", "training_overlap", "training_path"]

#: Two instructions are near duplicates when the Jaccard similarity of their normalised character 5-gram sets
#: reaches this (a copy with a clause cut: "... поднимется? Сопротивлением воздуха пренебречь, g = 10 м/с²" against
#: "... поднимется? g = 10 м/с²" is 0.71), or when difflib's ratio of the normalised texts reaches
#: ``NEAR_DUPLICATE_RATIO`` and their 5-gram Jaccard reaches ``NEAR_DUPLICATE_RATIO_JACCARD`` (a few words changed:
#: "Великая Китайская стена видна из космоса" against "Великую Китайскую стену видно с Луны" is 0.82, Jaccard
#: 0.38). An exact match only would let such a copy into training and inflate the held-out figures. Distinct
#: instructions of one template ("Отгадай загадку: «...»", "Что было бы, если бы ...") stay well below both: at most
#: 0.24 and 0.63 between the held-out set and the bundled training rows. Lexical measures: a paraphrase in other
#: words is left to whoever writes the held-out set.
NEAR_DUPLICATE_JACCARD = 0.5
NEAR_DUPLICATE_RATIO = 0.8
_SHINGLE = 5
#: The second rule's floor, part of the rule: difflib's ratio counts only for pairs sharing this much of their
#: 5-grams (Jaccard). The ratio is quadratic in the length and the Jaccard linear, and texts in one language share
#: a 5-gram or two almost always: without the floor difflib would be asked of most pairs, which the out-of-fold
#: grouping of every training row against every other (``train/criteria_tfidf.py``) cannot afford. Among the 229
#: real instructions of the bundled sets, every pair with a ratio of 0.7 or more shares at least 0.38 (the Great
#: Wall pair above). A text with every sixth letter changed (ratio 0.85, Jaccard 0.12) is below the floor: not a
#: near duplicate, as a paraphrase is not.
NEAR_DUPLICATE_RATIO_JACCARD = 0.2


def normalise_instruction(text: str) -> str:
    """Without the characters that show nothing, then compatibility-composed (NFKC; ``judge.plumbing.invisible_text``'s
    ``composed_visible``), then lower case, "ё" as "е", punctuation as spaces, runs of whitespace as one space: what
    near-duplicate checks compare (quotes, dashes and spacing do not make two instructions different). Composed before
    punctuation goes: a decomposed "й" ("и" + U+0306) or "ё" ("е" + U+0308) would otherwise have its combining mark,
    no word character, read as a space inside the word. A combining diacritic NFKC leaves apart (a stress mark on a
    Cyrillic vowel, U+0301, has no precomposed form) is then dropped, for the same reason: "Пра́вильно" is
    "правильно", as ``judge.verdicts`` counts it one word."""
    text = _UNCOMPOSED_MARK.sub("", composed_visible(text))
    return " ".join(re.sub(r"[^\w\s]|_", " ", text.lower().replace("ё", "е")).split())


#: The combining diacritics (U+0300-U+036F) NFKC leaves uncomposed in ``normalise_instruction``'s text: every mark
#: with a precomposed form with its letter is composed before this is applied.
_UNCOMPOSED_MARK = re.compile("[\u0300-\u036f]")


def _shingles(text: str) -> frozenset[str]:
    return frozenset(text[i:i + _SHINGLE] for i in range(max(1, len(text) - _SHINGLE + 1)))


def near_duplicates(texts: Sequence[str], others: Sequence[str]) -> list[tuple[int, int, float, float | None]]:
    """The pairs ``(i, j, jaccard, ratio)`` where ``texts[i]`` and ``others[j]`` are near duplicates, ordered by
    ``j`` then ``i``; an exact match is one. Near: 5-gram Jaccard ≥ ``NEAR_DUPLICATE_JACCARD``, or difflib ratio ≥
    ``NEAR_DUPLICATE_RATIO`` with Jaccard ≥ ``NEAR_DUPLICATE_RATIO_JACCARD``. ``ratio`` is None where the Jaccard
    decided alone.

    The 5-gram intersections of every pair come from one sparse product (SciPy), so only pairs that share a 5-gram
    are looked at; difflib's ratio (quadratic) is computed only for pairs that share ``NEAR_DUPLICATE_RATIO_JACCARD``
    of their 5-grams and whose lengths allow it. The 117 held-out instructions against the ~870 rows the shipped
    classifier trains on: 0.34 CPU-s, against 0.82 for a loop over every pair's Python sets, the same pairs (training
    commands run the check each time).
    """
    import numpy as np

    mine = [normalise_instruction(t) for t in texts]
    theirs = [normalise_instruction(t) for t in others]
    if not mine or not theirs:
        return []
    vocabulary: dict[str, int] = {}
    a_rows = [[vocabulary.setdefault(g, len(vocabulary)) for g in _shingles(t)] for t in mine]
    b_rows = [[vocabulary.setdefault(g, len(vocabulary)) for g in _shingles(t)] for t in theirs]
    a, b = _incidence(a_rows, len(vocabulary)), _incidence(b_rows, len(vocabulary))
    shared = (b @ a.T).tocoo()  # (j, i) -> 5-grams in common, for the pairs with any
    a_sizes, b_sizes = np.diff(a.indptr), np.diff(b.indptr)
    matcher = difflib.SequenceMatcher(autojunk=False)
    found = []
    seq2 = -1
    for j, i, inter in sorted(zip(shared.row.tolist(), shared.col.tolist(), shared.data.tolist())):
        jaccard = inter / (int(a_sizes[i]) + int(b_sizes[j]) - inter)
        if jaccard >= NEAR_DUPLICATE_JACCARD:
            found.append((i, j, jaccard, None))
        elif (jaccard >= NEAR_DUPLICATE_RATIO_JACCARD
              and 2 * min(len(mine[i]), len(theirs[j])) >= NEAR_DUPLICATE_RATIO * (len(mine[i]) + len(theirs[j]))):
            if seq2 != j:
                matcher.set_seq2(theirs[j])  # difflib caches what it learns of the second sequence
                seq2 = j
            matcher.set_seq1(mine[i])
            if matcher.quick_ratio() >= NEAR_DUPLICATE_RATIO:
                ratio = matcher.ratio()  # the quadratic one, once
                if ratio >= NEAR_DUPLICATE_RATIO:
                    found.append((i, j, jaccard, ratio))
    return found


def _incidence(rows: list[list[int]], width: int):
    """The 0/1 matrix of which 5-grams (columns, ``width`` of them) each text (row) holds."""
    import numpy as np
    from scipy import sparse

    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.fromiter((k for r in rows for k in r), dtype=np.int64, count=int(indptr[-1]))
    return sparse.csr_matrix((np.ones(len(indices), dtype=np.int64), indices, indptr), shape=(len(rows), width))


def training_overlap(held: Sequence[Mapping], pairs: Sequence[Mapping]) -> tuple[int, int, str]:
    """How the training ``pairs`` overlap the ``held`` rows (``{"instruction", ...}`` each), exactly or nearly
    (``near_duplicates``): how many held rows are overlapped, how many training pairs overlap them, and the first
    such pair named as ``'<the training instruction, 60 characters>' ~ held-out <the held row's id, else its first
    60 characters>``; ``(0, 0, "")`` when none does. The refusals of an overlap (``heldout_leaks``, the bench's)
    name the first pair with it, so that the user need not search the rows for one."""
    found = near_duplicates([h["instruction"] for h in held], [p["instruction"] for p in pairs])
    if not found:
        return 0, 0, ""
    i, j, _, _ = found[0]
    named = held[i].get("id") or repr(held[i]["instruction"][:60])
    return (len({i for i, _, _, _ in found}), len({j for _, j, _, _ in found}),
            f"{pairs[j]['instruction'][:60]!r} ~ held-out {named}")


def heldout_leaks(pairs: Sequence[Mapping]) -> str:
    """"" when no training pair (``{"instruction", ...}``) is an instruction of the bundled held-out set or a near
    duplicate of one (``near_duplicates``); else a sentence counting them and naming the first
    (``training_overlap``), for the training commands to refuse with (a leaked held-out instruction inflates every
    figure measured on it)."""
    held = [json.loads(line) for line in heldout_path().read_text(encoding="utf-8").split("\n") if line.strip()]
    _, n, first = training_overlap(held, pairs)
    if not n:
        return ""
    counted = "1 training instruction is" if n == 1 else f"{n} training instructions are"
    return f"{counted} in the bundled held-out set or near duplicates of it (e.g. {first}); remove them"


#: The columns that name a row's task, in the order ``Taxonomy.leaf`` takes them (``TaxonomyError.level``).
_TASK_COLUMNS = ("task_type", "task_subtype", "task_subsubtype")


def _label_from_columns(row: Mapping, taxonomy: Taxonomy) -> str:
    return label_of(taxonomy.leaf(*(str(row.get(k) or "") for k in _TASK_COLUMNS)))


def labelled_rows(
    rows: Iterable[Mapping],
    source: str,
    include_zero_shot: bool = False,
    taxonomy: Taxonomy | None = None,
    indices: Sequence[int] | None = None,
) -> tuple[list[dict], dict]:
    """(instruction, leaf label) pairs from rows with task columns, de-duplicated by instruction: a repeat under the
    same leaf is counted as a duplicate, one under another leaf refused (which label stands is not row order's to
    decide).

    Reads either shape: a row with ``label`` (the bundled sets), or with ``task_type`` / ``task_subtype`` /
    ``task_subsubtype`` (``judge-train data instructions`` output rows, POLLUX-format records; English or Russian
    names; a group name in ``task_type`` is accepted as the taxonomy does).

    Args:
        rows: mappings (or ``JudgeRecord``s: their attributes are read).
        source: named in errors.
        include_zero_shot: keep rows of the Zero-Shot task types (``judge/data/zero_shot.yaml``); off by default
            so that the classifier's Zero-Shot figures stay zero-shot, as the judges' do.
        indices: each row's index as its reader gave it (``judge.record_sources.jsonl_rows``' ``LineIndex``), so
            that an error names the row as the loader does ("line 3": blank lines counted); a loaded record's own
            ``origin`` is used without it, else the row's position ("row 0").

    Returns:
        (pairs ``{"instruction", "label", "split"}``, counts ``{"rows", "kept", "duplicates", "zero_shot_dropped"}``).

    Raises:
        ValueError: a row without an instruction, with an instruction or label that is not text, an instruction
            holding a lone surrogate (no UTF-8 form: the artefact's digest and its vocabulary could not be written),
            a task the taxonomy does not know, or an instruction another row labels with another leaf, naming the
            row (both rows, for the last).
    """
    return _labelled(rows, source, include_zero_shot, taxonomy, indices, {})


def _labelled(rows, source, include_zero_shot, taxonomy, indices, labels_seen: dict[str, tuple[str, str]]):
    """``labelled_rows``, with ``labels_seen`` (instruction -> its label and where it was first read, "file: line 3")
    shared by the files ``load_labelled`` reads, so that a repeat or a contradicting label in another file is told
    as one in the same file is. Zero-Shot rows left out are in it too: a contradiction is one whichever label is
    kept. A repeat has its first row's label, so its first row's split: it was kept exactly when that row was."""
    taxonomy = taxonomy or load_taxonomy()
    held_out = load_split_spec(taxonomy=taxonomy).task_types
    out = []
    counts = {"rows": 0, "kept": 0, "duplicates": 0, "zero_shot_dropped": 0}
    for i, row in enumerate(rows):
        index = indices[i] if indices is not None else (getattr(row, "origin", None) or (None, i))[1]
        if not isinstance(row, Mapping):  # a record (JudgeRecord has slots: no __dict__ for vars())
            row = ({f.name: getattr(row, f.name) for f in dataclasses.fields(row)} if dataclasses.is_dataclass(row)
                   else vars(row))
        counts["rows"] += 1
        for name in ("instruction", "label"):
            value = row.get(name)
            if value is not None and not isinstance(value, str):  # a label of 5 was an AttributeError traceback
                raise ValueError(f"{source}: {row_place(index)}: field {name!r}: must be text, got "
                                 f"{value_words(value)}")
        instruction = (row.get("instruction") or "").strip()
        if is_blank(instruction):  # white space and characters that show nothing: judge.load_records' rule
            raise ValueError(f"{source}: {row_place(index)}: empty or missing 'instruction'")
        check_unicode(instruction, "instruction",
                      lambda name, why: ValueError(f"{source}: {row_place(index)}: field {name!r}: {why}"))
        try:
            label = label_of(leaf_of(row["label"], taxonomy)) if row.get("label") else _label_from_columns(row, taxonomy)
        except TaxonomyError as err:
            field = "label" if row.get("label") else _TASK_COLUMNS[err.level or 0]
            raise ValueError(f"{source}: {row_place(index)}: task columns do not name one leaf of the taxonomy: "
                             f"field {field!r}: {err}") from err
        here = f"{source}: {row_place(index)}"
        earlier = labels_seen.get(instruction)
        if earlier is not None and earlier[0] != label:
            raise ValueError(f"{here}: field 'label': the instruction is labelled {label!r} here and {earlier[0]!r} "
                             f"at {earlier[1]}; give it one label")
        if earlier is None:
            labels_seen[instruction] = (label, here)
        split = ZERO_SHOT if label.split(LABEL_SEPARATOR)[0] in held_out else STANDARD
        if split == ZERO_SHOT and not include_zero_shot:
            counts["zero_shot_dropped"] += 1
            continue
        if earlier is not None:
            counts["duplicates"] += 1
            continue
        out.append({"instruction": instruction, "label": label, "split": split})
    counts["kept"] = len(out)
    return out, counts


def load_labelled(paths: Sequence[str | Path], include_zero_shot: bool = False) -> tuple[list[dict], dict]:
    """``labelled_rows`` over JSONL files (instructions output, POLLUX records, the bundled sets) or record sources.

    A ``.jsonl`` is read row by row (any of the shapes ``labelled_rows`` reads); anything else goes through
    ``judge.load_records`` (parquet, ``save_to_disk`` folders).
    """
    from judge.record_sources import load_records

    pairs, totals = [], {"rows": 0, "kept": 0, "duplicates": 0, "zero_shot_dropped": 0}
    # across the files: a repeat in another file is a duplicate, another label refused
    labels_seen: dict[str, tuple[str, str]] = {}
    taxonomy = load_taxonomy()
    for path in paths:
        path = Path(path)
        indices = None  # a record names its own row (its origin)
        if path.suffix == ".jsonl":
            indices, rows = _read_jsonl_objects(path)
        else:
            rows = load_records(path, make_id=True)
        got, counts = _labelled(rows, str(path), include_zero_shot, taxonomy, indices, labels_seen)
        for key in totals:
            totals[key] += counts[key]
        pairs += got
    return pairs, totals


def _read_jsonl_objects(path: Path) -> tuple[list[int], list[dict]]:
    """A labelled JSONL file's rows and their indices (``judge.record_sources.jsonl_rows``: a line that is not UTF-8
    JSON is refused naming the file and line), every one a JSON object: a list row reached ``vars`` as a
    ``TypeError`` traceback. The indices are kept so that a bad label is named by its line, blank lines counted."""
    from judge.record_sources import jsonl_rows
    from judge.records import RecordError

    indices, rows = [], []
    for source, index, row in jsonl_rows(path):
        if not isinstance(row, dict):
            raise RecordError(source, index, None, f"{value_words(row)}, not an object")
        indices.append(index)
        rows.append(row)
    return indices, rows


def heldout_path() -> Path:
    """The bundled held-out set (never used for training): ``judge/data/task_classifier_heldout.jsonl``."""
    return Path(str(resources.files("judge") / "data" / "task_classifier_heldout.jsonl"))


def training_path() -> Path:
    """The bundled small training set, disjoint from the held-out one: ``judge/data/task_classifier_train.jsonl``."""
    return Path(str(resources.files("judge") / "data" / "task_classifier_train.jsonl"))
