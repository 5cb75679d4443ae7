"""A dump of Redis 8.10's hash templates (RDB 15), written with `rdbspec.write.writer.Writer`: a
HASH_TEMPLATE record, every template hash form (types 30, 32, 29, 31 in turn; the self-contained
ones with their names in a listpack or as strings), a plain hash; optionally a second template
defined among the keys and used after it."""

from __future__ import annotations

from pathlib import Path

from rdbspec.write.writer import Writer

PAIRS = {b"name": b"ann", b"city": b"oslo", b"age": b"37"}


def build(path: Path, keys: int = 8, late: bool = False) -> dict[bytes, dict[bytes, bytes]]:
    """Writes the dump at `path`; returns each key's pairs."""
    written: dict[bytes, dict[bytes, bytes]] = {}
    with Writer(path, 15) as out:
        out.aux(b"redis-ver", b"8.10.0")
        out.hash_template(1, PAIRS)
        out.select_db(0)
        for n in range(keys):
            pairs = {field: value + b"%d" % n for field, value in PAIRS.items()}
            form = n % 4
            key = b"user:%d" % n
            if form < 2:
                out.template_hash(key, pairs, template_id=1, array=form == 1)
            else:
                out.template_hash(key, pairs, array=form == 3, names_listpack=n % 8 < 4)
            written[key] = pairs
            if late and n == keys // 2:
                out.hash_template(2, [b"x", b"y"])
            if late and n > keys // 2:
                written[b"late:%d" % n] = {b"x": b"%d" % n, b"y": b"1"}
                out.template_hash(b"late:%d" % n, written[b"late:%d" % n], template_id=2, array=n % 2 == 0)
        out.hash(b"plain", PAIRS)
        written[b"plain"] = PAIRS
    return written
