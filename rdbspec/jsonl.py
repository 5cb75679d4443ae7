"""The `rdbspec dump` JSON Lines contract: one object per key, byte strings as UTF-8 text
or {"hex": ...}, stream IDs as "ms-seq" strings."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from typing import Any, TextIO

from .api import KeyRecord
from .streams import Stream, StreamEntry, format_id
from .values import ModuleValue


def s(data: bytes) -> Any:
    """A byte string: a JSON string when valid UTF-8, otherwise {"hex": "..."}."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": data.hex()}


def number(score: float) -> Any:
    if math.isnan(score):
        return "nan"
    if math.isinf(score):
        return "inf" if score > 0 else "-inf"
    return score


def entry_json(entry: StreamEntry) -> dict:
    row: dict[str, Any] = {"id": format_id(entry.id), "fields": [[s(f), s(v)] for f, v in entry.fields]}
    if entry.deleted:
        row["deleted"] = True
    return row


def stream_json(stream: Stream, include_deleted: bool, with_entries: bool = True) -> dict:
    entries = [entry_json(e) for e in stream.entries(include_deleted)] if with_entries else None
    return {
        "length": stream.length,
        "last_id": format_id(stream.last_id),
        "first_id": format_id(stream.first_id) if stream.first_id else None,
        "max_deleted_entry_id": format_id(stream.max_deleted_entry_id) if stream.max_deleted_entry_id else None,
        "entries_added": stream.entries_added,
        "entries": entries,
        "groups": [{
            "name": s(g.name),
            "last_delivered_id": format_id(g.last_delivered_id),
            "entries_read": g.entries_read,
            "pending": [{"id": format_id(p.id), "consumer": s(p.consumer) if p.consumer is not None else None,
                         "delivery_time_ms": p.delivery_time_ms, "delivery_count": p.delivery_count}
                        for p in g.pending],
            "consumers": [{"name": s(c.name), "seen_time_ms": c.seen_time_ms, "active_time_ms": c.active_time_ms,
                           "pending": [format_id(i) for i in c.pending]} for c in g.consumers],
        } for g in stream.groups],
    }


def plain_json(value: Any, key: str = "") -> Any:
    """A Dragonfly sketch/filter value (a dict): raw filter bytes as {"hex": ...}, item names
    (key "item") as byte strings, floats as `number`."""
    if isinstance(value, bytes):
        return s(value) if key == "item" else {"hex": value.hex()}
    if isinstance(value, dict):
        return {k: plain_json(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v, key) for v in value]
    if isinstance(value, float):
        return number(value)
    return value


def value_json(value: Any, include_deleted: bool, with_entries: bool = True) -> Any:
    if isinstance(value, bytes):
        return s(value)
    if isinstance(value, dict):
        return plain_json(value)
    if isinstance(value, Stream):
        return stream_json(value, include_deleted, with_entries)
    if isinstance(value, ModuleValue):
        return {"module": value.name, "encoding_version": value.encoding_version,
                "opcodes": [[name, s(v) if isinstance(v, bytes) else v] for name, v in value.opcodes]}
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, tuple) and isinstance(item[1], float):
                out.append([s(item[0]), number(item[1])])
            elif isinstance(item, tuple):
                out.append([s(x) for x in item])
            else:
                out.append(s(item))
        return out
    return value


def record_json(record: KeyRecord, include_deleted: bool = False, with_entries: bool = True) -> dict:
    out = {
        "db": record.db,
        "key": s(record.key),
        "type": record.type_name,
        "rdb_type": record.rdb_type,
        "expire_at_ms": record.expire_at_ms,
        "idle_s": record.idle,
        "freq": record.freq,
        "value": value_json(record.value, include_deleted, with_entries),
    }
    if record.field_expire_at_ms is not None:
        out["field_expire_at_ms"] = [[s(f), t] for f, t in record.field_expire_at_ms]
    member_ttls = record._decode().member_expire_at_ms
    if member_ttls is not None:
        out["member_expire_at_ms"] = [[s(m), t] for m, t in member_ttls]
    return out


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


_ENTRIES_SLOT = '"entries":null'
_SPOOL_IN_MEMORY = 8 << 20  # bytes of entry JSON kept in memory before spilling to a temporary file


def write_record(out: TextIO, record: KeyRecord, include_deleted: bool = False) -> None:
    """One JSON Lines record; a stream's entries are written one by one, so a million-entry
    stream never exists as one JSON text or one list of dicts."""
    value = record.value
    if not isinstance(value, Stream):
        out.write(dumps(record_json(record, include_deleted)) + "\n")
        return
    # the entries slot is the only one of its kind: names and values inside are escaped strings
    head, tail = dumps(record_json(record, include_deleted, with_entries=False)).split(_ENTRIES_SLOT, 1)
    # entries are checked as they are decoded: spool them, so a bad node leaves no partial line
    with tempfile.SpooledTemporaryFile(_SPOOL_IN_MEMORY, mode="w+", encoding="utf-8") as spool:
        for index, entry in enumerate(value.entries(include_deleted)):
            spool.write(("," if index else "") + dumps(entry_json(entry)))
        spool.seek(0)
        out.write(head + '"entries":[')
        shutil.copyfileobj(spool, out, 1 << 20)
    out.write("]" + tail + "\n")
