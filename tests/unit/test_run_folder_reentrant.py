"""``hold_run_folder(..., reentrant=True)``: a job its caller runs in-process in a folder the caller holds
(``judge-eval rank``'s verdict stage, ``judge-eval run`` inside the ranking's hold of its folder) runs under that
hold; any other holder still refuses it. A second ``flock`` of the same file is refused even within one process,
so without it the caller's own job would stop at the caller's lock.

The other holders are threads of this process, each run to its end and joined where the test stands: the order of
events is made, not waited for."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from judge.plumbing import run_folder
from judge.plumbing.run_folder import LOCK_FILE, RUN_KEY_FILE, RunFolderBusy, hold_run_folder, run_folder_holder


def _in_a_thread(job) -> dict:
    """``job()``'s folder, or the RunFolderBusy it raised, run to its end in another thread of this process."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["folder"] = job()
        except RunFolderBusy as err:
            outcome["refused"] = str(err)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    return outcome


def _holder(folder: Path) -> str:
    return json.loads((folder / LOCK_FILE).read_text(encoding="utf-8"))["job"]


def test_a_reentrant_job_runs_under_its_callers_hold_and_leaves_it_held(tmp_path, monkeypatch):
    """The same folder, named otherwise too (relative to the working directory): the job runs, the holder recorded
    stays the caller's, and once the job's block ends the folder is still the caller's: another thread is refused,
    naming it. Without ``reentrant`` the caller's own job is refused as any other writer. Once the caller's block
    ends, the folder is no longer the caller's."""
    monkeypatch.setattr(run_folder, "BUSY_RETRY_S", 0.0)
    out = tmp_path / "bench"
    monkeypatch.chdir(tmp_path)
    with hold_run_folder(out, "judge-eval rank") as folder:
        for name in (out, Path("bench")):
            with hold_run_folder(name, "judge-eval run", progress_files=["predictions.jsonl"],
                                 reentrant=True) as inner:
                assert os.path.samefile(inner, folder) and _holder(folder) == "judge-eval rank"
        with pytest.raises(RunFolderBusy, match=r"in use by judge-eval rank \(pid \d+"):
            with hold_run_folder(out, "judge-eval run"):
                pass
        other = _in_a_thread(lambda: _held_reentrant(out))
        assert other["refused"].startswith(f"{out} is in use by judge-eval rank (pid {os.getpid()}")
        assert run_folder_holder(out).startswith("judge-eval rank (pid ")
    assert run_folder_holder(out) is None
    _assert_no_longer_the_callers(out)


def _assert_no_longer_the_callers(out: Path) -> None:
    """Once the caller's block has ended, the folder is no longer this thread's: a later ``reentrant`` hold in the
    same thread takes the lock and records itself (no hold of a lock already let go), and another thread is refused
    meanwhile."""
    with hold_run_folder(out, "judge-eval run", reentrant=True) as folder:
        assert _holder(folder) == "judge-eval run"
        assert _in_a_thread(lambda: _held_reentrant(out))["refused"].startswith(f"{out} is in use by judge-eval run")


def _held_reentrant(out: Path) -> Path:
    with hold_run_folder(out, "another thread", reentrant=True) as folder:
        return folder


def test_a_reentrant_job_no_one_holds_the_folder_for_takes_the_lock(tmp_path, monkeypatch):
    """Unheld, ``reentrant`` takes the lock as a plain hold does (``judge-eval run``'s own launch, a ranking's verdict
    stage called outside a ranking's hold): it records itself, and another thread is refused meanwhile."""
    monkeypatch.setattr(run_folder, "BUSY_RETRY_S", 0.0)
    out = tmp_path / "run"
    with hold_run_folder(out, "judge-eval run", reentrant=True) as folder:
        assert _holder(folder) == "judge-eval run"
        assert _in_a_thread(lambda: _held_reentrant(out))["refused"].startswith(f"{out} is in use by judge-eval run")
    assert _in_a_thread(lambda: _held_reentrant(out)) == {"folder": out}


def test_a_reentrant_job_refused_before_any_work_puts_back_its_bookkeeping_and_keeps_the_callers_lock(
        tmp_path, monkeypatch):
    """The job's refusal (other settings) after it wrote its key: the key is put back as it was, while the caller's
    lock file, folder and hold stay (they are the caller's, not the job's to take back) until the caller's own block
    ends."""
    monkeypatch.setattr(run_folder, "BUSY_RETRY_S", 0.0)
    out = tmp_path / "bench"
    with hold_run_folder(out, "judge-eval rank") as folder:
        (folder / "items.jsonl").write_text("{}\n", encoding="utf-8")  # the caller's own file
        with pytest.raises(RuntimeError, match="other settings"):
            with hold_run_folder(out, "judge-eval run", progress_files=["predictions.jsonl"], reentrant=True):
                (folder / RUN_KEY_FILE).write_text("{}", encoding="utf-8")
                raise RuntimeError("other settings")
        assert sorted(p.name for p in folder.iterdir()) == ["items.jsonl", LOCK_FILE]
        assert _in_a_thread(lambda: _held_reentrant(out))["refused"].startswith(f"{out} is in use by judge-eval rank")
    _assert_no_longer_the_callers(out)


def test_a_forked_child_is_refused_its_parents_hold(tmp_path, monkeypatch):
    """A child forked inside the parent's hold keeps the forking thread's id, and a copy of what the parent holds:
    another process all the same, its ``reentrant`` hold is refused, naming the parent, and the parent's hold stays.
    The child reports through a pipe and ends by ``os._exit`` (never through pytest's own exit)."""
    monkeypatch.setattr(run_folder, "BUSY_RETRY_S", 0.0)
    out = tmp_path / "bench"
    with hold_run_folder(out, "judge-eval rank"):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: whatever happens, one line down the pipe, then out
            os.close(read_end)
            try:
                try:
                    with hold_run_folder(out, "a forked child", reentrant=True):
                        said = f"ran under a hold, recorded holder {_holder(out)}"
                except RunFolderBusy as err:
                    said = f"refused: {err}"
                except BaseException as err:  # said, not lost in the child
                    said = f"raised {err!r}"
                os.write(write_end, said.encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            said = pipe.read().decode()
        assert os.waitpid(pid, 0)[1] == 0
        assert said.startswith(f"refused: {out} is in use by judge-eval rank (pid {os.getpid()}"), said
        assert _holder(out) == "judge-eval rank"
        assert _in_a_thread(lambda: _held_reentrant(out))["refused"].startswith(f"{out} is in use by judge-eval rank")
    assert run_folder_holder(out) is None
