"""The stream model: listpack nodes decoded one at a time into entry columns, consumer groups
with every pending entry resolved to its consumer, and the checks the server makes on load.

A stream keeps its nodes as flat arrays (`NodeTable`: master IDs and listpack offsets, 24
bytes a node); a node's listpack is decoded when its entries are asked for, and not kept:
walking a million-entry stream holds one node's columns (IDs, deleted flags, and fields made
per entry when asked for) at a time. `columns()` gathers them all for callers that need
random access by ID (XRANGE...).
Group and PEL checks run when the value is built; entry checks (node counts, ascending IDs,
the stream length) run as the nodes are decoded, so they report where the walk reaches them.

What the server refuses on load is an `IntegrityError` (redis src/rdb.c rdbLoadObject: two
nodes with one master ID, a length but no nodes, a duplicated group name, consumer or group PEL entry, a consumer PEL
entry missing from its group PEL or already pending for a consumer, an ID of a type-27 group's NACK
zone missing from its group PEL or pending for a consumer). What it loads is a warning,
told to the sink in force when the value was decoded (`rdbspec_generated.collecting`): a node
whose flags disagree with its declared counts, IDs out of order, a stored length that differs
from the live entries (the server keeps the stored one, so XLEN answers it), a group PEL entry
no consumer owns outside the NACK zone (refused only with `sanitize-dump-payload yes`), an ID twice
in a NACK zone. Nodes are kept in master ID order, as the server's radix tree holds them.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, overload

from rdbspec_generated import WarningSink, collecting, current_sink
from rdbspec_generated.enums import EntryFlag
from rdbspec_generated.rdb_string import RdbLen

from ..errors import IntegrityError, InternalError, RdbError
from ..server.numbers import MASK64
from ..server.streams import IDMP_DEFAULTS, UNKNOWN_ENTRIES_READ, StreamId
from .elements import CHUNK_ROWS, container, first_repeated, text, texts, values

try:  # compiled by setup.py from _stream_ids.pyx; absent without a C compiler
    from rdbspec_generated.native._columns import ScalarColumns

    from . import _stream_ids
except ImportError:
    _stream_ids = None  # type: ignore[assignment]

# a group's PEL resolved to its consumers (`_stream_ids.group_pel`, `_pel`): the IDs' ms and seq, delivery
# times and counts, each entry's owner (an index of the consumers, -1: none), each consumer's (ms, seq)
Pel = tuple["array[int]", "array[int]", "array[int]", "array[int]", "array[int]",
            list[tuple["array[int]", "array[int]"]]]

# an entry's flag bits (the spec's `stream::entry_flag`), as the numbers its flags are read and written as
FLAG_DELETED, FLAG_SAMEFIELDS = int(EntryFlag.DELETED), int(EntryFlag.SAMEFIELDS)
LOADS_UNCHECKED = "redis src/rdb.c rdbLoadObject"  # where the warnings' checks are not made


def format_id(stream_id: StreamId) -> str:
    return f"{stream_id[0]}-{stream_id[1]}"


@dataclass
class StreamEntry:
    id: StreamId
    fields: list[tuple[bytes, bytes]]
    deleted: bool = False


class EntryFields(Sequence[list[tuple[bytes, bytes]]]):
    """A node's entries' (field, value) pairs, each entry's list made when it is asked for. An
    entry's items are its values beside the master fields (SAMEFIELDS), else field, value, field,
    value... A list of lists with the Python backend, a `RaggedColumns` with the native one."""

    __slots__ = ("_items", "_samefields", "_master_fields", "_flat")

    def __init__(self, items: Any, samefields: Sequence[int], master_fields: list[bytes]):
        self._items = items
        self._samefields = samefields
        self._master_fields = master_fields
        self._flat: list[bytes] | None = None  # every row's texts, for columns

    @property
    def items(self) -> Any:
        """Every entry's items (a list per entry, or `RaggedColumns`)."""
        return self._items

    @property
    def samefields(self) -> Sequence[int]:
        """1 where the entry's items are values of the master fields."""
        return self._samefields

    @property
    def master_fields(self) -> list[bytes]:
        return self._master_fields

    def __len__(self) -> int:
        return len(self._samefields)

    @overload
    def __getitem__(self, index: int) -> list[tuple[bytes, bytes]]: ...

    @overload
    def __getitem__(self, index: slice) -> list[list[tuple[bytes, bytes]]]: ...

    def __getitem__(self, index: int | slice) -> list[tuple[bytes, bytes]] | list[list[tuple[bytes, bytes]]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        samefields = self._samefields[index]  # IndexError out of range
        row = self._row(index % len(self))
        if samefields:
            return list(zip(self._master_fields, row))
        return list(zip(row[0::2], row[1::2]))

    def __iter__(self) -> Iterator[list[tuple[bytes, bytes]]]:
        master = self._master_fields
        for samefields, row in zip(self._samefields, self._rows()):
            yield list(zip(master, row)) if samefields else list(zip(row[0::2], row[1::2]))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def _row(self, index: int) -> list[bytes]:
        starts = getattr(self._items, "row_starts", None)
        if starts is None:
            return texts(self._items[index])
        return self._texts()[starts[index]:starts[index + 1]]

    def _rows(self) -> Iterator[list[bytes]]:
        starts = getattr(self._items, "row_starts", None)
        if starts is None:
            return map(texts, self._items)
        flat = self._texts()
        return (flat[a:b] for a, b in zip(starts, starts[1:]))

    def _texts(self) -> list[bytes]:
        if self._flat is None:  # one bulk call for the node's elements
            self._flat = texts(self._items.values)
        return self._flat


@dataclass
class EntryColumns:
    """Entries as parallel columns, in file order, deleted entries included: IDs (uint64 arrays
    once decoded), deleted flags (0/1 bytes) and each entry's fields (`EntryFields`)."""

    ms: Sequence[int] = field(default_factory=list)
    seq: Sequence[int] = field(default_factory=list)
    deleted: Sequence[int] = field(default_factory=list)
    fields: Sequence[list[tuple[bytes, bytes]]] = field(default_factory=list)

    @classmethod
    def from_rows(cls, rows: Any, master_id: StreamId, master_fields: list[bytes]) -> EntryColumns:
        """A generated `stream_entry` columns object: IDs are master + diff, wrapping uint64
        (redis src/t_stream.c streamIteratorGetID). With the native backend its
        columns compute the IDs and flags in bulk."""
        flags = rows.flags
        if hasattr(flags, "wrapping_u64"):
            ms, seq = rows.ms_diff.wrapping_u64(master_id[0]), rows.seq_diff.wrapping_u64(master_id[1])
            deleted, samefields = flags.bits(FLAG_DELETED), flags.bits(FLAG_SAMEFIELDS)
        else:
            ms = array("Q", [(master_id[0] + d) & MASK64 for d in rows.ms_diff])
            seq = array("Q", [(master_id[1] + d) & MASK64 for d in rows.seq_diff])
            deleted = bytes([f & FLAG_DELETED for f in flags])
            samefields = bytes([(f & FLAG_SAMEFIELDS) >> 1 for f in flags])
        return cls(ms, seq, deleted, EntryFields(rows.items, samefields, master_fields))

    def __len__(self) -> int:
        return len(self.ms)

    def extend(self, other: EntryColumns) -> None:
        for mine, theirs in ((self.ms, other.ms), (self.seq, other.seq), (self.deleted, other.deleted),
                             (self.fields, other.fields)):
            mine.extend(theirs)  # type: ignore[union-attr]  # a gathering EntryColumns() holds lists

    def entries(self, include_deleted: bool = False) -> Iterator[StreamEntry]:
        for ms, seq, deleted, fields in zip(self.ms, self.seq, self.deleted, self.fields):
            if include_deleted or not deleted:
                yield StreamEntry((ms, seq), fields, bool(deleted))


@dataclass
class NodeEntries:
    """One node's listpack: the live and deleted counts its master entry declares, its entries."""

    count: int
    deleted: int
    columns: EntryColumns


class StreamNode:
    """One listpack node: its master ID, and `read()`, which decodes its listpack each time."""

    __slots__ = ("master_id", "_read")

    def __init__(self, master_id: StreamId, read: Callable[[], NodeEntries]):
        self.master_id = master_id
        self._read = read

    @classmethod
    def from_spec(cls, node: Any) -> StreamNode:
        """A node over a generated `stream_node` (its listpack is read lazily; the generated
        object is not kept)."""
        master_id = (node.node_key.ms, node.node_key.seq)
        return cls(master_id, partial(_node_entries, *_listpack_place(node), master_id))

    @classmethod
    def of(cls, master_id: StreamId, entries: NodeEntries) -> StreamNode:
        """A node over entries already in memory."""
        return cls(master_id, lambda: entries)

    def read(self) -> NodeEntries:
        return self._read()

    def __repr__(self) -> str:
        return f"StreamNode({format_id(self.master_id)})"


class NodeTable(Sequence[StreamNode]):
    """A stream's nodes as flat arrays: master IDs, and where each node's listpack blob sits in
    the stream the nodes were read from (`source`: see `_listpack_place`); 24 bytes a node,
    whatever the node count. `table[i]` makes a `StreamNode` that decodes its listpack from there
    through the generated parser."""

    __slots__ = ("ms", "seq", "offsets", "source", "ascending")

    def __init__(self, source: Any = None):
        self.ms, self.seq, self.offsets, self.source = array("Q"), array("Q"), array("q"), source
        self.ascending = True  # the file held the nodes in strictly ascending master ID order

    @classmethod
    def from_spec(cls, nodes: Iterable[Any]) -> NodeTable:
        """The nodes of a generated `stream_value`, in master ID order (the server keeps them in a
        radix tree keyed by master ID, whatever the file order)."""
        table = cls()
        last, ascending = None, True
        for node in nodes:
            table.source, offset = _listpack_place(node)
            master_id = (node.node_key.ms, node.node_key.seq)
            ascending = ascending and (last is None or last < master_id)
            last = master_id
            table.ms.append(master_id[0])
            table.seq.append(master_id[1])
            table.offsets.append(offset)
        table.ascending = ascending
        if not ascending:  # rare: only then a list of the IDs is made
            ids = table.master_ids()
            order = sorted(range(len(ids)), key=ids.__getitem__)
            for column in (table.ms, table.seq, table.offsets):
                column[:] = array(column.typecode, [column[i] for i in order])
        return table

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, index: int) -> StreamNode: ...

    @overload
    def __getitem__(self, index: slice) -> list[StreamNode]: ...

    def __getitem__(self, index: int | slice) -> StreamNode | list[StreamNode]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        master_id = (self.ms[index], self.seq[index])
        return StreamNode(master_id, partial(_node_entries, self.source, self.offsets[index], master_id))

    def __iter__(self) -> Iterator[StreamNode]:
        return map(self.__getitem__, range(len(self)))

    def master_ids(self) -> list[StreamId]:
        return list(zip(self.ms, self.seq))

    def listpack_sizes(self) -> list[int]:
        """Each node's listpack bytes, decompressed (what the server allocates for it), read from
        the lengths before its blob (spec `rdb_string::rdb_blob`: `len`, or an LZF run's `ulen`)."""
        if self.source is None:
            return []
        io = self.source[1]
        sizes = []
        for offset in self.offsets:
            length, pos = RdbLen._read(io, offset, None, None)
            if length.is_encoded:  # LZF: clen, then ulen
                pos = RdbLen._skip(io, pos, None, None)
                length = RdbLen._read(io, pos, None, None)[0]
            sizes.append(length.value)
        return sizes


