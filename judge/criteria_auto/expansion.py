"""Expansion for ``criteria: auto``: an (instruction, answer) pair and its ``TaskChoice`` become one POLLUX-format
judge item per chosen criterion (``expand_criteria``), over a dataset (``expand_rows``: rows that already name a
criterion pass through, per-criterion labels on an unnamed row are refused) or a JSONL file (``expand_file``:
``auto_items.jsonl`` and ``task_choices.jsonl``). judge-eval and judge-serve expand through it.

Why one module of ~670 lines: a row's checks (its task columns, the columns that belong to one criterion, the
loader's own check of its items), its expansion, the ids that must stay unique across expanded and named rows, and
the counts of the choices made are one pass over the data, each step reading what the one before it decided; the
choice records a resumed pass reuses are read and checked here, by the rules that pass applies to them.

Typical use::

    clf = TfidfClassifier.load()                 # the shipped classifier; or build_classifier("tfidf", path=DIR)
    items, record = expand_criteria("Напиши ...", "Весна пришла ...", clf.choose("Напиши ..."))
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from judge.criteria_auto.policy import TaskChoice, TaskClassifier, fallback_criteria, leaf_of, zero_shot_choice
from judge.plumbing.invisible_text import is_blank
from judge.plumbing.json_reading import got_words
from judge.records import (JudgeRecord, RecordError, content_id, gives_no_id, row_place, same_content,
                           value_words)
from judge.taxonomy import load_taxonomy

__all__ = ["CHOICE_LEVELS", "ChoicesFailed", "choice_levels", "expand_criteria", "expand_file", "expand_rows",
           "failed_choices", "taken_unsure", "UNSURE_BELOW", "zero_shot_choices"]

log = logging.getLogger(__name__)


class ChoicesFailed(ValueError):
    """Every row of the data is a failed choice (the classifier failed on each, and no row names its criteria or its
    task): nothing would be judged on a chosen, given or named criterion, only each row's fallback criteria, so
    ``criteria: auto`` refuses rather than run on them. A failure among rows judged otherwise is counted instead."""


def expand_criteria(
    instruction: str,
    answer: str,
    choice: TaskChoice | TaskClassifier,
    extra: Mapping | None = None,
) -> tuple[list[dict], dict]:
    """One judge item per chosen criterion, for ``criteria: auto`` (pure given a ``TaskChoice``).

    Args:
        instruction, answer: the pair to judge.
        choice: a ``TaskChoice``, or a classifier to ask for one.
        extra: columns copied into every item (``model_id``, ``reference_answer``...).

    Returns:
        (items, choice record). Each item has the POLLUX record columns ``instruction``, ``answer``,
        ``criteria_name`` (the criterion's Russian name, as the dataset names it), ``rubrics``, ``task_type``,
        ``task_subtype``, ``task_subsubtype`` (of the top-1 leaf; empty when the choice fell back or failed, its
        guess then only in ``task_choice``; the task type alone when it was decided at the task type), plus
        ``criterion_id`` and ``task_choice``
        (the choice record, so a report can be filtered by it). The choice record is ``TaskChoice.to_dict()``.
    """
    if not isinstance(choice, TaskChoice):
        choice = choice.choose(instruction, answer)
    taxonomy = load_taxonomy()
    # A failed choice (an LLM answer outside the taxonomy) has no leaf: its items carry empty task columns. So does a
    # choice that fell back (the classifier unsure of the task type): its top-1 leaf is a guess the threshold
    # rejected, and per-task-type reports and --split would count its items under that type; the guess stays in
    # task_choice. A choice at a task type the row gave (``_given_task``) names the type, not one leaf: its own
    # columns stand. A choice decided at the task type (its leaf rejected: too unsure of it, or the llm method's level
    # below failed) names the type alone: it is judged on the type's criteria, its label is a leaf the policy did not
    # take, and per-subtype reports would count it there.
    fell_back = choice.level == "fallback"
    leaf = leaf_of(choice.label, taxonomy) if choice.label and choice.method != "given" and not fell_back else None
    type_only = leaf is not None and choice.level == "task_type"
    task = (("", "", "") if fell_back else (leaf.task_type, "", "") if type_only
            else (leaf.task_type, leaf.subtype or "", leaf.subsubtype or "") if leaf
            else (choice.task_type, choice.task_subtype, choice.task_subsubtype))
    record = choice.to_dict()
    items = []
    for cid in choice.criteria:
        crit = taxonomy.criteria[cid]
        items.append({
            **(extra or {}),
            "instruction": instruction,
            "answer": answer,
            "criteria_name": crit.name["ru"],
            "criterion_id": cid,
            "rubrics": crit.rubric("ru"),
            "task_type": task[0],
            "task_subtype": task[1],
            "task_subsubtype": task[2],
            "task_choice": record,
        })  # fmt: skip
    return items, record


#: Columns ``expand_criteria`` sets on every item: a row's own are not copied over them (its other columns are).
_SET = ("id", "instruction", "answer", "criteria_name", "criterion_id", "rubrics", "task_type", "task_subtype",
        "task_subsubtype", "task_choice", "criteria")


def _given_task(row: Mapping, taxonomy, where: str) -> TaskChoice | None:
    """The row's own task (``task_type``, optionally ``task_subtype`` and ``task_subsubtype``) as a choice, or None
    when it names none: a task the caller states is not guessed over (method ``given``). One leaf: its criteria; a
    task type, or a subtype, of several leaves: the criteria all the leaves it names list as one id, at the deepest
    level they share (``level`` ``task_type`` or ``task_subtype``, the names below it left empty).

    Raises:
        ValueError: a task field that is not text, or a level given without the one above it (``_task_fields``);
            an unknown task, naming the field of the level the taxonomy lacks (``_find_leaves``); or a task whose
            leaves list no criterion as one id (the STEM and Code types:
            each leaf lists its own variants, ``operability__5`` for Python, ``operability__3`` for C++), naming the
            row and the field that must name the leaf. The fallback set is not judged instead: it is for a text of
            unknown task, and none of its criteria is one such a leaf lists; a leaf is not guessed within the named
            task either (the row states its task: the classifier does not overrule or finish it).
    """
    import dataclasses

    from judge.criteria_auto.policy import LABEL_SEPARATOR, label_of

    names = _task_fields(row, where)
    if names is None:
        return None
    leaves = _find_leaves(taxonomy, names, where)
    one = len(leaves) == 1
    choice = TaskChoice.of_leaf(leaves[0], 1.0 if one else None, ((label_of(leaves[0]), 1.0),) if one else (), 0.0,
                                "given", taxonomy, type_probability=1.0, leaf_share=1.0)
    if one:
        return choice
    # No leaf is chosen, so a criterion whose variant differs between the leaves has no variant to judge in: only
    # the criteria every named leaf lists as one id remain (over a whole task type: ``type_criteria`` without a leaf).
    shared = tuple(cid for cid in leaves[0].criteria if all(cid in leaf.criteria for leaf in leaves))
    # The path the named leaves share: the task type, and the subtype when the row names one (a task type may also
    # be given through its group, the subtype field then naming the type: the leaves' own path is what stands).
    common = [leaves[0].task_type]
    if len({leaf.subtype for leaf in leaves}) == 1 and leaves[0].subtype:
        common.append(leaves[0].subtype)
    named = f"task type {common[0]!r}" + (f", subtype {common[1]!r}," if len(common) > 1 else "")
    if not shared:
        field = "task_subtype" if len(common) == 1 else "task_subsubtype"
        raise ValueError(
            f"{where}: field '{field}': the row names {named} only, and its {len(leaves)} leaves have no criterion "
            f"in common (each lists its own variants); name the leaf, one of: "
            f"{'; '.join(label_of(leaf) for leaf in leaves)} (or give criteria_name, or leave task_type out for the "
            "classifier to choose)")
    return dataclasses.replace(
        choice, reason=f"the row gives {named} only: the criteria its {len(leaves)} leaves share",
        task_subtype=common[1] if len(common) > 1 else "", task_subsubtype="", label=LABEL_SEPARATOR.join(common),
        level="task_subtype" if len(common) > 1 else "task_type", criteria=shared, fallback=False)


#: The columns that name a row's task, each level below the one before it.
_TASK_FIELDS = ("task_type", "task_subtype", "task_subsubtype")


def _task_fields(row: Mapping, where: str) -> tuple[str, ...] | None:
    """The task levels a row names (``_TASK_FIELDS``, blank ones left out), or None when it names none.

    Raises:
        ValueError: a level that is neither text nor null (a number, a list: taking it for "no task" would
            classify a row whose caller meant to name its task), or a level given without the one above it
            (a subtype alone names no task type to look it up under), naming the row and the field.
    """
    from judge.taxonomy import quoted_name

    values = []
    for name in _TASK_FIELDS:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}: field '{name}' must be text, got {value_words(value)} (or leave the task "
                             "fields out for the classifier to choose)")
        values.append(value.strip() if value else "")
    for depth in (1, 2):
        if values[depth] and not values[depth - 1]:
            raise ValueError(f"{where}: field '{_TASK_FIELDS[depth]}' is {quoted_name(values[depth])} but field "
                             f"'{_TASK_FIELDS[depth - 1]}' is empty: name the level above it too (or leave the "
                             "task fields out for the classifier to choose)")
    return tuple(v for v in values if v) or None


def _find_leaves(taxonomy, names: tuple[str, ...], where: str) -> list:
    """The leaves ``names`` (``_task_fields``) name (``Taxonomy.find_tasks``), an unknown level refused naming its own
    field (``TaxonomyError.level``), not always task_type.

    Raises:
        ValueError: an unknown task type, subtype or sub-subtype, naming the row and that field.
    """
    from judge.taxonomy import TaxonomyError

    try:
        return taxonomy.find_tasks(*names)
    except TaxonomyError as err:  # its level counts the names as passed: a group named as the type shifts them
        raise ValueError(f"{where}: field '{_TASK_FIELDS[err.level or 0]}': {err}") from None


#: Labels, and the experts who gave them (``expert_ids``, one per expert score), belong to one criterion: a row
#: without ``criteria_name`` that carries them is refused, since copying them onto every chosen criterion would score
#: the judge against made-up references.
_PER_CRITERION = ("expert_scores", "expert_feedback", "criteria_score", "annotations", "expert_ids")
#: Columns that describe one criterion (a custom criterion's rubric, the released data's description and rubric
#: example, a criterion id): on a row that names no criterion they are refused, not dropped (a rubric was replaced
#: by the taxonomy's without a word) nor copied onto every chosen criterion beside that criterion's own rubric.
_ONE_CRITERION = ("rubrics", "criteria_description", "rubrics_example", "criterion_id")


def _refuse_criterion_columns(row: Mapping, where: str) -> None:
    """Refuse a row without ``criteria_name`` whose columns belong to one criterion (``_PER_CRITERION`` labels,
    ``_ONE_CRITERION`` descriptions) or name the criteria as judge-serve's items do (``criteria``: a list there;
    ``"auto"`` alone asks for what this does and is dropped), naming the row and the field."""
    given = lambda key: row.get(key) not in (None, "", [], ())  # noqa: E731 - an empty column carries nothing
    labelled = [k for k in _PER_CRITERION if given(k)]
    if labelled:
        raise ValueError(f"{where}: field '{labelled[0]}' labels one criterion, but the row names none "
                         "(criteria_name) for criteria: auto to expand; give criteria_name, or drop the labels")
    described = [k for k in _ONE_CRITERION if given(k)]
    if described:
        raise ValueError(f"{where}: field '{described[0]}' describes one criterion, but the row names none "
                         "(criteria_name); give criteria_name (one row per criterion), or drop the column for "
                         "criteria: auto to choose the criteria")
    if given("criteria") and row["criteria"] != "auto":
        raise ValueError(f"{where}: field 'criteria' is judge-serve's item field, not a data column: a data row names "
                         "its criterion with criteria_name and rubrics (one row per criterion); drop it for criteria: "
                         "auto to choose the criteria")


def _checked_columns(row: Mapping, source: str, index: int) -> JudgeRecord:
    """Check an auto row's columns as the record loader will check its items (``JudgeRecord.from_row``), before it
    is classified: an error names the user's file, row and field, not the generated ``auto_items.jsonl``, and comes
    before any classifier request. A lone surrogate in the instruction or answer is named so too (it failed
    unlocated, where the instruction's content key is hashed or the classifier's request encoded).

    Returns:
        The row read as one of its items with a stand-in criterion, which ``same_content`` compares with another
        row's to tell a repeated row from another one under the same derived id.

    Raises:
        RecordError: naming ``source``, the row and the field.
    """
    # One item of the row as expanded, with a stand-in criterion: what the loader checks of the row's own columns
    # (an id that is no text, a model_id that is a list, a reference_answer of 5, a surrogate in any text).
    probe = {k: v for k, v in row.items() if k not in _SET or k in ("id", "instruction", "answer")}
    return JudgeRecord.from_row({**probe, "criteria_name": "-", "rubrics": "-"}, source=source, index=index,
                                make_id=True)


def _derived_row_id(row: Mapping, position: int, recorded_by_id: Mapping[str, Mapping]) -> str:
    """The row id of a row that gives none: its content id (``judge.records.content_id`` over the row's
    ``ID_FIELDS``, the id a load without criteria: auto gives an id-less row), so that rows added, removed or
    reordered around it leave its items' ids, its recorded choice and its verdicts as they were.

    A run folder whose choices were recorded when such a row's id was its position keeps that id for it while the
    record at that position is of the same instruction: its verdicts are kept under the ids they were written with.
    """
    derived = content_id(row)
    legacy = recorded_by_id.get(str(position))
    if (derived not in recorded_by_id and legacy is not None and legacy.get("row") == position
            and legacy.get(INSTRUCTION_KEY) == instruction_key(row["instruction"])):
        return str(position)
    return derived


def _choice_or_failure(classifier: TaskClassifier, row: Mapping) -> TaskChoice:
    """The classifier's choice for a row, or, when classifying it fails (the llm method's endpoint down, or refusing
    an instruction over its context), that row's fallback with the failure as its reason: one row's failure is a
    value in task_choices.jsonl, not the end of a run that judges the others. It is counted (``expand_rows`` warns
    with the count; it refuses only data whose every row is such a failure) and a resumed run asks again
    (``expand_file(resume=True)``). (judge-serve answers such a request 502 instead: a client there can retry it.)"""
    try:
        return classifier.choose(row["instruction"], row["answer"])
    except Exception as err:  # noqa: BLE001 - any method's failure on one row is that row's recorded fallback
        return TaskChoice.failed(f"the classifier failed: {type(err).__name__}: {str(err)[:200]}",
                                 getattr(classifier, "name", "classifier"))


def _is_failure(record: Mapping) -> bool:
    """A choice record (``TaskChoice.to_dict()``) of a choice that failed (``TaskChoice.is_failure``)."""
    return not record.get("label")


def failed_choices(path: str | Path) -> list[dict]:
    """The records of ``task_choices.jsonl`` whose choice failed (``TaskChoice.is_failure``: the classifier raised,
    or named no leaf), which a resumed run classifies again."""
    with Path(path).open(encoding="utf-8") as fh:
        return [row for row in map(json.loads, filter(str.strip, fh)) if _is_failure(row)]


#: What ``choice_levels`` counts the expanded rows by: where the classifier decided (``TaskChoice.level``: at the
#: leaf, at the task type, on the fallback set because it was unsure), ``leaf_untested`` (a leaf taken without the
#: policy's probability tests, all or the leaf-share one: the llm method on an endpoint that gives no logprobs),
#: ``failed`` (a failed choice, also on the fallback set), and ``given`` (rows that name their task: nothing was
#: classified). Each row is counted under one of them.
CHOICE_LEVELS = ("leaf", "leaf_untested", "task_type", "fallback", "failed", "given")


def choice_levels(choices: Iterable[Mapping] | str | Path) -> dict[str, int]:
    """The expanded rows counted by ``CHOICE_LEVELS``, from their choice records (``expand_rows``' second value, or
    the ``task_choices.jsonl`` ``expand_file`` wrote). Each row judged on the fallback set or at the task type has
    its reason in its record; this is the count a run reports, since the per-row records alone do not say how much
    of a dataset was judged on the 13 criteria for any text rather than on its task's. Rows that name their
    criteria (``criteria_name``) have no record and are not counted. The counts add up to the rows expanded; how
    many of them are Zero-Shot is ``zero_shot_choices``."""
    counts = dict.fromkeys(CHOICE_LEVELS, 0)
    for record in _records(choices):
        # A failed choice is recorded at the fallback level too: counted apart, as a failure, not as doubt. A leaf
        # without its probability (no logprobs) passed no test: counted apart from the leaves that passed them.
        key = ("given" if record.get("method") == "given" else "failed" if _is_failure(record)
               else "leaf_untested" if record.get("level") == "leaf" and record.get("probability") is None
               else record.get("level"))
        counts[key] = counts.get(key, 0) + 1
    return counts


#: A task chosen at a task-type probability below this is more likely wrong than right, by the classifier's own
#: (calibrated, for tfidf) probability, though a threshold below it (the shipped tfidf one, chosen for the criteria
#: it gives, not for the task) lets it through: such rows are counted in a warning (``taken_unsure``).
UNSURE_BELOW = 0.5


def taken_unsure(choices: Iterable[Mapping] | str | Path) -> int:
    """How many of the expanded rows (their choice records, as ``choice_levels`` reads them) were judged on a chosen
    task, at the leaf or the task type, whose stated task-type probability is below ``UNSURE_BELOW``. Rows that fell
    back, failed or named their task are not counted, nor a choice without a probability (``leaf_untested``)."""
    count = 0
    for record in _records(choices):
        p = record.get("task_type_probability")
        count += (record.get("method") != "given" and not _is_failure(record) and not record.get("fallback")
                  and isinstance(p, (int, float)) and p < UNSURE_BELOW)
    return count


def zero_shot_choices(choices: Iterable[Mapping] | str | Path) -> int:
    """How many of the expanded rows (their choice records, as ``choice_levels`` reads them) were judged on a
    Zero-Shot task (``TaskChoice.zero_shot``: a held-out task type chosen or given, such as Literary text / Poetry):
    their items are in the Zero-Shot test, judged on criteria the judges were not trained on. Derived from each
    record's task and criteria, so a record written before records carried ``zero_shot`` is counted too."""
    return sum(zero_shot_choice(record.get("task_type") or "", record.get("criteria") or (),
                                bool(record.get("fallback")) or _is_failure(record))
               for record in _records(choices))


