"""Qwen3 judges (Pollux-4B-Judge's architecture): the tiny Qwen3 builder, its tokenizer and real chat template,
judging with thinking turned off, the seq2seq recipe training it, and judge-serve serving the export.

Run: .venv/bin/python -m pytest tests/unit/test_qwen3_judge.py -q
The tests that train or serve are in tests/integration/training/test_qwen3_judge.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from train.tiny_models import (
    CHATML_TEMPLATE,
    QWEN3_ADDED_TOKENS,
    QWEN3_CHAT_TEMPLATE,
    build_tiny_qwen3,
    tiny_qwen3_config,
)
from tests.support.qwen3_judge import PROMPT, QWEN3_PROMPT_TEXT


VERDICT = "[FEEDBACK] Ошибок нет. [RESULT] 2 [END]"
#: The same with the verdict as the assistant turn: after the last user turn the template renders the (empty)
#: reasoning block before the content, with or without enable_thinking.
QWEN3_TRAINING_TEXT = QWEN3_PROMPT_TEXT + VERDICT + "<|im_end|>\n"


@pytest.fixture(scope="module")
def tiny_qwen3_dir(tmp_path_factory, qwen3_tokenizer) -> Path:
    """A saved tiny Qwen3ForCausalLM judge (seed 0)."""
    return build_tiny_qwen3(tmp_path_factory.mktemp("tiny-qwen3"), seed=0, tokenizer=qwen3_tokenizer)


# ---- tokenizer and template -------------------------------------------------------------------------------------


def test_qwen3_added_tokens_have_the_real_ids(qwen3_tokenizer):
    """Qwen3's 26 added tokens sit at 151643..151668: Qwen2.5's 22, then <tool_response>, </tool_response>, <think>,
    </think>; eos <|im_end|>, pad <|endoftext|>, no bos."""
    assert len(qwen3_tokenizer) == 151_669
    assert [qwen3_tokenizer.convert_tokens_to_ids(tok) for tok, _ in QWEN3_ADDED_TOKENS] == list(range(151_643, 151_669))
    assert (qwen3_tokenizer.eos_token_id, qwen3_tokenizer.pad_token_id, qwen3_tokenizer.bos_token) == (151_645, 151_643, None)


def test_think_tokens_are_atomic_and_survive_skip_special_tokens(qwen3_tokenizer):
    """<think> and </think> are single tokens but not special: decoding with skip_special_tokens keeps them, as in
    Qwen3's tokenizer_config.json ("special": false)."""
    ids = qwen3_tokenizer("<think>\n\n</think>\n\nОк<|im_end|>", add_special_tokens=False)["input_ids"]
    assert ids[0] == 151_667 and 151_668 in ids and ids[-1] == 151_645
    assert qwen3_tokenizer.decode(ids, skip_special_tokens=True) == "<think>\n\n</think>\n\nОк"


def test_qwen3_text_ids_match_qwen25(qwen3_tokenizer, qwen_tokenizer):
    """Qwen3 kept Qwen2.5's BPE: ordinary text gets the same ids from both tokenizers."""
    text = "Оцените ответ модели по критерию «Грамотность»: 2 балла — ошибок нет (1234 слова)."
    assert qwen3_tokenizer(text)["input_ids"] == qwen_tokenizer(text)["input_ids"]


def test_apply_chat_renders_qwen3_with_thinking_off(qwen3_tokenizer):
    """judge.apply_chat through Qwen3's real template ends the prompt with the empty <think>\\n\\n</think>\\n\\n
    block, and the training text is that prompt + verdict + <|im_end|>\\n, token for token a prefix extension."""
    assert qwen3_tokenizer.chat_template == QWEN3_CHAT_TEMPLATE
    prompt_text = judge.apply_chat(qwen3_tokenizer, PROMPT)
    full_text = judge.apply_chat(qwen3_tokenizer, PROMPT, VERDICT)
    assert prompt_text == QWEN3_PROMPT_TEXT
    assert full_text == QWEN3_TRAINING_TEXT
    prompt_ids = qwen3_tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    full_ids = qwen3_tokenizer(full_text, add_special_tokens=False)["input_ids"]
    assert full_ids[: len(prompt_ids)] == prompt_ids
    assert (prompt_ids[-4], prompt_ids[-2]) == (151_667, 151_668)  # <think> \n\n </think> \n\n: four tokens
    assert qwen3_tokenizer.decode(prompt_ids[-4:]) == "<think>\n\n</think>\n\n"