def _listpack_place(node: Any) -> tuple[tuple[Any, Any, Any], int]:
    """Where a generated `stream_node`'s listpack blob is: (the node's type, its stream, the root
    it was read under) and the position (the generator keeps a `-rdbspec-lazy` field's position
    as `_lazy_<field>`)."""
    return (type(node), node._io, node._root), node._lazy_listpack


@dataclass(slots=True)
class PendingEntry:
    id: StreamId
    consumer: bytes | None
    delivery_time_ms: int
    delivery_count: int


class _Columns(Sequence[Any]):
    """A sequence kept as columns, equal to the list of the items it stands for."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class IdColumns(_Columns, Sequence[StreamId]):
    """Stream IDs as two columns of unsigned 64-bit numbers (arrays "Q" of ms and seq), answering
    as the list of (ms, seq) tuples they stand for: a consumer's PEL, a group PEL's IDs."""

    __slots__ = ("ms", "seq")

    def __init__(self, ms: array[int], seq: array[int]):
        self.ms, self.seq = ms, seq

    @classmethod
    def of(cls, ids: Sequence[StreamId]) -> IdColumns:
        """`ids` as columns (themselves when they are)."""
        if isinstance(ids, IdColumns):
            return ids
        return cls(array("Q", [i[0] for i in ids]), array("Q", [i[1] for i in ids]))

    def __len__(self) -> int:
        return len(self.ms)

    def __iter__(self) -> Iterator[StreamId]:
        return zip(self.ms, self.seq)

    @overload
    def __getitem__(self, index: int) -> StreamId: ...

    @overload
    def __getitem__(self, index: slice) -> list[StreamId]: ...

    def __getitem__(self, index: int | slice) -> StreamId | list[StreamId]:
        if isinstance(index, slice):
            return list(zip(self.ms[index], self.seq[index]))
        return self.ms[index], self.seq[index]


class PendingEntries(_Columns, Sequence[PendingEntry]):
    """A group's PEL as columns, in the order the dump lists it: the IDs, the consumer each is
    pending for (an index into `names`, -1 for none), the delivery times and counts. A
    `PendingEntry` is made for an entry when it is asked for; the JSON writer reads the columns
    (`jsonl.group_json`), without an object per entry."""

    __slots__ = ("ids", "owners", "names", "delivery_times_ms", "delivery_counts")

    def __init__(self, ids: IdColumns, owners: array[int], names: list[bytes], delivery_times_ms: array[int],
                 delivery_counts: array[int]):
        self.ids, self.owners, self.names = ids, owners, names
        self.delivery_times_ms, self.delivery_counts = delivery_times_ms, delivery_counts

    @classmethod
    def of(cls, entries: Sequence[PendingEntry]) -> PendingEntries:
        """`entries` as columns (themselves when they are)."""
        if isinstance(entries, PendingEntries):
            return entries
        names = list(dict.fromkeys(p.consumer for p in entries if p.consumer is not None))
        index = {name: i for i, name in enumerate(names)}
        return cls(IdColumns.of([p.id for p in entries]),
                   array("q", [-1 if p.consumer is None else index[p.consumer] for p in entries]), names,
                   array("q", [p.delivery_time_ms for p in entries]), array("Q", [p.delivery_count for p in entries]))

    @property
    def consumers(self) -> list[bytes | None]:
        """Each entry's consumer (None: pending for none)."""
        names = self.names
        return [names[i] if i >= 0 else None for i in self.owners]

    def __len__(self) -> int:
        return len(self.owners)

    def __iter__(self) -> Iterator[PendingEntry]:
        return map(PendingEntry, self.ids, self.consumers, self.delivery_times_ms, self.delivery_counts)

    @overload
    def __getitem__(self, index: int) -> PendingEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[PendingEntry]: ...

    def __getitem__(self, index: int | slice) -> PendingEntry | list[PendingEntry]:
        if isinstance(index, slice):
            return list(self)[index]
        owner = self.owners[index]
        return PendingEntry(self.ids[index], self.names[owner] if owner >= 0 else None,
                            self.delivery_times_ms[index], self.delivery_counts[index])


