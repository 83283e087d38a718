"""Pairwise judging: the 4B judge's pairwise template byte for byte, pairwise rows read with errors
that name the row and field, `judge-eval run` asking every pair in both orders against stand-in servers (chat and
judge-serve's /v1/judge, payloads asserted exactly), and the pairwise metrics derived by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from eval.cli import main
from eval.pairwise.judging import PAIRWISE_PREDICTIONS, PairRecord, PairwiseRow, load_pairs, read_pairwise_rows
from eval.pairwise.metrics import pairwise_metrics
from judge.plumbing.config_files import ConfigError
from judge.wire import JudgeResponse, JudgeResponseItem, JudgeResponseUsage, JudgeResult
from judge.checkpoints import NEUTRAL_SAMPLING
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

HUB_ID = "ai-forever/Pollux-4B-Judge"
SCALE_TEXT = "Критерий: точность.\n-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше"


def test_pairwise_template_is_pollux_demo_byte_for_byte():
    """judge.render_pairwise_prompt is POLLUX's demo/serve_pollux_demo.py:40-54 (the Russian original kept there
    commented out): each line with its "# " removed, a bare "#" line blank, and one newline after {rubrics} since the
    closing quotes stand on their own line (54). Written out here by hand, line by line."""
    expected = (
        "### Инструкция\n"  # line 40, after 'PAIRWISE_TEMPLATE = """'
        "Даны два ответа для оценки и шкала их сравнения. Необходимо сравнить ответы по качеству выполнения задания "
        "и вернуть число в соответствии со шкалой сравнения ответов.\n"  # line 41
        "\n"  # 42
        "### Задание для оценки:\n"  # 43
        "INSTR\n"  # 44 {instruction}
        "\n"  # 45
        "### Ответ 1 для оценки:\n"  # 46
        "A1\n"  # 47 {answer_1}
        "\n"  # 48
        "### Ответ 2 для оценки:\n"  # 49
        "A2\n"  # 50 {answer_2}
        "\n"  # 51
        "### Шкала сравнения ответов:\n"  # 52
        "SCALE\n"  # 53 {rubrics}, then the closing quotes on line 54
    )
    fields = {"instruction": "INSTR", "answer_1": "A1", "answer_2": "A2", "rubrics": "SCALE"}
    assert judge.render_pairwise_prompt(fields) == expected
    # Fields go in raw (str.format, demo line 108): a code answer's own newline and indentation survive.
    assert "### Ответ 1 для оценки:\n  x = 1\n\n\n### Ответ 2" in judge.render_pairwise_prompt({**fields, "answer_1": "  x = 1\n"})
    with pytest.raises(ValueError, match="'answer_2' is missing"):
        judge.render_pairwise_prompt({**fields, "answer_2": None})


def _write(rows: list[dict], path) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


PAIRS = [
    {"id": "p1", "instruction": "Столица Франции?", "answer_1": "Париж.", "answer_2": "Лион.", "rubrics": SCALE_TEXT,
     "winner": -1},
    {"id": "p2", "instruction": "2+2?", "answer_1": "5", "answer_2": "4", "rubrics": SCALE_TEXT, "winner": "answer_2"},
    {"id": "p3", "instruction": "Скажи привет.", "answer_1": "Привет!", "answer_2": "Привет.", "rubrics": SCALE_TEXT,
     "winner": "tie"},
    {"id": "p4", "instruction": "Назови цвет неба.", "answer_1": "Зелёный.", "answer_2": "Голубой.",
     "rubrics": SCALE_TEXT},
]  # fmt: skip


@pytest.mark.parametrize("change, message", [
    ({"answer_2": ""}, r"line 1\.answer_2: required text is empty$"),
    ({"answer_2": "  "}, r"line 1\.answer_2: required text is empty$"),
    ({"answer_1": 1}, r"line 1\.answer_1: must be text, got an integer$"),
    ({"answer_1": None}, r"line 1\.answer_1: required text is missing$"),
    ({"winner": 2}, r"line 1\.winner: 2 is not one of"),
    ({"winner": True}, r"line 1\.winner: True is not one of"),
    ({"winner": False}, r"line 1\.winner: False is not one of"),
    ({"winner": 0.5}, r"line 1\.winner: 0\.5 is not one of"),
    ({"winner": "1"}, r"line 1\.winner: '1' is not one of"),
    ({"rubrics": None}, r"line 1\.rubrics: required text is missing$"),
    # read on -1/0/1, a 1/2/3 scale's "1" (answer 1 better) would count as answer 2 better
    ({"rubrics": "1: первый лучше\n2: одинаково\n3: второй лучше"}, r"line 1\.rubrics: the comparison scale's levels "
     r"read as 1, 2, 3"),
    ({"rubrics": "1) первый лучше\n2 - одинаково\n3: второй лучше"}, r"line 1\.rubrics: the rubric's level lines .*"
     r"a pairwise verdict is read as -1"),
])  # fmt: skip
def test_bad_pairwise_rows_name_the_row_and_field(tmp_path, change, message):
    """A missing answer or scale, or a winner outside -1/0/1/answer_1/tie/answer_2, is refused naming file, row (its
    line, as load_records names it) and field; a repeated id too."""
    with pytest.raises(ConfigError, match=message):
        load_pairs(_write([{**PAIRS[0], **change}], tmp_path / "pairs.jsonl"))
    with pytest.raises(ConfigError, match=r"twice.jsonl: line 2\.id: 'p1' appears twice"):
        load_pairs(_write([PAIRS[0], PAIRS[0]], tmp_path / "twice.jsonl"))


