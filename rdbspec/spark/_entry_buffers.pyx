# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The Arrow buffers of Spark's `stream_entries` rows, written in C in one pass over the nodes'
columns: byte for byte what `rdbspec.spark.entries.python_entry_buffers` gives otherwise
(tests/spark/test_spark_entries.py compares them). See `entries.entry_buffers` for what each buffer
holds. Items come as a `RaggedColumns` (native backend: kinds, ints and offsets into the
buffer, read through the C arrays `_columns.pxd` declares) or as a list per entry of int and
bytes (Python backend); ints are written as their decimal text.
"""

from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint64_t

from array import array as _array

from rdbspec.read._elements cimport check_entry_columns, element_bytes
from rdbspec.jsonl._out cimport Out, put, put_u64
from rdbspec_generated.native._columns cimport KIND_INT, RaggedColumns, ScalarColumns


cdef int put_i64_text(Out* out, int64_t v) except -1:
    if v < 0:
        put(out, b"-", 1)
        return put_u64(out, <uint64_t>(-(v + 1)) + 1)  # INT64_MIN has no positive int64
    return put_u64(out, <uint64_t>v)


cdef class Binary:
    """A growing Arrow binary (or string) column: int32 offsets and data."""

    cdef Out offsets
    cdef Out data

    def __cinit__(self):
        cdef int32_t zero = 0
        put(&self.offsets, &zero, 4)

    def __dealloc__(self):
        PyMem_Free(self.offsets.data)
        PyMem_Free(self.data.data)

    cdef int end_item(self) except -1:
        cdef int32_t end
        if self.data.size > INT32_MAX:
            raise OverflowError("a batch's column holds over 2 GiB of bytes; lower the batchSize option")
        end = <int32_t>self.data.size
        return put(&self.offsets, &end, 4)

    cdef int add(self, const void* item, Py_ssize_t n) except -1:
        put(&self.data, item, n)
        return self.end_item()

    cdef int add_object(self, object item) except -1:
        """A Python backend element: bytes, or an int (its decimal text)."""
        cdef int64_t v
        if isinstance(item, bytes):
            return self.add(PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item))
        try:
            v = item
        except OverflowError:
            text = str(item).encode()
            return self.add(PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))
        put_i64_text(&self.data, v)
        return self.end_item()

    cdef tuple result(self):
        return (PyBytes_FromStringAndSize(self.offsets.data, self.offsets.size),
                PyBytes_FromStringAndSize(self.data.data, self.data.size))


cdef class Elements:
    """A `ScalarColumns`' C arrays and a view of the buffer its bytes lie in."""

    cdef ScalarColumns columns
    cdef const uint8_t[:] buf

    def __init__(self, ScalarColumns columns):
        self.columns = columns
        self.buf = columns.buf

    cdef int add_to(self, Binary out, Py_ssize_t k) except -1:
        cdef ScalarColumns c = self.columns
        if c.k[k] == KIND_INT:
            put_i64_text(&out.data, c.i[k])
            return out.end_item()
        return out.add(element_bytes(c, self.buf, k), c.l[k])


cdef uint64_t HIGH_WORD = 0  # of an ID number as a decimal128: it fits the low 64 bits


cdef class Builder:
    """The buffers of one batch, nodes added one at a time."""

    cdef Out ms, seq, deleted, pairs
    cdef Binary ids, fields, values
    cdef Py_ssize_t rows
    cdef int32_t pair_count

    def __cinit__(self):
        cdef int32_t zero = 0
        put(&self.pairs, &zero, 4)
        self.ids, self.fields, self.values = Binary(), Binary(), Binary()

    def __dealloc__(self):
        PyMem_Free(self.ms.data)
        PyMem_Free(self.seq.data)
        PyMem_Free(self.deleted.data)
        PyMem_Free(self.pairs.data)

    cdef int add_node(self, cols, bint include_deleted) except -1:
        entry_fields = cols.fields
        items = entry_fields.items
        cdef list master = entry_fields.master_fields
        cdef const unsigned long long[:] ms = _u64(cols.ms)
        cdef const unsigned long long[:] seq = _u64(cols.seq)
        cdef const uint8_t[:] deleted = bytes(cols.deleted)
        cdef const uint8_t[:] samefields = bytes(entry_fields.samefields)
        cdef Py_ssize_t n = ms.shape[0], masters = len(master), row, j, first, count, at
        cdef Elements elements = None
        cdef int64_t* row_starts = NULL
        cdef list row_items = None
        cdef uint8_t flag
        check_entry_columns(n, seq.shape[0], deleted.shape[0], samefields.shape[0], items, master)
        if isinstance(items, RaggedColumns):
            elements = Elements((<RaggedColumns>items).values)
            row_starts = <int64_t*>(<RaggedColumns>items)._row_starts.data.as_voidptr
        for row in range(n):
            if deleted[row] and not include_deleted:
                continue
            put(&self.ms, &ms[row], 8)  # a decimal128: the number, then its high word
            put(&self.ms, &HIGH_WORD, 8)
            put(&self.seq, &seq[row], 8)
            put(&self.seq, &HIGH_WORD, 8)
            if self.rows % 8 == 0:
                flag = 0
                put(&self.deleted, &flag, 1)
            if deleted[row]:
                (<uint8_t*>self.deleted.data)[self.deleted.size - 1] |= 1 << (self.rows % 8)
            put_u64(&self.ids.data, ms[row])
            put(&self.ids.data, b"-", 1)
            put_u64(&self.ids.data, seq[row])
            self.ids.end_item()
            self.rows += 1
            if elements is not None:
                first = row_starts[row]
                count = row_starts[row + 1] - first
                if first < 0 or count < 0 or first + count > elements.columns.n:
                    raise ValueError(f"stream entry {row}'s items lie outside the node's elements")
            else:
                row_items = items[row]
                first = 0
                count = len(row_items)
            count = min(count, masters) if samefields[row] else count // 2
            for j in range(count):
                if samefields[row]:
                    self.fields.add_object(master[j])
                    at = first + j
                else:
                    at = first + 2 * j
                    if elements is not None:
                        elements.add_to(self.fields, at)
                    else:
                        self.fields.add_object(row_items[at])
                    at += 1
                if elements is not None:
                    elements.add_to(self.values, at)
                else:
                    self.values.add_object(row_items[at])
            if self.pair_count > INT32_MAX - count:
                raise OverflowError("a batch holds over 2**31 fields; lower the batchSize option")
            self.pair_count += <int32_t>count
            put(&self.pairs, &self.pair_count, 4)
        return 0

    cdef tuple result(self):
        return (self.rows, PyBytes_FromStringAndSize(self.ms.data, self.ms.size),
                PyBytes_FromStringAndSize(self.seq.data, self.seq.size),
                PyBytes_FromStringAndSize(self.deleted.data, self.deleted.size),
                *self.ids.result(), PyBytes_FromStringAndSize(self.pairs.data, self.pairs.size),
                *self.fields.result(), *self.values.result())


cdef object _u64(column):
    if isinstance(column, _array) and column.typecode == "Q":
        return column
    return _array("Q", column)


def entry_buffers(list nodes, bint include_deleted) -> tuple:
    """The nodes' entries (live ones, or all) as Arrow buffers (see `entries.entry_buffers`)."""
    cdef Builder builder = Builder()
    for cols in nodes:
        builder.add_node(cols, include_deleted)
    return builder.result()