@dataclass
class Consumer:
    name: bytes
    seen_time_ms: int
    active_time_ms: int | None
    pending: Sequence[StreamId]  # as read from a dump: IdColumns


@dataclass
class ConsumerGroup:
    name: bytes
    last_delivered_id: StreamId
    entries_read: int | None  # None: not stored (type 15) or recorded as unknown
    pending: Sequence[PendingEntry]  # as read from a dump: PendingEntries
    consumers: list[Consumer]
    # the NACK zone (type 27, Redis 8.8 XNACK): pending entries released back to the group, owned by
    # no consumer, in the order of the group's time-ordered PEL list; None before type 27
    nacked: Sequence[StreamId] | None = None

    def nacked_ids(self) -> frozenset[StreamId]:
        """The IDs of the NACK zone (empty before type 27)."""
        return frozenset(self.nacked or ())


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

    @property
    def is_default(self) -> bool:
        """What a stream never given IDMP settings or producers holds (what a target without IDMP
        loses nothing of dropping)."""
        return ((self.duration_s, self.max_entries) == IDMP_DEFAULTS and not self.producers
                and self.iids_added == 0 and self.iids_duplicates == 0)


@dataclass
class Stream:
    type_code: int
    length: int
    last_id: StreamId
    first_id: StreamId | None
    max_deleted_entry_id: StreamId | None
    entries_added: int | None
    nodes: Sequence[StreamNode] = field(default_factory=list)  # a NodeTable when read from a file
    groups: list[ConsumerGroup] = field(default_factory=list)
    idmp: Idmp | None = None
    origin: tuple[int, bytes] | None = None  # (record offset, key), named by errors
    warn: WarningSink | None = field(default=None, repr=False, compare=False)  # told what the server loads
    _columns: EntryColumns | None = field(default=None, repr=False, compare=False)

    def node_entries(self) -> Iterator[tuple[StreamNode, NodeEntries]]:
        """Decodes the nodes one at a time, with the checks of `walk_nodes`."""
        return walk_nodes(self.nodes, self.origin, self.length, self.warn)

    def entries(self, include_deleted: bool = False) -> Iterator[StreamEntry]:
        for _, got in self.node_entries():
            yield from got.columns.entries(include_deleted)

    def first_live_id(self) -> StreamId | None:
        """The first entry not deleted (streamGetEdgeID), decoding its nodes one at a time and
        each on its own; None when every entry is deleted."""
        for index in range(len(self.nodes)):
            cols = self.node_columns(index)
            for row in range(len(cols)):
                if not cols.deleted[row]:
                    return cols.ms[row], cols.seq[row]
        return None

    def node_columns(self, index: int) -> EntryColumns:
        """The entries of node `index`, decoded and checked on their own."""
        return next(walk_nodes([self.nodes[index]], self.origin, warn=self.warn))[1].columns

    def columns(self) -> EntryColumns:
        """Every entry in one set of columns, built on first use and kept (random access by ID)."""
        if self._columns is None:
            gathered = EntryColumns()
            for _, got in self.node_entries():
                gathered.extend(got.columns)
            self._columns = gathered
        return self._columns

    @classmethod
    def from_spec(cls, v: Any, type_code: int) -> Stream:
        """Builds the model from a generated `stream_value`, checking what the server checks."""
        def sid(pair: Any) -> StreamId:
            return (pair.ms.value, pair.seq.value)

        stream = cls(
            type_code=type_code,
            length=v.length.value,
            last_id=sid(v.last_id),
            first_id=sid(v.first_id) if v.first_id is not None else None,
            max_deleted_entry_id=sid(v.max_deleted_entry_id) if v.max_deleted_entry_id is not None else None,
            entries_added=v.entries_added.value if v.entries_added is not None else None,
        )
        stream.warn = current_sink()
        # the server keeps nodes in a radix tree keyed by master ID, so in ID order, whatever the
        # file order, and refuses a master ID twice ("Listpack re-added with existing key")
        stream.nodes = NodeTable.from_spec(v.iter_nodes())  # one node object at a time
        ids = [] if stream.nodes.ascending else stream.nodes.master_ids()
        if not all(map(operator.lt, ids, ids[1:])):
            twice = next(after for before, after in zip(ids, ids[1:]) if before == after)
            raise IntegrityError(f"two stream nodes have the master ID {format_id(twice)}")
        if stream.length and not stream.nodes:  # "Stream length inconsistent with rax entries"
            raise IntegrityError(f"stream length {stream.length} but no nodes")
        for g in v.groups:
            stream.groups.append(_group(g, stream.warn))
        if v.idmp is not None:
            stream.idmp = Idmp(
                v.idmp.duration.value, v.idmp.max_entries.value,
                [IdmpProducer(text(p.pid), [(text(i.iid), sid(i.id)) for i in p.iids]) for p in v.idmp.producers],
                v.idmp.iids_added.value, v.idmp.iids_duplicates.value)
        stream._check()
        return stream

    def _check(self) -> None:
        """The group rules of redis src/rdb.c rdbLoadObject (entry rules: `node_entries`)."""
        names = set()
        for group in self.groups:
            if group.name in names:
                raise IntegrityError(f"duplicated consumer group name {group.name!r}")
            names.add(group.name)


