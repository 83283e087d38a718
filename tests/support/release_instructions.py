"""The instructions dataset of POLLUX's benchmark job (``ai-forever/POLLUX-instructions``) rebuilt in miniature.

What is known of it (POLLUX's public repository, ``src/answer.py``, ``src/score.py``, ``src/metrics.py``, and the dataset's card):
one row per instruction with ``prompt_id`` (an integer: metrics.py types it ``dict[int, str]``), ``instruction``,
``reference_answer``, ``meta`` (the matrix column) and ``criteria``, a list of ``{criteria_name, rubrics}``; the
scripts read the split ``train`` (answer.py: ``self.split or "train"``). The hub lays a dataset out as Parquet
shards ``data/<split>-0000k-of-0000n.parquet``; the real shard count is not known here (one is written).

    from tests.support.release_instructions import write_instructions_dataset
    folder = write_instructions_dataset(tmp_path / "POLLUX-instructions", rows)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["INSTRUCTIONS_SCHEMA", "instruction_row", "write_instructions_dataset"]

INSTRUCTIONS_SCHEMA = pa.schema([
    ("prompt_id", pa.int64()),
    ("instruction", pa.string()),
    ("reference_answer", pa.string()),
    ("meta", pa.string()),
    ("criteria", pa.list_(pa.struct([("criteria_name", pa.string()), ("rubrics", pa.string())]))),
])


def instruction_row(prompt_id: int, instruction: str, meta: str, criteria: list[tuple[str, str]],
                    reference_answer: str | None = "") -> dict[str, Any]:
    """One row in the released layout (``criteria`` as a list of structs)."""
    return {"prompt_id": prompt_id, "instruction": instruction, "reference_answer": reference_answer, "meta": meta,
            "criteria": [{"criteria_name": name, "rubrics": rubrics} for name, rubrics in criteria]}


def write_instructions_dataset(folder: Path, rows: list[dict[str, Any]], split: str = "train") -> Path:
    """``folder/data/<split>-00000-of-00001.parquet`` holding ``rows`` with the released schema; returns ``folder``."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=INSTRUCTIONS_SCHEMA)
    pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet")
    return folder
