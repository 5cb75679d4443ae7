"""Imports in rdbspec run one way (docs/architecture.md, "Layers"): every module belongs to a
layer and imports only from its own layer or the ones below, with no cycle and no import inside
a function or class body but the few of `DEFERRED`; the generated parsers import nothing of
rdbspec.

The imports are read from the source with `ast`, so the test sees what a lazy import hides: a
deferred import counts in the layers and cycles like any other."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rdbspec"

# From the bytes up: each layer its packages (a module is in the layer of the package it is in).
# A new package goes in the lowest layer whose packages it needs.
LAYERS: list[tuple[str, set[str]]] = [
    ("the errors", {"rdbspec.errors"}),
    ("files written whole", {"rdbspec.atomic"}),
    ("the server's rules", {"rdbspec.server"}),
    ("the network", {"rdbspec.net"}),
    ("reading", {"rdbspec.read"}),
    ("writing", {"rdbspec.write"}),
    ("outputs of a read", {"rdbspec.jsonl", "rdbspec.memory"}),
    ("stream commands", {"rdbspec.stream_commands"}),
    ("rewriting", {"rdbspec.rewrite"}),
    ("into live servers", {"rdbspec.restore"}),
    ("reports", {"rdbspec.report", "rdbspec.spark"}),
    ("command line", {"rdbspec.cli", "rdbspec.__main__"}),
    ("public face", {"rdbspec"}),
]
# The only imports made inside a function: (importer, module). Of the network by the reading side's
# sources and the Spark paths, which every command loads and few use for a live server (ssl costs about 5 ms); of a
# module that imports pyspark, the optional extra `spark`, from one that every command loads, so
# that the command line starts without Spark (about 80 ms) and runs without the extra installed;
# and, in the command line's modules, of what one command alone needs (the writers, the report page,
# the stream commands, the pipeline's dumps and report, the restore's commands), loaded by that
# command, so that the others start without it (about 25 ms a command); and of the public face's
# writing side (`rdbspec.Writer`...), loaded when first asked for, so that every `import
# rdbspec.<module>` does not load the writers.
DEFERRED = {("rdbspec.read.source", "rdbspec.net.connection"), ("rdbspec.read.source", "rdbspec.net.replica"),
            ("rdbspec.read.dumpfile", "rdbspec.read.arriving"), ("rdbspec.cli.common", "rdbspec.net.connection"),
            ("rdbspec.spark.options", "rdbspec.restore.cluster"), ("rdbspec.cli", "rdbspec.restore.cluster"),
            ("rdbspec.spark", "rdbspec.spark.launch"), ("rdbspec.spark", "rdbspec.spark.source"),
            ("rdbspec.cli.pipeline", "rdbspec.spark.launch"), ("rdbspec.cli.pipeline", "rdbspec.spark.report"),
            ("rdbspec.cli.pipeline", "rdbspec.spark.dumps"),
            ("rdbspec.cli.pipeline", "rdbspec.report.html"), ("rdbspec.cli.pipeline", "rdbspec.report.data"),
            ("rdbspec.cli", "rdbspec.write.convert"), ("rdbspec.cli", "rdbspec.rewrite"),
            ("rdbspec.cli", "rdbspec.rewrite.command_file"),
            ("rdbspec.cli.split", "rdbspec.rewrite.split"), ("rdbspec.cli.split", "rdbspec.write.convert"),
            ("rdbspec.cli.split", "rdbspec.net.connection"), ("rdbspec.cli.split", "rdbspec.restore.cluster"),
            ("rdbspec.cli.report", "rdbspec.report.html"),
            ("rdbspec.cli.restore", "rdbspec.net.connection"), ("rdbspec.cli.restore", "rdbspec.restore.restore"),
            ("rdbspec.cli.restore", "rdbspec.rewrite"),
            ("rdbspec.cli.restore", "rdbspec.restore.cluster"),
            ("rdbspec.cli.streams", "rdbspec.stream_commands.commands"),
            ("rdbspec.cli.streams", "rdbspec.stream_commands.reply"),
            ("rdbspec.cli.resp", "rdbspec.restore.commands"), ("rdbspec.cli.resp", "rdbspec.net.resp"),
            ("rdbspec.cli.resp", "rdbspec.write.convert"), ("rdbspec.cli.resp", "rdbspec.restore.restore"),
            ("rdbspec.cli.resp", "rdbspec.restore.payload"),
            ("rdbspec", "rdbspec.write.writer"), ("rdbspec", "rdbspec.write.layouts"),
            ("rdbspec", "rdbspec.write.stream")}
PACKAGE_LAYER = {package: rank for rank, (_, packages) in enumerate(LAYERS) for package in packages}
# The stream commands' modules, each importing only the ones before it.
STREAM_COMMANDS = [f"rdbspec.stream_commands.{m}" for m in ("ranges", "groups", "xinfo", "commands", "reply",
                                                             "changes", "delivery")]


def package_of(module: str) -> str:
    """The package of LAYERS that `module` is in: the longest that names it or a parent of it."""
    parts = module.split(".")
    return next(".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in PACKAGE_LAYER)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(name: str) -> bool:
    return (ROOT / Path(*name.split(".")) / "__init__.py").exists()


def is_module(name: str) -> bool:
    path = ROOT / Path(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imported_modules(node: ast.Import | ast.ImportFrom, importer: str) -> list[str]:
    """The modules an import statement loads (`from . import api` loads rdbspec.read.dumpfile)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = importer.split(".") if is_package(importer) else importer.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [f"{target}.{a.name}" if is_module(f"{target}.{a.name}") else target for a in node.names
            if not is_compiled(f"{target}.{a.name}")]


