"""One small decoder per value kind: generated objects in, plain Python out.

Strings are bytes; lists and sets lists of bytes (file order); sorted sets lists of
(member, float); hashes lists of (field, value) with, for field-TTL hashes, the TTLs as
absolute unix ms beside them; Valkey path hashes lists of (path, [(field, value)...]) in file
order; streams a `Stream`; modules a `ModuleValue`; Redis 8.8's sparse arrays a `SparseArray`.
"""

from __future__ import annotations

import collections
import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rdbspec_generated import current_sink
from rdbspec_generated.enums import ContainerKind, ElementTag, ModuleOpcode, ValueType

from ..errors import IntegrityError
from ..server.templates import strictly_ascending
from .elements import CHUNK_ROWS, container, first_repeated, pairs, text, texts, values
from .streams import Stream

# value kinds read by name here and elsewhere (the spec's `rdb::value_type`; Valkey HASH_2 and
# PATH_HASH, old Dragonfly JSON and Redis 8.10's template hashes are mapped above 255 there, since
# they reuse type bytes another dialect gives another meaning)
STRING, VALKEY_HASH_2, DF_JSON_LEGACY = ValueType.STRING, ValueType.VALKEY_HASH_2, ValueType.DF_JSON_LEGACY
VALKEY_PATH_HASH = ValueType.VALKEY_PATH_HASH
HASH_TMPL_LP, HASH_TMPL_LP_REF = ValueType.HASH_TMPL_LP, ValueType.HASH_TMPL_LP_REF
HASH_TMPL_ARRAY, HASH_TMPL_ARRAY_REF = ValueType.HASH_TMPL_ARRAY, ValueType.HASH_TMPL_ARRAY_REF
# hashes whose field names are a template's (types 29-32 of RDB 15): read as plain hashes
TEMPLATE_KINDS = frozenset((HASH_TMPL_LP, HASH_TMPL_LP_REF, HASH_TMPL_ARRAY, HASH_TMPL_ARRAY_REF))


# What C's strtod reads: the longest prefix that is a decimal or hexadecimal float, inf or nan
_STRTOD = re.compile(rb"[ \t\n\v\f\r]*([+-]?(?:(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                     rb"(?:[pP][+-]?[0-9]+)?)|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     rb"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN]))")


def strtod(text: bytes) -> float | None:
    """The number C's strtod (or sscanf "%lg") reads at the start of `text` (up to a NUL);
    None when there is none. Beyond the double range: +-inf, as strtod."""
    match = _STRTOD.match(text.split(b"\0", 1)[0])
    if match is None:
        return None
    number = match.group(1).decode("ascii")
    if match.group(2) is None:
        return float(number)  # decimal, inf or nan
    try:
        return float.fromhex(number)
    except OverflowError:
        return math.copysign(math.inf, -1.0 if number.startswith("-") else 1.0)


ZZL_STRTOD_BYTES = 127  # redis src/t_zset.c zzlStrtod: strtod of a copy of the first 127 bytes


def score(v: int | bytes) -> float:
    """A container's score entry as the server reads it (redis src/t_zset.c zzlStrtod: strtod
    of its first 127 bytes): text that is not a number reads as 0, as there."""
    if isinstance(v, int):
        return float(v)
    v = v[:ZZL_STRTOD_BYTES]
    if b"_" not in v:  # float() reads every other text it accepts as strtod does, the whole of it
        try:
            return float(v)
        except ValueError:
            pass  # a prefix, hexadecimal, NUL...: strtod's own rules
    number = strtod(v)
    return 0.0 if number is None else number


def legacy_double(d: Any) -> float:
    """A type-3 score (redis src/rdb.c rdbLoadDoubleValue): a marker, or text that sscanf
    "%lg" must read a number from; the server refuses the file otherwise."""
    if d.is_nan:
        return math.nan
    if d.is_pos_inf:
        return math.inf
    if d.is_neg_inf:
        return -math.inf
    number = strtod(d.text.encode("ascii", "replace"))  # the spec reads the text as ASCII
    if number is None:
        raise IntegrityError(f"the score {d.text!r} is not a number (redis src/rdb.c rdbLoadDoubleValue)")
    return number


@dataclass
class ModuleValue:
    """A module value (MODULE_2) or module AUX payload: the module's name and encoding
    version from its 64-bit id, and its opcode stream as (opcode name, value) pairs."""

    name: str
    encoding_version: int
    module_id: int
    opcodes: list[tuple[str, Any]] = field(default_factory=list)
    when: int | None = None


