"""Values in the layout the server gives them (issue 15): the forms of strings and containers that
`rdbspec.write.writer.Writer`, `rdbspec.write.convert` and the stream edits write, built as the
generated objects the generated writers write.

Strings (redis src/rdb.c rdbSaveRawString): an INT8/16/32 when the string is the decimal text
of such a number of at most 11 bytes (rdbTryIntegerEncoding), LZF-compressed when compression is
on and it is over 20 bytes and compresses by at least 4 bytes (rdbSaveLzfStringObject), raw
otherwise; the same for a container's blob.

New keys (`Layouts`): the encoding and element order the server of an RDB version gives a key
made by one command with all its elements, under the redis.conf limits of `ServerConfig`:

* a list, RPUSH (src/t_list.c pushGenericCommand, src/quicklist.c quicklistPushTail and
  _quicklistNodeAllowInsert): RDB 9 a quicklist of ziplists, each node taking elements while
  its estimated size meets `list-max-listpack-size`; RDB 10 a quicklist of listpacks by the same
  rule (an element of 1 GB or more a PLAIN node); from RDB 11 one listpack unless the elements'
  bytes exceed the limit (listTypeTryConvertListpack), then a quicklist whose elements over the
  limit are PLAIN nodes (isLargeElement);
* a set, SADD (src/t_set.c setTypeCreate, setTypeAddAux): an intset (ascending, the narrowest
  width) while every member is an integer and there are at most `set-max-intset-entries`; from
  RDB 11 a listpack in the order the members came (the intset's members first, ascending, when
  it turned into one) while small; a hashtable otherwise;
* a hash, HSET (src/t_hash.c hashTypeTryConversion): a listpack (RDB 9: ziplist) of the pairs in
  order while they are few and short, a hashtable otherwise;
* a Valkey 9 hash with field TTLs, HSET then HPEXPIREAT (valkey src/rdb.c rdbSaveObjectType,
  rdbSaveObject): a HASH_2 of every field with its expiry, in the order given (a field given a TTL
  turns the hash into a hashtable, whatever its size), while a field has one; else as HSET;
* a Valkey 9.2 path hash, PHMSET (valkey src/rdb.c rdbSaveObject, OBJ_PATH_HASH): its paths in the
  radix tree's byte order, each with its fields in the order given (a small payload hash keeps
  insertion order), a later value of a field replacing the earlier as PHSET does;
* a sorted set, ZADD (src/t_zset.c zsetAdd, zzlInsert): a listpack (RDB 9: ziplist) of member
  and score by ascending score then member, each score as d2string writes it (src/util.c: an
  integer as an integer; else "%.17g" before RDB 11, fpconv_dtoa's shortest digits from RDB 11),
  while small; a skiplist otherwise, saved highest first (rdbSaveObject).

A hashtable's order is the server's dict order, which no file fixes: the order given is written.
"""

from __future__ import annotations

import binascii
import builtins
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lzf as _lzf
from rdbspec_generated import WriteIo
from rdbspec_generated import hash as _hash
from rdbspec_generated import intset as _intset
from rdbspec_generated import listpack as _listpack
from rdbspec_generated import quicklist as _quicklist
from rdbspec_generated import rdb as _rdb
from rdbspec_generated import rdb_string as _rdb_string
from rdbspec_generated import sparse_array as _sparse_array
from rdbspec_generated import ziplist as _ziplist
from rdbspec_generated import zset as _zset
from rdbspec_generated._runtime import WriteInputs
from rdbspec_generated.enums import BlobKind, ContainerKind, ElementTag, ValueType

from ..read import dumpfile
from ..server.numbers import d2string, string2ll

