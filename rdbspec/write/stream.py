"""A stream changed offline as the server changes it (issue 15: `rdbspec rewrite --commands`).

The nodes are kept as the server keeps them: each a listpack with its master entry (the fields
of the entry that opened it, the live and deleted counts) and its entries in order, deleted ones
flagged, not removed. The server's rules, each after its function in redis src/t_stream.c:

* appending (streamAppendItem): to the last node unless its listpack bytes plus the new entry's
  field and value bytes reach `stream-node-max-bytes` or it holds `stream-node-max-entries`
  entries, live or deleted; a new node's master fields are the entry's, and an entry whose
  fields are the master's, in order, is stored SAMEFIELDS (its values only);
* deleting (streamIteratorRemoveEntry): the entry is flagged, the node's live count goes down and
  its deleted count up, and a node whose last live entry goes is removed;
* trimming (streamTrim): whole nodes from the head while they all go, then, unless approximate,
  entries of the next node flagged one by one.

Groups keep the PEL (delivery time and count of each ID, its consumer) and their consumers (seen
and active times, their IDs), as streamCG, streamNACK and streamConsumer do, and the NACK zone of
a type-27 stream (the entries XNACK released, in its order). `to_value` gives the generated objects
of the stream, for the writers: groups ordered by name, consumers by name, PELs by ID, as the
server's radix trees save them (rdbSaveObject); the NACK zone keeps its order, without the entries
that left the PEL or were claimed since (acknowledged, claimed by a consumer). A stream of type 26
or 27 without IDMP data of its own gets the IDMP block Redis writes for one (the default duration
and size, no producer).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rdbspec_generated import WriteIo
from rdbspec_generated import stream as _stream
from rdbspec_generated.enums import ValueType

from ..read.elements import text
from ..read.streams import FLAG_DELETED, FLAG_SAMEFIELDS
from ..server.numbers import MASK64
from ..server.streams import IDMP_DEFAULTS, UNKNOWN_ENTRIES_READ, ZERO_ID, Loaded, StreamId
from .layouts import STREAM_LISTPACK_BLOB, blob, rdb_len, rdb_string, stored

LISTPACK_MAX_SIZE = 1 << 30  # STREAM_LISTPACK_MAX_SIZE
ZERO: StreamId = (0, 0)



def as_text(item: int | bytes) -> bytes:
    return item if isinstance(item, bytes) else b"%d" % item


@dataclass
class Entry:
    id: StreamId
    flags: int
    items: list[int | bytes]  # as stored: the values (SAMEFIELDS) or field, value, field, value...

    def fields(self, master_fields: list[int | bytes]) -> list[tuple[bytes, bytes]]:
        if self.flags & FLAG_SAMEFIELDS:
            return [(as_text(f), as_text(v)) for f, v in zip(master_fields, self.items)]
        return [(as_text(self.items[i]), as_text(self.items[i + 1])) for i in range(0, len(self.items) - 1, 2)]


@dataclass
class Node:
    master_id: StreamId
    master_fields: list[int | bytes]  # as stored
    entries: list[Entry] = field(default_factory=list)
    live: int = 0
    deleted: int = 0

    def listpack(self) -> Any:
        """The node's listpack as the generated objects (the writer derives sizes and counts)."""
        rows = []
        for e in self.entries:
            rows.append(_stream.StreamEntry._new(flags=e.flags, ms_diff=_diff(e.id[0], self.master_id[0]),
                                                 seq_diff=_diff(e.id[1], self.master_id[1]), items=e.items))
        master = _stream.StreamMaster._new(count=self.live, deleted=self.deleted, fields=self.master_fields)
        return _stream.StreamListpack._new(master=master, entries=rows)

    def size(self) -> int:
        """lpBytes of the node's listpack."""
        out = WriteIo()
        self.listpack()._write(out, None, None)
        return len(out.data)


@dataclass
class Pending:
    consumer: bytes | None  # None: a PEL entry no consumer owns (read with a warning)
    delivery_time: int
    delivery_count: int


