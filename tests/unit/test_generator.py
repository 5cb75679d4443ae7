"""The generator on its own: expression translation, spec errors, and the code it renders for a
small spec that uses every reading mode (object, scalar, columns, lazy, streamed, processed)."""

from __future__ import annotations

import ast
import importlib
import re
import sys
import textwrap
from pathlib import Path

import lzf
import pytest

from generator import expressions as ex
from generator.load import SpecError, load_tree
from generator.model import Attribute, Builder, Switch
from generator.plan import (
    OBJECT,
    ROWS,
    SCALAR,
    SKIP,
    Chain,
    Check,
    MessageValue,
    Read,
    TypePlan,
    attribute_expressions,
    skipped_types,
    value_fields,
)
from generator.python.emit import TypeEmitter
from generator.python.render import ModuleRenderer, environment, render_all
from generator.python.translate import Context, translate


def py(text: str, names: dict[str, str] | None = None) -> str:
    names = names or {}
    ctx = Context(lambda n: names.get(n, n), lambda path, member: {("opcode", "eof"): "_EOF"}[(*path, member)])
    return translate(ex.parse(text), ctx)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("a + b * 2", "(a + (b * 2))"),
        ("(a + b) * 2", "((a + b) * 2)"),
        ("a / 2", "(a // 2)"),
        ("x ? 1 : y ? 2 : 3", "(1 if x else (2 if y else 3))"),
        ("not a == b and c", "((not (a == b)) and c)"),
        ("b0 >> 6 == 1", "((b0 >> 6) == 1)"),
        ("opcode == opcode::eof", "(opcode == _EOF)"),
        ("opcode == opcode::eof.to_i", "(opcode == _EOF)"),
        ("magic.substring(5, 9).to_i", "int(magic[5:9])"),
        ("items.size + name.length", "(len(items) + len(name))"),
        ("_io.pos + _io.size", "((pos - io.start) + (io.end - io.start))"),
        ("-1", "-1"),
        ("0x1_0", "16"),
        ("_root.version >= 5", "(root.version >= 5)"),
        ("[1, 2][0]", "[1, 2][0]"),
        ("_root.records[0].body.as<rdb_string::rdb_len>.value", "root.records[0].body.value"),
        ('raw.to_s("ISO-8859-1")', "raw.decode('ISO-8859-1')"),
    ],
)
def test_expressions(source: str, expected: str) -> None:
    assert py(source) == expected


def test_expression_errors() -> None:
    with pytest.raises(ex.ExpressionError):
        ex.parse("a +")
    with pytest.raises(ex.ExpressionError):
        py("x.frobnicate(1)")


def write_spec(folder: Path, name: str, body: str) -> None:
    (folder / f"{name}.ksy").write_text(textwrap.dedent(body))


@pytest.mark.parametrize(
    "body, where",
    [
        ("seq:\n  - id: a\n    type: b4\n", "/seq/0"),
        ("seq:\n  - id: a\n    type: u1\n    repeat: sometimes\n", "/seq/0/repeat"),
        ("seq:\n  - id: a\n    type: u1\n    bogus: 1\n", "/seq/0"),
        ("seq:\n  - id: a\n    type: nothing_like_this\n", "/seq/0/type"),
        ("seq:\n  - id: a\n    type: u2\n", "/seq/0"),
    ],
)
def test_unsupported_constructs_name_file_and_path(tmp_path: Path, body: str, where: str) -> None:
    write_spec(tmp_path, "bad", "meta:\n  id: bad\n" + body)
    with pytest.raises(SpecError) as err:
        Builder(load_tree(tmp_path)).build()
    assert err.value.file == "bad.ksy"
    assert err.value.yaml_path.startswith(where)


OBJECT_AS_NUMBER = """
meta:
  id: slip
seq:
  - id: container
    type: len
  - id: plain
    type: u1
    if: {operand} {op} 1
types:
  len:
    seq:
      - id: value
        type: u1
"""


@pytest.mark.parametrize("op", ["==", "<", "+"])
def test_an_object_used_as_a_number_is_an_error(tmp_path: Path, op: str) -> None:
    """`container == 1` where `container` is an object is never true: the quicklist PLAIN node
    slip of issue 12 (in the library), refused here before it can reach the generated code."""
    write_spec(tmp_path, "slip", OBJECT_AS_NUMBER.format(operand="container", op=op))
    builder = Builder(load_tree(tmp_path))
    with pytest.raises(SpecError) as err:
        render_all(builder, builder.build())
    assert err.value.file == "slip.ksy"
    assert f"operator {op} applied to a len object" in str(err.value)
    write_spec(tmp_path, "slip", OBJECT_AS_NUMBER.format(operand="container.value", op=op))
    builder = Builder(load_tree(tmp_path))
    assert "slip.py" in render_all(builder, builder.build())


