"""rdbspec: reads and writes Redis, Valkey and Dragonfly RDB dumps.

    import rdbspec
    with rdbspec.open("dump.rdb") as dump:
        print(dump.header)
        for key in dump.keys():
            print(key.db, key.key, key.type_name, key.value)

`open` takes a path, `-` for stdin, or a URL of an object store (`s3://bucket/dump.rdb`, gs://,
abfs://, hdfs://: `rdbspec.read.location`, which says how a store is reached).

The public face: what a user imports is here. Reading: `open`, `parse`, `Dump`, `Header`,
`KeyRecord`, `Stream`, `SparseArray`, `RdbWarning`. Writing: `Writer` (a dump record by record), `ServerConfig`
(the redis.conf limits that choose new keys' encodings), `EditableStream` (a stream to build or
change). The errors, all `RdbspecError` (`rdbspec.errors` draws the tree): `RdbError` and its
`ParseError`, `TruncatedError`, `ChecksumError`, `IntegrityError` for bad input, `WriteError`
and `UnwritableError` for what cannot be written. The writing side is loaded when first asked
for, so that reading (and the command line) starts without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    ChecksumError,
    IntegrityError,
    ParseError,
    RdbError,
    RdbspecError,
    RdbWarning,
    TruncatedError,
    UnwritableError,
    WriteError,
)
from .read.dumpfile import Dump, Header, KeyRecord, open, parse
from .read.streams import Stream
from .read.values import SparseArray

if TYPE_CHECKING:  # what `__getattr__` loads on first use, named for type checkers
    from .write.layouts import ServerConfig
    from .write.stream import EditableStream
    from .write.writer import Writer

__all__ = ["ChecksumError", "Dump", "EditableStream", "Header", "IntegrityError", "KeyRecord", "ParseError",
           "RdbError", "RdbWarning", "RdbspecError", "ServerConfig", "SparseArray", "Stream", "TruncatedError",
           "UnwritableError",
           "WriteError", "Writer", "open", "parse"]


def __getattr__(name: str) -> Any:
    """The writing side's public names, imported on first use (PEP 562)."""
    if name == "Writer":
        from .write.writer import Writer
        return _kept(name, Writer)
    if name == "ServerConfig":
        from .write.layouts import ServerConfig
        return _kept(name, ServerConfig)
    if name == "EditableStream":
        from .write.stream import EditableStream
        return _kept(name, EditableStream)
    raise AttributeError(f"module 'rdbspec' has no attribute {name!r}")


def _kept(name: str, value: Any) -> Any:
    globals()[name] = value  # the next use finds it without __getattr__
    return value
