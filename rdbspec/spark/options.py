"""The ``rdb`` data source's tables, options and input paths: what a reader is asked for, checked
before Spark runs anything. Plain Python (no pyspark): the ``pipeline`` command checks its
arguments with it, and the other commands start without importing Spark."""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass
from typing import Any

from ..memory import ALLOCATORS, Server, parse_server
from ..read import dragonfly, dumpfile, location
from ..read.dragonfly import SUMMARY_NAME

# the tables of `source.SCHEMAS`, in that order
TABLES = ("keys", "streams", "stream_entries", "stream_groups", "stream_pending", "stream_consumers", "aux", "files")
STREAM_TABLES = ("streams", "stream_entries", "stream_groups", "stream_pending", "stream_consumers")

DUMPS_DIR = "dumps"  # `rdbspec pipeline --dumps`: the folder of OUT its dumps are written to


def _bool(options: dict[str, str], name: str, default: bool) -> bool:
    for k, v in options.items():
        if k.lower() == name.lower():
            text = str(v).strip().lower()
            if text in ("true", "1", "yes"):
                return True
            if text in ("false", "0", "no"):
                return False
            raise ValueError(f"option {name}: expected true or false, got {v!r}")
    return default


def option(options: dict[str, str], name: str) -> str | None:
    """The value of option `name`, None when not given."""
    for k, v in options.items():  # Spark options are case-insensitive
        if k.lower() == name.lower():
            return v
    return None


def _split(text: str | None) -> list[str]:
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))  # as Spark's file index: _SUCCESS, .crc, _temporary...


def _listdir(directory: str, name_glob: str) -> list[str]:
    """The files under a directory (recursively) matching `name_glob`, and the summary of any
    DFS set among them; a directory of a store (a URL) is listed there."""
    def taken(name: str) -> bool:
        return not _hidden(name) and bool(fnmatch.fnmatchcase(name, name_glob) or SUMMARY_NAME.match(name))

    if location.is_url(directory):
        prefix = directory.rstrip("/") + "/"
        return [url for url in location.walk(directory)
                if not any(map(_hidden, url[len(prefix):].split("/")[:-1])) and taken(url.rsplit("/", 1)[1])]
    found: list[str] = []
    for parent, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not _hidden(d)]
        found += (path for path in (os.path.join(parent, n) for n in names if taken(n)) if os.path.isfile(path))
    return sorted(found)


def _set_files(path: str) -> list[str]:
    """A DFS file stands for its whole set (summary and shards); any other file for itself."""
    if dragonfly.is_dfs_name(path):
        return [os.fspath(p) for p in dumpfile.snapshot_files(path)]
    return [path]


def _kind(path: str) -> str:
    """"file", "directory" or "missing": of a local path or a store's URL (one request)."""
    if location.is_url(path):
        return location.kind(path)
    return "directory" if os.path.isdir(path) else "file" if os.path.exists(path) else "missing"


def _matches(part: str) -> list[tuple[str, str]]:
    """What one input names, each with its `_kind`: a glob's matches, a directory, a file
    (FileNotFoundError: nothing)."""
    if location.has_magic(part):
        if location.is_url(part):
            matches = [(url, "file") for url in location.glob(part)]  # a store lists objects only
        else:
            matches = [(path, _kind(path)) for path in sorted(glob.glob(part))]
        if not matches:
            raise FileNotFoundError(f"no file matches {part}")
        return matches
    kind = _kind(part)
    if kind == "missing":
        raise FileNotFoundError(f"no such file: {part}")
    return [(part, kind)]


