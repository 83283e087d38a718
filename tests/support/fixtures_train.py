"""Session fixtures: tiny judges trained ONCE by the real recipes (the runs, their exports and
``train_subprocess_env`` in tests/integration/conftest.py; their inputs here, registered in tests/conftest.py).

Fixtures (all session-scoped; reuse them rather than training again):
    overfit_records_path    JSONL of two Standard sample records, each reduced to one verdict, sharing one short
                            target ("the handful" the seq2seq judge overfits)
    overfit_base_dir        the tiny Qwen2 architecture initialised with std 0.2 (learns the two rows in ~12 steps)
    overfit_qwen3_base_dir  the tiny Qwen3 of train.tiny_models initialised with std 0.2, the base the Qwen3 recipe
                            tests train from
    seq2seq_run             train.provenance.RunResult of the seq2seq recipe overfitting those two rows
    seq2seq_examples        the first tokenized training examples that run's trainer fed (input_ids, labels)
    trained_seq2seq_dir     its export (Path): a Qwen2ForCausalLM that greedily writes a verdict judge.parse_verdict
                            accepts for those two prompts (tests/integration/training/test_train_recipes.py pins it)
    regression_run          RunResult of configs/train/tiny/regression.yaml (4 short Standard rows, 12 steps)
    regression_examples     the first tokenized training examples that run's trainer fed
    trained_regression_dir  its export (Path): Qwen2ForSequenceClassification (score head, problem_type
                            "regression") + generator/ (Qwen2ForCausalLM, same weights) + pollux_judge.json
    train_subprocess_env    environment for recipe subprocesses: any op DeepSpeed JIT-compiles cached under the
                            repository's .cache/torch_extensions (none on CPU today), W&B off, hub off

And one per test: ``recipe_tokenizer_loaded_once``, judge-train's tokenizer loader remembering what it loaded
(``remembered_recipe_tokenizers``, one per session), for tests whose in-process launch stops before a trainer exists.

The seq2seq run starts from ``overfit_base_dir``, the regression run from ``tiny_causal_dir``
(tests/support/fixtures_models.py); both run in this process, without DeepSpeed.
Their run folders hold run.json (config, git revision, package versions, prompt version, seed, log history).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path

import pytest

import judge

REPO_ROOT = Path(__file__).resolve().parents[2]
TINY_SEQ2SEQ = REPO_ROOT / "configs" / "train" / "tiny" / "seq2seq.yaml"
TINY_REGRESSION = REPO_ROOT / "configs" / "train" / "tiny" / "regression.yaml"

#: The overfit run: 20 optimizer steps of one row at lr 1e-2 (linear decay to 0) on ``overfit_base_dir``.
#: Measured: both prompts give the exact target greedily from step ~12. No more steps than that margin needs: on CPU
#: each is costly (trl's fused LM head scores every position, prompt included). One checkpoint, at the last step: no
#: test reads a mid-run one, and each is a save of the weights and the optimizer.
OVERFIT_OVERRIDES = {
    "learning_rate": 1e-2,
    "max_steps": 20,
    "global_batch_size": 1,
    "per_device_train_batch_size": 1,
    "max_length": 512,
    "max_rows": None,
    "save_steps": 20,
    "logging_steps": 1,
}
#: Initialiser standard deviation of the overfit base. With the default 0.02 the tied 151,936 x 64 embedding
#: starts so small that Adam needs 60+ steps before the model tells " [RESULT]" from " [END]"; at 0.2 the same
#: architecture memorises the two rows in ~12 steps.
OVERFIT_INIT_STD = 0.2


def capture_examples(n: int = 2):
    """A TrainerCallback keeping (in ``.examples``) the first tokenized examples of the set the trainer iterates.

    Built on demand so that importing this plugin does not import transformers.
    """
    from transformers import TrainerCallback

    class CaptureExamples(TrainerCallback):
        def __init__(self):
            self.examples: list[dict] = []

        def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
            dataset = train_dataloader.dataset
            self.examples = [dict(dataset[i]) for i in range(min(n, len(dataset)))]

    return CaptureExamples()


def pick_overfit_rows(tokenizer, records: list[judge.JudgeRecord]) -> list[dict]:
    """Two Standard rows of different records with the same target, the shortest target first.

    One shared target lets a 2-layer, 64-wide model learn the verdict format in a few dozen steps; different
    prompts keep it a (small) handful rather than one memorised string.
    """
    from train.build_data import build_rows

    rows, _ = build_rows(records, recipe="seq2seq", zero_shot="drop")
    by_target: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if all(other["record_id"] != row["record_id"] for other in by_target[row["completion"]]):
            by_target[row["completion"]].append(row)

    def cost(group: list[dict]) -> tuple[int, int]:
        target_tokens = len(tokenizer(group[0]["completion"], add_special_tokens=False)["input_ids"])
        total = sum(len(tokenizer(judge.apply_chat(tokenizer, r["prompt"], r["completion"]))["input_ids"]) for r in group[:2])
        return target_tokens, total

    groups = [group for group in by_target.values() if len(group) >= 2]
    return min(groups, key=cost)[:2]


@pytest.fixture(scope="session")
def overfit_records_path(tmp_path_factory, qwen_tokenizer) -> Path:
    """JSONL of the two records behind ``pick_overfit_rows``, each keeping only the chosen verdict."""
    records = judge.load_records(judge.sample_data_path())
    by_id = {record.id: record for record in records}
    chosen = []
    for row in pick_overfit_rows(qwen_tokenizer, records):
        record_id, index = row["id"].rsplit("/", 1)
        record = by_id[record_id]
        score = record.expert_scores[int(index)]
        # the chosen expert's id travels with its score (a record holds one id per expert, or none)
        ids = None if record.expert_ids is None else (record.expert_ids[int(index)],)
        chosen.append(dataclasses.replace(record, expert_scores=(score,), expert_feedback=(row["feedback"],), annotations=(),
                                          criteria_score=score, expert_ids=ids))  # fmt: skip
    return judge.write_jsonl(chosen, tmp_path_factory.mktemp("overfit-data") / "overfit.jsonl")


@pytest.fixture(scope="session")
def overfit_base_dir(tmp_path_factory, request) -> Path:
    """The tiny Qwen2 of train.tiny_models (same architecture and vocabulary) initialised with std 0.2, seed 0; built
    once per test run for all workers (``tests.support.shared_builds``)."""

    def build(out: Path) -> None:
        import torch
        from transformers import GenerationConfig, Qwen2ForCausalLM

        from train.tiny_models import tiny_qwen2_config
        from train.tokenizer_file import save_tokenizer

        config = tiny_qwen2_config("causal")
        config.initializer_range = OVERFIT_INIT_STD
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = Qwen2ForCausalLM(config)
        model.generation_config = GenerationConfig(
            bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
        )
        model.save_pretrained(str(out))
        save_tokenizer(request.getfixturevalue("qwen_tokenizer"), out)

    from tests.support.shared_builds import built_once

    return built_once(tmp_path_factory, "overfit-base0", (OVERFIT_INIT_STD, 0), build)


@pytest.fixture(scope="session")
def overfit_qwen3_base_dir(tmp_path_factory, request) -> Path:
    """``train.tiny_models.build_tiny_qwen3`` with Qwen3's tokenizer, initialised with std 0.2, seed 0: the base
    the Qwen3 recipe tests train from (the recipes write nothing into their base), built once per test run for all
    workers (``tests.support.shared_builds``)."""
    from tests.support.shared_builds import built_once
    from train.tiny_models import build_tiny_qwen3

    return built_once(tmp_path_factory, "overfit-qwen3-base0", (OVERFIT_INIT_STD, 0), lambda folder: build_tiny_qwen3(
        folder, seed=0, tokenizer=request.getfixturevalue("qwen3_tokenizer"), initializer_range=OVERFIT_INIT_STD))


@pytest.fixture(scope="session")
def remembered_recipe_tokenizers():
    """One remembering loader (``tests.support.serve_in_process.remembering_loader``) over the recipes' tokenizer
    loader for the whole session: what :func:`recipe_tokenizer_loaded_once` puts in its place."""
    from tests.support.serve_in_process import remembering_loader
    from train import recipe_steps

    return remembering_loader(recipe_steps.load_tokenizer)


@pytest.fixture
def recipe_tokenizer_loaded_once(monkeypatch, remembered_recipe_tokenizers):
    """The recipes' tokenizer loader (``train.recipe_steps.load_tokenizer``) answering again with what it loaded for a
    folder whose files are unchanged: loading a tiny base's 151k-token tokenizer is the slow part of such a test, and
    a test that runs judge-train in-process on the session's tiny base loads it again. Only for tests whose launch
    stops before a trainer exists (a trainer may change the tokenizer it is given); up to there judge-train renders
    and tokenizes with it and changes nothing. A folder written anew, or another folder, loads again."""
    from train import recipe_steps

    monkeypatch.setattr(recipe_steps, "load_tokenizer", remembered_recipe_tokenizers)


@pytest.fixture(scope="session")
def seq2seq_examples():
    """Filled by ``seq2seq_run``: ``.examples`` holds the first tokenized training examples."""
    return capture_examples()


@pytest.fixture(scope="session")
def regression_examples():
    """Filled by ``regression_run``: ``.examples`` holds the first tokenized training examples."""
    return capture_examples()
