"""judge.plumbing.retry's bounds on the time one call spends retrying: a server answering 503 with ``Retry-After:
600`` for ever held each request for five waits of ten minutes (``MAX_RETRY_AFTER_S`` caps each wait, nothing capped
their sum), so a run stalled for hours before its failing streak could stop it.

- ``wait_budget_s`` (``--retry-wait-budget-s`` of ``judge-eval run``, pointwise and pairwise, ``rank``'s candidate
  answers and ``mera``; ``retry_wait_budget_s`` of the reward clients): a retry whose wait would take one request's
  waits past it is not made, before sleeping; the failure is counted as the retries' spent one is, and says why.
- ``max_wait_s`` (a first contact's ``--connect-timeout-s``): a wait the server asks for that ends past the deadline
  stops the waiting at once instead of sleeping up to the deadline for an attempt the server said would fail.

Every client is driven against a real HTTP endpoint on 127.0.0.1; the waits are read from an injected sleep (and,
for the deadline, an injected clock that the sleep advances), never slept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math

import httpx
import pytest

import judge
from eval.cli import main
from judge.plumbing.failing_streak import stop_after
from judge.plumbing.retry import (EXIT_UNUSABLE, MAX_RETRY_AFTER_S, EndpointUnusable, RetryPolicy, list_models,
                                  retry_stop_said)
from judge.plumbing.retry_bounds import DEFAULT_WAIT_BUDGET_S
from tests.support.eval_ranking import CASES, Judge, rank_argv, scores_by_output
from tests.support.scripted_endpoint import ScriptedEndpoint

BUSY_600 = (503, {"error": {"message": "engine restarting"}}, {"Retry-After": "600"})
#: What a request stopped by the default budget says: one whole 600 s wait made, the second would pass 900 s.
STOPPED_BY_BUDGET = ("retries stopped after 2 attempts: the next wait, 600 s (the server's Retry-After of 600 s), "
                     "would take this request's waits past 900 s (--retry-wait-budget-s), 600 s waited already")


class Recorder:
    """A sleep (sync and async) that records each wait and advances its own clock by it, sleeping never."""

    def __init__(self):
        self.waits: list[float] = []
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def clock(self) -> float:
        return self.now

    def into(self, policy: RetryPolicy) -> RetryPolicy:
        """``policy`` with its bounds as they are, waiting with this recorder."""
        return dataclasses.replace(policy, sleep=self.sleep, asleep=self.asleep, clock=self.clock)


def _always(answer: tuple):
    def respond(path: str, body: dict) -> tuple:
        return answer if path == "/v1/chat/completions" else (404, {"detail": "Not Found"})
    return respond


def test_the_default_budget_makes_one_whole_retry_after_wait_and_stops_before_the_second():
    """503 with Retry-After: 600 for ever, 5 retries allowed: without a budget, 6 requests and 5 waits of 600 s (50
    minutes for one request); with the default budget (900 s), one wait of 600 s and 2 requests, then the failure
    is raised, its type kept, saying why its retries stopped."""
    assert DEFAULT_WAIT_BUDGET_S == 900.0 and MAX_RETRY_AFTER_S == 600.0
    with ScriptedEndpoint(_always(BUSY_600)) as endpoint:
        url = endpoint.base_url + "/chat/completions"

        def attempt() -> httpx.Response:
            return httpx.post(url, json={"model": "scripted"}).raise_for_status()

        unbounded = Recorder()
        with pytest.raises(httpx.HTTPStatusError) as caught:
            unbounded.into(RetryPolicy(max_retries=5, backoff_s=0.01)).call(attempt)
        assert retry_stop_said(caught.value) == ""  # spent its retries: nothing stopped it early
        n_unbounded = len(endpoint.requests)
        endpoint.requests.clear()

        bounded = Recorder()
        policy = RetryPolicy(max_retries=5, backoff_s=0.01, wait_budget_s=DEFAULT_WAIT_BUDGET_S,
                             bound_flag="--retry-wait-budget-s")
        with pytest.raises(httpx.HTTPStatusError) as caught:
            bounded.into(policy).call(attempt)
    assert (n_unbounded, unbounded.waits) == (6, [600.0] * 5)
    assert (len(endpoint.requests), bounded.waits) == (2, [600.0])
    assert caught.value.response.status_code == 503
    assert retry_stop_said(caught.value) == STOPPED_BY_BUDGET


def test_a_budget_bounds_the_async_calls_too_and_a_budget_of_zero_allows_no_wait():
    """acall counts its waits as call does; a budget of 0 makes no retry that would wait at all."""
    with ScriptedEndpoint(_always(BUSY_600)) as endpoint:
        url = endpoint.base_url + "/chat/completions"

        async def attempt() -> httpx.Response:
            async with httpx.AsyncClient() as client:
                return (await client.post(url, json={})).raise_for_status()

        for budget, n_requests, waits in ((1200.0, 3, [600.0, 600.0]), (0.0, 1, [])):
            endpoint.requests.clear()
            recorder = Recorder()
            with pytest.raises(httpx.HTTPStatusError) as caught:
                asyncio.run(recorder.into(RetryPolicy(max_retries=5, wait_budget_s=budget)).acall(attempt))
            assert (len(endpoint.requests), recorder.waits) == (n_requests, waits), budget
            assert f"would take this request's waits past {budget:g} s, " in retry_stop_said(caught.value)


def test_a_first_contact_asked_to_wait_past_its_deadline_stops_at_once_without_sleeping():
    """GET /v1/models answered 503 with Retry-After: 600 and a 120 s --connect-timeout-s: the server said it will not
    be ready within the bound, so no wait is slept (before: 120 s slept, then one more 503) and the sentence says
    why, with the flag that allows longer."""
    recorder = Recorder()
    with ScriptedEndpoint(_always(BUSY_600), respond_get=lambda path: BUSY_600) as endpoint:
        policy = recorder.into(RetryPolicy(max_retries=10**6, max_backoff_s=10.0, max_wait_s=120.0))
        with pytest.raises(EndpointUnusable) as caught:
            list_models(endpoint.base_url, what="the judge", policy=policy)
        assert endpoint.gets == ["/v1/models"]
    assert recorder.waits == []
    assert str(caught.value) == (
        f"the judge at {endpoint.base_url} still answers HTTP 503 (engine restarting) after 1 attempt in 0 s (the "
        "server asked to wait 600 s (Retry-After), past the 120 s bound (--connect-timeout-s), 120 s away); it may "
        "still be loading: wait and rerun, or allow longer with --connect-timeout-s")


def test_a_first_contact_backing_off_on_its_own_tries_last_at_its_deadline_and_never_after():
    """GET /v1/models answered 503 without Retry-After: this client's own backoff (10 s at most) is cut to end at the
    120 s deadline, one last attempt comes there, and none after (measured by the injected clock the waits advance)."""
    recorder = Recorder()
    busy = (503, {"error": {"message": "loading"}})
    with ScriptedEndpoint(_always(busy), respond_get=lambda path: busy) as endpoint:
        policy = recorder.into(RetryPolicy(max_retries=10**6, max_backoff_s=10.0, max_wait_s=120.0))
        with pytest.raises(EndpointUnusable, match=r"still answers HTTP 503 \(loading\) after \d+ attempts in 120 s; "):
            list_models(endpoint.base_url, what="the judge", policy=policy)
        n_gets = len(endpoint.gets)
    assert math.isclose(sum(recorder.waits), 120.0) and all(wait <= 15.0 for wait in recorder.waits)
    assert n_gets == len(recorder.waits) + 1 >= 12  # each wait followed by an attempt, the last at the bound


def _eval_args(url: str, data, out, *extra: str) -> list[str]:
    return ["run", "--judge", url, "--data", str(data), "--out", str(out), "--max-tokens", "32", "--no-progress",
            "--verdict-format", "tagged", "--concurrency", "1", *extra]


def test_judge_eval_run_stops_each_request_at_the_default_budget_and_says_so_in_its_rows(tmp_path, monkeypatch,
                                                                                          capsys):
    """`judge-eval run` with its default retries (5) and budget against a judge answering 503 Retry-After: 600 for
    ever: each request is asked twice with one 600 s wait between (before: six times, 3,000 s of waits), is a
    request_failed row whose reason says why its retries stopped, and the failing streak stops the run (exit 4)
    after stop_after(1) answers, its message naming the budget too."""
    import eval.judging.run as run

    recorder = Recorder()
    made = run.retry_policy
    monkeypatch.setattr(run, "retry_policy", lambda config: recorder.into(made(config)))
    records = judge.load_records(judge.sample_data_path())[:12]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    with ScriptedEndpoint(_always(BUSY_600), model="judge") as server:
        code = main(_eval_args(server.base_url, data, tmp_path / "run"))
        asked = server.bodies("/v1/chat/completions")
    err = capsys.readouterr().err
    rows = [row for row in map(__import__("json").loads, (tmp_path / "run" / "predictions.jsonl").read_text(
        encoding="utf-8").splitlines())]
    assert code == EXIT_UNUSABLE, err
    assert len({judge.prefix_key(r) for r in records if r.id in {row["id"] for row in rows}}) == stop_after(1)
    assert len(asked) == 2 * len(rows) and recorder.waits == [600.0] * len(rows)
    assert {row["error"] for row in rows} == {"request_failed"}
    assert all(row["reason"].endswith(f"({STOPPED_BY_BUDGET})") and "503" in row["reason"] for row in rows), rows[0]
    assert f"last HTTP 503: engine restarting ({STOPPED_BY_BUDGET})" in err, err


@pytest.mark.parametrize(("value", "says"), [("nan", "must be a finite number, got nan"),
                                             ("-1", "must be >= 0, got -1.0")])
def test_judge_eval_run_refuses_a_budget_that_is_no_number_of_seconds(tmp_path, capsys, value, says):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:1], tmp_path / "data.jsonl")
    code = main(_eval_args("http://127.0.0.1:9/v1", data, tmp_path / "run", "--retry-wait-budget-s", value))
    assert code == 2 and f"retry_wait_budget_s: {says}" in capsys.readouterr().err


def test_judge_eval_run_pairwise_takes_the_same_budget_flag(tmp_path, monkeypatch, capsys):
    """Pairwise judging shares the run's policy: --retry-wait-budget-s 1000 allows one 600 s wait, not two."""
    import json

    import eval.judging.run as run

    recorder = Recorder()
    made = run.retry_policy
    monkeypatch.setattr(run, "retry_policy", lambda config: recorder.into(made(config)))
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{k}", "instruction": f"Вопрос {k}?", "answer_1": "А.",
                                        "answer_2": "Б.", "rubrics": "-1: первый\n0: равны\n1: второй"},
                                       ensure_ascii=False) + "\n" for k in range(5)), encoding="utf-8")
    with ScriptedEndpoint(_always(BUSY_600), model="judge") as server:
        code = main(_eval_args(server.base_url, path, tmp_path / "run", "--retry-wait-budget-s", "1000",
                               "--pairwise-orders", "original"))
        asked = server.bodies("/v1/chat/completions")
    rows = [json.loads(line) for line in (tmp_path / "run" / "pairwise_predictions.jsonl").read_text(
        encoding="utf-8").splitlines()]
    assert code == EXIT_UNUSABLE, capsys.readouterr().err
    assert len(rows) == stop_after(1) and len(asked) == 2 * len(rows) and recorder.waits == [600.0] * len(rows)
    assert all(row["reason"].endswith("would take this request's waits past 1000 s (--retry-wait-budget-s), 600 s "
                                      "waited already)") for row in rows), rows[0]["reason"]


