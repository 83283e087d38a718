"""The GRPO recipe (train/grpo.py): its rewards on hand-written verdicts, its data rules, its config, the vLLM lines
for training and serving, the Slurm job in both vLLM modes, and a real trl GRPOTrainer run on a tiny Qwen3.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_train_grpo.py.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import judge
from judge.verdicts import read_served_verdict
from train import grpo
from train.config import load_config
from tests.support.train_grpo import TINY_GRPO


# ---- a real trl GRPOTrainer on a tiny Qwen3 ----------------------------------------------------------------------

#: The tokens the tiny policy may sample: digits 0-3, a newline, <think>, </think> and <|im_end|>. A random 2-layer
#: model over the whole 151k vocabulary never writes a verdict, so every reward would be 0 and no group would carry
#: a gradient; over these eight tokens it writes "1\n</think>2", "3", "<think>0</think>" ... which parse, fail and
#: leave the scale by turns, so the rewards differ inside a group. The trainer and the rewards are the real ones; the
#: restriction is transformers' bad_words_ids on the model's own generation config, which generate() merges under
#: trl's settings, set for each step only (through trainer_args' generation_kwargs it would work the same, but the
#: 151k-entry list would be copied into run.json and every checkpoint's config: 4.6 s and more).
#: 32 tokens a completion: a reward counts a completion the length limit cut (no <|im_end|>) as a failure, and at
#: 16 the tiny policy's every readable verdict was one the limit cut.
ALLOWED_TOKENS = (15, 16, 17, 18, 198, 151_667, 151_668, 151_645)
TINY_VOCAB = 151_936
GRPO_OVERRIDES = {
    "max_steps": 2, "save_steps": 1, "max_rows": 2, "num_generations": 4, "global_batch_size": 4,
    "per_device_train_batch_size": 4, "max_completion_length": 32, "max_length": 288, "gradient_checkpointing": False,
    "disable_tqdm": True,
}  # fmt: skip


def _samplers_seen(seen: list):
    """A callback that records the sampler under the training loader trl's trainer built."""
    from transformers import TrainerCallback

    class SamplerSeen(TrainerCallback):
        def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
            seen.append(train_dataloader.batch_sampler.sampler)

    return SamplerSeen()


def _grpo_config(output_dir: Path, **overrides):
    return load_config(TINY_GRPO, {**GRPO_OVERRIDES, "output_dir": str(output_dir), **overrides})


def _sample_allowed_tokens_only():
    """A callback that bans every token but ALLOWED_TOKENS from sampling during each step (the step's completions
    are generated inside it) and lifts the ban before the step's checkpoint saves the generation config."""
    from transformers import TrainerCallback

    banned = [[i] for i in range(TINY_VOCAB) if i not in ALLOWED_TOKENS]

    class AllowedTokensOnly(TrainerCallback):
        def on_step_begin(self, args, state, control, model=None, **kwargs):
            model.generation_config.bad_words_ids = banned

        def on_step_end(self, args, state, control, model=None, **kwargs):
            model.generation_config.bad_words_ids = None

    return AllowedTokensOnly()


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory):
    """The GRPO recipe, two steps on the tiny Qwen3 (the RunResult; the run folder holds checkpoint-1 and -2)."""
    config = _grpo_config(tmp_path_factory.mktemp("grpo") / "run")
    return grpo.main(config, callbacks=(_sample_allowed_tokens_only(),))


def _steps(result) -> list[dict]:
    return [entry for entry in result.log_history if "reward" in entry]


def test_grpo_trains_on_rewards_that_differ_inside_a_group(grpo_run):
    """Each step logs every reward's mean, the five verdict shares and the completions' length; in some group the
    rewards differ (trl's frac_reward_zero_std < 1), the loss is not 0, and the trained weights differ from the base's."""
    from safetensors.torch import load_file

    steps = _steps(grpo_run)
    assert len(steps) == 2
    for entry in steps:
        for key in ("rewards/format_reward/mean", "rewards/agreement_reward/mean", "verdicts/failed_share",
                    "verdicts/out_of_scale_share", "verdicts/between_levels_share", "verdicts/no_reasoning_share",
                    "verdicts/answer_not_bare_share", "completions/mean_length"):
            assert math.isfinite(entry[key]), key
        assert 0 < entry["completions/mean_length"] <= 32 and 0.0 <= entry["verdicts/failed_share"] <= 1.0
    assert min(entry["frac_reward_zero_std"] for entry in steps) < 1.0, steps
    assert any(entry["loss"] != 0 for entry in steps), steps
    run = Path(grpo_run.output_dir)
    before, after = load_file(str(run / "base-model" / "model.safetensors")), load_file(str(run / "export" / "model.safetensors"))
    changed = [name for name in before if not before[name].equal(after[name])]
    assert "model.layers.1.mlp.down_proj.weight" in changed and len(changed) > len(before) // 2, changed


