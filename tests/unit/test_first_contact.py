"""A new user's first contact with a server, through the console scripts: every failure is one plain sentence with a
documented exit code, no traceback; the client fits its request to what the server allows; one rule for keys.

Stand-in servers (``tests.support.scripted_endpoint``) answer where a real judge-serve is not needed; the token caps
judge-serve advertises are checked against judge-serve's app (``serve.app.create_app``) in front of a stand-in engine,
no vLLM. ``judge-eval`` is its ``main`` called in this process as the console script calls it
(``tests.support.first_contact.run_console_main``: its stderr, stdout and exit code, the environment and folder of
each case), one command after another; one case, the first contact without a key, starts the real ``judge-eval``
console script (its exit code and stderr at the interpreter's exit), beside them. The Slurm tests run the real
``judge-eval merge`` under their scripts.

The tests of this subject that start heavy components are in tests/integration/serving/test_first_contact.py.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from dataclasses import astuple
from pathlib import Path

import pytest

from judge.plumbing.api_keys import CLIENT_KEY_ENV, KEY_RULE
from judge.plumbing.retry import EXIT_UNUSABLE
from tests.support.console_scripts import console_script
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from tests.support.first_contact import (NO_KEY, env_without_keys, console_error_line, process_outcome,
                                         run_console_main, sample_records_file, run_argv, start_judge_eval)
from tests.support.serve_in_process import await_bring_up


UNAUTHORIZED = (401, {"error": {"message": NO_KEY, "type": "authentication_error", "param": None,
                                "code": "invalid_api_key"}})
#: judge-serve's answer while its engines load (serve.app ``unavailable``), Retry-After 1 s.
LOADING = (503, {"error": {"message": "the engines are still starting", "type": "service_unavailable", "param": None,
                           "code": "engine_unavailable"}}, {"Retry-After": "1"})
def too_long(body: dict) -> tuple[int, dict]:
    """Older vLLM's / OpenAI's 400 for a prompt that fits the window but not with max_tokens (vLLM 0.32 lowers
    max_tokens instead), naming the request's own token counts as a real server does (here 1070 + the instruction's
    number: each request's words differ). The settings' fault: held by the first refusals' stop, three stop the run."""
    n_in = 1070 + int(body["messages"][0]["content"].split()[-1])
    return (400, {"error": {"message": f"This model's maximum context length is 2048 tokens. However, you requested "
                                       f"{n_in + 1024} tokens ({n_in} in the messages, 1024 in the completion).",
                            "type": "BadRequestError", "param": None, "code": 400}})
#: A refusal no retry or item can change (a prompt longer than the window would be that item's final row instead).
UNSUPPORTED = (400, {"error": {"message": "The model `vllm-judge` does not support the parameter `min_p`.",
                               "type": "BadRequestError", "param": "min_p", "code": 400}})


# ---------------------------------------------------------------------------------------------- first contact