@pytest.mark.parametrize(
    "valid",
    [
        "    valid:\n      expr: _ < 5\n",  # no words for it
        "    valid:\n      expr: _ < 5\n    -rdbspec-message: 'expected below 5, found {b}'\n",  # not in the check
        "    valid:\n      expr: _ < 5\n    -rdbspec-message: 'expected below 5, found {10 / _}'\n",  # may raise
        "    valid:\n      expr: _ < 5\n    -rdbspec-message: 'expected {below 5'\n",
    ],
)
def test_a_check_needs_words_that_cannot_fail(tmp_path: Path, valid: str) -> None:
    write_spec(tmp_path, "bad", "meta:\n  id: bad\nseq:\n  - id: a\n    type: u1\n" + valid
               + "  - id: b\n    type: u1\n")
    builder = Builder(load_tree(tmp_path))
    with pytest.raises(SpecError) as err:
        render_all(builder, builder.build())
    assert err.value.file == "bad.ksy" and err.value.yaml_path == "/seq/0/-rdbspec-message"


MINI = """
meta:
  id: mini
  endian: le
doc: A file of records, each a count and that many rows, then a processed blob.
seq:
  - id: magic
    contents: "MINI"
  - id: records
    type: rec
    repeat: until
    repeat-until: _.kind == 0
    -rdbspec-stream: true
  - id: trailer
    type: u2
types:
  rec:
    seq:
      - id: kind
        type: u1
      - id: body
        type: rows
        if: kind != 0
        -rdbspec-lazy: true
  rows:
    seq:
      - id: n
        type: u1
      - id: rows
        type: row(n)
        repeat: expr
        repeat-expr: n
        -rdbspec-columns: true
      - id: packed_len
        type: u1
      - id: packed
        size: packed_len
        process: rdb_lzf(4)
  row:
    params:
      - id: width
        type: u1
    seq:
      - id: head
        type: entry
      - id: items
        type: entry
        repeat: expr
        repeat-expr: width
  entry:
    -rdbspec-scalar: [int_value, str_value]
    -rdbspec-scalar-tests: {is_int: int_value}
    seq:
      - id: tag
        type: u1
      - id: text
        size: tag & 0x7f
        if: tag >= 0x80
    instances:
      int_value:
        value: tag
        if: tag < 0x80
      str_value:
        value: text
        if: tag >= 0x80
"""


def _compiled(tmp_path_factory: pytest.TempPathFactory, spec_id: str, text: str):
    """Generates a package from one spec (twice: the output must be deterministic), puts it on
    sys.path and yields its module."""
    root = tmp_path_factory.mktemp(spec_id)
    spec = root / "spec"
    spec.mkdir()
    write_spec(spec, spec_id, text)
    builder = Builder(load_tree(spec))
    files = render_all(builder, builder.build())
    package = root / f"{spec_id}_generated"
    package.mkdir()
    for name, content in files.items():
        (package / name).write_text(content)
    assert render_all(Builder(load_tree(spec)), Builder(load_tree(spec)).build()) == files
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(f"{spec_id}_generated.{spec_id}")
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory):
    yield from _compiled(tmp_path_factory, "mini", MINI)


def mini_bytes() -> bytes:
    packed = lzf.compress(b"abababab"[:4] * 1) or b"\x03abab"
    row = bytes([1, 0x82]) + b"xy" + bytes([7])  # head 1, items "xy", 7
    record = bytes([1, 2]) + row + row + bytes([len(packed)]) + packed
    return b"MINI" + record + bytes([0]) + (513).to_bytes(2, "little")


def test_streamed_lazy_columns_and_scalars(mini) -> None:
    data = mini_bytes()
    root = mini.Mini.from_bytes(data)
    first = root.records[0]
    assert first.kind == 1
    body = first.body  # decoded on first access
    assert len(body.rows) == 2
    assert body.rows.head == [1, 1]  # columns: one list per field
    assert body.rows[1].items == [b"xy", 7]
    assert body.packed == b"abab"
    assert root.records[1].body is None
    assert root.trailer == 513


