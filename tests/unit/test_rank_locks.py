"""`judge-eval rank` takes two locks, one after the other: its candidate stage's (``out/candidate/run.lock``), let go
before its verdict stage takes ``out/run.lock``. A refusal once the first is taken leaves neither held; and a
candidate stage finding ``out`` held by a verdict stage stops at once, before it changes a file there."""

from __future__ import annotations

from pathlib import Path

from eval.cli import main
from judge.plumbing.run_folder import hold_run_folder, run_folder_holder
from tests.support.eval_ranking import Candidate, Judge, rank_argv, scores_by_output


def _ranked(tmp_path: Path, data: Path) -> Path:
    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    return out


def test_a_refusal_in_the_candidate_stage_lets_both_locks_go(tmp_path: Path, data: Path, capsys) -> None:
    out = _ranked(tmp_path, data)
    capsys.readouterr()
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--temperature", "0.2")) == 2
    assert "holds progress made with other settings" in capsys.readouterr().err
    assert (run_folder_holder(out / "candidate"), run_folder_holder(out)) == (None, None)


def test_a_refusal_in_the_verdict_stage_lets_both_locks_go(tmp_path: Path, data: Path, capsys) -> None:
    """The candidate stage resumes (its lock taken and let go), then the judge's other settings are refused."""
    out = _ranked(tmp_path, data)
    judge_config = tmp_path / "judge.yaml"
    judge_config.write_text("temperature: 0.5\n", encoding="utf-8")
    capsys.readouterr()
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--judge-config", str(judge_config)))
        assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
    assert code == 2 and "temperature: 0.0 -> 0.5" in capsys.readouterr().err
    assert (run_folder_holder(out / "candidate"), run_folder_holder(out)) == (None, None)


def test_a_verdict_stage_holding_out_stops_the_candidate_stage_before_it_deletes_anything(
        tmp_path: Path, data: Path, capsys) -> None:
    """Another ranking judging in ``out``: an --overwrite here would have deleted the answers and verdicts under it.
    Refused (exit 2) naming the holder, every file as it was, the candidate's lock let go."""
    out = _ranked(tmp_path, data)
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file() and path.name != "run.lock"}
    capsys.readouterr()
    with hold_run_folder(out, "judge-eval run"), Candidate() as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite"))
        assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
        assert run_folder_holder(out / "candidate") is None
    err = capsys.readouterr().err
    assert code == 2 and f"{out} is in use by" in err and "judge-eval run" in err
    assert {path.name: path.read_bytes() for path in out.iterdir() if path.is_file() and path.name != "run.lock"} \
        == before


def test_a_verdict_stage_taking_out_during_the_first_contact_stops_the_overwrite_before_it_deletes_anything(
        tmp_path: Path, data: Path, capsys, monkeypatch) -> None:
    """`--overwrite` deletes only after the candidate's first contact (a server may take minutes to start): another
    ranking's verdict stage that took ``out`` meanwhile is asked about again just before the deletions, and the run
    refused (exit 2) with every file as it was."""
    import contextlib

    from eval.judging import contact

    out = _ranked(tmp_path, data)
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file() and path.name != "run.lock"}
    real = contact.first_contact
    with contextlib.ExitStack() as held:
        def contacted_then_taken(*args, **kwargs):
            answer = real(*args, **kwargs)
            held.enter_context(hold_run_folder(out, "judge-eval run"))
            return answer

        monkeypatch.setattr(contact, "first_contact", contacted_then_taken)
        capsys.readouterr()
        with Candidate() as cand, Judge(scores_by_output()) as judge:
            code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite"))
            assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
        assert code == 2 and f"{out} is in use by" in capsys.readouterr().err
        assert {path.name: path.read_bytes() for path in out.iterdir()
                if path.is_file() and path.name != "run.lock"} == before


def test_a_verdict_stage_starting_between_the_last_look_and_the_overwrite_deletions_is_refused(
        tmp_path: Path, data: Path, capsys, monkeypatch) -> None:
    """Another ranking's verdict stage that takes ``out`` after the last look at its lock and before the deletions
    of `--overwrite` (a thread started where the claim begins, the claim going on only once that thread has ended:
    a gate, not a timing). The deletions looked and then deleted without the lock: the other stage took ``out``,
    wrote its verdicts, and the deletions removed them under it. Now they hold ``out``: that stage is refused,
    naming this ranking as the holder, and the ranking itself goes on."""
    import threading

    from judge.plumbing import run_folder

    out = _ranked(tmp_path, data)
    other: dict[str, str] = {}

    def verdict_stage() -> None:
        try:
            with hold_run_folder(out, "judge-eval run"):
                (out / "predictions.jsonl").write_text('{"id": "the other ranking\'s verdict"}\n')
                other["wrote"] = "yes"
        except run_folder.RunFolderBusy as err:
            other["refused"] = str(err)

    claim = run_folder.claim_run_folder

    def claiming(folder, *args, **kwargs):
        if Path(folder) == out / "candidate":
            stage = threading.Thread(target=verdict_stage)
            stage.start()
            stage.join()
        return claim(folder, *args, **kwargs)

    monkeypatch.setattr(run_folder, "claim_run_folder", claiming)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite")) == 0
    assert "wrote" not in other  # before the fix: written, then deleted by the claim
    assert other["refused"].startswith(f"{out} is in use by") and "judge-eval rank" in other["refused"]
    assert (run_folder_holder(out / "candidate"), run_folder_holder(out)) == (None, None)