def is_compiled(name: str) -> bool:
    """A hand-written Cython module (`from . import _jsonl_encode`): a leaf, importing nothing of
    rdbspec when it runs (its cimports are read when it is compiled)."""
    return (ROOT / Path(*name.split("."))).with_suffix(".pyx").exists()


def imports_of(path: Path) -> tuple[set[str], list[str], set[str]]:
    """(rdbspec modules imported at module level or deferred as `DEFERRED` allows, the other
    rdbspec imports inside a function or class body as `line: module`, the deferred ones)."""
    name = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    top: set[str] = set()
    nested: list[str] = []
    deferred: set[str] = set()

    def visit(node: ast.AST, in_body: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in imported_modules(child, name):
                    if target == "rdbspec" or target.startswith("rdbspec."):
                        if in_body and (name, target) not in DEFERRED:
                            nested.append(f"{child.lineno}: {target}")
                            continue
                        top.add(target)
                        if in_body:
                            deferred.add(target)
            inner = in_body or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            visit(child, inner)

    visit(tree, False)
    return top, nested, deferred


SOURCES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {module_name(path): imports_of(path)[0] for path in SOURCES}


LAYER_OF = {module: PACKAGE_LAYER[package_of(module)] for module in GRAPH}


def test_every_package_has_a_layer() -> None:
    packages = {module_name(path.parent) for path in PACKAGE.rglob("__init__.py")}
    assert sorted(packages - set(PACKAGE_LAYER)) == [], "add the new package to LAYERS (and to docs/architecture.md)"
    assert sorted(set(PACKAGE_LAYER) - set(GRAPH)) == [], "LAYERS names a package or module that does not exist"


def test_every_package_is_installed() -> None:
    """pyproject.toml names each package a wheel ships: a package left out installs without it."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {module_name(path.parent) for path in PACKAGE.rglob("__init__.py")}
    assert sorted(packages - listed) == []


def test_no_import_cycle_between_packages() -> None:
    """Packages of one layer may import each other, one way only."""
    edges = {(package_of(module), package_of(target)) for module, targets in GRAPH.items() for target in targets}
    edges = {(a, b) for a, b in edges if a != b}
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_down(path: Path) -> None:
    name = module_name(path)
    upward = [f"{target} ({LAYERS[LAYER_OF[target]][0]})" for target in sorted(GRAPH[name])
              if LAYER_OF[target] > LAYER_OF[name]]
    assert upward == [], f"{name} ({LAYERS[LAYER_OF[name]][0]}) imports from a layer above it"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_inside_a_function(path: Path) -> None:
    assert imports_of(path)[1] == [], "import rdbspec modules at module level; a loop is solved by moving code down"


def test_every_deferred_import_is_made() -> None:
    """DEFERRED lists no import that the code no longer defers."""
    deferred = {(module_name(path), target) for path in SOURCES for target in imports_of(path)[2]}
    assert sorted(DEFERRED - deferred) == []


def test_the_command_line_starts_without_spark() -> None:
    """`rdbspec` imports no pyspark until `pipeline` runs, and runs without it installed (an
    import of pyspark fails): `info` answers, `pipeline` says what to install (exit 69)."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, rdbspec.cli, rdbspec.spark, rdbspec.cli.pipeline; "
                             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow')))"],
                            capture_output=True, text=True, check=True).stdout
    assert loaded == "[]\n"
    without = ("import sys; sys.modules['pyspark'] = None; from rdbspec.cli import main; "
               "sys.exit(main(sys.argv[1:]))")
    sample = str(ROOT / "examples" / "sample.rdb")
    info = subprocess.run([sys.executable, "-c", without, "info", sample], capture_output=True, text=True)
    assert info.returncode == 0 and "keys" in info.stdout, info.stderr
    pipeline = subprocess.run([sys.executable, "-c", without, "pipeline", sample, "--out", "unused"],
                              capture_output=True, text=True)
    assert (pipeline.returncode, pipeline.stdout) == (69, "")
    assert pipeline.stderr == ("rdbspec pipeline: needs the spark extra, pyspark is not installed: "
                               "pip install 'rdbspec[spark]'\n")


