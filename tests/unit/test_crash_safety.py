"""Every command that writes a file, killed while it writes or out of space (`rdbspec.atomic`):
the output is the previous one or the new one whole, never a part; what a killed run left is
removed by the next run of the same output, never a live writer's file; a full disk ends with one
line naming the output, exit 6, the previous output as it was and no temporary file.

The commands run as `python -m rdbspec` in a process of their own. Two kinds of kill, at seeded
random points: SIGKILL after a delay within a run's length (anywhere: starting, reading, writing,
between the last write and the rename), and the kernel's own kill at a byte of the output
(`tests.support.file_limit`: the write past RLIMIT_FSIZE ends the process as SIGKILL does). The
full disk is the same limit with the write failing (EFBIG, as ENOSPC fails it)."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import rdbspec
from rdbspec import cli
from rdbspec.atomic import TEMP_MARK, TEMP_SUFFIX, remove_stale
from rdbspec.errors import EXIT_CODES
from rdbspec.read import parallel
from tests.support.file_limit import limited

# `python -c` this with an output path: a writer of it that says `ready` once its temporary file
# holds a byte, then waits for its stdin to close and renames the file (`commit`)
HOLDER = """
import sys
from rdbspec.atomic import AtomicFile
out = AtomicFile(sys.argv[1])
out.binary.write(b"held")
out.binary.flush()
print("ready", flush=True)
sys.stdin.read()
out.commit()
"""


def temporary_files(directory: Path) -> list[Path]:
    """rdbspec's temporary files in `directory` and below."""
    return sorted(p for p in directory.rglob(f".*{TEMP_MARK}*{TEMP_SUFFIX}"))


@dataclass(frozen=True)
class Command:
    """A writing command: the arguments writing the previous output and those writing another
    one at {OUT}, a file or (`directory`) a directory of files; {IN} the dump read."""

    name: str
    previous: tuple[str, ...]
    new: tuple[str, ...]
    directory: bool = False

    def args(self, source: Path, output: Path, new: bool) -> list[str]:
        words = self.new if new else self.previous
        return [w.replace("{IN}", str(source)).replace("{OUT}", str(output)) for w in words]


