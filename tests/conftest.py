"""Shared pytest configuration: fixture modules are registered here, and the two tiers are derived.

Tiers. ``make test-fast`` (``pytest -m "not slow"``) runs every test that needs no vLLM engine, no Slurm cluster, no
browser and no heavy load (training, DeepSpeed, a sentence-embedding model, the code sandbox); ``make test`` runs
them all. A test is in the slow tier when its fixtures (requested directly or through other fixtures) include one of
:data:`HEAVY_FIXTURES`; ``pytest_collection_modifyitems`` adds the ``slow`` marker then. Collection fails when a
test or a fixture outside the registry reaches one of :data:`HEAVY_HELPERS` (starts an engine, judge-serve or a
Slurm cluster itself) without a heavy fixture in its closure. A test that starts heavy things through code the check
cannot see (``judge-eval`` serving a local checkpoint, a recipe run in the test body) requests ``starts_engine`` or
``heavy_work``. A ``slow`` marker set by hand on a test without a heavy fixture keeps it slow, and the run names it
at the end (the fixture should say it, not the marker).

Workers. ``make test`` runs two xdist workers (``-n 2 --dist loadgroup``, one per core of the machine the budget is
set for), ``make test-fast`` three (its tests wait more than they compute; the Makefile has the figures). Tests that share a heavy session or module fixture (an engine pair, the Slurm
cluster, a trained model, a browser) or a host resource (the sandbox user) are put in one ``xdist_group`` from
their fixtures (:func:`assign_xdist_groups`), so each heavy thing starts once and two sandboxes' tests never run side
by side; a sandbox run from a test outside that group fails it (:func:`pytest_configure`). A fast-tier module fixture
that starts a process its tests share is grouped the same way when listed in :data:`SHARED_PROCESS_FIXTURES`.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shutil
import tempfile
import types

import pytest

pytest_plugins = ["tests.fixtures_models", "tests.fixtures_slurm", "tests.fixtures_serve", "tests.fixtures_train"]

#: Fixtures whose set-up is heavy, with what they start. Requesting one (directly or through another fixture)
#: puts a test in the slow tier. Module fixtures of test files count by name too.
HEAVY_FIXTURES: dict[str, str] = {
    # vLLM engines and judge-serve (tests/fixtures_models.py, tests/fixtures_serve.py)
    "vllm_tiny_server": "a vLLM engine",
    "judge_servers": "two judge-serve instances and their engines",
    "released_regression_server": "judge-serve and two engines on the released -r layout",
    "healing_server": "judge-serve with production engines (tests/test_serve_faults.py)",
    "starts_engine": "the test itself starts a vLLM engine or judge-serve",
    # Slurm
    "slurm_cluster": "a one-host Slurm cluster",
    # browser
    "browser": "a headless chromium",
    # training and other heavy loads (tests/fixtures_train.py and test modules)
    "seq2seq_run": "the seq2seq recipe trained in-process (~60 CPU-s)",
    "regression_run": "the regression recipe trained in-process",
    "classifier_run": "the task-classifier recipe trained in-process (tests/test_train_classifier.py)",
    "qwen3_seq2seq_run": "the seq2seq recipe on a tiny Qwen3 (tests/test_qwen3_judge.py)",
    "grpo_run": "the GRPO recipe (trl GRPOTrainer), two steps on a tiny Qwen3 (tests/test_train_grpo.py)",
    "train_subprocess_env": "torchrun / DeepSpeed subprocesses",
    "minilm_embed": "the MiniLM sentence-embedding model (tests/test_synthetic_dedup.py)",
    # the code sandbox: bubblewrap, fork and memory bombs, 164 canonical solutions (tests/test_mera_*.py)
    "bwrap_sandbox": "the bubblewrap sandbox (tests/test_mera_sandbox.py)",
    "sandbox": "the code sandbox running ruHumanEval solutions (tests/test_mera_humaneval.py)",
    "heavy_work": "the test itself trains, runs DeepSpeed or loads a sentence-embedding model",
}

#: Functions that start an engine, judge-serve or a cluster. A test or fixture that reaches one (through the
#: functions of tests/ it calls) must have a heavy fixture in its closure, or be one of HEAVY_FIXTURES.
HEAVY_HELPERS = frozenset({"start_vllm_server", "start_judge_serve", "_Process", "start_cluster"})

#: Tests marked slow by hand without a heavy fixture, listed at the end of the run.
_HAND_MARKED: list[str] = []


@pytest.fixture
def starts_engine() -> None:
    """Request it in a test that starts a vLLM engine or judge-serve itself: it puts the test in the slow tier."""


@pytest.fixture
def heavy_work() -> None:
    """Request it in a test that trains a model, runs DeepSpeed or loads a sentence-embedding model in its body:
    it puts the test in the slow tier."""


def _helpers_reached(func, seen: set) -> set[str]:
    """Names of HEAVY_HELPERS that ``func`` uses, directly or through the functions of ``tests`` it calls."""
    code = getattr(func, "__code__", None)
    if code is None or func in seen:
        return set()
    seen.add(func)
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(const for const in current.co_consts if isinstance(const, types.CodeType))
    found = names & HEAVY_HELPERS
    for name in names - found:
        called = func.__globals__.get(name)
        if inspect.isfunction(called) and (called.__module__ or "").startswith("tests."):
            found |= _helpers_reached(called, seen)
    return found


@pytest.fixture
def sandbox_user() -> None:
    """Request it in a test that runs code in the ruHumanEval sandbox (eval/mera/sandbox.py) outside the sandbox
    fixtures: every sandbox runs as ``nobody``, whose RLIMIT_NPROC the fork and thread bombs of
    tests/test_mera_sandbox.py fill, so such tests share one xdist worker (:data:`SHARED_RESOURCES`)."""


# ---------------------------------------------------------------------------------------------- xdist groups
#: Fixtures that stand for one thing on the host, used by tests that must not run at the same moment on two xdist
#: workers: every sandbox runs as ``nobody`` and the bombs fill that user's process limit.
SHARED_RESOURCES: dict[str, str] = {name: "sandbox-user" for name in ("bwrap_sandbox", "tight_sandbox", "sandbox",
                                                                     "sandbox_user")}


#: Module fixtures that start a process their module's tests share without being heavy (they stay in their tier):
#: grouped like heavy ones, so the process starts once rather than once per worker.
SHARED_PROCESS_FIXTURES: dict[str, str] = {
    "flood_server": "judge-serve in front of a scripted engine (tests/test_serve_flood.py)",
}


def _resource_keys(item) -> set[str]:
    """What ``item`` must share a worker over: the heavy session fixtures in its closure (set up once per worker, so
    their tests belong together), its heavy and :data:`SHARED_PROCESS_FIXTURES` module fixtures (per module) and the
    host resources it uses."""
    keys = set()
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in getattr(item, "fixturenames", ()):
        if name in SHARED_RESOURCES:
            keys.add(SHARED_RESOURCES[name])
        elif (name in HEAVY_FIXTURES or name in SHARED_PROCESS_FIXTURES) and name in defs:
            scope = defs[name][-1].scope
            if scope == "session":
                keys.add(name)
            elif scope in ("module", "package"):
                keys.add(f"{name}@{item.module.__name__}")
    return keys


def assign_xdist_groups(items) -> None:
    """Put the tests that share a heavy fixture or a host resource in one ``xdist_group`` (connected through any
    fixture they share), so ``pytest -n 2 --dist loadgroup`` starts each engine, cluster or trained model once and
    never runs two sandboxes' tests side by side; every other test goes to whichever worker is free. A fixture
    fetched with ``request.getfixturevalue`` is invisible here (and to the tiers): request heavy ones by name. A
    group is named by the smallest of its keys."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    keyed = []
    for item in items:
        keys = sorted(_resource_keys(item))
        for key in keys:
            find(key)
        for key in keys[1:]:
            parent[find(key)] = find(keys[0])
        if keys:
            keyed.append((item, keys[0]))
    names: dict[str, str] = {}
    for key in list(parent):
        root = find(key)
        names[root] = min(names.get(root, key), key)
    for item, key in keyed:
        item.add_marker(pytest.mark.xdist_group(names[find(key)]))


