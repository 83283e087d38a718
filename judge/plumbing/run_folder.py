"""Run folders: one writer at a time, and a resume only with the settings the folder was started with.

Every job that appends to a run folder and resumes from it (``judge-eval run``, ``judge-eval mera <task>``,
``judge-train data <stage>``, ``judge-train run``, ``judge-eval rank``'s candidate stage in ``candidate/``) does two
things before its first write:

- ``hold_run_folder(out, job)``: an exclusive ``fcntl.flock`` on ``out/run.lock`` for as long as the job runs. A
  second job on the same folder stops at once with an error naming the holder (pid, host, command, start time),
  instead of both appending (every item judged twice). The kernel drops the lock when the holder
  exits, however it exits, so a killed run never leaves a stale lock behind. A job run in-process by a caller that
  holds the folder (``judge-eval rank``'s verdict stage) runs under the caller's hold (``reentrant``). On NFS,
  Linux emulates ``flock`` with byte-range locks (since 2.6.12), which hold across nodes; on file systems without
  locks ``flock`` fails with an error rather than passing silently. Given the job's progress files, a launch refused
  before any work leaves the folder as it found it (no lock, key or folder of its own left behind).
- ``claim_run_folder(out, run_key, progress_files)``: the folder's ``run_key.json`` (the settings that shape the
  results, written when the folder was started) must equal this launch's; a mismatch is refused with the settings
  that differ, unless ``overwrite`` discards the earlier progress.

Both files are owner-only (0600) and hold no secret (``judge.plumbing.provenance.redact``).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import hashlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from judge.plumbing.config_files import ConfigError
from judge.plumbing.json_reading import JSON_REFUSALS, unreadable_json, value_words
from judge.plumbing.provenance import (PROVENANCE_FILE, make_private_dir, read_provenance, redact, redact_argv,
                                       write_private_text)

__all__ = ["LOCK_FILE", "RUN_KEY_FILE", "RunFolderBusy", "RunFolderUnwritable", "ResumeMismatch", "hold_run_folder",
           "claim_run_folder", "refuse_other_job", "refuse_file", "refuse_unwritable", "content_key",
           "run_folder_holder"]

#: The lock every writer of a run folder holds.
LOCK_FILE = "run.lock"
#: The settings a run folder was started with.
RUN_KEY_FILE = "run_key.json"
#: Seconds a writer asks again for a held lock before it stops, every ``BUSY_POLL_S``: ``run_folder_holder`` holds it
#: for the moment of one system call to ask, and a writer starting then would otherwise stop on a folder no one uses.
BUSY_RETRY_S = 0.5
BUSY_POLL_S = 0.02


class RunFolderBusy(RuntimeError):
    """Another process holds the run folder."""

    @classmethod
    def held(cls, folder: str | Path, holder: str) -> "RunFolderBusy":
        """The refusal of ``folder``, held by ``holder`` (``run_folder_holder``'s words), in the one sentence every
        writer says it with."""
        return cls(f"{folder} is in use by {holder}; wait for it to end, stop it, or use another output folder")


class ResumeMismatch(RuntimeError):
    """The output folder holds progress made with different settings."""


class RunFolderUnwritable(ConfigError):
    """A run folder that cannot be made or written (read-only, no permission): a ``ConfigError`` (a bad output
    option, exit 2 for judge-eval run, judge-eval mera and judge-train), which judge-eval mera tells from its flag
    errors to name the run folder."""


@contextlib.contextmanager
def hold_run_folder(out_dir: str | Path, job: str, progress_files: Sequence[str] | None = None, *,
                    reentrant: bool = False) -> Iterator[Path]:
    """Hold ``out_dir`` (created 0700 if missing) for this process until the block ends.

    Args:
        out_dir: the run folder.
        job: the console command, recorded for whoever finds the folder held (``"judge-eval run"``).
        progress_files: the job's progress files (``claim_run_folder``'s). Given, a block that raises before it
            made, changed or removed any of them (a refusal before any work: another command's folder, other
            settings, an API key unset or refused) leaves the folder as it found it: its key and run.json as they
            were, the lock file gone if this made it, and the folder (with the parents made for it) gone if this
            made it and nothing else was written there. Without them, what the block wrote stays.
        reentrant: a job its caller runs in-process, in the folder the caller holds (``judge-eval rank``'s verdict
            stage, ``judge-eval run`` called inside the ranking's hold of its folder): where this thread already
            holds ``out_dir`` by an enclosing ``hold_run_folder``, the block runs under that hold, the lock neither
            taken again (a second ``flock`` of the same file, even by the same process, is refused as another
            holder's) nor let go at its end, and the holder recorded left as the caller's; ``progress_files`` still
            puts the bookkeeping back after a refusal, and never removes the caller's lock file or folder. Held
            by another thread or process (a child forked inside the hold too), or by no one, the lock is taken as
            without it.

    Yields:
        The folder.

    Raises:
        RunFolderBusy: another process holds it (still after ``BUSY_RETRY_S``); the message names its pid, host,
            command and start time.
        ConfigError: ``out_dir`` is a file, or lies under one, or cannot be made or written (read-only, no permission).
    """
    refuse_file(out_dir)
    held = _held_by_this_thread(out_dir) if reentrant else None
    if held is None:
        made = [p for p in (Path(out_dir), *Path(out_dir).parents) if not p.exists()]  # the folder first, its parents
        folder, fd, lock_made = _locked(out_dir)
    else:  # the caller's hold: its lock, its lock file and its folder
        folder, fd, lock_made, made = Path(out_dir), None, False, []
    found = None
    try:
        if progress_files is not None:
            # Unreadable (a run.json without read permission, or a folder by that name): nothing to put back by, and
            # the launch goes on to the refusal of its own that names it.
            with contextlib.suppress(OSError):
                found = _found(folder, progress_files)
        if fd is not None:
            holder = {"job": job, "pid": os.getpid(), "host": socket.gethostname(),
                      "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      "argv": redact_argv(sys.argv)}  # fmt: skip
            if os.environ.get("SLURM_JOB_ID"):  # what `scancel` needs, for whoever finds the folder held
                holder["slurm_job_id"] = os.environ["SLURM_JOB_ID"]
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder, ensure_ascii=False) + "\n").encode(), 0)
            held = _file_id(os.fstat(fd))
            _HELD[held] = _this_thread()
        yield folder
    except (Exception, KeyboardInterrupt):
        if found is not None:
            _leave_as_found(folder, progress_files, found, lock_made, made)
        raise
    finally:
        # Releases the lock. The file stays, but where the folder is left as found: removed while held, a writer
        # that opened it meanwhile finds it gone once it takes the lock, and takes the one there then (_locked).
        if fd is not None:
            _HELD.pop(held, None)
            os.close(fd)


#: The lock files this process holds by ``hold_run_folder`` now, by (device, inode): the (process id, thread id)
#: holding each. Only a block of the thread that holds a folder runs under that hold (``reentrant``): another thread
#: of the process (a test standing in for a second job) is refused, as another process is. A child forked inside a
#: hold inherits this record, and the forking thread's id with it; the process id tells it the hold is its parent's.
_HELD: dict[tuple[int, int], tuple[int, int]] = {}


def _this_thread() -> tuple[int, int]:
    return os.getpid(), threading.get_ident()


def _file_id(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def _held_by_this_thread(out_dir: str | Path) -> tuple[int, int] | None:
    """The (device, inode) of ``out_dir``'s lock file when this thread holds it (``_HELD``), else None: the file
    itself, not its path, so that the same folder named otherwise (relative, through a link) is the same hold."""
    try:
        held = _file_id(os.stat(Path(out_dir) / LOCK_FILE))
    except OSError:
        return None
    return held if _HELD.get(held) == _this_thread() else None


#: What ``hold_run_folder`` puts back as it found it after a refusal: the files a claim and a run's record write.
_BOOKKEEPING = (RUN_KEY_FILE, PROVENANCE_FILE)
#: How often ``_locked`` opens the lock file again when the one it locked was removed meanwhile.
_RELOCK_ATTEMPTS = 5


def _locked(out_dir: str | Path) -> tuple[Path, int, bool]:
    """(the folder, made if missing; an open descriptor of its lock file, locked; whether this call made that file,
    told by the open itself, so that a file another writer made a moment before is never taken for this launch's and
    removed by ``_leave_as_found``). A lock taken on a file removed meanwhile (a holder leaving the folder as it found
    it) holds nothing: the file there now is opened again, a few times at most (a file system whose inode numbers are
    not stable would otherwise never get past it). So is a folder that such a holder removed between its making here
    and the lock file's opening."""
    for attempt in range(_RELOCK_ATTEMPTS):
        try:
            folder = make_private_dir(out_dir)
            path = folder / LOCK_FILE
            try:
                fd, made = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), True
            except FileExistsError:
                fd, made = os.open(path, os.O_RDWR), False
        except FileNotFoundError as err:  # the folder, a parent or the file removed meanwhile: made again
            if attempt == _RELOCK_ATTEMPTS - 1:
                raise RunFolderUnwritable(_unwritable_message(out_dir, err)) from None
            continue
        except OSError as err:  # a read-only or foreign place: one line naming it, not mkdir's traceback
            raise RunFolderUnwritable(_unwritable_message(out_dir, err)) from None
        try:
            if not _lock_within(fd, BUSY_RETRY_S):
                raise RunFolderBusy.held(folder, _describe_holder(path))
            with contextlib.suppress(FileNotFoundError):
                named, held = os.stat(path), os.fstat(fd)
                if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino) or attempt == _RELOCK_ATTEMPTS - 1:
                    return folder, fd, made
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise RunFolderBusy(f"{out_dir}: its lock file was removed each time it was taken; try again")


