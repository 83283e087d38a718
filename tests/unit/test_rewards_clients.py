"""The shipped reward clients (judge.reward_clients) and /get_reward's pure parts, at the network boundary: a
scripted judge-serve records the exact /v1/judge payloads (fast tier)."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from judge.plumbing.retry import RetryPolicy
from judge.reward_clients import (RewardSample, compute_score, compute_score_async, judge_request_body,
                                  request_chunks, sample_from_verl, trl_reward_function)
from judge.rewards import RewardRule, policy_answer
from judge.wire import JudgeResult
from serve.rewards import MIN_PROMPT_TAIL, SecretPathFilter, answer_of
from tests.support.body_bound import judge_serve_too_large
from tests.support.scripted_endpoint import ScriptedEndpoint

NO_WAIT = RetryPolicy(max_retries=2, backoff_s=0.0, max_backoff_s=0.0, asleep=lambda s: asyncio.sleep(0), sleep=lambda s: None)


@pytest.mark.parametrize(
    "text, answer",
    [
        ("Ответ.<|im_end|><|endoftext|><|endoftext|>", "Ответ."),                   # Qwen2: end of turn, padding
        ("<think>\nДумаю.\n</think>\n\nОтвет.<|im_end|>", "Ответ."),                 # Qwen3: the reasoning is dropped
        ("Думаю.\n</think>\n\nОтвет.<|im_end|>", "Ответ."),                         # a block the prompt opened
        ("<think>\nДумаю и не заканчиваю", ""),                                     # cut inside its reasoning
        ("Ответ.<|im_end|>\n<|im_start|>user\nещё", "Ответ."),                      # a run-on turn ends at the first
        ("Ответ.<|eot_id|>", "Ответ."),                                             # Llama 3
        ("  Ответ.  </s>", "Ответ."),
        ("<|im_end|>", ""),
    ],
)
def test_policy_answer_rule(text, answer):
    """The answer judged: up to where the turn ends, after the reasoning's </think>, stripped."""
    assert policy_answer(text) == answer


def test_a_reasoning_block_the_prompt_opened_and_never_closed_holds_no_answer():
    """A thinking template's generation prompt ends in "<think>\\n": an output with no "</think>" was cut inside that
    reasoning, though it holds no "<think>" itself. /get_reward (which sees the prompt) and the trl function on text
    prompts give it no answer (empty_answer), not the half-written reasoning judged as one."""
    from judge.rewards import prompt_opens_reasoning

    thinking = "<|im_start|>user\nВопрос<|im_end|>\n<|im_start|>assistant\n<think>\n"
    assert prompt_opens_reasoning(thinking) and not prompt_opens_reasoning(thinking + "Думаю.</think>\n")
    assert not prompt_opens_reasoning("<|im_start|>assistant\n")
    assert answer_of(thinking + "Хм, начну с<|im_end|>", thinking) == ""
    assert answer_of(thinking + "Думаю.\n</think>\n\nОтвет.<|im_end|>", thinking) == "Ответ."
    assert policy_answer("Хм, начну с") == "Хм, начну с"  # no prompt seen: the verl path, whose prompt is not passed
    assert policy_answer("Хм, начну с", reasoning_opened=True) == ""


def test_answer_of_needs_the_prompt_as_the_query_start():
    """OpenRLHF's query is prompt + response: the answer is what follows the prompt; another prompt: None."""
    prompt = "<|im_start|>user\nВопрос<|im_end|>\n<|im_start|>assistant\n"
    assert answer_of(prompt + "Ответ<|im_end|><|endoftext|>", prompt) == "Ответ"
    assert answer_of("<|im_start|>user\nДругой", prompt) is None


def test_answer_of_a_query_whose_prompt_openrlhf_cut_from_the_left(qwen_tokenizer):
    """OpenRLHF keeps the last ``max_prompt_length`` tokens of a long prompt (``openrlhf/utils/agent.py``) and
    decodes them with the response: the query starts with a tail of the prompt, or with replacement characters where
    the cut split a Cyrillic letter's bytes. Every cut reads to the same answer; a query of another prompt does not."""
    prompt = "<|im_start|>user\n" + "Напиши о весне, ёлке и дожде. " * 12 + "<|im_end|>\n<|im_start|>assistant\n"
    ids = qwen_tokenizer(prompt, add_special_tokens=False)["input_ids"]
    response = qwen_tokenizer("Весна пришла.<|im_end|><|endoftext|>", add_special_tokens=False)["input_ids"]
    queries = [qwen_tokenizer.decode(ids[-keep:] + response, skip_special_tokens=False) for keep in range(12, len(ids))]
    assert any(q.startswith("\ufffd") for q in queries)  # some cuts split a letter: the case is exercised
    assert all(answer_of(q, prompt) == "Весна пришла." for q in queries)
    assert answer_of("Совсем другой запрос, не этот." + "<|im_start|>assistant\nВесна", prompt) is None


def test_answer_of_a_cut_prompt_that_repeats_itself():
    """A repetitive prompt (code) has the query's first characters at many places before the cut: past the fast
    tries, the linear search finds the longest tail all the same, at every cut; a query of another prompt that
    shares its repeated text but not its end is still refused."""
    from serve.rewards import FAST_TAIL_STARTS, _longest_tail

    prompt = "<|im_start|>user\nИсправь код:\n" + "    pass\n" * 40 + "<|im_end|>\n<|im_start|>assistant\n"
    for cut in range(30, len(prompt) - MIN_PROMPT_TAIL, 7):
        assert answer_of(prompt[cut:] + "Готово.<|im_end|>", prompt) == "Готово.", cut
    anchor = prompt[310:310 + MIN_PROMPT_TAIL]  # a cut past the middle: its start occurs too often for the fast tries
    assert sum(prompt.startswith(anchor, i) for i in range(310)) > FAST_TAIL_STARTS
    assert answer_of(prompt[310:] + "Готово.", prompt) == "Готово."
    assert answer_of("    pass\n" * 5 + "<|im_end|>\n<|im_start|>user\nДругое", prompt) is None
    assert _longest_tail("abcab", "cabxyz") == 3 and _longest_tail("abc", "xyz") == 0 and _longest_tail("ab", "") == 0


