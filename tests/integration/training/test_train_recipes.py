"""Both recipes on the tiny Qwen2 (plain trainer): what carries a label, what the head reads, that they learn,
the schedule, the exports, run.json, and an overfit judge that writes a verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

import judge
from judge.plumbing.provenance import SCHEMA_KEYS
from train.tiny_models import QWEN_SPECIAL_IDS
from train.build_data import build_rows
from train.export import EXPORT_MANIFEST, GENERATOR_SUBDIR

IM_END = QWEN_SPECIAL_IDS["<|im_end|>"]


def _losses(run, key="loss") -> list[float]:
    return [entry[key] for entry in run.log_history if key in entry and "train_loss" not in entry]


def _state(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    state: dict[str, torch.Tensor] = {}
    for file in sorted(folder.glob("*.safetensors")):
        state.update(load_file(str(file)))
    return state


@pytest.fixture(scope="module")
def overfit_rows(overfit_records_path):
    """The two overfit rows, each with its criterion's scale."""
    records = {record.id: record for record in judge.load_records(overfit_records_path)}
    rows, _ = build_rows(records.values(), recipe="seq2seq")
    assert len(rows) == 2 and rows[0]["completion"] == rows[1]["completion"]
    return [{**row, "scale": judge.scale_of(records[row["record_id"]].rubrics)} for row in rows]


@pytest.fixture(scope="module")
def regression_rows_by_tokens(qwen_tokenizer):
    """Every regression row of the sample data that fits the tiny config (256 tokens), keyed by the token ids of
    its served text: judge.apply_chat(prompt, '[FEEDBACK] rationale [END]')."""
    rows, _ = build_rows(judge.load_records(judge.sample_data_path()), recipe="regression", zero_shot="drop")
    by_tokens = {}
    for row in rows:
        served = judge.apply_chat(qwen_tokenizer, row["prompt"], judge.render_rationale_target(row["feedback"]))
        ids = tuple(qwen_tokenizer(served, add_special_tokens=False)["input_ids"])
        if len(ids) <= 256:
            by_tokens[ids] = row
    return by_tokens


# ---- what the models are trained on ---------------------------------------------------------------------------


def test_seq2seq_trains_on_the_served_rendering_and_the_end_of_turn_token(seq2seq_run, seq2seq_examples, overfit_rows,
                                                                         qwen_tokenizer):  # fmt: skip
    """The tokens trl trains on are judge.apply_chat(prompt, target); prompt tokens carry no label; every target
    token does, and so does <|im_end|> after [END] — a judge that never learns to stop never writes [END]."""
    example = seq2seq_examples.examples[0]
    row = overfit_rows[0]
    served_prompt = qwen_tokenizer(judge.apply_chat(qwen_tokenizer, row["prompt"]), add_special_tokens=False)["input_ids"]
    full = qwen_tokenizer(judge.apply_chat(qwen_tokenizer, row["prompt"], row["completion"]), add_special_tokens=False)["input_ids"]
    assert example["input_ids"] == full
    labels = example["labels"]
    assert all(label == -100 for label in labels[: len(served_prompt)])
    assert labels[len(served_prompt):] == full[len(served_prompt):]
    end_of_turn = max(i for i, token in enumerate(full) if token == IM_END)
    assert qwen_tokenizer.decode(full[len(served_prompt):end_of_turn]) == row["completion"]
    assert labels[end_of_turn] == IM_END


def test_regression_head_reads_prompt_plus_rationale_through_the_chat_template(regression_run, regression_examples,
                                                                               regression_rows_by_tokens,
                                                                               qwen_tokenizer):  # fmt: skip
    """Each sequence the head is trained on is exactly judge.apply_chat(prompt, '[FEEDBACK] rationale [END]') of a
    row, with that row's label: what a server builds from the prompt and the generated rationale. The rationale
    and the end-of-turn token carry LM labels, the prompt none; the head reads the last token."""
    from train.regression import RegressionCollator
    from train.score_head import last_token_index

    examples = regression_examples.examples
    assert len(examples) == 2
    for example in examples:
        row = regression_rows_by_tokens[tuple(example["input_ids"])]
        assert example["score_labels"] == row["label"]
        prompt_ids = qwen_tokenizer(judge.apply_chat(qwen_tokenizer, row["prompt"]), add_special_tokens=False)["input_ids"]
        assert set(example["labels"][: len(prompt_ids)]) == {-100}
        assert example["labels"][len(prompt_ids):] == example["input_ids"][len(prompt_ids):]
        assert IM_END in example["labels"][len(prompt_ids):]
    batch = RegressionCollator(qwen_tokenizer.pad_token_id)(examples)
    last = last_token_index(batch["input_ids"], batch["attention_mask"], qwen_tokenizer.pad_token_id)
    assert last.tolist() == [len(example["input_ids"]) - 1 for example in examples]


