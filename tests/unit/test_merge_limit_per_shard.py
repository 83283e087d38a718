"""`--limit` after slurm/eval.sbatch reaches every task's `judge-eval run`, so each shard judges the first N items of
its own block. Merged and scored, the items past each shard's limit have no prediction, and `score` called the run
unfinished: it read the merged run.json's `limit` as the first N items of the whole data, found the items judged
were not those, and gave up on the selection. It now cuts the selection by the array's blocks (run.json's
`shard_array`) and says that each shard judged only its first N items, naming `--limit`; an item a shard's limit
selected and that has no prediction is still unfinished. No cluster, no judge: shards laid out as eval.sbatch lays
them out (tests/support/eval_shards.py)."""

from __future__ import annotations

import json
from pathlib import Path

from eval.cli import main as eval_main
from tests.support.eval_shards import eval_array


def _merge_and_score(root: Path, data: Path, dirs: list, capsys) -> tuple[str, dict, str]:
    assert eval_main(["merge", "--data", str(data), "--out", str(root / "out"), *map(str, dirs)]) == 0
    capsys.readouterr()
    run_dir = root / "out"
    assert eval_main(["score", "--predictions", str(run_dir), "--n-boot", "0", "--vc-repeats", "2"]) == 0
    console = capsys.readouterr().out
    return console, json.loads((run_dir / "metrics.json").read_text()), (run_dir / "report.md").read_text()


def test_a_limit_on_an_eval_array_is_named_not_called_unfinished(tmp_path, capsys):
    """8 records in 4 shards of 2, each judged with --limit 1: 4 items without a prediction, each beyond its shard's
    limit; the console and report.md name the limit per shard, never "the run is unfinished" (it said so)."""
    data, dirs = eval_array(tmp_path, 8, 4, limit=1)
    console, metrics, report = _merge_and_score(tmp_path, data, dirs, capsys)
    notes = metrics["notes"]
    assert (notes.get("n_missing_unselected"), notes.get("unselected_limit"), notes.get("limit_per_shard")) == (
        4, 1, True)
    said = ("4 items have no prediction (each of the eval array's 4 shards judged only the first item of its block: "
            "--limit 1): they are not in n.")
    assert said in console, console
    assert "the run is unfinished" not in console and "the run is unfinished" not in report
    assert ("**4 items have no prediction** (each of the eval array's 4 shards judged only the first item of its "
            "block: `--limit 1`)") in report


def test_an_item_a_shards_limit_selected_and_not_judged_is_still_unfinished(tmp_path, capsys):
    """8 records in 2 shards of 4, --limit 3, each shard stopped after 2: per shard 1 item beyond the limit and 1
    selected but unjudged: 2 and 2, the second said unfinished."""
    data, dirs = eval_array(tmp_path, 8, 2, limit=3, judged=2)
    for shard in dirs:  # an unfinished shard is refused by the merge; its run.json says what it finished
        record = json.loads((shard / "run.json").read_text())
        (shard / "run.json").write_text(json.dumps({**record, "n_items": 2}), encoding="utf-8")
    console, metrics, _ = _merge_and_score(tmp_path, data, dirs, capsys)
    assert metrics["notes"].get("n_missing_unselected") is None  # n_items (2 a shard) is not what --limit 3 selects
    assert "4 items have no prediction (the run is unfinished)" in console
