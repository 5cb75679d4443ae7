"""The generated writers (issue 15): each type's `_write` (or `write_<id>` for a type written from
its instances) mirrors its `_read`. What the spec derives (lengths, counts, sizes, encodings,
backlens, prevlens, LZF) is computed as the server computes it, so the records of every dump a
real server wrote, read by the Python parsers and written again, are the very same bytes; the
golden fixtures written again read back to the same values (and the same bytes, but for the
few whose bytes a server would not write, each named below with why); what the spec cannot
write is a `WriteError` naming the field."""

from __future__ import annotations

import importlib
import os
import stat
import sys
from pathlib import Path

import pytest
from rdbspec_generated import Io, WriteError, WriteIo, rdb_string, stream, ziplist
from rdbspec_generated import listpack as lp
from rdbspec_generated import rdb as prdb

from rdbspec import cli

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "conformance"))

from golden import GOLDEN_DIR, camel, fixture_names, load_fixture, load_spec_info, match  # noqa: E402

REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))
SPEC_INFO = load_spec_info()

# Fixtures whose bytes are not what a server writes for their values, and the fields that say
# so (sizes and counts of that layout): written again, they read back to the same values in the
# bytes a server would write, which are written again as they are.
NOT_AS_WRITTEN: dict[str, tuple[str, set[str]]] = {
    "lp_32bit_str_small": ("a 5-byte string with a 32-bit length: lpEncodeString takes the 6-bit form",
                           {"total_bytes"}),
    "lp_count_unknown": ("num_elements 65535 for 2 entries: lpInsert counts up to 65534", {"num_elements"}),
    "zl_32bit_str_be": ("a 5-byte string with a 32-bit length: zipStoreEntryEncoding takes the 6-bit form",
                        {"zlbytes"}),
    "stream_lp_wrap_int64": ("deltas -2 and 1 in the int64 form: lpEncodeIntegerGetType takes 13 and 7 bits",
                             {"total_bytes"}),
    # LZF runs made by hand to show each form of the format; liblzf (lzf_compress) finds others
    "lzf_long_backref": ("a hand-made LZF run", {"clen"}),
    "ql_v1_lzf_node": ("a hand-made LZF run", set()),
    "ql_v2_mixed_lzf": ("a hand-made LZF run", set()),
    "set_listpack_lzf": ("a hand-made LZF run", set()),
}
# Fixtures a writer refuses to write in the form they hold: the spec path it names, and why.
NOT_WRITABLE = {
    "lzf_short_backref": ("rdb_string:rdb_string.lzf", "liblzf does not compress these 26 bytes to the 22 of "
                          "the hand-made run, the most rdbSaveLzfStringObject keeps: the server stores them raw"),
}


def written(obj, root=None) -> bytes:
    out = WriteIo()
    obj._write(out, None, root)
    return bytes(out.data)


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_record_of_a_real_server_dump_is_written_again_byte_for_byte(path: Path) -> None:
    data = path.read_bytes()
    root = prdb.Rdb._read(Io(data, 0, len(data)), 0, None, None)[0]
    start = root._stream_pos
    kinds = set()
    for record in root.iter_records():
        end = root._stream_pos
        assert written(record, root) == data[start:end], f"record at byte {start} (opcode {record.opcode})"
        kinds.add(record.opcode)
        start = end
    assert {255, 254, 251, 250} <= kinds and min(kinds) < 200  # EOF, SELECTDB, RESIZEDB, AUX, keys


def _golden_object(name: str):
    fx = load_fixture(name, GOLDEN_DIR)
    module = importlib.import_module(f"rdbspec_generated.{fx.root_file}")
    cls = getattr(module, camel(fx.root_types[-1]) if fx.root_types else camel(fx.root_file))
    return fx, cls, cls.from_bytes(fx.data, **SPEC_INFO.resolve_params(fx.root, fx.params))


VALID = [n for n in fixture_names(GOLDEN_DIR) if not load_fixture(n, GOLDEN_DIR).is_invalid]


