"""Outputs written whole or not at all: every file a command writes (a dump, JSON Lines, CSV, a
report page, RESP commands, the RDB a live server sent) is written to a temporary file beside it
and renamed over it at the end (`AtomicFile`), as a server saves its dump (redis src/rdb.c
rdbSave: temp-<pid>.rdb, fflush and fsync, rename, then fsyncFileDir). Whatever stops the
command (an error, Ctrl-C, a SIGKILL, a full disk) leaves the previous file under the name, or
none; a failure the process sees removes the temporary file.

An output that exists and is no regular file (/dev/null, /dev/stdout, a pipe) is written in
place, as `open()` writes it: nothing can be renamed over it. One that is a symbolic link is
written through it, the link kept, as `open()` writes through it.

The temporary file is `.NAME.rdbspec-XXXXXXXX.tmp` in NAME's directory, and its writer holds a
lock on it (fcntl's POSIX record lock: the kernel lets go of it when the process dies, however it
dies, and a process it forks does not inherit it) until it is renamed or removed. What a killed
writer left is removed by the next one of the same output (`remove_stale`), or of the same
directory for the commands that write a directory (`remove_stale_in`): a temporary file whose lock
can be taken has no live writer. One whose lock cannot be taken (a live writer, a file of another
user, a file system without locks) is left alone.

A command's working files (`prefixes`' sorted runs) go in a scratch directory of its own,
`rdbspec-PURPOSE-XXXXXXXX` in TMPDIR (`scratch_directory`), removed whole at the end; its `.lock`
file is locked the same way while the command runs, and the next command of the same purpose
removes the directories a killed one left.

An error writing (ENOSPC, EFBIG past RLIMIT_FSIZE, EIO...) is the `OSError` the system call
raised, naming the output, not the temporary file and not the input, so that the command line
says `OUT: No space left on device` (exit 6).

Imports: nothing of rdbspec, so that any module that writes a file may take it."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

TEMP_MARK = ".rdbspec-"  # between the output's name and the random part
TEMP_SUFFIX = ".tmp"
# the random part: tempfile's 8 characters (tempfile._RandomNameSequence)
_RANDOM = r"[a-z0-9_]{8}"
_ANY_TEMP = re.compile(rf"\..+{re.escape(TEMP_MARK)}{_RANDOM}{re.escape(TEMP_SUFFIX)}")
BUFFER_SIZE = 1 << 18  # bytes gathered before a write(2)
SCRATCH_LOCK = ".lock"  # the file of a scratch directory its command holds the lock of

# this process's temporary files (device, inode): never taken for a dead writer's (a process
# may take its own lock again, and closing any descriptor of a file drops the lock it holds)
_writing: set[tuple[int, int]] = set()


def _created_file_mode() -> int:
    """The mode `open()` gives a new file: 0666 less the process's umask (which only setting it
    reads back: it is set back at once)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return 0o666 & ~mask


def _naming(err: OSError, path: str | os.PathLike[str]) -> OSError:
    """`err`, naming `path` (the output it happened writing) as the file it is about."""
    err.filename = os.fspath(path)
    err.filename2 = None
    return err


class _OutputFile(io.FileIO):
    """The temporary file's descriptor, whose write errors name the output."""

    def __init__(self, fd: int, output: str):
        super().__init__(fd, "wb")
        self.name = output  # what BufferedWriter.name (and parallel.copy) report

    def write(self, data: ReadableBuffer, /) -> int:
        try:
            return super().write(data)
        except OSError as err:
            raise _naming(err, self.name) from None


