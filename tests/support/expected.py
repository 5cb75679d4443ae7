"""What a live server says about its data (``capture``), and how a parsed dump differs (``compare``).

``capture(client)`` produces the ``<scenario>.expected.json`` structure of ``tests/corpus/real``
(format ``rdb-acceptance-expected/1``, see ``/work/shared/corpus/README.md``). It talks RESP2 over
its own bare connection, so redis-py's response callbacks and RESP3 never reshape a reply.

``compare(expected, dump_records)`` checks the JSON Lines records of ``rdbspec dump``::

    {"db", "key", "type", "rdb_type", "expire_at_ms", "idle_s", "freq", "value",
     ["field_expire_at_ms"]}

against such a dict and returns readable differences (an empty list when they agree).
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import redis

FORMAT = "rdb-acceptance-expected/1"

# CONFIG GET names recorded in "config", in this order (only those the server knows).
CONFIG_NAMES = (
    "rdbcompression",
    "rdbchecksum",
    "stream-node-max-entries",
    "stream-node-max-bytes",
    "list-max-ziplist-size",
    "list-max-listpack-size",
    "list-compress-depth",
    "hash-max-ziplist-entries",
    "hash-max-listpack-entries",
    "hash-max-ziplist-value",
    "hash-max-listpack-value",
    "set-max-intset-entries",
    "set-max-listpack-entries",
    "zset-max-ziplist-entries",
    "zset-max-listpack-entries",
    "maxmemory-policy",
)

RDB_TYPE_NAMES = {
    0: "string",
    1: "list",
    2: "set",
    3: "zset",
    4: "hash",
    5: "zset_2",
    6: "module_pre_ga",
    7: "module_2",
    9: "hash_zipmap",
    10: "list_ziplist",
    11: "set_intset",
    12: "zset_ziplist",
    13: "hash_ziplist",
    14: "list_quicklist",
    15: "stream_listpacks",
    16: "hash_listpack",
    17: "zset_listpack",
    18: "list_quicklist_2",
    19: "stream_listpacks_2",
    20: "set_listpack",
    21: "stream_listpacks_3",
    22: "hash_metadata_pre_ga",
    23: "hash_listpack_ex_pre_ga",
    24: "hash_metadata",
    25: "hash_listpack_ex",
    26: "stream_listpacks_4",
}
# VALKEY-magic dumps number their types as Valkey does (valkey src/rdb.h enum RdbType): Redis's
# up to 21, then 22 HASH_2 (hash with field TTLs, RDB 80 / 9.0) and 23 PATH_HASH (RDB 81 / 9.2).
VALKEY_RDB_TYPE_NAMES = {**{k: v for k, v in RDB_TYPE_NAMES.items() if k <= 21}, 22: "hash_2", 23: "path_hash"}
VALKEY_RDB_VERSION = 80  # the first RDB version with the VALKEY magic (valkey src/rdb.h rdbUseValkeyMagic)
STREAM_TYPES = (15, 19, 21, 26, 27)

EXPIRE_SOURCE_PEXPIRETIME = "PEXPIRETIME"
EXPIRE_SOURCE_PTTL = "PTTL at captured_at_ms"
EXPIRE_SOURCE_PTTL_REQUESTED = "PTTL at captured_at_ms (+ the PEXPIREAT value requested)"

Json = Any
ByteS = str | dict[str, str]


# -- byte strings ------------------------------------------------------------------------------


def to_s(value: bytes | bytearray | memoryview | str) -> ByteS:
    """A byte string as the corpus writes it: str when valid UTF-8, else ``{"hex": ...}``."""
    if isinstance(value, str):
        return value
    raw = bytes(value)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": raw.hex()}


def from_s(value: Json) -> bytes:
    """Inverse of ``to_s`` (also takes ints, which some dumps may print for integer strings)."""
    if isinstance(value, dict) and set(value) == {"hex"}:
        return bytes.fromhex(value["hex"])
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bool):
        raise TypeError(f"not a byte string: {value!r}")
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise TypeError(f"not a byte string: {value!r}")


def _conv(value: Any) -> Json:
    """A raw RESP2 reply as JSON: bytes → S, lists recursively, ints and None unchanged."""
    if isinstance(value, (bytes, bytearray)):
        return to_s(value)
    if isinstance(value, list):
        return [_conv(v) for v in value]
    return value


def _flat_to_obj(flat: Sequence[Any]) -> dict[str, Any]:
    return {bytes(k).decode("utf-8", "replace"): v for k, v in zip(flat[::2], flat[1::2], strict=True)}


# -- a bare RESP2 connection ------------------------------------------------------------------


class _Raw:
    """A RESP2 connection without response callbacks; errors come back as exception values."""

    def __init__(self, client: redis.Redis) -> None:
        kw = dict(client.connection_pool.connection_kwargs)
        keep = {k: kw[k] for k in ("host", "port", "path", "username", "password") if kw.get(k) is not None}
        cls = redis.UnixDomainSocketConnection if "path" in keep else redis.Connection
        self.conn = cls(**keep, db=0, protocol=2, decode_responses=False, socket_timeout=60)

    def close(self) -> None:
        self.conn.disconnect()

    def call(self, *args: Any) -> Any:
        out = self.many([args])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def many(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        if not commands:
            return []
        self.conn.send_packed_command(self.conn.pack_commands(list(commands)))
        replies: list[Any] = []
        for _ in commands:
            try:
                replies.append(self.conn.read_response())
            except redis.ResponseError as e:
                replies.append(e)
        return replies


# -- server facts -----------------------------------------------------------------------------


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for p in text.split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _info(raw: _Raw, section: str) -> dict[str, str]:
    text = bytes(raw.call("INFO", section)).decode("utf-8", "replace")
    out: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def rdb_version_for(redis_version: str, valkey_version: str | None = None) -> int:
    """The RDB version a server writes, from its INFO versions."""
    if valkey_version and _version_tuple(valkey_version) >= (9, 0):
        return VALKEY_RDB_VERSION
    v = _version_tuple(redis_version)
    if v >= (7, 3):  # 7.4 (and 8.0-m01, which reports 7.9.x)
        return 12
    if v >= (7, 1):
        return 11
    if v >= (7, 0):
        return 10
    if v >= (5, 0):
        return 9
    if v >= (4, 0):
        return 8
    return 7


def predict_rdb_type(type_: str, encoding: str, rdb_version: int, has_field_ttl: bool = False) -> int | None:
    """The value type byte a server writes for a key of this TYPE and OBJECT ENCODING."""
    if type_ == "string":
        return 0
    if type_ == "list":
        return 18 if rdb_version >= 10 else 14
    if type_ == "set":
        return {"intset": 11, "listpack": 20, "hashtable": 2}.get(encoding)
    if type_ == "zset":
        return {"ziplist": 12, "listpack": 17, "skiplist": 5}.get(encoding)
    if type_ == "hash":
        if encoding == "hashtable" and rdb_version >= VALKEY_RDB_VERSION:
            # valkey src/rdb.c rdbSaveObjectType: HASH_2 while a field has a TTL (hashTypeHasVolatileFields)
            return 22 if has_field_ttl else 4
        if encoding == "hashtable":
            return 24 if has_field_ttl else 4
        return {"ziplist": 13, "listpack": 16, "listpackex": 25}.get(encoding)
    if type_ == "stream":
        return 21 if rdb_version >= 11 else 19 if rdb_version >= 10 else 15
    return None


def _crc64_jones(data: bytes) -> int:
    try:
        import anycrc

        return int(anycrc.Model("CRC64-REDIS").calc(data))
    except ImportError:  # pragma: no cover - anycrc is a project dependency
        poly, crc = 0x95AC9329AC4BC9B5, 0
        for byte in data:
            crc ^= byte
            for _ in range(8):
                crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        return crc


def describe_rdb(
    path: str | os.PathLike[str],
    stream_type_bytes: Iterable[int] = (),
    save_seconds: float | None = None,
) -> dict[str, Any]:
    """The ``rdb`` block of an expected.json for a dump file."""
    data = Path(path).read_bytes()
    header = data[:9].decode("ascii", "replace")
    digits = header[5:] if header.startswith("REDIS") else header[6:]
    trailer = data[-8:]
    stored = int.from_bytes(trailer, "little")
    if stored == 0:
        checksum = "zero (rdbchecksum no)"
    elif _crc64_jones(data[:-8]) == stored:
        checksum = "ok"
    else:
        checksum = "mismatch"
    return {
        "header": header,
        "rdb_version": int(digits) if digits.isdigit() else None,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "last_byte_before_checksum": data[-9] if len(data) >= 9 else None,
        "trailing_checksum_hex": trailer.hex(),
        "checksum": checksum,
        "stream_type_bytes": sorted(set(stream_type_bytes)),
        "file": Path(path).name,
        "save_seconds": save_seconds,
    }


def _version_output(info: Mapping[str, str]) -> str:
    exe = info.get("executable", "")
    if exe and os.path.isfile(exe) and os.access(exe, os.X_OK):
        try:
            return subprocess.run(
                [exe, "--version"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return (
        f"Redis server v={info.get('redis_version', '?')} sha={info.get('redis_git_sha1', '?')}:"
        f"{info.get('redis_git_dirty', '0')} bits={info.get('arch_bits', '?')} "
        f"build={info.get('redis_build_id', '?')}"
    )


def _has_command(raw: _Raw, name: str) -> bool:
    reply = raw.call("COMMAND", "INFO", name)
    return bool(reply) and reply[0] is not None


# -- capture ----------------------------------------------------------------------------------


def _entry(item: Sequence[Any]) -> dict[str, Any]:
    entry_id, flat = item
    flat = flat or []
    return {
        "id": to_s(entry_id),
        "fields": [[to_s(f), to_s(v)] for f, v in zip(flat[::2], flat[1::2], strict=True)],
    }


def _xinfo_full(reply: Sequence[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in _flat_to_obj(reply).items():
        if key == "entries":
            out[key] = [_entry(e) for e in value or []]
        elif key == "groups":
            groups = []
            for g in value or []:
                group: dict[str, Any] = {}
                for gk, gv in _flat_to_obj(g).items():
                    if gk == "consumers":
                        group[gk] = [{ck: _conv(cv) for ck, cv in _flat_to_obj(c).items()} for c in gv or []]
                    else:
                        group[gk] = _conv(gv)
                groups.append(group)
            out[key] = groups
        else:
            out[key] = _conv(value)
    return out


def _functions(raw: _Raw) -> list[dict[str, Any]] | None:
    if not _has_command(raw, "FUNCTION"):
        return None
    libs = []
    for lib in raw.call("FUNCTION", "LIST", "WITHCODE") or []:
        obj: dict[str, Any] = {}
        for k, v in _flat_to_obj(lib).items():
            if k == "functions":  # the server lists them in hash order: sort by name
                funcs = [_flat_to_obj(f) for f in v or []]
                funcs.sort(key=lambda f: bytes(f.get("name") or b""))
                obj[k] = [{fk: _conv(fv) for fk, fv in f.items()} for f in funcs]
            else:
                obj[k] = _conv(v)
        libs.append(obj)
    libs.sort(key=lambda lib: from_s(lib.get("library_name") or ""))
    return libs


def _config(raw: _Raw) -> dict[str, str]:
    out: dict[str, str] = {}
    replies = raw.many([("CONFIG", "GET", name) for name in CONFIG_NAMES])
    for name, reply in zip(CONFIG_NAMES, replies, strict=True):
        if isinstance(reply, list):
            got = {bytes(k).decode(): bytes(v).decode() for k, v in zip(reply[::2], reply[1::2], strict=True)}
            if name in got:
                out[name] = got[name]
    return out


def _scan_keys(raw: _Raw) -> list[bytes]:
    keys: set[bytes] = set()
    cursor = b"0"
    while True:
        cursor, batch = raw.call("SCAN", cursor, "COUNT", 1000)
        keys.update(bytes(k) for k in batch)
        if cursor in (b"0", 0, "0"):
            return sorted(keys)


def _db_numbers(raw: _Raw) -> list[int]:
    return sorted(int(k[2:]) for k in _info(raw, "keyspace") if k.startswith("db") and k[2:].isdigit())


def capture(
    client: redis.Redis,
    *,
    scenario: str = "",
    label: str | None = None,
    rdb_path: str | os.PathLike[str] | None = None,
    save_seconds: float | None = None,
    skipped: Sequence[str] = (),
    notes: Sequence[str] = (),
    config_method: Mapping[str, str] | None = None,
    requested_expire_at: Mapping[tuple[int, bytes], int] | None = None,
    version_output: str | None = None,
) -> dict[str, Any]:
    """Everything the server behind ``client`` holds, as an expected.json dict.

    Only the host/port/credentials of ``client`` are used. ``rdb_path`` (a dump the server has
    just written) fills the ``rdb`` block, else it is null. Servers without PEXPIRETIME (< 7.0)
    give ``expire_at_ms`` as ``captured_at_ms + PTTL``; pass ``requested_expire_at``
    (``{(db, key): ms}``, e.g. ``PopulateResult.expires``) to replace it by the requested value
    when it is within 2 s of it.
    """
    raw = _Raw(client)
    try:
        return _capture(
            raw,
            scenario=scenario,
            label=label,
            rdb_path=rdb_path,
            save_seconds=save_seconds,
            skipped=skipped,
            notes=notes,
            config_method=config_method,
            requested_expire_at=requested_expire_at,
            version_output=version_output,
        )
    finally:
        raw.close()


def _capture(
    raw: _Raw,
    *,
    scenario: str,
    label: str | None,
    rdb_path: str | os.PathLike[str] | None,
    save_seconds: float | None,
    skipped: Sequence[str],
    notes: Sequence[str],
    config_method: Mapping[str, str] | None,
    requested_expire_at: Mapping[tuple[int, bytes], int] | None,
    version_output: str | None,
) -> dict[str, Any]:
    info = _info(raw, "server")
    redis_version = info.get("redis_version", "0")
    valkey_version = info.get("valkey_version")
    server_name = info.get("server_name") or ("valkey" if valkey_version else "redis")
    shown_version = valkey_version if server_name == "valkey" and valkey_version else redis_version
    seconds, micros = raw.call("TIME")
    captured_at_ms = int(seconds) * 1000 + int(micros) // 1000

    has_pexpiretime = _has_command(raw, "PEXPIRETIME")
    has_hpexpiretime = _has_command(raw, "HPEXPIRETIME")
    rdb_block = describe_rdb(rdb_path, save_seconds=save_seconds) if rdb_path is not None else None
    rdb_version = (
        rdb_block["rdb_version"]
        if rdb_block and rdb_block["rdb_version"]
        else rdb_version_for(redis_version, valkey_version)
    )
    config = _config(raw)
    functions = _functions(raw)

    databases: dict[str, list[dict[str, Any]]] = {}
    stream_types: set[int] = set()
    for db in _db_numbers(raw):
        raw.call("SELECT", db)
        records = []
        for key in _scan_keys(raw):
            record = _capture_key(
                raw,
                db,
                key,
                captured_at_ms,
                rdb_version,
                has_pexpiretime,
                has_hpexpiretime,
                requested_expire_at,
            )
            if record is None:
                continue
            if record["type"] == "stream" and record["rdb_type_byte"] is not None:
                stream_types.add(record["rdb_type_byte"])
            records.append(record)
        if records:
            databases[str(db)] = records
    raw.call("SELECT", 0)
    if rdb_block is not None:
        rdb_block["stream_type_bytes"] = sorted(stream_types)

    return {
        "format": FORMAT,
        "scenario": scenario,
        "server": {
            "label": label or f"{server_name}-{shown_version}",
            "server_name": server_name,
            "redis_version": redis_version,
            "valkey_version": valkey_version,
            "version_output": version_output if version_output is not None else _version_output(info),
        },
        "rdb": rdb_block,
        "captured_at_ms": captured_at_ms,
        "config": config,
        "config_method": dict(config_method or {}),
        "skipped": list(skipped),
        "notes": list(notes),
        "databases": databases,
        "functions": functions,
    }


def _capture_key(
    raw: _Raw,
    db: int,
    key: bytes,
    captured_at_ms: int,
    rdb_version: int,
    has_pexpiretime: bool,
    has_hpexpiretime: bool,
    requested_expire_at: Mapping[tuple[int, bytes], int] | None,
) -> dict[str, Any] | None:
    type_reply, encoding, ttl = raw.many(
        [("TYPE", key), ("OBJECT", "ENCODING", key), ("PEXPIRETIME" if has_pexpiretime else "PTTL", key)]
    )
    type_ = bytes(type_reply).decode()
    if type_ == "none":
        return None
    encoding_s = bytes(encoding).decode() if isinstance(encoding, (bytes, bytearray)) else None
    expire_at: int | None
    pttl: int | None = None
    if has_pexpiretime:
        source = EXPIRE_SOURCE_PEXPIRETIME
        expire_at = None if ttl < 0 else int(ttl)
    else:
        source = EXPIRE_SOURCE_PTTL_REQUESTED if requested_expire_at is not None else EXPIRE_SOURCE_PTTL
        pttl = None if ttl < 0 else int(ttl)
        expire_at = None if pttl is None else captured_at_ms + pttl
        if expire_at is not None and requested_expire_at is not None:
            wanted = requested_expire_at.get((db, key))
            if wanted is not None and abs(wanted - expire_at) <= 2000:
                expire_at = wanted

    record: dict[str, Any] = {
        "key": to_s(key),
        "db": db,
        "type": type_,
        "encoding": encoding_s,
        "expire_at_ms": expire_at,
    }
    if pttl is not None:
        record["expire_pttl_ms"] = pttl
    record["expire_source"] = source
    record["value"] = None
    field_ttl: list[list[Any]] | None = None
    if type_ == "string":
        record["value"] = to_s(raw.call("GET", key))
    elif type_ == "list":
        record["value"] = [to_s(v) for v in raw.call("LRANGE", key, 0, -1)]
    elif type_ == "set":
        record["value"] = [to_s(v) for v in sorted(bytes(m) for m in raw.call("SMEMBERS", key))]
    elif type_ == "zset":
        flat = raw.call("ZRANGE", key, 0, -1, "WITHSCORES")
        record["value"] = [[to_s(m), bytes(s).decode()] for m, s in zip(flat[::2], flat[1::2], strict=True)]
    elif type_ == "hash":
        flat = raw.call("HGETALL", key)
        pairs = sorted((bytes(f), bytes(v)) for f, v in zip(flat[::2], flat[1::2], strict=True))
        record["value"] = [[to_s(f), to_s(v)] for f, v in pairs]
        if has_hpexpiretime:
            field_ttl = []
            if pairs:
                times = raw.call("HPEXPIRETIME", key, "FIELDS", len(pairs), *[f for f, _ in pairs])
                field_ttl = [[to_s(f), int(t)] for (f, _), t in zip(pairs, times, strict=True) if int(t) >= 0]
            record["field_expire_at_ms"] = field_ttl
    elif type_ == "stream":
        record["value"] = _capture_stream(raw, key)
    else:
        record["value"] = None
    record["rdb_type_byte"] = predict_rdb_type(type_, encoding_s or "", rdb_version, bool(field_ttl))
    names = VALKEY_RDB_TYPE_NAMES if rdb_version >= VALKEY_RDB_VERSION else RDB_TYPE_NAMES
    record["rdb_type_name"] = names.get(record["rdb_type_byte"]) if record["rdb_type_byte"] is not None else None
    return record


def _capture_stream(raw: _Raw, key: bytes) -> dict[str, Any]:
    full_reply, xrange_reply, groups_reply = raw.many(
        [("XINFO", "STREAM", key, "FULL", "COUNT", 0), ("XRANGE", key, "-", "+"), ("XINFO", "GROUPS", key)]
    )
    if isinstance(full_reply, Exception):
        raise full_reply
    full = _xinfo_full(full_reply)
    group_names = [bytes(_flat_to_obj(g)["name"]) for g in groups_reply or []]
    pel_counts = [int(_flat_to_obj(g)["pending"]) for g in groups_reply or []]
    pending_replies = raw.many(
        [
            ("XPENDING", key, name, "-", "+", max(count, 1))
            for name, count in zip(group_names, pel_counts, strict=True)
        ]
    )
    xpending = []
    for name, rows in zip(group_names, pending_replies, strict=True):
        if isinstance(rows, Exception):
            raise rows
        xpending.append(
            {
                "group": to_s(name),
                "pending": [[to_s(i), to_s(c), int(idle), int(n)] for i, c, idle, n in rows or []],
            }
        )
    return {
        "xinfo_stream_full": full,
        "xrange": [_entry(e) for e in xrange_reply or []],
        "xpending": xpending,
    }


# -- compare ----------------------------------------------------------------------------------


def _b(value: Json) -> bytes:
    return from_s(value)


def _show(value: bytes | Json, limit: int = 60) -> str:
    if isinstance(value, bytes):
        text = repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _score(value: Json) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = value if isinstance(value, str) else from_s(value).decode()
    return float(text)


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _id(value: Json) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return from_s(value).decode()
    return str(value)


# Which stream metadata each stream type stores (a null dump field of another type is not compared).
_STREAM_V2_TYPES = {19, 21, 26, 27}
_STREAM_V3_TYPES = {21, 26, 27}


def compare(expected: Mapping[str, Any], dump_records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Differences between an expected.json dict and ``rdbspec dump`` records ([] when they agree)."""
    diffs: list[str] = []
    want: dict[tuple[int, bytes], Mapping[str, Any]] = {}
    for db_text, records in (expected.get("databases") or {}).items():
        for rec in records:
            want[(int(rec.get("db", db_text)), _b(rec["key"]))] = rec
    got: dict[tuple[int, bytes], Mapping[str, Any]] = {}
    for rec in dump_records:
        ident = (int(rec["db"]), _b(rec["key"]))
        if ident in got:
            diffs.append(f"db {ident[0]} key {_show(ident[1])}: appears more than once in the dump")
        got[ident] = rec
    for ident in sorted(set(want) - set(got)):
        diffs.append(f"db {ident[0]} key {_show(ident[1])}: missing from the dump")
    for ident in sorted(set(got) - set(want)):
        diffs.append(f"db {ident[0]} key {_show(ident[1])}: in the dump but not on the server")
    for ident in sorted(set(want) & set(got)):
        where = f"db {ident[0]} key {_show(ident[1])}"
        diffs.extend(f"{where}: {d}" for d in _compare_record(want[ident], got[ident]))
    return diffs


