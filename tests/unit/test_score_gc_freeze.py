"""`judge-eval score` runs with the objects that existed before it frozen (``eval.scoring.gc_freeze``): the full
collections its own allocations trigger then walk what the run made, not every imported module, class and function
again. Once it returns nothing is frozen; a process that froze objects of its own keeps them frozen."""

from __future__ import annotations

import gc
import json
import weakref

import pytest

import judge
import eval.scoring.item_table as item_table_module
from eval.judging.predictions import record_content_key
from eval.scoring.score import score


class _Node:
    pass


def _cycle():
    """A weak reference to an object kept alive by nothing but a reference cycle."""
    node = _Node()
    node.self = node
    return weakref.ref(node)


def _run(tmp_path):
    records = judge.load_records(judge.sample_data_path())[:8]
    rows = [{"id": r.id, "judge": "j", "raw_output": f"[FEEDBACK] ok [RESULT] {max(r.expert_scores)} [END]",
             "feedback": "ok", "score": max(r.expert_scores), "parse_ok": True, "error": None, "reason": "",
             "score_source": "verdict", "latency_s": 0.1, "content_key": record_content_key(r)} for r in records]
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                           encoding="utf-8")
    return run


def test_score_walks_only_what_it_made_and_leaves_the_collector_as_it_found_it(tmp_path, monkeypatch,
                                                                               collector_off):
    run = _run(tmp_path)
    build_table, seen = item_table_module.build_table, []

    def watched_build(*args, **kwargs):  # inside score: is an object made before the call frozen?
        gc.collect()
        seen.append((gc.get_freeze_count(), older() is not None))
        return build_table(*args, **kwargs)

    monkeypatch.setattr(item_table_module, "build_table", watched_build)
    gc.collect()
    older = _cycle()
    score(run, judge.sample_data_path(), tmp_path / "out", n_boot=0, vc_repeats=5)
    assert seen and seen[0][0] > 0 and seen[0][1]  # frozen, so a full collection inside left it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert older() is None  # collectable again once score returned

    theirs = _cycle()
    gc.freeze()  # a process's own freeze: kept as it is
    try:
        score(run, judge.sample_data_path(), tmp_path / "out2", n_boot=0, vc_repeats=5)
        gc.collect()
        assert gc.get_freeze_count() > 0 and theirs() is not None  # still frozen: their freeze was not undone
    finally:
        gc.unfreeze()
    gc.collect()
    assert theirs() is None


def test_score_that_raises_leaves_nothing_frozen(tmp_path, monkeypatch, collector_off):
    """A score that raises midway (here: in the item table) unfreezes what it froze on the way out, as one that
    returns does: the objects made before it are collectable again."""
    run = _run(tmp_path)
    frozen_inside = []

    def failing_build(*args, **kwargs):
        frozen_inside.append(gc.get_freeze_count())
        raise RuntimeError("the item table failed")

    monkeypatch.setattr(item_table_module, "build_table", failing_build)
    gc.collect()
    older = _cycle()
    with pytest.raises(RuntimeError, match="the item table failed"):
        score(run, judge.sample_data_path(), tmp_path / "out", n_boot=0, vc_repeats=5)
    assert frozen_inside and frozen_inside[0] > 0  # it raised inside the block
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert older() is None


def test_score_freezes_its_inputs_once_loaded_only_where_it_froze(tmp_path, monkeypatch, collector_off):
    """Once the records and predictions are loaded into the item table, they are frozen too (no later full collection
    walks them); under a process's own freeze nothing more is frozen; after score nothing of it stays frozen."""
    run = _run(tmp_path)
    build_table, derive, seen = item_table_module.build_table, item_table_module.derive, []

    def watched_build(*args, **kwargs):
        seen.append(("load", gc.get_freeze_count()))
        return build_table(*args, **kwargs)

    def watched_derive(*args, **kwargs):
        seen.append(("metrics", gc.get_freeze_count()))
        return derive(*args, **kwargs)

    monkeypatch.setattr(item_table_module, "build_table", watched_build)
    monkeypatch.setattr(item_table_module, "derive", watched_derive)
    score(run, judge.sample_data_path(), tmp_path / "out", n_boot=0, vc_repeats=5)
    (_, at_load), (_, at_metrics) = seen
    assert at_metrics > at_load > 0 and gc.get_freeze_count() == 0

    seen.clear()
    gc.freeze()  # a process's own freeze: score adds nothing to it
    try:
        before = gc.get_freeze_count()
        score(run, judge.sample_data_path(), tmp_path / "out2", n_boot=0, vc_repeats=5)
        # a frozen object freed meanwhile leaves the count; none joins it
        (_, at_load), (_, at_metrics) = seen
        assert before >= at_load >= at_metrics >= gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
