"""The ``criteria: auto`` methods by name: ``build_classifier`` and the settings judge-eval and judge-serve share.

Kept apart from the methods' own modules (``tfidf``, ``head``, ``llm``), which build on ``policy`` alone, so that
none of them imports another back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from judge.checkpoints import model_folder_gaps
from judge.criteria_auto.head import HeadClassifier
from judge.criteria_auto.llm import LLMClassifier
from judge.criteria_auto.policy import DEFAULT_THRESHOLD, TaskClassifier
from judge.criteria_auto.tfidf import TfidfClassifier
# The key-variable check lives with the key rules: a settings check imports it without the classifiers (numpy).
from judge.plumbing.api_keys import check_classifier_key_env, client_api_key, resolve_api_key
from judge.plumbing.config_files import ConfigError

__all__ = ["CLASSIFIER_KEY_ENV", "METHODS", "artefact_folder_problem", "build_classifier", "classifier_api_key",
           "classifier_from_settings"]


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


#: The variable the ``llm`` method's key is read from by default (``criteria_classifier_api_key_env``): none, so no
#: key is sent. A default variable would be one the user did not name for this endpoint, e.g. ``$OPENAI_API_KEY`` is
#: an API judge's key (``configs/eval/gpt-4o.yaml``) and would go to whatever URL the classifier is given.
CLASSIFIER_KEY_ENV = ""

def classifier_api_key(api_key_env: str, command: str = "criteria auto") -> str:
    """The key the ``llm`` method sends to its endpoint (``Authorization: Bearer``), read by ``KEY_RULE``
    (``judge.plumbing.api_keys``): the variable ``api_key_env`` names, which must be set, or the first set of several
    separated by commas (none set: no key); "" (``CLASSIFIER_KEY_ENV``) sends none.

    Raises:
        ConfigError: a variable named alone is not set, or a variable named is one of ``JUDGE_KEY_ENVS``
            (``judge.plumbing.api_keys``).
    """
    check_classifier_key_env(api_key_env)
    if "," in api_key_env:
        return client_api_key("", api_key_env, command=command).key
    try:
        return resolve_api_key("", api_key_env.strip(), command=command, default_env=CLASSIFIER_KEY_ENV)
    except ConfigError as err:  # named as the setting it came from, not the judge's api_key_env
        raise ConfigError(f"criteria_classifier_{err}") from None


#: The file a classifier artefact folder of each method cannot be loaded without: told before anything starts.
_ARTEFACT_FILES = {"tfidf": "model.json", "head": "config.json"}


def artefact_folder_problem(method: str, location: str) -> str | None:
    """Why the ``tfidf`` / ``head`` artefact folder ``location`` cannot be a classifier of ``method`` (or why it is no
    ``llm`` endpoint: not an http(s) URL), in a line naming the setting, or None (no location: the shipped tfidf, or
    one that looks usable). A cheap look at the folder, for judge-serve to refuse before its engines start: it loads
    the classifier beside them, so a wrong folder failed the start once the engines were launched."""
    if method == "llm" and location and not location.startswith(("http://", "https://")):
        # every row's request failed on it, each row judged on the fallback set with a warning, not refused
        return (f"criteria_classifier_path: {location}: not an http(s) URL; the llm method's is its endpoint's "
                "OpenAI-compatible base URL (http://host:8000/v1)")
    needed = _ARTEFACT_FILES.get(method)
    if needed is None or not location:
        return None
    folder = Path(location)
    if folder.exists() and not folder.is_dir():  # a file named for the folder: "no such folder" would contradict ls
        # an artefact's model.json or config.json given for its folder: the folder that holds it is the one to name
        holder = (f"; name the folder that holds it, {folder.parent}" if folder.name in _ARTEFACT_FILES.values()
                  else "")
        return f"criteria_classifier_path: {location}: a file, not a {method} classifier's folder{holder}"
    if not folder.is_dir():
        return f"criteria_classifier_path: {location}: no such folder"
    if not (folder / needed).is_file():
        made_by = ("judge-train criteria-classifier's --out folder" if method == "tfidf"
                   else "judge-train classifier's <run>/export folder")
        # The shipped tfidf folder given to the head method: said as the other method's folder. Not the other way
        # round: a config.json is in any checkpoint (the judge's own), so it does not make a folder a head export.
        other = ("; it holds a model.json, as a tfidf classifier's folder does: criteria_classifier tfidf reads it"
                 if method == "head" and (folder / _ARTEFACT_FILES["tfidf"]).is_file() else "")
        return (f"criteria_classifier_path: {location}: no {needed}, so no {method} classifier (one is {made_by})"
                f"{other}")
    # transformers says a missing tokenizer only once the engines are up, in five lines naming no folder; the head
    # reads the bare instruction, so it needs a tokenizer but no chat template (config.json was asked above)
    gaps = model_folder_gaps(folder, chat_template=False) if method == "head" else []
    if gaps:
        return (f"criteria_classifier_path: {location}: {gaps[0]}, so no head classifier (judge-train classifier's "
                "<run>/export folder holds its base model's)")
    return None


def classifier_from_settings(method: str, location: str, model: str = "", threshold: float | None = None,
                             api_key_env: str = CLASSIFIER_KEY_ENV) -> TaskClassifier:
    """The classifier judge-eval's ``--criteria-classifier*`` and judge-serve's ``criteria_classifier*`` settings name.

    Args:
        method: a key of ``METHODS``.
        location: the ``tfidf`` / ``head`` artefact folder, or the ``llm`` method's base URL; empty with
            ``tfidf``: the classifier shipped with the package (``default_classifier_path``).
        model: the ``llm`` method's served model name (required with it).
        threshold: below this task-type probability the choice falls back; None: the classifier's own (a tfidf
            artefact records the one chosen at training; ``DEFAULT_THRESHOLD`` for the others).
        api_key_env: the ``llm`` method's key variable (``criteria_classifier_api_key_env``, ``classifier_api_key``);
            "" (the default, ``CLASSIFIER_KEY_ENV``) sends none. The other methods read no key.

    Raises:
        ValueError: a threshold that is no probability, an ``llm`` method without its model, a method other than
            ``tfidf`` without its location, an artefact that cannot be loaded; ``ConfigError`` (a ``ValueError``)
            for an unset key variable or one of the judge's (``check_classifier_key_env``).
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
    # a folder that is missing (transformers would read a head's as a hub id: "Repo id must be in the form ...") or
    # holds no model.json / config.json: the one look judge-serve also takes before its engines start, told alike
    problem = artefact_folder_problem(method, location)
    if problem:
        raise ValueError(problem)
    if method == "tfidf":
        return TfidfClassifier.load(location, threshold=threshold)
    kwargs = ({"base_url": location, "model": model, "api_key": classifier_api_key(api_key_env) or None}
              if method == "llm" else {"path": location})
    # The user's artefact (transformers refuses a head folder without its weights with an OSError, one without a
    # tokenizer with a five-line ValueError naming no folder): said as a setting's error in judge-eval and judge-serve
    # alike, naming the folder, where an OSError read as a connection's failure.
    # A tokenizer.json that is not one (say "{}") fails in tokenizers with a bare KeyError: told the same way.
    unloadable = (OSError, ValueError, KeyError) if method == "head" else OSError
    try:
        return build_classifier(method, threshold=DEFAULT_THRESHOLD if threshold is None else threshold, **kwargs)
    except unloadable as err:
        cause = (str(err).strip().splitlines() or [type(err).__name__])[0]  # transformers' first line names the file
        if isinstance(err, KeyError):  # its text is the key alone
            cause = f"KeyError: {cause}"
        raise ValueError(f"criteria_classifier_path (--criteria-classifier-path): the task classifier in {location} "
                         f"cannot be loaded ({cause}); a head classifier is judge-train classifier's <run>/export "
                         "folder") from None
