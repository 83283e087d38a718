"""``criteria: auto``: choose the leaf task of an instruction, and with it the POLLUX criteria to judge on.

The POLLUX paper leaves this open: "The creation of the criteria classifier remains an open research question and
is deferred to future work" (arXiv 2505.24616v3, Limitations, "Task classifier"). Here a classifier maps an instruction to a
leaf task of the vendored taxonomy (task type / subtype / sub-subtype) with a probability; the criteria set is then
the taxonomy's own (``Taxonomy.criteria_for``), so no criterion outside the taxonomy can appear. The choice is made
at the level the evidence supports (``choose_from_scores``): the task type first — below a probability threshold the
criteria fall back to those that apply to any text (``fallback_criteria``) —, then the leaf within it — when no leaf
holds most of the type's probability, the criteria every leaf of the type shares (``type_criteria``) —, and says so.

Methods are pluggable by name (``build_classifier``):

- ``tfidf``: character and word n-gram TF-IDF + two logistic regressions (task type, calibrated; leaf), trained
  from labelled instructions, saved as JSON + npz (no pickle); one ships with the package (``judge/data/
  criteria_tfidf``, rebuilt by ``judge-train criteria-classifier``);
- ``llm``: any OpenAI-compatible chat endpoint chooses hierarchically (task type, then subtype, then sub-subtype)
  with vLLM's guided choice over the taxonomy's names (``judge.criteria_auto.llm``);
- ``head``: a sequence-classification checkpoint whose ``id2label`` are leaf labels (transformers, or vLLM's
  pooling runner).

Typical use::

    clf = TfidfClassifier.load()                 # the shipped classifier; or build_classifier("tfidf", path=DIR)
    choice = clf.choose("Напиши стихотворение о весне")
    choice.criteria            # criterion ids of the chosen leaf, or the fallback set
    items, record = expand_criteria("Напиши ...", "Весна пришла ...", choice)
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from judge.splits import ZERO_SHOT, STANDARD, load_split_spec
from judge.taxonomy import Task, Taxonomy, TaxonomyError, load_taxonomy

__all__ = [
    "DEFAULT_THRESHOLD",
    "FALLBACK_GROUPS",
    "LABEL_SEPARATOR",
    "LEAF_SHARE",
    "TaskChoice",
    "TaskClassifier",
    "TfidfClassifier",
    "HeadClassifier",
    "bundled_rows",
    "choose_threshold",
    "default_classifier_path",
    "reliability",
    "type_criteria",
    "choose_from_scores",
    "criteria_set_scores",
    "expand_criteria",
    "expand_file",
    "expand_rows",
    "fallback_criteria",
    "heldout_path",
    "label_of",
    "labelled_rows",
    "leaf_of",
    "load_labelled",
    "taxonomy_rows",
    "training_digest",
    "training_path",
]

#: Leaf labels join the English names along the path: "Code creation / Python".
LABEL_SEPARATOR = " / "
#: Groups whose criteria apply to any text: "Note that Critical, Subjective, and General criteria are applicable to
#: any text, hence they are eligible for every t and s" (arXiv 2505.24616v3, Section 2.3). The paper's "General"
#: group is the taxonomy's "Fine-grained" (the six criteria of Appendix P.2, Table 63).
FALLBACK_GROUPS = ("Critical", "Fine-grained", "Subjective")
#: Below this task-type probability the choice falls back to the shared criteria, for methods whose probabilities
#: were not calibrated (``llm``, ``head``): "more likely this task type than all others together". The paper is
#: silent (it has no classifier). The ``tfidf`` method records its own, chosen on out-of-fold data
#: (``TfidfClassifier.fit``). A named option everywhere.
DEFAULT_THRESHOLD = 0.5


def label_of(task: Task) -> str:
    """The leaf's label: its English path names joined by ``LABEL_SEPARATOR``."""
    return LABEL_SEPARATOR.join(task.path)


def _type_of(label: str) -> str:
    """The task type a leaf label starts with."""
    return label.split(LABEL_SEPARATOR)[0]


def leaf_of(label: str, taxonomy: Taxonomy | None = None) -> Task:
    """The one leaf a label (or a path of English/Russian names joined by " / ") names.

    Raises:
        TaxonomyError: unknown, or a path above several leaves.
    """
    taxonomy = taxonomy or load_taxonomy()
    parts = [p.strip() for p in label.split(LABEL_SEPARATOR)]
    if len(parts) > 3:
        raise TaxonomyError(f"task label {label!r} has more than three levels")
    leaves = taxonomy.find_tasks(*parts)
    if len(leaves) != 1:
        options = "; ".join(label_of(t) for t in leaves)
        raise TaxonomyError(f"task label {label!r} names {len(leaves)} leaves, not one: {options}")
    return leaves[0]


def fallback_criteria(taxonomy: Taxonomy | None = None) -> tuple[str, ...]:
    """The criteria that apply to every task: base criteria of ``FALLBACK_GROUPS``, in taxonomy order.

    The published leaf sets do not all list them (STEM and code leaves carry only Task-specific variants), so the
    intersection over leaves is empty; the paper's statement (Section 2.3) is the rule, the taxonomy's group field the
    data.
    """
    taxonomy = taxonomy or load_taxonomy()
    return tuple(c.id for c in taxonomy.criteria.values() if c.group in FALLBACK_GROUPS and "__" not in c.id)


# ----------------------------------------------------------------------------------------------- the contract


