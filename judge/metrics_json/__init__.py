"""The typed ``metrics.json``: what ``judge-eval score`` writes, and what ``judge-eval compare``, the reports and
``judge-train card`` read. Here, in the contract, because two stages read it: eval, which writes it, and train, whose
model card quotes it.

- ``metrics``: the file (``Metrics``) and its headline cells;
- ``validity``: its ``validity`` section, with the alternative annotator test's settings;
- ``json_record``: the typed JSON objects both are made of (and ``compare.json``'s, in ``eval.scoring.comparison``).
"""
