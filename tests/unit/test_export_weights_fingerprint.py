"""The weights fingerprint of a judge-train export (``judge.checkpoints.folders_fingerprint``): the same across an
identical re-export (a ``judge-train run --resume`` that trains nothing and exports again rewrites every weights file
with new modification times), other when the weights change, and still other after a ``touch`` of a file whose
recorded digest it no longer matches."""

from __future__ import annotations

import copy
import os
import shutil

import pytest
import torch
from transformers import Qwen2ForCausalLM

from judge.checkpoints import WEIGHTS_DIGESTS, export_weights_fingerprint, record_weights_digests
from serve.layout import resolve_layout, weights_fingerprint
from train import export
from train.score_head import Qwen2ForRationaleAndScore


def _later(folder, seconds: int = 1) -> None:
    """Move every weights file's modification time on by ``seconds`` (back, when negative), as a rewrite that much
    later leaves it."""
    for path in folder.rglob("*.safetensors"):
        info = path.stat()
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + seconds * 1_000_000_000))


def _written_earlier(out) -> dict:
    """The export as if written a second before now (its records made then), so that writing it again surely leaves
    other modification times; returns them."""
    _later(out, -1)
    for record in out.rglob(WEIGHTS_DIGESTS):
        record_weights_digests(record.parent)
    return {path: path.stat().st_mtime_ns for path in out.rglob("*.safetensors")}


@pytest.fixture(scope="module")
def seq2seq_export(tiny_causal_dir, qwen_tokenizer, tmp_path_factory):
    """The tiny causal model and its seq2seq export, written once for the module; a test copies the folder
    (``shutil.copytree`` keeps each file's modification time, so the digests record still matches it) and never
    changes the model in place."""
    model = Qwen2ForCausalLM.from_pretrained(str(tiny_causal_dir), dtype=torch.float32)
    return model, export.export_seq2seq(model, qwen_tokenizer, tmp_path_factory.mktemp("seq2seq") / "export")


def test_a_seq2seq_export_written_again_keeps_its_fingerprint_and_other_weights_change_it(
        seq2seq_export, qwen_tokenizer, tmp_path):
    model, written = seq2seq_export
    out = shutil.copytree(written, tmp_path / "export")
    first = export_weights_fingerprint(out)
    assert first == export_weights_fingerprint(written)
    assert (out / WEIGHTS_DIGESTS).is_file()
    times = _written_earlier(out)
    assert export_weights_fingerprint(out) == first
    export.export_seq2seq(model, qwen_tokenizer, out)  # exported again: the same bytes, rewritten
    assert all(path.stat().st_mtime_ns != mtime for path, mtime in times.items())
    assert export_weights_fingerprint(out) == first
    assert weights_fingerprint(resolve_layout(out)) == first  # judge-serve's, as judge-eval records it
    trained = copy.deepcopy(model)
    with torch.no_grad():
        trained.lm_head.weight[0, 0] += 1.0  # trained further: other weights of the same size
    export.export_seq2seq(trained, qwen_tokenizer, out)
    assert export_weights_fingerprint(out) != first


def test_a_file_changed_after_its_digest_was_recorded_is_fingerprinted_by_its_metadata(seq2seq_export, tmp_path):
    """A weights file whose size or modification time is not what the record says may hold other bytes: the
    record is not trusted for it, and a ``touch`` changes the fingerprint as it did before any record."""
    out = shutil.copytree(seq2seq_export[1], tmp_path / "export")
    first = export_weights_fingerprint(out)
    _later(out)  # touched without the record: maybe replaced by hand
    touched = export_weights_fingerprint(out)
    assert touched != first
    (out / WEIGHTS_DIGESTS).unlink()
    assert export_weights_fingerprint(out) == touched  # what a folder without a record gets


