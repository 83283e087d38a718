"""The benches' synthetic items keep the contract a real run keeps: each item's rubric reads (``judge.scale_of``) as
its criterion's scale in the taxonomy (``judge.taxonomy``), and every score it carries (the experts', the judge's) is
a level of that scale. A bench whose rubric and scores disagree times a path no real run takes: scores read as off
their scale, a scale inferred where the real one is written, a verdict on levels its rubric does not have."""

from __future__ import annotations

import ast
import asyncio
import importlib
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import judge

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench_module(monkeypatch):
    """A bench script imported as a module; what it adds to ``sys.path`` is undone after the test."""
    monkeypatch.setattr(sys, "path", [str(BENCH), *sys.path])
    return importlib.import_module


def _scales_by_name() -> dict[str, set[tuple[tuple[int, ...], int]]]:
    """Each taxonomy criterion name (Russian): the (levels, best) of every criterion carrying it."""
    scales = defaultdict(set)
    for criterion in judge.load_taxonomy().criteria.values():
        scales[criterion.name["ru"]].add((criterion.scale.levels, criterion.scale.best))
    return scales


def _off_contract(name: str, rubrics: str, scores) -> str | None:
    """Why an item breaks the contract, or None: its rubric, read as a real run reads it (oriented by its name), is
    no scale of its criterion, or a score is no level of it."""
    scale = judge.oriented_scale(name, rubrics)
    if (scale.levels, scale.best) not in _scales_by_name()[name]:
        return f"{name!r}: rubric levels {scale.levels} (best {scale.best}), taxonomy {_scales_by_name()[name]}"
    off = [s for s in scores if s is not None and not (isinstance(s, float) and math.isnan(s))
           and not scale.is_level(s)]
    return f"{name!r} on {scale.levels}: scores {off}" if off else None


def test_eval_metrics_items_carry_their_criterion_scale_and_score_on_it():
    """bench/eval_metrics.py's table drew each item's scale apart from its criterion (a Critical 0/1 flag scored 0-4)
    and carried no scale ends, so the timed metrics step inferred them from the experts, which `judge-eval score`
    never does on records with rubrics."""
    from bench.eval_metrics import synthetic_table

    table = synthetic_table(3000)
    assert table.scale_low is not None and table.scale_high is not None and table.best_low is not None
    taxonomy, scales = judge.load_taxonomy(), _scales_by_name()
    wrong = []
    for i in range(len(table)):
        name, low, high = table.criteria_name[i], table.scale_low[i], table.scale_high[i]
        levels = tuple(range(int(low), int(high) + 1))
        if not any(levels == known for known, _ in scales[name]):
            wrong.append(f"{table.ids[i]}: {name!r} on {levels}")
        scores = [v for v in (*table.experts[i], table.judge[i]) if np.isfinite(v)]
        if any(v not in levels for v in scores):
            wrong.append(f"{table.ids[i]}: {scores} on {levels}")
        if bool(table.best_low[i]) != taxonomy.is_best_at_lowest(name):
            wrong.append(f"{table.ids[i]}: best_low {table.best_low[i]} for {name!r}")
    assert wrong == []
    # the scale mix the docstring states: 0-1 / 0-2 / 0-3 / 0-4, the 0-2 criteria most of them
    tops = {int(t): int((table.scale_high == t).sum()) for t in (1, 2, 3, 4)}
    assert all(tops.values()) and tops[2] > 0.75 * len(table), tops


def test_eval_metrics_records_read_back_as_the_table_they_were_written_from(tmp_path):
    """Written as records and predictions (what --end-to-end and bench/experts_tables.py time), read as
    `judge-eval score` reads them: no record off its rubric's scale, every verdict in scale, and the item table
    built from them carries the synthetic table's scales."""
    from bench.eval_metrics import synthetic_table, write_files

    from eval.judging.predictions import read_prediction_table
    from eval.scoring.item_table import build_table

    table = synthetic_table(600)
    data, predictions = write_files(table, tmp_path)
    records = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines()]
    wrong = [why for record, row in zip(records, rows) if (why := _off_contract(
        record["criteria_name"], record["rubrics"], [*record["expert_scores"], row["score"]]))]
    assert wrong == []
    columns, report = judge.load_record_columns(data)
    assert report.n_off_scale == 0
    built, notes = build_table(columns, read_prediction_table(predictions))
    assert "n_no_scale" not in notes
    np.testing.assert_array_equal(built.scale_low, table.scale_low)
    np.testing.assert_array_equal(built.scale_high, table.scale_high)
    np.testing.assert_array_equal(built.best_low, table.best_low)
    ok = built.status == "ok"
    assert ok.any() and (built.in_scale[ok] == 1.0).all()


