"""Every reader of a required text says "blank" as the record readers do (``judge.plumbing.invisible_text.is_blank``):
a text of white space and characters that show nothing (a zero-width space, a byte order mark) is refused or dropped
as a blank one is, naming the field and row in each reader's own words.

Covered: pairwise data (``eval.pairwise``), ``judge-eval rank``'s instructions (``eval.ranking``), ``criteria: auto``
rows (``judge.criteria_auto``), the synthetic stages' inputs and answers (``train.synthetic``), judge-serve's
``/v1/judge`` items, pairs and custom criteria (``serve.schema``, ``judge.criteria``) and ``/get_reward``'s answers
(``judge.rewards.policy_answer``: a policy answer that shows nothing is one with nothing to judge) and the reward
client's instructions, from a prompt, a dataset column or a verl label (``judge.reward_clients``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from eval.pairwise.judging import load_pairs
from eval.ranking.rank import load_instructions
from judge.criteria import CriterionError, resolve_criterion
from judge.criteria_auto import expand_rows
from judge.plumbing.config_files import ConfigError
from judge.records import RecordError
from judge.rewards import policy_answer
from judge.wire import CustomCriterion
from serve.rewards import answer_of
from serve.schema import RequestError, parse_judge_request

#: Shows nothing: a zero-width space, a byte order mark, a space and a word joiner.
SHOWS_NOTHING = "\u200b\ufeff \u2060"
SCALE = "Критерий: точность.\n-1: ответ 1 лучше\n0: ответы равноценны\n1: ответ 2 лучше"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("field", ["instruction", "answer_1", "answer_2", "rubrics"])
def test_a_pairwise_text_that_shows_nothing_is_refused_naming_row_and_field(tmp_path, field):
    good = {"id": "p1", "instruction": "2+2?", "answer_1": "5", "answer_2": "4", "rubrics": SCALE}
    path = _jsonl(tmp_path / "pairs.jsonl", [good, {**good, "id": "p2", field: SHOWS_NOTHING}])
    with pytest.raises(ConfigError, match=rf"pairs.jsonl: line 2\.{field}: required text is empty$"):
        load_pairs(str(path))


@pytest.mark.parametrize("change, field", [
    ({"instruction": "\u200b"}, "instruction"),
    ({"criteria": [{"criteria_name": "\ufeff", "rubrics": "0: a"}]}, "criteria[0].criteria_name"),
    ({"criteria": [{"criteria_name": "c", "rubrics": SHOWS_NOTHING}]}, "criteria[0].rubrics"),
])  # fmt: skip
def test_a_rank_instruction_text_that_shows_nothing_is_refused_naming_row_and_field(tmp_path, change, field):
    good = {"prompt_id": 1, "instruction": "x", "meta": "m", "criteria": [{"criteria_name": "c", "rubrics": "0: a"}]}
    path = _jsonl(tmp_path / "instructions.jsonl", [good, {**good, "prompt_id": 2, **change}])
    with pytest.raises(RecordError) as caught:
        load_instructions(path)
    assert str(caught.value) == f"{path}: line 2: field '{field}': is empty"


@pytest.mark.parametrize("field", ["instruction", "answer"])
def test_a_criteria_auto_row_whose_text_shows_nothing_is_refused_naming_it(field, shipped_tfidf):
    rows = [{"instruction": "Напиши стихотворение о весне", "answer": "Весна пришла."}]
    with pytest.raises(ValueError, match=rf"^data.jsonl: row 1: '{field}' must be a non-empty string for criteria: auto"):
        expand_rows([rows[0], {**rows[0], field: SHOWS_NOTHING}], shipped_tfidf, "data.jsonl")


def test_a_labelled_row_whose_instruction_shows_nothing_is_refused_naming_it():
    from judge.criteria_auto.labelled import labelled_rows

    rows = [{"instruction": "Дай совет", "task_type": "Advice"}, {"instruction": SHOWS_NOTHING, "task_type": "Advice"}]
    with pytest.raises(ValueError, match=r"^src: row 1: empty or missing 'instruction'$"):
        labelled_rows(rows, "src")


def test_a_synthetic_stage_input_whose_instruction_shows_nothing_is_refused_naming_it():
    from train.synthetic.journal import require_fields

    rows = [{"id": "ins-1", "instruction": "а"}, {"id": "ins-2", "instruction": "\u200b"}]
    with pytest.raises(RecordError) as error:
        require_fields(rows, ("id", "instruction"), "instructions.jsonl")
    assert str(error.value).startswith("instructions.jsonl: row 1: field 'instruction': blank")


@pytest.mark.parametrize("name", ["instruction", "answer"])
def test_a_served_item_text_that_shows_nothing_is_refused_naming_it(name):
    item = {"instruction": "q", "answer": "a", "criteria": ["x"]} | {name: SHOWS_NOTHING}
    with pytest.raises(RequestError) as refused:
        parse_judge_request({"items": [item]})
    assert (refused.value.param, refused.value.message) == (f"items[0].{name}", f"items[0].{name}: must not be empty")


@pytest.mark.parametrize("name", ["instruction", "answer_1", "answer_2", "rubrics"])
def test_a_served_pair_text_that_shows_nothing_is_refused_naming_it(name):
    pair = {"instruction": "q", "answer_1": "a", "answer_2": "b", "rubrics": SCALE} | {name: "\u200b"}
    with pytest.raises(RequestError) as refused:
        parse_judge_request({"pairs": [pair]})
    assert (refused.value.param, refused.value.message) == (f"pairs[0].{name}", f"pairs[0].{name}: must not be empty")


@pytest.mark.parametrize("spec, field", [
    (CustomCriterion(name="\u200b", rubrics="0: нет\n1: да"), "name"),
    (CustomCriterion(name="Точность", rubrics=SHOWS_NOTHING), "rubrics"),
])  # fmt: skip
def test_a_custom_criterion_text_that_shows_nothing_is_refused_naming_it(spec, field):
    with pytest.raises(CriterionError) as refused:
        resolve_criterion(spec)
    assert (refused.value.field, str(refused.value)) == (field, "must not be empty")


def test_a_policy_answer_that_shows_nothing_has_nothing_to_judge():
    """/get_reward and the reward client judge no sample whose answer is empty: one that shows nothing gets the rule's
    empty_answer alike, where judge-serve would refuse it as an item's blank answer."""
    assert policy_answer(SHOWS_NOTHING) == "" and policy_answer("<think>x</think>\u200b", True) == ""
    assert answer_of("Вопрос?\u200b\ufeff", "Вопрос?") == ""
    assert policy_answer("\u200bДа.") == "\u200bДа."


