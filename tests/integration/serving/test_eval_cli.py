"""judge-eval: every subcommand's --help, configs, and `run` against a scripted OpenAI-compatible HTTP server whose
received payloads are asserted exactly (resume after a kill, retries, refusals, parse failures, /v1/judge); the
end-to-end test drives a tiny real judge on vLLM through run -> score -> compare.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_eval_cli.py.
"""

from __future__ import annotations

import json

from eval.cli import main
from eval.judging.predictions import read_predictions
from tests.support.fixtures_models import FAST_ENGINE_ENV, TEST_KV_CACHE, copy_of


# --------------------------------------------------------------------------------------------- end to end


#: Items the end-to-end test judges: the head of the bundled sample (no --data), enough for every stage to have
#: figures. The whole sample (341 items, twice) took 105 s of call under two busy xdist workers and tested nothing
#: more; 48 items take 5.7 s.
END_TO_END_ITEMS = 48


def test_end_to_end_tiny_judge_run_score_compare(vllm_tiny_server, tmp_path, monkeypatch):
    """Tiny random judge on vLLM -> run -> score -> compare on the bundled sample data (its first items). A random
    model rarely writes a verdict: the failures must be reported as such (n_failed), not crash anything; PNGs only
    with --png."""
    monkeypatch.setenv("OPENAI_API_KEY", vllm_tiny_server.api_key)  # the engine's key, given as users give it
    n_records = END_TO_END_ITEMS
    # tiny-ru names its verdict format: a random model's answers that end on their own within 8 tokens would
    # otherwise stop a guessed-format run as no judge's (FormatWatch), which is not what this test is about
    for name, extra in (("tiny-ru", ["--verdict-format", "tagged"]), ("tiny-en", ["--prompt", "en"])):
        assert main(["run", "--judge", vllm_tiny_server.base_url, "--out", str(tmp_path / name), "--name", name,
                     "--limit", str(n_records), "--max-tokens", "8", "--concurrency", "8", "--no-progress",
                     *extra]) == 0  # fmt: skip
        assert len(read_predictions(tmp_path / name)) == n_records
        run_record = json.loads((tmp_path / name / "run.json").read_text(encoding="utf-8"))
        assert run_record["config"]["data"] == "sample"  # no --data: the bundled sample, by name
        png = ["--png"] if name == "tiny-ru" else []  # PNGs are opt-in: drawn for one run, absent for the other
        assert main(["score", "--predictions", str(tmp_path / name), "--n-boot", "100", *png]) == 0
        metrics = json.loads((tmp_path / name / "metrics.json").read_text(encoding="utf-8"))
        overall = metrics["splits"]["all"]["overall"]
        assert overall["n"] == n_records and overall["n_request_failed"] == 0
        assert overall["n_failed"] == overall["n_parse_failed"] == sum(metrics["splits"]["all"]["failures"].values())
        assert overall["n_failed"] > 0
        if png:
            assert (tmp_path / name / "plots" / "confusion_all.png").stat().st_size > 0
        else:
            assert not (tmp_path / name / "plots").exists()
        report = (tmp_path / name / "report.md").read_text(encoding="utf-8")
        assert f"| Zero-Shot + Standard | {n_records} | {overall['n_failed']} (" in report
    assert main(["compare", str(tmp_path / "tiny-ru"), str(tmp_path / "tiny-en"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "100"]) == 0
    assert (tmp_path / "cmp" / "compare.md").exists()


def test_local_checkpoint_is_served_for_the_run_and_stopped(tiny_causal_dir, small_data, tmp_path, tmp_path_factory):
    """`--judge CHECKPOINT` starts vLLM's OpenAI server (as judge-serve would be, when installed) on a free port,
    judges through it, records the backend in run.json and stops the server afterwards."""
    import psutil
    # A copy of its own: the session folder is shared by both workers, so a server another worker starts on it
    # would read below as this run's leftover.
    tiny_causal_dir = copy_of(tiny_causal_dir, tmp_path_factory.mktemp("own-judge") / tiny_causal_dir.name)

    data, records = small_data
    before = {p.pid for p in psutil.process_iter()}
    assert main(["run", "--judge", str(tiny_causal_dir), "--server", "vllm", "--data", str(data), "--out",
                 str(tmp_path), "--limit", "3", "--max-tokens", "4", "--no-progress", "--server-args",
                 json.dumps(["--enforce-eager", "--dtype", "float32", "--max-model-len", "2048",
                             "--kv-cache-memory-bytes", TEST_KV_CACHE]),
                 "--server-env", json.dumps({"HF_HUB_OFFLINE": "1", **FAST_ENGINE_ENV})]) == 0
    rows = read_predictions(tmp_path)
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in records[:3])
    assert {r["judge"] for r in rows} == {tiny_causal_dir.name}
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["backend"] == "chat"
    assert "vllm" in (tmp_path / "server.log").read_text(errors="replace").lower()
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
                 and "vllm.entrypoints.openai.api_server" in " ".join(p.info["cmdline"] or [])
                 and str(tiny_causal_dir) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, "the judge server outlived the run"


def test_local_checkpoint_through_judge_serve_uses_v1_judge(tiny_causal_dir, seq2seq_server, small_data, tmp_path):
    """With judge-serve installed, `--judge CHECKPOINT` starts it, detects /v1/judge and gets one prediction per
    item from it (a random tiny judge: parse failures, each with its error code, none a request failure), then
    stops it.

    The judge-serve it starts attaches to the session's engine on the same folder (`--generator-url` in
    `--server-args`, the engine's key in `--server-env`) instead of starting a second engine for a model already
    served: what is under test is judge-eval starting, using and stopping judge-serve (one vLLM start fewer, ~30
    CPU-s by bench/engine_start.py)."""
    import psutil

    from serve.launch import ENGINE_KEY_ENV
    from tests.support.console_scripts import console_script
    from tests.support.fixtures_serve import ENGINE_KEY, server_metric

    # `make setup` installs the console script beside this interpreter: its absence is a broken install, a failure.
    console_script("judge-serve")
    assert seq2seq_server.run_record()["layout"]["root"] == str(tiny_causal_dir)  # the engine serves this very folder
    data, records = small_data
    before = {p.pid for p in psutil.process_iter()}
    engine = seq2seq_server.engine_url("generator")
    finished_before = server_metric(engine, "vllm:request_success_total")
    assert main(["run", "--judge", str(tiny_causal_dir), "--server", "judge-serve", "--data", str(data), "--out",
                 str(tmp_path), "--limit", "4", "--max-tokens", "4", "--no-progress", "--server-args",
                 json.dumps(["--generator-url", engine]),
                 "--server-env", json.dumps({ENGINE_KEY_ENV: ENGINE_KEY})]) == 0
    rows = read_predictions(tmp_path)
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in records[:4])
    # Judged by the session's engine (one request per row), not by an engine of its own.
    assert server_metric(engine, "vllm:request_success_total") - finished_before == len(rows)
    run_json = (tmp_path / "run.json").read_text(encoding="utf-8")
    assert json.loads(run_json)["backend"] == "judge-serve"
    assert ENGINE_KEY not in run_json  # the engine's key travels in --server-env, and run.json records it redacted
    assert all(r["error"] != "request_failed" for r in rows), [r["reason"] for r in rows]
    assert all(r["parse_ok"] or r["error"] for r in rows)
    assert "judge-serve" in (tmp_path / "server.log").read_text(errors="replace")
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
                 and "judge-serve" in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, "judge-serve outlived the run"
