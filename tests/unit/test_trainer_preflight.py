"""train.trainer_preflight: what transformers refuses only inside trainer.train() (the optimizer, the schedule, the
reporting integrations, W&B's login), refused when the config is checked instead."""

from __future__ import annotations

import pytest

from train.config import ConfigError, load_config
from train.training_arguments import check_training_arguments


def _config(tmp_path, **overrides):
    return load_config(None, {"output_dir": str(tmp_path / "run"), **overrides}, recipe="regression")


@pytest.fixture(autouse=True)
def _no_launcher(monkeypatch):
    """check_training_arguments builds TrainingArguments only outside a launcher."""
    for name in ("LOCAL_RANK", "WORLD_SIZE", "RANK"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("optim", "package"), [("adamw_bnb_8bit", "bitsandbytes"),
                                                 ("schedule_free_adamw", "schedulefree")])
def test_an_optimizer_whose_package_is_missing_is_refused_by_the_check(tmp_path, optim, package):
    """Both names pass TrainingArguments and transformers' OptimizerNames; the Trainer imports the package only when
    it builds the optimizer, inside train(). Neither package is installed here."""
    import importlib.util

    assert importlib.util.find_spec(package) is None
    config = _config(tmp_path, optim=optim)
    with pytest.raises(ConfigError, match=rf"^optim '{optim}' cannot be built here: .*{package}"):
        check_training_arguments(config)


def test_cosine_with_min_lr_without_its_kwargs_is_refused_by_the_check(tmp_path):
    """transformers' get_scheduler raises for cosine_with_min_lr without min_lr or min_lr_rate: the schedule is built
    in train(), after the model loaded."""
    config = _config(tmp_path, lr_scheduler_type="cosine_with_min_lr")
    with pytest.raises(ConfigError, match=r"^lr_scheduler_type 'cosine_with_min_lr' refuses this config: "):
        check_training_arguments(config)
    config = _config(tmp_path, lr_scheduler_type="cosine_with_min_lr",
                     trainer_args={"lr_scheduler_kwargs": {"min_lr": 1e-6}})
    check_training_arguments(config)  # with it, the schedule builds


def test_a_schedule_kwarg_yaml_reads_as_text_is_read_as_a_number_and_the_schedule_builds(tmp_path):
    """YAML reads `min_lr: 1e-6` (no dot) as the text '1e-6', on which the schedule's first rate failed ("unsupported
    operand type(s) for /: 'str' and 'float'", naming neither min_lr nor YAML): the config's load reads it as YAML
    1.2 would (train.training_arguments), so the schedule builds at load and in training."""
    config_file = tmp_path / "c.yaml"
    config_file.write_text("recipe: regression\nlr_scheduler_type: cosine_with_min_lr\n"
                           "trainer_args: {lr_scheduler_kwargs: {min_lr: 1e-6}}\n", encoding="utf-8")
    config = load_config(config_file, {"output_dir": str(tmp_path / "run")})
    assert config.trainer_args == {"lr_scheduler_kwargs": {"min_lr": 1e-06}}
    check_training_arguments(config)


def test_a_schedule_kwarg_read_only_after_the_warmup_is_refused_by_the_check(tmp_path):
    """polynomial reads its power after the warmup: building the schedule runs step 0, inside the 10 warmup steps,
    and passed; training then failed at step 10 with a TypeError on every rank. Each phase's steps run in the check.
    A number for power builds."""
    with pytest.raises(ConfigError) as refused:  # the config's load checks the trainer's arguments
        _config(tmp_path, lr_scheduler_type="polynomial", warmup_steps=10,
                trainer_args={"lr_scheduler_kwargs": {"power": "two"}})
    assert str(refused.value) == (
        "lr_scheduler_type 'polynomial' with lr_scheduler_kwargs {'power': 'two'} refuses this config (trainer_args "
        "['lr_scheduler_kwargs']): unsupported operand type(s) for ** or pow(): 'float' and 'str'")
    check_training_arguments(_config(tmp_path, lr_scheduler_type="polynomial", warmup_steps=10,
                                     trainer_args={"lr_scheduler_kwargs": {"power": 2.0}}))


def test_polynomial_with_a_long_warmup_and_no_max_steps_passes(tmp_path):
    """Without max_steps the length is the epochs' (known inside train()); the check's probe of 1000 steps with a
    1000-step warmup left polynomial no decay step and divided by zero (1000 - 1000), refusing a config a run longer
    than its warmup trains with. The probe outlasts the warmup."""
    config = _config(tmp_path, lr_scheduler_type="polynomial", warmup_steps=1000)
    assert config.max_steps == -1
    check_training_arguments(config)


