meta:
  id: module
  title: Module values, MODULE_AUX and KEY_META payloads
  endian: le
  imports:
    - rdb_string
doc: |
  Module-serialized data (notes §5.7, §2.3): a module id (a 64-bit RDB length holding 9 name
  characters and the encoding version) followed by a module-opcode stream ended by opcode 0.
  The root type is empty.
doc-ref: redis src/module.c moduleTypeEncodeId
types:
  module_value:
    doc: MODULE_2 (type 7) - `len module_id`, then the module-opcode stream up to and including EOF (0).
    doc-ref: redis src/rdb.c rdbLoadCheckModuleValue
    seq:
      - id: module_id
        type: rdb_string::rdb_len
        doc: |
          The module type id: 9 chars × 6 bits, then encver in the low 10 bits (moduleTypeEncodeId).
          Decoding the name needs exact 64-bit arithmetic, which JavaScript numbers lack, so it is
          left to the application (rdbspec.read.values.module_name).
      - id: ops
        type: module_op
        repeat: until
        repeat-until: _.opcode.value == module_opcode::eof.to_i
        doc: The opcode stream; the last element is the EOF opcode.
  module_pre_ga:
    doc: |
      MODULE_PRE_GA (type 6, Redis 4.0-rc): the payload has no opcode framing, so it cannot be
      delimited. Redis rejects it ("Pre-release module format not supported"); so does this spec.
    doc-ref: redis src/rdb.c rdbLoadObject
    seq:
      - id: module_id
        type: rdb_string::rdb_len
        valid:
          expr: false
        -rdbspec-message: 'found a pre-release module value (type 6, Redis 4.0-rc, module id {_.value}), which the server refuses too: expected MODULE_2 (type 7)'
        doc: The module type id; always rejected.
  module_aux:
    doc: |
      MODULE_AUX opcode (247) payload - `len module_id`, `len 2` (UINT opcode), `len when`
      (1 BEFORE_RDB, 2 AFTER_RDB), then the module-opcode stream ended by EOF (0).
    doc-ref: redis src/module.c rdbSaveSingleModuleAux
    seq:
      - id: module_id
        type: rdb_string::rdb_len
        doc: The module type id.
      - id: when_opcode
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: module_opcode::uint.to_i}
        valid:
          expr: _.value == module_opcode::uint.to_i
        -rdbspec-message: 'expected 2 (RDB_MODULE_OPCODE_UINT), found {_.value}'
        doc: Always 2 (RDB_MODULE_OPCODE_UINT), introducing `when`.
      - id: when
        type: rdb_string::rdb_len
        doc: 1 = REDISMODULE_AUX_BEFORE_RDB, 2 = REDISMODULE_AUX_AFTER_RDB.
      - id: ops
        type: module_op
        repeat: until
        repeat-until: _.opcode.value == module_opcode::eof.to_i
        doc: The opcode stream; the last element is the EOF opcode.
  module_op:
    doc: |
      One element of a module-opcode stream: `len opcode`, then 1 SINT / 2 UINT `len value`,
      3 FLOAT (f4 LE), 4 DOUBLE (f8 LE), 5 STRING (RDB string), or 0 EOF (nothing).
    doc-ref: redis src/rdb.c rdbLoadCheckModuleValue
    seq:
      - id: opcode
        type: rdb_string::rdb_len
        valid:
          expr: not _.is_encoded and _.value <= 5
        -rdbspec-message: 'expected a module opcode 0..5 (EOF, SINT, UINT, FLOAT, DOUBLE, STRING), found {_.is_encoded ? "encoding " : "":s}{_.value}'
        doc: RDB_MODULE_OPCODE_EOF 0, SINT 1, UINT 2, FLOAT 3, DOUBLE 4, STRING 5.
      - id: uint_value
        type: rdb_string::rdb_len
        if: opcode.value == module_opcode::sint.to_i or opcode.value == module_opcode::uint.to_i
        doc: SINT/UINT value (a signed value is its uint64 bit pattern).
      - id: float_value
        type: f4
        if: opcode.value == module_opcode::float.to_i
        doc: FLOAT value, binary32 LE.
      - id: double_value
        type: f8
        if: opcode.value == module_opcode::double.to_i
        doc: DOUBLE value, binary64 LE.
      - id: string_value
        type: rdb_string
        if: opcode.value == module_opcode::string.to_i
        doc: STRING value.
  key_meta:
    doc: |
      KEY_META opcode (243 on REDIS magic, Redis 8.6+) payload - `len num_classes`, then per class
      a u32 class spec and a module-opcode stream ended by EOF (notes §2.3).
    doc-ref: redis src/keymeta.c rdbSaveKeyMetadata
    seq:
      - id: num_classes
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: classes.size}
        doc: Number of metadata classes.
      - id: classes
        type: key_meta_class
        repeat: expr
        repeat-expr: num_classes.value
        doc: The metadata classes.
  key_meta_class:
    doc: One KEY_META class.
    doc-ref: redis src/keymeta.c rdbSaveKeyMetadata
    seq:
      - id: class_spec
        type: u4
        doc: Class spec (host order u32) - bits 31..8 4-char name, 7..3 version, 2..0 flags.
      - id: ops
        type: module_op
        repeat: until
        repeat-until: _.opcode.value == module_opcode::eof.to_i
        doc: The module-opcode stream written by the class's rdb_save callback.
    instances:
      flags:
        value: class_spec & 7
        doc: Flag bits of the class.
      version:
        value: (class_spec >> 3) & 31
        doc: Class version (0..31).
      name:
        value: >-
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".substring((class_spec >> 26) & 63, ((class_spec >> 26) & 63) + 1) +
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".substring((class_spec >> 20) & 63, ((class_spec >> 20) & 63) + 1) +
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".substring((class_spec >> 14) & 63, ((class_spec >> 14) & 63) + 1) +
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".substring((class_spec >> 8) & 63, ((class_spec >> 8) & 63) + 1)
        doc: The 4-character class name (keyMetaClassDecode; charset ends in "_-").
enums:
  module_opcode:
    0:
      id: eof
      doc: RDB_MODULE_OPCODE_EOF, the end of a module's data.
    1:
      id: sint
      doc: RDB_MODULE_OPCODE_SINT, a signed integer (its uint64 bit pattern).
    2:
      id: uint
      doc: RDB_MODULE_OPCODE_UINT, an unsigned integer.
    3:
      id: float
      doc: RDB_MODULE_OPCODE_FLOAT, a 4-byte float.
    4:
      id: double
      doc: RDB_MODULE_OPCODE_DOUBLE, an 8-byte double.
    5:
      id: string
      doc: RDB_MODULE_OPCODE_STRING, an RDB string.
  aux_when:
    1:
      id: before_rdb
      doc: REDISMODULE_AUX_BEFORE_RDB, saved before the keys.
    2:
      id: after_rdb
      doc: REDISMODULE_AUX_AFTER_RDB, saved after the keys.
