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
from ..server.cluster import CLUSTER_SLOTS
from .connection import Connection
from .resp import ReplyError

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
    """Which master serves each slot."""

    def __init__(self, ranges: list[tuple[int, int, Node]]):
        self.owners: list[Node | None] = [None] * CLUSTER_SLOTS
        for start, end, node in ranges:
            for slot in range(start, end + 1):
                self.owners[slot] = node
        self.ranges = sorted(ranges)

    @classmethod
    def of(cls, connection: Connection) -> Topology:
        """The topology a node knows (CLUSTER SLOTS: start, end, then the master as [host, port,
        id...], then its replicas). A master announced without a host (an empty one, or `?`) is
        reached at the host this connection reached (clusterReplyMultiBulkSlots leaves the
        host to the client when `cluster-preferred-endpoint-type unknown-endpoint`)."""
        reply = connection.call("CLUSTER", "SLOTS")
        ranges: list[tuple[int, int, Node]] = []
        for entry in reply if isinstance(reply, list) else ():
            match entry:
                case [int(start), int(end), [bytes(host), int(port), *_], *_]:
                    reached = host.decode() if host not in (b"", b"?") else connection.address.host
                    ranges.append((start, end, (reached, port)))
                case _:
                    raise ServerError(f"an answer that is no slot range: {entry!r:.80}", connection.address.url,
                                      "CLUSTER SLOTS")
        return cls(ranges)

    def owner(self, slot: int) -> Node:
        node = self.owners[slot]
        if node is None:
            raise ServerError(f"CLUSTERDOWN Hash slot {slot} not served", "the cluster", "CLUSTER SLOTS")
        return node

    def masters(self) -> list[Node]:
        return sorted({node for _, _, node in self.ranges})

    def node_ranges(self) -> Iterator[tuple[Node, list[tuple[int, int]]]]:
        """Each master and the slot ranges it serves, in slot order."""
        for node in self.masters():
            yield node, [(start, end) for start, end, owner in self.ranges if owner == node]


def name_in_slot(slot: int, suffix: bytes) -> bytes:
    """A key name in `slot` ending with `suffix`: `{T}suffix`, T the first decimal number whose
    CRC16 falls in the slot (a hash tag: the name goes where T goes, whatever the suffix)."""
    tag = 0
    while binascii.crc_hqx(b"%d" % tag, 0) & (CLUSTER_SLOTS - 1) != slot:
        tag += 1
    return b"{%d}%s" % (tag, suffix)
