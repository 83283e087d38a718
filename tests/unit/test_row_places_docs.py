"""docs/contract.md says how an error names a row, in the words the loader prints: it said only "the row", while
JSONL rows are named by line from 1 and table rows by their 0-based index, which a reader cannot guess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import RecordError, load_records

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract.md"


def test_the_contract_shows_the_row_places_the_loader_prints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = {"instruction": "x", "answer": "y", "criteria_name": "c", "rubrics": "0: a\n\n1: b", "criteria_score": 1}
    Path("data.jsonl").write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "instruction": 5}) + "\n",
                                  encoding="utf-8")
    with pytest.raises(RecordError) as jsonl_error:
        load_records("data.jsonl")
    pd = pytest.importorskip("pandas")
    pd.DataFrame([good, {**good, "answer": ""}]).to_parquet("data.parquet")
    with pytest.raises(RecordError) as table_error:
        load_records("data.parquet")
    text = " ".join(CONTRACT.read_text(encoding="utf-8").split())
    for error, shown in ((jsonl_error.value, "`data.jsonl: line 3: ...`"),
                         (table_error.value, "`data.parquet: row index 1: ...`")):
        assert str(error).startswith(shown.strip("`.").rstrip(" .")), str(error)
        assert shown in text
    assert "LoadReport.n_off_scale" in text
