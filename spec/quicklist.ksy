meta:
  id: quicklist
  title: Redis quicklists (types 14 and 18)
  endian: le
  imports:
    - rdb_string
doc: |
  LIST_QUICKLIST (type 14, notes §5.5): `len node_count`, then one ziplist blob per node.
  The root type is the type-14 value; `quicklist_2` is type 18.
doc-ref: redis src/rdb.c rdbLoadObject
seq:
  - id: num_nodes
    type: rdb_string::rdb_len
    -rdbspec-write: {is_encoded: false, value: nodes.size}
    doc: Number of quicklist nodes.
  - id: nodes
    type: rdb_string::rdb_blob(rdb_string::blob_kind::ziplist)
    repeat: expr
    repeat-expr: num_nodes.value
    -rdbspec-lazy: true
    -rdbspec-splits: true
    doc: The nodes, each a ziplist (possibly LZF-compressed).
enums:
  container_kind:
    1:
      id: plain
      doc: QUICKLIST_NODE_CONTAINER_PLAIN, one element too big for a listpack, as a plain string.
    2:
      id: packed
      doc: QUICKLIST_NODE_CONTAINER_PACKED, a listpack of elements.
types:
  quicklist_2:
    doc: |
      LIST_QUICKLIST_2 (type 18, notes §5.5): `len node_count`, then per node a container kind
      (1 PLAIN: a single raw element; 2 PACKED: a listpack) and a string.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: num_nodes
        type: rdb_string::rdb_len
        -rdbspec-write: {is_encoded: false, value: nodes.size}
        doc: Number of quicklist nodes.
      - id: nodes
        type: quicklist_2_node
        repeat: expr
        repeat-expr: num_nodes.value
        -rdbspec-lazy: true
        -rdbspec-splits: true
        doc: The nodes.
  quicklist_2_node:
    doc: One type-18 quicklist node.
    doc-ref: redis src/rdb.c rdbSaveObject
    seq:
      - id: container
        type: rdb_string::rdb_len
        valid:
          expr: _.value == container_kind::plain.to_i or _.value == container_kind::packed.to_i
        -rdbspec-message: 'expected container 1 (PLAIN) or 2 (PACKED), found {_.value}'
        doc: QUICKLIST_NODE_CONTAINER_PLAIN (1) or QUICKLIST_NODE_CONTAINER_PACKED (2).
      - id: plain
        type: rdb_string
        if: container.value == container_kind::plain.to_i
        doc: A PLAIN node's single element.
      - id: packed
        type: rdb_string::rdb_blob(rdb_string::blob_kind::listpack)
        if: container.value == container_kind::packed.to_i
        doc: A PACKED node's listpack (possibly LZF-compressed).
