"""judge-eval reads a judge-serve's verdict format from what it serves, not from the served model's name.

- judge-serve names the format it serves in each ``GET /v1/models`` entry (``verdict_format``, beside
  ``prompt_version``: ``judge.wire.ModelLimits``), as it decided it from the export manifest and the model type.
- ``judge-eval run --judge URL`` takes it from there: run.json's ``config.verdict_format`` (what ``judge-eval score``
  reads to leave POLLUX's own evaluator out for an integer judge) and the reader of the verdicts it parses itself
  (chat requests through judge-serve's passthrough) follow it. A ``--verdict-format`` that contradicts it is refused
  before any item is asked, naming both.
- A resume against a judge-serve now serving another format is refused naming both; a rerun of a finished folder
  keeps the format its verdicts were recorded in; a ``/v1/judge`` answer in another format than the run records
  stops the run (exit 4) instead of writing rows that would be scored as the recorded format.

judge-serve is the real app in front of a scripted engine (``tests.support.serve_in_process``), or a scripted stand-in
(``tests.support.scripted_endpoint``) whose payloads are the ones judge-serve sends.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging.predictions import read_predictions
from judge.checkpoints import EXPORT_MANIFEST
from judge.plumbing.retry import EXIT_UNUSABLE
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage
from tests.support.eval_cli import run_args as _run_args, cut_predictions_to as _cut_to
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

#: An export manifest as train/export.py writes it for an integer-format judge (judge.checkpoints.write_manifest).
INTEGER_EXPORT = {"mode": "seq2seq", "prompt_version": "pollux-ru-v2", "generator": ".", "score_head": None,
                  "verdict_format": "integer"}
#: The served name: one naming no Pollux-4B-Judge, from which judge-eval alone would guess the tagged format.
SERVED = "my-judge"
TAGGED_VERDICT = "[FEEDBACK] ok [RESULT] 1 [END]"


@pytest.fixture(scope="module")
def integer_export(tiny_causal_dir, tmp_path_factory) -> Path:
    """A judge-train integer-format export (a Qwen2 folder with its manifest; no weights: the engine is scripted).
    One folder for the module: judge-serve's tokenizer is then loaded once (tests/unit/conftest.py)."""
    root = tmp_path_factory.mktemp("export") / "my-judge"
    shutil.copytree(tiny_causal_dir, root, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    (root / EXPORT_MANIFEST).write_text(json.dumps(INTEGER_EXPORT), encoding="utf-8")
    return root


@pytest.fixture
def data(tmp_path) -> Path:
    """Four sample records as a JSONL file."""
    return judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")


def _engine_get(path: str) -> tuple:
    if path == "/v1/models":
        return 200, {"object": "list", "data": [{"id": SERVED, "object": "model", "max_model_len": 8192}]}
    return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})


