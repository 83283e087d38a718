"""The first hour's loading mistakes, each a value: `judge-train build-data`, `judge-train data split` and the record
sources refuse a missing, empty or mistyped input (or a flag out of bounds) with one line naming the flag, file or
field and exit 2, never a traceback and never a run that keeps nothing while saying it finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from judge.plumbing.config_files import ConfigError, read_config_file, read_json_object
from judge.record_sources import load_record_columns, load_records, source_rows
from train.build_data import main as build_data_main

PROG = "judge-train build-data: error: "
RUBRIC = "0: Ответ неверный.\n\n1: Ответ частично верный.\n\n2: Ответ полностью верный."


def _record(rid: str, feedback: str) -> dict:
    return judge.JudgeRecord(id=rid, instruction=f"Сколько будет два плюс два? ({rid})", answer="Четыре.",
                             criteria_name="Грамотность", rubrics=RUBRIC, expert_scores=(2.0,),
                             expert_feedback=(feedback,), criteria_score=2.0, task_type="Editing").to_dict()


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def _one_error_line(capsys) -> tuple[str, str]:
    """(stdout, the one stderr line), checking stderr is that one line with the command's prefix."""
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert err.startswith(PROG) and err.count("\n") == 1, err
    return out, err


# --- judge-train build-data ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["missing", "csv", "folder"])
def test_build_data_refuses_a_data_source_it_cannot_read_in_one_line(tmp_path, capsys, kind):
    """A --data that is not there, a file type the loader does not read, a folder with no shards: exit 2 with one
    line naming it (was a FileNotFoundError or ValueError traceback, exit 1)."""
    if kind == "missing":
        source, said = tmp_path / "nope.jsonl", "no such file or folder"
    elif kind == "csv":
        source, said = tmp_path / "x.csv", "unknown file type '.csv'"
        source.write_text("id,instruction\n1,a\n", encoding="utf-8")
    else:
        source, said = tmp_path / "empty-folder", "neither Parquet shards"
        source.mkdir()
    assert build_data_main(["--data", str(source)]) == 2
    _, err = _one_error_line(capsys)
    assert str(source) in err and said in err


def test_a_folder_of_jsonl_files_is_told_the_file_to_give(tmp_path, capsys):
    """`--data data/` for data/train.jsonl said only that the folder held no Parquet shards, not the file to give."""
    folder = tmp_path / "data"
    folder.mkdir()
    _jsonl(folder / "train.jsonl", [_record("a", "Верно.")])
    (folder / "meta.json").write_text("{}", encoding="utf-8")
    said = (f"{folder}: a folder with neither Parquet shards (data/*.parquet, *.parquet) nor a datasets.save_to_disk "
            f"layout; it holds train.jsonl, meta.json: give the file itself ({folder / 'train.jsonl'})")
    with pytest.raises(FileNotFoundError) as raised:
        load_records(folder)
    assert str(raised.value) == said
    with pytest.raises(FileNotFoundError) as raised:
        list(source_rows(folder))
    assert str(raised.value) == said
    capsys.readouterr()
    assert build_data_main(["--data", str(folder)]) == 2
    _, err = _one_error_line(capsys)
    assert err.endswith(f"give the file itself ({folder / 'train.jsonl'})\n"), err


@pytest.mark.parametrize(("name", "said"), [
    ("sampel", "sampel: no such file or folder; did you mean `sample` (the bundled sample data)?"),
    ("Samples", "Samples: no such file or folder; did you mean `sample` (the bundled sample data)?"),
    ("simple.jsonl", "simple.jsonl: no such file or folder"),
    ("data/sample.jsonl", "data/sample.jsonl: no such file or folder"),
    # the name itself, given to a reader that does not take it (judge-eval rank's --data): not asked whether it meant
    # what it gave
    ("sample", "sample: no such file or folder"),
])  # fmt: skip
def test_a_misspelt_sample_is_told_the_name(tmp_path, monkeypatch, name, said):
    """`--data sampel` said only "no such file or folder", not that `sample` is the bundled data's name."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as raised:
        load_records(name)
    assert str(raised.value) == said


def test_build_data_refuses_an_out_folder_before_reading_the_data(tmp_path, capsys):
    """--out a folder: refused at once (was an IsADirectoryError traceback after the whole build)."""
    assert build_data_main(["--data", "sample", "--zero-shot", "drop", "--out", str(tmp_path)]) == 2
    out, err = _one_error_line(capsys)
    assert f"--out {tmp_path}: a folder" in err and out == ""


def test_build_data_names_an_out_it_cannot_write(tmp_path, capsys, monkeypatch):
    """An --out under a file (no folder can be made there) is named, exit 2, before the data is read: it was
    "cannot write (File exists)" after every row was built, naming mkdir's errno rather than the file."""
    import train.build_data

    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setattr(train.build_data, "load_training_records", lambda *a, **k: pytest.fail("the data was read"))
    for out_file in (blocker / "rows.jsonl", blocker / "sub" / "rows.jsonl"):
        assert build_data_main(["--data", "sample", "--zero-shot", "drop", "--out", str(out_file)]) == 2
        out, err = _one_error_line(capsys)
        assert out == "" and err == f"{PROG}--out: {blocker} is a file, not a folder\n"


