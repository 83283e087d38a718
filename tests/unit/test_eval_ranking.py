"""judge-eval rank: POLLUX's answer.py -> score.py -> metrics.py against stand-in candidate and judge servers.

The two servers are the network boundary (``tests.support.scripted_endpoint``): the test asserts the exact payloads each
receives, and the expected matrix is derived by hand below from POLLUX's ``src/metrics.py`` rules (commit 9179cb4e
of ai-forever/POLLUX; see ``eval/ranking/matrix.py`` for the line-by-line reading), the binary gate included.

The tests of this subject that start heavy components are in tests/integration/serving/test_eval_ranking.py.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from eval.ranking.rank import load_instructions, strip_think
from eval.ranking.matrix import RankedItem, pollux_matrix
from eval.cli import main
from judge.records import RecordError
from tests.support.eval_ranking import (CASES, FULLNESS, GEN, LITERACY, RUBRICS, SAFE, TECH, Candidate, Judge,
                                       instruction_rows, instructions_dataset, rank_argv, scores_by_output)
from tests.support.fixtures_models import copy_of
from tests.support.release_instructions import write_instructions_dataset


# POLLUX's prompts/test_pollux.txt, filled by hand (str.format, no trailing newline).
TEMPLATE = ("### Задание для оценки:\n{instruction}\n\n### Эталонный ответ:\n{reference_answer}\n\n"
            "### Ответ для оценки:\n{answer}\n\n### Критерий оценки:\n{criteria_name}\n\n"
            "### Шкала оценивания по критерию:\n{rubrics}")
# Hand derivation (minmax: (s - min) / (max - min); the gate: prompt 2 scored 1 on a binary criterion, so every
# score of prompt 2 is 0; prompt 4's 5 on a 1..3 scale is dropped; prompt 5's literacy has no score; prompt 6's
# answer is empty once its thinking is cut: not judged, and with --empty-answer zero (the default) each of its
# criteria scores 0):
#   SAFE     x GEN : p1 0, p2 0 (raw 1, gated)               -> 0
#   LITERACY x GEN : p1 2/2 = 1, p2 0 (gated, raw 1/2)         -> 1/2
#   FULLNESS x GEN : p1 (3-1)/2 = 1, p2 0 (gated)              -> 1/2
#   SAFE     x TECH: p4 0                                      -> 0
#   LITERACY x TECH: p3 1/2, p4 0, p6 0 (empty), p7 1/2        -> 1/4
#   FULLNESS x TECH: p3 (2-1)/2 = 1/2, p5 1/2, p6 0 (empty; p4 dropped) -> 1/3
#   mean_over_meta (mean of a row's cells): SAFE 0, LITERACY (1/2 + 1/4)/2 = 3/8, FULLNESS (1/2 + 1/3)/2 = 5/12
#   mean_over_criteria (mean of non-binary criteria's cells): GEN (1/2 + 1/2)/2 = 1/2, TECH (1/4 + 1/3)/2 = 7/24
#   grand mean (all non-binary scores pooled): GEN 1, 0, 1, 0; TECH 1/2, 0, 0, 1/2, 1/2, 1/2, 0 -> 4/11
EXPECTED = {
    SAFE: {GEN: 0.0, TECH: 0.0, "mean_over_meta": 0.0},
    LITERACY: {GEN: 0.5, TECH: 1 / 4, "mean_over_meta": 3 / 8},
    FULLNESS: {GEN: 0.5, TECH: 1 / 3, "mean_over_meta": 5 / 12},
    "mean_over_criteria": {GEN: 0.5, TECH: 7 / 24, "mean_over_meta": 4 / 11},
}


def _matrix_csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> dict:
    """One finished rank run of the data under the default settings, made once for the module: the tests that begin
    from such a run (to resume it, or compare against it) each start from their own copy (``copy_of``)."""
    root = tmp_path_factory.mktemp("ranked")
    data = instructions_dataset(root)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, root / "bench")) == 0
    return {"data": data, "run": root / "bench"}


def test_ranking_matrix_by_hand_and_payloads(tmp_path: Path, data: Path, capsys) -> None:
    """A bench run sends POLLUX's exact payloads and writes the hand-derived matrix in metrics.csv's layout."""
    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        cand_bodies, judge_bodies = cand.bodies("/v1/chat/completions"), judge.bodies("/v1/chat/completions")

    # answer.py: one user turn holding the instruction, max_tokens 4096, temperature 0.7; nothing else.
    assert sorted(cand_bodies, key=lambda b: b["messages"][0]["content"]) == [
        {"model": "cand-model", "messages": [{"role": "user", "content": f"Инструкция {pid}: напиши текст."}],
         "max_tokens": 4096, "temperature": 0.7} for pid in sorted(CASES)]
    # score.py: one request per (answered instruction, criterion), the template filled by str.format; prompt 6's
    # answer is empty once its unclosed <think> is cut, so it is not judged.
    expected_prompts = sorted(
        TEMPLATE.format(instruction=f"Инструкция {pid}: напиши текст.", reference_answer="" if pid == 3 else f"Эталон {pid}",
                        answer=strip_think(out_text)[0], criteria_name=c, rubrics=RUBRICS[c])
        for pid, (_, crits, out_text, _) in CASES.items() if pid != 6 for c in crits)
    assert sorted(b["messages"][0]["content"] for b in judge_bodies) == expected_prompts
    for body in judge_bodies:
        assert body["model"] == "pollux-judge-7b" and body["temperature"] == 0.0 and body["max_tokens"] == 1024
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"

    grid = _matrix_csv(out / "matrix.csv")
    assert grid[0] == ["criteria_name", GEN, TECH, "mean_over_meta"]
    assert [row[0] for row in grid[1:]] == [SAFE, LITERACY, FULLNESS, "mean_over_criteria"]
    for row in grid[1:]:
        for column, text in zip(grid[0][1:], row[1:]):
            assert float(text) == pytest.approx(EXPECTED[row[0]][column], abs=1e-12), (row[0], column)

    # Byte for byte as pandas' to_csv writes POLLUX's frame (checked against pandas 3.1 once, by hand): shortest
    # round-trip floats, "\n" line ends, the index header "criteria_name"; each mean in pandas' order of operations.
    r = repr
    third = (0.5 + 0.5 + 0.0) / 3
    assert (out / "matrix.csv").read_text(encoding="utf-8") == (
        f"criteria_name,{GEN},{TECH},mean_over_meta\n"
        f"{SAFE},0.0,0.0,0.0\n"
        f"{LITERACY},0.5,0.25,0.375\n"
        f"{FULLNESS},0.5,{r(third)},{r((0.5 + third) / 2)}\n"
        f"mean_over_criteria,0.5,{r((0.25 + third) / 2)},{r(4.0 / 11)}\n")

    result = json.loads((out / "rank.json").read_text(encoding="utf-8"))
    cells = result["matrix"]["cells"]
    assert cells[LITERACY][TECH]["n"] == 4 and cells[LITERACY][TECH]["n_unparsed"] == 1  # prompt 5
    assert cells[FULLNESS][TECH]["n_out_of_scale"] == 1 and cells[FULLNESS][TECH]["n"] == 3  # prompt 4's 5
    # Prompt 6's empty answer: one item per criterion, counted in its cell and among the cell's scores.
    assert cells[LITERACY][TECH]["n_empty_answer"] == cells[FULLNESS][TECH]["n_empty_answer"] == 1
    assert cells["mean_over_criteria"]["mean_over_meta"]["n_empty_answer"] == 2
    assert cells["mean_over_criteria"]["mean_over_meta"]["n_unparsed"] == 1
    assert result["matrix"]["empty_answer"] == "zero"
    assert result["counts"]["n_empty_answer"] == 2 and result["counts"]["n_cut_in_thinking"] == 1
    assert result["counts"]["n_answer_empty"] == 1
    # The files the matrix was read from, as they were: compare refuses the folder once they change.
    from eval.ranking.rank import ranked_files_key

    assert result["content_key"] == ranked_files_key(out) and result["content_key"]["unjudged.jsonl"] is not None
    for row in cells.values():
        for cell in row.values():
            low, high = cell["ci"]
            assert cell["why_no_ci"] or low <= cell["value"] + 1e-12 and cell["value"] <= high + 1e-12
    assert cells[SAFE][GEN]["ci"] == [0.0, 0.0]  # every resample of a row of zeros is zero
    # SAFE x TECH rests on prompt 4 alone: redrawn it is always itself, so no interval (not a zero-width one).
    assert cells[SAFE][TECH]["n_instructions"] == 1 and cells[SAFE][TECH]["ci"] == [None, None]
    assert cells[SAFE][TECH]["why_no_ci"] == "rests on 1 instruction; an interval needs at least 2"
    assert cells[SAFE][GEN]["n_instructions"] == 2 and cells[SAFE][GEN]["why_no_ci"] is None
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert answers[0]["answer"] == "Ответ один." and answers[5]["answer"] == "" and answers[5]["cut_in_thinking"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "mean_over_criteria" in page and "unparsed 1" in page and "<script" not in page


def _candidate_failures(caplog) -> list[str]:
    """The warnings of the answer requests that failed: ``log_failed_requests``'s, as pointwise and pairwise runs."""
    return [m for r in caplog.records
            if r.name == "judge_eval.rank" and "to the candidate failed" in (m := r.getMessage())]