def _engine_answer(path: str, body: dict) -> tuple:
    """The integer judge's answer, as vLLM with --reasoning-parser qwen3 gives it: on /v1/completions (judge-serve's
    /v1/judge) the whole text; on chat completions (judge-serve's passthrough) the reasoning apart, the integer as
    the content."""
    if path == "/v1/completions":
        return 200, {"choices": [{"text": "<think>\nБез ошибок.\n</think>\n\n1", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    reply = chat_completion("1", SERVED)
    reply["choices"][0]["message"]["reasoning"] = "Без ошибок."
    return 200, reply


def _judge_serve_config(root: Path, engine: ScriptedEndpoint):
    from serve.config import ServeConfig

    return ServeConfig(model=str(root), served_model_name=SERVED, generator_url=engine.url, max_model_len=8192,
                       max_tokens=128, api_key="k").validate()


def _run_json(out: Path) -> dict:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------- judge-serve says its format


def test_judge_serve_lists_the_verdict_format_it_serves(integer_export, monkeypatch):
    """judge-serve serving an integer export under a name that names no 4B: its GET /v1/models and
    /v1/models/{id} entries carry verdict_format integer beside prompt_version, exactly, and a client reads it."""
    from fastapi.testclient import TestClient

    from judge.wire import ModelLimits
    from serve.app import create_app
    from tests.support.serve_in_process import await_bring_up

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(_engine_answer, respond_get=_engine_get) as engine:
        with TestClient(create_app(_judge_serve_config(integer_export, engine)), base_url="http://localhost") as http:
            await_bring_up(http)
            assert http.get("/ready").status_code == 200, http.get("/health").text
            auth = {"Authorization": "Bearer k"}
            listed = http.get("/v1/models", headers=auth).json()["data"]
            one = http.get(f"/v1/models/{SERVED}", headers=auth).json()
    assert listed == [{"id": SERVED, "object": "model", "max_model_len": 8192, "judge_max_tokens": 128,
                       "max_proxy_tokens": 8192, "prompt_version": "pollux-ru-v2", "verdict_format": "integer"}]
    assert one == listed[0]
    assert ModelLimits.from_entry(one).verdict_format == "integer"


@pytest.mark.parametrize("backend", ["judge-serve", "chat"])
def test_judge_eval_records_and_reads_the_format_judge_serve_serves(integer_export, data, tmp_path, monkeypatch,
                                                                     backend):
    """judge-eval run against judge-serve serving an integer export as "my-judge": run.json records integer (the
    name alone gives tagged) and every verdict parses, through /v1/judge (judge-serve parses) and through the chat
    passthrough (judge-eval parses: with the integer reader, thinking left on, the template judge-serve names);
    `score` then leaves POLLUX's evaluator out, as it does for an integer judge."""
    from serve.app import create_app
    from tests.support.serve_in_process import served_over_tcp

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    monkeypatch.setenv("JUDGE_SERVE_API_KEY", "k")
    out = tmp_path / "run"
    with ScriptedEndpoint(_engine_answer, respond_get=_engine_get) as engine:
        app = create_app(_judge_serve_config(integer_export, engine))
        with served_over_tcp(app) as (root, _):
            assert app.state.serve.status == "ready", app.state.serve.failure
            assert eval_main(_run_args(root, data, out, "--backend", backend)) == 0
    record = _run_json(out)
    assert (record["backend"], record["config"]["verdict_format"]) == (backend, "integer")
    assert record["server_limits"]["verdict_format"] == "integer" and record["prompt_version"] == "pollux-ru-v2"
    rows = read_predictions(out)
    assert len(rows) == 4 and all(row["parse_ok"] and row["score"] == 1.0 for row in rows), rows
    if backend == "chat":
        records = {r.id: r for r in judge.load_records(data)}
        sent = engine.bodies("/v1/chat/completions")
        assert len(sent) == 4 and all("chat_template_kwargs" not in body for body in sent)
        assert sorted(body["messages"][0]["content"] for body in sent) == sorted(
            judge.prompts.POLLUX_PROMPT.render(r) for r in records.values())
        assert {row["feedback"] for row in rows} == {"Без ошибок."}
    assert eval_main(["score", "--predictions", str(out), "--n-boot", "0", "--no-plots"]) == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["run"]["verdict_format"] == "integer" and "pollux_official" not in metrics


# ------------------------------------------------------------ stand-ins answering as judge-serve does, format chosen


def _judge_serve(verdict_format: str | None, answers: list[str] | None = None) -> ScriptedEndpoint:
    """A judge-serve stand-in serving ``judge``: its GET /v1/models entry says ``verdict_format`` (None: left out, as
    a judge-serve from before it said), and its /v1/judge answers in ``answers[k]`` for its k-th item request (the
    last one after; default ``verdict_format``, else tagged), a parsed score of 1 each."""
    answered: list[str] = []

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/judge":
            return 404, {"error": {"message": "not found"}}
        if not body:  # the backend probe
            return 400, {"error": {"message": "items: required field is missing"}}
        script = answers or [verdict_format or "tagged"]
        fmt = script[min(len(answered), len(script) - 1)]
        answered.append(fmt)
        output = TAGGED_VERDICT if fmt == "tagged" else "<think>ok</think>1"
        items = [JudgeResponseItem(i, item.get("id"), [
            judge.JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                              score_source="verdict", output=output) for c in item["criteria"]])
                 for i, item in enumerate(body["items"])]  # fmt: skip
        n = sum(len(item.results) for item in items)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", fmt, "pollux-ru-v2",
                                  items, JudgeResponseUsage(n, n, 0, 0, 0)).to_json()

    def respond_get(path: str) -> tuple[int, dict]:
        entry = {"id": "judge", "object": "model", "created": 0, "owned_by": "test", "max_model_len": 4096,
                 "judge_max_tokens": 256, "max_proxy_tokens": 4096, "prompt_version": "pollux-ru-v2"}
        if verdict_format is not None:
            entry["verdict_format"] = verdict_format
        return 200, {"object": "list", "data": [entry]}

    return ScriptedEndpoint(respond, model="judge", respond_get=respond_get)


def test_a_verdict_format_set_against_the_served_one_is_refused_before_any_item(data, tmp_path, capsys):
    """--verdict-format tagged against a judge-serve serving integer: refused (exit 2) naming both, with nothing sent
    but GET /v1/models (it says judge-serve); --verdict-format integer, the served one, runs."""
    with _judge_serve("integer") as server:
        assert eval_main(_run_args(server.base_url, data, tmp_path / "tagged", "--verdict-format", "tagged")) == 2
        assert server.bodies("/v1/judge") == []  # judge-serve by its GET /v1/models entry: no probe
        err = capsys.readouterr().err
        assert ("verdict_format: --verdict-format tagged, but judge-serve serves 'judge' in the verdict format "
                "integer") in err
        assert not (tmp_path / "tagged" / "run.json").exists()
        assert eval_main(_run_args(server.base_url, data, tmp_path / "integer", "--verdict-format", "integer")) == 0
    assert _run_json(tmp_path / "integer")["config"]["verdict_format"] == "integer"


def test_a_resume_against_a_judge_serve_serving_another_format_is_refused(data, tmp_path, capsys):
    """The judge-serve behind the URL now serves an integer judge under the name the tagged one had (a restart on
    another export): the resume is refused naming both formats and asks nothing; --overwrite starts again with it."""
    out = tmp_path / "run"
    with _judge_serve("tagged") as first:
        assert eval_main(_run_args(first.base_url, data, out)) == 0
    assert _run_json(out)["config"]["verdict_format"] == "tagged"
    _cut_to(out, 2)
    capsys.readouterr()
    with _judge_serve("integer") as second:
        assert eval_main(_run_args(second.base_url, data, out)) == 2
        assert second.bodies("/v1/judge") == []  # judge-serve by its GET /v1/models entry: no probe, no item
        err = capsys.readouterr().err
        assert (f"verdict_format: the 2 verdicts already in {out} are recorded in the verdict format tagged, this "
                "resume would read integer (judge-serve says so in its GET /v1/models entry") in err
        assert len(read_predictions(out)) == 2 and _run_json(out)["config"]["verdict_format"] == "tagged"
        assert eval_main(_run_args(second.base_url, data, out, "--overwrite")) == 0
    assert len(read_predictions(out)) == 4 and _run_json(out)["config"]["verdict_format"] == "integer"


def test_a_finished_folder_rerun_keeps_the_format_its_verdicts_were_recorded_in(data, tmp_path, caplog):
    """A rerun of a finished folder asks no server (so learns no served format): its run.json goes on saying the
    integer format the judge-serve served, not the tagged one the name "judge" alone gives. Its log says the format
    and template were said when the verdicts were asked (not that the server says so now), and run.json keeps the
    template's recorded reason, which `judge-eval merge` compares across shards."""
    import logging

    out = tmp_path / "run"
    with _judge_serve("integer") as server:
        assert eval_main(_run_args(server.base_url, data, out)) == 0
        assert _run_json(out)["config"]["verdict_format"] == "integer"
        judged_why = _run_json(out)["prompt_version_why"]
        assert judged_why == "judge-serve renders the prompts; its GET /v1/models says so"
        n = len(server.requests)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="judge_eval.run"):
            assert eval_main(_run_args(server.base_url, data, out)) == 0
        assert len(server.requests) == n
    said = [r.getMessage() for r in caplog.records if r.name == "judge_eval.run"]
    assert ("verdict format integer (judge-serve said so in its GET /v1/models entry when the folder's verdicts were "
            "asked, as run.json's server_limits records)") in said
    assert ("prompt template pollux-ru-v2 (judge-serve rendered the prompts; its GET /v1/models said so when the "
            "folder's verdicts were asked, as run.json's server_limits records)") in said
    assert not [m for m in said if "says so" in m]
    assert _run_json(out)["config"]["verdict_format"] == "integer"
    assert _run_json(out)["prompt_version_why"] == judged_why