def test_report_page_records_carry_rubrics_their_scores_lie_on(bench_module, tmp_path):
    """bench/report_page.py wrote one 0-2 rubric per criterion name while its items were scored up to 4: the page
    showed experts' and the judge's scores of 3 and 4 under rubrics without those levels."""
    report_page = bench_module("report_page")

    records, predictions = report_page.build_run(300, tmp_path)
    wrong = [why for record, row in zip(records, predictions)
             if (why := _off_contract(record.criteria_name, record.rubrics, [*record.expert_scores, row["score"]]))]
    assert wrong == []


def _instant_app(eval_client, monkeypatch, tmp_path):
    """The ASGI app ``instant_server`` would serve, caught instead of run."""
    import uvicorn

    caught = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: caught.setdefault("app", app))
    eval_client.instant_server(0, str(tmp_path / "first"))
    return caught["app"]


def _call(app, path: str, body: dict) -> dict:
    sent = []

    async def receive():
        return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": "http", "method": "POST", "path": path}, receive, send))
    return json.loads(sent[-1]["body"])


def test_eval_client_records_and_the_instant_servers_verdicts_share_one_scale(bench_module, monkeypatch, tmp_path):
    """bench/eval_client.py's records named the taxonomy's first criteria (two Critical 0/1 flags among them) with a
    0-2 rubric, and its server answered every one on the scale [0, 1]: what judge-serve never answers for a 0-2
    rubric."""
    eval_client = bench_module("eval_client")
    data = tmp_path / "data.jsonl"
    eval_client.write_data(data, 32, 16, 200)
    records = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    wrong = [why for r in records if (why := _off_contract(r["criteria_name"], r["rubrics"], r["expert_scores"]))]
    assert wrong == []
    app = _instant_app(eval_client, monkeypatch, tmp_path)
    item = {"instruction": records[0]["instruction"], "answer": records[0]["answer"],
            "criteria": [{"name": r["criteria_name"], "rubrics": r["rubrics"]} for r in records[:16]]}
    results = _call(app, "/v1/judge", {"items": [item]})["items"][0]["results"]
    for record, result in zip(records, results):
        scale = judge.oriented_scale(record["criteria_name"], record["rubrics"])
        assert result["scale"] == list(scale.levels) and scale.is_level(result["score"]), result
        assert sorted(map(int, result["score_probs"])) == list(scale.levels)
    chat = _call(app, "/v1/chat/completions", {"messages": []})["choices"][0]["message"]["content"]
    verdict = judge.parse_verdict(chat, scale=judge.scale_of(records[0]["rubrics"]))
    assert verdict.ok and verdict.in_scale


@pytest.mark.parametrize("name", ["serve_tokenizer_load", "tokenizer_file_load"])
def test_tokenizer_benches_render_a_criterion_with_its_own_rubric(bench_module, name):
    """The item both tokenizer benches render: "Креативность" is a 0-2 criterion, written with a two-level rubric."""
    child = ast.parse(bench_module(name).CHILD)
    item = next(ast.literal_eval(node.value) for node in ast.walk(child)
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "item")
    assert _off_contract(item["criteria_name"], item["rubrics"], []) is None


def test_serve_large_bodies_verdict_lies_on_its_criterion_scale(bench_module):
    """The scripted engine's verdict is a level of the criterion the small request names (judge-serve resolves it
    from the taxonomy), so the timed request is judged, not failed."""
    module = bench_module("serve_large_bodies")
    (name,) = module.ITEM["criteria"]
    scales = _scales_by_name()[name]
    verdict = "[FEEDBACK] ok [RESULT] 1 [END]"
    assert verdict in Path(module.__file__).read_text(encoding="utf-8")
    for levels, best in scales:
        assert judge.parse_verdict(verdict, scale=judge.Scale(levels, best)).in_scale


def test_pollux_matrix_scores_are_levels_of_their_items_scales(bench_module):
    """bench/pollux_matrix.py's items: every scored verdict a level of the item's own scale (its two binary gates
    0/1, the rest 0-2), so the timed matrix drops nothing as out of scale that a real ranking would keep."""
    items = bench_module("pollux_matrix").synthetic_items(200, 5, 12, 6, seed=0)
    off = [(it.criteria_name, it.levels, it.score) for it in items
           if it.score is not None and it.score not in it.levels]
    assert off == [] and {it.levels for it in items} == {(0, 1), (0, 1, 2)}