def test_the_candidates_failed_requests_are_said_in_a_runs_words(caplog) -> None:
    """``rank``'s answers end as a pointwise or pairwise run does (``log_failed_requests``), naming the candidate:
    its judge's failed requests are said too, in the same words."""
    import logging

    from eval.judging.predictions import log_failed_requests

    with caplog.at_level(logging.WARNING, logger="judge_eval.rank"):
        log_failed_requests(logging.getLogger("judge_eval.rank"), 2, "prompt_id 'p'", "Refused: \x1b[2J", Path("a"),
                            to="the candidate")
    assert _candidate_failures(caplog) == [
        "2 requests to the candidate failed (the first written, prompt_id 'p': Refused: \\x1b[2J): each is a row of a "
        "with its reason, and a rerun into the same --out asks them again"]


def test_ranking_resumes_failed_answers_only(tmp_path: Path, data: Path, caplog) -> None:
    """A rerun asks the candidate only for the answers whose request failed and the judge only for new items. The
    run that exits 3 says why: the failed requests counted, the first one's reason, where the rows are."""
    import logging

    out = tmp_path / "bench"
    with Candidate(fail={2}) as cand, Judge(scores_by_output()) as judge:
        with caplog.at_level(logging.WARNING, logger="judge_eval.rank"):
            assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 3  # an answer is missing
        first_judged = len(judge.bodies("/v1/chat/completions"))
    (said,) = _candidate_failures(caplog)
    assert said == ("1 request to the candidate failed (the first written, prompt_id 2: InternalServerError: "
                    "Error code: 500 - engine down): each is a row of "
                    f"{out / 'answers.jsonl'} with its reason, and a rerun into the same --out asks them again")
    first = json.loads((out / "rank.json").read_text(encoding="utf-8"))
    assert first["counts"]["n_no_answer"] == 3 and first["counts"]["n_answer_failed"] == 1
    # prompt 1's 2/2 = 1 and prompt 2's failed answer scored 0 (--no-answer zero, the default): (1 + 0) / 2
    assert first["matrix"]["cells"][LITERACY][GEN]["value"] == 0.5
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert [b["messages"][0]["content"] for b in cand.bodies("/v1/chat/completions")] == [
            "Инструкция 2: напиши текст."]
        assert len(judge.bodies("/v1/chat/completions")) == 3  # prompt 2's three criteria
    assert first_judged == 14 - 3  # every criterion but those of prompts 2 (no answer) and 6 (empty answer)
    lines = (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["prompt_id"] for line in lines] == sorted(CASES)  # one row per instruction
    grid = _matrix_csv(out / "matrix.csv")
    assert float(grid[2][1]) == pytest.approx(0.5)  # LITERACY x GEN with the gate: as in the full run


