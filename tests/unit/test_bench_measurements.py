"""The bench scripts measure what docs/performance.md says they do, and refuse or count what would otherwise be lost:
each test stands in for the costly part (a server, a browser, the tokenizer) and runs the script's own code around
it."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import tracemalloc
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def jobs_memory(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("jobs_memory")


class _SharedPrefixJob:
    """What jobs_memory reads of a ``serve.jobs.Job``: its own ids after one prefix list its item's jobs share."""

    __slots__ = ("prefix_ids", "own_ids")

    def __init__(self, prefix_ids: list[int], own_ids: list[int]):
        self.prefix_ids, self.own_ids = prefix_ids, own_ids

    @property
    def prompt_ids(self) -> list[int]:
        return [*self.prefix_ids, *self.own_ids]


def test_jobs_memory_counts_the_layout_before_alone(jobs_memory, monkeypatch, capsys):
    """The layout before is the whole lists alone (their id objects shared with nothing else): two jobs on one
    100,000-id prefix hold 2 whole lists and 100,020 ids. Read while the jobs still lived, the figure also counted the
    jobs' own prefix list, 800 kB more (the layout before measured here the same way, by ``tracemalloc``)."""
    prefix_len, own_len, n_jobs = 100_000, 10, 2

    def jobs(request=None, tokenizer=None, **_):
        prefix = [10**6 + k for k in range(prefix_len)]
        return [_SharedPrefixJob(prefix, [2 * 10**6 + 100 * j + k for k in range(own_len)]) for j in range(n_jobs)]

    tracemalloc.start()
    try:
        whole_lists = [job.prompt_ids for job in jobs()]  # the layout before, alone: what the figure must count
        before_bytes = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del whole_lists

    for name, stand_in in (("build_qwen_tokenizer", lambda: None), ("prepare_tokenizer", lambda tokenizer: None),
                           ("_request", lambda *shape: None), ("build_jobs", jobs)):  # fmt: skip
        monkeypatch.setattr(jobs_memory, name, stand_in)
    monkeypatch.setattr(jobs_memory, "SHAPES", [(1, n_jobs, 0, 4096)])
    jobs_memory.main([])
    line = next(line for line in capsys.readouterr().out.splitlines() if "a copy per job" in line)
    before_mib = float(re.search(r"a copy per job ([\d.]+) MiB", line).group(1))
    assert abs(before_mib - before_bytes / 2**20) < 0.1, (line, before_bytes / 2**20)


@pytest.fixture
def bench_module(monkeypatch):
    """A bench script imported as a module; what its ``main`` adds to ``sys.path`` is undone after the test."""
    monkeypatch.setattr(sys, "path", [str(BENCH), *sys.path])
    return importlib.import_module


@pytest.mark.parametrize("argv", [
    ["--baseline", "DIR"], ["--rounds", "2"], ["--skip-metrics"], ["--rationale-chars", "800"],
])  # fmt: skip
def test_eval_metrics_refuses_an_end_to_end_flag_without_end_to_end(bench_module, argv, capsys):
    """Without --end-to-end nothing reads these flags: `--baseline DIR` timed this checkout's metrics step alone and
    exited 0, as if DIR had been compared. Refused by argparse (exit 2) naming the flag, before the table is built."""
    with pytest.raises(SystemExit) as exit_:
        bench_module("eval_metrics").main(["--items", "50", *argv])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert f"{argv[0]}: only with --end-to-end" in err and "items:" not in out  # the table's line goes to stdout


@pytest.mark.parametrize("script, extra", [("eval_metrics", ["--end-to-end", "--items", "50"]), ("serve_start", [])])
def test_a_baseline_that_is_no_checkout_is_refused_before_the_bench_runs(bench_module, script, extra, tmp_path,
                                                                       capsys):  # fmt: skip
    """A mistyped --baseline ended, after the data or the tiny judge was built, in subprocess's FileNotFoundError
    traceback; a folder without the project's packages ran its first child before the refusal. Both are an argparse
    error now (exit 2) naming the folder and what it lacks."""
    for folder, why in ((tmp_path / "absent", "no such folder"), (tmp_path, "not a checkout of this project (no ")):
        with pytest.raises(SystemExit) as exit_:
            bench_module(script).main([*extra, "--baseline", str(folder)])
        assert exit_.value.code == 2
        assert f"--baseline {folder}: {why}" in capsys.readouterr().err