@pytest.fixture
def serve_bench(monkeypatch):
    """bench/serve.py as the module ``bench.serve`` (imported as ``serve`` it would shadow the package); the folders it
    puts first on ``sys.path`` are taken off again after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    return importlib.import_module("bench.serve")


def test_serve_overhead_times_judgments_that_come_back_as_verdicts(serve_bench, tiny_causal_dir):
    """bench/serve.py overhead sent the random tiny judge's judgments unconstrained, both arms: its outputs held no
    verdict, so judge-serve's arm timed its failure path. Both arms now decode under the one verdict regex
    judge-serve is started to use (its feedback bound), and the direct arm's answers are read for verdicts as
    judge-serve reads them."""
    from serve.cli import resolve_config
    from serve.judging import verdict_regex

    args = serve_bench.parse_args(["overhead", "--items", "2", "--criteria", "3", "--answer-tokens", "20"])
    serve_flags, engine_flags = serve_bench.decoding_flags(args)
    served, _ = resolve_config(["--model", str(tiny_causal_dir), *serve_flags])
    engine, _ = resolve_config(["--model", str(tiny_causal_dir), *engine_flags])
    assert served.feedback_max_chars > 0 and engine.structured_outputs_backend == "guidance"
    items, chat, tokens, _ = serve_bench.build_payloads(args, tiny_causal_dir)
    taxonomy = judge.load_taxonomy()
    for item in items:
        regexes = [verdict_regex(taxonomy.criterion(c).scale, served.feedback_max_chars, True)
                   for c in item["criteria"]]
        for arm in (chat, tokens):
            assert [p["structured_outputs"]["regex"] for p in arm[item["id"]]] == regexes
        assert serve_bench.served_body(args, item)["constrained"] is True
    verdict, garbage = "[FEEDBACK] ok [RESULT] 1 [END]", "ĠĠ Reference ok"
    assert serve_bench.direct_verdict({"choices": [{"message": {"content": verdict}}]}, "chat")
    assert serve_bench.direct_verdict({"choices": [{"text": verdict}]}, "tokens")
    assert not serve_bench.direct_verdict({"choices": [{"message": {"content": garbage}}]}, "chat")
    # --unconstrained (a trained judge) and ordering (four tokens: no verdict fits) decode freely
    for argv in (["overhead", "--unconstrained"], ["ordering"]):
        free = serve_bench.parse_args(argv)
        assert serve_bench.decoding_flags(free) == ([], [])
        assert serve_bench.served_body(free, {})["constrained"] is False


def test_rewards_criteria_go_round_every_scale_of_the_taxonomy(bench_module):
    """bench/rewards.py judged every sample on the first --criteria criteria of Recommendations: at its default 2,
    two Critical 0/1 flags, so no 0..2 criterion's prompt (POLLUX's most) was ever timed. The samples' criteria now
    go round every scale the taxonomy has, each sample's distinct, the draw the seed's."""
    rewards = bench_module("rewards")
    taxonomy = judge.load_taxonomy()

    def scale(cid):
        return taxonomy.criteria[cid].scale.levels, taxonomy.criteria[cid].scale.best

    every = {scale(cid) for cid in taxonomy.criteria}
    args = rewards.parse_args([])
    samples = rewards.build_samples(args.items, args.criteria, args.seed)  # the overhead comparison's, as main's
    per_scale = [scale(c) for s in samples for c in s["criteria"]]
    assert set(per_scale) == every and max(map(per_scale.count, every)) - min(map(per_scale.count, every)) <= 1
    assert all(len(set(s["criteria"])) == args.criteria for s in samples)
    assert rewards.build_samples(args.items, args.criteria, args.seed) == samples
    assert [s["criteria"] for s in rewards.build_samples(args.items, args.criteria, args.seed + 1)] != \
        [s["criteria"] for s in samples]
    wide = rewards.draw_criteria(4, 40, 0)  # more criteria per sample than some scales have: still distinct
    assert all(len(set(criteria)) == 40 for criteria in wide)
    # judge-serve resolves the drawn ids as the criteria the bench means, each on its own scale
    from serve.jobs import check_criteria
    from serve.schema import parse_judge_request

    resolved = check_criteria(parse_judge_request(rewards.judge_body(samples)))
    assert [[(c.scale.levels, c.scale.best) for c in item] for item in resolved] == \
        [[scale(c) for c in s["criteria"]] for s in samples]


def test_eval_metrics_items_pair_a_task_type_with_a_criterion_its_leaves_list():
    """bench/eval_metrics.py drew each item's task type and criterion apart: most of its (task type, criterion)
    pairs (a poem's rhyme judged on a code task) are in no task of the taxonomy, so the timed per-task-type and
    per-criterion cells, and the Zero-Shot split read from the pair, held items no real run has. Each item's pair is
    now one a leaf of its task type lists, scored on the item's scale, drawn the same for the same seed."""
    from bench.eval_metrics import synthetic_table

    taxonomy = judge.load_taxonomy()
    listed = {(task.task_type, taxonomy.criteria[cid].name["ru"], taxonomy.criteria[cid].scale.levels[-1])
              for task in taxonomy.tasks for cid in task.criteria}
    table = synthetic_table(3000)
    drawn = list(zip(table.task_type.tolist(), table.criteria_name.tolist(), table.scale_high.astype(int).tolist()))
    assert [pair for pair in drawn if pair not in listed] == []
    assert set(table.task_type) == set(taxonomy.task_types)
    again, other = synthetic_table(3000), synthetic_table(3000, seed=1)
    assert list(again.task_type) == list(table.task_type) and list(again.criteria_name) == list(table.criteria_name)
    assert list(other.criteria_name) != list(table.criteria_name)
