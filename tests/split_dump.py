"""A dump worth splitting, written by a real server: every type in several databases (seeded
content of `populate`), expiries, and one stream of 30,000 entries in 20-entry nodes with
deleted entries, consumer groups and pending entries. About 0.9 MB."""

from __future__ import annotations

from pathlib import Path

import servers
from populate import populate

SEED = 5150
STREAM_ENTRIES = 30_000


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
        for i in range(2000):
            pipe.set(f"tail:{i}", "v" * (i % 90))
            if i % 3 == 0:
                pipe.pexpire(f"tail:{i}", 10_000_000 + i)
        pipe.execute()
        return server.save(copy_to=path)