def _compare_record(exp: Mapping[str, Any], dump: Mapping[str, Any]) -> list[str]:
    diffs: list[str] = []
    if exp["type"] != dump.get("type"):
        return [f"type {dump.get('type')!r}, server says {exp['type']!r}"]
    if exp.get("rdb_type_byte") is not None and dump.get("rdb_type") is not None:
        if exp["rdb_type_byte"] != dump["rdb_type"]:
            diffs.append(f"rdb_type {dump['rdb_type']}, expected {exp['rdb_type_byte']}")
    if exp.get("expire_at_ms") != dump.get("expire_at_ms"):
        diffs.append(f"expire_at_ms {dump.get('expire_at_ms')}, server says {exp.get('expire_at_ms')}")
    type_ = exp["type"]
    ev, dv = exp.get("value"), dump.get("value")
    if type_ == "string":
        if _b(ev) != _b(dv):
            diffs.append(f"string value {_show(_b(dv))}, server says {_show(_b(ev))}")
    elif type_ == "list":
        diffs.extend(_compare_list([_b(v) for v in ev], [_b(v) for v in dv or []], "list"))
    elif type_ == "set":
        diffs.extend(_compare_multiset([_b(v) for v in ev], [_b(v) for v in dv or []], "set member"))
    elif type_ == "zset":
        diffs.extend(_compare_zset(ev, dv or []))
    elif type_ == "hash":
        diffs.extend(_compare_pairs(ev, dv or [], "hash field"))
        if "field_expire_at_ms" in exp:
            exp_ttl = {_b(f): int(t) for f, t in exp["field_expire_at_ms"]}
            got_ttl = {_b(f): int(t) for f, t in dump.get("field_expire_at_ms") or []}
            for f in sorted(set(exp_ttl) | set(got_ttl)):
                if exp_ttl.get(f) != got_ttl.get(f):
                    diffs.append(
                        f"field {_show(f)} expire_at_ms {got_ttl.get(f)}, server says {exp_ttl.get(f)}"
                    )
        elif dump.get("field_expire_at_ms"):
            diffs.append("dump has field_expire_at_ms but the server has no field TTLs")
    elif type_ == "stream":
        diffs.extend(_compare_stream(ev, dv or {}, dump.get("rdb_type")))
    return diffs


