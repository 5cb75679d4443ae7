# cython: language_level=3
"""Inline fixed-size readers for the native parsers (copied as it is by rdbspec's generator).

Each reads at `p + i` with no check of its own: the generated code has already checked that
the bytes lie before `end`, exactly where the Python output checks them. Bytes are assembled
one by one, so the result does not depend on the machine's byte order or alignment.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.string cimport memcpy


cdef inline uint64_t _le(const unsigned char* p, Py_ssize_t i, int n) noexcept nogil:
    cdef uint64_t v = 0
    cdef int k
    for k in range(n - 1, -1, -1):
        v = (v << 8) | p[i + k]
    return v


cdef inline uint64_t _be(const unsigned char* p, Py_ssize_t i, int n) noexcept nogil:
    cdef uint64_t v = 0
    cdef int k
    for k in range(n):
        v = (v << 8) | p[i + k]
    return v


cdef inline int8_t rd_s1le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int8_t>p[i]


cdef inline uint16_t rd_u2le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <uint16_t>(p[i] | (p[i + 1] << 8))


cdef inline uint16_t rd_u2be(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <uint16_t>((p[i] << 8) | p[i + 1])


cdef inline int16_t rd_s2le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int16_t>rd_u2le(p, i)


cdef inline int16_t rd_s2be(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int16_t>rd_u2be(p, i)


cdef inline uint32_t rd_u4le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <uint32_t>_le(p, i, 4)


cdef inline uint32_t rd_u4be(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <uint32_t>_be(p, i, 4)


cdef inline int32_t rd_s4le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int32_t>rd_u4le(p, i)


cdef inline int32_t rd_s4be(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int32_t>rd_u4be(p, i)


cdef inline uint64_t rd_u8le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return _le(p, i, 8)


cdef inline uint64_t rd_u8be(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return _be(p, i, 8)


cdef inline int64_t rd_s8le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int64_t>_le(p, i, 8)


cdef inline int64_t rd_s8be(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    return <int64_t>_be(p, i, 8)


cdef inline float rd_f4le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    cdef uint32_t bits = rd_u4le(p, i)
    cdef float v
    memcpy(&v, &bits, 4)
    return v


cdef inline double rd_f8le(const unsigned char* p, Py_ssize_t i) noexcept nogil:
    cdef uint64_t bits = _le(p, i, 8)
    cdef double v
    memcpy(&v, &bits, 8)
    return v


cdef inline const unsigned char* acquire(object buf, Py_buffer* view, Py_ssize_t end) except NULL:
    """The first byte of `buf`, held in `view` until PyBuffer_Release; reads stop before `end`
    (an Io's end, which must lie within the buffer)."""
    PyObject_GetBuffer(buf, view, PyBUF_SIMPLE)
    if end > view.len or end < 0:
        PyBuffer_Release(view)
        raise ValueError(f"reading up to {end} in a buffer of {view.len} bytes")
    if view.buf == NULL:
        return <const unsigned char*>""
    return <const unsigned char*>view.buf