def test_a_scale_with_no_tie_is_read(tmp_path):
    """A -1/1 scale means on -1/0/1 what it meant as shown: its rows are read, as judge-serve takes them."""
    rows = [{**PAIRS[0], "rubrics": "-1: первый лучше\n1: второй лучше"}]
    assert [pair.rubrics for pair in load_pairs(_write(rows, tmp_path / "no_tie.jsonl"))] == [rows[0]["rubrics"]]


def test_a_first_row_with_answer_1_misspelt_is_still_read_as_pairwise(tmp_path):
    """A first row with answer_2 and a misspelt answer_1 was taken for a pointwise row ("field 'answer': is
    missing"); the same typo on line 2 named answer_1. Both name answer_1 now; a pointwise row stays pointwise."""
    from eval.pairwise.judging import is_pairwise_data

    typo = {k if k != "answer_1" else "answr_1": v for k, v in PAIRS[0].items()}
    first = _write([typo, PAIRS[1]], tmp_path / "first.jsonl")
    assert is_pairwise_data(first) is True
    with pytest.raises(ConfigError, match=r"first\.jsonl: line 1\.answer_1: required text is missing$"):
        load_pairs(first)
    pointwise = tmp_path / "pointwise.jsonl"
    pointwise.write_text(json.dumps({"instruction": "x", "answer": "y", "answer_2": "z"}) + "\n", encoding="utf-8")
    assert is_pairwise_data(pointwise) is False


def test_a_pairwise_line_that_is_not_utf8_is_named_with_its_file_and_row(tmp_path):
    """A byte that is not UTF-8 on a later line is refused as the pointwise loader refuses it (the byte and its
    column), naming the file and the row, not as a bare codec error."""
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(json.dumps(PAIRS[0]).encode() + b'\n{"id": "p2", "instruction": "\xff"}\n')
    with pytest.raises(ConfigError) as refused:
        load_pairs(path)
    assert str(refused.value) == f"{path}: line 2: not UTF-8 text (byte 0xff at column 30)"


def test_a_pairwise_row_after_a_blank_line_is_named_by_its_line(tmp_path):
    """A blank line counts, as an editor and load_records count it: the bad pair on line 3 is "line 3" whether its
    fault is a field or its JSON."""
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(PAIRS[0]) + "\n\n" + json.dumps({**PAIRS[1], "winner": 2}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}: line 3\.winner: 2 is not one of"):
        load_pairs(path)
    path.write_text(json.dumps(PAIRS[0]) + "\n\n{bad\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}: line 3: invalid JSON"):
        load_pairs(path)


def test_a_split_on_pairwise_data_is_refused_before_any_request(tmp_path, capsys):
    """--split chooses pointwise items by task type; pairwise rows have none, so a split other than `all` is refused
    (exit 2, naming the setting) before the server is asked anything, not ignored while every pair is judged."""
    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    with ScriptedEndpoint(_scripted_judge(_prompts(load_pairs(data))), model=HUB_ID) as server:
        argv = ["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--no-progress"]
        assert main([*argv, "--out", str(tmp_path / "run"), "--split", "zero_shot"]) == 2
        assert server.requests == []
        assert (f"judge-eval run: error: split: 'zero_shot' chooses pointwise items by task type, and the pairwise rows "
                f"of {data} have none: drop --split (every pair is judged; --limit takes the first N)"
                ) in capsys.readouterr().err
        assert main([*argv, "--out", str(tmp_path / "all"), "--split", "all", "--limit", "1"]) == 0
    assert len(read_pairwise_rows(tmp_path / "all" / PAIRWISE_PREDICTIONS)) == 2


def test_winner_labels_read_as_the_judges_scale(tmp_path):
    """-1/0/1 and answer_1/tie/answer_2 both read as the judge's -1/0/1; no winner is None; no id gets a stable one."""
    pairs = load_pairs(_write([*PAIRS, {k: v for k, v in PAIRS[0].items() if k != "id"}], tmp_path / "p.jsonl"))
    assert [p.winner for p in pairs] == [-1, 1, 0, None, -1]
    assert len(pairs[-1].id) == 16 and pairs[-1].id == load_pairs(tmp_path / "p.jsonl")[-1].id


def test_winner_labels_written_by_pandas_read_as_integers(tmp_path):
    """pandas writes an integer winner column that has a null as floats (1.0, -1.0, 0.0): read as 1, -1, 0."""
    rows = [{**PAIRS[k], "winner": w} for k, w in enumerate([1.0, -1.0, 0.0])] + [{**PAIRS[3], "winner": None}]
    pairs = load_pairs(_write(rows, tmp_path / "pandas.jsonl"))
    assert [p.winner for p in pairs] == [1, -1, 0, None]
    assert all(type(p.winner) is int for p in pairs[:3])


# What the scripted judge answers (content, reasoning) for each pair in each order, as it sees the order:
# p1 reads content (original -1, swapped 1); p2 always prefers the first answer shown (-1, -1); p3 calls a tie, then is
# cut inside its reasoning; p4 reads content (1, -1).
ANSWERS = {("p1", "original"): ("-1", "Париж верен."), ("p1", "swapped"): ("1", "Париж верен."),
           ("p2", "original"): ("-1", "первый"), ("p2", "swapped"): ("-1", "первый"),
           ("p3", "original"): ("0", "равны"), ("p3", "swapped"): (None, "Сравниваю привет"),
           ("p4", "original"): ("1", "голубой"), ("p4", "swapped"): ("-1", "голубой")}  # fmt: skip


def _prompts(pairs: list[PairRecord]) -> dict[str, tuple[str, str]]:
    return {judge.render_pairwise_prompt(p.shown(o)): (p.id, o) for p in pairs for o in ("original", "swapped")}


