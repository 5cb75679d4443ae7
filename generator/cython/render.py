"""The Cython target's rendering: the Python target's views of each type, with what the Cython
emitter adds (C locals, `c_push_`/`c_scan_` readers, cimports), rendered by the templates in
`templates/` as `generated/native/<spec>.pyx` and `.pxd`; the runtime (`runtime/`: the inline
readers and the column containers) copied as it is."""

from __future__ import annotations

import re
from pathlib import Path

from .. import templating
from ..model import Attribute, TypeSpec
from ..plan import ROWS, SCALAR, skipped_types
from ..python import render
from ..python.emit import TypeEmitter
from .emit import (
    C_TYPES,
    CythonTypeEmitter,
    ElementEmitter,
    ValuesEmitter,
    scanned_fields,
    span_field,
    struct_members,
    uses_pointer,
)

TEMPLATES = Path(__file__).parent / "templates"
RUNTIME = Path(__file__).parent / "runtime"


class NativeModuleRenderer(render.ModuleRenderer):
    emitter = CythonTypeEmitter
    template = "module.pyx.j2"
    writes = False  # writing is the Python output's (issue 15)

    def __init__(self, builder, root: TypeSpec, skipped: set[int]):
        super().__init__(builder, root, skipped)
        self.cimports: set[tuple[str, str]] = set()
        self.views: list[render.TypeView] = []
        self.rows_declared: dict[str, list[str]] = {}  # type id -> the C locals of its rows reader

    def reread_fields(self, t: TypeSpec) -> list[Attribute]:
        return super().reread_fields(t) + scanned_fields(self.builder, t)

    def type_view(self, t: TypeSpec) -> render.TypeView:
        view = super().type_view(t)
        self.views.append(view)
        view.span = span_field(t) if t.scalar else None
        push = None
        if view.span is not None:  # c_push_<id>: the same reader, its value pushed into columns
            push = self.emitter(self.builder, t, SCALAR)
            push.span = view.span
        elif t.element:  # c_push_<id> of an object type, for the columns of chunked repeats
            push = ElementEmitter(self.builder, t)
            view.element_names = t.element
        if push is not None:
            lines = push.body()
            view.push_lines = ["    " + line for line in push.push_lines()]
            view.push_body = self.collect(push, lines)
        view.values = struct_members(self.builder, t)
        if view.values:
            scan = ValuesEmitter(self.builder, t, view.values)
            view.values_body = self.collect(scan, scan.struct_body())
        if t.used_as_columns:  # which fields the rows reader pushes (see CythonTypeEmitter.field)
            rows = self.emitter(self.builder, t, ROWS)
            rows.body()
            view.column_types = {a.id: ("ragged" if a.repeat else "scalar") if a.id in rows.pushed else "list"
                                 for a in t.seq}
            view.rows_declared = self.rows_declared.get(t.id, [])
        return view

    def collect(self, emitter, lines: list[str], prologue: bool = True) -> list[str]:
        self.cimports |= emitter.cimports
        indent = "    " if emitter.mode == SCALAR else "        "
        declared = [f"{indent}cdef {ctype} {name}" + ("" if name in emitter.structs else
                                                     f" = {'0' if ctype in C_TYPES else 'None'}")
                    for name, ctype in sorted(emitter.cdefs.items())]
        if emitter.mode == ROWS:  # the rows reader's body runs in its loop: declared before it
            self.rows_declared[emitter.t.id] = declared
            declared = []
        return declared + super().collect(emitter, lines, prologue)

    def context(self) -> dict:
        return {"cimports": sorted(self.cimports)}


def render_native(builder, roots: dict[str, TypeSpec]) -> dict[str, str]:
    """Every file of generated/native/, keyed by its path relative to it."""
    env = templating.environment(
        TEMPLATES,
        {"local": TypeEmitter.local,
         "dedent": lambda lines: [line[4:] if line.startswith("    ") else line for line in lines]},
        {"pointer": uses_pointer, "positional": lambda lines: any(re.search(r"\bpos\b", line) for line in lines)})
    skipped = skipped_types(roots)
    files = {}
    for name, root in roots.items():
        renderer = NativeModuleRenderer(builder, root, skipped)
        files[f"{name}.pyx"] = renderer.render(env)
        files[f"{name}.pxd"] = env.get_template("module.pxd.j2").render(types=renderer.views)
    for piece in RUNTIME.iterdir():  # copied as they are
        files[piece.name] = piece.read_text(encoding="utf-8")
    files["__init__.py"] = env.get_template("package.py.j2").render(modules=sorted(roots))
    return files
