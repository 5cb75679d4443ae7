# cython: language_level=3, boundscheck=False, wraparound=False
"""Column containers of the native parsers (copied as it is by rdbspec's generator).

`ScalarColumns` holds the elements of a repeat of a `-rdbspec-scalar` type (listpack and ziplist
entries, stream items), intset members and the chunks of a `-rdbspec-chunks` repeat (the
elements of hashtable-encoded values) as four C arrays, one row per element: `kinds`
(KIND_INT, KIND_BYTES, KIND_NULL, KIND_HELD, KIND_DOUBLE, KIND_UINT), `ints` (the integer, a
double's or an unsigned integer's bits), `starts` and `lengths` (where the bytes lie: for KIND_BYTES in `buf`, the buffer they
were read from, the mapped file or a decompressed blob; for KIND_HELD in `held`, bytes the
columns keep, such as a decompressed LZF string's). Nothing is made per element while reading;
Python objects are made when a caller asks (indexing, `values()`, `texts()`, `pairs()`), equal
to what the Python backend's lists hold.
`RaggedColumns` is a column of lists (the items of each stream entry): one `ScalarColumns` of
every row's elements and the row boundaries.
"""

from array import array as _array
from mmap import mmap

from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport strtod
from libc.string cimport memcpy

cdef array.array _BYTES = _array("B")
cdef array.array _INT64 = _array("q")


cdef bytes decimal_text(int64_t value):
    """`b"%d" % value`, without making an int first."""
    cdef char digits[20]
    cdef char* end = digits + 20
    cdef char* at = end
    cdef uint64_t rest = <uint64_t>value if value >= 0 else -(<uint64_t>value)  # INT64_MIN too
    while True:
        at -= 1
        at[0] = <char>(48 + rest % 10)
        rest //= 10
        if rest == 0:
            break
    if value < 0:
        at -= 1
        at[0] = 45  # "-"
    return PyBytes_FromStringAndSize(at, end - at)


