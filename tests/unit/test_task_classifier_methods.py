"""criteria: auto methods, checked where they are built: a tfidf artefact whose numbers or weights cannot serve is
refused at load (not at its first choice), the llm method needs a model name, a head export is read as it was
trained (its recorded tokenization) and may not repeat a label, and is known on resume by its files (the weights'
digest judge-train records, else computed) or its hub revision; and an llm choice says when the policy's probability
tests could not apply.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from judge.criteria_auto import (
    HeadClassifier,
    LLMClassifier,
    TfidfClassifier,
    build_classifier,
    classifier_from_settings,
    default_classifier_path,
    label_of,
)
from judge.criteria_auto.tfidf import WEIGHTS_DIGEST_KEY, weights_digest
from judge.taxonomy import load_taxonomy
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

TAX = load_taxonomy()


# ----------------------------------------------------------------------------------------------- tfidf artefact


def _copy_shipped(folder):
    shutil.copytree(default_classifier_path(), folder)
    spec = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    with np.load(folder / "weights.npz") as w:
        arrays = {k: w[k] for k in w.files}
    return spec, arrays


def _write(folder, spec, arrays):
    """The two files as one build saves them: the weights, then model.json recording their digest (so that a load
    reaches the check a test is about, not the refusal of another build's weights)."""
    np.savez_compressed(folder / "weights.npz", **arrays)
    if WEIGHTS_DIGEST_KEY in spec:
        spec = {**spec, WEIGHTS_DIGEST_KEY: weights_digest(folder / "weights.npz")}
    (folder / "model.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")  # NaN as NaN


#: A field left out of model.json (not written as null).
_MISSING = object()


def _n_features(spec):
    return len(spec["features"]["char"]["vocabulary"]) + len(spec["features"]["word"]["vocabulary"])


@pytest.mark.parametrize("field, value, message", [
    ("threshold", math.nan, r"model.json: field 'threshold' is nan, not a task-type probability from 0 to 1"),
    ("threshold", 2.0, r"model.json: field 'threshold' is 2.0, not a task-type probability"),
    ("threshold", None, r"model.json: field 'threshold' is missing or null, not a task-type probability"),
    ("threshold", _MISSING, r"model.json: field 'threshold' is missing or null"),
    ("temperature", _MISSING, r"model.json: field 'temperature' is missing or null, not a finite number > 0"),
    ("temperature", -1.0, r"model.json: field 'temperature' is -1.0, not a finite number > 0"),
    ("temperature", 0.0, r"model.json: field 'temperature' is 0.0"),
    ("temperature", math.inf, r"model.json: field 'temperature' is inf"),
], ids=["threshold NaN", "threshold 2", "threshold null", "threshold missing", "temperature missing", "temperature -1",
        "temperature 0", "temperature inf"])  # fmt: skip
def test_an_artefact_whose_threshold_or_temperature_is_out_of_range_is_refused_at_load(tmp_path, field, value,
                                                                                        message):
    """A NaN threshold never falls back (every comparison is False), one above 1 always does, a temperature <= 0
    turns the calibrated probabilities around: refused at load, naming the file and the field."""
    folder = tmp_path / "clf"
    spec, arrays = _copy_shipped(folder)
    spec[field] = value
    if value is _MISSING:
        del spec[field]
    _write(folder, spec, arrays)
    with pytest.raises(ValueError, match=rf"tfidf: {folder}/{message}"):
        TfidfClassifier.load(folder)


@pytest.mark.parametrize("threshold", [math.nan, -0.1, 1.5])
def test_a_threshold_given_for_an_artefact_is_checked_too(threshold):
    with pytest.raises(ValueError, match=rf"tfidf: threshold {threshold!r} given for .*: not a task-type probability"):
        TfidfClassifier.load(None, threshold=threshold)  # the shipped one, with a threshold given for it


def _cut_columns(arrays, spec):
    arrays["type_coef"] = arrays["type_coef"][:, :100]
    return "weights.npz: field 'type_coef' has shape (35, 100), expected (35, " + str(_n_features(spec)) + ")"


def _short_intercept(arrays, spec):
    arrays["leaf_intercept"] = arrays["leaf_intercept"][:-1]
    n = len(spec["leaf_classes"])
    return f"weights.npz: field 'leaf_intercept' has shape ({n - 1},), expected ({n},)"


def _nan_weight(arrays, spec):
    arrays["leaf_coef"] = arrays["leaf_coef"].copy()
    arrays["leaf_coef"][3, 7] = np.nan
    return "weights.npz: field 'leaf_coef' holds values that are not finite"


def _short_idf(arrays, spec):
    arrays["word_idf"] = arrays["word_idf"][:-2]
    return "weights.npz: field 'word_idf' has shape"


def _vocabulary_gap(arrays, spec):
    vocabulary = spec["features"]["char"]["vocabulary"]
    vocabulary[next(iter(vocabulary))] = len(vocabulary) + 5
    return "model.json: field 'features.char.vocabulary': its column indices are not 0 .. its size - 1"


def _type_missing(arrays, spec):
    spec["type_classes"] = spec["type_classes"][1:]
    arrays["type_coef"], arrays["type_intercept"] = arrays["type_coef"][1:], arrays["type_intercept"][1:]
    return "model.json: field 'type_classes' lacks the task types of some leaves"


def _array_missing(arrays, spec):
    del arrays["leaf_intercept"]
    return r"weights.npz lacks \['leaf_intercept'\]"


@pytest.mark.parametrize("break_it", [_cut_columns, _short_intercept, _nan_weight, _short_idf, _vocabulary_gap,
                                      _type_missing, _array_missing])  # fmt: skip
def test_an_artefact_whose_weights_do_not_fit_is_refused_at_load(tmp_path, break_it):
    """Weights that do not fit the classes and vocabularies (a coefficient matrix cut to 100 columns, an intercept
    short by one, a NaN, an idf shorter than its vocabulary, a column index outside it), a leaf whose task type has no
    class, or an array missing: each loaded before, and the first choice failed (a matmul error: judge-serve ready,
    then 502 to every "criteria": "auto" request). Refused at load, naming the file and the field."""
    folder = tmp_path / "clf"
    spec, arrays = _copy_shipped(folder)
    message = break_it(arrays, spec)
    _write(folder, spec, arrays)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TfidfClassifier.load(folder)


def test_the_shipped_artefact_passes_the_load_checks_and_chooses():
    """The checks pass on what training writes: the shipped artefact loads and chooses."""
    clf = TfidfClassifier.load()
    assert clf.features.n_features() == clf.type_coef.shape[1] == clf.leaf_coef.shape[1]
    assert clf.choose("Напиши функцию на Python, которая сортирует список").task_type == "Code creation"


# ----------------------------------------------------------------------------------------------- llm settings


def test_the_llm_method_without_a_model_name_is_refused_where_it_is_built():
    """An empty model name passed judge-eval's and judge-serve's configs and start-up, then every choice failed:
    refused by the shared builder, naming the setting (and by the classifier itself, naming its argument)."""
    for empty in ("", "  "):
        with pytest.raises(ValueError, match=r"criteria_classifier_model: required with criteria_classifier llm"):
            classifier_from_settings("llm", "http://127.0.0.1:9/v1", empty)
        with pytest.raises(ValueError, match=r"llm: model must name the endpoint's served model"):
            build_classifier("llm", base_url="http://127.0.0.1:9/v1", model=empty)
    assert classifier_from_settings("llm", "http://127.0.0.1:9/v1", "judge").model == "judge"


def _answer_without_logprobs(path, body):
    options = body["structured_outputs"]["choice"]
    return 200, chat_completion("Advice" if "Advice" in options else options[0], "scripted")


def test_an_llm_choice_without_logprobs_says_the_tests_were_not_applied():
    """An endpoint that gives no logprobs: the leaf answered is taken, the threshold and leaf-share tests cannot
    apply, and the choice's reason says so (it was empty, reading like a choice that passed them)."""
    with ScriptedEndpoint(_answer_without_logprobs) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.9).choose("Дай совет")
    assert (choice.label, choice.level, choice.probability) == ("Advice", "leaf", None)
    assert choice.reason == ("no logprobs from the endpoint at level 0: the threshold (0.900) and leaf-share tests "
                             "were not applied, the answered leaf taken")


