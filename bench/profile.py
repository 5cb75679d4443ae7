"""`python -m bench --profile`: cProfile of rdbspec's full decode of the stream dump."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from pathlib import Path

from .workloads import rdbspec_full

GENERATED = str(Path(__file__).resolve().parent.parent / "generated")


def profile(path: Path, top: int = 25) -> str:
    """Profiles one full decode of `path`; returns the report (top functions by cumulative and by
    total time, then the share of own time spent in generated/ and per generated module)."""
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    counted = rdbspec_full(str(path))
    prof.disable()
    wall = time.perf_counter() - t0
    out = io.StringIO()
    out.write(f"rdbspec full decode of {path} under cProfile: {wall:.2f} s wall, {counted}\n")
    stats = pstats.Stats(prof, stream=out)
    for key, title in (("cumulative", "cumulative time"), ("tottime", "total (own) time")):
        out.write(f"\n=== top {top} by {title} ===\n")
        stats.sort_stats(key).print_stats(top)
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in raw.values()) or 1.0
    by_module: dict[str, float] = {}
    for (filename, _, _), (_, _, tt, _, _) in raw.items():
        if filename.startswith(GENERATED):
            name = "generated/" + Path(filename).name
        elif "/rdbspec/" in filename:
            name = "rdbspec/" + Path(filename).name
        elif filename.startswith("~"):
            name = "builtins (C)"
        else:
            name = "other Python"
        by_module[name] = by_module.get(name, 0.0) + tt
    out.write("\n=== own time by module ===\n")
    for name, tt in sorted(by_module.items(), key=lambda kv: -kv[1]):
        out.write(f"{tt:8.3f} s  {100 * tt / total:5.1f}%  {name}\n")
    out.write("\n=== top generated functions by own time ===\n")
    gen = [((f, ln, fn), v) for (f, ln, fn), v in raw.items() if f.startswith(GENERATED)]
    gen.sort(key=lambda kv: -kv[1][2])
    for (f, ln, fn), (_, nc, tt, ct, _) in gen[:15]:
        out.write(f"{100 * tt / total:5.1f}% own {100 * ct / total:5.1f}% cum  {nc:>10,} calls  "
                  f"{Path(f).name}:{ln}({fn})\n")
    return out.getvalue()