def _found(folder: Path, progress_files: Sequence[str]) -> tuple[dict[str, Any], dict[str, bytes | None]]:
    """(each progress file's identity, size and time, or None; each of ``_BOOKKEEPING``'s bytes, or None)."""
    def signature(path: Path) -> tuple[int, int, int] | None:
        with contextlib.suppress(FileNotFoundError):
            stat = path.stat()
            return stat.st_ino, stat.st_size, stat.st_mtime_ns
        return None

    def content(path: Path) -> bytes | None:
        with contextlib.suppress(FileNotFoundError):
            return path.read_bytes()
        return None

    return ({name: signature(folder / name) for name in progress_files},
            {name: content(folder / name) for name in _BOOKKEEPING})


def _leave_as_found(folder: Path, progress_files: Sequence[str], found: tuple[dict, dict], lock_made: bool,
                    made: list[Path]) -> None:
    """Unless a progress file differs from ``found`` (work was done: what was written stays), put the bookkeeping
    files back as ``found`` holds them, then, the lock still held, remove the lock file if this launch made it, and
    the folders in ``made`` (the run folder, then the parents made for it), each only while empty. Best effort: the
    refusal itself is what the caller reports."""
    from judge.plumbing.atomic_write import write_atomically

    with contextlib.suppress(OSError):
        if _found(folder, progress_files)[0] != found[0]:
            return
        for name, was in found[1].items():
            path = folder / name
            if was is None:
                path.unlink(missing_ok=True)
            elif not path.is_file() or path.read_bytes() != was:
                write_atomically(path, was, mode=0o600)
        if lock_made:
            (folder / LOCK_FILE).unlink()
        for path in made:
            path.rmdir()  # stops at the first one not empty: something else was written there


