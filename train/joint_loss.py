"""The regression judge's trainer: ``transformers.Trainer`` with the joint rationale + score loss.

    loss = lm_loss_weight * cross-entropy(rationale tokens) + score_loss_weight * MSE(score head, score label)

The model (``train.score_head.Qwen2ForRationaleAndScore``) returns the cross-entropy as ``loss`` and the score head's
output as ``scores``; the batch (``train.regression.RegressionCollator``) carries the score labels as
``score_labels``, which the model's ``forward`` does not take. Both parts are logged beside ``loss`` as ``lm_loss``
and ``score_loss``: means over every rank's training micro-batches since the last log, as ``loss`` is, so that
``loss = lm_loss_weight * lm_loss + score_loss_weight * score_loss`` up to rounding.
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

    # Both parts are per-batch means, so the Trainer divides the loss by the gradient accumulation steps itself
    # (the model sets accepts_loss_kwargs = False for the same reason).
    loss_is_scaled_for_ga = False

    def __init__(self, *args, lm_loss_weight: float, score_loss_weight: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.lm_loss_weight = lm_loss_weight
        self.score_loss_weight = score_loss_weight
        # This rank's running sums of the two parts and the micro-batches they cover, since the last log.
        self._sums = {"lm_loss": 0.0, "score_loss": 0.0}
        self._batches = 0

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
        outputs = model(**inputs)
        # Both sides in float32: the head's bf16 output and an exact label (5/3 is not a bf16 number).
        score_loss = F.mse_loss(outputs.scores.float(),
                                torch.as_tensor(score_labels, device=outputs.scores.device).to(torch.float32))
        loss = self.lm_loss_weight * outputs.loss + self.score_loss_weight * score_loss
        if model.training:
            self._sums["lm_loss"] += outputs.loss.detach().float().item()
            self._sums["score_loss"] += score_loss.detach().item()
            self._batches += 1
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:  # a training log: add the parts averaged since the last one
            # Every rank logs `loss` (the Trainer gathers it over the ranks just before), so every rank reaches this
            # all-reduce: the parts then cover the same micro-batches as `loss`, not rank 0's alone.
            totals = torch.tensor([self._sums["lm_loss"], self._sums["score_loss"], float(self._batches)],
                                  dtype=torch.float64, device=self.args.device)
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.all_reduce(totals, op=torch.distributed.ReduceOp.SUM)
            lm_sum, score_sum, batches = totals.tolist()
            if batches:
                logs["lm_loss"] = round(lm_sum / batches, 6)
                logs["score_loss"] = round(score_sum / batches, 6)
            self._sums = {"lm_loss": 0.0, "score_loss": 0.0}
            self._batches = 0
        super().log(logs, start_time)
