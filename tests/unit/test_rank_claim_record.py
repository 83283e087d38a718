"""`judge-eval rank` records which Slurm job claimed its candidate folder: ``candidate/run.json``, its launch naming
the job, written after the claim has cleared what ``--overwrite`` discards and before the first answer. The record
is what ``slurm/rank.sbatch`` reads before it resumes a requeued task (tests/unit/test_slurm_array_requeue.py).

The first answer is caught where it would be journaled (``JournalWriter.append``'s first call), the claim where
``claim_run_folder`` is called: the order of events is what the test sees, not a timing.
"""

from __future__ import annotations

import json
from pathlib import Path

from eval.cli import main
from judge.plumbing import journal, run_folder
from tests.support.eval_ranking import Candidate, Judge, rank_argv, scores_by_output


def _named_job(folder: Path) -> str | None:
    record = folder / "candidate" / "run.json"
    return json.loads(record.read_text())["launch"]["slurm_job_id"] if record.is_file() else None


def test_the_candidate_claim_is_recorded_with_its_job_after_the_clear_and_before_the_first_answer(
        tmp_path: Path, data: Path, monkeypatch) -> None:
    """A ranking by job 6, then `--overwrite` by job 7: at its claim the record still names job 6 (or nothing), at
    its first answer it names job 7 and the discarded answers are gone. Before, no record written after the clear
    named the job until the whole answer stage was done (out/run.json)."""
    out = tmp_path / "bench"
    monkeypatch.setenv("SLURM_JOB_ID", "6")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    assert _named_job(out) == "6"  # before the fix: None, no record in candidate/
    seen: dict[str, object] = {}
    claim, append = run_folder.claim_run_folder, journal.JournalWriter.append

    def claiming(folder, *args, **kwargs):
        if Path(folder) == out / "candidate":
            seen["at the claim"] = _named_job(out)
        return claim(folder, *args, **kwargs)

    def first_answer(self, *rows):
        seen.setdefault("at the first answer", (_named_job(out), (out / "answers.jsonl").exists()))
        return append(self, *rows)

    monkeypatch.setattr(run_folder, "claim_run_folder", claiming)
    monkeypatch.setattr(journal.JournalWriter, "append", first_answer)
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite")) == 0
    assert seen == {"at the claim": "6", "at the first answer": ("7", False)}
    record = json.loads((out / "candidate" / "run.json").read_text())
    assert record["job"] == "judge-eval rank" and record["earlier_launches"][-1]["slurm_job_id"] == "6"


def test_an_unreadable_earlier_record_is_replaced_and_said(tmp_path: Path, data: Path, monkeypatch, caplog) -> None:
    """A candidate/run.json cut short names no launch: the claim replaces it with this run's, with a warning, rather
    than stop the ranking."""
    out = tmp_path / "bench"
    (out / "candidate").mkdir(parents=True)
    (out / "candidate" / "run.json").write_text("{")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    assert _named_job(out) == "7"
    assert any("candidate/run.json" in r.getMessage() and "replaced" in r.getMessage() for r in caplog.records)


def test_overwrite_clears_the_judge_stage_record_and_key_with_the_verdicts(tmp_path: Path, data: Path,
                                                                            monkeypatch) -> None:
    """`--overwrite` deletes the verdicts with the answers, and the judge stage's out/run.json and out/run_key.json
    with them: at the first answer neither is left. Kept, a rerun stopped there and resumed without --overwrite
    whose judge stage asked nothing (``unasked_judge`` keeps an existing run.json) joined the ranking's settings to
    the discarded judge's record."""
    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    assert (out / "run.json").is_file() and (out / "run_key.json").is_file()
    seen: dict[str, object] = {}
    append = journal.JournalWriter.append

    def first_answer(self, *rows):
        seen.setdefault("at the first answer", [n for n in ("run.json", "run_key.json") if (out / n).exists()])
        return append(self, *rows)

    monkeypatch.setattr(journal.JournalWriter, "append", first_answer)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite")) == 0
    assert seen == {"at the first answer": []}  # before the fix: both, the discarded run's
    assert (out / "run.json").is_file() and (out / "run_key.json").is_file()  # this run's, written by its judge stage


def test_the_docs_name_every_file_overwrite_deletes() -> None:
    """docs/ranking.md lists what `--overwrite` deletes with the answers: every one of ``RANKING_OUTPUTS`` and the
    judge stage's key and record. The list left out bench.json (an older folder's ranking result), which the claim
    deletes and the log names."""
    from eval.ranking.rank import RANKING_OUTPUTS

    docs = (Path(__file__).resolve().parents[2] / "docs" / "ranking.md").read_text(encoding="utf-8")
    listed = docs.split("`--overwrite` discards the answers", 1)[1].split("each deleted file is named", 1)[0]
    assert [name for name in (*RANKING_OUTPUTS, "run_key.json", "run.json") if f"`{name}`" not in listed] == []


def test_overwrite_stopped_before_the_candidate_answers_leaves_the_folder_as_it_found_it(
        tmp_path: Path, data: Path, monkeypatch) -> None:
    """`--overwrite` deleted the answers, the verdicts and the judge stage's record before the API key was read and
    the candidate reached: a run stopped there (a key variable unset, a candidate unreachable) left the folder
    without them, and nothing put them back. The deletions now wait for the candidate's first contact, so such a
    stop leaves every file as it was (the writers' lock files aside)."""
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0

    def files() -> dict[str, bytes]:
        return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
                if p.is_file() and p.name != run_folder.LOCK_FILE}

    before = files()
    assert {"answers.jsonl", "predictions.jsonl", "rank.json", "run.json", "run_key.json"} <= set(before)
    dead = "http://127.0.0.1:1/v1"
    with Judge(scores_by_output()) as judge:
        assert main(rank_argv(dead, judge.base_url, data, out,
                              "--overwrite", "--connect-timeout-s", "1")) == 4  # the candidate unreachable
        assert files() == before  # before the fix: answers, verdicts, results and the judge's record deleted
        with Candidate() as cand:
            assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite",
                                  "--api-key-env", "NO_SUCH_KEY_VARIABLE")) == 2  # the key variable unset
        assert files() == before
