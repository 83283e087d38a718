"""The POLLUX criteria and task taxonomy, vendored from the public POLLUX repository (MIT; see data/NOTICE.md).

``criteria.json`` holds 295 criterion entries keyed by id: 60 base criteria plus domain/task variants named
``base__N`` that share the base's name but word the rubric for their domain. ``tasks.json`` holds 8 task groups,
35 task types and 152 leaf tasks, each leaf listing the ids of the criteria experts scored it on.

Typical use::

    tax = load_taxonomy()
    crit = tax.criterion("Креативность", task=("Literary text", "Poetry"))   # the variant Poetry uses
    prompt_rubric = crit.rubric("ru")                                      # "0: ...\\n\\n1: ...\\n\\n2: ..."
    tax.criteria_for("Code modification", "Python")                        # the leaf's criteria set

The published data has flaws; each is repaired deliberately and recorded in ``Criterion.flaws`` (NOTICE.md).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from judge.plumbing.invisible_text import composed_visible
from judge.scales import Scale, scale_of

__all__ = [
    "CRITERION_GROUPS",
    "Criterion",
    "Task",
    "Taxonomy",
    "TaxonomyError",
    "load_taxonomy",
    "RUBRIC_LEVEL_SEPARATOR",
    "BEST_AT_LOWEST_GROUPS",
    "oriented_scale",
    "name_key",
    "quoted_name",
]

CRITERION_GROUPS = ("Critical", "Fine-grained", "Domain-specific", "Task-specific", "Subjective")
# Rubric levels are rendered as "level: text" joined by a blank line, the layout of the POLLUX dataset's
# `rubrics` column. Part of the prompt template: changing it changes PROMPT_VERSION.
RUBRIC_LEVEL_SEPARATOR = "\n\n"
_LANGS = ("ru", "en")
# Groups whose criteria are yes/no questions about a violation, best at 0: "Is there a critical format violation
# ...?" and "No output because of the censor?" (paper, Appendix P.1: "0: ... can be further evaluated",
# "1: ... It does not make sense to further evaluate"). Every other POLLUX criterion is best at its top level,
# the two-level ones included (Operability "1: The code runs", Correctness of units of measurement "1: ... specified
# correctly"; criteria.json).
BEST_AT_LOWEST_GROUPS = ("Critical",)


class TaxonomyError(KeyError):
    """An unknown or ambiguous criterion or task; the message names the closest matches.

    Attributes:
        level: for a task lookup, which of the names passed is at fault: 0 the task type, 1 the subtype, 2 the
            sub-subtype (counted as passed, so a group named as the task type shifts the others by one); a caller
            reading a row names that row's column by it. None for a criterion.
    """

    def __init__(self, message: str, level: int | None = None):
        super().__init__(message)
        self.level = level

    def __str__(self) -> str:  # KeyError repr-quotes its message; show it as written
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Criterion:
    """One POLLUX criterion (a base criterion or one of its domain/task variants).

    Attributes:
        id: the key in criteria.json (``creativity``, ``creativity__3``).
        base_id: the id without its variant suffix.
        name: {"ru": ..., "en": ...}; description: the same for ``desc``.
        group: one of CRITERION_GROUPS (English).
        scale_texts: {"ru": {level: text}, "en": {level: text}} after repairs.
        flaws: the repairs applied to the published entry, as short codes.
    """

    id: str
    base_id: str
    name: dict[str, str]
    description: dict[str, str]
    group: str
    domain: str | None
    scale_texts: dict[str, dict[int, str]]
    flaws: tuple[str, ...] = ()

    @property
    def scale(self) -> Scale:
        """The criterion's levels, best at the lowest for the Critical group (``BEST_AT_LOWEST_GROUPS``)."""
        scale = Scale(tuple(sorted(self.scale_texts["ru"])))
        return scale.best_at_lowest() if self.group in BEST_AT_LOWEST_GROUPS else scale

    def rubric(self, lang: str = "ru") -> str:
        """The rubric text for prompts: ``"0: ...\\n\\n1: ...\\n\\n2: ..."`` in ``lang``."""
        texts = self.scale_texts[lang]
        return RUBRIC_LEVEL_SEPARATOR.join(f"{level}: {texts[level]}" for level in sorted(texts))


