"""`judge-eval rank` takes two locks: its candidate stage's (``out/candidate/run.lock``), then ``out/run.lock``,
taken before the first is let go and held to the ranking's end, its verdict stage judging under it. A refusal once
the first is taken leaves neither held; a candidate stage finding ``out`` held stops at once, before it changes a
file there; and another ranking reaching ``out`` at any point of a ranking's later stages is refused, the points
made by a gate (the other ranking run to its end in a thread joined there), never by a timing."""

from __future__ import annotations

import json
from pathlib import Path

from eval.cli import main
from judge.plumbing.run_folder import hold_run_folder, run_folder_holder
from tests.support.eval_ranking import CASES, Candidate, Judge, rank_argv, scores_by_output


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



def _second_ranking_at(out: Path, data: Path, cand: Candidate, judge: Judge, *flags: str) -> dict:
    """Another `judge-eval rank` on ``out`` (``flags``: its own), run to its end in a thread that the caller joins:
    the first ranking goes on only once it has ended, so where it runs is the gate's place, not a timing."""
    import threading

    other: dict = {}

    def ranking() -> None:
        n_asked = len(cand.bodies("/v1/chat/completions"))
        other["code"] = main(rank_argv(cand.base_url, judge.base_url, data, out, *flags))
        other["n_asked"] = len(cand.bodies("/v1/chat/completions")) - n_asked

    second = threading.Thread(target=ranking)
    second.start()
    second.join()
    return other


def _ranked_while_a_second_ranking_is_refused(tmp_path: Path, data: Path, monkeypatch, capsys, gate: tuple,
                                              first: tuple = (), second: tuple = (),
                                              override: dict | None = None) -> tuple[dict, dict]:
    """A ranked folder ranked again (``first``: its flags; ``override``: the candidate's answers), another ranking
    (``second``: its flags) run to its end at ``gate``: (module, function, "before" or "after" the ranking's call of
    it). The other must be refused (exit 2) before it asks the candidate anything, naming this ranking as the
    holder; this one must end whole (exit 0), both locks let go. (its rank.json, the one before)."""
    module, name, when = gate
    out = _ranked(tmp_path, data)
    before = json.loads((out / "rank.json").read_text())
    other: dict = {}
    real = getattr(module, name)
    with Candidate(override=override) as cand, Judge(scores_by_output()) as judge:
        def gated(*args, **kwargs):
            if other:  # the other ranking's own call goes straight on
                return real(*args, **kwargs)
            other["code"] = "running"
            result = real(*args, **kwargs) if when == "after" else None
            other.update(_second_ranking_at(out, data, cand, judge, *second))
            return result if when == "after" else real(*args, **kwargs)

        monkeypatch.setattr(module, name, gated)
        capsys.readouterr()
        code = main(rank_argv(cand.base_url, judge.base_url, data, out, *first))
    assert other == {"code": 2, "n_asked": 0}
    assert f"{out} is in use by judge-eval rank (pid " in capsys.readouterr().err
    assert code == 0 and (run_folder_holder(out / "candidate"), run_folder_holder(out)) == (None, None)
    return json.loads((out / "rank.json").read_text()), before


def test_a_second_ranking_between_the_candidate_and_verdict_stages_is_refused(
        tmp_path: Path, data: Path, monkeypatch, capsys) -> None:
    """`out` was let go between the stages: another ranking's --overwrite, started as this one writes items.jsonl,
    deleted the answers, items and verdicts this one was about to judge, and asked the candidate all over again. Now
    the ranking holds ``out`` from the end of its candidate stage: the other is refused before it asks or deletes
    anything, naming this ranking, and this one ends as a rerun of a whole folder does."""
    from eval.ranking import rank as ranking

    after, before = _ranked_while_a_second_ranking_is_refused(
        tmp_path, data, monkeypatch, capsys, (ranking, "write_items", "before"), second=("--overwrite",))
    assert after["matrix"] == before["matrix"]


def test_a_second_ranking_after_the_verdict_stage_before_rank_json_is_refused(
        tmp_path: Path, data: Path, monkeypatch, capsys) -> None:
    """The verdict stage let ``out`` go before the matrix, rank.json, the page and run.json's ranking section were
    written: another ranking started then wrote its items, verdict record and rank.json between this one's verdicts
    and its matrix. Now it is refused, naming this ranking, while this one writes its results."""
    from eval.judging import run as judging_run

    after, before = _ranked_while_a_second_ranking_is_refused(
        tmp_path, data, monkeypatch, capsys, (judging_run, "run", "after"))
    assert after["matrix"] == before["matrix"]


def test_a_second_ranking_while_an_overwrite_with_nothing_to_judge_records_its_judge_is_refused(
        tmp_path: Path, data: Path, monkeypatch, capsys) -> None:
    """--overwrite with every new answer empty: no verdict stage, and the ranking itself deleted predictions.jsonl
    and wrote run.json (``unasked_judge``) without holding ``out``, while another ranking could be judging there.
    Now under the ranking's hold: the other, started at that point, is refused, and this one's matrix is the
    unjudged items' alone."""
    from eval.ranking import rank as ranking

    every_answer_cut = {pid: "<think>рассуждаю и не заканчиваю" for pid in CASES}
    after, _ = _ranked_while_a_second_ranking_is_refused(
        tmp_path, data, monkeypatch, capsys, (ranking, "unasked_judge", "before"), first=("--overwrite",),
        override=every_answer_cut)
    assert after["matrix"]["grand_mean"] == 0.0 and after["counts"]["n_items"] == 0
