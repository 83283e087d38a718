"""A trainer_args ddp_timeout shorter than rank 0's scontrol calls after a stop signal (train.preemption: scontrol
show job up to 30 s, scontrol requeue up to 60 s, while the other ranks wait in a broadcast that ddp_timeout bounds)
is refused when the config is checked; NCCL's error handling would otherwise kill the waiting ranks mid-requeue."""

from __future__ import annotations

import pytest

from train.config import ConfigError, load_config


@pytest.fixture(autouse=True)
def _no_launcher(monkeypatch):
    """check_training_arguments builds TrainingArguments only outside a launcher."""
    for name in ("LOCAL_RANK", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)


def _load(tmp_path, ddp_timeout: int):
    return load_config(None, {"output_dir": str(tmp_path / "run"), "trainer_args": {"ddp_timeout": ddp_timeout}},
                       recipe="regression")


@pytest.mark.parametrize("ddp_timeout", [60, 119])
def test_a_ddp_timeout_below_the_requeue_floor_is_refused_naming_it(tmp_path, ddp_timeout):
    # 30 s + 60 s of scontrol, plus a 30 s margin: 120
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, ddp_timeout)
    assert str(error.value) == (
        f"trainer_args: 'ddp_timeout' {ddp_timeout} is below 120 s: after a stop signal rank 0 waits up to 30 s for "
        "scontrol show job and 60 s for scontrol requeue while the other ranks wait in a broadcast that ddp_timeout "
        "bounds, and NCCL's error handling would kill them before the job is requeued; set ddp_timeout to 120 or "
        "more (transformers' default is 1800)")


@pytest.mark.parametrize("ddp_timeout", [120, 1800])
def test_a_ddp_timeout_at_or_above_the_floor_is_accepted(tmp_path, ddp_timeout):
    assert _load(tmp_path, ddp_timeout).trainer_args["ddp_timeout"] == ddp_timeout
