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


def test_run_json_records_the_prompts_an_epoch_uses(tmp_path, monkeypatch, qwen3_tokenizer):
    """3 prompts at 2 a step: run.json keeps n_train 3 and records prompts_per_step 2 and n_train_per_epoch 2 (the
    test stops the run once the data report is written, before trl is imported or a model loads: the base folder
    holds the tiny Qwen3's tokenizer only)."""
    from train import recipe_steps

    qwen3_tokenizer.save_pretrained(tmp_path / "base")

    class Stop(Exception):
        pass

    record_data = recipe_steps.PreparedRun.record_data

    def record_then_stop(run, report, train_rows=None):
        record_data(run, report, train_rows=train_rows)
        raise Stop

    monkeypatch.setattr(recipe_steps.PreparedRun, "record_data", record_then_stop)
    config = load_config(TINY_GRPO, {"max_rows": 3, "output_dir": str(tmp_path / "run"),
                                     "model_name_or_path": str(tmp_path / "base")})  # fmt: skip
    with pytest.raises(Stop):
        grpo.main(config)
    data = json.loads((Path(config.output_dir) / "run.json").read_text())["data"]
    assert (data["n_train"], data["prompts_per_step"], data["n_train_per_epoch"]) == (3, 2, 2)


# ---- a completion continues its prompt ---------------------------------------------------------------------------


def test_a_completion_cut_inside_reasoning_the_prompt_opened_is_a_failure():
    """The chat template opened <think> in the prompt; a completion cut by the length limit has no think tags, and
    its last integer is no verdict: "проверяю пункт 2" against the experts' 2 earns 0 and counts as failed. The same
    reasoning closed and answered scores (agreement 1, format 1)."""
    rows, _ = grpo.grpo_rows([record("r", [2])])
    prompt = "<|im_start|>user\n" + rows[0]["prompt"] + "<|im_end|>\n" + OPENED
    agreements, logged = call(agreement_reward, rows, ["проверяю пункт 2"], prompts=[prompt])
    assert agreements == [0.0] and logged == [("verdicts/failed_share", 1.0)]
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
