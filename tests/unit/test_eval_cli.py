"""judge-eval: every subcommand's --help, configs, and `run` against a scripted OpenAI-compatible HTTP server whose
received payloads are asserted exactly (resume after a kill, retries, refusals, parse failures, /v1/judge); the
end-to-end test drives a tiny real judge on vLLM through run -> score -> compare.

The tests of this subject that start heavy components are in tests/integration/serving/test_eval_cli.py.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import judge
from eval.cli import build_parser, main, resolve_run_config
from eval.judging.predictions import read_predictions, record_content_key
from eval.judging.config import RunConfig
from judge.plumbing.config_files import ConfigError, resolve_config
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

REPO = Path(__file__).resolve().parents[2]
GOOD = "[FEEDBACK] Ответ соответствует критерию. [RESULT] 1 [END]"


# ------------------------------------------------------------------------------------------ scripted server


class ScriptedServer(ScriptedEndpoint):
    """An OpenAI-compatible server on 127.0.0.1 that answers from a script and records every request body.

    ``script[prompt]`` is a list of actions used in turn (the last one repeats): a reply text, or an int HTTP status
    to fail with. Prompts without a script get ``GOOD``. With ``judge_results`` set it also serves ``/v1/judge``,
    answering each criterion with ``judge_results(criterion)``; otherwise ``/v1/judge`` is 404, as on vLLM.
    """

    def __init__(self, script=None, judge_results=None, hold_after: int | None = None):
        """``hold_after``: answer that many chat requests, then hold every further one until ``release`` is set
        (a run that can be killed with exactly that many rows written, on any machine)."""
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.judge_results = judge_results
        self.hold_after, self.answered, self.held, self.release = hold_after, 0, 0, threading.Event()
        self.lock = threading.Lock()
        super().__init__(self._respond)

    def _respond(self, path: str, body: dict) -> tuple[int, dict]:
        if path == "/v1/judge":
            if self.judge_results is None:
                return 404, {"detail": "Not Found"}
            if not body:  # backend detection probes with an empty body
                return 400, {"error": {"message": "items: required field is missing"}}
            # the results as the script gives them, not read back: a result no reader takes (a NaN score) is sent
            results = [self.judge_results(c) for c in body["items"][0]["criteria"]]
            usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
            answer = JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged", judge.PROMPT_VERSION,
                                   [JudgeResponseItem(0, body["items"][0].get("id"), [])], usage).to_json()
            answer["items"][0]["results"] = results
            return 200, answer
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": "not found"}}
        with self.lock:
            actions = self.script.get(body["messages"][0]["content"])
            action = (actions.pop(0) if len(actions) > 1 else actions[0]) if actions else GOOD
            held = self.hold_after is not None and self.answered >= self.hold_after
            self.answered += not held
            self.held += held
        if held:
            self.release.wait(120)
        if isinstance(action, int):
            return action, {"error": {"message": f"scripted {action}", "type": "scripted"}}
        return 200, chat_completion(action, body["model"])

    @property
    def received(self) -> list[tuple[str, dict]]:
        """Every request but the backend-detection probe (an empty POST to /v1/judge)."""
        return [(path, body) for path, body in self.requests if body]

    def prompts(self) -> list[str]:
        return [body["messages"][0]["content"] for path, body in self.received if path == "/v1/chat/completions"]


def _chat_payload(record, max_tokens: int = 32) -> dict:
    # The Russian POLLUX prompt travels with thinking off (Qwen3 judges read it, ChatML ignores it), and with every
    # sampling field vLLM would otherwise take from the judge's generation_config.json stated neutral.
    return {"model": "scripted", "messages": [{"role": "user", "content": judge.render_prompt(record)}],
            "max_tokens": max_tokens, "temperature": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
            "frequency_penalty": 0.0, "top_p": 1.0, "top_k": -1, "min_p": 0.0,
            "chat_template_kwargs": {"enable_thinking": False}}


def _run_args(url: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--max-tokens", "32", "--no-progress",
            "--backoff-s", "0.01", *extra]


def _ids(path: Path) -> list[str]:
    return [row["id"] for row in read_predictions(path)]


# --------------------------------------------------------------------------------------------------- help


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["score", "--help"], ["compare", "--help"],
                                  ["mera", "--help"]])
def test_every_subcommand_has_help(argv, capsys):
    """--help exits 0 and prints a usage line (mera's comes from eval.mera.cli)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_every_subcommands_help_lists_the_code_of_an_interrupt(capsys):
    """`main` answers Ctrl+C in every subcommand with one line and exit 130 (docs/evaluation.md lists it for run and
    rank), yet each `--help`'s exit codes stopped at 4 or 2: a script reading 130 found it in no help."""
    from eval.cli import EXIT_CODES, EXIT_INTERRUPTED

    subcommands = build_parser()._subparsers._group_actions[0].choices
    assert set(EXIT_CODES) == set(subcommands) - {"mera", "bench"}  # mera lists its own; bench is rank's old name
    for name in EXIT_CODES:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert f"; {EXIT_INTERRUPTED} interrupted (Ctrl+C)" in text[text.index("exit codes: 0 "):], (name, text[-300:])
    assert EXIT_INTERRUPTED == 130


def test_console_script_is_installed():
    """The `judge-eval` entry point resolves to eval.cli:main."""
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "judge-eval"]
    assert script.value == "eval.cli:main"


# ------------------------------------------------------------------------------------------------ configs