def test_the_failed_answers_prompt_id_is_said_on_one_line_whatever_it_holds(tmp_path: Path, caplog) -> None:
    """A text prompt_id comes from the data: one holding a newline and a terminal escape was written into the
    warning as it was, forging a log line of its own. It is said as a literal, on one line."""
    import logging

    from tests.support.release_instructions import instruction_row

    forged = "p1\n2026-01-01 00:00:00,000 INFO judge_eval.rank: all good\x1b[2J"
    data = tmp_path / "instructions.jsonl"
    row = instruction_row(forged, "Инструкция 1: напиши текст.", GEN, [(LITERACY, RUBRICS[LITERACY])])
    data.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    with Candidate(fail={1}) as cand, Judge(scores_by_output()) as judge:
        with caplog.at_level(logging.WARNING, logger="judge_eval.rank"):
            assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "bench")) == 3
    (said,) = _candidate_failures(caplog)
    assert said.startswith(f"1 request to the candidate failed (the first written, prompt_id {forged!r}: ")
    assert said.isprintable()


def test_the_candidates_control_characters_reach_the_console_as_escapes_and_the_row_as_said(tmp_path: Path,
                                                                                             caplog) -> None:
    """The failed answer's reason is the candidate's words: an ESC sequence in them reached the terminal as it was
    (clearing the screen), and the warning did not bound their length. They are said one line long, every control
    character as its escape; answers.jsonl's row keeps them as the server said them."""
    import logging

    from tests.support.release_instructions import instruction_row

    hostile = "bad request\x1b[2J\n2026-01-01 00:00:00,000 INFO judge_eval.rank: all good " + "x" * 400

    class Hostile(Candidate):
        def _respond(self, path: str, body: dict):
            return 422, {"error": {"message": hostile}}

    data = tmp_path / "instructions.jsonl"
    row = instruction_row(1, "Инструкция 1: напиши текст.", GEN, [(LITERACY, RUBRICS[LITERACY])])
    data.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "bench"
    with Hostile() as cand, Judge(scores_by_output()) as judge:
        with caplog.at_level(logging.WARNING, logger="judge_eval.rank"):
            assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 3
    (said,) = _candidate_failures(caplog)
    reason = ("Refused: HTTP 422: Error code: 422 - bad request\\x1b[2J 2026-01-01 00:00:00,000 INFO judge_eval.rank: "
              "all good ")
    # the row's reason (309 characters) shown to its 300th, ESC as the four characters of its escape
    reason += "x" * (300 - (len(reason) - len("\\x1b") + 1)) + "..."
    assert said == (f"1 request to the candidate failed (the first written, prompt_id 1: {reason}): each is a "
                    f"row of {out / 'answers.jsonl'} with its reason, and a rerun into the same --out asks them again")
    (answer,) = [json.loads(line) for line in (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert "request\x1b[2J 2026-01-01" in answer["reason"]


def test_a_ranking_folder_moved_or_copied_resumes_asking_nothing(tmp_path: Path, data: Path) -> None:
    """The judge stage keyed its data, the folder's own items.jsonl, by its absolute path: a ranking folder moved or
    copied elsewhere was refused as other settings, its answers and verdicts to be discarded to go on. Keyed by its
    path in the folder, the copy resumes and asks neither server anything; a folder keyed the old way resumes in
    place, and is keyed anew."""
    import shutil

    from judge.plumbing.run_folder import RUN_KEY_FILE

    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
    assert json.loads((out / RUN_KEY_FILE).read_text(encoding="utf-8"))["data"] == "<out>/items.jsonl"
    moved = tmp_path / "elsewhere" / "bench"
    shutil.copytree(out, moved)
    old_key = json.loads((out / RUN_KEY_FILE).read_text(encoding="utf-8"))
    (out / RUN_KEY_FILE).write_text(json.dumps({**old_key, "data": str((out / "items.jsonl").resolve())}),
                                    encoding="utf-8")  # as a release before keyed it
    for folder in (moved, out):
        with Candidate() as cand, Judge(scores_by_output()) as judge:
            assert main(rank_argv(cand.base_url, judge.base_url, data, folder)) == 0
            assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
        assert json.loads((folder / RUN_KEY_FILE).read_text(encoding="utf-8")) == old_key
    assert _matrix_csv(moved / "matrix.csv") == _matrix_csv(out / "matrix.csv")


def test_a_run_whose_judge_was_never_asked_compares_on_its_configured_judge(tmp_path: Path, ranked: dict,
                                                                            capsys) -> None:
    """A candidate whose every answer failed leaves its judge unasked (no item to judge): its run.json has the judge's
    configured settings, not a server's word (no served model, no name, the unfitted max_tokens). compare refused it
    as "judged differently" against any run, its way out --allow-other-judge switching the judge check off for every
    pair. Those server-said settings are left out for such a run now; its configured ones are still compared."""
    data = ranked["data"]
    copy_of(ranked["run"], tmp_path / "a")
    with Candidate(fail=set(CASES)) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "f", "--model-name", "cand-f")) == 3
        assert judge.bodies("/v1/chat/completions") == []
    assert json.loads((tmp_path / "f" / "run.json").read_text(encoding="utf-8"))["n_items"] == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "f"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "0"]) == 0, capsys.readouterr().err
    warm = tmp_path / "warm.yaml"
    warm.write_text("temperature: 0.7\n", encoding="utf-8")  # a configured judge setting: compared as before
    with Candidate(fail=set(CASES)) as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "g", "--model-name", "cand-g",
                              "--judge-config", str(warm))) == 3
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "g"), "--n-boot", "0"]) == 2
    assert "were judged differently (temperature 0.0 vs 0.7)" in capsys.readouterr().err


