"""What POLLUX's own released evaluator computes: ``format_acc``, ``score_acc`` and ``mse`` (not the paper's metrics).

The POLLUX repository's judge evaluator is ``TextEvaluator`` in ``src/utils/evaluation.py`` of ai-forever/POLLUX,
cited below as ``evaluation.py:N``: line N of that file at commit 65ff121e41b68b01a4f177a13770bade9483d36c (lines
1-87, everything cited here, read the same at 2d2a18c507c14a26834c72f0983769f9fcb31844). It reads a score from each
judge output with ``TextEvaluator.extract_score`` (lines 26-35) and reports, in ``compute_metrics`` (lines 52-87):

- ``format_acc``: the share of outputs from which a score was extracted (lines 71-72, 76);
- ``score_acc``: the share of outputs whose score equals the reference exactly, an output without a score counting
  as wrong (lines 73, 77);
- ``score_format_acc``: the same exact matches over the outputs *with* a score only (line 74);
- ``mse``: the mean squared error over the outputs with a score (lines 82-85).

Both are reproduced rule for rule (this module's own code, not a copy), known bugs included, so that a user can put
the repository's figures beside the paper's. They are computed over every item scored, where the
repository's own command (``src/inference.py``, ``Scoring.__init__``:
``load_dataset(test_path)["test"].select(range(100))``) scores only the first 100 rows of the test. The paper's
metrics (MAE against the experts' mode, Verdict Confidence, Spearman; ``eval.scoring.item_table``) stay the
headline; these numbers are reported in their own section.

Which of POLLUX's two readings: the repository reads a verdict in two ways. ``evaluation.py``'s ``extract_score``
(here ``extract_score``) takes the first "d.d" decimal, else the first single digit, after a literal "[RESULT] "
anywhere in the text; ``src/utils/score_utils.py``'s ``extract_score``, which ``src/metrics.py`` (its ranking
matrix) calls, takes the first complete ``[RESULT] <number> [END]``, case-insensitive, with a sign and a decimal
comma (ai-forever/POLLUX at 83f6eb6bf6f1a52e1899fcdc872593007bfdf3c7; the same function at 9179cb4e). They differ:
"[RESULT] 1,5 [END]" reads 1 here and 1.5 there, "[RESULT] 10 [END]" 1 and 10, "[RESULT] 2" 2 and nothing,
"[result] 2 [END]" nothing and 2, "[RESULT] -1 [END]" nothing and -1. This section reproduces ``compute_metrics``,
and ``compute_metrics`` reads with ``evaluation.py``'s own function (lines 63 and 67), so its figures are only
POLLUX's with that reading; ``format_acc`` under the other would be a figure no POLLUX code computes, so it is not
offered. ``judge-eval rank --verdict-reader pollux`` reproduces ``metrics.py`` and reads with the other
(``judge.verdicts.parse_pollux_result``); the paper's headline metrics read with neither (``judge.parse_verdict``).

The reference: ``compute_metrics`` takes an ``int`` as it is, else extracts it from a reference judge text with the
same ``extract_score`` (line 63); here it is the released ``criteria_score`` (a column of the ai-forever/POLLUX
dataset), a float such as 1.5 that the original would have to be handed as an ``int`` or as text. Where a data row
has no ``criteria_score``, the loaders (``judge.JudgeRecord.from_row``, ``judge.column_reader``) fill it with the
mean of the experts' scores, the aggregate the release reports, before this module sees the record. The record does
not say which it was; the load's report does (``judge.LoadReport.derived_criteria_records``), and ``judge-eval
score`` hands those positions here, so ``n_reference_from_experts`` counts them, together with the records handed
here without an aggregate (built in Python), whose reference this module derives the same way. POLLUX's own caller
(``src/inference.py``) hands that reference to ``compute_metrics`` as the text ``[RESULT] {float(criteria_score)}``,
read back with ``extract_score``: a negative one (a rubric with a -1 level) reads nothing and its sample is skipped,
here as there (``_as_pollux_reads_reference``; counted in ``n_no_reference``).

A request that failed is an empty output, as POLLUX's pipeline makes it: its client returns "" for any exception
(``src/utils/openai_runner.py``, ``run_async``), and ``compute_metrics`` reads no score from "", so the item is in
``n`` with ``format_acc`` and ``score_acc`` 0 (``n_request_failed`` still counts them). An item with no prediction at
all (an unfinished run) was never asked: it is left out (``n_no_prediction``).

Where the original cannot give a number this module says why instead: with no output at all ``compute_metrics``
raises (line 82 builds an empty float array and line 83 inverts it), here every figure is NaN and ``note`` says so.

Regression (``-r``) judges: no figure. ``compute_metrics`` reads a score from text, and an ``-r`` judge's text
("[FEEDBACK] ... [END]", no ``[RESULT]``) gives none: every output would read as a format failure, while its score is
the head's value, which no POLLUX code puts through ``compute_metrics`` (fed in, ``format_acc`` is 1 by construction
and ``score_acc`` a float equality that is almost never true). A figure no POLLUX code computes is not offered (as
above), so ``pollux_official`` gives None for a run in which any item's score is a regression head's
(``regression_score``, or ``score_source`` ``regression_head``), and ``official_not_computed`` says why. A mixed run
(some items scored from a verdict, some by a head: predictions of two judges in one file) is left out whole, by the
same rule: over all its outputs the figure would count the head's items as format failures, and over the verdict
items alone it would be a figure for part of the run under a title that presents it as the run's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from eval.judging.predictions import REQUEST_FAILED
from judge.metrics_json.metrics import OfficialSplit, PolluxOfficial
from judge.record_columns import as_columns
from judge.wire_fields import ScoreSource

__all__ = ["bare_integer_outputs", "extract_score", "no_raw_outputs", "official_metrics", "official_not_computed",
           "pollux_official", "NOT_COMPUTED_INTEGER", "NOT_COMPUTED_INTEGER_INFERRED", "NOT_COMPUTED_NO_RAW",
           "NOT_COMPUTED_REGRESSION", "POLLUX_PATTERNS", "TITLE"]

TITLE = "POLLUX repository evaluator (not the paper's metrics)"
#: Why a run has no section: an integer judge writes no ``[RESULT]`` tag; a regression head's scores are no text
#: (module docstring, "Regression"). report.md, report.html and the console say it (``official_not_computed``).
NOT_COMPUTED_INTEGER = ("Not computed: it reads the score after a `[RESULT]` tag; this judge answers with a bare "
                        "integer (Pollux-4B-Judge's format).")
NOT_COMPUTED_INTEGER_INFERRED = ("Not computed: it reads the score after a `[RESULT]` tag; no output of this run "
                                 "holds one while its verdicts were read (a bare integer, Pollux-4B-Judge's format; "
                                 "no run.json names the run's verdict format).")
NOT_COMPUTED_NO_RAW = ("Not computed: it reads the score after a `[RESULT]` tag in each raw output; this run's "
                       "predictions hold no raw outputs to read (scores converted from another tool).")
NOT_COMPUTED_REGRESSION = ("Not computed: it reads the score after a `[RESULT]` tag; this run's scores are (some or "
                           "all) a regression head's value, which no POLLUX code puts through its evaluator.")

# evaluation.py:27 and :31: a lookbehind for "[RESULT] " (one space, upper case, no IGNORECASE), then any whitespace
# (newlines, NBSP, a second space: Python's Unicode \s), then a decimal "\d+\.\d+" (line 27) or one digit (line 31).
# Each pattern is searched over the WHOLE text (re.search), the decimal one first; consequences, all kept:
#   "[RESULT]  2" and "[RESULT] \n2" read as 2 (the \s* after the lookbehind);
#   "«[RESULT] 1» ... [RESULT] 1.5" reads as 1.5: any decimal anywhere beats an earlier integer;
#   "[RESULT] 10" reads as 1 and "[RESULT] 1,5" as 1 (only one digit when there is no "d.d");
#   "[RESULT] 2." reads as 2 (no digit after the point, so no decimal);
#   the first "[RESULT] " followed by a digit wins otherwise, even one quoted inside the rationale;
#   \d is Unicode: "[RESULT] ٢" (Arabic-Indic two) reads as 2.0, as Python's float() accepts any decimal digit;
#   "-1", "**2**", "[RESULT]2" and "[result] 2" give nothing.
#: POLLUX's two patterns as written (lookbehind), kept to pin the patterns searched below against them.
POLLUX_PATTERNS = (r"(?<=\[RESULT\] )\s*\d+\.\d+", r"(?<=\[RESULT\] )\s*\d")
# The same searches with the tag as a literal prefix and the score as group 1: the leftmost match starts where the
# lookbehind's would, 9 characters earlier, and group 1 is its match. A pattern that starts with a literal is found
# by a fast scan; a lookbehind is tried at every position (x7 on outputs with a ~1 KB rationale).
# tests/unit/test_pollux_official.py checks both forms on generated texts.
_DECIMAL_AFTER_TAG = re.compile(r"\[RESULT\] (\s*\d+\.\d+)")
_DIGIT_AFTER_TAG = re.compile(r"\[RESULT\] (\s*\d)")


def extract_score(text: str | None) -> float | None:
    """The score POLLUX's evaluator reads from a judge output, or None when it reads none (evaluation.py:26-35):
    ``TextEvaluator.extract_score``'s reading, not ``score_utils.py``'s (the module docstring says why).

    ``None`` and ``""`` read as nothing (the original would raise on ``None``; a missing output has no score).
    """
    if not text:
        return None
    for pattern in (_DECIMAL_AFTER_TAG, _DIGIT_AFTER_TAG):
        found = pattern.search(text)
        if found is not None:
            return float(found.group(1).strip())
    return None


def official_metrics(scores: Iterable[float | None], references: Iterable[float]) -> dict[str, Any]:
    """``compute_metrics`` (evaluation.py:52-87) over extracted scores and their references.

    Args:
        scores: one extracted score per output (None or NaN: nothing extracted).
        references: the matching reference values (``criteria_score``). The original skips a sample whose
            reference it cannot read (lines 63-66); callers leave those out before (``n_no_reference``).

    Returns:
        ``{"n", "n_parsed", "format_acc", "score_acc", "score_format_acc", "mse", "note"}``. As in the original, a
        rate over an empty list is 0 (line 80: ``score_format_acc`` when nothing parsed) and ``mse`` is NaN when
        nothing parsed (line 85: the mean of an empty array); with no output at all every figure is NaN (the
        original raises there) and ``note`` says why; an ``mse`` past float64's range (a 200-digit verdict read
        as 1e200) is inf, as POLLUX's own, with a note; otherwise ``note`` is "".
    """
    if not isinstance(scores, np.ndarray):  # a list with None for "nothing extracted"
        scores = [np.nan if v is None else v for v in scores]
    scores = np.asarray(scores, dtype=np.float64)
    references = np.asarray(list(references), dtype=np.float64)
    parsed = ~np.isnan(scores)  # POLLUX counts a score float() read as inf (a 309-digit verdict) as parsed
    n, n_parsed = len(scores), int(parsed.sum())
    if n == 0:
        nan = float("nan")
        return {"n": 0, "n_parsed": 0, "format_acc": nan, "score_acc": nan, "score_format_acc": nan, "mse": nan,
                "note": "no outputs: POLLUX's compute_metrics raises on an empty set (evaluation.py:82-83)"}
    # A score POLLUX's parser reads from a verdict of 200 digits (1e200) squares past float64: inf, as POLLUX's own
    # np.mean gives, said in the note rather than as numpy's "overflow encountered" warning.
    with np.errstate(over="ignore", invalid="ignore"):
        errors = scores[parsed] - references[parsed]
        mse = float((errors**2).mean()) if n_parsed else float("nan")
    exact = int((errors == 0).sum())  # line 73: true_score == pred_score, float equality (1.0 == 1)
    note = "" if n_parsed else "no output had a score: mse is undefined (POLLUX's np.mean of nothing)"
    if n_parsed and not np.isfinite(mse):
        note = (f"mse is {mse}: a parsed score's squared error is past float64's range (largest parsed score "
                f"{float(np.abs(scores[parsed]).max()):.6g}), as in POLLUX's own np.mean")
    return {
        "n": n,
        "n_parsed": n_parsed,
        "format_acc": n_parsed / n,
        "score_acc": exact / n,  # an output without a score appends 0 (line 77)
        "score_format_acc": exact / n_parsed if n_parsed else 0.0,  # line 80: an empty list gives 0
        "mse": mse,
        "note": note,
    }


def _as_pollux_reads_reference(references: np.ndarray) -> np.ndarray:
    """Each reference as POLLUX reads it back: ``src/inference.py`` (``Scoring.compute_metrics``, ai-forever/POLLUX
    at 0a9944ab) hands ``compute_metrics`` the text ``f'[FEEDBACK] [RESULT] {float(criteria_score)} [END]'``, which
    ``extract_score`` reads (evaluation.py:63), skipping the sample when it reads nothing (lines 64-66). A
    non-negative float's text is its own value again; a negative one ("[RESULT] -0.5") reads nothing, so the item is
    skipped there, NaN here (``n_no_reference``). Read once per distinct value: the references are few."""
    out = references.copy()
    finite = np.isfinite(references)
    for value in np.unique(references[finite]):
        read = extract_score(f"[FEEDBACK] [RESULT] {float(value)} [END]")
        out[finite & (references == value)] = np.nan if read is None else read
    return out


def _references(columns, derived: Iterable[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Each record's ``criteria_score``; without one, the mean of its expert scores, which is how the released
    aggregate is made ("an unweighted average of the corresponding point estimates",
    arXiv 2505.24616v3, Section 2.3). Returns ``(values, derived_from_experts)``, NaN where there is neither.

    ``derived_from_experts`` marks the records that reach this function without an aggregate (records built in
    Python) and the records at the positions ``derived``: those whose loader filled a missing ``criteria_score``
    with the same mean (``judge.LoadReport.derived_criteria_records``; nothing in the record says that it did)."""
    references = columns.criteria_score.copy()
    experts = columns.expert_matrix()
    counts = (~np.isnan(experts)).sum(axis=1)
    from_experts = np.isnan(references) & (counts > 0)
    if from_experts.any():
        # summed left to right, as Python's sum() over the record's expert_scores
        sums = np.zeros(len(references))
        for k in range(experts.shape[1]):
            sums = np.where(k < counts, sums + np.nan_to_num(experts[:, k]), sums)
        references[from_experts] = sums[from_experts] / counts[from_experts]
    loaded = np.fromiter(derived, dtype=np.int64)
    if len(loaded):
        from_experts[loaded] = True
    return references, from_experts