def _records(choices: Iterable[Mapping] | str | Path) -> list[Mapping]:
    """Choice records as given, or read from a ``task_choices.jsonl``."""
    if isinstance(choices, (str, Path)):
        with Path(choices).open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    return list(choices)


#: The field of a choice record holding ``instruction_key`` of the row it was made for.
INSTRUCTION_KEY = "instruction_key"


def instruction_key(instruction: str) -> str:
    """What a recorded choice is checked against before a resumed expansion reuses it: the content key
    (``judge.plumbing.run_folder.content_key``) of the row's instruction, all a shipped method reads (``tfidf``,
    ``head``, ``llm``: the answer must not move the task it is judged against), so an edited instruction is
    classified again while an edited answer keeps its choice (its items are rebuilt from the row anyway)."""
    from judge.plumbing.run_folder import content_key

    return content_key(instruction)


#: The field of a choice record holding ``classifier_identity`` of the classifier that made it.
CLASSIFIER_KEY = "classifier"
#: The fields of a choice record beside those of ``TaskChoice.to_dict``.
_RECORD_FIELDS = ("row", "id", INSTRUCTION_KEY, CLASSIFIER_KEY)


def classifier_identity(classifier: TaskClassifier) -> str:
    """What a recorded choice is checked against before a resumed expansion reuses it: the classifier's
    ``identity`` (a tfidf artefact's weights with its temperature, a head export's files with its input length, an
    llm model with its guided parameter and ``max_tokens``; each with its threshold), else its name for a classifier
    that states none. A run resumed with another artefact under the same path, another model, or another of those
    settings classifies every row again; the llm endpoint's address is no part of it (the same model elsewhere
    chooses alike)."""
    identity = getattr(classifier, "identity", None)
    return identity if isinstance(identity, str) and identity else str(getattr(classifier, "name", "classifier"))