def test_iterating_records_one_at_a_time(mini) -> None:
    data = mini_bytes()
    root = mini.Mini._read(mini.Io(data, 0, len(data)), 0, None, None)[0]
    kinds = [r.kind for r in root.iter_records()]
    assert kinds == [1, 0] and root.trailer == 513


def runtime(mini):
    return importlib.import_module(mini.__name__.rsplit(".", 1)[0] + "._runtime")


def test_errors_carry_offset_and_spec_path(mini) -> None:
    data = mini_bytes()
    errors = runtime(mini)
    with pytest.raises(errors.ParseError) as err:
        mini.Mini.from_bytes(b"MINX" + data[4:])
    assert err.value.offset == 0 and err.value.spec_path == "mini:mini.magic"
    with pytest.raises(errors.TruncatedError) as err:
        mini.Mini.from_bytes(data[:-1])
    assert err.value.offset == len(data) - 2 and err.value.spec_path == "mini:mini.trailer"


def test_declared_count_is_checked_before_allocating(mini) -> None:
    """255 rows of at least one byte each cannot fit in the 2 bytes that remain: the skip pass
    over the lazy body rejects the count before any row list exists."""
    data = b"MINI" + bytes([1, 255, 1, 1]) + bytes([0]) + b"\0\0"
    with pytest.raises(runtime(mini).ParseError) as err:
        mini.Mini.from_bytes(data)
    assert "exceeds" in err.value.reason and err.value.spec_path == "mini:rows.rows" and err.value.offset == 6


def test_generated_tree_is_current() -> None:
    """generated/ and docs/spec/ are what the generator makes of spec/ (CI's staleness check)."""
    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    files = render_all(builder, builder.build())
    assert set(files) == {p.name for p in (repo / "generated").glob("*.py")}


TAGGED = """
meta:
  id: tagged
  endian: le
doc: Entries whose tag byte selects which fields follow, each closed by a check.
seq:
  - id: entries
    type: entry
    repeat: eos
types:
  entry:
    -rdbspec-scalar: [value]
    seq:
      - id: tag
        type: u1
        valid:
          expr: _ < 0xf0
        -rdbspec-message: 'expected a tag below 0xf0, found {_:#04x}'
      - id: small
        type: u1
        if: tag >= 0x80 and tag < 0xc0
      - id: wide
        type: u2
        if: tag == 0xc0
      - id: text
        size: text_len
        if: tag > 0xc0
      - id: check
        size: check_size
        valid:
          expr: _[0] == tag and (check_size < 2 or _[1] == 0)
        -rdbspec-message: 'expected the tag {tag} (then 0 after a wide value), found {_}'
    instances:
      text_len:
        value: 'tag > 0xc0 ? tag - 0xc0 : 0'
      check_size:
        value: 'tag == 0xc0 ? 2 : 1'
      signed:
        value: (wide ^ 0x8000) - 0x8000
        if: tag == 0xc0
      value:
        value: 'tag < 0x80 ? tag : tag < 0xc0 ? small : tag == 0xc0 ? (signed < 0 ? -signed : signed) : text'
"""


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory):
    yield from _compiled(tmp_path_factory, "tagged", TAGGED)


def test_what_the_generator_proves_shapes_the_code(tagged) -> None:
    source = Path(tagged.__file__).read_text()
    reader = source[source.index("def read_entry"):]
    assert "try:" not in reader  # both valid expressions are proven not to raise
    assert "if tag >= 128:" in reader and "elif (tag == 192):" in reader  # one guarded chain
    assert "(signed := " in reader  # computed only where the 0xC0 branch needs it
    assert "buf[check_pos]" in reader and "buf[check_pos + 1]" in reader and "check = " not in reader


def test_proven_code_reads_the_same_values_and_errors(tagged) -> None:
    errors = runtime(tagged)
    wide = bytes([0xC0, 0xFF, 0xFF, 0xC0, 0])  # -1, then a 2-byte check
    data = bytes([5, 5, 0x90, 7, 0x90, 0xC2]) + b"ab" + bytes([0xC2]) + wide
    assert tagged.Tagged.from_bytes(data).entries == [5, 7, b"ab", 1]
    with pytest.raises(errors.ParseError) as err:  # the check's second byte must be 0
        tagged.Tagged.from_bytes(data[:-1] + b"\x01")
    assert err.value.offset == len(data) - 2 and err.value.spec_path == "tagged:entry.check"
    assert err.value.reason == "expected the tag 192 (then 0 after a wide value), found b'\\xc0\\x01'"
    with pytest.raises(errors.ParseError) as err:
        tagged.Tagged.from_bytes(bytes([0xF5, 0xF5]))
    assert err.value.offset == 0 and err.value.spec_path == "tagged:entry.tag"
    assert err.value.reason == "expected a tag below 0xf0, found 0xf5"
    with pytest.raises(errors.TruncatedError) as err:
        tagged.Tagged.from_bytes(bytes([0xC5, 1, 2]))
    assert err.value.offset == 1 and err.value.spec_path == "tagged:entry.text"


