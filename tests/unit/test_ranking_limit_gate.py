"""The binary gate under ``--limit``: a rubric without a readable scale gates by the whole data's binary criteria.

POLLUX's ``src/metrics.py`` (ai-forever/POLLUX at 83f6eb6b) collects ``binary_criteria`` from every row of the data
set and treats a scale-less rubric as binary when its (meta, criterion) is binary there. The ranking collected them
from the selected instructions only, so a ``--limit`` that left out the instruction holding the binary rubric turned
the gate off, and the matrix was decided on the subset without a word. Expected values are derived by hand below.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from eval.cli import main
from eval.ranking.compare import compare_rankings
from tests.support.eval_ranking import Candidate, Judge, rank_argv, write_rank_run
from tests.support.release_instructions import instruction_row, write_instructions_dataset

SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"  # 0..2
NO_SCALE = "Есть ли в ответе критическая ошибка? Да или нет."  # no level POLLUX's reader can see
BINARY = "0: ошибки нет\n\n1: ошибка есть"  # {0, 1}: binary


def test_limit_keeps_the_data_s_binary_rule(tmp_path: Path, caplog) -> None:
    """P1 (meta m): X on 0..2, C scale-less; P2 (meta m): X, C binary. The judge scores P1 X 2, C 1.

    --limit 1 ranks P1 only. POLLUX: (m, C) is binary in the data, so P1's C is a gate, scored 1: P1's scores
    become 0, X 0; the grand mean pools the non-binary scores (X): 0. On the subset alone, C was no gate: X
    2/2 = 1, C kept raw (1) and pooled as non-binary: grand mean (1 + 1) / 2 = 1.
    """
    rows = [instruction_row(1, "Инструкция 1: напиши текст.", "m", [("X", SCALE), ("C", NO_SCALE)]),
            instruction_row(2, "Инструкция 2: напиши текст.", "m", [("X", SCALE), ("C", BINARY)])]
    data = write_instructions_dataset(tmp_path / "data", rows)
    out = tmp_path / "rank"
    table = {("Ответ один.", "X"): 2, ("Ответ один.", "C"): 1, ("Ответ два.", "X"): 2, ("Ответ два.", "C"): 0}
    caplog.set_level(logging.INFO, logger="judge_eval.rank")
    with Candidate(override={1: "Ответ один.", 2: "Ответ два."}) as cand, Judge(table) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--limit", "1")) == 0
    matrix = json.loads((out / "rank.json").read_text(encoding="utf-8"))["matrix"]
    assert matrix["grand_mean"] == 0.0 and matrix["cells"]["mean_over_criteria"]["mean_over_meta"]["n"] == 1
    assert matrix["cells"]["X"]["m"]["value"] == 0.0 and matrix["cells"]["C"]["m"]["value"] == 0.0
    assert matrix["binary_criteria"] == [["m", "C"]]  # what compare gates this run by
    # The log's summary and the page say the matrix is of a part of the data (and of one instruction: no interval).
    assert ("over 1 non-binary scores of 1 instructions (no interval: one instruction redrawn is always itself, an "
            "interval needs 2) (a selection: 1 of the data's 2 instructions, --limit 1)") in caplog.text
    assert ("<b>a selection</b>: 1 of the data's 2 instructions (--limit 1); the matrix is theirs, not the data "
            "set's") in (out / "report.html").read_text(encoding="utf-8")


def _run(folder: Path, model: str, scores: dict[int, tuple[float, float]]) -> Path:
    """A ranking folder whose data has (m, C) binary: per prompt_id, X (0..2) and a scale-less C, scored."""
    rows = [(p, "m", name, rubrics, score) for p, (x, c) in scores.items()
            for name, rubrics, score in (("X", SCALE, x), ("C", NO_SCALE, c))]
    return write_rank_run(folder, model, rows, matrix={"binary_criteria": [["m", "C"]]})


def test_compare_gates_by_each_run_s_data(tmp_path: Path) -> None:
    """A: P1 X 2, C 1; P2 X 2, C 0. B: X 2, C 0 on both. (m, C) binary in the data (rank.json), so A's P1 is gated:
    A's X (0 + 1) / 2 = 1/2, B's 1, delta +1/2 (read on the items alone, C was no gate and the delta 0)."""
    a = _run(tmp_path / "a", "A", {1: (2.0, 1.0), 2: (2.0, 0.0)})
    b = _run(tmp_path / "b", "B", {1: (2.0, 0.0), 2: (2.0, 0.0)})
    cell = compare_rankings(a, b, n_boot=0, allow_other_judge=True)["cells"]["X"]["m"]
    assert (cell["a"], cell["b"], cell["delta"]) == (0.5, 1.0, 0.5)


def test_a_malformed_binary_criteria_field_is_named(tmp_path: Path) -> None:
    """rank.json's binary_criteria edited into text: a ValueError naming the file and field, not a traceback."""
    a = _run(tmp_path / "a", "A", {1: (2.0, 0.0), 2: (2.0, 0.0)})
    b = write_rank_run(tmp_path / "b", "B", [(1, "m", "X", SCALE, 2.0)], matrix={"binary_criteria": "m,C"})
    with pytest.raises(ValueError, match=r"rank.json: field 'matrix.binary_criteria' must be a list of \[meta, "):
        compare_rankings(a, b, n_boot=0, allow_other_judge=True)