@dataclass
class EditableConsumer:
    seen_time: int
    active_time: int  # -1: never active (7.2+ streamConsumer.active_time); the seen time before
    pel: dict[StreamId, None] = field(default_factory=dict)  # an ordered set


@dataclass
class EditableGroup:
    last_id: StreamId
    entries_read: int | None  # None: SCG_INVALID_ENTRIES_READ
    pel: dict[StreamId, Pending] = field(default_factory=dict)
    consumers: dict[bytes, EditableConsumer] = field(default_factory=dict)
    nacked: list[StreamId] = field(default_factory=list)  # the NACK zone as read (type 27), in its order

    def nack_zone(self) -> list[StreamId]:
        """The NACK zone to write: the entries read in it that are still pending for no consumer."""
        pel = self.pel
        return [i for i in self.nacked if i in pel and pel[i].consumer is None]

    def disown(self, entry_id: StreamId, pending: Pending) -> None:
        """The entry leaves its consumer's PEL (the group's entry, `pending`, stays as it is)."""
        owner = self.consumers.get(pending.consumer) if pending.consumer is not None else None
        if owner is not None:
            owner.pel.pop(entry_id, None)


def _diff(a: int, b: int) -> int:
    """An ID part minus the master's, as the int64 the listpack stores (uint64 wrap-around)."""
    d = (a - b) & MASK64
    return d - (1 << 64) if d >= 1 << 63 else d


def _sid(pair: Any) -> StreamId:
    return pair.ms.value, pair.seq.value


def _raw_id(raw: Any) -> StreamId:
    return raw.ms, raw.seq