def test_the_plan_of_a_type_says_what_is_read_and_checked(tmp_path: Path) -> None:
    """The decisions behind the code above, as the target-neutral plan holds them: the steps
    (a chain entered only from 0x80), the checks with their messages, the field read in place
    and the instance computed where its guard needs it."""
    write_spec(tmp_path, "tagged", TAGGED)
    builder = Builder(load_tree(tmp_path))
    entry = next(t for t in builder.build()["tagged"].walk() if t.id == "entry")
    plan = TypePlan(builder, entry, SCALAR)
    tag, small, wide, text, check = entry.seq
    steps = plan.steps(plan.read_fields())
    assert [type(step) for step in steps] == [Read, Chain, Read]
    assert steps[0].attr is tag and steps[2].attr is check
    assert steps[1].attrs == (small, wide, text) and steps[1].bound == (ex.Name("tag"), 0x80)
    assert [cond for cond, _ in steps[1].branches] == [small.cond, wide.cond, text.cond]
    assert plan.checks(tag) == [Check("expr", (ex.parse("_ < 0xf0"),), tag.raw["-rdbspec-message"])]
    assert list(plan.message(tag, plan.checks(tag)[0], lambda name: False)) == [
        "expected a tag below 0xf0, found ", MessageValue(ex.Name("_"), "#04x")]
    assert plan.read_in_place(check) and not plan.read_in_place(text)
    assert plan.in_place(entry.attribute("value").value, lambda name: False) == ["signed"]


def test_a_listpack_entry_is_pushed_without_a_python_object() -> None:
    """The proofs behind the native `c_push_lp_entry`: every conditional number is read only
    where its condition holds (b1 inside `uint13`, whose own condition implies b1's), and each
    candidate of the scalar holds a value exactly where its condition holds, so the entry's
    integer stays a C number and the result is told by `is_int`."""
    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    entry = next(t for t in builder.build()["listpack"].walk() if t.id == "lp_entry")
    plan = TypePlan(builder, entry, SCALAR)
    for name in ("b1", "int24_lo", "int24_hi", "int64", "uint13", "uint24", "int_value"):
        assert plan.read_only_when_present(entry.attribute(name)), name
    for name in ("uint13", "int_value"):
        kind = plan.kind_where_present(entry.attribute(name))
        assert kind is not None and kind.base == "int" and not kind.nullable
    source = (repo / "generated" / "native" / "listpack.pyx").read_text()
    push = source[source.index("cdef int c_push_lp_entry"):]
    push = push[:push.index("return 0")]
    assert "cdef long long int_value = 0" in push and "cdef long long uint13 = 0" in push
    assert "is not None" not in push and not re.search(r"\b_value\b", push)  # never boxed to be tested
    assert push.rstrip().endswith("if is_int:\n        out.push_int(int_value)\n    elif (not is_int):\n"
                                  "        out.push_span(str__start, str__length)\n    else:\n        out.push_none()")


def test_a_stream_entry_row_reads_its_checked_numbers_as_c_numbers() -> None:
    """The proofs behind the native rows reader of `stream_entry`: once `flags` passed its check
    (`_.is_int`), `flags.int_value` gives a value wherever it is read, and `& entry_flag::samefields`
    (a member, so a non-negative number) keeps it in 64 bits; `num_fields.int_value` gives one
    where the SAMEFIELDS bit is clear (num_fields is there), but doubling it may leave 64 bits:
    the target computes that with Python ints."""
    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    entry = next(t for t in builder.build()["stream"].walk() if t.id == "stream_entry")
    plan = TypePlan(builder, entry, ROWS)
    flags, num_fields, items = (entry.attribute(name) for name in ("flags", "num_fields", "items"))
    checked = {"flags": plan.checked_tests(flags), "num_fields": plan.checked_tests(num_fields)}
    assert checked == {"flags": {"is_int"}, "num_fields": {"is_int"}}
    assert not plan.checked_tests(entry.attribute("lp_count"))  # a warning: reading goes on when it fails

    def reads(node: ex.Node, known: dict) -> list[tuple[str, bool]]:
        found = plan.present_reads(node, None, known)
        return sorted((n.target.name, found[id(n.target)]) for n in ex.nodes_in(node)
                      if isinstance(n, ex.Attr) and id(n.target) in found)

    assert reads(num_fields.cond, checked) == [("flags", True)]
    assert reads(num_fields.cond, {}) == []  # before its check nothing is known of flags
    assert reads(items.repeat_expr, checked) == [("flags", True), ("num_fields", False)]


