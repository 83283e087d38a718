"""Whether this process could log in to W&B without asking for a key: looked up before work, by both stages.

Without an API key in ``WANDB_API_KEY``, a ``.netrc`` entry for its host (``wandb login``) or the settings, and with
``WANDB_MODE`` unset, ``wandb.init`` in a process with no terminal stops with "No API key configured": in training
after the model loaded (transformers' ``WandbCallback.setup``, at ``on_train_begin``), in ``judge-eval score`` after
the whole scoring. Under ``WANDB_MODE`` offline, disabled or dryrun no key is needed. The credentials are looked up as
wandb looks them up (wandb/sdk/lib/wbauth/authenticate.py, ``_use_system_auth``), without logging in.
"""

from __future__ import annotations

import os

__all__ = ["WANDB_LOCAL_MODES", "wandb_host_without_a_key"]

#: ``WANDB_MODE`` values under which W&B logs without an account: ``offline`` writes the run under ``WANDB_DIR``
#: (``wandb sync`` uploads it later), ``disabled`` logs nothing, ``dryrun`` is the old spelling of offline.
WANDB_LOCAL_MODES = frozenset({"offline", "disabled", "dryrun"})


def wandb_host_without_a_key() -> str | None:
    """The W&B host this process holds no API key for, or ``None`` when it holds one or W&B logs locally.

    ``None`` too when wandb is not installed or has another layout: its own import or login then decides.
    """
    if os.environ.get("WANDB_MODE", "").strip().lower() in WANDB_LOCAL_MODES:
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
