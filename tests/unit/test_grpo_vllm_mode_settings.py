"""A GRPO vLLM setting that the chosen generation never reads: accepted (switching the qwen3-8b server config to
colocate with ``--vllm-mode colocate`` keeps its tensor parallel 8), named in one warning at load, and listed in
run.json's ``launch.ignored_settings``."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from train.config import GRPORecipeConfig, RegressionConfig, load_config
from train.preemption import SaveAndStopOnSignal
from train.recipe_steps import PreparedRun
from train.training_arguments import Launch

REPO = Path(__file__).resolve().parents[2]
SERVER_GRPO = REPO / "configs" / "train" / "qwen3-8b" / "grpo.yaml"  # server mode, tensor parallel 8, timeout 900
COLOCATE_GRPO = REPO / "configs" / "train" / "t-lite" / "grpo.yaml"  # colocate mode at trl's GPU share


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "train.config" and r.levelno == logging.WARNING]


def _load(caplog, monkeypatch, path, overrides=None):
    monkeypatch.chdir(REPO)  # the configs name their DeepSpeed JSON relative to the repository
    with caplog.at_level(logging.WARNING, logger="train.config"):
        config = load_config(path, overrides)
    return config, _warnings(caplog)


def test_the_server_config_switched_to_colocate_loads_and_names_what_colocate_ignores(caplog, monkeypatch):
    config, said = _load(caplog, monkeypatch, SERVER_GRPO, {"vllm_mode": "colocate"})
    assert config.vllm_server_tensor_parallel_size == 8  # accepted, not refused
    assert config.ignored_settings() == ["vllm_server_tensor_parallel_size", "trainer_args.vllm_server_timeout"]
    assert said == ["vllm_mode 'colocate' ignores server mode's vllm_server_tensor_parallel_size 8, "
                    "trainer_args.vllm_server_timeout 900.0: nothing reads them (run.json lists them in "
                    "launch.ignored_settings); remove them, or set vllm_mode 'server'"]


def test_server_mode_names_the_colocate_settings_it_ignores(caplog, monkeypatch):
    overrides = {"vllm_gpu_memory_utilization": 0.5, "trainer_args": {"vllm_enable_sleep_mode": True}}
    config, said = _load(caplog, monkeypatch, SERVER_GRPO, overrides)
    assert config.ignored_settings() == ["vllm_gpu_memory_utilization", "trainer_args.vllm_enable_sleep_mode"]
    assert said == ["vllm_mode 'server' ignores colocate mode's vllm_gpu_memory_utilization 0.5, "
                    "trainer_args.vllm_enable_sleep_mode True: nothing reads them (run.json lists them in "
                    "launch.ignored_settings); remove them, or set vllm_mode 'colocate'"]


def test_colocate_names_the_server_s_host_and_ports(caplog, monkeypatch):
    overrides = {"vllm_server_host": "10.0.0.1", "vllm_server_port": 8001, "vllm_group_port": 51217}
    config, said = _load(caplog, monkeypatch, COLOCATE_GRPO, overrides)
    assert config.ignored_settings() == ["vllm_server_host", "vllm_server_port", "vllm_group_port"]
    assert len(said) == 1 and "server mode's vllm_server_host '10.0.0.1', vllm_server_port 8001, " \
                              "vllm_group_port 51217:" in said[0], said


def test_without_vllm_every_vllm_setting_given_is_named(caplog, monkeypatch):
    config, said = _load(caplog, monkeypatch, SERVER_GRPO, {"use_vllm": False})
    assert config.ignored_settings() == ["vllm_mode", "vllm_server_tensor_parallel_size",
                                         "trainer_args.vllm_server_timeout"]
    assert said == ["use_vllm false ignores the vLLM settings vllm_mode 'server', vllm_server_tensor_parallel_size "
                    "8, trainer_args.vllm_server_timeout 900.0: transformers generates (run.json lists them in "
                    "launch.ignored_settings); remove them, or set use_vllm true"]


@pytest.mark.parametrize("path", [SERVER_GRPO, COLOCATE_GRPO], ids=["server", "colocate"])
def test_the_shipped_configs_and_trl_s_defaults_are_not_warned_of(path, caplog, monkeypatch):
    """Each shipped config as it is; and every trainer_args key of the other mode given at trl 1.16's own default
    (read from its GRPOConfig), which changes nothing."""
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    other = ["vllm_tensor_parallel_size", "vllm_enable_sleep_mode", "vllm_model_impl"] if path == SERVER_GRPO \
        else ["vllm_server_base_url", "vllm_server_timeout"]
    config, said = _load(caplog, monkeypatch, path)
    assert config.ignored_settings() == [] and said == []
    trainer_args = {**config.trainer_args, **{key: defaults[key] for key in other}}
    config, said = _load(caplog, monkeypatch, path, {"trainer_args": trainer_args})
    assert config.ignored_settings() == [] and said == []


def _recorded_launch(config, monkeypatch) -> dict:
    monkeypatch.delenv("RANK", raising=False)  # rank 0 writes run.json
    run = PreparedRun(config=config, launch=Launch(1, 1, 8, 8), resume_from=None, base_model="unused",
                      tokenizer=None, dtype=None, stopper=SaveAndStopOnSignal(), export_under_stopper=False)
    run.record_data({"n_rows": 3})
    return json.loads((Path(config.output_dir) / "run.json").read_text(encoding="utf-8"))["launch"]


def test_run_json_lists_the_settings_the_chosen_mode_ignores(tmp_path, monkeypatch):
    config = GRPORecipeConfig(output_dir=str(tmp_path / "run"), use_vllm=True, vllm_mode="colocate",
                              vllm_server_tensor_parallel_size=8)
    assert _recorded_launch(config, monkeypatch)["ignored_settings"] == ["vllm_server_tensor_parallel_size"]


def test_run_json_says_a_grpo_run_ignored_nothing_and_other_recipes_do_not_say(tmp_path, monkeypatch):
    grpo = GRPORecipeConfig(output_dir=str(tmp_path / "run"), use_vllm=True, vllm_mode="server",
                            vllm_server_tensor_parallel_size=8)
    assert _recorded_launch(grpo, monkeypatch)["ignored_settings"] == []
    regression = RegressionConfig(output_dir=str(tmp_path / "regression"))
    assert "ignored_settings" not in _recorded_launch(regression, monkeypatch)
