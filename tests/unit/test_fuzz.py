"""Seeded mutations of real dumps: the library raises only `rdbspec.RdbError`, within 2 s per
input and in bounded memory. Any other exception is a bug of ours (`InternalError`, exit 70 in the
CLI): the run counts them and fails on any.

The inputs run in worker subprocesses (this file run as a script) under RLIMIT_AS = 2 GiB, each
input under a 2 s interval timer; the workers report one JSON line per input. The run goes once
per backend (RDBSPEC_BACKEND in the workers). Under AddressSanitizer (`make test-asan`: libasan
preloaded) RLIMIT_AS stays off, as ASan reserves terabytes of address space for its shadow
memory; the peak RSS is still checked.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

from tests.support import template_dump
from tests.support.rdb14 import golden_value
from tests.support.valkey_dumps import vcs_lz4, write_valkey081

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
DUMPS = [
    REAL / "redis-7.0.15" / "stream_basic.rdb",
    REAL / "redis-6.0.9" / "stream_groups.rdb",
    REAL / "redis-7.4.1" / "mixed_types.rdb",
    REAL / "valkey-8.0.1" / "stream_groups.rdb",
]
# dumps made for the run (tests/support/valkey_dumps.py): Valkey 9.2's VALKEY081 with path hashes,
# and the same compressed as `rdbcompression lz4` writes it (the envelope and the LZ4 frame mutated)
MADE = ("valkey-9.2-path-hash.rdb", "valkey-9.2-lz4.rdb")
SEED = 0x5EED
PER_INPUT_S = 2.0
BUDGET_PER_DUMP_S = 9.0
MAX_INPUTS_PER_DUMP = 1000
MEMORY_LIMIT = 2 << 30
INTERESTING = (0x00, 0x01, 0x3F, 0x40, 0x7F, 0x80, 0x81, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3, 0xFE, 0xFF)
HUGE = (1 << 31, 1 << 32, (1 << 62) + 7, (1 << 63) - 1, (1 << 64) - 1)


# -- mutations ---------------------------------------------------------------------------------


def rdb14_seed(path: Path) -> Path:
    """A REDIS0014 dump (Redis 8.8) of the golden fixtures' new types: the type-27 stream with a
    NACK zone (stream_rdb_t27_xnack), then sparse arrays with every element tag and with an insert
    index (array_v14_mixed_types, array_v14_with_insert_idx, array_smallstr_int_encoded)."""
    body = golden_value("stream_rdb_t27_xnack")[:-9]  # without EOF and the checksum
    for name in ("array_v14_mixed_types", "array_v14_with_insert_idx", "array_smallstr_int_encoded"):
        key = name.encode()
        body += bytes([28, len(key)]) + key + golden_value(name)
    path.write_bytes(bytes(_with_checksum(bytearray(body + b"\xff" + bytes(8)))))
    return path


def _with_checksum(data: bytearray) -> bytearray:
    from rdbspec.read.checksum import crc64

    if len(data) >= 17:
        end = len(data) - 8
        data[end:] = struct.pack("<Q", crc64(bytes(data), 0, end))
    return data


def mutate(data: bytes, rng: random.Random, record_offsets: list[int]) -> tuple[str, bytes]:
    """One seeded mutation: (description, mutated bytes)."""
    kind = rng.choice(["truncate", "bitflip", "inflate", "inflate-key", "interesting", "splice"])
    out = bytearray(data)
    if kind == "truncate":
        cut = rng.randrange(len(data))
        return f"truncate@{cut}", bytes(out[:cut])
    if kind == "bitflip":
        spots = [rng.randrange(9, len(out)) for _ in range(rng.choice((1, 1, 2, 4, 8)))]
        for pos in spots:
            out[pos] ^= 1 << rng.randrange(8)
        desc = f"bitflip@{spots}"
    elif kind in ("inflate", "inflate-key"):
        if kind == "inflate-key" and record_offsets:
            pos = rng.choice(record_offsets) + 1  # the key length after the type byte
        else:
            pos = rng.randrange(9, len(out) - 1)
        huge = rng.choice(HUGE)
        encoded = b"\x81" + struct.pack(">Q", huge) if huge >= 1 << 32 or rng.random() < 0.5 \
            else b"\x80" + struct.pack(">I", huge)
        out[pos:pos + 1] = encoded
        desc = f"{kind}@{pos}={huge}"
    elif kind == "interesting":
        spots = [rng.randrange(9, len(out)) for _ in range(rng.choice((1, 2, 3)))]
        for pos in spots:
            out[pos] = rng.choice(INTERESTING)
        desc = f"interesting@{spots}"
    else:
        a, b = sorted(rng.randrange(9, len(out)) for _ in range(2))
        c = rng.randrange(9, len(out))
        out[c:c] = out[a:min(b, a + 64)]
        desc = f"splice[{a}:{b}]@{c}"
    if rng.random() < 0.7:
        _with_checksum(out)  # so the mutation, not the CRC, is what the parser meets
    return desc, bytes(out)


# -- the worker (this file run as a script) ----------------------------------------------------


class _Timeout(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _Timeout


def _read_everything(data: bytes, verify: bool) -> int:
    import rdbspec

    n = 0
    with rdbspec.parse(data, verify_checksum=verify) as dump:
        for record in dump.keys():
            _ = record.value
            _ = record.field_expire_at_ms
            n += 1
    return n


def worker(paths: list[str], seed: int, budget_s: float, max_inputs: int) -> None:
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGALRM, _on_alarm)
    import rdbspec
    from rdbspec.errors import InternalError
    from rdbspec.read import backend

    def emit(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    for index, path in enumerate(paths):
        data = Path(path).read_bytes()
        with rdbspec.parse(data) as dump:
            offsets = [r.offset for r in dump.keys()]
        rng = random.Random(f"{seed}:{Path(path).parent.name}/{Path(path).name}:{index}")
        deadline = time.monotonic() + budget_s
        count = 0
        while count < max_inputs and time.monotonic() < deadline:
            desc, mutated = mutate(data, rng, offsets)
            verify = rng.random() < 0.5
            started = time.monotonic()
            status, detail = "ok", ""
            signal.setitimer(signal.ITIMER_REAL, PER_INPUT_S)
            try:
                _read_everything(mutated, verify)
            except _Timeout:
                status = "timeout"
            except rdbspec.RdbError as err:
                status, detail = "rdb", f"{err.__class__.__name__}: {err}"[:200]
            except InternalError as err:  # a bug, located by the library
                status, detail = "internal", "".join(traceback.format_exception(err))[-3000:]
            except BaseException as err:  # noqa: BLE001 - exactly what the test looks for
                status, detail = "error", "".join(traceback.format_exception(err))[-3000:]
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            count += 1
            emit({"file": path, "mutation": desc, "verify": verify, "status": status, "detail": detail,
                  "seconds": time.monotonic() - started})
    emit({"done": True, "backend": backend.name(), "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss})


# -- the test ----------------------------------------------------------------------------------


def _spawn(paths: list[Path]) -> subprocess.Popen[str]:
    args = json.dumps([[str(p) for p in paths], SEED, BUDGET_PER_DUMP_S, MAX_INPUTS_PER_DUMP])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                      env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, __file__, "--worker", args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _made(directory: Path) -> list[Path]:
    """The `MADE` seed dumps, the RDB 14 seed and a dump of Redis 8.10's hash templates (its
    records, every form of a template hash), written into `directory`."""
    plain, compressed = (directory / name for name in MADE)
    write_valkey081(plain)
    compressed.write_bytes(vcs_lz4(plain.read_bytes()))
    templates = directory / "templates.rdb"
    template_dump.build(templates, keys=8, late=True)
    return [plain, compressed, rdb14_seed(directory / "rdb14.rdb"), templates]


def test_mutated_dumps_raise_only_rdb_errors(each_backend: str, tmp_path: Path) -> None:
    started = time.monotonic()
    dumps = DUMPS + _made(tmp_path)
    halves = [dumps[0::2], dumps[1::2]]  # two workers in parallel
    procs = [_spawn(paths) for paths in halves]
    results: list[dict] = []
    finals: list[dict] = []
    for proc, paths in zip(procs, halves):
        try:
            out, err = proc.communicate(timeout=BUDGET_PER_DUMP_S * len(paths) + 30)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"worker for {paths} hung (an input outran its 2 s alarm)\n{err[-2000:]}") from exc
        rows = [json.loads(line) for line in out.splitlines()]
        last = rows[-1] if rows else {}
        assert proc.returncode == 0 and last.get("done"), (
            f"worker for {paths} died with {proc.returncode} after {rows[-1] if rows else 'nothing'}\n"
            f"{err[-3000:]}")
        finals.append(last)
        results.extend(rows[:-1])

    by_status: dict[str, int] = {}
    for row in results:
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
    print(f"\nfuzz: {len(results)} inputs in {time.monotonic() - started:.1f}s: {by_status}; "
          f"worker max RSS {[f['maxrss_kb'] // 1024 for f in finals]} MiB")

    errors = [r for r in results if r["status"] in ("internal", "error")]
    timeouts = [r for r in results if r["status"] == "timeout"]
    slow = [r for r in results if r["seconds"] > PER_INPUT_S]
    report = []
    for row in errors[:5]:
        report.append(f"{row['file']} {row['mutation']} (verify={row['verify']}):\n{row['detail']}")
    for row in (timeouts + slow)[:5]:
        report.append(f"{row['file']} {row['mutation']}: {row['status']} after {row['seconds']:.2f}s")
    assert not errors and not timeouts and not slow, (
        f"{len(errors)} internal errors (bugs: exceptions that are not RdbError), {len(timeouts)} timeouts, "
        f"{len(slow)} slow:\n"
        + "\n\n".join(report))
    assert len(results) >= 100
    assert all(f["maxrss_kb"] < MEMORY_LIMIT // 1024 for f in finals)
    assert [f["backend"] for f in finals] == [each_backend] * len(finals)


def test_rdb14_seed_reads(tmp_path: Path) -> None:
    import rdbspec

    with rdbspec.parse(rdb14_seed(tmp_path / "rdb14.rdb").read_bytes()) as dump:
        assert [(k.rdb_type, k.count_elements()) for k in dump.keys()] == [(27, 4), (28, 4), (28, 3), (28, 4)]


def test_mutation_is_deterministic() -> None:
    data = DUMPS[1].read_bytes()
    a = [mutate(data, random.Random(7), [100]) for _ in range(1)]
    b = [mutate(data, random.Random(7), [100]) for _ in range(1)]
    assert a == b


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    worker(*json.loads(sys.argv[2]))
