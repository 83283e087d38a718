"""What the GRPO recipe hands trl and vLLM: the GRPOConfig keys it sets itself (refused in trainer_args at load),
colocated vLLM's context, the prompt template of the base model, and the step bench's generation overrides.

Run: .venv/bin/python -m pytest tests/unit/test_grpo_recipe_arguments.py -q -n 0
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from judge.checkpoints import EXPORT_MANIFEST, prompt_template_and_why
from judge.prompts import POLLUX_4B_PROMPT, POLLUX_PROMPT, PROMPT_VERSION, PROMPT_VERSION_4B
from train import grpo
from train.config import GRPO_RECIPE_ARGUMENTS, ConfigError, load_config
from tests.support.train_grpo import TINY_GRPO

RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."


def record(rid: str = "r") -> judge.JudgeRecord:
    return judge.JudgeRecord(id=rid, instruction="Сколько будет два плюс два?", answer="Четыре.",
                             criteria_name="Грамотность", rubrics=RUBRIC, expert_scores=(2,),
                             task_type="Editing")  # fmt: skip


# ---- trainer_args keys the recipe passes itself ----------------------------------------------------------------


@pytest.mark.parametrize("key, value, says", [
    ("reward_weights", [1.0, 0.0], r"trainer_args.reward_weights: .*\(it is the weights of rewards\); remove it"),
    ("remove_unused_columns", True, "trainer_args.remove_unused_columns: .*reward functions read"),
    ("vllm_max_model_length", 40960, "trainer_args.vllm_max_model_length: .*it is max_length"),
    ("num_generations", 2, r"'num_generations' is a key of this config; set it there \(--num-generations\)"),
])  # fmt: skip
def test_a_trainer_args_key_the_recipe_passes_is_refused_when_the_config_loads(key, value, says):
    """Each key the recipe hands GRPOConfig itself is one line naming the key at load; before, those that are not
    config fields (reward_weights, remove_unused_columns, vllm_max_model_length) passed the load and were refused only
    when the trainer arguments were built, after the run folder, run.json and the base model's copy existed. A config
    field is refused by the shared check, which names the field to set instead."""
    with pytest.raises(ConfigError, match=says):
        load_config(TINY_GRPO, {"trainer_args": {key: value}})


def test_judge_train_grpo_refuses_reward_weights_before_making_the_run_folder(tmp_path, capsys):
    """`judge-train grpo --trainer-args '{"reward_weights": [1.0, 0.0]}'` exits 2 with the one line and leaves no
    output folder (no base-model/, run.json or run.lock)."""
    from train.cli import main

    code = main(["grpo", "--config", str(TINY_GRPO), "--output-dir", str(tmp_path / "run"),
                 "--trainer-args", json.dumps({"reward_weights": [1.0, 0.0]})])  # fmt: skip
    assert code == 2 and "trainer_args.reward_weights" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_the_recipe_passes_exactly_the_keys_the_config_refuses_and_vllm_gets_max_length(tmp_path):
    """grpo_arguments' keys are GRPO_RECIPE_ARGUMENTS' (a key passed and not refused would again be refused only
    after the run folder exists), and the GRPOConfig built from them sizes colocated vLLM's context to max_length:
    6144 in the Qwen3-8B config (2048 completion tokens after prompts of up to 4096), where vLLM would otherwise
    take the model's 40,960."""
    from trl import GRPOConfig

    from tests.support.train_grpo import REPO

    config = load_config(REPO / "configs" / "train" / "qwen3-8b" / "grpo.yaml", {"use_vllm": False})
    arguments = grpo.grpo_arguments(config)
    assert arguments.keys() == GRPO_RECIPE_ARGUMENTS.keys()
    built = GRPOConfig(output_dir=str(tmp_path), report_to="none", bf16=False, **arguments)  # trl defaults bf16 on
    assert (built.vllm_max_model_length, built.max_completion_length) == (6144, 2048)
    assert built.reward_weights == [1.0, 1.0] and built.remove_unused_columns is False


# ---- the prompt template: the one judge-serve asks the base with ------------------------------------------------


def test_a_manifest_less_integer_base_trains_on_the_4b_template(tmp_path):
    """A folder without an export manifest, integer format: judge-serve asks it as the released Pollux-4B-Judge, with
    pollux-ru-4b-v1 (the Russian prompt and one newline), so GRPO's rows are that prompt: each ends with the rubric
    and one newline, where pollux-ru-v2's ends with the rubric."""
    base = tmp_path / "pollux-4b"
    base.mkdir()
    config = load_config(TINY_GRPO, {"model_name_or_path": str(base)})
    checked = grpo.check_base_checkpoint(config)
    template, _ = prompt_template_and_why(config.verdict_format, checked.manifest)
    assert (checked.manifest, template.version) == ({}, PROMPT_VERSION_4B)
    rows, _ = grpo.grpo_rows([record()], verdict_format="integer", template=template)
    assert rows[0]["prompt"].endswith("### Шкала оценивания по критерию:\n" + RUBRIC + "\n")
    assert rows[0]["prompt"] == POLLUX_PROMPT.render(record()) + "\n"


