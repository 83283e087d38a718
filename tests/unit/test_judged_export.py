"""``eval.judging.format_choice.judged_export``: the one answer judge-eval run's resume, the merge of shards and the
comparison of two runs give to "which judge-train export is this fingerprint of". judge-serve given a generating
model of its own fingerprints the export's folder with that model's (``serve.layout.weights_fingerprint``), which
neither export formula gives: no export then vouches for two fingerprints, in any of the three.

Run: .venv/bin/python -m pytest tests/unit/test_judged_export.py -q -n 0
"""

from __future__ import annotations

import pytest

from eval.judging.format_choice import judged_export
from eval.ranking.compare import weights_differences
from judge.checkpoints import export_weights_fingerprint, record_weights_digests, write_manifest


@pytest.fixture
def export(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    write_manifest(folder, "seq2seq", generator=".", verdict_format="tagged")
    (folder / "model.safetensors").write_bytes(b"weights one")
    record_weights_digests(folder)
    return folder


def test_an_export_served_alone_is_judged_and_one_with_a_generating_model_is_not(export, monkeypatch, tmp_path):
    assert judged_export(str(export), []) == export and judged_export(str(export), None) == export
    assert judged_export(str(export), ["--generator-model", "/elsewhere"]) is None
    assert judged_export(str(export), "--generator-model /elsewhere") is None  # a record's value no list: cannot tell
    # vLLM's own server takes no generating model: its arguments say nothing of one
    assert judged_export(str(export), ["--generator-model", "/elsewhere"], starts_judge_serve=False) == export
    monkeypatch.chdir(tmp_path)  # a relative path names a folder only against one working directory
    assert judged_export("export", []) is None and judged_export("https://host/v1", []) is None
    assert judged_export(str(tmp_path), []) is None  # no manifest: not a judge-train export


def _settings(export, fingerprint, server_args):
    return {"judge": str(export), "weights_fingerprint": fingerprint, "server_args": server_args}


def test_compare_holds_the_export_s_two_formulas_one_only_where_it_was_served_alone(export):
    """Compare vouched for the pair by the export's formulas whatever the server's arguments, while the resume and
    the merge did not where judge-serve was given a generating model: the fingerprints then are not the export's."""
    prints = export_weights_fingerprint(export, digests=False), export_weights_fingerprint(export)
    assert prints[0] != prints[1]
    alone = [_settings(export, fingerprint, []) for fingerprint in prints]
    assert "weights_fingerprint" not in weights_differences(*alone)[0]
    generating = [_settings(export, fingerprint, ["--generator-model", "/elsewhere"]) for fingerprint in prints]
    assert weights_differences(*generating)[0]["weights_fingerprint"] == list(prints)
