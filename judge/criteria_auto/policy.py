"""The choice policy of ``criteria: auto``: leaf probabilities in, a ``TaskChoice`` (a task and its criteria) out.

The POLLUX paper leaves the classifier open: "The creation of the criteria classifier remains an open research
question and is deferred to future work" (arXiv 2505.24616v3, Limitations, "Task classifier"). Whatever the method
(``tfidf``, ``llm``, ``head``), it names leaves of the vendored taxonomy with probabilities, and this module decides
at the level the evidence supports (``choose_from_scores``): the task type first — below a probability threshold the
criteria fall back to those that apply to any text (``fallback_criteria``) —, then the leaf within it — when no leaf
holds most of the type's probability, the criteria every leaf of the type shares (``type_criteria``) —, and says
so. The criteria set is always the taxonomy's own (``Taxonomy.criteria_for``), so no criterion outside it can appear.
Also here: the leaf labels (``label_of``, ``leaf_of``) and the ``TaskClassifier`` protocol every method meets.

The paper and the released taxonomy disagree on one point, and this module follows the taxonomy. The paper says an
answer's criteria "necessarily include General, Critical, and Subjective ones" (arXiv 2505.24616v3, Section 2.3),
but the released taxonomy (``judge/data/tasks.json``, POLLUX's metainfo ``tasks.json``) lists all 13 of them for only
35 of its 152 leaves: 91 leave out Literacy and Absence of speech errors, 6 list only the two Critical ones, and the 5
STEM-exercise and 15 Code leaves none (only Task-specific criteria; docs/criteria-auto.md names them).
A leaf's criteria here are the taxonomy's list as released, never completed with the paper's groups: the judges were
trained and the benchmark annotated on those lists, and a criterion added here would be one no expert scored for
that task. Only the fallback set (``fallback_criteria``) is derived from the paper's groups, because no leaf list
can stand for "a text of unknown task".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Protocol, runtime_checkable

from judge.taxonomy import Task, Taxonomy, TaxonomyError, load_taxonomy

__all__ = [
    "DEFAULT_THRESHOLD",
    "FALLBACK_GROUPS",
    "LABEL_SEPARATOR",
    "LEAF_SHARE",
    "LeafScoresClassifier",
    "TaskChoice",
    "TaskClassifier",
    "checked_threshold",
    "choose_from_scores",
    "classified_text",
    "fallback_criteria",
    "label_of",
    "leaf_of",
    "task_type_of",
    "type_criteria",
    "zero_shot_choice",
]

#: Leaf labels join the English names along the path: "Code creation / Python".
LABEL_SEPARATOR = " / "
#: Groups whose criteria apply to any text: "Note that Critical, Subjective, and General criteria are applicable to
#: any text, hence they are eligible for every t and s" (arXiv 2505.24616v3, Section 2.3). The paper's "General"
#: group is the taxonomy's "Fine-grained" (the six criteria of Appendix P.2, Table 63).
FALLBACK_GROUPS = ("Critical", "Fine-grained", "Subjective")
#: Below this task-type probability the choice falls back to the shared criteria, for methods whose probabilities
#: were not calibrated (``llm``, ``head``): "this task type at least as likely as all others together"; a type tied
#: with the runner-up type is not chosen at any probability (``choose_from_scores``). The paper is silent (it has no
#: classifier). The ``tfidf`` method records its own, chosen on out-of-fold data
#: (``train.criteria_tfidf.fit_tfidf``). A named option everywhere.
DEFAULT_THRESHOLD = 0.5


def label_of(task: Task) -> str:
    """The leaf's label: its English path names joined by ``LABEL_SEPARATOR``."""
    return LABEL_SEPARATOR.join(task.path)


def task_type_of(label: str) -> str:
    """The task type a leaf label starts with."""
    return label.split(LABEL_SEPARATOR)[0]


