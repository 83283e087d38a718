"""Resumable run folders: a guard against resuming with other settings.

A run writes one JSON line per finished unit (an answered question, a generated task) to a ``judge.plumbing.journal``
journal (fsynced appends; on restart ``open_journal`` drops a torn last line and cuts it from the file). On restart
the folder's ``run_key.json`` must match the new run's settings: ``judge.plumbing.run_folder.claim_run_folder``, the one
guard every resumable job shares (``judge-eval run`` too).
"""

from __future__ import annotations

from judge.plumbing.run_folder import RUN_KEY_FILE, ResumeMismatch, claim_run_folder

__all__ = ["RUN_KEY_FILE", "ResumeMismatch", "claim_run_folder"]
