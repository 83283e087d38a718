"""``judge-eval compare`` of two ranking runs: POLLUX's matrix of candidate B minus candidate A, with paired intervals.

    judge-eval compare runs/rank/model-a runs/rank/model-b --out runs/rank/a-vs-b

Both folders are ``judge-eval rank`` outputs (``rank.json``, ``items.jsonl``, ``predictions.jsonl``) of one data
set: an instruction both runs hold must have the same text, reference answer, ``meta`` and criteria in each (two runs
of different data are refused; two copies of one data set at different paths are not). The comparison is paired per
item: each run's binary gate is first decided from its own verdicts, then only the (instruction, criterion) items
**both** runs scored enter the cells, so a verdict that failed on one side takes the item out of both (an item one
side lost would otherwise leave the other side's score of it in, and a side whose hard items fail to parse would
look better). The gate is no item like the others: it zeroes its whole instruction, so an instruction whose binary
(gate) criterion one run scored and the other did not (its verdict failed) is left out of both sides, every item of
it (else the side whose Critical verdict failed would keep the scores the other side's gate zeroed, and look
better). Per cell, ``n`` counts the paired items, ``n_a`` / ``n_b`` the items each run scored there among the
instructions both hold, and ``n_dropped_a`` / ``n_dropped_b`` those of them left out because the other run has no
score for the item (or for its instruction's gate). The instructions compared are those with a paired item (every
other instruction of either run is listed per side with why: ``excluded`` in the result): for each bootstrap
resample, one draw of those instructions (with replacement) feeds both matrices, so what an instruction makes easy or
hard cancels out of the difference (the paired bootstrap of ``eval.scoring.bootstrap.paired_bootstrap``, over
instructions instead of items). Both matrices, the point's and each resample's, are differenced at
``COMPARED_DIGITS`` digits, as the leaderboard's means are (``compared_values``). A cell's interval is the
``1 - alpha`` one of those resamples (``eval.scoring.resample_rules.called_interval``: its ends the ⌈n·alpha/2⌉-th
smallest and largest of the n differences); its p-value is the paired sign-flip permutation test's over the instructions
(``eval.ranking.permutation``: the two runs' totals of any set of instructions swapped, exact up to ``EXACT_MAX``
instructions): the bootstrap's own p is 0 whenever every instruction's difference shares a sign, which under the null
happens with probability 2 / 2^n, so on few instructions it called far more often than alpha. A cell is called
``B higher`` / ``B lower`` when p < alpha and its interval excludes 0 on that side, drawn from at least 2 / alpha
resamples (``eval.scoring.resample_rules.resamples_to_call``) over at least 2 instructions behind the cell
(``matrix.MIN_INSTRUCTIONS``: one instruction redrawn is always itself, a zero-width interval) and enough for the
test to reach alpha (``permutation.fewest_for_call``: 6 at 0.05); else no call, "—", and the cell's ``why_no_call``
says why. The tested cells are one family: each cell's call reads its Holm-adjusted p (``p_holm``, Holm's step-down
over the tested cells' sign-flip p-values, statsmodels' ``multipletests`` by ``eval.scoring.holm``; a margin that is
another cell under another name counted once, ``margin_aliases``), so the chance of any false call in the matrix is
at most alpha, as ``judge-eval compare`` of scored runs (``eval.scoring.compare``) adjusts its
cells and the leaderboard its pairs (Bonferroni); the raw ``p_value`` is kept beside it. So 6 instructions at 0.05
hold for one test: a cell whose smallest p, Holm-adjusted over the family, is not below alpha is untested too, out
of the family, and says why (``holm_unreachable``: three tests on 6 instructions are 3 x 1/32 at best). So is a cell
whose own test cannot reach alpha over the instructions the runs score differently in it
(``matrix.moving_instructions``: a swap of any other moves nothing there), such as a gate row both runs keep at 0
(p = 1 whatever its instructions), which in the family only multiplied the others' p. Each cell's own instructions
decide it, never the signs of its differences, which a swap changes: Holm over the cells left is then still the
closed testing of Bonferroni tests over the cells that can be called, and bounds the chance of any false call by
alpha. The floor before it is over every tested cell, such cells included, so that it too rests on no cell's scores:
there, identical cells still count.
Both runs must use one normalisation, verdict reading and treatment of empty and
failed answers (their ``rank.json`` says which) and should use one judge: runs whose judge settings differ
(``JUDGE_SETTINGS``, read from each folder's ``run.json``) are refused, naming each difference, unless
``allow_other_judge``. What a server said of its weights (``WEIGHTS_SETTINGS``) names a place as much as the weights,
so it refuses only where both runs recorded it and name one judge checkpoint whose fingerprint changed (retrained in
place, ``weights_differences``); any other difference of it is a note in the comparison (``judge_notes``).

Why one module of ~876 lines: the two-run comparison is one pipeline (the refusals of runs that cannot be compared,
the pairing of items and gates (``paired_items``, the leaderboard's too), the paired bootstrap and its
Holm-corrected calls, the Markdown of the result) over the loaded runs' shapes, whose loader, refusals and reasons
for no call the leaderboard (``eval.ranking.leaderboard``) reuses as they are, by their public names.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from judge.plumbing.config_files import read_json_object
from judge.wire import HUB_SNAPSHOT, root_identity

__all__ = ["is_ranking_run", "compare_rankings", "render_ranking_compare_markdown", "judge_settings", "binary_criteria",
           "JUDGE_SETTINGS", "WEIGHTS_SETTINGS", "COMPARED_DIGITS", "compared_values", "weights_differences",
           "judge_note_lines", "holm_adjusted", "holm_unreachable",
           "margin_aliases", "paired_items", "Pairing",
           # What the leaderboard (``eval.ranking.leaderboard``) shares with two runs' comparison: one home of each.
           "UNJUDGED_SETTINGS", "load_ranking_run", "unjudged_setting", "instruction_contents", "judge_differences",
           "refuse_other_data", "excluded_instructions", "unjudged_answers", "why_no_call", "called_verdict",
           "finite_or_none"]

log = logging.getLogger("judge_eval.compare")

#: What makes a run's verdicts, by the name a refusal gives it, and where its ``run.json`` keeps it (the judge
#: stage's record, ``eval.judging.run``): the label and the model the server said it served, the checkpoint or hub
#: id, the prompt and its version, the verdict format and how leniently it is read, the route (chat or judge-serve),
#: the sampling, the budget, extra request fields, a served checkpoint's server and flags, and what the server said
#: of the weights it served (``WEIGHTS_SETTINGS``). Settings of how the run went (concurrency, retries, timeouts,
#: keys) may differ.
JUDGE_SETTINGS = {"name": ("config", "name"), "served model": ("model",), "judge": ("config", "judge"),
                  "prompt": ("config", "prompt"), "prompt_version": ("prompt_version",),
                  "verdict_format": ("config", "verdict_format"), "lenient": ("config", "lenient"),
                  "route": ("backend",), "temperature": ("config", "temperature"),
                  "max_tokens": ("config", "max_tokens"), "extra_body": ("config", "extra_body"),
                  "server": ("config", "server"), "server_args": ("config", "server_args"),
                  "weights_fingerprint": ("weights_fingerprint",), "root": ("server_limits", "root")}
#: The settings only some servers record: judge-serve's fingerprint of the weights files it serves (a checkpoint
#: retrained in place keeps its path and name, not its fingerprint; ``serve.layout.weights_fingerprint``) and the
#: checkpoint a vLLM server says it loaded (its model entry's ``root``, which ``--served-model-name`` does not hide;
#: judge-serve's is a digest of the folder, ``judge.wire.root_identity``, through which both sides are compared).
#: Made for a resume into one folder (``eval.judging.format_choice.held_root``, ``held_fingerprint``), across runs they
#: differ for the same weights too (a hub id's root lies in the machine's HF cache; the fingerprint hashes files'
#: modification times): compared by ``weights_differences``.
WEIGHTS_SETTINGS = ("weights_fingerprint", "root")
#: The settings a run learns from its judge's server (its name, its model entry, the route it answers on, the
#: template and format it serves, the max_tokens fitted to it): a run whose judge was never asked (every answer failed
#: or was empty: no item to judge) has its configured values there, not the server's, so they are not compared for
#: it, as ``eval.judging.shards.SERVER_SAID`` leaves them out for a shard that asked no server.
SERVER_SAID_SETTINGS = ("name", "served model", "route", "prompt_version", "verdict_format", "max_tokens",
                        *WEIGHTS_SETTINGS)
#: ``judge_settings``' key saying whether the run asked its judge anything (run.json's ``n_items`` above 0).
ASKED = "asked"
#: A hub id's checkpoint as the HF cache lays it out: the part of a root that names the weights, whatever HF_HOME
#: holds it (judge-serve sends that part itself as its root).
_HUB_SNAPSHOT = HUB_SNAPSHOT
#: What a note on a weights setting means (``judge_note_lines``).
_NOTE_MEANING = {
    "root": "the servers loaded the judge from other paths (another HF cache, copy or revision of it); a path names "
            "a place, not the weights, so the runs were compared",
    "weights_fingerprint": "the judge's weights files differ in name, size or modification time (a copy of the same "
                           "weights does too); not one judge path or id retrained in place, so the runs were compared",
}
#: Decimal digits the matrices (and the leaderboard's per-instruction totals and means) are compared at
#: (``compared_values``).
COMPARED_DIGITS = 12


def compared_values(values: Any) -> np.ndarray:
    """``values`` rounded to ``COMPARED_DIGITS`` digits before two runs are differenced: the same normalised scores
    averaged in another order (two candidates whose criteria dealt them differently) differ in their last bit, and
    such a tie would be called a difference (interval [-1e-16, -1e-16], p = 0) in every resample. The scores are
    k / (max - min) on small integer scales: 12 digits keep every real difference."""
    return np.round(values, COMPARED_DIGITS)


def is_ranking_run(folder: str | Path) -> bool:
    """Whether ``folder`` holds a ``judge-eval rank`` run (its ``rank.json``, or ``bench.json`` if ranked before the
    rename: ``eval.ranking.rank.ranking_result``)."""
    from eval.ranking.rank import ranking_result

    return ranking_result(folder) is not None


def load_ranking_run(folder: Path) -> tuple[dict[str, Any], list]:
    """A run's rank.json (``ranking_result``: bench.json if ranked before the rename) and its matrix's items, read
    again from the files it records (``content_key``).

    Raises:
        ValueError: no such file, or an unreadable one, naming it and the field; or files changed since it was
            written (a rank rerun rewrites items.jsonl before its judge stage), naming the folder.
    """
    from eval.ranking.rank import ITEMS, RANKING_RESULT, UNJUDGED, ranked_files_key, ranked_items, ranking_result

    path = ranking_result(folder) or folder / RANKING_RESULT  # neither: read_json_object names the file missing
    info = read_json_object(path)
    _check_result(info, path)
    if "content_key" not in info:  # a result written before the key: read as before
        log.info("%s: written before the ranking's result recorded the files it rests on (content_key): not checked "
                 "against items.jsonl, predictions.jsonl and unjudged.jsonl as they are now", path)
    elif info["content_key"] != ranked_files_key(folder):
        raise ValueError(f"{folder}: changed since its {path.name} was written (a rank rerun in progress or cut "
                         "short); rerun judge-eval rank on it")
    # The matrix is recomputed with the reading the run's own used (a result before the option: the toolkit's).
    return info, ranked_items(folder / ITEMS, folder / "predictions.jsonl", info.get("verdict_reader", "toolkit"),
                              unjudged=folder / UNJUDGED)


def _check_result(info: dict[str, Any], path: Path) -> None:
    """ValueError naming the file and field when ``rank.json`` lacks what a comparison reads of it (a file cut or
    edited by hand would otherwise stop the comparison in a KeyError or AttributeError traceback naming neither)."""
    from eval.ranking.matrix import EMPTY_ANSWER, NORMALIZE
    from eval.ranking.rank import RANKED_FILES
    from judge.verdicts import VerdictReader

    reader = info.get("verdict_reader", VerdictReader.TOOLKIT)  # absent: a result before the option
    if reader not in VerdictReader.ALL:
        raise ValueError(f"{path}: field 'verdict_reader' is {reader!r}, not one of {', '.join(VerdictReader.ALL)}; "
                         "rerun judge-eval rank on the folder")
    key = info.get("content_key", {})
    if not (isinstance(key, dict) and set(key) <= set(RANKED_FILES)
            and all(v is None or isinstance(v, str) for v in key.values())):
        raise ValueError(f"{path}: field 'content_key' must map {', '.join(RANKED_FILES)} to a digest or null; "
                         "rerun judge-eval rank on the folder")
    matrix = info.get("matrix")
    if not isinstance(matrix, dict):
        raise ValueError(f"{path}: field 'matrix' is missing or not an object; rerun judge-eval rank on the folder")
    if matrix.get("normalize") not in NORMALIZE:
        raise ValueError(f"{path}: field 'matrix.normalize' is {matrix.get('normalize')!r}, not one of "
                         f"{', '.join(NORMALIZE)}; rerun judge-eval rank on the folder")
    pairs = matrix.get("binary_criteria", [])
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                              for p in pairs):
        raise ValueError(f"{path}: field 'matrix.binary_criteria' must be a list of [meta, criterion] pairs of text; "
                         "rerun judge-eval rank on the folder")
    for name in UNJUDGED_SETTINGS:  # absent: a result before the setting (``unjudged_setting``)
        if name in matrix and matrix[name] not in EMPTY_ANSWER:
            raise ValueError(f"{path}: field 'matrix.{name}' is {matrix[name]!r}, not one of "
                             f"{', '.join(EMPTY_ANSWER)}; rerun judge-eval rank on the folder")


#: How a run scored the items its judge was not asked about (``rank.json``'s ``matrix``), with the flag that sets it.
UNJUDGED_SETTINGS = {"empty_answer": ("empty answers", "--empty-answer"),
                     "no_answer": ("failed answers", "--no-answer")}


def unjudged_setting(info: dict[str, Any], name: str) -> str:
    """How the run scored empty (failed) answers; a result written before the setting left them out of the matrix."""
    return info["matrix"].get(name, "unscored")


def _item_keys(items: list) -> list[tuple[Any, str, int]]:
    """Each item's key, the same for one item in two runs of one data set: (prompt_id, criterion, k), k counting the
    instruction's earlier items of that criterion (a run lists an instruction's items in its criteria's order)."""
    seen: dict[tuple[Any, str], int] = {}
    keys = []
    for it in items:
        base = (it.prompt_id, it.criteria_name)
        seen[base] = seen.get(base, -1) + 1
        keys.append((*base, seen[base]))
    return keys


