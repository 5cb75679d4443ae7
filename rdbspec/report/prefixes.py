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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class PrefixNode:
    """The sums of the keys under one prefix; `children` by next part, `other` for the keys
    whose next part found the tree full."""

    keys: int = 0
    elements: int = 0
    memory: int = 0
    children: dict[bytes, PrefixNode] = field(default_factory=dict)
    other: PrefixNode | None = None

    def add(self, elements: int, memory: int) -> None:
        self.keys += 1
        self.elements += elements
        self.memory += memory

    def add_sums(self, other: PrefixNode) -> None:
        self.keys += other.keys
        self.elements += other.elements
        self.memory += other.memory


@dataclass(frozen=True)
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

    def add(self, key: bytes, elements: int, memory: int) -> None:
        node = self.root
        node.add(elements, memory)
        for part in key.split(self.separator, self.depth)[:self.depth]:
            child = node.children.get(part)
            if child is None and self.max_nodes is not None and self.nodes >= self.max_nodes:
                _other(node).add(elements, memory)
                return
            if child is None:
                child = self._make(node, part)
            child.add(elements, memory)
            node = child

    def _make(self, parent: PrefixNode, part: bytes) -> PrefixNode:
        child = parent.children[part] = PrefixNode()
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
            node = node.children.get(part) if node is not None else None
            new += node is None
        return self.nodes + new <= self.max_nodes

    def merge(self, later: PrefixTree) -> None:
        """Adds `later`, the tree of keys that come after this tree's (same separator and depth):
        one that never reached its `max_nodes`, or a `FramedTree` of this one. The sums are those
        of adding its keys one by one: its prefixes are taken in the order they were made (for a
        bounded tree, the order keys brought them in; else parents before children), so this tree
        makes and keeps the same."""
        self.root.add_sums(later.root)
        into: dict[int, PrefixNode | None] = {id(later.root): self.root}  # later's node -> the one holding its sums
        for parent, part, node in later._made_in_order():
            mine = into[id(parent)]
            child = None if mine is None else mine.children.get(part)
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
            for part, child in parent.children.items():
                yield parent, part, child
            stack.extend(reversed(parent.children.values()))

    def rows(self) -> Iterator[PrefixRow]:
        """Every prefix, parents before their children."""
        stack: list[tuple[bytes | None, int, PrefixNode]] = [(None, 0, self.root)]
        while stack:
            prefix, level, node = stack.pop()
            for part, child in node.children.items():
                name = part if prefix is None else prefix + self.separator + part
                yield PrefixRow(name, level + 1, child.keys, child.elements, child.memory)
                stack.append((name, level + 1, child))
            if node.other is not None:
                yield PrefixRow(prefix or b"", level + 1, node.other.keys, node.other.elements, node.other.memory,
                                other=True)


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
            framed = framed.children.get(part) if framed is not None else None
            if framed is None:
                _other(node).add(elements, memory)
                return
            child = node.children.get(part)
            if child is None:
                child = self._make(node, part)
            child.add(elements, memory)
            node = child

    def __getstate__(self) -> dict:
        return {**vars(self), "frame": None}


def _other(node: PrefixNode) -> PrefixNode:
    if node.other is None:
        node.other = PrefixNode()
    return node.other
