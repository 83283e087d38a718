"""What tests/unit/test_serve_released_data.py and tests/integration/serving/test_serve_released_data.py share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.release_artifacts import (
    write_released_dataset,
)


@pytest.fixture(scope="module")
def released_data(tmp_path_factory) -> Path:
    """The benchmark's layout in miniature: ``<dir>/data/test-0000{0,1,2}-of-00003.parquet``."""
    return write_released_dataset(tmp_path_factory.mktemp("released") / "POLLUX")

