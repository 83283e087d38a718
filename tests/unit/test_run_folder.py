"""Run folders: one writer at a time, a resume only with the folder's settings,
training never replaces a finished export unasked, and ``score`` refuses an id it would count twice.

The two-writer test makes its order of events happen: the stand-in judge holds the first run's first request until
the second run has been refused, so the first run holds the folder for certain while the second one starts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging.predictions import read_predictions, refuse_repeated_ids
from judge.plumbing.run_folder import LOCK_FILE, RUN_KEY_FILE, RunFolderBusy, hold_run_folder
from tests.support.eval_cli import run_args as _run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion, vllm_chat

REPO = Path(__file__).resolve().parents[2]
VERDICT = "[FEEDBACK] ok [RESULT] 1 [END]"


@pytest.fixture
def data(tmp_path) -> Path:
    """Four sample records as a JSONL file."""
    path = tmp_path / "data.jsonl"
    judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], path)
    return path


# ---------------------------------------------------------------------------------------- one writer per folder


def test_a_second_judge_eval_run_on_one_folder_is_refused_naming_the_first(data, tmp_path, capsys):
    """Two `judge-eval run` on one --out: the second stops (exit 2) naming the first's pid, host and command; the
    first finishes with one row per item, and nothing was judged twice (never both running). The first is a process
    of its own (the pid named is another process's); the second is judge-eval's ``main`` in this one."""
    first_request, release = threading.Event(), threading.Event()

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}  # the backend probe: a plain OpenAI server
        first_request.set()
        release.wait(timeout=45)  # held until the second run has been refused
        return 200, chat_completion(VERDICT, body["model"])

    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as server:
        first = subprocess.Popen([sys.executable, "-m", "eval.cli", *_run_args(server.base_url, data, out)],
                                 cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            assert first_request.wait(timeout=45), "the first run did not ask the judge within 45 s"
            n_before = len(server.requests)
            capsys.readouterr()
            second = eval_main(_run_args(server.base_url, data, out))
            refusal = capsys.readouterr().err
        finally:
            release.set()
            first.wait(timeout=45)
        assert first.returncode == 0, first.stderr.read()[-2000:]
    assert second == 2
    assert f"is in use by judge-eval run (pid {first.pid} on {socket.gethostname()}" in refusal
    assert f"eval/cli.py run --judge {server.base_url}" in refusal
    assert len(server.requests) - n_before <= 4  # the refused run asked nothing: only the first run's requests
    ids = [row["id"] for row in read_predictions(out)]
    assert len(ids) == 4 and len(set(ids)) == 4


def test_the_lock_is_released_when_the_holder_ends(tmp_path):
    """After the holder's block (or process) ends the folder can be held again; the lock file is owner-only."""
    with hold_run_folder(tmp_path / "run", "first"):
        with pytest.raises(RunFolderBusy, match=r"in use by first \(pid \d+"):
            with hold_run_folder(tmp_path / "run", "second"):
                pass
    with hold_run_folder(tmp_path / "run", "third") as folder:
        assert json.loads((folder / LOCK_FILE).read_text())["job"] == "third"
    assert oct((tmp_path / "run" / LOCK_FILE).stat().st_mode & 0o777) == "0o600"


def test_a_writer_waits_out_the_moment_a_holder_check_holds_the_lock(tmp_path, monkeypatch):
    """``run_folder_holder`` (judge-train submit) asks by taking the lock for a moment: a job starting in the folder
    at that moment stopped as if the folder were in use. Now the writer asks again; the order is made to happen:
    the check's lock is dropped only once the writer has been refused it."""
    import fcntl

    from judge.plumbing import run_folder

    out = tmp_path / "run"
    with hold_run_folder(out, "an earlier run"):
        pass  # the folder and its lock file, as a finished run leaves them
    check = os.open(out / LOCK_FILE, os.O_RDWR)
    fcntl.flock(check, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the check's moment
    real_flock, refused = fcntl.flock, []

    def flock(fd, operation):
        try:
            return real_flock(fd, operation)
        except BlockingIOError:
            refused.append(fd)
            os.close(check)  # the check ends right after the writer's first try
            raise

    monkeypatch.setattr(fcntl, "flock", flock)
    monkeypatch.setattr(run_folder, "BUSY_RETRY_S", 30.0)  # the order, not a race, decides
    with hold_run_folder(out, "the job") as folder:
        assert json.loads((folder / LOCK_FILE).read_text())["job"] == "the job"
    assert len(refused) == 1


def test_a_folder_held_past_the_retry_is_refused(tmp_path, monkeypatch):
    """A writer that holds the folder for longer than ``BUSY_RETRY_S`` is a writer: the second stops, naming it."""
    from judge.plumbing import run_folder

    monkeypatch.setattr(run_folder, "BUSY_RETRY_S", 0.0)
    with hold_run_folder(tmp_path / "run", "first"):
        with pytest.raises(RunFolderBusy, match=r"in use by first \(pid \d+"):
            with hold_run_folder(tmp_path / "run", "second"):
                pass


def test_a_writer_whose_lock_file_was_removed_meanwhile_locks_the_one_there_now(tmp_path, monkeypatch):
    """A holder refused before any work removes the lock file it made (``hold_run_folder``'s progress_files). A writer
    that opened that file before it went would lock a file no one else can open, and a third writer would take the
    new one beside it: two writers. The writer asks again whether the file it locked is still the folder's; the
    removal is made to fall between its open and its lock."""
    from judge.plumbing import run_folder
    from judge.plumbing.run_folder import run_folder_holder

    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILE).touch()
    real, locked = run_folder._lock_within, []

    def removed_first(fd, seconds):
        if not locked:
            (out / LOCK_FILE).unlink()  # the holder leaving the folder as it found it, after this writer's open
        locked.append(fd)
        return real(fd, seconds)

    monkeypatch.setattr(run_folder, "_lock_within", removed_first)
    with hold_run_folder(out, "the job"):
        assert len(locked) == 2
        assert run_folder_holder(out).startswith("the job (pid ")  # the file the folder names is the one held


def test_a_writer_whose_folder_was_removed_before_its_lock_file_makes_it_again(tmp_path, monkeypatch):
    """A holder leaving the folder as it found it removes the folder it made. A writer that made (or found) the folder
    just before that, and opened its lock file just after, found no folder to open it in: it was refused as a place
    that "cannot be made or written". It makes the folder again; the removal is made to fall between the two."""
    from judge.plumbing import run_folder

    out = tmp_path / "made" / "run"
    real, made = run_folder.make_private_dir, []

    def removed_after(path):
        folder = real(path)
        if not made:
            folder.rmdir()  # the holder's rmdir, after this writer made the folder and before it opens run.lock
            folder.parent.rmdir()
        made.append(folder)
        return folder

    monkeypatch.setattr(run_folder, "make_private_dir", removed_after)
    with hold_run_folder(out, "the job") as folder:
        assert len(made) == 2 and folder == out
        assert json.loads((out / LOCK_FILE).read_text())["job"] == "the job"


def test_a_lock_file_another_writer_made_meanwhile_is_not_taken_back(tmp_path, monkeypatch):
    """Whether a launch made the lock file it removes after a refusal is told by its own open (O_EXCL), not by a look
    before it: a file another writer made between that look and the open (here, as the folder is made) is the other
    writer's, and stays when this launch is refused."""
    from judge.plumbing import run_folder

    out = tmp_path / "run"
    out.mkdir()
    real = run_folder.make_private_dir

    def other_writer_first(path):
        folder = real(path)
        (folder / LOCK_FILE).touch()  # the other writer's open, after this launch found no lock file
        return folder

    monkeypatch.setattr(run_folder, "make_private_dir", other_writer_first)
    with pytest.raises(RuntimeError):
        with hold_run_folder(out, "the job", progress_files=["predictions.jsonl"]):
            raise RuntimeError("refused")
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]


