"""The sentences report.md, report.html and ``judge-eval score``'s console summary print beside the summary table:
what the tables alone would hide about the run (items without a prediction, predictions of ids the data lacks, the
experts' abstentions, items with no expert score, scores a regression head gave on a rationale ``max_tokens`` cut)
and about the data scored (expert scores off their rubric's scale, exact duplicate rows left out, rubrics without a
readable scale).
``eval.reports.report`` re-exports ``run_notes``."""

from __future__ import annotations

import re

from eval.scoring.item_table import MINUS_ONE_FAILED
from eval.validity.render import counted
from judge.metrics_json.metrics import Metrics

__all__ = ["console_text", "cut_scored_note", "duplicates_note", "load_report_notes", "minus_one_failed_note", "no_scale_note",
           "off_scale_note", "run_notes", "runs_notes", "unknown_ids_note"]

# A place as the loader names it ("line 2", "row index 1", "train-00000-of-00001.parquet: row index 3") reads the
# same in Markdown and in report.html's rendering of these sentences; any other (a shard's odd name) goes in a
# code span, which both show as it is, on one line and without the backticks a span cannot hold.
_PLAIN_PLACE = re.compile(r"[\w .:/-]+")


def _place(place: str) -> str:
    return place if _PLAIN_PLACE.fullmatch(place) else _code_span(place)


def _code_span(text: str, limit: int | None = None) -> str:
    """``text`` as a code span: on one line, without the characters a span cannot hold (a backtick) or a report
    should not show (control and bidirectional marks), cut past ``limit`` characters (None: whole)."""
    shown = " ".join("".join(c if c.isprintable() else " " for c in text.replace("`", "'")).split())
    return "`" + (shown if limit is None or len(shown) <= limit else shown[:limit - 3] + "...") + "`"


def load_report_notes(load_report) -> dict:
    """What the load of the records counted that the figures do not show, as the notes ``off_scale_note`` and
    ``duplicates_note`` read (each only when not zero): records off their rubric's scale, scored as given, and exact
    duplicate rows, left out: so that a 7 on a 0..2 criterion is never a reference, nor 1,000 rows 990 items, with a
    word in the log only. metrics.json's notes and experts.json's ``load_notes`` alike."""
    notes = {}
    if load_report.n_off_scale:
        notes.update(n_off_scale=load_report.n_off_scale, off_scale_rows=list(load_report.off_scale_rows))
    if load_report.n_duplicates:
        notes.update(n_duplicate_rows=load_report.n_duplicates, duplicate_rows=list(load_report.duplicate_rows))
    return notes


def off_scale_note(result: Metrics) -> str | None:
    """The sentence on the items whose expert score or aggregate lies outside their rubric's scale
    (``judge.records.off_scale``, counted by the load: ``notes.n_off_scale``), naming the places the file keeps; None
    when there are none. Scored as given: the paper has the experts score on the rubric's levels (arXiv
    2505.24616v3, Section 2.2) and says nothing of a score off them, and POLLUX's evaluator compares a verdict with
    the reference as the data gives it; so a data error is shown, not corrected or dropped here."""
    notes = getattr(result, "notes", None)  # as run_notes reads it: a result without notes has none to say
    n = getattr(notes, "n_off_scale", None) or 0
    if not n:
        return None
    places = [_place(p) for p in getattr(notes, "off_scale_rows", None) or []]
    shown = ", ".join(places + (["…"] if len(places) < n else []))
    have = "has" if n == 1 else "have"
    their = "its" if n == 1 else "their"
    return (f"**{counted(n, 'item')} {have} an expert score or `criteria_score` off {their} rubric's scale**"
            f"{f' ({shown})' if shown else ''}: scored as given.")


def unknown_ids_note(result: Metrics) -> str | None:
    """The sentence on the predictions whose id the data lacks (``notes.n_unknown_ids``, counted by
    ``eval.scoring.item_table.build_table``), naming the first (``notes.first_unknown_id``, in the predictions
    file's order); None when there are none. They are left out of every figure; without this sentence a run judged
    partly on other data, or on a copy whose ids were renumbered, reads only as an unfinished one."""
    notes = getattr(result, "notes", None)
    n = getattr(notes, "n_unknown_ids", None) or 0
    if not n:
        return None
    first = getattr(notes, "first_unknown_id", None)
    named = f" (the first: {_code_span(first, limit=80)})" if first is not None else ""
    name, were = ("prediction names an id", "was") if n == 1 else ("predictions name ids", "were")
    return f"**{n} {name} the data lacks**{named}: {'it' if n == 1 else 'they'} {were} left out of every figure."


