"""How a judge's verdict format and prompt template are chosen, and kept.

- One rule reads a judge's format from its id: ``judge.verdict_format_of_model`` (the contract) answers as
  judge-eval's ``resolve_verdict_format`` and ``judge.checkpoints.verdict_format_and_why`` (judge-serve's) do, for the
  released id, a local copy's folder, a renamed or quantised copy, and for every other judge.
- A judge given as a hub id is read from its cached snapshot, as judge-serve reads it (export manifest first);
  a hub id the cache lacks, and a URL, by the served model id.
- A ``judge-eval run`` resume keeps the prompt template its folder's verdicts were asked with (``run.json``'s
  ``prompt_version``): a resume that would ask with another is refused naming both, before any request, and a rerun
  of a finished folder leaves run.json saying the template its verdicts had.

The judges are scripted HTTP stand-ins (``tests.support.scripted_endpoint``): the network boundary of judge-eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from eval.cli import main as eval_main
from eval.judging.predictions import read_predictions
from judge.checkpoints import names_pollux_4b, verdict_format_and_why
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage
from tests.support.eval_cli import run_args as _run_args, cut_predictions_to as _cut_to
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

VERDICT = "[FEEDBACK] ok [RESULT] 1 [END]"


# ------------------------------------------------------------------------------------- one rule for an id's format


@pytest.mark.parametrize("model_id, expected", [
    ("ai-forever/Pollux-4B-Judge", "integer"),      # the release
    ("ai-forever/pollux-4b-judge", "integer"),      # any case
    ("./models/Pollux-4B-Judge-v2", "integer"),     # a local copy, renamed
    ("ai-forever/Pollux-4B-Judge-AWQ", "integer"),  # a quantised copy
    ("/mnt/pollux-4b/", "integer"),                 # a folder named for it
    ("pollux_4b", "integer"),
    ("ai-forever/pollux-judge-7b", "tagged"),
    ("ai-forever/pollux-judge-32b-r", "tagged"),
    ("tiny-judge", "tagged"),
    ("", "tagged"),
])  # fmt: skip
def test_the_contract_and_the_stages_read_an_id_alike(model_id, expected, tmp_path):
    """judge.verdict_format_of_model gives the format judge-eval (a URL judge serving that id) and judge-serve (a
    manifest-less, non-Qwen3 folder served under that name) give: one rule, names_pollux_4b."""
    from eval.judging.run import resolve_verdict_format

    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}))
    assert judge.verdict_format_of_model(model_id) == expected
    assert (expected == "integer") == names_pollux_4b(model_id)
    assert resolve_verdict_format("auto", "http://127.0.0.1:9/v1", model_id) == expected
    assert verdict_format_and_why(folder, model_id)[0] == expected


# ------------------------------------------------------------------------- a hub id is read from its snapshot


@pytest.mark.parametrize("repo_id, files, fmt, version", [
    # judge-train's export of a 4B fine-tune, pushed to the hub: its manifest says tagged, asked with pollux-ru-v2
    ("me/pollux-4b-judge-ft", {"config.json": {"model_type": "qwen3"},
                               "pollux_judge.json": {"mode": "seq2seq", "prompt_version": "pollux-ru-v2"}},
     "tagged", "pollux-ru-v2"),
    # a renamed copy of the released 4B (Qwen3, no manifest)
    ("me/renamed-judge", {"config.json": {"model_type": "qwen3"}}, "integer", "pollux-ru-4b-v1"),
    # a 7B-like judge under a plain name
    ("me/plain-judge", {"config.json": {"model_type": "qwen2"}}, "tagged", "pollux-ru-v2"),
])  # fmt: skip
def test_a_hub_id_judge_is_read_from_its_cached_snapshot_as_judge_serve_reads_it(repo_id, files, fmt, version,
                                                                                 tmp_path, monkeypatch):
    """judge-eval --judge <hub id> (the snapshot local_server serves) chooses the format and template judge-serve
    chooses for that snapshot: its export manifest first, then its ids and model_type, not the hub id's name alone."""
    from eval.judging.run import resolve_prompt_template, resolve_verdict_format
    from judge.checkpoints import prompt_template_and_why, read_manifest
    from tests.support.tiny_released import add_to_hub_cache

    folder = tmp_path / "files"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content), encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    snapshot = add_to_hub_cache(folder, tmp_path / "hub", repo_id)
    served = repo_id.rsplit("/", 1)[-1]  # local_server's --served-model-name for a hub id
    assert resolve_verdict_format("auto", repo_id, served) == fmt == verdict_format_and_why(snapshot, served)[0]
    template, _ = resolve_prompt_template(fmt, repo_id)
    assert template.version == version == prompt_template_and_why(fmt, read_manifest(snapshot))[0].version


