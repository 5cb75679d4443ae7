"""`rdbspec split`: a dump cut into one dump per cluster node, each holding the keys of the slots
the node serves (`Node`: its file's name and its slot ranges), for the node to load at start.

What a cluster node loads (redis src/cluster.c verifyClusterConfigWithData, the same in Valkey's
cluster_legacy.c): keys in database 0 only (a node holding keys in another one exits), each in a
slot the node serves, or in one no node serves, which it then takes ("I have keys for unassigned
slot N. Taking responsibility for it"); a key's slot is keyHashSlot's (`key_hash_slot`: the CRC16
of the key, or of its {hash tag}). So a dump with keys in several databases is refused by name
unless one is chosen (`db`), whose keys are written as database 0; and a key in a slot no node of
the topology serves is refused by name, with how many there are, rather than dropped.

Two reads, as `rdbspec.rewrite`. The first (the fastest parsers, values not decoded) finds each
key's slot and node and counts each node's keys and each slot's (`SplitPlan`); nothing is written
when it refuses. The second writes every node's file at once, one `Writer` each, as its server
writes a dump (rdbSaveRio, rdbSaveDb):

* the records before the databases (AUX fields, function libraries, module data) in every file,
  copied as they are, but the replication AUX fields (`repl-stream-db`, `repl-id`, `repl-offset`:
  rdbSaveInfoAuxFields): a master that loads them keeps the source's replication ID as its
  second one (redis src/server.c loadDataFromDisk), so a replica of the source could resume
  from any node with the keys of every slot;
* database 0: SELECTDB and RESIZEDB with the node's keys (and those with an expiry), each slot's
  counts once before its first key, in the form the output's server writes them (`node_slot_counts`),
  then the keys in the input's order, each copied as its bytes with its own records before it,
  or converted (`rdbspec.write.convert`) for a target;
* module data saved after the keys, EOF and the checksum (0 when the input has 0 there).

A Dragonfly snapshot is written for a target only, as by `rdbspec.rewrite` (one read gathers the
chosen database's keys from every shard).

A server writes a node's keys slot by slot; here they stay in the input's order (a loader puts
each key in its slot's table whatever the order: rdbLoadRioWithLoadingCtx, dbAddRDBLoad) and
each slot's counts come before its first key, once: memory stays that of the 16,384 slots' counts
whatever the number of keys, and the input is read once more, not once a node.

Each file is written beside its destination (`rdbspec.atomic`), and the files are renamed
only once all are whole: a failure leaves no file of the run (one renamed before a rename failed
is removed), a kill the files of the previous run (but for one killed between the renames, a few
system calls: each file whole, some of this run). What a killed run left in the directory is
removed by the next.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import remove_stale_in
from ..read import dumpfile, location
from ..read.elements import text
from ..server.cluster import UNOWNED, SlotRange, owners
from ..write.convert import Converter
from ..write.layouts import key_hash_slot
from ..write.writer import Writer
from . import (
    SLOT_INFO_RDB,
    VALKEY_9_SLOT_COUNTS,
    Plan,
    SlotCounts,
    _copy_from,
    _plan_of,
    _refuse_unwritten,
    _write_tail,
    _writer,
    checksummed,
    target_slot_counts,
    write_head,
    write_value,
)

# what rdbSaveInfoAuxFields writes for a replica to resume from (see the module doc)
REPLICATION_AUX = frozenset((b"repl-stream-db", b"repl-id", b"repl-offset"))


@dataclass(frozen=True)
class Node:
    """One output: its file's `name` in the output directory, and the slot ranges it serves."""

    name: str
    ranges: tuple[SlotRange, ...]


@dataclass
class SplitPlan:
    """What the first read found: the header, the keys read, each slot's counts (`plan.slots`,
    when the output's server writes them), and each node's keys and keys with an expiry (in
    the order of the nodes), which its file's RESIZEDB holds."""

    plan: Plan
    nodes: list[Node]
    db: int  # the database whose keys are written (as database 0)
    owner: list[int]  # for each slot, the index of the node serving it (`owners`)
    keys: list[int] = field(default_factory=list)
    expires: list[int] = field(default_factory=list)

    def node_of(self, record: dumpfile.KeyRecord) -> int:
        return self.owner[key_hash_slot(record.key)]


def node_slot_counts(dump: dumpfile.Dump, converter: Converter | None) -> SlotCounts | None:
    """How a cluster node of the output's server writes its slots' counts before each slot's
    first key (rdbSaveDb in cluster mode): a Valkey 9+ dump (a VALKEY magic: valkey src/rdb.h) as
    `slot-info` AUX fields with the keys with volatile items, a Valkey 8 one (REDIS0011 and a
    `valkey-ver` AUX field) without them, a Redis 7.4+ one (RDB 12 on) as SLOT_INFO; an older
    Redis writes none. A conversion's, as its target writes them (`target_slot_counts`)."""
    if converter is not None:
        return target_slot_counts(converter)
    if dump.header.magic.startswith("VALKEY"):
        return SlotCounts(False, VALKEY_9_SLOT_COUNTS)
    if dump.header.dialect == "valkey":
        return SlotCounts(False, 3)
    return SlotCounts(True, 3) if dump.header.version >= SLOT_INFO_RDB else None


