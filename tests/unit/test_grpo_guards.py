"""The GRPO recipe's guards: too few prompts for one step refused before any model loads, the prompts an epoch leaves
out recorded, a completion read as the continuation of a prompt that opened its reasoning, a completion cut by the
length limit failed, and ``no_unique_mode: skip`` refused without a format reward.

Run: .venv/bin/python -m pytest tests/unit/test_grpo_guards.py -q -n 0
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from train import grpo
from train.config import ConfigError, load_config
from train.grpo_rewards import agreement_reward, format_reward
from tests.support.fixtures_models import copy_of
from tests.support.train_grpo import TINY_GRPO

RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."
#: The end of a chat prompt whose template opens the reasoning itself (Qwen3 Thinking-2507, R1-distill): the judge's
#: completion starts inside <think>.
OPENED = "<|im_start|>assistant\n<think>\n"
IM_END = 151_645  # Qwen's <|im_end|>


def record(rid: str, scores) -> judge.JudgeRecord:
    return judge.JudgeRecord(id=rid, instruction="Сколько будет два плюс два?", answer="Четыре.",
                             criteria_name="Грамотность", rubrics=RUBRIC, expert_scores=tuple(scores),
                             task_type="Editing")  # fmt: skip


def call(reward, rows, completions, *, prompts=None, completion_ids=None, **bound):
    """``reward`` called as trl 1.16 calls it (trl/trainer/grpo_trainer.py ``_calculate_rewards``): prompts,
    completions, completion_ids, every dataset column as a list and ``log_metric``; returns (rewards, logged)."""
    columns = {key: [row[key] for row in rows] for key in rows[0] if key != "prompt"}
    logged: list[tuple] = []
    values = reward(prompts=prompts if prompts is not None else [row["prompt"] for row in rows],
                    completions=completions, completion_ids=completion_ids or [[IM_END]] * len(rows),
                    log_metric=lambda name, value: logged.append((name, value)), **columns, **bound)  # fmt: skip
    return values, logged


# ---- too few prompts for one step ----------------------------------------------------------------------------------


def test_fewer_prompts_than_one_step_are_refused_before_any_model_loads(tmp_path):
    """1 prompt where a step samples 8 / 4 = 2: trl's RepeatSampler drops the short chunk and no step could train.
    Refused with a ConfigError naming global_batch_size, num_generations and the count, before the base model (here
    a folder that does not exist) or its tokenizer is read, and before the run folder is made."""
    config = load_config(TINY_GRPO, {"model_name_or_path": str(tmp_path / "no-such-model"), "max_rows": 1,
                                     "output_dir": str(tmp_path / "run")})  # fmt: skip
    assert (config.global_batch_size, config.num_generations) == (8, 4)
    with pytest.raises(ConfigError, match=r"1 training prompt.*global_batch_size 8.*num_generations 4.*2 prompts"):
        grpo.main(config)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("n_prompts, per_step, used", [(32, 32, 32), (33, 32, 32), (63, 32, 32), (64, 32, 64),
                                                       (5, 2, 4)])
def test_an_epoch_uses_whole_steps_of_prompts(n_prompts, per_step, used):
    """trl's RepeatSampler cuts the shuffled prompts into chunks of one step's prompts and drops a smaller last one:
    33 prompts at 32 a step train 32 an epoch (1 left out), 63 train 32, 64 all."""
    config = load_config(TINY_GRPO)
    assert grpo.check_prompt_count(n_prompts, per_step, config) == used


@pytest.mark.parametrize("trainer_args, n_prompts, said, lower", [
    # 32 completions / 4 = 8 prompts a step, whatever global_batch_size 16 / 4 would give
    ({"generation_batch_size": 32}, 5, "trainer_args generation_batch_size 32 completions / num_generations 4 = 8 "
     "prompts", "Lower trainer_args generation_batch_size"),
    # 4 steps x 2 per device x 1 rank = 8 completions / 4 = 2 prompts
    ({"steps_per_generation": 4}, 1, "trainer_args steps_per_generation 4 x per_device_train_batch_size 2 x 1 rank "
     "= 8 completions / num_generations 4 = 2 prompts", "Lower trainer_args steps_per_generation"),
    # the default: the global batch, 16 / 4 = 4 prompts
    ({}, 3, "global_batch_size 16 completions / num_generations 4 = 4 prompts", "Lower global_batch_size"),
])  # fmt: skip
def test_too_few_prompts_names_what_sizes_the_generation_batch(trainer_args, n_prompts, said, lower):
    """The refusal states the arithmetic of the batch trl samples and a fix that changes it: under trainer_args'
    generation_batch_size or steps_per_generation, not global_batch_size / num_generations."""
    from train.training_arguments import launch_arithmetic

    config = load_config(TINY_GRPO, {"global_batch_size": 16, "per_device_train_batch_size": 2, "num_generations": 4,
                                     "trainer_args": trainer_args})  # fmt: skip
    per_step = grpo.prompts_per_step(config, launch_arithmetic(config, world_size=1))
    with pytest.raises(ConfigError) as refused:
        grpo.check_prompt_count(n_prompts, per_step, config)
    message = str(refused.value)
    assert said in message and lower in message
    if trainer_args:
        assert "global_batch_size 16" not in message


def test_a_resume_that_changes_the_prompts_per_generation_is_refused(tmp_path):
    """global_batch_size 32, num_generations 8, trainer_args steps_per_generation 4: per-device batch 4 drew 4 x 4 /
    8 = 2 prompts a generation, per-device 2 (a resume may change it) draws 2 x 4 / 8 = 1. trl's sampler would chunk
    the prompts otherwise than the checkpoint's position counts them: refused, naming both; the same count goes on."""
    from train.training_arguments import launch_arithmetic

    config = load_config(TINY_GRPO, {"global_batch_size": 32, "num_generations": 8, "per_device_train_batch_size": 2,
                                     "trainer_args": {"steps_per_generation": 4}})  # fmt: skip
    per_step = grpo.prompts_per_step(config, launch_arithmetic(config, world_size=1))
    assert per_step == 1
    (tmp_path / "run.json").write_text(json.dumps({"data": {"prompts_per_step": 2}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^--resume: .* drew 2 prompts a generation \(run.json's prompts_per_step\), this launch would "
                       r"draw 1 \(trainer_args steps_per_generation 4 x per_device_train_batch_size 2 x 1 rank = 8 "
                       r"completions / num_generations 8 = 1 prompts\).*per_device_train_batch_size"):
        grpo.check_resumed_prompts_per_step(tmp_path, per_step, config)
    grpo.check_resumed_prompts_per_step(tmp_path, 2, config)  # unchanged: goes on
    (tmp_path / "run.json").write_text(json.dumps({"data": {}}), encoding="utf-8")
    grpo.check_resumed_prompts_per_step(tmp_path, per_step, config)  # an older run.json records none: not checked


@pytest.mark.parametrize("global_batch, per_device, world, group, trainer_args", [
    (256, 4, 8, 8, {}),                              # t-lite: 32 prompts a step
    (256, 4, 16, 8, {}),                             # qwen3-8b server mode: 2 training nodes x 8
    (8, 4, 1, 4, {}),                                # tiny: 2 prompts
    (16, 2, 1, 4, {"steps_per_generation": 4}),      # generation batch 2 x 1 x 4 = 8 completions: 2 prompts
    (16, 2, 1, 4, {"generation_batch_size": 32}),    # 32 / 4 = 8 prompts
])  # fmt: skip
def test_prompts_per_step_is_trls_generation_batch_over_the_group(global_batch, per_device, world, group, trainer_args):
    """The count the guard uses is trl's: GRPOConfig's generation_batch_size / num_generations, the chunk its
    RepeatSampler draws (trl/trainer/grpo_config.py, trl/trainer/grpo_trainer.py ``_get_train_sampler``)."""
    from trl import GRPOConfig

    from train.training_arguments import launch_arithmetic

    config = load_config(TINY_GRPO, {"global_batch_size": global_batch, "per_device_train_batch_size": per_device,
                                     "num_generations": group, "trainer_args": trainer_args})  # fmt: skip
    launch = launch_arithmetic(config, world_size=world)
    trl_args = GRPOConfig(output_dir="unused", use_cpu=True, bf16=False, per_device_train_batch_size=per_device,
                          gradient_accumulation_steps=launch.gradient_accumulation_steps, num_generations=group,
                          **trainer_args)  # fmt: skip
    # GRPOConfig sizes the batch for the one process it runs in: scale per-device x ranks to `world` ranks.
    expected = (trl_args.generation_batch_size if "generation_batch_size" in trainer_args
                else trl_args.generation_batch_size * world) // group
    assert grpo.prompts_per_step(config, launch) == expected


def test_run_json_records_the_prompts_an_epoch_uses(data_report_of_three_prompts):
    """3 prompts at 2 a step: run.json keeps n_train 3 and records prompts_per_step 2 and n_train_per_epoch 2 (the
    run stops once the data report is written, before trl is imported or a model loads: the base folder holds the
    tiny Qwen3's tokenizer only)."""
    data = data_report_of_three_prompts
    assert (data["n_train"], data["prompts_per_step"], data["n_train_per_epoch"]) == (3, 2, 2)


# ---- a completion continues its prompt ---------------------------------------------------------------------------


def test_a_completion_cut_inside_reasoning_the_prompt_opened_is_a_failure():
    """The chat template opened <think> in the prompt; a completion cut by the length limit has no think tags, and
    its last integer is no verdict: "проверяю пункт 2" against the experts' 2 earns 0 and counts as failed. The same
    reasoning closed and answered scores (agreement 1, format 1)."""
    rows, _ = grpo.grpo_rows([record("r", [2])])
    prompt = "<|im_start|>user\n" + rows[0]["prompt"] + "<|im_end|>\n" + OPENED
    agreements, logged = call(agreement_reward, rows, ["проверяю пункт 2"], prompts=[prompt])
    assert agreements == [0.0] and logged == [("verdicts/failed_share", 1.0), ("verdicts/out_of_scale_share", 0.0),
                                              ("verdicts/between_levels_share", 0.0)]
    formats, _ = call(format_reward, rows, ["проверяю пункт 2"], prompts=[prompt])
    assert formats == [0.0]

    closed = ["проверяю пункт 2, всё верно.\n</think>\n\n2"]
    assert call(agreement_reward, rows, closed, prompts=[prompt])[0] == [1.0]
    assert call(format_reward, rows, closed, prompts=[prompt])[0] == [1.0]


# ---- a completion cut by the length limit ---------------------------------------------------------------------------


def test_a_completion_without_its_end_token_is_a_cut_failure():
    """A verdict that parses but whose completion_ids end without an end-of-sequence id was stopped by
    max_completion_length (trl's own rule for completions/clipped_ratio): the integer read is wherever the cut fell.
    It earns 0 from both rewards and counts as failed; the same text ending in <|im_end|> scores 1 and 1."""
    rows, _ = grpo.grpo_rows([record("r", [2])])
    text = "<think>Ответ верный и полный.</think>\n\n2"
    ends = frozenset({IM_END})
    cut_ids, ended_ids = [[11, 22, 17]], [[11, 22, 17, IM_END]]  # 17 is "2"
    for reward in (agreement_reward, format_reward):
        values, logged = call(reward, rows, [text], completion_ids=cut_ids, end_token_ids=ends)
        assert values == [0.0] and ("verdicts/failed_share", 1.0) in logged, reward.__name__
        values, logged = call(reward, rows, [text], completion_ids=ended_ids, end_token_ids=ends)
        assert values == [1.0] and ("verdicts/failed_share", 0.0) in logged, reward.__name__


def test_the_recipe_binds_trls_end_ids_to_its_rewards(qwen3_tokenizer):
    """The end ids are trl's: every eos id of the model's generation config, the tokenizer's eos and its pad
    (trl/trainer/grpo_trainer.py); the bound rewards keep the names trl logs them under."""
    from transformers import GenerationConfig
    from trl.trainer.utils import get_callable_name

    generation = GenerationConfig(eos_token_id=[IM_END, 151_643])
    ends = grpo.completion_end_ids(generation.eos_token_id, qwen3_tokenizer)
    assert ends == {IM_END, 151_643, qwen3_tokenizer.eos_token_id, qwen3_tokenizer.pad_token_id}
    assert grpo.completion_end_ids(IM_END, qwen3_tokenizer) >= {IM_END}
    functions = grpo.reward_functions(["format_reward", "agreement_reward"], ends)
    assert [get_callable_name(f) for f in functions] == ["format_reward", "agreement_reward"]
    rows, _ = grpo.grpo_rows([record("r", [2])])
    assert call(functions[1], rows, ["<think>Ответ верный.</think>2"], completion_ids=[[17]])[0] == [0.0]


# ---- no_unique_mode: skip needs a format reward -----------------------------------------------------------------


@pytest.mark.parametrize("rewards", [{"agreement_reward": 1.0}, {"agreement_reward": 1.0, "format_reward": 0.0}])
def test_skipping_tied_items_without_a_format_reward_is_refused(rewards):
    """Under no_unique_mode: skip a tied item's agreement is None: without a weighted format reward every reward of
    its group is None or 0, and the item trains nothing. Refused naming no_unique_mode, rewards and format_reward."""
    with pytest.raises(ConfigError, match=r"no_unique_mode.*skip.*rewards.*format_reward"):
        load_config(TINY_GRPO, {"no_unique_mode": "skip", "rewards": rewards})
    config = load_config(TINY_GRPO, {"no_unique_mode": "skip", "rewards": {**rewards, "format_reward": 0.5}})
    assert config.no_unique_mode == "skip"


# ---- agreement_reward needs a format reward -----------------------------------------------------------------------

AGREEMENT_ALONE = ("rewards {rewards}: agreement_reward pays 0 for a verdict that failed to parse as for the farthest "
                   "score, so with no format_reward above 0 nothing trains the judge away from failing; add "
                   "format_reward with a positive weight to rewards")


@pytest.mark.parametrize("rewards", [{"agreement_reward": 1.0}, {"agreement_reward": 1.0, "format_reward": 0.0}])
def test_an_agreement_reward_without_a_format_reward_is_refused(rewards):
    """On a 0..2 item whose experts' mode is 2 a verdict of 0 and one that never parsed both earn 0 agreement:
    without a weighted format_reward the policy has no gradient away from failing. Refused when the config loads,
    one line naming the field; a positive format_reward beside it is accepted."""
    with pytest.raises(ConfigError) as info:
        load_config(TINY_GRPO, {"no_unique_mode": "drop", "rewards": rewards})
    assert str(info.value) == AGREEMENT_ALONE.format(rewards=rewards)
    config = load_config(TINY_GRPO, {"rewards": {**rewards, "format_reward": 0.5}})
    assert config.rewards["agreement_reward"] == 1.0 and config.rewards["format_reward"] == 0.5
    assert list(load_config(TINY_GRPO, {"rewards": {"format_reward": 1.0}}).rewards) == ["format_reward"]


def test_judge_train_grpo_refuses_an_agreement_reward_alone_in_one_line(tmp_path, capsys):
    from train.cli import main as judge_train

    code = judge_train(["grpo", "--config", str(TINY_GRPO), "--output-dir", str(tmp_path / "run"),
                        "--rewards", '{"agreement_reward": 1.0}'])
    assert code == 2
    err = capsys.readouterr().err
    assert err == ("judge-train grpo: error: " + AGREEMENT_ALONE.format(rewards={"agreement_reward": 1.0}) + "\n")
    assert not (tmp_path / "run").exists()


# ---- the base export's manifest ------------------------------------------------------------------------------------


def _base_export(folder: Path, **manifest) -> Path:
    """A base model folder holding a judge-train export manifest only (no weights, no tokenizer: a test that reaches
    them fails there, not in the check)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pollux_judge.json").write_text(json.dumps({"mode": "seq2seq", "prompt_version": "pollux-ru-v2",
                                                          **manifest}))  # fmt: skip
    return folder


@pytest.mark.parametrize("manifest, declared", [({"verdict_format": "tagged"}, "tagged"),
                                                ({}, "tagged")])  # an export naming no format is tagged  # fmt: skip
def test_a_base_export_of_another_verdict_format_is_refused_before_anything_loads(tmp_path, manifest, declared):
    """An integer-format GRPO run from a tagged export would prompt it with thinking on and reward integer verdicts it
    was never taught: refused with a ConfigError naming both formats and verdict_format, before the data, the
    tokenizer (the folder holds none) or the run folder."""
    base = _base_export(tmp_path / "base", **manifest)
    config = load_config(TINY_GRPO, {"model_name_or_path": str(base), "output_dir": str(tmp_path / "run")})
    assert config.verdict_format == "integer"
    with pytest.raises(ConfigError, match=rf"is a {declared} judge .*but verdict_format is integer.*"
                                          rf"verdict_format: {declared}"):
        grpo.main(config)
    assert not (tmp_path / "run").exists()
    tagged = load_config(TINY_GRPO, {"model_name_or_path": str(base), "verdict_format": "tagged"})
    assert grpo.check_base_checkpoint(tagged).verdict_format == "tagged"


@pytest.mark.parametrize("model, read", [("t-tech/T-lite-it-1.0", "a hub id"), ("tiny-qwen3", "not a local folder")])
def test_a_hub_id_or_a_built_tiny_model_has_no_manifest_to_check(tmp_path, monkeypatch, model, read):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: the hub id is not here to read
    base = grpo.check_base_checkpoint(load_config(TINY_GRPO, {"model_name_or_path": model}))
    assert read in base.read and (base.verdict_format, base.trained_lengths, base.warnings) == (None, None, ())


def test_a_folder_without_a_manifest_is_not_held_to_a_format(tmp_path):
    """A plain Qwen2.5 checkpoint is read as tagged by the serving rules (judge.checkpoints.verdict_format_and_why,
    rule 4), but it is no judge yet: an integer-format run from it is not refused, and the log line says why."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}))
    base = grpo.check_base_checkpoint(load_config(TINY_GRPO, {"model_name_or_path": str(tmp_path)}))
    assert "no export manifest" in base.read and base.verdict_format is None and base.warnings == ()


def test_a_malformed_manifest_is_a_config_error_naming_it(tmp_path):
    base = _base_export(tmp_path, verdict_format="integer", trained_lengths={"max_length": 64, "max_completion_length": 0})
    with pytest.raises(ConfigError, match=r"model_name_or_path: .*pollux_judge.json: trained_lengths.max_completion"):
        grpo.check_base_checkpoint(load_config(TINY_GRPO, {"model_name_or_path": str(base)}))


def _run_until_data_recorded(config, monkeypatch) -> dict:
    """Run the recipe until its data report is in run.json, then stop (before trl is imported or a model loads);
    return that report."""
    from train import recipe_steps

    class Stop(Exception):
        pass

    record_data = recipe_steps.PreparedRun.record_data

    def record_then_stop(run, report, train_rows=None):
        record_data(run, report, train_rows=train_rows)
        raise Stop

    monkeypatch.setattr(recipe_steps.PreparedRun, "record_data", record_then_stop)
    with pytest.raises(Stop):
        grpo.main(config)
    return json.loads((Path(config.output_dir) / "run.json").read_text())["data"]


@pytest.fixture(scope="module")
def data_report_of_three_prompts(tmp_path_factory, qwen3_tokenizer_dir, remembered_recipe_tokenizers) -> dict:
    """run.json's data report of the tiny GRPO recipe on the bundled sample with max_rows 3, its run stopped once the
    report is written; made once for the module's cases, which only read it."""
    from train import recipe_steps

    config = load_config(TINY_GRPO, {"max_rows": 3, "output_dir": str(tmp_path_factory.mktemp("grpo-data") / "run"),
                                     "model_name_or_path": str(qwen3_tokenizer_dir)})  # fmt: skip
    with pytest.MonkeyPatch.context() as monkeypatch:
        # what recipe_tokenizer_loaded_once does for one test, for the module's run
        monkeypatch.setattr(recipe_steps, "load_tokenizer", remembered_recipe_tokenizers)
        data = _run_until_data_recorded(config, monkeypatch)
    return data


@pytest.fixture(scope="module")
def base_trained_40(tmp_path_factory, qwen3_tokenizer_dir) -> Path:
    """The base export of the completion-room cases, trained on completions of up to 40 tokens, made once for the
    module (they only read it, and their launches stop before a trainer exists: its tokenizer is loaded once,
    ``recipe_tokenizer_loaded_once``)."""
    return copy_of(qwen3_tokenizer_dir, _base_export(
        tmp_path_factory.mktemp("base"), verdict_format="integer",
        trained_lengths={"max_length": 256, "max_completion_length": 40}))


@pytest.mark.parametrize("max_completion_length, warned", [(32, True), (40, False), (48, False)])
def test_less_completion_room_than_the_base_trained_with_is_warned_and_recorded(tmp_path, monkeypatch, caplog,
                                                                                base_trained_40,
                                                                                recipe_tokenizer_loaded_once,
                                                                                max_completion_length,
                                                                                warned):  # fmt: skip
    """The base export records completions of up to 40 tokens (trained_lengths 40 of 256): a GRPO run sampling at most
    32 cuts what it learned, so it is a warning in the log and in run.json's data report (base_checkpoint.warnings);
    40 (the same) and 48 are not. Nothing is refused: a shorter budget may be the intent."""
    base = base_trained_40
    config = load_config(TINY_GRPO, {"model_name_or_path": str(base), "output_dir": str(tmp_path / "run"),
                                     "max_length": 320, "max_completion_length": max_completion_length})  # fmt: skip
    with caplog.at_level("INFO", logger="train.grpo"):
        data = _run_until_data_recorded(config, monkeypatch)
    recorded = data["base_checkpoint"]
    assert (recorded["verdict_format"], recorded["trained_lengths"]) == ("integer", {"max_length": 256,
                                                                                     "max_completion_length": 40})
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "trained on" in r.getMessage()]
    assert recorded["warnings"] == warnings
    assert len(warnings) == warned
    if warned:
        assert warnings[0].startswith("max_completion_length 32 is below the 40-token completions")


def test_the_data_report_counts_items_kept_and_dropped_alike(data_report_of_three_prompts):
    """run.json's GRPO data report counts items: every item read is a prompt kept or a drop (the screen's too_long
    prompts included), n_verdicts is that count (one reference per item), the experts' scores are n_expert_scores,
    and the prompts kept are those trained plus those max_rows cut."""
    data = data_report_of_three_prompts
    assert data["n_rows"] + sum(data["dropped"].values()) == data["n_verdicts"] == data["n_records"]
    assert data["dropped"]["too_long"] > 0 and data["dropped"]["zero_shot"] > 0  # both stages' drops are in it
    assert data["n_expert_scores"] > data["n_records"]  # the sample's items carry several experts' scores
    assert data["n_rows"] == data["n_train"] + data["cut_by_max_rows"] and data["n_train"] == 3


# ---- the generation batch ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, message", [
    # 10 completions are 2.5 groups of 4: trl refuses; floor-divided they were 2 prompts
    ({"trainer_args": {"generation_batch_size": 10}}, r"generation_batch_size 10 .*num_generations 4"),
    # groups of 2 divide 6, the per-device batch of 4 does not (with any number of ranks)
    ({"num_generations": 2, "trainer_args": {"generation_batch_size": 6}},
     r"generation_batch_size 6 .*per_device_train_batch_size 4"),
    ({"trainer_args": {"generation_batch_size": 16, "steps_per_generation": 2}},
     r"both generation_batch_size 16 and steps_per_generation 2"),
    ({"trainer_args": {"generation_batch_size": 0}}, r"generation_batch_size must be a positive integer, got 0"),
    ({"trainer_args": {"steps_per_generation": 1.5}}, r"trainer_args: steps_per_generation: expected an integer, got 1.5"),
])  # fmt: skip
def test_a_generation_batch_trl_would_refuse_is_refused_at_load(overrides, message):
    """trl's own checks (trl/trainer/grpo_config.py, GRPOConfig.__post_init__) ran after the run folder and the
    tokenizer; the config now refuses each at load, naming the keys. The tiny config: per-device 4, group 4."""
    with pytest.raises(ConfigError, match=message):
        load_config(TINY_GRPO, overrides)