def walk_nodes(nodes: Iterable[StreamNode], origin: tuple[int, bytes] | None, length: int | None = None,
               warn: WarningSink | None = None) -> Iterator[tuple[StreamNode, NodeEntries]]:
    """Decodes `nodes` one at a time, checking each node's declared counts against its flags
    and that IDs ascend; with `length` (all of a stream's nodes), that the live entries number
    `length` (notes §6.4). The server checks none of these on load (redis src/rdb.c
    rdbLoadObject; t_stream.c streamValidateListpackIntegrity reads count + deleted entries,
    which the spec's grammar does too): each is a warning, told to `warn` (none: not told).
    `origin` (record offset, key) locates errors and warnings."""
    previous: StreamId | None = None
    live = 0
    for node in nodes:
        got = _read_node(node, origin, warn)
        cols = got.columns
        flagged = cols.deleted.count(1)
        if flagged != got.deleted or len(cols) - flagged != got.count:
            _warn(warn, f"stream node {format_id(node.master_id)} declares {got.count} live and "
                        f"{got.deleted} deleted entries but flags {len(cols) - flagged} and {flagged}", origin)
        if not _ascending(cols.ms, cols.seq, previous):  # the loop names the culprits
            ids = ([previous] if previous is not None else []) + list(zip(cols.ms, cols.seq))
            for before, current in zip(ids, ids[1:]):
                if current <= before:
                    _warn(warn, f"stream entry {format_id(current)} is not after {format_id(before)}", origin)
        if len(cols):
            previous = (cols.ms[-1], cols.seq[-1])
        live += len(cols) - flagged
        yield node, got
    if length is not None:
        check_length(length, live, origin, warn)


