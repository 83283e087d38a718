"""``judge-train run`` and ``grpo`` refuse a base whose chat template cannot render the judge prompt, and data whose
every row is over ``max_length``, before they claim the run folder (``train.recipe_data``): one line naming the
field, exit 2, and the output folder as it was found (absent, or an empty folder with no lock and no run.json).

Both were refused after the claim, by the recipe's data step with the base's tokenizer: the folder was left holding
its run.lock (and a tiny base's copy). The data step now runs before the claim with the tokenizer alone, and its
rows, tokenized once, are handed to the recipe.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from train.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "configs/train/tiny"
RECIPES = [("run", "seq2seq.yaml"), ("run", "regression.yaml"), ("grpo", "grpo.yaml")]
RECIPE_IDS = ["seq2seq", "regression", "grpo"]


def _found_as(out: Path, state: str) -> None:
    if state == "empty-folder":
        out.mkdir()


def _left_as_found(out: Path, state: str) -> None:
    if state == "absent":
        assert not out.exists()
    else:
        assert out.is_dir() and list(out.iterdir()) == []  # no run.lock, no run.json, no base-model/


def _one_line(err: str, prog: str) -> str:
    """The refusal: the last line of stderr, with at most progress bars (carriage returns) before it."""
    *before, last = err.rstrip("\n").split("\n")
    assert "Traceback" not in err and all(line.startswith("\r") for line in before), err
    assert last.startswith(f"{prog}: error: "), last
    return last


#: These tests load the tiny base's tokenizer from two folders fourteen times, and every one stops before a trainer
#: exists: one load per folder serves them all.
pytestmark = pytest.mark.usefixtures("recipe_tokenizer_loaded_once")


@pytest.fixture(scope="module")
def raising_template_base(tmp_path_factory, tiny_causal_dir) -> Path:
    """A base folder: ``tiny_causal_dir``'s config.json and tokenizer, with a chat template that raises for a lone
    user turn (no weights: nothing before the claim loads them); made once for the module, the tests only read it."""
    folder = tmp_path_factory.mktemp("base")
    for path in tiny_causal_dir.iterdir():
        if path.is_file() and not path.name.endswith(".safetensors"):
            shutil.copy(path, folder / path.name)
    (folder / "chat_template.jinja").write_text("{{ raise_exception('a system turn must come first') }}",
                                                encoding="utf-8")
    return folder


@pytest.mark.parametrize("state", ["absent", "empty-folder"])
@pytest.mark.parametrize("subcommand, config", RECIPES, ids=RECIPE_IDS)
def test_rows_all_over_max_length_are_refused_before_the_run_folder(tmp_path, capsys, tiny_causal_dir, subcommand,
                                                                    config, state):
    """max_length 40 holds none of the sample's prompts (200-680 tokens): no training row (GRPO: no prompt with
    room for its 32-token completions) is left. Said in one line naming ``data`` and what dropped them."""
    out = tmp_path / "run"
    _found_as(out, state)
    code = main([subcommand, "--config", str(TINY / config), "--model-name-or-path", str(tiny_causal_dir),
                 "--max-length", "40", "--output-dir", str(out)])  # fmt: skip
    last = _one_line(capsys.readouterr().err, f"judge-train {subcommand}")
    assert code == 2
    if subcommand == "grpo":
        assert last.startswith("judge-train grpo: error: data: 0 training prompts left in sample (")
        assert "too_long=" in last
    else:
        assert last.startswith("judge-train run: error: data: no training rows left in sample (max_length 40, ")
        assert "too_long=" in last
    _left_as_found(out, state)


@pytest.mark.parametrize("state", ["absent", "empty-folder"])
@pytest.mark.parametrize("subcommand, config", RECIPES, ids=RECIPE_IDS)
def test_a_chat_template_that_cannot_render_the_prompt_is_refused_before_the_run_folder(tmp_path, capsys,
                                                                                        raising_template_base,
                                                                                        subcommand, config, state):
    """A template that raises for a lone user turn (one that demands a system turn) was a jinja traceback (exit 1)
    after the claim; now one line naming ``model_name_or_path`` and the template's own words."""
    base = raising_template_base
    out = tmp_path / "run"
    _found_as(out, state)
    code = main([subcommand, "--config", str(TINY / config), "--model-name-or-path", str(base),
                 "--output-dir", str(out)])  # fmt: skip
    last = _one_line(capsys.readouterr().err, f"judge-train {subcommand}")
    assert code == 2
    assert last == (f"judge-train {subcommand}: error: model_name_or_path: the chat template of {base} cannot render "
                    "the judge prompt, one user turn: a system turn must come first")
    _left_as_found(out, state)


