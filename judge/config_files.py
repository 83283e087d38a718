"""YAML config files mirrored by dataclasses: the one reader every stage's config uses; and the one reader of the
JSON objects stages hand each other (a checkpoint's ``config.json``, the export manifest, ``run.json``).

Each stage keeps its own config dataclass (``train.config``, ``serve.config``, ``eval.run.RunConfig``,
``train.synthetic.config``) and resolves defaults, then the YAML file, then command-line flags. Reading the file
is the shared part: a mapping is required, and a key the dataclass does not have is an error naming it — a
misspelt ``learning_rat`` must not silently train with the default.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "read_config_file", "read_json_object"]


class ConfigError(ValueError):
    """A configuration that cannot run: a missing file, an unknown key, a wrong type or an impossible value."""


def read_config_file(path: str | Path, fields_of: type | None = None) -> dict[str, Any]:
    """Read a YAML config file into a dict of the keys it sets.

    Args:
        path: the YAML file.
        fields_of: a dataclass; when given, keys that are not its fields are refused.

    Returns:
        The mapping (empty for an empty file), to merge over the dataclass defaults.

    Raises:
        ConfigError: the file is missing or not a mapping, or sets unknown keys (named, with the known ones).
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} not found")
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of field: value, got {type(raw).__name__}")
    if fields_of is not None:
        known = {f.name for f in dataclasses.fields(fields_of)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(f"{path}: unknown keys {unknown} for {fields_of.__name__}; known: {sorted(known)}")
    return raw


def read_json_object(path: str | Path, missing_ok: bool = False) -> dict[str, Any]:
    """A JSON file holding one object (``config.json``, ``pollux_judge.json``, ``run.json``, ``metrics.json``).

    Args:
        path: the file.
        missing_ok: a missing file reads as ``{}`` instead of an error.

    Raises:
        ValueError: the file is missing (unless ``missing_ok``), not valid JSON, or not an object, naming the file.
    """
    import json

    path = Path(path)
    if not path.is_file():
        if missing_ok:
            return {}
        raise ValueError(f"{path}: not found")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return value
