"""Pairwise data the reader refuses, naming file, line and field, rather than scoring: a pair whose two answers are
the same text labelled with a winner (no judge reading the answers can meet the label), and a repeated pair, named
with the line it repeats (a pair without an id by its text, not by the id derived from it); and
``--pairwise-orders``' help, which says position bias in the rows' own terms."""

from __future__ import annotations

import json

import pytest

from eval.pairwise.judging import load_pairs
from judge.plumbing.config_files import ConfigError

SCALE = "-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше"
PAIR = {"instruction": "Столица Франции?", "answer_1": "Париж.", "answer_2": "Лион.", "rubrics": SCALE}


def _write(rows: list[dict], path) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("winner", [-1, 1, "answer_1", "answer_2", 1.0])
def test_the_same_answer_on_both_sides_with_a_winner_is_refused(tmp_path, winner):
    """answer_1 == answer_2 makes both orders one prompt: a judge reading the answers gives one raw answer to both,
    verdicts s and -s, so a winner of -1 or 1 agrees with at most one judgment and never with the combined verdict.
    The label is a data error: refused naming the line and field, as any other bad label is."""
    rows = [PAIR, {**PAIR, "answer_2": PAIR["answer_1"], "winner": winner}]
    with pytest.raises(ConfigError, match=r"same\.jsonl: line 2\.winner: .*answer_1 and answer_2 are the same text"):
        load_pairs(_write(rows, tmp_path / "same.jsonl"))


@pytest.mark.parametrize("winner", [None, 0, "tie"])
def test_the_same_answer_on_both_sides_unlabelled_or_a_tie_is_read(tmp_path, winner):
    """Unlabelled or labelled a tie, such a pair is a position-bias probe (the only answer free of position is 0):
    read as any pair."""
    row = {**PAIR, "answer_2": PAIR["answer_1"], **({"winner": winner} if winner is not None else {})}
    (pair,) = load_pairs(_write([row], tmp_path / "same.jsonl"))
    expected = (PAIR["answer_1"], PAIR["answer_1"], None if winner is None else 0)
    assert (pair.answer_1, pair.answer_2, pair.winner) == expected


def test_a_repeated_pair_without_an_id_names_the_line_it_repeats_not_a_derived_id(tmp_path):
    """Two rows of the same text and no id: the id is derived from the text, which the file does not hold; the
    refusal says the row repeats line 1's pair, not that an id the user never wrote appears twice."""
    path = _write([PAIR, {**PAIR, "answer_2": "Марсель."}, PAIR], tmp_path / "dup.jsonl")
    with pytest.raises(ConfigError) as err:
        load_pairs(path)
    said = str(err.value)
    assert said.startswith(f"{path}: line 3: ") and "line 1" in said and "no id" in said
    assert load_pairs(_write([PAIR], tmp_path / "one.jsonl"))[0].id not in said


def test_a_repeated_id_names_the_line_it_first_appeared_on(tmp_path):
    """1 and "1" are one id (ids are read as text): the second names the first's line."""
    rows = [{**PAIR, "id": 1}, {**PAIR, "id": "2", "answer_2": "Ницца."}, {**PAIR, "id": "1", "answer_2": "Лилль."}]
    with pytest.raises(ConfigError, match=r"ids\.jsonl: line 3\.id: '1' appears twice \(first on line 1\)"):
        load_pairs(_write(rows, tmp_path / "ids.jsonl"))


def test_the_pairwise_orders_help_says_position_bias_in_the_rows_terms(capsys):
    """A row's ``verdict`` is in the pair's orientation and stays the same across the orders for a judge reading the
    answers; its ``score`` (the raw answer) is what flips. ``--pairwise-orders``' help says bias shows in the raw
    answers, not in verdicts that do not flip (which, in the rows' terms, is a judge without bias)."""
    from eval.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    said = help_text.split("--pairwise-orders STR")[-1].split("--batch-size")[0]  # the option, not the usage line
    assert "verdicts that do not flip" not in said
    assert "raw answers that do not flip with the order" in said