def test_a_refused_block_leaves_the_folder_as_found_unless_it_wrote_progress(tmp_path):
    """With progress_files, a block raising before any progress file changed takes back the key, record, lock and
    folder it made; one raising after it wrote progress (a run interrupted after its first verdicts) keeps all of
    it, its key above all, which says what settings that progress was made with."""
    out = tmp_path / "made" / "run"
    for wrote_progress in (False, True):
        with pytest.raises(KeyboardInterrupt):
            with hold_run_folder(out, "the job", progress_files=["predictions.jsonl"]) as folder:
                (folder / RUN_KEY_FILE).write_text("{}", encoding="utf-8")
                (folder / "run.json").write_text("{}", encoding="utf-8")
                if wrote_progress:
                    (folder / "predictions.jsonl").write_text("{}\n", encoding="utf-8")
                raise KeyboardInterrupt
        if not wrote_progress:
            assert not (tmp_path / "made").exists()
    assert sorted(p.name for p in out.iterdir()) == sorted([LOCK_FILE, RUN_KEY_FILE, "run.json", "predictions.jsonl"])


def test_a_folder_whose_record_cannot_be_read_is_held_and_left_as_the_block_left_it(tmp_path):
    """What is put back after a refusal is read as the folder is taken; a record that cannot be read (here a folder
    named run.json) stopped the launch there with an IsADirectoryError traceback, before the job could name the
    problem. The block runs, and nothing is put back by a reading that failed."""
    out = tmp_path / "run"
    (out / "run.json").mkdir(parents=True)
    ran = []
    with pytest.raises(RuntimeError, match="the job's own refusal"):
        with hold_run_folder(out, "the job", progress_files=["predictions.jsonl"]) as folder:
            ran.append(folder)
            (folder / RUN_KEY_FILE).write_text("{}", encoding="utf-8")
            raise RuntimeError("the job's own refusal")
    assert ran == [out] and sorted(p.name for p in out.iterdir()) == sorted([LOCK_FILE, RUN_KEY_FILE, "run.json"])


