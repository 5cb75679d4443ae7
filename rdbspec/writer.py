"""Writing dumps (issue 15): `Writer` puts records into a new RDB file as the server writes them.

The bytes of every record come from the generated writers (`_write` of the generated Python
classes, `write_<id>` of the types written from their instances: spec/*.ksy with their
`-rdbspec-write` derivations). What is chosen here is only what the server chooses and the
grammar does not say:

* how a string is stored (redis src/rdb.c rdbSaveRawString): as an INT8/16/32 when it is the
  decimal text of such a number of at most 11 bytes (rdbTryIntegerEncoding, rdbEncodeInteger),
  LZF-compressed when compression is on and it is over 20 bytes and compresses by at least 4
  bytes (rdbSaveLzfStringObject), raw otherwise;
* what comes before a key (rdbSaveKeyValuePair): EXPIRETIME_MS, IDLE (LRU seconds), FREQ (LFU
  counter), each when the key has one;
* a database's header (rdbSaveDb): SELECTDB, then RESIZEDB with its key count and the count of
  keys with an expiry; a database without keys is not written;
* the end (rdbSaveRio): EOF, then the CRC-64 of every byte before (0 when the version has none
  before RDB 5, rdbLoadRioWithLoadingCtx).

The file is written to a temporary file beside the destination and renamed over it by
`close()`; a failure (an exception in the `with` block, or `abort()`) leaves no destination
file and removes the temporary one.
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import lzf as _lzf
from rdbspec_generated import WriteIo
from rdbspec_generated import function as _function
from rdbspec_generated import module as _module
from rdbspec_generated import rdb as _rdb
from rdbspec_generated import rdb_string as _rdb_string
from rdbspec_generated._runtime import WriteInputs

from .api import FunctionLibrary, KeyRecord
from .checksum import crc64_update
from .errors import UnwritableError
from .values import ModuleValue

# record opcodes (redis src/rdb.h RDB_OPCODE_*)
AUX, FUNCTION2, SELECT_DB, RESIZE_DB, EXPIRE_TIME_MS, IDLE, FREQ, EOF = 250, 245, 254, 251, 252, 248, 249, 255
MODULE_AUX = 247
# module opcodes (redis src/rdb.h RDB_MODULE_OPCODE_*), by the names rdbspec.values gives them
MODULE_OPCODES = {"sint": 1, "uint": 2, "float": 3, "double": 4, "string": 5}
MASK64 = (1 << 64) - 1
INT_ENCODABLE_BYTES = 11  # rdbTryIntegerEncoding: longer strings are not tried
LZF_MIN_BYTES = 20  # rdbSaveRawString: only strings over 20 bytes are compressed
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
# what an rdb_blob holds (spec rdb_string::blob_kind)
LISTPACK_BLOB, ZIPLIST_BLOB, INTSET_BLOB, STREAM_LISTPACK_BLOB = 1, 2, 3, 5


def canonical_int(data: bytes) -> int | None:
    """The number `data` is the decimal text of, in the one form the server turns back into the
    same text (redis src/util.c string2ll: no sign but '-', no leading zero, no space)."""
    if not data or len(data) > 20 or not data.isascii():
        return None
    digits = data[1:] if data[:1] == b"-" else data
    if not digits.isdigit() or (digits[:1] == b"0" and data != b"0"):
        return None
    number = int(data)
    return number if -(1 << 63) <= number < 1 << 63 else None  # string2ll: a long long


def rdb_string(data: bytes, compress: bool = True) -> Any:
    """An `rdb_string` holding `data` in the form rdbSaveRawString gives it (see the module doc)."""
    s = _rdb_string.RdbString._new()
    number = canonical_int(data) if len(data) <= INT_ENCODABLE_BYTES else None
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
    out = WriteIo()
    payload._write(out, None, None)
    size = len(out.data)
    packed = compress and size > LZF_MIN_BYTES and _lzf.compress(bytes(out.data), size - 4) is not None
    return _rdb_string.RdbBlob._new(kind=kind, lzf=payload if packed else None, plain=None if packed else payload)


def rdb_len(value: int) -> WriteInputs:
    """A length, written by `write_rdb_len` in the smallest form (rdbSaveLen)."""
    return WriteInputs(value=value, is_encoded=False)


class Writer:
    """A new dump at `path`: magic `REDIS%04d` (or `VALKEY%03d` with `valkey`) of `version`, then
    the records in the order given, then EOF and the checksum at `close()`."""

    def __init__(self, path: str | os.PathLike, version: int, valkey: bool = False, compress: bool = True):
        self.path = Path(path)
        self.version = version
        self.compress = compress
        self.root = WriteInputs(is_valkey=valkey, version=version)  # what the spec's `_root` reads
        self._handle = tempfile.NamedTemporaryFile(dir=self.path.parent or ".", prefix=f".{self.path.name}.",
                                                   suffix=".tmp", delete=False)
        self._crc = 0
        self._closed = False
        self.db: int | None = None  # the database SELECTDB opened last
        self.bytes_written = 0
        self._write(("VALKEY%03d" if valkey else "REDIS%04d") % version)

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def _write(self, data: bytes | bytearray | str) -> None:
        data = data.encode("ascii") if isinstance(data, str) else bytes(data)
        self._handle.write(data)
        self._crc = crc64_update(self._crc, data)
        self.bytes_written += len(data)

    def record(self, opcode: int, body: Any = None) -> None:
        """One record: `opcode` and its body (an object of the generated class the spec reads
        for that opcode), written by the generated writers."""
        record = _rdb.Record._new(opcode=opcode, body=body)
        out = WriteIo()
        record._write(out, None, self.root)
        self._write(out.data)

    # -- what the server writes ------------------------------------------------------------------

    def aux(self, name: bytes, value: bytes) -> None:
        """An AUX field (rdbSaveAuxField: both as rdbSaveRawString stores them)."""
        self.record(AUX, _rdb.Aux._new(key=rdb_string(name, self.compress), value=rdb_string(value, self.compress)))

    def function(self, library: FunctionLibrary) -> None:
        """A function library (rdbSaveFunctions: FUNCTION2 and its code). The 7.0 release
        candidates' form (FUNCTION_PRE_GA: name, engine, description) is not written."""
        if library.name is not None:
            raise UnwritableError("a FUNCTION_PRE_GA library (Redis 7.0 release candidates) is not written")
        self.record(FUNCTION2, _function.Function2._new(library_code=rdb_string(library.code, self.compress)))

    def module_aux(self, module: ModuleValue) -> None:
        """Data a module saves beside the keys (redis src/module.c rdbSaveSingleModuleAux): its
        id, when (before or after the keys), its opcodes as `values.module_ops` gives them, EOF."""
        ops = [self._module_op(name, value) for name, value in module.opcodes]
        ops.append(_module.ModuleOp._new(opcode=rdb_len(0)))
        self.record(MODULE_AUX, _module.ModuleAux._new(module_id=rdb_len(module.module_id),
                                                       when=rdb_len(module.when), ops=ops))

    def _module_op(self, name: str, value: Any) -> Any:
        code = MODULE_OPCODES[name]
        op = _module.ModuleOp._new(opcode=rdb_len(code))
        if code in (1, 2):
            op.uint_value = rdb_len(value & MASK64)  # SINT: the 64-bit two's complement
        elif code == 3:
            op.float_value = value
        elif code == 4:
            op.double_value = value
        else:
            op.string_value = rdb_string(value, self.compress)
        return op

    def select_db(self, db: int, keys: int | None = None, expires: int | None = None) -> None:
        """A database's header (rdbSaveDb): SELECTDB, then RESIZEDB with the number of keys that
        follow and how many of them expire. Without the counts, no RESIZEDB (a hint the server
        sizes its tables by; without it, as in dumps before RDB 7, it grows them as it loads)."""
        self.db = db
        self.record(SELECT_DB, _rdb.SelectDb._new(db_number=rdb_len(db)))
        if keys is not None:
            self.record(RESIZE_DB, _rdb.ResizeDb._new(db_size=rdb_len(keys), expires_size=rdb_len(expires or 0)))

    def key(self, key: KeyRecord) -> None:
        """A key as the server writes it (rdbSaveKeyValuePair): its expiry, LRU idle time and LFU
        counter when it has them, then its type, name and value, read by the Python parsers
        (`rdbspec.open(..., parsers="python")`) and written again."""
        if key.expire_at_ms is not None:
            self.record(EXPIRE_TIME_MS, _rdb.ExpireTimeMs._new(ms=key.expire_at_ms))
        if key.idle is not None:
            self.record(IDLE, _rdb.Idle._new(seconds=rdb_len(key.idle)))
        if key.freq is not None:
            self.record(FREQ, _rdb.Freq._new(lfu_freq=key.freq))
        self.record(key.rdb_type, key._body)

    # -- the end ---------------------------------------------------------------------------------

    def close(self) -> None:
        """EOF and the checksum; the file then takes the destination's name."""
        if self._closed:
            return
        try:
            self._write(bytes([EOF]))
            if self.version >= 5:
                self._write(struct.pack("<Q", self._crc))
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            os.replace(self._handle.name, self.path)
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Leaves no file: the temporary one is removed, the destination untouched."""
        if self._closed:
            return
        self._closed = True
        self._handle.close()
        Path(self._handle.name).unlink(missing_ok=True)