def test_rank_candidate_requests_stop_at_the_budget_and_say_so(tmp_path, data, monkeypatch, capsys):
    """`rank`'s candidate answering 503 Retry-After: 600 for ever, --max-retries 5: each instruction asked twice, one
    600 s wait between, a failed answer row saying why, and the streak stops the answer stage (exit 4)."""
    import eval.ranking.rank as rank

    recorder = Recorder()
    made = rank.candidate_policy
    monkeypatch.setattr(rank, "candidate_policy", lambda config: recorder.into(made(config)))
    out = tmp_path / "bench"
    with (ScriptedEndpoint(_always(BUSY_600), model="cand-model", max_model_len=32768) as cand,
          Judge(scores_by_output()) as judge_server):
        code = main(rank_argv(cand.base_url, judge_server.base_url, data, out, "--concurrency", "1",
                              "--max-retries", "5"))
        asked = cand.bodies("/v1/chat/completions")
    import json

    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert code == EXIT_UNUSABLE, capsys.readouterr().err
    assert len(rows) == stop_after(1) < len(CASES) and len(asked) == 2 * len(rows)
    assert recorder.waits == [600.0] * len(rows)
    assert all(row["reason"].endswith(f"({STOPPED_BY_BUDGET})") for row in rows), rows[0]["reason"]