@pytest.mark.parametrize("trainer_args", [{"generation_batch_size": 10}, {"generation_batch_size": 16,
                                                                            "steps_per_generation": 2}])
def test_trl_refuses_what_the_config_refuses(trainer_args):
    """The config's refusals are trl's: the same values make GRPOConfig raise (one process, per-device 4, group 4)."""
    from trl import GRPOConfig

    with pytest.raises(ValueError):
        GRPOConfig(output_dir="unused", use_cpu=True, bf16=False, per_device_train_batch_size=4,
                   gradient_accumulation_steps=2, num_generations=4, report_to="none", **trainer_args)  # fmt: skip


@pytest.mark.parametrize("overrides, world, message", [
    # 12 = 3 x a per-device 4 on one rank, but not a multiple of 4 x 2 ranks = 8
    ({"trainer_args": {"generation_batch_size": 12}}, 2, r"generation_batch_size 12 .*4 x 2 ranks = 8"),
    # per-device 2 x 1 rank x 1 step = 2 completions: half a group of 4 (floor-divided, 0 prompts a step)
    ({"per_device_train_batch_size": 2, "trainer_args": {"steps_per_generation": 1}}, 1,
     r"steps_per_generation 1 x per_device_train_batch_size 2 x 1 rank = 2 completions .*num_generations 4"),
])  # fmt: skip
def test_a_generation_batch_that_needs_the_ranks_is_refused_before_the_run_folder(tmp_path, monkeypatch, overrides,
                                                                                 world, message):
    """What the config cannot know without the ranks is checked with the launch arithmetic, before the tokenizer (the
    base folder does not exist) or the run folder."""
    monkeypatch.setenv("WORLD_SIZE", str(world))
    config = load_config(TINY_GRPO, {**overrides, "model_name_or_path": str(tmp_path / "no-such-model"),
                                     "output_dir": str(tmp_path / "run")})  # fmt: skip
    with pytest.raises(ConfigError, match=message):
        grpo.main(config)
    assert not (tmp_path / "run").exists()