def test_a_rank_candidate_answer_that_shows_nothing_is_an_empty_answer_not_an_item(tmp_path):
    """The judge stage loads items.jsonl with judge.load_records, which refuses an answer that shows nothing: such an
    answer is left out and counted as empty (scored by --empty-answer), as one of white space is."""
    import judge
    from eval.ranking.rank import AnswerRow, InstructionRow, content_key, write_items

    rows = [InstructionRow(prompt_id=k, instruction=f"Вопрос {k}?", reference_answer="", meta="m",
                           criteria=(("Грамотность", "0: плохо\n\n1: хорошо"),)) for k in (1, 2)]
    answers = {row.prompt_id: AnswerRow(prompt_id=row.prompt_id, model="m", answer=text,
                                        instruction_key=content_key(row.instruction))
               for row, text in zip(rows, ("Ответ.", SHOWS_NOTHING))}
    counts = write_items(rows, answers, tmp_path / "items.jsonl", unjudged=tmp_path / "unjudged.jsonl")
    assert counts == {"n_no_answer": 0, "n_empty_answer": 1, "n_items": 1, "n_kept": 0}
    assert [r.answer for r in judge.load_records(tmp_path / "items.jsonl")] == ["Ответ."]


def test_a_reward_prompt_whose_last_user_turn_shows_nothing_is_refused_before_anything_is_sent():
    """judge-serve would refuse the item's instruction as blank, failing the whole batch: the client names the row
    first, as it does a last user turn with no text at all."""
    from judge.plumbing.retry import RetryPolicy
    from judge.reward_clients import trl_reward_function
    from tests.support.scripted_endpoint import ScriptedEndpoint

    no_wait = RetryPolicy(max_retries=0, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0),
                          sleep=lambda s: None)
    prompts = [[{"role": "user", "content": "Опиши кота."}], [{"role": "user", "content": SHOWS_NOTHING}]]
    completion = [{"role": "assistant", "content": "Кот спит."}]
    with ScriptedEndpoint(lambda path, body: (500, {})) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=no_wait)
        with pytest.raises(ValueError, match=r"^prompts\[1\]: the last user turn has no text to judge the answer against$"):
            asyncio.run(reward(prompts=prompts, completions=[completion, completion]))
    assert endpoint.requests == []


