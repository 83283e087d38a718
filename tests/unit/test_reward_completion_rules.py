"""One reading of a trl completion for every trl reward: the GRPO recipe's rewards (``train.grpo_rewards``) and the
trl judge client (``judge.reward_clients.trl_reward_function``) take the same text from a completion and call the same
completions cut (``judge.rewards.completion_text``, ``judge.rewards.cut_completions``)."""

from __future__ import annotations

import asyncio

import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import trl_reward_function
from judge.rewards import completion_reasoning, completion_text, content_text, cut_completions, policy_answer
from tests.support.judge_in_process import brevity_scored
from tests.support.scripted_endpoint import ScriptedEndpoint
from train.grpo_rewards import agreement_reward, format_reward

NO_WAIT = RetryPolicy(max_retries=0, backoff_s=0.0)
IM_END = 151645
ENDS = frozenset({IM_END})
#: A tagged verdict the GRPO rewards pay in full against an expert's 2 (well-formed, reasoned, agreeing).
VERDICT = "[FEEDBACK] Ошибок нет вовсе. [RESULT] 2 [END]"
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}

CASES = [
    # trl's structured content (prompts with images): the text parts joined, back to back; the image part left out
    pytest.param([{"role": "assistant", "content": [{"type": "text", "text": "[FEEDBACK] Ошибок нет вовсе. "},
                                                    {"type": "image"}, {"type": "text", "text": "[RESULT] 2 [END]"}]}],
                 [5, IM_END], VERDICT, False, id="typed-parts"),
    # trl's tool loop: a tool call, the tool's output, the policy's last turn; the tool's words are not the policy's
    pytest.param([{"role": "assistant", "content": None,
                   "tool_calls": [{"type": "function", "function": {"name": "calc", "arguments": {}}}]},
                  {"role": "tool", "name": "calc", "content": "[RESULT] 0 [END]"},
                  {"role": "assistant", "content": VERDICT}],
                 [5, IM_END], VERDICT, False, id="multi-message"),
    # an empty answer that ended at its end-of-sequence token is [eos]; no ids at all ended in no end id
    pytest.param(VERDICT, [], VERDICT, True, id="empty-ids"),
    pytest.param(VERDICT, [5, 6], VERDICT, True, id="ids-ending-elsewhere"),
    pytest.param(VERDICT, [5, IM_END], VERDICT, False, id="text-whole"),
]  # fmt: skip


@pytest.mark.parametrize(("completion", "ids", "text", "cut"), CASES)
def test_the_grpo_rewards_and_the_trl_client_read_a_completion_alike(completion, ids, text, cut):
    assert completion_text(completion) == text
    assert cut_completions([ids], ENDS, 1) == [cut]

    # The GRPO rewards: the text is VERDICT, paid in full whether cut or not: a tagged verdict written whole to its
    # [END] before the length limit stands, as judge-serve reads one (tests/unit/test_grpo_cut_tagged_verdicts.py);
    # the same cut fails an integer verdict (agreement 0.0).
    columns = dict(completions=[completion], verdict_format=["tagged"], scale_levels=[[0, 1, 2]], scale_best=[2],
                   completion_ids=[ids], end_token_ids=ENDS)
    assert format_reward(**columns) == [1.0]
    assert agreement_reward(reference_scores=[[2]], **columns) == [1.0]
    integer = dict(columns, completions=["<think>Ошибок нет вовсе.</think>\n\n2"], verdict_format=["integer"])
    assert agreement_reward(reference_scores=[[2]], **integer) == [0.0 if cut else 1.0]

    # The trl client: a cut completion is not sent (its criterion fails, 0.0); a whole one is sent as that text.
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT, end_token_ids=ENDS)
        values = asyncio.run(reward(prompts=[[{"role": "user", "content": "Вопрос"}]], completions=[completion],
                                    completion_ids=[ids]))
    sent = [] if cut else [("/v1/judge", {"items": [{"instruction": "Вопрос", "answer": text, "criteria": [BREVITY]}],
                                          "oversize": "fail"})]
    assert endpoint.requests == sent
    assert values == [0.0 if cut else 1.0]


def test_a_completion_that_is_no_text_nor_messages_is_refused_naming_its_row():
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT)
        with pytest.raises(ValueError, match=r"^completions\[1\]: a completion must be text or a list of chat "
                                             r"messages, got an integer$"):
            asyncio.run(reward(prompts=["Q0", "Q1"], completions=["A0", 7]))
    assert endpoint.requests == []


@pytest.mark.parametrize(("read", "value", "said"), [
    (content_text, 7, "a message's content must be text or a list of typed parts, got an integer"),
    (content_text, {"text": "Ответ"}, "a message's content must be text or a list of typed parts, got an object"),
    (completion_text, None, "a completion must be text or a list of chat messages, got null"),
    (completion_text, ["Ответ"], "a completion must be text or a list of chat messages, got a list"),
    (completion_text, 2.5, "a completion must be text or a list of chat messages, got a number"),
])  # fmt: skip
def test_a_completion_of_the_wrong_json_kind_is_named_in_jsons_words(read, value, said):
    """A completion comes from the wire as JSON: the refusal names its JSON kind (an object, null), not a Python class
    (dict, NoneType). A list of anything but messages is still "a list"."""
    with pytest.raises(ValueError) as refused:
        read(value)
    assert str(refused.value) == said


