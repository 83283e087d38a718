"""``judge-eval score --html-text-items``: -1 (every item) or a count, as its help says; nothing else."""

from __future__ import annotations

import pytest

from eval.cli import main


@pytest.mark.parametrize("value", ["-3", "-2"])
def test_a_negative_count_other_than_minus_one_is_refused(tmp_path, capsys, value):
    """`--html-text-items -3` was taken as -1 (every item's text embedded); the help documents -1 and >= 0 only.
    Refused before the run is read (exit 2, one line)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "predictions.jsonl").write_text('{"id": "x", "score": 1.0, "parse_ok": true}\n', encoding="utf-8")
    assert main(["score", "--predictions", str(run), "--data", "sample", "--html-text-items", value]) == 2
    assert capsys.readouterr().err == (f"judge-eval score: error: --html-text-items: must be -1 (all) or 0 or more, "
                                       f"got {value}\n")
    assert sorted(p.name for p in run.iterdir()) == ["predictions.jsonl"]
