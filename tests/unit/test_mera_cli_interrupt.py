"""``judge-eval mera`` stopped with Ctrl+C: one line and exit 130 (as ``judge-eval run``), the answers kept; stopped
with SIGTERM or SIGHUP, the same, exit 128 + the signal's number, and the running samples' folders removed."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from eval.mera import cli
from tests.support.mera_humaneval import SAMPLE
from tests.support.mera_interrupts import ctrl_c_once_in_flight
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.unit.test_mera_rutie import completion_body


def _held_after_the_second(release: threading.Event, stop: int):
    """A ``respond`` for four tasks asked one at a time: task 0 answered, ``stop`` sent to this process while task 1
    is answered (then answered at once, so that the thread waiting for it wakes with the stop even where the signal
    came before it blocked), and any later task held until ``release`` (the command has returned; the bound only ends
    a failing test). A worker that took task 2 before the stop was seen is held there, so task 3 is never sent, and
    no worker writes while the test reads what was saved."""
    def respond(path, body):
        if "def strlen(" in body["prompt"]:  # the second task: the stop comes while it is answered
            os.kill(os.getpid(), stop)
        elif "def greatest_common_divisor(" not in body["prompt"]:
            release.wait(30)
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=10)

    return respond


def _join_workers() -> None:
    """Wait for the workers the interrupted command left running (each let go already): nothing of theirs is written
    after the test reads, or in a later test."""
    for worker in [t for t in threading.enumerate() if t.name.startswith("mera-worker-")]:
        worker.join(30)


def _four_tasks_one_at_a_time(base_url: str, out, release: threading.Event) -> int:
    """ruHumanEval's first four sample tasks, one request at a time, against ``base_url``: the command's exit code.
    However it ends, the held requests are let go and the workers joined before the test reads what was saved."""
    try:
        return cli.main(["ruhumaneval", "--endpoint", base_url, "--model", "scripted", "--data", str(SAMPLE), "--out",
                         str(out), "--limit", "4", "--n", "1", "--k", "1", "--concurrency", "1",
                         "--max-retries", "0"])  # fmt: skip
    finally:
        release.set()
        _join_workers()


def test_ctrl_c_mid_run_is_one_line_exit_130_and_keeps_the_answers(tmp_path, capsys, python_sigint_handler):
    """A real SIGINT while the second task is being answered: the first task's generation stays saved for the
    rerun, and the command says so in one line with exit 130. It ended in a KeyboardInterrupt traceback. The second
    task's answer, which comes as the stop does, is saved only where its worker saved it before the interrupted run
    closed its saving; the third, held until the command has returned, never is."""
    release = threading.Event()
    out = tmp_path / "run"
    with ScriptedEndpoint(_held_after_the_second(release, signal.SIGINT)) as endpoint:
        code = _four_tasks_one_at_a_time(endpoint.base_url, out, release)
    err = capsys.readouterr().err
    assert code == 130
    assert f"judge-eval mera ruhumaneval: interrupted; the answers saved so far in {out} are kept" in err, err
    assert "Traceback" not in err
    saved = [json.loads(line)["task_id"] for line in (out / cli.GENERATIONS_FILE).read_text().splitlines()]
    assert saved in (["0"], ["0", "1"]), saved  # the run stopped: the last task was never asked, the third dropped
    assert not (out / cli.METRICS_FILE).exists()


class HungUpTerminal:
    """``sys.stderr`` after the terminal hung up: every write fails with EIO, as a closed pty's does."""

    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")

    def flush(self) -> None:
        raise OSError(5, "Input/output error")


def test_sighup_from_a_closed_terminal_exits_129_though_stderr_fails(tmp_path, monkeypatch):
    """A closed terminal sends SIGHUP and takes stderr with it: the "interrupted by SIGHUP" line failed with EIO, and
    the command ended in that OSError (exit 1, a traceback no one saw) instead of the documented 129. The line is
    now dropped where it cannot be written; the answers saved before the hangup are kept."""
    release = threading.Event()
    received: list[int] = []
    # The test's own SIGHUP handler (not ignored, so the command sets its own); it sees the signal only where the
    # command set none.
    earlier = signal.signal(signal.SIGHUP, lambda signum, frame: received.append(signum))
    out = tmp_path / "run"
    try:
        # the terminal closes while the second task is answered
        with ScriptedEndpoint(_held_after_the_second(release, signal.SIGHUP)) as endpoint:
            monkeypatch.setattr(sys, "stderr", HungUpTerminal())
            code = _four_tasks_one_at_a_time(endpoint.base_url, out, release)
    finally:
        signal.signal(signal.SIGHUP, earlier)
    assert (code, received) == (129, [])
    saved = [json.loads(line)["task_id"] for line in (out / cli.GENERATIONS_FILE).read_text().splitlines()]
    assert saved in (["0"], ["0", "1"]), saved


