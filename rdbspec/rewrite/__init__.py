"""`rdbspec rewrite`: a dump written again, whole or cut down to some databases, keys and types.

Two reads of the input. The first (the fastest parsers, values not decoded) counts what each kept
database will hold, for its RESIZEDB (keys, keys with an expiry: redis src/rdb.c rdbSaveDb), and
for a cluster node's dump what each slot holds. The second writes (`rdbspec.write.writer.Writer`) in
the server's order (rdbSaveRio; for a Dragonfly snapshot set, whose shards each hold keys of
every database, one read a database): the records before the databases as they were (AUX
fields, function libraries, module data saved before the keys, Valkey's slot imports), each
database with kept keys (SELECTDB, RESIZEDB, for a cluster node each slot's counts before its
first key, then each key as rdbSaveKeyValuePair writes it), module data saved after the keys
(rdbSaveSingleModuleAux), EOF and the checksum: 0 when the input's is 0, as the server that
saved it with `rdbchecksum no` writes it (rdbSaveRio), a CRC-64 otherwise.

What is written as it was read is copied as its bytes from the mapped input: the records before
the databases, and each key with its own records before it (EXPIRETIME_MS, IDLE, FREQ, KEY_META),
its value neither decoded nor written again, so a dump rewritten whole is a copy and a CRC-64
whatever its values hold. The generated writers write only what changes: the database headers
and slot counts (counted again for the keys kept), module data saved after the keys, the keys
of a conversion (`rdbspec.write.convert`: the second read then takes the Python parsers, whose
objects they write; a key `Converter.key` gives back as it was would be copied), those the
commands changed (`rdbspec.rewrite.command_file`), and every key of a Dragonfly snapshot (its records lie in
compressed blobs and in several files). A dump written by a server and not cut is written again
byte for byte (tests/servers/test_rewrite.py). The input is never modified; the output is written beside
its destination and renamed at the end, so a failure leaves none.

Imports: the reading and writing sides and the stream commands (`command_file` runs them).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rdbspec_generated.enums import AuxWhen

from ..errors import UnwritableError
from ..read import dumpfile, location
from ..server.versions import Version
from ..write.convert import FIELD_TTL_HASHES, Converter
from ..write.layouts import key_hash_slot
from ..write.writer import DumpBuffer, Writer
from . import command_file

SLOT_INFO_RDB = 12  # Redis 7.4's, the first with SLOT_INFO (redis src/rdb.c rdbSaveDb)
# the numbers of Valkey 9's `slot-info`: the slot, its keys, those with an expiry, those with volatile items
VALKEY_9_SLOT_COUNTS = 4


@dataclass
class Selection:
    """Which keys are kept: in `dbs` (all when empty), of `types` (type names: all when empty),
    whose key matches `key` (a regular expression searched in the key's bytes) and not `exclude`."""

    dbs: frozenset[int] = frozenset()
    types: frozenset[str] = frozenset()
    key: re.Pattern[bytes] | None = None
    exclude: re.Pattern[bytes] | None = None

    def keeps(self, record: dumpfile.KeyRecord) -> bool:
        return ((not self.dbs or record.db in self.dbs)
                and (not self.types or record.type_name in self.types)
                and (self.key is None or self.key.search(record.key) is not None)
                and (self.exclude is None or self.exclude.search(record.key) is None))


class Keeps(Protocol):
    """What chooses the keys written: a `Selection`, or a caller's own (the pipeline's filters)."""

    def keeps(self, record: dumpfile.KeyRecord) -> bool: ...


@dataclass
class Plan:
    """What the first read found: the header, what each kept database holds and, for a dump of
    a cluster node, what each slot holds (`slots`: how the slots' counts are written)."""

    version: int
    valkey_magic: bool
    dragonfly: bool
    keys: Counter = field(default_factory=Counter)  # db: kept keys
    expires: Counter = field(default_factory=Counter)  # db: kept keys with an expiry
    read: int = 0  # keys in the input (after the commands, with --commands)
    slots: SlotCounts | None = None
    checksum: bool = True  # the output gets a CRC-64 (`checksummed`)

    def count(self, record: dumpfile.KeyRecord, selection: Keeps, converter: Converter | None) -> None:
        """Counts a key that is written: kept, and held by the target (`converter` is told of
        those it drops)."""
        if selection.keeps(record) and (converter is None or converter.holds(record, note=True)):
            self.keys[record.db] += 1
            self.expires[record.db] += record.expire_at_ms is not None
            if self.slots is not None:
                self.slots.count(record)


@dataclass
class SlotCounts:
    """The counts a cluster node writes before each slot's first key (rdbSaveDb): as Redis
    7.4+'s SLOT_INFO (`numbers` 3) or Valkey 8+'s `slot-info` AUX field (3 numbers, or 4 from
    Valkey 9: the keys, the keys with an expiry, the keys with volatile items: hashes with field
    TTLs, which a conversion for Valkey 9 makes its HASH_2). The server writes the keys slot by slot,
    each slot's counts once before its first key; keys in another order (a split:
    `rdbspec.rewrite.split`) get them once too, before the first."""

    opcode: bool
    numbers: int
    keys: Counter = field(default_factory=Counter)  # (db, slot): kept keys
    expires: Counter = field(default_factory=Counter)
    volatile: Counter = field(default_factory=Counter)

    def count(self, record: dumpfile.KeyRecord) -> None:
        where = (record.db, key_hash_slot(record.key))
        self.keys[where] += 1
        self.expires[where] += record.expire_at_ms is not None
        if self.numbers > 3 and record.value_kind in FIELD_TTL_HASHES and record.field_expire_at_ms:
            self.volatile[where] += 1

    def write(self, writer: Writer, record: dumpfile.KeyRecord) -> None:
        """The counts of the record's slot, when it is the first key of that slot."""
        slot = key_hash_slot(record.key)
        if slot in writer.slots:
            return
        where = (record.db, slot)
        if self.opcode:
            writer.slot_info(slot, self.keys[where], self.expires[where])
        else:
            counts = (self.keys[where], self.expires[where], self.volatile[where])
            writer.slot_info_aux(slot, counts[:self.numbers - 1])


def slot_counts(dump: dumpfile.Dump, converter: Converter | None) -> SlotCounts | None:
    """How a dump read up to its first key writes its slots' counts: as it did, or as the
    target of a conversion writes them (`target_slot_counts`)."""
    valkey = [value for name, value in dump.aux if name == b"slot-info"]
    if not dump.slot_info and not valkey:
        return None
    if converter is not None:
        return target_slot_counts(converter)
    return SlotCounts(True, 3) if dump.slot_info else SlotCounts(False, valkey[0].count(b",") + 1)


def target_slot_counts(converter: Converter) -> SlotCounts | None:
    """How the target of a conversion writes a cluster node's slots' counts: SLOT_INFO from RDB
    12, as Redis 7.4+ writes it, none below, where the loader would refuse the opcode; for Valkey 9
    its `slot-info` AUX fields of 4 numbers (valkey src/rdb.c rdbSaveDb). The counts are sizing
    hints, which a loader does without."""
    if converter.valkey:
        return SlotCounts(False, VALKEY_9_SLOT_COUNTS)
    return SlotCounts(True, 3) if converter.version >= SLOT_INFO_RDB else None


def plan(path: str | os.PathLike, selection: Keeps, converter: Converter | None = None) -> Plan:
    """The first read (values not decoded): the counts of the keys written (kept, and held by
    the target: `converter` is told of those it drops)."""
    with dumpfile.open(path) as dump:
        out = _plan_of(dump, converter)
        head = dump.head()
        for record in dump.keys():
            if not out.read:  # what comes before a cluster node's first key says how it counts
                out.slots = slot_counts(dump, converter)
            out.read += 1
            out.count(record, selection, converter)
        _refuse_unwritten(dump, head, converter)
        out.checksum = checksummed(dump)
    return out


def checksummed(dump: dumpfile.Dump) -> bool:
    """Whether a dump read to its end is written again with a CRC-64: not when it has 0 there
    (saved with `rdbchecksum no`: rdbSaveRio's rio then never updates its checksum), as its server
    would write it again. Dragonfly writes 0 in every file; the Redis dump made of them gets one."""
    return dump.header.dialect == "dragonfly" or dump.checksum_status != dumpfile.CHECKSUM_DISABLED


def _plan_of(dump: dumpfile.Dump, converter: Converter | None) -> Plan:
    out = Plan(dump.header.version, dump.header.magic.startswith("VALKEY"), dump.header.dialect == "dragonfly")
    if out.dragonfly and converter is None:
        raise UnwritableError("a Dragonfly snapshot is written for a Redis server: give --target or --rdb-version")
    return out


def _refuse_unwritten(dump: dumpfile.Dump, head: list, converter: Converter | None) -> None:
    """AUX fields among the keys (after those of `head`, the records before the databases) are
    written again only as the slots' counts (`SlotCounts`): any other is refused by name (nothing
    is dropped silently); so is a hash template among the keys, which keys after it may name,
    unless the target has no templates (`convert`: its hashes become plain ones)."""
    leading_aux = sum(record.kind == dumpfile.AUX for record in head)
    among_keys = {name for name, _ in dump.aux[leading_aux:] if name != b"slot-info"}
    if among_keys:
        names = ", ".join(sorted(repr(n) for n in among_keys))
        raise UnwritableError(f"the dump holds AUX fields among its keys ({names}), which rdbspec rewrite "
                              "does not write")
    templates = dump.hash_templates[sum(record.kind == dumpfile.HASH_TEMPLATE for record in head):]
    if templates and (converter is None or converter.templates):
        raise UnwritableError(f"the dump holds hash templates among its keys (ids {templates[:5]}), which "
                              "rdbspec rewrite does not write")


@dataclass
class Commands:
    """`--commands`: the lines of `path` (`command_file.read_commands`), run at `now_ms` by the rules
    of `version` (None: the dump's generation) with the server's stream node sizes."""

    path: str | os.PathLike
    lines: list[tuple[int, list[bytes]]]
    now_ms: int
    version: Version | None = None
    node_max_bytes: int = 4096
    node_max_entries: int = 100


def rewrite(source: str | os.PathLike, destination: str | os.PathLike, selection: Keeps | None = None,
            converter: Converter | None = None, commands: Commands | None = None) -> Plan:
    """Writes the kept keys of `source` to `destination` (see the module doc), after `commands`
    when given (`rdbspec.rewrite.command_file`), in the layout of `converter`'s RDB version when one is given
    (`rdbspec.write.convert`; what it drops is counted in `converter.dropped`); returns the plan, whose
    counts say what was written."""
    selection = selection or Selection()
    if not location.is_url(source) and os.path.exists(destination) and os.path.samefile(source, destination):
        raise ValueError("the output would replace the input: write to another file")
    if commands is not None:
        return _rewrite_edited(source, destination, selection, converter, commands)
    found = plan(source, selection, converter)
    # a Dragonfly set holds each database's keys in every shard: one read a database gathers them
    passes = sorted(found.keys) if found.dragonfly else [None]
    with _writer(destination, found, converter) as writer:
        for db in passes:
            # a copy needs no objects, a conversion the Python parsers' (the generated writers write them)
            with dumpfile.open(source, parsers=None if converter is None else "python") as dump:
                copy_from = _copy_from(dump, found)
                if db == passes[0]:
                    write_head(writer, dump.head_spans(), copy_from, converter)
                for record in dump.keys():
                    if (db is None or record.db == db) and selection.keeps(record) and (
                            converter is None or converter.holds(record)):
                        _write_key(writer, record, found, converter, copy_from)
                if db == passes[-1]:
                    _write_tail(writer, dump)
                writer.flush()  # what was copied from this read, before it is closed
    return found


def _rewrite_edited(source: str | os.PathLike, destination: str | os.PathLike, selection: Keeps,
                    converter: Converter | None, commands: Commands) -> Plan:
    """One read: the keyspace the commands leave (kept in memory), then written."""
    with dumpfile.open(source, parsers="python") as dump:
        found = _plan_of(dump, converter)
        head, spans, copy_from = dump.head(), dump.head_spans(), _copy_from(dump, found)
        keys = command_file.apply(dump, commands.path, commands.lines, commands.now_ms, commands.version,
                           commands.node_max_bytes, commands.node_max_entries)
        _refuse_unwritten(dump, head, converter)
        found.checksum = checksummed(dump)
        records = list(command_file.written(keys, found.version, found.valkey_magic))
        # command_file.written gives a key the commands left as it was as the very record read (live
        # objects: their ids differ from those of the records made for the others)
        as_read = {id(key.record) for db in keys.dbs.values() for key in db.values()}
        found.slots = slot_counts(dump, converter)
        if found.slots is not None:  # a cluster node writes a database slot by slot
            records.sort(key=lambda r: (r.db, key_hash_slot(r.key)))
        found.read = len(records)
        for record in records:
            found.count(record, selection, converter)
        with _writer(destination, found, converter) as writer:
            write_head(writer, spans, copy_from, converter)
            for record in records:
                if selection.keeps(record) and (converter is None or converter.holds(record)):
                    _write_key(writer, record, found, converter, copy_from if id(record) in as_read else None)
            _write_tail(writer, dump)
    return found


def _writer(destination: str | os.PathLike, found: Plan, converter: Converter | None) -> Writer:
    if converter is None:
        return Writer(destination, found.version, valkey=found.valkey_magic, checksum=found.checksum)
    return Writer(destination, converter.version, valkey=converter.valkey, checksum=found.checksum)


def _copy_from(dump: dumpfile.Dump, found: Plan) -> DumpBuffer | None:
    """The buffer a record read from `dump` is copied from; None for a Dragonfly snapshot, whose
    records are read from decompressed blobs and from the files of its set."""
    return None if found.dragonfly else dump.source.buffer


def write_head(writer: Writer, head: list[tuple[Any, int, int]], copy_from: DumpBuffer | None,
               converter: Converter | None, leave_out: Callable[[Any], bool] | None = None) -> None:
    """The records before the databases (`head`: each with its span, `Dump.head_spans`) as read,
    but those `leave_out` says: copied from `copy_from`, or, for a conversion, written again but
    those the target does not hold (their strings keep the form the server gave them)."""
    for record, start, end in head:
        if leave_out is not None and leave_out(record):
            continue
        if converter is None and copy_from is not None:
            writer.copy(copy_from, start, end)  # spans that follow each other are written as one
            writer.note(record)  # what the keys after them read (hash templates), known to the writer
        elif converter is None or converter.head(record):
            writer.record(record.opcode, record.body)


def _write_key(writer: Writer, record: dumpfile.KeyRecord, found: Plan, converter: Converter | None,
               copy_from: DumpBuffer | None) -> None:
    """A kept key, after its database's header and its slot's counts when it is the first there
    (`write_value`)."""
    if writer.db != record.db:
        writer.select_db(record.db, found.keys[record.db], found.expires[record.db])
    if found.slots is not None:
        found.slots.write(writer, record)
    write_value(writer, record, converter, copy_from)


def write_value(writer: Writer, record: dumpfile.KeyRecord, converter: Converter | None,
                copy_from: DumpBuffer | None) -> None:
    """A key with its own records before it: copied from `copy_from` (the buffer it was read
    from; None: it is not as it was read) unless the conversion gives it another record, which
    the generated writers write."""
    written = record  # the same record: nothing changes
    if converter is not None and not (copy_from is not None and converter.copied(record)):
        written = converter.key(record)
    if written is record and copy_from is not None:
        writer.copy_key(record, copy_from)
    else:
        writer.key(written)


def _write_tail(writer: Writer, dump: dumpfile.Dump) -> None:
    """Module data saved after the keys (rdbSaveSingleModuleAux with REDISMODULE_AUX_AFTER_RDB)."""
    for module in dump.module_aux:
        if module.when == AuxWhen.AFTER_RDB:
            writer.module_aux(module)