def check_length(length: int, live: int, origin: tuple[int, bytes] | None, warn: WarningSink | None) -> None:
    """The check that ends a walk over all of a stream's nodes: its `live` entries number its
    stored `length` (a walk split over several workers adds up their counts first)."""
    if live != length:
        _warn(warn, f"stream length {length} but {live} live entries (the server answers {length})", origin)


def _ascending(ms: Sequence[int], seq: Sequence[int], previous: StreamId | None) -> bool:
    """Whether the IDs (ms[i], seq[i]) ascend, the first above `previous`: in C for uint64
    arrays when `_stream_ids` was compiled, else as tuples."""
    if _stream_ids is not None and isinstance(ms, array) and isinstance(seq, array):
        return _stream_ids.ascending(ms, seq, previous)
    ids = ([previous] if previous is not None else []) + list(zip(ms, seq))
    return all(map(operator.lt, ids, ids[1:]))


def _warn(warn: WarningSink | None, reason: str, origin: tuple[int, bytes] | None) -> None:
    if warn is not None:
        warn(reason, origin[0] if origin else None, LOADS_UNCHECKED)


def _ignore(reason: str, offset: int | None, where: str) -> None:
    """The sink of a walk nobody listens to: the server loads what it is told of."""


def _read_node(node: StreamNode, origin: tuple[int, bytes] | None, warn: WarningSink | None) -> NodeEntries:
    try:
        with collecting(warn or _ignore):
            return node.read()
    except RdbError as err:
        if origin is not None:
            err.key = origin[1]
        raise
    except Exception as err:  # noqa: BLE001 - not the input's fault: a bug, named with its key
        raise InternalError(err, *(origin or (None, None))) from err