#: The prediction fields POLLUX's evaluator reads (its extraction, the failures) and those that mark a head's score.
OFFICIAL_FIELDS = ("id", "raw_output", "error", "score_source", "regression_score")


def _prediction_columns(predictions) -> dict[str, list]:
    """``OFFICIAL_FIELDS`` of a prediction table (Arrow), or of prediction rows, as one Python list per field (a
    field no row carries: all None). A list per field, not a dict per row: a full test's 160,000 rows would be as
    many dicts built only to be read once. A table's ``id`` is left out: the join reads it as the Arrow column it is
    (``pollux_official``)."""
    import pyarrow as pa

    if not isinstance(predictions, pa.Table):
        rows = list(predictions)
        return {name: [row[name] if name == "id" else row.get(name) for row in rows] for name in OFFICIAL_FIELDS}
    return {name: predictions.column(name).to_pylist() if name in predictions.column_names
            else [None] * predictions.num_rows for name in OFFICIAL_FIELDS if name != "id"}  # ids stay Arrow's


def pollux_official(records, predictions, splits: Mapping[str, Any], derived_references: Iterable[int] = ()
                    ) -> PolluxOfficial | None:
    """POLLUX's evaluator over a run, per test (Zero-Shot, Standard, both).

    Args:
        records: the labelled records (``judge.RecordColumns``, or a ``JudgeRecord`` list).
        predictions: the run's predictions: the prediction table (``eval.judging.predictions.read_prediction_table``)
            or its rows (the first row per id counts, as in scoring). Ids joined as ``eval.scoring.item_table.id_array``
            makes them, through the table and through rows alike; another id type is a ValueError naming ``id``.
        splits: ``{split name: item indices into records}`` (``eval.scoring.item_table``'s splits).
        derived_references: positions in ``records`` of the records whose ``criteria_score`` their loader derived
            from the experts (``judge.LoadReport.derived_criteria_records`` of the load that gave ``records``).

    Returns:
        None where any item's score is a regression head's (module docstring, "Regression"); else
        ``judge.metrics_json.metrics.PolluxOfficial``: ``title``, ``extraction``, ``reference`` and ``splits`` (split ->
        ``OfficialSplit``), where each split holds
        ``official_metrics``'s keys over the outputs (a row whose request failed is an empty output, as POLLUX's
        client makes it: in ``n`` with no score, and counted in ``n_request_failed``), ``n_no_prediction`` (left
        out), ``n_no_reference`` (no criteria_score and no expert score, or
        one POLLUX's text reference reads nothing from, a negative one: left out), ``n_reference_from_experts``
        (references that are the experts' mean: ``derived_references``,
        and records handed in without criteria_score; ``_references``),
        ``n_regression`` and ``n_regression_clipped`` (0: a run with a head's scores gets None).
    """
    import pyarrow as pa

    from eval.scoring.item_table import first_prediction_rows

    columns = as_columns(records)
    rows = _prediction_columns(predictions)
    ids = predictions.column("id") if isinstance(predictions, pa.Table) else rows["id"]
    n = len(columns)
    # Each record's prediction row (-1: none; its id's first row, as score's item table joins it), then every check
    # of the rows at once, as numpy object columns; the extraction is the one step taken row by row.
    match, _ = first_prediction_rows(columns.ids, ids)
    predicted = np.flatnonzero(match >= 0)
    row = match[predicted]

    def at_rows(name: str) -> np.ndarray:
        values = np.empty(len(rows[name]), dtype=object)
        values[:] = rows[name]
        return values[row]

    # POLLUX's client turns a failed request into "" (src/utils/openai_runner.py, run_async's request_one:
    # `except Exception: ... return ""`) and compute_metrics reads nothing from "": an output without a score,
    # format_acc 0 and score_acc 0 (evaluation.py:76-77), so it is in n, as there.
    request_failed = (at_rows("error") == REQUEST_FAILED).astype(bool)
    head = (at_rows("regression_score") != None) | (at_rows("score_source") == ScoreSource.REGRESSION_HEAD)  # noqa: E711
    if (head.astype(bool) & ~request_failed).any():
        return None  # a regression head's score: no POLLUX figure (module docstring, "Regression")
    kind = np.full(n, "no_prediction", dtype=object)  # "output", "no_prediction", "request_failed"
    kind[predicted[request_failed]] = "request_failed"
    output = predicted[~request_failed]
    kind[output] = "output"
    raw_output = rows["raw_output"]
    # The score POLLUX's evaluator takes from the item's prediction (NaN: nothing extracted).
    scores = np.full(n, np.nan)
    scores[output] = [np.nan if score is None else score
                      for score in map(extract_score, [raw_output[j] for j in row[~request_failed].tolist()])]
    references, from_experts = _references(columns, derived_references)
    references = _as_pollux_reads_reference(references)

    no_output = kind == "no_prediction"  # an unfinished run's missing item: no output, not even ""
    usable = ~no_output & np.isfinite(references)
    blocks: dict[str, OfficialSplit] = {}
    for split, index in splits.items():
        index = np.asarray(index, dtype=np.int64)
        used = index[usable[index]]
        blocks[split] = OfficialSplit(
            **official_metrics(scores[used], references[used]),
            n_no_prediction=int((kind[index] == "no_prediction").sum()),
            n_request_failed=int((kind[index] == "request_failed").sum()),
            n_no_reference=int((~no_output[index] & ~np.isfinite(references[index])).sum()),
            n_reference_from_experts=int(from_experts[used].sum()),
            n_regression=0, n_regression_clipped=0,  # kept in metrics.json's schema; such runs get no section
        )
    return PolluxOfficial(
        title=TITLE,
        extraction="the first decimal number after '[RESULT] ' and optional whitespace anywhere in the output, "
                   "else the first single digit there (TextEvaluator.extract_score, src/utils/evaluation.py:26-35 "
                   "at ai-forever/POLLUX 65ff121e, the reading its compute_metrics uses; bugs kept: '10' reads as "
                   "1, '1,5' as 1, a later decimal beats an earlier integer; not score_utils.py's '[RESULT] n "
                   "[END]' reading of its metrics.py, which `judge-eval rank --verdict-reader pollux` uses); "
                   "a failed request is an empty output, no score (POLLUX's client returns '', "
                   "src/utils/openai_runner.py)",
        reference="criteria_score; a data row without one has the mean of its experts' scores, filled in by the "
                  "loader (n_reference_from_experts counts these, as the load reported them, and records handed to "
                  "the evaluator without one)",
        splits=blocks,
    )


