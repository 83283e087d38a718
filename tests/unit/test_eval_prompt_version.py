"""``judge-eval run``'s ``prompt_version`` setting: the Russian pointwise template a chat request asks the judge with.

A judge reached by a plain OpenAI-compatible URL (vLLM serving it directly) shows no export manifest, so an
integer-format judge is asked, by default (``auto``), with the released Pollux-4B-Judge's template
(``pollux-ru-4b-v1``: the Russian prompt and one newline); ``--prompt-version pollux-ru-v2`` asks an integer judge
trained here with the template it learned. A version no template has, a setting a judge-serve contradicts (it renders
its own prompt on /v1/judge) and a resume under another setting are refused before any item is asked; run.json
records the version used and why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from eval.cli import main as eval_main
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage
from tests.support.eval_cli import cut_predictions_to, run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

#: The served name: one naming no Pollux-4B-Judge (an integer judge trained here, served by vLLM under its own name).
SERVED = "my-judge"


@pytest.fixture
def records() -> list:
    return judge.load_records(judge.sample_data_path())[:4]


@pytest.fixture
def data(records, tmp_path) -> Path:
    return judge.write_jsonl(records, tmp_path / "data.jsonl")


def _vllm() -> ScriptedEndpoint:
    """vLLM serving an integer judge: chat completions only (no /v1/judge, so the chat backend is chosen)."""
    return ScriptedEndpoint(lambda path, body: (200, chat_completion("Ответ верен.\n1", SERVED))
                            if path == "/v1/chat/completions" else (404, {"detail": "Not Found"}), model=SERVED)


def _run_json(out: Path) -> dict:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("setting, newline, version, why", [
    ("auto", "\n", "pollux-ru-4b-v1", "an integer-format judge without an export manifest is the released "
                                      "Pollux-4B-Judge: its own prompt, the Russian prompt and one newline"),
    ("pollux-ru-v2", "", "pollux-ru-v2", "the prompt_version setting names it"),
])  # fmt: skip
def test_an_integer_url_judge_is_asked_with_the_template_the_setting_chooses(setting, newline, version, why, records,
                                                                             data, tmp_path):
    """auto: the 4B's template, the POLLUX prompt and one newline; pollux-ru-v2: the POLLUX prompt exactly, no
    newline. Every request's text is the one expected, byte for byte; run.json records the version and why."""
    out = tmp_path / "run"
    with _vllm() as server:
        assert eval_main(run_args(server.base_url, data, out, "--verdict-format", "integer",
                                  "--prompt-version", setting)) == 0
    sent = sorted(body["messages"][0]["content"] for body in server.bodies("/v1/chat/completions"))
    assert sent == sorted(judge.render_prompt(r) + newline for r in records)
    assert all(text.startswith("### Задание для оценки:\n") for text in sent)
    assert all(text.endswith("\n") == bool(newline) for text in sent)
    record = _run_json(out)
    assert (record["prompt_version"], record["prompt_version_why"]) == (version, why)
    assert record["config"]["prompt_version"] == setting


@pytest.mark.parametrize("extra, message", [
    (("--prompt-version", "pollux-ru-v3"), "prompt_version: 'pollux-ru-v3' is not one of auto, pollux-ru-v2, "
                                           "pollux-ru-4b-v1"),
    (("--prompt-version", "pollux-ru-v2", "--prompt", "en"),
     "prompt_version: pollux-ru-v2 names a template of the Russian prompt; prompt en asks with the English one"),
])  # fmt: skip
def test_a_setting_that_names_no_template_or_goes_unused_is_refused(extra, message, data, tmp_path, capsys):
    with _vllm() as server:
        assert eval_main(run_args(server.base_url, data, tmp_path / "run", *extra)) == 2
    assert message in capsys.readouterr().err
    assert not server.requests and not server.gets


