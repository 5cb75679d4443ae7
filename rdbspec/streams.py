"""The stream model: entries as columns, consumer groups with every pending entry resolved to
its consumer, and the checks the server makes on load.

Entries are kept as parallel lists (ms, seq, deleted, fields), built node by node from the
generated parser's columns, so a million entries are a few lists rather than a million
objects; `entries()` yields `StreamEntry` views on demand.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .errors import IntegrityError

MASK64 = (1 << 64) - 1
StreamId = tuple[int, int]
FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2
UNKNOWN_ENTRIES_READ = MASK64  # SCG_INVALID_ENTRIES_READ (-1) saved as a uint64


def format_id(stream_id: StreamId) -> str:
    return f"{stream_id[0]}-{stream_id[1]}"


def _value(v: int | bytes) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


@dataclass
class StreamEntry:
    id: StreamId
    fields: list[tuple[bytes, bytes]]
    deleted: bool = False


@dataclass
class StreamNode:
    """One listpack node: its master ID and the live/deleted counts its header declares."""

    master_id: StreamId
    count: int
    deleted: int
    first_entry: int  # index of its first entry in the stream's columns
    num_entries: int


@dataclass
class PendingEntry:
    id: StreamId
    consumer: bytes | None
    delivery_time_ms: int
    delivery_count: int


@dataclass
class Consumer:
    name: bytes
    seen_time_ms: int
    active_time_ms: int | None
    pending: list[StreamId]


@dataclass
class ConsumerGroup:
    name: bytes
    last_delivered_id: StreamId
    entries_read: int | None  # None: not stored (type 15) or recorded as unknown
    pending: list[PendingEntry]
    consumers: list[Consumer]


@dataclass
class IdmpProducer:
    pid: bytes
    iids: list[tuple[bytes, StreamId]]


@dataclass
class Idmp:
    duration_s: int
    max_entries: int
    producers: list[IdmpProducer]
    iids_added: int
    iids_duplicates: int


@dataclass
class Stream:
    type_code: int
    length: int
    last_id: StreamId
    first_id: StreamId | None
    max_deleted_entry_id: StreamId | None
    entries_added: int | None
    nodes: list[StreamNode] = field(default_factory=list)
    groups: list[ConsumerGroup] = field(default_factory=list)
    idmp: Idmp | None = None
    # entry columns, in file order, deleted entries included
    ms: list[int] = field(default_factory=list)
    seq: list[int] = field(default_factory=list)
    deleted: list[bool] = field(default_factory=list)
    fields: list[list[tuple[bytes, bytes]]] = field(default_factory=list)

    def entries(self, include_deleted: bool = False) -> Iterator[StreamEntry]:
        for i in range(len(self.ms)):
            if include_deleted or not self.deleted[i]:
                yield StreamEntry((self.ms[i], self.seq[i]), self.fields[i], self.deleted[i])

    @classmethod
    def from_spec(cls, v, type_code: int) -> Stream:
        """Builds the model from a generated `stream_value`, checking what the server checks."""
        from .values import text  # values imports this module

        def sid(pair) -> StreamId:
            return (pair.ms.value, pair.seq.value)

        stream = cls(
            type_code=type_code,
            length=v.length.value,
            last_id=sid(v.last_id),
            first_id=sid(v.first_id) if v.first_id is not None else None,
            max_deleted_entry_id=sid(v.max_deleted_entry_id) if v.max_deleted_entry_id is not None else None,
            entries_added=v.entries_added.value if v.entries_added is not None else None,
        )
        for node in v.nodes:
            stream._add_node(node)
        for g in v.groups:
            stream.groups.append(_group(g, text))
        if v.idmp is not None:
            stream.idmp = Idmp(
                v.idmp.duration.value, v.idmp.max_entries.value,
                [IdmpProducer(text(p.pid), [(text(i.iid), sid(i.id)) for i in p.iids]) for p in v.idmp.producers],
                v.idmp.iids_added.value, v.idmp.iids_duplicates.value)
        stream._check()
        return stream

    def _add_node(self, node) -> None:
        lp = node.listpack.plain if node.listpack.plain is not None else node.listpack.lzf
        master_ms, master_seq = node.node_key.ms, node.node_key.seq
        master_fields = [_value(f) for f in lp.master.fields]
        cols = lp.entries
        self.nodes.append(StreamNode((master_ms, master_seq), lp.master.count, lp.master.deleted,
                                     len(self.ms), len(cols)))
        ms_out, seq_out, deleted_out, fields_out = self.ms, self.seq, self.deleted, self.fields
        for flags, ms_diff, seq_diff, items in zip(cols.flags, cols.ms_diff, cols.seq_diff, cols.items):
            ms_out.append((master_ms + ms_diff) & MASK64)
            seq_out.append((master_seq + seq_diff) & MASK64)
            deleted_out.append(bool(flags & FLAG_DELETED))
            values = [v if isinstance(v, bytes) else str(v).encode() for v in items]
            if flags & FLAG_SAMEFIELDS:
                fields_out.append(list(zip(master_fields, values)))
            else:
                fields_out.append(list(zip(values[0::2], values[1::2])))

    def _check(self) -> None:
        """The load-time rules of redis src/rdb.c rdbLoadObject and t_stream.c (notes §6.4)."""
        previous: StreamId | None = None
        for node in self.nodes:
            flagged = sum(self.deleted[node.first_entry:node.first_entry + node.num_entries])
            if flagged != node.deleted or node.num_entries - flagged != node.count:
                raise IntegrityError(
                    f"stream node {format_id(node.master_id)} declares {node.count} live and {node.deleted} "
                    f"deleted entries but flags {node.num_entries - flagged} and {flagged}")
            for i in range(node.first_entry, node.first_entry + node.num_entries):
                current = (self.ms[i], self.seq[i])
                if previous is not None and current <= previous:
                    raise IntegrityError(f"stream entry {format_id(current)} is not after {format_id(previous)}")
                previous = current
        live = sum(1 for d in self.deleted if not d)
        if live != self.length:
            raise IntegrityError(f"stream length {self.length} but {live} live entries")
        names = set()
        for group in self.groups:
            if group.name in names:
                raise IntegrityError(f"duplicated consumer group name {group.name!r}")
            names.add(group.name)


def _group(g, text) -> ConsumerGroup:
    name = text(g.name)
    pending: dict[StreamId, PendingEntry] = {}
    for row in g.pel:
        entry_id = (row.id.ms, row.id.seq)
        if entry_id in pending:
            raise IntegrityError(f"group {name!r}: entry {format_id(entry_id)} is pending twice")
        pending[entry_id] = PendingEntry(entry_id, None, row.delivery_time, row.delivery_count.value)
    consumers: list[Consumer] = []
    seen_names = set()
    for c in g.consumers:
        cname = text(c.name)
        if cname in seen_names:
            raise IntegrityError(f"group {name!r}: duplicate consumer {cname!r}")
        seen_names.add(cname)
        ids: list[StreamId] = []
        for raw in c.pel:
            entry_id = (raw.ms, raw.seq)
            owner = pending.get(entry_id)
            if owner is None:
                raise IntegrityError(f"group {name!r} consumer {cname!r}: pending entry "
                                     f"{format_id(entry_id)} is not in the group PEL")
            if owner.consumer is not None:
                raise IntegrityError(f"group {name!r} consumer {cname!r}: entry {format_id(entry_id)} "
                                     f"is already pending for {owner.consumer!r}")
            owner.consumer = cname
            ids.append(entry_id)
        consumers.append(Consumer(cname, c.seen_time, c.active_time, ids))
    entries_read = g.entries_read.value if g.entries_read is not None else None
    if entries_read == UNKNOWN_ENTRIES_READ:
        entries_read = None
    return ConsumerGroup(name, (g.last_id.ms.value, g.last_id.seq.value), entries_read,
                         list(pending.values()), consumers)
