"""The code sandbox's and the MERA task parsers' answers to a hostile review: what a sample without bubblewrap can
reach of its supervisor, which folders bubblewrap shows it, Ctrl+C during a run of samples, the thread budget; and
task rows whose instruction, id or types are not what they should be, or a ``--data`` that names nothing."""

from __future__ import annotations

import copy
import os
import secrets
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera import sandbox as sandbox_mod
from eval.mera.humaneval import parse_mera_row
from eval.mera.released import HUMANEVAL_EN, resolve_task_data
from eval.mera.rutie import parse_rutie_row
from eval.mera.sandbox import ExecJob, ExecResult, Limits, Sandbox, SandboxUnavailable, bwrap_argv
from eval.mera.task_rows import DataError
from tests.support.mera_humaneval import MERA_ROW
from tests.support.mera_sandbox import bwrap_sandbox_or_skip

REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------------------------------
# Without bubblewrap: the supervisor's environment
# ---------------------------------------------------------------------------------------------------------------

#: A supervisor that runs one sample without bubblewrap; the sample lists the processes whose environment shows the
#: marker, which only the supervisor's holds. Run as a user other than root: root's environ is root's alone.
ENVIRON_PROBE = """
import sys
sys.path.insert(0, {repo!r})
from eval.mera.sandbox import ExecJob, Sandbox
program = '''
import os
def f():
    found = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                if {marker!r}.encode() in open('/proc/' + pid + '/environ', 'rb').read():
                    found.append(pid)
            except OSError:
                pass
    return str(found)
'''
result = Sandbox(isolation="none").run(ExecJob(program=program, entry_point="f", tests=[{{}}], expected=["[]"]))
print("SAMPLE", result.status, result.outputs, result.detail)
"""


def _as_another_user() -> tuple[list[str], str]:
    """How to start a supervisor that is not root: the command prefix and its interpreter; skips where neither this
    user nor ``nobody`` through runuser can."""
    if os.geteuid() != 0:
        return [], sys.executable
    python, uid, _ = sandbox_mod.choose_identity()
    if uid is None or shutil.which("runuser") is None:
        pytest.skip("root without runuser or an interpreter nobody can run")
    source = REPO / "eval" / "mera" / "sandbox.py"
    if not (all(p.stat().st_mode & 0o001 for p in source.parents) and source.stat().st_mode & 0o004):
        pytest.skip("nobody cannot read the repository")
    return ["runuser", "-u", "nobody", "--"], python


def test_without_bubblewrap_a_sample_cannot_read_its_supervisors_environment(sandbox_user):
    """A sample without bubblewrap runs as the supervisor's own user (not root) and sees the host's /proc: it read
    the supervisor's /proc/<pid>/environ, and with it the API key. The supervisor is now not dumpable, so its
    environ is root's."""
    prefix, python = _as_another_user()
    marker = "MERA-KEY-" + secrets.token_hex(6)
    done = subprocess.run(
        [*prefix, "env", f"OPENAI_API_KEY={marker}", python, "-B", "-c",
         ENVIRON_PROBE.format(repo=str(REPO), marker=marker)],
        capture_output=True, text=True, timeout=300, cwd="/", stdin=subprocess.DEVNULL,
    )  # fmt: skip
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("SAMPLE ")), None)
    assert line is not None, done.stderr[-2000:]
    assert line.startswith("SAMPLE passed"), line  # the sample found no process holding the key
    assert "this process's own environment unreadable to it" in done.stderr


def test_the_fallback_warning_says_as_whom_the_sample_runs_and_what_it_can_reach(caplog):
    with caplog.at_level("WARNING", logger="eval.mera.sandbox"):
        Sandbox(isolation="none")
    text = " ".join(caplog.text.split())
    for part in ("CODE SANDBOX WITHOUT BUBBLEWRAP", "read and write whatever that user can",
                 "undo the in-process guard", "--sandbox bwrap"):  # fmt: skip
        assert part in text, part
    assert ("as uid 65534 (nobody)" in text or "as ROOT" in text) if os.geteuid() == 0 else "as this user" in text


# ---------------------------------------------------------------------------------------------------------------
# bubblewrap: only folders that hold nothing private are bound
# ---------------------------------------------------------------------------------------------------------------


def _argv(python: str) -> list[str]:
    return bwrap_argv(python, child_fd=3, job_fd=4, seccomp_fd=5, token="t", tmpfs_mb=8, env={})


