"""The native target: the same reading plan rendered as Cython, `generated/native/<spec>.pyx`.

The Python emitter's statements are valid Cython as they stand (Cython is a typed superset of
Python), so this emitter overrides only the places where C does better: fixed-size numbers and
single bytes are read through the inline readers of `_readers.pxd` from a `const unsigned char*`
view of the buffer (`_p`), the position and the end are C integers, and each `-rdbspec-scalar`
type is a `cdef` function (`c_read_<id>`) that the per-element loops call directly, with the
position passed by address. Every check stays where the Python output makes it, with the same
message, offset and spec path: the C reads happen only after those checks.
"""

from __future__ import annotations

import re

from . import render
from .emit import OBJECT, TypeEmitter, local_name
from .model import Attribute, Primitive, TypeRef, TypeSpec, UserRef

# the numbers `_readers.pxd` reads (by the name of their Python unpacker, without `unpack_`)
_READERS = {"s1le", "u2le", "u2be", "s2le", "s2be", "u4le", "u4be", "s4le", "s4be", "u8le", "u8be", "s8le", "s8be",
            "f4le", "f8le"}
POINTER = re.compile(r"\b_p\b")


def reader_name(ref: Primitive) -> str:
    order = "" if ref.name[-2:] in ("le", "be") else ("le" if ref.fmt[0] == "<" else "be")
    return f"{ref.name}{order}"


def uses_pointer(lines: list[str]) -> bool:
    return any(POINTER.search(line) for line in lines)


class CythonTypeEmitter(TypeEmitter):
    """Renders one type's reading function as Cython."""

    def __init__(self, builder, t: TypeSpec, mode: str):
        super().__init__(builder, t, mode)
        self.cimports: set[tuple[str, str]] = set()  # (module, cdef function) from another module
        # a generator keeps no view of the buffer between its yields (the caller may close the
        # file it maps), so it reads through Python: see `stream_loop`
        self.pointer = True

    def read_type(self, a: Attribute, ref: TypeRef, local: str) -> None:
        if not isinstance(ref, Primitive) or self.skipping(a) or not self.pointer:
            super().read_type(a, ref, local)
            return
        if ref.size == 1 and ref.fmt.endswith("B"):
            self.block("if pos >= end:")
            self.emit(f"raise truncated(io, pos, 1, {self.path(a)})")
            self.end_block()
            self.emit(f"{local} = _p[pos]")
        elif reader_name(ref) in _READERS:
            self.bounds(a, str(ref.size))
            self.emit(f"{local} = rd_{reader_name(ref)}(_p, pos)")
        else:
            super().read_type(a, ref, local)
            return
        self.emit(f"pos += {ref.size}")

    def subscript(self, node) -> str | None:
        text = super().subscript(node)
        if text is None or not self.pointer:
            return text
        return "_p" + text[len("buf"):]

    def read_user(self, a: Attribute, ref: UserRef, local: str, io: str, pos: str) -> None:
        if not (ref.target.scalar and io == "io" and pos == "pos" and self.pointer):
            super().read_user(a, ref, local, io, pos)
            return
        args = "".join(f", {self.expr(arg)}" for arg in ref.args)
        parent = "self" if self.mode == OBJECT else "None"
        self.emit(f"{local} = {self.scalar_function(ref.target)}(io, buf, _p, end, &pos, {parent}, root{args})")

    def scalar_function(self, target: TypeSpec) -> str:
        """The cdef reader of a scalar type; one of another module is cimported from its .pxd."""
        name = f"c_read_{target.id}"
        if target.module != self.t.module:
            self.cimports.add((target.module, name))
        return name

    def stream_loop(self, a: Attribute) -> list[str]:
        self.pointer = False
        return super().stream_loop(a)

    def property_body(self, inst: Attribute) -> list[str]:
        return self.with_view(super().property_body(inst))

    def lazy_body(self, a: Attribute) -> list[str]:
        return self.with_view(super().lazy_body(a))

    @staticmethod
    def with_view(lines: list[str]) -> list[str]:
        """A property that reads bytes takes its view of the buffer once it has the buffer."""
        if not uses_pointer(lines):
            return lines
        at = next(i for i, line in enumerate(lines) if line.strip() == "end = io.end")
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        return lines[:at + 1] + [f"{indent}_view = buf", f"{indent}_p = address(_view, end)"] + lines[at + 1:]


class NativeModuleRenderer(render.ModuleRenderer):
    emitter = CythonTypeEmitter
    template = "native/module.pyx.j2"

    def __init__(self, builder, root: TypeSpec, skipped: set[int]):
        super().__init__(builder, root, skipped)
        self.cimports: set[tuple[str, str]] = set()

    def collect(self, emitter, lines: list[str], prologue: bool = True) -> list[str]:
        self.cimports |= emitter.cimports
        return super().collect(emitter, lines, prologue)

    def context(self) -> dict:
        return {"cimports": sorted(self.cimports)}


def scalar_types(root: TypeSpec) -> list[TypeSpec]:
    return [t for t in root.walk() if t.scalar]


def render_native(builder, roots: dict[str, TypeSpec]) -> dict[str, str]:
    """Every file of generated/native/, keyed by its path relative to it."""
    env = render._environment()
    env.tests["pointer"] = uses_pointer
    env.filters["cparams"] = lambda t: "".join(f", {local_name(p.id)}" for p in t.params)
    skipped = render.skipped_types(roots)
    files = {}
    for name, root in roots.items():
        files[f"{name}.pyx"] = NativeModuleRenderer(builder, root, skipped).render(env)
        scalars = scalar_types(root)
        if scalars:
            files[f"{name}.pxd"] = env.get_template("native/module.pxd.j2").render(types=scalars)
    for piece in ("_readers.pxd", "_columns.pxd", "_columns.pyx"):
        files[piece] = env.get_template(f"native/{piece}").render()
    files["__init__.py"] = env.get_template("native/package.py.j2").render(modules=sorted(roots))
    return files