class _CallingReaders(TypeEmitter):
    """Another emitter of the same plan: numbers are read by calling a reader."""

    def read_primitive(self, a: Attribute, ref, local: str) -> None:
        self.emit(f"{local}, pos = read_{ref.name}(buf, pos, end)")


class _CallingRenderer(ModuleRenderer):
    emitter = _CallingReaders


def test_an_emitter_subclass_renders_the_same_plan_its_own_way(tmp_path: Path) -> None:
    """What a second target does: override how one construct reads; every decision (the chain
    and its bound, the check, the field read in place) stays the plan's."""
    write_spec(tmp_path, "tagged", TAGGED)
    builder = Builder(load_tree(tmp_path))
    roots = builder.build()
    source = _CallingRenderer(builder, roots["tagged"], skipped_types(roots)).render(environment())
    reader = source[source.index("def read_entry"):]
    assert "tag, pos = read_u1(buf, pos, end)" in reader and "wide, pos = read_u2(buf, pos, end)" in reader
    assert "unpack_" not in reader and "buf[pos]" not in reader
    assert "if tag >= 128:" in reader and "elif (tag == 192):" in reader and "buf[check_pos + 1]" in reader


def _leaves(record: object):
    if isinstance(record, (Read, Chain, Check, MessageValue)):
        for name in record.__dataclass_fields__:
            yield from _leaves(getattr(record, name))
    elif isinstance(record, tuple):
        for item in record:
            yield from _leaves(item)
    else:
        yield record


def test_a_plan_holds_no_target_text() -> None:
    """What every emitter walks is made of model objects, expression trees, names and numbers,
    in every type of the specs and every reading mode; its only words are the spec's own (a
    rule's name, a check's message)."""
    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    types = [t for root in builder.build().values() for t in root.walk()]
    checked = 0
    for t in types:
        for mode in (OBJECT, SCALAR, ROWS, SKIP):
            plan = TypePlan(builder, t, mode)
            for step in plan.steps(plan.read_fields()):
                leaves = list(_leaves(step))
                assert all(leaf is None or isinstance(leaf, (Attribute, ex.Node, int)) for leaf in leaves), t.spec_path
            assert {plan.storage(inst) for inst in t.instances} <= {"field", "computed", "cached"}
            for a in t.seq:
                for check in plan.checks(a):
                    template = " ".join(check.template.split())
                    assert check.kind in plan.rules(a) and all(isinstance(n, ex.Node) for n in check.operands)
                    assert check.template == a.raw.get("-rdbspec-message", check.template)
                    for part in plan.message(a, check, lambda name: True):
                        assert part in template if isinstance(part, str) else isinstance(part.node, ex.Node)
                    checked += 1
    assert checked > 50  # the specs' checks were all seen


WARNED = """
meta:
  id: warned
seq:
  - id: count
    type: u1
    valid:
      max: 5
    -rdbspec-warn: a server function that loads any count
  - id: items
    type: u1
    repeat: expr
    repeat-expr: count
"""


@pytest.fixture(scope="module")
def warned(tmp_path_factory: pytest.TempPathFactory):
    yield from _compiled(tmp_path_factory, "warned", WARNED)


def test_a_warning_check_tells_the_sink_and_reads_on(warned) -> None:
    """`-rdbspec-warn`: a check the server does not make on load goes to the sink in force, with
    the offset and spec path, and the fields after it are read; with no sink it is an error, as
    in the official compiler's output."""
    data = bytes([6, 1, 2, 3, 4, 5, 6])
    errors = runtime(warned)
    told: list[tuple[str, int | None, str]] = []
    with errors.collecting(lambda *warning: told.append(warning)):
        root = warned.Warned.from_bytes(data)
    assert root.items == [1, 2, 3, 4, 5, 6]
    assert told == [("expected at most 5, found 6", 0, "warned:warned.count")]
    with pytest.raises(errors.ParseError) as err:
        warned.Warned.from_bytes(data)
    assert err.value.reason == "expected at most 5, found 6" and err.value.offset == 0


