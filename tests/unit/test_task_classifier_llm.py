"""The llm task-classifier method: exact guided-choice payloads, logprob probabilities, failures as values, and a
real vLLM server constrained to the taxonomy's names.

The tests of this subject that start heavy components are in tests/integration/serving/test_task_classifier_llm.py.
"""

from __future__ import annotations

import json
import math

import pytest

from judge import load_taxonomy
from judge.checkpoints import NEUTRAL_SAMPLING
from judge.criteria_auto import build_classifier, expand_criteria, fallback_criteria, leaf_of
from judge.criteria_auto.llm import SYSTEM_PROMPT, LLMClassifier, render_level_prompt
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint, chat_completion

TAX = load_taxonomy()


def _answer(text: str, logprobs: list[float] | None):
    body = chat_completion(text, "scripted")
    if logprobs is not None:
        body["choices"][0]["logprobs"] = {"content": [{"token": "t", "logprob": lp} for lp in logprobs]}
    return body


def _scripted(table: dict[str, tuple[str, list[float] | None]]):
    """Answer each level by the first option list entry found in ``table`` (keyed by a name among the options)."""

    def respond(path, body):
        options = body.get("structured_outputs", {}).get("choice") or body.get("guided_choice")
        for key, (text, logprobs) in table.items():
            if key in options:
                return 200, _answer(text, logprobs)
        return 500, {"error": {"message": "unscripted"}}

    return respond


def test_llm_walks_the_taxonomy_with_guided_choice_payloads():
    """Level 1 chooses among the 35 task types, level 2 among that type's subtypes; exact bodies on the wire."""
    table = {"Code creation": ("Code creation", [-0.1, -0.2]), "Python": ("Python", [-0.05])}
    with ScriptedEndpoint(_scripted(table)) as ep:
        clf = build_classifier("llm", base_url=ep.base_url, model="scripted")
        choice = clf.choose("Напиши функцию на Python")
        bodies = ep.bodies("/v1/chat/completions")
    types = [(t, next(x.names_ru[1] for x in TAX.tasks if x.task_type == t)) for t in TAX.task_types]
    assert bodies[0] == {
        "model": "scripted",
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_level_prompt("Напиши функцию на Python", 0, [], types)},
        ],
        "temperature": 0.0,
        # stated neutral, or vLLM takes a penalty or top-k from the model's generation_config.json: a choice the
        # logprobs (taken before those processors) do not describe
        **NEUTRAL_SAMPLING,
        "max_tokens": 32,
        "logprobs": True,
        "structured_outputs": {"choice": TAX.task_types},
    }
    assert bodies[1]["structured_outputs"] == {"choice": ["Python", "C++", "C#", "JavaScript", "SQL"]}
    assert "Уже выбрано: Code creation." in bodies[1]["messages"][1]["content"]
    assert len(bodies) == 2  # Code creation / Python is a leaf: no third level
    assert choice.label == "Code creation / Python" and choice.fallback is False
    assert choice.probability == pytest.approx(math.exp(-0.35))  # exp(-0.1-0.2) * exp(-0.05)
    assert choice.criteria == leaf_of("Code creation / Python").criteria


def test_a_recorded_choice_names_the_neutral_sampling_it_was_made_under():
    """The sampling fields a request states move a choice, so the identity a resumed expansion checks names them: a
    choice recorded without them (vLLM then applied the model's own generation_config.json) is made again."""
    identity = json.loads(LLMClassifier("http://127.0.0.1:9", "m").identity)
    assert identity["sampling"] == dict(NEUTRAL_SAMPLING)


def test_llm_three_levels_and_older_guided_choice_parameter():
    """A three-level leaf takes three requests; guided_param="guided_choice" sends the pre-0.11 vLLM field."""
    table = {"Summarizing": ("Summarizing", [0.0]), "Brief retelling": ("Brief retelling", [0.0]),
             "Scientific text": ("Literary text", [0.0])}  # fmt: skip
    with ScriptedEndpoint(_scripted(table)) as ep:
        clf = LLMClassifier(ep.base_url, "scripted", guided_param="guided_choice")
        choice = clf.choose("Перескажи кратко рассказ")
        bodies = ep.bodies("/v1/chat/completions")
    assert len(bodies) == 3 and all("structured_outputs" not in b for b in bodies)
    assert bodies[2]["guided_choice"] == ["Scientific text", "Official text", "Journalistic text", "Literary text"]
    assert choice.label == "Summarizing / Brief retelling / Literary text" and choice.probability == 1.0


