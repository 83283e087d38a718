"""judge-serve's context bound, at its edge: a prompt of exactly the tokens the context leaves after max_tokens
(and a regression head's reserve) is judged; one token more is refused as ``context_length_exceeded``. A request fits
when prompt + max_tokens <= max_model_len, vLLM's own rule: a bound one token off either refuses a prompt the engine
would take or forwards one it refuses. Prompts are the real tiny
Qwen2.5 tokenizer's (``qwen_tokenizer``); the context is set around each prompt's own token count."""

from __future__ import annotations

import pytest

import judge
import serve.jobs
from judge.wire import PairwiseRequest
from serve.schema import RequestError, parse_judge_request

ITEM = {"instruction": "Напиши стих", "answer": "Роза красная", "criteria": ["Креативность"]}
PAIR = {"instruction": "a", "answer_1": "b", "answer_2": "c", "rubrics": "-1: 1 лучше\n\n0: равны\n\n1: 2 лучше"}


def _prompt_tokens(tokenizer, prompt: str) -> int:
    return len(tokenizer(judge.apply_chat(tokenizer, prompt), add_special_tokens=False)["input_ids"])


@pytest.mark.parametrize("reserve", [0, 5], ids=["generation", "regression reserve"])
def test_a_prompt_of_exactly_the_budget_is_judged_and_one_token_more_is_refused(qwen_tokenizer, reserve):
    """max_model_len = prompt + max_tokens + reserve: the one job is built, its prompt the whole count. One token
    less of context: refused naming the item and criterion, with the counts."""
    request = parse_judge_request({"items": [ITEM]})
    (job,) = serve.jobs.build_jobs(request, qwen_tokenizer, max_model_len=8192, max_tokens=64)
    n = _prompt_tokens(qwen_tokenizer, job.prompt)
    assert len(job.prompt_ids) == n
    (fits,) = serve.jobs.build_jobs(request, qwen_tokenizer, max_model_len=n + 64 + reserve, max_tokens=64,
                                    reserve=reserve)
    assert fits.prompt_ids == job.prompt_ids and not fits.too_long
    with pytest.raises(RequestError) as err:
        serve.jobs.build_jobs(request, qwen_tokenizer, max_model_len=n + 63 + reserve, max_tokens=64, reserve=reserve)
    reserved = f" and {reserve} reserved" if reserve else ""
    assert str(err.value) == (f"items[0].criteria[0]: the prompt for criterion 'Креативность' is {n} tokens; with "
                              f"max_tokens 64{reserved} it needs {n + 64 + reserve} > the model's context of "
                              f"{n + 63 + reserve} tokens. Shorten the answer or ask for fewer max_tokens.")
    assert (err.value.param, err.value.code) == ("items[0].criteria[0]", "context_length_exceeded")


def test_a_pair_of_exactly_the_budget_is_judged_and_one_token_more_is_refused(qwen_tokenizer):
    """The pairwise twin: max_model_len = the pair's prompt + max_tokens builds its job; one less is refused."""
    request = PairwiseRequest.model_validate({"pairs": [PAIR]})
    (job,) = serve.jobs.build_pair_jobs(request, qwen_tokenizer, max_model_len=8192, max_tokens=64, thinking=False)
    n = _prompt_tokens(qwen_tokenizer, judge.render_pairwise_prompt(request.pairs[0]))
    assert len(job.prompt_ids) == n
    (fits,) = serve.jobs.build_pair_jobs(request, qwen_tokenizer, max_model_len=n + 64, max_tokens=64, thinking=False)
    assert fits.prompt_ids == job.prompt_ids
    with pytest.raises(RequestError) as err:
        serve.jobs.build_pair_jobs(request, qwen_tokenizer, max_model_len=n + 63, max_tokens=64, thinking=False)
    assert str(err.value) == (f"pairs[0]: the prompt is {n} tokens; with max_tokens 64 it needs {n + 64} > the model's "
                              f"context of {n + 63} tokens.")
    assert (err.value.param, err.value.code) == ("pairs[0]", "context_length_exceeded")
