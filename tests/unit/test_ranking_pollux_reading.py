"""`judge-eval rank` reads like POLLUX where it claims to (public repository ai-forever/POLLUX, src/metrics.py and
src/utils/score_utils.py): rubric levels as ``parse_scale_values`` reads them, no row or column POLLUX's pivot would
not have, and ``--verdict-reader pollux`` reading each verdict as ``extract_score`` does. Expected values are
derived by hand from the small rubric texts below.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from eval.ranking.matrix import RankedItem, matrix_arrays, pollux_matrix, pollux_scale_levels
from judge.verdicts import VerdictError, parse_pollux_result
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

HALF = "0: не выполнено\n\n0.5: выполнено частично\n\n1: выполнено"
SCALE = "0: плохо\n\n1: средне\n\n2: хорошо"
BOLD = "**0**: нет\n\n**1**: да"
BINARY = "0: нет\n\n1: да"


@pytest.mark.parametrize(("rubrics", "levels"), [
    (BINARY, (0.0, 1.0)),                        # the released shape: binary
    (HALF, (0.0, 0.5, 1.0)),                     # "0.5:" is a level: three levels, not a binary gate
    (BOLD, ()),                                  # "**0**:": a "*" bullet needs a space after it, so no level; no range
    ("0,5: мало\n1,5: много", (0.5, 1.5)),       # a "," decimal reads as "."
    ("- 0: нет\n- 1: да\n- 2: отлично", (0.0, 1.0, 2.0)),  # "-" bullets with a space
    ("1. плохо\n2) средне\n3 — хорошо", (1.0, 2.0, 3.0)),  # ". " , ")" and an em dash end a level too
    ("Оценка от 1 до 5 по качеству", (1.0, 5.0)),  # no level line: the bounds of "от A до B"
    ("Шкала оценки: 0-10", (0.0, 10.0)),         # no level line, no "от/до": "шкала ... A-B"
    ("Оцените ответ по смыслу.", ()),            # nothing: no scale
    ("Итог: 2 балла", ()),                       # a number mid-line is no level
])  # fmt: skip
def test_rubric_levels_read_as_pollux_reads_them(rubrics, levels):
    """``pollux_scale_levels`` gives score_utils.py's ``parse_scale_values`` (sorted, distinct)."""
    assert pollux_scale_levels(rubrics) == levels


@pytest.mark.parametrize(("text", "score", "error"), [
    ("[FEEDBACK] ok [RESULT] 2 [END]", 2.0, None),
    ("[RESULT] 0 [END] ... [RESULT] 1 [END]", 0.0, None),        # the first complete block, not the last
    ("[result]\n 1,5 \n[end]", 1.5, None),                       # any case, any whitespace, "," decimal
    ("[RESULT] .5 [END]", 0.5, None),
    ("**[RESULT]** 2 [END]", None, VerdictError.NO_RESULT),      # markdown around the tag: no block
    ("[RESULT] 2", None, VerdictError.NO_RESULT),                # no [END]
    ("[RESULT] 2 балла [END]", None, VerdictError.NO_RESULT),    # words before [END]
    ("", None, VerdictError.EMPTY),
    ("[RESULT] " + "9" * 400 + " [END]", None, VerdictError.NO_SCORE),  # float() reads it as inf: no score, not inf
])  # fmt: skip
def test_pollux_verdict_reading(text, score, error):
    """``parse_pollux_result``: the first complete ``[RESULT] n [END]`` (score_utils.py ``extract_score``)."""
    verdict = parse_pollux_result(text)
    assert (verdict.score, verdict.error, verdict.ok) == (score, error, error is None)