def test_mera_and_training_take_the_same_lock(tmp_path, capsys):
    """judge-eval mera, judge-train run and judge-train data on a held folder stop before writing anything."""
    from eval.mera import cli as mera_cli
    from train.cli import run as train_run
    from train.synthetic.cli import main as data_main

    mera_out, train_out, data_out = tmp_path / "mera", tmp_path / "train", tmp_path / "data"
    records = tmp_path / "records.jsonl"  # an input that exists: the data stage checks its --input before the lock
    records.write_text("{}\n", encoding="utf-8")
    with hold_run_folder(mera_out, "holder"), hold_run_folder(train_out, "holder"), hold_run_folder(data_out, "holder"):
        assert mera_cli.main(["ruhumaneval", "--self-check", "--data", "sample", "--out", str(mera_out),
                              "--limit", "1"]) == 2  # fmt: skip
        assert train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir",
                          str(train_out)]) == 2  # fmt: skip
        assert data_main(["split", "--input", str(records), "--output", str(data_out)]) == 2
    assert capsys.readouterr().err.count("is in use by holder (pid") == 3
    for folder in (mera_out, train_out, data_out):
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]


# ------------------------------------------------------------------------------------------- one resume guard


def test_judge_eval_run_resumes_only_with_its_settings(data, tmp_path, capsys):
    """A resume that changes a setting that shapes the predictions is refused naming it; one that changes only how
    the run goes (concurrency, the server's URL) resumes; --overwrite starts over."""
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(_run_args(server.base_url, data, out, "--limit", "2")) == 0
        assert json.loads((out / RUN_KEY_FILE).read_text())["limit"] == 2
        capsys.readouterr()
        assert eval_main(_run_args(server.base_url, data, out, "--limit", "2", "--temperature", "0.7")) == 2
        assert "temperature: 0.0 -> 0.7" in capsys.readouterr().err
        assert len(read_predictions(out)) == 2
        n = len(server.requests)
        assert eval_main(_run_args(server.base_url.replace("127.0.0.1", "localhost"), data, out, "--limit", "2",
                                   "--concurrency", "1")) == 0  # fmt: skip
        assert len(server.requests) == n  # resumed a finished run: nothing to ask
        assert eval_main(_run_args(server.base_url, data, out, "--temperature", "0.7", "--overwrite")) == 0
    assert len(read_predictions(out)) == 4
    assert json.loads((out / RUN_KEY_FILE).read_text())["temperature"] == 0.7


