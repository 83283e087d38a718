"""Scoring a run against the experts (`judge-eval score`, `compare`).

- ``score``: the command; ``item_table``: the per-item columns and every cell's metrics; ``metrics``, ``bootstrap``:
  the paper's metrics and their intervals; ``pollux_official``: POLLUX's own evaluator;
- ``compare``, ``comparison``: runs side by side and the typed ``compare.json``.

The typed ``metrics.json`` that ``score`` writes is ``judge.metrics_json``: the model card of ``judge-train`` reads it
too.
"""