def test_access_log_filter_hides_the_reward_key():
    """uvicorn's access record (client, method, path, version, status) loses the key in /get_reward/<key>."""
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "POST", "/get_reward/s3cret?x=1", "1.1", 200), None)  # fmt: skip
    assert SecretPathFilter().filter(record)
    assert record.getMessage() == '127.0.0.1:5 - "POST /get_reward/<reward-key>?x=1 HTTP/1.1" 200'


def test_access_log_filter_hides_a_registered_reward_key_on_a_mistyped_route(monkeypatch):
    """A mistyped route (/get_rewards/<key>) is answered 404 by the router, and uvicorn's access line names its path:
    the key judge-serve read is masked wherever it appears, as read and as a path spells it (percent-encoded)."""
    from judge.plumbing import provenance
    from judge.plumbing.provenance import REDACTED
    from serve.config import ServeConfig
    from serve.rewards import reward_key_of

    monkeypatch.setattr(provenance, "_KNOWN_SECRETS", set())
    monkeypatch.setenv("JUDGE_SERVE_REWARD_KEY", "rk/s3cret")
    assert reward_key_of(ServeConfig(model="m", reward_key_env="JUDGE_SERVE_REWARD_KEY")) == "rk/s3cret"
    for path, shown in (("/get_rewards/rk%2Fs3cret", f"/get_rewards/{REDACTED}"),
                        ("/getreward/rk/s3cret/x", f"/getreward/{REDACTED}/x")):
        record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                                   ("127.0.0.1:5", "POST", path, "1.1", 404), None)  # fmt: skip
        assert SecretPathFilter().filter(record)
        assert record.getMessage() == f'127.0.0.1:5 - "POST {shown} HTTP/1.1" 404'


def judge_response(items: list[list[JudgeResult]]) -> dict:
    """A /v1/judge response body holding these results."""
    return {"id": "judge-1", "object": "judge.result", "created": 0, "model": "m", "judge_kind": "seq2seq",
            "verdict_format": "tagged", "prompt_version": "pollux-ru-v1",
            "items": [{"index": i, "id": None, "results": [r.to_json() for r in rs]} for i, rs in enumerate(items)],
            "usage": {"judgments": 0, "parsed": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}  # fmt: skip


def scored(criterion: str, score: float, feedback: str = "fb") -> JudgeResult:
    return JudgeResult(criterion=criterion, criterion_id=None, scale=[0, 1, 2], score=score, parse_ok=True,
                       in_scale=True, score_source="verdict", feedback=feedback)


def test_trl_reward_function_sends_one_request_per_batch_and_logs(monkeypatch):
    """One /v1/judge request for the whole generation batch, the exact items (instruction from the last user turn,
    criteria from the dataset column, the answer without Qwen3's reasoning), rewards by the rule, verdicts via
    log_extra, failures and latency via log_metric, the Bearer key from $JUDGE_SERVE_API_KEY."""
    monkeypatch.setenv("JUDGE_SERVE_API_KEY", "k1")

    def respond(path, body):
        n = len(body["items"])
        return 200, judge_response([[scored("A", 2), scored("B", 1)]] + [[scored("A", 0)]] * (n - 1))

    extra, metrics = {}, {}
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), retry=NO_WAIT, name="judge")
        values = asyncio.run(reward(
            prompts=[[{"role": "system", "content": "s"}, {"role": "user", "content": "Q1"}], [{"role": "user", "content": "Q2"}]],
            completions=[[{"role": "assistant", "content": "<think>r</think>A1"}], [{"role": "assistant", "content": "A2"}]],
            completion_ids=[[1], [2]], trainer_state=None, criteria=['["A", "B"]', '["A"]'],
            log_extra=lambda column, vs: extra.setdefault(column, vs),
            log_metric=lambda name, v: metrics.setdefault(name, v),
        ))  # fmt: skip
    assert [path for path, _ in endpoint.requests] == ["/v1/judge"]
    assert endpoint.requests[0][1] == {"items": [
        {"instruction": "Q1", "answer": "A1", "criteria": ["A", "B"]},
        {"instruction": "Q2", "answer": "A2", "criteria": ["A"]},
    ], "oversize": "fail"}  # fmt: skip
    assert endpoint.headers[-1]["authorization"] == "Bearer k1"
    assert values == [pytest.approx(0.75), 0.0]  # (2/2 + 1/2) / 2; 0/2
    assert extra == {"judge_verdicts": ["A: 2 — fb | B: 1 — fb", "A: 0 — fb"]}
    assert metrics["judge/judge_failures"] == 0.0 and metrics["judge/failed_requests"] == 0.0


def test_trl_text_prompts_that_open_the_reasoning_send_only_answers(monkeypatch):
    """Text prompts ending in a thinking template's "<think>\\n": a completion that closes it sends what follows;
    one cut before "</think>" sends nothing and gets the rule's empty_answer (0.0), never its reasoning judged."""
    def respond(path, body):
        return 200, judge_response([[scored("A", 2)]] * len(body["items"]))

    prompt = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n"
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), retry=NO_WAIT, criteria=["A"],
                                     instruction_column="q")
        values = asyncio.run(reward(prompts=[prompt, prompt], completions=["r\n</think>\n\nA1", "r, cut"],
                                    completion_ids=[[1], [2]], trainer_state=None, q=["Q", "Q"]))
    assert [body["items"] for _, body in endpoint.requests] == [[{"instruction": "Q", "answer": "A1", "criteria": ["A"]}]]
    assert values == [1.0, 0.0]