def repeated_ids_note(result: Metrics) -> str | None:
    """The sentence on the prediction rows left out as repeats of an id an earlier row gave (``notes.n_repeated_ids``:
    scored under ``--allow-repeated-ids``, each id on its first row); None when there are none. Without it the
    predictions file's row count and the report's ``n`` differ without a word."""
    n = getattr(getattr(result, "notes", None), "n_repeated_ids", None) or 0
    if not n:
        return None
    repeat, later = ("repeats an id", "one was") if n == 1 else ("repeat ids", "ones were")
    return (f"**{counted(n, 'prediction row')} {repeat} an earlier row gave** (`--allow-repeated-ids`): each id "
            f"is scored on its first row, the later {later} left out.")


def duplicates_note(result: Metrics) -> str | None:
    """The sentence on the exact duplicate rows the load left out (``notes.n_duplicate_rows``), naming the pairs the
    file keeps; None when there were none. Each item is scored once, on its first copy: the rows are the same
    item, so nothing is scored twice, but the data's row count is not the report's ``n``."""
    notes = getattr(result, "notes", None)
    n = getattr(notes, "n_duplicate_rows", None) or 0
    if not n:
        return None
    named = getattr(notes, "duplicate_rows", None) or []
    pairs = [" = ".join(_place(place) for place in pair.split(" = ")) for pair in named]
    shown = ", ".join(pairs + (["…"] if len(pairs) < n else []))
    return (f"**{counted(n, 'exact duplicate row')} of the data {'was' if n == 1 else 'were'} left out**"
            f"{f' ({shown})' if shown else ''}: each item is scored once.")


def no_scale_note(result: Metrics) -> str | None:
    """The sentence on the scored items whose rubric has no readable scale (``notes.n_no_scale``, counted by
    ``eval.scoring.item_table.build_table``); None when there are none. Without a scale a verdict cannot be found
    off it, so these items count as in scale in ``n_out_of_scale`` and the in-scale figures (unless the prediction's
    own ``in_scale`` says not): said here, since no table shows it."""
    n = getattr(getattr(result, "notes", None), "n_no_scale", None) or 0
    if not n:
        return None
    have, their, scores, were = ("has", "its", "score", "was") if n == 1 else ("have", "their", "scores", "were")
    return (f"**{counted(n, 'scored item')} {have} a rubric without a readable scale**: {their} judge's {scores} "
            f"{were} not checked against a scale (counted as in scale unless the prediction's `in_scale` says not).")


def minus_one_failed_note(result: Metrics) -> str | None:
    """The sentence on the judge's ``-1``s off their scale that ``--judge-minus-one fail`` counted as failed
    verdicts (``notes.n_minus_one_failed``); None when there are none. The failure counts show their code, not the
    option that made them failures."""
    n = getattr(getattr(result, "notes", None), "n_minus_one_failed", None) or 0
    if not n:
        return None
    return (f"**{counted(n, 'verdict')} of `-1` on a scale without it {'is' if n == 1 else 'are'} counted as failed** "
            "(`--judge-minus-one fail`; the release's code for an expert's abstention, \"not applicable\"): in "
            f"`failed`, under the code `{MINUS_ONE_FAILED}`, and in no score (`metrics.json`: "
            "`notes.n_minus_one_failed`).")


def cut_scored_note(result: Metrics) -> str | None:
    """The sentence on the scored items whose score a regression head gave on a rationale ``max_tokens`` cut
    (``notes.n_cut_scored``: ``judge-eval run`` with ``cut_rationale: score`` keeps them, as POLLUX scores them, where
    ``fail`` writes a ``cut`` failure); None when there are none. Their rows read as any other scored row, so no
    table shows how many of the figures rest on an unfinished rationale."""
    n = getattr(getattr(result, "notes", None), "n_cut_scored", None) or 0
    if not n:
        return None
    was, its = ("was", "its") if n == 1 else ("were", "their")
    return (f"**{counted(n, 'item')} {was} scored on a rationale `max_tokens` cut** (`cut_rationale: score`): "
            f"the regression head's score, kept as POLLUX keeps it; {its} `finish_reason` is `length`.")