@pytest.mark.parametrize("prompt", ["<|im_start|>user\n\u200b<|im_end|>\n<|im_start|>assistant\n", "   ",
                                    "<|im_start|>system\nТы поэт.<|im_end|>\n<|im_start|>user\n \u2060<|im_end|>\n"])
def test_a_reward_text_prompt_whose_user_turn_shows_nothing_is_refused_before_anything_is_sent(prompt):
    """A text prompt, templated or not, is refused as a conversation's blank last user turn is: judge-serve would
    refuse the item's instruction as blank, failing the whole batch."""
    from judge.plumbing.retry import RetryPolicy
    from judge.reward_clients import trl_reward_function
    from tests.support.scripted_endpoint import ScriptedEndpoint

    no_wait = RetryPolicy(max_retries=0, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0),
                          sleep=lambda s: None)
    with ScriptedEndpoint(lambda path, body: (500, {})) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=no_wait)
        with pytest.raises(ValueError, match=r"^prompts\[0\]: the last user turn has no text to judge the answer against$"):
            asyncio.run(reward(prompts=[prompt, "Опиши кота."], completions=["Кот спит.", "Кот спит."]))
    assert endpoint.requests == []


def test_a_reward_instruction_column_text_that_shows_nothing_is_refused_before_anything_is_sent():
    """An instruction taken from a dataset column is refused as the prompt's last user turn is: judge-serve would
    refuse the item, failing the whole batch."""
    from judge.plumbing.retry import RetryPolicy
    from judge.reward_clients import trl_reward_function
    from tests.support.scripted_endpoint import ScriptedEndpoint

    no_wait = RetryPolicy(max_retries=0, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0),
                          sleep=lambda s: None)
    prompts = [[{"role": "user", "content": "Опиши кота."}]] * 2
    completion = [{"role": "assistant", "content": "Кот спит."}]
    with ScriptedEndpoint(lambda path, body: (500, {})) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], instruction_column="instruction", retry=no_wait)
        with pytest.raises(ValueError, match=r"^instruction\[1\]: no instruction \(null or empty\)$"):
            asyncio.run(reward(prompts=prompts, completions=[completion, completion],
                               instruction=["Опиши кота.", SHOWS_NOTHING]))
    assert endpoint.requests == []


def test_a_verl_instruction_that_shows_nothing_is_no_instruction():
    from judge.reward_clients import sample_from_verl

    with pytest.raises(ValueError, match=r"^verl sample: no instruction in extra_info\['instruction'\]"):
        sample_from_verl("Ответ.", None, {"instruction": SHOWS_NOTHING, "criteria": ["Грамотность"]})


def test_a_rank_answer_outside_the_selection_that_shows_nothing_is_not_kept_either(tmp_path):
    """The items of instructions outside the run's selection kept for their verdicts follow the same rule as the
    run's own: one whose answer shows nothing has no item, which judge.load_records would refuse."""
    from eval.ranking.rank import AnswerRow, InstructionRow, content_key, item_id, write_items

    rows = [InstructionRow(prompt_id=k, instruction=f"Вопрос {k}?", reference_answer="", meta="m",
                           criteria=(("Грамотность", "0: плохо\n\n1: хорошо"),)) for k in (1, 2, 3)]
    texts = ("Ответ.", "Другой ответ.", SHOWS_NOTHING)
    answers = {row.prompt_id: AnswerRow(prompt_id=row.prompt_id, model="m", answer=text,
                                        instruction_key=content_key(row.instruction))
               for row, text in zip(rows, texts)}
    judged = {item_id(row, 0, text) for row, text in zip(rows, texts)}
    counts = write_items(rows[:1], answers, tmp_path / "items.jsonl", others=rows[1:], judged=judged)
    assert counts == {"n_no_answer": 0, "n_empty_answer": 0, "n_items": 1, "n_kept": 1}