def _scripted_judge(which: dict):
    """A Pollux-4B-Judge chat server answering each prompt (``which``: prompt -> (pair, order)) from ``ANSWERS``."""
    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        content, reasoning = ANSWERS[which[body["messages"][0]["content"]]]
        reply = chat_completion(content, HUB_ID, "length" if content is None else "stop")
        reply["choices"][0]["message"]["reasoning"] = reasoning
        return 200, reply

    return respond


def test_judge_eval_run_asks_both_orders_and_scores_pairwise(tmp_path):
    """`judge-eval run` on answer_1/answer_2 rows against a Pollux-4B-Judge chat server asks each pair twice (the
    answers swapped the second time), exact payloads, thinking on; rows keep the raw score and the verdict in the
    pair's orientation; `judge-eval score` reports the hand-derived figures: agreement 4/5, tie rate 1/7, position
    consistency 2/3, first-position rate 4/6, one failure."""
    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    pairs = load_pairs(data)
    which = _prompts(pairs)
    with ScriptedEndpoint(_scripted_judge(which), model=HUB_ID) as server:
        assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--out",
                     str(tmp_path / "run"), "--no-progress"]) == 0
    key = lambda b: b["messages"][0]["content"]  # noqa: E731
    assert sorted(server.bodies("/v1/chat/completions"), key=key) == sorted(
        ({"model": HUB_ID, "messages": [{"role": "user", "content": prompt}], "max_tokens": 1024, "temperature": 0.0,
          **NEUTRAL_SAMPLING} for prompt in which), key=key)  # fmt: skip
    rows = {(r.id, r.order): r for r in read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)}
    assert len(rows) == 8
    assert (rows["p2", "swapped"].score, rows["p2", "swapped"].verdict) == (-1.0, 1.0)
    assert (rows["p1", "swapped"].score, rows["p1", "swapped"].verdict, rows["p1", "swapped"].feedback) == (1.0, -1.0, "Париж верен.")
    assert (rows["p3", "swapped"].parse_ok, rows["p3", "swapped"].verdict, rows["p3", "swapped"].error) == (False, None, "unclosed_think")
    # raw_output is the generation as a /v1/judge result holds it: the separated reasoning back before the answer
    # (before: the bare "1", and None for the cut one, whose reasoning was all the judge wrote)
    assert (rows["p1", "swapped"].raw_output, rows["p3", "swapped"].raw_output) == (
        "<think>Париж верен.</think>1", "<think>Сравниваю привет")
    assert rows["p3", "original"].verdict == 0.0 and str(rows["p3", "original"].verdict) == "0.0"

    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "200"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["n_pairs"], metrics["n_labelled"], metrics["n_judgments"], metrics["n_parsed"]) == (4, 3, 8, 7)
    assert (metrics["n_failed"], metrics["failures"], metrics["n_both_orders"]) == (1, {"unclosed_think": 1}, 3)
    # Orders combined: p1 (-1, -1) -> -1, its label; p2 (-1 then 1) -> a tie, label 1; p3 has a failed order -> none;
    # p4 (1, 1) -> 1, unlabelled. Combined agreement 1 of 2 labelled pairs with a combined verdict.
    assert (metrics["n_pairs_combined"], metrics["n_orders_disagree"], metrics["n_pairs_uncombined"]) == (3, 1, 1)
    expected = {"agreement": (4 / 5, 5), "combined_agreement": (1 / 2, 2), "tie_rate": (1 / 7, 7),
                "position_consistency": (2 / 3, 3), "first_position_rate": (4 / 6, 6)}  # fmt: skip
    for name, (value, n) in expected.items():
        block = metrics[name]
        assert (block["value"], block["n"]) == (pytest.approx(value), n), name
        assert 0 <= block["ci"][0] <= value <= block["ci"][1] <= 1, name
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "| Position consistency | 0.667 [" in report and "1 failed (`unclosed_think`: 1)" in report
    assert "| Agreement with labels (per judgment) | 0.800 [" in report
    assert "| Agreement with labels (orders combined, per pair) | 0.500 [" in report
    assert "3 pairs have a combined verdict (1 of them a tie because their orders disagree), 1 none." in report
    written = [json.loads(line) for line in (tmp_path / "run" / "pairwise_pairs.jsonl").read_text().splitlines()]
    fields = ("id", "winner", "original", "swapped", "combined", "combined_status")
    assert written == [dict(zip(fields, row)) for row in [("p1", -1, -1.0, -1.0, -1.0, "orders_agree"),
                                                          ("p2", 1, -1.0, 1.0, 0.0, "orders_disagree"),
                                                          ("p3", 0, 0.0, None, None, "order_failed"),
                                                          ("p4", None, 1.0, 1.0, 1.0, "orders_agree")]]  # fmt: skip
    assert '<section id="pairwise">' in (tmp_path / "run" / "report.html").read_text(encoding="utf-8")


