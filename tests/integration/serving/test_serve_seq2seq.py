"""judge-serve over a tiny seq2seq judge, with real vLLM engines, driven by the openai SDK and plain HTTP.

The tiny judge has random weights: free generation never writes a verdict (those results are parse failures, as
they must be), while constrained decoding (``"constrained": true``) makes it write a well-formed one, which pins
the parsed-score and score-distribution path.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

import judge
from judge.plumbing.processes import group_members, http_status
from tests.support.fixtures_serve import (ENGINE_KEY, frozen, process_titles, requests_held_at, server_metric,
                                         start_judge_serve)

ITEM = {"instruction": "Напиши четверостишие про осень.", "answer": "Листья падают, ветер воет, дождь стучит в окно.", "reference_answer": ""}


def _client(server, **kwargs) -> openai.OpenAI:
    # max_retries=0: a retried request would hide a lost or duplicated response.
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=120, **kwargs)


def _post(server, path, body, key="default", **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.api_key if key == 'default' else key}"} if key else {}
    return httpx.post(server.root_url + path, json=body, headers=headers, timeout=120, **kwargs)


# ------------------------------------------------------------------------------------------ passthrough


def test_models_and_completions_pass_through_with_the_openai_sdk(seq2seq_server):
    """/v1/models, /v1/chat/completions and /v1/completions answer as vLLM does, streaming included."""
    client = _client(seq2seq_server)
    assert [m.id for m in client.models.list()] == [seq2seq_server.model]
    chat = client.chat.completions.create(
        model=seq2seq_server.model, messages=[{"role": "user", "content": "Привет"}], max_tokens=4, temperature=0
    )
    assert chat.usage.completion_tokens == 4 and chat.choices[0].finish_reason == "length"
    completion = client.completions.create(model=seq2seq_server.model, prompt="Hello", max_tokens=3, logprobs=2)
    assert len(completion.choices[0].logprobs.tokens) == 3
    stream = client.chat.completions.create(
        model=seq2seq_server.model, messages=[{"role": "user", "content": "Привет"}], max_tokens=5, temperature=0,
        stream=True, stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    assert len([c for c in chunks if c.choices]) >= 5  # one chunk per token (plus the role chunk)
    assert chunks[-1].usage.completion_tokens == 5


def test_model_entries_fingerprint_the_weights_their_own_engines_load(seq2seq_server, regression_server,
                                                                      tiny_causal_dir):
    """The seq2seq judge-serve started its engine on the tiny judge's folder: its entry carries that folder's
    ``weights_fingerprint`` (what a resumed `judge-eval run` compares), whatever encoding the client accepts; the
    regression one's generating engine is attached (the seq2seq's): it says none rather than vouch for it."""
    from serve.layout import resolve_layout, weights_fingerprint

    entries = [httpx.get(server.base_url + "/models", timeout=30, headers={"Authorization": f"Bearer {server.api_key}",
                                                                          "Accept-Encoding": "gzip"}).json()["data"][0]
               for server in (seq2seq_server, regression_server)]
    assert entries[0]["weights_fingerprint"] == weights_fingerprint(resolve_layout(tiny_causal_dir)) is not None
    assert "weights_fingerprint" not in entries[1]


def test_passthrough_is_byte_for_byte(seq2seq_server):
    """A proxied response is the engine's own (same body for the same greedy request)."""
    body = {"model": seq2seq_server.model, "prompt": [1, 2, 3], "max_tokens": 4, "temperature": 0}
    via_judge_serve = _post(seq2seq_server, "/v1/completions", body).json()
    direct = httpx.post(seq2seq_server.engine_url("generator") + "/v1/completions", json=body, timeout=60,
                        headers={"Authorization": f"Bearer {ENGINE_KEY}"}).json()
    for response in (via_judge_serve, direct):
        response.pop("id"), response.pop("created")
    assert via_judge_serve == direct


def test_vllm_error_passes_through(seq2seq_server):
    """vLLM's own 4xx (an unknown model) reaches the client unchanged."""
    with pytest.raises(openai.NotFoundError):
        _client(seq2seq_server).completions.create(model="no-such-model", prompt="x", max_tokens=1)