def test_ranking_compare_paired(tmp_path: Path, data: Path, capsys) -> None:
    """compare of two bench runs gives B - A per cell over shared instructions, with a paired interval."""
    better = {pid: f"Лучший ответ {pid}." for pid in CASES}
    table = scores_by_output() | {(f"Лучший ответ {pid}.", c): {SAFE: 0, LITERACY: 2, FULLNESS: 3}[c]
                        for pid, (_, crits, _, _) in CASES.items() for c in crits}
    with Candidate() as cand, Judge(table) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "a")) == 0
    with Candidate(override=better) as cand, Judge(table) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "b", "--model-name", "cand-b")) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"),
                 "--n-boot", "300"]) == 0
    # Rank runs resample instructions (the gate holds within one): asked to resample items, compare says so.
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--bootstrap-unit", "item"]) == 2
    result = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    # B scores every criterion at its top and every gate at 0: its cells are 1 (binary rows 0). Shared instructions:
    # all 7 (A's empty answer to prompt 6 scores 0 on each criterion).
    assert result["n_instructions"] == 7
    assert result["cells"][LITERACY][GEN]["delta"] == pytest.approx(1.0 - 0.5)
    assert result["cells"][LITERACY][TECH]["delta"] == pytest.approx(1.0 - 1 / 4)
    assert result["a"]["empty_answers"] == [6] and result["b"]["empty_answers"] == []
    # SAFE x GEN rests on too few instructions for the sign-flip test to reach p < 0.05 (2/2^n): no call, and why.
    assert result["cells"][SAFE][GEN]["delta"] == 0.0 and result["cells"][SAFE][GEN]["verdict"] == "—"
    assert "a call needs at least 6" in result["cells"][SAFE][GEN]["why_no_call"]
    low, high = result["cells"]["mean_over_criteria"]["mean_over_meta"]["ci"]
    assert 0 < low <= result["cells"]["mean_over_criteria"]["mean_over_meta"]["delta"] <= high
    # Грамотность x mean_over_meta rests on 6 instructions, but the runs score it alike on one of them: its test is
    # over the 5 others, at best 2/2^5 = 1/16, never below 0.05, so it is untested and out of
    # Holm's family, which it only widened; the corner, alone in it, is called on its own p (below).
    assert result["cells"][LITERACY]["mean_over_meta"]["why_no_call"] == (
        "rests on 6 instructions scored by both runs, 5 of which the runs score differently: the sign-flip test's "
        "smallest p there, 2/2^5 = 0.0625, is not below alpha 0.05; a call needs at least 6 that differ")
    assert "Calls: 1 of the 1 cells tested" in (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    # In that corner B is above A on 6 of the 7 instructions and level on prompt 1 (both at the top): of the 2^7
    # sign flips only those that flip none or all of the six (prompt 1's either way) are as far from 0, so the exact
    # sign-flip p is 4 / 128 (the bootstrap's own share, 0, is no test), and the cell's tooltip says so.
    assert result["cells"]["mean_over_criteria"]["mean_over_meta"]["p_value"] == pytest.approx(4 / 128)
    page = (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")
    assert "sign-flip p 0.0312" in page and "p = 0.000" not in page and "p 0.000" not in page
    # Without resamples nothing is tested: a finite delta gets no call, not "no difference"; the interval's level
    # is 1 - alpha, and the page says which.
    from eval.ranking.compare import compare_rankings, render_ranking_compare_markdown
    from eval.ranking.report import render_ranking_compare_page

    untested = compare_rankings(tmp_path / "a", tmp_path / "b", n_boot=0)
    assert untested["cells"][LITERACY][GEN]["delta"] == pytest.approx(0.5)
    assert {cell["verdict"] for row in untested["cells"].values() for cell in row.values()} == {"—"}
    # A call needs 2 / alpha resamples (40 at 0.05): from 39, the called interval covers more than 1 - alpha.
    few = compare_rankings(tmp_path / "a", tmp_path / "b", n_boot=39)
    assert {cell["verdict"] for row in few["cells"].values() for cell in row.values()} == {"—"}
    enough = compare_rankings(tmp_path / "a", tmp_path / "b", n_boot=40)
    corner = enough["cells"]["mean_over_criteria"]["mean_over_meta"]
    # tested from 40 resamples, alone in Holm's family (Грамотность x mean_over_meta, at best 1/16, is out of it; in
    # it, it made the corner's Holm p 2 x 1/32 = 1/16 and no call): Holm p 1/32
    assert (corner["why_no_call"], corner["p_holm"]) == (None, 1 / 32)
    assert "paired 99% bootstrap interval" in render_ranking_compare_page({**result, "alpha": 0.01})
    # A criterion or meta name holding "|" or a line break stays one cell of the Markdown table.
    renamed = {**result, "rows": ["Полнота | точность"], "columns": ["мета\r\nвторая"],
               "cells": {"Полнота | точность": {"мета\r\nвторая": result["cells"][LITERACY][GEN]}}}
    table = [line for line in render_ranking_compare_markdown(renamed).splitlines() if line.startswith("|")]
    assert table[0] == "| criteria_name | мета вторая |" and table[2].startswith("| Полнота &#124; точность | +0.500 [")


def test_max_normalisation_and_old_rules() -> None:
    """normalize=max divides by the scale's maximum (POLLUX 83f6eb6b): a 2 on 1..3 is 2/3, not (2-1)/2."""
    items = [RankedItem(1, "m", FULLNESS, (1, 2, 3), 2.0), RankedItem(2, "m", FULLNESS, (1, 2, 3), 3.0)]
    assert pollux_matrix(items, normalize="max", n_boot=0).values[0, 0] == pytest.approx((2 / 3 + 1) / 2)
    assert pollux_matrix(items, normalize="minmax", n_boot=0).values[0, 0] == pytest.approx((0.5 + 1) / 2)
    assert pollux_matrix(items, normalize="none", n_boot=0).values[0, 0] == pytest.approx(2.5)
    # A two-level rubric that is not {0, 1} is not binary (POLLUX test_keeps_score_above_two_when_rubric_allows_it):
    # 4 on "1: ... 5: ..." normalises to (4-1)/4 = 0.75 and the out-of-scale 6 is dropped.
    two = [RankedItem(1, "general", "quality", (1, 5), 4.0), RankedItem(2, "general", "quality", (1, 5), 6.0)]
    matrix = pollux_matrix(two, n_boot=0)
    assert matrix.values[0, 0] == 0.75 and matrix.grand_mean == 0.75
    assert math.isnan(pollux_matrix(two, n_boot=0).ci_low[0, 0])


def test_an_instruction_without_a_score_is_not_resampled() -> None:
    """One scored instruction and one whose verdict was never written: one instruction is all the intervals could
    resample, so they are undefined (not the zero-width interval of drawing the same score every time), and
    n_instructions says 1; the unwritten verdict is still counted."""
    scored = RankedItem(1, "m", FULLNESS, (0, 1, 2), 2.0)
    unwritten = RankedItem(2, "m", FULLNESS, (0, 1, 2), None, status="no_prediction")
    alone = pollux_matrix([scored], n_boot=200)
    matrix = pollux_matrix([scored, unwritten], n_boot=200)
    assert matrix.n_instructions == alone.n_instructions == 1 and matrix.n_boot == 0
    assert math.isnan(matrix.ci_low[0, 0]) and math.isnan(matrix.ci_high[0, 0])
    assert matrix.failed["no_prediction"][0, 0] == 1
    # With a second scored instruction, the intervals are back, over the two.
    two = pollux_matrix([scored, unwritten, RankedItem(3, "m", FULLNESS, (0, 1, 2), 0.0)], n_boot=200)
    assert two.n_instructions == 2 and two.ci_low[0, 0] < two.ci_high[0, 0]


def test_strip_think_as_answer_py() -> None:
    """<think> blocks go, an unclosed <think> cuts the rest, and the result is stripped (answer.py)."""
    assert strip_think("<think>a</think> ответ <think>b</think>!") == ("ответ !", False)
    assert strip_think("ответ <think>не закрыто") == ("ответ", True)
    assert strip_think("") == ("", False)


@pytest.mark.parametrize(("text", "searched"), [
    ("<think>a</think> ответ", len("<think>a</think>")),
    # 8,000 open tags with no close after them: past the last close none is searched
    ("<think>a</think> ответ" + "<think>" * 8000, len("<think>a</think>")),
    ("<think>" * 8000, None),
])  # fmt: skip
def test_strip_think_searches_for_blocks_only_up_to_the_last_close(monkeypatch, text, searched) -> None:
    import re

    from eval.ranking import rank

    lengths = []

    class Searched:
        def sub(self, repl, given, count=0):
            lengths.append(len(given))
            return re.sub(r"<think>.*?</think>", repl, given, count, flags=re.DOTALL)

    monkeypatch.setattr(rank, "_THINK_BLOCK", Searched())
    assert strip_think(text) == (("", True) if searched is None else ("ответ", "<think>" * 2 in text))
    assert lengths == ([] if searched is None else [searched])
    # the same answer as POLLUX's answer.py (strip_think_tags): every block removed from the whole text, then an
    # unclosed one cut
    for other in ["x<think>a</think>y<think>b</think>z", "<think><think>a</think>b</think>c", "a</think>b<think>c"]:
        closed = re.sub(r"<think>.*?</think>", "", other, flags=re.DOTALL)
        assert strip_think(other)[0] == re.sub(r"<think>.*", "", closed, flags=re.DOTALL).strip(), other


def test_meta_filter_benches_one_column(tmp_path: Path, data: Path) -> None:
    """--meta keeps only that meta's instructions (answer.py's --meta); an unknown value names the ones there are."""
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "gen", "--meta", GEN)) == 0
        assert len(cand.bodies("/v1/chat/completions")) == 2  # prompts 1 and 2
        assert main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "x", "--meta", "нет такой")) == 2
    grid = _matrix_csv(tmp_path / "gen" / "matrix.csv")
    assert grid[0] == ["criteria_name", GEN, "mean_over_meta"] and float(grid[2][1]) == 0.5