#: A stand-in for `judge-eval run`: it waits for a process of its own that spends ~0.6 CPU-s, then writes the rows.
CLIENT_WITH_A_CHILD = """
import subprocess, sys
spend = "import time\\nend = time.process_time() + 0.6\\nwhile time.process_time() < end: pass"
subprocess.run([sys.executable, "-c", spend], check=True)
open(sys.argv[1], "w").write("{}\\n" * int(sys.argv[2]))
"""


def test_eval_client_counts_the_cpu_of_what_the_client_waits_for(bench_module, monkeypatch, tmp_path):
    """The client's CPU is the command's and its reaped children's (getrusage once it ended): psutil samples of the
    process alone, taken every 0.1 s, see neither its children's CPU nor what it spends between samples."""
    eval_client = bench_module("eval_client")
    out = tmp_path / "run"
    out.mkdir()
    popen = subprocess.Popen

    def client(cmd, **kwargs):
        return popen([sys.executable, "-c", CLIENT_WITH_A_CHILD, str(out / "predictions.jsonl"), "4"], **kwargs)

    monkeypatch.setattr(eval_client.subprocess, "Popen", client)
    args = argparse.Namespace(concurrency=1, batch_size=1, backend="auto")
    result = eval_client.run_client(args, "http://127.0.0.1:9/v1", tmp_path / "data.jsonl", out, 4, tmp_path / "first")
    assert result["judged"] == 4 and result["cpu_s"] >= 0.6, result


class _StandInServer:
    """What eval_client's main asks of the instant server it starts."""

    def wait_ready(self, *args, **kwargs):
        return None

    def stop(self):
        return None


def _client_result(n_total: int) -> dict:
    """A `run_client` result of ``n_total`` items judged at once."""
    return {"wall_s": 1.0, "items_per_s": n_total, "steady_items_per_s": n_total, "cpu_s": 0.5,
            "peak_rss_mib": 100.0, "rss_mib_by_progress": {}, "first_request_s": 0.1, "judged": n_total}


def _stand_in(eval_client, monkeypatch, run_client) -> None:
    """eval_client's main with the server and the client standing in."""
    monkeypatch.setattr(eval_client.signal, "signal", lambda *args: None)  # main's SIGTERM handler: not this process's
    monkeypatch.setattr(eval_client, "start_process", lambda *args, **kwargs: _StandInServer())
    monkeypatch.setattr(eval_client, "run_client", run_client)


