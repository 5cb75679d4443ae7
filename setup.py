"""Builds the native backend: every generated/native/*.pyx (package rdbspec_generated.native) and
any hand-written rdbspec/**/*.pyx, compiled by Cython and the machine's C compiler. The metadata
lives in pyproject.toml.

Where the C compiler or the Python headers are missing, or the compile fails, the install goes on
without the extensions: one notice line, and rdbspec runs the pure-Python parsers
(rdbspec/read/backend.py picks whichever is importable)."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
NOTICE = ("rdbspec: notice: the native backend was not built ({reason}); the pure-Python parsers are used "
          "(slower). A C compiler and the Python headers (e.g. apt install gcc python3-dev) build it.")


def module_name(pyx: Path) -> str:
    """The import name of a .pyx: generated/ is installed as the package rdbspec_generated."""
    parts = list(pyx.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "generated":
        parts[0] = "rdbspec_generated"
    return ".".join(parts)


def native_sources() -> list[Path]:
    return sorted([*(ROOT / "generated" / "native").glob("*.pyx"), *(ROOT / "rdbspec").rglob("*.pyx")])


def include_path() -> list[str]:
    """Where Cython finds the .pxd files a cimport names: `rdbspec_generated.native._readers` is
    generated/native/_readers.pxd, so a folder under build/ maps the package name onto generated/."""
    include = ROOT / "build" / "cython-include"
    link = include / "rdbspec_generated"
    if not link.is_symlink():
        include.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT / "generated", target_is_directory=True)
    return [str(include), str(ROOT)]


def extensions() -> list:
    """The Cython extensions; none where Cython itself cannot be imported (it is a build
    requirement, so only a build without isolation can miss it)."""
    sources = native_sources()
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError as err:
        print(NOTICE.format(reason=f"Cython is missing: {err}"), file=sys.stderr)
        return []
    modules = [Extension(module_name(p), [str(p.relative_to(ROOT))]) for p in sources]
    return cythonize(modules, compiler_directives={"language_level": 3}, include_path=include_path(), quiet=True,
                     nthreads=os.cpu_count() or 1)


class OptionalBuildExt(build_ext):
    """build_ext whose failure is not the install's: a native backend built in part would be
    neither backend, so on any failure the modules built so far are removed too. With
    RDBSPEC_REQUIRE_NATIVE=1 (the sanitizer build of `make test-asan`) a failure fails the build.
    The modules compile in parallel, one per core."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        headers = Path(sysconfig.get_paths()["include"], "Python.h")
        if self.extensions and not headers.is_file() and not os.environ.get("RDBSPEC_REQUIRE_NATIVE"):
            print(NOTICE.format(reason=f"the Python headers are missing: no {headers}"), file=sys.stderr)
            return
        try:
            super().run()
        except Exception as err:  # noqa: BLE001 - CompileError, LinkError, a missing compiler (OSError)...
            if os.environ.get("RDBSPEC_REQUIRE_NATIVE"):
                raise
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            if self.inplace or getattr(self, "editable_mode", False):
                for ext in self.extensions:
                    Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            reason = f"{type(err).__name__}: {' '.join(str(err).split())}"[:300]
            print(NOTICE.format(reason=reason), file=sys.stderr)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
