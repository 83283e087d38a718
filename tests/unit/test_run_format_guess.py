"""`judge-eval run` stops when the verdict format it guessed for a URL judge is the wrong one.

A judge behind a plain URL whose model id and ``root`` do not name Pollux-4B is read as ``tagged``. A renamed 4B copy
(reasoning, then a bare integer) then failed every verdict as a final row that no rerun asks again, and the run
exited 0. Now the first ``N_FIRST_MISREAD`` answers, all unreadable as guessed and all readable in the other format,
stop it with the flag to set. A stated format is never second-guessed, and a tagged verdict cut before ``[END]``
(which ends with its score) does not count. The server is a scripted vLLM stand-in
(``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import pytest

import judge
from eval.cli import main
from eval.judging.format_choice import N_FIRST_MISREAD
from eval.judging.predictions import read_predictions
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion, vllm_chat

INTEGER_ANSWER = "<think>Ответ верный, но краткий.</think>\n\n1"


def _vllm(text: str) -> ScriptedEndpoint:
    """vLLM serving a renamed checkpoint under the name ``judge``, every chat answer ``text``."""
    entry = {"id": "judge", "object": "model", "max_model_len": 4096, "root": "/models/renamed-judge"}
    return ScriptedEndpoint(vllm_chat(text), respond_get=lambda path: (200, {"object": "list", "data": [entry]}))


@pytest.fixture
def data(tmp_path):
    return judge.write_jsonl(judge.load_records(judge.sample_data_path())[:8], tmp_path / "data.jsonl")


def test_integer_answers_to_a_guessed_tagged_format_stop_the_run_with_the_flag_to_set(data, tmp_path, capsys):
    out = tmp_path / "run"
    with _vllm(INTEGER_ANSWER) as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 2
        assert len(server.bodies("/v1/chat/completions")) == N_FIRST_MISREAD == 5
        assert ("judge-eval run: error: verdict_format: the judge's first 5 answers do not read as tagged verdicts "
                "but do as integer ones; tagged was guessed from the model id: start again with --overwrite "
                "--verdict-format integer") in capsys.readouterr().err
        assert {(r["error"], r["score"]) for r in read_predictions(out)} == {("no_result", None)}
        assert main(run_args(server.base_url, data, out, "--overwrite", "--verdict-format", "integer")) == 0
    assert {(r["score"], r["feedback"]) for r in read_predictions(out)} == {(1.0, "Ответ верный, но краткий.")}
    assert len(read_predictions(out)) == 8


@pytest.mark.parametrize("text, extra, error", [
    (INTEGER_ANSWER, ("--verdict-format", "tagged"), "no_result"),  # stated: the user's choice stands
    ("[FEEDBACK] Ответ верный. [RESULT] 1", (), "missing_end"),  # a tagged verdict cut before [END]
], ids=["stated-format", "cut-tagged-verdict"])
def test_a_stated_format_or_cut_tagged_verdicts_run_to_the_end(data, tmp_path, text, extra, error):
    out = tmp_path / "run"
    with _vllm(text) as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1", *extra)) == 0
        assert len(server.bodies("/v1/chat/completions")) == 8
    assert {(r["error"], r["score"]) for r in read_predictions(out)} == {(error, None)}


# ------------------------------------------------------------------- a chat model that is no judge at all

CHAT_ANSWER = "Конечно! Вот стихотворение о первом снеге."


def _chat_model(text: str, finish_reason: str) -> ScriptedEndpoint:
    """vLLM serving a chat model that is no judge under the name ``assistant``: every chat answer ``text``."""
    entry = {"id": "assistant", "object": "model", "max_model_len": 4096, "root": "/models/assistant"}

    def respond(path: str, body: dict) -> tuple:
        return (404, {"detail": "Not Found"}) if path == "/v1/judge" else (
            200, chat_completion(text, body["model"], finish_reason))

    return ScriptedEndpoint(respond, respond_get=lambda path: (200, {"object": "list", "data": [entry]}))


def test_a_chat_model_that_writes_no_verdict_stops_the_run_in_one_line(data, tmp_path, capsys):
    """Before: --judge at a chat model that is no judge judged every item, each answer a final parse failure no
    rerun asks again, and the run exited 0 with only a count in its summary. Now its first answers, ended on their
    own and read in neither format, stop it (exit 2) with what it answered and the two ways on."""
    out = tmp_path / "run"
    with _chat_model(CHAT_ANSWER, "stop") as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 2
        assert len(server.bodies("/v1/chat/completions")) == N_FIRST_MISREAD
        err = capsys.readouterr().err
        assert ("judge-eval run: error: judge: the first 5 answers of assistant hold no verdict, read as tagged "
                "([FEEDBACK] ... [RESULT] n [END]) or integer (a bare integer last), though each ended on its own; "
                "the first: 'Конечно! Вот стихотворение о первом снеге.': is it a POLLUX judge? Start again with "
                "--overwrite (this --out holds those answers) and --judge at one, or --verdict-format to judge "
                "with this one anyway, each such answer a counted parse failure\n") in err
        assert "Traceback" not in err
        assert {(r["error"], r["score"]) for r in read_predictions(out)} == {("no_result", None)}
        assert main(run_args(server.base_url, data, out, "--overwrite", "--verdict-format", "tagged")) == 0
        assert len(server.bodies("/v1/chat/completions")) == N_FIRST_MISREAD + 8  # all 8 asked again
    assert [(r["error"], r["parse_ok"]) for r in read_predictions(out)] == [("no_result", False)] * 8


def test_answers_cut_by_max_tokens_are_no_sign_of_a_chat_model(data, tmp_path):
    """A judge whose verdicts max_tokens cut (finish_reason length) before any [RESULT] is a judge: its rows are
    counted parse failures and the run goes on to the end, as --max-tokens is what to change."""
    out = tmp_path / "run"
    with _chat_model("[FEEDBACK] Ответ верный, но", "length") as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 0
        assert len(server.bodies("/v1/chat/completions")) == 8
    assert {(r["error"], r["finish_reason"]) for r in read_predictions(out)} == {("cut", "length")}


def test_a_pairwise_row_unreadable_in_both_formats_is_offered_without_the_chat_model_rule():
    """A pairwise run's watch reads its rows by the format rule alone: a pairwise row has no finish_reason, and one
    that reads in neither format neither stops the run nor breaks the watch."""
    from eval.judging.format_choice import FormatWatch
    from eval.pairwise.judging import PairwiseRow

    row = PairwiseRow(id="p1", order="ab", judge="assistant", raw_output=CHAT_ANSWER, feedback="", score=None,
                      verdict=None, parse_ok=False, error="no_score", reason="no integer", latency_s=0.1)
    watch = FormatWatch("integer")
    assert [watch.offer([row]) for _ in range(N_FIRST_MISREAD)] == [None] * N_FIRST_MISREAD
