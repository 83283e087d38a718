"""serve.launch's engine environment: what the vLLM engines judge-serve starts inherit. Starting them for real:
tests/integration/serving."""

from __future__ import annotations

import os

from serve.config import ServeConfig
from serve.launch import engine_env


def test_the_engines_inherit_neither_judge_serves_client_key_nor_its_reward_key(monkeypatch, tmp_path):
    """The engines need their own key (VLLM_API_KEY) and the hub's variables, never the key judge-serve checks its
    clients with nor the reward key nor the criteria classifier's: anything running inside vLLM (a
    --trust-remote-code model file, a plugin) reads its environment. The default variables and the ones
    api_key_env / reward_key_env / criteria_classifier_api_key_env name are all dropped; the rest of judge-serve's
    environment reaches the engines as it was."""
    for name in list(os.environ):
        monkeypatch.delenv(name)
    monkeypatch.setenv("JUDGE_SERVE_API_KEY", "front-door-key")
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", "reward-key")
    monkeypatch.setenv("MY_CLIENT_KEY", "client-key")
    monkeypatch.setenv("MY_REWARD_KEY", "other-reward-key")
    monkeypatch.setenv("HF_TOKEN", "hub-token")
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("OPENAI_API_KEY", "classifier-key")  # named for the criteria classifier below
    monkeypatch.setenv("MY_CLASSIFIER_KEY", "other-classifier-key")

    assert engine_env(ServeConfig(model=str(tmp_path)), "engine-key") == {
        "MY_CLIENT_KEY": "client-key", "MY_REWARD_KEY": "other-reward-key", "HF_TOKEN": "hub-token",
        "MY_CLASSIFIER_KEY": "other-classifier-key", "OPENAI_API_KEY": "classifier-key", "PATH": "/usr/bin",
        "VLLM_API_KEY": "engine-key",
        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    config = ServeConfig(model=str(tmp_path), api_key_env="MY_CLIENT_KEY", reward_key_env="MY_REWARD_KEY",
                         criteria_classifier_api_key_env="MY_CLASSIFIER_KEY, OPENAI_API_KEY")
    assert engine_env(config, "engine-key") == {
        "HF_TOKEN": "hub-token", "PATH": "/usr/bin", "VLLM_API_KEY": "engine-key", "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1"}


def test_a_client_key_variable_named_as_the_engines_own_still_gives_the_engines_their_key(monkeypatch, tmp_path):
    """api_key_env pointed at VLLM_API_KEY (one key for judge-serve and its engines): the engines keep theirs."""
    monkeypatch.setenv("VLLM_API_KEY", "shared")
    config = ServeConfig(model=str(tmp_path), api_key_env="VLLM_API_KEY")
    assert engine_env(config, "shared")["VLLM_API_KEY"] == "shared"
