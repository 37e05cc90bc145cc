"""Writing files by name in directories other people can write to, safely.

Every file StaICC writes by name (``results.json``, ``samples.jsonl``, ``--json``,
``report -o``, ``--html``, figures, ``batch export``) goes through this module, because a plain
``open(path, "w")`` follows a symbolic link someone placed at that name (truncating a
file elsewhere), a fixed temporary name (``results.json.tmp``) can be such a link, and
a half-written file is left when the disk fills or the process dies.  Here:

* the content goes to a *unique* temporary file created with ``O_CREAT | O_EXCL``
  (:func:`tempfile.mkstemp`: never an existing file, never through a link) in the
  target's directory, and is flushed and synced;
* the finished file then replaces the target with :func:`os.replace`, which replaces a
  link at that name rather than following it: a reader sees the old file or the new
  one, never half of one;
* on any error (a full disk, a killed write) the temporary file is removed and the
  target is left as it was;
* a writer that streams a long output, whose final name it learns at the end, holds a
  :class:`PendingFile` and commits it under that name;
* a folder of files (figures) is written into a fresh temporary folder and swapped in
  whole (:func:`staged_directory`), so a killed report never leaves old and new files mixed.

The target's permissions follow the umask, as ``open`` would give them.
"""
import contextlib
import os
import shutil
import stat
import tempfile
from typing import IO, Iterator

from ..errors import InvalidValueError, IsAFolderError, NotAFolderError, PathRefusedError

_PREFIX = ".staicc-"


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_directory(directory: str) -> None:
    """Prove that ``directory`` can be written to, or created and then written to (OSError otherwise).

    Nothing is created: a run refused later, for another argument, leaves no empty folder
    behind.  A missing directory is judged by its nearest existing ancestor, which must be a
    writable directory.  The probe is a unique ``O_EXCL`` file, so a link planted at a fixed
    probe name cannot redirect it.
    """
    existing = os.path.abspath(directory)
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if not os.path.isdir(existing):
        raise NotAFolderError(f"{existing!r} is not a directory")
    handle, probe = tempfile.mkstemp(prefix=_PREFIX + "write-test-", dir=existing)
    os.close(handle)
    os.remove(probe)


class PendingFile:
    """A unique temporary file beside its target that becomes a named file only when committed.

    For writers that learn the final name only at the end (an export split into parts,
    named ``F`` or ``F-00001`` ... once the count is known) and that stream their content
    instead of holding it.  :meth:`commit` syncs it and renames it over the target (a link
    there is replaced, never followed); :meth:`discard` removes it.
    """

    def __init__(self, path: str, *, binary: bool = False) -> None:
        path = os.fspath(path)
        if os.path.isdir(path) and not os.path.islink(path):
            raise IsAFolderError(f"{path!r} is a directory; give a file name")
        self.directory = os.path.dirname(os.path.abspath(path))
        handle, self.temporary = tempfile.mkstemp(prefix=_PREFIX + os.path.basename(path) + ".", suffix=".tmp",
                                                  dir=self.directory)
        try:
            if hasattr(os, "fchmod"):  # mkstemp makes it private; the result is an ordinary file
                os.fchmod(handle, _umask_mode())
            self.handle: IO = (os.fdopen(handle, "wb") if binary
                               else os.fdopen(handle, "w", encoding="utf-8", newline="\n"))
        except BaseException:
            os.close(handle)
            os.remove(self.temporary)
            raise

    def commit(self, path: str) -> None:
        """Sync the content and rename it to ``path`` (in the same directory)."""
        path = os.fspath(path)
        if os.path.dirname(os.path.abspath(path)) != self.directory:
            raise InvalidValueError(f"{path!r} is not in {self.directory!r}, where the file was written")
        if os.path.isdir(path) and not os.path.islink(path):
            raise IsAFolderError(f"{path!r} is a directory; give a file name")
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        os.replace(self.temporary, path)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()
        with contextlib.suppress(OSError):
            os.remove(self.temporary)


@contextlib.contextmanager
def atomic_writer(path: str, *, binary: bool = False) -> Iterator[IO]:
    """A file handle whose content replaces ``path`` when the block ends without error."""
    pending = PendingFile(path, binary=binary)
    try:
        yield pending.handle
        pending.commit(path)
    except BaseException:
        pending.discard()
        raise


def write_text(path: str, text: str) -> None:
    """``text`` (UTF-8) as the new content of ``path``, atomically (see the module docstring)."""
    with atomic_writer(path) as fh:
        fh.write(text)


def write_bytes(path: str, data: bytes) -> None:
    with atomic_writer(path, binary=True) as fh:
        fh.write(data)


def make_folders(root: str, *parts: str) -> str:
    """``root/part/...`` as real folders, created where missing; returns the path.

    ``root`` is the folder the user named (made as :func:`os.makedirs` would); below it, a symbolic
    link planted at a folder's name (``root/data`` pointing elsewhere) is replaced by a real folder,
    never followed (the link alone is removed, not what it points to), and a part that is a file, or
    a name such as ``..``, is refused.
    """
    os.makedirs(root, exist_ok=True)
    path = os.fspath(root)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or os.sep in part:
            raise InvalidValueError(f"{part!r} cannot name a folder inside {root!r}")
        path = os.path.join(path, part)
        if os.path.islink(path):
            os.unlink(path)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            raise NotAFolderError(f"{path!r} exists and is not a folder" + (
                " (a link was placed there again while it was replaced)" if stat.S_ISLNK(mode) else ""))
    return path


@contextlib.contextmanager
def staged_directory(directory: str) -> Iterator[str]:
    """A fresh temporary folder that replaces ``directory`` whole when the block succeeds.

    The old folder (if any) is moved aside first and removed after the swap; a folder
    that is a link, or a plain file at that name, is refused rather than followed.
    """
    directory = os.path.abspath(os.fspath(directory))
    if os.path.islink(directory):
        raise PathRefusedError(f"{directory!r} is a symbolic link; give a real folder for the figures")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise NotAFolderError(f"{directory!r} exists and is not a folder")
    parent = os.path.dirname(directory)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=_PREFIX + os.path.basename(directory) + ".", dir=parent)
    try:
        yield staging
        os.chmod(staging, _dir_mode())  # mkdtemp makes it private; the figures folder is an ordinary one
        old = None
        if os.path.isdir(directory):
            old = tempfile.mkdtemp(prefix=_PREFIX + "old-", dir=parent)
            os.replace(directory, os.path.join(old, "previous"))
        os.replace(staging, directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _dir_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return stat.S_IMODE(0o777 & ~mask)
