"""The PNG plots of ``judge-eval score`` drawn in a child process (``eval.report.PlotProcess``): the same files as
drawn in-process, and a failure in the child is an error naming its cause, never a run without plots."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from eval import item_table
from eval.report import PlotProcess, write_plots


def _metrics(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 60
    table = item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=rng.integers(0, 3, n).astype(float),
        status=np.array(["ok"] * n, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object), experts=rng.integers(0, 3, (n, 3)).astype(float),
        split=np.array(["zero_shot", "standard"] * (n // 2), dtype=object),
        model_id=np.array(["m"] * n, dtype=object), task_type=np.array(["t"] * n, dtype=object),
        task_group=np.array(["g1", "g2", "g3"] * (n // 3), dtype=object),
        criteria_name=np.array(["c1", "c2", "c3", "c4"] * (n // 4), dtype=object), judge_name="j")
    result = item_table.evaluate(table, n_boot=20, vc_repeats=2)
    path = tmp_path / "metrics.json"
    path.write_text(item_table.dumps(result), encoding="utf-8")
    return path


def test_plots_from_the_child_process_are_the_in_process_plots(tmp_path):
    """Same files, in the same order, pixel for pixel."""
    metrics_path = _metrics(tmp_path)
    with PlotProcess(tmp_path / "child") as plotting:
        plotting.draw(metrics_path)
        child = plotting.wait()
    here = write_plots(json.loads(metrics_path.read_text(encoding="utf-8")), tmp_path / "here")
    assert [p.name for p in child] == [p.name for p in here] and len(here) == 6
    for a, b in zip(child, here):
        assert a.parent == tmp_path / "child"
        assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))


def test_a_failing_plot_process_raises_with_the_childs_error(tmp_path):
    """A metrics.json that is not there: the child's traceback is in the error."""
    with pytest.raises(RuntimeError, match=r"(?s)plotting process exited with 1.*FileNotFoundError"):
        with PlotProcess(tmp_path / "plots") as plotting:
            plotting.draw(tmp_path / "missing.json")
            plotting.wait()


def test_a_plot_process_left_early_draws_nothing_and_is_stopped(tmp_path):
    """Leaving the context before ``draw`` (scoring failed): the child is stopped and no plot folder appears."""
    with PlotProcess(tmp_path / "plots") as plotting:
        pass
    assert all(process.poll() is not None for process in plotting._processes)
    assert not (tmp_path / "plots").exists()


def test_plots_drawn_from_the_metrics_are_the_plots_drawn_from_metrics_json(tmp_path):
    """``draw`` given the metrics themselves (before metrics.json is written, as scoring does) draws the same
    files, pixel for pixel, as ``draw`` given the written file."""
    metrics_path = _metrics(tmp_path)
    result = json.loads(metrics_path.read_text(encoding="utf-8"))
    with PlotProcess(tmp_path / "from_dict") as plotting:
        plotting.draw(result)
        from_dict = plotting.wait()
    with PlotProcess(tmp_path / "from_file") as plotting:
        plotting.draw(metrics_path)
        from_file = plotting.wait()
    assert [p.name for p in from_dict] == [p.name for p in from_file] and len(from_file) == 6
    for a, b in zip(from_dict, from_file):
        assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))


def test_evaluate_hands_the_plotted_cells_first_and_its_result_does_not_change():
    """``evaluate(plots_ready=...)`` calls back twice, with the confusion matrices, then the by-criterion cells, of
    every split (the plots' inputs) equal to those of the result, and the result equals evaluate's without one."""
    rng = np.random.default_rng(1)
    n = 90
    table = item_table.ItemTable(
        ids=np.array([f"i{k}" for k in range(n)], dtype=object), judge=rng.integers(0, 3, n).astype(float),
        status=np.array(["ok"] * n, dtype=object), error=np.array([""] * n, dtype=object),
        score_source=np.array(["verdict"] * n, dtype=object), experts=rng.integers(0, 3, (n, 3)).astype(float),
        split=np.array(["zero_shot", "standard"] * (n // 2), dtype=object),
        model_id=np.array(["m1", "m2", "m3"] * (n // 3), dtype=object), task_type=np.array(["t"] * n, dtype=object),
        task_group=np.array(["g1", "g2", "g3"] * (n // 3), dtype=object),
        criteria_name=np.array(["c1", "c2", "c3", "c4", "c5"] * (n // 5), dtype=object), judge_name="j")
    calls = []
    early = item_table.evaluate(table, n_boot=30, vc_repeats=2, plots_ready=calls.append)
    plain = item_table.evaluate(table, n_boot=30, vc_repeats=2)
    assert item_table.dumps(early) == item_table.dumps(plain)
    assert list(early["splits"]["all"]) == list(plain["splits"]["all"])  # the blocks' key order too
    confusions, criteria = calls  # the quick part first, each plot's input whole in one call
    assert set(confusions["splits"]) == set(criteria["splits"]) == {"zero_shot", "standard", "all"}
    for split in plain["splits"]:
        assert confusions["splits"][split] == {"confusion": plain["splits"][split]["confusion"]}
        assert list(criteria["splits"][split]) == ["by_criterion"]
        assert (item_table.dumps(criteria["splits"][split]["by_criterion"])
                == item_table.dumps(plain["splits"][split]["by_criterion"]))
    for handed in calls:
        assert (handed["judge"], handed["target"]) == (plain["judge"], plain["target"])


def test_metrics_given_in_parts_reach_each_child_once(tmp_path):
    """``draw`` called with the confusion matrices, then the by-criterion cells (as evaluate's ``plots_ready``
    gives them), then everything: the same PNGs as from metrics.json, each child fed once."""
    metrics_path = _metrics(tmp_path)
    result = json.loads(metrics_path.read_text(encoding="utf-8"))
    only = [{**result, "splits": {s: {key: b[key]} for s, b in result["splits"].items()}}
            for key in ("confusion", "by_criterion")]
    with PlotProcess(tmp_path / "parts") as plotting:
        plotting.draw(only[0])
        assert plotting._sent == {"confusions"}
        plotting.draw(only[1])
        plotting.draw(result)  # nothing left to send
        parts = plotting.wait()
    here = write_plots(result, tmp_path / "here")
    assert [p.name for p in parts] == [p.name for p in here] and len(here) == 6
    for a, b in zip(parts, here):
        assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))
