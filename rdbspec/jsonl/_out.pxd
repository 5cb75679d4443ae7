# cython: language_level=3
"""A growing C byte buffer for the hand-written compiled encoders (the JSON Lines encoder, the
Spark entry buffers): `Out` starts as Out(NULL, 0, 0) and its owner frees `data` with
PyMem_Free."""

from cpython.mem cimport PyMem_Realloc
from libc.stdint cimport uint64_t
from libc.string cimport memcpy


cdef struct Out:
    char* data
    Py_ssize_t size
    Py_ssize_t cap


cdef inline int reserve(Out* out, Py_ssize_t need) except -1:
    """Room for `need` more bytes (doubling, so appends cost O(1) amortized)."""
    cdef Py_ssize_t cap
    cdef char* grown
    if out.size + need <= out.cap:
        return 0
    cap = max(2 * out.cap, out.size + need + 4096)
    grown = <char*>PyMem_Realloc(out.data, cap)
    if grown == NULL:
        raise MemoryError()
    out.data = grown
    out.cap = cap
    return 0


cdef inline int put(Out* out, const void* data, Py_ssize_t n) except -1:
    if out.size + n > out.cap:
        reserve(out, n)
    memcpy(out.data + out.size, data, n)
    out.size += n
    return 0


cdef inline int put_u64(Out* out, uint64_t v) except -1:
    """The decimal text of `v`."""
    cdef char digits[20]
    cdef int i = 20
    while True:
        i -= 1
        digits[i] = <char>(48 + v % 10)
        v //= 10
        if v == 0:
            break
    return put(out, digits + i, 20 - i)
