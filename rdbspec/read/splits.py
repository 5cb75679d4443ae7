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

A process plans a file once per set of cuttings (`Cutting`: parts and streams_only): one pass plans
it for all of them, which a caller asks for at once (`plan`'s `also`: the Spark source gives the
cuttings of every table, so a session reading several tables of a dump reads it once to plan). The
plans are kept (`_planned`, 256 of them), keyed by the file's identity (device, inode, size,
modification time in ns), so the same query again, or another table's, does not repeat the pass;
a dump written anew (the server writes a temporary file and renames it) is planned anew.
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


@dataclass(frozen=True, order=True)
class Cutting:
    """How `plan` cuts a file: a big value into at most `parts` part splits (0: never), and with
    `streams_only`, leaving out the splits of keys without a stream."""

    parts: int = 0
    streams_only: bool = False


def plan(path: str, split_size: int, parts: int = 0, streams_only: bool = False,
         also: tuple[Cutting, ...] = ()) -> list[Split]:
    """The splits of one file. A problem met by the pass ends planning there: the last split
    runs from the last good boundary to the end, and its reader meets (and reports) it. With
    `streams_only`, splits of keys without a stream are left out (the last one is kept). The
    same pass plans the file for the cuttings of `also` too, kept for the calls asking for them:
    a reader of several tables gives them all each time, and the file is read once for all."""
    if split_size <= 0:
        raise ValueError(f"split size must be positive, got {split_size}")
    identity: tuple[int | None, ...]
    if location.is_url(path):
        info = location.stat(path)
        size, identity = info.size, (info.size, info.mtime_ns)
        parts, also = 0, tuple(dataclasses.replace(c, parts=0) for c in also)  # by keys only: see `_planned`
    else:
        stat = os.stat(path)
        size, identity = stat.st_size, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if size <= split_size:
        return [Split(path)]
    cutting = Cutting(parts, streams_only)
    cuttings = tuple(sorted({cutting, *also}))  # one key for every call giving the same set
    planned = _planned(path, identity, split_size, cuttings)
    return list(planned[cuttings.index(cutting)])


@lru_cache(maxsize=256)
def _planned(path: str, identity: tuple[int | None, ...], split_size: int,
             cuttings: tuple[Cutting, ...]) -> tuple[tuple[Split, ...], ...]:
    """`plan` of the file `identity` names (device, inode, size, mtime_ns; a store's object: size
    and mtime_ns) for each of `cuttings`, in one pass, kept per process. A store's object is read
    once, in order, into a temporary file (`source.open_source`), planned there, and its splits
    say what their readers fetch (`Split.size`, `head_end`, `crc`). Its values are not cut into
    parts: a part's reader walks the whole value's nodes to find its own, which a reader of
    ranges has not fetched."""
    with dumpfile.open(path, verify_checksum=False, whole_set=False) as dump:
        if dump.header.dialect == "dragonfly" or dump.source.compressed is not None:
            return tuple((Split(path),) for _ in cuttings)
        found: list[list[Split]] = [[] for _ in cuttings]
        for index, split in cuts(dump, path, split_size, cuttings):
            found[index].append(split)
        if not location.is_url(path):
            return tuple(map(tuple, found))
        buffer = dump.source.buffer
        trailer = len(buffer) - dumpfile.CHECKSUM_BYTES
        summed = dump.header.version >= dumpfile.CHECKSUM_SINCE
        crc = (trailer, crc64(buffer, 0, trailer, dump.source.release)) if summed else None
        head_end = dump.head_extent()
    return tuple(_fetched(splits, len(buffer), head_end, crc) for splits in found)


def _fetched(splits: list[Split], size: int, head_end: int, crc: tuple[int, int] | None) -> tuple[Split, ...]:
    """A store's object's splits, saying what their readers fetch (the last: the CRC it checks)."""
    out = [dataclasses.replace(s, size=size, head_end=head_end) for s in splits]
    out[-1] = dataclasses.replace(out[-1], crc=crc)
    return tuple(out)


