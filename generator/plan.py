"""Reading plans: what the reader of one type does, decided once for every target language.

A `TypePlan` answers, from the model and what facts.py proves, every question an emitter asks
while it renders the reader of one type in one mode: the steps the seq is read in (a field on its
own, or a chain of conditional fields that exclude each other), the instances computed before a
step (`hoisted`) or where a guarded expression first needs them (`in_place`), the fields a skip
reader steps over (`skipping`) and those read where they lie (`read_in_place`), the smallest size
of an element (count and progress checks), the `valid` checks and their messages, how an object
keeps an instance (`storage`), which types get a `_skip` reader. It holds model objects,
expression trees, names and numbers, never target text: an emitter (python/emit.py) walks the
steps and renders each answer in its language.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional, Union

from . import expressions as ex
from .facts import Facts, Kind, assume, facts_along, field_kind, guarded_use, implied
from .load import SpecError
from .model import Attribute, Builder, Primitive, Switch, Text, TypeRef, TypeSpec, UserRef, type_refs

OBJECT, SCALAR, ROWS, SKIP = "object", "scalar", "rows", "skip"


# -- what the model says of a type, whatever the mode -----------------------------------------

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


def element_min_size(a: Attribute) -> int:
    """A lower bound of the bytes one element of a field takes (0 when unsure)."""
    if a.size is not None:
        return a.size.value if isinstance(a.size, ex.Num) else 0
    return _ref_min_size(a.type, set()) if a.contents is None else len(a.contents)


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


def keeps_parent(t: TypeSpec) -> bool:
    """Whether an object of `t` keeps Kaitai's `_parent` back-reference: only when an expression
    of its own reads `_parent` after the read (a property), or one of a type read below it reads
    an object's `_parent` (`_parent._parent`). Elsewhere `_parent` is None: the objects of a
    record then form no reference cycle and are freed as soon as they are dropped, rather than
    by the cyclic garbage collector (15% of a full decode with the native backend)."""
    if uses_parent(t):
        return True
    seen, pending = {id(t)}, [t]
    while pending:
        for a in pending.pop().seq:
            for ref in type_refs(a.type):
                if isinstance(ref, UserRef) and id(ref.target) not in seen:
                    seen.add(id(ref.target))
                    pending.append(ref.target)
                    if any(isinstance(n, ex.Attr) and n.name == "_parent"
                           for node in expressions_of(ref.target) for n in ex.nodes_in(node)):
                        return True
    return False


def reads_index(t: TypeSpec, a: Attribute) -> bool:
    """Whether the expressions of field `a` read a `-rdbspec-lookup` instance: the root's index
    grows as records are read, so the field is read once, never again on access (its checks
    could decide otherwise afterwards)."""
    names = closure(t, {name for node in attribute_expressions(a) for name in ex.names_in(node)})
    return any(isinstance(inst.value, ex.Lookup) for name in names
               if (inst := t.attribute(name)) is not None and inst.is_instance)


def is_lazy(a: Attribute) -> bool:
    """A `-rdbspec-lazy` field: an object steps over it and decodes it on each access."""
    return bool(a.raw.get("-rdbspec-lazy"))


def opened_field(t: TypeSpec) -> Optional[Attribute]:
    """The `-rdbspec-splits` field that ends `t`'s seq, if one does. A lazy property that reads a
    `t` opens it (`_open`): the object is read up to that field, which is not stepped over
    again: the property's own object stepped over these bytes when it was read, and nothing
    after the field (no instance either) needs its end."""
    last = t.seq[-1] if t.seq else None
    return last if last is not None and last.splits and not t.instances else None


def skipped_types(roots: dict[str, TypeSpec]) -> set[int]:
    """Types that some lazy field may step over: they get a `_skip` reader."""
    pending = [a.type for root in roots.values() for t in root.walk() for a in t.seq if is_lazy(a)]
    found: dict[int, TypeSpec] = {}
    while pending:
        ref = pending.pop()
        if isinstance(ref, Switch):
            pending += [r for _, r in ref.cases] + [ref.default]
        elif isinstance(ref, UserRef) and not ref.target.scalar and id(ref.target) not in found:
            if uses_parent(ref.target):
                continue
            found[id(ref.target)] = ref.target
            pending += [a.type for a in ref.target.seq]
    return set(found)


def static_type(builder: Builder, t: TypeSpec, node: ex.Node, current: Optional[Attribute],
                seen: frozenset[int] = frozenset()) -> Optional[TypeSpec]:
    """The user type `node` evaluates to in `t`, where the spec makes it certain (`_` is an
    element of `current`): a field's, a cast's, or the one a value instance's expression gives."""
    if isinstance(node, ex.Cast):
        return builder.find_type(t, list(node.type_path))
    if isinstance(node, ex.Name):
        if node.name == "_parent":
            return t.parents[0] if len(t.parents) == 1 else None
        return _attribute_type(builder, t, current if node.name == "_" else t.attribute(node.name), seen)
    if isinstance(node, ex.Index):
        return static_type(builder, t, node.target, current, seen)
    if isinstance(node, ex.Attr):
        base = static_type(builder, t, node.target, current, seen)
        if base is None:
            return None
        if node.name == "_parent":
            return base.parents[0] if len(base.parents) == 1 else None
        return _attribute_type(builder, base, base.attribute(node.name), seen)
    return None


