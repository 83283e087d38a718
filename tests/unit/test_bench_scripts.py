"""The bench scripts as a reader meets them: `--help` answers (and measures nothing), the commands their docstrings
show run the bench itself, and the command a docstring marks as the doc's is the one docs/performance.md gives."""

from __future__ import annotations

import argparse
import ast
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

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"


def _scripts() -> list[Path]:
    """Every bench file that runs as a script (measure.py is the benches' shared library, not one)."""
    return sorted(p for p in BENCH.glob("*.py") if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8"))


def _docstring_commands(path: Path) -> list[str]:
    """The docstring's indented lines that run a bench script (its usage examples)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return [line.strip() for line in doc.splitlines() if line.startswith("    ") and re.search(r"bench/\w+\.py", line)]


def test_every_bench_script_answers_help_without_measuring():
    """`python bench/X.py --help` prints a usage and exits 0 for every script: jobs_memory.py took no arguments and
    ran the whole measurement, suite_cpu.py read `--help` as its rows file and died on FileNotFoundError."""
    failures = []
    for script in _scripts():
        done = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        if done.returncode != 0 or not done.stdout.startswith("usage:"):
            failures.append(f"{script.name}: exit {done.returncode}, {(done.stdout + done.stderr)[:200]!r}")
    assert failures == []


def test_the_bench_scripts_are_found():
    """The loop above covers the scripts by their main guard; these two of the fixed ones are among them."""
    names = {p.name for p in _scripts()}
    assert {"jobs_memory.py", "suite_cpu.py", "rewards.py", "eval_metrics.py"} <= names and "measure.py" not in names


def test_docstring_commands_run_the_bench_itself():
    """A usage line starts with the interpreter (environment variables before it allowed), not with a wrapper of
    one machine's habits such as a lock file: rewards.py's first example was `flock /tmp/heavy.lock ...`."""
    starts = re.compile(r"^(\w+=\S*\s+)*(\.venv/bin/)?python\b")
    wrong = [f"{p.name}: {c}" for p in _scripts() for c in _docstring_commands(p) if not starts.match(c)]
    assert wrong == []


def test_a_command_marked_for_the_doc_is_the_docs_command():
    """eval_metrics.py marks its `--baseline` command `# performance.md`; the doc's command (its DIR a path there)
    is the same but for the interpreter's path: it read `--rounds 4` where the doc ran `--rounds 3`."""
    doc = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    marked = [(p.name, c.split("#")[0].strip()) for p in _scripts() for c in _docstring_commands(p)
              if c.endswith("# performance.md")]  # fmt: skip
    assert ("eval_metrics.py", ".venv/bin/python bench/eval_metrics.py --end-to-end --rounds 3 --skip-metrics "
            "--baseline DIR") in marked
    for name, command in marked:
        pattern = re.escape(command.removeprefix(".venv/bin/")).replace("DIR", r"\S+")
        assert re.search(pattern, doc), f"{name}: {command!r} is not docs/performance.md's"


#: A bench command in a code span of a doc: the script, then its arguments up to the end of the span or a shell
#: separator (`for i in 1 2 3; do python bench/serve.py overhead; done`).
DOC_COMMAND = re.compile(r"(?:^|[\s;])(?:python\s+)?bench/(\w+)\.py((?:\s+[^\s;|&]+)*)")

#: Run in a fresh interpreter: parse each command's arguments with its script's own parser and measure nothing. A
#: script's module-level `parse_args` (which may check more after argparse) is called as it is; otherwise `main` runs
#: with argparse's `parse_args` stopping right after a successful parse, before any bench work.
PARSE_ONLY = """
import argparse, contextlib, inspect, io, json, runpy, sys
commands = json.load(sys.stdin)
sys.path.insert(0, sys.argv[1])
class Parsed(Exception):
    pass
parse = argparse.ArgumentParser.parse_args
def parse_then_stop(self, args=None, namespace=None):
    parse(self, args, namespace)
    raise Parsed
failures = []
for script, argv in commands:
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            names = runpy.run_path(script, run_name="bench_parse_only")
            sys.argv = [script, *argv]
            if callable(names.get("parse_args")):
                names["parse_args"](argv)
            else:
                argparse.ArgumentParser.parse_args = parse_then_stop
                try:
                    names["main"](argv) if inspect.signature(names["main"]).parameters else names["main"]()
                finally:
                    argparse.ArgumentParser.parse_args = parse
    except Parsed:
        pass
    except SystemExit as exit_:
        failures.append(f"{' '.join([script, *argv])}: exit {exit_.code}: {said.getvalue().strip()[-300:]}")
print(json.dumps(failures))
"""


def doc_commands(text: str) -> list[tuple[str, list[str]]]:
    """(script name, arguments) of every bench command in the text's code spans, `python` before it or not."""
    return [(name, args.split()) for span in re.findall(r"`([^`]+)`", text)
            for name, args in DOC_COMMAND.findall(span)]  # fmt: skip


def unparsed(commands: list[tuple[str, list[str]]]) -> list[str]:
    """The commands whose script is not a runnable bench script or whose parser refuses their arguments."""
    runnable = {p.stem for p in _scripts()}
    missing = [f"bench/{name}.py: no such bench script" for name, _ in commands if name not in runnable]
    batch = [[str(BENCH / f"{name}.py"), args] for name, args in commands if name in runnable]
    done = subprocess.run([sys.executable, "-c", PARSE_ONLY, str(BENCH)], input=json.dumps(batch), cwd=REPO,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return missing + json.loads(done.stdout.splitlines()[-1])


def test_every_command_of_the_performance_doc_parses():
    """Each `python bench/X.py ...` docs/performance.md gives for a figure names a bench script whose parser takes
    those arguments as written (a renamed or dropped flag, a wrong positional): the command a reader copies runs."""
    commands = doc_commands((REPO / "docs" / "performance.md").read_text(encoding="utf-8"))
    assert len(commands) >= 30 and ("dedup", ["--sizes", "1000", "--embedder", "minilm", "--reference-per-type",
                                              "10"]) in commands  # fmt: skip
    assert unparsed([(name, args) for name, args in commands if name != "measure"]) == []


def test_the_command_check_catches_a_wrong_command():
    """By hand: a flag the script does not have, an abbreviated one, a value outside its choices, a missing
    positional and a script that is not there are each refused; the right commands and a shell loop's are not."""
    text = ("`for i in 1 2 3; do python bench/serve.py overhead; done`, `python bench/dedup.py --sizes 10 "
            "--embedder hashed`, `bench/suite_cpu.py F --top 3`, `python bench/dedup.py --size 10`, "
            "`python bench/dedup.py --embed hashed`, `python bench/serve.py tokens`, `python bench/suite_cpu.py`, "
            "`python bench/nowhere.py --rounds 2`")
    commands = doc_commands(text)
    assert commands[:3] == [("serve", ["overhead"]), ("dedup", ["--sizes", "10", "--embedder", "hashed"]),
                            ("suite_cpu", ["F", "--top", "3"])]  # fmt: skip
    refused = unparsed(commands)
    assert len(refused) == 5 and refused[0] == "bench/nowhere.py: no such bench script"
    assert [r.split(":")[0].rsplit("/", 1)[-1] for r in refused[1:]] == [
        "dedup.py --size 10", "dedup.py --embed hashed", "serve.py tokens", "suite_cpu.py"]
    assert all(": exit 2: " in r for r in refused[1:]) and "unrecognized arguments: --size" in refused[1]


def test_every_bench_script_is_cited_by_a_doc():
    """A bench script is the command of a row of docs/performance.md or of the development log (measure.py, the
    benches' shared library, is named there as such): a script no doc cites measures nothing anyone reads."""
    docs = "".join((REPO / "docs" / name).read_text(encoding="utf-8") for name in ("performance.md", "dev-log.md"))
    assert [p.name for p in _scripts() if f"bench/{p.name}" not in docs] == []
    assert "`bench/measure.py`" in docs


@pytest.fixture
def suite_cpu(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # suite_cpu imports the benches' `measure` as the pytest plugin does
    return importlib.import_module("suite_cpu")


def _row(**changes) -> dict:
    row = {"id": "tests/unit/test_a.py::test_one", "cpu_s": 1.5, "wall_s": 2.0, "worker": "main", "start": 10.0,
           "end": 12.0, "busy_at_start": 100.0, "cores": 2}  # fmt: skip
    return {**row, **changes}


def test_suite_cpu_names_the_file_and_line_of_a_bad_row(suite_cpu, tmp_path, capsys):
    """Exit 1 with one line naming the file and the line: a truncated JSON line (an interrupted run's last write)
    and a row without the plugin's fields; exit 2 (argparse) without a file."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(_row()) + "\n\n" + '{"id": "t::x", "cpu_s"\n', encoding="utf-8")
    assert suite_cpu.main([str(rows)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"suite_cpu.py: {rows}:3: invalid JSON (") and "\n" not in err

    rows.write_text(json.dumps(_row()) + "\n" + json.dumps({"id": "t::x", "cpu_s": 1.0}) + "\n", encoding="utf-8")
    assert suite_cpu.main([str(rows)]) == 1
    assert capsys.readouterr().err.strip() == (f"suite_cpu.py: {rows}:2: no 'wall_s', 'worker', 'start', 'end', "
                                               "'busy_at_start', 'cores' (not a row of this plugin)")

    assert suite_cpu.main([str(tmp_path / "absent.jsonl")]) == 1
    assert capsys.readouterr().err.startswith(f"suite_cpu.py: {tmp_path / 'absent.jsonl'}: cannot read (")
    with pytest.raises(SystemExit) as exit_:
        suite_cpu.main([])
    assert exit_.value.code == 2


def test_suite_cpu_summarises_good_rows(suite_cpu, tmp_path, capsys):
    """Two tests of one file in one process: 1.5 + 0.5 = 2.0 CPU-s over 2.0 + 2.0 = 4.0 s of wall, 0.50 cores busy,
    a floor of 2.0 / 2 = 1 s on 2 cores; `--top 1` lists one test, the costlier."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(_row()) + "\n" + json.dumps(_row(id="tests/unit/test_a.py::test_two", cpu_s=0.5))
                    + "\n", encoding="utf-8")  # fmt: skip
    assert suite_cpu.main([str(rows), "--top", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 tests: 2 CPU-s in 4 s of wall (0.50 cores busy on average); floor on 2 cores: 1 s"
    assert out[-1].split() == ["1.5", "2.0", "tests/unit/test_a.py::test_one"]


def test_suite_cpu_floor_divides_by_the_rows_cores(suite_cpu, tmp_path, capsys):
    """One process on 4 cores, 8 CPU-s in 2 s of wall: the floor is 8 / 4 = 2 s on 4 cores. It was printed as 8 / 2 =
    4 s "on 2 cores" whatever the rows said, a floor above the wall time the run took."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(_row(cpu_s=8.0, cores=4)) + "\n", encoding="utf-8")
    assert suite_cpu.main([str(rows)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == ("1 tests: 8 CPU-s in 2 s of wall (4.00 cores busy on average); "
                                                       "floor on 4 cores: 2 s")


#: The serving and client benches whose machine line docs/performance.md's header promises "at start and end",
#: but supervisor_start, which the test after this one runs. These are read, not run: constrained_judging and
#: engine_start start a vLLM engine; serve_start, serve_tokenize, serve_tokenizer_load and verdict_regex_compile
#: need none but build and load the 151k-token Qwen tokenizer (serve_start judge-serve's whole stack too) even at
#: ``--rounds 1``, a cost of the slow tier's kind, not the unit tier's.
MACHINE_AT_BOTH_ENDS = ("constrained_judging", "engine_start", "serve_start", "serve_tokenize", "serve_tokenizer_load",
                        "verdict_regex_compile")


@pytest.mark.parametrize("name", MACHINE_AT_BOTH_ENDS)
def test_a_serving_bench_prints_the_machine_before_and_after_its_rounds(name):
    """The load average read once says nothing of a load that came or went during the rounds: ``main`` prints
    ``machine_line`` before its rounds' loop (its first) and again after it."""
    tree = ast.parse((BENCH / f"{name}.py").read_text(encoding="utf-8"))
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
    said = [node.lineno for node in ast.walk(main) if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "machine_line"]
    rounds = min((node for node in ast.walk(main) if isinstance(node, (ast.For, ast.While))),
                 key=lambda node: node.lineno)
    assert said, name
    assert min(said) < rounds.lineno, f"{name}: no machine line before the rounds"
    assert max(said) > rounds.end_lineno, f"{name}: no machine line after the rounds"


def test_a_bench_run_opens_and_closes_with_the_machine_line():
    """supervisor_start.py runs whole at ``--rounds 1`` for the cost of an interpreter start or two (``/bin/true``
    bare and supervised: no engine, no model): what it prints begins with the machine line and ends with it, its
    rounds' figures between."""
    done = subprocess.run([sys.executable, str(BENCH / "supervisor_start.py"), "--rounds", "1"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) > 2, lines
    assert lines[0].startswith("machine: ") and lines[-1].startswith("machine: "), lines
    assert not any(line.startswith("machine: ") for line in lines[1:-1]), lines  # the figures are between them


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
    err = capsys.readouterr().err
    assert f"{argv[0]}: only with --end-to-end" in err and "items:" not in err


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
    process alone, taken every 0.1 s, gave ~0.02 CPU-s here (its interpreter's start) where 0.6 were spent."""
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


def test_eval_client_writes_its_out_file_into_a_folder_it_makes(bench_module, monkeypatch, tmp_path):
    """`--out runs/bench/eval_client.json` in a fresh clone (no runs/bench/) ended, after every round had run, in a
    FileNotFoundError traceback and no file; the folder is made, as the other benches' `--out` does. The server and
    the client stand in here: each run writes its rows at once."""
    eval_client = bench_module("eval_client")

    class Server:
        def wait_ready(self, *args, **kwargs):
            return None

        def stop(self):
            return None

    def run_client(args, url, data, out, n_total, first_file):
        out.mkdir(parents=True, exist_ok=True)
        (out / "predictions.jsonl").write_text("{}\n" * n_total, encoding="utf-8")
        return {"wall_s": 1.0, "items_per_s": n_total, "steady_items_per_s": n_total, "cpu_s": 0.5,
                "peak_rss_mib": 100.0, "rss_mib_by_progress": {}, "first_request_s": 0.1, "judged": n_total}

    monkeypatch.setattr(eval_client.signal, "signal", lambda *args: None)  # main's SIGTERM handler: not this process's
    monkeypatch.setattr(eval_client, "start_process", lambda *args, **kwargs: Server())
    monkeypatch.setattr(eval_client, "run_client", run_client)
    out = tmp_path / "runs" / "bench" / "eval_client.json"
    assert eval_client.main(["--items", "32", "--rounds", "1", "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["summary"]["items_per_s"]["median"] == 32


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


def test_zero_rounds_are_refused_while_parsing():
    """`--rounds 0` (or `--repeats 0`) measured nothing and then failed on the summary's empty median, as a traceback
    (IndexError in supervisor_start.py, UnboundLocalError in pollux_matrix.py) after the bench's set-up, which for
    engine_start.py is an engine start: each script refuses it while parsing (exit 2)."""
    counted = [(path.stem, flag) for path in _scripts() for flag in ("--rounds", "--repeats")
               if f'"{flag}", type=' in path.read_text(encoding="utf-8")]  # fmt: skip
    assert {"supervisor_start", "pollux_matrix", "engine_start", "report_page", "serve"} <= {n for n, _ in counted}
    before = {"serve": ["overhead"], "eval_metrics": ["--end-to-end"]}
    commands = [(name, [*before.get(name, []), flag, "0"]) for name, flag in counted]
    refused = unparsed(commands)
    assert len(refused) == len(commands), refused
    assert all(": exit 2: " in r and "give at least 1" in r for r in refused), refused


def test_eval_metrics_times_the_metrics_with_blas_on_one_thread(bench_module, monkeypatch):
    """`judge-eval score` computes its metrics with BLAS on one thread (eval/scoring/score.py); the bench's metrics
    step ran them on BLAS's default threads, so its CPU figure also counted OpenBLAS's helper thread spinning between
    the bootstraps' small products, CPU that score never spends. The step now runs as score runs it."""
    from threadpoolctl import threadpool_info

    from eval.scoring import item_table, metrics

    threads = []

    def spy(function):
        def called(*args, **kwargs):
            threads.append(max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"))
            return function(*args, **kwargs)
        return called

    monkeypatch.setattr(item_table, "evaluate", spy(item_table.evaluate))
    monkeypatch.setattr(metrics, "verdict_confidence_judge", spy(metrics.verdict_confidence_judge))
    assert bench_module("eval_metrics").main(["--items", "200", "--n-boot", "5", "--vc-repeats", "2"]) == 0
    assert len(threads) >= 2 and set(threads) == {1}, threads  # the bench's VC, and evaluate (which calls VC too)


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
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    report_page = bench_module("report_page")
    assert report_page.main(["--items", "60", "--repeats", "1"]) == 0
    assert list((tmp_path / "tmp").iterdir()) == []
    kept = tmp_path / "kept"
    assert report_page.main(["--items", "60", "--repeats", "1", "--out", str(kept)]) == 0
    assert {"report.html", "report-page-bench.png"} <= {p.name for p in kept.iterdir()}
    assert list((tmp_path / "tmp").iterdir()) == []


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
