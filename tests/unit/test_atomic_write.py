"""judge.plumbing.atomic_write: one way to replace a file whole, and every writer that goes through it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from judge.plumbing.atomic_write import write_atomically


def _write_journal(path: Path, text: str) -> None:
    from judge.plumbing.journal import rewrite_journal

    rewrite_journal(path, [json.loads(line) for line in text.splitlines()])


def _write_private(path: Path, text: str) -> None:
    from judge.plumbing.provenance import write_private_text

    write_private_text(path, text)


def _write_npy(path: Path, text: str) -> None:
    from train.synthetic.dedup import _save_npy_atomically

    _save_npy_atomically(path, np.frombuffer(text.encode("utf-8"), dtype=np.uint8))


def _write_mera_json(path: Path, text: str) -> None:
    from eval.mera.progress import write_json

    write_json(path, json.loads(text))


#: Every writer routed through write_atomically, with the permission bits its file gets under umask 0o022.
WRITERS = {
    "rewrite_journal": (_write_journal, 0o644),
    "write_private_text": (_write_private, 0o600),
    "dedup embedding cache": (_write_npy, 0o600),
    "mera metrics.json": (_write_mera_json, 0o644),
}


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_bytes_and_a_writing_function_replace_the_file_and_leave_no_temporary(tmp_path):
    """The content lands whole under the target's name; nothing else is left in the folder."""
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    assert write_atomically(path, b"new bytes") == path
    assert path.read_bytes() == b"new bytes"
    write_atomically(path, lambda handle: (handle.write(b"one "), handle.write(b"two")))
    assert path.read_bytes() == b"one two" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_what_the_writing_function_raises_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")

    def half(handle):
        handle.write(b"half of it")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, half)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_the_temporary_is_fsynced_before_it_is_renamed_and_the_folder_after(tmp_path, monkeypatch):
    """fsync, rename, fsync of the folder: the name never points at bytes still only in the page cache, and the new
    name is on disk before the caller goes on (fsync(2): a file's fsync does not make the entry naming it durable;
    a run_key.json renamed into place and the fsynced journal rows after it could come back from a crash of the
    machine as rows without their key)."""
    import judge.plumbing.atomic_write as atomic_write

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(atomic_write.os, "fsync", lambda fd: (events.append(("fsync", os.fstat(fd).st_ino)),
                                                              real_fsync(fd))[1])
    monkeypatch.setattr(atomic_write.os, "replace", lambda a, b: (events.append(("replace", os.stat(a).st_ino)),
                                                                  real_replace(a, b))[1])
    path = tmp_path / "out.bin"
    write_atomically(path, b"x")
    inode = path.stat().st_ino
    assert events == [("fsync", inode), ("replace", inode), ("fsync", tmp_path.stat().st_ino)]


def test_a_file_system_that_cannot_fsync_a_folder_is_passed_over_and_an_io_error_is_raised(tmp_path, monkeypatch):
    """EINVAL (a file system with no fsync of folders) is no failure of the write; EIO is: the name may not be on
    disk, and the caller must not go on as if it were."""
    import errno

    real_fsync = os.fsync

    def refuse_folders(code):
        def fsync(fd):
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                raise OSError(code, os.strerror(code))
            return real_fsync(fd)
        return fsync

    monkeypatch.setattr(os, "fsync", refuse_folders(errno.EINVAL))
    write_atomically(tmp_path / "out.bin", b"x")
    assert (tmp_path / "out.bin").read_bytes() == b"x"
    monkeypatch.setattr(os, "fsync", refuse_folders(errno.EIO))
    with pytest.raises(OSError, match=os.strerror(errno.EIO)):
        write_atomically(tmp_path / "out.bin", b"y")
    # The folder is fsynced after the rename: the file already holds the new bytes, and no temporary is left
    assert (tmp_path / "out.bin").read_bytes() == b"y" and sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_replace_folder_fsyncs_the_parent_once_the_new_folder_holds_the_name(tmp_path, monkeypatch):
    """A training export put in place is on disk under its name before the caller records it done, whether the
    folders were swapped, renamed aside, or the export is new."""
    import judge.plumbing.atomic_write as atomic_write
    from judge.plumbing.atomic_write import replace_folder, staging_dir

    export = tmp_path / "export"
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real_fsync(fd))[1])
    for swap in (None, True, False):  # new; swapped in one step; renamed aside
        if swap is not None:
            monkeypatch.setattr(atomic_write, "_exchange", atomic_write._exchange if swap else lambda a, b: False)
        staging = staging_dir(export)
        staging.mkdir()
        (staging / "weights").write_text(str(swap))
        synced.clear()
        replace_folder(staging, export)
        assert (export / "weights").read_text() == str(swap)
        assert tmp_path.stat().st_ino in synced, swap


