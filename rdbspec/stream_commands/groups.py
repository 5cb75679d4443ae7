"""Consumer groups: XPENDING's rows, and the read counter and lag that XINFO shows, as the
server computes them after loading the stream (redis src/t_stream.c, src/rdb.c).

The entries of a type-27 group's NACK zone (released by XNACK, Redis 8.8) are pending for no
consumer: XPENDING's summary counts them in the total and under no consumer; its rows list them
with no consumer (a null) and the idle time of their delivery time as stored (0 for a NACKed
entry). The Redis 8.8 source of XPENDING was not available to say how it names the missing
consumer or the idle time of such a row (fakeredis-py, which emulates 8.8, answers an empty name
and -1; not confirmed against a server here)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..read.streams import Consumer, ConsumerGroup, Stream
from ..server.numbers import signed64
from ..server.streams import StreamId, arg_bytes, parse_range


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
