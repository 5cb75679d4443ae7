"""Hash templates (Redis 8.10, RDB 15): the order of a template's field names.

A template keeps its field names sorted by sdscmplen, a shorter name first and names of one length
byte by byte (redis src/t_hash.c: the registry binary-searches them, hashTemplateFieldIndex), and a
loader refuses names that are not strictly ascending in that order (hashTemplateValidateFields:
"not strictly sorted", which also refuses a name twice)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

TEMPLATES_RDB = 15  # the RDB version that has hash templates (Redis 8.10: redis src/rdb.h RDB_VERSION)


def field_order(name: bytes) -> tuple[int, bytes]:
    """The sort key of a template field name (sdscmplen: length, then bytes)."""
    return len(name), name


def strictly_ascending(names: Sequence[bytes]) -> bool:
    """hashTemplateValidateFields: each name after the one before it, none twice."""
    return all(field_order(a) < field_order(b) for a, b in zip(names, names[1:]))


def template_fields(names: Iterable[bytes]) -> list[bytes]:
    """The names of the template a hash with these fields uses: sorted as the server keeps them."""
    return sorted(set(names), key=field_order)
