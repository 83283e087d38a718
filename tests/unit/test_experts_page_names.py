"""``judge-eval experts``' experts.md and experts.html write names from the data (evaluated models, criteria) as every
other page does (``eval.reports.names``): inert Markdown, no bidirectional control, at most ``NAME_CHARS``
characters."""

from __future__ import annotations

import re

import judge
from eval.experts.tables import expert_tables, render_html, render_markdown
from eval.reports.names import BIDI_CONTROLS, NAME_CHARS
from tests.support.release_artifacts import released_row, write_released_dataset
from tests.unit.test_eval_experts import EDITING

LINKED = "m[x](y) **b** _x_ \u202eevil"
LONG = "q" * 1000


def _tables(tmp_path):
    rows = [released_row(EDITING, "repeats", [(2, "Комментарий эксперта."), (1, "Комментарий эксперта.")],
                         instruction=f"Задание {k}.", answer=f"Ответ {k}.", model_id=model)
            for k, model in enumerate((LINKED, LONG, "plain"))]
    return expert_tables(judge.load_records(write_released_dataset(tmp_path / "POLLUX", rows)))


def test_experts_md_writes_a_models_name_as_inert_markdown(tmp_path):
    text = render_markdown(_tables(tmp_path))
    assert "[x](y)" not in text and "**b**" not in text
    assert r"\](" in text and r"\*\*b\*\*" in text
    assert not BIDI_CONTROLS.search(text)
    assert "q" * (NAME_CHARS + 1) not in text and "…" in text
    assert "| plain |" in text  # a plain name as it is


def test_experts_html_writes_a_models_name_without_bidi_controls_and_cut(tmp_path):
    page = render_html(_tables(tmp_path))
    assert not BIDI_CONTROLS.search(page)
    assert "q" * (NAME_CHARS + 1) not in page and "…" in page
    assert "<td>plain</td>" in page
    assert re.search(r"<td>m\[x\]\(y\) \*\*b\*\* _x_ evil</td>", page)  # escaped HTML shows it as written
