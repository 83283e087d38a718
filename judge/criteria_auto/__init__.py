"""``criteria: auto``: choose an instruction's task, and with it the POLLUX criteria to judge on (a feature of the
toolkit, not the contract: judge-serve and judge-eval use it, the contract does not depend on it).

One module per job:

- ``policy``: the choice (``TaskChoice``, ``choose_from_scores``: task type, then leaf, or the type's shared
  criteria, or the fallback set), leaf labels, and the ``TaskClassifier`` protocol every method meets;
- ``tfidf``: the ``tfidf`` method, loaded and predicting (one ships in ``judge/data/criteria_tfidf``; fitting it is
  ``train/criteria_tfidf.py``);
- ``head``: the ``head`` method (a sequence-classification checkpoint; training it is ``train/classifier.py``);
- ``llm``: the ``llm`` method (an OpenAI-compatible model chooses level by level with guided choice);
- ``registry``: the methods by name (``build_classifier``, ``classifier_from_settings``);
- ``expansion``: one judge item per chosen criterion (``expand_criteria``, ``expand_rows``, ``expand_file``), failed
  choices counted, refused when every row of the data failed (``ChoicesFailed``) and asked again on resume
  (``failed_choices``);
- ``labelled``: labelled instructions and the bundled training and held-out sets;
- ``measures``: criteria-set precision / recall / Jaccard, by exact or base criterion id (``CRITERIA_MATCHES``),
  and calibration (``reliability``).

What a caller builds or calls is importable from here (``from judge.criteria_auto import TfidfClassifier``); the
pieces judge-eval's and judge-serve's own expansion share (``choice_levels``, ``zero_shot_choices``, ``taken_unsure``)
from ``judge.criteria_auto.expansion``.
"""

from judge.criteria_auto.expansion import ChoicesFailed, expand_criteria, expand_file, expand_rows, failed_choices
from judge.criteria_auto.head import HeadClassifier
from judge.criteria_auto.labelled import heldout_path, labelled_rows, load_labelled, training_path
from judge.criteria_auto.llm import LLMClassifier
from judge.criteria_auto.measures import CRITERIA_MATCHES, criteria_set_scores, reliability
from judge.criteria_auto.policy import (
    DEFAULT_THRESHOLD,
    FALLBACK_GROUPS,
    LABEL_SEPARATOR,
    LEAF_SHARE,
    LeafScoresClassifier,
    TaskChoice,
    TaskClassifier,
    choose_from_scores,
    fallback_criteria,
    label_of,
    leaf_of,
    task_type_of,
    type_criteria,
    zero_shot_choice,
)
from judge.criteria_auto.registry import METHODS, build_classifier, classifier_from_settings
from judge.criteria_auto.tfidf import TfidfClassifier, default_classifier_path

__all__ = [
    "CRITERIA_MATCHES",
    "ChoicesFailed",
    "DEFAULT_THRESHOLD",
    "FALLBACK_GROUPS",
    "LABEL_SEPARATOR",
    "LEAF_SHARE",
    "METHODS",
    "HeadClassifier",
    "LLMClassifier",
    "LeafScoresClassifier",
    "TaskChoice",
    "TaskClassifier",
    "TfidfClassifier",
    "build_classifier",
    "choose_from_scores",
    "classifier_from_settings",
    "criteria_set_scores",
    "default_classifier_path",
    "expand_criteria",
    "expand_file",
    "expand_rows",
    "failed_choices",
    "fallback_criteria",
    "heldout_path",
    "label_of",
    "labelled_rows",
    "leaf_of",
    "load_labelled",
    "reliability",
    "task_type_of",
    "training_path",
    "type_criteria",
    "zero_shot_choice",
]
