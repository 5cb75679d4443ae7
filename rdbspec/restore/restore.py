"""`rdbspec restore FILE... --to URL`: every selected key of the dumps sent to a live server, or to
each key's master in a cluster, as the server's own migration sends it (redis src/cluster.c
migrateCommand: `RESTORE key ttl payload [REPLACE] ABSTTL [IDLETIME s | FREQ f]`, restoreCommand).

* The target is asked what it is (`connection.ServerInfo`); each value is laid out for the newest
  target generation that server loads (`rdbspec.server.versions`), converted as `rewrite --target`
  converts it (`rdbspec.write.convert`: what it would lose is refused by name unless lossy), and its
  payload labelled with that generation's RDB version (`payload`).
* A value whose payload would be larger than the server takes in one bulk string
  (`proto-max-bulk-len`, and less than its `client-query-buffer-limit`) or than `max_payload` is
  sent as the plain commands that build it (`commands`, of at most `BUILD_BYTES` each), under a name
  of its own in the same slot, renamed over the key at its end (RENAME, or RENAMENX when an existing
  key is not to be replaced): the key appears whole or not at all.
* Keys already expired are skipped, as a master skips them on load (redis src/rdb.c
  rdbLoadRioWithLoadingCtx); the others keep their absolute expiry (ABSTTL), LRU idle time and LFU
  counter.
* An existing key: the server refuses RESTORE without REPLACE ("BUSYKEY"), which stops the restore
  naming the key (`Existing.FAIL`), or `Existing.REPLACE` / `Existing.SKIP` (a rerun after a
  failure goes on where it stopped).
* Commands are pipelined, at most `window` unanswered a connection; a refused one stops the restore
  with the server's reply and its key (`ServerError`), once the replies of those sent before are
  read (they are counted); a server that goes away is a ConnectionError naming it (exit 6).
* In a cluster (INFO's `cluster_enabled`), the slots' masters are read (`cluster.Topology`), a key
  goes to the master of its slot, MOVED reads the topology again and resends, ASK sends the one
  command to the node named after ASKING. A cluster node has database 0 only (but Valkey 9's
  `cluster-databases`), so the keys of any other database need `db_map`: read before anything is
  sent, nothing is restored otherwise (a server refuses a database it has not in SELECT).
"""

from __future__ import annotations

import enum
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import ServerError, UnwritableError
from ..net.connection import Address, Connection, ServerInfo
from ..net.resp import CRLF, ReplyError, bulk, command, command_parts
from ..read import dumpfile
from ..rewrite import Keeps, Selection
from ..server.versions import TARGETS, Server, Target, target_of
from ..write.convert import Converter, Losses
from ..write.layouts import key_hash_slot
from ..write.writer import DumpBuffer
from . import commands
from . import payload as payloads
from .cluster import Node, Redirection, Topology, name_in_slot, redirection

try:  # compiled by setup.py from _restore_commands.pyx; absent without a C compiler
    from . import _restore_commands
except ImportError:
    _restore_commands = None  # type: ignore[assignment]

# replies read at once when a connection's window is full: few enough that the server always has
# commands to run while the next are made, enough that a read serves many
REPLIES_AT_ONCE = 64
# a value too large for one RESTORE is built by plain commands of at most this many bytes (fewer when
# `max_payload` is), whose replies are read each time as many bytes were sent: then the commands are
# let go (each is held until its reply, to be sent again on MOVED), so a value of any size is built in
# bounded memory
BUILD_BYTES = 64 << 20
PROGRESS_EVERY = 1000  # keys between two calls of the progress callback


class Existing(enum.Enum):
    """What RESTORE does where the key exists already."""

    FAIL = "fail"  # stop, naming the key (the server's BUSYKEY)
    REPLACE = "replace"
    SKIP = "skip"