def _lock_within(fd: int, seconds: float) -> bool:
    """Take the exclusive lock on ``fd``, asking again for ``seconds`` while another holds it: whether it was taken.
    A holder of a moment (``run_folder_holder`` asking) is waited out; a writer holds it far longer."""
    import fcntl

    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(BUSY_POLL_S)


def run_folder_holder(out_dir: str | Path) -> str | None:
    """Who holds ``out_dir``'s lock now (as ``RunFolderBusy`` names it), or None when no one does: for a command that
    starts a writer later (``judge-train submit``, whose job would stop at the lock after the queue's wait).

    The lock is taken and dropped at once to ask (``flock`` has no query): a writer starting at that instant finds
    the folder held, and waits it out (``BUSY_RETRY_S``). Nothing is created: no lock file, no holder. A lock that
    cannot be asked (no permission to open the file, a file system without locks) counts as not held; the writer
    itself still takes it."""
    import fcntl

    path = Path(out_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR)  # read-write, as the holders open it: on NFS an exclusive lock needs it
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        return _describe_holder(path) if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) else None
    finally:
        os.close(fd)  # drops the lock if it was taken
    return None


def refuse_file(out_dir: str | Path | None, flag: str = "") -> None:
    """Refuse a run folder that is a file, or lies under one: making it would stop in ``mkdir`` with a bare
    FileExistsError (or NotADirectoryError) that the commands' error handling lets through as a traceback.

    Args:
        out_dir: the run folder (nothing is checked when empty).
        flag: the option that named it, said first (judge-eval's ``--out``); jobs whose folder has another option
            name (judge-train's) leave it out.

    Raises:
        ConfigError: naming the file.
    """
    from judge.plumbing.config_files import ConfigError

    if not out_dir:
        return
    for path in (Path(out_dir), *Path(out_dir).parents):
        if path.is_symlink() or path.exists():  # the nearest part that is there decides
            if not path.is_dir():
                raise ConfigError(f"{flag + ': ' if flag else ''}{path} is a file, not a folder")
            return


