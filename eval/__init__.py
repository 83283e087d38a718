"""eval: judging records with a judge and scoring the verdicts against the experts (``judge-eval``).

- ``run`` (config and runner), ``backends`` (how a judge is reached over HTTP), ``local_server`` (a server for a
  checkpoint folder), ``predictions`` (the ``predictions.jsonl`` file);
- ``scoring`` (the ``judge-eval score`` step), ``item_table`` (predictions joined with the experts, every metric
  cell), ``metrics`` (the paper's definitions), ``report`` and ``html_report`` (rendering), ``compare`` (paired
  comparison of runs), ``pollux_official`` (POLLUX's own evaluator);
- ``mera``: the two MERA tasks (ruHumanEval, ruTiE).
"""
