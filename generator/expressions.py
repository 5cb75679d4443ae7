"""The Kaitai expression language: a tokenizer and a Pratt parser to a small AST, and walks
over it (the names an expression reads). Target-neutral: each target translates the trees to its
own language (`generator.python.translate`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union


class ExpressionError(Exception):
    """An expression the generator cannot parse or translate."""


# --- AST -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Num:
    value: Union[int, float]


@dataclass(frozen=True)
class Str:
    value: str


@dataclass(frozen=True)
class Bool:
    value: bool


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class EnumRef:
    """`enum::member`, or its `.to_i`: the generated code holds enum values as their numbers."""

    enum_path: tuple[str, ...]
    member: str


@dataclass(frozen=True)
class Attr:
    target: Node
    name: str


@dataclass(frozen=True)
class Call:
    target: Node
    name: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Index:
    target: Node
    index: Node


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Ternary:
    cond: Node
    then: Node
    other: Node


@dataclass(frozen=True)
class ArrayLit:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Cast:
    """`target.as<type>`: the same value, of the named type (`::`-separated path) as far as the
    generator knows; the generated code is dynamically typed, so a cast changes nothing there."""

    target: Node
    type_path: tuple[str, ...]


@dataclass(frozen=True)
class Lookup:
    """A `-rdbspec-lookup` instance: what the index `index` of the root (`-rdbspec-index`) holds
    under `key`; with `value`, that expression of it (`_` is what the index holds), or `default`
    when it holds nothing under `key`. Never written in a spec's expressions: the model makes it
    of the key's mapping."""

    index: str
    key: Node
    value: Union[Node, None] = None
    default: Union[Node, None] = None


Node = Union[Num, Str, Bool, Name, EnumRef, Attr, Call, Index, Unary, Binary, Ternary, ArrayLit, Cast, Lookup]

