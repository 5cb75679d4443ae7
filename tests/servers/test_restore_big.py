"""Big keys through `rdbspec restore` (issue 30): a hash of 2,000,000 fields and a stream of
1,000,000 entries with consumer groups (pending entries, acknowledged ones, deleted entries still
pending, an idle consumer), made by a live Redis 7.0 and saved, restored into another with
`--max-payload 1mb`, so that each goes as the plain commands that build it (HSET, XADD, XSETID,
XGROUP, XCLAIM...) under a name of its own, renamed over the key at the end: every key's DEBUG
DIGEST-VALUE equals the source server's, each group's XINFO and XPENDING too, and the restore's
peak RSS stays under 300 MB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import servers
from tests.support.servers import RedisServer, binary_for

FIELDS, ENTRIES = 2_000_000, 1_000_000
RSS_LIMIT_KB = 300 * 1024
BATCH = 1000


def _fill(server: RedisServer) -> None:
    """The big keys, sent as RESP through redis-cli --pipe (the fastest way a test has)."""
    lines = bytearray()

    def command(*args: bytes) -> None:
        lines.extend(b"*%d\r\n" % len(args))
        for arg in args:
            lines.extend(b"$%d\r\n%s\r\n" % (len(arg), arg))

    for start in range(0, FIELDS, BATCH):
        pairs = [part for n in range(start, start + BATCH) for part in (b"field:%d" % n, b"value %d" % (n * 7))]
        command(b"HSET", b"big:hash", *pairs)
    for n in range(ENTRIES):
        command(b"XADD", b"big:stream", b"%d-%d" % (1_700_000_000_000 + n // 3, n % 3), b"n", b"%d" % n,
                b"payload", b"x" * (n % 17))
    command(b"XGROUP", b"CREATE", b"big:stream", b"readers", b"0")
    command(b"XGROUP", b"CREATE", b"big:stream", b"late", b"$")
    for consumer in (b"alice", b"bob"):
        command(b"XREADGROUP", b"GROUP", b"readers", consumer, b"COUNT", b"20000", b"STREAMS", b"big:stream", b">")
    command(b"XGROUP", b"CREATECONSUMER", b"big:stream", b"readers", b"idle")
    command(b"XACK", b"big:stream", b"readers", *[b"%d-%d" % (1_700_000_000_000 + n // 3, n % 3)
                                                  for n in range(0, 20000, 2)])
    command(b"XDEL", b"big:stream", *[b"%d-%d" % (1_700_000_000_000 + n // 3, n % 3) for n in range(1, 30000, 10)])
    command(b"SET", b"small", b"one")
    done = subprocess.run(["redis-cli", "-p", str(server.port), "--pipe"], input=bytes(lines), capture_output=True,
                          check=True)
    assert b"errors: 0" in done.stdout, done.stdout


def _state(server: RedisServer) -> dict:
    with server.client() as client:
        out = {key: client.execute_command("DEBUG", "DIGEST-VALUE", key)[0] for key in client.scan_iter()}
        out["groups"] = repr(client.execute_command("XINFO", "GROUPS", b"big:stream"))
        # each pending entry but its idle time (the time since its delivery, which the restore keeps: XCLAIM TIME)
        out["pending"] = [[(entry["message_id"], entry["consumer"], entry["times_delivered"]) for entry in
                           client.xpending_range(b"big:stream", group, "-", "+", 100_000)]
                          for group in (b"readers", b"late")]
        out["consumers"] = sorted((c["name"], c["pending"]) for c in client.xinfo_consumers(b"big:stream",
                                                                                                b"readers"))
    return out


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    with RedisServer(binary_for("debian"), {"stream-node-max-entries": 100}) as source:
        _fill(source)
        state = _state(source)
        path = source.save(copy_to=tmp_path_factory.mktemp("big") / "big.rdb")
    return path, state


def test_big_keys_go_as_plain_commands_with_flat_memory(big_dump: tuple[Path, dict], redis_server_factory) -> None:
    path, state = big_dump
    target = redis_server_factory(binary_for("debian"))
    measured = subprocess.run(
        [sys.executable, "-c", "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)",
         sys.executable, "-m", "rdbspec", "restore", str(path), "--to", f"redis://127.0.0.1:{target.port}",
         "--max-payload", "1mb"], capture_output=True, text=True, timeout=600)
    assert measured.returncode == 0, measured.stderr
    assert "restored 3 keys into Redis 7.0" in measured.stderr and "(2 as plain commands)" in measured.stderr
    assert int(measured.stdout.split()[-1]) <= RSS_LIMIT_KB, measured.stdout
    assert _state(target) == state
    with target.client() as client:  # nothing left of the names the values were built under
        assert sorted(client.scan_iter()) == [b"big:hash", b"big:stream", b"small"]


redis_server_factory = servers.redis_server_factory