def test_a_hub_id_the_cache_lacks_is_read_by_its_name(tmp_path, monkeypatch):
    """With no snapshot to read (a rerun with nothing to ask starts no server and fetches nothing) the hub id's name
    decides, as before."""
    from eval.judging.run import resolve_prompt_template, resolve_verdict_format

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_verdict_format("auto", "ai-forever/Pollux-4B-Judge", "Pollux-4B-Judge") == "integer"
    assert resolve_prompt_template("integer", "ai-forever/Pollux-4B-Judge")[0].version == "pollux-ru-4b-v1"
    assert resolve_verdict_format("auto", "ai-forever/pollux-judge-7b", "pollux-judge-7b") == "tagged"


# --------------------------------------------------------------------------- a resume keeps its prompt template


@pytest.fixture
def data(tmp_path) -> Path:
    """Four sample records as a JSONL file."""
    path = tmp_path / "data.jsonl"
    judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], path)
    return path


def _prompt_version(out: Path) -> str:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))["prompt_version"]


def _judge_serve(prompt_version: str) -> ScriptedEndpoint:
    """A judge-serve stand-in serving ``judge``, whose GET /v1/models says its /v1/judge renders ``prompt_version``."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/judge":
            return 404, {"error": {"message": "not found"}}
        if not body:  # the backend probe
            return 400, {"error": {"message": "items: required field is missing"}}
        items = [JudgeResponseItem(i, item.get("id"), [
            judge.JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                              score_source="verdict", output=VERDICT) for c in item["criteria"]])
                 for i, item in enumerate(body["items"])]  # fmt: skip
        n = sum(len(item.results) for item in items)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged", prompt_version,
                                  items, JudgeResponseUsage(n, n, 0, 0, 0)).to_json()

    def respond_get(path: str) -> tuple[int, dict]:
        entry = {"id": "judge", "object": "model", "created": 0, "owned_by": "test", "max_model_len": 4096,
                 "judge_max_tokens": 256, "max_proxy_tokens": 4096, "prompt_version": prompt_version}
        return 200, {"object": "list", "data": [entry]}

    return ScriptedEndpoint(respond, model="judge", respond_get=respond_get)


def test_a_resume_against_a_judge_serve_rendering_another_template_is_refused(data, tmp_path, capsys):
    """The judge-serve behind the URL now renders another template (a re-exported checkpoint served under the same
    name): the resume is refused naming both versions, and asks nothing; --overwrite starts again with the new one."""
    out = tmp_path / "run"
    with _judge_serve("pollux-ru-v2") as first:
        assert eval_main(_run_args(first.base_url, data, out)) == 0
    assert _prompt_version(out) == "pollux-ru-v2"
    _cut_to(out, 2)
    capsys.readouterr()
    with _judge_serve("pollux-ru-4b-v1") as second:
        assert eval_main(_run_args(second.base_url, data, out)) == 2
        assert second.bodies("/v1/judge") == []  # no item asked (judge-serve is known from GET /v1/models: no probe)
        err = capsys.readouterr().err
        assert (f"prompt: the 2 verdicts already in {out} were asked with the prompt template pollux-ru-v2, this "
                "resume would ask pollux-ru-4b-v1") in err
        assert "--overwrite" in err
        assert len(read_predictions(out)) == 2 and _prompt_version(out) == "pollux-ru-v2"
        assert eval_main(_run_args(second.base_url, data, out, "--overwrite")) == 0
    assert len(read_predictions(out)) == 4 and _prompt_version(out) == "pollux-ru-4b-v1"


def test_a_resume_of_the_4b_judge_asked_with_another_template_is_refused(data, tmp_path, capsys):
    """A folder whose verdicts of the released Pollux-4B-Judge were asked with pollux-ru-v2 (what this toolkit sent it
    before it had the judge's own template; run.json recorded it): a resume that would ask pollux-ru-4b-v1 is refused
    naming both and why the new one was chosen, instead of mixing two prompts in one folder."""
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat("Ответ верен.\n1"),
                          model="Pollux-4B-Judge") as server:
        assert eval_main(_run_args(server.base_url, data, out)) == 0
        assert _prompt_version(out) == judge.prompts.POLLUX_4B_PROMPT.version
        record = json.loads((out / "run.json").read_text(encoding="utf-8"))
        (out / "run.json").write_text(json.dumps({**record, "prompt_version": "pollux-ru-v2"}), encoding="utf-8")
        _cut_to(out, 2)
        n = len(server.bodies("/v1/chat/completions"))
        capsys.readouterr()
        assert eval_main(_run_args(server.base_url, data, out)) == 2
        err = capsys.readouterr().err
        assert (f"prompt: the 2 verdicts already in {out} were asked with the prompt template pollux-ru-v2, this "
                "resume would ask pollux-ru-4b-v1 (an integer-format judge without an export manifest is the "
                "released Pollux-4B-Judge") in err
        assert len(server.bodies("/v1/chat/completions")) == n
        assert len(read_predictions(out)) == 2


def test_a_finished_folder_rerun_keeps_the_template_its_verdicts_had(data, tmp_path):
    """A rerun of a finished folder asks nothing, so nothing is refused; its run.json goes on naming the template
    the folder's verdicts were asked with, not the one a new launch would choose."""
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat("Ответ верен.\n1"),
                          model="Pollux-4B-Judge") as server:
        assert eval_main(_run_args(server.base_url, data, out)) == 0
        record = json.loads((out / "run.json").read_text(encoding="utf-8"))
        (out / "run.json").write_text(json.dumps({**record, "prompt_version": "pollux-ru-v2"}), encoding="utf-8")
        n = len(server.requests)
        assert eval_main(_run_args(server.base_url, data, out)) == 0
        assert len(server.requests) == n
    assert _prompt_version(out) == "pollux-ru-v2"


