"""The native target: the same reading plan rendered as Cython, `generated/native/<spec>.pyx`.

The Python emitter's statements are valid Cython as they stand (Cython is a typed superset of
Python), so this emitter overrides only the places where C does better: fixed-size numbers and
single bytes are read through the inline readers of `_readers.pxd` from a `const unsigned char*`
view of the buffer (`_p`), the position and the end are C integers, every type is read by a
`cdef` function (`c_read_<id>`, `c_skip_<id>`, `c_push_<id>`) that callers call directly with
the position's address, and repeats of scalars go into columns (`_columns.pyx`). Every check
stays where the Python output makes it, with the same message, offset and spec path: the C
reads happen only after those checks.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .. import expressions as ex
from ..model import Attribute, Primitive, Switch, TypeRef, TypeSpec, UserRef
from ..plan import (
    DOUBLE,
    ELEMENT,
    INT,
    LENGTH,
    OBJECT,
    ROWS,
    SCALAR,
    SKIP,
    UINT,
    attribute_expressions,
    chunk_row,
    element_min_size,
    is_lazy,
    opened_field,
    reads_index,
    value_fields,
)
from ..python.emit import Lines, TypeEmitter

# the numbers `_readers.pxd` reads (by the name of their Python unpacker, without `unpack_`)
_READERS = {"s1le", "u2le", "u2be", "s2le", "s2be", "u4le", "u4be", "s4le", "s4be", "u8le", "u8be", "s8le", "s8be",
            "f4le", "f8le"}
POINTER = re.compile(r"\b_p\b")
C_TYPES = {"long long", "unsigned long long", "bint", "Py_ssize_t"}  # the C types of typed locals (others are classes)


def reader_name(ref: Primitive) -> str:
    order = "" if ref.name[-2:] in ("le", "be") else ("le" if ref.fmt[0] == "<" else "be")
    return f"{ref.name}{order}"


def span_field(t: TypeSpec) -> Attribute | None:
    """The raw field of a scalar type whose bytes its value may be, left in the buffer when the
    value goes into columns: its only sized raw field, read from the buffer itself, that no
    expression reads but the scalar's own instances. None when the type has no such field."""
    raw = [a for a in t.seq if a.type is None and (a.size is not None or a.size_eos) and a.process is None
           and a.valid is None and a.contents is None and not a.repeat]
    if len(raw) != 1:
        return None
    readers = [b for b in t.seq + t.instances for node in attribute_expressions(b) if raw[0].id in ex.names_in(node)]
    return raw[0] if all(b.id in t.scalar for b in readers) else None


def fits_int64(ref: Primitive) -> bool:
    """An integer of at most 32 bits, or a signed one of 64."""
    return ref.fmt[-1] in "bBhHiIq"


def int_column(ref: TypeRef) -> bool:
    """An integer an int64 column holds, or a switch of only those."""
    if isinstance(ref, Switch):
        return ref.default is None and bool(ref.cases) and all(int_column(r) for _, r in ref.cases)
    return isinstance(ref, Primitive) and fits_int64(ref)


_VALUE_FIELDS: dict[int, tuple[TypeSpec, dict[str, str] | None]] = {}  # id(type) -> (type, value_fields)


def struct_members(builder, t: TypeSpec) -> dict[str, str] | None:
    """The C struct a type of unsigned numbers is read into (`c_scan_<id>`): its value
    instances by C type (plan.value_fields), or None when the type has no such reader."""
    if id(t) not in _VALUE_FIELDS:
        kinds = value_fields(builder, t)
        members = {name: "unsigned long long" if kind == "int" else "bint" for name, kind in kinds.items()} \
            if kinds else None
        _VALUE_FIELDS[id(t)] = (t, members)
    return _VALUE_FIELDS[id(t)][1]


