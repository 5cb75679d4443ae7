"""Builds Dragonfly DFS snapshot fixtures byte by byte, the way Dragonfly's save code writes them.

    .venv/bin/python tests/support/dragonfly_dumps.py OUTDIR    # writes the files and expected.json

`build(outdir)` writes:

* `set/snap-summary.dfs` + `set/snap-0000.dfs` .. `snap-0002.dfs`: one DFS set
  (SaveStagesController::SaveDfs; RdbSaver::SaveHeader / SaveAux / SaveEpilog) holding every
  Dragonfly value type (30-37), streams with groups (type 21 and the old type 15), an LZ4 and a
  zstd blob (RdbSerializer::CompressBlob), a large hash and a large stream split into
  TAGGED_CHUNKs interleaved with other records (MemBufController::BuildBlob / MakeTagHeader),
  one of those chunks inside an LZ4 blob (tagged output is compressed as one unit).
* `rdb/dump.rdb`: a single-file snapshot (SaveMode::RDB), where RdbSaver forces SINGLE_ENTRY
  compression: SaveString LZF-compresses long strings, so the SBF2 filter chunks and the cuckoo
  table chunks (SaveSBFObject / SaveCuckooFilterObject), the type-33 filter, the JSON text
  (SaveJsonObject) and a TOPK heap item (SaveTOPKObject) are LZF strings; filters and an item
  that are short decimal text are integer-encoded (TryIntegerEncoding); the CMS and TOPK
  counters stay raw (WriteRaw).
* corrupt variants: `bad/truncated_blob.dfs` (an LZ4 frame cut short), `bad/unknown_stream.dfs`
  (a continuation chunk whose stream id was never opened), `bad/incomplete_stream.dfs` (a split
  entry whose last chunk never comes), `missing/` (a set whose shard 0002 is missing),
  `extra/` (a set with a shard 0003 beyond shard-count 3).

It returns the expectations: for every key of the set and of the .rdb, the value written (in rdbspec's decoded
form), its db, type byte and expiry; for every corrupt variant, the error's offset and a
substring of its message. Everything is deterministic (fixed ids, times and contents).

Chunk sizes are small (a few hundred bytes) so the fixtures stay small: Dragonfly splits at
`serialization_max_chunk_size` (64 KiB by default), which is a flag; the layout is the same.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import lz4.frame
import lzf
import zstandard

MAGIC = b"REDIS0009"  # RdbSaver::SaveHeader: "REDIS%04d" with RDB_SER_VERSION 9
SNAPSHOT_ID = b"0123456789abcdef0123456789abcdef"
CTIME = 1767225600  # 2026-01-01
DF_MEMBER_BASE_S = 1675209600  # 2023-02-01 00:00:00 UTC, Dragonfly's kMemberExpiryBase

# opcodes / types (src/redis/rdb.h, src/server/rdb_extensions.h)
AUX, SELECTDB, EXPIRETIME_MS, EOF = 0xFA, 0xFE, 0xFC, 0xFF
DF_MASK, TAGGED_CHUNK, ZSTD_BLOB, LZ4_BLOB = 0xDC, 0xE0, 0xC9, 0xCA
T_STRING, T_HASH, T_ZSET_2, T_STREAM_1, T_HASH_LP, T_LIST_QL2, T_STREAM_3 = 0, 4, 5, 15, 16, 18, 21
T_JSON, T_HASH_EXP, T_SET_EXP, T_SBF, T_SBF2, T_CMS, T_TOPK, T_CUCKOO = 30, 31, 32, 33, 34, 35, 36, 37


# -- primitives (RdbSerializer::SaveLen / SaveString / SaveLongLongAsString / SaveBinaryDouble) --

def rdb_len(n: int) -> bytes:
    """WritePackedUInt: 6-bit, 14-bit (BE), 32-bit (BE) or 64-bit (BE)."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def encode_integer(v: int) -> bytes | None:
    """EncodeInteger: INT8 / INT16 / INT32 string encodings (little-endian)."""
    if -(1 << 7) <= v < 1 << 7:
        return b"\xc0" + struct.pack("<b", v)
    if -(1 << 15) <= v < 1 << 15:
        return b"\xc1" + struct.pack("<h", v)
    if -(1 << 31) <= v < 1 << 31:
        return b"\xc2" + struct.pack("<i", v)
    return None


def try_integer_encoding(b: bytes) -> bytes | None:
    """TryIntegerEncoding: a canonical decimal integer of at most 11 characters that fits
    int32, as INT8 / INT16 / INT32 (SaveString tries it first, in every compression mode)."""
    if len(b) > 11:
        return None
    try:
        v = int(b)
    except ValueError:
        return None
    return encode_integer(v) if str(v).encode() == b else None


