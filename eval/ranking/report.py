"""``report.html`` of a ranking run (and of a comparison of two): the matrix as a heat map, one self-contained page.

The page uses the report pages' stylesheet (``eval/reports/html/page.css``) inline and no script: each cell's colour is
its value on the matrix's own scale (``scale`` in rank.json: 0–1 for normalised scores, the rubrics' range for raw
ones; white at the bottom -> blue at the top), with the interval and the counts of what was not scored in its
tooltip and under the value. A comparison colours the difference (red: B lower, green:
B higher) and marks the cells whose paired interval excludes 0.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from eval.reports.html_text import escape
from eval.reports.names import shown_name, shown_names
from eval.reports.report import fmt_delta

__all__ = ["render_ranking_page", "write_ranking_page", "render_ranking_compare_page", "exclusion_lines",
           "calls_line", "resamples_phrase", "holm_applied", "EXCLUDED", "html_page", "sign_flip_p_text",
           "why_not_called", "write_ranking_compare", "unjudged_answer_lines",
           "console_calls_line"]

#: ``rank.json`` counts about the candidate's answers (instructions): one cut short is judged as it is when text is
#: left, and is an empty answer when none is.
ANSWER_COUNTS = ("n_answer_failed", "n_answer_too_long", "n_answer_empty", "n_cut_in_thinking", "n_finish_length")
#: ``rank.json`` counts of (instruction, criterion) items that have no verdict.
NOT_SCORED = ("n_no_answer", "n_empty_answer", "n_no_prediction")
#: What a cell averages, per ``--normalize`` (``eval.ranking.matrix.NORMALIZE``).
SCORES = {"minmax": "scores normalised to 0–1 by their rubric's scale, (s − min) / (max − min)",
          "max": "scores normalised by their rubric's maximum, s / max",
          "none": "raw scores, on their rubrics' own scales (not normalised)"}

#: Why an instruction of one run is left out of the comparison, as ``excluded`` names it and a line says it.
EXCLUDED = {"no_answer": "no answer (request failed), not scored", "empty_answer": "empty answer, not scored",
            "no_score": "no verdict scored",
            "gate_scored_by_one": ("its binary (gate) criterion scored by {gate_by} only, so its gate is not known "
                                   "on every side"),
            "not_scored_by_other": "not scored by {other}"}

_EXTRA_CSS = """
table.heat td { min-width: 88px; }
table.heat td small { display: block; color: var(--muted); font-size: 11px; }
table.heat tr.margin td, table.heat td.margin { border-top: 2px solid var(--fg); font-weight: 600; }
table.heat td.fail { outline: 2px solid var(--bad); outline-offset: -2px; }
"""


def _e(value: Any) -> str:
    """Text as HTML, without bidirectional controls (``eval.reports.html_text.escape``, as the other pages)."""
    return escape(value)


def _fmt(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and math.isfinite(value) else "—"


def _heat(value: Any, low: float = 0.0, high: float = 1.0) -> str:
    """A background from white (low) to blue (high); none for an empty cell."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return ""
    t = min(max((value - low) / (high - low), 0.0), 1.0) if high > low else 0.5
    r, g, b = (round(255 - t * (255 - c)) for c in (47, 95, 179))  # --accent at 1
    ink = "#fff" if t > 0.6 else "var(--fg)"
    return f' style="background: rgb({r},{g},{b}); color: {ink}"'


def _diverging(value: Any, span: float) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or span <= 0:
        return ""
    t = min(abs(value) / span, 1.0)
    base = (31, 122, 58) if value > 0 else (179, 38, 30)
    r, g, b = (round(255 - t * (255 - c)) for c in base)
    return f' style="background: rgb({r},{g},{b}); color: {"#fff" if t > 0.6 else "var(--fg)"}"'