def instruction_contents(folder: Path) -> dict[Any, dict[str, Any]]:
    """What a run's judge read (or would have read) of each instruction it selected: text, reference answer, meta
    and criteria; those it was not asked about from ``unjudged.jsonl``."""
    from eval.ranking.rank import ITEMS, UNJUDGED, item_origin, read_unjudged, selected_records

    found: dict[Any, dict[str, Any]] = {}
    rows = [(prompt_id, record.instruction, record.reference_answer, meta, record.criteria_name, record.rubrics)
            for record in selected_records(folder / ITEMS)
            for prompt_id, meta in [item_origin(record, folder / ITEMS)]]
    rows += [(row["prompt_id"], row["instruction"], row["reference_answer"], row["meta"], row["criteria_name"],
              row["rubrics"]) for row in read_unjudged(folder / UNJUDGED)]
    for prompt_id, instruction, reference_answer, meta, name, rubrics in rows:
        seen = found.setdefault(prompt_id, {"instruction": instruction, "reference_answer": reference_answer,
                                            "meta": meta, "criteria": set()})
        seen["criteria"].add((name, rubrics))
    return found


def judge_settings(folder: str | Path) -> dict[str, Any] | None:
    """``JUDGE_SETTINGS`` of a ranking run, read from its ``run.json``; None when the folder has none (or it holds no
    judge config). A judge given as a URL is ``<url>`` (a requeued run reaches its server at a new address), and
    the server settings of a judge not served by the run are left out.

    Raises:
        ValueError: an unreadable run.json, naming it.
    """
    from judge.plumbing.provenance import read_provenance

    record = read_provenance(folder, missing_ok=True)
    if not isinstance(record.get("config"), dict):
        return None
    settings = {}
    for name, path in JUDGE_SETTINGS.items():
        value: Any = record
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        settings[name] = value
    if str(settings["judge"]).startswith(("http://", "https://")):
        settings.update(judge="<url>", server=None, server_args=None)
    settings[ASKED] = record.get("n_items") != 0  # absent in older records: taken as asked
    return settings