@pytest.mark.parametrize("path", sorted((REPO / "configs" / "eval").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_eval_configs_parse_and_validate(path):
    """Every YAML in configs/eval has only RunConfig keys, validates, and says how to run it in its first line."""
    config = resolve_config(RunConfig, path, {"out": "runs/x"})
    if not config.judge and not config.base_url_env:
        config.judge = "CHECKPOINT"  # local-cpu.yaml: the checkpoint comes from --judge
    config.validate()
    assert path.read_text(encoding="utf-8").startswith("# ")
    assert "judge-eval run --config configs/eval/" + path.name in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("field", "value", "says"), [
    ("limit", -2, "must be >= 0"),  # records[:-2] would leave the last two items out without a word
    ("max_retries", -1, "must be >= 0"), ("backoff_s", -1.0, "must be >= 0"),
    ("timeout_s", 0.0, "must be positive"), ("connect_timeout_s", -1.0, "must be positive"),
    ("server_timeout_s", 0.0, "must be positive"),
    # NaN would turn criteria auto's fallback off without a word (no probability is below it)
    ("criteria_threshold", float("nan"), "a task-type probability, from 0 to 1"),
    ("criteria_threshold", 7.0, "a task-type probability, from 0 to 1"),
])  # fmt: skip
def test_run_settings_out_of_range_are_refused_naming_the_field(field, value, says):
    with pytest.raises(ConfigError, match=f"^{field}: {says}"):
        RunConfig(judge="http://127.0.0.1:9/v1", out="runs/x", criteria="auto", **{field: value}).validate()


def test_cli_flags_override_the_yaml(tmp_path):
    """Defaults < YAML < flags: the YAML sets concurrency 16, prompt en and lenient reading (Appendix M.1's English
    format line shows no [END]), the flag brings concurrency to 3."""
    args = build_parser().parse_args(["run", "--config", str(REPO / "configs/eval/gpt-4o.yaml"), "--concurrency", "3",
                                      "--out", str(tmp_path), "--server-args", '["--enforce-eager"]'])
    config = resolve_run_config(args)
    assert (config.concurrency, config.prompt, config.model, config.max_retries) == (3, "en", "gpt-4o-2024-11-20", 8)
    assert config.server_args == ["--enforce-eager"] and config.lenient is True


def test_unknown_yaml_key_is_an_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("judge: http://x/v1\nconcurency: 4\n", encoding="utf-8")
    assert main(["run", "--config", str(bad), "--out", str(tmp_path)]) == 2
    # the key named, not only exit 2 (which any usage error gives)
    assert capsys.readouterr().err == (f"judge-eval run: error: {bad}: unknown keys ['concurency'] for RunConfig; "
                                       "'concurency': did you mean 'concurrency'?\n")


def test_prefix_order_groups_criteria_of_one_answer():
    """Shuffled criteria come back grouped by (instruction, reference, answer), groups in first-seen order."""
    records = judge.load_records(judge.sample_data_path())[:12]
    shuffled = [records[i] for i in (4, 0, 8, 5, 1, 9, 6, 2, 10, 7, 3, 11)]
    order = judge.prefix_order([judge.prefix_key(r) for r in shuffled])
    assert [shuffled[i].id for i in order] == [records[i].id for i in (4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11)]


# ----------------------------------------------------------------------------------- run against the script


def test_run_sends_exact_payloads_and_counts_a_parse_failure_without_scoring_it(small_data, tmp_path):
    """One chat request per item with exactly the POLLUX prompt; an unparseable verdict is recorded with its
    error, and `score` reports it in n_failed, not as a score."""
    data, records = small_data
    garbage = judge.render_prompt(records[2])
    with ScriptedServer({garbage: ["Ответ хороший, ставлю высокий балл."]}) as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run")) == 0
    assert sorted(server.received, key=lambda rb: rb[1]["messages"][0]["content"]) == sorted(
        [("/v1/chat/completions", _chat_payload(r)) for r in records], key=lambda rb: rb[1]["messages"][0]["content"]
    )
    rows = {row["id"]: row for row in read_predictions(tmp_path / "run")}
    assert set(rows) == {r.id for r in records}
    bad = rows[records[2].id]
    assert (bad["parse_ok"], bad["score"], bad["error"], bad["score_source"]) == (False, None, "no_result", None)
    assert bad["raw_output"] == "Ответ хороший, ставлю высокий балл."
    good = rows[records[0].id]
    assert (good["parse_ok"], good["score"], good["judge"], good["score_source"]) == (True, 1.0, "scripted", "verdict")
    assert set(good) == {"id", "judge", "raw_output", "feedback", "score", "parse_ok", "error", "reason",
                         "finish_reason", "score_source", "in_scale", "regression_score", "expected_score",
                         "confidence", "score_probs", "latency_s", "content_key"}
    assert good["content_key"] == record_content_key(records[0])  # what a resume compares with the item's text
    assert good["in_scale"] is True and good["regression_score"] is None
    run_info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert run_info["backend"] == "chat" and run_info["prompt_version"] == judge.PROMPT_VERSION

    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "50", "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    overall = metrics["splits"]["all"]["overall"]
    assert (overall["n"], overall["n_failed"], overall["n_parse_failed"]) == (12, 1, 1)
    assert metrics["splits"]["all"]["failures"] == {"no_result": 1}
    # Every parsed verdict said 1; the scored items are those with a unique expert mode, the failure not among them.
    assert overall["n_scored"] <= 11
    paper_part, official_part = (tmp_path / "run" / "report.md").read_text(encoding="utf-8").split(
        "## POLLUX repository evaluator (not the paper's metrics)")
    assert paper_part.count("| Zero-Shot test |") == 1 and official_part.count("| Zero-Shot test |") == 1


def test_run_resumes_a_killed_run_to_exactly_one_row_per_item(small_data, tmp_path):
    """A run killed mid-way (SIGKILL) and a line cut by the kill: the rerun asks only for the items without a row
    and ends with one row per item."""
    data, records = small_data
    out = tmp_path / "run"
    # The server answers 4 requests and holds the rest, so the kill lands after exactly 4 rows, whatever the load.
    with ScriptedServer(hold_after=4) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-m", "eval.cli", *_run_args(server.base_url, data, out,
                                                                              "--concurrency", "2")],
                                env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Killed once both workers (--concurrency 2) hold a request the server has read: none of the dead run's
        # requests can then reach the server after the rerun's have started (one still in a socket once counted as
        # the rerun's own). The rows are written by another process, which signals nothing: a bounded look, failing
        # by name within the fast tier's timeout.
        deadline = time.monotonic() + 45
        while not ((out / "predictions.jsonl").exists() and len(_ids(out / "predictions.jsonl")) >= 4
                   and server.held == 2):
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"the run did not write 4 rows with 2 requests held (held {server.held}, exit "
                            f"{proc.poll()})")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        server.release.set()
        before = _ids(out / "predictions.jsonl")
        assert len(before) == 4 < len(records), "the kill should land mid-run"
        # The kill interrupted a write: half a JSON line, no newline.
        with (out / "predictions.jsonl").open("a", encoding="utf-8") as handle:
            handle.write('{"id": "' + records[-1].id + '", "judge": "scr')
        server.requests.clear()
        server.hold_after = None
        assert main(_run_args(server.base_url, data, out)) == 0
    after = _ids(out / "predictions.jsonl")
    assert sorted(after) == sorted(r.id for r in records) and len(after) == len(set(after))
    todo = [r for r in records if r.id not in set(before)]
    assert sorted(server.prompts()) == sorted(judge.render_prompt(r) for r in todo)
    assert all(body == _chat_payload(r) for (_, body), r in
               zip(sorted(server.received, key=lambda rb: rb[1]["messages"][0]["content"]),
                   sorted(todo, key=judge.render_prompt)))