def test_first_contact_failures_say_why_in_one_sentence_with_exit_code_4(tmp_path):
    """No key, a wrong key (401), a server still loading past --connect-timeout-s (503 with Retry-After), a wrong
    path (404) and a closed port each end `judge-eval run` with exit code 4 and one sentence naming the cause; the
    401s state the key rule; nothing is judged. `judge-eval mera` makes the same first contact. The no-key case
    starts the console script; the others call its main here meanwhile."""
    data = sample_records_file(tmp_path / "data.jsonl", 2)
    no_key = ScriptedEndpoint(lambda p, b: (500, {}), respond_get=lambda path: UNAUTHORIZED)
    wrong_key = ScriptedEndpoint(lambda p, b: (500, {}), respond_get=lambda path: UNAUTHORIZED)
    loading = ScriptedEndpoint(lambda p, b: (500, {}), respond_get=lambda path: LOADING)
    wrong_path = ScriptedEndpoint(lambda p, b: (500, {}), respond_get=lambda path: (404, {"detail": "Not Found"}))
    # A port held bound but never listening: a connection is refused, and no endpoint started below can take the
    # port over (a closed server's port, freed, once went to the next one and answered 401).
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    cases = {
        "no key": (no_key.base_url, env_without_keys(), ()),
        "wrong key": (wrong_key.base_url, env_without_keys(JUDGE_SERVE_API_KEY="not-the-key", OPENAI_API_KEY="openai"), ()),
        "loading": (loading.base_url, env_without_keys(), ("--connect-timeout-s", "3")),
        "wrong path": (wrong_path.url + "/api", env_without_keys(), ()),
        "closed port": (closed_url, env_without_keys(), ("--connect-timeout-s", "1")),
    }
    mera = ScriptedEndpoint(lambda p, b: (500, {}), respond_get=lambda path: UNAUTHORIZED)
    # The serve-then-run two-liner: a judge that loads for two model-list requests, then serves.
    gets = []

    def loads_then_serves(path: str) -> tuple:
        gets.append(path)
        if len(gets) <= 2:
            return LOADING
        return 200, {"object": "list", "data": [{"id": "late", "object": "model", "max_model_len": 4096}]}

    late = ScriptedEndpoint(lambda p, b: ((200, chat_completion("[FEEDBACK] Да. [RESULT] 1 [END]", b["model"]))
                                          if p == "/v1/chat/completions" else (404, {"detail": "Not Found"})),
                            respond_get=loads_then_serves)
    argvs = {name: run_argv(url, tmp_path / name.replace(" ", "-"), data, *extra)
             for name, (url, _, extra) in cases.items()}
    try:
        # "no key" through the console script, in a process of its own; the rest here meanwhile
        with start_judge_eval(argvs["no key"], cases["no key"][1]) as no_key_proc:
            results = {name: run_console_main("judge-eval", argvs[name], env)
                       for name, (_, env, _) in cases.items() if name != "no key"}
            mera_code, _, mera_err = astuple(run_console_main(
                "judge-eval", ["mera", "rutie", "--endpoint", mera.base_url, "--model", "m", "--data", "sample",
                               "--out", str(tmp_path / "mera")], env_without_keys(OPENAI_API_KEY="openai-key")))
            late_code, late_out, late_err = astuple(run_console_main(
                "judge-eval", run_argv(late.base_url, tmp_path / "late", data), env_without_keys()))
            results["no key"] = process_outcome(no_key_proc)
    finally:
        for endpoint in (no_key, wrong_key, loading, wrong_path, mera, late):
            endpoint.close()
        closed.close()
    # Waited for: two 503s (Retry-After 1 s) said in one warning, each attempt at debug level, then the run judged
    # both items.
    assert late_code == 0 and json.loads(late_out)["written"] == 2, late_err[-2000:]
    assert late_err.count(f"waiting for the judge at {late.base_url} (up to 120 s; --connect-timeout-s): HTTP 503: "
                          "the engines are still starting") == 1, late_err[-2000:]
    assert "retrying in" not in late_err
    assert len(gets) == 3 and len(late.bodies("/v1/chat/completions")) == 2
    # mera: the same first contact, the same rule ($OPENAI_API_KEY when $JUDGE_SERVE_API_KEY is unset).
    assert (mera_code, console_error_line(mera_err)) == (EXIT_UNUSABLE, (
        f"judge-eval mera rutie: error: the endpoint at {mera.base_url} refused the key from $OPENAI_API_KEY (HTTP "
        f"401: {NO_KEY}); {KEY_RULE}"))
    assert mera.headers[0]["authorization"] == "Bearer openai-key"
    lines = {name: console_error_line(outcome.err) for name, outcome in results.items()}
    assert {name: outcome.code for name, outcome in results.items()} == dict.fromkeys(cases, EXIT_UNUSABLE), lines
    assert lines["no key"] == (f"judge-eval run: error: the judge at {no_key.base_url} refused a request without a key "
                               f"(HTTP 401: {NO_KEY}); {KEY_RULE}")
    assert lines["wrong key"] == (f"judge-eval run: error: the judge at {wrong_key.base_url} refused the key from "
                                  f"$JUDGE_SERVE_API_KEY (HTTP 401: {NO_KEY}); {KEY_RULE}")
    # The key rule: $JUDGE_SERVE_API_KEY before $OPENAI_API_KEY, and no key at all when neither is set.
    assert wrong_key.headers[0]["authorization"] == "Bearer not-the-key"
    assert "authorization" not in no_key.headers[0]
    assert re.fullmatch(
        rf"judge-eval run: error: the judge at {re.escape(loading.base_url)} still answers HTTP 503 \(the engines are "
        r"still starting\) after \d+ attempts in \d+ s"
        # the last Retry-After reaching past the 3 s bound stops the waiting there (judge.plumbing.retry), said so
        r"( \(the server asked to wait 1 s \(Retry-After\), past the 3 s bound \(--connect-timeout-s\), \d+ s away\))?"
        r"; it may still be loading: wait and rerun, or allow longer with --connect-timeout-s", lines["loading"]
    ), lines["loading"]
    # Retried, Retry-After (1 s) apart, within the 3 s bound: the count says so, not the seconds the line reports
    # (a loaded machine stretched them to 14 once).
    assert len(loading.gets) >= 2
    assert lines["wrong path"] == (f"judge-eval run: error: the judge at {wrong_path.url}/api has no GET "
                                   f"{wrong_path.url}/api/models (HTTP 404: Not Found): the URL or its path is "
                                   "wrong; give the server's base URL, e.g. http://127.0.0.1:8000/v1")
    assert re.fullmatch(
        rf"judge-eval run: error: the judge at {re.escape(closed_url)} cannot be reached \(ConnectError: \[Errno 111\] "
        r"Connection refused\) after \d+ attempts in \d+ s: is the server running, on that host and port\? "
        r"\(--connect-timeout-s sets how long to keep trying\)", lines["closed port"]), lines["closed port"]
    for name in cases:  # nothing judged: no predictions, and no chat request sent anywhere
        assert not (tmp_path / name.replace(" ", "-") / "predictions.jsonl").exists(), name
    assert not (no_key.requests or wrong_key.requests or loading.requests or wrong_path.requests)


