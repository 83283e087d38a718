"""judge-train run (train/cli.py): its run folder is refused before training, named after the flag that set it."""

from __future__ import annotations

import re
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


def _reflowing(tokenizer, prompt, completion=None, thinking=False):
    """A chat template that does not keep the judge prompt verbatim: it reflows its user turn."""
    text = "<|im_start|>user\n" + " ".join(prompt.split()) + "<|im_end|>\n<|im_start|>assistant\n"
    return text if completion is None else text + completion + "<|im_end|>\n"


def test_a_chat_template_that_rewrites_the_prompt_is_one_line_and_leaves_no_run_folder(tmp_path, capsys, monkeypatch,
                                                                                       tiny_causal_dir,
                                                                                       recipe_tokenizer_loaded_once):
    """A template that does not keep the judge prompt verbatim (one that trims or reflows its user turn) is the
    base model's setting, refused as ``model_name_or_path`` in one line with exit 2 (a ValueError was a traceback,
    exit 1). The rows are rendered with the base's tokenizer before the run folder is claimed: no folder is left
    (it held its run.lock once the refusal came after the claim)."""
    import judge

    monkeypatch.setattr(judge, "apply_chat", _reflowing)
    out = tmp_path / "run"
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(out),
                      "--model-name-or-path", str(tiny_causal_dir)])  # the session's tiny model: none is built here
    err = capsys.readouterr().err
    assert code == 2
    # before it, at most a progress bar (carriage returns)
    *before, last = err.rstrip("\n").split("\n")
    assert last.startswith("judge-train run: error: model_name_or_path: the chat template of ")
    assert "does not keep the prompt verbatim (row " in last
    assert all(line.startswith("\r") for line in before) and "Traceback" not in err
    assert not out.exists()


def _base_folder(path: Path, *names: str, tokenizer_config: dict | None = None) -> Path:
    """A base model folder holding only ``names`` (their content is never read: the check looks for files), and a
    tokenizer_config.json when given."""
    import json

    path.mkdir(parents=True)
    for name in names:
        (path / name).write_text("{}", encoding="utf-8")
    if tokenizer_config is not None:
        (path / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), encoding="utf-8")
    return path


NO_TOKENIZER = ("no tokenizer (tokenizer.json, vocab.json, tokenizer.model, spiece.model, spm.model, "
                "sentencepiece.bpe.model, vocab.txt, *.tiktoken)")
NO_CHAT_TEMPLATE = "no chat template (chat_template.jinja, or chat_template in tokenizer_config.json)"


@pytest.mark.parametrize("subcommand, config", [("run", "seq2seq.yaml"), ("grpo", "grpo.yaml")])
@pytest.mark.parametrize("names, tokenizer_config, lacks", [
    (("config.json",), None, f"{NO_TOKENIZER}, {NO_CHAT_TEMPLATE}"),
    (("config.json", "tokenizer.json"), {"model_max_length": 8}, NO_CHAT_TEMPLATE),
    (("tokenizer.json", "chat_template.jinja"), None, "no config.json"),
], ids=["no-tokenizer", "no-chat-template", "no-config"])  # fmt: skip
def test_a_base_folder_missing_a_part_is_one_line_before_any_folder_is_made(tmp_path, capsys, subcommand, config,
                                                                            names, tokenizer_config, lacks):
    """transformers builds a one-token tokenizer from a folder with no tokenizer files, so a base without one (or
    without a chat template, or config.json) ended in a traceback (exit 1) once the first prompt was rendered, after
    the run folder existed. Now one line naming the folder and what it lacks, exit 2, and no run folder."""
    from train.cli import main

    base = _base_folder(tmp_path / "base", *names, tokenizer_config=tokenizer_config)
    out = tmp_path / "run"
    code = main([subcommand, "--config", str(REPO / "configs/train/tiny" / config), "--model-name-or-path", str(base),
                 "--output-dir", str(out)])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (
        f"judge-train {subcommand}: error: model_name_or_path: {base} holds {lacks}; a base model is a folder that "
        "save_pretrained wrote the model and its tokenizer into\n")
    assert not out.exists()


def test_a_run_folder_given_as_the_base_points_at_its_export(tmp_path, capsys):
    """A judge-train run folder in place of its export/ (GRPO after an integer SFT) is named as such."""
    run = tmp_path / "sft"
    _base_folder(run / "export", "config.json", "tokenizer.json", "chat_template.jinja")
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--model-name-or-path", str(run),
                      "--output-dir", str(tmp_path / "run")])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (f"judge-train run: error: model_name_or_path: {run} is a judge-train run "
                                       f"folder, not a model; its model is {run / 'export'}\n")


