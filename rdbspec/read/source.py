"""Where the bytes come from: a file (mapped, never read whole), bytes, or a pipe/stdin.

A Valkey dump saved with `rdbcompression lz4` (spec/vcs.ksy: a VCS envelope, then the RDB file as
one LZ4 frame) is unwrapped here as it is read: the frame is decoded a bounded piece at a time into
a temporary file, which is mapped as a plain dump would be (`Source.compressed` names the codec),
so a compressed dump of any size never sits in memory, from a file or from stdin alike. Valkey's
loader does the same (valkey src/rdb.c rdbLoad, rdbInitStreamReader): input that does not start
with the envelope's magic is a plain file, read as it is.

A live server (`redis://…`, `rediss://…`) sends its RDB as it would to a replica
(`rdbspec.net.replica`): received here into a temporary file (or the file `save` names) and
mapped once it is complete; a reader that is done with each key before the one after the next
parses it as it arrives instead (`rdbspec.read.arriving`: a source that `grows`).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import mmap
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING, Protocol

from rdbspec_generated import Io, ParseError, TruncatedError
from rdbspec_generated.enums import VcsCodec

from ..atomic import AtomicFile
from ..errors import FrameChecksumError
from . import backend, location

if TYPE_CHECKING:  # the modules of live servers load ssl: only the commands that read one import them
    from ..net.connection import Address, Tls

Buffer = bytes | mmap.mmap  # what a source reads from: bytes given, or a file mapped


class Readable(Protocol):
    """What a dump is read from in order: a file, a pipe, an object of a store."""

    def read(self, size: int = -1, /) -> bytes: ...


class Source:
    """A read-only buffer over the input. `close()` closes the file; a mapping stays valid until
    nothing refers to it, so values decoded lazily from it (stream nodes) outlive the dump."""

    def __init__(self, buffer: Buffer, name: str, closers: list[IO[bytes]] | None = None,
                 compressed: str | None = None):
        self.buffer = buffer
        self.name = name
        # the codec of Valkey's whole-file compression the dump was unwrapped from ("lz4"), None
        # for a plain one: then `buffer` holds the RDB file decoded, and its offsets are of that
        self.compressed = compressed
        self._closers = closers or []
        # a mapped file's pages are released until close() or this object's end
        self._stop_releasing: Callable[[], object] | None = None
        if isinstance(buffer, _Mapping) and hasattr(mmap, "MADV_DONTNEED"):
            _releaser.track(buffer, RELEASE_EVERY_S)
            self._stop_releasing = weakref.finalize(self, _releaser.untrack, buffer)

    # whether bytes are still to come: `size` grows, `more` waits for them (`arriving.ArrivingSource`)
    grows = False

    @property
    def size(self) -> int:
        """The bytes there are to read."""
        return len(self.buffer)

    def more(self, start: int, end: int) -> bool:
        """Whether more bytes came for the record at `start` that ran past `end` (never: all are here)."""
        return False

    def passed(self, offset: int) -> None:
        """The reader is done with the bytes before `offset` (a source that grows gives them back)."""

    def whole(self) -> tuple[int, int] | None:
        """Of a source that grows, once its last byte has come: (the bytes before its last 8,
        their CRC-64, summed as they came); None when all are here (summed when asked)."""
        return None

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


def release_pages(buffer: Buffer, start: int, end: int) -> None:
    """Drops the pages of a mapped file that hold bytes [start, end) from this process, at once: a
    reader of a long value a piece at a time calls it after each piece, so that the resident set does
    not wait for the releasing thread, which a loaded machine may keep from running for a while as
    the read goes on at a gigabyte a second. Nothing for bytes."""
    if isinstance(buffer, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        first = start - start % mmap.PAGESIZE
        buffer.madvise(mmap.MADV_DONTNEED, first, min(end, len(buffer)) - first)


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


def _map(handle: IO[bytes], name: str, compressed: str | None = None) -> Source:
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        handle.close()
        return Source(b"", name, compressed=compressed)
    return Source(_Mapping(handle.fileno(), 0, access=mmap.ACCESS_READ), name, [handle], compressed)


# (bytes received, the length announced or None) while a live server's RDB comes
Progress = Callable[[int, "int | None"], None]


def open_source(path: str | os.PathLike[str], save: str | os.PathLike[str] | None = None,
                progress: Progress | None = None, tls: Tls | None = None) -> Source:
    """Maps a regular file; spools a pipe, stdin (`-`), an object of a store (a URL:
    `location`) or a live server's RDB (`redis://`, `rediss://` with `tls`' options) to a
    temporary file as it is read, so memory never holds the whole input. A compressed Valkey dump
    is unwrapped on the way (see the module doc). Of a server, `save` names the file that keeps
    the RDB (instead of a temporary one) and `progress` is told of its bytes as they come."""
    name = os.fspath(path)
    if location.is_server(name):
        return _from_server(name, save, progress, tls)
    if name == "-":
        return _spool(sys.stdin.buffer, "<stdin>")
    if location.is_url(name):
        with location.open_stream(name) as stream:
            return _spool(stream, name)
    handle = open(location.local_path(name), "rb")  # noqa: SIM115 - closed by Source.close
    try:
        regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except BaseException:
        handle.close()
        raise
    if regular:
        return _file(handle, name)
    with handle:
        return _spool(handle, name)


def _file(handle: IO[bytes], name: str) -> Source:
    """A regular file read from its start: mapped, or unwrapped when compressed."""
    try:
        probe = _probe(handle)
        if not probe.startswith(VCS_MAGIC):
            return _map(handle, name)
    except BaseException:
        handle.close()
        raise
    with handle:
        return unwrap(handle, probe, name)


def ranges_source(url: str, size: int, ranges: list[tuple[int, int]]) -> Source:
    """The object `url` names (`size` bytes), of which only `ranges` are read (`location.fetch`):
    a reader of those ranges (a split of it) maps it as it maps a file."""
    return _map(location.fetch(url, size, ranges), url)


def bytes_source(data: bytes, name: str = "<bytes>") -> Source:
    """A dump given as bytes (`rdbspec.parse`); a compressed Valkey dump is unwrapped into a
    temporary file, as `open_source` does."""
    if not data.startswith(VCS_MAGIC):
        return Source(data, name)
    stream = io.BytesIO(data)
    return unwrap(stream, _probe(stream), name)


def _spool(stream: Readable, name: str) -> Source:
    """`stream` read to its end into a temporary file, mapped (unwrapped first when compressed)."""
    probe = _probe(stream)
    if probe.startswith(VCS_MAGIC):
        return unwrap(stream, probe, name)
    spool = tempfile.TemporaryFile(prefix="rdbspec-")
    try:
        spool.write(probe)
        shutil.copyfileobj(stream, spool, 1 << 20)
        spool.flush()
    except BaseException:
        spool.close()
        raise
    return _map(spool, name)


def _from_server(url: str, save: str | os.PathLike[str] | None, progress: Progress | None,
                 tls: Tls | None) -> Source:
    """The RDB of the server `url` names, taken as a replica takes it, into `save` (`receive`) or
    an anonymous temporary file, then mapped (unwrapped first when compressed)."""
    from ..net.connection import Address  # loaded by the commands that read a server only (ssl)
    from ..net.replica import take_rdb

    address = Address.parse(url, tls)
    if save is not None:
        receive(address, save, progress)
        return _file(open(save, "rb"), address.url)  # noqa: SIM115 - closed by Source.close
    spool = tempfile.TemporaryFile(prefix="rdbspec-")
    try:
        take_rdb(address, spool, progress)
        spool.flush()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return _file(spool, address.url)


def receive(address: Address, into: str | os.PathLike[str], progress: Progress | None = None,
            durable: bool = True) -> None:
    """The RDB of the live server at `address`, taken as a replica takes it, into the file `into`,
    written beside it and renamed once whole (`rdbspec.atomic`; fsynced as a dump unless
    not `durable`: a file removed at the end): a transfer that does not complete leaves `into` as
    it was (no half dump under the user's name)."""
    from ..net.replica import take_rdb

    with AtomicFile(into, durable) as out:
        take_rdb(address, out.binary, progress)


# -- Valkey's whole-file compression (rdbcompression lz4): spec/vcs.ksy --------------------------

VCS_MAGIC = b"VCS"  # what the envelope starts with (spec vcs.ksy `magic`; valkey src/compression_stream.h)
CODEC_OFFSET = len(VCS_MAGIC) + 1  # the codec byte: after the magic and the version (spec vcs.ksy)
PROBE_BYTES = 64  # read first to tell the envelope from a plain file: more than the envelope holds
FRAME_READ = 1 << 20  # compressed bytes read at a time
DECODED_PIECE = 4 << 20  # decoded bytes taken from the decoder at a time: memory stays bounded whatever the ratio
# the LZ4 frame errors (lz4 src/lz4frame.h LZ4F_errorCodes) of a checksum that does not match
_LZ4_CHECKSUM_ERRORS = ("ERROR_blockChecksum_invalid", "ERROR_contentChecksum_invalid", "ERROR_headerChecksum_invalid")
_FRAME = "vcs:vcs.frame"  # the spec path errors in the frame name


def _probe(stream: Readable) -> bytes:
    """The first `PROBE_BYTES` of `stream` (fewer at its end), read from where it is."""
    got = b""
    while len(got) < PROBE_BYTES:
        chunk = stream.read(PROBE_BYTES - len(got))
        if not chunk:
            break
        got += chunk
    return got


def unwrap(stream: Readable, probe: bytes, name: str) -> Source:
    """The RDB file inside a VCS envelope: `probe` (the input's first bytes, which hold the
    envelope) then the rest of `stream`, its frame decoded into a temporary file as it is read.
    The envelope is read by the parser generated from spec/vcs.ksy (its checks are the loader's:
    valkey src/compression_stream.c readVcsEnvelope)."""
    envelope = backend.parser("vcs").Vcs._read(Io(probe, 0, len(probe)), 0, None, None)[0]
    start = len(probe) - len(envelope.frame)  # where the frame starts
    if envelope.codec != VcsCodec.LZ4:  # Valkey built with Zstandard (rdbcompression zstd)
        codec = VcsCodec(envelope.codec).name.lower()
        raise ParseError(f"a {codec}-compressed dump (rdbcompression {codec}): rdbspec unwraps LZ4 frames only",
                         CODEC_OFFSET, "vcs:vcs.codec_id")
    frame = itertools.chain((probe[start:],), iter(lambda: stream.read(FRAME_READ), b""))
    spool = tempfile.TemporaryFile(prefix="rdbspec-")
    try:
        _decode_lz4(frame, start, spool)
        spool.flush()
    except BaseException:
        spool.close()
        raise
    return _map(spool, name, "lz4")


def _decode_lz4(frame: Iterable[bytes], offset: int, out: IO[bytes]) -> None:
    """Decodes the LZ4 frame that `frame` (its bytes in pieces, the first at file offset
    `offset`) starts with into `out`, `DECODED_PIECE` bytes at most at a time, verifying the
    checksums the frame declares. What follows the frame's end is not read: Valkey's loader
    stops there (valkey src/compression_stream.c streamReaderFinish, tests/integration/
    rdb-compression.tcl "RDB loader ignores trailing data after an LZ4 frame")."""
    import lz4.frame

    decoder = lz4.frame.LZ4FrameDecompressor()
    for piece in frame:
        size = len(piece)
        while True:
            try:
                out.write(decoder.decompress(piece, max_length=DECODED_PIECE))
            except RuntimeError as err:  # lz4 reports a bad frame so (LZ4F_decompress failed with code: ...)
                raise _frame_error(str(err), offset) from None
            piece = b""
            if decoder.eof or decoder.needs_input:
                break
        if decoder.eof:
            return
        offset += size
    raise TruncatedError("the LZ4 frame ends before its end mark: the file is cut short", offset, _FRAME)


def _frame_error(message: str, offset: int) -> ParseError | FrameChecksumError:
    """What an LZ4 frame that does not decode ends in: a checksum that does not match (the
    frame's header, a block or the content), or a frame that is not one (exit 3)."""
    code = message.rsplit(" ", 1)[-1]
    if code in _LZ4_CHECKSUM_ERRORS:
        return FrameChecksumError(f"the LZ4 frame's checksum does not match its bytes ({code}), in the bytes "
                                  f"read from byte {offset} on", offset)
    return ParseError(f"the LZ4 frame does not decode ({code})", offset, _FRAME)