def test_transient_failures_are_retried_and_refusals_retried_on_the_next_run(small_data, tmp_path):
    """500, 500, then an answer: three requests, one good row. A 400 is not retried within the run: the item gets
    a request_failed row (exit code 3), which the next run replaces."""
    data, records = small_data
    flaky, refused = judge.render_prompt(records[0]), judge.render_prompt(records[1])
    with ScriptedServer({flaky: [500, 500, GOOD], refused: [400, GOOD]}) as server:
        assert main(_run_args(server.base_url, data, tmp_path)) == 3
        assert server.prompts().count(flaky) == 3 and server.prompts().count(refused) == 1
        rows = {row["id"]: row for row in read_predictions(tmp_path)}
        assert rows[records[0].id]["score"] == 1.0
        failed = rows[records[1].id]
        assert (failed["error"], failed["parse_ok"], failed["score"]) == ("request_failed", False, None)
        assert "HTTP 400" in failed["reason"]
        server.requests.clear()
        assert main(_run_args(server.base_url, data, tmp_path)) == 0
        assert server.prompts() == [refused]
    rows = read_predictions(tmp_path)
    assert len(rows) == len(records) and {r["id"]: r for r in rows}[records[1].id]["score"] == 1.0


def test_a_run_of_fewer_requests_than_the_stop_rule_writes_its_refusals(small_data, tmp_path):
    """The first-refusals stop needs 3 alike refusals to tell a refusing endpoint from refused items: a run with two
    requests left (a resumed shard's last items) whose both are refused alike writes them as failed rows (exit 3),
    where it once stopped with exit 4 and no row, on every rerun."""
    data, records = small_data
    left = judge.write_jsonl(records[:2], tmp_path / "left.jsonl")
    with ScriptedServer({judge.render_prompt(r): [400] for r in records[:2]}) as server:
        assert main(_run_args(server.base_url, left, tmp_path / "run")) == 3
        assert len(server.prompts()) == 2
    rows = read_predictions(tmp_path / "run")
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in records[:2])
    assert {(r["error"], r["parse_ok"]) for r in rows} == {("request_failed", False)}
    assert all("HTTP 400" in r["reason"] and "scripted 400" in r["reason"] for r in rows), [r["reason"] for r in rows]


def test_a_run_stopped_by_its_first_refusals_makes_progress_on_the_next(small_data, tmp_path, capsys):
    """Items refused alike one by one (a hosted API's content filter on provocative items) stopped every rerun at
    the same first three, with no row written: no run ever finished. The stop now writes them as failed rows, and
    the next run asks the items never asked first, then those again (each refused once more, as a failed row)."""
    data, records = small_data
    said = "The response was filtered due to the prompt triggering the content management policy"
    refused: list[str] = []

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = body["messages"][0]["content"]
        if len(refused) < 3 and prompt not in refused:
            refused.append(prompt)  # the first three items asked are the filtered ones
        if prompt in refused:
            return 400, {"error": {"message": said, "type": "invalid_request_error"}}
        return 200, chat_completion(GOOD, "judge")

    with ScriptedEndpoint(respond, model="judge") as server:
        assert main(_run_args(server.base_url, data, tmp_path, "--concurrency", "1")) == 4
        assert ("refused the first 3 requests alike: HTTP 400: " + said) in capsys.readouterr().err
        first = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
        assert first == refused
        rows = read_predictions(tmp_path)
        assert len(rows) == 3 and {r["error"] for r in rows} == {"request_failed"}
        server.requests.clear()
        assert main(_run_args(server.base_url, data, tmp_path, "--concurrency", "1")) == 3
        second = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")]
    assert len(second) == len(records) and second[-3:] == refused and not set(second[:-3]) & set(refused)
    rows = {r["id"]: r for r in read_predictions(tmp_path)}
    assert len(rows) == len(records)
    assert sorted(r["error"] or "ok" for r in rows.values()) == ["ok"] * 9 + ["request_failed"] * 3