@pytest.mark.parametrize("names, tokenizer_config", [
    (("config.json", "vocab.json", "chat_template.jinja"), None),
    (("config.json", "tokenizer.json"), {"chat_template": "{{ messages }}"}),  # older saves keep it there
], ids=["template-file", "template-in-tokenizer-config"])  # fmt: skip
def test_a_complete_base_folder_has_no_gaps(tmp_path, names, tokenizer_config):
    from judge.checkpoints import model_folder_gaps

    assert model_folder_gaps(_base_folder(tmp_path / "base", *names, tokenizer_config=tokenizer_config)) == []


def test_a_classifier_base_needs_no_chat_template(tmp_path):
    """The task classifier's head reads the bare instruction, never a chat template: its base (an encoder, say) is
    not refused for lacking one; a judge recipe's is."""
    from judge.checkpoints import model_folder_gaps
    from train.cli import refuse_incomplete_base
    from train.config import ConfigError

    base = _base_folder(tmp_path / "encoder", "config.json", "vocab.txt")
    assert model_folder_gaps(base, chat_template=False) == []
    for i, name in enumerate(("spm.model", "sentencepiece.bpe.model", "cl100k_base.tiktoken")):  # DeBERTa, XLM-R, ...
        assert model_folder_gaps(_base_folder(tmp_path / f"other-{i}", "config.json", name), chat_template=False) == []
    refuse_incomplete_base(base, chat_template=False)
    with pytest.raises(ConfigError, match=f"holds {NO_CHAT_TEMPLATE.replace('(', '[(]').replace(')', '[)]')};"):
        refuse_incomplete_base(base)


@pytest.mark.parametrize("subcommand, config", [("run", "seq2seq.yaml"), ("grpo", "grpo.yaml")])
def test_data_of_an_unknown_file_type_is_one_line_naming_the_field(tmp_path, capsys, subcommand, config):
    """`--data recs.txt` was a traceback ending in the loader's ValueError (exit 1); judge-train build-data and
    judge-eval said the same in one line, exit 2. Now judge-train run and grpo do, naming the field."""
    from train.cli import main

    data = tmp_path / "recs.txt"
    data.write_text("{}\n", encoding="utf-8")
    out = tmp_path / "run"
    code = main([subcommand, "--config", str(REPO / "configs/train/tiny" / config), "--data", str(data),
                 "--output-dir", str(out)])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (f"judge-train {subcommand}: error: data: {data}: unknown file type '.txt' "
                                       "(expected .jsonl, .json or .parquet)\n")
    assert not out.exists()


def test_the_command_list_names_every_exit_code_its_commands_use(capsys):
    """`judge-train --help` summarises the exit codes for every command: a run a signal stopped at a checkpoint
    exits 75 (`judge-train run --help`), and a data stage whose endpoint could not be used exits 4 and one
    interrupted by Ctrl-C 130 (`judge-train data traces --help`); the summary named 0, 2 and 1 only, then left out
    130. Each code the commands' own lists give is taken from those lists, so a code added there is one here."""
    from train.cli import RUN_EXIT_CODES, main
    from train.synthetic.cli import EXIT_CODES as DATA_EXIT_CODES

    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    codes = text[text.index("exit codes:"):]
    assert "75 a run stopped at a checkpoint by a signal" in codes and "4 a data stage" in codes, codes
    listed = {int(code) for code in re.findall(r"(?:exit codes: |; )(\d+) ", codes)}
    for own in (RUN_EXIT_CODES, DATA_EXIT_CODES):
        used = {int(code) for code in re.findall(r"(?:[Ee]xit codes: |; )(\d+) ", own)}
        assert used and used <= listed, (sorted(used - listed), codes)


def _whole(folder: Path) -> dict[str, bytes] | None:
    """Every file under ``folder`` by its path in it (None when there is no folder)."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _finished(out: Path) -> None:
    """An earlier run's folder, copied without its lock: its export alone."""
    (out / "export").mkdir(parents=True)
    (out / "export" / "model.safetensors").write_bytes(b"weights")


