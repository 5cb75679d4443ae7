"""`open()` / `parse()`: a dump as a header, AUX fields and an iterator of key records.

Records come from the generated `rdb` parser one at a time (memory bounded by the largest
record); values are decoded only when `KeyRecord.value` is read.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from rdbspec_generated import Io, ParseError, RdbError, TruncatedError, warning_sink
from rdbspec_generated.enums import RecordKind, StringEncoding

from ..errors import ChecksumError, IntegrityError, InternalError, RdbWarning
from . import backend, dragonfly, location, values
from .checksum import crc64
from .dragonfly import ENVELOPES
from .elements import text
from .source import Progress, Source, bytes_source, open_source, release_pages
from .streams import Stream

if TYPE_CHECKING:  # the modules of live servers load ssl: only the commands that reach one import them
    from ..net.connection import Tls

# the record kinds this module reads by name (the spec's `rdb::record_kind`)
SELECT_DB, RESIZE_DB, AUX = RecordKind.SELECT_DB, RecordKind.RESIZE_DB, RecordKind.AUX
EXPIRE_TIME, EXPIRE_TIME_MS = RecordKind.EXPIRE_TIME, RecordKind.EXPIRE_TIME_MS
FREQ, IDLE = RecordKind.FREQ, RecordKind.IDLE
MODULE_AUX, FUNCTION2, FUNCTION_PRE_GA = RecordKind.MODULE_AUX, RecordKind.FUNCTION2, RecordKind.FUNCTION_PRE_GA
SLOT_INFO, KEY_META, SLOT_IMPORT = RecordKind.SLOT_INFO, RecordKind.KEY_META, RecordKind.SLOT_IMPORT
HASH_TEMPLATE = RecordKind.HASH_TEMPLATE
EOF, KEY_VALUE = RecordKind.EOF, RecordKind.KEY_VALUE
# the records `Dump._expanding` reads further: Dragonfly's envelopes, and EOF after them (each
# record of these opcodes is of the kind of the same number)
EXPANDED_OPCODES = ENVELOPES | {EOF}
# what a server writes before the keys (Valkey 9's SLOT_IMPORT: valkey src/cluster_migrateslots.c
# clusterRDBSaveSlotImports, right before the databases; Redis 8.10's hash templates: redis
# src/rdb.c rdbSaveRio, after the functions)
HEAD_KINDS = frozenset((AUX, FUNCTION2, FUNCTION_PRE_GA, MODULE_AUX, SLOT_IMPORT, HASH_TEMPLATE))
# `Dump.checksum_status` of a dump saved with `rdbchecksum no`: 0 where the CRC-64 goes
CHECKSUM_DISABLED = "disabled (0)"
# the CRC-64 trailer after EOF: its bytes, and the RDB version that first writes it (spec rdb.ksy `checksum`)
CHECKSUM_BYTES, CHECKSUM_SINCE = 8, 5
# ... of a compressed Valkey dump: the loader skips the RDB's CRC-64 (valkey src/rdb.c
# rdbLoadRioWithLoadingCtx: "Logical RDB CRC64 skipped for streaming-compressed input"), the
# frame's checksums having been verified as it was decoded (`source`)
CHECKSUM_OF_FRAME = "not used (compressed: the {} frame's checksums)"
# what the server writes right before a key's type byte, for that key (rdbSaveKeyValuePair: expiry,
# LRU, LFU; Redis 8.6's key metadata, src/keymeta.c rdbSaveKeyMetadata): a loader keeps them until
# the next key (rdbLoadRioWithLoadingCtx)
KEY_PREFIX_KINDS = frozenset((EXPIRE_TIME, EXPIRE_TIME_MS, IDLE, FREQ, KEY_META))

T = TypeVar("T")  # what a guarded read gives



@dataclass
class Header:
    magic: str
    version: int
    dialect: str  # "redis", "valkey" or "dragonfly"


@dataclass
class FunctionLibrary:
    code: bytes
    name: bytes | None = None
    engine: bytes | None = None


# the bytes `KeyRecord.string_pieces` reads at a time by default
STRING_PIECE = 1 << 20


@dataclass(frozen=True, slots=True)
class StoredString:
    """A string value as its record stores it (`KeyRecord.stored_string`)."""

    length: int  # the bytes the server holds: the raw bytes, an integer's decimal text, or the LZF data decompressed
    raw_at: int | None  # where the raw bytes start in the buffer; None for an integer or LZF-compressed string
    lzf: bool  # LZF-compressed: its bytes are known by decompressing them (which checks them)


@dataclass(slots=True)
class KeyRecord:
    """One key: where it is in the file and what is known before its value is decoded."""

    db: int
    key: bytes
    rdb_type: int
    value_kind: int
    expire_at_ms: int | None
    idle: int | None
    freq: int | None
    offset: int
    size: int
    _body: Any = field(repr=False, default=None)
    _decoded: values.Decoded | None = field(repr=False, default=None)
    _warn: Callable[[RdbWarning], None] | None = field(repr=False, default=None)
    # the bytes of its own records before it (KEY_PREFIX_KINDS), which end at `offset`: the key
    # takes [offset - prefix_size, offset + size); None when another record parts them from it
    prefix_size: int | None = 0

    @property
    def type_name(self) -> str:
        return values.TYPE_NAMES.get(self.value_kind, "unknown")

    @property
    def value_offset(self) -> int:
        """Where the value's bytes start, after the type byte and the name: the value is
        [value_offset, offset + size) of the buffer the record was read from."""
        start: int = self._body._lazy_value
        return start

    @property
    def encoding(self) -> str:
        return values.ENCODINGS.get(self.value_kind, "unknown")

    @property
    def _sink(self) -> Callable[[str, int | None, str], None]:
        """Where the checks that the server does not make on load report, for this key. It holds
        the key's name and offset, not the record: a value that keeps its sink (a `Stream`) and
        the record that keeps the value would otherwise make a reference cycle, which only the
        cyclic garbage collector frees, with everything the value holds."""
        return partial(_tell, self._warn, self.offset, self.key)

    def _decode(self) -> values.Decoded:
        if self._decoded is None:
            self._decoded = self._decoding(self._decoded_value)
        return self._decoded

    def _decoded_value(self, body_value: Any) -> values.Decoded:
        decoded = values.decode(self.value_kind, body_value, self.rdb_type)
        if isinstance(decoded.value, Stream):
            decoded.value.origin = (self.offset, self.key)
        elif values.skipped_when_empty(self.value_kind, decoded.value):
            self._sink(f"empty {self.type_name} key: the server skips it on load", None, values.EMPTY_KEY_RULE)
        return decoded

    def _decoding(self, decode: Callable[..., T], *args: Any) -> T:
        """`decode(*args, generated value)`, its warnings told to this key's sink, its errors
        named with this key (an unexpected exception as an internal error)."""
        token = warning_sink.set(self._sink)  # `collecting(self._sink)` without its three calls
        try:
            return decode(*args, self._body.value)
        except Exception as err:  # noqa: BLE001 - told apart by `_failed`
            self._failed(err)
        finally:
            warning_sink.reset(token)

    def _failed(self, err: Exception) -> NoReturn:
        """What a failed read of this key's value ends in: its errors named with this key, an
        unexpected exception as an internal error."""
        if isinstance(err, IntegrityError):
            raise IntegrityError(err.reason, self.offset, self.key) from None
        if isinstance(err, RdbError):
            err.key = self.key
            raise err
        raise InternalError(err, self.offset, self.key) from err

    def _chunks(self, parts: Iterator[Any]) -> Iterator[Any]:
        """The chunks of a value read as they are iterated, with `_decoding`'s warnings and errors."""
        while True:
            token = warning_sink.set(self._sink)
            try:
                part = next(parts, None)
            except Exception as err:  # noqa: BLE001 - told apart by `_failed`
                self._failed(err)
            finally:
                warning_sink.reset(token)
            if part is None:
                return
            yield part

    def packed(self, after_value: bool = False, part: values.Part = values.WHOLE) -> values.Packed | None:
        """The value without an object per element (`values.Packed`) when its encoding allows
        (listpacks, ziplists, intsets: their entries; hashtable-encoded lists, sets, hashes and
        sorted sets: chunks read as they are iterated) and it holds an element; None otherwise:
        read `value`. None too once `value` was read, unless `after_value` (the value is read
        again). Of a value workers read in parts (`values.CUTS`), `part` (start, count) only.
        Checks and warnings as for `value`."""
        if (self._decoded is not None and not after_value) or self.value_kind not in values.PACKERS:
            return None
        got = self._decoding(values.packed if part == values.WHOLE else partial(values.packed, part=part),
                             self.value_kind)
        if got is not None and isinstance(got.parts, Iterator):
            got.parts = self._chunks(got.parts)
        return got

    @property
    def value(self) -> Any:
        return self._decode().value

    def containers(self) -> list[tuple[bool, int]] | None:
        """The containers the value is stored in (`values.CONTAINERS`): each quicklist node, or
        the one listpack, ziplist or intset, as (PLAIN element, decompressed bytes); None for
        the other encodings."""
        return self._decoding(values.containers, self.value_kind)

    def elements(self) -> Iterator[list[Any]]:
        """The value's elements a chunk at a time, each a list of what `value` holds (bytes,
        (field, value) or (member, score) pairs): a list, set, hash or sorted set of any size is
        walked in bounded memory (`packed`); another value, when it is a list, is one chunk."""
        packed = self.packed(after_value=True)
        if packed is None:
            value = self.value
            if isinstance(value, list) and value:
                yield value
            return
        for part in packed.parts:
            yield values.Packed(packed.shape, [part], packed.scores).elements()

    def field_ttl_rows(self) -> Iterator[list[values.HashRow]] | None:
        """A hash with field TTLs (`values.TTL_ROWS`) a chunk at a time, each field as (name, value,
        TTL in unix ms or None), read as the chunks are iterated: a hashtable-encoded one of any
        size in bounded memory. None for any other value. Checks and warnings as for `value`."""
        rows = values.TTL_ROWS.get(self.value_kind)
        if rows is None:
            return None
        return self._chunks(self._decoding(rows))

    def plain_string(self) -> bytes | None:
        """A string key's value, read without the decoders' bookkeeping (a string has no check
        the server skips, so no warning); None for any other type, or once `value` was read.
        Errors as for `value`."""
        if self.value_kind != values.STRING or self._decoded is not None:
            return None
        try:
            return text(self._body.value)
        except Exception as err:  # noqa: BLE001 - told apart by `_failed`
            self._failed(err)

    def stored_string(self) -> StoredString | None:
        """How a string key's value is stored, read from the lengths before its bytes, which are
        not read (redis src/rdb.c rdbGenericLoadStringObject): a string of any size is measured
        without being held. None for any other type."""
        if self.value_kind != values.STRING:
            return None
        body = self._body
        if body._lazy_value is not None:  # read from a buffer (else a key made to be written)
            read_len = backend.parser("rdb_string").RdbLen._read
            io = body._io
            head, at = read_len(io, body._lazy_value, None, None)  # checked as the record was read
            if not head.is_encoded:
                return StoredString(head.value, at, False)
            if head.value == StringEncoding.LZF:
                _, at = read_len(io, at, None, None)  # the compressed length, then the length it decompresses to
                return StoredString(read_len(io, at, None, None)[0].value, None, True)
        return StoredString(len(text(body.value)), None, False)  # an integer's decimal text, or bytes at hand

    def string_pieces(self, size: int = STRING_PIECE, first: int | None = None) -> Iterator[bytes]:
        """A string key's value in pieces of `size` bytes (the first of `first`, when given; the
        last what remains; none for an empty string), read as they are iterated: a string stored
        as its bytes is never held whole, nor are the pages of a mapped file it was read from once
        a piece is made (`source.release_pages`); an integer or an LZF-compressed string is decoded
        first. Errors as for `value`."""
        stored = self.stored_string()
        if stored is None:
            raise ValueError(f"a {self.type_name} key has no string value")
        if stored.raw_at is None:
            buffer = self.value
            at = 0
        else:
            buffer, at = self._body._io.buf, stored.raw_at
        end = at + stored.length
        step = size if first is None else first
        while at < end:
            piece = buffer[at:min(at + step, end)]
            release_pages(buffer, at, at + len(piece))
            yield piece
            at, step = at + step, size

    def count_elements(self) -> int | None:
        """The elements of a list, set, hash or sorted set (from its declared count or its
        containers' entries, without an object per element where `packed` can), the length of
        a stream, the elements of a sparse array that hold a value; None for a string (not
        read), a module value or a sketch."""
        if self.value_kind == values.STRING:
            return None
        if self.value_kind in values.PACKERS:
            packed = self.packed(after_value=True)
            return len(packed) if packed is not None else 0
        value = self.value
        if isinstance(value, Stream):
            return value.length
        return len(value) if isinstance(value, (list, values.SparseArray)) else None

    @property
    def skipped_by_server(self) -> bool:
        """An empty list, set, sorted set or hash: the server skips it on load (with a warning
        here); `rdbspec dump` leaves it out. Decodes the value, unless `packed` tells (its
        declared count or its containers' entries)."""
        if self.value_kind == values.STRING:
            return False  # not a kind the server skips when empty: not read
        if self._decoded is None and self.value_kind in values.PACKERS:
            if self.packed() is not None:
                return False
        return values.skipped_when_empty(self.value_kind, self.value)

    @property
    def field_expire_at_ms(self) -> list[tuple[bytes, int]] | None:
        return self._decode().field_expire_at_ms


