"""The file a user uploads to MERA's site, written from a ``judge-eval mera`` run's own outputs (``--submission``).

The layout is MERA's own packer's, ``MERA-Evaluation/MERA``'s ``log_to_submission.py`` in its ``scripts`` folder
(``create_submission``, ``BaseTask.submission_path``), as the site's scorer reads it
(``modules/scoring/src/worker.py`` ``prepare``, ``modules/scoring/src/tasks/task.py`` ``load_and_validate`` and
``evaluate``):

* a ``.zip`` whose files are named by the task's class name, ``ruHumanEval.json`` and ``ruTiE.json`` (the scorer
  keys a file by its name without the extension, case as written, and wants ``.json``:
  ``modules/scoring/configs/<task>.yaml``);
* each file a JSON object ``{"data": {"test": [doc, ...]}}``, one ``doc`` per test item, every item present: the
  scorer looks each gold id up in the file and a missing one is a ``no_id`` error, which scores the whole task 0;
* ruHumanEval's doc ``{"outputs": [[results of sample 1, ..., results of sample n]], "meta": {"id": id}}``: the
  harness's filtered responses whole (``ruHumanEval.doc_outputs_to_submission``), one list per sample of the
  ``str()`` of each test call's result, ``null`` for a call that raised (``benchmark_tasks/ruhumaneval/utils.py``
  ``unsafe_execute``); the scorer reads ``outputs[0]`` as the samples (``src/tasks/ruhumaneval.py``
  ``process_results``), and the id is written as an integer where the row's ``meta.id`` is one
  (``ClassificationTask.outputs_to_submission``: ``int(doc_id)``);
* ruTiE's doc ``{"outputs": "1" | "2", "meta": {"dialog_id": d, "question_id": q}}``, in one flat list
  (``ruTiE.outputs_to_submission``), keyed there by ``dialog_id:d;question_id:q`` (``src/tasks/rutie.py``
  ``doc_to_id``), its outputs a string as the gold's is (the scorer's ``doc_output_type_error`` otherwise).

A failure is written, never dropped, and counted in the summary this module returns: a ruHumanEval sample that did not
pass (failed, timed out, raised, never generated) is written as the results it has, a result cut for
storage or missing as ``null`` (all ``null`` where none was kept: the harness's result for a program that did not
run), so it fails there as here; a passed sample as the expected outputs, which its results equalled whole here
(the stored results are cut to ``STORED_OUTPUT_CHARS``). An unanswered ruTiE question is written as ``"-1"``, the
harness's fallback for a reply without a choice (``benchmark_tasks/rutie/utils.py`` ``FALLBACK``), which the
scorer counts wrong. A sample the sandbox never ran (``sandbox_error``) is the tool's failure, not the model's:
no file is written while the run holds one (``humaneval_submission`` refuses it, counted), as the site would score
it 0.

What a run must be to be written (``submission_refusal``, ``submission_data_refusal``, both before anything is
asked): every item (no ``--limit``) of ``MERA-evaluation/MERA``'s test split read from the hub, its
``data/<task>/test.jsonl`` (the split MERA's packer writes an upload from; a local file or folder is refused, its
repository and split unknown), the model's own samples (no ``--self-check``), MERA's rows (not ``--data
humaneval-en``), and for ruHumanEval at least 10 samples: the scorer's pass@k is over
k = 1, 5, 10 (``modules/scoring/configs/ruhumaneval.yaml``), and its estimator gives 1.0 wherever fewer than k
samples fail (``compute_pass_k``), so a run of fewer than 10 would score pass@10 = 1 there.

Which split the site scores against: MERA's packer writes its upload from ``MERA-evaluation/MERA``'s ``test`` split
(``BENCHMARK_STORAGE``, the ``dataset_path`` of ``benchmark_tasks/custom_loglikelihood_task.yaml``), and the
published scorer reads its gold from ``ai-forever/MERA``'s ``test`` split (``modules/scoring/src/tasks/task.py``
``load_gold``); whether the two share ids, and which one the live site reads, no stored source establishes
(docs/mera.md, "A submission for MERA's site"). So only the packer's split is written, and the round trip in the
tests, whose gold is the rows the file was written from, checks the layout, not the site's gold.

An existing zip at the path keeps its other task's file, so the two tasks' runs can fill one upload.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from eval.mera.sandbox import SANDBOX_ERROR
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.journal import json_utf8

__all__ = ["SUBMISSION_NAMES", "SITE_MAX_K", "RUTIE_FALLBACK", "submission_refusal", "submission_data_refusal",
           "humaneval_submission", "rutie_submission", "write_submission"]

#: The file each task's docs go in, inside the zip (the scorer's task class names).
SUBMISSION_NAMES = {"ruhumaneval": "ruHumanEval.json", "rutie": "ruTiE.json"}
#: The largest k of the site's pass@k (``modules/scoring/configs/ruhumaneval.yaml``: ``ks: [1, 5, 10]``).
SITE_MAX_K = 10
#: What the harness writes for a ruTiE reply without a choice (``benchmark_tasks/rutie/utils.py``).
RUTIE_FALLBACK = "-1"


def submission_refusal(config: Any) -> str | None:
    """Why a run under ``config`` cannot be written as a submission, or ``None`` when it can."""
    if config.task == "ruhumaneval":
        if config.self_check:
            return "--submission needs the model's samples, not --self-check's canonical solutions"
        if config.limit is not None:
            return "--submission needs every task (no --limit): the site scores a task 0 when one item is missing"
        if config.n < SITE_MAX_K:
            return (f"--submission needs --n {SITE_MAX_K} or more: the site's pass@{SITE_MAX_K} over fewer samples "
                    f"is 1.0 (--n {config.n})")
    if config.data in ("sample", "humaneval-en"):
        return f"--submission needs MERA's released test file, not --data {config.data}"
    path = Path(config.submission)
    if path.suffix != ".zip":  # the site reads an upload as a zip by its name (worker.py prepare)
        return f"--submission {path}: must name a .zip"
    return _not_a_zip(path)


def _not_a_zip(path: Path) -> str | None:
    """Why ``path`` cannot take a task's file: it exists and is no zip; asked before the run and again at writing."""
    if path.exists() and not zipfile.is_zipfile(path):
        return f"--submission {path}: exists and is not a zip; give a new path or a submission zip"
    return None


