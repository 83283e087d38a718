"""Scoring a run against the experts (`judge-eval score`, `compare`).

- ``score``: the command; ``item_table``: the per-item columns and every cell's metrics; ``metrics``, ``bootstrap``:
  the paper's metrics and their intervals; ``pollux_official``: POLLUX's own evaluator;
- ``schema``: the typed ``metrics.json``; ``compare``, ``comparison``: runs side by side and the typed
  ``compare.json``; ``json_record``: the base both files' types share.
"""
