"""A judging criterion as a request names it, resolved against the POLLUX taxonomy.

A ``/v1/judge`` item names its criteria as taxonomy names or ids (``"Креативность"``, ``"facts__3"``), read for the
item's task (``task_type`` / ``task_subtype`` / ``task_subsubtype``, which pick each name's rubric variant), or as
custom criteria (``judge.wire.CustomCriterion``: a name and a rubric, text or a mapping from level to text).
``resolve_criterion`` turns one into what the judge is shown and scored on. judge-serve resolves every item with it
(``serve.schema.resolve_criteria``), and so does the reward client for a sample it cannot send
(``judge.reward_clients``), which must fail exactly the criteria judge-serve would refuse and learn the others'
names, ids and scales as judge-serve would give them.

Typical use::

    task = task_path("Code modification", "Python")         # None when the item names no task
    crit = resolve_criterion("Креативность", task)          # or a CustomCriterion(name=..., rubrics=...)
    # on CriterionError: err.param("items[0].criteria[1]") is that path, or it with ".name" / ".rubrics"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judge.plumbing.invisible_text import is_blank
from judge.scales import Scale, ScaleError, level_of_key, scale_of
from judge.taxonomy import RUBRIC_LEVEL_SEPARATOR, Criterion, TaxonomyError, load_taxonomy

if TYPE_CHECKING:  # the wire's pydantic is imported by whoever builds one
    from judge.wire import CustomCriterion

__all__ = ["CriterionError", "ResolvedCriterion", "repeated_criterion", "resolve_criterion", "task_path"]


class CriterionError(ValueError):
    """A criterion that cannot be resolved: an unknown name or id (or one the task does not use), an empty name or
    rubric, or a rubric from which no scale can be read.

    Attributes:
        reason: what is wrong, without the field's path (the taxonomy's or the scale reader's own message).
        field: the custom criterion's field at fault (``"name"``, ``"rubrics"``), or None: the criterion itself.
    """

    def __init__(self, reason: str, field: str | None = None):
        super().__init__(reason)
        self.reason, self.field = reason, field

    def param(self, path: str) -> str:
        """The path of the field at fault, given the criterion's own (``items[2].criteria[0]`` -> ``...rubrics``)."""
        return f"{path}.{self.field}" if self.field else path


@dataclass(frozen=True)
class ResolvedCriterion:
    """A criterion ready for the prompt.

    Attributes:
        name: the Russian name shown to the judge.
        rubrics: the rubric text shown to the judge.
        scale: the allowed scores.
        id: the taxonomy id, or None for a custom criterion.
    """

    name: str
    rubrics: str
    scale: Scale
    id: str | None = None

    @classmethod
    def of(cls, criterion: Criterion) -> ResolvedCriterion:
        """A taxonomy criterion as the Russian prompt shows it."""
        return cls(criterion.name["ru"], criterion.rubric("ru"), criterion.scale, criterion.id)


def repeated_criterion(criteria: Sequence[ResolvedCriterion] | None) -> tuple[int, int] | None:
    """The first criterion one item names twice, as ``(first, again)`` positions, or None: one taxonomy criterion
    however it was named (``"Креативность"`` and its id), or one custom name with one rubric. A reward label that
    names one twice would have it judged twice and weigh twice in the reward, silently: every reward path (the
    ``/get_reward`` route, ``judge-serve --check-labels``, the trl and verl clients) refuses it by this rule."""
    seen: dict[Any, int] = {}
    for k, criterion in enumerate(criteria or ()):
        key = criterion.id if criterion.id is not None else (criterion.name, criterion.rubrics)
        if key in seen:
            return seen[key], k
        seen[key] = k
    return None


def task_path(task_type: str | None, subtype: str | None = None,
              subsubtype: str | None = None) -> tuple[str | None, ...] | None:
    """The task an item names, as the taxonomy looks it up: its names in order up to the last one given, a blank
    level between them None (unknown, narrowed by the levels given, as ``Taxonomy.leaf`` reads a row: a blank
    subtype does not make the sub-subtype a subtype); None when it names none.

    Raises:
        TaxonomyError: no task of the taxonomy lies under the path (the message names the closest task types;
            ``level`` the name at fault, counted as passed).
    """
    names = [(name.strip() or None) if isinstance(name, str) else name for name in (task_type, subtype, subsubtype)]
    while names and names[-1] is None:
        names.pop()
    if not names:
        return None
    if names[0] is None:  # a subtype with no task type names no task the taxonomy can look up
        raise TaxonomyError("no task type given beside its subtype", level=0)
    path = tuple(names)
    load_taxonomy().find_tasks(*path)
    return path


def resolve_criterion(spec: str | CustomCriterion, task: tuple[str, ...] | None = None) -> ResolvedCriterion:
    """One criterion of an item, resolved.

    Args:
        spec: a taxonomy name or id, or a custom criterion (its name shown as given, whitespace around it
            included; its rubric text as given, a rubric mapping as the taxonomy lays out its own rubrics).
        task: the item's ``task_path``: with it, a name resolves to the variant the task's leaf lists.

    Returns:
        The ``ResolvedCriterion`` (id None for a custom criterion).

    Raises:
        CriterionError: an unknown name or id, or one the task does not use (``field`` None); an empty name
            (``"name"``); an empty rubric, or one from which no scale can be read (``"rubrics"``).
    """
    if isinstance(spec, str):
        try:
            return ResolvedCriterion.of(load_taxonomy().criterion(spec, task=task))
        except TaxonomyError as err:
            raise CriterionError(str(err)) from None
    # Shown as given, as POLLUX's str.format shows a record's criteria_name: judge-eval sends records' names as custom
    # criteria so the served prompt is the one POLLUX renders; blank is refused all the same.
    name = spec.name
    if is_blank(name):  # white space and characters that show nothing: judge.load_records' rule
        raise CriterionError("must not be empty", "name")
    text = _rubric_text(spec.rubrics)
    if is_blank(text):
        raise CriterionError("must not be empty", "rubrics")
    try:
        # A mapping is read by its keys: its texts may themselves hold numbered lines.
        scale = scale_of(spec.rubrics if isinstance(spec.rubrics, Mapping) else text)
    except ScaleError as err:
        raise CriterionError(str(err), "rubrics") from None
    return ResolvedCriterion(name, text, scale, None)


def _rubric_text(rubrics: str | Mapping[str, str]) -> str:
    """The rubric as the judge reads it: text as given; a mapping in the taxonomy's own layout ("level: text" joined
    by a blank line, by level), so custom rubrics read like shipped ones."""
    if isinstance(rubrics, str):
        return rubrics
    ordered = sorted(rubrics.items(), key=lambda kv: _level_key(kv[0]))
    return RUBRIC_LEVEL_SEPARATOR.join(f"{level}: {text}" for level, text in ordered)


def _level_key(key) -> tuple[int, str]:
    """A mapping's key as a sort key: the level ``scale_of`` reads from it (``level_of_key``); a key that names none
    sorts as 0 (``scale_of`` refuses such a rubric, after its text is built)."""
    level = level_of_key(key)
    return (0, str(key)) if level is None else (level, "")
