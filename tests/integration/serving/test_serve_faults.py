"""Faults, on real vLLM engines: an engine killed mid-request (clean 503, no orphan, healed), killed past the
restart limit (judge-serve exits non-zero, nothing left), and judge-serve itself stopped by SIGTERM or kill -9
(nothing left). Every server here marks its whole process tree with ``JUDGE_TEST_MARKER`` and the tests count
those processes.

The healing server runs judge-serve's default process tree (a worker process per engine, which the healing test
counts and sees gone). The SIGTERM and kill -9 tests run the model in the EngineCore (``--cpu-worker-in-engine``,
one process start fewer): what they freeze, signal and count is the engine's supervisor, its API server and its
EngineCore, which both trees have.

These servers are this module's own (the session's judge-serve instances are never disturbed). Keep the tests in
file order: the second one ends the first one's server (run alone, it spends that server's one restart itself).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from judge.plumbing.processes import group_members, http_status
from tests.support.fixtures_serve import (MARKER_ENV, JudgeServer, JudgeServeProcess, marked_processes, process_titles,
                                         requests_held_at, wait_until_gone)
from tests.support.process_freezer import stop_processes
from tests.support.slurm_cluster import signal_pending, signal_processes, signal_states

ITEM = {"instruction": "Объясни, почему небо голубое.", "answer": "Из-за рэлеевского рассеяния света.", "reference_answer": "Рассеяние Рэлея."}
#: One restart allowed per hour, the first after 1 s: the first kill heals, the second is past the limit. No /health
#: probes of the engine (``--engine-hang-probes 0``; its death is still seen by its exit and its port): a probe sent
#: to the frozen API server would wait on its port as the judged request does and be taken for it by
#: ``requests_held_at``, and the kill would then come before the request was in flight.
HEALING_ARGS = ("--engine-max-restarts", "1", "--engine-restart-window-s", "3600", "--engine-restart-backoff-s", "1",
                "--engine-stop-grace-s", "20", "--max-tokens", "512", "--engine-hang-probes", "0")  # fmt: skip


def _post(server: JudgeServer, body: dict, timeout: float = 300) -> httpx.Response:
    return httpx.post(server.root_url + "/v1/judge", json=body, headers={"Authorization": f"Bearer {server.api_key}"}, timeout=timeout)


def _engine_main_pid(pgid: int) -> int:
    """The vLLM API server's pid: the engine supervisor's child (the supervisor leads the group)."""
    for pid in group_members(pgid):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == pgid:
            return pid
    raise AssertionError(f"no API server in process group {pgid}")


def _start(model_dir: Path, run_dir: Path, args=(), name: str = "faults", *,
           production_engines: bool = False) -> tuple[JudgeServeProcess, str]:
    """judge-serve with its tree marked; ``production_engines``: the engines' default tree (a worker process each)."""
    marker = f"{name}-{uuid.uuid4().hex[:8]}"
    env = {MARKER_ENV: marker}
    return JudgeServeProcess(model_dir, args, run_dir, env=env, production_engines=production_engines), marker


@pytest.fixture(scope="module")
def healing_server(tiny_causal_dir, tmp_path_factory):
    """judge-serve over the tiny seq2seq judge on the engines' default process tree, allowed one engine restart, its
    tree marked."""
    # The engines' production process tree (a worker process each): what the healing test counts and kills.
    process, marker = _start(tiny_causal_dir, tmp_path_factory.mktemp("serve-healing"), HEALING_ARGS, "healing",
                             production_engines=True)
    try:
        process.wait_ready()
        yield process, marker
    finally:
        process.stop()
        assert wait_until_gone(marker, 60) == []


