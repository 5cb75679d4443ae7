"""`python -m generator SPEC_DIR OUT_DIR DOCS_DIR`: compiles every spec, rewrites both folders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .cython.render import render_native
from .docs import render_docs
from .load import SpecError, load_tree
from .model import Builder
from .python.render import render_all


def write_tree(folder: Path, files: dict[str, str], *patterns: str) -> None:
    """Replaces the generated files in `folder` so that stale ones disappear too."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in (old for pattern in patterns for old in folder.glob(pattern)):
        if old.name not in files:
            old.unlink()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m generator SPEC_DIR OUT_DIR DOCS_DIR", file=sys.stderr)
        return 2
    spec_dir, out_dir, docs_dir = (Path(a) for a in argv)
    try:
        builder = Builder(load_tree(spec_dir))
        roots = builder.build()
        modules = render_all(builder, roots)
        docs = render_docs(roots)
        native = render_native(builder, roots)
    except SpecError as err:
        print(f"generator: {err}", file=sys.stderr)
        return 1
    write_tree(out_dir, {**modules, "py.typed": ""}, "*.py")  # PEP 561: the package's annotations are for checkers
    write_tree(out_dir / "native", native, "*.py", "*.pyx", "*.pxd")
    write_tree(docs_dir, docs, "*.md")
    # one formatting pass, so the output reads like hand-written code and is stable
    subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(out_dir)], check=True)
    print(f"generator: {len(roots)} specs → {out_dir}/ (and native/), {docs_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