def test_half_and_bold_levels_gate_nothing_and_failed_only_cells_add_no_row_or_column():
    """One instruction, meta m: HALF scored 1, BOLD scored 1; another, meta n: BINARY unparsed only.

    POLLUX: HALF has levels {0, 0.5, 1} (not binary) -> (1 - 0) / (1 - 0) = 1.0; BOLD has no scale -> raw 1.0 kept,
    not binary; no binary criterion was scored, so no gate. The BINARY criterion and the meta n have no scored item:
    no row "b", no column "n". Grand mean = (1.0 + 1.0) / 2 = 1.0; the unparsed item is counted in the corner only.
    """
    items = [RankedItem(1, "m", "half", pollux_scale_levels(HALF), 1.0),
             RankedItem(1, "m", "bold", pollux_scale_levels(BOLD), 1.0),
             RankedItem(2, "n", "b", pollux_scale_levels(BINARY), None, "unparsed")]
    matrix = pollux_matrix(items, n_boot=0)
    assert (matrix.rows, matrix.columns) == (["bold", "half", "mean_over_criteria"], ["m", "mean_over_meta"])
    assert matrix.values.tolist() == [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    assert matrix.failed["unparsed"].tolist() == [[0, 0], [0, 0], [0, 1]]
    # A comparison's common grid without that cell keeps the count out of the cells too (no error).
    arrays = matrix_arrays(items, layout=matrix_arrays(items[:2]))
    assert arrays.failures_elsewhere == {"unparsed": 1, "out_of_scale": 0, "request_failed": 0,
                                          "no_prediction": 0, "no_answer": 0, "empty_answer": 0, "not_run": 0}


# ---------------------------------------------------------------------------------------------- through the CLI


def _instructions(path: Path) -> Path:
    rows = [{"prompt_id": 1, "instruction": "Задание 1", "meta": "m",
             "criteria": [{"criteria_name": "half", "rubrics": HALF}, {"criteria_name": "scale", "rubrics": SCALE},
                          {"criteria_name": "bold", "rubrics": BOLD}]},
            {"prompt_id": 2, "instruction": "Задание 2", "meta": "n",
             "criteria": [{"criteria_name": "scale", "rubrics": SCALE},
                          {"criteria_name": "broken", "rubrics": BINARY}]}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


#: The judge's output per (answer, criterion): what each reader makes of it is in the test below.
OUTPUTS = {("Ответ 1", "half"): "[FEEDBACK] Да. [RESULT] 1 [END]",
           ("Ответ 1", "scale"): "[FEEDBACK] Сначала [RESULT] 0 [END], но итог: [RESULT] 1 [END]",
           ("Ответ 1", "bold"): "[FEEDBACK] Да. [RESULT] 1 [END]",
           ("Ответ 2", "scale"): "[FEEDBACK] Хорошо. **[RESULT]** 2 [END]",
           ("Ответ 2", "broken"): "нет вердикта"}


def _judge(path: str, body: dict) -> tuple:
    if path != "/v1/chat/completions":
        return 404, {"detail": "Not Found"}
    prompt = body["messages"][0]["content"]
    answer = prompt.split("### Ответ для оценки:\n")[1].split("\n\n### Критерий оценки:")[0]
    criterion = prompt.split("### Критерий оценки:\n")[1].split("\n\n")[0]
    return 200, chat_completion(OUTPUTS[(answer, criterion)], body["model"])


def _matrix(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def test_ranking_matrix_with_each_verdict_reader(tmp_path, monkeypatch):
    """The same outputs through `judge-eval rank`, read by the toolkit's parser and by POLLUX's (minmax):

    toolkit: half 1 -> 1.0; scale (m) reads the last [RESULT], 1 -> 1/2 = 0.5; bold raw 1.0 (no scale); scale (n)
    "**[RESULT]** 2" -> 2/2 = 1.0; broken unparsed: no row. mean_over_meta: scale (0.5 + 1.0) / 2 = 0.75;
    mean_over_criteria: m (1.0 + 1.0 + 0.5) / 3 = 0.8333333333333334, n 1.0; grand mean (1 + 0.5 + 1 + 1) / 4 = 0.875.

    pollux: scale (m) reads the first block, 0 -> 0.0; scale (n) has no complete block: unparsed, and meta n has no
    scored item, so no column n. mean_over_criteria m = grand mean = (1.0 + 0.0 + 1.0) / 3 = 0.6666666666666666.
    """
    from eval.cli import main

    data = _instructions(tmp_path / "instructions.jsonl")
    candidate = ScriptedEndpoint(lambda p, b: (200, chat_completion(
        "Ответ " + b["messages"][0]["content"].split()[-1], b["model"])), model="cand", max_model_len=None)
    judge = ScriptedEndpoint(_judge, model="judge", max_model_len=None)
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    argv = ["rank", "--model", candidate.base_url, "--judge", judge.base_url, "--data", str(data), "--no-progress",
            "--n-boot", "0", "--max-retries", "0"]
    try:  # in-process: what is read is the matrix and rank.json, the same for the console script's run
        codes = {reader: main([*argv, "--out", str(tmp_path / reader), "--verdict-reader", reader])
                 for reader in ("toolkit", "pollux")}
    finally:
        candidate.close()
        judge.close()
    assert codes == {"toolkit": 0, "pollux": 0}
    assert _matrix(tmp_path / "toolkit" / "matrix.csv") == [
        ["criteria_name", "m", "n", "mean_over_meta"],
        ["bold", "1.0", "", "1.0"],
        ["half", "1.0", "", "1.0"],
        ["scale", "0.5", "1.0", "0.75"],
        ["mean_over_criteria", "0.8333333333333334", "1.0", "0.875"]]
    assert _matrix(tmp_path / "pollux" / "matrix.csv") == [
        ["criteria_name", "m", "mean_over_meta"],
        ["bold", "1.0", "1.0"],
        ["half", "1.0", "1.0"],
        ["scale", "0.0", "0.0"],
        ["mean_over_criteria", "0.6666666666666666", "0.6666666666666666"]]
    for reader, n_unparsed in (("toolkit", 1), ("pollux", 2)):
        result = json.loads((tmp_path / reader / "rank.json").read_text(encoding="utf-8"))
        assert result["verdict_reader"] == reader
        assert result["matrix"]["cells"]["mean_over_criteria"]["mean_over_meta"]["n_unparsed"] == n_unparsed


def test_the_means_over_criteria_count_the_non_binary_scores_they_average():
    """Three instructions, criteria X and Y on 0..2 and G binary: P1 (meta a) X=2, G=0; P2 (a) X=1, G=1 (the gate
    closes: POLLUX zeroes the instruction's scores); P3 (b) X=0, Y=2. By hand, minmax: X/a = (1 + 0) / 2 = 0.5,
    X/b = 0, Y/b = 1, G/a = 0; mean_over_criteria averages the non-binary cells (a: 0.5, b: 0.5) and the grand mean
    pools the four non-binary scores: (1 + 0 + 0 + 1) / 4 = 0.5. Their n are those scores' counts: a 2, b 2, corner
    4 (the binary G's two scores count in G's own row and the mean_over_meta column, not in the means over
    criteria)."""
    x = y = pollux_scale_levels("0: нет\n\n1: частично\n\n2: да")
    g = pollux_scale_levels("0: нет нарушения\n\n1: есть нарушение")
    items = [RankedItem(1, "a", "X", x, 2.0), RankedItem(1, "a", "G", g, 0.0),
             RankedItem(2, "a", "X", x, 1.0), RankedItem(2, "a", "G", g, 1.0),
             RankedItem(3, "b", "X", x, 0.0), RankedItem(3, "b", "Y", y, 2.0)]
    matrix = pollux_matrix(items, n_boot=0)
    row, col = matrix.rows.index, matrix.columns.index
    last_row, last_col = len(matrix.rows) - 1, len(matrix.columns) - 1
    assert matrix.values[row("X"), col("a")] == pytest.approx(0.5) and matrix.values[last_row, last_col] == pytest.approx(0.5)
    assert matrix.n[last_row, col("a")] == 2 and matrix.n[last_row, col("b")] == 2 and matrix.n[last_row, last_col] == 4
    assert matrix.n[row("G"), last_col] == 2 and matrix.n[row("X"), last_col] == 3


def test_pollux_reading_of_an_integer_judge_is_refused_before_anything_is_asked(tmp_path, capsys):
    """``--verdict-reader pollux`` reads only '[RESULT] n [END]'; a judge whose verdict_format is integer
    (Pollux-4B-Judge's bare integer) made every verdict "unparsed", found only after the judge stage. With the
    format set in the judge's YAML it is refused at once (exit 2), in one line naming both settings: no candidate
    is asked, no folder made (the URLs lead nowhere)."""
    from eval.cli import main

    config = tmp_path / "judge.yaml"
    config.write_text("judge: http://127.0.0.1:9/v1\nverdict_format: integer\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["rank", "--model", "http://127.0.0.1:9/v1", "--judge-config", str(config), "--data",
                 str(_instructions(tmp_path / "instructions.jsonl")), "--out", str(out), "--no-progress",
                 "--verdict-reader", "pollux"]) == 2
    err = capsys.readouterr().err
    assert err == ("judge-eval rank: error: verdict_reader: pollux reads only POLLUX's '[RESULT] n [END]', but the "
                   "judge's verdict_format is integer (--verdict-format is set), so every verdict would be unparsed; "
                   "use --verdict-reader toolkit\n")
    assert not out.exists()


def test_pollux_reading_of_a_judge_found_integer_by_its_server_is_refused_after_its_verdicts(tmp_path, capsys):
    """A judge URL says its format only when asked: a served ``ai-forever/Pollux-4B-Judge`` is read as integer by
    the judge stage (run.json records it), so the matrix is refused there, before a rank.json of zeros or a "no
    verdict was scored" ValueError; its verdicts are kept for a rerun with --verdict-reader toolkit."""
    from eval.cli import main

    candidate = ScriptedEndpoint(lambda p, b: (200, chat_completion(
        "Ответ " + b["messages"][0]["content"].split()[-1], b["model"])), model="cand", max_model_len=None)
    judge = ScriptedEndpoint(lambda p, b: (200, chat_completion("1", b["model"])) if p == "/v1/chat/completions"
                             else (404, {"detail": "Not Found"}), model="ai-forever/Pollux-4B-Judge",
                             max_model_len=None)
    out = tmp_path / "run"
    try:
        code = main(["rank", "--model", candidate.base_url, "--judge", judge.base_url, "--data",
                     str(_instructions(tmp_path / "instructions.jsonl")), "--out", str(out), "--no-progress",
                     "--n-boot", "0", "--max-retries", "0", "--verdict-reader", "pollux"])
    finally:
        candidate.close()
        judge.close()
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == ("judge-eval rank: error: verdict_reader: pollux reads only POLLUX's '[RESULT] n [END]', but the "
                   "judge's verdict_format is integer (recorded in run.json by the judge stage), so every verdict "
                   "would be unparsed; use --verdict-reader toolkit")
    assert not (out / "rank.json").exists() and (out / "predictions.jsonl").is_file()
