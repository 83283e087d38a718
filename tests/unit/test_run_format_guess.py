"""`judge-eval run` stops when the verdict format it guessed for a URL judge is the wrong one.

A judge behind a plain URL whose model id and ``root`` do not name Pollux-4B is read as ``tagged``. A renamed 4B copy
(reasoning, then a bare integer) then failed every verdict as a final row that no rerun asks again, and the run
exited 0. Now the first ``N_FIRST_MISREAD`` answers, all unreadable as guessed and all readable in the other format,
stop it with the flag to set. A stated format is never second-guessed, and a tagged verdict cut before ``[END]``
(which ends with its score) does not count. The server is a scripted vLLM stand-in
(``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import dataclasses

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


def test_integer_answers_closed_by_a_full_stop_under_a_guessed_tagged_format_stop_the_run_naming_integer(
        data, tmp_path, capsys):
    """A renamed Pollux-4B whose answers end in '2.' read in neither format: not as tagged, and not as integer, whose
    reader takes an integer only at the answer's very end, as POLLUX's own client does (``demo/serve_pollux_demo.py``
    in ai-forever/POLLUX: ``int()``, else ``(-?\\d+)\\s*$``). Before: the first answers were no sign of the other
    format (the integer reader refuses them) nor of a chat model (a number ends them), and the run exited 0 with
    every row a parse failure. Now they stop it naming --verdict-format integer, saying what it will still refuse;
    run with it, each such answer is a counted no_score failure (the reader is not loosened)."""
    out = tmp_path / "run"
    with _vllm("<think>Ответ верный, но краткий.</think>\n\n2.") as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 2
        assert len(server.bodies("/v1/chat/completions")) == N_FIRST_MISREAD
        assert ("judge-eval run: error: verdict_format: the judge's first 5 answers do not read as tagged verdicts "
                "but end as integer ones do, 5 of them with punctuation or markdown after the integer (the first: "
                "'2.' (its reasoning before </think> left out)), which the integer reader does not take, as POLLUX's "
                "own client does not; tagged was guessed from the model id: start again with --overwrite "
                "--verdict-format integer (each answer ending so a counted parse failure there)\n"
                ) in capsys.readouterr().err
        assert main(run_args(server.base_url, data, out, "--overwrite", "--verdict-format", "integer")) == 0
    assert {(r["error"], r["score"]) for r in read_predictions(out)} == {("no_score", None)}
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
    """A pairwise run's watch reads its rows by the format rule alone: a pairwise row has no finish_reason (never
    read), and one that reads in neither format does not stop the run; it breaks the format rule's streak, as any
    answer that does not read in the other format does, so answers that do never stop it after it."""
    from eval.judging.format_choice import FormatWatch
    from eval.pairwise.judging import PairwiseRow

    row = PairwiseRow(id="p1", order="original", judge="assistant", raw_output=CHAT_ANSWER, feedback="", score=None,
                      verdict=None, parse_ok=False, error="no_score", reason="no integer", latency_s=0.1)
    watch = FormatWatch("integer")
    assert [watch.offer([row]) for _ in range(N_FIRST_MISREAD)] == [None] * N_FIRST_MISREAD
    tagged = dataclasses.replace(row, raw_output="[FEEDBACK] Первый лучше. [RESULT] 1 [END]", error="no_score")
    assert [watch.offer([tagged]) for _ in range(N_FIRST_MISREAD)] == [None] * N_FIRST_MISREAD
    fresh = FormatWatch("integer")  # without the row before them, the same answers stop it
    assert [fresh.offer([tagged]) for _ in range(N_FIRST_MISREAD)][-1].startswith("verdict_format: the judge's first")


# ------------------------------------------------------------------- the watch's rules, row by row

def _rows(verdict_format: str, *answers: tuple) -> list:
    """Rows as the chat backend writes them (``verdict_outcome``, its reader): each answer ``(content, finish_reason)``
    or ``(content, finish_reason, reasoning)`` (a reasoning parser's split), or None for a request that failed."""
    from eval.judging.backends import failed_outcome, verdict_outcome
    from eval.judging.predictions import REQUEST_FAILED, PredictionRow

    record = judge.load_records(judge.sample_data_path())[0]
    return [PredictionRow(id=f"r{i}", judge="assistant", **(
        failed_outcome(REQUEST_FAILED, "HTTP 503") if answer is None else
        verdict_outcome(answer[0], record, False, verdict_format=verdict_format, finish_reason=answer[1],
                        reasoning=answer[2] if len(answer) > 2 else None)))
            for i, answer in enumerate(answers)]


CHAT = (CHAT_ANSWER, "stop")
THINKING = "Ответ по критерию полный, ошибок нет."


@pytest.mark.parametrize("verdict_format, answer", [
    ("tagged", (CHAT_ANSWER, "stop")),
    ("tagged", ("Вот три совета: пейте воду, спите, гуляйте.", "stop")),
    ("integer", ("Ответ хороший, но неполный.", "stop", THINKING)),  # a reasoning model's chat answer, split apart
    ("integer", (f"<think>{THINKING}</think>Ответ хороший.", "stop")),  # the same, its reasoning inline
], ids=["tagged-chat", "tagged-advice", "integer-split-reasoning", "integer-inline-reasoning"])
def test_five_answers_with_no_verdict_in_them_stop_a_watch_for_no_verdict(verdict_format, answer):
    from eval.judging.format_choice import FormatWatch

    watch = FormatWatch(verdict_format, no_verdict=True)
    said = [watch.offer(_rows(verdict_format, answer)) for _ in range(N_FIRST_MISREAD)]
    assert said[:-1] == [None] * (N_FIRST_MISREAD - 1)
    assert said[-1].startswith("judge: the first 5 answers of assistant hold no verdict")


LONG_THINKING = "Разберу ответ по критерию. " * 8  # a reasoning longer than the 120 characters quoted


@pytest.mark.parametrize("verdict_format, answer, quoted", [
    # the integer reader's reasoning (judge.verdicts.inline_reasoning) before the answer: the answer is quoted
    ("integer", ("Ответ хороший.", "stop", LONG_THINKING),
     "'Ответ хороший.' (its reasoning before </think> left out)"),
    ("integer", (f"<think>{LONG_THINKING}</think>\n\nОтвет хороший.", "stop"),
     "'Ответ хороший.' (its reasoning before </think> left out)"),
    # a chat template that opened the block in the prompt: the answer after its </think>, as the integer reader reads
    ("integer", (f"{LONG_THINKING}</think>Ответ хороший.", "stop"),
     "'Ответ хороший.' (its reasoning before </think> left out)"),
    # no answer after the reasoning (read in neither format by a tagged run): its start, as it is
    ("tagged", (f"<think>{LONG_THINKING}</think>", "stop"), f"'<think>{LONG_THINKING.strip()[:113]}...'"),
], ids=["integer-split-reasoning", "integer-inline-reasoning", "integer-template-opened", "reasoning-only-tagged"])
def test_the_no_verdict_stop_quotes_the_answer_after_the_reasoning(verdict_format, answer, quoted):
    """Before: the sentence quoted the first 120 characters of the raw output, which for a reasoning model is its
    reasoning (an integer run rebuilds it as <think>...</think> before the answer): what it answered was never shown.
    Now the answer after the reasoning is quoted, saying the reasoning was left out; with no answer, the start."""
    from eval.judging.format_choice import FormatWatch

    watch = FormatWatch(verdict_format, no_verdict=True)
    said = [watch.offer(_rows(verdict_format, answer)) for _ in range(N_FIRST_MISREAD)][-1]
    assert f"though each ended on its own; the first: {quoted}: is it a POLLUX judge?" in said

@pytest.mark.parametrize("verdict_format, answer", [
    # a judge whose answers failed to read is still a judge: each is a counted parse failure, the run goes on
    ("tagged", ("[FEEDBACK] Ответ пуст, оценивать нечего. [RESULT] нет оценки [END]", "stop")),  # a tag, no number
    ("tagged", ("[FEEDBACK] Ответ верный. [RESULT] 10000000 [END]", "stop")),  # a number past any scale: no_score
    ("integer", ("Итог — 1", "stop", THINKING)),  # a dash before the score: no sign to read, no_score
    ("integer", ("10000000", "stop", THINKING)),  # past any scale
    ("integer", ("Оценка: **2**", "stop", THINKING)),  # markdown around the score
    ("integer", ("Оценка: 2.", "stop", THINKING)),  # a full stop after it
    ("integer", ("-1", "stop", THINKING)),  # read: a score off the scale is a score (in_scale false)
    ("tagged", ("[FEEDBACK] Ответ верный. [RESULT] 7 [END]", "stop")),  # the same in the tagged format
    ("integer", (None, "stop", THINKING)),  # a reasoning, then nothing: empty, not a chat answer
    ("tagged", ("Конечно! Вот стихотворение о первом", "length")),  # cut: max_tokens' doing
], ids=["tagged-result-no-number", "tagged-past-bound", "integer-dash", "integer-past-bound", "integer-markdown",
        "integer-full-stop", "integer-minus-one", "tagged-off-scale", "integer-reasoning-only", "cut"])
def test_a_judges_answers_that_fail_to_read_never_stop_a_watch_for_no_verdict(verdict_format, answer):
    """Before: an answer with a [RESULT] tag whose score did not read, or one ending in a number the integer reader
    refuses, counted as a chat model's, and five such answers stopped a POLLUX judge's run as no judge's."""
    from eval.judging.format_choice import FormatWatch

    watch = FormatWatch(verdict_format, no_verdict=True)
    assert [watch.offer(_rows(verdict_format, answer)) for _ in range(N_FIRST_MISREAD + 2)] == [None] * 7


@pytest.mark.parametrize("verdict_format, answers, stops", [
    # a failed request has no answer to read: passed over, neither counted nor breaking the streak
    ("tagged", [CHAT] * 4 + [None] + [CHAT], "no verdict"),
    # one verdict among the first answers: it is a judge, whatever follows
    ("tagged", [CHAT] * 4 + [("[FEEDBACK] Верно. [RESULT] 1 [END]", "stop")] + [CHAT] * 6, None),
    ("tagged", [("[FEEDBACK] Верно. [RESULT] 1 [END]", "stop")] + [CHAT] * 6, None),
    # a cut answer breaks the streak: a judge cut by max_tokens may write anything before its verdict
    ("tagged", [CHAT] * 4 + [("Конечно! Вот", "length")] + [CHAT] * 6, None),
    # the two rules' answers mixed: neither rule holds for all of the first five
    ("tagged", [(INTEGER_ANSWER, "stop")] * 3 + [CHAT] * 2 + [(INTEGER_ANSWER, "stop")] * 5, None),
    ("tagged", [CHAT] * 3 + [(INTEGER_ANSWER, "stop")] * 2 + [CHAT] * 5, None),
    # each rule alone
    ("tagged", [(INTEGER_ANSWER, "stop")] * 5, "misread"),
    ("integer", [("[FEEDBACK] Верно. [RESULT] 1 [END]", "stop")] * 5, "misread"),
    ("integer", [CHAT] * 5, "no verdict"),
    # integer verdicts closed by punctuation or markdown, alone or among bare ones: the other format's, named
    ("tagged", [(f"<think>{THINKING}</think>2.", "stop")] * 5, "closed"),
    ("tagged", [(INTEGER_ANSWER, "stop")] * 2 + [("Оценка: **2**", "stop")] + [(INTEGER_ANSWER, "stop")] * 2,
     "closed"),
    # a dash before the integer is no punctuation closing it: read in neither format, a judge's, never stopped
    ("tagged", [(f"<think>{THINKING}</think>Итог — 1", "stop")] * 7, None),
], ids=["request-failed-passed-over", "a-verdict-fifth", "a-verdict-first", "a-cut-fifth", "misread-then-none",
        "none-then-misread", "misread-tagged", "misread-integer", "no-verdict-integer", "closed-by-full-stop",
        "closed-by-markdown-among-bare", "integer-after-a-dash"])
def test_the_first_answers_decide_once_and_one_rule_at_most(verdict_format, answers, stops):
    from eval.judging.format_choice import FormatWatch

    watch = FormatWatch(verdict_format, no_verdict=True)
    said = [watch.offer([row]) for row in _rows(verdict_format, *answers)]
    first = next((i for i, s in enumerate(said) if s), None)
    if stops is None:
        assert first is None, said
        return
    assert first == len(said) - 1  # the fifth answer read decides
    assert said[first].startswith("judge: the first 5 answers of assistant hold no verdict" if stops == "no verdict"
                                  else "verdict_format: the judge's first 5 answers do not read as")
    assert ("with punctuation or markdown after the integer" in said[first]) == (stops == "closed")
    if stops == "no verdict":  # the first answer read is quoted, not a failed request
        assert f"the first: '{CHAT_ANSWER}'" in said[first]


# ------------------------------------------------------------------- a resumed run's first answers are the folder's

def _switchable(text: list[str]) -> ScriptedEndpoint:
    """``_chat_model``'s server, answering ``text[0]`` (a test changes it between launches)."""
    entry = {"id": "assistant", "object": "model", "max_model_len": 4096, "root": "/models/assistant"}

    def respond(path: str, body: dict) -> tuple:
        return (404, {"detail": "Not Found"}) if path == "/v1/judge" else (
            200, chat_completion(text[0], body["model"], "stop"))

    return ScriptedEndpoint(respond, respond_get=lambda path: (200, {"object": "list", "data": [entry]}))


def test_a_resumed_folder_whose_first_answers_are_verdicts_is_never_stopped_as_no_judges(data, tmp_path):
    """Before: a resume counted only its own answers, so a folder of a judge's verdicts was stopped as no judge's at
    the first 5 answers of the resume that read in neither format, with --overwrite (the folder's verdicts
    discarded) as the way on. The folder's first answers decide, whichever launch asked them."""
    from tests.support.eval_cli import cut_predictions_to

    out, text = tmp_path / "run", ["[FEEDBACK] Ответ верный. [RESULT] 1 [END]"]
    with _switchable(text) as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 0
        cut_predictions_to(out, 3)  # killed after 3 verdicts
        text[0] = CHAT_ANSWER
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 0
        assert len(server.bodies("/v1/chat/completions")) == 8 + 5
    rows = read_predictions(out)
    assert [r["parse_ok"] for r in rows] == [True] * 3 + [False] * 5
    assert {r["error"] for r in rows[3:]} == {"no_result"}


def test_a_folder_stopped_as_no_judges_stops_again_before_asking(data, tmp_path, capsys):
    """Before: the same command run again resumed the stopped folder and asked its 3 items left, which never reached
    5 answers of its own: it exited 0, every row a parse failure. Its first 5 answers are in the folder: it stops
    again (exit 2) and asks nothing."""
    out = tmp_path / "run"
    with _switchable([CHAT_ANSWER]) as server:
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 2
        capsys.readouterr()
        assert main(run_args(server.base_url, data, out, "--concurrency", "1")) == 2
        assert len(server.bodies("/v1/chat/completions")) == N_FIRST_MISREAD
    assert "judge: the first 5 answers of assistant hold no verdict" in capsys.readouterr().err
    assert len(read_predictions(out)) == N_FIRST_MISREAD


def test_run_help_lists_the_stops_on_the_judges_first_answers_under_exit_2(capsys):
    """Before: `judge-eval run --help` gave exit 2 as a usage, configuration or input error only; a run stopped on
    its judge's first answers (a guessed format they contradict, or no verdict in them) exits 2 too."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert (f"or the judge's first {N_FIRST_MISREAD} answers stopped it: they read only in the other verdict format "
            "than the one guessed, or in neither (no judge), the flags to set named") in usage


def test_the_no_verdict_stop_quotes_the_answers_control_characters_as_escapes():
    """The stop's sentence goes to the console and quotes the judge's own text: an ESC sequence or a newline in it
    reached the terminal as it was. Quoted, each control character is its escape."""
    from eval.judging.format_choice import FormatWatch

    watch = FormatWatch("tagged", no_verdict=True)
    answer = ("Конечно!\x1b[2J Вот стихотворение.\x07", "stop")
    said = [watch.offer(_rows("tagged", answer)) for _ in range(N_FIRST_MISREAD)][-1]
    assert "the first: 'Конечно!\\x1b[2J Вот стихотворение.\\x07': is it a POLLUX judge?" in said
    assert said.isprintable()
