"""train/grpo_sampler.py: a GRPO run resumed in a later epoch draws that epoch's prompt order, not the first's.

The loader is built as transformers' Trainer builds it (a DataLoader over trl's real ``RepeatSampler``, prepared by
accelerate for one process or for each of two), and each epoch is entered as ``Trainer._run_epoch`` enters it:
``skip_first_batches`` for the batches a resumed epoch already trained, then ``set_epoch`` on the loader and on the
sampler under accelerate's batch sampler.
"""

from __future__ import annotations

import pytest

PROMPTS = list(range(6))
EPOCHS = 3


def _loader(wrapped: bool, num_processes: int = 1, process_index: int = 0):
    # Imported here, not at collection: trl takes seconds to import and most unit tests never need it.
    from accelerate import Accelerator
    from accelerate.data_loader import prepare_data_loader
    from torch.utils.data import DataLoader
    from trl.trainer.utils import RepeatSampler

    from train.grpo_sampler import EpochReplaySampler

    # A group of 2 completions per prompt, one prompt per batch: each batch is [p, p].
    sampler = RepeatSampler(PROMPTS, mini_repeat_count=2, batch_size=1, repeat_count=1, seed=0)
    sampler = EpochReplaySampler(sampler) if wrapped else sampler
    loader = DataLoader(PROMPTS, batch_size=2, sampler=sampler, collate_fn=list)
    if num_processes == 1:
        return Accelerator(cpu=True).prepare(loader)
    # What Accelerator.prepare builds on one process of several: each process gets every num_processes-th batch.
    return prepare_data_loader(loader, num_processes=num_processes, process_index=process_index)


def _prompt_orders(loader, first_epoch: int = 0, trained_batches: int = 0) -> list[list[int]]:
    """The prompts each epoch trains on, from ``first_epoch`` with ``trained_batches`` of it already trained."""
    from accelerate.data_loader import skip_first_batches

    orders = []
    for epoch in range(first_epoch, EPOCHS):
        epoch_loader = skip_first_batches(loader, trained_batches) if epoch == first_epoch and trained_batches else loader
        epoch_loader.set_epoch(epoch)
        under = getattr(epoch_loader.batch_sampler, "batch_sampler", None)
        if hasattr(under, "set_epoch"):
            under.set_epoch(epoch)
        orders.append([batch[0] for batch in epoch_loader])
    return orders


def test_trls_own_sampler_replays_the_first_epochs_order_after_a_resume():
    """Why the wrapper exists: the failure it fixes, on trl's sampler alone."""
    uninterrupted = _prompt_orders(_loader(wrapped=False))
    assert len({tuple(order) for order in uninterrupted}) == EPOCHS  # three different shuffles
    assert _prompt_orders(_loader(wrapped=False), first_epoch=1)[0] == uninterrupted[0] != uninterrupted[1]


def test_an_uninterrupted_run_draws_trls_own_orders():
    assert _prompt_orders(_loader(wrapped=True)) == _prompt_orders(_loader(wrapped=False))


@pytest.mark.parametrize("first_epoch, trained_batches", [(1, 0), (1, 2), (2, 0), (2, 5)])
def test_a_run_resumed_in_a_later_epoch_trains_the_uninterrupted_runs_prompts(first_epoch, trained_batches):
    uninterrupted = _prompt_orders(_loader(wrapped=True))
    resumed = _prompt_orders(_loader(wrapped=True), first_epoch, trained_batches)
    assert resumed[0] == uninterrupted[first_epoch][trained_batches:]
    assert resumed[1:] == uninterrupted[first_epoch + 1:]


@pytest.mark.parametrize("process_index", [0, 1])
@pytest.mark.parametrize("first_epoch, trained_batches", [(1, 0), (1, 1), (2, 0), (2, 2)])
def test_each_of_two_processes_resumed_in_a_later_epoch_trains_its_uninterrupted_prompts(
    process_index, first_epoch, trained_batches
):
    """Sharded, and skipped mid-epoch, the sampler sits where no ``set_epoch`` reaches it: the loader's epoch does."""
    uninterrupted = _prompt_orders(_loader(True, num_processes=2, process_index=process_index))
    assert uninterrupted[first_epoch] != uninterrupted[0]  # else epoch 0's order would pass too
    resumed = _prompt_orders(_loader(True, num_processes=2, process_index=process_index), first_epoch, trained_batches)
    assert resumed[0] == uninterrupted[first_epoch][trained_batches:]
    assert resumed[1:] == uninterrupted[first_epoch + 1:]


def test_an_unshuffled_sampler_passes_through():
    from trl.trainer.utils import RepeatSampler

    from train.grpo_sampler import EpochReplaySampler

    sampler = RepeatSampler(PROMPTS, mini_repeat_count=1, batch_size=1, shuffle=False)
    wrapped = EpochReplaySampler(sampler)
    wrapped.set_epoch(2)
    assert list(wrapped) == PROMPTS and len(wrapped) == len(sampler)


# ---- the generation phase of a resumed run -------------------------------------------------------------------------
# trl's GRPOTrainer generates for a whole generation batch every steps_per_generation (S) x num_iterations (I)
# micro-steps and trains a slice of it each micro-step; transformers resumes by skipping the batches its saved
# optimizer steps (each of A micro-steps) trained. Driven here: trl's own RepeatSampler for the batches and trl's own
# ``_prepare_inputs`` for each micro-step, on the trainer class the recipe builds, with transformers' resume state
# (``Trainer._init_training_state``: epochs trained, batches of the current epoch skipped) stubbed.


