"""Whether vLLM can split a model's attention heads over a tensor-parallel size, read from its config.json.

vLLM refuses such a size only when its engine starts (after a queue's wait on a cluster, with a traceback): judge-serve
asks before its engines start, `judge-train submit` before it submits GRPO's vLLM server, slurm/serve.sbatch before
it publishes an endpoint. One rule for the three (``vllm_tensor_parallel_fits``), one reading of the heads.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["attention_heads", "unsplittable_heads", "vllm_tensor_parallel_fits"]


def vllm_tensor_parallel_fits(tp: int, heads: int, kv_heads: int) -> bool:
    """Whether vLLM shards a model with ``heads`` attention heads and ``kv_heads`` key/value heads over ``tp`` GPUs:
    the heads divide by it (vllm/config/model.py, ``verify_with_parallel_config``), and the key/value heads divide
    by it, or it by them when they are fewer and are replicated (vllm/model_executor/layers/linear.py,
    ``QKVParallelLinear``)."""
    return heads % tp == 0 and (kv_heads % tp == 0 if kv_heads >= tp else tp % kv_heads == 0)


def attention_heads(model: str) -> tuple[int, int, Path] | None:
    """The attention heads and key/value heads in ``model``'s config.json, and the file, where it is here: a folder,
    or a hub id in the Hugging Face cache (nothing is downloaded). None when the config is not here or holds no whole
    numbers for them at its top level (where vLLM reads a text model's), so that what cannot be read here is left to
    vLLM."""
    from judge.checkpoints import CheckpointNotFound, resolve_checkpoint
    from judge.plumbing.config_files import read_json_object

    try:
        path = resolve_checkpoint(model, allow_download=False) / "config.json"
        settings = read_json_object(path)
    except (CheckpointNotFound, OSError, ValueError):  # ValueError: missing, not JSON, not an object
        return None
    heads = settings.get("num_attention_heads")
    kv_heads = settings.get("num_key_value_heads", heads)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (heads, kv_heads)):
        return None
    return heads, kv_heads, path


def unsplittable_heads(model: str, tp: int, most: int) -> tuple[str, str] | None:
    """What vLLM would refuse when ``model``'s attention heads do not split over ``tp`` GPUs, and the sizes up to
    ``most`` that split them: ("vLLM cannot split M's 28 attention heads (4 key/value heads; <its config.json>) over
    8 GPUs", "1, 2 or 4"). None when they split, or when the model's config.json is not here to say
    (``attention_heads``), which leaves it to vLLM."""
    heads = attention_heads(model)
    if heads is None or vllm_tensor_parallel_fits(tp, heads[0], heads[1]):
        return None
    fits = [str(n) for n in range(1, most + 1) if vllm_tensor_parallel_fits(n, heads[0], heads[1])]
    return (f"vLLM cannot split {model}'s {heads[0]} attention heads ({heads[1]} key/value heads; {heads[2]}) over "
            f"{tp} GPUs", " or ".join(filter(None, (", ".join(fits[:-1]), fits[-1]))))  # 1 fits any model
