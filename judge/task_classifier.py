"""``criteria: auto``: choose the leaf task of an instruction, and with it the POLLUX criteria to judge on.

The POLLUX paper leaves this open: "The creation of the criteria classifier remains an open research question and
is deferred to future work" (``seeds/003_04de0265a3137b49.txt:250``). Here a classifier maps an instruction to a
leaf task of the vendored taxonomy (task type / subtype / sub-subtype) with a probability; the criteria set is then
the taxonomy's own (``Taxonomy.criteria_for``), so no criterion outside the taxonomy can appear. Below a probability
threshold the choice falls back to the criteria that apply to any text (``fallback_criteria``) and says so.

Methods are pluggable by name (``build_classifier``):

- ``tfidf``: character n-gram TF-IDF + logistic regression (scikit-learn), trained from labelled instructions,
  saved as JSON + npz (no pickle);
- ``llm``: any OpenAI-compatible chat endpoint chooses hierarchically (task type, then subtype, then sub-subtype)
  with vLLM's guided choice over the taxonomy's names (``judge.task_classifier_llm``);
- ``head``: a sequence-classification checkpoint whose ``id2label`` are leaf labels (transformers, or vLLM's
  pooling runner).

Typical use::

    clf = build_classifier("tfidf", path="runs/task-clf")
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

from judge.splits import ZERO_SHOT, STANDARD, load_split_spec
from judge.taxonomy import Task, Taxonomy, TaxonomyError, load_taxonomy

__all__ = [
    "DEFAULT_THRESHOLD",
    "FALLBACK_GROUPS",
    "LABEL_SEPARATOR",
    "TaskChoice",
    "TaskClassifier",
    "TfidfClassifier",
    "HeadClassifier",
    "build_classifier",
    "classifier_from_settings",
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
    "training_path",
]

#: Leaf labels join the English names along the path: "Code creation / Python".
LABEL_SEPARATOR = " / "
#: Groups whose criteria apply to any text: "Note that Critical, Subjective, and General criteria are applicable to
#: any text, hence they are eligible for every t and s" (seeds/003_04de0265a3137b49.txt:143). The paper's "General"
#: group is the taxonomy's "Fine-grained" (the six criteria of Table 63, seeds/003_04de0265a3137b49.txt:3903).
FALLBACK_GROUPS = ("Critical", "Fine-grained", "Subjective")
#: Below this top-1 probability the choice falls back to the shared criteria. The paper is silent (it has no
#: classifier); 0.5 means "more likely this leaf than all others together". A named option everywhere.
DEFAULT_THRESHOLD = 0.5


def label_of(task: Task) -> str:
    """The leaf's label: its English path names joined by ``LABEL_SEPARATOR``."""
    return LABEL_SEPARATOR.join(task.path)


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
    intersection over leaves is empty; the paper's statement (line 143) is the rule, the taxonomy's group field the
    data.
    """
    taxonomy = taxonomy or load_taxonomy()
    return tuple(c.id for c in taxonomy.criteria.values() if c.group in FALLBACK_GROUPS and "__" not in c.id)


# ----------------------------------------------------------------------------------------------- the contract


@dataclass(frozen=True)
class TaskChoice:
    """What a classifier chose for one instruction (the wire format of ``criteria: auto``).

    Attributes:
        task_type, task_subtype, task_subsubtype: the top-1 leaf's English names ("" where the path is shorter);
            the top-1 leaf even when ``fallback`` is set.
        label: the top-1 leaf's label (``label_of``); "" when the method failed to name a leaf (see ``reason``).
        probability: the classifier's probability of the top-1 leaf (None when the method gives none).
        alternatives: the top-k leaves as ``(label, probability)``, best first, the top-1 included.
        criteria: criterion ids to judge on: the leaf's set, or ``fallback_criteria()`` when ``fallback``.
        fallback: True when ``criteria`` is the fallback set.
        reason: why it fell back ("" when it did not).
        method: the classifier's name.
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

    def to_dict(self) -> dict:
        row = asdict(self)
        row["alternatives"] = [{"label": lab, "probability": p} for lab, p in self.alternatives]
        row["criteria"] = list(self.criteria)
        return row

    @classmethod
    def of_leaf(
        cls, leaf: Task, probability: float | None, alternatives: tuple[tuple[str, float], ...], threshold: float,
        method: str, taxonomy: Taxonomy,
    ) -> "TaskChoice":
        """The choice of ``leaf``: its criteria, or the fallback set when ``probability`` is below ``threshold``
        (a method without probabilities, ``None``, never falls back)."""
        fallback = probability is not None and probability < threshold
        return cls(
            task_type=leaf.task_type,
            task_subtype=leaf.subtype or "",
            task_subsubtype=leaf.subsubtype or "",
            label=label_of(leaf),
            probability=probability,
            alternatives=alternatives,
            criteria=fallback_criteria(taxonomy) if fallback else leaf.criteria,
            fallback=fallback,
            reason=f"top probability {probability:.3f} < threshold {threshold:.3f}" if fallback else "",
            method=method,
        )

    @classmethod
    def from_dict(cls, row: Mapping) -> "TaskChoice":
        values = dict(row)
        values["alternatives"] = tuple((a["label"], float(a["probability"])) for a in values.get("alternatives", []))
        values["criteria"] = tuple(values["criteria"])
        return cls(**values)


