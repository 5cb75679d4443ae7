meta:
  id: rdb_string
  title: RDB length encoding, string encodings, blobs and legacy string doubles
  endian: le
  imports:
    - listpack
    - ziplist
    - intset
    - zipmap
    - stream
doc: |
  An RDB string (notes §3.2): a length (§3.1), then either the raw bytes, an integer
  stored as INT8/INT16/INT32 (little-endian, decoded by the server to its decimal text),
  or an LZF-compressed run (clen, ulen, data). Kaitai cannot unify bytes and ints, so the
  three forms are separate fields: `raw`, `int_value`, `lzf` (the decompressed bytes).
  Exactly one of them is present.
doc-ref: redis src/rdb.c rdbGenericLoadStringObject
-rdbspec-element: [raw, int_value, lzf]
seq:
  - id: len
    type: rdb_len
    -rdbspec-write:
      is_encoded: raw == null
      value: >-
        raw != null ? raw.size :
        int_value != null ? (int_value >= -128 and int_value <= 127 ? string_encoding::int8.to_i :
                             int_value >= -32768 and int_value <= 32767 ? string_encoding::int16.to_i :
                             string_encoding::int32.to_i) : string_encoding::lzf.to_i
    valid:
      expr: not _.is_encoded or _.value <= string_encoding::lzf.to_i
    -rdbspec-message: 'expected a string length or encoding 0..3 (INT8, INT16, INT32, LZF), found encoding {_.value}'
    doc: |
      Length of a plain string, or (when `len.is_encoded`) the encoding (`string_encoding`):
      0 INT8, 1 INT16, 2 INT32, 3 LZF. Encodings 4..63 are invalid
      ("Unknown RDB string encoding type").
  - id: raw
    size: len.value
    if: not len.is_encoded
    doc: The bytes of a plain (not encoded) string.
  - id: int_value
    type:
      switch-on: len.value
      cases:
        string_encoding::int8.to_i: s1
        string_encoding::int16.to_i: s2
        string_encoding::int32.to_i: s4
    if: is_int
    doc: |
      An integer-encoded string (INT8, INT16 LE or INT32 LE, two's complement). The server
      turns it back into its decimal ASCII text.
  - id: clen
    type: rdb_len
    if: is_lzf
    -rdbspec-write: {is_encoded: false, value: lzf._stored_size}
    doc: Compressed length of an LZF string (written before the uncompressed length).
  - id: ulen
    type: rdb_len
    if: is_lzf
    -rdbspec-write: {is_encoded: false, value: lzf.size}
    doc: Uncompressed length of an LZF string; decompression must produce exactly this many bytes.
  - id: lzf
    size: clen.value
    process: rdb_lzf(ulen.value)
    if: is_lzf
    doc: The decompressed bytes of an LZF string.
instances:
  is_int:
    value: len.is_encoded and len.value < string_encoding::lzf.to_i
    doc: True when the string is stored as an INT8/INT16/INT32 integer.
  is_lzf:
    value: len.is_encoded and len.value == string_encoding::lzf.to_i
    doc: True when the string is LZF-compressed.
types:
  rdb_len:
    doc: |
      RDB length encoding (notes §3.1). The two top bits of the first byte select the form:
      00 = 6-bit length, 01 = 14-bit big-endian length, 0x80 = 32-bit big-endian length,
      0x81 = 64-bit big-endian length, 11 = "encoded" marker whose low 6 bits name a string
      encoding. Other 10xxxxxx bytes are invalid ("Unknown length encoding").
    doc-ref: redis src/rdb.c rdbSaveLen
    -rdbspec-write-from: [value, is_encoded]
    seq:
      - id: b0
        type: u1
        -rdbspec-write: >-
          is_encoded ? 0xc0 | value :
          value < 0x40 ? value : value < 0x4000 ? 0x40 | (value >> 8) : value <= 0xffffffff ? 0x80 : 0x81
        valid:
          expr: _ < 0x80 or _ >= 0xc0 or _ == 0x80 or _ == 0x81
        -rdbspec-message: 'expected a length (00/01 prefix, 0x80, 0x81) or an encoding (11 prefix), found {_:#04x}'
        doc: First byte; its two top bits select the form, the low 6 bits carry data for the 6/14-bit and encoded forms.
      - id: b1
        type: u1
        if: b0 >> 6 == 1
        -rdbspec-write: value & 0xff
        doc: Low 8 bits of a 14-bit length.
      - id: len32
        type: u4be
        if: b0 == 0x80
        -rdbspec-write: value
        doc: A 32-bit big-endian length.
      - id: len64
        type: u8be
        if: b0 == 0x81
        -rdbspec-write: value
        doc: A 64-bit big-endian length (RDB 8 and later).
    instances:
      is_encoded:
        value: b0 >> 6 == 3
        doc: True for the 11xxxxxx "encoded" marker (a string encoding, not a length).
      value:
        value: >-
          b0 >> 6 == 1 ? (((b0 & 0x3f) << 8) | b1) :
          b0 == 0x80 ? len32 :
          b0 == 0x81 ? len64 :
          (b0 & 0x3f)
        doc: The decoded length, or the encoding number when `is_encoded`.
  rdb_blob:
    doc: |
      An RDB string whose bytes are a serialized container (listpack, ziplist, intset, zipmap
      or stream node listpack). The blob may be LZF-compressed (notes §3.2: any string can be);
      either way its (decompressed) bytes are given to the parser selected by `kind` as a
      substream, so `_io.size` is the blob size. Integer encodings are never used for blobs.
    doc-ref: redis src/rdb.c rdbGenericLoadStringObject
    params:
      - id: kind
        type: u1
        enum: blob_kind
        doc: Which container the blob holds.
    seq:
      - id: len
        type: rdb_len
        valid:
          expr: not _.is_encoded or _.value == string_encoding::lzf.to_i
        -rdbspec-write: {is_encoded: lzf != null, value: 'lzf != null ? string_encoding::lzf.to_i : plain._sizeof'}
        -rdbspec-message: 'expected a blob length or encoding 3 (LZF), found encoding {_.value}'
        doc: Plain blob length, or the encoded marker 3 (LZF). INT encodings are rejected.
      - id: plain
        size: len.value
        type:
          switch-on: kind
          cases:
            'blob_kind::listpack': listpack
            'blob_kind::ziplist': ziplist
            'blob_kind::intset': intset
            'blob_kind::zipmap': zipmap
            'blob_kind::stream_listpack': stream::stream_listpack
        if: not len.is_encoded
        doc: The container parsed from an uncompressed blob.
      - id: clen
        type: rdb_len
        if: len.is_encoded
        -rdbspec-write: {is_encoded: false, value: lzf._stored_size}
        doc: Compressed length of an LZF blob.
      - id: ulen
        type: rdb_len
        if: len.is_encoded
        -rdbspec-write: {is_encoded: false, value: lzf._sizeof}
        doc: Uncompressed length of an LZF blob.
      - id: lzf
        size: clen.value
        process: rdb_lzf(ulen.value)
        type:
          switch-on: kind
          cases:
            'blob_kind::listpack': listpack
            'blob_kind::ziplist': ziplist
            'blob_kind::intset': intset
            'blob_kind::zipmap': zipmap
            'blob_kind::stream_listpack': stream::stream_listpack
        if: len.is_encoded
        doc: The container parsed from the LZF-decompressed bytes.
    instances:
      is_lzf:
        value: len.is_encoded
        doc: True when the blob was LZF-compressed.
      payload:
        value: 'len.is_encoded ? lzf : plain'
        doc: The parsed container, whichever form the blob was stored in.
  rdb_double:
    doc: |
      Legacy string-encoded double (type 3 ZSET scores, notes §3.4): one length byte L,
      then L ASCII bytes. L = 253 is NaN, 254 is +inf, 255 is -inf (no bytes follow).
    doc-ref: redis src/rdb.c rdbSaveDoubleValue
    seq:
      - id: len
        type: u1
        doc: Length of the text, or 253 (NaN), 254 (+inf), 255 (-inf).
      - id: text
        type: str
        size: len
        encoding: ASCII
        if: len < 253
        doc: The number as printed by the server (`%.17g`).
    instances:
      is_nan:
        value: len == 253
        doc: True for NaN (the loader rejects NaN scores).
      is_pos_inf:
        value: len == 254
        doc: True for +inf.
      is_neg_inf:
        value: len == 255
        doc: True for -inf.
enums:
  string_encoding:
    0:
      id: int8
      doc: RDB_ENC_INT8, an integer in one byte.
    1:
      id: int16
      doc: RDB_ENC_INT16, an integer in two bytes, little-endian.
    2:
      id: int32
      doc: RDB_ENC_INT32, an integer in four bytes, little-endian.
    3:
      id: lzf
      doc: RDB_ENC_LZF, an LZF-compressed string (clen, ulen, then the compressed bytes).
  blob_kind:
    1: listpack
    2: ziplist
    3: intset
    4: zipmap
    5: stream_listpack