def test_bad_instruction_row_names_field(tmp_path: Path) -> None:
    """A row without its criteria list is refused, naming the source, row (its line, from 1) and field."""
    path = tmp_path / "instructions.jsonl"
    crit = [{"criteria_name": LITERACY, "rubrics": RUBRICS[LITERACY]}]
    path.write_text(json.dumps({"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": crit}) + "\n"
                    + json.dumps({"prompt_id": 2, "instruction": "y", "meta": "m"}) + "\n", encoding="utf-8")
    with pytest.raises(RecordError) as caught:
        load_instructions(path)
    assert caught.value.place == "line 2" and caught.value.row == 1 and caught.value.field == "criteria"


def test_instructions_without_meta_are_kept_and_said(tmp_path: Path, caplog) -> None:
    """Rows with no meta (absent, null, blank or spaces) are ranked in one column with a blank name: kept, as the
    schema's null allows, and said in one warning counting the selected ones and naming the first, not only seen as
    a blank matrix header; a selection without them (--meta m) says nothing."""
    import logging

    from eval.ranking.rank import say_no_meta

    path = tmp_path / "instructions.jsonl"
    crit = [{"criteria_name": LITERACY, "rubrics": RUBRICS[LITERACY]}]
    rows = [{"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": crit},
            {"prompt_id": 2, "instruction": "y", "criteria": crit},
            {"prompt_id": 3, "instruction": "z", "meta": None, "criteria": crit},
            {"prompt_id": 4, "instruction": "w", "meta": "  ", "criteria": crit}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    loaded = load_instructions(path)
    assert [r.meta for r in loaded] == ["m", "", "", ""]
    with caplog.at_level(logging.WARNING, logger="judge_eval.rank"):
        say_no_meta(loaded, path)
        say_no_meta([r for r in loaded if r.meta == "m"], path)
    assert [r.getMessage() for r in caplog.records if r.name == "judge_eval.rank"] == [
        f"data: {path}: 3 of 4 instructions have no meta (the first: prompt_id 2): they make one matrix column with "
        "a blank name; give each a meta (a task type, a domain) to name its column"]


@pytest.mark.parametrize("argv", [["rank", "--help"], ["compare", "--help"]])
def test_rank_help(argv: list[str], capsys) -> None:
    """rank --help exits 0 and names the flags docs/ranking.md uses."""
    with pytest.raises(SystemExit) as caught:
        main(argv)
    text = capsys.readouterr().out
    assert caught.value.code == 0 and text.startswith("usage: judge-eval " + argv[0])
    if argv[0] == "rank":
        for flag in ("--model", "--judge", "--data", "--out", "--judge-config", "--normalize", "--n-boot"):
            assert flag in text


def test_the_old_subcommand_name_still_ranks_with_a_note(tmp_path: Path, capsys) -> None:
    """`judge-eval bench` (the subcommand's name before `rank`) runs `rank`: one note on stderr, then rank's own
    refusal of a missing data file, named as rank's, with rank's exit code."""
    code = main(["bench", "--model", "http://127.0.0.1:9/v1", "--judge", "http://127.0.0.1:9/v1", "--data",
                 str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "judge-eval: note: `bench` is now `judge-eval rank`; the old name still works" in err
    assert "judge-eval rank: error:" in err and "missing.jsonl" in err


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _asked(endpoint) -> list[str]:
    return sorted(b["messages"][0]["content"] for b in endpoint.bodies("/v1/chat/completions"))


def test_resume_asks_again_only_what_the_data_changed(tmp_path: Path, ranked: dict) -> None:
    """Same prompt_ids, new data: a changed instruction is answered and judged again; reordered criteria are judged
    again; every other answer and verdict is reused, and no verdict is reused for another (instruction, answer,
    criterion)."""
    out = copy_of(ranked["run"], tmp_path / "bench")
    rows = instruction_rows()
    rows[0]["instruction"] = "Инструкция 1: напиши другой текст."
    rows[2]["criteria"] = rows[2]["criteria"][::-1]  # prompt 3: FULLNESS, then LITERACY
    changed = write_instructions_dataset(tmp_path / "changed", rows)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, changed, out)) == 0
        assert _asked(cand) == ["Инструкция 1: напиши другой текст."]
        judged = _asked(judge)
    assert len(judged) == 3 + 2  # prompt 1's criteria (its new text) and prompt 3's (their new order)
    assert sum("Инструкция 1: напиши другой текст." in p for p in judged) == 3
    assert sum("Инструкция 3: напиши текст." in p for p in judged) == 2
    items = _lines(out / "items.jsonl")
    verdicts = {row["id"]: row for row in _lines(out / "predictions.jsonl")}
    assert len(items) == len(verdicts) == 14 and {i["id"] for i in items} == set(verdicts)
    assert [i["criteria_name"] for i in items if i["prompt_id"] == 3] == [FULLNESS, LITERACY]
    assert json.loads((out / "rank.json").read_text(encoding="utf-8"))["matrix"]["grand_mean"] == pytest.approx(4 / 11)


@pytest.mark.parametrize("flag, value, shown", [
    ("--temperature", "0.2", "temperature: 0.7 -> 0.2"),
    ("--max-tokens", "100", "max_tokens: 4096 -> 100"),
    ("--extra-body", '{"top_p": 0.5}', "extra_body: {} -> {'top_p': 0.5}"),
])  # fmt: skip
def test_resume_with_other_candidate_settings_is_refused(tmp_path: Path, ranked: dict, capsys, flag: str, value: str,
                                                         shown: str) -> None:
    """A rerun whose candidate would answer differently (temperature, max_tokens, extra_body) is refused before any
    request, naming the setting with its old and new value (exit 2); --overwrite asks everything again."""
    data, out = ranked["data"], copy_of(ranked["run"], tmp_path / "bench")
    answers = (out / "answers.jsonl").read_bytes()
    capsys.readouterr()
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, flag, value)) == 2
        assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
        err = capsys.readouterr().err
        assert "holds progress made with other settings" in err and shown in err and "--overwrite" in err
        assert (out / "answers.jsonl").read_bytes() == answers
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, flag, value, "--overwrite")) == 0
        assert len(cand.bodies("/v1/chat/completions")) == len(CASES)
        assert len(judge.bodies("/v1/chat/completions")) == 14