def module_ops(ops: Any) -> list[tuple[str, Any]]:
    """The (name, value) of each module opcode up to EOF, named as the spec's `module_opcode`
    (lower-cased: "sint", "uint", "float", "double", "string")."""
    out: list[tuple[str, Any]] = []
    for op in ops:
        code = ModuleOpcode(op.opcode.value)  # the spec checks it is one
        if code == ModuleOpcode.EOF:
            break
        if code == ModuleOpcode.SINT:
            value: Any = op.uint_value.value - (1 << 64) if op.uint_value.value >= 1 << 63 else op.uint_value.value
        elif code == ModuleOpcode.UINT:
            value = op.uint_value.value
        elif code == ModuleOpcode.FLOAT:
            value = op.float_value
        elif code == ModuleOpcode.DOUBLE:
            value = op.double_value
        else:
            value = text(op.string_value)
        out.append((code.name.lower(), value))
    return out


_MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def module_name(module_id: int) -> tuple[str, int]:
    """Name and encoding version from a 64-bit module id (redis src/module.c
    moduleTypeEncodeId: 9 six-bit characters, then 10 bits of version)."""
    name = "".join(_MODULE_CHARSET[(module_id >> (10 + 6 * (8 - i))) & 63] for i in range(9))
    return name, module_id & 1023


def module_value(v: Any) -> ModuleValue:
    name, version = module_name(v.module_id.value)
    return ModuleValue(name, version, v.module_id.value, module_ops(v.ops))


ArrayItem = bytes | int | float  # an element's value as its tag stores it (`sparse_array::element_tag`)
ARRAY_LOAD = "redis src/rdb.c rdbLoadObject (RDB_TYPE_ARRAY)"  # loads repeated and unordered indexes


@dataclass
class SparseArray:
    """A sparse array (type 28, Redis 8.8) as the server holds it after loading: the last insert
    index (None when the file says it has none) and the elements that hold a value, as (index,
    value) in ascending index order, each index once. A value is bytes (SDS and SMALLSTR
    elements), int (INT) or float (FLOAT), as its tag stores it."""

    insert_idx: int | None
    elements: list[tuple[int, ArrayItem]]

    def __len__(self) -> int:
        return len(self.elements)


def _array_item(element: Any) -> ArrayItem:
    tag = element.tag.value  # the spec checks it is an `element_tag`
    if tag == ElementTag.INT:
        value: int = element.int_value
        return value
    if tag == ElementTag.FLOAT:
        number: float = element.float_value
        return number
    return text(element.string_value if tag == ElementTag.SDS else element.small_string)


def sparse_array(v: Any) -> SparseArray:
    """A `sparse_array::array_value` as the loader keeps it: rdbLoadObject sets each element in
    turn, so a repeated index keeps the later value, and the array holds its indexes in order.
    The server checks neither that the file's indexes ascend nor that each comes once: a warning
    each, to the sink in force."""
    insert_idx = v.insert_idx.value if v.insert_idx is not None else None
    read = [(e.index.value, _array_item(e)) for e in v.elements]
    if all(before < after for (before, _), (after, _) in zip(read, read[1:])):
        return SparseArray(insert_idx, read)
    kept = dict(read)
    warn = current_sink()
    if warn is not None:
        counts = collections.Counter(index for index, _ in read)
        for index in sorted(index for index, n in counts.items() if n > 1):
            warn(f"array index {index} appears {counts[index]} times (the server keeps the last value)", None,
                 ARRAY_LOAD)
        if len(kept) == len(read):
            warn("array indexes are not in ascending order (the server holds them in order)", None, ARRAY_LOAD)
    return SparseArray(insert_idx, sorted(kept.items()))


@dataclass
class Decoded:
    value: Any
    field_expire_at_ms: list[tuple[bytes, int]] | None = None
    member_expire_at_ms: list[tuple[bytes, int]] | None = None  # sets with member TTLs (Dragonfly 32)


# a field of a hash with field TTLs: its name, its value and its TTL (absolute unix ms, None for none)
HashRow = tuple[bytes, bytes, "int | None"]


def _hash_with_ttls(chunks: Iterable[list[HashRow]]) -> Decoded:
    rows = list(itertools.chain.from_iterable(chunks))
    return Decoded([(f, v) for f, v, _ in rows], [(f, t) for f, _, t in rows if t is not None])


