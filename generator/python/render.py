"""The Python target's rendering: each type's plan, through the Python emitter, into the views
its jinja2 templates (`templates/`) render as `generated/<spec>.py`; the runtime (`runtime/`)
copied as it is. The Cython target renders the same views in its own templates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from .. import templating
from ..load import SpecError
from ..model import Attribute, Builder, EnumMember, TypeSpec, enum_class_name
from ..plan import OBJECT, ROWS, SCALAR, SKIP, is_lazy, keeps_parent, opened_field, skipped_types
from .emit import TypeEmitter
from .write import writable, write_function

TEMPLATES = Path(__file__).parent / "templates"
RUNTIME = Path(__file__).parent / "runtime" / "_runtime.py"  # copied into generated/ as it is


def environment() -> jinja2.Environment:
    """The environment the Python target's templates render in."""
    return templating.environment(TEMPLATES, {"local": TypeEmitter.local})


def _docstring(doc: str, doc_ref: str, fallback: str) -> str:
    text = (doc or fallback).strip().replace('"""', "'''").replace("\\", "\\\\")
    if doc_ref:
        text += f"\n\nWritten by: {doc_ref}"
    return text


@dataclass
class PropertyView:
    id: str
    docstring: str
    body: list[str]
    cached: bool = True  # kept in `_m_<id>` after the first access
    given: bool = False  # a lazy field a writer may set: kept in `_given_<id>`, read first
    ranged: bool = False  # of a `-rdbspec-splits` field: also reads `count` elements from byte `start`


@dataclass
class TypeView:
    """What the module template needs of one type."""

    id: str
    class_name: str
    docstring: str
    params: list[str]
    param_args: str
    param_names: str
    slots: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    scalar: list[str] | None = None
    scalar_result: str = ""
    streamed: str | None = None
    stream_body: list[str] = field(default_factory=list)
    rows_body: list[str] = field(default_factory=list)
    skip_body: list[str] = field(default_factory=list)
    rows_prologue: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    properties: list[PropertyView] = field(default_factory=list)
    keeps_parent: bool = True  # see plan.keeps_parent
    lazy_iters: list[PropertyView] = field(default_factory=list)  # iter_<field> of repeated lazy fields
    chunk_iters: list[PropertyView] = field(default_factory=list)  # chunks_<field> of -rdbspec-chunks fields
    cut_finders: list[PropertyView] = field(default_factory=list)  # cuts_<field> of -rdbspec-splits fields
    open_body: list[str] = field(default_factory=list)  # `_open`: read up to `opened` (plan.opened_field)
    opened: str = ""
    element_names: list[str] = field(default_factory=list)  # of a `-rdbspec-element` type (see cython/emit.py)
    indexes: list[str] = field(default_factory=list)  # the dicts a root keeps of its streamed field (-rdbspec-index)
    index_body: list[str] = field(default_factory=list)  # `index_<streamed>(root, item)`: one element noted in them
    write_body: list[str] = field(default_factory=list)  # `_write`, or `write_<id>` for a type with inputs
    write_inputs: list[str] = field(default_factory=list)  # the instances `write_<id>` takes


def _ranged(a: Attribute) -> str:
    """What a reader of the elements of a `-rdbspec-splits` field says of its `start, count`."""
    return f" With `start` (a position `cuts_{a.id}` gives), `count` elements from there." if a.splits else ""


