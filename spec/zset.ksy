meta:
  id: zset
  title: Sorted sets stored as member/score lists (types 3 and 5)
  endian: le
  imports:
    - rdb_string
doc: |
  Sorted-set values that are not a container blob (notes §4.1). The root type is empty.
  Listpack (17) and ziplist (12) sorted sets are `rdb_string::rdb_blob` values in the record switch.
doc-ref: redis src/rdb.c rdbSaveObject
types:
  zset_legacy:
    doc: ZSET (type 3, legacy) - `len n`, then n × (member, string-encoded double).
    doc-ref: redis src/rdb.c rdbLoadDoubleValue
    seq:
      - id: num_members
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        doc: Number of members.
      - id: entries
        type: zset_entry
        repeat: expr
        repeat-expr: num_members.value
        doc: The members with their scores.
  zset_entry:
    doc: One type-3 member and its string score.
    doc-ref: redis src/rdb.c rdbLoadDoubleValue
    seq:
      - id: member
        type: rdb_string
        doc: The member.
      - id: score
        type: rdb_string::rdb_double
        doc: The score as text (or NaN/inf markers).
  zset_2:
    doc: ZSET_2 (type 5) - `len n`, then n × (member, 8-byte LE binary double). No order is assumed.
    doc-ref: redis src/rdb.c rdbSaveBinaryDoubleValue
    seq:
      - id: num_members
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        doc: Number of members.
      - id: entries
        type: zset_2_entry
        repeat: expr
        repeat-expr: num_members.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        -rdbspec-splits: true
        doc: The members with their scores.
  zset_2_entry:
    doc: One type-5 member and its binary score.
    doc-ref: redis src/rdb.c rdbSaveBinaryDoubleValue
    seq:
      - id: member
        type: rdb_string
        doc: The member.
      - id: score
        type: f8
        doc: The score, IEEE-754 binary64 little-endian.
