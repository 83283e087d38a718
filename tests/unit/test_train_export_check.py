"""The export check compares like with like: the live model probed as its export reloads (train.export).

With ``bf16`` and no DeepSpeed or LoRA the weights train in float32 (train.training_arguments.weights_dtype), and the
Trainer's accelerate wraps the model's forward in bf16 autocast; the export reloads in float32 without it. Probed
through that wrapper, the live logits carried bf16 rounding (~3e-3) against float32's 1e-4 tolerance, and every
such run failed its export. The check must still refuse an export whose weights differ from the trained ones.
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from judge import apply_chat, render_rationale_target
from judge.checkpoints import WEIGHTS_DIGESTS
from train import export
from train.score_head import Qwen2ForRationaleAndScore

ROWS = [("### Задание для оценки:\nНапиши стих", "Ответ хороший, ошибок нет."), ("P2", "плохо очень")]


@pytest.fixture
def bf16_accelerator():
    """accelerate's Accelerator as the Trainer makes it for ``bf16: true`` on CPU; its shared state reset after."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield Accelerator(mixed_precision="bf16", cpu=True)
    AcceleratorState._reset_state(reset_partial_state=True)


def prepared(accelerator, model):
    """``model`` as the Trainer holds it after accelerate's prepare: ``trainer.model`` is the module itself, its
    forward wrapped in autocast (a leftover process group in this worker would make prepare's result a DDP wrapper)."""
    return accelerator.unwrap_model(accelerator.prepare_model(model), keep_fp32_wrapper=True)


def probe(tokenizer):
    texts = [apply_chat(tokenizer, prompt, render_rationale_target(rationale)) for prompt, rationale in ROWS]
    return export.probe_batch(tokenizer, texts)


def write(mode, model, tokenizer, out):
    if mode == "seq2seq":
        return export.export_seq2seq(model, tokenizer, out)
    return export.export_regression(model, tokenizer, out)


@pytest.mark.parametrize("mode", ["seq2seq", "regression"])
def test_a_float32_model_under_bf16_autocast_exports(mode, bf16_accelerator, tiny_causal_dir, qwen_tokenizer,
                                                     tmp_path):  # fmt: skip
    """The full fine-tune in bf16 without DeepSpeed: float32 weights, forward wrapped in bf16 autocast. The probe runs
    without the wrapper and the float32 export checks; the trainer's model keeps its wrapper for later use."""
    from transformers import Qwen2ForCausalLM

    cls = Qwen2ForCausalLM if mode == "seq2seq" else Qwen2ForRationaleAndScore
    torch.manual_seed(0)
    model = cls.from_pretrained(str(tiny_causal_dir), dtype=torch.float32)
    model.config.pad_token_id = qwen_tokenizer.pad_token_id
    with torch.no_grad():  # a trained head, not the fresh one
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.02)
    model = prepared(bf16_accelerator, model)
    wrapped = model.forward
    batch = probe(qwen_tokenizer)
    with torch.no_grad():
        autocast_logits = model(**batch).logits
    live = export.live_outputs(model, batch)
    assert model.forward is wrapped and "_original_forward" in model.__dict__
    with torch.no_grad():  # still the trainer's mixed-precision model
        assert torch.equal(model(**batch).logits, autocast_logits)
    tail = export._tail_logits(autocast_logits, batch["attention_mask"])
    assert (tail - live["logits"]).abs().max() > 1e-4  # the bf16 rounding the old probe compared at 1e-4

    out = write(mode, model, qwen_tokenizer, tmp_path / "export")
    report = export.verify_export(out, mode, batch, live, torch.float32)
    assert report["max_logit_diff"] <= 1e-4 * max(1.0, live["logits"].abs().max().item())


def test_a_corrupted_float32_export_is_still_refused(bf16_accelerator, tiny_causal_dir, qwen_tokenizer, tmp_path):
    """One decoder weight changed by 1% in the written export: the check refuses it."""
    torch.manual_seed(0)
    model = Qwen2ForRationaleAndScore.from_pretrained(str(tiny_causal_dir), dtype=torch.float32)
    model.config.pad_token_id = qwen_tokenizer.pad_token_id
    model = prepared(bf16_accelerator, model)
    batch = probe(qwen_tokenizer)
    live = export.live_outputs(model, batch)
    out = export.export_regression(model, qwen_tokenizer, tmp_path / "export")
    for folder in (out / export.GENERATOR_SUBDIR, out):
        (weights,) = folder.glob("*.safetensors")
        state = load_file(str(weights))
        state["model.layers.1.mlp.down_proj.weight"] = state["model.layers.1.mlp.down_proj.weight"] * 1.01
        save_file(state, str(weights), metadata={"format": "pt"})
    with pytest.raises(export.ExportError, match="LM logits"):
        export.verify_export(out, "regression", batch, live, torch.float32)


def test_a_regression_export_writes_its_tokenizer_once_and_the_generator_reads_the_same_files(
        tiny_causal_dir, qwen_tokenizer, tmp_path, monkeypatch):
    """The tokenizer and generation config are written once, in the export's folder; the generator's folder holds
    byte-identical copies of each."""
    import train.tokenizer_file

    saved = []
    real = train.tokenizer_file.save_tokenizer
    monkeypatch.setattr(train.tokenizer_file, "save_tokenizer", lambda tok, folder: (saved.append(folder),
                                                                                     real(tok, folder)))
    model = Qwen2ForRationaleAndScore.from_pretrained(str(tiny_causal_dir), dtype=torch.float32)
    out = export.export_regression(model, qwen_tokenizer, tmp_path / "export")
    assert saved == [out]
    generator = out / export.GENERATOR_SUBDIR
    # each folder's weights digests are its own weights'
    names = {p.name for p in out.iterdir() if p.is_file()} - {"config.json", "model.safetensors", export.EXPORT_MANIFEST,
                                                              WEIGHTS_DIGESTS}
    assert {"tokenizer.json", "tokenizer_config.json", "generation_config.json"} <= names
    for name in names:
        assert (generator / name).read_bytes() == (out / name).read_bytes(), name
    assert export.GENERATOR_SUBDIR not in names


def test_mixed_dtypes_keep_their_autocast(bf16_accelerator, tiny_causal_dir, qwen_tokenizer):
    """LoRA without DeepSpeed: a bf16 base with float32 trainable tensors runs only under autocast, which the probe
    keeps (its export is bf16, checked at bf16's tolerance)."""
    model = Qwen2ForRationaleAndScore.from_pretrained(str(tiny_causal_dir), dtype=torch.bfloat16)
    model.config.pad_token_id = qwen_tokenizer.pad_token_id
    model.score.float()
    model = prepared(bf16_accelerator, model)
    live = export.live_outputs(model, probe(qwen_tokenizer))
    assert live["scores"].dtype == torch.float32 and torch.isfinite(live["scores"]).all()
