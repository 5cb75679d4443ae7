"""The content mix (issue 26): one dump per kind of content, each written by Debian's Redis 7.0
(``/usr/bin/redis-server``, RDB 10) and cached under bench/cache/ as ``mix-<name>.rdb``.

* sessions: a session cache, 1.5M strings of about 40 bytes, 85% with a TTL (SET ... PX);
* hashes: 200k small hashes (listpack) and 2,000 hashtable ones (half with more than 512 fields, half
  with one value over 64 bytes);
* zsets: 20k sorted sets of 5–1,000 members, log-uniform (about 60% listpack, the rest skiplist);
* streams: 3,000 streams of 300 entries, each with 1–3 consumer groups of 2–5 consumers: XREADGROUP
  delivers part of the stream, XACK acknowledges part of that, the rest stays in the PELs;
* lists: 12 quicklists of 100k–400k elements;
* big keys, one dump each: a hash of 3M fields, a set of 2M strings, a sorted set of 2M members and
  a list of 2M elements.

Collections are written with variadic commands, ``CHUNK`` elements a command (HSET with 1,000
field-value pairs...), pipelined on one connection (datasets.RespPipe); one random generator with
a fixed seed per file. After writing, the server is asked what it holds (DBSIZE, INFO keyspace's
expires, each key's TYPE and OBJECT ENCODING counted by one Lua script) and a file missing an
encoding it is meant to hold fails the build. All of it goes into the .json beside the dump.

``--quick`` writes the same mix at a tenth of the counts (the stream length and the encodings'
thresholds kept), under other names.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis

from tests.support.binaries import DEBIAN_REDIS_SERVER, debian_binary

from .datasets import CACHE_DIR, Dataset, Progress, RespPipe, build_dump, cached, read_build_info, word

SEED = 26
QUICK_SCALE = 0.1
CHUNK = 1_000  # elements (fields, members) per variadic command
RDB_VERSION = 10  # what Redis 7.0 writes

Send = Callable[..., None]
Args = tuple[str | int | float, ...]
Item = Callable[[int], Args]

# Counts the keys of each "TYPE encoding" the server holds, and the streams' consumer groups, their
# consumers and pending entries. One call, so it runs in the server at its speed rather than as a round trip a key.
HOLDS_SCRIPT = """
local counts, groups = {}, {groups = 0, consumers = 0, pending = 0}
for _, k in ipairs(redis.call('KEYS', '*')) do
  local t = redis.call('TYPE', k)['ok']
  local e = t .. ' ' .. redis.call('OBJECT', 'ENCODING', k)
  counts[e] = (counts[e] or 0) + 1
  if t == 'stream' then
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', k)) do
      groups.groups = groups.groups + 1
      for i = 1, #g, 2 do
        if groups[g[i]] then groups[g[i]] = groups[g[i]] + g[i + 1] end
      end
    end
  end
