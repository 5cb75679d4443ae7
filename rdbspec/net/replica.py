"""A server's RDB taken as a replica takes it, for reading a live server (issue 31).

The replica's side of a full resynchronisation (redis src/replication.c): after AUTH, the
handshake syncWithMaster sends (`REPLCONF capa eof capa psync2`: the RDB may come in the
diskless form, and the master may be Redis 4+), then `PSYNC ? -1` (no replication ID known, so a
full resync: `+FULLRESYNC <replid> <offset>`). A server that does not know PSYNC answers it with
`-ERR`, and the replica tries `SYNC` (slaveTryPartialResynchronization: PSYNC_NOT_SUPPORTED);
`-NOMASTERLINK` (a replica whose own master is gone) and `-LOADING` are refusals, as there.

`REPLCONF rdb-only 1` (Redis 7.0+, Valkey; replconfCommand, what `redis-cli --rdb` sends) asks
for the snapshot alone, so the master keeps no replication buffer for us; an older server
refuses the option and the link is closed as soon as the RDB is read all the same.

While the master prepares the RDB it sends a bare newline a second (replicationCron, to
replicas waiting for the BGSAVE), which the reader skips. Then the RDB comes in one of the two
forms readSyncBulkPayload reads: `$<length>\\r\\n` and that many bytes (a saved file sent), or
`$EOF:<40 characters>\\r\\n`, the bytes, and the same 40 characters (diskless sync: the length is
not known in advance; the transfer ends when the bytes received end with the mark).

Errors: a server that will not send its RDB is a `SyncRefusedError` (exit 8) that says so and
suggests a backup file; a connection refused or lost (the byte of the RDB reached in its text)
is a `ConnectionError` naming the URL (exit 6); a wrong password the `ServerError` of AUTH."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..errors import ServerError, SyncRefusedError
from .connection import Address, Connection, info_fields
from .resp import command

EOF_MARK_BYTES = 40  # RDB_EOF_MARK_SIZE (redis src/server.h): the diskless form's end mark
RDB_READ = 1 << 20  # bytes asked of the socket at a time while the RDB comes
REPLICA_TIMEOUT_S = 60.0  # redis.conf repl-timeout's default: the master sends a newline a second before it
REFUSALS = (b"NOMASTERLINK", b"LOADING", b"MASTERDOWN")  # PSYNC errors the replica does not answer with SYNC

# (bytes of the RDB received, its length or None in the diskless form)
Progress = Callable[[int, "int | None"], None]


class Writable(Protocol):
    """Where the RDB's bytes go as they come: a file, or a reader parsing them as they arrive."""

    def write(self, data: bytes | bytearray, /) -> object: ...


def take_rdb(address: Address, out: Writable, progress: Progress | None = None,
             timeout: float = REPLICA_TIMEOUT_S) -> int:
    """Writes the RDB of the server at `address` into `out`, as a replica receives it, and closes
    the link as soon as the RDB is read; returns its length."""
    with Connection(address, timeout, select=False) as connection:
        link = _Link(connection)
        length, mark = link.start()
        return link.copy(out, length, mark, progress)


class _Link:
    """The replication link's bytes after the handshake: lines, then the RDB."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self.url = connection.address.url
        self.buffer = bytearray()

    def start(self) -> tuple[int | None, bytes | None]:
        """The handshake, up to the RDB's header: (its length, None) or (None, its end mark)."""
        connection = self.connection
        try:
            connection.call("REPLCONF", "capa", "eof", "capa", "psync2")
        except ServerError as err:
            raise SyncRefusedError(err.reply, self.url, "REPLCONF") from None
        try:
            connection.call("REPLCONF", "rdb-only", "1")
        except ServerError:
            pass  # before Redis 7.0: no such option (see the module doc)
        version = self._valkey_version()
        if version is not None:
            connection.call("REPLCONF", "version", version)
        self.buffer += connection.replies.unread()
        header = self._ask("PSYNC", "?", "-1")
        if header.startswith(b"+FULLRESYNC"):
            header = self._line()
        elif header.startswith(b"-"):  # not known: a server older than PSYNC (a refusal raised in _ask)
            header = self._ask("SYNC")
        return self._header(header)

    def _valkey_version(self) -> str | None:
        """A Valkey server's version, which the replica announces as its own: Valkey 9 writes its
        newer layouts (VALKEY080) only to a replica that says it loads them, and fails the sync
        of a key RDB 11 cannot hold for one that says nothing ("Can't store key ... in RDB
        version 11"). None for Redis (no such REPLCONF), or when INFO is denied."""
        try:
            fields = info_fields(self.connection.call("INFO", "server"))
        except ServerError:
            return None
        return fields.get("valkey_version")

    def _ask(self, *args: str) -> bytes:
        """The first line the server answers `args` with; an error reply other than PSYNC's
        "not supported" is a refusal."""
        self.connection.send(command(*args))
        self.connection.flush()
        line = self._line()
        if line.startswith(b"-") and (args[0] == "SYNC" or line[1:].startswith(REFUSALS)):
            raise SyncRefusedError(line[1:].decode(errors="replace"), self.url, args[0])
        return line

    def _header(self, line: bytes) -> tuple[int | None, bytes | None]:
        if line.startswith(b"$EOF:") and len(line) - len(b"$EOF:") == EOF_MARK_BYTES:
            return None, line[len(b"$EOF:"):]
        if line.startswith(b"$") and line[1:].isdigit():
            return int(line[1:]), None
        raise ConnectionError(None, f"not a replication stream: the server answered {line[:60]!r}", self.url)

    def _line(self) -> bytes:
        """The next line that is not a keep-alive newline, without its line end."""
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                self._fill("the server closed the connection before sending its RDB")
                continue
            line = bytes(self.buffer[:end]).rstrip(b"\r")
            del self.buffer[:end + 1]
            if line:
                return line

    def _fill(self, closed: str) -> None:
        data = self.connection.receive(RDB_READ)
        if not data:
            raise ConnectionError(None, closed, self.url)
        self.buffer += data

    def copy(self, out: Writable, length: int | None, mark: bytes | None, progress: Progress | None) -> int:
        """The RDB's bytes into `out`: `length` of them, or up to the end `mark`."""
        got = 0
        tail = b""  # the diskless form's last bytes, held back until they are known not to be the mark
        while length is None or got < length:
            if not self.buffer:
                closed = f"the server closed the connection at byte {got} of its RDB"
                self._fill(closed + (f" of {length} bytes" if length is not None else " (diskless, length unknown)"))
            piece: bytes | bytearray = self.buffer if length is None else self.buffer[:length - got]
            if mark is not None:
                data = tail + piece
                if data.endswith(mark):
                    out.write(data[:-EOF_MARK_BYTES])
                    got += len(data) - EOF_MARK_BYTES
                    if progress is not None:
                        progress(got, got)  # the last byte: the length is known now
                    return got
                tail = data[-EOF_MARK_BYTES:]
                piece = data[:-EOF_MARK_BYTES]
            out.write(piece)
            got += len(piece)
            self.buffer = bytearray()
            if progress is not None:
                progress(got, length)
        return got
