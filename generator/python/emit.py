"""The Python emitter: renders each type's reading plan (plan.py) as Python source lines.

A type is read by one function. Seq fields are read into locals (named after their ids) and
stored where the mode says: on `self` (object mode), into column lists (row mode), or not at all
(scalar mode, where the function returns one value instance). Instances an expression needs
while reading are computed into locals at first use, so the hot path reads no properties.
Every decision comes from the type's `TypePlan`; `TypeEmitter` only says how each step reads in
Python, one method per construct, so an emitter for another language subclasses it and
overrides the methods whose text differs.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Optional

from .. import expressions as ex
from ..load import SpecError
from ..model import Attribute, Builder, EnumMember, IndexSpec, Primitive, Switch, Text, TypeRef, TypeSpec, UserRef
from ..plan import (
    ELEMENT,
    LENGTH,
    OBJECT,
    ROWS,
    SCALAR,
    Chain,
    Check,
    MessageValue,
    Read,
    TypePlan,
    chunk_row,
    element_min_size,
    is_lazy,
    opened_field,
)
from .translate import Context, translate


@dataclass
class Lines:
    lines: list[str] = field(default_factory=list)
    depth: int = 0

    def add(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)


class TypeEmitter:
    """Emits the reading function of one type in one mode, as its plan says."""

    # names the generated functions use for themselves: a field of that name gets a `_` suffix
    reserved = frozenset({"pos", "io", "buf", "end", "self", "cls", "root", "parent", "cols", "count", "start",
                          "step", "cuts", "cut_at", "len", "int", "str", "bytes", "range", "struct", "Io",
                          "invalid", "truncated", "count_exceeds", "lzf_decompress"})
    processes = {"rdb_lzf": "lzf_decompress"}  # a spec's `process` name: the runtime function

    def __init__(self, builder: Builder, t: TypeSpec, mode: str):
        self.builder = builder
        self.t = t
        self.plan = TypePlan(builder, t, mode)
        self.out = Lines(depth=2 if mode != SCALAR else 1)
        self.known: list[set[str]] = [set(self.local(p.id) for p in t.params)]
        self.pre: list[str] = []
        self.loop_item: Optional[str] = None
        self.current_attr: Optional[Attribute] = None
        self.loop_index: Optional[str] = None
        self.unpackers: set[str] = set()
        self.modules: set[str] = set()
        self.enum_members: set[EnumMember] = set()  # the members its expressions name
        self.bound: dict[str, str] = {}
        self.in_place: dict[str, bool] = {}  # instances computed where used (name: computed yet)
        self.ranged: Optional[Attribute] = None  # the `-rdbspec-splits` field read from `start, count`
        self.open_tail: Optional[Attribute] = None  # the field `_open` leaves (plan.opened_field)
        self.opening = False  # a lazy property's read: types that can be opened are (`_open`)

    @property
    def mode(self) -> str:
        return self.plan.mode

    @classmethod
    def local(cls, name: str) -> str:
        """The local variable that holds a field, instance or parameter."""
        return f"{name}_" if name in cls.reserved or keyword.iskeyword(name) else name

    def is_read(self, name: str) -> bool:
        """The field or instance `name` has its value in a local here."""
        return self.is_known(self.local(name))

    # -- name resolution -------------------------------------------------------------------

    def is_known(self, name: str) -> bool:
        return any(name in scope for scope in self.known)

    def resolve(self, name: str) -> str:
        if name == "_":
            if self.loop_item is None:
                raise ex.ExpressionError("_ is only valid in repeat-until and valid")
            return self.loop_item
        if name == "_index":
            if self.loop_index is None:
                raise ex.ExpressionError("_index is only valid inside a repeat")
            return self.loop_index
        local = self.local(name)
        if name in self.in_place:
            if self.in_place[name]:
                return local
            self.in_place[name] = True
            return f"({local} := {self.expr(self.t.attribute(name).value)})"
        if self.is_known(local):
            return local
        if name in (p.id for p in self.t.params) and self.mode == OBJECT:
            return f"self.{name}"
        attr = self.t.attribute(name)
        if attr is None:
            raise ex.ExpressionError(f"{self.t.id} has no field, instance or param {name!r}")
        if not attr.is_instance:
            if self.mode == OBJECT:
                return f"self.{name}"
            raise ex.ExpressionError(f"{name} is used before it is read")
        if attr.value is None:
            if self.mode != OBJECT:
                raise ex.ExpressionError(f"positional instance {name} is not available in {self.mode} mode")
            return f"self.{name}"
        self.materialize(attr)
        return local

    def materialize(self, attr: Attribute) -> None:
        local = self.local(attr.id)
        self.pre.append(f"{local} = {self.instance_value(attr)}")
        if self.mode == OBJECT and self.plan.storage(attr) == "cached":
            self.pre.append(f"self._m_{attr.id} = {local}")
        self.known[-1].add(local)

    def instance_value(self, attr: Attribute) -> str:
        """A value instance's expression (None when its condition does not hold)."""
        outer = self.in_place
        self.in_place = dict.fromkeys(self.plan.in_place(attr.value, self.is_read), False)
        value = self.expr(attr.value)
        self.in_place = outer
        return value if attr.cond is None else f"({value} if {self.expr(attr.cond)} else None)"

    def ctx(self, pos: Optional[str] = "pos") -> Context:
        """Inside a lazy property (pos None) the tree is reached through `self`."""
        if pos is None:
            return Context(self.resolve, self.enum_member, None, None, self.attribute,
                           root="self._root", parent="self._parent")
        return Context(self.resolve, self.enum_member, pos, "io", self.attribute, self.subscript)

    def attribute(self, node: ex.Node, name: str, source: str) -> Optional[str]:
        """`x.name` where the spec makes the type of `x` certain: on a scalar-compiled value, a
        type test; an instance that cannot raise, read from a local, is read once into a local
        `x_name` (the first use computes it, later ones in its scope reuse it)."""
        if name in ("size", "length", "first", "last"):
            return None  # of a list (the static type of a repeat is its element's): the translator's own
        target = self.plan.static_type(node, self.current_attr)
        if target is None:
            return None
        if target.scalar:
            value = self.scalar_attribute(target, name, source)
        elif self.plan.plain_instance(node, target, name, self.current_attr):
            value = f"{source}.{name}"
        else:
            return None
        if not isinstance(node, ex.Name) or not self.is_known(source):
            return value
        field_id = self.current_attr.id if node.name == "_" and self.current_attr is not None else node.name
        shared = f"{source.rstrip('_')}_{name}"
        if (field_id, name) not in self.plan.shared or self.t.attribute(shared) is not None or shared in self.reserved:
            return value
        if not self.is_known(shared):
            self.pre.append(f"{shared} = {value}")
            self.known[-1].add(shared)
        return shared

    def subscript(self, node: ex.Index) -> Optional[str]:
        """`field[k]` of a field read byte by byte: the byte in the buffer."""
        target = node.target
        if target == ex.Name("_") and self.loop_item is not None and self.current_attr is not None:
            target = ex.Name(self.current_attr.id)
        if isinstance(target, ex.Name) and target.name in self.plan.byte_indexed and isinstance(node.index, ex.Num):
            start = f"{self.local(target.name)}_pos"
            return f"buf[{start} + {node.index.value}]" if node.index.value else f"buf[{start}]"
        return None

    @staticmethod
    def scalar_attribute(target: TypeSpec, name: str, source: str) -> str:
        """`entry.int_value` where entry is scalar-compiled: a type test on the scalar."""
        if name in target.scalar:
            kind = target.scalar_kind(name)
            return f"({source} if isinstance({source}, {kind}) else None)"
        if name in target.scalar_tests:
            return f"isinstance({source}, {target.scalar_kind(target.scalar_tests[name])})"
        readable = target.scalar + list(target.scalar_tests)
        raise ex.ExpressionError(f"{target.id} is compiled to a scalar: only {readable} can be read from it")

    def enum_member(self, path: tuple[str, ...], member: str) -> str:
        """An enum member: the module's constant for it (see `ModuleRenderer`)."""
        found = self.builder.enum_member(self.t, path[:-1], path[-1], member, self.t.yaml_path)
        self.enum_members.add(found)
        return found.constant

    def expr(self, node: ex.Node) -> str:
        try:
            self.plan.check_operands(node, self.current_attr)
            return translate(node, self.ctx())
        except ex.ExpressionError as err:
            raise SpecError(self.t.spec.name, self.t.yaml_path, str(err)) from None

    def emit(self, text: str) -> None:
        """Adds a statement, after the instance computations its expressions needed."""
        self.flush_pre()
        self.out.add(text)

    def flush_pre(self) -> None:
        """Adds the instance computations that the expressions translated so far need."""
        for line in self.pre:
            self.out.add(line)
        self.pre.clear()

    def block(self, header: str) -> None:
        self.emit(header)
        self.out.depth += 1
        self.known.append(set())

    def end_block(self) -> None:
        self.out.depth -= 1
        self.known.pop()

    # -- seq -------------------------------------------------------------------------------

    def body(self) -> list[str]:
        """The reader's statements: its fields, then the instances an object keeps like fields."""
        if self.t.streamed and self.mode == OBJECT:  # the indexes of the streamed field, empty before it
            for index in self.streamed_indexes():
                self.emit(f"self.{index.name} = {{}}")
        self.fields(self.plan.read_fields())
        for inst in self.plan.stored_instances():
            self.comment(inst)
            local = self.local(inst.id)
            self.emit(f"self.{inst.id} = {local if self.is_known(local) else self.instance_value(inst)}")
        return self.out.lines

    def fields(self, attrs: list[Attribute]) -> None:
        """Reads fields in the plan's steps: a field on its own, or a chain of conditional fields
        (an if/elif chain, so each condition is tested once at most)."""
        for step in self.plan.steps(attrs):
            if isinstance(step, Read):
                self.field(step.attr)
            else:
                self.chain(step)

    def chain(self, step: Chain) -> None:
        """An if/elif chain (under its bound's guard); its fields are stored after it."""
        self.hoist(list(step.attrs))
        tests = [self.expr(cond) for cond, _ in step.branches]  # instances they need are computed first
        guard = f"{self.expr(step.bound[0])} >= {step.bound[1]}" if step.bound is not None else None
        names = ", ".join(a.id for a in step.attrs)
        summary = "read together" if len(step.branches) == 1 else "at most one of them is present"
        self.out.add(f"# {names}: {summary}" + (f", only when {guard}" if guard else ""))
        for value in dict.fromkeys(self.missing(a) for a in step.attrs):
            self.emit(" = ".join(self.local(a.id) for a in step.attrs if self.missing(a) == value) + f" = {value}")
        if guard:
            self.block(f"if {guard}:")
        for index, (test, (_, attrs)) in enumerate(zip(tests, step.branches)):
            self.block(f"{'if' if index == 0 else 'elif'} {test}:")
            for a in attrs:
                self.comment(a)
                self.read_repeated(a, self.local(a.id))
                self.known[-1].add(self.local(a.id))
            self.end_block()
        if guard:
            self.end_block()
        for a in step.attrs:
            self.known[-1].add(self.local(a.id))
            self.store(a, self.local(a.id))

    def hoist(self, attrs: list[Attribute]) -> None:
        """Computes the instances the plan hoists before conditional fields."""
        for inst in self.plan.hoisted(attrs, self.is_read):
            self.resolve(inst.id)

    def comment(self, a: Attribute) -> None:
        self.out.add(f"# {a.id}" + (f": {a.doc.splitlines()[0]}" if a.doc else ""))

    def path(self, a: Attribute) -> str:
        return f'"{self.plan.spec_path(a)}"'

    def store(self, a: Attribute, local: str) -> None:
        if not self.plan.stores(a):
            return
        if self.mode == OBJECT:
            self.emit(f"self.{a.id} = {local}")
        elif self.mode == ROWS:
            self.emit(f"{a.id}_column.append({local})")

    def field(self, a: Attribute) -> None:
        local = self.local(a.id)
        if self.mode == OBJECT and a is self.open_tail:
            self.out.add(f"# {a.id}: decoded on first access (see the property); stepped over by the caller")
            self.emit(f"self._lazy_{a.id} = pos")
            return
        if self.mode == OBJECT and is_lazy(a):
            self.out.add(f"# {a.id}: decoded on first access (see the property); stepped over here")
            self.emit(f"self._lazy_{a.id} = pos")
            with self.plan.stepping_over():
                self.field(a)
            return
        self.comment(a)
        if a.cond is not None:
            self.hoist([a])
            self.block(f"if {self.expr(a.cond)}:")
            self.read_repeated(a, local)
            self.end_block()
            self.emit("else:")
            self.out.depth += 1
            self.emit(f"{local} = {self.missing(a)}")
            self.out.depth -= 1
        else:
            self.read_repeated(a, local)
        self.known[-1].add(local)
        self.store(a, local)

    def missing(self, a: Attribute) -> str:
        """The value of a conditional field's local when the field is not there."""
        return "None"

    def read_repeated(self, a: Attribute, local: str, yielding: bool = False) -> None:
        """Reads a field, each element of a repeat in turn: into a list, or (`yielding`, the
        body of `iter_<field>`) yielded one by one. A repeat that is stepped over keeps none."""
        if not a.repeat:
            self.read_one(a, local)
            return
        if a.columns:
            self.read_columns(a, local)
            return
        item = f"{local}_item"
        keep = not yielding and not self.plan.skipping(a)
        if a.repeat == "expr":
            count = f"{local}_count"
            self.emit(f"{count} = {self.repeat_count(a)}")
            self.check_count(a, count)
        if not yielding:
            self.emit(f"{local} = []" if keep else f"{local} = None")
        if a.repeat == "expr":
            self.block(self.counted_loop(local, count))
        elif a.repeat == "eos":
            self.block("while pos < end:")
        else:
            self.emit(f"{local}_index = 0")
            self.block("while True:")
        outer = (self.loop_item, self.loop_index)
        self.loop_index = f"{local}_index"
        # the elements read so far are the field, as in the official compiler's output (which
        # appends to it in place): an element's expressions may read earlier ones
        self.known[-1].add(local)
        start = f"{local}_start"
        if self.plan.checks_progress(a):
            self.emit(f"{start} = pos")
        self.read_one(a, item)
        if keep:
            self.emit(f"{local}.append({item})")
        elif yielding:
            self.emit(f"yield {item}")
        if self.plan.checks_progress(a):
            self.block(f"if pos == {start}:")
            self.emit(f"raise invalid(io, pos, {self.path(a)}, 'repeated element consumed no bytes')")
            self.end_block()
        self.repeat_until(a, local, item)
        self.loop_item, self.loop_index = outer
        self.end_block()

    @staticmethod
    def counted_loop(local: str, count: str) -> str:
        """The header of the loop over a repeat's elements, once `count` has been checked."""
        return f"for {local}_index in range({count}):"

    def repeat_until(self, a: Attribute, local: str, item: str) -> None:
        """After an element of a repeat-until: the loop ends when the condition holds for it."""
        if a.repeat != "until":
            return
        self.loop_item = item
        self.current_attr = a
        self.block(f"if {self.expr(a.repeat_until)}:")
        self.emit("break")
        self.end_block()
        self.emit(f"{local}_index += 1")

    def check_count(self, a: Attribute, count: str) -> None:
        """A declared count is checked against what remains before anything is allocated."""
        each = element_min_size(a)
        if each == 0:
            # elements that may take no bytes: bound the count by what remains anyway, so a
            # corrupt count cannot make the loop run for ever
            limit = "end - pos + 1"
        else:
            limit = "end - pos" if each == 1 else f"(end - pos) // {each}"
        self.block(f"if {count} < 0 or {count} > {limit}:")
        self.emit(f"raise count_exceeds(io, pos, {count}, end - pos, {self.path(a)})")
        self.end_block()

    def read_columns(self, a: Attribute, local: str) -> None:
        target = a.type.target
        args = "".join(f", {self.expr(arg)}" for arg in a.type.args)
        if a.repeat == "expr":
            count = f"{local}_count"
            self.emit(f"{count} = {self.expr(a.repeat_expr)}")
            self.check_count(a, count)
        elif a.repeat == "eos":
            count = "None"
        else:
            raise SpecError(self.t.spec.name, a.yaml_path, "-rdbspec-columns supports repeat expr and eos")
        if self.plan.skipping(a):
            self.block(f"for _ in range({count}):")
            self.emit(f"pos = {self.qualified(target)}._skip(io, pos, None, root{args})")
            self.end_block()
            self.emit(f"{local} = None")
            return
        parent = "self" if self.mode == OBJECT else "parent"
        self.emit(f"{local}, pos = {self.qualified(target)}._read_rows({count}, io, pos, {parent}, root{args})")

    # -- reading one value -----------------------------------------------------------------

    def read_one(self, a: Attribute, local: str) -> None:
        if a.contents is not None:
            n = len(a.contents)
            self.bounds(a, str(n))
            self.emit(f"{local} = buf[pos:pos + {n}]")
            self.block(f"if {local} != {a.contents!r}:")
            self.emit(f"raise invalid(io, pos, {self.path(a)}, 'expected the contents {a.contents.hex()}')")
            self.end_block()
            self.emit(f"pos += {n}")
            return
        width = self.plan.fixed_width(a)
        start = f"pos - {width}" if width is not None else f"{local}_pos"  # where the field starts
        if self.plan.marks_start(a):
            self.emit(f"{local}_pos = pos")
        if a.size is not None or a.size_eos:
            self.read_sized(a, local)
        elif isinstance(a.type, Switch):
            self.read_switch(a, a.type, local)
        else:
            self.read_type(a, a.type, local)
        self.known[-1].add(local)  # valid expressions may refer to the field by name
        self.validate(a, local, start)

    def bounds(self, a: Attribute, n: str) -> None:
        self.block(f"if pos + {n} > end:")
        self.emit(f"raise truncated(io, pos, {n}, {self.path(a)})")
        self.end_block()

    def read_type(self, a: Attribute, ref: TypeRef, local: str) -> None:
        if isinstance(ref, Primitive):
            self.read_primitive(a, ref, local)
        elif isinstance(ref, Text):
            if not ref.terminated:
                raise SpecError(self.t.spec.name, a.yaml_path, "str needs size or size-eos")
            self.read_terminated(a, local, "end", ref.encoding)
        elif isinstance(ref, UserRef):
            self.read_user(a, ref, local, "io", "pos")
            return
        elif ref is None and a.terminator is not None:
            self.read_terminated(a, local, "end", None)
        else:
            raise SpecError(self.t.spec.name, a.yaml_path, "raw bytes need size, size-eos or terminator")

    def read_primitive(self, a: Attribute, ref: Primitive, local: str) -> None:
        """A number at `pos` (bounds-checked), then `pos` after it; a skipped one is only checked."""
        if self.plan.skipping(a):
            self.bounds(a, str(ref.size))
            self.emit(f"{local} = None")
        elif ref.size == 1 and ref.fmt.endswith("B"):
            self.block("if pos >= end:")
            self.emit(f"raise truncated(io, pos, 1, {self.path(a)})")
            self.end_block()
            self.emit(f"{local} = buf[pos]")
        else:
            self.bounds(a, str(ref.size))
            order = "" if ref.name[-2:] in ("le", "be") else ("le" if ref.fmt[0] == "<" else "be")
            unpack = f"unpack_{ref.name}{order}"
            self.unpackers.add(f"{unpack} = struct.Struct({ref.fmt!r}).unpack_from")
            self.emit(f"{local} = {unpack}(buf, pos)[0]")
        self.emit(f"pos += {ref.size}")

    def read_terminated(self, a: Attribute, local: str, limit: str, encoding: Optional[str]) -> None:
        term = a.terminator if a.terminator is not None else 0
        self.emit(f"{local}_end = buf.find({bytes([term])!r}, pos, {limit})")
        self.block(f"if {local}_end < 0:")
        self.emit(f"raise truncated(io, {limit}, 1, {self.path(a)})")
        self.end_block()
        stop = f"{local}_end + 1" if a.include else f"{local}_end"
        value = f"buf[pos:{stop}]"
        self.emit(f"{local} = {value}" + (f".decode({encoding!r})" if encoding else ""))
        self.emit(f"pos = {local}_end + {1 if a.consume else 0}")

    def read_user(self, a: Attribute, ref: UserRef, local: str, io: str, pos: str) -> None:
        args = "".join(f", {self.expr(arg)}" for arg in ref.args)
        if self.plan.steps_over(a, ref):
            if pos == "pos":
                self.emit(f"pos = {self.qualified(ref.target)}._skip({io}, pos, None, root{args})")
            self.emit(f"{local} = None")
            return
        parent = "self" if self.mode == OBJECT else "None"
        if ref.target.scalar:  # a function called per element: it takes the buffer and end too
            view = "buf, end" if io == "io" else f"{io}.buf, {io}.end"
            call = f"{self.qualified_function(ref.target)}({io}, {view}, {pos}, {parent}, root{args})"
        else:
            how = "_open" if self.opening and opened_field(ref.target) is not None else "_read"
            call = f"{self.qualified(ref.target)}.{how}({io}, {pos}, {parent}, root{args})"
        if pos == "pos":
            self.emit(f"{local}, pos = {call}")
        else:
            self.emit(f"{local} = {call}[0]")

    def qualified(self, target: TypeSpec) -> str:
        if target.module == self.t.module:
            return target.class_name
        self.modules.add(target.module)
        return f"{target.module}.{target.class_name}"

    def qualified_function(self, target: TypeSpec) -> str:
        """A scalar reader; one from another module is bound to a local once per function
        (see `prologue`), since it is called once per entry in the hot loops."""
        name = f"read_{target.id}"
        if target.module != self.t.module:
            self.modules.add(target.module)
            self.bound[name] = f"{target.module}.{name}"
        return name

    def prologue(self) -> list[str]:
        indent = "    " * (2 if self.mode != SCALAR else 1)
        return [f"{indent}{name} = {source}" for name, source in sorted(self.bound.items())]

    def read_sized(self, a: Attribute, local: str) -> None:
        if a.size_eos:
            size = f"{local}_size"
            self.emit(f"{size} = end - pos")
        else:
            size = self.expr(a.size)
            if not size.isidentifier():
                self.emit(f"{local}_size = {size}")
                size = f"{local}_size"
            negative = f"{size} < 0 or " if self.plan.size_may_be_negative(a) else ""
            self.block(f"if {negative}{self.beyond_end(size)}:")
            self.emit(f"raise truncated(io, pos, {size}, {self.path(a)})")
            self.end_block()
        size = self.size_checked(size, local)
        if self.plan.skipping(a):
            self.emit(f"pos += {size}")
            self.emit(f"{local} = None")
            return
        if self.plan.read_in_place(a):
            self.out.add(f"# {a.id} is read byte by byte where it lies, from {local}_pos")
            self.emit(f"pos += {size}")
            return
        needs_io = self.plan.substream(a)
        if a.process is not None:
            name, args = a.process
            if name not in self.processes:
                raise SpecError(self.t.spec.name, f"{a.yaml_path}/process", f"unknown process {name}")
            arg_text = "".join(f", {self.expr(arg)}" for arg in args)
            data = f"{local}_data"
            self.emit(f"{data} = {self.processes[name]}(buf[pos:pos + {size}]{arg_text}, io, pos, {self.path(a)})")
            if needs_io:
                self.emit(f"{local}_io = Io({data}, 0, len({data}), origin=io.offset(pos))")
            sub_pos = "0"
        else:
            data = f"buf[pos - {size}:pos]"
            if needs_io:
                self.emit(f"{local}_io = Io(buf, pos, pos + {size}, io.base, io.origin)")
            sub_pos = f"{local}_io.start"
        self.emit(f"pos += {size}")
        ref = a.type
        if isinstance(ref, Switch):
            self.read_switch(a, ref, local, f"{local}_io", sub_pos)
        elif ref is None:
            self.raw_bytes(a, local, data, size)
        elif isinstance(ref, Text):
            if ref.terminated:
                self.emit(f"{local} = {data}.split(b'\\x00', 1)[0].decode({ref.encoding!r})")
            else:
                self.emit(f"{local} = {data}.decode({ref.encoding!r}, 'replace')")
        else:
            self.read_in(a, ref, local, f"{local}_io", sub_pos)

    @staticmethod
    def beyond_end(size: str) -> str:
        """The test that `size` bytes from `pos` pass the end."""
        return f"pos + {size} > end"

    def size_checked(self, size: str, local: str) -> str:
        """`size` once it is known to fit in the bytes that remain (a target may hold it in a
        machine integer from there on)."""
        return size

    def raw_bytes(self, a: Attribute, local: str, data: str, size: str) -> None:
        """A sized raw field's value: its `size` bytes (`data`, just stepped over)."""
        self.emit(f"{local} = {data}")

    def read_in(self, a: Attribute, ref: TypeRef, local: str, io: str, pos: str) -> None:
        """Reads `ref` from a substream, from its start."""
        if isinstance(ref, UserRef):
            self.read_user(a, ref, local, io, pos)
        elif isinstance(ref, Primitive):
            self.block(f"if {io}.end - {io}.start < {ref.size}:")
            self.emit(f"raise truncated({io}, {pos}, {ref.size}, {self.path(a)})")
            self.end_block()
            if ref.size == 1 and ref.fmt.endswith("B"):
                self.emit(f"{local} = {io}.buf[{pos}]")
            else:
                self.emit(f"{local} = struct.unpack_from({ref.fmt!r}, {io}.buf, {pos})[0]")
        elif ref is None:
            self.emit(f"{local} = {io}.buf[{io}.start:{io}.end]")
        else:
            raise SpecError(self.t.spec.name, a.yaml_path, "unsupported type inside a sized switch")

    def read_switch(self, a: Attribute, sw: Switch, local: str, io: Optional[str] = None,
                    pos: str = "pos") -> None:
        on = f"{local}_on"
        self.emit(f"{on} = {self.expr(sw.on)}")
        for index, (key, ref) in enumerate(sw.cases):
            self.block(f"{'if' if index == 0 else 'elif'} {on} == {self.expr(key)}:")
            self.read_case(a, ref, local, io, pos)
            self.end_block()
        if sw.cases:
            self.block("else:")
        if sw.default is not None:
            self.read_case(a, sw.default, local, io, pos)
        elif io is not None:
            self.emit(f"{local} = {io}.buf[{io}.start:{io}.end]")  # no case: the raw bytes
        else:
            self.emit(f"{local} = None")
        if sw.cases:
            self.end_block()

    def read_case(self, a: Attribute, ref: TypeRef, local: str, io: Optional[str], pos: str) -> None:
        if io is None:
            self.read_type(a, ref, local)
        else:
            self.read_in(a, ref, local, io, pos)

    # -- valid -----------------------------------------------------------------------------

    def validate(self, a: Attribute, local: str, start: str) -> None:
        checks = self.plan.checks(a)
        if not checks:
            return
        outer = self.loop_item
        self.loop_item = local
        self.current_attr = a
        conditions = [self.failure(check, local) for check in checks]
        # the bytes of a field read in place are sliced out only to be shown
        self.loop_item = f"bytes(buf[{local}_pos:pos])" if self.plan.read_in_place(a) else local
        report = "warn" if self.plan.warns(a) else "raise invalid"
        for condition, check in zip(conditions, checks):
            self.block(f"if {condition}:")
            self.emit(f"{report}(io, {start}, {self.path(a)}, {self.message(a, check)})")
            self.end_block()
        self.loop_item = outer

    def failure(self, check: Check, local: str) -> str:
        """The condition under which the value in `local` fails a check."""
        if check.kind == "any-of":
            return f"{local} not in ({', '.join(self.expr(node) for node in check.operands)},)"
        operand = self.expr(check.operands[0])
        if check.kind != "expr":
            return f"{local} {({'eq': '!=', 'min': '<', 'max': '>'})[check.kind]} {operand}"
        if not check.guarded:
            return f"not {operand}"
        self.evaluate_guarded(f"{local}_ok", operand)
        return f"not {local}_ok"

    def message(self, a: Attribute, check: Check) -> str:
        """The Python expression of a failed check's message, computed only when it fails: its
        text, with each value's repr or formatted value."""
        parts = []
        for part in self.plan.message(a, check, self.is_read):
            if isinstance(part, MessageValue):
                value = self.expr(part.node)
                parts.append(f"format({value}, {part.format!r})" if part.format is not None else f"repr({value})")
            else:
                parts.append(repr(part))
        return " + ".join(parts) or "''"

    def evaluate_guarded(self, target: str, expression: str) -> None:
        """A check that cannot even be evaluated (a value of the wrong kind, text that is not
        a number) fails like a false one, so it is reported at its field."""
        self.block("try:")
        self.emit(f"{target} = {expression}")
        self.end_block()
        self.block("except (TypeError, ValueError, IndexError):")
        self.emit(f"{target} = False")
        self.end_block()

    # -- instances -------------------------------------------------------------------------

    def property_body(self, inst: Attribute) -> list[str]:
        """The body of an instance property in object mode (after the cache lookup, if cached)."""
        self.out = Lines(depth=2)
        self.known = [set()]
        local = self.local(inst.id)
        if inst.value is not None:
            try:
                value = translate(inst.value, self.ctx(pos=None))
                cond = translate(inst.cond, self.ctx(pos=None)) if inst.cond is not None else None
            except ex.ExpressionError:
                # depends on the reading position: only known if computed while reading
                self.out.add(f"return self._m_{inst.id}")
                return self.out.lines
            value = value if cond is None else f"{value} if {cond} else None"
            if self.plan.storage(inst) == "computed":
                self.emit(f"return {value}")
                return self.out.lines
            self.emit(f"{local} = {value}")
        else:
            self.emit("io = self._io")
            self.emit("buf = io.buf")
            self.emit("end = io.end")
            self.emit("root = self._root")
            self.emit(f"pos = io.start + {self.expr(inst.pos)}")
            if inst.cond is not None:
                self.block(f"if not {self.expr(inst.cond)}:")
                self.emit(f"self._m_{inst.id} = None")
                self.emit("return None")
                self.end_block()
            self.read_repeated(inst, local)
        self.emit(f"self._m_{inst.id} = {local}")
        self.emit(f"return {local}")
        return self.out.lines

    def lazy_body(self, a: Attribute) -> list[str]:
        """The body of the property of a `-rdbspec-lazy` field: reads it where it was skipped,
        on every access (nothing is kept: the caller holds what it needs, for as long as it
        needs it)."""
        self.out = Lines(depth=2)
        self.known = [set()]
        local = self.local(a.id)
        if a.repeat:  # the elements, read one at a time by `iter_<field>`
            self.absent(a, "None")
            self.emit(f"return list(self.iter_{a.id}())")
            return self.out.lines
        self.lazy_start(a)
        self.absent(a, "None")
        self.opening = a.size is None and not a.size_eos  # read in place: its end is not needed
        self.read_repeated(a, local)
        self.opening = False
        self.emit(f"return {local}")
        return self.out.lines

    def lazy_iter_body(self, a: Attribute) -> list[str]:
        """The body of `iter_<field>` of a repeated `-rdbspec-lazy` field: a generator of its
        elements read one at a time where they were stepped over, so that a reader of many
        elements never holds them all (the property is the list of them)."""
        self.out = Lines(depth=2)
        self.known = [set()]
        self.ranged = a if a.splits else None
        self.lazy_start(a)
        self.absent(a, "")
        self.read_repeated(a, self.local(a.id), yielding=True)
        return self.out.lines

    def chunks_body(self, a: Attribute) -> list[str]:
        """The body of `chunks_<field>(rows)` of a `-rdbspec-chunks` field: its elements, `rows`
        at a time, each as the values of `plan.chunk_row` one after the other in a list (the
        native target fills columns instead)."""
        self.out = Lines(depth=2)
        parts = chunk_row(self.builder, a)
        self.emit("chunk = []")
        self.emit(f"size = max(rows, 1) * {len(parts)}")
        self.block(f"for item in self.iter_{a.id}({'start, count' if a.splits else ''}):")
        for part in parts:
            source = "item" if part.attr is None else f"item.{part.attr.id}"
            if part.how == ELEMENT:  # the first of its element fields that is present
                value = f"{source}.{part.target.element[-1]}"
                for name in reversed(part.target.element[:-1]):
                    value = f"{source}.{name} if {source}.{name} is not None else {value}"
                self.emit(f"chunk.append({value})")
            elif part.member is not None:
                self.emit(f"chunk.append({source}.{part.member.id})")
            else:
                self.emit(f"chunk.append({source}{'.value' if part.how == LENGTH else ''})")
        self.block("if len(chunk) >= size:")
        self.emit("yield chunk")
        self.emit("chunk = []")
        self.end_block()
        self.end_block()
        self.block("if chunk:")
        self.emit("yield chunk")
        self.end_block()
        return self.out.lines

    def cuts_body(self, a: Attribute) -> list[str]:
        """The body of `cuts_<field>(step)` of a `-rdbspec-splits` field: the elements stepped
        over as the object steps over them, the (position, index) of each part's first one kept,
        then the position after the last and the count."""
        self.out = Lines(depth=2)
        self.known = [set()]
        self.lazy_start(a)
        local = self.local(a.id)
        count = f"{local}_count"
        self.emit(f"{count} = {self.expr(a.repeat_expr)}")
        self.check_count(a, count)
        self.emit("cuts = []")
        self.emit("cut_at = pos - step")
        self.block(self.counted_loop(local, count))
        self.block("if pos - cut_at >= step:")
        self.emit(f"cuts.append((pos, {local}_index))")
        self.emit("cut_at = pos")
        self.end_block()
        with self.plan.stepping_over():
            self.read_one(a, f"{local}_item")
        self.end_block()
        self.emit(f"cuts.append((pos, {count}))")
        self.emit("return cuts")
        return self.out.lines

    def lazy_start(self, a: Attribute) -> None:
        """A lazy field's reader starts where the object stepped over the field (or, `ranged`,
        at `start` when it is given)."""
        start = f"self._lazy_{a.id} if start is None else start" if self.ranged is a else f"self._lazy_{a.id}"
        for line in ("io = self._io", "buf = io.buf", "end = io.end", "root = self._root", f"pos = {start}"):
            self.emit(line)

    def repeat_count(self, a: Attribute) -> str:
        """The count of a `repeat: expr` field's elements (or, `ranged`, `count` when it is given)."""
        declared = self.expr(a.repeat_expr)
        return f"{declared} if count is None else count" if self.ranged is a else declared

    def absent(self, a: Attribute, result: str) -> None:
        """A lazy field's reader returns `result` at once when the field is not there."""
        if a.cond is not None:
            self.block(f"if not {self.expr(a.cond)}:")
            self.emit(f"return {result}".rstrip())
            self.end_block()

    def streamed_indexes(self) -> list[IndexSpec]:
        """The indexes the type keeps of its streamed field (`-rdbspec-index`)."""
        return [index for a in self.t.seq if a.id == self.t.streamed for index in a.indexes]

    def note_in_indexes(self, a: Attribute, item: str, root: str) -> None:
        """Statements putting `item`, an element of the streamed field `a`, in the indexes of
        `root` it belongs in (a key's first element is kept)."""
        outer = (self.loop_item, self.current_attr)
        self.loop_item, self.current_attr = item, a
        for index in a.indexes:
            kept = self.expr(index.value) if index.value is not None else item
            self.block(f"if {self.expr(index.cond)}:")
            self.emit(f"{root}.{index.name}.setdefault({self.expr(index.key)}, {kept})")
            self.end_block()
        self.loop_item, self.current_attr = outer

    def index_body(self, a: Attribute) -> list[str]:
        """The body of the static `index_<field>(root, item)`: what the stream loop does with an
        element for the indexes, for a writer that writes the elements one at a time."""
        self.out = Lines(depth=2)
        self.note_in_indexes(a, "item", "root")
        return self.out.lines

    def stream_loop(self, a: Attribute) -> list[str]:
        """The body of `iter_<field>`: reads one element at a time and yields it."""
        local = self.local(a.id)
        item = f"{local}_item"
        if a.repeat == "expr":
            self.emit(f"{local}_count = {self.expr(a.repeat_expr)}")
            self.block(f"for {local}_index in range({local}_count):")
        elif a.repeat == "eos":
            self.block("while pos < end:")
        else:
            self.emit(f"{local}_index = 0")
            self.block("while True:")
        self.loop_index = f"{local}_index"
        self.read_one(a, item)
        self.note_in_indexes(a, item, "root")
        self.emit("self._stream_pos = pos")
        self.emit(f"yield {item}")
        self.repeat_until(a, local, item)
        self.loop_item = self.loop_index = None
        self.end_block()
        return self.out.lines

    def scalar_result(self) -> str:
        names = [self.local(n) for n in self.t.scalar]
        for name in self.t.scalar:
            self.resolve(name)
        self.flush_pre()
        result = names[-1]
        for name in reversed(names[:-1]):
            result = f"{name} if {name} is not None else {result}"
        return result
