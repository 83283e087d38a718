"""The objects a process already holds, frozen for a call: ``gc.freeze`` (Python's permanent generation) on entry,
``gc.unfreeze`` after, so that the full collections inside the call walk only what it made.

Most of what a scoring process holds before its work is what its imports made (modules, classes, functions and their
dicts: tens of thousands of objects), which every full collection walks again and never frees. The collector still
runs inside the block; the frozen objects are as collectable as before once it ends. ``judge-eval score`` runs under
it (its own allocations trigger a few full collections a run), and so does Holm's adjustment, after which
statsmodels runs a full collection of its own (``eval.scoring.holm``). Inside such a block,
``frozen_from_here`` freezes what exists by then too: score's inputs, once loaded, are kept to its end, and their
hundreds of thousands of objects need no walk by the full collections after.
"""

from __future__ import annotations

import contextlib
import gc

__all__ = ["frozen_from_here", "older_objects_frozen"]

_open_freezes = 0  # open older_objects_frozen blocks that froze (a nested one finds the freeze and leaves it alone)


@contextlib.contextmanager
def older_objects_frozen():
    """The objects that exist on entry frozen inside the block, or the call it decorates, and unfrozen after, when
    the block raises too. Where the process already holds frozen objects on entry (someone else's ``gc.freeze``),
    nothing is frozen or unfrozen: their state is theirs. The count is read once, on entry: a ``gc.freeze`` made
    inside the block (by code it calls, or by another thread) is undone with it, so it is not for concurrent use
    with another freezer (the console commands that reach it, score and compare, run it on their one thread)."""
    global _open_freezes
    freeze = not gc.get_freeze_count()
    if freeze:
        gc.freeze()
        _open_freezes += 1
    try:
        yield
    finally:
        if freeze:
            _open_freezes -= 1
            gc.unfreeze()


def frozen_from_here() -> None:
    """Inside an ``older_objects_frozen`` block that froze, the objects that exist now frozen as well, and unfrozen
    with the rest when the block ends. Anywhere else nothing: no block, or a freeze that was already the process's
    own (its state is theirs)."""
    if _open_freezes:
        gc.freeze()