end
local out = {}
for e, n in pairs(groups) do out[#out + 1] = 'server_' .. e; out[#out + 1] = n end
for e, n in pairs(counts) do out[#out + 1] = e; out[#out + 1] = n end
return out
"""


@dataclass
class Content:
    """What a fill wrote."""

    keys: int  # keys besides the stream keys
    elements: int  # strings: one each; collections: their fields, members or elements; streams: entries
    streams: int = 0
    entries: int = 0  # stream entries
    expires: int = 0  # keys written with a TTL
    extra: dict[str, int] = field(default_factory=dict)  # streams: groups, consumers, pending entries


Fill = Callable[[Send, random.Random], Content]


@dataclass(frozen=True)
class MixFile:
    """One file of the mix: its name, what it holds, how to write it and the encodings it must hold."""

    name: str  # "sessions-1500k"; the dump is bench/cache/mix-<name>.rdb
    what: str
    fill: Fill
    encodings: tuple[str, ...]  # "TYPE encoding" pairs the server must report for some key

    @property
    def path(self) -> Path:
        return CACHE_DIR / f"mix-{self.name}.rdb"


def chunked(send: Send, head: tuple[str, ...], n: int, item: Item) -> None:
    """`head` + item(j) for j in range(n), CHUNK items a command (HSET key f v f v..., XACK key group id...)."""
    for start in range(0, n, CHUNK):
        send(*head, *[x for j in range(start, min(n, start + CHUNK)) for x in item(j)])


def sessions(send: Send, rng: random.Random, keys: int) -> Content:
    roles = ("user", "user", "user", "admin", "guest")
    expires = 0
    for _ in range(keys):
        key = f"session:{rng.getrandbits(96):024x}"
        value = f"u={rng.randrange(10**7):07d};r={rng.choice(roles)};csrf={rng.getrandbits(64):016x}"
        if rng.random() < 0.85:  # 10 minutes to 14 days: still there when SAVE runs
            send("SET", key, value, "PX", rng.randrange(600_000, 14 * 86_400_000))
            expires += 1
        else:
            send("SET", key, value)
    return Content(keys, keys, expires=expires)


PROFILE_FIELDS = ("name", "email", "plan", "country", "created", "last_seen", "logins", "score", "theme",
                  "lang") + tuple(f"pref:{j}" for j in range(30))


def _field_value(rng: random.Random, j: int) -> str | int:
    return rng.randrange(10**6) if j % 3 == 0 else word(rng)


def hashes(send: Send, rng: random.Random, small: int, large: int) -> Content:
    elements = 0
    for i in range(small):  # 3–40 fields of up to ~16 bytes: listpack
        n = rng.randrange(3, len(PROFILE_FIELDS) + 1)
        send("HSET", f"user:{i}", *[x for j in range(n) for x in (PROFILE_FIELDS[j], _field_value(rng, j))])
        elements += n
    for i in range(large):
        if i % 2:  # past hash-max-listpack-entries (512)
            n = rng.randrange(513, 5_001)
            chunked(send, ("HSET", f"catalog:{i}"), n, lambda j: (f"sku:{j}", _field_value(rng, j)))
        else:  # one value past hash-max-listpack-value (64 bytes)
            n = rng.randrange(3, 30)
            send("HSET", f"doc:{i}", "body", " ".join(word(rng) for _ in range(rng.randrange(12, 40))),
                 *[x for j in range(1, n) for x in (PROFILE_FIELDS[j], _field_value(rng, j))])
        elements += n
    return Content(small + large, elements)


def zsets(send: Send, rng: random.Random, count: int) -> Content:
    elements = 0
    low, high = math.log(5), math.log(1_001)
    for i in range(count):  # log-uniform sizes: up to 128 members listpack, above skiplist
        n = min(1_000, int(math.exp(rng.uniform(low, high))))
        chunked(send, ("ZADD", f"board:{i}"), n,
                lambda j: (rng.randrange(10**6) if j % 4 else round(rng.uniform(0, 1e4), 3),
                           f"player:{j}:{rng.getrandbits(24):06x}"))
        elements += n
    return Content(count, elements)


EVENT_TYPES = ("click", "view", "view", "view", "purchase", "signup", "logout")
GROUPS = ("workers", "audit", "analytics")


def streams(send: Send, rng: random.Random, count: int, length: int) -> Content:
    groups = consumers = pending = 0
    for i in range(count):
        key = f"events:{i}"
        ms, seq, ids = 1_700_000_000_000 + i * 1_000_000, 0, []
        for j in range(length):  # explicit increasing IDs, several entries per ms now and then
            step = rng.choice((0, 1, 1, 3, 20))
            ms, seq = (ms + step, 0) if step else (ms, seq + 1)
            ids.append(f"{ms}-{seq}")
            fields: tuple[str, ...] = ("type", rng.choice(EVENT_TYPES), "user", f"u{rng.randrange(100_000)}",
                                       "amount", f"{rng.uniform(0, 500):.2f}")
            if j % 7 == 0:
                fields += ("ref", f"{rng.getrandbits(48):012x}")
            send("XADD", key, ids[-1], *fields)
        for group in GROUPS[:rng.randrange(1, len(GROUPS) + 1)]:
            send("XGROUP", "CREATE", key, group, "0")
            names = [f"{group}-{c}" for c in range(rng.randrange(2, 6))]
            delivered, done, turn = rng.randrange(length // 4, length + 1), 0, 0
            while done < delivered:  # batches to the consumers in turn
                batch = min(rng.randrange(10, 60), delivered - done)
                send("XREADGROUP", "GROUP", group, names[turn % len(names)], "COUNT", batch, "STREAMS", key, ">")
                done, turn = done + batch, turn + 1
            acked = int(delivered * rng.uniform(0.3, 0.95))  # the oldest ones processed, the rest pending
            chunked(send, ("XACK", key, group), acked, lambda j, ids=ids: (ids[j],))
            groups, consumers, pending = groups + 1, consumers + min(turn, len(names)), pending + delivered - acked
    return Content(0, count * length, streams=count, entries=count * length,
                   extra={"groups": groups, "consumers": consumers, "pending": pending})


JOB_KINDS = ("email", "resize", "export", "webhook", "index")


def lists(send: Send, rng: random.Random, count: int, low: int, high: int) -> Content:
    elements = 0
    for i in range(count):
        n = rng.randrange(low, high + 1)
        chunked(send, ("RPUSH", f"queue:{i}"), n,
                lambda j: (f"job:{j}:{rng.choice(JOB_KINDS)}:{rng.getrandbits(32):08x}" if j % 5
                           else rng.randrange(10**9),))
        elements += n
    return Content(count, elements)


def big(command: str, key: str, n: int, item: Callable[[random.Random, int], Args]) -> Fill:
    """One key of `n` elements, item(rng, j) for each, written CHUNK at a time."""
    def fill(send: Send, rng: random.Random) -> Content:
        chunked(send, (command, key), n, lambda j: item(rng, j))
        return Content(1, n)
    return fill


def mix_files(scale: float = 1.0) -> list[MixFile]:
    """The mix, each count times `scale` (the stream length and the encodings kept)."""
    def n(count: int) -> int:
        return max(1, round(count * scale))

    def k(count: int) -> str:
        return f"{count // 1000}k" if count >= 10_000 else str(count)

    s, h, hh, z, st = n(1_500_000), n(200_000), n(2_000), n(20_000), n(3_000)
    lo, hi = n(100_000), n(400_000)
    bh, b2 = n(3_000_000), n(2_000_000)
    return [
        MixFile(f"sessions-{k(s)}", f"a session cache: {s:,} strings of ~40 bytes, 85% with a TTL of 10 min–14 days",
                lambda send, r: sessions(send, r, s), ("string embstr",)),
        MixFile(f"hashes-{k(h)}", f"{h:,} small hashes of 3–40 fields (listpack) and {hh:,} hashtable ones: half with "
                                  "513–5,000 fields, half with one value of 65+ bytes",
                lambda send, r: hashes(send, r, h, hh), ("hash listpack", "hash hashtable")),
        MixFile(f"zsets-{k(z)}", f"{z:,} sorted sets of 5–1,000 members (log-uniform: listpack up to 128, "
                                 "skiplist above)",
                lambda send, r: zsets(send, r, z), ("zset listpack", "zset skiplist")),
        MixFile(f"streams-{st}x300", f"{st:,} streams of 300 entries (3–4 fields), 1–3 consumer groups each with "
                                       "2–5 consumers; XREADGROUP delivered 25–100% of each stream, XACK 30–95% "
                                       "of that",
                lambda send, r: streams(send, r, st, 300), ("stream stream",)),
        MixFile(f"lists-12x{k(lo)}+", f"12 lists of {lo:,}–{hi:,} elements (quicklist; strings of ~30 bytes, "
                                      "1 in 5 an integer)",
                lambda send, r: lists(send, r, 12, lo, hi), ("list quicklist",)),
        MixFile(f"big-hash-{k(bh)}", f"one hash of {bh:,} fields (hashtable)",
                big("HSET", "big:hash", bh, lambda rng, j: (f"field:{j:07d}", _field_value(rng, j))),
                ("hash hashtable",)),
        MixFile(f"big-set-{k(b2)}", f"one set of {b2:,} strings (hashtable)",
                big("SADD", "big:set", b2, lambda rng, j: (f"member:{j:07d}:{rng.getrandbits(24):06x}",)),
                ("set hashtable",)),
        MixFile(f"big-zset-{k(b2)}", f"one sorted set of {b2:,} members (skiplist)",
                big("ZADD", "big:zset", b2, lambda rng, j: (round(rng.uniform(0, 1e6), 2), f"member:{j:07d}")),
                ("zset skiplist",)),
        MixFile(f"big-list-{k(b2)}", f"one list of {b2:,} elements (quicklist)",
                big("RPUSH", "big:list", b2, lambda rng, j: (f"event:{j}:{word(rng)}",)), ("list quicklist",)),
    ]


def _server_holds(c: redis.Redis) -> dict[str, Any]:
    """DBSIZE, keys with a TTL, keys per "TYPE encoding" and the streams' groups, consumers and pending
    entries, as the server reports them."""
    raw = c.eval(HOLDS_SCRIPT, 0)
    counts = {raw[i].decode(): int(raw[i + 1]) for i in range(0, len(raw), 2)}
    groups = {name: counts.pop(name) for name in list(counts) if name.startswith("server_")}
    return {"dbsize": c.dbsize(), "server_expires": int(c.info("keyspace").get("db0", {}).get("expires", 0)),
            **groups, "encodings": dict(sorted(counts.items()))}


def build(mix: MixFile, binary: Path, target: Path) -> dict[str, Any]:
    """Writes `mix` into a fresh server (build_dump), checks what it holds and records it."""

    def fill(pipe: RespPipe, c: redis.Redis) -> dict[str, Any]:
        content = mix.fill(pipe.command, random.Random(f"{SEED}:{mix.name}"))
        pipe.close()
        holds = _server_holds(c)
        expected = {"dbsize": content.keys + content.streams, "server_expires": content.expires,
                    **{f"server_{name}": content.extra.get(name, 0) for name in ("groups", "consumers", "pending")}}
        wrong = [f"{name} {holds[name]}, expected {n}" for name, n in expected.items() if holds[name] != n]
        if wrong:
            raise RuntimeError(f"{mix.name}: {'; '.join(wrong)}")
        missing = [e for e in mix.encodings if e not in holds["encodings"]]
        if missing:
            raise RuntimeError(f"{mix.name}: no key with {', '.join(missing)} ({holds['encodings']})")
        info = asdict(content)
        return {"name": mix.name, "what": mix.what, "seed": SEED, **info.pop("extra"), **info, **holds}

    return build_dump(binary, RDB_VERSION, target, fill)


MIX_FIELDS = ("name", "keys", "streams", "entries", "elements", "expires", "encodings", "fill_s")


def datasets(quick: bool, rebuild: bool = False, log: Progress = print,
             names: list[str] | None = None) -> tuple[list[Dataset], list[str]]:
    """The mix's dumps (only those whose name contains one of `names`, when given), built when missing,
    stale or `rebuild`; notes on what could not be built."""
    binary = debian_binary()
    if binary is None:
        return [], [f"content mix skipped: {DEBIAN_REDIS_SERVER} is not installed"]
    out: list[Dataset] = []
    for mix in mix_files(QUICK_SCALE if quick else 1.0):
        if names and not any(n in mix.name for n in names):
            continue
        cached(mix.path, f"{binary}: {mix.what}", lambda target, mix=mix: build(mix, binary, target), rebuild, log,
               valid=lambda mix=mix: read_build_info(mix.path, MIX_FIELDS).get("name") == mix.name)
        info = read_build_info(mix.path, MIX_FIELDS)
        out.append(Dataset(mix.name, mix.path, binary, RDB_VERSION, info["entries"], info["keys"],
                           streams=info["streams"]))
    return out, []