def rdb_str(b: bytes) -> bytes:
    """SaveString in a DFS shard (MULTI_ENTRY compression: no LZF): TryIntegerEncoding, else
    `len` + bytes."""
    return try_integer_encoding(b) or rdb_len(len(b)) + b


def rdb_str_single_entry(b: bytes) -> bytes:
    """SaveString with SINGLE_ENTRY compression (what RdbSaver uses for a single-file .rdb,
    SaveMode::RDB): TryIntegerEncoding, else lzf_compress for strings over 20 bytes, kept when
    it is shorter than len-8 and than 0.85*len (SaveLzfBlob: 0xC3, `len clen`, `len ulen`,
    the LZF data), else `len` + bytes."""
    enc = try_integer_encoding(b)
    if enc:
        return enc
    if len(b) > 20:
        comp = lzf.compress(b, len(b))
        if comp is not None and len(comp) < len(b) - 8 and len(comp) < int(len(b) * 0.85):
            return b"\xc3" + rdb_len(len(comp)) + rdb_len(len(b)) + comp
    return rdb_len(len(b)) + b


def ll_str(v: int) -> bytes:
    """SaveLongLongAsString."""
    return encode_integer(v) or (rdb_len(len(str(v))) + str(v).encode())


def f64(x: float) -> bytes:
    return struct.pack("<d", x)


def aux(key: bytes, value: bytes) -> bytes:
    """RdbSaver::Impl::SaveAuxFieldStrStr (SaveAuxFieldStrInt passes the decimal text)."""
    return bytes([AUX]) + rdb_str(key) + rdb_str(value)


def header_aux(shard_id: int | None, lua: list[bytes] = (), shard_count: int | None = None) -> bytes:
    """RdbSaver::SaveAux: snapshot-id first, then the fixed fields, lua scripts, and
    shard-count/table-mem (summary) or shard-id (shard files)."""
    out = MAGIC + aux(b"snapshot-id", SNAPSHOT_ID) + aux(b"redis-ver", b"7.4.0") + aux(b"df-ver", b"df-v1.40.0")
    out += aux(b"redis-bits", b"64") + aux(b"ctime", str(CTIME).encode()) + aux(b"used-mem", b"1048576")
    out += aux(b"aof-preamble", b"0")
    for script in lua:
        out += aux(b"lua", script)
    if shard_count is not None:
        out += aux(b"shard-count", str(shard_count).encode()) + aux(b"table-mem", b"65536")
    if shard_id is not None:
        out += aux(b"shard-id", str(shard_id).encode())
    return out


def epilog() -> bytes:
    """RdbSerializer::SendEofAndChecksum: EOF and a zero checksum (Dragonfly never computes it)."""
    return bytes([EOF]) + b"\x00" * 8


def entry(rdb_type: int, key: bytes, value: bytes, expire_ms: int = 0, mask: int = 0, mc_flags: int = 0,
          db: int | None = None) -> bytes:
    """RdbSerializer::SaveEntry: [SELECTDB] [EXPIRETIME_MS] [DF_MASK] type key value."""
    out = b""
    if db is not None:
        out += bytes([SELECTDB]) + rdb_len(db)
    if expire_ms:
        out += bytes([EXPIRETIME_MS]) + struct.pack("<Q", expire_ms)
    if mask:
        out += bytes([DF_MASK]) + struct.pack("<I", mask) + (struct.pack("<I", mc_flags) if mask & 2 else b"")
    return out + bytes([rdb_type]) + rdb_str(key) + value


def tag(stream_id: int, payload: bytes) -> bytes:
    """MemBufController::MakeTagHeader: 0xE0, u32 LE stream id, u32 LE payload length."""
    return bytes([TAGGED_CHUNK]) + struct.pack("<II", stream_id, len(payload)) + payload


def lz4_blob(records: bytes) -> bytes:
    """RdbSerializer::CompressBlob with MULTI_ENTRY_LZ4: opcode, `len csize`, one LZ4 frame
    that carries its content size (detail/compressor.cc)."""
    frame = lz4.frame.compress(records, store_size=True, compression_level=0)
    assert len(frame) <= len(records) * 0.95, "CompressBlob keeps only blobs that shrink to <= 95%"
    return bytes([LZ4_BLOB]) + rdb_len(len(frame)) + frame


def zstd_blob(records: bytes) -> bytes:
    """RdbSerializer::CompressBlob with MULTI_ENTRY_ZSTD (content size in the frame header)."""
    frame = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(records)
    assert len(frame) <= len(records) * 0.95
    return bytes([ZSTD_BLOB]) + rdb_len(len(frame)) + frame


# -- listpacks (redis src/listpack.c lpInsert / lpEncodeBacklen) -------------------------------

