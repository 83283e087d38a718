"""Shared pytest configuration: the fixture modules, the two tiers (a folder each) and the xdist groups.

Tiers. ``tests/unit/`` holds the tests that need no vLLM engine, Slurm cluster, browser, DeepSpeed,
sentence-embedding model or training of a real model; ``make test-fast`` runs that folder. Some do start real
processes on stand-ins: a judge-serve in front of scripted engines (``python -m serve.cli``,
``tests/unit/test_serve_flood.py``), transformers' Trainer for two CPU steps of a tiny regressor
(``tests/unit/test_train_lifecycle_checkpoints.py``), and the code sandbox, bubblewrap included, on a few samples at a
time (a few seconds: docs/testing.md); the sandbox's heavy loads (fork and memory bombs, the 164 canonical solutions)
need fixtures of :data:`HEAVY_FIXTURES`. ``tests/integration/`` holds the
others; ``make test`` runs both. Every test under ``tests/integration/`` gets the ``slow`` marker, so ``-m "not slow"``
still selects the quick loop. A test under ``tests/unit/`` that requests one of
:data:`HEAVY_FIXTURES`, or is marked ``slow`` by hand, fails the collection: it belongs in ``tests/integration/``.
The heavy fixtures are defined in ``tests/integration/conftest.py``, so only that folder sees them; what the two
folders share (light fixtures, tiny released layouts, scripted endpoints) is in ``tests/support/``.

Workers. ``make test`` runs two xdist workers (``-n 2 --dist loadgroup``, one per core of the machine the budget is
set for), ``make test-fast`` three (its tests wait more than they compute; the Makefile has the figures). Tests
that share a heavy fixture run on one worker, so each engine pair, cluster or trained model starts once: a session
fixture's group is its entry in :data:`XDIST_GROUPS`, a module fixture's is its module. A test whose fixtures name
two groups fails the collection (put those fixtures in one group).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.fixtures_models", "tests.support.fixtures_serve",
                  "tests.support.fixtures_train",
                  # fixtures that a subject's unit and integration tests both use
                  "tests.support.eval_cli", "tests.support.eval_ranking", "tests.support.mera_humaneval",
                  "tests.support.report_html", "tests.support.serve_released_data"]

INTEGRATION = Path(__file__).resolve().parent / "integration"

#: Fixtures whose set-up is heavy, with what they start: only tests under tests/integration/ may request them.
HEAVY_FIXTURES: dict[str, str] = {
    # vLLM engines and judge-serve (tests/integration/conftest.py)
    "vllm_tiny_server": "a vLLM engine",
    "judge_servers": "two judge-serve instances and their engines",
    "released_regression_server": "judge-serve and two engines on the released -r layout",
    "healing_server": "judge-serve with production engines (tests/integration/serving/test_serve_faults.py)",
    # Slurm
    "slurm_cluster": "a one-host Slurm cluster",
    # browser
    "browser": "a headless chromium",
    # training and other heavy loads (tests/integration/conftest.py and test modules)
    "seq2seq_run": "the seq2seq recipe trained in-process (~60 CPU-s)",
    "regression_run": "the regression recipe trained in-process",
    "classifier_run": "the task-classifier recipe trained in-process (tests/integration/training/test_train_classifier.py)",
    "qwen3_seq2seq_run": "the seq2seq recipe on a tiny Qwen3 (tests/integration/training/test_qwen3_judge.py)",
    "grpo_run": "the GRPO recipe (trl GRPOTrainer), two steps on a tiny Qwen3 (tests/integration/training/test_train_grpo.py)",
    "train_subprocess_env": "torchrun / DeepSpeed subprocesses",
    "minilm_embed": "the MiniLM sentence-embedding model (tests/integration/training/test_synthetic_dedup.py)",
    # the code sandbox's heavy loads: fork and memory bombs, 164 canonical solutions (tests/integration/mera/); a
    # bubblewrap sandbox for a few samples (tests/unit/test_mera_sandbox.py's tight_sandbox) is not one of them
    "bwrap_sandbox": "the bubblewrap sandbox (tests/integration/mera/test_mera_sandbox.py)",
    "sandbox": "the code sandbox running ruHumanEval solutions (tests/integration/mera/test_mera_humaneval.py)",
}

#: The xdist group of each session fixture, and of the host resource the sandbox fixtures stand for. A session
#: fixture is set up once per worker, so its tests belong together; tests that use two of these must find them in one
#: group. The engines and the sandbox share one: ruHumanEval's tests run the sandbox against the tiny engine, and
#: every sandbox runs as ``nobody``, whose process limit the fork bombs fill, so no two sandboxes may run at once.
XDIST_GROUPS: dict[str, str] = {
    "judge_servers": "engines", "vllm_tiny_server": "engines",
    "bwrap_sandbox": "engines", "tight_sandbox": "engines", "sandbox": "engines", "sandbox_user": "engines",
    "seq2seq_run": "trained-judges", "regression_run": "trained-judges", "train_subprocess_env": "trained-judges",
    "slurm_cluster": "slurm",
}

@pytest.fixture
def sandbox_user() -> None:
    """Request it in a test that runs code in the ruHumanEval sandbox (eval/mera/sandbox.py) outside the sandbox
    fixtures: it puts the test with the other sandboxes' (:data:`XDIST_GROUPS`)."""


