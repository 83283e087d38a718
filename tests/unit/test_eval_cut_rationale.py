"""``cut_rationale``: how ``judge-eval run`` records a released ``-r`` judge's rationale ``max_tokens`` cut.

judge-serve's head scores the cut text (``finish_reason`` ``length``), as POLLUX's own pipeline scores whatever the
generation wrote. By default (``fail``) the run records a ``cut`` failure instead, a departure from POLLUX
(docs/released-pollux.md); ``score`` reproduces POLLUX: the head's value scored, the row's ``finish_reason`` still
``length``, and the run's summary and log count those rows, as score's metrics.json and report count their items.
The setting is in run.json and the run key.

judge-serve is a scripted stand-in on 127.0.0.1 (``tests.support.scripted_endpoint``) answering every criterion
with a regression result: the head's 1.5 on the cut rationale ``CUT``.
"""

from __future__ import annotations

import json
import logging

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.verdicts import VerdictError
from judge.wire import JudgeResult
from tests.support.eval_cli import cut_predictions_to, run_args
from tests.support.scripted_endpoint import ScriptedEndpoint

CUT = "[FEEDBACK] Рифма ес"


@pytest.fixture
def data(tmp_path):
    """Two sample records as a JSONL file."""
    return judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")


def _released_r_judge(finish_reason: str = "length", output: str = CUT) -> ScriptedEndpoint:
    """judge-serve serving a released ``-r`` judge as "judge": each criterion scored 1.5 by the head on ``output``
    (default ``CUT``), the generation ended by ``finish_reason``."""

    def respond(path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/judge" or not body:
            return 400, {"error": {"message": "items: required field is missing"}}
        (item,) = body["items"]
        results = [JudgeResult(criterion=criterion["name"], criterion_id=None, scale=[0, 1, 2], feedback="Рифма ес",
                               score=1.5, parse_ok=True, score_source="regression_head", regression_score=1.5,
                               output=output, finish_reason=finish_reason).to_json() for criterion in item["criteria"]]
        return 200, {"id": "judge-1", "object": "judge.result", "created": 0, "model": "judge",
                     "judge_kind": "regression", "verdict_format": "tagged", "prompt_version": "pollux-ru-v2",
                     "items": [{"index": 0, "id": item["id"], "results": results}],
                     "usage": {"judgments": len(results), "parsed": len(results), "prompt_tokens": 0,
                               "completion_tokens": 0, "total_tokens": 0}}

    def respond_get(path: str) -> tuple[int, dict]:
        if path.rstrip("/") != "/v1/models":
            return 404, {"detail": "Not Found"}
        return 200, {"object": "list", "data": [{"id": "judge", "object": "model", "verdict_format": "tagged"}]}

    return ScriptedEndpoint(respond, model="judge", respond_get=respond_get)


def _record(out) -> tuple[dict, dict]:
    """(run.json's config, run_key.json) of a run folder."""
    return (json.loads((out / "run.json").read_text(encoding="utf-8"))["config"],
            json.loads((out / "run_key.json").read_text(encoding="utf-8")))


def test_by_default_a_cut_rationale_is_a_cut_failure(data, tmp_path, capsys):
    """``fail``: both rows are ``cut`` failures (no score), counted among the parse failures; the run key of a
    default run is the one folders started before the setting existed have, so they resume."""
    out = tmp_path / "run"
    with _released_r_judge() as server:
        assert main(run_args(server.base_url, data, out)) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["written"], summary["parse_failed"], "cut_scored" in summary) == (2, 2, False)
    rows = read_predictions(out)
    assert [(row["score"], row["error"], row["finish_reason"]) for row in rows] == [
        (None, VerdictError.CUT, "length")] * 2
    config, key = _record(out)
    assert config["cut_rationale"] == "fail" and "cut_rationale" not in key


def test_cut_rationale_score_keeps_the_heads_value_and_counts_the_cut_rows(data, tmp_path, capsys, caplog):
    """``score``: both rows scored 1.5 (the head's value), their finish_reason still ``length``; the summary and the
    log count the 2 scored rows whose rationale was cut; run.json and the run key record the setting."""
    out = tmp_path / "run"
    with _released_r_judge() as server, caplog.at_level(logging.INFO, logger="judge_eval.run"):
        assert main(run_args(server.base_url, data, out, "--cut-rationale", "score")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["written"], summary["parse_failed"], summary["cut_scored"]) == (2, 0, 2)
    rows = read_predictions(out)
    assert [(row["score"], row["regression_score"], row["error"], row["finish_reason"]) for row in rows] == [
        (1.5, 1.5, None, "length")] * 2
    assert ("2 rows written now scored by the regression head on a rationale max_tokens cut (cut_rationale score, "
            "as POLLUX scores them); their finish_reason is length") in caplog.text
    config, key = _record(out)
    assert config["cut_rationale"] == key["cut_rationale"] == "score"


def test_cut_rationale_score_counts_only_the_cut_rows(data, tmp_path, capsys):
    """A whole rationale (``stop``) is scored either way and is no cut row."""
    with _released_r_judge("stop") as server:
        assert main(run_args(server.base_url, data, tmp_path / "run", "--cut-rationale", "score")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["written"], summary["parse_failed"], summary["cut_scored"]) == (2, 0, 0)


