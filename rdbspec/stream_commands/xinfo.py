"""XINFO STREAM, GROUPS and CONSUMERS: the fields of the server generation that answers, in its
order (redis src/t_stream.c xinfoReplyWithStreamInfo, xinfoCommand). Redis 8.8 adds a group's
``nacked-count`` to XINFO STREAM FULL, after its consumers, as the Redis documentation of that
release lists it (redis/docs PR #2992; the 8.8 source of the reply was not read). A NACKed entry
is in a group's ``pending`` with a null consumer (it has none; what name 8.8 replies with there
is not known here).

One field is left out: XINFO STREAM's ``radix-tree-nodes`` counts the internal nodes of the
server's in-memory radix tree, whose shape depends on how the 128-bit node keys share
prefixes once inserted into a `rax` (node compression, split points); the file holds only
the keys, so the value cannot be read from it, and emulating rax's node layout is out of scope.
``radix-tree-keys`` (the number of listpack nodes) is exact."""

from __future__ import annotations

import time
from typing import Any

from ..read.streams import Consumer, ConsumerGroup, Stream, format_id
from ..server.numbers import signed64
from ..server.streams import (
    IDMP_DEFAULTS,
    MAX_ID,
    XNACK,
    ZERO_ID,
    group_entries_read,
    group_lag,
    loaded,
    stream_version,
)
from ..server.versions import Version
from .ranges import iter_range, take


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
    info["entries"] = take(iter_range(stream, ZERO_ID, MAX_ID), count)
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
    if version >= XNACK:  # redis PR #14797 (Redis 8.8): the entries of the group's NACK zone
        out["nacked-count"] = len(group.nacked or ())
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

