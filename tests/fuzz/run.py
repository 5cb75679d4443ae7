"""Coverage-guided fuzzing of rdbspec with atheris (libFuzzer): `make fuzz`, and the fixed-seed pass of
`make test` (tests/unit/test_fuzz_pass.py).

    python -m tests.fuzz.run fuzz --target read --backend native --seconds 60
    python -m tests.fuzz.run merge --target read

`fuzz` runs one target (tests/fuzz/targets.py: `read`, `write`) with one backend in a child
process (`child`, below), from the committed corpus (tests/fuzz/corpus/<target>/, where libFuzzer
adds what reaches new coverage) and the seeds (`targets.seeds`, made anew for each run in a
directory of its own under build/fuzz: runs at once do not share one). The
child is the fuzzer; this process reads its output, adds a row to tests/fuzz/runs.tsv (when, the
target and backend, seconds, inputs executed, `cov:` and `ft:` at the end, the corpus, the crash
if any) and copies a crash into tests/fuzz/crashes/ as a regression fixture: it stays there,
replayed by tests/unit/test_fuzz_crashes.py, which fails until the bug is fixed and the fixture
has its note in tests/fuzz/crashes/README.md.

A crash is an exception other than `RdbError` (and for `write`, `WriteError` and `UnwritableError`),
an input running longer than `TIMEOUT_S`, or memory past `RSS_LIMIT_MB` (libFuzzer's -timeout,
-rss_limit_mb and -malloc_limit_mb); with the native backend also any report of AddressSanitizer
or UndefinedBehaviorSanitizer (each aborts the child).

Coverage: atheris instruments the Python bytecode of rdbspec and rdbspec_generated (every
module of both is imported at start, under `atheris.instrument_imports`): with the Python backend
that is every parser; with the native one, the layers above the parsers. The native backend is
built into build/fuzz/lib by `make fuzz`, as `make test-asan` builds it (gcc's AddressSanitizer
and UndefinedBehaviorSanitizer, libasan and libubsan preloaded), with gcc's
-fsanitize-coverage=trace-pc,trace-cmp: tests/fuzz/native_coverage.c, preloaded first, turns the
basic blocks gcc reports into counters libFuzzer reads, and passes the comparisons on to it. It
also stands between atheris and libasan: atheris's core module registers its Python counters
through its PLT, where the preloaded libasan's weak no-op `__sanitizer_cov_8bit_counters_init`
would take the call, and the Python coverage would be lost without a word (atheris's warning
"Coverage symbols are being provided by a library other than libFuzzer" names the coverage
library instead, which forwards them).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "fuzz"
CORPUS = HERE / "corpus"
CRASHES = HERE / "crashes"
LEDGER = HERE / "runs.tsv"
BUILD = ROOT / "build" / "fuzz"
NATIVE_LIB = BUILD / "lib"  # the native backend with the sanitizers and gcc's coverage (make fuzz)
SHIM = BUILD / "native_coverage.so"  # tests/fuzz/native_coverage.c, compiled by make fuzz
TIMEOUT_S = 10
RSS_LIMIT_MB = {"python": 2048, "native": 4096}  # ASan's shadow memory and quarantine count in the RSS
LEDGER_COLUMNS = ("finished", "target", "backend", "seconds", "execs", "cov", "ft", "corpus", "native_edges", "crash")
# libFuzzer's status lines ("#1234 NEW cov: 567 ft: 890 corp: 12/3456b ...") and final figures
STATUS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
EXECS = re.compile(r"^stat::number_of_executed_units: (\d+)")
NATIVE_EDGES = re.compile(r"^rdbspec-fuzz: native edges: (\d+)")
CRASH = re.compile(r"^(?:artifact_prefix=.*; )?Test unit written to (\S+)")


# -- the child: the fuzzer ---------------------------------------------------------------------


# the packages whose modules the targets run: every one is imported at start (`instrumented_modules`)
INSTRUMENTED = ("rdbspec_generated", "rdbspec.read", "rdbspec.write", "rdbspec.server")


def instrumented_modules() -> None:
    """Imports rdbspec and every module of `INSTRUMENTED` under atheris's bytecode instrumentation
    (a module imported later, on first use, would run uninstrumented). The compiled modules of
    the native backend have nothing to instrument."""
    import atheris

    with atheris.instrument_imports(include=["rdbspec", "rdbspec_generated"]):
        importlib.import_module("rdbspec")
        for package_name in INSTRUMENTED:
            package = importlib.import_module(package_name)
            for module in pkgutil.walk_packages(package.__path__, f"{package_name}."):
                if not module.name.startswith("rdbspec_generated.native"):
                    importlib.import_module(module.name)


class NativeCoverage:
    """tests/fuzz/native_coverage.c, preloaded: bound to the libFuzzer atheris loads (its core
    module, loaded by `atheris.Fuzz`) when the first input comes."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(str(SHIM), mode=ctypes.RTLD_GLOBAL)
        self.lib.fuzz_bind.argtypes = [ctypes.c_char_p]
        self.bound = False

    def bind(self) -> None:
        maps = Path("/proc/self/maps").read_text()
        found = re.search(r"(/\S+/atheris/core_with_libfuzzer[^/\s]*\.so)", maps)
        if found is None or self.lib.fuzz_bind(found.group(1).encode()) != 0:
            raise SystemExit("rdbspec-fuzz: atheris's libFuzzer (core_with_libfuzzer) is not loaded")
        self.bound = True


