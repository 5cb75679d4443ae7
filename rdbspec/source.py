"""Where the bytes come from: a file (mapped, never read whole), bytes, or a pipe/stdin."""

from __future__ import annotations

import mmap
import os
import shutil
import stat
import sys
import tempfile
from typing import BinaryIO


class Source:
    """A read-only buffer over the input. `close()` closes the file; a mapping stays valid until
    nothing refers to it, so values decoded lazily from it (stream nodes) outlive the dump."""

    def __init__(self, buffer, name: str, closers: list | None = None):
        self.buffer = buffer
        self.name = name
        self._closers = closers or []

    def close(self) -> None:
        for closer in reversed(self._closers):
            closer.close()
        self._closers.clear()


def _map(handle: BinaryIO, name: str) -> Source:
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        handle.close()
        return Source(b"", name)
    mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    return Source(mapped, name, [handle])


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