cdef class ScalarColumns:
    """Scalars as columns; a sequence equal to the list the Python backend holds."""

    def __cinit__(self, buf=b""):
        self.buf = buf
        self.held = bytearray()
        self.n = 0
        self._kinds = array.clone(_BYTES, 0, False)
        self._ints = array.clone(_INT64, 0, False)
        self._starts = array.clone(_INT64, 0, False)
        self._lengths = array.clone(_INT64, 0, False)

    cdef int reserve(self, Py_ssize_t more) except -1:
        """Room for `more` rows (callers have bounded `more` by the bytes that remain)."""
        cdef Py_ssize_t want = self.n + more
        cdef Py_ssize_t cap = len(self._kinds)
        if want <= cap:
            return 0
        cap = max(want, 2 * cap, 16)
        array.resize(self._kinds, cap)
        array.resize(self._ints, cap)
        array.resize(self._starts, cap)
        array.resize(self._lengths, cap)
        self.k = self._kinds.data.as_uchars
        self.i = <int64_t*>self._ints.data.as_voidptr
        self.s = <int64_t*>self._starts.data.as_voidptr
        self.l = <int64_t*>self._lengths.data.as_voidptr
        return 0

    cdef inline int push_row(self, uint8_t kind, int64_t value, int64_t start, int64_t length) except -1:
        if self.n == len(self._kinds):
            self.reserve(1)
        self.k[self.n] = kind
        self.i[self.n] = value
        self.s[self.n] = start
        self.l[self.n] = length
        self.n += 1
        return 0

    cdef int push_int(self, int64_t value) except -1:
        return self.push_row(KIND_INT, value, 0, 0)

    cdef int push_span(self, int64_t start, int64_t length) except -1:
        return self.push_row(KIND_BYTES, 0, start, length)

    cdef int push_none(self) except -1:
        return self.push_row(KIND_NULL, 0, 0, 0)

    cdef int push_bytes(self, bytes value) except -1:
        """Bytes that are not in `buf` (a decompressed string): kept in `held`."""
        self.push_row(KIND_HELD, 0, len(self.held), len(value))
        self.held += value
        return 0

    cdef const unsigned char* held_data(self):
        """Where the KIND_HELD rows' bytes start (valid until the next push)."""
        return <const unsigned char*>PyByteArray_AS_STRING(self.held)

    cdef int push_double(self, double value) except -1:
        cdef int64_t bits
        memcpy(&bits, &value, 8)
        return self.push_row(KIND_DOUBLE, bits, 0, 0)

    cdef int push_length(self, unsigned long long value) except -1:
        """An unsigned 64-bit number (an RDB length): an integer row, or above 2**63 - 1 a
        KIND_UINT row of the same bits."""
        return self.push_row(KIND_INT if value <= 0x7FFFFFFFFFFFFFFF else KIND_UINT, <int64_t>value, 0, 0)

    cpdef append(self, value):
        """Adds an integer or None (the elements that are not bytes of `buf`)."""
        if value is None:
            self.push_none()
        else:
            self.push_int(value)

    cpdef object last(self):
        """The last element, as the Python backend holds it."""
        return self.item(self.n - 1)

    cdef object item(self, Py_ssize_t index):
        cdef uint8_t kind = self.k[index]
        cdef double number
        if kind == KIND_INT:
            return self.i[index]
        if kind == KIND_NULL:
            return None
        if kind == KIND_DOUBLE:
            memcpy(&number, &self.i[index], 8)
            return number
        if kind == KIND_UINT:
            return <uint64_t>self.i[index]
        if kind == KIND_HELD:
            return bytes(self.held[self.s[index]:self.s[index] + self.l[index]])
        return self.buf[self.s[index]:self.s[index] + self.l[index]]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.item(i) for i in range(*index.indices(self.n))]
        cdef Py_ssize_t at = index
        if at < 0:
            at += self.n
        if at < 0 or at >= self.n:
            raise IndexError("ScalarColumns index out of range")
        return self.item(at)

    def __iter__(self):
        return iter(self.values())

    def __eq__(self, other):
        if isinstance(other, (ScalarColumns, list)):
            return self.values() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"ScalarColumns({self.values()!r})"

    def values(self) -> list:
        """Every element: int, bytes or None, as in the Python backend's list."""
        cdef const unsigned char[::1] view
        cdef const unsigned char* p = NULL
        cdef Py_ssize_t index
        if not isinstance(self.buf, (bytes, mmap)):  # slices of other buffers keep their type
            return [self.item(index) for index in range(self.n)]
        if self.n and len(self.buf):
            view = self.buf
            p = &view[0]
        out = [None] * self.n
        for index in range(self.n):
            if self.k[index] == KIND_INT:
                out[index] = self.i[index]
            elif self.k[index] == KIND_BYTES:
                out[index] = PyBytes_FromStringAndSize(<const char*>p + self.s[index], self.l[index])
            elif self.k[index] != KIND_NULL:
                out[index] = self.item(index)
        return out

    def texts(self) -> list:
        """Every element as the server returns it: bytes, integers as decimal ASCII."""
        out = self.values()
        cdef Py_ssize_t index
        for index in range(self.n):
            if self.k[index] == KIND_INT:
                out[index] = decimal_text(self.i[index])
            elif self.k[index] == KIND_UINT:
                out[index] = b"%d" % out[index]
        return out

    def strtod(self, Py_ssize_t start, Py_ssize_t step, Py_ssize_t max_len) -> list:
        """Elements start, start + step, ... as floats: an integer converted (as float() does),
        bytes as C strtod reads a NUL-terminated copy of their first `max_len` (< 256) bytes,
        0.0 where no number starts there (and for a null element)."""
        if not (0 <= max_len < 256 and step > 0 and start >= 0):
            raise ValueError(f"strtod({start}, {step}, {max_len}): start >= 0, step > 0, max_len < 256")
        cdef char copy[256]
        cdef const unsigned char[::1] view
        cdef const unsigned char* p = NULL
        cdef Py_ssize_t index, length
        if self.n and len(self.buf):
            view = self.buf
            p = &view[0]
        out = []
        for index in range(start, self.n, step):
            if self.k[index] == KIND_INT:
                out.append(<double>self.i[index])
            elif self.k[index] == KIND_BYTES or self.k[index] == KIND_HELD:
                length = min(self.l[index], max_len)
                memcpy(copy, (p if self.k[index] == KIND_BYTES else <const unsigned char*>self.held_data()) + self.s[index],
                       length)
                copy[length] = 0
                out.append(strtod(copy, NULL))
            elif self.k[index] == KIND_DOUBLE or self.k[index] == KIND_UINT:
                out.append(float(self.item(index)))
            else:
                out.append(0.0)
        return out

    cdef int64_t text_length(self, Py_ssize_t index):
        """The length of element `index`'s text (an integer's decimal text; 0 for a double or
        a null)."""
        cdef uint64_t rest
        cdef int64_t digits
        if self.k[index] == KIND_INT:
            rest = <uint64_t>self.i[index] if self.i[index] >= 0 else -(<uint64_t>self.i[index])
            digits = 1 + (self.i[index] < 0)
            while rest >= 10:
                rest //= 10
                digits += 1
            return digits
        if self.k[index] == KIND_BYTES or self.k[index] == KIND_HELD:
            return self.l[index]
        if self.k[index] == KIND_UINT:
            return len(b"%d" % self.item(index))
        return 0

    def text_lengths(self, Py_ssize_t start, Py_ssize_t step, Py_ssize_t second=-1) -> array.array:
        """The lengths of the texts of elements start, start + step, ... as array('q'); with
        `second`, each paired with the length of element second, second + step, ... as
        `first << 32 | second` (lengths below 2**31)."""
        if not (step > 0 and start >= 0 and second < step):
            raise ValueError(f"text_lengths({start}, {step}, {second}): start >= 0, step > 0, second < step")
        cdef Py_ssize_t rows = max(0, (self.n - start + step - 1) // step)
        if second >= 0:
            rows = min(rows, max(0, (self.n - second + step - 1) // step))
        out = array.clone(_INT64, rows, False)
        cdef int64_t* lengths = <int64_t*>(<array.array>out).data.as_voidptr
        cdef Py_ssize_t row
        cdef int64_t length, other
        for row in range(rows):
            length = self.text_length(start + row * step)
            if second >= 0:
                other = self.text_length(second + row * step)
                if length >= 1 << 31 or other >= 1 << 31:
                    raise OverflowError("a text of 2**31 bytes or more")
                length = length << 32 | other
            lengths[row] = length
        return out

    def pairs(self) -> list:
        """(texts[i], texts[i + 1]) for each even i."""
        texts = self.texts()
        return list(zip(texts[0::2], texts[1::2]))

    @property
    def kinds(self) -> memoryview:
        return memoryview(self._kinds)[:self.n]

    @property
    def ints(self) -> memoryview:
        return memoryview(self._ints)[:self.n]

    @property
    def starts(self) -> memoryview:
        return memoryview(self._starts)[:self.n]

    @property
    def lengths(self) -> memoryview:
        return memoryview(self._lengths)[:self.n]

    def wrapping_u64(self, base) -> array.array:
        """(base + int) mod 2**64 of each row, as array('Q') (stream IDs: master + diff)."""
        cdef unsigned long long b = base & 0xFFFFFFFFFFFFFFFF
        out = array.clone(_array("Q"), self.n, False)
        cdef unsigned long long* q = <unsigned long long*>(<array.array>out).data.as_voidptr
        cdef Py_ssize_t index
        for index in range(self.n):
            q[index] = b + <unsigned long long>self.i[index]
        return out

    def bits(self, mask) -> bytes:
        """1 for each row whose int has a bit of `mask` set, else 0."""
        cdef int64_t m = mask
        out = bytearray(self.n)
        cdef Py_ssize_t index
        for index in range(self.n):
            out[index] = 1 if self.i[index] & m else 0
        return bytes(out)


cdef class RaggedColumns:
    """A column of lists of scalars: `values` holds every row's elements in order,
    `row_starts[r]:row_starts[r + 1]` are row r's."""

    def __cinit__(self, buf=b""):
        self.values = ScalarColumns(buf)
        self.rows = 0
        self._row_starts = array.clone(_INT64, 1, True)

    cpdef close_row(self):
        """Ends the current row at the elements pushed so far."""
        array.resize_smart(self._row_starts, self.rows + 2)
        (<int64_t*>self._row_starts.data.as_voidptr)[self.rows + 1] = self.values.n
        self.rows += 1

    @property
    def row_starts(self) -> memoryview:
        return memoryview(self._row_starts)[:self.rows + 1]

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.rows))]
        cdef Py_ssize_t at = index
        if at < 0:
            at += self.rows
        if at < 0 or at >= self.rows:
            raise IndexError("RaggedColumns index out of range")
        cdef int64_t* starts = <int64_t*>self._row_starts.data.as_voidptr
        return self.values[starts[at]:starts[at + 1]]

    def __iter__(self):
        return (self[index] for index in range(self.rows))

    def __eq__(self, other):
        if isinstance(other, (RaggedColumns, list)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"RaggedColumns({list(self)!r})"
