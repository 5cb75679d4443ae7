# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""JSON Lines written in C, byte for byte what `jsonl` writes through orjson otherwise
(tests/unit/test_columns.py and tests/servers/test_jsonl.py compare them): the lines of the key records
whose value is a string or a list (`write_lines`, a megabyte at a time; a value still in its
containers' entries, `values.Packed`, is written from them), a stream node's entries from
its columns (`encode_entries`) and a consumer group's pending entries (`encode_pending`,
`encode_ids`).

An entry is {"id":"ms-seq","fields":[[field,value],...]} with ,"deleted":true when deleted.
A byte string is a JSON string when it is valid UTF-8 (as Python's decoder judges it), escaped
as json.dumps(ensure_ascii=False) escapes, else {"hex":"..."}; an int is its decimal text.
Items come as a `RaggedColumns` (native backend: kinds, ints and offsets into the buffer) or
as a list of lists of int and bytes (Python backend).

A score (a float) is written as float's repr by `_shortest_double.h`: the Ryu algorithm (Ulf
Adams, "Ryu: fast float-to-string conversion", PLDI 2018), written from the paper, whose tables
of 5^i and 2^k / 5^q this module computes from Python ints at import. PyOS_double_to_string
(David Gay's dtoa: big-integer loops and a malloc a call, about 6,900 instructions) was 16% of
`rdbspec dump`'s instructions; Ryu takes about 450, with no allocation
(tests/unit/test_shortest_double.py compares it with repr).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.mem cimport PyMem_Free
from libc.math cimport isinf, isnan
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, strlen

from rdbspec_generated.native._columns cimport KIND_DOUBLE, KIND_INT, RaggedColumns, ScalarColumns

from rdbspec.read._elements cimport check_entry_columns, element_bytes
from rdbspec.jsonl._out cimport Out, put, put_u64, reserve

from rdbspec_generated.enums import ValueType

cdef long long STRING = ValueType.STRING  # a string key's `value_kind`


cdef extern from "_shortest_double.h":
    enum:
        SD_SPLIT_BITS
        SD_POW5_COUNT
        SD_POW5_INV_COUNT
        SD_REPR_SIZE
    void sd_set_pow5(int i, uint64_t low, uint64_t high) noexcept
    void sd_set_pow5_inv(int q, uint64_t low, uint64_t high) noexcept
    int sd_repr(double x, char* text) noexcept


cdef int fill_shortest_double_tables() except -1:
    """The header's tables of 5^i scaled to SD_SPLIT_BITS bits (truncated) and of
    floor(2^(bits(5^q) - 1 + SD_SPLIT_BITS) / 5^q) + 1, as 64-bit halves, from Python ints."""
    low = (1 << 64) - 1
    for i in range(SD_POW5_COUNT):
        power = 5 ** i
        split = (power << SD_SPLIT_BITS) >> power.bit_length()
        sd_set_pow5(i, split & low, split >> 64)
    for q in range(SD_POW5_INV_COUNT):
        power = 5 ** q
        split = (1 << (power.bit_length() - 1 + SD_SPLIT_BITS)) // power + 1
        sd_set_pow5_inv(q, split & low, split >> 64)
    return 0


fill_shortest_double_tables()

cdef const char* HEX = b"0123456789abcdef"
cdef Py_ssize_t TEXT_CHUNK = 1 << 16  # input bytes escaped per reserve
cdef const char* SHORT_ESCAPES = b"btn-fr"  # the letter after the backslash for bytes 8..13 (11 has none)


cdef inline int put_literal(Out* out, const char* text) except -1:
    return put(out, text, strlen(text))


cdef int put_i64(Out* out, int64_t v) except -1:
    if v >= 0:
        return put_u64(out, <uint64_t>v)
    put(out, b"-", 1)
    return put_u64(out, <uint64_t>(-(v + 1)) + 1)  # INT64_MIN has no positive int64


cdef int put_int_text(Out* out, int64_t v) except -1:
    """An int as a JSON string of its decimal text."""
    put(out, b'"', 1)
    put_i64(out, v)
    return put(out, b'"', 1)


cdef int put_int(Out* out, object v) except -1:
    """A Python int as json writes it: its decimal text, whatever its size."""
    cdef int overflow = 0
    cdef long long x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow:
        text = str(v).encode()
        return put(out, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))
    return put_i64(out, x)


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