def test_a_resume_with_the_other_language_is_refused_by_the_run_key(data, tmp_path, capsys):
    """--prompt en after ru is a setting of the run key: refused naming it, before any request."""
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat(VERDICT)) as server:
        assert eval_main(_run_args(server.base_url, data, out)) == 0
        _cut_to(out, 2)
        n = len(server.requests)
        capsys.readouterr()
        assert eval_main(_run_args(server.base_url, data, out, "--prompt", "en")) == 2
        assert "prompt: 'ru' -> 'en'" in capsys.readouterr().err
        assert len(server.requests) == n


def test_pollux_4b_served_by_vllm_under_another_name_is_known_by_its_root(data, tmp_path):
    """vLLM under --served-model-name judge lists the checkpoint it serves as the entry's root: a Pollux-4B-Judge
    there was asked as a tagged judge with the 7B/32B prompt and thinking off, and every verdict failed to parse."""
    def respond_get(path):
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "created": 0, "owned_by": "vllm",
                                                 "root": "ai-forever/Pollux-4B-Judge", "max_model_len": 4096}]}

    with ScriptedEndpoint(vllm_chat("Ответ верен.\n1"), model="judge", respond_get=respond_get) as server:
        assert eval_main(_run_args(server.base_url, data, tmp_path / "run")) == 0
        sent = server.bodies("/v1/chat/completions")
    # Batches go out concurrently: the requests arrive in no fixed order, so each is matched to its record's prompt.
    prompts = [judge.prompts.POLLUX_4B_PROMPT.render(record) for record in judge.load_records(data)]
    assert sent and all(body["messages"] == [{"role": "user", "content": body["messages"][0]["content"]}]
                        and body["messages"][0]["content"] in prompts for body in sent)
    assert prompts[0] in [body["messages"][0]["content"] for body in sent]
    assert all("chat_template_kwargs" not in body for body in sent)  # thinking left on, as the 4B answers
    run_json = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert (run_json["config"]["verdict_format"], run_json["prompt_version"]) == ("integer", "pollux-ru-4b-v1")
    assert {row["score"] for row in map(json.loads, (tmp_path / "run" / "predictions.jsonl").read_text().splitlines())} == {1.0}


def test_a_resume_through_another_route_is_refused(data, tmp_path, capsys):
    """A folder's verdicts came through judge-serve's /v1/judge; a resume whose server now answers as a chat server
    (``--backend auto``: the route is detected, not set) would mix the LM's own verdicts with a regression judge's
    head scores in one file: refused before any item is asked."""
    out = tmp_path / "run"
    with _judge_serve("pollux-ru-v2") as first:
        assert eval_main(_run_args(first.base_url, data, out)) == 0
    _cut_to(out, 2)
    capsys.readouterr()
    with ScriptedEndpoint(vllm_chat(VERDICT), model="judge") as second:
        assert eval_main(_run_args(second.base_url, data, out)) == 2
        assert second.bodies("/v1/chat/completions") == []
    assert (f"backend: the 2 verdicts already in {out} were asked through judge-serve, this resume would use chat (the "
            "server answers as one now): resume against the server that judged them, or start again with --overwrite"
            ) in capsys.readouterr().err