def test_health_ready_metrics(seq2seq_server):
    """/health and /ready answer 200 without auth; /metrics is vLLM's Prometheus text, behind the key; no pooler
    here."""
    auth = {"Authorization": f"Bearer {seq2seq_server.api_key}"}
    assert httpx.get(seq2seq_server.root_url + "/health", headers=auth).json()["status"] == "ready"
    assert httpx.get(seq2seq_server.root_url + "/ready").status_code == 200
    metrics = httpx.get(seq2seq_server.root_url + "/metrics", headers=auth)
    assert metrics.status_code == 200 and "vllm:prefix_cache_hits_total" in metrics.text
    assert httpx.get(seq2seq_server.root_url + "/metrics").status_code == 401
    assert httpx.get(seq2seq_server.root_url + "/metrics/pooler", headers=auth).status_code == 404


# ------------------------------------------------------------------------------------------ auth and bounds


@pytest.mark.parametrize("key", [None, "wrong"])
def test_api_key_required(seq2seq_server, key):
    """Every /v1 route answers 401 without the right bearer token (SDK and plain HTTP)."""
    for path, method in (("/v1/judge", "post"), ("/v1/chat/completions", "post"), ("/v1/models", "get")):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        response = httpx.request(method, seq2seq_server.root_url + path, json={}, headers=headers)
        assert response.status_code == 401, path
        assert response.json()["error"]["type"] == "authentication_error"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=seq2seq_server.base_url, api_key=key or "none", max_retries=0).models.list()


BAD = [
    ({"items": [{**ITEM, "criteria": ["Креативность"]}], "answer": "x"}, 400, "answer"),
    ({"items": [{k: v for k, v in ITEM.items() if k != "answer"} | {"criteria": ["Креативность"]}]}, 400, "items[0].answer"),
    ({"items": [{**ITEM, "answer": "", "criteria": ["Креативность"]}]}, 400, "items[0].answer"),
    ({"items": [{**ITEM, "criteria": ["Креативность", "Нет такого критерия"]}]}, 400, "items[0].criteria[1]"),
    ({"items": [{**ITEM, "criteria": [{"name": "X", "rubrics": 3}]}]}, 400, "items[0].criteria[0].rubrics"),
    ({"items": [{**ITEM, "instruction": ["list"], "criteria": ["Креативность"]}]}, 400, "items[0].instruction"),
    ({"items": [{**ITEM, "task_type": "No such task"}]}, 400, "items[0].task_type"),
    ({"items": [{**ITEM, "criteria": ["Креативность"]}], "max_tokens": 100000}, 400, "max_tokens"),
    # The answer alone is over the prompt's budget: the item is refused before any criterion's prompt is rendered
    ({"items": [{**ITEM, "answer": "слово " * 2100, "criteria": ["Креативность"]}]}, 400, "items[0]"),
    ({"items": [{**ITEM, "criteria": ["Креативность"]}] * 65}, 400, "items"),
    ({"model": "other-judge", "items": [{**ITEM, "criteria": ["Креативность"]}]}, 404, "model"),
]


