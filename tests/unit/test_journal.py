"""judge.plumbing.journal: the one JSONL journal of eval predictions, MERA progress and synthetic-data jobs."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from judge.plumbing.journal import JournalError, JournalWriter, open_journal, read_journal, read_jsonl, rewrite_journal
from tests.support.deep_json import nested_arrays


@pytest.mark.parametrize(
    ("data", "rows", "torn"),
    [
        (b"", [], b""),
        (b'{"a": 1}\n{"a": 2}\n', [{"a": 1}, {"a": 2}], b""),
        (b'{"a": 1}\n\n{"a": 2}\n', [{"a": 1}, {"a": 2}], b""),  # blank lines are skipped
        (b'{"a": 1}\n{"a": 2, "cu', [{"a": 1}], b'{"a": 2, "cu'),
        (b'{"a": 1}\n{"a": 2}', [{"a": 1}, {"a": 2}], b""),  # a whole row without its newline is a row
        (b'{"a": 1}\n   ', [{"a": 1}], b""),  # only spaces after the last newline: nothing to drop
        (b'{"a": 1', [], b'{"a": 1'),  # the only line, cut
        (b'{"a": "\xd0', [], b'{"a": "\xd0'),  # cut inside a UTF-8 character
    ],
)
def test_read_journal_drops_only_a_last_line_without_its_newline(tmp_path, data, rows, torn):
    """The torn-tail rule: bytes after the last newline are dropped and reported; the file is left as it is."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    contents = read_journal(path)
    assert (contents.rows, contents.torn_tail, contents.torn) == (rows, torn, bool(torn))
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("data", "line", "why"),
    [
        (b'{"a": 1}\nnot json\n{"a": 2}\n', 2, "not a JSON line"),
        (b'{"a": 1}\n{"a": 2}\n{"a": \n', 3, "not a JSON line"),  # a complete last line is held to the rule
        (b'[1, 2]\n', 1, "a list, not an object"),
        # whole JSON but no object, without its newline: a cut of a row (which opens with "{") never parses as one,
        # so it is no torn tail to drop: a predictions file written as one JSON array read as zero rows
        (b'{"a": 1}\n[1, 2]', 2, "a list, not an object"),
        (b'[{"a": 1}, {"a": 2}]', 1, "a list, not an object"),
        (b'{"a": 1}\n"text"', 2, "a string, not an object"),
        (b'{"a": 1}\nnull', 2, "null, not an object"),
        (b'{"a": 1}\n\xff\xfe\n', 2, "not a JSON line"),
    ],
)
def test_read_journal_refuses_any_other_bad_line_naming_file_and_line(tmp_path, data, line, why):
    """A bad line that is not the torn tail is an error naming file:line, never skipped."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    with pytest.raises(JournalError, match=rf"j\.jsonl:{line}: {why}"):
        read_journal(path)


def test_a_whole_last_row_without_its_newline_is_a_row_to_reader_resume_and_writer_alike(tmp_path, caplog):
    """The readers dropped a whole last row lacking its newline (a journal written by hand or by another tool) as
    torn, and open_journal cut it from the file, while JournalWriter.append kept it: a resume asked that job again
    and the file then held it twice. Now every reader reads it, open_journal ends it with its newline, nothing is
    said (nothing is dropped), and an append after it lands on a line of its own."""
    from judge.plumbing.journal import iter_journal

    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"key": "a"}\n{"key": "b"}')
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        assert [row["key"] for row in iter_journal(path, quiet=True)] == ["a", "b"]
        assert read_journal(path).rows == [{"key": "a"}, {"key": "b"}] and not read_journal(path).torn
        assert path.read_bytes() == b'{"key": "a"}\n{"key": "b"}'  # reading changes nothing
        assert open_journal(path).rows == [{"key": "a"}, {"key": "b"}]
    assert path.read_bytes() == b'{"key": "a"}\n{"key": "b"}\n' and caplog.text == ""
    JournalWriter(path).append({"key": "c"})
    assert [row["key"] for row in read_jsonl(path)] == ["a", "b", "c"]


def test_a_resumed_stage_does_not_redo_a_whole_last_row_without_its_newline(tmp_path):
    """The synthetic-data journal (open_journal, then JournalWriter) counts that row's job as done: it is not asked
    again, and the journal holds each job once."""
    from train.synthetic.journal import Journal, run_jobs

    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"key": "a", "ok": true}\n{"key": "b", "ok": true}')
    asked = []
    journal = Journal(path)
    run_jobs([(key, key) for key in "abc"], lambda payload: (asked.append(payload), {"ok": True})[1], journal, 1, "t")
    assert asked == ["c"]
    assert [row["key"] for row in read_jsonl(path)] == ["a", "b", "c"]


def test_writer_and_readers_agree_on_every_kind_of_last_line(tmp_path, caplog):
    """One rule for the tail, in the reader and the writer: what a reader reads stays in the file after an append,
    and what it drops (and says) is cut (and said). A tail too deeply nested for json.loads is taken for a cut write
    by both: the writer raised a RecursionError from append."""
    deep = b'{"x": ' + nested_arrays(5_000).encode() + b"}"
    for tail in (b'{"b": 2}', b'{"b": 2, "cu', b"  ", deep):
        path = tmp_path / "j.jsonl"
        path.write_bytes(b'{"a": 1}\n' + tail)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
            read = read_journal(path).rows
            said_by_reader = "cut by a kill" in caplog.text
            caplog.clear()
            writer = JournalWriter(path)
            writer.append({"c": 3})
            said_by_writer = "cut by a kill" in caplog.text
        assert read_jsonl(path) == [*read, {"c": 3}], tail
        assert said_by_reader == said_by_writer == (writer.torn_tails == 1) == (len(read) == 1 and bool(tail.strip()))


def test_an_append_after_a_whole_last_line_that_is_no_object_keeps_it_for_the_readers_to_refuse(tmp_path, caplog):
    """A last line that is whole JSON but no object (no torn row: a cut of one opens with "{" and never parses) is
    neither cut by the writer nor dropped by the readers: the file's own content is not thrown away, and the next
    read refuses the line by name."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n[1, 2]')
    writer = JournalWriter(path)
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        writer.append({"a": 3})
    assert path.read_bytes() == b'{"a": 1}\n[1, 2]\n{"a": 3}\n'
    assert writer.torn_tails == 0 and "cut" not in caplog.text
    with pytest.raises(JournalError, match=r"j\.jsonl:2: a list, not an object"):
        read_journal(path)


