# cython: language_level=3
"""Column containers of the native parsers (copied as it is by rdbspec's generator)."""

from cpython cimport array
from libc.stdint cimport int64_t, uint8_t


# the kinds of a row (`ScalarColumns.k`)
cdef enum:
    KIND_INT = 0
    KIND_BYTES = 1
    KIND_NULL = 2
    KIND_HELD = 3
    KIND_DOUBLE = 4
    KIND_UINT = 5


cdef class ScalarColumns:
    cdef readonly object buf
    cdef Py_ssize_t n
    cdef array.array _kinds, _ints, _starts, _lengths
    cdef readonly bytearray held
    cdef uint8_t* k
    cdef int64_t* i
    cdef int64_t* s
    cdef int64_t* l

    cdef int reserve(self, Py_ssize_t more) except -1
    cdef int push_row(self, uint8_t kind, int64_t value, int64_t start, int64_t length) except -1
    cdef int push_int(self, int64_t value) except -1
    cdef int push_span(self, int64_t start, int64_t length) except -1
    cdef int push_none(self) except -1
    cdef int push_bytes(self, bytes value) except -1
    cdef const unsigned char* held_data(self)
    cdef int push_double(self, double value) except -1
    cdef int push_length(self, unsigned long long value) except -1
    cdef object item(self, Py_ssize_t index)
    cdef int64_t text_length(self, Py_ssize_t index)
    cpdef append(self, value)
    cpdef object last(self)


cdef class RaggedColumns:
    cdef readonly ScalarColumns values
    cdef Py_ssize_t rows
    cdef array.array _row_starts

    cpdef close_row(self)
