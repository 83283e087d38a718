"""``judge-train card --run``: the scored run must have judged this export.

A run's run.json records the judge it asked and judge-serve's weights fingerprint (``serve.layout``); the card
compares it with the export's own, so another judge's figures (or the figures of weights since retrained into the
same folder) never reach this export's card. What cannot be checked (no fingerprint, an endpoint URL) is written with
a warning. Exports here are tiny: a manifest, a config.json and a weights file of a few bytes (the fingerprint reads
only the files' names, sizes and modification times).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from judge.checkpoints import write_manifest
from serve.layout import resolve_layout, weights_fingerprint
from train.cli import main as train_main

ERROR = "judge-train card: error: "
WARNING = "judge-train card: warning: "


def _export(run_dir: Path, mode: str = "seq2seq") -> Path:
    """An export as judge-train leaves it, with stand-in weights files judge-serve's layout finds."""
    export = run_dir / "export"
    export.mkdir(parents=True)
    regression = mode == "regression"
    write_manifest(export, mode, generator="generator" if regression else ".",
                   score_head="score" if regression else None)
    architecture = "Qwen2ForSequenceClassification" if regression else "Qwen2ForCausalLM"
    labels = {"num_labels": 1} if regression else {}
    (export / "config.json").write_text(json.dumps({"architectures": [architecture], **labels}), encoding="utf-8")
    (export / "model.safetensors").write_bytes(b"weights of " + mode.encode())
    if regression:
        (export / "generator").mkdir()
        (export / "generator" / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
        (export / "generator" / "model.safetensors").write_bytes(b"generator weights")
    return export


def _fingerprint(export: Path) -> str:
    """What judge-serve records in a run of ``export`` (its GET /v1/models entry's weights_fingerprint)."""
    fingerprint = weights_fingerprint(resolve_layout(export))
    assert fingerprint is not None
    return fingerprint


def _scored_run(folder: Path, judge: str | None, fingerprint: str | None, mae: float = 0.4125,
                server_args: tuple[str, ...] = ()) -> Path:
    """A run folder as `judge-eval run` then `judge-eval score` leave it: run.json naming the judge, metrics.json."""
    folder.mkdir(parents=True)
    if judge is not None:
        record = {"job": "judge-eval run",
                  "config": {"judge": judge, "base_url_env": "JUDGE_BASE_URL", "server_args": list(server_args)}}
        if fingerprint is not None:
            record["weights_fingerprint"] = fingerprint
        (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    overall = {"n": 400, "n_failed": 3, "n_no_unique_mode": 12, "mae": mae, "mae_ci": [0.38, 0.445],
               "spearman": 0.6512, "spearman_ci": [0.61, 0.69], "vc_judge": 0.71, "vc_experts": 0.74}
    split = {"overall": overall, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}
    metrics = {"judge": "t-lite-judge", "target": "mode", "data": "pollux-test.jsonl",
               "predictions": str(folder / "predictions.jsonl"),
               "settings": {"n_boot": 1000, "seed": 0, "vc_repeats": 100, "ci_level": 0.95},
               "splits": {"all": split}}
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return folder


def _card(export: Path, run: Path, capsys) -> tuple[int, str]:
    code = train_main(["card", "--export", str(export), "--run", str(run)])
    return code, capsys.readouterr().err


def test_a_run_of_this_export_fills_the_card_without_a_word(tmp_path, capsys):
    """The run judge-eval made of this very folder: its figures are written, and nothing is said on stderr."""
    export = _export(tmp_path / "judge")
    run = _scored_run(tmp_path / "eval", str(export.resolve()), _fingerprint(export))
    assert _card(export, run, capsys) == (0, "")
    card = (export / "README.md").read_text(encoding="utf-8")
    assert "| Zero-Shot + Standard | 400 | 3 | 12 | 0.412 [0.380, 0.445] |" in card


def test_another_judges_run_is_refused_naming_both_folders(tmp_path, capsys):
    """A copy of the regression judge's export given the seq2seq judge's scored run: refused (exit 2), and the card
    is left without the other judge's figures."""
    seq2seq = _export(tmp_path / "seq2seq")
    regression = _export(tmp_path / "regression", "regression")
    copy = _export(tmp_path / "copy", "regression")  # written as the original was: a copy, not the same files
    run = _scored_run(tmp_path / "eval" / "seq2seq", str(seq2seq.resolve()), _fingerprint(seq2seq))
    code, err = _card(copy, run, capsys)
    assert code == 2
    assert err == (f"{ERROR}{run}: the run judged {seq2seq.resolve()} (weights fingerprint "
                   f"{_fingerprint(seq2seq)[:12]}), not {copy} ({_fingerprint(copy)[:12]}; the fingerprint is of the "
                   "weights files' names, sizes and modification times, so a copy made without cp -p differs too); "
                   f"score a run of this export: judge-eval run --judge {copy} ..., then judge-eval score\n")
    assert not (copy / "README.md").exists()
    assert _card(regression, run, capsys)[0] == 2


def test_a_run_of_the_weights_before_retraining_is_refused_as_such(tmp_path, capsys):
    """Retrained into the same folder: the run names this export, but the weights it judged are gone."""
    export = _export(tmp_path / "judge")
    before = _fingerprint(export)
    run = _scored_run(tmp_path / "eval", str(export.resolve()), before)
    weights = export / "model.safetensors"
    weights.write_bytes(b"retrained weights")
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1_000_000_000))
    code, err = _card(export, run, capsys)
    assert code == 2
    assert err == (f"{ERROR}{run}: the run judged {export}, which was retrained (its weights files rewritten) since: "
                   f"weights fingerprint {before[:12]} then, {_fingerprint(export)[:12]} now; score a run of this "
                   f"export: judge-eval run --judge {export} ..., then judge-eval score\n")
    assert not (export / "README.md").exists()