def test_build_data_names_an_out_folder_that_cannot_be_made_before_reading_the_data(capsys, monkeypatch):
    """A place no folder can be made in (sysfs refuses mkdir even to root): named with the reason, nothing built."""
    import train.build_data

    monkeypatch.setattr(train.build_data, "load_training_records", lambda *a, **k: pytest.fail("the data was read"))
    out_file = "/sys/pollux-judge-rows/rows.jsonl"
    assert build_data_main(["--data", "sample", "--zero-shot", "drop", "--out", out_file]) == 2
    out, err = _one_error_line(capsys)
    assert out == "" and err.startswith(f"{PROG}/sys/pollux-judge-rows: the folder of --out {out_file} cannot be "
                                        "made or written there (")


def test_build_data_says_a_bad_row_on_stderr_with_its_prefix(tmp_path, capsys):
    """A handled error (a row that is not an object) goes to stderr as `judge-train build-data: error: ...`, as
    `judge-train run` says it (was `error: ...` on stdout)."""
    source = tmp_path / "rows.jsonl"
    source.write_text('"just a string"\n', encoding="utf-8")
    assert build_data_main(["--data", str(source)]) == 2
    out, err = _one_error_line(capsys)
    assert out == "" and f"{source}: line 1" in err


def test_build_data_refuses_a_source_with_no_records(tmp_path, capsys):
    """An empty file builds no row: exit 2 as `judge-train run` refuses it (was "0 rows kept", exit 0), the report
    printed first, nothing written."""
    source = tmp_path / "empty.jsonl"
    source.write_text("", encoding="utf-8")
    out_file = tmp_path / "rows.jsonl"
    assert build_data_main(["--data", str(source), "--out", str(out_file)]) == 2
    out, err = _one_error_line(capsys)
    assert "0 rows kept" in out and f"--data {source} holds no records" in err and "nothing written" in err
    assert not out_file.exists()


def test_build_data_names_the_filters_that_dropped_every_row(tmp_path, capsys):
    """Records whose every verdict a filter drops: exit 2 naming each filter, its count and its flag (was exit 0 with
    an empty rows file)."""
    source = _jsonl(tmp_path / "english.jsonl", [_record("a", "The answer is correct and complete."),
                                                 _record("b", "Fine, the arithmetic is right here.")])
    assert build_data_main(["--data", str(source), "--zero-shot", "drop"]) == 2
    out, err = _one_error_line(capsys)
    assert "0 rows kept" in out
    assert f"no training rows left in --data {source}" in err and "every one of the 2 verdicts of 2 records was dropped: not_russian 2 (--min-russian-share)" in err


@pytest.mark.parametrize("share", ["5", "nan", "-0.1", "inf"])
def test_build_data_refuses_a_russian_share_that_is_not_a_share(capsys, share):
    """--min-russian-share 5 kept no row, nan switched the filter off without a word: both refused, exit 2."""
    assert build_data_main(["--data", "sample", "--zero-shot", "drop", "--min-russian-share", share]) == 2
    out, err = _one_error_line(capsys)
    assert out == "" and "--min-russian-share: must be a share between 0 and 1" in err


def test_build_data_still_builds_with_a_share_at_its_bounds(tmp_path, capsys):
    """0 and 1 are shares: the bounds are included."""
    for share in ("0", "1"):
        assert build_data_main(["--data", "sample", "--zero-shot", "drop", "--min-russian-share", share]) == 0
        assert "rows kept" in capsys.readouterr().out


# --- record sources: a missing path is not a hub name -------------------------------------------------------------


@pytest.fixture
def no_hub(monkeypatch):
    """Fails the test if the hub loader is called: the cases below must be answered locally."""
    import datasets

    def called(*args, **kwargs):
        raise AssertionError(f"datasets.load_dataset was called with {args} {kwargs}")

    monkeypatch.setattr(datasets, "load_dataset", called)