def _epoch_batches(epoch: int, prompts: int, per_generation: int, repeats: int) -> list[list[int]]:
    """The loader's batches of ``epoch``, each one generation batch (per_generation prompts, a group of 2 each)."""
    from trl.trainer.utils import RepeatSampler

    sampler = RepeatSampler(list(range(prompts)), mini_repeat_count=2, batch_size=per_generation,
                            repeat_count=repeats, seed=0)
    for _ in range(epoch + 1):
        order = list(sampler)  # one pass per epoch, as trl's loader draws them
    size = 2 * per_generation
    return [order[i:i + size] for i in range(0, len(order), size)]


def _micro_steps(monkeypatch, *, A: int, S: int, I: int, prompts: int, per_generation: int, epochs: int,
                 resumed_at: int = 0) -> list[tuple[int, int, tuple[int, ...]]]:
    """(epoch, batch of the epoch, prompts trained) for each micro-step from the optimizer step ``resumed_at`` on,
    with ``(generated, prompts)`` where the step generated; ``resumed_at`` 0 is an uninterrupted run."""
    from types import SimpleNamespace

    import torch
    from transformers import Trainer
    from trl import GRPOTrainer

    from train.grpo_sampler import replaying_epochs

    per_epoch = len(_epoch_batches(0, prompts, per_generation, S * I))
    updates_per_epoch = -(-per_epoch // A)  # transformers' num_update_steps_per_epoch
    epochs_trained, skipped = resumed_at // updates_per_epoch, resumed_at % updates_per_epoch * A
    monkeypatch.setattr(Trainer, "_init_training_state", lambda self, *a, **k: (epochs_trained, skipped))

    trainer = replaying_epochs(GRPOTrainer).__new__(replaying_epochs(GRPOTrainer))
    trainer._step, trainer._buffered_inputs, trainer.num_iterations = 0, None, I  # trl's __init__
    trainer.args = SimpleNamespace(steps_per_generation=S, report_to=[])
    trainer.model = SimpleNamespace(training=True)
    trainer.accelerator = SimpleNamespace(is_main_process=True)
    trainer.state = SimpleNamespace(global_step=resumed_at)
    generated = []

    def generate(batch):
        generated.append(True)
        return {"prompt": torch.tensor(batch)}

    trainer._generate_and_score_completions = generate
    first_epoch, skip = trainer._init_training_state(None, None, None, "checkpoint" if resumed_at else None, None)
    steps = []
    for epoch in range(first_epoch, epochs):
        for index, batch in enumerate(_epoch_batches(epoch, prompts, per_generation, S * I)):
            if epoch == first_epoch and index < skip:
                continue
            generated.clear()
            inputs = trainer._prepare_inputs(batch)
            trainer._step += 1  # trl's training_step, after the loss
            steps.append((epoch, index, tuple(sorted(set(inputs["prompt"].tolist()))), bool(generated)))
    return steps


@pytest.mark.parametrize("A, S, I, resumed_at", [
    (2, 2, 2, 1),  # the block is 4 micro-steps, 2 an optimizer step: step 1 ends half-way through block 0
    (1, 1, 2, 1),  # num_iterations 2 on the default generation batch
    (1, 1, 3, 5),  # two steps into the second block
    (2, 2, 1, 1),  # a block per optimizer step: every checkpoint is on a boundary
])
def test_a_run_resumed_inside_a_generation_block_trains_the_uninterrupted_runs_blocks(monkeypatch, A, S, I, resumed_at):
    """From the resumed micro-step on, each micro-step trains the block the uninterrupted run trains there, and
    generation comes where it comes in that run, but for the first step (the checkpoint holds no completions)."""
    sizes = {"A": A, "S": S, "I": I, "prompts": 8, "per_generation": 1, "epochs": 1}
    uninterrupted = _micro_steps(monkeypatch, **sizes)
    resumed = _micro_steps(monkeypatch, **sizes, resumed_at=resumed_at)
    expected = uninterrupted[resumed_at * A:]
    assert [step[:3] for step in resumed] == [step[:3] for step in expected]
    assert resumed[0][3] and [step[3] for step in resumed[1:]] == [step[3] for step in expected[1:]]
    assert len({step[2] for step in uninterrupted}) == 8  # every prompt's block trained, each its own


def test_a_run_resumed_in_a_later_epoch_whose_batches_do_not_fill_its_last_step_keeps_the_phase(monkeypatch):
    """A 6-micro-step block (S 2 x I 3), two blocks an epoch, 5 micro-steps an optimizer step: an epoch is 3 steps
    (5, 5, 2), so the micro-steps before a checkpoint in epoch 1 are not global_step x A; the phase is the batches
    skipped in the epoch."""
    sizes = {"A": 5, "S": 2, "I": 3, "prompts": 2, "per_generation": 1, "epochs": 2}
    uninterrupted = _micro_steps(monkeypatch, **sizes)
    assert len(uninterrupted) == 24
    resumed = _micro_steps(monkeypatch, **sizes, resumed_at=4)  # epoch 1, after its first 5 batches
    expected = uninterrupted[12 + 5:]
    assert [step[:3] for step in resumed] == [step[:3] for step in expected]
    assert resumed[0][3] and [step[3] for step in resumed[1:]] == [step[3] for step in expected[1:]]


def test_a_fresh_start_keeps_trls_count(monkeypatch):
    steps = _micro_steps(monkeypatch, A=2, S=2, I=2, prompts=4, per_generation=1, epochs=1)
    assert [step[3] for step in steps] == [True, False, False, False] * 4
