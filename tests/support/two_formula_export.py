"""A judge-train export whose weights have two fingerprints, one by each formula judge-serve has used
(``judge.checkpoints.fingerprint_formula``): the files' names, sizes and modification times, and their recorded
content digests. For the checks that take both for the same weights and a retrained export for others
(tests/unit/test_ranking_compare_judge.py, tests/unit/test_slurm_eval_merge.py)."""

from __future__ import annotations

from pathlib import Path


def two_formula_export(export: Path) -> tuple[str, str]:
    """Write a tiny export into ``export`` (a manifest, one weights file, its digests); return its fingerprints by
    metadata and by digests, which differ."""
    from judge.checkpoints import export_weights_fingerprint, record_weights_digests, write_manifest

    export.mkdir(parents=True)
    write_manifest(export, "seq2seq", generator=".", verdict_format="tagged")
    (export / "model.safetensors").write_bytes(b"weights one")
    record_weights_digests(export)
    by_metadata, by_digests = export_weights_fingerprint(export, digests=False), export_weights_fingerprint(export)
    assert by_metadata != by_digests
    return by_metadata, by_digests


def retrain(export: Path) -> str:
    """Write other weights into ``export`` and record them, as a retraining in place does; return the new
    fingerprint (by digests)."""
    from judge.checkpoints import export_weights_fingerprint, record_weights_digests

    (export / "model.safetensors").write_bytes(b"weights two, retrained")
    record_weights_digests(export)
    return export_weights_fingerprint(export)
