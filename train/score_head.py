"""The regression judge while it trains: a Qwen2 causal LM with a second, linear ``score`` head.

One backbone, two heads. The LM head writes ``[FEEDBACK] rationale [END]``; the ``score`` head (hidden size -> 1,
no bias, exactly ``Qwen2ForSequenceClassification.score``) reads the final hidden state at the last token of
``judge.apply_chat(tokenizer, prompt, "[FEEDBACK] rationale [END]")`` — the last non-padding position, as
transformers' sequence classifier and vLLM's last-token pooler pick it. ``forward`` returns the cross-entropy of
the rationale and the head's scores; ``train.joint_loss.JointLossTrainer`` combines them into the training loss.

T-lite-it-1.0 and T-pro-it-1.0 are Qwen2.5 models, hence a Qwen2 subclass: ``from_pretrained`` on a causal
checkpoint loads the backbone and LM head and initialises ``score`` (under ZeRO-3 inside ``zero.Init``), gradient
checkpointing, peft and ``save_pretrained`` work unchanged. ``train/export.py`` splits it into the served layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import Qwen2ForCausalLM
from transformers.utils import ModelOutput

__all__ = ["Qwen2ForRationaleAndScore", "RationaleAndScoreOutput", "last_token_index"]


@dataclass
class RationaleAndScoreOutput(ModelOutput):
    """Outputs of ``Qwen2ForRationaleAndScore``.

    Attributes:
        loss: the cross-entropy over the labelled (rationale) tokens, when ``labels`` are given: summed and divided
            by ``num_items_in_batch`` when given (the Trainer's count of labelled tokens in the whole accumulated
            batch), else their mean.
        logits: LM logits, (batch, seq, vocab), only when no ``labels`` are given (training computes the LM head
            at the labelled positions alone).
        scores: the score head at the last non-padding token, (batch,), float32.
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    scores: torch.Tensor | None = None


def last_token_index(input_ids: torch.Tensor, attention_mask: torch.Tensor | None, pad_token_id: int | None) -> torch.Tensor:
    """Index of the last real token of each row (right or left padding), as the score head reads it.

    Uses the attention mask when given (robust to a pad id inside the text), else the rightmost non-pad token as
    transformers' ``Qwen2ForSequenceClassification`` does.
    """
    seq_len = input_ids.shape[-1]
    positions = torch.arange(seq_len, device=input_ids.device)
    if attention_mask is not None:
        real = attention_mask.to(torch.bool)
    elif pad_token_id is not None:
        real = input_ids != pad_token_id
    else:
        return torch.full(input_ids.shape[:1], seq_len - 1, device=input_ids.device, dtype=torch.long)
    return (positions * real).argmax(-1)


class Qwen2ForRationaleAndScore(Qwen2ForCausalLM):
    """``Qwen2ForCausalLM`` plus ``score = Linear(hidden_size, 1, bias=False)`` on the last token."""

    # The Trainer counts the labelled tokens of each accumulated batch (num_items_in_batch) only for a model that
    # takes it: each token then weighs the same in an optimizer step, whichever micro-batch it is in, as trl's
    # SFTTrainer weighs the seq2seq recipe's (train.joint_loss.JointLossTrainer passes it on).
    accepts_loss_kwargs = True

    # A causal base has no score head: from_pretrained creates it and initialises it like any missing weight. Declared
    # expected here, transformers' load report does not list it as MISSING with its advice to train on a downstream
    # task, which this recipe is doing; train.regression.build_model says in one line that the head starts anew.
    # transformers 5 applies these patterns to the report only, after the missing weights are initialised.
    _keys_to_ignore_on_load_missing = [r"^score\.weight$"]

    def __init__(self, config):
        super().__init__(config)
        # The class name matches no transformers loss, so loss_type would be None and the Trainer would count the
        # labelled tokens (num_items_in_batch) over all of `labels`; forward divides a sum over labels[:, 1:]. As a
        # causal LM's loss, the Trainer counts labels[..., 1:] too (trainer.py: _loss_shifts_labels), the positions
        # forward predicts, whatever position 0 holds.
        self.loss_type = "ForCausalLM"
        self.score = nn.Linear(config.hidden_size, 1, bias=False)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        num_items_in_batch: torch.Tensor | int | None = None,
        **kwargs,
    ) -> RationaleAndScoreOutput:
        outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, **kwargs)
        hidden = outputs.last_hidden_state
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        last = last_token_index(input_ids, attention_mask, self.config.pad_token_id)
        scores = self.score(hidden[rows, last]).squeeze(-1).float()
        if labels is None:
            return RationaleAndScoreOutput(logits=self.lm_head(hidden), scores=scores)
        # Training: project only the positions whose next token is labelled (the rationale), never the prompt.
        # The full (batch, seq, vocab) logits of a 4k-token row would take 1.2 GB in bf16 for nothing.
        next_labels = labels[:, 1:]
        mask = next_labels != -100
        if not bool(mask.any()):
            loss = hidden.sum() * 0.0  # a batch without labelled tokens contributes a differentiable zero
        else:
            logits = self.lm_head(hidden[:, :-1][mask])
            loss = F.cross_entropy(logits.float(), next_labels[mask], reduction="sum")
            # per token of the whole accumulated batch; a mean over this micro-batch alone weighed a token by
            # 1/(labelled tokens in its micro-batch), the gradient-accumulation loss bug
            loss = loss / (mask.sum() if num_items_in_batch is None else num_items_in_batch)
        return RationaleAndScoreOutput(loss=loss, scores=scores)