@dataclass(frozen=True)
class Task:
    """One leaf task of the taxonomy.

    Attributes:
        group, task_type, subtype, subsubtype: English names along the path (subtypes None where absent): the keys
            of tasks.json.
        names_ru: the Russian names along the same path.
        criteria: criterion ids the leaf is scored on, in taxonomy order.
        has_gold: whether its instructions come with reference answers.
        complexity: {"easy"|"medium"|"hard": {"ru": ..., "en": ...}}.
        description: {"ru": ..., "en": ...}.
        domain: the leaf's domain, {"ru": "Общее", "en": "General-purpose"} ({} where tasks.json gives none).
        names_en: tasks.json's English ``name`` of each node along the path (group first, as ``names_ru``): the key
            but for two subtypes, ``Genres`` ("Literary movements, genres, and narrative modes", the name
            criteria.json's ``subtask1`` uses) and ``Words`` ("Words (within context or cultural translation)").
    """

    group: str
    task_type: str
    subtype: str | None
    subsubtype: str | None
    names_ru: tuple[str, ...]
    criteria: tuple[str, ...]
    has_gold: bool
    complexity: dict = field(default_factory=dict)
    description: dict = field(default_factory=dict)
    domain: dict[str, str] = field(default_factory=dict)
    names_en: tuple[str, ...] = ()

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(p for p in (self.task_type, self.subtype, self.subsubtype) if p)


#: Names longer than this get no "did you mean": the taxonomy's longest criterion name has 165 characters, and
#: difflib's matching is quadratic pure Python (an 800,000-character name took 1.9 s, holding the GIL).
SUGGEST_MAX_CHARS = 400


def _close(name: str, names: list[str], cutoff: float) -> list[str]:
    return difflib.get_close_matches(name, names, n=3, cutoff=cutoff) if len(name) <= SUGGEST_MAX_CHARS else []


def quoted_name(name: str, limit: int = 120) -> str:
    """A name as a message shows it, quoted and cut past ``limit`` characters: a client's may be megabytes long."""
    return repr(name) if len(name) <= limit else f"{name[:limit]!r}... [{len(name)} characters]"


def name_key(name: str) -> str:
    """Lookup key for a name: composed (NFC), case-folded, whitespace collapsed, the typographic apostrophe (’) read
    as ' and ё as е (other quotes are kept as written: «…» and "…" are two keys). The taxonomy's lookups read names
    by it, and so does whatever else keys on a criterion's name (``judge.rewards``' weights by name), so that a name
    the taxonomy finds is found there too.

    NFC first: text from macOS file names and some pipelines arrives decomposed ("й" as "и" + U+0306), which looks
    identical but compares unequal, and the Russian names of 74 of the 295 criterion entries and 13 of the 35 task
    types hold "й" or "ё". The characters that show nothing (``judge.plumbing.invisible_text``: a byte order mark, a
    left-to-right mark, a soft hyphen) are dropped, before composing (``composed_visible``, so that one between a
    letter and its mark leaves no letter decomposed): a name copied with one looks like the taxonomy's own."""
    name = composed_visible(name, "NFC").replace("’", "'").replace("ё", "е").replace("Ё", "Е")
    return re.sub(r"\s+", " ", name).strip().casefold()