def test_an_interpreter_whose_prefix_holds_a_home_folder_or_the_repository_is_refused(tmp_path, monkeypatch):
    """The interpreter's prefix (its bin's parent) is bound whole: $HOME/bin/python3 showed every sample the home
    folder (~/.ssh), /bin/python3 on a system whose /bin is a real folder the whole file system."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for python, exposed in [
        (home / "bin" / "python3", str(home)),
        (Path("/x/python3"), "the whole file system"),
        (REPO.parent / "bin" / "python3", str(REPO)),
    ]:
        with pytest.raises(SandboxUnavailable, match="bind whole") as err:
            _argv(str(python))
        assert exposed in str(err.value) and str(python) in str(err.value)
    work = tmp_path / "opt" / "py"
    (work / "run").mkdir(parents=True)
    monkeypatch.chdir(work / "run")
    with pytest.raises(SandboxUnavailable, match="bind whole"):
        _argv(str(work / "bin" / "python3"))


def test_an_interpreter_in_a_folder_of_its_own_or_under_usr_is_bound_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    own = tmp_path / "opt" / "python3.11"
    argv = _argv(str(own / "bin" / "python3"))
    assert argv[argv.index(str(own)) - 1] == "--ro-bind"
    assert sandbox_mod.interpreter_bind("/usr/local/bin/python3") is None
    assert sandbox_mod.interpreter_bind("/usr/bin/python3") is None


def test_a_sample_does_not_see_a_home_folder_through_the_interpreters_prefix(tmp_path, monkeypatch, sandbox_user):
    """End to end: an interpreter copied into a home folder's bin is refused, not run with the home bound."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    python = home / "bin" / "python3"
    shutil.copy2(sandbox_mod.choose_identity()[0], python)
    for folder in (tmp_path, home, home / "bin"):
        folder.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    bwrap_sandbox_or_skip(Limits())  # skips where bubblewrap cannot run at all
    with pytest.raises(SandboxUnavailable, match="bind whole"):
        Sandbox(Limits(), isolation="bwrap", python=str(python))
    with pytest.raises(SandboxUnavailable, match="bind whole"):  # auto never falls back to no isolation for it
        Sandbox(Limits(), isolation="auto", python=str(python))


def test_the_interpreters_folder_is_checked_once_per_sandbox_not_per_sample(monkeypatch, sandbox_user):
    """The check lists every folder of /home (``_private_folders``), a network round trip each on an NFS or autofs
    /home: the probe's command line checks it and every sample reuses the answer, whatever the number of samples."""
    calls = []
    check = sandbox_mod.interpreter_bind
    monkeypatch.setattr(sandbox_mod, "interpreter_bind", lambda python: calls.append(python) or check(python))
    box = bwrap_sandbox_or_skip(Limits())
    checked = len(calls)
    jobs = [ExecJob(program=f"def f():\n    return {k}\n", entry_point="f", tests=[{}], expected=[str(k)])
            for k in range(4)]
    assert [r.passed for r in box.run_many(jobs, workers=2)] == [True] * 4
    assert checked == 1 and len(calls) == checked  # once, by the sandbox: not by the probe again, nor per sample


# ---------------------------------------------------------------------------------------------------------------
# Ctrl+C during a run of samples
# ---------------------------------------------------------------------------------------------------------------


def test_an_interrupt_cancels_the_queued_samples(monkeypatch):
    """Ctrl+C (here raised by on_result after the first sample) ends run_many once the running sample is done; it
    waited for every queued one. The second sample, if it started, is held until the pool is shut down, so that no
    other can start before the interrupt is handled."""
    started: list[int] = []
    release = threading.Event()

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)
            release.set()
            super().shutdown(wait=wait)

    monkeypatch.setattr(sandbox_mod, "ThreadPoolExecutor", Pool)
    box = Sandbox.__new__(Sandbox)

    def fake_run(job):
        started.append(1)
        if len(started) == 2:
            assert release.wait(60)
        return ExecResult("passed")

    def interrupt(i, result):
        raise KeyboardInterrupt

    box.run = fake_run
    with pytest.raises(KeyboardInterrupt):
        box.run_many([None] * 20, workers=1, on_result=interrupt)
    assert len(started) <= 2  # the first, and the second if it started before the interrupt


# ---------------------------------------------------------------------------------------------------------------
# The thread budget
# ---------------------------------------------------------------------------------------------------------------

THREADS = (
    "import threading, time\n"
    "def f():\n"
    "    n = 0\n"
    "    try:\n"
    "        while n < 500:\n"
    "            threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n"
    "            n += 1\n"
    "    except RuntimeError:\n"
    "        pass\n"
    "    return str(n)\n"
)


@pytest.mark.parametrize("isolation", ["bwrap", "none"])
def test_a_sample_runs_nproc_threads_within_the_default_memory(isolation, sandbox_user):
    """Limits.nproc bounds a sample's threads, its main one included; with the default 1 GiB a sample could start
    only 14, each thread's own malloc arena reserving 64 MiB of its address space. Under bubblewrap the sample has
    the budget to itself (a user namespace of its own); without it, every process of its user counts against it
    too (a sample of another test still being reaped), so only the memory's bound is checked there."""
    limits = Limits(timeout_s=5.0, nproc=32)
    if os.geteuid() == 0 and sandbox_mod.choose_identity()[1] is None:
        pytest.skip("run as root: RLIMIT_NPROC is not enforced")
    box = bwrap_sandbox_or_skip(limits) if isolation == "bwrap" else Sandbox(limits, isolation="none")
    result = box.run(ExecJob(program=THREADS, entry_point="f", tests=[{}], expected=["31"]))
    if isolation == "bwrap":
        assert result.outputs == ("31",), result
    else:
        assert 24 < int(result.outputs[0]) <= 31, result  # 21 with an arena per thread