def test_trl_text_prompts_rendered_by_a_chat_template_send_the_last_user_turn(qwen3_tokenizer):
    """A text prompt trl was given already templated (system turn, earlier turns, markers) sends the last user turn's
    content as the instruction, never the template's text: Qwen3's own template (ChatML), Llama 3's, Gemma's and a
    DeepSeek-R1 distill's markers; an untemplated text prompt is the instruction as it is."""
    def respond(path, body):
        return 200, judge_response([[scored("A", 2)]] * len(body["items"]))

    qwen3 = qwen3_tokenizer.apply_chat_template(
        [{"role": "system", "content": "Ты поэт."}, {"role": "user", "content": "Привет"},
         {"role": "assistant", "content": "Здравствуй."}, {"role": "user", "content": "Напиши стих"}],
        tokenize=False, add_generation_prompt=True)  # fmt: skip
    assert qwen3.startswith("<|im_start|>system\nТы поэт.<|im_end|>") and qwen3.endswith("<|im_start|>assistant\n")
    llama3 = ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nТы поэт.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nНапиши стих<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n")  # fmt: skip
    gemma = "<bos><start_of_turn>user\nНапиши стих<end_of_turn>\n<start_of_turn>model\n"
    # A DeepSeek-R1 distill's template: full-width bars (U+FF5C), U+2581 for spaces, its prompt opening the reasoning.
    r1 = ("<\uff5cbegin\u2581of\u2581sentence\uff5c>Ты поэт.<\uff5cUser\uff5c>Привет<\uff5cAssistant\uff5c>Здравствуй."
          "<\uff5cend\u2581of\u2581sentence\uff5c><\uff5cUser\uff5c>Напиши стих<\uff5cAssistant\uff5c><think>\n")
    prompts = [qwen3, llama3, gemma, r1, "Напиши стих о весне"]
    completions = ["Стих."] * 3 + ["Думаю.\n</think>\n\nСтих."] + ["Стих."]
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), retry=NO_WAIT, criteria=["A"])
        asyncio.run(reward(prompts=prompts, completions=completions, completion_ids=[[1]] * 5, trainer_state=None))
    (items,) = [body["items"] for _, body in endpoint.requests]
    assert [item["instruction"] for item in items] == ["Напиши стих"] * 4 + ["Напиши стих о весне"]
    assert [item["answer"] for item in items] == ["Стих."] * 5


def test_another_templates_opener_in_the_users_text_is_the_users_text():
    """The template is the one whose user-turn opener comes first: a ChatML prompt asking about DeepSeek's
    ``<｜User｜>`` marker, or an R1 prompt quoting Gemma's, keeps its whole question (cut at the quoted marker, the
    judge got half of it)."""
    from judge.reward_clients import _instruction

    chatml = ("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nЧто значит строка \uff1c\uff5cUser\uff5c> и "
              "<\uff5cUser\uff5c> в шаблоне DeepSeek?<|im_end|>\n<|im_start|>assistant\n")
    assert _instruction(chatml) == "Что значит строка \uff1c\uff5cUser\uff5c> и <\uff5cUser\uff5c> в шаблоне DeepSeek?"
    r1 = ("<\uff5cbegin\u2581of\u2581sentence\uff5c><\uff5cUser\uff5c>Что значит <start_of_turn>user\n в шаблоне "
          "Gemma?<\uff5cAssistant\uff5c><think>\n")
    assert _instruction(r1) == "Что значит <start_of_turn>user\n в шаблоне Gemma?"


def test_request_chunks_keep_each_request_within_both_bounds():
    """At most 3 sent samples and 5 judgments per request: criteria counts 2, 2, (no answer), 2, 1, 6 cut into
    [2, 2, -] (4 judgments; the next 2 would make 6), [2, 1] (3; the next 6 would make 9), [6] alone (over the bound
    by itself: judge-serve refuses it, that sample's reward is None); order kept, nothing dropped."""
    def sample(n, answer="a"):
        return RewardSample("q", answer, tuple(f"c{k}" for k in range(n)))

    samples = [sample(2), sample(2), sample(2, answer=""), sample(2), sample(1), sample(6)]
    chunks = request_chunks(samples, max_items=3, max_judgments=5)
    assert [len(c) for c in chunks] == [3, 2, 1] and [s for c in chunks for s in c] == samples
    assert [len(c) for c in request_chunks([sample(1)] * 7, max_items=3, max_judgments=100)] == [3, 3, 1]
    assert request_chunks([], 3, 5) == []


