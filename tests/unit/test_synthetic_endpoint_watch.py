"""The synthetic-data stages stop asking an endpoint they cannot use (``train.synthetic.client.EndpointWatch``) and
end with exit 4: nothing listening, a server still failing at the first contact, or requests failing in a row after
their retries, not each job paying its full backoff and the stage exiting 0 with every request failed. An endpoint
that answers its requests is never refused for what its model list says."""

from __future__ import annotations

import json
import socket
import threading

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"


def _records(folder, n: int):
    path = folder / "records.jsonl"
    rows = [{"id": f"r{i}", "instruction": f"Исправьте: «раз {i}»", "answer": "раз", "expert_scores": [2],
             "reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
            for i in range(n)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _traces(folder, base_url: str, n_items: int, samples: int = 1, concurrency: int = 1, **teacher) -> list[str]:
    config = folder / "traces.yaml"
    config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": base_url, "max_tokens": 64, **teacher},
                                  "samples_per_item": samples, "concurrency": concurrency, "max_retries": 0,
                                  "backoff_s": 0.0}))
    return ["traces", "--config", str(config), "--input", str(_records(folder, n_items)),
            "--output", str(folder / "out")]


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answer(path: str, body: dict):
    return 200, chat_completion("<think>Ошибок нет, всё верно.</think>2", body["model"])


