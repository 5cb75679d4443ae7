"""Where the bytes come from: a file (mapped, never read whole), bytes, or a pipe/stdin."""

from __future__ import annotations

import mmap
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import weakref
from typing import BinaryIO


class Source:
    """A read-only buffer over the input. `close()` closes the file; a mapping stays valid until
    nothing refers to it, so values decoded lazily from it (stream nodes) outlive the dump."""

    def __init__(self, buffer, name: str, closers: list | None = None):
        self.buffer = buffer
        self.name = name
        self._closers = closers or []

    def release(self) -> None:
        """Drops the pages of a mapped file from this process: the kernel's page cache keeps
        them, and touching them again maps them back."""
        if isinstance(self.buffer, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
            self.buffer.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        _mapped.discard(self)
        for closer in reversed(self._closers):
            closer.close()
        self._closers.clear()


# A parse touches each page of a dump about once, and mapped pages count in the resident set
# until the process unmaps them: open maps are released every RELEASE_EVERY_S seconds by one
# daemon thread, so walking a file bigger than memory keeps the resident set flat.
RELEASE_EVERY_S = 0.25
_mapped: weakref.WeakSet[Source] = weakref.WeakSet()
_releaser_lock = threading.Lock()
_releaser: threading.Thread | None = None


def _release_mapped() -> None:
    while True:
        time.sleep(RELEASE_EVERY_S)
        for source in list(_mapped):
            source.release()


def _map(handle: BinaryIO, name: str) -> Source:
    global _releaser
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        handle.close()
        return Source(b"", name)
    mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    source = Source(mapped, name, [handle])
    _mapped.add(source)
    with _releaser_lock:
        if _releaser is None:
            _releaser = threading.Thread(target=_release_mapped, name="rdbspec-release", daemon=True)
            _releaser.start()
    return source


def open_source(path: str | os.PathLike) -> Source:
    """Maps a regular file; spools a pipe or stdin (`-`) to a temporary file as it is read,
    so memory never holds the whole input."""
    name = os.fspath(path)
    if name == "-":
        return _spool(sys.stdin.buffer, "<stdin>")
    handle = open(name, "rb")  # noqa: SIM115 - closed by Source.close
    if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        return _map(handle, name)
    with handle:
        return _spool(handle, name)


def _spool(stream: BinaryIO, name: str) -> Source:
    spool = tempfile.TemporaryFile(prefix="rdbspec-")
    shutil.copyfileobj(stream, spool, 1 << 20)
    spool.flush()
    return _map(spool, name)
