# cython: language_level=3
"""What the hand-written compiled encoders (the JSON Lines encoder, the Spark entry buffers)
share in reading columns: a `ScalarColumns`' bytes element read in place (each writes an
integer element its own way) and the check of a node's entry columns."""

from libc.stdint cimport uint8_t

from rdbspec_generated.native._columns cimport KIND_BYTES, KIND_HELD, ScalarColumns


cdef inline const uint8_t* element_bytes(ScalarColumns columns, const uint8_t[:] buf, Py_ssize_t k) except NULL:
    """Where the `columns.l[k]` bytes of element `k` lie: in `buf`, the buffer its columns were
    read from, or in the bytes the columns hold (a decompressed string); checked to be a bytes
    element (not an integer, a double or a null) inside its buffer."""
    cdef long long start = columns.s[k], length = columns.l[k]
    if columns.k[k] == KIND_HELD:
        if start < 0 or length < 0 or start + length > len(columns.held):
            raise ValueError(f"element {k} lies outside its buffer")
        return columns.held_data() + start
    if columns.k[k] != KIND_BYTES:
        raise ValueError(f"element {k} is neither bytes nor an integer")
    if start < 0 or length < 0 or start + length > buf.shape[0]:
        raise ValueError(f"element {k} lies outside its buffer")
    return <const uint8_t*>b"" if length == 0 else &buf[start]


cdef inline int check_entry_columns(Py_ssize_t rows, Py_ssize_t seq, Py_ssize_t deleted, Py_ssize_t samefields,
                                    items, list master_fields) except -1:
    """A node's entry columns (`streams.EntryColumns`) as both encoders take them: one row count
    for every column, byte strings for the master fields."""
    if seq != rows or deleted != rows or samefields != rows or len(items) != rows:
        raise ValueError("the entry columns differ in length")
    for field in master_fields:
        if not isinstance(field, bytes):
            raise TypeError("master fields must be bytes")
    return 0