@pytest.mark.parametrize("name", VALID)
def test_a_golden_fixture_is_written_again(name: str) -> None:
    fx, cls, obj = _golden_object(name)
    if name in NOT_WRITABLE:
        with pytest.raises(WriteError) as err:
            written(obj)
        assert err.value.spec_path == NOT_WRITABLE[name][0]
        return
    got = written(obj)
    layout: set[str] = set()
    if name in NOT_AS_WRITTEN:
        assert got != fx.data, f"{name} is written as it was: drop it from NOT_AS_WRITTEN"
        layout = NOT_AS_WRITTEN[name][1]
    else:
        assert got == fx.data
    again = cls.from_bytes(got, **SPEC_INFO.resolve_params(fx.root, fx.params))
    assert match({k: v for k, v in fx.expected.items() if k not in layout}, again) == []
    assert written(again) == got


# -- what cannot be written ------------------------------------------------------------------

def test_a_length_beyond_64_bits_is_a_write_error_naming_the_field() -> None:
    with pytest.raises(WriteError) as err:
        rdb_string.write_rdb_len(WriteIo(), 1 << 64, False)
    assert err.value.spec_path == "rdb_string:rdb_len.len64"


def test_an_encoded_length_beyond_6_bits_is_refused() -> None:
    with pytest.raises(WriteError) as err:
        rdb_string.write_rdb_len(WriteIo(), 64, True)
    assert "rdb_string:rdb_len" in err.value.spec_path


def test_listpack_entries_take_the_smallest_encoding_the_server_takes() -> None:
    """redis src/listpack.c lpEncodeIntegerGetType and lpEncodeString: each range edge."""
    cases = {0: "00", 127: "7f", 128: "c080", -1: "dfff", 4095: "cfff", -4096: "d000", 4096: "f10010",
             -32768: "f10080", 32768: "f2008000", -8388608: "f2000080", 8388608: "f300008000",
             2147483647: "f3ffffff7f", 2147483648: "f40000008000000000", -(1 << 63): "f4" + "00" * 7 + "80"}
    for value, head in cases.items():
        out = WriteIo()
        lp.write_lp_entry(out, value, None)
        assert out.data.hex().startswith(head), value
        assert lp.read_lp_entry(Io(bytes(out.data), 0, len(out.data)), bytes(out.data), len(out.data), 0,
                                None, None)[0] == value
    for size, head in ((0, "80"), (63, "bf"), (64, "e040"), (4095, "efff"), (4096, "f000100000")):
        out = WriteIo()
        lp.write_lp_entry(out, None, b"x" * size)
        assert out.data.hex().startswith(head), size
        assert out.scalars == 1


def test_a_ziplist_is_written_with_the_prevlen_of_each_entry() -> None:
    """redis src/ziplist.c zipStorePrevEntryLength: 1 byte below 254, else 0xFE and 4 bytes."""
    entries = [b"a" * 300, 7, b"b", -200]
    data = written(ziplist.Ziplist._new(body=ziplist.ZlBody._new(entries=entries)))
    again = ziplist.Ziplist.from_bytes(data)
    assert again.entries == entries and again.zlbytes == len(data)
    assert data[10] == 0 and data[10 + 3 + 300] == 0xFE  # the second entry's prevlen: 303 bytes before it


def test_an_object_of_another_type_than_the_field_is_a_write_error() -> None:
    blob = rdb_string.RdbBlob._new(kind=1, plain=stream.StreamId._new())
    with pytest.raises(WriteError) as err:
        written(blob)
    assert err.value.spec_path == "rdb_string:rdb_blob.plain" and "expected a listpack" in err.value.reason


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_written_dump_has_the_mode_the_umask_gives(tmp_path: Path, umask: int, mode: int) -> None:
    """As `open()` would create it: a server running as another user reads a copy made with the
    usual umask (the temporary file the writer renames is created 0600)."""
    source = TESTS / "corpus" / "real" / "redis-7.4.1" / "mixed_types.rdb"
    before = os.umask(umask)
    try:
        assert cli.main(["rewrite", str(source), "-o", str(tmp_path / "out.rdb")]) == 0
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "out.rdb").stat().st_mode) == mode