def test_pairwise_through_judge_serve_sends_typed_pair_requests(tmp_path):
    """Against judge-serve (/v1/judge answers), each judgment is one PairwiseRequest with the answers in the order
    shown; the results' scores are read from the typed envelope; --pairwise-orders original asks once."""
    data = _write(PAIRS[:2], tmp_path / "pairs.jsonl")
    sent = []

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        sent.append(body)
        (pair,) = body["pairs"]
        result = JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], feedback="r", score=-1.0,
                             parse_ok=True, score_source="verdict", in_scale=True, output="<think>r</think>-1")
        # In the format the run records for "tiny" (tagged): another would stop the run, as a pointwise one stops.
        return 200, JudgeResponse("judge-1", "judge.result", 0, "tiny", "seq2seq", "tagged", "v",
                                  [JudgeResponseItem(0, pair["id"], [result])], JudgeResponseUsage(1, 1, 0, 0, 0)).to_json()

    with ScriptedEndpoint(respond, model="tiny") as server:
        assert main(["run", "--judge", server.base_url, "--data", data, "--out", str(tmp_path / "run"), "--no-progress",
                     "--pairwise-orders", "original", "--max-tokens", "64", "--lenient"]) == 0  # reaches the server
    assert sorted(sent, key=lambda b: b["pairs"][0]["id"]) == [
        {"model": "tiny", "pairs": [{"id": f"{p['id']}#original", "instruction": p["instruction"],
                                     "answer_1": p["answer_1"], "answer_2": p["answer_2"], "rubrics": p["rubrics"]}],
         "max_tokens": 64, "temperature": 0.0, "lenient": True} for p in PAIRS[:2]]  # fmt: skip
    rows = read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)
    assert sorted((r.id, r.order, r.verdict, r.feedback) for r in rows) == [("p1", "original", -1.0, "r"),
                                                                           ("p2", "original", -1.0, "r")]
    # extra_body reaches the pairwise body as it reaches the pointwise one; a field the pairwise body does not take is
    # a configuration error (exit 2) before any request, not a silently dropped setting.
    sent.clear()
    with ScriptedEndpoint(respond, model="tiny") as server:
        argv = ["run", "--judge", server.base_url, "--data", data, "--no-progress", "--pairwise-orders", "original"]
        assert main([*argv, "--out", str(tmp_path / "warm"), "--extra-body", '{"temperature": 0.5}']) == 0
        assert {b["temperature"] for b in sent} == {0.5} and len(sent) == 2
        assert main([*argv, "--out", str(tmp_path / "bad"), "--extra-body", '{"constrained": true}']) == 2
    assert len(sent) == 2


def test_metrics_without_labels_or_second_order_say_why():
    """Without winner labels agreement is None with the reason, and without the swapped order so is position
    consistency; nothing is NaN."""
    pairs = [PairRecord("a", "i", "x", "y", "s")]
    rows = [PairwiseRow("a", "original", "j", "1", "", 1.0, 1.0, True, None, "", 0.1)]
    metrics = pairwise_metrics(pairs, rows, n_boot=50, orders=("original",))
    assert metrics["n_missing"] == 0  # asked in one order only: nothing missing
    assert {k: v for k, v in metrics["agreement"].items() if k != "why_empty"} == {"value": None, "ci": None, "n": 0}
    assert "winner labels" in metrics["agreement"]["why_empty"]
    assert metrics["position_consistency"]["value"] is None and "both orders" in metrics["position_consistency"]["why_empty"]
    assert metrics["tie_rate"]["value"] == 0.0 and metrics["tie_rate"]["ci"] is None  # one pair: no interval


def test_a_verdict_off_the_pairwise_scale_is_a_counted_failure():
    """-1, 0 and 1 are the pairwise verdicts; a 2 (integer format), a 0.5 (tagged), and judge-serve's result of 2
    are failures named out_of_scale, never scores: a 2 and a -2 once read as one consistent preference."""
    from eval.pairwise.judging import _from_result, _outcome
    from judge.wire import JudgeResult

    for text, fmt in (("2", "integer"), ("[FEEDBACK] x [RESULT] 0.5 [END]", "tagged")):
        row = _outcome(text, None, fmt, False)
        assert (row["parse_ok"], row["score"], row["error"]) == (False, None, "out_of_scale"), text
    assert _outcome("-1", None, "integer", False)["score"] == -1.0
    served = _from_result(JudgeResult(criterion="pairwise", criterion_id=None, scale=[-1, 0, 1], score=2.0,
                                      parse_ok=True, in_scale=False))
    assert (served["parse_ok"], served["error"]) == (False, "out_of_scale")


def test_score_counts_the_pairs_the_run_asked(tmp_path):
    """`judge-eval run --limit 2` asks the first two pairs (both orders): `score` reports those two, not the data's
    four, of which two were never asked and would read as pairs without judgments."""
    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    with ScriptedEndpoint(_scripted_judge(_prompts(load_pairs(data))), model=HUB_ID) as server:
        assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--out",
                     str(tmp_path / "run"), "--no-progress", "--limit", "2"]) == 0
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "20"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["n_pairs"], metrics["n_judgments"], metrics["n_missing"]) == (2, 4, 0)
    # A run cut short: one pair's swapped judgment has no row. Scored on what it has, and the report says so.
    path = tmp_path / "run" / PAIRWISE_PREDICTIONS
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = next(k for k, line in enumerate(lines) if json.loads(line)["order"] == "swapped")
    path.write_text("".join(line + "\n" for k, line in enumerate(lines) if k != cut), encoding="utf-8")
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "20"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["n_judgments"], metrics["n_missing"]) == (3, 1)
    assert "**1 judgments have no row** (the run is unfinished" in (tmp_path / "run" / "report.md").read_text()


def test_score_without_run_json_asks_for_data(tmp_path, capsys):
    """A pairwise predictions file scored without its run.json and without --data: exit 2 with an error that says to
    pass --data, never a KeyError traceback."""
    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    with ScriptedEndpoint(_scripted_judge(_prompts(load_pairs(data))), model=HUB_ID) as server:
        assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--out",
                     str(tmp_path / "run"), "--no-progress", "--limit", "1"]) == 0
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / PAIRWISE_PREDICTIONS).write_bytes((tmp_path / "run" / PAIRWISE_PREDICTIONS).read_bytes())
    capsys.readouterr()
    assert main(["score", "--predictions", str(alone), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "--data" in err and str(alone / "run.json") in err and "Traceback" not in err
    assert main(["score", "--predictions", str(alone), "--data", data, "--n-boot", "0"]) == 0
    # The pairs moved after the run: run.json names a file that is not there, said as such (it was a bare OS error).
    moved = tmp_path / "moved.jsonl"
    Path(data).rename(moved)
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "0"]) == 2
    assert capsys.readouterr().err.endswith(
        f"judge-eval score: error: data: {tmp_path / 'run' / 'run.json'} names --data {data}, which is not here "
        "(moved, or judged on another machine); pass the pairs the run judged with --data PAIRS.jsonl\n")
    assert main(["score", "--predictions", str(tmp_path / "run"), "--data", str(moved), "--n-boot", "0"]) == 0