def weights_differences(a: dict[str, Any], b: dict[str, Any]) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """What two runs' servers said of their judge's weights (``WEIGHTS_SETTINGS`` of ``judge_settings``), as
    (differences that refuse the comparison, notes), each ``{name: [a, b]}``; a value only one run recorded is no
    evidence either way.

    Roots are compared by their hub snapshot (``models--o--n/snapshots/<rev>``) where both have one, else through
    ``judge.wire.root_identity`` (judge-serve records a digest of the path, a plain vLLM server and an older
    judge-serve the path: a path and its digest are one folder, two paths one only when equal); another root is a
    note. Other fingerprints refuse only where both runs name one judge checkpoint (the same ``judge`` path or hub
    id, or, for a judge reached by URL, a server that loaded the same folder) and are not one hub revision: the
    checkpoint retrained in place the fingerprint was made to tell; else they are a note. Two fingerprints of one
    judge-train export that are both its own now, by either formula judge-serve has used for its files, are no
    difference (``_one_exports_files``).
    """
    refused: dict[str, list[Any]] = {}
    notes: dict[str, list[Any]] = {}
    roots = [a.get("root"), b.get("root")]
    snapshots = [found.group(1) if (found := _HUB_SNAPSHOT.search(r if isinstance(r, str) else "")) else None
                 for r in roots]
    same_revision = None not in snapshots and snapshots[0] == snapshots[1]
    folders = [root_identity(root) if isinstance(root, str) and root else None for root in roots]
    same_folder = None not in folders and folders[0] == folders[1]
    if all(folders) and not (same_revision or (None in snapshots and same_folder)):  # a hub root by its revision
        notes["root"] = roots
    prints = [a.get("weights_fingerprint"), b.get("weights_fingerprint")]
    if all(prints) and prints[0] != prints[1]:
        one_judge = a.get("judge") == b.get("judge") and a.get("judge") not in (None, "<url>")
        one_folder = a.get("judge") == b.get("judge") == "<url>" and same_folder
        if not (one_judge and _one_exports_files(prints, str(a.get("judge")), [a.get("server_args"),
                                                                           b.get("server_args")])):
            (refused if (one_judge or one_folder) and not same_revision else notes)["weights_fingerprint"] = prints
    return refused, notes


def _one_exports_files(prints: list[Any], judge_ref: str, server_args: list[Any]) -> bool:
    """Whether two fingerprints are, each by one formula or the other, those of the judge-train export ``judge_ref``
    on this machine now (``eval.judging.format_choice.same_weights``): its files fingerprinted by a judge-serve that
    did not read their ``weights_sha256.json`` and by one that did. The export is the one both runs' servers
    fingerprinted alone (``eval.judging.format_choice.judged_export`` of each run's ``server_args``, the rule a resume
    and a merge hold too); no such export here tells nothing."""
    from eval.judging.format_choice import judged_export, same_weights

    exports = {judged_export(judge_ref, args) for args in server_args}
    return None not in exports and len(exports) == 1 and same_weights(prints[0], prints[1], exports.pop())


def judge_note_lines(notes: dict[str, list[Any]], prefix: str = "") -> list[str]:
    """The sentences of a comparison's ``judge_notes``: each weights setting that differs without refusing, with
    what it means."""
    return [f"Note: {prefix}{name} {a!r} vs {b!r}: {_NOTE_MEANING[name]}." for name, (a, b) in notes.items()]


