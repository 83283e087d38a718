"""The released POLLUX benchmark's Parquet shards, as the hub lays them out (rebuilt by
``tests/support/release_artifacts.py``), converted to JSONL without loss; judging and scoring them with served tiny
judges is tests/integration/serving/test_serve_released_data.py."""

from __future__ import annotations

import judge
from eval.cli import main
from tests.support.release_artifacts import (
    N_ITEMS,
    released_rows,
)


def test_convert_writes_the_released_shards_as_jsonl_without_loss(released_data, tmp_path, capsys):
    """`judge-eval convert` reads the shard folder (duplicate left out and counted) and writes JSONL that loads back
    to the same records: abstentions, released columns and derived ids survive."""
    out = tmp_path / "pollux_test.jsonl"
    assert main(["convert", "--data", str(released_data), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{len(released_rows())} rows -> {N_ITEMS} records" in printed and "duplicates=1" in printed
    from_shards, from_jsonl = judge.load_records(released_data), judge.load_records(out)
    assert len(from_jsonl) == N_ITEMS and from_jsonl == from_shards
    assert [r.annotations for r in from_jsonl] == [r.annotations for r in from_shards]
    assert sum(r.n_abstained for r in from_jsonl) == sum(
        1 for row in released_rows()[:-1] for a in row["annotations"] if a["score"] == -1
    )
