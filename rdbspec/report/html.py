"""The report page: `render(result)` turns `data.ReportBuilder.result()` into one HTML file that
needs nothing else (inline CSS and SVG, no script, no font or URL from outside).

Every key, prefix, group and consumer name is untrusted bytes: escaped, and shown readably
when it is not UTF-8 (its bytes decoded with \\xNN escapes, the hex in its tooltip). Sizes are
shown in KiB/MiB with the exact bytes in the tooltip; every number sits in an element with a
data attribute holding it exactly (`data-bytes`, `data-count`, `data-ms`), in sections with
stable ids: summary, type-mix, memory-by-type, prefixes, top-keys, expiry, streams.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from html import escape
from typing import Any

from .svg import Mark, attributes, bars, treemap

UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")
PREFIX_ROWS = 10  # children shown per prefix in the table (the treemap shows them all)

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;background:#f6f7f9;margin:0}
main{max-width:1200px;margin:0 auto;padding:16px 20px 40px;box-sizing:border-box}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:0 0 10px}h3{font-size:15px;margin:16px 0 6px}
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:14px 16px;margin:14px 0;overflow:hidden}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #dde1e6;border-radius:6px;padding:8px 12px;
min-width:130px}.card b{display:block;font-size:18px}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:13px}
th,td{border-bottom:1px solid #eceef1;padding:4px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f0f2f5;font-weight:600}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.bin{color:#8a3b00}.muted{color:#777}.label,.value,.tile{font-size:13px;fill:#222}.tile{font-size:11px;fill:#111}
ul.consumers{margin:0;padding-left:16px}
"""


def human_bytes(n: int) -> str:
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{n} bytes" if unit == 0 else f"{value:.1f} {UNITS[unit]}"


def human_ms(ms: int) -> str:
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    for size, unit in ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s")):
        if ms >= size:
            return f"{sign}{ms / size:.1f} {unit}"
    return f"{sign}{ms} ms"


def name_text(value: Any) -> str:
    """A name as `rdbspec keys --csv` writes it: the text, or the JSON of {"hex": ...}."""
    return json.dumps(value) if isinstance(value, dict) else str(value)


def name_html(value: Any) -> str:
    """A name, readable and escaped: non-UTF-8 bytes and control characters as \\xNN."""
    if isinstance(value, dict):
        raw = bytes.fromhex(value["hex"])
        shown = raw.decode("utf-8", "backslashreplace")
        return (f'<span class="bin" title="not UTF-8; hex {escape(value["hex"], quote=True)}">'
                f'{escape(_printable(shown))}</span>')
    return escape(_printable(str(value)))


def _printable(text: str) -> str:
    return "".join(c if unicodedata.category(c) != "Cc" else f"\\x{ord(c):02x}" for c in text)


def _plain(value: Any) -> str:
    """A name for an SVG label or tooltip (escaped by the chart)."""
    if isinstance(value, dict):
        return _printable(bytes.fromhex(value["hex"]).decode("utf-8", "backslashreplace"))
    return _printable(str(value))


def bytes_cell(n: int | None, field: str = "memory", tag: str = "td") -> str:
    if n is None:
        return f'<{tag} class="num muted" data-field="{field}">-</{tag}>'
    return f'<{tag} class="num" data-field="{field}" data-bytes="{n}" title="{n} bytes">{human_bytes(n)}</{tag}>'


def count_cell(n: int | None, field: str, tag: str = "td", rowspan: int = 1) -> str:
    span = f' rowspan="{rowspan}"' if rowspan > 1 else ""
    if n is None:
        return f'<{tag}{span} class="num muted" data-field="{field}" data-nil="1">nil</{tag}>'
    return f'<{tag}{span} class="num" data-field="{field}" data-count="{n}">{n:,}</{tag}>'


def ms_cell(ms: int | None, field: str) -> str:
    if ms is None:
        return f'<td class="num muted" data-field="{field}">-</td>'
    return f'<td class="num" data-field="{field}" data-ms="{ms}" title="{ms} ms">{human_ms(ms)}</td>'


