"""Splitting one dump into parts that separate workers read: a fast index pass over the records.

The pass walks the key records without decoding their values (the generated parsers step over
blobs in O(1); no `KeyRecord` is made) and cuts the file at the end of a key record, where no key
metadata is pending, every `split_size` bytes. A key bigger than `split_size` gets a split of its
own; with `parts`, a value that workers may read in parts (`values.CUTS`: a stream's or a
quicklist's nodes, a hashtable-encoded list's, set's, hash's or sorted set's elements) is cut
into at most that many splits of `split_size` bytes of it or more, each decoded alone. Reading
every split in order gives exactly the keys (and elements) of reading the file whole.

What cannot be split is one split: a file not over `split_size`, a Dragonfly shard (compressed
blobs and tagged chunks carry state from record to record), a compressed Valkey dump (one frame,
decoded from its start), or stdin. The hash templates of RDB 15 (HASH_TEMPLATE records, which keys
of types 30 and 32 name) carry state too: a worker reads the records before the databases before
its split (`dumpfile.Dump.seek`), where a server writes them; one that comes later (a loader takes
it anywhere) ends the cutting, the rest of the file being one split that reads it.

A reader of the stream tables finds rows in stream keys only. For it (`streams_only=True`) a
split of keys holding no stream is left out, except the last, which reads the end of the file
and its checksum: the pass read those records with the very parsers a reader would (neither
decodes a value that is not a stream's), so that reader would find no row and no problem there.
Its work is then done once, by the pass, rather than twice.

A process plans a file once per set of parameters: the plan is kept (`_planned`, 256 of them), keyed by
the file's identity (device, inode, size, modification time in ns), so a session reading several
tables of the same dumps, or the same query again, does not repeat the pass; a dump written anew
(the server writes a temporary file and renames it) is planned anew.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rdbspec_generated import Io

from . import backend, dumpfile, location
from .checksum import crc64
from .source import ranges_source
from .streams import NodeEntries, StreamNode, walk_nodes
from .values import CUTS, STREAM_KINDS


@dataclass(frozen=True)
class Split:
    """The records of `path` starting in [start, end), read with database `db` selected at
    `start` (start None: from the header on; end None: through EOF and the checksum). With
    `part` (the byte offset of its first element or node, that one's index, their count), the
    split holds one key of `values.CUTS` and its value is those elements or nodes alone, read
    there without reading the rest of the key."""

    path: str
    start: int | None = None
    end: int | None = None
    db: int = 0
    part: tuple[int, int, int] | None = None
    # a split of a store's object (a URL), read in ranges (`open_split`): the object's size, the
    # end of what a reader reads before `start` (`Dump.head_extent`), and for the last split the
    # planning pass's (bytes before the trailer, their CRC-64), which its reader has not all read
    size: int | None = None
    head_end: int = 0
    crc: tuple[int, int] | None = None


def plan(path: str, split_size: int, parts: int = 0, streams_only: bool = False) -> list[Split]:
    """The splits of one file. A problem met by the pass ends planning there: the last split
    runs from the last good boundary to the end, and its reader meets (and reports) it. With
    `streams_only`, splits of keys without a stream are left out (the last one is kept)."""
    if split_size <= 0:
        raise ValueError(f"split size must be positive, got {split_size}")
    if location.is_url(path):
        info = location.stat(path)
        if info.size <= split_size:
            return [Split(path)]
        return list(_planned(path, (info.size, info.mtime_ns), split_size, 0, streams_only))
    stat = os.stat(path)
    if stat.st_size <= split_size:
        return [Split(path)]
    return list(_planned(path, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns), split_size,
                         parts, streams_only))


@lru_cache(maxsize=256)
def _planned(path: str, identity: tuple[int | None, ...], split_size: int, parts: int,
             streams_only: bool) -> tuple[Split, ...]:
    """`plan` of the file `identity` names (device, inode, size, mtime_ns; a store's object:
    size and mtime_ns), kept per process. A store's object is read once, in order, into a
    temporary file (`source.open_source`), planned there, and its splits say what their readers
    fetch (`Split.size`, `head_end`, `crc`). Its values are not cut into parts: a part's reader
    walks the whole value's nodes to find its own, which a reader of ranges has not fetched."""
    with dumpfile.open(path, verify_checksum=False, whole_set=False) as dump:
        if dump.header.dialect == "dragonfly" or dump.source.compressed is not None:
            return (Split(path),)
        splits = tuple(cut(dump, path, split_size, parts, streams_only))
        if not location.is_url(path):
            return splits
        buffer = dump.source.buffer
        trailer = len(buffer) - dumpfile.CHECKSUM_BYTES
        summed = dump.header.version >= dumpfile.CHECKSUM_SINCE
        crc = (trailer, crc64(buffer, 0, trailer, dump.source.release)) if summed else None
        head_end = dump.head_extent()
    fetched = [dataclasses.replace(s, size=len(buffer), head_end=head_end) for s in splits]
    fetched[-1] = dataclasses.replace(fetched[-1], crc=crc)
    return tuple(fetched)


def open_split(split: Split, verify_checksum: bool = True, directory: str = "") -> dumpfile.Dump:
    """The dump to read `split` from (`Dump.seek` to its start): its file (a relative path in
    `directory`), or of a store's object only the ranges the split's reader reads, the records
    before the databases and the split's own bytes (`location.fetch`: the rest of the object is
    not downloaded)."""
    if split.size is None:
        path = split.path if location.is_url(split.path) else os.path.join(directory, split.path)
        return dumpfile.open(path, verify_checksum=verify_checksum, whole_set=False)
    end = split.size if split.end is None else split.end
    source = ranges_source(split.path, split.size, [(0, split.head_end), (split.start or 0, end)])
    return dumpfile.Dump(source, verify_checksum, crc=split.crc)


def cut(dump: dumpfile.Dump, path: str, split_size: int, parts: int = 0,
        streams_only: bool = False) -> Iterator[Split]:
    """`plan`'s splits of `dump` (opened on `path`, not read yet), each yielded as soon as the pass
    finds its end, so that a reader can start on it while the pass goes on (`rdbspec.read.parallel`)."""
    start: int | None = None  # the open split: where it starts, its database, its first byte
    start_db, start_byte = 0, 0
    streams = False  # the open split holds a stream key
    boundary: int | None = None  # the end of the last key record, and the database after it
    boundary_db = 0
    try:
        for offset, size, db, value_kind, body in key_records(dump):
            end = offset + size
            big = size > split_size
            is_stream = value_kind in STREAM_KINDS
            if big and boundary != start:  # the open split holds keys: close it before this one
                if streams or not streams_only:
                    yield Split(path, start, boundary, start_db)
                start, start_db, start_byte, streams = boundary, boundary_db, boundary or 0, False
            cuts = None
            if big and parts and value_kind in CUTS and (is_stream or not streams_only):
                cuts = CUTS[value_kind](body.value, max(split_size, -(-size // parts)))
            if cuts is not None:
                for (at, first), (_, after) in zip(cuts, cuts[1:]):
                    yield Split(path, start, end, start_db, (at, first, after - first))
                if len(cuts) == 1:  # no element: one split reads the key
                    yield Split(path, start, end, start_db)
                start, start_db, start_byte = end, db, end
            else:
                streams = streams or is_stream
                if end - start_byte >= split_size:
                    if streams or not streams_only:
                        yield Split(path, start, end, start_db)
                    start, start_db, start_byte, streams = end, db, end, False
            boundary, boundary_db = end, db
    except Exception:  # noqa: BLE001 - a corrupt record, or a bug of ours met there: the last split reads up to
        pass           # it and reports it as a single read does
    yield Split(path, start, None, start_db)


def key_records(dump: dumpfile.Dump) -> Iterator[tuple[int, int, int, int, Any]]:
    """(offset, size, database, value kind, the generated `key_value`: its `value` reads the
    value object) of each key record of `dump` (a Redis or Valkey dump: Dragonfly's envelopes
    are `dumpfile.Dump`'s to open), in file order, from the generated parser's records alone: the
    pass reads the same records as `Dump.keys`, without a `KeyRecord` each (that takes half its
    time). Up to a hash template among the keys, if there is one: no split may start after it."""
    buffer = dump.source.buffer
    rdb = backend.parser("rdb", dump.backend).Rdb._read(Io(buffer, 0, len(buffer)), 0, None, None)[0]
    db, start = 0, rdb._stream_pos
    head = True  # the records before the databases (`dumpfile.HEAD_KINDS`), which a split's reader reads too
    for record in rdb.iter_records():
        end = rdb._stream_pos
        kind = record.kind
        if kind == dumpfile.KEY_VALUE:
            body = record.body
            yield start, end - start, db, body.value_kind, body
        elif kind == dumpfile.SELECT_DB:
            db = record.body.db_number.value
        elif kind == dumpfile.HASH_TEMPLATE and not head:
            return  # a template among the keys: the keys after it need it, so no split starts after it
        head = head and kind in dumpfile.HEAD_KINDS
        start = end


def read_nodes(record: dumpfile.KeyRecord, part: tuple[int, int, int]) -> Iterator[tuple[StreamNode, NodeEntries]]:
    """The entries of the nodes of a part split (`Split.part`) of `record`, a stream key, node
    by node, checked as `streams.walk_nodes` checks them."""
    offset, _, count = part
    nodes = record._body.value.iter_nodes(offset, count)
    return walk_nodes((StreamNode.from_spec(node) for node in nodes), (record.offset, record.key))
