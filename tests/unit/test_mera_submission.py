"""``judge-eval mera --submission``: the files written for MERA's site, derived by hand on a few items, and read back
by the site's reader's rules (MERA-Evaluation/MERA ``modules/scoring/src/worker.py`` ``prepare``,
``src/tasks/task.py`` ``load_and_validate``/``evaluate``, ``src/tasks/ruhumaneval.py`` and ``src/tasks/rutie.py``),
re-implemented here only as far as reading the layout."""

from __future__ import annotations

import json
import types
import zipfile
from pathlib import Path

import pytest

from eval.mera.submission import (humaneval_submission, rutie_submission, submission_refusal,
                                  write_submission)

STORED = 1000


def _task(task_id, expected):
    return types.SimpleNamespace(task_id=task_id, expected=tuple(expected))


def _item(dialog_id, question_id):
    return types.SimpleNamespace(dialog_id=dialog_id, question_id=question_id)


TASKS = [_task("0", ["1", "2"]), _task("7", ["[3]", "x" * 1200])]
EXECUTIONS = {
    "0": [
        {"status": "passed", "outputs": ["1", "2"], "output_chars": [1, 1]},
        {"status": "wrong_answer", "outputs": ["1", "3"], "output_chars": [1, 1]},
        {"status": "runtime", "outputs": ["1", None], "output_chars": [1, None]},
    ],
    "7": [
        {"status": "not_generated", "detail": "request refused"},
        # passed with a result longer than what is stored: written whole, as the expected output it equalled
        {"status": "passed", "outputs": ["[3]", "x" * STORED], "output_chars": [3, 1200]},
        # failed on a result cut for storage: its cut text is not what was compared, so it is written as null
        {"status": "wrong_answer", "outputs": ["[3]", "x" * STORED], "output_chars": [3, 1201]},
    ],
}


def test_humaneval_file_derived_by_hand():
    content, summary = humaneval_submission(TASKS, EXECUTIONS, STORED)
    assert content == {"data": {"test": [
        {"outputs": [[["1", "2"], ["1", "3"], ["1", None]]], "meta": {"id": 0}},
        {"outputs": [[[None, None], ["[3]", "x" * 1200], ["[3]", None]]], "meta": {"id": 7}},
    ]}}  # fmt: skip
    assert summary == {"file": "ruHumanEval.json", "n_items": 2, "n_samples": 6, "n_samples_not_passed": 4,
                       "by_status": {"not_generated": 1, "passed": 2, "runtime": 1, "wrong_answer": 2}}


def test_humaneval_task_without_executions_is_an_error_naming_it():
    with pytest.raises(ValueError, match="task 7"):
        humaneval_submission(TASKS, {"0": EXECUTIONS["0"]}, STORED)


DIALOGUES = {0: [_item(0, 0), _item(0, 1), _item(0, 2)], 1: [_item(1, 0)]}
RECORDS = [
    {"dialog_id": 0, "question_id": 0, "answer": "2"},
    {"dialog_id": 0, "question_id": 1, "answer": None, "reason": "unparsed"},
    {"dialog_id": 1, "question_id": 0, "answer": "1"},
]  # question 2 of dialogue 0 has no record


def test_rutie_file_derived_by_hand():
    content, summary = rutie_submission(DIALOGUES, RECORDS)
    assert content == {"data": {"test": [
        {"outputs": "2", "meta": {"dialog_id": 0, "question_id": 0}},
        {"outputs": "-1", "meta": {"dialog_id": 0, "question_id": 1}},
        {"outputs": "-1", "meta": {"dialog_id": 0, "question_id": 2}},
        {"outputs": "1", "meta": {"dialog_id": 1, "question_id": 0}},
    ]}}  # fmt: skip
    assert summary["n_items"] == 4 and summary["n_unanswered"] == 2
    assert summary["unanswered_reasons"] == {"no answer recorded": 1, "unparsed": 1}


# -- the site's reader, as far as the layout ------------------------------------------------------------------


def _site_read(zip_path: Path, task_class: str, doc_to_id) -> dict:
    """The docs of ``task_class``'s file keyed by the scorer's id: the file is found by its name's stem, must be
    .json, hold data.test, and each doc outputs and meta with its id."""
    with zipfile.ZipFile(zip_path) as z:
        names = {Path(n).stem: n for n in z.namelist()}
        name = names[task_class]
        assert Path(name).suffix == ".json"
        dataset = json.loads(z.read(name).decode("utf-8").strip())
    examples = {}
    for example in dataset["data"]["test"]:
        example["outputs"], example["meta"]  # noqa: B018 -- the scorer's no_outputs/no_meta checks
        examples[doc_to_id(example)] = example
    return examples


