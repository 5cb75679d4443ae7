"""Pieces every `rdbspec` subcommand shares: argument types that refuse bad values as usage
errors (exit 2, argparse's message), subcommand names matched in any case, and the one line
that names the file an OSError is about."""

from __future__ import annotations

import argparse
import os
import re

from .errors import IntegrityError
from .jsonl import dumps, s
from .values import TYPE_NAMES


class _AnyCaseNames(dict):
    """Subcommand name -> parser, looked up in any case (names are stored in lower case)."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())

    def __getitem__(self, name: str) -> argparse.ArgumentParser:
        return super().__getitem__(name.lower())


class AnyCaseSubParsers(argparse._SubParsersAction):
    """Subcommands in any case (`xinfo STREAM`, `XRANGE`), as the server reads its command words
    (redis src/server.c lookupCommand: the command table is case-insensitive)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _AnyCaseNames()


def key_pattern(text: str) -> re.Pattern[bytes]:
    """--key: a regular expression over the key's bytes."""
    try:
        return re.compile(os.fsencode(text))
    except re.error as err:
        raise argparse.ArgumentTypeError(f"not a regular expression: {text!r} ({err})") from None


TYPES = sorted(set(TYPE_NAMES.values()))


def type_name(text: str) -> str:
    """--type: one of the type names `dump` writes, in any case."""
    name = text.lower()
    if name not in TYPES:
        raise argparse.ArgumentTypeError(f"unknown type {text!r} (types: {', '.join(TYPES)})")
    return name


def positive_int(text: str) -> int:
    """--top: a count of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def error_line(path: str, err: BaseException) -> str:
    """`rdbspec: PATH: problem (key K)` for an error reading `path`, K the key whose record was
    being read (an IntegrityError names its key in its own message); an OSError names the file it
    is about (an output file, a shard of a set) with its own words, not `[Errno n]`."""
    key = None if isinstance(err, IntegrityError) else getattr(err, "key", None)
    where = f" (key {dumps(s(key))})" if key is not None else ""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"rdbspec: {os.fsdecode(err.filename)}: {err.strerror}{where}"
    return f"rdbspec: {path}: {err}{where}"
