"""Spark's `stream_entries` rows as Arrow record batches, built from the nodes' entry columns
without a Python object per row where the compiled builder runs.

`entry_buffers(nodes, include_deleted)` gives one batch's buffers, in the row order of the
nodes (deleted entries only with `include_deleted`), as a tuple:

    rows, ms, seq, deleted, id_offsets, id_data, pair_offsets,
    field_offsets, field_data, value_offsets, value_data

`ms` and `seq` are Arrow decimal128 per row (the table's decimal(20,0): the native uint64, then
a zero high word), `deleted` a bitmap (a bit per row, least significant first), `id_*` the "ms-seq"
texts, `pair_offsets` where each row's (field, value) pairs start (rows + 1 of them), `field_*`
and `value_*` the pairs' bytes (integers as their decimal text); offsets are native int32, as
Arrow's binary and list arrays hold them. The compiled `rdbspec.spark._entry_buffers` writes
them in C when it was built (setup.py), else `python_entry_buffers` gives the same bytes.
`entry_batch` makes them into the table's RecordBatch with no copy of the bytes.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Any

from ..read.elements import texts
from ..read.streams import EntryColumns, EntryFields

try:  # compiled by setup.py from _entry_buffers.pyx; absent without a C compiler
    from . import _entry_buffers
except ImportError:
    _entry_buffers = None  # type: ignore[assignment]


def python_entry_buffers(nodes: list[EntryColumns], include_deleted: bool) -> tuple:
    """`entry_buffers` in Python: the same bytes as the compiled builder."""
    ms, seq, deleted, pairs = array("Q"), array("Q"), bytearray(), array("i", [0])
    rows = 0
    fields: list[bytes] = []
    values: list[bytes] = []
    for cols in nodes:
        entry_fields = cols.fields
        assert isinstance(entry_fields, EntryFields)  # a node's columns (`EntryColumns.from_rows`)
        items, samefields, master = entry_fields.items, entry_fields.samefields, entry_fields.master_fields
        for row, (entry_ms, entry_seq, flag) in enumerate(zip(cols.ms, cols.seq, cols.deleted)):
            if flag and not include_deleted:
                continue
            ms.extend((entry_ms, 0))
            seq.extend((entry_seq, 0))
            if rows % 8 == 0:
                deleted.append(0)
            if flag:
                deleted[-1] |= 1 << (rows % 8)
            rows += 1
            row_texts = texts(items[row])
            if samefields[row]:
                count = min(len(row_texts), len(master))
                fields += master[:count]
                values += row_texts[:count]
            else:
                count = len(row_texts) // 2
                fields += row_texts[0:2 * count:2]
                values += row_texts[1:2 * count:2]
            pairs.append(pairs[-1] + count)
    ids = [b"%d-%d" % entry_id for entry_id in zip(ms[::2], seq[::2])]
    return (rows, ms.tobytes(), seq.tobytes(), bytes(deleted), *_binary(ids), pairs.tobytes(),
            *_binary(fields), *_binary(values))


def _binary(items: Sequence[bytes]) -> tuple[bytes, bytes]:
    """Arrow binary buffers: int32 offsets (OverflowError past 2 GiB) and the bytes."""
    return array("i", accumulate(map(len, items), initial=0)).tobytes(), b"".join(items)


entry_buffers = _entry_buffers.entry_buffers if _entry_buffers is not None else python_entry_buffers


@lru_cache(maxsize=4)
def _key_columns(file: str, db: int | None, key: bytes, rows: int) -> dict[str, Any]:
    """The columns of a batch that repeat one value (Arrow arrays are immutable: a stream's
    batches of the same size share them)."""
    import pyarrow as pa

    return {"file": pa.repeat(pa.scalar(file, pa.string()), rows), "db": pa.repeat(pa.scalar(db, pa.int32()), rows),
            "key": pa.repeat(pa.scalar(key, pa.binary()), rows)}


def entry_batch(nodes: list[EntryColumns], include_deleted: bool, schema: Any, file: str, db: int | None,
                key: bytes) -> Any:
    """The `stream_entries` RecordBatch (Arrow `schema`: the table's) of the nodes' entries."""
    import pyarrow as pa

    rows, ms, seq, deleted, id_offsets, ids, pair_offsets, field_offsets, fields, value_offsets, values = \
        entry_buffers(nodes, include_deleted)
    pairs = len(field_offsets) // 4 - 1
    pair_type = schema.field("fields").type
    struct = pa.Array.from_buffers(pair_type.value_type, pairs, [None], children=[
        pa.Array.from_buffers(pa.binary(), pairs, [None, pa.py_buffer(field_offsets), pa.py_buffer(fields)]),
        pa.Array.from_buffers(pa.binary(), pairs, [None, pa.py_buffer(value_offsets), pa.py_buffer(values)])])
    columns = {
        **_key_columns(file, db, key, rows),
        "id": pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(id_offsets), pa.py_buffer(ids)]),
        "ms": pa.Array.from_buffers(schema.field("ms").type, rows, [None, pa.py_buffer(ms)]),
        "seq": pa.Array.from_buffers(schema.field("seq").type, rows, [None, pa.py_buffer(seq)]),
        "fields": pa.Array.from_buffers(pair_type, rows, [None, pa.py_buffer(pair_offsets)], children=[struct]),
        "deleted": pa.Array.from_buffers(pa.bool_(), rows, [None, pa.py_buffer(deleted)]),
    }
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)
