"""Kaitai expressions as Python source: the Python target's translator of the trees that
`generator.expressions` parses (the Cython target renders the same text, in its own contexts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..expressions import (
    ArrayLit,
    Attr,
    Binary,
    Bool,
    Call,
    Cast,
    EnumRef,
    ExpressionError,
    Index,
    Lookup,
    Name,
    Node,
    Num,
    Str,
    Ternary,
    Unary,
)

_PY_BINARY = {"and": "and", "or": "or", "/": "//"}
_IO_MEMBERS = {"pos": "({pos} - {io}.start)", "size": "({io}.end - {io}.start)", "eof": "({pos} >= {io}.end)"}


@dataclass
class Context:
    """What the surroundings of an expression mean in the generated function.

    `resolve(name)` gives Python source for a bare name of the current type; `enum_member`
    gives it for an enum member (`record_kind::select_db`: the module's constant for it);
    `pos`/`io` name the reading position and stream variables (None where `_io` is not
    available, e.g. lazy instances).
    """

    resolve: Callable[[str], str]
    enum_member: Callable[[tuple[str, ...], str], str]
    pos: str | None = "pos"
    io: str | None = "io"
    # reads `name` of the value of `target` (Python source) when the emitter knows better
    # than a plain attribute access (scalar-compiled types); None means no opinion
    attribute: Callable[[Node, str, str], str | None] = lambda node, name, source: None
    # reads `target[index]` when the emitter knows better than indexing the value; None: no opinion
    subscript: Callable[[Index], str | None] = lambda node: None
    root: str = "root"
    parent: str = "parent"


def translate(node: Node, ctx: Context) -> str:
    if isinstance(node, Num):
        return repr(node.value)
    if isinstance(node, Str):
        return repr(node.value)
    if isinstance(node, Bool):
        return "True" if node.value else "False"
    if isinstance(node, EnumRef):
        return ctx.enum_member(node.enum_path, node.member)
    if isinstance(node, Name):
        if node.name == "_io":
            raise ExpressionError("_io is only usable as _io.pos, _io.size or _io.eof")
        if node.name == "_root":
            return ctx.root
        if node.name == "_parent":
            return ctx.parent
        return ctx.resolve(node.name)
    if isinstance(node, Attr):
        if node.target == Name("_io"):
            if ctx.pos is None or node.name not in _IO_MEMBERS:
                raise ExpressionError(f"_io.{node.name} is not supported here")
            return _IO_MEMBERS[node.name].format(pos=ctx.pos, io=ctx.io)
        target = translate(node.target, ctx)
        special = ctx.attribute(node.target, node.name, target)
        if special is not None:
            return special
        if node.name in ("length", "size"):
            return f"len({target})"
        if node.name == "to_i":
            return f"int({target})"
        if node.name == "to_s":
            return f"str({target})"
        if node.name == "first":
            return f"{target}[0]"
        if node.name == "last":
            return f"{target}[-1]"
        if node.name == "_parent":
            return f"{target}._parent"
        return f"{target}.{node.name}"
    if isinstance(node, Call):
        target = translate(node.target, ctx)
        args = [translate(a, ctx) for a in node.args]
        if node.name == "substring" and len(args) == 2:
            return f"{target}[{args[0]}:{args[1]}]"
        if node.name == "to_i" and len(args) == 1:
            return f"int({target}, {args[0]})"
        if node.name == "to_s" and len(args) == 1:  # bytes as text in that encoding
            return f"{target}.decode({args[0]})"
        raise ExpressionError(f"unsupported method .{node.name}()")
    if isinstance(node, Index):
        special = ctx.subscript(node)
        if special is not None:
            return special
        return f"{translate(node.target, ctx)}[{translate(node.index, ctx)}]"
    if isinstance(node, Unary):
        operand = translate(node.operand, ctx)
        return f"(not {operand})" if node.op == "not" else f"({node.op}{operand})"
    if isinstance(node, Binary):
        op = _PY_BINARY.get(node.op, node.op)
        return f"({translate(node.left, ctx)} {op} {translate(node.right, ctx)})"
    if isinstance(node, Ternary):
        cond, then, other = (translate(n, ctx) for n in (node.cond, node.then, node.other))
        return f"({then} if {cond} else {other})"
    if isinstance(node, ArrayLit):
        return "[" + ", ".join(translate(i, ctx) for i in node.items) + "]"
    if isinstance(node, Lookup):
        return lookup(node, ctx)
    if isinstance(node, Cast):  # dynamically typed: the value as it is
        return translate(node.target, ctx)
    raise ExpressionError(f"cannot translate {node!r}")


FOUND = "_found"  # the local a lookup's `value` reads what the index holds from


def lookup(node: Lookup, ctx: Context) -> str:
    """A `-rdbspec-lookup`: the root's dict `node.index` read at the key; with `value`, that
    expression of what it holds, `default` (None without one) when it holds nothing there."""
    found = f"{ctx.root}.{node.index}.get({translate(node.key, ctx)})"
    if node.value is None:
        return found
    # `_` is what was found; nothing the emitter knows of the type's own names applies to it
    inner = replace(ctx, resolve=lambda name: FOUND if name == "_" else ctx.resolve(name),
                    attribute=lambda target, name, source: None, subscript=lambda index: None)
    default = translate(node.default, ctx) if node.default is not None else "None"
    return f"({translate(node.value, inner)} if ({FOUND} := {found}) is not None else {default})"
