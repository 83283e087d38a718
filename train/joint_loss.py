"""The regression judge's trainer: ``transformers.Trainer`` with the joint rationale + score loss.

    loss = lm_loss_weight * cross-entropy(rationale tokens) + score_loss_weight * MSE(score head, score label)

The model (``train.score_head.Qwen2ForRationaleAndScore``) returns the cross-entropy as ``loss`` and the score head's
output as ``scores``; the batch (``train.regression.RegressionCollator``) carries the score labels as
``score_labels``, which the model's ``forward`` does not take.

Per optimizer step, as transformers' ``Trainer.compute_loss`` contract has it for a model that takes
``num_items_in_batch`` (transformers/trainer.py: ``model_accepts_loss_kwargs``, ``_get_num_items_in_batch``,
``average_tokens_across_devices``): the cross-entropy is the mean over every labelled token of the accumulated batch
(of every rank, with ``average_tokens_across_devices``, transformers' default), as trl's ``SFTTrainer`` averages the
seq2seq recipe's; the MSE is the mean of the micro-batches' per-row means (of every rank, as DDP averages gradients).
Both parts are logged beside ``loss`` as ``lm_loss`` and ``score_loss``, per optimizer step averaged since the last
log over every rank, as ``loss`` is, so that ``loss = lm_loss_weight * lm_loss + score_loss_weight * score_loss`` up
to rounding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import Trainer

__all__ = ["JointLossTrainer"]


class JointLossTrainer(Trainer):
    """``Trainer`` whose loss is ``lm_loss_weight * CE + score_loss_weight * MSE``; both parts are logged.

    Args:
        lm_loss_weight: weight of the rationale's cross-entropy.
        score_loss_weight: weight of the score head's mean squared error.
        *args, **kwargs: as for ``transformers.Trainer``.
    """

    # compute_loss scales both parts for gradient accumulation itself: the cross-entropy by num_items_in_batch (the
    # labelled tokens of the accumulated batch), the MSE by the micro-batches in the step.
    loss_is_scaled_for_ga = True

    def __init__(self, *args, lm_loss_weight: float, score_loss_weight: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.lm_loss_weight = lm_loss_weight
        self.score_loss_weight = score_loss_weight
        # This rank's running sums since the last log, on the device (no host sync per micro-batch): the two parts as
        # they went into the loss, and the optimizer steps they cover (1 / micro-batches in its step, per micro-batch).
        self._parts = torch.zeros(3, dtype=torch.float64, device=self.args.device)

    def _prepare_inputs(self, inputs):
        # Under DeepSpeed, Trainer._prepare_input casts every floating tensor of the batch to DeepSpeed's dtype
        # (src/transformers/trainer.py in huggingface/transformers: `if self.is_deepspeed_enabled and
        # torch.is_floating_point(data)`), which would turn the float32 score labels into bf16 (a mean of 5/3
        # becomes 1.6640625) before the MSE. They are a target, not a model input: moved to the device, kept float32.
        score_labels = inputs.get("score_labels")
        if score_labels is None:
            return super()._prepare_inputs(inputs)
        prepared = super()._prepare_inputs({key: value for key, value in inputs.items() if key != "score_labels"})
        prepared["score_labels"] = score_labels.to(device=self.args.device) if torch.is_tensor(score_labels) else score_labels
        return prepared

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        score_labels = inputs.pop("score_labels")
        outputs = model(**inputs, num_items_in_batch=num_items_in_batch)
        lm_loss = outputs.loss
        if num_items_in_batch is not None and self.args.average_tokens_across_devices:
            # num_items_in_batch counts every rank's tokens and DDP (or DeepSpeed) averages the ranks' gradients: as
            # Trainer.compute_loss does, scale back by the ranks sharing a batch, so a token weighs 1/(all tokens)
            lm_loss = lm_loss * (self.accelerator.num_processes // self.get_tp_size() if self.args.n_gpu <= 1
                                 else self.args.n_gpu)
        # Both sides in float32: the head's bf16 output and an exact label (5/3 is not a bf16 number).
        score_loss = F.mse_loss(outputs.scores.float(),
                                torch.as_tensor(score_labels, device=outputs.scores.device).to(torch.float32))
        if model.training:
            # A training loss is one micro-batch's share of its optimizer step (loss_is_scaled_for_ga): the
            # cross-entropy already is, through num_items_in_batch; the MSE, a per-row mean, is divided by the step's
            # micro-batches. Without num_items_in_batch (no labels counted) the mean cross-entropy is divided too.
            steps = getattr(self, "current_gradient_accumulation_steps", None) or self.args.gradient_accumulation_steps
            score_loss = score_loss / steps
            if num_items_in_batch is None:
                lm_loss = lm_loss / steps
            self._parts += torch.stack([lm_loss.detach().double(), score_loss.detach().double(),
                                        torch.tensor(1.0 / steps, dtype=torch.float64, device=lm_loss.device)]
                                       ).to(self._parts.device)
        loss = self.lm_loss_weight * lm_loss + self.score_loss_weight * score_loss
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:  # a training log: add the parts averaged since the last one
            # Every rank logs `loss` (the Trainer gathers it over the ranks just before), so every rank reaches this
            # all-reduce: the parts then cover the same steps as `loss`, not rank 0's alone.
            totals = self._parts.clone()
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.all_reduce(totals, op=torch.distributed.ReduceOp.SUM)
            lm_sum, score_sum, steps = totals.tolist()
            if steps:
                logs["lm_loss"] = round(lm_sum / steps, 6)
                logs["score_loss"] = round(score_sum / steps, 6)
            self._parts.zero_()
        super().log(logs, start_time)
