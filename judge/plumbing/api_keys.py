"""API keys: one way to give a key to every command (``judge-eval run``, ``judge-eval mera``, ``judge-serve``,
``judge-train data``).

A key comes from the environment: ``$OPENAI_API_KEY`` by default, as the ``openai`` SDK reads it, or the variable a
command's ``api_key_env`` setting names (judge-serve's own key: ``$JUDGE_SERVE_API_KEY``, so that a server never
demands the user's OpenAI key by accident). A key typed into the settings (``--api-key X`` or ``api_key:`` in a
YAML) still works, with a warning: a command line is visible to every user of the node (``ps``, ``/proc/PID/cmdline``)
and stays in the shell's history. Every key read here is registered with
``judge.plumbing.provenance.register_secret``, so no run file written afterwards holds it, wherever it appears.
"""

from __future__ import annotations

import logging
import os

from judge.plumbing.config_files import ConfigError
from judge.plumbing.provenance import register_secret

__all__ = ["DEFAULT_KEY_ENV", "resolve_api_key"]

#: The variable a client command reads its key from unless told another (the ``openai`` SDK's own).
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

log = logging.getLogger("judge.plumbing.api_keys")


def resolve_api_key(typed: str, env_name: str, *, command: str, default_env: str = DEFAULT_KEY_ENV) -> str:
    """The key a command uses: ``typed`` (warned about), else the variable ``env_name`` names.

    Args:
        typed: a key given in the settings (``--api-key``, ``api_key:``); empty for none.
        env_name: the variable to read (the ``api_key_env`` setting); empty: no key from the environment.
        command: the console command, for the messages.
        default_env: the command's default variable; it may be unset (no key), another named one may not.

    Returns:
        The key, or ``""`` for none.

    Raises:
        ConfigError: ``env_name`` was chosen by the user (it is not ``default_env``) and is not set.
    """
    if typed:
        log.warning("%s: an API key typed into the settings (--api-key, api_key:) is visible to other users of this "
                    "machine (ps, /proc) and stays in shell history; export it as $%s instead, or name another "
                    "variable with --api-key-env", command, env_name or default_env)
        register_secret(typed)
        return typed
    if not env_name:
        return ""
    key = os.environ.get(env_name, "")
    if not key and env_name != default_env:
        raise ConfigError(f"api_key_env: the environment variable {env_name} is not set")
    register_secret(key)
    return key