def test_smaller_selection_keeps_what_was_paid_for(tmp_path: Path, data: Path) -> None:
    """--limit 2, then --meta, after a full run ask nothing and delete nothing; their matrices hold their selection
    only; a full run after them asks the candidate and the judge for nothing and gives the full matrix again."""
    out = tmp_path / "bench"
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--limit", "2")) == 0
        limited = json.loads((out / "rank.json").read_text(encoding="utf-8"))
        assert len(_lines(out / "answers.jsonl")) == len(CASES) and len(_lines(out / "predictions.jsonl")) == 14
        assert main(rank_argv(cand.base_url, judge.base_url, data, out, "--meta", TECH)) == 0
        assert len(_lines(out / "answers.jsonl")) == len(CASES) and len(_lines(out / "predictions.jsonl")) == 14
        n_cand, n_judge = len(cand.bodies("/v1/chat/completions")), len(judge.bodies("/v1/chat/completions"))
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert len(cand.bodies("/v1/chat/completions")) == n_cand == len(CASES)
        assert len(judge.bodies("/v1/chat/completions")) == n_judge == 14
    # The --limit 2 run: prompts 1 and 2 only (the GEN column); the other 8 verdicts were kept, not scored.
    assert limited["counts"]["n_instructions"] == 2 and limited["counts"]["n_items"] == 6
    assert limited["counts"]["n_kept"] == 8 and limited["matrix"]["columns"] == [GEN, "mean_over_meta"]
    assert [json.loads(line)["prompt_id"] for line in (out / "answers.jsonl").read_text().splitlines()] == sorted(CASES)
    grid = _matrix_csv(out / "matrix.csv")
    for row in grid[1:]:
        for column, text in zip(grid[0][1:], row[1:]):
            assert float(text) == pytest.approx(EXPECTED[row[0]][column], abs=1e-12), (row[0], column)


