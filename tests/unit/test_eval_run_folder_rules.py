"""`judge-eval run` holds a resumed folder to the judge and the text its verdicts were asked with, and pairwise runs
keep the pointwise run's rules: a judge-serve answering in another verdict format stops the run, so do first
answers that read only in the other format than the one guessed from the model id, and first requests all refused
alike, API judges get no vLLM-only field, and rows of data no longer there are dropped.

Every server is a scripted stand-in (``tests.support.scripted_endpoint``); payloads and messages are asserted exactly.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions, record_content_key
from eval.pairwise.judging import PAIRWISE_PREDICTIONS, load_pairs, read_pairwise_rows
from judge.checkpoints import NEUTRAL_SAMPLING
from judge.plumbing.retry import EXIT_UNUSABLE
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from tests.support.eval_cli import cut_predictions_to, run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

GOOD = "[FEEDBACK] ok [RESULT] 1 [END]"
SCALE = "-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше"
PAIRS = [{"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": f"Ответ {k}.", "answer_2": f"Иначе {k}.",
          "rubrics": SCALE, "winner": -1} for k in range(1, 5)]  # fmt: skip


def _chat_judge(model: str = "scripted", refuse: str | None = None):
    """A vLLM-like chat server: every chat request answered ``GOOD`` (or ``-1`` to a pairwise prompt), or refused
    with HTTP 400 and ``refuse`` as the server's message; no /v1/judge route."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if refuse is not None:
            return 400, {"error": {"message": refuse}}
        pairwise = "### Шкала сравнения ответов" in body["messages"][0]["content"]
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]" if pairwise else GOOD, body["model"])

    return ScriptedEndpoint(respond, model=model)


def _write_pairs(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _pair_args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--no-progress", "--backoff-s", "0.01", *extra]


# ------------------------------------------------------------------------------------ pointwise resumes


def test_a_resume_against_a_url_now_serving_another_model_is_refused(tmp_path, capsys):
    """Rows written under --name J carry J, not the model: a resume whose URL now serves judge-b (the run key leaves
    a URL out) is refused naming both models, before any item is asked; against judge-a it finishes; a rerun with
    nothing to ask keeps run.json's model."""
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _chat_judge("judge-a") as first:
        assert main(run_args(first.base_url, data, out, "--name", "J")) == 0
    cut_predictions_to(out, 2)
    capsys.readouterr()
    with _chat_judge("judge-b") as other:
        assert main(run_args(other.base_url, data, out, "--name", "J")) == 2
        assert other.requests == []  # the model list only (a GET): no item, not even the backend probe
    assert (f"judge-eval run: error: model: the 2 verdicts already in {out} were asked of 'judge-a', but "
            f"{other.base_url} now serves 'judge-b': resume against the judge that started the folder, or start "
            "again with --overwrite, or use another --out") in capsys.readouterr().err
    assert len(read_predictions(out)) == 2 and json.loads((out / "run.json").read_text())["model"] == "judge-a"
    with _chat_judge("judge-a") as same:
        assert main(run_args(same.base_url, data, out, "--name", "J")) == 0
        assert len(same.bodies("/v1/chat/completions")) == 2
    with _chat_judge("judge-b") as other:  # nothing to ask: no server is asked, run.json goes on naming judge-a
        assert main(run_args(other.base_url, data, out, "--name", "J")) == 0
        assert other.requests == []
    assert [row["judge"] for row in read_predictions(out)] == ["J"] * 4
    assert json.loads((out / "run.json").read_text())["model"] == "judge-a"


def test_a_record_edited_in_place_is_judged_again(tmp_path):
    """Each row keeps the digest of the prompt's fields it was asked with: a record whose answer changed under the
    same id is asked again (the new answer in the prompt), the others are not. Rows written before rows kept a
    digest are kept, as before; `score` reads files with and without the field."""
    records = judge.load_records(judge.sample_data_path())[:3]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    out = tmp_path / "run"
    edited = [records[0], dataclasses.replace(records[1], answer="Совсем другой ответ."), records[2]]
    with _chat_judge() as server:
        assert main(run_args(server.base_url, data, out)) == 0
        assert len(server.bodies("/v1/chat/completions")) == 3
        judge.write_jsonl(edited, data)  # the same file and ids, one answer changed
        assert main(run_args(server.base_url, data, out)) == 0
        asked = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")[3:]]
        assert asked == [judge.render_prompt(edited[1])]
        rows = {row["id"]: row for row in read_predictions(out)}
        assert len(read_predictions(out)) == 3
        assert {i: row["content_key"] for i, row in rows.items()} == {r.id: record_content_key(r) for r in edited}
        assert main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots"]) == 0
        # Rows from before the digest: kept whatever the text (it cannot be checked), and scored.
        path = out / "predictions.jsonl"
        legacy = [{k: v for k, v in json.loads(line).items() if k != "content_key"}
                  for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in legacy), encoding="utf-8")
        judge.write_jsonl(records, data)
        assert main(run_args(server.base_url, data, out)) == 0
        assert len(server.bodies("/v1/chat/completions")) == 4
    assert {row["content_key"] for row in read_predictions(out)} == {None}
    assert main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots"]) == 0