cdef bint plain_ascii(const uint8_t* s, Py_ssize_t n) noexcept:
    """Every byte in 0x20..0x7F but '"' and backslash: the text is its own JSON string. Eight
    bytes at a time: a word has a byte below 0x20 (or equal to b) exactly when
    (w - 0x20 each) & ~w & 0x80 each (the same on w ^ b each) is not 0."""
    cdef uint64_t w, ones = 0x0101010101010101, highs = 0x8080808080808080
    cdef uint64_t quotes = 0x22 * ones, backslashes = 0x5C * ones
    cdef Py_ssize_t i = 0
    cdef uint8_t c
    while i + 8 <= n:
        memcpy(&w, s + i, 8)
        if (w | ((w - 0x20 * ones) & ~w) | ((w ^ quotes) - ones) & ~(w ^ quotes)
                | ((w ^ backslashes) - ones) & ~(w ^ backslashes)) & highs:
            return False
        i += 8
    while i < n:
        c = s[i]
        if c < 0x20 or c >= 0x80 or c == 34 or c == 92:
            return False
        i += 1
    return True


cdef int put_text(Out* out, const uint8_t* s, Py_ssize_t n) except -1:
    """A byte string as `jsonl.s` gives it, serialized."""
    cdef Py_ssize_t i, done = 0, end
    cdef uint8_t c
    cdef char* w
    if plain_ascii(s, n):  # most keys and elements: copied as they are
        reserve(out, n + 2)
        w = out.data + out.size
        w[0] = 34
        memcpy(w + 1, s, n)
        w[n + 1] = 34
        out.size += n + 2
        return 0
    if not valid_utf8(s, n):
        reserve(out, 2 * n + 10)
        put(out, b'{"hex":"', 8)
        w = out.data + out.size
        for i in range(n):
            w[2 * i] = HEX[s[i] >> 4]
            w[2 * i + 1] = HEX[s[i] & 15]
        out.size += 2 * n
        return put(out, b'"}', 2)
    put(out, b'"', 1)
    while done < n:  # a chunk at a time: room for the longest escape of each byte, not of the whole string
        end = min(n, done + TEXT_CHUNK)
        reserve(out, 6 * (end - done))
        w = out.data + out.size
        for i in range(done, end):
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
        out.size = w - out.data
        done = end
    return put(out, b'"', 1)


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
    """A `ScalarColumns`' entries (issue 14 "Columns contract"): its C arrays, read in place,
    and a view of the buffer its bytes lie in."""

    cdef ScalarColumns columns
    cdef const uint8_t[:] buf

    def __init__(self, ScalarColumns columns):
        self.columns = columns
        self.buf = columns.buf

    cdef int put(self, Out* out, Py_ssize_t k) except -1:
        cdef ScalarColumns c = self.columns
        if c.k[k] == KIND_INT:
            return put_int_text(out, c.i[k])
        return put_text(out, element_bytes(c, self.buf, k), c.l[k])

    cdef double number(self, Py_ssize_t k) except? -1:
        """Entry `k`, a double (a sorted set's score in a chunk of a hashtable-encoded value)."""
        cdef double x
        if self.columns.k[k] != KIND_DOUBLE:
            raise ValueError(f"element {k} is not a double")
        memcpy(&x, &self.columns.i[k], 8)
        return x


cdef int put_id(Out* out, uint64_t ms, uint64_t seq) except -1:
    """A stream ID as the JSON string "ms-seq"."""
    put(out, b'"', 1)
    put_u64(out, ms)
    put(out, b"-", 1)
    put_u64(out, seq)
    return put(out, b'"', 1)


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
    check_entry_columns(n, seq.shape[0], deleted.shape[0], samefields.shape[0], items, master_fields)
    if isinstance(items, RaggedColumns):
        elements = _Elements((<RaggedColumns>items).values)
        row_starts = items.row_starts
    try:
        for row in range(n):
            if deleted[row] and not include_deleted:
                continue
            if written:
                put(&out, b",", 1)
            written = True
            put(&out, b'{"id":', 6)
            put_id(&out, ms[row], seq[row])
            put(&out, b',"fields":[', 11)
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


