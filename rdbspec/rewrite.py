"""`rdbspec rewrite`: a dump written again, whole or cut down to some databases, keys and types.

Two reads of the input. The first (the fastest parsers, values not decoded) counts what each kept
database will hold, for its RESIZEDB (keys, keys with an expiry: redis src/rdb.c rdbSaveDb). The
second reads with the Python parsers, whose objects the generated writers write again
(`rdbspec.writer.Writer`), in the server's order (rdbSaveRio): the records before the databases
as they were (AUX fields, function libraries, module data saved before the keys), each database
with kept keys (SELECTDB, RESIZEDB, then each key as rdbSaveKeyValuePair writes it), module
data saved after the keys (rdbSaveSingleModuleAux), EOF and the checksum. A dump written by a server and not cut is
written again byte for byte (tests/test_rewrite.py). The input is never modified; the output is
written beside its destination and renamed at the end, so a failure leaves none.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field

from . import api
from .convert import Converter
from .errors import UnwritableError
from .writer import Writer

AFTER_RDB = 2  # redis src/server.h REDISMODULE_AUX_AFTER_RDB: module data saved after the keys


@dataclass
class Selection:
    """Which keys are kept: in `dbs` (all when empty), of `types` (type names: all when empty),
    whose key matches `key` (a regular expression searched in the key's bytes) and not `exclude`."""

    dbs: frozenset[int] = frozenset()
    types: frozenset[str] = frozenset()
    key: re.Pattern[bytes] | None = None
    exclude: re.Pattern[bytes] | None = None

    def keeps(self, record: api.KeyRecord) -> bool:
        return ((not self.dbs or record.db in self.dbs)
                and (not self.types or record.type_name in self.types)
                and (self.key is None or self.key.search(record.key) is not None)
                and (self.exclude is None or self.exclude.search(record.key) is None))


@dataclass
class Plan:
    """What the first read found: the header and what each kept database holds."""

    version: int
    valkey_magic: bool
    keys: Counter = field(default_factory=Counter)  # db: kept keys
    expires: Counter = field(default_factory=Counter)  # db: kept keys with an expiry
    read: int = 0  # keys in the input


def plan(path: str | os.PathLike, selection: Selection) -> Plan:
    """The first read (values not decoded): the counts."""
    with api.open(path, whole_set=False) as dump:
        if dump.header.dialect == "dragonfly":
            raise UnwritableError("a Dragonfly snapshot is not written back (its own record types and envelopes)")
        out = Plan(dump.header.version, dump.header.magic.startswith("VALKEY"))
        for record in dump.keys():
            out.read += 1
            if selection.keeps(record):
                out.keys[record.db] += 1
                out.expires[record.db] += record.expire_at_ms is not None
        _refuse_unwritten(dump)
    return out


def _refuse_unwritten(dump: api.Dump) -> None:
    """Records the writer does not write yet are refused by name (nothing is dropped silently)."""
    if dump.slot_info:
        raise UnwritableError(f"the dump holds {len(dump.slot_info)} SLOT_INFO records (cluster mode), which "
                              "rdbspec rewrite does not write yet")
    if dump.slot_imports:
        raise UnwritableError("the dump holds SLOT_IMPORT records (Valkey 9 atomic slot migration), which "
                              "rdbspec rewrite does not write yet")


def rewrite(source: str | os.PathLike, destination: str | os.PathLike, selection: Selection | None = None,
            converter: Converter | None = None) -> Plan:
    """Writes the kept keys of `source` to `destination` (see the module doc), in the layout of
    `converter`'s RDB version when one is given (`rdbspec.convert`; what it drops is counted in
    `converter.dropped`); returns the plan, whose counts say what was written."""
    selection = selection or Selection()
    if os.path.exists(destination) and os.path.samefile(source, destination):
        raise ValueError("the output would replace the input: write to another file")
    found = plan(source, selection)
    version, valkey = (found.version, found.valkey_magic) if converter is None else (converter.version, False)
    with (Writer(destination, version, valkey=valkey) as writer,
          api.open(source, whole_set=False, parsers="python") as dump):
        for record in dump.head():  # as read: their strings keep the form the server gave them
            if converter is None or converter.head(record):
                writer.record(record.opcode, record.body)
        for record in dump.keys():
            if selection.keeps(record):
                if writer.db != record.db:
                    writer.select_db(record.db, found.keys[record.db], found.expires[record.db])
                writer.key(record if converter is None else converter.key(record))
        for module in dump.module_aux:
            if module.when == AFTER_RDB:
                writer.module_aux(module)
    return found


