"""A cluster's hash slots (redis src/cluster.h CLUSTER_SLOTS; a key's slot is src/cluster.c
keyHashSlot, `rdbspec.write.layouts.key_hash_slot`): ranges of them as the cluster commands name
them, a start and an end both served (CLUSTER ADDSLOTSRANGE, CLUSTER SLOTS), read from text
(`parse_ranges`), written back (`format_ranges`), gathered from single slots (`runs`), and which
node of a topology serves each slot (`owners`: a slot served by two nodes is refused, as
clusterUpdateSlotsConfigWith lets only one node hold it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

CLUSTER_SLOTS = 16384
UNOWNED = -1  # `owners`: no node serves the slot
SlotRange = tuple[int, int]  # the first and the last slot, both included


def parse_ranges(text: str) -> list[SlotRange]:
    """`0-5460`, `0-100,200-300` or `7` (one slot): the ranges of one node, comma-separated;
    ValueError naming what is wrong (not a range, a slot past 16383, a start after its end)."""
    ranges = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not (first.isdigit() and first.isascii() and (not dash or last.isdigit() and last.isascii())):
            raise ValueError(f"not a slot range: {part!r} (START-END or SLOT, e.g. 0-5460)")
        start, end = int(first), int(last if dash else first)
        if end >= CLUSTER_SLOTS:
            raise ValueError(f"slot {end} is past the last one, {CLUSTER_SLOTS - 1}")
        if start > end:
            raise ValueError(f"the range {part!r} ends before it starts")
        ranges.append((start, end))
    return ranges


def format_ranges(ranges: Iterable[SlotRange]) -> str:
    """`0-5460,5462`: the ranges as `parse_ranges` reads them."""
    return ",".join(str(start) if start == end else f"{start}-{end}" for start, end in ranges)


def runs(slots: Iterable[int]) -> list[SlotRange]:
    """The ranges of consecutive slots among `slots` (ascending)."""
    out: list[SlotRange] = []
    for slot in sorted(slots):
        if out and out[-1][1] == slot - 1:
            out[-1] = (out[-1][0], slot)
        else:
            out.append((slot, slot))
    return out


def owners(nodes: Sequence[Sequence[SlotRange]]) -> list[int]:
    """For each slot, the index in `nodes` (each node's ranges) of the node that serves it, or
    `UNOWNED`; ValueError for a slot two nodes, or two ranges of one node, both name."""
    owner = [UNOWNED] * CLUSTER_SLOTS
    for node, ranges in enumerate(nodes):
        for start, end in ranges:
            if not 0 <= start <= end < CLUSTER_SLOTS:
                raise ValueError(f"not a slot range: {start}-{end} (slots are 0 to {CLUSTER_SLOTS - 1})")
            taken = next((slot for slot in range(start, end + 1) if owner[slot] != UNOWNED), None)
            if taken is not None:
                other = owner[taken]
                whose = "its own other range" if other == node else f"node {other}'s ({format_ranges(nodes[other])})"
                raise ValueError(f"slot {taken} of node {node}'s range {start}-{end} is also in {whose}")
            owner[start:end + 1] = [node] * (end - start + 1)
    return owner