def test_resuming_into_a_folder_of_another_judge_is_refused(small_data, tmp_path, capsys):
    """Rows of judge A are never mixed with judge B's in one predictions file."""
    data, _ = small_data
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path, "--limit", "2", "--name", "a")) == 0
        capsys.readouterr()
        # the same settings but the judge's name, so that the name alone is what refuses the run
        assert main(_run_args(server.base_url, data, tmp_path, "--limit", "2", "--name", "b")) == 2
        assert capsys.readouterr().err == (
            f"judge-eval run: error: {tmp_path} holds progress made with other settings (name: 'a' -> 'b'). Use a "
            "fresh --out, or --overwrite to discard it.\n")
        assert len(read_predictions(tmp_path)) == 2


def test_rerunning_a_finished_run_without_a_name_is_a_no_op(small_data, tmp_path):
    """A finished run (no --name: the served model's name) run again asks the server nothing and exits 0 (a
    requeued Slurm array task whose shard was already complete; it failed with exit 2 before)."""
    data, records = small_data
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path)) == 0
        names = {row["judge"] for row in read_predictions(tmp_path)}
        server.requests.clear()
        assert main(_run_args(server.base_url, data, tmp_path)) == 0
        assert server.requests == []
    rows = read_predictions(tmp_path)
    assert len(rows) == len(records) and {row["judge"] for row in rows} == names and "" not in names


def test_english_prompt_for_api_judges_from_environment(small_data, tmp_path, monkeypatch):
    """An API judge config: base URL and key from the environment, the English prompt, the configured model."""
    data, records = small_data
    with ScriptedServer() as server:
        monkeypatch.setenv("TEST_JUDGE_URL", server.base_url)
        monkeypatch.setenv("TEST_JUDGE_KEY", "secret")
        assert main(["run", "--base-url-env", "TEST_JUDGE_URL", "--api-key-env", "TEST_JUDGE_KEY", "--model", "gpt-x",
                     "--prompt", "en", "--data", str(data), "--out", str(tmp_path), "--limit", "2", "--max-tokens",
                     "64", "--no-progress"]) == 0
    # The two requests are in flight at once, so they may arrive in either order; each payload must be exact.
    expected = [
        {"model": "gpt-x", "messages": [{"role": "user", "content": judge.render_prompt_en(r)}], "max_tokens": 64,
         "temperature": 0.0}
        for r in records[:2]
    ]
    by_text = lambda body: json.dumps(body, sort_keys=True, ensure_ascii=False)  # noqa: E731
    assert sorted((body for _, body in server.received), key=by_text) == sorted(expected, key=by_text)