@dataclass(frozen=True)
class TaskChoice:
    """What a classifier chose for one instruction (the wire format of ``criteria: auto``).

    Attributes:
        task_type, task_subtype, task_subsubtype: the chosen leaf's English names ("" where the path is shorter):
            the most probable leaf of the most probable task type, even when ``level`` is not ``"leaf"``.
        label: that leaf's label (``label_of``); "" when the method failed to name a leaf (see ``reason``).
        probability: the classifier's probability of that leaf (None when the method gives none).
        alternatives: the top-k leaves as ``(label, probability)``, best first.
        criteria: criterion ids to judge on: the leaf's set (``level == "leaf"``), the criteria every leaf of the
            task type shares (``"task_type"``), or ``fallback_criteria()`` (``"fallback"``).
        fallback: True when ``criteria`` is the fallback set.
        reason: why the choice stopped above the leaf ("" when it did not).
        method: the classifier's name.
        level: ``"leaf"``, ``"task_type"`` or ``"fallback"``: where the evidence was enough to decide.
        task_type_probability: the probability of the task type (the sum over its leaves; None without
            probabilities).
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

    def to_dict(self) -> dict:
        row = asdict(self)
        row["alternatives"] = [{"label": lab, "probability": p} for lab, p in self.alternatives]
        row["criteria"] = list(self.criteria)
        return row

    @classmethod
    def of_leaf(
        cls, leaf: Task, probability: float | None, alternatives: tuple[tuple[str, float], ...], threshold: float,
        method: str, taxonomy: Taxonomy, type_probability: float | None = None, leaf_share: float | None = None,
        min_leaf_share: float | None = None,
    ) -> "TaskChoice":
        """The choice of ``leaf`` at the level its probabilities support (a method without probabilities, ``None``,
        always decides at the leaf).

        Args:
            probability: the leaf's probability; type_probability: its task type's (default: ``probability``).
            threshold: below this task-type probability the criteria fall back to ``fallback_criteria()``.
            leaf_share: the leaf's share of its type's probability; below ``min_leaf_share`` (``LEAF_SHARE``) the
                criteria are those every leaf of the type shares (``type_criteria``).
        """
        min_leaf_share = LEAF_SHARE if min_leaf_share is None else min_leaf_share
        type_p = probability if type_probability is None else type_probability
        level, criteria, reason = "leaf", leaf.criteria, ""
        if type_p is not None and type_p < threshold:
            level, criteria = "fallback", fallback_criteria(taxonomy)
            reason = f"task type probability {type_p:.3f} < threshold {threshold:.3f}"
        elif leaf_share is not None and leaf_share < min_leaf_share:
            shared = type_criteria(leaf.task_type, taxonomy)
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
        values = dict(row)
        values["alternatives"] = tuple((a["label"], float(a["probability"])) for a in values.get("alternatives", []))
        values["criteria"] = tuple(values["criteria"])
        return cls(**values)


#: Within the chosen task type, the most probable leaf is taken when it holds at least this share of the type's
#: probability: "more likely than all the type's other leaves together". Below it, the criteria every leaf of the
#: type shares are judged (``type_criteria``). The paper has no classifier, so no such number; a named constant.
LEAF_SHARE = 0.5


def type_criteria(task_type: str, taxonomy: Taxonomy | None = None) -> tuple[str, ...]:
    """The criteria every leaf of ``task_type`` lists, in the first leaf's order; empty when they share none.

    Leaves often list leaf-specific variants of one criterion (``operability__5`` for Python, ``operability__3`` for
    C++): such a criterion is shared under its base id (``operability``, the taxonomy's general wording), since the
    leaf that would pick the variant is what is not known.
    """
    taxonomy = taxonomy or load_taxonomy()
    leaves = [t for t in taxonomy.tasks if t.task_type == task_type]
    if not leaves:
        raise TaxonomyError(f"unknown task type {task_type!r}")
    base = lambda cid: cid.split("__")[0]  # noqa: E731
    shared = set.intersection(*({base(c) for c in t.criteria} for t in leaves))
    out = []
    for cid in leaves[0].criteria:
        if base(cid) not in shared:
            continue
        same = all(cid in t.criteria for t in leaves)
        pick = cid if same or base(cid) not in taxonomy.criteria else base(cid)
        if pick not in out:
            out.append(pick)
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

    Args:
        scores: leaf label -> probability (need not cover every leaf; need not sum to one).
        method: the classifier's name, recorded.
        threshold: the task-type probability below which the choice falls back.
        top_k: how many alternatives to keep (leaves, best first).
        leaf_share: see above.

    Raises:
        TaxonomyError: a label that is not a leaf of the taxonomy (a classifier cannot invent tasks).
        ValueError: no scores, or a probability outside [0, 1] or NaN.
    """
    taxonomy = taxonomy or load_taxonomy()
    if not scores:
        raise ValueError(f"{method}: no task scores to choose from")
    for label, p in scores.items():
        if not (0.0 <= p <= 1.0 + 1e-6):  # NaN fails this too
            raise ValueError(f"{method}: probability {p!r} of {label!r} is outside [0, 1]")
    leaves = {label_of(leaf_of(lab, taxonomy)): float(p) for lab, p in scores.items()}
    ranked = sorted(leaves.items(), key=lambda kv: (-kv[1], kv[0]))
    by_type: dict[str, float] = {}
    for lab, p in ranked:
        by_type[_type_of(lab)] = by_type.get(_type_of(lab), 0.0) + p
    task_type = min(by_type, key=lambda t: (-by_type[t], t))
    label, p_leaf = next((lab, p) for lab, p in ranked if _type_of(lab) == task_type)
    leaf = leaf_of(label, taxonomy)
    type_p = by_type[task_type]
    n_leaves = sum(t.task_type == task_type for t in taxonomy.tasks)
    share = 1.0 if n_leaves == 1 else (p_leaf / type_p if type_p > 0 else 0.0)
    return TaskChoice.of_leaf(leaf, p_leaf, tuple(ranked[:top_k]), threshold, method, taxonomy,
                              type_probability=type_p, leaf_share=share, min_leaf_share=leaf_share)  # fmt: skip


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


class _ChooseMixin:
    name = "base"
    threshold = DEFAULT_THRESHOLD

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3) -> TaskChoice:
        # The answer is accepted for the contract's sake; the shipped methods read the instruction only, since
        # a bad answer (off-task, refusal) must not move the task it is judged against.
        return choose_from_scores(self.predict_proba([instruction])[0], self.name, self.threshold, top_k)