@pytest.mark.parametrize("name", ["data/POLLUX", "runs/POLLUX", "./POLLUX", "../x/POLLUX", "~/POLLUX", "a/b/POLLUX"])
def test_a_missing_local_path_is_not_asked_of_the_hub(tmp_path, monkeypatch, no_hub, name):
    """A path under data/ or runs/ (the folders the docs download to, absent on a fresh clone), one with more than
    one slash, or one starting like a path, is a missing path at once (asking the hub for `data/POLLUX` cost ~24 s of connection warnings), and
    the hint names the released dataset's hub id, not the path, as the repository to download."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    for load in (load_records, load_record_columns, lambda source: list(source_rows(source))):
        with pytest.raises(FileNotFoundError) as info:
            load(name)
        message = str(info.value)
        assert message.startswith(f"{name}: no such file or folder")
        assert f"hf download ai-forever/POLLUX --repo-type dataset --local-dir {name}" in message


def test_a_missing_path_that_names_no_released_dataset_gets_no_download_hint(tmp_path, monkeypatch, no_hub):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(FileNotFoundError) as info:
        load_records("runs/my-data")
    assert str(info.value) == "runs/my-data: no such file or folder"


def test_a_source_that_is_there_but_no_file_is_named_for_what_it_is(tmp_path, no_hub):
    """A pipe (``--data <(zcat data.jsonl.gz)``), a device and a link to nothing are refused naming what they are:
    each was "no such file or folder", a path that exists sending its user to look for a typo. The pipe is not
    opened (that would wait for a writer)."""
    import os

    pipe, link = tmp_path / "stream.jsonl", tmp_path / "link.jsonl"
    os.mkfifo(pipe)
    link.symlink_to(tmp_path / "gone" / "data.jsonl")
    said = {str(pipe): f"{pipe}: a pipe, not a regular file or folder",
            "/dev/null": "/dev/null: a character device, not a regular file or folder",
            str(link): f"{link}: a link to {tmp_path / 'gone' / 'data.jsonl'}, which is not there"}
    for load in (load_records, load_record_columns, lambda source: list(source_rows(source))):
        for source, start in said.items():
            with pytest.raises(FileNotFoundError) as info:
                load(source)
            assert str(info.value).startswith(start), str(info.value)


def test_a_local_folder_named_like_the_owner_does_not_keep_a_hub_id_from_the_hub(tmp_path, monkeypatch):
    """One dataset downloaded hub-style (``--local-dir ai-forever/POLLUX``) leaves a folder ``ai-forever/``: its
    sibling ``ai-forever/POLLUX-instructions`` is still a hub id, asked of the hub, not a missing path."""
    import datasets

    asked = []

    def offline(name, split=None):
        asked.append(name)
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub")

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ai-forever" / "POLLUX").mkdir(parents=True)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(FileNotFoundError) as info:
        load_records("ai-forever/POLLUX-instructions")
    assert asked == ["ai-forever/POLLUX-instructions"]
    assert "not a local file or folder, and datasets.load_dataset" in str(info.value)


def test_a_hub_name_that_fails_suggests_the_released_id_when_it_names_a_released_dataset(tmp_path, monkeypatch):
    """`someone/POLLUX` unreachable: the hint to download names ai-forever/POLLUX, not the name given."""
    import datasets

    asked = []

    def offline(name, split=None):
        asked.append((name, split))
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(FileNotFoundError) as info:
        load_records("someone/pollux")
    assert asked == [("someone/pollux", None)]  # the name given is asked; only the hint names the release
    message = str(info.value)
    assert "the released dataset is ai-forever/POLLUX" in message
    assert "hf download ai-forever/POLLUX --repo-type dataset" in message


# --- record sources: a split asked of a single file ----------------------------------------------------------------


def test_a_split_asked_of_a_single_file_is_refused_naming_the_file(tmp_path):
    """A file holds one split: `--split nope` on it was ignored (exit 0, the whole file read as `nope`)."""
    source = _jsonl(tmp_path / "items.jsonl", [_record("a", "Ответ верный и полный.")])
    for load in (load_records, load_record_columns, lambda s, split: list(source_rows(s, split=split))):
        with pytest.raises(ValueError, match=f"{source}: a single file, which holds no split 'nope'"):
            load(source, split="nope")
    assert [r.id for r in load_records(source)] == ["a"]  # no split asked: the whole file, as before


def test_a_files_own_split_is_accepted(tmp_path):
    """The split a file's name gives (the synthetic split stage's train.jsonl, a hub shard's name) is its own."""
    train = _jsonl(tmp_path / "train.jsonl", [_record("a", "Ответ верный и полный.")])
    assert [r.id for r in load_records(train, split="train")] == ["a"]
    shard = tmp_path / "test-00000-of-00001.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([_record("a", "Ответ верный и полный.")]), shard)
    assert [r.id for r in load_records(shard, split="test")] == ["a"]
    with pytest.raises(ValueError, match="holds no split 'train'"):
        load_records(shard, split="train")
    # a shard pushed with its fingerprint, and the hub's Parquet conversion (a numbered file in its split's folder)
    for name in ("train-00000-of-00001-5f3c9a0b1d2e.parquet", "train/0000.parquet"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pylist([_record("b", "Ответ верный и полный.")]), tmp_path / name)
        assert [r.id for r in load_records(tmp_path / name, split="train")] == ["b"], name
        with pytest.raises(ValueError, match="holds no split 'test'"):
            load_records(tmp_path / name, split="test")


