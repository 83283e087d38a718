"""Fitting the tfidf task classifier of ``criteria: auto`` and writing its artefact (``judge-train
criteria-classifier``; ``judge/data/criteria_tfidf`` is one): the TF-IDF vocabularies, the task-type model and the
leaf models within each type, the temperature and the fallback threshold chosen on out-of-fold predictions
(``choose_threshold``), and ``save_tfidf`` (JSON + npz, no pickle). What it writes, ``judge.criteria_auto.tfidf``
loads and predicts with; nothing here is needed to judge.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from judge.criteria_auto.measures import CRITERIA_MATCHES, criteria_set_scores, reliability
from judge.criteria_auto.policy import DEFAULT_THRESHOLD, choose_from_scores, fallback_criteria, leaf_of, task_type_of
from judge.criteria_auto.tfidf import TFIDF_FORMAT, TextFeatures, TfidfClassifier
from judge.taxonomy import load_taxonomy

__all__ = ["THRESHOLD_MATCH", "choose_threshold", "fit_features", "fit_tfidf", "features_to_json",
           "out_of_fold_folds", "save_tfidf", "threshold_readings", "training_digest"]

#: How ``choose_threshold``'s Jaccard matches criteria (``judge.criteria_auto.measures.CRITERIA_MATCHES``): by base
#: id. By exact id the out-of-fold mean Jaccard is nearly flat in the threshold (a wrong sibling leaf's variants and
#: the fallback set score alike against a leaf that lists its own variants), so its arg-max is set by a handful of
#: instructions and falls back on a large share of them; by base id it falls steadily as more instructions fall
#: back, and its choice is close to the best exact-id mean too. ``threshold_readings`` gives both choices with both
#: means (docs/criteria-auto.md has the figures); the bench reports both readings on the held-out set.
THRESHOLD_MATCH = "base"


def fit_tfidf(
    pairs: Sequence[Mapping],
    char_ngrams: tuple[int, int] = (2, 5),
    word_ngrams: tuple[int, int] = (1, 2),
    max_char_features: int = 16000,
    max_word_features: int = 4000,
    c: float = 30.0,
    folds: int = 5,
    seed: int = 0,
    threshold: float | None = None,
) -> TfidfClassifier:
    """Train the tfidf classifier on ``{"instruction", "label"}`` pairs (``judge.criteria_auto.labelled_rows`` /
    ``train.criteria_rows.taxonomy_rows`` output).

    Calibration and the threshold come from ``folds``-fold out-of-fold predictions over the real instructions
    (rows not marked ``"source": "taxonomy"``; taxonomy texts stay in every training fold, since they describe
    tasks rather than ask for them; near duplicates are held out together, ``out_of_fold_folds``): the
    temperature minimises their negative log-likelihood, and the threshold maximises the mean Jaccard of the
    judged criteria against each instruction's true set (``choose_threshold``), unless ``threshold`` is given.
    Both, with the out-of-fold figures they were chosen on, are recorded in ``meta["calibration"]``.

    Args:
        char_ngrams, word_ngrams: n-gram lengths of the two feature families.
        max_char_features, max_word_features: vocabulary caps (most frequent terms): they bound the artefact.
        c: inverse L2 regularisation strength of both logistic regressions.
    """
    from threadpoolctl import threadpool_limits

    # one BLAS/OpenMP thread: these are many small fits, and threads only contend (32 s -> 1.4 s of CPU for the
    # per-type leaf fits on this 2-core machine under load)
    with threadpool_limits(1):
        return _fit(pairs, char_ngrams, word_ngrams, max_char_features, max_word_features, c, folds, seed,
                    threshold)  # fmt: skip


def _fit(pairs, char_ngrams, word_ngrams, max_char_features, max_word_features, c, folds, seed, threshold):
    """``fit_tfidf`` under one thread: calibration on out-of-fold data, then the final fit on every row."""
    params = {"char_ngrams": list(char_ngrams), "word_ngrams": list(word_ngrams),
              "max_char_features": max_char_features, "max_word_features": max_word_features, "c": c,
              "seed": seed}  # fmt: skip
    if len({task_type_of(p["label"]) for p in pairs}) < 2:
        raise ValueError("tfidf: need at least two task types to train")
    real = [i for i, p in enumerate(pairs) if p.get("source") != "taxonomy"]
    calibration: dict = {"folds": folds, "n_instructions": len(real)}
    temperature = 1.0
    if len(real) >= folds >= 2:
        temperature, oof = _out_of_fold(pairs, real, folds, params)
        calibration.update({"temperature": temperature, **oof})
        if threshold is None:
            threshold = oof["chosen"]["threshold"]
        calibration["warnings"] = _calibration_warnings(temperature, threshold, oof["chosen"], len(real))
    if threshold is None:
        threshold = DEFAULT_THRESHOLD
        why = f"{folds} fold" if folds < 2 else f"fewer than {folds} real instructions"
        calibration["note"] = f"{why}: no out-of-fold threshold, the default used"
    model = _fit_once(pairs, params, temperature, float(threshold))
    model.meta = {**params, "n_train": len(pairs), "training_digest": training_digest(pairs),
                  "calibration": calibration}
    return model


def _calibration_warnings(temperature: float, threshold: float, chosen: Mapping, n_instructions: int) -> list[str]:
    """What a calibration on too few instructions looks like, said rather than shipped quietly: a temperature at an
    end of its search grid (no minimum inside it: the probabilities are as sharp, or as flat, as the grid allows, and
    a poem request read "Code creation" at 0.87 from nine training rows), a chosen threshold of 0 (the fallback
    never helped on these instructions, so the classifier never falls back), and one above every instruction's
    probability (choosing never helped: it always falls back)."""
    said = []
    low, high, _ = TEMPERATURE_GRID
    if math.isclose(temperature, low) or math.isclose(temperature, high):
        said.append(f"the fitted temperature {temperature:g} is at the end of its search grid ({low:g} to {high:g}): "
                    f"{n_instructions} out-of-fold instructions are too few to calibrate the probabilities, and the "
                    "threshold read from them; train on more")
    if threshold == 0.0 and chosen.get("threshold") == 0.0:
        said.append(f"the threshold chosen on {n_instructions} instructions is 0: the classifier never falls back to "
                    "the general criteria; pass --threshold, or train on more")
    if threshold == chosen.get("threshold") and chosen.get("fallback_rate") == 1.0:
        said.append(f"the threshold chosen on {n_instructions} instructions, {threshold:.6g}, is above every one's "
                    "task-type probability: the classifier falls back to the general criteria on all of them; pass "
                    "--threshold, or train on more")
    return said


def _fit_once(pairs: Sequence[Mapping], params: Mapping, temperature: float, threshold: float) -> TfidfClassifier:
    """One fit of the features and both linear models on ``pairs``, at a given temperature and threshold."""
    texts = [p["instruction"] for p in pairs]
    features = fit_features(texts, params["char_ngrams"], params["word_ngrams"],
                            params["max_char_features"], params["max_word_features"])  # fmt: skip
    x = features.transform(texts)
    types = _fit_linear(x, [task_type_of(p["label"]) for p in pairs], params["c"], params["seed"])
    return TfidfClassifier(features, types, _fit_leaves_within_types(x, pairs, params), temperature, threshold)


def _out_of_fold_choices(pairs, real, folds, params) -> tuple[float, list[tuple]]:
    """The temperature, and per real instruction ``(task-type probability, type right, criteria chosen at threshold
    0, gold criteria)``, from fold models that never saw the instructions they score."""
    taxonomy = load_taxonomy()
    scored = []  # (gold label, instruction, the fold model that did not see it)
    for held in out_of_fold_folds(pairs, real, folds, params["seed"]):
        if not held:  # fewer groups than folds: nothing for this fold model to score
            continue
        kept = set(range(len(pairs))) - set(held)
        model = _fit_once([p for i, p in enumerate(pairs) if i in kept], params, 1.0, 0.0)
        scored += [(pairs[i]["label"], pairs[i]["instruction"], model) for i in held]
    # temperature: on the instructions whose task type their fold model knows (a type whose every row was held
    # out cannot be scored; it still counts below, as a miss)
    logits, gold_index = [], []
    for gold, text, model in scored:
        if task_type_of(gold) in model.type_classes:
            z = np.asarray(model.features.transform([text]) @ model.type_coef.T)[0] + model.type_intercept
            logits.append(z)
            gold_index.append(model.type_classes.index(task_type_of(gold)))
    temperature = _fit_temperature(logits, gold_index)
    choices = []
    for gold, text, model in scored:
        model.temperature = temperature
        choice = choose_from_scores(model.predict_proba([text])[0], "tfidf", 0.0, taxonomy=taxonomy)
        choices.append((choice.task_type_probability, choice.task_type == task_type_of(gold), choice.criteria,
                        leaf_of(gold, taxonomy).criteria))
    return temperature, choices


def out_of_fold_folds(pairs: Sequence[Mapping], real: Sequence[int], folds: int, seed: int) -> list[list[int]]:
    """The rows of ``real`` (indices into ``pairs``) each out-of-fold model holds out, ``folds`` lists of them: a
    seeded shuffle dealt round the folds, near duplicates together.

    Near duplicates (``judge.criteria_auto.labelled.near_duplicates``: the same instruction without its final ".",
    with a clause cut or a few words changed) form one group, dealt whole into one fold: dealt apart, the model
    scoring one copy was trained on the other, which inflates the out-of-fold figures the temperature and the
    threshold are chosen on (and ``model.json`` records). They stay in the training rows: a rewording is what users
    send, and the final model is fit on every row. Groups are dealt in a seeded shuffle, each to the fold holding
    the fewest rows (the first such fold on a tie): with no near duplicates, every group one row, this is the round
    robin over a shuffle of ``real`` the folds always were, so a build of rows without near duplicates (the bundled
    rows) is unchanged.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from judge.criteria_auto.labelled import near_duplicates

    texts = [pairs[i]["instruction"] for i in real]
    linked = [(a, b) for a, b, _, _ in near_duplicates(texts, texts)]
    edges = coo_matrix(([1] * len(linked), ([a for a, _ in linked], [b for _, b in linked])),
                       shape=(len(texts), len(texts)))
    # Components are numbered in the order of their first row, as ``real`` lists them; a group keeps that order too.
    _, group_of = connected_components(edges, directed=False)
    members: list[list[int]] = [[] for _ in range(int(group_of.max()) + 1 if len(texts) else 0)]
    for a, group in enumerate(group_of.tolist()):
        members[group].append(real[a])
    held: list[list[int]] = [[] for _ in range(folds)]
    for g in np.random.default_rng(seed).permutation(len(members)).tolist():
        held[min(range(folds), key=lambda k: len(held[k]))] += members[g]
    return [sorted(h) for h in held]