def _repair(cid: str, raw: dict) -> Criterion:
    flaws: list[str] = []
    en_scale = {int(k): (v or "").strip() for k, v in raw["scale"]["en"].items()}
    ru_scale = {int(k): (v or "").strip() for k, v in raw["scale"]["ru"].items()}

    if set(en_scale) != set(ru_scale):
        # creativity__3: Russian keys 1..3 against English 0..2. The texts match level for level in order, and
        # every other creativity variant is 0..2, so the Russian texts move onto the English levels.
        if len(en_scale) != len(ru_scale):
            raise ValueError(f"criterion {cid}: scale level counts differ between languages")
        ru_scale = {en: ru_scale[ru] for en, ru in zip(sorted(en_scale), sorted(ru_scale))}
        flaws.append("ru_scale_keys_shifted")

    truncated = [level for level, text in ru_scale.items() if text.endswith(":")]
    if truncated:
        # The bullet list after the colon was lost in publication; a dangling colon tells the judge that
        # something follows. End the sentence instead.
        for level in truncated:
            ru_scale[level] = ru_scale[level][:-1].rstrip() + "."
        flaws.append("ru_scale_truncated:" + ",".join(map(str, sorted(truncated))))

    missing_en = [level for level, text in en_scale.items() if not text]
    for level in missing_en:
        en_scale[level] = ru_scale[level]
    if missing_en:
        flaws.append("en_scale_missing:" + ",".join(map(str, sorted(missing_en))))

    texts: dict[str, dict[str, str]] = {}
    for key in ("name", "desc"):
        ru, en = (raw[key]["ru"] or "").strip(), (raw[key]["en"] or "").strip()
        if not en:
            en = ru
            flaws.append(f"en_{key}_missing")
        texts[key] = {"ru": ru, "en": en}

    domain = raw.get("domain") or {}
    return Criterion(
        id=cid,
        base_id=cid.split("__")[0],
        name=texts["name"],
        description=texts["desc"],
        group=raw["crit_group"]["en"],
        domain=(domain.get("en") or None) if isinstance(domain, dict) else None,
        scale_texts={"ru": dict(sorted(ru_scale.items())), "en": dict(sorted(en_scale.items()))},
        flaws=tuple(flaws),
    )


def _leaves(node: dict, path: list[tuple[str, str]]) -> Iterable[tuple[list[tuple[str, str]], dict]]:
    if "criteria" in node:
        yield path, node
    for key in ("tasks", "subtasks_l1", "subtasks_l2"):
        for name, child in (node.get(key) or {}).items():
            yield from _leaves(child, path + [(name, child["name"]["ru"], child["name"].get("en") or name)])