def encode_pending(const unsigned long long[:] ms, const unsigned long long[:] seq, const long long[:] owners,
                   const long long[:] delivery_times_ms, const unsigned long long[:] delivery_counts,
                   list names) -> bytes:
    """A group's PEL (`streams.PendingEntries`' columns) as `jsonl.group_json` writes it: its
    objects joined by commas, each entry's consumer as the JSON text `names` holds at its owner
    index (null for -1: pending for no consumer)."""
    cdef Out out = Out(NULL, 0, 0)
    cdef Py_ssize_t n = ms.shape[0], i
    cdef int64_t owner
    cdef bytes name
    if not (seq.shape[0] == owners.shape[0] == delivery_times_ms.shape[0] == delivery_counts.shape[0] == n):
        raise ValueError("the PEL's columns differ in length")
    try:
        for i in range(n):
            put(&out, b',{"id":' if i else b'{"id":', 7 if i else 6)
            put_id(&out, ms[i], seq[i])
            owner = owners[i]
            if owner < 0:
                put_literal(&out, b',"consumer":null')
            else:
                name = names[owner]
                put_literal(&out, b',"consumer":')
                put(&out, PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name))
            put_literal(&out, b',"delivery_time_ms":')
            put_i64(&out, delivery_times_ms[i])
            put_literal(&out, b',"delivery_count":')
            put_u64(&out, delivery_counts[i])
            put(&out, b"}", 1)
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)


def encode_ids(const unsigned long long[:] ms, const unsigned long long[:] seq) -> bytes:
    """Stream IDs as "ms-seq" JSON strings joined by commas (a consumer's PEL)."""
    cdef Out out = Out(NULL, 0, 0)
    cdef Py_ssize_t n = ms.shape[0], i
    if seq.shape[0] != n:
        raise ValueError("the ID columns differ in length")
    try:
        for i in range(n):
            if i:
                put(&out, b",", 1)
            put_id(&out, ms[i], seq[i])
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)


cdef int put_number(Out* out, double x) except -1:
    """A score as `jsonl.number` gives it, serialized: "nan", "inf", "-inf", else float's repr
    (what json.dumps writes for a float), by `sd_repr` (_shortest_double.h)."""
    if isnan(x):
        return put(out, b'"nan"', 5)
    if isinf(x):
        return put(out, b'"inf"', 5) if x > 0 else put(out, b'"-inf"', 6)
    reserve(out, SD_REPR_SIZE)
    out.size += sd_repr(x, out.data + out.size)
    return 0


cdef bint put_items(Out* out, list value) except -1:
    """A list value as `jsonl.value_json` gives it, serialized: byte strings, (bytes, bytes)
    pairs, (bytes, float) pairs (the float as `jsonl.number`). False, written in part, at an item
    of any other kind."""
    cdef Py_ssize_t i
    put(out, b"[", 1)
    for i in range(len(value)):
        item = value[i]
        if i:
            put(out, b",", 1)
        if type(item) is bytes:
            put_bytes(out, item)
            continue
        if type(item) is not tuple or len(item) != 2 or type(item[0]) is not bytes:
            return False
        second = item[1]
        put(out, b"[", 1)
        put_bytes(out, item[0])
        put(out, b",", 1)
        if type(second) is bytes:
            put_bytes(out, second)
        elif type(second) is float:
            put_number(out, second)
        else:
            return False
        put(out, b"]", 1)
    put(out, b"]", 1)
    return True


cdef bint put_optional_int(Out* out, object v) except -1:
    """None or an int as json writes it; False for anything else."""
    if v is None:
        put(out, b"null", 4)
    elif type(v) is int:
        put_int(out, v)
    else:
        return False
    return True


cdef bint put_int_field(Out* out, const char* name, object v) except -1:
    """`name` (`"name":` after `{` or `,`), then None or an int; False for anything else."""
    put_literal(out, name)
    return put_optional_int(out, v)


cdef bint put_ttls(Out* out, const char* name, object ttls) except -1:
    """`,"name":[[s(item),ms],...]` (`jsonl.record_json`'s TTL lists); nothing for None, False
    for anything but a list of (bytes, int) pairs."""
    if ttls is None:
        return True
    if type(ttls) is not list:
        return False
    cdef Py_ssize_t i
    put_literal(out, name)
    for i, pair in enumerate(<list>ttls):
        if type(pair) is not tuple or len(pair) != 2 or type(pair[0]) is not bytes or type(pair[1]) is not int:
            return False
        put(out, b",[" if i else b"[", 2 if i else 1)
        put_bytes(out, pair[0])
        put(out, b",", 1)
        put_int(out, pair[1])
        put(out, b"]", 1)
    put(out, b"]", 1)
    return True