def _jaccards(choices, match: str) -> tuple[list[float], list[float]]:
    """Per out-of-fold choice, the Jaccard of its chosen criteria and of the fallback set against the gold set."""
    fallback_set = fallback_criteria()
    return ([criteria_set_scores(chosen, truth, match=match)["jaccard"] for _, _, chosen, truth in choices],
            [criteria_set_scores(fallback_set, truth, match=match)["jaccard"] for _, _, _, truth in choices])


def _out_of_fold(pairs, real, folds, params) -> tuple[float, dict]:
    """Temperature and threshold from fold models that never saw the instructions they score."""
    temperature, choices = _out_of_fold_choices(pairs, real, folds, params)
    type_p = [p for p, _, _, _ in choices]
    correct = [ok for _, ok, _, _ in choices]
    chosen_j, fallback_j = _jaccards(choices, THRESHOLD_MATCH)
    return temperature, {
        "n_out_of_fold": len(choices),
        "type_accuracy": float(np.mean(correct)),
        "ece": reliability(type_p, correct)["ece"],
        "chosen": choose_threshold(type_p, chosen_j, fallback_j),
        # what the choice was made on, so that it can be checked without retraining
        "out_of_fold": [[round(p, 6), bool(ok), round(cj, 6), round(fj, 6)]
                        for p, ok, cj, fj in zip(type_p, correct, chosen_j, fallback_j)],
    }


