meta:
  id: hash
  title: Redis and Valkey hashes stored as key/value lists (types 4, 22, 23, 24, 25; Valkey 22 and 23)
  endian: le
  imports:
    - rdb_string
doc: |
  Hash values that are not a bare container blob (notes §4.1, §4.2). The root type is empty.
  Listpack hashes (16) and ziplist hashes (13) are `rdb_string::rdb_blob` values in the record switch.
doc-ref: redis src/rdb.c rdbSaveObject
types:
  hash_table:
    doc: HASH (type 4) - `len n`, then n field/value string pairs.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: num_fields
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        doc: Number of fields.
      - id: entries
        type: hash_pair
        repeat: expr
        repeat-expr: num_fields.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        -rdbspec-splits: true
        doc: The field/value pairs.
  hash_pair:
    doc: One hash field and its value.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: field
        type: rdb_string
        doc: Field name.
      - id: value
        type: rdb_string
        doc: Field value.
  hash_metadata_pre_ga:
    doc: |
      HASH_METADATA_PRE_GA (Redis type 22, 7.4-rc only) - `len n`, then n ×
      (`len ttl` absolute unix ms (0 = none), field, value).
    doc-ref: redis 7.4-rc1 src/rdb.c rdbSaveObject
    seq:
      - id: num_fields
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        doc: Number of fields.
      - id: entries
        type: hash_ttl_entry_pre_ga
        repeat: expr
        repeat-expr: num_fields.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: The fields with their absolute TTLs.
  hash_ttl_entry_pre_ga:
    doc: One field of a pre-GA HFE hash.
    doc-ref: redis 7.4-rc1 src/rdb.c rdbSaveObject
    seq:
      - id: ttl
        type: rdb_string::rdb_len
        doc: Absolute expiry time in unix ms, or 0 for none.
      - id: field
        type: rdb_string
        doc: Field name.
      - id: value
        type: rdb_string
        doc: Field value.
  hash_listpack_ex_pre_ga:
    doc: |
      HASH_LISTPACK_EX_PRE_GA (Redis type 23, 7.4-rc only) - a listpack of
      (field, value, ttl_abs_ms) triples, without the minExpire prefix.
    doc-ref: redis 7.4-rc1 src/rdb.c rdbSaveObject
    seq:
      - id: listpack
        type: rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
        doc: Listpack of field, value, ttl triples (ttl 0 = none).
  hash_metadata:
    doc: |
      HASH_METADATA (Redis type 24, 7.4 GA) - u64 LE minExpire, `len n`, then n ×
      (`len ttl`, field, value) where ttl 0 = none and otherwise expireAt = ttl + minExpire - 1.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: min_expire
        type: u8
        doc: Smallest field expiry in unix ms; base of the relative TTLs.
      - id: num_fields
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        doc: Number of fields.
      - id: entries
        type: hash_ttl_entry(min_expire)
        repeat: expr
        repeat-expr: num_fields.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        doc: The fields with their relative TTLs.
  hash_ttl_entry:
    doc: One field of a type-24 hash.
    doc-ref: redis src/rdb.c rdbSaveObject
    params:
      - id: min_expire
        type: u8
        doc: The hash's minExpire.
    seq:
      - id: ttl
        type: rdb_string::rdb_len
        doc: expireAt - minExpire + 1, or 0 when the field has no TTL.
      - id: field
        type: rdb_string
        doc: Field name.
      - id: value
        type: rdb_string
        doc: Field value.
    instances:
      expire_at:
        value: ttl.value + min_expire - 1
        if: ttl.value != 0
        doc: Absolute expiry in unix ms (absent when the field has no TTL).
  hash_listpack_ex:
    doc: |
      HASH_LISTPACK_EX (Redis type 25, 7.4 GA) - u64 LE minExpire (0 when no field has a TTL),
      then a listpack of (field, value, ttl) triples, ttl = absolute unix ms or 0.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: min_expire
        type: u8
        doc: Smallest field expiry in unix ms, or 0; ignored by the loader.
      - id: listpack
        type: rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
        doc: Listpack of field, value, ttl triples.
  valkey_hash_2:
    doc: |
      Valkey RDB_TYPE_HASH_2 (type 22 on VALKEY magic, Valkey 9.0+) - `len n`, then n ×
      (field, value, i64 LE expire_ms) with -1 = no expiry. Written for a hashtable-encoded hash
      while one of its fields has a TTL (valkey src/rdb.c rdbSaveObjectType,
      hashTypeHasVolatileFields; Valkey 9 turns a hash into a hashtable when a field gets a TTL):
      small hashes too, and a hash whose TTLs are all removed (HPERSIST) is a plain HASH (4) again.
    doc-ref: valkey src/rdb.c rdbSaveObject
    seq:
      - id: num_fields
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        doc: Number of fields.
      - id: entries
        type: valkey_hash_2_entry
        repeat: expr
        repeat-expr: num_fields.value
        doc: The fields with their expiry.
  valkey_hash_2_entry:
    doc: One field of a Valkey HASH_2.
    doc-ref: valkey src/rdb.c rdbSaveObject
    seq:
      - id: field
        type: rdb_string
        doc: Field name.
      - id: value
        type: rdb_string
        doc: Field value.
      - id: expire_ms
        type: s8
        valid:
          min: -1
        doc: |
          Absolute expiry in unix ms, or -1 for none (valkey src/rdb.c rdbSaveObject writes
          entryGetExpiry, EXPIRY_NONE = -1 for a field without TTL); below -1 the server refuses
          the file (valkey src/rdb.c rdbLoadObject: itemexpiry < EXPIRY_NONE).
  valkey_path_hash:
    doc: |
      Valkey RDB_TYPE_PATH_HASH (type 23 on VALKEY magic, Valkey 9.2+, RDB 81): a radix tree of
      paths (binary-safe strings, the empty one too), each owning a small hash of fields and
      values; no TTLs. `len n` paths, in the radix tree's byte order as the saver walks it, each
      a path, `len m` (at least 1) and m field/value pairs in its hash's iteration order
      (valkey src/rdb.c rdbSaveObject, OBJ_PATH_HASH branch). A path hash of no path is loaded as
      an empty key (valkey tests/unit/type/path_hash.tcl "Empty Path Hash survives COPY,
      DUMP/RESTORE, and RDB reload"), not skipped. A path twice or a field twice within a path is
      refused by the loader (rdbLoadObject "Duplicate path-hash path or out of memory",
      "Duplicate path-hash payload field"): rdbspec/read/values.py checks those.
    doc-ref: valkey src/rdb.c rdbLoadObject
    seq:
      - id: num_paths
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: paths.size}
        doc: Number of paths.
      - id: paths
        type: valkey_path_hash_path
        repeat: expr
        repeat-expr: num_paths.value
        doc: The paths with their fields.
  valkey_path_hash_path:
    doc: One path of a Valkey PATH_HASH and its fields.
    doc-ref: valkey src/rdb.c rdbSaveObject
    seq:
      - id: path
        type: rdb_string
        doc: The path (any bytes, possibly empty).
      - id: num_fields
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: entries.size}
        valid:
          expr: _.value >= 1
        -rdbspec-message: 'expected at least one field for the path, found {_.value}'
        doc: |
          Number of fields of the path; at least 1 (valkey src/rdb.c rdbLoadObject refuses 0:
          "Path hash path with empty payload").
      - id: entries
        type: hash_pair
        repeat: expr
        repeat-expr: num_fields.value
        doc: The field/value pairs.