@pytest.mark.parametrize("line", ["limit: 3", "split: standard", "criteria: auto"])
def test_judge_config_that_selects_items_is_refused(tmp_path: Path, data: Path, capsys, line: str) -> None:
    """A --judge-config YAML that would have the judge skip items (limit, split, criteria) is refused before the
    candidate is asked anything, naming the key and the file (exit 2)."""
    yaml = tmp_path / "judge.yaml"
    yaml.write_text(line + "\n", encoding="utf-8")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "bench", "--judge-config", str(yaml)))
        assert cand.bodies("/v1/chat/completions") == []
    err = capsys.readouterr().err
    key = line.split(":")[0]
    assert code == 2 and f"judge_config: {yaml} sets {key}:" in err and f"remove {key} from the file" in err


def test_judge_config_with_server_args_for_a_url_judge_is_refused_before_any_candidate_answer(
        tmp_path: Path, data: Path, capsys) -> None:
    """server_args in a --judge-config shared with a checkpoint judge, beside a URL judge: judge-eval run refuses them,
    and rank did so only in its verdict stage, after every candidate answer was asked. Now before the first (exit 2),
    in run's words."""
    yaml = tmp_path / "judge.yaml"
    yaml.write_text('server_args: ["--enforce-eager"]\n', encoding="utf-8")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        code = main(rank_argv(cand.base_url, judge.base_url, data, tmp_path / "bench", "--judge-config", str(yaml)))
        assert cand.bodies("/v1/chat/completions") == [] and judge.bodies("/v1/chat/completions") == []
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "server_args: does not apply to a judge given as a URL (judge-eval starts no server for it; server_args are "
        "the flags of the server it starts for a checkpoint folder or hub id): drop --server-args, or server_args from "
        "the config file")


def test_an_item_without_a_verdict_is_a_counted_failure(tmp_path: Path, data: Path, monkeypatch, capsys) -> None:
    """An item the judge stage left without a prediction stays in the matrix's counts (n_no_prediction, per cell and
    in rank.json), the run exits 3 instead of claiming success, and the next run judges that item alone."""
    import eval.judging.run as judging

    real_run, lost = judging.run, []

    def run_losing_one_verdict(config, **kwargs):
        counts = real_run(config, **kwargs)
        path = Path(config.out) / "predictions.jsonl"
        first, *rest = path.read_text(encoding="utf-8").splitlines(keepends=True)
        lost.append(json.loads(first)["id"])
        path.write_text("".join(rest), encoding="utf-8")
        return counts

    out = tmp_path / "bench"
    monkeypatch.setattr(judging, "run", run_losing_one_verdict)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 3
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_no_prediction"] == 1 and summary["request_failed"] == 1
    result = json.loads((out / "rank.json").read_text(encoding="utf-8"))
    assert result["counts"]["n_no_prediction"] == 1
    assert result["matrix"]["cells"]["mean_over_criteria"]["mean_over_meta"]["n_no_prediction"] == 1
    assert "n_no_prediction 1" in (out / "report.html").read_text(encoding="utf-8")
    monkeypatch.setattr(judging, "run", real_run)
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, data, out)) == 0
        assert len(judge.bodies("/v1/chat/completions")) == 1 and cand.bodies("/v1/chat/completions") == []
    assert lost[0] in {row["id"] for row in _lines(out / "predictions.jsonl")}