def _sent_bytes(body: dict) -> int:
    """A body's size as the clients send it (compact UTF-8 JSON, judge.reward_clients.encoded_body's encoding; key
    order survives the scripted server's parsing)."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _body_limited(respond):
    """judge-serve's body limit in front of ``respond``: its 413 (serve/connections.py, BodyLimitMiddleware) for a
    body over its default max_body_bytes (8 MiB)."""
    from serve.config import ServeConfig

    limit = ServeConfig(model="m").max_body_bytes
    too_large = judge_serve_too_large(limit)

    def limited(path, body):
        if _sent_bytes(body) > limit:
            return too_large
        return respond(path, body)

    return limited


def test_request_chunks_keep_each_body_within_the_byte_bound():
    """Items of 249 bytes (100 Cyrillic letters: 200 of them) in a 30-byte envelope: two make a body of exactly 529
    bytes (a comma between), so a bound of 529 takes them together and 528 does not; an empty answer adds nothing; a
    sample whose own body (679 bytes) is over the bound goes alone; the model name counts in the envelope."""
    from judge.reward_clients import encoded_body

    def sample(letters, answer="а"):
        return RewardSample("В" * letters, answer, ("A",))

    samples = [sample(100), sample(100), sample(100, answer=""), sample(100), sample(300), sample(100)]
    chunks = request_chunks(samples, max_items=64, max_judgments=512, max_body_bytes=529)
    assert [len(c) for c in chunks] == [3, 1, 1, 1] and [s for c in chunks for s in c] == samples
    assert [len(encoded_body(judge_request_body(c))) for c in chunks] == [529, 279, 679, 279]
    assert [len(c) for c in request_chunks(samples, 64, 512, max_body_bytes=528)] == [1, 2, 1, 1, 1]
    assert [len(c) for c in request_chunks(samples[:2], 64, 512, max_body_bytes=529, model="m")] == [1, 1]
    assert [len(c) for c in request_chunks(samples[:2], 64, 512, max_body_bytes=541, model="m")] == [2]
    assert len(encoded_body(judge_request_body(samples[:2], "m"))) == 541


def test_trl_long_rows_are_split_under_judge_serves_body_limit():
    """Eight long rows (a 550,000-letter instruction each: 1.1 MB of UTF-8) are well within the item and judgment
    bounds, but together make a 8.8 MB body, over judge-serve's 8 MiB max_body_bytes: its 413 is a refusal that would
    stop training. Under the default byte bound they go as 7 rows and 1, each body within it, and every
    sample gets its reward."""
    instructions = [f"{i}" + "Ж" * 550_000 for i in range(8)]

    def respond(path, body):
        return 200, judge_response([[scored("A", 2)]] * len(body["items"]))

    with ScriptedEndpoint(_body_limited(respond)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=NO_WAIT)
        values = asyncio.run(reward(prompts=instructions, completions=[f"a{i}" for i in range(8)]))
    assert values == [1.0] * 8
    sent = sorted((body for _, body in endpoint.requests), key=lambda body: len(body["items"]), reverse=True)
    assert sent == [{"items": [{"instruction": q, "answer": f"a{i}", "criteria": ["A"]} for i, q in enumerate(instructions)][:7],
                     "oversize": "fail"},
                    {"items": [{"instruction": instructions[7], "answer": "a7", "criteria": ["A"]}], "oversize": "fail"}]  # fmt: skip
    assert endpoint.gets == ["/v1/models"]  # the first contact, before the requests: its headers come first
    assert sorted(int(h["content-length"]) for h in endpoint.headers[1:]) == sorted(map(_sent_bytes, sent))
    from judge.reward_clients import DEFAULT_MAX_BODY_BYTES

    assert max(map(_sent_bytes, sent)) <= DEFAULT_MAX_BODY_BYTES


CENSOR = "Ответа нет, но есть заглушка цензора?"  # a Critical taxonomy criterion: 0/1, best at 0
BREVITY = {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}


@pytest.mark.parametrize("rule, expected", [({"on_failure": "skip"}, None), ({"on_failure": "zero"}, 0.0),
                                            ({"on_failure": "scale_min"}, 0.0)])  # fmt: skip
def test_trl_a_sample_too_large_to_send_is_that_samples_failure(rule, expected):
    """A policy's 4,200,000-letter answer makes a body of 8.4 MB by itself, over the byte bound (and judge-serve's 413):
    it is not sent, and each of its criteria fails (context_length_exceeded, as judge-serve fails an answer too long
    for the judge), valued by on_failure: skip None, zero 0.0, scale_min (read as zero) 0.0: each criterion its
    worst level, the Critical censor criterion (best at 0) included, which scale_min once counted as its best
    (1.0; mean 0.5). Its neighbours are judged as usual."""
    def respond(path, body):
        return 200, judge_response([[scored("Краткость", 2)]] * len(body["items"]))

    extra, metrics = {}, {}
    with ScriptedEndpoint(_body_limited(respond)) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=[CENSOR, BREVITY], retry=NO_WAIT,
                                     rule=RewardRule.from_dict(rule))
        values = asyncio.run(reward(prompts=["Q0", "Q1", "Q2"], completions=["a0", "Ж" * 4_200_000, "a2"],
                                    log_extra=lambda column, vs: extra.setdefault(column, vs),
                                    log_metric=lambda name, v: metrics.setdefault(name, v)))
    assert values == [1.0, expected, 1.0]
    assert sorted(body["items"][0]["instruction"] for _, body in endpoint.requests) == ["Q0", "Q2"]
    assert all(len(body["items"]) == 1 for _, body in endpoint.requests)
    assert extra["pollux_judge_verdicts"][1] == f"{CENSOR}: failed (context_length_exceeded) | Краткость: failed (context_length_exceeded)"
    assert metrics["pollux_judge/judge_failures"] == 2.0 and metrics["pollux_judge/failed_requests"] == 0.0


def test_verl_a_sample_too_large_to_send_gets_its_failure_value():
    """verl's compute_score: an answer over the byte bound is not sent; with verl's default rule (zero) it scores
    0.0 with every criterion counted failed, instead of judge-serve's 413 raised."""
    with ScriptedEndpoint(_body_limited(lambda path, body: (200, judge_response([[scored("A", 2)]])))) as endpoint:
        score = compute_score("d", "Ж" * 4_200_000, None, {"instruction": "Q", "criteria": [CENSOR, BREVITY]},
                              judge_url=endpoint.base_url, api_key_env="")
    assert score == {"score": 0.0, "judge_failures": 2, "judge_engine_refused": 0, "judge_gate_closed": 0, "judge_empty_answer": 0}
    assert endpoint.requests == []


def test_trl_structured_message_content_sends_its_text_parts():
    """trl's structured content (trl/data_utils.py, prepare_multimodal_messages: {"type": "text", "text": ...}
    parts beside {"type": "image"} ones) reaches the judge as its text parts joined with nothing between, as the
    chat templates render them, never as a Python repr; the completion's parts the same way. A last user turn with
    no text part is refused naming the row, before anything is sent."""
    def respond(path, body):
        return 200, judge_response([[scored("A", 2)]] * len(body["items"]))

    prompt = [{"role": "system", "content": [{"type": "text", "text": "Ты поэт."}]},
              {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Опиши "},
                                           {"type": "text", "text": "картинку."}]}]  # fmt: skip
    completion = [{"role": "assistant", "content": [{"type": "text", "text": "<think>r</think>Кот "}, {"type": "text", "text": "спит."}]}]
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=NO_WAIT)
        assert asyncio.run(reward(prompts=[prompt], completions=[completion])) == [1.0]
        image_only = [{"role": "user", "content": [{"type": "image"}]}]
        with pytest.raises(ValueError, match=r"^prompts\[1\]: the last user turn has no text to judge the answer against$"):
            asyncio.run(reward(prompts=[prompt, image_only], completions=[completion, completion]))
    assert [body for _, body in endpoint.requests] == [
        {"items": [{"instruction": "Опиши картинку.", "answer": "Кот спит.", "criteria": ["A"]}], "oversize": "fail"}]


