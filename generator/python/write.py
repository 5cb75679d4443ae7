"""The Python writers: each type's writing plan (write_plan.py) rendered as Python source lines.

An object type gets `_write(self, out, parent=None, root=None)`, which appends its bytes to `out`
(a `WriteIo`); a type with write inputs (every `-rdbspec-scalar` type, and those with
`-rdbspec-write-from`) gets a function `write_<id>(out, <inputs>, <params>, parent=None,
root=None)`, and an object of it a `_write` that calls it with its own instances. Each field is
serialized into a part of its own (`p_<field>`; `u_<field>` before a `process`), in the plan's
order; then every check the reader makes is made on the parts (a failure raises `WriteError`
naming the field's spec path), and the parts are appended in seq order.
"""

from __future__ import annotations

from typing import Optional

from .. import expressions as ex
from ..load import SpecError
from ..model import Attribute, Builder, EnumMember, Primitive, Switch, Text, TypeSpec, UserRef, type_refs
from ..plan import TypePlan, is_lazy
from ..write_plan import FieldWrite, NoWriterError, WritePlan
from .emit import TypeEmitter
from .translate import Context, translate

PROCESSES = {"rdb_lzf": "lzf_compress"}  # a spec's `process` name: the runtime function that inverts it


class WriteEmitter:
    """Renders the writer of one type."""

    def __init__(self, builder: Builder, t: TypeSpec):
        self.builder = builder
        self.t = t
        self.plan = WritePlan(builder, t)
        self.read_plan = TypePlan(builder, t, "object")
        self.lines: list[str] = []
        self.depth = 1
        # per block, instance: the local holding it (computed where first needed, seen in that block)
        self.scopes: list[dict[str, str]] = [{}]
        self.reading = False  # resolving instances as the reader computes them (the input check)
        self.current: Optional[Attribute] = None  # the field whose check `_` is an element of
        self.element: Optional[tuple[str, str, str]] = None  # (item, index, previous size) in a repeat
        self.modules: set[str] = set()
        self.enum_members: set[EnumMember] = set()  # the members its expressions name
        self.produced: set[str] = set()

    # -- output --------------------------------------------------------------------------------

    def add(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def enter(self, text: str) -> None:
        """Opens a block (`if ...:`, `for ...:`): what is computed inside stays inside."""
        self.add(text)
        self.depth += 1
        self.scopes.append({})

    def leave(self) -> None:
        self.depth -= 1
        self.scopes.pop()

    def error(self, message: str, a: Optional[Attribute] = None) -> SpecError:
        return SpecError(self.t.spec.name, a.yaml_path if a is not None else self.t.yaml_path, message)

    @staticmethod
    def local(name: str) -> str:
        return f"f_{name}"

    def spec_path(self, a: Attribute) -> str:
        return f"{self.t.spec_path}.{a.id}"

    # -- expressions ---------------------------------------------------------------------------

    def resolve(self, name: str) -> str:
        if name == "null":
            return "None"
        if name == "_":
            if self.element is None:
                raise ex.ExpressionError("_ is only valid in a check or an element's inputs")
            return self.element[0]
        if name in ("_index", "_prev_sizeof"):
            if self.element is None:
                raise ex.ExpressionError(f"{name} is only valid in the inputs of a repeat's elements")
            return self.element[1] if name == "_index" else self.element[2]
        if name == "_scalars":
            if not any("_scalars" in scope for scope in self.scopes):
                self.add(f"_scalars = {' + '.join(f'p_{f}.scalars' for f in sorted(self.produced)) or '0'}")
                self.scopes[-1]["_scalars"] = "_scalars"
            return "_scalars"
        if name in self.plan.inputs and not self.reading:
            return f"in_{name}"
        if name in (p.id for p in self.t.params):
            return f"pa_{name}"
        attr = self.t.attribute(name)
        if attr is None:
            raise ex.ExpressionError(f"{self.t.id} has no {name!r}")
        if not attr.is_instance:
            return self.local(name)
        key = ("r:" if self.reading else "i:") + name
        for scope in self.scopes:
            if key in scope:
                return scope[key]
        local = f"{'r' if self.reading else 'i'}_{name}"
        value = self.expr(attr.value)
        if attr.cond is not None:
            value = f"({value} if {self.expr(attr.cond)} else None)"
        self.add(f"{local} = {value}")
        self.scopes[-1][key] = local
        return local

    def attribute(self, node: ex.Node, name: str, source: str) -> Optional[str]:
        if name in ("_sizeof", "_stored_size", "_last_sizeof"):
            if not isinstance(node, ex.Name) or self.t.attribute(node.name) is None:
                raise ex.ExpressionError(f"{name} is read of a field of {self.t.id}")
            field_name = node.name
            processed = self.t.attribute(field_name).process is not None
            return {"_sizeof": f"len({'u' if processed else 'p'}_{field_name}.data)",
                    "_stored_size": f"len(p_{field_name}.data)",
                    "_last_sizeof": f"p_{field_name}.last_size"}[name]
        if name in ("min", "max"):
            return f"{name}({source})"
        if name in ("size", "length", "first", "last"):
            return None  # of a list: the translator's own
        target = self.read_plan.static_type(node, self.current)
        if target is not None and target.scalar:
            return TypeEmitter.scalar_attribute(target, name, source)
        return None

    def enum_member(self, path: tuple[str, ...], member: str) -> str:
        found = self.builder.enum_member(self.t, path[:-1], path[-1], member, self.t.yaml_path)
        self.enum_members.add(found)
        return found.constant

    def expr(self, node: ex.Node, pos: str | None = None) -> str:
        node = _null_tests(node)
        ctx = Context(resolve=self.resolve, enum_member=self.enum_member, pos=pos, io="_wio" if pos else None,
                         attribute=self.attribute, root="root", parent="parent")
        try:
            return translate(node, ctx)
        except ex.ExpressionError as err:
            raise self.error(str(err)) from None

    # -- serializing one value -----------------------------------------------------------------

    def write_value(self, a: Attribute, ref, value: str, part: str, inputs: dict[str, str] | None = None) -> None:
        """Statements appending `value` (of type `ref`) to the WriteIo `part`."""
        path = self.spec_path(a)
        if isinstance(ref, Switch):
            on = self.expr(ref.on)
            first = True
            for case, case_ref in ref.cases:
                self.enter(f"{'if' if first else 'elif'} {on} == {self.expr(case)}:")
                first = False
                self.write_value(a, case_ref, value, part, inputs)
                self.leave()
            self.enter("else:")
            if ref.default is not None:
                self.write_value(a, ref.default, value, part, inputs)
            else:
                self.add(f"raise WriteError(f'no case for {{{on}!r}}', {path!r})")
            self.leave()
            return
        if isinstance(ref, Primitive):
            self.add(f"{part}.pack({ref.fmt!r}, {value}, {path!r})")
            return
        if isinstance(ref, Text):
            encoded = f"{value}.encode({ref.encoding!r})"
            self.add(f"{part}.write({encoded}{' + ' + repr(bytes([a.terminator])) if ref.terminated else ''})")
            return
        if ref is None:
            terminator = f" + {bytes([a.terminator])!r}" if a.terminator is not None and a.consume else ""
            self.add(f"{part}.write({value}{terminator})")
            return
        target = ref.target
        args = [self.expr(arg) for arg in ref.args]
        call_tail = "".join(f", {arg}" for arg in args) + ", self_, root"
        if target.write_from:
            given = dict(inputs or {})
            if target.scalar:
                for name in target.scalar:
                    given.setdefault(name, f"({value} if isinstance({value}, {target.scalar_kind(name)}) else None)")
            for name in target.write_from:  # an object read, or the WriteInputs a writer gives
                given.setdefault(name, f"{value}.{name}")
            missing = [n for n in target.write_from if n not in given]
            if missing:
                raise self.error(f"{a.id}: nothing gives {missing} of {target.id} (-rdbspec-write)", a)
            function = self.function_name(target)
            self.add(f"{function}({part}, {', '.join(given[n] for n in target.write_from)}{call_tail})")
            return
        self.add(f"if type({value}) is not {self.class_name(target)}:")
        self.add(f"    raise WriteError(f'expected a {target.id}, found {{type({value}).__name__}}', {path!r})")
        for param, arg in zip(target.params, args):
            self.add(f"if {value}.{param.id} != {arg}:")
            self.add(f"    raise WriteError(f'{param.id} {{{value}.{param.id}!r}} where the spec passes "
                     f"{{{arg}!r}}', {path!r})")
        self.add(f"{value}._write({part}, self_, root)")

    def function_name(self, target: TypeSpec) -> str:
        if target.module != self.t.module:
            self.modules.add(target.module)
            return f"{target.module}.write_{target.id}"
        return f"write_{target.id}"

    def class_name(self, target: TypeSpec) -> str:
        if target.module != self.t.module:
            self.modules.add(target.module)
            return f"{target.module}.{target.class_name}"
        return target.class_name

    # -- one field -----------------------------------------------------------------------------

    def produce(self, fw: FieldWrite) -> None:
        a = fw.attr
        value = self.local(a.id)
        if fw.role == "fixed":
            self.add(f"{value} = {fw.fixed!r}")
        elif fw.role == "derived":
            if isinstance(a.write, dict):
                inputs = ", ".join(f"{name}={self.expr(node)}" for name, node in a.write.items())
                derived = f"WriteInputs({inputs})"
            else:
                derived = self.expr(a.write)
                if a.type is None and any(isinstance(n, ex.ArrayLit) for n in ex.nodes_in(a.write)):
                    derived = f"bytes({derived})"  # a list of byte values: bytes, as the reader gives
            if a.cond is not None:
                derived = f"({derived} if {self.expr(a.cond)} else None)"
            self.add(f"{value} = {derived}")
        part, unprocessed = f"p_{a.id}", f"u_{a.id}"
        self.add(f"{part} = WriteIo()")
        self.enter(f"if {value} is not None:")
        target = unprocessed if a.process else part
        if a.process:
            self.add(f"{unprocessed} = WriteIo()")
        inputs = None
        if fw.role == "derived" and isinstance(a.write, dict):
            inputs = {name: f"{value}.{name}" for name in a.write}
        if a.repeat:
            self.write_repeat(a, value, target)
        else:
            self.write_value(a, a.type, value, target, inputs)
        if a.process:
            name, args = a.process
            if name not in PROCESSES:
                raise self.error(f"no writer for process {name}", a)
            self.add(f"{part}.write({PROCESSES[name]}(bytes({unprocessed}.data), {self.spec_path(a)!r}))")
            self.add(f"{part}.scalars = {unprocessed}.scalars")
        self.leave()
        if a.process:
            self.add("else:")
            self.add(f"    {unprocessed} = {part}")
        self.produced.add(a.id)

    def write_repeat(self, a: Attribute, value: str, part: str) -> None:
        item, index, previous = f"{a.id}_item", f"{a.id}_index", f"{a.id}_prev"
        for kept in a.indexes:  # what the elements written so far hold, as a reader's root keeps it
            self.add(f"root.{kept.name} = {{}}")
        self.add(f"{previous} = 0")
        self.enter(f"for {index}, {item} in enumerate({value}):")
        self.add(f"{a.id}_at = len({part}.data)")
        self.element = (item, index, previous)  # `_index` in the element's arguments and inputs
        inputs = {name: self.expr(node) for name, node in a.write.items()} if isinstance(a.write, dict) else None
        self.write_value(a, a.type, item, part, inputs)
        for kept in a.indexes:
            self.enter(f"if {self.expr(kept.cond)}:")
            self.add(f"root.{kept.name}.setdefault({self.expr(kept.key)}, "
                     f"{self.expr(kept.value) if kept.value is not None else item})")
            self.leave()
        self.element = None
        self.add(f"{previous} = len({part}.data) - {a.id}_at")
        self.leave()
        self.add(f"{part}.last_size = {previous}")

    # -- checks --------------------------------------------------------------------------------

    def check(self, a: Attribute) -> None:
        """The reader's checks of one field, made on what was written (`pos`: after it)."""
        path = self.spec_path(a)
        value = self.local(a.id)
        self.add(f"pos += len(p_{a.id}.data)")
        if a.cond is not None:
            self.add(f"if ({self.expr(a.cond, 'pos')}) != ({value} is not None):")
            self.add(f"    raise WriteError('present where its condition does not hold, or the reverse', {path!r})")
        if a.repeat == "expr":
            self.add(f"if {value} is not None and len({value}) != {self.expr(a.repeat_expr, 'pos')}:")
            self.add(f"    raise WriteError(f'{{len({value})}} elements where the spec counts "
                     f"{{{self.expr(a.repeat_expr, 'pos')}}}', {path!r})")
        if a.repeat == "until":
            item = f"{a.id}_item"
            self.element = (item, "0", "0")
            until = self.expr(a.repeat_until, "pos")
            self.element = None
            self.add(f"if {value} is not None and [{until} for {item} in {value}] != "
                     f"[False] * (len({value}) - 1) + [True]:")
            self.add(f"    raise WriteError('the repeat does not end at its first element meeting its condition', "
                     f"{path!r})")
        if a.size is not None:
            self.add(f"if {value} is not None and len(p_{a.id}.data) != {self.expr(a.size, 'pos')}:")
            self.add(f"    raise WriteError(f'{{len(p_{a.id}.data)}} bytes where the spec reads "
                     f"{{{self.expr(a.size, 'pos')}}}', {path!r})")
        if a.valid is not None:
            self.check_valid(a, value, path)

    def check_valid(self, a: Attribute, value: str, path: str) -> None:
        valid = a.valid
        if isinstance(valid, dict) and "expr" in valid:
            node = ex.parse(valid["expr"])
        elif isinstance(valid, dict) and "eq" in valid:
            node = ex.Binary("==", ex.Name("_"), ex.parse(valid["eq"]))
        elif isinstance(valid, dict) and ("min" in valid or "max" in valid):
            parts = ([ex.Binary(">=", ex.Name("_"), ex.parse(valid["min"]))] if "min" in valid else []) + \
                    ([ex.Binary("<=", ex.Name("_"), ex.parse(valid["max"]))] if "max" in valid else [])
            node = parts[0] if len(parts) == 1 else ex.Binary("and", parts[0], parts[1])
        elif isinstance(valid, dict) and "any-of" in valid:
            options = [ex.Binary("==", ex.Name("_"), ex.parse(o)) for o in valid["any-of"]]
            node = options[0]
            for option in options[1:]:
                node = ex.Binary("or", node, option)
        else:
            node = ex.Binary("==", ex.Name("_"), ex.parse(valid))
        item = f"{a.id}_item" if a.repeat else value
        self.element, self.current = (item, "0", "0"), a
        test = self.expr(node, "pos")
        self.element, self.current = None, None
        condition = f"all({test} for {item} in {value})" if a.repeat else test
        self.add(f"if {value} is not None and not _holds(lambda: {condition}):")
        self.add(f"    raise WriteError(f'{{{value}!r}} fails its check: ' {str(valid).strip()!r}, {path!r})")

    # -- the function --------------------------------------------------------------------------

    def body(self) -> list[str]:
        """The statements of the writer, after its arguments are in locals."""
        for fw in self.plan.order:
            self.produce(fw)
        self.add("_wio = Io(b'', 0, 0)")
        self.add("_size = " + (" + ".join(f"len(p_{a.id}.data)" for a in self.t.seq) or "0"))
        self.add("_wio.end = _size")
        self.add("pos = 0")
        for a in self.t.seq:
            self.check(a)
        if self.plan.from_inputs:
            self.check_inputs()
        for a in self.t.seq:
            self.add(f"out.add(p_{a.id})")
        if self.t.scalar:
            self.add("out.scalars += 1")
        elif not self.plan.from_inputs:
            # an object made to write gets what was derived for it, as its reader would have read it
            # (a child's expressions read `_parent.master.num_fields`)
            for fw in self.plan.fields:
                if fw.role != "given" and not is_lazy(fw.attr):
                    self.add(f"if self.{fw.attr.id} is None:")
                    self.add(f"    self.{fw.attr.id} = {self.local(fw.attr.id)}")
            # and the instances a reader computes with the fields and keeps like them (`rdb_blob.payload`)
            for inst in self.t.instances:
                if self.read_plan.storage(inst) == "field":
                    self.add(f"self.{inst.id} = {self.resolve(inst.id)}")
        return self.lines

    def check_inputs(self) -> None:
        """The inputs computed back from the fields as the reader computes them."""
        self.reading = True
        for name in self.plan.inputs:
            again = self.resolve(name)
            self.add(f"if {again} != in_{name} or type({again}) is not type(in_{name}):")
            self.add(f"    raise WriteError(f'writes {name} {{{again}!r}}, not {{in_{name}!r}}', "
                     f"{self.t.spec_path!r})")
        self.reading = False

    def prologue_object(self) -> list[str]:
        """Given fields and parameters of an object, read once into locals."""
        lines = ["self_ = self", "root = self if root is None else root"]
        lines += [f"pa_{p.id} = self.{p.id}" for p in self.t.params]
        lines += [f"{self.local(fw.attr.id)} = self.{fw.attr.id}" for fw in self.plan.fields if fw.role == "given"]
        return ["    " + line for line in lines]


def _null_tests(node: ex.Node) -> ex.Node:
    """`x == null` and `x != null` as Python's identity tests."""
    if isinstance(node, ex.Binary):
        left, right = _null_tests(node.left), _null_tests(node.right)
        if node.op in ("==", "!=") and ex.Name("null") in (left, right):
            other = left if right == ex.Name("null") else right
            return ex.Binary("is" if node.op == "==" else "is not", other, ex.Name("null"))
        return ex.Binary(node.op, left, right)
    if isinstance(node, ex.Unary):
        return ex.Unary(node.op, _null_tests(node.operand))
    if isinstance(node, ex.Ternary):
        return ex.Ternary(_null_tests(node.cond), _null_tests(node.then), _null_tests(node.other))
    return node


def writable(builder: Builder, t: TypeSpec, seen: frozenset[int] = frozenset()) -> bool:
    """`t` gets a writer: a scalar type that says how it is written, or an object type whose fields'
    types all get one (spec files without any `-rdbspec-write` get readers only)."""
    if id(t) in seen:
        return True
    if t.scalar and not t.write_from:
        return False
    try:
        WritePlan(builder, t)
    except NoWriterError:
        return False
    refs = [r for a in t.seq for r in type_refs(a.type) if isinstance(r, UserRef)]
    return all(writable(builder, r.target, seen | {id(t)}) for r in refs)


def write_function(builder: Builder, t: TypeSpec) -> tuple[list[str], set[str], set[EnumMember]]:
    """(the body of `write_<id>` or `_write`, the modules it calls into, the enum members it names)."""
    emitter = WriteEmitter(builder, t)
    lines = emitter.body()
    if not emitter.plan.from_inputs:
        lines = emitter.prologue_object() + lines
    else:
        lines = ["    self_ = None"] + lines
    return lines, emitter.modules, emitter.enum_members