def _lp_backlen(n: int) -> bytes:
    if n <= 127:
        return bytes([n])
    if n < 16383:
        return bytes([n >> 7, (n & 127) | 128])
    return bytes([n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128])


def _lp_entry(v: int | bytes) -> bytes:
    if isinstance(v, int):
        if 0 <= v <= 127:
            enc = bytes([v])
        elif -4096 <= v <= 4095:
            u = v & 0x1FFF
            enc = bytes([0xC0 | u >> 8, u & 0xFF])
        elif -(1 << 15) <= v < 1 << 15:
            enc = b"\xf1" + struct.pack("<h", v)
        elif -(1 << 23) <= v < 1 << 23:
            enc = b"\xf2" + struct.pack("<i", v)[:3]
        elif -(1 << 31) <= v < 1 << 31:
            enc = b"\xf3" + struct.pack("<i", v)
        else:
            enc = b"\xf4" + struct.pack("<q", v)
    elif len(v) < 64:
        enc = bytes([0x80 | len(v)]) + v
    elif len(v) < 4096:
        enc = bytes([0xE0 | len(v) >> 8, len(v) & 0xFF]) + v
    else:
        enc = b"\xf0" + struct.pack("<I", len(v)) + v
    return enc + _lp_backlen(len(enc))


def listpack(items: list[int | bytes]) -> bytes:
    body = b"".join(_lp_entry(v) for v in items)
    total = 6 + len(body) + 1
    return struct.pack("<IH", total, min(len(items), 65535)) + body + b"\xff"


# -- streams (RdbSerializer::SaveStreamObject, SaveStreamPEL, SaveStreamConsumers) ------------

def stream_node(entries: list[tuple[tuple[int, int], list[tuple[bytes, bytes]]]],
                deleted: frozenset = frozenset()) -> tuple[bytes, bytes]:
    """One node: the 16-byte master ID key and its listpack (redis t_stream.c streamAppendItem:
    master entry from the first entry's fields; SAMEFIELDS when an entry has the same fields)."""
    master = entries[0][0]
    master_fields = [f for f, _ in entries[0][1]]
    live = sum(1 for i, _ in entries if i not in deleted)
    items: list[int | bytes] = [live, len(entries) - live, len(master_fields), *master_fields, 0]
    for sid, fields in entries:
        flags = (1 if sid in deleted else 0)
        same = [f for f, _ in fields] == master_fields
        flags |= 2 if same else 0
        items += [flags, sid[0] - master[0], sid[1] - master[1]]
        if same:
            items += [v for _, v in fields]
            items.append(len(fields) + 3)
        else:
            items.append(len(fields))
            for f, v in fields:
                items += [f, v]
            items.append(2 * len(fields) + 4)
    return struct.pack(">QQ", *master), listpack(items)


def stream_value(rdb_type: int, nodes: list[tuple[bytes, bytes]], length: int, last_id, first_id, max_deleted,
                 entries_added: int, groups: list[dict]) -> list[bytes]:
    """The value as pieces: one piece per node (key + listpack) and the metadata tail, which
    Dragonfly keeps with the last node (SaveStreamObject flushes only between nodes)."""
    pieces = [rdb_len(len(nodes))]
    for key, lp in nodes:
        pieces.append(rdb_str(key) + rdb_str(lp))
    tail = rdb_len(length) + rdb_len(last_id[0]) + rdb_len(last_id[1])
    if rdb_type >= 19:
        tail += rdb_len(first_id[0]) + rdb_len(first_id[1]) + rdb_len(max_deleted[0]) + rdb_len(max_deleted[1])
        tail += rdb_len(entries_added)
    tail += rdb_len(len(groups))
    for g in groups:
        tail += rdb_str(g["name"]) + rdb_len(g["last_id"][0]) + rdb_len(g["last_id"][1])
        if rdb_type >= 19:
            tail += rdb_len(g["entries_read"])
        tail += rdb_len(len(g["pel"]))
        for sid, when, count, _ in g["pel"]:
            tail += struct.pack(">QQ", *sid) + struct.pack("<q", when) + rdb_len(count)
        tail += rdb_len(len(g["consumers"]))
        for c in g["consumers"]:
            tail += rdb_str(c["name"]) + struct.pack("<q", c["seen"])
            if rdb_type >= 21:
                tail += struct.pack("<q", c["active"])
            mine = [sid for sid, _, _, owner in g["pel"] if owner == c["name"]]
            tail += rdb_len(len(mine)) + b"".join(struct.pack(">QQ", *sid) for sid in mine)
    pieces[-1] += tail
    # the count goes with the first node
    return [pieces[0] + pieces[1], *pieces[2:]]