def _listpack_rows(lp: Any) -> Iterator[list[HashRow]]:
    flat = texts(lp.entries)
    ttls: list[Any] = values(lp.entries)  # integers: the server appends a TTL as one (lpAppendInteger)
    yield list(zip(flat[0::3], flat[1::3], [t or None for t in ttls[2::3]]))


# A Valkey path hash as `values.decode` gives it: each path and its (field, value) pairs
PathHash = list[tuple[bytes, list[tuple[bytes, bytes]]]]


def path_hash(v: Any) -> PathHash:
    """The paths of a Valkey PATH_HASH (spec hash::valkey_path_hash) in file order, each with its
    fields, checked as the loader checks them (valkey src/rdb.c rdbLoadObject, RDB_TYPE_PATH_HASH:
    a path goes into the radix tree with raxTryInsert, a field into the path's hash with
    hashTypeSet, and one already there refuses the file)."""
    paths: PathHash = [(text(item.path), [(text(e.field), text(e.value)) for e in item.entries]) for item in v.paths]
    path = first_repeated(p for p, _ in paths)
    if path is not None:
        raise IntegrityError(f"the path {path!r} twice (valkey src/rdb.c rdbLoadObject: "
                             '"Duplicate path-hash path or out of memory")')
    for path, fields in paths:
        field = first_repeated(f for f, _ in fields)
        if field is not None:
            raise IntegrityError(f"the field {field!r} twice in the path {path!r} (valkey src/rdb.c "
                                 'rdbLoadObject: "Duplicate path-hash payload field")')
    return paths


def scored(entries: Any) -> list[tuple[bytes, float]]:
    """A ziplist or listpack sorted set's (member, score) pairs: the members' texts and the scores
    read from the entries' texts (an integer's decimal text reads back as the same float)."""
    scores = entry_scores(entries)
    return list(zip(texts(entries)[0::2][:len(scores)], scores))


def entry_scores(entries: Any) -> list[float]:
    """`score` of entries 1, 3, 5...: with columns, in one C pass reading texts with C's strtod
    itself, as the server does; else from their texts."""
    bulk: Callable[[int, int, int], list[float]] | None = getattr(entries, "strtod", None)
    if bulk is not None:
        return bulk(1, 2, ZZL_STRTOD_BYTES)
    return _scores(texts(entries)[1::2])


def _scores(texts: list[bytes]) -> list[float]:
    """`score` of each text, by float() in one pass when no text holds what float() reads and
    strtod does not (an underscore, or more than the 127 bytes the server reads)."""
    if b"_" not in b"".join(texts) and max(map(len, texts), default=0) <= ZZL_STRTOD_BYTES:
        try:
            return list(map(float, texts))
        except ValueError:  # a prefix, hexadecimal, NUL...: strtod's own rules, text by text
            pass
    return list(map(score, texts))


# Dragonfly member TTLs (types 31, 32) are seconds since 2023-02-01 00:00:00 UTC, -1 for none
# (dragonfly src/server/rdb_save.cc SaveHSetObject / SaveSetObject: SaveLongLongAsString of
# the member's ExpiryTime(), which MemberTimeSeconds counts from kMemberExpiryBase).
DF_MEMBER_EXPIRY_BASE_S = 1675209600


def df_member_expiry_ms(raw: bytes) -> int | None:
    """The TTL (its text) must be an int64 in decimal, as absl::SimpleAtoi reads it; Dragonfly
    refuses the file otherwise (dragonfly src/server/rdb_load.cc OpaqueObjLoader::CreateSet,
    CreateHMap)."""
    if not re.fullmatch(rb"\s*[+-]?[0-9]+\s*", raw) or not -(1 << 63) <= int(raw) < 1 << 63:
        raise IntegrityError(f"the member TTL {raw!r} is not a 64-bit number")
    seconds = int(raw)
    return None if seconds == -1 else (DF_MEMBER_EXPIRY_BASE_S + seconds) * 1000


def df_chunks(chunk_list: Any) -> bytes:
    """The bytes of a `dragonfly::df_chunk_list` (absent when the total size is 0): each chunk
    is an `rdb_string` (plain, integer-encoded or LZF), decoded and joined; None (a filter of 0
    bytes) is no bytes."""
    if chunk_list is None:
        return b""
    return b"".join(text(chunk.data) for chunk in chunk_list.chunks)


def chunk_rows(v: Any, width: int) -> Iterator[tuple[bytes, ...]]:
    """Each element of a value read in chunks (`chunks_entries`) as the texts of its `width`
    entries (integers as their decimal text)."""
    for rows in row_chunks(v, width):
        yield from rows


