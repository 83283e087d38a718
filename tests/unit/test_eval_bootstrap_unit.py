"""`judge-eval score` and `compare` with ``--bootstrap-unit instruction``: the intervals resample whole instructions.

Items of one instruction (its answers, each under several criteria) share its difficulty, so a judge errs on them
together; resampling items treats them as independent and narrows the intervals. The engine itself is checked
against a loop over whole clusters in test_eval_bootstrap.py; here, that the unit reaches every cell, is recorded,
survives items.parquet, and is refused where the table cannot say which items share an instruction.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import judge
from eval.cli import main
from eval.scoring import item_table


def _prediction(record, name: str, score: float) -> dict:
    return {"id": record.id, "judge": name, "raw_output": f"[FEEDBACK] x [RESULT] {score:g} [END]", "feedback": "x",
            "score": score, "parse_ok": True, "error": None, "reason": "", "score_source": "verdict"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The sample data judged twice by hand: "by_instruction" is exact on half the instructions and off by one on
    every item of the other half; "exact" copies the experts' mode. Each run scored by items and by instructions."""
    root = tmp_path_factory.mktemp("unit")
    records = judge.load_records(judge.sample_data_path())
    instructions = sorted({r.instruction for r in records})
    wrong = set(instructions[::2])
    for name in ("by_instruction", "exact"):
        lines = []
        for r in records:
            mode = max(set(r.expert_scores), key=list(r.expert_scores).count)
            off = name == "by_instruction" and r.instruction in wrong
            lines.append(json.dumps(_prediction(r, name, mode + 1 if off else mode), ensure_ascii=False))
        for unit in ("item", "instruction"):
            run = root / f"{name}-{unit}"
            run.mkdir()
            (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()), "--n-boot",
                         "400", "--no-plots", "--bootstrap-unit", unit]) == 0
        if name == "by_instruction":  # the correlations against their own reference: their own intervals
            for unit in ("item", "instruction"):
                run = root / f"{name}-{unit}-mean"
                run.mkdir()
                (run / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
                assert main(["score", "--predictions", str(run), "--data", str(judge.sample_data_path()),
                             "--n-boot", "400", "--no-plots", "--bootstrap-unit", unit, "--target", "mode",
                             "--spearman-target", "mean"]) == 0
    return {"root": root, "records": records, "n_instructions": len(instructions)}


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text(encoding="utf-8"))


def _width(interval) -> float:
    return interval[1] - interval[0]


def test_the_unit_is_recorded_and_widens_the_intervals_of_a_judge_that_errs_by_instruction(runs):
    root = runs["root"]
    items, whole = _metrics(root / "by_instruction-item"), _metrics(root / "by_instruction-instruction")
    assert items["settings"]["bootstrap_unit"] == "item" and whole["settings"]["bootstrap_unit"] == "instruction"
    a, b = items["splits"]["all"]["overall"], whole["splits"]["all"]["overall"]
    assert a["mae"] == b["mae"] and a["spearman"] == b["spearman"]  # the point estimates do not depend on the unit
    # The sample has ~6 items per instruction that err together: the interval is about sqrt(6) times as wide.
    assert _width(b["mae_ci"]) > 1.6 * _width(a["mae_ci"])
    # MAE by hand: every item with a unique mode is scored, off by one in the instructions the fixture made wrong
    # (sorted texts, every other one), exact elsewhere.
    wrong = set(sorted({r.instruction for r in runs["records"]})[::2])

    def unique_mode(scores) -> bool:
        counts = sorted((list(scores).count(s) for s in set(scores)), reverse=True)
        return bool(counts) and (len(counts) == 1 or counts[0] > counts[1])

    scored = [r for r in runs["records"] if unique_mode(r.expert_scores)]
    assert a["n_scored"] == len(scored)
    assert a["mae"] == pytest.approx(sum(r.instruction in wrong for r in scored) / len(scored))
    # The figures docs/evaluation.md quotes ("--bootstrap-unit"), 400 resamples under the default seed.
    assert [round(a["mae"], 3), *(round(v, 3) for v in a["mae_ci"]), *(round(v, 3) for v in b["mae_ci"])] == [
        0.513, 0.456, 0.571, 0.367, 0.653]
    said = (root / "by_instruction-instruction" / "report.md").read_text(encoding="utf-8")
    assert "whole instructions" in said
    assert "whole instructions" in (root / "by_instruction-instruction" / "report.html").read_text(encoding="utf-8")