# ----------------------------------------------------------------------------------------------- head export


def _tiny_head(folder, labels, record=None):
    """A tiny BERT sequence classifier over ``labels`` and a word-level tokenizer whose special tokens ([CLS] ...
    [SEP]) change what the model reads, saved to ``folder``; ``record`` is written under the export's input key."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "напиши", "функцию", "на", "python", "дай", "совет", "как"]
    vocab = {w: i for i, w in enumerate(words)}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                               ("[SEP]", 3)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", model_max_length=64)
    torch.manual_seed(0)
    # initializer_range 1: weights large enough that which ids are read moves the probabilities visibly
    config = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, initializer_range=1.0,
                        num_labels=len(labels), id2label=dict(enumerate(labels)),
                        label2id={lab: i for i, lab in enumerate(labels)})
    model = BertForSequenceClassification(config).eval()
    if record is not None:
        setattr(model.config, "pollux_classifier_input", record)  # the key the export's config.json holds
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def _probs(model, ids, labels):
    import torch

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    return dict(zip(labels, torch.softmax(logits, dim=-1).tolist()))


_LABELS = [label_of(t) for t in TAX.tasks[:3]]


@pytest.mark.parametrize("record, special, length, ids", [
    # an export from before the record: trained without special tokens; read up to 512 tokens
    (None, False, 512, [4, 5, 6, 7, 10]),
    ({"add_special_tokens": False, "max_length": 3}, False, 3, [4, 7, 10]),  # напиши ... python как
    ({"add_special_tokens": True, "max_length": 4}, True, 4, [2, 4, 10, 3]),  # [CLS] напиши ... как [SEP]
], ids=["no record", "recorded without special tokens", "recorded with special tokens"])  # fmt: skip
def test_the_head_reads_an_instruction_as_its_export_records_training_did(tmp_path, record, special, length, ids):
    """The head tokenizes as the export records (special tokens or not; longer than the training rows' longest, its
    first and last halves of that length), never by the tokenizer's defaults: its probabilities are the model's on
    exactly those ids (by hand from the tiny vocabulary), which differ from the model's on the default tokenization
    ([CLS] ... [SEP], untruncated)."""
    model, tokenizer = _tiny_head(tmp_path, _LABELS, record)
    text = "напиши функцию на python как"
    default_ids = tokenizer(text)["input_ids"]
    assert default_ids == [2, 4, 5, 6, 7, 10, 3]
    clf = HeadClassifier(tmp_path, threshold=0.0)
    got = clf.predict_proba([text])[0]
    assert got == pytest.approx(_probs(model, ids, _LABELS), abs=1e-6)
    assert (clf.add_special_tokens, clf.max_length) == (special, length)
    default = _probs(model, default_ids, _LABELS)
    assert max(abs(got[k] - default[k]) for k in _LABELS) > 1e-4


def test_training_tokenizes_its_rows_as_the_head_reads_them(tmp_path):
    """judge-train classifier's examples are the ids the head method reads for the same instruction once the export
    records the training input (train.classifier.classifier_examples, judge.criteria_auto.head.input_record); a row
    longer than max_length is dropped (the pairs kept, which run.json counts, leave it out)."""
    from judge.criteria_auto.head import input_ids, input_record
    from train.classifier import classifier_examples

    _, tokenizer = _tiny_head(tmp_path, _LABELS, input_record(6))
    pairs = [{"instruction": "дай совет", "label": _LABELS[1]},
             {"instruction": "напиши функцию на python", "label": _LABELS[0]}]  # 6 ids with [CLS] and [SEP]
    examples, kept = classifier_examples(tokenizer, pairs, {lab: i for i, lab in enumerate(_LABELS)}, 5)
    clf = HeadClassifier(tmp_path)
    assert kept == pairs[:1] and examples == [{"input_ids": [2, 8, 9, 3], "labels": 1}]  # [CLS] дай совет [SEP]
    assert input_ids(clf.tokenizer, "дай совет", clf.add_special_tokens, clf.max_length) == examples[0]["input_ids"]


@pytest.mark.parametrize("labels", [
    [_LABELS[0], _LABELS[1], _LABELS[0]],
    # another spelling of the same leaf (its Russian path names) is the same leaf
    [_LABELS[0], " / ".join(n for n in TAX.tasks[0].names_ru[1:] if n), _LABELS[1]],
], ids=["same label", "same leaf, Russian names"])  # fmt: skip
def test_a_head_naming_a_leaf_twice_is_refused(tmp_path, labels):
    """Two ids of one leaf: choose_from_scores keeps one probability per leaf, so one would replace the other
    instead of adding to it. Refused at load, naming the leaf and both ids."""
    _tiny_head(tmp_path, labels)
    with pytest.raises(ValueError, match=rf"id2label names leaf '{_LABELS[0]}' twice \(ids 0 and [12]\)"):
        HeadClassifier(tmp_path)


@pytest.mark.parametrize("record", [{"add_special_tokens": "yes", "max_length": 8},
                                    {"add_special_tokens": True, "max_length": 0}, ["add_special_tokens"]])
def test_an_unreadable_input_record_is_refused(tmp_path, record):
    _tiny_head(tmp_path, _LABELS, record)
    with pytest.raises(ValueError, match=r"config.json: field 'pollux_classifier_input' is"):
        HeadClassifier(tmp_path)


def test_the_head_reads_an_overlong_instruction_by_its_opening_and_its_ending(qwen_tokenizer):
    """classified_text keeps an overlong instruction's first and last characters (a request stated after a long
    pasted text), but its ids were then cut from the right to max_length, dropping the request. input_ids keeps
    max_length // 2 ids from each end (an odd length: the extra one from the end), on the real Qwen2.5 tokenizer."""
    from judge.criteria_auto.head import input_ids
    from judge.criteria_auto.policy import MAX_CLASSIFIED_CHARS, classified_text

    request = "Переведи этот текст на английский язык."
    text = classified_text("Начало статьи. " + "Слово за словом. " * 2000 + request)
    assert len(text) == MAX_CLASSIFIED_CHARS and text.endswith(request)
    ids = qwen_tokenizer(text, add_special_tokens=True)["input_ids"]  # Qwen2.5 adds no special token
    assert len(ids) > 4096
    for max_length in (4096, 33):
        got = input_ids(qwen_tokenizer, text, True, max_length)
        head = max_length // 2
        assert got == ids[:head] + ids[len(ids) - (max_length - head):] and len(got) == max_length
        assert qwen_tokenizer.decode(got).startswith("Начало статьи.")
        assert qwen_tokenizer.decode(got).endswith(request)
    short = "Дай совет, как выспаться"
    assert input_ids(qwen_tokenizer, short, True, 4096) == qwen_tokenizer(short)["input_ids"]