def _attribute_type(builder: Builder, t: TypeSpec, attr: Optional[Attribute],
                    seen: frozenset[int]) -> Optional[TypeSpec]:
    """The user type of a field of `t`, or of what a value instance of `t` computes."""
    if attr is None:
        return None
    if isinstance(attr.type, UserRef):
        return attr.type.target
    if attr.is_instance and attr.value is not None and id(attr) not in seen:
        return static_type(builder, t, attr.value, None, seen | {id(attr)})
    return None


# How one part of a chunked element goes into its columns (`chunk_row`)
ELEMENT, INT, UINT, DOUBLE, LENGTH = "element", "int", "uint", "double", "length"


@dataclass(frozen=True)
class ChunkPart:
    """One column value of a chunked repeat's element: `attr` (None: the element itself) read as
    `how`: ELEMENT, a `-rdbspec-element` type's value (bytes or an integer); INT, UINT (an
    unsigned 64-bit integer) or DOUBLE, a number; LENGTH, the `value` instance of a type of
    unsigned numbers (rdb_len). With `member`, the number is that field of the type of `attr`,
    a type of plain numbers (an ID of two u8be: each is a column value)."""

    attr: Optional[Attribute]
    how: str
    target: Optional[TypeSpec] = None
    member: Optional[Attribute] = None


def chunk_row(builder: Builder, a: Attribute) -> list[ChunkPart]:
    """The values one element of the `-rdbspec-chunks` field `a` puts into its columns, in order:
    the element itself when its type is a `-rdbspec-element` type, else each field of its type,
    every one unconditional, single, unchecked and of a kind a column holds."""
    target = a.type.target
    if target.element:
        return [ChunkPart(None, ELEMENT, target)]
    parts = []
    for f in target.seq:
        ref = f.type
        plain = f.cond is None and not f.repeat and f.valid is None and f.size is None and f.process is None
        if plain and isinstance(ref, UserRef) and ref.target.element and not ref.args:
            parts.append(ChunkPart(f, ELEMENT, ref.target))
        elif plain and isinstance(ref, UserRef) and (value_fields(builder, ref.target) or {}).get("value") == "int":
            parts.append(ChunkPart(f, LENGTH, ref.target))
        elif plain and isinstance(ref, Primitive) and number_kind(ref) is not None:
            parts.append(ChunkPart(f, number_kind(ref)))
        elif plain and isinstance(ref, UserRef) and not ref.args and plain_numbers(ref.target):
            parts += [ChunkPart(f, number_kind(m.type), None, m) for m in ref.target.seq]
        else:
            raise SpecError(target.spec.name, f.yaml_path,
                            f"{f.id} cannot go into the columns of {a.yaml_path} (-rdbspec-chunks)")
    return parts


def number_kind(ref: Primitive) -> Optional[str]:
    """How a column holds a number of this primitive: DOUBLE, INT (up to 64 bits signed), UINT
    (64 bits unsigned); None for what is not a number."""
    return {"f": DOUBLE, "d": DOUBLE, "Q": UINT}.get(ref.fmt[-1], INT if ref.fmt[-1] in "bBhHiIq" else None)