@dataclass
class EditableStream:
    nodes: list[Node] = field(default_factory=list)
    length: int = 0
    last_id: StreamId = ZERO
    first_id: StreamId = ZERO
    max_deleted: StreamId = ZERO
    entries_added: int = 0
    groups: dict[bytes, EditableGroup] = field(default_factory=dict)
    idmp: Any = None  # type 26 data, kept as read

    # -- from a dump -----------------------------------------------------------------------------

    @classmethod
    def from_value(cls, value: Any, meta: Any) -> EditableStream:
        """From a generated `stream_value` read by the Python parsers; `meta` is what a loader
        holds of the stream's metadata (`stream_commands.groups.loaded`), `entries_read` of each
        group as the model knows it (rdbspec.read.streams: stored or estimated)."""
        out = cls(length=value.length.value, last_id=_sid(value.last_id), first_id=meta.first_id,
                  max_deleted=meta.max_deleted, entries_added=meta.entries_added, idmp=getattr(value, "idmp", None))
        for node in value.nodes:
            lp = node.listpack.payload
            master = lp.master
            n = Node(_raw_id(node.node_key), list(master.fields), live=master.count, deleted=master.deleted)
            for row in lp.entries:
                entry_id = ((n.master_id[0] + row.ms_diff) & MASK64, (n.master_id[1] + row.seq_diff) & MASK64)
                n.entries.append(Entry(entry_id, row.flags, list(row.items)))
            out.nodes.append(n)
        return out

    # -- entries ---------------------------------------------------------------------------------

    def live_entries(self) -> Iterator[tuple[Node, Entry]]:
        for node in self.nodes:
            for entry in node.entries:
                if not entry.flags & FLAG_DELETED:
                    yield node, entry

    def live_ids_after(self, after: StreamId) -> Iterator[StreamId]:
        """The IDs of the live entries after `after`, in order (a streamIterator from after + 1)."""
        for node in self.nodes[max(len(self._nodes_until(after)) - 1, 0):]:
            for entry in node.entries:
                if entry.id > after and not entry.flags & FLAG_DELETED:
                    yield entry.id

    def loaded(self) -> Loaded:
        """The metadata the read counter's rules look at (`groups.Loaded`)."""
        return Loaded(self.entries_added, self.max_deleted, self.first_id)

    def find(self, entry_id: StreamId) -> Entry | None:
        """The live entry with this ID (streamEntryExists)."""
        for node in self._nodes_for(entry_id):
            for entry in node.entries:
                if entry.id == entry_id and not entry.flags & FLAG_DELETED:
                    return entry
        return None

    def _nodes_until(self, entry_id: StreamId) -> list[Node]:
        """The nodes whose master ID is not after `entry_id`."""
        return [n for n in self.nodes if n.master_id <= entry_id]

    def _nodes_for(self, entry_id: StreamId) -> list[Node]:
        """The node that may hold `entry_id`: the last one whose master ID is not after it."""
        return self._nodes_until(entry_id)[-1:]

    def edge_id(self, first: bool) -> StreamId:
        """streamGetEdgeID with skip_tombstones: the first (last) live ID; 0-0 (max) if none."""
        entries = [e.id for _, e in self.live_entries()]
        if not entries:
            return ZERO if first else (MASK64, MASK64)
        return entries[0] if first else entries[-1]

    def append(self, entry_id: StreamId, fields: list[tuple[bytes, bytes]], node_max_bytes: int,
               node_max_entries: int) -> None:
        """streamAppendItem, after its ID checks (the caller's)."""
        tail = self.nodes[-1] if self.nodes else None
        if tail is not None:
            limit = node_max_bytes if 0 < node_max_bytes <= LISTPACK_MAX_SIZE else LISTPACK_MAX_SIZE
            if tail.size() + sum(len(f) + len(v) for f, v in fields) >= limit:
                tail = None
            elif node_max_entries and tail.live + tail.deleted >= node_max_entries:
                tail = None
        names = [stored(f) for f, _ in fields]
        if tail is None:
            tail = Node(entry_id, names, live=0)
            self.nodes.append(tail)
        same = len(names) == len(tail.master_fields) and all(
            as_text(a) == as_text(b) for a, b in zip(names, tail.master_fields))
        items = [stored(v) for _, v in fields] if same else [x for f, v in fields for x in (stored(f), stored(v))]
        tail.entries.append(Entry(entry_id, FLAG_SAMEFIELDS if same else 0, items))
        tail.live += 1
        self.length += 1
        self.entries_added += 1
        self.last_id = entry_id
        if self.length == 1:
            self.first_id = entry_id

    def delete(self, entry_id: StreamId) -> bool:
        """streamDeleteItem (streamIteratorRemoveEntry): False when there is no such live entry."""
        for node in self._nodes_for(entry_id):
            for entry in node.entries:
                if entry.id == entry_id and not entry.flags & FLAG_DELETED:
                    self._remove(node, entry)
                    return True
        return False

    def _remove(self, node: Node, entry: Entry) -> None:
        if node.live == 1:  # the node's last live entry: the whole node goes
            self.nodes.remove(node)
        else:
            entry.flags |= FLAG_DELETED
            node.live -= 1
            node.deleted += 1
        self.length -= 1

    def trim(self, maxlen: int | None, minid: StreamId | None, approx: bool, limit: int) -> int:
        """streamTrim: how many entries went (none without `maxlen` or `minid`)."""
        deleted = 0
        low = minid if minid is not None else ZERO_ID  # read when `maxlen` is None
        while self.nodes:
            node = self.nodes[0]
            if maxlen is not None and self.length <= maxlen:
                break
            entries = node.live
            if limit and deleted + entries > limit:
                break
            if maxlen is not None:
                remove_node = self.length - entries >= maxlen
            else:
                remove_node = node.entries[-1].id < low  # lpGetEdgeStreamID: the last ID, deleted or not
            if remove_node:
                self.nodes.pop(0)
                self.length -= entries
                deleted += entries
                continue
            if approx:
                break
            for entry in node.entries:
                stop = self.length <= maxlen if maxlen is not None else entry.id >= low
                if stop:
                    break
                if not entry.flags & FLAG_DELETED:
                    entry.flags |= FLAG_DELETED
                    node.live -= 1
                    node.deleted += 1
                    self.length -= 1
                    deleted += 1
            break
        if deleted:
            self.first_id = self.edge_id(first=True)
        return deleted

    # -- to the writers ----------------------------------------------------------------------------

    def to_value(self, type_code: int, compress: bool = True) -> Any:
        """The generated `stream_value` of type `type_code` (15, 19, 21, 26, 27)."""
        nodes = [_stream.StreamNode._new(node_key=_stream.StreamIdRaw._new(ms=n.master_id[0], seq=n.master_id[1]),
                                         listpack=blob(STREAM_LISTPACK_BLOB, n.listpack(), compress))
                 for n in self.nodes]
        out = _stream.StreamValue._new(type_code=type_code, nodes=nodes, length=rdb_len(self.length),
                                       last_id=id_value(self.last_id))
        if type_code >= ValueType.STREAM_LISTPACKS_2:
            out.first_id, out.max_deleted_entry_id = id_value(self.first_id), id_value(self.max_deleted)
            out.entries_added = rdb_len(self.entries_added)
        if type_code >= ValueType.STREAM_LISTPACKS_4:
            out.idmp = self.idmp if self.idmp is not None else default_idmp()
        out.groups = [self._group(name, g, type_code, compress) for name, g in sorted(self.groups.items())]
        return out

    @staticmethod
    def _group(name: bytes, g: EditableGroup, type_code: int, compress: bool) -> Any:
        pel = [_stream.StreamPelEntry._new(id=_raw(i), delivery_time=p.delivery_time, delivery_count=rdb_len(
            p.delivery_count)) for i, p in sorted(g.pel.items())]
        out = _stream.StreamGroup._new(type_code=type_code, name=rdb_string(name, compress),
                                       last_id=id_value(g.last_id), pel=pel)
        if type_code >= ValueType.STREAM_LISTPACKS_2:
            out.entries_read = rdb_len(UNKNOWN_ENTRIES_READ if g.entries_read is None else g.entries_read)
        out.consumers = []
        for cname, c in sorted(g.consumers.items()):
            consumer = _stream.StreamConsumer._new(type_code=type_code, name=rdb_string(cname, compress),
                                                   seen_time=c.seen_time, pel=[_raw(i) for i in sorted(c.pel)])
            if type_code >= ValueType.STREAM_LISTPACKS_3:
                consumer.active_time = c.active_time
            out.consumers.append(consumer)
        if type_code >= ValueType.STREAM_LISTPACKS_5:
            out.nacked = [_raw(i) for i in g.nack_zone()]
        return out