def test_compare_of_pairwise_runs_says_what_it_compares(tmp_path, capsys):
    """compare pairs pointwise runs item by item: given scored pairwise runs it says so (exit 2), not "score the run
    first", which would not help."""
    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    for name in ("a", "b"):
        with ScriptedEndpoint(_scripted_judge(_prompts(load_pairs(data))), model=HUB_ID) as server:
            assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--out",
                         str(tmp_path / name), "--no-progress", "--limit", "1"]) == 0
        assert main(["score", "--predictions", str(tmp_path / name), "--n-boot", "0"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--n-boot", "10"]) == 2
    err = capsys.readouterr().err
    assert "a pairwise run; compare pairs pointwise runs item by item" in err and "score the run first" not in err


def _row(pair: PairRecord, order: str, raw: float | None, error: str | None = None) -> PairwiseRow:
    """A judgment of ``pair`` in ``order`` whose raw answer is ``raw`` (None: failed with ``error``)."""
    verdict = None if raw is None else (raw if order == "original" else -raw + 0.0)
    return PairwiseRow(pair.id, order, "j", None if raw is None else f"{raw:g}", "", raw, verdict, raw is not None,
                       error, "", 0.1, pair.content_key)


def test_orders_combined_into_one_verdict_per_pair_by_hand():
    """Labels -1, 1, 0, -1, 1, -1 and a judge that always prefers the answer shown first (raw -1 in both orders):
    per judgment it agrees on the original order of the five pairs with a winner of -1 (three) and the swapped
    order of those with 1 (two): 5 of 12 = 0.417. Combined, every pair's orders disagree (verdicts -1 and 1) and it
    is a tie: only the pair labelled 0 agrees, 1 of 6 = 0.167."""
    from eval.pairwise.metrics import pair_verdicts

    pairs = [PairRecord(f"q{k}", "i", f"a{k}", "b", "s", w) for k, w in enumerate([-1, 1, 0, -1, 1, -1])]
    rows = [_row(p, order, -1.0) for p in pairs for order in ("original", "swapped")]
    metrics = pairwise_metrics(pairs, rows, n_boot=0)
    assert (metrics["agreement"]["value"], metrics["agreement"]["n"]) == (pytest.approx(5 / 12), 12)
    assert (metrics["combined_agreement"]["value"], metrics["combined_agreement"]["n"]) == (pytest.approx(1 / 6), 6)
    assert (metrics["n_pairs_combined"], metrics["n_orders_disagree"], metrics["n_pairs_uncombined"]) == (6, 6, 0)
    assert [v["combined"] for v in pair_verdicts(pairs, rows)] == [0.0] * 6


def test_combine_orders_rules():
    """Both orders' verdict when they agree (a tie in both is a tie); a tie when they disagree, a win against a tie
    too (Zheng et al. 2023, Section 3.4: a win only when preferred in both orders); no verdict when an order failed
    (parse or request) or has no row; a run asked in one order combines nothing and says why."""
    from eval.pairwise.metrics import combine_orders

    pair = PairRecord("a", "i", "x", "y", "s", -1)
    cases = [((1.0, -1.0), (1.0, "orders_agree")),  # raw 1 then -1: answer 2 both times
             ((0.0, 0.0), (0.0, "orders_agree")),
             ((-1.0, 0.0), (0.0, "orders_disagree")),
             ((-1.0, -1.0), (0.0, "orders_disagree"))]  # fmt: skip
    for (first, second), expected in cases:
        assert combine_orders(_row(pair, "original", first), _row(pair, "swapped", second)) == expected
    failed = _row(pair, "swapped", None, "no_score")
    assert combine_orders(_row(pair, "original", -1.0), failed) == (None, "order_failed")
    assert combine_orders(None, _row(pair, "swapped", None, "request_failed")) == (None, "order_failed")
    assert combine_orders(_row(pair, "original", -1.0), None) == (None, "order_missing")
    one = pairwise_metrics([pair], [_row(pair, "original", -1.0)], n_boot=0, orders=("original",))
    assert one["combined_agreement"]["value"] is None and "one order only" in one["combined_agreement"]["why_empty"]
    assert one["agreement"]["value"] == 1.0 and one["n_pairs_uncombined"] == 1


def test_a_pair_edited_in_place_is_judged_again(tmp_path):
    """Resume reuses a judgment only for the text it judged: answer_2 of p1 changed under the same id, a rerun asks
    the judge both orders of p1 again (the new answer in the prompt) and nothing else; scored before that rerun, the
    old judgments are counted as of an older text, never scored against the new pair. Rows written before judgments
    kept a content key cannot be checked and are asked again."""
    import shutil

    from eval.pairwise.judging import pending_judgments

    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    edited = [{**PAIRS[0], "answer_2": "Марсель."}, *PAIRS[1:]]
    which = {**_prompts(load_pairs(data)), **_prompts(load_pairs(_write(edited, tmp_path / "edited.jsonl")))}
    argv = ["run", "--judge", "", "--model", HUB_ID, "--data", data, "--out", str(tmp_path / "run"), "--no-progress"]
    with ScriptedEndpoint(_scripted_judge(which), model=HUB_ID) as server:
        argv[2] = server.base_url
        assert main(argv) == 0
        assert len(server.bodies("/v1/chat/completions")) == 8
        _write(edited, tmp_path / "pairs.jsonl")  # the same file, p1's answer_2 changed, its id kept
        shutil.copytree(tmp_path / "run", tmp_path / "before")  # the run as it stands, scored below
        assert main(argv) == 0
        asked = [b["messages"][0]["content"] for b in server.bodies("/v1/chat/completions")[8:]]
    assert sorted(which[prompt] for prompt in asked) == [("p1", "original"), ("p1", "swapped")]
    assert all("Марсель." in prompt for prompt in asked)
    path = tmp_path / "run" / PAIRWISE_PREDICTIONS
    pairs = load_pairs(tmp_path / "pairs.jsonl")
    assert pending_judgments(pairs, path, ("original", "swapped"))[:2] == ([], 8)
    for run, stale in (("before", 2), ("run", 0)):
        assert main(["score", "--predictions", str(tmp_path / run), "--n-boot", "0"]) == 0
        metrics = json.loads((tmp_path / run / "metrics.json").read_text(encoding="utf-8"))
        # a row of an older text is stale, not missing: the run asked every judgment, the data changed after
        assert (metrics["n_stale"], metrics["n_missing"], metrics["n_judgments"]) == (stale, 0, 8 - stale), run
    before = (tmp_path / "before" / "report.md").read_text()
    assert "2 judgments are of an older text of their pair" in before and "have no row" not in before
    legacy = [{k: v for k, v in json.loads(line).items() if k != "content_key"}
              for line in path.read_text(encoding="utf-8").splitlines()]
    _write(legacy, path)
    todo, done, _ = pending_judgments(pairs, path, ("original", "swapped"))
    assert (len(todo), done) == (8, 0)


def test_judge_serve_counts_pairs_against_max_judgments_per_request():
    """judge-serve's max_judgments_per_request bounds pairs (one judgment each) as it bounds criteria, with the same
    refusal: a 400 naming the list, code invalid_request, "... Split the batch.", before anything is validated."""
    from serve.schema import RequestError, parse_judge_request

    pair = {"instruction": "i", "answer_1": "a", "answer_2": "b", "rubrics": SCALE_TEXT}
    assert len(parse_judge_request({"pairs": [pair] * 3}, max_items=64, max_judgments=3).pairs) == 3
    with pytest.raises(RequestError) as refused:
        parse_judge_request({"pairs": [pair] * 4}, max_items=64, max_judgments=3)
    err = refused.value
    assert (err.status, err.param, err.code, err.message) == (
        400, "pairs", "invalid_request",
        "pairs: 4 pairwise judgments requested; this server takes at most 3 per request. Split the batch.")
    # before validation: a body whose pairs would fail validation is refused on its count alone
    with pytest.raises(RequestError, match=r"^pairs: 4 pairwise judgments"):
        parse_judge_request({"pairs": [{"bad": 1}] * 4}, max_items=64, max_judgments=3)
    with pytest.raises(RequestError) as criteria:  # the criteria bound, for the shape compared above
        parse_judge_request({"items": [{"instruction": "i", "answer": "a", "criteria": ["x"] * 4}]}, max_items=64,
                            max_judgments=3)
    assert (criteria.value.status, criteria.value.param, criteria.value.code) == (400, "items", "invalid_request")
    assert criteria.value.message.endswith("this server takes at most 3 per request. Split the batch.")


def test_coverage_says_what_share_of_the_expected_judgments_the_rates_stand_on():
    """Agreement is over parsed judgments only: a judgment that failed to parse was counted in n_failed but out of
    every denominator, so a judge failing on the pairs it finds hard read as agreeing more. Coverage (parsed /
    expected judgments) is reported beside agreement, in metrics.json and in the Markdown and HTML reports."""
    from eval.pairwise.metrics import pairwise_html, pairwise_markdown

    pairs = [PairRecord(k, "q", "a", "b", "r", w) for k, w in (("A", -1), ("B", -1), ("C", 1), ("D", None))]
    rows = [PairwiseRow(pid, order, "j", "x", "", score, score if order == "original" else -score, True, None, "",
                        0.0, pairs[0].content_key)
            for pid, order, score in (("A", "original", -1.0), ("A", "swapped", 1.0), ("B", "original", -1.0),
                                      ("B", "swapped", -1.0), ("C", "swapped", -1.0), ("D", "original", 0.0),
                                      ("D", "swapped", 0.0))]
    rows.append(PairwiseRow("C", "original", "j", "x", "", None, None, False, "no_score", "", 0.0,
                            pairs[0].content_key))
    metrics = pairwise_metrics(pairs, rows, n_boot=0)
    assert (metrics["n_parsed"], metrics["n_failed"]) == (7, 1)
    assert metrics["coverage"] == {"value": 7 / 8, "n": 8, "n_parsed": 7}
    # a missing judgment lowers it too; so does a run asked in one order expect half as many
    assert pairwise_metrics(pairs, rows[:-2], n_boot=0)["coverage"] == {"value": 6 / 8, "n": 8, "n_parsed": 6}
    assert pairwise_metrics(pairs, [r for r in rows if r.order == "original"], n_boot=0,
                            orders=("original",))["coverage"] == {"value": 3 / 4, "n": 4, "n_parsed": 3}
    lines = pairwise_markdown(metrics).splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("| Agreement with labels (per judgment)"))
    assert lines[at + 1] == "| Coverage (parsed / expected judgments) | 0.875 (7 of 8) | 8 |"
    assert "<td>Coverage (parsed / expected judgments)</td><td>0.875 (7 of 8)</td><td>8</td>" in pairwise_html(metrics)
    assert pairwise_metrics([], [], n_boot=0)["coverage"]["value"] is None


def test_judgments_in_an_order_the_run_did_not_ask_are_counted_apart_not_scored():
    """A run asked in the original order only, whose file also holds swapped rows (merged by hand): two pairs, two
    expected judgments, both parsed and both agreeing with the label. By hand: coverage 2/2 = 1 (not 4/2), agreement
    on 2 judgments, no position consistency (one order asked), and the 2 swapped rows counted as n_unasked_order."""
    from eval.pairwise.metrics import _combined_text

    pairs = [PairRecord("a", "i", "x", "y", "s", 1), PairRecord("b", "i", "x", "y", "s", 1)]

    def row(pair_id, order, verdict):
        return PairwiseRow(pair_id, order, "j", "1", "", verdict if order == "original" else -verdict, verdict, True,
                           None, "", 0.1, content_key=pairs[0].content_key)

    rows = [row(p, o, 1.0) for p in ("a", "b") for o in ("original", "swapped")]
    metrics = pairwise_metrics(pairs, rows, n_boot=0, orders=("original",))
    assert metrics["coverage"] == {"value": 1.0, "n": 2, "n_parsed": 2}
    assert (metrics["n_judgments"], metrics["n_unasked_order"], metrics["agreement"]["n"]) == (2, 2, 2)
    assert metrics["position_consistency"]["value"] is None
    assert "2 judgments are in an order this run did not ask" in _combined_text(metrics)


def test_a_chat_answer_of_content_parts_is_read_as_its_text(tmp_path):
    """A server sending the answer as a list of content parts (Mistral's API: its thinking beside the text) was an
    AttributeError, a request_failed row every rerun asked again; the text parts are the answer, the reasoning parts
    skipped. Content that is no text (an image part) is a failed request saying what came, asked again by a rerun."""
    data = _write(PAIRS[:1], tmp_path / "pairs.jsonl")
    which = _prompts(load_pairs(data))
    parts = {"original": [{"type": "thinking", "thinking": "Париж — столица."}, {"type": "text", "text": "-"},
                          {"type": "text", "text": "1"}],
             "swapped": [{"type": "image_url", "image_url": {"url": "https://example.org/x.png"}}]}

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        return 200, chat_completion(parts[which[body["messages"][0]["content"]][1]], HUB_ID)

    with ScriptedEndpoint(respond, model=HUB_ID) as server:
        assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--out",
                     str(tmp_path / "run"), "--no-progress", "--max-retries", "0"]) == 3  # a failed request
        key = lambda b: b["messages"][0]["content"]  # noqa: E731
        assert sorted(server.bodies("/v1/chat/completions"), key=key) == sorted(
            ({"model": HUB_ID, "messages": [{"role": "user", "content": prompt}], "max_tokens": 1024,
              "temperature": 0.0, **NEUTRAL_SAMPLING} for prompt in which), key=key)  # fmt: skip
    rows = {r.order: r for r in read_pairwise_rows(tmp_path / "run" / PAIRWISE_PREDICTIONS)}
    assert (rows["original"].raw_output, rows["original"].score, rows["original"].verdict) == ("-1", -1.0, -1.0)
    assert (rows["swapped"].raw_output, rows["swapped"].error, rows["swapped"].reason) == (
        None, "request_failed", "the chat answer's message content is not text: a list of parts (image_url)")


