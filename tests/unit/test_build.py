"""The install without a C compiler: `pip install .` of a copy of the sources into a new venv
with CC=/bin/false (every compile fails, as where no compiler is found) succeeds, says so in one
notice line, installs no native module, and rdbspec runs the pure-Python parsers: `--version`
says so, `RDBSPEC_BACKEND=native` is one line and exit 69."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

from rdbspec.errors import EXIT_CODES

REPO = Path(__file__).resolve().parents[2]
BASIC = REPO / "tests" / "corpus" / "real" / "redis-7.0.15" / "stream_basic.rdb"
SOURCES = ("pyproject.toml", "setup.py", "README.md", "rdbspec", "generated")


def install_without_compiler(tmp_path: Path) -> tuple[Path, str]:
    """(the new venv's python, pip's verbose output)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        else:
            shutil.copy2(path, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {**os.environ, "CC": "/bin/false"}
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-v", "--no-deps",
                           str(src)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # rdbspec's dependencies: the test venv's site-packages as a plain path entry (its .pth files,
    # the editable install of this checkout among them, are not read from there)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python, done.stdout + done.stderr


def rdbspec_in(python: Path, cwd: Path, *args: str, backend: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RDBSPEC_BACKEND")}
    if backend is not None:
        env["RDBSPEC_BACKEND"] = backend
    return subprocess.run([str(python), "-m", "rdbspec", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120, check=False)


def test_install_without_a_compiler_uses_the_python_parsers(tmp_path: Path) -> None:
    python, log = install_without_compiler(tmp_path)
    notices = [line.strip() for line in log.splitlines() if "rdbspec: notice:" in line]
    assert len(notices) == 1, notices
    assert "the native backend was not built" in notices[0] and "pure-Python parsers are used" in notices[0]
    site = python.parent.parent / "lib"
    assert list(site.rglob("rdbspec_generated/native/*.so")) == []
    assert list(site.rglob("rdbspec_generated/rdb.py")) != []

    version = rdbspec_in(python, tmp_path, "--version")
    assert version.returncode == 0
    assert version.stdout.endswith("(python backend; the native one is not built)\n"), version.stdout

    info = rdbspec_in(python, tmp_path, "info", "--json", str(BASIC))
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["backend"] == "python"
    assert rdbspec_in(python, tmp_path, "--version", backend="python").stdout.endswith("(python backend)\n")

    native = rdbspec_in(python, tmp_path, "info", str(BASIC), backend="native")
    assert native.returncode == EXIT_CODES["unavailable"] == 69
    assert native.stdout == ""
    assert native.stderr.startswith("rdbspec: RDBSPEC_BACKEND=native but the native backend is not built (")
    assert native.stderr.count("\n") == 1


def test_the_sdist_holds_the_native_sources(tmp_path: Path) -> None:
    """An install from the source distribution builds the native backend: setup.py compiles the
    .pyx files it finds, so the sdist ships them with the .pxd and .h files they need (and not
    Cython's .c output, which is rebuilt)."""
    done = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (archive,) = tmp_path.glob("rdbspec-*.tar.gz")
    with tarfile.open(archive) as tar:
        shipped = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    needed = {str(p.relative_to(REPO)) for folder in ("generated/native", "rdbspec")
              for pattern in ("*.pyx", "*.pxd", "*.h") for p in (REPO / folder).rglob(pattern)}
    assert len(needed) > 30
    assert needed <= shipped, sorted(needed - shipped)
    assert not [name for name in shipped if name.endswith(".c")]