def scanned_fields(builder, t: TypeSpec) -> list[Attribute]:
    """The fields an object reads through `c_scan_<id>` (unconditional, single, of a type of
    unsigned numbers): it keeps their position, and their property makes the object on access."""
    return [a for a in t.seq if isinstance(a.type, UserRef) and a.cond is None and not a.repeat and a.size is None
            and not a.size_eos and a.process is None and not is_lazy(a) and not reads_index(t, a)
            and struct_members(builder, a.type.target)]


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
        self.streamed_element: Attribute | None = None  # the field `stream_loop` reads an element of
        self.member_of: TypeSpec | None = None  # the type whose field is read in place (see chunks_body)
        # C-typed locals of a scalar reader: the fields always read (never None) and the value
        # instances proven to be non-null integers or booleans; the module is compiled with
        # overflowcheck, so C arithmetic on them either equals Python's or raises
        self.cdefs: dict[str, str] = {}
        self.span: Attribute | None = None  # set when rendering c_push_<id>: see `raw_bytes`
        self.pushed: set[str] = set()  # row fields pushed into their columns already
        # row scalars read back from their columns as C numbers (`<local>_kind`, `<local>_int`)
        self.row_views: dict[str, str] = {}  # field id -> its column
        self.checked: dict[str, frozenset] = {}  # row scalars read and checked: the tests that hold
        self.present: dict[int, bool] = {}  # reads `x.candidate` proven to give a value (plan.present_reads)
        self.analyzed: list[ex.Node] = []  # the expressions `present` was computed from, kept alive
        self.untyped: set[str] = set()  # locals given objects of more than one class
        self.structs: set[str] = set()  # locals that hold a struct of c_scan_<id> (declared uninitialized)
        self.struct_types: dict[str, TypeSpec] = {}  # each such local's type
        # an object's fields read into a struct (`scanned_fields`); not in a property, which makes the object
        self.scanned = {a.id for a in scanned_fields(builder, t)} if mode == OBJECT else set()

    def path(self, a: Attribute) -> str:
        return f'"{self.member_of.spec_path}.{a.id}"' if self.member_of is not None else super().path(a)

    def read_primitive(self, a: Attribute, ref: Primitive, local: str) -> None:
        if self.plan.skipping(a) or not self.pointer or not (ref.fmt.endswith("B") or reader_name(ref) in _READERS):
            super().read_primitive(a, ref, local)
            return
        if ref.size == 1 and ref.fmt.endswith("B"):
            self.block("if pos >= end:")
            self.emit(f"raise truncated(io, pos, 1, {self.path(a)})")
            self.end_block()
            self.emit(f"{local} = _p[pos]")
        else:
            self.bounds(a, str(ref.size))
            self.emit(f"{local} = rd_{reader_name(ref)}(_p, pos)")
        self.emit(f"pos += {ref.size}")
        if self.mode != ROWS and (a.cond is None or self.c_conditional(a)) and not a.repeat \
                and local == TypeEmitter.local(a.id) and fits_int64(ref):
            self.cdefs[local] = "long long"

    def c_conditional(self, a: Attribute) -> bool:
        """A conditional number of a scalar reader that every expression reads only where its
        condition holds (the plan's proof): a C local, 0 when absent, never read then."""
        ref = a.type
        return (self.mode == SCALAR and a.cond is not None and not a.repeat and a.valid is None
                and isinstance(ref, Primitive) and fits_int64(ref) and self.plan.read_only_when_present(a))

    def missing(self, a: Attribute) -> str:
        return "0" if self.c_conditional(a) else "None"

    def by_condition(self) -> list[Attribute] | None:
        """The scalar's candidates when each is a value instance that holds a value exactly where
        its condition holds: the result is then told by the conditions (see `scalar_result`)."""
        candidates = [self.t.attribute(name) for name in self.t.scalar]
        for attr in candidates:
            kind = self.plan.kind_where_present(attr) if attr.is_instance and attr.cond is not None else None
            if kind is None or kind.nullable:
                return None
        return candidates

    def c_instance(self, attr: Attribute) -> bool:
        """A conditional value instance of a scalar reader that is an integer where its condition
        holds, read only there by every expression (and by the result, when the conditions tell
        it): a C local, 0 when absent."""
        if self.mode != SCALAR or attr.cond is None or attr.value is None:
            return False
        kind = self.plan.kind_where_present(attr)
        return (kind is not None and kind.base == "int" and not kind.nullable and self.plan.read_only_when_present(attr)
                and (attr.id not in self.t.scalar or self.by_condition() is not None))

    def instance_value(self, attr: Attribute) -> str:
        if not self.c_instance(attr):
            return super().instance_value(attr)
        self.cdefs[TypeEmitter.local(attr.id)] = "long long"
        return f"({super().instance_value(replace(attr, cond=None))} if {self.expr(attr.cond)} else 0)"

    def scalar_result(self) -> str:
        candidates = self.by_condition()
        if candidates is None:
            return super().scalar_result()
        values = [self.resolve(a.id) for a in candidates]
        self.flush_pre()
        result = "None"
        for attr, value in reversed(list(zip(candidates, values))):
            result = f"({value} if {self.expr(attr.cond)} else {result})"
        return result

    def push_lines(self) -> list[str]:
        """The end of c_push_<id>: the value pushed into `out`, the span's bytes left in the buffer."""
        span = f"out.push_span({self.local(self.span.id)}_start, {self.local(self.span.id)}_length)"
        candidates = self.by_condition()
        if candidates is None:
            return [f"_value = {self.scalar_result()}", "if _value is _SPAN:", f"    {span}",
                    "elif _value is None:", "    out.push_none()", "else:", "    out.push_int(_value)"]
        lines = []
        for attr in candidates:
            lines.append(f"{'elif' if lines else 'if'} {self.expr(attr.cond)}:")
            spanned = attr.value == ex.Name(self.span.id)
            lines.append(f"    {span}" if spanned else f"    out.push_int({self.resolve(attr.id)})")
        self.flush_pre()
        return lines + ["else:", "    out.push_none()"]

    def read_one(self, a: Attribute, local: str) -> None:
        super().read_one(a, local)
        if a.contents is None and self.plan.marks_start(a):
            self.cdefs[f"{local}_pos"] = "Py_ssize_t"  # where the field starts (see read_one)

    @staticmethod
    def beyond_end(size: str) -> str:
        return f"{size} > end - pos"  # the end is at or after pos: no sum that could overflow

    def size_checked(self, size: str, local: str) -> str:
        if self.cdefs.get(size) in C_TYPES or size.isdigit():
            return size
        self.emit(f"{local}_nbytes = {size}")  # a Python int that fits: it is at most end - pos
        self.cdefs[f"{local}_nbytes"] = "Py_ssize_t"
        return f"{local}_nbytes"

    def materialize(self, attr: Attribute) -> None:
        super().materialize(attr)
        typed = self.mode in (SCALAR, SKIP) and attr.cond is None
        kind = self.plan.facts.instance_kind(self.t, attr) if typed else None
        if kind is not None and not kind.nullable and kind.base in ("int", "bool"):
            self.cdefs[TypeEmitter.local(attr.id)] = "long long" if kind.base == "int" else "bint"

    def read_switch(self, a: Attribute, sw: Switch, local: str, io: str | None = None, pos: str = "pos") -> None:
        on = self.expr(sw.on)  # a local (then the same text again below) or an expression
        if on.isidentifier() and self.cdefs.get(on) in C_TYPES:  # a C number stays one
            self.cdefs[f"{local}_on"] = self.cdefs[on]
        super().read_switch(a, sw, local, io, pos)

    def subscript(self, node) -> str | None:
        text = super().subscript(node)
        if text is None or not self.pointer:
            return text
        return "(<long long>_p" + text[len("buf"):] + ")"  # shifted in 64 bits, as Python would

    def read_user(self, a: Attribute, ref: UserRef, local: str, io: str, pos: str) -> None:
        scanned = a.id in self.scanned and a.type is ref
        if scanned:  # its property reads it from here (see NativeModuleRenderer.reread_fields)
            self.emit(f"self._lazy_{a.id} = {pos}")
        if not (io == "io" and pos == "pos" and self.pointer):
            if not (io == "io" and pos == "pos" and self.read_streamed(a, ref, local)):
                super().read_user(a, ref, local, io, pos)
            return
        args = "".join(f", {self.expr(arg)}" for arg in ref.args)
        parent = "self" if self.mode == OBJECT else "None"
        if scanned or self.into_struct(a, ref):
            self.scan(ref.target, local)
            return
        if not ref.target.scalar:  # the type's cdef reader, called with the position's address
            if self.plan.steps_over(a, ref):
                self.emit(f"pos = {self.c_function(ref.target, 'skip')}(io, buf, _p, end, pos, None, root{args})")
                self.emit(f"{local} = None")
            elif ref.target.used_as_columns:
                super().read_user(a, ref, local, io, pos)
            else:
                how = "open" if self.opening and opened_field(ref.target) is not None else "read"
                read = self.c_function(ref.target, how)
                self.emit(f"{local} = {read}(io, buf, _p, end, &pos, {parent}, root{args})")
                if a.type is ref and not a.repeat:
                    self.type_local(local, ref.target)
            return
        if self.row_field(a) and not a.repeat and span_field(ref.target) is not None:
            # a row's scalar goes into its column as it is read; checks and expressions read its
            # kind and integer back from the column as C numbers, its object only when they need it
            column = f"{a.id}_column"
            self.emit(f"{self.scalar_function(ref.target, 'push')}(io, buf, _p, end, &pos, None, root{args}, {column})")
            if all(check.kind == "expr" for check in self.plan.checks(a)):  # others compare the object
                self.emit(f"{local}_kind = {column}.k[{column}.n - 1]")
                self.emit(f"{local}_int = {column}.i[{column}.n - 1]")
                self.cdefs[f"{local}_kind"] = self.cdefs[f"{local}_int"] = "long long"
                self.row_views[a.id] = column
            else:
                self.emit(f"{local} = {column}.last()")
            self.pushed.add(a.id)
            return
        self.emit(f"{local} = {self.scalar_function(ref.target)}(io, buf, _p, end, &pos, {parent}, root{args})")

    def scan(self, target: TypeSpec, local: str) -> None:
        """Reads a type of unsigned numbers into the C struct `local` (`c_scan_<id>`), no object."""
        struct = f"{target.class_name}Values"
        if target.module != self.t.module:
            self.cimports.add((target.module, struct))
            struct = f"{target.module}__{struct}"
        self.emit(f"{self.c_function(target, 'scan')}(io, buf, _p, end, &pos, None, root, &{local})")
        self.cdefs[local] = struct
        self.structs.add(local)
        self.struct_types[local] = target

    def into_struct(self, a: Attribute, ref: UserRef) -> bool:
        """A skip reader keeps no object: the numbers it needs of a single unconditional field of
        a type of unsigned numbers are read into a C struct (`scan`)."""
        return (self.mode == SKIP and a.type is ref and a.cond is None and not a.repeat
                and not self.plan.steps_over(a, ref) and struct_members(self.builder, ref.target) is not None)

    def field(self, a: Attribute) -> None:
        if not (self.row_field(a) and a.cond is not None and not a.repeat and isinstance(a.type, UserRef)
                and a.type.target.scalar and span_field(a.type.target) is not None and self.pointer):
            super().field(a)
            return
        # a conditional scalar of a row: pushed when present, a null row when not
        local = TypeEmitter.local(a.id)
        self.comment(a)
        self.hoist([a])
        self.block(f"if {self.expr(a.cond)}:")
        self.pushed.add(a.id)
        self.read_repeated(a, local)
        self.end_block()
        self.emit("else:")
        self.out.depth += 1
        if a.id in self.row_views:  # the kind of a missing element: neither integer nor bytes
            self.emit(f"{local}_kind, {local}_int = 2, 0")
        else:
            self.emit(f"{local} = None")
        self.emit(f"{a.id}_column.push_none()")
        self.out.depth -= 1
        self.known[-1].add(local)

    def expr(self, node: ex.Node) -> str:
        if self.row_views:
            self.analyzed.append(node)
            self.present.update(self.plan.present_reads(node, self.current_attr, self.checked))
        return super().expr(node)

    def validate(self, a: Attribute, local: str, start: str) -> None:
        super().validate(a, local, start)
        if a.id in self.row_views:
            self.checked[a.id] = self.plan.checked_tests(a)

    def row_view(self, node: ex.Node) -> Attribute | None:
        """The row scalar read back from its column that `node` names (`_`: the field checked)."""
        if not isinstance(node, ex.Name):
            return None
        checked = self.current_attr
        a = checked if node.name == "_" and checked is not None and self.loop_item == TypeEmitter.local(checked.id) \
            else self.t.attribute(node.name)
        return a if a is not None and a.id in self.row_views else None

    def resolve(self, name: str) -> str:
        a = self.row_view(ex.Name(name)) if self.row_views else None
        if a is not None:  # the value itself: made from the column, where an expression needs it
            return f"{self.row_views[a.id]}.last()"
        attr = self.t.attribute(name) if name in self.in_place else None
        if attr is not None and self.c_instance(attr):  # computed in place, where it is present
            self.cdefs[TypeEmitter.local(name)] = "long long"
        return super().resolve(name)

    def column_attribute(self, a: Attribute, node: ex.Node, name: str) -> str:
        """`x.name` of a row scalar read back from its column: its tests and integer are C."""
        target, local, column = a.type.target, TypeEmitter.local(a.id), self.row_views[a.id]
        if name in target.scalar_tests:
            return f"({local}_kind == {0 if target.scalar_kind(target.scalar_tests[name]) == 'int' else 1})"
        if name not in target.scalar:
            return self.scalar_attribute(target, name, local)  # names what can be read
        if target.scalar_kind(name) != "int":
            return f"({column}.last() if {local}_kind == 1 else None)"
        if id(node) not in self.present:
            return f"({local}_int if {local}_kind == 0 else None)"
        # C where the result stays in 64 bits; else a Python int, whose arithmetic cannot overflow
        return f"{local}_int" if self.present[id(node)] else f"(<object>{local}_int)"

    def attribute(self, node: ex.Node, name: str, source: str) -> str | None:
        viewed = self.row_view(node) if self.row_views else None
        if viewed is not None:
            return self.column_attribute(viewed, node, name)
        value = super().attribute(node, name, source)
        struct = self.struct_types.get(source)
        if struct is not None and value == f"{source.rstrip('_')}_{name}" and self.mode != ROWS:
            # a member of a struct read by `scan`, shared in a local: a C local of its type, so
            # that the checks and branches on it make no Python object
            self.cdefs.setdefault(value, (struct_members(self.builder, struct) or {})[name])
        if self.mode != ROWS or not self.plan.same_for_every_row(node, name, self.current_attr):
            return value
        # the same for every row: read once, before the loop (each step's local extends the name
        # of the one it reads from, so the sorted prologue binds them in order)
        local = f"{source}_{name}" if source.startswith("_parent") else f"_parent_{name}"
        self.bound[local] = value if value is not None else f"{source}.{name}"
        return local

    def row_field(self, a: Attribute) -> bool:
        return self.mode == ROWS and any(a is b for b in self.t.seq)

    def type_local(self, local: str, target: TypeSpec) -> None:
        """Declares the local that holds a field of a user type as that type's class, so that
        the reads of its attributes are C struct accesses, not Python lookups. Only where the
        function's declarations come first (an object's or a skip reader's body); a local that
        another statement gives an object of a different class stays untyped."""
        if self.mode not in (OBJECT, SKIP) or local in self.untyped:
            return
        name = target.class_name
        if target.module != self.t.module:
            self.cimports.add((target.module, name))
            name = f"{target.module}__{name}"
        if self.cdefs.setdefault(local, name) != name:
            del self.cdefs[local]
            self.untyped.add(local)

    def scalar_function(self, target: TypeSpec, kind: str = "read") -> str:
        """The cdef reader of a scalar type (`c_read_<id>` returns the value, `c_push_<id>`
        appends it to a ScalarColumns)."""
        return self.c_function(target, kind)

    def c_function(self, target: TypeSpec, kind: str) -> str:
        """A type's cdef function (`c_read_<id>`, `c_skip_<id>`, `c_push_<id>`); one of another
        module is cimported from its .pxd, under the module's name."""
        name = f"c_{kind}_{target.id}"
        if target.module == self.t.module:
            return name
        self.cimports.add((target.module, name))
        return f"{target.module}__{name}"

    def store(self, a: Attribute, local: str) -> None:
        if a.id not in self.pushed and a.id not in self.scanned:
            super().store(a, local)

    def raw_bytes(self, a: Attribute, local: str, data: str, size: str) -> None:
        if a is not self.span:
            # the bytes object made straight from the held view, not through the buffer's slicing
            super().raw_bytes(a, local, "_p" + data[len("buf"):] if self.pointer and data.startswith("buf[") else data,
                              size)
            return
        self.emit(f"{local}_start = pos - {size}")
        self.emit(f"{local}_length = {size}")
        self.emit(f"{local} = _SPAN")  # the bytes stay where they are: see c_push_<id>
        self.cdefs[f"{local}_start"] = self.cdefs[f"{local}_length"] = "Py_ssize_t"

    # -- columns ---------------------------------------------------------------------------

    def column_kind(self, a: Attribute) -> str | None:
        """How a repeat goes into a ScalarColumns: "scalar" (elements of a scalar type, pushed by
        its c_push_<id>), "ints" (integers), None (a list, as in the Python output)."""
        if a.repeat not in ("expr", "eos") or a.columns or a.size is not None or a.size_eos \
                or a.contents is not None or a.valid is not None or not self.pointer or self.plan.skipping(a):
            return None
        ref = a.type
        # a loop to the end needs elements that take bytes (else the Python output checks each)
        sized = a.repeat == "expr" or element_min_size(a) > 0
        if isinstance(ref, UserRef) and ref.target.scalar and span_field(ref.target) is not None and sized:
            return "scalar"
        return "ints" if int_column(ref) and sized else None

    def read_repeated(self, a: Attribute, local: str, yielding: bool = False) -> None:
        kind = None if yielding else self.column_kind(a)
        if kind is None:
            super().read_repeated(a, local, yielding)
            return
        if a.repeat == "expr":
            count = f"{local}_count"
            self.emit(f"{count} = {self.expr(a.repeat_expr)}")
            self.check_count(a, count)
        # a row's list of scalars goes straight into the RaggedColumns of the field, unless
        # some expression of the row reads it
        ragged = self.row_field(a) and not self.plan.uses.get(a.id)
        target = f"{local}_values" if ragged else local
        self.emit(f"{target} = {a.id}_column.values" if ragged else f"{local} = ScalarColumns(buf)")
        self.block(self.counted_loop(local, count) if a.repeat == "expr" else "while pos < end:")
        if kind == "scalar":
            ref = a.type
            args = "".join(f", {self.expr(arg)}" for arg in ref.args)
            parent = "self" if self.mode == OBJECT else "None"
            push = self.scalar_function(ref.target, "push")
            self.emit(f"{push}(io, buf, _p, end, &pos, {parent}, root{args}, {target})")
        else:
            outer = self.loop_index
            self.loop_index = f"{local}_index"
            self.read_one(a, f"{local}_item")
            self.loop_index = outer
            self.emit(f"{target}.append({local}_item)")
        self.end_block()
        if ragged:
            self.emit(f"{a.id}_column.close_row()")
            self.pushed.add(a.id)

    @staticmethod
    def counted_loop(local: str, count: str) -> str:
        # the count was checked against the bytes that remain: it fits a C loop
        return f"for {local}_index in range(<Py_ssize_t>{count}):"

    def stream_loop(self, a: Attribute) -> list[str]:
        self.pointer = False
        self.streamed_element = a
        try:
            return super().stream_loop(a)
        finally:
            self.streamed_element = None

    def read_streamed(self, a: Attribute, ref: UserRef, local: str) -> bool:
        """Reads an element of the streamed field with its type's cdef reader, the buffer held for
        that element alone (the generator holds no view between its yields); False when the
        element is not an object of such a type."""
        if a is not self.streamed_element or ref.target.scalar or ref.target.used_as_columns \
                or self.plan.steps_over(a, ref):
            return False
        args = "".join(f", {self.expr(arg)}" for arg in ref.args)
        self.emit("_p = acquire(buf, &_view, end)")
        self.block("try:")
        self.emit(f"{local} = {self.c_function(ref.target, 'read')}(io, buf, _p, end, &pos, self, root{args})")
        self.end_block()
        self.emit("finally:")
        self.emit("    PyBuffer_Release(&_view)")
        return True

    def property_body(self, inst: Attribute) -> list[str]:
        return self.with_view(super().property_body(inst))

    def lazy_body(self, a: Attribute) -> list[str]:
        self.scanned = set()  # the property makes the object
        return self.with_view(super().lazy_body(a))

    def lazy_iter_body(self, a: Attribute) -> list[str]:
        self.pointer = False  # a generator holds no view of the buffer between its yields
        return super().lazy_iter_body(a)

    def chunks_body(self, a: Attribute) -> list[str]:
        """`chunks_<field>(rows)`: a ScalarColumns of up to `rows` elements at a time, each
        element's values (plan.chunk_row) pushed one after the other with the readers' own
        checks; the buffer is held while a chunk is read, not between chunks."""
        self.out = Lines(depth=2)
        self.known = [set()]
        parts = chunk_row(self.builder, a)
        self.ranged = a if a.splits else None
        self.lazy_start(a)
        self.absent(a, "")
        count = f"{self.local(a.id)}_count"
        self.emit(f"{count} = {self.repeat_count(a)}")
        self.check_count(a, count)
        self.emit(f"left = {count}")
        self.block("while left > 0:")
        self.emit("n = min(max(rows, 1), left)")
        self.emit("out = ScalarColumns(buf)")
        self.emit(f"out.reserve(n * {len(parts)})")
        self.emit("_p = acquire(buf, &_view, end)")
        self.block("try:")
        self.block("for index in range(n):")
        for part in parts:
            if part.how == ELEMENT:
                self.emit(f"{self.c_function(part.target, 'push')}(io, buf, _p, end, &pos, None, root, out)")
                continue
            local = self.local(part.attr.id)
            if part.how == LENGTH:
                self.scan(part.target, local)
                self.emit(f"out.push_length({local}.value)")
            elif part.member is not None:  # a number of the field's own type: errors name it there
                local = self.local(f"{part.attr.id}_{part.member.id}")
                self.member_of = part.attr.type.target
                self.read_primitive(part.member, part.member.type, local)
                self.member_of = None
                self.cdefs[local] = "unsigned long long" if part.how == UINT else "long long"
                self.emit(f"out.push_{'length' if part.how == UINT else 'int'}({local})")
            else:  # a number of the element's type: errors name it there
                self.member_of = a.type.target
                self.read_primitive(part.attr, part.attr.type, local)
                self.member_of = None
                self.emit(f"out.push_{ {DOUBLE: 'double', INT: 'int', UINT: 'length'}[part.how]}({local})")
        self.end_block()
        self.end_block()
        self.emit("finally:")
        self.emit("    PyBuffer_Release(&_view)")
        self.emit("left -= n")
        self.emit("yield out")
        self.end_block()
        return self.out.lines

    def cuts_body(self, a: Attribute) -> list[str]:
        """`cuts_<field>(step)`: the elements stepped over by their C skip readers, the buffer held
        throughout."""
        self.scanned = set()
        return self.with_view(super().cuts_body(a))

    @staticmethod
    def with_view(lines: list[str]) -> list[str]:
        """A property that reads bytes holds the buffer from when it has it to its return."""
        if not uses_pointer(lines):
            return lines
        at = next(i for i, line in enumerate(lines) if line.strip() == "end = io.end") + 1
        indent = lines[at - 1][: len(lines[at - 1]) - len(lines[at - 1].lstrip())]
        return lines[:at] + hold_buffer(lines[at:], indent)