def test_stream_command_modules_import_earlier_ones() -> None:
    for index, module in enumerate(STREAM_COMMANDS):
        later = sorted(GRAPH[module] & set(STREAM_COMMANDS[index:]))
        assert later == [], f"{module} imports a stream command module that comes after it"


def test_no_import_cycle() -> None:
    """Within a layer too: no module reaches itself through module-level imports."""
    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(GRAPH[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(GRAPH.get(module, ()))
        return seen

    assert sorted(m for m in GRAPH if m in reaches(m)) == []


def test_generated_parsers_import_nothing_of_rdbspec() -> None:
    for path in sorted((ROOT / "generated").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "rdbspec" for a in node.names), path
            elif isinstance(node, ast.ImportFrom) and not node.level:
                assert (node.module or "").split(".")[0] != "rdbspec", path


def test_stream_rules_load_without_the_command_line() -> None:
    """A writer of streams applies the same ID rules and error texts: importing them loads no
    command-line module."""
    code = ("import sys, rdbspec.server.streams, rdbspec.stream_commands.commands; "
            "print(sorted(m for m in sys.modules if m.startswith('rdbspec')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'rdbspec.server.streams'" in loaded
    assert [m for m in sorted(GRAPH) if package_of(m) == "rdbspec.cli" and repr(m) in loaded] == []


def test_every_error_derives_from_the_one_base() -> None:
    """Each exception class rdbspec and its generated parsers define is an `RdbspecError`
    (the tree `rdbspec.errors` draws), so that `except rdbspec.RdbspecError` catches them all."""
    import importlib
    import pkgutil

    import rdbspec_generated

    import rdbspec
    from rdbspec.errors import RdbspecError

    defined = {}
    for package in (rdbspec, rdbspec_generated):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            defined |= {f"{info.name}.{name}": cls for name, cls in vars(module).items()
                        if isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == info.name}
    assert len(defined) >= 18  # those errors.py draws
    assert sorted(name for name, cls in defined.items() if not issubclass(cls, RdbspecError)) == []
    assert rdbspec.RdbspecError is RdbspecError


# names whose values are the spec's record kinds, value types, blob kinds, containers...
ENUM_VALUED = {"kind", "opcode", "value_kind", "rdb_type", "type_code", "container", "when", "blob_kind"}


def _enum_valued(node: ast.AST) -> bool:
    """`kind`, `record.value_kind`, `node.container.value`...: an expression holding a spec enum's number."""
    while isinstance(node, ast.Attribute):
        if node.attr in ENUM_VALUED:
            return True
        node = node.value
    return isinstance(node, ast.Name) and node.id in ENUM_VALUED


def _numbers(node: ast.AST) -> bool:
    """An int literal, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and bool(node.elts) and all(map(_numbers, node.elts))


def test_no_format_number_is_written_by_hand() -> None:
    """The spec's enums (`rdbspec_generated.enums`) are the one source of record kinds, value
    types and encodings: no hand-written module compares a value of one with a number, or
    defines a constant of an enum member's name as its number."""
    from rdbspec_generated import enums

    members = {member.name: int(member) for enum in vars(enums).values()
               if isinstance(enum, type) and issubclass(enum, enums.IntEnum) and enum is not enums.IntEnum
               for member in enum}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(map(_enum_valued, operands)) and any(map(_numbers, operands)):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        for node in tree.body:
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for name, value in zip(names, values):
                    if (isinstance(name, ast.Name) and name.id in members and isinstance(value, ast.Constant)
                            and value.value == members[name.id]):
                        found.append(f"{where}:{node.lineno}: {name.id} = {value.value}")
    assert found == []