# ----------------------------------------------------------------------------------------------- training data


def _label_from_columns(row: Mapping, taxonomy: Taxonomy) -> str:
    parts = [str(row.get(k) or "").strip() for k in ("task_type", "task_subtype", "task_subsubtype")]
    parts = [p for p in parts if p]
    if not parts:
        raise TaxonomyError("no task_type")
    leaves = taxonomy.find_tasks(*parts)
    if len(leaves) != 1:
        raise TaxonomyError(f"task {' / '.join(parts)!r} names {len(leaves)} leaves, not one")
    return label_of(leaves[0])


def labelled_rows(
    rows: Iterable[Mapping],
    source: str,
    include_zero_shot: bool = False,
    taxonomy: Taxonomy | None = None,
) -> tuple[list[dict], dict]:
    """(instruction, leaf label) pairs from rows with task columns, de-duplicated by instruction.

    Reads either shape: a row with ``label`` (the bundled sets), or with ``task_type`` / ``task_subtype`` /
    ``task_subsubtype`` (``judge-train data instructions`` output rows, POLLUX-format records; English or Russian
    names; a group name in ``task_type`` is accepted as the taxonomy does).

    Args:
        rows: mappings (or ``JudgeRecord``s: their attributes are read).
        source: named in errors.
        include_zero_shot: keep rows of the Zero-Shot task types (``judge/data/zero_shot.yaml``); off by default
            so that the classifier's Zero-Shot figures stay zero-shot, as the judges' do.

    Returns:
        (pairs ``{"instruction", "label", "split"}``, counts ``{"rows", "kept", "duplicates", "zero_shot_dropped"}``).

    Raises:
        ValueError: a row without an instruction or with a task the taxonomy does not know, naming the row.
    """
    taxonomy = taxonomy or load_taxonomy()
    held_out = load_split_spec(taxonomy=taxonomy).task_types
    out, seen = [], set()
    counts = {"rows": 0, "kept": 0, "duplicates": 0, "zero_shot_dropped": 0}
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            row = vars(row)
        counts["rows"] += 1
        instruction = str(row.get("instruction") or "").strip()
        if not instruction:
            raise ValueError(f"{source} row {i}: empty or missing 'instruction'")
        try:
            label = label_of(leaf_of(row["label"], taxonomy)) if row.get("label") else _label_from_columns(row, taxonomy)
        except TaxonomyError as err:
            raise ValueError(f"{source} row {i}: task columns do not name one leaf of the taxonomy: {err}") from err
        split = ZERO_SHOT if label.split(LABEL_SEPARATOR)[0] in held_out else STANDARD
        if split == ZERO_SHOT and not include_zero_shot:
            counts["zero_shot_dropped"] += 1
            continue
        if instruction in seen:
            counts["duplicates"] += 1
            continue
        seen.add(instruction)
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
    seen = set()
    for path in paths:
        path = Path(path)
        if path.suffix == ".jsonl":
            with path.open(encoding="utf-8") as fh:
                rows = [json.loads(line) for line in fh if line.strip()]
        else:
            rows = load_records(path, make_id=True)
        got, counts = labelled_rows(rows, str(path), include_zero_shot)
        for key in totals:
            totals[key] += counts[key]
        for pair in got:
            if pair["instruction"] in seen:
                totals["duplicates"] += 1
                totals["kept"] -= 1
                continue
            seen.add(pair["instruction"])
            pairs.append(pair)
    return pairs, totals


def taxonomy_rows(include_zero_shot: bool = False, taxonomy: Taxonomy | None = None) -> list[dict]:
    """Weakly labelled training texts from the taxonomy itself (``tasks.json``), marked ``"source": "taxonomy"``:
    per leaf, one row of everything (its Russian path names, description and complexity notes) and one row per
    part (path names + that part). Covers all 152 leaves without hand labels; no instruction of the held-out set is
    derived from it.
    """
    taxonomy = taxonomy or load_taxonomy()
    held_out = load_split_spec(taxonomy=taxonomy).task_types
    rows = []
    for task in taxonomy.tasks:
        if task.task_type in held_out and not include_zero_shot:
            continue
        names = " ".join(n for n in task.names_ru if n)
        parts = [(task.description or {}).get("ru") or ""]
        parts += [(level or {}).get("ru") or "" for level in (task.complexity or {}).values()]
        parts = [p for p in parts if p]
        split = ZERO_SHOT if task.task_type in held_out else STANDARD
        for text in [". ".join([names, *parts])] + [f"{names}. {p}" for p in parts]:
            rows.append({"instruction": text, "label": label_of(task), "split": split, "source": "taxonomy"})
    return rows