class ValuesEmitter(CythonTypeEmitter):
    """Renders `c_scan_<id>` of a type of unsigned numbers (`struct_members`): its fields read
    into C locals as its scalar reader would read them (the same checks, messages and paths),
    then its value instances stored into the caller's struct `out`. A conditional field is 0
    where absent (plan.value_fields proves nothing reads it there); 64-bit ones are unsigned."""

    def __init__(self, builder, t: TypeSpec, members: dict[str, str]):
        super().__init__(builder, t, SCALAR)
        self.members = members
        self.plan.uses.update(list(members))

    def read_primitive(self, a: Attribute, ref: Primitive, local: str) -> None:
        super().read_primitive(a, ref, local)
        if not fits_int64(ref) and local == TypeEmitter.local(a.id) and (a.cond is None or self.c_conditional(a)):
            self.cdefs[local] = "unsigned long long"

    def c_conditional(self, a: Attribute) -> bool:
        return a.cond is not None and a.valid is None and self.plan.read_only_when_present(a)

    def materialize(self, attr: Attribute) -> None:
        super().materialize(attr)
        if attr.id in self.members:
            self.cdefs[TypeEmitter.local(attr.id)] = self.members[attr.id]

    def struct_body(self) -> list[str]:
        lines = self.body()
        values = {name: self.resolve(name) for name in self.members}
        self.flush_pre()
        for name, value in values.items():
            self.emit(f"out.{name} = {value}")
        return lines