class ModuleRenderer:
    """One spec's Python module: each type's plan rendered by `emitter` into `template`."""

    emitter = TypeEmitter
    template = "module.py.j2"
    writes = True  # the target has writers (write.py); the native one reads only

    def __init__(self, builder: Builder, root: TypeSpec, skipped: set[int]):
        self.builder = builder
        self.root = root
        self.skipped = skipped
        self.imports: set[str] = set()
        self.unpackers: set[str] = set()
        self.enum_members: set[EnumMember] = set()

    def collect(self, emitter: TypeEmitter, lines: list[str], prologue: bool = True) -> list[str]:
        """Keeps what a function needs at module level; puts its local bindings first."""
        self.imports |= emitter.modules
        self.unpackers |= emitter.unpackers
        self.enum_members |= emitter.enum_members
        return (emitter.prologue() if prologue else []) + lines

    def reread_fields(self, t: TypeSpec) -> list[Attribute]:
        """The fields an object does not keep: its property reads them from the bytes on each
        access (`-rdbspec-lazy` ones; a target may add others)."""
        return [a for a in t.seq if is_lazy(a)]

    def type_view(self, t: TypeSpec) -> TypeView:
        params = [p.id for p in t.params]
        view = TypeView(
            id=t.id,
            class_name=t.class_name,
            docstring=_docstring(t.doc, t.doc_ref, f"The {t.id} structure."),
            params=params,
            param_args="".join(f", {self.emitter.local(p)}" for p in params),
            param_names="".join(f", {self.emitter.local(p)}" for p in params),
        )
        if self.writes and writable(self.builder, t):
            view.write_body, modules, members = write_function(self.builder, t)
            self.imports |= modules
            self.enum_members |= members
            view.write_inputs = list(t.write_from)
        if t.scalar:
            emitter = self.emitter(self.builder, t, SCALAR)
            lines = emitter.body()
            view.scalar_result = emitter.scalar_result()  # may add the instances it needs
            view.body = self.collect(emitter, lines)
            view.scalar = t.scalar
            return view
        emitter = self.emitter(self.builder, t, OBJECT)
        view.body = self.collect(emitter, emitter.body())
        opened = opened_field(t)
        if opened is not None:
            emitter = self.emitter(self.builder, t, OBJECT)
            emitter.open_tail = opened
            view.open_body = self.collect(emitter, emitter.body())
            view.opened = opened.id
        view.keeps_parent = keeps_parent(t)
        view.fields = [a.id for a in t.seq]
        lazy = self.reread_fields(t)
        storage = {inst.id: emitter.plan.storage(inst) for inst in t.instances}
        view.slots = ["_parent", "_root", "_io"] + params + [a.id for a in t.seq if a not in lazy]
        view.slots += [inst.id for inst in t.instances if storage[inst.id] == "field"]
        cached = [inst for inst in t.instances if storage[inst.id] == "cached"]
        view.slots += [f"_lazy_{a.id}" for a in lazy] + [f"_m_{a.id}" for a in cached]
        given = self.writes  # an object to write holds the value of a lazy field itself
        view.slots += [f"_given_{a.id}" for a in lazy if given]
        for a in lazy:
            prop = self.emitter(self.builder, t, OBJECT)
            body = self.collect(prop, prop.lazy_body(a))
            doc = _docstring(a.doc, a.doc_ref, a.id) + "\n\nRead from the bytes on every access; not kept."
            if given:
                doc += " A writer may set it (the value is then kept)."
            view.properties.append(PropertyView(a.id, doc, body, cached=False, given=given))
            if a.repeat:
                it = self.emitter(self.builder, t, OBJECT)
                doc = f"Yields the elements of `{a.id}` one at a time, read where they were stepped over."
                view.lazy_iters.append(PropertyView(a.id, doc + _ranged(a),
                                                    self.collect(it, it.lazy_iter_body(a)), cached=False,
                                                    given=given, ranged=a.splits))
            if a.chunks:
                chunks = self.emitter(self.builder, t, OBJECT)
                doc = (f"Yields the elements of `{a.id}` `rows` at a time as columns: each element's values "
                       "(an element's bytes or integer, a number) one after the other.")
                view.chunk_iters.append(PropertyView(a.id, doc + _ranged(a),
                                                     self.collect(chunks, chunks.chunks_body(a)), cached=False,
                                                     ranged=a.splits))
            if a.splits:
                cuts = self.emitter(self.builder, t, OBJECT)
                doc = (f"Where `{a.id}` may be cut into parts of about `step` bytes, each read alone: the "
                       "(byte position, index) of each part's first element (the first element, then the first "
                       "to start `step` bytes or more after the last cut), then (the position after the last "
                       "element, the count of elements): part i is `count` = index[i + 1] - index[i] elements "
                       "from position[i].")
                view.cut_finders.append(PropertyView(a.id, doc, self.collect(cuts, cuts.cuts_body(a)), cached=False))
        if id(t) in self.skipped:
            skip = self.emitter(self.builder, t, SKIP)
            view.skip_body = self.collect(skip, skip.body())
        if t.streamed:
            view.streamed = t.streamed
            view.slots.append("_stream_pos")
            view.stream_body = self.stream_body(t)
            streamed = t.seq[emitter.plan.streamed_index()]
            view.indexes = [index.name for index in streamed.indexes]
            view.slots += view.indexes
            if view.indexes:
                noting = self.emitter(self.builder, t, OBJECT)
                view.index_body = self.collect(noting, noting.index_body(streamed), prologue=False)
        if t.used_as_columns:
            rows = self.emitter(self.builder, t, ROWS)
            rows.out.depth = 3
            view.rows_body = self.collect(rows, rows.body(), prologue=False)
            view.rows_prologue = rows.prologue()
        for inst in (i for i in t.instances if storage[i.id] != "field"):
            prop = self.emitter(self.builder, t, OBJECT)
            body = prop.property_body(inst)
            self.collect(prop, body)
            view.properties.append(PropertyView(inst.id, _docstring(inst.doc, inst.doc_ref, inst.id), body,
                                                inst in cached))
        return view

    def stream_body(self, t: TypeSpec) -> list[str]:
        """The iterator over the streamed field, then the fields that follow it."""
        emitter = self.emitter(self.builder, t, OBJECT)
        lines = emitter.stream_loop(t.seq[emitter.plan.streamed_index()])
        emitter.fields(emitter.plan.fields_after_stream())
        return self.collect(emitter, lines)

    def render(self, env: jinja2.Environment) -> str:
        types = [self.type_view(t) for t in self.root.walk()]
        self.imports.discard(self.root.module)
        title = self.root.raw.get("meta", {}).get("title") or self.root.id
        return env.get_template(self.template).render(
            title=title,
            spec_name=self.root.spec.name,
            imports=sorted(self.imports),
            unpackers=sorted(self.unpackers),
            enum_members=sorted(self.enum_members, key=lambda m: (m.enum, m.value)),
            types=types,
            **self.context(),
        )

    def context(self) -> dict:
        """What else the target's module template needs (known once the types are viewed)."""
        return {}


