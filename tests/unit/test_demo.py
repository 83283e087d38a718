"""`make demo` (scripts/demo.py): its stage table, and the contract stage on the bundled sample data."""

import argparse
import json
import os
from pathlib import Path

import pytest

from scripts import demo


@pytest.fixture(autouse=True)
def offline_switches_put_back(monkeypatch):
    """The demo sets the Hugging Face offline switches in its own environment (``os.environ.setdefault``), as it must
    for itself and the commands it starts; called in this process, that would outlive the test, and libraries read
    them at their import. monkeypatch puts each back as it was, absent included."""
    for name in demo.OFFLINE_ENV:
        absent = name not in os.environ
        monkeypatch.setenv(name, os.environ.get(name, ""))  # so that monkeypatch records what was there
        if absent:
            monkeypatch.delenv(name)


def _shared_tokenizer(monkeypatch, qwen_tokenizer) -> list:
    """The stage's ``build_qwen_tokenizer()`` answered by the session's ``qwen_tokenizer``, that function's own
    result with the same defaults, converted once per session rather than again per test (the stage reads and saves
    it, never changes it). Returns the calls, so a test sees the stage still asked for it."""
    import train.tiny_models

    calls = []
    monkeypatch.setattr(train.tiny_models, "build_qwen_tokenizer",
                        lambda *args, **kwargs: calls.append((args, kwargs)) or qwen_tokenizer)
    return calls


def test_contract_stage(tmp_path, capsys, monkeypatch, qwen_tokenizer):
    """Tiny models are built, all expert targets parse back, every malformed output is a counted failure. The
    bundled sample's counts: 341 records, 155 of them Zero-Shot and 186 Standard, whose 1,183 expert verdicts all
    carry a rationale (tests/unit/test_train_data.py counts the same 1,183)."""
    built = _shared_tokenizer(monkeypatch, qwen_tokenizer)
    assert demo.main(["--out", str(tmp_path), "--stages", "contract"]) == 0
    assert built == [((), {})]  # the stage's own tokenizer, Qwen2.5's defaults
    summary = json.loads((tmp_path / "contract_summary.json").read_text(encoding="utf-8"))
    assert (summary["targets"], summary["targets_parsed"]) == (1183, 1183)
    assert summary["malformed_failed"] == len(demo.MALFORMED_OUTPUTS)
    assert (summary["records"], summary["zero_shot"], summary["standard"]) == (341, 155, 186)
    for path in summary["models"].values():
        assert (tmp_path / path).joinpath("config.json").is_file()
    out = capsys.readouterr().out
    assert "missing_end" in out and "unclosed_think" in out
    # The plan names only the chosen stage, then its banner and its result line follow.
    assert "Stages:\n  1. contract" in out and "2. train" not in out
    assert "======== contract ========" in out and "[contract] done" in out


def test_stage_table_is_the_pipeline_in_order():
    """The demo runs the stages of its table, in order: contract, train, serve, eval, mera, each with a function."""
    assert [stage.name for stage in demo.STAGES] == ["contract", "train", "serve", "eval", "mera"]
    assert [stage.run for stage in demo.STAGES] == [demo.stage_contract, demo.stage_train, demo.stage_serve,
                                                    demo.stage_eval, demo.stage_mera]
    assert all(stage.summary for stage in demo.STAGES)


def test_unknown_stage_is_refused(capsys):
    """A misspelt stage name is an error, not a silent no-op."""
    with pytest.raises(SystemExit):
        demo.main(["--stages", "contract,trian"])
    assert "--stages: unknown stage trian;" in capsys.readouterr().err


