"""A task chosen at a task-type probability the threshold let through but below one half (the shipped tfidf
threshold is 0.105) is judged on that task's criteria, and a run says how many of its rows were so chosen: a
calibrated 0.3 is more likely wrong than right, and before only each row's record held the number."""

from __future__ import annotations

import logging

from judge.criteria_auto import choose_from_scores, expand_rows

ROW = {"answer": "Ответ."}


class _Scripted:
    """Fixed leaf probabilities per instruction, chosen at the shipped classifier's threshold."""

    name = "scripted"
    threshold = 0.105
    SCORES = {"сомнительно": {"Advice": 0.3, "Fact checking": 0.25},     # taken at 0.3: unsure
              "уверенно": {"Advice": 0.9},                              # taken at 0.9
              "ничего": {"Advice": 0.05, "Fact checking": 0.04}}        # below the threshold: the fallback set

    def choose(self, instruction, answer=None, top_k=3):
        return choose_from_scores(self.SCORES[instruction], self.name, self.threshold, top_k)


def test_rows_chosen_below_one_half_are_counted_in_a_warning(caplog):
    rows = [{**ROW, "id": str(i), "instruction": text} for i, text in enumerate(_Scripted.SCORES)]
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        _, choices = expand_rows(rows, _Scripted(), "data.jsonl")
    assert [c["level"] for c in choices] == ["leaf", "leaf", "fallback"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "below 0.5" in r.getMessage()]
    assert warned == [
        "criteria auto: 1 of 3 rows were judged on a task chosen at a task-type probability below 0.5, above the "
        "classifier's threshold 0.105: more likely another task than the one chosen; each row's probability is in its "
        "task choice (task_type_probability), and a row that names its task (task_type) is judged on that task's "
        "criteria"]


def test_no_such_warning_when_every_taken_choice_is_at_least_one_half(caplog):
    rows = [{**ROW, "id": "1", "instruction": "уверенно"}, {**ROW, "id": "2", "instruction": "ничего"}]
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        expand_rows(rows, _Scripted(), "data.jsonl")
    assert not [r for r in caplog.records if "below 0.5" in r.getMessage()]