def resolve_paths(specs: list[str], dir_filter: str = "*.rdb") -> list[str]:
    """Files named by paths that may be files, globs, directories or comma-separated lists,
    local or in a store (URLs: `rdbspec.read.location`), in the order given (globs and
    directories sorted), without duplicates. In a directory, only the files whose name matches
    `dir_filter` are taken, and DFS sets. A DFS file gives its whole set, checked for missing
    and extra shard files (once a set: its other files are in it). Raises FileNotFoundError for
    a path that names nothing and for inputs that hold no file."""
    out: dict[str, None] = {}  # in order, without duplicates
    for spec in specs:
        for part in _split(spec):
            if location.is_server(part):  # a live server, or each master of a cluster
                from ..restore.cluster import servers_of  # the network: only for a live server (ssl)

                out.update(dict.fromkeys(servers_of(part)))
                continue
            part = part if location.is_url(part) else location.local_path(part)
            for found, kind in _matches(part):
                for file in _listdir(found, dir_filter) if kind == "directory" else [found]:
                    if file not in out:
                        out.update(dict.fromkeys(_set_files(file)))
    if not out:
        raise FileNotFoundError(f"no dump file in {', '.join(specs)} (directories are searched for {dir_filter})")
    return list(out)


def _server(text: str | None) -> Server | None:
    """``memoryVersion``: a server like 7.0 or valkey-9.1, or None."""
    if text is None:
        return None
    try:
        return parse_server(text)
    except ValueError as err:
        raise ValueError(f"option memoryVersion: {err}") from None


def _allocator(text: str | None) -> str:
    name = (text or "jemalloc").strip().lower()
    if name not in ALLOCATORS:
        raise ValueError(f"option allocator: expected one of {', '.join(sorted(ALLOCATORS))}, got {text!r}")
    return name


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _size(text: str) -> int:
    """Bytes from ``"134217728"``, ``"64m"``, ``"1g"``, ``"512k"`` (powers of 1024)."""
    value = str(text).strip().lower().removesuffix("b") or "x"
    unit = value[-1] if value[-1] in _UNITS else ""
    number = value[:-1] if unit else value
    if not number.isdigit() or int(number) <= 0:
        raise ValueError(f"option splitSize: expected a positive size like 67108864 or 64m, got {text!r}")
    return int(number) * _UNITS[unit]


@dataclass
class ReadOptions:
    table: str = "keys"
    dbs: frozenset[int] | None = None
    key_pattern: bytes | None = None
    types: frozenset[str] | None = None
    include_deleted: bool = False
    ignore_corrupt_files: bool = False
    warn_corrupt_files: bool = True
    verify_checksum: bool = True
    batch_size: int = 4096
    split_size: int = 64 << 20
    memory_server: Server | None = None  # None: each dump's own (memory.server_of)
    allocator: str = "jemalloc"
    store: location.Store = location.Store()  # how URLs reach their store (`location.Store.from_settings`)

    @classmethod
    def parse(cls, options: dict[str, str], spark_conf: dict[str, str] | None = None) -> ReadOptions:
        """The options of a read; `spark_conf`, the session's Hadoop S3A settings, give the
        store's where the options do not (`location.Store.from_settings`)."""
        table = (option(options, "table") or "keys").strip().lower()
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
        dbs = _split(option(options, "db"))
        types = _split(option(options, "types"))
        pattern = option(options, "keyPattern")
        return cls(
            table=table,
            dbs=frozenset(int(d) for d in dbs) if dbs else None,
            key_pattern=pattern.encode() if pattern else None,
            types=frozenset(t.lower() for t in types) if types else None,
            include_deleted=_bool(options, "includeDeleted", False),
            ignore_corrupt_files=_bool(options, "ignoreCorruptFiles", False),
            warn_corrupt_files=_bool(options, "warnCorruptFiles", True),
            verify_checksum=_bool(options, "verifyChecksum", True),
            batch_size=max(1, int(option(options, "batchSize") or 4096)),
            split_size=_size(option(options, "splitSize") or "64m"),
            memory_server=_server(option(options, "memoryVersion")),
            allocator=_allocator(option(options, "allocator")),
            store=location.Store.from_settings(options, spark_conf),
        )

    def selects(self, record: Any) -> bool:
        if self.dbs is not None and record.db not in self.dbs:
            return False
        if self.types is not None and record.type_name not in self.types:
            return False
        if self.key_pattern is not None and not fnmatch.fnmatchcase(record.key, self.key_pattern):
            return False
        return True
