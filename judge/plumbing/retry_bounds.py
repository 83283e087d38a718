"""The default bound on one request's waits between its retries, apart from ``judge.plumbing.retry`` (which applies
it) so that a command's config can name it as a default without importing the HTTP stack: ``judge-eval score`` reads
``RunConfig`` and never pays for httpx or tenacity.
"""

from __future__ import annotations

__all__ = ["DEFAULT_WAIT_BUDGET_S"]

#: The default ``RetryPolicy.wait_budget_s`` (``--retry-wait-budget-s``) of the commands that ask an endpoint item
#: after item (``judge-eval run``, ``rank``, ``mera``, the reward clients, the ``judge-train data`` stages), in
#: seconds: one whole ``Retry-After`` of ``judge.plumbing.retry.MAX_RETRY_AFTER_S`` and then some (a judge-serve
#: restarting its engine asks for a few waits), far past the default backoff's (about 31 s over 5 retries), and not
#: the 50 minutes five capped ``Retry-After`` waits held one request.
DEFAULT_WAIT_BUDGET_S = 900.0