cdef bint put_record(Out* out, record, context) except -1:
    """`record`'s line as `jsonl.record_json` gives it, serialized, when its value is left in
    its containers' entries (`KeyRecord.packed`), a string whose record is under `context` bytes
    (a longer one is read a piece at a time: `jsonl.write_long_string`), or a non-empty list of
    items `put_items` writes; False, written in part, for any other record."""
    if <long long>record.value_kind == STRING and record.size >= <Py_ssize_t>context:
        return False
    string = record.plain_string()
    if string is not None:
        if not put_head(out, record):
            return False
        put_bytes(out, string)
        put(out, b"}\n", 2)
        return True
    packed = record.packed()
    if packed is not None:
        if not (put_head(out, record) and put_packed(out, packed, out.size + <Py_ssize_t>context)):
            return False
        put(out, b"}\n", 2)
        return True
    decoded = record._decode()
    value = decoded.value
    if not (type(value) is bytes or type(value) is list and value):
        return False  # a stream, a module, a sketch; an empty list: the server may skip the key
    if not put_head(out, record):
        return False
    if type(value) is bytes:
        put_bytes(out, value)
    elif not put_items(out, value):
        return False
    if not (put_ttls(out, b',"field_expire_at_ms":[', decoded.field_expire_at_ms)
            and put_ttls(out, b',"member_expire_at_ms":[', decoded.member_expire_at_ms)):
        return False
    put(out, b"}\n", 2)
    return True


cdef bint put_head(Out* out, record) except -1:
    """A line's fields up to `"value":`; False, written in part, for a field of another kind."""
    key, type_name = record.key, record.type_name
    if type(key) is not bytes or type(type_name) is not str:
        return False
    if not put_int_field(out, b'{"db":', record.db):
        return False
    put_literal(out, b',"key":')
    put_bytes(out, key)
    put_literal(out, b',"type":')
    put_str(out, type_name)
    if not (put_int_field(out, b',"rdb_type":', record.rdb_type)
            and put_int_field(out, b',"expire_at_ms":', record.expire_at_ms)
            and put_int_field(out, b',"idle_s":', record.idle)
            and put_int_field(out, b',"freq":', record.freq)):
        return False
    put_literal(out, b',"value":')
    return True


cdef int put_entry(Out* out, object part, _Elements elements, Py_ssize_t k) except -1:
    """Entry `k` of a container as `rdbspec.read.elements.scalar` gives it, serialized: from the columns
    (`elements`, native backend) or the list (`part`, Python backend)."""
    if elements is not None:
        return elements.put(out, k)
    return put_object(out, part[k])


cdef bint put_packed(Out* out, packed, Py_ssize_t limit) except -1:
    """A `values.Packed` value as `jsonl.value_json` writes the list `values.decode` makes of it:
    [item,...], [[field,value],...] or [[member,score],...]; False for another shape, or (written
    in part) once the text of parts read as they are iterated reaches `limit` bytes of `out`."""
    shape = packed.shape
    if shape not in SHAPES:
        return False
    cdef bint bounded = type(packed.parts) is not list
    cdef Py_ssize_t written = 0
    put(out, b"[", 1)
    for part in packed.parts:
        written = put_part(out, part, shape, packed.scores, written)
        if bounded and out.size >= limit:
            return False
    put(out, b"]", 1)
    return True


SHAPES = frozenset(("items", "pairs", "scored"))


cdef Py_ssize_t put_part(Out* out, part, str shape, list scores, Py_ssize_t written) except -1:
    """The elements of one part of a `values.Packed` of `shape`, each after a comma once
    `written` elements were; returns how many are written in all. Scored elements take their
    score from `scores` (a container's, read by strtod) or else from the entry after the member
    (a chunk of a hashtable-encoded sorted set: a double)."""
    cdef bint pairs = shape == "pairs", scored = shape == "scored"
    cdef _Elements elements = _Elements(part) if isinstance(part, ScalarColumns) else None
    cdef Py_ssize_t k, n = len(part)
    cdef Py_ssize_t count = len(scores) if scores is not None else n // 2 if pairs or scored else n
    for k in range(count):
        if written:
            put(out, b",", 1)
        written += 1
        if not (pairs or scored):
            put_entry(out, part, elements, k)
            continue
        put(out, b"[", 1)
        put_entry(out, part, elements, 2 * k)
        put(out, b",", 1)
        if scores is not None:
            put_number(out, scores[k])
        elif scored:
            put_number(out, elements.number(2 * k + 1) if elements is not None else part[2 * k + 1])
        else:
            put_entry(out, part, elements, 2 * k + 1)
        put(out, b"]", 1)
    return written


