# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""JSON Lines pieces written in C, byte for byte what `jsonl` writes through orjson otherwise
(tests/test_columns.py compares them): a stream node's entries from its columns
(`encode_entries`) and a list value (`encode_list`).

An entry is {"id":"ms-seq","fields":[[field,value],...]} with ,"deleted":true when deleted.
A byte string is a JSON string when it is valid UTF-8 (as Python's decoder judges it), escaped
as json.dumps(ensure_ascii=False) escapes, else {"hex":"..."}; an int is its decimal text.
Items come as a `RaggedColumns` (native backend: kinds, ints and offsets into the buffer) or
as a list of lists of int and bytes (Python backend).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.math cimport isinf, isnan
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, strlen


cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags, int* type) except NULL
    int Py_DTSF_ADD_DOT_0

cdef struct Out:
    char* data
    Py_ssize_t size
    Py_ssize_t cap

cdef const char* HEX = b"0123456789abcdef"
cdef const char* SHORT_ESCAPES = b"btn-fr"  # the letter after the backslash for bytes 8..13 (11 has none)


cdef int reserve(Out* out, Py_ssize_t need) except -1:
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


cdef inline int put(Out* out, const char* text, Py_ssize_t n) except -1:
    reserve(out, n)
    memcpy(out.data + out.size, text, n)
    out.size += n
    return 0


cdef int put_u64(Out* out, uint64_t v) except -1:
    cdef char digits[20]
    cdef int i = 20
    while True:
        i -= 1
        digits[i] = <char>(48 + v % 10)
        v //= 10
        if v == 0:
            break
    return put(out, digits + i, 20 - i)


cdef int put_int_text(Out* out, int64_t v) except -1:
    """An int as a JSON string of its decimal text."""
    put(out, b'"', 1)
    if v < 0:
        put(out, b"-", 1)
        put_u64(out, <uint64_t>(-(v + 1)) + 1)  # INT64_MIN has no positive int64
    else:
        put_u64(out, <uint64_t>v)
    return put(out, b'"', 1)


cdef bint valid_utf8(const uint8_t* s, Py_ssize_t n) noexcept:
    """Well-formed UTF-8 (Unicode table 3-7): what Python's utf-8 decoder accepts."""
    cdef Py_ssize_t i = 0
    cdef uint8_t c, lo, hi
    cdef int more
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            more = 1
        elif 0xE0 <= c <= 0xEF:
            more = 2
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            more = 3
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            return False
        if i + more >= n:
            return False
        if not lo <= s[i + 1] <= hi:
            return False
        for k in range(2, more + 1):
            if not 0x80 <= s[i + k] <= 0xBF:
                return False
        i += more + 1
    return True


cdef int put_text(Out* out, const uint8_t* s, Py_ssize_t n) except -1:
    """A byte string as `jsonl.s` gives it, serialized."""
    cdef Py_ssize_t i
    cdef uint8_t c
    cdef char* w
    if not valid_utf8(s, n):
        reserve(out, 2 * n + 10)
        put(out, b'{"hex":"', 8)
        w = out.data + out.size
        for i in range(n):
            w[2 * i] = HEX[s[i] >> 4]
            w[2 * i + 1] = HEX[s[i] & 15]
        out.size += 2 * n
        return put(out, b'"}', 2)
    reserve(out, 6 * n + 2)
    w = out.data + out.size
    w[0] = 34
    w += 1
    for i in range(n):
        c = s[i]
        if c == 34 or c == 92:  # " and backslash
            w[0] = 92
            w[1] = <char>c
            w += 2
        elif c >= 0x20:
            w[0] = <char>c
            w += 1
        elif 8 <= c <= 13 and c != 11:  # json's short escapes \b \t \n \f \r
            w[0] = 92
            w[1] = SHORT_ESCAPES[c - 8]
            w += 2
        else:
            memcpy(w, b"\\u00", 4)
            w[4] = HEX[c >> 4]
            w[5] = HEX[c & 15]
            w += 6
    w[0] = 34
    w += 1
    out.size = w - out.data
    return 0


cdef int put_bytes(Out* out, bytes item) except -1:
    return put_text(out, <const uint8_t*>PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item))


cdef int put_object(Out* out, object item) except -1:
    """A Python backend element: bytes, or an int (its decimal text)."""
    cdef int64_t v
    if isinstance(item, bytes):
        return put_bytes(out, item)
    try:
        v = item
    except OverflowError:
        return put_bytes(out, str(item).encode())
    return put_int_text(out, v)


