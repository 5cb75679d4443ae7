"""Offline Redis stream commands over a dump: XRANGE, XREVRANGE, XREAD, XPENDING, XINFO.

The replies are what the server that loaded the dump would answer (redis src/t_stream.c):
the same ID parsing (`-`, `+`, incomplete and exclusive IDs, strtoull's leniency), the same
errors, the same fields in the same order for the generation that wrote the stream type
(15 → 6.2, 19 → 7.0, 21 → 7.2, 26 → 8.6, or `--as-version X.Y`), and the same computed values
(lag, entries-read of a type-15 stream loaded by 7.0+, idle times measured at `now_ms`).

A dump with the VALKEY magic (Valkey 9.0+, valkey src/rdb.h rdbUseValkeyMagic) is answered as
Valkey 9 does: the fields of Redis 7.4 (``VALKEY_9``) with Valkey's own rules (``valkey=True``)
for the lag (`group_lag`) and XREAD's ``+`` (`xread_id`).

One field is left out: XINFO STREAM's ``radix-tree-nodes`` counts the internal nodes of the
server's in-memory radix tree, whose shape depends on how the 128-bit node keys share
prefixes once inserted into a `rax` (node compression, split points); the file holds only
the keys, so the value cannot be read from it, and emulating rax's node layout is out of scope.
``radix-tree-keys`` (the number of listpack nodes) is exact.

Library functions take a `Stream` and return plain values; `execute()` runs a command line
(a list of byte strings, as the server receives it) and returns the reply in the model of
`stream_reply`, raising `CommandError` with the server's error text.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import api
from .command_line import AnyCaseSubParsers, error_line
from .errors import RdbError, exit_code, print_warnings
from .streams import (
    MASK64,
    Consumer,
    ConsumerGroup,
    EntryColumns,
    Stream,
    StreamEntry,
    StreamId,
    format_id,
    walk_nodes,
)

Version = tuple[int, int]
MAX_ID: StreamId = (MASK64, MASK64)
ZERO_ID: StreamId = (0, 0)
VERSION_OF_TYPE: dict[int, Version] = {15: (6, 2), 19: (7, 0), 21: (7, 2), 26: (8, 6)}
NEWEST_LAG = (7, 4)  # redis PRs #13338/#13473: the lag rules of 7.4 and later
VALKEY_9: Version = (7, 4)  # the Redis generation whose reply fields and ID rules Valkey 9 shares
IDMP_DEFAULTS = (100, 100)  # stream-idmp-duration / stream-idmp-maxsize defaults (8.6)

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NOT_INTEGER = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NO_KEY = "ERR no such key"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class CommandError(Exception):
    """An error reply, with the server's text (``ERR ...``, ``NOGROUP ...``, ``WRONGTYPE ...``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class WrongType:
    """Lookup result for a key that exists but holds another type."""


WRONG_TYPE = WrongType()
Lookup = Callable[[bytes], "Stream | WrongType | None"]


# -- numbers and IDs ---------------------------------------------------------------------------


def _string2ll(text: bytes) -> int | None:
    """redis util.c string2ll: strict decimal, no leading zeros, no spaces, no '+'."""
    if text == b"0":
        return 0
    body = text[1:] if text[:1] == b"-" else text
    if not body or not body.isdigit() or not body.isascii() or body[:1] == b"0":
        return None
    value = -int(body) if text[:1] == b"-" else int(body)
    return value if INT64_MIN <= value <= INT64_MAX else None


def _strtoull(text: bytes) -> int | None:
    """C strtoull(s, &end, 10) that must consume the whole string: leading whitespace, a sign,
    '-' negating modulo 2^64; None on no digits, trailing bytes or overflow (ERANGE)."""
    i = 0
    while i < len(text) and text[i] in b" \t\n\v\f\r":
        i += 1
    negative = text[i:i + 1] == b"-"
    if text[i:i + 1] in (b"-", b"+"):
        i += 1
    digits = text[i:]
    if not digits or not (digits.isdigit() and digits.isascii()):
        return None
    value = int(digits)
    if value > MASK64:
        return None
    return (-value) & MASK64 if negative else value


def string2ull(text: bytes) -> int | None:
    """redis util.c string2ull: string2ll (rejecting negatives), else strtoull."""
    if not text:
        return None
    value = _string2ll(text)
    if value is not None:
        return None if value < 0 else value
    return _strtoull(text)


def parse_int(text: bytes) -> int:
    """getLongLongFromObjectOrReply: a strict signed 64-bit decimal."""
    value = _string2ll(text)
    if value is None:
        raise CommandError(NOT_INTEGER)
    return value


