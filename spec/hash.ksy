meta:
  id: hash
  title: Redis and Valkey hashes stored as key/value lists (types 4, 22, 23, 24, 25, 29, 31; Valkey 22 and 23)
  endian: le
  imports:
    - rdb_string
    - listpack
doc: |
  Hash values that are not a bare container blob (notes §4.1, §4.2), and the field names of hash
  templates (Redis 8.10, RDB 15). The root type is empty. Listpack hashes (16) and ziplist
  hashes (13) are `rdb_string::rdb_blob` values in the record switch; the template hashes that
  name a HASH_TEMPLATE record (30, 32) and the record itself are in rdb.ksy, where they find it
  among the records.
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
  template_names:
    doc: |
      The field names of a hash template, `count` of them, each an RDB string, strictly
      ascending: a shorter name first, names of one length byte by byte (sdscmplen; redis
      src/t_hash.c hashTemplateValidateFields, whose registry binary-searches them). A
      HASH_TEMPLATE record and a self-contained template hash with fields format 1 hold them;
      the loader refuses names out of that order, or twice ("not strictly sorted").
    doc-ref: redis src/rdb.c rdbLoadSdsArray
    params:
      - id: count
        type: u8
        doc: How many names.
    seq:
      - id: names
        type: template_name
        repeat: expr
        repeat-expr: count
        valid:
          expr: >-
            _index == 0 or names[_index - 1].text.length < _.text.length or
            (names[_index - 1].text.length == _.text.length and names[_index - 1].text < _.text)
        -rdbspec-message: 'expected the field names strictly ascending (a shorter one first, names of one length byte by byte: hashTemplateValidateFields), found name {_index} (from 0) not after the one before it'
        doc: |
          The names, in the template's order. Compared as their bytes read as ISO-8859-1 text
          (one character a byte, in byte order); an integer-encoded name as its decimal text,
          which is what the server holds. (The official compiler's JavaScript output decodes
          ISO-8859-1 as windows-1252, whose bytes 0x80-0x9f do not sort in byte order.)
  template_name:
    doc: One field name of a hash template.
    doc-ref: redis src/rdb.c rdbGenericLoadStringObject
    seq:
      - id: name
        type: rdb_string
        doc: The name.
    instances:
      text:
        value: 'name.is_int ? name.int_value.to_s : name.is_lzf ? name.lzf.to_s("ISO-8859-1") : name.raw.to_s("ISO-8859-1")'
        doc: The name's bytes as text, one character a byte (an integer-encoded name, its decimal text).
  template_fields:
    doc: |
      The field names that a self-contained template hash (types 29, 31) carries: a format,
      then the names as one listpack (format 0, FIELDS_LP: the server's choice when they fit
      one) or as a count and strings (format 1, FIELDS_RAW). The loader refuses another format,
      no names, names out of order, and a listpack whose header count is not its entries. The
      order of a listpack's names is checked by rdbspec's library (rdbspec/read/values.py).
    doc-ref: redis src/rdb.c rdbLoadTemplateFields
    seq:
      - id: format
        type: rdb_string::rdb_len
        valid:
          expr: _.value == 0 or _.value == 1
        -rdbspec-message: 'expected fields format 0 (the names in a listpack) or 1 (a count, then the names), found {_.value} (rdbLoadTemplateFields: "unknown template fields format")'
        doc: "0 FIELDS_LP, 1 FIELDS_RAW (read as a length: rdbLoadLen)."
      - id: names_listpack
        type: rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
        if: format.value == 0
        valid:
          expr: >-
            names_listpack.payload.as<listpack>.entries.size > 0 and
            (names_listpack.payload.as<listpack>.num_elements == 65535 or
             names_listpack.payload.as<listpack>.num_elements == names_listpack.payload.as<listpack>.entries.size)
        -rdbspec-message: 'expected a listpack of at least one field name whose header counts its entries (rdbLoadTemplateFields: "template with zero fields", "template field blob entry count mismatch")'
        doc: The names, one entry each (an integer entry is a name's decimal text), strictly ascending.
      - id: num_names
        type: rdb_string::rdb_len
        if: format.value == 1
        -rdbspec-write: {is_encoded: false, value: names.names.size}
        valid:
          expr: _.value != 0
        -rdbspec-message: 'expected at least one field name, found {_.value} (rdbLoadTemplateFields: "template with zero fields")'
        doc: How many names follow.
      - id: names
        type: template_names(num_names.value)
        if: format.value == 1
        doc: The names, strictly ascending.
    instances:
      num_fields:
        value: 'format.value == 0 ? names_listpack.payload.as<listpack>.entries.size : num_names.value'
        doc: How many fields the template has.
  hash_tmpl_lp:
    doc: |
      HASH_TMPL_LP (type 29 in a REDIS file of version 15 or later; Redis 8.10): a template hash
      that carries its field names (what DUMP writes of a `template-listpack` hash; the loader
      takes it in a file too): the names, then the values in one listpack whose first entry is
      the source's template id (an integer, not used), then a value for each field, in the
      names' order.
    doc-ref: redis src/rdb.c rdbLoadObject (RDB_TYPE_HASH_TMPL_LP), rdbLoadTmplLpBlob, rdbCheckTmplLpCount
    seq:
      - id: fields
        type: template_fields
        doc: The field names.
      - id: values
        type: rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
        valid:
          expr: >-
            values.payload.as<listpack>.entries.size > 0 and values.payload.as<listpack>.entries[0].is_int and
            values.payload.as<listpack>.entries.size == fields.num_fields + 1
        -rdbspec-message: 'expected a listpack of a template id (an integer), then a value for each field name (rdbLoadTmplLpBlob: "template-listpack is empty", "first entry is not an integer"; rdbCheckTmplLpCount: "entry count does not match")'
        doc: A template id (ignored by the loader, which puts its own there), then the values.
  hash_tmpl_array:
    doc: |
      HASH_TMPL_ARRAY (type 31 in a REDIS file of version 15 or later; Redis 8.10): a template
      hash that carries its field names (what DUMP writes of a `template-array` hash; the loader
      takes it in a file too): the names, then a value for each field, in their order.
    doc-ref: redis src/rdb.c rdbLoadObject (RDB_TYPE_HASH_TMPL_ARRAY)
    seq:
      - id: fields
        type: template_fields
        doc: The field names.
      - id: values
        type: rdb_string
        repeat: expr
        repeat-expr: fields.num_fields
        doc: A value for each field name, in their order.