def test_mera_client_stops_at_its_budget_and_the_run_says_why(tmp_path):
    """MERA's client with its defaults (5 retries, the default budget): two requests and one 600 s wait, then the
    failure that ends a `judge-eval mera` run, whose line says why the retries stopped."""
    import openai

    from eval.mera.client import OpenAICompatClient, endpoint_failure
    from eval.mera.config import RutieConfig

    recorder = Recorder()
    with ScriptedEndpoint(_always(BUSY_600)) as endpoint:
        client = OpenAICompatClient(endpoint.base_url, "scripted", timeout_s=30)
        client.retry = recorder.into(client.retry)
        with pytest.raises(openai.APIStatusError) as caught:
            client.generate([{"role": "user", "content": "hi"}], mode="chat")
        n_requests = len(endpoint.requests)
    assert (n_requests, recorder.waits) == (2, [600.0])
    config = RutieConfig(endpoint=endpoint.base_url, out=str(tmp_path / "out"))
    assert endpoint_failure(caught.value, config) == (
        f"the endpoint at {endpoint.base_url} failed mid-run (HTTP 503: engine restarting; {STOPPED_BY_BUDGET}); "
        f"the answers so far are saved in {tmp_path / 'out'}: rerunning the same command resumes")


def test_mera_endpoint_failure_shows_the_servers_control_characters_as_escapes(tmp_path):
    """The line that ends a `judge-eval mera` run is the console's: the server's words in it, an ESC sequence and a
    newline among them, are said with their control characters as escapes (the line stays one line)."""
    import httpx
    import openai

    from eval.mera.client import endpoint_failure
    from eval.mera.config import RutieConfig

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    body = {"error": {"message": "engine down\x1b[2J\rforged"}}
    err = openai.InternalServerError("engine down", response=httpx.Response(500, json=body, request=request),
                                     body=body["error"])
    config = RutieConfig(endpoint="http://127.0.0.1:9/v1", out=str(tmp_path / "out"), max_retries=0)
    said = endpoint_failure(err, config)
    assert said.startswith("the endpoint at http://127.0.0.1:9/v1 failed mid-run (HTTP 500: engine down\\x1b[2J "
                           "forged; ") and said.isprintable()