# ---- learning ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_name", ["seq2seq_run", "regression_run"])
def test_loss_is_finite_and_falls(run_name, seq2seq_run, regression_run):
    """Every logged loss is finite, and the last steps' mean is below the first steps'."""
    run = {"seq2seq_run": seq2seq_run, "regression_run": regression_run}[run_name]
    losses = _losses(run)
    assert len(losses) == run.global_step and all(math.isfinite(value) for value in losses)
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.5
    if run_name == "regression_run":
        for part in ("lm_loss", "score_loss"):
            values = _losses(run, part)
            assert len(values) == len(losses) and all(math.isfinite(value) for value in values)
        assert _losses(run, "lm_loss")[-1] < _losses(run, "lm_loss")[0]


@pytest.mark.parametrize("run_name", ["seq2seq_run", "regression_run"])
def test_learning_rate_decays_linearly_to_zero(run_name, seq2seq_run, regression_run):
    """The schedule ends at exactly 0 after the last step, having started at the configured peak."""
    run = {"seq2seq_run": seq2seq_run, "regression_run": regression_run}[run_name]
    config = json.loads((Path(run.output_dir) / "run.json").read_text(encoding="utf-8"))["config"]
    rates = _losses(run, "learning_rate")
    assert rates[0] == pytest.approx(config["learning_rate"])
    assert all(a >= b for a, b in zip(rates, rates[1:]))
    assert run.final_learning_rate == 0.0


def test_trainable_parameters_changed(trained_seq2seq_dir, trained_regression_dir, overfit_base_dir, tiny_causal_dir):
    """Every weight of the base differs after training, in both exports; the score head is new and non-zero."""
    for base_dir, folder in ((overfit_base_dir, trained_seq2seq_dir), (tiny_causal_dir, trained_regression_dir / GENERATOR_SUBDIR)):
        base = _state(Path(base_dir))
        trained = _state(Path(folder))
        unchanged = [name for name, tensor in base.items() if torch.equal(tensor, trained[name])]
        assert not unchanged, f"{folder}: unchanged after training: {unchanged}"
    classifier = _state(trained_regression_dir)
    assert classifier["score.weight"].shape == (1, 64) and classifier["score.weight"].norm() > 0


# ---- exports ----------------------------------------------------------------------------------------------------