def plain_numbers(t: TypeSpec) -> bool:
    """A type of numbers only, each read once, as they come (no params, conditions, checks or
    instances): its fields go into columns one after the other."""
    return not (t.params or t.instances) and bool(t.seq) and all(
        isinstance(f.type, Primitive) and number_kind(f.type) is not None and f.cond is None and not f.repeat
        and f.valid is None and f.size is None and f.process is None and f.contents is None for f in t.seq)


# operators that keep non-negative numbers non-negative (a target may compute them unsigned)
_NON_NEGATIVE_OPS = {"&", "|", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "and", "or", "not"}


def value_fields(builder: Builder, t: TypeSpec) -> Optional[dict[str, str]]:
    """The value instances of a type that is only unsigned numbers (rdb_len), by kind ("int" or
    "bool"), when a reader may compute them without making an object: no params, every field
    an unsigned integer read once, every conditional one read only where present, every
    instance a non-null number or boolean computed with operators that keep numbers
    non-negative, nothing read from `_parent`, `_root` or `_io`. None for any other type."""
    if t.params or t.scalar or t.used_as_columns or t.streamed or not t.instances:
        return None
    for a in t.seq:
        ref = a.type
        if not (isinstance(ref, Primitive) and ref.fmt[-1] in "BHIQ") or a.repeat or a.size is not None \
                or a.size_eos or a.process is not None or a.contents is not None or is_lazy(a):
            return None
    if referenced_names(t) & {"_parent", "_root", "_io", "_index"}:
        return None
    plan = TypePlan(builder, t, SCALAR)
    if any(a.cond is not None and not plan.read_only_when_present(a) for a in t.seq):
        return None
    kinds = {}
    for inst in t.instances:
        if inst.value is None or inst.cond is not None:
            return None
        for n in ex.nodes_in(inst.value):
            number = plan.facts.constant(n)
            if isinstance(n, (ex.Unary, ex.Binary)) and n.op not in _NON_NEGATIVE_OPS \
                    or number is not None and not (isinstance(number, int) and number >= 0) \
                    or not isinstance(n, (ex.Name, ex.Num, ex.EnumRef, ex.Bool, ex.Unary, ex.Binary, ex.Ternary)):
                return None
        kind = plan.facts.instance_kind(t, inst)
        if kind is None or kind.nullable or kind.base not in ("int", "bool"):
            return None
        kinds[inst.id] = kind.base
    return kinds


# -- the records an emitter walks --------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Read:
    """One seq field, read on its own (under its condition, if it has one)."""

    attr: Attribute


@dataclass(frozen=True, eq=False)
class Chain:
    """Conditional fields read as one chain, so each condition is tested once at most: each
    branch pairs a condition with the fields read when it holds, and at most one holds. With
    `bound` = (expression, value), no condition holds while the expression is below the value:
    the chain is entered only from it."""

    attrs: tuple[Attribute, ...]
    branches: tuple[tuple[ex.Node, tuple[Attribute, ...]], ...]
    bound: Optional[tuple[ex.Node, int]]


@dataclass(frozen=True)
class Check:
    """One rule of a field's `valid`: the value fails it when it is not equal to (eq), not at
    least (min), not at most (max) or not one of (any-of) the operands, or when the operand
    expression does not hold (expr). A `guarded` expression might raise: failing to evaluate it
    counts as failing the check. `template` is what a failure says (see `TypePlan.message`)."""

    kind: str
    operands: tuple[ex.Node, ...]
    template: str
    guarded: bool = False


@dataclass(frozen=True)
class MessageValue:
    """A value shown in a failed check's message: `node`'s repr, or formatted with the
    (Python-style) format spec `format`."""

    node: ex.Node
    format: Optional[str] = None


Step = Union[Read, Chain]


