"""trl's fused LM head on CPU, inside ``train.recipe_steps.labelled_positions_only_on_cpu``: only the labelled positions
are projected onto the vocabulary, and the loss and gradients are those of scoring every position."""

from __future__ import annotations

import pytest
import torch

from train.recipe_steps import labelled_positions_only_on_cpu
from train.tiny_models import tiny_qwen2_config

ROWS, LENGTH, LABELLED = 2, 40, 8  # the last 8 tokens of each row carry a label, as a completion does


def _fused_model():
    from transformers import Qwen2ForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(tiny_qwen2_config("causal"))
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))  # what SFTTrainer does to its model
    return model


def _loss_and_grads(model, batch) -> tuple[float, dict[str, torch.Tensor]]:
    model.zero_grad()
    out = model(**batch, fused_lm_head=True)
    out.loss.backward()
    return out.loss.item(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_only_labelled_positions_are_scored_on_cpu_with_the_same_loss_and_gradients(monkeypatch):
    """Every position (trl on CPU) against the labelled ones (inside the context manager): the kernel gets 78 rows,
    then the 16 labelled ones; loss and gradients agree; trl's function is put back on exit."""
    from trl.trainer import utils as trl_utils

    scored_rows: list[int] = []
    kernel = trl_utils._ChunkedLogProbFunction

    class CountingKernel:
        @staticmethod
        def apply(hidden, *args):
            scored_rows.append(hidden.shape[0])
            return kernel.apply(hidden, *args)

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", CountingKernel)
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(0, 151_000, (ROWS, LENGTH), generator=generator)
    labels = torch.full_like(input_ids, -100)
    labels[:, -LABELLED:] = input_ids[:, -LABELLED:]
    batch = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels}
    model = _fused_model()

    original = trl_utils._use_triton
    every_loss, every_grads = _loss_and_grads(model, batch)
    with labelled_positions_only_on_cpu() as wrapped:
        assert wrapped
        labelled_loss, labelled_grads = _loss_and_grads(model, batch)
    assert trl_utils._use_triton is original

    # Labels shift by one: a row of 40 tokens has 39 predicted positions, 8 of them labelled.
    assert scored_rows == [ROWS * (LENGTH - 1), ROWS * LABELLED]
    assert labelled_loss == pytest.approx(every_loss, rel=1e-6)
    assert every_grads.keys() == labelled_grads.keys() and every_grads
    for name, grad in every_grads.items():
        torch.testing.assert_close(labelled_grads[name], grad, rtol=1e-5, atol=1e-7, msg=name)


def test_without_trls_private_switch_training_goes_on_scoring_every_position(monkeypatch, caplog):
    """A trl without ``_use_triton`` in ``trl.trainer.utils``: the context manager says so and changes nothing."""
    from trl.trainer import utils as trl_utils

    monkeypatch.delattr(trl_utils, "_use_triton")
    with caplog.at_level("WARNING", logger="train.recipe_steps"), labelled_positions_only_on_cpu() as wrapped:
        assert not wrapped
        assert not hasattr(trl_utils, "_use_triton")
    assert "scores every position" in caplog.text