def test_the_grpo_export_is_an_integer_judge_with_its_card(grpo_run):
    """The export is a verified Qwen3ForCausalLM whose manifest says verdict_format integer (what judge-serve and
    judge-eval read with no flag); its card names the recipe, the rewards with their weights and the base."""
    from judge.checkpoints import (TrainedLengths, checkpoint_trained_lengths, checkpoint_verdict_format, judge_kind,
                                   read_manifest)  # fmt: skip

    export = Path(grpo_run.export_dir)
    assert grpo_run.export_report["max_logit_diff"] <= 1e-4
    # The lengths its completions were sampled under, so that judge-serve gives it as much room (the tiny recipe's).
    tiny = _grpo_config(Path("unused"))
    assert checkpoint_trained_lengths(export) == TrainedLengths(tiny.max_length, tiny.max_completion_length)
    assert json.loads((export / "config.json").read_text())["architectures"] == ["Qwen3ForCausalLM"]
    assert checkpoint_verdict_format(export) == "integer" and judge_kind(export) == "seq2seq"
    # The tiny base the recipe builds has no export manifest: an integer base without one is asked with the 4B
    # template, which the export's manifest and run.json name.
    assert read_manifest(Path(grpo_run.output_dir) / "base-model") == {}
    assert read_manifest(export)["prompt_version"] == "pollux-ru-4b-v1"
    assert json.loads((export / "run.json").read_text())["prompt_version"] == "pollux-ru-4b-v1"
    card = (export / "README.md").read_text()
    assert "- recipe: `grpo`" in card and "`format_reward` x 1.0" in card and "`agreement_reward` x 1.0" in card
    assert f"- base model: `{Path(grpo_run.output_dir) / 'base-model'}`" in card and "bare integer" in card


def test_the_grpo_export_is_served_and_scored_in_the_integer_format(grpo_run, tmp_path, monkeypatch):
    """The loop closes with no format flag anywhere: judge-serve on the GRPO export reads the manifest's integer format
    (the prompt rendered with thinking on, each result exactly judge.parse_integer_verdict of its output);
    `judge-eval run` against it writes the server's verdicts as predictions and `judge-eval score` scores them, every
    verdict the tiny policy failed to write counted as a failure, none dropped or scored."""
    import httpx

    from eval.cli import main
    from eval.judging.predictions import read_predictions
    from tests.support.fixtures_serve import start_judge_serve

    records = judge.load_records(judge.sample_data_path())[:4]
    data = judge.write_jsonl(records, tmp_path / "data.jsonl")
    with start_judge_serve(grpo_run.export_dir) as server:
        headers = {"Authorization": f"Bearer {server.api_key}"}
        first = records[0]
        response = httpx.post(server.root_url + "/v1/judge", headers=headers, timeout=300, json={
            "items": [{"id": first.id, "instruction": first.instruction, "answer": first.answer,
                       "reference_answer": first.reference_answer or "",
                       "criteria": [{"name": first.criteria_name, "rubrics": first.rubrics}]}],
            "max_tokens": 16})  # fmt: skip
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["verdict_format"] == "integer"
        (result,) = body["items"][0]["results"]
        # read as every route reads it: with the finish reason (a tiny policy cut at max_tokens fails as cut)
        again = read_served_verdict("integer", result["output"], scale=judge.scale_of(first.rubrics),
                                    finish_reason=result["finish_reason"])
        assert (result["parse_ok"], result["score"], result["error"]) == (again.ok, again.score, again.error)

        monkeypatch.setenv("TEST_JUDGE_KEY", server.api_key)
        assert main(["run", "--judge", server.base_url, "--api-key-env", "TEST_JUDGE_KEY", "--data", str(data),
                     "--out", str(tmp_path / "run"), "--max-tokens", "16", "--no-progress"]) == 0
    rows = read_predictions(tmp_path / "run")
    assert sorted(row["id"] for row in rows) == sorted(r.id for r in records)
    for row in rows:
        again = judge.parse_integer_verdict(row["raw_output"], None)
        assert (row["parse_ok"], row["feedback"]) == (again.ok, again.feedback)
    assert main(["score", "--predictions", str(tmp_path / "run"), "--n-boot", "20", "--no-plots"]) == 0
    overall = json.loads((tmp_path / "run" / "metrics.json").read_text(encoding="utf-8"))["splits"]["all"]["overall"]
    assert overall["n"] == len(records)
    assert overall["n_scored"] + overall["n_parse_failed"] + overall["n_request_failed"] == len(records)
    assert overall["n_parse_failed"] == sum(not row["parse_ok"] for row in rows)


def test_grpo_resumes_from_the_latest_checkpoint(grpo_run, tmp_path):
    """--resume continues from the newest checkpoint-N: with checkpoint-2 gone, from checkpoint-1, training step 2
    only (its log entry is the one new step) and exporting again."""
    run = tmp_path / "run"
    shutil.copytree(grpo_run.output_dir, run, ignore=shutil.ignore_patterns("checkpoint-2", "export"))
    samplers = []
    result = grpo.main(_grpo_config(run, resume=True),
                       callbacks=(_sample_allowed_tokens_only(), _samplers_seen(samplers)))
    launch = json.loads((run / "run.json").read_text())["launch"]
    assert launch["resume_from"] == str(run / "checkpoint-1")
    # The prompts come through the sampler that replays earlier epochs' orders (tests/unit/test_grpo_sampler.py).
    assert [type(s).__name__ for s in samplers] == ["EpochReplaySampler"]
    assert result.global_step == 2 and [entry["step"] for entry in _steps(result)] == [1, 2]
    assert (run / "export" / "model.safetensors").is_file()