def bundled_rows(include_zero_shot: bool = True) -> tuple[list[dict], dict]:
    """What the shipped classifier is trained on: the bundled training instructions, the bundled sample's
    instructions (``judge/data/sample.jsonl``, by their task columns) and ``taxonomy_rows``; never the held-out set.

    Zero-Shot task types are in by default: the shipped classifier routes any instruction a user sends, and the
    Zero-Shot split concerns the judges, not the router (``bench/criteria_auto.py --exclude-zero-shot`` measures
    transfer to unseen task types instead).

    Returns:
        (pairs, counts) as ``load_labelled``.
    """
    sample = Path(str(resources.files("judge") / "data" / "sample.jsonl"))
    pairs, counts = load_labelled([training_path(), sample], include_zero_shot=include_zero_shot)
    return pairs + taxonomy_rows(include_zero_shot=include_zero_shot), counts


def heldout_path() -> Path:
    """The bundled held-out set (never used for training): ``judge/data/task_classifier_heldout.jsonl``."""
    return Path(str(resources.files("judge") / "data" / "task_classifier_heldout.jsonl"))


def training_path() -> Path:
    """The bundled small training set, disjoint from the held-out one: ``judge/data/task_classifier_train.jsonl``."""
    return Path(str(resources.files("judge") / "data" / "task_classifier_train.jsonl"))


# ----------------------------------------------------------------------------------------------- tfidf

TFIDF_FORMAT = "pollux-task-tfidf-v2"
#: Where the shipped default classifier lives (package data), rebuilt by ``judge-train criteria-classifier --out``
#: this folder with no data arguments (the bundled rows and the taxonomy); ``tests/test_task_classifier.py`` pins
#: that a rebuild gives the same artefact.
DEFAULT_TFIDF_DIR = "criteria_tfidf"


def default_classifier_path() -> Path:
    """The folder of the classifier that ships with the package (``judge/data/criteria_tfidf``)."""
    return Path(str(resources.files("judge") / "data" / DEFAULT_TFIDF_DIR))


class _TextFeatures:
    """Character n-grams within word boundaries (robust to Russian inflection) beside word uni/bigrams (the words
    that name a task: "переведи", "стихотворение", "Python"), each TF-IDF weighted, side by side."""

    def __init__(self, char, word):
        self.char, self.word = char, word

    @classmethod
    def fit(cls, texts, char_ngrams, word_ngrams, max_char, max_word) -> "_TextFeatures":
        from sklearn.feature_extraction.text import TfidfVectorizer

        char = TfidfVectorizer(analyzer="char_wb", ngram_range=tuple(char_ngrams), max_features=max_char,
                               sublinear_tf=True, lowercase=True, dtype=np.float64)  # fmt: skip
        word = TfidfVectorizer(analyzer="word", ngram_range=tuple(word_ngrams), max_features=max_word,
                               sublinear_tf=True, lowercase=True, dtype=np.float64)  # fmt: skip
        texts = list(texts)
        char.fit(texts)
        word.fit(texts)
        return cls(char, word)

    def transform(self, texts):
        from scipy.sparse import hstack

        texts = list(texts)
        return hstack([self.char.transform(texts), self.word.transform(texts)]).tocsr()

    def to_json(self) -> tuple[dict, dict]:
        spec, arrays = {}, {}
        for name, vec in (("char", self.char), ("word", self.word)):
            spec[name] = {"analyzer": vec.analyzer, "ngram_range": list(vec.ngram_range), "sublinear_tf": True,
                          "lowercase": True, "vocabulary": {t: int(i) for t, i in sorted(vec.vocabulary_.items())}}
            arrays[f"{name}_idf"] = vec.idf_
        return spec, arrays

    @classmethod
    def from_json(cls, spec: Mapping, arrays: Mapping) -> "_TextFeatures":
        from sklearn.feature_extraction.text import TfidfVectorizer

        parts = []
        for name in ("char", "word"):
            v = spec[name]
            vec = TfidfVectorizer(analyzer=v["analyzer"], ngram_range=tuple(v["ngram_range"]),
                                  sublinear_tf=v["sublinear_tf"], lowercase=v["lowercase"],
                                  vocabulary=v["vocabulary"], dtype=np.float64)  # fmt: skip
            vec.idf_ = np.asarray(arrays[f"{name}_idf"], dtype=np.float64)
            parts.append(vec)
        return cls(*parts)