def test_judge_serve_backend_batches_criteria_and_keeps_regression_scores(small_data, tmp_path):
    """A URL with /v1/judge gets one request per answer carrying all its criteria as {name, rubrics} (plus the
    run's extra_body fields); regression scores come back real-valued and `score` compares them with the experts'
    mean; a score distribution in the result is kept in the prediction."""
    data, records = small_data

    def result(criterion):  # the wire type judge-serve writes (tests/unit/test_wire.py ties it to serve's own output)
        return judge.JudgeResult(criterion=criterion["name"], criterion_id=None, scale=[0, 1, 2],
                                 feedback="Обоснование.", score=1.37, parse_ok=True, score_source="regression_head",
                                 output="[FEEDBACK] ...", regression_score=2.6, in_scale=None, expected_score=1.2,
                                 confidence=0.8, score_probs={"0": 0.1, "1": 0.6, "2": 0.3}).to_json()

    with ScriptedServer(judge_results=result) as server:
        assert main(_run_args(server.base_url, data, tmp_path, "--batch-size", "3",
                              "--extra-body", '{"constrained": true}')) == 0
    groups: dict[tuple, list] = {}
    for record in records:
        groups.setdefault((record.instruction, record.reference_answer, record.answer), []).append(record)
    expected = []
    for group in groups.values():
        for start in range(0, len(group), 3):
            batch = group[start:start + 3]
            expected.append({
                "model": "scripted",
                "items": [{"id": batch[0].id, "instruction": batch[0].instruction, "answer": batch[0].answer,
                           "reference_answer": batch[0].reference_answer,
                           "criteria": [{"name": r.criteria_name, "rubrics": r.rubrics} for r in batch]}],
                "max_tokens": 32, "temperature": 0.0, "lenient": False, "oversize": "fail", "constrained": True,
            })
    key = lambda body: json.dumps(body, ensure_ascii=False, sort_keys=True)  # noqa: E731
    assert sorted((body for _, body in server.received), key=key) == sorted(expected, key=key)
    rows = read_predictions(tmp_path)
    assert {(r["score"], r["score_source"], r["regression_score"]) for r in rows} == {(1.37, "regression_head", 2.6)}
    assert all((r["expected_score"], r["confidence"], r["score_probs"]) == (1.2, 0.8, {"0": 0.1, "1": 0.6, "2": 0.3})
               for r in rows)
    assert main(["score", "--predictions", str(tmp_path), "--n-boot", "20", "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["target"] == "mean" and metrics["splits"]["all"]["overall"]["n_scored"] == len(records)
    # POLLUX's evaluator reads a score from text; a head's value is none (no POLLUX code puts it through its
    # compute_metrics): no section, and the console says why (eval.scoring.pollux_official, "Regression").
    assert "pollux_official" not in metrics
    said = "this run's scores are (some or all) a regression head's value"
    assert said in (tmp_path / "report.md").read_text(encoding="utf-8")
    assert said in html.unescape((tmp_path / "report.html").read_text(encoding="utf-8"))


def test_a_result_no_reader_takes_is_a_failed_request_not_a_row_that_breaks_the_file(small_data, tmp_path):
    """A /v1/judge answer with a NaN score (Python's json writes and reads one) is that request's failed row, naming
    the field: written as it came, it made predictions.jsonl unreadable to the next run's resume and to `score`."""
    data, records = small_data
    nan_for = records[0].criteria_name

    def result(criterion):
        score = float("nan") if criterion["name"] == nan_for else 1.0
        return judge.JudgeResult(criterion=criterion["name"], criterion_id=None, scale=[0, 1, 2], score=score,
                                 parse_ok=True, score_source="verdict", output="[FEEDBACK] ...").to_json()

    with ScriptedServer(judge_results=result) as server:
        assert main(_run_args(server.base_url, data, tmp_path, "--batch-size", "1")) == 3
        rows = {row["id"]: row for row in read_predictions(tmp_path)}
        bad = [r.id for r in records if r.criteria_name == nan_for]
        assert {rows[i]["error"] for i in bad} == {"request_failed"}
        assert all("/v1/judge response.items[0].results[0].score: expected a finite number, got nan" in rows[i]["reason"]
                   for i in bad)
        assert {rows[r.id]["score"] for r in records if r.id not in bad} == {1.0}
        server.requests.clear()
        assert main(_run_args(server.base_url, data, tmp_path, "--batch-size", "1")) == 3  # resumes; retries those
        assert len(server.received) == len(bad)


def test_a_criterion_judge_serve_refuses_fails_alone_not_with_its_batchmates(small_data, tmp_path):
    """judge-serve refuses a whole /v1/judge request for one criterion whose rubric has no scale (serve/schema.py's
    400); the run asks that batch's records one by one, so only that record gets a failed row, its batchmates their
    verdicts. Before, the whole batch failed on every rerun."""
    data, records = small_data
    records = [dataclasses.replace(r, rubrics="Оценивается по ощущениям.") if i == 1 else r
               for i, r in enumerate(records)]
    path = judge.write_jsonl(records, tmp_path / "data.jsonl")

    def respond(url_path, body):
        if url_path != "/v1/judge":
            return 404, {"error": {"message": "not found"}}
        if not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        criteria = body["items"][0]["criteria"]
        for j, criterion in enumerate(criteria):
            if criterion["rubrics"] == records[1].rubrics:
                message = f"items[0].criteria[{j}].rubrics: no scale found in rubric text"
                return 400, {"error": {"message": message, "type": "invalid_request_error",
                                       "param": f"items[0].criteria[{j}].rubrics", "code": None}}
        results = [judge.JudgeResult(criterion=c["name"], criterion_id=None, scale=[0, 1, 2], score=1.0, parse_ok=True,
                                     score_source="verdict", output=GOOD) for c in criteria]
        usage = JudgeResponseUsage(len(results), len(results), 0, 0, 0)
        return 200, JudgeResponse("judge-1", "judge.result", 0, body["model"], "seq2seq", "tagged",
                                  judge.PROMPT_VERSION, [JudgeResponseItem(0, body["items"][0]["id"], results)],
                                  usage).to_json()

    with ScriptedEndpoint(respond) as server:
        assert main(_run_args(server.base_url, path, tmp_path / "run", "--batch-size", "16")) == 3
    rows = {row["id"]: row for row in read_predictions(tmp_path / "run")}
    assert rows[records[1].id]["error"] == "request_failed" and "no scale found" in rows[records[1].id]["reason"]
    assert {rows[r.id]["score"] for r in records if r.id != records[1].id} == {1.0}
    batchmates = [r for r in records if judge.prefix_key(r) == judge.prefix_key(records[1])]
    assert len(batchmates) > 1  # the refused criterion did share its request
    sent = [body["items"][0] for _, body in server.requests if body]
    mates = {r.id for r in batchmates}
    assert [len(item["criteria"]) for item in sent if item["id"] in mates].count(len(batchmates)) == 1
    assert sorted(item["id"] for item in sent if item["id"] in mates and len(item["criteria"]) == 1) == sorted(mates)


def test_score_reports_out_of_scale_table_10_and_pollux_official(small_data, tmp_path):
    """Through run and score: '[RESULT] 9' and '[RESULT] 10' on 0..k scales (k <= 4) are scored and flagged
    (parse_ok true, in_scale false), '1,5' is 1.5 for the paper's metrics; the report gives n_out_of_scale, the
    in-scale figures, Table 10 and POLLUX's own figures in their labelled section ('10' -> 1 and '1,5' -> 1 there)."""
    data, records = small_data
    script = {judge.render_prompt(records[0]): ["[FEEDBACK] x [RESULT] 9 [END]"],
              judge.render_prompt(records[1]): ["[FEEDBACK] x [RESULT] 10 [END]"],
              judge.render_prompt(records[2]): ["[FEEDBACK] x [RESULT] 1,5 [END]"],
              judge.render_prompt(records[3]): ["Ответ хороший."]}
    with ScriptedServer(script) as server:
        assert main(_run_args(server.base_url, data, tmp_path)) == 0
    rows = {row["id"]: row for row in read_predictions(tmp_path)}
    assert [(rows[r.id]["parse_ok"], rows[r.id]["score"], rows[r.id]["in_scale"]) for r in records[:4]] == [
        (True, 9.0, False), (True, 10.0, False), (True, 1.5, True), (False, None, None)]
    assert main(["score", "--predictions", str(tmp_path), "--n-boot", "20", "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    overall = metrics["splits"]["all"]["overall"]
    assert overall["n_failed"] == 1 and overall["n_out_of_scale"] == 2
    assert overall["n_scored_in_scale"] == overall["n_scored"] - 2
    assert metrics["splits"]["all"]["model_means"]["all"]["n_judged"] == 11
    # POLLUX's evaluator reads 9, 1, 1, nothing, then 1 for the other eight outputs (GOOD says 1).
    official = metrics["pollux_official"]["splits"]["all"]
    read = [9.0, 1.0, 1.0, None] + [1.0] * 8
    exact = sum(1 for s, r in zip(read, records) if s is not None and s == r.criteria_score)
    assert (official["n"], official["n_parsed"]) == (12, 11)
    assert official["format_acc"] == pytest.approx(11 / 12) and official["score_acc"] == pytest.approx(exact / 12)
    squared = [(s - r.criteria_score) ** 2 for s, r in zip(read, records) if s is not None]
    assert official["mse"] == pytest.approx(sum(squared) / 11)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## POLLUX repository evaluator (not the paper's metrics)" in report
    assert "(the paper's Table 10)" in report and "| out of scale |" in report
    import pyarrow.parquet as pq

    items = pq.read_table(tmp_path / "items.parquet").to_pydict()
    flags = dict(zip(items["id"], items["in_scale"]))
    assert [flags[r.id] for r in records[:4]] == [False, False, True, None]


def test_compare_pairs_spearman_on_the_reference_each_run_reported_it_against(small_data, tmp_path):
    """Runs scored with ``--spearman-target mean`` (MAE still against the mode) keep that reference in items.parquet,
    and compare pairs Spearman on it: two scorings of one run give each side that run's own Spearman. Against MAE's
    reference it would be 1: this judge says each item's first expert score, which is the mode here (MAE 0)."""
    data, records = small_data
    first = {judge.render_prompt(r): [f"[FEEDBACK] x [RESULT] {int(r.expert_scores[0])} [END]"] for r in records}
    with ScriptedServer(first) as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run", "--name", "first")) == 0
    for out in ("one", "two"):
        assert main(["score", "--predictions", str(tmp_path / "run"), "--out", str(tmp_path / out), "--n-boot", "20",
                     "--no-plots", "--spearman-target", "mean"]) == 0
    assert main(["compare", str(tmp_path / "one"), str(tmp_path / "two"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "20"]) == 0
    own = json.loads((tmp_path / "one" / "metrics.json").read_text(encoding="utf-8"))["splits"]["all"]["overall"]
    paired = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    spearman = paired["comparisons"][0]["splits"]["all"]["overall"]["spearman"]
    assert own["mae"] == 0.0 and own["spearman"] < 0.99
    assert spearman["n"] == own["n_spearman"]
    assert (spearman["a"], spearman["b"]) == (pytest.approx(own["spearman"]), pytest.approx(own["spearman"]))
    # A run whose MAE has another reference than the baseline's: the headline says so before its deltas.
    assert main(["score", "--predictions", str(tmp_path / "run"), "--out", str(tmp_path / "mean"), "--n-boot", "20",
                 "--no-plots", "--target", "mean", "--name", "first-mean"]) == 0
    assert main(["compare", str(tmp_path / "one"), str(tmp_path / "mean"), "--out", str(tmp_path / "cmp2"),
                 "--n-boot", "20"]) == 0
    said = (tmp_path / "cmp2" / "compare.md").read_text(encoding="utf-8")
    assert ("first-mean's MAE is against the experts' mean, first's against their mode (each judge's own "
            "reference)") in said
    assert "MAE is against the experts'" not in (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")


def test_compare_pairs_two_scored_runs(small_data, tmp_path):
    """A judge that always says 1 vs one that copies the experts' first score: compare reports both, the delta
    and a call, on the items both scored. Two items of a task type the taxonomy does not know stay out of "all",
    in compare as in each run's own metrics."""
    import dataclasses

    _, sample = small_data
    records = [dataclasses.replace(r, task_type="Задача вне таксономии") if k in (0, 7) else r
               for k, r in enumerate(sample)]
    data = tmp_path / "data.jsonl"
    judge.write_jsonl(records, data)
    copycat = {judge.render_prompt(r): [f"[FEEDBACK] x [RESULT] {int(r.expert_scores[0])} [END]"] for r in records}
    for name, script in (("ones", {}), ("copycat", copycat)):
        with ScriptedServer(script) as server:
            assert main(_run_args(server.base_url, data, tmp_path / name, "--name", name)) == 0
        assert main(["score", "--predictions", str(tmp_path / name), "--n-boot", "50", "--no-plots"]) == 0
    assert main(["compare", str(tmp_path / "ones"), str(tmp_path / "copycat"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "200"]) == 0
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert result["baseline"] == "ones" and result["runs"] == ["ones", "copycat"]
    overall = result["comparisons"][0]["splits"]["all"]["overall"]["mae"]
    assert overall["delta"] == pytest.approx(overall["b"] - overall["a"])
    assert overall["verdict"] in ("better", "worse", "n.s.")
    # Both judges parse every item, so the paired items are each run's scored items: each side is that run's own
    # headline MAE (the same "all": Zero-Shot + Standard, never the unknown task types), and so per split.
    own = {name: json.loads((tmp_path / name / "metrics.json").read_text(encoding="utf-8"))["splits"]
           for name in ("ones", "copycat")}
    for split, block in result["comparisons"][0]["splits"].items():
        mae = block["overall"]["mae"]
        assert (mae["a"], mae["b"]) == (pytest.approx(own["ones"][split]["overall"]["mae"]),
                                        pytest.approx(own["copycat"][split]["overall"]["mae"])), split
    said = (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert "copycat vs ones" in said
    # The copycat is exact, so no resample puts the two judges' MAE the other way round: the bootstrap p-value is
    # estimated as 0, which says only that p is below its resolution, 2 / 200 resamples.
    assert overall["p_value"] == 0.0
    # Ten paired items are too few to call (eval.scoring.bootstrap.MIN_VERDICT_UNITS): the p-value is shown, the call
    # is n.s.
    assert "p < 0.01, " in said and "| 0.000 | better |" not in said and "| < 0.01 | n.s. |" in said
    assert "p &lt; 0.01" in (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")
    # compare.json is the typed comparison written key for key; its readers see the same values as attributes
    from eval.scoring.compare import compare
    from eval.scoring.item_table import dumps

    from eval.scoring.comparison import Comparison

    typed = compare([tmp_path / "ones", tmp_path / "copycat"], n_boot=200)
    written = (tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8")
    assert dumps(typed) + "\n" == written
    assert dumps(Comparison.from_json(json.loads(written))) + "\n" == written  # and it reads back to the same bytes
    paired = typed.comparisons[0].splits["all"].overall["mae"]
    assert (paired.n, paired.delta, paired.verdict) == (overall["n"], overall["delta"], overall["verdict"])
    assert typed.metrics[1].judge == "copycat" and set(typed.comparisons[0].splits["all"].by("criterion"))


def test_score_without_a_prediction_for_every_item_reports_them_missing(small_data, tmp_path, capsys):
    """An unfinished run scores what it has and says how many items have no prediction."""
    data, records = small_data
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path, "--limit", "5")) == 0
    assert main(["score", "--predictions", str(tmp_path / "predictions.jsonl"), "--data", str(data), "--n-boot", "0",
                 "--no-plots"]) == 0
    overall = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))["splits"]["all"]["overall"]
    assert (overall["n"], overall["n_missing"]) == (5, len(records) - 5)
    assert "have no prediction" in (tmp_path / "report.md").read_text(encoding="utf-8")
    # The same predictions against other data (no id in common): a usage error naming both, not a report of an
    # "unfinished" run where every item has no prediction.
    other = judge.write_jsonl([dataclasses.replace(r, id=f"other-{r.id}") for r in records], tmp_path / "other.jsonl")
    assert main(["score", "--predictions", str(tmp_path / "predictions.jsonl"), "--data", str(other), "--n-boot",
                 "0", "--no-plots", "--out", str(tmp_path / "other-score")]) == 2
    said = capsys.readouterr().err
    assert f"none of its 5 ids is in --data {other}; these predictions were made on other data" in said


def test_score_logs_tables_and_plots_to_wandb_offline(small_data, tmp_path, monkeypatch):
    """--wandb-project logs every table and PNG (offline here: no network)."""
    import wandb

    import dataclasses
    import html

    _, sample = small_data
    # A criterion name that is markup: W&B renders the logged report as a page, so it must arrive as text.
    data = tmp_path / "data.jsonl"
    judge.write_jsonl([dataclasses.replace(r, criteria_name="<img src=x onerror=alert(1)>") if k == 0 else r
                       for k, r in enumerate(sample)], data)
    wandb.teardown()  # W&B's process-wide setup keeps the WANDB_DIR of any run logged earlier in this process
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-root"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run")) == 0
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "20", "--wandb-project", "t"]) == 0
    (run_dir,) = (tmp_path / "wandb-root" / "wandb").glob("offline-run-*")
    media = run_dir / "files" / "media"
    assert {p.name.split("_")[0] for p in (media / "images" / "plots").glob("*.png")} == {"confusion", "mae"}
    assert sorted(p.name.split("_")[1] for p in (media / "table" / "all").glob("*.table.json")) == \
        ["criterion", "model", "task"]
    (page,) = (media / "html").glob("report_*.html")
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "&lt;img src=x" in report and "<img" not in report and "<img" not in page.read_text(encoding="utf-8")
    assert html.escape(report.strip()) in page.read_text(encoding="utf-8")


def test_score_to_wandb_without_a_key_is_refused_before_it_scores(small_data, tmp_path, monkeypatch, capsys):
    """wandb.init without a key, in a process with no terminal, stopped `score --wandb-project` with a traceback
    after the whole scoring. It is refused up front, in one sentence, as `judge-train` refuses report_to wandb; a
    key or WANDB_MODE=offline passes."""
    import wandb

    data, _ = small_data
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run")) == 0
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-root"))
    wandb.teardown()  # W&B's process-wide settings keep the mode and key of any run set up earlier in this process
    try:
        assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "0", "--wandb-project", "t"]) == 2
        said = capsys.readouterr().err
        assert "--wandb-project t: no W&B API key for https://" in said and "Traceback" not in said
        assert "WANDB_MODE=offline" in said and len(said.strip().splitlines()) == 1
        assert not (tmp_path / "run" / "metrics.json").exists()  # refused before any work
        monkeypatch.setenv("WANDB_MODE", "offline")
        monkeypatch.setenv("WANDB_SILENT", "true")
        wandb.teardown()  # the look-up set W&B's process-wide settings up from the environment without the mode
        assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "0", "--wandb-project", "t"]) == 0
    finally:
        wandb.teardown()