def _node_entries(source: tuple[Any, Any, Any], offset: int, master_id: StreamId) -> NodeEntries:
    """Decodes the listpack blob at `offset` (spec `stream::stream_listpack`) into columns. It is
    read by the `listpack` property of a bare node of the generated type that read the stream,
    so by the same backend, under the stream's root: without one, the blob would be its own root,
    a reference cycle a node that only the cyclic garbage collector frees."""
    node_type, io, root = source
    node = node_type.__new__(node_type)
    node._parent, node._root = None, root
    node._io, node._lazy_listpack = io, offset
    lp = container(node.listpack)
    master, rows = lp.master, lp.entries
    got = NodeEntries(master.count, master.deleted, EntryColumns.from_rows(rows, master_id, texts(master.fields)))
    # the rows keep the listpack (their expressions read its master entry) that keeps them: a
    # reference cycle a node, let go here rather than left to the cyclic garbage collector
    rows._parent = None
    return got


def _columns(chunks: Iterable[Any], width: int) -> list[list[int]]:
    """The `width` columns of the chunks of a chunked repeat of numbers (`chunks_<field>`)."""
    flat: list[Any] = []  # numbers: a chunked repeat's entries are integers
    for chunk in chunks:
        flat += values(chunk)
    return [flat[i::width] for i in range(width)]