# ------------------------------------------------------------------------------------ pairwise runs


def _judge_serve(listed: str, answers: list[str]) -> ScriptedEndpoint:
    """A judge-serve stand-in: GET /v1/models says it serves "judge" in the ``listed`` format; each pairwise /v1/judge
    request is answered -1 in the next format of ``answers`` (the last repeats); the backend probe (an empty body)
    gets judge-serve's 400."""
    formats = list(answers)

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (pair,) = body["pairs"]
        fmt = formats.pop(0) if len(formats) > 1 else formats[0]
        result = JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], feedback="r", score=-1.0,
                             parse_ok=True, score_source="verdict", in_scale=True, output="r -1")
        return 200, JudgeResponse("judge-1", "judge.result", 0, "judge", "seq2seq", fmt, "v",
                                  [JudgeResponseItem(0, pair["id"], [result])], JudgeResponseUsage(1, 1, 0, 0, 0)).to_json()

    def respond_get(path: str) -> tuple[int, dict]:
        if path.rstrip("/") != "/v1/models":
            return 404, {"detail": "Not Found"}
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "verdict_format": listed}]}

    return ScriptedEndpoint(respond, model="judge", respond_get=respond_get)


def test_a_pairwise_judge_serve_answering_in_another_format_stops_the_run(tmp_path, capsys):
    """As a pointwise run: a judge-serve that says tagged and answers its third pairwise request in integer stops
    the run there (exit 4) naming both formats; the two rows answered in the recorded format are kept, none for the
    third; run.json still says tagged, and a rerun against a server answering in it asks only what is missing."""
    data = _write_pairs(PAIRS[:2], tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    with _judge_serve("tagged", ["tagged", "tagged", "integer"]) as server:
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == EXIT_UNUSABLE
        assert len(server.bodies("/v1/judge")) == 3  # no probe: GET /v1/models says judge-serve (verdict_format)
    err = capsys.readouterr().err
    assert ("judge-eval run: error: judge-serve answered in the verdict format integer, but this run records tagged "
            "for 'judge' (its run.json): the server changed since the run began, or does not say its format in GET "
            "/v1/models (then set --verdict-format integer); stopped after sending 3 of 4 requests (2 rows written "
            "are kept; none for its answer, which a rerun asks again)") in err
    rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
    assert [(r.id, r.order, r.verdict) for r in rows] == [("p1", "original", -1.0), ("p1", "swapped", 1.0)]
    assert json.loads((out / "run.json").read_text())["config"]["verdict_format"] == "tagged"
    with _judge_serve("tagged", ["tagged"]) as server:
        assert main(_pair_args(server.base_url, data, out)) == 0
        assert sorted(b["pairs"][0]["id"] for b in server.bodies("/v1/judge") if b) == ["p2#original", "p2#swapped"]
    assert len(read_pairwise_rows(out / PAIRWISE_PREDICTIONS)) == 4


def test_a_pairwise_judge_misread_in_the_guessed_format_stops_the_run(tmp_path, capsys):
    """As a pointwise run (eval.judging.format_choice.FormatWatch): behind a URL whose model id does not name
    Pollux-4B the format is guessed tagged, but the pairwise template is the 4B judge's, answered with a bare integer.
    Every judgment was a final no_result row and the run exited 0, and a rerun with --verdict-format was refused as
    other settings. Now the first 5 answers, none read as tagged and all as integer, stop it (exit 2) with the flag to
    set; started again with it, every judgment parses."""
    data = _write_pairs(PAIRS, tmp_path / "pairs.jsonl")
    pairs = load_pairs(data)
    prompts = {judge.render_pairwise_prompt(p.shown(o)) for p in pairs for o in ("original", "swapped")}
    answer = "Сравнив ответы, первый лучше.\n\n-1"

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(answer, body["model"])

    out = tmp_path / "run"
    with ScriptedEndpoint(respond, model="my-judge") as server:
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == 2
        sent = server.bodies("/v1/chat/completions")
        assert ("judge-eval run: error: verdict_format: the judge's first 5 answers do not read as tagged verdicts "
                "but do as integer ones; tagged was guessed from the model id: start again with --overwrite "
                "--verdict-format integer") in capsys.readouterr().err
        # asked as a tagged judge is (thinking off), five of the eight judgments, then stopped
        assert len(sent) == 5 and {b["messages"][0]["content"] for b in sent} <= prompts
        assert all(b == {"model": "my-judge", "messages": b["messages"], "max_tokens": 1024, "temperature": 0.0,
                         **NEUTRAL_SAMPLING, "chat_template_kwargs": {"enable_thinking": False}} for b in sent)
        server.requests.clear()
        assert main(_pair_args(server.base_url, data, out, "--overwrite", "--verdict-format", "integer")) == 0
        again = server.bodies("/v1/chat/completions")
    key = lambda body: body["messages"][0]["content"]  # noqa: E731
    assert sorted(again, key=key) == sorted(
        ({"model": "my-judge", "messages": [{"role": "user", "content": p}], "max_tokens": 1024, "temperature": 0.0,
          **NEUTRAL_SAMPLING} for p in prompts), key=key)  # fmt: skip
    rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
    assert sorted((r.id, r.order, r.parse_ok, r.verdict) for r in rows) == [
        (p.id, order, True, -1.0 if order == "original" else 1.0) for p in pairs for order in ("original", "swapped")]


def _pairwise_chat_judge(answer: list[str]) -> ScriptedEndpoint:
    """A vLLM-like chat server named ``my-judge`` (no model id naming Pollux-4B: the format is guessed tagged),
    answering every chat request ``answer[0]`` (a test changes it between launches); no /v1/judge route."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(answer[0], body["model"])

    return ScriptedEndpoint(respond, model="my-judge")


def test_a_pairwise_folder_stopped_by_its_first_answers_stops_again_before_asking(tmp_path, capsys):
    """As a pointwise run: the watch reads the folder's first rows. Before, the same command run again after the stop
    counted only its own answers: it asked the 3 judgments left, never reached 5, and exited 0 with every row a
    parse failure. Its first 5 answers are in the folder: it stops again (exit 2) and asks nothing."""
    data = _write_pairs(PAIRS, tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    with _pairwise_chat_judge(["Сравнив ответы, первый лучше.\n\n-1"]) as server:
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == 2
        capsys.readouterr()
        server.requests.clear()
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == 2
        assert server.bodies("/v1/chat/completions") == []
    assert ("judge-eval run: error: verdict_format: the judge's first 5 answers do not read as tagged verdicts but do "
            "as integer ones; tagged was guessed from the model id: start again with --overwrite --verdict-format "
            "integer\n") in capsys.readouterr().err
    rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
    assert [(r.parse_ok, r.error) for r in rows] == [(False, "no_result")] * 5


def test_a_resumed_pairwise_folder_whose_first_answers_are_verdicts_is_never_stopped(tmp_path):
    """Before: a pairwise resume counted only its own answers, so a folder of a judge's tagged verdicts was stopped
    (exit 2, with --overwrite, its verdicts discarded, as the way on) by the first 5 answers of the resume that read
    only as integer verdicts. The folder's first answers decide, whichever launch asked them: the resume runs to
    the end, each such answer a counted parse failure."""
    data = _write_pairs(PAIRS, tmp_path / "pairs.jsonl")
    out, answer = tmp_path / "run", ["[FEEDBACK] ok [RESULT] -1 [END]"]
    path = out / PAIRWISE_PREDICTIONS
    with _pairwise_chat_judge(answer) as server:
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == 0
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[:3]), encoding="utf-8")  # killed after 3 verdicts
        answer[0] = "Сравнив ответы, первый лучше.\n\n-1"
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == 0
        assert len(server.bodies("/v1/chat/completions")) == 8 + 5
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(r["parse_ok"], r["error"]) for r in rows] == [(True, None)] * 3 + [(False, "no_result")] * 5


def test_pairwise_api_judges_get_no_vllm_fields_and_are_told_the_template(tmp_path, caplog):
    """--prompt en (an API judge such as gpt-4o, which refuses an unknown field as api.openai.com does) asks the pairwise
    prompt, the only one, with the OpenAI fields alone, and the log says which template; --prompt ru to a tagged judge
    on vLLM sends the neutral sampling fields and thinking off, as the pointwise chat backend does."""
    data = _write_pairs(PAIRS[:1], tmp_path / "pairs.jsonl")
    pair = load_pairs(data)[0]
    prompts = [judge.render_pairwise_prompt(pair.shown(order)) for order in ("original", "swapped")]

    def api(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": "not found"}}
        unknown = sorted(set(body) - {"model", "messages", "max_tokens", "temperature"})
        if unknown:
            return 400, {"error": {"message": f"Unrecognized request argument supplied: {', '.join(unknown)}"}}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    model = "gpt-4o-2024-11-20"
    with caplog.at_level(logging.INFO), ScriptedEndpoint(api, model=model) as server:
        assert main(_pair_args(server.base_url, data, tmp_path / "en", "--model", model, "--prompt", "en")) == 0
    key = lambda body: body["messages"][0]["content"]  # noqa: E731
    assert sorted(server.bodies("/v1/chat/completions"), key=key) == sorted(
        ({"model": model, "messages": [{"role": "user", "content": p}], "max_tokens": 1024, "temperature": 0.0}
         for p in prompts), key=key)  # fmt: skip
    assert ("note: pairwise data is asked with the Russian pairwise prompt template "
            f"{judge.prompts.PAIRWISE_PROMPT_VERSION}, the only one; --prompt en sends it without the vLLM sampling "
            "fields") in caplog.text
    assert {r.parse_ok for r in read_pairwise_rows(tmp_path / "en" / PAIRWISE_PREDICTIONS)} == {True}
    with _chat_judge() as vllm:
        assert main(_pair_args(vllm.base_url, data, tmp_path / "ru")) == 0
    assert sorted(vllm.bodies("/v1/chat/completions"), key=key) == sorted(
        ({"model": "scripted", "messages": [{"role": "user", "content": p}], "max_tokens": 1024, "temperature": 0.0,
          **NEUTRAL_SAMPLING, "chat_template_kwargs": {"enable_thinking": False}} for p in prompts), key=key)


@pytest.mark.parametrize("kind, said", [("chat", "model 'x' does not exist"),
                                        ("judge-serve", "pairs: this judge-serve takes no pairwise requests")])
def test_a_pairwise_run_whose_first_requests_are_refused_alike_stops(tmp_path, capsys, kind, said):
    """As a pointwise run (eval.judging.backends.FirstRefusals): the first three pairwise requests refused alike stop
    the run (exit 4) with the server's words and are written as failed rows (they wrote none, so every rerun stopped
    at the same three); a run of fewer requests writes its refusals as failed rows (exit 3), retried by the next run."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        if kind == "judge-serve" and path == "/v1/judge":
            return 400, {"error": {"message": said if body else "items: required field is missing"}}
        if kind == "chat" and path == "/v1/chat/completions":
            return 400, {"error": {"message": said}}
        return 404, {"error": {"message": "not found"}}

    route = "/v1/judge" if kind == "judge-serve" else "/v1/chat/completions"
    with ScriptedEndpoint(respond, model="judge") as server:
        data = _write_pairs(PAIRS, tmp_path / "pairs.jsonl")
        assert main(_pair_args(server.base_url, data, tmp_path / "run", "--concurrency", "1")) == EXIT_UNUSABLE
        assert len([b for b in server.bodies(route) if b]) == 3
        err = capsys.readouterr().err
        assert (f"judge-eval run: error: the judge (judge) refused the first 3 requests alike: HTTP 400: {said} "
                "(stopped after sending 3 of 8 requests; the refused ones were written as failed rows; a rerun asks "
                "the items not asked yet first, then these again)") in err
        stopped = read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)
        assert sorted((r.id, r.order, r.error, r.parse_ok) for r in stopped) == [
            ("p1", "original", "request_failed", False), ("p1", "swapped", "request_failed", False),
            ("p2", "original", "request_failed", False)]
        assert all(r.reason.startswith("HTTP 400: ") and said in r.reason for r in stopped)
        few = _write_pairs(PAIRS[:1], tmp_path / "one.jsonl")  # two requests: too few to tell
        assert main(_pair_args(server.base_url, few, tmp_path / "few")) == 3
    rows = read_pairwise_rows(tmp_path / "few" / PAIRWISE_PREDICTIONS)
    assert sorted((r.order, r.error) for r in rows) == [("original", "request_failed"), ("swapped", "request_failed")]
    assert all(r.reason.startswith("HTTP 400: ") and said in r.reason for r in rows)