@pytest.mark.parametrize(("first", "then", "said"), [
    ((), ("--cut-rationale", "score"), "cut_rationale: None -> 'score'"),
    (("--cut-rationale", "score"), (), "cut_rationale: 'score' -> None"),
])  # fmt: skip
def test_a_resume_with_another_cut_rationale_is_refused(data, tmp_path, capsys, first, then, said):
    """One folder never mixes cut rows read two ways: refused before any request, naming the setting."""
    out = tmp_path / "run"
    with _released_r_judge() as server:
        assert main(run_args(server.base_url, data, out, *first)) == 0
        cut_predictions_to(out, 1)
        n = len(server.bodies("/v1/judge"))
        capsys.readouterr()
        assert main(run_args(server.base_url, data, out, *then)) == 2
        assert len(server.bodies("/v1/judge")) == n
    assert said in capsys.readouterr().err


def test_an_unknown_cut_rationale_is_refused_naming_the_choices(data, tmp_path, capsys):
    with _released_r_judge() as server:
        assert main(run_args(server.base_url, data, tmp_path / "run", "--cut-rationale", "keep")) == 2
        assert not server.bodies("/v1/judge")
    assert "cut_rationale: 'keep' is not one of fail, score" in capsys.readouterr().err


def test_cut_rationale_score_with_pairwise_data_is_refused(tmp_path, capsys):
    """Pairwise verdicts are no regression head's score: a setting that would go unused is refused."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": "p1", "instruction": "Вопрос?", "answer_1": "Да.", "answer_2": "Нет.",
                                 "rubrics": "-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше",
                                 "winner": -1}, ensure_ascii=False) + "\n", encoding="utf-8")
    with _released_r_judge() as server:
        assert main(run_args(server.base_url, pairs, tmp_path / "run", "--cut-rationale", "score")) == 2
        assert not server.bodies("/v1/judge")
    assert "cut_rationale: score reads a regression judge's pointwise score" in capsys.readouterr().err


def test_score_says_how_many_items_were_scored_on_a_cut_rationale(data, tmp_path, capsys):
    """``score`` after a ``cut_rationale: score`` run whose 2 rows hold the head's value on a cut rationale:
    metrics.json counts them and report.md says so under the summary; a whole rationale (``stop``) is not counted."""
    for finish, expected in (("length", 2), ("stop", None)):
        out = tmp_path / finish
        with _released_r_judge(finish) as server:
            assert main(run_args(server.base_url, data, out, "--cut-rationale", "score")) == 0
        assert main(["score", "--predictions", str(out), "--n-boot", "0"]) == 0
        capsys.readouterr()
        notes = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["notes"]
        assert notes.get("n_cut_scored") == expected
        report = (out / "report.md").read_text(encoding="utf-8")
        assert ("**2 items were scored on a rationale `max_tokens` cut**" in report) == (expected == 2)


@pytest.mark.parametrize("setting", [(), ("--cut-rationale", "score")])
def test_a_rationale_closed_before_the_cut_is_scored_and_counted_as_no_cut_row(data, tmp_path, capsys, setting):
    """A generation that ran to max_tokens after its [END] holds a whole rationale (``rationale_cut_short``): judge-
    serve scored it, and the run keeps that score under either setting; neither the run's summary nor score's
    metrics.json and report count it among the items scored on a cut rationale."""
    out = tmp_path / "run"
    with _released_r_judge("length", "[FEEDBACK] Рифма есть. [END] и ещё, и ещё") as server:
        assert main(run_args(server.base_url, data, out, *setting)) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["written"], summary["parse_failed"], summary.get("cut_scored")) == (2, 0, 0 if setting else None)
    assert [(row["score"], row["error"], row["finish_reason"]) for row in read_predictions(out)] == [
        (1.5, None, "length")] * 2
    assert main(["score", "--predictions", str(out), "--n-boot", "0"]) == 0
    capsys.readouterr()
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["notes"].get("n_cut_scored") is None
    assert "`max_tokens` cut" not in (out / "report.md").read_text(encoding="utf-8")


def test_score_reads_predictions_written_before_rows_kept_their_finish_reason(data, tmp_path, capsys):
    """The same cut run with ``finish_reason`` taken out of every row, as rows were written before it was kept:
    both rows still score (the head's 1.5), and with no finish reason to read none counts as cut."""
    out = tmp_path / "run"
    with _released_r_judge() as server:
        assert main(run_args(server.base_url, data, out, "--cut-rationale", "score")) == 0
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [row.pop("finish_reason") for row in rows] == ["length"] * 2
    (out / "predictions.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                           encoding="utf-8")
    assert main(["score", "--predictions", str(out), "--n-boot", "0"]) == 0
    capsys.readouterr()
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert (metrics["splits"]["all"]["overall"]["n_scored"], metrics["notes"].get("n_cut_scored")) == (2, None)
    assert "`max_tokens` cut" not in (out / "report.md").read_text(encoding="utf-8")