def test_a_warning_needs_a_check_and_the_server_function(tmp_path: Path) -> None:
    write_spec(tmp_path, "bad", "meta:\n  id: bad\nseq:\n  - id: a\n    type: u1\n    -rdbspec-warn: x\n")
    with pytest.raises(SpecError) as err:
        Builder(load_tree(tmp_path)).build()
    assert err.value.yaml_path == "/seq/0/-rdbspec-warn"


SUMMED = """
meta:
  id: summed
seq:
  - id: sums
    type: sums
    -rdbspec-lazy: true
  - id: trailer
    type: u1
types:
  sums:
    seq:
      - id: steps
        type: 'step(_index == 0 ? 0 : steps[_index - 1].sum)'
        repeat: until
        repeat-until: _.sum >= 10
  step:
    params:
      - id: before
        type: u1
    seq:
      - id: add
        type: u1
    instances:
      sum:
        value: before + add
"""


@pytest.fixture(scope="module")
def summed(tmp_path_factory: pytest.TempPathFactory):
    yield from _compiled(tmp_path_factory, "summed", SUMMED)


def test_a_repeated_element_reads_the_ones_before_it(summed) -> None:
    """An element's arguments may read the elements already read (`steps[_index - 1]`), as in
    the official compiler's output, which appends to the field as it goes: when the field is
    built (object mode) and when it is stepped over (the lazy field's skip reader)."""
    root = summed.Summed.from_bytes(bytes([3, 4, 5, 0xEE]))
    assert root.trailer == 0xEE  # the skip reader found where the steps end
    assert [step.sum for step in root.sums.steps] == [3, 7, 12]


@pytest.mark.parametrize("instances, kinds", [
    (["big: {value: 'b0 >= 128 ? wide : (b0 & 0x7f)'}", "small: {value: b0 < 128}"], {"big": "int", "small": "bool"}),
    (["big: {value: 'b0 - 1'}"], None),  # a subtraction may go below zero
    (["big: {value: 'wide'}"], None),  # `wide` read where it may be absent
    (["big: {value: '_parent.x'}"], None),
])
def test_a_type_of_unsigned_numbers_is_read_into_c_values(tmp_path: Path, instances: list[str],
                                                          kinds: dict[str, str] | None) -> None:
    """plan.value_fields: the types the native target reads into a C struct (c_scan_<id>)
    instead of an object, and the ones it must not (their values could differ from Python's)."""
    spec = ["meta: {id: lengths, endian: be}", "seq:", "  - {id: x, type: u1}", "  - {id: n, type: num}",
            "types:", "  num:", "    seq:", "      - {id: b0, type: u1}", "      - {id: wide, type: u8, if: b0 >= 128}",
            "    instances:"] + [f"      {line}" for line in instances]
    write_spec(tmp_path, "lengths", "\n".join(spec) + "\n")
    builder = Builder(load_tree(tmp_path))
    root = builder.build()["lengths"]
    assert value_fields(builder, root.attribute("n").type.target) == kinds


def _enum_valued(builder: Builder) -> dict[str, set[str]]:
    """Per spec: the ids whose values are members of a spec enum (the fields, instances and
    parameters with `enum:`), and the switches over them by the local that holds what they
    switch on (`<field>_on`)."""
    names: dict[str, set[str]] = {}
    for name, root in builder.roots.items():
        found = names.setdefault(name, set())
        for t in root.walk():
            typed = {a.id for a in t.seq + t.instances if a.enum} | {p.id for p in t.params if p.enum}
            found |= typed
            for a in t.seq + t.instances:
                if isinstance(a.type, Switch) and (ex.names_in(a.type.on) & typed
                                                   or any(isinstance(key, ex.EnumRef) for key, _ in a.type.cases)):
                    found.add(f"{a.id}_on")
    return names