def test_first_requests_refused_alike_stop_run_and_bench_with_the_servers_words(tmp_path):
    """A judge that refuses every request with the same 400 stops `judge-eval run` after its first requests with the
    server's message (exit 4; the three refused items written as failed rows, which the next run asks last); a
    rank candidate whose window no instruction fits with max_tokens alike, though each 400 names its own request's
    token counts (its three refused instructions written as failed answers). Both fit an answer budget that
    cannot fit the server's window (max_tokens >= max_model_len 2048) to half of it, with a printed note, and send
    that."""
    data = sample_records_file(tmp_path / "data.jsonl", 20)
    instructions = tmp_path / "instructions.jsonl"
    instructions.write_text("".join(json.dumps({"prompt_id": k, "instruction": f"Задание {k}", "meta": "m",
                                                "criteria": [{"criteria_name": "c", "rubrics": "0: нет\n\n1: да"}]},
                                               ensure_ascii=False) + "\n" for k in range(20)), encoding="utf-8")
    judge = ScriptedEndpoint(lambda p, b: UNSUPPORTED if p == "/v1/chat/completions" else (404, {"detail": "Not Found"}),
                             model="vllm-judge", max_model_len=2048)
    candidate = ScriptedEndpoint(lambda p, b: too_long(b), model="cand", max_model_len=2048)
    try:
        run_code, _, run_err = astuple(run_console_main(
            "judge-eval", run_argv(judge.base_url, tmp_path / "run", data, "--max-tokens", "4096", "--concurrency", "2"),
            env_without_keys()))
        rank_code, _, rank_err = astuple(run_console_main(
            "judge-eval", ["rank", "--model", candidate.base_url, "--judge", judge.base_url, "--data", str(instructions),
                           "--out", str(tmp_path / "bench"), "--no-progress", "--max-retries", "0", "--concurrency", "2"],
            env_without_keys()))
    finally:
        judge.close()
        candidate.close()
    said = UNSUPPORTED[1]["error"]["message"]
    assert (run_code, rank_code) == (EXIT_UNUSABLE, EXIT_UNUSABLE), (run_err[-2000:], rank_err[-2000:])
    n_run, n_ranked = len(judge.bodies("/v1/chat/completions")), len(candidate.bodies("/v1/chat/completions"))
    assert 3 <= n_run <= 4 and 3 <= n_ranked <= 4  # 3 alike refusals stop it; one more may be in flight (concurrency 2)
    assert console_error_line(run_err) == (f"judge-eval run: error: the judge (vllm-judge) refused the first 3 requests alike: "
                                    f"HTTP 400: {said} (stopped after sending {n_run} of 20 requests; the refused "
                                    "ones were written as failed rows; a rerun asks the items not asked yet first, "
                                    "then these again)")
    # alike, their token counts aside: the stop quotes the refusal that completed the three, one request's own words
    assert console_error_line(rank_err) in {
        (f"judge-eval rank: error: the candidate (cand) refused the first 3 requests alike: HTTP 400: "
         f"{too_long(body)[1]['error']['message']} (stopped after sending {n_ranked} of 20 requests; the refused ones "
         "were written as failed rows; a rerun asks the items not asked yet first, then these again)")
        for body in candidate.bodies("/v1/chat/completions")}
    note = ("max_tokens 4096 does not fit this server's max_model_len 2048 (the prompt and the answer share it): "
            "asking for 1024 (set --max-tokens to choose)")
    assert f"note: the judge's {note}" in run_err and f"note: the candidate's {note}" in rank_err
    assert {"model": "cand", "messages": [{"role": "user", "content": "Задание 0"}], "max_tokens": 1024,
            "temperature": 0.7} in candidate.bodies("/v1/chat/completions")  # the first one sent (two in flight)
    assert {b["max_tokens"] for b in judge.bodies("/v1/chat/completions")} == {1024}
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["error"] for row in rows] == ["request_failed"] * n_run  # the held refusals and one in flight
    answers = [json.loads(line) for line in (tmp_path / "bench" / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["error"] for row in answers] == ["request_failed"] * n_ranked  # every refusal sent, as the judge's


def test_keys_and_exit_codes_are_stated_in_help_and_one_rule_serves_bench_candidate_and_judge(tmp_path):
    """`run --help` and `bench --help` state the key rule and exit code 4; mera's tasks name the rule on
    --api-key-env. A bench whose candidate and judge are both behind $JUDGE_SERVE_API_KEY sends that key to both
    (with $OPENAI_API_KEY also set), and `--api-key-env` overrides it for the candidate."""
    instructions = tmp_path / "instructions.jsonl"
    instructions.write_text(json.dumps({"prompt_id": 1, "instruction": "Задание", "meta": "m", "criteria": [
        {"criteria_name": "c", "rubrics": "0: нет\n\n1: да\n\n2: отлично"}]}, ensure_ascii=False) + "\n",
        encoding="utf-8")
    candidate = ScriptedEndpoint(lambda p, b: (200, chat_completion("Ответ.", b["model"])), model="cand")
    judge = ScriptedEndpoint(lambda p, b: ((200, chat_completion("[FEEDBACK] Хорошо. [RESULT] 2 [END]", b["model"]))
                                           if p == "/v1/chat/completions" else (404, {"detail": "Not Found"})),
                             model="judge")
    other = ScriptedEndpoint(lambda p, b: (200, chat_completion("Ответ.", b["model"])), model="cand")
    env = env_without_keys(JUDGE_SERVE_API_KEY="serve-key", OPENAI_API_KEY="openai-key", CAND_KEY="cand-key")
    bench = ["--data", str(instructions), "--no-progress", "--n-boot", "0"]
    try:
        results = [astuple(run_console_main("judge-eval", argv, env)) for argv in (
            ["run", "--help"], ["rank", "--help"], ["mera", "rutie", "--help"],
            ["rank", "--model", candidate.base_url, "--judge", judge.base_url, "--out", str(tmp_path / "a"), *bench],
            ["rank", "--model", other.base_url, "--api-key-env", "CAND_KEY", "--judge", judge.base_url, "--out",
             str(tmp_path / "b"), *bench])]
    finally:
        for endpoint in (candidate, judge, other):
            endpoint.close()
    (run_help, rank_help, mera_help) = (" ".join(out.split()) for _, out, _ in results[:3])
    for text in (run_help, rank_help):
        assert ("API keys: the first set of the variables --api-key-env names: by default $JUDGE_SERVE_API_KEY (the "
                "key judge-serve is started with), else $OPENAI_API_KEY, else no key; one variable named alone must be "
                "set; --api-key-env '' sends no key.") in text
        assert ("4 the server cannot be used (unreachable, no or wrong key, wrong URL or path, still unavailable after "
                "--connect-timeout-s, or its first requests were all refused alike: nothing more was sent; or its "
                "requests kept failing after their retries: those are failed rows, the rest unsent, a rerun "
                "resumes)") in text
    assert "the first one set: by default $JUDGE_SERVE_API_KEY" in mera_help  # argparse may break "judge-serve's"
    assert "else $OPENAI_API_KEY, else no key; one variable named alone must be set; '' sends no key" in mera_help
    assert [code for code, _, _ in results] == [0, 0, 0, 0, 0], [err[-1500:] for _, _, err in results]
    assert {h.get("authorization") for h in candidate.headers} == {"Bearer serve-key"}
    assert {h.get("authorization") for h in other.headers} == {"Bearer cand-key"}
    assert {h.get("authorization") for h in judge.headers} == {"Bearer serve-key"}
    assert len(judge.bodies("/v1/chat/completions")) == 2  # one verdict per bench


def test_a_main_called_in_process_leaves_the_process_as_found(tmp_path):
    """``run_console_main`` (this file's and test_first_use.py's judge-eval): the environment, folder and sys.argv it
    gave the main, and the console logging the main set up (its stderr handler, the root level, the HTTP loggers'
    levels at debug), are gone once it returns."""
    import logging
    import sys

    root = logging.getLogger()
    before = (dict(os.environ), os.getcwd(), list(sys.argv), root.handlers[:], root.level,
              logging.getLogger("httpx").level)
    outcome = run_console_main("judge-eval", ["score", "--predictions", "nowhere", "--log-level", "debug"],
                               env_without_keys(ONLY_IN_THE_CALL="1"), cwd=tmp_path)
    assert (outcome.code, outcome.last_error_line) == (
        2, "judge-eval score: error: --predictions nowhere: not found; give a run folder written by `judge-eval run` "
           "(or its predictions.jsonl)")
    assert (dict(os.environ), os.getcwd(), sys.argv, root.handlers, root.level,
            logging.getLogger("httpx").level) == before


def test_run_json_paths_are_absolute_and_score_works_from_another_directory(tmp_path):
    """`run` started with relative --data and --out records absolute paths in run.json, so `score` of that folder
    from another directory finds the data."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    sample_records_file(work / "data.jsonl", 3)
    judge = ScriptedEndpoint(lambda p, b: ((200, chat_completion("[FEEDBACK] Да. [RESULT] 1 [END]", b["model"]))
                                           if p == "/v1/chat/completions" else (404, {"detail": "Not Found"})),
                             model="judge")
    try:
        code, _, err = astuple(run_console_main("judge-eval", run_argv(judge.base_url, Path("runs/a"), Path("data.jsonl")),
                                                env_without_keys(), cwd=work))
    finally:
        judge.close()
    assert code == 0, err[-2000:]
    config = json.loads((work / "runs" / "a" / "run.json").read_text(encoding="utf-8"))["config"]
    assert (config["data"], config["out"]) == (str(work / "data.jsonl"), str(work / "runs" / "a"))
    code, out, err = astuple(run_console_main("judge-eval", ["score", "--predictions", str(work / "runs" / "a"), "--n-boot",
                                                           "0", "--vc-repeats", "1"], env_without_keys(), cwd=elsewhere))
    assert code == 0, err[-2000:]
    assert "n 3, n_failed 0" in out


@pytest.mark.parametrize(("typed", "env_name", "env", "expected"), [
    ("", CLIENT_KEY_ENV, {}, ("", "")),
    ("", CLIENT_KEY_ENV, {"OPENAI_API_KEY": "o"}, ("o", "$OPENAI_API_KEY")),
    ("", CLIENT_KEY_ENV, {"OPENAI_API_KEY": "o", "JUDGE_SERVE_API_KEY": "s"}, ("s", "$JUDGE_SERVE_API_KEY")),
    ("", "MINE", {"OPENAI_API_KEY": "o", "JUDGE_SERVE_API_KEY": "s", "MINE": "m"}, ("m", "$MINE")),
    ("", "", {"OPENAI_API_KEY": "o", "JUDGE_SERVE_API_KEY": "s"}, ("", "")),  # '' sends no key
    ("t", CLIENT_KEY_ENV, {"JUDGE_SERVE_API_KEY": "s"}, ("t", "--api-key")),
])  # fmt: skip
def test_client_key_rule(typed, env_name, env, expected, monkeypatch):
    """The one rule: the first set of --api-key-env's variables (default $JUDGE_SERVE_API_KEY, else
    $OPENAI_API_KEY), else none; '' sends none; a typed key wins (with a warning)."""
    from judge.plumbing.api_keys import client_api_key

    for name in ("OPENAI_API_KEY", "JUDGE_SERVE_API_KEY", "MINE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    key = client_api_key(typed, env_name, command="judge-eval run")
    assert (key.key, key.source) == expected


def test_a_named_key_variable_that_is_unset_is_a_configuration_error(monkeypatch):
    """--api-key-env naming an unset variable is refused, naming it (never a silent keyless request)."""
    from judge.plumbing.api_keys import client_api_key
    from judge.plumbing.config_files import ConfigError

    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ConfigError, match="^api_key_env: the environment variable NOT_SET_ANYWHERE is not set$"):
        client_api_key("", "NOT_SET_ANYWHERE", command="judge-eval run")


def _slurm_stand_ins(bin_dir: Path, tmp_path: Path, **env: str) -> dict[str, str]:
    """srun (recording the command it was given in ``tmp_path/srun.args``) and judge-eval stand-ins first on PATH,
    and the job's environment: this process's without Slurm's and the scripts' variables, then ``env``."""
    (bin_dir / "srun").write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/srun.args\n', encoding="utf-8")
    # `judge-eval merge` (eval_merge.sbatch's merge of the shards and their run.json) is the real one; the rest stand-ins
    real = console_script("judge-eval")
    (bin_dir / "judge-eval").write_text(f'#!/bin/bash\nif [[ $1 == merge ]]; then exec {real} "$@"; fi\nexit 0\n',
                                        encoding="utf-8")
    for name in ("srun", "judge-eval"):
        (bin_dir / name).chmod(0o755)
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JUDGE_"))},
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_NODELIST": "n1", **env}


def test_slurm_merge_job_reads_relative_paths_against_the_submit_folder(tmp_path):
    """slurm/eval_merge.sbatch, started in another folder (``--chdir``) with relative JUDGE_EVAL_DATA and
    JUDGE_EVAL_OUT, merges the shards of the submit folder and scores them with absolute paths."""
    submit, elsewhere, bin_dir = tmp_path / "submit", tmp_path / "elsewhere", tmp_path / "bin"
    for folder in (submit / "eval" / "shards" / "0", submit / "eval" / "shards" / "1", elsewhere, bin_dir):
        folder.mkdir(parents=True)
    (submit / "data.jsonl").write_text("{}\n", encoding="utf-8")
    for k in (0, 1):
        (submit / "eval" / "shards" / str(k) / "predictions.jsonl").write_text(f'{{"id": "{k}"}}\n', encoding="utf-8")
        (submit / "eval" / "shards" / str(k) / "run.json").write_text('{"config": {"judge": "http://n1/v1"}}\n')
    env = _slurm_stand_ins(bin_dir, tmp_path, SLURM_JOB_ID="7", SLURM_SUBMIT_DIR=str(submit),
                           JUDGE_EVAL_DATA="data.jsonl", JUDGE_EVAL_OUT="eval")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(["bash", str(repo / "slurm" / "eval_merge.sbatch"), "--n-boot", "0"], cwd=elsewhere, env=env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert _merged_ids(submit / "eval" / "predictions.jsonl") == ["0", "1"]
    assert (tmp_path / "srun.args").read_text(encoding="utf-8").splitlines() == [
        "--kill-on-bad-exit=1", "--ntasks=1", "judge-eval", "score", "--predictions",
        f"{submit}/eval/predictions.jsonl", "--data", f"{submit}/data.jsonl", "--out", f"{submit}/eval", "--n-boot", "0"]


def test_slurm_merge_job_merges_exactly_the_arrays_shards(tmp_path):
    """With the array's task count in shards/count (eval.sbatch writes it), the merge takes shards/0..K-1 and refuses
    a shard folder past them, one an earlier array of more tasks left in the same folder (it would merge twice)."""
    out, bin_dir = tmp_path / "eval", tmp_path / "bin"
    for k in range(3):
        (out / "shards" / str(k)).mkdir(parents=True)
        (out / "shards" / str(k) / "predictions.jsonl").write_text(f'{{"id": "{k % 2}"}}\n', encoding="utf-8")
        (out / "shards" / str(k) / "run.json").write_text('{"config": {"judge": "http://n1/v1"}}\n')
    (out / "shards" / "count").write_text("2\n", encoding="utf-8")
    (tmp_path / "data.jsonl").write_text("{}\n", encoding="utf-8")
    bin_dir.mkdir()
    env = _slurm_stand_ins(bin_dir, tmp_path, SLURM_JOB_ID="7", SLURM_SUBMIT_DIR=str(tmp_path),
                           JUDGE_EVAL_DATA="data.jsonl", JUDGE_EVAL_OUT="eval")
    script = str(Path(__file__).resolve().parents[2] / "slurm" / "eval_merge.sbatch")

    def merge() -> subprocess.CompletedProcess:
        return subprocess.run(["bash", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)

    refused = merge()
    assert refused.returncode == 2 and not (out / "predictions.jsonl").exists()
    assert f"{out}/shards/2/predictions.jsonl is not one of this array's 2 shards" in refused.stderr
    (out / "shards" / "2" / "predictions.jsonl").unlink()
    merged = merge()
    assert merged.returncode == 0, merged.stderr
    assert _merged_ids(out / "predictions.jsonl") == ["0", "1"]
    (out / "shards" / "1" / "predictions.jsonl").unlink()  # a task that did not finish
    missing = merge()
    assert missing.returncode == 2 and f"no {out}/shards/1/predictions.jsonl (shard 1 of 2)" in missing.stderr


def test_slurm_eval_array_task_writes_its_shard_under_the_submit_folder_and_the_task_count(tmp_path):
    """slurm/eval.sbatch started in another folder (--chdir) with relative JUDGE_EVAL_DATA and JUDGE_EVAL_OUT reads
    and writes them in the submit folder, where eval_merge.sbatch looks, and records the array's task count."""
    submit, elsewhere, bin_dir = tmp_path / "submit", tmp_path / "elsewhere", tmp_path / "bin"
    for folder in (submit, elsewhere, bin_dir):
        folder.mkdir()
    (submit / "data.jsonl").write_text("".join(f'{{"id": "{k}"}}\n' for k in range(4)), encoding="utf-8")
    env = _slurm_stand_ins(bin_dir, tmp_path, SLURM_JOB_ID="8", SLURM_ARRAY_JOB_ID="7", SLURM_ARRAY_TASK_ID="1",
                           SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_MAX="1", SLURM_ARRAY_TASK_COUNT="2",
                           SLURM_SUBMIT_DIR=str(submit), JUDGE_EVAL_JUDGE="http://judge:8000/v1",
                           JUDGE_EVAL_DATA="data.jsonl", JUDGE_EVAL_OUT="eval", JUDGE_CACHE_DIR=str(tmp_path / "cache"))
    script = str(Path(__file__).resolve().parents[2] / "slurm" / "eval.sbatch")
    proc = subprocess.run(["bash", script], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    shard = submit / "eval" / "shards" / "1"
    assert (shard / "data.jsonl").read_text(encoding="utf-8") == '{"id": "2"}\n{"id": "3"}\n'
    assert (submit / "eval" / "shards" / "count").read_text(encoding="utf-8") == "2\n"
    assert not list((submit / "eval" / "shards").glob(".count*")) and not list(elsewhere.iterdir())
    args = (tmp_path / "srun.args").read_text(encoding="utf-8").splitlines()
    assert args[args.index("--out") + 1] == str(shard) and args[args.index("--data") + 1] == str(shard / "data.jsonl")


def _array_task(index: int, **env: str) -> dict[str, str]:
    """The variables Slurm sets for ``sbatch --array=<index>``: an array of that one task."""
    return dict(SLURM_JOB_ID="9", SLURM_ARRAY_JOB_ID="8", SLURM_ARRAY_TASK_ID=str(index),
                SLURM_ARRAY_TASK_MIN=str(index), SLURM_ARRAY_TASK_MAX=str(index), SLURM_ARRAY_TASK_COUNT="1", **env)


def test_slurm_rank_rerun_of_one_candidate_ranks_that_candidate(tmp_path):
    """`sbatch --array=1 slurm/rank.sbatch`, the way to rerun candidate 1, ranks line 2 into JUDGE_RANK_OUT/1: counted
    from the array's first index it was candidate 0, whose folder it resumed, and candidate 1 never ran again."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "candidates.txt").write_text("/models/a\n/models/b\n", encoding="utf-8")
    (tmp_path / "data.jsonl").write_text("{}\n", encoding="utf-8")
    env = _slurm_stand_ins(bin_dir, tmp_path, **_array_task(
        1, SLURM_SUBMIT_DIR=str(tmp_path), JUDGE_RANK_MODELS=str(tmp_path / "candidates.txt"),
        JUDGE_RANK_JUDGE="http://judge:8000/v1", JUDGE_RANK_DATA=str(tmp_path / "data.jsonl"),
        JUDGE_RANK_OUT=str(tmp_path / "runs"), JUDGE_CACHE_DIR=str(tmp_path / "cache")))
    script = str(Path(__file__).resolve().parents[2] / "slurm" / "rank.sbatch")
    proc = subprocess.run(["bash", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "srun.args").read_text(encoding="utf-8").splitlines()
    assert args[args.index("--model") + 1] == "/models/b"
    assert args[args.index("--out") + 1] == str(tmp_path / "runs" / "1")


@pytest.mark.parametrize(("listed", "said"), [
    ("/models/a\n", "lists 1 candidate; use --array=0"),  # not "lists 1; use --array=0-0"
    ("/models/a\n/models/b\n", "lists 2 candidates; use --array=0-1"),
    ("\n  \n", None),
])  # fmt: skip
def test_slurm_rank_task_past_the_list_names_its_candidates(tmp_path, listed, said):
    """A task past the list is told how many candidates it holds, in words that agree with the count; an empty list
    is said to be one (it said "lists 0; use --array=0--1")."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "candidates.txt").write_text(listed, encoding="utf-8")
    env = _slurm_stand_ins(bin_dir, tmp_path, **_array_task(
        2, SLURM_SUBMIT_DIR=str(tmp_path), JUDGE_RANK_MODELS="candidates.txt", JUDGE_RANK_JUDGE="http://judge:8000/v1",
        JUDGE_RANK_DATA=str(tmp_path / "candidates.txt"), JUDGE_RANK_OUT=str(tmp_path / "runs"),
        JUDGE_CACHE_DIR=str(tmp_path / "cache")))
    script = str(Path(__file__).resolve().parents[2] / "slurm" / "rank.sbatch")
    proc = subprocess.run(["bash", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    models = tmp_path / "candidates.txt"
    why = (f"task 2 has no candidate: {models} {said}" if said
           else f"{models} lists no candidate (empty, or blank lines only): nothing to rank")
    assert (proc.returncode, proc.stderr) == (2, f"rank.sbatch: {why}\n")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "srun.args").exists()


def test_slurm_eval_rerun_of_one_shard_judges_that_shard_of_the_recorded_count(tmp_path):
    """JUDGE_EVAL_SHARDS=2 `sbatch --array=1 slurm/eval.sbatch` rejudges shard 1 of 2 (records 3-4 of 4); without
    it an array of one task was one shard of all the data, written over shard 0. A count other than the one the
    earlier array recorded is refused: it would cut the data into other blocks."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "{k}"}}\n' for k in range(4)), encoding="utf-8")
    (tmp_path / "eval" / "shards").mkdir(parents=True)
    (tmp_path / "eval" / "shards" / "count").write_text("2\n", encoding="utf-8")
    script = str(Path(__file__).resolve().parents[2] / "slurm" / "eval.sbatch")

    def shard(index: int, shards: str) -> subprocess.CompletedProcess:
        env = _slurm_stand_ins(bin_dir, tmp_path, **_array_task(
            index, SLURM_SUBMIT_DIR=str(tmp_path), JUDGE_EVAL_JUDGE="http://judge:8000/v1", JUDGE_EVAL_DATA="data.jsonl",
            JUDGE_EVAL_OUT="eval", JUDGE_CACHE_DIR=str(tmp_path / "cache"), JUDGE_EVAL_SHARDS=shards))
        return subprocess.run(["bash", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)

    proc = shard(1, "2")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "eval" / "shards" / "1" / "data.jsonl").read_text(encoding="utf-8") == '{"id": "2"}\n{"id": "3"}\n'
    assert not (tmp_path / "eval" / "shards" / "0").exists()
    assert (tmp_path / "eval" / "shards" / "count").read_text(encoding="utf-8") == "2\n"
    other = shard(1, "3")
    assert other.returncode == 2 and "shards/count says the earlier array had 2 shards" in other.stderr
    past = shard(2, "2")
    assert past.returncode == 2 and "array index 2 is no shard of 2 (JUDGE_EVAL_SHARDS)" in past.stderr


def test_first_refusals_hold_alike_refusals_and_release_them_on_anything_else():
    """FirstRefusals: alike 4xx refusals are held until n_first stop the run; a success, a different refusal or a
    non-HTTP failure first releases the held ones, in order, and later refusals are written as usual."""
    from eval.judging.backends import FirstRefusals, Refused

    def refused(said: str, status: int | None = 400) -> Refused:
        return Refused(f"HTTP {status}: {said}", status, said)

    stop = FirstRefusals(3)
    assert [stop.offer(refused("too long"), k) for k in range(3)] == [[], [], []]
    assert stop.stopped is not None and stop.stopped.said == "too long"
    assert stop.offer(refused("too long"), 3) == [] and stop.offer(None, 4) == [4]  # after the stop: successes only
    mixed = FirstRefusals(3)
    assert [mixed.offer(refused("a"), 0), mixed.offer(refused("b"), 1), mixed.offer(refused("a"), 2)] == [[], [0, 1], [2]]
    assert mixed.stopped is None
    success = FirstRefusals(3)
    assert [success.offer(refused("a"), 0), success.offer(None, 1)] == [[], [0, 1]]
    unknown = FirstRefusals(3)  # a refusal without a status (a malformed answer) is not a server's "no"
    assert [unknown.offer(refused("x"), 0), unknown.offer(refused("x", None), 1)] == [[], [0, 1]]
    assert stop.message("the judge (j)", 5, 20) == (
        "the judge (j) refused the first 3 requests alike: HTTP 400: too long (stopped after sending 5 of 20 requests; "
        "no row was written for the refused ones, a rerun sends them again)")


@pytest.mark.parametrize(("requested", "limits", "route", "fitted"), [
    (1024, {"judge_max_tokens": 256}, "judge", 256),                # judge-serve's cap for /v1/judge
    (200, {"judge_max_tokens": 256}, "judge", 200),                 # under it: unchanged
    (4096, {"max_model_len": 2048}, "chat", 1024),                  # the window cannot hold it: 2048 // 2
    (2048, {"max_model_len": 2048}, "chat", 1024),                  # the whole window leaves no room for a prompt
    (1024, {"max_model_len": 2048}, "chat", 1024),
    (10000, {"max_proxy_tokens": 8192, "max_model_len": 32768}, "chat", 8192),  # judge-serve's passthrough cap
    (10000, {"max_proxy_tokens": 8192, "max_model_len": 4096}, "chat", 2048),   # both: the cap, then the window
    (4096, {}, "chat", 4096),                                        # a server that says nothing: unchanged
])  # fmt: skip
def test_max_tokens_fitted_to_what_the_server_allows(requested, limits, route, fitted):
    """fit_max_tokens: at most judge_max_tokens (/v1/judge) or max_proxy_tokens (chat), and a chat budget that the
    context window cannot hold (>= max_model_len) halved to max_model_len // 2; a note whenever it changed."""
    from eval.judging.contact import fit_max_tokens
    from judge.wire import ModelLimits

    value, note = fit_max_tokens(requested, ModelLimits(**limits), route=route)
    assert value == fitted and bool(note) == (fitted != requested)


def test_judge_serve_model_entries_carry_its_caps(tiny_causal_dir, monkeypatch):
    """judge-serve (the app, in front of an attached stand-in engine) answers GET /v1/models and /v1/models/{id} with
    the engine's entry, max_model_len included, plus its own judge_max_tokens and max_proxy_tokens and the prompt
    version its /v1/judge renders (judge.wire.ModelLimits), which a client reads back as they were configured."""

    from fastapi.testclient import TestClient

    from judge.wire import ModelLimits
    from serve.app import create_app
    from serve.config import ServeConfig

    def engine_get(path: str) -> tuple:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "attached", "object": "model", "created": 0,
                                                     "owned_by": "vllm", "max_model_len": 2048}]}
        return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    with ScriptedEndpoint(lambda p, b: (404, {}), respond_get=engine_get) as engine:
        config = ServeConfig(model=str(tiny_causal_dir), served_model_name="attached", generator_url=engine.url,
                             max_model_len=2048, max_tokens=256, max_proxy_tokens=1000, api_key="k").validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            assert http.get("/ready").status_code == 200, http.get("/health").text
            auth = {"Authorization": "Bearer k"}
            listed = http.get("/v1/models", headers=auth).json()["data"]
            one = http.get("/v1/models/attached", headers=auth).json()
    assert listed == [{"id": "attached", "object": "model", "created": 0, "owned_by": "vllm", "max_model_len": 2048,
                       "judge_max_tokens": 256, "max_proxy_tokens": 1000, "prompt_version": "pollux-ru-v2",
                       "verdict_format": "tagged"}]
    assert one == listed[0]
    assert ModelLimits.from_entry(one) == ModelLimits(max_model_len=2048, judge_max_tokens=256, max_proxy_tokens=1000,
                                                      prompt_version="pollux-ru-v2", verdict_format="tagged")


