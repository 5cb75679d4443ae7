"""The smallest readers of generated objects, shared by every value decoder (`values`,
`streams`) and the dump (`api`): an `rdb_string`'s bytes, a listpack or ziplist entry's bytes,
the container inside an `rdb_blob`.

A repeat of listpack/ziplist entries (and an intset's members) is a plain list with the Python
backend and a `ScalarColumns` with the native one (issue 14 "Columns contract"): `texts`,
`pairs` and `values` take either, using the columns' bulk methods (no Python call per element)
when they are there."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

H = TypeVar("H", bound=Hashable)

# Elements a chunk of a hashtable-encoded value or of a PEL holds (`chunks_<field>` of the
# generated parsers): bounded, so that a value of any size is walked in the same memory
CHUNK_ROWS = 1 << 16


def text(s: Any) -> bytes:
    """An `rdb_string` as the server holds it: raw bytes, an integer's decimal text, or the
    decompressed bytes."""
    raw: bytes | None = s.raw
    if raw is not None:
        return raw
    if s.int_value is not None:
        return str(s.int_value).encode()
    lzf: bytes = s.lzf
    return lzf


def scalar(v: int | bytes) -> bytes:
    """A listpack or ziplist entry as the server returns it (integers as decimal text)."""
    return v if isinstance(v, bytes) else str(v).encode()


def container(blob: Any) -> Any:
    """The parsed container inside an `rdb_blob`, compressed or not."""
    return blob.plain if blob.plain is not None else blob.lzf


def texts(items: Any) -> list[bytes]:
    """Each entry as `scalar` gives it."""
    bulk: Callable[[], list[bytes]] | None = getattr(items, "texts", None)
    if bulk is not None:
        return bulk()
    return [v if isinstance(v, bytes) else str(v).encode() for v in items]


def pairs(items: Any) -> list[tuple[bytes, bytes]]:
    """Entries 0 and 1, 2 and 3... as (`scalar`, `scalar`) pairs (an odd last entry is left out)."""
    bulk: Callable[[], list[tuple[bytes, bytes]]] | None = getattr(items, "pairs", None)
    if bulk is not None:
        return bulk()
    flat = texts(items)
    return list(zip(flat[0::2], flat[1::2]))


def values(items: Any) -> list[int | bytes]:
    """The entries as a list (ints and bytes, as read)."""
    bulk: Callable[[], list[int | bytes]] | None = getattr(items, "values", None)
    return bulk() if bulk is not None else items if isinstance(items, list) else list(items)


def text_lengths(items: Any, start: int, step: int, second: int = -1) -> Sequence[int]:
    """The lengths of `texts` of entries start, start + step, ... (what an sds of each holds);
    with `second`, each paired with the length of entry second, second + step, ... as
    `first << 32 | second`."""
    bulk: Callable[[int, int, int], Sequence[int]] | None = getattr(items, "text_lengths", None)
    if bulk is not None:
        return bulk(start, step, second)
    firsts = [len(t) for t in texts(items[start::step])]
    if second < 0:
        return firsts
    return [a << 32 | len(b) for a, b in zip(firsts, texts(items[second::step]))]


def first_repeated(items: Iterable[H]) -> H | None:
    """The first item met a second time, None when each is met once: what a loader that refuses a
    name or an ID twice names in its error."""
    seen: set[H] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None