def test_every_interval_of_a_cell_resamples_instructions(runs):
    """The unit reaches the in-scale figures (an off-by-one verdict on a top score is out of scale), the correlations
    computed against their own reference (``--spearman-target``), and the cells by criterion, not only the
    headline MAE."""
    root = runs["root"]
    items, whole = _metrics(root / "by_instruction-item"), _metrics(root / "by_instruction-instruction")
    a, b = items["splits"]["all"]["overall"], whole["splits"]["all"]["overall"]
    assert a["n_out_of_scale"] > 0 and a["mae_in_scale"] == b["mae_in_scale"]
    assert _width(b["mae_in_scale_ci"]) > 1.4 * _width(a["mae_in_scale_ci"])
    apart = [_metrics(root / f"by_instruction-{unit}-mean")["splits"]["all"]["overall"] for unit in ("item", "instruction")]
    assert apart[0]["n_spearman"] and apart[0]["spearman"] == apart[1]["spearman"]
    # Resampled by item, the instruction run's correlations would draw what the item run drew (the same cell
    # generator): the same interval. Ranks move less than errors with clusters here, so no width is asserted.
    assert apart[1]["spearman_ci"] != apart[0]["spearman_ci"]
    wider = [_width(whole["splits"]["all"]["by_task_type"][k]["mae_ci"]) > _width(cell["mae_ci"])
             for k, cell in items["splits"]["all"]["by_task_type"].items() if cell["mae_ci"][0] is not None
             and whole["splits"]["all"]["by_task_type"][k]["mae_ci"][0] is not None]
    assert len(wider) >= 3 and sum(wider) > len(wider) / 2


def test_the_validity_sections_intervals_follow_the_unit(runs):
    """The ceiling gap's and the alpha difference's intervals of the validity section resample what the metrics do
    (the engine against a plain loop: test_validity_bootstrap_unit.py), and the section says which."""
    root = runs["root"]
    items, whole = (_metrics(root / f"by_instruction-{unit}")["validity"] for unit in ("item", "instruction"))
    assert (items["settings"]["bootstrap_unit"], whole["settings"]["bootstrap_unit"]) == ("item", "instruction")
    a, b = items["splits"]["all"]["overall"], whole["splits"]["all"]["overall"]
    assert a["ceiling"]["gap"] == b["ceiling"]["gap"]
    assert _width(b["ceiling"]["gap_ci"]) > 1.4 * _width(a["ceiling"]["gap_ci"])
    assert b["agreement"]["alpha_boot"]["clusters_per_resample"] == runs["n_instructions"]
    assert "clusters_per_resample" not in a["agreement"]["alpha_boot"]


def test_items_parquet_keeps_which_items_share_an_instruction(runs):
    root, records = runs["root"], runs["records"]
    column = pq.read_table(root / "exact-item" / "items.parquet").column("instruction_key").to_pylist()
    table, _ = item_table.read_table(root / "exact-item" / "items.parquet")
    assert table.instruction_key.tolist() == column
    by_id = {r.id: r.instruction for r in records}
    texts = [by_id[i] for i in table.ids]
    # one key per instruction text, and the same key for the same text
    assert len(set(column)) == runs["n_instructions"]
    assert {(k, t) for k, t in zip(column, texts)} == {(k, t) for k, t in zip(column, texts) if column[texts.index(t)] == k}