def test_a_pairwise_run_stopped_by_its_first_refusals_makes_progress_on_the_next(tmp_path, capsys):
    """Judgments refused alike one by one (a hosted API's content filter on provocative pairs) stopped every pairwise
    rerun at the same first three, with no row written: no run ever finished. As a pointwise run, the stop writes them
    as failed rows, and the next run asks the judgments never asked first, then those again (refused once more)."""
    said = "The response was filtered due to the prompt triggering the content management policy"
    refused: list[str] = []

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = body["messages"][0]["content"]
        if len(refused) < 3 and prompt not in refused:
            refused.append(prompt)  # the first three judgments asked are the filtered ones
        if prompt in refused:
            return 400, {"error": {"message": said, "type": "invalid_request_error"}}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    data = _write_pairs(PAIRS, tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    with ScriptedEndpoint(respond, model="judge") as server:
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == EXIT_UNUSABLE
        assert f"refused the first 3 requests alike: HTTP 400: {said}" in capsys.readouterr().err
        first = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
        assert first == refused
        rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
        assert len(rows) == 3 and {r.error for r in rows} == {"request_failed"}
        server.requests.clear()
        assert main(_pair_args(server.base_url, data, out, "--concurrency", "1")) == 3
        second = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
    assert len(second) == 8 and second[-3:] == refused and not set(second[:-3]) & set(refused)
    rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
    assert len(rows) == 8
    assert sorted(r.error or "ok" for r in rows) == ["ok"] * 5 + ["request_failed"] * 3


def test_a_pair_too_long_for_the_chat_judges_context_is_a_final_row(tmp_path):
    """vLLM's 400 for a prompt over the context was a failed request, asked again by every rerun (exit 3 forever);
    as on the pointwise chat path and judge-serve's /v1/judge, it is the judgment's final row: the rerun asks nothing."""
    said = "This model's maximum context length is 2048 tokens. However, you requested 4100 tokens."

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": "not found"}}
        if "Вопрос 1?" in body["messages"][0]["content"]:
            return 400, {"error": {"message": said, "type": "BadRequestError", "code": 400}}
        return 200, chat_completion("[FEEDBACK] ok [RESULT] -1 [END]", body["model"])

    with ScriptedEndpoint(respond, model="judge") as server:
        data = _write_pairs(PAIRS[:2], tmp_path / "pairs.jsonl")
        assert main(_pair_args(server.base_url, data, tmp_path / "run")) == 0
        asked = len(server.bodies("/v1/chat/completions"))
        assert main(_pair_args(server.base_url, data, tmp_path / "run")) == 0
        assert len(server.bodies("/v1/chat/completions")) == asked == 4  # both orders of both pairs, once
    rows = {(r.id, r.order): r for r in read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)}
    assert {k: rows[k].error for k in rows} == {("p1", "original"): "context_length_exceeded",
                                                ("p1", "swapped"): "context_length_exceeded",
                                                ("p2", "original"): None, ("p2", "swapped"): None}
    assert said in rows[("p1", "original")].reason


