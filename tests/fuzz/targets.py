"""What the coverage-guided fuzzing runs (tests/fuzz/run.py): two targets, each taking one input as
the bytes of a dump file, and the seeds they start from.

* `read`: `rdbspec.open()` of the input, then everything a user can ask of it (`read_all`): the
  header, AUX fields, functions, module data, and every key's value, containers, elements, field
  TTLs, every stream entry with its fields, every group with its PEL and consumers.
* `write`: the input read by the Python parsers (whose objects the generated writers write) and
  written again record by record (`rdbspec.write.writer.Writer`: the head records, then each
  key by the generated writers, never copied), then the output read by the backend in use:
  both reads must agree key for key (`read_all`), or the writer must refuse the input
  (`WriteError`, `UnwritableError`).

What the library may end either in is an `RdbError` (the input is not a dump the server loads);
any other exception escapes the target, and the fuzzer keeps the input as a crash.
"""

from __future__ import annotations

import math
import struct
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rdbspec_generated.enums import AuxWhen, BlobKind, RecordKind, ValueType

import rdbspec
from rdbspec import RdbError, UnwritableError, WriteError
from rdbspec.read.dumpfile import Dump, KeyRecord
from rdbspec.read.streams import Stream

TESTS = Path(__file__).resolve().parents[1]
MAX_LEN = 4096  # the largest input tried (libFuzzer's -max_len): seeds above it are left out


class RoundTripError(AssertionError):
    """The written dump does not read back as the input did: a writer's bug."""


# -- the walk ------------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """`value` as plain Python data that compares by content: tuples, bytes, numbers (a float as
    its text, so that NaN equals NaN), whatever columns or objects the backend built it of."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Stream):
        return stream(value)
    if isinstance(value, dict):
        return tuple(sorted((plain(k), plain(v)) for k, v in value.items()))
    if hasattr(value, "__dataclass_fields__"):
        return (type(value).__name__, *(plain(getattr(value, name)) for name in value.__dataclass_fields__))
    return tuple(plain(item) for item in value)


def stream(value: Stream) -> tuple[Any, ...]:
    """Every entry (deleted ones too) with its fields, every group with its PEL, consumers and
    NACK zone, the IDMP state; the node-by-node checks and the length check run on the way."""
    entries = tuple((e.id, plain(e.fields), e.deleted) for e in value.entries(include_deleted=True))
    groups = tuple(
        (g.name, g.last_delivered_id, g.entries_read,
         tuple((p.id, p.consumer, p.delivery_time_ms, p.delivery_count) for p in g.pending),
         tuple((c.name, c.seen_time_ms, c.active_time_ms, tuple(c.pending)) for c in g.consumers),
         None if g.nacked is None else tuple(g.nacked))
        for g in value.groups)
    return ("stream", value.type_code, value.length, value.last_id, value.first_id, value.max_deleted_entry_id,
            value.entries_added, value.first_live_id(), entries, groups, plain(value.idmp))


def key_record(record: KeyRecord) -> tuple[Any, ...]:
    """One key as everything the record API gives of it, values through each path that reads them."""
    string = record.plain_string()
    containers = record.containers()
    count = record.count_elements()
    elements = [plain(chunk) for chunk in record.elements()]
    rows = record.field_ttl_rows()
    ttl_rows = None if rows is None else [plain(chunk) for chunk in rows]
    value = plain(record.value)
    if string is not None and string != value:
        raise AssertionError(f"plain_string {string!r} differs from value {value!r}")
    return (record.db, record.key, record.rdb_type, record.type_name, record.encoding, record.expire_at_ms,
            record.idle, record.freq, value, plain(record.field_expire_at_ms), count, containers is not None,
            elements, ttl_rows, record.skipped_by_server)


def read_all(dump: Dump) -> list[tuple[Any, ...]]:
    """Reads all of `dump`; its keys as `key_record` gives them."""
    keys = [key_record(record) for record in dump.keys()]
    _ = (dump.header, dump.aux, dump.functions, dump.module_aux, dump.slot_info, dump.checksum_status,
         [str(w) for w in dump.warnings])
    return keys


