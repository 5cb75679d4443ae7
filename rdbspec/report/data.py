"""The figures of `rdbspec report` (issue 16), gathered one key at a time in bounded memory.

`ReportBuilder` takes plain rows (ints, bytes, str), so a dump (`from_dump`) or rows collected
from the Spark tables feed it alike; `result()` is a JSON-able dict:

* `totals`, `databases`: keys, memory, elements, bytes in the file, keys with an expiry;
* `types`, `encodings`: the same sums by type and by (type, encoding);
* `prefixes`: the tree of `prefixes.PrefixTree` up to `depth` (at most `max_prefixes` prefixes),
  children largest memory first;
* `top_keys`: the `top` keys with the most memory (file order among equals, as `keys --top`);
* `expiry`: keys and memory by time left to live at `now_ms`: no expiry, expired already (the
  server drops them on load: redis src/rdb.c rdbLoadRioWithLoadingCtx, `expiretime < now`
  on a master), under an hour, a day, a week, 30 days, and later;
* `streams`: counts over every stream, and the `top` longest with their groups: the lag as XINFO
  GROUPS answers it (`stream_commands.groups.group_lag`: streamReplyWithCGLag / streamCGLag;
  None where it answers nil), the pending entries in all and per consumer (XPENDING's summary),
  the oldest pending entry's age (now minus its ID's ms) and idle time (now minus its delivery
  time, as XPENDING's extended form: streamReplyWithRangeFromConsumerPEL's `now - delivery_time`).

Memory is the bytes of `MEMORY USAGE key SAMPLES 0` (`rdbspec.memory`). `rdbspec report`'s clock
is the dump's save time (`save_time_ms`) unless --now; the builder's own default is the wall clock.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..jsonl import s
from ..memory import RedisModel, Server
from ..read import dumpfile
from ..read.streams import ConsumerGroup, Stream, format_id
from ..server.numbers import signed64
from ..server.streams import group_lag, stream_version
from ..server.versions import Version
from .prefixes import FramedTree, PrefixNode, PrefixTree

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
# (name, expiring before now + this many ms); "none" and "expired" come first.
EXPIRY_BUCKETS: tuple[tuple[str, int | None], ...] = (
    ("under 1 hour", HOUR_MS), ("under 1 day", DAY_MS), ("under 7 days", 7 * DAY_MS),
    ("under 30 days", 30 * DAY_MS), ("later", None))
EXPIRY_NAMES = ("no expiry", "expired", *(name for name, _ in EXPIRY_BUCKETS))

Text = bytes | str


@dataclass
class GroupSummary:
    """One consumer group of a stream, as XINFO GROUPS and XPENDING see it."""

    name: Text
    lag: int | None
    pending: int
    consumers: list[tuple[Text, int]]  # (name, pending entries)
    oldest_pending_id: tuple[int, int] | None
    oldest_delivery_ms: int | None  # when the oldest pending entry was last delivered


@dataclass
class _Sums:
    keys: int = 0
    memory: int = 0
    elements: int = 0
    size_in_file: int = 0
    expires: int = 0

    def add(self, memory: int, elements: int, size_in_file: int, expires: bool) -> None:
        self.keys += 1
        self.memory += memory
        self.elements += elements
        self.size_in_file += size_in_file
        self.expires += expires


def _add_up(sums: Any, more: Any) -> None:
    """Adds every field of `more` to those of `sums` (a `_Sums` or `_StreamTotals`)."""
    for name in vars(more):
        setattr(sums, name, getattr(sums, name) + getattr(more, name))


@dataclass
class _StreamTotals:
    streams: int = 0
    entries: int = 0
    nodes: int = 0
    groups: int = 0
    pending: int = 0
    consumers: int = 0


def text(value: Text) -> Any:
    """A name as `rdbspec keys` writes it: UTF-8 text, else {"hex": ...}."""
    return s(value) if isinstance(value, bytes) else value


@dataclass
class ReportBuilder:
    """Sums and top lists over the keys and streams added, bounded by `top` and `max_prefixes`."""

    top: int = 50
    separator: bytes = b":"
    depth: int = 3
    now_ms: int | None = None  # None: the wall clock when the builder is made
    max_prefixes: int = 10_000
    totals: _Sums = field(default_factory=_Sums, init=False)

    def __post_init__(self) -> None:
        if self.now_ms is None:
            self.now_ms = int(time.time() * 1000)
        self._now: int = self.now_ms
        self._databases: dict[int, _Sums] = {}
        self._types: dict[str, _Sums] = {}
        self._encodings: dict[tuple[str, str], _Sums] = {}
        self._prefixes = PrefixTree(self.separator, self.depth, self.max_prefixes)
        self._expiry: dict[str, Counter] = {name: Counter() for name in EXPIRY_NAMES}
        self._added = 0  # rows offered to the top lists: the later of two equal ones loses
        self._top_keys: list[tuple[int, int, dict[str, Any]]] = []
        self._streams: list[tuple[int, int, dict[str, Any]]] = []
        self._stream_totals = _StreamTotals()
        self._spill: Callable[[bytes, int, int], None] | None = None
        self._spilling = False

    def add_key(self, db: int, key: bytes, type_name: str, encoding: str, size_in_file: int, elements: int,
                memory: int | None, expire_at_ms: int | None) -> None:
        """One key's figures; its `memory` None when the model does not size its type (its row
        says null, the sums count it as 0 bytes)."""
        row = {"db": db, "key": text(key), "type": type_name, "encoding": encoding, "size_in_file": size_in_file,
               "elements": elements, "memory": memory, "expire_at_ms": expire_at_ms}
        memory = memory or 0
        expires = expire_at_ms is not None
        for sums in (self.totals, self._databases.setdefault(db, _Sums()), self._types.setdefault(type_name, _Sums()),
                     self._encodings.setdefault((type_name, encoding), _Sums())):
            sums.add(memory, elements, size_in_file, expires)
        if self._spill is None:
            self._prefixes.add(key, elements, memory)
        elif self._spilling or not self._prefixes.fits(key):
            self._spilling = True
            self._spill(key, elements, memory)
        else:
            self._prefixes.add(key, elements, memory)
        bucket = self._expiry[self.expiry_bucket(expire_at_ms)]
        bucket["keys"] += 1
        bucket["memory"] += memory
        self._keep(self._top_keys, memory, row)

    def expiry_bucket(self, expire_at_ms: int | None) -> str:
        if expire_at_ms is None:
            return "no expiry"
        left = expire_at_ms - self._now
        if left <= 0:
            return "expired"
        return next(name for name, below in EXPIRY_BUCKETS if below is None or left < below)

    def add_stream(self, db: int, key: bytes, length: int, nodes: int, groups: Iterable[GroupSummary]) -> None:
        groups = list(groups)
        totals = self._stream_totals
        totals.streams += 1
        totals.entries += length
        totals.nodes += nodes
        totals.groups += len(groups)
        totals.pending += sum(g.pending for g in groups)
        totals.consumers += sum(len(g.consumers) for g in groups)
        row = {"db": db, "key": text(key), "length": length, "nodes": nodes,
               "groups": [self._group(g) for g in groups]}
        self._keep(self._streams, length, row)

    def _group(self, group: GroupSummary) -> dict[str, Any]:
        consumers = heapq.nlargest(self.top, group.consumers, key=lambda c: c[1])
        oldest = group.oldest_pending_id
        delivered = group.oldest_delivery_ms
        return {"name": text(group.name), "lag": group.lag, "pending": group.pending,
                "consumers": len(group.consumers),
                "pending_by_consumer": [{"name": text(name), "pending": count} for name, count in consumers],
                "oldest_pending_id": None if oldest is None else format_id(oldest),
                "oldest_pending_age_ms": None if oldest is None else self._now - oldest[0],
                "oldest_pending_idle_ms": None if delivered is None else self._now - delivered}

    def _keep(self, heap: list[tuple[int, int, dict[str, Any]]], weight: int, row: dict[str, Any]) -> None:
        """Keeps the `top` heaviest rows; among equals the first added."""
        self._added += 1
        self._push(heap, (weight, -self._added, row))

    def _push(self, heap: list[tuple[int, int, dict[str, Any]]], item: tuple[int, int, dict[str, Any]]) -> None:
        if len(heap) < self.top:
            heapq.heappush(heap, item)
        elif item[:2] > heap[0][:2]:
            heapq.heapreplace(heap, item)

    def spill_prefixes(self, spill: Callable[[bytes, int, int], None] | None) -> None:
        """From the first key whose prefixes would take the tree past `max_prefixes` on, the
        prefix sums of every key (key, elements, memory) go to `spill` rather than the tree
        (None: no more). A worker's builder does so, so that its tree holds every prefix of the
        keys before: `merge` adds it as their keys would have been, and `add_prefixes` the keys
        spilled after it, in order."""
        self._spill = spill

    def follow(self, earlier: ReportBuilder) -> bool:
        """Whether this builder, given keys that come after those of `earlier`, counts their
        prefixes as `earlier` would from now on: when its prefix tree is full, in a
        `FramedTree` of it, which `earlier.merge` adds back without spilling any key."""
        if not earlier._prefixes.full:
            return False
        self._prefixes = FramedTree(earlier._prefixes)
        return True

    def add_prefixes(self, key: bytes, elements: int, memory: int) -> None:
        """The prefix sums of a key spilled by another builder (`spill_prefixes`), after `merge`."""
        self._prefixes.add(key, elements, memory)

    def merge(self, later: ReportBuilder) -> None:
        """Adds what `later` (with the same parameters) gathered from keys that come after those
        of this builder: the figures are those of one builder given all the keys in order (its
        prefix tree never reached `max_prefixes`: see `spill_prefixes`; or it follows this one's)."""
        _add_up(self.totals, later.totals)
        tables: tuple[tuple[dict[Any, _Sums], dict[Any, _Sums]], ...] = (
            (self._databases, later._databases), (self._types, later._types), (self._encodings, later._encodings))
        for mine, theirs in tables:
            for name, sums in theirs.items():
                _add_up(mine.setdefault(name, _Sums()), sums)
        self._prefixes.merge(later._prefixes)
        for name, counts in later._expiry.items():
            self._expiry[name].update(counts)
        for heap, rows in ((self._top_keys, later._top_keys), (self._streams, later._streams)):
            for weight, order, row in rows:
                self._push(heap, (weight, order - self._added, row))  # after every row of this builder
        self._added += later._added
        _add_up(self._stream_totals, later._stream_totals)

    def result(self) -> dict[str, Any]:
        def sums(s: _Sums) -> dict[str, int]:
            return {"keys": s.keys, "memory": s.memory, "elements": s.elements, "size_in_file": s.size_in_file,
                    "expires": s.expires}

        def heaviest(heap: list[tuple[int, int, dict[str, Any]]]) -> list[dict[str, Any]]:
            return [row for _, _, row in sorted(heap, key=lambda item: (-item[0], -item[1]))]

        return {
            "now_ms": self.now_ms,
            "separator": text(self.separator),
            "depth": self.depth,
            "top": self.top,
            "totals": sums(self.totals),
            "databases": [{"db": db, **sums(v)} for db, v in sorted(self._databases.items())],
            "types": [{"type": t, **sums(v)} for t, v in sorted(self._types.items(), key=lambda i: -i[1].memory)],
            "encodings": [{"type": t, "encoding": e, **sums(v)}
                          for (t, e), v in sorted(self._encodings.items(), key=lambda i: -i[1].memory)],
            "prefixes": self._prefix_children(None, self._prefixes.root),
            "top_keys": heaviest(self._top_keys),
            "expiry": [{"bucket": name, "keys": c["keys"], "memory": c["memory"]} for name, c in self._expiry.items()],
            "streams": {**vars(self._stream_totals), "top": heaviest(self._streams)},
        }

    def _prefix_children(self, prefix: bytes | None, node: PrefixNode) -> list[dict[str, Any]]:
        out = []
        for part, child in node.child_items():
            name = part if prefix is None else prefix + self.separator + part
            out.append({"prefix": text(name), "keys": child.keys, "elements": child.elements,
                        "memory": child.memory, "children": self._prefix_children(name, child)})
        if node.other is not None:
            out.append({"prefix": None if prefix is None else text(prefix), "other": True, "keys": node.other.keys,
                        "elements": node.other.elements, "memory": node.other.memory, "children": []})
        out.sort(key=lambda row: -row["memory"])
        return out


def group_summary(stream: Stream, group: ConsumerGroup, version: Version, valkey: bool = False) -> GroupSummary:
    """A group as XINFO GROUPS (its lag) and XPENDING (its pending entries) answer for it."""
    oldest = min(group.pending, key=lambda p: p.id, default=None)
    return GroupSummary(group.name, group_lag(stream, group, version, valkey), len(group.pending),
                        [(c.name, len(c.pending)) for c in group.consumers],
                        None if oldest is None else oldest.id,
                        None if oldest is None else signed64(oldest.delivery_time_ms))


def save_time_ms(aux: Iterable[tuple[bytes, bytes]]) -> int | None:
    """When the dump was saved: the last ms of the second in its `ctime` AUX field
    (rdbSaveInfoAuxFields, unix seconds), so that nothing recorded before the save is after it."""
    ctime = dict(aux).get(b"ctime")
    try:
        return ctime_ms(int(ctime)) if ctime is not None else None
    except ValueError:
        return None


def ctime_ms(seconds: int) -> int:
    """The last ms of a `ctime` second."""
    return seconds * 1000 + 999


def element_count(record: dumpfile.KeyRecord) -> int:
    """A key's elements, as `rdbspec keys` counts them: a stream's length, a container's members,
    1 for a string or a module value (`KeyRecord.count_elements`)."""
    count = record.count_elements()
    return 1 if count is None else count


def from_dump(dump: dumpfile.Dump, model: RedisModel, builder: ReportBuilder, *,
              keep: Callable[[dumpfile.KeyRecord], bool] | None = None, progress: Callable[[int], None] | None = None,
              server: Server | None = None, records: Iterable[dumpfile.KeyRecord] | None = None) -> ReportBuilder:
    """Adds the keys of `dump` (or `records`, some of them) that `keep` selects (all without it),
    calling `progress` with each record's offset; streams' lags by the rules of `server` (a Redis
    version), else of their RDB type, and of Valkey 9 for a Valkey `server` or a VALKEY-magic dump."""
    valkey = dump.header.magic.startswith("VALKEY") or (server is not None and server.name == "valkey")
    as_version = server.version if server is not None and server.name == "redis" else None
    for record in dump.keys() if records is None else records:
        if progress is not None:
            progress(record.offset)
        if keep is not None and not keep(record):
            continue
        builder.add_key(record.db, record.key, record.type_name, record.encoding, record.size,
                        element_count(record), model.usage(record) or 0, record.expire_at_ms)  # None: not counted
        stream = record.value if record.type_name == "stream" else None
        if isinstance(stream, Stream):
            version = stream_version(stream, as_version)
            builder.add_stream(record.db, record.key, stream.length, len(stream.nodes),
                               [group_summary(stream, g, version, valkey) for g in stream.groups])
    return builder