def leaf_of(label: str, taxonomy: Taxonomy | None = None) -> Task:
    """The one leaf a label (or a path of English/Russian names joined by " / ") names (``Taxonomy.leaf``).

    Raises:
        TaxonomyError: unknown, or a path above several leaves.
    """
    taxonomy = taxonomy or load_taxonomy()
    parts = label.split(LABEL_SEPARATOR)
    try:
        if len(parts) > 3:
            raise TaxonomyError(f"task label {label!r} has more than three levels")
        return taxonomy.leaf(*parts)
    except TaxonomyError:
        # Four Russian names of tasks.json hold the separator themselves ("Спор / дискуссия"): read the label as each
        # way of cutting it into at most three names, and take the one leaf they name, if exactly one is named.
        found: dict[str, Task] = {}
        for names in _cuts(parts) if len(parts) <= _MAX_LABEL_PARTS else ():
            try:
                leaf = taxonomy.leaf(*names)
            except TaxonomyError:
                continue
            found[label_of(leaf)] = leaf
        if len(found) == 1:
            return next(iter(found.values()))
        raise


#: Most " / "-separated parts a label is read in other cuts (``leaf_of``): three names, each holding the separator.
_MAX_LABEL_PARTS = 6


def _cuts(parts: list[str]) -> list[tuple[str, ...]]:
    """Every way of joining ``parts`` in order into one to three names (``LABEL_SEPARATOR`` kept inside a name)."""
    n = len(parts)
    joined = LABEL_SEPARATOR.join
    cuts = [(joined(parts),)]
    cuts += [(joined(parts[:i]), joined(parts[i:])) for i in range(1, n)]
    cuts += [(joined(parts[:i]), joined(parts[i:j]), joined(parts[j:])) for i in range(1, n) for j in range(i + 1, n)]
    return cuts


def fallback_criteria(taxonomy: Taxonomy | None = None) -> tuple[str, ...]:
    """The criteria that apply to every task: base criteria of ``FALLBACK_GROUPS``, in taxonomy order.

    The published leaf sets do not all list them (STEM and code leaves carry only Task-specific variants), so the
    intersection over leaves is empty; the paper's statement (Section 2.3) is the rule, the taxonomy's group field the
    data.
    """
    taxonomy = taxonomy or load_taxonomy()
    return tuple(c.id for c in taxonomy.criteria.values() if c.group in FALLBACK_GROUPS and "__" not in c.id)


