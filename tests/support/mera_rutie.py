"""What tests/unit/test_mera_rutie.py and tests/integration/mera/test_mera_rutie.py share."""

from __future__ import annotations

from pathlib import Path


from eval.mera import cli

SAMPLE = Path(cli.__file__).with_name("data") / "rutie_sample.jsonl"