def threshold_readings(pairs: Sequence[Mapping], folds: int = 5, sweep: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4,
                       0.5, 0.6, 0.7, 0.8, 0.9, 1.0)) -> dict:  # fmt: skip
    """The evidence for ``THRESHOLD_MATCH``, on ``fit_tfidf``'s out-of-fold predictions (its default parameters):
    ``"chosen"``, the threshold ``choose_threshold`` picks by each reading of criteria matching
    (``CRITERIA_MATCHES``) with every reading's mean Jaccard at it (``"mean_jaccard_by"``); and ``"sweep"``, per
    threshold of ``sweep``, the share falling back and each reading's mean Jaccard. ``bench/criteria_auto.py
    --threshold-readings`` prints it for the bundled rows (~1 min on 2 cores)."""
    import inspect

    from threadpoolctl import threadpool_limits

    defaults = {k: v.default for k, v in inspect.signature(fit_tfidf).parameters.items()}
    params = {k: list(defaults[k]) if k.endswith("ngrams") else defaults[k]
              for k in ("char_ngrams", "word_ngrams", "max_char_features", "max_word_features", "c", "seed")}
    real = [i for i, p in enumerate(pairs) if p.get("source") != "taxonomy"]
    with threadpool_limits(1):
        _, choices = _out_of_fold_choices(pairs, real, folds, params)
    type_p = np.array([p for p, _, _, _ in choices])
    by = {match: _jaccards(choices, match) for match in CRITERIA_MATCHES}
    means = lambda kept: {m: float(np.where(kept, *by[m]).mean()) for m in CRITERIA_MATCHES}  # noqa: E731
    chosen = {}
    for match in CRITERIA_MATCHES:
        chosen[match] = choose_threshold(type_p, *by[match])
        chosen[match]["mean_jaccard_by"] = means(type_p >= chosen[match]["threshold"])
    return {"chosen": chosen, "sweep": [{"threshold": float(t), "fallback_rate": float((type_p < t).mean()),
                                         "mean_jaccard_by": means(type_p >= t)} for t in sweep]}