def encode_part(part, str shape) -> bytes:
    """One chunk of a `values.Packed` value of `shape` (no scores of its own), its elements
    serialized as `put_packed` writes them and joined by commas, without the brackets."""
    if shape not in SHAPES:
        raise ValueError(f"a Packed value has no shape {shape!r}")
    cdef Out out = Out(NULL, 0, 0)
    try:
        put_part(&out, part, shape, None, 0)
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)


cdef bint put_str(Out* out, str text) except -1:
    cdef Py_ssize_t size
    cdef const char* data = PyUnicode_AsUTF8AndSize(text, &size)
    return put_text(out, <const uint8_t*>data, size)


cdef bint put_row(Out* out, row, context) except -1:
    """A row as the JSON object of its names (`context`: `{"name":` then `,"name":`...) and
    values: None, ints, str, and byte strings as `jsonl.s` gives them."""
    cdef tuple prefixes = context
    cdef bytes prefix
    cdef Py_ssize_t i
    if len(row) != len(prefixes):
        raise ValueError(f"a row of {len(row)} values for {len(prefixes)} names")
    for i in range(len(prefixes)):
        prefix = prefixes[i]
        put(out, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))
        value = row[i]
        if type(value) is bytes:
            put_bytes(out, value)
        elif type(value) is str:
            put_str(out, value)
        elif not put_optional_int(out, value):
            raise TypeError(f"{type(value).__name__} is not a row value")
    put(out, b"}\n", 2)
    return True


ctypedef bint (*LineWriter)(Out* out, object item, object context) except -1

cdef Py_ssize_t WRITE_AT = 1 << 20  # bytes of lines gathered before they are written


cdef int write_each(items, LineWriter put_line, context, write, other) except -1:
    """`put_line` of each item, the lines gathered and given to `write` a megabyte at a time.
    An item `put_line` does not write (False) goes to `other(item)`, after the lines before it
    were written. An exception leaves no partial line: the lines before it are written."""
    cdef Out out = Out(NULL, 0, 0)
    cdef Py_ssize_t start
    try:
        for item in items:
            start = out.size
            try:
                written = put_line(&out, item, context)
            except BaseException:
                out.size = start
                raise
            if not written:
                out.size = start
                give(&out, write)
                other(item)
            elif out.size >= WRITE_AT:
                give(&out, write)
    finally:
        try:
            give(&out, write)
        finally:
            PyMem_Free(out.data)
    return 0


cdef int give(Out* out, write) except -1:
    """Hands the lines gathered to `write`; a buffer grown past a few megabytes by a long line
    is let go."""
    if out.size == 0:
        return 0
    data = PyBytes_FromStringAndSize(out.data, out.size)
    out.size = 0
    if out.cap > 4 * WRITE_AT:
        PyMem_Free(out.data)
        out.data, out.cap = NULL, 0
    write(data)
    return 0


def write_lines(records, write, other, Py_ssize_t line_limit) -> None:
    """Each key record's JSON line (`jsonl.record_json`'s, serialized), given to `write` a
    megabyte at a time; a record whose value is not a string or a non-empty list (a stream, a
    module, a sketch, an empty container), or is read in parts (`values.Packed`) whose line
    reaches `line_limit` bytes, goes to `other(record)` (see `write_each`)."""
    write_each(records, put_record, line_limit, write, other)


def write_rows(names, rows, write) -> None:
    """Each row (values: None, int, str, bytes) as the JSON object of `names` and its values,
    one line each, given to `write` a megabyte at a time."""
    cdef Out out = Out(NULL, 0, 0)
    prefixes = []
    try:
        for i, name in enumerate(names):
            put(&out, b"," if i else b"{", 1)
            put_str(&out, name)
            put(&out, b":", 1)
            prefixes.append(PyBytes_FromStringAndSize(out.data, out.size))
            out.size = 0
    finally:
        PyMem_Free(out.data)
    write_each(rows, put_row, tuple(prefixes), write, None)
