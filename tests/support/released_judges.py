"""What tests/unit/test_released_judges.py and tests/integration/serving/test_released_judges.py share."""

from __future__ import annotations

import json
from pathlib import Path


def indexed_tensors(folder: Path) -> dict:
    """Every tensor a folder's index names, read from the file the index names for it."""
    from safetensors import safe_open

    index = json.loads((folder / "model.safetensors.index.json").read_text(encoding="utf-8"))
    out = {}
    for name, shard in index["weight_map"].items():
        with safe_open(str(folder / shard), framework="pt") as handle:
            out[name] = handle.get_tensor(name)
    return out