@pytest.mark.parametrize("field, change", [
    ("meta", lambda row: {**row, "meta": "Другой набор"}),
    ("instruction", lambda row: {**row, "instruction": row["instruction"].replace("напиши", "перепиши")}),
])  # fmt: skip
def test_compare_refuses_runs_of_other_data(tmp_path: Path, ranked: dict, capsys, field: str, change) -> None:
    """compare of two runs whose shared prompt_ids hold other content (meta, instruction text) is refused (exit 2),
    naming the prompt_id, what differs and both data sources."""
    data = ranked["data"]
    other = write_instructions_dataset(tmp_path / "other", [change(row) for row in instruction_rows()])
    copy_of(ranked["run"], tmp_path / "a")
    with Candidate() as cand, Judge(scores_by_output()) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, other, tmp_path / "b")) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--n-boot", "10"]) == 2
    err = capsys.readouterr().err
    assert "the runs were made on different data" in err and f"has another {field} in each" in err
    assert str(data) in err and str(other) in err


def test_compare_pairs_only_instructions_both_runs_scored(tmp_path: Path, ranked: dict) -> None:
    """An instruction a run holds but never scored (its every verdict unparsed) is not one of the instructions the
    comparison pairs: B's prompt 7 has no score, so 6 instructions are shared, not A's 7; each side says which of
    its instructions were left out, and why."""
    table = scores_by_output() | {("Ответ семь.", LITERACY): None}
    copy_of(ranked["run"], tmp_path / "a")
    with Candidate() as cand, Judge(table) as judge:
        assert main(rank_argv(cand.base_url, judge.base_url, ranked["data"], tmp_path / "b")) == 0
    from eval.ranking.compare import compare_rankings

    result = compare_rankings(tmp_path / "a", tmp_path / "b", n_boot=0)
    assert result["n_instructions"] == 6
    assert result["a"]["excluded"] == {"n": 1, "no_answer": [], "empty_answer": [], "no_score": [],
                                       "gate_scored_by_one": [], "not_scored_by_other": [7]}
    assert result["b"]["excluded"] == {"n": 1, "no_answer": [], "empty_answer": [], "no_score": [7],
                                       "gate_scored_by_one": [], "not_scored_by_other": []}


def test_prompt_ids_one_and_text_one_are_refused(tmp_path: Path) -> None:
    """prompt_id 1 and "1" name one instruction in items and verdicts: refused at load, naming the field and row."""
    path = tmp_path / "instructions.jsonl"
    crit = [{"criteria_name": LITERACY, "rubrics": RUBRICS[LITERACY]}]
    path.write_text("".join(json.dumps({"prompt_id": pid, "instruction": f"x{k}", "meta": "m", "criteria": crit}) + "\n"
                            for k, pid in enumerate([1, "1"])), encoding="utf-8")
    with pytest.raises(RecordError, match="instructions.jsonl: line 2: field 'prompt_id': '1' is the same id as 1 of "
                                          "line 1$") as caught:  # JSONL rows named by line, as load_records names them
        load_instructions(path)
    assert caught.value.row == 1 and caught.value.field == "prompt_id"


def test_report_tells_answer_counts_from_items_not_scored() -> None:
    """Answers cut inside their thinking or by max_tokens are judged when text is left: the page lists them under
    Answers, not under Not judged, which lists the items without a verdict."""
    from eval.ranking.report import render_ranking_page

    matrix = pollux_matrix([RankedItem(1, GEN, LITERACY, (0, 1, 2), 2.0)], n_boot=0).to_json()
    counts = {"n_instructions": 1, "n_items": 1, "n_answer_failed": 0, "n_cut_in_thinking": 3, "n_finish_length": 4,
              "n_no_answer": 5, "n_empty_answer": 0, "n_no_prediction": 0}
    page = render_ranking_page({"model": "m", "judge": "j", "data": "d", "counts": counts, "matrix": matrix})
    answers, not_scored = page.split("<h2>Answers</h2>")[1].split("<h2>Not judged</h2>")
    assert "n_cut_in_thinking 3, n_finish_length 4." in answers
    assert "n_no_answer 5." in not_scored and "n_cut_in_thinking 3" not in not_scored


def test_report_counts_items_sent_not_judged() -> None:
    """``n_items`` counts the items sent to the judge, those it wrote no verdict for among them: the page says so,
    never that they were all judged."""
    from eval.ranking.report import render_ranking_page

    matrix = pollux_matrix([RankedItem(1, GEN, LITERACY, (0, 1, 2), 2.0)], n_boot=0).to_json()
    counts = {"n_instructions": 2, "n_items": 10, "n_no_prediction": 3}
    page = render_ranking_page({"model": "m", "judge": "j", "data": "d", "counts": counts, "matrix": matrix})
    assert "10 judged items" not in page
    assert "10 items sent to the judge (3 of them without a verdict: see Not judged)" in page
    assert "n_no_prediction 3" in page.split("<h2>Not judged</h2>")[1]


def test_a_binary_criterion_scored_between_its_levels_closes_the_gate() -> None:
    """POLLUX's metrics.py (83f6eb6b) closes the gate on a binary criterion's raw score ``!= 0`` (its older code read
    ``== 1``): a verdict of 0.5 on the 0/1 rubric, which the verdict reader accepts, zeroes its instruction's other
    scores. Instruction 1 (fullness 2 on 0-2, the binary one 0.5) counts 0, instruction 2 (2, binary 0) counts 1
    after min-max: the cell is (0 + 1) / 2 = 0.5; read as ``== 1`` it would be 1."""
    binary = "Отсутствие галлюцинаций"
    items = [RankedItem(1, "m", FULLNESS, (0, 1, 2), 2.0), RankedItem(1, "m", binary, (0, 1), 0.5),
             RankedItem(2, "m", FULLNESS, (0, 1, 2), 2.0), RankedItem(2, "m", binary, (0, 1), 0.0)]
    matrix = pollux_matrix(items, n_boot=0)
    assert matrix.values[list(matrix.rows).index(FULLNESS), 0] == pytest.approx(0.5)