def _compare_list(exp: list[bytes], got: list[bytes], what: str) -> list[str]:
    if exp == got:
        return []
    if len(exp) != len(got):
        out = [f"{what} has {len(got)} elements, server says {len(exp)}"]
    else:
        out = []
    for i, (a, b) in enumerate(zip(exp, got, strict=False)):
        if a != b:
            out.append(f"{what}[{i}] is {_show(b)}, server says {_show(a)}")
            break
    return out


def _compare_multiset(exp: list[bytes], got: list[bytes], what: str) -> list[str]:
    out = []
    e, g = Counter(exp), Counter(got)
    for m in sorted(e - g)[:5]:
        out.append(f"{what} {_show(m)} missing from the dump")
    for m in sorted(g - e)[:5]:
        out.append(f"{what} {_show(m)} in the dump but not on the server")
    return out


def _compare_zset(exp: Sequence[Any], got: Sequence[Any]) -> list[str]:
    out: list[str] = []
    e = {_b(m): _score(s) for m, s in exp}
    g: dict[bytes, float] = {}
    for m, s in got:
        if _b(m) in g:
            out.append(f"zset member {_show(_b(m))} appears twice in the dump")
        g[_b(m)] = _score(s)
    out.extend(_compare_multiset(list(e), list(g), "zset member"))
    for m in sorted(set(e) & set(g)):
        if not _same_float(e[m], g[m]):
            out.append(f"zset member {_show(m)} score {g[m]!r}, server says {e[m]!r}")
    return out


