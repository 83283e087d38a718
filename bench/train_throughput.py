"""Training throughput of the seq2seq recipe: padding-free packing vs padded batches, and the T-lite GPU path.

    .venv/bin/python bench/train_throughput.py                    # CPU: tiny Qwen2, packing off vs on, one run
    .venv/bin/python bench/train_throughput.py --rows 48 --batch 8 --json runs/bench/train_cpu.json
    python bench/train_throughput.py --cuda                       # CUDA: T-lite architecture, random weights

CPU part. The tiny config's model (2-layer Qwen2 on the real 151,936-token Qwen2.5 vocabulary) trains one epoch
over the same sample rows twice with trl's ``SFTTrainer``: padded batches (``packing=False``), then padding-free
packing (``packing=True, packing_strategy="bfd"``: rows packed best-fit-decreasing into ``max_length`` blocks, no
pad tokens, boundaries carried by ``position_ids``; trl turns on ``padding_free`` with it), with as many blocks per
step as hold the padded run's real tokens. Tokens/s counts real (non-pad) tokens as trl does (``num_tokens``);
both figures come from one process, and tokens per CPU-second are printed too, since wall time drifts on a shared
machine. Without a varlen attention kernel (CPU, sdpa) the flattened padding-free batch gets a block-diagonal mask
whose cost grows with the square of the batch's total length, so packing can lose here; on GPU with
FlashAttention 2 the kernel skips the masked blocks.

CUDA part (only where ``torch.cuda.is_available()``). A Qwen2 with T-lite-it-1.0's shapes (7.6B parameters:
28 layers, hidden 3584, 28 query / 4 KV heads, MLP 18944, vocabulary 152,064) and random bf16 weights runs
forward + backward on packed ``--seq-len`` blocks with gradient checkpointing, FlashAttention 2 when the flash-attn
package is installed (sdpa otherwise; the output says which), no optimizer step (ZeRO shards it over GPUs in real
runs; one GPU cannot hold AdamW state for 7.6B parameters). It prints tokens/s/GPU and MFU: model FLOPs per
token (6 x non-embedding parameters + 6 x layers x hidden x sequence for causal attention, recomputation not
counted) x tokens/s / the GPU's peak dense bf16 FLOP/s (``--peak-tflops``, else looked up from the device name).
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Peak dense bf16 TFLOP/s by device-name fragment (vendor datasheets, SXM parts).
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0}

#: T-lite-it-1.0 (Qwen2.5-7B architecture).
T_LITE_SHAPES = {
    "vocab_size": 152_064,
    "hidden_size": 3584,
    "intermediate_size": 18_944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 32_768,
    "rope_theta": 1_000_000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}


# ---------------------------------------------------------------------------------------------------------------
# CPU: padded vs padding-free packing, tiny model
# ---------------------------------------------------------------------------------------------------------------


def cpu_packing_ratio(rows: int, batch: int, max_length: int, seed: int) -> dict:
    """Train one epoch padded, then one packed, on the same rows; return tokens/s of each and their ratio. Its tiny
    model and trainer outputs go to a temporary folder, removed however the run ends."""
    with tempfile.TemporaryDirectory(prefix="bench-train-") as folder:
        return _cpu_packing_ratio_in(Path(folder), rows, batch, max_length, seed)


def _cpu_packing_ratio_in(work: Path, rows: int, batch: int, max_length: int, seed: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    import judge
    from train.tiny_models import build_tiny_qwen2
    from train.build_data import build_rows, drop_too_long
    from train.config import load_config
    from train.seq2seq import sft_dataset
    from train.recipe_steps import load_tokenizer
    from train.training_arguments import launch_arithmetic, training_kwargs

    base = build_tiny_qwen2(work / "base", kind="causal", seed=seed)
    tokenizer = load_tokenizer(str(base))
    all_rows, _ = build_rows(judge.load_records(judge.sample_data_path()), recipe="seq2seq", zero_shot="drop")
    kept, _ = drop_too_long(all_rows, tokenizer, max_length)
    kept = kept[:: max(1, len(kept) // rows)][:rows]  # spread over the file: the sample's lengths vary by task
    lengths = [len(tokenizer(judge.apply_chat(tokenizer, r["prompt"], r["completion"]))["input_ids"]) for r in kept]

    # The same real tokens per step both ways: `batch` padded rows, or as many max_length blocks as they fill.
    packed_batch = max(1, math.ceil(batch * (sum(lengths) / len(lengths)) / max_length))
    results = {}
    for packing in (False, True):
        per_step = packed_batch if packing else batch
        config = load_config(
            REPO / "configs" / "train" / "tiny" / "seq2seq.yaml",
            {"output_dir": str(work / f"packing-{packing}"), "max_length": max_length, "global_batch_size": per_step,
             "per_device_train_batch_size": per_step, "num_train_epochs": 1, "max_steps": -1, "packing": packing,
             "save_steps": 10_000, "logging_steps": 1, "disable_tqdm": True, "seed": seed},
        )  # fmt: skip
        kwargs = {**training_kwargs(config, launch_arithmetic(config, world_size=1), has_eval=False), "save_strategy": "no"}
        args = SFTConfig(**kwargs, max_length=max_length, completion_only_loss=True, packing=packing,
                         packing_strategy="bfd")  # fmt: skip
        model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
        trainer = SFTTrainer(model=model, args=args, train_dataset=sft_dataset(kept, tokenizer), processing_class=tokenizer)
        start = time.perf_counter()
        cpu_start = time.process_time()
        trainer.train()
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        tokens = trainer._total_train_tokens  # real tokens, as trl counts them for its num_tokens metric
        results["packed" if packing else "padded"] = {
            "per_step": f"{per_step} {'blocks' if packing else 'rows'}", "steps": trainer.state.global_step,
            "tokens": int(tokens), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "tokens_per_s": round(tokens / wall, 1), "tokens_per_cpu_s": round(tokens / cpu, 1),
        }  # fmt: skip
    return {
        "model": "tiny Qwen2 (2 layers, hidden 64, vocabulary 151,936), fp32, CPU, sdpa attention",
        "rows": len(kept),
        "row_tokens": {"mean": round(sum(lengths) / len(lengths), 1), "min": min(lengths), "max": max(lengths)},
        "max_length": max_length,
        "trl_option": "packing=True, packing_strategy='bfd' (padding-free)",
        **results,
        "ratio_packed_over_padded": round(results["packed"]["tokens_per_s"] / results["padded"]["tokens_per_s"], 2),
        "ratio_per_cpu_second": round(results["packed"]["tokens_per_cpu_s"] / results["padded"]["tokens_per_cpu_s"], 2),
        "threads": torch.get_num_threads(),
    }


# ---------------------------------------------------------------------------------------------------------------
# CUDA: T-lite architecture, random weights
# ---------------------------------------------------------------------------------------------------------------


def _peak_tflops(name: str, override: float | None) -> float | None:
    if override:
        return override
    for fragment, peak in PEAK_BF16_TFLOPS.items():
        if fragment in name:
            return peak
    return None


def cuda_t_lite(seq_len: int, micro_batch: int, steps: int, warmup: int, peak_override: float | None) -> dict:
    """Forward + backward of the T-lite architecture on packed blocks; tokens/s/GPU and MFU."""
    import importlib.util

    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    attn = "flash_attention_2" if importlib.util.find_spec("flash_attn") else "sdpa"
    config = Qwen2Config(**T_LITE_SHAPES, attn_implementation=attn)
    device = torch.device("cuda")
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    n_flop_params = n_params - model.get_input_embeddings().weight.numel()  # a lookup is not a matmul

    # Packed, padding-free blocks: micro_batch documents of seq_len tokens laid end to end in one row, boundaries
    # through position_ids (the layout trl's padding-free collator produces).
    tokens_per_step = micro_batch * seq_len
    input_ids = torch.randint(0, config.vocab_size, (1, tokens_per_step), device=device)
    position_ids = torch.arange(seq_len, device=device).repeat(micro_batch)[None]
    labels = input_ids.clone()

    def step() -> None:
        loss = model(input_ids=input_ids, position_ids=position_ids, labels=labels).loss
        loss.backward()
        model.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    tokens_per_s = tokens_per_step * steps / elapsed
    flops_per_token = 6 * n_flop_params + 6 * config.num_hidden_layers * config.hidden_size * seq_len
    name = torch.cuda.get_device_name()
    peak = _peak_tflops(name, peak_override)
    return {
        "model": f"Qwen2 with T-lite-it-1.0 shapes, {n_params / 1e9:.2f}B parameters, random bf16 weights",
        "device": name,
        "attention": attn,
        "seq_len": seq_len,
        "documents_per_step": micro_batch,
        "steps": steps,
        "tokens_per_s_per_gpu": round(tokens_per_s, 1),
        "model_tflops_per_s": round(flops_per_token * tokens_per_s / 1e12, 1),
        "peak_bf16_tflops": peak,
        "mfu": round(flops_per_token * tokens_per_s / (peak * 1e12), 3) if peak else None,
        "max_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1),
        "note": "forward + backward with gradient checkpointing, no optimizer step; MFU excludes recomputation",
    }


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=24, help="CPU: sample rows trained on (one epoch each way)")
    parser.add_argument("--batch", type=int, default=8, help="CPU: padded rows per step (packed: as many tokens)")
    parser.add_argument("--max-length", type=int, default=1024, help="CPU: longest row and packed block, tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cuda", action="store_true", help="run the CUDA T-lite measurement (needs a GPU)")
    parser.add_argument("--seq-len", type=int, default=4096, help="CUDA: tokens per packed document")
    parser.add_argument("--micro-batch", type=int, default=2, help="CUDA: documents per step")
    parser.add_argument("--steps", type=int, default=10, help="CUDA: timed steps")
    parser.add_argument("--warmup", type=int, default=3, help="CUDA: untimed steps first")
    parser.add_argument("--peak-tflops", type=float, default=None, help="CUDA: peak dense bf16 TFLOP/s of the GPU")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args(argv)

    import torch

    if args.cuda:
        if not torch.cuda.is_available():
            print("--cuda: no CUDA device here; the CPU part runs without --cuda", file=sys.stderr)
            return 2
        result = {"cuda_t_lite": cuda_t_lite(args.seq_len, args.micro_batch, args.steps, args.warmup, args.peak_tflops)}
    else:
        result = {"cpu_packing": cpu_packing_ratio(args.rows, args.batch, args.max_length, args.seed)}
    text = json.dumps(result, ensure_ascii=False, indent=2)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
