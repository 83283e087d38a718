"""What the trainer would otherwise refuse only inside ``trainer.train()``, checked before the model loads.

transformers builds the optimizer and the learning-rate schedule, and the reporting integrations log in, only once
``Trainer.train()`` runs (transformers/trainer.py, ``_prepare_for_training`` then ``on_train_begin``): an ``optim``
whose package is missing, a schedule that needs ``lr_scheduler_kwargs``, a value the optimizer cannot take, a
misspelt or uninstalled ``report_to`` or W&B without credentials then failed after the base model had loaded, as a
traceback on every rank. ``check_optimizer_and_schedule`` and ``check_report_to`` run where
``train.training_arguments.check_training_arguments`` runs (``judge-train run`` and ``submit``), and
``check_optimizer_and_schedule`` again on each rank's real arguments before the model loads
(``train.recipe_steps.PreparedRun.training_arguments``), the only check of them a job launched by hand (sbatch,
torchrun) gets;
``check_wandb_login`` runs in the training process itself (``train.launch_checks.check_launch``, from
``train.recipe_steps.prepare`` and, before the run folder is held, ``judge-train``'s rank 0), whose environment (``JUDGE_ENV_SCRIPT`` under Slurm) is the
one W&B logs in from.
"""

from __future__ import annotations

import math
import os
from typing import Any

from judge.plumbing.config_files import ConfigError
from judge.plumbing.wandb_login import no_key_problem, wandb_host_without_a_key, wandb_mode_problem

__all__ = ["attention_kernel_cuda_only", "check_attention_kernel", "check_ddp_timeout",
           "check_optim_args_reach_the_optimizer", "check_optimizer_and_schedule", "check_report_to",
           "check_wandb_login", "report_to_names", "reports_to_wandb", "DDP_TIMEOUT_MARGIN_S"]


#: Optimizers that transformers builds only with the model (transformers/trainer_optimizer.py: GaLore and APOLLO
#: match ``optim_target_modules`` against its layers, LOMO takes the model itself): checked here as far as their
#: package and arguments go.
_NEEDS_THE_MODEL = ("galore", "apollo", "lomo", "adalomo")

#: Seconds ``ddp_timeout`` must exceed rank 0's two ``scontrol`` calls by (``check_ddp_timeout``): the broadcast
#: itself, and a rank that reaches it after rank 0 began them.
DDP_TIMEOUT_MARGIN_S = 30

#: Steps the schedule is built for when the config sets no ``max_steps``: any positive count builds the same kind,
#: once it is longer than the warmup (``_schedule_probe_steps``).
_PROBE_STEPS = 1000


def _schedule_probe_steps(args: Any) -> int:
    """The run's length the schedule is checked at: ``max_steps``, or in epoch mode one longer than the warmup.

    The epoch count's length is known only from the dataset, inside ``trainer.train()``. A probe no longer than the
    warmup would run no decay step, so a decay kwarg of the wrong type passed, and polynomial (which divides by the
    steps after the warmup) was refused for a warmup a real run outlasts.
    """
    if args.max_steps > 0:
        return args.max_steps
    if args.warmup_steps >= 1:  # a count of warmup steps: the probe's decay phase starts after it
        return max(_PROBE_STEPS, 2 * int(args.warmup_steps) + 2)
    # a fraction r of the run (transformers' get_warmup_steps): ceil(n*r) <= n - 2 once n >= 2/(1-r)
    return max(_PROBE_STEPS, math.ceil(2 / (1 - args.warmup_steps)))


def report_to_names(config: Any) -> list[str]:
    """The config's comma-separated ``report_to`` as ``TrainingArguments`` gets it (``none`` and blanks dropped)."""
    return [name.strip() for name in config.report_to.split(",") if name.strip() and name.strip() != "none"]


def reports_to_wandb(config: Any) -> bool:
    """Whether the trainer logs to W&B: ``wandb`` among the names, or ``all`` with wandb installed
    (``TrainingArguments`` then reports to every integration ``get_available_reporting_integrations`` lists)."""
    names = report_to_names(config)
    if names == ["all"]:
        from transformers.integrations.integration_utils import get_available_reporting_integrations

        return "wandb" in get_available_reporting_integrations()
    return "wandb" in names


def attention_kernel_cuda_only(kernel: Any) -> str | None:
    """Why ``attn_implementation`` ``kernel`` cannot load a model without a CUDA GPU, or None for one that loads on
    any device (eager, sdpa): the FlashAttention kernels (``flash_attention_2``, ``flash_attention_3``) are CUDA code.
    The one rule ``check_attention_kernel`` applies to this process and ``judge-train submit`` to a job's CPU ranks
    (``--gpus-per-node 0``), each in its own sentence around this reason."""
    if str(kernel or "").startswith("flash_attention"):
        return "FlashAttention runs on CUDA GPUs only"
    return None


