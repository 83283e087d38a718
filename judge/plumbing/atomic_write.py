"""One way to replace a file whole: written beside it under a name of its own, fsynced, then renamed over it.

A reader (a later stage, a resumed run, a person) then finds the old file or the new one, never a file cut by a kill
or a full disk: the rename is atomic within one folder, and the fsync puts the bytes on disk before the name points at
them. The folder is fsynced after the rename (``sync_folder``), so that the new name is on disk before the caller goes
on: a run's ``run_key.json`` renamed into place and then fsynced journal rows could otherwise come back from a crash
of the machine as rows without their key. Every file a later step trusts as whole (stage outputs, ``summary.json``, ``run.json``, ``metrics.json``, an
embedding cache) is written through ``write_atomically``; files read as one set (``build-data``'s rows and their
dropped verdicts) through ``write_atomically_together``. A run folder a journal or run.json is written in
(``make_private_dir``, ``JournalWriter``) is made through ``make_folder``, which names it on disk before the files
fsynced in it count on that name. A folder (a training run's export) is written beside the
one it replaces and put in its place whole (``replace_folder``).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

__all__ = ["write_atomically", "write_atomically_together", "replace_folder", "staging_dir", "aside_dir",
           "sync_folder", "sync_tree", "make_folder", "NotSynced"]


class NotSynced(OSError):
    """The renames landed (every file, or the folder, already replaced) but the fsync of their folder failed: the
    new names may not be on disk yet. An ``OSError`` with the fsync's errno and words, its ``__cause__`` the fsync's
    error, so a caller tells "replaced, not synced" from "not replaced" by the type alone."""


def _sync_after_rename(folder: Path) -> None:
    """``sync_folder`` after a rename landed in ``folder``: its failure raised as ``NotSynced``."""
    try:
        sync_folder(folder)
    except OSError as err:
        raise NotSynced(err.errno, err.strerror or str(err), str(folder)) from err

#: Random names tried before giving up (each is 12 hex digits: a clash means another writer holds that name now).
_ATTEMPTS = 100


def write_atomically(path: str | Path, content: bytes | Callable[[BinaryIO], None], *, mode: int | None = None) -> Path:
    """Replace ``path`` with ``content``: a temporary file beside it, fsynced, renamed over it, its folder fsynced.

    Args:
        path: the file to replace (its folder must exist). A symlink stays one: the file it points at is replaced
            (the temporary is written beside that file, so that the rename stays within one file system), as
            ``open(path, "w")`` writes through it.
        content: the bytes, or a function that writes them into the binary handle it is given (a stream of rows
            too large to hold; whatever it raises is raised here, with ``path`` untouched).
        mode: the file's permission bits, set before the first byte is written (0o600 for a file holding secrets);
            None gives what ``open(path, "w")`` gives: an existing file's own bits, else 0o666 less the umask.

    Returns:
        ``path``.

    Raises:
        OSError: as the writes, fsync or rename raise (``path`` then as it was, no temporary file left).
        NotSynced: the fsync of its folder failed after the rename (``path`` then already replaced, its new name
            perhaps not yet on disk).
    """
    return write_atomically_together([(path, content)], mode=mode)[0]


def write_atomically_together(files: Sequence[tuple[str | Path, bytes | Callable[[BinaryIO], None]]], *,
                              mode: int | None = None) -> list[Path]:
    """Replace several files as one set: each written beside itself and fsynced (as ``write_atomically`` writes
    one) before the first is renamed over its path, then renamed in the order given, and their folders fsynced. A
    failed write replaces none of them, so a set read together (rows and the rows dropped beside them) is never new
    files beside earlier ones.

    Args:
        files: ``(path, content)`` pairs, each as ``write_atomically`` takes them; renamed in this order (the one a
            reader trusts most last: a rename failing part way leaves it as it was).
        mode: as ``write_atomically``'s, for every file.

    Returns:
        The paths as given, in order.

    Raises:
        OSError: as a write, fsync or rename raises (the files before the failed rename replaced, the others as they
            were, no temporary file left).
        NotSynced: the fsync of a folder failed after every rename (every file then already replaced, its new name
            perhaps not yet on disk).
    """
    given = [Path(path) for path, _ in files]
    paths, temps = [_file_itself(path) for path in given], []
    try:
        for path, (_, content) in zip(paths, files):
            exact = _existing_mode(path) if mode is None else mode
            fd, tmp = _create_beside(path, 0o666 if exact is None else exact)
            temps.append(tmp)
            with os.fdopen(fd, "wb") as handle:
                if exact is not None:
                    os.fchmod(handle.fileno(), exact)  # exactly these bits: the umask may have taken some from them
                if callable(content):
                    content(handle)
                else:
                    handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
        for tmp, path in zip(temps, paths):
            os.replace(tmp, path)
    except BaseException:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        raise
    for folder in dict.fromkeys(path.parent for path in paths):
        _sync_after_rename(folder)
    return given


def _file_itself(path: Path) -> Path:
    """The file ``path`` names: where it is a symlink, the path it points at (a rename over the link itself would
    replace the link with a file, and leave its target as it was)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _existing_mode(path: Path) -> int | None:
    """The permission bits of the regular file at ``path``, which its replacement keeps; None where there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


#: What a file system that cannot fsync a folder answers (some network and FUSE file systems): nothing to make
#: durable there, so no error.
_NO_FOLDER_SYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF, errno.EACCES, errno.EPERM,
                   errno.EISDIR}


def sync_folder(folder: str | Path) -> None:
    """fsync ``folder``, so that a name just made, renamed or removed in it is on disk: an fsync of a file makes its
    bytes durable, not the entry that names it (fsync(2)). A file system that cannot fsync a folder is passed over.

    Raises:
        OSError: the fsync failed for any other reason (an I/O error: the name may not be on disk).
    """
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # not there, or not to be opened (no read permission): nothing this call can make durable
        return
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in _NO_FOLDER_SYNC:
            raise
    finally:
        os.close(fd)


def _raise(err: OSError) -> None:
    """os.walk's ``onerror``: a listing's error raised, where os.walk's default passes the folder over."""
    raise err