# ----------------------------------------------------------------------------------- another command's folder


def _other_command_folder(folder: Path, job: str) -> dict[str, bytes]:
    """A folder as another command leaves it: its run.json naming ``job``, its key and a result file; returns the
    files' bytes, which a refused command must leave as they were."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"job": job, "config": {}}), encoding="utf-8")
    (folder / RUN_KEY_FILE).write_text(json.dumps({"task": job}), encoding="utf-8")
    (folder / "metrics.json").write_text('{"pass@1": 0.5}', encoding="utf-8")
    return _files(folder)


def _files(folder: Path) -> dict[str, bytes]:
    """The folder's files but the writers' lock file, which every command takes before it reads the folder."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != LOCK_FILE}


def test_a_folder_of_another_command_is_refused_with_or_without_overwrite(data, tmp_path, capsys):
    """judge-eval run into a ruHumanEval folder (none of its own progress files there, so no key was compared) wrote
    its key and run.json over the task's, and `score` then wrote over its pass@k. Refused now, naming the job the
    folder holds, --overwrite included (it discards the command's own progress, never another command's files), and
    before any request; the folder is left as it was."""
    out = tmp_path / "mera"
    before = _other_command_folder(out, "judge-eval mera ruhumaneval")
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        for extra in ((), ("--overwrite",)):
            capsys.readouterr()
            assert eval_main(_run_args(server.base_url, data, out, *extra)) == 2
            assert capsys.readouterr().err.endswith(
                f"judge-eval run: error: {out} holds a `judge-eval mera ruhumaneval` run (its run.json), not a "
                "`judge-eval run` one: use a fresh --out (--overwrite discards this command's own progress, never "
                "another command's files)\n")
        assert server.requests == []
    assert _files(out) == before


def test_training_refuses_another_commands_folder_with_or_without_overwrite(tmp_path, capsys):
    """judge-train with --output-dir a judge-eval run's folder trained into it, exit 0, and replaced its run.json
    with the training's (and `judge-eval run` there then took it for a training run). Refused now, exit 2, naming the
    job the folder holds and the flag judge-train discards its own runs with, --overwrite-output-dir included, and
    nothing in the folder is written."""
    from train.cli import run as train_run

    out = tmp_path / "eval"
    before = _other_command_folder(out, "judge-eval run")
    for extra in ((), ("--overwrite-output-dir", "true")):
        capsys.readouterr()
        assert train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(out),
                          *extra]) == 2  # fmt: skip
        assert capsys.readouterr().err == (
            f"judge-train run: error: {out} holds a `judge-eval run` run (its run.json), not a `judge-train run` one: "
            "use a fresh --output-dir (--overwrite-output-dir discards this command's own progress, never another "
            "command's files)\n")
    assert _files(out) == before


