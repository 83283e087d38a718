"""The verl reward file as verl loads it: by its path, without ``sys.modules`` (fast tier)."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import os
import re
from pathlib import Path

import judge
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.unit.test_rewards_clients import judge_response, scored

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rewards.md"


def verl_load_module(module_path: str):
    """verl's ``load_module(module_path)`` with ``module_name=None``, as ``load_extern_object`` calls it from
    ``get_custom_reward_fn`` (``verl/utils/import_utils.py``; ``verl/trainer/ppo/reward.py``), its lines kept: a
    file is executed under a made-up name and never put in ``sys.modules``; ``pkg://`` imports by name."""
    if module_path.startswith("pkg://"):
        return importlib.import_module(module_path[len("pkg://"):].replace("/", "."))
    if module_path.startswith("file://"):
        module_path = module_path[len("file://"):]
    if not os.path.exists(module_path):
        raise FileNotFoundError(f"Custom module file not found: {module_path=}")
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(module_path))}", module_path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise RuntimeError(f"Error loading module from {module_path=}") from e
    return module


def documented_verl_path() -> str:
    """The ``custom_reward_function.path`` the verl section of the docs gives, as a path inside this package."""
    text = DOCS.read_text(encoding="utf-8")
    path = re.search(r"custom_reward_function:\n\s+path:\s*(\S+)", text).group(1)
    assert path.startswith("/path/to/site-packages/judge/"), path
    return str(Path(judge.__file__).parent / path.removeprefix("/path/to/site-packages/judge/"))


def test_the_documented_verl_file_loads_as_verl_loads_it_and_scores():
    """The file the docs name loads through verl's loader (judge.reward_clients itself fails there: its dataclasses
    look their module up in sys.modules), and both functions it gives score a sample at the HTTP boundary, the async
    one a coroutine function, as verl's reward loop tells them apart."""
    module = verl_load_module(documented_verl_path())
    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("A", 2)]]))) as endpoint:
        kwargs = dict(data_source="d", solution_str="ans", ground_truth="", extra_info={"instruction": "Q", "criteria": ["A"]},
                      judge_url=endpoint.base_url, api_key_env="")  # fmt: skip
        expected = {"score": 1.0, "judge_failures": 0, "judge_engine_refused": 0, "judge_gate_closed": 0, "judge_empty_answer": 0}
        assert module.compute_score(**kwargs) == expected
        assert inspect.iscoroutinefunction(module.compute_score_async)
        assert asyncio.run(module.compute_score_async(**kwargs)) == expected
    assert [body for _, body in endpoint.requests] == [
        {"items": [{"instruction": "Q", "answer": "ans", "criteria": ["A"]}], "oversize": "fail"}] * 2


def test_verls_package_form_names_the_clients_module():
    """``pkg://judge.reward_clients``, which the docs offer for verl 0.7 and later, gives the same functions."""
    assert "pkg://judge.reward_clients" in DOCS.read_text(encoding="utf-8")
    module = verl_load_module("pkg://judge.reward_clients")
    shim = verl_load_module(documented_verl_path())
    assert module.compute_score is shim.compute_score and module.compute_score_async is shim.compute_score_async
