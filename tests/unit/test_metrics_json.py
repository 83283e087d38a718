"""The typed metrics.json reader (``judge.metrics_json``) refuses, naming the field, a value the pages and
``judge-eval compare`` would otherwise fail on far from the file."""

from __future__ import annotations

import pytest

from judge.metrics_json.json_record import JsonRecordError
from judge.metrics_json.metrics import Metrics

_CELL = {"n": 1, "n_failed": 0, "n_no_unique_mode": 0, "mae": 0.0, "mae_ci": [0.0, 0.0]}
_RAW = {"judge": "j", "target": "mode", "settings": {"n_boot": 0, "seed": 0, "vc_repeats": 1, "ci_level": 0.95},
        "splits": {"all": {"overall": _CELL, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}}}


@pytest.mark.parametrize("judge, kind", [(5, "int"), (["a"], "list"), (None, "NoneType"), ({"a": 1}, "dict")])
def test_a_judge_that_is_not_text_is_refused_naming_the_field(judge, kind):
    """A metrics.json whose "judge" was a number or a list was read as it was, and ``compare --out`` stopped in a
    TypeError building compare.html; now the reader's error, naming the file and the field."""
    assert Metrics.from_json(_RAW).judge == "j"
    with pytest.raises(JsonRecordError) as info:
        Metrics.from_json({**_RAW, "judge": judge})
    assert str(info.value) == f"metrics.json: Metrics.judge is not readable (expected a string, got {kind})"