@dataclass
class Options:
    """How keys are restored (see the module doc)."""

    selection: Keeps = field(default_factory=Selection)
    db_map: dict[int, int] = field(default_factory=dict)  # source db: target db (else the same)
    existing: Existing = Existing.FAIL
    allow_lossy: bool = False
    window: int = 256  # commands sent and not yet answered, a connection
    max_payload: int | None = None  # None: the server's proto-max-bulk-len
    now_ms: int | None = None  # what "already expired" is measured against (None: the clock)


@dataclass
class Summary:
    """What a restore did: keys restored, skipped by reason, dropped by the conversion, the last
    key sent (what a failure names)."""

    restored: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    chunked: int = 0  # of the restored, keys sent as plain commands
    last_key: bytes | None = None
    target: str = ""


class _Pending(NamedTuple):
    """A command sent whose reply is not read yet: what it is about, and its bytes (resent on MOVED)."""

    name: str  # the command's
    key: bytes | None
    parts: Sequence[bytes | memoryview]
    counts: bool  # its OK restores the key


class Restore:
    """A restore into the server at `address` (see the module doc); `run` restores a dump."""

    def __init__(self, address: Address, options: Options, progress: Callable[[int, int], None] | None = None):
        self.address = address
        self.options = options
        self.progress = progress
        self.summary = Summary()
        self.seed = Connection(address)
        try:
            self.info = self.seed.info()
            self.topology = Topology.of(self.seed) if self.info.cluster else None
            self.target = _target_of(self.info)
        except BaseException:
            self.seed.close()
            raise
        self.summary.target = f"{self.info.name} at {address.url}"
        self.server = Server(self.info.family, self.info.version)
        self.losses = Losses(self.info.name, options.allow_lossy)
        self.max_payload = min(options.max_payload or self.info.max_bulk, self.info.max_bulk)
        self.connections: dict[Node, Connection] = {}
        self.db: dict[Node, int] = {}  # the database each connection has selected
        # what each connection sent and has not had the reply of yet (a key alone: `_restore_copies`)
        self.pending: dict[Node, deque[_Pending | bytes]] = {}
        self.failure: ServerError | None = None
        self.home: Node = (address.host, address.port)  # a standalone server's
        self._connection(self.home if self.topology is None else self.topology.masters()[0])
        self.window = options.window
        self.same_dbs = not options.db_map and address.db is None  # each key goes to its own database
        # the RESTORE commands built in C of the dump being read (`run`)
        self.in_c: _restore_commands.RestoreCommands | None = None
        self.replace = options.existing is Existing.REPLACE
        selection = options.selection
        # None: every key is kept (no call a key)
        self.keeps = None if isinstance(selection, Selection) and selection == Selection() else selection.keeps

    # -- connections -------------------------------------------------------------------------------

    def _node_of(self, key: bytes) -> Node:
        return self.home if self.topology is None else self.topology.owner(key_hash_slot(key))

    def _connection(self, node: Node) -> Connection:
        connection = self.connections.get(node)
        if connection is None:
            standalone = self.topology is None
            address = self.address if standalone else self.address.at(*node)
            connection = self.seed if standalone else Connection(address, select=False)
            self.connections[node] = connection
            self.db[node] = address.db or 0
            self.pending[node] = deque()
        return connection

    def close(self) -> None:
        for connection in {self.seed, *self.connections.values()}:
            connection.close()

    def __enter__(self) -> Restore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the dump ----------------------------------------------------------------------------------

    def run(self, path: str) -> Summary:
        """Restores the selected keys of the dump at `path`; the summary counts every dump run so far."""
        with dumpfile.open(path) as dump:
            converter = self._converter(dump.header)
            if self.topology is not None:  # a server's own SELECT refuses a database it has not
                self._check_databases(dump)
        # what the target cannot hold, as a value's plain commands meet it too (a conversion's own)
        self.losses = converter if converter is not None else Losses(self.info.name, self.options.allow_lossy)
        with dumpfile.open(path, parsers=None if converter is None else "python") as dump:
            copy_from = None if dump.header.dialect == "dragonfly" else dump.source.buffer
            self.in_c = (_restore_commands.RestoreCommands(copy_from, self.target.version, self.replace)
                         if _restore_commands is not None and copy_from is not None else None)
            size = len(dump.source.buffer)
            now_ms = self.options.now_ms if self.options.now_ms is not None else int(time.time() * 1000)
            if (copy_from is not None and self.in_c is not None and converter is None and self.keeps is None
                    and self.topology is None and self.same_dbs):
                self._restore_copies(dump.keys(), copy_from, now_ms, size)
            else:
                for count, record in enumerate(dump.keys()):
                    self._restore_key(record, converter, copy_from, now_ms)
                    if self.progress is not None and not count % PROGRESS_EVERY:
                        self.progress(record.offset, size)
            self._drain()
        self.summary.dropped.update(self.losses.dropped)
        return self.summary

    def _converter(self, header: dumpfile.Header) -> Converter | None:
        """A conversion for the target, when some value of the dump may need another layout there."""
        return converter_for(header, self.target, self.options.allow_lossy)

    def _check_databases(self, dump: dumpfile.Dump) -> None:
        """Every selected key's database must be one the cluster has (0 alone, but Valkey 9's
        `cluster-databases`): read before anything is sent."""
        databases = self.info.databases
        outside = sorted({self._db_of(record) for record in dump.keys() if self.options.selection.keeps(record)}
                         - set(range(databases)))
        if not outside:
            return
        has = "database 0 only (cluster-databases 1)" if databases == 1 else f"databases 0 to {databases - 1}"
        raise UnwritableError(f"the keys would go to database {', '.join(map(str, outside))} and the cluster has "
                              f"{has}: give --db-map SRC:DST (or select databases with --db)")

    def _db_of(self, record: dumpfile.KeyRecord) -> int:
        mapped = self.options.db_map.get(record.db)
        if mapped is not None:
            return mapped
        return self.address.db if self.address.db is not None else record.db

    # -- a key -------------------------------------------------------------------------------------

    def _restore_key(self, record: dumpfile.KeyRecord, converter: Converter | None,
                     copy_from: DumpBuffer | None, now_ms: int) -> None:
        if self.keeps is not None and not self.keeps(record):
            return
        if record.expire_at_ms is not None and record.expire_at_ms <= now_ms:
            self.summary.skipped["already expired"] += 1
            return
        if converter is not None and not converter.holds(record, note=True):
            return
        written = record if converter is None else converter.key(record)
        self.summary.last_key = record.key
        node = self._node_of(record.key)
        db = record.db if self.same_dbs else self._db_of(record)
        if self.db.get(node) != db:
            self._select(node, db)
        if copy_from is not None and unchanged(record, written):
            size = payloads.size_copied(record)
            if size > self.max_payload:
                self._send_commands(node, record)
                return
            if self.in_c is not None and size <= payloads.SMALL:
                restore = self.in_c.command(record.offset, record.value_offset, record.offset + record.size,
                                            record.key, record.expire_at_ms, record.idle, record.freq)
                self._send(node, _Pending("RESTORE", record.key, (restore,), True))
                return
            payload = payloads.copied(record, copy_from, self.target.version)
        else:
            payload = payloads.written(written, self.target.version, self.target.valkey)
            if payload.size > self.max_payload:
                self._send_commands(node, written)
                return
        self._send(node, _Pending("RESTORE", record.key, restore_command(record, payload, self.replace), True))

    def _restore_copies(self, records: Iterator[dumpfile.KeyRecord], copy_from: DumpBuffer, now_ms: int,
                        size: int) -> None:
        """`_restore_key` of every key where each goes as it was read to its own database of one
        server: the RESTORE built in C, queued as its key alone (what `_read_reply` needs of it). A
        value too large for that goes by `_restore_key`."""
        assert self.in_c is not None
        node, command_of = self.home, self.in_c.command_of
        connection, queue, window, summary = self.connections[node], self.pending[node], self.window, self.summary
        most = min(payloads.SMALL, self.max_payload)
        for count, record in enumerate(records):
            if record.expire_at_ms is not None and record.expire_at_ms <= now_ms:
                summary.skipped["already expired"] += 1
                continue
            data = command_of(record, most)
            if data is None:
                self._restore_key(record, None, copy_from, now_ms)
                continue
            summary.last_key = record.key
            if self.db[node] != record.db:
                self._select(node, record.db)
            if len(queue) >= window:
                self._read_replies(node, min(REPLIES_AT_ONCE, len(queue)))
            connection.send(data)
            queue.append(record.key)
            if self.progress is not None and not count % PROGRESS_EVERY:
                self.progress(record.offset, size)

    def _select(self, node: Node, db: int) -> None:
        self._connection(node)
        self._send(node, _Pending("SELECT", None, [command("SELECT", db)], False))
        self.db[node] = db

    # -- sending and replies -----------------------------------------------------------------------

    def _send(self, node: Node, pending: _Pending) -> None:
        connection = self.connections.get(node) or self._connection(node)
        queue = self.pending[node]
        if len(queue) >= self.window:  # some replies read at once: a read a reply would cost more
            self._read_replies(node, min(REPLIES_AT_ONCE, len(queue)))
        connection.send(*pending.parts)
        queue.append(pending)

    def _read_replies(self, node: Node, count: int) -> None:
        """The next `count` replies of the node's connection: the OKs in a run at once."""
        queue, replies = self.pending[node], self.connections[node].replies
        while count > 0:
            oks = replies.oks(count)
            for _ in range(oks):
                sent = queue.popleft()
                self.summary.restored += sent.counts if isinstance(sent, _Pending) else 1
            count -= oks
            if count > 0:
                self._read_reply(node)
                count -= 1

    def _read_reply(self, node: Node) -> None:
        sent = self.pending[node].popleft()
        # a key alone: a RESTORE of `_restore_copies`, never redirected (one server)
        pending = sent if isinstance(sent, _Pending) else _Pending("RESTORE", sent, (), True)
        reply = self.connections[node].reply()
        if not isinstance(reply, ReplyError):
            self.summary.restored += pending.counts
            return
        moved = redirection(reply)
        if moved is not None and pending.key is not None:
            self._redirect(moved, pending)
        elif reply.code == "BUSYKEY" and self.options.existing is Existing.SKIP:
            self.summary.skipped["existing"] += 1
        elif self.failure is None:
            self.failure = ServerError(reply.text, self.connections[node].address.url,
                                       pending.name, pending.key)

    def _redirect(self, moved: Redirection, pending: _Pending) -> None:
        """MOVED: the topology is read again and the command resent to the slot's master; ASK: the
        one command is sent to the node named, after ASKING (clusterRedirectClient)."""
        if moved.kind == "MOVED":
            assert self.topology is not None
            self.topology = self.topology.updated(Topology.of(self._connection(moved.node)), moved)
            self._select(moved.node, 0)
            self._send(self._node_of(pending.key or b""), pending)
            return
        connection = self._connection(moved.node)
        connection.send(command("ASKING"), *pending.parts)
        asking, reply = connection.reply(), connection.reply()
        for answer, name in ((asking, "ASKING"), (reply, pending.name)):
            if isinstance(answer, ReplyError) and self.failure is None:
                self.failure = ServerError(answer.text, connection.address.url, name, pending.key)
        self.summary.restored += pending.counts and not isinstance(reply, ReplyError)

    def _drain(self) -> None:
        """Reads every reply not read yet; raises the first refusal met."""
        while any(self.pending.values()):  # a redirection queues its command again, maybe on a node drained
            for node, queue in list(self.pending.items()):
                self.connections[node].flush()
                self._read_replies(node, len(queue))
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    # -- a key too large for one RESTORE -----------------------------------------------------------

    def _send_commands(self, node: Node, record: dumpfile.KeyRecord) -> None:
        """The plain commands that build the value, under a name in the key's slot, then RENAME (or
        RENAMENX) over the key: the key appears whole, or not at all. Sent after every reply before
        is read (an existing key is then known), the building commands pipelined."""
        self._drain()
        building = name_in_slot(key_hash_slot(record.key), b"rdbspec-restore:" + record.key)
        self._send(node, _Pending("DEL", None, [command("DEL", building)], counts=False))
        ahead = 0
        for args in commands.key_commands(record, min(self.max_payload, BUILD_BYTES), self.server, self.losses,
                                          name=building, expiry=False):
            parts = command_parts(*args)
            self._send(node, _Pending(args[0].decode(), record.key, parts, counts=False))
            ahead += sum(map(len, parts))
            if ahead >= BUILD_BYTES:
                self._drain()
                ahead = 0
        if record.expire_at_ms is not None:
            self._send(node, _Pending("PEXPIREAT", record.key, [command("PEXPIREAT", building, record.expire_at_ms)],
                                        counts=False))
        self._drain()
        rename = "RENAMENX" if self.options.existing is not Existing.REPLACE else "RENAME"
        connection = self._connection(node)
        answer = connection.call(rename, building, record.key)
        if answer == 0:  # RENAMENX onto an existing key
            connection.call("DEL", building)
            if self.options.existing is Existing.SKIP:
                self.summary.skipped["existing"] += 1
                return
            raise ServerError("BUSYKEY Target key name already exists.", connection.address.url, rename, record.key)
        self.summary.restored += 1
        self.summary.chunked += 1