def test_trl_a_failed_request_keeps_the_empty_answers_value(caplog):
    """A request that fails transiently past the retries (judge-serve, reached at first contact, answers 503) gives
    None to the sample it would have judged only: the empty answer beside it was never to be sent and gets the rule's
    empty_answer (0.25 here), in its place. The samples left without a reward are counted in a warning."""
    extra = {}
    with ScriptedEndpoint(lambda path, body: (503, {"error": {"message": "engine restarting"}})) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=NO_WAIT,
                                     rule=RewardRule(empty_answer=0.25))
        with caplog.at_level(logging.WARNING, logger="judge.reward_clients"):
            values = asyncio.run(reward(prompts=["Q0", "Q1"], completions=["<|im_end|>", "a1"],
                                        log_extra=lambda column, vs: extra.setdefault(column, vs)))
    assert values == [0.25, None]
    assert extra == {"pollux_judge_verdicts": ["(empty answer)", "(no judgment: HTTPStatusError)"]}
    assert caplog.records[-1].getMessage() == (
        "pollux_judge: 1 of 2 samples got no judge reward (None; 1 failed requests): beside another reward function "
        "trl's default sum counts this one as 0 for them")


def test_trl_warns_of_samples_without_a_judge_reward(caplog):
    """A failed verdict under on_failure skip gives its sample None, which trl counts as 0 beside another reward
    function: the function says how many of the call's samples went without a reward; none missing, no warning."""
    unparsed = JudgeResult(criterion="A", criterion_id=None, scale=[0, 1, 2], error="no_result")

    def respond(path, body):
        return 200, judge_response([[scored("A", 2)] if item["instruction"] == "Q0" else [unparsed] for item in body["items"]])

    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=NO_WAIT, name="judge",
                                     rule=RewardRule(on_failure="skip"))
        with caplog.at_level(logging.WARNING, logger="judge.reward_clients"):
            assert asyncio.run(reward(prompts=["Q0", "Q0"], completions=["a0", "a1"])) == [1.0, 1.0]
            assert caplog.records == []
            assert asyncio.run(reward(prompts=["Q0", "Q1", "Q2"], completions=["a0", "a1", "a2"])) == [1.0, None, None]
    assert [r.getMessage() for r in caplog.records] == [
        "judge: 2 of 3 samples got no judge reward (None; 0 failed requests): beside another reward function trl's "
        "default sum counts this one as 0 for them"]


def test_the_clients_body_bound_is_under_judge_serves():
    """The default byte bound leaves room under judge-serve's default max_body_bytes (and under a decimal 8 MB)."""
    from judge.reward_clients import DEFAULT_MAX_BODY_BYTES
    from serve.config import ServeConfig

    assert DEFAULT_MAX_BODY_BYTES < 8_000_000 < ServeConfig(model="m").max_body_bytes


def test_trl_batches_of_many_criteria_are_split_under_the_servers_judgment_bound():
    """64 samples of 9 criteria are 576 judgments, past judge-serve's default 512 per request (a 400 that retrying
    cannot mend: every sample would get None). The function sends 56 samples (504 judgments), then 8; every sample
    gets its reward."""
    criteria = [f"C{k}" for k in range(9)]

    def respond(path, body):
        assert sum(len(item["criteria"]) for item in body["items"]) <= 512
        return 200, judge_response([[scored(c, 2) for c in item["criteria"]] for item in body["items"]])

    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), criteria=criteria, retry=NO_WAIT)
        values = asyncio.run(reward(prompts=[f"Q{i}" for i in range(64)], completions=[f"A{i}" for i in range(64)]))
    assert sorted(len(body["items"]) for _, body in endpoint.requests) == [8, 56]
    assert values == [1.0] * 64


def test_trl_reward_function_answers_none_when_the_judge_fails_transiently():
    """A request that fails transiently past the retries (a 503 three times) gives None for each of its samples
    (trl: no reward), never 0, counted in failed_requests; the other request of the batch keeps its rewards."""
    def respond(path, body):
        if body["items"][0]["instruction"] == "Q2":
            return 503, {"error": {"message": "no"}}
        return 200, judge_response([[scored("A", 2)]] * len(body["items"]))

    metrics = {}
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=NO_WAIT, max_items=1)
        values = asyncio.run(reward(prompts=["Q1", "Q2"], completions=["a1", "a2"],
                                    log_metric=lambda name, v: metrics.setdefault(name, v)))
    assert values == [1.0, None]
    assert [body["items"][0]["instruction"] for _, body in endpoint.requests].count("Q2") == 3  # 1 + 2 retries
    assert metrics["pollux_judge/failed_requests"] == 1.0


def _refusing_unknown(path, body):
    """judge-serve's answer to a /v1/judge request: its 400 for the first item naming an unknown criterion ("Нет"),
    as the server words it, else a verdict per criterion."""
    for k, item in enumerate(body["items"]):
        if "Нет" in item["criteria"]:
            j = item["criteria"].index("Нет")
            return 400, {"error": {"message": f"items[{k}].criteria[{j}]: unknown criterion 'Нет'",
                                   "type": "invalid_request_error", "param": f"items[{k}].criteria[{j}]",
                                   "code": "invalid_request"}}
    return 200, judge_response([[scored(c, 2) for c in item["criteria"]] for item in body["items"]])


