"""Can this judge stand in for an expert? The validity section of ``judge-eval score`` (docs/validity.md).

One module per statistic, pure functions over the item table's columns:

- ``alt_test``: the alternative annotator test (Calderon, Reichart and Dror, ACL 2025);
- ``ceiling``: the experts' ceiling, each expert and the judge against the rest of the panel;
- ``agreement``: Krippendorff's alpha (ordinal), quadratic-weighted kappa, agreement by how much the experts agreed;
- ``bias``: leniency, length bias, marginal homogeneity;
- ``section``: the ``validity`` section of ``metrics.json`` (its types: ``judge.metrics_json.validity``);
  ``render``: its sentences and tables in the reports; ``paired``: two judges' figures on the same items
  (``judge-eval compare``).
"""