# ---------------------------------------------------------------------------------------------------------------
# Task rows
# ---------------------------------------------------------------------------------------------------------------


def _row(instruction=None, **meta):
    row = copy.deepcopy(MERA_ROW)
    if instruction is not None:
        row["instruction"] = instruction
    for key, value in meta.items():
        if value is KeyError:
            row["meta"].pop(key, None)
        else:
            row["meta"][key] = value
    return row


@pytest.mark.parametrize(("instruction", "said"), [
    ("{function:>99999999999}", "{function:>99999999999} has a format spec"),  # a MemoryError escaped
    ("{function!r}", "{function!r} has a conversion"),
    ("{function.__class__.__mro__}", "{function.__class__.__mro__} has an attribute or an index"),
    ("{function[0]}", "{function[0]} has an attribute or an index"),
    ("{0}", "{0} has a position"),
    ("{}", "{} has a position"),
    ("{function", "is not a format string"),
])  # fmt: skip
def test_an_instruction_field_that_does_more_than_name_an_input_is_refused(instruction, said):
    with pytest.raises(DataError) as err:
        parse_mera_row(_row(instruction), 3)
    assert str(err.value).startswith("line 3 (id ") and "field 'instruction'" in str(err.value)
    assert said in str(err.value)


def test_escaped_braces_and_plain_input_names_still_format():
    task = parse_mera_row(_row("Set {{x}}: {function}"), 3)
    assert task.prompt.startswith("Set {x}: ")


@pytest.mark.parametrize(("id_value", "said"), [
    (KeyError, "field 'meta.id' is missing"),
    (None, "field 'meta.id' should be an integer or a string, got null"),
    ({"a": 1}, "field 'meta.id' should be an integer or a string, got an object"),
    (True, "field 'meta.id' should be an integer or a string, got true"),
    (1.5, "field 'meta.id' should be an integer or a string, got a number"),
])  # fmt: skip
def test_a_task_id_that_is_not_an_integer_or_a_string_is_refused(id_value, said):
    """A missing id became the line number, null the task 'None', a dict its str(), all without a word."""
    with pytest.raises(DataError, match="^line 4") as err:
        parse_mera_row(_row(id=id_value), 4)
    assert said in str(err.value)
    assert parse_mera_row(_row(id="HumanEval/0"), 4).task_id == "HumanEval/0"


def test_type_errors_name_json_kinds_not_python_classes():
    row = copy.deepcopy(MERA_ROW)
    row["inputs"] = ["not", "an", "object"]
    with pytest.raises(DataError) as err:
        parse_mera_row(row, 2)
    assert str(err.value).endswith("field 'inputs' should be an object, got a list")
    rutie = {"instruction": "{context}", "inputs": {"question": "?", "choice1": True, "choice2": "b"},
             "outputs": "1", "meta": {"dialog_id": 0, "question_id": 0}}  # fmt: skip
    with pytest.raises(DataError) as err:
        parse_rutie_row(rutie, 2)
    assert str(err.value).endswith("should be a string, an integer or a number, got true")
    assert "class" not in str(err.value)


# ---------------------------------------------------------------------------------------------------------------
# --data that names nothing: exit 2 with one line
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("task", "data", "said"), [
    ("rutie", "{tmp}/missing.jsonl", "no such file"),
    ("ruhumaneval", "{tmp}/missing.jsonl", "no such file"),
    ("rutie", HUMANEVAL_EN, "is for ruhumaneval only"),
    ("ruhumaneval", "openai-humaneval", "is now called 'humaneval-en'"),
    ("rutie", "{tmp}", "no rutie rows"),
    ("rutie", "no-such-thing", "not a hub id"),
])  # fmt: skip
def test_a_data_argument_that_names_nothing_usable_is_exit_2_in_one_line(tmp_path, caplog, task, data, said):
    data = data.format(tmp=tmp_path)
    with pytest.raises(DataError, match=said):
        resolve_task_data(task, data)
    args = [task, "--data", data, "--out", str(tmp_path / "run")]
    args += ["--self-check"] if task == "ruhumaneval" else ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m"]
    with caplog.at_level("ERROR"):
        assert cli.main(args) == 2
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and said in errors[0].getMessage() and errors[0].exc_info is None


def test_a_missing_file_is_still_a_file_not_found_to_a_caller_that_asks(tmp_path):
    with pytest.raises(FileNotFoundError):
        resolve_task_data("rutie", str(tmp_path / "missing.jsonl"))
