"""judge-serve reads an integer (reasoning) verdict as the GRPO rewards trained it to be read: after the ``<think>``
a thinking template's prompt opened, and failed when the length limit cut it (fast tier)."""

from __future__ import annotations

import asyncio
import copy

import pytest

from judge import Scale, VerdictError, VerdictFormat
from judge.checkpoints import JudgeKind
from judge.wire import JudgeRequest
from serve.jobs import build_jobs
from serve.judging import Judge, JudgeOptions, JudgeSettings
from serve.score_reading import seq2seq_verdict
from train.grpo_rewards import CUT, read_verdict

SCALE = Scale((0, 1, 2), best=2)
#: A thinking template's generation prompt (Qwen3 Thinking-2507, the R1 distills): it opens the reasoning itself.
THINKING_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                     "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")
PROMPT = "<|im_start|>user\nОцените ответ.<|im_end|>\n<|im_start|>assistant\n<think>\n"


@pytest.mark.parametrize(("text", "finish_reason"), [
    ("Проверяю пункт 1, затем пункт 2", "stop"),             # cut inside the reasoning the prompt opened
    ("Проверяю пункт 1, затем пункт 2", "length"),
    ("Ответ верный и полный.</think>\n\n2", "stop"),         # closed: the integer after it
    ("Ответ верный и полный.</think>\n\n1", "length"),       # closed, then cut: a "1" of "10"
    ("<think>\nОтвет верный.</think>\n\n2", "stop"),         # a template that opens nothing: the output's own block
])  # fmt: skip
@pytest.mark.parametrize("opened", [True, False])
def test_serve_reads_an_integer_verdict_as_the_grpo_reward_does(text, finish_reason, opened):
    """One reading: serve's seq2seq_verdict, given whether the prompt opened the reasoning and the engine's
    finish_reason, agrees with train.grpo_rewards.read_verdict given the prompt and the cut, field for field."""
    served = seq2seq_verdict(text, None, SCALE, False, VerdictFormat.INTEGER, reasoning_opened=opened,
                             finish_reason=finish_reason)
    trained = read_verdict(text, "integer", [0, 1, 2], 2, prompt=PROMPT if opened else "", cut=finish_reason == "length")
    assert (served["score"], served["parse_ok"], served["error"], served["feedback"]) == (
        trained.score, trained.ok, trained.error, trained.feedback)


def test_the_readers_fail_the_reviewed_cases():
    """The reasoning the prompt opened and never closed is no score of 2; a closed verdict the limit cut fails as
    the project's cut code, shared with the GRPO rewards; so is a tagged verdict written inside the reasoning its
    prompt opened (no </think>), as GRPO reads it."""
    unclosed = seq2seq_verdict("Проверяю пункт 1, затем пункт 2", None, SCALE, False, VerdictFormat.INTEGER,
                               reasoning_opened=True)
    assert (unclosed["score"], unclosed["error"]) == (None, VerdictError.UNCLOSED_THINK)
    cut = seq2seq_verdict("<think>\nВерно.</think>\n\n1", None, SCALE, False, VerdictFormat.INTEGER,
                          finish_reason="length")
    assert (cut["score"], cut["error"], cut["feedback"]) == (None, VerdictError.CUT, "Верно.") and CUT == VerdictError.CUT
    # (judge-serve's constrained decoding therefore closes that block first: serve.judging.verdict_regex)
    tagged = seq2seq_verdict("[FEEDBACK] Верно. [RESULT] 2 [END]", None, SCALE, False, finish_reason="length",
                             reasoning_opened=True)
    assert (tagged["score"], tagged["parse_ok"], tagged["error"]) == (None, False, VerdictError.UNCLOSED_THINK)


class _Engine:
    """The generating engine: every completion answers ``text`` with ``finish_reason``."""

    def __init__(self, text: str, finish_reason: str):
        self.text, self.finish_reason = text, finish_reason

    async def post(self, path, payload, request_id=""):
        return {"choices": [{"text": self.text, "finish_reason": self.finish_reason}],
                "usage": {"prompt_tokens": len(payload["prompt"]), "completion_tokens": 9}}


@pytest.fixture(scope="module")
def thinking_tokenizer(qwen3_tokenizer):
    """The session's Qwen3 tokenizer under ``THINKING_TEMPLATE``: one copy for the module's cases (a copy of the fast
    tokenizer is seconds of CPU; the session's is shared and read only, and so is this one)."""
    tokenizer = copy.deepcopy(qwen3_tokenizer)
    tokenizer.chat_template = THINKING_TEMPLATE
    return tokenizer


@pytest.mark.parametrize(("text", "finish_reason", "score", "error"), [
    ("Проверяю пункт 1, затем пункт 2", "stop", None, VerdictError.UNCLOSED_THINK),
    ("Ответ верный и полный.</think>\n\n2", "length", None, VerdictError.CUT),
    ("Ответ верный и полный.</think>\n\n2", "stop", 2, None),
])  # fmt: skip
def test_judge_serve_reads_its_integer_judgment_after_the_prompts_think(thinking_tokenizer, text, finish_reason, score,
                                                                       error):
    """Served end to end through ``Judge._judge_jobs`` (the pointwise and pairwise paths' own): an integer judge under a
    thinking template (the generation prompt ends in "<think>\\n", so the output starts inside the reasoning) gets no
    score from a reasoning never closed, nor from a verdict max_tokens cut; a closed one ended by the model scores."""
    tokenizer = thinking_tokenizer
    request = JudgeRequest.model_validate({"items": [{"instruction": "Напиши стих.", "answer": "Роза красная.",
                                                      "criteria": [{"name": "Грамотность", "rubrics": "0: плохо\n\n1: так себе\n\n2: хорошо"}]}]})
    (job,) = build_jobs(request, tokenizer, max_model_len=4096, max_tokens=512, thinking=True)
    assert tokenizer.decode(job.prompt_ids).endswith("<|im_start|>assistant\n<think>\n")  # the case is exercised
    settings = JudgeSettings(model_name="j", kind=JudgeKind.SEQ2SEQ, engine_models={"generator": "j"}, max_model_len=4096,
                             max_tokens=512, temperature=0.0, score_logprobs=False, lenient=False, constrained=False,
                             feedback_max_chars=2000, max_judgments=64, verdict_format=VerdictFormat.INTEGER)  # fmt: skip

    async def judged():
        judge = Judge(settings, tokenizer, _Engine(text, finish_reason), None, asyncio.Semaphore(1))
        return await judge._judge_jobs([job], JudgeOptions(max_tokens=512, temperature=0.0, lenient=False,
                                                          constrained=False))

    (result,) = asyncio.run(judged())
    assert (result.score, result.error, result.finish_reason, result.output) == (score, error, finish_reason, text)
