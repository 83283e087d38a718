"""The log line ``judge-eval rank`` ends with (``eval.ranking.rank._summary_line``) says what the grand mean rests on:
the instructions with a non-binary score, the count the matrix's corner reports, not every instruction scored."""

from __future__ import annotations

from eval.ranking.matrix import RankedItem, pollux_matrix, pollux_scale_levels
from eval.ranking.rank import _summary_line

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"
BINARY = "0: нет\n\n1: да"


def test_the_grand_mean_names_the_instructions_it_rests_on():
    """P1: gate G 0, X 2 (minmax 1.0); P2: G 0, X 0 (0.0); P3: G 0, X unparsed. The grand mean pools the non-binary
    scores: (1.0 + 0.0) / 2 = 0.5 over 2 scores of 2 instructions (P1, P2); P3 has a binary score only. The line
    said "of 3 instructions" (every instruction with any score) while the corner cell says 2."""
    levels, gate = pollux_scale_levels(SCALE), pollux_scale_levels(BINARY)
    items = [RankedItem(1, "m", "G", gate, 0.0), RankedItem(1, "m", "X", levels, 2.0),
             RankedItem(2, "m", "G", gate, 0.0), RankedItem(2, "m", "X", levels, 0.0),
             RankedItem(3, "m", "G", gate, 0.0), RankedItem(3, "m", "X", levels, None, "unparsed")]
    matrix = pollux_matrix(items, n_boot=0)
    assert (matrix.grand_mean, int(matrix.instructions[-1, -1])) == (0.5, 2)
    line = _summary_line(matrix, {"empty_answer": [], "no_answer": []})
    assert line.startswith("grand mean 0.5000 over 2 non-binary scores of 2 instructions; verdicts not scored: ")
