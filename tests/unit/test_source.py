"""The mapped input's pages leave the resident set while the parse runs (rdbspec/read/source.py and
its compiled releasing thread, rdbspec/read/_page_releaser.pyx), and closing a source, however it is
done, never lets that thread touch a range that is no longer the file's.

The resident pages of a mapping are read from /proc/self/smaps (its Rss), through libc called by
ctypes.PyDLL, which keeps the GIL during the call: with the switch interval raised, this thread
then holds the GIL the whole time, as one long native parse call does."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import mmap
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rdbspec.read import source as source_module
from rdbspec.read.source import Source, open_source

DEADLINE_S = 60.0  # a hang guard, never reached when the releasing thread works (every RELEASE_EVERY_S)
LIBC = ctypes.PyDLL(None)  # PyDLL: the GIL stays held during each call
LIBC.open.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIBC.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
LIBC.read.restype = ctypes.c_ssize_t
LIBC.close.argtypes = [ctypes.c_int]
LIBC.usleep.argtypes = [ctypes.c_uint]


def smaps_holding_the_gil() -> bytes:
    chunk = ctypes.create_string_buffer(1 << 16)
    fd = LIBC.open(b"/proc/self/smaps", 0)
    assert fd >= 0
    parts = []
    while (got := LIBC.read(fd, chunk, len(chunk))) > 0:
        parts.append(chunk.raw[:got])
    LIBC.close(fd)
    return b"".join(parts)


def resident_kb(path: Path) -> int:
    """The resident kilobytes of this process's mappings of `path`."""
    total, in_file = 0, False
    for line in smaps_holding_the_gil().splitlines():
        fields = line.split()
        if b"-" in fields[0] and len(fields) >= 5:  # a mapping's header line: range perms offset dev inode [path]
            in_file = len(fields) == 6 and fields[5] == str(path).encode()
        elif in_file and fields[0] == b"Rss:":
            total += int(fields[1])
    return total


def touch(buffer) -> None:
    """Reads a byte of each page, holding the GIL throughout."""
    sum(buffer[offset] for offset in range(0, len(buffer), mmap.PAGESIZE))


def wait_until_released(path: Path) -> None:
    """Polls (through libc calls that keep the GIL) until no page of `path` is resident; fails at
    DEADLINE_S."""
    deadline = time.monotonic() + DEADLINE_S
    while resident_kb(path) > 0:
        assert time.monotonic() < deadline, f"{path}'s pages still resident after {DEADLINE_S} s"
        LIBC.usleep(10_000)


@contextlib.contextmanager
def gil_held() -> Iterator[None]:
    """No other Python thread runs until the block ends (it never blocks without the GIL)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(10 * DEADLINE_S)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.fixture
def dump_file(tmp_path: Path) -> Path:
    path = tmp_path / "mapped.bin"
    path.write_bytes(bytes(range(256)) * (8 << 12))  # 8 MB
    return path


def test_pages_are_released_while_a_long_call_holds_the_gil(tmp_path: Path, dump_file: Path) -> None:
    """A native call reading one value (a 270 MB stream) holds the GIL throughout: a releasing
    thread that needs the GIL (the one in Python) waits, and the value's pages all get resident.
    A file mapped beside, untracked, keeps its pages: the touching and the counting work."""
    control_path = tmp_path / "control.bin"
    control_path.write_bytes(dump_file.read_bytes())
    source = open_source(dump_file)
    with control_path.open("rb") as control_file, \
            mmap.mmap(control_file.fileno(), 0, access=mmap.ACCESS_READ) as control:
        try:
            with gil_held():
                touch(source.buffer)
                touch(control)
                wait_until_released(dump_file)
                assert resident_kb(control_path) > 0
        finally:
            source.close()


def wait_for_a_whole_pass(witness: Source, path: Path) -> None:
    """Returns once a whole pass of the releasing thread has run after the call: each wait sees a
    pass release the witness after it was touched, so the third one's pass began after the end of
    the pass that followed the first one's."""
    for _ in range(3):
        touch(witness.buffer)
        wait_until_released(path)


def unmap(source: Source, how: str) -> Source | None:
    """Unmaps `source`'s mapping as `how` says; returns the source when it is still to be closed."""
    mapping = source.buffer
    if how in ("close", "forget"):  # the mapping is unmapped when nothing refers to it any more
        if how == "close":
            source.close()
        del source, mapping
        gc.collect()
        return None
    if how == "close then unmap":
        source.close()
    if how == "unmap in with":
        with mapping:
            pass
    else:
        mapping.close()
    return source


@pytest.mark.parametrize("how", ["close", "forget", "close then unmap", "unmap then close", "unmap in with"])
def test_a_range_unmapped_is_never_released(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Each source's range, once unmapped, is mapped again at once as private anonymous memory
    (malloc's kind) full of 0xff, which the kernel places in the hole: a releasing thread that
    still held the range would zero it."""
    monkeypatch.setattr(source_module, "RELEASE_EVERY_S", 0.001)  # the thread races the unmaps (each track sets it)
    data, witness_path = tmp_path / "data.bin", tmp_path / "witness.bin"
    data.write_bytes(b"\x01" * (1 << 20))
    witness_path.write_bytes(b"\x02" * (1 << 20))
    witness = open_source(witness_path)
    fillers, to_close = [], []
    try:
        for _ in range(50):
            source = open_source(data)
            touch(source.buffer)
            to_close.append(unmap(source, how))
            del source
            filler = mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            filler.write(b"\xff" * (1 << 20))
            fillers.append(filler)
        wait_for_a_whole_pass(witness, witness_path)
        assert all(filler[:] == b"\xff" * (1 << 20) for filler in fillers)
    finally:
        for source in filter(None, to_close):
            source.close()
        witness.close()


def test_a_closed_source_is_released_no_more(tmp_path: Path, dump_file: Path) -> None:
    """close() ends the releasing; the mapping itself outlives it while the values decoded lazily
    from it refer to it."""
    witness_path = tmp_path / "witness.bin"
    witness_path.write_bytes(b"\x02" * (1 << 20))
    witness, source = open_source(witness_path), open_source(dump_file)
    try:
        source.close()
        touch(source.buffer)
        wait_for_a_whole_pass(witness, witness_path)
        assert resident_kb(dump_file) > 0
    finally:
        witness.close()


def test_a_forked_child_releases_its_mappings(tmp_path: Path, dump_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fork while the thread runs (every millisecond, so some forks meet it holding its lock):
    each child releases the mapping it inherited and one it opens, then exits 0."""
    monkeypatch.setattr(source_module, "RELEASE_EVERY_S", 0.001)
    other = tmp_path / "other.bin"
    other.write_bytes(b"\x03" * (1 << 20))
    inherited = open_source(dump_file)
    try:
        for _ in range(10):
            pid = os.fork()
            if pid == 0:  # the child: never back into pytest
                code = 1
                try:
                    touch(inherited.buffer)
                    wait_until_released(dump_file)
                    opened = open_source(other)
                    touch(opened.buffer)
                    wait_until_released(other)
                    opened.close()
                    code = 0
                finally:
                    os._exit(code)
            assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    finally:
        inherited.close()