def _reasoning_judge(max_model_len: int) -> ScriptedEndpoint:
    """A chat endpoint whose model entry advertises a judge trained to reason 2048 tokens (judge-serve's
    ``trained_max_completion_length``, for a GRPO export) in a context of ``max_model_len``; it answers every
    request with one parsed verdict."""

    def models(path: str) -> tuple:
        return 200, {"object": "list", "data": [{"id": "grpo-judge", "object": "model", "created": 0,
                                                 "owned_by": "test", "max_model_len": max_model_len,
                                                 "trained_max_completion_length": 2048}]}

    return ScriptedEndpoint(lambda p, b: (200, chat_completion("[FEEDBACK] ок [RESULT] 1 [END]", "grpo-judge")),
                            model="grpo-judge", respond_get=models)


def test_a_judge_trained_to_reason_longer_is_asked_for_its_trained_length_unless_max_tokens_is_chosen(
        tmp_path, monkeypatch, capsys, caplog):
    """A server advertising ``trained_max_completion_length`` (judge-serve, for a GRPO export) longer than the run's
    max_tokens: `judge-eval run` without --max-tokens asks for the trained length (1024 would cut the reasoning
    before its verdict); with --max-tokens chosen it keeps the user's value and says why verdicts may fail."""
    data = sample_records_file(tmp_path / "data.jsonl", 2)
    judge = _reasoning_judge(max_model_len=6144)
    try:
        # the notes are log records (the console's stderr handler is the CLI's, set up once per process)
        auto_code, auto_err = _run_in_process(run_argv(judge.base_url, tmp_path / "auto", data, "--backend", "chat"),
                                              monkeypatch, capsys)
        auto_err += caplog.text
        caplog.clear()
        n_auto = len(judge.bodies("/v1/chat/completions"))
        chosen_code, chosen_err = _run_in_process(run_argv(judge.base_url, tmp_path / "chosen", data, "--backend",
                                                           "chat", "--max-tokens", "1024"), monkeypatch, capsys)
        chosen_err += caplog.text
    finally:
        judge.close()
    assert (auto_code, chosen_code) == (0, 0), (auto_err[-2000:], chosen_err[-2000:])
    sent = [b["max_tokens"] for b in judge.bodies("/v1/chat/completions")]
    assert n_auto > 0 and set(sent[:n_auto]) == {2048} and set(sent[n_auto:]) == {1024}
    assert "note: max_tokens 1024 is below the 2048 tokens this judge was trained to reason in" in chosen_err
    assert "trained to reason in" not in auto_err
    provenance = json.loads((tmp_path / "auto" / "run.json").read_text(encoding="utf-8"))
    limits = provenance["server_limits"]
    assert (limits["trained_max_completion_length"], limits["max_tokens_requested"], limits["max_tokens_adopted"]) == (
        2048, 1024, 2048)  # the user's (default) request kept beside what was adopted


