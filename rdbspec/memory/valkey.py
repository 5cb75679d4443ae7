"""`MEMORY USAGE key SAMPLES 0` on Valkey 8.1 and later (valkey src/object.c memoryCommand:
`objectComputeSize` alone), where the object holds its key and collections are hashtables.

* The object: one allocation of its header, the value pointer, the key's sds (after a byte
  naming its header size) and an expiry when the key has one or a name of 128 bytes or more
  (createObjectWithKeyAndExpire); a string whose object stays within 128 bytes lives in it as
  an sds of type 8, without the pointer (EMBSTR, createStringObjectWithKeyAndExpire), else its
  own sds follows.
* A hashtable (src/hashtable.c): the struct, and buckets of 64 bytes holding 7 entries, as many
  as the elements need at a fill of at most 32/5/7 (nextBucketExp, a power of two); a bucket
  whose elements overflow it chains a child bucket (bucketConvertToChained), 6 entries staying
  in it: the children are counted for elements hashed at random.
* A set's members are sds; a hash's entry holds field and value in one allocation up to 128
  bytes, else the field and a pointer to the value's sds (t_hash.c hashTypeCreateEntry,
  hashTypeEntryMemUsage).
* A skiplist node holds its member's sds after its levels, counted again by sdsAllocSize.
* A stream's radix trees count their allocations (raxAllocSize): the struct and each node.

Lists, listpacks and intsets count as in Redis 7.2 (`redis.RedisModel`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from ..read import dumpfile
from .allocators import sds_bytes as redis_sds_bytes
from .rax import rax_shape
from .redis import SKIPLIST_LEVEL, Generation, RedisModel, string_shape

OBJECT_HEADER = 8  # robj without its value pointer: type, encoding, lru, flags, refcount
VALUE_POINTER = 8
KEY_PREFIX = 1  # the byte before an embedded key: its header size
SDS8_HEADER = 3  # an embedded string value is an sds of type 8, whatever its length
EMBEDDED_MIN = 4  # and takes 4 bytes at least (as MEMORY USAGE on Valkey 9.1 shows: "" costs what "abcd" does)
EXPIRY = 8
EXPIRY_KEY_BYTES = 128  # KEY_SIZE_TO_INCLUDE_EXPIRE_THRESHOLD: such keys get room for an expiry
EMBED_LIMIT = 128  # the most an object with its string value in it takes
BUCKET, BUCKET_ENTRIES = 64, 7
BUCKET_FACTOR, BUCKET_DIVISOR = 5, 32
HASHTABLE = 80  # sizeof(hashtable)
HASH_METADATA = 8  # a hash's hashtable metadata: its volatile set of fields with a TTL
HASH_EMBED_LIMIT = 128  # EMBED_VALUE_MAX_ALLOC_SIZE
RAX = 32  # sizeof(rax): head, numele, numnodes, alloc_size
ZSET_SKIPLIST = 16 + 32  # zset (hashtable*, zskiplist*) and zskiplist
SKIPLIST_NODE = 16  # score and backward: the member's sds follows the levels
SKIPLIST_HEADER_LEVELS = 32

VALKEY = Generation(dict=HASHTABLE, stream=80, stream_cg=40, consumer=32, listpacks=True, listpack_lists=True,
                    rdb_version=11, embstr_counted=False, blobs_counted=False, quicklist_node=40)


def sds_bytes(length: int) -> int:
    """An sds of `length` (valkey src/sds.c sdsReqType): type 5 under 32 bytes, else the
    smallest type whose length field holds the header, the string and its NUL."""
    if length < 32:
        return length + 2
    for header, limit in ((3, 1 << 8), (5, 1 << 16), (9, 1 << 32)):
        if header + length + 1 < limit:
            return header + length + 1
    return redis_sds_bytes(length)


def buckets(elements: int) -> int:
    """nextBucketExp: buckets for `elements` at a fill of at most 32/5/7, a power of two."""
    if elements <= 0:
        return 0
    wanted = (elements * BUCKET_FACTOR - 1) // BUCKET_DIVISOR + 1
    return 1 << (wanted - 1).bit_length()


@lru_cache(maxsize=4096)
def child_buckets(elements: int, top: int) -> float:
    """The child buckets `elements` hashed at random into `top` buckets chain, on average: a
    bucket with k > 7 of them chains ceil((k - 7) / 6)."""
    if not top:
        return 0.0
    rate = elements / top
    expected, p, seen = 0.0, math.exp(-rate), 0.0
    for k in range(elements + 1):
        if k:
            p *= rate / k
        seen += p
        if k > BUCKET_ENTRIES:
            expected += p * math.ceil((k - BUCKET_ENTRIES) / (BUCKET_ENTRIES - 1))
        if k > rate and seen > 1 - 1e-12:
            break
    return top * expected


class ValkeyModel(RedisModel):
    """Valkey 8.1 and later: the value's allocations only (the key is in its object)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.generation = VALKEY

    def usage(self, record: dumpfile.KeyRecord) -> int | None:
        return self.value_usage(record)

    def sds(self, length: int) -> int:
        return self.size(sds_bytes(length))

    def _key_bytes(self, record: dumpfile.KeyRecord) -> int:
        expiry = record.expire_at_ms is not None or len(record.key) >= EXPIRY_KEY_BYTES
        return KEY_PREFIX + sds_bytes(len(record.key)) + EXPIRY * expiry

    def robj(self, record: dumpfile.KeyRecord) -> int:
        if record.type_name == "string":
            return 0  # `string` counts the object, which may hold the value
        return self._object(record)

    def _object(self, record: dumpfile.KeyRecord) -> int:
        """The object with its value pointer, key and expiry."""
        return self.size(OBJECT_HEADER + VALUE_POINTER + self._key_bytes(record))

    def string(self, record: dumpfile.KeyRecord) -> float:
        """An integer: the object; an EMBSTR: the object holding the value; else the object and
        the value's sds."""
        length, integer = string_shape(record)
        if integer:
            return self._object(record)
        embedded = OBJECT_HEADER + self._key_bytes(record) + SDS8_HEADER + max(length, EMBEDDED_MIN) + 1
        if embedded <= EMBED_LIMIT:
            return self.size(embedded)
        return self._object(record) + self.sds(length)

    def hashtable(self, elements: int, metadata: int = 0) -> float:
        top = buckets(elements)
        return HASHTABLE + metadata + BUCKET * (top + child_buckets(elements, top))

    def dict_set(self, count: int, lengths: Counter, converted_at: int | None) -> float:
        return self.hashtable(count) + sum(n * self.sds(m) for m, n in lengths.items())

    def hash(self, record: dumpfile.KeyRecord) -> float:
        """A hash with field TTLs is a hashtable whatever its size (a listpack holds none)."""
        ttls = record.field_expire_at_ms
        if not ttls:
            return super().hash(record)
        expiring = {field for field, _ in ttls}
        pairs = record.value
        return (self.hashtable(len(pairs), HASH_METADATA)
                + sum(self._hash_entry(len(f), len(v), f in expiring) for f, v in pairs))

    def dict_hash(self, count: int, lengths: Counter, converted_at: int | None) -> float:
        return self.hashtable(count, HASH_METADATA) + sum(n * self._hash_entry(f, v) for (f, v), n in lengths.items())

    def _hash_entry(self, field: int, value: int, expiring: bool = False) -> int:
        """hashTypeEntryMemUsage of a field and a value of these lengths: the field's sds (type 8
        at least with a TTL), the TTL, and the value as an sds of type 8 in the same allocation
        up to 128 bytes, else a pointer to the value's own sds (the field then type 8 at least
        too)."""
        field_bytes = sds_bytes(field) + (EXPIRY + 2 * (field < 32)) * expiring
        together = field_bytes + SDS8_HEADER + value + 1
        if together <= HASH_EMBED_LIMIT:
            return self.size(together)
        field_bytes += 2 * (field < 32 and not expiring)
        return self.size(VALUE_POINTER + field_bytes) + self.sds(value)

    def skiplist(self, count: int, lengths: Counter) -> float:
        header = self.size(SKIPLIST_NODE + SKIPLIST_LEVEL * SKIPLIST_HEADER_LEVELS)
        return (ZSET_SKIPLIST + self.hashtable(count) + header
                + sum(n * self.expected_node(SKIPLIST_NODE + KEY_PREFIX + sds_bytes(m)) for m, n in lengths.items()))

    def rax(self, keys: Sequence[int]) -> int:
        """raxAllocSize: the struct and every node's allocation."""
        return self.size(RAX) + sum(self.size(node.bytes()) for node in rax_shape(keys))
