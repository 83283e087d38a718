"""judge-serve's tokenizer loader (serve/tokenizer.py): for every (model type, tokenizer class) pair it knows, the
class and the token ids are AutoTokenizer's on the installed transformers; anything else goes to AutoTokenizer.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_serve_tokenizer.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import judge
from serve.tokenizer import KNOWN_CLASSES, load_tokenizer, tokenizer_class_path

PROMPT = judge.render_prompt({"instruction": "Объясни, почему небо голубое.", "answer": "Из-за рэлеевского рассеяния.",
                              "criteria_name": "Креативность", "rubrics": "0: нет\n1: есть", "reference_answer": None})


@pytest.fixture(scope="module")
def tokenizer_files(tmp_path_factory, qwen_tokenizer, qwen3_tokenizer) -> dict[str, Path]:
    """The Qwen2.5 and the Qwen3 tokenizer (real vocabulary and templates, train.tiny_models; the session's), saved
    once each."""
    qwen25 = tmp_path_factory.mktemp("qwen25-tokenizer")
    qwen_tokenizer.save_pretrained(qwen25)
    qwen3 = tmp_path_factory.mktemp("qwen3-tokenizer")
    qwen3_tokenizer.save_pretrained(qwen3)
    return {"qwen2": qwen25, "qwen3": qwen3}


def _checkpoint(files: Path, folder: Path, model_type: str, tokenizer_class: str | None, **extra) -> Path:
    """A checkpoint folder's tokenizer files and config.json, with the given model type and tokenizer class."""
    folder.mkdir()
    for path in files.iterdir():
        shutil.copy(path, folder / path.name)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("tokenizer_class", None)
    if tokenizer_class is not None:
        config["tokenizer_class"] = tokenizer_class
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, **extra}), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    return folder


@pytest.mark.parametrize(("model_type", "tokenizer_class"), sorted(KNOWN_CLASSES))
def test_every_known_pair_loads_the_class_and_ids_autotokenizer_gives(tokenizer_files, tmp_path, model_type,
                                                                      tokenizer_class):  # fmt: skip
    """Each pair of the table, on the installed transformers: AutoTokenizer's class, the same ids for a rendered
    POLLUX prompt through the chat template, the same vocabulary size (loads the 151k-token tokenizer twice)."""
    from transformers import AutoTokenizer

    folder = _checkpoint(tokenizer_files[model_type], tmp_path / "ckpt", model_type, tokenizer_class)
    ours, theirs = load_tokenizer(folder), AutoTokenizer.from_pretrained(str(folder))
    assert type(ours) is type(theirs)
    assert (type(ours).__module__, type(ours).__name__) == KNOWN_CLASSES[model_type, tokenizer_class]
    assert ours.encode(judge.apply_chat(ours, PROMPT)) == theirs.encode(judge.apply_chat(theirs, PROMPT))
    assert len(ours) == len(theirs)


def test_the_toolkits_tiny_judges_take_the_direct_path(tokenizer_files, tmp_path):
    """The folders the tests and the demo serve (train.tiny_models: the Qwen2.5 and Qwen3 configs, with the tokenizer
    files those builders save) are in the table, so judge-serve does not import AutoTokenizer for them."""
    from train.tiny_models import tiny_qwen2_config, tiny_qwen3_config

    for model_type, config in (("qwen2", tiny_qwen2_config("causal")), ("qwen3", tiny_qwen3_config())):
        folder = tmp_path / model_type
        shutil.copytree(tokenizer_files[model_type], folder)
        config.to_json_file(folder / "config.json")
        assert tokenizer_class_path(folder) is not None, model_type
