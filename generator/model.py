"""The intermediate model: types, attributes, enums; built from loaded specs and resolved in a
precompile pass (type references, enum references, sizes) before any code is rendered."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union

from . import expressions as ex
from .load import SpecError, SpecFile

# struct format, size, signed for each fixed-size primitive (endian added when resolved)
_INTS = {"u1": ("B", 1), "s1": ("b", 1), "u2": ("H", 2), "s2": ("h", 2), "u4": ("I", 4),
         "s4": ("i", 4), "u8": ("Q", 8), "s8": ("q", 8), "f4": ("f", 4), "f8": ("d", 8)}
_PRIMITIVE = re.compile(r"^([us][1248]|f[48])(le|be)?$")
_SUPPORTED_ATTR_KEYS = {"id", "doc", "doc-ref", "type", "size", "size-eos", "process", "repeat",
                        "repeat-expr", "repeat-until", "if", "contents", "valid", "enum", "encoding",
                        "terminator", "consume", "include", "value", "pos", "-rdbspec-columns",
                        "-rdbspec-stream", "-rdbspec-lazy", "-rdbspec-message", "-rdbspec-warn",
                        "-rdbspec-write", "-rdbspec-chunks", "-rdbspec-splits", "-rdbspec-index",
                        "-rdbspec-lookup"}
_SUPPORTED_TYPE_KEYS = {"meta", "doc", "doc-ref", "params", "seq", "instances", "types", "enums",
                        "-rdbspec-scalar", "-rdbspec-scalar-tests", "-rdbspec-stream", "-rdbspec-write-from",
                        "-rdbspec-element"}
_SUPPORTED_META_KEYS = {"id", "title", "endian", "imports", "file-extension", "license",
                        "ks-version", "encoding", "application", "xref", "tags"}


@dataclass
class Primitive:
    """A fixed-size number: struct format (with byte order), size in bytes."""

    name: str
    fmt: str
    size: int


@dataclass
class Text:
    """`str` (sized) or `strz` (terminated) text in an encoding."""

    encoding: str
    terminated: bool


@dataclass
class UserRef:
    target: TypeSpec
    args: tuple[ex.Node, ...]


@dataclass
class Switch:
    on: ex.Node
    cases: list[tuple[ex.Node, TypeRef]]
    default: Optional[TypeRef]


TypeRef = Union[Primitive, Text, UserRef, Switch, None]  # None: raw bytes


@dataclass
class IndexSpec:
    """An index the root keeps of its streamed field (`-rdbspec-index`): of the elements read so
    far, those for which `cond` holds (`_` is the element), by `key`; the first element of a
    key is kept, as `value` of it (the element itself without one). `-rdbspec-lookup` instances
    read it."""

    name: str
    cond: ex.Node
    key: ex.Node
    value: Optional[ex.Node] = None


def type_refs(ref: TypeRef) -> list[TypeRef]:
    """The types a field may have: its type, or each one its switch may pick."""
    return [r for _, r in ref.cases] + [ref.default] if isinstance(ref, Switch) else [ref]


@dataclass
class Attribute:
    """A seq field or an instance."""

    id: str
    yaml_path: str
    raw: dict
    is_instance: bool
    doc: str = ""
    doc_ref: str = ""
    type: TypeRef = None
    size: Optional[ex.Node] = None
    size_eos: bool = False
    process: Optional[tuple[str, tuple[ex.Node, ...]]] = None
    repeat: Optional[str] = None
    repeat_expr: Optional[ex.Node] = None
    repeat_until: Optional[ex.Node] = None
    cond: Optional[ex.Node] = None
    contents: Optional[bytes] = None
    valid: Optional[dict] = None
    enum: Optional[str] = None
    terminator: Optional[int] = None
    consume: bool = True
    include: bool = False
    columns: bool = False
    # a lazy repeat also read in chunks of columns (`-rdbspec-chunks`): see plan.chunk_row
    chunks: bool = False
    # a lazy repeat that a reader may cut into parts, each read alone (`-rdbspec-splits`):
    # `cuts_<field>`, and `iter_<field>`/`chunks_<field>` from a cut
    splits: bool = False
    value: Optional[ex.Node] = None
    pos: Optional[ex.Node] = None
    # how a writer derives the field (`-rdbspec-write`): an expression, or for a field of a user
    # type the write inputs of that type (`-rdbspec-write-from`) as name: expression
    write: Union[ex.Node, dict[str, ex.Node], None] = None
    # the indexes the root keeps of its streamed field's elements (`-rdbspec-index`)
    indexes: list[IndexSpec] = field(default_factory=list)


@dataclass
class Param:
    id: str
    doc: str
    enum: Optional[str] = None  # the enum its values are members of (`enum:`), as written


@dataclass(frozen=True)
class EnumMember:
    """A member of a spec enum as generated code names it: its class and name in
    `generated/enums.py` (`RecordKind.SELECT_DB`), its number, and the module-level constant a
    generated module compares with (`_SELECT_DB`; `_RECORD_KIND_EOF` where another enum has a
    member of that name too)."""

    enum: str
    name: str
    value: int
    constant: str


def enum_class_name(enum_id: str) -> str:
    """The class of `generated/enums.py` that declares the spec enum `enum_id`."""
    return "".join(part.capitalize() for part in enum_id.split("_"))


# module-level names of the generated modules that an enum member's constant must not take
_TAKEN_CONSTANTS = frozenset({"_SPAN", "_UNSET"})


@dataclass
class TypeSpec:
    id: str
    spec: SpecFile
    parent: Optional[TypeSpec]
    yaml_path: str
    raw: dict
    doc: str = ""
    doc_ref: str = ""
    endian: Optional[str] = None
    params: list[Param] = field(default_factory=list)
    seq: list[Attribute] = field(default_factory=list)
    instances: list[Attribute] = field(default_factory=list)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)
    types: dict[str, TypeSpec] = field(default_factory=dict)
    scalar: Optional[list[str]] = None
    scalar_tests: dict[str, str] = field(default_factory=dict)
    # the fields or value instances that hold the type's value when it is one element of a
    # column (`-rdbspec-element`), the first present one: the type stays an object elsewhere
    element: Optional[list[str]] = None
    parents: list[TypeSpec] = field(default_factory=list)
    streamed: Optional[str] = None
    used_as_columns: bool = False
    # the instances a writer gives instead of the seq fields (`-rdbspec-write-from`); a
    # `-rdbspec-scalar` type is written from its scalar instances
    write_from: list[str] = field(default_factory=list)
    # instances only the official compiler computes: those that only the Kaitai `value` of a
    # `-rdbspec-lookup` reads (its search), which the lookup replaces (not in `instances`)
    official_only: list[Attribute] = field(default_factory=list)

    @property
    def class_name(self) -> str:
        return "".join(part.capitalize() for part in self.id.split("_"))

    @property
    def module(self) -> str:
        return self.spec.id

    @property
    def spec_path(self) -> str:
        return f"{self.spec.id}:{self.id}"

    def scalar_kind(self, name: str) -> Optional[str]:
        """For a scalar-compiled type: the Python type ("int" or "bytes") a candidate
        instance holds; raw bytes and text fields give bytes, anything else int."""
        inst = self.attribute(name)
        if inst is None or inst.value is None:
            return None
        source = inst.value
        if isinstance(source, ex.Name):
            field_ = self.attribute(source.name)
            if field_ is not None and field_.type is None and not field_.is_instance:
                return "bytes"
        return "int"

    def attribute(self, name: str) -> Optional[Attribute]:
        for attr in self.seq + self.instances:
            if attr.id == name:
                return attr
        return None

    def walk(self):
        yield self
        for child in self.types.values():
            yield from child.walk()


def _error(spec: SpecFile, path: str, message: str) -> SpecError:
    return SpecError(spec.name, path, message)


def _expr(spec: SpecFile, path: str, text: object) -> ex.Node:
    try:
        return ex.parse(text)
    except ex.ExpressionError as err:
        raise _error(spec, path, str(err)) from None


def _doc(raw: dict) -> str:
    return str(raw.get("doc", "")).strip()


def _doc_ref(raw: dict) -> str:
    ref = raw.get("doc-ref", "")
    return "; ".join(ref) if isinstance(ref, list) else str(ref).strip()


class Builder:
    """Builds TypeSpecs from the loaded files, then resolves every reference."""

    def __init__(self, files: dict[str, SpecFile]):
        self.files = files
        self.roots: dict[str, TypeSpec] = {}
        self._shared_members: Optional[set[str]] = None  # member names of more than one enum

    def build(self) -> dict[str, TypeSpec]:
        for spec in self.files.values():
            meta = spec.body.get("meta", {})
            unknown = set(meta) - _SUPPORTED_META_KEYS
            if unknown:
                raise _error(spec, "/meta", f"unsupported meta keys {sorted(unknown)}")
            self.roots[spec.id] = self._type(spec, spec.id, None, "", spec.body, meta.get("endian"))
        for root in self.roots.values():
            for type_spec in root.walk():
                self._resolve(type_spec)
        self._check_lookups()
        self._check_names()
        return self.roots

    # -- building --------------------------------------------------------------------------

    def _type(self, spec: SpecFile, type_id: str, parent: Optional[TypeSpec], path: str,
              raw: dict, endian: Optional[str]) -> TypeSpec:
        unknown = {k for k in raw if k not in _SUPPORTED_TYPE_KEYS}
        if unknown:
            raise _error(spec, path or "/", f"unsupported keys {sorted(unknown)}")
        endian = raw.get("meta", {}).get("endian", endian)
        t = TypeSpec(type_id, spec, parent, path or "/", raw, _doc(raw), _doc_ref(raw), endian)
        t.params = [Param(p["id"], _doc(p), p.get("enum")) for p in raw.get("params", [])]
        t.seq = [self._attribute(spec, f"{path}/seq/{i}", a, False) for i, a in enumerate(raw.get("seq", []))]
        t.instances = [
            self._attribute(spec, f"{path}/instances/{name}", dict(a, id=name), True)
            for name, a in raw.get("instances", {}).items()
        ]
        t.enums = {name: {str(v if not isinstance(v, dict) else v["id"]): int(k) for k, v in members.items()}
                   for name, members in raw.get("enums", {}).items()}
        scalar = raw.get("-rdbspec-scalar")
        t.scalar = [scalar] if isinstance(scalar, str) else scalar
        t.scalar_tests = dict(raw.get("-rdbspec-scalar-tests", {}))
        t.element = raw.get("-rdbspec-element")
        # a scalar type is written from its scalar instances once its fields say how (-rdbspec-write)
        derives = any("-rdbspec-write" in a for a in raw.get("seq", []))
        t.write_from = list(raw.get("-rdbspec-write-from", (t.scalar or []) if derives else []))
        for name, child in raw.get("types", {}).items():
            t.types[name] = self._type(spec, name, t, f"{path}/types/{name}", child, endian)
        return t

    def _attribute(self, spec: SpecFile, path: str, raw: dict, is_instance: bool) -> Attribute:
        unknown = set(raw) - _SUPPORTED_ATTR_KEYS
        if unknown:
            raise _error(spec, path, f"unsupported keys {sorted(unknown)}")
        if "id" not in raw:
            raise _error(spec, path, "every attribute needs an id")
        a = Attribute(raw["id"], path, raw, is_instance, _doc(raw), _doc_ref(raw))
        for key, name in (("size", "size"), ("if", "cond"), ("repeat-expr", "repeat_expr"),
                          ("repeat-until", "repeat_until"), ("value", "value"), ("pos", "pos")):
            if key in raw:
                setattr(a, name, _expr(spec, f"{path}/{key}", raw[key]))
        a.size_eos = bool(raw.get("size-eos", False))
        a.repeat = raw.get("repeat")
        if a.repeat not in (None, "expr", "until", "eos"):
            raise _error(spec, f"{path}/repeat", f"unsupported repeat {a.repeat!r}")
        a.enum = raw.get("enum")
        a.valid = raw.get("valid")
        if "-rdbspec-warn" in raw and (a.valid is None or not isinstance(raw["-rdbspec-warn"], str)
                                       or not raw["-rdbspec-warn"].strip()):
            raise _error(spec, f"{path}/-rdbspec-warn", "-rdbspec-warn goes beside a `valid` and names the server "
                                                       "function that loads what fails it")
        if "contents" in raw:
            a.contents = _contents(spec, f"{path}/contents", raw["contents"])
        if "terminator" in raw:
            a.terminator = int(raw["terminator"])
        a.consume = bool(raw.get("consume", True))
        a.include = bool(raw.get("include", False))
        a.columns = bool(raw.get("-rdbspec-columns", False))
        a.chunks = bool(raw.get("-rdbspec-chunks", False))
        a.splits = bool(raw.get("-rdbspec-splits", False))
        write = raw.get("-rdbspec-write")
        if isinstance(write, dict):
            a.write = {str(k): _expr(spec, f"{path}/-rdbspec-write/{k}", v) for k, v in write.items()}
        elif write is not None:
            a.write = _expr(spec, f"{path}/-rdbspec-write", write)
        if "-rdbspec-index" in raw:
            a.indexes = _indexes(spec, f"{path}/-rdbspec-index", raw["-rdbspec-index"])
        if "-rdbspec-lookup" in raw:
            a.value = _lookup(spec, f"{path}/-rdbspec-lookup", raw["-rdbspec-lookup"], is_instance and "value" in raw)
        if "process" in raw:
            text = str(raw["process"]).strip()
            name, _, arg_text = text.partition("(")
            args = _expr(spec, f"{path}/process", f"[{arg_text[:-1]}]").items if arg_text else ()
            a.process = (name.strip(), args)
        return a

    # -- resolving -------------------------------------------------------------------------

    def _resolve(self, t: TypeSpec) -> None:
        stream_fields = [a for a in t.seq if a.raw.get("-rdbspec-stream")]
        if stream_fields:
            if t.parent is not None or len(stream_fields) != 1 or not stream_fields[0].repeat:
                raise _error(t.spec, t.yaml_path, "-rdbspec-stream goes on one repeated field of a root type")
            t.streamed = stream_fields[0].id
        if t.scalar:
            for name in t.scalar:
                inst = t.attribute(name)
                if inst is None or not inst.is_instance or inst.value is None:
                    raise _error(t.spec, f"{t.yaml_path}/-rdbspec-scalar", f"{name} is not a value instance")
        for name in t.element or ():
            if t.attribute(name) is None:
                raise _error(t.spec, f"{t.yaml_path}/-rdbspec-element", f"{name} is not a field or instance")
        for a in t.seq + t.instances:
            a.type = self._type_ref(t, a)
            for ref in type_refs(a.type):
                if isinstance(ref, UserRef) and t not in ref.target.parents:
                    ref.target.parents.append(t)
            if a.columns:
                if not isinstance(a.type, UserRef) or not a.repeat:
                    raise _error(t.spec, a.yaml_path, "-rdbspec-columns needs a repeated user type")
                a.type.target.used_as_columns = True
            if a.chunks and not (isinstance(a.type, UserRef) and a.repeat == "expr" and a.raw.get("-rdbspec-lazy")):
                raise _error(t.spec, a.yaml_path, "-rdbspec-chunks needs a lazy repeat-expr of a user type")
            if a.splits and not (isinstance(a.type, UserRef) and a.repeat == "expr" and a.raw.get("-rdbspec-lazy")
                                 and a.cond is None):
                raise _error(t.spec, a.yaml_path,
                             "-rdbspec-splits needs an unconditional lazy repeat-expr of a user type")
            if a.enum:
                self.enum(t, tuple(a.enum.split("::")[:-1]), a.enum.split("::")[-1], a.yaml_path, whole=True)
        for index, p in enumerate(t.params):
            if p.enum:
                self.enum(t, tuple(p.enum.split("::")[:-1]), p.enum.split("::")[-1], f"{t.yaml_path}/params/{index}",
                          whole=True)

    def _type_ref(self, t: TypeSpec, a: Attribute) -> TypeRef:
        raw_type = a.raw.get("type")
        if raw_type is None:
            if a.raw.get("encoding"):
                raise _error(t.spec, a.yaml_path, "encoding needs type str or strz")
            return None
        if isinstance(raw_type, dict):
            if set(raw_type) - {"switch-on", "cases"}:
                raise _error(t.spec, f"{a.yaml_path}/type", "only switch-on and cases are supported")
            cases: list[tuple[ex.Node, TypeRef]] = []
            default: TypeRef = None
            for key, case_type in raw_type.get("cases", {}).items():
                ref = self._named_type(t, a, str(case_type))
                if key == "_":
                    default = ref
                else:
                    cases.append((_expr(t.spec, f"{a.yaml_path}/type/cases/{key}", key), ref))
            return Switch(_expr(t.spec, f"{a.yaml_path}/type/switch-on", raw_type["switch-on"]), cases, default)
        return self._named_type(t, a, str(raw_type))

    def _named_type(self, t: TypeSpec, a: Attribute, name: str) -> TypeRef:
        if name in ("str", "strz"):
            encoding = a.raw.get("encoding") or t.spec.body.get("meta", {}).get("encoding")
            if not encoding:
                raise _error(t.spec, a.yaml_path, f"{name} needs an encoding")
            return Text(encoding, name == "strz")
        match = _PRIMITIVE.match(name)
        if match:
            fmt, size = _INTS[match.group(1)]
            endian = match.group(2) or t.endian
            if size > 1 and endian is None:
                raise _error(t.spec, a.yaml_path, f"{name} needs an endianness (meta/endian or {name}le/be)")
            return Primitive(name, ("<" if endian == "le" else ">") + fmt, size)
        if re.match(r"^b\d+", name):
            raise _error(t.spec, a.yaml_path, f"bit-sized type {name} is not supported by this generator")
        args: tuple[ex.Node, ...] = ()
        if "(" in name:
            name, arg_text = name.split("(", 1)
            args = _expr(t.spec, f"{a.yaml_path}/type", f"[{arg_text.rstrip()[:-1]}]").items
        target = self.find_type(t, name.strip().split("::"))
        if target is None:
            raise _error(t.spec, f"{a.yaml_path}/type", f"unknown type {name!r}")
        if len(args) != len(target.params):
            raise _error(t.spec, f"{a.yaml_path}/type", f"{name} takes {len(target.params)} arguments")
        return UserRef(target, args)

    def find_type(self, scope: TypeSpec, path: list[str]) -> Optional[TypeSpec]:
        """Kaitai's lookup: nested types outward from `scope`, then imported roots."""
        first, rest = path[0], path[1:]
        found: Optional[TypeSpec] = None
        node: Optional[TypeSpec] = scope
        while node is not None and found is None:
            found = node.types.get(first) or (node if node.parent is None and node.id == first else None)
            node = node.parent
        if found is None and (first in scope.spec.imports or first == scope.spec.id):
            found = self.roots.get(first)
        for name in rest:
            if found is None:
                return None
            found = found.types.get(name)
        return found

    def enum(self, scope: TypeSpec, type_path: tuple[str, ...], name: str, where: str,
             whole: bool = False, member: str = "") -> int:
        """Resolves `[type::...]enum` (and a member when given) from `scope` outward."""
        owner = self._enum_owner(scope, type_path, name, where)
        if whole:
            return 0
        if member not in owner.enums[name]:
            raise _error(scope.spec, where, f"enum {name} has no member {member}")
        return owner.enums[name][member]

    def enum_member(self, scope: TypeSpec, type_path: tuple[str, ...], name: str, member: str,
                    where: str) -> EnumMember:
        """The member `[type::...]enum::member`, resolved from `scope`, as generated code names it."""
        value = self.enum(scope, type_path, name, where, member=member)
        upper = member.upper()
        constant = f"_{upper}"
        if upper in self.shared_members() or constant in _TAKEN_CONSTANTS:
            constant = f"_{name.upper()}_{upper}"
        return EnumMember(enum_class_name(name), upper, value, constant)

    def shared_members(self) -> set[str]:
        """The member names (upper-cased) that more than one enum of the specs has."""
        if self._shared_members is None:
            seen: dict[str, int] = {}
            for root in self.roots.values():
                for t in root.walk():
                    for members in t.enums.values():
                        for member in members:
                            seen[member.upper()] = seen.get(member.upper(), 0) + 1
            self._shared_members = {member for member, count in seen.items() if count > 1}
        return self._shared_members

    def _enum_owner(self, scope: TypeSpec, type_path: tuple[str, ...], name: str, where: str) -> TypeSpec:
        """The type that declares the enum `[type::...]name` seen from `scope`."""
        owners: list[TypeSpec] = []
        if type_path:
            found = self.find_type(scope, list(type_path))
            owners = [found] if found else []
        else:
            node: Optional[TypeSpec] = scope
            while node is not None:
                owners.append(node)
                node = node.parent
        for owner in owners:
            if name in owner.enums:
                return owner
        raise _error(scope.spec, where, f"unknown enum {'::'.join(type_path + (name,))}")

    def _check_lookups(self) -> None:
        """Every `-rdbspec-lookup` reads an index that the root of its spec keeps, of its streamed
        field; the instances only its Kaitai `value` reads move to `official_only`."""
        for root in self.roots.values():
            names = {index.name for a in root.seq if a.raw.get("-rdbspec-stream") for index in a.indexes}
            for t in root.walk():
                for a in t.seq + t.instances:
                    if a.indexes and (t is not root or not a.raw.get("-rdbspec-stream")):
                        raise _error(t.spec, a.yaml_path, "-rdbspec-index goes on the streamed field of a root type")
                    if isinstance(a.value, ex.Lookup) and a.value.index not in names:
                        raise _error(t.spec, f"{a.yaml_path}/-rdbspec-lookup", f"{root.id} keeps no index "
                                     f"{a.value.index!r} (-rdbspec-index of its streamed field)")
                self._set_apart_searches(t)

    @staticmethod
    def _set_apart_searches(t: TypeSpec) -> None:
        """Moves the instances that only the Kaitai `value` of a lookup reads (the official
        compiler's search, which the lookup replaces) from `instances` to `official_only`."""
        searched = {name for a in t.instances if isinstance(a.value, ex.Lookup)
                    for name in ex.names_in(ex.parse(a.raw["value"]))}
        while True:
            used = {name for a in t.seq + t.instances for node in _expressions(a) for name in ex.names_in(node)}
            apart = [a for a in t.instances if a.id in searched and a.id not in used]
            if not apart:
                return
            t.official_only += apart
            t.instances = [a for a in t.instances if a not in apart]

    def _check_names(self) -> None:
        for root in self.roots.values():
            seen: dict[str, TypeSpec] = {}
            for t in root.walk():
                if t.class_name in seen:
                    raise _error(t.spec, t.yaml_path, f"type name {t.id} is used twice in {t.spec.name}")
                seen[t.class_name] = t