def training_digest(pairs: Sequence[Mapping]) -> str:
    """sha256 of the (instruction, label) rows in order: which rows a tfidf artefact was trained on."""
    import hashlib

    text = json.dumps([[p["instruction"], p["label"]] for p in pairs], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _fit_linear(x, y, c: float, seed: int):
    """Multinomial logistic regression; returns (classes, coef, intercept) as plain arrays."""
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        # many classes over a few hundred rows trips scikit-learn's "looks like regression" heuristic
        warnings.filterwarnings("ignore", message="The number of unique classes", category=UserWarning)
        # newton-cg: same fit as lbfgs here, in a third of the time (few iterations over many coefficients)
        model = LogisticRegression(C=c, max_iter=3000, solver="newton-cg", random_state=seed).fit(x, y)
    return [str(k) for k in model.classes_], model.coef_, model.intercept_


def _fit_leaves_within_types(x, pairs: Sequence[Mapping], params: Mapping):
    """One logistic regression per task type over its own leaves, trained on that type's rows only, stacked into
    one (leaves x features) matrix: a leaf's logits compete only with its siblings' (``predict_proba``). A type
    with one leaf in the rows needs none (zero logits). Small problems: 35 fits over ~25 rows each instead of one
    152-way fit over all rows."""
    labels = sorted({p["label"] for p in pairs})
    coef = np.zeros((len(labels), x.shape[1]))
    intercept = np.zeros(len(labels))
    by_type: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_type.setdefault(_type_of(p["label"]), []).append(i)
    for rows in by_type.values():
        own = sorted({pairs[i]["label"] for i in rows})
        if len(own) < 2:
            continue
        sub = x[rows]
        # only the features these rows use: an L2 fit leaves every other coefficient at exactly zero, and the
        # small problem converges in a fraction of the time
        cols = np.unique(sub.indices)
        classes, c, b = _fit_linear(sub[:, cols], [pairs[i]["label"] for i in rows], params["c"], params["seed"])
        at = [labels.index(k) for k in classes]
        if len(classes) == 2:  # scikit-learn keeps one row for two classes: the second class's logit
            coef[at[1], cols], intercept[at[1]] = c[0], b[0]
        else:
            coef[np.ix_(at, cols)], intercept[at] = c, b
    return labels, coef, intercept


def _fit_temperature(logits: Sequence, gold_index: Sequence[int]) -> float:
    """The temperature T minimising the negative log-likelihood of ``softmax(logits / T)`` (temperature scaling,
    Guo et al. 2017) on out-of-fold logits, one vector per instruction (fold models may know different numbers of
    classes); a grid of 200 values between 0.05 and 20, so there is no optimiser to tune. 1.0 without logits."""
    if not len(logits):
        return 1.0
    best_t, best_nll = 1.0, math.inf
    for t in np.geomspace(0.05, 20.0, 200):
        nll = 0.0
        for z, g in zip(logits, gold_index):
            z = np.asarray(z, dtype=float) / t
            nll -= z[g] - (z.max() + math.log(np.exp(z - z.max()).sum()))
        if nll < best_nll:
            best_t, best_nll = float(t), nll
    return best_t


def choose_threshold(type_probability: Sequence[float], chosen_jaccard: Sequence[float],
                     fallback_jaccard: Sequence[float]) -> dict:
    """The fallback threshold that maximises the mean criteria-set Jaccard on labelled instructions (pure).

    For each instruction: the probability of the chosen task type, the Jaccard of the criteria the choice would
    judge against the instruction's true set when it does not fall back, and the Jaccard of the fallback set. A
    threshold t judges the chosen set where the probability is at least t and the fallback set elsewhere; the
    lowest t with the highest mean Jaccard wins (0.0: never fall back).

    Returns:
        ``{"threshold", "mean_jaccard", "fallback_rate", "never_fallback_jaccard", "always_fallback_jaccard", "n"}``.
    """
    p = np.asarray(type_probability, dtype=float)
    chosen = np.asarray(chosen_jaccard, dtype=float)
    fallback = np.asarray(fallback_jaccard, dtype=float)
    if not len(p):
        raise ValueError("choose_threshold: no instructions to choose a threshold from")
    best = None
    for t in np.concatenate([[0.0], np.unique(p)]):  # ascending: strict > keeps the lowest of equal scores
        kept = p >= t
        score = float(np.where(kept, chosen, fallback).mean())
        if best is None or score > best["mean_jaccard"] + 1e-12:
            best = {"threshold": float(t), "mean_jaccard": score, "fallback_rate": float(1.0 - kept.mean())}
    return {**best, "never_fallback_jaccard": float(chosen.mean()), "always_fallback_jaccard": float(fallback.mean()),
            "n": int(len(p))}


def reliability(probability: Sequence[float], correct: Sequence[bool], bins: int = 10) -> dict:
    """Calibration of stated probabilities (pure): per equal-width bin, the count, mean stated probability and
    accuracy; and the expected calibration error (ECE: the count-weighted mean |accuracy - stated|)."""
    p = np.asarray(probability, dtype=float)
    ok = np.asarray(correct, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        mask = which == b
        if not mask.any():
            continue
        stated, acc = float(p[mask].mean()), float(ok[mask].mean())
        table.append({"bin": [float(edges[b]), float(edges[b + 1])], "n": int(mask.sum()), "stated": stated,
                      "accuracy": acc})  # fmt: skip
        ece += mask.sum() / len(p) * abs(acc - stated)
    return {"bins": table, "ece": float(ece) if len(p) else math.nan, "n": int(len(p))}


class TfidfClassifier(_ChooseMixin):
    """Two linear models over one TF-IDF feature space: the task type (calibrated), then the leaf within it.

    ``predict_proba`` gives each leaf ``P(type) * P(leaf | type)``: the type's probability from the task-type model,
    temperature-scaled on out-of-fold predictions so that a stated 0.8 is right about 80 % of the time; the leaf's
    share of its type from the leaf model. ``choose`` (``choose_from_scores``) then decides at the level where the
    evidence is. Saved without pickle: ``model.json`` (vocabularies, labels, temperature, threshold, how both were
    chosen, versions) and ``weights.npz`` (idf, coefficients in float16, intercepts).
    """

    name = "tfidf"

    def __init__(self, features: _TextFeatures, types: tuple, leaves: tuple, temperature: float,
                 threshold: float, meta: dict | None = None):  # fmt: skip
        self.features = features
        self.type_classes, self.type_coef, self.type_intercept = types
        self.leaf_classes, self.leaf_coef, self.leaf_intercept = leaves
        self.temperature = temperature
        self.threshold = threshold
        self.meta = meta or {}
        self._leaf_type = np.array([self.type_classes.index(_type_of(lab)) for lab in self.leaf_classes])

    @classmethod
    def fit(
        cls,
        pairs: Sequence[Mapping],
        char_ngrams: tuple[int, int] = (2, 5),
        word_ngrams: tuple[int, int] = (1, 2),
        max_char_features: int = 16000,
        max_word_features: int = 4000,
        c: float = 30.0,
        folds: int = 5,
        seed: int = 0,
        threshold: float | None = None,
    ) -> "TfidfClassifier":
        """Train on ``{"instruction", "label"}`` pairs (``labelled_rows`` / ``taxonomy_rows`` output).

        Calibration and the threshold come from ``folds``-fold out-of-fold predictions over the real instructions
        (rows not marked ``"source": "taxonomy"``; taxonomy texts stay in every training fold, since they describe
        tasks rather than ask for them): the temperature minimises their negative log-likelihood, and the threshold
        maximises the mean Jaccard of the judged criteria against each instruction's true set
        (``choose_threshold``), unless ``threshold`` is given. Both, with the out-of-fold figures they were chosen
        on, are recorded in ``meta["calibration"]``.

        Args:
            char_ngrams, word_ngrams: n-gram lengths of the two feature families.
            max_char_features, max_word_features: vocabulary caps (most frequent terms): they bound the artefact.
            c: inverse L2 regularisation strength of both logistic regressions.
        """
        from threadpoolctl import threadpool_limits

        # one BLAS/OpenMP thread: these are many small fits, and threads only contend (32 s -> 1.4 s of CPU for the
        # per-type leaf fits on this 2-core machine under load)
        with threadpool_limits(1):
            return cls._fit(pairs, char_ngrams, word_ngrams, max_char_features, max_word_features, c, folds, seed,
                            threshold)  # fmt: skip

    @classmethod
    def _fit(cls, pairs, char_ngrams, word_ngrams, max_char_features, max_word_features, c, folds, seed, threshold):
        params = {"char_ngrams": list(char_ngrams), "word_ngrams": list(word_ngrams),
                  "max_char_features": max_char_features, "max_word_features": max_word_features, "c": c,
                  "seed": seed}  # fmt: skip
        if len({_type_of(p["label"]) for p in pairs}) < 2:
            raise ValueError("tfidf: need at least two task types to train")
        real = [i for i, p in enumerate(pairs) if p.get("source") != "taxonomy"]
        calibration: dict = {"folds": folds, "n_instructions": len(real)}
        temperature = 1.0
        if len(real) >= folds >= 2:
            temperature, oof = cls._out_of_fold(pairs, real, folds, params)
            calibration.update({"temperature": temperature, **oof})
            if threshold is None:
                threshold = oof["chosen"]["threshold"]
        if threshold is None:
            threshold = DEFAULT_THRESHOLD
            calibration["note"] = f"fewer than {folds} real instructions: no out-of-fold threshold, the default used"
        model = cls._fit_once(pairs, params, temperature, float(threshold))
        model.meta = {**params, "n_train": len(pairs), "training_digest": training_digest(pairs),
                      "calibration": calibration}
        return model

    @classmethod
    def _fit_once(cls, pairs: Sequence[Mapping], params: Mapping, temperature: float, threshold: float):
        texts = [p["instruction"] for p in pairs]
        features = _TextFeatures.fit(texts, params["char_ngrams"], params["word_ngrams"],
                                     params["max_char_features"], params["max_word_features"])  # fmt: skip
        x = features.transform(texts)
        types = _fit_linear(x, [_type_of(p["label"]) for p in pairs], params["c"], params["seed"])
        return cls(features, types, _fit_leaves_within_types(x, pairs, params), temperature, threshold)

    @classmethod
    def _out_of_fold(cls, pairs, real, folds, params) -> tuple[float, dict]:
        """Temperature and threshold from fold models that never saw the instructions they score."""
        taxonomy = load_taxonomy()
        order = np.random.default_rng(params["seed"]).permutation(real)
        scored = []  # (gold label, instruction, the fold model that did not see it)
        for k in range(folds):
            held = sorted(order[k::folds].tolist())
            model = cls._fit_once([p for i, p in enumerate(pairs) if i not in set(held)], params, 1.0, 0.0)
            scored += [(pairs[i]["label"], pairs[i]["instruction"], model) for i in held]
        # temperature: on the instructions whose task type their fold model knows (a type whose every row was held
        # out cannot be scored; it still counts below, as a miss)
        logits, gold_index = [], []
        for gold, text, model in scored:
            if _type_of(gold) in model.type_classes:
                z = np.asarray(model.features.transform([text]) @ model.type_coef.T)[0] + model.type_intercept
                logits.append(z)
                gold_index.append(model.type_classes.index(_type_of(gold)))
        temperature = _fit_temperature(logits, gold_index)
        fallback_set = fallback_criteria(taxonomy)
        type_p, correct, chosen_j, fallback_j = [], [], [], []
        for gold, text, model in scored:
            model.temperature = temperature
            choice = choose_from_scores(model.predict_proba([text])[0], "tfidf", 0.0, taxonomy=taxonomy)
            truth = leaf_of(gold, taxonomy).criteria
            type_p.append(choice.task_type_probability)
            correct.append(choice.task_type == _type_of(gold))
            chosen_j.append(criteria_set_scores(choice.criteria, truth)["jaccard"])
            fallback_j.append(criteria_set_scores(fallback_set, truth)["jaccard"])
        return temperature, {
            "n_out_of_fold": len(scored),
            "type_accuracy": float(np.mean(correct)),
            "ece": reliability(type_p, correct)["ece"],
            "chosen": choose_threshold(type_p, chosen_j, fallback_j),
            # what the choice was made on, so that it can be checked without retraining
            "out_of_fold": [[round(p, 6), bool(ok), round(cj, 6), round(fj, 6)]
                            for p, ok, cj, fj in zip(type_p, correct, chosen_j, fallback_j)],
        }

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        x = self.features.transform(instructions)
        type_p = _softmax((np.asarray(x @ self.type_coef.T) + self.type_intercept) / self.temperature)
        # P(leaf | its type): a softmax over the leaf logits of each type separately
        logits = np.asarray(x @ self.leaf_coef.T) + self.leaf_intercept
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        type_mass = np.zeros((e.shape[0], len(self.type_classes)))
        np.add.at(type_mass.T, self._leaf_type, e.T)
        joint = type_p[:, self._leaf_type] * e / type_mass[:, self._leaf_type]
        return [dict(zip(self.leaf_classes, map(float, row))) for row in joint]

    def save(self, out_dir: str | Path) -> Path:
        """Write ``model.json`` + ``weights.npz`` into ``out_dir``; returns the folder."""
        import sklearn

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        spec, arrays = self.features.to_json()
        (out / "model.json").write_text(json.dumps({
            "format": TFIDF_FORMAT,
            "method": self.name,
            "threshold": self.threshold,
            "temperature": self.temperature,
            "type_classes": self.type_classes,
            "leaf_classes": self.leaf_classes,
            "features": spec,
            "meta": self.meta,
            "versions": {"scikit-learn": sklearn.__version__, "numpy": np.__version__},
        }, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")  # fmt: skip
        # float16 coefficients: a quarter of the size, and a logit moves by < 1e-2 (pinned by the reload test)
        np.savez_compressed(out / "weights.npz", **arrays, type_coef=self.type_coef.astype(np.float16),
                            type_intercept=self.type_intercept, leaf_coef=self.leaf_coef.astype(np.float16),
                            leaf_intercept=self.leaf_intercept)  # fmt: skip
        return out

    @classmethod
    def load(cls, path: str | Path | None = None, threshold: float | None = None) -> "TfidfClassifier":
        """Rebuild a saved classifier from ``path`` (the folder ``save`` wrote; default: the shipped one)."""
        folder = Path(path) if path else default_classifier_path()
        if not (folder / "model.json").is_file():
            raise FileNotFoundError(f"tfidf: no model.json in {folder} (train one with `judge-train "
                                    "criteria-classifier --out DIR`)")  # fmt: skip
        spec = json.loads((folder / "model.json").read_text(encoding="utf-8"))
        if spec.get("format") != TFIDF_FORMAT:
            raise ValueError(f"tfidf: {folder}/model.json has format {spec.get('format')!r}, expected "
                             f"{TFIDF_FORMAT!r}; retrain it with `judge-train criteria-classifier --out {folder}`")
        with np.load(folder / "weights.npz") as w:
            arrays = {k: w[k] for k in w.files}
        types = (spec["type_classes"], arrays["type_coef"].astype(np.float64), arrays["type_intercept"])
        leaves = (spec["leaf_classes"], arrays["leaf_coef"].astype(np.float64), arrays["leaf_intercept"])
        return cls(_TextFeatures.from_json(spec["features"], arrays), types, leaves, spec["temperature"],
                   spec["threshold"] if threshold is None else threshold, spec["meta"])  # fmt: skip


# ----------------------------------------------------------------------------------------------- head


class HeadClassifier(_ChooseMixin):
    """A sequence-classification checkpoint whose ``id2label`` are leaf labels (softmax over the logits).

    Reads with transformers on CPU; vLLM's pooling runner serves the same folder (``--runner pooling``,
    ``POST /classify``).
    """

    name = "head"

    def __init__(self, path: str | Path, threshold: float = DEFAULT_THRESHOLD, max_length: int = 512):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        self.threshold = threshold
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModelForSequenceClassification.from_pretrained(self.path).eval()
        labels = [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]
        taxonomy = load_taxonomy()
        for lab in labels:
            leaf_of(lab, taxonomy)  # a head trained on other labels is refused here, not at judging time
        self.labels = labels

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        import torch

        out = []
        for text in instructions:
            enc = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=self.max_length)
            with torch.no_grad():
                probs = torch.softmax(self.model(**enc).logits[0].float(), dim=-1)
            out.append(dict(zip(self.labels, map(float, probs))))
        return out


# ----------------------------------------------------------------------------------------------- expansion


def expand_criteria(
    instruction: str,
    answer: str,
    choice: TaskChoice | TaskClassifier,
    lang: str = "ru",
    extra: Mapping | None = None,
) -> tuple[list[dict], dict]:
    """One judge item per chosen criterion, for ``criteria: auto`` (pure given a ``TaskChoice``).

    Args:
        instruction, answer: the pair to judge.
        choice: a ``TaskChoice``, or a classifier to ask for one.
        lang: rubric language.
        extra: columns copied into every item (``model_id``, ``reference_answer``...).

    Returns:
        (items, choice record). Each item has the POLLUX record columns ``instruction``, ``answer``,
        ``criteria_name`` (the criterion's Russian name, as the dataset names it), ``rubrics``, ``task_type``,
        ``task_subtype``, ``task_subsubtype`` (of the top-1 leaf), plus ``criterion_id`` and ``task_choice``
        (the choice record, so a report can be filtered by it). The choice record is ``TaskChoice.to_dict()``.
    """
    if not isinstance(choice, TaskChoice):
        choice = choice.choose(instruction, answer)
    taxonomy = load_taxonomy()
    # A failed choice (an LLM answer outside the taxonomy) has no leaf: its items carry empty task columns.
    leaf = leaf_of(choice.label, taxonomy) if choice.label else None
    record = choice.to_dict()
    items = []
    for cid in choice.criteria:
        crit = taxonomy.criteria[cid]
        items.append({
            **(extra or {}),
            "instruction": instruction,
            "answer": answer,
            "criteria_name": crit.name[lang],
            "criterion_id": cid,
            "rubrics": crit.rubric(lang),
            "task_type": leaf.task_type if leaf else "",
            "task_subtype": (leaf.subtype or "") if leaf else "",
            "task_subsubtype": (leaf.subsubtype or "") if leaf else "",
            "task_choice": record,
        })  # fmt: skip
    return items, record


#: Columns of an input row that ``expand_rows`` copies into every item (POLLUX record columns it does not set).
_CARRIED = ("id", "model_id", "reference_answer", "difficulty", "domain")
#: Labels belong to one criterion: a row without ``criteria_name`` that carries them is refused, since copying them
#: onto every chosen criterion would score the judge against made-up references.
_PER_CRITERION = ("expert_scores", "expert_feedback", "criteria_score", "annotations")


def expand_rows(rows: Iterable[Mapping], classifier: TaskClassifier, source: str = "data") -> tuple[list[dict], list[dict]]:
    """``criteria: auto`` over a dataset: every (instruction, answer) row becomes one item per chosen criterion.

    Rows that already name a criterion (``criteria_name``) pass through unchanged, so a file may mix both.
    Item ids are ``<row id>::<criterion id>`` (row id: the row's ``id``, else its index), stable across runs.

    Returns:
        (items, choices): the POLLUX-format items, and one choice record per expanded row (``row`` index, ``id``
        and ``TaskChoice.to_dict()`` fields) for a ``task_choices.jsonl`` beside the predictions.

    Raises:
        ValueError: a row without ``instruction`` or ``answer``, or a row without ``criteria_name`` that carries
            expert labels (they belong to one criterion), naming the source, row and field.
    """
    items, choices = [], []
    for i, row in enumerate(rows):
        if row.get("criteria_name"):
            items.append(dict(row))
            continue
        for key in ("instruction", "answer"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise ValueError(f"{source} row {i}: '{key}' must be a non-empty string for criteria: auto")
        labelled = [k for k in _PER_CRITERION if row.get(k) not in (None, [], ())]
        if labelled:
            raise ValueError(f"{source} row {i}: field '{labelled[0]}' labels one criterion, but the row names none "
                             "(criteria_name) for criteria: auto to expand; give criteria_name, or drop the labels")
        row_id = str(row.get("id") or i)
        carried = {k: row[k] for k in _CARRIED if k in row and k != "id"}
        got, record = expand_criteria(row["instruction"], row["answer"], classifier, extra=carried)
        for item in got:
            item["id"] = f"{row_id}::{item['criterion_id']}"
        items.extend(got)
        choices.append({"row": i, "id": row_id, **record})
    return items, choices


def expand_file(source: str | Path, out_dir: str | Path, classifier: TaskClassifier) -> Path:
    """``expand_rows`` over a JSONL file: writes ``auto_items.jsonl`` (POLLUX-format items for ``judge.load_records``)
    and ``task_choices.jsonl`` (one choice record per expanded row) into ``out_dir``; returns the items' path.

    Raises:
        ValueError: a line that is not a JSON object, or a row ``expand_rows`` refuses (naming file and row).
    """
    source, out = Path(source), Path(out_dir)
    if source.suffix.lower() != ".jsonl":
        raise ValueError(f"{source}: criteria: auto reads (instruction, answer) rows from a .jsonl file "
                         "(judge-eval convert writes one from any source)")
    rows = []
    for i, line in enumerate(source.read_text(encoding="utf-8").splitlines()):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{source} line {i + 1}: invalid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{source} line {i + 1}: not a JSON object")
            rows.append(row)
    items, choices = expand_rows(rows, classifier, str(source))
    out.mkdir(parents=True, exist_ok=True)
    for name, data in (("auto_items.jsonl", items), ("task_choices.jsonl", choices)):
        with (out / name).open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in data)
    return out / "auto_items.jsonl"


def criteria_set_scores(chosen: Iterable[str], gold: Iterable[str]) -> dict[str, float]:
    """Precision, recall and Jaccard of a chosen criteria set against the gold set (over base ids).

    Variants (``facts__2``) count as their base criterion: a judge given the sibling variant still judges the same
    quality, and the fallback set lists base ids.
    """
    a = {c.split("__")[0] for c in chosen}
    b = {c.split("__")[0] for c in gold}
    inter = len(a & b)
    return {
        "precision": inter / len(a) if a else math.nan,
        "recall": inter / len(b) if b else math.nan,
        "jaccard": inter / len(a | b) if a | b else math.nan,
    }