def row_chunks(v: Any, width: int) -> Iterator[list[tuple[bytes, ...]]]:
    """`chunk_rows` a chunk at a time."""
    for chunk in v.chunks_entries(CHUNK_ROWS):
        flat = texts(chunk)
        yield list(zip(*(flat[i::width] for i in range(width))))


def _metadata_rows(v: Any) -> Iterator[list[HashRow]]:
    """A Redis 7.4 HASH_METADATA's fields: a TTL is stored + 1 from the hash's min_expire, 0 for none."""
    base = v.min_expire - 1
    for rows in row_chunks(v, 3):
        yield [(f, value, int(ttl) + base if ttl != b"0" else None) for ttl, f, value in rows]


# The hashes with field TTLs, each field's row (`HashRow`) a chunk at a time, read as they are
# iterated: a hashtable-encoded one (types 22 and 24 of Redis 7.4 RC and GA, Dragonfly's 31) in
# bounded chunks, a listpack (23, 25) or a Valkey HASH_2 (whose parser reads it whole) as one
TTL_ROWS: dict[int, Callable[[Any], Iterator[list[HashRow]]]] = {
    ValueType.HASH_METADATA_PRE_GA: lambda v: ([(f, value, int(ttl) or None) for ttl, f, value in rows]
                                               for rows in row_chunks(v, 3)),
    ValueType.HASH_LISTPACK_EX_PRE_GA: lambda v: _listpack_rows(container(v.listpack)),
    ValueType.HASH_METADATA: _metadata_rows,
    ValueType.HASH_LISTPACK_EX: lambda v: _listpack_rows(container(v.listpack)),
    ValueType.DF_HASH_WITH_EXPIRY: lambda v: ([(f, value, df_member_expiry_ms(ttl)) for f, value, ttl in rows]
                                              for rows in row_chunks(v, 3)),
    ValueType.VALKEY_HASH_2: lambda v: iter([[(text(e.field), text(e.value), e.expire_ms if e.expire_ms != -1
                                               else None) for e in v.entries]]),
}


def _df_set(v: Any) -> Decoded:
    rows = [(member, df_member_expiry_ms(ttl)) for member, ttl in chunk_rows(v, 2)]
    return Decoded([m for m, _ in rows], member_expire_at_ms=[(m, t) for m, t in rows if t is not None])


def _df_sbf(v: Any, chunked: bool) -> dict[str, Any]:
    filters = [{"hash_count": f.hash_cnt.value, "bits": df_chunks(f.chunks) if chunked else text(f.blob)}
               for f in v.filters]
    return {"grow_factor": v.grow_factor, "fp_prob": v.fp_prob, "prev_size": v.prev_size.value,
            "current_size": v.current_size.value, "max_capacity": v.max_capacity.value, "filters": filters}


def _df_cms(v: Any) -> dict[str, Any]:
    return {"width": v.width.value, "depth": v.depth.value, "total_count": v.total_count.value,
            "counters": list(v.counters)}


def _df_topk(v: Any) -> dict[str, Any]:
    return {"k": v.k.value, "width": v.width.value, "depth": v.depth.value, "decay": v.decay,
            "heap": [{"item": text(i.item), "count": i.count.value} for i in v.heap], "counters": list(v.counters)}


def _df_cuckoo(v: Any) -> dict[str, Any]:
    return {"slots_per_bucket": v.slots_per_bucket.value, "max_iterations": v.max_iter.value,
            "expansion": v.expansion.value, "num_buckets": v.num_buckets.value, "num_items": v.num_items.value,
            "num_deletes": v.num_deletes.value, "filters": [df_chunks(f.chunks) for f in v.filters]}


def template_names(template: Any) -> list[bytes]:
    """The field names of a HASH_TEMPLATE record (spec `rdb::hash_template`), in its order."""
    return [text(name.name) for name in template.fields.names]


def carried_names(fields: Any) -> list[bytes]:
    """The field names a self-contained template hash carries (spec `hash::template_fields`):
    a listpack's entries (an integer entry a name's decimal text: redis src/rdb.c
    rdbLoadTemplateFields), or strings. The grammar checks the order of strings; a listpack's is
    checked here, as the loader checks it."""
    if fields.names_listpack is None:
        return [text(name.name) for name in fields.names.names]
    names = texts(container(fields.names_listpack).entries)
    if not strictly_ascending(names):
        raise IntegrityError("the field names of a template hash are not strictly ascending (a shorter one "
                             "first, names of one length byte by byte: redis src/rdb.c rdbLoadTemplateFields, "
                             "\"template fields not strictly sorted\")")
    return names