def test_rows_of_a_pair_removed_from_the_data_are_dropped_on_rerun(tmp_path, capsys):
    """A pair deleted from the data file: the rerun asks nothing and drops its rows, as a pointwise resume drops ids
    no longer selected, so `score` reads the folder; scored before that rerun, the folder is refused saying so."""
    import shutil

    data = _write_pairs(PAIRS[:2], tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    with _chat_judge() as server:
        assert main(_pair_args(server.base_url, data, out)) == 0
        assert len(server.bodies("/v1/chat/completions")) == 4
        _write_pairs(PAIRS[:1], data)
        shutil.copytree(out, tmp_path / "before")
        capsys.readouterr()
        assert main(["score", "--predictions", str(tmp_path / "before"), "--n-boot", "0"]) == 2
        assert (f"{PAIRWISE_PREDICTIONS}: judgments of pairs the data does not have: ['p2']; rerun `judge-eval run` on "
                "the folder (it drops the rows of pairs removed from the data), or score with the data they were "
                "judged on") in capsys.readouterr().err
        assert main(_pair_args(server.base_url, data, out)) == 0
        assert len(server.bodies("/v1/chat/completions")) == 4
    rows = read_pairwise_rows(out / PAIRWISE_PREDICTIONS)
    assert sorted((r.id, r.order) for r in rows) == [("p1", "original"), ("p1", "swapped")]
    assert main(["score", "--predictions", str(out), "--n-boot", "0"]) == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["n_pairs"], metrics["n_judgments"], metrics["n_missing"]) == (1, 2, 0)