def test_nothing_listening_sends_no_job_and_ends_with_exit_4(tmp_path, capsys):
    """Every job fails unsent; the warning says so ("6 requests failed (the endpoint never answered them" was said of
    requests no endpoint ever saw), and summary.json counts them as requests_not_sent."""
    from train.synthetic.cli import main

    url = f"http://127.0.0.1:{_free_port()}/v1"
    assert main(_traces(tmp_path, url, n_items=3, samples=2, concurrency=2)) == 4
    captured = capsys.readouterr()
    said = f"error: the teacher teacher at {url} cannot be reached (ConnectError"
    assert said in captured.err and captured.err.count(said) == 1 and "Traceback" not in captured.err
    assert ("judge-train data traces: warning: 6 requests were not sent (their endpoint was stopped first: the error "
            "below says why): rerun with the same --output to ask them again\n") in captured.err
    assert "requests failed" not in captured.err
    assert "failed 6 (request_failed 6)" in captured.out  # the stage's outputs and summary are written all the same
    rows = _rows(tmp_path / "out" / "journal.jsonl")
    assert len(rows) == 6 and all(not row["ok"] and row["attempts"] == 0 for row in rows)
    assert all(row["error"].startswith(f"not sent: the teacher teacher at {url} cannot be reached") for row in rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert len(summary["endpoints_unusable"]) == 1 and "cannot be reached" in summary["endpoints_unusable"][0]
    assert summary["requests_not_sent"] == 6


def test_a_server_still_failing_at_its_first_contact_is_asked_nothing(tmp_path, capsys):
    from train.synthetic.cli import main

    with ScriptedEndpoint(_answer, model="teacher", respond_get=lambda path: (503, {"error": {"message": "loading"}})
                          ) as server:
        assert main(_traces(tmp_path, server.base_url, n_items=2)) == 4
        assert server.requests == [] and server.gets == ["/v1/models"]
    assert "still answers HTTP 503 (loading)" in capsys.readouterr().err


def test_a_model_list_the_endpoint_refuses_or_shapes_otherwise_does_not_stop_its_requests(tmp_path, capsys,
                                                                                           monkeypatch):
    """A key may chat without the right to list models (401), a provider may answer its list as a bare array, a
    proxy may have none (404): the requests decide. The first two are said; a list without the model is too."""
    from train.synthetic.cli import main

    monkeypatch.setenv("TEACHER_KEY", "chat-only")
    answers = {"refused": (401, {"error": {"message": "missing scope api.model.read"}}), "array": (200, []),
               "none": (404, {"detail": "Not Found"})}
    for name, answer in answers.items():
        (tmp_path / name).mkdir()
        with ScriptedEndpoint(_answer, model="teacher", respond_get=lambda path, a=answer: a) as server:
            assert main(_traces(tmp_path / name, server.base_url, n_items=2, api_key_env="TEACHER_KEY")) == 0
            assert len(server.requests) == 2 and server.gets == ["/v1/models"]  # asked once, not per request
            assert all(h["authorization"] == "Bearer chat-only" for h in server.headers)
        err = capsys.readouterr().err
        assert ("asking it all the same" in err) == (name != "none")
    (tmp_path / "other").mkdir()
    with ScriptedEndpoint(_answer, model="another") as server:
        assert main(_traces(tmp_path / "other", server.base_url, n_items=2)) == 0
    assert "does not list the model 'teacher' (it lists another)" in capsys.readouterr().err


def test_a_key_refused_its_list_and_its_first_request_stops_the_endpoint(tmp_path, capsys, monkeypatch):
    """A wrong key: refused the model list, then refused its first request with the same status. A refusal is no
    outage the streak counts, so every job was sent and refused, and the stage exited 0."""
    from train.synthetic.cli import main

    monkeypatch.setenv("TEACHER_KEY", "wrong")
    refuse = lambda *a: (401, {"error": {"message": "invalid api key"}})  # noqa: E731
    with ScriptedEndpoint(refuse, model="teacher", respond_get=refuse) as server:
        assert main(_traces(tmp_path, server.base_url, n_items=6, samples=2, api_key_env="TEACHER_KEY")) == 4
        assert len(server.requests) == 1
    err = capsys.readouterr().err
    assert (f"error: the teacher teacher at {server.base_url} refused the key from $TEACHER_KEY (HTTP 401: invalid "
            "api key), and so did its first request (AuthenticationError: Error code: 401") in err
    assert sum(row["error"].startswith("not sent: ") for row in _rows(tmp_path / "out" / "journal.jsonl")) == 11


def test_requests_failing_in_a_row_stop_the_endpoint_and_a_rerun_resumes(tmp_path, capsys):
    """Concurrency 2 stops after 4 (``stop_after``): at most one more request, already in flight, is sent; every job
    is journalled, the ones not sent as failed, and the rerun against a server that answers asks all of them."""
    from train.synthetic.cli import main

    down = lambda path, body: (503, {"error": {"message": "overloaded"}})  # noqa: E731
    with ScriptedEndpoint(down, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=6, samples=2, concurrency=2)) == 4
        sent = len(server.requests)
    err = capsys.readouterr().err
    assert 4 <= sent <= 5
    assert (f"error: the teacher teacher at {server.base_url} failed 4 requests in a row, each without a retry "
            "(none are allowed), with no answer between: last HTTP 503: overloaded") in err
    # the sent ones failed, the rest were held back: the warning counts each as what it was
    assert (f"warning: {sent} requests failed (the endpoint never answered them: teacher at {server.base_url}; see "
            f"failed/dropped rows' errors) and {12 - sent} were not sent (their endpoint was stopped first: the "
            "error below says why): rerun with the same --output to ask them again\n") in err
    rows = _rows(tmp_path / "out" / "journal.jsonl")
    assert len(rows) == 12 and not any(row["ok"] for row in rows)
    assert sum(row["error"].startswith("not sent: ") for row in rows) == 12 - sent

    with ScriptedEndpoint(_answer, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=6, samples=2, concurrency=2)) == 0
        assert len(server.requests) == 12  # every failed job, sent or not
    captured = capsys.readouterr()
    assert "kept 6" in captured.out  # the two samples of an item answer alike: one kept per item
    rows = _rows(tmp_path / "out" / "journal.jsonl")  # the failed attempts are replaced, not kept beside the answers
    assert len(rows) == 12 and all(row["ok"] for row in rows)
    assert "journal.jsonl: 12 rows of earlier attempts at jobs asked again are dropped from it" in captured.err