def refuse_unwritable(out_dir: str | Path | None, flag: str = "", what: str = "run folder") -> None:
    """Refuse, before any work, an output folder that cannot be made or written (read-only, no permission, a place
    such as /proc or /sys): otherwise the command computes everything first and stops at its first write, in a
    traceback or an error naming a temporary file.

    The folder is made and a file created and dropped in it; the folders made for the check are removed again, so that
    a refusal that comes later (a bad input) leaves no empty output folder behind.

    Args:
        out_dir: the folder (nothing is checked when empty).
        flag: the option that named it, said first (judge-eval's ``--out``).
        what: the folder's name in the message.

    Raises:
        ConfigError: ``out_dir`` is a file, or lies under one.
        RunFolderUnwritable: it cannot be made or written; the message names it and the reason.
    """
    import tempfile

    refuse_file(out_dir, flag)
    if not out_dir:
        return
    folder = Path(out_dir)
    for attempt in range(3):  # a parent another job's check removed meanwhile (jobs writing beside each other): again
        missing = [path for path in (folder, *folder.parents) if not (path.is_symlink() or path.exists())]
        made: list[Path] = []
        try:
            for path in reversed(missing):  # the outermost first
                with contextlib.suppress(FileExistsError):  # made meanwhile by another job: not ours to remove
                    path.mkdir()
                    made.append(path)
            tempfile.TemporaryFile(dir=folder).close()
            return
        except OSError as err:
            if not (isinstance(err, FileNotFoundError) and attempt < 2):
                raise RunFolderUnwritable(_unwritable_message(out_dir, err, flag, what)) from None
        finally:
            for path in reversed(made):
                with contextlib.suppress(OSError):  # not empty: another job writes in it now
                    path.rmdir()


def _unwritable_message(out_dir: str | Path, err: OSError, flag: str = "", what: str = "run folder") -> str:
    return (f"{flag + ' ' if flag else ''}{out_dir}: the {what} cannot be made or written there "
            f"({err.strerror or err}); choose another output folder")


def _describe_holder(path: Path) -> str:
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        job = f"; Slurm job {holder['slurm_job_id']}" if holder.get("slurm_job_id") else ""
        return (f"{holder['job']} (pid {holder['pid']} on {holder['host']}, started {holder['started_utc']}: "
                f"{' '.join(map(str, holder['argv']))}{job})")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # the holder has not written itself yet
        return f"another process (it has not recorded itself in {path} yet)"


