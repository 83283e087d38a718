"""What ``judge-train``'s main says for what no subcommand answers itself: a Ctrl+C in build-data, card,
criteria-classifier or submit (one line and 130, as ``judge-train run`` and ``judge-train data`` say theirs, not a
KeyboardInterrupt traceback), a bare ``judge-train`` (a usage error: the usage on stderr, as argparse says one,
stdout left empty), and a card it cannot write (one line and 2). The Ctrl+C is raised from inside each command's
work, where a real one lands while it reads or writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.first_contact import run_console_main

REPO = Path(__file__).resolve().parents[2]


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize(("argv", "work"), [
    (["build-data", "--data", "sample"], "train.build_data.build_rows"),
    (["card", "--export", "no-such-export"], "train.model_card.write_card"),
    (["criteria-classifier", "--out", "{tmp}/clf"], "train.criteria_classifier.training_rows"),
    (["submit", "--config", f"{REPO}/configs/train/tiny/seq2seq.yaml", "--nodes", "1", "--gpus-per-node", "1",
      "--dry-run"], "train.slurm_submit._render"),
])  # fmt: skip
def test_ctrl_c_in_a_subcommand_is_one_line_and_130(argv, work, tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setattr(work, _interrupt)
    try:
        outcome = run_console_main("judge-train", [arg.format(tmp=tmp_path) for arg in argv])
    except KeyboardInterrupt:
        pytest.fail(f"judge-train {argv[0]}: Ctrl+C came out as KeyboardInterrupt (a traceback on the console)")
    assert outcome.code == 130, outcome
    assert outcome.last_error_line == f"judge-train {argv[0]}: interrupted (Ctrl+C)"  # after what the command logged
    assert "Traceback" not in outcome.err and outcome.out == ""


def test_ctrl_c_while_a_subcommand_loads_is_one_line_and_130(monkeypatch):
    """A Ctrl+C while the subcommand's modules import (seconds where they load torch) is answered alike."""
    import importlib

    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setattr(importlib, "import_module", _interrupt)
    try:
        outcome = run_console_main("judge-train", ["build-data"])
    except KeyboardInterrupt:
        pytest.fail("judge-train build-data: Ctrl+C came out as KeyboardInterrupt (a traceback on the console)")
    assert (outcome.code, outcome.err) == (130, "judge-train build-data: interrupted (Ctrl+C)\n")


def test_a_bare_judge_train_says_its_usage_on_stderr():
    """`judge-train` alone exits 2 with the usage on stderr (stdout empty, as argparse leaves it for a usage error);
    `judge-train --help` asked for the usage: stdout, exit 0."""
    bare = run_console_main("judge-train", [])
    assert bare.code == 2 and bare.out == ""
    assert bare.err.startswith("usage: judge-train [--log-level LEVEL]")
    asked = run_console_main("judge-train", ["--help"])
    assert asked.code == 0 and asked.err == ""
    assert asked.out.startswith("usage: judge-train [--log-level LEVEL]")


def test_a_card_that_cannot_be_written_is_one_line_and_2(tmp_path, monkeypatch):
    """`judge-train card` said a missing export or run in one line, but a card it could not write (a full disk, a
    read-only export folder) ended in an OSError traceback."""
    card = tmp_path / "export" / "README.md"

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device", str(card))

    monkeypatch.setattr("train.model_card.write_card", full_disk)
    outcome = run_console_main("judge-train", ["card", "--export", str(tmp_path / "export")])
    assert outcome.code == 2 and outcome.out == ""
    assert outcome.err == f"judge-train card: error: {card}: No space left on device; the card is not written\n"
