"""A two-weight regressor trained by transformers' ``Trainer`` in milliseconds, and the recipe's ``PreparedRun``
around it: for tests of what the recipes' callbacks do to checkpoints, with no model or tokenizer to build."""

from __future__ import annotations

from pathlib import Path


def regressor():
    """``torch.nn.Module`` mapping ``x`` (2 features) to one value, returning the loss against ``labels`` as the
    Trainer expects."""
    import torch

    class Regressor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 1)

        def forward(self, x, labels=None):
            y = self.linear(x).squeeze(-1)
            return {"loss": ((y - labels) ** 2).mean(), "logits": y}

    return Regressor()


def regressor_rows(n: int) -> list[dict]:
    """``n`` rows of random features, all labelled 0 (seeded: the same rows each call)."""
    import torch

    torch.manual_seed(0)
    return [{"x": torch.randn(2), "labels": torch.tensor(0.0)} for _ in range(n)]


def prepared_run(output_dir: str | Path, **fields):
    """``train.recipe_steps.PreparedRun`` of a run writing into ``output_dir``, with a fresh signal stopper; ``fields``
    override its other fields."""
    from train import preemption
    from train.recipe_steps import PreparedRun

    config = type("Config", (), {"overwrite_output_dir": False, "output_dir": str(output_dir)})()
    return PreparedRun(**{"config": config, "launch": None, "resume_from": None, "base_model": "regressor",
                          "tokenizer": None, "dtype": None, "stopper": preemption.SaveAndStopOnSignal(), **fields})