def claim_run_folder(out_dir: str | Path, run_key: Mapping[str, Any], progress_files: list[str],
                     overwrite: bool = False, adopt_unkeyed: bool = False,
                     out_flag: str = "--out", jobs: tuple[str, ...] = (),
                     earlier_keys: tuple[Mapping[str, Any], ...] = ()) -> bool:  # fmt: skip
    """Prepare ``out_dir`` for a run with these settings.

    Args:
        out_dir: the run folder (created 0700 if needed).
        run_key: settings that change results (model, data hash, sampling...), JSON-serialisable; secrets in it
            are redacted before it is written or compared.
        progress_files: names of the progress files inside ``out_dir``.
        overwrite: delete earlier progress instead of resuming.
        adopt_unkeyed: progress written before its folder had a key (an older release) is resumed under this key
            (the caller says so) instead of refused.
        out_flag: the caller's flag for the folder, as a refusal advises a fresh one (``judge-train data``'s is
            ``--output``).
        jobs: the ``job`` values of a run.json this command's folder may hold (its own first); empty: not checked.
            A folder whose run.json names another job is another command's (a MERA task's, a ranking's): its key
            and record would be replaced, and its results overwritten, because the command's own progress files
            are not there to be compared (``refuse_other_job``).
        earlier_keys: the same settings as an older release keyed them: a folder keyed so is resumed (and keyed
            anew), not refused as other settings.

    Returns:
        True when earlier progress exists and will be resumed.

    Raises:
        ResumeMismatch: earlier progress was made with different settings (and ``overwrite`` is off), naming each
            setting that differs with its old and new value, or its ``run_key.json`` cannot be read.
        ConfigError: ``out_dir`` is a file, or lies under one.
    """
    refuse_file(out_dir)
    if jobs:
        refuse_other_job(Path(out_dir), jobs, out_flag)
    out_dir = make_private_dir(out_dir)
    key_path = out_dir / RUN_KEY_FILE
    existing = [out_dir / name for name in progress_files if (out_dir / name).exists()]
    key = redact(json.loads(json.dumps(run_key, default=str)))  # tuples etc. as they will read back
    if overwrite:
        for path in existing:
            path.unlink()
        existing = []
    if existing and key_path.exists():
        # A key that cannot be read cannot be checked: refused as a mismatch is, naming the file (a bare json error
        # named none, deep nesting was a RecursionError traceback, and a JSON list failed at old.get).
        unchecked = (f"the settings of the progress in {out_dir} cannot be checked. Use a fresh {out_flag}, or "
                     "--overwrite to discard it.")
        try:
            old = json.loads(key_path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as err:  # a ValueError, but no JSON error: unreadable_json would misname it
            raise ResumeMismatch(f"{key_path}: not UTF-8 text (byte {err.start}); {unchecked}") from None
        except JSON_REFUSALS as err:
            raise ResumeMismatch(f"{key_path}: {unreadable_json(err, whole_file=True)}; {unchecked}") from None
        if not isinstance(old, dict):
            raise ResumeMismatch(f"{key_path}: {value_words(old)}, not an object; {unchecked}")
        if old != key and old not in [redact(json.loads(json.dumps(k, default=str))) for k in earlier_keys]:
            diff = sorted(k for k in set(old) | set(key) if old.get(k) != key.get(k))
            details = "; ".join(f"{k}: {old.get(k)!r} -> {key.get(k)!r}" for k in diff)
            raise ResumeMismatch(
                f"{out_dir} holds progress made with other settings ({details}). "
                f"Use a fresh {out_flag}, or --overwrite to discard it."
            )
    elif existing and not adopt_unkeyed:
        raise ResumeMismatch(
            f"{out_dir} holds progress files but no {RUN_KEY_FILE}; use --overwrite or a fresh {out_flag}")
    write_private_text(key_path, json.dumps(key, ensure_ascii=False, indent=2) + "\n")
    return bool(existing)


def refuse_other_job(out_dir: Path, jobs: tuple[str, ...], out_flag: str = "--out",
                     overwrite_flag: str = "--overwrite") -> None:
    """Refuse a folder whose run.json names a job outside ``jobs``, with or without ``--overwrite``: that flag
    discards this command's progress only, and the other job's files (a MERA task's metrics.json, a ranking's
    answers) would stay beside this run's, or be written over. A run.json that cannot be read, or names no job,
    is left to the key check.

    Raises:
        ResumeMismatch: naming the folder, the job it holds and this command.
    """
    try:
        held = read_provenance(out_dir / PROVENANCE_FILE, missing_ok=True).get("job")
    except (OSError, ValueError):  # not JSON, not an object: left to the key check, which names it
        return
    if isinstance(held, str) and held not in jobs:
        raise ResumeMismatch(f"{out_dir} holds a `{held}` run (its {PROVENANCE_FILE}), not a `{jobs[0]}` one: use "
                             f"a fresh {out_flag} ({overwrite_flag} discards this command's own progress, never "
                             "another command's files)")


def content_key(*texts: str) -> str:
    """A digest of ``texts`` (16 hex digits of the SHA-256 of their JSON list): what a resumed run compares, row by
    row, to tell whether an answer or a verdict on disk was made from the text it would send now (``judge-eval rank``
    and pairwise runs; ``run_key.json`` guards the settings, this the rows)."""
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
