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
"""

from __future__ import annotations

import inspect
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


def pytest_collection_modifyitems(config, items):
    """Mark the slow tier from the fixtures; fail the collection where a test's tier and its work disagree."""
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


# ---------------------------------------------------------------------------------------------- tier times
_TIER_TIMES: dict[str, list[float]] = {"fast": [0, 0.0], "slow": [0, 0.0]}


def pytest_runtest_logreport(report):
    """Add each test's set-up, call and tear-down time to its tier (session fixtures count where they start)."""
    tier = _TIER_TIMES["slow" if "slow" in report.keywords else "fast"]
    tier[1] += report.duration
    if report.when == "call":
        tier[0] += 1


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