@pytest.mark.parametrize("make_argv, said", [
    (lambda tmp: ["--stages", "serve"], "no trained seq2seq judge at"),
    (lambda tmp: ["--stages", "eval"], "run the train stage first"),
    (lambda tmp: ["--stages", "contract", "--data", str(tmp / "nothere.jsonl")], "nothere.jsonl: no such file"),
    (lambda tmp: ["--stages", "contract", "--data", str(_empty(tmp))], "empty.jsonl: no records"),
    # judge-eval's words: an empty --data is no path (it read the current folder as a folder of shards)
    (lambda tmp: ["--stages", "contract", "--data", ""],
     "demo: --data: empty; give a file, folder or dataset name (or `sample`)\n"),
    (lambda tmp: ["--stages", "contract,train", "--data", str(tmp / "nothere.jsonl")], "nothere.jsonl: no such file"),
    (lambda tmp: ["--stages", "train", "--data", str(_empty(tmp))],
     "--data is read by the contract stage only, which --stages train leaves out; add contract to --stages"),
])
def test_a_mistake_is_one_line_and_exit_code_2(tmp_path, capsys, make_argv, said):
    """Serving an --out that holds no trained judge, a --data that is missing or empty, or a --data no chosen stage
    reads (it was ignored and the stages ran): exit code 2 and one line on stderr that names the problem, no
    traceback, before any stage runs."""
    assert demo.main(["--out", str(tmp_path / "out"), *make_argv(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert said in err and err.startswith("demo: ") and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""  # no stage table, no stage started


def _empty(folder):
    path = folder / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    return path


VLLM_MISSING = "judge-serve: error: vLLM is not installed, and judge-serve starts its engines with it. Fix: install it."


def _exits_2_saying_vllm_is_missing(folder: Path) -> str:
    """A stand-in for judge-serve on a machine without vLLM: it says why on stderr (which goes to its log) and
    exits 2, as judge-serve does."""
    script = folder / "judge-serve-stub"
    script.write_text(f"#!/bin/sh\necho 'starting'\necho '{VLLM_MISSING}' >&2\necho >&2\nexit 2\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("stub, said", [
    (lambda tmp: "/bin/false", "(judge-serve exited with code 1 while starting); its log: "),
    (_exits_2_saying_vllm_is_missing, f"(judge-serve exited with code 2 while starting: {VLLM_MISSING}); its log: "),
], ids=["silent", "says-why"])
def test_a_judge_serve_that_does_not_start_is_one_line(tmp_path, capsys, monkeypatch, stub, said):
    """A judge-serve that exits while starting (here a real process that exits at once): exit code 2, one line
    naming the judge, how it ended, the reason its log ends with (the log's last non-empty line), and the log."""
    (tmp_path / "train" / "seq2seq" / "export").mkdir(parents=True)
    script = stub(tmp_path)
    monkeypatch.setattr(demo, "_script", lambda name: script)
    assert demo.main(["--out", str(tmp_path), "--stages", "serve", "--serve-timeout-s", "30"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("demo: judge-serve for the seq2seq judge did not start (") and err.count("\n") == 1
    assert said in err
    assert str(tmp_path / "serve" / "seq2seq" / "judge-serve.log") in err


def test_a_judge_serve_that_gave_up_is_said_after_the_stage_that_started_it(tmp_path, capsys, monkeypatch):
    """The train stage launches each judge-serve ahead of the stages that need it; one that has already exited is
    reported when the train stage ends, with its reason, and no later stage runs."""
    script = _exits_2_saying_vllm_is_missing(tmp_path)
    monkeypatch.setattr(demo, "_script", lambda name: script)
    held = []
    enter = demo._Servers.__enter__
    monkeypatch.setattr(demo._Servers, "__enter__", lambda self: held.append(self) or enter(self))

    def fake_run(cmd, env=None):  # judge-train: the export a real one writes
        Path(cmd[cmd.index("--output-dir") + 1], "export").mkdir(parents=True)
        for server, _port, _started in held[0].starting.values():
            server.proc.wait(timeout=30)  # the launched judge-serve has given up before the stage ends
        return 0

    monkeypatch.setattr(demo, "_run", fake_run)
    assert demo.main(["--out", str(tmp_path / "out"), "--stages", "train,serve"]) == 2
    captured = capsys.readouterr()
    assert "[train] done" in captured.out and "======== serve ========" not in captured.out
    err = captured.err
    assert err.startswith("demo: judge-serve for the seq2seq judge did not start (") and err.count("\n") == 1
    assert VLLM_MISSING in err


class _RecordingServers:
    """Stands in for ``demo._Servers`` where a test looks only at the commands a stage builds."""

    def start(self, recipe):
        pass

    def url(self, recipe):
        return f"http://127.0.0.1:1/{recipe}/v1"

    def stop(self, recipe):
        pass


def _record_commands(monkeypatch) -> list[list[str]]:
    commands = []
    monkeypatch.setattr(demo, "_run", lambda cmd, env=None: commands.append(cmd) or 0)
    return commands


def test_eval_judges_again_rather_than_resuming(tmp_path, monkeypatch):
    """A second demo retrains both judges, so its eval stage must judge every item again with them: a resume would
    find the first run's verdicts, all done, and score those."""
    commands = _record_commands(monkeypatch)
    assert demo.stage_eval(tmp_path, argparse.Namespace(), _RecordingServers()) == 0
    runs = [cmd for cmd in commands if cmd[:2] == ["judge-eval", "run"]]
    assert len(runs) == 2 and all("--overwrite" in cmd for cmd in runs)


def test_configs_are_found_from_another_working_directory(tmp_path, monkeypatch):
    """Run from outside the repository, the demo still names the repository's train and serve configs (by absolute
    path), while --out stays where it was asked."""
    repo = Path(demo.__file__).resolve().parents[1]
    monkeypatch.chdir(tmp_path)
    commands = _record_commands(monkeypatch)
    assert demo.stage_train(tmp_path / "out", argparse.Namespace(stages=["train"]), _RecordingServers()) == 0
    launched = []
    monkeypatch.setattr(demo, "start_process", lambda cmd, **kwargs: launched.append(cmd))
    (tmp_path / "out" / "train" / "seq2seq" / "export").mkdir(parents=True)
    demo._Servers(tmp_path / "out", 1.0)._launch("seq2seq")
    configs = [Path(cmd[cmd.index("--config") + 1]) for cmd in [*commands, *launched]]
    assert len(configs) == 3
    for config in configs:
        assert config.is_absolute() and config.is_file() and config.is_relative_to(repo / "configs")
    assert all(Path(cmd[cmd.index("--output-dir") + 1]).is_relative_to(tmp_path / "out") for cmd in commands)


OFFLINE = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def test_the_demo_and_its_subprocesses_run_offline(tmp_path, monkeypatch, capfd):
    """The demo sets the Hugging Face offline switches for itself and every command it runs (a --data typo must not
    be looked up on the hub), and keeps a value the user set."""
    for name in OFFLINE:
        monkeypatch.setenv(name, "")  # so that monkeypatch puts back what was there, even nothing
        monkeypatch.delenv(name)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the user's explicit choice
    probe = "import json, os; print(json.dumps({n: os.environ.get(n) for n in %r}))" % (OFFLINE,)

    def stage_probe(out, args, servers):
        return demo._run(["python", "-c", probe])

    monkeypatch.setattr(demo, "STAGES", (demo.Stage("probe", "prints the offline variables", stage_probe),))
    assert demo.main(["--out", str(tmp_path), "--stages", "probe"]) == 0
    seen = json.loads(next(line for line in capfd.readouterr().out.splitlines() if line.startswith("{")))
    assert seen == {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"


def test_docstring_names_every_package_it_imports():
    """The module's docstring says what it imports from the packages it exercises, and claims nothing it breaks."""
    import ast
    import re
    from pathlib import Path

    tree = ast.parse(Path(demo.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in
                ("train", "serve", "eval")}
    for module in imported:
        assert f"``{module}``" in demo.__doc__
        assert not re.search(rf"nothing[^.]*``{module.split('.')[0]}``", demo.__doc__)


def test_contract_stage_on_data_without_rationales(tmp_path, capsys, monkeypatch, qwen_tokenizer):
    """`--data` rows with expert scores but no `expert_feedback` make no training target: the stage says so
    (`targets[0]` was an IndexError traceback) and its summary counts 0 of 0 targets."""
    import train.tiny_models

    _shared_tokenizer(monkeypatch, qwen_tokenizer)

    rows = [json.loads(line) for line in demo.sample_data_path().read_text(encoding="utf-8").splitlines()[:2]]
    data = tmp_path / "scores-only.jsonl"
    data.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "expert_feedback"}, ensure_ascii=False)
                            + "\n" for row in rows), encoding="utf-8")
    # The models are not what this test is about: a path stands in for each (the tokenizer is the real one, shared).
    monkeypatch.setattr(train.tiny_models, "build_tiny_qwen2", lambda out_dir, **kwargs: Path(out_dir))
    assert demo.main(["--out", str(tmp_path / "out"), "--stages", "contract", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert f"[verdict] no expert rationale (expert_feedback) in {data}: no training target to show" in out
    assert "[verdict] 0/0 expert rationales" in out
    summary = json.loads((tmp_path / "out" / "contract_summary.json").read_text(encoding="utf-8"))
    assert (summary["records"], summary["targets"], summary["targets_parsed"]) == (2, 0, 0)


def test_the_demo_compare_draws_enough_resamples_for_its_largest_holm_family(tmp_path, monkeypatch):
    """`make demo` must not warn about its own --n-boot ("with --n-boot 200 a cell whose resamples all agree may
    still read n.s. there": a table by model of 5 callable cells needs 201). The demo's compare command, read by
    judge-eval's own parser, draws at least what the warning's check asks of the largest family the sample can
    make: per test and grouping, the groups holding at least MIN_PAIRED items (a cell with fewer paired units is
    never callable)."""
    from collections import Counter

    from eval.cli import build_parser
    from eval.scoring.compare import MIN_PAIRED
    from eval.scoring.resample_rules import resamples_for_family
    from judge import load_records, sample_data_path, split_of

    commands = _record_commands(monkeypatch)
    assert demo.stage_eval(tmp_path, argparse.Namespace(), _RecordingServers()) == 0
    [compare] = [cmd for cmd in commands if cmd[:2] == ["judge-eval", "compare"]]
    args = build_parser().parse_args(compare[1:])

    records = load_records(sample_data_path())
    largest = max(
        sum(n >= MIN_PAIRED for n in Counter(getattr(r, field) for r in records
                                             if split is None or split_of(r) == split).values())
        for field in ("model_id", "task_type", "criteria_name") for split in (None, *{split_of(r) for r in records}))
    assert largest >= 2  # the sample holds a family Holm adjusts: the check below is not one of a single cell
    assert args.n_boot >= resamples_for_family(largest, args.alpha)


class _ReadyServer:
    """A judge-serve that is ready as soon as it is asked."""

    def wait_ready(self, url, timeout_s, interval_s):
        pass


@pytest.mark.parametrize("launched_in, asked, said", [
    # launched ahead, by the train stage: the count is from that launch, and the part this stage waited is said
    ("train", 1109.0, "[serve] judge-serve (seq2seq judge) ready on port 4242, 149 s after its launch during the "
                      "train stage (the serve stage waited 40 s of them)\n"),
    ("train", 1148.8, "[serve] judge-serve (seq2seq judge) ready on port 4242, 149 s after its launch during the "
                      "train stage (the serve stage waited none of them)\n"),
    ("serve", 1000.0, "[serve] judge-serve (seq2seq judge) ready on port 4242 after 149 s\n"),
], ids=["launched-in-an-earlier-stage", "ready-when-asked", "launched-in-this-stage"])
def test_a_judge_serve_launched_ahead_says_its_wait_counts_from_that_launch(tmp_path, capsys, monkeypatch,
                                                                             launched_in, asked, said):
    """`[serve] ... ready ... after 149 s` above `[serve] done in 77 s` read as a contradiction: the 149 s counted
    from the launch during the train stage."""
    times = iter([1000.0, asked, 1149.0])  # launched, the serve stage asks for its URL, ready
    servers = demo._Servers(tmp_path, timeout_s=10)
    servers.clock = lambda: next(times)
    monkeypatch.setattr(servers, "_launch", lambda recipe: (_ReadyServer(), 4242, servers.clock()))
    servers.stage = launched_in
    servers.start("seq2seq")
    servers.stage = "serve"
    assert servers.url("seq2seq") == "http://127.0.0.1:4242/v1"
    assert capsys.readouterr().out == said
