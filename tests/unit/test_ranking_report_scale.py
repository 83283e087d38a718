"""The ranking page says what its cells average and colours them on their own scale: with ``--normalize none`` a
cell is a raw mean on its rubrics' scale (0–2 here), not a 0–1 normalised score."""

from __future__ import annotations

import html

from eval.ranking.matrix import RankedItem, pollux_matrix
from eval.ranking.report import render_ranking_page
from tests.support.eval_ranking import GEN, LITERACY

COUNTS = {"n_instructions": 2, "n_items": 2, "n_answer_failed": 0, "n_cut_in_thinking": 1, "n_finish_length": 0,
          "n_no_answer": 0, "n_empty_answer": 0, "n_no_prediction": 0}


def _page(normalize: str) -> str:
    # Two instructions scored 1 and 1 on a 0..2 rubric: the cell is 1 raw, 1/2 normalised.
    items = [RankedItem(1, GEN, LITERACY, (0, 1, 2), 1.0), RankedItem(2, GEN, LITERACY, (0, 1, 2), 1.0)]
    matrix = pollux_matrix(items, normalize=normalize, n_boot=0).to_json()
    return render_ranking_page({"model": "m", "judge": "j", "data": "d", "counts": COUNTS, "matrix": matrix})


def _first_cell_background(page: str) -> str:
    cell = page.split("<tbody>")[1].split("<td", 2)[2]  # the row's first value cell, after the criterion's name
    return cell.split("background: ")[1].split(";")[0]


def test_raw_scores_are_coloured_on_their_scale_and_called_raw() -> None:
    """A raw 1 on 0..2 is half way up the colour ramp, as a normalised 1/2 is; the page calls the cells raw scores
    on the range 0 to 2, and normalised ones normalised on 0 to 1."""
    raw, normalised = (html.unescape(_page(normalize)) for normalize in ("none", "minmax"))
    # Half way from white (255, 255, 255) to the accent (47, 95, 179): (151, 175, 217), for both.
    assert _first_cell_background(raw) == _first_cell_background(normalised) == "rgb(151,175,217)"
    assert "means of raw scores, on their rubrics' own scales (not normalised)" in raw
    assert "Colours run from white at 0.00 to blue at 2.00" in raw
    assert "normalised to 0–1 by their rubric's scale" in normalised and "blue at 1.00" in normalised


def test_cut_answers_are_not_said_to_be_judged_when_nothing_was_left() -> None:
    """An answer cut inside its thinking is judged only when text is left; one left empty is an empty answer."""
    answers = _page("minmax").split("<h2>Answers</h2>")[1].split("<h2>Not judged</h2>")[0]
    assert "those with text left are judged and scored as they are, those left empty are empty answers" in answers


def test_instructions_too_long_for_the_candidate_are_counted_on_the_page() -> None:
    """Two of two instructions too long for the candidate's context: the Answers note names n_answer_too_long 2,
    never "every instruction answered", and says what it counts and that no_answer items include them."""
    counts = {**COUNTS, "n_answer_too_long": 2, "n_cut_in_thinking": 0, "n_no_answer": 2}
    items = [RankedItem(1, GEN, LITERACY, (0, 1, 2), None, status="no_answer"),
             RankedItem(2, GEN, LITERACY, (0, 1, 2), None, status="no_answer")]
    matrix = pollux_matrix(items, normalize="minmax", n_boot=0).to_json()
    page = html.unescape(render_ranking_page({"model": "m", "judge": "j", "data": "d", "counts": counts,
                                              "matrix": matrix}))
    answers = page.split("<h2>Answers</h2>")[1].split("<h2>Not judged</h2>")[0]
    assert answers.strip().startswith('<p class="note">n_answer_too_long 2. ')
    assert "every instruction answered" not in page
    assert "n_answer_too_long instructions longer than the candidate's context" in answers
    not_judged = page.split("<h2>Not judged</h2>")[1]
    assert not_judged.strip().startswith('<p class="note">n_no_answer 2. ')
    assert "whose answer request failed or whose instruction was too long for the candidate" in not_judged
