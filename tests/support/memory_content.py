"""Seeded keys of varied sizes for the memory test (issue 16): each type across its encodings'
limits, so that `MEMORY USAGE` on the server that loads their dump checks every path of
`rdbspec.memory`: integers and strings of 0 to 100,000 bytes; lists of one node to hundreds;
sets as intsets of every width, hashtables and intsets turned into hashtables by a later
member; hashes and sorted sets small and large, and small ones turned large by one long
value; streams with many nodes, consumer groups and pending entries (sparse and dense IDs,
so the radix trees branch at every depth)."""

from __future__ import annotations

import random

import redis


def _text(rng: random.Random, n: int) -> bytes:
    return bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789:_-") for _ in range(n))


def _member(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.3:
        return str(rng.randint(-10 ** rng.randint(1, 18), 10 ** rng.randint(1, 18))).encode()
    return _text(rng, rng.choice((1, 5, 12, 30, 64, 65, 200)))


def write(client: redis.Redis, seed: int, scale: int = 1) -> int:
    """Writes the keys; returns how many."""
    rng = random.Random(seed)
    pipe = client.pipeline(transaction=False)
    count = 0
    for i in range(40 * scale):  # strings: integers, EMBSTR, RAW, every sds header
        n = rng.choice((0, 1, 19, 20, 21, 44, 45, 100, 255, 256, 1000, 4096, 65535, 65536, 100_000))
        value = str(rng.randint(-(1 << 63), (1 << 63) - 1)).encode() if i % 5 == 0 else _text(rng, n)
        pipe.set(b"str:%d:" % i + _text(rng, rng.choice((1, 20, 40, 300))), value)
        count += 1
    for i in range(12 * scale):  # lists
        n = rng.choice((1, 3, 50, 128, 129, 600, 5000))
        pipe.rpush(b"list:%d" % i, *[_member(rng) for _ in range(n)])
        count += 1
    for i in range(20 * scale):  # sets
        n = rng.choice((1, 4, 5, 100, 512, 513, 2000))
        kind = i % 4
        if kind == 0:  # intset, one width
            bits = rng.choice((15, 31, 62))
            members = [str(rng.randint(-(1 << bits), 1 << bits)).encode() for _ in range(n)]
        elif kind == 1:  # strings
            members = [_text(rng, rng.choice((3, 10, 40, 70))) for _ in range(n)]
        else:  # integers then strings (the intset turns into a hashtable on the first string)
            ints = [str(rng.randint(0, 10 ** 9)).encode() for _ in range(rng.randint(1, n))]
            members = ints + [_text(rng, 8) for _ in range(n - len(ints))]
        pipe.sadd(b"set:%d" % i, *members)
        count += 1
    for i in range(16 * scale):  # hashes
        n = rng.choice((1, 10, 128, 129, 512, 513, 3000))
        pairs = {_text(rng, rng.choice((2, 8, 20))) + b"%d" % j: _member(rng) for j in range(n)}
        if i % 3 == 0 and n <= 512:  # a long value somewhere: the listpack turns into a hashtable
            field = rng.choice(list(pairs))
            pairs[field] = _text(rng, 100)
        pipe.hset(b"hash:%d" % i, mapping=pairs)
        count += 1
    for i in range(12 * scale):  # sorted sets
        n = rng.choice((1, 10, 128, 129, 1000))
        pipe.zadd(b"zset:%d" % i, {_member(rng) + b"%d" % j: rng.choice((rng.random() * 1e6, rng.randint(-99, 99)))
                                  for j in range(n)})
        count += 1
    for i in range(10 * scale):  # streams, with groups and pending entries
        key = b"stream:%d" % i
        entries = rng.choice((1, 50, 101, 700, 3000))
        ms = 1_700_000_000_000 + rng.randint(0, 10 ** 6)
        for j in range(entries):
            ms += rng.choice((0, 1, 1, 7, 1000, 1 << 20))
            fields = {b"f%d" % (j % 3): _member(rng), b"n": b"%d" % j}
            pipe.xadd(key, fields, id=b"%d-%d" % (ms, j))
        pipe.execute()
        for g in range(rng.choice((0, 1, 3))):
            group = b"g%d" % g
            client.xgroup_create(key, group, id="0")
            for c in range(rng.choice((1, 2, 5))):
                client.xreadgroup(group, b"consumer-%d-" % c + _text(rng, rng.randint(0, 30)), {key: ">"},
                                  count=rng.choice((1, 10, 100, 1000)))
            pending = client.xpending_range(key, group, "-", "+", count=entries)
            acked = [p["message_id"] for p in pending if rng.random() < 0.3]
            if acked:
                client.xack(key, group, *acked)
        count += 1
    pipe.execute()
    return count