# ----------------------------------------------------------------------------------------------- head identity


def _files_sha256(folder):
    """weights_digest by hand: sha256 over the one weight file the tiny export has, its name, a NUL, its bytes."""
    import hashlib

    return hashlib.sha256(b"model.safetensors\0" + (folder / "model.safetensors").read_bytes()).hexdigest()


def test_a_head_export_without_a_recorded_digest_is_known_by_its_files(tmp_path):
    """The same export loaded twice is one identity; weights rewritten in place (a retrain into the same folder)
    are another, though the folder, the labels and the config are the same."""
    import torch

    model, _ = _tiny_head(tmp_path, _LABELS)
    first = json.loads(HeadClassifier(tmp_path).identity)
    assert first["weights_sha256"] == _files_sha256(tmp_path)
    assert HeadClassifier(tmp_path).identity == json.dumps(first, sort_keys=True)
    with torch.no_grad():
        model.classifier.weight.add_(1.0)
    model.save_pretrained(tmp_path)
    again = json.loads(HeadClassifier(tmp_path).identity)
    assert again["config_sha256"] == first["config_sha256"] and again["weights_sha256"] != first["weights_sha256"]


def test_judge_train_records_the_digest_and_the_head_reads_it_without_hashing(tmp_path):
    """record_weights_digest (run by judge-train classifier on its export) writes the weights' sha256 into
    config.json; the head method takes it from there: with the weight file gone after loading, the identity still
    holds the recorded digest, so no weight was read for it (a 7B backbone's weights, on every run)."""
    from judge.criteria_auto.head import WEIGHTS_DIGEST_KEY
    from train.classifier import record_weights_digest

    _tiny_head(tmp_path, _LABELS)
    record_weights_digest(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    assert config[WEIGHTS_DIGEST_KEY] == _files_sha256(tmp_path) and len(config["id2label"]) == 3
    clf = HeadClassifier(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    assert json.loads(clf.identity)["weights_sha256"] == config[WEIGHTS_DIGEST_KEY]


def test_a_recorded_digest_that_is_no_sha256_is_refused(tmp_path):
    from judge.criteria_auto.head import WEIGHTS_DIGEST_KEY

    _tiny_head(tmp_path, _LABELS)
    config = json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "config.json").write_text(json.dumps({**config, WEIGHTS_DIGEST_KEY: "abc"}), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"config.json: field '{WEIGHTS_DIGEST_KEY}' is 'abc', not a sha256"):
        HeadClassifier(tmp_path)


def test_a_head_loaded_by_hub_id_is_known_by_its_revision(tmp_path):
    """A hub id is no folder: its files cannot be listed (the identity raised from iterdir, outside the per-row
    failure handling). The revision transformers resolved names it, else the name it was loaded by."""
    from transformers import BertConfig

    from judge.criteria_auto.head import export_identity

    config = BertConfig(name_or_path="org/pollux-head")
    assert export_identity(tmp_path / "org" / "pollux-head", config, None) == {
        "revision": "org/pollux-head", "weights_sha256": None}
    config._commit_hash = "0123abc"
    assert export_identity(tmp_path / "org" / "pollux-head", config, "f" * 64) == {
        "revision": "0123abc", "weights_sha256": "f" * 64}