def expected_stream(rdb_type, entries, deleted, length, last_id, first_id, max_deleted, entries_added, groups):
    """The stream as rdbspec's JSON contract shows it (jsonl.stream_json)."""
    def fid(i):
        return f"{i[0]}-{i[1]}"
    return {
        "length": length,
        "last_id": fid(last_id),
        "first_id": fid(first_id) if rdb_type >= 19 else None,
        "max_deleted_entry_id": fid(max_deleted) if rdb_type >= 19 else None,
        "entries_added": entries_added if rdb_type >= 19 else None,
        "entries": [{"id": fid(i), "fields": [[f.decode(), v.decode()] for f, v in fs]}
                    for i, fs in entries if i not in deleted],
        "groups": [{
            "name": g["name"].decode(),
            "last_delivered_id": fid(g["last_id"]),
            "entries_read": g["entries_read"] if rdb_type >= 19 else None,
            "pending": [{"id": fid(sid), "consumer": owner.decode(), "delivery_time_ms": when,
                         "delivery_count": count} for sid, when, count, owner in g["pel"]],
            "consumers": [{"name": c["name"].decode(), "seen_time_ms": c["seen"],
                           "active_time_ms": c["active"] if rdb_type >= 21 else None,
                           "pending": [fid(sid) for sid, _, _, owner in g["pel"] if owner == c["name"]]}
                          for c in g["consumers"]],
        } for g in groups],
    }


# -- the snapshot set --------------------------------------------------------------------------

def _h(x: bytes) -> dict:
    return {"hex": x.hex()}


def _stream_case(n_nodes: int, per_node: int, base_ms: int, rdb_type: int, with_groups: bool):
    entries, nodes = [], []
    deleted = frozenset({(base_ms + 7, 1)}) if rdb_type >= 19 else frozenset()
    for n in range(n_nodes):
        chunk = []
        for i in range(per_node):
            sid = (base_ms + n * 1000 + i * 7, 1 if i == 1 else 0)
            fields = [(b"sensor", b"s%d" % (i % 3)), (b"reading", b"%d.%d" % (n, i))]
            if i == 2:
                fields = [(b"note", b"entry with its own fields " + b"x" * (n % 5))]
            chunk.append((sid, fields))
        entries += chunk
        nodes.append(stream_node(chunk, deleted))
    live = [e for e in entries if e[0] not in deleted]
    last_id = entries[-1][0]
    first_id = live[0][0]
    max_deleted = max(deleted) if deleted else (0, 0)
    groups = []
    if with_groups:
        p1, p2, p3 = live[0][0], live[1][0], live[3][0]
        groups = [
            {"name": b"analytics", "last_id": p3, "entries_read": 4,
             "pel": [(p1, CTIME * 1000 + 5, 1, b"alice"), (p2, CTIME * 1000 + 9, 3, b"bob"),
                     (p3, CTIME * 1000 + 12, 1, b"alice")],
             "consumers": [{"name": b"alice", "seen": CTIME * 1000 + 20, "active": CTIME * 1000 + 12},
                           {"name": b"bob", "seen": CTIME * 1000 + 30, "active": CTIME * 1000 + 9}]},
            {"name": b"idle-group", "last_id": (0, 0), "entries_read": 0, "pel": [], "consumers": []},
        ]
    args = (len(live), last_id, first_id, max_deleted, len(entries), groups)
    pieces = stream_value(rdb_type, nodes, *args)
    return pieces, expected_stream(rdb_type, entries, deleted, *args)


