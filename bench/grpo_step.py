"""GRPO step time of the ``judge-train grpo`` recipe: what one optimizer step (generate a group per prompt, score it,
one policy-gradient update) costs.

    .venv/bin/python bench/grpo_step.py                                   # CPU: tiny Qwen3, 4 steps, group 4, 32 tokens
    .venv/bin/python bench/grpo_step.py --steps 6 --group 8 --completion-tokens 64 --json runs/bench/grpo_cpu.json
    python bench/grpo_step.py --config configs/train/qwen3-8b/grpo.yaml --model Qwen/Qwen3-8B --use-vllm colocate \\
        --steps 6 --group 8 --completion-tokens 1024 --prompts-per-step 8   # one GPU: the figure that matters

It runs the recipe itself (``train.grpo.main``: the same data, prompts, trl ``GRPOTrainer`` and rewards) for
``--steps`` steps of ``--prompts-per-step`` prompts x ``--group`` completions, every completion forced to exactly
``--completion-tokens`` tokens (:func:`run_overrides`: ``max_completion_length`` and a minimum of as many tokens,
transformers' ``min_new_tokens`` or vLLM's ``min_tokens``), so that runs compare.
trl logs each step's wall time (``step_time``); the first step (warm-up: allocation, compilation) is reported apart,
the others as median [min, max]. Generated tokens per second = prompts x group x completion tokens / step time.

Every completion is therefore cut by the length limit: none can end with its end-of-sequence token, so every one is
a failed verdict, every reward is 0 (trl logs ``completions/clipped_ratio`` 1.0 and ``frac_reward_zero_std`` 1.0)
and every advantage is 0. The step still does all of its work (generation, rewards, log-probabilities, the backward
pass and the optimizer step), which is what is timed: this measures a step's cost, never what GRPO learns.

This machine has no GPU: the figures printed here are CPU figures of the tiny model. The step time that sizes a real
run is the GPU one (vLLM generation, bf16, flash attention), which has to be measured on a GPU with the third
command above; docs/reasoning-judges.md says what was and was not measured.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.measure import fmt, machine, machine_line, spread  # noqa: E402


def run_overrides(*, output_dir: str = "runs/bench/grpo-step", steps: int = 4, group: int = 4,
                  prompts_per_step: int = 1, completion_tokens: int = 32, use_vllm: str | None = None,
                  model: str | None = None) -> dict:  # fmt: skip
    """The config overrides of one bench run (``train.config.load_config``), every completion ``completion_tokens``
    long.

    trl hands ``generation_kwargs`` to the generator as given: ``transformers.GenerationConfig(**kwargs)`` without
    vLLM, ``vllm.SamplingParams(**kwargs)`` with it (trl/trainer/grpo_trainer.py; trl/generation/vllm_generation.py
    ``VLLMGeneration.generate``), which knows the minimum as ``min_tokens`` and refuses ``min_new_tokens``.
    """
    minimum = {"min_tokens": completion_tokens} if use_vllm else {"min_new_tokens": completion_tokens}
    overrides = {
        "output_dir": output_dir, "max_steps": steps, "save_steps": steps + 1,
        "num_generations": group, "global_batch_size": group * prompts_per_step,
        "per_device_train_batch_size": group * prompts_per_step,
        "max_completion_length": completion_tokens, "max_rows": steps * prompts_per_step,
        "trainer_args": {"generation_kwargs": minimum},
        "disable_tqdm": True, "report_to": "none",
    }  # fmt: skip
    if model:
        overrides["model_name_or_path"] = model
    if use_vllm:
        overrides.update({"use_vllm": True, "vllm_mode": use_vllm})
    return overrides


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(REPO / "configs" / "train" / "tiny" / "grpo.yaml"))
    parser.add_argument("--model", default=None, help="model_name_or_path (default: the config's)")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps (the first is warm-up)")
    parser.add_argument("--group", type=int, default=4, help="completions per prompt (num_generations)")
    parser.add_argument("--prompts-per-step", type=int, default=1)
    parser.add_argument("--completion-tokens", type=int, default=32, help="every completion's exact length")
    parser.add_argument("--use-vllm", choices=["colocate", "server"], default=None, help="generate with vLLM (GPU)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    import torch

    from train import grpo
    from train.config import load_config

    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as scratch:
        overrides = run_overrides(output_dir=str(Path(scratch) / "run"), steps=args.steps, group=args.group,
                                  prompts_per_step=args.prompts_per_step, completion_tokens=args.completion_tokens,
                                  use_vllm=args.use_vllm, model=args.model)  # fmt: skip
        config = load_config(args.config, overrides)
        started = time.perf_counter()
        result = grpo.main(config)
        total = time.perf_counter() - started

    steps = [entry for entry in result.log_history if "step_time" in entry]
    times = [entry["step_time"] for entry in steps]
    tokens = args.prompts_per_step * args.group * args.completion_tokens
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU (no GPU: run this on a GPU too)"
    figures = {"machine": machine(), "device": device, "model": config.model_name_or_path, "steps": len(times),
               "group": args.group, "prompts_per_step": args.prompts_per_step,
               "completion_tokens": args.completion_tokens, "use_vllm": args.use_vllm or False,
               "warmup_step_s": times[0] if times else None,
               "step_s": spread(times[1:]) if len(times) > 1 else None,
               "generated_tokens_per_s": spread([tokens / t for t in times[1:]]) if len(times) > 1 else None,
               "mean_completion_length": [entry.get("completions/mean_length") for entry in steps],
               # every completion forced to the limit: cut, rewarded 0, so every advantage is 0 (module docstring)
               "clipped_ratio": [entry.get("completions/clipped_ratio") for entry in steps],
               "whole_run_s": total}  # fmt: skip
    print(machine_line(figures["machine"]))
    print(f"device: {device}; model {config.model_name_or_path}; generation: "
          f"{'vLLM ' + args.use_vllm if args.use_vllm else 'transformers'}")
    print(f"{args.prompts_per_step} prompt(s) x group {args.group} x {args.completion_tokens} tokens per step, "
          f"{len(times)} steps (whole run with data, model and export {total:.1f} s)")
    print("every completion is forced to the length limit, so each is cut: rewards 0, advantages 0 (the step's "
          "cost is measured, not learning)")
    if times:
        print(f"warm-up step: {times[0]:.2f} s")
    if len(times) > 1:
        print(f"step time, s: {fmt(figures['step_s'], '', 2)}")
        print(f"generated tokens/s: {fmt(figures['generated_tokens_per_s'], '', 1)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
