# cython: language_level=3, boundscheck=True, wraparound=False
"""RESTORE commands of keys copied from a dump, built in C (`restore.Restore`'s path for a key
that goes as it was read): the command's bytes with the payload of `payload.copied` in one piece,
the CRC-64 computed here. Nothing here reads the bytes it copies: the spans come from the
generated parser that read the record, and are checked against the buffer. Compiled by setup.py;
without it `restore` builds the same bytes in Python (`payload.copied`, `restore.restore_command`)."""

from libc.stdint cimport uint64_t
from libc.string cimport memcpy
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

# CRC-64/Jones as Redis computes it (src/crc64.c: reflected, polynomial 0xad93d23594c935a9, init 0)
cdef uint64_t[256] _TABLE
cdef uint64_t _REFLECTED = 0x95AC9329AC4BC9B5


cdef void _fill_table():
    cdef uint64_t crc
    cdef int n, bit
    for n in range(256):
        crc = n
        for bit in range(8):
            crc = (crc >> 1) ^ _REFLECTED if crc & 1 else crc >> 1
        _TABLE[n] = crc


_fill_table()


cdef inline uint64_t _crc64(uint64_t crc, const unsigned char* data, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(size):
        crc = _TABLE[(crc ^ data[i]) & 0xFF] ^ (crc >> 8)
    return crc


def crc64(data) -> int:
    """The CRC-64 of `data` (for the tests: the same as rdbspec.read.checksum's)."""
    cdef const unsigned char[::1] view = data
    return _crc64(0, &view[0], view.shape[0]) if view.shape[0] else 0


cdef Py_ssize_t _digits(long long value) noexcept:
    cdef Py_ssize_t n = 1
    if value < 0:
        n += 1
        value = -value
    while value >= 10:
        value //= 10
        n += 1
    return n


cdef Py_ssize_t _put_int(char* at, long long value) noexcept:
    """`value` in decimal at `at`; the bytes written."""
    cdef Py_ssize_t n = _digits(value), i = n
    cdef unsigned long long rest
    if value < 0:
        at[0] = c'-'
        rest = <unsigned long long>(-(value + 1)) + 1
    else:
        rest = <unsigned long long>value
    while True:
        i -= 1
        at[i] = <char>(c'0' + rest % 10)
        rest //= 10
        if rest == 0:
            break
    return n


cdef Py_ssize_t _put(char* at, const char* data, Py_ssize_t size) noexcept:
    memcpy(at, data, size)
    return size


cdef Py_ssize_t _bulk_int_size(long long value) noexcept:
    cdef Py_ssize_t n = _digits(value)
    return 1 + _digits(n) + 2 + n + 2


cdef Py_ssize_t _put_bulk_int(char* at, long long value) noexcept:
    cdef Py_ssize_t n = _digits(value), w = 0
    w += _put(at + w, b"$", 1)
    w += _put_int(at + w, n)
    w += _put(at + w, b"\r\n", 2)
    w += _put_int(at + w, value)
    w += _put(at + w, b"\r\n", 2)
    return w


cdef class RestoreCommands:
    """RESTORE commands of the keys of one dump's buffer, for a server of RDB `version`, with
    REPLACE when `replace`."""

    cdef const unsigned char[::1] buffer
    cdef int version
    cdef bint replace

    def __init__(self, buffer, int version, bint replace):
        self.buffer = buffer
        self.version = version
        self.replace = replace

    def command_of(self, record, Py_ssize_t most):
        """`command` of a key record (`rdbspec.read.dumpfile.KeyRecord`), None when its payload
        would be over `most` bytes."""
        cdef Py_ssize_t offset = record.offset, end = offset + record.size, value_offset = record.value_offset
        if 1 + end - value_offset + 10 > most:
            return None
        return self.command(offset, value_offset, end, record.key, record.expire_at_ms, record.idle, record.freq)

    def command(self, Py_ssize_t offset, Py_ssize_t value_offset, Py_ssize_t end, bytes key, expire_at_ms,
                idle, freq) -> bytes:
        """`RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s | FREQ f]` of the key whose type byte
        is at `offset` and value at [value_offset, end) (`expire_at_ms`, `idle`, `freq`: None when
        the key has none)."""
        if not (0 <= offset < value_offset <= end <= self.buffer.shape[0]):
            raise ValueError(f"not a key's span of the buffer: {offset}, {value_offset}, {end}")
        cdef Py_ssize_t value_size = end - value_offset, key_size = len(key)
        cdef Py_ssize_t payload = 1 + value_size + 10
        cdef long long ttl = 0 if expire_at_ms is None else expire_at_ms
        cdef int arguments = 4 + self.replace + (expire_at_ms is not None) + 2 * (idle is not None or freq is not None)
        cdef long long extra = -1
        cdef const char* extra_name = b"$8\r\nIDLETIME\r\n"
        cdef Py_ssize_t extra_name_size = 14
        if idle is not None:
            extra = idle
        elif freq is not None:
            extra = freq
            extra_name, extra_name_size = b"$4\r\nFREQ\r\n", 10
        cdef Py_ssize_t size = (1 + _digits(arguments) + 2 + 13                     # *N, $7 RESTORE
                                + 1 + _digits(key_size) + 2 + key_size + 2         # the key
                                + _bulk_int_size(ttl)
                                + 1 + _digits(payload) + 2 + payload + 2)
        if self.replace:
            size += 13
        if expire_at_ms is not None:
            size += 12
        if extra >= 0:
            size += extra_name_size + _bulk_int_size(extra)
        out = PyBytes_FromStringAndSize(NULL, size)
        cdef char* at = PyBytes_AS_STRING(out)
        cdef Py_ssize_t w = 0
        cdef unsigned char tail[2]
        cdef uint64_t crc
        cdef int i
        w += _put(at + w, b"*", 1)
        w += _put_int(at + w, arguments)
        w += _put(at + w, b"\r\n$7\r\nRESTORE\r\n$", 16)
        w += _put_int(at + w, key_size)
        w += _put(at + w, b"\r\n", 2)
        w += _put(at + w, key, key_size)
        w += _put(at + w, b"\r\n", 2)
        w += _put_bulk_int(at + w, ttl)
        w += _put(at + w, b"$", 1)
        w += _put_int(at + w, payload)
        w += _put(at + w, b"\r\n", 2)
        # the payload: the type byte, the value, the version (LE), the CRC-64 of those (LE)
        at[w] = <char>self.buffer[offset]
        if value_size:
            memcpy(at + w + 1, &self.buffer[value_offset], value_size)
        tail[0], tail[1] = self.version & 0xFF, (self.version >> 8) & 0xFF
        memcpy(at + w + 1 + value_size, tail, 2)
        crc = _crc64(0, <const unsigned char*>(at + w), 1 + value_size + 2)
        w += 1 + value_size + 2
        for i in range(8):
            at[w + i] = <char>((crc >> (8 * i)) & 0xFF)
        w += 8
        w += _put(at + w, b"\r\n", 2)
        if self.replace:
            w += _put(at + w, b"$7\r\nREPLACE\r\n", 13)
        if expire_at_ms is not None:
            w += _put(at + w, b"$6\r\nABSTTL\r\n", 12)
        if extra >= 0:
            w += _put(at + w, extra_name, extra_name_size)
            w += _put_bulk_int(at + w, extra)
        if w != size:
            raise AssertionError(f"RESTORE of {size} bytes written as {w}")
        return out