def build(outdir: str | Path) -> dict:
    out = Path(outdir)
    (out / "set").mkdir(parents=True, exist_ok=True)
    (out / "bad").mkdir(exist_ok=True)
    keys: list[dict] = []  # expected keys, in shard order

    def expect(shard, key, rdb_type, value, db=0, expire_at_ms=None, **extra):
        keys.append({"shard": shard, "db": db, "key": key.decode(), "rdb_type": rdb_type, "value": value,
                     "expire_at_ms": expire_at_ms, **extra})

    lua = [b"return redis.call('GET', KEYS[1])", b"return 42"]
    summary = header_aux(None, lua, shard_count=3) + epilog()

    # ---- shard 0: plain entries, DF_MASK, JSON, member-TTL hash and set, an LZ4 blob --------
    s0 = header_aux(0)
    s0 += entry(T_STRING, b"greeting", rdb_str(b"hello dragonfly"), db=0)
    expect(0, b"greeting", 0, "hello dragonfly")
    s0 += entry(T_STRING, b"mc:item", rdb_str(b"cached"), expire_ms=1893456000000, mask=3, mc_flags=42)
    expect(0, b"mc:item", 0, "cached", expire_at_ms=1893456000000)
    doc = b'{"name":"df","tags":["a","b"],"n":1.5}'
    s0 += entry(T_JSON, b"json:doc", rdb_str(doc))  # RdbSerializer::SaveJsonObject: the JSON text
    expect(0, b"json:doc", T_JSON, doc.decode())
    hfields = [(b"f1", b"v1", 86400), (b"f2", b"v2", -1), (b"f3", b"12345", 100000)]
    hv = rdb_len(len(hfields)) + b"".join(rdb_str(f) + rdb_str(v) + ll_str(t) for f, v, t in hfields)
    s0 += entry(T_HASH_EXP, b"hash:ttl", hv)  # SaveHSetObject with has_expiry
    expect(0, b"hash:ttl", T_HASH_EXP, [[f.decode(), v.decode()] for f, v, _ in hfields],
           field_expire_at_ms=[[f.decode(), (DF_MEMBER_BASE_S + t) * 1000] for f, _, t in hfields if t != -1])
    members = [(b"m1", 3600), (b"m2", -1), (b"7", 40000)]
    sv = rdb_len(len(members)) + b"".join(rdb_str(m) + ll_str(t) for m, t in members)
    s0 += entry(T_SET_EXP, b"set:ttl", sv)  # SaveSetObject with has_expiry
    expect(0, b"set:ttl", T_SET_EXP, [m.decode() for m, _ in members],
           member_expire_at_ms=[[m.decode(), (DF_MEMBER_BASE_S + t) * 1000] for m, t in members if t != -1])
    # an LZ4 blob of several small entries (CompressBlob on a flush of >= 256 bytes)
    hp = [(b"field:%d" % i, b"value number %d" % i) for i in range(12)]
    inner = entry(T_HASH_LP, b"hash:lp", rdb_str(listpack([x for p in hp for x in p])))
    zs = [(b"alpha", 1.0), (b"beta", 2.5), (b"gamma", -3.25)]
    inner += entry(T_ZSET_2, b"zset:skip", rdb_len(len(zs)) + b"".join(rdb_str(m) + f64(s) for m, s in zs))
    ql = [b"item-%02d" % i for i in range(20)]
    inner += entry(T_LIST_QL2, b"list:ql", rdb_len(1) + rdb_len(2) + rdb_str(listpack(ql)))
    s0 += lz4_blob(inner)
    expect(0, b"hash:lp", T_HASH_LP, [[f.decode(), v.decode()] for f, v in hp], in_blob="lz4")
    expect(0, b"zset:skip", T_ZSET_2, [[m.decode(), s] for m, s in zs], in_blob="lz4")
    expect(0, b"list:ql", T_LIST_QL2, [x.decode() for x in ql], in_blob="lz4")
    s0 += entry(T_STRING, b"after:blob", rdb_str(b"back to raw"))
    expect(0, b"after:blob", 0, "back to raw")
    s0 += epilog()

    # ---- shard 1: probabilistic types in a zstd blob, streams 21 and 15, db 1 ---------------
    s1 = header_aux(1)
    bits0, bits1 = bytes(range(256)) * 2, bytes((i * 37) % 256 for i in range(300))
    sbf = rdb_len(0) + f64(2.0) + f64(0.01) + rdb_len(100) + rdb_len(180) + rdb_len(1000) + rdb_len(2)
    sbf += rdb_len(7) + rdb_str(bits0) + rdb_len(9) + rdb_str(bits1)  # SaveSBFObject, unchunked
    sbf2 = rdb_len(0) + f64(2.0) + f64(0.001) + rdb_len(0) + rdb_len(50) + rdb_len(500) + rdb_len(1)
    sbf2 += rdb_len(10) + rdb_len(len(bits1)) + rdb_str(bits1[:128]) + rdb_str(bits1[128:])  # chunked
    cms_counters = [i * 3 - 5 for i in range(4 * 3)]
    cms = rdb_len(4) + rdb_len(3) + rdb_len(1234) + b"".join(struct.pack("<q", c) for c in cms_counters)
    heap = [(b"apple", 50), (b"pear", 20)]
    topk_counters = [i * 11 for i in range(8 * 2)]
    topk = rdb_len(0) + rdb_len(2) + rdb_len(8) + rdb_len(2) + f64(0.9) + rdb_len(len(heap))
    topk += b"".join(rdb_str(i) + rdb_len(c) for i, c in heap)
    topk += rdb_len(4 * len(topk_counters)) + b"".join(struct.pack("<I", c) for c in topk_counters)
    table = bytes((i * 13 + 1) % 256 for i in range(96))
    cuckoo = rdb_len(4) + rdb_len(500) + rdb_len(1) + rdb_len(24) + rdb_len(17) + rdb_len(2) + rdb_len(1)
    cuckoo += rdb_len(len(table)) + rdb_str(table[:64]) + rdb_str(table[64:])
    inner = entry(T_SBF, b"bf:classic", sbf, db=0) + entry(T_SBF2, b"bf:chunked", sbf2)
    inner += entry(T_CMS, b"cms:counts", cms) + entry(T_TOPK, b"topk:fruit", topk)
    inner += entry(T_CUCKOO, b"cf:filter", cuckoo)
    s1 += zstd_blob(inner)
    expect(1, b"bf:classic", T_SBF, {"grow_factor": 2.0, "fp_prob": 0.01, "prev_size": 100, "current_size": 180,
                                     "max_capacity": 1000, "filters": [{"hash_count": 7, "bits": _h(bits0)},
                                                                       {"hash_count": 9, "bits": _h(bits1)}]},
           in_blob="zstd")
    expect(1, b"bf:chunked", T_SBF2, {"grow_factor": 2.0, "fp_prob": 0.001, "prev_size": 0, "current_size": 50,
                                      "max_capacity": 500, "filters": [{"hash_count": 10, "bits": _h(bits1)}]},
           in_blob="zstd")
    expect(1, b"cms:counts", T_CMS, {"width": 4, "depth": 3, "total_count": 1234, "counters": cms_counters},
           in_blob="zstd")
    expect(1, b"topk:fruit", T_TOPK, {"k": 2, "width": 8, "depth": 2, "decay": 0.9,
                                      "heap": [{"item": "apple", "count": 50}, {"item": "pear", "count": 20}],
                                      "counters": topk_counters}, in_blob="zstd")
    expect(1, b"cf:filter", T_CUCKOO, {"slots_per_bucket": 4, "max_iterations": 500, "expansion": 1,
                                       "num_buckets": 24, "num_items": 17, "num_deletes": 2,
                                       "filters": [_h(table)]}, in_blob="zstd")
    pieces, exp21 = _stream_case(2, 5, 1767225600000, T_STREAM_3, with_groups=True)
    s1 += entry(T_STREAM_3, b"stream:v3", b"".join(pieces))
    expect(1, b"stream:v3", T_STREAM_3, exp21, stream_value=b"".join(pieces).hex())
    pieces15, exp15 = _stream_case(1, 4, 1700000000000, T_STREAM_1, with_groups=True)
    s1 += entry(T_STREAM_1, b"stream:v1", b"".join(pieces15))  # DF before v1.27 wrote type 15
    expect(1, b"stream:v1", T_STREAM_1, exp15, stream_value=b"".join(pieces15).hex())
    s1 += entry(T_STRING, b"in:db1", rdb_str(b"db one"), db=1)
    expect(1, b"in:db1", 0, "db one", db=1)
    s1 += epilog()

    # ---- shard 2: a large hash and a large stream in TAGGED_CHUNKs, interleaved ------------
    s2 = header_aux(2)
    big = [(b"k%04d" % i, b"value-%04d-" % i + b"y" * (i % 17)) for i in range(240)]
    hash_pieces = [entry(T_HASH, b"big:hash", rdb_len(len(big)), expire_ms=1893456000123, db=0)]
    for i in range(0, len(big), 60):  # SaveHSetObject flushes mid-entry between field pairs
        hash_pieces.append(b"".join(rdb_str(f) + rdb_str(v) for f, v in big[i:i + 60]))
    hash_chunks = [hash_pieces[0] + hash_pieces[1], *hash_pieces[2:]]  # 4 chunks
    spieces, exp_big = _stream_case(4, 6, 1767300000000, T_STREAM_3, with_groups=True)
    stream_chunks = [bytes([T_STREAM_3]) + rdb_str(b"big:stream") + spieces[0], *spieces[1:]]  # 4 chunks
    s2 += entry(T_STRING, b"first:plain", rdb_str(b"before the chunks"), db=0)
    s2 += tag(1, hash_chunks[0])
    s2 += entry(T_STRING, b"between:1", rdb_str(b"x"))  # a finished entry flushed as prefix
    s2 += tag(2, stream_chunks[0])
    s2 += tag(1, hash_chunks[1])
    s2 += tag(2, stream_chunks[1])
    s2 += tag(2, stream_chunks[2])
    s2 += entry(T_STRING, b"between:2", rdb_str(b"y"))
    s2 += tag(1, hash_chunks[2])
    s2 += tag(2, stream_chunks[3])  # the stream's last chunk: node 4 plus the metadata tail
    # the hash's last chunk inside an LZ4 blob, after a plain entry (tagged output is compressed
    # as one unit, RdbSerializer::Flush)
    s2 += lz4_blob(entry(T_STRING, b"in:blob", rdb_str(b"z" * 300)) + tag(1, hash_chunks[3]))
    s2 += entry(T_STRING, b"last:plain", rdb_str(b"after the chunks"))
    s2 += epilog()
    for k, v in [(b"first:plain", "before the chunks"), (b"between:1", "x")]:
        expect(2, k, 0, v)
    expect(2, b"between:2", 0, "y")
    expect(2, b"big:stream", T_STREAM_3, exp_big, chunks=4)
    expect(2, b"in:blob", 0, "z" * 300, in_blob="lz4")
    expect(2, b"big:hash", T_HASH, [[f.decode(), v.decode()] for f, v in big], expire_at_ms=1893456000123,
           chunks=4)
    expect(2, b"last:plain", 0, "after the chunks")

    files = {"set/snap-summary.dfs": summary, "set/snap-0000.dfs": s0, "set/snap-0001.dfs": s1,
             "set/snap-0002.dfs": s2}

    # ---- a single-file .rdb: SINGLE_ENTRY compression, so SaveString may write LZF ----------
    rdb_keys: list[dict] = []
    # RdbSaver::SaveAux in RDB mode: no shard fields; snapshot-id only when the saver is given one
    rdb = MAGIC + aux(b"redis-ver", b"7.4.0") + aux(b"df-ver", b"df-v1.40.0") + aux(b"redis-bits", b"64")
    rdb += aux(b"ctime", str(CTIME).encode()) + aux(b"used-mem", b"1048576") + aux(b"aof-preamble", b"0")

    def rdb_entry(rdb_type, key, value, want, db=None):
        nonlocal rdb
        rdb += entry(rdb_type, key, value, db=db)  # keys of at most 20 bytes: never LZF
        rdb_keys.append({"key": key.decode(), "db": 0, "rdb_type": rdb_type, "value": want,
                         "value_hex": value.hex()})

    def lzf_str(b: bytes) -> bytes:
        out = rdb_str_single_entry(b)
        assert out[0] == 0xC3, "SaveString keeps LZF only when it saves 8 bytes and 15 %"
        return out

    def int_str(b: bytes) -> bytes:
        out = rdb_str_single_entry(b)
        assert out[0] in (0xC0, 0xC1, 0xC2), "TryIntegerEncoding takes canonical decimal text"
        return out

    sparse = bytearray(1024)  # a bloom filter's bits after a few adds: mostly zero bytes
    for i in (17, 230, 231, 512, 777, 1000):
        sparse[i] = 1 << (i % 8)
    sparse = bytes(sparse)
    sbf_head = rdb_len(0) + f64(2.0) + f64(0.01) + rdb_len(0) + rdb_len(6) + rdb_len(800) + rdb_len(1)

    def sbf_want(hash_count, bits, fp=0.01, current=6, capacity=800):
        return {"grow_factor": 2.0, "fp_prob": fp, "prev_size": 0, "current_size": current,
                "max_capacity": capacity, "filters": [{"hash_count": hash_count, "bits": _h(bits)}]}

    # SaveSBFObject, rdb_sbf_chunked: `len hash_cnt`, `len total_size`, one SaveString chunk
    # (kFilterChunkSize is 64 MiB): the sparse 1024 bytes compress to an LZF string
    rdb_entry(T_SBF2, b"bf:sparse", sbf_head + rdb_len(7) + rdb_len(len(sparse)) + lzf_str(sparse),
              sbf_want(7, sparse), db=0)
    # an 8-byte filter whose bytes are the text 12345678: TryIntegerEncoding makes it INT32
    digits = b"12345678"
    rdb_entry(T_SBF2, b"bf:digits", rdb_len(0) + f64(2.0) + f64(0.1) + rdb_len(0) + rdb_len(1) + rdb_len(4)
              + rdb_len(1) + rdb_len(3) + rdb_len(len(digits)) + int_str(digits),
              sbf_want(3, digits, fp=0.1, current=1, capacity=4))
    # SaveSBFObject without rdb_sbf_chunked (type 33): the whole filter in one SaveString
    rdb_entry(T_SBF, b"bf:classic", sbf_head + rdb_len(7) + lzf_str(sparse), sbf_want(7, sparse))
    # SaveCuckooFilterObject: the parameters, then per filter `len size` and SaveString chunks
    table = bytearray(512)  # a cuckoo table with three slots taken: mostly zero bytes
    table[9], table[300], table[301] = 0x5A, 0xC3, 0x07
    table = bytes(table)
    cf_head = rdb_len(4) + rdb_len(20) + rdb_len(1) + rdb_len(128) + rdb_len(3) + rdb_len(0) + rdb_len(1)
    rdb_entry(T_CUCKOO, b"cf:sparse", cf_head + rdb_len(len(table)) + lzf_str(table),
              {"slots_per_bucket": 4, "max_iterations": 20, "expansion": 1, "num_buckets": 128, "num_items": 3,
               "num_deletes": 0, "filters": [_h(table)]})
    tiny = b"9105"  # a 4-byte table whose bytes are the text 9105: INT16
    rdb_entry(T_CUCKOO, b"cf:digits", rdb_len(2) + rdb_len(20) + rdb_len(1) + rdb_len(2) + rdb_len(4) + rdb_len(0)
              + rdb_len(1) + rdb_len(len(tiny)) + int_str(tiny),
              {"slots_per_bucket": 2, "max_iterations": 20, "expansion": 1, "num_buckets": 2, "num_items": 4,
               "num_deletes": 0, "filters": [_h(tiny)]})
    # SaveJsonObject: the JSON text through SaveString
    big_doc = json.dumps({"items": [{"id": i, "name": "widget", "tags": ["a", "b"]} for i in range(8)]},
                         separators=(",", ":")).encode()
    rdb_entry(T_JSON, b"json:big", lzf_str(big_doc), big_doc.decode())
    # SaveTOPKObject: heap items through SaveString (one LZF, one INT16), counters WriteRaw
    url = b"https://example.com/products/widget-" + b"0" * 24 + b"/reviews"
    counters = [5, 0, 3, 1]
    topk_v = rdb_len(0) + rdb_len(2) + rdb_len(2) + rdb_len(2) + f64(0.9) + rdb_len(2)
    topk_v += lzf_str(url) + rdb_len(5) + int_str(b"2024") + rdb_len(3)
    topk_v += rdb_len(4 * len(counters)) + b"".join(struct.pack("<I", c) for c in counters)
    rdb_entry(T_TOPK, b"topk:urls", topk_v,
              {"k": 2, "width": 2, "depth": 2, "decay": 0.9, "heap": [{"item": url.decode(), "count": 5},
                                                                       {"item": "2024", "count": 3}],
               "counters": counters})
    # SaveCMSObject: counters WriteRaw even here (64 zero bytes that SaveString would compress)
    rdb_entry(T_CMS, b"cms:raw", rdb_len(4) + rdb_len(2) + rdb_len(0) + b"\x00" * 64,
              {"width": 4, "depth": 2, "total_count": 0, "counters": [0] * 8})
    files["rdb/dump.rdb"] = rdb + epilog()

    # ---- corrupt variants ---------------------------------------------------------------
    errors = {}
    head = header_aux(0)
    frame = lz4.frame.compress(inner, store_size=True)
    cut = frame[:len(frame) // 2]
    bad = head + entry(T_STRING, b"ok", rdb_str(b"fine"), db=0)
    errors["bad/truncated_blob.dfs"] = {"offset": len(bad), "message": "lz4 blob does not decompress"}
    files["bad/truncated_blob.dfs"] = bad + bytes([LZ4_BLOB]) + rdb_len(len(cut)) + cut + epilog()
    # continuation bytes (the next field is 40 bytes long: 0x28 is no opcode) under an unopened id
    cont = rdb_str(b"f" * 40) + rdb_str(b"v")
    bad = head + entry(T_STRING, b"ok", rdb_str(b"fine"), db=0)
    errors["bad/unknown_stream.dfs"] = {"offset": len(bad), "message": "unknown stream id 9 does not start an entry"}
    files["bad/unknown_stream.dfs"] = bad + tag(9, cont) + epilog()
    bad = head + entry(T_STRING, b"ok", rdb_str(b"fine"), db=0)
    errors["bad/incomplete_stream.dfs"] = {"offset": len(bad), "message": "stream 5 is incomplete at EOF"}
    files["bad/incomplete_stream.dfs"] = bad + tag(5, hash_chunks[0]) + entry(T_STRING, b"k", rdb_str(b"v")) + epilog()
    # sets with a missing / an extra shard file
    files["missing/snap-summary.dfs"] = summary
    files["missing/snap-0000.dfs"] = s0
    files["missing/snap-0001.dfs"] = s1
    errors["missing"] = {"message": "snap-0002.dfs: shard file missing"}
    for name in ("summary", "0000", "0001", "0002"):
        files[f"extra/snap-{name}.dfs"] = files[f"set/snap-{name}.dfs"]
    files["extra/snap-0003.dfs"] = header_aux(3) + epilog()
    errors["extra"] = {"message": "snap-0003.dfs: extra shard file"}

    for name, data in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    expected = {"aux_lua": [s.decode() for s in lua], "shard_count": 3, "keys": keys, "rdb_keys": rdb_keys,
                "errors": errors,
                "shard_keys": [sum(1 for k in keys if k["shard"] == n) for n in range(3)]}
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return expected


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build.py OUTDIR")
    result = build(sys.argv[1])
    print(f"{len(result['keys'])} keys, {len(result['errors'])} corrupt variants in {sys.argv[1]}")
