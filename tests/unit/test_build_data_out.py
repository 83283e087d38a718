"""`judge-train build-data --out`: the rows never replace the records they are built from."""

from __future__ import annotations

import judge
from train import build_data


def _records(tmp_path, name="small.jsonl"):
    """The first three records of the bundled sample, as a file of its own."""
    path = tmp_path / name
    lines = judge.sample_data_path().read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_an_out_that_is_the_data_file_is_refused_and_the_records_kept(tmp_path, capsys):
    """`--data small.jsonl --out small.jsonl` wrote the training rows over the labelled records: now one line naming
    both flags, exit 2, and the file as it was."""
    data = _records(tmp_path)
    before = data.read_bytes()
    assert build_data.main(["--data", str(data), "--out", str(data), "--zero-shot", "allow"]) == 2
    err = capsys.readouterr().err
    assert err == (f"judge-train build-data: error: --out {data}: the same file as --data {data}; the rows would "
                   "replace the records they are built from: give --out another file\n")
    assert data.read_bytes() == before


def test_the_same_file_under_another_name_is_refused_too(tmp_path, capsys):
    """Another spelling of the path (a `..` in it) or a symbolic link to it is still the records' file."""
    data = _records(tmp_path)
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.jsonl"
    link.symlink_to(data)
    before = data.read_bytes()
    for out in (tmp_path / "sub" / ".." / "small.jsonl", link):
        assert build_data.main(["--data", str(data), "--out", str(out), "--zero-shot", "allow"]) == 2
        assert "the same file as --data" in capsys.readouterr().err
    assert data.read_bytes() == before


def test_sample_data_is_not_written_over_either(tmp_path, monkeypatch, capsys):
    """`--data sample` reads the bundled file: an --out naming that file is the same file."""
    data = _records(tmp_path, "sample.jsonl")
    monkeypatch.setattr(judge.sample_data, "sample_data_path", lambda: data)  # what judge.sample_data.data_source reads
    before = data.read_bytes()
    assert build_data.main(["--data", "sample", "--out", str(data), "--zero-shot", "allow"]) == 2
    assert f"--out {data}: the same file as --data sample" in capsys.readouterr().err
    assert data.read_bytes() == before


def test_another_out_beside_the_data_is_written(tmp_path):
    """A different file next to the records is the ordinary use: written, the records untouched."""
    data = _records(tmp_path)
    before = data.read_bytes()
    out = tmp_path / "rows.jsonl"
    assert build_data.main(["--data", str(data), "--out", str(out), "--zero-shot", "allow"]) == 0
    assert out.is_file() and out.read_bytes() != before and data.read_bytes() == before


def _shard_folder(tmp_path):
    """The first three records of the bundled sample as a hub-layout folder of one Parquet shard."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in _records(tmp_path).read_text(encoding="utf-8").splitlines()]
    folder = tmp_path / "shards"
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "train-00000-of-00001.parquet")
    return folder


def test_an_out_inside_the_data_folder_is_refused_and_its_shards_kept(tmp_path, capsys):
    """`--data shards/ --out shards/data/train-00000-of-00001.parquet` wrote the rows (JSONL) over the shard the
    records were read from. Any --out inside the data's folder is refused before any row is built (one rule, not
    the loader's layouts): one line naming both flags, exit 2, the shard as it was."""
    folder = _shard_folder(tmp_path)
    shard = folder / "data" / "train-00000-of-00001.parquet"
    before = shard.read_bytes()
    for out in (shard, folder / "rows.jsonl", tmp_path / "elsewhere" / ".." / "shards" / "data" / "rows.jsonl"):
        (tmp_path / "elsewhere").mkdir(exist_ok=True)
        assert build_data.main(["--data", str(folder), "--out", str(out), "--zero-shot", "allow"]) == 2
        assert capsys.readouterr().err == (
            f"judge-train build-data: error: --out {out}: inside the --data folder {folder}, which holds the records "
            "the rows are built from (a shard written over is lost): give --out a file outside it\n")
    assert shard.read_bytes() == before and not (folder / "rows.jsonl").exists()
    # the same folder's rows written elsewhere: the ordinary use
    assert build_data.main(["--data", str(folder), "--out", str(tmp_path / "rows.jsonl"), "--zero-shot", "allow"]) == 0
    assert (tmp_path / "rows.jsonl").read_text(encoding="utf-8").count("\n") >= 1 and shard.read_bytes() == before


