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


INLINE_PROSE = "Ответ: `The answer is wrong because the model ignored the question entirely.`"
UNCLOSED = "Плохо. ```The rest is English prose explaining the verdict at length."


def test_english_prose_in_backticks_or_after_an_unclosed_fence_is_not_code():
    assert russian_share(INLINE_PROSE) < 0.5 and russian_share(UNCLOSED) < 0.5
    # an unclosed fence with a language tag: the tag goes, the text after it counts
    assert russian_share("Плохо.\n```text\nThe rest is English prose explaining the verdict.") < 0.5
    # code keeps being code: identifiers, calls, a two-word span
    assert russian_share("Ответ верный: `x = len(items)` и `import os` подходят.") == 1.0


def test_english_prose_in_backticks_is_dropped_as_not_russian():
    record = judge.JudgeRecord(id="p", instruction="Ответь на вопрос.", answer="Ответ.", criteria_name="Грамотность",
                               rubrics="0: Ответ неверный.\n\n1: Ответ верный.", expert_scores=(0.0, 0.0),
                               expert_feedback=(INLINE_PROSE, UNCLOSED), task_type="Editing")  # fmt: skip
    rows, report = build_rows([record], recipe="seq2seq", zero_shot="drop")
    assert rows == [] and report.dropped["not_russian"] == 2


def test_the_instructions_stage_keeps_its_own_rule():
    """Its filter leaves every backticked span and an unclosed fence's rest out, as before: a task may quote foreign
    material in backticks, and its 5% bound would drop it."""
    assert non_russian_share("Переведите: `The answer is wrong because the model ignored it.`", True) == 0.0
    assert non_russian_share("Переведите. ```The rest is English prose.", True) == 0.0