def submission_data_refusal(resolved: Any, rows: Any, task: str) -> str | None:
    """Why the data a run read (``released.TaskData``, and its tasks or dialogues) cannot give ``task``'s
    submission, or ``None``. Only MERA's rows (English HumanEval's are another benchmark), and only the test split of
    ``MERA-evaluation/MERA`` read from the hub (``data/<task>/test.jsonl``), the split MERA's own packer writes an
    upload from: the site keys its gold by the test split's ids, which another split's rows share (ruTiE's dialogue
    and question numbers, ruHumanEval's task numbers), and a local file or folder, whatever its name, is of a
    repository and split nothing here can establish. Decided by the repository and the file's path in it, never by
    the file's name alone."""
    from eval.mera.released import MERA_DATASET

    tasks = rows if isinstance(rows, list) else ()  # ruTiE's dialogues carry no source
    english = not resolved.comparable_with_mera or any(getattr(t, "source", "mera") != "mera" for t in tasks)
    if english:
        return f"--submission: {resolved.path} holds English HumanEval rows, not MERA's ruHumanEval"
    split = f"data/{task}/test.jsonl"
    # ruTiE's released test split carries no answers, which this tool needs to ask a dialogue (docs/mera.md): the
    # hub's ruTiE reads its train split, and no remedy below leads to an upload
    closed = (f"; {MERA_DATASET}'s ruTiE test split carries no answers, which this tool needs to ask its dialogues, "
              f"so no ruTiE upload can be written from the released data") if task == "rutie" else ""
    if not resolved.hub_repo:
        return (f"--submission: {resolved.path} is a local file or folder, whose repository and split cannot be "
                f"established: the site keys its gold by the test split's ids, which another split's rows share; "
                f"give --data {MERA_DATASET} (its {split}, read from the Hugging Face cache; HF_HUB_OFFLINE=1 works)"
                + closed)
    if resolved.hub_repo.casefold() != MERA_DATASET.casefold():
        return (f"--submission: {resolved.hub_repo} is not {MERA_DATASET}, whose test split ({split}) MERA's packer "
                f"writes an upload from; whether {resolved.hub_repo}'s {resolved.in_repo} holds that split's ids "
                f"cannot be established")
    if resolved.in_repo != split:
        return (f"--submission: {resolved.in_repo} of {resolved.hub_repo} is not its test split ({split}), whose "
                f"ids the site's gold is keyed by and this file's rows share as other questions ({resolved.note})"
                + closed)
    return None


def _meta_id(task_id: str) -> int | str:
    return int(task_id) if task_id.isdigit() else task_id