def test_a_regression_export_written_again_keeps_its_fingerprint(tiny_causal_dir, qwen_tokenizer, tmp_path):
    """Both folders (the export and generator/) carry their own record; judge-serve's fingerprint agrees."""
    model = Qwen2ForRationaleAndScore.from_pretrained(str(tiny_causal_dir), dtype=torch.float32)
    out = export.export_regression(model, qwen_tokenizer, tmp_path / "export")
    first = export_weights_fingerprint(out)
    assert (out / export.GENERATOR_SUBDIR / WEIGHTS_DIGESTS).is_file()
    times = _written_earlier(out)
    export.export_regression(model, qwen_tokenizer, out)
    assert len(times) == 2 and all(path.stat().st_mtime_ns != mtime for path, mtime in times.items())
    assert export_weights_fingerprint(out) == first == weights_fingerprint(resolve_layout(out))
    with torch.no_grad():
        model.score.weight[0, 0] += 1.0  # the head alone trained further: the export's folder differs
    export.export_regression(model, qwen_tokenizer, out)
    assert export_weights_fingerprint(out) != first


def test_the_digests_record_reads_each_weights_file_once(tmp_path, monkeypatch):
    """``record_weights_digests`` on a sharded folder (two shards and their index): each weights file is opened once
    and read through ``hashlib.file_digest`` (chunked, never the whole file at once), and its digest is the file's."""
    import builtins
    import hashlib
    import json

    files = {"model-00001-of-00002.safetensors": b"a" * 300_000, "model-00002-of-00002.safetensors": b"b" * 5,
             "model.safetensors.index.json": json.dumps({"weight_map": {"x": "model-00001-of-00002.safetensors"}})
             .encode()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    opened, digested, real_open, real_digest = [], [], builtins.open, hashlib.file_digest

    def counting_open(path, *args, **kwargs):
        opened.append(os.path.basename(str(path)))
        return real_open(path, *args, **kwargs)

    def counting_digest(handle, *args, **kwargs):
        digested.append(os.path.basename(handle.name))
        return real_digest(handle, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(hashlib, "file_digest", counting_digest)
    record_weights_digests(tmp_path)
    monkeypatch.undo()
    assert sorted(name for name in opened if name in files) == sorted(digested) == sorted(files)
    recorded = json.loads((tmp_path / WEIGHTS_DIGESTS).read_text(encoding="utf-8"))["files"]
    assert {name: entry["sha256"] for name, entry in recorded.items()} == {
        name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def test_a_recorded_fingerprint_is_told_by_which_formula_it_is_the_folders_now(tmp_path):
    """``fingerprint_formula`` (judge-train card's check of a run against its export): the content digests'
    fingerprint, the metadata's (also where the two agree, a folder without a record), and neither for other
    files, nothing recorded, or the same files touched since (their digests then no longer trusted).
    ``export_fingerprints`` (judge-eval's) gives the export's fingerprint by the same formulas."""
    from judge.checkpoints import BY_DIGESTS, BY_METADATA, export_fingerprint_formula, export_fingerprints, \
        fingerprint_formula, folders_fingerprint, write_manifest

    folder = tmp_path / "export"
    folder.mkdir()
    write_manifest(folder, "seq2seq", generator=".", verdict_format="tagged")
    (folder / "model.safetensors").write_bytes(b"weights one")
    bare = folders_fingerprint([folder])
    assert fingerprint_formula(bare, [folder]) == BY_METADATA  # no record: both formulas are this one
    record_weights_digests(folder)
    by_digests, by_metadata = folders_fingerprint([folder]), folders_fingerprint([folder], digests=False)
    assert by_digests != by_metadata == bare
    assert fingerprint_formula(by_digests, [folder]) == BY_DIGESTS == export_fingerprint_formula(by_digests, folder)
    assert export_fingerprints(folder) == {BY_METADATA: by_metadata, BY_DIGESTS: by_digests}
    assert fingerprint_formula(by_metadata, [folder]) == BY_METADATA
    assert fingerprint_formula("0" * 64, [folder]) is None and fingerprint_formula(None, [folder]) is None
    _later(folder)
    assert fingerprint_formula(by_digests, [folder]) is None and fingerprint_formula(by_metadata, [folder]) is None