def test_reruns_against_an_endpoint_still_down_do_not_grow_the_journal(tmp_path, capsys):
    """Each rerun while the endpoint stays down journals every job again as not sent; the file keeps one row per job,
    the newest."""
    from train.synthetic.cli import main

    url = f"http://127.0.0.1:{_free_port()}/v1"
    sizes = []
    for _ in range(3):
        assert main(_traces(tmp_path, url, n_items=3, samples=2, concurrency=2)) == 4
        rows = _rows(tmp_path / "out" / "journal.jsonl")
        sizes.append(len(rows))
        assert len({row["key"] for row in rows}) == len(rows)
    assert sizes == [6, 6, 6]
    assert capsys.readouterr().err.count("6 rows of earlier attempts at jobs asked again are dropped") == 2


def test_the_samples_of_one_teacher_share_one_watch(tmp_path, capsys):
    """A seeded teacher is asked through a client per sample: one first contact, and one streak across them."""
    from train.synthetic.cli import main

    down = lambda path, body: (500, {"error": {"message": "broken"}})  # noqa: E731
    with ScriptedEndpoint(down, model="teacher") as server:
        argv = _traces(tmp_path, server.base_url, n_items=3, samples=3, extra_body={"seed": 0})
        assert main(argv) == 4
        assert server.gets == ["/v1/models"]
        assert sorted(body["seed"] for _, body in server.requests) == [0, 1, 2]  # stop_after(1) is 3
    assert "failed 3 requests in a row" in capsys.readouterr().err


def test_failures_between_answers_never_stop_the_stage(tmp_path, capsys):
    """Two failures in a row at concurrency 1 (``stop_after(1)`` is 3), then an answer, over and over."""
    from train.synthetic.cli import main

    lock, calls = threading.Lock(), [0]

    def flaky(path: str, body: dict):
        with lock:
            calls[0] += 1
            fail = calls[0] % 3 != 0
        return (500, {"error": {"message": "hiccup"}}) if fail else _answer(path, body)

    with ScriptedEndpoint(flaky, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=9)) == 0
        assert len(server.requests) == 9
    assert "warning: 6 requests failed" in capsys.readouterr().err


def test_one_endpoint_gone_leaves_the_others_answering(tmp_path, capsys):
    """Two answer models, one with nothing listening: the other answers every job it is given, the gone one's are
    journalled as not sent, and the stage ends with exit 4 naming it."""
    from train.synthetic.cli import main

    rows = [{"id": f"ins-{i}", "instruction": f"Вопрос {i}?", "task_type": "Editing"} for i in range(4)]
    (tmp_path / "dedup").mkdir()
    (tmp_path / "dedup" / "dedup.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    gone = f"http://127.0.0.1:{_free_port()}/v1"
    with ScriptedEndpoint(lambda path, body: (200, chat_completion("Ответ.", body["model"])), model="up") as server:
        config = tmp_path / "answers.yaml"
        config.write_text(json.dumps({"answer_models": [{"model": "up", "base_url": server.base_url},
                                                        {"model": "gone", "base_url": gone}],
                                      "answers_per_instruction": 2, "max_retries": 0, "backoff_s": 0.0}))
        code = main(["answers", "--config", str(config), "--input", str(tmp_path / "dedup"),
                     "--output", str(tmp_path / "out")])
        assert code == 4 and len(server.requests) == 4
    assert f"error: the answer model gone at {gone} cannot be reached" in capsys.readouterr().err
    kept = _rows(tmp_path / "out" / "answers.jsonl")
    assert sorted(r["model_id"] for r in kept) == ["up"] * 4


def test_a_finished_journal_is_read_again_with_the_endpoint_down(tmp_path, capsys):
    """A rerun that only retunes what is kept sends nothing, so it checks nothing: no endpoint needed."""
    from train.synthetic.cli import main

    with ScriptedEndpoint(_answer, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=2)) == 0
    capsys.readouterr()
    argv = _traces(tmp_path, f"http://127.0.0.1:{_free_port()}/v1", n_items=2) + ["--tolerance", "1"]
    assert main(argv) == 0
    assert "kept 2" in capsys.readouterr().out