def _group(g: Any, warn: WarningSink | None) -> ConsumerGroup:
    """A group of the generated parser as the server loads it (redis src/rdb.c rdbLoadObject:
    each ID once in the group PEL, each consumer's IDs in it and owned by no other consumer),
    its PELs kept as columns: resolved in C (`_stream_ids.group_pel`) when the native parser read
    them and the group PEL is in the order the server saves it, else by `_pel`, which names
    what the server refuses."""
    name = text(g.name)
    readers = g.consumers
    names = [text(c.name) for c in readers]
    group_chunks = list(g.chunks_pel(CHUNK_ROWS))
    owned_chunks = [list(c.chunks_pel(CHUNK_ROWS)) for c in readers]
    resolved = None
    # the compiled resolution takes columns only: every chunk, the consumers' too (with an empty
    # group PEL, those of the Python parsers would be the only chunks, and lists)
    chunks = [*group_chunks, *(chunk for own in owned_chunks for chunk in own)]
    if _stream_ids is not None and len(set(names)) == len(names) and all(
            isinstance(chunk, ScalarColumns) for chunk in chunks):
        resolved = _stream_ids.group_pel(group_chunks, owned_chunks)
    if resolved is None:
        resolved = _pel(name, names, group_chunks, owned_chunks)
    ms, seq, delivery_times, delivery_counts, owners, owned = resolved
    ids = IdColumns(ms, seq)
    consumers = [Consumer(cname, c.seen_time, c.active_time, IdColumns(*mine))
                 for cname, c, mine in zip(names, readers, owned)]
    nacked = _nack_zone(name, g, ids, owners, names, warn) if g.num_nacked is not None else None
    if -1 in owners:
        released = frozenset(nacked or ())
        for entry_id, owner in zip(ids, owners):
            if owner == -1 and entry_id not in released:
                _warn(warn, f"group {name!r}: entry {format_id(entry_id)} is pending for no consumer "
                            f"(refused only with sanitize-dump-payload yes)", None)
    pending = PendingEntries(ids, owners, names, delivery_times, delivery_counts)
    entries_read = g.entries_read.value if g.entries_read is not None else None
    if entries_read == UNKNOWN_ENTRIES_READ:
        entries_read = None
    return ConsumerGroup(name, (g.last_id.ms.value, g.last_id.seq.value), entries_read, pending, consumers, nacked)


