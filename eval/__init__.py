"""eval: judging records with a judge and scoring the verdicts against the experts (``judge-eval``), one folder a
feature; ``eval.cli`` is the one entry point.

- ``judging``: running a judge (``run``: config and runner; ``backends``: how a judge is reached over HTTP;
  ``local_server``: a server for a checkpoint folder; ``predictions``: the ``predictions.jsonl`` file);
- ``scoring``: the ``judge-eval score`` step (``score``), predictions joined with the experts (``item_table``), the
  paper's definitions (``metrics``), intervals (``bootstrap``), POLLUX's own evaluator (``pollux_official``), the
  paired comparison of runs (``compare``);
- ``validity``: can the judge stand in for an expert (the alternative annotator test, the experts' ceiling,
  agreement, bias);
- ``reports``: report.md and report.html with its explorer;
- ``pairwise``: two answers judged in both orders;
- ``ranking``: ranking a candidate LLM with a judge (``judge-eval rank``);
- ``experts``: the experts' own tables;
- ``mera``: the two MERA tasks (ruHumanEval, ruTiE).
"""
