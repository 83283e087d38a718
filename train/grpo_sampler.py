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

``set_epoch`` does not always arrive. On more than one process accelerate shards the batches (``BatchSamplerShard``),
and a resumed epoch skips the ones already trained (``SkipBatchSampler`` around the shard): neither has a
``sampler`` or a ``set_epoch``, so neither accelerate nor transformers reaches this sampler three levels down, and a
run resumed mid-epoch would train epoch 0's order for the rest of that epoch. The epoch is always on the loader,
though: accelerate's loader keeps it as ``iteration`` (``set_epoch`` sets it, ``skip_first_batches`` carries it over,
each pass ends by counting it on) and registers itself as the active loader before it draws its first batch. So the
sampler takes the epoch from the active loader when that loader is the one drawing from it, whatever samplers lie
between, and from ``set_epoch`` otherwise.

The trainer class :func:`replaying_epochs` builds also resumes trl's generation phase. trl generates completions for
a whole generation batch once every ``steps_per_generation x num_iterations`` micro-steps and trains them a slice a
micro-step, counting micro-steps in ``GRPOTrainer._step``, which no checkpoint saves: a resumed run counts from 0.
Where that block is longer than the gradient accumulation, a checkpoint (a ``save_steps`` that is not a multiple of
it, or any save the stopper makes on a signal) can fall inside a block; transformers then skips the batches already
trained, and with the count at 0 trl would train the block in progress for a whole block more and from then on
regenerate half-way through each block, one step behind the uninterrupted run. So a resumed start sets the count to
the batches transformers skips in the epoch it resumes (epochs start on a block boundary), and trl regenerates for
the block in progress (fresh completions: the checkpoint holds none), trains its remaining micro-steps and
regenerates where the uninterrupted run does.
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
            for _ in range(self._current_epoch()):
                for _ in self.sampler:  # one pass draws one permutation, as trl's own earlier epochs did
                    pass
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)

    def _current_epoch(self) -> int:
        """The epoch of the accelerate loader now drawing from this sampler, else the one ``set_epoch`` gave."""
        from accelerate.state import GradientState

        # A loader registers itself here before its first batch, and this runs when that first batch is drawn.
        loader = GradientState().active_dataloader
        epoch = getattr(loader, "iteration", None)
        if isinstance(epoch, int) and any(sampler is self for sampler in _samplers_under(loader)):
            return epoch
        return self.epoch


def _samplers_under(loader) -> Iterator[object]:
    """Every sampler and batch sampler ``loader`` draws through, however accelerate nested them."""
    pending, seen = [loader], set()
    while pending:
        node = pending.pop()
        for name in ("batch_sampler", "sampler"):
            child = getattr(node, name, None)
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                pending.append(child)
                yield child


def replaying_epochs(trainer_class):
    """``trainer_class`` (trl's ``GRPOTrainer``) with its training sampler wrapped in :class:`EpochReplaySampler`
    and, on a resumed start, its micro-step count put back in phase with the batches (the module docstring)."""

    class GRPOTrainerReplayingEpochs(trainer_class):
        def _get_train_sampler(self, dataset=None):
            return EpochReplaySampler(super()._get_train_sampler(dataset))

        def _init_training_state(self, *args, **kwargs):
            # transformers' Trainer: (epochs trained, batches of the current epoch it skips on a resume, else 0).
            epochs_trained, skipped_batches = super()._init_training_state(*args, **kwargs)
            self._step = skipped_batches  # trl's micro-step count, in phase with the loader (the module docstring)
            return epochs_trained, skipped_batches

    return GRPOTrainerReplayingEpochs