def test_dedup_says_its_checker_is_gone_before_it_embeds(tmp_path, monkeypatch, capsys):
    """Dedup embeds every instruction before its first borderline pair reaches the LLM check, which took minutes on
    the paper's embedding model before the run learned its checker was not there. Now the checker is probed first:
    the warning comes before the embedder loads. The probe stops nothing: a checker that came up during the
    embedding answers every pair, one still gone has the new pairs held back (exit 4 by the summary), and a rerun
    whose journal answers every pair needs no checker."""
    import numpy as np

    import train.synthetic.dedup as dedup
    from tests.unit.test_synthetic_dedup import _CHAIN, _REF_ROWS, _REFERENCE, _cosine_only, _row

    said_before_embedding: list[str] = []
    comes_up: list[int] = []  # a port a checker starts on while the embedder loads (one still loading its weights)
    started: list[ScriptedEndpoint] = []

    class TableModel:
        def encode(self, texts, **kwargs):
            return np.stack([{**_REFERENCE, **_CHAIN}[t] for t in texts])

    def load_embedder(*args, **kwargs):
        said_before_embedding.append(capsys.readouterr().err)
        if comes_up:
            started.append(ScriptedEndpoint(lambda path, body: (200, chat_completion("DIFFERENT", body["model"])),
                                            model="checker", port=comes_up[0]))
        return TableModel()

    monkeypatch.setattr(dedup, "load_embedder", load_embedder)
    (tmp_path / "instructions.jsonl").write_text("".join(json.dumps(_row(k, k)) + "\n" for k in "abc"))
    (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _REF_ROWS))

    def run(base_url: str, out) -> dict:
        config = _cosine_only(llm={"model": "checker", "base_url": base_url, "temperature": 0.0}, max_retries=0,
                              backoff_s=0.0)
        config.reference = str(tmp_path / "reference.jsonl")
        return dedup.run_dedup(config, tmp_path / "instructions.jsonl", out)

    port = _free_port()
    gone = f"http://127.0.0.1:{port}/v1"
    warned = f"warning: the LLM check checker at {gone} cannot be reached (ConnectError"

    # still gone at the first pair: every pair held back, the checker named in the summary
    summary = run(gone, tmp_path / "gone")
    assert warned in said_before_embedding[0]
    assert "Dedup embeds the instructions all the same" in said_before_embedding[0]
    assert summary["endpoints_unusable"][0].startswith(f"the LLM check checker at {gone} cannot be reached")
    journal = _rows(tmp_path / "gone" / "llm_checks.jsonl")
    # a, b and c all kept unconfirmed, so a second wave asks b-c (and holds it back too)
    assert sorted(r["key"] for r in journal) == ["a|b", "a|c", "b|c"]
    assert all(r["error"].startswith("not sent") for r in journal)
    assert summary["llm_check_failed_requests"] == 3 and summary["llm_check_requests"]["sent"] == 0

    # up by the time the embedding is done: the warning, then every pair asked and answered
    comes_up.append(port)
    try:
        summary = run(gone, tmp_path / "late")
    finally:
        for server in started:
            server.close()
    assert warned in said_before_embedding[-1] and len(started[0].requests) == 3
    assert "endpoints_unusable" not in summary and summary["llm_check_failed_requests"] == 0
    comes_up.clear()

    summary = run(gone, tmp_path / "late")  # everything journalled: the warning, and nothing asked
    assert warned in said_before_embedding[-1]
    assert "endpoints_unusable" not in summary and summary["llm_check_requests"]["sent"] == 0
    kept = [json.loads(line)["id"] for line in (tmp_path / "late" / "dedup.jsonl").read_text().splitlines()]
    assert kept == ["a", "b", "c"]