class AtomicFile:
    """The file `path` will be, written to a temporary file beside it (see the module doc):
    `binary` (or `text()`) to write to, `commit()` to rename it over `path`, `discard()` to remove
    it. As a context manager, committed at the end of the block, discarded when it raises
    (KeyboardInterrupt too). With `durable` (a dump), the file is fsynced before the rename and
    its directory after, as rdbSave does; the file gets the mode the umask gives a new file."""

    def __init__(self, path: str | os.PathLike[str], durable: bool = False):
        self.path = os.fspath(path)
        self.durable = durable
        self._in_place = _special(self.path)
        if self._in_place:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
            except OSError as err:
                raise _naming(err, self.path) from None
            self._temp = self._target = self.path
        else:
            self._target = os.path.realpath(self.path)  # through a symbolic link
            remove_stale(self._target)
            self._temp, fd = _create_locked(self._target, self.path)
        self._identity = _identity(os.fstat(fd))
        _writing.add(self._identity)
        self._raw = _OutputFile(fd, self.path)
        self.binary = io.BufferedWriter(self._raw, BUFFER_SIZE)
        self._text: io.TextIOWrapper | None = None
        self._finished = self._done = False

    def text(self) -> io.TextIOWrapper:
        """The file as UTF-8 text, as `open(path, "w", encoding="utf-8")` writes it."""
        if self._text is None:
            self._text = io.TextIOWrapper(self.binary, encoding="utf-8")
        return self._text

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()

    def finish(self) -> None:
        """The temporary file whole (on disk with `durable`), not yet renamed: a command writing
        several files finishes them all before it renames any. The file stays open, and so
        locked, until it is renamed or removed."""
        if self._finished or self._done:
            return
        try:
            if self._text is not None:
                self._text.flush()
            self.binary.flush()
            if self._in_place:
                self._finished = True
                return
            try:
                os.fchmod(self._raw.fileno(), _created_file_mode())  # mkstemp's is 0600
                if self.durable:
                    os.fsync(self._raw.fileno())
            except OSError as err:
                raise _naming(err, self.path) from None
        except BaseException:
            self.discard()
            raise
        self._finished = True

    def commit(self) -> None:
        """`finish()`, then the file takes its name (its directory fsynced with `durable`)."""
        if self._done:
            return
        self.finish()
        if self._in_place:
            self._end()
            return
        try:
            try:
                os.replace(self._temp, self._target)
            except OSError as err:
                raise _naming(err, self.path) from None
        except BaseException:
            self.discard()
            raise
        self._end()
        if self.durable:
            _fsync_directory(self._target, self.path)

    def discard(self) -> None:
        """No file: the temporary one removed (what was not written yet dropped), `path` as it was."""
        if self._done:
            return
        try:
            if not self._in_place:
                Path(self._temp).unlink(missing_ok=True)
        finally:
            self._end()

    def _end(self) -> None:
        """Closes the descriptor, and with it the lock; the buffers above it, closed with it,
        write nothing more."""
        self._done = True
        self._text = None
        self._raw.close()
        _writing.discard(self._identity)


def _special(path: str) -> bool:
    """Whether `path` is a file that exists and is no regular file (written in place); a
    directory is refused at once, before anything is written."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as err:
        raise _naming(err, path) from None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    return not stat.S_ISREG(mode)


def _create_locked(target: str, shown: str) -> tuple[str, int]:
    """A new temporary file beside `target` and its descriptor, locked (an error names the
    output as `shown`). A file removed between its creation and the lock (by another process's
    `remove_stale`, which found it unlocked) is made again under another name."""
    directory, name = os.path.split(target)
    while True:
        try:
            fd, temp = tempfile.mkstemp(prefix=f".{name}{TEMP_MARK}", suffix=TEMP_SUFFIX, dir=directory or ".")
        except OSError as err:
            raise _naming(err, shown) from None
        try:
            if _lock(fd, wait=True) and not _same_file(temp, fd):
                os.close(fd)
                continue
        except BaseException:
            os.close(fd)
            Path(temp).unlink(missing_ok=True)
            raise
        return temp, fd


def _lock(fd: int, wait: bool) -> bool:
    """Takes the write lock of the whole file; False when the file system has no locks (or,
    without `wait`, when another process holds it)."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EAGAIN, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
            return False
        raise
    return True


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def _same_file(path: str, fd: int) -> bool:
    """Whether `path` still names the file open as `fd`."""
    try:
        return _identity(os.lstat(path)) == _identity(os.fstat(fd))
    except FileNotFoundError:
        return False


