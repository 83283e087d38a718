"""The order GRPO draws its prompts in, the same whether a run was interrupted or not.

trl's ``RepeatSampler`` (trl/trainer/utils.py) shuffles with one generator seeded once: every pass over the data
(one per epoch) draws the next permutation from it, and it has no ``set_epoch``. A run resumed in its second epoch
builds a new sampler whose first pass draws the *first* epoch's order, then transformers skips the batches already
trained in that order: the resumed run trains other prompts in another order than the run it resumes, and its
result is not the uninterrupted one (transformers' ``Trainer._run_epoch`` calls ``set_epoch`` on the sampler for
exactly this; accelerate's ``DataLoaderShard.set_epoch`` forwards it).

:class:`EpochReplaySampler` takes that ``set_epoch``: before epoch ``e`` it puts the generator back to its seeded
state and lets trl's sampler draw ``e`` passes, so epoch ``e`` gets the permutation an uninterrupted run draws for
it. An uninterrupted run draws exactly trl's orders.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

__all__ = ["EpochReplaySampler", "replaying_epochs"]


class EpochReplaySampler(torch.utils.data.Sampler):
    """trl's ``RepeatSampler`` with the ``set_epoch`` it lacks (see the module docstring)."""

    def __init__(self, sampler):
        self.sampler = sampler
        generator = getattr(sampler, "generator", None)  # None when trl does not shuffle
        self._seeded = generator.get_state() if generator is not None else None
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self._seeded is not None:
            self.sampler.generator.set_state(self._seeded)
            for _ in range(self.epoch):
                for _ in self.sampler:  # one pass draws one permutation, as trl's own earlier epochs did
                    pass
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def replaying_epochs(trainer_class):
    """``trainer_class`` (trl's ``GRPOTrainer``) with its training sampler wrapped in :class:`EpochReplaySampler`."""

    class GRPOTrainerReplayingEpochs(trainer_class):
        def _get_train_sampler(self, dataset=None):
            return EpochReplaySampler(super()._get_train_sampler(dataset))

    return GRPOTrainerReplayingEpochs
