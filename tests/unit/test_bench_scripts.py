"""The bench scripts as a reader meets them: `--help` answers (and measures nothing), the commands their docstrings
show run the bench itself, and the command a docstring marks as the doc's is the one docs/performance.md gives."""

from __future__ import annotations

import ast
import contextlib
import importlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
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


def help_failures(scripts: list[Path], timeout_s: float = 300) -> list[str]:
    """The scripts whose `python X.py --help`, run from the repository, does not exit 0 with a usage on stdout, each
    as "name: exit N, the output's end". One interpreter per script, as a reader's command starts one (the script's
    folder first on its path, nothing imported before it): all started at once, then each awaited. Each runs in its
    own session, so that one that does not answer in ``timeout_s`` is ended with the children it started (a server,
    an engine), and every one still running when the wait is left, by an error or an interrupt, is ended too."""
    started = []
    try:
        for script in scripts:
            started.append((script, subprocess.Popen([sys.executable, str(script), "--help"], cwd=REPO, text=True,
                                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                     start_new_session=True)))
        failures = []
        for script, process in started:
            try:
                out, err = process.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _end_group(process)
                failures.append(f"{script.name}: no answer in {timeout_s:g} s")
                continue
            if process.returncode != 0 or not out.startswith("usage:"):
                failures.append(f"{script.name}: exit {process.returncode}, {(out + err)[-300:]!r}")
        return failures
    finally:
        for _, process in started:
            if process.poll() is None:
                _end_group(process)


def _end_group(process: subprocess.Popen) -> None:
    """``process`` and every process of its group (the session it leads) killed, and its pipes read to their end."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # a child that left the group may still hold a pipe
        process.communicate(timeout=10)


def test_every_bench_script_answers_help_without_measuring():
    """`python bench/X.py --help` prints a usage and exits 0 for every script: jobs_memory.py took no arguments and
    ran the whole measurement, suite_cpu.py read `--help` as its rows file and died on FileNotFoundError."""
    assert help_failures(_scripts()) == []


#: A script that works only where an earlier one has put the repository first on the path: its folder's serve.py (as
#: bench/ has one) is what `import serve` finds when it runs on its own.
_LEANS_ON_ANOTHER = """import argparse
from serve.errors import sanitized
if __name__ == "__main__":
    argparse.ArgumentParser().parse_args()
"""


def test_a_script_that_fails_on_its_own_fails_the_help_check(tmp_path):
    """Each script's --help is its own interpreter's: one that imports ``serve.*`` without putting the repository
    first on the path fails as `python bench/X.py` fails it, even after a script that did (in one shared
    interpreter, the package the first cached let the second pass)."""
    (tmp_path / "serve.py").write_text("", encoding="utf-8")
    first = tmp_path / "a_sets_the_path.py"
    first.write_text(f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + _LEANS_ON_ANOTHER, encoding="utf-8")
    second = tmp_path / "b_leans_on_it.py"
    second.write_text(_LEANS_ON_ANOTHER, encoding="utf-8")
    failures = help_failures([first, second])
    assert len(failures) == 1 and failures[0].startswith("b_leans_on_it.py: exit 1, "), failures
    assert "is not a package" in failures[0]


#: A script that ignores --help and measures: it starts a child (as a bench starts a server or an engine, one that
#: outlives the wait by far unless it is killed), writes the child's pid beside itself, says so through a FIFO the
#: gate below reads, and never answers.
_MEASURES = """import signal, subprocess, sys
child = subprocess.Popen(["sleep", "300"])
open(sys.argv[0] + ".child", "w").write(str(child.pid))
open(sys.argv[0] + ".started", "w").write("started")  # a FIFO: opening it waits for the gate to open it too
signal.pause()
"""
#: Awaited before the script above (help_failures awaits in order), it answers --help only once that script has said,
#: through the FIFO, that its child runs, so the timeout is reached with the child there, however slowly the machine
#: starts interpreters: reading the FIFO blocks until the script has written it and closed it.
_ANSWERS_ONCE_THE_CHILD_RUNS = """import argparse, sys
open(sys.argv[0].replace("a_gate.py", "measures.py.started")).read()
argparse.ArgumentParser().parse_args()
"""


def _ended(pid: int, within_s: float = 60) -> bool:
    """Whether process ``pid`` ends within ``within_s`` (gone, or a zombie its new parent has yet to reap), awaited on
    its pidfd, which is readable once it has exited. Not one look at /proc: a killed process acts on SIGKILL when it
    next runs, and it closes its pipes (which ends the wait for the script's output) before it is a zombie, so a look
    right after the kill can find it still there on a loaded machine."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([handle], [], [], within_s)[0])
    finally:
        os.close(handle)


def test_ended_waits_for_an_end_that_comes_after_the_look():
    """A process that ends only after ``_ended`` is asked (its stdin closed by a timer) counts as ended, whichever
    comes first; one that does not end in the time given does not."""
    reader = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        assert not _ended(reader.pid, within_s=0.2)
        closer = threading.Timer(0.5, reader.stdin.close)
        closer.start()
        assert _ended(reader.pid, within_s=60)
        closer.join()
    finally:
        reader.kill()
        reader.wait()


def test_a_script_that_does_not_answer_is_ended_with_its_children(tmp_path):
    """A script that measures instead of answering --help: only it was killed at the timeout, and the wait for its
    output lasted as long as its children (which hold its pipes) ran on, and they were left running."""
    script = tmp_path / "measures.py"
    script.write_text(_MEASURES, encoding="utf-8")
    gate = tmp_path / "a_gate.py"
    gate.write_text(_ANSWERS_ONCE_THE_CHILD_RUNS, encoding="utf-8")
    os.mkfifo(f"{script}.started")
    started = time.monotonic()
    failures = help_failures([gate, script], timeout_s=10)
    assert failures == ["measures.py: no answer in 10 s"]
    assert time.monotonic() - started < 120, "the wait outlasted the timeout by the children's run"
    child = int(Path(f"{script}.child").read_text())
    assert _ended(child), "the script's child is left running"


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


def row_flag_commands(text: str) -> list[tuple[str, list[str]]]:
    """(script name, arguments) of each code span of a table row's command cell that gives flags alone (`--objects`,
    `--sizes 78000` for 78k), read as arguments of the bench script the same cell runs (the first, if several)."""
    commands = []
    for line in text.splitlines():
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1] if line.startswith("|") else []
        scripts = re.findall(r"bench/(\w+)\.py", cells[-1]) if cells else []
        commands += [(scripts[0], span.split()) for span in re.findall(r"`([^`]+)`", cells[-1] if cells else "")
                     if scripts and span.startswith("--")]  # fmt: skip
    return commands


