"""Dragonfly snapshots: the envelopes between records, and DFS snapshot sets.

Envelopes (notes §9.2, §9.3). The generated `rdb` parser reads them as raw records; this
module expands them between the generated parsers, so `Dump.keys()` sees plain records:

* COMPRESSED_ZSTD_BLOB_START (201) / COMPRESSED_LZ4_BLOB_START (202): `len csize` and one zstd
  or LZ4 frame (with its content size) whose bytes are a sequence of top-level records
  (dragonfly src/server/rdb_save.cc RdbSerializer::CompressBlob; the loader appends a virtual
  COMPRESSED_BLOB_END and switches back, src/server/detail/decompress.cc).
* TAGGED_CHUNK (224): `u32 stream_id`, `u32 length`, payload. An entry that was flushed in
  several pieces is sent as chunks with one stream id (MemBufController::MakeTagHeader,
  BuildBlob, TagAndDrainToDefaultBuffer; ids come from `next_id_++` in StartEntry and are never
  reused). The first chunk holds the entry's start (SELECTDB / EXPIRETIME_MS / DF_MASK, type,
  key, first part of the value); the later ones hold the rest of the value bytes. Chunks of
  different entries interleave with each other and with plain records; a blob may hold chunks.

How an entry is known to be complete. Dragonfly's loader keeps per-stream state and resumes
inside the value (RdbLoader::LoadValueChunk). The generated parsers cannot resume, so the chunk
payloads of a stream are concatenated and parsed as records from the start; every value layout
is self-delimiting (counts and lengths), so a prefix of an entry always ends in a
`TruncatedError` and the complete bytes parse up to and including a key/value record. The parse
is retried when the stream's bytes have doubled since the last try (small streams at every
chunk) and once more for every open stream at EOF, so a value split into n chunks costs
O(size · log n), not O(size · n). A reassembled entry is yielded when it is found complete,
which for a stream retried late is a little after its last chunk (Dragonfly's own load order
is also completion order). A chunk that opens a stream but does not parse as the start of an
entry, bytes left after an entry's key/value, and a stream still incomplete at EOF are errors
naming the chunk's offset.

Streams (notes §6.7) need nothing of their own: Dragonfly writes type 21 byte for byte as Redis
does (RdbSerializer::SaveStreamObject, SaveStreamPEL, SaveStreamConsumers), and type 15 before
v1.27 (no first ID, entries_read or active time). It differs in where the bytes go, not in
them: a node listpack kept compressed in memory is written uncompressed (then maybe LZF as any
string), a big stream is cut into tagged chunks after a node listpack (never after the last), it
never writes IDMP (26) data, and its checksum is always zero.

DFS sets (notes §9.1; src/server/detail/save_stages_controller.cc SaveStagesController::SaveDfs,
ExtendDfsFilenameWithShard, src/server/detail/snapshot_storage.cc): `<name>-summary.dfs` holds
the global AUX (`lua` scripts, `shard-count`...) and no keys; `<name>-NNNN.dfs` holds shard NNNN.
`rdbspec.read.dumpfile.DfsDump` presents the set as one dump.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from typing import Any

from rdbspec_generated import Io, ParseError, RdbError, TruncatedError
from rdbspec_generated.enums import RecordKind

from . import backend, location

# the record kinds this module reads by name (the spec's `rdb::record_kind`)
ZSTD_BLOB, LZ4_BLOB = RecordKind.COMPRESSED_ZSTD_BLOB, RecordKind.COMPRESSED_LZ4_BLOB
TAGGED_CHUNK, EOF, KEY_VALUE = RecordKind.TAGGED_CHUNK, RecordKind.EOF, RecordKind.KEY_VALUE
BLOB_KINDS = {ZSTD_BLOB: "zstd", LZ4_BLOB: "lz4"}
ENVELOPES = frozenset((ZSTD_BLOB, LZ4_BLOB, TAGGED_CHUNK))

# A blob holds at most 1 MiB of records before compression (RdbSerializer::CompressBlob:
# kMaxStrSizeToCompress) plus tag headers; anything far larger is corrupt, not allocated.
MAX_BLOB_CONTENT = 64 << 20
# Below this many bytes a split entry is re-parsed at every chunk.
EAGER_REPARSE_BYTES = 1 << 20

Item = tuple[Any, int, int]  # (record, start offset, end offset)


class _ChunkStream:
    """The bytes received so far for one TAGGED_CHUNK stream id."""

    __slots__ = ("stream_id", "first_offset", "parts", "size", "tried_at", "chunks", "last_error")

    def __init__(self, stream_id: int, first_offset: int):
        self.stream_id = stream_id
        self.first_offset = first_offset
        self.parts: list[bytes] = []
        self.size = 0
        self.tried_at = 0
        self.chunks = 0
        self.last_error: TruncatedError | None = None

    def add(self, payload: bytes) -> None:
        self.parts.append(bytes(payload))
        self.size += len(payload)
        self.chunks += 1

    def data(self) -> bytes:
        if len(self.parts) > 1:
            self.parts = [b"".join(self.parts)]
        return self.parts[0]


class RecordExpander:
    """Dragonfly's compressed blobs and tagged chunks expanded into the records they hold, as
    (record, start, end) items: a record from a blob or a reassembled entry has `start` = the
    blob's or the first chunk's offset and `end - start` = its own (uncompressed) size. The
    reader (`dumpfile.Dump`) hands it each envelope record (`ENVELOPES`) and, at EOF, asks for the
    entries of chunk streams still open (`finish`)."""

    def __init__(self, rdb: Any, parsers: str | None = None):
        self.rdb = rdb  # the generated root: what the records inside are parsed under
        self.read_record = backend.parser("rdb", parsers).Record._read
        self.streams: dict[int, _ChunkStream] = {}

    def finish(self, eof_offset: int) -> Iterator[Item]:
        """What the chunk streams still open hold at EOF (an error if one is incomplete)."""
        return self._finish_streams(eof_offset) if self.streams else iter(())

    # -- one record ------------------------------------------------------------------------

    def expand(self, record: Any, start: int, end: int) -> Iterator[Item]:
        kind = record.kind
        if kind in BLOB_KINDS:
            yield from self._blob(record, start, end)
        elif kind == TAGGED_CHUNK:
            yield from self._chunk(record, start, end)
        else:
            yield record, start, end

    def _parse(self, data: bytes, origin: int, what: str, stop_after_key: bool = False) -> tuple[list[Item], int]:
        """Parses `data` as a sequence of top-level records; errors name `origin`, the file
        offset of the blob or first chunk, and the position inside `data`."""
        io = Io(data, 0, len(data), 0, origin)
        pos = 0
        out: list[Item] = []
        while pos < len(data):
            record, after = self.read_record(io, pos, self.rdb, self.rdb)
            if record.kind == EOF:
                raise ParseError(f"EOF opcode inside {what}", origin, "rdb:record.opcode", pos)
            out.append((record, pos, after))
            pos = after
            if stop_after_key and record.kind == KEY_VALUE:
                break
        return out, pos

    def _blob(self, record: Any, start: int, end: int) -> Iterator[Item]:
        codec = BLOB_KINDS[record.kind]
        data = decompress(codec, record.body.data, start)
        what = f"the {codec} blob at byte {start}"
        records, _ = self._parse(data, start, what)
        for inner, a, b in records:
            yield from self.expand(inner, start, start + (b - a))

    def _chunk(self, record: Any, start: int, end: int) -> Iterator[Item]:
        body = record.body
        sid = body.stream_id
        stream = self.streams.get(sid)
        opening = stream is None
        if stream is None:
            stream = self.streams[sid] = _ChunkStream(sid, start)
        stream.add(body.payload)
        if opening or stream.size <= EAGER_REPARSE_BYTES or stream.size >= 2 * stream.tried_at:
            yield from self._try_complete(stream, opening, start)

    def _try_complete(self, stream: _ChunkStream, opening: bool, chunk_offset: int) -> Iterator[Item]:
        stream.tried_at = stream.size
        data = stream.data()
        what = f"the entry of TAGGED_CHUNK stream {stream.stream_id} (first chunk at byte {stream.first_offset})"
        try:
            records, pos = self._parse(data, stream.first_offset, what, stop_after_key=True)
        except TruncatedError as err:
            stream.last_error = err  # needs more chunks
            return
        except ParseError as err:
            reason = err.reason if len(err.reason) <= 100 else err.reason[:97] + "..."
            if opening:
                raise ParseError(f"TAGGED_CHUNK for unknown stream id {stream.stream_id} does not start an entry "
                                 f"({reason}, at byte {err.inner_offset} of its payload)", chunk_offset,
                                 "dragonfly:tagged_chunk.payload") from None
            raise ParseError(f"{reason} (at byte {err.inner_offset} of {what})", stream.first_offset,
                             err.spec_path) from None
        if not records or records[-1][0].kind != KEY_VALUE:
            return  # only per-key prefixes so far
        del self.streams[stream.stream_id]
        if pos != len(data):
            raise ParseError(f"{len(data) - pos} bytes follow the key/value in {what}", stream.first_offset,
                             "dragonfly:tagged_chunk.payload", pos)
        for inner, a, b in records:
            yield from self.expand(inner, stream.first_offset, stream.first_offset + (b - a))

    def _finish_streams(self, eof_offset: int) -> Iterator[Item]:
        for stream in sorted(self.streams.values(), key=lambda s: s.first_offset):
            if stream.tried_at != stream.size:
                yield from self._try_complete(stream, False, stream.first_offset)
        if self.streams:
            stream = min(self.streams.values(), key=lambda s: s.first_offset)
            err = stream.last_error
            detail = f"; {err.spec_path} {err.reason} at byte {err.inner_offset} of it" if err is not None else ""
            raise ParseError(f"TAGGED_CHUNK stream {stream.stream_id} is incomplete at EOF (byte {eof_offset}): "
                             f"{stream.chunks} chunk(s), {stream.size} bytes of an entry{detail}; first chunk",
                             stream.first_offset, "dragonfly:tagged_chunk")


def decompress(codec: str, data: bytes, offset: int) -> bytes:
    """One LZ4 or zstd frame that must declare its content size (Dragonfly's decompressor
    requires it: src/server/detail/decompress.cc)."""
    path = "dragonfly:compressed_blob.data"
    data = bytes(data)
    out: bytes
    try:
        if codec == "lz4":
            import lz4.frame

            size = lz4.frame.get_frame_info(data)["content_size"]
            if not size:
                raise ParseError("LZ4 frame without a content size", offset, path)
            if size > MAX_BLOB_CONTENT:
                raise ParseError(f"LZ4 frame declares {size} bytes, more than a blob holds", offset, path)
            out, used = lz4.frame.decompress(data, return_bytes_read=True)
            if used != len(data):
                raise ParseError(f"{len(data) - used} bytes follow the LZ4 frame", offset, path)
        else:
            import zstandard

            size = zstandard.frame_content_size(data)
            if size < 0:
                raise ParseError("zstd frame without a content size", offset, path)
            if size > MAX_BLOB_CONTENT:
                raise ParseError(f"zstd frame declares {size} bytes, more than a blob holds", offset, path)
            out = zstandard.ZstdDecompressor().decompress(data)
    except RdbError:
        raise
    except Exception as err:  # noqa: BLE001 - lz4 and zstandard raise their own error types
        raise ParseError(f"{codec} blob does not decompress ({err})", offset, path) from None
    if len(out) != size:
        raise ParseError(f"{codec} blob decompresses to {len(out)} bytes, its frame says {size}", offset, path)
    return out


# -- DFS snapshot sets -----------------------------------------------------------------------

_SHARD = re.compile(r"^(?P<base>.+)-(?P<num>\d{4})\.dfs$")
SUMMARY_NAME = re.compile(r"^(?P<base>.+)-summary\.dfs$")


def is_dfs(path: str | os.PathLike[str]) -> bool:
    """True for a `-summary.dfs` file, a `-NNNN.dfs` shard file, or a directory."""
    name = os.fspath(path)
    if name == "-" or location.is_server(name):
        return False
    return is_dfs_name(name) or location.path_of(name).is_dir()


def is_dfs_name(path: str | os.PathLike[str]) -> bool:
    """Whether a file's name is a DFS set's: `<name>-summary.dfs` or `<name>-NNNN.dfs`."""
    name = location.path_of(path).name
    return bool(SUMMARY_NAME.match(name) or _SHARD.match(name))


def find_summary(path: str | os.PathLike[str]) -> location.AnyPath:
    """The summary file of the set that `path` names (notes §9.1: loading starts from it; the
    shard files are found by replacing "summary" with the shard number)."""
    p = location.path_of(path)
    if p.is_dir():
        found = sorted((c for c in p.iterdir() if SUMMARY_NAME.match(c.name)), key=str)
        if not found:
            raise IsADirectoryError(errno.EISDIR, "a directory, and not a Dragonfly snapshot set (no "
                                    "<name>-summary.dfs file in it): give a dump file", str(p))
        if len(found) > 1:
            raise RdbError(f"{p}: more than one DFS snapshot set here ({', '.join(c.name for c in found)})")
        return found[0]
    m = _SHARD.match(p.name)
    if m:
        summary = p.with_name(f"{m['base']}-summary.dfs")
        if not summary.exists():
            raise RdbError(f"{summary}: summary file of the shard file {p.name} is missing")
        return summary
    if not p.exists():
        raise FileNotFoundError(2, "No such file or directory", str(p))
    return p


def shard_files(summary: location.AnyPath, shard_count: int | None) -> list[location.AnyPath]:
    """The shard files of the set, checked against `shard-count`: a missing or an extra one
    is an error naming it."""
    named = SUMMARY_NAME.match(summary.name)
    if named is None:
        raise RdbError(f"{summary}: not the summary file of a DFS snapshot set (<name>-summary.dfs)")
    base = named["base"]
    present = {}
    for c in summary.parent.iterdir():
        m = _SHARD.match(c.name)
        if m and m["base"] == base:
            present[int(m["num"])] = c
    if shard_count is None:  # no shard-count AUX: take the run 0000, 0001, ...
        shard_count = 0
        while shard_count in present:
            shard_count += 1
    for n in range(shard_count):
        if n not in present:
            raise RdbError(f"{summary.parent / f'{base}-{n:04d}.dfs'}: shard file missing "
                           f"(the summary says shard-count {shard_count})")
    extra = sorted(n for n in present if n >= shard_count)
    if extra:
        raise RdbError(f"{present[extra[0]]}: extra shard file (the summary says shard-count {shard_count})")
    return [present[n] for n in range(shard_count)]


def aux_value(aux: list[tuple[bytes, bytes]], key: bytes) -> bytes | None:
    for k, v in aux:
        if k == key:
            return v
    return None


def shard_count(summary: location.AnyPath, aux: list[tuple[bytes, bytes]]) -> int | None:
    count = aux_value(aux, b"shard-count")
    try:
        return int(count) if count is not None else None
    except ValueError:
        raise RdbError(f"{summary}: AUX shard-count {count!r} is not a number") from None
