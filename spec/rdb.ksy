meta:
  id: rdb
  title: Redis / Valkey / Dragonfly RDB dump file
  file-extension: rdb
  endian: le
  imports:
    - rdb_string
    - listpack
    - ziplist
    - intset
    - zipmap
    - quicklist
    - hash
    - zset
    - stream
    - module
    - function
    - dragonfly
    - sparse_array
doc: |
  An RDB file (notes §1, §2): a 9-byte magic ("REDIS" + 4 digits, or "VALKEY" + 3 digits),
  a stream of records (opcodes and key/value pairs) ended by the EOF opcode 0xFF, and since
  RDB 5 a CRC-64/Jones checksum (little-endian; 0 = disabled). The dialect is decided from the
  magic and its version: REDIS magic uses Redis numbering (22/23 pre-GA field-TTL hashes, 27/28 of
  RDB 14, 243 KEY_META, 242 HASH_TEMPLATE, 20 as Dragonfly JSON when version < 10, 30-37 Dragonfly
  below version 15, 29-32 Redis 8.10's template hashes from version 15); VALKEY magic uses Valkey
  numbering (22 HASH_2, 23 PATH_HASH, 243 SLOT_IMPORT). Valkey writes the VALKEY magic for RDB
  versions above 79 (valkey src/rdb.h rdbUseValkeyMagic: 80 since 9.0, 81 since 9.2); Valkey
  7.2-8.x write REDIS0011. Dragonfly writes REDIS0009 (dragonfly src/redis/rdb.h RDB_SER_VERSION).
doc-ref: redis src/rdb.c rdbSaveRio
seq:
  - id: magic
    type: str
    size: 9
    encoding: ASCII
    valid:
      expr: >-
        (_.substring(0, 5) == "REDIS" and _.substring(5, 9).to_i >= 1 and _.substring(5, 9).to_i <= 15) or
        (_.substring(0, 6) == "VALKEY" and _.substring(6, 9).to_i >= 80 and _.substring(6, 9).to_i <= 81)
    -rdbspec-message: '{_.substring(0, 5) == "REDIS" or _.substring(0, 6) == "VALKEY" ? "an RDB version this reader does not know" : "not an RDB file":s} (starts with {_}): expected REDIS0001..REDIS0015 or VALKEY080..VALKEY081'
    doc: |
      "REDIS%04d" (Redis, Valkey <= 8, Dragonfly) or "VALKEY%03d" (Valkey >= 9). Known versions only:
      REDIS 1..15 (Redis 8.6 writes 13, 8.8 14, 8.10 15: the DUMP payloads of redis
      tests/unit/type/hash-templates.tcl end with version 15), VALKEY 80..81; a newer file is
      rejected as the servers do (rdbLoadRioWithLoadingCtx: "Can't handle RDB format version").
  - id: records
    type: record
    repeat: until
    repeat-until: _.opcode == record_kind::eof.to_i
    -rdbspec-stream: true
    -rdbspec-index:
      hash_templates:
        if: _.opcode == record_kind::hash_template.to_i
        key: _.body.as<hash_template>.template_id.value
        value: _.body.as<hash_template>
    doc: |
      The records, up to and including the EOF opcode. rdbspec keeps the HASH_TEMPLATE records
      read so far by id (`hash_templates`), as a loader keeps its template registry while it
      reads the file (redis src/rdb.c rdbLoadHashTemplate, rdbGetHashTemplateById).
  - id: checksum
    type: u8
    if: version >= 5
    doc: CRC-64/Jones (reflected, init 0) of every byte from the magic through the EOF opcode, little-endian; 0 means disabled.
instances:
  is_valkey:
    value: magic.substring(0, 6) == "VALKEY"
    doc: True for the VALKEY magic (Valkey numbering of types and opcodes).
  version:
    value: '(is_valkey ? magic.substring(6, 9) : magic.substring(5, 9)).to_i'
    doc: The RDB version from the magic.
types:
  record:
    doc: |
      One top-level record: an opcode byte, then its payload. Bytes that are not opcodes are
      value types, followed by a key and a value (`key_value`). Per-key prefixes (EXPIRETIME_MS,
      IDLE, FREQ, KEY_META, DF_MASK) are separate records that apply to the next key.
    doc-ref: redis src/rdb.c rdbLoadRioWithLoadingCtx
    seq:
      - id: opcode
        type: u1
        valid:
          expr: >-
            _root.is_valkey ?
            (_ >= 243 or (_ <= 23 and _ != 8)) :
            (_ >= 242 or _ == 200 or _ == 201 or _ == 202 or _ == 210 or _ == 211 or
             _ == 220 or _ == 222 or _ == 223 or _ == 224 or
             (_ <= 28 and _ != 8) or
             (_root.version >= 15 ? (_ >= 29 and _ <= 32) : (_ >= 30 and _ <= 37)))
        -rdbspec-message: 'expected a value type or opcode that this magic''s numbering defines, found {_}'
        doc: |
          The opcode or value type byte. Unknown codes are invalid. Under VALKEY magic the types
          are 0-7 and 9-23 (valkey src/rdb.h rdbIsObjectType); Valkey 9.2 loads its type 23
          (PATH_HASH) from a file of either VALKEY version, as it gates no type by the file's
          version (valkey src/rdb.c rdbLoadObject), though only 9.2 writes it (VALKEY081). In a
          REDIS file of version 15 or later, 29-32 are Redis 8.10's template hashes and 33-37
          are not types; below, 30-37 are Dragonfly's (which writes REDIS0009) and 29 is not a
          type.
      - id: body
        type:
          switch-on: kind
          # the most frequent records first (a key, a key's expiry): the cases are tested in order
          cases:
            'record_kind::key_value': key_value(opcode, _root.is_valkey, _root.version)
            'record_kind::expire_time_ms': expire_time_ms
            'record_kind::select_db': select_db
            'record_kind::expire_time': expire_time
            'record_kind::resize_db': resize_db
            'record_kind::aux': aux
            'record_kind::freq': freq
            'record_kind::idle': idle
            'record_kind::module_aux': module::module_aux
            'record_kind::function_pre_ga': function::function_pre_ga
            'record_kind::function2': function::function2
            'record_kind::slot_info': slot_info
            'record_kind::key_meta': module::key_meta
            'record_kind::slot_import': slot_import
            'record_kind::hash_template': hash_template
            'record_kind::tagged_chunk': dragonfly::tagged_chunk
            'record_kind::shard_doc_index': dragonfly::shard_doc_index
            'record_kind::vector_index': dragonfly::vector_index
            'record_kind::df_mask': dragonfly::df_mask
            'record_kind::journal_offset': dragonfly::journal_offset
            'record_kind::journal_blob': dragonfly::journal_blob
            'record_kind::compressed_lz4_blob': dragonfly::compressed_blob
            'record_kind::compressed_zstd_blob': dragonfly::compressed_blob
            'record_kind::fullsync_end': dragonfly::fullsync_end
        if: kind != record_kind::eof
        doc: The payload; absent for EOF.
    instances:
      kind:
        value: >-
          opcode == 243 and _root.is_valkey ? record_kind::slot_import.to_i :
          opcode >= 200 ? opcode : record_kind::key_value.to_i
        enum: record_kind
        doc: What the record is (Valkey's 243 is SLOT_IMPORT, every value type byte is `key_value`).
  select_db:
    doc: SELECTDB (254) - switch to a database.
    doc-ref: redis src/rdb.c rdbSaveDb
    seq:
      - id: db_number
        type: rdb_string::rdb_len
        doc: Database number.
  resize_db:
    doc: RESIZEDB (251) - hash table sizing hints for the current database.
    doc-ref: redis src/rdb.c rdbSaveDb
    seq:
      - id: db_size
        type: rdb_string::rdb_len
        doc: Number of keys.
      - id: expires_size
        type: rdb_string::rdb_len
        doc: Number of keys with an expiry.
  aux:
    doc: |
      AUX (250) - a key/value metadata field (redis-ver, ctime, valkey-ver, df-ver, slot-info, lua, ...).
      Valkey 9 writes valkey-ver, redis-bits, ctime, used-mem and aof-base, and no redis-ver
      (valkey src/rdb.c rdbSaveInfoAuxFields).
    doc-ref: redis src/rdb.c rdbSaveAuxField
    seq:
      - id: key
        type: rdb_string
        doc: Field name.
      - id: value
        type: rdb_string
        doc: Field value.
  expire_time:
    doc: EXPIRETIME (253, legacy) - expiry of the next key in seconds.
    doc-ref: redis src/rdb.c rdbLoadTime
    seq:
      - id: seconds
        type: s4
        doc: Unix time in seconds (host order, LE in practice).
  expire_time_ms:
    doc: EXPIRETIME_MS (252) - expiry of the next key in milliseconds.
    doc-ref: redis src/rdb.c rdbSaveMillisecondTime
    seq:
      - id: ms
        type: s8
        doc: Unix time in ms, little-endian (host order before RDB 9).
  freq:
    doc: FREQ (249) - LFU counter of the next key.
    doc-ref: redis src/rdb.c rdbSaveKeyValuePair
    seq:
      - id: lfu_freq
        type: u1
        doc: LFU counter (0..255).
  idle:
    doc: IDLE (248) - LRU idle time of the next key.
    doc-ref: redis src/rdb.c rdbSaveKeyValuePair
    seq:
      - id: seconds
        type: rdb_string::rdb_len
        doc: Idle time in seconds.
  slot_info:
    doc: SLOT_INFO (244, Redis 7.4+ cluster mode) - sizes of the slot whose keys follow.
    doc-ref: redis src/rdb.c rdbSaveDb
    seq:
      - id: slot_id
        type: rdb_string::rdb_len
        doc: Cluster slot.
      - id: slot_size
        type: rdb_string::rdb_len
        doc: Number of keys in the slot.
      - id: expires_slot_size
        type: rdb_string::rdb_len
        doc: Number of keys with an expiry in the slot.
  slot_import:
    doc: SLOT_IMPORT (243 on VALKEY magic, Valkey 9.0+) - a slot migration job and its slot ranges.
    doc-ref: valkey src/cluster_migrateslots.c clusterRDBSaveSlotImports
    seq:
      - id: job_name
        type: rdb_string
        doc: Job name (40 bytes when written).
      - id: num_ranges
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: ranges.size}
        doc: Number of slot ranges.
      - id: ranges
        type: slot_range
        repeat: expr
        repeat-expr: num_ranges.value
        doc: The slot ranges.
  slot_range:
    doc: One inclusive slot range of SLOT_IMPORT.
    doc-ref: valkey src/cluster_migrateslots.c clusterRDBSaveSlotImports
    seq:
      - id: start_slot
        type: rdb_string::rdb_len
        doc: First slot.
      - id: end_slot
        type: rdb_string::rdb_len
        doc: Last slot.
  key_value:
    doc: |
      A key and its value. `type_code` is the record's type byte; the value layout is selected by
      `value_kind`, which maps the byte to the dialect given by the magic.
    doc-ref: redis src/rdb.c rdbSaveKeyValuePair
    params:
      - id: type_code
        type: u1
        doc: The value type byte.
      - id: is_valkey
        type: bool
        doc: True for VALKEY magic.
      - id: rdb_version
        type: u2
        doc: RDB version from the magic.
    seq:
      - id: key
        type: rdb_string
        doc: The key.
      - id: value
        -rdbspec-lazy: true
        type:
          switch-on: value_kind
          cases:
            'value_type::string': rdb_string
            'value_type::list': string_list
            'value_type::set': string_list
            'value_type::zset': zset::zset_legacy
            'value_type::hash': hash::hash_table
            'value_type::zset_2': zset::zset_2
            'value_type::module_pre_ga': module::module_pre_ga
            'value_type::module_2': module::module_value
            'value_type::hash_zipmap': rdb_string::rdb_blob(rdb_string::blob_kind::zipmap)
            'value_type::list_ziplist': rdb_string::rdb_blob(rdb_string::blob_kind::ziplist)
            'value_type::set_intset': rdb_string::rdb_blob(rdb_string::blob_kind::intset)
            'value_type::zset_ziplist': rdb_string::rdb_blob(rdb_string::blob_kind::ziplist)
            'value_type::hash_ziplist': rdb_string::rdb_blob(rdb_string::blob_kind::ziplist)
            'value_type::list_quicklist': quicklist
            'value_type::stream_listpacks': stream::stream_value(type_code)
            'value_type::hash_listpack': rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
            'value_type::zset_listpack': rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
            'value_type::list_quicklist_2': quicklist::quicklist_2
            'value_type::stream_listpacks_2': stream::stream_value(type_code)
            'value_type::set_listpack': rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
            'value_type::stream_listpacks_3': stream::stream_value(type_code)
            'value_type::hash_metadata_pre_ga': hash::hash_metadata_pre_ga
            'value_type::hash_listpack_ex_pre_ga': hash::hash_listpack_ex_pre_ga
            'value_type::hash_metadata': hash::hash_metadata
            'value_type::hash_listpack_ex': hash::hash_listpack_ex
            'value_type::stream_listpacks_4': stream::stream_value(type_code)
            'value_type::stream_listpacks_5': stream::stream_value(type_code)
            'value_type::array': sparse_array::array_value
            'value_type::df_json': rdb_string
            'value_type::df_hash_with_expiry': dragonfly::df_hash_with_expiry
            'value_type::df_set_with_expiry': dragonfly::df_set_with_expiry
            'value_type::df_sbf': dragonfly::df_sbf
            'value_type::df_sbf2': dragonfly::df_sbf2
            'value_type::df_cms': dragonfly::df_cms
            'value_type::df_topk': dragonfly::df_topk
            'value_type::df_cuckoo': dragonfly::df_cuckoo
            'value_type::df_json_legacy': rdb_string
            'value_type::valkey_hash_2': hash::valkey_hash_2
            'value_type::valkey_path_hash': hash::valkey_path_hash
            'value_type::hash_tmpl_lp': hash::hash_tmpl_lp
            'value_type::hash_tmpl_lp_ref': hash_tmpl_lp_ref
            'value_type::hash_tmpl_array': hash::hash_tmpl_array
            'value_type::hash_tmpl_array_ref': hash_tmpl_array_ref
        doc: The value, laid out according to `value_kind`.
    instances:
      value_kind:
        value: >-
          is_valkey and type_code == 22 ? value_type::valkey_hash_2.to_i :
          is_valkey and type_code == 23 ? value_type::valkey_path_hash.to_i :
          (not is_valkey) and type_code == 20 and rdb_version < 10 ? value_type::df_json_legacy.to_i :
          (not is_valkey) and rdb_version >= 15 and type_code >= 29 and type_code <= 33 ? 256 + type_code :
          type_code
        enum: value_type
        doc: |
          The value layout: the type byte in Redis numbering, except Valkey's 22 (HASH_2, 278) and
          23 (PATH_HASH, 279), type 20 in a REDIS file older than version 10 (old Dragonfly JSON,
          276), and types 29-33 in a REDIS file of version 15 or later (256 + the byte: Redis
          8.10's template hashes, 285-288), which Dragonfly's REDIS0009 files use for its own
          types (30-37). Valkey 9 shares Redis's types up to 21 and writes every stream as 21
          (valkey src/rdb.c rdbSaveObjectType).
  hash_template:
    doc: |
      HASH_TEMPLATE (242, REDIS magic; Redis 8.10, RDB 15): one hash template, the field names
      that the hashes of types 30 and 32 (`hash_tmpl_lp_ref`, `hash_tmpl_array_ref`) name by its
      id. The server writes a record for each template that a key uses, after the AUX fields,
      module data and functions, before the first SELECTDB (rdbSaveRio); there is no count and
      no end marker. Its loader takes one anywhere among the records and refuses a template
      without fields, an id that a record before it has, and names not strictly ascending. The
      id is the file's own handle for the template (the loader gives it an id of its own).
    doc-ref: redis src/rdb.c rdbLoadHashTemplate
    seq:
      - id: template_id
        type: rdb_string::rdb_len
        valid:
          expr: earlier_num_fields == 0
        -rdbspec-message: 'expected an id that no HASH_TEMPLATE record before this one has, found {_.value} again (rdbLoadHashTemplate: "Duplicate hash template ID")'
        doc: The template's id in this file (Redis writes the small numbers its registry gives templates).
      - id: num_fields
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: fields.names.size}
        valid:
          expr: _.value != 0
        -rdbspec-message: 'expected at least one field name, found {_.value} (rdbLoadHashTemplate: "has zero fields")'
        doc: How many field names (the loader reads them one by one, never allocating this many up front).
      - id: fields
        type: hash::template_names(num_fields.value)
        doc: The field names, strictly ascending.
    instances:
      earlier:
        pos: 0
        size: 0
        type: hash_template_search(template_id.value, _index)
        repeat: until
        repeat-until: _.is_here or _index + 1 >= _root.records.size
        doc: The official compiler's search for a record before this one with its id (see `hash_template_search`).
      earlier_num_fields:
        value: 'earlier.last.is_here ? earlier.last.found.num_fields.value : 0'
        -rdbspec-lookup: {index: hash_templates, key: template_id.value, value: _.num_fields.value, default: 0}
        doc: The field count of a HASH_TEMPLATE record before this one with the same id, 0 when there is none.
  hash_template_search:
    doc: |
      One step of the search for the HASH_TEMPLATE record of `template_id` among the records
      read so far (`_root.records`, which the official compiler's output fills as it reads):
      whether record `index` is it. The search tries them in file order, as Kaitai has no
      lookup by key; rdbspec's generator reads its index of those records instead
      (`-rdbspec-index` of `records`, `-rdbspec-lookup` of the instances that use it), which
      gives the same answer.
    doc-ref: redis src/rdb.c rdbGetHashTemplateById
    params:
      - id: template_id
        type: u8
        doc: The id looked for.
      - id: index
        type: u4
        doc: The record tried (an index of `_root.records`).
    instances:
      is_here:
        value: >-
          index < _root.records.size and _root.records[index].opcode == record_kind::hash_template.to_i and
          _root.records[index].body.as<hash_template>.template_id.value == template_id
        doc: True when record `index` is the HASH_TEMPLATE record of `template_id`.
      found:
        value: _root.records[index].body.as<hash_template>
        doc: The template of record `index` (only when `is_here`).
  hash_tmpl_lp_ref:
    doc: |
      HASH_TMPL_LP_REF (type 30 in a REDIS file of version 15 or later; Redis 8.10): a hash with
      the field names of a template that a HASH_TEMPLATE record before it defines, its values
      in one listpack: the template's id (an integer entry), then a value for each field of the
      template, in its order. What a server saves of a `template-listpack` hash; never in a
      DUMP payload ("not valid in a DUMP payload").
    doc-ref: redis src/rdb.c rdbLoadObject (RDB_TYPE_HASH_TMPL_LP_REF), rdbLoadTmplLpBlob, rdbCheckTmplLpCount
    seq:
      - id: values
        type: rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
        valid:
          expr: >-
            num_entries > 0 and values.payload.as<listpack>.entries[0].is_int and template_id >= 0 and
            template_num_fields != 0 and num_entries == template_num_fields + 1
        -rdbspec-message: 'expected a listpack of the id of a hash template that a HASH_TEMPLATE record before this key defines (an integer, not negative), then a value for each of its fields, found the id {template_id} (None: not an integer) and {num_entries} entries for {template_num_fields} fields (0: no such template) (rdbLoadTmplLpBlob, rdbLoadObject: "Invalid hash template ID", rdbCheckTmplLpCount)'
        doc: The template's id, then the values.
    instances:
      num_entries:
        value: values.payload.as<listpack>.entries.size
        doc: The listpack's entries, the id among them.
      template_id:
        value: 'num_entries > 0 ? values.payload.as<listpack>.entries[0].int_value : -1'
        doc: The id of the template, the listpack's first entry (null when it is not an integer, -1 without entries).
      template_search:
        pos: 0
        size: 0
        type: hash_template_search(template_id, _index)
        repeat: until
        repeat-until: _.is_here or _index + 1 >= _root.records.size
        doc: The official compiler's search for the template (see `hash_template_search`).
      template_num_fields:
        value: 'template_search.last.is_here ? template_search.last.found.num_fields.value : 0'
        -rdbspec-lookup: {index: hash_templates, key: template_id, value: _.num_fields.value, default: 0}
        doc: The field count of the template, 0 when no HASH_TEMPLATE record before this key has its id.
      template:
        value: template_search.last.found
        -rdbspec-lookup: {index: hash_templates, key: template_id}
        doc: The HASH_TEMPLATE record that `template_id` names (its field names).
  hash_tmpl_array_ref:
    doc: |
      HASH_TMPL_ARRAY_REF (type 32 in a REDIS file of version 15 or later; Redis 8.10): a hash
      with the field names of a template that a HASH_TEMPLATE record before it defines: the
      template's id, then a value for each field of the template, in its order (the count is
      the template's, not stored). What a server saves of a `template-array` hash; never in a
      DUMP payload.
    doc-ref: redis src/rdb.c rdbLoadObject (RDB_TYPE_HASH_TMPL_ARRAY_REF)
    seq:
      - id: template_id
        type: rdb_string::rdb_len
        valid:
          expr: template_num_fields != 0
        -rdbspec-message: 'expected the id of a hash template that a HASH_TEMPLATE record before this key defines, found {_.value} (rdbLoadObject: "Invalid hash template ID")'
        doc: The id of the template.
      - id: values
        type: rdb_string
        repeat: expr
        repeat-expr: template_num_fields
        doc: A value for each field of the template, in its order.
    instances:
      template_search:
        pos: 0
        size: 0
        type: hash_template_search(template_id.value, _index)
        repeat: until
        repeat-until: _.is_here or _index + 1 >= _root.records.size
        doc: The official compiler's search for the template (see `hash_template_search`).
      template_num_fields:
        value: 'template_search.last.is_here ? template_search.last.found.num_fields.value : 0'
        -rdbspec-lookup: {index: hash_templates, key: template_id.value, value: _.num_fields.value, default: 0}
        doc: The field count of the template, 0 when no HASH_TEMPLATE record before this key has its id.
      template:
        value: template_search.last.found
        -rdbspec-lookup: {index: hash_templates, key: template_id.value}
        doc: The HASH_TEMPLATE record that `template_id` names (its field names).
  string_list:
    doc: LIST (type 1) and SET (type 2) - `len n`, then n strings.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: num_items
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: items.size}
        doc: Number of elements.
      - id: items
        type: rdb_string
        repeat: expr
        repeat-expr: num_items.value
        -rdbspec-lazy: true
        -rdbspec-chunks: true
        -rdbspec-splits: true
        doc: The elements.
enums:
  record_kind:
    200: fullsync_end
    201: compressed_zstd_blob
    202: compressed_lz4_blob
    210: journal_blob
    211: journal_offset
    220: df_mask
    222: vector_index
    223: shard_doc_index
    224: tagged_chunk
    242:
      id: hash_template
      doc: |
        RDB_OPCODE_HASH_TEMPLATE (REDIS magic; Redis 8.10, RDB 15): one hash template. Valkey's
        242 (RDB_OPCODE_UPDATE, forkless replication only) is not a dump record: a VALKEY file
        with it is refused.
      doc-ref: redis src/rdb.c rdbLoadHashTemplate, rdbLoadRioWithLoadingCtx
    243: key_meta
    244: slot_info
    245: function2
    246: function_pre_ga
    247: module_aux
    248: idle
    249: freq
    250: aux
    251: resize_db
    252: expire_time_ms
    253: expire_time
    254: select_db
    255: eof
    256:
      id: key_value
      doc: Any value type byte (0-37); not a real opcode.
    499:
      id: slot_import
      doc: Valkey's opcode 243 (0x100 + 243); not a byte value.
  value_type:
    0: string
    1: list
    2: set
    3: zset
    4: hash
    5: zset_2
    6: module_pre_ga
    7: module_2
    9: hash_zipmap
    10: list_ziplist
    11: set_intset
    12: zset_ziplist
    13: hash_ziplist
    14: list_quicklist
    15: stream_listpacks
    16: hash_listpack
    17: zset_listpack
    18: list_quicklist_2
    19: stream_listpacks_2
    20: set_listpack
    21: stream_listpacks_3
    22: hash_metadata_pre_ga
    23: hash_listpack_ex_pre_ga
    24: hash_metadata
    25: hash_listpack_ex
    26: stream_listpacks_4
    27:
      id: stream_listpacks_5
      doc: A stream with a NACK zone after each group's consumers (Redis 8.8, RDB 14).
    28:
      id: array
      doc: A sparse array (Redis 8.8, RDB 14).
    30: df_json
    31: df_hash_with_expiry
    32: df_set_with_expiry
    33: df_sbf
    34: df_sbf2
    35: df_cms
    36: df_topk
    37: df_cuckoo
    276:
      id: df_json_legacy
      doc: Type 20 in a REDIS file older than version 10 (0x100 + 20); old Dragonfly JSON.
    278:
      id: valkey_hash_2
      doc: Type 22 in a VALKEY file (0x100 + 22); Valkey HASH_2.
    279:
      id: valkey_path_hash
      doc: Type 23 in a VALKEY file (0x100 + 23); Valkey 9.2's PATH_HASH.
    285:
      id: hash_tmpl_lp
      doc: |
        Type 29 in a REDIS file of version 15+ (0x100 + 29); Redis 8.10 RDB_TYPE_HASH_TMPL_LP, a
        self-contained template hash with listpack values (what DUMP writes).
      doc-ref: redis src/rdb.c rdbLoadObject
    286:
      id: hash_tmpl_lp_ref
      doc: |
        Type 30 in a REDIS file of version 15+ (0x100 + 30; Dragonfly's JSON below); Redis 8.10
        RDB_TYPE_HASH_TMPL_LP_REF, a listpack of values naming a HASH_TEMPLATE record.
      doc-ref: redis src/rdb.c rdbLoadObject
    287:
      id: hash_tmpl_array
      doc: |
        Type 31 in a REDIS file of version 15+ (0x100 + 31; Dragonfly's hash with expiry below);
        Redis 8.10 RDB_TYPE_HASH_TMPL_ARRAY, a self-contained template hash with its values as
        strings (what DUMP writes).
      doc-ref: redis src/rdb.c rdbLoadObject
    288:
      id: hash_tmpl_array_ref
      doc: |
        Type 32 in a REDIS file of version 15+ (0x100 + 32; Dragonfly's set with expiry below);
        Redis 8.10 RDB_TYPE_HASH_TMPL_ARRAY_REF, a template id and a string value per field.
      doc-ref: redis src/rdb.c rdbLoadObject
