"""The server generations a dump can be rewritten for (`rdbspec rewrite --target NAME`, the
pipeline's `--dumps-target`): the RDB version each one's server writes, and the versions the
writers make. A module of its own, so that the command line names them without loading the
writers (`rdbspec.convert`)."""

from __future__ import annotations

# what each target's server writes (redis src/rdb.h RDB_VERSION of that release; Valkey 8.0 writes
# REDIS0011, valkey src/rdb.h)
TARGETS: dict[str, int] = {"redis-6.0": 9, "redis-6.2": 9, "redis-7.0": 10, "redis-7.2": 11, "redis-7.4": 12,
                           "redis-8.0": 12, "valkey-8.0": 11}
OLDEST, NEWEST = 9, 12  # the versions written