def bare_integer_outputs(predictions) -> bool:
    """Whether a run whose verdict format no ``run.json`` names answered as an integer judge does (Pollux-4B-Judge's
    ``<think>…</think>2``): none of its outputs holds a ``[RESULT]`` tag, in any case, while some were read as a
    verdict's score (not a regression head's, which writes no ``[RESULT]`` either). POLLUX's evaluator would read no
    score from any of them, a ``format_acc`` of 0 under its title that says nothing of the judge. An output with a
    lower-case ``[result]`` stays tagged: POLLUX's reading of it is that 0.

    Args:
        predictions: the prediction table (``eval.judging.predictions.read_prediction_table``).
    """
    import pyarrow.compute as pc

    def column(name: str):
        return predictions.column(name) if name in predictions.column_names else None

    raw, parsed = column("raw_output"), column("parse_ok")
    # outputs to read: a parsed row's raw output, not a file of scores alone (no_raw_outputs)
    if raw is None or parsed is None or not pc.any(_parsed_with_raw(raw, parsed)).as_py():
        return False
    if pc.any(pc.match_substring(raw, "[result]", ignore_case=True).fill_null(False)).as_py():
        return False
    head, source = column("regression_score"), column("score_source")
    return not ((head is not None and head.null_count < len(head)) or (
        source is not None and pc.any(pc.equal(source, ScoreSource.REGRESSION_HEAD).fill_null(False)).as_py()))


