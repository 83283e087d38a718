"""What tests/unit/test_mera_rutie.py and tests/integration/mera/test_mera_rutie.py share."""

from __future__ import annotations

from pathlib import Path


from eval.mera import cli

SAMPLE = Path(cli.__file__).with_name("data") / "rutie_sample.jsonl"


def lm_eval_loglikelihood(model_dir: Path, context: str, continuation: str) -> float:
    """log p(continuation | context) as MERA's harness computes it with ``--model hf``: the continuation's tokens are
    those of the whole text after the context's own count (artemorloff/lm-evaluation-harness ``lm_eval/api/model.py``
    ``TemplateLM._encode_pair``), scored by the model in transformers, float32."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    whole = tokenizer(context + continuation)["input_ids"]
    n_context = len(tokenizer(context)["input_ids"])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([whole])).logits[0], dim=-1)
    return sum(logprobs[i - 1, whole[i]].item() for i in range(n_context, len(whole)))