def _reusable(record: Mapping | None, instruction: str, identity: str) -> TaskChoice | None:
    """The choice a previous expansion recorded for a row (looked up by row id), when it still holds: it did not
    fail, it was made for the instruction the row has now, by the classifier asked now (``classifier_identity``),
    and it was a classification: a record of a task the row named (method ``given``) is not one for a row that
    names none now. A record without either key (written before records carried it) is not reusable: nothing says
    which text or which classifier it was made for, so its row is classified again."""
    if (record is None or _is_failure(record) or record.get("method") == "given"
            or record.get(INSTRUCTION_KEY) != instruction_key(instruction)
            or record.get(CLASSIFIER_KEY) != identity):
        return None
    return TaskChoice.from_dict({k: v for k, v in record.items() if k not in _RECORD_FIELDS})


def read_choice_records(path: str | Path) -> dict[int, dict]:
    """The records of a ``task_choices.jsonl`` by row index, each checked for what ``_reusable`` reads.

    Raises:
        ValueError: a line that is not a JSON object, has no integer ``row``, or holds a field neither a
            ``TaskChoice`` nor a choice record has, naming the file and line (a hand-edited or foreign file).
    """
    known = {f.name for f in dataclasses.fields(TaskChoice)} | {"zero_shot", *_RECORD_FIELDS}
    out: dict[int, dict] = {}
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{path}: line {number}: not JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}: line {number}: not a JSON object")
            row = record.get("row")
            if not isinstance(row, int) or isinstance(row, bool):
                raise ValueError(f"{path}: line {number}: field 'row' is {row!r}, not a row index")
            unknown = sorted(set(record) - known)
            if unknown:
                raise ValueError(f"{path}: line {number}: unknown field(s) {unknown} in a task choice record; "
                                 "remove the file to classify every row again")
            out[row] = record
    return out


