"""What tests/unit/test_mera_humaneval.py and tests/integration/mera/test_mera_humaneval.py share."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera.humaneval import (
    load_tasks,
    openai_humaneval_path,
)

SAMPLE = Path(cli.__file__).with_name("data") / "ruhumaneval_sample.jsonl"


@pytest.fixture(scope="module")
def humaneval_tasks():
    return load_tasks(openai_humaneval_path())


# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------

MERA_ROW = {
    "instruction": "Реализуйте функцию:\n{function}",
    "inputs": {"function": "def add(a, b):\n    '''Сложите числа.'''\n",
               "tests": "[{'a': 1, 'b': 2}, {'a': -1, 'b': 1}]"},
    "outputs": ["3", "0"],
    "meta": {"id": 7, "canonical_solution": "    return a + b\n", "entry_point": "add"},
}  # fmt: skip

