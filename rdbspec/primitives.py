"""The smallest readers of generated objects, shared by every value decoder (`values`,
`streams`) and the dump (`api`): an `rdb_string`'s bytes, a listpack or ziplist entry's bytes,
the container inside an `rdb_blob`."""

from __future__ import annotations


def text(s) -> bytes:
    """An `rdb_string` as the server holds it: raw bytes, an integer's decimal text, or the
    decompressed bytes."""
    if s.raw is not None:
        return s.raw
    if s.int_value is not None:
        return str(s.int_value).encode()
    return s.lzf


def scalar(v: int | bytes) -> bytes:
    """A listpack or ziplist entry as the server returns it (integers as decimal text)."""
    return v if isinstance(v, bytes) else str(v).encode()


def container(blob):
    """The parsed container inside an `rdb_blob`, compressed or not."""
    return blob.plain if blob.plain is not None else blob.lzf
