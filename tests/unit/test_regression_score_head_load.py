"""The regression recipe's score head, loaded from a causal base, is new by design: transformers' load report does
not list it (``score.weight | MISSING`` with "Consider training on your downstream task" read as a fault), one line of
the recipe says it starts anew, and it is initialised exactly as it is when the report does list it.

The base is the tiny causal Qwen2 of ``tests/support/fixtures_models`` (the real Qwen vocabulary); the reference load
takes the class's expected-missing patterns away, as transformers' own default has none.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from train.config import load_config
from train.regression import build_model
from train.score_head import Qwen2ForRationaleAndScore

TINY_REGRESSION = Path(__file__).resolve().parents[2] / "configs" / "train" / "tiny" / "regression.yaml"


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _load(config, base, loggers=("transformers", "train.regression")):
    """``build_model`` from ``base`` with the seed the recipe sets; what the loggers said, and the model."""
    lines = _Lines()
    saved = []
    for name in loggers:  # transformers' root logger does not propagate to the root caplog reads
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.addHandler(lines)
        logger.setLevel(logging.INFO)
    try:
        torch.manual_seed(0)
        model = build_model(config, str(base), torch.float32, 0)
    finally:
        for logger, level in saved:
            logger.removeHandler(lines)
            logger.setLevel(level)
    return model, lines.lines


def test_a_causal_base_loads_with_no_missing_score_head_reported_and_one_line_saying_it_is_new(tiny_causal_dir,
                                                                                                tmp_path, monkeypatch):
    config = load_config(TINY_REGRESSION, overrides={"output_dir": str(tmp_path / "run")})
    model, said = _load(config, tiny_causal_dir)
    assert not [line for line in said if "MISSING" in line or "score.weight" in line], said
    assert [line for line in said if line.startswith("score head:")] == [
        f"score head: new ({tiny_causal_dir} has none: Qwen2ForCausalLM), initialised from the seed; this run "
        f"trains it ({model.config.hidden_size} -> 1)"]

    # the same head as a load whose report lists it: initialised, not left empty by the pattern
    monkeypatch.setattr(Qwen2ForRationaleAndScore, "_keys_to_ignore_on_load_missing", None)
    reference, reported = _load(config, tiny_causal_dir)
    assert any("score.weight" in line and "MISSING" in line for line in reported), reported  # what a user saw
    head = model.score.weight.detach()
    assert head.device.type == "cpu" and bool(torch.isfinite(head).all()) and float(head.abs().sum()) > 0
    assert torch.equal(head, reference.score.weight)


def test_a_regression_runs_own_folder_as_the_base_loads_its_head_and_says_so(tiny_causal_dir, tmp_path):
    """A regression run's trained/ (or checkpoint-N) folder is Qwen2ForRationaleAndScore, with score.weight: the head
    loads from it, and the line says so from the weights' names, not "new" from its architectures."""
    config = load_config(TINY_REGRESSION, overrides={"output_dir": str(tmp_path / "run")})
    trained = Qwen2ForRationaleAndScore.from_pretrained(str(tiny_causal_dir), dtype=torch.float32)
    with torch.no_grad():
        trained.score.weight.fill_(0.5)
    folder = tmp_path / "earlier" / "trained"
    trained.save_pretrained(folder)
    model, said = _load(config, folder)
    assert bool((model.score.weight == 0.5).all())
    assert [line for line in said if line.startswith("score head:")] == [
        f"score head: loaded from {folder} (Qwen2ForRationaleAndScore), and trained further by this run"]