@pytest.mark.parametrize(("run_json", "said"), [
    ('{"n_items": 1}', "data: {run} is missing or names no data; pass the pairs the run judged with --data "
                       "PAIRS.jsonl"),
    ("[]", "{run}: expected a JSON object"),
    ('{"oops": 1', "{run}: not valid JSON (Expecting ',' delimiter: line 1 column 11 (char 10))"),
    ('{"config": []}', '{run}: config: expected an object, got []; pass --data'),
    ('{"config": {"data": "p.jsonl", "limit": "2"}}', '{run}: config.limit: expected a count, 0 or more, got "2"'),
])  # fmt: skip
def test_score_names_a_bad_run_json_and_its_field(tmp_path, capsys, run_json, said):
    """`score` of a pairwise run read run.json with json.loads(...)["config"]: `{"n_items": 1}` was a KeyError
    traceback, `[]` a TypeError one, bad JSON an error naming no file. Read as the pointwise score reads it: one line
    naming the file (and the field), exit 2."""
    data = _write(PAIRS, tmp_path / "pairs.jsonl")
    with ScriptedEndpoint(_scripted_judge(_prompts(load_pairs(data))), model=HUB_ID) as server:
        assert main(["run", "--judge", server.base_url, "--model", HUB_ID, "--data", data, "--out",
                     str(tmp_path / "run"), "--no-progress", "--limit", "1"]) == 0
    run = tmp_path / "run" / "run.json"
    run.write_text(run_json, encoding="utf-8")
    capsys.readouterr()
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "0"]) == 2
    assert capsys.readouterr().err == f"judge-eval score: error: {said.format(run=run)}\n"