def test_a_judge_serve_answering_in_another_format_mid_run_stops_the_run(data, tmp_path, capsys):
    """A judge-serve that says tagged and answers its third request in integer (changed under the run): the run
    stops there (exit 4) naming both formats; the two rows answered in the recorded format are kept, none is written
    for the third answer or after it, and run.json still says tagged."""
    out = tmp_path / "run"
    with _judge_serve("tagged", ["tagged", "tagged", "integer"]) as server:
        code = eval_main(_run_args(server.base_url, data, out, "--batch-size", "1", "--concurrency", "1"))
        n_asked = len(server.bodies("/v1/judge"))  # no probe: its GET /v1/models entry says judge-serve
    assert code == EXIT_UNUSABLE and n_asked == 3
    err = capsys.readouterr().err
    assert ("judge-serve answered in the verdict format integer, but this run records tagged for 'judge' (its "
            "run.json)") in err
    assert "stopped after sending 3 of 4 requests (2 rows written are kept" in err
    rows = read_predictions(out)
    assert len(rows) == 2 and all(row["parse_ok"] for row in rows)
    assert _run_json(out)["config"]["verdict_format"] == "tagged"


def test_a_judge_serve_that_does_not_say_its_format_is_held_to_its_answers(data, tmp_path, capsys):
    """A judge-serve from before GET /v1/models named the format, serving an integer judge as "judge": judge-eval's
    guess from the name (tagged) meets the first /v1/judge answer (integer) and the run stops before writing a row,
    saying which --verdict-format to set; set, the run records integer."""
    with _judge_serve(None, ["integer"]) as server:
        assert eval_main(_run_args(server.base_url, data, tmp_path / "guessed")) == EXIT_UNUSABLE
        assert "then set --verdict-format integer" in capsys.readouterr().err
        guessed = tmp_path / "guessed" / "predictions.jsonl"
        assert not guessed.exists() or guessed.read_text(encoding="utf-8") == ""
        assert eval_main(_run_args(server.base_url, data, tmp_path / "set", "--verdict-format", "integer")) == 0
    assert _run_json(tmp_path / "set")["config"]["verdict_format"] == "integer"
    assert len(read_predictions(tmp_path / "set")) == 4


