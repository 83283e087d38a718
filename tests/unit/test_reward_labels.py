"""A reward sample's criteria in the forms a ``/get_reward`` label takes, on the trl and verl paths too
(``judge.reward_clients``): none beside a ``task_type`` (the task's criteria set), ``"auto"`` (judge-serve's task
classifier chooses), or a list; and the dataset columns the trl function was told to read, checked at the call.

A scripted judge-serve records the exact ``/v1/judge`` payloads; the taxonomy's figures (the Editing task's 15
criteria, the largest task's 26, the 13 criteria for any text) are read off ``judge/data/taxonomy``."""

from __future__ import annotations

import asyncio

import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import (RewardSample, compute_score, request_chunks, sample_from_verl,
                                  trl_reward_function)
from judge.wire import JudgeResult
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0),
                      sleep=lambda s: None)


def _response(items: list[list[JudgeResult]]) -> dict:
    return {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
            "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
            "items": [{"index": i, "id": None, "results": [r.to_json() for r in rs]} for i, rs in enumerate(items)],
            "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def _scored(criterion: str, score: float) -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict", feedback="fb")


def _respond(path: str, body: dict) -> tuple:
    """Each item judged on two criteria, 2 and 0 (whatever it asked: the server's resolving is not under test)."""
    return 200, _response([[_scored("A", 2), _scored("B", 0)]] * len(body["items"]))


def test_trl_rows_send_their_criteria_as_get_reward_labels_give_them():
    """A row whose criteria are null beside a task_type goes without criteria (judge-serve judges its task's set),
    "auto" goes as "auto" (plain or JSON text), a list as the list. Each reward is (2/2 + 0/2) / 2 = 0.5."""
    with ScriptedEndpoint(_respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, retry=NO_WAIT)
        values = asyncio.run(reward(prompts=["Q1", "Q2", "Q3", "Q4"], completions=["a1", "a2", "a3", "a4"],
                                    criteria=[None, "auto", '"auto"', '["A"]'],
                                    task_type=["Editing", None, None, None]))
    assert endpoint.requests[0][1] == {"items": [
        {"instruction": "Q1", "answer": "a1", "task_type": "Editing"},
        {"instruction": "Q2", "answer": "a2", "criteria": "auto"},
        {"instruction": "Q3", "answer": "a3", "criteria": "auto"},
        {"instruction": "Q4", "answer": "a4", "criteria": ["A"]},
    ], "oversize": "fail"}  # fmt: skip
    assert values == [0.5, 0.5, 0.5, 0.5]


def test_trl_criteria_auto_for_every_sample_and_no_criteria_column():
    """criteria="auto" sends "auto" for every sample; criteria_column=None judges every row on its task's set, and a
    row with no task_type is refused naming it, before anything is sent."""
    with ScriptedEndpoint(_respond) as endpoint:
        auto = trl_reward_function(endpoint.base_url, criteria="auto", retry=NO_WAIT)
        asyncio.run(auto(prompts=["Q"], completions=["a"]))
        by_task = trl_reward_function(endpoint.base_url, criteria_column=None, retry=NO_WAIT)
        asyncio.run(by_task(prompts=["Q"], completions=["a"], task_type=["Editing"]))
        with pytest.raises(ValueError, match=r"^samples\[1\]\.criteria \(criteria_column=None\): expected a non-empty "
                                             r"list of criteria .* or none where task_type names the task"):
            asyncio.run(by_task(prompts=["Q", "Q"], completions=["a", "b"], task_type=["Editing", None]))
    assert [body["items"] for _, body in endpoint.requests] == [
        [{"instruction": "Q", "answer": "a", "criteria": "auto"}],
        [{"instruction": "Q", "answer": "a", "task_type": "Editing"}],
    ]


