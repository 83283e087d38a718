"""The contract stage of `make demo` runs on the bundled sample data and reports every verdict correctly."""

import json

from judge import demo


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


def test_unknown_stage_is_refused(capsys):
    """A misspelt stage name is an error, not a silent no-op."""
    import pytest

    with pytest.raises(SystemExit):
        demo.main(["--stages", "contract,trian"])