def _template_hash(names: list[bytes], values: list[bytes]) -> Decoded:
    """A template hash as a plain hash: each field name with its value (the grammar checked that
    there is one value a name)."""
    return Decoded(list(zip(names, values)))


def _ttl_decoder(rows: Callable[[Any], Iterator[list[HashRow]]]) -> Callable[[Any, int], Decoded]:
    """The decoder of a hash with field TTLs whose rows `rows` reads."""
    return lambda v, t: _hash_with_ttls(rows(v))


DECODERS: dict[int, Callable[[Any, int], Decoded]] = {
    ValueType.STRING: lambda v, t: Decoded(text(v)),
    ValueType.LIST: lambda v, t: Decoded(PACKERS[ValueType.LIST](v).elements()),
    ValueType.SET: lambda v, t: Decoded(PACKERS[ValueType.SET](v).elements()),
    ValueType.ZSET: lambda v, t: Decoded([(text(e.member), legacy_double(e.score)) for e in v.entries]),
    ValueType.HASH: lambda v, t: Decoded(PACKERS[ValueType.HASH](v).elements()),
    ValueType.ZSET_2: lambda v, t: Decoded(PACKERS[ValueType.ZSET_2](v).elements()),
    ValueType.MODULE_2: lambda v, t: Decoded(module_value(v)),
    # the last zipmap entry is the end marker (spec zipmap.ksy), not a pair
    ValueType.HASH_ZIPMAP: lambda v, t: Decoded([(e.field, e.value) for e in container(v).entries
                                                 if e.field is not None]),
    ValueType.LIST_ZIPLIST: lambda v, t: Decoded(texts(container(v).entries)),
    ValueType.SET_INTSET: lambda v, t: Decoded(texts(container(v).members)),
    ValueType.ZSET_ZIPLIST: lambda v, t: Decoded(scored(container(v).entries)),
    ValueType.HASH_ZIPLIST: lambda v, t: Decoded(pairs(container(v).entries)),
    ValueType.LIST_QUICKLIST: lambda v, t: Decoded(PACKERS[ValueType.LIST_QUICKLIST](v).elements()),
    ValueType.STREAM_LISTPACKS: lambda v, t: Decoded(Stream.from_spec(v, t)),
    ValueType.HASH_LISTPACK: lambda v, t: Decoded(pairs(container(v).entries)),
    ValueType.ZSET_LISTPACK: lambda v, t: Decoded(scored(container(v).entries)),
    ValueType.LIST_QUICKLIST_2: lambda v, t: Decoded(PACKERS[ValueType.LIST_QUICKLIST_2](v).elements()),
    ValueType.STREAM_LISTPACKS_2: lambda v, t: Decoded(Stream.from_spec(v, t)),
    ValueType.SET_LISTPACK: lambda v, t: Decoded(texts(container(v).entries)),
    ValueType.STREAM_LISTPACKS_3: lambda v, t: Decoded(Stream.from_spec(v, t)),
    **{kind: _ttl_decoder(rows) for kind, rows in TTL_ROWS.items()},
    ValueType.STREAM_LISTPACKS_4: lambda v, t: Decoded(Stream.from_spec(v, t)),
    ValueType.STREAM_LISTPACKS_5: lambda v, t: Decoded(Stream.from_spec(v, t)),
    ValueType.ARRAY: lambda v, t: Decoded(sparse_array(v)),
    ValueType.DF_JSON: lambda v, t: Decoded(text(v)),
    ValueType.DF_SET_WITH_EXPIRY: lambda v, t: _df_set(v),
    ValueType.DF_SBF: lambda v, t: Decoded(_df_sbf(v, chunked=False)),
    ValueType.DF_SBF2: lambda v, t: Decoded(_df_sbf(v, chunked=True)),
    ValueType.DF_CMS: lambda v, t: Decoded(_df_cms(v)),
    ValueType.DF_TOPK: lambda v, t: Decoded(_df_topk(v)),
    ValueType.DF_CUCKOO: lambda v, t: Decoded(_df_cuckoo(v)),
    ValueType.DF_JSON_LEGACY: lambda v, t: Decoded(text(v)),
    ValueType.VALKEY_PATH_HASH: lambda v, t: Decoded(path_hash(v)),
    # a values listpack's first entry is a template id: the values follow it
    HASH_TMPL_LP: lambda v, t: _template_hash(carried_names(v.fields), texts(container(v.values).entries)[1:]),
    HASH_TMPL_LP_REF: lambda v, t: _template_hash(template_names(v.template), texts(container(v.values).entries)[1:]),
    HASH_TMPL_ARRAY: lambda v, t: _template_hash(carried_names(v.fields), [text(value) for value in v.values]),
    HASH_TMPL_ARRAY_REF: lambda v, t: _template_hash(template_names(v.template), [text(value) for value in v.values]),
}