def _compare_pairs(exp: Sequence[Any], got: Sequence[Any], what: str) -> list[str]:
    out: list[str] = []
    e = {_b(f): _b(v) for f, v in exp}
    g: dict[bytes, bytes] = {}
    for f, v in got:
        if _b(f) in g:
            out.append(f"{what} {_show(_b(f))} appears twice in the dump")
        g[_b(f)] = _b(v)
    out.extend(_compare_multiset(list(e), list(g), what))
    for f in sorted(set(e) & set(g)):
        if e[f] != g[f]:
            out.append(f"{what} {_show(f)} = {_show(g[f])}, server says {_show(e[f])}")
    return out


def _entries(entries: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[tuple[bytes, bytes]]]]:
    return [(_id(e["id"]) or "", [(_b(f), _b(v)) for f, v in e.get("fields") or []]) for e in entries]


def _compare_stream(exp: Mapping[str, Any], dump: Mapping[str, Any], rdb_type: int | None) -> list[str]:
    out: list[str] = []
    info = exp.get("xinfo_stream_full") or {}
    v2 = rdb_type in _STREAM_V2_TYPES if rdb_type is not None else None
    v3 = rdb_type in _STREAM_V3_TYPES if rdb_type is not None else None

    def stored(flag: bool | None, dump_value: Any) -> bool:
        # Unknown rdb_type: compare only what the dump states.
        return bool(flag) if flag is not None else dump_value is not None

    def check(label: str, got: Any, want: Any, norm: Any = None) -> None:
        if norm is not None:
            got, want = norm(got), norm(want)
        if got != want:
            out.append(f"stream {label} {got!r}, server says {want!r}")

    check("length", dump.get("length"), info.get("length"))
    check("last_id", dump.get("last_id"), info.get("last-generated-id"), _id)
    if "recorded-first-entry-id" in info and stored(v2, dump.get("first_id")):
        check("first_id", dump.get("first_id"), info["recorded-first-entry-id"], _id)
    if "max-deleted-entry-id" in info and stored(v2, dump.get("max_deleted_entry_id")):
        check("max_deleted_entry_id", dump.get("max_deleted_entry_id"), info["max-deleted-entry-id"], _id)
    if "entries-added" in info and stored(v2, dump.get("entries_added")):
        check("entries_added", dump.get("entries_added"), info["entries-added"])

    exp_entries = _entries(exp.get("xrange") if exp.get("xrange") is not None else info.get("entries") or [])
    got_entries = _entries(dump.get("entries") or [])
    if exp_entries != got_entries:
        if len(exp_entries) != len(got_entries):
            out.append(f"stream has {len(got_entries)} entries, server says {len(exp_entries)}")
        for a, b in zip(exp_entries, got_entries, strict=False):
            if a != b:
                out.append(f"stream entry {b[0]} {_show(b[1])}, server says {a[0]} {_show(a[1])}")
                break

    exp_groups = {_b(g["name"]): g for g in info.get("groups") or []}
    got_groups: dict[bytes, Mapping[str, Any]] = {}
    for g in dump.get("groups") or []:
        if _b(g["name"]) in got_groups:
            out.append(f"group {_show(_b(g['name']))} appears twice in the dump")
        got_groups[_b(g["name"])] = g
    out.extend(_compare_multiset(list(exp_groups), list(got_groups), "group"))
    for name in sorted(set(exp_groups) & set(got_groups)):
        out.extend(
            f"group {_show(name)}: {d}" for d in _compare_group(exp_groups[name], got_groups[name], v2, v3)
        )
    return out


