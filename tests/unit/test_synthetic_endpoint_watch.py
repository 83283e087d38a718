"""The synthetic-data stages stop on an endpoint they cannot use (``train.synthetic.client.EndpointWatch``), exit 4:
nothing listening, a refused key, or requests failing in a row after their retries. Before, each job paid its full
backoff and the stage exited 0 with every request failed."""

from __future__ import annotations

import json
import socket
import threading

from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

RUBRICS = "0: много ошибок\n\n1: есть ошибки\n\n2: ошибок нет"


def _records(tmp_path, n: int):
    path = tmp_path / "records.jsonl"
    rows = [{"id": f"r{i}", "instruction": f"Исправьте: «раз {i}»", "answer": "раз", "expert_scores": [2],
             "reference_answer": "", "criteria_name": "Грамотность", "rubrics": RUBRICS, "task_type": "Editing"}
            for i in range(n)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _traces(tmp_path, base_url: str, n_items: int, samples: int = 1, concurrency: int = 1, **teacher) -> list[str]:
    config = tmp_path / "traces.yaml"
    config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": base_url, "max_tokens": 64, **teacher},
                                  "samples_per_item": samples, "concurrency": concurrency, "max_retries": 0,
                                  "backoff_s": 0.0}))
    return ["traces", "--config", str(config), "--input", str(_records(tmp_path, n_items)),
            "--output", str(tmp_path / "out")]


def _journal(tmp_path) -> list[dict]:
    path = tmp_path / "out" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answer(path: str, body: dict):
    return 200, chat_completion("<think>Ошибок нет.</think>2", body["model"])


def test_nothing_listening_stops_the_stage_before_a_job_is_sent(tmp_path, capsys):
    from train.synthetic.cli import main

    url = f"http://127.0.0.1:{_free_port()}/v1"
    assert main(_traces(tmp_path, url, n_items=3, samples=2, concurrency=2)) == 4
    err = capsys.readouterr().err
    assert f"error: the teacher teacher at {url} cannot be reached (ConnectError" in err
    assert "Traceback" not in err and "requests failed" not in err
    assert _journal(tmp_path) == []  # no job was run: nothing to ask again, nothing half-written


def test_a_refused_key_is_said_once_naming_its_variable(tmp_path, capsys, monkeypatch):
    from train.synthetic.cli import main

    monkeypatch.setenv("TEACHER_KEY", "wrong")
    with ScriptedEndpoint(_answer, model="teacher", respond_get=lambda path: (401, {"error": {"message": "bad key"}})
                          ) as server:
        assert main(_traces(tmp_path, server.base_url, n_items=2, api_key_env="TEACHER_KEY")) == 4
        assert server.requests == [] and server.gets == ["/v1/models"]
        assert server.headers[0]["authorization"] == "Bearer wrong"
    assert "refused the key from $TEACHER_KEY (HTTP 401: bad key)" in capsys.readouterr().err


def test_requests_failing_in_a_row_stop_the_stage_and_a_rerun_resumes(tmp_path, capsys):
    """Concurrency 2 stops after 4 (``stop_after``): at most one more request, already in flight, is sent; every one
    sent is journalled as failed, and the rerun against a server that answers asks all of them."""
    from train.synthetic.cli import main

    down = lambda path, body: (503, {"error": {"message": "overloaded"}})  # noqa: E731
    with ScriptedEndpoint(down, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=6, samples=2, concurrency=2)) == 4
        sent = len(server.requests)
    err = capsys.readouterr().err
    assert 4 <= sent <= 5
    assert f"error: the teacher teacher at {server.base_url} failed 4 requests in a row" in err
    assert "last HTTP 503: overloaded" in err and "a rerun into the same --output asks them" in err
    rows = _journal(tmp_path)
    assert len(rows) == sent and not any(row["ok"] for row in rows)

    with ScriptedEndpoint(_answer, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=6, samples=2, concurrency=2)) == 0
        assert len(server.requests) == 12  # the failed ones and those never sent
    assert "kept 6" in capsys.readouterr().out  # the two samples of an item answer alike: one kept per item


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


def test_a_server_without_a_model_list_is_asked_and_a_missing_model_is_warned_of(tmp_path, capsys):
    from train.synthetic.cli import main

    with ScriptedEndpoint(_answer, model="teacher", respond_get=lambda path: (404, {"detail": "Not Found"})) as server:
        assert main(_traces(tmp_path, server.base_url, n_items=2)) == 0
        assert len(server.requests) == 2 and server.gets == ["/v1/models"]  # asked once, not per request
    assert "does not list" not in capsys.readouterr().err

    (tmp_path / "b").mkdir()
    with ScriptedEndpoint(_answer, model="another") as server:
        assert main(_traces(tmp_path / "b", server.base_url, n_items=2)) == 0
    assert "the teacher teacher at" in (err := capsys.readouterr().err) and \
        "does not list the model 'teacher' (it lists another)" in err


def test_a_finished_journal_is_read_again_with_the_endpoint_down(tmp_path, capsys):
    """A rerun that only retunes what is kept sends nothing, so it checks nothing: no endpoint needed."""
    from train.synthetic.cli import main

    with ScriptedEndpoint(_answer, model="teacher") as server:
        assert main(_traces(tmp_path, server.base_url, n_items=2)) == 0
    capsys.readouterr()
    argv = _traces(tmp_path, f"http://127.0.0.1:{_free_port()}/v1", n_items=2) + ["--tolerance", "1"]
    assert main(argv) == 0
    assert "kept 2" in capsys.readouterr().out
