"""A dump for another server generation (issue 15): `rdbspec rewrite --target NAME / --rdb-version N`.

Each key's value gets the layout the target's server writes for the same data, built from the
objects the Python parsers read and written by the generated writers. A Valkey 9 target
(`valkey=True`: VALKEY080, what Valkey 9.0 and 9.1 write) takes the layouts of RDB 11, the last
Valkey shares with Redis (`Target.layouts`: its loader refuses Redis's later types), and its
own HASH_2 for the hashes with field TTLs:

* lists: a quicklist of listpacks (18, RDB 10+) becomes, for RDB 9, a quicklist of ziplists (14)
  node for node, a PLAIN node a ziplist of its one element (redis 6.2 src/quicklist.c: every node
  is a ziplist);
* sets: a listpack set (20, RDB 11+) becomes, below RDB 11, the intset Redis 7.0 makes when every
  member is an integer and there are at most 512 (src/t_set.c setTypeCreate, intsetAdd: members
  ascending, the narrowest width that holds them all), else a hashtable set (2);
* sorted sets and hashes: a listpack (17, 16; RDB 10+) becomes, for RDB 9, a ziplist (12, 13) of
  the same entries;
* streams: the stream type of the target (15 for RDB 9, 19 for RDB 10, 21 from RDB 11 and for
  Valkey 9): going down, the metadata the older type has no room for is dropped (first and
  max-deleted IDs and entries_added below 19, the groups' entries_read below 19, the consumers'
  active time below 21, the IDMP settings and producers of types 26 and 27, the NACK zones of type
  27: its entries stay pending for no consumer, as a loader of the older type keeps them, and a
  target server with sanitize-dump-payload yes refuses such an entry); going up, it is what the
  newer server's loader sets (redis src/rdb.c rdbLoadObject: entries_added = length, no
  tombstone, first_id the first entry, entries_read estimated by
  streamEstimateDistanceFromFirstEverEntry, active time = seen time);
* sparse arrays (28, Redis 8.8) have no older form: refused, or dropped;
* hashes with field TTLs (Redis 7.4's 24 and 25 and its release candidates' 22 and 23: RDB 12;
  Valkey's 22; Dragonfly's 31) become, for Valkey 9, Valkey's HASH_2 (22) of the same fields
  and expiries (`Layouts.hash_with_ttls`: a plain hash when no field has one, as valkey src/rdb.c
  rdbSaveObjectType writes it; a HASH_2 is kept as it is), for RDB 12 the Redis types stay, and
  otherwise they become hashtable hashes (4), their TTLs lost (Dragonfly's TTLs, whole seconds,
  are whole milliseconds too: HASH_2 holds them);
* Redis 8.10's template hashes (RDB 15: types 29-32, which name HASH_TEMPLATE records or carry their
  field names) become, below RDB 15, hashtable hashes (4) of the same fields and values, and the
  HASH_TEMPLATE records are not written: nothing is lost (the target's loader makes a small one a
  listpack);
* a Dragonfly snapshot (a DFS set or one file) loses its own AUX fields and types: JSON, Bloom,
  count-min, top-k and cuckoo keys are dropped, sets with member TTLs (32) lose the TTLs (its
  hashes with member TTLs, 31, are those above);
* Valkey 9.2's path hashes (type 23 of VALKEY081) are dropped: no target has the type, nor a
  type that holds paths (valkey src/rdb.c rdbGetObjectType: a path hash has no RDB type below
  81, so Valkey itself refuses to save one for an older replica, Valkey 9.0 and 9.1 among them);
* function libraries (FUNCTION2) are dropped below RDB 10, and the single functions of Redis
  7.0-rc1/rc2 (FUNCTION_PRE_GA, which every release refuses: src/rdb.c rdbFunctionLoad) always;
* Valkey 9's slot import jobs (SLOT_IMPORT) are kept for Valkey 9, dropped for every other
  target (valkey src/cluster_migrateslots.c clusterRDBLoadSlotImport: no Redis knows the opcode).

A drop loses data only where the target's server could not compute it back on loading the
older type (a dropped entries_added equal to the length, an active time equal to the seen time
lose nothing; IDMP data that is Redis's default for a stream without producers, an empty NACK
zone lose nothing). What would lose data is refused by name (`UnwritableError`) unless `allow_lossy`,
and then counted in `dropped`. Older layouts the target loads (a ziplist hash for RDB 10, a
type-15 stream for RDB 11...) are kept: the target converts them when it loads them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from rdbspec_generated import quicklist as _quicklist
from rdbspec_generated import rdb as _rdb
from rdbspec_generated import stream as _stream
from rdbspec_generated.enums import ValueType

from ..errors import UnwritableError
from ..read.dumpfile import AUX, FUNCTION2, FUNCTION_PRE_GA, HASH_TEMPLATE, SLOT_IMPORT, KeyRecord
from ..read.elements import container, text, texts
from ..read.values import STRING, TEMPLATE_KINDS
from ..server.streams import (
    UNKNOWN_ENTRIES_READ,
    entries_read_derived,
    group_entries_read,
    loaded,
    metadata_derived,
    stream_type,
)
from ..server.templates import TEMPLATES_RDB
from ..server.versions import NEWEST, OLDEST, TARGETS, VALKEY_9_RDB, Target
from .layouts import (
    HASH,
    HASH_LISTPACK,
    HASH_ZIPLIST,
    LIST_QUICKLIST,
    LIST_QUICKLIST_2,
    PLAIN,
    SET_LISTPACK,
    ZIPLIST_BLOB,
    ZSET_LISTPACK,
    ZSET_ZIPLIST,
    Layouts,
    ServerConfig,
    blob,
    hash_table,
    rdb_len,
    ziplist,
)
from .stream import id_value

# value types (the spec's rdb::value_type) besides those of `layouts`
STREAM_TYPES = (ValueType.STREAM_LISTPACKS, ValueType.STREAM_LISTPACKS_2, ValueType.STREAM_LISTPACKS_3,
                ValueType.STREAM_LISTPACKS_4, ValueType.STREAM_LISTPACKS_5)
HASH_METADATA, HASH_LISTPACK_EX = ValueType.HASH_METADATA, ValueType.HASH_LISTPACK_EX
VALKEY_HASH_2 = ValueType.VALKEY_HASH_2
DF_HASH_WITH_EXPIRY, DF_SET_WITH_EXPIRY = ValueType.DF_HASH_WITH_EXPIRY, ValueType.DF_SET_WITH_EXPIRY
# the hashes with field TTLs, by what `drop` names when their TTLs are lost
FIELD_TTL_HASHES: dict[int, str] = {
    **dict.fromkeys((ValueType.HASH_METADATA_PRE_GA, ValueType.HASH_LISTPACK_EX_PRE_GA),
                    "Redis 7.4 release candidates' types 22 and 23"),
    **dict.fromkeys((HASH_METADATA, HASH_LISTPACK_EX, VALKEY_HASH_2), "Redis 7.4+ types 24 and 25, Valkey 9's type 22"),
    DF_HASH_WITH_EXPIRY: "Dragonfly type 31"}
FIELD_TTLS_RDB = 12  # Redis 7.4: its loader takes the four Redis types (redis src/rdb.c rdbLoadObject)
DRAGONFLY_ONLY = frozenset((ValueType.DF_JSON, ValueType.DF_SBF, ValueType.DF_SBF2, ValueType.DF_CMS, ValueType.DF_TOPK,
                            ValueType.DF_CUCKOO, ValueType.DF_JSON_LEGACY))
# the types no target holds, by the server that writes them
NO_OLDER_FORM: dict[int, str] = {**dict.fromkeys(DRAGONFLY_ONLY, "Dragonfly"),
                                 ValueType.VALKEY_PATH_HASH: "Valkey 9.2", ValueType.ARRAY: "Redis 8.8"}
# the AUX fields Dragonfly writes of its snapshot files (dragonfly src/server/rdb_save.cc SaveAux)
DRAGONFLY_AUX = frozenset((b"df-ver", b"snapshot-id", b"shard-id", b"shard-count", b"table-mem"))
# what a target may not hold, as `Losses.drop` names it (`field_ttls`: a hash's field TTLs)
DF_MEMBER_TTLS = "set member TTLs (Dragonfly type 32)"
FUNCTIONS = "function libraries (FUNCTION2: Redis 7.0+)"
PRE_GA_FUNCTIONS = "pre-release functions (FUNCTION opcode 246: Redis 7.0-rc1 and rc2 only)"
STREAM_METADATA = "stream metadata (entries_added, first and max-deleted IDs: type 19+)"
ENTRIES_READ = "consumer group entries_read (type 19+)"
IDMP = "stream IDMP settings and producers (types 26 and 27)"
NACK_ZONES = "stream NACK zones (type 27: pending entries XNACK released)"


def field_ttls(kind: int) -> str:
    """The field TTLs of a hash of value kind `kind` (one of `FIELD_TTL_HASHES`), as `drop` names them."""
    return f"hash field TTLs ({FIELD_TTL_HASHES[kind]})"


class Losses:
    """What a target (`name`: "RDB 9", "VALKEY080", "redis-6.2"...) cannot hold of a dump: refused
    by name (`UnwritableError`), or, with `allow_lossy`, counted in `dropped`."""

    def __init__(self, name: str, allow_lossy: bool = False):
        self.name = name
        self.allow_lossy = allow_lossy
        self.dropped: Counter[str] = Counter()

    def drop(self, what: str, record: KeyRecord | None = None) -> None:
        """`what` cannot be held by the target: refused, or counted with `allow_lossy`."""
        if not self.allow_lossy:
            where = f" (key {record.key!r} in db {record.db})" if record is not None else ""
            raise UnwritableError(f"{self.name} cannot hold {what}{where}; --allow-lossy drops it")
        self.dropped[what] += 1

    def no_older_form(self, record: KeyRecord) -> bool:
        """Whether the key is of a type no target holds (`NO_OLDER_FORM`: Dragonfly's own types, a
        Valkey path hash, a Redis 8.8 sparse array), told to `drop`."""
        producer = NO_OLDER_FORM.get(record.value_kind)
        if producer is not None:
            self.drop(f"{producer} {record.type_name} keys (type {record.rdb_type})", record)
        return producer is not None


class Converter(Losses):
    """Gives keys the layout of RDB `version`, under Valkey's magic with `valkey` (version 80:
    Valkey 9's layouts; see the module doc)."""

    def __init__(self, version: int, allow_lossy: bool = False, compress: bool = True, valkey: bool = False):
        if valkey and version != VALKEY_9_RDB:
            raise UnwritableError(f"{Target(version, valkey).magic} is not written: the VALKEY dumps written are "
                                  f"Valkey 9's {Target(VALKEY_9_RDB, valkey).magic}")
        if not valkey and not OLDEST <= version <= NEWEST:
            raise UnwritableError(f"RDB {version} is not written: versions {OLDEST} to {NEWEST} "
                                  f"({', '.join(f'{n} {t.magic}' for n, t in TARGETS.items())})")
        # the target as its refusals name it: its RDB version, or its magic for Valkey 9
        super().__init__(Target(version, valkey).magic if valkey else f"RDB {version}", allow_lossy)
        self.version = version
        self.valkey = valkey
        self.layouts = Target(version, valkey).layouts  # what the rules of the module doc compare
        self.compress = compress

    @property
    def templates(self) -> bool:
        """Whether the target holds Redis 8.10's hash templates (HASH_TEMPLATE, types 29-32)."""
        return self.layouts >= TEMPLATES_RDB

    @classmethod
    def for_target(cls, target: Target, allow_lossy: bool = False, compress: bool = True) -> Converter:
        """The converter that writes what `target`'s server writes (`rdbspec.server.versions.TARGETS`)."""
        return cls(target.version, allow_lossy, compress, target.valkey)

    def holds(self, record: KeyRecord, note: bool = False) -> bool:
        """Whether the key is written: not a Dragonfly type Redis has none of (JSON, Bloom,
        count-min, top-k, cuckoo filters), nor a Valkey path hash, nor a Redis 8.8 sparse array (no
        target knows type 28); with `note`, told to `drop` the first time it is met."""
        if note:
            return not self.no_older_form(record)
        return record.value_kind not in NO_OLDER_FORM

    def head(self, record: Any) -> bool:
        """Whether a record before the databases (AUX, function, module data) is written. A
        Dragonfly snapshot's own AUX fields (df-ver, snapshot-id, shard-id...) are not: they
        describe the snapshot files, not the data."""
        if record.kind == AUX and text(record.body.key) in DRAGONFLY_AUX:
            return False
        if record.kind == FUNCTION2 and self.layouts < 10:
            self.drop(FUNCTIONS)
            return False
        if record.kind == FUNCTION_PRE_GA:  # every release refuses it (rdbFunctionLoad)
            self.drop(PRE_GA_FUNCTIONS)
            return False
        if record.kind == SLOT_IMPORT and not self.valkey:  # Valkey 9's; no Redis knows the opcode
            self.drop("slot import jobs (SLOT_IMPORT: Valkey 9 atomic slot migration)")
            return False
        # the template hashes become plain hashes of the same fields (`key`): nothing names a template
        return record.kind != HASH_TEMPLATE or self.templates

    @staticmethod
    def copied(record: KeyRecord) -> bool:
        """Whether the key's bytes, as they were read, are the target's whatever it is: a string,
        stored alike by every version written (a string of any size is copied, never read whole)."""
        return record.value_kind == STRING

    def key(self, record: KeyRecord) -> KeyRecord:
        """The key with the value layout of the target."""
        kind = record.value_kind
        value = record._body.value
        rdb_type = record.rdb_type
        if kind == LIST_QUICKLIST_2 and self.layouts < 10:
            rdb_type, value = LIST_QUICKLIST, self._ziplist_quicklist(value)
        elif kind == SET_LISTPACK and self.layouts < 11:
            rdb_type, value = self._set(texts(container(value).entries))
        elif kind in (ZSET_LISTPACK, HASH_LISTPACK) and self.layouts < 10:
            rdb_type = ZSET_ZIPLIST if kind == ZSET_LISTPACK else HASH_ZIPLIST
            value = self._ziplist(container(value).entries)
        elif kind in STREAM_TYPES:
            rdb_type, value = stream_type(self.version, self.valkey), self._stream(record, value)
        elif kind in FIELD_TTL_HASHES:
            rdb_type, value = self._ttl_hash(record, rdb_type, value)
        elif kind in TEMPLATE_KINDS and not self.templates:
            rdb_type, value = HASH, self._hash(record.value)
        elif kind == DF_SET_WITH_EXPIRY:
            self.drop(DF_MEMBER_TTLS, record)
            rdb_type, value = self._set(record.value)
        if rdb_type == record.rdb_type and value is record._body.value and self.version == record._body.rdb_version:
            return record
        body = _rdb.KeyValue._new(type_code=rdb_type, is_valkey=self.valkey, rdb_version=self.version,
                                  key=record._body.key, value=value)
        return dataclasses.replace(record, rdb_type=rdb_type, value_kind=body.value_kind, _body=body)

    # -- containers --------------------------------------------------------------------------------

    def _new_keys(self) -> Layouts:
        """The layouts the target's server gives a key made by one command."""
        return Layouts(self.layouts, ServerConfig(rdbcompression=self.compress))

    def _ziplist(self, entries: list) -> Any:
        """A ziplist blob of `entries` (ints and bytes, as a listpack holds them)."""
        return blob(ZIPLIST_BLOB, ziplist(list(entries)), self.compress)

    def _ziplist_quicklist(self, value: Any) -> Any:
        nodes = [self._ziplist([text(node.plain)] if node.container.value == PLAIN else container(node.packed).entries)
                 for node in value.nodes]
        return _quicklist.Quicklist._new(nodes=nodes)

    def _set(self, members: list[bytes]) -> tuple[int, Any]:
        """The set the target makes of these members (SADD of them: `layouts.Layouts.set`)."""
        return self._new_keys().set(members)

    def _hash(self, pairs: list[tuple[bytes, bytes]]) -> Any:
        """A hashtable hash (4) of the pairs (the target converts a small one to a listpack as it loads)."""
        return hash_table(pairs, self.compress)

    def _ttl_hash(self, record: KeyRecord, rdb_type: int, value: Any) -> tuple[int, Any]:
        """A hash with field TTLs (`FIELD_TTL_HASHES`) as the target holds it (see the module doc)."""
        kind = record.value_kind
        if self.valkey:
            if kind == VALKEY_HASH_2:
                return rdb_type, value
            expiries = dict(record.field_expire_at_ms or ())
            return self._new_keys().hash_with_ttls([(f, v, expiries.get(f)) for f, v in record.value])
        if kind not in (VALKEY_HASH_2, DF_HASH_WITH_EXPIRY) and self.version >= FIELD_TTLS_RDB:
            return rdb_type, value
        if record.field_expire_at_ms:
            self.drop(field_ttls(kind), record)
        return HASH, self._hash(record.value)

    # -- streams -------------------------------------------------------------------------------

    def _stream(self, record: KeyRecord, value: Any) -> Any:
        """The stream value with the metadata of the target's stream type (see the module doc)."""
        target, source = stream_type(self.version, self.valkey), value.type_code
        stream = record.value
        out = _stream.StreamValue._new(type_code=target, nodes=value.nodes, length=value.length, last_id=value.last_id)
        if target >= 19 and source >= 19:
            out.first_id, out.max_deleted_entry_id = value.first_id, value.max_deleted_entry_id
            out.entries_added = value.entries_added
        elif target >= 19:  # what rdbLoadObject sets for a type-15 stream
            meta = loaded(stream)
            out.first_id, out.max_deleted_entry_id = id_value(meta.first_id), id_value(meta.max_deleted)
            out.entries_added = rdb_len(meta.entries_added)
        elif not metadata_derived(stream):
            self.drop(STREAM_METADATA, record)
        if stream.idmp is not None and not stream.idmp.is_default:
            self.drop(IDMP, record)
        if any(model.nacked for model in stream.groups):
            self.drop(NACK_ZONES, record)
        out.groups = [self._group(record, stream, g, model, target)
                      for g, model in zip(value.groups, stream.groups)]
        return out

    def _group(self, record: KeyRecord, stream: Any, g: Any, model: Any, target: int) -> Any:
        """The group with the fields of the target's stream type (a NACK zone's entries stay in
        the PEL, pending for no consumer)."""
        out = _stream.StreamGroup._new(type_code=target, name=g.name, last_id=g.last_id, pel=g.pel)
        if target >= 19:
            read = group_entries_read(stream, model)  # stored, or estimated as a loader of type 15 does
            out.entries_read = g.entries_read if g.type_code >= ValueType.STREAM_LISTPACKS_2 else rdb_len(
                UNKNOWN_ENTRIES_READ if read is None else read)
        elif not entries_read_derived(stream, model):
            self.drop(ENTRIES_READ, record)
        out.consumers = []
        for c in g.consumers:
            consumer = _stream.StreamConsumer._new(type_code=target, name=c.name, seen_time=c.seen_time, pel=c.pel)
            if target >= 21:  # a loader of type 19 takes the seen time
                consumer.active_time = c.active_time if c.type_code >= ValueType.STREAM_LISTPACKS_3 else c.seen_time
            elif c.type_code >= ValueType.STREAM_LISTPACKS_3 and c.active_time != c.seen_time:
                self.drop("consumer active time (type 21)", record)
            out.consumers.append(consumer)
        return out
