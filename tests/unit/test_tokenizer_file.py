"""``train.tokenizer_file.compact_tokenizer_json``: the compact ``tokenizer.json`` loads to the same tokenizer as the
file ``save_pretrained`` wrote, through transformers and through ``tokenizers`` alike, and a file it cannot write in
that form is left as it was."""

from __future__ import annotations

import json
import shutil

import pytest

from train.tokenizer_file import compact_tokenizer_json


def _texts() -> list[str]:
    """Every instruction and answer of the bundled sample (Russian prose, code, digits, markup), and the edges of the
    BPE: special and added tokens inside text, whitespace runs, bytes outside Cyrillic and Latin."""
    from judge.sample_data import sample_data_path

    texts = []
    for line in sample_data_path().read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        texts += [row["instruction"], row["answer"]]
    edges = ["<|im_start|>user\nОцени<|im_end|>\n<think>x</think>", "  \t\n\n   x", "日本語 🙂 é\u0301 \x00"]
    return texts + edges


@pytest.fixture(scope="module")
def saved_both_ways(tmp_path_factory, qwen_tokenizer, tiny_causal_dir):
    """The Qwen2.5 tokenizer saved by ``save_pretrained`` (indented, merges as pairs) and the same folder compacted,
    each beside a Qwen2 config.json (for which AutoTokenizer picks ``Qwen2Tokenizer``, the class that parses the file
    in Python)."""
    saved = tmp_path_factory.mktemp("saved")
    qwen_tokenizer.save_pretrained(str(saved))
    shutil.copy(tiny_causal_dir / "config.json", saved / "config.json")
    compact = tmp_path_factory.mktemp("compact")
    shutil.copytree(saved, compact, dirs_exist_ok=True)
    assert compact_tokenizer_json(compact) is True
    return saved, compact


def test_the_compact_file_is_one_line_with_string_merges(saved_both_ways):
    saved, compact = saved_both_ways
    before = json.loads((saved / "tokenizer.json").read_text(encoding="utf-8"))
    text = (compact / "tokenizer.json").read_text(encoding="utf-8")
    after = json.loads(text)
    assert "\n" not in text
    assert isinstance(before["model"]["merges"][0], list)  # what save_pretrained writes, so the rewrite has work
    assert after["model"]["merges"] == [f"{a} {b}" for a, b in before["model"]["merges"]]
    after["model"]["merges"] = before["model"]["merges"]
    assert after == before  # nothing else changed
    assert len(text.encode("utf-8")) < (saved / "tokenizer.json").stat().st_size / 2


def test_both_files_give_the_same_ids_through_transformers_and_tokenizers(saved_both_ways, qwen_tokenizer):
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    saved, compact = saved_both_ways
    texts = _texts()
    expected = qwen_tokenizer(texts)["input_ids"]  # the tokenizer built in memory, before any file
    for folder in (saved, compact):
        loaded = AutoTokenizer.from_pretrained(str(folder))
        assert type(loaded).__name__ == "Qwen2Tokenizer"
        assert loaded(texts)["input_ids"] == expected, folder
        assert loaded.get_vocab() == qwen_tokenizer.get_vocab()
        assert loaded.all_special_tokens == qwen_tokenizer.all_special_tokens
        rendered = loaded.apply_chat_template([{"role": "user", "content": texts[0]}], tokenize=False,
                                              add_generation_prompt=True)  # fmt: skip
        assert loaded(rendered)["input_ids"] == qwen_tokenizer(rendered)["input_ids"]
        backend = Tokenizer.from_file(str(folder / "tokenizer.json"))  # how vLLM's fast path and trl's read it
        assert [encoding.ids for encoding in backend.encode_batch(texts, add_special_tokens=False)] == expected


def test_a_merge_part_holding_a_space_leaves_the_file_as_it_was(tmp_path):
    """``"a b c"`` could not say which space splits the merge: such a file keeps its pairs."""
    data = {"model": {"type": "BPE", "vocab": {"a": 0, "b c": 1, "ab c": 2}, "merges": [["a", "b c"]]}}
    original = json.dumps(data, indent=2)
    (tmp_path / "tokenizer.json").write_text(original, encoding="utf-8")
    assert compact_tokenizer_json(tmp_path) is False
    assert (tmp_path / "tokenizer.json").read_text(encoding="utf-8") == original


@pytest.mark.parametrize("model", [
    {"type": "Unigram", "vocab": [["a", 0.0]]},
    {"type": "WordLevel", "vocab": {"a": 0}},
    {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b", "c"]]},
])  # fmt: skip
def test_a_file_that_is_no_bpe_with_pair_merges_is_left_as_it_was(tmp_path, model):
    original = json.dumps({"model": model}, indent=2)
    (tmp_path / "tokenizer.json").write_text(original, encoding="utf-8")
    assert compact_tokenizer_json(tmp_path) is False
    assert (tmp_path / "tokenizer.json").read_text(encoding="utf-8") == original


def test_string_merges_are_kept_and_a_folder_without_the_file_is_no_error(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "merges": ["a b", ["ab", "c"]]}},
                                                        indent=2), encoding="utf-8")  # fmt: skip
    assert compact_tokenizer_json(tmp_path) is True
    compact = '{"model":{"type":"BPE","merges":["a b","ab c"]}}'
    assert (tmp_path / "tokenizer.json").read_text(encoding="utf-8") == compact
    assert compact_tokenizer_json(tmp_path / "absent") is False


def test_the_tiny_models_ship_the_compact_file(tiny_causal_dir):
    text = (tiny_causal_dir / "tokenizer.json").read_text(encoding="utf-8")
    assert "\n" not in text and isinstance(json.loads(text)["model"]["merges"][0], str)