def test_engine_killed_mid_request_fails_it_cleanly_then_heals(healing_server):
    """kill -9 of the engine's API server while a request is in flight: that request gets one 503 with
    Retry-After (no hang, no answer), the engine's whole old tree is gone, new requests get 503 while it restarts
    and /health says so; then the engine is back, /health counts the restart and its exit code, judging works."""
    process, marker = healing_server
    server = process.server
    before = sorted(marked_processes(marker))
    engine = server.run_record()["engines"]["generator"]
    old_tree = group_members(engine["pid"])
    assert len(old_tree) >= 4, old_tree  # supervisor, API server, EngineCore, the model's worker
    # The marker is what the orphan and healing counts below look for: it must be on the engine's tree too.
    assert set(old_tree) <= set(before), (old_tree, before)
    titles = process_titles(engine["pid"])  # judge-serve's default: vLLM's CPU worker is a process of its own
    assert any(title.startswith(b"VLLM::Worker") for title in titles), titles

    # In flight at the kill, on any machine: the API server is frozen (SIGSTOP; its supervisor is not, so it still
    # takes the tree down) before the request goes out, and killed once the request's bytes wait on its port.
    api_server = _engine_main_pid(engine["pid"])
    engine_port = int(engine["url"].rsplit(":", 1)[1])
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(response=_post(server, {**ITEM, "criteria": ["Креативность"]})))
    os.kill(api_server, signal.SIGSTOP)
    held_before = requests_held_at(engine_port)
    thread.start()
    deadline = time.monotonic() + 120
    while requests_held_at(engine_port) <= held_before:
        assert thread.is_alive() and time.monotonic() < deadline, "the request never reached the engine"
        time.sleep(0.05)
    killed_at = time.monotonic()
    os.kill(api_server, signal.SIGKILL)
    thread.join(timeout=60)
    assert not thread.is_alive(), "the in-flight request hung after its engine died"
    response = outcome["response"]
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "engine_unavailable" and "generator" in response.json()["error"]["message"]
    assert int(response.headers["Retry-After"]) > 0
    print(f"in-flight request answered 503 {time.monotonic() - killed_at:.1f} s after the kill")

    # The old engine's whole tree (EngineCore included) is gone; judge-serve is restarting it.
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{pid}").exists() and pid in marked_processes(marker) for pid in old_tree):
        assert time.monotonic() < deadline, f"orphans of the killed engine: {set(old_tree) & set(marked_processes(marker))}"
        time.sleep(0.2)
    print(f"old engine tree ({len(old_tree)} processes) gone {time.monotonic() - killed_at:.1f} s after the kill")
    # /health says "restarting" from the moment the healing begins; the exit code is recorded once the dead engine's
    # supervisor is reaped (an API server seen dead at its port first), and the restart then lasts at least its 1 s
    # backoff plus the engine's load: the window the checks below run in. Waited for both, so neither order of the
    # two is a failure; a state that never turns "restarting" fails here rather than leaving the checks unrun.
    deadline = time.monotonic() + 30  # the watcher looks every 0.5 s

    def generator_health() -> dict:
        return httpx.get(server.root_url + "/health", headers={"Authorization": f"Bearer {server.api_key}"}).json()

    while ((health := generator_health())["engines"]["generator"]["state"] != "restarting"
           or health["engines"]["generator"]["last_exit"] is None):
        assert time.monotonic() < deadline, health
        time.sleep(0.2)
    assert health["engines"]["generator"]["last_exit"] == -signal.SIGKILL
    assert health["status"] == "restarting"
    refused = _post(server, {**ITEM, "criteria": ["Креативность"]}, timeout=30)
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) > 0, refused.text
    assert "restarting" in refused.json()["error"]["message"]
    # A broken body is still the client's error while the engine is away: 400 naming the field, never 503.
    broken = _post(server, {**ITEM, "criteria": ["Креативность"], "max_tokens": "many"}, timeout=30)
    assert broken.status_code == 400 and broken.json()["error"]["param"] == "max_tokens", broken.text
    assert httpx.get(server.root_url + "/ready").status_code == 503

    process.wait_ready()
    print(f"healed: /ready 200 again {time.monotonic() - killed_at:.1f} s after the kill")
    health = httpx.get(server.root_url + "/health", headers={"Authorization": f"Bearer {server.api_key}"}).json()
    assert health["status"] == "ready"
    # No pid on /health (the key opens judging, not the machine's processes): run.json has it, checked below.
    assert health["engines"]["generator"] == {"state": "up", "restarts": 1, "last_exit": -signal.SIGKILL}
    assert server.run_record()["engines"]["generator"]["pid"] != engine["pid"]
    answer = _post(server, {**ITEM, "criteria": ["Креативность"], "max_tokens": 16})
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["items"][0]["results"]) == 1
    after = marked_processes(marker)
    print(f"marked processes: {len(before)} before the kill, {len(after)} after healing")
    assert len(after) == len(before)