INT_ENCODABLE_BYTES = 11  # rdbTryIntegerEncoding: longer strings are not tried
LZF_MIN_BYTES = 20  # rdbSaveRawString: only strings over 20 bytes are compressed
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
# what an rdb_blob holds (the spec's rdb_string::blob_kind)
LISTPACK_BLOB, ZIPLIST_BLOB, INTSET_BLOB = BlobKind.LISTPACK, BlobKind.ZIPLIST, BlobKind.INTSET
STREAM_LISTPACK_BLOB = BlobKind.STREAM_LISTPACK
# the value types new keys take (the spec's rdb::value_type: redis src/rdb.h RDB_TYPE_*)
STRING, SET, ZSET_2, HASH = ValueType.STRING, ValueType.SET, ValueType.ZSET_2, ValueType.HASH
VALKEY_HASH_2, VALKEY_PATH_HASH = ValueType.VALKEY_HASH_2, ValueType.VALKEY_PATH_HASH
LIST_QUICKLIST, LIST_QUICKLIST_2 = ValueType.LIST_QUICKLIST, ValueType.LIST_QUICKLIST_2
SET_INTSET, SET_LISTPACK = ValueType.SET_INTSET, ValueType.SET_LISTPACK
ZSET_ZIPLIST, ZSET_LISTPACK = ValueType.ZSET_ZIPLIST, ValueType.ZSET_LISTPACK
HASH_ZIPLIST, HASH_LISTPACK = ValueType.HASH_ZIPLIST, ValueType.HASH_LISTPACK
# a value kind above 255 is 256 + its type byte, a byte another dialect reads otherwise (the spec's
# rdb::key_value.value_kind: Valkey's HASH_2 and PATH_HASH, Redis 8.10's template hashes...)
TYPE_BYTE = 0xFF
# QUICKLIST_NODE_CONTAINER_*, as the numbers a node's `rdb_len` is written from (the generated
# writers check that what they write reads back as the very value, of the very type, given)
PLAIN, PACKED = int(ContainerKind.PLAIN), int(ContainerKind.PACKED)
# quicklist.c: the node sizes of list-max-listpack-size -1..-5, the size a count-limited node
# stays under, the estimate of an entry's overhead, the element a PLAIN node holds before 7.2
OPTIMIZATION_LEVEL = (4096, 8192, 16384, 32768, 65536)
SIZE_SAFETY_LIMIT = 8192
SIZE_ESTIMATE_OVERHEAD = 8
PACKED_THRESHOLD = 1 << 30
EMPTY_LISTPACK, EMPTY_ZIPLIST = 7, 11  # lpNew, ziplistNew: the header and the end byte
EXPIRY_NONE = -1  # a HASH_2 field without a TTL (valkey src/rdb.c rdbSaveObject)


def new_key_record(db: int, key: bytes, rdb_type: int, value: Any, version: int, valkey: bool,
                   compress: bool = True, expire_at_ms: int | None = None, idle: int | None = None,
                   freq: int | None = None) -> dumpfile.KeyRecord:
    """A key that no dump holds, made to be written (`Writer.key`): its name, type byte and value
    (its value kind is the spec's for that byte in this dialect and version)."""
    body = _rdb.KeyValue._new(type_code=rdb_type, is_valkey=valkey, rdb_version=version,
                              key=rdb_string(key, compress), value=value)
    return dumpfile.KeyRecord(db, key, rdb_type, body.value_kind, expire_at_ms, idle, freq, 0, 0, body)


def type_byte(value_kind: int) -> int:
    """The type byte a key of `value_kind` is written with (see TYPE_BYTE)."""
    return value_kind & TYPE_BYTE


