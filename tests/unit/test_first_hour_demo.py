"""A newcomer's first mistakes with `make demo`'s script (scripts/demo.py) and the sample's generator
(scripts/make_sample.py): each is one line on stderr and exit code 2, said before any work, naming the flag and the
file once.

The stage behaviour itself is tests/unit/test_demo.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from scripts import demo


def _record_commands(monkeypatch) -> list[list[str]]:
    """The console scripts the demo would run, recorded instead of run."""
    commands: list[list[str]] = []
    monkeypatch.setattr(demo, "_run", lambda cmd, env=None: commands.append(cmd) or 0)
    return commands


@pytest.mark.parametrize(("stages", "said"), [
    ("nope", "unknown stage nope"),
    ("contract,trian,serv", "unknown stages serv, trian"),
])  # fmt: skip
def test_an_unknown_stage_is_refused_naming_the_flag(tmp_path, capsys, stages, said):
    """Before: "unknown stages ['nope']; choose from [...]", naming neither --stages nor the way to run them all."""
    with pytest.raises(SystemExit) as exited:
        demo.main(["--out", str(tmp_path / "out"), "--stages", stages])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.splitlines()[-1] == (
        f"python scripts/demo.py: error: --stages: {said}; choose from contract,train,serve,eval,mera "
        "(comma-separated), or leave --stages out for every stage")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stages", [",", "", " , "])
def test_a_stages_list_naming_no_stage_is_refused(tmp_path, capsys, stages):
    """`--stages ,` once ran nothing, exit 0, and printed "make demo finished": a silent no-op."""
    with pytest.raises(SystemExit) as exited:
        demo.main(["--out", str(tmp_path / "out"), "--stages", stages])
    assert exited.value.code == 2
    assert "--stages names no stage; choose from ['contract', 'train', 'serve', 'eval', 'mera']" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stages, trained, missing", [
    ("mera", (), "seq2seq"),                  # once ran the sandbox self-check (~10 s) before refusing
    ("contract,mera", (), "seq2seq"),         # once built the tiny models and read the sample first
    ("contract,serve", (), "seq2seq"),
    ("eval", ("seq2seq",), "regression"),     # eval serves both judges
])
def test_a_stage_that_serves_a_missing_judge_is_refused_before_any_stage_runs(tmp_path, capsys, monkeypatch, stages,
                                                                            trained, missing):
    out = tmp_path / "out"
    for recipe in trained:
        (out / "train" / recipe / "export").mkdir(parents=True)
    commands = _record_commands(monkeypatch)
    assert demo.main(["--out", str(out), "--stages", stages]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"demo: --out {out}: no trained {missing} judge at {out / 'train' / missing / 'export'}; "
                            "run the train stage first (add train to --stages, or leave --stages out for every "
                            "stage)\n")
    assert commands == [] and "========" not in captured.out  # no stage began
    assert not (out / "models").exists() and not (out / "contract_summary.json").exists()


def test_a_plan_whose_judges_are_there_or_trained_first_is_not_refused(tmp_path):
    """With the train stage in the plan the judges are written before they are served, and an --out that holds both
    exports serves them: nothing refused up front."""
    assert demo.missing_judges(tmp_path, [s for s in demo.STAGES if s.name in ("train", "mera")]) is None
    assert demo.missing_judges(tmp_path, [s for s in demo.STAGES if s.name == "contract"]) is None
    for recipe in ("seq2seq", "regression"):
        (tmp_path / "train" / recipe / "export").mkdir(parents=True)
    assert demo.missing_judges(tmp_path, list(demo.STAGES[2:])) is None


def test_a_bad_data_file_is_named_once_after_the_flag(tmp_path, capsys):
    """`--data` missing, or with a bad row: the path once (it was printed twice, `--data X: X: ...`), then the
    loader's words with the row."""
    missing = tmp_path / "nothere.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n{"id": \n', encoding="utf-8")
    for path, said in ((missing, "no such file or folder"), (bad, "line 1: field 'instruction': is missing")):
        assert demo.main(["--out", str(tmp_path / "out"), "--stages", "contract", "--data", str(path)]) == 2
        err = capsys.readouterr().err
        assert err == f"demo: --data {path}: {said}\n", err


