"""predictions.jsonl read as a stream: the same rows, the same resume decisions, the same error naming the line."""

from __future__ import annotations

import json

import pytest

from eval.judging.predictions import REQUEST_FAILED, iter_predictions, read_predictions, resume_predictions


def _row(rid: str, error: str | None = None, judge: str = "j") -> str:
    return json.dumps({"id": rid, "judge": judge, "score": None if error else 1.0, "parse_ok": not error,
                       "error": error}, ensure_ascii=False)


def test_resume_keeps_first_final_rows_and_drops_the_rest(tmp_path):
    """Kept: the first successful row of each wanted id; dropped: a repeat, a failed request, an unknown id and the
    line a kill cut; the file is rewritten to exactly the kept rows, in order."""
    path = tmp_path / "predictions.jsonl"
    lines = [_row("a"), "", _row("b", REQUEST_FAILED), _row("a"), _row("zzz"), _row("c"), _row("b")]
    path.write_text("\n".join(lines) + "\n" + '{"id": "d", "sco', encoding="utf-8")
    assert [r["id"] for r in iter_predictions(path)] == ["a", "b", "a", "zzz", "c", "b"]
    assert read_predictions(tmp_path) == list(iter_predictions(path))
    assert resume_predictions(path, ["a", "b", "c", "d"]) == {"a", "c", "b"}
    assert [r["id"] for r in read_predictions(path)] == ["a", "c", "b"]
    assert path.read_text(encoding="utf-8").endswith("\n") and not (tmp_path / "predictions.jsonl.tmp").exists()


def test_clean_file_is_not_rewritten(tmp_path):
    """A file with nothing to drop keeps its bytes (no rewrite)."""
    path = tmp_path / "predictions.jsonl"
    path.write_text(_row("a") + "\n" + _row("b") + "\n", encoding="utf-8")
    before = path.stat().st_mtime_ns, path.read_bytes()
    assert resume_predictions(path, ["a", "b", "c"]) == {"a", "b"}
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before


def test_broken_line_in_the_middle_is_named(tmp_path):
    """A line that is not JSON, not the last one, is an error naming the file and its line number."""
    path = tmp_path / "predictions.jsonl"
    path.write_text(_row("a") + "\n{not json\n" + _row("b") + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"predictions.jsonl:2: not a JSON line"):
        list(iter_predictions(path))
    with pytest.raises(ValueError, match=r"predictions.jsonl:2: not a JSON line"):
        resume_predictions(path, ["a", "b"])


def test_resume_warns_once_about_a_torn_last_line(tmp_path, caplog):
    """The rewrite reads the file a second time: the line a kill cut is still reported once, not twice."""
    import logging

    path = tmp_path / "predictions.jsonl"
    path.write_text(_row("a") + "\n" + '{"id": "b", "sco', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        assert resume_predictions(path, ["a", "b"]) == {"a"}
    assert sum("dropped its last line" in r.getMessage() for r in caplog.records) == 1
    assert [r["id"] for r in read_predictions(path)] == ["a"] and path.read_text(encoding="utf-8").endswith("\n")


def test_a_half_row_an_older_run_left_mid_file_says_how_to_resume(tmp_path):
    """A half row followed by whole ones (left by a run that appended after a cut line) stops the resume naming the
    line and what to do: mend or delete it, or --overwrite; the file is left as it was."""
    path = tmp_path / "predictions.jsonl"
    text = _row("a") + "\n" + _row("b")[:12] + _row("c") + "\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as raised:
        resume_predictions(path, ["a", "b", "c"])
    # the decoder's column too: the cut row ends at column 12, where the next row's "{" begins
    assert str(raised.value).startswith(f"{path}:2: not a JSON line (Expecting property name enclosed in double "
                                        "quotes at column 13)")
    assert str(raised.value).endswith("; the run cannot resume from this file: mend or delete that line (its item is "
                                      "then asked again), or start again with --overwrite")
    assert path.read_text(encoding="utf-8") == text