def judge_differences(folders: list[Path], info_a: dict[str, Any], info_b: dict[str, Any], allow_other_judge: bool,
                      which: str = "the runs", settings: list[dict[str, Any] | None] | None = None,
                      ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The judge settings that differ between the runs and the weights settings that differ without refusing
    (``weights_differences``), each ``{name: [a, b]}``; ``which``: the runs as a refusal names them; ``settings``:
    the two runs' ``judge_settings`` where the caller has them (a leaderboard reads each run's once, not once per
    pair it is in), read from ``folders`` otherwise.

    Raises:
        ValueError: some differ, or a run has no run.json to tell, and ``allow_other_judge`` is off.
    """
    settings = settings if settings is not None else [judge_settings(folder) for folder in folders]
    missing = [str(folder) for folder, found in zip(folders, settings) if found is None]
    if missing:
        if not allow_other_judge:
            raise ValueError(f"{', '.join(missing)}: no run.json with the judge's settings, so whether both runs were "
                             "judged alike cannot be checked; pass --allow-other-judge to compare them anyway")
        return {"run.json": [settings[0] is not None, settings[1] is not None]}, {}
    unasked = [str(folder) for folder, found in zip(folders, settings) if not found.get(ASKED, True)]
    # A run whose judge was never asked holds no server's word to compare: its configured settings alone are.
    skipped = SERVER_SAID_SETTINGS if unasked else WEIGHTS_SETTINGS
    differ = {name: [settings[0][name], settings[1][name]] for name in JUDGE_SETTINGS
              if name not in skipped and settings[0][name] != settings[1][name]}
    notes: dict[str, list[Any]] = {}
    if not unasked:
        weights, notes = weights_differences(*settings)
        differ.update(weights)
        if info_a.get("judge") != info_b.get("judge"):  # rank.json's label, as run.json's name says it
            differ.setdefault("name", [info_a.get("judge"), info_b.get("judge")])
    if differ and not allow_other_judge:
        said = "; ".join(f"{name} {a!r} vs {b!r}" for name, (a, b) in differ.items())
        raise ValueError(f"{which} were judged differently ({said}): their matrices are not comparable; pass "
                         "--allow-other-judge to compare them anyway")
    return differ, notes


def _sorted_ids(ids) -> list[Any]:
    return sorted(ids, key=lambda p: (isinstance(p, str), p))


def unjudged_answers(items) -> dict[str, list[Any]]:
    """A run's instructions whose answer the judge never saw, sorted: ``empty_answers`` (empty once thinking is
    stripped) and ``failed_answers`` (no answer to judge: ``no_answer``); each is scored or not by the run's
    setting, and listed either way."""
    return {"empty_answers": _sorted_ids({it.prompt_id for it in items if it.status == "empty_answer"}),
            "failed_answers": _sorted_ids({it.prompt_id for it in items if it.status == "no_answer"})}


def binary_criteria(info: dict[str, Any]) -> set[tuple[str, str]]:
    """The data's binary (meta, criterion) pairs a run's ``rank.json`` keeps (``matrix.pollux_matrix``); none in a
    result written before the field (its gate read its own selection's rubrics only)."""
    return {(meta, name) for meta, name in info["matrix"].get("binary_criteria", ())}


def _gate_keys(items: list, keys: list[tuple[Any, str, int]],
               data_pairs: set[tuple[str, str]] = frozenset()) -> set[tuple[Any, str, int]]:
    """The keys of a run's binary (gate) items, by ``matrix.matrix_arrays``' rule: a rubric of levels {0, 1}, or one
    without a readable scale whose (meta, criterion) is binary elsewhere (in the run or its data: ``data_pairs``)."""
    pairs = {(it.meta, it.criteria_name) for it in items if it.binary} | data_pairs
    return {key for key, it in zip(keys, items)
            if (it.binary if it.binary is not None else (it.meta, it.criteria_name) in pairs)}


def excluded_instructions(items: list, scored: set[Any], shared: set[Any], gate_one_side: set[Any]) -> dict[str, Any]:
    """The instructions of one run left out of the comparison, by why (``eval.ranking.report.EXCLUDED``), and their
    number."""
    by_status: dict[str, set[Any]] = {}
    for it in items:
        by_status.setdefault(it.status, set()).add(it.prompt_id)
    held = {it.prompt_id for it in items}
    no_answer = by_status.get("no_answer", set()) - scored
    empty = by_status.get("empty_answer", set()) - scored
    out = {"no_answer": no_answer, "empty_answer": empty, "no_score": held - scored - no_answer - empty,
           "gate_scored_by_one": (scored - shared) & gate_one_side,
           "not_scored_by_other": scored - shared - gate_one_side}
    return {"n": len(held - shared), **{why: _sorted_ids(ids) for why, ids in out.items()}}


def refuse_other_data(info_a: dict[str, Any], info_b: dict[str, Any], folders: list[Path],
                      texts: tuple[dict[Any, dict[str, Any]], dict[Any, dict[str, Any]]] | None = None) -> None:
    """ValueError naming the first instruction whose content differs between the runs (different data).

    ``texts``: the two runs' ``instruction_contents``, where the caller has them (a leaderboard reads each run's
    once, not once per pair it is in); read from ``folders`` otherwise."""
    texts_a, texts_b = texts if texts is not None else (instruction_contents(folders[0]),
                                                        instruction_contents(folders[1]))
    for prompt_id in texts_a.keys() & texts_b.keys():
        a, b = texts_a[prompt_id], texts_b[prompt_id]
        differ = [field for field in a if a[field] != b[field]]
        if differ:
            raise ValueError(f"the runs were made on different data ({info_a.get('data')!r} vs "
                             f"{info_b.get('data')!r}): prompt_id {prompt_id!r} has another {', '.join(differ)} in "
                             "each; compare runs of one data set")


class Pairing(NamedTuple):
    """What the runs of a comparison pair (``paired_items``): per run, each item's key (``_item_keys``), the keys
    it scored and their instructions; the instructions whose gate some runs scored and others did not
    (``gate_partial``: they leave every run), the keys every run scored outside those (``paired``), and the
    instructions with such a key, in the first run's order (``shared``)."""

    keys: list[list[tuple[Any, str, int]]]
    scored_keys: list[set[tuple[Any, str, int]]]
    scored_ids: list[set[Any]]
    gate_partial: set[Any]
    paired: set[tuple[Any, str, int]]
    shared: list[Any]


def paired_items(folders: list[Path], runs: list[list], binaries: list[set[tuple[str, str]]],
                 settings: dict[str, str]) -> Pairing:
    """The one pairing rule of two runs (``compare_rankings``) and of K (``eval.ranking.leaderboard``): each run's
    gate is decided from its own verdicts, then only the (instruction, criterion) items **every** run scored
    count, and an instruction whose binary (gate) criterion some runs scored and others did not leaves every run
    (a failed Critical verdict keeps every score the other runs' gate may have zeroed).

    Args:
        folders: the runs, as a refusal names them; runs: their items (``load_ranking_run``); binaries: each run's
            data's binary (meta, criterion) pairs (``binary_criteria``); settings: how unjudged items are scored
            (``UNJUDGED_SETTINGS``).

    Raises:
        ValueError: no item every run scored is left (``nothing_shared`` says why).
    """
    from eval.ranking.matrix import is_scored

    keys = [_item_keys(items) for items in runs]
    scored_keys = [{k for k, it in zip(ks, items) if is_scored(it, **settings)} for ks, items in zip(keys, runs)]
    scored_ids = [{k[0] for k in side} for side in scored_keys]
    every = set.intersection(*scored_keys)
    # A gate scored by some runs only: decided on those sides and open on the others, so its instruction leaves all.
    gates = set().union(*(_gate_keys(items, ks, b) for items, ks, b in zip(runs, keys, binaries)))
    gate_partial = {k[0] for k in gates & (set.union(*scored_keys) - every)} & set.intersection(*scored_ids)
    paired = {k for k in every if k[0] not in gate_partial}
    paired_ids = {k[0] for k in paired}
    shared = [p for p in dict.fromkeys(it.prompt_id for it in runs[0]) if p in paired_ids]
    if not shared:
        raise ValueError(nothing_shared(folders, runs, keys, scored_keys, gates, gate_partial))
    return Pairing(keys, scored_keys, scored_ids, gate_partial, paired, shared)


def nothing_shared(folders: list[Path], runs: list[list], keys: list[list], scored_keys: list[set], gates: set,
                   gate_partial: set) -> str:
    """Why runs have nothing to compare, for the refusal: when every instruction they all scored left because its
    binary (gate) criterion was scored by some runs only, how many, and per run the gate verdicts it failed, by
    status (a judge that failed every Critical verdict is the usual cause), not that nothing was scored."""
    from eval.ranking.items import item_status

    every = "both" if len(folders) == 2 else "every one of them"
    if not gate_partial:
        return f"the runs have no item (instruction, criterion) that {every} scored"
    every = "both runs" if len(folders) == 2 else "every run"
    failed = []
    for folder, items, ks, scored in zip(folders, runs, keys, scored_keys):
        by_status: dict[str, int] = {}
        for key, it in zip(ks, items):
            if key[0] in gate_partial and key in gates and key not in scored:
                by_status[item_status(it)] = by_status.get(item_status(it), 0) + 1
        if by_status:
            said = ", ".join(f"{status} {n}" for status, n in sorted(by_status.items()))
            failed.append(f"{folder} {sum(by_status.values())} ({said})")
    which = "one run only" if len(folders) == 2 else "some runs only"
    one = len(gate_partial) == 1
    return (f"the runs have nothing left to compare: the {len(gate_partial)} instruction{'s' * (not one)} {every} "
            f"scored {'was' if one else 'were'} left out of every run because {'its' if one else 'their'} binary "
            f"(gate) criterion was scored by {which} (a gate known on some sides only); gate verdicts not scored: "
            f"{'; '.join(failed) or 'none'}")


def why_no_call(delta: float, instructions: int, n_boot: int, resamples: int, needed: int, alpha: float,
                scored_by: str = "both runs", non_binary: bool = False,
                holm_floor: tuple[float, int] | None = None, moving: int | None = None) -> str | None:
    """Why a cell has no call ("—"); None when it is tested. ``scored_by``: whose items pair ("every run" for a
    leaderboard); ``non_binary``: the value is a mean of non-binary scores only (a mean over criteria, the
    leaderboard's mean), so ``instructions`` counts those with such a score; ``holm_floor``: (the cell's smallest
    Holm-adjusted p, the tests it was adjusted over), given where that is not below alpha (``holm_unreachable``);
    ``moving``: of ``instructions``, those whose swap between the runs moves the cell (``matrix.moving_instructions``;
    None: not known), which the cell's own test can reach alpha over or not."""
    from eval.ranking.matrix import MIN_INSTRUCTIONS
    from eval.ranking.permutation import fewest_for_call, smallest_p

    what = "instruction" + ("s" * (instructions != 1)) + (" with a non-binary score" if non_binary else "")
    if not math.isfinite(delta):
        if non_binary:  # the binary (gate) items may well be shared: the mean leaves them out
            return f"no non-binary score shared by {scored_by} (the mean leaves binary criteria out)"
        return f"no item of the cell was scored by {scored_by}"
    if instructions < MIN_INSTRUCTIONS:
        return f"rests on {instructions} {what} scored by {scored_by}; an interval needs at least {MIN_INSTRUCTIONS}"
    if smallest_p(instructions) >= alpha:
        return (f"rests on {instructions} {what} scored by {scored_by}: the sign-flip test's smallest p there, "
                f"2/2^{instructions} = {smallest_p(instructions):.4g}, is not below alpha {alpha:.4g}; a call needs at "
                f"least {fewest_for_call(alpha)}")
    if n_boot == 0:
        return "no resamples"
    if resamples < needed:
        return f"{resamples} resamples defined it; a call needs at least {needed}"
    # the cell's own reason first: it holds whatever the other cells are
    if moving == 0:
        return (f"scored alike by {scored_by} on every one of its {instructions} {what}: no swap between the runs "
                "moves it (sign-flip p 1), so it is left out of Holm's family")
    if moving is not None and smallest_p(moving) >= alpha:
        return (f"rests on {instructions} {what} scored by {scored_by}, {moving} of which the runs score "
                f"differently: the sign-flip test's smallest p there, 2/2^{moving} = {smallest_p(moving):.4g}, is not "
                f"below alpha {alpha:.4g}; a call needs at least {fewest_for_call(alpha)} that differ")
    if holm_floor is not None:
        return (f"rests on {instructions} {what} scored by {scored_by}: the sign-flip test's smallest p there, "
                f"2/2^{instructions} = {smallest_p(instructions):.4g}, Holm-adjusted over the {holm_floor[1]} tests "
                f"with enough instructions, is at best {holm_floor[0]:.4g}, not below alpha {alpha:.4g}; a call needs "
                "more instructions or fewer cells")
    return None


def called_verdict(low: float, high: float, p_value: float, alpha: float) -> str:
    """A tested cell's (or pair's) call: ``B higher`` / ``B lower`` when the sign-flip p is below ``alpha`` and the
    bootstrap interval excludes 0 on that side, else ``no difference``; "—" with no interval or p."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(p_value)):
        return "—"
    if p_value < alpha and low > 0:
        return "B higher"
    if p_value < alpha and high < 0:
        return "B lower"
    return "no difference"


def margin_aliases(arrays) -> dict[tuple[int, int], tuple[int, int]]:
    """The margins of a paired matrix (``matrix.MatrixArrays``) that are another cell under another name: a row's
    ``mean_over_meta`` over one cell with items, a column's ``mean_over_criteria`` over one criterion's non-binary
    items when that cell holds no binary one, the corner over one such cell, or over one column's non-binary scores
    when every instruction has as many of each of its criteria (the corner is then that column's
    ``mean_over_criteria``). Each maps to that cell: in every swap and resample it is the same number (the last up
    to float rounding, below ``COMPARED_DIGITS``), so one hypothesis, tested once (a matrix of one criterion and
    one meta value is four cells of one test, and Holm over four copies would ask p < alpha / 4 of it)."""
    n_c, n_m = arrays.shape
    counts = np.asarray(arrays.counts.sum(axis=0)).reshape(n_c, n_m)
    nb = np.asarray(arrays.nb_counts.sum(axis=0)).reshape(n_c, n_m)
    all_nb = (nb > 0) & (nb == counts)  # nb counts a subset of the items: equal totals, equal items
    aliases = {}
    for c in range(n_c):
        (filled,) = np.nonzero(counts[c] > 0)
        if len(filled) == 1:
            aliases[c, n_m] = (c, int(filled[0]))
    for m in range(n_m):
        (filled,) = np.nonzero(nb[:, m] > 0)
        if len(filled) == 1 and all_nb[filled[0], m]:
            aliases[n_c, m] = (int(filled[0]), m)
    filled_nb = np.argwhere(nb > 0)
    if len(filled_nb) == 1 and all_nb[tuple(filled_nb[0])]:
        aliases[n_c, n_m] = (int(filled_nb[0][0]), int(filled_nb[0][1]))
    (nb_columns,) = np.nonzero(nb.sum(axis=0) > 0)
    if (n_c, n_m) not in aliases and len(nb_columns) == 1:
        # One column holds every non-binary score: the corner pools them, that column's mean_over_criteria averages
        # its criteria's means. When every instruction has as many non-binary scores of each of those criteria
        # (POLLUX's shape within one task type), any weighting of the instructions (a resample, or a swap of the
        # runs' paired totals) gives each criterion one count W, and pooled sum / (k·W) is the mean of sum_c / W.
        m = int(nb_columns[0])
        (criteria,) = np.nonzero(nb[:, m] > 0)
        per_instruction = np.asarray(arrays.nb_counts[:, criteria * n_m + m].todense())
        if (per_instruction == per_instruction[:, :1]).all():
            aliases[n_c, n_m] = aliases.get((n_c, m), (n_c, m))
    return aliases


def holm_adjusted(p_value: np.ndarray, tested: list[tuple[int, int]],
                  aliases: dict[tuple[int, int], tuple[int, int]] | None = None) -> tuple[np.ndarray, int]:
    """``p_value``'s cells at ``tested`` adjusted by Holm's step-down method as one family; NaN elsewhere (an
    untested cell has no call to correct, and no false call can come from it). A cell in ``aliases``
    (``margin_aliases``) is its target's test: it enters the family once, and both read its adjusted p.

    Returns:
        The adjusted p-values and the family's size, the distinct tests (fewer than the tested cells where a margin
        is an alias): the m Holm multiplied by, which the report states."""
    from eval.scoring.holm import holm_adjusted_p

    aliases = aliases or {}
    adjusted = np.full(p_value.shape, np.nan)
    family = sorted({aliases.get(cell, cell) for cell in tested if math.isfinite(p_value[cell])})
    if family:
        holm = holm_adjusted_p([p_value[cell] for cell in family])
        by_test = dict(zip(family, holm.tolist()))
        for cell in tested:
            if aliases.get(cell, cell) in by_test:
                adjusted[cell] = by_test[aliases.get(cell, cell)]
    return adjusted, len(family)


def holm_unreachable(instructions: np.ndarray, tested: list[tuple[int, int]], alpha: float,
                     aliases: dict[tuple[int, int], tuple[int, int]] | None = None,
                     ) -> tuple[dict[tuple[int, int], float], int]:
    """The cells of ``tested`` Holm could never call, with their smallest Holm-adjusted p, and the family's size.

    Each cell's test gives at best p = 2/2^n on its n ``instructions`` (``permutation.smallest_p``), and Holm's
    adjusted p grows with every raw p (its first step alone multiplies the smallest by the m tests), so the tested
    cells' floors, adjusted as one family (``holm_adjusted``), bound each cell's adjusted p from below: a floor not
    below alpha is a cell no data could call (three cells on 6 instructions: 3 x 1/32 = 0.094 at best). Such cells
    are left untested, out of the family: which they are follows from the instruction counts alone, never from the
    scores, so Holm over the cells left still bounds the chance of any false call by alpha.

    Returns:
        ``{cell: its floor}`` of the cells that cannot be called, and the family's size (distinct tests) they
        were adjusted over.
    """
    from eval.ranking.permutation import smallest_p

    floors = np.vectorize(smallest_p, otypes=[float])(instructions)
    adjusted, family = holm_adjusted(floors, tested, aliases)
    return {cell: float(adjusted[cell]) for cell in tested if not adjusted[cell] < alpha}, family


def _swaps_to_draw(delta: np.ndarray, instructions: np.ndarray, alpha: float, n_boot: int, n: int) -> int:
    """The swaps the sign-flip test draws (above ``permutation.EXACT_MAX`` instructions): ``n_boot``, raised to
    what a call in the Holm family needs. A drawn p is at least 1 / (1 + swaps), and Holm multiplies the smallest by
    the m cells tested, so with fewer than m / alpha swaps no cell could be called (1,000 swaps call nothing in a
    matrix of 50 cells or more at 0.05). m is bounded by the cells with a difference on enough instructions for the
    test to reach alpha; the raise stops at ``permutation.MAX_SWAPS``, said on stderr before the work it adds."""
    import sys

    from eval.ranking.permutation import EXACT_MAX, MAX_SWAPS, fewest_for_call
    from eval.scoring.resample_rules import resamples_to_call

    if n_boot < resamples_to_call(alpha):  # every cell is untested then (too few resamples): nothing to call
        return n_boot
    family = int((np.isfinite(delta) & (instructions >= fewest_for_call(alpha))).sum())
    wanted = max(n_boot, min(MAX_SWAPS, math.ceil(family / alpha)))  # raised to what a call needs, never lowered
    if n > EXACT_MAX and wanted > n_boot:
        print(f"judge-eval compare: {wanted} sign-flip swaps drawn instead of --n-boot {n_boot}: Holm over up to "
              f"{family} cells needs at least m / alpha = {family / alpha:.0f} for a call", file=sys.stderr)
    return wanted


def finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def compare_rankings(run_a: str | Path, run_b: str | Path, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
                  allow_other_judge: bool = False) -> dict[str, Any]:
    """B minus A, cell by cell, over the (instruction, criterion) items both runs scored.

    Returns:
        ``{"a", "b", "judge", "judge_differences", "judge_notes", "rows", "columns", "cells": {row: {column: {a, b,
        delta, ci, p_value, p_holm, n_resamples, verdict, why_no_call, n, n_a, n_b, n_dropped_a, n_dropped_b,
        n_instructions}}}, "holm_tests", "n_tests_called", "n_instructions", "n_boot", "call_test", "seed", "alpha",
        "normalize", "empty_answer", "no_answer"}``; a cell's ``p_value`` is its sign-flip test's, ``p_holm`` that
        p adjusted by Holm over the tested cells (None when untested; the call reads it), ``holm_tests`` the size of
        that family (its distinct tests: a margin that is another cell under another name, ``margin_aliases``,
        counted once), ``n_tests_called`` how many of those tests were called (in one cell or several),
        ``why_no_call`` says why it is untested ("—"; None when tested), ``call_test`` (None without resamples) ``{test, exact, n_swaps}`` how the p-values were drawn;
        a cell's counts as the module docstring says (margins as a matrix's ``n``: ``matrix.cell_counts``), its
        ``n_instructions`` ``{a, b, shared}`` the instructions behind them (``matrix.cell_instructions``); ``a`` and
        ``b``: ``run``, ``model``, ``n_instructions`` (the run's), ``excluded`` (its instructions left out, by why:
        ``eval.ranking.report.EXCLUDED``, with ``n``), ``n_dropped`` (its scored items left out because the other run
        has no score for them, every cell), ``empty_answers`` (its instructions whose answer was empty, scored or
        not) and ``failed_answers`` (those with no answer to judge, ``no_answer``, scored or not).

    Raises:
        ValueError: not ranking runs, different data, normalisations, verdict readings, treatments of empty or
            failed answers or judge settings, or no item both scored.
    """
    from eval.ranking.matrix import (MEAN_OVER_CRITERIA, MEAN_OVER_META, MIN_INSTRUCTIONS, cell_counts,
                                     cell_instructions, instruction_weights, matrix_arrays, moving_instructions,
                                     resampled_matrices)
    from eval.ranking.permutation import sign_flip_p, swapped_matrices
    from eval.ranking.rank import NOT_A_RANKING
    from eval.scoring.resample_rules import called_interval, resamples_to_call

    folders = [Path(run_a), Path(run_b)]
    for folder in folders:
        if not is_ranking_run(folder):
            raise ValueError(f"{folder}: {NOT_A_RANKING}")
    (info_a, items_a), (info_b, items_b) = map(load_ranking_run, folders)
    normalize = info_a["matrix"]["normalize"]
    if info_b["matrix"]["normalize"] != normalize:
        raise ValueError(f"the runs normalise differently ({normalize} vs {info_b['matrix']['normalize']}); rerun one "
                         "with --normalize to match")
    readers = [info.get("verdict_reader", "toolkit") for info in (info_a, info_b)]
    if readers[0] != readers[1]:
        raise ValueError(f"the runs read verdicts differently ({readers[0]} vs {readers[1]}); rerun one with "
                         "--verdict-reader to match")
    settings = {}
    for name, (what, flag) in UNJUDGED_SETTINGS.items():
        settings[name], other = (unjudged_setting(info, name) for info in (info_a, info_b))
        if other != settings[name]:
            raise ValueError(f"the runs score {what} differently ({settings[name]} vs {other}); rerun one with "
                             f"{flag} to match")
    differences, notes = judge_differences(folders, info_a, info_b, allow_other_judge)
    refuse_other_data(info_a, info_b, folders)
    runs = (items_a, items_b)
    binaries = [binary_criteria(info) for info in (info_a, info_b)]  # each run's gate by its own data's rubrics
    full_a, full_b = (matrix_arrays(items, normalize, **settings, binary_criteria=b)
                      for items, b in zip(runs, binaries))
    pairing = paired_items(folders, list(runs), binaries, settings)
    keys, paired, shared, gate_one_side = pairing.keys, pairing.paired, pairing.shared, pairing.gate_partial
    scored_a, scored_b = pairing.scored_ids
    layout = SimpleNamespace(criteria=sorted(set(full_a.criteria) | set(full_b.criteria)),
                             metas=sorted(set(full_a.metas) | set(full_b.metas)))
    # Each run's gate is decided over all its items inside matrix_arrays; then only the paired items are kept.
    arrays = [matrix_arrays(items, normalize, **settings, layout=layout, prompt_ids=shared, binary_criteria=b,
                            paired=[k for k, key in enumerate(ks) if key in paired])
              for items, ks, b in zip(runs, keys, binaries)]
    # What each run scored in the instructions both hold, before pairing: the counts a cell lost to pairing.
    held = {it.prompt_id for it in items_a} & {it.prompt_id for it in items_b}
    alone = [matrix_arrays(items, normalize, **settings, layout=layout, binary_criteria=b,
                           prompt_ids=[p for p in dict.fromkeys(it.prompt_id for it in items) if p in held])
             for items, b in zip(runs, binaries)]
    n_paired, n_alone = cell_counts(arrays[0]), [cell_counts(a) for a in alone]
    instructions = cell_instructions(arrays[0])
    instructions_alone = [cell_instructions(a) for a in alone]
    ones = np.ones((1, len(shared)))
    point_a, point_b = (compared_values(resampled_matrices(a, ones)[0]) for a in arrays)
    delta = point_b - point_a
    shape = delta.shape
    low, high, p_value = (np.full(shape, np.nan) for _ in range(3))
    resamples = np.zeros(shape, dtype=np.int64)  # per cell, the resamples whose delta was defined
    test = None
    if n_boot > 0 and len(shared) >= MIN_INSTRUCTIONS:
        # The call's p: the sign-flip test over the shared instructions (``eval.ranking.permutation``); an
        # instruction with no item in a cell moves nothing there, so the cell's p is its own instructions' test.
        def swapped(swaps: np.ndarray) -> np.ndarray:  # differenced as the point's matrices are
            swapped_a, swapped_b = swapped_matrices(arrays[0], arrays[1], swaps)
            return compared_values(swapped_b) - compared_values(swapped_a)

        p_value, n_swaps, exact = sign_flip_p(swapped, len(shared), delta, _swaps_to_draw(delta, instructions, alpha,
                                                                                        n_boot, len(shared)),
                                              seed, "bench/compare/sign-flip")
        p_value = np.where(instructions >= MIN_INSTRUCTIONS, p_value, np.nan)
        test = {"test": "paired sign-flip permutation over instructions", "exact": exact, "n_swaps": n_swaps}
        deltas = np.concatenate([compared_values(resampled_matrices(arrays[1], w))
                                 - compared_values(resampled_matrices(arrays[0], w))
                                 for w in instruction_weights(len(shared), n_boot, seed, key="bench/compare")])
        per_cell = np.ascontiguousarray(np.moveaxis(deltas, 0, -1))  # (rows, columns, resamples)
        for i in range(shape[0]):
            for j in range(shape[1]):
                if instructions[i, j] < MIN_INSTRUCTIONS:  # one instruction redrawn: a zero-width interval
                    continue
                d = per_cell[i, j]
                resamples[i, j] = int(np.isfinite(d).sum())
                low[i, j], high[i, j], _ = called_interval(d, alpha)  # the interval; the p is the sign-flip test's
    rows = [*layout.criteria, MEAN_OVER_CRITERIA]
    columns = [*layout.metas, MEAN_OVER_META]
    needed = resamples_to_call(alpha)
    whys = {(i, j): why_no_call(delta[i, j], int(instructions[i, j]), n_boot, int(resamples[i, j]), needed, alpha,
                                 non_binary=r == MEAN_OVER_CRITERIA)
            for i, r in enumerate(rows) for j in range(len(columns))}
    aliases = dict(margin_aliases(arrays[0]).items() & margin_aliases(arrays[1]).items())
    # A cell Holm could never call (its test's smallest p, adjusted over the family, not below alpha) is untested,
    # with why: "tested, no difference" said it had a chance it never had.
    # So is one whose own test cannot reach alpha over the instructions the runs score differently in it (module
    # docstring): one both runs scored alike throughout (a gate row, a criterion scored the same) is p = 1 whatever
    # its instructions, and in the family it only multiplied every other cell's p. The floor above is over every
    # tested cell, these included: it rests on the instruction counts alone, so that which cells it leaves out never
    # turns on another cell's scores (why such a cell may still keep another from the family).
    tested = [cell for cell, why in whys.items() if why is None]
    floors, family = holm_unreachable(instructions, tested, alpha, aliases)
    moving = moving_instructions(arrays[0], arrays[1])
    for i, j in tested:
        whys[i, j] = why_no_call(delta[i, j], int(instructions[i, j]), n_boot, int(resamples[i, j]), needed, alpha,
                                  non_binary=rows[i] == MEAN_OVER_CRITERIA, moving=int(moving[i, j]),
                                  holm_floor=(floors[i, j], family) if (i, j) in floors else None)
    p_holm, holm_tests = holm_adjusted(p_value, [cell for cell, why in whys.items() if why is None], aliases)
    cells: dict[str, dict[str, Any]] = {}
    called = set()  # the distinct tests called: a margin that is another cell's test is that test
    for i, r in enumerate(rows):
        cells[r] = {}
        for j, c in enumerate(columns):
            why = whys[i, j]
            verdict = "—" if why else called_verdict(low[i, j], high[i, j], p_holm[i, j], alpha)
            if verdict.startswith("B "):
                called.add(aliases.get((i, j), (i, j)))
            cells[r][c] = {"a": finite_or_none(point_a[i, j]), "b": finite_or_none(point_b[i, j]),
                           "delta": finite_or_none(delta[i, j]),
                           "ci": [finite_or_none(low[i, j]), finite_or_none(high[i, j])],
                           "p_value": finite_or_none(p_value[i, j]), "p_holm": finite_or_none(p_holm[i, j]),
                           "n_resamples": int(resamples[i, j]), "verdict": verdict, "why_no_call": why,
                           "n": int(n_paired[i, j]), "n_a": int(n_alone[0][i, j]), "n_b": int(n_alone[1][i, j]),
                           "n_dropped_a": int(n_alone[0][i, j] - n_paired[i, j]),
                           "n_dropped_b": int(n_alone[1][i, j] - n_paired[i, j]),
                           "n_instructions": {"a": int(instructions_alone[0][i, j]),
                                              "b": int(instructions_alone[1][i, j]),
                                              "shared": int(instructions[i, j])}}
    sides = {}
    n_inner = int(np.asarray(arrays[0].counts.sum()))  # paired items, every cell (binary ones included)
    for side, folder, info, items, scored, one in (("a", folders[0], info_a, items_a, scored_a, alone[0]),
                                                   ("b", folders[1], info_b, items_b, scored_b, alone[1])):
        sides[side] = {"run": str(folder), "model": info.get("model", ""),
                       "n_instructions": len({it.prompt_id for it in items}),
                       "excluded": excluded_instructions(items, scored, set(shared), gate_one_side),
                       "n_dropped": int(np.asarray(one.counts.sum())) - n_inner,
                       **unjudged_answers(items)}
    return {**sides, "judge": info_a.get("judge", ""), "judge_differences": differences, "judge_notes": notes,
            "rows": rows, "columns": columns, "cells": cells, "holm_tests": holm_tests, "n_tests_called": len(called),
            "n_instructions": len(shared),
            "n_boot": n_boot if len(shared) >= MIN_INSTRUCTIONS else 0, "call_test": test, "seed": seed, "alpha": alpha,
            "normalize": normalize, **settings}


def render_ranking_compare_markdown(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table: delta [interval] and the call, per cell, and the items a cell left out
    because the other run has no score for them."""

    from eval.ranking.permutation import fewest_for_call
    from eval.ranking.report import calls_line, exclusion_lines, holm_applied, resamples_phrase, sign_flip_p_text
    from eval.reports.report import fmt_delta
    from eval.scoring.resample_rules import resamples_to_call
    # Model and judge names, criteria and meta names come from the runs and their data: inert Markdown, so that a
    # "|", "*", "#" or "<" in one opens no column, emphasis, heading or tag; cut, so that a model named by its
    # checkpoint's path does not make the heading a paragraph (listed whole under the table, as compare.md of scored
    # runs lists its runs), and a criterion or meta name as compare.html cuts it.
    from eval.reports.names import shown_names
    from eval.reports.report import markdown_table, md_text
    from eval.scoring.compare import md_run_name, names_in_full

    row_name, column_name = shown_names(result["rows"]), shown_names(result["columns"])
    named = [(f"{md_run_name(result['b']['model'])} (B)", result["b"]["model"]),
             (f"{md_run_name(result['a']['model'])} (A)", result["a"]["model"]),
             (f"judge {md_run_name(result['judge'])}", result["judge"])]
    cut = [(label, name) for label, name in named if md_run_name(name) != md_text(name)]
    rows = []
    for r in result["rows"]:
        parts = []
        for c in result["columns"]:
            cell = result["cells"][r][c]
            low, high = cell["ci"]
            # A call, or the p that kept a tested cell from one, or "—": untested (the line above the table says why)
            p_text = f" p {sign_flip_p_text(cell.get('p_value'))}" + (  # a result written before Holm has no p_holm
                f", Holm {sign_flip_p_text(cell['p_holm'])}" if "p_holm" in cell else "")
            if cell["verdict"].startswith("B "):
                call = f"{p_text} **{cell['verdict']}**"
            elif cell["verdict"] == "—":
                call = " —"
            else:
                call = p_text
            dropped = [cell.get("n_dropped_a") or 0, cell.get("n_dropped_b") or 0]
            lost = f" (dropped A {dropped[0]}, B {dropped[1]})" if any(dropped) else ""
            # the delta and its interval's ends as compare.html writes them (fmt_delta: signed, a rounded-away
            # one "0.000", never "-0.000"), so that one cell reads alike on both pages
            parts.append(f"{fmt_delta(cell['delta'])} [{fmt_delta(low)}, {fmt_delta(high)}]{call}{lost}")
        rows.append([md_text(row_name[str(r)]), *parts])
    fewest = fewest_for_call(result["alpha"])
    # A result written before Holm has no p_holm: its calls read the raw p, and its prose must say so.
    p_read = ("its sign-flip p and that p adjusted by Holm over the tested cells, the call when the Holm p < "
              if holm_applied(result) else "its sign-flip p, the call when p < ")
    # 6 instructions at 0.05 hold for one test: Holm's first step asks 2/2^n < alpha/m of the smallest p.
    holm_floor = (", nor any whose smallest p, Holm-adjusted over the cells with enough instructions, is not below "
                  "it (the fewest hold for one test; m tests ask 2/2^n < alpha/m of the smallest)"
                  if holm_applied(result) else "")
    untested = (f"Each cell: B − A [its {100 * (1 - result['alpha']):g}% interval], then {p_read}"
                f"{result['alpha']:g} and the interval excludes 0 on that side, or — when untested: cells on fewer "
                f"than {fewest} instructions both runs scored are not tested at alpha {result['alpha']:g} (the "
                f"test's smallest p there, 2/2^{fewest - 1}, is not below it){holm_floor}, nor any on fewer than "
                f"{fewest} the runs score differently (scored alike throughout: p 1), nor any with fewer than "
                f"{resamples_to_call(result['alpha'])} resamples.")
    return "\n".join([f"# {named[0][0]} vs {named[1][0]}: POLLUX matrix, B − A", "",
                      f"{result['n_instructions']} instructions with an item scored by both; {named[2][0]}; "
                      f"{resamples_phrase(result)}; alpha {result['alpha']}.",
                      *map(md_text, exclusion_lines(result)),
                      *map(md_text, judge_note_lines(result.get("judge_notes") or {})),
                      *filter(None, [calls_line(result)]), untested, "",
                      markdown_table(["criteria_name", *(md_text(column_name[str(c)]) for c in result["columns"])],
                                     rows),
                      *([""] + names_in_full(cut, "Names")[:-1] if cut else [])])