# -- the targets ---------------------------------------------------------------------------------


class Scratch:
    """A file the inputs are written to (`open()` maps a file), in a directory of its own."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="rdbspec-fuzz-"))
        self.path = self.directory / "input.rdb"

    def holding(self, data: bytes) -> Path:
        self.path.write_bytes(data)
        return self.path


def read_target(scratch: Scratch) -> Callable[[bytes], None]:
    def read(data: bytes) -> None:
        try:
            with rdbspec.open(scratch.holding(data)) as dump:
                read_all(dump)
        except RdbError:
            pass
    return read


def write_target(scratch: Scratch) -> Callable[[bytes], None]:
    out = scratch.directory / "written.rdb"

    def write(data: bytes) -> None:
        try:
            with rdbspec.parse(data, parsers="python") as dump:
                before = read_all(dump)
        except RdbError:
            return
        try:
            with rdbspec.parse(data, parsers="python") as dump:
                rewritten(dump, out)
        except (WriteError, UnwritableError):
            return
        except RdbError:
            # a check the reader tells as a warning (the server loads the value) raises when nothing
            # collects warnings, as while the writer reads the objects: the input is refused
            return
        with rdbspec.parse(out.read_bytes()) as again:
            after = read_all(again)
        if after != before:
            raise RoundTripError(first_difference(before, after))
    return write


def rewritten(dump: Dump, path: Path) -> None:
    """`dump` (read whole by the Python parsers) written to `path` by the generated writers: its
    head records, then its keys, each database opened before its first key, then the module
    data saved after the keys."""
    with rdbspec.Writer(path, dump.header.version, valkey=dump.header.magic.startswith("VALKEY")) as writer:
        for record, _, _ in dump.head_spans():
            writer.record(record.opcode, record.body)
        for record in dump.keys():
            if writer.db != record.db:
                writer.select_db(record.db)
            writer.key(record)
        for module in dump.module_aux:
            if module.when == AuxWhen.AFTER_RDB:
                writer.module_aux(module)


def first_difference(before: list[Any], after: list[Any]) -> str:
    for index, (a, b) in enumerate(zip(before, after)):
        if a != b:
            return f"key {index} read back differently:\n  read:    {a!r}\n  written: {b!r}"
    return f"{len(before)} keys read, {len(after)} read back"


TARGETS: dict[str, Callable[[Scratch], Callable[[bytes], None]]] = {"read": read_target, "write": write_target}


# -- the seeds -----------------------------------------------------------------------------------

# the value type a golden fixture's root is read as, as a key of a one-key file
VALUE_ROOTS = {
    "rdb_string": ValueType.STRING,
    "hash::hash_table": ValueType.HASH,
    "hash::hash_listpack_ex": ValueType.HASH_LISTPACK_EX,
    "zset::zset_2": ValueType.ZSET_2,
    "zset::zset_legacy": ValueType.ZSET,
    "quicklist": ValueType.LIST_QUICKLIST,
    "quicklist::quicklist_2": ValueType.LIST_QUICKLIST_2,
    "sparse_array::array_value": ValueType.ARRAY,
    "module::module_value": ValueType.MODULE_2,
}
# containers, stored in a string: the type of a key that holds one
CONTAINER_ROOTS = {
    "listpack": ValueType.HASH_LISTPACK,
    "ziplist": ValueType.LIST_ZIPLIST,
    "intset": ValueType.SET_INTSET,
    "zipmap": ValueType.HASH_ZIPMAP,
}
BLOB_KINDS = {BlobKind.LISTPACK: ValueType.SET_LISTPACK, BlobKind.ZIPLIST: ValueType.LIST_ZIPLIST,
              BlobKind.INTSET: ValueType.SET_INTSET, BlobKind.ZIPMAP: ValueType.HASH_ZIPMAP}
# records that are no key: their opcode before the body
RECORD_ROOTS = {
    "rdb::aux": RecordKind.AUX,
    "function::function2": RecordKind.FUNCTION2,
    "function::function_pre_ga": RecordKind.FUNCTION_PRE_GA,
    "module::module_aux": RecordKind.MODULE_AUX,
}


def rdb_len(n: int) -> bytes:
    """A length as rdbSaveLen writes it (6, 14 or 32 bits)."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def dump_of(version: int, body: bytes) -> bytes:
    """A REDIS dump of `version` holding `body` (records), then EOF and the CRC-64."""
    from rdbspec.read.checksum import crc64

    data = b"REDIS%04d" % version + body + bytes([RecordKind.EOF])
    return data + struct.pack("<Q", crc64(data))