def open_split(split: Split, verify_checksum: bool = True, directory: str = "") -> dumpfile.Dump:
    """The dump to read `split` from (`Dump.seek` to its start): its file (a relative path in
    `directory`), or of a store's object only the ranges the split's reader reads, the records
    before the databases and the split's own bytes (`location.fetch`: the rest of the object is
    not downloaded)."""
    if split.size is None:
        remote = location.is_url(split.path) or location.is_server(split.path)
        path = split.path if remote else os.path.join(directory, split.path)
        return dumpfile.open(path, verify_checksum=verify_checksum, whole_set=False)
    end = split.size if split.end is None else split.end
    source = ranges_source(split.path, split.size, [(0, split.head_end), (split.start or 0, end)])
    return dumpfile.Dump(source, verify_checksum, crc=split.crc)


def cut(dump: dumpfile.Dump, path: str, split_size: int, parts: int = 0,
        streams_only: bool = False) -> Iterator[Split]:
    """`plan`'s splits of `dump` (opened on `path`, not read yet), each yielded as soon as the pass
    finds its end, so that a reader can start on it while the pass goes on (`rdbspec.read.parallel`)."""
    return (split for _, split in cuts(dump, path, split_size, (Cutting(parts, streams_only),)))


def cuts(dump: dumpfile.Dump, path: str, split_size: int,
         cuttings: tuple[Cutting, ...]) -> Iterator[tuple[int, Split]]:
    """`cut` for each of `cuttings` in one pass: (the index of the cutting, a split), each split
    yielded as soon as the pass finds its end. Every cutting cuts at the same offsets: they differ
    in the splits they leave out (`streams_only`) and in cutting a big value into parts, which
    starts the next split after it in either case. Each gets the splits it gets alone: a problem
    met in a value that one of them cuts into parts ends that one's planning there."""
    start: int | None = None  # the open split: where it starts, its database, its first byte
    start_db, start_byte = 0, 0
    streams = False  # the open split holds a stream key
    boundary: int | None = None  # the end of the last key record, and the database after it
    boundary_db = 0
    live = dict(enumerate(cuttings))  # those still planning
    ended: dict[int, Split] = {}  # the last split of those a problem stopped

    def close(until: int | None, holds_stream: bool) -> Iterator[tuple[int, Split]]:
        return ((index, Split(path, start, until, start_db)) for index, cutting in live.items()
                if holds_stream or not cutting.streams_only)

    try:
        for offset, size, db, value_kind, body in key_records(dump):
            end = offset + size
            is_stream = value_kind in STREAM_KINDS
            if size > split_size:  # a split of its own (or its parts'): close the open one before it
                if boundary != start:
                    yield from close(boundary, streams)
                    start, start_db, start_byte = boundary, boundary_db, boundary or 0
                for index, cutting in list(live.items()):
                    parts = None
                    if cutting.parts and value_kind in CUTS and (is_stream or not cutting.streams_only):
                        try:
                            parts = CUTS[value_kind](body.value, max(split_size, -(-size // cutting.parts)))
                        except Exception:  # noqa: BLE001 - a corrupt value, or a bug of ours met there: the
                            ended[index] = Split(path, start, None, start_db)  # last split reads up to it
                            del live[index]
                            continue
                    if parts is not None and len(parts) > 1:
                        for (at, first), (_, after) in zip(parts, parts[1:]):
                            yield index, Split(path, start, end, start_db, (at, first, after - first))
                    elif parts is not None or is_stream or not cutting.streams_only:  # no element: one split
                        yield index, Split(path, start, end, start_db)
                if not live:
                    break
                start, start_db, start_byte, streams = end, db, end, False
            else:
                streams = streams or is_stream
                if end - start_byte >= split_size:
                    yield from close(end, streams)
                    start, start_db, start_byte, streams = end, db, end, False
            boundary, boundary_db = end, db
    except Exception:  # noqa: BLE001 - a corrupt record, or a bug of ours met there: the last split reads up to
        pass           # it and reports it as a single read does
    for index in range(len(cuttings)):
        yield index, ended.get(index) or Split(path, start, None, start_db)


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
