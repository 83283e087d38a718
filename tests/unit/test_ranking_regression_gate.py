"""`judge-eval rank` with a regression judge: the binary gate reads a head's continuous score at its nearest level.

POLLUX's ``src/metrics.py`` (ai-forever/POLLUX at 83f6eb6b) closes an instruction's gate when a binary criterion's
score is anything but 0 (``raw_score != 0``), a number it reads out of the judge's text (a level, from a judge that
keeps to the rubric; its number pattern takes a decimal too). A regression head's score is its raw value clipped into the scale, so a Critical criterion the head puts at 0.004 would
zero the instruction. Expected values are derived by hand in each docstring.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.ranking.matrix import RankedItem, gate_score, pollux_matrix, pollux_scale_levels
from eval.ranking.rank import ranked_items

X = pollux_scale_levels("0: нет\n\n1: частично\n\n2: да")  # 0..2
G = pollux_scale_levels("0: нет нарушения\n\n1: есть нарушение")  # {0, 1}: binary, a gate
HEAD = "regression_head"


def test_a_heads_critical_score_gates_at_its_nearest_level() -> None:
    """Two instructions of meta m scored by a head: P1 X 1.6, G 0.004; P2 X 2.0, G 0.97.

    G snapped: P1 0.004 -> 0 (open), P2 0.97 -> 1 (closed: P2's scores become 0). Normalised values keep the head's
    own number: X = (1.6 / 2 + 0) / 2 = 0.4; G = (0.004 + 0) / 2 = 0.002; the grand mean pools X only: 0.4.
    (Gating on the raw value closed both: X 0, G 0.)
    """
    items = [RankedItem(1, "m", "X", X, 1.6, source=HEAD), RankedItem(1, "m", "G", G, 0.004, source=HEAD),
             RankedItem(2, "m", "X", X, 2.0, source=HEAD), RankedItem(2, "m", "G", G, 0.97, source=HEAD)]
    matrix = pollux_matrix(items, n_boot=0)
    assert matrix.rows == ["G", "X", "mean_over_criteria"]
    assert matrix.values[:, 0].tolist() == pytest.approx([0.002, 0.4, 0.4])
    # A verdict's score is read as POLLUX reads it: any score but 0 closes the gate.
    verdicts = [RankedItem(1, "m", "X", X, 2.0), RankedItem(1, "m", "G", G, 1.0)]
    assert pollux_matrix(verdicts, n_boot=0).values[1, 0] == 0.0


def test_a_decimal_a_judge_writes_on_a_gate_closes_it_as_pollux_reads_it() -> None:
    """POLLUX's score_utils.py (ai-forever/POLLUX at 9179cb4e) reads "[RESULT] 0,5 [END]" as 0.5, within the gate's 0..1,
    and metrics.py closes the gate on any score but 0: P1's X (2 of 0..2, normalised 1.0) becomes 0. A verdict's
    score is never snapped to a level (only a head's is), so the toolkit closes it too; a gate at 0 leaves X at 1.0."""
    from judge.verdicts import parse_pollux_result

    half = parse_pollux_result("[FEEDBACK] нарушение частичное [RESULT] 0,5 [END]").score
    assert half == 0.5 and gate_score(RankedItem(1, "m", "G", G, half)) == 0.5
    closed = pollux_matrix([RankedItem(1, "m", "X", X, 2.0), RankedItem(1, "m", "G", G, half)], n_boot=0)
    open_ = pollux_matrix([RankedItem(1, "m", "X", X, 2.0), RankedItem(1, "m", "G", G, 0.0)], n_boot=0)
    assert closed.values[1, 0] == 0.0 and open_.values[1, 0] == 1.0


@pytest.mark.parametrize(("score", "levels", "gate"), [
    (0.004, G, 0.0), (0.97, G, 1.0), (0.49, G, 0.0),
    (0.5, G, 1.0),    # halfway: the higher level, as POLLUX's gate closes on any score above 0
    (0.3, (), 0.0),   # a rubric without levels, binary by its (meta, criterion) elsewhere: 0 or 1
])  # fmt: skip
def test_gate_score_snaps_a_head_score_only(score, levels, gate) -> None:
    assert gate_score(RankedItem(1, "m", "G", levels, score, source=HEAD)) == gate
    assert gate_score(RankedItem(1, "m", "G", levels, score)) == score  # a verdict's own


def test_ranked_items_carry_the_score_source(tmp_path: Path) -> None:
    """A prediction row's ``score_source`` reaches the ranked item, with either verdict reader; the matrix then
    gates as above: P1 G 0.004 (head) leaves P1 X 2 -> 1.0 (gating on the raw value made it 0)."""
    import judge

    records = [judge.JudgeRecord(id=f"1#{k}#x", instruction="Задание", answer="Ответ", criteria_name=name,
                                 rubrics=rubrics, extra={"prompt_id": 1, "meta": "m"})
               for k, (name, rubrics) in enumerate([("X", "0: нет\n\n1: частично\n\n2: да"),
                                                    ("G", "0: нет нарушения\n\n1: есть нарушение")])]
    judge.write_jsonl(records, tmp_path / "items.jsonl")
    rows = [{"id": "1#0#x", "raw_output": "Обоснование.", "score": 2.0, "parse_ok": True, "score_source": HEAD},
            {"id": "1#1#x", "raw_output": "Обоснование.", "score": 0.004, "parse_ok": True, "score_source": HEAD}]
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                                encoding="utf-8")
    for reader in ("toolkit", "pollux"):
        items = ranked_items(tmp_path / "items.jsonl", tmp_path / "predictions.jsonl", reader)
        assert [(it.criteria_name, it.score, it.source) for it in items] == [("X", 2.0, HEAD), ("G", 0.004, HEAD)]
        assert pollux_matrix(items, n_boot=0).values[1, 0] == 1.0  # X: 2 / 2, the gate open
