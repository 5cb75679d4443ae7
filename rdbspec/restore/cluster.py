"""A cluster as a client sees it (redis src/cluster.c): 16384 slots, each owned by one master
(`Topology`, read from CLUSTER SLOTS: clusterReplyMultiBulkSlots), a key in the slot of its name
or hash tag (`rdbspec.write.layouts.key_hash_slot`: keyHashSlot), and the redirections a node answers
for a slot it does not serve (getNodeByQuery, clusterRedirectClient): `MOVED slot host:port` (the
slot is the other node's: ask the topology again) and `ASK slot host:port` (the slot is moving: send
this one command there, after ASKING)."""

from __future__ import annotations

import binascii
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import ServerError
from ..net.connection import Address, Connection, Tls
from ..net.resp import ReplyError
from ..server.cluster import CLUSTER_SLOTS, SlotRange, runs

Node = tuple[str, int]  # a node's host and port


@dataclass(frozen=True)
class Redirection:
    """A MOVED or ASK reply: the slot and the node to ask."""

    kind: str
    slot: int
    node: Node


def redirection(reply: ReplyError) -> Redirection | None:
    """The redirection an error reply is (clusterRedirectClient), None for any other error."""
    words = reply.text.split()
    if len(words) != 3 or words[0] not in ("MOVED", "ASK") or not words[1].isdigit():
        return None
    host, _, port = words[2].rpartition(":")
    if not port.isdigit():
        return None
    return Redirection(words[0], int(words[1]), (host, int(port)))


class Topology:
    """Which master serves each slot (`owners`: None where none does)."""

    def __init__(self, owners: list[Node | None]):
        self.owners = owners

    @classmethod
    def of(cls, connection: Connection) -> Topology:
        """The topology a node knows (CLUSTER SLOTS: start, end, then the master as [host, port,
        id...], then its replicas). A master announced without a host (an empty one, or `?`) is
        reached at the host this connection reached (clusterReplyMultiBulkSlots leaves the
        host to the client when `cluster-preferred-endpoint-type unknown-endpoint`)."""
        reply = connection.call("CLUSTER", "SLOTS")
        owners: list[Node | None] = [None] * CLUSTER_SLOTS
        for entry in reply if isinstance(reply, list) else ():
            match entry:
                case [int(start), int(end), [bytes(host), int(port), *_], *_] if 0 <= start <= end < CLUSTER_SLOTS:
                    reached = host.decode() if host not in (b"", b"?") else connection.address.host
                    owners[start:end + 1] = [(reached, port)] * (end + 1 - start)
                case _:
                    raise ServerError(f"an answer that is no slot range: {entry!r:.80}", connection.address.url,
                                      "CLUSTER SLOTS")
        return cls(owners)

    def updated(self, read: Topology, moved: Redirection) -> Topology:
        """The topology `read` again after `moved`, the slot MOVED named served by the node it
        named (a node may answer CLUSTER SLOTS before it knows of the move it redirects for), a slot
        it tells no master of by the one this topology knew."""
        owners = [new if new is not None else old for new, old in zip(read.owners, self.owners, strict=True)]
        owners[moved.slot] = moved.node
        return Topology(owners)

    def owner(self, slot: int) -> Node:
        node = self.owners[slot]
        if node is None:
            raise ServerError(f"CLUSTERDOWN Hash slot {slot} not served", "the cluster", "CLUSTER SLOTS")
        return node

    def masters(self) -> list[Node]:
        return sorted({node for node in self.owners if node is not None})

    def node_ranges(self) -> Iterator[tuple[Node, list[SlotRange]]]:
        """Each master and the slot ranges it serves, in slot order."""
        for node in self.masters():
            yield node, runs(slot for slot, owner in enumerate(self.owners) if owner == node)


def servers_of(url: str, tls: Tls | None = None) -> list[str]:
    """The live servers whose RDBs hold the keyspace `url` names (a rediss:// one with `tls`'
    options): the server itself, or, when it is a cluster node (INFO cluster), every master of its
    cluster (CLUSTER SLOTS), in the order of their addresses, each a URL with the same credentials
    (`Address.connect_url`)."""
    address = Address.parse(url, tls)
    with Connection(address, select=False) as connection:
        if not connection.info().cluster:
            return [url]
        masters = Topology.of(connection).masters()
    return [address.at(host, port).connect_url for host, port in masters]


def name_in_slot(slot: int, suffix: bytes) -> bytes:
    """A key name in `slot` ending with `suffix`: `{T}suffix`, T the first decimal number whose
    CRC16 falls in the slot (a hash tag: the name goes where T goes, whatever the suffix)."""
    tag = 0
    while binascii.crc_hqx(b"%d" % tag, 0) & (CLUSTER_SLOTS - 1) != slot:
        tag += 1
    return b"{%d}%s" % (tag, suffix)
