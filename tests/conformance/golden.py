"""Golden fixtures: loading, and the value matcher shared by every implementation.

The fixture format and the value rules are defined in docs/architecture.md ("Golden fixtures").
This module knows nothing about any particular parser: the matcher works through an `Accessor`,
and three accessors are provided:

* `OursAccessor`      -- objects from our generated package `rdbspec_generated`;
* `KaitaiPyAccessor`  -- objects from the official compiler's Python output (kaitaistruct runtime);
* `JsonAccessor`      -- plain JSON produced by run_js.js from the official JavaScript output.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import GetSetDescriptorType, ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
GOLDEN_DIR = REPO / "tests" / "golden"
SPEC_DIR = REPO / "spec"
GENERATED_DIR = REPO / "generated"
SUPPORT_DIR = Path(__file__).resolve().parent / "support"

FIXTURE_KEYS = {"doc", "root", "params", "expected", "error"}
_HEX_TOKEN = re.compile(r"[0-9A-Fa-f]+")
_ABSENT = object()


class FixtureError(Exception):
    """A fixture file is malformed (bad hex, bad YAML, missing keys)."""


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


@dataclass
class Fixture:
    """One golden fixture: NAME.hex (the bytes) + NAME.yaml (root, params, expectation)."""

    name: str
    data: bytes
    doc: str
    root: str
    params: dict[str, Any] = field(default_factory=dict)
    expected: Any = None
    error: dict[str, Any] | None = None

    @property
    def is_invalid(self) -> bool:
        return self.error is not None

    @property
    def root_file(self) -> str:
        return self.root.split("::")[0]

    @property
    def root_types(self) -> list[str]:
        """Nested type path below the file's root type ([] for the file root itself)."""
        return self.root.split("::")[1:]


def parse_hex(text: str, source: str = "<hex>") -> bytes:
    """Parse annotated hex: `#` starts a comment; otherwise only hex digits and whitespace.

    Every whitespace-separated token must have an even number of digits, so a byte is never
    split across whitespace. Anything else raises FixtureError naming the line.
    """
    out = bytearray()
    for lineno, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0]
        for token in body.split():
            if not _HEX_TOKEN.fullmatch(token):
                bad = next(c for c in token if c not in "0123456789abcdefABCDEF")
                raise FixtureError(f"{source}:{lineno}: not a hex digit: {bad!r} in {token!r}")
            if len(token) % 2:
                raise FixtureError(f"{source}:{lineno}: odd number of hex digits in {token!r}")
            out += bytes.fromhex(token)
    return bytes(out)


def fixture_names(golden_dir: Path = GOLDEN_DIR) -> list[str]:
    """Sorted fixture names: every stem that has a .hex or a .yaml file in golden_dir."""
    if not golden_dir.is_dir():
        return []
    stems = {p.stem for p in golden_dir.iterdir() if p.suffix in (".hex", ".yaml")}
    return sorted(stems)


