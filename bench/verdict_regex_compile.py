"""What compiling judge-serve's constrained-decoding regex costs each structured-outputs backend vLLM can be given
(``structured_outputs_backend``): xgrammar's ``GrammarCompiler.compile_regex`` against llguidance's ``LLMatcher``
on the same regex (``serve.judging.verdict_regex``, a 0..2 criterion) and the same tokenizer, at each feedback
bound, each timed to the first step's token mask filled (what a request waits for before it decodes).

    .venv/bin/python bench/verdict_regex_compile.py --model runs/demo/train/seq2seq/export --rounds 3  # performance.md

vLLM compiles one grammar per distinct regex (one per scale and bound) before the request's first step, on the
engine core's thread pool, and waits at most a few seconds for it; xgrammar builds every state's token mask while
compiling, llguidance computes masks as decoding reaches them, so its compile does less and its later steps more
(bench/constrained_judging.py times whole runs). Each round compiles every bound under both backends, interleaved,
with xgrammar's cache off; printed: each backend's seconds per bound and xgrammar's over llguidance's, one ratio per
round, as median (min-max, IQR).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO / "bench", REPO):
    while str(path) in sys.path:
        sys.path.remove(str(path))
    sys.path.insert(0, str(path))

from measure import fmt, interleaved, machine_line, positive_int, spread  # noqa: E402

ARMS = ("xgrammar", "guidance")


def parse_args(argv=None) -> argparse.Namespace:
    from judge.plumbing.config_files import ExactArgumentParser

    p = ExactArgumentParser(description=(__doc__ or "").split("\n\n")[0],
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="", help="a judge export or hub id whose tokenizer to use (default: a random "
                                               "tiny judge on the Qwen2.5 vocabulary, built here)")
    p.add_argument("--bounds", default="16,256,2000", help="comma-separated feedback_max_chars values")
    p.add_argument("--rounds", type=positive_int, default=3,
                   help="rounds, each compiling every bound under both backends")
    args = p.parse_args(argv)
    args.bounds = [int(b) for b in args.bounds.split(",") if b.strip()]
    return args


def compilers(tokenizer) -> dict:
    """Each backend's compile of one regex and its first token mask, as vLLM's backends call them
    (vllm/v1/structured_output/backend_xgrammar.py, backend_guidance.py)."""
    import llguidance
    import llguidance.hf
    import llguidance.torch
    import xgrammar

    info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer))
    xgrammar_compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
    xgrammar_mask = xgrammar.allocate_token_bitmask(1, info.vocab_size)
    ll_tokenizer = llguidance.hf.from_tokenizer(tokenizer)
    guidance_mask = llguidance.torch.allocate_token_bitmask(1, ll_tokenizer.vocab_size)

    def with_xgrammar(regex: str) -> None:
        xgrammar.GrammarMatcher(xgrammar_compiler.compile_regex(regex)).fill_next_token_bitmask(xgrammar_mask)

    def with_guidance(regex: str) -> None:
        matcher = llguidance.LLMatcher(ll_tokenizer, llguidance.grammar_from("regex", regex))
        llguidance.torch.fill_next_token_bitmask(matcher, guidance_mask)
        if matcher.is_error():
            raise RuntimeError(f"llguidance refused the regex: {matcher.get_error()}")

    return {"xgrammar": with_xgrammar, "guidance": with_guidance}


def main(argv=None) -> int:
    args = parse_args(argv)
    from transformers import AutoTokenizer

    from judge.scales import Scale
    from serve.judging import verdict_regex

    model = args.model
    if not model:
        import tempfile

        from train.tiny_models import build_tiny_qwen2

        model = str(build_tiny_qwen2(Path(tempfile.mkdtemp(prefix="regex-compile-")) / "tiny", kind="causal", seed=0))
    compile_with = compilers(AutoTokenizer.from_pretrained(model))
    print(machine_line())
    seconds = {(arm, bound): [] for arm in ARMS for bound in args.bounds}
    for order in interleaved(ARMS, args.rounds):
        for bound in args.bounds:
            regex = verdict_regex(Scale((0, 1, 2)), bound, with_score=True)
            for arm in order:
                start = time.perf_counter()
                compile_with[arm](regex)
                seconds[(arm, bound)].append(time.perf_counter() - start)
    for bound in args.bounds:
        xg, gd = seconds[("xgrammar", bound)], seconds[("guidance", bound)]
        ratios = [a / b for a, b in zip(xg, gd)]
        print(f"feedback_max_chars {bound}: xgrammar {fmt(spread(xg), digits=3)} s; guidance "
              f"{fmt(spread(gd), digits=3)} s; xgrammar / guidance {fmt(spread(ratios), 'x', 0)}")
    print(machine_line())  # and its load at the end, as at the start
    return 0


if __name__ == "__main__":
    sys.exit(main())
