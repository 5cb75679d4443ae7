"""The content mix's run and its report section (issue 26): `python -m bench --mix-only`, and part of
a plain `python -m bench`.

On each dump of the mix (bench/mix_content.py), as separate processes (runner.measure):

* `rdbspec dump FILE > /dev/null` against the JSON export of librdb's rdb-cli and HDT3213/rdb
  (peers.py), each timed ``--runs`` times (median, spread) with one more, untimed check run counting
  the keys and stream entries in its JSON; when `rdbspec dump --help` lists ``--jobs``, ``--jobs 1`` and
  ``--jobs 2`` are timed too, as rows of their own beside the command with its defaults;
* once each, for its peak RSS: `rdbspec keys FILE`, `keys FILE --memory`, `report FILE -o OUT`,
  `rewrite FILE -o OUT` and `info FILE` (outputs to /dev/null or a temporary directory).

rdbspec runs on the native backend when it is built (RDBSPEC_BACKEND set: the one a user gets). A run
past ``--timeout`` is killed and reported as a timeout, as in the main table.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .contenders import dump_contender, dump_help, rdbspec_argv, section_backend
from .datasets import Dataset, read_build_info
from .mix_content import MIX_FIELDS
from .peers import PEERS, peer_contenders
from .report import finished_stamp, mb, seconds
from .runner import Contender, Result, measure, warm_page_cache
from .targets import RSS_TARGET_MB

Log = Callable[[str], None]
HEADING = "## Content mix"

# rdbspec's other commands, run once each for their peak RSS: (name, command, arguments after FILE,
# file written under the run's temporary directory or None)
COMMANDS: list[tuple[str, str, tuple[str, ...], str | None]] = [
    ("rdbspec keys", "keys", (), None),
    ("rdbspec keys --memory", "keys", ("--memory",), None),
    ("rdbspec report", "report", ("-o",), "report.html"),
    ("rdbspec rewrite", "rewrite", ("-o",), "rewrite.rdb"),
    ("rdbspec info", "info", (), None),
]


@dataclass
class MixRun:
    """What one run of the mix measured, and how."""

    datasets: list[Dataset]
    dumps: list[str]  # rdbspec dump's rows (contender names), the plain one first
    peers: list[str]
    commands: list[str]
    results: dict[tuple[str, str], Result] = field(default_factory=dict)  # (contender, file) -> result
    notes: list[str] = field(default_factory=list)
    backend: str = "native"
    runs: int = 3
    timeout: float = 600.0
    argv: list[str] = field(default_factory=list)
    finished: str = ""  # when the run ended, with the load average then

    def get(self, contender: str, ds: Dataset) -> Result | None:
        return self.results.get((contender, ds.name))


def option_help(help_text: str, option: str) -> str | None:
    """An option's paragraph of --help, on one line, or None when the command has no such option."""
    block = re.search(rf"^\s+(?:-\w+(?: \w+)?, )?{re.escape(option)}\b.*?(?=^\s+-|\Z)", help_text, re.S | re.M)
    return " ".join(block.group(0).split()) if block else None


