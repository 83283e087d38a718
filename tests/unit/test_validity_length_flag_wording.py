"""The length flag is a slope of the judge's oriented residual (its score minus the experts' mean, negated on Critical
criteria) on log length, outside the experts' own leave-one-out slopes: the sentence and the report's row say it as
that, with the confound it carries (a judge that tracks quality less than the experts gets minus the experts' mean's
own slope), not as a bias about length beyond it."""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.support.validity_tables import item_table, split_section

HARSH = ("harsh on long answers as a residual slope (its score minus the experts' mean, negated on Critical "
         "criteria, on log length, below every expert's; a judge that tracks quality less than the experts reads so "
         "where longer answers are better: read it beside κ and α)")
LENIENT = ("lenient on long answers as a residual slope (its score minus the experts' mean, negated on Critical "
           "criteria, on log length, above every expert's; a judge that tracks quality less than the experts reads "
           "so where longer answers are worse: read it beside κ and α)")


def _constant_judge_block():
    """40 answers of log length 4 + i / 10 on a 0-4 scale, three experts scoring their quality (rising with length,
    0 to 4) plus noise, rounded; the judge always 2. Its residual 2 - mean has exactly minus the mean's slope (a
    constant has slope 0), far below the experts' leave-one-out slopes (noise around 0): flagged harsh."""
    rng = np.random.default_rng(0)
    n = 40
    log_length = 4 + np.arange(n) / 10
    experts = np.clip(np.round(((log_length - 4) / 3.9 * 4)[:, None] + rng.normal(0, 0.5, (n, 3))), 0, 4)
    ids = np.tile(np.array(["a", "b", "c"], dtype=object), (n, 1))
    table = item_table(np.full(n, 2.0), experts, ids, low=np.zeros(n), high=np.full(n, 4.0))
    block = split_section(dataclasses.replace(table, answer_chars=np.exp(log_length)))
    assert abs(block.overall.length_bias.judge.slope + np.polyfit(log_length, experts.mean(axis=1), 1)[0]) < 1e-10
    return block


def test_the_sentence_says_the_flag_is_a_residual_slope_with_its_confound():
    block = _constant_judge_block()
    assert block.overall.length_bias.flag == "harsh on long answers"  # metrics.json's value, as it was
    assert block.sentence.endswith(f"; {HARSH}.")


def test_the_report_row_and_a_lenient_flag_read_the_same_way():
    from eval.validity.render import _length_text
    from eval.validity.section import split_sentence

    block = _constant_judge_block()
    assert _length_text(block.overall.length_bias).endswith(f": {HARSH}")
    lenient = dataclasses.replace(block.overall.length_bias, flag="lenient on long answers")
    flipped = dataclasses.replace(block, overall=dataclasses.replace(block.overall, length_bias=lenient))
    assert split_sentence(flipped).endswith(f"; {LENIENT}.")
