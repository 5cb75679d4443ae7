"""Keys, elements and memory summed by key prefix (`rdbspec prefixes`, the report's treemap).

A key's prefixes are its first 1, 2 ... `depth` parts split at the separator, each joined back
with it: "a:b:c" at depth 2 counts under "a" and "a:b". A key with `depth` parts or fewer counts
under each prefix it has, the last being the key itself ("a:b" under "a" and "a:b", "a" under
"a"), so the prefixes of one level add up to every key with at least that many parts, and those
of level 1 to every key.

`max_nodes` bounds the memory a tree holds: once it has that many prefixes, a key whose prefix
is new is counted in its parent's `other` node (a prefix of its own, not split further).
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

    def add(self, key: bytes, elements: int, memory: int) -> None:
        node = self.root
        node.add(elements, memory)
        for part in key.split(self.separator, self.depth)[:self.depth]:
            child = node.children.get(part)
            if child is None and self.max_nodes is not None and self.nodes >= self.max_nodes:
                if node.other is None:
                    node.other = PrefixNode()
                node.other.add(elements, memory)
                return
            if child is None:
                child = node.children[part] = PrefixNode()
                self.nodes += 1
            child.add(elements, memory)
            node = child

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
