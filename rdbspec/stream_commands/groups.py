"""Consumer groups: XPENDING's rows, and the read counter and lag that XINFO shows, as the
server computes them after loading the stream (redis src/t_stream.c, src/rdb.c)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from rdbspec_generated.enums import ValueType

from ..generations import Version
from ..streams import Consumer, ConsumerGroup, Stream, StreamId
from .ranges import first_valid_id
from .rules import MAX_ID, ZERO_ID, arg_bytes, parse_range, signed64

NEWEST_LAG = (7, 4)  # redis PRs #13338/#13473: the lag rules of 7.4 and later


def find_group(stream: Stream, name: str | bytes) -> ConsumerGroup | None:
    raw = arg_bytes(name)
    return next((g for g in stream.groups if g.name == raw), None)


def find_consumer(group: ConsumerGroup, name: str | bytes) -> Consumer | None:
    raw = arg_bytes(name)
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


class Counted(Protocol):
    """What the read counter's rules look at besides the metadata: a `Stream` as read, or one
    changed by commands (`edit.EditableStream`)."""

    @property
    def length(self) -> int: ...

    @property
    def last_id(self) -> StreamId: ...


def loaded(stream: Stream) -> Loaded:
    """Stored metadata (types 19+), or what rdb.c derives for a type-15 stream: entries_added =
    length, no tombstone, first_id = the first live entry (streamGetEdgeID: max ID if empty)."""
    if stream.entries_added is not None:
        return Loaded(stream.entries_added, stream.max_deleted_entry_id or ZERO_ID, stream.first_id or ZERO_ID)
    return Loaded(stream.length, ZERO_ID, first_valid_id(stream) or MAX_ID)


def has_tombstones_from(stream: Counted, meta: Loaded, start: StreamId, version: Version) -> bool:
    """streamRangeHasTombstones(s, start, NULL)."""
    if not stream.length or meta.max_deleted == ZERO_ID:
        return False
    if version < NEWEST_LAG and meta.first_id > meta.max_deleted:
        return False  # 7.0-7.2: "the latest tombstone is before the first entry"
    return start <= meta.max_deleted


def estimate_entries_read(stream: Counted, meta: Loaded, stream_id: StreamId, version: Version) -> int | None:
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
    if stream.type_code >= ValueType.STREAM_LISTPACKS_2:
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
    if entries_read is not None and not has_tombstones_from(stream, meta, group.last_delivered_id, version):
        return meta.entries_added - entries_read
    estimate = estimate_entries_read(stream, meta, group.last_delivered_id, version)
    return None if estimate is None else meta.entries_added - estimate