def _site_check_solution(y_true, y_pred):
    if len(y_pred) == 0 or len(y_true) != len(y_pred) or not isinstance(y_true[0], type(y_pred[0])):
        return 0
    return int(all(t == p for t, p in zip(y_true, y_pred)))


def test_round_trip_through_the_sites_reader(tmp_path):
    path = tmp_path / "submission.zip"
    write_submission(path, "rutie", rutie_submission(DIALOGUES, RECORDS)[0])
    write_submission(path, "ruhumaneval", humaneval_submission(TASKS, EXECUTIONS, STORED)[0])  # kept beside it

    humaneval = _site_read(path, "ruHumanEval", lambda d: d["meta"]["id"])
    gold = {0: ["1", "2"], 7: ["[3]", "x" * 1200]}
    assert set(humaneval) == set(gold)  # every gold id present: no no_id error
    for doc_id, expected in gold.items():
        outputs = humaneval[doc_id]["outputs"]
        assert isinstance(outputs, type(expected))  # no doc_output_type_error
        verdicts = [_site_check_solution(expected, sample) for sample in outputs[0]]
        assert verdicts == [s["status"] == "passed" for s in EXECUTIONS[str(doc_id)]]

    rutie = _site_read(path, "ruTiE", lambda d: f"dialog_id:{d['meta']['dialog_id']};"
                                                 f"question_id:{d['meta']['question_id']}")
    assert set(rutie) == {"dialog_id:0;question_id:0", "dialog_id:0;question_id:1", "dialog_id:0;question_id:2",
                          "dialog_id:1;question_id:0"}
    assert all(isinstance(d["outputs"], str) for d in rutie.values())
    assert [rutie[k]["outputs"] for k in sorted(rutie)] == ["2", "-1", "-1", "1"]


def test_rewriting_a_task_replaces_its_file_only(tmp_path):
    path = tmp_path / "submission.zip"
    write_submission(path, "rutie", {"data": {"test": []}})
    write_submission(path, "ruhumaneval", {"data": {"test": []}})
    write_submission(path, "rutie", rutie_submission(DIALOGUES, RECORDS)[0])
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["ruHumanEval.json", "ruTiE.json"]
        assert len(json.loads(z.read("ruTiE.json"))["data"]["test"]) == 4


def test_a_path_that_is_no_zip_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "notes.zip"
    path.write_text("not a zip")
    with pytest.raises(ValueError, match="not a zip"):
        write_submission(path, "rutie", {"data": {"test": []}})
    assert path.read_text() == "not a zip"


def test_a_lone_surrogate_result_stays_readable_utf8(tmp_path):
    path = tmp_path / "s.zip"
    write_submission(path, "ruhumaneval", {"data": {"test": [{"outputs": [[["\ud800"]]], "meta": {"id": 0}}]}})
    with zipfile.ZipFile(path) as z:
        doc = json.loads(z.read("ruHumanEval.json").decode("utf-8"))["data"]["test"][0]
    assert doc["outputs"] == [[["\ud800"]]]


def _mera_hub(tmp_path, monkeypatch, files: dict[str, Path]) -> str:
    """``MERA-evaluation/MERA`` in an offline Hugging Face cache holding ``files`` (path in the repository: the file
    copied there); returns the hub id to give ``--data``."""
    import huggingface_hub.constants  # noqa: F401 - imported now, so its constants never freeze this test's cache

    from eval.mera.released import MERA_DATASET
    from tests.unit.test_mera_released import dataset_cache

    root = tmp_path / "mera-files"
    for name, source in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(source.read_bytes())
    dataset_cache(tmp_path / "hub", MERA_DATASET, root)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return MERA_DATASET


