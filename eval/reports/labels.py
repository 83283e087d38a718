"""The words a metrics.json key is shown under in every table of the reports (report.html's columns, compare.html's
and compare.md's paired rows): one map, so that a metric reads alike wherever it is shown.

A leaf module (no first-party import): ``eval.scoring.compare`` writes compare.md and ``eval.reports.html_report``
imports it, so the map cannot live in the page module.
"""

from __future__ import annotations

__all__ = ["KEY_LABELS"]

#: Column headings of the known keys (report.html's tooltip adds each key's meaning and the key); other keys are
#: shown as they are.
KEY_LABELS = {"n_failed": "failed", "n_no_unique_mode": "no unique mode", "n_out_of_scale": "out of scale",
              "n_out_of_scale_minus_one": "out of scale: -1",
              "mae": "MAE", "mae_in_scale": "MAE (in scale)", "spearman": "Spearman", "pearson": "Pearson",
              "spearman_in_scale": "Spearman (in scale)", "kendall": "Kendall", "vc_judge": "VC judge",
              "vc_experts": "VC experts", "vc_experts_labelled": "VC experts (all labelled)",
              "vc_experts_all": "VC experts (all predicted)", "n_scored": "scored", "n_vc": "n in VC",
              "n_spearman": "n in Spearman", "n_vc_experts_all": "n in VC experts (all predicted)",
              "n_vc_experts_labelled": "n in VC experts (all labelled)",
              "failure_rate": "failure rate", "n_missing": "no prediction", "n_parse_failed": "parse failed",
              "n_request_failed": "request failed", "n_abstained": "abstentions",
              "n_all_abstained": "every expert abstained", "n_scored_in_scale": "scored (in scale)",
              "n_unlabelled": "no expert score", "spearman_n_resamples": "Spearman resamples"}
