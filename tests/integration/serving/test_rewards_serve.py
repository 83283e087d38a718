"""The judge as a reward, served: OpenRLHF's /get_reward request exactly as its client sends it, the route's
protection, trl's GRPOTrainer with the shipped reward function, verl's compute_score call signature.

One judge-serve with a reward key, attached to the session's tiny generating engine (no engine of its own: it
starts in seconds), with constrained decoding so that the random tiny judge writes parseable verdicts, and its
access log on (the key must not appear there).
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from judge.plumbing.journal import read_jsonl
from judge.rewards import RewardRule
from serve.rewards import EXTRA_LOG_KEYS
from tests.support.fixtures_serve import API_KEY, JudgeServeProcess

REWARD_KEY = "reward-key-0123456789abcdef"
INSTRUCTION = "Напишите короткое стихотворение о весне."
CRITERIA = ["Креативность", {"name": "Краткость", "rubrics": "0: длинно\n\n1: приемлемо\n\n2: кратко"}]


@pytest.fixture(scope="module")
def reward_server(judge_servers, tiny_causal_dir, tmp_path_factory):
    """judge-serve on the tiny judge, attached to the session's generating engine, with a reward key."""
    generator_url = judge_servers["seq2seq"].engine_url("generator")
    process = JudgeServeProcess(
        tiny_causal_dir,
        ("--generator-url", generator_url, "--constrained-decoding", "true", "--access-log", "true",
         "--criteria-classifier", ""),
        tmp_path_factory.mktemp("serve-rewards"),
        env={"JUDGE_SERVE_REWARD_KEY": REWARD_KEY},
    )
    try:
        yield process.wait_ready()
    finally:
        process.stop()


def chat_prompt(tokenizer, instruction: str) -> str:
    """The prompt OpenRLHF renders with ``--data.apply_chat_template``."""
    return tokenizer.apply_chat_template([{"role": "user", "content": instruction}], tokenize=False,
                                         add_generation_prompt=True)


def openrlhf_query(tokenizer, prompt: str, response: str) -> str:
    """What OpenRLHF's SingleTurnAgentExecutor sends as the query: prompt and response token ids decoded with the
    special tokens kept (the response ends with the policy's end of turn, padded by <|endoftext|>)."""
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    response_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    response_ids += tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    return tokenizer.decode(prompt_ids + response_ids, skip_special_tokens=False)