def _nack_zone(name: bytes, g: Any, ids: IdColumns, owners: Sequence[int], names: list[bytes],
               warn: WarningSink | None) -> IdColumns:
    """A type-27 group's NACK zone as the server loads it (redis src/rdb.c rdbLoadObject): each ID
    in the group PEL ("Stream NACK zone entry not found in group global PEL") and pending for no
    consumer ("Stream NACK zone entry has a consumer assigned"), else an IntegrityError. The
    server does not look for an ID twice in the zone: a warning."""
    ms, seq = _columns(g.chunks_nacked(CHUNK_ROWS), 2)
    nacked = IdColumns(array("Q", ms), array("Q", seq))
    if not len(nacked):
        return nacked
    at = {entry_id: place for place, entry_id in enumerate(ids)}
    seen: set[StreamId] = set()
    for entry_id in nacked:
        place = at.get(entry_id)
        if place is None:
            raise IntegrityError(f"group {name!r}: NACKed entry {format_id(entry_id)} is not in the group PEL")
        if owners[place] != -1:
            raise IntegrityError(f"group {name!r}: NACKed entry {format_id(entry_id)} is pending for consumer "
                                 f"{names[owners[place]]!r}")
        if entry_id in seen:
            _warn(warn, f"group {name!r}: entry {format_id(entry_id)} is in the NACK zone twice", None)
        seen.add(entry_id)
    return nacked


def _pel(name: bytes, names: list[bytes], group_chunks: list[Any], owned_chunks: list[list[Any]]) -> Pel:
    """`_stream_ids.group_pel`'s columns, resolved in Python with the server's checks (redis
    src/rdb.c rdbLoadObject): an ID pending twice in the group ("Duplicated global PEL entry"), a
    consumer named twice ("Duplicated consumer name"), a consumer's ID not in the group PEL or
    owned already, by another consumer or earlier in its own PEL, raise an IntegrityError."""
    ms, seq, delivery_times, delivery_counts = _columns(group_chunks, 4)
    ids = list(zip(ms, seq))
    at = dict(zip(ids, range(len(ids))))
    if len(at) != len(ids):
        twice = first_repeated(ids)
        assert twice is not None  # fewer IDs in `at` than in `ids`: one is there twice
        raise IntegrityError(f"group {name!r}: entry {format_id(twice)} is pending twice")
    owners = [-1] * len(ids)
    owned = []
    seen_names = set()
    for index, (cname, chunks) in enumerate(zip(names, owned_chunks)):
        if cname in seen_names:
            raise IntegrityError(f"group {name!r}: duplicate consumer {cname!r}")
        seen_names.add(cname)
        mine_ms, mine_seq = _columns(chunks, 2)
        for entry_id in zip(mine_ms, mine_seq):
            place = at.get(entry_id)
            if place is None:
                raise IntegrityError(f"group {name!r} consumer {cname!r}: pending entry "
                                     f"{format_id(entry_id)} is not in the group PEL")
            if owners[place] != -1:  # "Stream consumer PEL entry already has a consumer assigned"
                raise IntegrityError(f"group {name!r} consumer {cname!r}: entry {format_id(entry_id)} "
                                     f"is already pending for {names[owners[place]]!r}")
            owners[place] = index
        owned.append((array("Q", mine_ms), array("Q", mine_seq)))
    return (array("Q", ms), array("Q", seq), array("q", delivery_times), array("Q", delivery_counts),
            array("q", owners), owned)