def _holds_member(node, names: set[str]) -> bool:
    """`kind`, `self.kind`, `body_on`, a writer's `i_kind`/`pa_kind`...: one of `names`."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name is not None and re.sub(r"^(i|r|f|pa)_|_$", "", name) in names


def _number(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and bool(node.elts) and all(map(_number, node.elts))


def test_generated_code_names_the_enum_members_it_compares_with() -> None:
    """Where a value of a spec enum (record kind, value type, blob kind...) is compared, the
    generated code names the member (`body_on == _SELECT_DB`), in both targets: a module-level
    int bound from generated/enums.py in Python, a compile-time constant of the same number in
    Cython (`DEF _SELECT_DB = 254  # RecordKind.SELECT_DB`). The enum-valued names come from the
    model."""
    from rdbspec_generated import enums

    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    builder.build()
    valued = _enum_valued(builder)
    assert {"kind", "value_kind", "body_on", "value_on", "plain_on", "lzf_on"} <= valued["rdb"] | valued["rdb_string"]
    found, named = [], 0
    for spec, names in sorted(valued.items()):
        path = repo / "generated" / f"{spec}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(_holds_member(n, names) for n in operands):
                    named += 1
                    if any(map(_number, operands)):
                        found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if not names:
            continue
        alternatives = "|".join(sorted(names))
        held = rf"\b(?:(?:i|r|f|pa)_)?(?:{alternatives})_?\b"
        compared = re.compile(rf"{held}\s*(?:==|!=|<=|>=|<|>)\s*-?\d|\d\s*(?:==|!=|<=|>=|<|>)\s*(?:\w+\.)*{held}")
        path = repo / "generated" / "native" / f"{spec}.pyx"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if compared.search(line):
                found.append(f"{path.name}:{number}: {line.strip()}")
            constant = re.fullmatch(r"DEF (_\w+) = (\d+)  # (\w+)\.(\w+)", line)
            if constant:
                assert int(getattr(enums, constant[3])[constant[4]]) == int(constant[2]), line
    assert named >= 50 and found == []


def test_an_enum_member_is_named_after_it_and_its_enum_where_another_has_that_name() -> None:
    """The constant of `record_kind::select_db` is `_SELECT_DB`; EOF is a member of two enums
    (record_kind, module_opcode), so each is qualified: `_RECORD_KIND_EOF`."""
    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    roots = builder.build()
    record = next(t for t in roots["rdb"].walk() if t.id == "record")
    member = builder.enum_member(record, (), "record_kind", "select_db", record.yaml_path)
    assert (member.enum, member.name, member.value, member.constant) == ("RecordKind", "SELECT_DB", 254, "_SELECT_DB")
    assert builder.enum_member(record, (), "record_kind", "eof", record.yaml_path).constant == "_RECORD_KIND_EOF"
    blob = builder.enum_member(record, ("rdb_string",), "blob_kind", "ziplist", record.yaml_path)
    assert (blob.enum, blob.constant, blob.value) == ("BlobKind", "_ZIPLIST", 2)
    source = (repo / "generated" / "rdb.py").read_text(encoding="utf-8")
    assert "from .enums import BlobKind, RecordKind, ValueType\n" in source
    assert "\n_SELECT_DB = int(RecordKind.SELECT_DB)\n" in source and "if body_on == _SELECT_DB:" in source
    native = (repo / "generated" / "native" / "rdb.pyx").read_text(encoding="utf-8")
    assert "\nDEF _SELECT_DB = 254  # RecordKind.SELECT_DB\n" in native and "if body_on == _SELECT_DB:" in native


def _results(node: ex.Node):
    """What an expression may evaluate to: each branch of its conditionals."""
    if isinstance(node, ex.Ternary):
        yield from _results(node.then)
        yield from _results(node.other)
    else:
        yield node


def test_the_spec_names_the_members_of_its_enums() -> None:
    """An enum-valued field, instance or parameter is compared with members, never numbers;
    a switch over one has members as cases, and an instance of an enum gives members
    (`record_kind::key_value.to_i`) where it gives a fixed one. What the generated code names
    comes from there."""
    repo = Path(__file__).resolve().parents[2]
    builder = Builder(load_tree(repo / "spec"))
    builder.build()
    found = []
    for root in builder.roots.values():
        for t in root.walk():
            typed = {a.id for a in t.seq + t.instances if a.enum} | {p.id for p in t.params if p.enum}
            for a in t.seq + t.instances:
                where = f"{t.spec_path}.{a.id}"
                nodes = attribute_expressions(a)
                if isinstance(a.type, Switch) and ex.names_in(a.type.on) & typed:
                    found += [f"{where}: case {key}" for key, _ in a.type.cases if not isinstance(key, ex.EnumRef)]
                if a.enum and a.value is not None:
                    found += [f"{where}: gives {n.value}" for n in _results(a.value) if isinstance(n, ex.Num)]
                for node in nodes:
                    for n in ex.nodes_in(node):
                        if isinstance(n, ex.Binary) and n.op in ("==", "!=", "<", "<=", ">", ">="):
                            sides = (n.left, n.right)
                            named = any(isinstance(side, ex.Name) and side.name in typed for side in sides)
                            if named and any(isinstance(side, ex.Num) for side in sides):
                                found.append(f"{where}: {n}")
    assert found == []


REGISTRY = """
meta:
  id: registry
  endian: le