def test_trl_raises_judge_serves_refusal_naming_the_batch_row():
    """A 400 is a data or configuration error that would come back every step: the function raises it, not None
    for every sample of the request. The error carries judge-serve's message with its items[k] named as the batch's
    row: with max_items=2, rows 0 and 1 go in one request, rows 2 (empty: not sent), 3 and 4 in the other, where
    row 4 is items[1]. It is not retried."""
    from judge.reward_clients import RewardRequestRefused

    with ScriptedEndpoint(_refusing_unknown) as endpoint:
        reward = trl_reward_function(endpoint.base_url, retry=NO_WAIT, max_items=2)
        with pytest.raises(RewardRequestRefused) as refused:
            asyncio.run(reward(prompts=["Q0", "Q1", "Q2", "Q3", "Q4"], completions=["a0", "a1", "<|im_end|>", "a3", "a4"],
                               criteria=[["A"], ["A"], ["A"], ["A"], ["A", "Нет"]]))
    sent = sorted([item["instruction"] for item in body["items"]] for _, body in endpoint.requests)
    assert sent == [["Q0", "Q1"], ["Q3", "Q4"]]
    assert str(refused.value) == (f"the reward request to {endpoint.base_url}/judge was refused (HTTP 400): "
                                  "samples[4].criteria[1]: unknown criterion 'Нет'")
    assert (refused.value.status, refused.value.param, refused.value.sample) == (400, "samples[4].criteria[1]", 4)


def test_verl_raises_judge_serves_refusal_with_its_message():
    """verl's compute_score, sync and async: judge-serve's 400 reaches the trainer with the server's message (the
    field it names), sent once."""
    from judge.reward_clients import RewardRequestRefused

    kwargs = dict(data_source="d", solution_str="ans", ground_truth=None, extra_info={"instruction": "Q", "criteria": ["Нет"]},
                  api_key_env="", max_retries=2)  # fmt: skip
    with ScriptedEndpoint(_refusing_unknown) as endpoint:
        with pytest.raises(RewardRequestRefused, match=r"\(HTTP 400\): samples\[0\]\.criteria\[0\]: unknown criterion 'Нет'$"):
            compute_score(**kwargs, judge_url=endpoint.base_url)
        with pytest.raises(RewardRequestRefused, match=r"samples\[0\]\.criteria\[0\]: unknown criterion"):
            asyncio.run(compute_score_async(**kwargs, judge_url=endpoint.base_url))
    assert len(endpoint.requests) == 2


def test_trl_criteria_given_as_one_name_are_that_one_criterion():
    """criteria="Креативность" is one criterion, as a dataset column's string is, not its letters."""
    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("Креативность", 2)]]))) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria="Креативность", retry=NO_WAIT)
        assert asyncio.run(reward(prompts=["Q"], completions=["a"])) == [1.0]
    assert endpoint.requests[0][1] == {"items": [{"instruction": "Q", "answer": "a", "criteria": ["Креативность"]}],
                                       "oversize": "fail"}


def test_trl_a_criteria_column_that_json_encodes_every_cell_names_its_one_criterion():
    """A dataset column that JSON-encodes every cell gives one name as json.dumps("Креативность")
    ('"\\u041a..."'), as it gives json.dumps("auto") and a list: that one name, as the plain name is. Before: refused,
    "expected a non-empty list of criteria", while the plain name, the list and "auto" so encoded were read."""
    def respond(path, body):
        return 200, judge_response([[scored("Креативность", 2)], [scored("Креативность", 0), scored("Грамотность", 2)]])

    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url, retry=NO_WAIT)
        values = asyncio.run(reward(prompts=["Q1", "Q2"], completions=["a1", "a2"],
                                    criteria=[json.dumps("Креативность"), json.dumps(["Креативность", "Грамотность"])]))
    assert values == [1.0, 0.5]
    assert endpoint.requests[0][1] == {"items": [
        {"instruction": "Q1", "answer": "a1", "criteria": ["Креативность"]},
        {"instruction": "Q2", "answer": "a2", "criteria": ["Креативность", "Грамотность"]}], "oversize": "fail"}


def test_verl_sample_from_extra_info_or_ground_truth():
    """extra_info's keys first, then ground_truth as a label (object or JSON text); a plain string is the
    reference answer; without an instruction or criteria, an error naming where they are looked for."""
    label = '{"instruction": "Q", "criteria": ["A"], "reference_answer": "R"}'
    assert sample_from_verl("ans", label, {}) == RewardSample("Q", "ans", ("A",), "R")
    assert sample_from_verl("ans", "R2", {"instruction": "Q", "criteria": '["A", "B"]'}) == RewardSample("Q", "ans", ("A", "B"), "R2")
    assert sample_from_verl("x<|im_end|>", {"instruction": "Q", "criteria": ["A"]}, {"criteria": ["B"]}).criteria == ("B",)
    import numpy as np  # a parquet list column can reach extra_info as an array

    assert sample_from_verl("x", "", {"instruction": "Q", "criteria": np.array(["A", "B"])}).criteria == ("A", "B")
    with pytest.raises(ValueError, match="no instruction"):
        sample_from_verl("ans", "R", {"criteria": ["A"]})
    assert judge_request_body([RewardSample("Q", "", ("A",))]) == {"items": [], "oversize": "fail"}


def test_verl_extra_info_keys_holding_none_are_absent():
    """verl reads extra_info from parquet, whose struct gives every row every key: a key the row lacks holds None.
    None leaves a plain ground truth as the reference answer, and a JSON label's instruction and criteria in place."""
    assert sample_from_verl("a", "R", {"instruction": "Q", "criteria": ["A"], "reference_answer": None}).reference_answer == "R"
    label = '{"instruction": "Q", "criteria": ["A"], "reference_answer": "R"}'
    assert sample_from_verl("a", label, {"instruction": None, "criteria": None, "task_type": None}) == \
        RewardSample("Q", "a", ("A",), "R")


