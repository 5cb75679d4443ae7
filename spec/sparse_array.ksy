meta:
  id: sparse_array
  title: Redis sparse arrays (type 28, RDB 14)
  endian: le
  imports:
    - rdb_string
doc: |
  ARRAY values (Redis 8.8, RDB 14). The root type is empty; `array_value` is the value
  of a type-28 key: the number of elements (at least one), an optional last insert index, then each
  element that holds a value as its logical index, a tag and the payload the tag names. The saver
  writes the elements in ascending index order; the loader checks neither order nor duplicates
  (a repeated index overwrites the earlier one).
doc-ref: redis src/rdb.c rdbSaveObject (OBJ_ARRAY, rdbSaveArraySlice, rdbSaveArrayElement)
enums:
  element_tag:
    0:
      id: sds
      doc: AR_RDB_TAG_SDS, a string of any length (an RDB string).
    1:
      id: int
      doc: AR_RDB_TAG_INT, a signed 64-bit integer, 8 bytes little-endian (rdbSaveSignedInteger).
    2:
      id: float
      doc: AR_RDB_TAG_FLOAT, an IEEE-754 double, 8 bytes little-endian (rdbSaveBinaryDoubleValue).
    3:
      id: smallstr
      doc: AR_RDB_TAG_SMALLSTR, a string of at most AR_SMALLSTR_MAXLEN bytes (an RDB string).
types:
  array_value:
    doc: |
      An ARRAY value (type 28): `len count`, `len insert_idx_flag`, `len insert_idx` when the flag
      is 1 (UINT64_MAX is a valid index, so "none" needs the flag), then `count` elements.
    doc-ref: redis src/rdb.c rdbLoadObject (RDB_TYPE_ARRAY)
    seq:
      - id: count
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: elements.size}
        valid:
          expr: _.value >= 1
        -rdbspec-message: 'expected at least one element ("Empty array (count == 0) is invalid"), found count {_.value}'
        doc: Number of elements that hold a value; 0 is refused (rdbLoadObject "Empty array (count == 0) is invalid").
      - id: insert_idx_flag
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: 'insert_idx != null ? 1 : 0'}
        valid:
          expr: _.value <= 1
        -rdbspec-message: 'expected the insert index flag 0 (none) or 1 (an index follows), found {_.value}'
        doc: 1 when the last insert index follows, 0 when the array has none; anything else is refused (rdbLoadObject "Invalid array insert_idx_flag").
      - id: insert_idx
        type: rdb_string::rdb_len
        if: insert_idx_flag.value == 1
        doc: The last insert index (ARNEXT answers the one after it); not checked against the elements' indexes.
      - id: elements
        type: array_element
        repeat: expr
        repeat-expr: count.value
        doc: The elements, in ascending index order as the server writes them.
  array_element:
    doc: One element of an ARRAY value - its index, its tag and the payload the tag names.
    doc-ref: redis src/rdb.c rdbSaveArrayElement
    seq:
      - id: index
        type: rdb_string::rdb_len
        valid:
          expr: not _.is_encoded and _.value != 0xffffffffffffffff
        -rdbspec-message: 'expected an element index (a plain length below 2**64 - 1), found {_.is_encoded ? "encoding" : "index":s} {_.value}'
        doc: The logical index; an encoded length or UINT64_MAX is refused (rdbLoadObject "Invalid array index").
      - id: tag
        type: rdb_string::rdb_len
        valid:
          expr: _.value <= element_tag::smallstr.to_i
        -rdbspec-message: 'expected an element tag 0..3 (SDS, INT, FLOAT, SMALLSTR), found {_.value}'
        doc: Which payload follows (`element_tag`); another value is refused (rdbLoadObject "Unknown array element type_tag").
      - id: string_value
        type: rdb_string
        if: tag.value == element_tag::sds.to_i
        doc: The string of an SDS element.
      - id: int_value
        type: s8
        if: tag.value == element_tag::int.to_i
        doc: The integer of an INT element (8 bytes little-endian).
      - id: float_value
        type: f8
        if: tag.value == element_tag::float.to_i
        doc: The double of a FLOAT element (8 bytes little-endian, the full double whatever the build keeps in memory).
      - id: small_string
        type: rdb_string
        if: tag.value == element_tag::smallstr.to_i
        valid:
          expr: '_.is_int ? _.int_value >= -999999 and _.int_value <= 9999999 : (_.is_lzf ? _.ulen.value : _.len.value) <= 7'
        -rdbspec-message: 'expected a small string of at most 7 bytes (AR_SMALLSTR_MAXLEN of a 64-bit server), found a longer one'
        doc: |
          The string of a SMALLSTR element: at most 7 bytes once decoded (an integer-encoded one is
          its decimal text); a longer one is refused (rdbLoadObject "Invalid small string length").
          A 32-bit server keeps at most 3 bytes in memory; the file form is the same.