def _resolved(**kw):
    base = {"path": Path("/cache/snapshots/c/data/ruhumaneval/test.jsonl"), "note": "n", "comparable_with_mera": True,
            "hub_repo": "MERA-evaluation/MERA", "in_repo": "data/ruhumaneval/test.jsonl"}
    return types.SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("change, task, said", [
    ({}, "ruhumaneval", None),
    ({"hub_repo": "mera-evaluation/mera"}, "ruhumaneval", None),  # the hub's ids are read without case
    ({"hub_repo": ""}, "ruhumaneval", "repository and split"),  # a local file or folder named test.jsonl
    ({"hub_repo": "", "in_repo": ""}, "ruhumaneval", "repository and split"),
    ({"hub_repo": "ai-forever/MERA", "in_repo": "ruhumaneval/test.jsonl"}, "ruhumaneval", "ai-forever/MERA"),
    ({"hub_repo": "ai-forever/MERA", "in_repo": "data/ruhumaneval/test.jsonl"}, "ruhumaneval", "ai-forever/MERA"),
    ({"in_repo": "data/ruhumaneval/train.jsonl"}, "ruhumaneval", "not its test split"),
    ({"in_repo": "data/rutie/train.jsonl"}, "rutie", "not its test split"),
    ({"in_repo": "data/ruhumaneval/test.jsonl"}, "rutie", "not its test split"),
])
def test_only_the_test_split_of_mera_evaluation_mera_is_written(change, task, said):
    """Decided by the repository and split the rows were read from, never by a file's name: a file named
    ``test.jsonl`` from elsewhere may be another split's rows under the same ids."""
    from eval.mera.submission import submission_data_refusal

    why = submission_data_refusal(_resolved(**change), [], task)
    assert why is None if said is None else said in why


def _config(**kw):
    base = {"task": "ruhumaneval", "self_check": False, "limit": None, "n": 10, "data": "MERA-evaluation/MERA",
            "submission": "new.zip"}
    return types.SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("change, word", [({"n": 5}, "--n 10"), ({"limit": 3}, "--limit"),
                                          ({"self_check": True}, "--self-check"),
                                          ({"data": "humaneval-en"}, "humaneval-en"),
                                          ({"task": "rutie", "data": "sample"}, "sample"),
                                          ({"submission": "upload.json"}, "must name a .zip")])
def test_runs_the_site_would_misread_are_refused(change, word):
    assert word in submission_refusal(_config(**change))


def test_an_existing_file_that_is_no_zip_is_refused_before_the_run_as_at_writing(tmp_path):
    path = tmp_path / "notes.zip"
    path.write_text("not a zip")
    said = submission_refusal(_config(submission=str(path)))
    with pytest.raises(ValueError) as raised:
        write_submission(path, "rutie", {"data": {"test": []}})
    assert said == str(raised.value) and "exists and is not a zip" in said


def test_a_full_run_is_accepted():
    assert submission_refusal(_config()) is None
    assert submission_refusal(_config(task="rutie")) is None


# -- through judge-eval mera rutie ----------------------------------------------------------------------------


def _respond(path, body):
    """Answers "1" to every question but one, whose reply holds no choice."""
    asked = body["prompt"].rsplit("\n\n", 1)[-1]  # the question asked, after the dialogue so far
    text = "не знаю" if "А у муравья?" in asked else "1"
    return 200, {"id": "c", "object": "text_completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                 "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}


def _rutie(endpoint, data, out, submission):
    from eval.mera import cli

    return cli.main(["rutie", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(data),
                     "--out", str(out), "--max-retries", "0", "--max-model-len", "4096",
                     "--submission", str(submission)])  # fmt: skip


def test_rutie_run_writes_every_question_and_counts_the_unanswered(tmp_path, capsys, monkeypatch):
    from tests.support.mera_rutie import SAMPLE
    from tests.support.scripted_endpoint import ScriptedEndpoint

    data = SAMPLE  # as MERA-evaluation/MERA's ruTiE test split, were it to carry answers
    hub = _mera_hub(tmp_path, monkeypatch, {"data/rutie/test.jsonl": SAMPLE})
    with ScriptedEndpoint(_respond) as endpoint:
        assert _rutie(endpoint, hub, tmp_path / "run", tmp_path / "upload.zip") == 0
    docs = _site_read(tmp_path / "upload.zip", "ruTiE",
                      lambda d: (d["meta"]["dialog_id"], d["meta"]["question_id"]))
    rows = [json.loads(line)["meta"] for line in data.read_text(encoding="utf-8").splitlines()]
    assert set(docs) == {(m["dialog_id"], m["question_id"]) for m in rows}  # 21: every question
    assert [k for k, d in docs.items() if d["outputs"] == "-1"] == [(0, 1)]
    assert all(d["outputs"] == "1" for k, d in docs.items() if k != (0, 1))
    said = json.loads((tmp_path / "run" / "metrics.json").read_text())["submission"]
    assert said["n_items"] == 21 and said["n_unanswered"] == 1
    assert "submission" in capsys.readouterr().out


