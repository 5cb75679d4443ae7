meta:
  id: function
  title: FUNCTION2 and pre-GA FUNCTION opcodes
  endian: le
  imports:
    - rdb_string
doc: Function library records (notes §2.2). The root type is empty.
doc-ref: redis src/rdb.c rdbSaveFunctions
types:
  function2:
    doc: FUNCTION2 opcode (245, Redis 7.0-rc3+) payload - the full library source with its shebang.
    doc-ref: redis src/rdb.c rdbFunctionLoad
    seq:
      - id: library_code
        type: rdb_string
        doc: The library code, e.g. "#!lua name=mylib ...".
  function_pre_ga:
    doc: |
      FUNCTION opcode (246, Redis 7.0-rc1/rc2 only) payload - name, engine, `len has_desc`,
      [description], code. Current servers reject it.
    doc-ref: redis 7.0-rc1 src/rdb.c rdbSaveFunctions
    seq:
      - id: name
        type: rdb_string
        doc: Function name.
      - id: engine
        type: rdb_string
        doc: Engine name (e.g. LUA).
      - id: has_desc
        type: rdb_string::rdb_len
        doc: |
          1 when a description follows, else 0. The server reads a description after any
          non-zero value (redis src/rdb.c rdbFunctionLoad), and so does this grammar.
      - id: desc
        type: rdb_string
        if: has_desc.value != 0
        doc: The description.
      - id: code
        type: rdb_string
        doc: The function code.