def dump_variants(help_text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(row name, arguments) of each `rdbspec dump` timed: the command with its defaults and, when it has
    --jobs, --jobs 1 and --jobs 2 (one of them the default, timed under its own name as well)."""
    jobs = [(f"rdbspec dump --jobs {n}", ("--jobs", n)) for n in ("1", "2")] if "--jobs" in help_text else []
    return [("rdbspec dump", ())] + jobs


def command_contenders(backend: str, workdir: Path) -> list[Contender]:
    """rdbspec's other commands as contenders (stdout to /dev/null, files into `workdir`)."""
    out = []
    for name, command, args, written in COMMANDS:
        full = (*args, str(workdir / written)) if written else args
        shown = " ".join(["python -m rdbspec", command, "FILE", *args, *(["OUT"] if written else [])])
        out.append(Contender(name, shown, rdbspec_argv(command, *full), backend=backend, discard_stdout=True))
    return out


def run(files: list[Dataset], runs: int, timeout: float, single_run_above: float, log: Log,
        memory_limit: int | None = None, argv: list[str] | None = None) -> MixRun:
    """Every contender of the mix on every file (a file at a time, its pages read first)."""
    backend, notes = section_backend()
    why, help_text = dump_help()
    variants = dump_variants(help_text) if why is None else []
    if why is not None:
        notes.append(f"rdbspec dump skipped: `python -m rdbspec dump` fails here ({why})")
    dumps = [dump_contender(name, backend, *args) for name, args in variants]
    peers, peer_notes = peer_contenders()
    notes += peer_notes
    jobs = option_help(help_text, "--jobs")
    if jobs is not None:
        notes.append(f"`rdbspec dump --help` says: `{jobs}`")
    got = MixRun(files, [c.name for c in dumps], [c.name for c in peers], [name for name, *_ in COMMANDS],
                 notes=notes, backend=backend, runs=runs, timeout=timeout, argv=argv or [])
    with tempfile.TemporaryDirectory(prefix="rdbspec-bench-mix-") as tmp:
        commands = command_contenders(backend, Path(tmp))
        for ds in files:
            warm_page_cache(ds.path)
            for contender, n in [(c, runs) for c in dumps + peers] + [(c, 1) for c in commands]:
                log(f"{contender.name} on {ds.name} ({contender.description})")
                got.results[(contender.name, ds.name)] = measure(contender, ds, n, timeout, single_run_above, log,
                                                                 memory_limit)
                for written in Path(tmp).iterdir():  # a rewrite of the big hash is as big as the dump
                    written.unlink()
    got.finished = finished_stamp()
    return got


# -- the report ---------------------------------------------------------------------------------


def wall_cell(r: Result | None) -> str:
    """Median and spread of a timed result, or what stopped it."""
    if r is None:
        return "—"
    if r.status != "ok":
        return r.status.upper()
    spread = f" ({seconds(r.spread)})" if r.spread is not None else ""
    return f"{seconds(r.median)}{spread}{' †' if r.invalid else ''}"


def ratio_cell(ours: Result | None, theirs: Result | None) -> str:
    if ours is None or theirs is None or not ours.valid or not theirs.valid or not ours.median or not theirs.median:
        return "—"
    return f"{ours.median / theirs.median:.2f}×"


def _over(r: Result) -> bool:
    return r.peak_kb / 1024 > RSS_TARGET_MB


def _peak(r: Result) -> str:
    return f"{mb(r.peak_kb)} MB" if r.status == "ok" else r.status.upper()


def rss_cell(r: Result | None, target: bool) -> str:
    """Peak RSS (the largest process's, and the tree's sum when larger) and the (median) wall of its runs;
    with `target`, over RSS_TARGET_MB in bold and marked ✗."""
    if r is None:
        return "—"
    if r.status != "ok":
        return _peak(r)
    size = f"{mb(r.rss_kb)} MB" + (f" (Σ {mb(r.tree_kb)})" if r.peak_kb // 1024 > r.rss_kb // 1024 else "")
    return f"{f'**{size}** ✗' if target and _over(r) else size} · {seconds(r.median)}"


def _short(name: str) -> str:
    """An rdbspec dump row's name in a ratio column: "dump", "dump --jobs 1"."""
    return name.removeprefix("rdbspec ").split(" (")[0]


def _file_line(ds: Dataset) -> str:
    info = read_build_info(ds.path, MIX_FIELDS)
    if not info:
        return f"* `{ds.name}`: {ds.size / 1e6:.1f} MB (no build record beside it)"
    encodings = ", ".join(f"{kind} {n:,}" for kind, n in info["encodings"].items())
    keys = info["keys"] + info["streams"]
    line = (f"* `{ds.name}` ({ds.path.name}): {info['what']} — {ds.size / 1e6:.1f} MB, "
            f"{keys:,} key{'s' if keys != 1 else ''}")
    if info["expires"]:
        line += f" ({info['expires']:,} with a TTL)"
    line += f", {info['elements']:,} elements"
    if info["streams"]:
        line += (f" (stream entries; {info['groups']:,} groups, {info['consumers']:,} consumers, "
                 f"{info['pending']:,} entries pending)")
    return (line + f"; encodings: {encodings}. Built in {info['build_s']} s ({info['fill_s']} s writing, "
            f"{info['save_s']} s SAVE; {info['commands']:,} pipelined commands; server memory "
            f"{info['server_used_memory'] / 2**30:.2f} GiB)")


def _digest(r: Result | None) -> str | None:
    """The sha256 of what a check run wrote (`runner.run_check`), None without one."""
    return next((str(e["check"]["sha256"]) for e in r.extras if "sha256" in e.get("check", {})), None) \
        if r is not None else None


def same_output(got: MixRun) -> list[str]:
    """Whether every `rdbspec dump` row (its defaults, `--jobs 1`, `--jobs 2`) wrote the same bytes on
    each file, from their check runs' digests."""
    lines = []
    for ds in got.datasets:
        digests = {name: _digest(got.results.get((name, ds.name))) for name in got.dumps}
        found = {d for d in digests.values() if d is not None}
        if len(digests) < 2 or not found:
            continue
        if len(found) == 1 and None not in digests.values():
            lines.append(f"* `{ds.name}`: {', '.join(got.dumps)} wrote the same bytes (sha256 {found.pop()[:16]}…)")
        else:
            lines.append(f"* `{ds.name}`: **the outputs differ**: " + "; ".join(
                f"{name} {d[:16] if d else 'no check run'}" for name, d in digests.items()))
    return (["The check runs' output, compared (sha256 of the JSON each wrote):", "", *lines, ""] if lines else [])


def wall_table(got: MixRun) -> list[str]:
    """Per file: each contender's wall (median and spread), then each rdbspec dump row ÷ each peer."""
    peers = [p for p in PEERS if p.name in got.peers]
    ratios = [(d, p) for d in got.dumps for p in peers]
    head = (["file", "MB", "keys", "elements"] + got.dumps + got.peers
            + [f"{_short(d)} ÷ {p.binary}" for d, p in ratios])
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for ds in got.datasets:
        info = read_build_info(ds.path, MIX_FIELDS)
        cells = [f"`{ds.name}`", f"{ds.size / 1e6:,.1f}", f"{ds.keys + ds.streams:,}",
                 f"{info['elements']:,}" if info else "—"]
        cells += [wall_cell(got.get(c, ds)) for c in got.dumps + got.peers]
        cells += [ratio_cell(got.get(d, ds), got.get(p.name, ds)) for d, p in ratios]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def rss_table(got: MixRun) -> list[str]:
    """Per file: the peak RSS of each rdbspec command (the target marked) and of the peers."""
    ours = got.dumps + got.commands
    head = ["file"] + ours + got.peers
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for ds in got.datasets:
        cells = [f"`{ds.name}`"] + [rss_cell(got.get(c, ds), True) for c in ours]
        cells += [rss_cell(got.get(c, ds), False) for c in got.peers]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _over_target(got: MixRun) -> list[str]:
    """One line per rdbspec command that missed the RSS target or timed out somewhere."""
    out = []
    for c in got.dumps + got.commands:
        over = [f"{ds.name} ({_peak(r)})" for ds in got.datasets
                if (r := got.get(c, ds)) is not None and (r.status not in ("ok", "skipped") or _over(r))]
        if over:
            out.append(f"* `{c}`: {', '.join(over)}")
    return out


def section(got: MixRun) -> list[str]:
    """The report's "Content mix" section (Markdown lines)."""
    server = {read_build_info(ds.path).get("server_version") for ds in got.datasets} - {None}
    out = [HEADING, "",
           f"Run by `python -m bench {' '.join(got.argv)}`".rstrip() + f", finished {got.finished}; the machine "
           "and versions above may describe another run. Dumps of one kind of content each, written by Redis "
           f"{', '.join(sorted(server)) or '7.0'} (`/usr/bin/redis-server`, RDB 10) with pipelined variadic "
           "commands and a fixed seed (bench/mix_content.py), cached in bench/cache/ with a .json of what each "
           f"holds. rdbspec runs on the {got.backend} backend (RDBSPEC_BACKEND={got.backend}), its Python modules "
           "byte-compiled first as a wheel's install does.", ""]
    if not got.datasets:
        return out + ["No dump of the mix to run on.", ""] + [f"* {n}" for n in got.notes] + [""]
    out += [_file_line(ds) for ds in got.datasets]
    out += ["", "### JSON export: wall time", "",
            f"Each cell: median of {got.runs} run{'s' if got.runs != 1 else ''} (spread = max − min in brackets; "
            "1 run when the first took "
            f"longer than --single-run-above), timeout {got.timeout:.0f} s a run. `rdbspec dump FILE`, librdb "
            "`rdb-cli FILE json` and HDT3213/rdb `-c json` write to /dev/null; one more, untimed run of each "
            "writes to a pipe where the keys and stream entries are counted (a miscount is marked † and said "
            "below; its ratios are left out). `rdbspec dump` runs with its defaults; when it has `--jobs`, "
            "`--jobs 1` and `--jobs 2` are rows of their own (its help, quoted below, says which is the "
            "default). Ratios: rdbspec ÷ the peer (< 1: rdbspec is faster).", ""]
    out += wall_table(got)
    out += ["", *same_output(got)]
    out += ["", "### Peak RSS per command", "",
            f"Target: every rdbspec command ≤ {RSS_TARGET_MB} MB peak RSS whatever the file (over it: **bold** "
            "✗, judged on the larger of the two figures). Each cell: peak RSS · wall. Peak RSS = GNU time's "
            "maximum resident set, that of the largest single process (it counts the touched pages of the "
            "mapped dump); Σ = the sampled peak (every 0.1 s) of the RSS summed over the process tree, shown "
            "when larger: a command that starts worker processes (`dump --jobs N`), each of which counts the "
            "pages it shares with the others (the interpreter, the mapped dump) once more. "
            "`rdbspec dump`: the largest of its timed runs and their median wall; the other commands ran once, "
            "output to /dev/null (keys, info) or to a temporary file (report, rewrite). The peers' JSON export "
            "is shown beside, unmarked.", ""]
    out += rss_table(got)
    over = _over_target(got)
    out += ["", f"rdbspec commands over {RSS_TARGET_MB} MB or not finished:" if over
            else f"Every rdbspec command stayed within {RSS_TARGET_MB} MB.", ""]
    out += over + ([""] if over else [])
    problems = [f"* {name} on {ds}: {r.status}{' (check run miscount)' if r.invalid else ''}: {r.note}"
                for (name, ds), r in got.results.items() if r.status not in ("ok", "skipped") or r.invalid]
    notes = [f"* {n}" for n in got.notes] + problems
    return out + notes + ([""] if notes else [])