def html_page(title: str, subtitle: list[str], body: list[str]) -> str:
    """A ranking page (a run's report.html, a comparison's or a leaderboard's compare.html): the toolkit's style, the
    title, the subtitle's lines (HTML, escaped by the caller) and the body."""
    css = resources.files("eval.reports").joinpath("html", "page.css").read_text(encoding="utf-8")
    return "\n".join(["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{_e(title)}</title><style>{css}{_EXTRA_CSS}</style></head><body>",
                      f"<header><h1>{_e(title)}</h1>", *(f"<p>{line}</p>" for line in subtitle), "</header><main>",
                      *body, "</main></body></html>"])


def _failures(cell: Mapping[str, Any]) -> dict[str, int]:
    from eval.ranking.items import STATUSES

    return {k[2:]: v for k, v in cell.items() if k.startswith("n_") and k[2:] in STATUSES and v}


def _matrix_table(matrix: Mapping[str, Any]) -> str:
    rows, columns, cells = matrix["rows"], matrix["columns"], matrix["cells"]
    low_end, high_end = matrix.get("scale") or (0.0, 1.0)  # a result written before the field: normalised scores
    # Criteria and candidates are the data's names, written in the heading, the row and every cell's tooltip: cut as
    # every report table cuts them.
    row_name, column_name = shown_names(rows), shown_names(columns)
    head = "".join(f"<th>{_e(column_name[str(c)])}</th>" for c in columns)
    out = [f'<div class="scroll"><table class="grid heat"><thead><tr><th>criteria_name</th>{head}</tr></thead><tbody>']
    for i, r in enumerate(rows):
        margin_row = i == len(rows) - 1
        tds = []
        for j, c in enumerate(columns):
            cell = cells[r][c]
            low, high = cell["ci"]
            failed = _failures(cell)
            tip = f"{row_name[str(r)]} × {column_name[str(c)]}: {_fmt(cell['value'], 4)} [{_fmt(low, 4)}, {_fmt(high, 4)}], n {cell['n']}" + "".join(
                f", {k} {v}" for k, v in failed.items()) + (f"; no interval: {cell['why_no_ci']}"
                                                          if cell.get("why_no_ci") else "")
            note = f"<small>[{_fmt(low, 2)}, {_fmt(high, 2)}] n {cell['n']}</small>"
            note += "".join(f"<small>{_e(k)} {v}</small>" for k, v in failed.items())
            css = " ".join(x for x in ("margin" if j == len(columns) - 1 else "", "fail" if failed else "") if x)
            klass = f' class="{css}"' if css else ""
            tds.append(f'<td{klass} title="{_e(tip)}"{_heat(cell["value"], low_end, high_end)}>'
                       f'{_fmt(cell["value"])}{note}</td>')
        row_class = ' class="margin"' if margin_row else ""
        out.append(f"<tr{row_class}><td>{_e(row_name[str(r)])}</td>{''.join(tds)}</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _sent(counts: Mapping[str, Any]) -> str:
    """How many items went to the judge (``n_items``: every item with an answer, whether or not a verdict came
    back), and how many of them have none (``n_no_prediction``, listed under Not judged)."""
    unanswered = counts.get("n_no_prediction") or 0
    return f"{counts['n_items']} items sent to the judge" + (
        f" ({unanswered} of them without a verdict: see Not judged)" if unanswered else "")


def _resampled(matrix: Mapping[str, Any]) -> str:
    """What the intervals rest on: the resamples and instructions, or why there are none."""
    from eval.ranking.matrix import MIN_INSTRUCTIONS

    k = matrix["n_instructions"]
    if k < MIN_INSTRUCTIONS:  # n_boot is 0 then: say why, not "0 resamples", which reads as --n-boot 0
        return (f"no interval: the matrix rests on {k} instruction{'s' * (k != 1)} and an interval needs at least "
                f"{MIN_INSTRUCTIONS} (one instruction redrawn is always itself)")
    return f"{matrix['n_boot']} bootstrap resamples over {k} instructions (seed {_e(matrix['seed'])})"


def _selection(result: Mapping[str, Any]) -> list[str]:
    """A line when --limit or --meta ranked a part of the data: its matrix is that part's, not the data set's."""
    selection = result.get("selection") or {}  # a result written before the field says nothing of it
    total, chosen = selection.get("n_data_instructions"), result["counts"]["n_instructions"]
    if not total or chosen >= total:
        return []
    flags = ", ".join(f"--{k} {_e(selection[k])}" for k in ("limit", "meta") if selection.get(k))
    return [f"<b>a selection</b>: {chosen} of the data's {total} instructions ({flags}); the matrix is theirs, not "
            "the data set's (the binary criteria that gate a rubric without a scale are read from all of them)"]


def _special_tokens(result: Mapping[str, Any]) -> list[str]:
    """A line when the chat judge read a special-token string in the matrix's items' text (``counts``'
    ``special_token_rows``): an answer that writes ``<|im_end|>`` ends the judge's user turn there, and can write the
    judge's verdict."""
    n = result["counts"].get("special_token_rows")
    if not n:
        return []
    return [f"<b>{n} item{'s' * (n != 1)} sent to the judge hold{'s' * (n == 1)} a special-token string</b> "
            "(&lt;|im_end|&gt;, ...): the judge's chat server read it as a control token (a turn ended, a turn "
            "injected), not as the text the judge was trained on; their verdicts are scored, run.json's "
            "chat_special_tokens names the first of them among all of items.jsonl's items (another selection's, "
            "kept for their verdicts, too); judge-serve's /v1/judge (--backend judge-serve) asks them as text"]


def render_ranking_page(result: Mapping[str, Any]) -> str:
    """The ranking report: counts, the matrix as a heat map, how to read it."""
    matrix, counts = result["matrix"], result["counts"]
    subtitle = [f"candidate <b>{_e(shown_name(result['model']))}</b>, judge <b>{_e(shown_name(result['judge']))}</b>, "
                f"data {_e(result['data'])}",
                f"grand mean {_fmt(matrix['grand_mean'], 4)} (the mean of every non-binary score, pooled); "
                f"{counts['n_instructions']} instructions, {_sent(counts)}; normalisation "
                f"{_e(matrix['normalize'])}; verdicts read by the {_e(result.get('verdict_reader', 'toolkit'))} "
                f"reader; {_resampled(matrix)}", *_selection(result), *_special_tokens(result)]
    not_scored = [f"{k} {counts[k]}" for k in NOT_SCORED if counts.get(k)]
    answers = [f"{k} {counts[k]}" for k in ANSWER_COUNTS if counts.get(k)]
    normalize = matrix["normalize"]
    low_end, high_end = matrix.get("scale") or (0.0, 1.0)
    empty = ("scored 0 on every criterion without asking the judge (<i>--empty-answer zero</i>: what POLLUX's gate "
             "gives once its judge finds the output unevaluable)" if matrix.get("empty_answer", "unscored") == "zero"
             else "not scored (<i>--empty-answer unscored</i>)")
    body = ["<h2>Matrix</h2>",
            '<p class="note">Laid out as POLLUX\'s metrics.csv (matrix.csv): cells are means of '
            f"{_e(SCORES.get(normalize, normalize))}, after the binary gate; <i>mean_over_meta</i> is the mean of a "
            "row's cells, <i>mean_over_criteria</i> the mean over non-binary criteria, and their corner the mean of "
            "all non-binary scores. Colours run from white at "
            f"{_fmt(low_end, 2)} to blue at {_fmt(high_end, 2)}. Under each value: its 95% bootstrap interval over "
            "instructions and the scores it rests on; a red outline marks a cell with items that were not judged "
            "or not scored (unparsed, out of scale, request failed, no verdict written, no answer, empty answer, "
            "not run: a judgment the judge's server never ran, its prompt too long for the judge's context; "
            "an engine's aborted or refused judgment is a failed request, asked again by the next run), "
            "which POLLUX drops silently or judges as an empty answer.</p>",
            _matrix_table(matrix),
            "<h2>Answers</h2>",
            f'<p class="note">{_e(", ".join(answers) or "every instruction answered, none cut short")}. '
            "n_answer_failed counts instructions whose answer request failed (asked again by the next run); "
            "n_answer_too_long instructions longer than the candidate's context, leaving it no room for "
            "max_tokens, or whose request was past its server's body bound (HTTP 413) (its server's words in "
            "answers.jsonl; final, not asked again, scored as no answer); n_answer_empty instructions whose answer "
            "was empty once thinking was stripped (not judged: see below); n_cut_in_thinking answers that stopped "
            "inside an unclosed &lt;think&gt; (the rest was cut away) and n_finish_length answers the candidate's "
            "max_tokens stopped: those with text left are judged and scored as they are, those left empty are empty "
            "answers.</p>",
            "<h2>Not judged</h2>",
            f'<p class="note">{_e(", ".join(not_scored) or "nothing: every item was answered and judged")}. '
            "n_no_answer counts (instruction, criterion) items whose answer request failed or whose instruction "
            "was too long for the candidate, n_empty_answer those whose answer was empty once thinking was "
            "stripped, and n_no_prediction items the judge wrote no verdict for "
            "(judged by the next run): none of them was judged, and each is counted in its cell above. POLLUX sends "
            f"an empty answer to its judge; the toolkit cannot, so those items are {empty}. Verdicts that did not "
            "parse, were out of scale, whose request failed or that the judge's server never ran (not_run) are "
            "counted per cell above.</p>"]
    return html_page(f"judge-eval rank: {shown_name(result['model'])}", subtitle, body)


def write_ranking_page(result: Mapping[str, Any], out: str | Path) -> Path:
    from judge.plumbing.atomic_write import write_atomically

    return write_atomically(Path(out) / "report.html", render_ranking_page(result).encode("utf-8"))


def sign_flip_p_text(p_value: float | None) -> str:
    """A sign-flip p as read: three significant digits. The test's p is never 0 (the observed swap is one of those
    counted), so three decimals would print 1/2048 as a "0.000" it is not; and a bound ("< 0.001") would hide the p
    a call rests on where the level is below 0.001 (a board of 12 candidates: alpha/66 = 0.000758)."""
    if p_value is None or not math.isfinite(p_value):
        return "—"
    return f"{p_value:.3g}"


def why_not_called(low: float | None, high: float | None, p_value: float | None, alpha: float,
                   alpha_name: str = "alpha", p_name: str = "sign-flip p") -> str:
    """Why a tested cell (or pair) reads "no difference": its p (named ``p_name``: the sign-flip p, or that p
    Holm-adjusted) is not below ``alpha`` (named ``alpha_name``, e.g. "alpha/3"), or its interval holds 0 (a p below
    alpha with an interval excluding 0 is a call, ``eval.ranking.compare.called_verdict``)."""
    if p_value is None or not p_value < alpha:
        return f"{p_name} {sign_flip_p_text(p_value)} not below {alpha_name} = {alpha:.3g}"
    return "the interval holds 0"


def render_ranking_compare_page(result: Mapping[str, Any]) -> str:
    """Two candidates' matrices and their paired differences (B - A) as a diverging heat map."""
    from eval.ranking.permutation import fewest_for_call
    from eval.scoring.resample_rules import resamples_to_call

    rows, columns, cells = result["rows"], result["columns"], result["cells"]
    span = max([abs(c["delta"]) for r in rows for c in cells[r].values()
                if isinstance(c["delta"], (int, float)) and math.isfinite(c["delta"])] or [0.0])
    row_name, column_name = shown_names(rows), shown_names(columns)  # the data's names, cut as _matrix_table cuts
    head = "".join(f"<th>{_e(column_name[str(c)])}</th>" for c in columns)
    table = [f'<div class="scroll"><table class="grid heat"><thead><tr><th>criteria_name</th>{head}</tr></thead><tbody>']
    for r in rows:
        tds = []
        for c in columns:
            cell = cells[r][c]
            low, high = cell["ci"]
            verdict = cell["verdict"]
            css = {"B higher": "better", "B lower": "worse"}.get(verdict, "")
            tip = (f"{row_name[str(r)]} × {column_name[str(c)]}: A {_fmt(cell['a'], 4)}, B {_fmt(cell['b'], 4)}, sign-flip p "
                   f"{sign_flip_p_text(cell['p_value'])}"
                   + (f", Holm p {sign_flip_p_text(cell['p_holm'])}" if "p_holm" in cell else ""))
            if cell.get("n_dropped_a") or cell.get("n_dropped_b"):
                tip += (f", dropped A {cell['n_dropped_a']}, B {cell['n_dropped_b']} (the other run has no score for "
                        "them or their gate)")
            if cell.get("why_no_call"):
                tip += f"; untested: {cell['why_no_call']}"
            elif verdict == "no difference":
                tip += "; no call: " + (why_not_called(low, high, cell["p_holm"], result["alpha"], p_name="Holm p")
                                        if "p_holm" in cell else why_not_called(low, high, cell["p_value"],
                                                                                result["alpha"]))
            # B - A and its interval's ends with their sign, as compare.md writes them and the leaderboard's pairs
            # write a delta (fmt_delta: never "-0.000"), so that one cell reads alike on both pages
            tds.append(f'<td{_diverging(cell["delta"], span)} title="{_e(tip)}">{fmt_delta(cell["delta"])}'
                       f"<small>[{fmt_delta(low)}, {fmt_delta(high)}]</small>"
                       f'<small class="{css}">{_e(verdict)}</small></td>')
        table.append(f"<tr><td>{_e(row_name[str(r)])}</td>{''.join(tds)}</tr>")
    table.append("</tbody></table></div>")
    subtitle = [f"A <b>{_e(shown_name(result['a']['model']))}</b> ({_e(shown_name(result['a']['run']))}) vs B "
                f"<b>{_e(shown_name(result['b']['model']))}</b> ({_e(shown_name(result['b']['run']))}); judge "
                f"{_e(shown_name(result['judge']))}",
                f"{result['n_instructions']} instructions with an item scored by both; {_e(resamples_phrase(result))}"
                f", alpha {_e(result['alpha'])}",
                *(_e(line) for line in [*exclusion_lines(result), calls_line(result)] if line)]
    # A result written before Holm (no p_holm) called on the raw p: its note must not say otherwise.
    holm_note = ", adjusted by Holm over the tested cells," if holm_applied(result) else ""
    # The fewest instructions hold for one test: Holm's first step asks 2/2^n < alpha/m of the smallest p.
    holm_floor = ("; one whose smallest p, Holm-adjusted over the cells with enough instructions, is not below "
                  "alpha (the fewest hold for one test; m tests ask 2/2^n < alpha/m of the smallest)"
                  if holm_applied(result) else "")
    body = ["<h2>B − A</h2>",
            '<p class="note">Each cell: the difference of POLLUX\'s matrix cell (B minus A) over the (instruction, '
            "criterion) items both runs scored, each run's gate decided from its own verdicts, its paired "
            f"{100 * (1 - result['alpha']):g}% bootstrap interval over instructions (the same resampled instructions "
            f"feed both), and the call when the paired sign-flip test's p{holm_note} is below alpha "
            f"{result['alpha']:g} and the interval excludes 0 on that side; — where the cell is untested (a cell "
            f"resting on fewer than {fewest_for_call(result['alpha'])} instructions both runs scored, where the "
            f"test's smallest p is not below alpha{holm_floor}, on fewer than that the runs score differently, or "
            f"fewer than {resamples_to_call(result['alpha'])} resamples). "
            "The tooltip gives the p, why a cell is untested or not called, and how "
            "many items a cell left out because the other run has no score for them (or for their instruction's gate)."
            "</p>", "".join(table)]
    return html_page("judge-eval compare: ranking runs", subtitle, body)


def resamples_phrase(result: dict[str, Any]) -> str:
    """What a comparison's intervals rest on; with one shared instruction, why there are none (its ``n_boot`` is 0
    then, and "0 paired resamples" read as --n-boot 0)."""
    from eval.ranking.matrix import MIN_INSTRUCTIONS

    if result["n_instructions"] < MIN_INSTRUCTIONS:
        return (f"no paired resamples: an interval needs at least {MIN_INSTRUCTIONS} instructions both runs scored "
                "(one instruction redrawn is always itself)")
    phrase = f"{result['n_boot']} paired resamples over instructions (seed {result['seed']})"
    test = result.get("call_test")  # a result before the sign-flip test: none
    if test:
        swaps = f"exact, all {test['n_swaps']} swaps" if test["exact"] else f"{test['n_swaps']} drawn swaps"
        adjusted = ", Holm-adjusted over the tested cells," if holm_applied(result) else ""
        phrase += (f"; a call needs the paired sign-flip test's p{adjusted} below alpha ({swaps}) and the interval to "
                   "exclude 0 on the same side")
    return phrase


def _id_list(ids: list[Any]) -> str:
    """The first ten of ``ids``, then how many more (a run with hundreds would bury the line that holds them)."""
    return ", ".join(map(str, ids[:10])) + (f", and {len(ids) - 10} more" if len(ids) > 10 else "")


def unjudged_answer_lines(result: Mapping[str, Any], sides: list[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Per run (``sides``: its label and its ``empty_answers`` and ``failed_answers``, the prompt_ids), how many of
    its answers came back empty and how many failed, with their prompt_ids and how each is scored: under ``zero``
    (the default) each is scored 0 on every criterion, which moves the run's figures as much as a verdict does, so
    the count is said beside the rule. A result written before ``failed_answers`` was kept gives the rule alone.
    Plain text, labels and prompt_ids as given: a page escapes each line whole."""
    zero = "scored 0 on every criterion, unjudged"

    def counts(key: str) -> str:
        """Each run's count of ``key``'s prompt_ids, with the ids, joined."""
        return ", ".join(f"{label} {len(ids)}" + (f" (prompt_id {_id_list(ids)})" if ids else "")
                         for label, side in sides for ids in [side.get(key, [])])

    how = zero if result.get("empty_answer") == "zero" else "not scored, so left out above"
    lines = [f"Empty answers ({how}; --empty-answer {result.get('empty_answer')}): {counts('empty_answers')}."]
    if "no_answer" in result:  # a result before the setting: failed answers were never scored
        scored = zero if result["no_answer"] == "zero" else "not scored"
        failed = "" if any("failed_answers" not in side for _, side in sides) else ": " + counts("failed_answers")
        lines.append("Failed answers (no answer to judge: its request failed, or the instruction was too long; "
                     f"{scored}; --no-answer {result['no_answer']}){failed}.")
    return lines


def holm_applied(result: Mapping[str, Any]) -> bool:
    """Whether the comparison's calls read Holm-adjusted p-values: a cell carries ``p_holm`` (a compare.json written
    before the adjustment, read back, has none, and its calls read the raw sign-flip p)."""
    return any("p_holm" in cell for row in result["cells"].values() for cell in row.values())


def calls_line(result: Mapping[str, Any]) -> str | None:
    """How many cells were called, out of how many could be, and how the calls are corrected for their number: a
    matrix of K cells each tested at alpha would call about alpha x K of them by chance when nothing differs, so
    each call reads its p adjusted by Holm over the tested cells' distinct tests (``holm_tests``: a margin that is
    another cell under another name counted once; the chance of any false call at most alpha). A result written before Holm says its
    calls were uncorrected. None when no cell could be called."""
    cells = [cell for row in result["cells"].values() for cell in row.values()]
    tested = sum(cell["verdict"] != "—" for cell in cells)  # "—": no interval, or too few instructions: no test
    if not tested:
        return None
    higher = sum(cell["verdict"] == "B higher" for cell in cells)
    lower = sum(cell["verdict"] == "B lower" for cell in cells)
    alpha = result["alpha"]
    if not holm_applied(result):
        return (f"Calls: {higher + lower} of the {tested} cells tested (B higher {higher}, B lower {lower}), "
                f"each cell tested on its own at alpha {alpha:g} with no correction for the {tested} tests: were "
                f"nothing different, about {alpha * tested:.1f} calls would be expected by chance (the margins share "
                "their rows' and columns' items, so the tests are not independent either).")
    family = result.get("holm_tests", tested)  # a result with p_holm but before holm_tests: every cell its own test
    return (f"Calls: {higher + lower} of the {tested} cells tested (B higher {higher}, B lower {lower}), "
            f"each on its sign-flip p adjusted by Holm's step-down over the {family} distinct tests of the {tested} "
            "tested cells (a margin that is another cell under another name counted once), so that were nothing "
            "different, the chance "
            f"of any call is at most alpha {alpha:g} (Holm holds whatever the tests' dependence: the margins share "
            "their rows' and columns' items).")


def console_calls_line(result: Mapping[str, Any]) -> str:
    """The console's count of calls as distinct tests, with the cells they fill: a margin that is another cell under
    another name (``holm_tests``) is that cell's one test, and one call of it fills both cells."""
    calls = sum(cell["verdict"].startswith("B ") for row in result["cells"].values() for cell in row.values())
    tests = result["n_tests_called"]
    return f"{tests} distinct test{'s' * (tests != 1)} called, in {calls} cell{'s' * (calls != 1)}"


def exclusion_lines(result: dict[str, Any]) -> list[str]:
    """The sentences saying what the comparison left out per side, its empty and failed answers and how they were
    scored, and any judge settings that differ (compared with ``--allow-other-judge``); none of it may pass unsaid."""
    lines, names = [], {"a": "A", "b": "B"}
    parts = []
    for side, other in (("a", "b"), ("b", "a")):
        excluded = result[side].get("excluded", {})
        reasons = [f"{EXCLUDED[why].format(other=names[other], gate_by='one run')}: {len(ids)} "
                   f"(prompt_id {_id_list(ids)})"
                   for why, ids in excluded.items() if why != "n" and ids]
        parts.append(f"{names[side]} {excluded.get('n', 0)} of {result[side].get('n_instructions', '?')}"
                     + (f" ({'; '.join(reasons)})" if reasons else ""))
    lines.append("Instructions left out of the comparison: " + ", ".join(parts) + ".")
    lines += unjudged_answer_lines(result, [(names[side], result[side]) for side in ("a", "b")])
    dropped = [result[side].get("n_dropped") for side in ("a", "b")]
    if None not in dropped:  # a result before items were paired says nothing of them
        lines.append("Items left out of both sides (paired per item; the other run's verdict of the item, or of its "
                     f"instruction's gate, failed or was not scored): A {dropped[0]}, B {dropped[1]}; per cell "
                     "n_dropped_a / n_dropped_b in compare.json.")
    differences = result.get("judge_differences") or {}
    if differences:
        said = "; ".join(f"{name} {a!r} vs {b!r}" for name, (a, b) in differences.items())
        lines.append(f"Judged differently (compared with --allow-other-judge): {said}.")
    return lines


def write_ranking_compare(out: str | Path, result: Mapping[str, Any], markdown: str, page: str) -> list[str]:
    """Write a comparison of rank runs (two paired, or a leaderboard) into ``out``: compare.json (replaced whole: a
    kill mid-write leaves the earlier one), compare.md and compare.html. Returns the console lines naming them."""
    import json

    from judge.plumbing.atomic_write import write_atomically

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "compare.json", (json.dumps(result, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    write_atomically(out / "compare.md", (markdown + "\n").encode("utf-8"))
    write_atomically(out / "compare.html", page.encode("utf-8"))
    return [f"tables: {out / 'compare.md'}, {out / 'compare.json'}", f"compare.html: {out / 'compare.html'}"]