async def post_like_openrlhf(url: str, payload: dict) -> tuple[int, dict]:
    """OpenRLHF's _post_request: a fresh aiohttp session, ``session.post(url, json=data)``, no headers."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=180)) as session:
        async with session.post(url, json=payload) as response:
            return response.status, await response.json()


def test_openrlhf_requests_qwen2_and_qwen3_get_one_reward_each(reward_server, qwen_tokenizer):
    """OpenRLHF's one-sample requests (Qwen2 ChatML and Qwen3 with a think block), no headers, at the key's URL:
    one reward in [0, 1] per sample from two criteria, numbers in extra_logs, rationales in the journal."""
    from train.tiny_models import build_qwen3_tokenizer

    qwen3 = build_qwen3_tokenizer()
    label = {"instruction": INSTRUCTION, "criteria": CRITERIA, "reference_answer": "Весна пришла."}
    samples = []
    for tokenizer, response in ((qwen_tokenizer, "Весна идёт, ручьи звенят."),
                                (qwen3, "<think>\nНужно стихотворение.\n</think>\n\nВесна идёт, ручьи звенят.")):
        prompt = chat_prompt(tokenizer, INSTRUCTION)
        samples.append({"query": [openrlhf_query(tokenizer, prompt, response)], "prompts": [prompt],
                        "labels": [json.dumps(label, ensure_ascii=False)]})
    assert "<|im_end|><|endoftext|>" in samples[0]["query"][0] and "</think>" in samples[1]["query"][0]
    url = f"{reward_server.root_url}/get_reward/{REWARD_KEY}"

    async def both():
        return await asyncio.gather(*(post_like_openrlhf(url, s) for s in samples))

    answers = asyncio.run(both())
    for status, body in answers:
        assert status == 200, body
        assert set(body) == {"rewards", "scores", "extra_logs"}
        assert len(body["rewards"]) == 1 and 0.0 <= body["rewards"][0] <= 1.0
        assert body["scores"] == body["rewards"]
        logs = body["extra_logs"]
        assert tuple(logs) == EXTRA_LOG_KEYS  # the same keys for every sample: OpenRLHF joins them over its batch
        assert all(isinstance(v, list) and len(v) == 1 and isinstance(v[0], (int, float)) for v in logs.values())
        assert logs["judge_empty_answer"] == [0.0] and logs["judge_latency_s"][0] > 0
        assert logs["judge_failures"] == [0.0]  # constrained decoding: both verdicts parse
    rows = read_jsonl(reward_server.run_dir / "rewards.jsonl")
    assert len(rows) >= 2
    assert all(r["request_id"] and len(r["criteria"]) == 2 and "feedback" in r["criteria"][0] for r in rows[-2:])
    # each sample's reward is the mean of its per-criterion values, which the journal keeps
    assert sorted(r["reward"] for r in rows[-2:]) == pytest.approx(sorted(b["rewards"][0] for _, b in answers))
    assert all(r["reward"] == pytest.approx(sum(c["value"] for c in r["criteria"]) / 2) for r in rows[-2:])


def test_the_answer_judged_is_the_response_without_its_special_tokens(reward_server, qwen_tokenizer):
    """A response that is only the end of turn and padding has nothing to judge: the empty-answer reward (0.0),
    unjudged; a query that does not start with its prompt is refused naming it."""
    prompt = chat_prompt(qwen_tokenizer, INSTRUCTION)
    label = {"instruction": INSTRUCTION, "criteria": CRITERIA}
    body = {"query": [openrlhf_query(qwen_tokenizer, prompt, "")], "prompts": [prompt], "labels": [label]}
    status, answer = asyncio.run(post_like_openrlhf(f"{reward_server.root_url}/get_reward/{REWARD_KEY}", body))
    assert status == 200 and answer["rewards"] == [0.0] and answer["extra_logs"]["judge_empty_answer"] == [1.0]
    body["prompts"] = ["другой промпт"]
    status, answer = asyncio.run(post_like_openrlhf(f"{reward_server.root_url}/get_reward/{REWARD_KEY}", body))
    assert status == 400 and answer["error"]["param"] == "query[0]"


def test_route_allows_the_key_and_refuses_everyone_else(reward_server):
    """Allowed: the reward key in the path (no headers), or judge-serve's own Bearer key on /get_reward. Refused:
    no key, a wrong key, the API key in the path; the same bounds as /v1/judge; the key never in the access log."""
    label = {"instruction": INSTRUCTION, "criteria": ["Креативность"]}
    body = {"query": ["p: ответ"], "prompts": ["p: "], "labels": [label]}
    root = reward_server.root_url
    with httpx.Client(timeout=120) as http:
        assert http.post(f"{root}/get_reward/{REWARD_KEY}", json=body).status_code == 200
        assert http.post(f"{root}/get_reward", json=body, headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 200
        for url, headers in ((f"{root}/get_reward", {}), (f"{root}/get_reward/{REWARD_KEY}x", {}),
                             (f"{root}/get_reward/{API_KEY}", {}), (f"{root}/get_reward/wrong", {"Authorization": f"Bearer {API_KEY}"})):
            refused = http.post(url, json=body, headers=headers)
            assert refused.status_code == 401, (url, refused.text)
            assert refused.json()["error"]["code"] == "invalid_api_key" and REWARD_KEY not in refused.text
        too_many = {"query": ["p: a"] * 65, "prompts": ["p: "] * 65, "labels": [label] * 65}
        answer = http.post(f"{root}/get_reward/{REWARD_KEY}", json=too_many)
        assert answer.status_code == 400 and answer.json()["error"]["param"] == "query"
        assert http.post(f"{root}/get_reward/{REWARD_KEY}", content=b"x" * (8 * 1024 * 1024 + 1)).status_code == 413
        bad_label = http.post(f"{root}/get_reward/{REWARD_KEY}", json={**body, "labels": [{"instruction": "x"}]})
        assert bad_label.status_code == 400 and bad_label.json()["error"]["param"].startswith("labels[0]")
    served_log = reward_server.log_path.read_text(errors="replace")
    assert "/get_reward/<reward-key>" in served_log  # the access log is on and names the route
    assert REWARD_KEY not in served_log and REWARD_KEY not in (reward_server.run_dir / "run.json").read_text()


def test_verl_compute_score_sync_and_async(reward_server, monkeypatch):
    """verl's call (keyword arguments as its naive reward manager passes them, reward_kwargs merged) sync and
    async: a score in [0, 1] from extra_info's instruction and criteria, with the logged keys."""
    from judge.reward_clients import compute_score, compute_score_async

    monkeypatch.setenv("JUDGE_SERVE_API_KEY", API_KEY)
    kwargs = dict(data_source="pollux", solution_str="Весна идёт.", ground_truth="Весна пришла.",
                  extra_info={"instruction": INSTRUCTION, "criteria": CRITERIA, "num_turns": 1},
                  judge_url=reward_server.root_url, reward_router_address=None)
    for result in (compute_score(**kwargs), asyncio.run(compute_score_async(**kwargs))):
        assert set(result) == {"score", "judge_failures", "judge_engine_refused", "judge_gate_closed", "judge_empty_answer"}
        assert 0.0 <= result["score"] <= 1.0 and result["judge_empty_answer"] == 0


def test_trl_grpo_trainer_steps_with_the_judge_reward(reward_server, tiny_causal_dir, tmp_path, monkeypatch):
    """A real trl GRPOTrainer runs one step on a tiny policy with the shipped reward function against the served
    judge: the judge's rewards are logged (not NaN), and its verdicts reach the completions table."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from judge.reward_clients import trl_reward_function

    monkeypatch.setenv("JUDGE_SERVE_API_KEY", API_KEY)
    reward = trl_reward_function(reward_server.root_url, rule=RewardRule(on_failure="zero"))
    extras: dict[str, list] = {}
    dataset = Dataset.from_list([
        {"prompt": [{"role": "user", "content": INSTRUCTION}], "criteria": json.dumps(CRITERIA, ensure_ascii=False)},
        {"prompt": [{"role": "user", "content": "Объясните, что такое дождь."}], "criteria": json.dumps(["Креативность"], ensure_ascii=False)},
    ])  # fmt: skip
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, max_steps=1, per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=8, logging_steps=1, report_to=[], save_strategy="no",
                      gradient_checkpointing=False, bf16=False, log_completions=False, seed=0)  # fmt: skip
    trainer = GRPOTrainer(model=str(tiny_causal_dir), reward_funcs=[reward], args=args, train_dataset=dataset)
    original = trainer._log_completion_extra

    def recording(column, values):
        extras.setdefault(column, []).extend(values)
        return original(column, values)

    trainer._log_completion_extra = recording
    trainer.train()
    logged = next(entry for entry in trainer.state.log_history if "rewards/pollux_judge/mean" in entry)
    assert 0.0 <= logged["rewards/pollux_judge/mean"] <= 1.0
    assert len(extras["pollux_judge_verdicts"]) == 4 and all("Креативность" in v for v in extras["pollux_judge_verdicts"])