def test_a_tokenizer_without_a_chat_template_is_named(qwen_tokenizer, monkeypatch):
    """A hub id's tokenizer is first seen with the tokenizer loaded (a base folder without a template is refused by
    its files, train.cli.refuse_incomplete_base): transformers' ValueError becomes one line naming the field."""
    from train.config import ConfigError
    from train.recipe_data import refuse_unrenderable_chat_template

    monkeypatch.setattr(qwen_tokenizer, "chat_template", None)
    with pytest.raises(ConfigError, match=r"^model_name_or_path: the tokenizer of org/base has no chat template;"):
        refuse_unrenderable_chat_template(qwen_tokenizer, "org/base")


def test_a_tokenizer_with_only_named_chat_templates_is_named(qwen_tokenizer, monkeypatch):
    """Named templates and no default one (``additional_chat_templates/`` without ``default.jinja``, or a
    tokenizer_config.json list without a "default"): transformers refuses to pick one with a ValueError, which was a
    traceback of judge-train run; now one line naming the field and transformers' words."""
    from train.config import ConfigError
    from train.recipe_data import refuse_unrenderable_chat_template

    monkeypatch.setattr(qwen_tokenizer, "chat_template", {"tool_use": qwen_tokenizer.chat_template})
    with pytest.raises(ConfigError, match=r"^model_name_or_path: the chat template of org/base cannot render the "
                                          r"judge prompt, one user turn: This model has multiple chat templates with "
                                          r"no default specified!.*\['tool_use'\]"):
        refuse_unrenderable_chat_template(qwen_tokenizer, "org/base")


def test_the_rows_are_tokenized_once_and_handed_to_the_recipe(tmp_path, monkeypatch, tiny_causal_dir):
    """The data step before the claim is the recipe's: ``main`` gets its rows and ids and does not tokenize them again
    (``sft_examples`` runs once for the training rows and once for the validation rows)."""
    from train import seq2seq

    calls = []
    examples = seq2seq.sft_examples

    def counted(rows, tokenizer, **kwargs):
        calls.append(len(rows))
        return examples(rows, tokenizer, **kwargs)

    class Stop(Exception):
        pass

    handed = []

    def stop_at_main(config, *, callbacks=(), data=None):
        handed.append(data)
        raise Stop

    monkeypatch.setattr(seq2seq, "sft_examples", counted)
    monkeypatch.setattr(seq2seq, "main", stop_at_main)
    with pytest.raises(Stop):
        main(["run", "--config", str(TINY / "seq2seq.yaml"), "--model-name-or-path", str(tiny_causal_dir),
              "--output-dir", str(tmp_path / "run")])  # fmt: skip
    (data,) = handed
    assert len(calls) == 2 and calls[0] == len(data.train_rows) > 0
    assert [len(e["input_ids"]) for e in data.train_examples] == [len(e["input_ids"]) for e in
                                                                  examples(data.train_rows, data.tokenizer)]


def test_the_grpo_data_summary_is_logged_once(tmp_path, capsys, caplog, tiny_causal_dir):
    """``judge-train grpo`` logged "GRPO prompts: ..." twice in one run: once from its check of the data before the
    run folder, once from the recipe's data step. Now once, by the data step."""
    with caplog.at_level(logging.INFO, logger="train.grpo"):
        code = main(["grpo", "--config", str(TINY / "grpo.yaml"), "--model-name-or-path", str(tiny_causal_dir),
                     "--max-length", "40", "--output-dir", str(tmp_path / "run")])  # refused after the summary
    assert code == 2 and "0 training prompts left" in capsys.readouterr().err
    summaries = [r.getMessage() for r in caplog.records if r.getMessage().startswith("GRPO prompts: ")]
    assert len(summaries) == 1, summaries
