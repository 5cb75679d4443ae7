"""What the generator can prove about a type's expressions before it emits code for them.

* `Facts.kind(node)`: what an expression evaluates to (an int, a bool, bytes, an object of a known
  type...), or None when it might raise (None in arithmetic, an index out of range, a negative
  shift). An expression that cannot raise needs no guard, and may be computed earlier or once.
* `Facts.cheap(node)`: the expression only combines fields with operators (no parsing, no
  allocation), so an instance defined by it needs no cache.
* `Facts.exclusive(conds)`: no two of the conditions hold together, decided by evaluating them for
  every value of the few fields they test.

Facts follow the spec's own guards: in `c ? a : b` and `c and a`, `a` is checked knowing `c`, so a
field with `if: c` is known to be present there.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Optional

from . import expressions as ex
from .model import Attribute, Builder, Primitive, Text, TypeSpec, UserRef


@dataclass(frozen=True)
class Kind:
    """What an expression evaluates to: `base` is "int", "float", "bool", "bytes", "text",
    "list", "obj" (an object of `target`), "scalar" (a `-rdbspec-scalar` value of `target`)
    or "any"; `span` is the range of a fixed-size integer field, `values` the few values an
    integer can have (when it is one of some constants), `length` the size of sized bytes."""

    base: str
    nullable: bool = False
    nonneg: bool = False
    target: Optional[TypeSpec] = None
    span: Optional[tuple[int, int]] = None
    values: Optional[frozenset] = None
    length: Optional[ex.Node] = None


ANY = Kind("any", nullable=True)
BOOL = Kind("bool")
_MAX_ASSIGNMENTS = 1 << 16
_MAX_VALUES = 64
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}
_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.floordiv,
               "%": operator.mod, "&": operator.and_, "|": operator.or_, "^": operator.xor,
               "<<": operator.lshift, ">>": operator.rshift}


def _merge(a: Kind, b: Kind) -> Kind:
    nullable = a.nullable or b.nullable
    if a.base != b.base or a.target is not b.target:
        return Kind("any", nullable=True) if nullable else Kind("any")
    values = a.values | b.values if a.values is not None and b.values is not None else None
    return Kind(a.base, nullable, a.nonneg and b.nonneg, a.target,
                values=values if values is not None and len(values) <= _MAX_VALUES else None,
                length=a.length if a.length == b.length else None)


def _narrow(node: ex.Node, kind: Kind, facts: frozenset, constant: Callable[[ex.Node], object]) -> Kind:
    """The values of `node` left by the facts that compare it with a constant."""
    values = set(kind.values)
    for fact in facts:
        negated = isinstance(fact, ex.Unary) and fact.op == "not"
        test = fact.operand if negated else fact
        if isinstance(test, ex.Binary) and test.op in _COMPARE and test.left == node \
                and constant(test.right) is not None:
            values = {v for v in values if _COMPARE[test.op](v, constant(test.right)) != negated}
    return replace(kind, values=frozenset(values))


def assume(facts: frozenset, cond: ex.Node) -> frozenset:
    """The facts once `cond` is known to hold (both sides of an `and` hold)."""
    if isinstance(cond, ex.Binary) and cond.op == "and":
        return assume(assume(facts, cond.left), cond.right)
    if isinstance(cond, ex.Unary) and cond.op == "not":
        return refute(facts, cond.operand)
    return facts | {cond}


def refute(facts: frozenset, cond: ex.Node) -> frozenset:
    """The facts once `cond` is known not to hold (neither side of an `or` holds; a refuted
    `!=` is an `==`, and the other way round)."""
    if isinstance(cond, ex.Binary) and cond.op == "or":
        return refute(refute(facts, cond.left), cond.right)
    if isinstance(cond, ex.Unary) and cond.op == "not":
        return assume(facts, cond.operand)
    if isinstance(cond, ex.Binary) and cond.op in ("==", "!="):
        facts = facts | {ex.Binary("!=" if cond.op == "==" else "==", cond.left, cond.right)}
    return facts | {ex.Unary("not", cond)}


def implied(cond: ex.Node, facts: frozenset) -> bool:
    """Whether the facts make `cond` hold."""
    if cond in facts:
        return True
    if isinstance(cond, ex.Binary) and cond.op in ("and", "or"):
        sides = (implied(cond.left, facts), implied(cond.right, facts))
        return all(sides) if cond.op == "and" else any(sides)
    if isinstance(cond, ex.Unary) and cond.op == "not":
        inner = cond.operand
        if isinstance(inner, ex.Binary) and inner.op in ("and", "or"):
            sides = (implied(ex.Unary("not", inner.left), facts), implied(ex.Unary("not", inner.right), facts))
            return all(sides) if inner.op == "or" else any(sides)
        if isinstance(inner, ex.Unary) and inner.op == "not":
            return implied(inner.operand, facts)
    return False


def field_kind(a: Attribute, element: bool = False) -> Kind:
    """What a seq field holds once read (nullable when it has an `if`), or one element of it."""
    ref = a.type
    if element:
        return field_kind(replace(a, repeat=None, cond=None))
    if a.repeat:
        base = Kind("list")
    elif isinstance(ref, Primitive):
        signed = ref.fmt[-1].islower()
        bits = 8 * ref.size
        if ref.fmt[-1] in "fd":
            base = Kind("float")
        else:
            span = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            base = Kind("int", nonneg=not signed, span=span)
    elif isinstance(ref, Text):
        base = Kind("text")
    elif isinstance(ref, UserRef):
        base = Kind("scalar" if ref.target.scalar else "obj", target=ref.target)
    elif ref is None:
        exact = a.size is not None and a.process is None and a.terminator is None and "_io" not in ex.names_in(a.size)
        base = Kind("bytes", length=a.size if exact else None)
    else:
        base = ANY
    return replace(base, nullable=True) if a.cond is not None else base


class Facts:
    """Reasoning about the expressions of one type."""

    def __init__(self, builder: Builder, t: TypeSpec, kinds: Optional[dict[int, tuple]] = None):
        self.builder = builder
        self.t = t
        self.kinds = {} if kinds is None else kinds  # id(instance) -> (instance, kind), shared

    def enum_value(self, path: tuple[str, ...], member: str) -> int:
        return self.builder.enum(self.t, path[:-1], path[-1], self.t.yaml_path, member=member)

    def constant(self, node: ex.Node):
        """The number `node` is when it is one: a literal, or an enum member (its number)."""
        if isinstance(node, ex.Num):
            return node.value
        if isinstance(node, ex.EnumRef):
            return self.enum_value(node.enum_path, node.member)
        return None

    def of(self, t: TypeSpec) -> Facts:
        """The facts of another type, sharing what is known of instances."""
        return self if t is self.t else Facts(self.builder, t, self.kinds)

    # -- kinds ------------------------------------------------------------------------------

    def kind(self, node: ex.Node, facts: frozenset = frozenset(), it: Optional[Kind] = None) -> Optional[Kind]:
        """What `node` evaluates to, None if it might raise; `it` is the kind of `_`."""
        kind = self.unnarrowed(node, facts, it)
        return _narrow(node, kind, facts, self.constant) if kind is not None and kind.values is not None else kind

    def unnarrowed(self, node: ex.Node, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        if isinstance(node, (ex.Num, ex.EnumRef)):
            value = self.constant(node)
            if isinstance(value, float):
                return Kind("float")
            return Kind("int", nonneg=value >= 0, values=frozenset({value}))
        if isinstance(node, ex.Bool):
            return BOOL
        if isinstance(node, ex.Str):
            return Kind("text")
        if isinstance(node, ex.Name):
            return self.name_kind(node.name, facts, it)
        if isinstance(node, ex.Attr):
            return self.attr_kind(node, facts, it)
        if isinstance(node, ex.Unary):
            operand = self.kind(node.operand, facts, it)
            if operand is None:
                return None
            if node.op == "not":
                return BOOL
            return Kind("int") if operand.base == "int" and not operand.nullable else None
        if isinstance(node, ex.Binary):
            return self.binary_kind(node, facts, it)
        if isinstance(node, ex.Ternary):
            cond = self.kind(node.cond, facts, it)
            then = self.kind(node.then, assume(facts, node.cond), it)
            other = self.kind(node.other, refute(facts, node.cond), it)
            return None if cond is None or then is None or other is None else _merge(then, other)
        if isinstance(node, ex.Index):
            return self.index_kind(node, facts, it)
        if isinstance(node, ex.Call) and node.name == "substring":
            return self.substring_kind(node, facts, it)
        if isinstance(node, ex.Call) and node.name == "to_s":
            return self.to_s_kind(node, facts, it)
        if isinstance(node, ex.Cast):
            return self.cast_kind(node, facts, it)
        return None  # other calls, array literals, lookups (an index the root may not have): not reasoned about

    def cast_kind(self, node: ex.Cast, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        """`x.as<type>`: an object of that type, when `x` is there (what else it is, unknown)."""
        target = self.kind(node.target, facts, it)
        cast = self.builder.find_type(self.t, list(node.type_path))
        if target is None or cast is None:
            return None
        return Kind("scalar" if cast.scalar else "obj", nullable=target.nullable, target=cast)

    def to_s_kind(self, node: ex.Call, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        """Bytes decoded in a single-byte encoding (each byte a character) never raise."""
        target = self.kind(node.target, facts, it)
        single_byte = len(node.args) == 1 and isinstance(node.args[0], ex.Str) \
            and node.args[0].value.upper().replace("_", "-") in ("ISO-8859-1", "LATIN-1", "LATIN1")
        if target is None or target.nullable or target.base != "bytes" or not single_byte:
            return None
        return Kind("text")

    def substring_kind(self, node: ex.Call, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        """A slice of text or bytes never raises, whatever its bounds."""
        target = self.kind(node.target, facts, it)
        bounds = [self.kind(arg, facts, it) for arg in node.args]
        if target is None or target.base not in ("text", "bytes") or target.nullable or len(bounds) != 2 \
                or any(b is None or b.base != "int" or b.nullable for b in bounds):
            return None
        return Kind(target.base)

    def index_kind(self, node: ex.Index, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        """A byte of sized bytes, at an index the facts keep below the size."""
        target = self.kind(node.target, facts, it)
        index = self.kind(node.index, facts, it)
        if target is None or target.base != "bytes" or target.nullable or target.length is None \
                or index is None or index.values is None:
            return None
        length = self.kind(target.length, facts)
        if length is None or length.values is None or not index.values or not length.values:
            return None
        if min(index.values) < 0 or max(index.values) >= min(length.values):
            return None
        return Kind("int", nonneg=True, span=(0, 255))

    def name_kind(self, name: str, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        if name == "_":
            return it
        if name == "_index":
            return Kind("int", nonneg=True)
        attr = self.t.attribute(name)
        if attr is None:
            return ANY  # a param, _root, _parent: safe to name, nothing known about it
        if not attr.is_instance:
            kind = field_kind(attr)
            return replace(kind, nullable=False) if kind.nullable and implied(attr.cond, facts) else kind
        kind = self.instance_kind(self.t, attr)
        if kind is not None and attr.cond is not None and implied(attr.cond, facts):
            return replace(kind, nullable=False)
        return kind

    def instance_kind(self, t: TypeSpec, inst: Attribute) -> Optional[Kind]:
        """The kind of a value instance of `t` (nullable when it has an `if`); None if computing
        it might raise or it is read from the stream."""
        if id(inst) in self.kinds:
            return self.kinds[id(inst)][1]
        self.kinds[id(inst)] = (inst, None)  # a cycle proves nothing
        kind = None
        if inst.value is not None:
            facts = self.of(t)
            if inst.cond is None:
                kind = facts.kind(inst.value)
            elif facts.kind(inst.cond) is not None:
                value = facts.kind(inst.value, assume(frozenset(), inst.cond))
                kind = replace(value, nullable=True) if value is not None else None
        self.kinds[id(inst)] = (inst, kind)
        return kind

    def attr_kind(self, node: ex.Attr, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        if node.target == ex.Name("_io"):
            return BOOL if node.name == "eof" else Kind("int", nonneg=True)
        target = self.kind(node.target, facts, it)
        if target is None:
            return None
        if node.name in ("length", "size"):
            ok = target.base in ("bytes", "text", "list") and not target.nullable
            return Kind("int", nonneg=True) if ok else None
        if node.name == "to_s":  # an integer's decimal text
            return Kind("text") if target.base == "int" and not target.nullable else None
        t = target.target
        if target.base == "scalar" and t is not None:
            if node.name in t.scalar_tests:
                return BOOL
            if node.name not in t.scalar:
                return None
            tested = any(ex.Attr(node.target, test) in facts
                         for test, name in t.scalar_tests.items() if name == node.name)
            return Kind("int" if t.scalar_kind(node.name) == "int" else "bytes", nullable=not tested)
        if target.base != "obj" or target.nullable or t is None:
            return None
        attr = t.attribute(node.name)
        if attr is None:
            return None
        return self.instance_kind(t, attr) if attr.is_instance else field_kind(attr)

    def binary_kind(self, node: ex.Binary, facts: frozenset, it: Optional[Kind]) -> Optional[Kind]:
        left = self.kind(node.left, facts, it)
        if node.op in ("and", "or"):
            facts = assume(facts, node.left) if node.op == "and" else refute(facts, node.left)
            right = self.kind(node.right, facts, it)
            return None if left is None or right is None else _merge(left, right)
        right = self.kind(node.right, facts, it)
        if left is None or right is None:
            return None
        if node.op in ("==", "!="):
            return BOOL
        if left.nullable or right.nullable:
            return None
        if node.op in _COMPARE:
            same = left.base == right.base and left.base in ("int", "float", "bytes", "text")
            return BOOL if same or {left.base, right.base} == {"int", "float"} else None
        if node.op == "+" and left.base == right.base and left.base in ("bytes", "text"):
            return Kind(left.base)
        if left.base != "int" or right.base != "int":
            return None
        literal = self.constant(node.right)
        if node.op in ("<<", ">>") and not (isinstance(literal, int) and literal >= 0):
            return None  # a shift by a count that may be negative
        if node.op in ("/", "%") and not literal:
            return None  # a division by what may be zero
        both = left.nonneg and right.nonneg
        nonneg = {"+": both, "*": both, "|": both, "^": both, "&": left.nonneg or right.nonneg,
                  "<<": left.nonneg, ">>": left.nonneg, "/": both, "%": right.nonneg}.get(node.op, False)
        return Kind("int", nonneg=nonneg)

    def safe(self, node: ex.Node, facts: frozenset = frozenset(), it: Optional[Kind] = None) -> bool:
        return self.kind(node, facts, it) is not None

    def nonnegative(self, node: ex.Node, facts: frozenset = frozenset()) -> bool:
        kind = self.kind(node, facts)
        return kind is not None and kind.base == "int" and kind.nonneg and not kind.nullable

    # -- cost -------------------------------------------------------------------------------

    def cheap(self, node: ex.Node, seen: frozenset = frozenset()) -> bool:
        """Only fields, params and other cheap instances combined by operators."""
        if isinstance(node, (ex.Num, ex.Bool, ex.Str, ex.EnumRef)):
            return True
        if isinstance(node, ex.Name):
            if node.name.startswith("_"):
                return False
            attr = self.t.attribute(node.name)
            return attr is None or not attr.is_instance or self.cheap_instance(self.t, attr, seen)
        if isinstance(node, ex.Attr):
            if not self.cheap(node.target, seen):
                return False
            target = self.kind(node.target)
            t = target.target if target is not None else None
            if t is None or node.name in ("length", "size"):
                return False
            if target.base == "scalar":
                return node.name in t.scalar or node.name in t.scalar_tests
            attr = t.attribute(node.name)
            return attr is not None and (not attr.is_instance or self.cheap_instance(t, attr, seen))
        if isinstance(node, ex.Unary):
            return self.cheap(node.operand, seen)
        if isinstance(node, ex.Binary):
            return self.cheap(node.left, seen) and self.cheap(node.right, seen)
        if isinstance(node, ex.Ternary):
            return all(self.cheap(n, seen) for n in (node.cond, node.then, node.other))
        return False

    def cheap_instance(self, t: TypeSpec, inst: Attribute, seen: frozenset = frozenset()) -> bool:
        if inst.value is None or id(inst) in seen:
            return False
        seen = seen | {id(inst)}
        return all(self.of(t).cheap(n, seen) for n in (inst.value, inst.cond) if n is not None)

    # -- exclusive conditions ---------------------------------------------------------------

    def truth_table(self, conds: list[ex.Node]) -> Optional[tuple[list[ex.Node], list[tuple]]]:
        """The fields (and attributes of fields) the conditions test, and for every combination of
        their values (a byte field: all 256; a bool: both; another int: the values around the
        constants it is compared with) that combination followed by which conditions hold.
        None when unsure (something else is tested, too many combinations, an evaluation fails)."""
        atoms: dict[ex.Node, list] = {}
        if not all(self.collect_atoms(cond, atoms, frozenset()) for cond in conds):
            return None
        count = 1
        for values in atoms.values():
            count *= len(values)
        if count > _MAX_ASSIGNMENTS:
            return None
        names = list(atoms)
        rows = []
        for combo in itertools.product(*(atoms[n] for n in names)):
            env = dict(zip(names, combo))
            try:
                rows.append((combo, [bool(self.evaluate(cond, env)) for cond in conds]))
            except (TypeError, ValueError, ArithmeticError, KeyError):
                return None
        return names, rows

    def exclusive(self, conds: list[ex.Node]) -> bool:
        """True when no two of `conds` can hold together (unsure means False)."""
        table = self.truth_table(list(dict.fromkeys(conds)))
        return table is not None and all(sum(held) <= 1 for _, held in table[1])

    def lower_bound(self, conds: list[ex.Node]) -> Optional[tuple[ex.Node, int]]:
        """When the conditions only test one integer field and none holds below some value
        above the field's smallest: that field and value."""
        table = self.truth_table(conds)
        if table is None or len(table[0]) != 1:
            return None
        span = (self.kind(table[0][0]) or ANY).span
        lowest = min((combo[0] for combo, held in table[1] if any(held)), default=None)
        return (table[0][0], lowest) if span is not None and lowest is not None and lowest > span[0] else None

    def collect_atoms(self, node: ex.Node, atoms: dict, seen: frozenset, compared: Iterable[int] = ()) -> bool:
        """The fields (and attributes of fields) `node` tests, with the values to try for each."""
        if isinstance(node, (ex.Num, ex.Bool, ex.EnumRef)):
            return True
        if isinstance(node, ex.Name) and (inst := self.t.attribute(node.name)) is not None \
                and inst.is_instance and inst.value is not None and inst.cond is None:
            return id(inst) not in seen and self.collect_atoms(inst.value, atoms, seen | {id(inst)})
        if isinstance(node, (ex.Name, ex.Attr)):
            kind = self.kind(node)
            if kind is None or kind.nullable:
                return False
            if kind.base == "bool":
                values = [False, True]
            elif kind.base == "int" and kind.span is not None and kind.span[1] - kind.span[0] < 1 << 16:
                values = list(range(kind.span[0], kind.span[1] + 1))
            elif kind.base == "int" and compared:
                values = [v + d for v in compared for d in (-1, 0, 1)]
            else:
                return False
            atoms[node] = sorted(set(atoms.get(node, [])) | set(values))
            return True
        if isinstance(node, ex.Unary):
            return self.collect_atoms(node.operand, atoms, seen)
        if isinstance(node, ex.Binary):
            if node.op in _COMPARE:
                constants = [self.evaluate(n, {}) for n in (node.left, node.right)
                             if isinstance(n, (ex.Num, ex.EnumRef))]
                return all(self.collect_atoms(n, atoms, seen, constants) for n in (node.left, node.right))
            return self.collect_atoms(node.left, atoms, seen) and self.collect_atoms(node.right, atoms, seen)
        if isinstance(node, ex.Ternary):
            return all(self.collect_atoms(n, atoms, seen) for n in (node.cond, node.then, node.other))
        return False

    def evaluate(self, node: ex.Node, env: dict):
        """`node`'s value with the atoms set from `env` (Python semantics, as generated)."""
        if node in env:
            return env[node]
        if isinstance(node, (ex.Num, ex.Bool)):
            return node.value
        if isinstance(node, ex.EnumRef):
            return self.enum_value(node.enum_path, node.member)
        if isinstance(node, ex.Name):
            return self.evaluate(self.t.attribute(node.name).value, env)
        if isinstance(node, ex.Unary):
            value = self.evaluate(node.operand, env)
            return {"not": operator.not_, "-": operator.neg, "~": operator.invert}[node.op](value)
        if isinstance(node, ex.Ternary):
            branch = node.then if self.evaluate(node.cond, env) else node.other
            return self.evaluate(branch, env)
        if isinstance(node, ex.Binary):
            left = self.evaluate(node.left, env)
            if node.op == "and":
                return left and self.evaluate(node.right, env)
            if node.op == "or":
                return left or self.evaluate(node.right, env)
            ops = _COMPARE if node.op in _COMPARE else _ARITHMETIC
            return ops[node.op](left, self.evaluate(node.right, env))
        raise TypeError(f"cannot evaluate {node!r}")