#: A continuation of the task's stub: says its working folder and its pid on the FIFO ``up``, then waits until the test
#: opens the FIFO ``go`` for writing, which it does only where the command left the sample running after SIGTERM.
SAMPLE_THAT_WAITS = (
    "\n    import os\n"
    "    fd = os.open({up!r}, os.O_WRONLY | os.O_NONBLOCK)\n"
    "    os.write(fd, f'{{os.getcwd()}} {{os.getpid()}}'.encode())\n"
    "    os.close(fd)\n"
    "    os.close(os.open({go!r}, os.O_RDONLY))\n"
    "    return 0\n"
)


def test_sigterm_mid_sample_kills_it_removes_its_folder_exits_143_and_restores_the_handlers(tmp_path, capsys,
                                                                                            sandbox_user):
    """SIGTERM while a sample runs without bubblewrap: Python's default died at once, leaving the sample's
    /tmp/mera-sbx-* folder; then the command waited for the sample to end by itself or at its deadline, past a
    scheduler's grace period (docker stop's 10 s). The sample is now killed at once: it never returns by itself
    here, and it is dead, its folder removed, when the command returns, with one line saying it was SIGTERM, exit
    143 (128 + 15), and the handlers it set the earlier ones again. Ordered by two FIFOs and the sample's pidfd, no
    sleeps: the sample says its folder and pid, the test sends SIGTERM and waits for the sample's death; only where
    that does not come (a bound for a failing test, far below the 60 s deadline) does it let the sample return."""
    folder = Path(tempfile.mkdtemp(prefix="mera-cli-term-"))
    folder.chmod(0o755)  # reachable to nobody, the sample's user when the tests run as root
    up, go = folder / "up", folder / "go"
    for fifo in (up, go):
        os.mkfifo(fifo)
        fifo.chmod(0o666)
    reader = os.open(up, os.O_RDONLY | os.O_NONBLOCK)
    said: list[str] = []
    died: list[bool] = []
    pidfds: list[int] = []
    writers: list[int] = []
    received: list[int] = []

    def stop_when_up() -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(reader, selectors.EVENT_READ)
            if not selector.select(120):  # a bound for a failing test, not a measurement
                return
        said.append(os.read(reader, 4096).decode())
        pidfds.append(os.pidfd_open(int(said[0].split()[1])))  # the sample is blocked on `go`: alive
        os.kill(os.getpid(), signal.SIGTERM)
        with selectors.DefaultSelector() as selector:
            selector.register(pidfds[0], selectors.EVENT_READ)  # readable once the process has exited
            died.append(bool(selector.select(20)))
        if not died[0]:  # the command left it running: let it return, so that the failing test ends
            with contextlib.suppress(OSError):
                writers.append(os.open(go, os.O_WRONLY | os.O_NONBLOCK))

    def respond(path, body):
        return 200, completion_body(body["model"], [SAMPLE_THAT_WAITS.format(up=str(up), go=str(go))],
                                    prompt_tokens=10)  # fmt: skip

    # The test's own SIGTERM handler: where the command sets none, the signal only lands here, and the run goes on
    # to exit 0, rather than ending the test process.
    def test_handler(signum, frame):
        received.append(signum)

    earlier_term = signal.signal(signal.SIGTERM, test_handler)
    earlier_hup = signal.getsignal(signal.SIGHUP)
    helper = threading.Thread(target=stop_when_up, daemon=True)
    out = tmp_path / "run"
    try:
        with ScriptedEndpoint(respond) as endpoint:
            helper.start()
            code = cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data",
                             str(SAMPLE), "--out", str(out), "--limit", "1", "--n", "1", "--k", "1", "--sandbox",
                             "none", "--max-retries", "0", "--exec-timeout", "60"])  # fmt: skip
        with selectors.DefaultSelector() as selector:
            selector.register(pidfds[0], selectors.EVENT_READ)
            dead_on_return = bool(selector.select(0))
        helper.join(120)
        ours = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, earlier_term)
        os.close(reader)
        for fd in writers + pidfds:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
    (line,) = said
    workdir = line.split()[0]
    assert Path(workdir).name.startswith("mera-sbx-")
    err = capsys.readouterr().err
    assert (code, received) == (143, []), err
    assert died == [True] and dead_on_return, "the sample was left running after SIGTERM"
    assert (f"judge-eval mera ruhumaneval: interrupted by SIGTERM; the answers saved so far in {out} are kept, "
            "rerunning the same command resumes") in err, err
    assert "Traceback" not in err
    assert not Path(workdir).exists(), "the sample's folder outlived the run"
    assert ours is test_handler and signal.getsignal(signal.SIGHUP) is earlier_hup
    assert [json.loads(line)["task_id"] for line in (out / cli.GENERATIONS_FILE).read_text().splitlines()] == ["0"]
    assert not (out / cli.METRICS_FILE).exists()