@pytest.mark.parametrize(("body", "status", "param"), BAD, ids=[f"{s}-{p}" for _, s, p in BAD])
def test_bad_input_is_a_4xx_naming_the_field(seq2seq_server, body, status, param):
    """Bad input gets a 4xx whose error names the field; the server stays healthy."""
    response = _post(seq2seq_server, "/v1/judge", body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["param"] == param and param in error["message"]


def test_context_overflow_message_has_token_counts(seq2seq_server):
    """A prompt longer than the context is refused with its size, not truncated or crashed on."""
    body = {"items": [{**ITEM, "answer": "слово " * 2100, "criteria": ["Креативность"]}]}
    error = _post(seq2seq_server, "/v1/judge", body).json()["error"]
    assert error["code"] == "context_length_exceeded" and "2048" in error["message"]


def test_not_json_and_too_large_bodies(seq2seq_server):
    """Invalid JSON is a 400 on `body`; a body over max_body_bytes is a 413 (declared or streamed)."""
    headers = {"Authorization": f"Bearer {seq2seq_server.api_key}", "Content-Type": "application/json"}
    response = httpx.post(seq2seq_server.root_url + "/v1/judge", content=b"{not json", headers=headers)
    assert response.status_code == 400 and response.json()["error"]["param"] == "body"
    huge = json.dumps({**ITEM, "criteria": ["Креативность"], "answer": "x" * (9 * 1024 * 1024)}).encode()
    assert httpx.post(seq2seq_server.root_url + "/v1/judge", content=huge, headers=headers).status_code == 413
    chunked = httpx.post(seq2seq_server.root_url + "/v1/chat/completions", content=iter([huge[:5_000_000], huge[5_000_000:]]), headers=headers)
    assert chunked.status_code == 413
    assert httpx.get(seq2seq_server.root_url + "/ready").status_code == 200


# ------------------------------------------------------------------------------------------ /v1/judge


def test_judge_single_item_with_the_openai_sdk(seq2seq_server):
    """One inline item, criterion by name: one result with the contract's fields; a random judge's free text
    is a parse failure with a reason, never a score."""
    body = {**ITEM, "id": "one", "criteria": ["Креативность"], "max_tokens": 8}
    response = _client(seq2seq_server).post("/judge", body=body, cast_to=object)
    assert response["model"] == seq2seq_server.model and response["judge_kind"] == "seq2seq"
    assert response["prompt_version"] == judge.PROMPT_VERSION
    (item,) = response["items"]
    (result,) = item["results"]
    assert item["id"] == "one" and result["criterion"] == "Креативность" and result["criterion_id"] == "creativity"
    assert result["scale"] == [0, 1, 2] and result["usage"]["completion_tokens"] == 8
    assert result["parse_ok"] is False and result["score"] is None and result["score_source"] is None
    assert result["error"] and result["error_reason"]
    assert result["expected_score"] is None and result["regression_score"] is None
    assert response["usage"] == {
        "judgments": 1, "parsed": 0, "prompt_tokens": result["usage"]["prompt_tokens"], "completion_tokens": 8,
        "total_tokens": result["usage"]["prompt_tokens"] + 8,
    }  # fmt: skip


def test_criteria_auto_chooses_the_task_and_expands_its_criteria(seq2seq_server):
    """"criteria": "auto": the server's task classifier picks a leaf task; the item is judged on exactly the
    criteria the choice names (taxonomy ids, in order) and the response says which task, how sure, and why a
    fallback happened. (A server without a classifier refuses "auto" with a 400 naming the field:
    tests/unit/test_serve_judging.py::test_criteria_auto_parses_and_resolves_to_the_choice_criteria — the session's
    regression server cannot show it here, test_serve_regression.py kills its pooling engine on purpose.)"""
    from judge.criteria_auto import TaskChoice, fallback_criteria, leaf_of

    body = {"items": [{**ITEM, "id": "auto", "criteria": "auto"}], "max_tokens": 2}
    response = _post(seq2seq_server, "/v1/judge", body)
    assert response.status_code == 200, response.text
    (item,) = response.json()["items"]
    choice = TaskChoice.from_dict(item["task_choice"])
    assert choice.method == "tfidf" and 0.0 <= choice.probability <= 1.0 and choice.alternatives
    leaf_of(choice.label)  # a leaf of the taxonomy, never an invented one
    if choice.fallback:
        assert choice.criteria == fallback_criteria() and choice.reason
    tax = judge.load_taxonomy()
    assert [r["criterion_id"] for r in item["results"]] == list(choice.criteria)
    assert [r["criterion"] for r in item["results"]] == [tax.criteria[c].name["ru"] for c in choice.criteria]


def test_judge_batch_by_name_custom_rubric_and_task_type(seq2seq_server):
    """A batch mixing taxonomy names, a custom rubric and a task type's criteria set answers every (item,
    criterion) in request order; constrained decoding gives parsed verdicts with a score distribution."""
    tax = judge.load_taxonomy()
    python_set = tax.criteria_for("Code modification", "Python")
    body = {
        "items": [
            {**ITEM, "id": "a", "criteria": ["Креативность", "Creativity", {"name": "Вежливость", "rubrics": "0: грубо\n\n1: вежливо"}]},
            {"id": "b", "instruction": "Исправь код", "answer": "def f():\n    return 1", "task_type": "Code modification", "task_subtype": "Python"},
        ],
        "constrained": True,
    }
    response = _post(seq2seq_server, "/v1/judge", body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert [it["id"] for it in data["items"]] == ["a", "b"]
    first, second = data["items"][0]["results"], data["items"][1]["results"]
    assert [r["criterion_id"] for r in first] == ["creativity", "creativity", None]
    assert [r["criterion_id"] for r in second] == [c.id for c in python_set]
    assert first[2]["criterion"] == "Вежливость" and first[2]["scale"] == [0, 1]
    for result in first + second:
        assert result["parse_ok"] is True, result
        assert result["score_source"] == "verdict" and result["score"] in result["scale"]
        assert result["output"].startswith("[FEEDBACK] ") and result["output"].endswith("[END]")
        assert judge.parse_verdict(result["output"]).score == result["score"]
        probs = {int(k): v for k, v in result["score_probs"].items()}
        assert sorted(probs) == result["scale"] and sum(probs.values()) == pytest.approx(1.0)
        assert result["expected_score"] == pytest.approx(sum(k * v for k, v in probs.items()))
        assert result["confidence"] == pytest.approx(probs[int(result["score"])])
        assert min(result["scale"]) <= result["expected_score"] <= max(result["scale"])
    assert data["usage"]["judgments"] == data["usage"]["parsed"] == 3 + len(python_set)


def test_criteria_of_one_answer_reuse_the_prefix_cache(seq2seq_server):
    """The criteria of one long answer are sent together, so vLLM computes their shared prompt blocks once:
    prefix-cache hits grow by at least (criteria - 1) x the shared full blocks."""
    answer = "Первая строка ответа про осенний лес. " * 60  # ~600 shared tokens: several 128-token blocks
    crits = ["Креативность", "Грамотность", "Полезность", "facts__3"]
    generator = seq2seq_server.engine_url("generator")  # the engine's own counters (server_metric sends its key)
    hits_before = server_metric(generator, "vllm:prefix_cache_hits_total")
    response = _post(seq2seq_server, "/v1/judge", {**ITEM, "answer": answer, "criteria": crits, "max_tokens": 2})
    assert response.status_code == 200
    hits = server_metric(generator, "vllm:prefix_cache_hits_total") - hits_before
    assert hits >= (len(crits) - 1) * 512, hits


def test_32_concurrent_clients_all_accounted_for(seq2seq_server):
    """32 clients at once, each with its own ids: 32 answers, each with exactly its own items, none lost or
    duplicated (the engine finished exactly one request per judgment), and the server is healthy after."""
    generator_url = seq2seq_server.engine_url("generator")
    done_before = server_metric(generator_url, "vllm:request_success_total")

    def one_client(n: int) -> dict:
        client = _client(seq2seq_server)
        body = {
            "items": [
                {**ITEM, "id": f"c{n}-x", "answer": f"Ответ клиента {n}.", "criteria": ["Креативность", "Грамотность"]},
                {**ITEM, "id": f"c{n}-y", "answer": f"Другой ответ {n}.", "criteria": ["Полезность"]},
            ],
            "max_tokens": 4,
        }
        return client.post("/judge", body=body, cast_to=object)

    with ThreadPoolExecutor(max_workers=32) as pool:
        responses = list(pool.map(one_client, range(32)))
    assert len({r["id"] for r in responses}) == 32
    for n, response in enumerate(responses):
        assert [it["id"] for it in response["items"]] == [f"c{n}-x", f"c{n}-y"]
        assert [len(it["results"]) for it in response["items"]] == [2, 1]
        assert [r["criterion"] for r in response["items"][0]["results"]] == ["Креативность", "Грамотность"]
    assert server_metric(generator_url, "vllm:request_success_total") - done_before == 32 * 3
    assert httpx.get(seq2seq_server.root_url + "/ready").status_code == 200


# ------------------------------------------------------------------------------------------ timeouts and shutdown


def test_timeout_then_graceful_shutdown(seq2seq_server, tmp_path):
    """A second judge-serve on the same engine: a request past request_timeout_s gets 504 (not a hang); on
    SIGTERM an in-flight request still completes, the process exits 0, and the engine it attached to lives on.

    The order is forced with the engine frozen (``frozen``): nothing it holds can be answered before the timeout,
    nor before judge-serve has taken its SIGTERM. Two attached judge-serves (seconds each, no engine): the first
    with a 4 s request timeout, the second with the default, so that its frozen request outlives any delay here."""
    engine = seq2seq_server.run_record()["engines"]["generator"]
    generator_url, engine_group = engine["url"], engine["pid"]
    engine_port = int(generator_url.rsplit(":", 1)[1])
    layout_root = seq2seq_server.run_record()["layout"]["root"]
    args = ("--generator-url", generator_url, "--request-timeout-s", "4")
    with start_judge_serve(layout_root, args=args, run_dir=tmp_path / "timeout") as server:
        with frozen(engine_group):
            response = _post(server, "/v1/judge", {**ITEM, "criteria": ["Креативность"]})
        assert response.status_code == 504 and response.json()["error"]["code"] == "timeout"

    # The judgment's three criteria go to the engine at once, one connection each; judge-serve's watcher sends its
    # first /health probe as soon as it is ready (then none for an hour), and that probe, sent to the frozen engine,
    # is a held request ``requests_held_at`` cannot tell from a judgment's. At most one probe is in flight per engine
    # (serve.supervision's probes), so two held requests mean the judgment has reached judge-serve: SIGTERM before
    # that would find it draining, which refuses it.
    args = ("--generator-url", generator_url, "--shutdown-grace-s", "60", "--attached-probe-interval-s", "3600")
    with start_judge_serve(layout_root, args=args, run_dir=tmp_path / "shutdown") as server:
        outcome: dict = {}
        body = {**ITEM, "criteria": ["Креативность", "Грамотность", "Полезность"]}
        thread = threading.Thread(target=lambda: outcome.update(response=_post(server, "/v1/judge", body)))
        with frozen(engine_group):
            thread.start()
            deadline = time.monotonic() + 60
            while requests_held_at(engine_port, from_pid=server.pid) < 2:
                assert time.monotonic() < deadline and thread.is_alive(), f"the request never reached the engine: {outcome}"
                time.sleep(0.02)
            os.kill(server.pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while http_status(server.root_url + "/ready") == 200:  # judge-serve is draining once it is not
                assert time.monotonic() < deadline, "judge-serve still ready after SIGTERM"
                time.sleep(0.02)
            assert not outcome, "answered while the engine was frozen"
        thread.join(timeout=120)
        assert outcome["response"].status_code == 200, outcome["response"].text
        results = outcome["response"].json()["items"][0]["results"]
        assert len(results) == 3 and all(r["usage"]["completion_tokens"] > 0 for r in results)
        assert server.proc.wait(timeout=60) == 0, server.log_tail()
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.root_url + "/health")
    assert httpx.get(seq2seq_server.root_url + "/ready").status_code == 200


def test_the_engine_judge_serve_started_answers_only_judge_serve(seq2seq_server):
    """The vLLM engine judge-serve started refuses a caller without its key (401 on /v1, where vLLM checks it, and
    on the routes vLLM leaves open, SageMaker's /invocations, which generates, among them: serve.engine_auth), so
    a local user who reads its URL from run.json cannot bypass judge-serve's auth; the key is on no command line
    of the engine's processes and in no file judge-serve wrote."""
    engine_url = seq2seq_server.engine_url("generator")
    assert httpx.get(engine_url + "/v1/models", timeout=30).status_code == 401
    assert httpx.get(engine_url + "/v1/models", timeout=30, headers={"Authorization": f"Bearer {ENGINE_KEY}"}).status_code == 200
    completion = {"model": seq2seq_server.model, "prompt": "Оцени ответ.", "max_tokens": 1}
    for path in ("/invocations", "/tokenize"):
        assert httpx.post(engine_url + path, json=completion, timeout=30).status_code == 401, path
    keyed = httpx.post(engine_url + "/invocations", json=completion, timeout=60,
                       headers={"Authorization": f"Bearer {ENGINE_KEY}"})
    assert keyed.status_code == 200 and keyed.json()["usage"]["completion_tokens"] == 1, keyed.text
    assert httpx.get(engine_url + "/health", timeout=30).status_code == 200  # judge-serve's probe: no key
    assert_on_no_command_line(ENGINE_KEY, seq2seq_server.run_record()["engines"]["generator"]["pid"])
    read = []
    for written in seq2seq_server.run_dir.rglob("*"):
        if written.is_file() and written.stat().st_size < 50_000_000:
            assert ENGINE_KEY.encode() not in written.read_bytes(), written
            read.append(written.name)
    assert "run.json" in read, read  # the file that names the engine's URL was among those read


def assert_on_no_command_line(secret: str, pgid: int) -> None:
    """``secret`` is on the command line of no process in the engine's process group ``pgid``. Two at least are read:
    the group's leader, whose command line holds the vLLM server's (so the group read is the engine's), and another
    (the API server or its EngineCore). A process that ends while it is read is left out."""
    command_lines = {}
    for pid in group_members(pgid):
        with contextlib.suppress(OSError):
            command_lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert b"vllm.entrypoints.openai.api_server" in command_lines.get(pgid, b""), command_lines
    assert len(command_lines) >= 2, command_lines
    for pid, command_line in command_lines.items():
        assert secret.encode() not in command_line, pid


def test_a_media_url_in_a_proxied_message_is_refused_and_never_fetched(seq2seq_server):
    """A chat or response message whose content part names a media URL (``image_url``, ``audio_url``,
    ``video_url``, ``input_image``) is passed through as it came, and the text-only judge's engine refuses it (400,
    "not a multimodal model") before it fetches anything: a client cannot make the engine's machine request a URL of
    its choosing (a service on that machine's network) through the judge. A listener on this machine counts what
    reaches it: nothing."""
    import http.server

    fetched: list[str] = []

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            fetched.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    url = f"http://127.0.0.1:{listener.server_address[1]}"
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    try:
        assert httpx.get(url + "/probe", timeout=10).status_code == 404 and fetched == ["/probe"]  # it listens
        fetched.clear()
        parts = [{"type": "image_url", "image_url": {"url": url + "/x.png"}},
                 {"type": "audio_url", "audio_url": {"url": url + "/a.wav"}},
                 {"type": "video_url", "video_url": {"url": url + "/v.mp4"}}]
        for part in parts:
            body = {"model": seq2seq_server.model, "max_tokens": 2,
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "Что здесь?"}, part]}]}
            refused = _post(seq2seq_server, "/v1/chat/completions", body)
            assert refused.status_code == 400 and "multimodal" in refused.json()["error"]["message"], refused.text
        response = {"model": seq2seq_server.model, "max_output_tokens": 2, "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "Что здесь?"}, {"type": "input_image", "image_url": url + "/r.png"}]}]}
        refused = _post(seq2seq_server, "/v1/responses", response)
        assert refused.status_code == 400 and "multimodal" in refused.json()["error"]["message"], refused.text
    finally:
        listener.shutdown()
        listener.server_close()
    assert fetched == []


def test_cpu_worker_in_engine_leaves_the_engine_without_a_worker_process(seq2seq_server):
    """The session's judge-serve runs with ``--cpu-worker-in-engine``: its engine's process group holds vLLM's
    EngineCore and no ``VLLM::Worker`` (the process that setting saves; the default's tree, worker included, is
    pinned in tests/integration/serving/test_serve_faults.py)."""
    titles = process_titles(seq2seq_server.run_record()["engines"]["generator"]["pid"])
    assert any(title.startswith(b"VLLM::EngineCore") for title in titles), titles
    assert not [title for title in titles if title.startswith(b"VLLM::Worker")], titles
