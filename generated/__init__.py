"""Parsers generated from spec/*.ksy by rdbspec's generator (`enums`: the specs' enums by name). Do not edit."""

from ._runtime import (
    Io,
    ParseError,
    RdbError,
    RdbspecError,
    TruncatedError,
    WarningSink,
    WriteError,
    WriteIo,
    collecting,
    current_sink,
    warning_sink,
)

__all__ = [
    "Io",
    "ParseError",
    "RdbError",
    "RdbspecError",
    "TruncatedError",
    "WarningSink",
    "WriteError",
    "WriteIo",
    "collecting",
    "current_sink",
    "warning_sink",
]
SPECS = (
    "dragonfly",
    "function",
    "hash",
    "intset",
    "listpack",
    "module",
    "quicklist",
    "rdb",
    "rdb_string",
    "sparse_array",
    "stream",
    "vcs",
    "ziplist",
    "zipmap",
    "zset",
)