def test_verl_labels_with_no_criteria_or_auto():
    """A verl label (ground_truth or extra_info) with a task_type and no criteria is that task's set; "auto" is
    "auto"; neither, without a task_type, is refused naming where criteria are looked for."""
    by_task = sample_from_verl("ans", {"instruction": "Q", "task_type": "Editing"}, {"criteria": None})
    assert by_task == RewardSample("Q", "ans", None, None, (("task_type", "Editing"),))
    assert by_task.to_item() == {"instruction": "Q", "answer": "ans", "task_type": "Editing"}
    auto = sample_from_verl("ans", '{"instruction": "Q", "criteria": "auto"}', None)
    assert auto.to_item() == {"instruction": "Q", "answer": "ans", "criteria": "auto"}
    with pytest.raises(ValueError, match=r"^verl sample: criteria \(extra_info\['criteria'\] or the ground_truth "
                                         r"label\): expected a non-empty list"):
        sample_from_verl("ans", {"instruction": "Q"}, {})
    with ScriptedEndpoint(_respond) as endpoint:
        score = compute_score("d", "ans", None, {"instruction": "Q", "criteria": "auto"},
                              judge_url=endpoint.base_url, max_retries=0)
    assert endpoint.requests[0][1] == {"items": [{"instruction": "Q", "answer": "ans", "criteria": "auto"}],
                                       "oversize": "fail"}
    assert score["score"] == 0.5


@pytest.mark.parametrize("ground_truth, words", [(72, "an integer"), (1.5, "a number"), (["a"], "a list")])
def test_a_verl_ground_truth_neither_label_nor_text_is_refused_where_it_would_be_read(ground_truth, words):
    """A ground_truth that is no label and no text (a parquet column of numbers) would be the reference answer, as
    its string form is; dropped, the judge would rate every answer against no reference without a word. Refused
    naming ground_truth, as a number in extra_info['reference_answer'] is; where extra_info gives the reference,
    the ground_truth is not read and is left alone (another reward function's)."""
    info = {"instruction": "Q", "criteria": ["Креативность"]}
    with pytest.raises(ValueError, match=r"^verl sample: ground_truth \(.*\): expected a string or null, got "
                                         + words + r".*left alone where extra_info\['reference_answer'\] gives the "
                                         r"reference \(\"\" for none\)$"):
        sample_from_verl("ans", ground_truth, info)
    given = sample_from_verl("ans", ground_truth, {**info, "reference_answer": "72"})
    assert given.reference_answer == "72"
    # the way past the refusal it names: an empty reference_answer, judged against none, the ground_truth left alone
    assert sample_from_verl("ans", ground_truth, {**info, "reference_answer": ""}).reference_answer is None
    assert sample_from_verl("ans", "72", info).reference_answer == "72"
    assert sample_from_verl("ans", None, info).reference_answer is None


def test_requests_are_cut_by_the_judgments_auto_and_task_labels_come_to():
    """judge-serve bounds a request's judgments once resolved (512 by default): an "auto" sample may come to the
    largest task's 26 (512 // 26 = 19 per request), an Editing one to its 15 (512 // 15 = 34)."""
    auto = [RewardSample("Q", "a", "auto")] * 20
    assert [len(chunk) for chunk in request_chunks(auto, max_items=64, max_judgments=512)] == [19, 1]
    editing = [RewardSample("Q", "a", None, None, (("task_type", "Editing"),))] * 35
    assert [len(chunk) for chunk in request_chunks(editing, max_items=64, max_judgments=512)] == [34, 1]


