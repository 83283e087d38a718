"""The synthetic-data stages (`judge-train data`) bound one request's waits between its retries as `judge-eval run`
does: ``retry_wait_budget_s`` in each stage's config (and its ``--retry-wait-budget-s`` flag), default
``judge.plumbing.retry_bounds.DEFAULT_WAIT_BUDGET_S``. Without it a teacher or generator answering 503 with
``Retry-After: 600`` held each request for ``max_retries`` waits of ten minutes (five: 50 minutes a job).

The endpoint is a real HTTP server on 127.0.0.1 (tests.support.scripted_endpoint); the waits are read from a
recording sleep put into each client's retry policy, never slept.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml

from judge.plumbing.retry import EXIT_UNUSABLE, RetryPolicy
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S
from tests.support.scripted_endpoint import ScriptedEndpoint
from train.synthetic import client as client_module
from train.synthetic.cli import main
from train.synthetic.config import STAGE_CONFIGS

ROOT = Path(__file__).resolve().parents[2]
BUSY_600 = (503, {"error": {"message": "engine restarting", "type": "server_error"}}, {"Retry-After": "600"})
#: The stages that ask an endpoint (split asks none), and their configs under configs/data.
ASKING = {"instructions": ("instructions.yaml",), "dedup": ("dedup.yaml", "dedup-cpu.yaml"),
          "answers": ("answers.yaml",), "annotate": ("annotate.yaml",), "traces": ("traces.yaml",)}


class Recorder:
    """A sleep that records each wait, sleeping never."""

    def __init__(self):
        self.waits: list[float] = []

    def into(self, policy: RetryPolicy) -> RetryPolicy:
        return dataclasses.replace(policy, sleep=self.waits.append)


@pytest.fixture
def recorder(monkeypatch) -> Recorder:
    """Every ``ChatClient`` made while the test runs waits with one recorder, its policy's bounds as the stage set
    them."""
    recorder = Recorder()
    made = client_module.ChatClient.__init__

    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        self.retry = recorder.into(self.retry)

    monkeypatch.setattr(client_module.ChatClient, "__init__", init)
    return recorder


def test_every_asking_stage_names_the_budget_with_judge_evals_default_and_its_configs_set_it():
    assert DEFAULT_WAIT_BUDGET_S == 900.0
    for stage, files in ASKING.items():
        assert STAGE_CONFIGS[stage]().retry_wait_budget_s == DEFAULT_WAIT_BUDGET_S, stage
        for name in files:
            assert yaml.safe_load((ROOT / "configs" / "data" / name).read_text())["retry_wait_budget_s"] == 900.0


@pytest.mark.parametrize(("value", "says"), [(-1.0, "retry_wait_budget_s must be non-negative, got -1.0"),
                                             (math.nan, "retry_wait_budget_s must be a finite number, got nan")])
def test_a_budget_that_is_no_number_of_seconds_is_refused_naming_the_key(value, says):
    for stage in ASKING:
        with pytest.raises(ValueError, match=f"^{stage}: {says}$"):
            STAGE_CONFIGS[stage](retry_wait_budget_s=value)


def test_a_client_without_a_budget_given_takes_the_default():
    """One-off use (``ChatClient`` without a stage) is bounded too, and its failure names the setting."""
    from train.synthetic.config import EndpointConfig

    client = client_module.ChatClient(EndpointConfig(model="m", base_url="http://127.0.0.1:9/v1"))
    assert (client.retry.wait_budget_s, client.retry.bound_flag) == (DEFAULT_WAIT_BUDGET_S, "retry_wait_budget_s")


def _instructions_config(tmp_path: Path, url: str, *extra: str) -> Path:
    path = tmp_path / "instructions.yaml"
    path.write_text("\n".join([
        "generators:",
        f'  - {{name: gen-a, model: gen-a, base_url: "{url}", temperature: 0.9, max_tokens: 64}}',
        "per_task_level: 1", "task_types: [Editing]", "concurrency: 1", "backoff_s: 0.01", "max_retries: 5",
        *extra]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("setting", "flag", "budget", "n_waits"), [
    ((), (), 900.0, 1),  # the default: one whole 600 s wait, the second would pass 900 s
    (("retry_wait_budget_s: 1300",), (), 1300.0, 2),  # the YAML's: two waits, the third would pass it
    (("retry_wait_budget_s: 1300",), ("--retry-wait-budget-s", "0"), 0.0, 0),  # the flag over the YAML: no wait
])
def test_the_instructions_stage_stops_each_request_at_its_budget_and_journals_why(tmp_path, recorder, capsys,
                                                                                   setting, flag, budget, n_waits):
    """A generator answering 503 with Retry-After: 600 for ever, 5 retries allowed: each of the stage's 3 jobs
    (Editing x 3 levels) is asked n_waits + 1 times, waiting 600 s between (before: 6 times with 5 waits of 600 s, 50
    minutes a job), and is journalled failed, its error saying why the retries stopped and naming the setting."""
    with ScriptedEndpoint(lambda path, body: BUSY_600, model="gen-a") as server:
        config = _instructions_config(tmp_path, server.base_url, *setting)
        out = tmp_path / "instructions"
        code = main(["data", "instructions", "--config", str(config), "--output", str(out), *flag])
        asked = server.bodies("/v1/chat/completions")
    err = capsys.readouterr().err
    results = [json.loads(line) for line in (out / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(results) == 3, err
    assert len(asked) == 3 * (n_waits + 1)
    assert recorder.waits == [600.0] * (3 * n_waits)
    assert {(r["ok"], r["attempts"]) for r in results} == {(False, n_waits + 1)}
    after = f"{n_waits + 1} attempt{'s' if n_waits else ''}"
    stopped = (f"(retries stopped after {after}: the next wait, 600 s (the server's Retry-After of 600 s), would take "
               f"this request's waits past {budget:g} s (retry_wait_budget_s), {600 * n_waits} s waited already)")
    assert all(r["error"].startswith("InternalServerError: ") and r["error"].endswith(stopped) for r in results), \
        results[0]["error"]
    # the three failed jobs in a row are the failing streak's stop at concurrency 1, which names the bound too
    assert code == EXIT_UNUSABLE and f"last HTTP 503: engine restarting {stopped}" in err, err


def test_every_stage_gives_the_clients_it_makes_its_configs_budget():
    """Every ``ChatClient`` a stage makes (generators, answer models, the teacher, dedup's check) is given the
    stage's ``retry_wait_budget_s``: instructions is driven above; the others need inputs of earlier stages (dedup an
    embedding model), so their calls are read from the source, where a call without it would take the default
    whatever the config says."""
    import ast

    calls = {}
    for path in sorted((ROOT / "train" / "synthetic").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ChatClient":
                given = {k.arg: ast.unparse(k.value) for k in node.keywords}
                calls[f"{path.stem}:{node.lineno}"] = given.get("retry_wait_budget_s")
    assert {key.split(":")[0] for key in calls} == {"generation", "dedup", "answers", "annotate", "traces"}
    assert set(calls.values()) == {"config.retry_wait_budget_s"}, calls