# each value type's name (TYPE) and encoding (OBJECT ENCODING) as the server reports them
_NAME_AND_ENCODING: dict[int, tuple[str, str]] = {
    ValueType.STRING: ("string", "string"),
    ValueType.LIST: ("list", "linkedlist"),
    ValueType.SET: ("set", "hashtable"),
    ValueType.ZSET: ("zset", "skiplist"),
    ValueType.HASH: ("hash", "hashtable"),
    ValueType.ZSET_2: ("zset", "skiplist"),
    ValueType.MODULE_PRE_GA: ("module", "module"),
    ValueType.MODULE_2: ("module", "module"),
    ValueType.HASH_ZIPMAP: ("hash", "zipmap"),
    ValueType.LIST_ZIPLIST: ("list", "ziplist"),
    ValueType.SET_INTSET: ("set", "intset"),
    ValueType.ZSET_ZIPLIST: ("zset", "ziplist"),
    ValueType.HASH_ZIPLIST: ("hash", "ziplist"),
    ValueType.LIST_QUICKLIST: ("list", "quicklist"),
    ValueType.STREAM_LISTPACKS: ("stream", "listpacks"),
    ValueType.HASH_LISTPACK: ("hash", "listpack"),
    ValueType.ZSET_LISTPACK: ("zset", "listpack"),
    ValueType.LIST_QUICKLIST_2: ("list", "quicklist"),
    ValueType.STREAM_LISTPACKS_2: ("stream", "listpacks"),
    ValueType.SET_LISTPACK: ("set", "listpack"),
    ValueType.STREAM_LISTPACKS_3: ("stream", "listpacks"),
    ValueType.HASH_METADATA_PRE_GA: ("hash", "hashtable"),
    ValueType.HASH_LISTPACK_EX_PRE_GA: ("hash", "listpack"),
    ValueType.HASH_METADATA: ("hash", "hashtable"),
    ValueType.HASH_LISTPACK_EX: ("hash", "listpack"),
    ValueType.STREAM_LISTPACKS_4: ("stream", "listpacks"),
    ValueType.STREAM_LISTPACKS_5: ("stream", "listpacks"),
    ValueType.ARRAY: ("array", "array"),
    ValueType.DF_JSON: ("json", "json"),
    ValueType.DF_HASH_WITH_EXPIRY: ("hash", "hashtable"),
    ValueType.DF_SET_WITH_EXPIRY: ("set", "hashtable"),
    ValueType.DF_SBF: ("bloom", "sbf"),
    ValueType.DF_SBF2: ("bloom", "sbf"),
    ValueType.DF_CMS: ("cms", "cms"),
    ValueType.DF_TOPK: ("topk", "topk"),
    ValueType.DF_CUCKOO: ("cuckoo", "cuckoo"),
    ValueType.DF_JSON_LEGACY: ("json", "json"),
    ValueType.VALKEY_HASH_2: ("hash", "hashtable"),
    ValueType.VALKEY_PATH_HASH: ("path-hash", "path-hash"),  # valkey tests/unit/type/path_hash.tcl
    # Redis 8.10: OBJECT ENCODING of a template hash (redis tests/unit/type/hash-templates.tcl)
    HASH_TMPL_LP: ("hash", "template-listpack"),
    HASH_TMPL_LP_REF: ("hash", "template-listpack"),
    HASH_TMPL_ARRAY: ("hash", "template-array"),
    HASH_TMPL_ARRAY_REF: ("hash", "template-array"),
}
TYPE_NAMES = {kind: name for kind, (name, _) in _NAME_AND_ENCODING.items()}

# the value kinds of a stream: tested once a key, without looking up its name
STREAM_KINDS = frozenset(kind for kind, name in TYPE_NAMES.items() if name == "stream")

ENCODINGS = {kind: encoding for kind, (_, encoding) in _NAME_AND_ENCODING.items()}