def _expressions(a: Attribute) -> list[ex.Node]:
    """The expressions of an attribute that generated code computes (a lookup's own, not the
    Kaitai `value` beside it)."""
    nodes = [n for n in (a.cond, a.size, a.repeat_expr, a.repeat_until, a.value, a.pos) if n is not None]
    refs = type_refs(a.type)
    nodes += [r.on for r in ([a.type] if isinstance(a.type, Switch) else [])]
    nodes += [arg for r in refs if isinstance(r, UserRef) for arg in r.args]
    nodes += list(a.process[1]) if a.process else []
    if isinstance(a.valid, dict) and "expr" in a.valid:
        nodes.append(ex.parse(a.valid["expr"]))
    return nodes


def _indexes(spec: SpecFile, path: str, raw: object) -> list[IndexSpec]:
    """`-rdbspec-index`: {name: {if: ..., key: ..., value: ...}} (value optional)."""
    if not isinstance(raw, dict):
        raise _error(spec, path, "-rdbspec-index maps each index's name to its `if`, `key` and `value`")
    out = []
    for name, body in raw.items():
        where = f"{path}/{name}"
        if not isinstance(body, dict) or not {"if", "key"} <= set(body) or set(body) - {"if", "key", "value"}:
            raise _error(spec, where, "an index has an `if` and a `key` (expressions of `_`, the element), "
                                      "and may have a `value`")
        value = _expr(spec, f"{where}/value", body["value"]) if "value" in body else None
        cond, key = _expr(spec, f"{where}/if", body["if"]), _expr(spec, f"{where}/key", body["key"])
        out.append(IndexSpec(str(name), cond, key, value))
    return out