def restore_command(record: dumpfile.KeyRecord, payload: payloads.Payload,
                    replace: bool) -> list[bytes | memoryview]:
    """`RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s | FREQ f]`: one piece for a payload of
    one, else the payload's pieces as they are (never joined)."""
    options = [b"REPLACE"] if replace else []
    if record.expire_at_ms is not None:
        options.append(b"ABSTTL")
    if record.idle is not None:
        options += (b"IDLETIME", b"%d" % record.idle)
    elif record.freq is not None:
        options += (b"FREQ", b"%d" % record.freq)
    ttl = b"%d" % (record.expire_at_ms or 0)
    key = record.key
    head = b"*%d\r\n$7\r\nRESTORE\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n" % (
        4 + len(options), len(key), key, len(ttl), ttl, payload.size)
    tail = payload.footer + CRLF + b"".join(map(bulk, options))
    if len(payload.parts) == 1:
        return [head + payload.parts[0] + tail]
    return [head, *payload.parts, tail]


def _target_of(info: ServerInfo) -> Target:
    """The newest target generation the server loads (`rdbspec.server.versions.target_of`)."""
    name = target_of(info.family, info.version)
    if name is None:
        raise UnwritableError(f"{info.name} loads none of the RDB versions written ({', '.join(sorted(TARGETS))})")
    return TARGETS[name]


def converter_for(header: dumpfile.Header, target: Target, allow_lossy: bool) -> Converter | None:
    """A conversion for `target`, when some value of a dump of `header` may need another layout there."""
    if _loads_as_is(header, target):
        return None
    return Converter.for_target(target, allow_lossy)


def unchanged(record: dumpfile.KeyRecord, written: dumpfile.KeyRecord) -> bool:
    """Whether the key as the target gets it (`written`: converted) is `record` as it was read: its
    payload is then its value's bytes as read (`payload.copied`). Without a conversion, every key."""
    return written is record or (written.rdb_type == record.rdb_type and written._body.value is record._body.value)


def _loads_as_is(header: dumpfile.Header, target: Target) -> bool:
    """Whether the server of `target` loads every value of a dump of `header` as it is: a dump of
    its magic up to its version, or of Redis's layouts it loads (Valkey 9: Redis's up to RDB 11)."""
    if header.dialect == "dragonfly":
        return False
    if header.magic.startswith("VALKEY"):
        return target.valkey and header.version <= target.version
    return header.version <= target.layouts