cdef class _Elements:
    """The raw columns of a `ScalarColumns` (issue 14 "Columns contract")."""

    cdef const uint8_t[:] kinds
    cdef const long long[:] ints
    cdef const long long[:] starts
    cdef const long long[:] lengths
    cdef const uint8_t[:] buf

    def __init__(self, values):
        self.kinds = values.kinds
        self.ints = values.ints
        self.starts = values.starts
        self.lengths = values.lengths
        self.buf = values.buf

    cdef int put(self, Out* out, Py_ssize_t k) except -1:
        cdef long long start, length
        if self.kinds[k] == 0:
            return put_int_text(out, self.ints[k])
        start, length = self.starts[k], self.lengths[k]
        if start < 0 or length < 0 or start + length > self.buf.shape[0]:
            raise ValueError(f"element {k} lies outside its buffer")
        return put_text(out, &self.buf[start], length)


def encode_entries(const unsigned long long[:] ms, const unsigned long long[:] seq, const uint8_t[:] deleted,
                   const uint8_t[:] samefields, list master_fields, items, bint include_deleted) -> bytes:
    """The entries' JSON objects joined by commas (see the module doc)."""
    cdef Out out = Out(NULL, 0, 0)
    cdef Py_ssize_t n = ms.shape[0], row, j, count, first
    cdef Py_ssize_t masters = len(master_fields)
    cdef bint written = False
    cdef bint same
    cdef _Elements elements = None
    cdef const long long[:] row_starts
    cdef list values
    if seq.shape[0] != n or deleted.shape[0] != n or samefields.shape[0] != n or len(items) != n:
        raise ValueError("the entry columns differ in length")
    for field in master_fields:
        if not isinstance(field, bytes):
            raise TypeError("master fields must be bytes")
    if hasattr(items, "row_starts"):
        elements = _Elements(items.values)
        row_starts = items.row_starts
    try:
        for row in range(n):
            if deleted[row] and not include_deleted:
                continue
            if written:
                put(&out, b",", 1)
            written = True
            put(&out, b'{"id":"', 7)
            put_u64(&out, ms[row])
            put(&out, b"-", 1)
            put_u64(&out, seq[row])
            put(&out, b'","fields":[', 12)
            same = samefields[row]
            if elements is not None:
                first = row_starts[row]
                count = row_starts[row + 1] - first
            else:
                values = items[row]
                first = 0
                count = len(values)
            if same:
                count = min(count, masters)
            else:
                count //= 2
            for j in range(count):
                put(&out, b",[" if j else b"[", 2 if j else 1)
                if same:
                    put_bytes(&out, master_fields[j])
                elif elements is not None:
                    elements.put(&out, first + 2 * j)
                else:
                    put_object(&out, values[2 * j])
                put(&out, b",", 1)
                if elements is not None:
                    elements.put(&out, first + (j if same else 2 * j + 1))
                else:
                    put_object(&out, values[j if same else 2 * j + 1])
                put(&out, b"]", 1)
            if deleted[row]:
                put(&out, b'],"deleted":true}', 17)
            else:
                put(&out, b"]}", 2)
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)


cdef int put_number(Out* out, double x) except -1:
    """A score as `jsonl.number` gives it, serialized: "nan", "inf", "-inf", else float's repr
    (what json.dumps writes for a float)."""
    cdef char* text
    if isnan(x):
        return put(out, b'"nan"', 5)
    if isinf(x):
        return put(out, b'"inf"', 5) if x > 0 else put(out, b'"-inf"', 6)
    text = PyOS_double_to_string(x, b"r", 0, Py_DTSF_ADD_DOT_0, NULL)
    try:
        put(out, text, strlen(text))
    finally:
        PyMem_Free(text)
    return 0


def encode_list(list value):
    """A list value as `jsonl.value_json` gives it, serialized: byte strings, (bytes, bytes)
    pairs, (bytes, float) pairs (the float as `jsonl.number`). None for any other item."""
    cdef Out out = Out(NULL, 0, 0)
    cdef Py_ssize_t i
    try:
        put(&out, b"[", 1)
        for i in range(len(value)):
            item = value[i]
            if i:
                put(&out, b",", 1)
            if type(item) is bytes:
                put_bytes(&out, item)
                continue
            if type(item) is not tuple or len(item) != 2 or type(item[0]) is not bytes:
                return None
            second = item[1]
            put(&out, b"[", 1)
            put_bytes(&out, item[0])
            put(&out, b",", 1)
            if type(second) is bytes:
                put_bytes(&out, second)
            elif type(second) is float:
                put_number(&out, second)
            else:
                return None
            put(&out, b"]", 1)
        put(&out, b"]", 1)
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)
