"""`rdbspec restore` into a Valkey 9.1 cluster of three masters on 127.0.0.1 (issue 30): each key
on the master of its slot, holding what its source server reported (`expected.json`) and the
digest a standalone Valkey 9.1 gives it loading the dump itself; a dump with several databases
refused until --db-map sends them to 0; the redirections a node answers while its slots move
(MOVED: the topology read again; ASK: the one command sent after ASKING)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rdbspec.errors import EXIT_CODES
from rdbspec.net.connection import Address
from rdbspec.read import dumpfile
from rdbspec.restore.restore import Existing, Options, Restore
from rdbspec.write.layouts import key_hash_slot
from tests.support import servers, valkey_cluster
from tests.support.expected import capture, compare, records_from_expected
from tests.support.servers import RedisServer, binary_for
from tests.support.valkey_cluster import ValkeyCluster

TESTS = Path(__file__).resolve().parents[1]
REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))

redis_server_factory = servers.redis_server_factory
valkey_cluster_fixture = valkey_cluster.valkey_cluster


@pytest.fixture(scope="module")
def cluster() -> Any:
    with ValkeyCluster() as started:
        yield started


def rdbspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], capture_output=True, text=True, timeout=300)


def _databases(path: Path) -> list[int]:
    with dumpfile.open(path) as dump:
        return sorted({record.db for record in dump.keys()})


def _flush(cluster: ValkeyCluster) -> None:
    for node in cluster.nodes:
        node.client().flushall()


def _digests(nodes: list[RedisServer]) -> dict[bytes, tuple[int, Any]]:
    """key: (the port of the node holding it, its DEBUG DIGEST-VALUE)."""
    out = {}
    for node in nodes:
        with node.client() as client:
            for key in client.scan_iter(count=1000):
                out[key] = (node.port, client.execute_command("DEBUG", "DIGEST-VALUE", key)[0])
    return out


def _in_db0(expected: dict[str, Any]) -> dict[str, Any]:
    """The source server's report with every database's keys in database 0, less the type bytes."""
    out = copy.deepcopy(expected)
    keys = [dict(record, db=0, rdb_type_byte=None) for records in out["databases"].values() for record in records]
    out["databases"] = {"0": keys}
    return out


@pytest.mark.parametrize("path", REAL, ids=[f"{p.parent.name}/{p.stem}" for p in REAL])
def test_each_key_goes_to_its_slots_master(path: Path, cluster: ValkeyCluster, redis_server_factory) -> None:
    _flush(cluster)
    maps = [arg for db in _databases(path) if db for arg in ("--db-map", f"{db}:0")]
    if maps:
        refused = rdbspec("restore", str(path), "--to", cluster.seed)
        assert refused.returncode == EXIT_CODES["unwritable"]
        assert refused.stderr.splitlines() == [
            f"rdbspec restore: the keys would go to database {', '.join(m.split(':')[0] for m in maps[1::2])} and the "
            "cluster has database 0 only (cluster-databases 1): give --db-map SRC:DST (or select databases with --db)"]
    done = rdbspec("restore", str(path), "--to", cluster.seed, *maps)
    assert done.returncode == 0, done.stderr
    digests = _digests(cluster.nodes)
    assert all(port == cluster.client_for_key(key).connection_pool.connection_kwargs["port"]
               for key, (port, _) in digests.items())
    served: dict[str, Any] = {"databases": {"0": []}}
    for node in cluster.nodes:
        served["databases"]["0"] += capture(node.client())["databases"].get("0", [])
    expected = _in_db0(json.loads(path.with_suffix(".expected.json").read_text()))
    assert compare(expected, records_from_expected(served)) == []
    if int(path.read_bytes()[5:9]) <= 11:  # what a standalone Valkey 9.1 loads as it is
        reference = redis_server_factory(binary_for("valkey"), rdb=path)
        with reference.client() as client:
            want = {}
            for db in _databases(path):
                client.execute_command("SELECT", db)
                want |= {key: client.execute_command("DEBUG", "DIGEST-VALUE", key)[0] for key in client.scan_iter()}
        assert {key: digest for key, (_, digest) in digests.items()} == want


def test_a_database_other_than_0_in_the_url_is_refused(cluster: ValkeyCluster) -> None:
    refused = rdbspec("restore", str(REAL[0]), "--to", cluster.seed + "/2")
    assert refused.returncode == EXIT_CODES["refused"]
    assert refused.stderr.splitlines() == [f"rdbspec restore: {cluster.seed}/2 refused SELECT 2: ERR DB index is out "
                                           "of range"]


def _node_id(node: RedisServer) -> bytes:
    with node.client() as client:
        return bytes(client.execute_command("CLUSTER", "MYID"))


def _keys_and_slots(path: Path) -> dict[bytes, int]:
    with dumpfile.open(path) as dump:
        return {record.key: key_hash_slot(record.key) for record in dump.keys() if record.db == 0}


def test_moved_reads_the_topology_again_and_ask_sends_after_asking() -> None:
    """Once the restore has read the topology, one slot of the dump's keys is given to another
    master (each node told: CLUSTER SETSLOT NODE), and another is migrating (MIGRATING on its
    master, IMPORTING on the next): the first slot's keys come back MOVED and are resent where the
    topology read again says, the second's ASK and go after ASKING; every key lands where the
    cluster serves it, and none is lost."""
    path = next(p for p in REAL if p.parent.name == "valkey-8.0.1" and p.stem == "mixed_types")
    slots = _keys_and_slots(path)
    with ValkeyCluster() as cluster:
        moved_slot, asked_slot = sorted({s for s in slots.values() if cluster.owner[s] == 0})[:2]
        ids = [_node_id(node) for node in cluster.nodes]
        with Restore(Address.parse(cluster.seed), Options(db_map={1: 0, 5: 0}, existing=Existing.REPLACE)) as run:
            for node in cluster.nodes:
                node.client().execute_command("CLUSTER", "SETSLOT", moved_slot, "NODE", ids[1])
            cluster.nodes[1].client().execute_command("CLUSTER", "SETSLOT", asked_slot, "IMPORTING", ids[0])
            cluster.nodes[0].client().execute_command("CLUSTER", "SETSLOT", asked_slot, "MIGRATING", ids[1])
            summary = run.run(str(path))
        digests = _digests(cluster.nodes)
        port_of = {slot: cluster.nodes[1].port for slot in (moved_slot, asked_slot)}
        for key, slot in slots.items():
            assert digests[key][0] == port_of.get(slot, cluster.node_for_slot(slot).port), key
        assert summary.restored == len(_keys_and_slots_all(path)) == len(digests)
        assert any(slot == moved_slot for slot in slots.values()) and any(slot == asked_slot for slot in slots.values())


def _keys_and_slots_all(path: Path) -> list[bytes]:
    with dumpfile.open(path) as dump:
        return [record.key for record in dump.keys()]