def test_score_to_wandb_without_the_package_or_with_a_mode_wandb_refuses_is_refused_before_it_scores(
        small_data, tmp_path, monkeypatch, capsys):
    """Without the wandb package, `score --wandb-project` scored every item, wrote metrics.json, then stopped at
    `import wandb` with a traceback; a WANDB_MODE W&B does not take (`Offline`) passed the key check and stopped
    wandb.init after the scoring too. Both are refused up front in one line, before any work."""
    import sys

    data, _ = small_data
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run")) == 0
    argv = ["score", "--predictions", str(tmp_path / "run"), "--n-boot", "0", "--no-plots", "--wandb-project", "t"]
    monkeypatch.setenv("WANDB_MODE", "Offline")
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert "--wandb-project t: WANDB_MODE='Offline' is no mode W&B takes" in said and "Traceback" not in said
    assert len(said.strip().splitlines()) == 1 and not (tmp_path / "run" / "metrics.json").exists()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setitem(sys.modules, "wandb", None)  # as where wandb is not installed
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert "--wandb-project t: the wandb package is not installed (pip install wandb)" in said
    assert "Traceback" not in said and len(said.strip().splitlines()) == 1
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_a_judge_answer_holding_a_lone_surrogate_is_read_as_vllm_writes_it_and_scored(small_data, tmp_path, capsys):
    """A server of another kind sent a JSON-escaped lone surrogate in a verdict's feedback: the run wrote it as its
    escape, and `score` then refused the whole file ("The surrogate pair in string is invalid. in row 0", no field).
    It is read as U+FFFD, as vLLM writes bytes that are no text: the verdict parses, the run scores. A row written so
    before (a hand edit, an older run) is refused by its file, line and field."""
    data, records = small_data
    odd = "[FEEDBACK] Ответ \ud800 соответствует. [RESULT] 1 [END]"
    with ScriptedServer({judge.render_prompt(records[1]): [odd]}) as server:
        assert main(_run_args(server.base_url, data, tmp_path)) == 0
    rows = {row["id"]: row for row in read_predictions(tmp_path)}
    assert rows[records[1].id]["raw_output"] == odd.replace("\ud800", "\ufffd")
    assert rows[records[1].id]["feedback"] == "Ответ \ufffd соответствует." and rows[records[1].id]["score"] == 1
    assert main(["score", "--predictions", str(tmp_path), "--n-boot", "0", "--no-plots"]) == 0
    lines = (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[4].replace('"feedback": "', '"feedback": "\\ud800', 1)
    (tmp_path / "predictions.jsonl").write_text("".join(lines), encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "--predictions", str(tmp_path), "--n-boot", "0", "--no-plots"]) == 2
    assert capsys.readouterr().err == (f"judge-eval score: error: {tmp_path / 'predictions.jsonl'}: line 5.feedback: "
                                       "not valid Unicode text: a lone surrogate (U+D800, a JSON \\u escape with no "
                                       "pair) at character 0\n")


