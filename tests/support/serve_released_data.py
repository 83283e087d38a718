"""The released benchmark's shards as the hub lays them out, written once for every test that reads them as they are:
tests/unit/test_serve_released_data.py converts them, and the served judges of
tests/integration/serving/test_serve_released_data.py, tests/integration/serving/test_released_judges.py and
tests/integration/training/test_qwen3_judge.py judge and score them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.release_artifacts import (
    write_released_dataset,
)


@pytest.fixture(scope="session")
def released_data(tmp_path_factory) -> Path:
    """The benchmark's layout in miniature: ``<dir>/data/test-0000{0,1,2}-of-00003.parquet``, ``released_rows()``
    as ``write_released_dataset`` spreads them. Read only: a test that needs other rows or shards writes its own."""
    return write_released_dataset(tmp_path_factory.mktemp("released") / "POLLUX")