def check_attention_kernel(config: Any) -> None:
    """``attn_implementation: flash_attention_*`` (the T-lite, T-pro and Qwen3-8B recipes) where this process can run
    it: FlashAttention runs on CUDA GPUs only (``attention_kernel_cuda_only``), and ``flash_attention_2`` needs the
    flash-attn package, which is no extra (it compiles against the installed torch: docs/install.md). Without either,
    transformers' ``from_pretrained`` raised an ImportError traceback after the base model was built and the run
    folder made. Checked where training runs (``judge-train run`` on every rank); ``judge-train submit``, whose login
    node may have neither, refuses only a CPU job's (``--gpus-per-node 0``).

    Raises:
        ConfigError: naming the key, what is missing here, and ``--attn-implementation sdpa``.
    """
    import importlib.util

    import torch

    kernel = str(config.attn_implementation or "")
    cuda_only = attention_kernel_cuda_only(kernel)
    if cuda_only is None:
        return
    missing = []
    if not torch.cuda.is_available():
        missing.append(f"no CUDA GPU ({cuda_only})")
    if kernel == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        missing.append("the flash-attn package is not installed (`pip install flash-attn --no-build-isolation` on a "
                       "GPU machine: docs/install.md)")
    if missing:
        raise ConfigError(f"attn_implementation: {kernel} cannot load the model here: {'; '.join(missing)}; give "
                          "--attn-implementation sdpa, which needs neither")


def check_report_to(config: Any) -> None:
    """Each ``report_to`` name against transformers' integrations (``INTEGRATION_TO_CALLBACK``), and the
    integration's package against what is installed (``get_available_reporting_integrations``).

    ``TrainingArguments`` takes any name; ``Trainer.__init__`` refuses an unknown one and the integration's callback
    a missing package (``TensorBoardCallback``: "requires tensorboard to be installed"), both after the model loaded.

    Raises:
        ConfigError: naming ``report_to``, the name and what the installed transformers offers.
    """
    names = report_to_names(config)
    if not names or names == ["all"]:
        return
    if "all" in names:
        # TrainingArguments expands 'all' only when it is the whole value; in a list it reaches Trainer as a name
        raise ConfigError(f"report_to: 'all' (every installed integration) stands alone, got {config.report_to!r}; "
                          "give 'all', or the integrations' names without it")
    import difflib

    from transformers.integrations.integration_utils import (INTEGRATION_TO_CALLBACK,
                                                             get_available_reporting_integrations)

    known = sorted(INTEGRATION_TO_CALLBACK)
    available = set(get_available_reporting_integrations())
    # flyte and kubeflow have no availability test in transformers, and azure_ml counts as unavailable whenever
    # mlflow is installed: those are left to their callbacks.
    checkable = set(known) - {"flyte", "kubeflow", "azure_ml"}
    for name in names:
        if name not in INTEGRATION_TO_CALLBACK:
            close = difflib.get_close_matches(name, known, n=2)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise ConfigError(f"report_to: {name!r} is not a reporting integration of the installed transformers "
                              f"({hint}it has {', '.join(known)}; 'none' logs to the console only)")
        if name in checkable and name not in available:
            raise ConfigError(f"report_to: {name!r} needs its package, which is not installed (pip install {name}), "
                              "or drop it from report_to ('none' logs to the console only)")


def check_ddp_timeout(ddp_timeout: Any) -> None:
    """Refuse a ``trainer_args`` ``ddp_timeout`` shorter than rank 0's ``scontrol`` calls after a stop signal.

    Rank 0 runs ``scontrol show job`` and ``scontrol requeue`` (train.preemption.requeue_slurm_job, each bounded by
    its timeout) while every other rank waits in a broadcast (``requeue_with_every_rank``); with
    ``TORCH_NCCL_ASYNC_ERROR_HANDLING=1`` (slurm/train.sbatch) a rank waiting past ``ddp_timeout`` is killed, its
    torchrun exits 1 and ``srun --kill-on-bad-exit`` ends the step before the requeue: the job never comes back.
    A value that is not a number is left to ``TrainingArguments``, which names it.

    Raises:
        ConfigError: naming ``ddp_timeout``, the floor and why.
    """
    from train.preemption import SCONTROL_REQUEUE_TIMEOUT_S, SCONTROL_SHOW_JOB_TIMEOUT_S

    if isinstance(ddp_timeout, bool) or not isinstance(ddp_timeout, (int, float)):
        return
    floor = SCONTROL_SHOW_JOB_TIMEOUT_S + SCONTROL_REQUEUE_TIMEOUT_S + DDP_TIMEOUT_MARGIN_S
    if ddp_timeout < floor:
        raise ConfigError(f"trainer_args: 'ddp_timeout' {ddp_timeout} is below {floor} s: after a stop signal rank 0 "
                          f"waits up to {SCONTROL_SHOW_JOB_TIMEOUT_S} s for scontrol show job and "
                          f"{SCONTROL_REQUEUE_TIMEOUT_S} s for scontrol requeue while the other ranks wait in a "
                          "broadcast that ddp_timeout bounds, and NCCL's error handling would kill them before the "
                          f"job is requeued; set ddp_timeout to {floor} or more (transformers' default is 1800)")