class Taxonomy:
    """Criteria and tasks with lookups by id or by Russian/English name.

    Build it with ``load_taxonomy()`` (cached) rather than directly.
    """

    def __init__(self, criteria_raw: dict, tasks_raw: dict):
        self.criteria: dict[str, Criterion] = {cid: _repair(cid, raw) for cid, raw in criteria_raw.items()}
        self._by_name: dict[str, list[str]] = {}
        self._display_names: dict[str, str] = {}  # normalised -> as published, for suggestions
        for crit in self.criteria.values():
            for lang in _LANGS:
                self._display_names.setdefault(name_key(crit.name[lang]), crit.name[lang])
                ids = self._by_name.setdefault(name_key(crit.name[lang]), [])
                if crit.id not in ids:
                    ids.append(crit.id)

        self.tasks: list[Task] = []
        for group_key, group in tasks_raw.items():
            for path, leaf in _leaves(group, [(group_key, group["name"]["ru"], group["name"].get("en") or group_key)]):
                names = [p[0] for p in path[1:]] + [None, None]
                self.tasks.append(
                    Task(
                        group=group_key,
                        task_type=names[0],
                        subtype=names[1],
                        subsubtype=names[2],
                        names_ru=tuple(p[1] for p in path),
                        criteria=tuple(leaf["criteria"]),
                        has_gold=bool(leaf.get("has_gold")),
                        complexity=leaf.get("complexity") or {},
                        description=leaf.get("desc") or {},
                        domain={lang: text.strip() for lang, text in (leaf.get("domain") or {}).items() if text},
                        names_en=tuple(p[2] for p in path),
                    )
                )
        unknown = {c for t in self.tasks for c in t.criteria} - set(self.criteria)
        if unknown:
            raise ValueError(f"tasks.json refers to unknown criteria: {sorted(unknown)}")
        self._best_at_lowest_names = {name_key(c.name[lang]) for c in self.criteria.values()
                                      if c.group in BEST_AT_LOWEST_GROUPS for lang in _LANGS}
        # English and Russian names of task types (level 1) and of the nodes below them, for canonicalisation.
        self._task_type_names: dict[str, str] = {}
        self._task_type_display: dict[str, str] = {}  # name key -> the name as tasks.json writes it (suggestions)
        self._group_names: dict[str, str] = {}
        for task in self.tasks:
            for name in (task.task_type, task.names_ru[1]):
                self._task_type_names[name_key(name)] = task.task_type
                self._task_type_display[name_key(name)] = name
            for name in (task.group, task.names_ru[0]):
                self._group_names[name_key(name)] = task.group

    # ----------------------------------------------------------------- criteria

    def criterion(self, key: str, task: Task | tuple[str, ...] | str | None = None) -> Criterion:
        """Look up a criterion by id or by its Russian or English name.

        Args:
            key: a criterion id (``facts__3``) or name (``Креативность`` / ``Creativity``; case and whitespace
                do not matter).
            task: the task the criterion is used in (a ``Task``, a task-type name, or a path tuple as for
                ``find_tasks``). Several variants share a name; with a task, the variant its leaf lists wins.

        Returns:
            The ``Criterion``. Without a task, a name resolves to the base criterion when the base carries it,
            else to the first variant. With a task above several leaves, the variant they list; variants that
            render and score alike (one Russian rubric, one scale) are one to the judge, and the first stands.

        Raises:
            TaxonomyError: unknown key (the message names the closest matches), a name whose variants the
                given task does not list, or one whose leaves under the task list variants with different rubrics
                or scales (the message names each variant's id and its leaves; ``level``, as ``leaf``'s, is that
                of the field that must name the leaf: 1 ``task_subtype``, 2 ``task_subsubtype``; None for a ``Task``,
                where only an id can pick).
        """
        if key in self.criteria:
            return self.criteria[key]
        ids = self._by_name.get(name_key(key))
        if not ids:
            close = _close(name_key(key), list(self._by_name), cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(self._display_names[c]) for c in close)}?" if close else ""
            raise TaxonomyError(f"unknown criterion {quoted_name(key)}{hint}")
        if task is not None:
            names = task.path if isinstance(task, Task) else (task,) if isinstance(task, str) else tuple(task)
            leaves = [task] if isinstance(task, Task) else self.find_tasks(*names)
            listed = [cid for cid in ids if any(cid in leaf.criteria for leaf in leaves)]
            if not listed:
                raise TaxonomyError(f"criterion {quoted_name(key)} is not used by task {_describe(leaves)}")
            shown = {(self.criteria[cid].rubric("ru"), self.criteria[cid].scale) for cid in listed}
            if len(shown) > 1:
                # A path above several leaves (a task type without its subtype, or a subtype without its
                # sub-subtype) whose leaves word the criterion differently names no one rubric; criteria_for refuses
                # such a path the same way, and names the same field (level) as the one that must name the leaf.
                variants = "; ".join(
                    f"{cid} ({', '.join(' / '.join(leaf.path) for leaf in leaves if cid in leaf.criteria)})"
                    for cid in listed)
                # One leaf listing both (no leaf of the released taxonomy does) leaves no field to name: the id.
                level = self._leaf_level(names[0], leaves) if len(leaves) > 1 else None
                pick = f"its {('task_subtype', 'task_subsubtype')[level - 1]} (one leaf) or " if level else ""
                raise TaxonomyError(
                    f"criterion {quoted_name(key)} has {len(listed)} variants with different rubrics under task "
                    f"{_path_words(names)}: {variants}; name {pick}the variant's id", level=level)
            return self.criteria[listed[0]]
        base = [cid for cid in ids if "__" not in cid]
        return self.criteria[(base or ids)[0]]

    def criteria_for(self, task_type: str, subtype: str | None = None, subsubtype: str | None = None) -> list[Criterion]:
        """The criteria set of a task, in taxonomy order.

        Args:
            task_type, subtype, subsubtype: names along the task's path (English or Russian). A path that
                stops above the leaves is fine when all leaves below share one criteria set.

        Raises:
            TaxonomyError: unknown task, or leaves below the given path with different criteria sets (the
                message lists the subtypes to choose from; its ``level`` is the first level left blank below the task
                type, the field that must name the leaf, as ``judge-eval``'s ``criteria: auto`` names it).
        """
        leaves = self.find_tasks(task_type, subtype, subsubtype)
        sets = {leaf.criteria for leaf in leaves}
        if len(sets) > 1:
            options = sorted({" / ".join(leaf.path) for leaf in leaves})
            names = (task_type, subtype, subsubtype)
            given = [p for p in names if p]
            # the first level left blank below the task type must name the leaf (the last one, when all are given)
            blank = next((i for i in (1, 2) if not names[i]), 2)
            raise TaxonomyError(
                f"task {' / '.join(given)!r} has leaves with different criteria sets; name one of: "
                f"{'; '.join(options)}",
                level=blank,
            )
        return [self.criteria[cid] for cid in leaves[0].criteria]

    def is_best_at_lowest(self, criteria_name: str) -> bool:
        """Whether a criterion name (Russian or English, any case) is a Critical criterion's, best at 0."""
        return name_key(criteria_name) in self._best_at_lowest_names

    # ----------------------------------------------------------------- tasks

    @property
    def task_types(self) -> list[str]:
        """The 35 task types (English), in taxonomy order."""
        return list(dict.fromkeys(task.task_type for task in self.tasks))

    def canonical_task_type(self, name: str) -> str | None:
        """The English task-type name for an English or Russian task-type name, or None."""
        return self._task_type_names.get(name_key(name))

    def canonical_group(self, name: str) -> str | None:
        """The English group name for an English or Russian group name, or None."""
        return self._group_names.get(name_key(name))

    def find_tasks(self, task_type: str, subtype: str | None = None, subsubtype: str | None = None) -> list[Task]:
        """Leaves under a path of names (English: tasks.json's key or ``name``; or Russian; any case); an empty or
        None level matches any.

        ``task_type`` may also name a group (``AI as a Character``), in which case ``subtype`` names the task
        type below it, as some exports of the POLLUX data do.

        Raises:
            TaxonomyError: no leaf matches; the message names the closest task types, ``level`` the name at fault.
        """
        shift = int(self.canonical_task_type(task_type) is None and self.canonical_group(task_type) is not None
                    and bool(subtype))
        if shift:
            task_type, subtype, subsubtype = subtype, subsubtype, None
        canonical = self.canonical_task_type(task_type)
        if canonical is None:
            close = _close(name_key(task_type), list(self._task_type_names), cutoff=0.5)
            # as written (a key is lower-cased), a Russian name with the English one that run.json and reports use
            named = [(self._task_type_display[c], self._task_type_names[c]) for c in close]
            hint = (f"; did you mean {', '.join(repr(n) + ('' if n == en else f' ({en})') for n, en in named)}?"
                    if close else "")
            raise TaxonomyError(f"unknown task type {quoted_name(task_type)}{hint}", level=shift)
        leaves = [t for t in self.tasks if t.task_type == canonical]
        for depth, wanted in ((1, subtype), (2, subsubtype)):
            if not wanted:
                continue
            key = name_key(wanted)
            # by its key, its English name (two differ from their keys) or its Russian name
            chosen = [
                t for t in leaves
                if len(t.path) > depth and key in {name_key(t.path[depth]), name_key(t.names_ru[depth + 1]),
                                                   name_key(t.names_en[depth + 1])}
            ]
            if not chosen:
                options = sorted({t.path[depth] for t in leaves if len(t.path) > depth})
                # Named by its level, under the path above it that was given: a wrong sub-subtype is not a wrong
                # subtype, and a leaf with no level below it has no options to list.
                level = "subtype" if depth == 1 else "sub-subtype"
                above = f"task type {canonical!r}" + (f", subtype {leaves[0].path[1]!r}," if depth == 2 and subtype
                                                      else "")
                listed = f"options: {options}" if options else f"it has no {level}s"
                raise TaxonomyError(f"{above} has no {level} {quoted_name(wanted)}; {listed}", level=depth + shift)
            leaves = chosen
        return leaves

    def leaf(self, task_type: str | None, subtype: str | None = None, subsubtype: str | None = None) -> Task:
        """The one leaf task named by a row's ``task_type``, ``task_subtype`` and ``task_subsubtype`` (or a label's
        levels), English or Russian, any case.

        A blank level (None, "" or whitespace) is unknown, not absent: the levels given narrow the leaves below the
        task type, so ``("Translation, English-Russian language pair", "", "Informative translation")`` names the
        leaf under ``Texts`` (the sub-subtype is not read as a subtype). The path must end at one leaf; no node of
        the taxonomy is both a leaf and the parent of others, so a path above several leaves names none of them.

        Raises:
            TaxonomyError: no task type (``level`` 0); a name the taxonomy lacks (``find_tasks``); or a path above
                several leaves, which the message lists, ``level`` the first level they differ at (1 the subtype,
                else 2).
        """
        names = [(name.strip() or None) if name else None for name in (task_type, subtype, subsubtype)]
        if names[0] is None:
            raise TaxonomyError("no task type given", level=0)
        leaves = self.find_tasks(*names)
        if len(leaves) == 1:
            return leaves[0]
        level = self._leaf_level(names[0], leaves)
        path = _path_words(names[: max(i for i, n in enumerate(names) if n) + 1])
        raise TaxonomyError(f"task {path} names {len(leaves)} leaves, not one: {_describe(leaves)}", level=level)

    def _leaf_level(self, task_type: str, leaves: list[Task]) -> int:
        """The level of the field that must name one of ``leaves`` (those under a path that starts at
        ``task_type``): 1 (``task_subtype``) when they differ in subtype, else 2 (``task_subsubtype``); one more
        where ``task_type`` names a group, whose levels are read one field on, never past 2."""
        shift = int(self.canonical_task_type(task_type) is None)  # a group named as the task type
        return min(2, (1 if len({leaf.subtype for leaf in leaves}) > 1 else 2) + shift)