@dataclass(slots=True)
class Packed:
    """A list, set, hash or sorted set left in its entries without an object per element: the
    containers' entries of a listpack, ziplist or intset (columns with the native backend, lists
    with the Python one), or the chunks of a hashtable-encoded value, read as they are iterated
    (once). What `decode` makes a list of, for a writer that needs no object per element
    (`rdbspec dump`'s compiled encoder). `shape` says how the entries read, integers as their
    decimal text: "items" (each entry an element), "pairs" (field, value; an odd last entry left
    out, as `pairs` does) or "scored" (member, score; `scores` holds the scores as `scored` reads
    them, else each member's score is the entry after it, a number). `count` is the elements
    declared, for parts read as they are iterated."""

    shape: str
    parts: Iterable[Any]  # each container's entries, or each chunk, in order (a list, or read as iterated)
    scores: list[float] | None = None
    count: int | None = None

    def __len__(self) -> int:
        """How many elements `decode` gives."""
        if self.count is not None:
            return self.count
        if self.scores is not None:
            return len(self.scores)
        if self.shape == "pairs":
            return sum([len(part) // 2 for part in self.parts])
        return sum(map(len, self.parts))

    def elements(self) -> list[Any]:
        """The list `decode` gives: each entry's text, (field, value) or (member, score) pairs."""
        if self.scores is not None:
            return list(zip(texts(next(iter(self.parts)))[0::2], self.scores))
        out: list[Any] = []
        for part in self.parts:
            if self.shape == "scored":
                out.extend(zip(texts(part[0::2]), part[1::2]))
            else:
                out.extend(pairs(part) if self.shape == "pairs" else texts(part))
        return out


# A part of a value that workers read in parts (`CUTS`): `count` elements (or nodes) from the one
# at byte `start`; (None, None) is the whole value
Part = tuple[int | None, int | None]
WHOLE: Part = (None, None)


def _chunked(shape: str, chunks: Callable[..., Iterator[Any]], declared: int, part: Part) -> Packed:
    """A hashtable-encoded value read in chunks (`chunks_<field>`): all `declared` elements, or a part's."""
    start, count = part
    return Packed(shape, chunks(CHUNK_ROWS, start, count), count=declared if start is None else count)


def _items(v: Any, part: Part = WHOLE) -> Packed:
    return _chunked("items", v.chunks_items, v.num_items.value, part)


def _hash_pairs(v: Any, part: Part = WHOLE) -> Packed:
    return _chunked("pairs", v.chunks_entries, v.num_fields.value, part)


def _zset_scored(v: Any, part: Part = WHOLE) -> Packed:
    return _chunked("scored", v.chunks_entries, v.num_members.value, part)


def _quicklist(v: Any, part: Part = WHOLE) -> Packed:
    return Packed("items", (container(node).entries for node in v.iter_nodes(*part)))


def _quicklist_2(v: Any, part: Part = WHOLE) -> Packed:
    return Packed("items", _quicklist_2_parts(v, part))


def _quicklist_2_parts(v: Any, part: Part) -> Iterator[Any]:
    for node in v.iter_nodes(*part):  # a PLAIN node: one element, not a container
        yield [text(node.plain)] if node.container.value == ContainerKind.PLAIN else container(node.packed).entries


def _packed_scored(v: Any) -> Packed:
    entries = container(v).entries
    return Packed("scored", [entries], entry_scores(entries))


PACKERS: dict[int, Callable[..., Packed]] = {
    ValueType.LIST: _items,
    ValueType.SET: _items,
    ValueType.HASH: _hash_pairs,
    ValueType.ZSET_2: _zset_scored,
    ValueType.LIST_ZIPLIST: lambda v: Packed("items", [container(v).entries]),
    ValueType.SET_INTSET: lambda v: Packed("items", [container(v).members]),
    ValueType.ZSET_ZIPLIST: _packed_scored,
    ValueType.HASH_ZIPLIST: lambda v: Packed("pairs", [container(v).entries]),
    ValueType.LIST_QUICKLIST: _quicklist,
    ValueType.HASH_LISTPACK: lambda v: Packed("pairs", [container(v).entries]),
    ValueType.ZSET_LISTPACK: _packed_scored,
    ValueType.LIST_QUICKLIST_2: _quicklist_2,
    ValueType.SET_LISTPACK: lambda v: Packed("items", [container(v).entries]),
}

# The values workers may read in parts (spec `-rdbspec-splits`): a hashtable-encoded list, set,
# hash or sorted set cut between its elements, a quicklist or a stream between its nodes. Each
# gives the (byte position, index) of a part's first element or node every `step` bytes or so,
# then (the position after the last, the count). `PACKERS` read a part of the first four kinds
# (`packed`), `streams.read_nodes` a stream's.
CUTS: dict[int, Callable[[Any, int], list[tuple[int, int]]]] = {
    ValueType.LIST: lambda v, step: v.cuts_items(step),
    ValueType.SET: lambda v, step: v.cuts_items(step),
    ValueType.HASH: lambda v, step: v.cuts_entries(step),
    ValueType.ZSET_2: lambda v, step: v.cuts_entries(step),
    ValueType.LIST_QUICKLIST: lambda v, step: v.cuts_nodes(step),
    ValueType.LIST_QUICKLIST_2: lambda v, step: v.cuts_nodes(step),
    **{kind: (lambda v, step: v.cuts_nodes(step)) for kind in STREAM_KINDS},
}


def packed(value_kind: int, value: Any, part: Part = WHOLE) -> Packed | None:
    """`value` (or, for a value of `CUTS`, its `part`) as a `Packed` when its encoding is one of
    `PACKERS`' and it holds an element; None otherwise (an empty one: the server may skip the
    key, which `decode` tells)."""
    packer = PACKERS.get(value_kind)
    if packer is None:
        return None
    got = packer(value) if part == WHOLE else packer(value, part)
    if got.count is not None or isinstance(got.parts, list):
        return got if len(got) else None
    for part in got.parts:  # a quicklist's nodes, read as they are iterated: up to one with an entry
        if len(part):
            got.parts = itertools.chain((part,), got.parts)
            return got
    return None


def _blob_size(blob: Any) -> int:
    """The bytes of the container in an `rdb_blob` (decompressed: what the server allocates)."""
    size: int = blob.ulen.value if blob.len.is_encoded else blob.len.value
    return size


def _quicklist_2_sizes(v: Any) -> list[tuple[bool, int]]:
    return [(True, len(text(node.plain))) if node.container.value == ContainerKind.PLAIN
            else (False, _blob_size(node.packed)) for node in v.iter_nodes()]


# The containers a value is stored in, as (PLAIN element, bytes) pairs: a quicklist's nodes, one
# blob for the other packed encodings (what the server allocates when it loads them as they are)
CONTAINERS: dict[int, Callable[[Any], list[tuple[bool, int]]]] = {
    **{kind: (lambda v: [(False, _blob_size(v))])
       for kind in (ValueType.HASH_ZIPMAP, ValueType.LIST_ZIPLIST, ValueType.SET_INTSET, ValueType.ZSET_ZIPLIST,
                    ValueType.HASH_ZIPLIST, ValueType.HASH_LISTPACK, ValueType.ZSET_LISTPACK, ValueType.SET_LISTPACK)},
    ValueType.LIST_QUICKLIST: lambda v: [(False, _blob_size(node)) for node in v.iter_nodes()],
    ValueType.LIST_QUICKLIST_2: _quicklist_2_sizes,
    ValueType.HASH_LISTPACK_EX_PRE_GA: lambda v: [(False, _blob_size(v.listpack))],
    ValueType.HASH_LISTPACK_EX: lambda v: [(False, _blob_size(v.listpack))],
}


def containers(value_kind: int, value: Any) -> list[tuple[bool, int]] | None:
    """`CONTAINERS` of the value; None for an encoding that keeps no container."""
    sizes = CONTAINERS.get(value_kind)
    return sizes(value) if sizes is not None else None


# Lists, sets, sorted sets and hashes that hold nothing: the server skips such a key on load,
# logging "rdbLoadObject skipping empty key" (redis src/rdb.c rdbLoadObject `goto emptykey`,
# rdbLoadRioWithLoadingCtx; Redis >= 6.2). An empty intset or zipmap is refused instead
# (intset.c intsetValidateIntegrity, zipmap.c zipmapValidateIntegrity: "Zipmap integrity check
# failed"); rdbspec reads an empty zipmap as an empty hash, without either.
EMPTY_KEY_RULE = "redis src/rdb.c rdbLoadObject (emptykey)"
_SKIPPED_WHEN_EMPTY = {"list", "set", "zset", "hash"}
ZIPMAP = ValueType.HASH_ZIPMAP


def skipped_when_empty(value_kind: int, value: Any) -> bool:
    return (isinstance(value, list) and not value and value_kind != ZIPMAP
            and TYPE_NAMES.get(value_kind) in _SKIPPED_WHEN_EMPTY)


def decode(value_kind: int, value: Any, type_code: int) -> Decoded:
    return DECODERS[value_kind](value, type_code)
