"""What a key costs the server that loads the dump: the bytes `MEMORY USAGE key SAMPLES 0`
answers there (issue 16), computed from the value and the form it is stored in, for the server
that wrote the dump (its AUX fields) or the one named.

Two families of servers count differently: `redis.RedisModel` (Redis 6.0 to 8.x, Valkey 8.0:
the value, the key's sds and a dictEntry) and `valkey.ValkeyModel` (Valkey 8.1 and later: the
object holds its key, collections are hashtables of 64-byte buckets). A value neither sizes
(`redis.RedisModel.sized`: Valkey 9.2's path hash, Redis 8.8's sparse array, Redis 8.10's
template hashes) costs None: `keys --memory` writes null for it and
the sums (`prefixes`, the report) count it as 0 bytes.

Imports: the reading side, the server's rules and `rdbspec.write.layouts` (the encoding the server
gives a value, which decides its cost).
"""

from __future__ import annotations

from ..read import dumpfile
from ..server.versions import Server, parse_server, server_of
from ..write.layouts import ServerConfig
from .allocators import ALLOCATORS
from .redis import RedisModel
from .valkey import ValkeyModel

__all__ = ["ALLOCATORS", "RedisModel", "Server", "ValkeyModel", "model", "model_for", "parse_server", "server_of"]

VALKEY_HASHTABLES = (8, 1)  # the Valkey version whose objects hold their keys (valkey src/object.c)


def model(server: Server, allocator: str = "jemalloc", config: ServerConfig | None = None) -> RedisModel:
    """The model of `server` built with `allocator`, under the limits of `config`."""
    config = config or ServerConfig()
    if server.name == "valkey":
        if server.version >= VALKEY_HASHTABLES:
            return ValkeyModel(server.version, allocator, config)
        return RedisModel((7, 2), allocator, config)  # Valkey 8.0 counts as Redis 7.2, its base
    return RedisModel(server.version, allocator, config)


def model_for(dump: dumpfile.Dump, server: Server | None = None, allocator: str = "jemalloc") -> RedisModel:
    """The model of the server that wrote `dump`, or of `server`."""
    return model(server or server_of(dump.aux, dump.header.version), allocator)
