"""A reward sample's text fields as the trl and verl paths read them: a pandas frame's empty cell (NaN) is no
reference answer, another type is refused naming its field and row (it reached the JSON encoder as "Out of range
float values are not JSON compliant"), and a verl ground truth meant as a JSON label that is not valid JSON is
refused rather than taken for a reference answer."""

from __future__ import annotations

import asyncio

import pytest

from judge.plumbing.endpoint_unusable import EndpointUnusable
from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import sample_from_verl, trl_reward_function
from tests.support.deep_json import nested_arrays
from tests.support.judge_in_process import brevity_scored
from tests.support.scripted_endpoint import ScriptedEndpoint

NAN = float("nan")
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}
INFO = {"instruction": "Напиши стих о весне.", "criteria": ["Креативность"]}


def test_verl_reads_a_nan_reference_as_none_and_refuses_another_type_naming_it():
    assert sample_from_verl("Весна.", None, {**INFO, "reference_answer": NAN}).reference_answer is None
    assert sample_from_verl("Весна.", None, {**INFO, "reference_answer": "Эталон"}).reference_answer == "Эталон"
    with pytest.raises(ValueError, match=r"^verl sample: reference_answer \(extra_info\['reference_answer'\] or the "
                                         r"ground_truth label\): expected a string or null, got a list$"):
        sample_from_verl("Весна.", None, {**INFO, "reference_answer": ["Эталон"]})
    with pytest.raises(ValueError, match=r"^verl sample: no instruction in extra_info\['instruction'\]"):
        sample_from_verl("Весна.", None, {**INFO, "instruction": NAN})  # was judged as the instruction "nan"


def test_verl_refuses_a_ground_truth_opening_as_json_that_is_not():
    """'{bad json' was taken for the reference answer, and the label it was meant to be (its criteria) lost; a plain
    ground truth is still the reference answer."""
    with pytest.raises(ValueError, match=r"^verl sample: ground_truth: opens with '\{' but is invalid JSON "
                                         r"\(Expecting ',' delimiter at line 1, column 30\); a reference answer that "
                                         r"opens so goes in extra_info\['reference_answer'\]$"):
        sample_from_verl("Весна.", '{"criteria": ["Креативность"]', INFO)
    assert sample_from_verl("Весна.", "Эталон", INFO).reference_answer == "Эталон"


def test_verl_refuses_a_ground_truth_nested_past_what_json_loads_holds_in_words():
    """A ground truth opening as JSON but nested past the recursion limit: json.loads' RecursionError went through as
    a traceback; it is refused as any unreadable label is, in the data readers' words."""
    deep = '{"criteria": ' + nested_arrays(100_000) + "}"
    with pytest.raises(ValueError, match=r"^verl sample: ground_truth: opens with '\{' but is unreadable JSON: "
                                         r"nested too deeply; a reference answer that opens so"):
        sample_from_verl("Весна.", deep, INFO)


def test_trl_reads_a_nan_reference_as_none_and_names_a_bad_cell():
    """The reference column's NaN row is sent without a reference; a number in the instruction column is refused
    naming the column and row, before any request."""
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], reference_column="ref",
                                     instruction_column="task", retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        values = asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"], ref=[NAN, "Эталон"],
                                    task=["Вопрос 0", "Вопрос 1"]))
        assert values == [1.0, 1.0]
        with pytest.raises(ValueError, match=r"^task\[1\]: expected a string or null, got "):
            asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"], ref=[None, None], task=["Вопрос", 3]))
    (_, body), = endpoint.requests
    assert [item.get("reference_answer") for item in body["items"]] == [None, "Эталон"]
    assert [item["instruction"] for item in body["items"]] == ["Вопрос 0", "Вопрос 1"]