def test_a_failed_write_of_a_new_out_file_says_not_written(tmp_path, monkeypatch, capsys):
    """No --out file was there before: a failed rename leaves none, and the message says "not written", never that a
    file was not replaced."""
    import os

    data = _records(tmp_path)
    out = tmp_path / "new" / "rows.jsonl"
    out.parent.mkdir()

    def fails(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fails)
    assert build_data.main(["--data", str(data), "--out", str(out), "--zero-shot", "allow"]) == 2
    err = capsys.readouterr().err
    assert not out.exists() and f"{out} not written" in err and "replaced" not in err


def test_a_rename_failing_between_the_two_says_only_what_is_true(tmp_path, monkeypatch, capsys):
    """The dropped file is renamed first: a failure at the rows' rename leaves the earlier rows and this run's dropped
    file, and the message says the rows were not replaced without claiming the dropped file was kept."""
    import os

    data = _records(tmp_path)
    out = tmp_path / "rows.jsonl"
    out.write_text("earlier\n", encoding="utf-8")
    build_data.dropped_path(out).write_text("earlier dropped\n", encoding="utf-8")
    replaced, calls = os.replace, []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return replaced(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert build_data.main(["--data", str(data), "--out", str(out), "--zero-shot", "allow"]) == 2
    err = capsys.readouterr().err
    assert len(calls) == 2 and out.read_text(encoding="utf-8") == "earlier\n"
    assert build_data.dropped_path(out).read_text(encoding="utf-8") != "earlier dropped\n"
    assert f"{out} not replaced" in err and "neither" not in err and str(build_data.dropped_path(out)) not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # no file written aside is left


def test_a_folder_fsync_failing_after_both_renames_says_the_rows_were_replaced(tmp_path, monkeypatch, capsys):
    """Both files are renamed into place before their folder is fsynced: an I/O error from that fsync comes after
    the rows file was replaced, and the message says so (not yet synced to disk), never that it was not replaced."""
    import errno

    from judge.plumbing import atomic_write

    def sync_fails(folder):
        raise OSError(errno.EIO, "Input/output error")

    data = _records(tmp_path)
    out = tmp_path / "rows.jsonl"
    out.write_text("earlier\n", encoding="utf-8")
    monkeypatch.setattr(atomic_write, "sync_folder", sync_fails)
    assert build_data.main(["--data", str(data), "--out", str(out), "--zero-shot", "allow"]) == 2
    err = capsys.readouterr().err
    assert out.read_text(encoding="utf-8") != "earlier\n" and build_data.dropped_path(out).is_file()
    assert "not replaced" not in err
    assert f"{out} replaced, but not yet synced to disk (Input/output error)" in err


def test_a_folder_fsync_failing_after_writing_a_new_rows_file_says_written_not_replaced(tmp_path, monkeypatch,
                                                                                        capsys):
    """--out named no file before: the fsync failing after both renames leaves a file that was created, not
    replaced, and the message says written, not yet synced to disk."""
    import errno

    from judge.plumbing import atomic_write

    def sync_fails(folder):
        raise OSError(errno.EIO, "Input/output error")

    data = _records(tmp_path)
    out = tmp_path / "rows.jsonl"
    monkeypatch.setattr(atomic_write, "sync_folder", sync_fails)
    assert build_data.main(["--data", str(data), "--out", str(out), "--zero-shot", "allow"]) == 2
    err = capsys.readouterr().err
    assert out.is_file() and build_data.dropped_path(out).is_file()
    assert f"{out} written, but not yet synced to disk (Input/output error)" in err
    assert "replaced" not in err
