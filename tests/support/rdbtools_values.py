"""What redis-rdb-tools (rdbtools 0.1.15, a dev dependency), a second parser, reads from a dump,
and whether rdbspec reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rdbtools

import rdbspec


def rdbtools_values(path: Path) -> dict[tuple[int, bytes], tuple[str, Any]]:
    """{(db, key): (type, value)} as rdbtools' own parser reads the plain types of a dump."""
    def b(x: Any) -> bytes:
        return x if isinstance(x, bytes) else str(x).encode()

    class Collect(rdbtools.RdbCallback):
        def __init__(self) -> None:
            super().__init__(None)
            self.out: dict[tuple[int, bytes], tuple[str, Any]] = {}
            self.db = 0

        def start_database(self, db_number: int) -> None:
            self.db = db_number

        def _new(self, key: Any, kind: str, value: Any) -> None:
            self.out[(self.db, b(key))] = (kind, value)

        def set(self, key, value, expiry, info):
            self._new(key, "string", b(value))

        def start_hash(self, key, length, expiry, info):
            self._new(key, "hash", [])

        def hset(self, key, field, value):
            self.out[(self.db, b(key))][1].append((b(field), b(value)))

        def start_set(self, key, cardinality, expiry, info):
            self._new(key, "set", [])

        def sadd(self, key, member):
            self.out[(self.db, b(key))][1].append(b(member))

        def start_list(self, key, expiry, info):
            self._new(key, "list", [])

        def rpush(self, key, value):
            self.out[(self.db, b(key))][1].append(b(value))

        def start_sorted_set(self, key, length, expiry, info):
            self._new(key, "zset", [])

        def zadd(self, key, score, member):
            self.out[(self.db, b(key))][1].append((b(member), float(score)))

    collect = Collect()
    rdbtools.RdbParser(collect).parse(str(path))
    return collect.out


def assert_rdbtools_agrees(path: Path) -> int:
    """Every string, list, set, sorted set and hash of the dump reads as rdbtools reads it (sets
    and sorted sets in any order); returns how many keys rdbtools read."""
    theirs = rdbtools_values(path)
    with rdbspec.open(path) as dump:
        mine = {(r.db, r.key): (r.type_name, r.value) for r in dump.keys()}
    assert set(theirs) <= set(mine)
    for key, (kind, value) in theirs.items():
        my_kind, my_value = mine[key]
        assert my_kind == kind, key
        if kind in ("set", "zset"):
            assert sorted(my_value) == sorted(value), key
        else:
            assert my_value == value, key
    return len(theirs)
