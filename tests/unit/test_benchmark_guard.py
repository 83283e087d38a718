"""Training's guard against the released benchmark's rows: it reads every row of a JSONL file, and the
criteria-classifier's usage examples that train on the release pass ``--allow-benchmark-rows`` as shown."""

from __future__ import annotations

import json

import pytest

from tests.support.released_rows import RELEASED_ROWS
from tests.support.released_rows import converted as _converted
from tests.support.released_rows import hub_folder as _hub_folder


def test_criteria_classifier_usage_examples_run_as_shown():
    """Every usage example that trains on the release names --allow-benchmark-rows, without which the command
    refuses it."""
    import train.cli
    import train.criteria_classifier

    examples = [line for module in (train.criteria_classifier, train.cli) for line in module.__doc__.splitlines()
                if "criteria-classifier" in line and "ai-forever/POLLUX" in line]
    # criteria_classifier's docstring shows one; none found means the example moved out of reach of this check
    assert examples
    for line in examples:
        assert "--allow-benchmark-rows" in line, line


def test_the_benchmark_guard_reads_every_row_of_a_jsonl_file(tmp_path):
    """A JSONL file whose first row is a plain labelled one and a later row the benchmark's (a converted one with an
    empty criteria_description included) is refused, naming that row's line."""
    from train.build_data import BenchmarkRowsError
    from train.criteria_rows import refuse_benchmark_sources

    converted = _converted(tmp_path, _hub_folder(tmp_path, [RELEASED_ROWS[1]]))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"instruction": "Напиши план.", "label": "Plans / Road map"}, ensure_ascii=False)
                     + "\n\n" + converted.read_text(encoding="utf-8"), encoding="utf-8")  # fmt: skip
    with pytest.raises(BenchmarkRowsError, match=r"mixed\.jsonl: line 3 .*released POLLUX benchmark's schema"):
        refuse_benchmark_sources([mixed], allow=False)
    refuse_benchmark_sources([mixed], allow=True)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"instruction": "Напиши план.", "label": "Plans / Road map"}) + "\n", encoding="utf-8")
    refuse_benchmark_sources([plain], allow=False)
