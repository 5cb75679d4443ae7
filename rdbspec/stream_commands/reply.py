"""Renderings of a stream command's reply (see `commands.execute`).

* `to_resp2`: the reply as a RESP2 client receives it (bulk strings as bytes, maps flattened,
  null as None), to compare with a live server;
* `render_json`: JSON with the server's field names; byte strings as UTF-8 text or
  {"hex": ...}; entries as {"id": "ms-seq", "fields": [[f, v], ...]};
* `render_text`: what redis-cli prints for the RESP2 reply on a terminal.
"""

from __future__ import annotations

import json
from typing import Any

from ..jsonl import s
from ..read.streams import StreamEntry, format_id
from .groups import PendingRow, PendingSummary


def to_resp2(reply: Any) -> Any:
    """The reply as RESP2 values: bytes, int, None and lists."""
    if isinstance(reply, StreamEntry):
        flat = [x for pair in reply.fields for x in pair]
        return [format_id(reply.id).encode(), flat]
    if isinstance(reply, dict):
        return [x for k, v in reply.items() for x in (k.encode(), to_resp2(v))]
    if isinstance(reply, PendingSummary):
        return _summary(reply, lambda n: str(n).encode(), lambda i: format_id(i).encode(), bytes)
    if isinstance(reply, PendingRow):
        return [format_id(reply.id).encode(), reply.consumer, reply.idle_ms, reply.delivery_count]
    if isinstance(reply, str):
        return reply.encode()
    if isinstance(reply, list):
        return [to_resp2(x) for x in reply]
    return reply


def _summary(reply: PendingSummary, count: Any, stream_id: Any, name: Any) -> list:
    """[count, smallest, largest, [[consumer, "n"], ...]]: the server sends the per-consumer
    counts as bulk strings, and nulls when nothing is pending."""
    if not reply.count:
        return [0, None, None, None]
    return [reply.count, stream_id(reply.smallest), stream_id(reply.largest),
            [[name(consumer), count(n)] for consumer, n in reply.consumers]]


def to_json(reply: Any) -> Any:
    """The reply as JSON values."""
    if isinstance(reply, StreamEntry):
        return {"id": format_id(reply.id), "fields": [[s(f), s(v)] for f, v in reply.fields]}
    if isinstance(reply, dict):
        return {k: to_json(v) for k, v in reply.items()}
    if isinstance(reply, PendingSummary):
        return _summary(reply, str, format_id, s)
    if isinstance(reply, PendingRow):
        return [format_id(reply.id), s(reply.consumer) if reply.consumer is not None else None,
                reply.idle_ms, reply.delivery_count]
    if isinstance(reply, bytes):
        return s(reply)
    if isinstance(reply, list):
        return [to_json(x) for x in reply]
    return reply


def render_json(reply: Any) -> str:
    return json.dumps(to_json(reply), ensure_ascii=False)


_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t",
            7: "\\a", 8: "\\b"}


def repr_bytes(data: bytes) -> str:
    """redis sdscatrepr: a quoted string, non-printable bytes as \\xHH."""
    out = ['"']
    for byte in data:
        if byte in _ESCAPES:
            out.append(_ESCAPES[byte])
        elif 32 <= byte < 127:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    out.append('"')
    return "".join(out)


def _tty(value: Any, prefix: str) -> str:
    """redis-cli cliFormatReplyTTY for a RESP2 value."""
    if value is None:
        return "(nil)\n"
    if isinstance(value, int):
        return f"(integer) {value}\n"
    if isinstance(value, bytes):
        return repr_bytes(value) + "\n"
    if not value:
        return "(empty array)\n"
    width = len(str(len(value)))
    inner = prefix + " " * (width + 2)
    parts = []
    for i, item in enumerate(value):
        parts.append(f"{'' if i == 0 else prefix}{i + 1:>{width}}) " + _tty(item, inner))
    return "".join(parts)


def render_text(reply: Any) -> str:
    """The reply as redis-cli shows it (RESP2, on a terminal)."""
    return _tty(to_resp2(reply), "")
