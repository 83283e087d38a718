"""A new user's first commands: bad input fails fast with a message naming the file and a documented exit code,
advice names flags the CLI takes, one convention for flags, and no noise or leftovers.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_first_use.py.
"""

from __future__ import annotations

from pathlib import Path


def test_a_trained_run_has_one_card_and_a_re_export_keeps_its_evaluation(seq2seq_run, tmp_path):
    """The session's trained run: trl's boilerplate README.md is gone from the run folder, the export's card is
    there; writing that card again with a kept evaluation section (what a --resume re-export does) puts the figures
    in place of "Not evaluated yet", with a note."""
    import shutil

    from judge.checkpoints import EXPORT_MANIFEST
    from train.model_card import write_card

    export = Path(seq2seq_run.export_dir)
    assert not (export.parent / "README.md").exists()
    assert "Not evaluated yet" in (export / "README.md").read_text(encoding="utf-8")

    copy = tmp_path / "run" / "export"
    copy.mkdir(parents=True)
    for name in (EXPORT_MANIFEST, "config.json"):
        shutil.copy(export / name, copy / name)
    shutil.copy(export.parent / "run.json", copy.parent / "run.json")
    section = "## Evaluation\n\n| Test | MAE |\n|---|---|\n| Standard | 0.500 |\n\n"
    card = write_card(copy, kept_evaluation=section).read_text(encoding="utf-8")
    assert section in card and "Not evaluated yet" not in card
    assert "_Kept from this folder's card before `judge-train run --resume` exported it again" in card
    assert card.index("## Evaluation") < card.index("## Provenance")
