"""YAML config files mirrored by dataclasses: the one reader every stage's config uses.

Each stage keeps its own config dataclass (``train.config``, ``serve.config``, ``eval.run.RunConfig``,
``train.synthetic.config``) and resolves defaults, then the YAML file, then command-line flags. Reading the file
is the shared part: a mapping is required, and a key the dataclass does not have is an error naming it — a
misspelt ``learning_rat`` must not silently train with the default.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "read_config_file"]


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