def test_compare_resamples_whole_instructions_and_says_so(runs, tmp_path):
    root = runs["root"]
    base, other = str(root / "by_instruction-item"), str(root / "exact-item")
    for unit in ("item", "instruction"):
        assert main(["compare", base, other, "--out", str(tmp_path / unit), "--n-boot", "400",
                     "--bootstrap-unit", unit]) == 0
    items, whole = (json.loads((tmp_path / unit / "compare.json").read_text(encoding="utf-8"))
                    for unit in ("item", "instruction"))
    assert (items["bootstrap_unit"], whole["bootstrap_unit"]) == ("item", "instruction")
    a, b = (c["comparisons"][0]["splits"]["all"]["overall"]["mae"] for c in (items, whole))
    assert a["delta"] == b["delta"] and _width(b["ci"]) > 1.6 * _width(a["ci"])
    # the paired validity figures too: the ceiling gap's delta, by instruction
    a, b = (c["comparisons"][0]["validity"]["all"]["ceiling_gap"] for c in (items, whole))
    assert a["delta"] == b["delta"] and _width(b["ci"]) > 1.4 * _width(a["ci"])
    assert "paired bootstrap interval over whole instructions" in (tmp_path / "instruction" / "compare.md").read_text(
        encoding="utf-8")
    assert "paired bootstrap resamples of whole instructions" in (tmp_path / "instruction" / "compare.md").read_text(
        encoding="utf-8")
    assert "resamples of whole instructions" in (tmp_path / "instruction" / "compare.html").read_text(encoding="utf-8")


def test_an_items_table_without_instruction_keys_is_refused_naming_why(runs, tmp_path):
    """An items.parquet written before it kept the instructions' keys cannot be resampled by instruction: refused
    with a sentence saying to score again, never silently resampled by item."""
    import shutil

    root = runs["root"]
    old = tmp_path / "old"
    shutil.copytree(root / "exact-item", old)
    table = pq.read_table(old / "items.parquet")
    pq.write_table(table.drop_columns(["instruction_key"]), old / "items.parquet")
    with pytest.raises(ValueError, match="score it again"):
        from eval.scoring.compare import compare

        compare([old, root / "by_instruction-item"], n_boot=10, bootstrap_unit="instruction")
    read, _ = item_table.read_table(old / "items.parquet")
    assert read.instruction_key is None
    with pytest.raises(ValueError, match="instruction"):
        item_table.evaluate(read, n_boot=10, bootstrap_unit="instruction")
    assert item_table.evaluate(read, n_boot=10).settings.bootstrap_unit == "item"


def test_compare_resamples_by_instruction_where_any_run_was_scored_so_unless_told(runs, tmp_path):
    """Without ``--bootstrap-unit``, compare draws whole instructions where any of its runs was scored by them: runs
    scored by instruction (their items declared dependent) were paired by item, narrower intervals and smaller
    p-values than the runs' own unit allows, with nothing but the note's "resamples of items" to say so. The items
    are the same in every run, so which run is the baseline does not change the unit. Given, the flag decides."""
    root = runs["root"]
    by_instruction, exact = str(root / "by_instruction-instruction"), str(root / "exact-instruction")
    cases = {"default": ([by_instruction, exact], "instruction"),
             "told": ([by_instruction, exact, "--bootstrap-unit", "item"], "item"),
             "baseline by item": ([str(root / "by_instruction-item"), exact], "instruction"),
             "either order": ([exact, str(root / "by_instruction-item")], "instruction"),
             "both by item": ([str(root / "by_instruction-item"), str(root / "exact-item")], "item")}
    for name, (given, unit) in cases.items():
        out = tmp_path / name
        assert main(["compare", *given, "--out", str(out), "--n-boot", "400"]) == 0
        assert json.loads((out / "compare.json").read_text(encoding="utf-8"))["bootstrap_unit"] == unit, name