# --- tokenizer -------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>0x[0-9a-fA-F_]+|0b[01_]+|0o[0-7_]+|\d[\d_]*\.\d+(?:[eE][-+]?\d+)?|\d[\d_]*)
  | (?P<str>"(?:[^"\\]|\\.)*"|'[^']*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>::|<<|>>|<=|>=|==|!=|[-+*/%&|^~<>?:.,()\[\]])
    """,
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "true", "false"}


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise ExpressionError(f"unexpected character {text[pos]!r} in {text!r}")
        pos = match.end()
        kind = match.lastgroup
        if kind == "ws":
            continue
        value = match.group()
        if kind == "name" and value in _KEYWORDS:
            kind = "kw"
        tokens.append((kind, value))
    tokens.append(("end", ""))
    return tokens


# --- parser ----------------------------------------------------------------------------------

_BINARY_POWER = {
    "or": 1, "and": 2,
    "==": 4, "!=": 4, "<": 5, "<=": 5, ">": 5, ">=": 5,
    "|": 6, "^": 7, "&": 8, "<<": 9, ">>": 9,
    "+": 10, "-": 10, "*": 11, "/": 11, "%": 11,
}
_TERNARY_POWER = 0


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.index]

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.index]
        if value is not None and token[1] != value:
            raise ExpressionError(f"expected {value!r}, found {token[1]!r} in {self.text!r}")
        self.index += 1
        return token

    def parse(self) -> Node:
        node = self.expression(-1)
        if self.peek()[0] != "end":
            raise ExpressionError(f"unexpected {self.peek()[1]!r} in {self.text!r}")
        return node

    def expression(self, min_power: int) -> Node:
        left = self.unary()
        while True:
            kind, value = self.peek()
            if value == "?" and min_power < _TERNARY_POWER:
                self.take()
                then = self.expression(-1)
                self.take(":")
                other = self.expression(_TERNARY_POWER - 1)
                left = Ternary(left, then, other)
                continue
            power = _BINARY_POWER.get(value) if kind in ("op", "kw") else None
            if power is None or power <= min_power:
                return left
            self.take()
            left = Binary(value, left, self.expression(power))

    def unary(self) -> Node:
        kind, value = self.peek()
        if value in ("-", "~", "not") and kind in ("op", "kw"):
            self.take()
            operand = self.unary() if value != "not" else self.expression(2)
            if value == "-" and isinstance(operand, Num):
                return Num(-operand.value)
            return Unary(value, operand)
        return self.postfix(self.primary())

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "num":
            digits = value.replace("_", "")
            return Num(float(digits) if "." in digits else int(digits, 0))
        if kind == "str":
            body = value[1:-1]
            if value[0] == '"':
                body = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
            return Str(body)
        if kind == "kw" and value in ("true", "false"):
            return Bool(value == "true")
        if kind == "name":
            if self.peek()[1] == "::":
                path = [value]
                while self.peek()[1] == "::":
                    self.take()
                    path.append(self.take()[1])
                return EnumRef(tuple(path[:-1]), path[-1])
            return Name(value)
        if value == "(":
            node = self.expression(-1)
            self.take(")")
            return node
        if value == "[":
            items: list[Node] = []
            while self.peek()[1] != "]":
                items.append(self.expression(-1))
                if self.peek()[1] == ",":
                    self.take()
            self.take("]")
            return ArrayLit(tuple(items))
        raise ExpressionError(f"unexpected {value!r} in {self.text!r}")

    def postfix(self, node: Node) -> Node:
        while True:
            value = self.peek()[1]
            if value == ".":
                self.take()
                name = self.take()[1]
                if name == "as" and self.peek()[1] == "<":
                    node = Cast(node, self.cast())
                elif self.peek()[1] == "(":
                    self.take()
                    args: list[Node] = []
                    while self.peek()[1] != ")":
                        args.append(self.expression(-1))
                        if self.peek()[1] == ",":
                            self.take()
                    self.take(")")
                    node = Call(node, name, tuple(args))
                elif not (name == "to_i" and isinstance(node, EnumRef)):  # a member is its number here
                    node = Attr(node, name)
            elif value == "[":
                self.take()
                index = self.expression(-1)
                self.take("]")
                node = Index(node, index)
            else:
                return node

    def cast(self) -> tuple[str, ...]:
        """The `<type>` of `.as<type>`: a type name's path (`::`-separated)."""
        self.take("<")
        path: list[str] = []
        while True:
            kind, value = self.take()
            if kind != "name":
                raise ExpressionError(f"expected a type name in .as<...>, found {value!r} in {self.text!r}")
            path.append(value)
            if self.peek()[1] != "::":
                break
            self.take()
        self.take(">")
        return tuple(path)


def parse(text: object) -> Node:
    """Parses a Kaitai expression (YAML may hand us ints and bools directly)."""
    if isinstance(text, bool):
        return Bool(text)
    if isinstance(text, (int, float)):
        return Num(text)
    return _Parser(str(text)).parse()


def children(node: Node) -> list[Node]:
    """The expressions directly inside `node`, in the order Python evaluates them."""
    if isinstance(node, (Attr, Cast)):
        return [node.target]
    if isinstance(node, Call):
        return [node.target, *node.args]
    if isinstance(node, Index):
        return [node.target, node.index]
    if isinstance(node, Unary):
        return [node.operand]
    if isinstance(node, Binary):
        return [node.left, node.right]
    if isinstance(node, Ternary):
        return [node.cond, node.then, node.other]
    if isinstance(node, ArrayLit):
        return list(node.items)
    if isinstance(node, Lookup):  # its `value` reads what is found (`_`), nothing of the type
        return [node.key] + ([node.default] if node.default is not None else [])
    return []


def nodes_in(node: Node):
    """`node` and every expression inside it, in evaluation order (outermost first)."""
    yield node
    for child in children(node):
        yield from nodes_in(child)


def names_in(node: Node) -> set[str]:
    """The bare names an expression refers to (not attributes of other objects)."""
    return {n.name for n in nodes_in(node) if isinstance(n, Name)}
