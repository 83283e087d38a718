"""``criteria: auto``: choose an instruction's task, and with it the POLLUX criteria to judge on (a feature of the
toolkit, not the contract: judge-serve and judge-eval use it, the contract does not depend on it).

- ``classifier``: the choice (``TaskChoice``, ``choose_from_scores``: task type, then leaf, or the type's shared
  criteria, or the fallback set), the ``tfidf`` method (shipped in ``judge/data/criteria_tfidf``) and the ``head``
  method, their training rows, and ``expand_criteria`` (one judge item per chosen criterion);
- ``llm``: the ``llm`` method (an OpenAI-compatible model chooses level by level with guided choice);
- ``registry``: the methods by name (``build_classifier``, ``classifier_from_settings``).

Everything public is importable from here: ``from judge.criteria_auto import TfidfClassifier``.
"""

from judge.criteria_auto.classifier import *  # noqa: F401,F403 - the package's public names, listed below
from judge.criteria_auto.classifier import __all__ as _classifier_all
from judge.criteria_auto.llm import LLMClassifier
from judge.criteria_auto.registry import METHODS, build_classifier, classifier_from_settings

__all__ = [*_classifier_all, "LLMClassifier", "METHODS", "build_classifier", "classifier_from_settings"]
