"""The reference parsers timed beside rdbspec: redis/librdb's ``rdb-cli`` (C) and HDT3213/rdb (Go).

They are not part of the project: built binaries and their licences live in ``../shared/bench-peers/``
beside the repository (its README says how they were built and called), or wherever
``RDBSPEC_BENCH_PEERS`` points. When a binary is missing, the bench says so and goes on.

Both export every key to JSON. The timed runs write it to /dev/null; one more, untimed run writes it
to a pipe where the bench counts the stream entries and the keys in it, so a figure only counts when
the contender really decoded every entry (runner.OutputCheck).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .datasets import Dataset
from .runner import REPO, Contender, OutputCheck

PEERS_ENV = "RDBSPEC_BENCH_PEERS"


def peers_dir() -> Path:
    """``$RDBSPEC_BENCH_PEERS``, else ``../shared/bench-peers`` beside the repository."""
    return Path(os.environ.get(PEERS_ENV) or REPO.parent / "shared" / "bench-peers")


@dataclass(frozen=True)
class Peer:
    name: str  # the contender's name in the report
    binary: str  # file name in the peers directory
    project: str
    # the command line exporting a dump to JSON: (binary, dump, where the JSON goes)
    command: Callable[[str, str, str], list[str]]
    entries: bytes  # occurs once per stream entry in its JSON
    keys: bytes  # occurs once per key in its JSON
    note: str

    def contender(self, binary: Path) -> Contender:
        def argv(out: str) -> Callable[[Dataset], list[str]]:
            return lambda ds: self.command(str(binary), str(ds.path), out)

        shown = " ".join(self.command(self.binary, "FILE", "/dev/null"))
        return Contender(self.name, f"{self.project}: `{shown}`", argv(os.devnull), decodes_entries=True,
                         note=self.note, check=OutputCheck(argv("/dev/stdout"), self.entries, self.keys))


PEERS = [
    # librdb: options before the format word; its log goes to ./rdb-cli.log unless -l says otherwise.
    # Its JSON: one `"key":value` line per key at 4 spaces, stream entries as `{ "id":"...", "items":{...} }`
    # (consumer groups are not written).
    Peer("librdb rdb-cli (C)", "librdb-cli", "redis/librdb",
         lambda binary, dump, out: [binary, dump, "-l", os.devnull, "json", "-o", out],
         entries=b'{ "id":"', keys=b'\n    "', note="streams its JSON out"),
    # HDT3213/rdb: one `{"db":...}` object per key; stream entries as `{"id":"...","fields":{...}}` (a map:
    # field order and duplicate fields lost), counted by their `","fields":{`: a pending entry is a
    # `{"id":"...","deliveryTime":...}` and a node's master fields a list. Default -concurrent 4.
    Peer("HDT3213/rdb (Go)", "hdt-rdb", "HDT3213/rdb",
         lambda binary, dump, out: [binary, "-c", "json", "-o", out, dump],
         entries=b'","fields":{', keys=b'{"db":', note="holds the whole JSON in memory; stream fields kept in a map"),
]


def peer_contenders() -> tuple[list[Contender], list[str]]:
    """The peers found (in table order) and a note for each one that is not."""
    where = peers_dir()
    out: list[Contender] = []
    notes: list[str] = []
    for peer in PEERS:
        binary = where / peer.binary
        if os.access(binary, os.X_OK):
            out.append(peer.contender(binary))
        else:
            notes.append(f"{peer.name} skipped: no executable {binary} (set {PEERS_ENV} to the directory "
                         "holding librdb-cli and hdt-rdb).")
    return out, notes
