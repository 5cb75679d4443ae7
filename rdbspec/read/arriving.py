"""A live server's RDB parsed as it arrives, for a command that reads it once (issue 31).

The server sends its RDB as it would to a replica (`rdbspec.net.replica.take_rdb`); a thread
receives it into an anonymous mapping, each byte at its offset in the RDB, while the reader parses
the bytes already there. The generated parsers read one contiguous buffer: the mapping is address
space enough for any RDB (in the diskless form its length is not known before the end), reserved
without memory (`MAP_NORESERVE`), and only the pages written take memory. It is a shared mapping:
the kernel counts a private writable one against the data limit (RLIMIT_DATA, `ulimit -d`) however
little of it is used, a shared one against the address space limit only (`ulimit -v`); where the
address space is not to be had, the RDB is received into a temporary file instead.

The reader asks for more when a record runs past the bytes at hand (`ArrivingSource.more`: the
record is read again from its start once at least as many bytes again have come, so a record of
any size is read a number of times that grows with the logarithm of its size), and tells which
bytes it has passed (`ArrivingSource.passed`): their pages are given back to the system, so memory
stays flat whatever the RDB's size (`MADV_REMOVE`: a shared mapping's pages live in the kernel's
shared memory, which only that frees). The reader must be done with a key's value when it passes it:
`Dump.keys` passes a record once the key after the next is asked for (a consumer may hold the key it
has and the one before). The receiving thread stays at most `AHEAD` bytes ahead of the reader
unless the reader waits for them: a server does not buffer an RDB for a slow replica (the fork
writes it as the socket takes it), and a replica that reads nothing for `repl-timeout` is dropped
(redis src/replication.c replicationCron), a lost connection that names the byte it reached.

The CRC-64 of the RDB is computed as its bytes come, 8 bytes behind (the trailer is not summed):
the bytes are given back before the trailer is read (`Dump._finish` takes the sum from here).
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import sys
import threading

from ..atomic import AtomicFile
from ..net.connection import Address, Tls
from ..net.replica import take_rdb
from .checksum import crc64_update
from .source import PROBE_BYTES, VCS_MAGIC, Progress, Source, open_source, unwrap

# Python's mmap names MAP_NORESERVE from 3.13 only; this is Linux's <sys/mman.h> value
MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)
RESERVED = 1 << 40  # address space for the RDB, whatever its length: taken only as pages are written
AHEAD = 64 << 20  # bytes received beyond those the reader has passed before the receiving waits
MORE_AT_LEAST = 1 << 16  # bytes a reader that ran out waits for, at least
RELEASE_EVERY = 4 << 20  # passed bytes given back together (one madvise call)
OPENED_WITH = 64  # bytes received before the source is given to the parser (the header, the envelope's magic)
TRAILER_BYTES = 8  # the CRC-64 after EOF (spec rdb.ksy `checksum`), not part of the sum


def open_arriving(url: str, save: str | os.PathLike[str] | None = None, progress: Progress | None = None,
                  tls: Tls | None = None) -> Source:
    """The RDB of the server `url` names (a rediss:// one with `tls`' options), parsed as it
    arrives, a copy kept in `save`, `progress` told of its bytes as they come; as
    `source.open_source` receives it where an RDB cannot arrive into a mapping (not Linux (whose
    anonymous mappings reserve no memory), or a 32-bit build), and unwrapped from a
    compressed one once it has come whole."""
    mapping = _reserve()
    if mapping is None:
        return open_source(url, save, progress, tls)
    address = Address.parse(url, tls)
    keep = AtomicFile(save, durable=True) if save is not None else None  # ended by the receiving thread
    arriving = ArrivingSource(mapping, address, keep, progress)
    probe = arriving.buffer[:min(arriving.size, PROBE_BYTES)]
    if not probe.startswith(VCS_MAGIC):
        return arriving
    with contextlib.closing(arriving):
        arriving.whole()
        return unwrap(io.BytesIO(arriving.buffer[len(probe):arriving.size]), probe, address.url)


def _reserve() -> mmap.mmap | None:
    """`RESERVED` bytes of address space, shared and anonymous; None where it is not to be had
    (not Linux, whose anonymous mappings reserve no memory with MAP_NORESERVE; a 32-bit build; a
    limit on the address space)."""
    if sys.platform != "linux" or sys.maxsize < RESERVED:
        return None
    try:
        return mmap.mmap(-1, RESERVED, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS | MAP_NORESERVE)
    except OSError:
        return None


class ArrivingSource(Source):
    """The RDB of the server at `address` as it arrives; `size` is the bytes received so far.
    `save` (an output being written) gets a copy of every byte, and takes its name once the last
    has come (`rdbspec.atomic`); a transfer that does not complete discards it
    (no half dump under the user's name)."""

    grows = True

    def __init__(self, mapping: mmap.mmap, address: Address, save: AtomicFile | None = None,
                 progress: Progress | None = None):
        self._address = address
        self._save = save
        self._progress = progress
        self._changed = threading.Condition()
        self._mapping = mapping
        self._received = 0
        self._passed = 0  # the reader is done with the bytes before
        self._released = 0  # the pages before were given back
        self._summed = 0  # the CRC-64 covers the bytes before
        self._crc = 0
        self._wanted = False  # the reader waits for bytes
        self._complete = False
        self._closed = False
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._receive, name="rdbspec-receive", daemon=True)
        self._thread.start()
        with self._changed:
            self._changed.wait_for(lambda: self._ended() or self._received >= OPENED_WITH)
            self._raise_failure()
        super().__init__(mapping, address.url)

    # -- the receiving thread ----------------------------------------------------------------

    def _receive(self) -> None:
        try:
            take_rdb(self._address, self, self._progress)
            with self._changed:
                save, self._save = self._save, None
            if save is not None:
                save.commit()
        except BaseException as err:  # noqa: BLE001 - handed to the reader, which raises it
            self._discard_save()
            with self._changed:
                self._failure = err
                self._changed.notify_all()
            return
        with self._changed:
            self._complete = True
            self._changed.notify_all()

    def write(self, data: bytes | bytearray) -> int:
        """Bytes of the RDB, after those received before (`take_rdb` calls this)."""
        save = self._save
        if save is not None:
            save.binary.write(data)
        with self._changed:
            self._changed.wait_for(lambda: self._closed or self._wanted or self._received - self._passed < AHEAD)
            if self._closed:
                raise ConnectionAbortedError(None, "the reader stopped", self._address.url)
            start, end = self._received, self._received + len(data)
            if end > RESERVED:
                raise ConnectionAbortedError(None, f"an RDB over {RESERVED} bytes", self._address.url)
            self._mapping[start:end] = data
            summed_to = end - TRAILER_BYTES
            if summed_to > self._summed:
                with memoryview(self._mapping) as view:
                    self._crc = crc64_update(self._crc, view[self._summed:summed_to])
                self._summed = summed_to
            self._received = end
            self._changed.notify_all()
        return len(data)

    # -- the reader's side -------------------------------------------------------------------

    def _ended(self) -> bool:
        """Whether the transfer is over: every byte come, or failed."""
        return self._complete or self._failure is not None

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    @property
    def size(self) -> int:
        return self._received

    def more(self, start: int, end: int) -> bool:
        """Waits until the record at `start`, which ran past `end`, has at least as many bytes
        again as it had, or the RDB has come whole; False when none came after `end` (the RDB ends
        there). A failed transfer is raised (a lost connection names the byte reached)."""
        with self._changed:
            have = end
            enough = have + max(have - start, MORE_AT_LEAST)
            self._wanted = True
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: self._ended() or self._received >= enough)
            finally:
                self._wanted = False
            self._raise_failure()
            return self._received > have

    def passed(self, offset: int) -> None:
        """The reader is done with the bytes before `offset`: their pages are given back (a read of
        them would see zeros), and the receiving may go on."""
        if offset - self._released < RELEASE_EVERY:
            self._passed = max(self._passed, offset)
            return
        with self._changed:
            self._passed = max(self._passed, offset)
            until = min(self._passed, self._summed) // mmap.PAGESIZE * mmap.PAGESIZE
            if until > self._released:
                self._mapping.madvise(mmap.MADV_REMOVE, self._released, until - self._released)
                self._released = until
            self._changed.notify_all()

    def whole(self) -> tuple[int, int]:
        """Waits for the RDB's last byte: (the bytes before its last 8, their CRC-64)."""
        with self._changed:
            self._changed.wait_for(self._ended)
            self._raise_failure()
            return self._summed, self._crc

    def release(self) -> None:
        """Nothing: the pages of bytes that arrived hold them (`passed` gives back those read)."""

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            complete = self._complete
        if not complete:  # the reader stopped first: the thread ends at its next bytes
            self._discard_save()
        super().close()

    def _discard_save(self) -> None:
        with self._changed:
            save, self._save = self._save, None
        if save is not None:
            save.discard()
