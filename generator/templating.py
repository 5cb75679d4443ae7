"""The jinja2 environment every rendering step uses: the Python and Cython targets' modules and
the spec reference (`docs`), each from its own folder of templates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2


def environment(folder: Path, filters: dict[str, Callable[..., Any]] | None = None,
                tests: dict[str, Callable[..., bool]] | None = None) -> jinja2.Environment:
    """An environment over the templates in `folder`, with a step's own filters and tests."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(filters or {})
    env.tests.update(tests or {})
    return env