def check_optimizer_and_schedule(args: Any, config: Any) -> None:
    """Build the optimizer and the learning-rate schedule the trainer would, on one dummy parameter.

    The same calls as transformers' ``Trainer.create_optimizer`` (``Trainer.get_optimizer_cls_and_kwargs``, then the
    class over the parameters) and ``Trainer.create_scheduler`` (``transformers.get_scheduler`` with
    ``lr_scheduler_kwargs``): an optimizer whose package is missing (``adamw_bnb_8bit``: bitsandbytes;
    ``schedule_free_*``: schedulefree), an ``adam_epsilon`` the optimizer refuses, or ``cosine_with_min_lr`` without
    ``min_lr`` in ``lr_scheduler_kwargs`` is refused here. GaLore, APOLLO and LOMO need the model's layers: their
    package and arguments are checked, not their layer matching. A ``ddp_timeout`` shorter than a requeue's
    ``scontrol`` calls is refused first (``check_ddp_timeout``), and ``optim_args`` that change nothing the builder
    returns after it (``check_optim_args_reach_the_optimizer``); beside a DeepSpeed JSON with an optimizer block only
    the schedule is built (transformers never builds its own optimizer there).

    Args:
        args: the ``TrainingArguments`` built from the config (``check_training_arguments``).
        config: the resolved config (for the message).

    Raises:
        ConfigError: naming ``ddp_timeout``, or ``optim`` or ``lr_scheduler_type`` and the trainer's own message.
    """
    import torch
    from transformers import Trainer, get_scheduler

    check_ddp_timeout(getattr(args, "ddp_timeout", None))
    parameter = torch.nn.Parameter(torch.zeros(2))
    given = f" (trainer_args {sorted(config.trainer_args)})" if config.trainer_args else ""
    needs_model = str(args.optim).startswith(_NEEDS_THE_MODEL)
    # A DeepSpeed JSON's optimizer block makes transformers hand DeepSpeed a DummyOptim and never call
    # create_optimizer (transformers/integrations/deepspeed.py, deepspeed_optim_sched): the HF optimizer is never
    # built, so its refusal here would refuse a run that trains (TrainConfig.validate checks the block itself).
    if not _deepspeed_builds_the_optimizer(config):
        try:
            optimizer_cls, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(args)
            if not needs_model:
                optimizer_cls([parameter], **optimizer_kwargs)
        except (ImportError, RuntimeError) as err:
            raise ConfigError(f"optim {config.optim!r} cannot be built here{given}: {_one_line(err)}") from None
        except (TypeError, ValueError) as err:
            # transformers' own refusal of a model-needing optimizer without one: the rest of it needs the model
            if not (needs_model and "model" in str(err)):
                raise ConfigError(f"optim {config.optim!r} refuses this config{given}: {_one_line(err)}") from None
        else:
            if getattr(args, "optim_args", None):
                check_optim_args_reach_the_optimizer(args, (optimizer_cls, optimizer_kwargs), config)
    # The schedule over a plain torch optimizer: its kind and lr_scheduler_kwargs are what can refuse.
    steps = _schedule_probe_steps(args)
    warmup = args.get_warmup_steps(steps)
    try:
        scheduler = get_scheduler(args.lr_scheduler_type,
                                  optimizer=torch.optim.SGD([parameter], lr=args.learning_rate),
                                  num_warmup_steps=warmup, num_training_steps=steps,
                                  scheduler_specific_kwargs=args.lr_scheduler_kwargs)
        # Building runs the rate at step 0 only, where a warmup returns before the decay reads its kwargs
        # (polynomial's power, cosine's num_cycles): a kwarg of the wrong type failed at the first step after the
        # warmup, mid-run. Each phase's first and last step, and its middle, runs here.
        if isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR):
            for step in sorted({0, warmup, warmup + 1, steps // 2, steps - 1, steps}):
                for rate in scheduler.lr_lambdas:
                    rate(step)
    except (TypeError, ValueError, ArithmeticError) as err:
        kwargs = f" with lr_scheduler_kwargs {args.lr_scheduler_kwargs}" if args.lr_scheduler_kwargs else ""
        raise ConfigError(f"lr_scheduler_type {config.lr_scheduler_type!r}{kwargs} refuses this config{given}: "
                          f"{_one_line(err)}") from None


def check_optim_args_reach_the_optimizer(args: Any, built: tuple[Any, Any], config: Any) -> None:
    """Refuse ``optim_args`` that change nothing of what transformers builds for ``optim``.

    TrainingArguments takes ``optim_args`` for any ``optim``, and run.json and the model card record it, but each of
    transformers' optimizer builders reads only its own keys, and some none at all (adamw_torch's, every shipped
    config's; bitsandbytes' except its RMSprop and AdEMAMix): the rest is dropped without a word, a misspelt key
    (``momentun=0.9`` for sgd) included. So the builder runs again without them
    (``Trainer.get_optimizer_cls_and_kwargs``, as in ``check_optimizer_and_schedule``), and the same class and keyword
    arguments mean they were ignored.

    Args:
        args: the ``TrainingArguments`` built from the config, with ``optim_args`` set.
        built: what the builder returned for ``args``: the optimizer's class and keyword arguments.
        config: the resolved config (for the message).

    Raises:
        ConfigError: naming ``optim_args`` and ``optim``.
    """
    import copy

    from transformers import Trainer

    without = copy.copy(args)
    without.optim_args = None
    if Trainer.get_optimizer_cls_and_kwargs(without) != built:
        return
    raise ConfigError(f"trainer_args: 'optim_args' {args.optim_args!r} changes nothing transformers' builder for optim "
                      f"{config.optim!r} passes to the optimizer: it would be recorded in run.json and ignored; "
                      "remove it, name a key that builder reads (transformers/trainer_optimizer.py: sgd's momentum, "
                      "dampening and weight_decay, say), or pick an optim whose builder reads it")


def _deepspeed_builds_the_optimizer(config: Any) -> bool:
    """Whether the config's DeepSpeed JSON (its ``deepspeed``: a path, or None without one; the config's loader
    refuses a mapping there) has an ``optimizer`` block, in the config's own reading of the file
    (``TrainConfig.deepspeed_settings``), or the file's where the config has none (a stand-in holding the path alone).
    An unreadable one counts as none, so the HF optimizer is still checked (TrainConfig.validate names the unreadable
    file)."""
    from judge.plumbing.config_files import read_json_object

    deepspeed = getattr(config, "deepspeed", None)
    if not isinstance(deepspeed, (str, os.PathLike)):
        return False
    try:
        kept = getattr(config, "deepspeed_settings", None)
        return "optimizer" in (kept() if kept is not None else read_json_object(deepspeed))
    except (OSError, ValueError):
        return False


def check_wandb_login(config: Any) -> None:
    """Refuse ``report_to`` wandb when this process could not log in to W&B and would ask for a key.

    W&B logs in inside ``trainer.train()`` (transformers' ``WandbCallback.setup``, at ``on_train_begin``), after the
    model loaded; the credentials are looked up as ``judge.plumbing.wandb_login.wandb_host_without_a_key`` says.
    A ``WANDB_MODE`` W&B does not take is refused first (``wandb_mode_problem``): W&B would stop there too.
    ``report_to: all`` counts as wandb when wandb is installed: ``TrainingArguments`` then reports to every
    integration ``get_available_reporting_integrations`` lists (transformers/training_args.py, ``__post_init__``).

    Raises:
        ConfigError: naming ``report_to`` and what to set.
    """
    if not reports_to_wandb(config):
        return
    given = "wandb" if "wandb" in report_to_names(config) else "all (wandb is installed, so W&B logs)"
    if (problem := wandb_mode_problem()) is not None:
        raise ConfigError(f"report_to {given}: {problem}, or --report-to none")
    host = wandb_host_without_a_key()
    if host is None:
        return
    raise ConfigError(f"report_to {given}: {no_key_problem(host)}: W&B would stop the run at its first step, after "
                      "the model loaded; set WANDB_API_KEY, or WANDB_MODE=offline to log locally, or --report-to none")


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__
