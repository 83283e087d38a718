"""The failure of an endpoint that cannot be used, and the exit code a command ends with on it.

Apart from ``judge.plumbing.retry`` (which raises it) so that a command's console entry can name it in its error
handling without importing the HTTP stack: ``judge-eval score``, ``compare`` and ``experts`` never contact a server
and never pay for httpx.
"""

from __future__ import annotations

__all__ = ["EXIT_UNUSABLE", "EndpointUnusable"]

#: The exit code of a command whose endpoint cannot be used (``EndpointUnusable``): nothing was sent to it beyond
#: the first contact (or the first requests, all refused alike), or its requests kept failing after their retries
#: (``judge.plumbing.failing_streak``: those are failed rows, the rest unsent).
EXIT_UNUSABLE = 4


class EndpointUnusable(Exception):
    """An endpoint that cannot be used, said in one plain sentence (the console prints it, no traceback).

    Attributes:
        status: the HTTP status of the answer that said so (None: no answer, or not an HTTP error; a 200 whose
            body was not what was asked for keeps its 200).
    """

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status