class ElementEmitter(CythonTypeEmitter):
    """Renders `c_push_<id>` of a `-rdbspec-element` type, which stays an object elsewhere: its
    fields read as a scalar reader reads them (the same checks, messages and paths; its one raw
    field left in the buffer as a span), then the first of its element fields that is present
    pushed into `out`: that span, an integer, or other bytes (an LZF string's, decompressed)
    that the columns keep."""

    def __init__(self, builder, t: TypeSpec):
        super().__init__(builder, replace(t, scalar=t.element), SCALAR)
        self.span = span_field(self.t)

    def into_struct(self, a: Attribute, ref: UserRef) -> bool:
        """Its numbers too are read into C structs: an element makes no object."""
        return (a.type is ref and a.cond is None and not a.repeat and not self.plan.steps_over(a, ref)
                and struct_members(self.builder, ref.target) is not None)

    def push_lines(self) -> list[str]:
        locals_ = {name: self.resolve(name) for name in self.t.scalar}
        self.flush_pre()
        lines = []
        for name, local in locals_.items():
            attr = self.t.attribute(name)
            if self.span is not None and attr is self.span:
                push = f"out.push_span({local}_start, {local}_length)"
            elif (attr.is_instance and self.t.scalar_kind(name) == "int") or int_column(attr.type):
                push = f"out.push_int({local})"
            else:
                push = f"out.push_bytes({local})"
            lines += [f"{'elif' if lines else 'if'} {local} is not None:", f"    {push}"]
        return lines + ["else:", "    out.push_none()"]


def hold_buffer(lines: list[str], indent: str) -> list[str]:
    """`lines` run with `_p` pointing into `buf`, whose buffer they hold until they end."""
    return [f"{indent}_p = acquire(buf, &_view, end)", f"{indent}try:"] + ["    " + line for line in lines] \
        + [f"{indent}finally:", f"{indent}    PyBuffer_Release(&_view)"]
