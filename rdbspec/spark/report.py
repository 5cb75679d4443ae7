"""`rdbspec pipeline ... --report report.html`: the page of `rdbspec report`, over every input,
made from the tables of the ``rdb`` data source: the keys table's rows (with their `memory`
column) go through `report.data.ReportBuilder` one at a time on the driver, the stream tables
are first summed per group by Spark.

A group's figures, as `report.data.group_summary` takes them from a stream: its lag and pending
count (stream_groups), each consumer's pending count (stream_consumers), and the pending entry
with the lowest ID with its delivery time (stream_pending).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..report.data import GroupSummary, ReportBuilder, ctime_ms

# the tables the page is made from
REPORT_TABLES = ("keys", "streams", "stream_groups", "stream_consumers", "stream_pending", "aux")
STREAM = ["file", "db", "key"]
GROUP = [*STREAM, "group"]


def save_time_ms(aux: Any) -> int | None:
    """The latest save of the inputs: the last ms of the greatest `ctime` AUX field's second
    (as `report.data.save_time_ms` for one dump)."""
    from pyspark.sql import functions as F  # noqa: N812 - pyspark is the optional extra

    latest = (aux.where(F.col("name") == "ctime").select(F.max(F.col("value").cast("long")).alias("ctime"))
              .first()["ctime"])
    return None if latest is None else ctime_ms(latest)


def _groups(frames: dict[str, Any]) -> dict[tuple, list[GroupSummary]]:
    """Each stream's groups, keyed by (file, db, key)."""
    from pyspark.sql import functions as F  # noqa: N812

    ids = F.split(F.col("id"), "-")
    pending = frames["stream_pending"].select(
        *GROUP, F.struct(ids[0].cast("decimal(20,0)").alias("ms"), ids[1].cast("decimal(20,0)").alias("seq"),
                         F.col("delivery_time_ms").alias("delivered")).alias("entry"))
    oldest = pending.groupBy(*GROUP).agg(F.min("entry").alias("oldest"))
    consumers = (frames["stream_consumers"].groupBy(*GROUP)
                 .agg(F.collect_list(F.struct("consumer", "pel_count")).alias("consumer_pending")))
    rows = (frames["stream_groups"].join(oldest, GROUP, "left").join(consumers, GROUP, "left")
            .select(*GROUP, "lag", "pel_count", "oldest", "consumer_pending").toLocalIterator())
    found: dict[tuple, list[GroupSummary]] = defaultdict(list)
    for row in rows:
        first = row["oldest"]
        found[row["file"], row["db"], bytes(row["key"])].append(GroupSummary(
            bytes(row["group"]), row["lag"], row["pel_count"],
            sorted((bytes(c["consumer"]), c["pel_count"]) for c in row["consumer_pending"] or ()),
            None if first is None else (int(first["ms"]), int(first["seq"])),
            None if first is None else first["delivered"]))
    for summaries in found.values():  # a stream's groups, and a group's consumers, by name (their rax order)
        summaries.sort(key=lambda g: g.name)
    return found


def build(frames: dict[str, Any], builder: ReportBuilder) -> ReportBuilder:
    """Adds every row of the keys table, then every stream with its groups."""
    keys = frames["keys"].select("db", "key", "type", "encoding", "size_in_file", "elements", "memory",
                                 "expire_at_ms")
    for row in keys.toLocalIterator():
        elements = row["elements"] if row["elements"] is not None else 1  # a string or module value: 1
        builder.add_key(row["db"], bytes(row["key"]), row["type"], row["encoding"], row["size_in_file"], elements,
                        row["memory"], row["expire_at_ms"])
    groups = _groups(frames)
    for row in frames["streams"].select(*STREAM, "length", "nodes").toLocalIterator():
        key = bytes(row["key"])
        builder.add_stream(row["db"], key, row["length"], row["nodes"], groups.get((row["file"], row["db"], key), []))
    return builder