def test_a_cut_completion_without_criteria_fails_on_its_tasks_set_or_on_those_for_any_text():
    """A completion trl's length limit cut is not sent; it fails (cut) on the criteria judge-serve would judge: the
    Editing task's 15, or for "auto" the 13 criteria for any text (a failed choice's). A cut "auto" row that names
    its task is refused as judge-serve refuses it."""
    with ScriptedEndpoint(_respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, retry=NO_WAIT, end_token_ids=[0])
        extra: dict = {}
        values = asyncio.run(reward(prompts=["Q1", "Q2"], completions=["cut", "cut"], completion_ids=[[5], [5]],
                                    criteria=[None, "auto"], task_type=["Editing", None],
                                    log_extra=lambda column, vs: extra.setdefault(column, vs)))
        with pytest.raises(ValueError, match=r"^samples\[0\]: criteria 'auto' chooses the task from the text, but "
                                             r"the sample names its task"):
            asyncio.run(reward(prompts=["Q"], completions=["cut"], completion_ids=[[5]], criteria=["auto"],
                               task_type=["Editing"]))
    assert endpoint.requests == []
    assert values == [0.0, 0.0]
    verdicts = extra["pollux_judge_verdicts"]
    assert [v.count("failed (cut)") for v in verdicts] == [15, 13]


@pytest.mark.parametrize("argument, columns, message", [
    ("criteria_column", {"task_type": ["Editing"]},
     "criteria_column='criteria': trl passed no such dataset column; it passed ['task_type', 'trainer_state']"),
    ("instruction_column", {"criteria": ['["A"]']},
     "instruction_column='question': trl passed no such dataset column; it passed ['criteria', 'trainer_state']"),
    ("reference_column", {"criteria": ['["A"]']},
     "reference_column='gold': trl passed no such dataset column; it passed ['criteria', 'trainer_state']"),
])
def test_a_missing_dataset_column_is_named_with_the_columns_trl_passed(argument, columns, message):
    """A column the function was told to read that trl does not pass: a ValueError naming the argument, the column
    and what trl passed, before any request (not a bare KeyError from the middle of the batch)."""
    named = {"instruction_column": {"instruction_column": "question"},
             "reference_column": {"reference_column": "gold"}}.get(argument, {})
    with ScriptedEndpoint(_respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, retry=NO_WAIT, **named)
        with pytest.raises(ValueError) as refused:
            asyncio.run(reward(prompts=["Q"], completions=["a"], trainer_state=None, **columns))
    assert str(refused.value) == message
    assert endpoint.requests == []


BREVITY = {"name": "Краткость", "rubrics": {"0": "длинно", "1": "приемлемо", "2": "кратко"}}


@pytest.mark.parametrize("value", [BREVITY, '{"name": "Краткость", "rubrics": {"0": "длинно", "1": "приемлемо", '
                                            '"2": "кратко"}}'])
def test_one_criterion_object_is_a_list_of_one_as_one_name_is(value):
    """One {name, rubrics} object, as a mapping or a JSON string of one, is that criterion, as one name is."""
    from judge.reward_clients import label_criteria

    assert label_criteria(value, "labels[0].criteria") == (BREVITY,)
    assert label_criteria("Краткость", "labels[0].criteria") == ("Краткость",)


@pytest.mark.parametrize(("value", "message"), [
    ('["Краткость", ', r"^labels\[3\]\.criteria: not valid JSON: Expecting value: line 1 column 15 \(char 14\)$"),
    # Python's own words for these told the client to call sys.set_int_max_str_digits(), or read NaN as a number
    ("[" + "9" * 5000 + "]", r"^labels\[3\]\.criteria: not valid JSON: a number of 5000 digits$"),
    ('["Краткость", NaN]', r"^labels\[3\]\.criteria: not valid JSON: NaN is not JSON \(RFC 8259 has no NaN or "
                           r"Infinity\)$"),
    ("  {'name': 'Краткость'}", r"^labels\[3\]\.criteria: not valid JSON: Expecting property name enclosed in double "
                                r"quotes: line 1 column 4 \(char 3\)$"),
])  # fmt: skip
def test_a_string_meant_as_json_that_is_not_is_refused_not_read_as_a_name(value, message):
    """A string opening with [ or { that fails to parse was meant as JSON: read as one criterion's name, the judge
    would rate the answer on a criterion named '["Краткость", '."""
    from judge.reward_clients import label_criteria

    with pytest.raises(ValueError, match=message):
        label_criteria(value, "labels[3].criteria")