def render_all(builder: Builder, roots: dict[str, TypeSpec]) -> dict[str, str]:
    """Every generated file, keyed by its path relative to generated/."""
    env = environment()
    skipped = skipped_types(roots)
    files = {f"{name}.py": ModuleRenderer(builder, root, skipped).render(env) for name, root in roots.items()}
    files["_runtime.py"] = RUNTIME.read_text(encoding="utf-8")
    files["enums.py"] = env.get_template("enums.py.j2").render(enums=enum_views(roots))
    files["__init__.py"] = env.get_template("package.py.j2").render(modules=sorted(roots))
    return files


@dataclass
class EnumView:
    """One spec enum as `generated/enums.py` declares it: a class named after it, its members
    upper-cased, in the order of their numbers."""

    class_name: str
    path: str
    members: list[tuple[str, int]]


def enum_views(roots: dict[str, TypeSpec]) -> list[EnumView]:
    """Every enum of every spec, each once by its name: two specs naming different enums alike
    are refused (the names are the hand-written code's only source)."""
    views: dict[str, EnumView] = {}
    for name, root in sorted(roots.items()):
        for t in root.walk():
            for enum_id, members in sorted(t.enums.items()):
                class_name = enum_class_name(enum_id)
                view = EnumView(class_name, f"{name}::{enum_id}" if t is root else f"{name}::{t.id}::{enum_id}",
                                sorted(((m.upper(), v) for m, v in members.items()), key=lambda item: item[1]))
                if class_name in views:
                    raise SpecError(name, f"/enums/{enum_id}", f"enum {class_name} is also {views[class_name].path}")
                views[class_name] = view
    return list(views.values())