def _drop_last_prediction(run: Path) -> None:
    """The run as if killed before its last verdict was written."""
    lines = (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (run / "predictions.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")


def _run_in_process(argv: list[str], monkeypatch, capsys) -> tuple[int, str]:
    """``judge-eval`` in this process (no key in the environment, as ``env_without_keys``): its exit code and
    stderr."""
    from eval.cli import main

    for name in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def test_a_resume_keeps_the_budget_of_the_verdicts_already_written(tmp_path, monkeypatch, capsys):
    """One folder never holds verdicts asked with two budgets. A run that adopted the judge's trained length (2048),
    resumed with --max-tokens 1024: refused, naming both. A run with --max-tokens 1024 chosen, resumed without it
    (where the trained length would otherwise be adopted): keeps 1024."""
    data = sample_records_file(tmp_path / "data.jsonl", 3)
    judge = _reasoning_judge(max_model_len=6144)
    try:
        adopted, chosen = tmp_path / "adopted", tmp_path / "chosen"
        for out, extra in [(adopted, ()), (chosen, ("--max-tokens", "1024"))]:
            code, err = _run_in_process(run_argv(judge.base_url, out, data, "--backend", "chat", *extra),
                                        monkeypatch, capsys)
            assert code == 0, err[-2000:]
            _drop_last_prediction(out)
        sent = len(judge.bodies("/v1/chat/completions"))
        code, err = _run_in_process(run_argv(judge.base_url, adopted, data, "--backend", "chat", "--max-tokens",
                                             "1024"), monkeypatch, capsys)
        assert code == 2 and len(judge.bodies("/v1/chat/completions")) == sent
        assert console_error_line(err).endswith(
            "max_tokens: the 2 verdicts already in " + str(adopted) + " were asked with max_tokens 2048, this "
            "resume would ask 1024: resume without --max-tokens (the folder keeps 2048), or start again with "
            "--overwrite")
        # the advice, followed, works
        code, err = _run_in_process(run_argv(judge.base_url, adopted, data, "--backend", "chat"), monkeypatch, capsys)
        assert code == 0, err[-2000:]
        assert [b["max_tokens"] for b in judge.bodies("/v1/chat/completions")[sent:]] == [2048]
        sent += 1
        code, err = _run_in_process(run_argv(judge.base_url, chosen, data, "--backend", "chat"), monkeypatch, capsys)
        assert code == 0, err[-2000:]
        assert [b["max_tokens"] for b in judge.bodies("/v1/chat/completions")[sent:]] == [1024]
    finally:
        judge.close()
    assert len((chosen / "predictions.jsonl").read_text(encoding="utf-8").splitlines()) == 3
    assert json.loads((chosen / "run.json").read_text(encoding="utf-8"))["config"]["max_tokens"] == 1024


def test_a_resume_whose_chosen_budget_the_server_fits_alike_goes_on(tmp_path, monkeypatch, capsys):
    """--max-tokens 3000 against a 2048-token context is fitted to 1024 on both launches: the resume asks what the
    first launch asked, and is not refused for the user's unfitted value."""
    data = sample_records_file(tmp_path / "data.jsonl", 2)
    judge = _reasoning_judge(max_model_len=2048)
    argv = run_argv(judge.base_url, tmp_path / "run", data, "--backend", "chat", "--max-tokens", "3000")
    try:
        for launch in range(2):
            code, err = _run_in_process(argv, monkeypatch, capsys)
            assert code == 0, err[-2000:]
            if not launch:
                _drop_last_prediction(tmp_path / "run")
    finally:
        judge.close()
    assert [b["max_tokens"] for b in judge.bodies("/v1/chat/completions")] == [1024, 1024, 1024]


def test_a_resume_against_a_server_that_cannot_give_the_folders_budget_is_refused(tmp_path, monkeypatch, capsys):
    """The first launch adopted 2048 on a 6144-token server; the resume meets one whose 2048-token window cannot give
    2048 (a requeued shard on another node): refused before any request, naming both, not sent 2048 to be refused
    by the server, nor fitted to a budget the folder's other verdicts did not have."""
    data = sample_records_file(tmp_path / "data.jsonl", 3)
    wide, narrow = _reasoning_judge(max_model_len=6144), _reasoning_judge(max_model_len=2048)
    run = tmp_path / "run"
    try:
        code, err = _run_in_process(run_argv(wide.base_url, run, data, "--backend", "chat"), monkeypatch, capsys)
        assert code == 0, err[-2000:]
        _drop_last_prediction(run)
        code, err = _run_in_process(run_argv(narrow.base_url, run, data, "--backend", "chat"), monkeypatch, capsys)
    finally:
        wide.close()
        narrow.close()
    assert code == 2 and narrow.bodies("/v1/chat/completions") == []
    assert console_error_line(err).endswith(
        f"max_tokens: the 2 verdicts already in {run} were asked with max_tokens 2048, which this server cannot give "
        "(it allows 1024): resume against a server like the first launch's, or start again with --overwrite")


def test_an_adopted_trained_length_is_recorded_as_it_was_fitted_to_the_server(tmp_path, monkeypatch, capsys):
    """A trained length the server's context cannot hold (2048 in a 2048-token window) is fitted to it (half the
    window, the prompt the other half): run.json's ``max_tokens_adopted`` is what the requests asked for, not the
    trained length."""
    data = sample_records_file(tmp_path / "data.jsonl", 2)
    judge = _reasoning_judge(max_model_len=2048)
    try:
        code, err = _run_in_process(run_argv(judge.base_url, tmp_path / "run", data, "--backend", "chat"),
                                    monkeypatch, capsys)
    finally:
        judge.close()
    assert code == 0, err[-2000:]
    assert {b["max_tokens"] for b in judge.bodies("/v1/chat/completions")} == {1024}
    limits = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["server_limits"]
    assert (limits["max_tokens_requested"], limits["max_tokens_adopted"]) == (1024, 1024)


def _merged_ids(path: Path) -> list[str]:
    """The ids of a merged predictions file in order (merge writes each shard's rows as read, every field given)."""
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]