def test_a_decay_kwarg_after_a_warmup_longer_than_the_probe_is_refused(tmp_path):
    """A 2000-step warmup covered the whole 1000-step probe: power 'two' was never read and the check passed. With
    the probe past the warmup, the decay step reads it."""
    with pytest.raises(ConfigError) as refused:  # the config's load checks the trainer's arguments
        _config(tmp_path, lr_scheduler_type="polynomial", warmup_steps=2000,
                trainer_args={"lr_scheduler_kwargs": {"power": "two"}})
    assert str(refused.value) == (
        "lr_scheduler_type 'polynomial' with lr_scheduler_kwargs {'power': 'two'} refuses this config (trainer_args "
        "['lr_scheduler_kwargs']): unsupported operand type(s) for ** or pow(): 'float' and 'str'")


def test_the_shipped_optimizer_and_schedule_pass(tmp_path):
    """adamw_torch with the linear decay (every shipped config) builds."""
    check_training_arguments(_config(tmp_path))


@pytest.mark.parametrize(("report_to", "message"), [
    ("tensorbord", "report_to: 'tensorbord' is not a reporting integration of the installed transformers (did you "
                   "mean tensorboard? it has "),
    ("none,wandb,tensorboard", "report_to: 'tensorboard' needs its package, which is not installed (pip install "
                               "tensorboard), or drop it from report_to ('none' logs to the console only)"),
])
def test_a_report_to_the_trainer_cannot_log_to_is_refused_by_the_check(tmp_path, report_to, message):
    """TrainingArguments takes any name; Trainer.__init__ refused an unknown one and TensorBoardCallback a missing
    tensorboard (not installed here), both after the model loaded."""
    import importlib.util

    assert importlib.util.find_spec("tensorboard") is None and importlib.util.find_spec("tensorboardX") is None
    config = _config(tmp_path, report_to=report_to)
    with pytest.raises(ConfigError) as refused:
        check_training_arguments(config)
    assert str(refused.value).startswith(message)


def test_report_to_all_beside_another_name_is_refused_as_such(tmp_path):
    """TrainingArguments expands 'all' only as the whole value (training_args.py, __post_init__); in a list Trainer
    meets it as an integration's name. The refusal said 'all' was not an integration at all."""
    config = _config(tmp_path, report_to="all,wandb")
    with pytest.raises(ConfigError) as refused:
        check_training_arguments(config)
    assert str(refused.value) == ("report_to: 'all' (every installed integration) stands alone, got 'all,wandb'; "
                                  "give 'all', or the integrations' names without it")


def test_report_to_is_checked_under_a_launcher_too(tmp_path, monkeypatch):
    """Under torchrun only the names are checked (no TrainingArguments is built there): report_to is a name."""
    config = _config(tmp_path, report_to="tensorbord")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="^report_to: 'tensorbord' is not a reporting integration"):
        check_training_arguments(config)


@pytest.fixture
def no_wandb_credentials(tmp_path, monkeypatch):
    """No key in the environment, no .netrc, W&B's process-wide setup read afresh."""
    import wandb

    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    wandb.teardown()
    yield tmp_path / "netrc"
    wandb.teardown()


def test_wandb_without_a_key_is_refused_unless_it_logs_locally(tmp_path, monkeypatch, no_wandb_credentials):
    """Every shipped T-lite, T-pro and Qwen3 config reports to wandb: without a key W&B stopped the run with "No API
    key configured" at on_train_begin. A key, a .netrc entry for W&B's host, or WANDB_MODE offline/disabled pass."""
    from wandb.sdk import wandb_setup

    from train.trainer_preflight import check_wandb_login

    config = _config(tmp_path, report_to="wandb")
    with pytest.raises(ConfigError) as refused:
        check_wandb_login(config)
    assert "\n" not in str(refused.value) and str(refused.value).startswith("report_to wandb: no W&B API key for ")
    assert "and WANDB_MODE is not set:" in str(refused.value)
    for mode in ("online", "shared"):  # set, but online: the refusal names the mode as it is, not "not set"
        monkeypatch.setenv("WANDB_MODE", mode)
        with pytest.raises(ConfigError, match=rf"and WANDB_MODE is '{mode}', which logs online: W&B would stop"):
            check_wandb_login(config)
    for mode in ("offline", "disabled", "dryrun"):
        monkeypatch.setenv("WANDB_MODE", mode)
        check_wandb_login(config)
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    check_wandb_login(config)
    monkeypatch.delenv("WANDB_API_KEY")
    host = wandb_setup.singleton().settings.base_url.split("://")[-1]
    no_wandb_credentials.write_text(f"machine {host}\n  login user\n  password {'y' * 40}\n", encoding="utf-8")
    no_wandb_credentials.chmod(0o600)
    check_wandb_login(config)
    check_wandb_login(_config(tmp_path, report_to="none"))  # nothing asked of W&B


