"""A released ``-r`` checkpoint faked with a few tensors (no tokenizer, no engine): Qwen2WithRegressionHead in two
shards, the head in the second, as published; what the released layout's, the weights fingerprint's and judge-serve's
tests build."""

from __future__ import annotations

import json
from pathlib import Path

H = 8  # hidden size: the head is Linear(H, 1)


def tensors(seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    body = {"model.embed_tokens.weight": torch.randn(16, H, generator=g), "model.norm.weight": torch.ones(H)}
    head = {"lm_head.weight": torch.randn(16, H, generator=g), "regression_head.weight": torch.randn(1, H, generator=g),
            "regression_head.bias": torch.tensor([0.75])}
    return body, head


def released_r(folder: Path, seed: int = 0) -> Path:
    """A released -r folder as published: Qwen2WithRegressionHead, two shards, the head in the second."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2WithRegressionHead"], "model_type": "qwen2",
                                                    "hidden_size": H}))
    (folder / "tokenizer_config.json").write_text("{}")
    body, head = tensors(seed)
    names = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    save_file(body, str(folder / names[0]), metadata={"format": "pt"})
    save_file(head, str(folder / names[1]), metadata={"format": "pt"})
    weight_map = {name: names[0] for name in body} | {name: names[1] for name in head}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder

