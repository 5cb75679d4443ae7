"""Writing plans: how the writer of one type produces its fields, decided once for every target.

A type is written from what a writer gives and what the spec derives:

* a type with write inputs (`-rdbspec-write-from`, and every `-rdbspec-scalar` type, whose inputs
  are its scalar instances) is written from those instances: each seq field is derived from them
  (`-rdbspec-write`), fixed (`contents`, `valid: {eq: ...}`), and the instances, computed back from
  the derived fields as the reader computes them, must give the inputs again;
* any other type is written from its seq fields as they are on the object (read from a file, or
  set by a writer), except the fields the spec derives (`-rdbspec-write`: lengths, counts,
  sizes, encodings) and the fixed ones, which the writer computes.

Fields are serialized one by one into parts, in an order where what a field needs is there first
(a length before the bytes it counts is computed after them: `order`), then joined in seq order.
Every check of the reader is made on what was written: each field's condition against its
presence, its size, its count, its `valid`, an argument against the object's parameter.

Write expressions (only `-rdbspec-write`, never read by the official compiler) may use, besides
the Kaitai expression language: `null`; `X._sizeof`, the size of field X as serialized (before a
`process`); `X._stored_size`, its size in the stream (after it); `X._last_sizeof`, the size of the
last element of the repeat that X ends with (0 when empty); `_scalars`, how many values of
`-rdbspec-scalar` types the other fields hold; `.min` / `.max` of a list of numbers. In the
inputs of the elements of a repeat (a mapping on a repeated field): `_index` and `_prev_sizeof`,
the size of the element before (0 for the first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import expressions as ex
from .load import SpecError
from .model import Attribute, Builder, Primitive, Switch, TypeSpec, UserRef, type_refs

# names a write expression may use beside the type's own
WRITE_NAMES = frozenset({"null", "_scalars", "_index", "_prev_sizeof", "_parent", "_root", "_io", "_"})
SIZE_ATTRIBUTES = frozenset({"_sizeof", "_stored_size", "_last_sizeof"})


class NoWriterError(SpecError):
    """The type cannot be written: a field of a `-rdbspec-scalar` type that says nothing of how it
    is written (no `-rdbspec-write` on its fields). Such a type gets no writer."""


@dataclass
class FieldWrite:
    """How one seq field is written."""

    attr: Attribute
    role: str  # "given", "derived" or "fixed"
    fixed: Optional[bytes | int] = None  # the value of a fixed field
    needs: set[str] = field(default_factory=set)  # seq fields serialized or derived before this one


class WritePlan:
    """The writer of one type: the inputs, each field's role, the order fields are produced in."""

    def __init__(self, builder: Builder, t: TypeSpec):
        self.builder = builder
        self.t = t
        self.inputs: list[str] = list(t.write_from)
        self.fields = [self._field(a) for a in t.seq]
        self.order = self._order()  # after every role is known: `field_needs` reads them

    @property
    def from_inputs(self) -> bool:
        return bool(self.inputs)

    def error(self, a: Attribute, message: str) -> SpecError:
        return SpecError(self.t.spec.name, a.yaml_path, message)

    # -- roles -------------------------------------------------------------------------------

    def _field(self, a: Attribute) -> FieldWrite:
        for ref in type_refs(a.type):
            if isinstance(ref, UserRef) and ref.target.scalar and not ref.target.write_from:
                raise NoWriterError(self.t.spec.name, a.yaml_path, f"{ref.target.id} says nothing of how it is written")
        if a.write is not None:
            if isinstance(a.write, dict) and not a.repeat:
                target = self.user_target(a)
                if target is None or not target.write_from:
                    raise self.error(a, "-rdbspec-write as a mapping needs a field of a type with write inputs")
                missing = set(target.write_from) - set(a.write)
                if missing:
                    raise self.error(a, f"-rdbspec-write gives no {sorted(missing)} for {target.id}")
            role = "given" if a.repeat else "derived"  # a repeat's mapping: extra inputs of each element
            return FieldWrite(a, role)
        if a.contents is not None:
            return FieldWrite(a, "fixed", fixed=a.contents)
        if isinstance(a.valid, dict) and "eq" in a.valid and a.cond is None and not a.repeat:
            return FieldWrite(a, "fixed", fixed=self.builder_value(a, a.valid["eq"]))
        if self.from_inputs:
            raise self.error(a, f"{self.t.id} is written from {self.inputs}: give this field a -rdbspec-write")
        return FieldWrite(a, "given")

    def builder_value(self, a: Attribute, value: object) -> int:
        if isinstance(value, int):
            return value
        node = ex.parse(value)
        if isinstance(node, ex.Num) and isinstance(node.value, int):
            return node.value
        raise self.error(a, f"valid eq {value!r}: a fixed field must equal a number")

    @staticmethod
    def user_target(a: Attribute) -> Optional[TypeSpec]:
        return a.type.target if isinstance(a.type, UserRef) else None

    # -- order ---------------------------------------------------------------------------------

    def field_needs(self, node: ex.Node) -> set[str]:
        """The seq fields an expression needs produced first: the derived and fixed ones it reads
        (through the instances it reads too), and those whose size it reads. A field given on the
        object is there from the start: reading its value needs nothing."""
        roles = {fw.attr.id: fw.role for fw in self.fields}
        out: set[str] = set()
        seen: set[str] = set()

        def visit(n: ex.Node) -> None:
            for sub in ex.nodes_in(n):
                if isinstance(sub, ex.Attr) and sub.name in SIZE_ATTRIBUTES and isinstance(sub.target, ex.Name):
                    out.add(sub.target.name)
                elif isinstance(sub, ex.Name):
                    add(sub.name)

        def add(name: str) -> None:
            if name in seen or name in self.inputs:
                return
            seen.add(name)
            if name == "_scalars":
                out.update(roles)
                return
            if name in WRITE_NAMES or name in (p.id for p in self.t.params):
                return
            attr = self.t.attribute(name)
            if attr is None:
                raise SpecError(self.t.spec.name, self.t.yaml_path, f"{self.t.id} has no {name!r} to write from")
            if not attr.is_instance:
                if roles[name] != "given":
                    out.add(name)
                return
            if attr.pos is not None:
                raise SpecError(self.t.spec.name, attr.yaml_path, "a positional instance cannot be written")
            for part in (attr.value, attr.cond):
                if part is not None:
                    visit(part)

        visit(node)
        return out

    def _order(self) -> list[FieldWrite]:
        """The fields in the order they are produced: each after what it needs, else in seq order."""
        for fw in self.fields:
            a = fw.attr
            nodes: list[ex.Node] = []
            if fw.role == "derived":
                nodes += list(a.write.values()) if isinstance(a.write, dict) else [a.write]
                nodes += [a.cond] if a.cond is not None else []
            elif fw.role == "given":
                if isinstance(a.write, dict):
                    nodes += list(a.write.values())
            if isinstance(a.type, Switch):
                nodes.append(a.type.on)
            nodes += [arg for r in type_refs(a.type) if isinstance(r, UserRef) for arg in r.args]
            for n in nodes:
                fw.needs |= self.field_needs(n)
            fw.needs.discard(a.id)
        done: list[FieldWrite] = []
        pending = list(self.fields)
        while pending:
            ready = next((fw for fw in pending if fw.needs <= {d.attr.id for d in done}), None)
            if ready is None:
                names = ", ".join(f"{fw.attr.id} needs {sorted(fw.needs)}" for fw in pending)
                raise SpecError(self.t.spec.name, self.t.yaml_path, f"the writer's fields need each other: {names}")
            done.append(ready)
            pending.remove(ready)
        return done

    # -- what a field is -----------------------------------------------------------------------

    @staticmethod
    def scalar_target(ref) -> Optional[TypeSpec]:
        return ref.target if isinstance(ref, UserRef) and ref.target.scalar else None

    @staticmethod
    def is_primitive(ref) -> bool:
        return isinstance(ref, Primitive)