def test_the_agreement_reward_alone_counts_the_verdicts_it_pays_0_for():
    """A config may weight ``agreement_reward`` alone: an off-scale verdict, which it pays 0 for, is counted by it
    too, not only a failed one. A batch of 3 on a 0..2 rubric, experts' mode 2: "2" agrees (1.0); "7" is off the
    scale and an unclosed reasoning holds no verdict (0.0 each): a share of 1/3 each, none between levels."""
    rows, _ = grpo.grpo_rows([record("r", [2])])
    completions = ["<think>Ответ верный.</think>\n\n2", "<think>Много.</think>\n\n7", "<think>Обрыв"]
    values, logged = call(agreement_reward, rows * 3, completions)
    assert values == [1.0, 0.0, 0.0]
    assert logged == [("verdicts/failed_share", 1 / 3), ("verdicts/out_of_scale_share", 1 / 3),
                      ("verdicts/between_levels_share", 0.0)]


# ---- judge-train grpo refuses these before it claims the run folder -------------------------------------------------


@pytest.mark.parametrize("case", ["one prompt", "other verdict format", "vLLM off trl's line"])
def test_judge_train_grpo_refuses_them_before_the_run_folder(tmp_path, monkeypatch, capsys, case):
    """The refusals above, through the command a user runs: each is one line (exit 2) and leaves no run folder. The
    recipe made them after ``judge-train grpo`` had claimed --output-dir, which then held only its run.lock."""
    from train.cli import main

    out = tmp_path / "run"
    argv = ["grpo", "--config", str(TINY_GRPO), "--output-dir", str(out)]
    if case == "one prompt":
        argv += ["--max-rows", "1"]
        said = "1 training prompt"
    elif case == "other verdict format":
        base = _base_export(tmp_path / "base", verdict_format="tagged")
        # check_training_data's look at the base: a folder with a model, a tokenizer and a chat template
        for name in ("config.json", "tokenizer.json", "chat_template.jinja"):
            (base / name).write_text("{}", encoding="utf-8")
        argv += ["--model-name-or-path", str(base)]
        said = "is a tagged judge"
    else:
        monkeypatch.setattr(grpo, "installed_vllm", lambda: "0.32.0")
        argv += ["--use-vllm", "true"]
        said = "use_vllm: vLLM 0.32.0 is outside trl's supported"
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("judge-train grpo: error: ") and said in err[-1], err
    assert not out.exists()
