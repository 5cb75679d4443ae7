"""A local package index for pip (a folder of wheels for ``pip install --no-index --find-links``),
made of what this virtual environment has installed, so that a test can run ``pip install rdbspec
pyarrow`` as a user would, offline and in seconds.

Each wheel holds a distribution's installed files as its RECORD lists them (less the compiled
bytecode and the scripts, which pip makes again from the entry points). rdbspec itself is
installed here in editable mode: its wheel is made from the source tree as `pip wheel` would
make it (pyproject.toml: the ``rdbspec`` and ``rdbspec_generated`` packages, less the C sources
and Cython's HTML pages), with the native backend the editable install compiled in place, so
nothing is compiled again (a real build takes minutes).

    export PIP_NO_INDEX=1 PIP_FIND_LINKS=<the folder>   # then `pip install rdbspec pyarrow`
"""

from __future__ import annotations

import base64
import hashlib
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the folders of the source tree installed as packages (pyproject.toml's package-dir)
PROJECT_PACKAGES = {"rdbspec": REPO / "rdbspec", "rdbspec_generated": REPO / "generated"}
NOT_SHIPPED = (".c", ".html", ".pyc")  # pyproject.toml's exclude-package-data, and bytecode
DIST_INFO_REMADE = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")  # pip writes these at install


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel_tag(dist: metadata.Distribution) -> str:
    """The tag of the wheel the distribution was installed from (its last, the most specific)."""
    return [line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
            if line.startswith("Tag:")][-1]


def _this_python_tag() -> str:
    """The tag of a wheel with compiled modules for this Python: cp311-cp311-linux_x86_64."""
    version = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{version}-{version}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def _write(path: Path, files: Iterator[tuple[str, bytes]], dist_info: str) -> Path:
    """A wheel of `files` (name in the wheel, bytes) with its RECORD. Stored, not deflated:
    pip unpacks it once, on this machine."""
    record = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as wheel:
        for name, data in files:
            wheel.writestr(name, data)
            record.append(f"{name},{_digest(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return path


def installed_wheel(name: str, folder: Path) -> Path:
    """A wheel of the installed distribution `name`, from the files its RECORD lists."""
    dist = metadata.distribution(name)
    dist_info = next(str(f.parent) for f in dist.files or () if f.name == "METADATA")

    def files() -> Iterator[tuple[str, bytes]]:
        for f in dist.files or ():
            text = str(f)
            if text.startswith("..") or "__pycache__" in f.parts or text.endswith(NOT_SHIPPED):
                continue
            if f.parent.name == Path(dist_info).name and f.name in DIST_INFO_REMADE:
                continue
            yield text, Path(str(dist.locate_file(f))).read_bytes()

    stem = f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}"
    return _write(folder / f"{stem}-{_wheel_tag(dist)}.whl", files(), dist_info)


def _with_requirements(dist: metadata.Distribution) -> str:
    """The distribution's metadata as a wheel's METADATA holds it: an egg-info's PKG-INFO (the
    source tree's, first on the path in the tests) keeps its requirements in requires.txt, which
    a wheel states as Requires-Dist headers."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    if "\nRequires-Dist:" in text:
        return text
    headers, blank, body = text.partition("\n\n")
    requires = "".join(f"\nRequires-Dist: {r}" for r in dist.requires or ())
    return headers + requires + blank + body


def project_wheel(folder: Path) -> Path:
    """rdbspec's wheel from the source tree and its in-place native backend; its metadata is the
    editable install's (or the source tree's egg-info, which has the same)."""
    dist = metadata.distribution("rdbspec")
    dist_info = f"rdbspec-{dist.version}.dist-info"
    tag = _this_python_tag()

    def files() -> Iterator[tuple[str, bytes]]:
        for package, root in PROJECT_PACKAGES.items():
            for path in sorted(root.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(NOT_SHIPPED):
                    yield f"{package}/{path.relative_to(root).as_posix()}", path.read_bytes()
        yield f"{dist_info}/METADATA", _with_requirements(dist).encode()
        yield f"{dist_info}/entry_points.txt", (dist.read_text("entry_points.txt") or "").encode()
        wheel = f"Wheel-Version: 1.0\nGenerator: tests/support/wheelhouse.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
        yield f"{dist_info}/WHEEL", wheel.encode()

    return _write(folder / f"rdbspec-{dist.version}-{tag}.whl", files(), dist_info)


def build(folder: Path, distributions: tuple[str, ...]) -> Path:
    """`folder` holding rdbspec's wheel, the wheels of its dependencies and of `distributions`."""
    folder.mkdir(parents=True, exist_ok=True)
    project_wheel(folder)
    for requirement in metadata.requires("rdbspec") or ():
        if "extra ==" not in requirement:
            installed_wheel(_name(requirement), folder)
    for name in distributions:
        installed_wheel(name, folder)
    return folder


def _name(requirement: str) -> str:
    """The distribution a requirement names ("lz4>=4.3" -> "lz4")."""
    end = next((i for i, c in enumerate(requirement) if c in " ;<>=!~[("), len(requirement))
    return requirement[:end]
