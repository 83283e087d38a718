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


def _vllm(root: str | None, fingerprint: str | None = None) -> ScriptedEndpoint:
    """A vLLM-like chat server serving ``root`` (None: an entry without it) under the name ``judge``; with
    ``fingerprint``, a judge-serve's entry for its own engines (``weights_fingerprint``)."""
    entry = {"id": "judge", "object": "model", "max_model_len": 4096, **({"root": root} if root else {}),
             **({"weights_fingerprint": fingerprint} if fingerprint else {})}
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
            f"'/ckpt/a', but {other.base_url}, serving the same name, loaded another folder: '/ckpt/b'; resume "
            "against the judge that started the folder, or start again with --overwrite, or use another "
            "--out") in capsys.readouterr().err
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


#: judge-serve's root for an engine that loaded each path (``judge.wire.root_identity``): "sha256:" and the first 16
#: hex digits of ``printf %s <path> | sha256sum``.
ROOT_DIGEST = {"/ckpt/a": "sha256:b39f172928a3fe36", "/ckpt/b": "sha256:15c53b6773825fd5"}


def test_a_resume_holds_a_recorded_path_to_judge_serves_digest_of_the_root(tmp_path, capsys):
    """judge-serve names its engine's folder by a digest of its path (no client reads a path), and a judge-serve over
    an attached engine gives no weights_fingerprint: the root is all that tells a resume another folder. A run.json
    that recorded the path ``/ckpt/a`` (a plain vLLM server, an older judge-serve) resumes against the digest of
    ``/ckpt/a``, recording the digest; against the digest of ``/ckpt/b`` it is refused before any item is asked,
    naming the path with its digest and the other digest. Before: the digest read as another path (refused), or,
    with no root sent, nothing was compared and B's verdicts joined A's."""
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _vllm("/ckpt/a") as first:
        assert main(run_args(first.base_url, data, out)) == 0
    cut_predictions_to(out, 2)
    capsys.readouterr()
    with _vllm(ROOT_DIGEST["/ckpt/b"]) as other:
        assert main(run_args(other.base_url, data, out)) == 2
        assert other.bodies("/v1/chat/completions") == []
    assert (f"judge-eval run: error: judge: the 2 verdicts already in {out} were asked of a server that loaded "
            f"'/ckpt/a' (sha256:b39f172928a3fe36), but {other.base_url}, serving the same name, loaded another "
            "folder: 'sha256:15c53b6773825fd5'; resume against the judge that started the folder, or start again "
            "with --overwrite, or use another --out") in capsys.readouterr().err
    with _vllm(ROOT_DIGEST["/ckpt/a"]) as same:
        assert main(run_args(same.base_url, data, out)) == 0
        assert len(same.bodies("/v1/chat/completions")) == 2
    assert json.loads((out / "run.json").read_text())["server_limits"]["root"] == "sha256:b39f172928a3fe36"
    assert len(read_predictions(out)) == 4


def test_a_root_names_a_hub_snapshot_by_its_own_part_and_any_other_folder_by_a_digest():
    """judge.wire.root_identity, worked by hand: a hub snapshot keeps models--<owner>--<name>/snapshots/<revision>
    (public, one revision on any machine: a Slurm job's HF_HOME and a workstation's agree); another folder is
    "sha256:" and 16 hex digits of `printf %s /ckpt/judge | sha256sum`; either form is its own identity."""
    from judge.wire import root_identity

    hub = "models--ai-forever--pollux-judge-7b/snapshots/4e1f0c2"
    assert root_identity(f"/home/u/.cache/huggingface/hub/{hub}/") == root_identity(f"/scratch/hf/hub/{hub}") == hub
    assert root_identity(hub) == hub
    assert root_identity("/ckpt/judge") == root_identity("sha256:aee3f9b4ee96b64c") == "sha256:aee3f9b4ee96b64c"


def test_a_resume_whose_weights_fingerprint_is_the_same_passes_whatever_folder_the_root_named(tmp_path):
    """A regression judge's root was its generator folder and a released -r judge's its derived view, until
    judge-serve named the checkpoint its fingerprint covers: the same judge, the same weights_fingerprint, another
    root. Passes (it was refused as "another folder"); another fingerprint is refused by held_fingerprint as before."""
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    with _vllm("/ckpt/reg/generator", "f1") as first:
        assert main(run_args(first.base_url, data, out)) == 0
    cut_predictions_to(out, 2)
    with _vllm(ROOT_DIGEST["/ckpt/b"], "f1") as same:
        assert main(run_args(same.base_url, data, out)) == 0
        assert len(same.bodies("/v1/chat/completions")) == 2
    assert len(read_predictions(out)) == 4


def test_an_equal_fingerprint_with_no_root_keeps_the_recorded_root(tmp_path):
    """A server that names no root this time, its fingerprint the recorded one: run.json keeps the root it recorded
    (the fingerprint rule returned the missing one, erasing it)."""
    from eval.judging.format_choice import held_root

    (tmp_path / "run.json").write_text(json.dumps({"config": {}, "weights_fingerprint": "f1",
                                                   "server_limits": {"root": "/ckpt/a"}}), encoding="utf-8")
    assert held_root(tmp_path, 2, None, "http://judge", asking=True, fingerprint="f1") == "/ckpt/a"
    assert held_root(tmp_path, 2, "/ckpt/b", "http://judge", asking=True, fingerprint="f1") == "/ckpt/b"


def test_a_root_named_by_an_older_judge_serve_passes_when_the_fingerprints_are_one_exports_by_either_formula(
        tmp_path):
    """A regression export resumed after a judge-serve upgrade: the folder's run.json records the generator as root
    and the files' metadata fingerprint (a judge-serve that did not read ``weights_sha256.json``), the new one names
    the checkpoint and gives the content digests' fingerprint. Both fingerprints are the export's own, so the root
    names no other weights and passes; without the export to read (a URL's judge) it is refused, and so is a
    fingerprint of other files."""
    import pytest

    from eval.judging.format_choice import held_root, same_weights
    from judge.checkpoints import export_weights_fingerprint, record_weights_digests, write_manifest
    from judge.plumbing.config_files import ConfigError

    export = tmp_path / "export"
    (export / "generator").mkdir(parents=True)
    write_manifest(export, "regression", generator="generator", verdict_format="tagged")
    (export / "model.safetensors").write_bytes(b"head")
    (export / "generator" / "model.safetensors").write_bytes(b"generator")
    for folder in (export, export / "generator"):
        record_weights_digests(folder)
    old, new = export_weights_fingerprint(export, digests=False), export_weights_fingerprint(export)
    assert old != new and same_weights(old, new, export) and not same_weights(old, new)
    assert not same_weights("f" * 64, new, export) and not same_weights(old, "f" * 64, export)
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"config": {}, "weights_fingerprint": old,
                                              "server_limits": {"root": str(export / "generator")}}))
    assert held_root(out, 2, str(export), str(export), asking=True, fingerprint=new, export=export) == str(export)
    with pytest.raises(ConfigError, match="loaded another folder"):
        held_root(out, 2, str(export), str(export), asking=True, fingerprint=new)