def test_seq2seq_export_reloads_as_a_causal_lm(seq2seq_run, trained_seq2seq_dir):
    """transformers' Auto class loads the export unchanged; the export check ran and matched the live model."""
    from transformers import AutoModelForCausalLM, GenerationConfig

    model = AutoModelForCausalLM.from_pretrained(trained_seq2seq_dir)
    assert type(model).__name__ == "Qwen2ForCausalLM" and model.config.use_cache
    assert GenerationConfig.from_pretrained(trained_seq2seq_dir).eos_token_id == IM_END
    report = seq2seq_run.export_report
    assert report["lm_head_norm"] > 0 and report["max_logit_diff"] <= 1e-4
    manifest = json.loads((trained_seq2seq_dir / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    assert manifest == {"mode": "seq2seq", "prompt_version": judge.PROMPT_VERSION, "generator": ".", "score_head": None,
                        "verdict_format": "tagged"}


def test_the_training_tokenizer_drops_its_build_copies_and_nothing_else(overfit_base_dir, tmp_path):
    """load_tokenizer lets go of the Python copies of the vocabulary and merges (datasets would hash them in every
    map: train.recipe_steps.drop_build_copies); what it saves, and the ids of a rendered prompt, are those of the
    tokenizer transformers loads, copies and all. The tokens trained on are checked against the intact tokenizer
    above (test_seq2seq_trains_on_the_served_rendering_and_the_end_of_turn_token)."""
    from transformers import AutoTokenizer

    from train.recipe_steps import load_tokenizer

    intact = AutoTokenizer.from_pretrained(overfit_base_dir)
    # transformers 5's Qwen2Tokenizer keeps them (else drop_build_copies has nothing left to do, and can go).
    assert isinstance(intact._vocab, dict) and isinstance(intact._merges, list)
    ours = load_tokenizer(str(overfit_base_dir))
    assert ours._vocab is None and ours._merges is None
    item = {"instruction": "Объясни, почему небо голубое.", "answer": "Рассеяние.", "criteria_name": "Креативность",
            "rubrics": "0: нет\n1: есть", "reference_answer": None}
    prompt = judge.apply_chat(intact, judge.render_prompt(item))
    assert ours.encode(prompt) == intact.encode(prompt)
    intact.padding_side = ours.padding_side
    intact.save_pretrained(tmp_path / "intact")
    ours.save_pretrained(tmp_path / "ours")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "intact" / name).read_bytes(), name


def test_regression_export_is_a_servable_classifier_plus_a_generator(regression_run, trained_regression_dir):
    """export/: Qwen2ForSequenceClassification, num_labels 1, problem_type regression, `score` in the main
    safetensors; generator/: a causal LM with the very same backbone; the check against the live model passed."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(trained_regression_dir)
    assert config.architectures == ["Qwen2ForSequenceClassification"]
    assert (config.num_labels, config.problem_type, config.pad_token_id) == (1, "regression", QWEN_SPECIAL_IDS["<|endoftext|>"])
    classifier = _state(trained_regression_dir)
    generator = _state(trained_regression_dir / GENERATOR_SUBDIR)
    assert "score.weight" in classifier and "lm_head.weight" not in classifier
    assert "score.weight" not in generator
    backbone = [name for name in classifier if name.startswith("model.")]
    assert backbone and all(torch.equal(classifier[name], generator[name]) for name in backbone)
    assert type(AutoModelForSequenceClassification.from_pretrained(trained_regression_dir)).__name__ == "Qwen2ForSequenceClassification"
    assert type(AutoModelForCausalLM.from_pretrained(trained_regression_dir / GENERATOR_SUBDIR)).__name__ == "Qwen2ForCausalLM"
    report = regression_run.export_report
    assert report["score_norm"] > 0 and report["max_score_diff"] <= 1e-4 and report["max_logit_diff"] <= 1e-4
    manifest = json.loads((trained_regression_dir / EXPORT_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["mode"] == "regression" and manifest["generator"] == GENERATOR_SUBDIR and manifest["score_head"] == "score"


def test_every_export_folder_ships_the_compact_tokenizer_json(trained_seq2seq_dir, trained_regression_dir):
    """judge-train writes the exports' tokenizer.json on one line with string merges (train/tokenizer_file.py), in the
    seq2seq export, the regression export and its generator alike; what it loads to is the ids tests above check."""
    for folder in (trained_seq2seq_dir, trained_regression_dir, trained_regression_dir / GENERATOR_SUBDIR):
        text = (folder / "tokenizer.json").read_text(encoding="utf-8")
        assert "\n" not in text and isinstance(json.loads(text)["model"]["merges"][0], str), folder


@pytest.mark.parametrize("run_name", ["seq2seq_run", "regression_run"])
def test_run_json_makes_the_run_reproducible(run_name, seq2seq_run, regression_run):
    """run.json (in the run folder and the export) holds the resolved config, git revision, package versions,
    prompt-template version, seed, launch arithmetic, data counts and the result."""
    run = {"seq2seq_run": seq2seq_run, "regression_run": regression_run}[run_name]
    record = json.loads((Path(run.export_dir) / "run.json").read_text(encoding="utf-8"))
    assert record["config"]["recipe"] == run_name.split("_")[0] and record["seed"] == record["config"]["seed"]
    assert record["prompt_version"] == judge.PROMPT_VERSION
    assert set(record) >= set(SCHEMA_KEYS) and record["job"] == "judge-train run"
    assert "git_revision" in record and record["git_dirty"] in (True, False, None)
    assert record["packages"]["torch"] and record["packages"]["transformers"] and record["packages"]["trl"]
    assert record["launch"]["world_size"] == 1 and record["launch"]["gradient_accumulation_steps"] >= 1
    assert record["data"]["n_train"] > 0 and "dropped" in record["data"]
    assert record["result"]["global_step"] == run.global_step and record["result"]["final_learning_rate"] == 0.0


# ---- the overfit judge ------------------------------------------------------------------------------------------


def test_overfit_seq2seq_judge_greedily_writes_a_verdict(trained_seq2seq_dir, overfit_rows):
    """After 20 steps on two rows the judge greedily writes a verdict judge.parse_verdict accepts, with the
    trained score, and stops at <|im_end|>."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(trained_seq2seq_dir)
    model = AutoModelForCausalLM.from_pretrained(trained_seq2seq_dir).eval()
    for row in overfit_rows:
        ids = tokenizer(judge.apply_chat(tokenizer, row["prompt"]), add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=40, do_sample=False)
        text = tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        verdict = judge.parse_verdict(text, scale=row["scale"])
        assert verdict.ok, f"{text!r}: {verdict.reason}"
        assert verdict.score == row["score"]
        assert out[0, -1].item() == IM_END