def test_make_sample_refuses_a_folder_as_out_before_building(tmp_path, capsys, monkeypatch):
    """`python -m scripts.make_sample --out DIR`: one line naming the flag, exit 2, instead of an IsADirectoryError
    traceback from the final rename after the whole sample was built."""
    from scripts import make_sample

    built = []
    monkeypatch.setattr(make_sample, "build_records", lambda seed: built.append(seed) or [])
    with pytest.raises(SystemExit) as exited:
        make_sample.main(["--out", str(tmp_path)])
    assert exited.value.code == 2 and built == []
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python scripts/make_sample.py: error: --out {tmp_path}: a folder, not a file; give the JSONL file to write")


def test_make_sample_refuses_an_out_it_cannot_write_in_one_line(tmp_path, capsys, monkeypatch):
    """`--out` under a file (no folder can be made there): one line naming the flag and the reason, exit 2, before the
    sample is built, instead of a traceback from the writer."""
    from scripts import make_sample

    built = []
    monkeypatch.setattr(make_sample, "build_records", lambda seed: built.append(seed) or [])
    (tmp_path / "plain").write_text("x", encoding="utf-8")
    out = tmp_path / "plain" / "sample.jsonl"
    with pytest.raises(SystemExit) as exited:
        make_sample.main(["--out", str(out)])
    assert exited.value.code == 2 and built == []
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"python scripts/make_sample.py: error: --out {out}: cannot be written ("), err
    assert "Traceback" not in err