# ------------------------------------------- one engine answer, the same row through /v1/judge and the chat passthrough


#: An integer judge's whole generation and its finish_reason, one per record: a verdict; a reasoning cut by
#: max_tokens; a reasoning closed with no answer after it; an answer the length limit stopped.
GENERATIONS = [("<think>\nБез ошибок.\n</think>\n\n1", "stop"), ("<think>\nпроверяю пункт 2", "length"),
               ("<think>\nготово\n</think>", "stop"), ("<think>\nготово\n</think>\n\n1", "length")]


def _split_as_vllm(text: str) -> tuple[str | None, str | None]:
    """The (reasoning, content) vLLM's reasoning parser makes of ``text`` on a chat answer (``qwen3``'s, which
    ``test_the_stand_in_split_is_the_installed_vllm_qwen3_reasoning_parsers`` holds it to): its ``<think>``
    dropped, the text up to ``</think>`` the reasoning, the rest the content (None when empty); no ``</think>``:
    all of it reasoning."""
    opened = text.partition("<think>")
    text = opened[2] if opened[1] else opened[0]
    if "</think>" not in text:
        return text, None
    reasoning, _, content = text.partition("</think>")
    return reasoning, content or None


@pytest.mark.parametrize("backend", ["judge-serve", "chat"])
def test_an_integer_judges_row_is_the_same_through_the_typed_route_and_the_chat_passthrough(
        integer_export, tmp_path, monkeypatch, backend):
    """The same generation of an integer judge, given whole on /v1/completions (judge-serve's /v1/judge) and split
    by vLLM's reasoning parser on chat (judge-serve's passthrough, judge-eval parses): every row field the two
    routes share is the same, raw_output included: the reasoning put back before the answer, as the engine wrote
    it. (Before: the chat row's raw_output was the bare integer, its reasoning gone from it, so reading it again
    gave another feedback; a reasoning closed with no answer gave another reason.)"""
    import serve.supervision
    from serve.app import create_app
    from tests.support.serve_in_process import served_over_tcp

    records = [dataclasses.replace(r, answer=f"case{k} {r.answer}")
               for k, r in enumerate(judge.load_records(judge.sample_data_path())[:len(GENERATIONS)])]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    # The export's tokenizer as judge-serve loads it (its loader, remembered per folder on this worker): the
    # judge-serve below loads that same one.
    tokenizer = serve.supervision.load_tokenizer(integer_export)

    def generation(prompt: str) -> tuple[str, str]:
        (k,) = [k for k in range(len(GENERATIONS)) if f"case{k} " in prompt]
        return GENERATIONS[k]

    def respond(path: str, body: dict) -> tuple:
        if path == "/v1/completions":
            text, finish = generation(tokenizer.decode(body["prompt"]))
            return 200, {"choices": [{"text": text, "finish_reason": finish}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
        text, finish = generation(body["messages"][0]["content"])
        reasoning, content = _split_as_vllm(text)
        reply = chat_completion(content, SERVED, finish)
        reply["choices"][0]["message"]["reasoning"] = reasoning
        return 200, reply

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    monkeypatch.setenv("JUDGE_SERVE_API_KEY", "k")
    out = tmp_path / backend
    with ScriptedEndpoint(respond, respond_get=_engine_get) as engine:
        app = create_app(_judge_serve_config(integer_export, engine))
        with served_over_tcp(app) as (root, _):
            assert eval_main(_run_args(root, data, out, "--backend", backend)) == 0
    shared = ("raw_output", "feedback", "score", "parse_ok", "error", "reason", "finish_reason")
    rows = {row["id"]: tuple(row[name] for name in shared) for row in read_predictions(out)}
    expected = {
        "s0001": ("<think>\nБез ошибок.\n</think>\n\n1", "Без ошибок.", 1.0, True, None, "", "stop"),
        "s0002": ("<think>\nпроверяю пункт 2", "проверяю пункт 2", None, False, "unclosed_think",
                  "<think> is never closed: the output ended while reasoning", "length"),
        "s0003": ("<think>\nготово\n</think>", "готово", None, False, "empty",
                  "the reasoning closed with no answer after it", "stop"),
    }
    assert {k: rows[k] for k in expected} == expected
    assert rows["s0004"][:5] == ("<think>\nготово\n</think>\n\n1", "готово", None, False, "cut")


def test_the_stand_in_split_is_the_installed_vllm_qwen3_reasoning_parsers(qwen3_tokenizer):
    """``_split_as_vllm`` is what judge-serve's engine (vLLM 0.32, ``--reasoning-parser qwen3``: ``Qwen3Parser`` in
    ``vllm/parser/qwen3.py``, which the ``qwen3`` name maps to, not ``BaseThinkingReasoningParser``) makes of each
    generation the route test gives, so the chat rows that test reads are the ones vLLM's split gives; and where that
    parser's split loses what the judge wrote (a generation with no ``</think>`` is all reasoning, opened or not; an
    empty reasoning is None), which no chat client can put back."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.reasoning import ReasoningParserManager
    from vllm.tokenizers.hf import get_cached_tokenizer

    parser_class = ReasoningParserManager.get_reasoning_parser("qwen3")
    # A fresh parser a generation, as the engine makes one a request, each given the tokenizer the engine holds:
    # vLLM's cached copy (vllm/tokenizers/hf.py, CachedHfTokenizer), whose vocabulary is read once, not at each
    # parser's start.
    tokenizer = get_cached_tokenizer(qwen3_tokenizer)
    request = ChatCompletionRequest(model=SERVED, messages=[{"role": "user", "content": "x"}])
    split = {text: parser_class(tokenizer).extract_reasoning(text, request) for text, _ in GENERATIONS}
    assert split == {text: _split_as_vllm(text) for text, _ in GENERATIONS}
    lossy = ["1", "<think>1</think>", "<think></think>1"]
    assert [parser_class(tokenizer).extract_reasoning(text, request) for text in lossy] == [
        ("1", None), ("1", None), (None, "1")]


def test_a_chat_answer_whose_content_holds_its_own_think_block_is_not_given_the_reasoning_again():
    """A server that returns the reasoning apart and also leaves it inline (content ``<think>R</think>1`` beside
    ``reasoning`` R) already holds the whole generation: put back before it, the block would be written twice in the
    row's raw output. The content stands as it came, read as /v1/judge reads that text; a bare answer still gets its
    reasoning back. (Before: ``<think>R</think><think>R</think>1``.) judge.rewards.completion_text does not put
    such a reasoning back either."""
    from eval.judging.backends import verdict_outcome

    record = judge.load_records(judge.sample_data_path())[0]
    inline = verdict_outcome("<think>\nБез ошибок.\n</think>\n\n1", record, False, verdict_format="integer",
                             reasoning="\nБез ошибок.\n", finish_reason="stop")
    apart = verdict_outcome("\n\n1", record, False, verdict_format="integer", reasoning="\nБез ошибок.\n",
                            finish_reason="stop")
    for row in (inline, apart):
        assert (row["raw_output"], row["feedback"], row["score"], row["parse_ok"]) == (
            "<think>\nБез ошибок.\n</think>\n\n1", "Без ошибок.", 1.0, True)