def test_past_the_restart_limit_judge_serve_exits_non_zero_and_leaves_nothing(healing_server):
    """A second engine death within the window (engine_max_restarts=1): judge-serve stops, exits 1, and no
    process of its tree is left.

    The test before it spends the one restart allowed; run alone (``-k``), this test spends it first."""
    process, marker = healing_server
    def generator_health() -> dict:
        headers = {"Authorization": f"Bearer {process.server.api_key}"}
        return httpx.get(process.server.root_url + "/health", headers=headers).json()["engines"]["generator"]

    if generator_health()["last_exit"] is None:
        os.kill(_engine_main_pid(process.server.run_record()["engines"]["generator"]["pid"]), signal.SIGKILL)
        deadline = time.monotonic() + 30  # the watcher looks every 0.5 s
        while generator_health()["last_exit"] is None:
            assert time.monotonic() < deadline, "judge-serve never saw its engine die"
            time.sleep(0.2)
        process.wait_ready()
    assert generator_health()["restarts"] == 1
    engine = process.server.run_record()["engines"]["generator"]
    os.kill(_engine_main_pid(engine["pid"]), signal.SIGKILL)
    killed_at = time.monotonic()
    assert process.proc.wait(timeout=120) == 1, process.server.log_tail()
    assert "engine_max_restarts=1 reached" in process.server.log_path.read_text(errors="replace")
    assert wait_until_gone(marker, 60) == []
    print(f"judge-serve exited 1 and its tree was gone {time.monotonic() - killed_at:.1f} s after the second kill")


def _is_engine_core(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"VLLM::EngineCore")
    except OSError:
        return False