def test_the_task_fields_of_a_label_reach_the_judge_on_every_reward_path():
    """A named criterion's rubric variant depends on the task (judge.taxonomy): /get_reward takes a label's task
    fields, and so do verl's samples (label or extra_info) and trl's (dataset columns), sent as the item's own."""
    label = {"instruction": "Q", "criteria": ["A"], "task_type": "Code modification", "task_subtype": "Python"}
    sample = sample_from_verl("ans", json.dumps(label), {"task_subtype": "SQL"})
    assert sample.to_item() == {"instruction": "Q", "answer": "ans", "criteria": ["A"],
                                "task_type": "Code modification", "task_subtype": "SQL"}
    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("A", 1)]] * len(body["items"])))) as endpoint:
        reward = trl_reward_function(endpoint.base_url, criteria=["A"], retry=NO_WAIT)
        asyncio.run(reward(prompts=["Q1", "Q2"], completions=["a1", "a2"], task_type=["Code modification", None],
                           task_subsubtype=["", "x"]))
    assert endpoint.requests[0][1]["items"] == [
        {"instruction": "Q1", "answer": "a1", "criteria": ["A"], "task_type": "Code modification"},
        {"instruction": "Q2", "answer": "a2", "criteria": ["A"], "task_subsubtype": "x"},
    ]


def test_verl_compute_score_sync_and_async_at_the_boundary():
    """verl's keyword call (reward_kwargs merged, its own extra kwargs ignored), sync and async: the exact item
    sent and {"score", logged keys}; a skipping rule is refused (verl needs a number)."""
    with ScriptedEndpoint(lambda path, body: (200, judge_response([[scored("A", 1)]]))) as endpoint:
        kwargs = dict(data_source="d", solution_str="ans", ground_truth="R", extra_info={"instruction": "Q", "criteria": ["A"]},
                      judge_url=endpoint.base_url, api_key_env="", reward_router_address=None)  # fmt: skip
        expected = {"score": 0.5, "judge_failures": 0, "judge_engine_refused": 0, "judge_gate_closed": 0, "judge_empty_answer": 0}
        assert compute_score(**kwargs) == expected
        assert asyncio.run(compute_score_async(**kwargs)) == expected
        assert endpoint.requests[0][1] == {"items": [{"instruction": "Q", "answer": "ans", "criteria": ["A"], "reference_answer": "R"}],
                                           "oversize": "fail"}
        assert "authorization" not in endpoint.headers[-1]
        with pytest.raises(ValueError, match="the trainer needs a number for every sample"):
            compute_score(**kwargs, rule={"on_failure": "skip"})


def test_verl_async_scores_keep_at_most_the_bound_in_flight():
    """verl's reward loop starts one compute_score_async per sample at once: with a bound of 4, eight of them reach
    judge-serve at most 4 at a time. The scripted server holds every request until the test lets one go, and the
    test lets one go only once every free slot is taken: then exactly 4 are held, and an unbounded client would
    have had more in (judge-serve, past its max_connections, answers 503)."""
    import threading

    state = {"arrived": 0, "released": 0, "most_held": 0}
    changed = threading.Condition()
    go = threading.Semaphore(0)

    def respond(path, body):
        with changed:
            state["arrived"] += 1
            state["most_held"] = max(state["most_held"], state["arrived"] - state["released"])
            changed.notify_all()
        go.acquire()
        return 200, judge_response([[scored("A", 1)]])

    def let_through() -> None:  # one at a time, each once the held ones fill every slot left (or the client overran)
        for k in range(8):
            with changed:
                assert changed.wait_for(lambda: state["arrived"] - k >= min(4, 8 - k), timeout=30), state
                state["released"] += 1
            go.release()

    async def eight(url: str) -> list[dict]:
        return await asyncio.gather(*(compute_score_async(
            data_source="d", solution_str=f"ans {k}", ground_truth=None, extra_info={"instruction": "Q", "criteria": ["A"]},
            judge_url=url, api_key_env="", max_concurrent_requests=4) for k in range(8)))  # fmt: skip

    with ScriptedEndpoint(respond) as endpoint:
        driver = threading.Thread(target=let_through)
        driver.start()
        scores = asyncio.run(eight(endpoint.base_url))
        driver.join(30)
    assert [s["score"] for s in scores] == [0.5] * 8 and len(endpoint.requests) == 8
    assert state["most_held"] == 4


def test_the_clients_wait_past_judge_serves_own_request_bound():
    """A slow request is answered by judge-serve (its 504 after request_timeout_s, retried) instead of abandoned
    and resent while the server still judges it."""
    from judge.reward_clients import DEFAULT_TIMEOUT_S
    from serve.config import ServeConfig

    assert DEFAULT_TIMEOUT_S > ServeConfig(model="m").request_timeout_s


def test_rule_for_the_server_is_checked_at_configuration():
    """A bad reward_rule stops judge-serve at its configuration, naming the field."""
    from serve.config import ConfigError, ServeConfig

    with pytest.raises(ConfigError, match="reward_rule.combine"):
        ServeConfig(model="m", reward_rule={"combine": "max"}).validate()
    assert RewardRule.from_dict({"on_failure": "zero", **ServeConfig(model="m").reward_rule}).on_failure == "zero"


def test_a_judgment_judge_serve_aborted_is_asked_again_not_valued_as_a_failure():
    """judge-serve answers a generation its engine aborted as a failed result ``aborted``: no verdict about the
    answer. The trl function asks the request again (the policy's reward is the judge's, not 0 for the engine's
    pause), and with retries spent the sample gets no reward (None), never the failure's value."""
    aborted = JudgeResult(criterion="A", criterion_id=None, scale=[0, 1, 2], error="aborted",
                          error_reason="the engine aborted the generation")
    answers = [judge_response([[aborted]]), judge_response([[scored("A", 2)]])]

    def respond(path, body):
        return 200, answers.pop(0) if len(answers) > 1 else answers[0]

    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), retry=NO_WAIT, criteria=["A"])
        values = asyncio.run(reward(prompts=["Напиши стих"], completions=["Стих."], completion_ids=[[1]]))
    assert values == [1.0] and len(endpoint.requests) == 2

    answers[:] = [judge_response([[aborted]])]
    with ScriptedEndpoint(respond) as endpoint:
        reward = trl_reward_function(endpoint.base_url.removesuffix("/v1"), retry=NO_WAIT, criteria=["A"])
        values = asyncio.run(reward(prompts=["Напиши стих"], completions=["Стих."], completion_ids=[[1]]))
    assert values == [None] and len(endpoint.requests) == 3  # the first attempt and NO_WAIT's two retries