@dataclass(frozen=True)
class TaskChoice:
    """What a classifier chose for one instruction (the wire format of ``criteria: auto``).

    Attributes:
        task_type, task_subtype, task_subsubtype: the chosen leaf's English names ("" where the path is shorter):
            the most probable leaf of the most probable task type, even when ``level`` is not ``"leaf"`` (of tied
            ones, the first by label; ``reason`` names the tie).
        label: that leaf's label (``label_of``); "" when the method failed to name a leaf (see ``reason``).
        probability: the classifier's probability of that leaf (None when the method gives none).
        alternatives: the top-k leaves as ``(label, probability)``, best first.
        criteria: criterion ids to judge on: the leaf's set (``level == "leaf"``), the criteria every leaf of the
            task type shares, in the chosen leaf's variants (``"task_type"``, ``type_criteria``), or
            ``fallback_criteria()`` (``"fallback"``). A row that names its task (method ``given``) without naming
            one leaf: the criteria its leaves list as one id (``"task_type"``, or ``"task_subtype"`` for a subtype
            of several leaves).
        fallback: True when ``criteria`` is the fallback set.
        reason: why the choice stopped above the leaf, or why the method's probability tests did not apply (the
            llm method without logprobs); "" when neither.
        method: the classifier's name.
        level: ``"leaf"``, ``"task_subtype"`` (method ``given`` only), ``"task_type"`` or ``"fallback"``: where the
            evidence was enough to decide.
        task_type_probability: the probability of the task type (the sum over its leaves; None without
            probabilities).
        zero_shot: (a property, written by ``to_dict``) True when the items judged on this choice are in the
            Zero-Shot test (``zero_shot_choice``): a held-out task type chosen (or given), such as Literary text,
            whose criteria the judges were not trained on (``zero_shot: refuse``).
    """

    task_type: str
    task_subtype: str
    task_subsubtype: str
    label: str
    probability: float | None
    alternatives: tuple[tuple[str, float], ...]
    criteria: tuple[str, ...]
    fallback: bool
    reason: str
    method: str
    level: str = "leaf"
    task_type_probability: float | None = None

    @property
    def is_failure(self) -> bool:
        """True for a choice the method could not make (``TaskChoice.failed``: no leaf named, the fallback criteria
        judged): a request that failed, an answer outside the taxonomy, a bad log-probability. Such a choice is
        counted and retried (``judge.criteria_auto.expansion``), never taken for a classification."""
        return not self.label

    @property
    def zero_shot(self) -> bool:
        """``zero_shot_choice`` of this choice: its items are in the Zero-Shot test."""
        return zero_shot_choice(self.task_type, self.criteria, self.fallback)

    def to_dict(self) -> dict:
        row = asdict(self)
        row["zero_shot"] = self.zero_shot
        # A method without probabilities (the llm method, an endpoint without logprobs) holds NaN: JSON has no NaN
        # (judge-serve's response would fail to render), so it is written null; so is any other non-finite number
        # a probability field might hold, so that the dict always renders as strict JSON.
        row["alternatives"] = [{"label": lab, "probability": _finite_or_none(p)} for lab, p in self.alternatives]
        for key in ("probability", "task_type_probability"):
            row[key] = _finite_or_none(row[key])
        row["criteria"] = list(self.criteria)
        return row

    @classmethod
    def failed(cls, reason: str, method: str, taxonomy: Taxonomy | None = None) -> "TaskChoice":
        """A choice that could not be made (an answer outside the taxonomy, a failed request): no task, the criteria
        that apply to any text, ``reason`` saying why."""
        return cls(task_type="", task_subtype="", task_subsubtype="", label="", probability=None, alternatives=(),
                   criteria=tuple(fallback_criteria(taxonomy)), fallback=True, reason=reason, method=method,
                   level="fallback")

    @classmethod
    def of_leaf(
        cls, leaf: Task, probability: float | None, alternatives: tuple[tuple[str, float], ...], threshold: float,
        method: str, taxonomy: Taxonomy, type_probability: float | None = None, leaf_share: float | None = None,
        min_leaf_share: float | None = None, type_tied_with: str | None = None, leaf_tied_with: str | None = None,
    ) -> "TaskChoice":
        """The choice of ``leaf`` at the level its probabilities support (a method without probabilities, ``None``,
        always decides at the leaf).

        Args:
            probability: the leaf's probability; type_probability: its task type's (default: ``probability``).
            threshold: below this task-type probability the criteria fall back to ``fallback_criteria()``.
            leaf_share: the leaf's share of its type's probability; below ``min_leaf_share`` (``LEAF_SHARE``) the
                criteria are those every leaf of the type shares, each in the variant ``leaf`` lists
                (``type_criteria``).
            type_tied_with: another task type exactly as probable as ``leaf``'s: the evidence picks neither, so the
                criteria fall back to ``fallback_criteria()``, whatever the threshold says.
            leaf_tied_with: another leaf of the type exactly as probable as ``leaf``: the criteria every leaf of the
                type lists as one id (``type_criteria`` without a leaf: neither leaf's variants are preferred), or
                the fallback set when there are none.

        Raises:
            ValueError: a probability or share that is NaN or outside [0, 1] (a method's bug or a bad response).
        """
        min_leaf_share = LEAF_SHARE if min_leaf_share is None else min_leaf_share
        type_p = probability if type_probability is None else type_probability
        for name, value in (("probability", probability), ("task type probability", type_p),
                            ("leaf share", leaf_share)):  # fmt: skip
            # NaN compares False with any threshold, so it would silently take the leaf: refused, as a method's
            # failure (a failed choice in judge-eval, a 502 in judge-serve), never a choice.
            if value is not None and not 0.0 <= value <= 1.0 + 1e-6:
                raise ValueError(f"{method}: {name} {value!r} of {label_of(leaf)!r} is not a probability in [0, 1]")
        level, criteria, reason = "leaf", leaf.criteria, ""
        if type_p is not None and type_p < threshold:
            level, criteria = "fallback", fallback_criteria(taxonomy)
            reason = f"task type probability {type_p:.3f} < threshold {threshold:.3f}"
        elif type_tied_with is not None:
            # a tie passes the threshold (0.5 each at 0.5) yet says nothing of which type: the first by label would
            # be taken at full confidence, its criteria judged, with no word
            level, criteria = "fallback", fallback_criteria(taxonomy)
            reason = (f"task types {leaf.task_type!r} and {type_tied_with!r} tie at probability "
                      f"{type_p if type_p is not None else math.nan:.3f}: neither is more likely")
        elif leaf_tied_with is not None:
            # before the share test: below the share, the tie would still pick the first leaf's criterion variants
            shared = type_criteria(leaf.task_type, taxonomy)
            level, criteria = ("task_type", shared) if shared else ("fallback", fallback_criteria(taxonomy))
            reason = (f"leaves {label_of(leaf)!r} and {leaf_tied_with!r} tie at probability "
                      f"{probability if probability is not None else math.nan:.3f}: neither is more likely, so "
                      "neither's criterion variants are judged"
                      + ("" if shared else f"; the leaves of {leaf.task_type!r} share no criterion as one id"))
        elif leaf_share is not None and leaf_share < min_leaf_share:
            shared = type_criteria(leaf.task_type, taxonomy, leaf)
            level, criteria = ("task_type", shared) if shared else ("fallback", fallback_criteria(taxonomy))
            reason = (f"leaf share {leaf_share:.3f} of its task type < {min_leaf_share:.3f}"
                      + ("" if shared else f"; the leaves of {leaf.task_type!r} share no criterion"))  # fmt: skip
        return cls(
            task_type=leaf.task_type,
            task_subtype=leaf.subtype or "",
            task_subsubtype=leaf.subsubtype or "",
            label=label_of(leaf),
            probability=probability,
            alternatives=alternatives,
            criteria=tuple(criteria),
            fallback=level == "fallback",
            reason=reason,
            method=method,
            level=level,
            task_type_probability=type_p,
        )

    @classmethod
    def from_dict(cls, row: Mapping) -> "TaskChoice":
        """The choice ``to_dict`` wrote (after a JSON round trip): an alternative's null probability (``to_dict``
        writes NaN so) is NaN again; ``zero_shot`` is derived again (a record written before it had none); a field
        a record of an older version lacks (``level``, ``task_type_probability``) takes its default.

        Raises:
            ValueError: a field ``TaskChoice`` does not have, named."""
        values = dict(row)
        values.pop("zero_shot", None)  # derived from the task and criteria, never stored apart from them
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:  # a bare TypeError from the constructor named neither the field's file nor the remedy
            raise ValueError(f"unknown field(s) {unknown} in a task choice record (known: the fields of TaskChoice)")
        values["alternatives"] = tuple((a["label"], math.nan if a["probability"] is None else float(a["probability"]))
                                       for a in values.get("alternatives", []))  # fmt: skip
        values["criteria"] = tuple(values["criteria"])
        return cls(**values)