def _claim_item_id(item_ids: dict[str, int], item_id: str, index: int, source: str) -> None:
    """Record that the row at ``index`` (named by ``row_place``) gives an item ``item_id``; refuse an id an earlier
    row's item has (a pass-through row's own id ``1::censor`` and row ``1``'s expanded item), which would otherwise
    surface only when the items file is loaded, naming the generated file rather than the rows."""
    if item_id in item_ids:
        raise ValueError(f"{source}: {row_place(index)}: item id {item_id!r} is also the id of an item of "
                         f"{row_place(item_ids[item_id])} (expanded items are <row id>::<criterion id>): give one of "
                         "the rows another id")
    item_ids[item_id] = index


def _passed_through(row: Mapping, source: str, index: int, item_ids: dict[str, int],
                    named: dict[str, JudgeRecord]) -> dict:
    """A row that names its criterion, as it goes into the items: checked as the record loader checks it
    (``JudgeRecord.from_row``), so that a bad field is named at the user's file and row, before anything is
    written, and given its content id (``judge.records.content_id``, as a load gives an id-less row) when it has
    none: the expanded items beside it all have ids, and the loader refuses a file that mixes rows with and without.
    The same row twice (same id, same content) is let through, for the loader to drop as it drops duplicates; a
    row of another content under an item id already given is refused (``_claim_item_id``).

    Raises:
        RecordError: a field the loader refuses, naming ``source``, the row and the field.
        ValueError: an item id an earlier row's item has.
    """
    record = JudgeRecord.from_row(row, source=source, index=index, make_id=True)
    item = {**row, "id": record.id} if gives_no_id(row.get("id")) else dict(row)
    earlier = named.get(record.id)
    if earlier is not None and same_content(record, earlier):
        return item
    _claim_item_id(item_ids, record.id, index, source)
    named[record.id] = record
    return item


