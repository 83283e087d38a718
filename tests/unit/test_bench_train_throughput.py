"""bench/train_throughput.py's CPU part leaves no temporary folder behind, whatever ends it."""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_cpu_parts_temporary_folder_is_removed_when_it_fails(tmp_path, monkeypatch):
    """The tiny model's build raises after writing into the temporary folder: the error goes on up, and nothing the
    run made is left in the temporary directory (the libraries it imports may leave their own there)."""
    import train.tiny_models

    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("train_throughput")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made: list[Path] = []

    def build_fails(folder, **_):
        Path(folder).mkdir(parents=True)
        (Path(folder) / "config.json").write_text("{}")
        made.append(Path(folder))
        raise RuntimeError("no model today")

    monkeypatch.setattr(train.tiny_models, "build_tiny_qwen2", build_fails)
    with pytest.raises(RuntimeError, match="no model today"):
        bench.cpu_packing_ratio(rows=2, batch=1, max_length=64, seed=0)
    assert made and made[0].is_relative_to(tmp_path)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("bench-train-")] == []