def test_a_replaced_file_keeps_its_own_permission_bits(tmp_path):
    """No mode given: the bits open(path, "w") leaves, an existing file's own (a journal its user made owner-only
    stays so after a rewrite), the umask's for a new file; a mode given: exactly it."""
    old = os.umask(0o022)
    try:
        path = tmp_path / "journal.jsonl"
        path.write_bytes(b"old")
        path.chmod(0o600)
        write_atomically(path, b"new")
        kept = path.stat().st_mode & 0o777
        path.chmod(0o640)
        write_atomically(path, b"newer", mode=0o600)
        given = path.stat().st_mode & 0o777
    finally:
        os.umask(old)
    assert (kept, given, path.read_bytes()) == (0o600, 0o600, b"newer")


def test_a_symlinked_file_is_replaced_where_it_points_and_stays_a_link(tmp_path):
    """A file kept on another disk behind a link: the link stays, its target holds the new bytes, and no temporary
    is left beside either."""
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "predictions.jsonl"
    target.write_bytes(b"old")
    link = tmp_path / "predictions.jsonl"
    link.symlink_to(target)
    assert write_atomically(link, b"new") == link
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["elsewhere", "predictions.jsonl", "predictions.jsonl"]


def test_two_writers_of_one_file_never_share_a_temporary(tmp_path):
    """A write started while another to the same file is open gets a name of its own: both finish, and the one
    renamed last is what the file holds."""
    path = tmp_path / "out.bin"

    def outer(handle):
        handle.write(b"outer")
        write_atomically(path, b"inner")
        assert path.read_bytes() == b"inner"

    write_atomically(path, outer)
    assert path.read_bytes() == b"outer" and [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_the_mode_is_the_umasks_by_default_and_exactly_the_given_one_otherwise(tmp_path):
    """No mode: what open(path, "w") gives (0o666 less the umask); a mode: exactly it, whatever the umask, from the
    temporary's creation (a reader of the folder never sees the content under wider bits)."""
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "plain", b"x")
        write_atomically(tmp_path / "private", b"x", mode=0o600)
        os.umask(0o277)  # would leave 0o400: the given mode is set, not masked
        write_atomically(tmp_path / "strict", b"x", mode=0o600)
    finally:
        os.umask(old)
    bits = {name: (tmp_path / name).stat().st_mode & 0o777 for name in ("plain", "private", "strict")}
    assert bits == {"plain": 0o640, "private": 0o600, "strict": 0o600}


def test_a_private_file_is_owner_only_from_its_first_byte(tmp_path):
    """The temporary holding a secret is 0o600 before anything is written into it."""
    seen = []

    def write(handle):
        seen.append(os.fstat(handle.fileno()).st_mode & 0o777)
        handle.write(b"secret")

    old = os.umask(0)
    try:
        write_atomically(tmp_path / "key", write, mode=0o600)
    finally:
        os.umask(old)
    assert seen == [0o600]


# ------------------------------------------------------------------------------------------- the writers routed here


@pytest.mark.parametrize("name", WRITERS)
def test_every_writer_keeps_its_content_and_mode(tmp_path, umask_022, name):
    """Each caller's file reads back as before, with the mode it always had (a journal and metrics.json the umask's;
    run.json, summary.json and the embedding cache owner-only)."""
    write, mode = WRITERS[name]
    path = tmp_path / "target"
    text = '{"a": "ё"}\n{"b": 2}' if name == "rewrite_journal" else '{"a": "ё"}'
    write(path, text)
    assert path.stat().st_mode & 0o777 == mode
    assert [p.name for p in tmp_path.iterdir()] == ["target"]
    if name == "rewrite_journal":
        assert path.read_text(encoding="utf-8") == '{"a": "ё"}\n{"b": 2}\n'
    elif name == "write_private_text":
        assert path.read_text(encoding="utf-8") == '{"a": "ё"}'
    elif name == "dedup embedding cache":
        assert np.load(path).tobytes().decode("utf-8") == '{"a": "ё"}'
    else:
        assert path.read_text(encoding="utf-8") == '{\n  "a": "ё"\n}\n'


