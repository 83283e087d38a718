"""`judge-eval rank` names each verdict that was not scored by its cause, as `judge-eval score` does: a verdict
whose text read no score is ``unparsed``; a judgment the judge's server never ran (its prompt did not fit the
context: ``context_length_exceeded``; or ``aborted``, ``engine_refused``) is ``not_run``; a request that failed is
``request_failed``. Counting a too-long prompt as unparsed sent the reader looking for an unreadable judge output
that was never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.ranking.matrix import pollux_matrix
from eval.ranking.rank import _summary_line, ranked_items

SCALE = "0: нет\n\n1: частично\n\n2: да"


def _write(tmp_path: Path, rows: list[dict]) -> None:
    import judge

    records = [judge.JudgeRecord(id=f"{k}#0#x", instruction="Задание", answer="Ответ", criteria_name="X",
                                 rubrics=SCALE, extra={"prompt_id": k, "meta": "m"}) for k in range(len(rows))]
    judge.write_jsonl(records, tmp_path / "items.jsonl")
    (tmp_path / "predictions.jsonl").write_text(
        "".join(json.dumps({"id": f"{k}#0#x", **row}, ensure_ascii=False) + "\n" for k, row in enumerate(rows)),
        encoding="utf-8")


FAILED = {"raw_output": None, "feedback": "", "score": None, "parse_ok": False}
ROWS = [
    {"raw_output": "[RESULT] 2 [END]", "feedback": "", "score": 2.0, "parse_ok": True},
    {"raw_output": "Обоснование без оценки.", "feedback": "", "score": None, "parse_ok": False, "error": "no_score"},
    {**FAILED, "error": "context_length_exceeded", "reason": "the judge's prompt is 1,123 tokens; Shorten the answer"},
    {**FAILED, "error": "aborted", "reason": "the engine aborted the generation"},
    {**FAILED, "error": "engine_refused", "reason": "HTTP 400"},
    {**FAILED, "error": "request_failed", "reason": "connection refused"},
]


@pytest.mark.parametrize("reader", ["toolkit", "pollux"])
def test_each_unscored_verdict_is_named_by_its_cause(tmp_path: Path, reader: str) -> None:
    _write(tmp_path, ROWS)
    items = ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl", reader)
    assert [it.status for it in items] == ["ok", "unparsed", "not_run", "not_run", "not_run", "request_failed"]


def test_the_matrix_the_summary_and_the_refusal_count_a_too_long_prompt_as_not_run(tmp_path: Path) -> None:
    _write(tmp_path, ROWS)
    matrix = pollux_matrix(ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl"), n_boot=0)
    corner = matrix.cell("mean_over_criteria", "mean_over_meta")
    assert (corner["n_unparsed"], corner["n_not_run"], corner["n_request_failed"]) == (1, 3, 1)
    # Older readers of cells.csv find every earlier column where it was: the new count comes last.
    assert matrix.cells_csv().splitlines()[0].split(",")[-2:] == ["n_empty_answer", "n_not_run"]
    line = _summary_line(matrix, {"empty_answer": [], "no_answer": []})
    assert "'unparsed': 1" in line and "'not_run': 3" in line and "'request_failed': 1" in line
    # Nothing scored: the refusal names the cause, not "unparsed".
    _write(tmp_path, [ROWS[2]])
    with pytest.raises(ValueError, match=r"'not_run': 1") as raised:
        pollux_matrix(ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl"), n_boot=0)
    assert "'unparsed': 0" in str(raised.value)


def test_a_run_whose_every_verdict_is_too_long_says_so_and_why(tmp_path: Path, data: Path, capsys) -> None:
    """The walk's CPU ranking, scripted: every judge request refused as too long for the judge's window (vLLM's
    words, HTTP 400). The run stops (exit 2) with "no verdict was scored", counting them not_run (it said
    unparsed), and quotes the first one's error and reason, which says what to shorten."""
    from eval.cli import main
    from tests.support.eval_ranking import Candidate, Judge, rank_argv, scores_by_output

    too_long = ("This model's maximum context length is 2048 tokens. However, your prompt contains 3000 input "
                "tokens, which exceeds this limit even without any output tokens.")

    class TooLong(Judge):
        def _respond(self, path: str, body: dict):
            if path != "/v1/chat/completions":
                return 404, {"detail": "Not Found"}
            return 400, {"object": "error", "message": too_long, "type": "BadRequestError", "code": 400}

    with Candidate() as cand, TooLong(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "r", "--empty-answer", "unscored",
                         "--no-answer", "unscored")) == 2
    err = capsys.readouterr().err
    assert "no verdict was scored" in err and "'unparsed': 0" in err and "'not_run': " in err, err
    assert "context_length_exceeded" in err and "maximum context length is 2048 tokens" in err, err
