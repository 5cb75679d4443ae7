meta:
  id: intset
  title: Redis intset
  endian: le
doc: |
  An intset (notes §5.3): u32 LE encoding (bytes per member: 2, 4 or 8), u32 LE length,
  then `length` little-endian signed members in ascending order. The size must be exactly
  8 + length * encoding and the set must not be empty.
doc-ref: redis src/intset.c intsetValidateIntegrity
seq:
  - id: encoding
    type: u4
    valid:
      any-of: [2, 4, 8]
    doc: Bytes per member (INTSET_ENC_INT16/32/64).
  - id: length
    type: u4
    -rdbspec-write: members.size
    valid:
      expr: _ > 0 and 8 + _ * encoding == _io.size
    -rdbspec-message: 'expected members filling the {_io.size}-byte intset ({encoding} bytes each, at least one), found {_}'
    doc: Number of members; an empty intset is corrupt.
  - id: members
    type:
      switch-on: encoding
      cases:
        2: s2
        4: s4
        8: s8
    repeat: expr
    repeat-expr: length
    doc: The members, sorted ascending.
