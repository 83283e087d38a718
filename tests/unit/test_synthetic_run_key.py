"""What a resumed synthetic stage must share with the run that wrote its journal (``train.synthetic.cli``'s run key)."""

from __future__ import annotations

from train.synthetic.cli import stage_run_key
from train.synthetic.config import AnnotateConfig, TracesConfig

TEACHER = {"model": "teacher", "base_url": "http://a:8000/v1", "temperature": 0.6, "max_tokens": 512}


def test_annotate_keys_its_max_tokens_and_traces_does_not():
    """A traces rerun with a raised cap asks again what the lower cap cut, so its cap is left out of the key; annotate
    drops a cut verdict as verdict_cut and no rerun asks it again, so a raised cap on its folder would leave those
    items dropped as if the new cap had been tried on them: its cap stays in the key (a new --output instead)."""
    annotate = stage_run_key("annotate", AnnotateConfig(teacher=TEACHER), None)
    traces = stage_run_key("traces", TracesConfig(teacher=TEACHER), None)
    assert annotate["teacher"] == {"model": "teacher", "temperature": 0.6, "max_tokens": 512}
    assert traces["teacher"] == {"model": "teacher", "temperature": 0.6}
