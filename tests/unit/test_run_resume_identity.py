"""`judge-eval run` holds a resumed folder to the weights judge-serve says it serves (its model entry's
``weights_fingerprint``), not only to the served name and ``root``.

A judge retrained into the same checkpoint folder and served again under the same name lists the same ``id`` and
the same ``root``: only the fingerprint of its weights files differs. A resume against it is refused before any item
is asked (exit 2, as a resume against another model is); a server that gives no fingerprint (any OpenAI server)
resumes as before, with a note saying the verdicts are kept unchecked. The server is a scripted stand-in
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
FIRST, RETRAINED = "a" * 64, "b" * 64


def _served(fingerprint: str | None) -> ScriptedEndpoint:
    """A server of ``/ckpt/judge`` under the name ``judge`` whose entry gives ``fingerprint`` (None: none)."""
    entry = {"id": "judge", "object": "model", "max_model_len": 4096, "root": "/ckpt/judge",
             **({"weights_fingerprint": fingerprint} if fingerprint else {})}
    return ScriptedEndpoint(vllm_chat(GOOD), respond_get=lambda path: (200, {"object": "list", "data": [entry]}))


def _recorded(out) -> str | None:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))["weights_fingerprint"]


def test_a_resume_against_weights_retrained_in_place_is_refused(tmp_path, capsys):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _served(FIRST) as first:
        assert main(run_args(first.base_url, data, out)) == 0
    assert _recorded(out) == FIRST
    cut_predictions_to(out, 2)
    capsys.readouterr()
    with _served(RETRAINED) as retrained:
        assert main(run_args(retrained.base_url, data, out)) == 2
        assert retrained.bodies("/v1/chat/completions") == []
    assert (f"judge-eval run: error: judge: the 2 verdicts already in {out} were asked of weights with fingerprint "
            f"{FIRST}, but {retrained.base_url} now serves weights with fingerprint {RETRAINED} (retrained or replaced "
            "in place): start again with --overwrite, or use another --out, or resume against the weights that "
            "started the folder") in capsys.readouterr().err
    assert len(read_predictions(out)) == 2 and _recorded(out) == FIRST
    with _served(RETRAINED) as retrained:  # the remedy the message names: the folder starts again on these weights
        assert main(run_args(retrained.base_url, data, out, "--overwrite")) == 0
        assert len(retrained.bodies("/v1/chat/completions")) == 4
    assert _recorded(out) == RETRAINED


def test_a_server_giving_no_fingerprint_resumes_as_before_with_one_note(tmp_path, caplog):
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _served(FIRST) as first:
        assert main(run_args(first.base_url, data, out)) == 0
    cut_predictions_to(out, 2)
    caplog.clear()
    with _served(None) as silent:
        assert main(run_args(silent.base_url, data, out)) == 0
        assert len(silent.bodies("/v1/chat/completions")) == 2
    note = (f"note: {silent.base_url} gives no weights_fingerprint in its GET /v1/models entry (only judge-serve "
            f"does): the 2 verdicts already in {out} are kept without telling whether the weights it serves are the "
            "ones that judged them")
    assert caplog.messages.count(note) == 1, caplog.messages
    assert _recorded(out) == FIRST  # nothing said now: the folder's record stands
    cut_predictions_to(out, 3)
    caplog.clear()
    with _served(FIRST) as same:  # the same weights: resumed, no note
        assert main(run_args(same.base_url, data, out)) == 0
        assert len(same.bodies("/v1/chat/completions")) == 1
    assert not [m for m in caplog.messages if "weights_fingerprint" in m]
    assert [row["judge"] for row in read_predictions(out)] == ["judge"] * 4