def load_fixture(name: str, golden_dir: Path = GOLDEN_DIR) -> Fixture:
    """Load and validate one fixture; raises FixtureError on anything malformed."""
    hex_path = golden_dir / f"{name}.hex"
    yaml_path = golden_dir / f"{name}.yaml"
    for p in (hex_path, yaml_path):
        if not p.is_file():
            raise FixtureError(f"{name}: missing {p.name}")
    data = parse_hex(hex_path.read_text(encoding="utf-8"), str(hex_path))
    try:
        meta = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise FixtureError(f"{yaml_path}: invalid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise FixtureError(f"{yaml_path}: top level must be a mapping")
    unknown = set(meta) - FIXTURE_KEYS
    if unknown:
        raise FixtureError(f"{yaml_path}: unknown keys {sorted(unknown)}")
    if not isinstance(meta.get("doc"), str) or not meta["doc"].strip():
        raise FixtureError(f"{yaml_path}: `doc` (a sentence) is required")
    root = meta.get("root")
    if not isinstance(root, str) or not re.fullmatch(r"[a-z][a-z0-9_]*(::[a-z][a-z0-9_]*)*", root):
        raise FixtureError(f"{yaml_path}: `root` must be a spec id or file::type, got {root!r}")
    params = meta.get("params") or {}
    if not isinstance(params, dict):
        raise FixtureError(f"{yaml_path}: `params` must be a mapping")
    has_expected, has_error = "expected" in meta, "error" in meta
    if has_expected == has_error:
        raise FixtureError(f"{yaml_path}: exactly one of `expected` and `error` is required")
    error = meta.get("error")
    if has_error:
        if (
            not isinstance(error, dict)
            or not {"offset", "path"} <= set(error) <= {"offset", "path", "message"}
            or not isinstance(error["offset"], int)
            or not isinstance(error["path"], str)
            or not isinstance(error.get("message", ""), str)
        ):
            raise FixtureError(f"{yaml_path}: `error` must be {{offset: int, path: str, message: str}} "
                               f"(message optional), got {error!r}")
    params = {k: _param_value(v) for k, v in params.items()}
    return Fixture(name, data, meta["doc"], root, params, meta.get("expected"), error)


def _param_value(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"hex"}:
        return bytes.fromhex(v["hex"])
    return v


# --------------------------------------------------------------------------------------------
# Specs: what the harness needs to know about them (scalar types, parameter order)
# --------------------------------------------------------------------------------------------


def camel(name: str) -> str:
    """Spec id -> class name, as both compilers do: `lp_entry` -> `LpEntry`."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def lower_camel(name: str) -> str:
    """Spec id -> JavaScript member name: `total_bytes` -> `totalBytes`."""
    c = camel(name)
    return c[:1].lower() + c[1:]


@dataclass
class SpecInfo:
    """Per type, keyed by "file::type::sub" ("file" for a file's root type)."""

    scalars: dict[str, list[str]] = field(default_factory=dict)
    params: dict[str, list[str]] = field(default_factory=dict)
    param_enums: dict[str, dict[str, str]] = field(default_factory=dict)  # type -> param -> enum
    enums: dict[str, dict[str, int]] = field(default_factory=dict)  # "scope::enum" -> name -> value

    def enum_for(self, type_key: str, ref: str) -> dict[str, int] | None:
        """Resolve an `enum:` reference as written in type `type_key` (innermost scope first)."""
        scope = type_key.split("::")
        while scope:
            found = self.enums.get("::".join([*scope, *ref.split("::")]))
            if found is not None:
                return found
            scope.pop()
        return self.enums.get(ref)

    def resolve_params(self, root: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Parameters as ints: an enum-typed parameter may be given by its enum name."""
        out = dict(params)
        for name, ref in self.param_enums.get(root, {}).items():
            value = out.get(name)
            if isinstance(value, str):
                enum = self.enum_for(root, ref)
                if enum is None or value not in enum:
                    raise FixtureError(f"param {name}: {value!r} is not a value of enum {ref}")
                out[name] = enum[value]
        return out


def load_spec_info(spec_dir: Path = SPEC_DIR) -> SpecInfo:
    info = SpecInfo()
    for path in sorted(spec_dir.glob("*.ksy")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        file_id = (doc.get("meta") or {}).get("id", path.stem)
        _collect_types(info, file_id, doc)
    return info


def _collect_types(info: SpecInfo, key: str, node: Mapping[str, Any]) -> None:
    scalar = node.get("-rdbspec-scalar")
    if scalar:
        info.scalars[key] = [scalar] if isinstance(scalar, str) else list(scalar)
    info.params[key] = [p["id"] for p in node.get("params") or []]
    info.param_enums[key] = {p["id"]: p["enum"] for p in node.get("params") or [] if p.get("enum")}
    for enum_name, values in (node.get("enums") or {}).items():
        info.enums[f"{key}::{enum_name}"] = {
            (v["id"] if isinstance(v, Mapping) else str(v)): int(k) for k, v in (values or {}).items()
        }
    for name, sub in (node.get("types") or {}).items():
        if isinstance(sub, Mapping):
            _collect_types(info, f"{key}::{name}", sub)


# --------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------


class Accessor:
    """How the matcher reads an object model. Subclass per implementation."""

    def normalize(self, value: Any) -> Any:
        """Map an implementation value to a plain one where needed (scalar types, byte arrays)."""
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        return value

    def is_object(self, value: Any) -> bool:
        """Whether `value` is a parsed struct whose fields a mapping can be matched against."""
        return not isinstance(value, (int, float, str, bytes, list, tuple, dict)) and value is not None

    def get(self, obj: Any, name: str) -> Any:
        """Field or instance `name` of obj, or _ABSENT. Exceptions propagate."""
        try:
            return getattr(obj, name)
        except AttributeError:
            return _ABSENT

    def int_equal(self, expected: int, actual: Any) -> bool:
        return isinstance(actual, int) and not isinstance(actual, bool) and int(actual) == expected

    def as_sequence(self, value: Any) -> list[Any] | None:
        if isinstance(value, (list, tuple)):
            return list(value)
        if isinstance(value, (str, bytes, bytearray, Mapping)) or not self.is_object(value):
            return None
        if hasattr(value, "__len__") and hasattr(value, "__getitem__"):
            return [value[i] for i in range(len(value))]
        return None


class OursAccessor(Accessor):
    """rdbspec_generated objects: attributes by spec id; scalar-typed fields already hold scalars;
    `-rdbspec-columns` fields are sequences (len + indexing) of row objects."""


class KaitaiPyAccessor(Accessor):
    """Official Python output: a value whose class is a `-rdbspec-scalar` type is replaced by the
    first non-None of the named instances."""

    def __init__(self, scalar_classes: Mapping[type, list[str]]):
        self.scalar_classes = dict(scalar_classes)

    def normalize(self, value: Any) -> Any:
        instances = self.scalar_classes.get(type(value))
        if instances is not None:
            for inst in instances:
                v = getattr(value, inst)
                if v is not None:
                    return super().normalize(v)
            return None
        return super().normalize(value)


class JsonAccessor(Accessor):
    """Plain JSON from run_js.js: objects are dicts (JS member names, i.e. lowerCamelCase),
    byte arrays are {"hex": ...}, absent fields are null, numbers may come back as float."""

    def normalize(self, value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"hex"} and isinstance(value["hex"], str):
            return bytes.fromhex(value["hex"])
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            return int(value)
        if isinstance(value, dict) and set(value) == {"$float"}:
            return float(value["$float"])  # NaN / Infinity, which JSON cannot carry
        return value

    def is_object(self, value: Any) -> bool:
        return isinstance(value, dict)

    def int_equal(self, expected: int, actual: Any) -> bool:
        # The JavaScript runtime reads u8/s8 as doubles: beyond 2**53 the best it can give is the
        # nearest float64, which is accepted as equal.
        if isinstance(actual, float) and abs(expected) > 2**53:
            return float(expected) == actual
        return super().int_equal(expected, actual)

    def get(self, obj: Any, name: str) -> Any:
        return obj.get(lower_camel(name), _ABSENT)

    def as_sequence(self, value: Any) -> list[Any] | None:
        return list(value) if isinstance(value, list) else None


PLAIN = Accessor()


def _show(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        b = bytes(value)
        h = b[:48].hex()
        return f"bytes[{len(b)}] {h}{'...' if len(b) > 48 else ''}"
    if isinstance(value, list):
        return f"list[{len(value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(list(value)[:8]) + (", ..." if len(value) > 8 else "") + "}"
    if value is _ABSENT:
        return "<absent>"
    r = repr(value)
    if type(value).__module__ not in ("builtins",) and not isinstance(value, int):
        r = f"{type(value).__name__} object"
    return r if len(r) <= 120 else r[:117] + "..."


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def match(expected: Any, actual: Any, path: str = "", accessor: Accessor = PLAIN) -> list[str]:
    """Compare a YAML expectation with a parsed value; return mismatches as "path: message".

    Rules (docs/architecture.md): int == int; a str matches a str or bytes equal to its UTF-8;
    {hex: ...} matches bytes; a mapping matches an object's fields/instances recursively (only
    the listed keys); a list matches element by element with the same length; null matches an
    absent field; floats compare as float64.
    """
    where = path or "<root>"
    if actual is not _ABSENT:
        actual = accessor.normalize(actual)

    if expected is None:
        if actual is None or actual is _ABSENT:
            return []
        return [f"{where}: expected null (absent), got {_show(actual)}"]
    if actual is _ABSENT:
        return [f"{where}: expected {_show_expected(expected)}, but the field does not exist"]

    if isinstance(expected, bool):
        if isinstance(actual, (bool, int)) and bool(actual) == expected and actual in (0, 1):
            return []
        return [f"{where}: expected {expected}, got {_show(actual)}"]
    if isinstance(expected, int):
        if accessor.int_equal(expected, actual):
            return []
        return [f"{where}: expected {expected}, got {_show(actual)}"]
    if isinstance(expected, float):
        if isinstance(actual, (int, float)) and not isinstance(actual, bool):
            a, e = float(actual), float(expected)
            if a == e or (math.isnan(a) and math.isnan(e)):
                return []
        return [f"{where}: expected float {expected!r}, got {_show(actual)}"]
    if isinstance(expected, str):
        if isinstance(actual, str) and actual == expected:
            return []
        if isinstance(actual, bytes) and actual == expected.encode("utf-8"):
            return []
        name = getattr(actual, "name", None)  # an IntEnum member matches its name
        if isinstance(actual, int) and isinstance(name, str) and name == expected:
            return []
        return [f"{where}: expected {expected!r}, got {_show(actual)}"]
    if isinstance(expected, Mapping) and set(expected) == {"hex"} and isinstance(expected["hex"], str):
        want = bytes.fromhex(expected["hex"])
        if isinstance(actual, bytes) and actual == want:
            return []
        return [f"{where}: expected {_show(want)}, got {_show(actual)}"]
    if isinstance(expected, Mapping):
        if not accessor.is_object(actual):
            return [f"{where}: expected an object with {_show(dict(expected))}, got {_show(actual)}"]
        errors: list[str] = []
        for key, sub in expected.items():
            try:
                value = accessor.get(actual, str(key))
            except Exception as exc:  # a lazy instance failed to evaluate
                errors.append(f"{_join(path, str(key))}: raised {type(exc).__name__}: {exc}")
                continue
            errors += match(sub, value, _join(path, str(key)), accessor)
        return errors
    if isinstance(expected, list):
        seq = accessor.as_sequence(actual)
        if seq is None:
            return [f"{where}: expected a list of {len(expected)}, got {_show(actual)}"]
        errors = []
        if len(seq) != len(expected):
            errors.append(f"{where}: expected {len(expected)} elements, got {len(seq)}")
        for i, (e, a) in enumerate(zip(expected, seq, strict=False)):
            errors += match(e, a, f"{path}[{i}]", accessor)
        return errors
    return [f"{where}: fixture has an unsupported expected value {expected!r}"]


def _show_expected(expected: Any) -> str:
    if isinstance(expected, Mapping) and set(expected) == {"hex"}:
        return f"hex {expected['hex']}"
    return _show(expected)


def touch_all(obj: Any, accessor: Accessor, _seen: set[int] | None = None) -> None:
    """Evaluate every public field and (lazy) instance of a parsed tree, so that an invalid input
    raises even when the failing part is only reached through an instance."""
    seen = _seen if _seen is not None else set()
    if obj is None or isinstance(obj, (int, float, str, bytes, bytearray, memoryview)):
        return
    if id(obj) in seen:
        return
    seen.add(id(obj))
    seq = accessor.as_sequence(obj)
    if seq is not None:
        for item in seq:
            touch_all(item, accessor, seen)
        return
    if not accessor.is_object(obj):
        return
    for name in _public_members(obj):
        value = getattr(obj, name)
        if callable(value) and not accessor.is_object(value):
            continue
        touch_all(accessor.normalize(value), accessor, seen)


def _public_members(obj: Any) -> Iterable[str]:
    names: dict[str, None] = {}
    for klass in reversed(type(obj).__mro__):
        for name, member in vars(klass).items():
            # a property, or one of a compiled (native) class: a getset descriptor
            if not name.startswith("_") and isinstance(member, (property, GetSetDescriptorType)):
                names[name] = None
    for name in getattr(obj, "__dict__", {}):
        if not name.startswith("_"):
            names[name] = None
    for klass in type(obj).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if not name.startswith("_") and hasattr(obj, name):
                names[name] = None
    return list(names)


# --------------------------------------------------------------------------------------------
# Implementations (a) ours and (b) official Python
# --------------------------------------------------------------------------------------------


def import_ours(generated_dir: Path = GENERATED_DIR) -> ModuleType:
    """Import our generated package `rdbspec_generated` (installed, or from generated/)."""
    try:
        return importlib.import_module("rdbspec_generated")
    except ImportError:
        init = generated_dir / "__init__.py"
        if not init.is_file():
            raise
    spec = importlib.util.spec_from_file_location(
        "rdbspec_generated", init, submodule_search_locations=[str(generated_dir)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rdbspec_generated"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["rdbspec_generated"]
        raise
    return module


def run_ours(fx: Fixture, info: SpecInfo | None = None, package: str = "rdbspec_generated") -> list[str]:
    """Run one fixture through our generated parser (`package`: the Python modules, or
    `rdbspec_generated.native` for the native ones); return the failures (empty = pass)."""
    params = info.resolve_params(fx.root, fx.params) if info is not None else fx.params
    import_ours()
    runtime = importlib.import_module("rdbspec_generated._runtime")
    parse_error = runtime.ParseError
    try:
        module = importlib.import_module(f"{package}.{fx.root_file}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.{fx.root_file}":
            raise
        return [f"{package} has no module {fx.root_file!r} (not generated or not built?)"]
    cls_name = camel(fx.root_types[-1]) if fx.root_types else camel(fx.root_file)
    cls = getattr(module, cls_name, None)
    if cls is None:
        return [f"{package}.{fx.root_file} has no class {cls_name}"]
    accessor = OursAccessor()
    try:
        obj = cls.from_bytes(fx.data, **params)
        if fx.is_invalid:
            touch_all(obj, accessor)
    except parse_error as exc:
        if not fx.is_invalid:
            return [f"raised ParseError: {exc} (offset={exc.offset}, spec_path={exc.spec_path!r})"]
        assert fx.error is not None
        problems = []
        if exc.offset != fx.error["offset"]:
            problems.append(f"ParseError offset {exc.offset}, expected {fx.error['offset']}")
        if fx.error["path"] not in str(exc.spec_path):
            problems.append(f"ParseError spec_path {exc.spec_path!r} does not contain {fx.error['path']!r}")
        if fx.error.get("message", "") not in exc.reason:
            problems.append(f"ParseError message {exc.reason!r} does not contain {fx.error['message']!r}")
        if problems:
            problems.append(f"(message: {exc})")
        return problems
    except Exception as exc:
        return [f"raised {type(exc).__name__} (not ParseError): {exc} (at {_where(exc)})"]
    if fx.is_invalid:
        return [f"expected ParseError at offset {fx.error['offset']} ({fx.error['path']}), but parsed fine"]  # type: ignore[index]
    try:
        return match(fx.expected, obj, "", accessor)
    except Exception as exc:
        return [f"raised {type(exc).__name__} while reading fields: {exc}"]


def _where(exc: BaseException) -> str:
    """file:line of the innermost frame of an exception, for reports."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "?"
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"


class KaitaiPython:
    """Implementation (b): the official compiler's Python output, imported from build_dir."""

    def __init__(self, build_dir: Path, spec_info: SpecInfo):
        for p in (str(SUPPORT_DIR), str(build_dir)):
            if p not in sys.path:
                sys.path.insert(0, p)
        self.spec_info = spec_info
        self._scalars: dict[type, list[str]] | None = None

    def resolve(self, key: str) -> type:
        """`file::type::sub` -> class (file module, root class, nested classes)."""
        parts = key.split("::")
        module = importlib.import_module(parts[0])
        cls = getattr(module, camel(parts[0]))
        for part in parts[1:]:
            cls = getattr(cls, camel(part))
        return cls

    def accessor(self) -> KaitaiPyAccessor:
        if self._scalars is None:
            self._scalars = {}
            for key, instances in self.spec_info.scalars.items():
                try:
                    self._scalars[self.resolve(key)] = instances
                except (ImportError, AttributeError):
                    pass  # that spec failed to compile; fixtures using it fail on import
        return KaitaiPyAccessor(self._scalars)

    def run(self, fx: Fixture) -> list[str]:
        from kaitaistruct import BytesIO, KaitaiStream

        try:
            cls = self.resolve(fx.root)
            accessor = self.accessor()
        except Exception as exc:
            return [f"cannot load class for {fx.root}: {type(exc).__name__}: {exc}"]
        try:
            params = self.spec_info.resolve_params(fx.root, fx.params)
            obj = cls(_io=KaitaiStream(BytesIO(fx.data)), **params)
            if fx.is_invalid:
                touch_all(accessor.normalize(obj), accessor)
        except Exception as exc:
            if fx.is_invalid:
                return []
            return [f"raised {type(exc).__name__}: {exc}"]
        if fx.is_invalid:
            return ["expected an exception (invalid input), but parsed fine"]
        try:
            return match(fx.expected, obj, "", accessor)
        except Exception as exc:
            return [f"raised {type(exc).__name__} while reading fields: {exc}"]


def expected_to_json(value: Any) -> Any:
    """Expectation tree for run_js.js (only its shape matters there: keys and list lengths)."""
    if isinstance(value, Mapping):
        return {str(k): expected_to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expected_to_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
        return float(value)
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