def zero_shot_choice(task_type: str, criteria: Sequence[str], fallback: bool) -> bool:
    """Whether the items of a choice (``expansion.expand_criteria``) are in the Zero-Shot test of the POLLUX split
    (``judge.splits``, ``judge/data/zero_shot.yaml``): its task type is held out, or one of its criteria is. Never
    for a choice on the fallback set (fell back or failed): its items carry no task type, and its criteria are all
    Standard ones, so ``judge.split_of`` puts them in the Standard test."""
    from judge.splits import load_split_spec

    if fallback:
        return False
    spec, taxonomy = load_split_spec(), load_taxonomy()
    if taxonomy.canonical_task_type(task_type) in spec.task_types:
        return True
    return any(taxonomy.criteria[cid].base_id in spec.criteria for cid in criteria if cid in taxonomy.criteria)


#: Within the chosen task type, the most probable leaf is taken when it holds at least this share of the type's
#: probability: "at least as likely as all the type's other leaves together", and no other leaf of the type is as
#: likely as it (a tie is decided at the task type, ``choose_from_scores``). Below it, the criteria every leaf of the
#: type shares are judged (``type_criteria``). The paper has no classifier, so no such number; a named constant.
LEAF_SHARE = 0.5


def type_criteria(task_type: str, taxonomy: Taxonomy | None = None, leaf: Task | None = None) -> tuple[str, ...]:
    """The criteria every leaf of ``task_type`` lists, in ``leaf``'s order (else the first leaf's); empty when they
    share none. Every id returned is one a leaf of the type lists.

    Leaves often list leaf-specific variants of one criterion (``operability__5`` for Python, ``operability__3`` for
    C++; ``correct_answer__14`` ... ``__18`` for the five STEM subjects): each variant is a criterion of its own, with
    its own rubric and scale, and the base id (``operability``, ``correct_answer``) is another task's criterion, not a
    general wording of them (``correct_answer`` is Extract's; STEM's ``information_overload`` variants are 0-1 where
    the base is 0-2). So a criterion whose variant differs between the leaves is judged in the variant ``leaf`` (the
    chosen, most probable leaf) lists, its best guess at the rubric; without a leaf (a row that names only its task
    type) it is dropped, since no variant can be preferred. A criterion some leaf lists no variant of is dropped.
    """
    taxonomy = taxonomy or load_taxonomy()
    leaves = [t for t in taxonomy.tasks if t.task_type == task_type]
    if not leaves:
        raise TaxonomyError(f"unknown task type {task_type!r}")
    if leaf is not None and leaf not in leaves:
        raise TaxonomyError(f"{label_of(leaf)!r} is not a leaf of task type {task_type!r}")
    base = lambda cid: cid.split("__")[0]  # noqa: E731
    shared = set.intersection(*({base(c) for c in t.criteria} for t in leaves))
    out = []
    for cid in (leaf or leaves[0]).criteria:
        if base(cid) not in shared:
            continue
        if all(cid in t.criteria for t in leaves) or leaf is not None:
            out.append(cid)
    return tuple(out)


