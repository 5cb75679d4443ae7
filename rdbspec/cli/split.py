"""`rdbspec split FILE -o DIR (--slots RANGES... | --cluster URL)`: one dump per cluster node, each
holding the keys of the slots the node serves (`rdbspec.rewrite.split`).

The topology: `--slots` takes one argument per node, each the node's slot ranges comma-separated
(`0-5460` or `0-100,200-300`, as `rdbspec.server.cluster.parse_ranges` reads them), and may be
given again for more nodes; node N's file is `node-N.rdb`, N counted from 0 in the order given.
`--cluster URL` reads it from a live node (`rdbspec.net.connection`: the URL as redis-cli reads
it, the password also from REDISCLI_AUTH; `rdbspec.restore.cluster.Topology`: CLUSTER SLOTS): one
file per master, named by its address, `HOST-PORT.rdb`. Ranges that overlap, a dump holding keys
in a database other than 0 without `--db`, keys in slots no node serves and a URL that names no
server end with one line and exit 2 (usage), before anything is written; a node that cannot be
reached as `restore` ends (exit 6), one that refuses AUTH or CLUSTER SLOTS with its reply (exit 8);
what cannot be read or written as `rewrite` ends."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ..errors import EXIT_CODES, RdbError, ServerError, UnwritableError, WriteError, exit_code, os_error_text
from ..server.cluster import format_ranges, parse_ranges
from .common import (
    add_file_arguments,
    add_target_options,
    error_line,
    readable_twice,
    target_of_args,
    tls_of,
)

if TYPE_CHECKING:
    from ..rewrite.split import Node

DESCRIPTION = ("Writes one dump per cluster node into DIR, each holding the keys of the slots the node serves "
               "(a key's slot is the CRC16 of the key or of its {hash tag}), for the node to load at start: "
               "the records before the databases in every file (but the replication ID and offset), database 0 "
               "with its RESIZEDB and each slot's counts as the output's server writes them, each key copied "
               "as its bytes (or converted for --target). A cluster has database 0 only: a dump with keys in "
               "another one is refused unless --db N chooses the database written as 0. The files are written "
               "beside their names and renamed once all are whole: a failure leaves none.")


def slot_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """--slots: one node's ranges."""
    try:
        return tuple(parse_ranges(text))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def register(sub: argparse._SubParsersAction) -> None:
    split = sub.add_parser("split", help="one dump per cluster node: the keys of the slots each serves",
                           description=DESCRIPTION)
    add_file_arguments(split)
    split.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="the directory the nodes' dumps are written in (made when missing)")
    topology = split.add_mutually_exclusive_group(required=True)
    topology.add_argument("--slots", nargs="+", action="extend", type=slot_ranges, metavar="RANGES",
                          help="one argument per node, its slot ranges comma-separated (0-5460 or 0-100,200-300); "
                               "node N is written to node-N.rdb")
    topology.add_argument("--cluster", metavar="URL",
                          help="redis://[[USER]:PASSWORD@]HOST[:PORT] (or rediss://) of a node: its cluster's "
                               "masters and their slots (CLUSTER SLOTS), each written to HOST-PORT.rdb; without a "
                               "password in the URL, REDISCLI_AUTH's")
    split.add_argument("--db", type=int, metavar="N",
                       help="the database whose keys are written, as database 0 (needed when the dump holds keys "
                            "in a database other than 0)")
    add_target_options(split)
    split.set_defaults(standalone=run_split)


def run_split(args: argparse.Namespace) -> int:
    """`split`: a bad topology or database, a node that cannot be reached or refuses, bad input or
    what cannot be written ends with one line and its exit code (see the module doc)."""
    from ..rewrite import split
    from ..write import convert

    target = target_of_args(args)
    try:
        nodes = _nodes(args)
        converter = convert.Converter.for_target(target, args.allow_lossy) if target is not None else None
        with readable_twice(args.file, args.save, tls_of(args)) as path:
            found = split.split(path, args.output, nodes, args.db, converter)
    except ValueError as err:  # a bad URL or topology, databases that do not fit; an output would replace the input
        print(f"rdbspec split: {err}", file=sys.stderr)
        return EXIT_CODES["usage"]
    except (ConnectionError, ServerError) as err:  # the --cluster node
        print(f"rdbspec split: {os_error_text(err) if isinstance(err, OSError) else err}", file=sys.stderr)
        return exit_code(err)
    except (RdbError, OSError, UnwritableError, WriteError) as err:
        print(error_line(args.file, err), file=sys.stderr)
        return exit_code(err)
    for node, keys in zip(found.nodes, found.keys):
        path = os.path.join(args.output, node.name)
        print(f"rdbspec split: {path}: {keys} keys (slots {format_ranges(node.ranges)})", file=sys.stderr)
    print(f"rdbspec split: wrote {sum(found.keys)} of {found.plan.read} keys to {len(nodes)} files in {args.output}",
          file=sys.stderr)
    for what, count in sorted((converter.dropped if converter is not None else {}).items()):
        print(f"rdbspec split: dropped {what}: {count}", file=sys.stderr)
    return EXIT_CODES["ok"]


def _nodes(args: argparse.Namespace) -> list[Node]:
    """The nodes of --slots, or the masters of the cluster --cluster names, in the order of their
    first slot (CLUSTER SLOTS: `rdbspec.restore.cluster.Topology`)."""
    from ..net.connection import Address, Connection
    from ..restore.cluster import Topology
    from ..rewrite.split import Node

    if args.slots is not None:
        return [Node(f"node-{n}.rdb", ranges) for n, ranges in enumerate(args.slots)]
    # a cluster has database 0 only
    with Connection(Address.parse(args.cluster, tls_of(args)), select=False) as connection:
        masters = sorted(Topology.of(connection).node_ranges(), key=lambda master: master[1][0])
    if not masters:
        raise ValueError(f"the cluster of {args.cluster} serves no slot")
    return [Node(f"{f'[{host}]' if ':' in host else host}-{port}.rdb", tuple(ranges))
            for (host, port), ranges in masters]
