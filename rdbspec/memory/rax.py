"""The nodes of a radix tree (redis src/rax.c) holding stream IDs, as raxGenericInsert leaves
them: the tree is not stored in the dump, so it is rebuilt from the keys it holds (a stream's
node master IDs, a PEL's entry IDs; 16 bytes each, big-endian: streamEncodeID).

Inserting the same keys in any order gives the same nodes: the head; one node a branch (a
non-compressed node with a byte and a child pointer for each way on); one node a key (a leaf
holding the value pointer); and between a node and the next branch or key down, one compressed
node holding the bytes they all share (the head itself when it is not a branch).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

STREAM_ID = 16  # sizeof(streamID)
RAX_NODE_HEADER = 4  # raxNode's bit fields: iskey, isnull, iscompr, size
POINTER = 8


@dataclass(frozen=True)
class RaxNode:
    chars: int  # the bytes it holds: a compressed run, or a branch's one a child
    children: int
    is_key: bool

    def bytes(self) -> int:
        """raxNodeCurrentLength: the header, the bytes padded to a pointer's alignment
        (raxPadding), the child pointers and a key's value pointer."""
        data = RAX_NODE_HEADER + self.chars
        data += -data % POINTER
        return data + POINTER * (self.children + self.is_key)


def rax_shape(keys: Sequence[int], width: int = STREAM_ID) -> list[RaxNode]:
    """The nodes of a rax holding `keys` (ascending, distinct, `width` bytes each, as numbers)."""
    if not keys:
        return [RaxNode(0, 0, False)]  # raxNew's empty head
    nodes: list[RaxNode] = []
    pending = [(0, len(keys), 0)]  # key ranges sharing their first `depth` bytes
    bits = width * 8
    while pending:
        start, end, depth = pending.pop()
        if depth == width:
            nodes.append(RaxNode(0, 0, True))
            continue
        shared = min((bits - (keys[start] ^ keys[end - 1]).bit_length()) // 8, width)
        if shared > depth:  # a run every key of the range shares
            nodes.append(RaxNode(shared - depth, 1, False))
            pending.append((start, end, shared))
            continue
        shift = bits - 8 * (depth + 1)
        children = 0
        while start < end:  # a branch: one child a value of the byte at `depth`
            prefix = keys[start] >> shift
            after = bisect_left(keys, (prefix + 1) << shift, start, end)
            pending.append((start, after, depth + 1))
            children += 1
            start = after
        nodes.append(RaxNode(children, children, False))
    return nodes


def stream_id_key(stream_id: tuple[int, int]) -> int:
    """A stream ID as the number its rax key reads as (streamEncodeID: ms, seq big-endian)."""
    return stream_id[0] << 64 | stream_id[1]