def test_reward_client_stops_at_its_budget_and_names_it(monkeypatch):
    """The reward client's default policy: two /v1/judge requests and one 600 s wait, then the transient failure
    trl's function takes for no rewards this step, its note naming the URL and why the retries stopped; verl's
    reward_kwargs set the budget (``retry_wait_budget_s``) and a value that is no number of seconds is refused."""
    from judge.reward_clients import JudgeRewardClient, RewardSample, compute_score

    recorder = Recorder()

    def respond(path: str, body: dict) -> tuple:
        return BUSY_600 if path == "/v1/judge" else (404, {"detail": "Not Found"})

    sample = RewardSample("Вопрос?", "Ответ.", ("Грамотность",))
    with ScriptedEndpoint(respond) as endpoint:
        client = JudgeRewardClient(endpoint.base_url, api_key_env="")
        client.retry = recorder.into(client.retry)
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.rewards([sample])
        n_requests = len(endpoint.bodies("/v1/judge"))
    assert (n_requests, recorder.waits) == (2, [600.0])
    assert caught.value.__notes__ == [
        f"judge-serve at {client.url}: still failing after the retries (max_retries=4; retries stopped after 2 "
        "attempts: the next wait, 600 s (the server's Retry-After of 600 s), would take this request's waits past "
        "900 s (retry_wait_budget_s), 600 s waited already)"]
    for value in (-1, float("nan"), "900"):
        with pytest.raises(ValueError, match=r"reward_kwargs\.retry_wait_budget_s: must be a finite number"):
            compute_score("d", "ans", "", {"instruction": "Q", "criteria": ["A"]}, judge_url="http://127.0.0.1:9",
                          api_key_env="", retry_wait_budget_s=value)