def test_sigterm_during_generation_waits_for_no_request_in_flight(tmp_path, capsys, caplog):
    """SIGTERM while one task's request is still unanswered: the command waited for it (up to --request-timeout
    and its retries), past a scheduler's grace period (docker stop's 10 s), as its thread pool joined every worker.
    It now returns 143 while that request is still in flight, task 0's answer saved. Ordered by events, no sleeps:
    with two workers on three tasks, tasks 1 and 2 are both in flight only once task 0, taken first, is done and its
    answer saved; the stop is sent while task 1 is answered, only then (a stop before any answer is saved leaves the
    folder as it found it: absent). Task 1 is answered at once after the stop: the thread waiting for it wakes with
    the stop even where the signal came before it blocked. Task 2 is held until the command has returned (the bound
    on the hold only ends a failing test), and then dropped and said: the command let go of the run folder."""
    task_2_in_flight, release = threading.Event(), threading.Event()
    answered: list[str] = []
    received: list[int] = []

    def respond(path, body):
        if "def flip_case(" in body["prompt"]:  # task 2: a long generation, still running at the stop
            task_2_in_flight.set()
            release.wait(30)
            answered.append("2")
        elif "def strlen(" in body["prompt"]:  # task 1: the stop comes once task 0's answer is saved
            task_2_in_flight.wait(30)
            os.kill(os.getpid(), signal.SIGTERM)
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=10)

    def test_handler(signum, frame):  # where the command sets none, the signal lands here, not on the test process
        received.append(signum)

    earlier_term = signal.signal(signal.SIGTERM, test_handler)
    out = tmp_path / "run"
    try:
        with ScriptedEndpoint(respond) as endpoint:
            code = cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data",
                             str(SAMPLE), "--out", str(out), "--limit", "3", "--n", "1", "--k", "1",
                             "--concurrency", "2", "--max-retries", "0"])  # fmt: skip
            answered_on_return = list(answered)
            release.set()
            _join_workers()  # the abandoned request ends here, not in a later test
    finally:
        signal.signal(signal.SIGTERM, earlier_term)
    err = capsys.readouterr().err
    assert (code, received, answered_on_return) == (143, [], []), err
    assert f"judge-eval mera ruhumaneval: interrupted by SIGTERM; the answers saved so far in {out} are kept" in err
    # Task 2's answer came once the command had returned and let go of the folder: not written there, but said.
    saved = [json.loads(line)["task_id"] for line in (out / cli.GENERATIONS_FILE).read_text().splitlines()]
    assert saved in (["0"], ["0", "1"]), saved
    assert answered == ["2"]
    assert "task 2: its answer came after the run was stopped: not saved, a rerun asks it again" in caplog.messages


