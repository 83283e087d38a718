"""The file verl's ``custom_reward_function.path`` names: ``compute_score`` and ``compute_score_async`` of
``judge.reward_clients``, re-exported by an ordinary import.

verl loads a reward file by its path (``verl/utils/import_utils.py``, ``load_module``: ``spec_from_file_location``
then ``exec_module``, the module never put in ``sys.modules``). ``judge.reward_clients`` cannot be loaded that way:
its dataclasses, with postponed annotations, look their module up in ``sys.modules`` and fail, and verl stops
before training. This file defines nothing of its own; its import loads ``judge.reward_clients`` as the package's
module, registered, so the functions verl gets are the ones every other caller gets.

verl 0.7 and later also take ``path: pkg://judge.reward_clients`` (``load_module`` imports it by name), which needs
no file path at all.
"""

from judge.reward_clients import compute_score, compute_score_async

__all__ = ["compute_score", "compute_score_async"]