def key_hash_slot(key: bytes) -> int:
    """The cluster slot of a key (redis src/cluster.c keyHashSlot): CRC16 (XMODEM) of the key, or
    of its hash tag (what is between the first '{' and the next '}', when not empty), mod 16384."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return binascii.crc_hqx(key, 0) & 0x3FFF


def stored(data: bytes) -> int | bytes:
    """An element as a listpack or ziplist stores it: the integer its text is, when canonical
    (listpack.c lpStringToInt64, ziplist.c zipTryEncoding), else the bytes."""
    number = string2ll(data)
    return data if number is None else number


def rdb_string(data: bytes, compress: bool = True) -> Any:
    """An `rdb_string` holding `data` in the form rdbSaveRawString gives it (see the module doc)."""
    s = _rdb_string.RdbString._new()
    number = string2ll(data) if len(data) <= INT_ENCODABLE_BYTES else None
    if number is not None and INT32_MIN <= number <= INT32_MAX:
        s.int_value = number
    elif compress and len(data) > LZF_MIN_BYTES and _lzf.compress(data, len(data) - 4) is not None:
        s.lzf = data
    else:
        s.raw = data
    return s


def blob(kind: int, payload: Any, compress: bool = True) -> Any:
    """An `rdb_blob` of `kind` (LISTPACK_BLOB...) holding `payload` (a container object),
    LZF-compressed as rdbSaveRawString would compress its bytes."""
    data = _bytes(payload)
    packed = compress and len(data) > LZF_MIN_BYTES and _lzf.compress(data, len(data) - 4) is not None
    return _rdb_string.RdbBlob._new(kind=kind, lzf=payload if packed else None, plain=None if packed else payload)


def rdb_len(value: int) -> WriteInputs:
    """A length, written by `write_rdb_len` in the smallest form (rdbSaveLen)."""
    return WriteInputs(value=value, is_encoded=False)


def _bytes(payload: Any) -> bytes:
    out = WriteIo()
    payload._write(out, None, None)
    return bytes(out.data)


def listpack(entries: list[int | bytes]) -> Any:
    return _listpack.Listpack._new(body=_listpack.LpBody._new(entries=entries))


def ziplist(entries: list[int | bytes]) -> Any:
    return _ziplist.Ziplist._new(body=_ziplist.ZlBody._new(entries=entries))


def intset_width(members: Iterable[int]) -> int:
    """The narrowest width that holds every member (_intsetValueEncoding): 2, 4 or 8 bytes."""
    ordered = sorted(members)
    low, high = (ordered[0], ordered[-1]) if ordered else (0, 0)
    return 2 if -(1 << 15) <= low and high < 1 << 15 else 4 if -(1 << 31) <= low and high < 1 << 31 else 8


def intset(members: Iterable[int]) -> Any:
    """The intset of `members`: ascending, in the narrowest width that holds them (intsetAdd)."""
    ordered = sorted(set(members))
    return _intset.Intset._new(encoding=intset_width(ordered), members=ordered)


def string_list(items: Iterable[bytes], compress: bool = True) -> Any:
    """A hashtable set's (or a type-1 list's) strings."""
    return _rdb.StringList._new(items=[rdb_string(m, compress) for m in items])


def hash_table(pairs: Iterable[tuple[bytes, bytes]], compress: bool = True) -> Any:
    return _hash.HashTable._new(entries=[_hash.HashPair._new(field=rdb_string(f, compress),
                                                             value=rdb_string(v, compress)) for f, v in pairs])


AR_SMALLSTR_MAXLEN = 7  # redis src/sparsearray.h: the longest string a 64-bit server keeps inline


def sparse_array(elements: Iterable[tuple[int, bytes | int | float]], insert_idx: int | None,
                 compress: bool = True) -> Any:
    """A sparse array (type 28) of (index, value) elements, written in ascending index order as
    rdbSaveArraySlice walks them, each with the tag its value has (rdbSaveArrayElement): an int
    INT, a float FLOAT, bytes SMALLSTR up to `AR_SMALLSTR_MAXLEN` bytes and SDS beyond, the
    strings as rdbSaveRawString stores them."""
    out = []
    for index, value in sorted(elements, key=lambda element: element[0]):
        element = _sparse_array.ArrayElement._new(index=rdb_len(index))
        if isinstance(value, bool) or not isinstance(value, (bytes, int, float)):
            raise TypeError(f"an array element is bytes, an int or a float, not {type(value).__name__}")
        if isinstance(value, int):
            element.tag, element.int_value = rdb_len(int(ElementTag.INT)), value
        elif isinstance(value, float):
            element.tag, element.float_value = rdb_len(int(ElementTag.FLOAT)), value
        elif len(value) <= AR_SMALLSTR_MAXLEN:
            element.tag, element.small_string = rdb_len(int(ElementTag.SMALLSTR)), rdb_string(value, compress)
        else:
            element.tag, element.string_value = rdb_len(int(ElementTag.SDS)), rdb_string(value, compress)
        out.append(element)
    return _sparse_array.ArrayValue._new(insert_idx=None if insert_idx is None else rdb_len(insert_idx), elements=out)
def template_name_list(names: Sequence[bytes], compress: bool = True) -> Any:
    """The field names of a hash template as strings (spec hash::template_names), in the order
    given (the server's: `server.templates.template_fields`)."""
    return _hash.TemplateNames._new(count=len(names), names=[_hash.TemplateName._new(name=rdb_string(n, compress))
                                                              for n in names])


@dataclass(frozen=True)
class ServerConfig:
    """The redis.conf settings that decide a value's encoding (the defaults a server started
    without a configuration file has: redis src/config.c)."""

    hash_max_listpack_entries: int = 512  # the server's built-in default; the redis.conf it ships says 128
    hash_max_listpack_value: int = 64
    zset_max_listpack_entries: int = 128
    zset_max_listpack_value: int = 64
    set_max_intset_entries: int = 512
    set_max_listpack_entries: int = 128
    set_max_listpack_value: int = 64
    list_max_listpack_size: int = -2
    stream_node_max_bytes: int = 4096
    stream_node_max_entries: int = 100
    rdbcompression: bool = True


@dataclass
class _Node:
    entries: list[int | bytes]
    size: int  # the node's bytes (lpBytes, ziplistBlobLen)
    plain: bool = False


class Layouts:
    """The layouts the server of RDB `version` gives new keys (see the module doc)."""

    def __init__(self, version: int, config: ServerConfig | None = None):
        self.version = version
        self.config = config or ServerConfig()
        self.compress = self.config.rdbcompression

    def _packed(self, entries: list[int | bytes]) -> Any:
        """A listpack blob (RDB 10+) or a ziplist blob of `entries` (ints and bytes, as stored)."""
        if self.version >= 10:
            return blob(LISTPACK_BLOB, listpack(entries), self.compress)
        return blob(ZIPLIST_BLOB, ziplist(entries), self.compress)

    # -- strings, hashes, sorted sets -------------------------------------------------------------

    def string(self, data: bytes) -> tuple[int, Any]:
        return STRING, rdb_string(data, self.compress)

    def hash(self, pairs: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]) -> tuple[int, Any]:
        """HSET of the pairs: a later value of a field replaces the earlier, in its place."""
        given = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
        merged = dict(given)
        limit = self.config.hash_max_listpack_value
        # from 7.2 the pairs given size the new hash (hashTypeTryConversion); before, the fields
        count = max(len(given), len(merged)) if self.version >= 11 else len(merged)
        if (count <= self.config.hash_max_listpack_entries
                and all(len(f) <= limit and len(v) <= limit for f, v in given)):
            entries = [x for f, v in merged.items() for x in (stored(f), stored(v))]
            return (HASH_LISTPACK if self.version >= 10 else HASH_ZIPLIST), self._packed(entries)
        return HASH, hash_table(merged.items(), self.compress)

    def hash_with_ttls(self, rows: Mapping[bytes, tuple[bytes, int | None]]
                       | Iterable[tuple[bytes, bytes, int | None]]) -> tuple[int, Any]:
        """HSET of the fields, then HPEXPIREAT of those with an expiry (Unix ms; None: none), as
        Valkey 9 saves the hash (see the module doc): the type byte (of a VALKEY dump) and the
        value. A later row of a field replaces the earlier, in its place."""
        given = [(f, *rest) for f, rest in rows.items()] if isinstance(rows, Mapping) else rows
        merged = {f: (v, t) for f, v, t in given}
        if any(t is not None and t < 0 for _, t in merged.values()):
            raise ValueError("a field's expiry is a Unix time in ms: not negative")
        if all(t is None for _, t in merged.values()):  # no volatile field: rdbSaveObjectType's plain hash
            return self.hash([(f, v) for f, (v, _) in merged.items()])
        return type_byte(VALKEY_HASH_2), _hash.ValkeyHash2._new(entries=[
            _hash.ValkeyHash2Entry._new(field=rdb_string(f, self.compress), value=rdb_string(v, self.compress),
                                        expire_ms=EXPIRY_NONE if t is None else t) for f, (v, t) in merged.items()])

    def path_hash(self, paths: Mapping[bytes, Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]]
                  | Iterable[tuple[bytes, Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]]]) -> tuple[int, Any]:
        """PHMSET of each path's fields (see the module doc): the type byte and the value. A path
        holds one field at least (PHDEL removes a path whose last field goes)."""
        given = paths.items() if isinstance(paths, Mapping) else paths
        merged: dict[bytes, dict[bytes, bytes]] = {}
        for path, pairs in given:
            merged.setdefault(path, {}).update(pairs)
        if any(not fields for fields in merged.values()):
            raise ValueError("a path of a path hash holds at least one field")
        return type_byte(VALKEY_PATH_HASH), _hash.ValkeyPathHash._new(paths=[
            _hash.ValkeyPathHashPath._new(path=rdb_string(path, self.compress),
                                          entries=hash_table(merged[path].items(), self.compress).entries)
            for path in sorted(merged)])

    def zset(self, pairs: Mapping[bytes, float] | Iterable[tuple[bytes, float]]) -> tuple[int, Any]:
        """ZADD of the pairs: a later score of a member replaces the earlier. From 7.2 the pairs
        given size the new set (zsetTypeCreate); before, it starts as a listpack and turns into a
        skiplist at the member that would overflow it (zsetAdd), its scores read back from their
        text, so that 7.0's -0.0, written "0", comes back as 0.0."""
        given = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
        merged = {m: float(s) for m, s in given}
        if any(math.isnan(s) for s in merged.values()):
            raise ValueError("a sorted set score cannot be NaN")
        c = self.config
        fits = all(len(m) <= c.zset_max_listpack_value for m in merged)
        if self.version >= 11:
            small = fits and len(given) <= c.zset_max_listpack_entries
        else:
            small = fits and len(merged) <= c.zset_max_listpack_entries
            if not small and self.version == 10:
                merged = self._scores_through_a_listpack(given, merged)
        ordered = sorted(merged.items(), key=lambda pair: (pair[1], pair[0]))
        if small:
            entries = [x for m, s in ordered for x in (stored(m), stored(d2string(s, self.version)))]
            return (ZSET_LISTPACK if self.version >= 10 else ZSET_ZIPLIST), self._packed(entries)
        return ZSET_2, _zset.Zset2._new(entries=[_zset.Zset2Entry._new(member=rdb_string(m, self.compress), score=s)
                                                 for m, s in reversed(ordered)])  # the tail first

    def _scores_through_a_listpack(self, given: list[tuple[bytes, float]],
                                   merged: dict[bytes, float]) -> dict[bytes, float]:
        """7.0's scores of a set that outgrew its listpack: those of the members added before
        (the listpack held them as d2string's text) read back."""
        c = self.config
        in_listpack: set[bytes] = set()
        if c.zset_max_listpack_entries and len(given[0][0]) <= c.zset_max_listpack_value:
            for member, _ in given:
                if member in in_listpack:
                    continue
                if len(in_listpack) + 1 > c.zset_max_listpack_entries or len(member) > c.zset_max_listpack_value:
                    break
                in_listpack.add(member)
        return {m: float(d2string(s, self.version)) if m in in_listpack else s for m, s in merged.items()}

    # -- sets -------------------------------------------------------------------------------------

    def set(self, members: Iterable[bytes]) -> tuple[int, Any]:
        """SADD of the members (setTypeCreate, then setTypeAddAux member by member)."""
        given = list(members)
        if not given:
            raise ValueError("a set holds at least one member")
        c = self.config
        # the set as an intset, else as a listpack, else as a hash table (the one of them not None)
        numbers: dict[int, None] | None = {}
        packed: dict[bytes, None] | None = None
        table: dict[bytes, None] = {}
        first = string2ll(given[0])
        # setTypeCreate: from 7.2 the members given size the new set; before, the first decides
        if first is None or (self.version >= 11 and len(given) > c.set_max_intset_entries):
            numbers = None
            small = self.version >= 11 and len(given) <= c.set_max_listpack_entries
            packed = {} if small else None
        for member in given:
            if numbers is not None:
                number = string2ll(member)
                if number is not None:
                    numbers[number] = None
                    if len(numbers) > c.set_max_intset_entries:
                        table, numbers = {b"%d" % n: None for n in numbers}, None
                    continue
                ordered = [b"%d" % n for n in sorted(numbers)]
                widest = max((len(m) for m in ordered), default=0)
                if (self.version >= 11 and len(ordered) < c.set_max_listpack_entries
                        and len(member) < c.set_max_listpack_value and widest < c.set_max_listpack_value):
                    packed = dict.fromkeys(ordered)
                else:
                    table = dict.fromkeys(ordered)
                numbers = None
            if packed is not None:
                if member in packed:
                    continue
                if len(packed) < c.set_max_listpack_entries and len(member) <= c.set_max_listpack_value:
                    packed[member] = None
                    continue
                table, packed = dict(packed), None
            table[member] = None
        if numbers is not None:
            return SET_INTSET, blob(INTSET_BLOB, intset(numbers), self.compress)
        if packed is not None:
            return SET_LISTPACK, blob(LISTPACK_BLOB, listpack([stored(m) for m in packed]), self.compress)
        return SET, string_list(table, self.compress)

    # -- lists ------------------------------------------------------------------------------------

    def list(self, items: Iterable[bytes]) -> tuple[int, Any]:
        """RPUSH of the items."""
        given = list(items)
        if not given:
            raise ValueError("a list holds at least one element")
        fill = self.config.list_max_listpack_size
        if self.version < 10:
            nodes = self._ziplist_nodes(given, fill)
            return LIST_QUICKLIST, _quicklist.Quicklist._new(nodes=[
                blob(ZIPLIST_BLOB, ziplist(n.entries), self.compress) for n in nodes])
        if self.version >= 11 and not _exceeds_limit(fill, EMPTY_LISTPACK + sum(map(len, given)), len(given)):
            nodes = [_Node([stored(x) for x in given], 0)]  # a listpack list: one node when saved
        else:
            nodes = self._listpack_nodes(given, fill)
        return LIST_QUICKLIST_2, _quicklist.Quicklist2._new(nodes=[self._quicklist2_node(n) for n in nodes])

    def list_nodes(self, items: builtins.list[bytes]) -> builtins.list[tuple[bool, int]]:
        """The quicklist nodes RPUSH of `items` makes, as (PLAIN, bytes) pairs."""
        fill = self.config.list_max_listpack_size
        nodes = self._ziplist_nodes(items, fill) if self.version < 10 else self._listpack_nodes(items, fill)
        return [(node.plain, node.size) for node in nodes]

    def _quicklist2_node(self, node: _Node) -> Any:
        if node.plain:
            element = node.entries[0]
            assert isinstance(element, bytes)  # a PLAIN node holds its one element as given (`_listpack_nodes`)
            return _quicklist.Quicklist2Node._new(container=rdb_len(PLAIN), plain=rdb_string(element, self.compress))
        return _quicklist.Quicklist2Node._new(container=rdb_len(PACKED),
                                              packed=blob(LISTPACK_BLOB, listpack(node.entries), self.compress))

    def _listpack_nodes(self, items: builtins.list[bytes], fill: int) -> builtins.list[_Node]:
        """quicklistPushTail item by item (7.0 and 7.2+ rules)."""
        nodes: builtins.list[_Node] = []
        for item in items:
            tail = nodes[-1] if nodes else None
            if self._large(len(item), fill):
                nodes.append(_Node([item], len(item), plain=True))
            elif tail is not None and not tail.plain and self._allows(tail, len(item) + SIZE_ESTIMATE_OVERHEAD,
                                                                     fill):
                tail.entries.append(stored(item))
                tail.size += listpack_entry_bytes(stored(item))
            else:
                nodes.append(_Node([stored(item)], EMPTY_LISTPACK + listpack_entry_bytes(stored(item))))
        return nodes

    def _large(self, size: int, fill: int) -> bool:
        """isLargeElement: from 7.2 an element over the node limit, before it one of 1 GB."""
        if self.version < 11:
            return size >= PACKED_THRESHOLD
        return size > (SIZE_SAFETY_LIMIT if fill >= 0 else OPTIMIZATION_LEVEL[min(-fill - 1, 4)])

    def _allows(self, tail: _Node, added: int, fill: int) -> bool:
        """_quicklistNodeAllowInsert with `added` the estimated bytes of the new entry."""
        new_size = tail.size + added
        if self.version >= 11:
            return not _exceeds_limit(fill, new_size, len(tail.entries) + 1)
        if fill < 0 and -fill - 1 < len(OPTIMIZATION_LEVEL):  # _quicklistNodeSizeMeetsOptimizationRequirement
            if new_size <= OPTIMIZATION_LEVEL[-fill - 1]:
                return True
        return new_size <= SIZE_SAFETY_LIMIT and len(tail.entries) < fill

    def _ziplist_nodes(self, items: builtins.list[bytes], fill: int) -> builtins.list[_Node]:
        """6.2's quicklistPushTail: the entry's estimated overhead is its prevlen and encoding bytes."""
        nodes: builtins.list[_Node] = []
        last_entry = 0  # the size of the tail node's last entry, for the next one's prevlen
        for item in items:
            size = len(item)
            overhead = (1 if size < 254 else 5) + (1 if size < 64 else 2 if size < 16384 else 5)
            tail = nodes[-1] if nodes else None
            if tail is None or not self._allows(tail, size + overhead, fill):
                tail = _Node([], EMPTY_ZIPLIST)
                nodes.append(tail)
                last_entry = 0
            entry = (1 if last_entry < 254 else 5) + _ziplist_entry_size(stored(item)) - 1
            tail.entries.append(stored(item))
            tail.size += entry
            last_entry = entry
        return nodes