def _tell(warn: Callable[[RdbWarning], None] | None, record_offset: int, key: bytes, reason: str,
          offset: int | None, where: str) -> None:
    """A warning about key `key` (the record at `record_offset`), told to `warn`."""
    if warn is not None:
        warn(RdbWarning(reason, record_offset if offset is None else offset, key, where))


class Dump:
    """An open dump. Iterate `keys()` once, in file order; AUX, functions, module AUX and
    slot info fill in as the records are read (the leading AUX fields are read at open)."""

    def __init__(self, source: Source, verify_checksum: bool = True, parsers: str | None = None,
                 crc: tuple[int, int] | None = None):
        """`crc`: (the bytes before the trailer, their CRC-64) computed by whoever read them all
        (a split's planner), for a source that does not hold them all (a store's object read in
        ranges): the trailer is verified against it."""
        self.source = source
        self.verify_checksum = verify_checksum
        self._crc = crc
        self.aux: list[tuple[bytes, bytes]] = []
        self.functions: list[FunctionLibrary] = []
        self.module_aux: list[values.ModuleValue] = []
        self.slot_info: list[tuple[int, int, int]] = []
        self.slot_imports: list[tuple[bytes, list[tuple[int, int]]]] = []
        # the ids of the HASH_TEMPLATE records read (Redis 8.10); the templates themselves are the
        # generated root's index (`hash_templates`), which the keys of types 30 and 32 read
        self.hash_templates: list[int] = []
        self.checksum_status: str = "not read"
        self.end_offset: int | None = None
        self.last_key: bytes | None = None  # the key most recently read
        # the record being read (its file offset, and its key once known), for error messages
        self.current: tuple[int | None, bytes | None] = (0, None)
        self.warnings: list[RdbWarning] = []  # checks the server does not make on load, failed
        self._warned: set[RdbWarning] = set()
        # the generated parsers that read this dump: "python" or "native" (`parsers`, else the one in use)
        self.backend = parsers or backend.name()
        self._rdb = self._read_header(backend.parser("rdb", self.backend).Rdb)
        self._records = self._rdb.iter_records()
        # Dragonfly's envelopes (compressed blobs, tagged chunks) give records read before the next
        self._expander = dragonfly.RecordExpander(self._rdb, self.backend)
        self._expanded: deque[tuple[Any, int, int]] = deque()
        self.extra_info: dict[str, Any] = {}  # producer-specific facts for `rdbspec info` (DFS shards...)
        self._pending: list[tuple[Any, int, int]] = []
        self._offset = self._rdb._stream_pos
        self._read_leading_aux()
        self._leading_aux = len(self.aux)  # AUX records already noted when keys() meets them
        self._db = 0
        self.header = Header(self._rdb.magic, self._rdb.version, self._dialect())

    # -- opening ---------------------------------------------------------------------------

    def close(self) -> None:
        self.source.close()

    def __enter__(self) -> Dump:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_header(self, rdb: Any) -> Any:
        """The generated root read at the file's start (its magic), again once more bytes have
        come from a source that grows (`Source.more`) if they run out."""
        source = self.source
        while True:
            end = source.size
            try:
                return self._guard(lambda: rdb._read(Io(source.buffer, 0, end), 0, None, None)[0], 0)  # noqa: B023
            except TruncatedError:
                if not source.more(0, end):
                    raise

    def _guard(self, read: Callable[[], T], offset: int, record: bool = False) -> T:
        """Runs a read of the generated parser. Bad input raises an RdbError, which gets the key
        of the record read at `offset` (with `record`); any other exception is a bug of ours."""
        try:
            return read()
        except Exception as err:  # noqa: BLE001 - told apart by `_failed`
            self._failed(err, offset, record)

    def _failed(self, err: Exception, offset: int, record: bool) -> NoReturn:
        """Raises what a failed read of `_guard` ends in: an OSError as it is, an RdbError with
        its key, anything else as an internal error (a bug of ours, named with where it was)."""
        if isinstance(err, OSError):
            raise err
        if isinstance(err, RdbError):
            if record and err.key is None:
                err.key = self._key_at(offset)
            raise err
        raise InternalError(err, offset, self._key_at(offset) if record else None) from err

    def _key_at(self, offset: int) -> bytes | None:
        """The key of the key/value record at file offset `offset`, to name it in an error met
        further in that record; None if no key/value record starts there (value types are the
        opcodes below 200: spec rdb::record) or its key does not read either."""
        buf, size = self.source.buffer, self.source.size
        if offset >= size or buf[offset] >= 200:
            return None
        try:
            string = backend.parser("rdb_string", self.backend).RdbString
            key, _ = string._read(Io(buf, 0, size), offset + 1, None, None)
        except RdbError:
            return None
        return text(key)


    def seek(self, offset: int, db: int) -> None:
        """Goes on reading at `offset`: a record boundary where database `db` is selected and no
        key metadata (expiry, LRU, LFU) is pending, as `rdbspec.read.splits.plan` chooses them.
        The records before the databases are read first (not told again): the hash templates
        among them are what the keys after `offset` may name (the plan cuts no split after a
        template that comes later)."""
        self.head()
        self._pending.clear()
        self._leading_aux = 0
        self._db = db
        self._rdb._stream_pos = self._offset = offset
        self._records = self._rdb.iter_records()
        self._expanded.clear()

    def _read_record(self) -> tuple[Any, int, int] | None:
        """The next record of the file as (record, start, end), or of the envelope read last
        (Dragonfly's: `dragonfly.RecordExpander`); None after the last."""
        expanded = self._expanded
        while not expanded:
            start = self._offset
            record = self._next_record(start)
            end = self._offset
            if record is None:
                return None
            if not self._expanding(record, start, end):
                return record, start, end
        return expanded.popleft()

    def _next_record(self, start: int) -> Any:
        """The generated parser's next record, read at `start` (None after the last); moves
        `_offset` after it. Its errors are named with the key of the record (`_failed`)."""
        self.current = (start, None)
        while True:
            try:
                record = next(self._records, None)
                break
            except Exception as err:  # noqa: BLE001 - told apart by `_resumed`
                self._resumed(err, start)
        self._offset = self._rdb._stream_pos
        return record

    def _resumed(self, err: Exception, start: int) -> Iterator[Any]:
        """The records from `start` on, read again once more bytes have come, after the record
        there ran past the bytes at hand (a live server's RDB, read as it arrives: `Source.more`);
        any other failed read raises what it ends in (`_failed`)."""
        if not (isinstance(err, TruncatedError) and self.source.more(start, self._rdb._io.end)):
            self._failed(err, start, record=True)
        self._rdb._io.end = self.source.size
        self._rdb._stream_pos = start
        records: Iterator[Any] = self._rdb.iter_records()
        self._records = records
        return records

    def _expanding(self, record: Any, start: int, end: int) -> bool:
        """Whether `record` gives `_expanded` the records to read in its place: those of a
        Dragonfly envelope, or, before EOF itself, what the expander still holds."""
        opcode = record.opcode
        if opcode in ENVELOPES:
            self._expanded.extend(self._guard(lambda: self._expander.expand(record, start, end), start, True))
            return True
        if opcode == EOF:  # the caller reads the checksum from the generated iterator itself
            self._expanded.extend(self._guard(lambda: self._expander.finish(start), start, True))
            self._expanded.append((record, start, end))
            return True
        return False

    def head(self) -> list[Any]:
        """The records before the first database (AUX fields, function libraries, module data
        saved before the keys, Valkey's slot imports), as the generated parsers read them;
        `keys()` still meets them."""
        while not self._pending or self._pending[-1][0].kind in HEAD_KINDS:
            item = self._read_record()
            if item is None:
                break
            self._pending.append(item)
        return [record for record, _, _ in self._pending if record.kind in HEAD_KINDS]

    def head_extent(self) -> int:
        """The end of what `head()` reads: the records before the databases and the one after
        them, which tells where they end (what a reader of a split reads before it: `seek`)."""
        self.head()
        return self._pending[-1][2] if self._pending else self._offset

    def head_spans(self) -> list[tuple[Any, int, int]]:
        """The records of `head()`, each with where it lies in the file, [start, end) (asked
        before `keys()`)."""
        self.head()
        return [item for item in self._pending if item[0].kind in HEAD_KINDS]

    def _read_leading_aux(self) -> None:
        while True:
            item = self._read_record()
            if item is None:
                return
            self._pending.append(item)
            if item[0].opcode != AUX:
                return
            self._note(item[0])

    def _dialect(self) -> str:
        if self._rdb.is_valkey:
            return "valkey"
        keys = {k for k, _ in self.aux}
        if b"df-ver" in keys:
            return "dragonfly"
        if b"valkey-ver" in keys:
            return "valkey"
        return "redis"

    # -- records ---------------------------------------------------------------------------

    def warn(self, warning: RdbWarning) -> None:
        """Records a warning once (a stream walked twice meets its warnings twice)."""
        if warning not in self._warned:
            self._warned.add(warning)
            self.warnings.append(warning)

    def _note(self, record: Any) -> None:
        """Keeps what a non-key record says about the dump."""
        body, kind = record.body, record.kind
        if kind == AUX:
            self.aux.append((text(body.key), text(body.value)))
        elif kind == FUNCTION2:
            self.functions.append(FunctionLibrary(text(body.library_code)))
        elif kind == FUNCTION_PRE_GA:
            self.functions.append(FunctionLibrary(text(body.code), text(body.name),
                                                  text(body.engine)))
        elif kind == MODULE_AUX:
            name, version = values.module_name(body.module_id.value)
            module = values.ModuleValue(name, version, body.module_id.value, values.module_ops(body.ops),
                                        body.when.value)
            self.module_aux.append(module)
        elif kind == SLOT_INFO:
            self.slot_info.append((body.slot_id.value, body.slot_size.value, body.expires_slot_size.value))
        elif kind == SLOT_IMPORT:
            self.slot_imports.append((text(body.job_name),
                                      [(r.start_slot.value, r.end_slot.value) for r in body.ranges]))
        elif kind == HASH_TEMPLATE:
            self.hash_templates.append(body.template_id.value)

    def keys(self, stop: int | None = None, kinds: Container[int] | None = None) -> Iterator[KeyRecord]:
        """Every key in file order. Values are decoded when read, not before. With `stop`, ends
        before the first record at or after that offset (the end of a split), without reading
        the checksum. With `kinds`, only the keys whose `value_kind` is in it: the others are read
        (and named by errors met after them) but give no `KeyRecord`."""
        db = self._db
        expire_at_ms = idle = freq = None
        aux_done = self._leading_aux
        # looked up once: this loop runs once per record
        pending, expanded, warn = self._pending, self._expanded, self.warn
        records, rdb = self._records, self._rdb
        prefix_kinds = KEY_PREFIX_KINDS
        prefix_start: int | None = pending[0][1] if pending else self._offset  # where the next key's records start
        # a source that grows is told of the keys passed: the one before the key yielded last
        passed = self.source.passed if self.source.grows else None
        held = 0  # where the key yielded last starts
        while True:
            fresh = False  # read here, not expanded yet
            if pending:
                record, start, end = pending.pop(0)
            elif stop is not None and self._offset >= stop:
                return
            elif expanded:
                record, start, end = expanded.popleft()
            else:  # `_read_record` inline, its calls made only for an error or an envelope
                fresh = True
                start = self._offset
                try:
                    record = next(records, None)
                except Exception as err:  # noqa: BLE001 - told apart by `_resumed`
                    records = self._resumed(err, start)
                    continue
                end = self._offset = rdb._stream_pos
                if record is None:
                    break
            kind = record.kind
            if kind == KEY_VALUE:
                body = record.body
                name = body.key
                key = name.raw
                if key is None:
                    key = text(name)
                self.last_key = key
                self.current = (start, key)
                value_kind = body.value_kind
                if kinds is None or value_kind in kinds:
                    if passed is not None:
                        passed(held)
                        held = start
                    yield KeyRecord(db, key, record.opcode, value_kind, expire_at_ms, idle, freq, start, end - start,
                                    body, None, warn, None if prefix_start is None else start - prefix_start)
                expire_at_ms = idle = freq = None
                prefix_start = end  # the next key's own records start after this one
                continue
            if kind == EXPIRE_TIME_MS:
                expire_at_ms = record.body.ms
                continue  # one of the next key's own records
            if fresh and kind in EXPANDED_OPCODES and self._expanding(record, start, end):
                continue
            self.current = (start, None)
            if kind == SELECT_DB:
                db = record.body.db_number.value
            elif kind == EXPIRE_TIME:
                expire_at_ms = record.body.seconds * 1000
            elif kind == IDLE:
                idle = record.body.seconds.value
            elif kind == FREQ:
                freq = record.body.lfu_freq
            elif kind == EOF:
                self.end_offset = end
                if self.source.grows:
                    self._whole_from(start)
                break
            elif kind == AUX and aux_done:
                aux_done -= 1  # read at open already
            else:
                self._note(record)
            if kind not in prefix_kinds:  # the next key's own records start after this one, if nothing is pending
                prefix_start = end if prefix_start == start else None
        self._finish()

    def _whole_from(self, eof: int) -> None:
        """Once all of a growing source has come: the CRC-64 it summed, and the records read
        again from EOF (at `eof`) over all its bytes, so that the trailer after EOF is read."""
        self._crc = self.source.whole()
        self._rdb._io.end = self.source.size
        self._rdb._stream_pos = eof
        self._records = self._rdb.iter_records()
        self._guard(lambda: next(self._records), eof)

    def _finish(self) -> None:
        """Reads the checksum trailer after EOF and verifies it; for a compressed dump, checks
        that nothing was decoded after it instead."""
        self._guard(lambda: next(self._records, None), self._offset)
        stored = self._rdb.checksum
        if self.source.compressed is not None:
            self._check_decoded_end()
            self.checksum_status = CHECKSUM_OF_FRAME.format(self.source.compressed)
        elif stored is None:
            self.checksum_status = "absent (RDB < 5)"
        elif stored == 0:
            self.checksum_status = CHECKSUM_DISABLED
        elif not self.verify_checksum or (self._crc is not None and self._crc[0] != self.end_offset):
            self.checksum_status = "not verified"  # (or bytes after the trailer: not what the planner summed)
        else:
            assert self.end_offset is not None  # set at EOF, which the trailer follows
            computed = self._crc[1] if self._crc is not None else crc64(self.source.buffer, 0, self.end_offset,
                                                                       self.source.release)
            if computed != stored:
                self.checksum_status = "mismatch"
                raise ChecksumError(stored, computed, self.end_offset)
            self.checksum_status = "ok"

    def _check_decoded_end(self) -> None:
        """A compressed dump's frame must end with the RDB file: Valkey refuses decoded bytes after
        its trailer (valkey src/compression_stream.c streamReaderFinish, "Corrupt compressed RDB
        stream"), where a plain file's trailing bytes are never read."""
        end, size = self._rdb._stream_pos, len(self.source.buffer)
        if end < size:
            raise ParseError(f"{size - end} more bytes decoded from the {self.source.compressed} frame after the "
                             "RDB file's end (the server refuses them)", end, "rdb:rdb.checksum")

    def trailer_verified(self) -> bool:
        """True when the file ends with EOF and a checksum the server accepts, found without
        reading the records (redis src/rdb.c rdbLoadRioWithLoadingCtx: after RDB_OPCODE_EOF,
        the CRC-64 of every byte before it, 0 meaning "not computed"); False means: read on to
        the end to know. A compressed dump's frame checksums were verified as it was decoded."""
        if self.source.compressed is not None:
            return True
        if self.source.grows:  # its end has not come
            return False
        buffer = self.source.buffer
        end = len(buffer) - CHECKSUM_BYTES
        if self.header.version < CHECKSUM_SINCE or end < 1 or buffer[end - 1] != EOF:
            return False
        stored = int.from_bytes(buffer[end:], "little")
        return stored == 0 or crc64(buffer, 0, end, self.source.release) == stored

    def read_all(self) -> list[KeyRecord]:
        return list(self.keys())