def test_a_judge_serve_failure_quoting_a_lone_surrogate_is_written_as_text_a_rerun_reads(small_data, tmp_path):
    """A /v1/judge result of a server of another kind whose output and error reason hold a JSON-escaped lone
    surrogate: unread, the row was refused as the judge's answer on every rerun (no reader takes it), and a failed
    row quoting it made the whole file unreadable to a resume and to `score`. Read as U+FFFD, the verdict's failure is
    a row like any other: the rerun asks nothing again, and the run scores."""
    data, records = small_data

    def result(criterion):
        return judge.JudgeResult(criterion=criterion["name"], criterion_id=None, scale=[0, 1, 2], feedback="",
                                 score=None, parse_ok=False, score_source=None, output="Оценка \ud800",
                                 error="no_score", error_reason="no score after \udfff").to_json()

    with ScriptedServer(judge_results=result) as server:
        assert main(_run_args(server.base_url, data, tmp_path)) == 0
        asked = len(server.received)
        assert main(_run_args(server.base_url, data, tmp_path)) == 0  # resumed: every row read back, none asked
        assert len(server.received) == asked
    rows = read_predictions(tmp_path)
    assert len(rows) == len(records)
    assert {(row["raw_output"], row["reason"], row["error"]) for row in rows} == {
        ("Оценка \ufffd", "no score after \ufffd", "no_score")}
    assert main(["score", "--predictions", str(tmp_path), "--n-boot", "0", "--no-plots"]) == 0


