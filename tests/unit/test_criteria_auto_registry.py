"""The ``criteria: auto`` methods built from judge-eval's and judge-serve's settings (``classifier_from_settings``):
the llm method's endpoint key, read from the variable its setting names and sent as a bearer token, and the
settings that name that variable."""

from __future__ import annotations

import pytest

from eval.judging.config import RunConfig
from judge.criteria_auto import classifier_from_settings
from judge.plumbing.config_files import ConfigError
from serve.config import ServeConfig
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion


def _code_python(path, body):
    """Code creation, then Python: a leaf after two levels."""
    options = body["structured_outputs"]["choice"]
    return 200, chat_completion("Python" if "Python" in options else "Code creation", "scripted")


def _authorizations(monkeypatch, env: dict[str, str], **settings) -> list[str | None]:
    """The Authorization header of each request one choice sends, with only ``env``'s key variables set."""
    for name in ("OPENAI_API_KEY", "JUDGE_SERVE_API_KEY", "CLASSIFIER_KEY", "OTHER_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with ScriptedEndpoint(_code_python) as ep:
        clf = classifier_from_settings("llm", ep.base_url, "scripted", **settings)
        choice = clf.choose("Напиши функцию на Python")
        headers = list(ep.headers)
    assert choice.label == "Code creation / Python"
    return [h.get("authorization") for h in headers]


def test_the_llm_method_sends_the_key_of_the_variable_its_setting_names(monkeypatch):
    """classifier_from_settings built LLMClassifier(base_url, model) with no key, and no setting or variable gave
    one: an endpoint that asks for a key (a vLLM started with --api-key) answered every choice 401. The key of the
    variable named is sent on every level's request, as a bearer token."""
    sent = _authorizations(monkeypatch, {"CLASSIFIER_KEY": "sk-classifier"}, api_key_env="CLASSIFIER_KEY")
    assert sent == ["Bearer sk-classifier", "Bearer sk-classifier"]


def test_by_default_no_key_is_sent_whatever_variables_are_set(monkeypatch):
    """The default sent $OPENAI_API_KEY, a variable the user had not named for the classifier (an API judge's key,
    configs/eval/gpt-4o.yaml), to whatever URL the classifier was given. Now no variable is read unless named; ''
    sends none too; several named: the first one set."""
    both = {"OPENAI_API_KEY": "sk-openai", "JUDGE_SERVE_API_KEY": "sk-serve"}
    assert _authorizations(monkeypatch, both) == [None, None]
    assert _authorizations(monkeypatch, both, api_key_env="") == [None, None]
    assert _authorizations(monkeypatch, {"OTHER_KEY": "sk-other"}, api_key_env="CLASSIFIER_KEY,OTHER_KEY") == [
        "Bearer sk-other"] * 2


@pytest.mark.parametrize("name", ["JUDGE_SERVE_API_KEY", "JUDGE_SERVE_REWARD_KEY", "VLLM_API_KEY"])
def test_the_judges_own_key_variables_are_refused(monkeypatch, name):
    """judge-serve's client key, its reward key and its engines' key are the judge's: named for the classifier
    (alone, or in a list), they are refused in one line naming the setting, before any request."""
    monkeypatch.setenv(name, "sk-judge")
    expected = (f"criteria_classifier_api_key_env: ${name} holds the judge's own key, which is never sent to the "
                "classifier's endpoint; export the classifier's key in a variable of its own (e.g. CLASSIFIER_API_KEY) "
                "and name that, or '' for none")
    for setting in (name, f"CLASSIFIER_KEY, {name}"):
        with pytest.raises(ConfigError) as info:
            classifier_from_settings("llm", "http://127.0.0.1:9/v1", "scripted", api_key_env=setting)
        assert str(info.value) == expected


def test_the_judge_key_names_are_those_judge_serve_uses():
    """The fixed names are the defaults of judge-serve's api_key_env and reward_key_env and its engines' variable."""
    from judge.plumbing.api_keys import JUDGE_KEY_ENVS
    from serve.engine_auth import ENGINE_KEY_ENV

    fields = ServeConfig.__dataclass_fields__
    assert set(JUDGE_KEY_ENVS) == {fields["api_key_env"].default, fields["reward_key_env"].default, ENGINE_KEY_ENV}


def test_a_variable_named_alone_must_be_set(monkeypatch):
    """A variable the user named that is unset is refused naming the setting, rather than every choice a 401."""
    monkeypatch.delenv("CLASSIFIER_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"^criteria_classifier_api_key_env: the environment variable "
                                          r"CLASSIFIER_KEY is not set$"):
        classifier_from_settings("llm", "http://127.0.0.1:9/v1", "scripted", api_key_env="CLASSIFIER_KEY")
    # the methods that read no key ignore it
    assert classifier_from_settings("tfidf", "", api_key_env="CLASSIFIER_KEY").name == "tfidf"


def test_judge_eval_and_judge_serve_name_no_variable_by_default():
    """Both commands have the setting, empty by default: no key unless the user names its variable."""
    assert RunConfig().criteria_classifier_api_key_env == ""
    assert ServeConfig.__dataclass_fields__["criteria_classifier_api_key_env"].default == ""


def test_judge_eval_refuses_the_variable_its_judge_reads(tmp_path):
    """configs/eval/gpt-4o.yaml's api_key_env is OPENAI_API_KEY: naming it for an llm classifier would send the
    OpenAI key to the classifier's URL. Refused by validate, naming the setting; another variable passes."""
    settings = dict(judge="", base_url_env="OPENAI_BASE_URL", api_key_env="OPENAI_API_KEY", out=str(tmp_path),
                    criteria="auto", criteria_classifier="llm", criteria_classifier_path="http://host:8000/v1",
                    criteria_classifier_model="m")
    with pytest.raises(ConfigError, match=r"^criteria_classifier_api_key_env: \$OPENAI_API_KEY holds the judge's own "):
        RunConfig(**settings, criteria_classifier_api_key_env="OPENAI_API_KEY").validate()
    # the default api_key_env lists judge-serve's key, then OpenAI's: both are the judge's
    settings["api_key_env"] = "JUDGE_SERVE_API_KEY,OPENAI_API_KEY"
    with pytest.raises(ConfigError, match=r"^criteria_classifier_api_key_env: \$OPENAI_API_KEY holds "):
        RunConfig(**settings, criteria_classifier_api_key_env="OPENAI_API_KEY").validate()
    RunConfig(**settings, criteria_classifier_api_key_env="CLASSIFIER_API_KEY").validate()