class TypePlan:
    """The decisions of the reader of one type in one mode (object, scalar, rows or skip)."""

    def __init__(self, builder: Builder, t: TypeSpec, mode: str):
        self.builder = builder
        self.t = t
        self.mode = mode
        self.facts = Facts(builder, t)
        self.needed = names_needed_while_reading(t)
        self.shared = shared_reads(t)
        self.uses = Counter(name for a in t.seq + t.instances for node in attribute_expressions(a)
                            for name in ex.names_in(node))
        self.uses.update(t.scalar or ())
        self.byte_indexed = self.fields_read_by_byte() if mode in (SCALAR, SKIP) else set()

    @contextmanager
    def stepping_over(self) -> Iterator[None]:
        """An object reads a lazy field as a skip reader would: it steps over it."""
        self.mode = SKIP
        try:
            yield
        finally:
            self.mode = OBJECT

    # -- the seq ---------------------------------------------------------------------------

    def read_fields(self) -> list[Attribute]:
        """The seq fields a type's reader reads: those before the streamed field (which
        `iter_<field>` reads, then the ones after it)."""
        return self.t.seq[:self.streamed_index()]

    def fields_after_stream(self) -> list[Attribute]:
        """The seq fields read when the streamed field's iterator ends."""
        return self.t.seq[self.streamed_index() + 1:]

    def streamed_index(self) -> int:
        return [a.id for a in self.t.seq].index(self.t.streamed) if self.t.streamed else len(self.t.seq)

    def stored_instances(self) -> list[Attribute]:
        """Instances that an object computes after its fields and keeps like one."""
        return [inst for inst in self.t.instances if self.mode == OBJECT and self.storage(inst) == "field"]

    def steps(self, attrs: list[Attribute]) -> list[Step]:
        """Fields in order; a run of conditional fields whose conditions exclude each other
        (or are the same) is one chain."""
        steps: list[Step] = []
        index = 0
        while index < len(attrs):
            run = self.exclusive_run(attrs[index:])
            steps.append(self.chain(run) if len(run) > 1 else Read(attrs[index]))
            index += len(run)
        return steps

    def chainable(self, a: Attribute) -> bool:
        """A conditional field whose condition does not depend on the position, and whose type
        does not read its parent (whose fields a chain stores only at its end)."""
        return (a.cond is not None and not is_lazy(a) and "_io" not in ex.names_in(a.cond)
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

    def chain(self, run: list[Attribute]) -> Chain:
        branches: dict[ex.Node, list[Attribute]] = {}
        for a in run:
            branches.setdefault(a.cond, []).append(a)
        # a chain that only tests one integer field, and never holds below some value, is
        # entered only from that value: the common small values skip every test
        bound = self.facts.lower_bound(list(branches)) if len(branches) > 1 else None
        return Chain(tuple(run), tuple((cond, tuple(attrs)) for cond, attrs in branches.items()), bound)

    def hoisted(self, attrs: list[Attribute], is_read: Callable[[str], bool]) -> list[Attribute]:
        """Before conditional fields: the instances they need that a later field needs too,
        computed once there, when that cannot raise and all they read is read already
        (`is_read(name)`: that field or instance has its value at this point)."""
        last = max(i for i, b in enumerate(self.t.seq) if any(b is a for a in attrs))
        later = closure(self.t, {n for b in self.t.seq[last + 1:] for node in attribute_expressions(b)
                                 for n in ex.names_in(node)} | set(self.t.scalar or ()))
        inside = closure(self.t, {n for a in attrs for node in attribute_expressions(a) if node is not a.cond
                                  for n in ex.names_in(node)})
        found = []
        for inst in self.t.instances:
            if inst.id not in inside & later or inst.value is None or is_read(inst.id):
                continue
            reads = closure(self.t, {inst.id})
            ready = all(is_read(n) for n in reads if (b := self.t.attribute(n)) is not None and not b.is_instance)
            if ready and "_io" not in reads and self.facts.instance_kind(self.t, inst) is not None:
                found.append(inst)
        return found

    def in_place(self, node: ex.Node, is_read: Callable[[str], bool]) -> list[str]:
        """Instances that only `node` uses, under a guard that implies their condition: they
        are computed where the guarded part first needs them, so entries that take another
        branch never compute them."""
        found = []
        for name in sorted(ex.names_in(node)):
            inst = self.t.attribute(name)
            if inst is None or not inst.is_instance or inst.value is None or is_read(name) \
                    or self.facts.instance_kind(self.t, inst) is None or self.uses.get(name, 0) != 1:
                continue
            use = guarded_use(node, name)
            if use is not None and use[1] and (inst.cond is None or implied(inst.cond, use[1])):
                found.append(name)
        return found

    def same_for_every_row(self, node: ex.Node, name: str, current: Optional[Attribute]) -> bool:
        """`node.name` reads from `_parent` alone, an unconditional field (or a scalar's value
        test) at each step: a rows reader may read it once before its rows, as it cannot fail
        there where reading it in a row would not."""
        root = node
        while isinstance(root, ex.Attr):
            root = root.target
        if root != ex.Name("_parent"):
            return False
        target = self.static_type(node, current)
        if target is None:
            return False
        if target.scalar:
            return True
        attr = target.attribute(name)
        return attr is not None and not attr.is_instance and attr.cond is None and not is_lazy(attr)

    def read_only_when_present(self, a: Attribute) -> bool:
        """Every expression of the type reads the conditional field `a` only where its condition
        holds (so a target may give it any placeholder value when it is absent)."""
        for b in self.t.seq + self.t.instances:
            # b's other expressions are evaluated only where b's own condition holds
            known = self.given(b)
            for node in attribute_expressions(b):
                if a.id in ex.names_in(node):
                    use = guarded_use(node, a.id)
                    if use is None or not implied(a.cond, use[1] | (frozenset() if node is b.cond else known)):
                        return False
        return True

    def checked_tests(self, a: Attribute) -> frozenset:
        """The tests of a scalar field (`-rdbspec-scalar-tests`) that its check, an error and
        not a warning, makes hold once the field is read."""
        ref = a.type
        if not (isinstance(ref, UserRef) and ref.target.scalar and isinstance(a.valid, dict)
                and "expr" in a.valid) or self.warns(a):
            return frozenset()
        known = assume(frozenset(), ex.parse(a.valid["expr"]))
        return frozenset(test for test in ref.target.scalar_tests if ex.Attr(ex.Name("_"), test) in known)

    def present_reads(self, node: ex.Node, it: Optional[Attribute], checked: dict[str, frozenset]) -> dict[int, bool]:
        """The reads `x.candidate` in `node`, of a scalar field x, that give a value wherever they
        are evaluated: the candidate's test is known there, from the expression itself or, for
        x read and checked before (`checked`: its `checked_tests`), from x's check where x is
        present. Keyed by the identity of each read's `x` node; `it` is the field `_` names.
        True where what the expression does with the value cannot leave 64 bits: a comparison,
        or `&` with a non-negative number."""
        bounded = {id(child) for n in ex.nodes_in(node) if isinstance(n, ex.Binary) and (
            n.op in ("==", "!=", "<", "<=", ">", ">=")
            or n.op == "&" and any(isinstance(self.facts.constant(side), int) and self.facts.constant(side) >= 0
                                   for side in (n.left, n.right)))
            for child in (n.left, n.right)}
        found = {}
        for n, facts in facts_along(node):
            if not (isinstance(n, ex.Attr) and isinstance(n.target, ex.Name)):
                continue
            name = n.target.name
            a = it if name == "_" else self.t.attribute(name)
            target = a.type.target if a is not None and isinstance(a.type, UserRef) else None
            if target is None or not target.scalar or n.name not in target.scalar:
                continue
            tests = {test for test, candidate in target.scalar_tests.items() if candidate == n.name}
            by_check = name != "_" and tests & checked.get(name, frozenset()) \
                and (a.cond is None or implied(a.cond, facts))
            if by_check or any(ex.Attr(n.target, test) in facts for test in tests):
                found[id(n.target)] = id(n) in bounded
        return found

    def kind_where_present(self, a: Attribute) -> Optional[Kind]:
        """What the value instance `a` holds where its condition holds (None: not known)."""
        return self.facts.kind(a.value, self.given(a)) if a.value is not None else None

    @staticmethod
    def given(a: Attribute) -> frozenset:
        """What is known while a field is read: its condition holds."""
        return assume(frozenset(), a.cond) if a.cond is not None else frozenset()

    def spec_path(self, a: Attribute) -> str:
        """Where errors about a field point: `file:type.field`."""
        return f"{self.t.spec_path}.{a.id}"

    def skipping(self, a: Attribute) -> bool:
        """In skip mode a field nobody refers to (no later expression, no `valid`, no
        repeat-until) is stepped over, not built."""
        return (self.mode == SKIP and a.id not in self.needed and a.valid is None
                and a.repeat != "until")

    def steps_over(self, a: Attribute, ref: UserRef) -> bool:
        """A skipped field of a user type is stepped over by that type's skip reader (a scalar
        type has none, and a type that reads its parent is built)."""
        return self.skipping(a) and not ref.target.scalar and not uses_parent(ref.target)

    def stores(self, a: Attribute) -> bool:
        """An object keeps each field it reads (a lazy one is read by its property); rows keep
        them in columns; other modes keep nothing."""
        return self.mode == ROWS or (self.mode == OBJECT and not is_lazy(a))

    # -- sizes -----------------------------------------------------------------------------

    @staticmethod
    def fixed_width(a: Attribute) -> Optional[int]:
        """The size of a field that is one primitive of a fixed size, None otherwise."""
        fixed = isinstance(a.type, Primitive) and a.size is None and not a.size_eos
        return a.type.size if fixed else None

    def marks_start(self, a: Attribute) -> bool:
        """The position where the field starts is kept: a failed `valid` reports it (unless it
        is known from the fixed width), or the field is read in place from there."""
        return (a.valid is not None and self.fixed_width(a) is None) or a.id in self.byte_indexed

    def size_may_be_negative(self, a: Attribute) -> bool:
        return not self.facts.nonnegative(a.size, self.given(a))

    @staticmethod
    def checks_progress(a: Attribute) -> bool:
        """A repeat that runs until a condition or the end of the stream, whose element may take
        no bytes: an element that consumed none is an error (else the loop would not end)."""
        return a.repeat != "expr" and element_min_size(a) == 0

    @staticmethod
    def substream(a: Attribute) -> bool:
        """A sized field parsed as a type (not raw bytes or text) is read from its own substream."""
        return a.type is not None and not isinstance(a.type, Text)

    def fields_read_by_byte(self) -> set[str]:
        """Sized raw fields that the type's expressions only index with constants, each index
        proven within the size, and that nothing keeps: they are never sliced out of the buffer,
        their bytes are read in place."""
        found = set()
        for a in self.t.seq:
            kind = field_kind(a)
            if kind.base != "bytes" or kind.length is None or kind.nullable or self.skipping(a) or is_lazy(a) \
                    or (a.valid is not None and (not isinstance(a.valid, dict) or set(a.valid) != {"expr"})):
                continue
            if all(self.indexed_safely(a, b) for b in self.t.seq + self.t.instances):
                found.add(a.id)
        return found

    def read_in_place(self, a: Attribute) -> bool:
        return a.id in self.byte_indexed

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

    # -- expressions -----------------------------------------------------------------------

    def static_type(self, node: ex.Node, current: Optional[Attribute]) -> Optional[TypeSpec]:
        """The user type an expression evaluates to, where the spec makes it certain (`_` is an
        element of `current`)."""
        return static_type(self.builder, self.t, node, current)

    def plain_instance(self, node: ex.Node, target: TypeSpec, name: str, current: Optional[Attribute]) -> bool:
        """`node.name`, where `node` is an object of `target`, is an instance that cannot raise,
        of an object that is certainly there: read as a plain attribute."""
        inst = target.attribute(name)
        it = field_kind(current, element=True) if current is not None else None
        base = self.facts.kind(node, it=it)
        return not (inst is None or not inst.is_instance or base is None or base.nullable
                    or self.facts.instance_kind(target, inst) is None)

    def check_operands(self, node: ex.Node, current: Optional[Attribute]) -> None:
        """An object of a user type used as a number (`container == 1` for `container.value == 1`)
        is never equal, less or more than it: a generator error, not a branch never taken."""
        for n in ex.nodes_in(node):
            operands = (n.left, n.right) if isinstance(n, ex.Binary) and n.op not in ("and", "or") else \
                (n.operand,) if isinstance(n, ex.Unary) and n.op != "not" else ()
            for operand in operands:
                target = self.static_type(operand, current)
                if target is not None:
                    raise ex.ExpressionError(f"operator {n.op} applied to a {target.id} object, not a number "
                                             f"(read one of its fields or instances)")

    # -- valid -----------------------------------------------------------------------------

    def warns(self, a: Attribute) -> bool:
        """-rdbspec-warn: the server loads what fails this check, so it is told and reading goes on."""
        return "-rdbspec-warn" in a.raw

    def checks(self, a: Attribute) -> list[Check]:
        """The checks of a field's `valid`, in the spec's order (none when stepping over a
        value that only warns: reading it does)."""
        if a.valid is None or (self.mode == SKIP and self.warns(a)):
            return []
        checks = []
        for kind, rule in self.rules(a).items():
            if kind in ("eq", "min", "max"):
                expected = {"eq": "", "min": "at least ", "max": "at most "}[kind]
                checks.append(Check(kind, (ex.parse(rule),), f"expected {expected}{rule}, found {{_}}"))
            elif kind == "any-of":
                allowed = ", ".join(str(r) for r in rule)
                checks.append(Check(kind, tuple(ex.parse(r) for r in rule), f"expected one of {allowed}, found {{_}}"))
            elif kind == "expr":
                node = ex.parse(rule)
                safe = self.facts.safe(node, self.given(a), field_kind(a, element=True))
                checks.append(Check(kind, (node,), "", guarded=not safe))
            else:
                raise SpecError(self.t.spec.name, f"{a.yaml_path}/valid", f"unsupported valid rule {kind}")
        if "-rdbspec-message" not in a.raw:
            return checks
        return [Check(c.kind, c.operands, a.raw["-rdbspec-message"], c.guarded) for c in checks]

    @staticmethod
    def rules(a: Attribute) -> dict:
        return a.valid if isinstance(a.valid, dict) else {"eq": a.valid}

    def message(self, a: Attribute, check: Check,
                computed: Callable[[str], bool]) -> Iterator[Union[str, MessageValue]]:
        """The parts of a failed check's message (`-rdbspec-message`): its text, with each
        `{expression}` (or `{expression:format}`) a value to show. An expression may use `_` and
        the names the check uses and must be proven not to raise, unless it is a name the check
        computed already (`computed(name)`, asked when the part is reached, after the parts
        before it were rendered)."""
        where = f"{a.yaml_path}/-rdbspec-message"
        template = check.template
        if not template or ("-rdbspec-message" not in a.raw and isinstance(a.type, (UserRef, Switch))):
            raise SpecError(self.t.spec.name, where, "this `valid` needs -rdbspec-message: what was expected, "
                            "and the value found (as {_} or {_.field})")
        rules = self.rules(a)
        allowed = {"_"} | (ex.names_in(ex.parse(rules["expr"])) if "expr" in rules else set())
        for index, piece in enumerate(re.split(r"\{([^{}]*)\}", " ".join(str(template).split()))):
            if index % 2 == 0:
                if "{" in piece or "}" in piece:
                    raise SpecError(self.t.spec.name, where, f"unbalanced braces in {template!r}")
                if piece:
                    yield piece
                continue
            formatted = re.fullmatch(r"(.*\S):([#0]?\d*([bdxXs]))", piece)
            node = ex.parse(formatted.group(1) if formatted else piece)
            kind = self.facts.kind(node, self.given(a), field_kind(a, element=True))
            known = isinstance(node, ex.Name) and computed(node.name)
            fits = not formatted or (kind is not None and not kind.nullable
                                     and kind.base == ("text" if formatted.group(3) == "s" else "int"))
            if not ex.names_in(node) <= allowed or not (known or kind is not None) or not fits:
                raise SpecError(self.t.spec.name, where, f"{{{piece}}} may use only _ and the names of the check, "
                                "must not raise, and its format must fit its value")
            yield MessageValue(node, formatted.group(2) if formatted else None)

    # -- instances -------------------------------------------------------------------------

    def storage(self, inst: Attribute) -> str:
        """How an object keeps a value instance that only combines fields with operators:
        "field" when it cannot raise (computed with the fields and stored like one), else
        "computed" (on each access: cheaper than a cache, whose first miss raises
        AttributeError); any other instance is "cached"."""
        if not self.facts.cheap_instance(self.t, inst):
            return "cached"
        lazy = {a.id for a in self.t.seq if is_lazy(a)}
        if self.facts.instance_kind(self.t, inst) is None or self.t.used_as_columns or self.t.streamed \
                or closure(self.t, {inst.id}) & lazy:
            return "computed"
        return "field"