def test_a_base_export_trains_on_the_template_its_manifest_names(tmp_path):
    """A judge-train export's manifest names pollux-ru-v2: its template, whose prompt ends at the rubric."""
    base = tmp_path / "integer-sft"
    base.mkdir()
    (base / EXPORT_MANIFEST).write_text(json.dumps({"mode": "seq2seq", "prompt_version": PROMPT_VERSION,
                                                    "generator": ".", "verdict_format": "integer"}))  # fmt: skip
    config = load_config(TINY_GRPO, {"model_name_or_path": str(base)})
    template, _ = prompt_template_and_why(config.verdict_format, grpo.check_base_checkpoint(config).manifest)
    assert template.version == PROMPT_VERSION
    rows, _ = grpo.grpo_rows([record()], template=template)
    assert rows[0]["prompt"].endswith("2: Ответ полностью верный.")


def test_the_export_manifest_names_the_template_it_was_trained_on(tmp_path, qwen3_tokenizer):
    """export_seq2seq records the prompt_version it is given: judge-serve then asks the GRPO judge of a 4B base with
    the 4B template it was trained on."""
    from transformers import Qwen3ForCausalLM

    from judge.checkpoints import read_manifest
    from train.export import export_seq2seq
    from train.tiny_models import tiny_qwen3_config

    out = export_seq2seq(Qwen3ForCausalLM(tiny_qwen3_config()), qwen3_tokenizer, tmp_path / "export",
                         verdict_format="integer", prompt_version=POLLUX_4B_PROMPT.version)  # fmt: skip
    manifest = read_manifest(out)
    assert manifest["prompt_version"] == "pollux-ru-4b-v1"
    assert prompt_template_and_why("integer", manifest)[0] is POLLUX_4B_PROMPT


def _cached_hub_snapshot(cache: Path, repo_id: str, manifest: dict | None) -> Path:
    """A hub id as huggingface_hub caches it: ``models--org--name/refs/main`` naming a revision whose snapshot
    folder holds ``config.json`` (a Qwen3) and, when given, the export manifest."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}))
    if manifest is not None:
        (snapshot / EXPORT_MANIFEST).write_text(json.dumps(manifest))
    return snapshot


def test_a_cached_hub_base_is_asked_with_the_template_its_manifest_names(tmp_path, monkeypatch):
    """A hub id in the local cache is read from its snapshot, as judge-serve reads it: a manifest naming pollux-ru-v2
    gives the v2 template (not the 4B one a manifest-less integer base gets), and its format is held to the
    config's like a local export's."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    _cached_hub_snapshot(tmp_path / "hub", "org/integer-judge", {"mode": "seq2seq", "prompt_version": PROMPT_VERSION,
                                                                 "generator": ".", "verdict_format": "integer"})
    config = load_config(TINY_GRPO, {"model_name_or_path": "org/integer-judge"})
    base = grpo.check_base_checkpoint(config)
    assert (base.verdict_format, base.manifest["prompt_version"], base.not_here) == ("integer", "pollux-ru-v2", False)
    template, why = grpo.prompt_template(config, base)
    assert template is POLLUX_PROMPT and why == f"org/integer-judge: its export manifest {EXPORT_MANIFEST} names pollux-ru-v2"
    tagged = load_config(TINY_GRPO, {"model_name_or_path": "org/integer-judge", "verdict_format": "tagged"})
    with pytest.raises(ConfigError, match="is an integer judge .*but verdict_format is tagged: GRPO would prompt it "
                                          "as a tagged judge"):
        grpo.check_base_checkpoint(tagged)


