"""Server generations: a server version (`Version`, "X.Y" as `parse_version` reads it), a server
(`Server`: its family and version, "valkey-9.1" as `parse_server` reads it; `server_of` the one
that wrote a dump), and the generations a dump can be rewritten for (`rdbspec rewrite --target
NAME`, the pipeline's `--dumps-target`): the RDB version and magic each one's server writes
(`Target`), and the newest of them a live server loads (`target_of`). A module of its own, so that
the command line names them without loading the writers (`rdbspec.write.convert`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# a server release as (major, minor): what the rules that changed between releases compare
Version = tuple[int, int]


def parse_version(text: str) -> Version:
    """`7.2` or `7.2.4` as (7, 2): the major and minor of a server version; ValueError otherwise."""
    parts = text.strip().split(".")
    if len(parts) < 2 or not all(part.isdigit() and part.isascii() for part in parts[:2]):
        raise ValueError(f"not a version X.Y: {text!r}")
    return int(parts[0]), int(parts[1])


@dataclass(frozen=True)
class Server:
    """A server family ("redis" or "valkey": `SERVERS`) and version (major, minor)."""

    name: str
    version: Version

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
    if name not in SERVERS:
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


@dataclass(frozen=True)
class Target:
    """What a target's server writes: RDB `version`, under Valkey's magic with `valkey` (valkey
    src/rdb.h rdbUseValkeyMagic: VALKEY for the versions above 79, which Valkey 9 writes; Valkey 8
    and older write REDIS0011)."""

    version: int
    valkey: bool = False

    @property
    def magic(self) -> str:
        """The file's first 9 bytes (rdbSaveRio): "REDIS%04d", or "VALKEY%03d"."""
        return ("VALKEY%03d" if self.valkey else "REDIS%04d") % self.version

    @property
    def layouts(self) -> int:
        """The Redis RDB version up to which its server loads Redis's value layouts: its own, or
        for Valkey 9 the last Valkey shares with Redis (`VALKEY_9_LAYOUTS`)."""
        return VALKEY_9_LAYOUTS if self.valkey else self.version


# what each target's server writes (redis src/rdb.h RDB_VERSION of that release; Valkey 8.0 writes
# REDIS0011, Valkey 9.0 and 9.1 VALKEY080: valkey src/rdb.h)
VALKEY_9_RDB = 80
TARGETS: dict[str, Target] = {"redis-6.0": Target(9), "redis-6.2": Target(9), "redis-7.0": Target(10),
                              "redis-7.2": Target(11), "redis-7.4": Target(12), "redis-8.0": Target(12),
                              "valkey-8.0": Target(11), "valkey-9.0": Target(VALKEY_9_RDB, valkey=True),
                              "valkey-9.1": Target(VALKEY_9_RDB, valkey=True)}
OLDEST, NEWEST = 9, 12  # the versions of the REDIS magic written
# the Redis RDB version whose value layouts Valkey 9 loads beside its own HASH_2: the last one
# Valkey shares with Redis (valkey src/rdb.h: RDB 11, Redis 7.2's; its loader refuses the types
# Redis numbered after it, 22 to 243 being Valkey's own or foreign: rdbLoadObject)
VALKEY_9_LAYOUTS = 11
# the RDB version from which a Valkey dump holds path hashes (valkey src/rdb.c rdbGetObjectType:
# none below 81, VALKEY081 being what Valkey 9.2 writes)
PATH_HASH_RDB = 81
# Valkey began as a fork of Redis 7.2.4: its 7.2 loads what Redis 7.2 and older write
VALKEY_FORKED_FROM: Version = (7, 2)
SERVERS = ("redis", "valkey")  # the server families, as INFO tells them (valkey_version, else redis_version)


def _family_release(name: str) -> tuple[str, Version]:
    family, _, release = name.partition("-")
    return family, parse_version(release)


def target_of(server: str, version: Version) -> str | None:
    """The name of the newest target (by its server's release) that a live `server` ("redis" or
    "valkey") of `version` loads: its family's newest release not after `version` (a server
    loads the dumps of its own older releases; Redis 8.4 those of `redis-8.0`), for Valkey
    also Redis's releases up to the one it forked from; None when it loads none of them."""
    if server not in SERVERS:
        raise ValueError(f"not a server family: {server!r} (one of {', '.join(SERVERS)})")

    def loads(name: str) -> bool:
        family, release = _family_release(name)
        return release <= version and (family == server or (server, family) == ("valkey", "redis")
                                       and release <= VALKEY_FORKED_FROM)

    return max(filter(loads, TARGETS), key=lambda name: _family_release(name)[1], default=None)