def test_the_clients_refuse_a_criterion_named_twice_before_sending():
    """/v1/judge judges what it is asked: a sample listing "Креативность" and its taxonomy id, or one custom
    criterion twice, had it judged twice and weigh twice in the reward (the route's /get_reward refuses such a
    label). Both clients now refuse it before any request, naming the second mention; different criteria, or
    one name the server cannot resolve (its own refusal names it), are sent as before."""
    with pytest.raises(ValueError, match=r"^verl sample: criteria \(extra_info\['criteria'\] or the ground_truth "
                                         r"label\)\[1\]: names the criterion at \[0\] \(Креативность\) again: it "
                                         r"would be judged twice and weigh twice in the reward$"):
        sample_from_verl("Весна.", None, {**INFO, "criteria": ["Креативность", "Creativity"]})
    assert len(sample_from_verl("Весна.", None, {**INFO, "criteria": ["Креативность", BREVITY]}).criteria) == 2
    assert len(sample_from_verl("Весна.", None, {**INFO, "criteria": ["Нет такого", "Нет такого"]}).criteria) == 2
    unknown_task = {**INFO, "criteria": ["Креативность"] * 2, "task_type": "Нет такой задачи"}
    assert len(sample_from_verl("Весна.", None, unknown_task).criteria) == 2  # the server names the task
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria_column="crit",
                                     retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        with pytest.raises(ValueError, match=r"^crit\[1\]\[2\]: names the criterion at \[0\] \(Краткость\) again"):
            asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"],
                               crit=[[BREVITY], [BREVITY, "Креативность", dict(BREVITY)]]))
        fixed = trl_reward_function(endpoint.base_url, criteria=[BREVITY, BREVITY],
                                    retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        with pytest.raises(ValueError, match=r"^criteria\[1\]: names the criterion at \[0\]"):
            asyncio.run(fixed(prompts=["Q0"], completions=["a"]))
    assert endpoint.requests == []


@pytest.mark.parametrize("bad", [5, ["Креативные задания"]], ids=["number", "list"])
def test_the_clients_refuse_a_task_field_that_is_not_text_naming_it(bad):
    """A task field that is a number or a list was passed over on the trl and verl paths, where /get_reward refuses
    the label ("labels[0].task_type: must be a string"): a row with criteria was judged on the default rubric
    variants, and a row without was refused for its criteria. Both now name the task field; null, NaN and blank
    still mean no task."""
    with pytest.raises(ValueError, match=r"^verl sample: task_subtype \(extra_info\['task_subtype'\] or the "
                                         r"ground_truth label\): expected a string or null, got "):
        sample_from_verl("Весна.", None, {**INFO, "task_subtype": bad})
    with pytest.raises(ValueError, match=r"^verl sample: task_type \(extra_info\['task_type'\] or the ground_truth "
                                         r"label\): expected a string or null, got "):
        sample_from_verl("Весна.", {"task_type": bad}, {"instruction": "Напиши стих о весне."})
    assert sample_from_verl("Весна.", None, {**INFO, "task_type": NAN, "task_subtype": "  "}).task == ()
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY],
                                     retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        with pytest.raises(ValueError, match=r"^task_type\[1\]: expected a string or null, got "):
            asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"], task_type=[None, bad]))
        assert asyncio.run(reward(prompts=["Q0", "Q1"], completions=["a", "b"], task_type=[None, NAN])) == [1.0, 1.0]
    assert all("task_type" not in item for _, body in endpoint.requests for item in body["items"])


def test_trl_names_a_column_or_completions_of_another_length_than_the_prompts():
    """trl passes one value of each dataset column per prompt. Called otherwise (a column cut short, a misaligned
    batch), the function stopped with a bare IndexError, or paired rows by zip and returned fewer rewards than
    prompts; it now names the list and both counts, before any request."""
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, reference_column="ref",
                                     retry=RetryPolicy(max_retries=0, backoff_s=0.0))
        two = {"prompts": ["Q0", "Q1"], "completions": ["a", "b"], "criteria": [[BREVITY]] * 2, "ref": [None] * 2}
        for changed, message in [({"criteria": [[BREVITY]]}, r"^criteria: 1 value for 2 prompts; "),
                                 ({"ref": [None] * 3}, r"^ref: 3 values for 2 prompts; "),
                                 ({"task_type": ["Креативные задания"]}, r"^task_type: 1 value for 2 prompts; "),
                                 ({"completions": ["a"]}, r"^completions: 1 completion for 2 prompts; ")]:
            with pytest.raises(ValueError, match=message):
                asyncio.run(reward(**{**two, **changed}))
        assert endpoint.requests == []
        assert asyncio.run(reward(**two)) == [1.0, 1.0]


def test_trl_names_a_bad_row_before_it_asks_a_judge_that_is_down():
    """The rows are read before the first contact with judge-serve: a bad row with judge-serve down was told as the
    endpoint's failure (EndpointUnusable), which hid the data's error until the server came back."""
    from judge.plumbing.processes import free_port

    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    reward = trl_reward_function(dead, criteria=[BREVITY], retry=RetryPolicy(max_retries=0, backoff_s=0.0))
    with pytest.raises(ValueError, match=r"^task_type\[0\]: expected a string or null, got "):
        asyncio.run(reward(prompts=["Q0"], completions=["a"], task_type=[5]))
    with pytest.raises(EndpointUnusable):  # a good row: judge-serve is asked, and its absence said
        asyncio.run(reward(prompts=["Q0"], completions=["a"]))
