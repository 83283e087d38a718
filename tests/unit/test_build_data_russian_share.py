"""build-data's Russian-share filter leaves code out, as the instructions stage's language filter does: the
identifiers a code task's rationale quotes counted against its share, and Russian rationales were dropped as
``not_russian``."""

from __future__ import annotations

import judge
from train.build_data import build_rows, russian_share
from train.synthetic.generation import non_russian_share

RATIONALE = ("Ответ верный: функция `def merge_sorted_lists(left_list, right_list)` возвращает "
             "`sorted(left_list + right_list)`.")
FENCED = "Код правильный:\n```python\nimport sys\nsys.stdout.write(merge_sorted_lists(a, b))\n```\nОшибок нет."


def test_code_is_left_out_of_the_share():
    assert russian_share(RATIONALE) == 1.0 and russian_share(FENCED) == 1.0
    assert russian_share("Ответ верный, but the rest is English.") < 0.5
    assert non_russian_share(RATIONALE, True) == 0.0 and non_russian_share(RATIONALE, False) > 0.5


def test_a_russian_rationale_quoting_code_trains_at_the_default_share():
    record = judge.JudgeRecord(id="c", instruction="Напиши функцию слияния двух отсортированных списков.",
                               answer="def merge_sorted_lists(a, b): return sorted(a + b)", criteria_name="Грамотность",
                               rubrics="0: Ответ неверный.\n\n1: Ответ верный.", expert_scores=(1.0, 1.0),
                               expert_feedback=(RATIONALE, FENCED), task_type="Editing")  # fmt: skip
    rows, report = build_rows([record], recipe="seq2seq", zero_shot="drop")
    assert [row["id"] for row in rows] == ["c/0", "c/1"] and not report.dropped