_VLLM_CACHE: dict[str, str] = {}
_RUNNING: list = []  # the test being run in this process (set up, call, tear-down)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _RUNNING.append(item)
    try:
        return (yield)
    finally:
        _RUNNING.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a judge-serve carries the tails of judge-serve's log and its engines' logs in its
    report: they live in temporary folders that a CI run's clean-up takes, and the cause is usually there (a CI failure
    once had only "engine answered 404" to go on)."""
    report = yield
    if report.failed:
        from tests.fixtures_serve import JudgeServer

        servers = []
        for value in getattr(item, "funcargs", {}).values():
            servers += [v for v in (value.values() if isinstance(value, dict) else [value]) if isinstance(v, JudgeServer)]
        for server in servers:
            for log_file in dict.fromkeys([server.log_path, *sorted(server.run_dir.glob("*.log"))]):
                with contextlib.suppress(OSError):
                    tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-40:])
                    report.sections.append((f"{server.run_dir.name}: {log_file.name} (last 40 lines)", tail))
    return report


def pytest_configure(config):
    """Idle OpenMP threads sleep; one vLLM cache for every engine of the run; refuse a sandbox run from a test
    outside the ``sandbox-user`` group (the check that keeps the group whole)."""
    # The suite keeps more busy processes than cores (two workers, engines, training ranks, each with OpenMP threads),
    # and libgomp's idle threads spin before they sleep: a tiny training run beside another took 27.3-28.5 CPU-s
    # spinning, 22.6-23.1 with PASSIVE, and three test files with engines and training 313-330 against 268-270 CPU-s
    # (docs/performance.md). Set before any torch is loaded here (libgomp reads it once); every child inherits it. The Makefile
    # exports it too, for the demo; a value already in the environment wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller (or a run without xdist); workers inherit it
        # vLLM inspects a model's class in a fresh Python process unless its cache has the answer
        # (vllm/model_executor/models/registry.py, "modelinfos"): a shared cache took a tiny engine's start from
        # 36 s to 27 s here (idle, side by side). Fresh per run, so a run on a fresh machine pays it once.
        os.environ["VLLM_CACHE_ROOT"] = _VLLM_CACHE.setdefault("root", tempfile.mkdtemp(prefix="judge-tests-vllm-"))
    from eval.mera import sandbox as sandbox_module

    def guarded(run):
        def run_in_group(self, job):
            item = _RUNNING[-1] if _RUNNING else None
            if item is not None and not set(getattr(item, "fixturenames", ())) & SHARED_RESOURCES.keys():
                raise pytest.UsageError(f"{item.nodeid} runs code in the sandbox without a sandbox fixture: request "
                                        f"sandbox_user (tests/conftest.py SHARED_RESOURCES)")
            return run(self, job)

        return run_in_group

    sandbox_module.Sandbox._run_bwrap = guarded(sandbox_module.Sandbox._run_bwrap)
    sandbox_module.Sandbox._run_plain = guarded(sandbox_module.Sandbox._run_plain)


def pytest_unconfigure(config):
    if "root" in _VLLM_CACHE:
        shutil.rmtree(_VLLM_CACHE.pop("root"), ignore_errors=True)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """Mark the slow tier from the fixtures; fail the collection where a test's tier and its work disagree; group
    the tests that share a heavy fixture for xdist."""
    assign_xdist_groups(items)
    problems = []
    for item in items:
        heavy = set(getattr(item, "fixturenames", ())) & HEAVY_FIXTURES.keys()
        if heavy:
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("slow") is not None:
            # Still slow (a hand marker can only add), but named at the end of the run: the fixture should say it.
            _HAND_MARKED.append(item.nodeid)
            continue
        if heavy:
            continue
        functions = [getattr(item, "function", None)]
        fixture_info = getattr(item, "_fixtureinfo", None)
        for name, defs in (fixture_info.name2fixturedefs.items() if fixture_info else ()):
            functions.extend(d.func for d in defs)
        for func in functions:
            reached = _helpers_reached(func, set())
            if reached:
                problems.append(f"{item.nodeid}: {getattr(func, '__qualname__', func)} calls {sorted(reached)} but the "
                                f"test has no heavy fixture: request starts_engine, or register the fixture in "
                                f"tests/conftest.py HEAVY_FIXTURES")  # fmt: skip
                break
    if problems:
        raise pytest.UsageError("test tiers (tests/conftest.py):\n  " + "\n  ".join(problems))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Under ``--dist loadgroup`` xdist carries a test's group in its node id ("…@group"): refuse to run when the
    groups were lost (pytest-xdist 3.8 on pytest 9.2, pytest-dev/pytest-xdist#1386), rather than start two Slurm
    clusters or two engine pairs, or run the sandbox bombs beside another sandbox."""
    if not session.config.getoption("loadgroup", default=False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(f"pytest-xdist did not carry the xdist_group of {len(lost)} tests (first: {lost[0]}); "
                                f"see pytest-dev/pytest-xdist#1386 and the pytest pin in pyproject.toml")


# ---------------------------------------------------------------------------------------------- tier times
_TIER_TIMES: dict[str, list[float]] = {"fast": [0, 0.0], "slow": [0, 0.0]}


def pytest_runtest_logreport(report):
    """Add each test's set-up, call and tear-down time to its tier (session fixtures count where they start)."""
    tier = _TIER_TIMES["slow" if "slow" in report.keywords else "fast"]
    tier[1] += report.duration
    if report.when == "call":
        tier[0] += 1


def pytest_sessionfinish(session):
    """An xdist worker hands the tests it found marked by hand to the controller, which prints the summary."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["hand_marked"] = list(_HAND_MARKED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for nodeid in getattr(node, "workeroutput", {}).get("hand_marked", ()):
        if nodeid not in _HAND_MARKED:
            _HAND_MARKED.append(nodeid)


def pytest_terminal_summary(terminalreporter):
    """One line per tier: how many tests ran and the seconds they took, so a slower tier shows in CI's log; then the
    tests marked slow by hand without a heavy fixture."""
    if _HAND_MARKED:
        terminalreporter.section("test tiers: marked slow by hand, no heavy fixture")
        terminalreporter.write_line("request starts_engine or heavy_work (tests/conftest.py) instead of the marker:")
        for nodeid in _HAND_MARKED:
            terminalreporter.write_line(f"  {nodeid}")
    if not any(n for n, _ in _TIER_TIMES.values()):
        return
    terminalreporter.section("tier times")
    for name, (n, seconds) in _TIER_TIMES.items():
        terminalreporter.write_line(f"{name}: {n} tests, {seconds:.1f} s (set-up, call and tear-down)")