def choose_from_scores(
    scores: Mapping[str, float],
    method: str,
    threshold: float = DEFAULT_THRESHOLD,
    top_k: int = 3,
    taxonomy: Taxonomy | None = None,
) -> TaskChoice:
    """Turn leaf probabilities into a ``TaskChoice`` (pure).

    Args:
        scores: leaf label -> probability (need not cover every leaf; need not sum to one).
        method: the classifier's name, recorded.
        threshold: below this top-1 probability the criteria fall back to ``fallback_criteria``.
        top_k: how many alternatives to keep.

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
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    alternatives = tuple((label_of(leaf_of(lab, taxonomy)), float(p)) for lab, p in ranked[:top_k])
    return TaskChoice.of_leaf(leaf_of(ranked[0][0], taxonomy), float(ranked[0][1]), alternatives, threshold, method,
                              taxonomy)


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
    from judge.records import load_records

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
    """One weakly labelled training text per leaf from the taxonomy itself: its Russian path names, description
    and complexity notes (``tasks.json``). Covers all 152 leaves without hand labels; no instruction of the
    held-out set is derived from it.
    """
    taxonomy = taxonomy or load_taxonomy()
    held_out = load_split_spec(taxonomy=taxonomy).task_types
    rows = []
    for task in taxonomy.tasks:
        if task.task_type in held_out and not include_zero_shot:
            continue
        parts = list(task.names_ru[1:]) + [(task.description or {}).get("ru") or ""]
        parts += [(level or {}).get("ru") or "" for level in (task.complexity or {}).values()]
        rows.append({"instruction": ". ".join(p for p in parts if p),
                     "label": label_of(task),
                     "split": ZERO_SHOT if task.task_type in held_out else STANDARD})  # fmt: skip
    return rows


def heldout_path() -> Path:
    """The bundled held-out set (never used for training): ``judge/data/task_classifier_heldout.jsonl``."""
    return Path(str(resources.files("judge") / "data" / "task_classifier_heldout.jsonl"))


def training_path() -> Path:
    """The bundled small training set, disjoint from the held-out one: ``judge/data/task_classifier_train.jsonl``."""
    return Path(str(resources.files("judge") / "data" / "task_classifier_train.jsonl"))


# ----------------------------------------------------------------------------------------------- tfidf

TFIDF_FORMAT = "pollux-task-tfidf-v1"


class TfidfClassifier(_ChooseMixin):
    """Character n-gram TF-IDF + multinomial logistic regression over leaf labels.

    Saved without pickle: ``model.json`` (vocabulary, parameters, labels, versions) and ``weights.npz`` (idf,
    coefficients, intercepts); ``load`` rebuilds the scikit-learn objects from them.
    """

    name = "tfidf"

    def __init__(self, vectorizer, model, threshold: float = DEFAULT_THRESHOLD, meta: dict | None = None):
        self.vectorizer = vectorizer
        self.model = model
        self.threshold = threshold
        self.meta = meta or {}

    @classmethod
    def fit(
        cls,
        pairs: Sequence[Mapping],
        ngram_range: tuple[int, int] = (2, 5),
        max_features: int = 50000,
        c: float = 10.0,
        seed: int = 0,
        threshold: float = DEFAULT_THRESHOLD,
    ) -> "TfidfClassifier":
        """Train on ``{"instruction", "label"}`` pairs (``labelled_rows`` output).

        Args:
            ngram_range: character n-gram lengths within word boundaries (``char_wb``): robust to Russian
                inflection, which word features split into many forms.
            max_features: vocabulary cap (most frequent n-grams).
            c: inverse L2 regularisation strength of the logistic regression.
        """
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        labels = sorted({p["label"] for p in pairs})
        if len(labels) < 2:
            raise ValueError(f"tfidf: need at least two distinct leaf labels to train, got {labels}")
        vectorizer = TfidfVectorizer(
            analyzer="char_wb", ngram_range=tuple(ngram_range), max_features=max_features, sublinear_tf=True,
            lowercase=True,
        )
        x = vectorizer.fit_transform([p["instruction"] for p in pairs])
        model = LogisticRegression(C=c, max_iter=2000, random_state=seed)
        with warnings.catch_warnings():
            # 152 leaves over a few hundred rows trips scikit-learn's "looks like regression" heuristic
            warnings.filterwarnings("ignore", message="The number of unique classes", category=UserWarning)
            model.fit(x, [p["label"] for p in pairs])
        meta = {"ngram_range": list(ngram_range), "max_features": max_features, "c": c, "seed": seed,
                "n_train": len(pairs), "labels": labels}  # fmt: skip
        return cls(vectorizer, model, threshold, meta)

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        probs = self.model.predict_proba(self.vectorizer.transform(list(instructions)))
        classes = [str(c) for c in self.model.classes_]
        return [dict(zip(classes, map(float, row))) for row in probs]

    def save(self, out_dir: str | Path) -> Path:
        """Write ``model.json`` + ``weights.npz`` into ``out_dir``; returns the folder."""
        import numpy as np
        import sklearn

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        vocab = {term: int(i) for term, i in self.vectorizer.vocabulary_.items()}
        (out / "model.json").write_text(json.dumps({
            "format": TFIDF_FORMAT,
            "method": self.name,
            "threshold": self.threshold,
            "classes": [str(c) for c in self.model.classes_],
            "vectorizer": {"analyzer": "char_wb", "ngram_range": list(self.vectorizer.ngram_range),
                           "sublinear_tf": True, "lowercase": True, "vocabulary": vocab},
            "meta": self.meta,
            "versions": {"scikit-learn": sklearn.__version__, "numpy": np.__version__},
        }, ensure_ascii=False), encoding="utf-8")  # fmt: skip
        np.savez(out / "weights.npz", idf=self.vectorizer.idf_, coef=self.model.coef_, intercept=self.model.intercept_)
        return out

    @classmethod
    def load(cls, path: str | Path, threshold: float | None = None) -> "TfidfClassifier":
        """Rebuild a saved classifier from ``path`` (the folder ``save`` wrote)."""
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        folder = Path(path)
        if not (folder / "model.json").is_file():
            raise FileNotFoundError(f"tfidf: no model.json in {folder} (train one with `python -m bench.criteria_auto "
                                    "--save DIR` or TfidfClassifier.fit(...).save(DIR))")  # fmt: skip
        spec = json.loads((folder / "model.json").read_text(encoding="utf-8"))
        if spec.get("format") != TFIDF_FORMAT:
            raise ValueError(f"tfidf: {folder}/model.json has format {spec.get('format')!r}, expected {TFIDF_FORMAT!r}")
        weights = np.load(folder / "weights.npz")
        v = spec["vectorizer"]
        vectorizer = TfidfVectorizer(analyzer=v["analyzer"], ngram_range=tuple(v["ngram_range"]),
                                     sublinear_tf=v["sublinear_tf"], lowercase=v["lowercase"],
                                     vocabulary=v["vocabulary"])  # fmt: skip
        vectorizer.idf_ = weights["idf"]
        model = LogisticRegression()
        model.classes_ = np.array(spec["classes"], dtype=object)
        model.coef_ = weights["coef"]
        model.intercept_ = weights["intercept"]
        return cls(vectorizer, model, spec["threshold"] if threshold is None else threshold, spec["meta"])


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


# ----------------------------------------------------------------------------------------------- registry


def _build_llm(**kwargs) -> TaskClassifier:
    from judge.task_classifier_llm import LLMClassifier

    return LLMClassifier(**kwargs)


#: Method name -> factory. ``tfidf`` and ``head`` take ``path``; ``llm`` takes ``base_url`` and ``model``.
METHODS: dict[str, Callable[..., TaskClassifier]] = {
    "tfidf": lambda path, **kw: TfidfClassifier.load(path, **kw),
    "llm": _build_llm,
    "head": lambda path, **kw: HeadClassifier(path, **kw),
}


def build_classifier(method: str, **kwargs) -> TaskClassifier:
    """The classifier of ``method`` (a key of ``METHODS``), built from its keyword arguments."""
    if method not in METHODS:
        raise ValueError(f"unknown task-classifier method {method!r}; choose one of {sorted(METHODS)}")
    return METHODS[method](**kwargs)


def classifier_from_settings(method: str, location: str, model: str = "", threshold: float = DEFAULT_THRESHOLD) -> TaskClassifier:
    """The classifier judge-eval's ``--criteria-classifier*`` and judge-serve's ``criteria_classifier*`` settings name.

    Args:
        method: a key of ``METHODS``.
        location: the ``tfidf`` / ``head`` artefact folder, or the ``llm`` method's base URL.
        model: the ``llm`` method's served model name.
        threshold: below this top-1 probability the choice falls back (``DEFAULT_THRESHOLD``).
    """
    if not location:
        raise ValueError(f"task classifier {method!r}: no artefact folder or URL given")
    kwargs = {"base_url": location, "model": model} if method == "llm" else {"path": location}
    return build_classifier(method, threshold=threshold, **kwargs)


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