def test_a_run_served_with_a_generating_model_of_its_own_is_refused_as_such(tmp_path, capsys):
    """judge-serve given --generator-model fingerprints that model in place of the export's generator/: the rationales
    the run scored came from other weights than the export serves alone, so the card refuses it, saying so (not that
    the export was retrained). The same generator given explicitly is the export as served alone: accepted."""
    export = _export(tmp_path / "judge", "regression")
    other = _export(tmp_path / "other", "regression") / "generator"
    served = weights_fingerprint(resolve_layout(export, generator_model=str(other)))
    assert served is not None and served != _fingerprint(export)
    run = _scored_run(tmp_path / "eval", str(export.resolve()), served,
                      server_args=("--generator-model", str(other), "--enforce-eager"))
    code, err = _card(export, run, capsys)
    assert code == 2
    assert err == (f"{ERROR}{run}: the run's judge-serve was given a generating model of its own (server_args "
                   f"--generator-model {other} --enforce-eager), so the rationales it scored are not {export}'s as "
                   f"served alone: weights fingerprint {served[:12]}, not the export's {_fingerprint(export)[:12]}; "
                   f"score a run of this export: judge-eval run --judge {export} ..., then judge-eval score, without "
                   "--generator-model\n")
    assert not (export / "README.md").exists()

    same = _scored_run(tmp_path / "same", str(export.resolve()), _fingerprint(export),
                       server_args=(f"--generator-model={export / 'generator'}",))
    assert _card(export, same, capsys) == (0, "")
    # another judge served with a generating model is another judge's run, said as such
    elsewhere = _scored_run(tmp_path / "elsewhere", str(other.parent.resolve()), served,
                            server_args=("--generator-model", str(other)))
    judged_other = f"{ERROR}{elsewhere}: the run judged {other.parent.resolve()} "
    assert _card(export, elsewhere, capsys)[1].startswith(judged_other)
    # a --config that cannot be read now tells nothing: both reasons are given, neither claimed; a --generator-model
    # after it still tells
    moved = str(tmp_path / "moved.yaml")
    unread = _scored_run(tmp_path / "unread", str(export.resolve()), served, server_args=("--config", moved))
    assert _card(export, unread, capsys)[1] == (
        f"{ERROR}{unread}: the run judged {export} with weights fingerprint {served[:12]}, not its "
        f"{_fingerprint(export)[:12]} now: it was retrained since, or the run's --config (which cannot be read now) "
        f"gave judge-serve a generating model of its own; score a run of this export: judge-eval run --judge {export} "
        "..., then judge-eval score\n")
    both = _scored_run(tmp_path / "both", str(export.resolve()), served,
                       server_args=("--config", moved, "--generator-model", str(other)))
    assert "was given a generating model of its own" in _card(export, both, capsys)[1]


