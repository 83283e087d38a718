"""`judge-eval run`: a refused ``/v1/judge`` batch is split only when the refusal can be one criterion's, and the
bundled sample is one run key however ``--data`` names it.

A 400 or 422 may name one criterion the server cannot take; a 401, 403 or 404 refuses every request alike, so
asking each criterion alone only multiplies the refused requests. ``--data sample``, no ``--data`` and the sample's
own path (the one run.json records) are the same data, so a rerun naming it either way resumes the folder. The
server is a scripted stand-in (``tests.support.scripted_endpoint``).
"""

from __future__ import annotations

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from tests.support.eval_cli import run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat


def _one_answer_group(tmp_path):
    """Three criteria of one (instruction, answer): one /v1/judge request."""
    records = judge.load_records(judge.sample_data_path())
    group = [r for r in records if judge.prefix_key(r) == judge.prefix_key(records[0])][:3]
    assert len(group) == 3
    return judge.write_jsonl(group, tmp_path / "data.jsonl")


def _refusing_judge(status: int) -> ScriptedEndpoint:
    return ScriptedEndpoint(lambda path, body: (status, {"error": {"message": f"refused with {status}"}}))


def test_a_batch_refused_with_403_is_not_asked_again_criterion_by_criterion(tmp_path):
    data = _one_answer_group(tmp_path)
    with _refusing_judge(403) as server:
        code = main(run_args(server.base_url, data, tmp_path / "run", "--backend", "judge-serve", "--max-retries", "0"))
        sent = server.bodies("/v1/judge")
    assert code == 3 and len(sent) == 1  # split, it was 1 + 3 requests
    rows = read_predictions(tmp_path / "run")
    assert len(rows) == 3 and {r["error"] for r in rows} == {"request_failed"}


def test_a_batch_refused_with_422_is_still_asked_criterion_by_criterion(tmp_path):
    data = _one_answer_group(tmp_path)
    with _refusing_judge(422) as server:
        main(run_args(server.base_url, data, tmp_path / "run", "--backend", "judge-serve", "--max-retries", "0"))
        sent = server.bodies("/v1/judge")
    assert [len(body["items"][0]["criteria"]) for body in sent] == [3, 1, 1, 1]


def test_the_sample_named_by_its_path_resumes_a_run_on_the_default_data(tmp_path, capsys):
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]")) as server:
        args = ["run", "--judge", server.base_url, "--out", str(out), "--no-progress", "--max-tokens", "32",
                "--limit", "2"]
        assert main(args) == 0
        assert main([*args, "--data", str(judge.sample_data_path())]) == 0, capsys.readouterr().err
        assert main([*args, "--data", "sample"]) == 0, capsys.readouterr().err
        assert len(server.bodies("/v1/chat/completions")) == 2  # the two reruns had nothing left to ask
    assert len(read_predictions(out)) == 2


def test_overwrite_deletes_the_scores_of_the_predictions_it_discards_before_the_judge_is_reached(tmp_path):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]")) as server:
        assert main(run_args(server.base_url, data, out)) == 0
        unreachable = server.base_url  # closed below: nothing answers there
    scores = ["metrics.json", "report.md", "report.html", "items.parquet", "plots/confusion_all.png"]
    for name in [*scores, "plots/mine.png", "notes.txt"]:
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_text("x")
    code = main(run_args(unreachable, data, out, "--overwrite", "--connect-timeout-s", "0.5"))
    assert code == 4
    assert not (out / "predictions.jsonl").exists() or not read_predictions(out)
    assert [name for name in scores if (out / name).exists()] == []  # no figures of a run no longer there
    assert (out / "plots/mine.png").exists() and (out / "notes.txt").exists()  # what score does not write is kept