@pytest.mark.parametrize("name", WRITERS)
def test_every_writer_fsyncs_the_file_it_renames_into_place(tmp_path, monkeypatch, name):
    """run.json, summary.json and MERA's metrics.json were renamed into place unsynced: after a crash of the machine
    the name could point at an empty file."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real_fsync(fd))[1])
    write, _ = WRITERS[name]
    path = tmp_path / "target"
    write(path, '{"a": 1}')
    assert path.stat().st_ino in synced


@pytest.mark.parametrize("name", WRITERS)
def test_every_writer_leaves_the_old_file_and_no_temporary_when_the_rename_fails(tmp_path, monkeypatch, name):
    """A failed rename (a full or read-only disk, a folder gone) left a stray ``<name>.tmp`` beside the old file."""
    write, _ = WRITERS[name]
    path = tmp_path / "target"
    write(path, '{"a": 1}')
    before = path.read_bytes()

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write(path, '{"a": 2}')
    monkeypatch.undo()
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["target"]


def test_a_journal_rewritten_while_another_rewrite_of_it_is_open_is_not_lost(tmp_path):
    """Two rewrites of one journal shared the fixed ``<name>.tmp``: the inner one took the outer one's file away, and
    the outer one's rename failed. Each has its own temporary now."""
    from judge.plumbing.journal import read_jsonl, rewrite_journal

    path = tmp_path / "j.jsonl"

    def rows():
        yield {"outer": 1}
        rewrite_journal(path, [{"inner": 1}])
        yield {"outer": 2}

    rewrite_journal(path, rows())
    assert read_jsonl(path) == [{"outer": 1}, {"outer": 2}]
    assert [p.name for p in tmp_path.iterdir()] == ["j.jsonl"]


def test_a_journal_rewrite_whose_rows_fail_leaves_the_old_journal_and_no_temporary(tmp_path):
    """A row that cannot be written (here, not JSON) stops the rewrite: the journal is as it was."""
    from judge.plumbing.journal import rewrite_journal

    path = tmp_path / "j.jsonl"
    path.write_text('{"a": 1}\n', encoding="utf-8")
    with pytest.raises(TypeError):
        rewrite_journal(path, [{"a": 2}, {"a": object()}])
    assert path.read_text(encoding="utf-8") == '{"a": 1}\n' and [p.name for p in tmp_path.iterdir()] == ["j.jsonl"]


# ------------------------------------------------------------------------- result files later steps read back whole


def _train_rows(folder: Path, value: int) -> Path:
    from train.build_data import write_rows

    return write_rows([{"a": value}, {"b": value}], folder / "train.jsonl")


def _records(folder: Path, value: int) -> Path:
    from judge.record_sources import write_jsonl
    from judge.records import records_from_rows

    from judge import sample_data_path

    row = json.loads(sample_data_path().read_text(encoding="utf-8").split("\n", 1)[0]) | {"answer": str(value)}
    return write_jsonl(records_from_rows([row]), folder / "records.jsonl")


def _manifest(folder: Path, value: int) -> Path:
    from judge.checkpoints import write_manifest

    return write_manifest(folder, "seq2seq", step=value)


@pytest.mark.parametrize("write", [_train_rows, _records, _manifest], ids=["build-data rows", "convert's records",
                                                                            "export manifest"])
def test_a_result_file_a_later_step_reads_is_replaced_whole(tmp_path, monkeypatch, write):
    """Training rows, converted records and a checkpoint's manifest were written in place: a kill or a full disk
    mid-write left a cut file that training, scoring or judge-serve then read as whole. Now a refused rename raises
    and the earlier file stays as it was, with no temporary beside it."""
    path = write(tmp_path, 1)
    before = path.read_bytes()

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write(tmp_path, 2)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert write(tmp_path, 2).read_bytes() != before  # and a write that succeeds replaces it


