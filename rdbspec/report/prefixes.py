"""Keys, elements and memory summed by key prefix (`rdbspec prefixes`, the report's treemap).

A key's prefixes are its first 1, 2 ... `depth` parts split at the separator, each joined back
with it: "a:b:c" at depth 2 counts under "a" and "a:b". A key with `depth` parts or fewer counts
under each prefix it has, the last being the key itself ("a:b" under "a" and "a:b", "a" under
"a"), so the prefixes of one level add up to every key with at least that many parts, and those
of level 1 to every key.

`max_nodes` bounds the memory a tree holds: once it has that many prefixes, a key whose prefix
is new is counted in its parent's `other` node (a prefix of its own, not split further).

Trees of consecutive parts of the keys (read by several workers: `rdbspec.read.parallel`) add up with
`merge` to the tree of all of them, as long as each tree merged never reached its `max_nodes`:
which prefixes a bounded tree keeps depends on the order they came in, so such a tree records it.
Once a bounded tree is full its prefixes stay what they are: the keys after can be counted apart
in a `FramedTree` of it, which merges back whatever their number.

`PrefixSums` counts every prefix, as an unbounded tree does, in bounded memory: past
`SPILL_PREFIXES` its tree goes to disk as a run sorted by prefix (`rdbspec.report.runs`), and the
runs are summed and ranked from there.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from . import runs

SPILL_PREFIXES = 200_000  # prefixes a `PrefixSums` holds in memory (about 170 bytes each) before they go to disk
SEND_PREFIXES = 20_000  # more than this, and a worker's prefixes go to disk rather than through its pipe
SORT_ROWS = 100_000  # rows sorted in memory at once when the prefixes are ranked from disk

# a prefix taken out of a tree: (-memory, prefix, level * 2 + other, (keys, elements))
Taken = tuple[int, bytes, int, tuple[int, int]]


@dataclass(slots=True)
class PrefixNode:
    """The sums of the keys under one prefix; `children` by next part, `other` for the keys
    whose next part found the tree full."""

    keys: int = 0
    elements: int = 0
    memory: int = 0
    # None until it has one: most nodes of a big tree are leaves (slots and no empty dict each: a tree
    # of a million prefixes holds about 190 bytes a prefix)
    children: dict[bytes, PrefixNode] | None = None
    other: PrefixNode | None = None

    def child(self, part: bytes) -> PrefixNode | None:
        return None if self.children is None else self.children.get(part)

    def add_child(self, part: bytes, node: PrefixNode) -> None:
        if self.children is None:
            self.children = {}
        self.children[part] = node

    def child_items(self) -> Iterable[tuple[bytes, PrefixNode]]:
        return () if self.children is None else self.children.items()

    def add(self, elements: int, memory: int) -> None:
        self.keys += 1
        self.elements += elements
        self.memory += memory

    def add_sums(self, other: PrefixNode) -> None:
        self.keys += other.keys
        self.elements += other.elements
        self.memory += other.memory


@dataclass(frozen=True, slots=True)
class PrefixRow:
    """One prefix's sums; `other` when it stands for the keys counted in its parent's `other`."""

    prefix: bytes
    level: int
    keys: int
    elements: int
    memory: int
    other: bool = False


class PrefixTree:
    """The sums of every key (the root) and of every prefix up to `depth`."""

    def __init__(self, separator: bytes = b":", depth: int = 2, max_nodes: int | None = None):
        if not separator:
            raise ValueError("the separator is empty")
        self.separator = separator
        self.depth = depth
        self.max_nodes = max_nodes
        self.nodes = 0
        self.root = PrefixNode()
        # a bounded tree's prefixes as they were made: (parent, part, node)
        self.made: list[tuple[PrefixNode, bytes, PrefixNode]] | None = [] if max_nodes is not None else None

    def __getstate__(self) -> dict[str, Any]:
        """The tree as columns (`_columns`), not an object per prefix: a worker sends its tree to the
        parent pickled (`rdbspec.read.parallel`), and pickle would keep a memo of every object."""
        state = {name: value for name, value in vars(self).items() if name != "root"}
        state["made"] = None if self.made is None else []  # whether it records; the order is the columns'
        state["columns"] = self._columns()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        parents, lengths, parts, sums, others = state.pop("columns")
        vars(self).update(state)
        numbers = iter(sums)
        nodes = [PrefixNode(next(numbers), next(numbers), next(numbers))]
        self.root = nodes[0]
        at = 0
        for parent, length in zip(parents, lengths):
            node = PrefixNode(next(numbers), next(numbers), next(numbers))
            part = parts[at:at + length]
            at += length
            nodes[parent].add_child(part, node)
            nodes.append(node)
            if self.made is not None:
                self.made.append((nodes[parent], part, node))
        for i in range(0, len(others), 4):
            nodes[others[i]].other = PrefixNode(*others[i + 1:i + 4])

    def _columns(self) -> tuple[array[int], array[int], bytes, array[int], array[int]]:
        """Every prefix after the root, parents first (a bounded tree's in the order they were made):
        its parent's index (the root 0, then each prefix in turn), its part's length, the parts joined,
        the sums (keys, elements, memory) of the root and each prefix, and (index, keys, elements,
        memory) of each `other`."""
        parents, lengths, parts = array("q"), array("q"), []
        sums = array("q", (self.root.keys, self.root.elements, self.root.memory))
        others = array("q")
        for i, (parent, part, node) in enumerate(self._indexed()):
            parents.append(parent)
            lengths.append(len(part))
            parts.append(part)
            sums.extend((node.keys, node.elements, node.memory))
            if node.other is not None:
                others.extend((i + 1, node.other.keys, node.other.elements, node.other.memory))
        if self.root.other is not None:
            others.extend((0, self.root.other.keys, self.root.other.elements, self.root.other.memory))
        return parents, lengths, b"".join(parts), sums, others

    def _indexed(self) -> Iterator[tuple[int, bytes, PrefixNode]]:
        """(its parent's index, part, node) of every prefix, parents first, the root's index 0 and each
        prefix's the next: in the order they were made when the tree records it, else each parent's
        children together in their order (only the prefixes with children of their own are stacked)."""
        if self.made is not None:
            index = {id(self.root): 0}
            for parent, part, node in self.made:
                index[id(node)] = len(index)
                yield index[id(parent)], part, node
            return
        stack, count = [(0, self.root)], 0
        while stack:
            at, parent = stack.pop()
            for part, child in parent.child_items():
                count += 1
                yield at, part, child
                if child.children:
                    stack.append((count, child))

    def add(self, key: bytes, elements: int, memory: int) -> None:
        node = self.root
        node.add(elements, memory)
        for part in key.split(self.separator, self.depth)[:self.depth]:
            child = node.child(part)
            if child is None and self.max_nodes is not None and self.nodes >= self.max_nodes:
                _other(node).add(elements, memory)
                return
            if child is None:
                child = self._make(node, part)
            child.add(elements, memory)
            node = child

    def _make(self, parent: PrefixNode, part: bytes) -> PrefixNode:
        child = PrefixNode()
        parent.add_child(part, child)
        self.nodes += 1
        if self.made is not None:
            self.made.append((parent, part, child))
        return child

    @property
    def full(self) -> bool:
        """Whether the tree makes no more prefixes (a key whose prefix is new counts in an `other`)."""
        return self.max_nodes is not None and self.nodes >= self.max_nodes

    def fits(self, key: bytes) -> bool:
        """Whether adding `key` takes the tree past `max_nodes` (counts it in an `other`)."""
        if self.max_nodes is None:
            return True
        node: PrefixNode | None = self.root
        new = 0
        for part in key.split(self.separator, self.depth)[:self.depth]:
            node = node.child(part) if node is not None else None
            new += node is None
        return self.nodes + new <= self.max_nodes

    def merge(self, later: PrefixTree) -> None:
        """Adds `later`, the tree of keys that come after this tree's (same separator and depth):
        one that never reached its `max_nodes`, or a `FramedTree` of this one. The sums are those
        of adding its keys one by one: its prefixes are taken in the order they were made (for a
        bounded tree, the order keys brought them in; else parents before children), so this tree
        makes and keeps the same. Unbounded trees are merged by moving `later`'s prefixes that this tree
        lacks into it (`later` is used up): no prefix is made twice, nor is each one looked up."""
        if self.max_nodes is None and later.max_nodes is None and not isinstance(later, FramedTree):
            self.nodes += later.nodes - _graft(self.root, later.root)
            return
        self.root.add_sums(later.root)
        into: dict[int, PrefixNode | None] = {id(later.root): self.root}  # later's node -> the one holding its sums
        for parent, part, node in later._made_in_order():
            mine = into[id(parent)]
            child = None if mine is None else mine.child(part)
            if mine is not None and child is None:
                if self.max_nodes is None or self.nodes < self.max_nodes:
                    child = self._make(mine, part)
                else:  # the tree is full: the keys under it count in their parent's `other`
                    _other(mine).add_sums(node)
            if child is not None:
                child.add_sums(node)
            into[id(node)] = child
        for node, mine in ((later.root, self.root), *((node, into[id(node)]) for _, _, node in later._made_in_order())):
            if node.other is not None and mine is not None:  # a framed tree's: where this tree counts them too
                _other(mine).add_sums(node.other)

    def _made_in_order(self) -> Iterator[tuple[PrefixNode, bytes, PrefixNode]]:
        """(parent, part, node) of every prefix, parents first (as made, when the tree recorded it)."""
        if self.made is not None:
            yield from self.made
            return
        stack = [self.root]
        while stack:
            parent = stack.pop()
            for part, child in parent.child_items():
                yield parent, part, child
            stack.extend(reversed([child for _, child in parent.child_items()]))

    def rows(self) -> Iterator[PrefixRow]:
        """Every prefix, parents before their children."""
        stack: list[tuple[bytes | None, int, PrefixNode]] = [(None, 0, self.root)]
        while stack:
            prefix, level, node = stack.pop()
            for part, child in node.child_items():
                name = part if prefix is None else prefix + self.separator + part
                yield PrefixRow(name, level + 1, child.keys, child.elements, child.memory)
                stack.append((name, level + 1, child))
            if node.other is not None:
                yield PrefixRow(prefix or b"", level + 1, node.other.keys, node.other.elements, node.other.memory,
                                other=True)

    def ranked(self, top: int | None = None) -> Iterator[PrefixRow]:
        """The prefixes with the most memory first (then by prefix, parents first), the `top` ones or
        all. The tree is consumed as the rows are made (`taken`): a tree of millions of prefixes and its
        rows are never held whole together."""
        return _ranked(heapq.nsmallest(top, self.taken()) if top is not None else sorted(self.taken()))

    def taken(self) -> Iterator[Taken]:
        """(-memory, prefix, level * 2 + other, (keys, elements)) of every prefix, in that order a
        prefix before the `other` of the same name and level, each taken out of the tree as it is given
        (the tree holds none afterwards). A row is a 4-tuple, the size of the prefix it replaces, and
        rows of the same counts share them: the memory a prefix let go holds its row."""
        counts: dict[tuple[int, int], tuple[int, int]] = {}
        stack: list[tuple[bytes | None, int, PrefixNode]] = [(None, 0, self.root)]
        while stack:
            prefix, level, node = stack[-1]
            if node.children:
                part, child = node.children.popitem()
                name = part if prefix is None else prefix + self.separator + part
                both = child.keys, child.elements
                yield -child.memory, name, 2 * level + 2, counts.setdefault(both, both)
                stack.append((name, level + 1, child))
                continue
            stack.pop()
            if node.other is not None:
                other = node.other
                yield -other.memory, prefix or b"", 2 * level + 3, (other.keys, other.elements)
        self.nodes = 0


class PrefixSums:
    """The sums of every prefix up to `depth` of any number of keys, at most `spill_at` prefixes
    of them in memory: a tree that reaches it is written to a run in `directory` (its rows sorted
    by prefix) and started anew. Sums of consecutive parts of the keys (workers' results) add up
    with `merge`, in any order (no prefix is dropped, so the order keys came in does not count)."""

    def __init__(self, separator: bytes, depth: int, directory: str, spill_at: int | None = None):
        self.tree = PrefixTree(separator, depth)
        self.directory = directory
        self.spill_at = SPILL_PREFIXES if spill_at is None else spill_at
        self.runs: list[str] = []

    def add(self, key: bytes, elements: int, memory: int) -> None:
        self.tree.add(key, elements, memory)
        if self.tree.nodes >= self.spill_at:
            self.spill()

    def merge(self, other: PrefixSums) -> None:
        self.tree.merge(other.tree)
        self.runs += other.runs
        if self.tree.nodes >= self.spill_at:
            self.spill()

    def settle(self) -> None:
        """Sends the tree to disk if it holds more than `SEND_PREFIXES` (a worker's, before it is
        pickled to the parent: the parent holds the results read ahead of the one it takes)."""
        if self.tree.nodes > SEND_PREFIXES:
            self.spill()

    def spill(self) -> None:
        """The tree's prefixes as a run of (prefix, level * 2 + other, -memory, keys, elements), by
        prefix (then level and `other`); the tree starts anew."""
        by_prefix = sorted((prefix, rank, minus_memory, keys, elements)
                           for minus_memory, prefix, rank, (keys, elements) in self.tree.taken())
        self.runs.append(runs.write_run(by_prefix, self.directory))
        self.tree = PrefixTree(self.tree.separator, self.tree.depth)

    def ranked(self, top: int | None = None) -> Iterator[PrefixRow]:
        """The prefixes with the most memory first, as `PrefixTree.ranked` gives them; from the runs
        on disk when there are any (a prefix's sums added up over the runs, then sorted in
        `SORT_ROWS` rows of memory at a time; `top` of them kept in memory)."""
        if not self.runs:
            return self.tree.ranked(top)
        if self.tree.nodes:
            self.spill()
        summed = runs.merged(self.runs, self.directory, 2, _add_spilled)
        self.runs = []
        taken = ((minus_memory, prefix, rank, (keys, elements))
                 for prefix, rank, minus_memory, keys, elements in summed)
        return _ranked(heapq.nsmallest(top, taken) if top is not None
                       else runs.sorted_rows(taken, self.directory, SORT_ROWS))


def _add_spilled(a: runs.Row, b: runs.Row) -> runs.Row:
    """The sums of one prefix's rows of two runs: (prefix, rank, -memory, keys, elements)."""
    return a[0], a[1], a[2] + b[2], a[3] + b[3], a[4] + b[4]


def _ranked(taken: Iterable[Taken]) -> Iterator[PrefixRow]:
    for minus_memory, prefix, rank, (keys, elements) in taken:
        yield PrefixRow(prefix, rank >> 1, keys, elements, -minus_memory, bool(rank & 1))


class FramedTree(PrefixTree):
    """The sums of keys that come after those of `frame`, a full tree, counted where `frame` would
    count them: under the prefixes it has, else in the `other` of the last one it has. Only the
    prefixes these keys reach are made, in the order they reach them; `frame.merge(this)` adds
    them (the frame is not pickled with it: a worker sends a framed tree back)."""

    def __init__(self, frame: PrefixTree):
        super().__init__(frame.separator, frame.depth)
        self.made = []
        self.frame: PrefixTree | None = frame

    def add(self, key: bytes, elements: int, memory: int) -> None:
        node: PrefixNode = self.root
        framed: PrefixNode | None = self.frame.root if self.frame is not None else None
        node.add(elements, memory)
        for part in key.split(self.separator, self.depth)[:self.depth]:
            framed = framed.child(part) if framed is not None else None
            if framed is None:
                _other(node).add(elements, memory)
                return
            child = node.child(part)
            if child is None:
                child = self._make(node, part)
            child.add(elements, memory)
            node = child

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "frame": None}


def _graft(mine: PrefixNode, theirs: PrefixNode) -> int:
    """Adds the sums of `theirs` and its prefixes to `mine`'s, moving over (in their order, after
    `mine`'s own) those `mine` lacks; returns how many of them `mine` had."""
    mine.add_sums(theirs)
    if theirs.other is not None:
        _other(mine).add_sums(theirs.other)
    had = 0
    for part, node in theirs.child_items():
        child = mine.child(part)
        if child is None:
            mine.add_child(part, node)
        else:
            had += 1 + _graft(child, node)
    return had


def _other(node: PrefixNode) -> PrefixNode:
    if node.other is None:
        node.other = PrefixNode()
    return node.other