def _wait_engine_core(marker: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if any(_is_engine_core(pid) for pid in marked_processes(marker)):
            return
        assert time.monotonic() < deadline, "no VLLM::EngineCore process appeared"
        time.sleep(0.5)


def test_judge_serve_sigterm_while_its_engine_loads_leaves_nothing(tiny_causal_dir, tmp_path):
    """SIGTERM to judge-serve while its engine's EngineCore is loading: it exits 0 and leaves no process.

    Mid-load on any machine: once the EngineCore exists, the engine's processes are frozen (SIGSTOP; their
    supervisor, the group's leader, is not), so the engine cannot come up. judge-serve gets SIGTERM, and the engine is
    thawed only once the supervisor's stop signal is pending in the API server and the EngineCore (SIGINT:
    judge-serve's engines are shielded from SIGTERM, ``judge.plumbing.processes``; multiprocessing's resource tracker,
    frozen too, ignores it): they take it where the load stood, with none of the grace spent."""
    process, marker = _start(tiny_causal_dir, tmp_path, name="sigterm")
    frozen: list[int] = []
    try:
        _wait_engine_core(marker)
        (supervisor,) = process.engine_pgids()
        # Until no new member appears: a process the engine started while the first ones were being frozen. Each is
        # stopped before the next step (stop_processes): one still to act on its SIGSTOP would take the SIGINT first.
        while new := [pid for pid in group_members(supervisor) if pid != supervisor and pid not in frozen]:
            frozen += stop_processes(new)
        assert http_status(process.server.root_url + "/ready") != 200, "the engine was up before it was frozen"
        loading = [_engine_main_pid(supervisor), *(pid for pid in frozen if _is_engine_core(pid))]
        assert len(loading) == 2 and set(loading) <= set(frozen), (loading, frozen)
        n = len(marked_processes(marker))
        assert {supervisor, *frozen} <= set(marked_processes(marker)), "the engine's tree is not marked"
        os.kill(process.server.pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while len(signal_pending(loading, signal.SIGINT)) < len(loading):
            assert time.monotonic() < deadline, f"the engine's stop signal never reached its frozen processes {loading}"
            time.sleep(0.05)
        signal_processes(frozen, signal.SIGCONT)
        frozen = []
        assert process.proc.wait(timeout=120) == 0, process.server.log_tail()
        assert wait_until_gone(marker, 60) == []
        print(f"judge-serve SIGTERM during load: {n} marked processes before, 0 after")
    finally:
        signal_processes(frozen, signal.SIGCONT)
        process.stop()


def test_judge_serve_kill_9_leaves_nothing(tiny_causal_dir, tmp_path):
    """kill -9 of a ready judge-serve whose engine cannot finish its shutdown: the kernel's parent-death signal
    reaches the engine's supervisor, which passes its stop signal on, and no process is left.

    The engine's processes are frozen (SIGSTOP; their supervisor is not) before the kill, so on any machine their
    shutdown outlasts the grace of the supervisor this test runs judge-serve under (``ORPHAN_GRACE_S``), which then
    SIGKILLs the engine's supervisor while its own, longer grace (``engine_stop_grace_s``) still runs: a loaded
    machine's slow vLLM shutdown, made certain. That outer supervisor must end the engine's process group too. It
    is frozen as well until the engine's stop signal is pending, so that signal is passed on before its grace starts."""
    process, marker = _start(tiny_causal_dir, tmp_path, name="kill9")
    frozen: list[int] = []
    try:
        process.wait_ready()
        (supervisor,) = process.engine_pgids()
        # Stopped, not only sent SIGSTOP (stop_processes): a process still to act on it when the SIGINT came would
        # take the SIGINT first (the kernel hands out the lowest-numbered signal first) and never hold it pending.
        while new := [pid for pid in group_members(supervisor) if pid != supervisor and pid not in frozen]:
            frozen += stop_processes(new)
        stopping = [_engine_main_pid(supervisor), *(pid for pid in frozen if _is_engine_core(pid))]
        assert len(stopping) == 2 and set(stopping) <= set(frozen), (stopping, frozen)
        outer = stop_processes([process.managed.pid])
        n = len(marked_processes(marker))
        # What wait_until_gone counts below: the engine's tree among it, or "nothing left" would not look at it.
        assert {supervisor, *frozen} <= set(marked_processes(marker)), "the engine's tree is not marked"
        killed_at = time.monotonic()
        os.kill(process.server.pid, signal.SIGKILL)
        # SIGINT: judge-serve's engines are shielded from SIGTERM (judge.plumbing.processes); multiprocessing's
        # resource tracker ignores it, so only the API server and the EngineCore can hold it pending.
        deadline = time.monotonic() + 60
        while len(signal_pending(stopping, signal.SIGINT)) < len(stopping):
            assert time.monotonic() < deadline, (
                f"the engine's stop signal never reached its frozen processes {stopping}; the engine's supervisor, "
                f"then its frozen processes:\n{signal_states([supervisor, *frozen])}\nthe outer supervisor (frozen) "
                f"and this test's process:\n{signal_states([*outer, os.getpid()])}\n{process.logs()}")
            time.sleep(0.05)
        signal_processes(outer, signal.SIGCONT)
        assert wait_until_gone(marker, 90) == []
        print(f"judge-serve kill -9: {n} marked processes before, 0 after {time.monotonic() - killed_at:.1f} s")
    finally:
        signal_processes([*frozen, process.managed.pid], signal.SIGCONT)
        process.stop()