def _flag_and_creativity(path: str, body: dict) -> tuple:
    """Every item judged on a two-level flag (0: not at its best, 1) and Креативность at its top (2 of 0-2)."""
    flag = JudgeResult(criterion="Флаг", criterion_id=None, scale=[0, 1], score=0, parse_ok=True, in_scale=True,
                       score_source="verdict")
    return 200, judge_response([[flag, scored("Креативность", 2)]] * len(body["items"]))


def test_verl_reward_kwargs_a_function_does_not_take_are_refused_naming_them():
    """verl hands every custom_reward_function.reward_kwargs key to the function: a misspelt rule key (``rules``) or
    one it does not take (``timeout``) is a TypeError naming it, nothing sent, where it trained on the default rule
    (gate open: (0 + 1) / 2 = 0.5 instead of the gate's 0.0). verl's own two extras are taken and ignored; ``model``
    is sent as trl's function sends it."""
    with ScriptedEndpoint(_flag_and_creativity) as endpoint:
        kwargs = dict(data_source="d", solution_str="ans", ground_truth="", api_key_env="",
                      extra_info={"instruction": "Q", "criteria": ["A", "B"]}, judge_url=endpoint.base_url)
        for function in (compute_score, compute_score_async):
            for key, value in (("rules", {"gate": True}), ("reward_rule", {"gate": True}), ("timeout", 5)):
                with pytest.raises(TypeError, match=rf"^{function.__name__}: unknown custom_reward_function"
                                                    rf"\.reward_kwargs key\(s\) \['{key}'\]; it takes judge_url, "):
                    result = function(**kwargs, **{key: value})
                    if asyncio.iscoroutine(result):
                        asyncio.run(result)
        assert endpoint.requests == []
        extras = dict(reward_router_address="10.0.0.1:9000", reward_model_tokenizer=object())
        gated = {"score": 0.0, "judge_failures": 0, "judge_engine_refused": 0, "judge_gate_closed": 1, "judge_empty_answer": 0}
        assert compute_score(**kwargs, **extras, rule={"gate": True}, model="my-judge") == gated
        assert asyncio.run(compute_score_async(**kwargs, **extras, rule={"gate": True}, model="my-judge")) == gated
        assert compute_score(**kwargs)["score"] == 0.5  # the default rule: the gate open, the mean of 0 and 1
    sent = {"items": [{"instruction": "Q", "answer": "ans", "criteria": ["A", "B"]}], "oversize": "fail"}
    assert [body for _, body in endpoint.requests] == [{**sent, "model": "my-judge"}] * 2 + [sent]


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_verl_async_concurrency_under_one_is_refused_naming_the_key(limit):
    """max_concurrent_requests=0 made a semaphore no request could ever pass (the step waited forever), -1 an
    asyncio error from deep inside: refused naming the reward_kwargs key, nothing sent. The wait_for only keeps a
    hang from holding the test."""
    with ScriptedEndpoint(_flag_and_creativity) as endpoint:
        call = compute_score_async("d", "ans", "", {"instruction": "Q", "criteria": ["A"]}, judge_url=endpoint.base_url,
                                   api_key_env="", max_concurrent_requests=limit)
        with pytest.raises(ValueError, match=r"^custom_reward_function\.reward_kwargs\.max_concurrent_requests: must be "
                                             r"a whole number of at least 1 .*, got "):
            asyncio.run(asyncio.wait_for(call, 5))
    assert endpoint.requests == []


def test_trl_rule_given_as_a_mapping_is_read_as_verls_is_or_refused_when_built():
    """trl_reward_function(rule={"gate": True}), verl's form, failed at the first training step (AttributeError on
    the dict): read by RewardRule.from_dict, it closes the gate (0.0 where the default rule gives 0.5); a mapping
    with an unknown field, or a rule of another type, is refused when the function is built."""
    from judge.rewards import RewardRuleError
    from judge.reward_clients import trl_reward_function

    with ScriptedEndpoint(_flag_and_creativity) as endpoint:
        gated = trl_reward_function(endpoint.base_url, criteria=["A", "B"], rule={"gate": True}, retry=NO_WAIT)
        plain = trl_reward_function(endpoint.base_url, criteria=["A", "B"], retry=NO_WAIT)
        assert asyncio.run(gated(prompts=["Q"], completions=["ans"])) == [0.0]
        assert asyncio.run(plain(prompts=["Q"], completions=["ans"])) == [0.5]
    with pytest.raises(RewardRuleError, match=r"^rule: unknown field\(s\) \['gates'\]"):
        trl_reward_function("http://judge:8000", criteria=["A"], rule={"gates": True})
    with pytest.raises(TypeError, match=r"^rule: expected a RewardRule or a mapping of its fields, got a string$"):
        trl_reward_function("http://judge:8000", criteria=["A"], rule="gate")


def test_a_blank_task_field_names_no_task_on_the_client_as_on_judge_serve():
    """A task type of spaces names no task (serve.schema.task_level_named): the client's sample carries none, so a
    sample without criteria is refused here, naming its row, not sent for judge-serve to refuse the whole batch."""
    from judge.reward_clients import _task

    named = str  # the field's own name, for an error this test does not reach
    assert _task({"task_type": "   ", "task_subtype": "Texts"}, named) == (("task_subtype", "Texts"),)
    assert _task({"task_type": " Poetry "}, named) == (("task_type", " Poetry "),)