def test_a_refusal_quoting_a_lone_surrogate_is_a_failed_row_a_rerun_reads(small_data, tmp_path):
    """A server refusing one item with words that hold a JSON-escaped lone surrogate: that item's failed row quotes
    them read as U+FFFD (a failed row's texts are read where the row is made, as an answer's are), so the file stays
    one every reader takes, and a rerun reads it back and asks only that item again."""
    data, records = small_data
    refused = judge.render_prompt(records[1])

    def respond(path, body):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        if body["messages"][0]["content"] == refused:
            return 400, {"error": {"message": "filtered \ud800 here"}}
        return 200, chat_completion(GOOD, body["model"])

    with ScriptedEndpoint(respond) as server:
        assert main(_run_args(server.base_url, data, tmp_path)) == 3
        (failed,) = [row for row in read_predictions(tmp_path) if row["error"]]
        assert failed["id"] == records[1].id and "filtered \ufffd here" in failed["reason"], failed["reason"]
        server.requests.clear()
        assert main(_run_args(server.base_url, data, tmp_path)) == 3
        assert [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")] == [refused]


def test_score_says_why_a_test_has_no_figures(small_data, tmp_path):
    """A judge whose every output fails to parse: metrics.json and report.md say why each test is empty, in words
    and counts, instead of showing bare "—". (Its format stated: a guessed one stops at the first answers that hold
    no verdict, tests/unit/test_run_format_guess.py.)"""
    data, records = small_data
    with ScriptedServer({judge.render_prompt(r): ["Ответ хороший."] for r in records}) as server:
        assert main(_run_args(server.base_url, data, tmp_path, "--verdict-format", "tagged")) == 0
    assert main(["score", "--predictions", str(tmp_path), "--n-boot", "0", "--no-plots"]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    for split, n in (("zero_shot", 6), ("standard", 6), ("all", 12)):
        cell = metrics["splits"][split]["overall"]
        assert cell["mae"] is None and cell["why_empty"] == {"parse_failed": n}
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert ("- **Zero-Shot + Standard**: no scored item: 12 no verdict (an answer unparsed or cut; a prompt too long "
            "for the judge's context: context_length_exceeded; in predictions written elsewhere, a generation "
            "judge-serve's engine aborted or a judgment it refused: aborted, engine_refused, which judge-eval run never "
            "writes, as it writes request_failed for them; or a -1 failed by --judge-minus-one fail: report.md's "
            "'Failures by reason' says which).") in report