def choose_from_scores(
    scores: Mapping[str, float],
    method: str,
    threshold: float = DEFAULT_THRESHOLD,
    top_k: int = 3,
    taxonomy: Taxonomy | None = None,
    leaf_share: float = LEAF_SHARE,
) -> TaskChoice:
    """Turn leaf probabilities into a ``TaskChoice``, deciding at the level the evidence supports (pure).

    The task type's probability is the sum over its leaves. The most probable type is chosen; below ``threshold``
    the criteria fall back to those that apply to any text. Within the type, its most probable leaf is taken when it
    holds at least ``leaf_share`` of the type's probability (a type with one leaf always does); otherwise the
    criteria every leaf of the type shares. The paper has no classifier (Limitations, "Task classifier"): both numbers are options.

    A tie is no evidence for either side: two task types exactly as probable (0.5 and 0.5 pass the threshold 0.5)
    fall back, two leaves of the chosen type exactly as probable give the criteria the type's leaves list as one id
    (neither leaf's variants; the fallback when there are none), each with a ``reason`` naming the tie. "Exactly"
    within float rounding (``_tied``): a type's probability is a sum over its leaves.

    Args:
        scores: leaf label -> probability: a distribution over leaves that need not cover every leaf, so its sum
            is at most one (within float rounding, ``_SUM_TOLERANCE``); what it leaves out is the probability of
            leaves not listed.
        method: the classifier's name, recorded.
        threshold: the task-type probability below which the choice falls back.
        top_k: how many alternatives to keep (leaves, best first).
        leaf_share: see above.

    Raises:
        TaxonomyError: a label that is not a leaf of the taxonomy (a classifier cannot invent tasks).
        ValueError: no scores, a probability outside [0, 1] or NaN, or scores summing above one.
    """
    taxonomy = taxonomy or load_taxonomy()
    if not scores:
        raise ValueError(f"{method}: no task scores to choose from")
    for label, p in scores.items():
        if not (0.0 <= p <= 1.0 + _SUM_TOLERANCE):  # NaN fails this too
            raise ValueError(f"{method}: probability {p!r} of {label!r} is outside [0, 1]")
    total = math.fsum(float(p) for p in scores.values())
    if total > 1.0 + _SUM_TOLERANCE:
        # checked here, not left to a task type's sum failing deep in TaskChoice.of_leaf with a message about one type
        raise ValueError(f"{method}: the leaf probabilities sum to {total:.6g}, above 1: not a distribution over "
                         "leaves (a method's scores must be probabilities of one leaf each, summing to at most 1)")
    leaves = {label_of(leaf_of(lab, taxonomy)): float(p) for lab, p in scores.items()}
    ranked = sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0]))
    by_type: dict[str, float] = {}
    for lab, p in ranked:
        by_type[task_type_of(lab)] = by_type.get(task_type_of(lab), 0.0) + p
    types = sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))
    task_type, type_p = types[0]
    of_type = [(lab, p) for lab, p in ranked if task_type_of(lab) == task_type]
    label, p_leaf = of_type[0]
    leaf = leaf_of(label, taxonomy)
    n_leaves = sum(t.task_type == task_type for t in taxonomy.tasks)
    share = 1.0 if n_leaves == 1 else (p_leaf / type_p if type_p > 0 else 0.0)
    type_tie = types[1][0] if len(types) > 1 and _tied(types[1][1], type_p) else None
    leaf_tie = of_type[1][0] if len(of_type) > 1 and _tied(of_type[1][1], p_leaf) else None
    return TaskChoice.of_leaf(leaf, p_leaf, tuple(ranked[:top_k]), threshold, method, taxonomy,
                              type_probability=type_p, leaf_share=share, min_leaf_share=leaf_share,
                              type_tied_with=type_tie, leaf_tied_with=leaf_tie)  # fmt: skip


