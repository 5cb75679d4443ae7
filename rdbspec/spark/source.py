"""A PySpark (>= 4.0) Python Data Source for RDB dumps, registered as format ``"rdb"``.

    from rdbspec.spark import register
    register(spark)
    df = spark.read.format("rdb").option("table", "stream_entries").load("dumps/")

Paths may be a file, a glob, a directory (its files and those of its subdirectories, as
Spark's ``recursiveFileLookup`` reads them; names starting with ``.`` or ``_`` are skipped)
or a comma-separated list of those; several paths may also be passed as a list to ``load``.
In a directory only names matching ``pathGlobFilter`` (default ``*.rdb``) are read; files
named explicitly or by a glob always are. A path that names nothing, or inputs that hold no
dump, fail the query before any task runs. Paths are resolved on the driver: a local path
must be visible at the same place to every executor (local mode, a shared mount...), a
relative one is opened relative to the driver's working directory; a URL of an object store or
a distributed file system (``s3://``, ``s3a://``, ``gs://``, ``abfs://``, ``hdfs://``:
``rdbspec.read.location``) is listed and globbed on the driver, and each task reads its own
split's byte ranges of the object. The store is reached with the options ``s3.endpoint``,
``s3.region``, ``s3.accessKey``, ``s3.secretKey``, ``s3.sessionToken``, else the session's
``spark.hadoop.fs.s3a.*`` settings of the same meaning (endpoint, endpoint.region, access.key,
secret.key, session.token, connection.ssl.enabled), else the AWS SDKs' environment where the
reading runs (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``..., ``~/.aws``, an
instance's role). A missing object or bucket, a denied bucket or an endpoint that does not
answer fails the query naming the URL. On a cluster the executors' Python needs rdbspec and
pyarrow (`register`; README, "Running on a cluster").

A Dragonfly DFS set (a ``<name>-summary.dfs`` file, one of its ``<name>-NNNN.dfs`` shards,
or a directory holding a set) is read as its summary and shard files, each file alone: one
task per shard. A missing or extra shard file fails the query, naming it.

Partitioning: one task per file, except that a file over ``splitSize`` bytes is split by a
fast index pass on the driver (``rdbspec.read.splits``: the offsets of key records, stepping over
values without decoding them) into byte ranges that separate tasks parse; for
``stream_entries``, a stream key over ``splitSize`` is further split into ranges of its
listpack nodes; for the stream tables, the byte ranges holding no stream key (which the index
pass has read already) are left out. The pass runs where Spark plans the read (a Python worker
of the driver), once a file for every table: the worker keeps the plans for the session's later
reads (`CUTTINGS`). A store's object over ``splitSize`` is read once, in order, by the index
pass, and split by keys only: its tasks fetch their byte ranges (and the records before the
databases), a stream key bigger than a split is one task's. Rows come out in file order, and a
split read gives exactly the rows of an unsplit read. (Splits check what they see: with splits,
a stream's entry order is checked within each node range and its live count is not checked
against its length.) The ``files`` and ``aux`` tables always read each file whole. Each task
reads with the single-process
library and yields ``pyarrow.RecordBatch`` es of at most ``batchSize`` rows.

Tables (``option("table", ...)``, default ``keys``); every row starts with ``file`` (the
path as resolved) and ``db`` (the database number; null where it does not apply):

``keys``
    key binary, key_str (UTF-8 text of the key, null when not valid UTF-8), type, rdb_type
    (the type byte), encoding, expire_at_ms (absolute unix ms), idle (seconds, LRU), freq
    (LFU), offset (byte offset of the record), size_in_file (bytes of the record), elements
    (items of a list/set/zset/hash, entries of a stream, paths of a Valkey path hash; null for
    strings and modules), memory (the bytes ``MEMORY USAGE key SAMPLES 0`` answers on the
    server that loads the dump: ``rdbspec.memory``, for the version the dump's AUX names, or
    option ``memoryVersion`` (7.0, valkey-9.1...), and option ``allocator``: jemalloc, the
    default, or libc; null for a value the model does not size: Valkey 9.2's path hash, Redis
    8.8's sparse array, a hash of Redis 8.10's templates). A template hash is a row of type
    hash, its encoding template-listpack or template-array.
``streams``
    key, length, last_id, first_id, max_deleted_id (IDs as "ms-seq" text), entries_added,
    nodes (listpack nodes), groups (consumer groups).
``stream_entries``
    key, id ("ms-seq"), ms decimal(20,0), seq decimal(20,0) (IDs are unsigned 64-bit),
    fields array<struct<field binary, value binary>>, deleted. Deleted entries (still in
    the listpacks) only with ``includeDeleted``.
``stream_groups``
    key, group, last_delivered_id, entries_read, lag, pel_count, consumers. ``lag`` is what
    XINFO GROUPS answers for the server generation that writes the stream's type
    (``stream_commands.group_lag``): null where the server says nil, e.g. when entries were
    deleted after the group's position or entries_read is unknown.
``stream_pending``
    key, group, id, consumer (null if no consumer claims it), delivery_time_ms, delivery_count,
    nacked (the entry is in its group's NACK zone: released by XNACK, Redis 8.8 type 27; its
    consumer is null).
``stream_consumers``
    key, group, consumer, seen_time_ms, active_time_ms (null before RDB 11), pel_count.
``aux``
    name, value (AUX fields as text, bytes that are not UTF-8 backslash-escaped).
``files``
    one row per file: version, dialect, keys (records read), checksum (status), error
    (null when the file was read whole). With ``ignoreCorruptFiles`` this is where a
    skipped file is reported.

Options: ``table``; ``db`` (comma-separated numbers); ``keyPattern`` (a glob matched
against the whole key, ``fnmatch`` syntax: ``*``, ``?``, ``[abc]``, ``[!abc]``);
``pathGlobFilter`` (see above); ``types`` (comma-separated type names: string, list, set,
zset, hash, stream, module...);
``includeDeleted`` (default false); ``ignoreCorruptFiles`` (default false: a corrupt file
fails the query with an error naming the file and the byte offset; true: the rest of that
file is skipped, rows read before the problem are kept, as Spark's own option does, and a
line is written to the worker's stderr and to the ``files`` table); ``warnCorruptFiles``
(default true: write that line; a reader of several tables of the same files, as the
pipeline, keeps it for the first); ``verifyChecksum``
(default true; with splits, the task of a file's last split verifies it); ``batchSize``
(default 4096); ``splitSize`` (bytes, or with a ``k``/``m``/``g`` suffix; default ``64m``);
``memoryVersion`` and ``allocator`` (the server the ``memory`` column counts for: see ``keys``).
With ``ignoreCorruptFiles`` and splits, a problem ends the split it is in (as Spark's own
option does for splittable files): a value that cannot be decoded in the middle of a file
drops the rest of its split, not the rest of the file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from .. import memory
from ..errors import RdbError, RdbspecError, ServerError, as_internal, file_error_line, internal_error_line
from ..read import backend, location
from ..read.splits import Cutting, Split, open_split, plan, read_nodes
from ..read.streams import EntryColumns
from ..read.values import STREAM_KINDS
from ..server.streams import group_lag, stream_version
from .entries import entry_batch
from .options import STREAM_TABLES, TABLES, ReadOptions, option, resolve_paths

FORMAT = "rdb"
# The Python of the executors' workers that run the reads (Spark's Arrow runner; PySpark's own
# default is the Python the data source was registered with)
EXECUTOR_PYTHON = "spark.sql.execution.pyspark.python"
# a stream bigger than the split size is read in parts of the split size, as many as that makes:
# the tasks are the cluster's to spread
STREAM_PARTS = sys.maxsize

_COMMON = [StructField("file", StringType(), False), StructField("db", IntegerType(), True)]
_KEY = StructField("key", BinaryType(), False)
_GROUP = StructField("group", BinaryType(), False)


def _schema(*fields: StructField) -> StructType:
    return StructType(_COMMON + list(fields))


SCHEMAS: dict[str, StructType] = {
    "keys": _schema(
        _KEY,
        StructField("key_str", StringType(), True),
        StructField("type", StringType(), False),
        StructField("rdb_type", IntegerType(), False),
        StructField("encoding", StringType(), False),
        StructField("expire_at_ms", LongType(), True),
        StructField("idle", LongType(), True),
        StructField("freq", IntegerType(), True),
        StructField("offset", LongType(), False),
        StructField("size_in_file", LongType(), False),
        StructField("elements", LongType(), True),
        StructField("memory", LongType(), True),
    ),
    "streams": _schema(
        _KEY,
        StructField("length", LongType(), False),
        StructField("last_id", StringType(), False),
        StructField("first_id", StringType(), True),
        StructField("max_deleted_id", StringType(), True),
        StructField("entries_added", LongType(), True),
        StructField("nodes", IntegerType(), False),
        StructField("groups", IntegerType(), False),
    ),
    "stream_entries": _schema(
        _KEY,
        StructField("id", StringType(), False),
        StructField("ms", DecimalType(20, 0), False),
        StructField("seq", DecimalType(20, 0), False),
        StructField("fields", ArrayType(StructType([
            StructField("field", BinaryType(), False),
            StructField("value", BinaryType(), False),
        ]), False), False),
        StructField("deleted", BooleanType(), False),
    ),
    "stream_groups": _schema(
        _KEY,
        _GROUP,
        StructField("last_delivered_id", StringType(), False),
        StructField("entries_read", LongType(), True),
        StructField("lag", LongType(), True),
        StructField("pel_count", LongType(), False),
        StructField("consumers", IntegerType(), False),
    ),
    "stream_pending": _schema(
        _KEY,
        _GROUP,
        StructField("id", StringType(), False),
        StructField("consumer", BinaryType(), True),
        StructField("delivery_time_ms", LongType(), False),
        StructField("delivery_count", LongType(), False),
        StructField("nacked", BooleanType(), False),
    ),
    "stream_consumers": _schema(
        _KEY,
        _GROUP,
        StructField("consumer", BinaryType(), False),
        StructField("seen_time_ms", LongType(), False),
        StructField("active_time_ms", LongType(), True),
        StructField("pel_count", LongType(), False),
    ),
    "aux": _schema(
        StructField("name", StringType(), False),
        StructField("value", StringType(), True),
    ),
    "files": _schema(
        StructField("version", IntegerType(), True),
        StructField("dialect", StringType(), True),
        StructField("keys", LongType(), False),
        StructField("checksum", StringType(), True),
        StructField("error", StringType(), True),
    ),
}
assert tuple(SCHEMAS) == TABLES, "options.TABLES names the tables of SCHEMAS, in order"


# -- rows -------------------------------------------------------------------------------------

def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _sid(stream_id: tuple[int, int] | None) -> str | None:
    return None if stream_id is None else f"{stream_id[0]}-{stream_id[1]}"


class _Batcher:
    """Accumulates columns for one table (Python lists of rows, or Arrow arrays of many rows)
    and cuts them into RecordBatches."""

    def __init__(self, schema: StructType, size: int):
        from pyspark.sql.pandas.types import to_arrow_schema

        self.arrow_schema = to_arrow_schema(schema)
        self.names = schema.names
        self.size = size
        self.columns: dict[str, list] = {n: [] for n in self.names}
        self.chunks: list[Any] = []  # Arrow RecordBatches, before the rows of `columns`
        self.rows = 0

    def add(self, **row: Any) -> None:
        for n in self.names:
            self.columns[n].append(row.get(n))
        self.rows += 1

    def add_batch(self, batch: Any) -> None:
        """Rows given as a RecordBatch of the table's Arrow schema."""
        self.chunks.append(batch)
        self.rows += batch.num_rows

    def full(self) -> bool:
        return self.rows >= self.size

    def take(self) -> Any:
        """The rows added since the last take as one Arrow RecordBatch."""
        import pyarrow as pa

        if any(self.columns[n] for n in self.names):
            self.chunks.append(pa.RecordBatch.from_arrays(
                [pa.array(self.columns[f.name], type=f.type) for f in self.arrow_schema], schema=self.arrow_schema))
        chunks = self.chunks
        self.columns = {n: [] for n in self.names}
        self.chunks = []
        self.rows = 0
        if len(chunks) == 1:
            return chunks[0]
        batch = pa.Table.from_batches(chunks, schema=self.arrow_schema).combine_chunks().to_batches()
        return batch[0] if batch else pa.RecordBatch.from_pylist([], schema=self.arrow_schema)