def _describe(leaves: list[Task]) -> str:
    return "; ".join(" / ".join(leaf.path) for leaf in leaves)


def _path_words(names: Sequence[str | None]) -> str:
    """A task path as given (names, a blank level as "(any)"), quoted and cut as names are."""
    return quoted_name(" / ".join(name or "(any)" for name in names))


@lru_cache(maxsize=1)
def load_taxonomy() -> Taxonomy:
    """The vendored POLLUX taxonomy (parsed once per process)."""
    data = resources.files("judge") / "data"
    criteria = json.loads((data / "criteria.json").read_text(encoding="utf-8"))
    tasks = json.loads((data / "tasks.json").read_text(encoding="utf-8"))
    return Taxonomy(criteria, tasks)


def oriented_scale(criteria_name: str | None, rubrics) -> Scale:
    """A criterion's scale read from its rubric, with its best level set by the orientation rule.

    The rule: a criterion named as one of the POLLUX taxonomy's Critical criteria (Russian or English name, case and
    whitespace ignored) is best at its lowest level; every other criterion, a custom one included, is best at its
    highest level. A custom yes/no criterion about a defect is therefore written with the good answer on top
    ("0: есть нарушение / 1: нарушения нет"), which is also how POLLUX writes its other two-level criteria.

    Args:
        criteria_name: the record's ``criteria_name`` (None: a custom criterion).
        rubrics: the rubric, as for ``judge.scale_of``.

    Raises:
        ScaleError: no scale can be read from ``rubrics``.
    """
    scale = scale_of(rubrics)
    if criteria_name and load_taxonomy().is_best_at_lowest(criteria_name):
        return scale.best_at_lowest()
    return scale