def test_torn_tail_is_said(tmp_path, caplog):
    """Dropping a torn line is logged with the file's name, never silent."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a"')
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        assert read_jsonl(path) == [{"a": 1}]
    assert "j.jsonl" in caplog.text and "cut by a kill" in caplog.text


def test_open_journal_cuts_the_torn_tail_so_appends_start_clean(tmp_path):
    """After open_journal, an append lands on its own line and the journal reads back whole."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2, "cu')
    assert open_journal(path).rows == [{"a": 1}]
    JournalWriter(path).append({"a": 3})
    assert path.read_bytes() == b'{"a": 1}\n{"a": 3}\n'


@pytest.mark.parametrize(("data", "kept"), [
    (b'{"a": 1}\n{"a": 2, "b": "cut', b'{"a": 1}\n'),
    (b'{"a": 1', b""),  # the only line, cut
    (b'{"a": 1}\n' + b"x" * 200_000, b'{"a": 1}\n'),  # a torn line longer than one read back
], ids=["a torn row", "the only line torn", "a long torn row"])  # fmt: skip
def test_an_append_after_a_torn_tail_cuts_it_and_the_journal_reads_back_whole(tmp_path, caplog, data, kept):
    """A writer appending to a journal a kill left torn (eval's pairwise judging and the reward journal append after
    reading with iter_journal, which leaves the file as it is) cuts the torn last line first, says so and counts it:
    the rows it writes start a line of their own, and every complete line stays: a row never joins the torn line,
    which the next read would refuse."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    writer = JournalWriter(path)
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        writer.append({"a": 3})
        writer.append({"a": 4})  # the file ends with its newline now: nothing more is cut
    assert path.read_bytes() == kept + b'{"a": 3}\n{"a": 4}\n'
    assert read_journal(path).rows == [json.loads(line) for line in (kept + b'{"a": 3}\n{"a": 4}\n').splitlines()]
    assert writer.torn_tails == 1 and caplog.text.count("cut its last line") == 1 and "j.jsonl" in caplog.text


def test_an_append_after_a_whole_row_without_its_newline_keeps_that_row(tmp_path, caplog):
    """A last line that is a whole row but lacks its newline (another tool wrote the file so) is no torn row: it is
    ended, not cut, and nothing is said."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}')
    writer = JournalWriter(path)
    with caplog.at_level(logging.WARNING, logger="judge.plumbing.journal"):
        writer.append({"a": 3})
    assert read_journal(path).rows == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert writer.torn_tails == 0 and "cut its last line" not in caplog.text