class DfsDump(Dump):
    """A Dragonfly DFS snapshot set (the summary, any shard file, or their directory; see
    `rdbspec.read.dragonfly`) as one dump: the summary's header and AUX, then every shard's keys in
    shard order. `shards` lists per shard its file, `shard-id` and key count (filled as the keys
    are read); `extra_info` carries them for `rdbspec info`."""

    def __init__(self, path: str | os.PathLike[str], verify_checksum: bool = True, parsers: str | None = None):
        summary = dragonfly.find_summary(path)
        super().__init__(open_source(summary), verify_checksum, parsers)
        self.summary_path = summary
        self.shard_paths = dragonfly.shard_files(summary, dragonfly.shard_count(summary, self.aux))
        self.shards: list[dict[str, Any]] = []
        self.functions.extend(FunctionLibrary(v, engine=b"lua") for k, v in self.aux if k == b"lua")
        self.extra_info = {"shard_count": len(self.shard_paths), "shards": self.shards}
        self._shard_dumps: list[Dump] = []

    def close(self) -> None:
        for shard in self._shard_dumps:
            shard.close()
        super().close()

    def trailer_verified(self) -> bool:
        return False  # one checksum per file of the set: each is verified as its keys are read

    def keys(self, stop: int | None = None, kinds: Container[int] | None = None) -> Iterator[KeyRecord]:
        """Every shard's keys, in shard order (`kinds`: as `Dump.keys`). A set is read whole: a
        split (`stop`) is of one file, opened alone (`open(..., whole_set=False)`)."""
        if stop is not None:
            raise ValueError("a DFS snapshot set is read whole: open one file of it alone to read a split")
        yield from super().keys(kinds=kinds)  # the summary: AUX only
        statuses = {self.checksum_status}
        snapshot_id = dragonfly.aux_value(self.aux, b"snapshot-id")
        for number, shard_path in enumerate(self.shard_paths):
            try:
                # kept open until the set is closed: values are decoded lazily from the map
                shard = Dump(open_source(shard_path), self.verify_checksum, self.backend)
                shard.warnings, shard._warned = self.warnings, self._warned  # one list for the set
                self._shard_dumps.append(shard)
                sid = dragonfly.aux_value(shard.aux, b"snapshot-id")
                if snapshot_id is not None and sid is not None and sid != snapshot_id:
                    raise RdbError(f"snapshot-id {sid.decode(errors='replace')} differs from the summary's "
                                   f"{snapshot_id.decode(errors='replace')}")
                shard_id = dragonfly.aux_value(shard.aux, b"shard-id")
                row: dict[str, Any] = {"file": shard_path.name, "keys": 0,
                                       "shard_id": int(shard_id) if shard_id and shard_id.isdigit() else number}
                self.shards.append(row)
                for record in shard.keys(kinds=kinds):
                    row["keys"] += 1
                    self.last_key = record.key
                    yield record
                statuses.add(shard.checksum_status)
            except RdbError as err:
                err.args = (f"{shard_path}: {err.args[0] if err.args else err}",) + tuple(err.args[1:])
                raise
            except InternalError as err:
                err.file = str(shard_path)
                raise
        self.checksum_status = statuses.pop() if len(statuses) == 1 else ", ".join(sorted(statuses))