def _sample_outputs(found: Mapping[str, Any], expected: Sequence[str], stored_chars: int) -> list[str | None]:
    if found.get("status") == "passed":
        return list(expected)
    outputs = list(found.get("outputs") or ())
    chars = list(found.get("output_chars") or ())
    kept = [o if o is not None and (i >= len(chars) or chars[i] is None or chars[i] <= stored_chars) else None
            for i, o in enumerate(outputs[: len(expected)])]
    return kept + [None] * (len(expected) - len(kept))


def humaneval_submission(tasks: Sequence[Any], executions: Mapping[str, Sequence[Mapping[str, Any]]],
                         stored_chars: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ruHumanEval's file, its summary) from the run's tasks (``humaneval.CodeTask``) and each task's executions in
    sample order (``executions.jsonl``'s rows: ``status``, ``outputs``, ``output_chars``).

    Raises:
        ValueError: a task without executions, naming it (the run's own outputs do not cover it); a sample that
            never ran in the sandbox (``sandbox_error``), counted: written, the site would score the tool's failure
            against the model.
    """
    docs, statuses = [], Counter()
    for task in tasks:
        found = executions.get(task.task_id)
        if not found:
            raise ValueError(f"ruhumaneval task {task.task_id}: no executions to write")
        samples = [_sample_outputs(f, task.expected, stored_chars) for f in found]
        statuses.update(f.get("status") for f in found)
        docs.append({"outputs": [samples], "meta": {"id": _meta_id(task.task_id)}})
    if statuses[SANDBOX_ERROR]:  # the tool's failure, out of pass@k here: the site would score it 0, the model's
        raise ValueError(f"{statuses[SANDBOX_ERROR]} samples never ran in the sandbox: rerun (every sample executes "
                         f"again) before writing --submission")
    not_passed = sum(v for k, v in statuses.items() if k != "passed")
    summary = {"file": SUBMISSION_NAMES["ruhumaneval"], "n_items": len(docs),
               "n_samples": sum(statuses.values()), "n_samples_not_passed": not_passed,
               "by_status": dict(sorted(statuses.items()))}  # fmt: skip
    return {"data": {"test": docs}}, summary


def rutie_submission(dialogues: Mapping[Any, Sequence[Any]],
                     records: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ruTiE's file, its summary) from the run's dialogues (``rutie.load_dialogues``) and its answer records
    (``answer`` ``"1"``/``"2"``, or ``None`` when unanswered, with ``reason``); every question of every dialogue is
    written, in the dialogues' order, one without a record as unanswered too."""
    by_id = {(str(r["dialog_id"]), int(r["question_id"])): r for r in records}
    docs, reasons = [], Counter()
    for dialog_id, items in dialogues.items():
        for item in items:
            rec = by_id.get((str(dialog_id), item.question_id))
            answer = rec.get("answer") if rec else None
            if answer not in ("1", "2"):
                reasons[(rec or {}).get("reason") or "no answer recorded"] += 1
                answer = RUTIE_FALLBACK
            docs.append({"outputs": answer, "meta": {"dialog_id": item.dialog_id, "question_id": item.question_id}})
    summary = {"file": SUBMISSION_NAMES["rutie"], "n_items": len(docs), "n_unanswered": sum(reasons.values()),
               "unanswered_reasons": dict(sorted(reasons.items())), "unanswered_written_as": RUTIE_FALLBACK}
    return {"data": {"test": docs}}, summary


def write_submission(path: str | Path, task: str, content: Mapping[str, Any]) -> Path:
    """Write ``content`` as ``task``'s file in the zip at ``path``, atomically; an existing zip's other files are
    kept (this task's replaced).

    Raises:
        ValueError: ``path`` exists and is no zip, naming it.
    """
    path, name = Path(path), SUBMISSION_NAMES[task]
    kept: list[tuple[str, bytes]] = []
    why = _not_a_zip(path)
    if why:
        raise ValueError(why)
    if path.exists():
        with zipfile.ZipFile(path) as old:
            kept = [(info.filename, old.read(info)) for info in old.infolist() if info.filename != name]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as new:
        for other, data in kept:
            new.writestr(other, data)
        # json_utf8: a lone surrogate in a result is written as its escape, so the scorer's UTF-8 read takes the file
        new.writestr(name, json_utf8(json.dumps(content, ensure_ascii=False, indent=4)))
    path.parent.mkdir(parents=True, exist_ok=True)  # as --out is made: a new folder is no reason to lose the run
    return write_atomically(path, buffer.getvalue())