def test_a_run_without_a_fingerprint_is_written_with_a_warning(tmp_path, capsys):
    """An older run (or one vLLM's server judged) records no fingerprint: not refused, but said to be unchecked."""
    export = _export(tmp_path / "judge")
    run = _scored_run(tmp_path / "eval", "/elsewhere/export", None)
    assert _card(export, run, capsys) == (0, (
        f"{WARNING}{run}: the run records no weights fingerprint (judge /elsewhere/export; an older judge-eval run, "
        f"or a server other than judge-serve, records none), so its judge cannot be checked against {export}\n"))
    assert "0.412 [0.380, 0.445]" in (export / "README.md").read_text(encoding="utf-8")
    bare = _scored_run(tmp_path / "bare", None, None)  # scores without the run's run.json
    assert _card(export, bare, capsys) == (0, (
        f"{WARNING}{bare}: no run.json of judge-eval run, so the run's judge cannot be checked against {export}: "
        "make sure it judged this export\n"))


def test_a_run_that_asked_an_endpoint_is_written_with_a_warning(tmp_path, capsys):
    """A served judge may be a copy on another machine (other modification times): nothing to compare, so a
    warning and the figures; the same weights' fingerprint says nothing."""
    export = _export(tmp_path / "judge")
    run = _scored_run(tmp_path / "eval", "http://gpu-7:8000/v1", "0123456789abcdef")
    assert _card(export, run, capsys) == (0, (
        f"{WARNING}{run}: the run asked an endpoint (http://gpu-7:8000/v1) serving weights with fingerprint "
        f"0123456789ab, not {export}'s ({_fingerprint(export)[:12]}): its judge cannot be checked; make sure it "
        "served this export\n"))
    assert "0.412 [0.380, 0.445]" in (export / "README.md").read_text(encoding="utf-8")
    served = _scored_run(tmp_path / "served", "http://127.0.0.1:8000/v1", _fingerprint(export))
    assert _card(export, served, capsys) == (0, "")


def test_scores_written_elsewhere_are_checked_against_their_runs_record(tmp_path, capsys):
    """`judge-eval score --out` elsewhere: the run.json is found beside the predictions metrics.json names."""
    export = _export(tmp_path / "judge")
    other = _export(tmp_path / "other")
    run = _scored_run(tmp_path / "eval", str(other.resolve()), _fingerprint(other))
    scores = tmp_path / "scores"
    scores.mkdir()
    (run / "metrics.json").rename(scores / "metrics.json")
    code, err = _card(export, scores, capsys)
    assert code == 2 and err.startswith(f"{ERROR}{run}: the run judged {other.resolve()} (weights fingerprint ")


def test_a_missing_run_folder_and_a_training_run_folder_are_named_as_such(tmp_path, capsys):
    """--run on a folder not there says so (not "score the run first"); --export on a judge-train run folder
    names its export, as judge-serve and judge-eval do."""
    export = _export(tmp_path / "t-lite-judge")
    assert _card(export, tmp_path / "runs" / "eval" / "nope", capsys) == (
        2, f"{ERROR}{tmp_path / 'runs' / 'eval' / 'nope'}: no such folder\n")
    assert _card(export, tmp_path / "eval" / "metrics.json", capsys) == (
        2, f"{ERROR}{tmp_path / 'eval' / 'metrics.json'}: no such file\n")
    run_folder = tmp_path / "t-lite-judge"
    assert train_main(["card", "--export", str(run_folder)]) == 2
    assert capsys.readouterr().err == (f"{ERROR}{run_folder}: no pollux_judge.json; not a judge-train export; its "
                                       f"judge is {run_folder / 'export'} (pass that folder)\n")
    assert train_main(["card", "--export", str(tmp_path)]) == 2  # no export below: no hint to give
    assert capsys.readouterr().err == f"{ERROR}{tmp_path}: no pollux_judge.json; not a judge-train export\n"