@pytest.mark.parametrize("under", ["", "sub"], ids=["out-is-a-file", "out-under-a-file"])
def test_an_out_that_is_a_file_is_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch, under):
    """`--out FILE` (or `FILE/sub`) stopped in mkdir with a FileExistsError (NotADirectoryError) traceback, exit 1;
    now the file is named after the flag, before any stage runs."""
    blocker = tmp_path / "afile"
    blocker.write_text("", encoding="utf-8")
    commands = _record_commands(monkeypatch)
    assert demo.main(["--out", str(blocker / under), "--stages", "train"]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"demo: --out: {blocker} is a file, not a folder\n"
    assert commands == [] and "========" not in captured.out


def test_ctrl_c_is_one_line_and_exit_code_130(tmp_path, capsys, monkeypatch):
    """Ctrl+C during a stage printed a KeyboardInterrupt traceback; now one line and 130, as judge-eval does."""
    def interrupted(out, args, servers):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "STAGES", (demo.Stage("slow", "interrupted by Ctrl+C", interrupted),))
    assert demo.main(["--out", str(tmp_path), "--stages", "slow"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("demo: interrupted") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("pythonpath", "missing"), [(False, "judge"), (True, "numpy")])
def test_a_python_without_the_toolkit_is_told_which_python_to_use(pythonpath, missing):
    """`python3 scripts/demo.py --help` outside the venv was a ModuleNotFoundError traceback. `-S` leaves out the
    site packages, so this interpreter has no `judge`, as a system Python without `make setup` has none; with
    PYTHONPATH at the clone it finds `judge` but none of its dependencies (numpy's traceback, before)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(demo.__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | ({"PYTHONPATH": str(root)} if pythonpath else {})
    done = subprocess.run([sys.executable, "-S", "scripts/demo.py", "--help"], cwd=root, capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert done.stderr == ("demo: run it with .venv/bin/python (make setup first); this Python has no module "
                           f"'{missing}'\n")
    assert done.stdout == ""


def _connection_refused():
    import httpx
    import openai

    return openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1/judge"))


def _server_error():
    import httpx
    import openai

    response = httpx.Response(500, request=httpx.Request("POST", "http://127.0.0.1:9/v1/judge"))
    return openai.InternalServerError("Error code: 500 - the generator engine died", response=response, body=None)


@pytest.mark.parametrize("failure, said", [
    (_connection_refused, "APIConnectionError: Connection error."),
    (_server_error, "InternalServerError: Error code: 500 - the generator engine died"),
], ids=["died", "500"])
def test_a_judge_serve_failing_the_serve_stage_is_one_line_naming_its_log(tmp_path, capsys, monkeypatch, failure,
                                                                          said):
    """A judge-serve that dies (or answers 500) while the serve stage's request is in flight was an openai
    traceback; now the demo's one line naming judge-serve's log, exit 2. The request is stopped at the SDK's
    `post`, the network boundary, after checking what the stage sends: the first three Standard rows of the
    sample (s0156..s0158), each with its one criterion."""
    import openai

    out = tmp_path / "out"
    (out / "train" / "seq2seq" / "export").mkdir(parents=True)
    # No judge-serve is started: the stage is handed the URL a ready one would have.
    monkeypatch.setattr(demo._Servers, "url", lambda self, recipe: "http://127.0.0.1:9/v1")
    sent = []

    def post(self, path, *, body, cast_to, **options):
        sent.append((str(self.base_url), path, body))
        raise failure()

    monkeypatch.setattr(openai.OpenAI, "post", post)
    assert demo.main(["--out", str(out), "--stages", "serve"]) == 2
    [(base_url, path, body)] = sent
    assert (base_url, path) == ("http://127.0.0.1:9/v1/", "/judge")
    # the exact body: each row's texts as the bundled sample file holds them, and its one criterion
    rows = {row["id"]: row for row in map(json.loads, (Path(judge.__file__).parent / "data" / "sample.jsonl")
                                          .read_text(encoding="utf-8").splitlines())}
    assert body == {"items": [
        {"id": i, "instruction": rows[i]["instruction"], "answer": rows[i]["answer"],
         "reference_answer": rows[i]["reference_answer"],
         "criteria": [{"name": rows[i]["criteria_name"], "rubrics": rows[i]["rubrics"]}]}
        for i in ("s0156", "s0157", "s0158")]}
    err = capsys.readouterr().err
    assert err == (f"demo: judge-serve for the seq2seq judge failed the serve stage's request ({said}); its log: "
                   f"{out / 'serve' / 'seq2seq' / 'judge-serve.log'}\n")


@pytest.mark.parametrize("items, said", [
    ([("s0156", 0), ("s0157", 1)], "2 items for the 3 sent"),
    ([("s0156", 0), ("s0158", 1), ("s0157", 2)], "item 's0158' at index 1 in the place of 's0157' at index 1"),
], ids=["one-short", "out-of-order"])
def test_a_judge_serve_answer_for_other_items_fails_the_serve_stage_in_one_line(tmp_path, capsys, monkeypatch, items,
                                                                                said):
    """The stage printed each answered item beside the record at its place (zip): an answer short of an item left it
    out without a word, and one in another order printed one record's verdict beside another's id and experts. Now
    the answer is held to the request (one item per record, at its index with its id: docs/serving.md), or the
    stage fails in one line naming judge-serve's log."""
    import openai

    out = tmp_path / "out"
    (out / "train" / "seq2seq" / "export").mkdir(parents=True)
    monkeypatch.setattr(demo._Servers, "url", lambda self, recipe: "http://127.0.0.1:9/v1")
    sent = []

    def post(self, path, *, body, cast_to, **options):
        sent.append([item["id"] for item in body["items"]])
        return {"items": [{"index": index, "id": item_id, "results": []} for item_id, index in items]}

    monkeypatch.setattr(openai.OpenAI, "post", post)
    assert demo.main(["--out", str(out), "--stages", "serve"]) == 2
    assert sent == [["s0156", "s0157", "s0158"]]
    captured = capsys.readouterr()
    assert captured.err == (f"demo: judge-serve for the seq2seq judge answered the serve stage's request with "
                            f"{said}; its log: {out / 'serve' / 'seq2seq' / 'judge-serve.log'}\n")
    assert "s0157 «" not in captured.out  # nothing printed as a verdict


def test_a_console_script_that_is_not_installed_is_one_line(tmp_path, capsys, monkeypatch):
    """`_run` falls back to the bare name when the console script is not beside the interpreter; subprocess then
    raised FileNotFoundError as a traceback."""
    missing = tmp_path / "bin" / "judge-train"
    monkeypatch.setattr(demo, "_script", lambda name: str(missing))
    assert demo.main(["--out", str(tmp_path / "out"), "--stages", "train"]) == 2
    assert capsys.readouterr().err == ("demo: judge-train: cannot run it (No such file or directory); run the demo "
                                       "with .venv/bin/python after make setup, which installs it\n")