def test_the_id_lists_must_match_the_completions():
    with pytest.raises(ValueError, match=r"^completion_ids: 1 id lists for 2 completions$"):
        cut_completions([[IM_END]], ENDS, 2)


REASONING = "Ошибок нет вовсе, ответ краток."


@pytest.mark.parametrize("field", ["reasoning_content", "thinking", "reasoning"])
def test_a_reasoning_trl_parsed_apart_is_put_back_before_the_answer(field):
    """trl's ``parse_response`` (a tokenizer with a response template, or tools) returns a Qwen3 turn as
    ``{"reasoning_content": ..., "content": "2"}``: read as the content alone, every reasoned integer verdict looked
    like a bare score, and the recipe's format reward paid 0.0 for all of them."""
    completion = [{"role": "assistant", field: f"\n{REASONING}\n", "content": "\n2"}]
    # As trl/chat_templates/qwen3.jinja renders the turn: <think>\n + reasoning (its own newlines stripped) +
    # \n</think>\n\n + the content (its leading newlines stripped).
    assert completion_text(completion) == f"<think>\n{REASONING}\n</think>\n\n2"
    columns = dict(completions=[completion], verdict_format=["integer"], scale_levels=[[0, 1, 2]], scale_best=[2])
    assert format_reward(**columns) == [1.0]
    assert agreement_reward(reference_scores=[[2]], **columns) == [1.0]

    # The answer judged is still what follows the reasoning: the trl client sends "2", not the reasoning.
    with ScriptedEndpoint(brevity_scored) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[BREVITY], retry=NO_WAIT)
        asyncio.run(reward(prompts=[[{"role": "user", "content": "Вопрос"}]], completions=[completion]))
    assert [item["answer"] for _, body in endpoint.requests for item in body["items"]] == ["2"]


def test_an_empty_or_absent_reasoning_leaves_the_content_as_it_is():
    assert completion_text([{"role": "assistant", "reasoning_content": " \n", "content": "2"}]) == "2"
    assert completion_text([{"role": "assistant", "reasoning_content": None, "content": "2"}]) == "2"
    # A bare score with no reasons is still no well-formed verdict.
    assert format_reward(completions=[[{"role": "assistant", "content": "2"}]], verdict_format=["integer"],
                         scale_levels=[[0, 1, 2]], scale_best=[2]) == [0.0]


def test_a_reasoning_also_left_inline_or_holding_a_close_tag_is_not_put_back():
    """A server that returns the reasoning apart and inline too: put back, it was read twice, and the answer judged
    was the second block and the integer. A reasoning holding a ``</think>``: put back, its words after the tag were
    read as the answer. Either is read as its content alone, as before the reasoning was put back."""
    inline = f"<think>\n{REASONING}\n</think>\n\n2"
    twice = [{"role": "assistant", "reasoning_content": REASONING, "content": inline}]
    assert completion_text(twice) == inline and completion_reasoning(twice) is None
    assert policy_answer(completion_text(twice)) == "2"
    columns = dict(verdict_format=["integer"], scale_levels=[[0, 1, 2]], scale_best=[2])
    assert format_reward(completions=[twice], **columns) == [1.0]

    closing = [{"role": "assistant", "reasoning_content": "напишу </think> и оценку", "content": "2"}]
    assert completion_text(closing) == "2" and policy_answer(completion_text(closing)) == "2"


def test_a_tagged_answer_after_a_reasoning_put_back_reads_as_after_a_reasoning_its_prompt_opened():
    """Read as the content alone, a tagged verdict with a reasoning apart was well-formed (1.0); put back, its
    ``<think>`` block stood before the tagged answer as text around it, and every such completion lost the reward.
    It reads as the same text after a prompt that opened the reasoning (a thinking-always template) reads."""
    conversational = [{"role": "assistant", "reasoning_content": REASONING, "content": VERDICT}]
    columns = dict(verdict_format=["tagged"], scale_levels=[[0, 1, 2]], scale_best=[2])
    assert format_reward(completions=[conversational], prompts=[[{"role": "user", "content": "Вопрос"}]],
                         **columns) == [1.0]
    opened_by_prompt = format_reward(completions=[f"{REASONING}\n</think>\n\n{VERDICT}"],
                                     prompts=["Вопрос<|im_start|>assistant\n<think>\n"], **columns)
    assert opened_by_prompt == [1.0]
    # A text completion that opens its own reasoning before a tagged answer is still no answer as trained.
    assert format_reward(completions=[completion_text(conversational)], prompts=["Вопрос"], **columns) == [0.0]
