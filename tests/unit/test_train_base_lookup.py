"""``train.cli.check_training_data``'s look-up of the base model without downloading (``judge-train submit`` on a
login node): only a hub id the cache lacks is left to the job; a missing local folder, and any id while
``HF_HUB_OFFLINE`` is set (sbatch passes the variable on to the job), are refused now, before the queue."""

from __future__ import annotations

import pytest

from train.config import ConfigError, Seq2SeqConfig


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    for name in ("HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _config(tmp_path, model: str) -> Seq2SeqConfig:
    # data missing: a config whose base passes goes on to refuse its data, which says the base was not refused
    return Seq2SeqConfig(output_dir=str(tmp_path / "run"), model_name_or_path=model,
                         data=str(tmp_path / "missing.jsonl"))


def _refused_field(config, **kwargs) -> str:
    from train.cli import check_training_data

    with pytest.raises(ConfigError) as err:
        check_training_data(config, **kwargs)
    return str(err.value).split(":", 1)[0]


def test_an_uncached_hub_id_is_left_to_the_job(empty_cache):
    assert _refused_field(_config(empty_cache, "org/not-cached"), download=False) == "data"


def test_a_missing_folder_named_like_a_hub_id_is_refused(empty_cache):
    """``runs/my-sft`` with ``runs/`` here names a folder that is not there, as the job's own look-up says."""
    (empty_cache / "runs").mkdir()
    from train.cli import check_training_data

    with pytest.raises(ConfigError, match=r"^model_name_or_path: runs/my-sft: no such folder \(runs/ is a folder"):
        check_training_data(_config(empty_cache, "runs/my-sft"), download=False)


def test_an_uncached_hub_id_is_refused_when_the_job_would_be_offline(empty_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert _refused_field(_config(empty_cache, "org/not-cached"), download=False) == "model_name_or_path"


@pytest.mark.parametrize("model, meant", [("tiny-qwen", "tiny-qwen2"), ("tiny_qwen3", "tiny-qwen3"),
                                          ("tiny-qwen2.5", "tiny-qwen2")])
def test_a_misspelt_tiny_base_names_the_tiny_base_meant(empty_cache, model, meant):
    """Before: "tiny-qwen: no such folder, and not a hub id of the form owner/name", which never says that two names
    build a tiny base locally, nor which was meant."""
    from train.cli import check_training_data

    with pytest.raises(ConfigError) as err:
        check_training_data(_config(empty_cache, model), download=False)
    assert str(err.value) == (f"model_name_or_path: {model}: no such folder, and not a hub id of the form owner/name; "
                              f"did you mean {meant}? (tiny-qwen2 and tiny-qwen3 build a tiny base here)")


def test_a_name_far_from_the_tiny_bases_is_refused_without_them(empty_cache):
    from train.cli import check_training_data

    with pytest.raises(ConfigError) as err:
        check_training_data(_config(empty_cache, "my-base"), download=False)
    assert str(err.value) == "model_name_or_path: my-base: no such folder, and not a hub id of the form owner/name"