def test_pairwise_report_md_writes_the_judge_name_and_failure_codes_inert():
    """The judge's name (its --name, or the rows' judge) and the failure codes (read from the predictions file) are
    not report.md's own text: a "<img ...>" would be live HTML and "| # j" a table cell and a heading. Written through
    md_text: "<" as &lt;, "|" as &#124;, a leading "#" escaped; a code of one plain word in backticks, any other
    as md_text."""
    from eval.pairwise.metrics import pairwise_markdown

    pairs = [PairRecord("A", "q", "a", "b", "r", -1)]
    rows = [PairwiseRow("A", "original", "j", "x", "", None, None, False, "<b>bad|code", "", 0.0,
                        pairs[0].content_key),
            PairwiseRow("A", "swapped", "j", "x", "", None, None, False, "no_score", "", 0.0, pairs[0].content_key)]
    metrics = pairwise_metrics(pairs, rows, n_boot=0)
    text = pairwise_markdown(metrics, name="<img src=x onerror=alert(1)> | # j")
    assert text.splitlines()[0] == "## Pairwise judging — &lt;img src=x onerror=alert(1)&gt; &#124; # j"
    assert "2 failed (&lt;b&gt;bad&#124;code: 1, `no_score`: 1)" in text and "<img" not in text and "<b>" not in text


