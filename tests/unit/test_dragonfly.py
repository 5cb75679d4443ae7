"""Dragonfly snapshots: DFS sets, compressed blobs, tagged chunks and the DF value types.

The fixtures are written at test time by tests/dragonfly/rdb_bytes.py, byte by byte after
Dragonfly's save code, from the values listed in its expectations (deterministic: fixed ids,
times and contents). They are not committed as binaries: LZ4/zstd output may differ between
library versions, and the builder is the readable source of every byte.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
from pathlib import Path

import pytest
from rdbspec_generated import dragonfly as gen_dragonfly
from rdbspec_generated.rdb_string import RdbString

import rdbspec
from rdbspec import cli
from rdbspec.jsonl import record_json
from rdbspec.read import dragonfly
from rdbspec.read.elements import text
from rdbspec.read.streams import Stream
from tests.support import dragonfly_dumps as rdb_bytes


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("dragonfly")
    return out, rdb_bytes.build(out)


def _jsonable(value):
    return json.loads(json.dumps(value))


def _records(path) -> list[dict]:
    with rdbspec.open(path) as dump:
        return [record_json(r) for r in dump.keys()]


# -- the set ---------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["set", "set/snap-summary.dfs", "set/snap-0001.dfs"])
def test_set_opens_as_one_dump_in_shard_order(fixtures, which):
    out, expected = fixtures
    got = _records(out / which)
    assert [r["key"] for r in got] == [k["key"] for k in expected["keys"]]


@pytest.mark.parametrize("index", range(24))
def test_every_key_decodes_to_what_was_written(fixtures, index):
    out, expected = fixtures
    assert len(expected["keys"]) == 24
    want = expected["keys"][index]
    got = _records(out / "set")[index]
    assert got["key"] == want["key"]
    assert got["db"] == want["db"]
    assert got["rdb_type"] == want["rdb_type"]
    assert got["expire_at_ms"] == want["expire_at_ms"]
    assert _jsonable(got["value"]) == want["value"]
    for ttl in ("field_expire_at_ms", "member_expire_at_ms"):
        if ttl in want:
            assert got[ttl] == want[ttl]


def test_header_aux_functions_and_shards(fixtures):
    out, expected = fixtures
    with rdbspec.open(out / "set" / "snap-summary.dfs") as dump:
        assert dump.header.magic == "REDIS0009" and dump.header.dialect == "dragonfly"
        aux = dict(dump.aux)
        assert aux[b"shard-count"] == b"3" and aux[b"snapshot-id"] == rdb_bytes.SNAPSHOT_ID
        assert b"shard-id" not in aux  # the summary's AUX, not a shard's
        assert [f.code.decode() for f in dump.functions] == expected["aux_lua"]
        assert {f.engine for f in dump.functions} == {b"lua"}
        dump.read_all()
        assert [s["keys"] for s in dump.shards] == expected["shard_keys"] == [9, 8, 7]
        assert [s["shard_id"] for s in dump.shards] == [0, 1, 2]
        assert dump.extra_info["shard_count"] == 3
        assert dump.checksum_status == "disabled (0)"


def test_info_shows_shard_count_and_keys_per_shard(fixtures):
    out, expected = fixtures
    buf = io.StringIO()
    assert cli.main(["info", str(out / "set"), "--json", "-o", str(out / "info.json")]) == 0
    info = json.loads((out / "info.json").read_text())
    assert info["shard_count"] == 3
    assert [(s["file"], s["keys"]) for s in info["shards"]] == [
        ("snap-0000.dfs", 9), ("snap-0001.dfs", 8), ("snap-0002.dfs", 7)]
    assert info["dialect"] == "dragonfly" and len(info["functions"]) == 2
    assert sum(db["keys"] for db in info["databases"].values()) == 24
    with rdbspec.open(out / "set") as dump:
        cli.cmd_info(dump, cli.build_parser().parse_args(["info", "x"]), buf)
    text = buf.getvalue()
    assert "shard_count: 3" in text and '"keys": 9' in text and '"file": "snap-0002.dfs"' in text


def test_blob_and_chunk_records_name_their_envelope(fixtures):
    out, _ = fixtures
    data = (out / "set" / "snap-0002.dfs").read_bytes()
    first_tag = data.index(bytes([rdb_bytes.TAGGED_CHUNK, 1, 0, 0, 0]))
    blob = data.index(bytes([rdb_bytes.LZ4_BLOB]), first_tag)
    with rdbspec.open(out / "set" / "snap-0002.dfs") as dump:  # a shard alone: still one DFS set
        assert len(dump.shards) == 0
        by_key = {r.key: r for r in dump.keys()}
    assert by_key[b"big:hash"].offset == first_tag
    assert by_key[b"in:blob"].offset == blob
    assert by_key[b"big:hash"].size > 240 * 10  # its reassembled size


def test_single_shard_file_as_plain_dump(fixtures):
    """The expansion lives in api.Dump itself: bytes of one shard parse without the set."""
    out, expected = fixtures
    dump = rdbspec.parse((out / "set" / "snap-0002.dfs").read_bytes())
    assert [r.key.decode() for r in dump.keys()] == [k["key"] for k in expected["keys"] if k["shard"] == 2]
    assert dump.checksum_status == "disabled (0)"


def test_late_reparse_still_completes_every_entry(fixtures, monkeypatch):
    """With no eager re-parsing, split entries complete on doubling or at EOF."""
    out, expected = fixtures
    monkeypatch.setattr(dragonfly, "EAGER_REPARSE_BYTES", 0)
    got = {r["key"]: r for r in _records(out / "set")}
    assert set(got) == {k["key"] for k in expected["keys"]}
    assert _jsonable(got["big:hash"]["value"]) == next(k["value"] for k in expected["keys"] if k["key"] == "big:hash")


# -- streams ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["stream:v3", "stream:v1"])
def test_streams_decode_like_redis_streams(fixtures, key):
    """The same value bytes inside a Redis dump decode to the same stream."""
    out, expected = fixtures
    want = next(k for k in expected["keys"] if k["key"] == key)
    value = bytes.fromhex(want["stream_value"])
    redis = b"REDIS0011" + bytes([want["rdb_type"]]) + rdb_bytes.rdb_str(key.encode()) + value + b"\xff" + b"\0" * 8
    [from_redis] = [record_json(r) for r in rdbspec.parse(redis).keys()]
    with rdbspec.open(out / "set") as dump:
        record = next(r for r in dump.keys() if r.key == key.encode())
        assert isinstance(record.value, Stream)
        from_df = record_json(record)
    assert from_df["value"] == from_redis["value"] == want["value"]
    groups = from_df["value"]["groups"]
    assert [g["name"] for g in groups] == ["analytics", "idle-group"]
    assert [p["consumer"] for p in groups[0]["pending"]] == ["alice", "bob", "alice"]


def test_chunked_stream_keeps_its_nodes_and_groups(fixtures):
    out, expected = fixtures
    with rdbspec.open(out / "set") as dump:
        stream = next(r for r in dump.keys() if r.key == b"big:stream").value
    assert len(stream.nodes) == 4 and stream.length == 23
    assert len(list(stream.entries(include_deleted=True))) == 24


# -- values ----------------------------------------------------------------------------------

def test_member_ttls_are_absolute_ms(fixtures):
    out, _ = fixtures
    with rdbspec.open(out / "set") as dump:
        records = {r.key: r for r in dump.keys()}
        h, s = records[b"hash:ttl"], records[b"set:ttl"]
        assert h.value == [(b"f1", b"v1"), (b"f2", b"v2"), (b"f3", b"12345")]
        assert h.field_expire_at_ms == [(b"f1", (1675209600 + 86400) * 1000), (b"f3", (1675209600 + 100000) * 1000)]
        assert s.value == [b"m1", b"m2", b"7"]
        assert s._decode().member_expire_at_ms == [(b"m1", 1675213200000), (b"7", 1675249600000)]
        sbf = records[b"bf:chunked"].value
        assert sbf["filters"][0]["bits"] == bytes((i * 37) % 256 for i in range(300))


# -- a single-file .rdb: SINGLE_ENTRY compression ------------------------------------------------

@pytest.mark.parametrize("index", range(8))
def test_single_rdb_value_decodes_to_what_was_written(fixtures, index):
    out, expected = fixtures
    assert len(expected["rdb_keys"]) == 8
    want = expected["rdb_keys"][index]
    with rdbspec.open(out / "rdb" / "dump.rdb") as dump:
        assert dump.header.dialect == "dragonfly"
        got = [record_json(r) for r in dump.keys()][index]
    assert (got["key"], got["db"], got["rdb_type"]) == (want["key"], want["db"], want["rdb_type"])
    assert _jsonable(got["value"]) == want["value"]


# The strings SaveString wrote inside each value, as the generated parser reads them.
_SAVED_STRINGS = {
    "bf:sparse": lambda v: [c.data for f in gen_dragonfly.DfSbf2.from_bytes(v).filters for c in f.chunks.chunks],
    "bf:digits": lambda v: [c.data for f in gen_dragonfly.DfSbf2.from_bytes(v).filters for c in f.chunks.chunks],
    "bf:classic": lambda v: [f.blob for f in gen_dragonfly.DfSbf.from_bytes(v).filters],
    "cf:sparse": lambda v: [c.data for f in gen_dragonfly.DfCuckoo.from_bytes(v).filters for c in f.chunks.chunks],
    "cf:digits": lambda v: [c.data for f in gen_dragonfly.DfCuckoo.from_bytes(v).filters for c in f.chunks.chunks],
    "json:big": lambda v: [RdbString.from_bytes(v)],
    "topk:urls": lambda v: [h.item for h in gen_dragonfly.DfTopk.from_bytes(v).heap],
}


@pytest.mark.parametrize(("key", "forms"), [
    ("bf:sparse", ["lzf"]), ("bf:digits", ["int"]), ("bf:classic", ["lzf"]), ("cf:sparse", ["lzf"]),
    ("cf:digits", ["int"]), ("json:big", ["lzf"]), ("topk:urls", ["lzf", "int"])])
def test_single_rdb_strings_are_lzf_or_int_encoded(fixtures, key, forms):
    """SBF2 and cuckoo chunks, the type-33 filter, JSON and TOPK items go through SaveString,
    which LZF-compresses (SINGLE_ENTRY) or integer-encodes them."""
    _, expected = fixtures
    want = next(k for k in expected["rdb_keys"] if k["key"] == key)
    strings = _SAVED_STRINGS[key](bytes.fromhex(want["value_hex"]))
    assert ["lzf" if s.is_lzf else "int" if s.is_int else "raw" for s in strings] == forms
    if key.startswith("cf:"):
        assert [text(s) for s in strings] == [bytes.fromhex(f["hex"]) for f in want["value"]["filters"]]
    elif key.startswith("bf:"):
        assert [text(s) for s in strings] == [bytes.fromhex(f["bits"]["hex"]) for f in want["value"]["filters"]]


def test_single_rdb_counters_stay_raw(fixtures):
    """SaveCMSObject and SaveTOPKObject write their counters with WriteRaw, never SaveString."""
    _, expected = fixtures
    by_key = {k["key"]: bytes.fromhex(k["value_hex"]) for k in expected["rdb_keys"]}
    cms = gen_dragonfly.DfCms.from_bytes(by_key["cms:raw"])
    assert len(by_key["cms:raw"]) == 3 + 8 * 8 and list(cms.counters) == [0] * 8
    topk = gen_dragonfly.DfTopk.from_bytes(by_key["topk:urls"])
    assert topk.counter_bytes.value == 16 and list(topk.counters) == [5, 0, 3, 1]
    assert by_key["topk:urls"].endswith(struct.pack("<4I", 5, 0, 3, 1))


# -- filters in many chunks: read by a loop, however many chunks there are ------------------

_MANY_BITS = bytes((i * 37) % 256 for i in range(5000))


def _sbf2_in_one_byte_chunks(bits: bytes, empty_chunk: int | None = None) -> tuple[bytes, int]:
    """A dump with one SBF2 whose filter is written one byte per SaveString chunk (Dragonfly
    splits at kFilterChunkSize; the layout is the same with small chunks), chunk `empty_chunk`
    made empty; returns the dump and the file offset of that chunk."""
    head = rdb_bytes.rdb_len(0) + rdb_bytes.f64(2.0) + rdb_bytes.f64(0.01) + rdb_bytes.rdb_len(0) + rdb_bytes.rdb_len(1)
    head += rdb_bytes.rdb_len(100) + rdb_bytes.rdb_len(1) + rdb_bytes.rdb_len(7) + rdb_bytes.rdb_len(len(bits))
    chunks = [rdb_bytes.rdb_str(bits[i:i + 1]) for i in range(len(bits))]
    if empty_chunk is not None:
        chunks[empty_chunk] = rdb_bytes.rdb_str(b"")
    prefix = rdb_bytes.MAGIC + rdb_bytes.entry(rdb_bytes.T_SBF2, b"bf:many", b"", db=0) + head
    data = prefix + b"".join(chunks) + rdb_bytes.epilog()
    return data, len(prefix) + sum(map(len, chunks[:empty_chunk or 0]))


def test_filter_in_5000_chunks_decodes():
    data, _ = _sbf2_in_one_byte_chunks(_MANY_BITS)
    (record,) = list(rdbspec.parse(data).keys())
    assert record.value["filters"] == [{"hash_count": 7, "bits": _MANY_BITS}]


def test_empty_chunk_4000_of_5000_is_named():
    data, offset = _sbf2_in_one_byte_chunks(_MANY_BITS, empty_chunk=4000)
    with pytest.raises(rdbspec.ParseError) as err:
        rdbspec.parse(data).read_all()
    assert err.value.offset == offset
    assert "expected a chunk of 1 to 1000 bytes, found 0" in str(err.value)
    assert err.value.spec_path == "dragonfly:df_chunk.data"


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bad/truncated_blob.dfs", "bad/unknown_stream.dfs", "bad/incomplete_stream.dfs"])
def test_corrupt_envelopes(fixtures, name):
    out, expected = fixtures
    want = expected["errors"][name]
    dump = rdbspec.parse((out / name).read_bytes())
    with pytest.raises(rdbspec.ParseError) as err:
        dump.read_all()
    assert err.value.offset == want["offset"]
    assert want["message"] in str(err.value)


@pytest.mark.parametrize("name", ["missing", "extra"])
def test_missing_or_extra_shard_is_named(fixtures, name):
    out, expected = fixtures
    with pytest.raises(rdbspec.RdbError, match=expected["errors"][name]["message"]):
        rdbspec.open(out / name)
    assert cli.main(["info", str(out / name)]) == 3


def test_error_in_a_shard_names_the_file(fixtures, tmp_path):
    out, _ = fixtures
    shutil.copytree(out / "set", tmp_path / "set")
    shard = tmp_path / "set" / "snap-0001.dfs"
    shard.write_bytes(shard.read_bytes()[:-200])
    with rdbspec.open(tmp_path / "set") as dump, pytest.raises(rdbspec.ParseError, match="snap-0001.dfs: "):
        dump.read_all()


def test_directory_without_a_set(tmp_path):
    with pytest.raises(IsADirectoryError, match="not a Dragonfly snapshot set"):
        rdbspec.open(tmp_path)


def test_lz4_frame_without_content_size():
    import lz4.frame

    records = rdb_bytes.entry(0, b"k", rdb_bytes.rdb_str(b"v" * 400), db=0)
    frame = lz4.frame.compress(records, store_size=False)
    blob = bytes([rdb_bytes.LZ4_BLOB]) + rdb_bytes.rdb_len(len(frame)) + frame
    data = rdb_bytes.header_aux(0) + blob + rdb_bytes.epilog()
    with pytest.raises(rdbspec.ParseError, match="without a content size"):
        rdbspec.parse(data).read_all()


def test_bytes_after_a_chunked_entry():
    payload = rdb_bytes.entry(0, b"k", rdb_bytes.rdb_str(b"v"), db=0)
    chunks = rdb_bytes.tag(3, payload[:4]) + rdb_bytes.tag(3, payload[4:] + b"\x00")
    data = rdb_bytes.header_aux(0) + chunks + rdb_bytes.epilog()
    with pytest.raises(rdbspec.ParseError, match="1 bytes follow the key/value"):
        rdbspec.parse(data).read_all()


def test_eof_inside_a_blob():
    import zstandard

    records = rdb_bytes.entry(0, b"k", rdb_bytes.rdb_str(b"v" * 300), db=0) + b"\xff"
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(records)
    blob = bytes([rdb_bytes.ZSTD_BLOB]) + rdb_bytes.rdb_len(len(frame)) + frame
    data = rdb_bytes.header_aux(0) + blob + rdb_bytes.epilog()
    with pytest.raises(rdbspec.ParseError, match="EOF opcode inside the zstd blob"):
        rdbspec.parse(data).read_all()


def test_tag_header_layout():
    assert rdb_bytes.tag(7, b"abc") == b"\xe0" + struct.pack("<II", 7, 3) + b"abc"
