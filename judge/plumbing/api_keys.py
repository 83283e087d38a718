"""API keys: one way to give a key to every command (``judge-eval run``, ``bench``, ``mera``, ``judge-serve``,
``judge-train data``).

The rule (``KEY_RULE``): judge-serve's own key is ``$JUDGE_SERVE_API_KEY`` (``--api-key-env`` names another), so that
a server never demands the user's OpenAI key by accident. A client (``judge-eval run``, ``bench``'s candidate and
judge, ``mera``) reads the variables its ``--api-key-env`` names, the first one set (``CLIENT_KEY_ENV`` by default:
``$JUDGE_SERVE_API_KEY``, so that a shell that started judge-serve can talk to it, else ``$OPENAI_API_KEY``, as the
``openai`` SDK reads it; none set: no key). One variable named alone must be set; ``--api-key-env ''`` sends no key.
An API judge's YAML names its variable (``configs/eval/gpt-4o.yaml``: ``api_key_env: OPENAI_API_KEY``), so a
judge-serve key is never sent to a hosted API. A key typed into the settings (``--api-key X`` or ``api_key:`` in a
YAML) still works, with a warning: a command line is visible to every user of the node (``ps``, ``/proc/PID/cmdline``)
and stays in the shell's history. Every key read here is registered with
``judge.plumbing.provenance.register_secret``, so no run file written afterwards holds it, wherever it appears.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from judge.plumbing.config_files import ConfigError
from judge.plumbing.provenance import register_secret

__all__ = ["DEFAULT_KEY_ENV", "SERVE_KEY_ENV", "CLIENT_KEY_ENV", "KEY_RULE", "ClientKey", "client_api_key",
           "resolve_api_key", "JUDGE_KEY_ENVS", "check_classifier_key_env"]

#: The variable a client command falls back to (the ``openai`` SDK's own).
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: judge-serve's own key, and the first variable a client reads when ``--api-key-env`` names none.
SERVE_KEY_ENV = "JUDGE_SERVE_API_KEY"
#: A client's ``api_key_env`` by default: the first of these variables that is set.
CLIENT_KEY_ENV = f"{SERVE_KEY_ENV},{DEFAULT_KEY_ENV}"
#: The rule, as every client's ``--help`` and every 401 message states it.
KEY_RULE = (f"keys: the first set of the variables --api-key-env names (default {CLIENT_KEY_ENV}: ${SERVE_KEY_ENV}, "
            f"judge-serve's own key, else ${DEFAULT_KEY_ENV}; none set: no key; '' sends none)")

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


@dataclass(frozen=True)
class ClientKey:
    """The key a client sends and where it came from.

    Attributes:
        key: the key ("" for none).
        source: ``$NAME`` (a variable), ``--api-key`` (typed), or "" (no key).
    """

    key: str
    source: str

    def described(self) -> str:
        """``the key from $NAME`` / ``the typed --api-key`` / ``no key``, for messages."""
        if not self.key:
            return "no key"
        return "the typed --api-key" if self.source == "--api-key" else f"the key from {self.source}"


def client_api_key(typed: str, env_name: str, *, command: str) -> ClientKey:
    """The key a client command sends, by ``KEY_RULE``.

    Args:
        typed: a key given in the settings (``--api-key``, ``api_key:``); empty for none. Warned about.
        env_name: the ``api_key_env`` setting: one variable (it must be set), several separated by commas (the
            first one set; none: no key, as ``CLIENT_KEY_ENV``), or "" (no key).
        command: the console command, for the messages.

    Raises:
        ConfigError: a variable named alone is not set.
    """
    if typed:
        return ClientKey(resolve_api_key(typed, env_name, command=command), "--api-key")
    names = [name.strip() for name in env_name.split(",") if name.strip()]
    if len(names) == 1:
        return ClientKey(resolve_api_key("", names[0], command=command, default_env=""), f"${names[0]}")
    for name in names:
        key = os.environ.get(name, "")
        if key:
            register_secret(key)
            return ClientKey(key, f"${name}")
    return ClientKey("", "")


#: The judge's own key variables, never the classifier's: judge-serve's client key and reward key (their default
#: names; ``judge_key_envs`` adds the ones a configuration chose) and the key of judge-serve's engines
#: (``serve.engine_auth.ENGINE_KEY_ENV``, which ``serve.launch.engine_env`` keeps in the engines' environment).
JUDGE_KEY_ENVS = (SERVE_KEY_ENV, "JUDGE_SERVE_REWARD_KEY", "VLLM_API_KEY")


def check_classifier_key_env(api_key_env: str, judge_key_envs: tuple[str, ...] = ()) -> None:
    """Refuse a ``criteria_classifier_api_key_env`` that names one of the judge's key variables.

    Args:
        api_key_env: the setting: one variable, several separated by commas, or "".
        judge_key_envs: the configuration's own key variables (its ``api_key_env``, ``reward_key_env``; commas
            allowed), on top of ``JUDGE_KEY_ENVS``.

    Raises:
        ConfigError: one line naming the setting and the variable.
    """
    judge = {name.strip() for entry in (*JUDGE_KEY_ENVS, *judge_key_envs) for name in entry.split(",")} - {""}
    for name in (name.strip() for name in api_key_env.split(",")):
        if name in judge:
            raise ConfigError(f"criteria_classifier_api_key_env: ${name} holds the judge's own key, which is never "
                              "sent to the classifier's endpoint; export the classifier's key in a variable of its "
                              "own (e.g. CLASSIFIER_API_KEY) and name that, or '' for none")