def test_training_rows_that_fail_mid_stream_leave_the_earlier_file(tmp_path):
    """A row json cannot write (here a set) half-way through leaves the earlier file whole, never one cut after the
    rows before it."""
    from train.build_data import write_rows

    path = _train_rows(tmp_path, 1)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_rows([{"a": 2}, {"b": {3}}], path)
    assert path.read_bytes() == before


# ------------------------------------------------------------------------------------------- files replaced together


def test_files_written_together_are_each_fsynced_before_the_first_rename_then_renamed_in_order(tmp_path, monkeypatch):
    """Every file of the set is whole on disk before any name points at a new one, and the renames follow the order
    given (the file a reader trusts most last)."""
    from judge.plumbing.atomic_write import write_atomically_together

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda src, dst: (events.append(Path(dst).name), real_replace(src, dst))[1])
    written = write_atomically_together([(tmp_path / "b", b"second"), (tmp_path / "a", lambda h: h.write(b"first"))])
    assert written == [tmp_path / "b", tmp_path / "a"]
    assert events == ["fsync", "fsync", "b", "a", "fsync"]  # the last: their folder, once
    assert ((tmp_path / "a").read_bytes(), (tmp_path / "b").read_bytes()) == (b"first", b"second")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_set_whose_last_file_fails_to_write_replaces_none_and_leaves_no_temporary(tmp_path):
    from judge.plumbing.atomic_write import write_atomically_together

    (tmp_path / "a").write_bytes(b"earlier a")
    (tmp_path / "b").write_bytes(b"earlier b")

    def fails(handle):
        handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_atomically_together([(tmp_path / "a", b"new a"), (tmp_path / "b", fails)])
    assert ((tmp_path / "a").read_bytes(), (tmp_path / "b").read_bytes()) == (b"earlier a", b"earlier b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_folder_fsync_failing_after_the_rename_is_told_apart_from_a_write_that_failed(tmp_path, monkeypatch):
    """The two outcomes a caller reports differently: the folder's fsync failing after the rename raises
    ``NotSynced`` (an OSError, its errno and words kept) with the file already replaced; a rename that fails raises
    the rename's own OSError, not ``NotSynced``, with the file as it was."""
    import errno

    from judge.plumbing import atomic_write

    target = tmp_path / "rows.jsonl"
    target.write_bytes(b"earlier\n")

    def sync_fails(folder):
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patched:
        patched.setattr(atomic_write, "sync_folder", sync_fails)
        with pytest.raises(atomic_write.NotSynced) as unsynced:
            atomic_write.write_atomically(target, b"new\n")
    assert (unsynced.value.errno, unsynced.value.strerror) == (errno.EIO, "Input/output error")
    assert isinstance(unsynced.value, OSError) and target.read_bytes() == b"new\n"

    def rename_fails(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "replace", rename_fails)
    with pytest.raises(OSError) as failed:
        atomic_write.write_atomically(target, b"newer\n")
    assert not isinstance(failed.value, atomic_write.NotSynced) and failed.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"new\n"


def test_sync_tree_raises_for_a_folder_it_cannot_list_or_that_is_missing(tmp_path, monkeypatch):
    """A subfolder os.walk cannot list would be skipped, its files never fsynced, with nothing said: sync_tree
    raises the listing's OSError instead, and a missing folder is an error, not a tree with nothing to sync."""
    import errno

    from judge.plumbing.atomic_write import sync_tree

    staging = tmp_path / "staging"
    (staging / "tokenizer").mkdir(parents=True)
    (staging / "tokenizer" / "tokenizer.json").write_text("{}")
    (staging / "config.json").write_text("{}")
    scandir = os.scandir

    def failing(path=".", *args):
        if os.fspath(path) == os.fspath(staging / "tokenizer"):
            raise OSError(errno.EIO, "Input/output error", os.fspath(path))
        return scandir(path, *args)

    monkeypatch.setattr(os, "scandir", failing)
    with pytest.raises(OSError) as failed:
        sync_tree(staging)
    assert failed.value.errno == errno.EIO
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError):
        sync_tree(tmp_path / "missing")
