"""judge-train run --resume of a finished run: says so once on stdout and exits 0.

``train.output_folder.check_output_dir`` prints nothing (judge-train submit asks it too, and its --dry-run's
standard output is the script alone): the message rides on ``RunFinished`` and train/cli.py says it."""

from __future__ import annotations

import json
from pathlib import Path

from train.cli import run as train_run

REPO = Path(__file__).resolve().parents[2]


def test_a_resume_of_a_finished_run_says_so_and_exits_0(tmp_path, capsys, monkeypatch):
    """checkpoint-3 reached the 3 steps its trainer planned and export/run.json records the export of step 3: the
    run is finished (``finished_export``), nothing is trained or written, and the one stdout line names it."""
    monkeypatch.delenv("RANK", raising=False)
    out = tmp_path / "run"
    (out / "checkpoint-3").mkdir(parents=True)
    (out / "checkpoint-3" / "trainer_state.json").write_text(json.dumps({"global_step": 3, "max_steps": 3}))
    (out / "export").mkdir()
    (out / "export" / "run.json").write_text(json.dumps({"result": {"export_dir": str(out / "export"),
                                                                    "global_step": 3}}))
    before = sorted(str(p) for p in out.rglob("*") if p.name != "run.lock")
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(out),
                      "--resume"])
    assert code == 0
    assert capsys.readouterr().out == (
        f"judge-train: {out} is already finished: checkpoint-3 is the last step its trainer planned and export/ "
        "holds the judge exported from it; nothing to train or export (--overwrite-output-dir to train it again, or "
        "another --output-dir)\n")
    assert sorted(str(p) for p in out.rglob("*") if p.name != "run.lock") == before