def _b(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else os.fsencode(value)


def parse_id(arg: str | bytes, missing_seq: int = 0, strict: bool = False) -> StreamId:
    """streamGenericParseIDOrReply: ``-``, ``+`` (unless strict), ``ms`` (seq = missing_seq) or
    ``ms-seq``. Read as a C string (up to a NUL byte), at most 127 bytes."""
    raw = _b(arg)
    if len(raw) > 127:
        raise CommandError(INVALID_ID)
    buf = raw.split(b"\0", 1)[0]
    if buf in (b"-", b"+"):
        if strict:
            raise CommandError(INVALID_ID)
        return ZERO_ID if buf == b"-" else MAX_ID
    ms_text, dash, seq_text = buf.partition(b"-")
    ms = string2ull(ms_text)
    seq = string2ull(seq_text) if dash else missing_seq
    if ms is None or seq is None:
        raise CommandError(INVALID_ID)
    return ms, seq


def parse_interval(arg: str | bytes, missing_seq: int) -> tuple[StreamId, bool]:
    """streamParseIntervalIDOrReply: ``(id`` is exclusive (and strict: no ``(-``/``(+``)."""
    raw = _b(arg)
    if len(raw) > 1 and raw[:1] == b"(":
        return parse_id(raw[1:], missing_seq, strict=True), True
    return parse_id(raw, missing_seq), False


def incr_id(stream_id: StreamId) -> StreamId | None:
    """streamIncrID; None where the server fails (the last possible ID)."""
    ms, seq = stream_id
    if seq < MASK64:
        return ms, seq + 1
    return None if ms == MASK64 else (ms + 1, 0)


def decr_id(stream_id: StreamId) -> StreamId | None:
    """streamDecrID; None where the server fails (0-0)."""
    ms, seq = stream_id
    if seq > 0:
        return ms, seq - 1
    return None if ms == 0 else (ms - 1, MASK64)


def parse_range(start: str | bytes, end: str | bytes) -> tuple[StreamId, StreamId]:
    """XRANGE's bounds, as inclusive IDs, in the server's order of checks and errors."""
    low, exclusive = parse_interval(start, 0)
    if exclusive:
        low = incr_id(low)
        if low is None:
            raise CommandError("ERR invalid start ID for the interval")
    high, exclusive = parse_interval(end, MASK64)
    if exclusive:
        high = decr_id(high)
        if high is None:
            raise CommandError("ERR invalid end ID for the interval")
    return low, high


def signed64(value: int) -> int:
    """A stored uint64 read as the server's signed mstime_t / long long."""
    value &= MASK64
    return value - (1 << 64) if value > INT64_MAX else value


# -- ranges ------------------------------------------------------------------------------------


def _key(stream_id: StreamId) -> int:
    return (stream_id[0] << 64) | stream_id[1]


def _masters(stream: Stream) -> list[int]:
    """Node master IDs as 128-bit integers (cached on the stream object). A node holds IDs from
    its master ID up to, not including, the next node's."""
    masters = stream.__dict__.get("_range_masters")
    if masters is None:
        masters = stream.__dict__["_range_masters"] = [_key(node.master_id) for node in stream.nodes]
    return masters


def _node_columns(stream: Stream, index: int) -> EntryColumns:
    """One node's entries, decoded and checked on their own."""
    return next(walk_nodes([stream.nodes[index]], stream.origin, warn=stream.warn))[1].columns


def _live(stream: Stream, nodes: range, rev: bool) -> Iterator[tuple[int, EntryColumns]]:
    """(row, columns) of the live entries of `nodes`, in that order (rows reversed with rev)."""
    for index in nodes:
        cols = _node_columns(stream, index)
        for row in (range(len(cols) - 1, -1, -1) if rev else range(len(cols))):
            if not cols.deleted[row]:
                yield row, cols


def iter_range(stream: Stream, start: StreamId, end: StreamId, rev: bool = False) -> Iterator[StreamEntry]:
    """Live entries with start <= id <= end, ascending (or descending with rev). Only the nodes
    that can hold such IDs are decoded, one at a time."""
    low, high = _key(start), _key(end)
    masters = _masters(stream)
    first, last = max(bisect_right(masters, low) - 1, 0), bisect_right(masters, high)
    for row, cols in _live(stream, range(last - 1, first - 1, -1) if rev else range(first, last), rev):
        if low <= (cols.ms[row] << 64) | cols.seq[row] <= high:
            yield StreamEntry((cols.ms[row], cols.seq[row]), cols.fields[row])


def _take(entries: Iterator[StreamEntry], count: int) -> list[StreamEntry]:
    """streamReplyWithRange's count: 0 means all."""
    out = []
    for entry in entries:
        out.append(entry)
        if count and len(out) == count:
            break
    return out


def xrange(stream: Stream, start: str | bytes = "-", end: str | bytes = "+",
           count: int | None = None) -> list[StreamEntry]:
    """XRANGE: entries from start to end (``-``, ``+``, ``ms``, ``ms-seq``, ``(id``).
    count None is unlimited; a count <= 0 gives [] (the server answers a null array)."""
    low, high = parse_range(start, end)
    if count is not None and count <= 0:
        return []
    return _take(iter_range(stream, low, high), count or 0)


def xrevrange(stream: Stream, end: str | bytes = "+", start: str | bytes = "-",
              count: int | None = None) -> list[StreamEntry]:
    """XREVRANGE: entries from end down to start."""
    low, high = parse_range(start, end)
    if count is not None and count <= 0:
        return []
    return _take(iter_range(stream, low, high, rev=True), count or 0)


def last_valid_id(stream: Stream) -> StreamId:
    """streamLastValidID: the last live entry, 0-0 when there is none."""
    for row, cols in _live(stream, range(len(stream.nodes) - 1, -1, -1), rev=True):
        return cols.ms[row], cols.seq[row]
    return ZERO_ID


def first_valid_id(stream: Stream) -> StreamId | None:
    for row, cols in _live(stream, range(len(stream.nodes)), rev=False):
        return cols.ms[row], cols.seq[row]
    return None


def xread_id(stream: Stream | None, arg: str | bytes, version: Version = (7, 2), valkey: bool = False) -> StreamId:
    """The ID after which XREAD serves: ``$`` (the last generated ID), ``+`` (7.4+: just before
    the last entry; Valkey 9: just before the last generated ID, valkey src/t_stream.c
    xreadCommand, so nothing after an XDEL of the last entry or an XSETID past it), else a strict
    ID with a missing sequence of 0."""
    raw = _b(arg)
    if raw == b"$":
        return stream.last_id if stream is not None else ZERO_ID
    if raw == b">":
        raise CommandError("ERR The > ID can be specified only when calling XREADGROUP using the "
                           "GROUP <group> <consumer> option.")
    if raw == b"+" and version >= (7, 4) and valkey and stream is not None:
        # last ID 0-0: an empty stream (XGROUP CREATE MKSTREAM), which serves nothing; 9.1.2
        # answers no error there
        return decr_id(stream.last_id) or ZERO_ID
    if raw == b"+" and version >= (7, 4):
        if stream is None or not stream.length:
            return stream.last_id if stream is not None else ZERO_ID
        return decr_id(last_valid_id(stream)) or ZERO_ID
    return parse_id(raw, 0, strict=True)


def xread(streams: Sequence[tuple[Stream | None, str | bytes]], count: int | None = None,
          version: Version = (7, 2), valkey: bool = False) -> list[tuple[int, list[StreamEntry]]]:
    """XREAD (non-blocking): for each (stream, id) with entries after id, its index in
    `streams` and up to count entries (None or 0: all). Missing streams (None) are skipped."""
    after = [xread_id(stream, arg, version, valkey) for stream, arg in streams]
    out = []
    for index, ((stream, _arg), gt) in enumerate(zip(streams, after)):
        if stream is None or not stream.length or last_valid_id(stream) <= gt:
            continue
        start = incr_id(gt)
        if start is not None:
            out.append((index, _take(iter_range(stream, start, MAX_ID), max(count or 0, 0))))
    return out


# -- consumer groups ---------------------------------------------------------------------------


def find_group(stream: Stream, name: str | bytes) -> ConsumerGroup | None:
    raw = _b(name)
    return next((g for g in stream.groups if g.name == raw), None)


def find_consumer(group: ConsumerGroup, name: str | bytes) -> Consumer | None:
    raw = _b(name)
    return next((c for c in group.consumers if c.name == raw), None)


@dataclass
class PendingSummary:
    count: int
    smallest: StreamId | None
    largest: StreamId | None
    consumers: list[tuple[bytes, int]]  # consumers with pending entries, by name


def xpending_summary(group: ConsumerGroup) -> PendingSummary:
    """XPENDING key group."""
    ids = sorted(p.id for p in group.pending)
    consumers = [(c.name, len(c.pending)) for c in sorted(group.consumers, key=lambda c: c.name) if c.pending]
    return PendingSummary(len(ids), ids[0] if ids else None, ids[-1] if ids else None, consumers)


@dataclass
class PendingRow:
    id: StreamId
    consumer: bytes | None
    idle_ms: int
    delivery_count: int


def xpending(group: ConsumerGroup, start: str | bytes = "-", end: str | bytes = "+", count: int = 10,
             consumer: str | bytes | None = None, idle: int | None = None,
             now_ms: int | None = None) -> list[PendingRow]:
    """XPENDING key group [IDLE min] start end count [consumer]: idle = now_ms - delivery time
    (shown clamped at 0; the IDLE filter compares the unclamped value)."""
    low, high = parse_range(start, end)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if consumer is not None:
        owner = find_consumer(group, consumer)
        if owner is None:
            return []
        wanted = set(owner.pending)
        rows = [p for p in group.pending if p.id in wanted]
    else:
        rows = list(group.pending)
    out: list[PendingRow] = []
    for p in sorted(rows, key=lambda p: p.id):
        if len(out) >= max(count, 0) or p.id > high:
            break
        if p.id < low:
            continue
        elapsed = signed64(now - signed64(p.delivery_time_ms))
        if idle and elapsed < idle:
            continue
        out.append(PendingRow(p.id, p.consumer, max(elapsed, 0), p.delivery_count))
    return out


# -- what a server of a given version holds after loading the stream ----------------------------


@dataclass
class Loaded:
    """Stream metadata as the server keeps it in memory after loading the dump."""

    entries_added: int
    max_deleted: StreamId
    first_id: StreamId


def loaded(stream: Stream) -> Loaded:
    """Stored metadata (types 19+), or what rdb.c derives for a type-15 stream: entries_added =
    length, no tombstone, first_id = the first live entry (streamGetEdgeID: max ID if empty)."""
    if stream.entries_added is not None:
        return Loaded(stream.entries_added, stream.max_deleted_entry_id or ZERO_ID, stream.first_id or ZERO_ID)
    return Loaded(stream.length, ZERO_ID, first_valid_id(stream) or MAX_ID)


def _has_tombstones_from(stream: Stream, meta: Loaded, start: StreamId, version: Version) -> bool:
    """streamRangeHasTombstones(s, start, NULL)."""
    if not stream.length or meta.max_deleted == ZERO_ID:
        return False
    if version < NEWEST_LAG and meta.first_id > meta.max_deleted:
        return False  # 7.0-7.2: "the latest tombstone is before the first entry"
    return start <= meta.max_deleted


def estimate_entries_read(stream: Stream, meta: Loaded, stream_id: StreamId, version: Version) -> int | None:
    """streamEstimateDistanceFromFirstEverEntry; None for SCG_INVALID_ENTRIES_READ."""
    if not meta.entries_added:
        return 0
    if not stream.length and stream_id <= stream.last_id:
        return meta.entries_added
    if version >= NEWEST_LAG and stream_id != ZERO_ID and stream_id < meta.max_deleted:
        return None  # 7.4+: fragmentation between the ID and the last generated ID
    if stream_id == stream.last_id:
        return meta.entries_added
    if stream_id > stream.last_id:
        return None
    if meta.max_deleted == ZERO_ID or meta.max_deleted < meta.first_id:
        if stream_id < meta.first_id:
            return meta.entries_added - stream.length
        if stream_id == meta.first_id:
            return meta.entries_added - stream.length + 1
    return None


def group_entries_read(stream: Stream, group: ConsumerGroup) -> int | None:
    """The group's read counter in memory: stored (types 19+; None = invalid), or estimated at
    load for a type-15 stream (rdb.c). The estimate uses the load-time (7.0) rules."""
    if stream.type_code >= 19:
        return group.entries_read
    return estimate_entries_read(stream, loaded(stream), group.last_delivered_id, (7, 0))


def group_lag(stream: Stream, group: ConsumerGroup, version: Version, valkey: bool = False) -> int | None:
    """streamReplyWithCGLag (7.0-7.2) / streamCGLag (7.4+); None is the server's null.

    Valkey 9 (``valkey``, valkey src/t_stream.c streamReplyWithCGLag) has the 7.4 tombstone rules
    of streamRangeHasTombstones and streamEstimateDistanceFromFirstEverEntry (valkey PR #1952, the
    counterpart of redis #13338) but not the two shortcuts of 7.4's streamCGLag (redis #13473): an
    empty stream and a group behind a trimmed head are estimated like any other group."""
    meta = loaded(stream)
    entries_read = group_entries_read(stream, group)
    if not meta.entries_added:
        return 0
    if version >= NEWEST_LAG and not valkey:
        if not stream.length:
            return 0
        if group.last_delivered_id < meta.first_id and meta.max_deleted < meta.first_id:
            return stream.length
    if entries_read is not None and not _has_tombstones_from(stream, meta, group.last_delivered_id, version):
        return meta.entries_added - entries_read
    estimate = estimate_entries_read(stream, meta, group.last_delivered_id, version)
    return None if estimate is None else meta.entries_added - estimate


# -- XINFO -------------------------------------------------------------------------------------


def stream_version(stream: Stream, as_version: Version | None = None) -> Version:
    """The reply generation: as_version, else the one that writes the stream's type."""
    return as_version or VERSION_OF_TYPE.get(stream.type_code, (8, 6))


def _groups(stream: Stream) -> list[ConsumerGroup]:
    return sorted(stream.groups, key=lambda g: g.name)


def _consumers(group: ConsumerGroup) -> list[Consumer]:
    return sorted(group.consumers, key=lambda c: c.name)


def _active_time(consumer: Consumer) -> int:
    """7.2+ active-time; before type 21 the server loads it as the seen time."""
    if consumer.active_time_ms is None:
        return signed64(consumer.seen_time_ms)
    return signed64(consumer.active_time_ms)


def _stream_head(stream: Stream, version: Version) -> dict[str, Any]:
    meta = loaded(stream)
    info: dict[str, Any] = {
        "length": stream.length,
        "radix-tree-keys": len(stream.nodes),
        # "radix-tree-nodes": left out, see the module docstring
        "last-generated-id": format_id(stream.last_id),
    }
    if version >= (7, 0):
        info["max-deleted-entry-id"] = format_id(meta.max_deleted)
        info["entries-added"] = meta.entries_added
        info["recorded-first-entry-id"] = format_id(meta.first_id)
    if version >= (8, 6):
        info.update(_idmp_info(stream))
    return info


def _idmp_info(stream: Stream) -> dict[str, int]:
    idmp = stream.idmp
    if idmp is None:
        duration, maxsize = IDMP_DEFAULTS
        return {"idmp-duration": duration, "idmp-maxsize": maxsize, "pids-tracked": 0,
                "iids-tracked": 0, "iids-added": 0, "iids-duplicates": 0}
    return {"idmp-duration": idmp.duration_s, "idmp-maxsize": idmp.max_entries,
            "pids-tracked": len(idmp.producers), "iids-tracked": sum(len(p.iids) for p in idmp.producers),
            "iids-added": idmp.iids_added, "iids-duplicates": idmp.iids_duplicates}


def xinfo_stream(stream: Stream, full: bool = False, count: int = 10,
                 version: Version | None = None, valkey: bool = False) -> dict[str, Any]:
    """XINFO STREAM [FULL [COUNT count]] (count 0: everything; negative: 10); ``valkey``: the
    lag of Valkey 9 (`group_lag`)."""
    version = stream_version(stream, version)
    info = _stream_head(stream, version)
    if not full:
        info["groups"] = len(stream.groups)
        info["first-entry"] = next(iter_range(stream, ZERO_ID, MAX_ID), None)
        info["last-entry"] = next(iter_range(stream, ZERO_ID, MAX_ID, rev=True), None)
        return info
    count = 10 if count < 0 else count
    info["entries"] = _take(iter_range(stream, ZERO_ID, MAX_ID), count)
    info["groups"] = [_full_group(stream, g, count, version, valkey) for g in _groups(stream)]
    return info


def _limit(rows: list, count: int) -> list:
    return rows[:count] if count else rows


def _full_group(stream: Stream, group: ConsumerGroup, count: int, version: Version,
                valkey: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": group.name, "last-delivered-id": format_id(group.last_delivered_id)}
    if version >= (7, 0):
        out["entries-read"] = group_entries_read(stream, group)
        out["lag"] = group_lag(stream, group, version, valkey)
    pending = sorted(group.pending, key=lambda p: p.id)
    out["pel-count"] = len(pending)
    out["pending"] = [[format_id(p.id), p.consumer, signed64(p.delivery_time_ms), p.delivery_count]
                      for p in _limit(pending, count)]
    out["consumers"] = [_full_consumer(group, c, count, version) for c in _consumers(group)]
    return out


def _full_consumer(group: ConsumerGroup, consumer: Consumer, count: int, version: Version) -> dict[str, Any]:
    by_id = {p.id: p for p in group.pending}
    out: dict[str, Any] = {"name": consumer.name, "seen-time": signed64(consumer.seen_time_ms)}
    if version >= (7, 2):
        out["active-time"] = _active_time(consumer)
    ids = sorted(consumer.pending)
    out["pel-count"] = len(ids)
    out["pending"] = [[format_id(i), signed64(by_id[i].delivery_time_ms), by_id[i].delivery_count]
                      for i in _limit(ids, count)]
    return out


def xinfo_groups(stream: Stream, version: Version | None = None, valkey: bool = False) -> list[dict[str, Any]]:
    """XINFO GROUPS key; ``valkey``: the lag of Valkey 9 (`group_lag`)."""
    version = stream_version(stream, version)
    out = []
    for group in _groups(stream):
        row: dict[str, Any] = {"name": group.name, "consumers": len(group.consumers),
                               "pending": len(group.pending),
                               "last-delivered-id": format_id(group.last_delivered_id)}
        if version >= (7, 0):
            row["entries-read"] = group_entries_read(stream, group)
            row["lag"] = group_lag(stream, group, version, valkey)
        out.append(row)
    return out


def xinfo_consumers(group: ConsumerGroup, now_ms: int | None = None, version: Version = (7, 2)) -> list[dict[str, Any]]:
    """XINFO CONSUMERS key group: idle = now - seen time; 7.2+ adds inactive = now - active
    time (-1 for a consumer never active), both clamped at 0 as 7.2 does."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    out = []
    for consumer in _consumers(group):
        idle = now - signed64(consumer.seen_time_ms)
        row: dict[str, Any] = {"name": consumer.name, "pending": len(consumer.pending)}
        if version >= (7, 2):
            active = _active_time(consumer)
            row["idle"] = max(idle, 0)
            row["inactive"] = -1 if active == -1 else max(now - active, 0)
        else:
            row["idle"] = idle
        out.append(row)
    return out


# -- commands as the server parses them ---------------------------------------------------------


@dataclass
class Context:
    """What a command runs against: key lookup, the clock and the reply generation (``version``:
    --as-version; ``valkey``: a VALKEY-magic dump, answered as Valkey 9 unless ``version``)."""

    lookup: Lookup
    now_ms: int
    version: Version | None = None
    valkey: bool = False

    @property
    def valkey_rules(self) -> bool:
        """Valkey 9's lag and XREAD ``+`` rules apply (a Valkey dump, no --as-version)."""
        return self.valkey and self.version is None

    def stream(self, key: bytes) -> Stream | None:
        found = self.lookup(key)
        if isinstance(found, WrongType):
            raise CommandError(WRONGTYPE)
        return found

    def version_for(self, stream: Stream | None) -> Version:
        if self.version is not None:
            return self.version
        if self.valkey:
            return VALKEY_9
        return stream_version(stream) if stream is not None else (7, 2)


def _count_option(args: Sequence[bytes]) -> int | None:
    """XRANGE's trailing [COUNT n] (repeatable, last wins; negatives become 0)."""
    count = None
    i = 0
    while i < len(args):
        if args[i].lower() == b"count" and i + 1 < len(args):
            count = max(parse_int(args[i + 1]), 0)
            i += 2
        else:
            raise CommandError(SYNTAX)
    return count


def cmd_xrange(ctx: Context, argv: Sequence[bytes], rev: bool = False) -> Any:
    if len(argv) < 4:
        raise CommandError(f"ERR wrong number of arguments for '{argv[0].decode().lower()}' command")
    start, end = (argv[3], argv[2]) if rev else (argv[2], argv[3])
    low, high = parse_range(start, end)
    count = _count_option(argv[4:])
    stream = ctx.stream(argv[1])
    if stream is None:
        return []
    if count == 0:
        return None  # the server's null array
    return _take(iter_range(stream, low, high, rev), count or 0)


def cmd_xread(ctx: Context, argv: Sequence[bytes]) -> Any:
    count, i = 0, 1
    while i < len(argv):
        word = argv[i].lower()
        if word == b"count" and i + 1 < len(argv):
            count = max(parse_int(argv[i + 1]), 0)
            i += 2
        elif word == b"streams" and i + 1 < len(argv):
            break
        else:
            raise CommandError(SYNTAX)
    rest = list(argv[i + 1:])
    if i >= len(argv) or len(rest) % 2:
        raise CommandError("ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' "
                           "must be specified.")
    keys, ids = rest[:len(rest) // 2], rest[len(rest) // 2:]
    pairs = []
    for key, raw in zip(keys, ids):
        stream = ctx.stream(key)
        xread_id(stream, raw, ctx.version_for(stream), ctx.valkey_rules)  # errors in argument order
        pairs.append((stream, raw))
    served = xread(pairs, count, ctx.version_for(next((s for s, _ in pairs if s is not None), None)),
                   ctx.valkey_rules)
    return [[keys[index], entries] for index, entries in served] or None


def cmd_xpending(ctx: Context, argv: Sequence[bytes]) -> Any:
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise CommandError(SYNTAX)
    key, group_name = argv[1], argv[2]
    extended = None
    if argc >= 6:
        start_index, min_idle = 3, 0
        if argv[3].lower() == b"idle":
            min_idle = parse_int(argv[4])
            if argc < 8:
                raise CommandError(SYNTAX)
            start_index = 5
        count = max(parse_int(argv[start_index + 2]), 0)
        parse_range(argv[start_index], argv[start_index + 1])
        consumer = argv[start_index + 3] if start_index + 3 < argc else None
        extended = (argv[start_index], argv[start_index + 1], count, consumer, min_idle)
    stream = ctx.stream(key)
    group = find_group(stream, group_name) if stream is not None else None
    if group is None:
        raise CommandError(f"NOGROUP No such key '{_c(key)}' or consumer group '{_c(group_name)}'")
    if extended is None:
        return xpending_summary(group)
    start, end, count, consumer, min_idle = extended
    return xpending(group, start, end, count, consumer, min_idle, ctx.now_ms)


def _c(name: bytes) -> str:
    """A name as the server's %s prints it: up to a NUL byte."""
    return name.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def cmd_xinfo(ctx: Context, argv: Sequence[bytes]) -> Any:
    if len(argv) < 3:
        raise CommandError("ERR wrong number of arguments for 'xinfo' command")
    sub, key = argv[1].lower(), argv[2]
    stream = ctx.stream(key)
    if stream is None:
        raise CommandError(NO_KEY)
    version = ctx.version_for(stream)
    if sub == b"consumers" and len(argv) == 4:
        group = find_group(stream, argv[3])
        if group is None:
            raise CommandError(f"NOGROUP No such consumer group '{_c(argv[3])}' for key name '{_c(key)}'")
        return xinfo_consumers(group, ctx.now_ms, version)
    if sub == b"groups" and len(argv) == 3:
        return xinfo_groups(stream, version, ctx.valkey_rules)
    if sub == b"stream":
        return _xinfo_stream_args(stream, argv[3:], version, ctx.valkey_rules)
    raise CommandError(SYNTAX)


def _xinfo_stream_args(stream: Stream, args: Sequence[bytes], version: Version, valkey: bool) -> dict[str, Any]:
    if not args:
        return xinfo_stream(stream, version=version, valkey=valkey)
    if args[0].lower() != b"full":
        raise CommandError(SYNTAX)
    count = 10
    if len(args) > 1:
        if len(args) != 3 or args[1].lower() != b"count":
            raise CommandError(SYNTAX)
        count = parse_int(args[2])
    return xinfo_stream(stream, full=True, count=count, version=version, valkey=valkey)


COMMANDS: dict[bytes, Callable[[Context, Sequence[bytes]], Any]] = {
    b"xrange": cmd_xrange,
    b"xrevrange": lambda ctx, argv: cmd_xrange(ctx, argv, rev=True),
    b"xread": cmd_xread,
    b"xpending": cmd_xpending,
    b"xinfo": cmd_xinfo,
}


def execute(ctx: Context, argv: Sequence[str | bytes]) -> Any:
    """Runs one command line (``[b"XRANGE", key, start, end, ...]``); raises CommandError."""
    args = [_b(a) for a in argv]
    handler = COMMANDS.get(args[0].lower())
    if handler is None:
        raise CommandError(f"ERR unknown command '{_c(args[0])}'")
    return handler(ctx, args)


# -- the command line ---------------------------------------------------------------------------


def parse_version(text: str) -> Version:
    try:
        major, minor = (int(p) for p in text.split(".")[:2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a version X.Y: {text!r}") from None
    return major, minor


def dump_context(dump: api.Dump, lookup: Lookup, now_ms: int, as_version: Version | None = None) -> Context:
    """The context of commands over `dump`: Valkey 9's replies for a VALKEY-magic file."""
    return Context(lookup, now_ms, as_version, valkey=dump.header.magic.startswith("VALKEY"))


def dump_lookup(dump: api.Dump, db: int, keys: Sequence[bytes], now_ms: int) -> Lookup:
    """Reads the dump once, keeping the values of `keys` in `db`; keys expired at now_ms are
    missing, as for the server. Unless the dump was opened without checksum verification, the
    checksum is verified as the server does on load (redis src/rdb.c rdbLoadRioWithLoadingCtx):
    from the trailer alone when it matches, else by reading on to the end, which fails as
    `rdbspec dump` does."""
    wanted, found = set(keys), {}
    records = dump.keys()
    for record in records:
        if record.db == db and record.key in wanted and record.key not in found:
            expired = record.expire_at_ms is not None and record.expire_at_ms <= now_ms
            if not expired:
                found[record.key] = record.value if isinstance(record.value, Stream) else WRONG_TYPE
            if len(found) == len(wanted):
                break
    if dump.verify_checksum and dump.checksum_status == "not read" and not dump.trailer_verified():
        for _ in records:
            pass
    return found.get


XREAD_WORDS = (b"count", b"streams")  # where XREAD's own syntax starts, in any case


def _argv(args: argparse.Namespace) -> list[bytes]:
    """The server command line equivalent to the CLI arguments (options, then the command's
    own trailing words as given, which the server's parsing reads in any case)."""
    b = os.fsencode
    name = args.stream_command
    count = [b"COUNT", b(args.count)] if getattr(args, "count", None) is not None else []
    if name in ("xrange", "xrevrange"):
        first, second = (args.end, args.start) if name == "xrevrange" else (args.start, args.end)
        return [name.upper().encode(), b(args.key), b(first), b(second), *count, *map(b, args.options)]
    if name == "xread":
        items = [b(x) for x in args.pairs]
        if items[0].lower() in XREAD_WORDS:  # the server's own syntax
            return [b"XREAD", *count, *items]
        keys, ids = items[0::2], items[1::2]
        if len(items) % 2:  # the server's "Unbalanced" error
            return [b"XREAD", *count, b"STREAMS", *items]
        return [b"XREAD", *count, b"STREAMS", *keys, *ids]
    if name == "xpending":
        idle = [b"IDLE", b(args.idle)] if args.idle is not None else []
        rng = [b(x) for x in args.range]
        return [b"XPENDING", b(args.key), b(args.group), *idle, *rng]
    extra = [b(args.group)] if name == "consumers" else []
    if name == "stream":
        extra = [*([b"FULL", *count] if args.full else []), *map(b, args.options)]
    return [b"XINFO", name.upper().encode(), b(args.key), *extra]


def _keys_of(argv: Sequence[bytes]) -> list[bytes]:
    """The keys a command line reads (XREAD: after STREAMS, as cmd_xread finds it)."""
    if argv[0] == b"XREAD":
        i = 1
        while i < len(argv) and argv[i].lower() == b"count":
            i += 2
        rest = argv[i + 1:]
        return list(rest[:len(rest) // 2]) if len(rest) % 2 == 0 else list(rest)
    return [argv[2] if argv[0] == b"XINFO" else argv[1]]


def run(args: argparse.Namespace) -> int:
    """A stream subcommand: 0, 1 with the server's error on stderr, or the dump's exit code."""
    from .stream_reply import render_json, render_text

    now_ms = args.now if args.now is not None else int(time.time() * 1000)
    argv = _argv(args)
    dump = None
    try:
        with api.open(args.file, verify_checksum=not args.no_verify_checksum) as dump:
            lookup = dump_lookup(dump, args.db, _keys_of(argv), now_ms)
            reply = execute(dump_context(dump, lookup, now_ms, args.as_version), argv)
    except CommandError as err:
        print_warnings(dump.warnings if dump is not None else ())
        print(f"(error) {err.message}", file=sys.stderr)
        return 1
    except (RdbError, OSError) as err:
        print_warnings(dump.warnings if dump is not None else ())
        print(error_line(args.file, err), file=sys.stderr)
        return exit_code(err)
    print_warnings(dump.warnings)
    text = render_json(reply) + "\n" if args.json else render_text(reply)
    return _write(text, args.output)


def _write(text: str, output: str | None) -> int:
    """Writes the reply; a reader that went away (a closed pipe) is not an error."""
    try:
        if output:
            with open(output, "w", encoding="utf-8") as out:
                out.write(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except BrokenPipeError:
        return 0
    except OSError as err:
        print(error_line(output or "<stdout>", err), file=sys.stderr)
        return exit_code(err)
    return 0


RADIX_NOTE = ("radix-tree-nodes is left out of XINFO STREAM: it counts the server's in-memory radix "
              "tree nodes, which the dump does not record.")
EPILOG = ("Replies follow the server generation that writes the stream's RDB type (15: 6.2, 19: 7.0, "
          "21: 7.2, 26: 8.6; any type in a VALKEY-magic dump: Valkey 9) unless --as-version. A server "
          "error (no such key or group, invalid ID...) is printed on stderr with exit code 1. " + RADIX_NOTE)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", type=int, default=0, help="database number (default 0)")
    p.add_argument("--json", action="store_true", help="the reply as JSON (server field names)")
    p.add_argument("--now", type=int, help="current time in Unix ms for idle times and expiry (default: now)")
    p.add_argument("--as-version", type=parse_version, help="answer as this server version X.Y")
    p.add_argument("--no-verify-checksum", action="store_true", help="do not fail on a wrong checksum")
    p.add_argument("-o", "--output", help="write here instead of stdout")


def _parser(sub: argparse._SubParsersAction, name: str, help_text: str, command: str,
            one_key: bool = True) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text, epilog=EPILOG)
    p.add_argument("file", help="dump file, or - for stdin")
    if one_key:
        p.add_argument("key", help="the stream's key")
    p.set_defaults(standalone=run, stream_command=command)
    return p


RANGE_OPTIONS = "the server's trailing words, in any case: COUNT n"
START_HELP = "the lowest ID: -, ms or ms-seq; (ID leaves that ID out"
END_HELP = "the highest ID: +, ms or ms-seq; (ID leaves that ID out"
COUNT_HELP = "at most N entries (the server's COUNT)"


def register(sub: argparse._SubParsersAction) -> None:
    """Adds xrange, xrevrange, xread, xpending and xinfo to the rdbspec command line."""
    p = _parser(sub, "xrange", "XRANGE key start end [COUNT n] over a dump", "xrange")
    p.add_argument("start", help=START_HELP), p.add_argument("end", help=END_HELP)
    p.add_argument("options", nargs="*", metavar="WORD", help=RANGE_OPTIONS)
    p.add_argument("--count", metavar="N", help=COUNT_HELP)
    _common(p)
    p = _parser(sub, "xrevrange", "XREVRANGE key end start [COUNT n] over a dump", "xrevrange")
    p.add_argument("end", help=END_HELP), p.add_argument("start", help=START_HELP)
    p.add_argument("options", nargs="*", metavar="WORD", help=RANGE_OPTIONS)
    p.add_argument("--count", metavar="N", help=COUNT_HELP)
    _common(p)
    p = _parser(sub, "xread", "XREAD [COUNT n] STREAMS key... id... over a dump", "xread", one_key=False)
    p.add_argument("pairs", nargs="+", metavar="KEY ID",
                   help="KEY ID pairs (entries after ID: ms, ms-seq, $ or +), or the server's own words, in any "
                        "case: [COUNT n] STREAMS key... id... (the form for a key named count or streams)")
    p.add_argument("--count", metavar="N", help="at most N entries per stream (the server's COUNT)")
    _common(p)
    p = _parser(sub, "xpending", "XPENDING key group [[IDLE ms] start end count [consumer]] over a dump",
                "xpending")
    p.add_argument("group", help="the consumer group")
    p.add_argument("range", nargs="*", metavar="START END COUNT [CONSUMER]",
                   help="the extended form (a range, at most COUNT rows, one consumer's), may start with IDLE ms")
    p.add_argument("--idle", metavar="MS", help="only entries idle at least this many ms")
    _common(p)
    _register_xinfo(sub)


def _register_xinfo(sub: argparse._SubParsersAction) -> None:
    xinfo = sub.add_parser("xinfo", help="XINFO STREAM | GROUPS | CONSUMERS over a dump", epilog=EPILOG)
    which = xinfo.add_subparsers(dest="xinfo_command", required=True, action=AnyCaseSubParsers,
                                 help="what to show, in any case")
    p = _parser(which, "stream", "XINFO STREAM key [FULL [COUNT n]]", "stream")
    p.add_argument("options", nargs="*", metavar="WORD",
                   help="the server's trailing words, in any case: FULL [COUNT n]")
    p.add_argument("--full", action="store_true", help="every entry, group, consumer and PEL row (the server's FULL)")
    p.add_argument("--count", metavar="N", help="with --full: entries and PEL rows shown (0: all; default 10)")
    _common(p)
    p = _parser(which, "groups", "XINFO GROUPS key", "groups")
    _common(p)
    p = _parser(which, "consumers", "XINFO CONSUMERS key group", "consumers")
    p.add_argument("group", help="the consumer group")
    _common(p)