def sync_tree(folder: str | Path) -> None:
    """fsync every regular file under ``folder``, then the folder holding them, deepest first and ``folder`` last
    (``sync_folder``), so that a folder written by others (a model's ``save_pretrained``, which does not fsync) is on
    disk, bytes and names, before a rename makes it the one a reader trusts. Symlinks are not followed.

    Raises:
        OSError: as listing a folder (a missing ``folder`` included), opening or fsyncing a file raises, or a
            folder's fsync (``sync_folder``). A folder that cannot be listed is an error, not skipped: its files
            would be renamed into place unsynced.
    """
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    for root, _, names in os.walk(folder, topdown=False, onerror=_raise):
        for name in sorted(names):
            path = os.path.join(root, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):  # a link (walk lists one beside the files) or a socket
                continue
            fd = os.open(path, flags)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        sync_folder(root)


def make_folder(path: str | Path, mode: int = 0o777) -> list[Path]:
    """Make the folder ``path`` and its missing parents (``mode`` less the umask), each then named on disk: the
    folder holding each one made is fsynced (``sync_folder``), so that files later fsynced in a new run folder are not
    lost with the folder's own name in a crash (a file system that does not order its metadata writes, XFS or
    btrfs, may write the files and not the entry naming the folder).

    Returns:
        The folders made, ``path`` first; none where it was there.

    Raises:
        OSError: as ``mkdir`` or a folder's fsync raise.
    """
    path = Path(path)
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    for folder in missing:
        sync_folder(folder.parent)
    return missing


def _create_beside(path: Path, mode: int) -> tuple[int, Path]:
    """A new file ``<name>.<random>.tmp`` in ``path``'s folder, opened for writing, created with ``mode`` (less the
    umask); no other writer holds it (``O_EXCL``).

    ``tempfile.mkstemp`` does the same but always creates 0o600, and giving a file the umask's mode afterwards needs
    the umask, which can only be read by setting it (for the whole process, under other threads' feet).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(_ATTEMPTS):
        tmp = path.with_name(f"{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free temporary name beside it after {_ATTEMPTS} tries")


def _folder_itself(target: str | Path) -> Path:
    """The folder ``target`` names: where ``target`` is a symlink (a training export kept on another disk), the path
    it points at, so that the replacement is a rename on that folder's filesystem and the link goes on naming it;
    a rename over the link itself would replace the link, not the folder behind it."""
    target = Path(target)
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def staging_dir(target: str | Path) -> Path:
    """Where a folder is written before ``replace_folder`` puts it in place of ``target``: a hidden folder beside it
    (the same filesystem, so that the replacement is a rename; beside the folder a symlinked ``target`` points at)."""
    target = _folder_itself(target)
    return target.parent / f".{target.name}.staging"


def aside_dir(target: str | Path) -> Path:
    """Where ``replace_folder`` moves the earlier ``target`` for the instant of a replacement that cannot swap."""
    target = _folder_itself(target)
    return target.parent / f".{target.name}.previous"


def _exchange(first: Path, second: Path) -> bool:
    """Swap two folders in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the system or the filesystem
    cannot (glibc before 2.28, NFS), and nothing was moved."""
    import ctypes
    import os
    import sys

    if not sys.platform.startswith("linux"):
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0


def replace_folder(staging: str | Path, export_dir: str | Path) -> Path:
    """Put a complete folder ``staging`` in place of ``export_dir`` (a sibling, on the same filesystem); returns
    ``export_dir``.

    The earlier folder stays whole until then: a training export's judge-serve started meanwhile finds a judge, and an
    export that fails or is abandoned on a signal leaves the one it was to replace. Where the folders can be swapped
    in one step the folder is never absent; elsewhere the earlier one is renamed aside first, absent for the instant
    between two renames, and never half-written; an earlier one a kill left aside there is removed by the next
    replacement. A symlinked ``export_dir`` is replaced where it points (``staging_dir`` stages beside that folder).
    Every file of ``staging`` is fsynced before the swap (``sync_tree``): the export's writers do not fsync, and a
    crash of the machine just after the swap could otherwise leave the name on files never written to disk.
    The parent folder is fsynced once the new folder holds the name (``sync_folder``); its failure raises
    ``NotSynced``, the new folder then in place.
    """
    staging, export_dir = Path(staging), _folder_itself(export_dir)
    sync_tree(staging)  # its files on disk before a name that readers trust points at them
    if not export_dir.exists():
        staging.rename(export_dir)
        _sync_after_rename(export_dir.parent)
        shutil.rmtree(aside_dir(export_dir), ignore_errors=True)
    elif _exchange(staging, export_dir):
        _sync_after_rename(export_dir.parent)
        shutil.rmtree(staging)  # now the earlier export
    else:
        aside = aside_dir(export_dir)
        shutil.rmtree(aside, ignore_errors=True)
        export_dir.rename(aside)
        try:
            staging.rename(export_dir)
        except BaseException:
            aside.rename(export_dir)  # the earlier folder back under its name, not left aside with none in place
            raise
        _sync_after_rename(export_dir.parent)
        shutil.rmtree(aside, ignore_errors=True)
    return export_dir
