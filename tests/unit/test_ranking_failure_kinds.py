"""`judge-eval rank` names each verdict that was not scored by its cause, as `judge-eval score` does: a verdict
whose text read no score is ``unparsed``; a judgment the judge's server never ran (its prompt did not fit the
judge's context: ``context_length_exceeded``, a final row) is ``not_run``; a request that failed is
``request_failed``, an engine's aborted generation or refused judgment among them (the judge stage writes them as
failed requests, the first once its retries are spent, the second at once; the next run asks them again). Counting a too-long prompt as unparsed sent the reader
looking for an unreadable judge output that was never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.judging.backends import too_long_outcome
from eval.judging.predictions import REQUEST_FAILED
from eval.ranking.items import NOT_RUN_ERRORS
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
    {**FAILED, "error": "request_failed", "reason": "connection refused"},
]


@pytest.mark.parametrize("reader", ["toolkit", "pollux"])
def test_each_unscored_verdict_is_named_by_its_cause(tmp_path: Path, reader: str) -> None:
    _write(tmp_path, ROWS)
    items = ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl", reader)
    assert [it.status for it in items] == ["ok", "unparsed", "not_run", "request_failed"]


def test_the_matrix_the_summary_and_the_refusal_count_a_too_long_prompt_as_not_run(tmp_path: Path) -> None:
    _write(tmp_path, ROWS)
    matrix = pollux_matrix(ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl"), n_boot=0)
    corner = matrix.cell("mean_over_criteria", "mean_over_meta")
    assert (corner["n_unparsed"], corner["n_not_run"], corner["n_request_failed"]) == (1, 1, 1)
    # Older readers of cells.csv find every earlier column where it was: the new count comes last.
    assert matrix.cells_csv().splitlines()[0].split(",")[-2:] == ["n_empty_answer", "n_not_run"]
    line = _summary_line(matrix, {"empty_answer": [], "no_answer": []})
    assert "'unparsed': 1" in line and "'not_run': 1" in line and "'request_failed': 1" in line
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


def test_an_aborted_or_refused_judgment_is_a_failed_request_the_next_run_asks_again(tmp_path: Path, data: Path) -> None:
    """The judge stage's own rows, not hand-written ones: an engine's aborted generation (finish_reason ``abort``)
    and its refusal of a judgment (an HTTP 400 not about the context) are written as ``request_failed`` (the first once
    its retries are spent, the second at once; exit 3, asked again by the next run), never as a final row: ``not_run`` holds only the too-long prompt the stage writes as one
    (``too_long_outcome``), and docs/ranking.md's ``n_not_run`` names just that code."""
    from eval.cli import main
    from judge.verdicts import VerdictError
    from tests.support.eval_ranking import GEN, LITERACY, TECH, Candidate, Judge, rank_argv, scores_by_output
    from tests.support.scripted_endpoint import chat_completion

    class AbortsAndRefuses(Judge):
        def _respond(self, path: str, body: dict):
            prompt = body.get("messages", [{}])[0].get("content", "")
            if path == "/v1/chat/completions" and "Ответ один." in prompt and LITERACY in prompt:
                return 200, chat_completion("[FEEDBACK] Обосн", body["model"], "abort")
            if path == "/v1/chat/completions" and "Ответ два." in prompt and LITERACY in prompt:
                return 400, {"object": "error", "message": "temperature must be non-negative", "code": 400}
            return super()._respond(path, body)

    config = tmp_path / "judge.yaml"  # the stage's retries spent at once: the same rows, sooner
    config.write_text("max_retries: 0\n", encoding="utf-8")
    with Candidate() as cand, AbortsAndRefuses(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "r", "--judge-config", str(config))) == 3
    rows = [json.loads(line) for line in (tmp_path / "r" / "predictions.jsonl").read_text("utf-8").splitlines()]
    asked = [row for row in rows if row["reason"].startswith(("GenerationAborted", "HTTP 400"))]
    assert len(asked) == 2 and {row["error"] for row in asked} == {REQUEST_FAILED}, rows
    cells = json.loads((tmp_path / "r" / "rank.json").read_text("utf-8"))["matrix"]["cells"]
    assert cells[LITERACY][GEN]["n_request_failed"] == 2 and cells[LITERACY][GEN]["n_not_run"] == 0, cells[LITERACY]
    assert cells["mean_over_criteria"]["mean_over_meta"]["n_not_run"] == 0 and TECH in cells[LITERACY]
    # The codes not_run counts are those the judge stage writes as a final row for a judgment never run.
    assert NOT_RUN_ERRORS == (too_long_outcome("")["error"],)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ranking.md").read_text("utf-8")
    said = doc.split("`n_not_run` (", 1)[1].split("`n_no_prediction`", 1)[0]
    codes = [v for k, v in vars(VerdictError).items() if k.isupper() and isinstance(v, str)]
    assert [code for code in codes if f"`{code}`" in said] == list(NOT_RUN_ERRORS), said


def test_the_refusal_quotes_a_ranked_item_s_own_row_not_another_selection_s(tmp_path: Path, data: Path,
                                                                              capsys) -> None:
    """A folder ranked again with another ``--meta`` keeps the first selection's verdict rows in predictions.jsonl
    (unselected, for the run that selects them again). Every judgment of both too long, the second run's "no verdict
    was scored" quotes one of its own items' rows (its own judge's words), not the first row in the file, which is
    an item of the other selection."""
    from eval.cli import main
    from tests.support.eval_ranking import GEN, TECH, CASES, Candidate, Judge, rank_argv, scores_by_output

    def too_long(window: int) -> type:
        class TooLong(Judge):
            def _respond(self, path: str, body: dict):
                if path != "/v1/chat/completions":
                    return 404, {"detail": "Not Found"}
                return 400, {"object": "error", "type": "BadRequestError", "code": 400,
                             "message": f"This model's maximum context length is {window} tokens. However, your "
                                        f"prompt contains 3000 input tokens."}
        return TooLong

    for meta, window in ((GEN, 2048), (TECH, 1536)):
        with Candidate() as cand, too_long(window)(scores_by_output()) as judge:
            assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "r", "--meta", meta,
                                  "--empty-answer", "unscored")) == 2
    err = capsys.readouterr().err.rsplit("no verdict was scored", 1)[1]
    quoted = err.split("the first judgment not run, id ", 1)[1]
    assert CASES[int(quoted.split("#", 1)[0])][0] == TECH, err
    assert "maximum context length is 1536 tokens" in quoted and "2048" not in quoted, err