def _fsync_directory(target: str, shown: str) -> None:
    """The directory entry of a renamed file on disk (redis src/util.c fsyncFileDir, which lets
    pass the file systems that cannot fsync a directory: EINVAL, EBADF)."""
    try:
        fd = os.open(os.path.dirname(target) or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.EBADF):
            raise _naming(err, shown) from None


def remove_stale(path: str | os.PathLike[str]) -> None:
    """Removes the temporary files of the output `path` that no live process writes."""
    directory, name = os.path.split(os.fspath(path))
    own = re.compile(rf"{re.escape('.' + name + TEMP_MARK)}{_RANDOM}{re.escape(TEMP_SUFFIX)}")
    _remove_matching(directory or ".", own.fullmatch, recursive=False)


def remove_stale_in(directory: str | os.PathLike[str], recursive: bool = False) -> None:
    """Removes the temporary files in `directory` (and below it, `recursive`) that no live
    process writes, whatever output they were for: a killed run that wrote other names there."""
    _remove_matching(os.fspath(directory), _ANY_TEMP.fullmatch, recursive)


def _remove_matching(directory: str, matches: Callable[[str], object], recursive: bool) -> None:
    try:
        entries = list(os.scandir(directory))
    except OSError:  # no directory yet, or one not to be read: nothing to clean
        return
    for entry in entries:
        if recursive and entry.is_dir(follow_symlinks=False):
            _remove_matching(entry.path, matches, recursive)
        elif matches(entry.name) and entry.is_file(follow_symlinks=False):
            _remove_if_unlocked(entry.path)


def _remove_if_unlocked(path: str, remove: Callable[[str], None] = os.unlink) -> None:
    """Removes a temporary file whose lock can be taken: its writer is dead (`remove` of it: a
    scratch directory's lock file removes the directory)."""
    try:
        if _identity(os.lstat(path)) in _writing:
            return
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)  # a write lock needs a file open to write
    except OSError:  # gone meanwhile, another user's: not ours to judge
        return
    try:
        if _lock(fd, wait=False) and _same_file(path, fd):
            remove(path)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def scratch_directory(purpose: str) -> Iterator[str]:
    """A new directory for a command's working files, `rdbspec-PURPOSE-XXXXXXXX` in TMPDIR,
    removed whole at the end; first, those of the same purpose that no live process holds. Forked
    workers may write in it (the lock is the parent's)."""
    base = tempfile.gettempdir()
    prefix = f"rdbspec-{purpose}-"
    _remove_stale_scratch(base, prefix)
    while True:
        directory = tempfile.mkdtemp(prefix=prefix, dir=base)
        lock = os.path.join(directory, SCRATCH_LOCK)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        # another command may have taken it for a dead one's between the open and the lock
        if _lock(fd, wait=True) and not _same_file(lock, fd):
            os.close(fd)
            continue
        break
    identity = _identity(os.fstat(fd))
    _writing.add(identity)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        _writing.discard(identity)
        os.close(fd)


def _remove_stale_scratch(base: str, prefix: str) -> None:
    """Removes the scratch directories `prefix` + 8 characters in `base` whose lock can be taken;
    one with no lock file yet (being made) is left, as `_remove_if_unlocked` leaves a missing file."""
    own = re.compile(rf"{re.escape(prefix)}{_RANDOM}")
    try:
        entries = [entry for entry in os.scandir(base) if own.fullmatch(entry.name)]
    except OSError:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        _remove_if_unlocked(os.path.join(entry.path, SCRATCH_LOCK), _remove_scratch)


def _remove_scratch(lock: str) -> None:
    """Removes the scratch directory of the lock file `lock`."""
    shutil.rmtree(os.path.dirname(lock), ignore_errors=True)
