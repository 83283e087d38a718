"""The data step a judge recipe takes before ``judge-train run`` claims its run folder, and what it hands on.

A recipe's rows are rendered through the base model's chat template and tokenized to be counted against
``max_length``: a template that cannot render the judge prompt, or rows that are all too long, are the user's to fix,
and refused after the claim they left a run folder (its lock, its copy of the tiny base) behind. The tokenizer alone
decides both, so ``train.cli`` loads it (never the weights), takes the recipe's data step (its ``training_data``)
before the claim, and hands the result, tokenized once, to the recipe's ``main``.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TrainingData", "data_before_the_claim", "recorded_datasets", "refuse_unrenderable_chat_template",
           "tokenizer_before_the_claim"]

logger = logging.getLogger(__name__)


def refuse_unrenderable_chat_template(tokenizer, base: str, *, thinking: bool = False) -> None:
    """Refuse a tokenizer whose chat template cannot render a judge prompt, as a generation prompt and with an
    answer (``judge.apply_chat``, the one place prompts are rendered): none at all, named templates without a default
    one (transformers' ValueError: it will not pick one), or one that raises for a lone user turn (a template that
    demands a system turn or alternating turns). A base folder
    without a template is refused earlier (``train.cli.refuse_incomplete_base``); a hub id's tokenizer is seen here
    first. Rendered with a short text: what fails is the turns' shape, not the prompt's words.

    Raises:
        ConfigError: naming ``model_name_or_path`` and the template's own complaint.
    """
    from jinja2 import TemplateError

    import judge
    from train.config import ConfigError

    if getattr(tokenizer, "chat_template", None) is None:
        raise ConfigError(f"model_name_or_path: the tokenizer of {base} has no chat template; the judge prompt is "
                          "rendered through it. Use a chat model's base (Qwen2.5, T-lite, Qwen3)")
    try:
        judge.apply_chat(tokenizer, "?", thinking=thinking)
        judge.apply_chat(tokenizer, "?", "!", thinking=thinking)
    except (TemplateError, ValueError) as err:  # ValueError: transformers' own refusal (named templates, no default)
        raise ConfigError(f"model_name_or_path: the chat template of {base} cannot render the judge prompt, one "
                          f"user turn: {err}") from None


def tokenizer_before_the_claim(config: Any):
    """The base model's tokenizer (``train.recipe_steps.load_tokenizer``), no model built or loaded, for the data step
    ``judge-train run`` takes before it claims the run folder; None for a tiny base not built yet: it is built into
    the run folder (``train.recipe_steps.resolve_base_model``), and its tokenizer and chat template are the toolkit's
    own."""
    from train.config import TINY_MODEL, TINY_QWEN3
    from train.recipe_steps import load_tokenizer

    if config.model_name_or_path in (TINY_MODEL, TINY_QWEN3):
        built = Path(config.output_dir) / "base-model"
        return load_tokenizer(str(built)) if (built / "config.json").is_file() else None
    return load_tokenizer(config.model_name_or_path)


@dataclass
class TrainingData:
    """A seq2seq or regression recipe's data step: the rows and the ids they train as, tokenized once.

    ``judge-train run`` takes it before it claims the run folder (``train.cli``), so that a chat template that cannot
    render the rows or rows all over ``max_length`` are refused with nothing written, and hands it to the recipe.

    Attributes:
        tokenizer: the base model's tokenizer the rows were tokenized with.
        train_rows, eval_rows: the rows kept (within ``max_length``).
        report: the data report (``train.build_data.BuildReport``).
        train_examples, eval_examples: the rows' tokenized examples, in the same order.
    """

    tokenizer: Any = field(repr=False)
    train_rows: list[dict[str, Any]]
    eval_rows: list[dict[str, Any]]
    report: Any
    train_examples: list[dict[str, Any]] = field(repr=False)
    eval_examples: list[dict[str, Any]] = field(repr=False)


def data_before_the_claim(config: Any, module: str) -> Any:
    """The recipe's data step (``module``'s ``training_data``) with the base's tokenizer alone, for ``judge-train
    run`` to take before it claims the run folder; None where it is left to the recipe (``main`` takes it after
    ``prepare``): a recipe without such a step (the task classifier), a tiny base not built yet
    (``tokenizer_before_the_claim``), or, on rank 0, a folder another run holds, which the claim refuses as such at
    once rather than after the data is tokenized.

    Raises:
        ConfigError: the data step's refusals: a chat template that cannot render or train the rows, naming
            ``model_name_or_path``; no training row left within ``max_length``, naming ``data``.
    """
    from judge.plumbing.run_folder import run_folder_holder
    from train.training_arguments import is_main_process

    training_data = getattr(importlib.import_module(module), "training_data", None)
    if training_data is None or (is_main_process() and run_folder_holder(config.output_dir) is not None):
        return None
    tokenizer = tokenizer_before_the_claim(config)
    if tokenizer is None:
        return None
    return training_data(config, tokenizer)


def recorded_datasets(run: Any, data: TrainingData) -> tuple[Any, Any]:
    """The data step's examples as the trainer's datasets (no evaluation dataset without evaluation rows), with the
    data report and the training rows recorded in run.json (``run``: the recipe's ``train.recipe_steps`` run)."""
    from datasets import Dataset

    train_dataset = Dataset.from_list(data.train_examples)
    eval_dataset = Dataset.from_list(data.eval_examples) if data.eval_rows else None
    run.record_data({**data.report.to_dict(), "n_eval": len(data.eval_rows)}, train_rows=data.train_rows)
    return train_dataset, eval_dataset