def test_rank_and_rutie_refuse_another_commands_folder_before_asking_anything(tmp_path, capsys):
    """rank into a MERA task's folder, and ruTiE into a ranking's (its run.json is the judge stage's, `judge-eval
    run`) or ruHumanEval's: each refused naming the job, before its endpoint is contacted (the URLs answer nothing),
    and the folder is left as it was. The ranking's own folders (run.json of `judge-eval run` or `judge-eval rank`)
    are its own."""
    from judge.plumbing.run_folder import ResumeMismatch, refuse_other_job

    dead = "http://127.0.0.1:1/v1"
    instructions = tmp_path / "instructions.jsonl"
    instructions.write_text(json.dumps({"prompt_id": 0, "instruction": "Задание", "meta": "m", "criteria": [
        {"criteria_name": "c", "rubrics": "0: нет\n\n1: да"}]}, ensure_ascii=False) + "\n", encoding="utf-8")
    mera = tmp_path / "mera"
    before = _other_command_folder(mera, "judge-eval mera ruhumaneval")
    capsys.readouterr()
    assert eval_main(["rank", "--model", dead, "--judge", dead, "--data", str(instructions), "--out",
                      str(mera), "--no-progress"]) == 2
    assert f"judge-eval rank: error: {mera} holds a `judge-eval mera ruhumaneval` run" in capsys.readouterr().err
    assert eval_main(["mera", "rutie", "--endpoint", dead, "--model", "m", "--data", "sample", "--out", str(mera)]) == 2
    assert f"{mera} holds a `judge-eval mera ruhumaneval` run (its run.json), not a `judge-eval mera rutie` one" in (
        capsys.readouterr().err)
    assert _files(mera) == before
    ranked = tmp_path / "rank"
    before = _other_command_folder(ranked, "judge-eval run")
    assert eval_main(["mera", "rutie", "--endpoint", dead, "--model", "m", "--data", "sample", "--out",
                      str(ranked)]) == 2
    assert f"{ranked} holds a `judge-eval run` run" in capsys.readouterr().err
    assert eval_main(["mera", "ruhumaneval", "--self-check", "--data", "sample", "--limit", "1", "--out",
                      str(ranked)]) == 2
    assert f"{ranked} holds a `judge-eval run` run (its run.json), not a `judge-eval mera ruhumaneval` one" in (
        capsys.readouterr().err)
    assert _files(ranked) == before
    for job in ("judge-eval run", "judge-eval rank"):
        (ranked / "run.json").write_text(json.dumps({"job": job}), encoding="utf-8")
        refuse_other_job(ranked, ("judge-eval run", "judge-eval rank"))  # a ranking's folder: its own
    with pytest.raises(ResumeMismatch, match="holds a `judge-eval rank` run"):
        refuse_other_job(ranked, ("judge-eval mera rutie",))
    (ranked / "run.json").write_text("not json", encoding="utf-8")
    refuse_other_job(ranked, ("judge-eval mera rutie",))  # unreadable: left to the key check, as before


def test_a_ranking_and_a_plain_run_refuse_each_others_folders(data, tmp_path, capsys):
    """Both write `judge-eval run` in run.json (a ranking judges through judge-eval run), so the job alone does not
    tell their folders apart: a plain run's folder holds predictions and no ranking's answers, a ranking's its
    answers.jsonl. judge-eval run refuses a ranking's folder and rank a plain run's, --overwrite included, before any
    request, the folder left as it was."""
    ranked = tmp_path / "rank"
    before = _other_command_folder(ranked, "judge-eval run")
    (ranked / "answers.jsonl").write_text("", encoding="utf-8")
    before = _files(ranked)
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        for extra in ((), ("--overwrite",)):
            capsys.readouterr()
            assert eval_main(_run_args(server.base_url, data, ranked, *extra)) == 2
            assert (f"judge-eval run: error: {ranked} holds a `judge-eval rank` run (its answers.jsonl), not a "
                    "`judge-eval run` one: use a fresh --out") in capsys.readouterr().err
        assert server.requests == []
    assert _files(ranked) == before
    plain = tmp_path / "plain"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(_run_args(server.base_url, data, plain)) == 0
    before = _files(plain)
    _rank_refused_as_plain(tmp_path, plain, "predictions.jsonl", capsys)
    assert _files(plain) == before


