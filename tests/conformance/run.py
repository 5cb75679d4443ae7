"""Cross-implementation conformance: every golden fixture through four parsers.

    python tests/conformance/run.py [--min-fixtures 60] [-k SUBSTRING]

(a) ours: rdbspec_generated (generated/);
(a') ours-native: rdbspec_generated.native (generated/native/, compiled with Cython);
(b) kaitai-python: the official compiler's Python output on the kaitaistruct runtime;
(c) kaitai-javascript: the official compiler's JavaScript output under node (run_js.js).

Every spec/*.ksy is compiled first with the official compiler (ksc.js) to build/conformance/.
Exits non-zero on any compile failure, any fixture failure, or too few fixtures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden import (  # noqa: E402
    GOLDEN_DIR,
    REPO,
    SPEC_DIR,
    Fixture,
    FixtureError,
    JsonAccessor,
    KaitaiPython,
    SpecInfo,
    expected_to_json,
    fixture_names,
    import_ours,
    load_fixture,
    load_spec_info,
    match,
    run_ours,
)

HERE = Path(__file__).resolve().parent
IMPLS = ("ours", "ours-native", "kaitai-python", "kaitai-javascript")


def compile_specs(lang: str, specs: list[Path], outdir: Path) -> list[str]:
    """Compile with the official compiler; return one message per spec that failed."""
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    if not specs:
        return []
    proc = subprocess.run(
        ["node", str(HERE / "ksc.js"), lang, str(outdir), *map(str, specs)],
        capture_output=True,
        text=True,
    )
    failures = [line[len("FAIL ") :] for line in proc.stderr.splitlines() if line.startswith("FAIL ")]
    if proc.returncode != 0 and not failures:
        failures.append(f"ksc.js exited {proc.returncode}: {proc.stderr.strip() or proc.stdout.strip()}")
    return [f"{lang}: {f}" for f in failures]


def run_javascript(fixtures: list[Fixture], build_dir: Path, info: SpecInfo) -> dict[str, list[str]]:
    """Implementation (c): one node process for all fixtures; returns failures per fixture."""
    job = {
        "build": str(build_dir),
        "scalars": info.scalars,
        "params": info.params,
        "fixtures": [
            {
                "name": fx.name,
                "root": fx.root,
                "params": expected_to_json(info.resolve_params(fx.root, fx.params)),
                "data": fx.data.hex(),
                "expected": expected_to_json(fx.expected),
                "invalid": fx.is_invalid,
            }
            for fx in fixtures
        ],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(job, f)
        job_path = Path(f.name)
    try:
        proc = subprocess.run(
            ["node", str(HERE / "run_js.js"), str(job_path)], capture_output=True, text=True
        )
    finally:
        job_path.unlink()
    results: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        try:
            out = json.loads(line)
        except json.JSONDecodeError:
            continue
        results[out["name"]] = _judge_js(out, {fx.name: fx for fx in fixtures}[out["name"]])
    for fx in fixtures:
        if fx.name not in results:
            tail = proc.stderr.strip().splitlines()[-5:]
            results[fx.name] = [f"run_js.js produced no result (exit {proc.returncode}): {' | '.join(tail)}"]
    return results


def _judge_js(out: dict, fx: Fixture) -> list[str]:
    if "exception" in out:
        return [f"raised {out['exception']}"]
    if fx.is_invalid:
        return [] if out.get("raised") else ["expected an exception (invalid input), but parsed fine"]
    return match(fx.expected, out["actual"], "", JsonAccessor())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-fixtures", type=int, default=60, help="fail if fewer fixtures (default 60)")
    ap.add_argument("--golden", type=Path, default=GOLDEN_DIR)
    ap.add_argument("--spec", type=Path, default=SPEC_DIR)
    ap.add_argument("--build", type=Path, default=REPO / "build" / "conformance")
    ap.add_argument("-k", dest="pattern", default="", help="only fixtures whose name contains this")
    ap.add_argument("--only", choices=IMPLS, action="append", help="run only these implementations")
    args = ap.parse_args(argv)
    impls = args.only or list(IMPLS)
    ok = True

    specs = sorted(args.spec.glob("*.ksy"))
    compile_failures: list[str] = []
    for lang in ("python", "javascript"):
        compile_failures += compile_specs(lang, specs, args.build / lang)
    print(
        f"compiled {len(specs)} specs with the official compiler: "
        f"{'OK' if not compile_failures else f'{len(compile_failures)} failed'}"
    )
    for msg in compile_failures:
        print(f"COMPILE FAIL {msg}")
        ok = False

    names = [n for n in fixture_names(args.golden) if args.pattern in n]
    fixtures: list[Fixture] = []
    broken: dict[str, str] = {}
    for name in names:
        try:
            fixtures.append(load_fixture(name, args.golden))
        except FixtureError as exc:
            broken[name] = f"bad fixture: {exc}"
    info = load_spec_info(args.spec)

    results: dict[str, dict[str, list[str]]] = {}
    for fx in list(fixtures):
        try:
            info.resolve_params(fx.root, fx.params)
        except FixtureError as exc:
            broken[fx.name] = f"bad fixture: {fx.name}: {exc}"
            fixtures.remove(fx)
    if "ours" in impls:
        results["ours"] = _run_each(fixtures, _ours_runner(info))
    if "ours-native" in impls:
        results["ours-native"] = _run_each(fixtures, _ours_runner(info, "rdbspec_generated.native"))
    if "kaitai-python" in impls:
        kp = KaitaiPython(args.build / "python", info)
        results["kaitai-python"] = _run_each(fixtures, kp.run)
    if "kaitai-javascript" in impls:
        js_build = args.build / "javascript"
        results["kaitai-javascript"] = run_javascript(fixtures, js_build, info) if fixtures else {}

    for impl in impls:
        res = results[impl]
        for name in names:
            problems = [broken[name]] if name in broken else res.get(name, ["not run"])
            for p in problems:
                print(f"FAIL {impl} {name}: {p}")
    print()
    for impl in impls:
        res = results[impl]
        failed = len(broken) + sum(1 for fx in fixtures if res.get(fx.name))
        passed = len(names) - failed
        ok = ok and failed == 0
        print(f"{impl}: {passed} passed, {failed} failed")
    if len(names) < args.min_fixtures and not args.pattern:
        print(f"too few fixtures: {len(names)} < --min-fixtures {args.min_fixtures}")
        ok = False
    return 0 if ok else 1


def _ours_runner(info: SpecInfo, package: str = "rdbspec_generated") -> Callable[[Fixture], list[str]]:
    try:
        import_ours()
    except Exception as exc:
        msg = f"cannot import rdbspec_generated: {type(exc).__name__}: {exc}"
        return lambda fx: [msg]
    return lambda fx: run_ours(fx, info, package)


def _run_each(fixtures: list[Fixture], runner: Callable[[Fixture], list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for fx in fixtures:
        try:
            out[fx.name] = runner(fx)
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(tb.filename).name}:{tb.lineno}"
            out[fx.name] = [f"harness error {type(exc).__name__}: {exc} ({where})"]
    return out


if __name__ == "__main__":
    sys.exit(main())
