"""The replica's side of a full resync (`rdbspec.net.replica`) against a scripted master on
127.0.0.1: what real servers do not show on demand — a server older than PSYNC (SYNC after its
`-ERR`), keep-alive newlines before the RDB, the diskless end mark split across reads, an RDB
version rdbspec does not read, and bytes that are no replication stream."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rdbspec import open as rdbspec_open
from rdbspec.errors import EXIT_CODES, SyncRefusedError
from rdbspec.net.connection import Address
from rdbspec.net.replica import take_rdb

SAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "sample.rdb").read_bytes()
MARK = b"0123456789abcdef0123456789abcdef01234567"  # 40 characters, as the master's random mark


class Master:
    """A master that answers each command with the next of `answers` (bytes written in pieces,
    a list item a write), and records the commands it got."""

    def __init__(self, answers: dict[bytes, list[bytes]]):
        self.answers = answers
        self.commands: list[list[bytes]] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn, conn.makefile("rb") as reader:
            while True:
                line = reader.readline()
                if not line:
                    return
                words = []
                for _ in range(int(line[1:])):
                    size = int(reader.readline()[1:])
                    words.append(reader.read(size + 2)[:-2])
                self.commands.append(words)
                for piece in self.answers.get(words[0].upper(), [b"-ERR unknown command\r\n"]):
                    conn.sendall(piece)
                if words[0].upper() in (b"SYNC", b"PSYNC") and not self.answers[words[0].upper()][0].startswith(b"-"):
                    return  # the RDB sent: the link is done

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.listener.close()
        self.thread.join(5)


INFO = b"# Server\r\nredis_version:7.0.0\r\n"
HANDSHAKE = {b"REPLCONF": [b"+OK\r\n"], b"INFO": [b"$%d\r\n%s\r\n" % (len(INFO), INFO)]}


@pytest.fixture
def master() -> Iterator[type[Master]]:
    made: list[Master] = []

    def make(answers: dict[bytes, list[bytes]]) -> Master:
        made.append(Master({**HANDSHAKE, **answers}))
        return made[-1]
    yield make  # type: ignore[misc]
    for m in made:
        m.close()


def test_sized_rdb_after_keepalives(master) -> None:
    m = master({b"PSYNC": [b"\n\n+FULLRESYNC " + b"a" * 40 + b" 0\r\n", b"\n\n", b"$%d\r\n" % len(SAMPLE),
                           SAMPLE[:1000], SAMPLE[1000:], b"*1\r\n$4\r\nPING\r\n"]})
    out = io.BytesIO()
    assert take_rdb(Address.parse(m.url), out) == len(SAMPLE)
    assert out.getvalue() == SAMPLE  # not the replication stream after it
    assert m.commands[0] == [b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"]
    assert m.commands[-1] == [b"PSYNC", b"?", b"-1"]


def test_diskless_rdb_whose_mark_comes_in_pieces(master) -> None:
    m = master({b"PSYNC": [b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n$EOF:" + MARK + b"\r\n", SAMPLE,
                           MARK[:7], MARK[7:]]})
    out = io.BytesIO()
    assert take_rdb(Address.parse(m.url), out) == len(SAMPLE)
    assert out.getvalue() == SAMPLE


def test_sync_when_psync_is_unknown(master) -> None:
    """A server older than PSYNC answers it -ERR, and the replica asks SYNC
    (slaveTryPartialResynchronization's PSYNC_NOT_SUPPORTED)."""
    m = master({b"PSYNC": [b"-ERR unknown command 'PSYNC'\r\n"], b"SYNC": [b"$%d\r\n" % len(SAMPLE), SAMPLE]})
    out = io.BytesIO()
    take_rdb(Address.parse(m.url), out)
    assert out.getvalue() == SAMPLE
    assert [c[0] for c in m.commands][-2:] == [b"PSYNC", b"SYNC"]


def test_a_refused_sync(master) -> None:
    m = master({b"PSYNC": [b"-ERR unknown command 'PSYNC'\r\n"], b"SYNC": [b"-ERR unknown command 'SYNC'\r\n"]})
    with pytest.raises(SyncRefusedError, match="does not send its RDB to a replica .SYNC: ERR unknown command"):
        take_rdb(Address.parse(m.url), io.BytesIO())


def test_an_rdb_version_rdbspec_does_not_read(master) -> None:
    """The usual error of a dump of an unknown version, exit 3, naming the server."""
    rdb = b"REDIS0099" + SAMPLE[9:]
    m = master({b"PSYNC": [b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n$%d\r\n" % len(rdb), rdb]})
    done = subprocess.run([sys.executable, "-m", "rdbspec", "keys", m.url], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == EXIT_CODES["corrupt"], done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"rdbspec: {m.url}: ") and "99" in line, line


def test_no_replication_stream(master) -> None:
    m = master({b"PSYNC": [b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n:12\r\n"]})
    with pytest.raises(ConnectionError, match="not a replication stream"):
        take_rdb(Address.parse(m.url), io.BytesIO())


def test_the_library_reads_what_came(master) -> None:
    m = master({b"PSYNC": [b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n$%d\r\n" % len(SAMPLE), SAMPLE]})
    with rdbspec_open(m.url) as dump, rdbspec_open(Path(__file__).resolve().parents[2] / "examples" / "sample.rdb") \
            as file:
        assert [(r.db, r.key) for r in dump.keys()] == [(r.db, r.key) for r in file.keys()]
