"""What a library sets in ``os.environ`` at its import stays as the test session had it: an import happens once per
worker, in whichever test comes first, and a variable it set would reach every later test and every process a
later test starts (judge-serve's engines inherit the whole environment: ``serve.launch.engine_env``,
``tests/support/fixtures_serve.py``).

trl's import sets ``VLLM_LOGGING_LEVEL`` to ERROR where it is unset (trl/_compat.py, its vLLM logging patch): after
any test that imported ``train.grpo`` or ``trl`` in-process (a unit test of the GRPO recipe's arguments, the
``grpo_run`` fixture), the engines a later test started on that worker logged errors only, and the engine log tails
a failed test's report carries (``tests/conftest.py``, ``pytest_runtest_makereport``) lost vLLM's INFO and WARNING
lines. ``tests/conftest.py`` gives the session vLLM's own default (vllm/envs.py), which trl's import then keeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A fresh interpreter with the environment ``tests/conftest.py`` gives a test session (its ``pytest_configure``; as
#: an xdist worker, which makes no vLLM cache folder of its own), then trl imported: the variable before and after.
_PROBE = """
import json, os
from tests.conftest import pytest_configure
pytest_configure(None)
before = os.environ.get("VLLM_LOGGING_LEVEL")
import trl
print("PROBE " + json.dumps([before, os.environ.get("VLLM_LOGGING_LEVEL")]))
"""


@pytest.mark.parametrize("preset", [None, "WARNING"])
def test_importing_trl_in_a_test_session_leaves_vllms_logging_level_as_it_was(preset):
    """Unset, the session has vLLM's default, INFO, and trl's import keeps it; a value the developer set is kept."""
    env = {k: v for k, v in os.environ.items() if k != "VLLM_LOGGING_LEVEL"}
    env.update({"PYTEST_XDIST_WORKER": "gw-probe", "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")})
    if preset is not None:
        env["VLLM_LOGGING_LEVEL"] = preset
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, f"no probe line\nstdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
    assert json.loads(line.removeprefix("PROBE ")) == [preset or "INFO"] * 2
