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


def test_a_chat_template_that_rewrites_the_prompt_is_one_line_and_frees_the_folder(tmp_path, capsys, monkeypatch):
    """A template that does not keep the judge prompt verbatim (one that trims or reflows its user turn) is the
    base model's setting, refused as ``model_name_or_path`` in one line with exit 2 (a ValueError was a traceback,
    exit 1), and the run folder's lock is released: the next run on it is not refused as busy."""
    import fcntl
    import os

    import judge
    from judge.plumbing.run_folder import LOCK_FILE

    def reflowing(tokenizer, prompt, completion=None, thinking=False):
        text = "<|im_start|>user\n" + " ".join(prompt.split()) + "<|im_end|>\n<|im_start|>assistant\n"
        return text if completion is None else text + completion + "<|im_end|>\n"

    monkeypatch.setattr(judge, "apply_chat", reflowing)
    out = tmp_path / "run"
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    # before it, only the tiny base model's save progress bar (carriage returns)
    *before, last = err.rstrip("\n").split("\n")
    assert last.startswith("judge-train run: error: model_name_or_path: the chat template of ")
    assert "does not keep the prompt verbatim (row " in last
    assert all(line.startswith("\r") for line in before) and "Traceback" not in err
    fd = os.open(out / LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError while a holder is left
    finally:
        os.close(fd)