def _table(head: Iterable[tuple[str, bool]], rows: Iterable[str], widths: Iterable[int] = ()) -> str:
    """A table of `head`'s (name, numeric) columns; `widths` in percent, else even."""
    cols = "".join(f'<col style="width:{w}%">' for w in widths)
    cells = "".join(f'<th{" class=num" if numeric else ""}>{escape(name)}</th>' for name, numeric in head)
    return (f"<table>{f'<colgroup>{cols}</colgroup>' if cols else ''}<thead><tr>{cells}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _row(attrs: dict[str, Any], cells: Iterable[str]) -> str:
    return f"<tr{attributes(attrs)}>{''.join(cells)}</tr>"


def _section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{section_id}"><h2>{escape(title)}</h2>{body}</section>'


def summary(result: dict[str, Any]) -> str:
    totals, streams = result["totals"], result["streams"]
    cards = [("keys", count_cell(totals["keys"], "keys", "b")), ("memory", bytes_cell(totals["memory"], "memory", "b")),
             ("elements", count_cell(totals["elements"], "elements", "b")),
             ("size in the file", bytes_cell(totals["size_in_file"], "size_in_file", "b")),
             ("keys with an expiry", count_cell(totals["expires"], "expires", "b")),
             ("streams", count_cell(streams["streams"], "streams", "b"))]
    body = '<div class="cards">' + "".join(f'<div class="card">{value}{escape(name)}</div>' for name, value in cards)
    body += "</div><h3>Databases</h3>" + _table(
        [("db", False), ("keys", True), ("memory", True), ("elements", True), ("keys with an expiry", True)],
        (_row({"data-db": d["db"]}, [f"<td>{d['db']}</td>", count_cell(d["keys"], "keys"),
                                     bytes_cell(d["memory"]), count_cell(d["elements"], "elements"),
                                     count_cell(d["expires"], "expires")]) for d in result["databases"]))
    return _section("summary", "Summary", body)


def type_mix(result: dict[str, Any]) -> str:
    types = result["types"]
    chart = bars([Mark(t["type"], t["keys"], f"{t['keys']:,} keys", f"{t['type']}: {t['keys']} keys",
                       {"data-type": t["type"], "data-count": t["keys"]}) for t in types], "keys by type")
    table = _table([("type", False), ("keys", True), ("elements", True), ("memory", True), ("size in the file", True)],
                   (_row({"data-type": t["type"]}, [f"<td>{escape(t['type'])}</td>", count_cell(t["keys"], "keys"),
                                                    count_cell(t["elements"], "elements"), bytes_cell(t["memory"]),
                                                    bytes_cell(t["size_in_file"], "size_in_file")]) for t in types))
    return _section("type-mix", "Keys by type", chart + table)


def memory_by_type(result: dict[str, Any]) -> str:
    chart = bars([Mark(t["type"], t["memory"], human_bytes(t["memory"]), f"{t['type']}: {t['memory']} bytes",
                       {"data-type": t["type"], "data-bytes": t["memory"]}) for t in result["types"]],
                 "memory by type")
    table = _table([("type", False), ("encoding", False), ("keys", True), ("elements", True), ("memory", True)],
                   (_row({"data-type": e["type"], "data-encoding": e["encoding"]},
                         [f"<td>{escape(e['type'])}</td>", f"<td>{escape(e['encoding'])}</td>",
                          count_cell(e["keys"], "keys"), count_cell(e["elements"], "elements"),
                          bytes_cell(e["memory"])]) for e in result["encodings"]))
    return _section("memory-by-type", "Memory by type and encoding", chart + "<h3>By encoding</h3>" + table)


def _prefix_label(node: dict[str, Any], separator: str) -> tuple[str, str]:
    """(the text shown, the data-prefix value) of a prefix or of an `other` node."""
    if node.get("other"):
        parent = "" if node["prefix"] is None else _plain(node["prefix"]) + separator
        return f"{parent}(other prefixes)", ""
    return _plain(node["prefix"]), name_text(node["prefix"])


def _prefix_marks(nodes: list[dict[str, Any]], separator: str) -> list[Mark]:
    marks = []
    for node in nodes:
        shown, data = _prefix_label(node, separator)
        title = f"{shown}: {node['memory']} bytes, {node['keys']} keys, {node['elements']} elements"
        marks.append(Mark(shown, node["memory"], human_bytes(node["memory"]), title,
                          {"data-prefix": data, "data-bytes": node["memory"]},
                          _prefix_marks(node["children"], separator)))
    return marks


def _prefix_rows(nodes: list[dict[str, Any]], separator: str, level: int = 1) -> Iterable[str]:
    for node in nodes[:PREFIX_ROWS]:
        shown, data = _prefix_label(node, separator)
        name = escape(shown) if node.get("other") else name_html(node["prefix"])
        yield _row({"data-prefix": data, "data-level": level},
                   [f'<td style="padding-left:{6 + 18 * (level - 1)}px">{name}</td>', count_cell(node["keys"], "keys"),
                    count_cell(node["elements"], "elements"), bytes_cell(node["memory"])])
        yield from _prefix_rows(node["children"], separator, level + 1)
    rest = nodes[PREFIX_ROWS:]
    if rest:
        memory = sum(n["memory"] for n in rest)
        yield _row({"class": "muted"}, [f'<td style="padding-left:{6 + 18 * (level - 1)}px">{len(rest)} more</td>',
                                        count_cell(sum(n["keys"] for n in rest), "keys"),
                                        count_cell(sum(n["elements"] for n in rest), "elements"),
                                        bytes_cell(memory)])


def prefixes(result: dict[str, Any]) -> str:
    separator = name_text(result["separator"])
    nodes = result["prefixes"]
    note = (f'<p class="muted">Keys split at <code>{escape(separator)}</code>, up to {result["depth"]} parts; '
            "a key with fewer parts counts under each prefix it has, the last one being the key itself.</p>")
    table = _table([("prefix", False), ("keys", True), ("elements", True), ("memory", True)],
                   _prefix_rows(nodes, separator))
    return _section("prefixes", "Memory by key prefix",
                    note + treemap(_prefix_marks(nodes, separator), "memory by key prefix") + table)


def top_keys(result: dict[str, Any]) -> str:
    rows = (_row({"data-db": k["db"], "data-key": name_text(k["key"])},
                 [f'<td class="num">{i}</td>', f"<td>{k['db']}</td>", f"<td>{name_html(k['key'])}</td>",
                  f"<td>{escape(k['type'])}</td>", f"<td>{escape(k['encoding'])}</td>",
                  count_cell(k["elements"], "elements"), bytes_cell(k["memory"]),
                  bytes_cell(k["size_in_file"], "size_in_file"),
                  ms_cell(None if k["expire_at_ms"] is None else k["expire_at_ms"] - result["now_ms"], "ttl")])
            for i, k in enumerate(result["top_keys"], 1))
    head = [("#", True), ("db", False), ("key", False), ("type", False), ("encoding", False), ("elements", True),
            ("memory", True), ("in the file", True), ("expires in", True)]
    table = _table(head, rows, (4, 4, 36, 8, 10, 9, 10, 10, 9))
    return _section("top-keys", f"The {len(result['top_keys'])} largest keys by memory", table)


def expiry(result: dict[str, Any]) -> str:
    buckets = result["expiry"]
    chart = bars([Mark(b["bucket"], b["keys"], f"{b['keys']:,} keys, {human_bytes(b['memory'])}",
                       f"{b['bucket']}: {b['keys']} keys, {b['memory']} bytes",
                       {"data-bucket": b["bucket"], "data-count": b["keys"], "data-bytes": b["memory"]})
                  for b in buckets], "keys by time left to live")
    note = (f'<p class="muted">Time left to live at {result["now_ms"]} (Unix ms): "expired" keys are dropped by the '
            "server that loads the dump.</p>")
    return _section("expiry", "Expiry", note + chart)


def _group_cells(group: dict[str, Any]) -> list[str]:
    consumers = "".join(f'<li data-consumer="{escape(name_text(c["name"]), quote=True)}">{name_html(c["name"])}: '
                        f'<span data-count="{c["pending"]}">{c["pending"]:,}</span></li>'
                        for c in group["pending_by_consumer"])
    more = group["consumers"] - len(group["pending_by_consumer"])
    if more > 0:
        consumers += f'<li class="muted">{more} more</li>'
    return [f"<td>{name_html(group['name'])}</td>", count_cell(group["lag"], "lag"),
            count_cell(group["pending"], "pending"), ms_cell(group["oldest_pending_age_ms"], "oldest_pending_age"),
            ms_cell(group["oldest_pending_idle_ms"], "oldest_pending_idle"),
            f'<td><ul class="consumers">{consumers}</ul></td>']


def streams(result: dict[str, Any]) -> str:
    found = result["streams"]
    rows = []
    for stream in found["top"]:
        groups = stream["groups"] or [None]
        span = len(groups)
        attrs = {"data-db": stream["db"], "data-key": name_text(stream["key"])}
        head = [f'<td rowspan="{span}">{name_html(stream["key"])}</td>',
                count_cell(stream["length"], "length", rowspan=span),
                count_cell(stream["nodes"], "nodes", rowspan=span),
                count_cell(len(stream["groups"]), "groups", rowspan=span)]
        for i, group in enumerate(groups):
            cells = _group_cells(group) if group is not None else ['<td class="muted" colspan="6">no groups</td>']
            group_attrs = {} if group is None else {"data-group": name_text(group["name"])}
            rows.append(_row({**attrs, **group_attrs}, (head if i == 0 else []) + cells))
    columns = [("key", False), ("length", True), ("nodes", True), ("groups", True), ("group", False), ("lag", True),
               ("pending", True), ("oldest pending age", True), ("its idle time", True), ("pending by consumer", False)]
    counts = "".join(f'<div class="card">{count_cell(found[name], name, "b")}{label}</div>'
                     for name, label in (("streams", "streams"), ("entries", "entries"), ("groups", "groups"),
                                         ("consumers", "consumers"), ("pending", "pending entries")))
    note = f'<p class="muted">The {len(found["top"])} longest streams:</p>'
    table = _table(columns, rows, (17, 7, 6, 6, 12, 7, 7, 9, 9, 20))
    return _section("streams", "Streams", f'<div class="cards">{counts}</div>{note}{table}')


def render(result: dict[str, Any], title: str = "rdbspec report") -> str:
    sections = [summary(result), type_mix(result), memory_by_type(result), prefixes(result), top_keys(result),
                expiry(result), streams(result)]
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
            f"<body><main><h1>{escape(title)}</h1>{''.join(sections)}</main></body></html>\n")
