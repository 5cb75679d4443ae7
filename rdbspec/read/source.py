"""Where the bytes come from: a file (mapped, never read whole), bytes, or a pipe/stdin."""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from typing import BinaryIO, Protocol

Buffer = bytes | mmap.mmap  # what a source reads from: bytes given, or a file mapped


class Source:
    """A read-only buffer over the input. `close()` closes the file; a mapping stays valid until
    nothing refers to it, so values decoded lazily from it (stream nodes) outlive the dump."""

    def __init__(self, buffer: Buffer, name: str, closers: list[BinaryIO] | None = None):
        self.buffer = buffer
        self.name = name
        self._closers = closers or []
        # a mapped file's pages are released until close() or this object's end
        self._stop_releasing: Callable[[], object] | None = None
        if isinstance(buffer, _Mapping) and hasattr(mmap, "MADV_DONTNEED"):
            _releaser.track(buffer, RELEASE_EVERY_S)
            self._stop_releasing = weakref.finalize(self, _releaser.untrack, buffer)

    def release(self) -> None:
        """Drops the pages of a mapped file from this process: the kernel's page cache keeps
        them, and touching them again maps them back."""
        if isinstance(self.buffer, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
            self.buffer.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        if self._stop_releasing is not None:
            self._stop_releasing()
        for closer in reversed(self._closers):
            closer.close()
        self._closers.clear()


# A parse touches each page of a dump about once, and mapped pages count in the resident set
# until the process unmaps or releases them: open maps are released every RELEASE_EVERY_S
# seconds by one thread, so walking a file bigger than memory keeps the resident set flat. The
# compiled `_page_releaser` runs it in C, without the GIL, so it also runs while one native call
# reads a value of any size; such a call maps pages fast (a fault maps up to 64 KB: a 270 MB
# stream got wholly resident between two releases 0.25 s apart), so it runs every 10 ms (a
# release of a few pages costs microseconds). Without a C compiler, `_PythonReleaser` runs it
# between Python bytecodes, every 0.25 s: each run takes the GIL from the parse, which reads far
# slower in Python.


class _PythonReleaser:
    """The releasing thread in Python (`_page_releaser`'s interface): it waits for the GIL, so it
    pauses while a native call holds it."""

    def __init__(self) -> None:
        self._tracked: set[mmap.mmap] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._every_s = 0.0
        os.register_at_fork(after_in_child=self._start_in_child)

    def track(self, mapping: mmap.mmap, every_s: float) -> None:
        self._tracked.add(mapping)
        self._every_s = every_s
        self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._release_forever, name="rdbspec-release", daemon=True)
                self._thread.start()

    def untrack(self, mapping: mmap.mmap) -> None:
        self._tracked.discard(mapping)

    def _start_in_child(self) -> None:
        """A forked child has no thread (nor a usable lock): it starts its own for the mappings it inherited."""
        self._lock, self._thread = threading.Lock(), None
        if self._tracked:
            self._start()

    def _release_forever(self) -> None:
        while True:
            time.sleep(self._every_s)
            for mapping in list(self._tracked):
                with contextlib.suppress(ValueError):  # closed since the list was taken
                    mapping.madvise(mmap.MADV_DONTNEED)


class _Releaser(Protocol):
    """What both releasing threads do: the compiled module and `_PythonReleaser`."""

    def track(self, mapping: mmap.mmap, every_s: float) -> None: ...

    def untrack(self, mapping: mmap.mmap) -> None: ...


_releaser: _Releaser
try:  # compiled by setup.py from _page_releaser.pyx; absent without a C compiler
    from . import _page_releaser as _releaser
    RELEASE_EVERY_S = 0.01
except ImportError:
    _releaser = _PythonReleaser()
    RELEASE_EVERY_S = 0.25


class _Mapping(mmap.mmap):
    """A read-only file mapping that is untracked before it is unmapped: closed explicitly, the
    releasing thread must not madvise its range any more (it may be mapped again for anything)."""

    __slots__ = ()

    def close(self) -> None:
        _releaser.untrack(self)
        super().close()

    def __exit__(self, *exc_info: object) -> None:  # mmap's own calls its C close, not close() above
        self.close()


def _map(handle: BinaryIO, name: str) -> Source:
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        handle.close()
        return Source(b"", name)
    return Source(_Mapping(handle.fileno(), 0, access=mmap.ACCESS_READ), name, [handle])


def open_source(path: str | os.PathLike[str]) -> Source:
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