def golden_seed(fixture: Any) -> bytes | None:
    """A golden fixture as a dump: a whole file as it is, a value as the one key of a file, a
    record alone in one; None for a root no file holds alone."""
    root, data = fixture.root, fixture.data
    key_of = bytes([RecordKind.SELECT_DB, 0])
    if root == "rdb":
        return data
    if root in RECORD_ROOTS:
        return dump_of(11, bytes([RECORD_ROOTS[root]]) + data)
    if root == "stream::stream_value":
        rdb_type = fixture.params.get("type_code", ValueType.STREAM_LISTPACKS_3)
    elif root in VALUE_ROOTS:
        rdb_type = VALUE_ROOTS[root]
    elif root in CONTAINER_ROOTS:
        rdb_type, data = CONTAINER_ROOTS[root], rdb_len(len(data)) + data
    elif root == "rdb_string::rdb_blob" and fixture.params.get("kind") in BLOB_KINDS:
        rdb_type = BLOB_KINDS[fixture.params["kind"]]
    else:
        return None
    return dump_of(14, key_of + bytes([rdb_type]) + rdb_len(len(fixture.name)) + fixture.name.encode() + data)


def seeds(directory: Path) -> Iterator[tuple[str, bytes]]:
    """The inputs a run starts from, each as (name, bytes), at most `MAX_LEN` bytes: the golden
    fixtures (valid and invalid), the real servers' dumps, and the dumps the unit tests make
    (Valkey 9.2's, compressed too, Redis 8.8's and 8.10's, a Dragonfly snapshot's shards);
    `directory` holds the files those are made in."""
    import sys

    sys.path.insert(0, str(TESTS / "conformance"))
    from golden import GOLDEN_DIR, fixture_names, load_fixture

    from tests.support import dragonfly_dumps, template_dump
    from tests.support.valkey_dumps import vcs_lz4, write_valkey081
    from tests.unit.test_fuzz import rdb14_seed

    found: list[tuple[str, bytes]] = []
    for name in fixture_names(GOLDEN_DIR):
        data = golden_seed(load_fixture(name, GOLDEN_DIR))
        if data is not None:
            found.append((f"golden-{name}", data))
    for path in sorted((TESTS / "corpus" / "real").glob("*/*.rdb")):
        found.append((f"real-{path.parent.name}-{path.stem}", path.read_bytes()))
    valkey = write_valkey081(directory / "valkey081.rdb").read_bytes()
    found += [("valkey-9.2", valkey), ("valkey-9.2-lz4", vcs_lz4(valkey))]
    found.append(("redis-8.8", rdb14_seed(directory / "rdb14.rdb").read_bytes()))
    template_dump.build(directory / "templates.rdb", keys=4, late=True)
    found.append(("redis-8.10-templates", (directory / "templates.rdb").read_bytes()))
    dragonfly_dumps.build(directory / "dragonfly")
    for path in sorted((directory / "dragonfly").rglob("*.dfs")):
        found.append((f"dragonfly-{path.stem}", path.read_bytes()))
    for name, data in found:
        if len(data) <= MAX_LEN:
            yield name, data


def write_seeds(directory: Path) -> int:
    """The seeds as files of `directory` (made anew); how many."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        if old.is_file():
            old.unlink()
    made = directory / ".made"
    made.mkdir(exist_ok=True)
    count = 0
    for name, data in seeds(made):
        (directory / name).write_bytes(data)
        count += 1
    return count