def test_pairwise_failure_codes_are_bounded_and_counted_most_first():
    """A pairwise predictions file written elsewhere whose 60 failed judgments each carry a distinct 5,000-character
    code, and 3 more ``no_score``: the failures were one whole key per code, alphabetical; now most first, each cut
    (none over 100 characters), past the 50 most frequent counted together (51 keys), none dropped, and the report
    says so."""
    from eval.pairwise.metrics import pairwise_markdown

    pairs = [PairRecord(f"p{k}", "q", "a", "b", "r", None) for k in range(63)]
    codes = [f"{k:03d}" + "ж" * 5000 for k in range(60)] + ["no_score"] * 3
    rows = [PairwiseRow(pair.id, "original", "j", "x", "", None, None, False, code, "", 0.0, pair.content_key)
            for pair, code in zip(pairs, codes)]
    metrics = pairwise_metrics(pairs, rows, n_boot=0, orders=("original",))
    failures = metrics["failures"]
    assert (metrics["n_failed"], sum(failures.values()), len(failures)) == (63, 63, 51)
    assert list(failures)[0] == "no_score" and failures["no_score"] == 3
    assert all(len(code) <= 100 for code in failures)
    assert "the codes after the 50 most frequent are counted together" in pairwise_markdown(metrics)


def test_judge_serve_constrains_a_pair_as_it_constrains_an_item(tiny_causal_dir, tmp_path, monkeypatch):
    """judge-serve's constrained decoding (``constrained_decoding: true``, the tiny CPU config's) reached items only:
    pairs were asked unconstrained, and the tiny judge that needs it failed every pairwise judgment. A pair's engine
    request now carries the verdict regex over the pairwise levels -1, 0, 1 when the server constrains, none when it
    does not (the same server, its setting flipped)."""
    import dataclasses
    import re
    import shutil

    from fastapi.testclient import TestClient

    from judge.checkpoints import EXPORT_MANIFEST
    from serve.app import create_app
    from serve.config import ServeConfig
    from tests.support.serve_in_process import await_bring_up

    root = tmp_path / "tagged-judge"
    shutil.copytree(tiny_causal_dir, root, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    (root / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq", "prompt_version": "pollux-ru-v2",
                                                    "generator": ".", "score_head": None, "verdict_format": "tagged"}),
                                        encoding="utf-8")
    payloads = []

    def answer(path: str, body: dict) -> tuple:
        payloads.append(body)
        return 200, {"choices": [{"text": "[FEEDBACK] Второй точнее. [RESULT] 1 [END]", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 10, "completion_tokens": 9}}

    def engine_get(path: str) -> tuple:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "max_model_len": 4096}]}
        return (200, {}) if path == "/health" else (404, {"detail": "Not Found"})

    monkeypatch.setenv("VLLM_API_KEY", "engine-key")
    pair = {"id": "p1", "instruction": "Что лучше?", "answer_1": "Так.", "answer_2": "Вот так.", "rubrics": SCALE_TEXT}
    with ScriptedEndpoint(answer, respond_get=engine_get) as engine:
        config = ServeConfig(model=str(root), served_model_name="judge", generator_url=engine.url, max_model_len=4096,
                             max_tokens=64, api_key="k", constrained_decoding=True).validate()
        with TestClient(create_app(config), base_url="http://localhost") as http:
            await_bring_up(http)
            replies = [http.post("/v1/judge", headers={"Authorization": "Bearer k"}, json={"pairs": [pair]})]
            judge_ = http.app.state.serve.judge
            judge_.settings = dataclasses.replace(judge_.settings, constrained=False)
            replies.append(http.post("/v1/judge", headers={"Authorization": "Bearer k"}, json={"pairs": [pair]}))
    for reply in replies:
        assert reply.status_code == 200, reply.text
        (result,) = reply.json()["items"][0]["results"]
        assert (result["score"], result["parse_ok"]) == (1.0, True)
    constrained, free = [p for p in payloads if "prompt" in p]
    regex = constrained["structured_outputs"]["regex"]
    assert regex == r"\[FEEDBACK\] [^\[\]]+ \[RESULT\] (\-1|0|1) \[END\]"
    assert re.fullmatch(regex, "[FEEDBACK] Второй точнее. [RESULT] -1 [END]")
    assert not re.fullmatch(regex, "[FEEDBACK] Второй точнее. [RESULT] 2 [END]")
    assert "structured_outputs" not in free


def test_the_pairwise_scale_is_the_demos_and_both_stages_share_it():
    """-1 the first answer better, 0 a tie, 1 the second (ai-forever/POLLUX demo/serve_pollux_demo.py, lines 77-78):
    one scale, in judge.scales, which judge-serve's pairwise jobs and judge-eval's pairwise reader both read."""
    import eval.pairwise.judging
    import serve.jobs
    from judge.scales import PAIRWISE_SCALE

    assert tuple(PAIRWISE_SCALE.levels) == (-1, 0, 1)
    assert serve.jobs.PAIRWISE_SCALE is PAIRWISE_SCALE is eval.pairwise.judging.PAIRWISE_SCALE