def test_every_flag_a_performance_row_gives_alone_parses():
    """A row's command cell may give a variant as flags alone beside its command (`--micro-batch 2` for two packed
    documents): those flags are the script's, as written, like the whole commands above."""
    commands = row_flag_commands((REPO / "docs" / "performance.md").read_text(encoding="utf-8"))
    assert ("experts_tables", ["--objects"]) in commands and ("dedup", ["--sizes", "78000"]) in commands
    assert unparsed(commands) == []


def test_the_row_flag_reading_takes_the_command_cell_s_script():
    """By hand: a flag span of the command cell goes with that cell's script; spans of other cells, and a cell with
    no bench script, give none; a flag the script lacks is refused."""
    text = ("| `--cpu-worker-in-engine` | x | `python bench/dedup.py --sizes 10`, `--sizes 78000` for 78k |\n"
            "| y | z | `pytest -n 2`, `--dist loadgroup` |\n| w | v | `python bench/experts_tables.py` (`--object`) |")
    commands = row_flag_commands(text)
    assert commands == [("dedup", ["--sizes", "78000"]), ("experts_tables", ["--object"])]
    refused = unparsed(commands)
    assert len(refused) == 1 and "experts_tables.py --object: exit 2" in refused[0]


def test_the_command_check_catches_a_wrong_command():
    """By hand: a flag the script does not have, an abbreviated one, a value outside its choices, a missing
    positional, a script that is not there and a flag the script refuses after parsing (eval_metrics.py's --rounds
    without --end-to-end) are each refused; the right commands and a shell loop's are not."""
    text = ("`for i in 1 2 3; do python bench/serve.py overhead; done`, `python bench/dedup.py --sizes 10 "
            "--embedder hashed`, `bench/suite_cpu.py F --top 3`, `python bench/dedup.py --size 10`, "
            "`python bench/dedup.py --embed hashed`, `python bench/serve.py tokens`, `python bench/suite_cpu.py`, "
            "`python bench/nowhere.py --rounds 2`, `python bench/eval_metrics.py --rounds 3`")
    commands = doc_commands(text)
    assert commands[:3] == [("serve", ["overhead"]), ("dedup", ["--sizes", "10", "--embedder", "hashed"]),
                            ("suite_cpu", ["F", "--top", "3"])]  # fmt: skip
    refused = unparsed(commands)
    assert len(refused) == 6 and refused[0] == "bench/nowhere.py: no such bench script"
    assert [r.split(":")[0].rsplit("/", 1)[-1] for r in refused[1:]] == [
        "dedup.py --size 10", "dedup.py --embed hashed", "serve.py tokens", "suite_cpu.py",
        "eval_metrics.py --rounds 3"]
    assert all(": exit 2: " in r for r in refused[1:]) and "unrecognized arguments: --size" in refused[1]
    assert "--rounds: only with --end-to-end" in refused[5]  # a check after argparse's own, in the script's parse_args


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
    ``machine_line`` before its rounds' loop (the first over the rounds, else its first loop) and again after it."""
    tree = ast.parse((BENCH / f"{name}.py").read_text(encoding="utf-8"))
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
    said = [node.lineno for node in ast.walk(main) if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "machine_line"]
    loops = sorted((node for node in ast.walk(main) if isinstance(node, (ast.For, ast.While))),
                   key=lambda node: node.lineno)
    # The loop over the rounds where one iterates them (serve_tokenize checks its arms' ids in a loop before them).
    over_rounds = [node for node in loops
                   if "rounds" in ast.unparse(node.iter if isinstance(node, ast.For) else node.test)]  # fmt: skip
    rounds = (over_rounds or loops)[0]
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