seq:
  - id: records
    type: rec
    repeat: until
    repeat-until: _.opcode == 255
    -rdbspec-stream: true
    -rdbspec-index:
      defs:
        if: _.opcode == 242
        key: _.body.as<def>.id
        value: _.body.as<def>
types:
  rec:
    seq:
      - id: opcode
        type: u1
      - id: body
        type:
          switch-on: opcode
          cases:
            242: def
            1: use
        if: opcode != 255
  def:
    seq:
      - id: id
        type: u1
        valid:
          expr: earlier == 0
        -rdbspec-message: 'expected an id no def before has, found {_}'
      - id: width
        type: u1
    instances:
      probes:
        pos: 0
        size: 0
        type: probe(id, _index)
        repeat: until
        repeat-until: _.is_here or _index + 1 >= _root.records.size
      earlier:
        value: 'probes.last.is_here ? probes.last.found.width : 0'
        -rdbspec-lookup: {index: defs, key: id, value: _.width, default: 0}
  use:
    seq:
      - id: id
        type: u1
        valid:
          expr: width != 0
        -rdbspec-message: 'expected the id of a def before, found {_}'
      - id: items
        type: u1
        repeat: expr
        repeat-expr: width
    instances:
      probes:
        pos: 0
        size: 0
        type: probe(id, _index)
        repeat: until
        repeat-until: _.is_here or _index + 1 >= _root.records.size
      width:
        value: 'probes.last.is_here ? probes.last.found.width : 0'
        -rdbspec-lookup: {index: defs, key: id, value: _.width, default: 0}
      definition:
        value: probes.last.found
        -rdbspec-lookup: {index: defs, key: id}
  probe:
    params:
      - id: id
        type: u8
      - id: index
        type: u4
    instances:
      is_here:
        value: >-
          index < _root.records.size and _root.records[index].opcode == 242 and
          _root.records[index].body.as<def>.id == id
      found:
        value: _root.records[index].body.as<def>
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory):
    yield from _compiled(tmp_path_factory, "registry", REGISTRY)


def test_a_lookup_reads_what_the_root_indexed_of_the_records_before(registry) -> None:
    """`-rdbspec-index` keeps the records read so far by key, `-rdbspec-lookup` reads it: what the
    official compiler finds by trying `_root.records` one by one (the `probes`, which our
    generator does not render), found without the search, when reading and when writing."""
    root = registry.Registry.from_bytes(bytes([242, 5, 2, 1, 5, 10, 11, 255]))
    use = root.records[1].body
    assert use.items == [10, 11] and use.width == 2 and use.definition is root.records[0].body
    assert set(root.defs) == {5} and not hasattr(use, "probes")
    errors = runtime(registry)
    with pytest.raises(errors.ParseError) as err:  # no def 6 before the use
        registry.Registry.from_bytes(bytes([1, 6, 10, 11, 242, 6, 2, 255]))
    assert err.value.offset == 1 and "the id of a def before, found 6" in err.value.reason
    with pytest.raises(errors.ParseError) as err:  # a second def of 5
        registry.Registry.from_bytes(bytes([242, 5, 2, 242, 5, 1, 255]))
    assert err.value.offset == 4 and err.value.spec_path == "registry:def.id"
    out = errors.WriteIo()
    root._write(out)
    assert bytes(out.data) == bytes([242, 5, 2, 1, 5, 10, 11, 255])
    written = errors.WriteInputs(defs={})  # a writer of one record at a time notes each in the index
    registry.Registry.index_records(written, root.records[0])
    out = errors.WriteIo()
    root.records[1]._write(out, None, written)
    assert bytes(out.data) == bytes([1, 5, 10, 11])
    root.records[1].body.items = [10]
    with pytest.raises(errors.WriteError):
        root.records[1]._write(errors.WriteIo(), None, written)
