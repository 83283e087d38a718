"""Whether this process could log in to W&B without asking for a key: looked up before work, by both stages.

Without an API key in ``WANDB_API_KEY``, a ``.netrc`` entry for its host (``wandb login``) or the settings, and with
``WANDB_MODE`` unset, ``wandb.init`` in a process with no terminal stops with "No API key configured": in training
after the model loaded (transformers' ``WandbCallback.setup``, at ``on_train_begin``), in ``judge-eval score`` after
the whole scoring. Under ``WANDB_MODE`` offline, disabled or dryrun no key is needed. The credentials are looked up as
wandb looks them up (wandb/sdk/lib/wbauth/authenticate.py, ``_use_system_auth``), without logging in.

W&B reads ``WANDB_MODE`` as written: a value it does not take (``Offline``, ``ofline``, an empty one) stops
``wandb.init`` with a validation error at the same late point, so ``wandb_mode_problem`` says so first.
"""

from __future__ import annotations

import os

__all__ = [
    "WANDB_LOCAL_MODES", "WANDB_MODES", "no_key_problem", "wandb_host_without_a_key", "wandb_installed",
    "wandb_mode_problem",
]

#: ``WANDB_MODE`` values under which W&B logs without an account: ``offline`` writes the run under ``WANDB_DIR``
#: (``wandb sync`` uploads it later), ``disabled`` logs nothing, ``dryrun`` is the old spelling of offline.
WANDB_LOCAL_MODES = ("offline", "disabled", "dryrun")
#: Every ``WANDB_MODE`` W&B takes, compared as written (wandb/sdk/wandb_settings.py, ``Settings.mode``, a
#: ``Literal``): any other value stops ``wandb.init``.
WANDB_MODES = ("online", *WANDB_LOCAL_MODES, "shared", "run")


def wandb_mode_problem() -> str | None:
    """Why W&B would refuse this process's ``WANDB_MODE``, in one sentence with the remedy; None when it is unset or
    one of ``WANDB_MODES`` as written."""
    mode = os.environ.get("WANDB_MODE")
    if mode is None or mode in WANDB_MODES:
        return None
    return (f"WANDB_MODE={mode!r} is no mode W&B takes (it reads {', '.join(WANDB_MODES)}, as written, and would "
            "stop at its start); set WANDB_MODE=offline to log locally, or unset it")


def wandb_installed() -> bool:
    """Whether ``import wandb`` works in this process."""
    try:
        import wandb  # noqa: F401
    except ImportError:
        return False
    return True


def wandb_host_without_a_key() -> str | None:
    """The W&B host this process holds no API key for, or ``None`` when it holds one or W&B logs locally.

    ``None`` too when wandb is not installed or has another layout (its own import or login then decides), and when
    ``WANDB_MODE`` is no mode W&B takes (``wandb_mode_problem`` says so; W&B's settings would raise here).
    """
    if wandb_mode_problem() is not None:
        return None
    if os.environ.get("WANDB_MODE", "") in WANDB_LOCAL_MODES:
        return None
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return None
    try:
        from wandb.sdk import wandb_setup
        from wandb.sdk.lib.wbauth import wbnetrc
    except ImportError:
        return None
    settings = wandb_setup.singleton().settings
    if str(settings.mode).lower() in WANDB_LOCAL_MODES or settings.api_key:
        return None
    if wbnetrc.read_netrc_auth(host=settings.base_url):
        return None
    return str(settings.base_url)


def no_key_problem(host: str) -> str:
    """Why W&B would stop this process for want of a key for ``host``, in one clause that names ``WANDB_MODE`` as it
    is (unset, or an online mode such as ``online`` or ``shared``): both stages' refusals start with it."""
    mode = os.environ.get("WANDB_MODE")
    said = "is not set" if mode is None else f"is {mode!r}, which logs online"
    return (f"no W&B API key for {host} (WANDB_API_KEY, or `wandb login`'s .netrc entry) and WANDB_MODE {said}")