def test_writer_appends_rows_whole_from_many_threads(tmp_path, monkeypatch):
    """Each append is one write of whole lines and one fsync (and the first, which creates the file, one of its
    folder; the writer itself one of the folder naming the folder it made); concurrent appends never interleave."""
    import judge.plumbing.journal as journal

    synced = []
    real_fsync = journal.os.fsync
    monkeypatch.setattr(journal.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    path = tmp_path / "sub" / "j.jsonl"
    writer = JournalWriter(path)
    assert len(synced) == 1
    synced.clear()
    threads = [threading.Thread(target=writer.append, args=({"t": t, "i": 0}, {"t": t, "i": 1})) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = read_jsonl(path)
    assert len(rows) == 16 and len(synced) == 8 + 1
    for k in range(0, 16, 2):  # the rows of one call are adjacent
        assert rows[k]["t"] == rows[k + 1]["t"] and (rows[k]["i"], rows[k + 1]["i"]) == (0, 1)


def test_rewrite_journal_replaces_atomically(tmp_path):
    """rewrite_journal leaves exactly the given rows and no temporary file."""
    path = tmp_path / "j.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    rewrite_journal(path, [{"a": "ё"}])
    assert path.read_text(encoding="utf-8") == json.dumps({"a": "ё"}, ensure_ascii=False) + "\n"
    assert [p.name for p in tmp_path.iterdir()] == ["j.jsonl"]


@pytest.mark.parametrize("value, said", [(nested_arrays(5_000), "unreadable JSON: nested too deeply"),
                                         ("1" * 5_000, "unreadable JSON: a number too long to read (Exceeds the limit")],
                         ids=["deep", "long-number"])
def test_valid_json_that_json_loads_cannot_hold_is_named_with_its_line(tmp_path, value, said):
    """json.loads raises a bare RecursionError on deep nesting and a ValueError on an integer past 4,300 digits:
    both are journal errors naming ``file:line`` and what is wrong, not a traceback from the reader."""
    path = tmp_path / "j.jsonl"
    path.write_text('{"id": 1}\n' + f'{{"id": 2, "x": {value}}}\n', encoding="utf-8")
    with pytest.raises(JournalError) as caught:
        read_journal(path)
    assert str(caught.value).startswith(f"{path}:2: {said}")


def test_a_lone_surrogate_is_written_as_its_escape_and_reads_back_the_same(tmp_path):
    """An endpoint's JSON "\\ud800" decodes to a lone surrogate, which UTF-8 cannot carry: the writer and the rewrite
    store it as the JSON escape \\ud800 (the line stays UTF-8 JSON, other text is written as it is) and the journal
    reads back the same string."""
    row = {"prediction": "Ответ: \ud800 и \udcff", "n": 1}
    path = tmp_path / "j.jsonl"
    JournalWriter(path).append(row)
    expected = '{"prediction": "Ответ: \\ud800 и \\udcff", "n": 1}\n'.encode("utf-8")
    assert path.read_bytes() == expected
    assert read_jsonl(path) == [row]
    rewrite_journal(tmp_path / "r.jsonl", [row])
    assert (tmp_path / "r.jsonl").read_bytes() == expected


@pytest.mark.parametrize("newline", [b"\n", b""], ids=["line", "last-line-without-newline"])
def test_a_key_given_twice_is_refused_naming_the_line_and_field(tmp_path, newline):
    """json.loads keeps the last of a repeated key silently; Arrow's reader of the same predictions file refuses it,
    so a file read line by line (a stray CR sends score's reader there) gave another score than it would have.
    Refused by name, on any line; a whole last row without its newline too, and an append keeps such a row (whole,
    not a cut write) for the reader to refuse."""
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"id": "a", "score": 1.0}\n{"id": "b", "score": 1.0, "score": 2.0}' + newline)
    with pytest.raises(JournalError, match=r"p\.jsonl:2: field 'score' is given twice in the row"):
        read_journal(path)
    JournalWriter(path).append({"id": "c"})
    assert path.read_bytes().endswith(b'"score": 2.0}\n{"id": "c"}\n')


@pytest.mark.parametrize("newline", [b"\n", b""], ids=["line", "last-line-without-newline"])
def test_a_byte_order_mark_past_the_first_line_is_refused_naming_the_line_by_every_reader(tmp_path, newline):
    """json.loads reads bytes opening with a UTF-8 byte order mark as UTF-8 with a BOM, on any line: a predictions
    file joined from two, the second saved with one, was resumed by `judge-eval run` as it was, while score's Arrow
    reader refused it with "not a predictions file Arrow can read (None)". Only a file's first line may carry one
    (the data loader holds the same rule); past it, every reader names the line."""
    from eval.judging.predictions import read_prediction_table, read_predictions

    row = {"id": "a", "judge": "j", "raw_output": "[RESULT] 1", "feedback": "", "score": 1.0, "parse_ok": True,
           "error": None, "reason": "", "score_source": "verdict"}
    first = b"\xef\xbb\xbf" + json.dumps(row).encode() + b"\n"
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(first + b"\xef\xbb\xbf" + json.dumps({**row, "id": "b"}).encode() + newline)
    said = (f"{path}:2: a UTF-8 byte order mark (EF BB BF) opens the line, as where two files were joined; only a "
            "file's first line may open with one: delete it")
    for read in (read_journal, read_predictions, read_prediction_table):
        with pytest.raises(ValueError) as caught:
            read(path)
        assert str(caught.value) == said, read
    path.write_bytes(first)  # on the first line it is the file's own, which every reader skips
    assert [r["id"] for r in read_predictions(path)] == ["a"] == read_prediction_table(path).column("id").to_pylist()


def test_the_first_rows_in_an_empty_journal_fsync_the_folder_that_names_it(tmp_path, monkeypatch):
    """An empty journal made by another step (a run with no row to write makes an empty predictions file) may not be
    named on disk yet: the append that first puts rows in it fsyncs the folder, as for a journal it creates, and
    journals made in a new folder have that folder named on disk too."""
    import os

    from judge.plumbing.provenance import make_private_dir

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real_fsync(fd))[1])
    (tmp_path / "j.jsonl").touch()
    JournalWriter(tmp_path / "j.jsonl").append({"a": 1})
    assert synced == [(tmp_path / "j.jsonl").stat().st_ino, tmp_path.stat().st_ino]

    synced.clear()
    JournalWriter(tmp_path / "new" / "deeper" / "j.jsonl")
    assert set(synced) == {tmp_path.stat().st_ino, (tmp_path / "new").stat().st_ino}
    synced.clear()
    make_private_dir(tmp_path / "run" / "inner")
    assert set(synced) == {tmp_path.stat().st_ino, (tmp_path / "run").stat().st_ino}
    synced.clear()
    make_private_dir(tmp_path / "run" / "inner")  # there already: nothing made, nothing to sync
    assert synced == []


def test_the_first_append_fsyncs_the_folder_that_now_names_the_journal(tmp_path, monkeypatch):
    """A journal the first append creates is named on disk before the rows it holds are counted as written (fsync(2):
    the file's fsync does not make the entry naming it durable); later appends add no folder fsync."""
    import os

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real_fsync(fd))[1])
    writer = JournalWriter(tmp_path / "j.jsonl")
    writer.append({"a": 1})
    first = list(synced)
    synced.clear()
    writer.append({"a": 2})
    journal = (tmp_path / "j.jsonl").stat().st_ino
    assert first == [journal, tmp_path.stat().st_ino] and synced == [journal]
