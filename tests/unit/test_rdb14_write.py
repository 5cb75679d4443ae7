"""RDB 14 (Redis 8.8) written: sparse arrays and type-27 streams by `Writer`, NACK zones kept by
`rewrite --commands`, and both taken to older generations by `rewrite --target` (refused by name,
or dropped with `--allow-lossy`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rdbspec
from rdbspec import SparseArray, Writer, cli
from rdbspec.errors import EXIT_CODES, UnwritableError
from rdbspec.write.stream import EditableStream
from tests.support.rdb14 import NOW, T, golden_file, golden_value, one_key_file, sid

pytestmark = pytest.mark.usefixtures("each_backend")


MIXED = {3: b"abc", 0: b"this_is_a_long_sds_string_value_long_enough", 1: 42, 2: 1.5}


def test_writer_writes_arrays_and_type_27(tmp_path: Path) -> None:
    path = tmp_path / "w.rdb"
    with Writer(path, 14) as out:
        out.select_db(0, 3, 0)
        out.array(b"arr", MIXED)
        out.array(b"next", [(7, b"x")], insert_idx=7)
        stream = EditableStream()
        stream.append((1, 0), [(b"f", b"v")], 4096, 100)
        out.stream(b"s", stream)
    # the tags and order rdbSaveArrayElement gives: the bytes of the fixture of librdb's content
    assert bytes([28, 3]) + b"arr" + golden_value("array_v14_mixed_types") in path.read_bytes()
    with rdbspec.open(path) as dump:
        arr, following, s = list(dump.keys())
        assert (arr.rdb_type, arr.value) == (28, SparseArray(None, sorted(MIXED.items())))
        assert following.value == SparseArray(7, [(7, b"x")])
        assert s.rdb_type == 27 and s.value.idmp.duration_s == 100  # Redis's IDMP defaults


def test_writer_refuses_arrays_it_cannot_write(tmp_path: Path) -> None:
    with Writer(tmp_path / "w12.rdb", 12) as out:
        out.select_db(0)
        with pytest.raises(UnwritableError, match="RDB 12 has no sparse arrays"):
            out.array(b"arr", {0: b"x"})
    with Writer(tmp_path / "w14.rdb", 14) as out:
        out.select_db(0)
        with pytest.raises(UnwritableError, match="empty sparse array"):
            out.array(b"arr", {})


def test_commands_keep_the_nack_zone(tmp_path: Path) -> None:
    """rewrite --commands: XACK of a NACKed entry takes it out of the zone (and the PEL), XCLAIM of
    another gives it a consumer, so it leaves the zone; what stays keeps its order."""
    source = golden_file("stream_rdb_t27_xnack", tmp_path)
    commands = tmp_path / "edits.txt"
    commands.write_text(f"XACK mystream mygroup {sid(T + 2)}\n")
    out = tmp_path / "edited.rdb"
    code = cli.main(["rewrite", str(source), "-o", str(out), "--commands", str(commands), "--now", str(NOW)])
    assert code == 0
    with rdbspec.open(out) as dump:
        [key] = list(dump.keys())
        [group] = key.value.groups
        assert key.rdb_type == 27 and list(group.nacked) == [(T + 4, 0)]
        assert [p.id for p in group.pending] == [(T, 0), (T + 4, 0), (T + 5, 0)]
    commands.write_text(f"XCLAIM mystream mygroup other 0 {sid(T + 4)}\n")
    code = cli.main(["rewrite", str(source), "-o", str(out), "--commands", str(commands), "--now", str(NOW)])
    assert code == 0
    with rdbspec.open(out) as dump:
        [group] = next(dump.keys()).value.groups
        assert list(group.nacked) == [(T + 2, 0)]
        assert {p.id: p.consumer for p in group.pending}[(T + 4, 0)] == b"other"


# -- rewrite --target: older generations ----------------------------------------------------------


def test_array_is_refused_by_name_or_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = golden_file("rdb_redis14_array_basic", tmp_path)
    out = tmp_path / "old.rdb"
    code = cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-8.0"])
    err = capsys.readouterr().err
    assert code == EXIT_CODES["unwritable"] and "Redis 8.8 array keys (type 28)" in err and "key b'arr'" in err
    assert not out.exists()
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-8.0", "--allow-lossy"]) == 0
    with rdbspec.open(out) as dump:
        assert dump.header.version == 12 and list(dump.keys()) == []


def test_xnack_stream_to_an_older_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A NACK zone has no older form: refused, or dropped with its entries left pending for no
    consumer (claimable at once: their delivery time is 0)."""
    source = golden_file("stream_rdb_t27_xnack", tmp_path)
    out = tmp_path / "old.rdb"
    code = cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-8.0"])
    err = capsys.readouterr().err
    assert code == EXIT_CODES["unwritable"] and "stream NACK zones (type 27" in err
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-8.0", "--allow-lossy"]) == 0
    with rdbspec.open(source) as a, rdbspec.open(out) as b:
        old, new = next(a.keys()), next(b.keys())
        assert (b.header.version, new.rdb_type) == (12, 21)
        assert list(new.value.entries()) == list(old.value.entries())
        [group] = new.value.groups
        assert group.nacked is None and list(group.pending) == list(old.value.groups[0].pending)
        assert len(b.warnings) == 2  # the two entries pending for no consumer, as an older loader sees them


def test_stream_without_nacked_entries_converts_losslessly(tmp_path: Path) -> None:
    source = tmp_path / "empty.rdb"
    source.write_bytes(one_key_file(27, b"s", golden_value("stream_value_t27_empty_nack")))
    out = tmp_path / "old.rdb"
    assert cli.main(["rewrite", str(source), "-o", str(out), "--target", "redis-7.2"]) == 0
    with rdbspec.open(source) as a, rdbspec.open(out) as b:
        old, new = next(a.keys()), next(b.keys())
        assert (new.rdb_type, len(new.value.groups)) == (21, 2)
        assert [list(g.pending) for g in new.value.groups] == [list(g.pending) for g in old.value.groups]