def _entries_read(value: Any) -> Any:
    """entries_read / active_time: -1 (what the file stores for "unknown"/"never") equals null."""
    return None if value in (None, -1) else value


def _compare_group(
    exp: Mapping[str, Any], got: Mapping[str, Any], v2: bool | None, v3: bool | None
) -> list[str]:
    out: list[str] = []
    if _id(got.get("last_delivered_id")) != _id(exp.get("last-delivered-id")):
        out.append(
            f"last_delivered_id {got.get('last_delivered_id')!r}, "
            f"server says {exp.get('last-delivered-id')!r}"
        )
    if "entries-read" in exp and (v2 if v2 is not None else got.get("entries_read") is not None):
        if _entries_read(got.get("entries_read")) != _entries_read(exp["entries-read"]):
            out.append(f"entries_read {got.get('entries_read')!r}, server says {exp['entries-read']!r}")
    exp_pel = [(_id(i), _b(c), int(t), int(n)) for i, c, t, n in exp.get("pending") or []]
    got_pel = [
        (_id(p["id"]), _b(p["consumer"]), p.get("delivery_time_ms"), p.get("delivery_count"))
        for p in got.get("pending") or []
    ]
    if exp_pel != got_pel:
        if len(exp_pel) != len(got_pel):
            out.append(f"PEL has {len(got_pel)} entries, server says {len(exp_pel)}")
        for a, b in zip(exp_pel, got_pel, strict=False):
            if a != b:
                out.append(f"PEL entry {_show(b)}, server says {_show(a)}")
                break
    exp_cons = {_b(c["name"]): c for c in exp.get("consumers") or []}
    got_cons = {_b(c["name"]): c for c in got.get("consumers") or []}
    out.extend(_compare_multiset(list(exp_cons), list(got_cons), "consumer"))
    for name in sorted(set(exp_cons) & set(got_cons)):
        e, g = exp_cons[name], got_cons[name]
        where = f"consumer {_show(name)}"
        if g.get("seen_time_ms") != e.get("seen-time"):
            out.append(f"{where} seen_time_ms {g.get('seen_time_ms')}, server says {e.get('seen-time')}")
        if "active-time" in e and (v3 if v3 is not None else g.get("active_time_ms") is not None):
            if _entries_read(g.get("active_time_ms")) != _entries_read(e["active-time"]):
                out.append(
                    f"{where} active_time_ms {g.get('active_time_ms')}, server says {e['active-time']}"
                )
        exp_ids = [_id(row[0]) for row in e.get("pending") or []]
        got_ids = [_id(i) for i in g.get("pending") or []]
        if exp_ids != got_ids:
            out.append(f"{where} pending {got_ids[:5]}..., server says {exp_ids[:5]}...")
    return out