def _selection_words(notes) -> str | None:
    """What the run judged, from metrics.json's ``notes`` (``unselected_split`` and ``unselected_limit``, the flags
    that left out an item without a prediction: ``eval.scoring.score.selected_items``), e.g. "the run judged only
    the first 20: `--limit 20`"; None when it names neither flag."""
    split, limit = notes.unselected_split or None, notes.unselected_limit or None
    if split is None and limit is None:
        return None
    items = f"{split} items" if split else ""
    if limit is None:
        what = f"the {items}"
    elif limit == 1:
        what = f"the first {items[:-1] if items else 'item'}"
    else:
        what = f"the first {limit}" + (f" {items}" if items else "")
    flags = " ".join(([f"--split {split}"] if split else []) + ([f"--limit {limit}"] if limit else []))
    count = getattr(notes, "shard_count", None)
    if limit is not None and getattr(notes, "limit_per_shard", None) and count:
        # an eval array: every task applied the limit to its own block (slurm/eval.sbatch passes it to each)
        return f"each of the eval array's {count} shards judged only {what} of its block: `{flags}`"
    return f"the run judged only {what}: `{flags}`"


def _why_missing(result: Metrics, missing: int) -> str:
    """Why ``missing`` items have no prediction: shards of an eval array a merge left out (``notes.missing_shards``:
    ``judge-eval merge --allow-missing-shards``), left out by the run's ``--limit`` or ``--split``
    (``notes.n_missing_unselected``, counted at scoring), predictions of a text since edited
    (``notes.n_stale_predictions``), or else the run is unfinished; the items the shards or the selection do not
    explain are said apart, so that a limited run still cut short is called unfinished for those alone."""
    notes = getattr(result, "notes", None)
    shards = _missing_shards_words(notes)
    if shards is not None:  # a partial merge: its left-out shards' items first, then whatever else is missing
        left_out = getattr(notes, "n_missing_shard_records", None)
        rest = missing - left_out if left_out is not None else 0
        return shards if rest <= 0 else f"{shards}; {rest} more: {_why_missing_rest(notes, rest)}"
    return _why_missing_rest(notes, missing)


def _missing_shards_words(notes) -> str | None:
    """e.g. "shard 2 of 4 was left out of the merge: `judge-eval merge --allow-missing-shards`" (metrics.json's
    ``notes.missing_shards``); None when no shard was."""
    missing = getattr(notes, "missing_shards", None)
    if not missing:
        return None
    count = getattr(notes, "shard_count", None)
    named = ("shard " if len(missing) == 1 else "shards ") + ", ".join(map(str, missing))
    return (f"{named}{f' of {count}' if count else ''} {'was' if len(missing) == 1 else 'were'} left out of the "
            "merge: `judge-eval merge --allow-missing-shards`")


def _why_missing_rest(notes, missing: int) -> str:
    """``_why_missing`` for the items no left-out shard explains."""
    stale = getattr(notes, "n_stale_predictions", None) or 0  # data edited after the run
    outside = getattr(notes, "n_missing_unselected", None)
    chosen = _selection_words(notes) if outside is not None and 0 < outside <= missing else None
    if chosen is None:
        return f"{stale} judged a text since edited; rerun `judge-eval run`" if stale else "the run is unfinished"
    rest = missing - outside  # selected by the run, and without a prediction all the same
    if stale:
        return f"{chosen}; {stale} judged a text since edited; rerun `judge-eval run`"
    if rest:
        have = "has" if rest == 1 else "have"
        return f"{chosen}; {rest} of those {have} none yet: the run is unfinished"
    return chosen