def test_qwen3_template_thinks_unless_told_not_to(qwen3_tokenizer):
    """Without enable_thinking=False the same template stops at the assistant header (the model would open its own
    <think> and reason): the switch apply_chat sets is what keeps a Qwen3 judge from thinking."""
    messages = [{"role": "user", "content": PROMPT}]
    default = qwen3_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert default == "<|im_start|>user\n" + PROMPT + "<|im_end|>\n<|im_start|>assistant\n"
    assert judge.apply_chat(qwen3_tokenizer, PROMPT) == default + "<think>\n\n</think>\n\n"


@pytest.mark.parametrize("completion", [None, VERDICT], ids=["prompt", "prompt+verdict"])
def test_apply_chat_leaves_chatml_byte_for_byte(qwen_tokenizer, completion):
    """Qwen2.5 judges (ChatML) render exactly as before thinking was switched off: the hand-derived ChatML text, equal
    to the template rendered without enable_thinking."""
    assert qwen_tokenizer.chat_template == CHATML_TEMPLATE
    messages = judge.chat_messages(PROMPT, completion)
    without_switch = qwen_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=completion is None)
    expected = "<|im_start|>user\n" + PROMPT + "<|im_end|>\n<|im_start|>assistant\n" + (
        "" if completion is None else VERDICT + "<|im_end|>\n")
    assert judge.apply_chat(qwen_tokenizer, PROMPT, completion) == without_switch == expected


def test_seq2seq_dataset_rows_carry_thinking_off(qwen3_tokenizer):
    """The seq2seq recipe's training ids are the chat template's rendering with thinking off, exactly what
    apply_chat serves: the unlabelled prompt ends with the empty <think> block, the labels start at the verdict."""
    from train.seq2seq import sft_dataset

    example = sft_dataset([{"prompt": PROMPT, "completion": VERDICT}], qwen3_tokenizer)[0]
    prompt_ids = qwen3_tokenizer(judge.apply_chat(qwen3_tokenizer, PROMPT), add_special_tokens=False)["input_ids"]
    n = len(prompt_ids)
    assert example["input_ids"] == qwen3_tokenizer(judge.apply_chat(qwen3_tokenizer, PROMPT, VERDICT),
                                                   add_special_tokens=False)["input_ids"]  # fmt: skip
    assert example["input_ids"][:n] == prompt_ids and qwen3_tokenizer.decode(prompt_ids).endswith("</think>\n\n")
    assert example["completion_mask"] == [0] * n + [1] * (len(example["input_ids"]) - n)
    assert qwen3_tokenizer.decode(example["input_ids"][n:]) == VERDICT + "<|im_end|>\n"


# ---- the tiny model ---------------------------------------------------------------------------------------------


def test_tiny_qwen3_config_shape():
    """A 2-layer Qwen3 with head_dim 32 (vLLM's CPU minimum), one KV head, tied embeddings, the padded vocab."""
    config = tiny_qwen3_config()
    assert config.model_type == "qwen3"
    assert (config.num_hidden_layers, config.head_dim, config.num_attention_heads, config.num_key_value_heads) == (2, 32, 2, 1)
    assert config.vocab_size == 151_936 and config.tie_word_embeddings is True and config.attention_bias is False
    assert (config.eos_token_id, config.pad_token_id) == (151_645, 151_643)


def test_tiny_qwen3_loads_in_transformers_and_generates(tiny_qwen3_dir):
    """build -> save -> AutoModelForCausalLM gives a float32 Qwen3ForCausalLM with per-head q/k norms and tied
    embeddings; AutoTokenizer gives the Qwen3 template back; greedy generation adds tokens."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen3ForCausalLM

    config = json.loads((tiny_qwen3_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"] and config["model_type"] == "qwen3"
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen3_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen3_dir)
    assert isinstance(model, Qwen3ForCausalLM) and model.dtype == torch.float32
    assert model.model.layers[0].self_attn.q_norm.weight.shape == (32,)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert model.generation_config.eos_token_id == 151_645
    assert tokenizer.chat_template == QWEN3_CHAT_TEMPLATE and len(tokenizer) == 151_669

    inputs = tokenizer(judge.apply_chat(tokenizer, PROMPT), add_special_tokens=False, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=3, min_new_tokens=3, do_sample=False)
    assert out.shape[1] == inputs["input_ids"].shape[1] + 3