def _exceeds_limit(fill: int, size: int, count: int) -> bool:
    """quicklistNodeExceedsLimit (7.2+)."""
    if fill < 0:
        return size > OPTIMIZATION_LEVEL[min(-fill - 1, 4)]
    return size > SIZE_SAFETY_LIMIT or count > max(fill, 1)


def listpack_entry_bytes(entry: int | bytes) -> int:
    """An entry's bytes in a listpack (redis src/listpack.c lpEncodeGetType, lpEncodeBacklen):
    an integer in 1 to 9 bytes by its range, a string's 1, 2 or 5 length bytes and its bytes,
    then the backlen of those (1 to 5 bytes, 7 bits each)."""
    if isinstance(entry, int):
        size = 1 if 0 <= entry < 128 else next(width for limit, width in _LISTPACK_INTS if -limit <= entry < limit)
    else:
        size = len(entry) + (1 if len(entry) < 64 else 2 if len(entry) < 4096 else 5)
    return size + (1 if size < 128 else 2 if size < 16384 else 3 if size < 1 << 21 else 4 if size < 1 << 28 else 5)


# (limit, bytes): the 13, 16, 24, 32 and 64-bit integers with their encoding byte
_LISTPACK_INTS = ((1 << 12, 2), (1 << 15, 3), (1 << 23, 4), (1 << 31, 5), (1 << 63, 9))


def _ziplist_entry_size(item: int | bytes) -> int:
    """The entry's bytes as a ziplist's first entry (a 1-byte prevlen)."""
    return len(_bytes(ziplist([item]))) - EMPTY_ZIPLIST

