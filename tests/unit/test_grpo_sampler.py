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