def child(target: str, libfuzzer_args: list[str]) -> None:
    import atheris

    instrumented_modules()
    from rdbspec.read import backend
    from tests.fuzz import targets

    coverage = NativeCoverage() if os.environ.get("LD_PRELOAD", "").startswith(str(SHIM)) else None
    run = targets.TARGETS[target](targets.Scratch())

    def test_one_input(data: bytes) -> None:
        if coverage is not None and not coverage.bound:
            coverage.bind()
        run(data)

    print(f"rdbspec-fuzz: target {target}, backend {backend.name()}, native coverage "
          f"{'on' if coverage else 'off'}", file=sys.stderr, flush=True)
    atheris.Setup([str(child_script(target)), *libfuzzer_args], test_one_input)
    atheris.Fuzz()


# -- the launcher ------------------------------------------------------------------------------


def sanitizer_libs() -> list[str]:
    """gcc's libasan and libubsan, as the Makefile's ASAN_ENV preloads them."""
    return [subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=True)
            .stdout.strip() for name in ("libasan.so", "libubsan.so")]


def child_env(backend: str, sanitized: bool = True) -> dict[str, str]:
    """The fuzzer's environment: with the native backend and `sanitized`, the build of `make fuzz`
    (build/fuzz/lib, the sanitizers and the coverage library preloaded); else the installed one."""
    env = dict(os.environ, RDBSPEC_BACKEND=backend, PYTHONDONTWRITEBYTECODE="1")
    path = [str(ROOT)]
    if backend == "native" and sanitized:
        if not (NATIVE_LIB.is_dir() and SHIM.is_file()):
            raise SystemExit(f"{NATIVE_LIB} or {SHIM} is missing: `make fuzz` builds them")
        path.insert(0, str(NATIVE_LIB))
        env["LD_PRELOAD"] = " ".join([str(SHIM), *sanitizer_libs()])
        # the coverage library comes before libasan, whose no-op __sanitizer_cov_* it stands in for
        # malloc_context_size: ASan records each allocation's stack in its depot, a fifth of the time
        # of a run at the default 30 frames; a crash kept is replayed by `make test-asan` in full
        env["ASAN_OPTIONS"] = ("detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:verify_asan_link_order=0:"
                               "malloc_context_size=2")
        env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def child_script(target: str) -> Path:
    """The fuzzer of `target` as a program that takes libFuzzer's arguments alone, which libFuzzer
    runs again itself for -merge (and atheris's `Setup` names as the program)."""
    script = BUILD / f"fuzz-{target}"
    # -P: the source tree is not put before PYTHONPATH (the native build's lib comes first there)
    text = f'#!/bin/sh\nexec "{sys.executable}" -P -m tests.fuzz.run child --target {target} -- "$@"\n'
    if not script.is_file() or script.read_text() != text:
        BUILD.mkdir(parents=True, exist_ok=True)
        script.write_text(text)
        script.chmod(0o755)
    return script