@pytest.fixture()
def data(tmp_path):
    from tests.support.eval_ranking import instruction_rows
    from tests.support.release_instructions import write_instructions_dataset

    return write_instructions_dataset(tmp_path / "POLLUX-instructions", instruction_rows())


class FixedJitter:
    """``judge.plumbing.retry``'s source of jitter, drawing ``value`` every time: the jitter's low or high end."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


def _call(policy: RetryPolicy, url: str, asynchronous: bool) -> None:
    """POST ``url`` through ``policy``, by ``call`` or by ``acall``."""
    if asynchronous:
        async def attempt() -> httpx.Response:
            async with httpx.AsyncClient() as client:
                return (await client.post(url, json={})).raise_for_status()

        asyncio.run(policy.acall(attempt))
    else:
        policy.call(lambda: httpx.post(url, json={}).raise_for_status())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["call", "acall"])
def test_a_call_that_spent_its_retries_within_the_budget_does_not_say_a_bound_stopped_it(monkeypatch, asynchronous):
    """max_retries 1, a budget of 150 s, Retry-After: 100 for ever: one wait (150 s at the jitter's high end, within
    the budget), the second attempt fails, and the retries are spent. The budget did not stop them: the failure says
    nothing of it (tenacity 9 asks the wait before the stop, so the wait after the last attempt was planned, and its
    words were left on a failure that only ran out of retries), on both paths alike."""
    import judge.plumbing.retry as retry

    monkeypatch.setattr(retry, "random", FixedJitter(0.999))
    busy = (503, {"error": {"message": "busy"}}, {"Retry-After": "100"})
    recorder = Recorder()
    with ScriptedEndpoint(_always(busy)) as endpoint:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            _call(recorder.into(RetryPolicy(max_retries=1, wait_budget_s=150.0)),
                  endpoint.base_url + "/chat/completions", asynchronous)
        n_requests = len(endpoint.requests)
    assert (n_requests, len(recorder.waits)) == (2, 1) and 100.0 <= recorder.waits[0] <= 150.0
    assert retry_stop_said(caught.value) == ""


@pytest.mark.parametrize("asynchronous", [False, True], ids=["call", "acall"])
def test_the_jitter_never_decides_whether_a_retry_is_made(monkeypatch, asynchronous):
    """Retry-After: 400 for ever, a budget of 1000 s, 2 retries: the two waits the server asks for (800 s) fit the
    budget, so both retries are made whatever the jitter draws; at its high end the second wait is cut to end at the
    budget, never below the Retry-After. The jitter's high end (600 s, then 600 s more past 1000) never makes one
    retry where its low end makes two: the same server must not fail a request or not by a coin toss."""
    import judge.plumbing.retry as retry

    busy = (503, {"error": {"message": "busy"}}, {"Retry-After": "400"})
    outcomes = {}
    for jitter in (0.0, 0.999):
        monkeypatch.setattr(retry, "random", FixedJitter(jitter))
        recorder = Recorder()
        with ScriptedEndpoint(_always(busy)) as endpoint:
            with pytest.raises(httpx.HTTPStatusError) as caught:
                _call(recorder.into(RetryPolicy(max_retries=2, wait_budget_s=1000.0)),
                      endpoint.base_url + "/chat/completions", asynchronous)
            outcomes[jitter] = (len(endpoint.requests), retry_stop_said(caught.value))
        assert len(recorder.waits) == 2 and all(wait >= 400.0 for wait in recorder.waits), (jitter, recorder.waits)
        assert sum(recorder.waits) <= 1000.0, (jitter, recorder.waits)
    assert outcomes == {0.0: (3, ""), 0.999: (3, "")}


def test_judge_eval_runs_backend_probe_waits_within_the_budget_too(tmp_path, monkeypatch, capsys):
    """`judge-eval run --backend auto` against a server whose model list does not say it is a judge-serve, and whose
    POST /v1/judge (the probe that tells one) answers 503 with Retry-After: 600 for ever: the probe's waits are bounded
    by --retry-wait-budget-s as every other request's are (1000 s: one 600 s wait, not its four retries' 2,400 s before
    the run had asked anything), and the run stops (exit 4) saying why the retries stopped."""
    import eval.judging.contact as contact

    recorder = Recorder()
    monkeypatch.setattr(contact, "PROBE_POLICY", recorder.into(contact.PROBE_POLICY))

    def respond(path: str, body: dict) -> tuple:
        return BUSY_600 if path == "/v1/judge" else (404, {"detail": "Not Found"})

    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    with ScriptedEndpoint(respond, model="judge") as server:
        code = main(_eval_args(server.base_url, data, tmp_path / "run", "--retry-wait-budget-s", "1000"))
        probes = server.bodies("/v1/judge")
        asked = server.bodies("/v1/chat/completions")
    err = capsys.readouterr().err
    assert code == EXIT_UNUSABLE, err
    assert (len(probes), recorder.waits, asked) == (2, [600.0], [])
    assert ("retries stopped after 2 attempts: the next wait, 600 s (the server's Retry-After of 600 s), would take "
            "this request's waits past 1000 s (--retry-wait-budget-s), 600 s waited already") in err, err


def test_a_retried_attempt_and_a_mera_stop_say_the_failure_as_failure_said_does(tmp_path, caplog):
    """An attempt about to be retried is logged, and a MERA run that ends on a failure says it, in failure_said's
    words: an answer as "HTTP <status>: <its message>" (no exception class before it), anything else as its class
    and its words."""
    import httpx
    import openai

    from eval.mera.client import endpoint_failure
    from eval.mera.config import RutieConfig
    from judge.plumbing.retry import RetryPolicy, failure_said

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    busy = httpx.HTTPStatusError("busy", request=request, response=httpx.Response(
        503, json={"error": {"message": "engine\nbusy"}}, request=request))
    left = [busy]

    def call() -> str:
        if left:
            raise left.pop()
        return "answered"

    with caplog.at_level("WARNING", logger="judge.plumbing.retry"):
        assert RetryPolicy(max_retries=1, backoff_s=0.0, sleep=lambda s: None).call(call) == "answered"
    assert [r.getMessage() for r in caplog.records] == [f"attempt 1 failed ({failure_said(busy)}); retrying in 0.0 s"]
    assert failure_said(busy) == "HTTP 503: engine busy"

    lost = openai.APIConnectionError(request=request)
    config = RutieConfig(endpoint="http://127.0.0.1:9/v1", out=str(tmp_path / "out"), max_retries=0)
    assert endpoint_failure(lost, config).startswith(
        "the endpoint at http://127.0.0.1:9/v1 failed mid-run (APIConnectionError: Connection error.; a transient "
        "failure is retried --max-retries 0 times")
