"""The model card (README.md in an export): the hub's YAML front matter, what the folder records (recipe, data,
hyperparameters, prompt version), serve commands for judge-serve and plain vLLM, and evaluation figures from a
scored run; ``judge-train card`` writes it; every export gets one.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_model_card.py.
"""

from __future__ import annotations

import judge
from tests.support.model_card import front_matter


def test_every_export_gets_a_card(trained_regression_dir, regression_run):
    """The recipe's export (session fixture) holds README.md naming its mode and prompt version, and the steps and
    losses of the training (the result is recorded in run.json before the card is written from it)."""
    card = (trained_regression_dir / "README.md").read_text(encoding="utf-8")
    assert front_matter(card)["tags"][-1] == "regression"
    assert judge.PROMPT_VERSION in card
    losses = [entry["loss"] for entry in regression_run.log_history if "loss" in entry]
    assert regression_run.global_step > 0 and losses
    assert (f"- optimizer steps: {regression_run.global_step}; training loss {losses[0]:.4f} → {losses[-1]:.4f}"
            in card), card