def _stream_rows(table: str, out: _Batcher, file: str, db: int, key: bytes, stream: Any,
                 include_deleted: bool) -> Iterator[Any]:
    """Adds the rows one stream gives `table`, yielding batches as they fill."""
    base = {"file": file, "db": db, "key": key}
    if table == "streams":
        out.add(**base, length=stream.length, last_id=_sid(stream.last_id), first_id=_sid(stream.first_id),
                max_deleted_id=_sid(stream.max_deleted_entry_id), entries_added=stream.entries_added,
                nodes=len(stream.nodes), groups=len(stream.groups))
    elif table == "stream_entries":
        yield from _entry_rows(out, file, db, key, stream.node_entries(), include_deleted)
    elif table == "stream_groups":
        for g in stream.groups:
            out.add(**base, group=g.name, last_delivered_id=_sid(g.last_delivered_id),
                    entries_read=g.entries_read, lag=group_lag(stream, g, stream_version(stream)),
                    pel_count=len(g.pending), consumers=len(g.consumers))
    elif table == "stream_pending":
        for g in stream.groups:
            released = g.nacked_ids()
            for p in g.pending:
                out.add(**base, group=g.name, id=_sid(p.id), consumer=p.consumer,
                        delivery_time_ms=p.delivery_time_ms, delivery_count=p.delivery_count,
                        nacked=p.id in released)
                if out.full():
                    yield out.take()
    elif table == "stream_consumers":
        for g in stream.groups:
            for c in g.consumers:
                out.add(**base, group=g.name, consumer=c.name, seen_time_ms=c.seen_time_ms,
                        active_time_ms=c.active_time_ms, pel_count=len(c.pending))
    if out.full():
        yield out.take()