def test_an_answer_that_comes_while_an_interrupted_launch_puts_its_folder_back_is_not_saved(tmp_path, capsys,
                                                                                           monkeypatch,
                                                                                           python_sigint_handler):
    """Ctrl+C while task 0's request is in flight, no answer saved yet: the launch leaves the folder as it found it
    (absent). Its worker is not waited for, and an answer that came while the folder was being put back was saved
    into it: its key and record already taken back, the folder could not be removed, and it was left holding answers
    without their key (the one line said they were kept and a rerun resumed; that rerun was refused). An answer that
    comes once the run is interrupted with nothing saved is now dropped, as the folder is. Ordered, not waited for:
    the main thread raises the signal itself once the request is in flight (a signal sent from another thread can
    land while it is between releasing the GIL and blocking, and then waits for the answer), and the answer is let
    through, and its worker waited for, just after the folder was found unchanged by any answer."""
    from judge.plumbing import run_folder

    in_flight, release = threading.Event(), threading.Event()
    put_back: list[bool] = []

    def respond(path, body):
        in_flight.set()
        release.wait(30)  # a bound for a failing test only: let through while the folder is put back
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=10)

    real_found = run_folder._found

    def found(folder, progress_files):
        seen = real_found(folder, progress_files)
        if in_flight.is_set():  # the launch putting its folder back: the answer comes now
            put_back.append(True)
            release.set()
            for worker in [t for t in threading.enumerate() if t.name.startswith("mera-worker-")]:
                worker.join(30)
        return seen

    ctrl_c_once_in_flight(monkeypatch, in_flight)
    monkeypatch.setattr(run_folder, "_found", found)
    out = tmp_path / "runs" / "run"
    with ScriptedEndpoint(respond) as endpoint:
        code = cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(SAMPLE),
                         "--out", str(out), "--limit", "1", "--n", "1", "--k", "1", "--concurrency", "1",
                         "--max-retries", "0"])  # fmt: skip
        release.set()
    err = capsys.readouterr().err
    assert (code, put_back) == (130, [True]), err
    assert err.splitlines()[-1] == "judge-eval mera ruhumaneval: interrupted", err
    assert not (tmp_path / "runs").exists(), sorted(p.name for p in out.iterdir())


@pytest.mark.parametrize("task", ["ruhumaneval", "rutie"])
def test_an_answer_that_comes_once_the_interrupted_run_let_its_folder_go_is_not_written_there(
        tmp_path, capsys, caplog, monkeypatch, python_sigint_handler, task):
    """Ctrl+C while the second request is in flight, the first answer saved: the command let go of the run folder's
    lock and returned, its worker not waited for, and the answer that came then was appended to the journal while
    another launch held the folder (two processes appending to one file, or an answer landing after the rerun read
    it). Once the run is interrupted no worker writes there: the late answer is dropped and said, and the rerun asks
    it again. Ordered by events, no sleeps: the main thread raises the signal itself once the second request is in
    flight, and the test takes the folder's lock, as a rerun would, before it lets that request be answered (the
    bound on the hold only ends a failing test)."""
    from judge.plumbing.run_folder import hold_run_folder
    from tests.support.mera_rutie import SAMPLE as RUTIE_SAMPLE

    in_flight, release = threading.Event(), threading.Event()
    answered: list[int] = []
    reply = "\n    return None\n" if task == "ruhumaneval" else "1"

    def respond(path, body):
        if answered:  # the second request: in flight at the stop, answered once the folder is another's
            in_flight.set()
            release.wait(30)
        answered.append(len(answered))
        return 200, completion_body(body["model"], [reply], prompt_tokens=10)

    ctrl_c_once_in_flight(monkeypatch, in_flight)
    out = tmp_path / "run"
    journal = out / cli.progress_files(task)[0]
    data, extra = (SAMPLE, ["--limit", "2", "--n", "1", "--k", "1"]) if task == "ruhumaneval" else (RUTIE_SAMPLE, [])
    with ScriptedEndpoint(respond) as endpoint:
        try:
            code = cli.main([task, "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(data),
                             "--out", str(out), "--concurrency", "1", "--max-retries", "0", *extra])  # fmt: skip
            saved = journal.read_bytes()
            with hold_run_folder(out, f"judge-eval mera {task}", cli.progress_files(task)):  # the rerun's launch
                release.set()
                _join_workers()
                saved_while_held = journal.read_bytes()
        finally:
            release.set()
            _join_workers()
    err = capsys.readouterr().err
    assert code == 130, err
    assert answered == [0, 1]  # the second answer came, once the folder was held by the rerun
    assert len(saved.splitlines()) == 1 and saved_while_held == saved, saved_while_held.decode()
    second = "task 1" if task == "ruhumaneval" else "dialogue 0 question 1"
    assert f"{second}: its answer came after the run was stopped: not saved, a rerun asks it again" in caplog.messages