def test_llm_answer_outside_the_options_is_a_fallback_value():
    """A server that ignores guided choice: the choice falls back to the shared criteria and names the answer."""
    with ScriptedEndpoint(lambda path, body: (200, _answer("Кулинария", None))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Как испечь хлеб?")
    assert choice.fallback is True and choice.label == "" and "'Кулинария' at level 0" in choice.reason
    assert choice.level == "fallback"
    assert choice.criteria == fallback_criteria()
    items, record = expand_criteria("Как испечь хлеб?", "Никак.", choice)
    assert len(items) == len(fallback_criteria()) and items[0]["task_type"] == "" and record["label"] == ""


def test_llm_without_logprobs_has_no_probability_and_no_threshold():
    """No logprobs in the response: probability None, the leaf's own criteria (the threshold cannot apply)."""
    with ScriptedEndpoint(_scripted({"Advice": ("Advice", None)})) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert choice.probability is None and choice.fallback is False
    assert choice.criteria == leaf_of("Advice").criteria


def test_llm_decides_by_the_task_types_probability_then_the_leafs_share():
    """As for every method (docs/criteria-auto.md): the threshold applies to the task type's probability, the first
    level's answer, not to the leaf's; a leaf under half of its type (the lower levels' answers) gives the criteria
    the type's leaves share. Type 0.95, then 0.7 and 0.7 below it: the leaf's 0.4655 would have fallen back under a
    threshold of 0.5, but the type is sure (0.95) and the leaf holds 0.49 of it: the task type decides."""
    table = {"Summarizing": ("Summarizing", [math.log(0.95)]), "Brief retelling": ("Brief retelling", [math.log(0.7)]),
             "Scientific text": ("Literary text", [math.log(0.7)])}  # fmt: skip
    with ScriptedEndpoint(_scripted(table)) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Перескажи кратко рассказ")
    assert (choice.level, choice.fallback) == ("task_type", False)
    assert choice.task_type_probability == pytest.approx(0.95) and choice.probability == pytest.approx(0.95 * 0.49)
    assert "leaf share 0.490 of its task type" in choice.reason


def test_llm_low_probability_falls_back():
    """A task-type probability below the threshold (exp(-1) = 0.37 < 0.5) falls back with the reason."""
    with ScriptedEndpoint(_scripted({"Advice": ("Advice", [-1.0])})) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert choice.fallback is True and choice.label == "Advice" and "0.368 < threshold 0.500" in choice.reason


def test_a_failed_classifier_request_is_that_rows_fallback_not_the_end_of_the_run():
    """judge-eval's expansion: the classifier endpoint answering 400 (an instruction over its context) on the first
    row and well on the second: the first row falls back to the criteria for any text with the failure in its
    reason, the second is classified as usual (judge-serve answers such a request 502 instead: its client retries)."""
    from judge.criteria_auto.expansion import expand_rows

    table = {"Advice": ("Advice", [-0.01])}
    scripted = _scripted(table)
    calls = iter(range(100))

    def respond(path, body):
        return (400, {"error": {"message": "too long"}}) if next(calls) == 0 else scripted(path, body)

    with ScriptedEndpoint(respond) as ep:
        items, choices = expand_rows([{"instruction": "Дай совет", "answer": "a"},
                                      {"instruction": "Дай совет", "answer": "b"}], LLMClassifier(ep.base_url, "scripted"))
    first, second = choices
    assert (first["fallback"], first["level"]) == (True, "fallback") and first["criteria"] == list(fallback_criteria())
    assert first["reason"].startswith("the classifier failed: HTTPStatusError") and "400" in first["reason"]
    assert second["fallback"] is False and second["task_type"] == "Advice"


@pytest.mark.parametrize(("status", "data", "said"), [
    (200, b"<html>", "HTTP 200, but the answer is invalid JSON (Expecting value at line 1, column 1)"),
    (201, b"<html>", "HTTP 201, but the answer is invalid JSON (Expecting value at line 1, column 1)"),
    (203, b'{"choices": "\xff"}', "HTTP 203, but the answer is not UTF-8 text (byte 0xff at byte 13)"),
])
def test_a_success_whose_body_is_unreadable_is_a_failed_choice_naming_its_status(status, data, said):
    """raise_for_status passes any 2xx, so a proxy's 201 page is said as a 201, not as an HTTP 200."""
    with ScriptedEndpoint(lambda path, body: (status, RawBody(data))) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert choice.is_failure and choice.reason.endswith(f"llm's response at level 0 is unusable: {said}")


@pytest.mark.parametrize("bad", [math.nan, 3.0])
def test_a_logprob_that_is_no_log_probability_is_a_failed_choice(bad, caplog):
    """An endpoint answering a token logprob of NaN (exp(NaN) = NaN passes `< threshold` as False, so the leaf was
    taken, and judge-serve's JSON response then failed on NaN) or 3.0 (a probability of 20): a failed choice whose
    reason names the logprob, rendered as strict JSON, and counted as a failure by the expansion."""
    import json
    import logging

    from judge.criteria_auto.expansion import expand_rows

    def respond(path, body):
        bad_row = "Напиши функцию" in body["messages"][1]["content"]
        return 200, _answer("Advice", [-0.01, bad] if bad_row else [-0.01])

    with ScriptedEndpoint(respond) as ep:
        clf = LLMClassifier(ep.base_url, "scripted")
        choice = clf.choose("Напиши функцию на Python")
        with caplog.at_level(logging.WARNING, logger="judge.criteria_auto.expansion"):
            _, choices = expand_rows([{"instruction": "Напиши функцию", "answer": "a"},
                                      {"instruction": "Дай совет", "answer": "b"}], clf)
    assert choice.is_failure and (choice.level, choice.fallback, choice.label) == ("fallback", True, "")
    assert f"token 1 ('t') has logprob {bad!r}, not a finite number <= 0" in choice.reason
    assert "at level 0" in choice.reason and choice.criteria == fallback_criteria()
    json.dumps(choice.to_dict(), allow_nan=False)
    assert [c["label"] for c in choices] == ["", "Advice"]
    assert "the task classifier (llm) failed on 1 of 2 rows" in caplog.text


def test_a_non_numeric_logprob_is_a_failed_choice_too():
    """A logprob that is no number (null here) fails the choice the same way, naming it."""
    def respond(path, body):
        answer = _answer("Advice", None)
        answer["choices"][0]["logprobs"] = {"content": [{"token": "Adv", "logprob": None}]}
        return 200, answer

    with ScriptedEndpoint(respond) as ep:
        choice = LLMClassifier(ep.base_url, "scripted").choose("Дай совет")
    assert choice.is_failure and "token 0 ('Adv') has logprob None" in choice.reason


def test_llm_with_logprobs_for_the_task_type_only_still_tests_the_threshold():
    """An endpoint that gave logprobs for the task type but none below it: the threshold test was skipped with the
    leaf-share test, so a task type at 0.135 took its leaf. The type's probability is tested whenever it is known;
    only the leaf share goes untested, and the reason says which."""
    unsure = {"Literary text": ("Literary text", [-2.0]), "Poetry": ("Poetry", [])}
    with ScriptedEndpoint(_scripted(unsure)) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Напиши стих")
    assert (choice.level, choice.fallback, choice.label) == ("fallback", True, "Literary text / Poetry")
    assert choice.criteria == fallback_criteria() and choice.task_type_probability == pytest.approx(math.exp(-2))
    assert choice.reason == ("task type probability 0.135 < threshold 0.500; no logprobs from the endpoint at level 1: "
                             "the leaf-share test was not applied")
    sure = {"Literary text": ("Literary text", [-0.1]), "Poetry": ("Poetry", [])}
    with ScriptedEndpoint(_scripted(sure)) as ep:
        choice = LLMClassifier(ep.base_url, "scripted", threshold=0.5).choose("Напиши стих")
    assert (choice.level, choice.probability) == ("leaf", None) and choice.criteria == leaf_of(choice.label).criteria
    assert choice.reason == ("no logprobs from the endpoint at level 1: the leaf-share test was not applied, the "
                             "answered leaf taken (task type probability 0.905 >= threshold 0.500)")