def _entry_rows(out: _Batcher, file: str, db: int, key: bytes, nodes: Iterator[tuple[Any, Any]],
                include_deleted: bool) -> Iterator[Any]:
    """Adds the `stream_entries` rows of decoded nodes: nodes' columns are gathered until the
    batch is full, then made into one RecordBatch at once (`entries.entry_batch`)."""
    gathered: list[EntryColumns] = []
    rows = 0
    for _, got in nodes:
        gathered.append(got.columns)
        rows += len(got.columns)
        if out.rows + rows >= out.size:
            out.add_batch(entry_batch(gathered, include_deleted, out.arrow_schema, file, db, key))
            gathered, rows = [], 0
            yield out.take()
    if gathered:
        out.add_batch(entry_batch(gathered, include_deleted, out.arrow_schema, file, db, key))
        if out.full():
            yield out.take()


class CorruptFileError(RdbspecError):
    """A dump that cannot be read, named with its path and the byte offset of the problem."""


class InternalReadError(RdbspecError):
    """A bug of rdbspec met while reading a dump (not a corrupt file: never skipped); the
    message is the CLI's one line (`errors.internal_error_line`), which the pipeline prints."""


def read_split(split: Split, opts: ReadOptions, warn: Callable[[str], None] | None = None,
               directory: str = "") -> Iterator[Any]:
    """The RecordBatches of `opts.table` for one split of a file (the body of one partition). A
    relative path is opened in `directory` (the driver's working directory) and named as given."""
    out = _Batcher(SCHEMAS[opts.table], opts.batch_size)
    table = opts.table
    path = location.shown(split.path)  # a live server's URL names it without its password
    dump = None
    records = 0
    try:
        location.configure(opts.store)
        dump = open_split(split, opts.verify_checksum, directory)
        if split.start is not None:
            dump.seek(split.start, split.db)
        per_key = table not in ("aux", "files")
        model = memory.model_for(dump, opts.memory_server, opts.allocator) if table == "keys" else None
        kinds = STREAM_KINDS if table in STREAM_TABLES else None  # the stream tables' rows are in streams only
        for record in dump.keys(split.end, kinds):
            records += 1
            if not per_key:
                continue
            if model is not None:  # the keys table
                if not opts.selects(record):
                    continue
                out.add(file=path, db=record.db, key=record.key, key_str=_utf8(record.key),
                        type=record.type_name, rdb_type=record.rdb_type, encoding=record.encoding,
                        expire_at_ms=record.expire_at_ms, idle=record.idle, freq=record.freq,
                        offset=record.offset, size_in_file=record.size, elements=record.count_elements(),
                        memory=model.usage(record))
                if out.full():
                    yield out.take()
            elif not opts.selects(record):  # the stream tables: stream keys only (`kinds`)
                continue
            elif split.part is not None:
                yield from _entry_rows(out, path, record.db, record.key, read_nodes(record, split.part),
                                       opts.include_deleted)
            else:
                yield from _stream_rows(table, out, path, record.db, record.key, record.value,
                                        opts.include_deleted)
        if table == "aux":
            for name, value in dump.aux:
                out.add(file=path, db=None, name=name.decode("utf-8", "backslashreplace"),
                        value=value.decode("utf-8", "backslashreplace"))
        elif table == "files":
            out.add(file=path, db=None, version=dump.header.version, dialect=dump.header.dialect,
                    keys=records, checksum=dump.checksum_status, error=None)
    except (RdbError, OSError, ServerError) as err:  # ServerError: a live server that refuses its RDB
        message = file_error_line(path, err, getattr(dump, "last_key", None))
        if not opts.ignore_corrupt_files:
            raise CorruptFileError(message) from None
        if opts.warn_corrupt_files:
            (warn or _stderr)(f"rdbspec: skipping the rest of a corrupt file: {message}")
        if table == "files":
            header = dump.header if dump is not None else None
            out.add(file=path, db=None, version=header.version if header else None,
                    dialect=header.dialect if header else None, keys=records,
                    checksum=dump.checksum_status if dump is not None else None, error=message)
    except Exception as err:  # noqa: BLE001 - a bug of ours, not a corrupt file
        current = dump.current if dump is not None else None
        raise InternalReadError(internal_error_line(as_internal(err, current), path)) from err
    finally:
        if dump is not None:
            dump.close()
    if out.rows:
        yield out.take()


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the Spark data source ----------------------------------------------------------------------

