"""The ``tfidf`` method of ``criteria: auto``, loaded and predicting: character and word n-gram TF-IDF features and
two linear models over them, the task type (temperature-scaled) and the leaf within its type. Saved without pickle:
``model.json`` (vocabularies, labels, temperature, threshold, how both were chosen, versions, the sha256 of the
``weights.npz`` saved with it) and ``weights.npz`` (idf, coefficients in float16, intercepts); one ships with the package (``judge/data/criteria_tfidf``, loaded by
``TfidfClassifier.load()`` with no argument). Fitting and writing an artefact are training's job
(``train/criteria_tfidf.py``, ``judge-train criteria-classifier``); this module only reads one.
A saved artefact's vectorizers are rebuilt by the scikit-learn installed; one built by another minor version is
warned of at load (``_warn_other_scikit_learn``, naming both versions).

What it cannot tell: the evidence check (``MIN_LETTER_NGRAMS``) counts known n-grams of Cyrillic letters, not of
Russian, and not how much of a task they name. A very short request passes it on one known word and gets that
word's prior as a confident task ("Напиши": Scientific reference text, task type at 0.832; "Сделай": Data analysis,
0.797), and so does another language in Cyrillic ("Жаз туралы өлең жаз", Kazakh for "write a poem about summer":
a Mathematics leaf, its task type at 0.179, above the threshold). Name the task (``task_type``) of such a request
to judge it on its criteria. (``docs/criteria-auto.md``, "The shipped classifier", says the same.)
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from judge.criteria_auto.policy import (LeafScoresClassifier, TaskChoice, choose_from_scores, classified_text,
                                        task_type_of)
from judge.plumbing.config_files import read_json_object
from judge.plumbing.json_reading import kind_words, value_words

__all__ = [
    "DEFAULT_TFIDF_DIR",
    "MIN_LETTER_NGRAMS",
    "TFIDF_FORMAT",
    "TextFeatures",
    "TfidfClassifier",
    "WEIGHTS_DIGEST_KEY",
    "default_classifier_path",
    "softmax",
    "weights_digest",
]

TFIDF_FORMAT = "pollux-task-tfidf-v2"
#: The ``model.json`` field holding the sha256 of the ``weights.npz`` saved with it (``weights_digest``), checked at
#: load: the two files are written one after the other, and nothing else ties them together.
WEIGHTS_DIGEST_KEY = "weights_sha256"
#: Where the shipped default classifier lives (package data), rebuilt by ``judge-train criteria-classifier --out``
#: this folder with no data arguments (the bundled rows and the taxonomy). ``tests/unit/test_task_classifier.py`` checks,
#: without refitting, that it was fitted on today's bundled rows (their digest) with ``fit_tfidf``'s default
#: parameters, and that its threshold is the one its recorded out-of-fold predictions give; that a rebuild
#: reproduces its weights byte for byte is not checked (a refit takes about a minute).
DEFAULT_TFIDF_DIR = "criteria_tfidf"


#: ``TfidfClassifier.choose`` falls back, whatever the scores, for a text with fewer than this many distinct known
#: n-grams (character or word) that hold two Cyrillic letters or more: the models were trained on Russian
#: instructions, so their weights on digits, punctuation, single letters and Latin n-grams are where such characters
#: happened to stand in the training texts (digits: STEM exercises; Latin: a few English words quoted in translation
#: tasks), not a task the text asks for, and with nothing else the scores are the priors moved by them
#: ('写一首关于春天的诗 2024' gave a Mathematics leaf at 0.226, above the shipped threshold of 0.105, which sits
#: below the most frequent type's prior; "Summarize the following article in three sentences." a Translation leaf
#: at 0.921, 13 of 14 English instructions a wrong type). Five is less than one known three-letter Russian word
#: gives (six: "кот"), while the real instructions of the bundled sets (held-out, training, sample) hold many
#: times more; the paper has no classifier, so a named constant.
MIN_LETTER_NGRAMS = 5

log = logging.getLogger(__name__)

#: What ``model.json`` says of each feature family (``train.criteria_tfidf.features_to_json`` writes it).
_FEATURE_KEYS = ("analyzer", "ngram_range", "sublinear_tf", "lowercase", "vocabulary")


def _is_cyrillic(ch: str) -> bool:
    """A Cyrillic letter (the Cyrillic block and its supplement): what makes an n-gram count as evidence. Cyrillic,
    not Russian: Kazakh or Ukrainian letters count too."""
    return "\u0400" <= ch <= "\u052f" and ch.isalpha()


def default_classifier_path() -> Path:
    """The folder of the classifier that ships with the package (``judge/data/criteria_tfidf``)."""
    return Path(str(resources.files("judge") / "data" / DEFAULT_TFIDF_DIR))


class TextFeatures:
    """Character n-grams within word boundaries (robust to Russian inflection) beside word uni/bigrams (the words
    that name a task: "переведи", "стихотворение", "Python"), each TF-IDF weighted, side by side.

    Built from fitted vectorizers (training) or from a saved spec (``from_json``); a saved one builds its
    scikit-learn vectorizers at the first ``transform``, so loading the classifier does not import scikit-learn
    (1.35 of judge-serve's ~6 CPU-s start, here) for a server that is never asked for ``criteria: auto``.
    """

    def __init__(self, char=None, word=None, *, saved: tuple[Mapping, Mapping] | None = None):
        self.char, self.word = char, word
        self._saved = saved
        self._letters = None  # letter_columns(), computed at its first use

    def vectorizers(self) -> tuple:
        """The (character, word) vectorizers, built from the saved spec on first use."""
        if self.char is None:  # two threads may both build them: the same vectorizers, the last one kept
            from sklearn.feature_extraction.text import TfidfVectorizer

            spec, arrays = self._saved
            parts = []
            for name in ("char", "word"):
                v = spec[name]
                vec = TfidfVectorizer(analyzer=v["analyzer"], ngram_range=tuple(v["ngram_range"]),
                                      sublinear_tf=v["sublinear_tf"], lowercase=v["lowercase"],
                                      vocabulary=v["vocabulary"], dtype=np.float64)  # fmt: skip
                vec.idf_ = arrays[f"{name}_idf"]
                parts.append(vec)
            self.word = parts[1]
            self.char = parts[0]
        return self.char, self.word

    def letter_columns(self):
        """Per feature column (character columns, then word columns), whether its n-gram holds two Cyrillic letters
        or more (``MIN_LETTER_NGRAMS``); computed once."""
        if self._letters is None:
            columns = []
            for vec in self.vectorizers():
                terms = sorted(vec.vocabulary_, key=vec.vocabulary_.get)
                columns += [sum(_is_cyrillic(ch) for ch in term) >= 2 for term in terms]
            self._letters = np.array(columns, dtype=bool)
        return self._letters

    def n_features(self) -> int:
        """How many feature columns ``transform`` gives (both vocabularies), without building the vectorizers."""
        if self.char is None:
            spec, _ = self._saved
            return len(spec["char"]["vocabulary"]) + len(spec["word"]["vocabulary"])
        return len(self.char.vocabulary_) + len(self.word.vocabulary_)

    def transform(self, texts):
        """The (texts x features) sparse matrix: character columns, then word columns."""
        from scipy.sparse import hstack

        char, word = self.vectorizers()
        texts = list(texts)
        return hstack([char.transform(texts), word.transform(texts)]).tocsr()

    @classmethod
    def from_json(cls, spec: Mapping, arrays: Mapping, folder: str | Path = "") -> "TextFeatures":
        """The features ``model.json``'s ``features`` spec and ``weights.npz``'s idf arrays describe (checked here,
        the vectorizers built at the first ``transform``; ``folder`` is named in the errors)."""
        idf = {}
        for name in ("char", "word"):
            v = spec.get(name) or {}
            missing = [key for key in _FEATURE_KEYS if key not in v] + [f"{name}_idf"] * (f"{name}_idf" not in arrays)
            if missing:
                raise ValueError(f"tfidf: the {name} features lack {missing}")
            # scikit-learn checks a vocabulary's column indices, and the idf's length, only at the first transform:
            # such an artefact would load and then fail every choice
            vocabulary = v["vocabulary"]
            if not isinstance(vocabulary, Mapping) or sorted(vocabulary.values()) != list(range(len(vocabulary))):
                raise ValueError(f"tfidf: {Path(folder) / 'model.json'}: field 'features.{name}.vocabulary': its "
                                 "column indices are not 0 .. its size - 1, each once")
            idf[f"{name}_idf"] = np.asarray(arrays[f"{name}_idf"], dtype=np.float64)
            if idf[f"{name}_idf"].shape != (len(vocabulary),) or not np.isfinite(idf[f"{name}_idf"]).all():
                raise ValueError(f"tfidf: {Path(folder) / 'weights.npz'}: field '{name}_idf' has shape "
                                 f"{idf[f'{name}_idf'].shape}, expected ({len(vocabulary)},) finite values (the "
                                 f"{name} vocabulary's size)")
        return cls(saved=(spec, idf))


def weights_digest(path: str | Path) -> str:
    """sha256 of a ``weights.npz``'s bytes, as ``model.json`` records it (``WEIGHTS_DIGEST_KEY``)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _refuse_other_weights(folder: Path, recorded: str | None) -> None:
    """ValueError for a ``weights.npz`` that is not the one ``model.json`` was saved with: every build at the default
    caps has the same weight shapes, so another build's weights (a rebuild into the folder stopped between its two
    files) would load and choose wrong tasks without a word. An artefact saved before the digest was recorded has
    none to check."""
    if recorded is None:
        return
    if not (folder / "weights.npz").is_file():
        raise ValueError(f"tfidf: no weights.npz in {folder} beside its model.json; retrain it with `judge-train "
                         f"criteria-classifier --out {folder}`")
    if weights_digest(folder / "weights.npz") != recorded:
        raise ValueError(f"tfidf: {folder / 'weights.npz'} is not the weights {folder / 'model.json'} was saved with "
                         f"(its sha256 differs from the recorded {WEIGHTS_DIGEST_KEY}: a rebuild stopped between the "
                         f"two files, or a file copied from another build); retrain it with `judge-train "
                         f"criteria-classifier --out {folder}`")


def _refuse_another_taxonomy(folder: Path, leaf_classes: Sequence[str]) -> None:
    """ValueError for an artefact with leaves this taxonomy does not have (trained on another version): it would
    load, and every choice of such a leaf then fail (judge-serve answering 502 to each "criteria": "auto" request).
    An artefact trained on some of the taxonomy's leaves only is fine: it never chooses the others."""
    from judge import load_taxonomy
    from judge.criteria_auto.policy import label_of

    ours = {label_of(task) for task in load_taxonomy().tasks}
    unknown = sorted(set(leaf_classes) - ours)
    if unknown or len(leaf_classes) != len(set(leaf_classes)):
        said = f"leaves the taxonomy does not have: {unknown[:3]}" if unknown else "repeated leaves"
        raise ValueError(f"tfidf: {folder} was trained on another taxonomy ({said}); retrain it with "
                         f"`judge-train criteria-classifier --out {folder}`")


#: A version's major and minor parts, at its start ("1.5.2", "1.6rc1").
_MINOR_VERSION = re.compile(r"(\d+)\.(\d+)")


def _minor_version(version) -> str | None:
    """``version``'s major and minor parts ("1.5" of "1.5.2"); None for no version text (a hand-made model.json)."""
    found = _MINOR_VERSION.match(version) if isinstance(version, str) else None
    return None if found is None else ".".join(found.groups())


def _warn_other_scikit_learn(folder: Path, versions) -> None:
    """Log a warning when ``model.json``'s ``versions`` say the artefact was built by a scikit-learn of another
    minor version than the one installed. Its vectorizers are rebuilt from the saved vocabularies and idf by the
    installed scikit-learn (``TextFeatures.vectorizers``), whose tokenizing and weighting then make the features: a
    release that changed either would move every choice without an error. Patch releases are not told apart (a
    warning on every start would be read past). The installed version is read from the package metadata, so loading
    still imports no scikit-learn. The shipped artefact (``default_classifier_path``) is not one to rebuild in
    place: its warning names the scikit-learn to install, or a folder of one's own to pass as
    ``--criteria-classifier-path``."""
    from importlib import metadata

    built = versions.get("scikit-learn") if isinstance(versions, Mapping) else None
    try:
        running = metadata.version("scikit-learn")
    except metadata.PackageNotFoundError:  # the first prediction says so, importing it
        return
    built_minor, running_minor = _minor_version(built), _minor_version(running)
    if built_minor is None or running_minor is None:
        return  # nothing recorded to compare (a hand-made artefact): no claim either way
    if built_minor == running_minor:
        return
    if Path(folder).resolve() == default_classifier_path().resolve():
        # the package's own folder (under site-packages once installed): not one to rebuild in place
        advice = (f"the shipped classifier was built with scikit-learn {built_minor}: install scikit-learn "
                  f"{built_minor}.*, or build your own with `judge-train criteria-classifier --out DIR` and pass "
                  "--criteria-classifier-path DIR to judge-eval run or judge-serve")
    else:
        advice = (f"rebuild it with `judge-train criteria-classifier --out {folder}` (or install scikit-learn "
                  f"{built_minor})")
    log.warning("tfidf: %s was built with scikit-learn %s, and this is scikit-learn %s: its features are rebuilt "
                "from the saved vocabularies by this version, so a change in how it tokenizes or weights a text "
                "would move every choice without an error; %s", folder / "model.json", built, running, advice)


def _number(value) -> float:
    """``value`` as a float, NaN for anything that is not a number (JSON's true included)."""
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan


def _refuse_bad_parts(clf: "TfidfClassifier", folder: Path) -> None:
    """The checks ``TfidfClassifier.__init__`` documents."""
    spec_file, weights_file = folder / "model.json", folder / "weights.npz"
    temperature, threshold = _number(clf.temperature), _number(clf.threshold)

    def stated(value) -> str:  # a field left out of model.json, or null, reads as None here
        return "missing or null" if value is None else f"{value!r}"

    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"tfidf: {spec_file}: field 'temperature' is {stated(clf.temperature)}, not a finite number "
                         "> 0")
    if not 0.0 <= threshold <= 1.0:  # NaN fails too
        raise ValueError(f"tfidf: {spec_file}: field 'threshold' is {stated(clf.threshold)}, not a task-type "
                         "probability from 0 to 1")
    if len(set(clf.type_classes)) != len(clf.type_classes):
        raise ValueError(f"tfidf: {spec_file}: field 'type_classes' repeats a task type")
    missing = sorted({task_type_of(lab) for lab in clf.leaf_classes} - set(clf.type_classes))
    if missing:
        raise ValueError(f"tfidf: {spec_file}: field 'type_classes' lacks the task types of some leaves: {missing[:3]}")
    n = clf.features.n_features()
    for name, value, shape in (("type_coef", clf.type_coef, (len(clf.type_classes), n)),
                               ("type_intercept", clf.type_intercept, (len(clf.type_classes),)),
                               ("leaf_coef", clf.leaf_coef, (len(clf.leaf_classes), n)),
                               ("leaf_intercept", clf.leaf_intercept, (len(clf.leaf_classes),))):  # fmt: skip
        array = np.asarray(value)
        if array.shape != shape:
            raise ValueError(f"tfidf: {weights_file}: field {name!r} has shape {array.shape}, expected {shape} (the "
                             "classes in model.json by the features of both vocabularies)")
        if not np.isfinite(array).all():
            raise ValueError(f"tfidf: {weights_file}: field {name!r} holds values that are not finite")