def expand_rows(rows: Iterable[Mapping], classifier: TaskClassifier, source: str = "data",
                recorded: Mapping[int, Mapping] | None = None,
                indices: Sequence[int] | None = None) -> tuple[list[dict], list[dict]]:
    """``criteria: auto`` over a dataset: every (instruction, answer) row becomes one item per chosen criterion.

    Rows that already name a criterion (``criteria_name``) pass through unchanged, so a file may mix both. A row that
    names its task (``task_type``, ...) gets that task's criteria, not a classifier's guess (``_given_task``). Every
    other column of a row is copied into its items.
    Item ids are ``<row id>::<criterion id>``, stable across runs: the row id is the row's ``id``, else its content
    id (``_derived_row_id``), so rows added or reordered around a row without one leave its ids as they were. An
    exact duplicate row (the same content, with or without the same id) is expanded once, as a load keeps one of
    two copies, and the copies left out are counted in a warning naming each and its first; an id given twice on
    other content is refused.

    A row the classifier fails on is judged on the fallback criteria with the failure as its reason
    (``_choice_or_failure``); the failures are counted and logged as one warning. The rows are counted by the level
    their criteria were decided at (``choice_levels``) in one more line, a warning when the classifier was unsure of
    any row (judged on the fallback set), so that a run says how many of them were. The expansion is refused
    (``ChoicesFailed``) only when every row of the data is such a failure (no row names its criteria or its task,
    none was classified): nothing would be judged but the fallback set. One failed row among rows with
    ``criteria_name`` is a warning, not the end of the run.

    Args:
        recorded: choice records of an earlier expansion by row index (``task_choices.jsonl`` rows): a row's
            recorded choice, found by its row id, is reused when it did not fail (``TaskChoice.is_failure``), was
            made for the row's current instruction (``instruction_key``) and by the classifier asked now
            (``classifier_identity``); new or edited rows, failed choices, choices of another classifier and
            records without either key are classified anew. How many were reused is logged.
        indices: each row's index as its reader gave it (a ``judge.records.LineIndex`` for a JSONL line), so that
            an error names the row as the record loader does ("line 3": blank lines counted); default its position
            ("row 0"). Choice records' ``row`` and ``recorded``'s keys stay by position.

    Returns:
        (items, choices): the POLLUX-format items, and one choice record per expanded row (``row`` index, ``id``
        and ``TaskChoice.to_dict()`` fields) for a ``task_choices.jsonl`` beside the predictions;
        ``choice_levels(choices)`` counts them by level.

    Raises:
        ValueError: a row without ``instruction`` or ``answer``, or a row without ``criteria_name`` that carries
            expert labels (they belong to one criterion), or a row naming a task the taxonomy lacks or a task type
            whose leaves have no criterion in common (``_given_task``), naming the source, row and field; an item
            id two rows give (``_claim_item_id``).
        ChoicesFailed: every row is a failed choice (a ``ValueError``).
    """
    items, choices = [], []
    taxonomy = load_taxonomy()
    # By row id, not index: a row inserted above the others keeps their choices (the key still checks each).
    by_id = {str(r.get("id")): r for r in (recorded or {}).values()}
    seen: dict[str, tuple[int, JudgeRecord]] = {}  # row id -> the row that first gave it, as _checked_columns read it
    repeated: list[tuple[int, int]] = []  # (row, the earlier row it repeats): rows given twice, with or without an id
    item_ids: dict[str, int] = {}  # item id -> the row that gave it (pass-through and expanded rows alike)
    named: dict[str, JudgeRecord] = {}  # a pass-through row's item id -> its record (its columns in its extra)
    asked, failed = 0, []  # rows the classifier was asked about (or whose earlier choice stood); (row, reason) failed
    reused, other_classifier = 0, 0
    identity = classifier_identity(classifier)
    n_rows = 0
    for i, row in enumerate(rows):
        n_rows += 1
        index = indices[i] if indices is not None else i
        where = f"{source}: {row_place(index)}"
        if row.get("criteria_name"):
            if row.get("criteria") not in (None, "", [], ()):  # judged as named, the other field copied on unread
                raise ValueError(f"{where}: field 'criteria' ({got_words(row['criteria'])}) beside criteria_name "
                                 f"{row['criteria_name']!r}: a row names its criterion or asks for the criteria to be "
                                 "chosen (criteria: auto), not both; drop one")
            items.append(_passed_through(row, source, index, item_ids, named))
            continue
        if "answer" not in row and {"answer_1", "answer_2"} <= set(row):
            # a pairwise row: said as such, where "'answer' must be a non-empty string" left its maker guessing
            raise ValueError(f"{where}: a pairwise row (answer_1, answer_2); criteria: auto chooses the criteria to "
                             "judge one answer by: give (instruction, answer) rows, or judge the pairs as they are, "
                             "without criteria: auto")
        for key in ("instruction", "answer"):
            if not isinstance(row.get(key), str) or is_blank(row[key]):
                raise ValueError(f"{where}: '{key}' must be a non-empty string for criteria: auto")
        _refuse_criterion_columns(row, where)
        probe = _checked_columns(row, source, index)
        derived = gives_no_id(row.get("id"))  # the loader's rule: blank text is none, 0 is an id
        row_id = _derived_row_id(row, i, by_id) if derived else str(row["id"])
        if row_id in seen:
            first, first_probe = seen[row_id]
            # The same row again, with its id or without: left out and counted, as a load leaves out an exact
            # duplicate of either kind (judge.records.note_duplicate), where a copy with an id was refused.
            if same_content(probe, first_probe):
                repeated.append((index, first))
                continue
            if derived:
                raise ValueError(f"{where}: the row has no id, and its content id {row_id!r} (judge.records."
                                 f"content_id: its instruction, answer, reference_answer, model_id and task columns) "
                                 f"is also that of {row_place(first)}, whose other columns differ: give the rows ids")
            raise ValueError(f"{where}: id {row_id!r} repeats the id of {row_place(first)} with other content: its "
                             "items' ids (<row id>::<criterion id>) would collide")
        seen[row_id] = (index, probe)
        carried = {k: v for k, v in row.items() if k not in _SET}  # nothing of the row lost on the way
        chosen = _given_task(row, taxonomy, where)
        if chosen is None:
            asked += 1
            earlier = by_id.get(row_id)
            chosen = _reusable(earlier, row["instruction"], identity)
            if chosen is not None:
                reused += 1
            else:
                other_classifier += (earlier is not None and not _is_failure(earlier)
                                     and earlier.get("method") != "given" and earlier.get(CLASSIFIER_KEY) != identity)
                chosen = _choice_or_failure(classifier, row)
            if chosen.is_failure:
                failed.append((index, chosen.reason))
        got, record = expand_criteria(row["instruction"], row["answer"], chosen, extra=carried)
        for item in got:
            item["id"] = f"{row_id}::{item['criterion_id']}"
            _claim_item_id(item_ids, item["id"], index, source)
        items.extend(got)
        choices.append({"row": i, "id": row_id, INSTRUCTION_KEY: instruction_key(row["instruction"]),
                        CLASSIFIER_KEY: identity, **record})  # fmt: skip
    if repeated:
        shown = ", ".join(f"{row_place(k)} = {row_place(first)}" for k, first in repeated[:3])
        log.warning("criteria auto: %d exact duplicate rows left out (%s%s), as a load leaves them out",
                    len(repeated), shown, ", ..." if len(repeated) > 3 else "")
    if recorded:
        log.info("criteria auto: reused the recorded task choice of %d rows, classified %d anew (new or edited "
                 "instructions, failed choices, choices of another classifier, records without an instruction key)",
                 reused, asked - reused)
        if other_classifier:
            log.warning("criteria auto: %d rows' recorded task choices were made by another classifier (another "
                        "artefact or model, or another threshold, temperature, input length or max_tokens) or "
                        "record none: classified again", other_classifier)
    if failed:
        name = getattr(classifier, "name", "classifier")
        first = f"{row_place(failed[0][0])}: {failed[0][1]}"
        # Refused only when nothing else would be judged: a failed row among rows naming their criteria or task
        # (or classified) is one row's fallback, not the end of the run.
        if len(failed) == n_rows - len(repeated):
            raise ChoicesFailed(f"{source}: the task classifier ({name}) failed on all {asked} rows it was asked "
                                f"about ({first}), and no row names its criteria or task; nothing would be judged "
                                "on a chosen task. Fix the classifier (its endpoint, its artefact) and run again")
        log.warning("criteria auto: the task classifier (%s) failed on %d of %d rows (%s); they are judged on the %d "
                    "criteria for any text, and a resumed run classifies them again", name, len(failed), asked,
                    first, len(fallback_criteria(taxonomy)))
    if n_rows and not choices:
        # Said, not refused: the run judges the named criteria as it would without auto, but nothing was classified.
        log.warning("criteria auto: every one of the %d rows of %s names its criterion (criteria_name): nothing was "
                    "classified, the rows are judged as given", n_rows, source)
    if choices:
        levels = choice_levels(choices)
        by_level = ", ".join(f"{k} {n}" for k, n in levels.items())
        if levels["fallback"]:
            log.warning("criteria auto: %d of %d rows judged on the fallback set: the classifier was unsure (the %d "
                        "criteria for any text; rows by level: %s; each row's reason is in its task choice)",
                        levels["fallback"], len(choices), len(fallback_criteria(taxonomy)), by_level)
        else:
            log.info("criteria auto: %d rows, by level: %s", len(choices), by_level)
        if levels["leaf_untested"]:
            log.warning("criteria auto: %d of %d rows judged at a leaf taken untested: the classifier gave no "
                        "probability (no logprobs), so the threshold or leaf-share test was not applied; each row's "
                        "reason is in its task choice", levels["leaf_untested"], len(choices))
        unsure = taken_unsure(choices)
        if unsure:
            log.warning("criteria auto: %d of %d rows were judged on a task chosen at a task-type probability below "
                        "%.1f, above the classifier's threshold %.3f: more likely another task than the one chosen; "
                        "each row's probability is in its task choice (task_type_probability), and a row that names "
                        "its task (task_type) is judged on that task's criteria", unsure, len(choices), UNSURE_BELOW,
                        getattr(classifier, "threshold", float("nan")))
        n_zero_shot = zero_shot_choices(choices)
        if n_zero_shot:
            log.info("criteria auto: %d of %d rows on a Zero-Shot task type, chosen or given (zero_shot in their "
                     "task choice): their items are in the Zero-Shot test, judged on criteria the judges were not "
                     "trained on (before --split and --limit choose the items judged)",
                     n_zero_shot, len(choices))
    return items, choices