def test_eval_client_writes_its_out_file_into_a_folder_it_makes(bench_module, monkeypatch, tmp_path):
    """`--out runs/bench/eval_client.json` in a fresh clone (no runs/bench/) ended, after every round had run, in a
    FileNotFoundError traceback and no file; the folder is made, as the other benches' `--out` does. The server and
    the client stand in here: each run writes its rows at once."""
    eval_client = bench_module("eval_client")

    def run_client(args, url, data, out, n_total, first_file):
        out.mkdir(parents=True, exist_ok=True)
        (out / "predictions.jsonl").write_text("{}\n" * n_total, encoding="utf-8")
        return _client_result(n_total)

    _stand_in(eval_client, monkeypatch, run_client)
    out = tmp_path / "runs" / "bench" / "eval_client.json"
    assert eval_client.main(["--items", "32", "--rounds", "1", "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["summary"]["items_per_s"]["median"] == 32


def test_eval_client_removes_its_scratch_folder_when_a_round_fails(bench_module, monkeypatch, tmp_path):
    """The scratch folder (the data and every run's predictions, of the full test by default) was removed only when
    every round succeeded; a failed `judge-eval run` left it in the temporary folder. It goes whatever the rounds
    do, and the failure still ends the bench. The server and the client stand in; the client fails at once."""
    eval_client = bench_module("eval_client")
    stopped = []

    class Server:
        def wait_ready(self, *args, **kwargs):
            return None

        def stop(self):
            stopped.append(True)

    def run_client(args, url, data, out, n_total, first_file):
        assert data.exists()  # the scratch folder is there while the rounds run
        raise RuntimeError("judge-eval run exited 1")

    monkeypatch.setattr(eval_client.signal, "signal", lambda *args: None)  # main's SIGTERM handler: not this process's
    monkeypatch.setattr(eval_client, "start_process", lambda *args, **kwargs: Server())
    monkeypatch.setattr(eval_client, "run_client", run_client)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(RuntimeError, match="judge-eval run exited 1"):
        eval_client.main(["--items", "32", "--rounds", "1"])
    assert stopped == [True] and list((tmp_path / "tmp").iterdir()) == []


def test_serve_large_bodies_counts_a_large_body_that_got_no_answer(bench_module, monkeypatch):
    """A large body whose request failed (here: the first of four timed out) died with its thread and was left out:
    the arm reported `[400]`, as if every body had been refused. Each body is counted now, by its status or by the
    client error that ended it. The server and the HTTP client stand in."""
    import httpx

    large_bodies = bench_module("serve_large_bodies")
    timed_out = threading.Lock()

    class Response:
        def __init__(self, status_code: int):
            self.status_code = status_code

    def post(url, *, headers, json=None, content=None, timeout):
        if content is not None and timed_out.acquire(blocking=False):
            raise httpx.ReadTimeout("no answer")
        return Response(400 if content is not None else 200)

    class Server:
        pid = os.getpid()

        def poll(self):
            return None

        def kill(self):
            return None

        def wait(self):
            return 0

    monkeypatch.setattr(httpx, "get", lambda url, timeout: Response(200))
    monkeypatch.setattr(httpx, "post", post)
    monkeypatch.setattr(large_bodies.subprocess, "Popen", lambda *args, **kwargs: Server())
    result = large_bodies.one_arm("tiny-judge", unbounded=False, bodies=4, zeros=8)
    assert result["large_answers"] == {"400": 3, "ReadTimeout": 1}


def test_eval_metrics_times_the_metrics_with_blas_on_one_thread(bench_module, monkeypatch):
    """`judge-eval score` computes its metrics with BLAS on one thread (eval/scoring/score.py), and so does the
    bench's metrics step: on BLAS's default threads its CPU figure would also count OpenBLAS's helper thread spinning
    between the bootstraps' small products, CPU that score never spends."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from eval.scoring import item_table, metrics

    threads = []

    def spy(function):
        def called(*args, **kwargs):
            threads.append(max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"))
            return function(*args, **kwargs)
        return called

    monkeypatch.setattr(item_table, "evaluate", spy(item_table.evaluate))
    monkeypatch.setattr(metrics, "verdict_confidence_judge", spy(metrics.verdict_confidence_judge))
    # BLAS's default is one thread on a 1-core machine or under OPENBLAS_NUM_THREADS=1, where a bench without its
    # own limit would pass too: two threads around the run make the bench's limit the only way the spy sees one.
    with threadpool_limits(limits=2, user_api="blas"):
        assert {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"} == {2}
        assert bench_module("eval_metrics").main(["--items", "200", "--n-boot", "5", "--vc-repeats", "2"]) == 0
    assert len(threads) >= 2 and set(threads) == {1}, threads  # the bench's VC, and evaluate (which calls VC too)


def test_eval_metrics_limits_blas_by_scores_own_limit(bench_module, monkeypatch):
    """The bench's metrics step runs under ``eval.scoring.score.one_blas_thread``, the limit `judge-eval score` runs
    under, not a copy of it beside score's: the two cannot drift apart."""
    import contextlib

    from eval.scoring import score

    entered = []

    @contextlib.contextmanager
    def recording():
        entered.append(True)
        yield

    monkeypatch.setattr(score, "one_blas_thread", recording)
    assert bench_module("eval_metrics").main(["--items", "200", "--n-boot", "5", "--vc-repeats", "2"]) == 0
    assert entered == [True]


def test_eval_metrics_builds_its_command_line_parser_once(bench_module, monkeypatch, tmp_path):
    """`main` parses with one parser and refuses a --baseline that is no checkout with that same parser."""
    eval_metrics = bench_module("eval_metrics")
    built = []
    build_parser = eval_metrics.build_parser

    def counted():
        built.append(True)
        return build_parser()

    monkeypatch.setattr(eval_metrics, "build_parser", counted)
    with pytest.raises(SystemExit) as exit_:
        eval_metrics.main(["--end-to-end", "--items", "50", "--baseline", str(tmp_path)])
    assert exit_.value.code == 2 and len(built) == 1


class _StandInDriver:
    """What report_page.py asks of selenium's Chrome driver, answered at once: the page ready, its first page in 5 ms,
    one row shown, the item's detail open."""

    def __init__(self, **kwargs):
        self.profile = next(a.split("=", 1)[1] for a in kwargs["options"].arguments if a.startswith("--user-data-dir="))
        Path(self.profile, "Default").mkdir(parents=True, exist_ok=True)  # what Chromium writes there

    def set_page_load_timeout(self, seconds):
        return None

    def get(self, url):
        return None

    def execute_script(self, script):
        return "1" if "dataset.ready" in script else 5.0

    def find_elements(self, *locator):
        return [self]

    def find_element(self, *locator):
        return self

    text = "1 of 1 items match"

    def click(self):
        return None

    def save_screenshot(self, path):
        Path(path).write_bytes(b"png")

    def quit(self):
        return None


def test_report_page_leaves_no_folder_behind_without_out(bench_module, monkeypatch, tmp_path):
    """Without --out the run, the page (tens of MiB at the default size) and Chromium's profile stayed in the
    temporary folder after every run; they are removed at the end, and --out keeps the run, the page and a
    screenshot. Chromium stands in (the page is timed by tests/integration/browser)."""
    from selenium import webdriver

    monkeypatch.setattr(webdriver, "Chrome", _StandInDriver)
    # As on a machine without Chromium and chromedriver, which the stand-in replaces: the bench's check for them
    # (imported when main runs) is told they are there.
    monkeypatch.setattr("tests.support.browser.CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setattr("tests.support.browser.CHROMEDRIVER", str(tmp_path / "no-chromedriver"))
    monkeypatch.setattr("tests.support.browser.missing_browser", lambda: "")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    report_page = bench_module("report_page")
    assert report_page.main(["--items", "60", "--repeats", "1"]) == 0
    assert list((tmp_path / "tmp").iterdir()) == []
    kept = tmp_path / "kept"
    assert report_page.main(["--items", "60", "--repeats", "1", "--out", str(kept)]) == 0
    assert {"report.html", "report-page-bench.png"} <= {p.name for p in kept.iterdir()}
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize(("text_items", "items", "said"), [
    (5000, 160_000, "texts embedded for at most 5000 of the 160000 items"),
    (5000, 500, "texts embedded for at most 500 of the 500 items"),
    (-1, 40_000, "texts embedded for at most 40000 of the 40000 items"),
    (0, 500, "no texts embedded"),
])  # fmt: skip
def test_report_page_says_how_many_items_could_have_texts(bench_module, text_items, items, said):
    """The page line printed the --text-items asked for as the items with texts: '(5000 items with texts)' for a run
    of 500 items, '(-1 items with texts)' for the docstring's every-text example. It says the most the page can embed
    (the page's byte budget may stop sooner)."""
    assert bench_module("report_page").texts_said(text_items, items) == said


def test_engine_hop_says_so_when_its_stand_in_engine_never_answers(bench_module, monkeypatch, capsys):
    """The stand-in engine is polled 100 times; when none answered, the bench went on to its rounds and failed in
    them with aiohttp's connection error as a traceback. It stops saying what did not answer (a server that exits at
    once stands in for one that cannot listen; the polls do not wait here)."""
    engine_hop = bench_module("engine_hop")
    popen = subprocess.Popen
    monkeypatch.setattr(engine_hop.subprocess, "Popen",
                        lambda cmd, **kwargs: popen([sys.executable, "-c", "import sys; sys.stdin.read()"], **kwargs))
    monkeypatch.setattr(engine_hop.time, "sleep", lambda seconds: None)
    with pytest.raises(SystemExit) as exit_:
        engine_hop.main(["--requests", "10", "--rounds", "1"])
    assert "the stand-in engine" in str(exit_.value.code) and "did not answer" in str(exit_.value.code)


def test_engine_hop_bounds_each_poll_of_a_stand_in_that_listens_but_never_answers(bench_module, monkeypatch):
    """A stand-in engine that accepts the connection but never answers was polled with httpx's default timeout, each
    poll's read timing out on its own: the bench's message spoke of 10 s where the polls took far longer. Each
    poll now has its own bound and the message counts the polls. httpx's post stands in, timing out every time."""
    import httpx

    engine_hop = bench_module("engine_hop")
    popen = subprocess.Popen
    monkeypatch.setattr(engine_hop.subprocess, "Popen",
                        lambda cmd, **kwargs: popen([sys.executable, "-c", "import sys; sys.stdin.read()"], **kwargs))
    monkeypatch.setattr(engine_hop.time, "sleep", lambda seconds: None)
    timeouts = []

    def post(url, **kwargs):
        timeouts.append(kwargs.get("timeout", "httpx's default"))
        raise httpx.ReadTimeout("timed out")

    monkeypatch.setattr(engine_hop.httpx, "post", post)
    with pytest.raises(SystemExit) as exit_:
        engine_hop.main(["--requests", "10", "--rounds", "1"])
    assert len(timeouts) == 100 and set(timeouts) == {1.0}, timeouts[:3]
    assert "did not answer any of 100 polls" in str(exit_.value.code)


def test_rewards_reports_an_error_answered_as_text(bench_module):
    """An answer other than 200 is the bench's error naming the status and the server's words, whatever their
    content type: the body was decoded as JSON first, so a text answer (a proxy's 502, a plain 500) ended in
    aiohttp's ContentTypeError traceback instead."""
    import asyncio

    import aiohttp
    from aiohttp import web

    rewards = bench_module("rewards")

    async def bad_gateway(request):
        return web.Response(status=502, text="bad gateway")

    async def scenario() -> str:
        app = web.Application()
        app.router.add_post("/get_reward/key", bad_gateway)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with aiohttp.ClientSession() as session:
                with pytest.raises(RuntimeError) as error:
                    await rewards.post(session, f"http://127.0.0.1:{port}/get_reward/key", {"query": []})
            return str(error.value)
        finally:
            await runner.cleanup()

    said = asyncio.run(scenario())
    assert "answered 502" in said and "bad gateway" in said


def test_eval_metrics_end_to_end_stops_where_judge_eval_score_refuses(bench_module):
    """The child reports the command's exit code in its JSON line; a refused `judge-eval score` (here `--n-boot 5`,
    below its floor of 10) printed round figures timing the refusal, 'exit 2' among them, and went on. It stops now,
    with the command's own error."""
    eval_metrics = bench_module("eval_metrics")
    with pytest.raises(SystemExit) as exit_:
        eval_metrics.end_to_end(eval_metrics.synthetic_table(40), n_boot=5, rounds=1)
    message = str(exit_.value.code)
    assert message.startswith("round 1 this checkout: judge-eval score exited 2:")
    assert "--n-boot: must be 0 (no intervals) or at least 10" in message


def test_eval_client_resumes_a_half_run_that_judge_eval_run_accepts(bench_module, monkeypatch, tmp_path):
    """Each round's resumed run was given a folder holding the fresh run's first half of predictions.jsonl but not its
    run_key.json: `judge-eval run` refuses such a folder ("holds progress files but no run_key.json"), so the bench
    ended at its first round's resume. The client stands in, claiming its folder by the run's own rule."""
    eval_client = bench_module("eval_client")
    from eval.judging.run import PROGRESS_FILES
    from judge.plumbing.run_folder import claim_run_folder

    resumed = []

    def run_client(args, url, data, out, n_total, first_file):
        resumed.append(claim_run_folder(out, {"judge": "<url>", "data": str(data)}, PROGRESS_FILES))
        with (out / "predictions.jsonl").open("a", encoding="utf-8") as rows:
            rows.write("{}\n" * n_total)
        return _client_result(n_total)

    _stand_in(eval_client, monkeypatch, run_client)
    assert eval_client.main(["--items", "32", "--rounds", "1"]) == 0
    assert resumed == [False, True]  # the fresh run, then the half it left, resumed
