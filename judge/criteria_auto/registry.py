"""The ``criteria: auto`` methods by name: ``build_classifier`` and the settings judge-eval and judge-serve share.

Kept apart from the methods' own modules (``tfidf``, ``head``, ``llm``), which build on ``policy`` alone, so that
none of them imports another back.
"""

from __future__ import annotations

from collections.abc import Callable

from judge.criteria_auto.head import HeadClassifier
from judge.criteria_auto.llm import LLMClassifier
from judge.criteria_auto.policy import DEFAULT_THRESHOLD, TaskClassifier
from judge.criteria_auto.tfidf import TfidfClassifier

__all__ = ["METHODS", "build_classifier", "classifier_from_settings"]


#: Method name -> factory. ``tfidf`` and ``head`` take ``path``; ``llm`` takes ``base_url`` and ``model``.
METHODS: dict[str, Callable[..., TaskClassifier]] = {
    "tfidf": lambda path, **kw: TfidfClassifier.load(path, **kw),
    "llm": LLMClassifier,
    "head": lambda path, **kw: HeadClassifier(path, **kw),
}


def build_classifier(method: str, **kwargs) -> TaskClassifier:
    """The classifier of ``method`` (a key of ``METHODS``), built from its keyword arguments."""
    if method not in METHODS:
        raise ValueError(f"unknown task-classifier method {method!r}; choose one of {sorted(METHODS)}")
    return METHODS[method](**kwargs)


def classifier_from_settings(method: str, location: str, model: str = "", threshold: float | None = None) -> TaskClassifier:
    """The classifier judge-eval's ``--criteria-classifier*`` and judge-serve's ``criteria_classifier*`` settings name.

    Args:
        method: a key of ``METHODS``.
        location: the ``tfidf`` / ``head`` artefact folder, or the ``llm`` method's base URL; empty with
            ``tfidf``: the classifier shipped with the package (``default_classifier_path``).
        model: the ``llm`` method's served model name (required with it).
        threshold: below this task-type probability the choice falls back; None: the classifier's own (a tfidf
            artefact records the one chosen at training; ``DEFAULT_THRESHOLD`` for the others).
    """
    if threshold is not None and not 0.0 <= threshold <= 1.0:  # NaN too: it would turn the fallback off unseen
        raise ValueError(f"criteria_threshold: a task-type probability, from 0 to 1; got {threshold}")
    if method == "llm" and not model.strip():
        # Refused here, where judge-eval and judge-serve build it: an empty name passed their configs and start-up,
        # and then every choice was a failed request to the endpoint.
        raise ValueError("criteria_classifier_model: required with criteria_classifier llm (the model name the "
                         f"endpoint {location or '(none given)'} serves)")
    if not location:
        if method != "tfidf":
            raise ValueError(f"task classifier {method!r}: no artefact folder or URL given")
        return TfidfClassifier.load(None, threshold=threshold)  # the classifier shipped with the package
    if method == "tfidf":
        return TfidfClassifier.load(location, threshold=threshold)
    kwargs = {"base_url": location, "model": model} if method == "llm" else {"path": location}
    return build_classifier(method, threshold=DEFAULT_THRESHOLD if threshold is None else threshold, **kwargs)