def fit_features(texts, char_ngrams, word_ngrams, max_char, max_word) -> TextFeatures:
    """The TF-IDF vocabularies and idf of both feature families, learnt from ``texts``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    char = TfidfVectorizer(analyzer="char_wb", ngram_range=tuple(char_ngrams), max_features=max_char,
                           sublinear_tf=True, lowercase=True, dtype=np.float64)  # fmt: skip
    word = TfidfVectorizer(analyzer="word", ngram_range=tuple(word_ngrams), max_features=max_word,
                           sublinear_tf=True, lowercase=True, dtype=np.float64)  # fmt: skip
    texts = list(texts)
    char.fit(texts)
    word.fit(texts)
    return TextFeatures(char, word)


def features_to_json(features: TextFeatures) -> tuple[dict, dict]:
    """The ``features`` spec of ``model.json`` and the idf arrays of ``weights.npz`` (``TextFeatures.from_json``
    reads them back)."""
    spec, arrays = {}, {}
    for name, vec in zip(("char", "word"), features.vectorizers()):
        spec[name] = {"analyzer": vec.analyzer, "ngram_range": list(vec.ngram_range), "sublinear_tf": True,
                      "lowercase": True, "vocabulary": {t: int(i) for t, i in sorted(vec.vocabulary_.items())}}
        arrays[f"{name}_idf"] = vec.idf_
    return spec, arrays


def save_tfidf(clf: TfidfClassifier, out_dir: str | Path) -> Path:
    """Write ``clf`` as ``model.json`` + ``weights.npz`` into ``out_dir`` (what ``TfidfClassifier.load`` reads);
    returns the folder.

    Each file is replaced whole (``write_atomically``), the weights first and ``model.json`` last, recording the
    weights' sha256 (``WEIGHTS_DIGEST_KEY``): a rebuild stopped between the two leaves the earlier ``model.json``
    beside the new weights, which ``load`` refuses rather than reading two builds as one (at the default caps every
    build's weights have the same shapes). Only the two files are touched: nothing else in ``out_dir`` is moved."""
    import sklearn

    from judge.criteria_auto.tfidf import WEIGHTS_DIGEST_KEY, weights_digest
    from judge.plumbing.atomic_write import write_atomically

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec, arrays = features_to_json(clf.features)
    # float16 coefficients: a quarter of the size, and a logit moves by < 1e-2 (pinned by the reload test)
    weights = write_atomically(out / "weights.npz", lambda handle: np.savez_compressed(
        handle, **arrays, type_coef=clf.type_coef.astype(np.float16), type_intercept=clf.type_intercept,
        leaf_coef=clf.leaf_coef.astype(np.float16), leaf_intercept=clf.leaf_intercept))  # fmt: skip
    model = json.dumps({
        "format": TFIDF_FORMAT,
        "method": clf.name,
        "threshold": clf.threshold,
        "temperature": clf.temperature,
        "type_classes": clf.type_classes,
        "leaf_classes": clf.leaf_classes,
        "features": spec,
        "meta": clf.meta,
        "versions": {"scikit-learn": sklearn.__version__, "numpy": np.__version__},
        WEIGHTS_DIGEST_KEY: weights_digest(weights),
    }, ensure_ascii=False, indent=0, sort_keys=True) + "\n"  # fmt: skip
    write_atomically(out / "model.json", model.encode("utf-8"))
    return out


def training_digest(pairs: Sequence[Mapping]) -> str:
    """sha256 of the (instruction, label) rows in order: which rows a tfidf artefact was trained on."""
    import hashlib

    text = json.dumps([[p["instruction"], p["label"]] for p in pairs], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fit_linear(x, y, c: float, seed: int):
    """Multinomial logistic regression; returns (classes, coef, intercept) as plain arrays, one row per class."""
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        # many classes over a few hundred rows trips scikit-learn's "looks like regression" heuristic
        warnings.filterwarnings("ignore", message="The number of unique classes", category=UserWarning)
        # newton-cg: same fit as lbfgs here, in a third of the time (few iterations over many coefficients)
        model = LogisticRegression(C=c, max_iter=3000, solver="newton-cg", random_state=seed).fit(x, y)
    coef, intercept = model.coef_, model.intercept_
    if len(model.classes_) == 2:
        # scikit-learn keeps one row for two classes, the second class's logit: a zero row before it gives one row
        # per class with the same probabilities (softmax of [0, z] is the sigmoid of z)
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.concatenate([np.zeros_like(intercept), intercept])
    return [str(k) for k in model.classes_], coef, intercept


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
        by_type.setdefault(task_type_of(p["label"]), []).append(i)
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
        coef[np.ix_(at, cols)], intercept[at] = c, b  # one row per class, two classes too (_fit_linear)
    return labels, coef, intercept


#: The temperatures ``_fit_temperature`` searches, geometrically spaced: a fit at either end found no minimum inside.
TEMPERATURE_GRID = (0.05, 20.0, 200)


def _fit_temperature(logits: Sequence, gold_index: Sequence[int]) -> float:
    """The temperature T minimising the negative log-likelihood of ``softmax(logits / T)`` (temperature scaling,
    Guo et al. 2017) on out-of-fold logits, one vector per instruction (fold models may know different numbers of
    classes); a grid of 200 values between 0.05 and 20 (``TEMPERATURE_GRID``), so there is no optimiser to tune. 1.0
    without logits."""
    if not len(logits):
        return 1.0
    best_t, best_nll = 1.0, math.inf
    for t in np.geomspace(*TEMPERATURE_GRID):
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
    judge against the instruction's true set when it does not fall back, and the Jaccard of the fallback set
    (``fit_tfidf`` passes both by base id, ``THRESHOLD_MATCH``). A
    threshold t judges the chosen set where the probability is at least t and the fallback set elsewhere; the
    lowest t with the highest mean Jaccard wins (0.0: never fall back; just above the highest probability, when that
    is below 1: always fall back).

    Returns:
        ``{"threshold", "mean_jaccard", "fallback_rate", "never_fallback_jaccard", "always_fallback_jaccard", "n"}``.
    """
    p = np.asarray(type_probability, dtype=float)
    chosen = np.asarray(chosen_jaccard, dtype=float)
    fallback = np.asarray(fallback_jaccard, dtype=float)
    if not len(p):
        raise ValueError("choose_threshold: no instructions to choose a threshold from")
    best = None
    # Falling back on every instruction is a candidate too: just above the highest probability, where a threshold
    # (at most 1) can be above it.
    above = np.nextafter(p.max(), np.inf)
    candidates = np.concatenate([[0.0], np.unique(p), [above] if above <= 1.0 else []])
    for t in candidates:  # ascending: strict > keeps the lowest of equal scores
        kept = p >= t
        score = float(np.where(kept, chosen, fallback).mean())
        if best is None or score > best["mean_jaccard"] + 1e-12:
            best = {"threshold": float(t), "mean_jaccard": score, "fallback_rate": float(1.0 - kept.mean())}
    return {**best, "never_fallback_jaccard": float(chosen.mean()), "always_fallback_jaccard": float(fallback.mean()),
            "n": int(len(p))}