def _rank_refused_as_plain(tmp_path: Path, plain: Path, held: str, capsys) -> None:
    """judge-eval rank into ``plain``, with and without --overwrite (a candidate never reached): refused with exit 2
    as a plain run's folder holding ``held``."""
    dead = "http://127.0.0.1:1/v1"
    instructions = tmp_path / "instructions.jsonl"
    instructions.write_text(json.dumps({"prompt_id": 0, "instruction": "Задание", "meta": "m", "criteria": [
        {"criteria_name": "c", "rubrics": "0: нет\n\n1: да"}]}, ensure_ascii=False) + "\n", encoding="utf-8")
    for extra in ((), ("--overwrite",)):
        capsys.readouterr()
        assert eval_main(["rank", "--model", dead, "--judge", dead, "--data", str(instructions), "--out", str(plain),
                          "--no-progress", "--connect-timeout-s", "1", *extra]) == 2  # not 4, the candidate unreached
        assert (f"judge-eval rank: error: {plain} holds a `judge-eval run` run (its {held}, no ranking's "
                "answers), not a `judge-eval rank` one") in capsys.readouterr().err


@pytest.mark.parametrize("progress", ["pairwise_predictions.jsonl", "auto_items.jsonl", "task_choices.jsonl"])
def test_rank_refuses_a_plain_runs_folder_by_any_of_its_progress_files(tmp_path, capsys, progress):
    """A plain run's folder was told from a ranking's by its predictions.jsonl alone: a pairwise run's (or criteria
    auto's, stopped before its first verdict) passed, its candidate answers were paid for before the judge stage
    refused, and with --overwrite that stage deleted the other command's verdicts. Any of judge-eval run's progress
    files without a ranking's answers is now refused before the candidate is asked, the folder left as it was."""
    plain = tmp_path / "plain"
    _other_command_folder(plain, "judge-eval run")
    (plain / progress).write_text("{}\n", encoding="utf-8")
    before = _files(plain)
    _rank_refused_as_plain(tmp_path, plain, progress, capsys)  # before the fix: exit 4, the candidate unreachable
    assert _files(plain) == before
    assert not (plain / "candidate").exists()


