meta:
  id: listpack
  title: Redis listpack
  endian: le
doc: |
  A listpack (notes §5.1): u32 LE total_bytes (the whole blob, header and EOF byte included),
  u16 LE num_elements (65535 = unknown), the entries, and the EOF byte 0xFF.
  The entries are parsed from a substream that ends right before the EOF byte, so an 0xFF
  encoding byte inside it is invalid.
doc-ref: redis src/listpack.c lpValidateIntegrity
seq:
  - id: total_bytes
    type: u4
    -rdbspec-write: 6 + body._sizeof + 1
    valid:
      expr: _ >= 7 and _ == _io.size
    -rdbspec-message: 'expected the blob size {_io.size} (at least 7), found {_}'
    doc: Total size of the listpack in bytes; must equal the blob size.
  - id: num_elements
    type: u2
    -rdbspec-write: 'body.entries.size < 65535 ? body.entries.size : 65535'
    doc: Number of entries, or 65535 when unknown (count by scanning).
  - id: body
    size: total_bytes - 7
    type: lp_body
    doc: The entries, without the header and the EOF byte.
  - id: terminator
    type: u1
    valid:
      eq: 0xff
    doc: LP_EOF, always 0xFF.
instances:
  entries:
    value: body.entries
    doc: The entries of the listpack (each one a scalar, see `lp_entry`).