@pytest.mark.parametrize("where", ["train", "local test.jsonl"])
def test_rutie_run_on_rows_not_of_the_test_split_is_refused_before_the_endpoint_is_asked(tmp_path, capsys,
                                                                                        monkeypatch, where):
    """MERA-evaluation/MERA's ruTiE rows with answers are its train split; a local file named test.jsonl is of a
    repository and split nothing here establishes: either would be read against the test split's gold."""
    from tests.support.mera_rutie import SAMPLE
    from tests.support.scripted_endpoint import ScriptedEndpoint

    def never(path, body):
        raise AssertionError("asked")

    if where == "train":
        data, said = _mera_hub(tmp_path, monkeypatch, {"data/rutie/train.jsonl": SAMPLE}), "not its test split"
    else:
        data, said = tmp_path / "test.jsonl", "repository and split"
        data.write_bytes(SAMPLE.read_bytes())
    with ScriptedEndpoint(never) as endpoint:
        assert _rutie(endpoint, data, tmp_path / "run", tmp_path / "upload.zip") == 2
    err = capsys.readouterr().err
    assert said in err
    # the remedy named for a local file (--data MERA-evaluation/MERA) leads to the train split: the refusal says no
    # ruTiE upload can be written from the released data, whichever way the user goes
    assert "ruTiE test split carries no answers" in err and "no ruTiE upload can be written" in err
    assert not (tmp_path / "upload.zip").exists() and endpoint.requests == []


def test_a_submission_path_in_a_new_folder_is_made(tmp_path):
    path = write_submission(tmp_path / "new" / "folder" / "upload.zip", "rutie", {"data": {"test": []}})
    assert path == tmp_path / "new" / "folder" / "upload.zip" and zipfile.is_zipfile(path)


def test_an_upload_that_cannot_be_written_after_the_run_leaves_metrics_saying_why(tmp_path, capsys, monkeypatch):
    """Written after the whole run: an I/O error there (a read-only folder, a full disk) must not lose metrics.json;
    the run exits 1 (an I/O task error) and metrics.json's submission says why."""
    from tests.support.mera_rutie import SAMPLE
    from tests.support.scripted_endpoint import ScriptedEndpoint

    import eval.mera.submission as submission

    def unwritable(path, data):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(submission, "write_atomically", unwritable)
    hub = _mera_hub(tmp_path, monkeypatch, {"data/rutie/test.jsonl": SAMPLE})
    with ScriptedEndpoint(_respond) as endpoint:
        assert _rutie(endpoint, hub, tmp_path / "run", tmp_path / "upload.zip") == 1
    said = json.loads((tmp_path / "run" / "metrics.json").read_text())["submission"]
    assert "No space left on device" in said["refused"] and said["write_failed"] is True
    assert "--submission" in capsys.readouterr().err and not (tmp_path / "upload.zip").exists()


# -- through judge-eval mera ruhumaneval ----------------------------------------------------------------------


def _run_each_program_once(monkeypatch):
    """The ten samples of a task in these runs are one program: the sandbox runs each distinct job once, and its
    result stands for every copy. What these tests check is how the run's results reach the upload, not the sandbox
    (tests/unit/test_mera_sandbox.py); the run still passes every sample's result on in its place."""
    from eval.mera import sandbox

    run_many = sandbox.Sandbox.run_many

    def once(self, jobs, **kw):
        distinct = {}
        for job in jobs:
            distinct.setdefault(repr(job), job)
        ran = dict(zip(distinct, run_many(self, list(distinct.values()), **kw), strict=True))
        return [ran[repr(job)] for job in jobs]

    monkeypatch.setattr(sandbox.Sandbox, "run_many", once)