def test_judge_eval_experts_refuses_a_split_of_the_sample(tmp_path, capsys):
    """`judge-eval experts --data sample --split nope` exited 0; now 2, naming the file."""
    from eval.cli import main as eval_main

    assert eval_main(["experts", "--data", "sample", "--split", "nope", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("judge-eval experts: error: ") and "sample.jsonl: a single file" in err


def test_rationales_without_an_expert_scores_column_name_the_missing_column(tmp_path):
    """A Parquet file (or JSONL rows) with expert_feedback but no expert_scores said "field 'expert_feedback': has 1
    texts for 0 expert scores", blaming the column that is there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [_record(f"r{i}", f"почему {i}") for i in range(3)]
    for row in rows:
        del row["expert_scores"]
    rows[0]["expert_feedback"] = []  # no rationale in the first row: the second is the first to name
    parquet = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    jsonl = _jsonl(tmp_path / "data.jsonl", rows)
    for source, place, noun in ((parquet, "row index 1", "column"), (jsonl, "line 2", "key in any row")):
        with pytest.raises(judge.RecordError) as caught:
            load_records(source)
        assert str(caught.value) == (f"{source}: {place}: field 'expert_scores': no such {noun}, while "
                                     "expert_feedback gives 1 text here, one per expert score")


def test_rationale_lists_that_are_all_empty_need_no_scores(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [_record(f"r{i}", "x") for i in range(2)]
    for row in rows:
        del row["expert_scores"], row["criteria_score"]
        row["expert_feedback"] = []
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "data.parquet")
    assert [r.expert_scores for r in load_records(tmp_path / "data.parquet")] == [(), ()]


# --- config files --------------------------------------------------------------------------------------------------


def test_a_json_object_file_that_is_not_utf8_says_so(tmp_path):
    """Bytes that are not UTF-8 were reported as "a number too long to read"."""
    path = tmp_path / "config.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError) as info:
        read_json_object(path)
    assert str(info.value) == f"{path}: not UTF-8 text (byte 0xff at byte 7)"


def test_a_json_object_file_holding_a_lone_surrogate_names_its_key(tmp_path):
    """A JSON \\ud800 escape with no pair decodes to a string no UTF-8 writer takes: a run.json's model so held was
    written again (a merge's run.json, score's report) and failed there with "'utf-8' codec can't encode", naming no
    file. Refused where it is read, naming the file and the dotted key (a list by its index, a key itself too;
    upper-case hex too); a whole pair and an escaped backslash before "ud800" pass."""
    path = tmp_path / "run.json"
    for text, where, code in (('{"config": {"judges": ["a", "b\\uDC00"]}}', "config.judges.1", "DC00"),
                              ('{"m": {"\\ud800k": 1}}', "m.\ud800k", "D800")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError) as info:
            read_json_object(path)
        assert str(info.value) == (f"{path}: {where} holds a lone surrogate (U+{code}: a JSON \\u escape with no "
                                   "pair), which is no Unicode text; mend the file or write it again")
    path.write_text('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}', encoding="utf-8")
    assert read_json_object(path) == {"a": "\U0001F600", "b": "\\ud800"}


def test_a_config_that_is_a_folder_says_so(tmp_path):
    """--config a folder was "not found"."""
    with pytest.raises(ConfigError, match="is a folder, not a YAML file"):
        read_config_file(tmp_path)
    with pytest.raises(ConfigError, match="not found"):
        read_config_file(tmp_path / "missing.yaml")


# --- judge-train data split ----------------------------------------------------------------------------------------


def test_data_split_refuses_an_input_with_no_records(tmp_path, capsys):
    """An empty input split into empty train and validation files, exit 0 ("kept 0"); now exit 2, named."""
    from train.synthetic.cli import main as data_main

    source = tmp_path / "empty.jsonl"
    source.write_text("", encoding="utf-8")
    assert data_main(["split", "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"judge-train data split: error: --input: {source}: no rows (an empty file" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "train.jsonl").exists()


def test_data_split_of_an_annotate_stage_that_kept_nothing_says_so_and_goes_on(tmp_path, capsys):
    """The annotate stage's folder that kept no item (a teacher whose every verdict failed) is a pipeline's outcome,
    not a user's mistake: split says so and writes the empty files, which training refuses with its own message."""
    from train.synthetic.cli import main as data_main

    stage = tmp_path / "annotate"
    stage.mkdir()
    (stage / "annotate.jsonl").write_text("", encoding="utf-8")
    assert data_main(["split", "--input", str(stage), "--output", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert "kept no item" in captured.out + captured.err
    assert (tmp_path / "out" / "train.jsonl").read_text(encoding="utf-8") == ""