def checked_threshold(threshold, method: str) -> float:
    """``threshold`` as a float when it is a task-type probability from 0 to 1; else ValueError naming ``method``.
    NaN compares False with every probability, so it would never fall back; above 1 it always would: either turns
    the policy's first test into no test, without a word."""
    number = float(threshold) if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) else math.nan
    if not 0.0 <= number <= 1.0:  # NaN fails too
        raise ValueError(f"{method}: threshold {threshold!r} is not a task-type probability from 0 to 1")
    return number


#: How far above one a probability or a sum of them may be and still be one: float rounding of a softmax's sum.
_SUM_TOLERANCE = 1e-6


def _tied(a: float, b: float) -> bool:
    """Two probabilities equal but for float rounding (a type's is a sum over its leaves, added in label order): a
    tie. Zero ties with zero too, but a choice at probability zero is below any threshold first."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _finite_or_none(p: float | None) -> float | None:
    """``p``, or None for a non-finite number: strict JSON has no NaN or infinity."""
    return p if p is None or math.isfinite(p) else None


@runtime_checkable
class TaskClassifier(Protocol):
    """A method: instructions -> leaf-label probabilities; ``choose`` applies the threshold and the taxonomy."""

    name: str
    threshold: float

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        """Per instruction, leaf label -> probability."""
        ...

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3) -> TaskChoice:
        """The ``TaskChoice`` for one instruction."""
        ...


#: The most characters of an instruction a classifier reads. A client's text is bounded before the work (1M
#: characters cost the tfidf method ~1.2 s and ~300 MB); a longer instruction is classified by its opening and its
#: ending (``classified_text``), since a request states its task at either end: before a pasted text ("Переведи:
#: ...") or after it ("... Сделай краткое содержание этого текста"), which a prefix alone cut off.
MAX_CLASSIFIED_CHARS = 20_000


def classified_text(instruction: str) -> str:
    """What a classifier reads of ``instruction``: all of it up to ``MAX_CLASSIFIED_CHARS``; past that, its first
    half-budget and its last characters joined by a newline, ``MAX_CLASSIFIED_CHARS`` in all."""
    if len(instruction) <= MAX_CLASSIFIED_CHARS:
        return instruction
    head = MAX_CLASSIFIED_CHARS // 2
    return instruction[:head] + "\n" + instruction[len(instruction) - (MAX_CLASSIFIED_CHARS - head - 1):]


class LeafScoresClassifier:
    """The base of the methods that score every leaf (``tfidf``, ``head``): ``choose`` is ``choose_from_scores``
    over ``predict_proba``, at the method's ``threshold``, on the instruction's ``classified_text`` (at most
    ``MAX_CLASSIFIED_CHARS``: its opening and its ending)."""

    name = "base"
    threshold = DEFAULT_THRESHOLD

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3) -> TaskChoice:
        # The answer is accepted for the contract's sake; the shipped methods read the instruction only, since
        # a bad answer (off-task, refusal) must not move the task it is judged against.
        return choose_from_scores(self.predict_proba([classified_text(instruction)])[0], self.name,
                                  self.threshold, top_k)

