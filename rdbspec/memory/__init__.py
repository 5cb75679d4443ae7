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

from collections.abc import Iterable
from dataclasses import dataclass

from ..read import dumpfile
from ..server.versions import parse_version
from ..write.layouts import ServerConfig
from .allocators import ALLOCATORS
from .redis import RedisModel
from .valkey import ValkeyModel

__all__ = ["ALLOCATORS", "RedisModel", "Server", "ValkeyModel", "model", "model_for", "parse_server", "server_of"]

VALKEY_HASHTABLES = (8, 1)  # the Valkey version whose objects hold their keys (valkey src/object.c)


@dataclass(frozen=True)
class Server:
    """A server family ("redis" or "valkey") and version (major, minor)."""

    name: str
    version: tuple[int, int]

    def __str__(self) -> str:
        return f"{self.name}-{self.version[0]}.{self.version[1]}"


def parse_server(text: str) -> Server:
    """`7.0`, `redis-7.0` or `valkey-9.1`."""
    name, _, number = text.strip().lower().rpartition("-")
    name = name or "redis"
    try:
        version = parse_version(number)
    except ValueError:
        raise ValueError(f"not a server version like 7.0 or valkey-9.1: {text!r}") from None
    if name not in ("redis", "valkey"):
        raise ValueError(f"not a server version like 7.0 or valkey-9.1: {text!r}")
    return Server(name, version)


def server_of(aux: Iterable[tuple[bytes, bytes]], rdb_version: int) -> Server:
    """The server that wrote the dump (rdbSaveInfoAuxFields): `valkey-ver` (Valkey 8.0 and
    later, which write `redis-ver` 7.2.4 too), else `redis-ver`, else the oldest Redis writing
    its RDB version."""
    fields = dict(aux)
    for field, name in ((b"valkey-ver", "valkey"), (b"redis-ver", "redis")):
        written = fields.get(field)
        if written is not None:
            try:
                return parse_server(f"{name}-{written.decode('ascii')}")
            except (ValueError, UnicodeDecodeError):
                pass
    return Server("redis", (6, 0) if rdb_version <= 9 else (7, 0) if rdb_version == 10 else (7, 2))


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