def _parsed_with_raw(raw, parsed):
    """Per row: read as a verdict (``parse_ok``) with a raw output that is not empty."""
    import pyarrow.compute as pc

    return pc.and_(parsed.fill_null(False), pc.greater(pc.utf8_length(raw), 0).fill_null(False))


def no_raw_outputs(predictions) -> bool:
    """Whether some rows of a run were read as verdicts while none holds a raw output (``raw_output`` absent, null or
    empty: an external judge's scores converted to a predictions file): POLLUX's evaluator reads the score from the
    output's text and would find none, a ``format_acc`` of 0 that says nothing of the judge.

    Args:
        predictions: the prediction table (``eval.judging.predictions.read_prediction_table``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if "parse_ok" not in predictions.column_names:
        return False
    parsed = predictions.column("parse_ok")
    if not pc.any(parsed.fill_null(False)).as_py():
        return False
    raw = (predictions.column("raw_output") if "raw_output" in predictions.column_names
           else pa.nulls(len(parsed), pa.string()))
    return not pc.any(pc.greater(pc.utf8_length(raw), 0).fill_null(False)).as_py()


def official_not_computed(result) -> str:
    """Why a scored run (``judge.metrics_json.metrics.Metrics``) has no POLLUX section: "" where it has one.

    The same tests as ``judge-eval score``'s: an integer judge (no ``[RESULT]`` tag to read), a regression head's
    scores (``Notes.n_regression_scores``, ``n_regression_without_raw``: the head rows ``build_table`` counted)."""
    if result.pollux_official is not None:
        return ""
    if result.run is not None and result.run.verdict_format == "integer":
        return NOT_COMPUTED_INTEGER
    if result.notes is not None and result.notes.verdict_format_inferred == "integer":
        return NOT_COMPUTED_INTEGER_INFERRED
    notes = result.notes
    if notes is not None and ((notes.n_regression_scores or 0) + (notes.n_regression_without_raw or 0)):
        return NOT_COMPUTED_REGRESSION
    if notes is not None and notes.no_raw_outputs:
        return NOT_COMPUTED_NO_RAW
    return ""
