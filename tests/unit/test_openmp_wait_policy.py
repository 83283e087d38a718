"""The console scripts run with OpenMP's idle threads sleeping (``judge.plumbing.openmp``), as ``make`` runs them.

Each entry point of ``[project.scripts]`` runs in a fresh interpreter without ``OMP_WAIT_POLICY``, its ``main``
given ``--help``: afterwards the variable is ``PASSIVE``, and torch, if anything imported it on the way, found it
already set (an import hook records the value at torch's import: libgomp reads it once, when it loads). A value the
user set is kept. judge-serve's engines inherit it with the rest of its environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judge.plumbing.openmp import idle_threads_sleep

ROOT = Path(__file__).resolve().parents[2]

#: [project.scripts] of pyproject.toml: the console script, its module.
ENTRY_POINTS = {"judge-train": "train.cli", "judge-serve": "serve.cli", "judge-eval": "eval.cli"}

#: Run in a fresh interpreter: imports the entry module as the console script does, then runs its main with --help;
#: prints what torch's import saw (if torch was imported at all) and the variable after main.
_PROBE = """
import importlib, importlib.abc, json, os, sys

seen = {}

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and "torch" not in seen:
            seen["torch"] = os.environ.get("OMP_WAIT_POLICY")
        return None

sys.meta_path.insert(0, Watch())
module = importlib.import_module(sys.argv[1])
seen["torch_at_module_import"] = "torch" in sys.modules
sys.argv = [sys.argv[2], "--help"]
try:
    module.main(["--help"])
except SystemExit:
    pass
seen["after_main"] = os.environ.get("OMP_WAIT_POLICY")
print("PROBE " + json.dumps(seen))
"""


def _probe(module: str, script: str, preset: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}  # tests/conftest.py sets it for the suite
    if preset is not None:
        env["OMP_WAIT_POLICY"] = preset
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", _PROBE, module, script], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, f"{script}: no probe line\nstdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
    return json.loads(line.removeprefix("PROBE "))


def test_the_entry_points_are_the_console_scripts():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for script, module in ENTRY_POINTS.items():
        assert f'{script} = "{module}:main"' in text


@pytest.mark.parametrize("script", sorted(ENTRY_POINTS))
def test_each_console_script_sets_passive_before_torch_and_keeps_a_value_already_set(script):
    module = ENTRY_POINTS[script]
    unset = _probe(module, script, None)
    assert unset["torch_at_module_import"] is False, f"{module} imports torch before its main can set the policy"
    assert unset["after_main"] == "PASSIVE"
    if "torch" in unset:  # imported on the way (by --help), then after the policy was set
        assert unset["torch"] == "PASSIVE"
    assert _probe(module, script, "ACTIVE")["after_main"] == "ACTIVE"
    assert _probe(module, script, "")["after_main"] == ""  # `OMP_WAIT_POLICY= judge-...`: libgomp's own default


def test_the_data_pipelines_module_main_sets_passive_before_torch():
    """``python -m train.synthetic.cli`` (documented beside ``judge-train data``) is a main of its own, whose dedup
    stage loads torch through sentence_transformers: it sets the policy first too, and keeps a value set."""
    unset = _probe("train.synthetic.cli", "train.synthetic.cli", None)
    assert unset["torch_at_module_import"] is False
    assert unset["after_main"] == "PASSIVE"
    assert _probe("train.synthetic.cli", "train.synthetic.cli", "ACTIVE")["after_main"] == "ACTIVE"


def test_judge_serves_engines_inherit_the_policy(monkeypatch, tmp_path):
    from serve.config import ServeConfig
    from serve.launch import engine_env

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert idle_threads_sleep() == "PASSIVE"
    assert engine_env(ServeConfig(model=str(tmp_path)).validate())["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert idle_threads_sleep() == "ACTIVE"
    assert engine_env(ServeConfig(model=str(tmp_path)).validate())["OMP_WAIT_POLICY"] == "ACTIVE"