def xdist_groups(item) -> set[str]:
    """The groups ``item``'s fixtures put it in: :data:`XDIST_GROUPS` for session fixtures and the sandbox's user;
    else its module's name when it requests a module-scoped fixture, heavy or not. A module fixture is set up once
    per worker its module's tests land on: spread over three workers, one that runs 35 console scripts ran three
    times. A test that also needs a session group goes with that group (its module fixture may then be set up on
    two workers), unless the module fixture is heavy: that is refused like two groups."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    shared, module_fixtures = set(), set()
    for name in getattr(item, "fixturenames", ()):
        if name in XDIST_GROUPS:
            shared.add(XDIST_GROUPS[name])
        elif name in defs and defs[name][-1].scope in ("module", "package"):
            module_fixtures.add(name)
    if module_fixtures and (not shared or module_fixtures & HEAVY_FIXTURES.keys()):
        shared.add(item.module.__name__)
    return shared


_VLLM_CACHE: dict[str, str] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a judge-serve carries the tails of judge-serve's log and its engines' logs in its
    report: they live in temporary folders that a CI run's clean-up takes, and the cause is usually there (a CI failure
    once had only "engine answered 404" to go on)."""
    report = yield
    if report.failed:
        from tests.support.fixtures_serve import JudgeServer

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
    """Idle OpenMP threads sleep; vLLM logs at its own default level whatever imports trl; one vLLM cache for every
    engine of the run."""
    # The suite keeps more busy processes than cores (two workers, engines, training ranks, each with OpenMP threads),
    # and libgomp's idle threads spin before they sleep, burning CPU the others need: a tiny training beside another
    # and three test files with engines and training each took less CPU with PASSIVE (measured: docs/performance.md,
    # row "idle OpenMP threads sleeping"). Set before any torch is loaded here (libgomp reads it once); every child
    # inherits it. The Makefile exports it too, for the demo; a value already in the environment wins, so
    # `OMP_WAIT_POLICY= pytest ...` runs libgomp's default (it ignores a value it cannot parse, with a warning).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # trl's import sets VLLM_LOGGING_LEVEL=ERROR in os.environ where it is unset (trl/_compat.py, its vLLM logging
    # patch): the first test on a worker to import it in-process would silence, for every engine started after it on
    # that worker, the INFO and WARNING lines that the engine log tails of a failed test's report carry
    # (tests/unit/test_library_import_environment.py). vLLM's own default (vllm/envs.py), so trl keeps it; a value
    # already in the environment wins.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO")
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller (or a run without xdist); workers inherit it
        # vLLM inspects a model's class in a fresh Python process unless its cache has the answer
        # (vllm/model_executor/models/registry.py, "modelinfos"), about a quarter of a cold engine start's CPU
        # (measured: docs/performance.md, row "where one engine start's CPU goes"). One cache for the run's engines
        # pays it once; fresh per run, so every run pays it once, as on a fresh machine.
        os.environ["VLLM_CACHE_ROOT"] = _VLLM_CACHE.setdefault("root", tempfile.mkdtemp(prefix="judge-tests-vllm-"))


def pytest_unconfigure(config):
    if "root" in _VLLM_CACHE:
        shutil.rmtree(_VLLM_CACHE.pop("root"), ignore_errors=True)


def placement(item) -> tuple[bool, str | None, list[str]]:
    """Where ``item`` runs: whether it is slow (under tests/integration/), its xdist group (None: any worker), and
    what is wrong with it (a unit test that needs a heavy fixture or is marked slow by hand, fixtures of two
    groups)."""
    problems = []
    slow = INTEGRATION in Path(item.path).resolve().parents
    heavy = sorted(set(getattr(item, "fixturenames", ())) & HEAVY_FIXTURES.keys())
    if not slow and heavy:
        problems.append(f"{item.nodeid} requests {heavy}: move it to tests/integration/")
    elif not slow and item.get_closest_marker("slow") is not None:
        problems.append(f"{item.nodeid} is marked slow by hand: move it to tests/integration/")
    groups = xdist_groups(item)
    if len(groups) > 1:
        problems.append(f"{item.nodeid} needs the xdist groups {sorted(groups)}: put its fixtures in one group "
                        f"(tests/conftest.py XDIST_GROUPS)")
    return slow, (min(groups) if len(groups) == 1 else None), problems


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """Mark the slow tier from the folder, refuse a unit test that needs a heavy fixture, group the tests that share
    a heavy fixture for xdist (:func:`placement`)."""
    problems = []
    for item in items:
        slow, group, wrong = placement(item)
        if slow:
            item.add_marker(pytest.mark.slow)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        problems += wrong
    if problems:
        raise pytest.UsageError("test tiers and groups (tests/conftest.py):\n  " + "\n  ".join(problems))


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


def pytest_terminal_summary(terminalreporter):
    """One line per tier: how many tests ran and the seconds they took, so a slower tier shows in CI's log."""
    if not any(n for n, _ in _TIER_TIMES.values()):
        return
    terminalreporter.section("tier times")
    for name, (n, seconds) in _TIER_TIMES.items():
        terminalreporter.write_line(f"{name}: {n} tests, {seconds:.1f} s (set-up, call and tear-down)")