COMMANDS = [
    Command("rewrite", ("rewrite", "{IN}", "-o", "{OUT}", "--db", "0"),
            ("rewrite", "{IN}", "-o", "{OUT}", "--exclude-key", "0$")),
    Command("split", ("split", "{IN}", "-o", "{OUT}", "--db", "0", "--slots", "0-8000", "8001-16383"),
            ("split", "{IN}", "-o", "{OUT}", "--db", "0", "--slots", "0-4000", "4001-16383"), directory=True),
    Command("report", ("report", "{IN}", "-o", "{OUT}", "--now", "0", "--jobs", "1"),
            ("report", "{IN}", "-o", "{OUT}", "--now", "0", "--jobs", "1", "--top", "100")),
    Command("dump", ("dump", "{IN}", "-o", "{OUT}", "--jobs", "1", "--db", "1"),
            ("dump", "{IN}", "-o", "{OUT}", "--jobs", "1")),
    Command("dump-resp", ("dump", "{IN}", "--format", "resp", "-o", "{OUT}", "--db", "1"),
            ("dump", "{IN}", "--format", "resp", "-o", "{OUT}")),
]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dump of 6,000 strings in database 0 and 1,000 hashes in database 1 (0.6 MB), values
    that do not compress."""
    path = tmp_path_factory.mktemp("crash") / "in.rdb"
    rnd = random.Random(32)
    with rdbspec.Writer(path, 10) as out:
        out.select_db(0)
        for i in range(6_000):
            out.string(b"user:%d" % i, rnd.randbytes(32).hex().encode())
        out.select_db(1)
        for i in range(1_000):
            out.hash(b"h:%d" % i, {b"a": b"%d" % i, b"b": rnd.randbytes(40).hex().encode()})
    return path


def start(args: list[str], limit: int | None = None, die: bool = True,
          env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`rdbspec ARGS`, its files limited to `limit` bytes (`file_limit.limited`) when given."""
    command = ["-m", "rdbspec", *args]
    return subprocess.Popen([sys.executable, *command] if limit is None else limited(command, limit, die),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    _, err = process.communicate(timeout=120)
    return process.returncode, err.decode()


def outputs(output: Path) -> dict[str, bytes]:
    """What the output holds: the file, or each file of the directory (temporary files apart)."""
    if not output.exists():
        return {}
    if output.is_dir():
        return {p.name: p.read_bytes() for p in sorted(output.iterdir()) if TEMP_MARK not in p.name}
    return {output.name: output.read_bytes()}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_killed_or_out_of_space_the_output_stays_whole(command: Command, source: Path, tmp_path: Path) -> None:
    """The previous output written whole; then the new one's run killed four times at seeded
    points (two by SIGKILL after a delay, two at a byte of the output); after each, the output is
    the previous one or the new one, whole (the new one's bytes are those of the run that ends
    the kills). A kill at a byte leaves the temporary file, that many bytes, beside the output as
    it was. The run after the kills writes the new output and removes what they left. Then a run
    whose write fails (EFBIG past RLIMIT_FSIZE, as ENOSPC would fail it): one line naming the
    output and the system's words, exit 6, the output as it was, no temporary file."""
    rnd = random.Random(f"kill {command.name}")
    output = tmp_path / ("nodes" if command.directory else "out")
    began = time.monotonic()
    code, err = finish(start(command.args(source, output, new=False)))
    length = time.monotonic() - began  # where the SIGKILLs fall: within a run's length
    assert code == 0, err
    previous = outputs(output)
    smallest = min(map(len, previous.values()))  # the new output's files are bigger
    seen = []  # the output after each kill
    for kill in ("signal", "byte", "signal", "byte"):
        before = outputs(output)
        if kill == "signal":
            process = start(command.args(source, output, new=True))
            time.sleep(rnd.uniform(0, length))
            process.kill()
            finish(process)
        else:
            limit = rnd.randrange(1, smallest)
            code, err = finish(start(command.args(source, output, new=True), limit))
            assert code == -signal.SIGXFSZ, err
            assert outputs(output) == before  # killed while writing: nothing renamed
            assert any(p.stat().st_size == limit for p in temporary_files(output.parent))
        seen.append(outputs(output))
    code, err = finish(start(command.args(source, output, new=True)))
    assert code == 0, err
    assert temporary_files(tmp_path) == []
    new = outputs(output)
    assert new != previous
    assert all(state in (previous, new) for state in seen), [list(s) for s in seen]

    code, err = finish(start(command.args(source, output, new=False), 4096, die=False))
    [line] = err.splitlines()
    named = [output / name for name in new] if command.directory else [output]
    assert line in [f"rdbspec: {path}: File too large" for path in named], err
    assert code == EXIT_CODES["io"]
    assert outputs(output) == new
    assert temporary_files(tmp_path) == []


def test_a_full_disk_names_the_output_the_workers_output_is_copied_to(source: Path, tmp_path: Path) -> None:
    """`dump --jobs 2`: the ranges' spools are copied into -o by the kernel (sendfile); the copy
    that fails names the output too. The limit is above a range's spool (100 kB of the dump in
    each, `parallel.ENV_SPLIT_SIZE`) and below the output."""
    output = tmp_path / "out"
    code, err = finish(start(["dump", str(source), "--jobs", "2", "-o", str(output)], 1 << 20, die=False,
                             env={**os.environ, parallel.ENV_SPLIT_SIZE: "100000"}))
    assert (code, err) == (EXIT_CODES["io"], f"rdbspec: {output}: File too large\n")
    assert list(tmp_path.iterdir()) == []


def holder(output: Path) -> subprocess.Popen[str]:
    """A live writer of `output` (`HOLDER`), once its temporary file is there."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(output)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    return process


def test_a_dead_writers_file_goes_a_live_writers_stays(source: Path, tmp_path: Path) -> None:
    """Two writers of one output, one alive (stopped, as a slow one is) and one SIGKILLed: a run
    writing another output of the directory touches neither temporary file; one writing that
    output removes the dead writer's, not the live one's, which then renames its own over it."""
    output = tmp_path / "out.rdb"
    live = holder(output)
    [live_file] = temporary_files(tmp_path)
    assert live_file.name.startswith(f".out.rdb{TEMP_MARK}") and live_file.name.endswith(TEMP_SUFFIX)
    live.send_signal(signal.SIGSTOP)
    dead = holder(output)  # which, starting, left the live one's file alone
    [dead_file] = set(temporary_files(tmp_path)) - {live_file}
    dead.kill()
    dead.wait()
    code, err = finish(start(["rewrite", str(source), "-o", str(tmp_path / "other.rdb")]))
    assert code == 0, err
    assert set(temporary_files(tmp_path)) == {dead_file, live_file}
    code, err = finish(start(["rewrite", str(source), "-o", str(output)]))
    assert code == 0, err
    assert temporary_files(tmp_path) == [live_file]
    live.send_signal(signal.SIGCONT)
    live.communicate("", timeout=60)
    assert live.returncode == 0
    assert output.read_bytes() == b"held" and temporary_files(tmp_path) == []


def test_a_directory_output_removes_any_dead_writers_file(source: Path, tmp_path: Path) -> None:
    """`split` writes a directory: a killed run's temporary files there go whatever the names of
    their outputs (another topology's nodes); a live writer's stays."""
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    live = holder(nodes / "10.0.0.2-6379.rdb")
    [live_file] = temporary_files(nodes)
    dead = holder(nodes / "10.0.0.1-6379.rdb")
    [dead_file] = set(temporary_files(nodes)) - {live_file}
    dead.kill()
    dead.wait()
    code, err = finish(start(["split", str(source), "-o", str(nodes), "--db", "0", "--slots", "0-16383"]))
    assert code == 0, err
    assert temporary_files(nodes) == [live_file]
    live.communicate("", timeout=60)
    assert sorted(p.name for p in nodes.iterdir()) == ["10.0.0.2-6379.rdb", "node-0.rdb"]
    assert (nodes / "10.0.0.2-6379.rdb").read_bytes() == b"held"


# `python -c` this with a dump: `rdbspec prefixes` of it whose sums go to disk past 5 prefixes,
# SIGKILLed once its first run is written
KILLED_PREFIXES = """
import os, signal, sys
from rdbspec import cli
from rdbspec.report import prefixes, runs
prefixes.SPILL_PREFIXES = 5
write_run = runs.write_run
def write_then_die(rows, directory):
    write_run(rows, directory)
    os.kill(os.getpid(), signal.SIGKILL)
runs.write_run = write_then_die
cli.main(["prefixes", sys.argv[1], "--jobs", "1"])
"""
# `python -c` this: a live command's scratch directory, held until its stdin closes
SCRATCH_HOLDER = """
import sys
from rdbspec.atomic import scratch_directory
with scratch_directory("prefixes") as directory:
    print(directory, flush=True)
    sys.stdin.read()
"""


def test_a_killed_commands_scratch_directory_goes_a_live_ones_stays(source: Path, tmp_path: Path) -> None:
    """`prefixes` killed with its sums half on disk leaves its scratch directory in TMPDIR; the next
    `prefixes` removes it, not that of a command still running, which removes its own at its end."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    live = subprocess.Popen([sys.executable, "-c", SCRATCH_HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)
    assert live.stdout is not None
    held = Path(live.stdout.readline().strip())
    assert held.parent == tmp_path
    killed = subprocess.run([sys.executable, "-c", KILLED_PREFIXES, str(source)], env=env, capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    [left] = set(tmp_path.iterdir()) - {held}
    assert left.name.startswith("rdbspec-prefixes-") and len(list(left.iterdir())) == 2  # the lock, a run
    code, err = finish(start(["prefixes", str(source), "--jobs", "1"], env=env))
    assert code == 0, err
    assert list(tmp_path.iterdir()) == [held]
    live.communicate("", timeout=60)
    assert live.returncode == 0 and list(tmp_path.iterdir()) == []


def test_a_device_is_written_in_place_a_link_through(source: Path, tmp_path: Path) -> None:
    """What cannot be renamed over is written as `open()` writes it: /dev/null stays the device;
    a symbolic link stays a link, its target the new file; a directory is refused before a byte
    is written."""
    assert cli.main(["dump", str(source), "-o", os.devnull, "--db", "1"]) == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and list(Path(os.devnull).parent.glob(".null*")) == []
    target, link = tmp_path / "keys.jsonl", tmp_path / "link.jsonl"
    target.write_text("the previous keys\n")
    link.symlink_to(target.name)
    assert cli.main(["keys", str(source), "-o", str(link), "--db", "1"]) == 0
    assert link.is_symlink() and len(target.read_text().splitlines()) == 1000
    proc = subprocess.run([sys.executable, "-m", "rdbspec", "dump", str(source), "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (EXIT_CODES["io"], f"rdbspec: {tmp_path}: Is a directory\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.jsonl", "link.jsonl"]


def test_ctrl_c_leaves_the_previous_output_and_no_temporary_file(source: Path, tmp_path: Path) -> None:
    """SIGINT (KeyboardInterrupt) while `dump - -o OUT` waits for its input, its temporary file
    made: OUT is as it was, and the temporary file is removed (by the interrupted run, or, when the
    signal came while the file was being set up, by the next run: its lock went with the process)."""
    output = tmp_path / "out.jsonl"
    output.write_text("the previous lines\n")
    process = subprocess.Popen([sys.executable, "-m", "rdbspec", "dump", "-", "-o", str(output)],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not temporary_files(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert temporary_files(tmp_path), "the command never made its temporary file"
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    assert process.returncode != 0
    assert output.read_text() == "the previous lines\n"
    remove_stale(output)  # what the next run writing OUT does first
    assert temporary_files(tmp_path) == []