# -- the other direction (for tests of compare itself) ------------------------------------------


def expiries(expected: Mapping[str, Any]) -> dict[tuple[int, bytes], int]:
    """(db, key): the expiry the source server reported, for ``capture``'s ``requested_expire_at``
    (a server before 7.0 tells expiries as PTTL, which capture adds to its clock)."""
    return {(int(record["db"]), from_s(record["key"])): int(record["expire_at_ms"])
            for records in (expected.get("databases") or {}).values() for record in records
            if record["expire_at_ms"] is not None}


def records_from_expected(expected: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``rdbspec dump`` records a correct parser would print for this expected.json."""
    out = []
    for records in (expected.get("databases") or {}).values():
        for rec in records:
            rdb_type = rec.get("rdb_type_byte")
            value = rec["value"]
            if rec["type"] == "zset":
                value = [[m, s if s in ("inf", "-inf", "nan") else float(s)] for m, s in value]
            elif rec["type"] == "stream":
                value = _stream_record(value, rdb_type)
            row: dict[str, Any] = {
                "db": rec["db"],
                "key": rec["key"],
                "type": rec["type"],
                "rdb_type": rdb_type,
                "expire_at_ms": rec["expire_at_ms"],
                "idle_s": None,
                "freq": None,
                "value": value,
            }
            if rec.get("field_expire_at_ms"):
                row["field_expire_at_ms"] = rec["field_expire_at_ms"]
            out.append(row)
    return out


def _stream_record(value: Mapping[str, Any], rdb_type: int | None) -> dict[str, Any]:
    info = value["xinfo_stream_full"]
    v2 = rdb_type in _STREAM_V2_TYPES
    v3 = rdb_type in _STREAM_V3_TYPES
    groups = []
    for g in info.get("groups") or []:
        groups.append(
            {
                "name": g["name"],
                "last_delivered_id": g["last-delivered-id"],
                "entries_read": g.get("entries-read") if v2 else None,
                "pending": [
                    {"id": i, "consumer": c, "delivery_time_ms": t, "delivery_count": n}
                    for i, c, t, n in g.get("pending") or []
                ],
                "consumers": [
                    {
                        "name": c["name"],
                        "seen_time_ms": c.get("seen-time"),
                        "active_time_ms": c.get("active-time") if v3 else None,
                        "pending": [row[0] for row in c.get("pending") or []],
                    }
                    for c in g.get("consumers") or []
                ],
            }
        )
    return {
        "length": info["length"],
        "last_id": info["last-generated-id"],
        "first_id": info.get("recorded-first-entry-id") if v2 else None,
        "max_deleted_entry_id": info.get("max-deleted-entry-id") if v2 else None,
        "entries_added": info.get("entries-added") if v2 else None,
        "entries": value["xrange"],
        "groups": groups,
    }
