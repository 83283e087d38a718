"""judge-train run (train/cli.py): its run folder is refused before training, named after the flag that set it."""

from __future__ import annotations

from pathlib import Path

import pytest

from train.cli import run as train_run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("under", ["", "sub"], ids=["a-file", "under-a-file"])
def test_an_output_dir_that_is_a_file_is_named_after_its_flag(tmp_path, capsys, under):
    """"error: /x is a file, not a folder" named no flag; now `--output-dir: ...` as judge-eval says `--out: ...`,
    exit 2 (a configuration error, `judge-train run --help`)."""
    blocker = tmp_path / "afile"
    blocker.write_text("", encoding="utf-8")
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(blocker / under)])
    assert code == 2
    assert capsys.readouterr().err == f"judge-train run: error: --output-dir: {blocker} is a file, not a folder\n"
    assert blocker.read_text(encoding="utf-8") == ""


def test_an_output_dir_that_cannot_be_made_is_named_after_its_flag(tmp_path, capsys):
    """A place no folder can be made in (sysfs refuses mkdir even to root): the flag, the folder and the reason."""
    where = "/sys/pollux-judge-train-run"
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", where])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judge-train run: error: --output-dir {where}: the run folder cannot be made or written "
                          "there (") and err.count("\n") == 1, err
