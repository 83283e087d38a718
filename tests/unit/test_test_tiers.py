"""The suite's own placement rules (tests/conftest.py): the tier is the folder, a unit test may not reach a heavy
fixture, and the xdist group follows from the fixtures a test shares.

Items here are stand-ins with the attributes pytest's items carry (path, node id, fixture names and definitions,
module, markers), so each rule is checked without starting a second pytest.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.conftest import INTEGRATION, placement

UNIT = INTEGRATION.parent / "unit"


def _item(path: Path, *fixtures: str, scopes: dict[str, str] | None = None, slow_marker: bool = False):
    scopes = scopes or {}
    defs = {name: [SimpleNamespace(scope=scopes.get(name, "function"))] for name in fixtures}
    return SimpleNamespace(
        path=path, nodeid=f"{path.name}::test_x", fixturenames=list(fixtures),
        _fixtureinfo=SimpleNamespace(name2fixturedefs=defs), module=SimpleNamespace(__name__=f"tests.{path.stem}"),
        get_closest_marker=lambda name: object() if (name == "slow" and slow_marker) else None,
    )  # fmt: skip


def test_the_folder_is_the_tier():
    assert placement(_item(INTEGRATION / "serving" / "test_a.py", "tmp_path"))[:2] == (True, None)
    assert placement(_item(UNIT / "test_a.py", "tmp_path")) == (False, None, [])


def test_a_unit_test_may_not_request_a_heavy_fixture_or_a_slow_marker():
    _, _, problems = placement(_item(UNIT / "test_a.py", "judge_servers", scopes={"judge_servers": "session"}))
    assert problems == ["test_a.py::test_x requests ['judge_servers']: move it to tests/integration/"]
    _, _, problems = placement(_item(UNIT / "test_a.py", slow_marker=True))
    assert problems == ["test_a.py::test_x is marked slow by hand: move it to tests/integration/"]
    # The same requests are fine under tests/integration/.
    assert placement(_item(INTEGRATION / "test_a.py", "judge_servers", scopes={"judge_servers": "session"})) == (
        True, "engines", [])


def test_groups_come_from_the_table_and_module_fixtures_from_their_module():
    serving = INTEGRATION / "serving" / "test_a.py"
    # Two fixtures of one group (the engines and the sandbox's user share a worker).
    assert placement(_item(serving, "vllm_tiny_server", "sandbox_user",
                           scopes={"vllm_tiny_server": "session"}))[1] == "engines"
    # A module fixture, heavy or light: its module's tests share a worker, so it is set up once.
    assert placement(_item(serving, "healing_server", scopes={"healing_server": "module"}))[1] == "tests.test_a"
    assert placement(_item(serving, "outcomes", "scratch", scopes={"outcomes": "module", "scratch": "module"}))[1] == (
        "tests.test_a")
    # A light module fixture beside a session group: the session group.
    assert placement(_item(serving, "vllm_tiny_server", "small_data",
                           scopes={"vllm_tiny_server": "session", "small_data": "module"})) == (True, "engines", [])
    # A light fixture of another scope puts the test in no group.
    assert placement(_item(serving, "tmp_path", scopes={"tmp_path": "function"}))[1] is None


def test_fixtures_of_two_groups_are_refused():
    _, group, problems = placement(_item(INTEGRATION / "test_a.py", "judge_servers", "slurm_cluster",
                                         scopes={"judge_servers": "session", "slurm_cluster": "session"}))
    assert group is None
    assert problems == ["test_a.py::test_x needs the xdist groups ['engines', 'slurm']: put its fixtures in one "
                        "group (tests/conftest.py XDIST_GROUPS)"]
    # A heavy module fixture beside a session group would be set up on two workers: refused alike.
    _, group, problems = placement(_item(INTEGRATION / "test_a.py", "judge_servers", "healing_server",
                                         scopes={"judge_servers": "session", "healing_server": "module"}))
    assert group is None
    assert problems == ["test_a.py::test_x needs the xdist groups ['engines', 'tests.test_a']: put its fixtures in "
                        "one group (tests/conftest.py XDIST_GROUPS)"]