@pytest.mark.parametrize("mode", ["Offline", "offline ", "ofline", ""])
def test_a_wandb_mode_wandb_does_not_take_is_refused_in_one_line(tmp_path, monkeypatch, no_wandb_credentials, mode):
    """W&B reads WANDB_MODE as written: `Offline` passed the check as a local mode, and `ofline` or an empty one made
    the check itself raise W&B's validation error, a traceback; either way W&B stops at its start, after the model
    loaded. Refused in one line naming the value and the remedy; W&B's own modes pass (the test above)."""
    from wandb.sdk import wandb_setup

    from train.trainer_preflight import check_wandb_login

    monkeypatch.setenv("WANDB_MODE", mode)
    with pytest.raises(Exception, match="mode"):  # the premise: W&B itself refuses the value
        wandb_setup.singleton().settings
    with pytest.raises(ConfigError) as refused:
        check_wandb_login(_config(tmp_path, report_to="wandb"))
    said = str(refused.value)
    assert said.startswith(f"report_to wandb: WANDB_MODE={mode!r} is no mode W&B takes") and "\n" not in said
    assert "WANDB_MODE=offline" in said and "--report-to none" in said
    check_wandb_login(_config(tmp_path, report_to="none"))  # nothing asked of W&B


def test_report_to_all_is_checked_as_wandb_when_wandb_is_installed(tmp_path, monkeypatch, no_wandb_credentials):
    """`report_to: all` makes TrainingArguments report to every installed integration, wandb among them when it is
    installed (it is here): without a key W&B stopped that run at on_train_begin too. Without wandb installed,
    'all' asks nothing of W&B."""
    import importlib.util

    from transformers.integrations import integration_utils

    from train.trainer_preflight import check_wandb_login

    assert importlib.util.find_spec("wandb") is not None
    config = _config(tmp_path, report_to="all")
    with pytest.raises(ConfigError) as refused:
        check_wandb_login(config)
    assert str(refused.value).startswith("report_to all (wandb is installed, so W&B logs): no W&B API key for ")
    monkeypatch.setenv("WANDB_MODE", "offline")
    check_wandb_login(config)
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setattr(integration_utils, "get_available_reporting_integrations", lambda: ["tensorboard"])
    check_wandb_login(config)


@pytest.mark.parametrize(("kernel", "cuda_only"), [
    ("flash_attention_2", True), ("flash_attention_3", True),
    ("sdpa", False), ("eager", False), ("flex_attention", False), (None, False),
])  # fmt: skip
def test_which_attention_kernels_need_a_cuda_gpu(kernel, cuda_only):
    """The one rule judge-train run's check and judge-train submit's CPU refusal both ask: FlashAttention is CUDA
    code, whichever version; the kernels transformers runs on any device are not refused."""
    from train.trainer_preflight import attention_kernel_cuda_only

    assert attention_kernel_cuda_only(kernel) == ("FlashAttention runs on CUDA GPUs only" if cuda_only else None)


def test_the_run_and_submit_refuse_flash_attention_on_cpu_by_the_one_rule(tmp_path, monkeypatch):
    """A kernel the rule calls CUDA-only is refused by both callers, in their own words around its reason: the run's
    check on a machine without CUDA, submit's for a CPU job (--gpus-per-node 0). Neither keeps a copy of it."""
    import torch

    from train import slurm_submit, trainer_preflight

    monkeypatch.setattr(trainer_preflight, "attention_kernel_cuda_only",
                        lambda kernel: "a reason of the rule's" if kernel == "sdpa" else None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config = _config(tmp_path, attn_implementation="sdpa")
    with pytest.raises(ConfigError, match=r"^attn_implementation: sdpa cannot load the model here: no CUDA GPU \(a "
                                          r"reason of the rule's\); give --attn-implementation sdpa"):
        trainer_preflight.check_attention_kernel(config)
    with pytest.raises(slurm_submit.SubmitError, match=r"where attn_implementation: sdpa \(in x.yaml\) cannot load "
                                                       r"the model \(a reason of the rule's\)"):
        slurm_submit._refuse_cuda_only_attention(config, "x.yaml", [])
    slurm_submit._refuse_cuda_only_attention(_config(tmp_path, attn_implementation="eager"), "x.yaml", [])