def softmax(z):
    """Row-wise softmax of a (rows x classes) array."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class TfidfClassifier(LeafScoresClassifier):
    """Two linear models over one TF-IDF feature space: the task type (calibrated), then the leaf within it.

    ``predict_proba`` gives each leaf ``P(type) * P(leaf | type)``: the type's probability from the task-type model,
    temperature-scaled on out-of-fold predictions so that a stated 0.8 is right about 80 % of the time; the leaf's
    share of its type from the leaf model. ``choose`` (``choose_from_scores``) then decides at the level where the
    evidence is. Saved without pickle: ``model.json`` (vocabularies, labels, temperature, threshold, how both were
    chosen, versions) and ``weights.npz`` (idf, coefficients in float16, intercepts).
    """

    name = "tfidf"

    def __init__(self, features: TextFeatures, types: tuple, leaves: tuple, temperature: float,
                 threshold: float, meta: dict | None = None, *, folder: str | Path = ""):  # fmt: skip
        """Raises ValueError, naming the field and its file in ``folder`` (an artefact's; "" for a fresh fit), for a
        temperature that is not a finite positive number, a threshold outside [0, 1] (NaN never falls back, above 1
        always does), a weight whose shape does not fit the classes and vocabularies or that is not finite, or a
        leaf whose task type is not among the type classes: each would load, and then every choice fail or be
        wrong (judge-serve ready, answering every "criteria": "auto" request 502)."""
        self.features = features
        self.type_classes, self.type_coef, self.type_intercept = types
        self.leaf_classes, self.leaf_coef, self.leaf_intercept = leaves
        self.temperature = temperature
        self.threshold = threshold
        self.meta = meta or {}
        self._identity: str | None = None
        _refuse_bad_parts(self, Path(folder))
        self._leaf_type = np.array([self.type_classes.index(task_type_of(lab)) for lab in self.leaf_classes])

    @property
    def identity(self) -> str:
        """What a recorded choice of this classifier is checked against before a resumed expansion reuses it: the
        sha256 of its weights and classes (the saved ``weights.npz`` may carry no recorded digest, and a fresh fit
        has no file; another vocabulary gives other weights), its temperature and threshold. Computed once, on first
        use, without building the vectorizers."""
        if self._identity is None:
            import hashlib
            import json

            digest = hashlib.sha256()
            for array in (self.type_coef, self.type_intercept, self.leaf_coef, self.leaf_intercept):
                digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
            digest.update(json.dumps([list(self.type_classes), list(self.leaf_classes)], ensure_ascii=False).encode())
            self._identity = json.dumps({"method": self.name, "weights_sha256": digest.hexdigest(),
                                         "temperature": float(self.temperature), "threshold": float(self.threshold)},
                                        sort_keys=True)  # fmt: skip
        return self._identity

    def choose(self, instruction: str, answer: str | None = None, top_k: int = 3) -> TaskChoice:
        """``choose_from_scores`` at the threshold, except for a text whose evidence is too thin: fewer than
        ``MIN_LETTER_NGRAMS`` distinct n-grams the model knows that hold two Cyrillic letters or more (English or
        another script, symbols, digits, a lone letter: too little Cyrillic text; one known Russian word is enough,
        and Cyrillic of another language counts, see the module's docstring). Its scores are then the models' priors,
        moved by digits, punctuation or the Latin n-grams of quoted words, which the threshold, fitted on Russian
        instructions, does not catch (the highest task-type prior, STEM exercises' 0.108 in the shipped build, is
        above it; an English instruction got a confident Translation leaf), so it falls back, saying why."""
        text = classified_text(instruction)
        x = self.features.transform([text])
        scores = self._proba(x)[0]
        evidence = int(self.features.letter_columns()[x.indices].sum())
        if evidence >= MIN_LETTER_NGRAMS:
            return choose_from_scores(scores, self.name, self.threshold, top_k)
        choice = choose_from_scores(scores, self.name, math.inf, top_k)
        if not x.nnz:
            reason = ("no character or word n-gram of the text is known to the classifier: its scores would be the "
                      "models' priors alone")
        else:
            reason = (f"too little Cyrillic text: {evidence} n-grams of the text known to the classifier hold two "
                      f"Cyrillic letters or more, fewer than {MIN_LETTER_NGRAMS}; it was trained on Russian "
                      "instructions, so its scores would be the models' priors moved by Latin words, digits, "
                      "punctuation or single letters")
        return dataclasses.replace(choice, reason=reason)

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        return self._proba(self.features.transform(instructions))

    def _proba(self, x) -> list[dict[str, float]]:
        type_p = softmax((np.asarray(x @ self.type_coef.T) + self.type_intercept) / self.temperature)
        # P(leaf | its type): a softmax over the leaf logits of each type separately
        logits = np.asarray(x @ self.leaf_coef.T) + self.leaf_intercept
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        type_mass = np.zeros((e.shape[0], len(self.type_classes)))
        np.add.at(type_mass.T, self._leaf_type, e.T)
        joint = type_p[:, self._leaf_type] * e / type_mass[:, self._leaf_type]
        return [dict(zip(self.leaf_classes, map(float, row))) for row in joint]

    @classmethod
    def load(cls, path: str | Path | None = None, threshold: float | None = None) -> "TfidfClassifier":
        """Rebuild a saved classifier from ``path`` (the folder ``train.criteria_tfidf.save_tfidf`` wrote; default: the
        shipped one)."""
        folder = Path(path) if path else default_classifier_path()
        if not (folder / "model.json").is_file():
            raise FileNotFoundError(f"tfidf: no model.json in {folder} (train one with `judge-train "
                                    "criteria-classifier --out DIR`)")  # fmt: skip
        spec = read_json_object(folder / "model.json")  # a ValueError naming the file, not a bare decode error
        if spec.get("format") != TFIDF_FORMAT:
            raise ValueError(f"tfidf: {folder}/model.json has format {spec.get('format')!r}, expected "
                             f"{TFIDF_FORMAT!r}; retrain it with `judge-train criteria-classifier --out {folder}`")
        if threshold is not None and not 0.0 <= _number(threshold) <= 1.0:
            raise ValueError(f"tfidf: threshold {threshold!r} given for {folder}: not a task-type probability from "
                             "0 to 1")
        for key, kind in (("type_classes", list), ("leaf_classes", list), ("features", dict), ("meta", dict)):
            if not isinstance(spec.get(key), kind):  # a KeyError naming only the key was judge-eval's traceback
                what = "is missing" if key not in spec else f"is {value_words(spec[key])}"
                raise ValueError(f"tfidf: {folder / 'model.json'}: field {key!r} {what}, expected {kind_words(kind)}; "
                                 f"retrain it with `judge-train criteria-classifier --out {folder}`")
        _refuse_another_taxonomy(folder, spec["leaf_classes"])
        _warn_other_scikit_learn(folder, spec.get("versions"))
        _refuse_other_weights(folder, spec.get(WEIGHTS_DIGEST_KEY))
        try:
            with np.load(folder / "weights.npz") as w:
                arrays = {k: w[k] for k in w.files}
        except (OSError, ValueError, EOFError) as err:  # missing, cut short, not an npz ("pickled data", not to load)
            missing = isinstance(err, FileNotFoundError)
            raise ValueError(f"tfidf: {folder / 'weights.npz'}: {'no such file' if missing else 'not readable weights'}"
                             f"{'' if missing else f' ({type(err).__name__})'}; retrain it with `judge-train "
                             f"criteria-classifier --out {folder}`") from None
        lacking = [k for k in ("type_coef", "type_intercept", "leaf_coef", "leaf_intercept") if k not in arrays]
        if lacking:
            raise ValueError(f"tfidf: {folder / 'weights.npz'} lacks {lacking}")
        types = (spec["type_classes"], arrays["type_coef"].astype(np.float64), arrays["type_intercept"])
        leaves = (spec["leaf_classes"], arrays["leaf_coef"].astype(np.float64), arrays["leaf_intercept"])
        return cls(TextFeatures.from_json(spec["features"], arrays, folder), types, leaves, spec.get("temperature"),
                   spec.get("threshold") if threshold is None else threshold, spec["meta"], folder=folder)  # fmt: skip
