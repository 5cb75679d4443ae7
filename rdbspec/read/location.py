"""Where a dump lives: a local path, or a URL of an object store or a distributed file system.

    s3://bucket/key   s3a://...   gs://bucket/key   abfs[s]://container@account.dfs.core.windows.net/path
    hdfs://namenode:port/path   file:///local/path

URLs are read through `pyarrow.fs` (installed with the `spark` extra), whose drivers know S3,
Google Cloud Storage, Azure Blob/ADLS and HDFS (the last needs Hadoop's libhdfs). Everything a
local path allows works on a URL: listing a directory, a glob (`*`, `?`, `[...]` in the last
parts), a Dragonfly snapshot set beside its summary file. A whole-file read (`source.open_source`)
streams the object once, in order, into a temporary file; a Spark task reads only its split's
byte ranges (`fetch`), in large blocks, into a sparse temporary file at their own offsets.

How a store is reached (`Store`), for the tools that reach S3 in the usual ways:
- the endpoint: option ``s3.endpoint`` (Spark), Spark's ``spark.hadoop.fs.s3a.endpoint``, or
  the AWS SDKs' environment ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``; the region:
  ``s3.region``, ``fs.s3a.endpoint.region``, ``AWS_REGION`` / ``AWS_DEFAULT_REGION``;
- credentials: ``s3.accessKey``/``s3.secretKey``/``s3.sessionToken`` or ``fs.s3a.access.key``
  /``secret.key``/``session.token``, else the SDK's own chain (``AWS_ACCESS_KEY_ID``...,
  ``~/.aws``, the instance's role), as pyarrow resolves it where the read runs.

A store that cannot be read raises the `OSError` Python would for a file, with the URL as its
`filename`: `FileNotFoundError` (no such bucket or object), `PermissionError` (access denied),
`ConnectionError` (the endpoint does not answer), an `OSError` with the store's words otherwise.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import posixpath
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

# the URL schemes read through pyarrow.fs, and the store each names
SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "abfs", "abfss": "abfs", "hdfs": "hdfs"}
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$", re.S)
_MAGIC = re.compile(r"[*?\[]")
FETCH_BLOCK = 8 << 20  # a ranged read's size: large enough that a request's latency is paid rarely
COPY_BLOCK = 4 << 20  # a sequential read's piece


@dataclass(frozen=True)
class Store:
    """How to reach the stores: an S3 endpoint ("http://127.0.0.1:9000", "host:port" meaning
    https), region and credentials; None leaves each to the SDK's own chain. Picklable: a Spark
    reader ships it to its tasks."""

    endpoint: str | None = None
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None

    # option name (the data source's, case-insensitive), Hadoop S3A name (spark.hadoop.fs.s3a.*)
    NAMES = {"endpoint": ("s3.endpoint", "endpoint"), "region": ("s3.region", "endpoint.region"),
             "access_key": ("s3.accessKey", "access.key"), "secret_key": ("s3.secretKey", "secret.key"),
             "session_token": ("s3.sessionToken", "session.token")}

    @classmethod
    def from_settings(cls, options: Mapping[str, str] | None = None, spark_conf: Mapping[str, str] | None = None,
                      env: Mapping[str, str] | None = None) -> Store:
        """The store settings from reader options (first), Spark's Hadoop S3A settings, then
        the environment (the AWS SDKs' variables)."""
        env = os.environ if env is None else env
        lowered = {k.lower(): v for k, v in (options or {}).items()}
        conf = spark_conf or {}
        found: dict[str, str | None] = {}
        for field, (option_name, s3a_name) in cls.NAMES.items():
            value = lowered.get(option_name.lower())
            if value is None:
                value = conf.get(f"spark.hadoop.fs.s3a.{s3a_name}") or conf.get(f"fs.s3a.{s3a_name}")
            found[field] = value or None
        if found["endpoint"] and "://" not in found["endpoint"]:
            ssl = conf.get("spark.hadoop.fs.s3a.connection.ssl.enabled") or conf.get("fs.s3a.connection.ssl.enabled")
            if str(ssl).strip().lower() == "false":
                found["endpoint"] = f"http://{found['endpoint']}"
        found["endpoint"] = found["endpoint"] or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        found["region"] = found["region"] or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        return cls(**found)


    def as_options(self) -> dict[str, str]:
        """The settings given, as the reader options that give them (``s3.endpoint``...)."""
        return {option: getattr(self, field) for field, (option, _) in self.NAMES.items()
                if getattr(self, field) is not None}


_store = Store.from_settings()


def configure(store: Store) -> None:
    """The settings URLs are read with in this process from now on (a Spark task sets its
    reader's; the command line keeps those of its environment)."""
    global _store
    _store = store


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a URL of a store read through pyarrow.fs (file:// is a local path)."""
    found = _URL.match(os.fspath(path)) if isinstance(path, str) else None
    return found is not None and found["scheme"].lower() in SCHEMES


# a live server, read as a replica (rdbspec.net.replica); `+cluster`: every master of its cluster
SERVER_SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")
CLUSTER_SUFFIX = "+cluster"


def is_server(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a live server's URL (`redis://…`, `rediss://…`, `redis+cluster://…`)."""
    found = _URL.match(path) if isinstance(path, str) else None
    return found is not None and found["scheme"].lower() in SERVER_SCHEMES


def is_cluster(path: str | os.PathLike[str]) -> bool:
    """Whether `path` names a cluster by one of its nodes (`redis+cluster://…`, `rediss+cluster://…`):
    its every master is read, as `--cluster` asks."""
    return is_server(path) and str(path).split("://", 1)[0].lower().endswith(CLUSTER_SUFFIX)


def shown(path: str) -> str:
    """`path` as a message names it: a server's URL without its password."""
    if not is_server(path):
        return path
    parts = urlsplit(path)
    if parts.password is None:
        return path
    user = f"{parts.username}@" if parts.username else ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=user + host))


def local_path(path: str) -> str:
    """`path` without a file:// or file: scheme."""
    if path.startswith("file://"):
        return path[len("file://"):]
    return path[len("file:"):] if path.startswith("file:") else path


def has_magic(path: str) -> bool:
    return _MAGIC.search(path) is not None


def _split_url(url: str) -> tuple[str, str, str]:
    """(scheme as written, the store kind, the path pyarrow.fs takes: bucket/key, or the
    authority's path for abfs and hdfs, whose filesystem is made from the URL)."""
    found = _URL.match(url)
    if found is None or found["scheme"].lower() not in SCHEMES:
        raise ValueError(f"not a store URL: {url}")
    scheme = found["scheme"]
    return scheme, SCHEMES[scheme.lower()], found["rest"]


def _pyarrow_fs() -> Any:
    try:
        import pyarrow.fs  # an optional dependency: only URLs need it
    except ImportError:
        raise OSError(errno.ENOPKG, "reading a URL needs pyarrow: pip install 'rdbspec[spark]' (or pyarrow)") from None
    return pyarrow.fs


@functools.lru_cache(maxsize=32)
def _filesystem(kind: str, authority: str, store: Store) -> Any:
    """The pyarrow filesystem of a store (one per store kind, authority and settings)."""
    fs = _pyarrow_fs()
    if kind == "s3":
        endpoint, scheme = store.endpoint, "https"
        if endpoint and "://" in endpoint:
            scheme, endpoint = endpoint.split("://", 1)
        return fs.S3FileSystem(endpoint_override=endpoint, scheme=scheme, region=store.region,
                               access_key=store.access_key, secret_key=store.secret_key,
                               session_token=store.session_token, connect_timeout=10, request_timeout=60)
    if kind == "gcs":
        return fs.GcsFileSystem()
    filesystem, _ = fs.FileSystem.from_uri(authority)  # abfs:// and hdfs://: the account or namenode in the URL
    return filesystem


def _resolve(url: str) -> tuple[Any, str]:
    """(the pyarrow filesystem, the path in it) of `url`."""
    scheme, kind, rest = _split_url(url)
    if kind in ("s3", "gcs"):
        return _filesystem(kind, "", _store), rest.rstrip("/")
    authority, _, path = rest.partition("/")
    root = f"{scheme}://{authority}/"
    if kind == "abfs":  # container@account...: the container is the path's first part
        container, _, _ = authority.partition("@")
        return _filesystem(kind, root, _store), posixpath.join(container, path).rstrip("/")
    return _filesystem(kind, root, _store), "/" + path.rstrip("/")


def _url_of(url: str, fs_path: str) -> str:
    """The URL of `fs_path`, a path in the filesystem of `url` (a listing's entry)."""
    scheme, kind, rest = _split_url(url)
    if kind in ("s3", "gcs"):
        return f"{scheme}://{fs_path}"
    authority = rest.partition("/")[0]
    if kind == "abfs":
        fs_path = fs_path.partition("/")[2]
    return f"{scheme}://{authority}/{fs_path.lstrip('/')}"


def store_error(err: OSError, url: str) -> OSError:
    """The error of reading `url`, as the OSError of a file: its kind told apart, the URL its
    filename, the store's own words (pyarrow's message) its text."""
    words = str(err).strip().splitlines()[0] if str(err).strip() else err.__class__.__name__
    if isinstance(err, FileNotFoundError):
        return FileNotFoundError(errno.ENOENT, "no such object or bucket", url)
    if isinstance(err, PermissionError) or "ACCESS_DENIED" in words or "AccessDenied" in words:
        return PermissionError(errno.EACCES, f"access denied ({words})", url)
    if "NETWORK_CONNECTION" in words or "Could not connect" in words or "curlCode" in words:
        return ConnectionError(errno.ECONNREFUSED, f"the store's endpoint does not answer ({words})", url)
    return OSError(err.errno or errno.EIO, words, url)


@dataclass(frozen=True)
class Info:
    """What the store says of an object: its size and modification time (ns), None if unknown."""

    size: int
    mtime_ns: int | None


def _info(url: str) -> Any:
    fs, path = _resolve(url)
    try:
        return fs.get_file_info(path)
    except OSError as err:
        raise store_error(err, url) from None


def stat(url: str) -> Info:
    """The size and modification time of the object `url` names (FileNotFoundError if none)."""
    info = _info(url)
    if info.type.name != "File":
        raise (IsADirectoryError(errno.EISDIR, "a directory, not an object", url) if info.type.name == "Directory"
               else FileNotFoundError(errno.ENOENT, "no such object or bucket", url))
    return Info(info.size, info.mtime_ns)


def kind(url: str) -> str:
    """"file", "directory" or "missing"."""
    name = _info(url).type.name
    return {"File": "file", "Directory": "directory"}.get(name, "missing")


def entries(url: str) -> list[str]:
    """The URLs of what the directory `url` holds (objects and directories), sorted."""
    fs, path = _resolve(url)
    selector = _pyarrow_fs().FileSelector(path, recursive=False, allow_not_found=False)
    try:
        return sorted(_url_of(url, i.path) for i in fs.get_file_info(selector))
    except OSError as err:
        raise store_error(err, url) from None


def walk(url: str) -> Iterator[str]:
    """The URLs of the objects under the directory `url`, recursively, sorted."""
    fs, path = _resolve(url)
    selector = _pyarrow_fs().FileSelector(path, recursive=True, allow_not_found=False)
    try:
        infos = fs.get_file_info(selector)
    except OSError as err:
        raise store_error(err, url) from None
    yield from sorted(_url_of(url, i.path) for i in infos if i.type.name == "File")


def glob(pattern: str) -> list[str]:
    """The object URLs matching `pattern` (fnmatch's `*`, `?`, `[...]`, within one part of the
    path), sorted: the store is listed from the last part without a wildcard."""
    scheme, _, rest = _split_url(pattern)
    parts = rest.split("/")
    fixed = next(i for i, part in enumerate(parts) if has_magic(part))
    if fixed == 0:
        raise ValueError(f"a wildcard in the bucket or authority of {pattern} is not listed")
    base = f"{scheme}://{'/'.join(parts[:fixed])}"
    depth = len(parts)
    matches = []
    for url in walk(base):
        found = url.split("://", 1)[1].split("/")
        if len(found) == depth and all(fnmatch.fnmatchcase(f, p) for f, p in zip(found, parts)):
            matches.append(url)
    return matches


def open_stream(url: str) -> _Errors:
    """The object `url` names, to be read once in order (read(n) until b"")."""
    fs, path = _resolve(url)
    try:
        return _Errors(fs.open_input_stream(path, buffer_size=COPY_BLOCK), url)
    except OSError as err:
        raise store_error(err, url) from None


class _Errors:
    """A pyarrow stream whose errors are `store_error`s."""

    def __init__(self, stream: Any, url: str):
        self._stream, self._url = stream, url

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._stream.read(None if size < 0 else size)
        except OSError as err:
            raise store_error(err, self._url) from None
        return data

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> _Errors:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def fetch(url: str, size: int, ranges: list[tuple[int, int]]) -> IO[bytes]:
    """A temporary file of `size` bytes holding the bytes of `url` in `ranges` ((start, end)
    pairs) at their own offsets, read with ranged reads of `FETCH_BLOCK` bytes; the rest is a
    hole the file system does not store. Closing it deletes it."""
    fs, path = _resolve(url)
    spool = tempfile.TemporaryFile(prefix="rdbspec-range-")
    try:
        spool.truncate(size)
        with fs.open_input_file(path) as remote:
            for start, end in _merged(ranges, size):
                for at in range(start, end, FETCH_BLOCK):
                    piece = remote.read_at(min(FETCH_BLOCK, end - at), at)
                    if len(piece) != min(FETCH_BLOCK, end - at):
                        raise OSError(errno.EIO, f"the object ended at byte {at + len(piece)}, before {end}", url)
                    os.pwrite(spool.fileno(), piece, at)
    except OSError as err:
        spool.close()
        if err.filename:  # ours, named already
            raise
        raise store_error(err, url) from None
    except BaseException:
        spool.close()
        raise
    return spool


def _merged(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """`ranges` within [0, size), sorted, overlapping or touching ones joined."""
    out: list[tuple[int, int]] = []
    for start, end in sorted((max(0, s), min(size, e)) for s, e in ranges):
        if start >= end:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


class StorePath:
    """An object or directory of a store, with the few operations of `pathlib.Path` that finding
    a Dragonfly snapshot set's files takes (its name, parent, siblings; whether it exists or
    is a directory; what a directory holds). `os.fspath` gives its URL."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self._scheme, _, self._rest = self.url.partition("://")

    def __fspath__(self) -> str:
        return self.url

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"StorePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorePath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __truediv__(self, name: str) -> StorePath:
        return StorePath(f"{self.url}/{name}")

    @property
    def name(self) -> str:
        return posixpath.basename(self._rest)

    @property
    def parent(self) -> StorePath:
        return StorePath(f"{self._scheme}://{posixpath.dirname(self._rest)}")

    def with_name(self, name: str) -> StorePath:
        return self.parent / name

    def exists(self) -> bool:
        return kind(self.url) != "missing"

    def is_dir(self) -> bool:
        return kind(self.url) == "directory"

    def iterdir(self) -> Iterator[StorePath]:
        return (StorePath(url) for url in entries(self.url))


def path_of(path: str | os.PathLike[str]) -> AnyPath:
    """`path` as a `pathlib.Path`, or a `StorePath` for a store's URL."""
    name = os.fspath(path)
    return StorePath(name) if is_url(name) else Path(local_path(name))


AnyPath = Path | StorePath  # a local file's path or a store's object
