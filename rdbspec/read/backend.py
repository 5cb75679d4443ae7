"""Which generated parsers run: the pure-Python ones (`rdbspec_generated.<spec>`, the reference)
or the native ones compiled from the same specs by Cython (`rdbspec_generated.native.<spec>`, same
classes and API). Both share one runtime (`rdbspec_generated`: Io, the errors, `collecting`), so
only the parser modules are looked up here.

`RDBSPEC_BACKEND=python|native` picks one; unset, the native backend runs when it is built (the
install builds it where a C compiler and the Python headers are found) and the Python one
otherwise. `native` asked for but not built is a `BackendUnavailableError` (the CLI: one line,
exit 69). The choice is made on first use, so `import rdbspec` never fails because of it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from ..errors import RdbspecError

ENV = "RDBSPEC_BACKEND"
BACKENDS = ("python", "native")
PACKAGES = {"python": "rdbspec_generated", "native": "rdbspec_generated.native"}
_PROBE = "rdb"  # imports every other native parser module it uses

_chosen: str | None = None
_modules: dict[tuple[str, str], ModuleType] = {}


class BackendError(RdbspecError):
    """RDBSPEC_BACKEND names no backend (the CLI exits 2, a usage error)."""


class BackendUnavailableError(BackendError):
    """The native backend was asked for but is not built (the CLI exits 69)."""


def native_problem() -> str | None:
    """Why the native backend cannot be imported, None when it can."""
    try:
        importlib.import_module(f"{PACKAGES['native']}.{_PROBE}")
    except ImportError as err:
        return str(err)
    return None


def _resolve(requested: str | None) -> str:
    wanted = (requested or "").strip().lower()
    if wanted == "":
        return "native" if native_problem() is None else "python"
    if wanted not in BACKENDS:
        raise BackendError(f"{ENV}={requested!r} names no backend; use one of: {', '.join(BACKENDS)}")
    if wanted == "native" and (problem := native_problem()) is not None:
        raise BackendUnavailableError(
            f"{ENV}=native but the native backend is not built ({problem}); install rdbspec where a C compiler "
            f"and the Python headers are found (pip install ., make setup), or set {ENV}=python")
    return wanted


def select(requested: str | None) -> str:
    """Use `requested` ("python", "native"; None or "" = native when built) from now on in this
    process; returns the backend chosen. Raises `BackendError` / `BackendUnavailableError`."""
    global _chosen
    _chosen = _resolve(requested)
    return _chosen


def name() -> str:
    """The backend in use ("python" or "native"), chosen from RDBSPEC_BACKEND on first call."""
    return _chosen if _chosen is not None else select(os.environ.get(ENV))


def parser(spec: str, backend: str | None = None) -> ModuleType:
    """The generated parser module of `spec` (e.g. "rdb", "rdb_string") in `backend` ("python" or
    "native"; by default the backend in use)."""
    key = (backend or name(), spec)
    module = _modules.get(key)
    if module is None:
        module = _modules[key] = importlib.import_module(f"{PACKAGES[key[0]]}.{spec}")
    return module


def describe() -> str:
    """One line for `rdbspec --version`: the backend in use, or what is wrong with the choice."""
    try:
        chosen = name()
    except BackendError as err:
        return f"no backend: {err}"
    if chosen == "python" and not os.environ.get(ENV) and native_problem() is not None:
        return "python backend; the native one is not built"
    return f"{chosen} backend"