def _whole(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, the lock file too, by its path in the folder."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_run_refused_before_judging_leaves_the_folder_as_it_found_it(data, tmp_path, capsys, monkeypatch):
    """A refused launch left its run.lock behind, and one refused once the folder was claimed its run_key.json too:
    a ranking's folder, or a run's copied without its lock, gained a lock; a fresh --out whose API key was unset or
    refused was made, holding a key of settings no verdict was asked with; a key already there was rewritten. Each
    refusal before any verdict now leaves the folder as it found it, byte for byte, its absence included."""
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    ranked = tmp_path / "rank"
    _other_command_folder(ranked, "judge-eval run")
    (ranked / "answers.jsonl").write_text("", encoding="utf-8")
    finished = tmp_path / "finished"
    keyed = tmp_path / "keyed"  # a key and no progress: what an earlier launch refused after its claim left
    keyed.mkdir()
    (keyed / RUN_KEY_FILE).write_text('{"judge": "an earlier one"}', encoding="utf-8")
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(_run_args(server.base_url, data, finished)) == 0
        (finished / LOCK_FILE).unlink()
        n_asked = len(server.requests)
        for out, extra, said in (
                (ranked, (), f"{ranked} holds a `judge-eval rank` run (its answers.jsonl)"),
                (finished, ("--temperature", "0.5"), f"{finished} holds progress made with other settings "
                                                     "(temperature: 0.0 -> 0.5)"),
                (keyed, ("--api-key-env", "NO_SUCH_KEY_VARIABLE"), "NO_SUCH_KEY_VARIABLE is not set")):
            before = _whole(out)
            capsys.readouterr()
            assert eval_main(_run_args(server.base_url, data, out, *extra)) == 2
            assert said in capsys.readouterr().err
            assert _whole(out) == before, out
        assert len(server.requests) == n_asked
    fresh = tmp_path / "new" / "fresh"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(_run_args(server.base_url, data, fresh, "--api-key-env", "NO_SUCH_KEY_VARIABLE")) == 2
    assert "NO_SUCH_KEY_VARIABLE is not set" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    with ScriptedEndpoint(vllm_chat(VERDICT), respond_get=lambda path: (401, {"error": {"message": "bad key"}})) as (
            refusing):
        assert eval_main(_run_args(refusing.base_url, data, fresh)) == 4
        assert refusing.requests == []
    assert "401" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_mera_refused_before_any_answer_leaves_the_folder_as_it_found_it(tmp_path, capsys):
    """judge-eval mera refused once it held its folder left run.lock behind: a fresh --out whose endpoint refused the
    key was made, and ruHumanEval's held its run_key.json and run.json too; a folder of other settings (copied
    without its lock) gained one. Both tasks now leave the folder as they found it, its absence included, and ask
    no question."""
    from eval.mera import cli as mera_cli
    from eval.mera.progress import claim_run_folder
    from tests.support.mera_humaneval import SAMPLE as HUMANEVAL_SAMPLE
    from tests.support.mera_rutie import SAMPLE as RUTIE_SAMPLE

    def never_asked(path, body):
        raise AssertionError(f"a question was sent: {path}")

    refusing_key = ScriptedEndpoint(never_asked, respond_get=lambda path: (401, {"error": {"message": "bad key"}}))
    with refusing_key as endpoint:
        for task, data, first_row in (("ruhumaneval", HUMANEVAL_SAMPLE, {"task_id": "0", "completions": [""]}),
                                      ("rutie", RUTIE_SAMPLE, {"dialog_id": 0, "question_id": 0})):
            def mera(out: Path) -> int:
                return mera_cli.main([task, "--endpoint", endpoint.base_url, "--model", "scripted", "--data",
                                      str(data), "--out", str(out), "--max-retries", "0"])  # fmt: skip

            capsys.readouterr()
            assert mera(tmp_path / task / "new" / "run") == 4
            assert "HTTP 401: bad key" in capsys.readouterr().err
            assert not (tmp_path / task).exists()
            other = tmp_path / f"{task}-other"
            progress = mera_cli.progress_files(task)
            claim_run_folder(other, {"task": task, "model": "another"}, progress)
            (other / progress[0]).write_text(json.dumps(first_row) + "\n", encoding="utf-8")
            before = _whole(other)
            assert mera(other) == 2
            assert "model: 'another' -> 'scripted'" in capsys.readouterr().err
            assert _whole(other) == before
        assert endpoint.requests == []


def test_a_data_stage_refused_before_any_work_leaves_the_folder_as_it_found_it(tmp_path, capsys):
    """judge-train data <stage> refused once it held its --output (an input line that is not JSON, found as the
    stage reads it; a journal of other settings) left run.lock and its run_key.json there, in a folder it made.
    Left as found now, its absence included."""
    from judge.plumbing.run_folder import claim_run_folder
    from train.synthetic.cli import JOURNAL_FILES
    from train.synthetic.cli import main as data_main

    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt_id": 1}\nnot json\n', encoding="utf-8")
    capsys.readouterr()
    assert data_main(["split", "--input", str(rows), "--output", str(tmp_path / "new" / "split")]) == 2
    assert f"{rows}:2: not a JSON line" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    other = tmp_path / "other"
    claim_run_folder(other, {"stage": "split", "seed": 7}, list(JOURNAL_FILES))
    (other / JOURNAL_FILES[0]).write_text('{"key": "a"}\n', encoding="utf-8")
    before = _whole(other)
    assert data_main(["split", "--input", str(rows), "--output", str(other)]) == 2
    assert f"{other} holds progress made with other settings" in capsys.readouterr().err
    assert _whole(other) == before


# ------------------------------------------------------------------------------ training and a finished export


def test_training_refuses_a_folder_with_a_finished_export(tmp_path):
    """A folder holding export/ and no checkpoint-N (never silently overwritten) needs
    --overwrite_output_dir, which deletes the export once training is about to start (``clear_earlier_run``)."""
    from train.config import ConfigError, Seq2SeqConfig
    from train.output_folder import check_output_dir, clear_earlier_run

    folder = tmp_path / "run"
    (folder / "export").mkdir(parents=True)
    (folder / "export" / "model.safetensors").write_bytes(b"weights")
    with pytest.raises(ConfigError, match="already holds a finished export/; .*--overwrite-output-dir"):
        check_output_dir(Seq2SeqConfig(output_dir=str(folder)))
    assert (folder / "export" / "model.safetensors").exists()
    overwrite = Seq2SeqConfig(output_dir=str(folder), overwrite_output_dir=True)
    assert check_output_dir(overwrite) is None and (folder / "export" / "model.safetensors").exists()
    # An export an earlier launch gave up, half-written beside it, and the earlier one moved aside mid-replacement.
    (folder / ".export.staging").mkdir()
    (folder / ".export.previous").mkdir()
    clear_earlier_run(overwrite)
    assert not (folder / "export").exists() and sorted(p.name for p in folder.iterdir()) == []


# ------------------------------------------------------------------------------------ score and repeated ids


def test_score_refuses_repeated_ids_unless_told(data, tmp_path, capsys):
    """Predictions with an id twice (two runs appended): `score` exits 2 naming the id; --allow-repeated-ids scores
    each id's first row."""
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(_run_args(server.base_url, data, out)) == 0
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "predictions.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    repeated = json.loads(lines[0])["id"]
    capsys.readouterr()
    assert eval_main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots"]) == 2
    assert f"1 id appears more than once ({repeated!r} x2)" in capsys.readouterr().err
    assert eval_main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots",
                      "--allow-repeated-ids"]) == 0  # fmt: skip
    assert json.loads((out / "metrics.json").read_text())["notes"]["n_repeated_ids"] == 1
    # the row left out is said in the report, on the console and on the page, not only counted in metrics.json
    said = ("**1 prediction row repeats an id an earlier row gave** (`--allow-repeated-ids`): each id is scored on "
            "its first row, the later one was left out.")
    assert said in (out / "report.md").read_text(encoding="utf-8")
    assert "1 prediction row repeats an id an earlier row gave (--allow-repeated-ids)" in capsys.readouterr().out
    assert "1 prediction row repeats an id an earlier row gave" in (out / "report.html").read_text(encoding="utf-8")


def test_refuse_repeated_ids_names_the_first_few():
    """Unique ids pass; repeats are counted and the first three named."""
    refuse_repeated_ids(["a", "b", "c"], "p.jsonl")
    with pytest.raises(ValueError, match=r"p.jsonl: 4 ids appear more than once \('a' x2, 'b' x3, 'c' x2, \.\.\.\)"):
        refuse_repeated_ids(["a", "a", "b", "b", "b", "c", "c", "d", "d", "e"], "p.jsonl")


@pytest.mark.parametrize("where", ["/sys/pollux-judge-run", "/proc/pollux-judge-run/deeper"])
def test_a_run_folder_that_cannot_be_made_is_one_config_error_naming_it(where):
    """A read-only place (sysfs refuses mkdir even to root) or a parent that cannot hold folders: mkdir's
    PermissionError / FileNotFoundError went through every command's error handling as a traceback."""
    from judge.plumbing.config_files import ConfigError
    from judge.plumbing.run_folder import hold_run_folder

    with pytest.raises(ConfigError, match=rf"^{where}: the run folder cannot be made or written there \("):
        with hold_run_folder(where, "judge-eval run"):
            pass