def expand_file(source: str | Path, out_dir: str | Path, classifier: TaskClassifier, resume: bool = False) -> Path:
    """``expand_rows`` over a JSONL file: writes ``auto_items.jsonl`` (POLLUX-format items for ``judge.load_records``)
    and ``task_choices.jsonl`` (one choice record per expanded row) into ``out_dir``; returns the items' path.

    Args:
        resume: reuse the choices ``out_dir/task_choices.jsonl`` already records for rows whose id and
            instruction are unchanged (``expand_rows``), classifying again the rows whose choice failed
            (``failed_choices``: a transient failure, the llm method's endpoint down, is not kept for good) and the
            rows added or edited since; the data is read every time, so the items always follow it, and the rows
            classified before keep their choice (and the predictions made of their items).

    Raises:
        ValueError: a line that is not UTF-8 JSON or not an object (a ``judge.RecordError``, as ``load_records``
            refuses it), or a row ``expand_rows`` refuses (naming file and line);
            ``ChoicesFailed`` when every row is a failed choice. Nothing is written then.
    """
    from judge.record_sources import jsonl_rows

    source, out = Path(source), Path(out_dir)
    if source.suffix.lower() != ".jsonl":
        raise ValueError(f"{source}: criteria: auto reads (instruction, answer) rows from a .jsonl file "
                         "(judge-eval convert writes one from any source)")
    rows, indices = [], []
    # Read as load_records reads JSONL (lines end at b"\n" only, not at a U+2028 json.dumps writes raw; a byte
    # order mark skipped; a byte that is not UTF-8 named with its line), keeping each row's LineIndex so that an
    # error names the line. Its own reading refused a BOM file load_records takes and let a bad byte out as a bare
    # UnicodeDecodeError naming neither file nor line.
    for where, index, row in jsonl_rows(source):
        if not isinstance(row, dict):
            raise RecordError(where, index, None, "not a JSON object")
        rows.append(row)
        indices.append(index)
    recorded = {}
    if resume and (out / "task_choices.jsonl").is_file():
        recorded = read_choice_records(out / "task_choices.jsonl")
    items, choices = expand_rows(rows, classifier, str(source), recorded, indices)
    out.mkdir(parents=True, exist_ok=True)
    # Each file replaced whole (a kill leaves the old one or the new one), the choices last: a kill between the two
    # leaves either no choices (a first expansion: done again) or the old ones, whose failed rows a resume asks
    # again, writing both anew.
    from judge.plumbing.journal import rewrite_journal

    for name, data in (("auto_items.jsonl", items), ("task_choices.jsonl", choices)):
        rewrite_journal(out / name, data)
    return out / "auto_items.jsonl"