def _lookup(spec: SpecFile, path: str, raw: object, on_value_instance: bool) -> ex.Lookup:
    """`-rdbspec-lookup`: {index: ..., key: ..., value: ..., default: ...} (value, default optional)
    beside the `value` of an instance, which the official compiler computes instead."""
    if not on_value_instance:
        raise _error(spec, path, "-rdbspec-lookup goes on a value instance, whose `value` is what the official "
                                 "compiler computes")
    if not isinstance(raw, dict) or not {"index", "key"} <= set(raw) or set(raw) - {"index", "key", "value", "default"}:
        raise _error(spec, path, "a lookup has an `index` and a `key`, and may have a `value` and a `default`")
    value = _expr(spec, f"{path}/value", raw["value"]) if "value" in raw else None
    default = _expr(spec, f"{path}/default", raw["default"]) if "default" in raw else None
    return ex.Lookup(str(raw["index"]), _expr(spec, f"{path}/key", raw["key"]), value, default)


def _contents(spec: SpecFile, path: str, raw: object) -> bytes:
    if isinstance(raw, str):
        return raw.encode("utf-8")
    if isinstance(raw, list):
        out = bytearray()
        for item in raw:
            out += item.encode("utf-8") if isinstance(item, str) else bytes([int(item)])
        return bytes(out)
    raise _error(spec, path, "contents must be a string or a list")
