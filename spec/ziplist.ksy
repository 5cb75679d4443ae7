meta:
  id: ziplist
  title: Redis ziplist (read-only legacy encoding)
  endian: le
doc: |
  A ziplist (notes §5.2): u32 LE zlbytes (== blob size), u32 LE zltail (offset of the last
  entry), u16 LE zllen (65535 = unknown), the entries, and the end byte 0xFF.
  Used by types 10, 12, 13 and by type-14 quicklist nodes.
doc-ref: redis src/ziplist.c ziplistValidateIntegrity
seq:
  - id: zlbytes
    type: u4
    -rdbspec-write: 10 + body._sizeof + 1
    valid:
      expr: _ >= 11 and _ == _io.size
    -rdbspec-message: 'expected the blob size {_io.size} (at least 11), found {_}'
    doc: Total size of the ziplist in bytes; must equal the blob size.
  - id: zltail
    type: u4
    -rdbspec-write: 'body.entries.size == 0 ? 10 : 10 + body._sizeof - body._last_sizeof'
    valid:
      expr: _ <= _io.size - 1
    -rdbspec-message: 'expected an offset inside the {_io.size}-byte ziplist, found {_}'
    doc: Offset of the last entry (or of the end byte when the ziplist is empty).
  - id: zllen
    type: u2
    -rdbspec-write: 'body.entries.size < 65535 ? body.entries.size : 65535'
    doc: Number of entries, or 65535 when unknown.
  - id: body
    size: zlbytes - 11
    type: zl_body
    doc: The entries, without the 10-byte header and the end byte.
  - id: terminator
    type: u1
    valid:
      eq: 0xff
    doc: ZIP_END, always 0xFF.
instances:
  entries:
    value: body.entries
    doc: The entries of the ziplist (each one a scalar, see `zl_entry`).
types:
  zl_body:
    doc: The entry area of a ziplist (between the header and the end byte).
    doc-ref: redis src/ziplist.c zipEntrySafe
    seq:
      - id: entries
        type: zl_entry
        repeat: eos
        -rdbspec-write: {prevlen: _prev_sizeof}
        doc: Ziplist entries, in order.
  zl_entry:
    -rdbspec-scalar: [int_value, str_value]
    -rdbspec-scalar-tests: {is_int: int_value}
    -rdbspec-write-from: [int_value, str_value, prevlen]
    doc: |
      One ziplist entry: prevlen (1 byte, or 0xFE + u32 LE), an encoding byte, then data.
      String lengths of the 14-bit and 32-bit forms are BIG-endian; integers are little-endian;
      0xF1..0xFD are 4-bit immediates 0..12. Exactly one of `int_value` and `str_value` is non-null.
    doc-ref: redis src/ziplist.c zipEntrySafe
    seq:
      - id: prevlen_b0
        type: u1
        -rdbspec-write: 'prevlen < 254 ? prevlen : 0xfe'
        valid:
          expr: _ != 0xff
        -rdbspec-message: 'expected the size of the previous entry (0xff is not one), found {_:#04x}'
        doc: Size of the previous entry if < 254; 0xFE means a u32 LE follows; 0xFF is invalid.
      - id: prevlen_u32
        type: u4
        if: prevlen_b0 == 0xfe
        -rdbspec-write: prevlen
        doc: Size of the previous entry (5-byte prevlen form).
      - id: enc
        type: u1
        -rdbspec-write: >-
          int_value != null ? (
            int_value >= 0 and int_value <= 12 ? 0xf1 + int_value :
            int_value >= -128 and int_value <= 127 ? 0xfe :
            int_value >= -32768 and int_value <= 32767 ? 0xc0 :
            int_value >= -8388608 and int_value <= 8388607 ? 0xf0 :
            int_value >= -2147483648 and int_value <= 2147483647 ? 0xd0 : 0xe0) :
          str_value.size <= 0x3f ? str_value.size :
          str_value.size <= 0x3fff ? 0x40 | (str_value.size >> 8) : 0x80
        valid:
          expr: >-
            _ < 0x80 or _ == 0x80 or _ == 0xc0 or _ == 0xd0 or _ == 0xe0 or
            (_ >= 0xf0 and _ <= 0xfe)
        -rdbspec-message: 'expected a ziplist encoding byte, found {_:#04x}'
        doc: |
          Encoding: 00pppppp 6-bit string, 01pppppp 14-bit string, 0x80 32-bit string,
          0xC0 int16, 0xD0 int32, 0xE0 int64, 0xF0 int24, 0xFE int8, 0xF1..0xFD 4-bit immediate.
      - id: b1
        type: u1
        if: (enc & 0xc0) == 0x40
        -rdbspec-write: str_value.size & 0xff
        doc: Low 8 bits of a 14-bit (big-endian) string length.
      - id: len32
        type: u4be
        if: enc == 0x80
        -rdbspec-write: str_value.size
        doc: Big-endian length of a 32-bit string.
      - id: int16
        type: s2
        if: enc == 0xc0
        -rdbspec-write: int_value
        doc: A 16-bit little-endian integer.
      - id: int32
        type: s4
        if: enc == 0xd0
        -rdbspec-write: int_value
        doc: A 32-bit little-endian integer.
      - id: int64
        type: s8
        if: enc == 0xe0
        -rdbspec-write: int_value
        doc: A 64-bit little-endian integer.
      - id: int24_lo
        type: u2
        if: enc == 0xf0
        -rdbspec-write: int_value & 0xffff
        doc: Low 16 bits of a 24-bit little-endian integer.
      - id: int24_hi
        type: u1
        if: enc == 0xf0
        -rdbspec-write: (int_value >> 16) & 0xff
        doc: High 8 bits of a 24-bit little-endian integer.
      - id: int8
        type: s1
        if: enc == 0xfe
        -rdbspec-write: int_value
        doc: An 8-bit integer.
      - id: str
        size: str_len
        if: not is_int
        -rdbspec-write: str_value
        doc: The bytes of a string entry.
    instances:
      is_int:
        value: enc >= 0xc0
        doc: True when the entry is an integer.
      prevlen:
        value: 'prevlen_b0 == 0xfe ? prevlen_u32 : prevlen_b0'
        doc: Raw size of the previous entry (0 for the first entry).
      str_len:
        value: >-
          enc < 0x40 ? enc :
          (enc & 0xc0) == 0x40 ? (((enc & 0x3f) << 8) | b1) :
          enc == 0x80 ? len32 : 0
        doc: Length of the string data (0 for integers).
      uint24:
        value: (int24_hi << 16) | int24_lo
        if: enc == 0xf0
        doc: The 24 bits of an int24, before sign extension.
      int_value:
        value: >-
          enc == 0xc0 ? int16 :
          enc == 0xd0 ? int32 :
          enc == 0xe0 ? int64 :
          enc == 0xf0 ? (uint24 >= 0x800000 ? uint24 - 0x1000000 : uint24) :
          enc == 0xfe ? int8 :
          (enc & 0x0f) - 1
        if: is_int
        doc: The value of an integer entry (int8/16/24/32/64 sign-extended, or a 4-bit immediate 0..12).
      str_value:
        value: str
        if: not is_int
        doc: The bytes of a string entry.
