"""Writing dumps (issue 15): `Writer` puts records into a new RDB file as the server writes them.

    with Writer("out.rdb", 10) as out:       # RDB 10: what Redis 7.0 writes
        out.select_db(0)
        out.hash(b"user:1", {b"name": b"ann", b"visits": b"3"})
        out.zset(b"board", {b"ann": 3.5}, expire_at_ms=1893456000000)

The bytes of every record come from the generated writers (`_write` of the generated Python
classes, `write_<id>` of the types written from their instances: spec/*.ksy with their
`-rdbspec-write` derivations). What is chosen here is only what the server chooses and the
grammar does not say:

* how a string is stored, and the encoding and order of a new key's elements
  (`rdbspec.write.layouts`: the server's choices for a key made by one command, under the redis.conf
  limits of `ServerConfig`);
* what comes before a key (rdbSaveKeyValuePair): EXPIRETIME_MS, IDLE (LRU seconds), FREQ (LFU
  counter), each when the key has one;
* Redis 8.10's hash templates (RDB 15): a HASH_TEMPLATE record for each template (`hash_template`,
  before the databases, as rdbSaveRio writes them), and hashes of them (`template_hash`); the
  writer keeps the templates written or copied by id, as a reader does, so that a key naming one
  is checked against it;
* a database's header (rdbSaveDb): SELECTDB, then RESIZEDB with its key count and the count of
  keys with an expiry; a database without keys is not written;
* the end (rdbSaveRio): EOF, then the CRC-64 of every byte before (none before RDB 5,
  rdbLoadRioWithLoadingCtx; 0 without `checksum`, as a server with `rdbchecksum no` writes it:
  rdbSaveRio's rio never updates its checksum then).

Records read from a dump and written as they were are copied as their bytes (`copy`, `copy_key`:
a key with its own records before it), their values neither decoded nor written again; spans
that follow each other in the source are gathered and written in chunks of `COPY_CHUNK`.

The file is written to a temporary file beside the destination, fsynced and renamed over it by
`close()` (`rdbspec.atomic.AtomicFile`, as rdbSave saves a dump); a failure (an exception
in the `with` block, or `abort()`) leaves the destination as it was and removes the temporary
one, and one a killed writer left is removed by the next writer of the destination.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from mmap import mmap
from pathlib import Path
from types import TracebackType
from typing import Any

from rdbspec_generated import WriteIo
from rdbspec_generated import function as _function
from rdbspec_generated import hash as _hash
from rdbspec_generated import module as _module
from rdbspec_generated import rdb as _rdb
from rdbspec_generated._runtime import WriteInputs
from rdbspec_generated.enums import ModuleOpcode, RecordKind, ValueType

from ..atomic import AtomicFile
from ..errors import UnwritableError
from ..read.checksum import crc64_update
from ..read.dumpfile import FunctionLibrary, KeyRecord
from ..read.source import release_pages
from ..read.values import (
    HASH_TMPL_ARRAY,
    HASH_TMPL_ARRAY_REF,
    HASH_TMPL_LP,
    HASH_TMPL_LP_REF,
    ModuleValue,
    template_names,
)
from ..server.streams import stream_type
from ..server.templates import TEMPLATES_RDB, template_fields
from ..server.versions import PATH_HASH_RDB, Target
from .layouts import (
    LISTPACK_BLOB,
    Layouts,
    ServerConfig,
    blob,
    listpack,
    new_key_record,
    rdb_len,
    rdb_string,
    sparse_array,
    stored,
    template_name_list,
    type_byte,
)
from .stream import EditableStream

# module opcodes (redis src/rdb.h RDB_MODULE_OPCODE_*) by the names rdbspec.read.values gives them
MODULE_OPCODES = {opcode.name.lower(): opcode for opcode in ModuleOpcode if opcode != ModuleOpcode.EOF}
MASK64 = (1 << 64) - 1
ARRAY_SINCE = 14  # the RDB version of Redis 8.8, the first with sparse arrays
COPY_CHUNK = 16 << 20  # bytes written (and checksummed) a call when copying: a mapped span is never copied whole
DumpBuffer = bytes | mmap  # what a dump is read from (`rdbspec.read.source.Source.buffer`)


class Writer:
    """A new dump at `path`: magic `REDIS%04d` (or `VALKEY%03d` with `valkey`) of `version`, then
    the records in the order given, then EOF and the checksum at `close()` (0 without `checksum`)."""

    def __init__(self, path: str | os.PathLike[str], version: int, valkey: bool = False, compress: bool = True,
                 config: ServerConfig | None = None, checksum: bool = True):
        self.path = Path(path)
        self.version = version
        self.config = config or ServerConfig(rdbcompression=compress)  # a config says whether to compress
        self.compress = self.config.rdbcompression
        self.layouts = Layouts(version, self.config)
        # what the spec's `_root` reads: the magic, and the hash templates written so far by id (the
        # index a reader's root keeps of them: spec rdb::rdb.records, -rdbspec-index)
        self.root = WriteInputs(is_valkey=valkey, version=version, hash_templates={})
        self.checksum = checksum
        self._crc = 0
        self._copying: tuple[DumpBuffer, int, int] | None = None  # the span `copy` has not written yet
        self._finished = self._closed = False
        self.db: int | None = None  # the database SELECTDB opened last
        self.slots: set[int] = set()  # the cluster slots whose counts were written in it
        self.bytes_written = 0
        self.magic = Target(version, valkey).magic
        self._file = AtomicFile(self.path, durable=True)  # last: only the writing can fail after it
        try:
            self._write(self.magic)
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def _write(self, data: bytes | bytearray | str) -> None:
        self.flush()
        self._put(data.encode("ascii") if isinstance(data, str) else bytes(data))

    def _put(self, data: bytes | memoryview) -> None:
        self._file.binary.write(data)
        if self.checksum:
            self._crc = crc64_update(self._crc, data)
        self.bytes_written += len(data)

    def copy(self, source: DumpBuffer, start: int, end: int) -> None:
        """The bytes [start, end) of `source` as they are. They are written with the next record,
        at `flush()` or at `close()`, gathered with the spans copied before when they follow them
        in `source` (`flush()` before closing the dump: its mapped pages are released as they
        are read only while it is open)."""
        if self._copying is not None and self._copying[0] is source and self._copying[2] == start:
            self._copying = (source, self._copying[1], end)
            return
        self.flush()
        self._copying = (source, start, end)

    def flush(self) -> None:
        """Writes what `copy` has gathered."""
        if self._copying is None:
            return
        source, start, end = self._copying
        self._copying = None
        with memoryview(source) as view:
            for offset in range(start, end, COPY_CHUNK):
                self._put(view[offset:min(offset + COPY_CHUNK, end)])
                release_pages(source, offset, min(offset + COPY_CHUNK, end))

    def record(self, opcode: int, body: Any = None) -> None:
        """One record: `opcode` and its body (an object of the generated class the spec reads
        for that opcode), written by the generated writers."""
        record = _rdb.Record._new(opcode=opcode, body=body)
        out = WriteIo()
        record._write(out, None, self.root)
        self._write(out.data)
        self.note(record)

    def note(self, record: Any) -> None:
        """Keeps what a record written here, or read and copied (`copy`), says that a later
        record is checked against: a hash template, which keys of types 30 and 32 name by id."""
        _rdb.Rdb.index_records(self.root, record)

    # -- what the server writes ------------------------------------------------------------------

    def aux(self, name: bytes, value: bytes) -> None:
        """An AUX field (rdbSaveAuxField: both as rdbSaveRawString stores them)."""
        self.record(RecordKind.AUX, _rdb.Aux._new(key=rdb_string(name, self.compress),
                                                  value=rdb_string(value, self.compress)))

    def function(self, library: FunctionLibrary) -> None:
        """A function library (rdbSaveFunctions: FUNCTION2 and its code). The 7.0 release
        candidates' form (FUNCTION_PRE_GA: name, engine, description) is not written."""
        if library.name is not None:
            raise UnwritableError("a FUNCTION_PRE_GA library (Redis 7.0 release candidates) is not written")
        code = rdb_string(library.code, self.compress)
        self.record(RecordKind.FUNCTION2, _function.Function2._new(library_code=code))

    def module_aux(self, module: ModuleValue) -> None:
        """Data a module saves beside the keys (redis src/module.c rdbSaveSingleModuleAux): its
        id, when (before or after the keys), its opcodes as `values.module_ops` gives them, EOF."""
        if module.when is None:
            raise UnwritableError("a module AUX record says when its module saved it (`when`: before or after "
                                  "the keys); this module value has none")
        ops = [self._module_op(name, value) for name, value in module.opcodes]
        ops.append(_module.ModuleOp._new(opcode=rdb_len(int(ModuleOpcode.EOF))))
        self.record(RecordKind.MODULE_AUX, _module.ModuleAux._new(module_id=rdb_len(module.module_id),
                                                       when=rdb_len(module.when), ops=ops))

    def _module_op(self, name: str, value: Any) -> Any:
        opcode = MODULE_OPCODES[name]
        op = _module.ModuleOp._new(opcode=rdb_len(int(opcode)))  # a length of the very type `int`
        if opcode in (ModuleOpcode.SINT, ModuleOpcode.UINT):
            op.uint_value = rdb_len(value & MASK64)  # SINT: the 64-bit two's complement
        elif opcode == ModuleOpcode.FLOAT:
            op.float_value = value
        elif opcode == ModuleOpcode.DOUBLE:
            op.double_value = value
        else:
            op.string_value = rdb_string(value, self.compress)
        return op

    def select_db(self, db: int, keys: int | None = None, expires: int | None = None) -> None:
        """A database's header (rdbSaveDb): SELECTDB, then RESIZEDB with the number of keys that
        follow and how many of them expire. Without the counts, no RESIZEDB (a hint the server
        sizes its tables by; without it, as in dumps before RDB 7, it grows them as it loads)."""
        self.db, self.slots = db, set()
        self.record(RecordKind.SELECT_DB, _rdb.SelectDb._new(db_number=rdb_len(db)))
        if keys is not None:
            self.record(RecordKind.RESIZE_DB,
                        _rdb.ResizeDb._new(db_size=rdb_len(keys), expires_size=rdb_len(expires or 0)))

    def slot_info(self, slot: int, keys: int, expires: int) -> None:
        """A cluster slot's key counts before its first key (Redis 7.4+ cluster mode, rdbSaveDb:
        SLOT_INFO; a sizing hint its loader takes in cluster mode and skips otherwise)."""
        self.slots.add(slot)
        self.record(RecordKind.SLOT_INFO, _rdb.SlotInfo._new(slot_id=rdb_len(slot), slot_size=rdb_len(keys),
                                                  expires_slot_size=rdb_len(expires)))

    def slot_info_aux(self, slot: int, counts: Sequence[int]) -> None:
        """The same hint as Valkey 8+ writes it (valkey src/rdb.c rdbSaveDb): an AUX field
        `slot-info` of "slot,keys,expires" (9.x adds the keys with volatile items)."""
        self.slots.add(slot)
        self.aux(b"slot-info", b",".join(b"%d" % n for n in (slot, *counts)))

    def key(self, key: KeyRecord) -> None:
        """A key as the server writes it (rdbSaveKeyValuePair): its expiry, LRU idle time and LFU
        counter when it has them, then its type, name and value, read by the Python parsers
        (`rdbspec.open(..., parsers="python")`) and written again."""
        self._key_prefix(key)
        self.record(key.rdb_type, key._body)

    def copy_key(self, key: KeyRecord, source: DumpBuffer) -> None:
        """A key read from `source` (the buffer its offsets are in) copied as its bytes (`copy`):
        its own records before it (expiry, LRU, LFU, key metadata: `KeyRecord.prefix_size`), then
        its type, name and value, not decoded. Own records that another record parted from it
        are written from its values, as `key` writes them."""
        if key.prefix_size is None:
            self._key_prefix(key)
            self.copy(source, key.offset, key.offset + key.size)
        else:
            self.copy(source, key.offset - key.prefix_size, key.offset + key.size)

    def _key_prefix(self, key: KeyRecord) -> None:
        """What rdbSaveKeyValuePair writes before the key's type: EXPIRETIME_MS, IDLE, FREQ."""
        if key.expire_at_ms is not None:
            self.record(RecordKind.EXPIRE_TIME_MS, _rdb.ExpireTimeMs._new(ms=key.expire_at_ms))
        if key.idle is not None:
            self.record(RecordKind.IDLE, _rdb.Idle._new(seconds=rdb_len(key.idle)))
        if key.freq is not None:
            self.record(RecordKind.FREQ, _rdb.Freq._new(lfu_freq=key.freq))

    def hash_template(self, template_id: int, fields: Iterable[bytes]) -> None:
        """A hash template (RDB 15, Redis 8.10: HASH_TEMPLATE), which `template_hash` keys name by
        `template_id`: its field names once each, sorted as the server keeps them (a shorter
        name first: `server.templates`). The server writes one for each template a key uses,
        before the databases (rdbSaveRio)."""
        self._templates_allowed()
        body = _rdb.HashTemplate._new(template_id=rdb_len(template_id),
                                      fields=template_name_list(template_fields(fields), self.compress))
        self.record(RecordKind.HASH_TEMPLATE, body)

    def _templates_allowed(self) -> None:
        if self.version < TEMPLATES_RDB or self.root.is_valkey:
            raise UnwritableError(f"hash templates are written in RDB {TEMPLATES_RDB} (Redis 8.10) and later, "
                                  f"not in {'VALKEY' if self.root.is_valkey else 'RDB'} {self.version}")

    # -- new keys: the layout the server gives a key made by one command ---------------------------

    def string(self, key: bytes, value: bytes, **meta: int | None) -> None:
        """SET. Every new-key method takes `expire_at_ms` (Unix ms), `idle` (LRU seconds) and
        `freq` (LFU counter), each None when the key has none."""
        self._new_key(key, *self.layouts.string(value), **meta)

    def list(self, key: bytes, items: Iterable[bytes], **meta: int | None) -> None:
        """RPUSH of every item."""
        self._new_key(key, *self.layouts.list(items), **meta)

    def set(self, key: bytes, members: Iterable[bytes], **meta: int | None) -> None:
        """SADD of every member."""
        self._new_key(key, *self.layouts.set(members), **meta)

    def hash(self, key: bytes, pairs: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]],
             **meta: int | None) -> None:
        """HSET of every field and value."""
        self._new_key(key, *self.layouts.hash(pairs), **meta)

    def zset(self, key: bytes, pairs: Mapping[bytes, float] | Iterable[tuple[bytes, float]],
             **meta: int | None) -> None:
        """ZADD of every member and score."""
        self._new_key(key, *self.layouts.zset(pairs), **meta)

    def hash_with_ttls(self, key: bytes, fields: Mapping[bytes, tuple[bytes, int | None]]
                       | Iterable[tuple[bytes, bytes, int | None]], **meta: int | None) -> None:
        """HSET of every field and value, then HPEXPIREAT of those given an expiry (field: (value,
        Unix ms or None), or (field, value, ms or None) rows): Valkey 9's HASH_2
        (`Layouts.hash_with_ttls`), which only a VALKEY dump holds (`valkey=True`); a plain hash
        when no field has an expiry."""
        if not self.root.is_valkey:
            raise UnwritableError(f"a hash with field TTLs is written as Valkey 9's HASH_2, in a VALKEY dump, not in "
                                  f"{self.magic}")
        self._new_key(key, *self.layouts.hash_with_ttls(fields), **meta)

    def path_hash(self, key: bytes,
                  paths: Mapping[bytes, Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]]
                  | Iterable[tuple[bytes, Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]]]],
                  **meta: int | None) -> None:
        """PHMSET of each path's fields (`Layouts.path_hash`): Valkey 9.2's path hash, which only
        a VALKEY dump of RDB 81 or later holds (`valkey=True`)."""
        if not self.root.is_valkey or self.version < PATH_HASH_RDB:
            raise UnwritableError(f"a path hash (Valkey 9.2) is written in a VALKEY dump of RDB {PATH_HASH_RDB} or "
                                  f"later, not in {self.magic}")
        self._new_key(key, *self.layouts.path_hash(paths), **meta)

    def template_hash(self, key: bytes, pairs: Mapping[bytes, bytes] | Iterable[tuple[bytes, bytes]],
                      template_id: int | None = None, array: bool = False, names_listpack: bool = True,
                      **meta: int | None) -> None:
        """A hash of a template (RDB 15, Redis 8.10), its fields those of the pairs (a later value
        of a field replaces the earlier). With `template_id`, naming a template written before
        (`hash_template`) of exactly these fields, as a server saves it (redis src/rdb.c
        rdbSaveObject): its values in a listpack after the id (type 30, `template-listpack`), or
        with `array` the id and the values as strings (type 32, `template-array`). Without, the
        hash carries its field names, as DUMP writes it: in a listpack (`names_listpack`,
        FIELDS_LP) or as a count and strings, then the values in a listpack after a template
        id 0 (type 29) or, with `array`, as strings (type 31)."""
        self._templates_allowed()
        merged = dict(pairs.items() if isinstance(pairs, Mapping) else pairs)
        names = template_fields(merged)
        ordered = [merged[name] for name in names]
        if template_id is not None:
            template = self.root.hash_templates.get(template_id)
            if template is None or template_names(template) != names:
                raise UnwritableError(f"hash template {template_id} was not written before with the fields "
                                      f"{[n.decode(errors='replace') for n in names]}")
            if array:
                value = _rdb.HashTmplArrayRef._new(template_id=rdb_len(template_id),
                                                   values=[rdb_string(v, self.compress) for v in ordered])
                self._new_key(key, type_byte(HASH_TMPL_ARRAY_REF), value, **meta)
            else:
                values = blob(LISTPACK_BLOB, listpack([template_id, *map(stored, ordered)]), self.compress)
                self._new_key(key, type_byte(HASH_TMPL_LP_REF), _rdb.HashTmplLpRef._new(values=values), **meta)
            return
        if names_listpack:
            fields = _hash.TemplateFields._new(format=rdb_len(0), names_listpack=blob(
                LISTPACK_BLOB, listpack([stored(n) for n in names]), self.compress))
        else:
            fields = _hash.TemplateFields._new(format=rdb_len(1), names=template_name_list(names, self.compress))
        if array:
            value = _hash.HashTmplArray._new(fields=fields, values=[rdb_string(v, self.compress) for v in ordered])
            self._new_key(key, type_byte(HASH_TMPL_ARRAY), value, **meta)
        else:
            values = blob(LISTPACK_BLOB, listpack([0, *map(stored, ordered)]), self.compress)
            self._new_key(key, type_byte(HASH_TMPL_LP), _hash.HashTmplLp._new(fields=fields, values=values), **meta)

    def stream(self, key: bytes, stream: EditableStream, **meta: int | None) -> None:
        """A stream as `EditableStream.append` (XADD with the config's node limits) and its
        groups made it, in the stream type of the version (15, 19 from RDB 10, 21 from RDB 11 and
        in a VALKEY dump, 26 for RDB 13, 27 from RDB 14)."""
        code = stream_type(self.version, self.root.is_valkey)
        self._new_key(key, code, stream.to_value(code, self.compress), **meta)

    def array(self, key: bytes, elements: Mapping[int, bytes | int | float] | Iterable[tuple[int, bytes | int | float]],
              insert_idx: int | None = None, **meta: int | None) -> None:
        """A sparse array (Redis 8.8, RDB 14+): its elements that hold a value, by index (at least
        one), and its last insert index (None: none), as `layouts.sparse_array` writes them."""
        if self.version < ARRAY_SINCE or self.root.is_valkey:
            raise UnwritableError(f"RDB {self.version} has no sparse arrays (type 28: Redis 8.8, RDB 14)")
        pairs = list(elements.items() if isinstance(elements, Mapping) else elements)
        if not pairs:
            raise UnwritableError("an empty sparse array is not written: the server refuses one (count 0)")
        self._new_key(key, ValueType.ARRAY, sparse_array(pairs, insert_idx, self.compress), **meta)

    def _new_key(self, key: bytes, rdb_type: int, value: Any, /, expire_at_ms: int | None = None,
                 idle: int | None = None, freq: int | None = None) -> None:
        if self.db is None:
            raise UnwritableError("a key is written after select_db: the server reads keys into a database")
        self.key(new_key_record(self.db, key, rdb_type, value, self.version, self.root.is_valkey, self.compress,
                                expire_at_ms, idle, freq))

    # -- the end ---------------------------------------------------------------------------------

    def finish(self) -> None:
        """EOF and the checksum: the temporary file is whole on disk, not yet renamed (a caller
        writing several files finishes them all before `close()` renames any)."""
        if self._finished or self._closed:
            return
        try:
            self._write(bytes([RecordKind.EOF]))
            if self.version >= 5:
                self._write(struct.pack("<Q", self._crc if self.checksum else 0))
            self._file.finish()
        except BaseException:
            self.abort()
            raise
        self._finished = True

    def close(self) -> None:
        """`finish()`, then the file takes the destination's name."""
        if self._closed:
            return
        self.finish()
        try:
            self._file.commit()
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Leaves no file: the temporary one is removed, the destination untouched."""
        if self._closed:
            return
        self._closed = True
        self._copying = None
        self._file.discard()