@pytest.mark.parametrize("recipe, flags, earlier, says", [
    ("seq2seq", ["--resume", "true"], None, "error: --resume: no checkpoint-N folder in {out} to resume from"),
    ("regression", [], _finished, "error: {out} already holds a finished export/; --overwrite-output-dir to start "
                                  "over, or choose another --output-dir"),
    ("seq2seq", ["--trainer-args", '{"prediction_loss_only": false}'], None,
     "error: trainer_args.prediction_loss_only: the seq2seq recipe passes this to the trainer itself"),
    ("regression", ["--trainer-args", '{"remove_unused_columns": true}'], _finished,
     "error: trainer_args.remove_unused_columns: the regression recipe passes this to the trainer itself"),
], ids=["resume-nothing", "finished-export", "seq2seq-recipe-key", "regression-recipe-key"])  # fmt: skip
def test_a_launch_refused_on_its_config_or_folder_leaves_the_folder_as_it_found_it(tmp_path, capsys, recipe, flags,
                                                                                   earlier, says):
    """The folder's rules (--resume with nothing to resume, a finished export without --overwrite-output-dir) were
    applied only once rank 0 held the --output-dir: a missing folder was made, holding run.lock, and an earlier run's
    gained one. A trainer_args key the recipe passes itself was refused later still, with the tiny base model built
    and run.json written. Each is one line now, exit 2, before the folder is held: left as found, absence included."""
    out = tmp_path / "run"
    if earlier:
        earlier(out)
    before = _whole(out)
    code = train_run(["--config", str(REPO / "configs/train/tiny" / f"{recipe}.yaml"), "--output-dir", str(out),
                      *flags])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert f"judge-train run: {says.format(out=out)}" in err and err.count("\n") == 1, err
    assert _whole(out) == before


def test_wandb_without_a_key_leaves_no_run_folder(tmp_path, capsys, monkeypatch):
    """report_to wandb with no way to log in was refused once rank 0 held the --output-dir, which it had made. W&B is
    pointed at the folder (WANDB_DIR) before the refusal, and its setup reading that path makes nothing there."""
    import os

    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_DIR"):
        # set first, so that unset is what the test's end puts back: the run sets WANDB_DIR itself (check_launch),
        # and a delenv of a variable already unset records nothing to undo
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    import wandb

    wandb.teardown()  # W&B's process-wide setup keeps what an earlier test in this process set
    out = tmp_path / "run"
    try:
        code = train_run(["--config", str(REPO / "configs/train/tiny/regression.yaml"), "--output-dir", str(out),
                          "--report-to", "wandb"])  # fmt: skip
    finally:
        wandb.teardown()  # its setup read this test's HOME and WANDB_DIR
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("judge-train run: error: report_to wandb: no W&B API key for "), err
    assert os.environ.get("WANDB_DIR") == str(out) and not out.exists()


def test_a_held_folder_is_refused_as_held_before_its_rules(tmp_path, capsys):
    """The folder's rules are applied before the lock only when no one holds it: a fresh launch on a folder a
    running training holds (its checkpoint there) is told who holds it, not to pass --resume, which would stop at
    the same lock."""
    from judge.plumbing.run_folder import hold_run_folder

    out = tmp_path / "run"
    (out / "checkpoint-6").mkdir(parents=True)
    (out / "checkpoint-6" / "trainer_state.json").write_text("{}", encoding="utf-8")
    with hold_run_folder(out, "holder"):
        code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "is in use by holder (pid" in err and "already holds" not in err, err


def test_a_run_logs_its_data_once(tmp_path, capsys, caplog, monkeypatch, tiny_causal_dir, recipe_tokenizer_loaded_once):
    """The data is read twice before training (``check_training_data``, then the recipe's data step), but its load
    summary and its rows line are each logged once: the check reads quietly and leaves them to the data step. The
    run is refused by its data step (a chat template that reflows the prompt), after both lines are said."""
    import logging

    import judge

    monkeypatch.setattr(judge, "apply_chat", _reflowing)
    caplog.set_level(logging.INFO)
    code = train_run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(tmp_path / "run"),
                      "--model-name-or-path", str(tiny_causal_dir)])
    assert code == 2 and "the chat template of " in capsys.readouterr().err
    messages = [record.getMessage() for record in caplog.records]
    assert sum(message.startswith("training data: ") for message in messages) == 1, messages
    assert sum(" rows -> " in message and " records" in message for message in messages) == 1, messages


def test_the_quiet_data_check_makes_a_logger_quieter_never_louder():
    """check_training_data's early read sets the toolkit's loggers to errors only for its block: a logger a caller
    had set quieter still (CRITICAL) stays so, and each gets its own level back after the block."""
    import logging

    from train.cli import _read_quietly

    train_logger, judge_logger = logging.getLogger("train"), logging.getLogger("judge")
    before = train_logger.level, judge_logger.level
    try:
        train_logger.setLevel(logging.CRITICAL)
        judge_logger.setLevel(logging.NOTSET)
        with _read_quietly():
            assert train_logger.level == logging.CRITICAL and judge_logger.getEffectiveLevel() >= logging.ERROR
        assert (train_logger.level, judge_logger.level) == (logging.CRITICAL, logging.NOTSET)
    finally:
        train_logger.setLevel(before[0])
        judge_logger.setLevel(before[1])