def test_ruhumaneval_run_writes_every_task_and_sample_as_the_site_reads_them(tmp_path, sandbox_user, capsys,
                                                                              monkeypatch):
    """Ten samples a task: the first task's all the canonical solution, the second's refused (no text: never run),
    the rest a wrong body; the site's reading of the file gives each sample the run's own verdict. The sandbox runs
    each task's one program once (``_run_each_program_once``)."""
    from eval.mera import cli
    from eval.mera.humaneval import load_tasks
    from tests.support.mera_humaneval import SAMPLE
    from tests.support.scripted_endpoint import ScriptedEndpoint

    data = SAMPLE
    hub = _mera_hub(tmp_path, monkeypatch, {"data/ruhumaneval/test.jsonl": SAMPLE})
    tasks = load_tasks(data)
    _run_each_program_once(monkeypatch)

    def respond(path, body):
        task = next(t for t in tasks if t.prompt == body["messages"][0]["content"])
        if task is tasks[1]:
            content = [{"type": "refusal", "refusal": "Не могу."}]
        elif task is tasks[0]:
            content = task.function + task.canonical_solution
        else:
            content = f"```python\n{task.function}    return 'wrong'\n```"
        return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": i, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"} for i in range(10)],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip

    out, upload = tmp_path / "run", tmp_path / "upload.zip"
    with ScriptedEndpoint(respond) as endpoint:
        assert cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", hub,
                         "--out", str(out), "--mode", "chat", "--extraction", "lenient", "--max-retries", "0",
                         "--submission", str(upload)]) == 0  # fmt: skip
    docs = _site_read(upload, "ruHumanEval", lambda d: d["meta"]["id"])
    gold = {json.loads(line)["meta"]["id"]: json.loads(line)["outputs"]
            for line in data.read_text(encoding="utf-8").splitlines()}
    assert set(docs) == set(gold)  # the rows' own ids, as they are typed there
    executions = [json.loads(line) for line in (out / "executions.jsonl").read_text().splitlines()]
    ids = {task.task_id: next(i for i in gold if str(i) == task.task_id) for task in tasks}
    for task in tasks:
        samples = docs[ids[task.task_id]]["outputs"][0]
        assert len(samples) == 10
        ran = [e["status"] == "passed" for e in executions if e["task_id"] == task.task_id]
        assert [_site_check_solution(gold[ids[task.task_id]], s) for s in samples] == ran
    assert all(_site_check_solution(gold[ids[tasks[0].task_id]], s) for s in docs[ids[tasks[0].task_id]]["outputs"][0])
    assert docs[ids[tasks[1].task_id]]["outputs"][0] == [[None] * len(tasks[1].expected)] * 10
    said = json.loads((out / "metrics.json").read_text())["submission"]
    assert said["n_items"] == len(tasks) and said["by_status"]["not_generated"] == 10
    assert said["n_samples_not_passed"] == 10 * (len(tasks) - 1)


def test_a_sample_that_never_ran_in_the_sandbox_is_not_written_as_the_models_failure():
    """A sandbox error is the tool's failure, kept out of pass@k's n: written, the site would score it 0 against the
    model, so the file is refused naming why."""
    runs = [{"status": "sandbox_error", "outputs": [None, None], "output_chars": [None, None]}] + \
        [{"status": "passed", "outputs": ["1", "2"], "output_chars": [1, 1]}] * 9
    with pytest.raises(ValueError, match="1 samples never ran in the sandbox"):
        humaneval_submission([_task("3", ["1", "2"])], {"3": runs}, STORED)


def test_a_run_with_a_sandbox_error_leaves_the_upload_unwritten_and_says_why(tmp_path, sandbox_user, monkeypatch):
    """One sample of the run is made a sandbox error after the sandbox ran it (each task's one program once,
    ``_run_each_program_once``): the exit says so (3), and the zip is not written; metrics.json's ``submission``
    names why."""
    from eval.mera import cli, sandbox
    from tests.support.mera_humaneval import SAMPLE
    from tests.support.scripted_endpoint import ScriptedEndpoint

    hub = _mera_hub(tmp_path, monkeypatch, {"data/ruhumaneval/test.jsonl": SAMPLE})
    _run_each_program_once(monkeypatch)
    run_many = sandbox.Sandbox.run_many

    def one_fault(self, jobs, **kw):
        results = list(run_many(self, jobs, **kw))
        return [sandbox.ExecResult(status=sandbox.SANDBOX_ERROR, detail="bwrap: forced")] + results[1:]

    monkeypatch.setattr(sandbox.Sandbox, "run_many", one_fault)

    def respond(path, body):
        return 200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": i, "message": {"role": "assistant", "content": "return 1"},
                                  "finish_reason": "stop"} for i in range(10)],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip

    out, upload = tmp_path / "run", tmp_path / "upload.zip"
    with ScriptedEndpoint(respond) as endpoint:
        assert cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", hub,
                         "--out", str(out), "--mode", "chat", "--max-retries", "0",
                         "--submission", str(upload)]) == cli.EXIT_SANDBOX_ERRORS  # fmt: skip
    assert not upload.exists()
    said = json.loads((out / "metrics.json").read_text())["submission"]
    assert "1 samples never ran in the sandbox" in said["refused"]


@pytest.mark.parametrize("extra, said", [(["--limit", "2"], "--limit"), (["--n", "5", "--k", "1"], "--n 10"),
                                         (["--submission", "upload.json"], "must name a .zip")])
def test_the_command_line_refuses_a_submission_the_site_would_misread(extra, said, capsys):
    from eval.mera import cli

    argv = ["ruhumaneval", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--out", "run",
            "--submission", "upload.zip", *extra]
    with pytest.raises(SystemExit) as stopped:
        cli.checked_config(cli.build_parser(), argv)
    assert stopped.value.code == 2 and said in capsys.readouterr().err
