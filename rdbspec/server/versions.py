"""Server generations: a server version (`Version`, "X.Y" as `parse_version` reads it), a server
(`Server`: its family and version, "valkey-9.1" as `parse_server` reads it; `server_of` the one
that wrote a dump), and the generations a dump can be rewritten for (`rdbspec rewrite --target NAME`, the pipeline's
`--dumps-target`): the RDB version each one's server writes, and the versions the writers make.
A module of its own, so that the command line names them without loading the writers
(`rdbspec.write.convert`)."""

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
    """A server family ("redis" or "valkey") and version (major, minor)."""

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


# what each target's server writes (redis src/rdb.h RDB_VERSION of that release; Valkey 8.0 writes
# REDIS0011, valkey src/rdb.h)
TARGETS: dict[str, int] = {"redis-6.0": 9, "redis-6.2": 9, "redis-7.0": 10, "redis-7.2": 11, "redis-7.4": 12,
                           "redis-8.0": 12, "valkey-8.0": 11}
OLDEST, NEWEST = 9, 12  # the versions written
# the RDB version from which a Valkey dump holds path hashes (valkey src/rdb.c rdbGetObjectType:
# none below 81, VALKEY081 being what Valkey 9.2 writes)
PATH_HASH_RDB = 81


def newest_target(server: Server) -> int | None:
    """The RDB version of the newest generation of `TARGETS` that `server` loads: the largest of
    its family at most its version; None when it loads none."""
    best: tuple[Version, int] | None = None
    for name, version in TARGETS.items():
        family, _, release = name.partition("-")
        generation = parse_version(release)
        if family == server.name and generation <= server.version and (best is None or generation > best[0]):
            best = (generation, version)
    return None if best is None else best[1]
