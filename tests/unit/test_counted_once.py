"""One ``counted`` for every stage's text ("1 node", "2 nodes", "3 criteria"): training's submit plan, serving's
and the reward clients' refusals and evaluation's reports word a count alike, from ``judge`` (a mechanism two
stages need lives once there, not copied into each)."""

from __future__ import annotations

from judge.plumbing.json_reading import counted


def test_counted_puts_the_noun_in_the_counts_number():
    assert [counted(n, "node") for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]
    assert (counted(1, "criterion", "criteria"), counted(3, "criterion", "criteria")) == ("1 criterion", "3 criteria")


def test_training_and_evaluation_use_judges_one_counted():
    import eval.validity.render
    import train.slurm_submit

    assert train.slurm_submit.counted is eval.validity.render.counted is counted
