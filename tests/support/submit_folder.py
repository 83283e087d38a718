"""A submit folder for the shipped training configs: what their relative paths name, as `judge-train submit` checks
it there and the job reads it from there (slurm/train.sbatch runs judge-train in the submit folder).

``configs/`` (their ``deepspeed: configs/deepspeed/...``) links to the repository's; ``runs/data/split/train.jsonl``
and ``validation.jsonl`` hold the bundled sample's trained-on records (none held out as Zero-Shot, so
``zero_shot: refuse`` passes); ``runs/t-lite-integer/export`` stands for the SFT judge ``configs/train/t-lite/
grpo.yaml`` starts from (the files a base folder is checked for, ``judge.checkpoints.model_folder_gaps``: their
names, not their content, is what submit looks at). Their hub bases (``t-tech/T-lite-it-1.0``, ``Qwen/Qwen3-8B``) are in no cache: submit leaves
them to the job to download.

Example::

    monkeypatch.chdir(shipped_configs_submit_folder(tmp_path / "submit"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache, whatever the machine holds
"""

from __future__ import annotations

from pathlib import Path

from tests.support.sample_training_lines import kept_lines, write_lines

REPO = Path(__file__).resolve().parents[2]


def shipped_configs_submit_folder(folder: Path) -> Path:
    """Lay ``folder`` out as above (made if missing); returns it."""
    split = folder / "runs" / "data" / "split"
    split.mkdir(parents=True, exist_ok=True)
    lines = kept_lines()
    for name in ("train.jsonl", "validation.jsonl"):
        write_lines(split / name, lines)
    export = folder / "runs" / "t-lite-integer" / "export"
    export.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "chat_template.jinja"):
        (export / name).write_text("{}", encoding="utf-8")
    if not (folder / "configs").exists():
        (folder / "configs").symlink_to(REPO / "configs")
    return folder