def groups_from_value(value: Any, model_groups: list[Any]) -> dict[bytes, EditableGroup]:
    """The groups of a generated `stream_value` with `entries_read` as the model gives it."""
    out: dict[bytes, EditableGroup] = {}
    for g, model in zip(value.groups, model_groups):
        group = EditableGroup(_sid(g.last_id), model.entries_read)
        owner = {}
        for c in g.consumers:
            consumer = EditableConsumer(c.seen_time, c.active_time if c.active_time is not None else c.seen_time)
            for raw in c.pel:
                consumer.pel[_raw_id(raw)] = None
                owner[_raw_id(raw)] = text(c.name)
            group.consumers[text(c.name)] = consumer
        for p in g.pel:
            pid = _raw_id(p.id)
            group.pel[pid] = Pending(owner.get(pid), p.delivery_time, p.delivery_count.value)
        group.nacked = [_raw_id(raw) for raw in g.nacked or ()]
        out[text(g.name)] = group
    return out


def default_idmp() -> Any:
    """The IDMP block of a stream that never had IDMP settings or producers (the defaults of
    stream-idmp-duration and stream-idmp-maxsize, redis src/rdb.c rdbSaveStreamIdmpEntries)."""
    duration, max_entries = IDMP_DEFAULTS
    return _stream.StreamIdmp._new(duration=rdb_len(duration), max_entries=rdb_len(max_entries), producers=[],
                                   iids_added=rdb_len(0), iids_duplicates=rdb_len(0))


def id_value(stream_id: StreamId) -> Any:
    """A `stream_id` (two rdb lengths) to write."""
    return _stream.StreamId._new(ms=rdb_len(stream_id[0]), seq=rdb_len(stream_id[1]))


def _raw(stream_id: StreamId) -> Any:
    return _stream.StreamIdRaw._new(ms=stream_id[0], seq=stream_id[1])