def run_notes(result: Metrics) -> list[str]:
    """What the tables alone would hide about the run (Markdown sentences, `code` in backticks): the items with no
    prediction (an unfinished run, or one whose ``--limit`` or ``--split`` left them out: ``_why_missing``), the
    predictions of ids the data lacks (``unknown_ids_note``) and the rows repeating one (``repeated_ids_note``), the
    judge's ``-1`` verdicts off their scale (the release's abstention code), scored or failed
    (``minus_one_failed_note``), the experts' abstentions and the items with no expert score (``n_unlabelled``), over
    every item of the run: the Zero-Shot + Standard cell and the items of unknown task type, which are in neither test
    (unless scored on a held-out criterion: Zero-Shot); and the data's expert scores off their rubric's scale
    (``off_scale_note``), its duplicate rows left out (``duplicates_note``) and its scored items whose rubric has no
    readable scale (``no_scale_note``) or whose regression head scored a cut rationale (``cut_scored_note``). report.md,
    report.html and the score command's console summary all print these."""
    tests = [result.splits[split].overall for split in ("all", "unknown") if split in result.splits]
    data = [note for note in (off_scale_note(result), duplicates_note(result), no_scale_note(result),
                              cut_scored_note(result)) if note]
    foreign = [note for note in (unknown_ids_note(result), repeated_ids_note(result)) if note]
    if not tests:
        return foreign + data
    unknown = result.splits["unknown"].overall if "unknown" in result.splits else None
    notes = []
    missing = sum(c.n_missing or 0 for c in tests)
    if missing:
        among = (f"; {unknown.n_missing} of them in neither test (a task type the taxonomy does not know)"
                 if unknown is not None and unknown.n_missing else "")
        have, they = ("has", "it is") if missing == 1 else ("have", "they are")
        notes.append(f"**{counted(missing, 'item')} {have} no prediction** ({_why_missing(result, missing)}{among}): "
                     f"{they} not in `n`.")
    notes += foreign  # beside the items without one: the two together say what the predictions file holds
    # A file written before the count has none (None), as n_unlabelled below.
    minus_one = sum(getattr(c, "n_out_of_scale_minus_one", None) or 0 for c in tests)
    if minus_one:
        off = sum(getattr(c, "n_out_of_scale", None) or 0 for c in tests)
        are = "is" if minus_one == 1 else "are"
        notes.append(f"**{minus_one} of the {counted(off, 'verdict')} outside their scale {are} `-1`**, the release's "
                     "code for an expert's abstention (\"not applicable\"): the judge's answer, scored as out of scale "
                     "like any other (in the headline figures, not in the `in scale` ones), counted apart in "
                     "`metrics.json` (`n_out_of_scale_minus_one`).")
    if failed_minus_one := minus_one_failed_note(result):
        notes.append(failed_minus_one)
    abstained = sum(c.n_abstained or 0 for c in tests)
    all_abstained = sum(c.n_all_abstained or 0 for c in tests)
    if abstained:
        notes.append(f"Expert abstentions (a released `-1` or a project file's `null`: the criterion does not apply) "
                     f"are left out of every "
                     f"score: {abstained} in all; {counted(all_abstained, 'item')} had every expert abstain and "
                     f"{'is' if all_abstained == 1 else 'are'} unlabelled (not errors).")
    # Items with no expert score at all (the abstentions' sentence says those every expert abstained on): counted in
    # the tables' n, and in no figure, which only n_scored shows. A file written before the count has none (None).
    unlabelled = sum(getattr(c, "n_unlabelled", None) or 0 for c in tests)
    if unlabelled > all_abstained:
        n = unlabelled - all_abstained
        have, they, errors = ("has", "it is", "an error") if n == 1 else ("have", "they are", "errors")
        notes.append(f"**{counted(n, 'item')} {have} no expert score** (unlabelled data): {they} left out of MAE and "
                     f"the correlations, and not {errors}.")
    return notes + data


def runs_notes(result) -> list[tuple[str, str]]:
    """(run, sentence), in run order, for a comparison (``eval.scoring.comparison.Comparison``): what each run's own
    report says beside its numbers (``run_notes``: an unfinished run, predictions of texts edited since, the experts'
    abstentions, the data's off-scale scores and duplicate rows left out). A comparison is often read alone, and its
    paired rows count only the items both runs scored: a run judged on a tenth of its data must be said, not only
    counted. Where the runs failed on different numbers of items, each run that failed on any is said to have (a
    judge that fails on most items can be called better on the few both scored)."""
    failed = [_failed(metrics) for metrics in result.metrics]
    differ = len({f for f, _ in failed if f is not None}) > 1
    out = []
    for name, metrics, (n_failed, n) in zip(result.runs, result.metrics, failed):
        if differ and n_failed:
            out.append((name, f"**failed on {n_failed} of {n} items** (no score read from its judge): they are "
                              "left out of every paired row, which counts only the items both runs scored."))
        out += [(name, note) for note in run_notes(metrics)]
    return out


def _failed(result: Metrics) -> tuple[int | None, int]:
    """(failures, items with a prediction) over every item of the run: both tests and the unknown task types, as
    ``run_notes`` counts the missing predictions; (None, 0) for a result without those cells."""
    tests = [result.splits[split].overall for split in ("all", "unknown") if split in result.splits]
    if not tests:
        return None, 0
    return sum(c.n_failed for c in tests), sum(c.n for c in tests)


def console_text(sentence: str) -> str:
    """One of these sentences for a terminal: its Markdown marks (bold, code spans) dropped, the words kept."""
    return sentence.replace("**", "").replace("`", "")
