"""The tfidf artefact's two files (train.criteria_tfidf.save_tfidf writes them, judge.criteria_auto.tfidf loads
them): a model.json lacking a field, or weights.npz of another build, is refused at load naming the file.

How the classifier learns, reloads and routes is tested in test_task_classifier.py.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import judge.plumbing.atomic_write
from judge.criteria_auto.tfidf import WEIGHTS_DIGEST_KEY, TfidfClassifier, default_classifier_path
from train.criteria_tfidf import fit_tfidf, save_tfidf

# Three task types, two rows each: the smallest fit whose type model has a row per class (two types give one).
PAIRS = [
    {"instruction": "Напиши стихотворение о весне", "label": "Literary text / Poetry"},
    {"instruction": "Напиши стих о море и чайках", "label": "Literary text / Poetry"},
    {"instruction": "Отредактируй текст письма", "label": "Editing"},
    {"instruction": "Исправь ошибки в тексте заметки", "label": "Editing"},
    {"instruction": "Напиши функцию на Python", "label": "Code creation / Python"},
    {"instruction": "Напиши класс на Python для очереди", "label": "Code creation / Python"},
]


@pytest.fixture(scope="module")
def tiny():
    return fit_tfidf(PAIRS, folds=1, max_char_features=80, max_word_features=20)


@pytest.mark.parametrize(("key", "kind"), [("meta", "an object"), ("type_classes", "a list"),
                                         ("leaf_classes", "a list"), ("features", "an object")])
def test_a_model_json_missing_a_field_is_one_line_naming_the_file_and_field(tmp_path, key, kind):
    """A model.json without one of its fields was a bare KeyError (judge-eval's traceback `KeyError: 'meta'`): a
    ValueError now, naming the file and the field, which judge-eval and judge-serve print as one line."""
    folder = tmp_path / f"no_{key}"
    shutil.copytree(default_classifier_path(), folder)
    spec = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    del spec[key]
    (folder / "model.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        TfidfClassifier.load(folder)
    message = str(info.value)
    assert message == (f"tfidf: {folder / 'model.json'}: field {key!r} is missing, expected {kind}; retrain it with "
                       f"`judge-train criteria-classifier --out {folder}`")


@pytest.mark.parametrize(("key", "value", "words"), [
    ("features", ["tf"], "is a list, expected an object"),
    ("leaf_classes", None, "is null, expected a list"),
    ("meta", 3, "is an integer, expected an object"),
])  # fmt: skip
def test_a_model_json_field_of_another_kind_is_named_in_json_words(tmp_path, key, value, words):
    """model.json is a file a user may have edited or copied: the kind its field has is said as JSON names it ("a
    list", "null"), not as Python's class ("list", "NoneType")."""
    folder = tmp_path / f"bad_{key}"
    shutil.copytree(default_classifier_path(), folder)
    spec = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    spec[key] = value
    (folder / "model.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError) as info:
        TfidfClassifier.load(folder)
    assert str(info.value).startswith(f"tfidf: {folder / 'model.json'}: field {key!r} {words}; retrain it with ")


def test_a_model_json_that_is_no_object_is_named(tmp_path):
    folder = tmp_path / "list"
    folder.mkdir()
    (folder / "model.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{folder / 'model.json'}: expected a JSON object$"):
        TfidfClassifier.load(folder)


def test_the_saved_pair_reloads_and_records_its_weights_digest(tmp_path, tiny):
    """Both files, nothing else (no temporary file left), model.json recording the sha256 of the weights saved with
    it; an artefact saved before the digest was recorded (a model.json without it) still loads, as does the shipped
    one, whichever it is."""
    import hashlib

    out = save_tfidf(tiny, tmp_path / "clf")
    assert sorted(f.name for f in out.iterdir()) == ["model.json", "weights.npz"]
    spec = json.loads((out / "model.json").read_text(encoding="utf-8"))
    assert spec[WEIGHTS_DIGEST_KEY] == hashlib.sha256((out / "weights.npz").read_bytes()).hexdigest()
    again = TfidfClassifier.load(out)
    assert again.leaf_classes == tiny.leaf_classes
    older = tmp_path / "older"
    shutil.copytree(out, older)
    del spec[WEIGHTS_DIGEST_KEY]
    (older / "model.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    assert TfidfClassifier.load(older).leaf_classes == tiny.leaf_classes
    TfidfClassifier.load()


def test_a_rebuild_stopped_between_its_two_files_is_refused_at_load(tmp_path, tiny, monkeypatch):
    """A rebuild into an existing folder killed after the new weights.npz and before its model.json left the earlier
    model.json beside another build's weights, of the same shapes, which would load and choose wrong tasks silently.
    The earlier model.json's digest no longer matches: refused, naming both files."""
    out = save_tfidf(tiny, tmp_path / "clf")
    earlier_model = (out / "model.json").read_bytes()
    other = TfidfClassifier.load(out)
    other.leaf_intercept = other.leaf_intercept + np.arange(len(other.leaf_classes))  # another build, same shapes
    real_write = judge.plumbing.atomic_write.write_atomically

    def stopped_before_model_json(path, content, **kwargs):
        if path.name == "model.json":
            raise KeyboardInterrupt
        return real_write(path, content, **kwargs)

    monkeypatch.setattr(judge.plumbing.atomic_write, "write_atomically", stopped_before_model_json)
    with pytest.raises(KeyboardInterrupt):
        save_tfidf(other, out)
    assert (out / "model.json").read_bytes() == earlier_model  # the earlier one, whole
    assert sorted(f.name for f in out.iterdir()) == ["model.json", "weights.npz"]
    with pytest.raises(ValueError) as info:
        TfidfClassifier.load(out)
    assert str(info.value).startswith(f"tfidf: {out / 'weights.npz'} is not the weights {out / 'model.json'} was "
                                      "saved with")


def test_two_task_types_fit_save_reload_and_choose(tmp_path):
    """fit_tfidf takes "at least two task types"; with exactly two, scikit-learn's type model keeps one row of
    coefficients (the second class's logit), which the classifier's shape check refused after the fit, naming a
    weights.npz not yet written. The two rows are the zero logit and that one: the same probabilities."""
    pairs = [p for p in PAIRS if not p["label"].startswith("Code")]
    clf = fit_tfidf(pairs, folds=1, max_char_features=80, max_word_features=20)
    assert clf.type_classes == ["Editing", "Literary text"] and clf.type_coef.shape[0] == 2
    reloaded = TfidfClassifier.load(save_tfidf(clf, tmp_path / "two"))
    p = reloaded.predict_proba(["Напиши стихотворение о весне"])[0]
    assert max(p, key=p.get) == "Literary text / Poetry" and abs(sum(p.values()) - 1.0) < 1e-9
    # the fit's two rows give scikit-learn's own probabilities (a zero row on the wrong side swaps the classes');
    # compared before the save, which keeps the coefficients in float16
    from sklearn.linear_model import LogisticRegression

    from judge.criteria_auto.policy import task_type_of

    x = clf.features.transform([q["instruction"] for q in pairs])
    z = np.asarray(x @ clf.type_coef.T) + clf.type_intercept
    ours = np.exp(z - z.max(axis=1, keepdims=True))
    ours /= ours.sum(axis=1, keepdims=True)
    model = LogisticRegression(C=clf.meta["c"], max_iter=3000, solver="newton-cg", random_state=clf.meta["seed"])
    theirs = model.fit(x, [task_type_of(q["label"]) for q in pairs]).predict_proba(x)
    assert np.allclose(ours, theirs, atol=1e-9)