def _parts(node: ex.Node, facts: frozenset) -> list[tuple[ex.Node, frozenset]]:
    """The expressions directly inside `node`, with what is known when each is evaluated."""
    if isinstance(node, ex.Ternary):
        return [(node.cond, facts), (node.then, assume(facts, node.cond)), (node.other, refute(facts, node.cond))]
    if isinstance(node, ex.Binary) and node.op in ("and", "or"):
        right = assume(facts, node.left) if node.op == "and" else refute(facts, node.left)
        return [(node.left, facts), (node.right, right)]
    return [(child, facts) for child in ex.children(node)]


def facts_along(node: ex.Node, facts: frozenset = frozenset()) -> Iterator[tuple[ex.Node, frozenset]]:
    """`node` and every expression inside it, each with what is known where it is evaluated."""
    yield node, facts
    for child, known in _parts(node, facts):
        yield from facts_along(child, known)


def _always(node: ex.Node) -> list[ex.Node]:
    """`node` and the expressions evaluated whenever it is (not those behind a short-circuit)."""
    if isinstance(node, ex.Ternary) or (isinstance(node, ex.Binary) and node.op in ("and", "or")):
        return [node, *_always(ex.children(node)[0])]
    return [node, *(n for child in ex.children(node) for n in _always(child))]


def guarded_use(node: ex.Node, name: str) -> Optional[tuple[ex.Node, frozenset]]:
    """The smallest part of `node` that holds every mention of `name`, and what is known where
    it is evaluated, when the first mention there is evaluated whenever that part is."""
    part, facts = node, frozenset()
    while part != ex.Name(name):
        holders = [(n, f) for n, f in _parts(part, facts) if name in ex.names_in(n)]
        if len(holders) != 1:
            break
        part, facts = holders[0]
    first = next(n for n in ex.nodes_in(part) if n == ex.Name(name))
    return (part, facts) if any(n is first for n in _always(part)) else None