def plan_split(path: str | os.PathLike, nodes: list[Node], db: int | None = None,
               converter: Converter | None = None) -> SplitPlan:
    """The first read (see the module doc): ValueError for nodes whose ranges overlap, for keys
    in a database other than `db` (None: 0) when `db` is not chosen, and for keys in slots that
    no node serves; `converter` is told of the keys it drops."""
    owner = owners([node.ranges for node in nodes])
    chosen = 0 if db is None else db
    others: Counter = Counter()  # db: keys in a database other than 0, when none is chosen
    unowned: Counter = Counter()  # slot: keys no node serves
    first_unowned = b""
    with dumpfile.open(path) as dump:
        found = _plan_of(dump, converter)
        head = dump.head()
        found.slots = node_slot_counts(dump, converter)
        out = SplitPlan(found, list(nodes), chosen, owner, [0] * len(nodes), [0] * len(nodes))
        for record in dump.keys():
            found.read += 1
            if record.db != chosen:
                if db is None:
                    others[record.db] += 1
                continue
            if converter is not None and not converter.holds(record, note=True):
                continue
            slot = key_hash_slot(record.key)
            node = owner[slot]
            if node == UNOWNED:
                first_unowned = first_unowned or record.key
                unowned[slot] += 1
                continue
            out.keys[node] += 1
            out.expires[node] += record.expire_at_ms is not None
            if found.slots is not None:
                found.slots.count(record)
        _refuse_unwritten(dump, head, converter)
        found.checksum = checksummed(dump)
    if others:
        held = ", ".join(f"{n} ({others[n]} keys)" for n in sorted(others))
        raise ValueError(f"the dump holds keys in databases other than 0: {held}; a cluster has database 0 only: "
                         "choose one with --db N (written as database 0)")
    if unowned:
        raise ValueError(f"{sum(unowned.values())} keys are in slots that no node serves ({len(unowned)} slots, "
                         f"the first {min(unowned)}; the first such key {first_unowned!r} is in slot "
                         f"{key_hash_slot(first_unowned)}): give every slot that holds keys to a node")
    return out


def split(source: str | os.PathLike, directory: str | os.PathLike, nodes: list[Node], db: int | None = None,
          converter: Converter | None = None) -> SplitPlan:
    """Writes one dump per node of `nodes` into `directory` (made when missing), named as the
    node is, holding the keys of `db` (None: 0, the only one there may be) in the slots it
    serves (see the module doc); in the layout of `converter`'s RDB version when one is given
    (what it drops is counted in `converter.dropped`). Returns the plan, whose counts say what
    each file holds."""
    names = [node.name for node in nodes]
    if len(set(names)) < len(names) or any(os.sep in name or name in ("", ".", "..") for name in names):
        raise ValueError(f"the nodes' file names are not distinct names of files: {names}")
    found = plan_split(source, nodes, db, converter)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_in(out)  # what a killed run left, for these nodes or others
    paths = [out / name for name in names]
    if not location.is_url(source) and any(path.exists() and os.path.samefile(source, path) for path in paths):
        raise ValueError("an output would replace the input: write to another directory")
    writers: list[Writer] = []
    try:
        for path in paths:
            writers.append(_writer(path, found.plan, converter))
        _write_nodes(source, writers, found, converter)
        for writer in writers:
            writer.finish()
    except BaseException:
        for writer in writers:
            writer.abort()
        raise
    _rename(writers)
    return found


def _write_nodes(source: str | os.PathLike, writers: list[Writer], found: SplitPlan,
                 converter: Converter | None) -> None:
    """The second read: every node's file at once."""
    counts = found.plan.slots
    # a copy needs no objects, a conversion the Python parsers' (the generated writers write them)
    with dumpfile.open(source, parsers=None if converter is None else "python") as dump:
        copy_from = _copy_from(dump, found.plan)
        head = dump.head_spans()
        for writer in writers:
            write_head(writer, head, copy_from, converter, leave_out=_replication_aux)
        for record in dump.keys():
            if record.db != found.db or (converter is not None and not converter.holds(record)):
                continue
            node = found.node_of(record)
            writer = writers[node]
            if writer.db is None:
                writer.select_db(0, found.keys[node], found.expires[node])
            if counts is not None:
                counts.write(writer, record)
            write_value(writer, record, converter, copy_from)
        for writer in writers:
            _write_tail(writer, dump)
            writer.flush()  # what was copied from this read, before it is closed


def _replication_aux(record: Any) -> bool:
    return record.kind == dumpfile.AUX and text(record.body.key) in REPLICATION_AUX


def _rename(writers: list[Writer]) -> None:
    """Every whole file takes its name; when one cannot, those renamed before are removed and the
    others' temporary files too."""
    renamed: list[Path] = []
    try:
        for writer in writers:
            writer.close()
            renamed.append(writer.path)
    except BaseException:
        for writer in writers:
            writer.abort()
        for path in renamed:
            path.unlink(missing_ok=True)
        raise
