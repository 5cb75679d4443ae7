"""Seeded random content of every type, written to a live server through redis-py pipelines.

``populate(client, seed)`` issues the same commands for the same seed and server version (the
only wall-clock values in the result are stream delivery/seen/active times and the field TTLs of
``RELATIVE_FIELD_TTL_KEY``). Commands or options the server lacks are skipped and listed in
``PopulateResult.skipped``.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

# Far-future absolute expiry times (2100-01-01T00:00:00Z + n ms).
EXPIRE_BASE_MS = 4102444800000
STREAM_BASE_MS = 1700000000000
# Fixed XCLAIM TIME, so those delivery times do not depend on the clock.
CLAIM_TIME_MS = 1700000500000
# The one key whose field TTLs come from the clock (HEXPIRE takes seconds from now).
RELATIVE_FIELD_TTL_KEY = b"hash:fieldttl:relative"
# Hash field TTL commands, each used when the server has it (Valkey 9.0+; Redis 7.4+, HSETEX 8.0+).
FIELD_TTL_COMMANDS = ("HPEXPIREAT", "HEXPIRE", "HPERSIST", "HSETEX")


@dataclass
class PopulateResult:
    """What ``populate`` wrote."""

    seed: int
    redis_version: tuple[int, ...]
    keys: dict[int, list[bytes]] = field(default_factory=dict)
    expires: dict[tuple[int, bytes], int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config_method: dict[str, str] = field(default_factory=dict)
    # CONFIG SET values applied (give them to a server that loads the dump, for equal captures)
    config: dict[str, str] = field(default_factory=dict)

    @property
    def key_count(self) -> int:
        return sum(len(v) for v in self.keys.values())


class _Writer:
    """Pipelined writes into one DB, recording key names and expiries."""

    def __init__(self, client: redis.Redis, db: int, result: PopulateResult, batch: int = 500) -> None:
        self.client = client
        self.db = db
        self.result = result
        self.pipe = client.pipeline(transaction=False)
        self.pending = 0
        self.batch = batch
        self.keys: set[bytes] = set()

    def cmd(self, *args: Any, key: bytes | None = None) -> None:
        self.pipe.execute_command(*args)
        if key is not None:
            self.keys.add(key)
        self.pending += 1
        if self.pending >= self.batch:
            self.flush()

    def expire_at(self, key: bytes, at_ms: int) -> None:
        self.cmd("PEXPIREAT", key, at_ms)
        self.result.expires[(self.db, key)] = at_ms

    def flush(self) -> list[Any]:
        if not self.pending:
            return []
        self.pending = 0
        return self.pipe.execute(raise_on_error=True)

    def call(self, *args: Any) -> Any:
        """Flush, then run one command and return its reply."""
        self.flush()
        return self.client.execute_command(*args)


def _version(client: redis.Redis) -> tuple[int, ...]:
    info = client.info("server")
    text = info.get("redis_version") or info.get(b"redis_version") or "0"
    if isinstance(text, bytes):
        text = text.decode()
    return tuple(int("".join(c for c in p if c.isdigit()) or 0) for p in str(text).split("."))


def _has_command(client: redis.Redis, name: str) -> bool:
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command("COMMAND", "INFO", name)
        reply = conn.read_response()
    finally:
        client.connection_pool.release(conn)
    return bool(reply) and reply[0] is not None


def _config_int(client: redis.Redis, name: str, default: int) -> int:
    got = client.config_get(name)
    for k, v in got.items():
        if (k.decode() if isinstance(k, bytes) else k) == name:
            return int(v)
    return default


def _client_for_db(client: redis.Redis, db: int, raw: bool = True) -> redis.Redis:
    kw = dict(client.connection_pool.connection_kwargs)
    keep = {k: kw[k] for k in ("host", "port", "path", "username", "password") if kw.get(k) is not None}
    if "path" in keep:
        keep["unix_socket_path"] = keep.pop("path")
    out = redis.Redis(**keep, db=db, protocol=2, decode_responses=False, socket_timeout=60)
    # Raw replies: redis-py's parsers choke on some valid ones (XCLAIM ... JUSTID in a pipeline).
    if raw:
        out.response_callbacks = type(out.response_callbacks)({})
    return out


def _rand_ascii(rng: random.Random, n: int) -> bytes:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=n)).encode()


def _rand_utf8(rng: random.Random, n: int) -> bytes:
    alphabet = "aéüñßøж日本語🚀ħŁ€ "
    return "".join(rng.choices(alphabet, k=n)).encode("utf-8")


def _rand_bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


def _rand_int_text(rng: random.Random) -> bytes:
    bits = rng.choice([4, 7, 12, 13, 16, 24, 32, 63])
    value = rng.randrange(-(1 << bits), 1 << bits)
    return str(value).encode()


def _rand_member(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return _rand_int_text(rng)
    if kind == 1:
        return _rand_utf8(rng, rng.randint(1, 12))
    if kind == 2:
        return _rand_bytes(rng, rng.randint(1, 12))
    return _rand_ascii(rng, rng.randint(0, 30))


def populate(
    client: redis.Redis,
    seed: int,
    *,
    scale: float = 1.0,
    dbs: Sequence[int] = (0, 1, 3),
    compress_lists: bool = True,
    functions: bool = True,
) -> PopulateResult:
    """Write seeded random content of every type into ``dbs`` of the server behind ``client``.

    ``scale`` multiplies the sizes of the large values (1.0: about 8k elements in all).
    ``compress_lists`` runs ``CONFIG SET list-compress-depth 1`` first, so the inner nodes of
    large lists are LZF-compressed. Returns the keys, the requested PEXPIREAT values (feed them to
    ``expected.capture(requested_expire_at=...)``) and the skipped commands.
    """
    base = _client_for_db(client, dbs[0] if dbs else 0, raw=False)
    version = _version(base)
    result = PopulateResult(seed=seed, redis_version=version)
    rng = random.Random(seed)
    if compress_lists:
        base.config_set("list-compress-depth", 1)
        result.config_method["list-compress-depth"] = "CONFIG SET"
        result.config["list-compress-depth"] = "1"
    node_entries = _config_int(base, "stream-node-max-entries", 100)

    def n(count: int) -> int:
        return max(1, int(count * scale))

    for index, db in enumerate(dbs):
        c = _client_for_db(client, db)
        w = _Writer(c, db, result)
        if index == 0:
            _strings(w, rng, n)
            _lists(w, rng, n)
            _sets(w, rng, n)
            _zsets(w, rng, n)
            _hashes(w, rng, n, {name for name in FIELD_TTL_COMMANDS if _has_command(c, name)})
            _streams(w, rng, n, version, node_entries)
            _stream_groups(w, rng, n, version)
            if functions:
                _functions(w, result, _has_command(c, "FUNCTION"))
        else:
            _small_db(w, rng, db, version)
        w.flush()
        result.keys[db] = sorted(w.keys)
        c.close()
    base.close()
    return result


# -- plain types ------------------------------------------------------------------------------


def _strings(w: _Writer, rng: random.Random, n: Any) -> None:
    values: list[tuple[bytes, bytes]] = [
        (b"str:int:small", str(rng.randrange(0, 10000)).encode()),
        (b"str:int:neg", str(-rng.randrange(1, 1 << 31)).encode()),
        (b"str:int:max", b"9223372036854775807"),
        (b"str:int:min", b"-9223372036854775808"),
        (b"str:int:leading0", b"00" + str(rng.randrange(1, 999)).encode()),
        (b"str:empty", b""),
        (b"str:short", b"s" + _rand_ascii(rng, rng.randint(1, 15))),
        (b"str:long", _rand_ascii(rng, n(5000) + 100)),
        (b"str:binary", _rand_bytes(rng, rng.randint(30, 300))),
        (b"str:utf8", _rand_utf8(rng, rng.randint(5, 40))),
        (b"str:compressible", (_rand_ascii(rng, 4) * 50)),
        (b"str:compressible:21", b"a" * 21),
        (b"str:compressible:big", (_rand_ascii(rng, 7) + b"-") * n(2000)),
        (b"str:float", f"{rng.uniform(-1e6, 1e6)!r}".encode()),
    ]
    for i in range(n(40)):
        values.append((b"str:rand:" + str(i).encode(), _rand_member(rng)))
    # binary and UTF-8 key names
    values.append((b"k:\x00\xff\x01" + _rand_bytes(rng, 4), b"binary key"))
    values.append(("ключ-ü-🚀".encode(), b"utf-8 key"))
    for key, value in values:
        w.cmd("SET", key, value, key=key)
    for i, key in enumerate([b"str:exp:1", b"str:exp:int"]):
        w.cmd("SET", key, b"expiring" if i == 0 else b"42", key=key)
        w.expire_at(key, EXPIRE_BASE_MS + 1 + i)


def _lists(w: _Writer, rng: random.Random, n: Any) -> None:
    w.cmd("RPUSH", b"list:small", *[_rand_member(rng) for _ in range(5)], key=b"list:small")
    w.cmd("RPUSH", b"list:ints", *[_rand_int_text(rng) for _ in range(40)], key=b"list:ints")
    big = [_rand_member(rng) for _ in range(n(2000))]
    for i in range(0, len(big), 200):
        w.cmd("RPUSH", b"list:large", *big[i : i + 200], key=b"list:large")
    # compressible elements: inner nodes are LZF-compressed with list-compress-depth 1
    words = [b"compressible-%d-" % i + b"q" * 40 for i in range(n(600))]
    for i in range(0, len(words), 200):
        w.cmd("RPUSH", b"list:lzf", *words[i : i + 200], key=b"list:lzf")
    w.cmd("LPUSH", b"list:exp", b"e2", b"e1", key=b"list:exp")
    w.expire_at(b"list:exp", EXPIRE_BASE_MS + 3)
    w.cmd("RPUSH", b"list:\xfe\xffbin", b"\x00", b"\xff\xfe", key=b"list:\xfe\xffbin")


def _sets(w: _Writer, rng: random.Random, n: Any) -> None:
    w.cmd(
        "SADD",
        b"set:intset",
        *[str(rng.randrange(-1000, 1000)).encode() for _ in range(20)],
        key=b"set:intset",
    )
    w.cmd(
        "SADD",
        b"set:intset64",
        b"-9223372036854775808",
        b"9223372036854775807",
        b"4294967296",
        key=b"set:intset64",
    )
    # listpack on 7.2+, hashtable before
    w.cmd("SADD", b"set:small", *[_rand_member(rng) or b"x" for _ in range(8)], key=b"set:small")
    large = {_rand_ascii(rng, rng.randint(3, 20)) for _ in range(n(700))}
    w.cmd("SADD", b"set:large", *sorted(large), key=b"set:large")
    ints = sorted({str(rng.randrange(-(10**12), 10**12)).encode() for _ in range(n(600))})
    w.cmd("SADD", b"set:intlarge", *ints, key=b"set:intlarge")
    w.cmd("SADD", b"set:exp", b"a", b"b", key=b"set:exp")
    w.expire_at(b"set:exp", EXPIRE_BASE_MS + 4)


def _zsets(w: _Writer, rng: random.Random, n: Any) -> None:
    small = [
        (b"-inf", b"ninf"),
        (b"inf", b"pinf"),
        (b"-1.5", b"neg"),
        (b"0", b"zero"),
        (b"0.1", b"tenth"),
        (b"3.25", b"frac"),
        (b"1e-300", b"tiny"),
        (b"123456789.123", b"big"),
        (repr(rng.uniform(-100, 100)).encode(), _rand_utf8(rng, 3)),
        (str(rng.randrange(-50, 50)).encode(), _rand_bytes(rng, 3)),
    ]
    w.cmd("ZADD", b"zset:small", *[x for pair in small for x in pair], key=b"zset:small")
    args: list[bytes] = []
    for i in range(n(300)):
        score = rng.choice([repr(rng.uniform(-1e6, 1e6)), str(rng.randrange(-1000, 1000)), "0.5"])
        args += [score.encode(), b"m%d" % i]
    args += [b"-inf", b"bottom", b"+inf", b"top"]
    w.cmd("ZADD", b"zset:large", *args, key=b"zset:large")
    w.cmd("ZADD", b"zset:exp", b"1", b"one", key=b"zset:exp")
    w.expire_at(b"zset:exp", EXPIRE_BASE_MS + 5)


def _hashes(w: _Writer, rng: random.Random, n: Any, field_ttl_commands: set[str]) -> None:
    small = [
        b"f1",
        b"v1",
        b"num",
        b"42",
        b"neg",
        b"-7",
        b"empty",
        b"",
        b"\xff",
        b"\x00bin",
        _rand_utf8(rng, 4),
        _rand_member(rng),
    ]
    w.cmd("HSET", b"hash:small", *small, key=b"hash:small")
    args: list[bytes] = []
    for i in range(n(600)):
        args += [b"field-%d" % i, _rand_member(rng)]
    w.cmd("HSET", b"hash:large", *args, key=b"hash:large")
    w.cmd("HSET", b"hash:bigvalue", b"a", b"1", b"long", b"L" * 200, key=b"hash:bigvalue")
    w.cmd("HSET", b"hash:exp", b"k", b"v", key=b"hash:exp")
    w.expire_at(b"hash:exp", EXPIRE_BASE_MS + 6)
    _field_ttls(w, args, field_ttl_commands)


def _field_ttls(w: _Writer, large: list[bytes], commands: set[str]) -> None:
    """Hashes with field TTLs, each written by the commands the server has: small and large,
    one field persisted again, all fields persisted again, with a key expiry too."""
    version = ".".join(map(str, w.result.redis_version))
    for name in FIELD_TTL_COMMANDS:
        if name not in commands:
            w.result.skipped.append(f"hash field TTLs by {name} (server redis_version {version})")
    if "HPEXPIREAT" in commands:
        w.cmd("HSET", b"hash:fieldttl", b"a", b"1", b"b", b"2", b"c", b"3", key=b"hash:fieldttl")
        w.cmd("HPEXPIREAT", b"hash:fieldttl", EXPIRE_BASE_MS + 10, b"FIELDS", 2, b"a", b"b")
        w.cmd("HSET", b"hash:fieldttl:large", *large[: 2 * 600], key=b"hash:fieldttl:large")
        w.cmd("HPEXPIREAT", b"hash:fieldttl:large", EXPIRE_BASE_MS + 11, b"FIELDS", 1, b"field-0")
    if "HEXPIRE" in commands:
        key = RELATIVE_FIELD_TTL_KEY
        w.cmd("HSET", key, b"x", b"1", b"y", b"-22", b"z", b"zz" * 30, key=key)
        w.cmd("HEXPIRE", key, 10**8, b"FIELDS", 2, b"x", b"z")  # about three years from now
    if "HPERSIST" in commands and "HPEXPIREAT" in commands:
        w.cmd("HPERSIST", b"hash:fieldttl", b"FIELDS", 1, b"b")
        # no field TTL left: Valkey writes a plain hash again (a long value keeps it a hashtable
        # when a server loads the dump, as it is when written)
        key = b"hash:fieldttl:persisted"
        w.cmd("HSET", key, b"p", b"1", b"q", b"Q" * 100, key=key)
        w.cmd("HPEXPIREAT", key, EXPIRE_BASE_MS + 12, b"FIELDS", 2, b"p", b"q")
        w.cmd("HPERSIST", key, b"FIELDS", 2, b"p", b"q")
    if "HSETEX" in commands:
        key = b"hash:hsetex"
        w.cmd("HSETEX", key, b"PXAT", EXPIRE_BASE_MS + 13, b"FIELDS", 2, b"s", b"1", b"t", b"text", key=key)
        w.cmd("HSETEX", key, b"KEEPTTL", b"FIELDS", 1, b"s", b"12345")  # new value, same TTL
        w.cmd("HSETEX", key, b"FNX", b"EXAT", EXPIRE_BASE_MS // 1000 + 14, b"FIELDS", 1, b"u", b"")
        w.cmd("HSET", key, b"v", b"no ttl")
        w.expire_at(key, EXPIRE_BASE_MS + 15)


def _functions(w: _Writer, result: PopulateResult, has_function: bool) -> None:
    if not has_function:
        result.skipped.append("FUNCTION LOAD (server has no FUNCTION)")
        return
    code = (
        "#!lua name=populatelib\n"
        "redis.register_function('populate_echo', function(keys, args) return args[1] end)\n"
    )
    w.call("FUNCTION", "LOAD", "REPLACE", code)


def _small_db(w: _Writer, rng: random.Random, db: int, version: tuple[int, ...]) -> None:
    p = b"db%d:" % db
    w.cmd("SET", p + b"str", _rand_ascii(rng, 10), key=p + b"str")
    w.cmd("SET", p + b"exp", b"expiring in db %d" % db, key=p + b"exp")
    w.expire_at(p + b"exp", EXPIRE_BASE_MS + 100 + db)
    w.cmd("RPUSH", p + b"list", _rand_member(rng), b"y", key=p + b"list")
    w.cmd("SADD", p + b"set", b"only", key=p + b"set")
    w.cmd("ZADD", p + b"zset", b"1", b"one", key=p + b"zset")
    w.cmd("HSET", p + b"hash", b"k", _rand_member(rng), key=p + b"hash")
    w.cmd("XADD", p + b"stream", b"%d-0" % STREAM_BASE_MS, b"f", b"v", key=p + b"stream")
    w.expire_at(p + b"stream", EXPIRE_BASE_MS + 200 + db)


# -- streams ----------------------------------------------------------------------------------


class _Ids:
    """Increasing explicit stream IDs: sometimes several sequence numbers in one millisecond."""

    def __init__(self, rng: random.Random, start_ms: int = STREAM_BASE_MS) -> None:
        self.rng = rng
        self.ms = start_ms
        self.seq = 0

    def next(self) -> bytes:
        if self.rng.random() < 0.3:
            self.seq += 1
        else:
            self.ms += self.rng.choice([1, 1, 7, 1000, 123456])
            self.seq = 0
        return b"%d-%d" % (self.ms, self.seq)


def _fields_same(rng: random.Random, i: int) -> list[bytes]:
    return [
        b"name",
        b"item-%d" % i,
        b"count",
        _rand_int_text(rng),
        b"note",
        _rand_ascii(rng, rng.randint(0, 20)),
    ]


def _fields_varied(rng: random.Random) -> list[bytes]:
    out: list[bytes] = []
    for _ in range(rng.randint(1, 5)):
        out += [rng.choice([b"name", b"count", b"x", b"\xff\x00f", "ü".encode()]), _rand_member(rng)]
    return out


def _add(w: _Writer, key: bytes, ids: _Ids, fields: list[bytes]) -> bytes:
    entry_id = ids.next()
    w.cmd("XADD", key, entry_id, *fields, key=key)
    return entry_id


def _streams(w: _Writer, rng: random.Random, n: Any, version: tuple[int, ...], node_entries: int) -> None:
    v62, v70 = version >= (6, 2), version >= (7, 0)

    # all entries with the master fields (SAMEFIELDS)
    ids = _Ids(rng)
    for i in range(n(300)):
        _add(w, b"stream:samefields", ids, _fields_same(rng, i))

    # field sets that repeat and differ; binary field names and values
    ids = _Ids(rng)
    for i in range(n(300)):
        _add(w, b"stream:mixed", ids, _fields_same(rng, i) if rng.random() < 0.5 else _fields_varied(rng))

    # XDEL of the first, a middle and the last entry, and of every entry of one whole node
    ids = _Ids(rng)
    per_node = node_entries if node_entries > 0 else 100
    added = [_add(w, b"stream:xdel", ids, [b"n", b"%d" % i]) for i in range(max(3 * per_node, n(250)))]
    doomed = {added[0], added[len(added) // 2 + 7], added[-1]}
    if node_entries > 0:
        doomed.update(added[per_node : 2 * per_node])  # the second node, entry count permitting
    w.cmd("XDEL", b"stream:xdel", *sorted(doomed, key=lambda x: tuple(map(int, x.split(b"-")))))

    # XTRIM MAXLEN (exact) and MINID
    ids = _Ids(rng)
    for i in range(n(200)):
        _add(w, b"stream:maxlen", ids, _fields_varied(rng) if i % 3 else [b"i", b"%d" % i])
    w.cmd("XTRIM", b"stream:maxlen", b"MAXLEN", n(200) // 3 + 1)
    ids = _Ids(rng)
    minid_ids = [_add(w, b"stream:minid", ids, [b"i", b"%d" % i]) for i in range(n(200))]
    if v62:
        w.cmd("XTRIM", b"stream:minid", b"MINID", minid_ids[len(minid_ids) // 3])
    else:
        w.result.skipped.append("XTRIM MINID (stream:minid not trimmed)")

    # emptied by XDEL
    ids = _Ids(rng)
    gone = [_add(w, b"stream:emptied", ids, [b"f", b"%d" % i]) for i in range(5)]
    w.cmd("XDEL", b"stream:emptied", *gone)

    # XGROUP CREATE MKSTREAM on a missing key
    w.cmd("XGROUP", "CREATE", b"stream:mkstream", b"g-empty", b"$", b"MKSTREAM", key=b"stream:mkstream")

    # XSETID past the last entry; with ENTRIESADDED / MAXDELETEDID on 7.0+
    ids = _Ids(rng)
    setid = [_add(w, b"stream:setid", ids, [b"v", b"%d" % i]) for i in range(10)]
    w.cmd("XDEL", b"stream:setid", setid[3])
    new_last = b"%d-5" % (ids.ms + 10**6)
    if v70:
        w.cmd(
            "XSETID",
            b"stream:setid",
            new_last,
            b"ENTRIESADDED",
            1000,
            b"MAXDELETEDID",
            b"%d-0" % (ids.ms + 10),
        )
    else:
        w.cmd("XSETID", b"stream:setid", new_last)
        w.result.skipped.append("XSETID ENTRIESADDED/MAXDELETEDID (plain XSETID used)")
    ids = _Ids(rng)
    em = [_add(w, b"stream:setid:empty", ids, [b"v", b"x"]) for _ in range(3)]
    w.cmd("XDEL", b"stream:setid:empty", *em)
    w.cmd("XSETID", b"stream:setid:empty", b"%d-0" % (ids.ms + 5000))

    # expiring stream
    ids = _Ids(rng)
    _add(w, b"stream:exp", ids, [b"f", b"v"])
    w.expire_at(b"stream:exp", EXPIRE_BASE_MS + 7)


def _stream_groups(w: _Writer, rng: random.Random, n: Any, version: tuple[int, ...]) -> None:
    v62, v70 = version >= (6, 2), version >= (7, 0)
    key = b"stream:groups"
    ids = _Ids(rng)
    added = [_add(w, key, ids, _fields_same(rng, i) if i % 4 else _fields_varied(rng)) for i in range(n(200))]
    total = len(added)

    w.cmd("XGROUP", "CREATE", key, b"g0", b"0")
    w.cmd("XGROUP", "CREATE", key, b"g-last", b"$")
    mid = added[total // 2]
    if v70:
        w.cmd("XGROUP", "CREATE", key, b"g-mid", mid, b"ENTRIESREAD", total // 2 + 1)
    else:
        w.cmd("XGROUP", "CREATE", key, b"g-mid", mid)
        w.result.skipped.append("XGROUP CREATE ... ENTRIESREAD (g-mid created without it)")
    w.cmd("XGROUP", "CREATE", key, b"g\x00\xffbin", b"0")
    w.cmd("XGROUP", "CREATE", key, "grupo-ü".encode(), b"0")

    # consumers with pending entries
    for name, count in ((b"alice", 10), (b"bob", 7), (b"carol", 5), (b"dave", 12)):
        w.cmd("XREADGROUP", b"GROUP", b"g0", name, b"COUNT", count, b"STREAMS", key, b">")
    w.cmd("XREADGROUP", b"GROUP", b"g-mid", b"mona", b"COUNT", 6, b"STREAMS", key, b">")
    w.cmd("XREADGROUP", b"GROUP", b"g\x00\xffbin", b"c\xfe\x00", b"COUNT", 3, b"STREAMS", key, b">")
    w.cmd(
        "XREADGROUP",
        b"GROUP",
        "grupo-ü".encode(),
        "consumidor-ñ".encode(),
        b"COUNT",
        2,
        b"STREAMS",
        key,
        b">",
    )
    w.cmd("XREADGROUP", b"GROUP", b"g0", b"alice", b"NOACK", b"COUNT", 2, b"STREAMS", key, b">")

    # XACK: carol acknowledges everything (a consumer with no pending entries), bob some
    carol = added[17:22]
    w.cmd("XACK", key, b"g0", *carol)
    w.cmd("XACK", key, b"g0", added[10], added[12])
    # XCLAIM to dave with a fixed TIME and RETRYCOUNT, to erin (new consumer) by IDLE, JUSTID
    w.cmd("XCLAIM", key, b"g0", b"dave", 0, added[0], added[1], b"TIME", CLAIM_TIME_MS, b"RETRYCOUNT", 7)
    w.cmd("XCLAIM", key, b"g0", b"erin", 0, added[2], b"IDLE", 3600000)
    w.cmd("XCLAIM", key, b"g0", b"erin", 0, added[3], b"JUSTID")
    w.cmd("XCLAIM", key, b"g0", b"frank", 0, added[total - 1], b"FORCE", b"TIME", CLAIM_TIME_MS + 1)
    # a pending entry whose message is deleted afterwards
    w.cmd("XDEL", key, added[4])
    if v62:
        w.cmd("XGROUP", b"CREATECONSUMER", key, b"g0", b"idle-guy")
        w.cmd("XAUTOCLAIM", key, b"g-mid", b"otto", 0, b"0-0", b"COUNT", 2)
    else:
        w.result.skipped.append("XGROUP CREATECONSUMER / XAUTOCLAIM")
    # a group moved with SETID (ENTRIESREAD on 7.0+), a destroyed group, a deleted consumer
    w.cmd("XGROUP", "CREATE", key, b"g-setid", b"0")
    w.cmd("XREADGROUP", b"GROUP", b"g-setid", b"sam", b"COUNT", 2, b"STREAMS", key, b">")
    if v70:
        w.cmd("XGROUP", b"SETID", key, b"g-setid", added[total // 3], b"ENTRIESREAD", total // 3 + 1)
    else:
        w.cmd("XGROUP", b"SETID", key, b"g-setid", added[total // 3])
    w.cmd("XGROUP", "CREATE", key, b"g-destroyed", b"0")
    w.cmd("XGROUP", b"DESTROY", key, b"g-destroyed")
    w.cmd("XREADGROUP", b"GROUP", b"g0", b"zed", b"COUNT", 1, b"STREAMS", key, b">")
    w.cmd("XGROUP", b"DELCONSUMER", key, b"g0", b"zed")
