"""`make demo` (scripts/demo.py): its stage table, and the contract stage on the bundled sample data."""

import json

import pytest

from scripts import demo


def test_contract_stage(tmp_path, capsys):
    """Tiny models are built, all expert targets parse back, every malformed output is a counted failure."""
    assert demo.main(["--out", str(tmp_path), "--stages", "contract"]) == 0
    summary = json.loads((tmp_path / "contract_summary.json").read_text(encoding="utf-8"))
    assert summary["targets"] > 0 and summary["targets_parsed"] == summary["targets"]
    assert summary["malformed_failed"] == len(demo.MALFORMED_OUTPUTS)
    assert summary["zero_shot"] > 0 and summary["standard"] > 0
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
    assert "unknown stages ['trian']" in capsys.readouterr().err


@pytest.mark.parametrize("make_argv, said", [
    (lambda tmp: ["--stages", "serve"], "no trained seq2seq judge at"),
    (lambda tmp: ["--stages", "eval"], "run the train stage first"),
    (lambda tmp: ["--stages", "contract", "--data", str(tmp / "nothere.jsonl")], "nothere.jsonl: no such file"),
    (lambda tmp: ["--stages", "contract", "--data", str(_empty(tmp))], "empty.jsonl: no records"),
])
def test_a_mistake_is_one_line_and_exit_code_2(tmp_path, capsys, make_argv, said):
    """Serving an --out that holds no trained judge, or a --data that is missing or empty: exit code 2 and one
    line on stderr that names the problem, no traceback."""
    assert demo.main(["--out", str(tmp_path / "out"), *make_argv(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.startswith("demo: ") and err.count("\n") == 1 and "Traceback" not in err


def _empty(folder):
    path = folder / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    return path


def test_a_judge_serve_that_does_not_start_is_one_line(tmp_path, capsys, monkeypatch):
    """A judge-serve that exits while starting (here a real process that exits at once): exit code 2, one line
    naming the judge and its log."""
    (tmp_path / "train" / "seq2seq" / "export").mkdir(parents=True)
    monkeypatch.setattr(demo, "_script", lambda name: "/bin/false")
    assert demo.main(["--out", str(tmp_path), "--stages", "serve", "--serve-timeout-s", "30"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("demo: judge-serve for the seq2seq judge did not start (") and err.count("\n") == 1
    assert str(tmp_path / "serve" / "seq2seq" / "judge-serve.log") in err


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