def _by_metadata(*folders: Path) -> str:
    """The fingerprint a judge-serve that did not read ``weights_sha256.json`` recorded: each weights file's name,
    size and modification time, folder by folder."""
    import hashlib

    from judge.checkpoints import weight_files

    digest = hashlib.sha256()
    for position, folder in enumerate(folders):
        for path in weight_files(folder):
            info = path.stat()
            digest.update(f"{position}/{path.name}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def test_a_run_fingerprinted_by_metadata_beside_recorded_digests_is_accepted_saying_so(tmp_path, capsys):
    """A run recorded by a judge-serve that fingerprinted the files by name, size and modification time, of an
    export that records its content digests: the same files by either formula, so the figures are written and the
    card says which formula matched; a run of other weights by the same formula is still refused."""
    from judge.checkpoints import record_weights_digests

    for mode in ("seq2seq", "regression"):
        export = _export(tmp_path / mode / "judge", mode)
        folders = (export, export / "generator") if mode == "regression" else (export,)
        for folder in folders:
            record_weights_digests(folder)
        old = _by_metadata(*folders)
        assert old != _fingerprint(export)  # the recorded digests change what judge-serve reports now
        run = _scored_run(tmp_path / mode / "eval", str(export.resolve()), old)
        assert _card(export, run, capsys) == (0, "")
        card = (export / "README.md").read_text(encoding="utf-8")
        assert "| Zero-Shot + Standard | 400 | 3 | 12 | 0.412 [0.380, 0.445] |" in card
        assert "by the weights files' names, sizes and modification times" in card

        current = _scored_run(tmp_path / mode / "now", str(export.resolve()), _fingerprint(export))
        assert _card(export, current, capsys) == (0, "")
        assert "by the weights files' content digests (`weights_sha256.json`)" in (
            export / "README.md").read_text(encoding="utf-8")

        other = _export(tmp_path / mode / "other", mode)
        # other weights of another size: told apart by the metadata formula whatever the filesystem's clock resolution
        (other / "model.safetensors").write_bytes(b"retrained weights of " + mode.encode())
        stale = _scored_run(tmp_path / mode / "stale", str(export.resolve()),
                            _by_metadata(*((other, other / "generator") if mode == "regression" else (other,))))
        code, err = _card(export, stale, capsys)
        assert code == 2 and "retrained" in err


def test_a_regression_export_whose_generator_was_swapped_since_the_run_is_refused(tmp_path, capsys):
    """The fingerprint judge-serve records covers both engines' weights, the head's folder and generator/: another
    generator put in the export's generator/ after the run (rewritten, or copied with cp -p together with its own
    weights_sha256.json) changes it, so the run's figures (another generator's rationales) are refused."""
    import shutil

    from judge.checkpoints import export_weights_fingerprint, folders_fingerprint, record_weights_digests

    export = _export(tmp_path / "judge", "regression")
    other = _export(tmp_path / "other", "regression")
    (other / "generator" / "model.safetensors").write_bytes(b"another generator's weights")
    for folder in (export, export / "generator", other / "generator"):
        record_weights_digests(folder)
    served = _fingerprint(export)
    assert served == export_weights_fingerprint(export) == folders_fingerprint([export, export / "generator"])
    assert served != folders_fingerprint([export])  # the generator's weights are part of it
    run = _scored_run(tmp_path / "eval", str(export.resolve()), served)
    assert _card(export, run, capsys) == (0, "")

    shutil.rmtree(export / "generator")
    shutil.copytree(other / "generator", export / "generator")  # cp -p: the other record stays valid for its files
    assert _fingerprint(export) not in (served, None)
    code, err = _card(export, run, capsys)
    assert code == 2 and "retrained" in err, err

    (export / "generator" / "model.safetensors").write_bytes(b"a retrained generator")  # rewritten in place
    code, err = _card(export, run, capsys)
    assert code == 2 and "retrained" in err, err
