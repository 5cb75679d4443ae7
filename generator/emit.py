"""Statement generation: turns each type's seq and instances into Python source lines.

A type is read by one function. Seq fields are read into locals (named after their ids) and
stored where the mode says: on `self` (object mode), into column lists (row mode), or not at all
(scalar mode, where the function returns one value instance). Instances an expression needs
while reading are computed into locals at first use, so the hot path reads no properties.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from . import expressions as ex
from .facts import Facts, assume, field_kind, guarded_use, implied
from .load import SpecError
from .model import Attribute, Builder, Primitive, Switch, Text, TypeRef, TypeSpec, UserRef, type_refs

OBJECT, SCALAR, ROWS, SKIP = "object", "scalar", "rows", "skip"
_RESERVED = {"pos", "io", "buf", "end", "self", "cls", "root", "parent", "cols", "count", "len", "int",
             "str", "bytes", "range", "struct", "Io", "invalid", "truncated", "lzf_decompress"}
_PROCESSES = {"rdb_lzf": "lzf_decompress"}


def local_name(name: str) -> str:
    return f"{name}_" if name in _RESERVED or keyword.iskeyword(name) else name


@dataclass
class Lines:
    lines: list[str] = field(default_factory=list)
    depth: int = 0

    def add(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)


def min_size(t: TypeSpec, seen: Optional[set] = None) -> int:
    """A lower bound of the bytes one instance of `t` takes (0 when unsure)."""
    seen = set() if seen is None else seen
    if id(t) in seen:
        return 0
    seen = seen | {id(t)}
    return sum(_attr_min_size(a, seen) for a in t.seq)


def _attr_min_size(a: Attribute, seen: set) -> int:
    if a.cond is not None or a.repeat:
        return 0
    if a.contents is not None:
        return len(a.contents)
    if a.size is not None:
        return a.size.value if isinstance(a.size, ex.Num) else 0
    return _ref_min_size(a.type, seen)


def _ref_min_size(ref: TypeRef, seen: set) -> int:
    if isinstance(ref, Primitive):
        return ref.size
    if isinstance(ref, Text):
        return 1 if ref.terminated else 0
    if isinstance(ref, UserRef):
        return min_size(ref.target, seen)
    if isinstance(ref, Switch):
        options = [_ref_min_size(r, seen) for _, r in ref.cases]
        return min(options) if options and ref.default is not None else 0
    return 0


def attribute_expressions(a: Attribute) -> list[ex.Node]:
    """Every expression of a field or instance: condition, size, count, switch, arguments..."""
    nodes = [n for n in (a.cond, a.size, a.repeat_expr, a.repeat_until, a.value, a.pos) if n is not None]
    if isinstance(a.type, Switch):
        nodes.append(a.type.on)
    nodes += [arg for r in type_refs(a.type) if isinstance(r, UserRef) for arg in r.args]
    if a.process:
        nodes += list(a.process[1])
    if isinstance(a.valid, dict) and "expr" in a.valid:
        nodes.append(ex.parse(a.valid["expr"]))
    return nodes


def expressions_of(t: TypeSpec) -> list[ex.Node]:
    """Every expression in a type."""
    return [n for a in t.seq + t.instances for n in attribute_expressions(a)]


def shared_reads(t: TypeSpec) -> set[tuple[str, str]]:
    """The `field.name` reads that the type's expressions make more than once (`_` in a field's
    own expressions is that field): worth a local."""
    reads: Counter = Counter()
    for a in t.seq + t.instances:
        for node in attribute_expressions(a):
            for n in ex.nodes_in(node):
                if isinstance(n, ex.Attr) and isinstance(n.target, ex.Name):
                    reads[(a.id if n.target.name == "_" else n.target.name, n.name)] += 1
    return {read for read, count in reads.items() if count > 1}


def referenced_names(t: TypeSpec) -> set[str]:
    return set().union(*(ex.names_in(n) for n in expressions_of(t)))


def closure(t: TypeSpec, names: set[str]) -> set[str]:
    """`names` with the names that the instances among them refer to, transitively."""
    found = set(names)
    pending = list(found)
    while pending:
        inst = t.attribute(pending.pop())
        if inst is not None and inst.is_instance:
            for node in (inst.value, inst.cond, inst.pos):
                for name in ex.names_in(node) - found if node is not None else ():
                    found.add(name)
                    pending.append(name)
    return found


def names_needed_while_reading(t: TypeSpec) -> set[str]:
    """Names the seq's own expressions use, with the instances they reach followed: the
    fields a skip pass must still read (instances nobody reads while skipping do not count)."""
    return closure(t, {name for a in t.seq for n in attribute_expressions(a) for name in ex.names_in(n)})


def uses_parent(t: TypeSpec) -> bool:
    return "_parent" in referenced_names(t)


class TypeEmitter:
    """Emits the reading function of one type in one mode."""

    def __init__(self, builder: Builder, t: TypeSpec, mode: str):
        self.builder = builder
        self.t = t
        self.mode = mode
        self.out = Lines(depth=2 if mode != SCALAR else 1)
        self.known: list[set[str]] = [set(local_name(p.id) for p in t.params)]
        self.pre: list[str] = []
        self.loop_item: Optional[str] = None
        self.current_attr: Optional[Attribute] = None
        self.loop_index: Optional[str] = None
        self.unpackers: set[str] = set()
        self.modules: set[str] = set()
        self.needed = names_needed_while_reading(t)
        self.bound: dict[str, str] = {}
        self.facts = Facts(builder, t)
        self.shared = shared_reads(t)
        self.uses = Counter(name for a in t.seq + t.instances for node in attribute_expressions(a)
                            for name in ex.names_in(node))
        self.uses.update(t.scalar or ())
        self.byte_indexed = self.fields_read_by_byte() if mode in (SCALAR, SKIP) else set()
        self.in_place: dict[str, bool] = {}  # instances computed where used (name: computed yet)

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
        local = local_name(name)
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
        local = local_name(attr.id)
        self.pre.append(f"{local} = {self.instance_value(attr)}")
        if self.mode == OBJECT and self.storage(attr) == "cached":
            self.pre.append(f"self._m_{attr.id} = {local}")
        self.known[-1].add(local)

    def instance_value(self, attr: Attribute) -> str:
        """A value instance's expression (None when its condition does not hold)."""
        outer = self.in_place
        self.in_place = dict.fromkeys(self.computed_in_place(attr.value), False)
        value = self.expr(attr.value)
        self.in_place = outer
        return value if attr.cond is None else f"({value} if {self.expr(attr.cond)} else None)"

    def computed_in_place(self, node: ex.Node) -> list[str]:
        """Instances that only `node` uses, under a guard that implies their condition: they
        are computed (`name := ...`) where the guarded part first needs them, so entries that
        take another branch never compute them."""
        found = []
        for name in sorted(ex.names_in(node)):
            inst = self.t.attribute(name)
            if inst is None or not inst.is_instance or inst.value is None or self.is_known(local_name(name)) \
                    or self.facts.instance_kind(self.t, inst) is None or self.uses.get(name, 0) != 1:
                continue
            use = guarded_use(node, name)
            if use is not None and use[1] and (inst.cond is None or implied(inst.cond, use[1])):
                found.append(name)
        return found

    def ctx(self, pos: Optional[str] = "pos") -> ex.Context:
        """Inside a lazy property (pos None) the tree is reached through `self`."""
        if pos is None:
            return ex.Context(self.resolve, self.enum_value, None, None, self.attribute,
                              root="self._root", parent="self._parent")
        return ex.Context(self.resolve, self.enum_value, pos, "io", self.attribute, self.subscript)

    def static_type(self, node: ex.Node) -> Optional[TypeSpec]:
        """The user type an expression evaluates to, where the spec makes it certain."""
        if isinstance(node, ex.Name):
            if node.name == "_parent":
                return self.t.parents[0] if len(self.t.parents) == 1 else None
            attr = self.current_attr if node.name == "_" else self.t.attribute(node.name)
            return attr.type.target if attr is not None and isinstance(attr.type, UserRef) else None
        if isinstance(node, ex.Index):
            return self.static_type(node.target)
        if isinstance(node, ex.Attr):
            base = self.static_type(node.target)
            if base is None:
                return None
            if node.name == "_parent":
                return base.parents[0] if len(base.parents) == 1 else None
            attr = base.attribute(node.name)
            return attr.type.target if attr is not None and isinstance(attr.type, UserRef) else None
        return None

    def attribute(self, node: ex.Node, name: str, source: str) -> Optional[str]:
        """`x.name` where the spec makes the type of `x` certain: on a scalar-compiled value, a
        type test; an instance that cannot raise, read from a local, is read once into a local
        `x_name` (the first use computes it, later ones in its scope reuse it)."""
        target = self.static_type(node)
        if target is None:
            return None
        if target.scalar:
            value = self.scalar_attribute(target, name, source)
        else:
            inst = target.attribute(name)
            it = field_kind(self.current_attr, element=True) if self.current_attr is not None else None
            base = self.facts.kind(node, it=it)
            if inst is None or not inst.is_instance or base is None or base.nullable \
                    or self.facts.instance_kind(target, inst) is None:
                return None
            value = f"{source}.{name}"
        if not isinstance(node, ex.Name) or not self.is_known(source):
            return value
        field_id = self.current_attr.id if node.name == "_" and self.current_attr is not None else node.name
        shared = f"{source.rstrip('_')}_{name}"
        if (field_id, name) not in self.shared or self.t.attribute(shared) is not None or shared in _RESERVED:
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
        if isinstance(target, ex.Name) and target.name in self.byte_indexed and isinstance(node.index, ex.Num):
            start = f"{local_name(target.name)}_pos"
            return f"buf[{start} + {node.index.value}]" if node.index.value else f"buf[{start}]"
        return None

    def fields_read_by_byte(self) -> set[str]:
        """Sized raw fields that the type's expressions only index with constants, each index
        proven within the size, and that nothing keeps: they are never sliced out of the buffer,
        their bytes are read in place."""
        found = set()
        for a in self.t.seq:
            kind = field_kind(a)
            if kind.base != "bytes" or kind.length is None or kind.nullable or self.skipping(a) \
                    or a.raw.get("-rdbspec-lazy") \
                    or (a.valid is not None and (not isinstance(a.valid, dict) or set(a.valid) != {"expr"})):
                continue
            if all(self.indexed_safely(a, b) for b in self.t.seq + self.t.instances):
                found.add(a.id)
        return found

    def indexed_safely(self, a: Attribute, b: Attribute) -> bool:
        """Every mention of field `a` in the expressions of `b` is `a[k]`, in an expression
        that cannot raise (so no index is out of range)."""
        for node in attribute_expressions(b):
            names = {a.id, "_"} if b is a and node is not a.cond else {a.id}
            nodes = list(ex.nodes_in(node))
            mentions = sum(1 for n in nodes if isinstance(n, ex.Name) and n.name in names)
            if not mentions:
                continue
            indexed = sum(1 for n in nodes if isinstance(n, ex.Index) and isinstance(n.index, ex.Num)
                          and isinstance(n.target, ex.Name) and n.target.name in names)
            if b.is_instance:
                safe = self.facts.instance_kind(self.t, b) is not None
            else:
                it = field_kind(b, element=True) if b is a else None
                safe = self.facts.safe(node, self.given(b) if node is not b.cond else frozenset(), it)
            if indexed != mentions or not safe:
                return False
        return True

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

    def enum_value(self, path: tuple[str, ...], member: str) -> int:
        return self.builder.enum(self.t, path[:-1], path[-1], self.t.yaml_path, member=member)

    def expr(self, node: ex.Node) -> str:
        try:
            self.check_operands(node)
            return ex.translate(node, self.ctx())
        except ex.ExpressionError as err:
            raise SpecError(self.t.spec.name, self.t.yaml_path, str(err)) from None

    def check_operands(self, node: ex.Node) -> None:
        """An object of a user type used as a number (`container == 1` for `container.value == 1`)
        is never equal, less or more than it: a generator error, not a branch never taken."""
        for n in ex.nodes_in(node):
            operands = (n.left, n.right) if isinstance(n, ex.Binary) and n.op not in ("and", "or") else \
                (n.operand,) if isinstance(n, ex.Unary) and n.op != "not" else ()
            for operand in operands:
                target = self.static_type(operand)
                if target is not None:
                    raise ex.ExpressionError(f"operator {n.op} applied to a {target.id} object, not a number "
                                             f"(read one of its fields or instances)")

    def emit(self, text: str) -> None:
        """Adds a statement, after the instance computations its expressions needed."""
        for line in self.pre:
            self.out.add(line)
        self.pre.clear()
        self.out.add(text)

    def block(self, header: str) -> None:
        self.emit(header)
        self.out.depth += 1
        self.known.append(set())

    def end_block(self) -> None:
        self.out.depth -= 1
        self.known.pop()

    # -- seq -------------------------------------------------------------------------------

    def body(self) -> list[str]:
        streamed = [a.id for a in self.t.seq].index(self.t.streamed) if self.t.streamed else len(self.t.seq)
        self.fields(self.t.seq[:streamed])
        if self.mode == OBJECT:
            for inst in self.t.instances:
                if self.storage(inst) == "field":
                    self.comment(inst)
                    local = local_name(inst.id)
                    self.emit(f"self.{inst.id} = {local if self.is_known(local) else self.instance_value(inst)}")
        return self.out.lines

    def fields(self, attrs: list[Attribute]) -> None:
        """Reads fields in order; a run of conditional fields whose conditions exclude each other
        (or are the same) is read as one if/elif chain, so each condition is tested once at most."""
        index = 0
        while index < len(attrs):
            run = self.exclusive_run(attrs[index:])
            if len(run) > 1:
                self.chain(run)
            else:
                self.field(attrs[index])
            index += len(run)

    def chainable(self, a: Attribute) -> bool:
        """A conditional field whose condition does not depend on the position, and whose type
        does not read its parent (whose fields a chain stores only at its end)."""
        return (a.cond is not None and not a.raw.get("-rdbspec-lazy") and "_io" not in ex.names_in(a.cond)
                and not any(uses_parent(r.target) for r in type_refs(a.type) if isinstance(r, UserRef)))

    def exclusive_run(self, attrs: list[Attribute]) -> list[Attribute]:
        """The longest run of chainable fields from the first whose conditions are the same or
        exclude each other, and refer to no field of the run."""
        run = attrs[:1]
        if not self.chainable(attrs[0]):
            return run
        for a in attrs[1:]:
            ids = {b.id for b in run} | {a.id}
            conds = [b.cond for b in run] + [a.cond]
            if not self.chainable(a) or any(closure(self.t, ex.names_in(cond)) & ids for cond in conds):
                break
            if len(set(conds)) > 1 and not self.facts.exclusive(conds):
                break
            run.append(a)
        return run

    def chain(self, run: list[Attribute]) -> None:
        branches: dict[ex.Node, list[Attribute]] = {}
        for a in run:
            branches.setdefault(a.cond, []).append(a)
        self.hoist(run)
        tests = [self.expr(cond) for cond in branches]  # instances they need are computed first
        # a chain that only tests one integer field, and never holds below some value, is
        # entered only from that value: the common small values skip every test
        bound = self.facts.lower_bound(list(branches)) if len(branches) > 1 else None
        guard = f"{self.expr(bound[0])} >= {bound[1]}" if bound is not None else None
        names = ", ".join(a.id for a in run)
        summary = "read together" if len(branches) == 1 else "at most one of them is present"
        self.out.add(f"# {names}: {summary}" + (f", only when {guard}" if guard else ""))
        self.emit(" = ".join(local_name(a.id) for a in run) + " = None")
        if guard:
            self.block(f"if {guard}:")
        for index, (test, attrs) in enumerate(zip(tests, branches.values())):
            self.block(f"{'if' if index == 0 else 'elif'} {test}:")
            for a in attrs:
                self.comment(a)
                self.read_repeated(a, local_name(a.id))
                self.known[-1].add(local_name(a.id))
            self.end_block()
        if guard:
            self.end_block()
        for a in run:
            self.known[-1].add(local_name(a.id))
            self.store(a, local_name(a.id))

    def hoist(self, attrs: list[Attribute]) -> None:
        """Before conditional fields: the instances they need that a later field needs too are
        computed once, here, when that cannot raise and all they read is already read."""
        last = max(i for i, b in enumerate(self.t.seq) if any(b is a for a in attrs))
        later = closure(self.t, {n for b in self.t.seq[last + 1:] for node in attribute_expressions(b)
                                 for n in ex.names_in(node)} | set(self.t.scalar or ()))
        inside = closure(self.t, {n for a in attrs for node in attribute_expressions(a) if node is not a.cond
                                  for n in ex.names_in(node)})
        for inst in self.t.instances:
            if inst.id not in inside & later or inst.value is None or self.is_known(local_name(inst.id)):
                continue
            reads = closure(self.t, {inst.id})
            ready = all(self.is_known(local_name(n)) for n in reads if (b := self.t.attribute(n)) is not None
                        and not b.is_instance)
            if ready and "_io" not in reads and self.facts.instance_kind(self.t, inst) is not None:
                self.resolve(inst.id)

    def comment(self, a: Attribute) -> None:
        self.out.add(f"# {a.id}" + (f": {a.doc.splitlines()[0]}" if a.doc else ""))

    @staticmethod
    def given(a: Attribute) -> frozenset:
        """What is known while a field is read: its condition holds."""
        return assume(frozenset(), a.cond) if a.cond is not None else frozenset()

    def path(self, a: Attribute) -> str:
        return f'"{self.t.spec_path}.{a.id}"'

    def store(self, a: Attribute, local: str) -> None:
        if self.mode == OBJECT and a.raw.get("-rdbspec-lazy"):
            return
        if self.mode == OBJECT:
            self.emit(f"self.{a.id} = {local}")
        elif self.mode == ROWS:
            self.emit(f"{a.id}_column.append({local})")

    def skipping(self, a: Attribute) -> bool:
        """In skip mode a field nobody refers to (no later expression, no `valid`, no
        repeat-until) is stepped over, not built."""
        return (self.mode == SKIP and a.id not in self.needed and a.valid is None
                and a.repeat != "until")

    def field(self, a: Attribute) -> None:
        local = local_name(a.id)
        if self.mode == OBJECT and a.raw.get("-rdbspec-lazy"):
            self.out.add(f"# {a.id}: decoded on first access (see the property); stepped over here")
            self.emit(f"self._lazy_{a.id} = pos")
            self.mode = SKIP
            self.field(a)
            self.mode = OBJECT
            return
        self.comment(a)
        if a.cond is not None:
            self.hoist([a])
            self.block(f"if {self.expr(a.cond)}:")
            self.read_repeated(a, local)
            self.end_block()
            self.emit("else:")
            self.out.depth += 1
            self.emit(f"{local} = None")
            self.out.depth -= 1
        else:
            self.read_repeated(a, local)
        self.known[-1].add(local)
        self.store(a, local)

    def read_repeated(self, a: Attribute, local: str) -> None:
        if not a.repeat:
            self.read_one(a, local)
            return
        if a.columns:
            self.read_columns(a, local)
            return
        item = f"{local}_item"
        if a.repeat == "expr":
            count = f"{local}_count"
            self.emit(f"{count} = {self.expr(a.repeat_expr)}")
            self.check_count(a, count)
            self.emit(f"{local} = []")
            self.block(f"for {local}_index in range({count}):")
        elif a.repeat == "eos":
            self.emit(f"{local} = []")
            self.block("while pos < end:")
        else:
            self.emit(f"{local} = []")
            self.emit(f"{local}_index = 0")
            self.block("while True:")
        outer = (self.loop_item, self.loop_index)
        self.loop_index = f"{local}_index"
        # the elements read so far are the field, as in the official compiler's output (which
        # appends to it in place): an element's expressions may read earlier ones
        self.known[-1].add(local)
        start = f"{local}_start"
        if a.repeat != "expr" and self.element_min_size(a) == 0:
            self.emit(f"{start} = pos")
        self.read_one(a, item)
        self.emit(f"{local}.append({item})")
        if a.repeat != "expr" and self.element_min_size(a) == 0:
            self.block(f"if pos == {start}:")
            self.emit(f"raise invalid(io, pos, {self.path(a)}, 'repeated element consumed no bytes')")
            self.end_block()
        if a.repeat == "until":
            self.loop_item = item
            self.current_attr = a
            self.block(f"if {self.expr(a.repeat_until)}:")
            self.emit("break")
            self.end_block()
            self.emit(f"{local}_index += 1")
        self.loop_item, self.loop_index = outer
        self.end_block()

    def element_min_size(self, a: Attribute) -> int:
        if a.size is not None:
            return a.size.value if isinstance(a.size, ex.Num) else 0
        return _ref_min_size(a.type, set()) if a.contents is None else len(a.contents)

    def check_count(self, a: Attribute, count: str) -> None:
        """A declared count is checked against what remains before anything is allocated."""
        each = self.element_min_size(a)
        if each == 0:
            # elements that may take no bytes: bound the count by what remains anyway, so a
            # corrupt count cannot make the loop run for ever
            limit = "end - pos + 1"
        else:
            limit = "end - pos" if each == 1 else f"(end - pos) // {each}"
        self.block(f"if {count} < 0 or {count} > {limit}:")
        message = f"f'count {{{count}}} exceeds the {{end - pos}} bytes that remain'"
        self.emit(f"raise invalid(io, pos, {self.path(a)}, {message})")
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
        if self.skipping(a):
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
        fixed = isinstance(a.type, Primitive) and a.size is None and not a.size_eos
        start = f"pos - {a.type.size}" if fixed else f"{local}_pos"  # where the field starts
        if (a.valid is not None and not fixed) or a.id in self.byte_indexed:
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
            if self.skipping(a):
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
        if self.skipping(a) and not ref.target.scalar and not uses_parent(ref.target):
            if pos == "pos":
                self.emit(f"pos = {self.qualified(ref.target)}._skip({io}, pos, None, root{args})")
            self.emit(f"{local} = None")
            return
        parent = "self" if self.mode == OBJECT else "None"
        if ref.target.scalar:  # a function called per element: it takes the buffer and end too
            view = "buf, end" if io == "io" else f"{io}.buf, {io}.end"
            call = f"{self.qualified_function(ref.target)}({io}, {view}, {pos}, {parent}, root{args})"
        else:
            call = f"{self.qualified(ref.target)}._read({io}, {pos}, {parent}, root{args})"
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
            negative = "" if self.facts.nonnegative(a.size, self.given(a)) else f"{size} < 0 or "
            self.block(f"if {negative}pos + {size} > end:")
            self.emit(f"raise truncated(io, pos, {size}, {self.path(a)})")
            self.end_block()
        if self.skipping(a):
            self.emit(f"pos += {size}")
            self.emit(f"{local} = None")
            return
        if a.id in self.byte_indexed:
            self.out.add(f"# {a.id} is read byte by byte where it lies, from {local}_pos")
            self.emit(f"pos += {size}")
            return
        needs_io = a.type is not None and not isinstance(a.type, Text)
        if a.process is not None:
            name, args = a.process
            if name not in _PROCESSES:
                raise SpecError(self.t.spec.name, f"{a.yaml_path}/process", f"unknown process {name}")
            arg_text = "".join(f", {self.expr(arg)}" for arg in args)
            data = f"{local}_data"
            self.emit(f"{data} = {_PROCESSES[name]}(buf[pos:pos + {size}]{arg_text}, io, pos, {self.path(a)})")
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
        if a.valid is None or (self.mode == SKIP and "-rdbspec-warn" in a.raw):
            return  # stepping over a value warns of nothing: reading it does
        rules = a.valid if isinstance(a.valid, dict) else {"eq": a.valid}
        outer = self.loop_item
        self.loop_item = local
        self.current_attr = a
        checks: list[tuple[str, str]] = []
        for kind, rule in rules.items():
            if kind == "eq":
                value = self.expr(ex.parse(rule))
                checks.append((f"{local} != {value}", f"expected {rule}, found {{_}}"))
            elif kind == "min":
                checks.append((f"{local} < {self.expr(ex.parse(rule))}", f"expected at least {rule}, found {{_}}"))
            elif kind == "max":
                checks.append((f"{local} > {self.expr(ex.parse(rule))}", f"expected at most {rule}, found {{_}}"))
            elif kind == "any-of":
                options = ", ".join(self.expr(ex.parse(r)) for r in rule)
                allowed = ", ".join(str(r) for r in rule)
                checks.append((f"{local} not in ({options},)", f"expected one of {allowed}, found {{_}}"))
            elif kind == "expr":
                node = ex.parse(rule)
                if self.facts.safe(node, self.given(a), field_kind(a, element=True)):
                    checks.append((f"not {self.expr(node)}", ""))
                else:
                    checks.append((f"not {local}_ok", ""))
                    self.evaluate_guarded(f"{local}_ok", self.expr(node))
            else:
                raise SpecError(self.t.spec.name, f"{a.yaml_path}/valid", f"unsupported valid rule {kind}")
        # the bytes of a field read in place are sliced out only to be shown
        self.loop_item = f"bytes(buf[{local}_pos:pos])" if a.id in self.byte_indexed else local
        # -rdbspec-warn: the server loads what fails this check, so it is told and reading goes on
        report = "warn" if "-rdbspec-warn" in a.raw else "raise invalid"
        for condition, default in checks:
            self.block(f"if {condition}:")
            message = self.message(a, rules, a.raw.get("-rdbspec-message", default))
            self.emit(f"{report}(io, {start}, {self.path(a)}, {message})")
            self.end_block()
        self.loop_item = outer

    def message(self, a: Attribute, rules: dict, template: str) -> str:
        """The Python expression of a failed `valid`'s message (`-rdbspec-message`): its text,
        with each `{expression}` (or `{expression:format}`) replaced by the value's repr (or
        formatted); computed only when the check fails. An expression may use `_` and the names
        the check uses (so they are read already) and must be proven not to raise."""
        where = f"{a.yaml_path}/-rdbspec-message"
        if not template or ("-rdbspec-message" not in a.raw and isinstance(a.type, (UserRef, Switch))):
            raise SpecError(self.t.spec.name, where, "this `valid` needs -rdbspec-message: what was expected, "
                            "and the value found (as {_} or {_.field})")
        allowed = {"_"} | (ex.names_in(ex.parse(rules["expr"])) if "expr" in rules else set())
        parts = []
        for index, piece in enumerate(re.split(r"\{([^{}]*)\}", " ".join(str(template).split()))):
            if index % 2 == 0:
                if "{" in piece or "}" in piece:
                    raise SpecError(self.t.spec.name, where, f"unbalanced braces in {template!r}")
                parts += [repr(piece)] if piece else []
                continue
            formatted = re.fullmatch(r"(.*\S):([#0]?\d*([bdxXs]))", piece)
            node = ex.parse(formatted.group(1) if formatted else piece)
            kind = self.facts.kind(node, self.given(a), field_kind(a, element=True))
            computed = isinstance(node, ex.Name) and self.is_known(local_name(node.name))  # by the check
            fits = not formatted or (kind is not None and not kind.nullable
                                     and kind.base == ("text" if formatted.group(3) == "s" else "int"))
            if not ex.names_in(node) <= allowed or not (computed or kind is not None) or not fits:
                raise SpecError(self.t.spec.name, where, f"{{{piece}}} may use only _ and the names of the check, "
                                "must not raise, and its format must fit its value")
            value = self.expr(node)
            parts.append(f"format({value}, {formatted.group(2)!r})" if formatted else f"repr({value})")
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

    def storage(self, inst: Attribute) -> str:
        """How an object keeps a value instance that only combines fields with operators:
        "field" when it cannot raise (computed with the fields and stored like one), else
        "computed" (on each access: cheaper than a cache, whose first miss raises
        AttributeError); any other instance is "cached"."""
        if not self.facts.cheap_instance(self.t, inst):
            return "cached"
        lazy = {a.id for a in self.t.seq if a.raw.get("-rdbspec-lazy")}
        if self.facts.instance_kind(self.t, inst) is None or self.t.used_as_columns or self.t.streamed \
                or closure(self.t, {inst.id}) & lazy:
            return "computed"
        return "field"

    def property_body(self, inst: Attribute) -> list[str]:
        """The body of an instance property in object mode (after the cache lookup, if cached)."""
        self.out = Lines(depth=2)
        self.known = [set()]
        local = local_name(inst.id)
        if inst.value is not None:
            try:
                value = ex.translate(inst.value, self.ctx(pos=None))
                cond = ex.translate(inst.cond, self.ctx(pos=None)) if inst.cond is not None else None
            except ex.ExpressionError:
                # depends on the reading position: only known if computed while reading
                self.out.add(f"return self._m_{inst.id}")
                return self.out.lines
            value = value if cond is None else f"{value} if {cond} else None"
            if self.storage(inst) == "computed":
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
        local = local_name(a.id)
        self.emit("io = self._io")
        self.emit("buf = io.buf")
        self.emit("end = io.end")
        self.emit("root = self._root")
        self.emit(f"pos = self._lazy_{a.id}")
        if a.cond is not None:
            self.block(f"if not {self.expr(a.cond)}:")
            self.emit("return None")
            self.end_block()
        self.read_repeated(a, local)
        self.emit(f"return {local}")
        return self.out.lines

    def stream_loop(self, a: Attribute) -> list[str]:
        """The body of `iter_<field>`: reads one element at a time and yields it."""
        local = local_name(a.id)
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
        self.emit("self._stream_pos = pos")
        self.emit(f"yield {item}")
        if a.repeat == "until":
            self.loop_item = item
            self.current_attr = a
            self.block(f"if {self.expr(a.repeat_until)}:")
            self.emit("break")
            self.end_block()
            self.emit(f"{local}_index += 1")
        self.loop_item = self.loop_index = None
        self.end_block()
        return self.out.lines

    def scalar_result(self) -> str:
        names = [local_name(n) for n in self.t.scalar]
        for name in self.t.scalar:
            self.resolve(name)
        for line in self.pre:
            self.out.add(line)
        self.pre.clear()
        result = names[-1]
        for name in reversed(names[:-1]):
            result = f"{name} if {name} is not None else {result}"
        return result
