"""Is `judge-eval run`'s own client ever the bottleneck? Drive it over POLLUX-shaped items against an instant server.

    .venv/bin/python bench/eval_client.py                          # 160,000 items via /v1/judge, 2 rounds
    .venv/bin/python bench/eval_client.py --items 20000 --backend chat --rounds 1   # example override

Workload: ``--items`` records, ``--criteria`` (16, as POLLUX judges one answer on ~16 criteria) per distinct
(instruction, answer) of ~``--answer-chars`` characters, written as JSONL. The server is local and scripted
(``instant_server`` below, in its own process so its CPU is not the client's): it answers ``/v1/judge`` with a parsed
verdict per criterion and ``/v1/chat/completions`` with one verdict, at once. ``judge-eval run`` runs as a child
process (``python -m eval.cli run``, the backend found by its own probe unless ``--backend``), ``--concurrency``
requests in flight, ``--batch-size`` criteria per ``/v1/judge`` request.

Each round runs, back to back: a fresh run over all items, then a resumed run over a folder whose
``predictions.jsonl`` already holds the first half of the fresh run's rows. Reported, median with min-max over
rounds (``bench/measure.py``): items/s (items judged / wall time of the whole command, start-up and data loading
included), the client's CPU-seconds (user + system of the command and of any process it waits for, read by
``resource.getrusage(RUSAGE_CHILDREN)`` once it has ended) and peak resident memory (sampled every 0.1 s),
the resident memory when 25 / 50 / 75 / 100 % of the items are written (flat = memory does not grow with the items
done), and for the resumed run its wall time and the seconds before its first request (reading what is done).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from measure import children_cpu_s, fmt, machine, machine_line, positive_int, spreads  # noqa: E402

from judge.plumbing.processes import free_port, start_process  # noqa: E402

VERDICT = "[FEEDBACK] Ответ выполняет требования критерия. [RESULT] 1 [END]"
#: Every record's rubric: the scale 0..2 of most POLLUX criteria, which the instant server's verdicts are given on.
RUBRICS = "0: Критерий не выполнен.\n\n1: Выполнен частично.\n\n2: Выполнен полностью."


def instant_server(port: int, first_request_file: str) -> None:
    """A scripted OpenAI-compatible + /v1/judge server answering at once (uvicorn, raw ASGI: no framework cost)."""
    import uvicorn

    models = json.dumps({"object": "list", "data": [{"id": "instant", "object": "model", "max_model_len": 32768}]}).encode()

    from judge.scales import scale_of
    from judge.wire import JudgeResult, ScoreSource

    # What judge-serve sends (the typed wire result judge-eval reads strictly) for a criterion of RUBRICS, on its
    # scale, built once; each result renames it.
    levels = list(scale_of(RUBRICS).levels)
    parsed = JudgeResult(criterion="", criterion_id=None, scale=levels, feedback="Ответ выполняет требования критерия.",
                         score=1.0, parse_ok=True, score_source=ScoreSource.VERDICT, in_scale=True, output=VERDICT,
                         expected_score=1.0, confidence=1.0,
                         score_probs={str(level): float(level == 1) for level in levels}).to_json()  # fmt: skip

    def result(criterion: dict) -> dict:
        return {**parsed, "criterion": criterion.get("name")}

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        status, payload = 404, b'{"detail": "Not Found"}'
        if scope["method"] == "GET" and path == "/v1/models":
            status, payload = 200, models
        elif path == "/v1/judge":
            request = json.loads(body or b"{}")
            if not request.get("items"):
                status, payload = 400, b'{"error": {"message": "items: required"}}'  # what judge-serve says to the probe
            else:
                items = [{"index": i, "id": item.get("id"), "results": [result(c) for c in item["criteria"]]}
                         for i, item in enumerate(request["items"])]  # fmt: skip
                n = sum(len(item["results"]) for item in items)  # the full envelope: eval reads judge.wire.JudgeResponse
                envelope = {"id": "judge-bench", "object": "judge.result", "created": 0, "model": "instant",
                            "judge_kind": "seq2seq", "verdict_format": "tagged", "prompt_version": "pollux-ru-v2",
                            "items": items, "usage": {"judgments": n, "parsed": n, "prompt_tokens": 0,
                                                      "completion_tokens": 0, "total_tokens": 0}}  # fmt: skip
                status, payload = 200, json.dumps(envelope, ensure_ascii=False).encode()
        elif path == "/v1/chat/completions":
            status = 200
            payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "instant", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}, ensure_ascii=False).encode()  # fmt: skip
        if status == 200 and scope["method"] == "POST" and not os.path.exists(first_request_file):
            Path(first_request_file).write_text(repr(time.time()))  # the bench deletes it before each run
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def write_data(path: Path, n_items: int, criteria: int, answer_chars: int) -> None:
    """POLLUX-shaped records: each distinct answer judged on ``criteria`` criteria, the taxonomy's first criteria
    scored on 0..2 (best at 2: no Critical flag) under distinct names, each with the rubric ``RUBRICS``."""
    import judge

    scale = judge.scale_of(RUBRICS)
    names = list(dict.fromkeys(c.name["ru"] for c in judge.load_taxonomy().criteria.values() if c.scale == scale))
    names = names[:criteria]
    filler = ("Ответ модели подробно разбирает задачу, приводит примеры и делает выводы. " * 200)[:answer_chars]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n_items):
            a, c = divmod(i, criteria)
            handle.write(json.dumps({
                "id": f"item-{i}", "instruction": f"Задание {a}: объясни, как устроен мир.", "answer": f"{a}. {filler}",
                "criteria_name": names[c % len(names)], "rubrics": RUBRICS, "model_id": f"model-{a % 11}",
                "task_type": "Recommendations", "expert_scores": [1, 2, 1],
            }, ensure_ascii=False) + "\n")  # fmt: skip


def half_done(out: Path, half: Path, n_rows: int) -> Path:
    """``half``, made afresh: the run folder ``out`` as an interrupted run would have left it, its first ``n_rows``
    predictions and its ``run_key.json`` (without the key `judge-eval run` refuses to resume the rows)."""
    shutil.rmtree(half, ignore_errors=True)
    half.mkdir()
    if (out / "run_key.json").exists():  # every `judge-eval run` writes it; a stand-in client may not
        shutil.copyfile(out / "run_key.json", half / "run_key.json")
    with (out / "predictions.jsonl").open(encoding="utf-8") as src, \
            (half / "predictions.jsonl").open("w", encoding="utf-8") as dst:
        for k, line in enumerate(src):
            if k >= n_rows:
                break
            dst.write(line)
    return half


def run_client(args, url: str, data: Path, out: Path, n_total: int, first_file: Path) -> dict[str, float]:
    """One `judge-eval run` child: wall, CPU, peak RSS, RSS by progress, seconds to its first request."""
    first_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "eval.cli", "run", "--judge", url, "--data", str(data), "--out", str(out),
           "--concurrency", str(args.concurrency), "--batch-size", str(args.batch_size), "--no-progress"]  # fmt: skip
    if args.backend != "auto":
        cmd += ["--backend", args.backend]
    predictions = out / "predictions.jsonl"
    done_before = sum(1 for _ in predictions.open("rb")) if predictions.exists() else 0
    started = time.time()  # the epoch clock, as the server stamps the first request
    wall_started = time.perf_counter()
    children = children_cpu_s()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ps = psutil.Process(proc.pid)
    peak, by_progress = 0, {}
    marks = [0.25, 0.5, 0.75, 1.0]
    seen_bytes, done_rows, at = 0, 0, {}
    while proc.poll() is None:
        try:
            rss = ps.memory_info().rss
        except psutil.NoSuchProcess:
            break
        peak = max(peak, rss)
        if marks and predictions.exists():
            with predictions.open("rb") as handle:  # only the bytes written since the last look
                handle.seek(seen_bytes)
                chunk = handle.read()
            seen_bytes += len(chunk)
            done_rows += chunk.count(b"\n")
            while marks and done_rows >= marks[0] * n_total:
                mark = f"{int(marks.pop(0) * 100)}%"
                by_progress[mark], at[mark] = rss / 2**20, time.time()
        time.sleep(0.1)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.wait()
    wall = time.perf_counter() - wall_started
    # Reaped, the command's CPU is whole: its last moments and whatever it waited for, which a sample would miss.
    cpu = children_cpu_s() - children
    if proc.returncode != 0:
        raise RuntimeError(f"judge-eval run exited {proc.returncode}:\n{stderr[-3000:]}")
    first = float(first_file.read_text()) - started if first_file.exists() else float("nan")
    rows = _rows_fast(predictions)
    if rows != n_total:
        raise RuntimeError(f"{predictions}: {rows} rows, expected {n_total}")
    judged = n_total - done_before
    # The sustained rate, start-up and data loading left out: rows written from the 25 % to the 100 % mark.
    steady = 0.75 * n_total / (at["100%"] - at["25%"]) if done_before == 0 and {"25%", "100%"} <= set(at) and at["100%"] > at["25%"] else float("nan")
    return {"wall_s": wall, "items_per_s": judged / wall, "steady_items_per_s": steady, "cpu_s": cpu, "peak_rss_mib": peak / 2**20,
            "rss_mib_by_progress": by_progress, "first_request_s": first, "judged": judged}  # fmt: skip


def _rows_fast(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def main(argv=None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--items", type=int, default=160_000, help="Records to judge (the full POLLUX test: ~160,000).")
    p.add_argument("--criteria", type=int, default=16, help="Criteria per distinct answer.")
    p.add_argument("--answer-chars", type=int, default=1500, help="Characters per answer.")
    p.add_argument("--backend", choices=["auto", "judge-serve", "chat"], default="auto")
    p.add_argument("--concurrency", type=int, default=8, help="judge-eval run --concurrency.")
    p.add_argument("--batch-size", type=int, default=16, help="judge-eval run --batch-size.")
    p.add_argument("--rounds", type=positive_int, default=2, help="Rounds of (fresh run, resumed run).")
    p.add_argument("--out", default="", help="JSON results file.")
    args = p.parse_args(argv)
    # A timeout's SIGTERM unwinds through the finally blocks, which stop the servers this bench started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    start_machine = machine()
    print(machine_line(start_machine), flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-eval-client-"))
    try:  # the scratch folder (the data, every run's predictions) goes whether or not the rounds succeed
        data = scratch / "data.jsonl"
        write_data(data, args.items, args.criteria, args.answer_chars)
        port = free_port()
        first_file = scratch / "first-request"
        server = start_process([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO / 'bench')!r}); "
                                f"import eval_client; eval_client.instant_server({port}, {str(first_file)!r})"],
                               log_path=scratch / "instant-server.log", cwd=REPO, name="instant server")  # fmt: skip
        url = f"http://127.0.0.1:{port}/v1"
        try:
            server.wait_ready(url + "/models", 60, interval_s=0.2)
            fresh, resumed = [], []
            for r in range(args.rounds):
                out = scratch / f"run-{r}"
                shutil.rmtree(out, ignore_errors=True)
                result = run_client(args, url, data, out, args.items, first_file)
                fresh.append(result)
                half = half_done(out, scratch / f"resume-{r}", args.items // 2)
                resumed.append(run_client(args, url, data, half, args.items, first_file))
                print(f"  round {r + 1}: fresh {result['items_per_s']:.0f} items/s, {result['steady_items_per_s']:.0f} from 25 to "
                      f"100 % ({result['wall_s']:.1f} s, CPU "
                      f"{result['cpu_s']:.1f} s, peak {result['peak_rss_mib']:.0f} MiB, RSS by progress "
                      f"{ {k: round(v) for k, v in result['rss_mib_by_progress'].items()} }); resumed half: "
                      f"{resumed[-1]['wall_s']:.1f} s, first request after {resumed[-1]['first_request_s']:.1f} s "
                      f"(fresh: {result['first_request_s']:.1f} s), peak {resumed[-1]['peak_rss_mib']:.0f} MiB", flush=True)
        finally:
            server.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    end_machine = machine()
    summary = spreads(fresh, {
        "items_per_s": lambda r: r["items_per_s"],
        "steady_items_per_s": lambda r: r["steady_items_per_s"],
        "items_per_client_cpu_s": lambda r: r["judged"] / r["cpu_s"],
        "client_cpu_s": lambda r: r["cpu_s"],
        "client_cpu_ms_per_item": lambda r: 1000 * r["cpu_s"] / r["judged"],
        "peak_rss_mib": lambda r: r["peak_rss_mib"],
        "first_request_s": lambda r: r["first_request_s"],
    }) | spreads(resumed, {
        "resumed_wall_s": lambda r: r["wall_s"],
        "resumed_first_request_s": lambda r: r["first_request_s"],
        "resumed_peak_rss_mib": lambda r: r["peak_rss_mib"],
    })  # fmt: skip
    print(f"\n== judge-eval run against an instant server: {args.items:,} items, backend {args.backend}, "
          f"concurrency {args.concurrency}, batch {args.batch_size} ==")
    print(f"items/s (whole command)    {fmt(summary['items_per_s'], digits=0)}")
    print(f"items/s (25 % -> 100 %)    {fmt(summary['steady_items_per_s'], digits=0)}")
    print(f"items per client CPU-s     {fmt(summary['items_per_client_cpu_s'], digits=0)}")
    print(f"client CPU per item        {fmt(summary['client_cpu_ms_per_item'], digits=3)} ms")
    print(f"client peak RSS            {fmt(summary['peak_rss_mib'], digits=0)} MiB")
    print(f"first request after        {fmt(summary['first_request_s'], digits=1)} s (fresh), "
          f"{fmt(summary['resumed_first_request_s'], digits=1)} s (resumed at 50 %)")
    print(f"resumed half: wall         {fmt(summary['resumed_wall_s'], digits=1)} s, peak RSS "
          f"{fmt(summary['resumed_peak_rss_mib'], digits=0)} MiB")
    print(f"load average: {start_machine['load_1m']} at start, {end_machine['load_1m']} at end")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"machine_start": start_machine, "machine_end": end_machine,
                                              "fresh": fresh, "resumed": resumed, "summary": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