types:
  lp_body:
    doc: The entry area of a listpack (between the 6-byte header and the EOF byte).
    doc-ref: redis src/listpack.c lpValidateNext
    seq:
      - id: entries
        type: lp_entry
        repeat: eos
        doc: Listpack entries, in order.
  lp_entry:
    -rdbspec-scalar: [int_value, str_value]
    -rdbspec-scalar-tests: {is_int: int_value}
    -rdbspec-write-from: [int_value, str_value]
    doc: |
      One listpack entry: an encoding byte (with data), then the backlen (notes §5.1).
      Exactly one of `int_value` (every integer encoding, sign-extended) and `str_value`
      (6-bit, 12-bit and 32-bit strings) is non-null. Encoding bytes 0xF5..0xFF are invalid.
      The backlen stores the size of encoding+data in 1..5 bytes and is validated.
    doc-ref: redis src/listpack.c lpCurrentEncodedSizeUnsafe
    seq:
      - id: enc
        type: u1
        -rdbspec-write: >-
          int_value != null ? (
            int_value >= 0 and int_value <= 127 ? int_value :
            int_value >= -4096 and int_value <= 4095 ? 0xc0 | ((int_value & 0x1fff) >> 8) :
            int_value >= -32768 and int_value <= 32767 ? 0xf1 :
            int_value >= -8388608 and int_value <= 8388607 ? 0xf2 :
            int_value >= -2147483648 and int_value <= 2147483647 ? 0xf3 : 0xf4) :
          str_value.size < 64 ? 0x80 | str_value.size :
          str_value.size < 4096 ? 0xe0 | (str_value.size >> 8) : 0xf0
        valid:
          expr: _ < 0xf5
        -rdbspec-message: 'expected an encoding byte below 0xf5, found {_:#04x}'
        doc: |
          Encoding byte: 0xxxxxxx 7-bit uint, 10xxxxxx 6-bit string, 110xxxxx 13-bit int,
          1110xxxx 12-bit string, 0xF0 32-bit string, 0xF1 int16, 0xF2 int24, 0xF3 int32, 0xF4 int64.
      - id: b1
        type: u1
        if: (enc & 0xe0) == 0xc0 or (enc & 0xf0) == 0xe0
        -rdbspec-write: 'int_value != null ? int_value & 0xff : str_value.size & 0xff'
        doc: Second header byte (low 8 bits) of a 13-bit integer or of a 12-bit string length.
      - id: len32
        type: u4
        if: enc == 0xf0
        -rdbspec-write: str_value.size
        doc: Little-endian length of a 32-bit string.
      - id: int16
        type: s2
        if: enc == 0xf1
        -rdbspec-write: int_value
        doc: A 16-bit little-endian two's complement integer.
      - id: int24_lo
        type: u2
        if: enc == 0xf2
        -rdbspec-write: int_value & 0xffff
        doc: Low 16 bits of a 24-bit little-endian two's complement integer.
      - id: int24_hi
        type: u1
        if: enc == 0xf2
        -rdbspec-write: (int_value >> 16) & 0xff
        doc: High 8 bits of a 24-bit little-endian two's complement integer.
      - id: int32
        type: s4
        if: enc == 0xf3
        -rdbspec-write: int_value
        doc: A 32-bit little-endian two's complement integer.
      - id: int64
        type: s8
        if: enc == 0xf4
        -rdbspec-write: int_value
        doc: A 64-bit little-endian two's complement integer.
      - id: str
        size: str_len
        if: not is_int
        -rdbspec-write: str_value
        doc: The bytes of a string entry.
      - id: backlen
        size: backlen_size
        -rdbspec-write: >-
          backlen_size == 1 ? [entry_len] :
          backlen_size == 2 ? [entry_len >> 7, (entry_len & 127) | 128] :
          backlen_size == 3 ? [entry_len >> 14, ((entry_len >> 7) & 127) | 128, (entry_len & 127) | 128] :
          backlen_size == 4 ? [entry_len >> 21, ((entry_len >> 14) & 127) | 128, ((entry_len >> 7) & 127) | 128,
                               (entry_len & 127) | 128] :
          [entry_len >> 28, ((entry_len >> 21) & 127) | 128, ((entry_len >> 14) & 127) | 128,
           ((entry_len >> 7) & 127) | 128, (entry_len & 127) | 128]
        valid:
          expr: >-
            backlen_value == entry_len and
            (backlen_size < 2 or _[1] >= 128) and
            (backlen_size < 3 or _[2] >= 128) and
            (backlen_size < 4 or _[3] >= 128) and
            (backlen_size < 5 or _[4] >= 128)
        -rdbspec-message: 'expected the entry size {entry_len} in {backlen_size} bytes, found {_}'
        -rdbspec-warn: redis src/listpack.c lpValidateNext (checked only with sanitize-dump-payload yes)
        doc: |
          Size of encoding+data, stored after the data in 1..5 bytes: the first byte holds the
          most significant 7 bits (bit 7 clear), every later byte has bit 7 set.
    instances:
      is_int:
        value: enc < 0x80 or (enc & 0xe0) == 0xc0 or (enc >= 0xf1 and enc <= 0xf4)
        doc: True when the entry is an integer.
      str_len:
        value: >-
          (enc & 0xc0) == 0x80 ? (enc & 0x3f) :
          (enc & 0xf0) == 0xe0 ? (((enc & 0x0f) << 8) | b1) :
          enc == 0xf0 ? len32 : 0
        doc: Length of the string data (0 for integers).
      header_len:
        value: >-
          enc < 0x80 ? 1 : (enc & 0xc0) == 0x80 ? 1 : (enc & 0xe0) == 0xc0 ? 2 :
          (enc & 0xf0) == 0xe0 ? 2 : enc == 0xf0 ? 5 : enc == 0xf1 ? 3 :
          enc == 0xf2 ? 4 : enc == 0xf3 ? 5 : 9
        doc: Size of the encoding byte plus length bytes (plus integer data for integer encodings).
      entry_len:
        value: header_len + str_len
        doc: Size of encoding+data, the number the backlen stores.
      backlen_size:
        value: >-
          entry_len <= 127 ? 1 : entry_len < 16383 ? 2 : entry_len < 2097151 ? 3 :
          entry_len < 268435455 ? 4 : 5
        doc: Number of backlen bytes for `entry_len` (lpEncodeBacklen thresholds).
      backlen_value:
        value: >-
          backlen_size == 1 ? backlen[0] :
          backlen_size == 2 ? ((backlen[0] << 7) | (backlen[1] & 127)) :
          backlen_size == 3 ? ((backlen[0] << 14) | ((backlen[1] & 127) << 7) | (backlen[2] & 127)) :
          backlen_size == 4 ? ((backlen[0] << 21) | ((backlen[1] & 127) << 14) | ((backlen[2] & 127) << 7) | (backlen[3] & 127)) :
          ((backlen[0] << 28) | ((backlen[1] & 127) << 21) | ((backlen[2] & 127) << 14) | ((backlen[3] & 127) << 7) | (backlen[4] & 127))
        doc: The decoded backlen.
      int_value:
        value: >-
          enc < 0x80 ? enc :
          (enc & 0xe0) == 0xc0 ? (uint13 >= 4096 ? uint13 - 8192 : uint13) :
          enc == 0xf1 ? int16 :
          enc == 0xf2 ? (uint24 >= 0x800000 ? uint24 - 0x1000000 : uint24) :
          enc == 0xf3 ? int32 :
          enc == 0xf4 ? int64 : 0
        if: is_int
        doc: |
          The value of an integer entry (7-bit, 13-bit, int16, int24, int32, int64; sign-extended).
          The final 0 is never taken (`is_int` leaves 0xF4 last); naming 0xF4 lets a generator see
          that `int64` is read only where it is present.
      uint13:
        value: ((enc & 0x1f) << 8) | b1
        if: (enc & 0xe0) == 0xc0
        doc: The 13 bits of a 13-bit integer, before sign extension.
      uint24:
        value: (int24_hi << 16) | int24_lo
        if: enc == 0xf2
        doc: The 24 bits of an int24, before sign extension.
      str_value:
        value: str
        if: not is_int
        doc: The bytes of a string entry (6-bit, 12-bit or 32-bit length).
