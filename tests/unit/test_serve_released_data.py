"""The released POLLUX artefacts end to end: the benchmark's Parquet shards, as the hub lays them out,
are judged by served tiny judges in the released layouts and scored with the paper's metrics and POLLUX's own.

Nothing here is downloaded: ``tests/support/release_artifacts.py`` rebuilds the dataset (``ai-forever/POLLUX``: three shards
under ``data/``, the released column names and Arrow types, ``annotations`` with ``-1`` abstentions, no ``id``) and
``tests/support/tiny_released.py`` the ``-r`` judge (``Qwen2WithRegressionHead``, a ``regression_head`` with a bias, sharded
safetensors). The ``-r`` judge, served under its hub id from an offline hub cache, judges the same data in
``tests/unit/test_released_judges.py`` (the module that owns its server) and the Qwen3 layout (``Pollux-4B-Judge``) in
``tests/unit/test_qwen3_judge.py``, all through ``tests.support.release_artifacts.judge_and_score``. (This file sorts after
``test_released_judges.py`` on purpose: the -r server's engines stop before the session's judge-serve engines start.)
"""

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