S3A_CONF = "spark.hadoop.fs.s3a."


class RdbPartition(InputPartition):
    def __init__(self, split: Split):
        super().__init__(split)
        self.split = split


# How each table that reads keys cuts a file (`files` and `aux` read each file whole): one index
# pass plans a file for all of them, so that a session reading several tables of it (the pipeline)
# reads it once to plan
CUTTINGS = {table: Cutting(STREAM_PARTS if table == "stream_entries" else 0, table in STREAM_TABLES)
            for table in TABLES if table not in ("files", "aux")}
EVERY_CUTTING = tuple(sorted(set(CUTTINGS.values())))


def plan_splits(files: list[str], opts: ReadOptions) -> list[Split]:
    """The splits of every file, in order (the index pass runs here, for the files over
    `opts.split_size`: in the Python worker where Spark plans the read, which keeps the plans,
    `splits._planned`); for the stream tables, without the splits holding no stream."""
    location.configure(opts.store)
    if opts.table in ("files", "aux"):
        return [Split(f) for f in files]
    cutting = CUTTINGS[opts.table]
    # a live server is one task, which takes its RDB as a replica does: it cannot be read in ranges
    return [s for f in files for s in ([Split(f)] if location.is_server(f) else
                                       plan(f, opts.split_size, cutting.parts, cutting.streams_only, EVERY_CUTTING))]