def snapshot_files(path: str | os.PathLike[str]) -> list[location.AnyPath]:
    """The files of the DFS set that `path` names: its summary, then its shard files in order
    (checked against the summary's shard-count)."""
    summary = dragonfly.find_summary(path)
    with Dump(open_source(summary), verify_checksum=False) as head:  # the leading AUX is read at open
        return [summary, *dragonfly.shard_files(summary, dragonfly.shard_count(summary, head.aux))]


def open(path: str | os.PathLike[str], verify_checksum: bool = True, whole_set: bool = True,  # noqa: A001
         parsers: str | None = None, save: str | os.PathLike[str] | None = None,
         progress: Progress | None = None, tls: Tls | None = None, once: bool = False) -> Dump:
    """Opens a dump file (mapped, not read whole), stdin/a pipe with `-`, or a live server's
    RDB (`redis://…`, `rediss://…` with `tls`' options; taken as a replica takes it; `save` keeps a
    copy of it, `progress` hears of its bytes as they come; parsed as it arrives with `once`, when
    each key's value is done with before the key after the next is asked: `source.open_source`); a Dragonfly DFS
    set (`<name>-summary.dfs`, one of its `<name>-NNNN.dfs` shard files, or their directory)
    opens as one dump of every shard, unless `whole_set` is false (one DFS file alone).
    `parsers` ("python", "native") picks the generated parsers (by default the backend in use):
    writing needs the Python ones, whose objects have writers."""
    if whole_set and dragonfly.is_dfs(path):
        return DfsDump(path, verify_checksum, parsers)
    if once and location.is_server(os.fspath(path)):
        from .arriving import open_arriving  # loaded by the commands that read a server only (ssl)

        return Dump(open_arriving(os.fspath(path), save, progress, tls), verify_checksum, parsers)
    return Dump(open_source(path, save, progress, tls), verify_checksum, parsers)


def parse(data: bytes, verify_checksum: bool = True, parsers: str | None = None) -> Dump:
    """A dump given as bytes (a compressed Valkey dump is unwrapped, as by `open`)."""
    return Dump(bytes_source(data), verify_checksum, parsers)
