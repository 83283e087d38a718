"""`judge-eval run` holds a resumed folder to the weights its verdicts were asked of, not only to the served name.

``vllm serve CKPT --served-model-name judge`` lists ``{"id": "judge", "root": "CKPT"}``: two checkpoints served under
one name differ only in ``root``. A resume whose URL now serves other weights under the folder's name is refused
before any item is asked; a server listing no ``root`` is no evidence and resumes. The server is a scripted stand-in
(``tests.support.scripted_endpoint``) whose chat requests are counted.
"""

from __future__ import annotations

import json

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from tests.support.eval_cli import cut_predictions_to, run_args
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat

GOOD = "[FEEDBACK] ok [RESULT] 1 [END]"


def _vllm(root: str | None) -> ScriptedEndpoint:
    """A vLLM-like chat server serving ``root`` (None: an entry without it) under the name ``judge``."""
    entry = {"id": "judge", "object": "model", "max_model_len": 4096, **({"root": root} if root else {})}
    return ScriptedEndpoint(vllm_chat(GOOD), respond_get=lambda path: (200, {"object": "list", "data": [entry]}))


def test_a_resume_against_other_weights_under_the_same_served_name_is_refused(tmp_path, capsys):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _vllm("/ckpt/a") as first:
        assert main(run_args(first.base_url, data, out)) == 0
    assert json.loads((out / "run.json").read_text())["server_limits"]["root"] == "/ckpt/a"
    cut_predictions_to(out, 2)
    capsys.readouterr()
    with _vllm("/ckpt/b") as other:
        assert main(run_args(other.base_url, data, out)) == 2
        assert other.bodies("/v1/chat/completions") == []
    assert (f"judge-eval run: error: judge: the 2 verdicts already in {out} were asked of a server that loaded "
            f"'/ckpt/a', but {other.base_url} now serves '/ckpt/b' under the same name: resume against the judge "
            "that started the folder, or start again with --overwrite, or use another --out") in capsys.readouterr().err
    assert len(read_predictions(out)) == 2
    with _vllm(None) as silent:  # says no root: no evidence either way; run.json keeps the recorded one
        assert main(run_args(silent.base_url, data, out)) == 0
        assert len(silent.bodies("/v1/chat/completions")) == 2
    assert json.loads((out / "run.json").read_text())["server_limits"]["root"] == "/ckpt/a"
    cut_predictions_to(out, 3)
    with _vllm("/ckpt/a") as same:
        assert main(run_args(same.base_url, data, out)) == 0
        assert len(same.bodies("/v1/chat/completions")) == 1
    assert [row["judge"] for row in read_predictions(out)] == ["judge"] * 4
