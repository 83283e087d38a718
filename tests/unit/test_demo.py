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