class RdbReader(DataSourceReader):
    def __init__(self, files: list[str], opts: ReadOptions):
        self.files = files
        self.opts = opts
        # where the paths were resolved: an executor's own working directory is another
        self.directory = os.getcwd()
        self.backend = backend.name()  # chosen on the driver; the workers run the same parsers

    def partitions(self) -> list[RdbPartition]:
        return [RdbPartition(split) for split in plan_splits(self.files, self.opts)]

    def read(self, partition: RdbPartition) -> Iterator[Any]:  # type: ignore[override]
        backend.select(self.backend)
        yield from read_split(partition.split, self.opts, directory=self.directory)


class RdbDataSource(DataSource):
    """``spark.read.format("rdb")``: see the module documentation for tables and options."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    # the session's Hadoop S3A settings (spark.hadoop.fs.s3a.*) at `register`: the defaults of the
    # store options, which the planner (a Python worker, with no session to ask) cannot read
    s3a_conf: dict[str, str] = {}

    def _opts(self) -> ReadOptions:
        return ReadOptions.parse(dict(self.options), self.s3a_conf)

    def schema(self) -> StructType:
        return SCHEMAS[self._opts().table]

    def reader(self, schema: StructType) -> RdbReader:
        options = dict(self.options)
        specs: list[str] = []
        path = option(options, "path")
        if path:
            specs.append(path)
        many = option(options, "paths")
        if many:
            specs.extend(json.loads(many))
        if not specs:
            raise ValueError("rdb: no input; use load(path) with a file, glob, directory or a comma list")
        opts = self._opts()
        location.configure(opts.store)  # the driver lists and plans with the reader's settings
        return RdbReader(resolve_paths(specs, option(options, "pathGlobFilter") or "*.rdb"), opts)


def register(spark: Any) -> None:
    """Registers the ``rdb`` format with a SparkSession, classic or Spark Connect
    (``SparkSession.builder.remote("sc://host:15002")``). Spark runs a Python data source in two
    places: its planning (schema, partitions) in a Python worker of the driver, its reads in the
    executors' Python workers. In a classic session the planning runs this Python, which has
    rdbspec (Spark would start the session's Python, ``PYSPARK_PYTHON`` or whatever ``python3``
    is on the PATH, which on a cluster is the executors' one: ``./environment/bin/python`` from
    ``spark.archives`` is no path on the driver); the reads run ``PYSPARK_PYTHON`` where it is
    set, through `EXECUTOR_PYTHON` (unless the session sets that already), and this Python
    otherwise. Over Spark Connect the server starts both, with its own ``PYSPARK_PYTHON``:
    rdbspec is installed there, and paths are the server's. The session's Hadoop S3A settings
    go with the registration (`RdbDataSource.s3a_conf`)."""
    # A Spark Connect session has no context (the attribute raises an AttributeError): the
    # client registers the class, which the server's workers import.
    context = getattr(spark, "sparkContext", None)
    session_python = context.pythonExec if context is not None else None  # read by PySpark when it wraps the class
    if context is not None:
        executors = os.environ.get("PYSPARK_PYTHON")
        if executors and spark.conf.get(EXECUTOR_PYTHON, None) is None:
            spark.conf.set(EXECUTOR_PYTHON, executors)
        context.pythonExec = sys.executable
    s3a_conf = {k: v for k, v in spark.conf.getAll.items() if k.startswith(S3A_CONF)}
    # a class of its own carries them (pickled by value with the registration), or the plain one
    source = type(RdbDataSource.__name__, (RdbDataSource,), {"s3a_conf": s3a_conf,
                                                              "__qualname__": "RdbDataSource.with_s3a_conf"})
    try:
        spark.dataSource.register(source if s3a_conf else RdbDataSource)
    finally:
        if context is not None:
            context.pythonExec = session_python
