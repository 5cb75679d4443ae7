"""A dump worth splitting, written by a real server: every type in several databases (seeded
content of `populate`), expiries, one stream of 30,000 entries in 20-entry nodes with deleted
entries, consumer groups and pending entries, and a big value of each kind a reader may cut into
parts (`BIG_VALUES`: a hashtable hash, set and skiplist sorted set, a quicklist), each over
64 kB. About 1.4 MB."""

from __future__ import annotations

from pathlib import Path

from tests.support import servers
from tests.support.populate import populate

SEED = 5150
STREAM_ENTRIES = 30_000
BIG_VALUES = (b"big:stream", b"big:hash", b"big:set", b"big:zset", b"big:list")


def build(path: Path) -> Path:
    """Writes the dump to `path` with Debian's redis-server (skips the test when it is absent)."""
    config = {"stream-node-max-entries": 20, "stream-node-max-bytes": 0}
    with servers.RedisServer(servers.binary_for("debian"), config) as server:
        client = server.client()
        populate(client, SEED, dbs=(0, 2, 5), functions=False)
        pipe = client.pipeline(transaction=False)
        for i in range(STREAM_ENTRIES):
            fields = {"n": i, "kind": "even" if i % 2 == 0 else "odd", "payload": "x" * (i % 50)}
            if i % 7 == 0:
                fields["extra"] = i * 3  # not the master fields: an entry with its own fields
            pipe.xadd("big:stream", fields, id=f"{1_700_000_000_000 + i // 3}-{i % 3}")
        pipe.execute()
        pipe.xdel("big:stream", *[f"{1_700_000_000_000 + i // 3}-{i % 3}" for i in range(5, STREAM_ENTRIES, 97)])
        pipe.xgroup_create("big:stream", "readers", id="0")
        pipe.xgroup_create("big:stream", "late", id="$")
        pipe.execute()
        client.xreadgroup("readers", "alice", {"big:stream": ">"}, count=500)
        client.xreadgroup("readers", "bob", {"big:stream": ">"}, count=300)
        for i in range(4000):
            pipe.hset("big:hash", f"field:{i}", "v" * (i % 40))
            pipe.sadd("big:set", f"member:{i}:" + "m" * (i % 30))
            pipe.zadd("big:zset", {f"member:{i}:" + "z" * (i % 20): i / 7})
        pipe.rpush("big:list", *(f"{i * 2654435761 % 1000003:x}-{i}-{i * 40503 % 65537:x}" for i in range(20_000)))
        pipe.execute()
        for i in range(2000):
            pipe.set(f"tail:{i}", "v" * (i % 90))
            if i % 3 == 0:
                pipe.pexpire(f"tail:{i}", 10_000_000 + i)
        pipe.execute()
        return server.save(copy_to=path)
