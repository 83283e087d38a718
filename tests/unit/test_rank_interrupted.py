"""Ctrl+C during `judge-eval rank --overwrite`, before its first answer is written: the line says what the folder holds
for this run (nothing), and a rerun starts from nothing, not from the discarded run's items and verdicts.

The interrupt is raised where the first answer would be journaled (``JournalWriter.append``'s first call): the
candidate has answered, nothing of this run is on disk yet.
"""

from __future__ import annotations

from pathlib import Path

from eval.cli import main
from eval.ranking.rank import ITEMS, MATRIX, RANKING_RESULT, UNJUDGED
from judge.plumbing import journal
from tests.support.eval_ranking import CASES, Candidate, Judge, rank_argv, scores_by_output


def _interrupt_the_first_append(monkeypatch) -> list[int]:
    """Ctrl+C at the first row any journal is asked to write; returns the count of appends asked."""
    asked = []

    def append(self, *rows):
        asked.append(len(rows))
        raise KeyboardInterrupt

    monkeypatch.setattr(journal.JournalWriter, "append", append)
    return asked


def test_ctrl_c_before_the_first_answer_of_an_overwrite_keeps_nothing_of_the_discarded_run(
        tmp_path: Path, data: Path, capsys, monkeypatch) -> None:
    """A whole ranking, then --overwrite stopped before its first answer: exit 130 and the bare line (the earlier
    run's items and verdicts were counted as this run's rows kept, and a rerun resumed from them); the discarded
    run's items, verdicts and matrix are gone, so the rerun without --overwrite asks the judge for every item again."""
    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert len(judge.bodies("/v1/chat/completions")) == 14
    with monkeypatch.context() as patched:
        asked = _interrupt_the_first_append(patched)
        with Candidate() as cand, Judge(scores_by_output()) as judge:
            capsys.readouterr()
            code = main(rank_argv(cand.base_url, judge.base_url, data, out, "--overwrite", "--concurrency", "1"))
            err = capsys.readouterr().err
            assert judge.bodies("/v1/chat/completions") == []
    assert (code, err.splitlines()[-1], asked) == (130, "judge-eval rank: interrupted", [1])
    assert [name for name in ("answers.jsonl", ITEMS, "predictions.jsonl", UNJUDGED, RANKING_RESULT, MATRIX)
            if (out / name).exists()] == []
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert len(cand.bodies("/v1/chat/completions")) == len(CASES)
        assert len(judge.bodies("/v1/chat/completions")) == 14  # none of the discarded run's verdicts reused
