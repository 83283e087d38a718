"""Scoring a run against the experts: the item table, the paper's metrics, intervals, POLLUX's evaluator, comparing runs (`judge-eval score`, `compare`)."""
