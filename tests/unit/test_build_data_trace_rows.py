"""The traces stage's rows given to the tagged or regression recipe: refused, naming what trains them, where each
expert rationale became one row per kept trace."""

from __future__ import annotations

import pytest

from judge.plumbing.config_files import ConfigError
from tests.support.sample_training_lines import kept_record_line as _kept_record_line
from tests.support.sample_training_lines import write_lines as _write
from train import build_data


def _trace_rows(tmp_path):
    """Two kept traces of one item, as ``judge-train data traces`` writes them: the item's record (its experts'
    scores and rationales unchanged) with ``item_id``, ``trace_index``, ``reasoning`` and ``reasoning_score``."""
    line = _kept_record_line()
    rows = [{**line, "id": f"{line['id']}#{sample}", "item_id": line["id"], "trace_index": sample,
             "reasoning": f"Рассуждение номер {sample} о качестве ответа.", "reasoning_score": 2}
            for sample in range(2)]  # fmt: skip
    return build_data.load_training_records(str(_write(tmp_path / "traces.jsonl", rows))), line


@pytest.mark.parametrize("recipe", ["seq2seq", "regression"])
def test_build_rows_refuses_trace_rows(tmp_path, recipe):
    """Built, the two rows gave every expert rationale twice; refused instead, naming the first row."""
    records, line = _trace_rows(tmp_path)
    with pytest.raises(ConfigError) as err:
        build_data.build_rows(records, recipe=recipe, zero_shot="allow")
    message = str(err.value)
    assert f"record '{line['id']}#0'" in message
    assert "`judge-train data traces` rows" in message and "verdict_format: integer" in message
    assert "\n" not in message


def test_build_data_cli_says_it_in_one_line(tmp_path, capsys):
    records_path = tmp_path / "traces.jsonl"
    _trace_rows(tmp_path)
    assert build_data.main(["--data", str(records_path), "--zero-shot", "allow"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "verdict_format: integer" in err


def test_the_item_records_themselves_still_build(tmp_path):
    """Only the traces' own columns refuse a record: the item without them builds one row per expert verdict."""
    line = _kept_record_line()
    records = build_data.load_training_records(str(_write(tmp_path / "items.jsonl", [line])))
    rows, report = build_data.build_rows(records, recipe="seq2seq", zero_shot="allow")
    assert report.n_verdicts == len(line["expert_scores"])
    assert len(rows) + sum(report.dropped.values()) == len(line["expert_scores"])
