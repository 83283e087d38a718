"""The released POLLUX benchmark's rows in miniature, in its hub layout (``data/test-*.parquet``), and their
conversion by ``judge-eval convert``: what the conversion's provenance tests and training's benchmark guard share."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

RUBRIC = "0: плохо\n\n1: средне\n\n2: хорошо"

_RELEASED = dict(instruction="И", reference_answer="", answer="A", model_id="gpt4", task_type="Творческий брейншторминг",
                 task_subtype="", task_subsubtype="", difficulty="Easy", domain="", is_provocative=False,
                 criteria_name="Проактивность", criteria_description="desc", rubrics=RUBRIC, rubrics_example="")  # fmt: skip

RELEASED_ROWS = [
    # the aggregate given
    _RELEASED | {"annotations": [{"comment": "ok", "score": 0.0}, {"comment": "не применимо", "score": -1.0}],
                 "criteria_score": 0.0},
    # no aggregate: the load derives the experts' mean (1.5); and no criteria_description
    _RELEASED | {"answer": "B", "criteria_description": "", "is_provocative": True,
                 "annotations": [{"comment": "a", "score": 1.0}, {"comment": "b", "score": 2.0}], "criteria_score": None},
    # every expert abstained: no aggregate, nothing derived
    _RELEASED | {"answer": "C", "annotations": [{"comment": "a", "score": -1.0}], "criteria_score": -1.0},
]


def hub_folder(tmp_path, rows=RELEASED_ROWS):
    folder = tmp_path / "POLLUX"
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "test-00000-of-00001.parquet")
    return folder


def converted(tmp_path, folder):
    from eval.cli import main

    out = tmp_path / "converted.jsonl"
    assert main(["convert", "--data", str(folder), "--out", str(out)]) == 0
    return out

