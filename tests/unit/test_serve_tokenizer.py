"""judge-serve's tokenizer loader (serve/tokenizer.py): for every (model type, tokenizer class) pair it knows, the
class and the token ids are AutoTokenizer's on the installed transformers; anything else goes to AutoTokenizer.

The tests of this subject that start heavy components are in tests/integration/serving/test_serve_tokenizer.py.
"""

from __future__ import annotations

import json

import pytest

from serve.tokenizer import tokenizer_class_path


@pytest.mark.parametrize(
    ("model_type", "tokenizer_class", "extra"),
    [
        ("llama", "LlamaTokenizer", {}),  # a model type the table does not hold
        ("qwen2", "GPT2Tokenizer", {}),  # a class it does not hold
        ("qwen2", None, {}),  # no tokenizer_class
        ("qwen2", "Qwen2Tokenizer", {"auto_map": {"AutoTokenizer": ["tok.Custom", None]}}),  # remote code
    ],
)
def test_what_the_table_does_not_hold_goes_to_autotokenizer(tmp_path, model_type, tokenizer_class, extra):
    """Another model type or class, no class, or remote code: no direct class (AutoTokenizer decides)."""
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    config = {"tokenizer_class": tokenizer_class} if tokenizer_class else {}
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, **extra}), encoding="utf-8")
    assert tokenizer_class_path(folder) is None


def test_a_hub_id_or_an_unreadable_folder_goes_to_autotokenizer(tmp_path):
    """A hub id (no such local folder), a folder without config.json, a config.json that is not JSON."""
    assert tokenizer_class_path("ai-forever/pollux-judge-7b") is None
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "Qwen2Tokenizer"}', encoding="utf-8")
    assert tokenizer_class_path(tmp_path) is None
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    assert tokenizer_class_path(tmp_path) is None
