"""The file a pairwise run writes its judgments to, and how a run folder is told to be pairwise.

Apart from ``eval.pairwise.judging`` so that what every ``judge-eval score`` asks first (is this run pairwise? is
its predictions file there?) imports neither the judging client nor its wire types (pydantic, httpx): a pointwise
run's score never uses them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PAIRWISE_PAIRS", "PAIRWISE_PREDICTIONS", "is_pairwise_run"]

PAIRWISE_PREDICTIONS = "pairwise_predictions.jsonl"
#: One row per pair: its verdict in each order and the combined verdict (``eval.pairwise.metrics.pair_verdicts``),
#: written by ``score``; here so that ``--overwrite`` (``eval.judging.run_settings.SCORE_OUTPUTS``) names it too.
PAIRWISE_PAIRS = "pairwise_pairs.jsonl"


def is_pairwise_run(path: str | Path) -> bool:
    """Whether ``path`` (a run folder or its predictions file) holds a pairwise run."""
    path = Path(path)
    return path.name == PAIRWISE_PREDICTIONS or (path.is_dir() and (path / PAIRWISE_PREDICTIONS).is_file()
                                                  and not (path / "predictions.jsonl").is_file())
