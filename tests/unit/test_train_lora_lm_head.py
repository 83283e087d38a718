"""A LoRA adapter on ``lm_head`` is refused for the seq2seq recipe when the config loads.

trl 1.16's ``SFTTrainer`` computes the loss through its fused LM head (trl/trainer/utils.py ``add_fused_lm_head``),
which multiplies the hidden states by ``lm_head.weight`` directly: an adapter there would never train, and
``SFTTrainer.__init__`` refuses it with a ``ValueError`` (trl/trainer/sft_trainer.py). That came after judge-train
had claimed the run folder, written run.json and loaded the base. The regression recipe calls its ``lm_head``
module (train/score_head.py), so an adapter there trains, and is taken on a base whose lm_head is not tied to its
input embeddings; on a tied one the merge at export would change both, and it is refused before the run folder.

Run: .venv/bin/python -m pytest tests/unit/test_train_lora_lm_head.py -q -n 0
"""

from __future__ import annotations

import pytest

from tests.support.fixtures_train import TINY_REGRESSION, TINY_SEQ2SEQ
from train.config import ConfigError, load_config


@pytest.mark.parametrize("targets", ["lm_head", "q_proj, lm_head", "q_proj,v_proj,lm_head"])
def test_a_seq2seq_adapter_on_lm_head_is_refused_at_load_naming_the_field(targets):
    with pytest.raises(ConfigError, match=r"^lora_target_modules: the seq2seq recipe cannot train an adapter on "
                                          r"lm_head .*lm_head\.weight directly"):
        load_config(TINY_SEQ2SEQ, {"lora": True, "lora_target_modules": targets})


@pytest.mark.parametrize("overrides", [
    {"lora": True},  # all-linear: the decoder's linear layers (train.lora.QWEN2_LINEAR_MODULES), not lm_head
    {"lora": True, "lora_target_modules": "q_proj,v_proj"},
    {"lora": False, "lora_target_modules": "q_proj,lm_head"},  # no adapters at all: the field is not read
])  # fmt: skip
def test_seq2seq_adapters_trl_trains_are_taken(overrides):
    assert load_config(TINY_SEQ2SEQ, overrides).recipe == "seq2seq"


def test_the_regression_recipe_takes_an_adapter_on_lm_head_and_trains_it():
    """Its forward calls the ``lm_head`` module on the labelled positions: the adapter gets a gradient."""
    import torch
    from peft import get_peft_model

    from train import lora
    from train.score_head import Qwen2ForRationaleAndScore
    from train.tiny_models import tiny_qwen2_config

    config = load_config(TINY_REGRESSION, {"lora": True, "lora_target_modules": "q_proj,lm_head"})
    torch.manual_seed(0)
    model = get_peft_model(Qwen2ForRationaleAndScore(tiny_qwen2_config()),
                           lora.lora_config(config, modules_to_save=["score"]))
    ids = torch.arange(100, 120).unsqueeze(0)
    labels = torch.cat([torch.full((1, 10), -100), ids[:, 10:]], dim=1)
    model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss.backward()
    head_adapter = [p for name, p in model.named_parameters() if "lm_head.lora_B" in name]
    assert head_adapter and all(p.grad is not None and p.grad.abs().sum() > 0 for p in head_adapter)


def test_trls_sft_trainer_still_refuses_an_adapter_on_lm_head(tmp_path, qwen_tokenizer):
    """What the load-time refusal stands in for: if trl ever trains such an adapter, this fails and the refusal
    can go."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import Qwen2ForCausalLM
    from trl import SFTConfig, SFTTrainer

    from train.tiny_models import tiny_qwen2_config

    rows = Dataset.from_list([{"input_ids": list(range(100, 120)), "completion_mask": [0] * 10 + [1] * 10}] * 2)
    args = SFTConfig(output_dir=str(tmp_path), use_cpu=True, completion_only_loss=True, report_to="none",
                     disable_tqdm=True)  # fmt: skip
    with pytest.raises(ValueError, match="lm_head"):
        SFTTrainer(model=Qwen2ForCausalLM(tiny_qwen2_config()), args=args, train_dataset=rows,
                   processing_class=qwen_tokenizer, peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "lm_head"],
                                          task_type="CAUSAL_LM"))


def _base(folder, tied: bool):
    import json

    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                                                    "tie_word_embeddings": tied}), encoding="utf-8")
    return folder


TIED_HEAD_REFUSAL = r"^lora_target_modules: an adapter on lm_head of .*\(tie_word_embeddings\)"


def test_a_regression_adapter_on_the_lm_head_of_a_tied_base_is_refused(tmp_path):
    """Qwen2.5-0.5B to 3B (and the tiny base) tie lm_head to embed_tokens: the adapter trains on the head alone, but
    merging it at export writes it into the one shared matrix, so the exported judge's input embeddings are not the
    trained ones and the export's check fails after the whole training. An untied base (T-lite, T-pro) is taken."""
    from train.regression import refuse_unfit_base

    tied, untied = _base(tmp_path / "tied", True), _base(tmp_path / "untied", False)
    with pytest.raises(ConfigError, match=TIED_HEAD_REFUSAL):
        refuse_unfit_base(str(tied), tied, lora_targets=["q_proj", "lm_head"])
    refuse_unfit_base(str(tied), tied, lora_targets=["q_proj", "v_proj"])
    refuse_unfit_base(str(untied), untied, lora_targets=["q_proj", "lm_head"])


def test_judge_train_refuses_it_for_the_tiny_base_before_the_run_folder(tmp_path):
    from train.cli import check_training_data

    config = load_config(TINY_REGRESSION, {"lora": True, "lora_target_modules": "q_proj,lm_head",
                                           "output_dir": str(tmp_path / "run")})
    with pytest.raises(ConfigError, match=TIED_HEAD_REFUSAL):
        check_training_data(config)
    assert not (tmp_path / "run").exists()