def child_command(target: str, libfuzzer_args: list[str]) -> list[str]:
    return [str(child_script(target)), *libfuzzer_args]


def limits(backend: str) -> list[str]:
    from tests.fuzz.targets import MAX_LEN

    return [f"-max_len={MAX_LEN}", f"-timeout={TIMEOUT_S}", f"-rss_limit_mb={RSS_LIMIT_MB[backend]}",
            f"-malloc_limit_mb={RSS_LIMIT_MB[backend]}"]


def make_seeds(directory: Path) -> Path:
    from tests.fuzz.targets import write_seeds

    write_seeds(directory)
    return directory


@contextlib.contextmanager
def run_seeds() -> Iterator[Path]:
    """The seeds, made in a temporary directory of build/fuzz for one run (removed after it)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="seeds-", dir=BUILD) as directory:
        yield make_seeds(Path(directory))


def run_child(command: list[str], env: dict[str, str], log: Path) -> tuple[int, dict[str, object]]:
    """Runs the fuzzer, its output to the terminal and to `log`; its return code and what its
    output said (the last status line's figures, the executions, the crash file)."""
    seen: dict[str, object] = {}
    with open(log, "w") as out, subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            if not line.startswith("#") or " NEW " in line or "pulse" in line or "DONE" in line:
                sys.stderr.write(line)
            if m := STATUS.match(line):
                seen.update(execs=int(m[1]), cov=int(m[2]), ft=int(m[3]), corpus=int(m[4]))
            elif m := EXECS.match(line):
                seen["execs"] = int(m[1])
            elif m := NATIVE_EDGES.match(line):
                seen["native_edges"] = int(m[1])
            elif m := CRASH.search(line):
                seen["crash"] = m[1]
    return proc.returncode, seen


def fuzz(target: str, backend: str, seconds: int | None, runs: int | None, seed: int | None) -> int:
    corpus = CORPUS / target
    corpus.mkdir(parents=True, exist_ok=True)
    crashes = BUILD / "crashes" / f"{target}-{backend}"
    crashes.mkdir(parents=True, exist_ok=True)
    # -entropic=0: libFuzzer's entropic schedule updates a frequency for every feature an input
    # reaches, and an input of the native backend reaches tens of thousands (its basic blocks
    # under the sanitizers): that took over half of each run, the plain schedule a fraction
    options = [*limits(backend), f"-artifact_prefix={crashes}/", "-print_final_stats=1", "-reload=0", "-entropic=0"]
    if seconds is not None:
        options.append(f"-max_total_time={seconds}")
    if runs is not None:
        options.append(f"-runs={runs}")
    if seed is not None:
        options.append(f"-seed={seed}")
    started = datetime.datetime.now(datetime.timezone.utc)
    with run_seeds() as seeds:
        args = [str(corpus), str(seeds), *options]
        code, seen = run_child(child_command(target, args), child_env(backend), BUILD / f"{target}-{backend}.log")
    elapsed = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
    crash = seen.get("crash")
    fixture = None
    if crash is not None:
        fixture = keep_crash(Path(str(crash)), target)
        print(f"rdbspec-fuzz: crash kept as {fixture.relative_to(ROOT)}: fix it, then note it in "
              f"{(CRASHES / 'README.md').relative_to(ROOT)}", file=sys.stderr)
    if "execs" in seen:  # the fuzzer started
        row = {"finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "target": target, "backend": backend, "seconds": round(elapsed), **seen,
               "crash": fixture.name if fixture else ""}
        add_row(row)
    return code


def keep_crash(artifact: Path, target: str) -> Path:
    """A crash file as a regression fixture: tests/fuzz/crashes/<target>-<its hash>, the kind of
    crash before the hash when it is no exception or sanitizer report ("timeout-", "oom-")."""
    CRASHES.mkdir(exist_ok=True)
    fixture = CRASHES / f"{target}-{artifact.name.removeprefix('crash-')}"
    shutil.copyfile(artifact, fixture)
    return fixture


def add_row(row: dict[str, object]) -> None:
    new = not LEDGER.exists()
    with open(LEDGER, "a") as out:
        if new:
            out.write("\t".join(LEDGER_COLUMNS) + "\n")
        out.write("\t".join(str(row.get(column, "")) for column in LEDGER_COLUMNS) + "\n")


def totals() -> dict[str, dict[str, int]]:
    """Inputs executed per backend over every run of the ledger, and the most `cov:` and `ft:` seen."""
    out: dict[str, dict[str, int]] = {}
    if not LEDGER.exists():
        return out
    lines = LEDGER.read_text().splitlines()
    for line in lines[1:]:
        row = dict(zip(LEDGER_COLUMNS, line.split("\t")))
        each = out.setdefault(row["backend"], {"execs": 0, "runs": 0})
        each["execs"] += int(row["execs"] or 0)
        each["runs"] += 1
        for column in ("cov", "ft", "native_edges"):
            if row[column]:
                each[f"max_{column}"] = max(each.get(f"max_{column}", 0), int(row[column]))
    return out


def merge(target: str) -> int:
    """The corpus of `target` cut down to the inputs that keep its coverage, from the corpus and
    the seeds: libFuzzer's -merge=1 under the Python backend, then under the native one, which
    adds the inputs that reach native basic blocks the first kept does not (blocks, not edges:
    tests/fuzz/native_coverage.c). An input is kept for a counter it reaches, not for how often
    (-use_counters=0): the corpus stays small."""
    corpus = CORPUS / target
    merged = BUILD / "merged" / target
    shutil.rmtree(merged, ignore_errors=True)
    merged.mkdir(parents=True)
    with run_seeds() as seed_dir:
        for backend in ("python", "native"):
            control = BUILD / f"merge-{target}-{backend}.txt"
            control.unlink(missing_ok=True)  # a control file left by a merge that stopped would be resumed
            args = ["-merge=1", "-use_counters=0", str(merged), str(corpus), str(seed_dir), *limits(backend),
                    f"-merge_control_file={control}"]
            env = dict(child_env(backend), RDBSPEC_FUZZ_BLOCKS="1")
            code, _ = run_child(child_command(target, args), env, BUILD / f"merge-{target}-{backend}.log")
            if code != 0:
                return code
        seeds = {path.read_bytes() for path in seed_dir.iterdir() if path.is_file()}
    for old in corpus.iterdir():
        old.unlink()
    for path in merged.iterdir():
        if path.read_bytes() not in seeds:  # the seeds are made at each run: not kept twice
            shutil.copyfile(path, corpus / path.name)
    print(f"rdbspec-fuzz: {target} corpus: {len(list(corpus.iterdir()))} inputs", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run")
    commands = parser.add_subparsers(dest="command", required=True)
    fuzzing = commands.add_parser("fuzz", help="fuzz one target with one backend")
    fuzzing.add_argument("--target", choices=("read", "write"), required=True)
    fuzzing.add_argument("--backend", choices=("python", "native"), required=True)
    fuzzing.add_argument("--seconds", type=int)
    fuzzing.add_argument("--runs", type=int)
    fuzzing.add_argument("--seed", type=int)
    merging = commands.add_parser("merge", help="cut a target's corpus down to what keeps its coverage")
    merging.add_argument("--target", choices=("read", "write"), required=True)
    commands.add_parser("totals", help="inputs executed per backend over all runs (tests/fuzz/runs.tsv)")
    inner = commands.add_parser("child", help="the fuzzer itself (started by `fuzz` and `merge`)")
    inner.add_argument("--target", choices=("read", "write"), required=True)
    inner.add_argument("libfuzzer_args", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "child":
        child(args.target, args.libfuzzer_args)
        return 0
    if args.command == "fuzz":
        return fuzz(args.target, args.backend, args.seconds, args.runs, args.seed)
    if args.command == "merge":
        return merge(args.target)
    print(json.dumps(totals(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