def test_a_setting_on_pairwise_data_is_refused(tmp_path, capsys):
    """Pairwise rows are asked with the pairwise template, which the setting would not change: refused, unasked."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": f"Ответ {k}.",
                                         "answer_2": f"Иначе {k}.", "rubrics": "-1: ответ 1 лучше\n0: равны\n"
                                         "1: ответ 2 лучше", "winner": -1}, ensure_ascii=False) + "\n"
                             for k in (1, 2)), encoding="utf-8")  # fmt: skip
    with _vllm() as server:
        assert eval_main(run_args(server.base_url, pairs, tmp_path / "run", "--prompt-version", "pollux-ru-v2")) == 2
    assert "prompt_version: pollux-ru-v2 names a pointwise template;" in capsys.readouterr().err
    assert not server.requests


def _judge_serve(served_version: str) -> ScriptedEndpoint:
    """A judge-serve stand-in naming ``served_version`` in GET /v1/models and answering /v1/judge with it."""

    def respond(path: str, body: dict) -> tuple:
        if not body:  # the backend probe: judge-serve answers an empty body 400
            return 400, {"error": {"message": "items: required field is missing"}}
        items = [JudgeResponseItem(i, item.get("id"), [
            judge.JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                              score_source="verdict", output="1") for c in item["criteria"]])
                 for i, item in enumerate(body["items"])]  # fmt: skip
        n = sum(len(item.results) for item in items)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "integer", served_version,
                                  items, JudgeResponseUsage(n, n, 0, 0, 0)).to_json()

    def respond_get(path: str) -> tuple:
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 4096,
                                                 "judge_max_tokens": 256, "prompt_version": served_version,
                                                 "verdict_format": "integer"}]}

    return ScriptedEndpoint(respond, model="judge", respond_get=respond_get)


def test_a_setting_against_the_version_judge_serve_names_is_refused_naming_both(data, tmp_path, capsys):
    """judge-serve renders its own prompt on /v1/judge: a setting naming another is refused before any item, naming
    both; one naming the same runs, and run.json says the setting chose it."""
    with _judge_serve("pollux-ru-4b-v1") as server:
        assert eval_main(run_args(server.base_url, data, tmp_path / "refused", "--prompt-version", "pollux-ru-v2")) == 2
        assert not [body for body in server.bodies("/v1/judge") if body]
        assert eval_main(run_args(server.base_url, data, tmp_path / "same", "--prompt-version", "pollux-ru-4b-v1")) == 0
    err = capsys.readouterr().err
    assert ("prompt_version: --prompt-version pollux-ru-v2, but judge-serve's GET /v1/models names pollux-ru-4b-v1 "
            "for this judge (it renders its own prompt on /v1/judge") in err
    record = _run_json(tmp_path / "same")
    assert (record["backend"], record["prompt_version"]) == ("judge-serve", "pollux-ru-4b-v1")
    assert record["prompt_version_why"] == "the prompt_version setting names it"


@pytest.mark.parametrize("first, then, change", [
    ("auto", "pollux-ru-v2", "prompt_version: None -> 'pollux-ru-v2'"),
    ("pollux-ru-v2", "pollux-ru-4b-v1", "prompt_version: 'pollux-ru-v2' -> 'pollux-ru-4b-v1'"),
    ("pollux-ru-v2", "auto", "prompt_version: 'pollux-ru-v2' -> None"),
])  # fmt: skip
def test_a_resume_under_another_setting_is_refused_and_one_under_the_same_keeps_its_template(
        first, then, change, records, data, tmp_path, capsys):
    """The setting is in the run key (``auto`` left out, as keys written before it had none): another one is
    refused naming it, before any request; the same one resumes asking the rest with the folder's template."""
    out = tmp_path / "run"
    fmt = ("--verdict-format", "integer")
    with _vllm() as server:
        assert eval_main(run_args(server.base_url, data, out, *fmt, "--prompt-version", first)) == 0
        cut_predictions_to(out, 2)
        n = len(server.requests)
        capsys.readouterr()
        assert eval_main(run_args(server.base_url, data, out, *fmt, "--prompt-version", then)) == 2
        assert change in capsys.readouterr().err
        assert len(server.requests) == n
        assert eval_main(run_args(server.base_url, data, out, *fmt, "--prompt-version", first)) == 0
    newline = "\n" if first == "auto" else ""
    sent = [body["messages"][0]["content"] for body in server.bodies("/v1/chat/completions")]
    assert len(sent) == len(records) + 2
    assert set(sent) == {judge.render_prompt(r) + newline for r in records}
    assert _run_json(out)["prompt_version"] == ("pollux-ru-4b-v1" if first == "auto" else "pollux-ru-v2")


def test_the_english_prompt_against_judge_serve_is_refused_before_any_item(data, tmp_path, capsys):
    """judge-serve renders /v1/judge's prompts itself, in Russian: ``--prompt en`` was sent nowhere and recorded in
    run.json as the template the verdicts were asked with. Now refused before any item, naming what to do; through
    its chat route (``--backend chat``) the English prompt is what the judge gets."""
    with _judge_serve("pollux-ru-4b-v1") as server:
        assert eval_main(run_args(server.base_url, data, tmp_path / "refused", "--prompt", "en")) == 2
        assert not [body for body in server.bodies("/v1/judge") if body]
    err = capsys.readouterr().err
    assert (f"prompt: en, but {server.base_url} is a judge-serve, whose /v1/judge renders the Russian POLLUX prompt "
            "itself: the English prompt would be recorded in run.json, not sent; send it through its chat route with "
            "--backend chat, or drop --prompt en") in err
    assert not (tmp_path / "refused" / "predictions.jsonl").exists()