def test_a_hub_base_the_cache_lacks_gets_the_manifest_less_template_as_a_guess(tmp_path, monkeypatch):
    """Qwen/Qwen3-8B not in the cache (nothing is downloaded to look): the 4B template, the template judge-serve
    uses for a checkpoint without a manifest, said to be a guess and not said to be Pollux-4B-Judge."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    config = load_config(TINY_GRPO, {"model_name_or_path": "Qwen/Qwen3-8B"})
    base = grpo.check_base_checkpoint(config)
    assert (base.manifest, base.not_here) == ({}, True) and "not in the local Hugging Face cache" in base.read
    template, why = grpo.prompt_template(config, base)
    assert template is POLLUX_4B_PROMPT
    assert why == ("Qwen/Qwen3-8B is not in the local Hugging Face cache: the template judge-serve uses for a "
                   "checkpoint without an export manifest (integer format: the released Pollux-4B-Judge's prompt (the "
                   "Russian prompt and one newline)), a guess until the base is here")


@pytest.mark.parametrize("verdict_format, expected", [("integer", POLLUX_4B_PROMPT), ("tagged", POLLUX_PROMPT)])
def test_a_manifest_less_base_is_not_called_pollux_4b(tmp_path, monkeypatch, verdict_format, expected):
    """A cached Qwen3 snapshot without a manifest, and a local folder without one: the serving rule's template, with
    a why that names the base and the rule, never "is the released Pollux-4B-Judge"."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    _cached_hub_snapshot(tmp_path / "hub", "Qwen/Qwen3-8B", None)
    for model in ("Qwen/Qwen3-8B", str(tmp_path)):
        config = load_config(TINY_GRPO, {"model_name_or_path": model, "verdict_format": verdict_format})
        base = grpo.check_base_checkpoint(config)
        assert (base.manifest, base.not_here) == ({}, False) and "has no export manifest" in base.read
        template, why = grpo.prompt_template(config, base)
        assert template is expected and why.startswith(f"{model} has no export manifest: the template judge-serve uses")
        assert "is the released Pollux-4B-Judge" not in why


@pytest.mark.parametrize("recipe, given, recorded", [("grpo", PROMPT_VERSION_4B, PROMPT_VERSION_4B),
                                                     ("grpo", None, PROMPT_VERSION),
                                                     ("classifier", PROMPT_VERSION_4B, None)])  # fmt: skip
def test_run_json_records_the_prompt_version_it_is_given(tmp_path, recipe, given, recorded):
    """write_run_json's top-level prompt_version is the one given (GRPO's template), judge.PROMPT_VERSION when none
    is, and none for the task classifier, which renders no judge prompt."""
    from train.provenance import write_run_json

    path = write_run_json(tmp_path, config={"recipe": recipe}, launch={"world_size": 1}, prompt_version=given)
    assert json.loads(path.read_text())["prompt_version"] == recorded


# ---- the step bench's generation overrides ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_the_bench_forces_the_length_in_vllms_own_words(mode):
    """trl builds vllm.SamplingParams(**generation_kwargs) with max_tokens max_completion_length: the bench's minimum
    must be vLLM's min_tokens (SamplingParams refuses min_new_tokens with a TypeError). 32 of 32 tokens."""
    vllm = pytest.importorskip("vllm")
    from bench.grpo_step import run_overrides

    overrides = run_overrides(use_vllm=mode)
    params = vllm.SamplingParams(max_tokens=overrides["max_completion_length"],
                                 **overrides["trainer_args"]["generation_kwargs"])  # fmt: skip
    assert (params.min_tokens, params.max_tokens) == (32, 32)
    with pytest.raises(TypeError):
        vllm.SamplingParams(max_tokens=32, min_new_tokens=32)


def test_the_bench_forces_the_length_in_transformers_words_without_vllm():
    """Without vLLM trl builds transformers.GenerationConfig(**generation_kwargs), whose field is min_new_tokens (it
    keeps an unknown key such as min_tokens as a bare attribute that generate ignores)."""
    from transformers import GenerationConfig

    from bench.grpo_step import run_overrides

    kwargs = run_overrides(completion_tokens=64)["trainer_args"]["generation_kwargs"]
    assert kwargs == {"min_new_tokens": 64} and "min_new_tokens" in GenerationConfig().to_dict()
    assert GenerationConfig(**kwargs).min_new_tokens == 64


def test_a_resume_of_rows_rendered_with_the_other_template_is_refused(tmp_path):
    """A run whose rows were rendered with pollux-ru-v2, resumed where its base is asked with pollux-ru-4b-v1: every
    prompt gained the trailing newline, so the rows' fingerprint differs and the resume is refused, the message
    naming the prompt template among the causes."""
    from judge.plumbing.provenance import update_provenance
    from train.provenance import write_run_json
    from train.recipe_steps import check_resumed_data, rows_fingerprint

    before, _ = grpo.grpo_rows([record()], template=POLLUX_PROMPT)
    after, _ = grpo.grpo_rows([record()], template=POLLUX_4B_PROMPT)
    write_run_json(tmp_path, config={"recipe": "grpo"}, launch={"world_size": 1}, prompt_version=PROMPT_VERSION)
    update_provenance(tmp_path, data={"n_train": 1, "train_fingerprint": rows_fingerprint(before)})
    check_resumed_data(tmp_path, {"n_train": 1, "train_fingerprint": rows_fingerprint(before)})  # the same rows go on
    with pytest.raises(ConfigError, match=r"training rows differ .*n_train 1 -> 1.*or the prompt template the rows"):
        check_resumed_data(tmp_path, {"n_train": 1, "train_fingerprint": rows_fingerprint(after)})
